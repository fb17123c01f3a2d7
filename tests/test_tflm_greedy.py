"""``tflm_greedy`` against the vectors of TFLite Micro's own greedy_memory_planner_test.cc
(tensorflow/lite/micro/memory_planner/, tflite-micro): data transcribed, expectations as there."""

from __future__ import annotations

from planners import Buffer, Problem, plan
from planners.tflm_greedy import tflm_greedy_offsets, tflm_order


def _problem(reqs):
    """``AddBuffer(size, first_time_used, last_time_used)`` calls -> a Problem (closed -> half-open)."""
    return Problem([Buffer(f"b{i}", f, last + 1, size) for i, (size, f, last) in enumerate(reqs)])


def test_reverse_sort_in_place_vectors():
    # TestReverseSortInPlace: the planner reverses the buffers before ReverseSortInPlace, so the
    # test's "ids" in input order map to buffers added in reverse; tflm_order(sizes) returns the
    # placement order of buffers in the order of addition.
    a = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]
    assert tflm_order(a) == list(range(10))
    b = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert tflm_order(b) == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    # c: ten copies of 1..10; ReverseSortInPlace on ids 0..99 (as given) yields for value 10 the
    # ids 9, 19, ..., 99 (stable). Our buffers are added in the reverse of the sort array, so
    # buffer k sits at sort position 99 - k: map the expected ids back.
    c_values = [v for _ in range(10) for v in range(1, 11)]
    expected_ids = [v - 1 + 10 * r for v in range(10, 0, -1) for r in range(10)]
    added = c_values[::-1]  # sort position p holds buffer 99 - p
    assert [99 - k for k in tflm_order(added)] == expected_ids


def test_greedy_basics():
    p = _problem([(10, 0, 1), (20, 2, 3)])
    r = plan(p, "tflm_greedy")
    assert r.arena_size == 20 and r.offsets.tolist() == [0, 0]


def test_greedy_medium():
    p = _problem([(10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1)])
    r = plan(p, "tflm_greedy")
    assert r.offsets.tolist() == [50, 70, 40, 0, 0]
    assert r.arena_size == 90


def test_overlap_case():
    r = plan(_problem([(100, 0, 1), (50, 2, 3), (20, 1, 2)]), "tflm_greedy")
    assert r.arena_size == 120


def test_person_detection_model():
    reqs = [(9216, 0, 29), (3, 28, 29), (256, 27, 28), (2304, 26, 27), (2304, 25, 26),
            (2304, 24, 25), (1152, 23, 24), (4608, 22, 23), (4608, 21, 22), (4608, 20, 21),
            (4608, 19, 20), (4608, 18, 19), (4608, 17, 18), (4608, 16, 17), (4608, 15, 16),
            (4608, 14, 15), (4608, 13, 14), (4608, 12, 13), (2304, 11, 12), (9216, 10, 11),
            (9216, 9, 10), (9216, 8, 9), (4608, 7, 8), (18432, 6, 7), (18432, 5, 6),
            (18432, 4, 5), (9216, 3, 4), (36864, 2, 3), (18432, 1, 2), (18432, 0, 1)]
    r = plan(_problem(reqs), "tflm_greedy")  # valid (the validator runs in plan) and
    assert r.arena_size < 241027  # "smaller than the sum of all the buffers", as the TFLM test


def test_ties_go_to_the_later_buffer_unlike_greedy_by_size():
    # three equal buffers: a and b overlap, c overlaps only b. TFLM places c first (highest
    # index), then b above it, then a at 0: arena 32 either way, but the offsets differ.
    p = Problem([Buffer("a", 0, 2, 16), Buffer("b", 1, 3, 16), Buffer("c", 2, 3, 16)])
    assert plan(p, "tflm_greedy").offsets.tolist() == [0, 16, 0]
    assert tflm_order([16, 16, 16]) == [2, 1, 0]


def test_alignment_and_zero_size():
    p = Problem([Buffer("a", 0, 2, 10), Buffer("z", 0, 2, 0), Buffer("b", 1, 3, 10)],
                alignment=16)
    r = plan(p, "tflm_greedy")
    assert r.offsets.tolist() == [16, 0, 0] and r.arena_size == 26
    assert tflm_greedy_offsets([10, 0, 10], [0, 0, 1], [1, 1, 2]) == [10, 0, 0]
