"""Differential test of the O(n log n) planning core (issue #34) against independent oracles.

On seeded generated problems (``--problems`` of them, problem ``k`` from seed ``seed + k``: up to
60 buffers on a short horizon, so many equal starts and ends, zero sizes, mixed alignments among
1, 2, 3, 8 and 64, sizes small or up to ``2**40`` bytes) it compares, per problem:

* ``sweep``: the compiled free-list sweep (``planners._greedy.sweep``, ``method="sweep"``) for both
  fit rules, in start order and in a random order non-decreasing in start (ties shuffled), against
  the Python reference (``engine="python"``: the sorted live list) and the compiled interval-tree
  path (``method="graph"``); the offsets must be identical;
* ``validator``: :func:`planners.validate._overlap_free` with the compiled sweep
  (``planners._validate``) against an all-pairs oracle written here (a double loop over Python
  integers: two buffers of non-zero size conflict iff ``s_i < e_j and s_j < e_i`` and
  ``o_i < o_j + z_j and o_j < o_i + z_i``), on the greedy plan, on the plan with one offset moved
  onto another buffer's, and on random offsets; plus :func:`planners.validate.check_plan`
  raising exactly when the oracle finds a conflict or an offset is not a multiple of its
  buffer's alignment;
* ``bound``: :func:`planners.bounds.lower_bound` (the compiled running sum) and the numpy
  fallback against the peak of a per-step count written here (every step from the first start to
  the last end, the sum of the sizes live there).

One row per problem: ``seed, n_buffers, comparisons, disagreements, first`` (the first
disagreement, empty when none). Exit status 1 on any disagreement.

Usage::

    python -m experiments.bench.scale_differential --problems 2000 --out results/scale_differential.csv

``make test`` runs a sample of it (tests/test_scale_core.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from planners.bounds import _max_live_numpy, lower_bound
from planners.errors import InvalidPlanError
from planners.greedy import greedy_offsets
from planners.model import Buffer, Problem
from planners.validate import _overlap_free, check_plan

__all__ = ["generate", "brute_conflict", "brute_peak", "compare", "run", "main"]

ALIGNMENTS = (1, 2, 3, 8, 64)


def generate(seed: int) -> Problem:
    """The generated problem of ``seed`` (module docstring): 0-60 buffers, horizon 1-15 steps,
    about a fifth of the sizes 0, per-buffer alignments, sizes up to 64 B or ``2**40`` B."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 61))
    horizon = int(rng.integers(1, 16))
    big = bool(rng.integers(0, 4) == 0)
    bufs = []
    for i in range(n):
        s = int(rng.integers(0, horizon))
        e = s + int(rng.integers(1, horizon + 1))
        z = 0 if rng.random() < 0.2 else int(rng.integers(1, 2**40 if big else 65))
        a = int(rng.choice(ALIGNMENTS)) if rng.random() < 0.5 else None
        bufs.append(Buffer(str(i), s, e, z, a))
    return Problem(bufs, alignment=int(rng.choice(ALIGNMENTS)), name=f"scale-diff-{seed}")


def brute_conflict(problem: Problem, offsets) -> tuple[int, int] | None:
    """The first pair ``(i, j)``, ``i < j``, of non-zero-size buffers live at a common step whose
    address ranges intersect, by a double loop over Python integers; ``None`` when there is none."""
    b = problem.buffers
    off = [int(v) for v in offsets]
    for i in range(problem.n):
        for j in range(i + 1, problem.n):
            if b[i].size == 0 or b[j].size == 0:
                continue
            if b[i].start < b[j].end and b[j].start < b[i].end and \
                    off[i] < off[j] + b[j].size and off[j] < off[i] + b[i].size:
                return i, j
    return None


def brute_peak(problem: Problem) -> int:
    """Max over every step of the bytes live there (``start <= t < end``), counted step by step."""
    b = problem.buffers
    if not b:
        return 0
    return max(sum(x.size for x in b if x.start <= t < x.end)
               for t in range(min(x.start for x in b), max(x.end for x in b)))


def _start_orders(problem: Problem, rng) -> list[np.ndarray]:
    """Start order with ties in problem order, and one with the ties shuffled."""
    st = problem.starts
    shuffled = np.lexsort((rng.permutation(problem.n), st)).astype(np.int64)
    return [np.argsort(st, kind="stable").astype(np.int64), shuffled]


def compare(seed: int) -> tuple[int, list[str]]:
    """All comparisons on the problem of ``seed``: ``(count, disagreements)`` (messages)."""
    p = generate(seed)
    rng = np.random.default_rng(10**6 + seed)
    bad: list[str] = []
    count = 0
    plans = []
    for fit in ("first", "best"):
        for k, perm in enumerate(_start_orders(p, rng)):
            c = greedy_offsets(p, perm, fit, method="sweep", engine="c")
            py = greedy_offsets(p, perm, fit, engine="python")
            tree = greedy_offsets(p, perm, fit, method="graph", engine="c")
            count += 2
            if c.tolist() != py.tolist():
                bad.append(f"sweep {fit} order {k}: C {c.tolist()} != Python {py.tolist()}")
            if c.tolist() != tree.tolist():
                bad.append(f"sweep {fit} order {k}: C {c.tolist()} != interval tree "
                           f"{tree.tolist()}")
            plans.append(c)
    # the validator: the greedy plans, one offset moved onto a live buffer, random offsets
    cands = list(plans[:2])
    live = np.flatnonzero(p.sizes > 0)
    if live.size >= 2:
        moved = plans[0].copy()
        i, j = rng.choice(live, 2, replace=False)
        moved[i] = moved[j]
        cands.append(moved)
    if p.n:
        cands.append(rng.integers(0, 200, p.n) * np.lcm.reduce(p.alignments))
    for off in cands:
        want = brute_conflict(p, off) is None
        got = _overlap_free(p.starts, p.ends, off, p.sizes, engine="c")
        count += 2
        if got != want:
            bad.append(f"validator sweep says {'valid' if got else 'overlap'}, the pairs "
                       f"{'valid' if want else 'overlap'}: offsets {off.tolist()}")
        # check_plan also refuses a misaligned offset (the moved plan may have one)
        aligned = all(int(o) % int(a) == 0 for o, a in zip(off.tolist(), p.alignments.tolist()))
        try:
            check_plan(p, off)
            raised = False
        except InvalidPlanError:
            raised = True
        if raised == (want and aligned):
            bad.append(f"check_plan {'raised' if raised else 'passed'} on offsets "
                       f"{off.tolist()}; the pairs say {'valid' if want else 'overlap'}, "
                       f"{'aligned' if aligned else 'misaligned'}")
    peak = brute_peak(p)
    lb = lower_bound(p)
    fallback = _max_live_numpy(p.starts, p.ends, p.sizes)
    count += 2
    # lower_bound adds a padded bound only with alignment slack; it never drops below the peak
    if lb < peak or (not (p.aligned_sizes - p.sizes).any() and lb != peak):
        bad.append(f"lower_bound {lb}, peak of live bytes {peak}")
    if fallback != peak:
        bad.append(f"numpy max live {fallback}, peak of live bytes {peak}")
    return count, bad


def run(problems: int, seed: int = 0) -> pd.DataFrame:
    """Rows of the comparisons on ``problems`` generated problems (seeds ``seed ..``)."""
    rows = []
    for k in range(problems):
        s = seed + k
        count, bad = compare(s)
        rows.append({"seed": s, "n_buffers": generate(s).n, "comparisons": count,
                     "disagreements": len(bad), "first": bad[0] if bad else ""})
    return pd.DataFrame(rows, columns=["seed", "n_buffers", "comparisons", "disagreements",
                                       "first"])


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns 1 when any comparison disagrees."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/scale_differential.csv")
    args = ap.parse_args(argv)
    df = run(args.problems, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    bad = df[df["disagreements"] > 0]
    print(f"{len(df)} problems, {int(df['comparisons'].sum())} comparisons, "
          f"{int(df['disagreements'].sum())} disagreements on {len(bad)} problems -> {out}",
          file=sys.stderr)
    for r in bad.head(5).itertuples():
        print(f"  seed {r.seed}: {r.first}", file=sys.stderr)
    return 1 if len(bad) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
