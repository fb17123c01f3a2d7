"""Lower bounds and reference sizes of an allocation problem.

* :func:`live_profile` -- live bytes over time (the memory-over-time curve).
* :func:`lower_bound` -- max over time of the live bytes (seed 000 section 1, "peak"): no plan can
  have a smaller arena, because buffers live at the same step need disjoint address ranges.
* :func:`naive_arena` -- sum of (aligned) sizes: the arena with no reuse at all.

With the compiler features (:attr:`planners.model.Problem.features`) the bound counts the space
buffers really take (a gap takes nothing or its window), the top of every pinned buffer, and with
pools the per-pool bounds of :func:`pool_lower_bounds` (max live of the buffers forced into a
pool). All lifetimes are half-open ``[start, end)`` in schedule steps; sizes in bytes. A problem
with alias groups is measured on :meth:`Problem.collapse` (one buffer per group, lifetime the hull of its
members', size its root's), which is what any plan must reserve. Each function runs in
``O(n log n)`` time (a sort of the ``2n`` lifetime end points and a prefix sum); the plain
problem's bound in :func:`lower_bound` sorts them with one ``O(n)`` radix sort in the compiled
module ``planners._validate`` when it is built (the validator's; it shares no code with any
planner), else with numpy.

The int64 prefix sums are exact: every live sum, rounded size and the naive arena are at most the
problem's worst-case arena, which :class:`~planners.model.Problem` guarantees is ``<= 2**63 - 1``
(the range rule of :mod:`planners.model`).
"""

from __future__ import annotations

import math

import numpy as np

from .model import Problem
from .placement import pin_pools

__all__ = ["live_profile", "lower_bound", "naive_arena", "peak_step", "pool_lower_bounds",
           "arena_quantum"]


def _max_live(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> int:
    """The maximum over steps of the live bytes, ``max_t sum(size_i : start_i <= t < end_i)``
    (half-open lifetimes in steps, sizes in bytes, int64 arrays of shape ``(n,)``; 0 when
    ``n == 0``).

    With the compiled module ``planners._validate`` (the validator's, sharing no code with any
    planner): one ``O(n)`` radix sort of the ``2n`` events, ends before starts at a step, and a
    running sum that raises ``OverflowError`` instead of wrapping. Without it, numpy: the sizes
    summed in start order and in end order (two argsorts) and, at every start, the bytes started
    minus the bytes ended at or before it (one ``searchsorted``), ``O(n log n)``. The maximum is
    reached at some start step (the live bytes only grow there), and at tied starts the last
    one's prefix holds them all (sizes are ``>= 0``), so the largest difference is the peak. The
    int64 sums are exact: every partial sum is at most the problem's worst-case arena
    (``<= 2**63 - 1``, the range rule of :mod:`planners.model`).
    """
    if starts.size == 0:
        return 0
    try:
        from . import _validate
    except ImportError:  # pragma: no cover - depends on the build
        _validate = None
    i64 = np.int64
    if _validate is not None:
        return _validate.max_live(starts=np.ascontiguousarray(starts, i64),
                                  ends=np.ascontiguousarray(ends, i64),
                                  sizes=np.ascontiguousarray(sizes, i64))
    return _max_live_numpy(starts, ends, sizes)


def _max_live_numpy(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> int:
    """:func:`_max_live` with numpy only (two argsorts and a ``searchsorted``)."""
    if starts.size == 0:
        return 0
    o = np.argsort(starts)
    started = np.cumsum(sizes[o])
    e = np.argsort(ends)
    ended = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes[e])])
    return int((started - ended[np.searchsorted(ends[e], starts[o], side="right")]).max())


def _feature_profile(problem: Problem, owners=None, pieces=None) -> tuple[np.ndarray, np.ndarray]:
    """``(times, live)`` of :func:`live_profile` over the space buffers really take
    (:meth:`Problem.pieces`: gaps take nothing or their window's bytes), restricted to the buffer
    indices ``owners`` when given. Colocation groups are merged first by the caller, who passes
    the groups' exact ``pieces`` (:meth:`Problem.occupied_pieces` of the unmerged problem: a
    merged buffer may take more than its members, which would count bytes no plan uses)."""
    own, st, en, lo, hi = problem.pieces() if pieces is None else pieces
    if owners is not None:
        keep = np.isin(own, owners)
        own, st, en, lo, hi = own[keep], st[keep], en[keep], lo[keep], hi[keep]
    if own.size == 0:
        return np.zeros(1, np.int64), np.zeros(1, np.int64)
    w = hi - lo
    times, inv = np.unique(np.concatenate([st, en]), return_inverse=True)
    delta = np.zeros(len(times), np.int64)
    np.add.at(delta, inv[: own.size], w)
    np.add.at(delta, inv[own.size:], -w)
    return times, np.cumsum(delta)


def _pinned_top(problem: Problem, owners=None) -> int:
    """Highest byte a pinned buffer reaches (fixed offset + top of its pieces), 0 if none."""
    if "pins" not in problem.features:
        return 0
    own, _, _, _, hi = problem.pieces()
    pins = problem.pins[own]
    keep = pins >= 0
    if owners is not None:
        keep &= np.isin(own, owners)
    return int((pins[keep] + hi[keep]).max()) if keep.any() else 0


def pool_lower_bounds(problem: Problem) -> dict[str, int]:
    """``{pool name: bytes}``: a lower bound on each pool's arena in any valid plan of a problem
    with pools: the max live bytes of the buffers that can go to that pool only (their
    candidates name just it; gaps counted as :meth:`Problem.pieces` does), and the top of every
    pinned buffer forced there. A pinned buffer may go to any candidate pool that holds it
    (:func:`planners.placement.pin_pools`), so it counts as forced only when exactly one of its
    candidate pools has an alignment dividing the pin (the capacity is left out: the bound then
    holds for every layout, over capacity or not, and the exact planners prove the rest).
    Colocation groups are merged first (:meth:`Problem.collapse`). ``{}`` without pools.
    """
    if not problem.pools:
        return {}
    pieces = None
    if problem.colocations:
        pieces = problem.occupied_pieces()
        problem = problem.collapse()[0]
    forced: dict[int, list[int]] = {k: [] for k in range(len(problem.pools))}
    pins = problem.pins
    for i in range(problem.n):
        c = pin_pools(problem, i, capacity=False) if pins[i] >= 0 else problem.candidate_pools(i)
        if len(c) == 1:
            forced[c[0]].append(i)
    out = {}
    for k, q in enumerate(problem.pools):
        idx = np.asarray(forced[k], np.int64)
        out[q.name] = 0 if idx.size == 0 else max(
            int(_feature_profile(problem, idx, pieces)[1].max()), _pinned_top(problem, idx))
    return out


def live_profile(problem: Problem, aligned: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Live bytes as a step function of time.

    Returns ``(times, live)`` with ``times`` of shape ``(m,)`` (sorted distinct lifetime end points)
    and ``live`` of shape ``(m,)``: the live bytes on ``[times[k], times[k+1])`` (``live[-1]`` is 0).
    With ``aligned=True`` each size is rounded up to its alignment.

    >>> p = Problem.from_closed([("a", 0, 1, 10), ("b", 1, 2, 5)])
    >>> live_profile(p)
    (array([0, 1, 2, 3]), array([10, 15,  5,  0]))
    """
    pieces = problem.occupied_pieces() if problem.colocations else None
    if problem.aliases or problem.colocations:
        problem = problem.collapse()[0]
    if problem.n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if (problem.gaps or pieces is not None) and not aligned:
        return _feature_profile(problem, pieces=pieces)
    sizes = problem.aligned_sizes if aligned else problem.sizes
    times, inv = np.unique(np.concatenate([problem.starts, problem.ends]), return_inverse=True)
    delta = np.zeros(len(times), np.int64)
    n = problem.n
    np.add.at(delta, inv[:n], sizes)
    np.add.at(delta, inv[n:], -sizes)
    return times, np.cumsum(delta)


def lower_bound(problem: Problem) -> int:
    """Max over time of the live bytes: a lower bound on the arena of any valid plan (bytes).

    The result is the larger of two valid bounds (bytes): the plain peak of live bytes, and the
    padded peak. For the padded peak, every offset is a multiple of ``g``, the gcd of the
    alignments, so in any stack of live buffers each buffer but the topmost occupies its size
    rounded up to ``g``; hence the peak of those rounded sizes, less the largest rounding
    (``round_up(size, g) - size``) of any buffer, is also a bound. When every size is a multiple
    of ``g`` both equal seed 000's ``peak``. Zero-size buffers count for nothing.
    Runs in ``O(n log n)``.

    >>> lower_bound(Problem.from_closed([("a", 0, 1, 10), ("b", 1, 2, 5)]))
    15
    """
    pieces = None
    if problem.colocations:  # the space the groups' members really take (exact union)
        pieces = problem.occupied_pieces()
        pool_bounds = pool_lower_bounds(problem) if problem.pools else {}
    if problem.aliases or problem.colocations:  # a group is one buffer (Problem.collapse)
        problem = problem.collapse()[0]
    if problem.n == 0:
        return 0
    if pieces is not None or problem.features - {"hints"}:
        # Compiler features: live bytes over the space buffers take (gaps), the top of every
        # pinned buffer, and with pools the sum of the per-pool bounds (the arena of a plan with
        # pools is the sum of its pools' arenas, each at least that pool's bound).
        raw = max(int(_feature_profile(problem, pieces=pieces)[1].max()), _pinned_top(problem))
        if problem.pools:
            if pieces is None:
                pool_bounds = pool_lower_bounds(problem)
            raw = max(raw, sum(pool_bounds.values()))
        return raw
    raw = _max_live(problem.starts, problem.ends, problem.sizes)
    slack = problem.aligned_sizes - problem.sizes
    if not slack.any():
        return raw
    # Every offset is a multiple of g = gcd of the alignments, so each non-top buffer of a stack
    # occupies at least its size rounded up to g (the next offset above it is a multiple of g).
    live = problem.sizes > 0
    g = int(np.gcd.reduce(problem.alignments[live])) if live.any() else 1
    rounded = -(-problem.sizes // g) * g
    padded = _max_live(problem.starts, problem.ends, rounded) - int((rounded - problem.sizes).max())
    return max(raw, padded)


def peak_step(problem: Problem) -> int:
    """The first schedule step at which the live bytes reach their maximum."""
    times, live = live_profile(problem)
    return int(times[int(np.argmax(live))]) if len(times) else 0


def naive_arena(problem: Problem) -> int:
    """Arena with no reuse: the sum of sizes rounded up to alignment (bytes); one size per alias
    group."""
    if problem.aliases:
        problem = problem.collapse()[0]
    return int(problem.aligned_sizes.sum())


def arena_quantum(problem: Problem) -> int:
    """The largest ``g`` (bytes) such that some optimal arena is a multiple of ``g``.

    ``g`` is the gcd of the non-zero sizes and of the alignments above 1: in a pushed-down layout
    every offset is the top of another buffer rounded up to an alignment, so every offset and top
    is a multiple of ``g``. Hence capacity ``c`` is feasible iff ``(c // g) * g`` is, and proving
    ``c`` infeasible proves the arena ``>= (c // g + 1) * g``. ``1`` when nothing has size.
    """
    vals = [int(v) for v in problem.sizes[problem.sizes > 0]]
    vals += [int(a) for a in problem.alignments[(problem.alignments > 1) & (problem.sizes > 0)]]
    return math.gcd(*vals) if vals else 1
