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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from planners.params import Configurable, validate_params

from ..graph import Graph
from ..schedule import SCHEDULE_STATUSES, Schedule, check_schedule, is_valid_schedule

__all__ = [
    "Schedule",
    "ScheduleResult",
    "Scheduler",
    "FunctionScheduler",
    "check_schedule",
    "is_valid_schedule",
    "SCHEDULE_STATUSES",
]


@dataclass
class ScheduleResult:
    """What :meth:`Scheduler._schedule` may return instead of a plain order."""

    order: Sequence[str]
    status: str = "heuristic"
    info: dict[str, Any] = field(default_factory=dict)


class Scheduler(Configurable):
    """Base class of operator schedulers (see the module docstring).

    Subclasses set the class attribute ``name`` (the registry key) and implement ``_schedule``.
    """

    name: str = "scheduler"
    _kind = "scheduler"

    def schedule(self, graph: Graph) -> Schedule:
        """Schedule ``graph`` and return a checked :class:`Schedule`.

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
        res = self._schedule(graph)
        seconds = time.perf_counter() - t0
        if not isinstance(res, ScheduleResult):
            res = ScheduleResult(res)
        order = tuple(res.order)
        check_schedule(graph, order)
        return Schedule(order, self.name, res.status, seconds, self.get_params(), dict(res.info))

    def _schedule(self, graph: Graph) -> Sequence[str] | ScheduleResult:  # pragma: no cover
        raise NotImplementedError


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
