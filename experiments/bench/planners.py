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

The greedy planners run the compiled placement engine when it is built (``engine="auto"``).

**Scale benchmark** (``--scale``, :func:`benchmark_scale`): ``greedy_by_size`` on large problems,
each measurement in its own child process (so its peak resident memory is its own), written to
``results/bench_scale.csv`` with the log-log figure ``results/figures/bench_scale.{png,pdf}``
(:func:`plot_scale`):

* ``pangu``: the idealloc SOMAS problem ``somas_pangu_2.6B.csv`` (18,692 buffers, about 12.2 M
  interfering pairs; read from ``../shared/benchmarks/idealloc``, skipped with a note when absent)
  with the Python engine and the C engine (target: C at least 15x faster);
* ``random``: :func:`planners.random_problems.random_problem` with 10^4, 10^5, 10^6 buffers, C
  engine (target: 10^6 in under 5 s and 1 GB peak RSS), and the Python engine up to 10^5;
* ``csv_read``: :func:`planners.io.read_minimalloc_csv` of a 10^6-row file (target: under 3 s);
* ``realistic`` (issue #34): :func:`planners.random_problems.realistic_problem` (seed 0; starts
  uniform over ``n`` steps, exponential lifetimes of mean 1,000 steps, so about 1,000 buffers
  live at a step; sizes log-uniform 64 B - 1 MiB) with 10^6 and 10^7 buffers, planned by the
  start-order sweeps ``best_fit`` and ``greedy`` with ``order="start"`` (first fit, the
  chronological sweep of omnimalloc) and, at 10^6 only, ``greedy_by_size``. Each row gives the
  planner call (``cpu_seconds``), the lower bound (``bound_cpu_seconds``), the validator
  (``validate_cpu_seconds``) and the whole :meth:`planners.Planner.plan` (``plan_cpu_seconds``)
  separately, beside the floor measured in the same child (``floor_cpu_seconds``: a numpy
  argsort of the ``2n`` lifetime events and one cumulative-sum sweep over them); a second child
  per row does only what ``memplan plan`` does (start the interpreter, import :mod:`planners`,
  build the problem, ``plan()``; :data:`_PROCESS_CHILD`), and its CPU time is
  ``process_cpu_seconds``. Targets: a greedy sweep at 10^6 under 1 s of
  whole-process CPU and within 2x the floor; at 10^7 under 15 s and under 4 GB peak RSS;
* ``choose_best``: ``choose_best`` (the default members, one thread) on pangu and, as the
  stand-in of IOPDDL's Y_1 trace (62,185 buffers; the IOPDDL traces are not under ``../shared``),
  ``realistic_problem(62185)`` (target: under 3 s of CPU).

Every CPU figure is the child's process time; ``load_1min`` and ``uptime`` (the machine's load
averages when the measurement started) stand beside it, because other processes share the cores.

Columns (:data:`SCALE_COLUMNS`): ``case, engine, n_buffers, interfering_pairs`` (pairs of
non-zero-size buffers live at the same step), ``seconds`` (solve wall time, the best of
``repeats``; for ``csv_read`` the read), ``seconds_median``, ``cpu_seconds`` (process CPU time of
the best solve), ``plan_seconds`` (the whole :meth:`planners.Planner.plan` call: lower bound,
solve and the validator), ``validate_seconds`` (:func:`planners.validate.check_plan` alone),
``setup_seconds`` (building or reading the problem), ``arena``, ``lower_bound`` (bytes),
``setup_rss_mb`` (peak RSS after building the problem) and ``peak_rss_mb`` (peak RSS of the child,
MiB), ``repeats``, ``load_1min`` (the machine's 1-minute load average when the measurement
started: runnable processes, on 2 cores here), ``target``, ``met``, ``note``; then
``planner``, ``bound_cpu_seconds``, ``validate_cpu_seconds``, ``plan_cpu_seconds``,
``process_cpu_seconds``, ``floor_cpu_seconds`` and ``uptime`` (the 1, 5 and 15-minute load
averages). Wall times depend on the load of the machine; ``cpu_seconds`` less so.

Usage::

    python -m experiments.bench.planners --out results/bench_planners.csv
    python -m experiments.bench.planners --sizes 1000,10000 --planners greedy_by_size,best_fit
    python -m experiments.bench.planners --scale --out results/bench_scale.csv
    python -m experiments.bench.planners --scale --cases realistic,choose_best --out /tmp/scale.csv
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.plots.style import styled
from planners import get_planner, lower_bound
from planners.greedy import GreedyPlanner
from planners.random_problems import random_problem, realistic_problem
from planners.registry import PLANNERS, check_planner_names

__all__ = [
    "COLUMNS",
    "SCALE_COLUMNS",
    "SCALE_CASES",
    "REALISTIC_PLANNERS",
    "benchmark_planners",
    "benchmark_scale",
    "default_planners",
    "exact_planners",
    "plot_scale",
    "main",
]

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

#: Integer columns (bytes, counts), written as exact integers with blanks for missing values.
_INT_COLUMNS = ("n_buffers", "arena", "lower_bound", "seed")


def _exact_ints(df: pd.DataFrame, columns) -> pd.DataFrame:
    """``columns`` of ``df`` (built with ``dtype=object``) as nullable Int64 from the Python ints
    themselves, never through float64 (which would round arenas above 2**53 bytes)."""
    for c in columns:
        df[c] = pd.array([None if v is None or v is pd.NA else int(v) for v in df[c]], dtype="Int64")
    for c in df.columns:
        if c not in columns:
            df[c] = df[c].infer_objects()
    return df


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
    return _exact_ints(pd.DataFrame(rows, columns=COLUMNS, dtype=object), _INT_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Scale benchmark: one child process per measurement
# ---------------------------------------------------------------------------------------------
#: Columns of ``results/bench_scale.csv``, in order.
SCALE_COLUMNS = [
    "case",
    "engine",
    "n_buffers",
    "interfering_pairs",
    "seconds",
    "seconds_median",
    "cpu_seconds",
    "plan_seconds",
    "validate_seconds",
    "setup_seconds",
    "arena",
    "lower_bound",
    "setup_rss_mb",
    "peak_rss_mb",
    "repeats",
    "load_1min",
    "target",
    "met",
    "note",
    "planner",
    "bound_cpu_seconds",
    "validate_cpu_seconds",
    "plan_cpu_seconds",
    "process_cpu_seconds",
    "floor_cpu_seconds",
    "uptime",
]

#: Cases of :func:`benchmark_scale` (``--cases``).
SCALE_CASES = ("pangu", "random", "csv_read", "realistic", "choose_best")

#: The realistic problem's planners: (row label, registry name, parameters, largest n).
REALISTIC_PLANNERS = (
    ("best_fit", "best_fit", {}, 10**7),
    ("first_fit_start", "greedy", {"order": "start", "fit": "first"}, 10**7),
    ("greedy_by_size", "greedy_by_size", {}, 10**6),
)

#: Buffers of the IOPDDL Y_1 trace, whose stand-in is ``realistic_problem(Y1_BUFFERS)``.
Y1_BUFFERS = 62185

#: The idealloc problem of the scale benchmark, under ``../shared``.
PANGU = ("benchmarks", "idealloc", "somas_pangu_2.6B.csv")


def _peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _write_random_csv(path: Path, n: int, seed: int) -> None:
    """A MiniMalloc CSV of ``n`` rows with the lifetimes and sizes of :func:`random_problem`'s
    defaults (written with numpy, no :class:`planners.Problem` built)."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, n, size=n)
    ends = starts + rng.geometric(1.0 / 50.0, size=n)
    sizes = np.clip(np.rint(4096 * np.exp(1.5 * rng.standard_normal(n))), 1, 1 << 24)
    table = np.column_stack([np.arange(n), starts, ends, sizes.astype(np.int64)])
    np.savetxt(path, table, fmt="%d", delimiter=",", header="id,lower,upper,size", comments="")


def _cpu() -> float:
    """CPU seconds (user + system) of this process so far, interpreter start-up included."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _uptime() -> str:
    """The 1, 5 and 15-minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _floor(problem) -> float:
    """CPU seconds of the floor: a numpy argsort of the ``2n`` lifetime events (ends before starts
    at a step) and one sweep over them (a cumulative sum of the signed sizes and its maximum)."""
    c0 = time.process_time()
    key = np.concatenate([problem.ends * 2, problem.starts * 2 + 1])
    order = np.argsort(key)
    delta = np.concatenate([-problem.sizes, problem.sizes])[order]
    int(np.cumsum(delta).max())
    return time.process_time() - c0


def _measure_realistic(spec: dict, row: dict) -> dict:
    """The ``realistic`` and ``choose_best`` rows (module docstring), in this child process."""
    from planners.bounds import lower_bound as bound
    from planners.io import read_minimalloc_csv
    from planners.validate import check_plan

    t0, c0 = time.perf_counter(), time.process_time()
    if spec.get("path"):
        problem = read_minimalloc_csv(spec["path"])
    else:
        problem = realistic_problem(spec["n"], seed=spec.get("seed", 0))
    row.update(setup_seconds=round(time.perf_counter() - t0, 4), n_buffers=problem.n,
               setup_rss_mb=round(_peak_rss_mb(), 1), planner=spec["planner"])
    planner = get_planner(spec["name"], **spec.get("params", {}))
    row["floor_cpu_seconds"] = round(min(_floor(problem) for _ in range(2)), 4)
    times = []
    res = None
    for _ in range(int(spec.get("repeats", 1))):
        res = None
        t0, c0 = time.perf_counter(), time.process_time()
        res = planner._solve(problem)
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    c0 = time.process_time()
    lb = bound(problem)
    row["bound_cpu_seconds"] = round(time.process_time() - c0, 4)
    t0, c0 = time.perf_counter(), time.process_time()
    check_plan(problem, res.offsets)
    row["validate_seconds"] = round(time.perf_counter() - t0, 4)
    row["validate_cpu_seconds"] = round(time.process_time() - c0, 4)
    del res
    t0, c0 = time.perf_counter(), time.process_time()
    result = planner.plan(problem)
    row["plan_seconds"] = round(time.perf_counter() - t0, 4)
    row["plan_cpu_seconds"] = round(time.process_time() - c0, 4)
    best = min(times)
    row.update(seconds=round(best[0], 4), cpu_seconds=round(best[1], 4),
               seconds_median=round(statistics.median(t for t, _ in times), 4),
               arena=result.arena_size, lower_bound=lb, peak_rss_mb=round(_peak_rss_mb(), 1),
               engine=str(result.info.get("engine", "")))
    if result.lower_bound != lb:
        raise RuntimeError("lower_bound and Plan.lower_bound disagree")
    return row


def _measure(spec: dict) -> dict:
    """One measurement (runs in a child process); returns a row of :data:`SCALE_COLUMNS`."""
    from planners.interference import interference_degrees
    from planners.io import _fast_columns, read_minimalloc_csv
    from planners.validate import check_plan

    case, engine, repeats = spec["case"], spec.get("engine", ""), int(spec.get("repeats", 1))
    row = {c: None for c in SCALE_COLUMNS}
    row.update(case=case, engine=engine, repeats=repeats, note=spec.get("note", ""),
               load_1min=round(os.getloadavg()[0], 2), uptime=_uptime())
    if case in ("realistic", "choose_best"):
        return _measure_realistic(spec, row)
    t0 = time.perf_counter()
    if case == "csv_read":
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "random.csv"
            _write_random_csv(path, spec["n"], spec.get("seed", 0))
            times, problem = [], None
            for _ in range(repeats):
                problem = None  # one problem in memory at a time
                t0 = time.perf_counter()
                c0 = time.process_time()
                problem = read_minimalloc_csv(path)
                times.append((time.perf_counter() - t0, time.process_time() - c0))
            # where the time goes: the numpy parse of the bytes alone (planners.io._fast_columns);
            # the rest is reading the file, the header and the Problem's column checks
            raw = path.read_bytes()
            t0 = time.perf_counter()
            cols = _fast_columns(raw, ["id", "lower", "upper", "size"], False)
            parse = time.perf_counter() - t0
            del raw
            if cols is None:
                row["note"] = "read by the slower Python paths (the numpy parser declined the file)"
            else:
                row["note"] = (f"numpy parser; of which about {parse:.2f} s parsing the bytes "
                               f"(planners.io._fast_columns), no Buffer objects built")
            del problem, cols
        best = min(times)
        row.update(
            engine="",
            n_buffers=spec["n"],
            seconds=round(best[0], 4),
            seconds_median=round(statistics.median(t for t, _ in times), 4),
            cpu_seconds=round(best[1], 4),
            peak_rss_mb=round(_peak_rss_mb(), 1),
        )
        return row
    if case in ("pangu", "pangu_choose_best"):
        problem = read_minimalloc_csv(spec["path"])
    else:
        problem = random_problem(spec["n"], seed=spec.get("seed", 0))
    row["setup_seconds"] = round(time.perf_counter() - t0, 4)
    row["setup_rss_mb"] = round(_peak_rss_mb(), 1)
    row["n_buffers"] = problem.n
    if case == "pangu_choose_best":  # every default member, on 1 or 2 threads
        planner = get_planner("choose_best", workers=int(spec["workers"]))
    else:
        planner = get_planner("greedy_by_size", engine=engine)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c0 = time.process_time()
        res = planner._solve(problem)
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    t0 = time.perf_counter()
    result = planner.plan(problem)  # the gate every plan passes: lower bound, solve, validator
    row["plan_seconds"] = round(time.perf_counter() - t0, 4)
    if case != "pangu_choose_best" and result.info.get("engine") != engine:
        raise RuntimeError(f"engine {engine!r} requested, {result.info.get('engine')!r} ran")
    if not np.array_equal(result.offsets, res.offsets):
        raise RuntimeError("two runs of the same planner gave different offsets")
    t0 = time.perf_counter()
    check_plan(problem, result.offsets)
    row["validate_seconds"] = round(time.perf_counter() - t0, 4)
    best = min(times)
    row.update(
        seconds=round(best[0], 4),
        seconds_median=round(statistics.median(t for t, _ in times), 4),
        cpu_seconds=round(best[1], 4),
        arena=result.arena_size,
        lower_bound=result.lower_bound,
        interfering_pairs=int(interference_degrees(problem, ignore_zero_size=True).sum()) // 2,
        peak_rss_mb=round(_peak_rss_mb(), 1),
    )
    return row


#: The whole-process child of a ``realistic`` / ``choose_best`` row: what ``memplan plan`` does
#: (start the interpreter, import planners, build or read the problem, ``plan()``), nothing else.
_PROCESS_CHILD = """
import json, resource, sys, time
spec = json.loads(sys.argv[1])
from planners import get_planner
from planners.io import read_minimalloc_csv
from planners.random_problems import realistic_problem
c0 = time.process_time()
problem = (read_minimalloc_csv(spec["path"]) if spec.get("path")
           else realistic_problem(spec["n"], seed=spec.get("seed", 0)))
c1 = time.process_time()
result = get_planner(spec["name"], **spec.get("params", {})).plan(problem)
c2 = time.process_time()
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"process_cpu_seconds": r.ru_utime + r.ru_stime, "plan_cpu_seconds": c2 - c1,
                  "setup_cpu_seconds": c1 - c0, "peak_rss_mb": r.ru_maxrss / 1024,
                  "arena": result.arena_size, "lower_bound": result.lower_bound,
                  "n_buffers": problem.n, "engine": str(result.info.get("engine", ""))}))
"""


def _run_process(spec: dict, timeout: float) -> dict:
    """The whole-process row of ``spec`` (:data:`_PROCESS_CHILD` in a fresh interpreter)."""
    row = {c: None for c in SCALE_COLUMNS}
    row.update(case=spec["case"], planner=spec.get("planner"), note=spec.get("note", ""),
               load_1min=round(os.getloadavg()[0], 2), uptime=_uptime(), repeats=1)
    try:
        out = subprocess.run([sys.executable, "-c", _PROCESS_CHILD, json.dumps(spec)],
                             capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        row["note"] = f"no result within {timeout:.0f} s"
        return row
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or "").strip().splitlines()
        row["note"] = f"child failed: {tail[-1] if tail else e.returncode}"
        return row
    got = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(n_buffers=got["n_buffers"], arena=got["arena"], lower_bound=got["lower_bound"],
               engine=got["engine"], process_cpu_seconds=round(got["process_cpu_seconds"], 4),
               plan_cpu_seconds=round(got["plan_cpu_seconds"], 4),
               peak_rss_mb=round(got["peak_rss_mb"], 1))
    row["note"] = (f"{row['note']}; setup (build or read) {got['setup_cpu_seconds']:.3f} s CPU, "
                   "the rest start-up and imports").lstrip("; ")
    return row


def _run_child(spec: dict, timeout: float) -> dict:
    """Run :func:`_measure` in a fresh interpreter; a failure becomes a row with a note."""
    cmd = [sys.executable, "-m", "experiments.bench.planners", "--scale-child", json.dumps(spec)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        note = f"no result within {timeout:.0f} s"
    except subprocess.CalledProcessError as e:
        tail = (e.stderr or "").strip().splitlines()
        note = f"child failed: {tail[-1] if tail else e.returncode}"
    row = {c: None for c in SCALE_COLUMNS}
    row.update(case=spec["case"], engine=spec.get("engine", ""), n_buffers=spec.get("n"), note=note,
               planner=spec.get("planner"))
    return row


def benchmark_scale(
    sizes: tuple[int, ...] = (10**4, 10**5, 10**6),
    python_max: int = 10**5,
    csv_rows: int = 10**6,
    pangu_path: str | Path | None = None,
    repeats: int = 3,
    seed: int = 0,
    timeout: float = 3600.0,
    verbose: bool = True,
    cases: tuple[str, ...] = SCALE_CASES,
    realistic_sizes: tuple[int, ...] = (10**6, 10**7),
) -> pd.DataFrame:
    """The scale benchmark (module docstring); returns a DataFrame with :data:`SCALE_COLUMNS`.

    Parameters
    ----------
    sizes : numbers of random buffers for the C engine.
    python_max : largest random size also run with the Python engine.
    csv_rows : rows of the CSV-reading measurement (0 skips it).
    pangu_path : the idealloc ``somas_pangu_2.6B.csv``; ``None`` or a missing file gives a row with
        a note instead.
    repeats : solves per C-engine measurement (the best and the median are reported); the Python
        engine solves once.
    seed : seed of the random problems.
    timeout : seconds per child process.
    verbose : print one line per measurement to stderr.
    cases : the cases to run, of :data:`SCALE_CASES`.
    realistic_sizes : buffers of the ``realistic`` rows (each planner up to its largest n in
        :data:`REALISTIC_PLANNERS`).

    Targets (column ``met``): pangu C engine at least 15x faster than the Python engine; 10^6
    random buffers under 5 s and under 1024 MiB peak RSS; the 10^6-row CSV read under 3 s; a
    greedy sweep on the realistic 10^6 problem under 1 s of whole-process CPU and within 2x the
    floor, at 10^7 under 15 s and 4 GB; ``choose_best`` under 3 s of CPU.

    Raises
    ------
    ValueError
        An unknown case.
    """
    unknown = set(cases) - set(SCALE_CASES)
    if unknown:
        raise ValueError(f"unknown scale cases {sorted(unknown)}; choose from {SCALE_CASES}")
    specs = []
    if "realistic" in cases:
        for n in realistic_sizes:
            for label, name, params, n_max in REALISTIC_PLANNERS:
                if n > n_max:
                    continue
                base = {"case": "realistic", "planner": label, "name": name, "params": params,
                        "n": n, "seed": seed, "repeats": 1 if n > 10**6 or name ==
                        "greedy_by_size" else repeats}
                specs.append(base)
                specs.append({**base, "process": True, "note": "whole process"})
    if "choose_best" in cases:
        cb = {"case": "choose_best", "planner": "choose_best", "name": "choose_best",
              "params": {"workers": 1}, "repeats": 1}
        if pangu_path is not None and Path(pangu_path).exists():
            specs.append({**cb, "path": str(pangu_path), "note": "somas_pangu_2.6B"})
            specs.append({**cb, "path": str(pangu_path), "process": True,
                          "note": "somas_pangu_2.6B, whole process"})
        specs.append({**cb, "n": Y1_BUFFERS, "seed": seed,
                      "note": "realistic_problem(62185), the stand-in of IOPDDL Y_1"})
        specs.append({**cb, "n": Y1_BUFFERS, "seed": seed, "process": True,
                      "note": "realistic_problem(62185), whole process"})
    if "pangu" in cases and pangu_path is not None and Path(pangu_path).exists():
        for engine in ("python", "c"):
            specs.append({"case": "pangu", "engine": engine, "path": str(pangu_path),
                          "repeats": repeats if engine == "c" else 1})
        for workers in (1, 2):
            specs.append({"case": "pangu_choose_best", "engine": "c", "path": str(pangu_path),
                          "repeats": repeats, "workers": workers,
                          "note": f"choose_best, workers={workers}"})
    for n in sizes if "random" in cases else ():
        for engine in ("python", "c") if n <= python_max else ("c",):
            specs.append({"case": "random", "engine": engine, "n": n, "seed": seed,
                          "repeats": repeats if engine == "c" else 1})
    if csv_rows and "csv_read" in cases:
        specs.append({"case": "csv_read", "n": csv_rows, "seed": seed, "repeats": repeats})
    rows = []
    if ("pangu" in cases or "choose_best" in cases) and (
            pangu_path is None or not Path(pangu_path).exists()):
        row = {c: None for c in SCALE_COLUMNS}
        row.update(case="pangu", note=f"skipped: {pangu_path} is absent")
        rows.append(row)
    for spec in specs:
        row = _run_process(spec, timeout) if spec.get("process") else _run_child(spec, timeout)
        rows.append(row)
        if verbose and spec["case"] in ("realistic", "choose_best"):
            print(f"{row['case']:>11} {row.get('planner') or '-':>15} n={row['n_buffers']} "
                  f"solve cpu {row['cpu_seconds']} s, bound {row['bound_cpu_seconds']}, "
                  f"validate {row['validate_cpu_seconds']}, plan {row['plan_cpu_seconds']}, "
                  f"process {row['process_cpu_seconds']}, floor {row['floor_cpu_seconds']}, "
                  f"peak {row['peak_rss_mb']} MiB, load {row['uptime']} {row['note']}",
                  file=sys.stderr, flush=True)
        elif verbose:
            print(f"{row['case']:>9} {row['engine'] or '-':>6} n={row['n_buffers']} "
                  f"{row['seconds']} s (cpu {row['cpu_seconds']}), validate "
                  f"{row['validate_seconds']} s, peak {row['peak_rss_mb']} MiB {row['note']}",
                  file=sys.stderr, flush=True)
    df = _exact_ints(
        pd.DataFrame(rows, columns=SCALE_COLUMNS, dtype=object),
        ("n_buffers", "interfering_pairs", "arena", "lower_bound", "repeats"),
    )
    _judge(df)
    return df


def _judge(df: pd.DataFrame) -> None:
    """Fill ``target`` and ``met`` (in place)."""
    for k, r in df.iterrows():
        if r["seconds"] is None or pd.isna(r["seconds"]):
            continue
        if r["case"] == "pangu" and r["engine"] == "c":
            py = df[(df["case"] == "pangu") & (df["engine"] == "python")]["seconds"].dropna()
            if len(py):
                speedup = float(py.iloc[0]) / float(r["seconds"])
                df.at[k, "target"] = ">= 15x the Python engine"
                df.at[k, "met"] = speedup >= 15
                df.at[k, "note"] = f"{speedup:.1f}x the Python engine"
        elif r["case"] == "random" and r["engine"] == "c" and r["n_buffers"] == 10**6:
            df.at[k, "target"] = "< 5 s and < 1024 MiB peak RSS"
            df.at[k, "met"] = bool(r["seconds"] < 5 and r["peak_rss_mb"] < 1024)
        elif r["case"] == "pangu_choose_best" and str(r["note"]).endswith("workers=2"):
            one = df[(df["case"] == "pangu_choose_best")
                     & df["note"].astype(str).str.endswith("workers=1")]["seconds"].dropna()
            if len(one):
                df.at[k, "note"] = (f"choose_best, workers=2: {float(one.iloc[0]) / float(r['seconds']):.2f}x"
                                    " workers=1")
        elif r["case"] == "csv_read" and r["n_buffers"] == 10**6:
            df.at[k, "target"] = "< 3 s"
            df.at[k, "met"] = bool(r["seconds"] < 3)
    _judge_realistic(df)


def _judge_realistic(df: pd.DataFrame) -> None:
    """``target`` and ``met`` of the ``realistic`` and ``choose_best`` rows (in place): the whole
    process row of a planner is judged, with the floor of its sibling row (same planner and n)."""
    for k, r in df.iterrows():
        if r["case"] not in ("realistic", "choose_best") or pd.isna(r["process_cpu_seconds"]):
            continue
        proc = float(r["process_cpu_seconds"])
        if r["case"] == "choose_best":
            df.at[k, "target"] = "< 3 s CPU"
            df.at[k, "met"] = proc < 3
            continue
        if r["planner"] == "greedy_by_size":
            continue  # the size order is not a sweep: no target of its own
        sib = df[(df["case"] == "realistic") & (df["planner"] == r["planner"])
                 & (df["n_buffers"] == r["n_buffers"]) & df["floor_cpu_seconds"].notna()]
        floor = float(sib["floor_cpu_seconds"].iloc[0]) if len(sib) else None
        if r["n_buffers"] == 10**6:
            df.at[k, "target"] = "< 1 s whole-process CPU and <= 2x the floor"
            df.at[k, "met"] = bool(proc < 1 and floor is not None and proc <= 2 * floor)
            if floor is not None:
                df.at[k, "note"] = f"{r['note']}; {proc / floor:.1f}x the floor"
        elif r["n_buffers"] == 10**7:
            df.at[k, "target"] = "< 15 s whole-process CPU and < 4096 MiB peak RSS"
            df.at[k, "met"] = bool(proc < 15 and float(r["peak_rss_mb"]) < 4096)


@styled()
def plot_scale(df: pd.DataFrame, out_stem: str | Path) -> list[Path]:
    """Log-log figure of the scale benchmark: solve seconds against buffers (left) and against
    interfering pairs (right), one line per engine over the random problems (dotted: its process
    CPU time), pangu as a large marker of the engine's colour. Draws the records of :func:`benchmark_scale` (no re-run);
    writes ``out_stem`` ``.png`` and ``.pdf`` with :func:`experiments.plots.save`."""
    import matplotlib.pyplot as plt

    from experiments.plots import PALETTE, save

    fig, axes = plt.subplots(1, 2, figsize=(7.16, 3.9), sharey=True, layout="constrained")
    runs = df[df["seconds"].notna() & (df["case"] != "csv_read")]
    colours = {"c": PALETTE[0], "python": PALETTE[1]}
    labels = {"c": "C engine", "python": "Python engine"}
    for ax, col, xlabel in zip(
        axes,
        ["n_buffers", "interfering_pairs"],
        ["buffers (count, log scale)", "interfering pairs (count, log scale)"],
        strict=True,
    ):
        for engine in ("python", "c"):
            r = runs[(runs["case"] == "random") & (runs["engine"] == engine)].sort_values(col)
            if len(r):
                ax.plot(r[col].astype(float), r["seconds"].astype(float), "-o", ms=4, lw=1.2,
                        color=colours[engine], label=f"{labels[engine]}, random problems")
                ax.plot(r[col].astype(float), r["cpu_seconds"].astype(float), ":", lw=1.0,
                        color=colours[engine], label=f"{labels[engine]}, random, CPU time")
            g = runs[(runs["case"] == "pangu") & (runs["engine"] == engine)]
            if len(g):
                ax.scatter(g[col].astype(float), g["seconds"].astype(float), marker="*", s=110,
                           color=colours[engine], zorder=3,
                           label=f"{labels[engine]}, somas_pangu_2.6B")
        ax.axhline(5.0, color="0.5", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("greedy_by_size solve time (s, log scale)")
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside lower center", ncol=2,
               frameon=False, title="dashed line: 5 s")
    fig.suptitle("Greedy placement engines: solve time (wall clock, shared 2-core machine)")
    return save(fig, out_stem)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry (``python -m experiments.bench.planners --help``); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None,
                    help="output CSV path (default results/bench_planners.csv, with --scale "
                         "results/bench_scale.csv)")
    ap.add_argument("--scale", action="store_true",
                    help="the scale benchmark (pangu, 10^4..10^6 random buffers, CSV reading) "
                         "and its figure")
    ap.add_argument("--figure", default="results/figures/bench_scale",
                    help="figure stem of --scale (.png and .pdf)")
    ap.add_argument("--pangu", default=None,
                    help="path of somas_pangu_2.6B.csv (default ../shared/benchmarks/idealloc/)")
    ap.add_argument("--repeats", type=int, default=3, help="solves per C-engine measurement")
    ap.add_argument("--csv-rows", type=int, default=10**6,
                    help="rows of the --scale CSV-reading measurement (0 skips it)")
    ap.add_argument("--scale-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cases", default=",".join(SCALE_CASES),
                    help="comma-separated cases of --scale (default all: "
                         f"{','.join(SCALE_CASES)})")
    ap.add_argument("--realistic-sizes", default="1000000,10000000",
                    help="buffers of the --scale realistic rows (default 1000000,10000000)")
    ap.add_argument("--sizes", default=None,
                    help="comma-separated buffer counts (default 1000,10000,100000; with --scale "
                         "10000,100000,1000000)")
    ap.add_argument(
        "--planners", default=None, help="comma-separated names (default: greedy family)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mean-lifetime", type=float, default=50.0, help="schedule steps")
    args = ap.parse_args(argv)
    if args.scale_child is not None:  # one measurement of the scale benchmark (child process)
        print(json.dumps(_measure(json.loads(args.scale_child))))
        return 0
    if args.scale:
        pangu = args.pangu
        if pangu is None:
            pangu = Path(__file__).resolve().parents[2].parent.joinpath("shared", *PANGU)
        sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else (10**4, 10**5, 10**6)
        cases = tuple(c for c in args.cases.split(",") if c)
        bad = set(cases) - set(SCALE_CASES)
        if bad:
            ap.error(f"unknown --cases {sorted(bad)}; choose from {','.join(SCALE_CASES)}")
        df = benchmark_scale(sizes=sizes, csv_rows=args.csv_rows, pangu_path=pangu,
                             repeats=args.repeats, seed=args.seed, cases=cases,
                             realistic_sizes=tuple(int(x) for x in
                                                   args.realistic_sizes.split(",") if x))
        out = Path(args.out or "results/bench_scale.csv")
        out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(out, index=False)
        plot_scale(df, args.figure)
        print(df.to_string(index=False))
        return 0
    names = args.planners.split(",") if args.planners else default_planners() + exact_planners()
    try:
        check_planner_names(names)
    except ValueError as e:
        ap.error(str(e))
    sizes = [int(x) for x in (args.sizes or "1000,10000,100000").split(",")]
    df = benchmark_planners(names, sizes, seed=args.seed, mean_lifetime=args.mean_lifetime)
    out = Path(args.out or "results/bench_planners.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
