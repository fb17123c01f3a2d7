"""The scheduler registry: name -> scheduler class.

Adding a scheduler is one module with a :class:`scheduling.schedulers.base.Scheduler` subclass and
one line in ``SCHEDULERS`` below. :func:`get_scheduler` and :func:`schedule` accept a registry
name, a scheduler instance, a scheduler class, or a plain function ``func(graph, **params) ->
order`` (networkx-style name-or-callable entry points).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planners.errors import ParameterError
from planners.params import check_names

from ..graph import Graph
from .anneal import Anneal
from .base import FunctionScheduler, Schedule, Scheduler
from .best_of import BestOf
from .cpsat_schedule import CPSatSchedule
from .critical_path import CriticalPath
from .earliest_free import EarliestFree
from .exact_dp import ExactDP
from .file_order import FileOrder
from .genetic import Genetic
from .joint import Joint
from .list_xla import ListXLA
from .lpmf import LPMF
from .min_live import MinLive
from .traversal import BFS, DFS

__all__ = ["SCHEDULERS", "get_scheduler", "schedule", "available_schedulers", "check_scheduler_names"]

#: Registry of schedulers by name (the name used on the command line and in records).
SCHEDULERS: dict[str, type[Scheduler]] = {
    "file_order": FileOrder,
    "dfs": DFS,
    "bfs": BFS,
    "min_live": MinLive,
    "earliest_free": EarliestFree,
    "list_xla": ListXLA,
    "lpmf": LPMF,
    "critical_path": CriticalPath,
    "anneal": Anneal,
    "genetic": Genetic,
    "exact_dp": ExactDP,
    "cpsat_schedule": CPSatSchedule,
    "best_of": BestOf,
    "joint": Joint,
}


def available_schedulers() -> list[str]:
    """Registered scheduler names, in registry order."""
    return list(SCHEDULERS)


def check_scheduler_names(names: Iterable[str]) -> list[str]:
    """``names`` as a list when every one is a registered scheduler; the one check of scheduler names
    that callers (command line, sweeps, harness) use before running anything.

    Raises ``ValueError`` naming the unknown names and listing the registered ones, e.g.
    ``unknown scheduler 'x'; registered schedulers: ...``.
    """
    return check_names(names, SCHEDULERS, "scheduler")


def get_scheduler(scheduler: str | Scheduler | type[Scheduler] | Any, **params: Any) -> Scheduler:
    """Return a configured scheduler instance.

    Parameters
    ----------
    scheduler : registry name, Scheduler instance, Scheduler subclass, or callable
        ``func(graph, **params) -> order`` (wrapped in :class:`FunctionScheduler`).
    **params : keyword parameters of the scheduler's constructor.

    Raises
    ------
    ValueError
        Unknown scheduler name (the message lists the registered names); an unknown parameter is
        a :class:`planners.errors.ParameterError` (a ``ValueError``). Values are checked against
        the scheduler's ``_parameter_constraints`` when it schedules.
    """
    if isinstance(scheduler, str):
        try:
            cls = SCHEDULERS[scheduler]
        except KeyError:
            raise ValueError(
                f"unknown scheduler {scheduler!r}; registered schedulers: {', '.join(SCHEDULERS)}"
            ) from None
        try:
            return cls(**params)
        except TypeError as e:
            raise ParameterError(f"scheduler {scheduler!r}: {e}") from None
    if isinstance(scheduler, Scheduler):
        return scheduler.set_params(**params) if params else scheduler
    if isinstance(scheduler, type) and issubclass(scheduler, Scheduler):
        return scheduler(**params)
    if callable(scheduler):
        return FunctionScheduler(scheduler, **params)
    raise ValueError(f"not a scheduler: {scheduler!r}")


def schedule(
    graph: Graph, scheduler: str | Scheduler | Any = "file_order", **params: Any
) -> Schedule:
    """Schedule ``graph`` with ``scheduler`` (name, instance, class or function) and return a
    checked :class:`Schedule`. See :meth:`Scheduler.schedule` for the errors raised."""
    return get_scheduler(scheduler, **params).schedule(graph)
