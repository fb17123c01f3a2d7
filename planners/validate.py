"""The independent plan validator. Every plan that leaves any planner passes through it.

It checks, for a problem and one offset per buffer (bytes):

1. offsets are integers ``>= 0`` and multiples of each buffer's alignment;
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
"""

from __future__ import annotations

import bisect

import numpy as np

from .errors import InvalidPlanError
from .model import Problem

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
        Naming the rule and the buffer(s): wrong length, negative or misaligned offset, the first pair
        live at the same step whose address ranges overlap (for alias groups: the roots' ids), a
        buffer above the capacity, or an alias child not at its parent's offset + delta.
    """
    off = np.asarray(offsets)
    n = problem.n
    if off.shape != (n,):
        raise InvalidPlanError(f"plan has {off.shape} offsets for {n} buffers")
    if n == 0:
        return
    if not np.issubdtype(off.dtype, np.integer):
        if not np.all(np.isfinite(off)) or not np.all(np.mod(off, 1) == 0):
            raise InvalidPlanError("offsets must be integers (bytes)")
        off = off.astype(np.int64)
    off = off.astype(np.int64)
    ids = problem.ids
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
    sizes = problem.sizes
    if capacity is not None:
        top = off + sizes
        over = np.flatnonzero((top > capacity) & (sizes > 0))
        if over.size:
            i = int(over[np.argmax(top[over])])
            raise InvalidPlanError(
                f"buffer {ids[i]!r}: ends at byte {int(top[i])}, above the capacity {capacity}"
            )
    if problem.aliases:
        index = problem.index
        for child, (parent, delta) in problem.aliases.items():
            c, p = index[child], index[parent]
            if off[c] != off[p] + delta:
                raise InvalidPlanError(
                    f"buffer {child!r}: offset {int(off[c])} must equal its alias parent "
                    f"{parent!r}'s offset {int(off[p])} + delta {delta} = {int(off[p]) + delta}"
                )
        collapsed = problem.collapse()[0]
        # collapsed buffer k is the group of the k-th root in problem order; it sits at the root.
        _sweep(collapsed, off[np.unique(problem.alias_root)])
        return
    _sweep(problem, off)


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
