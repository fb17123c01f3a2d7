"""``tflm_greedy``: TFLite Micro's ``GreedyMemoryPlanner``, order, tie-breaks and placement exactly.

A reproduction of ``GreedyMemoryPlanner::CalculateOffsetsIfNeeded`` and ``ReverseSortInPlace``
(tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc, tflite-micro):

* **Order.** The buffers are copied into the sort arrays from the tail, so buffer ``i`` of ``n``
  lands at position ``n - 1 - i`` (reverse problem order), then ``ReverseSortInPlace`` bubble-sorts
  them by size, largest first, swapping only when strictly smaller: a stable sort. So buffers are
  placed largest first and, among equal sizes, the **later** buffer (higher problem index) first
  (:func:`tflm_order`). This differs from ``greedy_by_size``, which breaks ties by earlier start
  and then problem order.
* **Placement.** The first buffer goes to offset 0. Every next buffer scans the placed buffers
  that overlap it in time, in order of increasing offset (ties: the one placed earlier first, as
  the offset-ordered linked list inserts a new entry after entries of the same offset), keeping
  ``candidate = max(candidate, prior.offset + prior.size)``; it takes the first ``candidate`` whose
  gap up to the next overlapping buffer's offset is ``>= size``, else the top of the last one
  (``NextSimultaneouslyActiveBuffer``). Two buffers overlap in time unless one's first use is
  after the other's last use (closed ``[first_time_used, last_time_used]``, which is exactly the
  half-open ``[start, end)`` overlap of :mod:`planners.model` with ``end = last + 1``).

TFLite Micro's ``CreatePlan`` (micro_allocator.cc) rounds every size up to 16 bytes first, so
every offset it computes is a multiple of 16. Here a candidate offset is additionally rounded up to
the buffer's alignment, which changes nothing when sizes are multiples of the alignment (the TFLM
case) and keeps plans of other problems valid. Zero-size buffers (TFLM never adds them:
``needs_allocating`` is false) are put at offset 0 and take no part in placement. Offline-planned
offsets (``AddBuffer`` with an offset) are not represented in a :class:`planners.model.Problem` and
are not supported.

Pinned by the vectors of TFLM's own greedy_memory_planner_test.cc (tests/test_tflm_greedy.py).
TFLM's own loops are ``O(n^2)`` (bubble sort, linked-list scans). The placement rule above is the
lowest aligned offset free of every time-overlapping placed buffer, which is exactly the first-fit
rule of :func:`planners.greedy.greedy_offsets`, so the order is computed with a stable numpy sort
(``O(n log n)``) and the buffers are placed by the shared greedy engine (compiled core when built,
``O(n log n + E)`` for ``E`` interfering pairs); ``O(n)`` memory.
"""

from __future__ import annotations

import numpy as np

from .base import Planner, SolveResult
from .greedy import greedy_offsets
from .model import Buffer, Problem

__all__ = ["TflmGreedy", "tflm_order", "tflm_greedy_offsets"]


def tflm_order(sizes) -> list[int]:
    """The order in which TFLM's GreedyMemoryPlanner places buffers of ``sizes`` (bytes, in the
    order they were added): largest first, ties by **higher** index first.

    Equal to ``ReverseSortInPlace`` (a stable descending bubble sort) applied to the buffers in
    reverse order of addition (greedy_memory_planner.cc ``CalculateOffsetsIfNeeded``).

    >>> tflm_order([10, 20, 20, 5])
    [2, 1, 0, 3]
    """
    return _order(np.asarray(sizes, dtype=np.int64).reshape(-1)).tolist()


def _order(sizes: np.ndarray) -> np.ndarray:
    """:func:`tflm_order` on an int64 array: ``lexsort`` keys (higher index, then larger size)."""
    idx = np.arange(sizes.size, dtype=np.int64)
    return np.lexsort((-idx, -sizes)).astype(np.int64)


def _tflm_order_of(problem: Problem) -> np.ndarray:
    return _order(problem.sizes)


def tflm_greedy_offsets(sizes, firsts, lasts, alignments=None) -> list[int]:
    """Offsets (bytes) TFLM's GreedyMemoryPlanner gives buffers with ``sizes`` (bytes) and closed
    lifetimes ``[firsts[i], lasts[i]]`` (allocation scopes), in order of addition.

    ``alignments``: optional per-buffer alignment (bytes) each offset is rounded up to (TFLM has
    none; its sizes are multiples of 16). Zero-size buffers get offset 0 and are not placed. See
    the module docstring for the rules (greedy_memory_planner.cc). Raises
    :class:`planners.errors.ProblemError` for a negative size or ``first > last``.

    >>> tflm_greedy_offsets([10, 20, 30, 40, 50], [0, 1, 2, 3, 0], [1, 2, 3, 4, 1])
    [50, 70, 40, 0, 0]
    """
    n = len(sizes)
    align = [1] * n if alignments is None else [int(a) for a in alignments]
    p = Problem([Buffer(f"b{i}", int(firsts[i]), int(lasts[i]) + 1, int(sizes[i]),
                        alignment=align[i]) for i in range(n)])
    return greedy_offsets(p, _tflm_order_of, "first").tolist()


class TflmGreedy(Planner):
    """TFLite Micro's ``GreedyMemoryPlanner`` (greedy_memory_planner.cc): largest first with ties
    to the later buffer, first gap among time-overlapping buffers in offset order. No parameters.

    The arena of a problem built from TFLM's own lifetimes
    (:func:`experiments.runtimes.tflm.oracle.tflm_head_problem`) is the head TFLM reports; see the module
    docstring for the exact rules and the one extension (alignment rounding).
    """

    name = "tflm_greedy"
    family = "greedy"
    _parameter_constraints: dict = {}  # no parameters

    def _solve(self, problem: Problem) -> SolveResult:
        return SolveResult(greedy_offsets(problem, _tflm_order_of, "first"), "heuristic")
