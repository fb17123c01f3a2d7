"""The experiment harness: run planners on workloads and record one tidy row per run.

Data flow (one direction): workload -> :class:`planners.Problem` -> planner -> :class:`planners.Plan`
-> independent validation -> record (a dict; a list of them is a pandas DataFrame).

A run that raises is recorded with its error (``status="error"``) and does not stop the comparison;
a plan is recorded only after :func:`planners.check_plan` has accepted it a second time, here, outside
the planner.
"""

from __future__ import annotations

import json
import math
import statistics
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from experiments import metrics
from experiments.metrics import REPEAT_BELOW
from planners import (
    InvalidPlanError,
    MemplanError,
    Plan,
    Problem,
    check_plan,
    lower_bound,
    naive_arena,
)
from planners.registry import PLANNERS, check_planner_names, planner_for

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built: `memplan plan` starts fast
    import pandas as pd

from experiments.records import arena_columns  # noqa: F401  (re-exported)
from planners.io import pools_text  # noqa: F401  (re-exported)

__all__ = ["RECORD_COLUMNS", "INT_COLUMNS", "POOL_COLUMNS", "records_frame", "run_one", "compare",
           "planner_for", "pools_text", "arena_columns", "default_planners", "planner_family", "params_for", "check_params_used", "warm_up",
           "TIMING_REPEATS", "REPEAT_BELOW", "DEFAULT_TIME_LIMIT", "pools_fit"]

#: Columns of a comparison record, in order.
RECORD_COLUMNS = [
    "workload",
    "planner",
    "family",
    "params",
    "buffers",
    "capacity",
    "lower_bound",
    "naive",
    "arena",
    "ratio",
    "best_bound",
    "seconds",
    "seconds_min",
    "timing_runs",
    "status",
    "proved",
    "valid",
    "fits",
    "error",
    "reason",
]


#: Columns holding bytes or counts: exact integers in pandas' nullable ``Int64`` (up to 2**63 - 1),
#: so a failed run's empty cell does not turn the column into float64, which rounds above 2**53.
INT_COLUMNS = ("buffers", "capacity", "lower_bound", "naive", "arena", "best_bound")

#: Columns of a record of a problem with memory pools (:attr:`planners.Problem.pools`; ``memplan
#: compare --pools``, a sweep's ``pools`` key), after :data:`RECORD_COLUMNS`: ``pools``, the pools
#: given, in preference order, as canonical ``--pools`` text (:func:`pools_text`, e.g.
#: ``sram=256k:16,psram=8M``); ``arenas``, the plan's bytes per pool as compact JSON
#: (``{"sram":244608,"psram":2408448}``, :attr:`planners.Plan.arenas`); and one ``Int64`` column
#: ``arena_NAME`` per pool (:func:`arena_columns`). ``arena`` stays the sum over the pools
#: (:attr:`planners.Plan.arena_size`), ``capacity`` is empty (each pool has its own) and
#: ``fits`` says whether every pool's arena is within its capacity (status ``over_capacity``
#: otherwise). A comparison without pools has none of these columns.
POOL_COLUMNS = ("pools", "arenas")


def pools_fit(arenas: dict, pools) -> bool:
    """Whether every pool's arena is within its capacity: ``arenas`` bytes per pool name
    (:attr:`planners.Plan.arenas`), ``pools`` the problem's :class:`planners.model.MemoryPool`
    (an unbounded pool, capacity ``None``, always fits). The ``fits`` of a record with pools
    (:func:`run_one`) and of ``memplan plan --pools``.

    >>> from planners.model import MemoryPool
    >>> pools = [MemoryPool("sram", 100), MemoryPool("dram", None)]
    >>> pools_fit({"sram": 100, "dram": 5000}, pools), pools_fit({"sram": 120, "dram": 0}, pools)
    (True, False)
    """
    return all(q.capacity is None or arenas[q.name] <= q.capacity for q in pools)


def records_frame(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Records as a DataFrame with :data:`RECORD_COLUMNS` (and, when a record has pools,
    :data:`POOL_COLUMNS` and its ``arena_NAME`` columns); :data:`INT_COLUMNS` and the
    ``arena_NAME`` columns are ``Int64`` built from the records' Python ints (exact, never
    through float64). ``O(rows)``."""
    import pandas as pd

    per_pool = arena_columns(records)
    cols = RECORD_COLUMNS + (list(POOL_COLUMNS) + per_pool if per_pool else [])
    df = pd.DataFrame.from_records(list(records), columns=cols)
    for c in (*INT_COLUMNS, *per_pool):
        vals = [r.get(c) for r in records]
        df[c] = pd.array([None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                          for v in vals], dtype="Int64")
    return df


def planner_family(name: str) -> str:
    """The ``family`` of registered planner ``name`` (its first word, for configured labels such
    as ``"cpsat mode=decide"``), ``"other"`` when it is not registered; recorded in each record's
    ``family`` column so that figures group planners without importing them."""
    cls = PLANNERS.get(str(name).split(" ")[0])
    return str(getattr(cls, "family", "other")) if cls is not None else "other"


def default_planners() -> list[str]:
    """Registered planners that ``compare`` runs by default: all but configurable engines whose
    default duplicates a named planner (a class that sets ``in_default_comparison = False`` in its
    own body; subclasses do not inherit the exclusion)."""
    return [n for n, c in PLANNERS.items() if c.__dict__.get("in_default_comparison", True)]


def _needs_capacity(planner, problem=None) -> bool:
    """Whether ``planner`` needs a capacity for ``problem`` (:meth:`planners.base.Planner.needs_capacity`;
    any problem when ``problem`` is ``None``)."""
    if problem is None or not hasattr(planner, "needs_capacity"):
        return bool(getattr(planner, "requires_capacity", False))
    return bool(planner.needs_capacity(problem))


#: The one solver time limit (seconds) of every command and sweep config; see
#: :data:`experiments.cli.common.DEFAULT_TIME_LIMIT` (re-exported there) for why 10 s.
DEFAULT_TIME_LIMIT = 10.0

#: Timed repetitions of one run (:func:`run_one`): runs shorter than
#: :data:`experiments.metrics.REPEAT_BELOW` seconds are planned this many times and record the
#: median (``seconds``) and the minimum (``seconds_min``); the record's plan is the first one.
TIMING_REPEATS = 3
#: (planner name, parameters) warmed up in this process (:func:`warm_up`).
_WARMED: set[tuple[str, str]] = set()


def warm_up(planner) -> bool:
    """Plan a two-buffer problem once per process with ``planner`` (its class and parameters), so
    that imports, compiled-core loading and first-call caches are not timed in the first real
    run (a sweep or ``compare`` worker timed 17-29 ms for a 5-buffer problem cold, against
    0.15 ms for 154 buffers warm). A time limit is capped at 1 s for the warm-up; errors are
    ignored (the real run reports them). Returns whether it planned now (``False``: already
    warm)."""
    key = (type(planner).__name__, json.dumps(planner.get_params(), sort_keys=True, default=str))
    if key in _WARMED:
        return False
    _WARMED.add(key)
    tiny = Problem.from_closed([("a", 0, 1, 64), ("b", 1, 2, 32)])
    try:
        p = planner
        if "time_limit" in planner.get_params() and (planner.get_params()["time_limit"] or 0) > 1:
            import copy

            p = copy.deepcopy(planner).set_params(time_limit=1.0)
        p.plan(tiny.with_capacity(lower_bound(tiny)) if _needs_capacity(p) else tiny)
    except Exception:  # noqa: BLE001 - a warm-up never decides a record
        pass
    return True


def run_one(
    workload: str,
    problem: Problem,
    planner_name: str,
    time_limit: float | None = None,
    params: dict[str, Any] | None = None,
    keep_plan: bool = False,
    repeats: int = 1,
    warm: bool = False,
) -> tuple[dict[str, Any], Plan | None]:
    """Run one planner on one problem and return ``(record, plan)``.

    Timing: with ``warm`` the planner first plans a tiny problem once per process
    (:func:`warm_up`); with ``repeats > 1`` a run shorter than :data:`REPEAT_BELOW` seconds is
    planned ``repeats`` times in all, ``seconds`` is the median and ``seconds_min`` the minimum
    of the timed runs (``timing_runs`` of them; 1 when timed once). ``seconds`` is the planner's
    own time (:attr:`planners.Plan.seconds`: ``_solve`` only, not validation).

    Planners that answer a decision question (``requires_capacity = True``, e.g. ``exact_search``)
    get the problem's capacity, or the lower bound when the problem has none (the question "does an
    optimal plan reach the lower bound?"). Other planners minimise the arena; a capacity, when the
    problem has one, is recorded and compared against (column ``fits``) but not imposed.
    Errors are caught and recorded in ``error`` with ``status="error"`` (a planner that refuses a
    feature of the problem, :class:`planners.errors.FeatureError`, too: its one-line reason).

    A problem with memory pools (:attr:`planners.Problem.pools`) is planned as it is, every
    planner under the pools' own capacities; the record gains :data:`POOL_COLUMNS` and
    ``arena_NAME`` per pool, ``fits`` is whether every pool's arena is within its capacity, and
    ``pool_of`` holds each buffer's pool index (problem order; a list, not a table column) for the
    stored plan. The plan is checked with its pools (:func:`planners.check_plan`, capacities
    left to ``fits``: an ``over_capacity`` plan is a valid layout that does not fit).
    """
    params = dict(params or {})
    lb = lower_bound(problem)
    rec: dict[str, Any] = {
        "workload": workload,
        "planner": planner_name,
        "family": planner_family(planner_name),
        "params": "",
        "buffers": problem.n,
        "capacity": problem.capacity,
        "lower_bound": lb,
        "naive": naive_arena(problem),
        "arena": None,
        "ratio": math.nan,
        "best_bound": None,
        "seconds": math.nan,
        "seconds_min": math.nan,
        "timing_runs": 0,
        "status": "error",
        "proved": False,
        "valid": False,
        "fits": None,
        "error": "",
        "reason": "",
    }
    if problem.pools:
        rec["pools"] = pools_text(problem.pools)
        rec["arenas"] = None
        rec.update({"arena_" + q.name: None for q in problem.pools})
    plan = None
    t0 = time.perf_counter()
    try:
        planner = planner_for(planner_name, time_limit, params)
        rec["params"] = json.dumps(planner.get_params(), sort_keys=True, default=str)
        if problem.pools:  # each pool's own capacity; the spill assigns unbounded ones
            target = problem
        elif _needs_capacity(planner, problem):
            target = problem if problem.capacity is not None else problem.with_capacity(lb)
        else:
            target = problem.with_capacity(None)
        rec["capacity"] = target.capacity if target.capacity is not None else problem.capacity
        if warm:
            warm_up(planner)
        plan = planner.plan(target)
        times = [plan.seconds]
        if repeats > 1 and plan.seconds < REPEAT_BELOW and plan.status not in ("timeout",
                                                                                "skipped"):
            times += [planner.plan(target).seconds for _ in range(repeats - 1)]
        rec["seconds"] = float(statistics.median(times))
        rec["seconds_min"] = float(min(times))
        rec["timing_runs"] = len(times)
        rec["status"] = plan.status
        rec["best_bound"] = plan.best_bound
        if plan.status in ("infeasible", "timeout", "skipped"):
            # why there is no plan: a planner that declines (skipped) or stops says why in
            # plan.info["reason"] (planners.model.STATUSES); the record carries it to compare.md
            # in ``reason`` (not ``error``: declining to run is not a failure of the run)
            rec["reason"] = str((plan.info or {}).get("reason") or "")
            if plan.status == "skipped" and not rec["reason"]:
                rec["reason"] = "skipped without a reason in plan.info"
        if plan.status not in ("infeasible", "timeout", "skipped"):
            # independent second check, outside the planner (with pools: each buffer's pool)
            check_plan(problem, plan.offsets, pools=plan.pools if problem.pools else None,
                       pool_capacities=False)
            rec["valid"] = True
            rec["arena"] = plan.arena_size
            rec["ratio"] = metrics.ratio(plan.arena_size, lb)
            rec["fits"] = metrics.fits(plan.arena_size, rec["capacity"])
            if problem.pools:
                arenas = plan.arenas
                rec["arenas"] = json.dumps(arenas, separators=(",", ":"))
                rec.update({"arena_" + k: int(v) for k, v in arenas.items()})
                rec["fits"] = pools_fit(arenas, problem.pools)
                rec["pool_of"] = plan.pools.tolist()
            # the one rule (planners.model.is_proved_optimal), already applied to the status;
            # with pools an arena at the bound alone proves nothing (the objective is the
            # traffic cost first): proved only when the method proved it (planners/base.py)
            rec["proved"] = plan.status == "optimal"
    except InvalidPlanError as e:  # a planner bug: record it loudly
        rec["error"] = f"invalid plan: {e}"
        rec["status"] = "error"
    except MemplanError as e:
        rec["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - one failing run must not stop a comparison
        rec["error"] = f"{type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc(limit=3)
    if math.isnan(rec["seconds"]):
        rec["seconds"] = time.perf_counter() - t0
    return rec, (plan if keep_plan else None)


def _run_task(w: str, problem: Problem, name: str, time_limit: float | None,
              params: dict[str, Any] | None = None, repeats: int = TIMING_REPEATS):
    """Worker side of :func:`compare`: the record and the plan's offsets (a list, or None);
    the worker is warmed up per planner and short runs are timed ``repeats`` times."""
    rec, plan = run_one(w, problem, name, time_limit=time_limit, keep_plan=True,
                        params=params_for(name, params), repeats=repeats, warm=True)
    rec.pop("traceback", None)
    offsets = plan.offsets.tolist() if plan is not None and rec["valid"] else None
    return rec, offsets


def params_for(name: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The entries of ``params`` that planner ``name`` takes (its constructor's names); a
    parameter given to a comparison applies to every planner that has it."""
    if not params:
        return {}
    cls = PLANNERS.get(name)
    known = cls._param_names() if cls is not None else ()
    return {k: v for k, v in params.items() if k in known}


def check_params_used(names: Sequence[str], params: dict[str, Any] | None) -> None:
    """Raise :class:`planners.errors.ParameterError` naming a parameter of ``params`` that none
    of the planners ``names`` takes (a typo would otherwise change nothing, silently)."""
    from planners.errors import ParameterError
    from planners.params import did_you_mean

    known = {k for n in names if n in PLANNERS for k in PLANNERS[n]._param_names()}
    for k in params or {}:
        if k not in known:
            raise ParameterError(f"no planner of {', '.join(names)} has a parameter {k!r}"
                                 f"{did_you_mean(k, known)}; `memplan list` gives each "
                                 "planner's parameters")


def compare(
    workloads: Iterable[tuple[str, Problem]] | dict[str, Problem],
    planners: Sequence[str] | None = None,
    time_limit: float | None = 10.0,
    progress: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    jobs: int = 1,
    on_plan: Callable[[dict[str, Any], list[int] | None], None] | None = None,
    params: dict[str, Any] | None = None,
    repeats: int = TIMING_REPEATS,
    pools=None,
) -> pd.DataFrame:
    """Run every planner on every workload; return the records as a DataFrame (``RECORD_COLUMNS``).

    Parameters
    ----------
    workloads : mapping or iterable of ``(name, Problem)``
    planners : registry names (default: every registered planner)
    time_limit : seconds given to planners that take a ``time_limit`` parameter (exact solvers)
    progress : show a tqdm progress bar
    on_record : called with each record as soon as it exists (e.g. to append it to a file)
    jobs : int
        Worker processes (``1``: run in this process). With ``jobs > 1`` the (workload, planner)
        runs go to a process pool (``spawn``); each run still gets its whole time limit, and the
        returned rows are in (workload, planner) order whatever order the runs finish in.
    on_plan : called with each record and its plan's offsets (bytes, problem order; ``None``
        without a valid plan) as soon as the run finishes, e.g. to store them (:func:`experiments.records.write_plans`).
    params : planner parameters (``--param``), each given to every planner that has it
        (:func:`params_for`; a ``time_limit`` here wins over ``time_limit``); one that no planner
        has raises :class:`planners.errors.ParameterError` before anything runs.
    repeats : timed runs of each short run (:func:`run_one`; median in ``seconds``, minimum in
        ``seconds_min``); every worker is warmed up per planner first (:func:`warm_up`).
    pools : sequence of :class:`planners.model.MemoryPool`, optional
        Memory pools in preference order (``--pools``) given to every workload's problem
        (:meth:`planners.Problem.with_pools`) before anything runs; records gain
        :data:`POOL_COLUMNS` and ``arena_NAME`` per pool, and ``on_plan`` finds each buffer's pool
        index in the record's ``pool_of`` (:func:`run_one`). A problem that cannot take pools
        raises :class:`planners.errors.ProblemError` naming it.
    """
    items = list(workloads.items()) if isinstance(workloads, dict) else list(workloads)
    if pools:
        items = [(w, p.with_pools(pools)) for w, p in items]
    names = list(planners) if planners is not None else default_planners()
    check_planner_names(names)
    check_params_used(names, params)
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    runs = [(w, p, n) for w, p in items for n in names]
    done: dict[int, dict[str, Any]] = {}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(runs), unit="run", desc="compare")

    def finish(i, rec, offsets):
        done[i] = rec
        if on_record is not None:
            on_record(rec)
        if on_plan is not None:
            on_plan(rec, offsets)
        if bar is not None:
            bar.set_postfix_str(f"{rec['workload']} / {rec['planner']}")
            bar.update(1)

    if jobs == 1 or len(runs) <= 1:
        for i, (w, p, n) in enumerate(runs):
            finish(i, *_run_task(w, p, n, time_limit, params, repeats))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # time-limited planners first, so the long runs overlap with the short ones
        order = sorted(range(len(runs)), key=lambda i: (
            "time_limit" not in PLANNERS[runs[i][2]]._param_names(), i))
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(_run_task, *runs[i], time_limit, params, repeats): i for i in order}
            for f in as_completed(futs):
                finish(futs[f], *f.result())
    if bar is not None:
        bar.close()
    return records_frame([done[i] for i in range(len(runs))])
