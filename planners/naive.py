"""``naive``: no reuse at all. Buffers are stacked in problem order at aligned offsets.

The arena equals :func:`planners.bounds.naive_arena` (sum of aligned sizes) when every buffer's
alignment divides the next offset; it is the "static full allocation" baseline of seed 001 section 1.
Runs in ``O(n)``.
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
        offsets = np.zeros(problem.n, np.int64)
        top = 0
        for i, (size, align) in enumerate(
            zip(problem.sizes.tolist(), problem.alignments.tolist())
        ):
            top = -(-top // align) * align
            offsets[i] = top
            top += size
        return SolveResult(offsets, "heuristic")
