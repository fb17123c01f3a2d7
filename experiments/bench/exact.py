"""Benchmark of the exact planners on the real problems -> ``results/bench_exact.csv``.

Problems: MiniMalloc A-F (``../shared/benchmarks/minimalloc/{A..F}.1048576.csv``, capacity
1048576 bytes from the file name; skipped with a message when absent) and, when
:mod:`scheduling.onnx_import` is importable, the nine light ONNX models of the ``onnx`` wheel
(activation lifetimes in file order, no capacity: the arena is minimised).

Planners (each when registered): ``cpsat`` in both formulations, ``ilp_blocks`` on both backends,
``milp_offsets``, ``exact_search`` and ``minimize`` (compiled search and its minimising driver,
written in other modules), and the colouring heuristics ``chaitin`` / ``interval_colouring``.
``ilp_blocks`` is run without the capacity (it minimises the shared-block total). One row per run:

``problem, n_buffers, capacity, lower_bound, best_heuristic, best_heuristic_arena, planner,
label, params, status, arena, best_bound, seconds``

``arena``, ``lower_bound``, ``best_bound`` and ``capacity`` are bytes; ``seconds`` is the median
wall clock of ``repeats`` solves (default 3). A run that ends at its time limit (status ``timeout``,
or within 10 % of the limit) is not repeated: its time is the limit, so ``repeats`` is 1. ``status`` is the planner's (``optimal`` / ``feasible`` / ``infeasible`` / ``timeout`` /
``over_capacity`` / ``heuristic``); a run that raised records ``error: ...``. Rows are appended and
flushed one by one, so an interrupted run keeps what it measured.

Usage::

    python -m experiments.bench.exact --out results/bench_exact.csv
    python -m experiments.bench.exact --cpsat-limit 60 --ilp-limit 30 --problems A,B --labels cpsat_nooverlap2d
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

from planners import MemplanError, Problem, get_planner, lower_bound, read_minimalloc_csv
from planners.registry import PLANNERS
from planners.warmstart import best_heuristic

__all__ = ["COLUMNS", "configurations", "load_problems", "run", "main"]

COLUMNS = [
    "problem",
    "n_buffers",
    "capacity",
    "lower_bound",
    "best_heuristic",
    "best_heuristic_arena",
    "planner",
    "label",
    "params",
    "status",
    "arena",
    "best_bound",
    "seconds",
    "repeats",
]

DEFAULT_MINIMALLOC = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "benchmarks" / "minimalloc"
)


def configurations(cpsat_limit: float, ilp_limit: float, search_limit: float):
    """``[(label, registry name, params, keep_capacity)]`` of the runs, registered planners only."""
    confs = [
        (
            "cpsat_nooverlap2d",
            "cpsat",
            {"formulation": "nooverlap2d", "mode": "minimize", "time_limit": cpsat_limit},
            True,
        ),
        (
            "cpsat_pairwise",
            "cpsat",
            {"formulation": "pairwise", "mode": "minimize", "time_limit": cpsat_limit},
            True,
        ),
        ("milp_offsets", "milp_offsets", {"time_limit": ilp_limit}, True),
        (
            "ilp_blocks_ortools",
            "ilp_blocks",
            {"backend": "ortools", "time_limit": ilp_limit},
            False,
        ),
        ("ilp_blocks_pulp", "ilp_blocks", {"backend": "pulp", "time_limit": ilp_limit}, False),
        ("exact_search", "exact_search", {"time_limit": search_limit}, True),
        ("minimize", "minimize", {"time_limit": search_limit}, False),
        ("chaitin", "chaitin", {}, False),
        ("interval_colouring", "interval_colouring", {}, False),
    ]
    return [c for c in confs if c[1] in PLANNERS]


def load_problems(minimalloc_dir: Path | None, names: list[str] | None, onnx: bool = True):
    """``[(name, Problem)]``: MiniMalloc A-F then the ONNX light models (when importable)."""
    out: list[tuple[str, Problem]] = []
    if minimalloc_dir is not None and Path(minimalloc_dir).is_dir():
        for stem in "ABCDEF":
            f = Path(minimalloc_dir) / f"{stem}.1048576.csv"
            if f.is_file():
                out.append((f"minimalloc:{stem}", read_minimalloc_csv(f)))
    else:
        print(f"bench_exact: {minimalloc_dir} absent, MiniMalloc A-F skipped", file=sys.stderr)
    if onnx:
        try:
            from experiments.workloads import onnx_workloads

            for name, w in onnx_workloads().items():
                out.append((f"onnx:{name}", w.problem()))
        except (ImportError, MemplanError) as e:
            print(f"bench_exact: ONNX models skipped ({e})", file=sys.stderr)
    if names:
        want = set(names)
        out = [(n, p) for n, p in out if n in want or n.split(":", 1)[1] in want]
    return out


def run(out: Path, problems, confs, labels: list[str] | None = None, repeats: int = 3) -> None:
    """Run every configuration on every problem ``repeats`` times and append one row per
    (problem, configuration) to ``out`` (CSV, header first), with the median seconds."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        fh.flush()
        for pname, prob in problems:
            lb = lower_bound(prob)
            _, h_arena, h_info = best_heuristic(prob)
            for label, name, params, keep_cap in confs:
                if labels and label not in labels:
                    continue
                p = prob if keep_cap else prob.with_capacity(None)
                if getattr(PLANNERS[name], "requires_capacity", False) and p.capacity is None:
                    p = p.with_capacity(lb)  # the decision question: does the optimum reach it?
                row = {
                    "problem": pname,
                    "n_buffers": prob.n,
                    "capacity": p.capacity,
                    "lower_bound": lb,
                    "best_heuristic": h_info["warm_start"],
                    "best_heuristic_arena": h_arena,
                    "planner": name,
                    "label": label,
                    "params": json.dumps(params, sort_keys=True),
                }
                times: list[float] = []
                for _ in range(max(1, repeats)):
                    t0 = time.perf_counter()
                    try:
                        r = get_planner(name, **params).plan(p)
                    except MemplanError as e:
                        row.update(status=f"error: {e}")
                        times.append(time.perf_counter() - t0)
                        break
                    times.append(r.seconds)
                    row.update(
                        status=r.status,
                        arena=r.arena_size if r.status not in ("infeasible", "timeout", "skipped") else "",
                        best_bound=r.best_bound,
                    )
                    limit = params.get("time_limit")
                    if r.status == "timeout" or (limit and r.seconds >= 0.9 * limit):
                        break  # ended by its limit: repeating only measures the limit again
                row.update(seconds=round(statistics.median(times), 3), repeats=len(times))
                w.writerow(row)
                fh.flush()
                print(
                    f"{pname:22s} {label:20s} {row['status']:12s} arena={row.get('arena')} "
                    f"bound={row.get('best_bound')} lb={lb} t={row['seconds']}s",
                    flush=True,
                )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.exact --help``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_exact.csv"))
    ap.add_argument("--minimalloc-dir", type=Path, default=DEFAULT_MINIMALLOC)
    ap.add_argument("--cpsat-limit", type=float, default=60.0, help="seconds per cpsat run")
    ap.add_argument("--ilp-limit", type=float, default=30.0, help="seconds per ILP/MILP run")
    ap.add_argument("--search-limit", type=float, default=60.0, help="exact_search / minimize")
    ap.add_argument("--problems", default="", help="comma list (A,B,onnx:resnet50,...)")
    ap.add_argument("--labels", default="", help="comma list of run labels (default: all)")
    ap.add_argument("--no-onnx", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="solves per run; median seconds")
    a = ap.parse_args(argv)
    problems = load_problems(
        a.minimalloc_dir, [s for s in a.problems.split(",") if s], onnx=not a.no_onnx
    )
    confs = configurations(a.cpsat_limit, a.ilp_limit, a.search_limit)
    run(a.out, problems, confs, [s for s in a.labels.split(",") if s] or None, repeats=a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
