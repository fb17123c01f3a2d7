"""Schedules (checked operator orders) and the independent schedule checker.

Kept outside :mod:`scheduling.schedulers` so that :mod:`scheduling.lifetimes` (which every scheduler
may use) can import it without importing the scheduler registry (no import cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ScheduleError
from .graph import Graph

__all__ = ["Schedule", "check_schedule", "is_valid_schedule", "SCHEDULE_STATUSES"]

#: ``optimal``: the order's peak equals a proved lower bound on every order's peak (whatever
#: scheduler found it; :func:`scheduling.schedulers.base.decide_status`); ``feasible``: from an
#: exact method that did not prove optimality; ``heuristic``: from a heuristic (or a fixed rule
#: such as the file order) and not proved optimal; ``timeout``: the time limit ended the search, the order is the best one found;
#: ``skipped``: the exact method declined to build its model (estimated too large for its time
#: limit, reason in ``info``) and returned its fallback order.
SCHEDULE_STATUSES = ("optimal", "feasible", "heuristic", "timeout", "skipped")


def check_schedule(graph: Graph, order: Sequence[str]) -> None:
    """Raise :class:`ScheduleError` unless ``order`` is a valid schedule of ``graph``.

    A valid schedule lists every operator exactly once and places every operator after the
    producer of each tensor it reads (a topological order of :meth:`Graph.op_graph`). Weights and
    graph inputs have no producer. Runs in ``O(#ops + #tensor uses)``.

    Raises
    ------
    ScheduleError
        Naming the unknown, repeated or missing operator, or the operator placed before the
        producer of one of its inputs (and the tensor).
    CycleError
        The graph has a cycle, so no order is valid (the operators on it are named).
    """
    pos: dict[str, int] = {}
    for k, name in enumerate(order):
        if name not in graph.ops:
            raise ScheduleError(f"schedule step {k}: unknown operator {name!r}")
        if name in pos:
            raise ScheduleError(
                f"schedule: operator {name!r} appears twice (steps {pos[name]} and {k})"
            )
        pos[name] = k
    if len(pos) != len(graph.ops):
        missing = next(n for n in graph.ops if n not in pos)
        raise ScheduleError(
            f"schedule: operator {missing!r} is missing ({len(pos)} of {len(graph.ops)} scheduled)"
        )
    for name, k in pos.items():
        for t in graph.ops[name].inputs:
            tensor = graph.tensors.get(t)
            if tensor is None:
                raise ScheduleError(f"operator {name!r}: reads unknown tensor {t!r}")
            p = tensor.producer
            if p is not None and pos[p] >= k:
                graph.check_acyclic()  # no order of a cyclic graph is valid: name the cycle
                raise ScheduleError(
                    f"schedule: operator {name!r} at step {k} reads tensor {t!r} whose producer "
                    f"{p!r} is at step {pos[p]}; a producer must run first"
                )


def is_valid_schedule(graph: Graph, order: Sequence[str]) -> bool:
    """``True`` iff :func:`check_schedule` raises nothing."""
    try:
        check_schedule(graph, order)
    except ScheduleError:
        return False
    return True


@dataclass
class Schedule:
    """A checked operator order.

    Attributes
    ----------
    order : tuple of str
        Operator names; step ``k`` runs ``order[k]``.
    scheduler : str
        Registry name of the scheduler.
    status : str
        One of :data:`SCHEDULE_STATUSES`.
    seconds : float
        Wall-clock seconds of the scheduling algorithm (excludes the check).
    params : dict
        The scheduler's parameters, verbatim.
    info : dict
        Scheduler-specific statistics (objective value, nodes explored, ...).
    bound : int or None
        A proved lower bound (bytes) on the peak of live bytes of every order of the graph
        (:func:`scheduling.schedulers.bounds.order_lower_bound`, or higher when the scheduler
        proved more); the status is ``optimal`` exactly when the order's peak equals it.
        ``None`` for a schedule not built by a scheduler.
    """

    order: tuple[str, ...]
    scheduler: str
    status: str = "heuristic"
    seconds: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    bound: int | None = None

    def __post_init__(self) -> None:
        self.order = tuple(self.order)
        if self.status not in SCHEDULE_STATUSES:
            raise ValueError(
                f"schedule status must be one of {SCHEDULE_STATUSES}, got {self.status!r}"
            )

    def __len__(self) -> int:
        return len(self.order)

    def step_of(self, op_name: str) -> int:
        """The step at which operator ``op_name`` runs (``KeyError`` if unknown). ``O(n)``."""
        try:
            return self.order.index(op_name)
        except ValueError:
            raise KeyError(op_name) from None

    def __repr__(self) -> str:
        return (
            f"Schedule(scheduler={self.scheduler!r}, status={self.status!r}, "
            f"steps={len(self.order)}, seconds={self.seconds:.4g})"
        )
