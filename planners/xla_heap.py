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
* **Preferred offsets** (a buffer's hint, capability ``hints: native``): XLA's rule for a
  ``preferred_offset`` (``FindUnslicedChunkCandidates``, as memory-space assignment passes it;
  ``Finish`` itself passes none): taken when it is aligned and the free chunk with the largest
  start at or below it holds ``[preferred, preferred + size)``; else best fit as above.

XLA's heap has a single ``alignment`` for all buffers (a problem's common alignment here); when
a problem's buffers have different alignments, each buffer's own alignment plays the heap's while
it is placed (an extension; XLA has no such case). Colocation groups (XLA's ``ShareWith``) are planned as every
planner plans them (:meth:`planners.base.Planner.plan`, capability ``merged``): one buffer per
group over the members' lifetimes, its gaps not reused. XLA instead frees the group's chunk
between its members' lifetimes, so the two agree on XLA's ``ColocatedII``, ``ColocatedIII`` and
``ColocatedDifferentSize1/2`` tests but not on ``Colocated`` (60 bytes here, 40 in XLA, whose
middle buffer reuses the chunk between the two colocated ones). Alias groups likewise. When every
size is a multiple of the alignment the placement runs in
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
from .model import Buffer, Problem
from .params import StrOptions

__all__ = ["XlaHeap", "xla_order", "xla_best_fit_offsets", "heap_calls_problem"]

ORDERS = ("spatial", "temporal", "problem")


def xla_order(problem: Problem, order: str = "spatial") -> np.ndarray:
    """The order in which ``GlobalDecreasingSizeBestFitHeap`` places ``problem``'s buffers.

    ``spatial``: size descending, live range descending, index ascending; ``temporal``: live range
    descending, size descending, index ascending; ``problem``: the problem's order (XLA's
    ``kCustom`` with a comparator that keeps the given order). Returns a permutation (int64, first placed first).
    Raises ``ValueError`` for another ``order``.

    >>> p = Problem.from_closed([("a", 0, 4, 10), ("b", 1, 5, 30), ("c", 2, 6, 20), ("d", 3, 7, 40)])
    >>> xla_order(p).tolist()
    [3, 1, 2, 0]
    """
    if order not in ORDERS:
        raise ValueError(f"unknown XLA order {order!r}; choose from {ORDERS}")
    idx = np.arange(problem.n)
    if order == "problem":
        return idx.astype(np.int64)
    neg_len = problem.starts - problem.ends
    if order == "spatial":
        return np.lexsort((idx, neg_len, -problem.sizes)).astype(np.int64)
    return np.lexsort((idx, -problem.sizes, neg_len)).astype(np.int64)


def _free_chunk_pick(used: list[tuple[int, int]], size: int, a: int, preferred: int = -1) -> int:
    """Offset XLA picks for ``size`` bytes given the ``(offset, end)`` chunks in use (sorted by
    offset), heap alignment ``a`` and a ``preferred`` offset (-1: none) (``MakeFreeChunksList`` +
    ``FindUnslicedChunkCandidates``)."""
    if not used:
        return preferred if preferred >= 0 and preferred % a == 0 else 0
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
    if preferred >= 0 and preferred % a == 0:
        # the free chunk with the largest start <= preferred holds [preferred, preferred + size)
        below = [(fs, fe) for fs, fe in free if fs <= preferred]
        if below:
            fs, fe = below[-1]
            if fe is None or (preferred < fe and fe - size >= preferred):
                return preferred
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


def xla_best_fit_offsets(problem: Problem, order: str = "spatial",
                         use_core: bool | None = None) -> np.ndarray:
    """Offsets (bytes) of ``GlobalDecreasingSizeBestFitHeap::Finish`` on ``problem`` (one heap
    alignment: the buffers' common alignment). See the module docstring for the rules.

    ``use_core``: place with the compiled greedy core (same offsets when every size is a multiple
    of the alignment; ``None`` decides by that rule) or with this module's scan (``False``).

    Buffers of different alignments (XLA's heap has one): each buffer's own alignment plays the
    heap's when it is placed (free chunks start at used ends rounded up to it), so every offset
    is aligned and the plan valid.
    """
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    al = problem.alignments
    a = int(al[0])
    uniform = bool(np.all(al == a))
    perm = xla_order(problem, order)
    hints = problem.hints.tolist() if "hints" in problem.features else None
    if use_core is None:
        use_core = uniform and hints is None and bool(np.all(problem.sizes % a == 0))
    if use_core:
        return greedy_offsets(problem, perm, "best")
    indptr, nbrs = interference_csr(problem, ignore_zero_size=True)
    sizes = problem.sizes.tolist()
    aligns = al.tolist()
    ptr = indptr.tolist()
    placed = [False] * n
    off = [0] * n
    for i in perm.tolist():
        s = sizes[i]
        if s == 0:
            continue
        used = sorted((off[j], off[j] + sizes[j]) for j in nbrs[ptr[i] : ptr[i + 1]].tolist()
                      if placed[j])
        off[i] = _free_chunk_pick(used, s, aligns[i], -1 if hints is None else hints[i])
        placed[i] = True
    return np.asarray(off, np.int64)


def heap_calls_problem(calls: Iterable[tuple], name: str = "", alignment: int = 1) -> Problem:
    """The problem an XLA heap algorithm sees from a sequence of ``Alloc`` / ``Free`` calls.

    ``calls``: ``("alloc", buffer, size)``, ``("share", buffer, shared_with, size)`` (XLA's
    ``ShareWith``: a colocation, planned as a colocation group of the problem) and
    ``("free", buffer)`` tuples in call order (sizes in bytes). Each call on a non-zero-size buffer is one tick of XLA's ``current_time_``; a buffer
    lives over ``[alloc tick, free tick]`` (closed), here ``[alloc, free + 1)``. Zero-size buffers
    take no tick (XLA maps them to offset 0 at once) and get the one-step lifetime at the current
    tick. Buffers are numbered in order of their ``Alloc`` (XLA's ``HloValue`` ids in its tests).
    ``alignment``: the heap's alignment in bytes, given to every buffer.

    Raises :class:`planners.errors.ProblemError` for a second ``Alloc`` of a buffer, a ``Free`` of a
    buffer never allocated or freed twice, or a buffer never freed.

    >>> heap_calls_problem([("alloc", "a", 10), ("alloc", "b", 20), ("free", "a"),
    ...                     ("free", "b")]).ends.tolist()
    [3, 4]
    """
    t = 0
    names: list[str] = []
    share: dict[str, str] = {}
    size: dict[str, int] = {}
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for call in calls:
        kind, buf = call[0], str(call[1])
        if kind in ("alloc", "share"):
            if buf in size:
                raise ProblemError(f"heap calls: buffer {buf!r} is allocated twice")
            if kind == "share":
                if str(call[2]) not in size:
                    raise ProblemError(f"heap calls: {buf!r} shares with {call[2]!r}, which is "
                                       "not allocated")
                share[buf] = str(call[2])
            names.append(buf)
            size[buf] = int(call[-1])
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
            raise ProblemError(f"heap calls: unknown call {kind!r} (use 'alloc', 'share' or "
                               "'free')")
    missing = [b for b in names if b not in end]
    if missing:
        raise ProblemError(f"heap calls: buffer {missing[0]!r} is never freed")
    root: dict[str, str] = {}
    for b in names:  # transitive colocations, as GetTransitiveColocations
        root[b] = root[share[b]] if b in share else b
    groups: dict[str, list[str]] = {}
    for b in names:
        groups.setdefault(root[b], []).append(b)
    return Problem([Buffer(b, start[b], end[b], size[b]) for b in names], name=name,
                   alignment=alignment,
                   colocations=[g for g in groups.values() if len(g) > 1] or None)


class XlaHeap(Planner):
    """XLA's ``GlobalDecreasingSizeBestFitHeap`` (heap_simulator.cc): decreasing size (or live
    range), best fit among the free chunks. See :mod:`planners.xla_heap` for the exact rules.

    Parameters
    ----------
    order : {"spatial", "temporal", "problem"}, default "spatial"
        XLA's ``kSpatial`` (its default) or ``kTemporal`` sort, or the problem's order (``kCustom``).

    Colocation and alias groups are merged, mixed alignments handled per buffer (see the module
    docstring).
    """

    name = "xla_heap"
    family = "peer"
    _capabilities = {"hints": "native"}  # XLA's preferred-offset rule
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints = {"order": [StrOptions(ORDERS)]}

    def __init__(self, order: str = "spatial") -> None:
        self.order = order

    def _solve(self, problem: Problem) -> SolveResult:
        return SolveResult(xla_best_fit_offsets(problem, self.order), "heuristic",
                           info={"order": self.order})
