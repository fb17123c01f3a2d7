"""Differential test of :mod:`planners.concurrent` (issue #35, lifetimes over a partial order).

On seeded generated problems (``--problems`` of them, problem ``k`` from seed ``seed + k``: 1 to 3
streams of 1 to 5 steps, random happens-before edges, 2 to 6 buffers of 0 to 4 bytes, some with
reads on other streams, alignments 1 or 2) it compares, per problem, against oracles written here
from the definitions alone (a networkx DAG of every step and ``nx.descendants``; no clock, no flow,
no planner code):

* ``conflicts``: :meth:`ConcurrentProblem.conflict_edges` against the oracle's pairs (two
  non-zero-size buffers conflict iff neither's every end reaches the other's first);
* ``bound``: :func:`concurrent_lower_bound` against the largest total size of a set of
  pairwise-conflicting buffers, by enumerating every subset (or its padded form: sizes rounded
  up to the gcd of the alignments, less the largest rounding); with one stream also against
  :func:`planners.bounds.lower_bound` of the interval problem;
* ``optimum``: the smallest arena found by an exhaustive search over offsets (every aligned
  offset ``0 .. B - size`` of every buffer, for ``B`` rising from the bound) must be ``>=`` the
  bound, ``<=`` every planner's arena, and equal to ``conflict_cpsat``'s when CP-SAT proves it;
* ``plans``: every plan of the greedy engine's named planners, ``conflict_cpsat``,
  ``choose_best``, ``telamalloc`` and ``cpsat`` (the last three through the interval cover)
  must pass the oracle's own overlap check; status ``optimal`` only at the bound;
* ``cover``: every oracle conflict interferes in :meth:`ConcurrentProblem.interval_cover`;
* ``validator``: :func:`check_concurrent_plan` raises exactly when the oracle finds two
  conflicting buffers overlapping in address or a misaligned offset, on 20 random offset vectors;
* ``files``: the JSON and CSV round trips give the same problem (``to_dict`` equal).

It also counts, separately, how often the **interval** planning of one linear extension (each
buffer live from its first event's position to its last end's position, what a single-schedule
planner sees, planned by greedy_by_size) gives a plan that the oracle rejects: the fault this
module removes (``single_schedule_invalid``). That is not a disagreement.

One row per problem: ``seed, streams, n_buffers, comparisons, disagreements,
single_schedule_invalid, first``. Exit status 1 on any disagreement.

Usage::

    python -m experiments.bench.concurrent_differential --problems 2000 --out results/concurrent_differential.csv

``make test`` runs a sample of it (tests/test_concurrent.py).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
from pathlib import Path

import networkx as nx
import numpy as np

from planners.bounds import lower_bound
from planners.concurrent import (
    ConcurrentBuffer,
    ConcurrentProblem,
    check_concurrent_plan,
    concurrent_lower_bound,
    plan_concurrent,
)
from planners.errors import InvalidPlanError
from planners.greedy import greedy_offsets
from planners.model import Buffer, Problem

__all__ = ["random_concurrent", "Oracle", "check_problem", "run", "main", "PLANNERS_CHECKED"]

#: Planners whose plans each problem checks (the greedy route, CP-SAT over the conflict graph,
#: and three planners through the interval cover).
PLANNERS_CHECKED = ("greedy_in_order", "first_fit", "best_fit", "greedy_by_size",
                    "greedy_by_size_best_fit", "greedy_by_breadth", "greedy_by_conflicts",
                    "lifetime_aware", "conflict_cpsat", "choose_best", "telamalloc", "cpsat")


def random_concurrent(seed: int, max_buffers: int = 6, max_steps: int = 5,
                      max_edges: int = 4) -> ConcurrentProblem:
    """A small random :class:`ConcurrentProblem` (module docstring), deterministic in ``seed``:
    1 to 3 streams of 1 to ``max_steps`` steps, 0 to ``max_edges`` cross-stream edges, 2 to
    ``max_buffers`` buffers.

    Acyclic by construction: every event gets a random time increasing along its stream, and an
    edge goes from a lower to a higher time."""
    rng = random.Random(seed)
    k = rng.choice((1, 2, 2, 2, 3))
    lengths = [rng.randint(1, max_steps) for _ in range(k)]
    times = {}
    for s, L in enumerate(lengths):
        t = 0.0
        for i in range(L):
            t += rng.random()
            times[(s, i)] = t
    events = list(times)
    edges = []
    for _ in range(rng.randint(0, max_edges) if k > 1 else 0):
        e, f = rng.sample(events, 2)
        if e[0] != f[0]:
            if times[e] > times[f]:
                e, f = f, e
            edges.append((e, f))
    oracle_dag = _event_dag(lengths, edges)
    bufs = []
    for x in range(rng.randint(2, max_buffers)):
        s = rng.randrange(k)
        first = rng.randrange(lengths[s])
        last = rng.randint(first, lengths[s] - 1)
        after = [f for f in nx.descendants(oracle_dag, (s, first)) if f[0] != s]
        reads = tuple(rng.sample(after, min(len(after), rng.randint(0, 1))))
        size = rng.choice((0, 1, 2, 2, 3, 4))
        align = rng.choice((None, None, None, 2))
        bufs.append(ConcurrentBuffer(f"b{x}", s, first, last, size, align, reads))
    return ConcurrentProblem(bufs, edges, name=f"random{seed}")


def _event_dag(lengths, edges) -> nx.DiGraph:
    dag = nx.DiGraph()
    for s, L in enumerate(lengths):
        dag.add_nodes_from((s, i) for i in range(L))
        dag.add_edges_from(((s, i), (s, i + 1)) for i in range(L - 1))
    dag.add_edges_from(edges)
    return dag


class Oracle:
    """Happens-before, conflicts, clique bound, overlap check and exhaustive optimum of a
    concurrent problem from its definition (module docstring), sharing no code with it."""

    def __init__(self, cp: ConcurrentProblem) -> None:
        self.cp = cp
        top: dict[int, int] = {}
        for b in cp.buffers:
            for s, t in ((b.stream, b.first), (b.stream, b.last), *b.reads):
                top[s] = max(top.get(s, 0), t)
        for a, i, b2, j in cp.edges:
            top[a] = max(top.get(a, 0), i)
            top[b2] = max(top.get(b2, 0), j)
        lengths = [top.get(s, 0) + 1 for s in range(max(top, default=0) + 1)]
        self.dag = _event_dag(lengths, [((a, i), (b2, j)) for a, i, b2, j in cp.edges])
        self.desc = {e: nx.descendants(self.dag, e) for e in self.dag}
        bufs = cp.buffers
        n = len(bufs)
        self.conflict = set()
        for x, y in itertools.combinations(range(n), 2):
            if bufs[x].size and bufs[y].size and not (self.before(x, y) or self.before(y, x)):
                self.conflict.add((x, y))

    def before(self, x: int, y: int) -> bool:
        """Every end of buffer ``x`` happens before the first event of ``y``."""
        bx, by = self.cp.buffers[x], self.cp.buffers[y]
        f = (by.stream, by.first)
        return all(f in self.desc[e] for e in ((bx.stream, bx.last), *bx.reads))

    def clique_bound(self) -> int:
        """Largest total size of a pairwise-conflicting set (every subset enumerated), or, if
        larger, the largest total of the sizes rounded up to ``g`` (gcd of the alignments of the
        non-zero-size buffers) less the largest rounding."""
        n = self.cp.n
        sizes = [b.size for b in self.cp.buffers]
        als = [self.aligned(i) for i in range(n) if sizes[i]]
        g = math.gcd(*als) if als else 1
        rounded = [-(-z // g) * g for z in sizes]
        slack = max(r - z for r, z in zip(rounded, sizes, strict=True)) if n else 0
        best = padded = 0
        for mask in range(1, 1 << n):
            mem = [i for i in range(n) if mask >> i & 1]
            if all((a, b) in self.conflict for a, b in itertools.combinations(mem, 2)):
                best = max(best, sum(sizes[i] for i in mem))
                padded = max(padded, sum(rounded[i] for i in mem) - slack)
        return max(best, padded)

    def aligned(self, i: int) -> int:
        b = self.cp.buffers[i]
        return self.cp.alignment if b.alignment is None else b.alignment

    def valid(self, offsets) -> bool:
        """Aligned, non-negative offsets and no conflicting pair overlapping in address."""
        bufs = self.cp.buffers
        off = [int(o) for o in offsets]
        if any(o < 0 or o % self.aligned(i) for i, o in enumerate(off)):
            return False
        for x, y in self.conflict:
            if off[x] < off[y] + bufs[y].size and off[y] < off[x] + bufs[x].size:
                return False
        return True

    def optimum(self, lo: int, hi: int) -> int:
        """The smallest arena ``B`` in ``[lo, hi]`` with a valid plan, by trying every aligned
        offset ``0 .. B - size`` of every non-zero-size buffer (depth-first, conflicts with the
        buffers already placed checked at each step). ``hi`` must be feasible."""
        bufs = self.cp.buffers
        live = sorted((i for i in range(self.cp.n) if bufs[i].size), key=lambda i: -bufs[i].size)
        nb = {i: set() for i in live}
        for x, y in self.conflict:
            nb[x].add(y)
            nb[y].add(x)

        def fits(B):
            off = {}

            def dfs(k):
                if k == len(live):
                    return True
                i = live[k]
                s, a = bufs[i].size, self.aligned(i)
                for o in range(0, B - s + 1, a):
                    if all(not (o < off[j] + bufs[j].size and off[j] < o + s)
                           for j in nb[i] if j in off):
                        off[i] = o
                        if dfs(k + 1):
                            return True
                        del off[i]
                return False

            return dfs(0)

        for B in range(lo, hi + 1):
            if fits(B):
                return B
        return hi


def _single_schedule_problem(cp: ConcurrentProblem) -> Problem:
    """What a single-schedule planner sees: events in one linear extension (topological sort
    keyed by (step, stream)), each buffer live from its first event's position to its last end's
    position (half-open, + 1)."""
    dag = nx.DiGraph()
    ev = set()
    for b in cp.buffers:
        ev.update(((b.stream, b.first), (b.stream, b.last), *b.reads))
    for a, i, b2, j in cp.edges:
        ev.update(((a, i), (b2, j)))
    top = {}
    for s, t in ev:
        top[s] = max(top.get(s, 0), t)
    for s, t in top.items():
        dag.add_edges_from(((s, i), (s, i + 1)) for i in range(t))
        dag.add_node((s, 0))
    dag.add_edges_from(((a, i), (b2, j)) for a, i, b2, j in cp.edges)
    pos = {e: p for p, e in enumerate(nx.lexicographical_topological_sort(
        dag, key=lambda e: (e[1], e[0])))}
    out = []
    for b in cp.buffers:
        lo = pos[(b.stream, b.first)]
        hi = max(pos[e] for e in ((b.stream, b.last), *b.reads)) + 1
        out.append(Buffer(b.id, lo, hi, b.size, b.alignment))
    return Problem(out, alignment=cp.alignment)


def check_problem(cp: ConcurrentProblem, seed: int = 0, time_limit: float = 5.0) -> dict:
    """Run every comparison of the module docstring on ``cp``; return the row (``first`` names
    the first disagreement, empty when none)."""
    o = Oracle(cp)
    bad: list[str] = []
    comparisons = 0

    def expect(ok: bool, what: str) -> None:
        nonlocal comparisons
        comparisons += 1
        if not ok:
            bad.append(what)

    a, b = cp.conflict_edges()
    got = {(min(i, j), max(i, j)) for i, j in zip(a.tolist(), b.tolist(), strict=True)}
    expect(got == o.conflict and len(got) == a.size, f"conflicts {sorted(got)} != {sorted(o.conflict)}")
    lb = concurrent_lower_bound(cp)
    cb = o.clique_bound()
    expect(lb == cb, f"bound {lb} != clique oracle {cb}")
    if cp.k == 1 and not cp.edges and not any(x.reads for x in cp.buffers):
        ip = Problem([Buffer(x.id, x.first, x.last + 1, x.size, x.alignment)
                      for x in cp.buffers], alignment=cp.alignment)
        expect(lb == lower_bound(ip), f"one-stream bound {lb} != lower_bound {lower_bound(ip)}")
    cover = cp.interval_cover()
    st, en = cover.starts, cover.ends
    expect(all(st[x] < en[y] and st[y] < en[x] for x, y in o.conflict),
           "a conflict does not interfere in the interval cover")
    plans = {}
    for name in PLANNERS_CHECKED:
        try:
            p = plan_concurrent(cp, name, time_limit=time_limit)
        except InvalidPlanError as exc:  # plan_concurrent's own validator refused its plan
            expect(False, f"{name}: {exc}")
            continue
        if p.offsets is None:
            expect(False, f"{name} refused: {p.info.get('reason')}")
            continue
        plans[name] = p
        expect(o.valid(p.offsets), f"{name}: plan rejected by the oracle")
        expect(p.status != "optimal" or p.arena == lb, f"{name}: optimal above the bound")
    hi = min(p.arena for p in plans.values()) if plans else sum(x.size + 1 for x in cp.buffers)
    opt = o.optimum(cb, hi)
    expect(opt >= lb, f"optimum {opt} below the bound {lb}")
    for name, p in plans.items():
        expect(p.arena >= opt, f"{name}: arena {p.arena} below the exhaustive optimum {opt}")
    cs = plans.get("conflict_cpsat")
    if cs is not None and cs.info.get("solver_status") == "OPTIMAL":
        expect(cs.arena == opt, f"conflict_cpsat proved {cs.arena}, exhaustive optimum {opt}")
    rng = np.random.default_rng(seed)
    for _ in range(20):
        off = rng.integers(0, max(2, hi), cp.n)
        try:
            check_concurrent_plan(cp, off)
            said = True
        except InvalidPlanError:
            said = False
        expect(said == o.valid(off), f"validator says {said} on {off.tolist()}")
    for again in (ConcurrentProblem.from_json(cp.to_json()),
                  ConcurrentProblem.from_csv(*cp.to_csv(), alignment=cp.alignment,
                                             capacity=cp.capacity, name=cp.name)):
        expect(again.to_dict() == cp.to_dict(), "file round trip changed the problem")
    single = _single_schedule_problem(cp)
    naive_ok = o.valid(greedy_offsets(single, "size", "first"))
    return {"seed": seed, "streams": cp.k, "n_buffers": cp.n, "comparisons": comparisons,
            "disagreements": len(bad), "single_schedule_invalid": int(not naive_ok),
            "first": bad[0] if bad else ""}


def run(problems: int, seed: int = 0, time_limit: float = 5.0) -> list[dict]:
    """Rows of :func:`check_problem` on ``random_concurrent(seed + k)``, ``k < problems``."""
    return [check_problem(random_concurrent(seed + k), seed + k, time_limit)
            for k in range(problems)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--problems", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=5.0,
                    help="seconds per CP-SAT run (conflict_cpsat, cpsat)")
    ap.add_argument("--out", type=Path, default=None, help="CSV of one row per problem")
    args = ap.parse_args(argv)
    rows = run(args.problems, args.seed, args.time_limit)
    if args.out is not None:
        import pandas as pd

        args.out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False)
    failed = [r for r in rows if r["disagreements"]]
    naive = sum(r["single_schedule_invalid"] for r in rows)
    print(f"{len(rows)} problems, {sum(r['comparisons'] for r in rows)} comparisons, "
          f"{len(failed)} with a disagreement; single-schedule plans invalid on {naive}")
    for r in failed[:10]:
        print(f"  seed {r['seed']}: {r['first']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
