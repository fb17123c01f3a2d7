"""``xla_heap``: XLA's ``GlobalDecreasingSizeBestFitHeap``, its orders and best-fit rule exactly.

A reproduction of openxla/xla ``xla/service/heap_simulator/heap_simulator.cc``
(``GlobalDecreasingSizeBestFitHeap::Finish``, ``GetSortedBufferIntervals``,
``GetSpatialBufferIntervalCompare``, ``GetTemporalBufferIntervalCompare``, ``MakeFreeChunksList``,
``FindUnslicedChunkCandidates``, ``GetMaxColocationSize``, ``CommitChunkAndInterval``) for
buffers without slices:

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
it is placed (an extension; XLA has no such case).

Colocation groups (XLA's ``ShareWith``) are planned as XLA plans them (capability
``colocations: native``: :meth:`planners.base.Planner.plan` passes the members uncollapsed):

* **Record.** ``ShareWith(buffer, share_with, size)`` gives ``buffer`` its own ``BufferInterval``
  (its size, ``[its alloc tick, its free tick]``, ``need_allocation = false``) and appends it
  to ``share_with``'s ``colocations``; ``GetTransitiveColocations`` follows those lists. Only the
  ``Alloc``-ed root (``need_allocation = true``) is placed by ``Finish``; here the root is the
  group's lowest-index member of non-zero size (a ``ShareWith`` comes after the buffer it shares
  with, so :func:`heap_calls_problem` numbers the root first).
* **Sort key** (``GetSortedBufferIntervals``): ``kSpatial`` uses the root's own size and own live
  range; ``kTemporal`` the group's span ``min_colocation_start_time - max_colocation_end_time``,
  then the root's size.
* **Free chunks** (``MakeFreeChunksList``): the chunks in use at any step of the root's interval
  or of any member's; a free chunk is listed when it holds the root's own size.
* **Chunk size** (``GetMaxColocationSize``): the largest member's size must fit at the aligned
  start of the chosen chunk (best fit as above; a preferred offset: the hint of the first member
  by index that has one).
* **Commit** (``CommitChunkAndInterval``, ``CommitChunkOnly``): every member gets the same offset,
  and the chunk ``[offset, offset + largest member size)`` is taken over each member's own
  interval only, so a buffer live between two members can reuse it (XLA's ``Colocated``: 40
  bytes). The heap size is the largest ``offset + largest member size``, i.e. this plan's arena.

Extensions (XLA has no such case): the group's alignment is the lcm of its members'; a
zero-size member (XLA: offset 0, no colocation kept) takes the group's offset, which takes no
space. A problem with both pools and colocations whose pools are spilled is planned merged (one
buffer per group, as every planner). Alias groups are merged (:meth:`planners.model.Problem.collapse`).

When every size is a multiple of the alignment and there is no colocation group the placement
runs in the compiled greedy core (:mod:`planners.greedy`, ``fit="best"``: the same gaps, measured
the same way, ``O(n log n + E)``); otherwise in this module's scan of the placed neighbours (of
every member, for a group), which measures a free chunk from the aligned end as XLA does
(``O(n log n + E log k)``).

Pinned by the vectors of XLA's ``heap_simulator_test.cc`` (``GlobalDecreasingSizeBestFitHeapTest``:
``DecreasingSize`` 100 bytes, ``DecreasingSizeWithAlignment`` 120, ``BestFit`` 140; ``Colocated``
40, ``ColocatedII`` 60, ``ColocatedIII`` 40, ``ColocatedDifferentSize1`` 60, ``...Size2`` 70;
every offset) in ``tests/test_peer_planners.py``.
"""

from __future__ import annotations

import math
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


def _free_chunk_pick(used: list[tuple[int, int]], size: int, a: int, preferred: int = -1,
                     fit: int | None = None) -> int:
    """Offset XLA picks for ``size`` bytes given the ``(offset, end)`` chunks in use (sorted by
    offset), heap alignment ``a`` and a ``preferred`` offset (-1: none) (``MakeFreeChunksList`` +
    ``FindUnslicedChunkCandidates``). ``fit``: the bytes that must fit at the chosen offset
    (``GetMaxColocationSize``; default ``size``); a free chunk is listed when it holds ``size``
    (the placed buffer's own), then kept when ``fit`` fits at its aligned start."""
    if fit is None:
        fit = size
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
            if fe is None or (preferred < fe and fe - fit >= preferred):
                return preferred
    best, best_size = -1, None
    for fs, fe in free:
        x = -(-fs // a) * a
        if fe is None:
            if best < 0:
                best = x
            continue
        if fe - fit < x:
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
    A problem with colocation groups is always placed by the scan, with XLA's colocation rules
    (one offset per member, the same for a group); ``use_core=True`` then raises ``ValueError``.

    Buffers of different alignments (XLA's heap has one): each buffer's own alignment plays the
    heap's when it is placed (free chunks start at used ends rounded up to it), so every offset
    is aligned and the plan valid.
    """
    n = problem.n
    if n == 0:
        return np.zeros(0, np.int64)
    if problem.colocations:
        if use_core:
            raise ValueError("xla_best_fit_offsets: use_core=True, but the compiled core has no "
                             f"colocations (problem {problem.name!r} has "
                             f"{len(problem.colocations)} groups); use use_core=None")
        return _colocated_offsets(problem, order)
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


def _colocated_offsets(problem: Problem, order: str) -> np.ndarray:
    """:func:`xla_best_fit_offsets` for a problem with colocation groups, XLA's rules (module
    docstring, "Colocation groups"): one placement per group at its root (the lowest-index member
    of non-zero size), free chunks from the placed chunks live with any member, the largest
    member's size fitted, the chunk committed over every member's own lifetime.
    ``O(n log n + E log k)`` for ``E`` pairs of buffers live at a common step."""
    n = problem.n
    sizes = problem.sizes.tolist()
    al = problem.alignments.tolist()
    hints = problem.hints.tolist() if "hints" in problem.features else [-1] * n
    index = problem.index
    root = np.arange(n, dtype=np.int64)
    occ = list(sizes)  # bytes a placed buffer takes over its own lifetime (max_size_chunk)
    align = list(al)
    pref = list(hints)
    lo = problem.starts.copy()  # min_colocation_start_time / max_colocation_end_time
    hi = problem.ends.copy()
    group_of: dict[int, list[int]] = {}
    for g in problem.colocations:
        idx = sorted(index[b] for b in g)
        nz = [i for i in idx if sizes[i] > 0]
        r = nz[0] if nz else idx[0]
        root[idx] = r
        group_of[r] = idx
        occ[r] = max(sizes[i] for i in idx)
        for i in nz:
            occ[i] = occ[r]
        a = 1
        for i in idx:
            a = math.lcm(a, al[i])
        align[r] = a
        pref[r] = next((hints[i] for i in idx if hints[i] >= 0), -1)
        if nz:
            lo[r] = min(int(problem.starts[i]) for i in nz)
            hi[r] = max(int(problem.ends[i]) for i in nz)
    roots = np.flatnonzero(root == np.arange(n))
    sz = problem.sizes[roots]
    if order == "spatial":
        perm = roots[np.lexsort((roots, (problem.starts - problem.ends)[roots], -sz))]
    elif order == "temporal":
        perm = roots[np.lexsort((roots, -sz, (lo - hi)[roots]))]
    elif order == "problem":
        perm = roots
    else:
        raise ValueError(f"unknown XLA order {order!r}; choose from {ORDERS}")
    indptr, nbrs = interference_csr(problem, ignore_zero_size=True)
    ptr = indptr.tolist()
    nb = nbrs.tolist()
    placed = [False] * n
    off = [0] * n
    for r in perm.tolist():
        if sizes[r] == 0:
            continue  # a zero-size buffer, or a group of them: offset 0, no chunk
        members = group_of.get(r, (r,))
        used = sorted((off[j], off[j] + occ[j]) for m in members
                      for j in nb[ptr[m] : ptr[m + 1]] if placed[j])
        o = _free_chunk_pick(used, sizes[r], align[r], pref[r], occ[r])
        for m in members:
            off[m] = o
            placed[m] = sizes[m] > 0
    return np.asarray(off, np.int64)


def heap_calls_problem(calls: Iterable[tuple], name: str = "", alignment: int = 1) -> Problem:
    """The problem an XLA heap algorithm sees from a sequence of ``Alloc`` / ``Free`` calls.

    ``calls``: ``("alloc", buffer, size)``, ``("share", buffer, shared_with, size)`` (XLA's
    ``ShareWith``: a colocation, planned as a colocation group of the problem; one of size 0
    joins no group, as XLA keeps none for it) and
    ``("free", buffer)`` tuples in call order (sizes in bytes). Each call on a non-zero-size buffer is one tick of XLA's ``current_time_``; a buffer
    lives over ``[alloc tick, free tick]`` (closed), here ``[alloc, free + 1)``. Zero-size buffers
    take no tick (XLA maps them to offset 0 at once) and get the one-step lifetime at the current
    tick. Buffers are numbered in order of their ``Alloc`` (XLA's ``HloValue`` ids in its tests).
    ``alignment``: the heap's alignment in bytes, given to every buffer.

    Raises :class:`planners.errors.ProblemError` for a second ``Alloc`` of a buffer, a ``Free`` of a
    buffer never allocated or freed twice, a buffer never freed, or a ``ShareWith`` with a buffer
    not allocated or of size 0.

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
                if size[str(call[2])] == 0 and int(call[-1]):
                    raise ProblemError(f"heap calls: {buf!r} shares with {call[2]!r}, which has "
                                       "size 0 (XLA keeps no interval for it)")
                if int(call[-1]):  # XLA's ShareWith of size 0: offset 0, no colocation kept
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

    Colocation groups are planned as XLA plans them (capability ``colocations: native``: each
    member keeps its lifetime, the group one offset); alias groups are merged, mixed alignments
    handled per buffer (see the module docstring).
    """

    name = "xla_heap"
    family = "peer"
    # XLA's preferred-offset rule; XLA's ShareWith (per-member lifetimes)
    _capabilities = {"hints": "native", "colocations": "native"}
    in_default_comparison = False  # a peer baseline: run by ``make bench-peers``
    _parameter_constraints = {"order": [StrOptions(ORDERS)]}

    def __init__(self, order: str = "spatial") -> None:
        self.order = order

    def _solve(self, problem: Problem) -> SolveResult:
        return SolveResult(xla_best_fit_offsets(problem, self.order), "heuristic",
                           info={"order": self.order})
