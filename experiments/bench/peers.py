"""The peers' planners beside memplan's best, one run -> ``results/bench_peers.csv`` and a figure.

Planners (registry names; every plan is validated by :func:`planners.check_plan`):

* ``vela_hillclimb`` -- Arm Vela's production HillClimb allocator, run from the installed
  ``ethos-u-vela`` (:mod:`planners.vela_hillclimb`), capped per run (:data:`VELA_CAP`: Vela's
  99,999 default iterations take minutes per problem);
* the reproduced peers: ``xla_heap`` (XLA ``GlobalDecreasingSizeBestFitHeap``),
  ``tvm_greedy_by_size``, ``tvm_greedy_by_conflicts`` and ``tvm_hill_climb`` (TVM USMP; the hill
  climb capped by :data:`TVM_HILL_CLIMB_CAP`, which binds on pangu only), ``tflm_greedy``
  (TFLite Micro's ``GreedyMemoryPlanner``);
* memplan's best: ``telamalloc`` (5 s) and ``choose_best``;
* omnimalloc (PyPI ``omnimalloc``, Apache-2.0; the optional extra ``peers``), run from the
  installed package through :func:`omnimalloc_offsets`: ``omnimalloc_supermalloc`` (its
  portfolio branch and bound, ``SupermallocAllocator``, 5 s: :data:`OMNIMALLOC_LIMIT`),
  ``omnimalloc_telamalloc`` (its TelaMalloc, 5 s), ``omnimalloc_greedy_by_all`` (its greedy
  orders, best of) and ``omnimalloc_omni`` (its default greedy portfolio, ``OmniAllocator``).
  Its ``minimalloc`` allocator needs Google's ``minimalloc`` package (not on PyPI) and is not
  run. Without omnimalloc these rows say ``status = refused`` and why.

Problems: MiniMalloc's challenging problems A-F (``../shared/benchmarks/minimalloc``),
``somas_pangu_2.6B`` (18,692 buffers, ``../shared/benchmarks/idealloc``; both skipped with a
message when absent, through :func:`experiments.bench.anytime.load_problems`), and the bundled
ONNX/TFLite corpus (:func:`experiments.workloads.onnx_workloads` and
:func:`experiments.workloads.tflite_workloads`: the nine ONNX models of the ``onnx`` wheel and the
TFLite models of the installed packages).

Each planner runs ``--repeats`` times (default 3) on each problem, one process, one after the
other. One row per (problem, planner), the medians over the repeats:

``problem, group, n_buffers, planner, source, cap, repeats, arena, lower_bound, ratio,
cpu_seconds, wall_seconds, arena_min, arena_max, status, valid, note``

``arena``, ``lower_bound`` in bytes (``lower_bound`` is max live bytes); ``ratio`` = median arena /
lower bound; ``cpu_seconds`` the median CPU time of the process (``time.process_time``) around
``plan()``, ``wall_seconds`` the median wall clock; ``cap`` states the per-run limits given;
``note`` the planner's own stop reason when it has one (iterations run, why it stopped). A
planner that refuses a problem gets ``status = refused`` and its one-line reason in ``note``.

The figure ``results/figures/bench_peers.{png,pdf}`` (redrawn from the CSV alone by
:func:`plot`) shows the ratio and the CPU seconds per problem, one marker per planner.

Usage::

    python -m experiments.bench.peers --out results/bench_peers.csv
    python -m experiments.bench.peers --problems A,squeezenet --repeats 1   # quick look
    python -m experiments.bench.peers --problems A,B,C,D,E,F --repeats 1 \\
        --planners omnimalloc_supermalloc,telamalloc --out /tmp/peers.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from experiments.plots.style import styled
from planners import FunctionPlanner, MemplanError, check_plan, get_planner, lower_bound
from planners.base import SolveResult

__all__ = ["COLUMNS", "PEERS", "VELA_CAP", "TVM_HILL_CLIMB_CAP", "TELAMALLOC_LIMIT",
           "OMNIMALLOC_LIMIT", "OMNIMALLOC", "OmnimallocMissing", "omnimalloc_offsets",
           "load_problems", "run", "plot", "main"]

COLUMNS = ["problem", "group", "n_buffers", "planner", "source", "cap", "repeats", "arena",
           "lower_bound", "ratio", "cpu_seconds", "wall_seconds", "arena_min", "arena_max",
           "status", "valid", "note"]

#: Vela's per-run cap: 5,000 of its default 99,999 iterations, and 20 CPU seconds.
VELA_CAP = {"max_iterations": 5000, "time_limit": 20.0}
#: TVM hill climb's per-run cap (CPU seconds): its 500 attempts take a second each on pangu.
TVM_HILL_CLIMB_CAP = {"time_limit": 30.0}
#: telamalloc's time limit (seconds).
TELAMALLOC_LIMIT = 5.0

#: omnimalloc's time limit (seconds; its ``timeout``, a wall-clock budget of the whole call).
OMNIMALLOC_LIMIT = 5.0


class OmnimallocMissing(MemplanError):
    """omnimalloc is not installed (``pip install omnimalloc``, or the ``peers`` extra)."""


def omnimalloc_offsets(problem, allocator: str = "supermalloc",
                       timeout: float | None = OMNIMALLOC_LIMIT) -> SolveResult:
    """Offsets (bytes) of ``problem`` from omnimalloc's allocator ``allocator``, run from the
    installed package (``omnimalloc.allocators``, registry names such as ``"supermalloc"``,
    ``"minimalloc"``, ``"omni"``).

    Each buffer becomes an ``omnimalloc.Allocation(id, size, start, end)``; omnimalloc's
    lifetimes are half-open ``[start, end)`` steps like memplan's (``Allocation.conflicts_with``).
    omnimalloc has no alignment: with alignments above 1 byte, sizes and offsets are given to it
    in units of ``L``, the lcm of the buffers' alignments (sizes rounded up), and its offsets
    multiplied by ``L`` (a valid, aligned plan of the real problem). Zero-size buffers (omnimalloc
    refuses them) get offset 0. The plan is checked by :meth:`planners.base.Planner.plan` like
    any planner's (:func:`planners.check_plan`).

    Parameters
    ----------
    problem : Problem
        Plain intervals (a planner that meets pins, hints, gaps or pools is refused by the
        planner gate).
    allocator : str
        An omnimalloc allocator name (``omnimalloc.available_allocators()``).
    timeout : float or None
        Seconds, passed as the allocator's ``timeout`` when it takes one (supermalloc,
        minimalloc, ...); ignored by the others.

    Returns
    -------
    SolveResult
        Status ``heuristic`` (the planner gate makes it ``optimal`` when the arena meets the
        lower bound); ``info``: ``omnimalloc_version``, ``allocator``, ``unit`` (L bytes) and, for
        supermalloc, its own ``proved_optimal`` and ``omnimalloc_lower_bound`` (in bytes).

    Raises
    ------
    OmnimallocMissing
        omnimalloc is not installed, or the allocator needs a package that is not (its
        ``minimalloc`` needs Google's ``minimalloc``).
    MemplanError
        An unknown allocator name, or an lcm of alignments too large to use as a unit.
    """
    try:
        import omnimalloc
        from omnimalloc.allocators import BaseAllocator
    except ImportError as e:
        raise OmnimallocMissing(f"omnimalloc is not installed ({e}); pip install omnimalloc") \
            from None
    if allocator not in omnimalloc.available_allocators():
        raise MemplanError(f"unknown omnimalloc allocator {allocator!r}; one of "
                           f"{', '.join(omnimalloc.available_allocators())}")
    cls = BaseAllocator.registry()[allocator]
    import inspect

    kw = {"timeout": timeout} if "timeout" in inspect.signature(cls.__init__).parameters else {}
    try:
        alloc = cls(**kw)
    except ImportError as e:  # an allocator with a dependency of its own (minimalloc)
        raise OmnimallocMissing(f"omnimalloc allocator {allocator!r}: {e}".splitlines()[0]) \
            from None
    sizes = problem.sizes
    aligns = np.asarray(problem.alignments, np.int64)
    unit = math.lcm(*sorted(set(aligns.tolist()))) if problem.n else 1
    if unit >= 2**40:
        raise MemplanError(f"omnimalloc peer: lcm of alignments {unit} is too large a unit")
    units = -(-sizes // unit)
    keep = np.flatnonzero(units > 0)
    allocs = tuple(omnimalloc.Allocation(id=int(i), size=int(units[i]),
                                         start=int(problem.starts[i]), end=int(problem.ends[i]))
                   for i in keep)
    info = {"omnimalloc_version": omnimalloc.__version__, "allocator": allocator, "unit": unit}
    if allocator == "supermalloc":
        res = alloc.solve(allocs)
        placed = res.allocations
        info.update(proved_optimal=bool(res.proved_optimal),
                    omnimalloc_lower_bound=int(res.lower_bound) * unit)
    else:
        placed = alloc.allocate(allocs)
    offsets = np.zeros(problem.n, np.int64)
    for a in placed:
        offsets[int(a.id)] = int(a.offset) * unit
    return SolveResult(offsets, "heuristic", info=info)


#: The omnimalloc peers: ``{peer name: omnimalloc allocator name}`` (not registry names:
#: omnimalloc is an optional dependency, run through :func:`omnimalloc_offsets`).
OMNIMALLOC = {
    "omnimalloc_supermalloc": "supermalloc",
    "omnimalloc_telamalloc": "telamalloc",
    "omnimalloc_greedy_by_all": "greedy_by_all",
    "omnimalloc_omni": "omni",
}


def _planner(name: str, params: dict):
    """The planner of a peer: a registry name, or an omnimalloc peer of :data:`OMNIMALLOC`."""
    if name in OMNIMALLOC:
        return FunctionPlanner(omnimalloc_offsets, name=name, allocator=OMNIMALLOC[name],
                               **params)
    return get_planner(name, **params)


#: ``(registry or peer name, parameters, source)`` in the order of the CSV.
PEERS = [
    ("vela_hillclimb", VELA_CAP, "ethos-u-vela hillclimb_allocation.py (run)"),
    ("xla_heap", {}, "XLA heap_simulator.cc (reproduced)"),
    ("tvm_greedy_by_size", {}, "TVM USMP greedy.cc (reproduced)"),
    ("tvm_greedy_by_conflicts", {}, "TVM USMP greedy.cc (reproduced)"),
    ("tvm_hill_climb", TVM_HILL_CLIMB_CAP, "TVM USMP hill_climb.cc (reproduced)"),
    ("tflm_greedy", {}, "TFLM greedy_memory_planner.cc (reproduced)"),
    ("telamalloc", {"time_limit": TELAMALLOC_LIMIT}, "memplan"),
    ("choose_best", {}, "memplan"),
    ("omnimalloc_supermalloc", {"timeout": OMNIMALLOC_LIMIT},
     "omnimalloc allocators/supermalloc.py (run)"),
    ("omnimalloc_telamalloc", {"timeout": OMNIMALLOC_LIMIT},
     "omnimalloc allocators/telamalloc.py (run)"),
    ("omnimalloc_greedy_by_all", {"timeout": None}, "omnimalloc allocators/greedy.py (run)"),
    ("omnimalloc_omni", {"timeout": None}, "omnimalloc allocators/omni.py (run)"),
]

ROOT = Path(__file__).resolve().parents[2]


def load_problems(minimalloc_dir: Path, idealloc_dir: Path, only: list[str] | None = None):
    """``[(label, group, problem)]``: MiniMalloc A-F and pangu (group ``minimalloc`` / ``pangu``,
    capacity dropped), then the corpus (group ``corpus``). ``only``: labels to keep."""
    from experiments.bench import anytime
    from experiments.workloads import onnx_workloads, tflite_workloads

    out = [t for t in anytime.load_problems(minimalloc_dir, idealloc_dir) if t[1] != "chain"]
    for name, w in {**onnx_workloads(), **tflite_workloads()}.items():
        if only and name not in only:
            continue
        try:
            out.append((name, "corpus", w.loader().with_capacity(None)))
        except (MemplanError, ImportError, OSError) as e:
            print(f"skipping {name}: {e}", file=sys.stderr)
    if only:
        out = [t for t in out if t[0] in only]
    return out


def _cap_text(params: dict) -> str:
    return "; ".join(f"{k}={v}" for k, v in params.items())


def _note(info: dict) -> str:
    keys = ("iterations", "attempts", "stopped", "proved_optimal")
    return "; ".join(f"{k}={info[k]}" for k in keys if k in info)


def _run_one(name: str, params: dict, problem, repeats: int) -> dict:
    """Median of ``repeats`` plans of ``problem`` by ``name``; every plan is re-checked."""
    arenas, cpus, walls = [], [], []
    pl = None
    for _ in range(repeats):
        planner = _planner(name, params)
        c0, w0 = time.process_time(), time.perf_counter()
        pl = planner.plan(problem)
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
        check_plan(problem, pl.offsets)
        arenas.append(pl.arena_size)
    return {"arena": int(statistics.median_low(arenas)), "arena_min": min(arenas),
            "arena_max": max(arenas), "cpu_seconds": round(statistics.median(cpus), 4),
            "wall_seconds": round(statistics.median(walls), 4), "status": pl.status,
            "valid": True, "note": _note(pl.info)}


def run(out: Path, problems, repeats: int = 3, planners=None) -> list[dict]:
    """Run every planner of ``planners`` (default :data:`PEERS`) on every problem, writing one row
    per pair to ``out`` (CSV) as it finishes. Returns the rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for label, group, p in problems:
            lb = lower_bound(p)
            for name, params, source in planners or PEERS:
                row = {"problem": label, "group": group, "n_buffers": p.n, "planner": name,
                       "source": source, "cap": _cap_text(params), "repeats": repeats,
                       "lower_bound": lb}
                try:
                    row.update(_run_one(name, params, p, repeats))
                    row["ratio"] = round(row["arena"] / lb, 6) if lb else 1.0
                except MemplanError as e:  # a refusal: one line, no numbers
                    row.update({"status": "refused", "valid": "", "note": str(e).splitlines()[0]})
                w.writerow(row)
                fh.flush()
                rows.append(row)
                print(f"{label:16s} {name:24s} {row.get('ratio', ''):>9} "
                      f"{row.get('cpu_seconds', '')!s:>9} s  {row['status']}  {row['note']}",
                      flush=True)
    return rows


@styled()
def plot(csv_path: Path, figure: Path) -> list[Path]:
    """Ratio and CPU seconds per problem, one marker per planner, from the rows of ``csv_path``
    (one double column, 7.16 in, wide)."""
    import matplotlib.pyplot as plt

    from experiments.plots import distinct_styles, save

    with csv_path.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["status"] != "refused" and r["ratio"]]
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    planners = list(dict.fromkeys(r["planner"] for r in rows))
    styles = dict(zip(planners, distinct_styles(len(planners))))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.16, 6.4), sharex=True,
                                   layout="constrained")
    x = {p: k for k, p in enumerate(problems)}
    width = 0.8 / max(len(planners), 1)
    for j, name in enumerate(planners):
        mine = [r for r in rows if r["planner"] == name]
        xs = [x[r["problem"]] - 0.4 + (j + 0.5) * width for r in mine]
        colour, marker = styles[name]
        ax1.scatter(xs, [float(r["ratio"]) for r in mine], color=colour, marker=marker, s=18,
                    label=name)
        ax2.scatter(xs, [max(float(r["cpu_seconds"]), 1e-4) for r in mine], color=colour,
                    marker=marker, s=18)
    ax1.axhline(1.0, color="0.6", linewidth=0.6)
    ax1.set_ylabel("arena / lower bound")
    ax2.set_yscale("log")
    ax2.set_ylabel("CPU seconds (median of runs,\nlog scale)")
    ax2.set_xticks(range(len(problems)))
    ax2.set_xticklabels(problems, rotation=60, ha="right", fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(True, axis="y", linewidth=0.3)
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside upper center", ncol=4,
               frameon=False)
    return save(fig, figure)


def summary(rows: list[dict]) -> list[str]:
    """Per planner and problem group: the ratio range and the CPU seconds range."""
    lines = []
    groups = list(dict.fromkeys(r["group"] for r in rows))
    for name in dict.fromkeys(r["planner"] for r in rows):
        parts = []
        for g in groups:
            mine = [r for r in rows if r["planner"] == name and r["group"] == g
                    and r["status"] != "refused"]
            if mine:
                rs = [float(r["ratio"]) for r in mine]
                cs = [float(r["cpu_seconds"]) for r in mine]
                parts.append(f"{g} {min(rs):.3f}-{max(rs):.3f}x in {min(cs):.2g}-{max(cs):.3g} s")
        lines.append(f"{name}: " + "; ".join(parts))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.peers --help``); returns 0."""
    from experiments.bench.anytime import DEFAULT_IDEALLOC, DEFAULT_MINIMALLOC

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/bench_peers.csv"))
    ap.add_argument("--figure", type=Path, default=Path("results/figures/bench_peers"))
    ap.add_argument("--minimalloc-dir", type=Path, default=DEFAULT_MINIMALLOC)
    ap.add_argument("--idealloc-dir", type=Path, default=DEFAULT_IDEALLOC)
    ap.add_argument("--problems", default="", help="comma list of labels (A..F, pangu, models)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per planner and problem")
    ap.add_argument("--planners", default="",
                    help="comma list of peer names to run (default all of PEERS)")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {a.repeats}")
    names = [s for s in a.planners.split(",") if s]
    known = [p[0] for p in PEERS]
    if [n for n in names if n not in known]:
        ap.error(f"--planners: unknown {[n for n in names if n not in known]}; one of "
                 f"{','.join(known)}")
    peers = [p for p in PEERS if p[0] in names] if names else None
    only = [s for s in a.problems.split(",") if s] or None
    probs = load_problems(a.minimalloc_dir, a.idealloc_dir, only)
    t0 = time.perf_counter()
    rows = run(a.out, probs, a.repeats, peers)
    for line in summary(rows):
        print(line)
    print(f"total {time.perf_counter() - t0:.0f} s wall")
    plot(a.out, a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
