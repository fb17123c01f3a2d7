"""The one interface every operator scheduler implements, and the independent schedule checker.

A scheduler chooses the order in which a graph's operators run (the schedule); the order decides
every tensor's lifetime and therefore the peak of live bytes that the offset planners must fit
(see :mod:`scheduling.lifetimes`). Like :class:`planners.base.Planner`:

* parameters are the keyword arguments of ``__init__``, stored unchanged (scikit-learn style),
  read back by :meth:`Scheduler.get_params`, with their rules declared once in
  ``_parameter_constraints`` (:mod:`planners.params`) and checked by :meth:`Scheduler.schedule`;
* the algorithm is :meth:`Scheduler._schedule` (the only method a new scheduler writes), returning
  an order, or a :class:`ScheduleResult` with a status and statistics;
* :meth:`Scheduler.schedule` times it, passes the order through :func:`check_schedule` (which shares
  no code with any scheduler) and returns a :class:`Schedule`.

A new scheduler is one module with a subclass and one line in
:mod:`scheduling.schedulers.registry`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from planners.params import Configurable, validate_params

from ..graph import Graph
from ..schedule import SCHEDULE_STATUSES, Schedule, check_schedule, is_valid_schedule
from .memsim import MemoryModel, shared_model

__all__ = [
    "Schedule",
    "ScheduleResult",
    "Scheduler",
    "FunctionScheduler",
    "check_schedule",
    "is_valid_schedule",
    "SCHEDULE_STATUSES",
    "cached_order_bound",
    "decide_status",
]


@dataclass
class ScheduleResult:
    """What :meth:`Scheduler._schedule` may return instead of a plain order.

    ``bound`` (bytes, optional) is a lower bound on the peak of **every** topological order that
    the scheduler has proved (e.g. a DP optimum, a CP-SAT best bound), at least
    :func:`.bounds.order_lower_bound`; ``None`` lets :meth:`Scheduler.schedule` use that one.
    """

    order: Sequence[str]
    status: str = "heuristic"
    info: dict[str, Any] = field(default_factory=dict)
    bound: int | None = None


#: graph -> (fingerprint, order lower bound): the bound is computed once per graph state.
_BOUND_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fingerprint(graph: Graph) -> int:
    return hash((
        tuple((o.name, o.inputs, o.outputs) for o in graph.ops.values()),
        tuple((t.name, t.nbytes, t.kind, t.producer) for t in graph.tensors.values()),
    ))


def cached_order_bound(graph: Graph, model: MemoryModel | None = None,
                       deadline: float | None = None) -> int:
    """:func:`.bounds.order_lower_bound` of ``graph`` (bytes), remembered per graph object and
    recomputed when its operators or tensors changed (a fingerprint of names, edges, sizes and
    kinds, ``O(#ops + #tensor uses)``). ``model``: ``graph``'s :class:`MemoryModel` when
    already compiled. ``deadline`` (a :func:`time.perf_counter` value): the sampled closure
    bound above :data:`.bounds.CUT_MAX_OPS` operators stops there (a time-limited scheduler's
    set-up); such a partial bound is valid but not remembered."""
    from .bounds import CLOSURE_SAMPLE, CUT_MAX_OPS, order_bound_details

    fp = _fingerprint(graph)
    hit = _BOUND_CACHE.get(graph)
    if hit is not None and hit[0] == fp:
        return hit[1]
    m = MemoryModel.of(graph) if model is None else model
    d = order_bound_details(m, deadline=deadline)
    b = int(d["bound"])
    if m.n <= CUT_MAX_OPS or d["sampled_ops"] >= min(CLOSURE_SAMPLE, m.n):
        _BOUND_CACHE[graph] = (fp, b)
    return b


def decide_status(claimed: str, peak: int, bound: int) -> str:
    """The one status rule of every scheduler: ``"optimal"`` exactly when the order's peak is at
    most a proved lower bound on every order's peak (``peak <= bound``, bytes); a scheduler that
    claimed ``"optimal"`` without such a bound gets ``"feasible"``; otherwise its own status
    (``heuristic``, ``feasible``, ``timeout``, ``skipped``) is kept."""
    if peak <= bound:
        return "optimal"
    return "feasible" if claimed == "optimal" else claimed


class Scheduler(Configurable):
    """Base class of operator schedulers (see the module docstring).

    Subclasses set the class attribute ``name`` (the registry key) and implement ``_schedule``.
    """

    name: str = "scheduler"
    _kind = "scheduler"

    def schedule(self, graph: Graph) -> Schedule:
        """Schedule ``graph`` and return a checked :class:`Schedule`.

        The graph is compiled once (:class:`.memsim.shared_model`: the schedulers called inside,
        e.g. by ``best_of``, reuse it) and its order bound computed before the algorithm runs;
        both count in ``seconds`` and against a ``time_limit`` parameter (the sampled part of
        the bound above :data:`.bounds.CUT_MAX_OPS` operators gets a third of it at most).
        The schedule's ``bound`` is the larger of :func:`.bounds.order_lower_bound` and the bound
        the scheduler proved (:class:`ScheduleResult`), and its status follows the one rule of
        :func:`decide_status` (``optimal`` only when the bound proves it). ``info["peak_bytes"]``
        is set to the order's peak (bytes) when the scheduler did not set it.

        Raises
        ------
        ParameterError
            A parameter value the class's ``_parameter_constraints`` do not allow
            (:func:`planners.params.validate_params`, checked once before any work).
        ScheduleError
            The algorithm returned an order that is not a valid schedule (a bug, never silenced),
            or the graph has no valid schedule (a cycle).
        """
        validate_params(self)
        t0 = time.perf_counter()
        self._call_started = t0  # the time limits of the schedulers count from here
        with shared_model(graph) as (m, notes):
            if "order_bound" not in notes:  # before the search: it counts against its limit
                limit = getattr(self, "time_limit", None)
                notes["order_bound"] = cached_order_bound(
                    graph, m, deadline=None if limit is None else t0 + float(limit) / 3)
            res = self._schedule(graph)
            seconds = time.perf_counter() - t0
            if not isinstance(res, ScheduleResult):
                res = ScheduleResult(res)
            order = tuple(res.order)
            check_schedule(graph, order)
            peak = m.peak(m.to_indices(order))
            bound = notes["order_bound"]
        if res.bound is not None:
            bound = max(bound, min(int(res.bound), peak))
        info = dict(res.info)
        info.setdefault("peak_bytes", peak)
        status = decide_status(res.status, peak, bound)
        return Schedule(order, self.name, status, seconds, self.get_params(), info, bound)

    def _schedule(self, graph: Graph) -> Sequence[str] | ScheduleResult:  # pragma: no cover
        raise NotImplementedError

    def _started(self) -> float:
        """The :func:`time.perf_counter` value at which the :meth:`schedule` call under way
        started (compiling the graph counts against a scheduler's time limit), or now when
        :meth:`_schedule` is called directly."""
        t = getattr(self, "_call_started", None)
        return time.perf_counter() if t is None else t


class FunctionScheduler(Scheduler):
    """Wrap a function ``func(graph, **params) -> order`` (or :class:`ScheduleResult`) as a
    scheduler, so a notebook can plug one in without touching the registry. The parameters are
    the function's, so the wrapper declares no rules (``_parameter_constraints = None``)."""

    _parameter_constraints = None

    def __init__(self, func, name: str | None = None, **params: Any) -> None:
        self.func = func
        self.name = name or getattr(func, "__name__", "function")
        self.params = params

    def get_params(self) -> dict[str, Any]:
        """The keyword parameters passed to the wrapped function."""
        return dict(self.params)

    def _schedule(self, graph: Graph) -> Sequence[str] | ScheduleResult:
        return self.func(graph, **self.params)
