"""The min-live scheduler (seed 002 section 5.4.2, "最小活跃集调度")."""

from __future__ import annotations

from .list_base import ListScheduler
from .memsim import ReadyTracker

__all__ = ["MinLive"]


class MinLive(ListScheduler):
    """Min-live list scheduling: at each step run the ready operator that leaves the fewest live
    bytes (seed 002 section 5.4.2, ``next_op = argmin_{op in ready} |live_after(op)|``).

    ``live_after(v) = L + alloc(v) - freed(v)`` with ``L`` the live bytes before the step, the same
    for every candidate, so the key is the net change ``alloc(v) - freed(v)`` (bytes; activation
    outputs written minus activation inputs whose last consumer is ``v`` and unread outputs); ties
    go to the smaller step peak ``alloc(v)``, then to the stored order. Liveness follows the closed
    ``[first, last]`` convention of :mod:`scheduling.lifetimes`.

    A greedy rule: it can be far from optimal (a ready operator that frees much but whose branch
    first has to grow is postponed); see ``exact_dp`` for the optimum.

    Complexity ``O((n + #tensor uses) log n)`` (lazy heap, :mod:`.list_base`).

    Raises
    ------
    CycleError
        The graph has a cycle (named).

    Examples
    --------
    >>> from scheduling.examples import seed000_graph
    >>> MinLive().schedule(seed000_graph()).info["peak_bytes"]
    20480
    """

    name = "min_live"

    def __init__(self) -> None:
        pass

    def _key(self, tracker: ReadyTracker, v: int) -> tuple:
        a = tracker.alloc[v]
        return (a - tracker.freed_now[v], a, v)
