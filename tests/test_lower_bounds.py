"""Tests of ``planners.lower_bounds``: hand-checked bounds strictly above max live bytes, and the
property that every bound is at most the optimum (brute force, independent of the planners)."""

from __future__ import annotations

import numpy as np
from conftest import examples
from hypothesis import given, settings
from test_exact_search import aligned_gap, brute_force_optimum, greedy_trap, small_problems

from planners import Buffer, Problem, lower_bound
from planners.lower_bounds import (
    best_lower_bound,
    cpsat_bound,
    subset_bound,
    subset_problem,
    window_bound,
    window_problem,
)


def test_alignment_one_step_window_beats_max_live():
    # a 1 B, b and c 2 B aligned to 4, all live at step 0: max live 5; b and c need two distinct
    # multiples of 4, so one of them ends at >= 6 (hand-checked), and a fits in a gap: optimum 6.
    p = Problem(
        [Buffer("a", 0, 1, 1), Buffer("b", 0, 1, 2, alignment=4), Buffer("c", 0, 1, 2, alignment=4)]
    )
    assert lower_bound(p) == 5
    lb = best_lower_bound(p)
    assert lb.value == 6 and lb.source == "windows" and lb.values["max_live"] == 5
    assert brute_force_optimum(p) == 6


def test_aligned_gap_bound_is_the_optimum():
    # k 2 B buffers aligned to 4 and k 1 B buffers: max live 3k, optimum 4(k-1) + 2 (hand-checked
    # in test_exact_search.aligned_gap).
    for k, opt in ((3, 10), (4, 14)):
        p = aligned_gap(k)
        assert lower_bound(p) == 3 * k
        lb = best_lower_bound(p)
        assert lb.value == opt and lb.source == "windows"


def test_switches_and_no_gain_without_alignment():
    p = greedy_trap()  # optimum = max live = 10
    assert best_lower_bound(p).value == 10
    assert best_lower_bound(p).source == "max_live"
    q = aligned_gap(3)
    off = best_lower_bound(q, windows=False, subsets=False)
    assert off.value == 9 and off.source == "max_live" and "windows" not in off.values
    assert "subsets" not in off.values and "cpsat" not in off.values
    assert best_lower_bound(q, max_live=False).value == 10


def test_quantum_rounding():
    # sizes 1536 and 1024 live together: 2560 is already a multiple of gcd 512
    p = Problem.from_arrays([0, 0, 1], [1, 2, 2], [1536, 1024, 512])
    lb = best_lower_bound(p, windows=False)
    assert lb.info["quantum"] == 512 and lb.value == 2560


def test_window_problem_is_a_relaxation():
    p = Problem.from_arrays([0, 1, 2], [2, 3, 4], [1, 2, 3])
    sub, idx = window_problem(p, 1, 1)  # section 1 = step [2, 3): buffers 1 and 2 live there
    assert idx.tolist() == [1, 2]
    assert sub.starts.tolist() == [0, 0] and sub.ends.tolist() == [1, 1]
    assert sub.sizes.tolist() == [2, 3]


def test_window_bound_respects_ceiling_and_time():
    p = aligned_gap(4)
    b, info = window_bound(p, ceiling=13)  # no probe at or above 13: only 12 is tried
    assert b == 13 and info["proofs"] == 1  # 12 proved infeasible; 13 is never probed
    b0, _ = window_bound(p, time_limit=1e-6)
    assert b0 == 12  # no time: the floor itself


@settings(max_examples=examples(40), deadline=None)
@given(small_problems())
def test_bound_never_exceeds_the_optimum(p):
    opt = brute_force_optimum(p)
    lb = best_lower_bound(p, time_limit=10)
    assert lower_bound(p) <= lb.value <= opt
    assert lb.value % lb.info["quantum"] == 0


def test_real_D_bound_is_proved(tmp_path):
    from conftest import shared_path

    from planners.io import read_minimalloc_csv

    p = read_minimalloc_csv(shared_path("benchmarks", "minimalloc", "D.1048576.csv"))
    lb = best_lower_bound(p, time_limit=5, window_params={"widths": (8,), "max_windows": 4})
    assert lb.value >= 986112 and lb.value % 1024 == 0
    assert np.isfinite(lb.info["seconds"])


def test_subset_bound_beats_max_live_on_the_largest_buffers():
    # aligned_gap(3): three 2 B buffers aligned to 4 (largest first) and three 1 B ones, one step.
    # Max live 9. The half kept first (the three aligned ones) needs offsets 0, 4, 8: optimum 10
    # (hand-checked), so 9 is infeasible for them and for the whole; 10 is the whole's optimum.
    p = aligned_gap(3)
    b, info = subset_bound(p)
    assert b == 10 and info["subset"] == 0.5
    assert brute_force_optimum(p) == 10
    lb = best_lower_bound(p, windows=False)
    assert lb.value == 10 and lb.source == "subsets" and lb.values["max_live"] == 9
    sub = subset_problem(p, np.array([0, 1, 2]))
    assert sub.n == 3 and sub.alignments.tolist() == [4, 4, 4] and sub.sizes.tolist() == [2, 2, 2]


def test_subset_bound_respects_ceiling():
    p = aligned_gap(3)
    b, info = subset_bound(p, ceiling=9)  # no probe at or above 9
    assert b == 9 and info["probes"] == 0


def test_cpsat_bound_beats_max_live():
    # aligned_gap(4): max live 12, optimum 14 (hand-checked); CP-SAT proves it in well under a
    # second on this size.
    p = aligned_gap(4)
    b, info = cpsat_bound(p, time_limit=20)
    assert b == 14 and info["solver_status"] == "OPTIMAL" and info["arena"] == 14
    lb = best_lower_bound(p, windows=False, subsets=False, cpsat=True, time_limit=20)
    assert lb.value == 14 and lb.source == "cpsat"


@settings(max_examples=examples(25), deadline=None)
@given(small_problems())
def test_subset_and_cpsat_bounds_never_exceed_the_optimum(p):
    opt = brute_force_optimum(p)
    b, _ = subset_bound(p, time_limit=10)
    assert lower_bound(p) <= b <= opt
    c, _ = cpsat_bound(p, time_limit=10)
    assert lower_bound(p) <= c <= opt
