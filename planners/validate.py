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

It shares no code with any planner. The overlap check is a sweep over time that keeps the live
buffers sorted by offset: when a buffer becomes live it can only collide with its neighbours in
address order (the live set is disjoint if no error was found so far), so the check runs in
``O(n log n + n k)`` for ``k`` buffers live at once (list insertion is a memmove), not over all
pairs. The first offending pair in sweep order is named in the error.

Its own arithmetic never wraps: offsets outside int64 are refused before any numpy arithmetic,
``offset + size`` is compared as ``offset > 2**63 - 1 - size`` (no sum formed), and the overlap
sweep, the capacity and the alias checks work on Python integers.
"""

from __future__ import annotations

import bisect

import numpy as np

from .errors import InvalidPlanError
from .model import INT64_MAX, Problem

__all__ = ["check_plan", "is_valid"]


def check_plan(problem: Problem, offsets, capacity: int | None = None) -> None:
    """Raise :class:`InvalidPlanError` unless ``offsets`` is a valid plan of ``problem``.

    Parameters
    ----------
    problem : Problem
    offsets : array-like of int, shape ``(problem.n,)``
        Bytes, in problem order.
    capacity : int or None
        If given, the arena (highest ``offset + size``) must be ``<= capacity``.

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
    if n == 0:
        return
    ids = problem.ids
    sizes = problem.sizes
    # offset + size <= INT64_MAX, tested without forming the sum (sizes are >= 0 and < 2**62).
    big = np.flatnonzero(off > INT64_MAX - sizes)
    if big.size:
        i = int(big[0])
        o, z = int(off[i]), int(sizes[i])
        raise InvalidPlanError(
            f"buffer {ids[i]!r}: offset {o} + size {z} = {o + z} bytes exceeds the representable "
            f"range (2**63 - 1 = {INT64_MAX} bytes)"
        )
    if capacity is not None and int(capacity) < INT64_MAX:
        top = off + sizes  # no wrap: every offset + size was checked above
        over = np.flatnonzero((top > int(capacity)) & (sizes > 0))
        if over.size:
            i = int(over[np.argmax(top[over])])
            raise InvalidPlanError(
                f"buffer {ids[i]!r}: ends at byte {int(top[i])}, above the capacity {capacity}"
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
    ids = problem.ids
    if off.dtype.kind != "i" or off.dtype.itemsize > 8:
        vals = off.tolist()
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
        raise InvalidPlanError(f"buffer {ids[i]!r}: offset {int(off[i])} is negative")
    mis = np.flatnonzero(off % problem.alignments)
    if mis.size:
        i = int(mis[0])
        raise InvalidPlanError(
            f"buffer {ids[i]!r}: offset {int(off[i])} is not a multiple of its alignment "
            f"{int(problem.alignments[i])}"
        )
    return off


def _sweep(problem: Problem, off: np.ndarray) -> None:
    """Overlap rule 2 of :func:`check_plan` (module docstring), ``O(n log n + n k)``."""
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
