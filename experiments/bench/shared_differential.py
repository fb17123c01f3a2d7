"""Differential test of :mod:`planners.shared_arena` against an exhaustive search.

``python -m experiments.bench.shared_differential --count N [--seed S]`` generates ``N`` small
shared-arena problems (two or three problems, up to six distinct buffers, sizes 1 to 4 bytes,
horizons up to 4 steps, one or two shared buffers), computes the optimum shared arena by
:func:`brute_force_arena` and checks, for each planner and mode of :data:`RUNS`:

* every per-problem plan valid and every shared buffer at one offset, by this module's own
  check (:func:`independent_violation`, no code of the toolkit's validator);
* arena ``>=`` the optimum;
* arena ``==`` the optimum where the result's status is ``optimal`` (the exact reduction with an
  exact planner claims it), and for the exact reduction with ``exact_search`` always;
* the same for :func:`planners.shared_arena.refine_pinned` of the plans of :data:`REFINE`, whose
  arena is also ``<=`` the plan it refines.

It prints one line per failure and a summary ``N problems, F failed`` (with how often the hull
reduction with ``exact_search`` is above the optimum, before and after
:func:`~planners.shared_arena.refine_pinned`); ``--out FILE.csv`` also writes one row per
problem. The exit status is 1 if any failed. The oracle shares no code with :mod:`planners.shared_arena`: it reads each
problem's columns (``starts``, ``ends``, ``sizes``, ``alignments``) only.
"""

from __future__ import annotations

import argparse
import random
import sys

from planners.model import Buffer, Problem

__all__ = ["random_shared", "brute_force_arena", "independent_violation", "check_one", "RUNS",
           "REFINE", "main"]

#: (planner, mode) pairs checked per problem.
RUNS = (("greedy_by_size", "colocate"), ("greedy_by_size", "hull"), ("naive", "hull"),
        ("exact_search", "colocate"), ("exact_search", "hull"))

#: Planners of :data:`RUNS` whose plans are also refined (:func:`planners.shared_arena.
#: refine_pinned`: they handle pins).
REFINE = ("greedy_by_size", "exact_search")


def random_shared(rng: random.Random):
    """A small random :class:`planners.shared_arena.SharedArenaProblem` (steps, bytes)."""
    from planners.shared_arena import SharedArenaProblem

    k = rng.choice((2, 2, 3))
    n_shared = rng.choice((1, 1, 2))
    shared = [f"s{j}" for j in range(n_shared)]
    sizes = {s: rng.randint(1, 4) for s in shared}
    probs = []
    budget = 6 - n_shared  # distinct buffers at most 6
    for i in range(k):
        h = rng.randint(2, 4)
        bufs = []
        holders = [s for s in shared if rng.random() < 0.8 or i == 0]
        for s in holders:
            a = rng.randrange(h)
            bufs.append(Buffer(s, a, rng.randint(a + 1, h), sizes[s]))
        own = rng.randint(1, max(1, budget // (k - i)))
        budget -= own
        for j in range(own):
            a = rng.randrange(h)
            bufs.append(Buffer(f"b{j}", a, rng.randint(a + 1, h), rng.randint(1, 4)))
        probs.append(Problem(bufs, name=f"m{i}"))
    return SharedArenaProblem(probs, tuple(shared))


def _variables(sp):
    """Distinct buffers of ``sp``: ``[(key, size, align, [(problem k, start, end), ...])]``,
    a shared id once, a private buffer per problem."""
    out, where = [], {}
    for k, p in enumerate(sp.problems):
        for i, bid in enumerate(p.ids):
            key = ("s", bid) if bid in sp.shared else ("p", k, bid)
            iv = (k, int(p.starts[i]), int(p.ends[i]))
            if key in where:
                out[where[key]][3].append(iv)
            else:
                where[key] = len(out)
                out.append([key, int(p.sizes[i]), int(p.alignments[i]), [iv]])
    return out


def _conflict(u, v) -> bool:
    """Whether two variables are live at one step of one problem."""
    return any(ku == kv and su < ev and sv < eu for ku, su, eu in u[3] for kv, sv, ev in v[3])


def brute_force_arena(sp) -> int:
    """The optimum shared arena (bytes) by exhaustive search: every assignment of offsets (each
    a multiple of the buffer's alignment, from 0 up) whose arena is below the best found, depth
    first over the distinct buffers; exponential, for a few buffers only."""
    var = _variables(sp)
    n = len(var)
    conf = [[j for j in range(i) if _conflict(var[i], var[j])] for i in range(n)]
    best = sum(v[1] + v[2] - 1 for v in var)  # everything stacked: always valid
    off = [0] * n

    def dfs(i: int, top: int) -> None:
        nonlocal best
        if top >= best:
            return
        if i == n:
            best = top
            return
        z, a = var[i][1], var[i][2]
        for o in range(0, best - z, a):
            if all(off[j] + var[j][1] <= o or o + z <= off[j] or var[j][1] == 0 or z == 0
                   for j in conf[i]):
                off[i] = o
                dfs(i + 1, max(top, o + z))
    dfs(0, 0)
    return best


def independent_violation(sp, result) -> str | None:
    """The first rule ``result`` (a :class:`planners.shared_arena.SharedPlan`) breaks, or None:
    per problem, a negative or misaligned offset or two buffers live at one step with
    overlapping addresses; a shared buffer at two offsets; an arena not the max of the
    problems' highest ``offset + size``."""
    seen, top = {}, 0
    for p in sp.problems:
        off = [int(x) for x in result.plans[p.name].offsets]
        s, e, z, a = (c.tolist() for c in (p.starts, p.ends, p.sizes, p.alignments))
        for i in range(p.n):
            if off[i] < 0 or off[i] % a[i]:
                return f"{p.name}/{p.ids[i]}: offset {off[i]} (alignment {a[i]})"
            if z[i]:
                top = max(top, off[i] + z[i])
            for j in range(i):
                if s[i] < e[j] and s[j] < e[i] and z[i] and z[j] \
                        and off[i] < off[j] + z[j] and off[j] < off[i] + z[i]:
                    return f"{p.name}: {p.ids[i]} and {p.ids[j]} overlap"
            if p.ids[i] in sp.shared:
                if seen.setdefault(p.ids[i], off[i]) != off[i]:
                    return f"shared {p.ids[i]}: offsets {seen[p.ids[i]]} and {off[i]}"
    if top != result.arena:
        return f"arena {result.arena} but highest end {top}"
    return None


def check_one(sp, runs=RUNS) -> list[str]:
    """Failure messages of ``sp`` over ``runs`` (empty: all agree with the oracle)."""
    from planners.shared_arena import plan_shared, refine_pinned

    opt = brute_force_arena(sp)
    bad = []
    for planner, mode in runs:
        r = plan_shared(sp, planner, mode=mode)
        why = independent_violation(sp, r)
        if why is None and planner in REFINE:
            f = refine_pinned(r)
            why = independent_violation(sp, f)
            if why is None and f.arena > r.arena:
                why = f"refine_pinned raised the arena from {r.arena} to {f.arena}"
            if why is None and f.arena < opt:
                why = f"refine_pinned arena {f.arena} below the optimum {opt}"
            if why is None and f.status == "optimal" and f.arena != opt:
                why = f"status optimal with arena {f.arena}, optimum {opt}"
            why = why and f"refine_pinned: {why}"
        if why is None and r.arena < opt:
            why = f"arena {r.arena} below the optimum {opt}"
        if why is None and r.status == "optimal" and r.arena != opt:
            why = f"status optimal with arena {r.arena}, optimum {opt}"
        if why is None and mode == "colocate" and planner == "exact_search" and r.arena != opt:
            why = f"exact reduction arena {r.arena}, optimum {opt}"
        if why:
            bad.append(f"{planner}/{mode}: {why}")
    return bad


def main(argv=None) -> int:
    """Command line (module docstring); returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m experiments.bench.shared_differential")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None,
                    help="also write one CSV row per problem (problem, problems, buffers, "
                         "optimum, hull_exact, hull_refined bytes, failures)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    failed = waste = still = 0
    from planners.io import atomic_write
    from planners.shared_arena import plan_shared, refine_pinned

    rows = ["problem,problems,buffers,optimum,hull_exact,hull_refined,failures\n"]
    for c in range(args.count):
        sp = random_shared(rng)
        bad = check_one(sp)
        if bad:
            failed += 1
            print(f"problem {c}: " + "; ".join(bad))
        opt = brute_force_arena(sp)
        hull = plan_shared(sp, "exact_search", mode="hull")
        refined = refine_pinned(hull).arena
        waste += hull.arena > opt
        still += refined > opt
        text = "; ".join(bad).replace('"', "'")
        rows.append(f'{c},{len(sp.problems)},{len(_variables(sp))},{opt},{hull.arena},'
                    f'{refined},"{text}"\n')
    summary = (f"{args.count} problems, {failed} failed; the hull reduction with exact_search "
               f"is above the optimum on {waste}, after refine_pinned on {still}")
    if args.out:
        atomic_write(args.out, "".join(rows), make_parents=True)
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
