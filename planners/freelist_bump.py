"""``freelist_bump``: the online freelist + bump pool of seed 001 section 3, simulated in schedule order.

Seed 001 section 3 (``tensor_alloc`` / ``tensor_free``) keeps a bump pointer and a freelist of
released blocks. This planner replays it over the schedule: at each step ``t`` it first frees every
buffer whose half-open lifetime ``[start, end)`` ended (``end <= t``, in order of ``end`` then
problem order), then allocates every buffer that starts at ``t`` (problem order):

* the request is the size rounded up to the granule (16 bytes in the seed, for SIMD loads; here the
  least common multiple of ``granule`` and every buffer's alignment, so offsets stay aligned);
* **best fit** over the freelist: the smallest free block whose size is ``>=`` the request, ties to
  the block freed first (the lowest freelist index of the seed's linear scan; the seed's compaction
  keeps that order, so it never changes the result);
* the reused block keeps its own (possibly larger) size, there is **no coalescing** of neighbours;
* when no block fits, **bump**: the buffer goes at the bump pointer, which grows by the request.

A freed block re-enters the freelist with the block's size; a block in use is never handed out twice,
so reused blocks never overlap live buffers (checked by :func:`planners.validate.check_plan` like every
plan). Zero-size buffers get offset 0 and never touch the pool. The problem's capacity is not used
(a plan above it gets status ``over_capacity``).

The freelist is a list kept sorted by ``(block size, free sequence number)``, so best fit is a binary
search: ``O(n log n)`` comparisons plus list insertions (memmove) over ``n`` buffers.

The simulation runs on Python integers. Rounding every request up to the granule can take the bump
pointer beyond the problem's worst-case arena; when it passes ``2**63 - 1`` bytes (the int64 range
of offsets, see :mod:`planners.model`) the planner raises one :class:`ProblemError` instead of
returning wrapped offsets.

References
----------
Seed 001 section 3, ``freelist_find_best_fit``, ``tensor_alloc``, ``tensor_free``,
``freelist_compact``. The RV64 C core of the same name is in ``experiments/rv64/cores.c``.
"""

from __future__ import annotations

import bisect
import math
from numbers import Integral

import numpy as np

from .base import Planner, SolveResult
from .errors import ProblemError
from .model import INT64_MAX, Problem
from .params import Interval, param_rules

__all__ = ["FreelistBump", "freelist_granule"]


#: The rule of the request granule (bytes), shared by :func:`freelist_granule` and the planner.
GRANULE_RULES = {"granule": [Interval(Integral, 1, None)]}


@param_rules(GRANULE_RULES)
def freelist_granule(problem: Problem, granule: int = 16) -> int:
    """Request rounding in bytes: ``lcm(granule, alignment of every non-empty buffer)``.

    Raises :class:`planners.errors.ParameterError` when ``granule`` is not an int ``>= 1``.
    """
    g = int(granule)
    for a in np.unique(problem.alignments[problem.sizes > 0]).tolist():
        g = math.lcm(g, int(a))
    return g


class FreelistBump(Planner):
    """Online freelist (best fit, no coalescing) + bump pool of seed 001 section 3.

    Parameters
    ----------
    granule : int, default 16
        Requests are rounded up to a multiple of this many bytes (and of every alignment).

    Raises
    ------
    ParameterError
        (from :meth:`plan`) ``granule`` not an int ``>= 1``.
    ProblemError
        The bump pointer (bytes) exceeds ``2**63 - 1``, the largest offset int64 represents.

    Examples
    --------
    >>> from planners import Problem
    >>> p = Problem.from_arrays([0, 0, 1, 2], [1, 2, 3, 3], [100, 40, 64, 30])
    >>> FreelistBump().plan(p).offsets.tolist()
    [0, 112, 0, 112]
    """

    name = "freelist_bump"
    #: An online allocator simulated offline (not one of the order x fit greedy planners).
    family = "online"

    _parameter_constraints = GRANULE_RULES

    def __init__(self, granule: int = 16) -> None:
        self.granule = granule

    def _solve(self, problem: Problem) -> SolveResult:
        g = freelist_granule(problem, self.granule)
        n = problem.n
        starts, ends, sizes = problem.starts, problem.ends, problem.sizes
        alloc_order = np.lexsort((np.arange(n), starts)).tolist()
        free_order = np.lexsort((np.arange(n), ends)).tolist()
        st, en, sz = starts.tolist(), ends.tolist(), sizes.tolist()
        offsets = [0] * n
        block = [0] * n  # size of the block each buffer holds
        free: list[tuple[int, int, int]] = []  # (block size, sequence, offset), sorted
        seq = bump = reused = f = 0
        for c in alloc_order:
            t = st[c]
            while f < n and en[free_order[f]] <= t:
                d = free_order[f]
                f += 1
                if sz[d]:
                    bisect.insort(free, (block[d], seq, offsets[d]))
                    seq += 1
            if not sz[c]:
                continue
            req = -(-sz[c] // g) * g
            k = bisect.bisect_left(free, (req, -1, -1))
            if k < len(free):
                bsize, _, off = free.pop(k)
                offsets[c], block[c] = off, bsize
                reused += 1
            else:
                offsets[c], block[c] = bump, req
                bump += req
        if bump > INT64_MAX:
            raise ProblemError(
                f"freelist_bump: problem {problem.name!r}: the bump pointer reaches {bump} bytes "
                f"(requests rounded up to the granule {g} bytes), above 2**63 - 1 = {INT64_MAX} "
                "bytes, the largest offset int64 represents"
            )
        return SolveResult(
            np.asarray(offsets, np.int64),
            "heuristic",
            info={"bump": bump, "reused": reused, "granule": g},
        )
