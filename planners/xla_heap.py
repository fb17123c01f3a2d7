"""``xla_heap``: XLA's ``GlobalDecreasingSizeBestFitHeap``, its orders and best-fit rule exactly.

A reproduction of openxla/xla ``xla/service/heap_simulator/heap_simulator.cc``
(``GlobalDecreasingSizeBestFitHeap::Finish``, ``GetSortedBufferIntervals``,
``GetSpatialBufferIntervalCompare``, ``GetTemporalBufferIntervalCompare``, ``MakeFreeChunksList``,
``FindUnslicedChunkCandidates``) for buffers without colocations, slices or preferred offsets:

* **Time.** XLA's heap counts its own calls: every ``Alloc`` and ``Free`` of a non-zero-size buffer
  is one tick, and a buffer lives over the closed interval ``[alloc tick, free tick]``. A
  :class:`planners.model.Problem` lifetime ``[start, end)`` is that interval with ``end = free + 1``
  (:func:`heap_calls_problem` turns a call sequence into a problem); the orders below depend only
  on differences of times, so any problem's steps can stand for ticks.
* **Orders.** ``order="spatial"`` (XLA's default ``kSpatial``): size descending, then live range
  descending (``start - end`` ascending), then buffer id ascending (here the problem index).
  ``order="temporal"`` (``kTemporal``): live range descending, then size descending, then id.
* **Best fit.** For each buffer in order, the chunks of the placed buffers live at the same time
  are sorted by offset and merged; a free chunk starts at the heap-aligned end of the used range
  below it and is kept when it holds the buffer; the buffer goes to the aligned start of the
  smallest such chunk (ties: the lowest), and above everything when none holds it (the last free
  chunk is unbounded). Zero-size buffers get offset 0 and no chunk.

XLA's heap has a single ``alignment`` for all buffers: a problem whose buffers have different
alignments is refused in one line, as is a problem with alias groups (XLA's ``ShareWith``
colocations keep each member's own lifetime; the interval model's alias groups reserve the hull,
so the plans would differ). When every size is a multiple of the alignment the placement runs in
the compiled greedy core (:mod:`planners.greedy`, ``fit="best"``: the same gaps, measured the same
way, ``O(n log n + E)``); otherwise in this module's scan of the placed neighbours, which measures a
free chunk from the aligned end as XLA does (``O(n log n + E log k)``).

Pinned by the vectors of XLA's ``heap_simulator_test.cc`` (``GlobalDecreasingSizeBestFitHeapTest``:
``DecreasingSize`` 100 bytes, ``DecreasingSizeWithAlignment`` 120, ``BestFit`` 140, every offset)
in ``tests/test_peer_planners.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .base import Planner, SolveResult
from .errors import ProblemError
from .greedy import greedy_offsets
from .interference import interference_csr
from .model import Plan, Problem
from .params import StrOptions

__all__ = ["XlaHeap", "xla_order", "xla_best_fit_offsets", "heap_calls_problem"]

ORDERS = ("spatial", "temporal")


def xla_order(problem: Problem, order: str = "spatial") -> np.ndarray:
    """The order in which ``GlobalDecreasingSizeBestFitHeap`` places ``problem``'s buffers.

    ``spatial``: size descending, live range descending, index ascending; ``temporal``: live range
    descending, size descending, index ascending. Returns a permutation (int64, first placed first).
    Raises ``ValueError`` for another ``order``.

    >>> p = Problem.from_closed([("a", 0, 4, 10), ("b", 1, 5, 30), ("c", 2, 6, 20), ("d", 3, 7, 40)])
    >>> xla_order(p).tolist()
    [3, 1, 2, 0]
    """
    if order not in ORDERS:
        raise ValueError(f"unknown XLA order {order!r}; choose from {ORDERS}")
    idx = np.arange(problem.n)
    neg_len = problem.starts - problem.ends
    if order == "spatial":
        return np.lexsort((idx, neg_len, -problem.sizes)).astype(np.int64)
    return np.lexsort((idx, -problem.sizes, neg_len)).astype(np.int64)


def _free_chunk_pick(used: list[tuple[int, int]], size: int, a: int) -> int:
    """Offset XLA picks for ``size`` bytes given the ``(offset, end)`` chunks in use (sorted by
    offset) and heap alignment ``a`` (``MakeFreeChunksList`` + ``FindUnslicedChunkCandidates``)."""
    if not used:
        return 0
    free: list[tuple[int, int | None]] = []
    start = 0
    cur_off, cur_end = used[0]
    for off, end in used[1:]:
        if off < cur_end:
            cur_end = max(cur_end, end)
            continue
        if cur_off - start >= size:
            free.append((start, cur_off))
        start = max(start, -(-cur_end // a) * a)
        cur_off, cur_end = off, end
    if cur_off - start >= size:
        free.append((start, cur_off))
    start = max(start, -(-cur_end // a) * a)
    free.append((start, None))  # XLA: up to INT64_MAX
    best, best_size = -1, None
    for fs, fe in free:
        x = -(-fs // a) * a
        if fe is None:
            if best < 0:
                best = x
            continue
        if fe - size < x:
            continue
        if best < 0 or fe - fs < best_size:
            best, best_size = x, fe - fs
    return best


def xla_best_fit_offsets(problem: Problem, order: str = "spatial") -> np.ndarray:
    """Offsets (bytes) of ``GlobalDecreasingSizeBestFitHeap::Finish`` on ``problem`` (one heap
    alignment: the buffers' common alignment). See the module docstring for the rules.

    Raises :class:`planners.errors.ProblemError` when the buffers' alignments differ.
    """
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    al = problem.alignments
    a = int(al[0])
    if not np.all(al == a):
        raise ProblemError(
            f"xla_heap: problem {problem.name!r} has buffers of different alignments "
            f"({', '.join(map(str, np.unique(al)[:4].tolist()))}...); XLA's heap has one alignment"
        )
    perm = xla_order(problem, order)
    if np.all(problem.sizes % a == 0):
        return greedy_offsets(problem, perm, "best")
    indptr, nbrs = interference_csr(problem, ignore_zero_size=True)
    sizes = problem.sizes.tolist()
    ptr = indptr.tolist()
    placed = [False] * n
    off = [0] * n
    for i in perm.tolist():
        s = sizes[i]
        if s == 0:
            continue
        used = sorted((off[j], off[j] + sizes[j]) for j in nbrs[ptr[i] : ptr[i + 1]].tolist()
                      if placed[j])
        off[i] = _free_chunk_pick(used, s, a)
        placed[i] = True
    return np.asarray(off, np.int64)


def heap_calls_problem(calls: Iterable[tuple], name: str = "") -> Problem:
    """The problem an XLA heap algorithm sees from a sequence of ``Alloc`` / ``Free`` calls.

    ``calls``: ``("alloc", buffer, size)`` and ``("free", buffer)`` tuples in call order (sizes in
    bytes). Each call on a non-zero-size buffer is one tick of XLA's ``current_time_``; a buffer
    lives over ``[alloc tick, free tick]`` (closed), here ``[alloc, free + 1)``. Zero-size buffers
    take no tick (XLA maps them to offset 0 at once) and get the one-step lifetime at the current
    tick. Buffers are numbered in order of their ``Alloc`` (XLA's ``HloValue`` ids in its tests).

    Raises :class:`planners.errors.ProblemError` for a second ``Alloc`` of a buffer, a ``Free`` of a
    buffer never allocated or freed twice, or a buffer never freed.

    >>> heap_calls_problem([("alloc", "a", 10), ("alloc", "b", 20), ("free", "a"),
    ...                     ("free", "b")]).ends.tolist()
    [3, 4]
    """
    t = 0
    names: list[str] = []
    size: dict[str, int] = {}
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for call in calls:
        kind, buf = call[0], str(call[1])
        if kind == "alloc":
            if buf in size:
                raise ProblemError(f"heap calls: buffer {buf!r} is allocated twice")
            names.append(buf)
            size[buf] = int(call[2])
            start[buf] = t
            if size[buf]:
                t += 1
        elif kind == "free":
            if buf not in size or buf in end:
                raise ProblemError(f"heap calls: free of buffer {buf!r} that is not allocated")
            end[buf] = t + 1 if size[buf] else start[buf] + 1
            if size[buf]:
                t += 1
        else:
            raise ProblemError(f"heap calls: unknown call {kind!r} (use 'alloc' or 'free')")
    missing = [b for b in names if b not in end]
    if missing:
        raise ProblemError(f"heap calls: buffer {missing[0]!r} is never freed")
    return Problem.from_arrays([start[b] for b in names], [end[b] for b in names],
                               [size[b] for b in names], ids=names, name=name)


class XlaHeap(Planner):
    """XLA's ``GlobalDecreasingSizeBestFitHeap`` (heap_simulator.cc): decreasing size (or live
    range), best fit among the free chunks. See :mod:`planners.xla_heap` for the exact rules.

    Parameters
    ----------
    order : {"spatial", "temporal"}, default "spatial"
        XLA's ``kSpatial`` (its default) or ``kTemporal`` sort.

    Refuses (:class:`planners.errors.ProblemError`, one line) problems with alias groups and
    problems whose buffers have different alignments.
    """

    name = "xla_heap"
    family = "greedy"
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints = {"order": [StrOptions(ORDERS)]}

    def __init__(self, order: str = "spatial") -> None:
        self.order = order

    def plan(self, problem: Problem) -> Plan:
        """:meth:`planners.base.Planner.plan`, after refusing alias groups (XLA's colocations keep
        each member's lifetime, which alias groups do not state)."""
        if isinstance(problem, Problem) and problem.aliases:
            raise ProblemError(
                f"xla_heap: problem {problem.name!r} has alias groups; XLA's colocations "
                "(ShareWith) keep each member's own lifetime, which alias groups do not state"
            )
        return super().plan(problem)

    def _solve(self, problem: Problem) -> SolveResult:
        return SolveResult(xla_best_fit_offsets(problem, self.order), "heuristic",
                           info={"order": self.order})
