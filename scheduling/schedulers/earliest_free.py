"""The earliest-free scheduler (seed 002 section 5.4.2, "最早释放调度")."""

from __future__ import annotations

from .list_base import ListScheduler
from .memsim import ReadyTracker

__all__ = ["EarliestFree"]


class EarliestFree(ListScheduler):
    """Earliest-free list scheduling: run first the ready operator that frees the most bytes.

    Seed 002 section 5.4.2: ``priority(op) = sum_{T in inputs(op)} s_T * 1[last_use(T) = op]``,
    the bytes of the operator's activation inputs whose last use is this operator (given what is
    already scheduled; graph outputs are never freed). Ties: fewer bytes written ``alloc(v)``,
    then the stored order. Unlike ``min_live`` the bytes the operator writes do not offset the
    priority.

    Complexity ``O((n + #tensor uses) log n)`` (lazy heap, :mod:`.list_base`).

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "earliest_free"

    def __init__(self) -> None:
        pass

    def _key(self, tracker: ReadyTracker, v: int) -> tuple:
        frees_inputs = tracker.freed_now[v] - tracker.dead[v]
        return (-frees_inputs, tracker.alloc[v], v)
