"""Speed benchmark of every registered offset planner on seeded random problems.

For every registered heuristic planner (or the names given with ``--planners``) and every problem
size (default 1k, 10k, 100k buffers) it plans one :func:`planners.random_problems.random_problem`
(mean lifetime 50 steps over ``n`` steps, so about 50 buffers live at a step; lognormal sizes).
The exact planners (those with a ``time_limit``) run on the smallest size only, under
:data:`EXACT_TIME_LIMIT` seconds; decision planners get the lower bound as capacity. One row per
run:

``planner, n_buffers, seconds, arena, lower_bound, ratio, status, seed, mean_lifetime``

``seconds`` is the planner's solve time (:attr:`planners.Plan.seconds`, wall clock, excluding the
validation that :meth:`planners.Planner.plan` does after every solve); ``arena`` and
``lower_bound`` are bytes; ``ratio = arena / lower_bound``. Every plan is validated, so an invalid
layout aborts the benchmark.

Usage::

    python -m experiments.bench_planners --out results/bench_planners.csv
    python -m experiments.bench_planners --sizes 1000,10000 --planners greedy_by_size,best_fit
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from planners import get_planner, lower_bound
from planners.greedy import GreedyPlanner
from planners.random_problems import random_problem
from planners.registry import PLANNERS

__all__ = ["COLUMNS", "benchmark_planners", "default_planners", "exact_planners", "main"]

#: Columns of the CSV, in order.
COLUMNS = [
    "planner",
    "n_buffers",
    "seconds",
    "arena",
    "lower_bound",
    "ratio",
    "status",
    "seed",
    "mean_lifetime",
]


def default_planners() -> list[str]:
    """Every registered planner without a time limit (the heuristics), registry order, without
    the bare engine entry ``greedy`` (its defaults duplicate ``greedy_by_size``)."""
    return [
        name
        for name, cls in PLANNERS.items()
        if "time_limit" not in cls._param_names() and cls is not GreedyPlanner
    ]


def exact_planners() -> list[str]:
    """Registered planners with a time limit (exact methods); benchmarked on the smallest size
    only, under :data:`EXACT_TIME_LIMIT` seconds, with their status."""
    return [name for name, cls in PLANNERS.items() if "time_limit" in cls._param_names()]


#: Seconds given to each exact planner in the benchmark.
EXACT_TIME_LIMIT = 10.0


def benchmark_planners(
    planners: list[str],
    sizes: list[int],
    seed: int = 0,
    mean_lifetime: float = 50.0,
    verbose: bool = True,
) -> pd.DataFrame:
    """Time each planner on one random problem per size; returns a DataFrame with :data:`COLUMNS`.

    Parameters
    ----------
    planners : registry names.
    sizes : numbers of buffers.
    seed : seed of :func:`planners.random_problems.random_problem` (same problem for all planners).
    mean_lifetime : mean lifetime in schedule steps.
    verbose : print one line per run to stderr.
    """
    rows = []
    for n in sizes:
        problem = random_problem(n, seed=seed, mean_lifetime=mean_lifetime)
        lb = lower_bound(problem)
        for name in planners:
            params = {}
            target = problem
            if "time_limit" in PLANNERS[name]._param_names():
                if n != min(sizes):
                    continue
                params["time_limit"] = EXACT_TIME_LIMIT
                if PLANNERS[name].requires_capacity:
                    target = problem.with_capacity(lb)  # does the optimum reach the lower bound?
            result = get_planner(name, **params).plan(target)
            found = result.status not in ("infeasible", "timeout", "skipped")
            row = {
                "planner": name,
                "n_buffers": n,
                "seconds": round(result.seconds, 4),
                "arena": result.arena_size if found else None,
                "lower_bound": result.lower_bound,
                "ratio": round(result.ratio, 5) if found else None,
                "status": result.status,
                "seed": seed,
                "mean_lifetime": mean_lifetime,
            }
            rows.append(row)
            if verbose:
                print(
                    f"{name:>24} n={n:>7} {row['seconds']:8.3f} s  {result.status:10s} "
                    f"ratio {row['ratio']}",
                    file=sys.stderr,
                    flush=True,
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench_planners --help``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/bench_planners.csv", help="output CSV path")
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated buffer counts")
    ap.add_argument(
        "--planners", default=None, help="comma-separated names (default: greedy family)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mean-lifetime", type=float, default=50.0, help="schedule steps")
    args = ap.parse_args(argv)
    names = args.planners.split(",") if args.planners else default_planners() + exact_planners()
    unknown = [x for x in names if x not in PLANNERS]
    if unknown:
        ap.error(f"unknown planner(s) {unknown}; registered: {', '.join(PLANNERS)}")
    sizes = [int(x) for x in args.sizes.split(",")]
    df = benchmark_planners(names, sizes, seed=args.seed, mean_lifetime=args.mean_lifetime)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
