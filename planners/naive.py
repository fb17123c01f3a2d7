"""``naive``: no reuse at all. Buffers are stacked in problem order at aligned offsets.

The arena equals :func:`planners.bounds.naive_arena` (sum of aligned sizes) when every buffer's
alignment divides the next offset; it is the "static full allocation" baseline of seed 001 section 1.
Runs in ``O(n)``: when every buffer has the same alignment ``a`` each offset is a multiple of
``a``, so ``offset_{i+1} = offset_i + round_up(size_i, a)`` and the offsets are one exclusive
prefix sum with numpy; mixed alignments take the loop over Python integers.
"""

from __future__ import annotations

import numpy as np

from .base import Planner, SolveResult
from .model import Problem

__all__ = ["Naive"]


class Naive(Planner):
    """Every buffer gets its own address range (no reuse); ``O(n)``."""

    name = "naive"
    family = "baseline"
    _parameter_constraints: dict = {}  # no parameters

    def _solve(self, problem: Problem) -> SolveResult:
        """Offsets (bytes) in problem order: each buffer at the aligned top of the one before;
        zero-size buffers take no space (module docstring)."""
        aligns = problem.alignments
        if problem.n and int(aligns.min()) == int(aligns.max()):
            a = int(aligns[0])
            # the int64 sums are exact: they are at most sum(round_up(size, a)), below the
            # problem's worst-case arena (<= 2**63 - 1, the range rule of planners.model)
            step = -(-problem.sizes // a) * a
            offsets = np.zeros(problem.n, np.int64)
            np.cumsum(step[:-1], out=offsets[1:])
            return SolveResult(offsets, "heuristic")
        offsets = np.zeros(problem.n, np.int64)
        top = 0
        for i, (size, align) in enumerate(
            zip(problem.sizes.tolist(), problem.alignments.tolist())
        ):
            top = -(-top // align) * align
            offsets[i] = top
            top += size
        return SolveResult(offsets, "heuristic")
