"""Executing one sweep run (in a worker process): its problem resolved by
:mod:`experiments.workloads`, the planner run by :func:`experiments.harness.run_one`, the RV64 and
TFLite Micro columns by :mod:`experiments.enrich`, and the provenance fields."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import resource
import time
from pathlib import Path
from typing import Any

from experiments.sweep.config import RunSpec, _problem_digest
from experiments.sweep.provenance import machine_info

__all__ = [
    "execute_run",
    "stopped_record",
]

def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes(scoped: bool) -> int:
    if scoped:
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


@functools.lru_cache(maxsize=32)
def _graph_of(kind: str, source: str, params: str):
    from experiments.workloads import kind_graph

    return kind_graph(kind, source, json.loads(params))


def _problem_for(spec: RunSpec):
    """The run's problem and extra record fields, resolved by :mod:`experiments.workloads`.
    A graph workload's record gains ``schedule_seconds``, ``schedule_status``, ``operators`` and
    ``order_bound`` (bytes, the scheduler's proved lower bound on every order's peak); the ``joint`` scheduler's also ``joint_arena``, ``joint_bound`` and
    ``joint_status`` (its own layout of the order, checked by :func:`planners.check_plan`; the
    run's planner re-plans that order beside it).
    A CSV workload of a run with pools is read with them, so its own ``pools`` column (each
    buffer's candidates) is kept; the caller gives every other problem the pools."""
    from experiments.workloads import activation_problem, load_problem
    from planners import Problem

    w = spec.workload
    if not w.is_graph:
        pools = getattr(spec, "pools", "")
        if pools and str(w.source).endswith(".csv"):
            from planners.io import parse_pools

            p = load_problem(w.source, pools=parse_pools(pools))
            return Problem(p.buffers, alignment=p.alignment, name=w.name,
                           pools=p.pools), {}
        p = load_problem(w.source)
        return Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=w.name), {}
    from scheduling.schedulers import get_scheduler

    graph, extra = _graph_of(w.kind, w.source, w.params)
    sched = get_scheduler(spec.scheduler, **json.loads(spec.scheduler_params)).schedule(graph)
    extra = dict(extra, schedule_seconds=sched.seconds, schedule_status=sched.status,
                 operators=len(sched.order), order_bound=sched.bound)
    if "joint_status" in sched.info:  # the joint optimiser's own (checked) offsets' arena
        extra.update(joint_arena=sched.info["arena_bytes"], joint_bound=sched.info["joint_bound"],
                     joint_status=sched.info["joint_status"])
    return activation_problem(w.kind, graph, sched.order, name=w.name), extra


def _problem_csv(p) -> str:
    lines = ["id,lower,upper,size"]
    lines += [f"{i},{s},{e},{z}" for i, s, e, z in zip(range(p.n), p.starts.tolist(),
                                                         p.ends.tolist(), p.sizes.tolist(), strict=False)]
    return "\n".join(lines) + "\n"


def execute_run(spec: RunSpec) -> tuple[dict[str, Any], str | None, str]:
    """Run one :class:`RunSpec` and return ``(record, problem_csv, problem_digest)``.

    Never raises for a failing run: scheduling, loading and planning errors are recorded in
    ``error`` with ``status = "error"``. ``spec.timeout`` is not enforced here: the local
    executor runs this in a worker process that it kills at the timeout (:func:`run_sweep`) and
    records :func:`stopped_record` instead.
    ``problem_csv`` is the planned problem as MiniMalloc CSV text (ids are problem indices), or
    ``None`` when the problem could not be built; the record's ``problem_sha256`` is then the
    SHA-256 of that text (``problem_digest`` hashes the problem's arrays, ids and capacity, which
    the CSV does not all hold), so a report can check the stored file is the planned problem. A run with memory pools (``spec.pools``) plans
    the problem with those pools (:meth:`planners.Problem.with_pools`; the stored problem and its
    digest are the one-arena problem's) and its record carries ``pools``, ``arenas``,
    ``arena_NAME`` (:data:`experiments.harness.POOL_COLUMNS`) and, beside ``offsets``,
    ``pool_of`` (JSON: each buffer's pool index).
    """
    from experiments.harness import run_one

    start = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    scoped = _reset_peak_rss()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    rec: dict[str, Any] = {"key": spec.key, "workload": spec.workload.name}
    problem_csv, pdigest = None, ""
    try:
        problem, extra = _problem_for(spec)
        pdigest = _problem_digest(problem)
        problem_csv = _problem_csv(problem)
        if not spec.workload.is_graph:
            from experiments.records import external_source

            # third-party benchmark data (../shared) is stored as a reference, never copied
            ref = external_source(spec.workload.name, spec.workload.source)
            if ref is not None:
                rec["problem_ref"] = ref
        pools = getattr(spec, "pools", "")
        if pools:  # the stored problem and its digest stay the one-arena problem's
            from planners.io import parse_pools

            problem = problem.with_pools(parse_pools(pools))
        r, plan = run_one(spec.workload.name, problem, spec.planner, time_limit=spec.time_limit,
                          params=json.loads(spec.planner_params), keep_plan=True,
                          repeats=getattr(spec, "timing_repeats", 1), warm=True)
        tb = r.pop("traceback", None)
        if tb and spec.planner:
            r["error"] = r["error"] + " | " + tb.strip().splitlines()[-1]
        # ``params`` is always the requested grid point (what the key hashes), also when the
        # planner could not be built; the planner's full parameters go to ``resolved_params``.
        r["resolved_params"] = r.pop("params", "") or None
        rec.update(r)
        rec["params"] = spec.planner_params
        rec.update(extra)
        pool_of = rec.pop("pool_of", None)
        if plan is not None and rec.get("valid") and problem.n <= spec.keep_offsets:
            rec["offsets"] = json.dumps(plan.offsets.tolist())
            if pool_of is not None:  # each buffer's pool index (offsets relative to its base)
                rec["pool_of"] = json.dumps(pool_of)
        if spec.rv64:
            from experiments.enrich import rv64_columns

            rec.update(rv64_columns(problem, spec.planner))
        if spec.tflm and spec.workload.kind == "tflite":
            from experiments.enrich import tflm_columns

            rec.update(tflm_columns(spec.workload.source))
    except Exception as e:  # noqa: BLE001 - a failing run is a record, not a crash
        rec.update(_failure_fields(spec, "error", f"{type(e).__name__}: {e}"))
    rec.update(_run_fields(spec, start, time.perf_counter() - wall0, time.process_time() - cpu0,
                           _peak_rss_bytes(scoped), "run" if scoped else "process"))
    rec["problem_digest"] = pdigest
    if problem_csv is not None:  # what memplan report checks OUT/problems/DIGEST.csv against
        rec["problem_sha256"] = hashlib.sha256(problem_csv.encode()).hexdigest()
    return _jsonable(rec), problem_csv, pdigest


def _failure_fields(spec: RunSpec, status: str, error: str) -> dict[str, Any]:
    out = {"workload": spec.workload.name, "planner": spec.planner, "params": spec.planner_params,
           "status": status, "proved": False, "valid": False, "error": error}
    if getattr(spec, "pools", ""):
        out["pools"] = spec.pools
    return out


def _run_fields(spec: RunSpec, start: str, wall: float, cpu: float | None, rss: int | None,
                rss_scope: str | None) -> dict[str, Any]:
    """The run's identity and provenance columns (the same for finished and failed runs)."""
    return dict(
        scheduler=spec.scheduler,
        scheduler_params=spec.scheduler_params,
        seed=spec.seed,
        rep=spec.rep,
        workload_kind=spec.workload.kind,
        workload_source=spec.workload.portable_source,
        workload_digest=spec.workload.digest,
        problem_digest="",
        time_limit=spec.time_limit,
        start_time=start,
        wall_seconds=wall,
        cpu_seconds=cpu,
        peak_rss_bytes=rss,
        peak_rss_scope=rss_scope,
        git_commit=spec.git_commit,
        code_version=spec.code_version,
        **machine_info(),
    )


def stopped_record(spec: RunSpec, status: str, error: str, start: str, wall: float) -> dict[str, Any]:
    """The record of a run whose worker was stopped from outside (``status="timeout"``: killed at
    ``spec.timeout``; ``"error"``: the worker process died, e.g. a crash in native code). It has
    every identity and provenance column; ``cpu_seconds`` and ``peak_rss_bytes`` are ``None``
    (the process that could have measured them is gone)."""
    rec = {"key": spec.key, **_failure_fields(spec, status, error)}
    rec.update(_run_fields(spec, start, wall, None, None, None))
    return _jsonable(rec)


def _jsonable(rec: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in rec.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out
