"""Least-peak-memory-first scheduling (PyTorch Inductor's ``reorder_for_peak_memory``, "lpmf")."""

from __future__ import annotations

import bisect
import heapq

from ..graph import Graph
from .base import Scheduler, ScheduleResult
from .memsim import MemoryModel, ReadyTracker

__all__ = ["LPMF"]

_INF = (float("inf"), -1)


class _MinTree:
    """Segment tree of ``(delta, v)`` pairs over fixed positions, range minimum in ``O(log n)``."""

    def __init__(self, n: int) -> None:
        size = 1
        while size < max(n, 1):
            size *= 2
        self.size = size
        self.t = [_INF] * (2 * size)

    def set(self, pos: int, value) -> None:
        t = self.t
        i = pos + self.size
        t[i] = value
        i //= 2
        while i:
            a, b = t[2 * i], t[2 * i + 1]
            t[i] = a if a <= b else b
            i //= 2

    def query(self, lo: int, hi: int):
        """Minimum over positions ``[lo, hi)``."""
        res = _INF
        lo += self.size
        hi += self.size
        t = self.t
        while lo < hi:
            if lo & 1:
                if t[lo] < res:
                    res = t[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                if t[hi] < res:
                    res = t[hi]
            lo //= 2
            hi //= 2
        return res


class LPMF(Scheduler):
    """Least peak memory first: among the ready operators run the one giving the lowest peak so
    far, ties by the smallest net change of live bytes, then the stored order.

    This is the key of PyTorch Inductor's ``topological_sort_lpmf``::

        (max(live + alloc(v), max_live), alloc(v) - freed(v), index(v))

    with ``live`` the bytes live before the step and ``max_live`` the peak so far. Operators that
    fit under the current peak (``alloc(v) <= max_live - live``) all tie on the first component and
    are ranked by their net change; when none fits, the operator writing the fewest bytes wins.

    Implementation: ready operators sit in a segment tree indexed by their rank in ``alloc``
    order and storing ``(alloc - freed, v)``; "fits under the peak" is a prefix of that order
    (binary search), so each step is two range-minimum queries, ``O(log n)``, and a whole run
    ``O((n + #tensor uses) log n)``. Liveness as :mod:`scheduling.lifetimes` (closed ranges,
    activations and graph outputs).

    Raises
    ------
    CycleError
        The graph has a cycle (named).
    """

    name = "lpmf"
    _parameter_constraints: dict = {}  # no parameters

    def __init__(self) -> None:
        pass

    def _schedule(self, graph: Graph) -> ScheduleResult:
        m = MemoryModel.of(graph)
        alloc = m.alloc.tolist()
        rank_order = sorted(range(m.n), key=lambda v: (alloc[v], v))
        pos = [0] * m.n
        for r, v in enumerate(rank_order):
            pos[v] = r
        sorted_alloc = [alloc[v] for v in rank_order]
        tree = _MinTree(m.n)
        ready = [False] * m.n
        holder: list[ReadyTracker] = []

        by_alloc: list[tuple[int, int]] = []  # (alloc, v) of ready operators, lazy deletion

        def on_ready(v: int) -> None:
            ready[v] = True
            heapq.heappush(by_alloc, (alloc[v], v))
            tr = holder[0]
            tree.set(pos[v], (alloc[v] - tr.freed_now[v], v))

        def on_change(v: int) -> None:
            if ready[v]:
                tr = holder[0]
                tree.set(pos[v], (alloc[v] - tr.freed_now[v], v))

        tr = ReadyTracker.__new__(ReadyTracker)
        holder.append(tr)
        ReadyTracker.__init__(tr, m, on_ready, on_change)
        for _ in range(m.n):
            room = tr.peak - tr.live
            p = bisect.bisect_right(sorted_alloc, room)
            best = tree.query(0, p)
            if best[1] < 0:  # nothing fits under the current peak: the smallest alloc wins,
                while tr.done[by_alloc[0][1]]:  # lazy deletion of scheduled operators
                    heapq.heappop(by_alloc)
                a = by_alloc[0][0]
                # then, among ready operators writing that many bytes, the smallest net change
                lo = bisect.bisect_left(sorted_alloc, a)
                hi = bisect.bisect_right(sorted_alloc, a)
                best = tree.query(lo, hi)
            v = best[1]
            ready[v] = False
            tree.set(pos[v], _INF)
            tr.run(v)
        return ScheduleResult(m.to_names(tr.order), "heuristic", {"peak_bytes": int(tr.peak)})
