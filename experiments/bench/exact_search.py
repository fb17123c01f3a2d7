"""Benchmark of ``exact_search`` on MiniMalloc's challenging suite, and ``minimize`` on C and D.

For each of ``A``-``F`` (``NAME.1048576.csv`` in ``--minimalloc-dir``) it solves the decision
problem at the file's capacity (1048576 bytes) ``--repeats`` times (default 3) and records the
median wall-clock seconds of the solve (:attr:`planners.Plan.seconds`, excluding validation),
then runs ``minimize`` on the problems named by ``--minimize`` (default C) with a total time
limit. One row per run, columns:

``problem, planner, buffers, lower_bound, capacity, status, arena, best_bound, bound_source,
seconds, nodes, memo_hits, trajectory, bound_trajectory, bounds, target``

``capacity`` is the decision capacity (for ``minimize``: the file's capacity, unused);
``arena`` and bounds are bytes; ``best_bound`` is proved (``bound_source``: ``max_live``,
``windows`` from :func:`planners.lower_bounds.best_lower_bound`, or ``probe`` when a probe
proved a capacity infeasible); ``nodes`` the search nodes and ``memo_hits`` the subtrees cut by
the floor-profile memo (summed over probes for ``minimize``); ``trajectory`` and
``bound_trajectory`` (``minimize``) are JSON lists of ``[seconds, bytes]`` at every improvement of
the arena and of the proved bound; ``bounds`` (``minimize``) a JSON object of every lower bound
computed (bytes, by name: ``max_live``, ``windows``, ``subsets`` of
:mod:`planners.lower_bounds`); ``target`` (``minimize`` on D only) says in words which of the
targets on D was reached (:data:`D_TARGET`): the optimum proved, or a proved bound above
986,112 bytes and an arena under 1,010,000 bytes, or neither (with the figures). Every plan is
validated by :meth:`planners.Planner.plan`.

Usage::

    python -m experiments.bench.exact_search --out results/bench_exact_search.csv
    python -m experiments.bench.exact_search --problems A,C --minimize C,D --minimize-time 300
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd

from planners import lower_bound, read_minimalloc_csv
from planners.exact_search import ExactSearch
from planners.minimize import Minimize

__all__ = ["COLUMNS", "D_TARGET", "bench_exact_search", "d_target", "main"]

#: Columns of the CSV, in order.
COLUMNS = [
    "problem",
    "planner",
    "buffers",
    "lower_bound",
    "capacity",
    "status",
    "arena",
    "best_bound",
    "bound_source",
    "seconds",
    "nodes",
    "memo_hits",
    "trajectory",
    "bound_trajectory",
    "bounds",
    "target",
]

#: The targets on MiniMalloc's D (bytes): prove the optimum, or prove a bound above its max live
#: bytes and find an arena under ``arena_below``.
D_TARGET = {"max_live": 986112, "arena_below": 1010000}


def d_target(arena: int, bound: int) -> str:
    """Which target on D a ``minimize`` result (arena and proved bound, bytes) reached, in words.

    >>> d_target(1018880, 986112)
    'neither: best arena 1,018,880 >= 1,010,000 and proved bound 986,112 = max live'
    >>> d_target(1009664, 987136)
    'bound above max live and arena under 1,010,000 (bound 987,136, arena 1,009,664)'
    >>> d_target(986112, 986112)
    'optimum proved: 986,112'
    """
    if arena <= bound:
        return f"optimum proved: {arena:,}"
    lo, hi = bound > D_TARGET["max_live"], arena < D_TARGET["arena_below"]
    if lo and hi:
        return f"bound above max live and arena under 1,010,000 (bound {bound:,}, arena {arena:,})"
    a = f"best arena {arena:,} {'<' if hi else '>='} 1,010,000"
    b = f"proved bound {bound:,} {'>' if lo else '='} max live"
    return f"{'only the arena' if hi else 'only the bound' if lo else 'neither'}: {a} and {b}"


def _bound_source(m) -> str:
    """Which bound gave ``minimize``'s proved bound: a probe, or the floor's source."""
    return m.info.get("bound_source", "max_live")


def bench_exact_search(
    directory: str | Path,
    problems: list[str],
    minimize: list[str],
    repeats: int = 3,
    time_limit: float = 60.0,
    minimize_time: float = 60.0,
) -> pd.DataFrame:
    """Run the benchmark and return one row per problem (median of ``repeats`` solves) and per
    ``minimize`` run. Raises :class:`planners.errors.ProblemError` if a file is missing."""
    directory = Path(directory)
    rows = []
    for name in problems:
        prob = read_minimalloc_csv(directory / f"{name}.1048576.csv")
        runs = [ExactSearch(time_limit=time_limit).plan(prob) for _ in range(repeats)]
        best = runs[0]
        rows.append(
            {
                "problem": name,
                "planner": "exact_search",
                "buffers": prob.n,
                "lower_bound": lower_bound(prob),
                "capacity": prob.capacity,
                "status": best.status,
                "arena": best.arena_size if best.status in ("optimal", "feasible") else None,
                "best_bound": best.best_bound,
                "bound_source": "probe" if best.status == "infeasible" else "max_live",
                "seconds": statistics.median(r.seconds for r in runs),
                "nodes": best.info["nodes"],
                "memo_hits": best.info.get("memo_hits"),
            }
        )
        print(f"{name}: {rows[-1]}", file=sys.stderr)
    for name in minimize:
        prob = read_minimalloc_csv(directory / f"{name}.1048576.csv")
        m = Minimize(time_limit=minimize_time).plan(prob)
        rows.append(
            {
                "problem": name,
                "planner": "minimize",
                "buffers": prob.n,
                "lower_bound": m.lower_bound,
                "capacity": prob.capacity,
                "status": m.status,
                "arena": m.arena_size,
                "best_bound": m.best_bound,
                "bound_source": _bound_source(m),
                "seconds": m.seconds,
                "nodes": sum(p["nodes"] or 0 for p in m.info["probes"]),
                "memo_hits": sum(p.get("memo_hits") or 0 for p in m.info["probes"]),
                "trajectory": json.dumps(m.info["trajectory"]),
                "bound_trajectory": json.dumps(m.info["bound_trajectory"]),
                "bounds": json.dumps(m.info.get("bounds", {})),
                "target": d_target(m.arena_size, m.best_bound) if name == "D" else None,
            }
        )
        print(f"{name} minimize: {rows[-1]} probes={m.info['probes']}", file=sys.stderr)
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.exact_search --help``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minimalloc-dir", default="../shared/benchmarks/minimalloc")
    ap.add_argument("--problems", default="A,B,C,D,E,F")
    ap.add_argument("--minimize", default="C", help="comma-separated problems for minimize")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per exact_search run")
    ap.add_argument("--minimize-time", type=float, default=60.0, help="seconds per minimize run")
    ap.add_argument("--out", default="results/bench_exact_search.csv")
    a = ap.parse_args(argv)
    if not Path(a.minimalloc_dir).is_dir():
        print(f"{a.minimalloc_dir}: no such directory (MiniMalloc benchmarks)", file=sys.stderr)
        return 2
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    df = bench_exact_search(
        a.minimalloc_dir,
        split(a.problems),
        split(a.minimize),
        a.repeats,
        a.time_limit,
        a.minimize_time,
    )
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
