"""The independent plan validator. Every plan that leaves any planner passes through it.

It checks, for a problem and one offset per buffer (bytes):

1. offsets are integers ``>= 0``, multiples of each buffer's alignment, and ``offset + size`` is
   representable in int64 (``<= 2**63 - 1`` bytes; the range rule of :mod:`planners.model`);
2. no two buffers that are live at the same step (half-open ``[start, end)`` lifetimes) overlap in
   address (``[offset, offset + size)``); zero-size buffers take no space and never conflict;
3. when a capacity is given, every buffer ends at or below it.

With alias groups (``Problem(aliases=...)``) it also checks

4. every child sits exactly at ``offset(parent) + delta``;
5. the overlap rule (2) on the groups: each group reserves its root's address range for the hull of
   its members' lifetimes (:meth:`planners.model.Problem.collapse`); members of one group may
   overlap each other.

With the compiler features (:attr:`planners.model.Problem.features`) it also checks

6. a pinned buffer sits exactly at its fixed offset;
7. with pools: every buffer has a pool among its candidates, its offset is a multiple of the
   pool's alignment, and it ends at or below the pool's capacity; the overlap rule holds per pool
   (buffers of different pools never conflict);
8. colocated buffers share one offset and one pool, and may overlap each other;
9. the overlap rule on the space buffers really take: outside its gaps a buffer takes
   ``[offset, offset + size)``; in a gap without window nothing; in a gap with window ``(lo, hi)``
   ``[offset + lo, offset + hi)`` (MiniMalloc ``Buffer::effective_size``).

Rules 6-9 are checked by :func:`_feature_violations`, with its own expansion of buffers into
rectangles (it does not call :meth:`planners.model.Problem.pieces` or :meth:`collapse`).

It shares no code with any planner. The overlap check has two stages. First a fast pass
(:func:`_overlap_free`). With the compiled module ``planners._validate``
(``planners/_ext/_validate.c``, its own sorts and ordered set, nothing of a planner's) it is a
sweep over time: the events sorted once by step (ends before starts at the same step, two
``O(n)`` radix sorts), the live buffers kept as an ordered set by address (a bit set over their
ranks by offset with a 64-ary summary tree); as long as the live ranges are disjoint a starting
buffer overlaps a live one iff it overlaps its neighbour below or above in address order, so each
event costs ``O(log_64 n)``: ``O(n log n)`` in all, whatever the number of pairs live together.
Without the compiled module, a vectorised numpy pass: the buffers of non-zero size sorted by start
step; each buffer ``i`` meets in time exactly the later-sorted buffers whose start lies in
``[start_i, end_i)`` (one ``searchsorted``), so every pair live at a common step is listed
exactly once, and the pairs are tested for address overlap with numpy in blocks of about a
million (``O(n log n + E)`` time for ``E`` such pairs, ``O(n)`` memory beyond a block). Only
when the fast pass finds an overlap does the naming sweep run (Python), which keeps the live
buffers sorted by offset: when a buffer becomes live it can only collide with its neighbours in
address order (the live set is disjoint if no error was found so far), ``O(n log n + n k)`` for
``k`` buffers live at once; it names the first offending pair in sweep order in the error.
:func:`plan_violations` collects every violation instead (every overlapping pair, misalignment and
capacity overflow), with a sweep over time and a max-tree over offset ranks (``memplan check``).

Its own arithmetic never wraps: offsets outside int64 are refused before any numpy arithmetic,
``offset + size`` is compared as ``offset > 2**63 - 1 - size`` (no sum formed), and the overlap
sweep, the capacity and the alias checks work on Python integers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from .errors import InvalidPlanError
from .model import INT64_MAX, Problem

__all__ = ["check_plan", "is_valid", "plan_violations", "plan_traffic", "Violation"]


def plan_traffic(problem: Problem, pools) -> int:
    """The traffic cost of a plan of ``problem`` counted from the plan itself:
    ``sum_i (end_i - start_i) x size_i x cost(pool_i)`` over **every** buffer of the problem as
    given (each member of a colocation group with its own half-open lifetime ``[start, end)``
    in schedule steps and its own size in bytes; one access per step), with the pools' costs
    (:attr:`planners.model.Problem.pool_costs`: their own ``cost`` when some is non-zero, else
    their ranks in the preference order). The objective :mod:`planners.feature_cpsat`
    documents; counted here in Python integers from the buffers, sharing no code with the
    planners (:meth:`planners.base.Planner.plan` reports it and checks an ``optimal`` claim
    against it).

    Parameters
    ----------
    problem : Problem
    pools : array-like of int, shape ``(problem.n,)``
        Index into ``problem.pools`` of each buffer's pool (``Plan.pools``).

    Returns
    -------
    int
        Bytes x steps x cost; 0 for a problem without pools.

    Raises
    ------
    InvalidPlanError
        ``pools`` does not hold one pool index of ``problem`` per buffer.

    Examples
    --------
    Two colocated buffers (4 bytes for steps [0, 2), 2 bytes for steps [3, 6)) in the second of
    two pools (rank cost 1): ``2 x 4 + 3 x 2 = 14``, not the merged buffer's hull ``6 x 4``:

    >>> from planners.model import Buffer, MemoryPool
    >>> p = Problem([Buffer("a", 0, 2, 4), Buffer("b", 3, 6, 2)], colocations=[("a", "b")],
    ...             pools=[MemoryPool("sram", 2), MemoryPool("psram")])
    >>> plan_traffic(p, [1, 1])
    14
    """
    if not problem.pools:
        return 0
    ks = [int(k) for k in np.asarray(pools).ravel().tolist()]
    if len(ks) != problem.n or any(not 0 <= k < len(problem.pools) for k in ks):
        raise InvalidPlanError(f"plan has pools {ks} for {problem.n} buffers and "
                               f"{len(problem.pools)} pools (pool indices)")
    cost = problem.pool_costs
    return sum((b.end - b.start) * b.size * cost[k]
               for b, k in zip(problem.buffers, ks, strict=True))


def check_plan(problem: Problem, offsets, capacity: int | None = None, pools=None,
               pool_capacities: bool = True) -> None:
    """Raise :class:`InvalidPlanError` unless ``offsets`` is a valid plan of ``problem``.

    Parameters
    ----------
    problem : Problem
    offsets : array-like of int, shape ``(problem.n,)``
        Bytes, in problem order (relative to the buffer's pool with pools).
    capacity : int or None
        If given, the arena (highest ``offset + size``) must be ``<= capacity`` (in every pool).
    pools : array-like of int, shape ``(problem.n,)``, or None
        Index into ``problem.pools`` of each buffer's pool; required iff the problem has pools.
    pool_capacities : bool
        Check every buffer against its pool's capacity (default). ``False`` accepts a layout
        above a pool's capacity (:meth:`planners.base.Planner.plan` then reports the status
        ``over_capacity``, as for a single arena checked without ``capacity``).

    Raises
    ------
    InvalidPlanError
        Naming the rule and the buffer(s): wrong length, non-integer, negative or misaligned
        offset, ``offset + size`` beyond the representable range (``2**63 - 1`` bytes), the first
        pair live at the same step whose address ranges overlap (for alias groups: the roots'
        ids), a buffer above the capacity, or an alias child not at its parent's offset + delta.
    """
    n = problem.n
    off = _as_offsets(problem, offsets)
    if problem.features or pools is not None:
        v = _feature_violations(problem, off, capacity, pools, first=True,
                                pool_capacities=pool_capacities)
        if v:
            raise InvalidPlanError(v[0].message)
        return
    if n == 0:
        return
    sizes = problem.sizes
    # offset + size <= INT64_MAX, tested without forming the sum (sizes are >= 0 and < 2**62).
    big = np.flatnonzero(off > INT64_MAX - sizes)
    if big.size:
        i = int(big[0])
        o, z = int(off[i]), int(sizes[i])
        raise InvalidPlanError(
            f"buffer {problem.ids[i]!r}: offset {o} + size {z} = {o + z} bytes exceeds the representable "
            f"range (2**63 - 1 = {INT64_MAX} bytes)"
        )
    if capacity is not None and int(capacity) < INT64_MAX:
        top = off + sizes  # no wrap: every offset + size was checked above
        over = np.flatnonzero((top > int(capacity)) & (sizes > 0))
        if over.size:
            i = int(over[np.argmax(top[over])])
            raise InvalidPlanError(
                f"buffer {problem.ids[i]!r}: ends at byte {int(top[i])}, above the capacity {capacity}"
            )
    if problem.aliases:
        index = problem.index
        for child, (parent, delta) in problem.aliases.items():
            c, p = index[child], index[parent]
            want = int(off[p]) + int(delta)
            if int(off[c]) != want:
                raise InvalidPlanError(
                    f"buffer {child!r}: offset {int(off[c])} must equal its alias parent "
                    f"{parent!r}'s offset {int(off[p])} + delta {delta} = {want}"
                )
        collapsed = problem.collapse()[0]
        # collapsed buffer k is the group of the k-th root in problem order; it sits at the root.
        _sweep(collapsed, off[np.unique(problem.alias_root)])
        return
    _sweep(problem, off)


def _as_offsets(problem: Problem, offsets) -> np.ndarray:
    """``offsets`` as an int64 array after checking shape, integrality, sign and alignment.

    Values are inspected as Python numbers before any conversion, so an offset outside int64 (a
    Python int, uint64 or float beyond ``2**63 - 1``) is named instead of wrapping.
    """
    n = problem.n
    # A list of Python ints beyond int64 would become float64 (rounded) in np.asarray.
    seq = isinstance(offsets, (list, tuple))
    off = np.asarray(offsets, dtype=object if seq else None)
    if off.shape != (n,):
        raise InvalidPlanError(f"plan has {off.shape} offsets for {n} buffers")
    if off.dtype.kind != "i" or off.dtype.itemsize > 8:
        vals = off.tolist()
        ids = problem.ids
        for i, v in enumerate(vals):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise InvalidPlanError(f"buffer {ids[i]!r}: offset {v!r} is not an integer (bytes)")
            if isinstance(v, (float, np.floating)) and not float(v).is_integer():
                raise InvalidPlanError("offsets must be integers (bytes)")
            v = int(v)
            if v < 0:
                raise InvalidPlanError(f"buffer {ids[i]!r}: offset {v} is negative")
            if v > INT64_MAX:
                raise InvalidPlanError(
                    f"buffer {ids[i]!r}: offset {v} exceeds the representable range "
                    f"(2**63 - 1 = {INT64_MAX} bytes)"
                )
            vals[i] = v
        off = np.asarray(vals, dtype=np.int64).reshape(n)
    else:
        off = off.astype(np.int64)
    neg = np.flatnonzero(off < 0)
    if neg.size:
        i = int(neg[0])
        raise InvalidPlanError(f"buffer {problem.ids[i]!r}: offset {int(off[i])} is negative")
    mis = np.flatnonzero(off % problem.alignments)
    if mis.size:
        i = int(mis[0])
        raise InvalidPlanError(
            f"buffer {problem.ids[i]!r}: offset {int(off[i])} is not a multiple of its alignment "
            f"{int(problem.alignments[i])}"
        )
    return off


#: Pairs tested per numpy block by :func:`_overlap_free_pairs` (bounds its temporary memory).
_BLOCK_PAIRS = 1 << 20


def _c_sweep():
    """The compiled overlap sweep ``planners._validate``, or ``None`` when it is not built."""
    try:
        from . import _validate
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return _validate


def _overlap_free(starts, ends, off, sizes, engine: str = "auto") -> bool:
    """True iff no two buffers of non-zero size live at a common step overlap in address.

    Half-open lifetimes ``[start, end)`` (steps) and address ranges ``[off, off + size)`` (bytes),
    int64 arrays of shape ``(n,)``; every ``off`` must be ``>= 0`` and every ``off + size``
    representable (checked before). ``engine``: ``"c"`` the compiled sweep of
    ``planners._validate`` (``O(n log n)``; module docstring), ``"numpy"`` the pair test of
    :func:`_overlap_free_pairs` (``O(n log n + E)`` for ``E`` pairs live together), ``"auto"``
    the compiled sweep when it is built. Both give the same answer (tests/test_validate_sweep.py).

    Raises
    ------
    ImportError
        ``engine="c"`` and ``planners._validate`` is not built.
    """
    core = _c_sweep() if engine in ("auto", "c") else None
    if core is None and engine == "c":
        raise ImportError("planners._validate is not built; run `pip install -e .`")
    if core is None:
        return _overlap_free_pairs(starts, ends, off, sizes)
    i64 = np.int64
    return core.first_overlap(
        starts=np.ascontiguousarray(starts, i64), ends=np.ascontiguousarray(ends, i64),
        offsets=np.ascontiguousarray(off, i64), sizes=np.ascontiguousarray(sizes, i64),
    ) is None


def _overlap_free_pairs(starts, ends, off, sizes) -> bool:
    """:func:`_overlap_free` by numpy over the interfering pairs (no compiled code).

    Sorted by start (ties by index), buffer ``i`` meets in time exactly the later-sorted ``j`` with
    ``start_j < end_i``, a run ``i + 1 .. hi_i - 1``; these pairs are generated in blocks of at
    most about :data:`_BLOCK_PAIRS` and tested with ``off_i < top_j and off_j < top_i``.
    ``O(n log n + E)`` for ``E`` interfering pairs.
    """
    live = np.flatnonzero(sizes > 0)
    if live.size < 2:
        return True
    order = live[np.argsort(starts[live], kind="stable")]
    st = starts[order]
    en = ends[order]
    lo = off[order]
    hi_addr = lo + sizes[order]
    del order
    m = st.size
    # partners of i: sorted positions i + 1 .. stop[i] - 1 (start_j < end_i; start_j >= start_i)
    count = np.searchsorted(st, en, side="left") - np.arange(1, m + 1)
    del en
    cum = np.cumsum(count)
    total = int(cum[-1]) if m else 0
    if total == 0:
        return True
    # blocks of consecutive rows with about _BLOCK_PAIRS pairs each (a long row is its own block)
    cuts = np.searchsorted(cum, np.arange(_BLOCK_PAIRS, total, _BLOCK_PAIRS), side="left")
    bounds = np.unique(np.concatenate([[0], cuts + 1, [m]]))
    for r0, r1 in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        c = count[r0:r1]
        k = int(c.sum())
        if k == 0:
            continue
        first = np.cumsum(c) - c  # position of each row's first pair in the block
        # partner index of pair q of row r: r + 1 + (q - first[r])
        j = np.arange(k, dtype=np.int64)
        j += np.repeat(np.arange(r0 + 1, r1 + 1, dtype=np.int64) - first, c)
        bad = lo[j] < np.repeat(hi_addr[r0:r1], c)
        bad &= np.repeat(lo[r0:r1], c) < hi_addr[j]
        if bad.any():
            return False
    return True


def _sweep(problem: Problem, off: np.ndarray) -> None:
    """Overlap rule 2 of :func:`check_plan` (module docstring): the vectorised test, then, only
    when it finds an overlap, the sweep that names the first pair in sweep order."""
    if _overlap_free(problem.starts, problem.ends, off, problem.sizes):
        return
    _first_overlap(problem, off)
    raise RuntimeError("validator: the two overlap tests disagree")  # pragma: no cover


def _first_overlap(problem: Problem, off: np.ndarray) -> None:
    """The sweep of :func:`check_plan` (module docstring): raises :class:`InvalidPlanError` for the
    first overlapping pair in sweep order. ``O(n log n + n k)``."""
    sizes = problem.sizes
    # Sweep: events sorted by time; at equal times, ends (kind 0) before starts (kind 1).
    live = np.flatnonzero(sizes > 0)
    if live.size < 2:
        return
    starts, ends = problem.starts[live], problem.ends[live]
    times = np.concatenate([ends, starts])
    kinds = np.concatenate([np.zeros(live.size, np.int8), np.ones(live.size, np.int8)])
    who = np.concatenate([live, live])
    order = np.lexsort((kinds, times))
    active_keys: list[int] = []  # offsets of live buffers, sorted
    active_idx: list[int] = []  # buffer index at the same position
    off_l = off.tolist()
    size_l = sizes.tolist()
    for k, w in zip(kinds[order].tolist(), who[order].tolist()):
        o = off_l[w]
        if k == 0:  # end of lifetime: remove
            pos = bisect.bisect_left(active_keys, o)
            while active_idx[pos] != w:
                pos += 1
            del active_keys[pos]
            del active_idx[pos]
            continue
        pos = bisect.bisect_right(active_keys, o)
        if pos > 0:
            j = active_idx[pos - 1]
            if off_l[j] + size_l[j] > o:
                _overlap(problem, j, w, off_l, size_l)
        if pos < len(active_keys):
            j = active_idx[pos]
            if o + size_l[w] > off_l[j]:
                _overlap(problem, j, w, off_l, size_l)
        active_keys.insert(pos, o)
        active_idx.insert(pos, w)


def _overlap(problem: Problem, i: int, j: int, off: list[int], size: list[int]) -> None:
    a, b = problem.buffers[i], problem.buffers[j]
    raise InvalidPlanError(
        f"buffers {a.id!r} and {b.id!r} are both live in steps "
        f"[{max(a.start, b.start)}, {min(a.end, b.end)}) and overlap in address: "
        f"[{off[i]}, {off[i] + size[i]}) vs [{off[j]}, {off[j] + size[j]})"
    )


def is_valid(problem: Problem, offsets, capacity: int | None = None) -> bool:
    """``True`` iff :func:`check_plan` raises nothing."""
    try:
        check_plan(problem, offsets, capacity)
    except InvalidPlanError:
        return False
    return True


@dataclass(frozen=True)
class Violation:
    """One broken rule of a plan, as collected by :func:`plan_violations`.

    Attributes
    ----------
    rule : str
        ``"offset"`` (not an integer, negative, or beyond ``2**63 - 1``), ``"alignment"``,
        ``"range"`` (``offset + size`` beyond ``2**63 - 1`` bytes), ``"capacity"``, ``"alias"``
        (a child not at its parent's offset + delta) or ``"overlap"``.
    buffers : tuple of str
        The buffer id, or the two ids of an overlapping pair (for alias groups: the roots' ids).
    message : str
        The rule and the numbers (bytes, steps), as :func:`check_plan` words it.
    """

    rule: str
    buffers: tuple[str, ...]
    message: str

    def as_dict(self) -> dict:
        """``{"rule", "buffers", "message"}`` (JSON-ready)."""
        return {"rule": self.rule, "buffers": list(self.buffers), "message": self.message}


def plan_violations(problem: Problem, offsets, capacity: int | None = None,
                    pools=None) -> list[Violation]:
    """Every violation of the rules of :func:`check_plan` (module docstring), not only the first.

    :func:`check_plan` raises iff this list is non-empty. A buffer whose offset is not a valid
    integer (``rule="offset"``) takes no further part; the others are checked for alignment, range
    and capacity one by one, and every pair live at the same step (half-open ``[start, end)``
    lifetimes) whose address ranges ``[offset, offset + size)`` intersect is listed once
    (zero-size buffers never conflict; with alias groups the groups are compared, named by their
    roots, as in :func:`check_plan`).

    Parameters
    ----------
    problem : Problem
    offsets : array-like, shape ``(problem.n,)``
        Bytes, in problem order.
    capacity : int or None
        If given, every buffer of non-zero size must end at or below it (bytes).

    Returns
    -------
    list of Violation
        Per-buffer violations in problem order (offset, alignment, range, capacity, alias), then
        the overlapping pairs in sweep order (by the later pair member's start step).

    Raises
    ------
    InvalidPlanError
        ``offsets`` does not hold one value per buffer.

    Notes
    -----
    The overlap search is a sweep over time; the live buffers sit in a max-tree indexed by offset
    rank that stores each one's end address. When a buffer ``w`` starts, the live buffers that
    intersect it are those with ``offset < offset(w) + size(w)`` (a prefix in offset order) and
    ``end > offset(w)``; a descent that prunes every subtree whose maximum end is
    ``<= offset(w)`` reports exactly them. Time ``O((n + p) log n)`` for ``n`` buffers and ``p``
    reported pairs; no loop over all pairs. Shares no code with any planner (or with
    :func:`check_plan`'s first-error sweep).

    Examples
    --------
    Closed lifetimes a [0, 3], b [1, 2], c [2, 4] at offsets 0, 4, 0 (8 bytes each): a and b
    share steps 1-2 and bytes [4, 8), a and c share steps 2-3, b and c share step 2; b ends at
    byte 12, above a capacity of 10:

    >>> p = Problem.from_closed([("a", 0, 3, 8), ("b", 1, 2, 8), ("c", 2, 4, 8)])
    >>> [(v.rule, v.buffers) for v in plan_violations(p, [0, 4, 0], capacity=10)]
    [('capacity', ('b',)), ('overlap', ('a', 'b')), ('overlap', ('a', 'c')), ('overlap', ('b', 'c'))]
    """
    n = problem.n
    raw = offsets.tolist() if isinstance(offsets, np.ndarray) else list(offsets)
    if len(raw) != n or (isinstance(offsets, np.ndarray) and offsets.ndim != 1):
        raise InvalidPlanError(f"plan has {len(raw)} offsets for {n} buffers")
    if problem.features or pools is not None:
        try:
            off = _as_offsets(problem, offsets)
        except InvalidPlanError as e:
            return [Violation("offset", (), str(e))]
        return _feature_violations(problem, off, capacity, pools, first=False)
    ids = problem.ids
    sizes = problem.sizes.tolist()
    aligns = problem.alignments.tolist()
    out: list[Violation] = []
    off: list[int | None] = [None] * n
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or (
                isinstance(v, (float, np.floating)) and not float(v).is_integer()):
            out.append(Violation("offset", (ids[i],),
                                 f"buffer {ids[i]!r}: offset {v!r} is not an integer (bytes)"))
            continue
        v = int(v)
        if v < 0:
            out.append(Violation("offset", (ids[i],), f"buffer {ids[i]!r}: offset {v} is negative"))
            continue
        if v > INT64_MAX:
            out.append(Violation("offset", (ids[i],), f"buffer {ids[i]!r}: offset {v} exceeds the "
                                 f"representable range (2**63 - 1 = {INT64_MAX} bytes)"))
            continue
        off[i] = v
        if v % aligns[i]:
            out.append(Violation("alignment", (ids[i],), f"buffer {ids[i]!r}: offset {v} is not a "
                                 f"multiple of its alignment {aligns[i]}"))
        if v + sizes[i] > INT64_MAX:
            out.append(Violation("range", (ids[i],), f"buffer {ids[i]!r}: offset {v} + size "
                                 f"{sizes[i]} = {v + sizes[i]} bytes exceeds the representable "
                                 f"range (2**63 - 1 = {INT64_MAX} bytes)"))
        if capacity is not None and sizes[i] > 0 and v + sizes[i] > int(capacity):
            out.append(Violation("capacity", (ids[i],), f"buffer {ids[i]!r}: ends at byte "
                                 f"{v + sizes[i]}, above the capacity {capacity}"))
    space = problem
    if problem.aliases:
        index = problem.index
        for child, (parent, delta) in problem.aliases.items():
            c, p = index[child], index[parent]
            if off[c] is None or off[p] is None:
                continue
            want = off[p] + int(delta)
            if off[c] != want:
                out.append(Violation("alias", (child,), f"buffer {child!r}: offset {off[c]} must "
                                     f"equal its alias parent {parent!r}'s offset {off[p]} + "
                                     f"delta {delta} = {want}"))
        space = problem.collapse()[0]
        off = [off[int(r)] for r in np.unique(problem.alias_root).tolist()]
    out += _all_overlaps(space, off)
    return out


def _all_overlaps(problem: Problem, off: list[int | None]) -> list[Violation]:
    """Every overlapping live pair of ``problem`` at offsets ``off`` (``None``: skipped); see
    :func:`plan_violations`, Notes."""
    sizes = problem.sizes.tolist()
    live = [i for i in range(problem.n) if sizes[i] > 0 and off[i] is not None]
    if len(live) < 2:
        return []
    by_off = sorted(live, key=lambda i: (off[i], i))
    rank = {w: r for r, w in enumerate(by_off)}
    keys = [off[i] for i in by_off]
    m = 1
    while m < len(by_off):
        m *= 2
    tree = [-1] * (2 * m)  # max end address per subtree; -1: no live buffer (ends are >= 1)
    starts, ends = problem.starts.tolist(), problem.ends.tolist()
    # ends (kind 0) before starts (kind 1) at equal steps: [0, 2) and [2, 4) never meet
    events = sorted([(ends[i], 0, i) for i in live] + [(starts[i], 1, i) for i in live])
    bufs = problem.buffers
    out: list[Violation] = []
    for _, kind, w in events:
        p = m + rank[w]
        if kind == 0:
            tree[p] = -1
        else:
            o, top = off[w], off[w] + sizes[w]
            lim = bisect.bisect_left(keys, top)  # ranks [0, lim) start below w's top
            stack = [(1, 0, m)]
            while stack:
                node, lo, hi = stack.pop()
                if lo >= lim or tree[node] <= o:
                    continue
                if node >= m:
                    j = by_off[node - m]
                    a, b = bufs[j], bufs[w]
                    out.append(Violation(
                        "overlap", (a.id, b.id),
                        f"buffers {a.id!r} and {b.id!r} are both live in steps "
                        f"[{max(a.start, b.start)}, {min(a.end, b.end)}) and overlap in address: "
                        f"[{off[j]}, {off[j] + sizes[j]}) vs [{o}, {top})"))
                    continue
                mid = (lo + hi) // 2
                stack.append((2 * node + 1, mid, hi))
                stack.append((2 * node, lo, mid))
            tree[p] = top
        p //= 2
        while p:
            tree[p] = max(tree[2 * p], tree[2 * p + 1])
            p //= 2
    return out


# ---------------------------------------------------------------------------------------------
# Compiler features (rules 6-9 of the module docstring)
# ---------------------------------------------------------------------------------------------
def _rects_of(start: int, end: int, size: int, gaps) -> list[tuple[int, int, int, int]]:
    """``(t0, t1, lo, hi)`` rectangles (steps half-open, bytes above the offset) that a buffer
    with lifetime ``[start, end)``, ``size`` bytes and ``gaps`` takes (rule 9)."""
    cuts = sorted({start, end} | {g.start for g in gaps} | {g.end for g in gaps})
    out = []
    for t0, t1 in zip(cuts[:-1], cuts[1:]):
        g = next((g for g in gaps if g.start <= t0 and t1 <= g.end), None)
        lo, hi = (0, size) if g is None else (g.window if g.window is not None else (0, 0))
        if hi > lo:
            out.append((t0, t1, lo, hi))
    return out


def _union_rects(rects: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """The union of rectangles (all at one offset) as rectangles that never overlap: per
    elementary step range, the merged address intervals of those live in it."""
    cuts = sorted({r[0] for r in rects} | {r[1] for r in rects})
    out = []
    for t0, t1 in zip(cuts[:-1], cuts[1:]):
        iv = sorted((r[2], r[3]) for r in rects if r[0] <= t0 and t1 <= r[1])
        merged: list[list[int]] = []
        for lo, hi in iv:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out.extend((t0, t1, lo, hi) for lo, hi in merged)
    return out


def _pool_name(names: list[str], k: int) -> str:
    """Pool ``k`` by name (``'sram'``), or its index when out of range."""
    return repr(names[k]) if 0 <= k < len(names) else str(k)


def _feature_violations(problem: Problem, off: np.ndarray, capacity, pools,
                        first: bool, pool_capacities: bool = True) -> list[Violation]:
    """Rules 1-9 of the module docstring for a problem with compiler features, on offsets
    already checked by :func:`_as_offsets` (integers, >= 0, aligned to the buffer). ``first``:
    stop at the first violation. Time ``O(R log R + E)`` for ``R`` rectangles and ``E`` pairs
    live at a common step."""
    n = problem.n
    ids = problem.ids
    bufs = problem.buffers
    offl = [int(v) for v in off.tolist()]
    sizes = problem.sizes.tolist()
    out: list[Violation] = []

    def add(rule, who, msg) -> bool:
        out.append(Violation(rule, tuple(who), msg))
        return first

    names = [q.name for q in problem.pools]
    if problem.pools:
        if pools is None:
            add("pool", (), f"problem {problem.name!r} has pools {names}; the plan gives no pool "
                "per buffer")
            return out
        pl = np.asarray(pools)
        if pl.shape != (n,) or (n and pl.dtype.kind not in "iu"):
            add("pool", (), f"plan has pools of shape {pl.shape} for {n} buffers (pool indices)")
            return out
        pool = [int(k) for k in pl.tolist()]
    else:
        if pools is not None and any(int(k) != 0 for k in np.asarray(pools).ravel().tolist()):
            add("pool", (), f"problem {problem.name!r} has no pools; every pool index must be 0")
            return out
        pool = [0] * n
    for i, b in enumerate(bufs):
        o, z = offl[i], sizes[i]
        if o > INT64_MAX - z:
            if add("range", (b.id,), f"buffer {b.id!r}: offset {o} + size {z} = {o + z} bytes "
                   f"exceeds the representable range (2**63 - 1 = {INT64_MAX} bytes)"):
                return out
            continue
        if b.offset is not None and o != b.offset:
            if add("pin", (b.id,), f"buffer {b.id!r}: offset {o} differs from its fixed offset "
                   f"{b.offset}"):
                return out
        cap = None if capacity is None else int(capacity)
        if problem.pools:
            k = pool[i]
            if not 0 <= k < len(names):
                if add("pool", (b.id,), f"buffer {b.id!r}: pool index {k} is not one of the "
                       f"{len(names)} pools {names}"):
                    return out
                continue
            q = problem.pools[k]
            if b.pools and q.name not in b.pools:
                if add("pool", (b.id,), f"buffer {b.id!r}: placed in pool {q.name!r}, not one of "
                       f"its candidate pools {list(b.pools)}"):
                    return out
            if o % q.alignment:
                if add("alignment", (b.id,), f"buffer {b.id!r}: offset {o} is not a multiple of "
                       f"pool {q.name!r}'s alignment {q.alignment}"):
                    return out
            if q.capacity is not None and pool_capacities:
                cap = q.capacity if cap is None else min(cap, q.capacity)
        if cap is not None and z > 0 and o + z > cap:
            where = f" of pool {names[pool[i]]!r}" if problem.pools else ""
            if add("capacity", (b.id,), f"buffer {b.id!r}: ends at byte {o + z}, above the "
                   f"capacity {cap}{where}"):
                return out
    # colocations: one offset, one pool; the union of the members' rectangles
    index = problem.index
    owner_rects: list[tuple[int, list]] = []
    grouped: set[int] = set()
    for g in problem.colocations:
        m = [index[b] for b in g]
        grouped.update(m)
        for j in m[1:]:
            if offl[j] != offl[m[0]] or pool[j] != pool[m[0]]:
                if problem.pools:
                    msg = (f"must share one offset and pool: {offl[m[0]]} in pool "
                           f"{_pool_name(names, pool[m[0]])} vs {offl[j]} in pool "
                           f"{_pool_name(names, pool[j])}")
                else:
                    msg = f"must share one offset: {offl[m[0]]} vs {offl[j]}"
                if add("colocation", (ids[m[0]], ids[j]), f"colocated buffers {ids[m[0]]!r} and "
                       f"{ids[j]!r} {msg}"):
                    return out
        rects = [r for j in m for r in _rects_of(bufs[j].start, bufs[j].end, sizes[j],
                                                 bufs[j].gaps)]
        owner_rects.append((m[0], _union_rects(rects)))
    for i, b in enumerate(bufs):
        if i not in grouped:
            owner_rects.append((i, _rects_of(b.start, b.end, sizes[i], b.gaps)))
    if out and first:
        return out
    # rectangles per pool, sorted by start step; every pair live at a common step is tested
    rows = sorted(
        (t0, t1, offl[i] + lo, offl[i] + hi, pool[i], i)
        for i, rects in owner_rects for (t0, t1, lo, hi) in rects
    )
    gname = {index[g[0]]: "+".join(g) for g in problem.colocations}
    seen: set[tuple[int, int]] = set()
    live: list[tuple] = []  # rows whose end step is above the current start
    for r in rows:
        live = [q for q in live if q[1] > r[0]]
        for q in live:
            if q[4] == r[4] and q[5] != r[5] and q[2] < r[3] and r[2] < q[3]:
                key = (min(q[5], r[5]), max(q[5], r[5]))
                if key in seen:
                    continue
                seen.add(key)
                a, c = gname.get(q[5], ids[q[5]]), gname.get(r[5], ids[r[5]])
                if add("overlap", (a, c), f"buffers {a!r} and {c!r} are both live in steps "
                       f"[{max(q[0], r[0])}, {min(q[1], r[1])}) and overlap in address: "
                       f"[{q[2]}, {q[3]}) vs [{r[2]}, {r[3]})"
                       + (f" in pool {names[r[4]]!r}" if problem.pools else "")):
                    return out
        live.append(r)
    return out
