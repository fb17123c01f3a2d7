"""XLA's list scheduler (``xla/service/hlo_memory_scheduler.cc``, ``ListScheduler``)."""

from __future__ import annotations

from .list_base import ListScheduler
from .memsim import MemoryModel, ReadyTracker

__all__ = ["ListXLA"]


class ListXLA(ListScheduler):
    """XLA's greedy list scheduler: the ready operator with the highest priority
    ``(bytes_freed - bytes_defined, number of users)`` runs first.

    ``bytes_freed`` is the bytes of the operator's inputs whose last use it is (plus its unread
    outputs), ``bytes_defined`` the bytes it writes, ``users`` the number of distinct operators
    reading its outputs (XLA's ``user_count``); remaining ties go to the stored order. The first
    component is ``-(alloc - freed)``, i.e. the same memory rule as ``min_live``; the tie-break on
    users differs (XLA prefers operators with more users; ``min_live`` prefers smaller outputs).

    It is greedy and can miss the optimum: an operator that frees a large buffer only after a
    branch that first allocates is postponed (the test suite builds such a case). XLA therefore
    also runs DFS and post-order schedulers and keeps the best (``best_of`` here).

    Complexity ``O((n + #tensor uses) log n)``.

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "list_xla"

    def __init__(self) -> None:
        pass

    def _prepare(self, model: MemoryModel) -> None:
        self._users = [len(s) for s in model.succs]

    def _key(self, tracker: ReadyTracker, v: int) -> tuple:
        return (tracker.alloc[v] - tracker.freed_now[v], -self._users[v], v)
