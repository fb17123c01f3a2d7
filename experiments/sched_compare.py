"""Compare operator schedulers (and the planners run on each schedule) on a set of graphs.

Data flow: graph -> scheduler -> checked order -> :func:`scheduling.lifetimes.lifetime_problem`
(activations, half-open ``[first, last + 1)`` lifetimes in schedule steps) -> planner -> validated
plan -> one tidy record per (workload, scheduler, planner). A scheduler or planner that raises is
recorded with ``status="error"`` and its message; it never stops the comparison.

>>> from scheduling.examples import seed000_graph
>>> df = compare_schedules({"seed000": seed000_graph()}, ["file_order", "min_live"],
...                        ["greedy_by_size"])
>>> df[["scheduler", "peak_bytes", "arena_bytes"]].values.tolist()
[['file_order', 20480, 20480], ['min_live', 20480, 20480]]
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from planners import MemplanError
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem, peak_live_bytes
from scheduling.schedulers import SCHEDULERS, get_scheduler

__all__ = ["SCHED_COLUMNS", "compare_schedules", "scheduler_for", "TIME_LIMITED"]

#: Columns of a scheduler comparison record, in order.
SCHED_COLUMNS = [
    "workload",
    "ops",
    "scheduler",
    "params",
    "status",
    "peak_bytes",
    "sched_seconds",
    "planner",
    "arena_bytes",
    "plan_status",
    "plan_seconds",
    "error",
]

#: Schedulers whose ``time_limit`` parameter receives the comparison's time limit.
TIME_LIMITED = ("exact_dp", "cpsat_schedule", "anneal", "genetic", "joint")


def scheduler_for(name: str, time_limit: float | None = None, **params: Any):
    """Instantiate scheduler ``name`` (registry name); ``time_limit`` (seconds) goes to the
    schedulers that take one. ``ValueError`` for an unknown name or parameter."""
    cls = SCHEDULERS.get(name)
    if cls is not None and time_limit is not None and "time_limit" in cls._param_names():
        params.setdefault("time_limit", time_limit)
    return get_scheduler(name, **params)


def compare_schedules(
    graphs: Mapping[str, Graph],
    schedulers: Iterable[str | Any] = ("file_order", "min_live", "best_of"),
    planners: Iterable[str] = ("greedy_by_size",),
    time_limit: float | None = 10.0,
    scheduler_params: Mapping[str, dict[str, Any]] | None = None,
    on_schedule: Any = None,
) -> pd.DataFrame:
    """Schedule every graph with every scheduler, then plan each schedule with every planner.

    Parameters
    ----------
    graphs : mapping name -> Graph
        The workloads (e.g. ``{name: load_light_model(name)}`` or generator output).
    schedulers : iterable of registry names (or Scheduler instances)
    planners : iterable of planner registry names
        Run by :func:`experiments.harness.planner_for` on the activation problem of each order;
        an empty iterable records the schedules only (``planner`` is ``""``).
    time_limit : float or None
        Seconds, passed to the schedulers of :data:`TIME_LIMITED` and to planners taking one.
    scheduler_params : mapping name -> dict, optional
        Extra constructor parameters per scheduler name.
    on_schedule : callable, optional
        Called as ``on_schedule(record, order, problem)`` for every schedule found (``record``
        has ``workload``, ``scheduler``, ``status``, ``peak_bytes``), e.g. to store the order and
        its activation problem (:func:`write_schedules`) so figures never reschedule.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SCHED_COLUMNS`, one row per (workload, scheduler, planner):
        ``peak_bytes`` is the peak of live activation bytes of the order (bytes; the lower bound
        on any arena for that order, :func:`scheduling.lifetimes.peak_live_bytes`),
        ``arena_bytes`` the planned arena (bytes), ``status`` the scheduler's status
        (``optimal``/``feasible``/``heuristic``/``timeout``/``skipped``/``error``), ``plan_status``
        the planner's, ``sched_seconds``/``plan_seconds`` wall-clock seconds, ``params`` the
        scheduler's parameters as JSON.

    Notes
    -----
    Cost: the schedulers' and planners' costs plus ``O(n + #tensor uses)`` per record.
    The ``joint`` scheduler (:mod:`scheduling.joint`) adds one row with ``planner="joint"``: the
    offsets it found together with its order (``plan_seconds`` 0: its time is in
    ``sched_seconds``), next to the rows of the given planners re-planning that order.
    """
    from experiments.harness import planner_for

    planners = list(planners)
    extra = dict(scheduler_params or {})
    rows: list[dict[str, Any]] = []
    for wname, graph in graphs.items():
        for sched in schedulers:
            sname = sched if isinstance(sched, str) else getattr(sched, "name", str(sched))
            base = {
                "workload": wname,
                "ops": len(graph),
                "scheduler": sname,
                "params": "",
                "status": "error",
                "peak_bytes": None,
                "sched_seconds": math.nan,
                "error": "",
            }
            t0 = time.perf_counter()
            try:
                s = (
                    scheduler_for(sched, time_limit, **extra.get(sched, {}))
                    if isinstance(sched, str)
                    else get_scheduler(sched)
                )
                base["params"] = json.dumps(s.get_params(), sort_keys=True, default=str)
                res = s.schedule(graph)
                base["status"] = res.status
                base["sched_seconds"] = res.seconds
                base["peak_bytes"] = peak_live_bytes(graph, res.order)
                problem = lifetime_problem(graph, res.order, name=f"{wname} ({sname})")
                if on_schedule is not None:
                    on_schedule(dict(base), list(res.order), problem)
            except (MemplanError, ValueError) as e:
                base["error"] = str(e)
                base["sched_seconds"] = time.perf_counter() - t0
                rows.append(
                    {
                        **base,
                        "planner": "",
                        "arena_bytes": None,
                        "plan_status": "",
                        "plan_seconds": math.nan,
                    }
                )
                continue
            if not planners:
                rows.append(
                    {
                        **base,
                        "planner": "",
                        "arena_bytes": None,
                        "plan_status": "",
                        "plan_seconds": math.nan,
                    }
                )
            for pname in planners:
                row = {
                    **base,
                    "planner": pname,
                    "arena_bytes": None,
                    "plan_status": "error",
                    "plan_seconds": math.nan,
                }
                try:
                    plan = planner_for(pname, time_limit).plan(problem)
                    row["plan_status"] = plan.status
                    row["plan_seconds"] = plan.seconds
                    if plan.status not in ("infeasible", "timeout", "skipped"):
                        row["arena_bytes"] = plan.arena_size
                except (MemplanError, ValueError) as e:
                    row["error"] = str(e)
                rows.append(row)
            if "joint_status" in res.info:  # the joint optimiser's own (checked) offsets
                rows.append({**base, "planner": "joint", "arena_bytes": res.info["arena_bytes"],
                             "plan_status": res.info["joint_status"], "plan_seconds": 0.0})
    return pd.DataFrame(rows, columns=SCHED_COLUMNS)
