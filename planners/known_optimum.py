"""Seeded allocation problems whose optimum arena is known: perfect tilings of a strip.

The strip is the rectangle ``[0, horizon) x [0, width)``: time (schedule steps) by address
(bytes). It is cut into ``n`` rectangles, and each rectangle ``[lower, upper) x [offset, offset +
size)`` becomes one buffer with the half-open lifetime ``[lower, upper)`` and ``size`` bytes; the
construction's ``offset`` is kept as the known plan. Two ways of cutting (issue #35, after
omnimalloc's ``TilingSource`` and ``PinwheelSource``, ``omnimalloc/benchmark/sources``):

* ``guillotine`` (:func:`guillotine_problem`): a rectangle is cut in two by one straight line,
  across time or across the addresses, recursively;
* ``pinwheel`` (:func:`pinwheel_problem`): a rectangle is replaced by a pinwheel, a centre
  rectangle ringed by four blades, each blade running along one side from one corner to a point
  short of the next (mirrored in time at random), recursively. No straight line crosses a
  pinwheel from edge to edge without cutting the interior of one of its five pieces, so the strip
  has no guillotine cut at all (the whole problem cannot be split into two independent parts by
  a time step or an address); at most three guillotine cuts, made last, bring the count from
  ``1 + 4k`` to exactly ``n``.

Which rectangle is cut next is drawn in proportion to its area (an exponential race: each
rectangle gets the key ``clock + Exp(1) / area``, the smallest key is cut), so large rectangles
are cut first and the layout stays balanced, in ``O(n log n)``.

Why the optimum is known (the proof every result of this module rests on)
--------------------------------------------------------------------------
Let the strip have ``W = width`` bytes and ``T = horizon`` steps, and the ``n`` rectangles be
pairwise disjoint, inside the strip, with integer corners, and with areas summing to ``W x T``
(the generator checks all three, :func:`_check_tiling`). Each unit cell ``[t, t+1) x [b, b+1)``
of the strip lies in at most one rectangle (disjoint), the rectangles hold ``W x T`` cells in
all (the area sum), and the strip has ``W x T`` cells, so every cell lies in exactly one
rectangle. Hence at every step ``t`` the buffers live at ``t`` cover ``[0, W)`` exactly once and
their sizes sum to ``W``: the live bytes are ``W`` at every step, so the lower bound (max live
bytes, :func:`planners.bounds.lower_bound`) is ``W``. The known plan places every buffer inside
``[0, W)`` without overlap (disjoint rectangles), so its arena is ``W``. Every plan needs at least
the max live bytes, so no plan is below ``W``: the optimum arena is ``W``, the known plan is
optimal, and ``lower_bound == optimum == W``.

The ratio ``arena / optimum`` of a planner on these problems is therefore its true distance from
the optimum. What this does not give: an instance whose optimum lies above its max live bytes
(MiniMalloc's C, D, J are such); there the optimum is not known by construction, and none is
claimed here.

>>> k = guillotine_problem(10, seed=1, width=1024, horizon=16)
>>> k.problem.n, k.optimum
(10, 1024)
>>> from planners import check_plan, lower_bound
>>> check_plan(k.problem, k.offsets, capacity=k.optimum); lower_bound(k.problem)
1024
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .errors import ProblemError
from .model import Problem

__all__ = ["KnownOptimum", "KINDS", "known_optimum_problem", "guillotine_problem",
           "pinwheel_problem", "MAX_BUFFERS"]

#: The tilings this module builds (:func:`known_optimum_problem`'s ``kind``).
KINDS = ("guillotine", "pinwheel")

#: Largest ``n`` accepted (the issue's range is 10 to 10**5; beyond it the pure-Python cutting
#: loop takes more than a few seconds).
MAX_BUFFERS = 10**6


@dataclass(frozen=True, eq=False)
class KnownOptimum:
    """A problem with its proved optimum arena and a plan that attains it.

    Attributes
    ----------
    problem : Problem
        ``n`` activation buffers, ids ``"0" .. "n-1"`` in a seeded random order, half-open
        lifetimes ``[start, end)`` in schedule steps, sizes in bytes, alignment 1, no capacity.
    optimum : int
        The minimum arena of ``problem`` in bytes (``= width``; proved in the module docstring).
    offsets : numpy.ndarray of int64, shape ``(n,)``
        The construction's offsets (bytes), a valid plan of ``problem`` whose arena is
        ``optimum``.
    kind : str
        ``"guillotine"`` or ``"pinwheel"``.
    width, horizon : int
        The strip: ``width`` bytes by ``horizon`` steps; every step has ``width`` live bytes.
    seed : int
        The seed of ``numpy.random.default_rng`` that built it.
    pinwheels : int
        Pinwheel cuts made (0 for ``guillotine``).
    """

    problem: Problem
    optimum: int
    offsets: np.ndarray
    kind: str
    width: int
    horizon: int
    seed: int
    pinwheels: int = 0


def _check_int(value, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProblemError(f"known-optimum problem: {what} must be an integer, got {value!r}")
    if int(value) < low:
        raise ProblemError(f"known-optimum problem: {what} must be >= {low}, got {value}")
    return int(value)


def _guillotine(tile, rng, min_size, min_duration, width, horizon):
    """Two rectangles tiling ``tile = (start, end, offset, size)`` (one straight cut), or
    ``None`` when neither side is long enough for two pieces of the minimum extents."""
    t0, t1, b0, s = tile
    dur = t1 - t0
    can_t = dur >= 2 * min_duration
    can_b = s >= 2 * min_size
    if not (can_t or can_b):
        return None
    if can_t and can_b:  # cut the longer side (relative to the strip) more often
        rel_t, rel_b = dur / horizon, s / width
        across_time = rng.random() < rel_t / (rel_t + rel_b)
    else:
        across_time = can_t
    if across_time:
        c = int(rng.integers(t0 + min_duration, t1 - min_duration + 1))
        return [(t0, c, b0, s), (c, t1, b0, s)]
    c = int(rng.integers(min_size, s - min_size + 1))
    return [(t0, t1, b0, c), (t0, t1, b0 + c, s - c)]


def _pinwheel(tile, rng, min_size, min_duration):
    """Five rectangles tiling ``tile``: a centre ringed by four blades, or ``None`` when the
    tile is below ``3 x`` the minimum duration or size. Blade thickness ``p`` steps, ``q`` bytes:
    bottom ``[t0, t1-p) x [b0, b0+q)``, right ``[t1-p, t1) x [b0, b1-q)``, top
    ``[t0+p, t1) x [b1-q, b1)``, left ``[t0, t0+p) x [b0+q, b1)``, centre
    ``[t0+p, t1-p) x [b0+q, b1-q)``; mirrored in time with probability 1/2."""
    t0, t1, b0, s = tile
    dur = t1 - t0
    if dur < 3 * min_duration or s < 3 * min_size:
        return None
    p = int(rng.integers(min_duration, (dur - min_duration) // 2 + 1))
    q = int(rng.integers(min_size, (s - min_size) // 2 + 1))
    b1 = b0 + s
    pieces = [(t0, t1 - p, b0, q), (t1 - p, t1, b0, s - q), (t0 + p, t1, b1 - q, q),
              (t0, t0 + p, b0 + q, s - q), (t0 + p, t1 - p, b0 + q, s - 2 * q)]
    if rng.random() < 0.5:
        pieces = [(t0 + t1 - e, t0 + t1 - a, o, z) for a, e, o, z in pieces]
    return pieces


def _check_tiling(tiles: np.ndarray, width: int, horizon: int) -> None:
    """Raise :class:`ProblemError` unless the rectangles lie inside the strip, are non-empty
    and their areas sum to ``width x horizon`` (disjointness is checked by
    :func:`planners.validate.check_plan` on the known plan)."""
    starts, ends, offs, sizes = tiles.T
    if (starts < 0).any() or (ends > horizon).any() or (ends <= starts).any() \
            or (offs < 0).any() or (sizes < 1).any() or (offs + sizes > width).any():
        raise ProblemError("known-optimum problem: a rectangle lies outside the strip")
    area = sum(int(d) * int(z) for d, z in zip((ends - starts).tolist(), sizes.tolist()))
    if area != width * horizon:
        raise ProblemError(f"known-optimum problem: the rectangles' area {area} is not the "
                           f"strip's {width} x {horizon}")


def known_optimum_problem(kind: str, n: int, seed: int = 0, *, width: int = 1 << 20,
                          horizon: int | None = None, min_size: int = 1,
                          min_duration: int = 1, granule: int = 1,
                          name: str | None = None) -> KnownOptimum:
    """A seeded problem of ``n`` buffers tiling a ``width x horizon`` strip, with its optimum.

    Parameters
    ----------
    kind : {"guillotine", "pinwheel"}
        How the strip is cut (module docstring).
    n : int
        Number of buffers (``1 <= n <= MAX_BUFFERS``).
    seed : int
        Seed of ``numpy.random.default_rng``; equal arguments give an identical result.
    width : int, default 1 MiB
        The strip's width in bytes, which is the optimum arena; a multiple of ``granule``.
    horizon : int or None
        The strip's length in schedule steps; default ``max(n, 16)``.
    min_size : int, default 1
        Smallest buffer size, in units of ``granule`` bytes.
    min_duration : int, default 1
        Smallest lifetime ``end - start``, in schedule steps.
    granule : int, default 1
        Every size and known offset is a multiple of ``granule`` bytes (the problem's alignment
        stays 1).
    name : str or None
        Problem name; default ``"{kind}-n{n}-s{seed}"``.

    Returns
    -------
    KnownOptimum
        The problem, ``optimum == width`` bytes, the known plan's offsets and the strip.

    Raises
    ------
    ProblemError
        An unknown ``kind``, ``n``, ``width``, ``horizon``, ``min_size``, ``min_duration`` or
        ``granule`` out of range, a ``width`` that is not a multiple of ``granule``, or a strip
        too small to be cut into ``n`` rectangles of the minimum extents (for ``pinwheel``: too
        small to seat the pinwheels), or a failed self-check of the tiling (never expected).

    Notes
    -----
    ``O(n log n)`` time. The proof that ``width`` is the optimum is in the module docstring;
    :func:`planners.validate.check_plan` re-checks the known plan (no two buffers live at the
    same step overlap) before it is returned, so together with the area check the tiling is
    verified, not assumed.
    """
    if kind not in KINDS:
        raise ProblemError(f"known-optimum problem: unknown kind {kind!r}; one of {KINDS}")
    n = _check_int(n, "n", 1)
    if n > MAX_BUFFERS:
        raise ProblemError(f"known-optimum problem: n must be <= {MAX_BUFFERS}, got {n}")
    granule = _check_int(granule, "granule", 1)
    width = _check_int(width, "width", 1)
    if width % granule:
        raise ProblemError(f"known-optimum problem: width {width} is not a multiple of the "
                           f"granule {granule}")
    horizon = max(n, 16) if horizon is None else _check_int(horizon, "horizon", 1)
    min_size = _check_int(min_size, "min_size", 1)
    min_duration = _check_int(min_duration, "min_duration", 1)
    units = width // granule
    rng = np.random.default_rng(seed)
    pinwheel = kind == "pinwheel"

    # The exponential race over open rectangles (sizes in granules): pop the smallest key.
    counter = 0
    heap = [(0.0, counter, (0, horizon, 0, units))]
    leaves: list[tuple[int, int, int, int]] = []
    count, pinwheels = 1, 0
    while count < n:
        if not heap:
            raise ProblemError(
                f"known-optimum problem: a {width} B x {horizon}-step strip cannot be cut into "
                f"{n} {kind} rectangles of at least {min_size * granule} B x {min_duration} "
                f"steps (reached {count}); enlarge width or horizon")
        clock, _, tile = heapq.heappop(heap)
        need = n - count
        pieces = None
        if pinwheel and need >= 4:
            pieces = _pinwheel(tile, rng, min_size, min_duration)
            pinwheels += pieces is not None
        else:
            pieces = _guillotine(tile, rng, min_size, min_duration, units, horizon)
        if pieces is None:
            leaves.append(tile)
            continue
        count += len(pieces) - 1
        for piece in pieces:
            counter += 1
            area = (piece[1] - piece[0]) / horizon * (piece[3] / units)
            heapq.heappush(heap, (clock + float(rng.exponential()) / area, counter, piece))
    leaves.extend(t for _, _, t in heap)
    tiles = np.array(leaves, dtype=np.int64).reshape(-1, 4)
    tiles[:, 2:] *= granule
    tiles = tiles[rng.permutation(len(tiles))]
    _check_tiling(tiles, width, horizon)
    problem = Problem.from_arrays(tiles[:, 0], tiles[:, 1], tiles[:, 3],
                                  name=name or f"{kind}-n{n}-s{seed}")
    offsets = np.ascontiguousarray(tiles[:, 2])
    from .validate import check_plan  # the independent validator, shared by no planner

    check_plan(problem, offsets, capacity=width)
    offsets.setflags(write=False)
    return KnownOptimum(problem, width, offsets, kind, width, horizon, int(seed), pinwheels)


def guillotine_problem(n: int, seed: int = 0, **kw) -> KnownOptimum:
    """:func:`known_optimum_problem` with ``kind="guillotine"``: the strip cut recursively by
    straight lines (time steps or addresses). Same parameters (``width`` bytes, ``horizon``
    steps, ...), return value and errors."""
    return known_optimum_problem("guillotine", n, seed, **kw)


def pinwheel_problem(n: int, seed: int = 0, **kw) -> KnownOptimum:
    """:func:`known_optimum_problem` with ``kind="pinwheel"``: the strip cut recursively into
    five-piece pinwheels, so no straight line cuts it (non-guillotine). Same parameters
    (``width`` bytes, ``horizon`` steps, ...), return value and errors; the strip must be at
    least ``3 x min_size x granule`` bytes by ``3 x min_duration`` steps when ``n >= 5``."""
    return known_optimum_problem("pinwheel", n, seed, **kw)
