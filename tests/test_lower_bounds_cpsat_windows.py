"""Tests of ``planners.lower_bounds.cpsat_window_bound`` (CP-SAT at a fixed capacity on windows)
and ``scaled_problem``: hand-checked bounds above max live, and the properties that the bound never
exceeds the brute-force optimum and that scaling by the quantum keeps the optimum."""

from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_exact_search import aligned_gap, brute_force_optimum, greedy_trap, small_problems

from planners import Buffer, Problem, lower_bound
from planners.bounds import arena_quantum
from planners.errors import ProblemError
from planners.lower_bounds import best_lower_bound, cpsat_window_bound, scaled_problem


def _times(p: Problem, q: int) -> Problem:
    """``p`` with every size and every alignment above 1 multiplied by ``q``."""
    return Problem([Buffer(b.id, b.start, b.end, b.size * q,
                           alignment=int(a) * q if a > 1 else 1)
                    for b, a in zip(p.buffers, p.alignments)], name=f"{p.name}x{q}")


def test_cpsat_proves_the_aligned_gap_optimum_scaled_by_1024():
    # aligned_gap(4) x 1024: four 2048 B buffers aligned to 4096 and four 1024 B ones at one step.
    # Max live 12288; the aligned ones need four distinct multiples of 4096, so one starts at
    # >= 12288 and ends at >= 14336 (hand-checked, test_exact_search.aligned_gap): optimum 14336.
    p = _times(aligned_gap(4), 1024)
    assert lower_bound(p) == 12 * 1024
    b, info = cpsat_window_bound(p, screen_time_limit=0, time_limit=30, probe_time_limit=10)
    assert b == 14 * 1024
    assert info["window"] == (0, 1)
    # decided by CP-SAT only (no screening): 12288 and 13312 infeasible, 14336 fits
    assert all(entry[5] == "cpsat" for entry in info["log"])
    assert [e[2:4] for e in info["log"]][:2] == [[12288, "infeasible"], [13312, "infeasible"]]
    assert info["statuses"]["infeasible"] == 2
    lb = best_lower_bound(p, windows=False, subsets=False, cpsat_windows=True, time_limit=30,
                          cpsat_window_params={"screen_time_limit": 0})
    assert lb.value == 14 * 1024 and lb.source == "cpsat_windows"
    assert lb.values["max_live"] == 12 * 1024


def test_no_gain_when_max_live_is_the_optimum():
    p = greedy_trap()  # optimum = max live = 10 (test_exact_search)
    b, info = cpsat_window_bound(p, screen_time_limit=0, time_limit=20)
    assert b == 10 == brute_force_optimum(p)
    assert info["window"] is None and "infeasible" not in info["statuses"]


def test_ceiling_and_time_limit_stop_probes():
    p = aligned_gap(4)
    b, info = cpsat_window_bound(p, ceiling=12)
    assert b == 12 and info["probes"] == 0
    b, info = cpsat_window_bound(p, time_limit=1e-6)
    assert b == 12 and info["window"] is None  # no time: the floor, nothing claimed


def test_timeouts_are_reported_not_claimed():
    p = aligned_gap(6)  # max live 18, optimum 22
    b, info = cpsat_window_bound(p, screen_time_limit=0, time_limit=0.05, probe_time_limit=0.05)
    assert 18 <= b <= 22
    assert sum(info["statuses"].values()) == info["probes"] == len(info["log"])


def test_scaled_problem_divides_sizes_and_alignments():
    p = Problem([Buffer("a", 0, 2, 2048, alignment=4096), Buffer("b", 1, 3, 3072),
                 Buffer("z", 0, 1, 0)])
    s, q = scaled_problem(p)
    assert q == 1024
    assert s.sizes.tolist() == [2, 3] and s.alignments.tolist() == [4, 1]
    assert s.starts.tolist() == [0, 1] and s.ends.tolist() == [2, 3]


def test_features_are_refused():
    p = Problem([Buffer("a", 0, 2, 8, offset=0), Buffer("b", 1, 3, 8)])
    with pytest.raises(ProblemError, match="a|features"):
        scaled_problem(p)
    with pytest.raises(ProblemError, match="plain intervals"):
        cpsat_window_bound(p)


@settings(max_examples=examples(25), deadline=None)
@given(small_problems(), st.sampled_from([1, 2, 3, 8]))
def test_scaling_keeps_the_optimum(p, q):
    # differential check of the scaling theorem against brute force: opt(p x q) = q' opt(scaled)
    big = _times(p, q)
    s, qq = scaled_problem(big)
    if s.n == 0:  # nothing has size: no quantum to check
        assert qq == 1
        return
    assert qq % q == 0
    assert brute_force_optimum(big) == qq * brute_force_optimum(s)


@settings(max_examples=examples(25), deadline=None)
@given(small_problems(), st.sampled_from([0.0, 2.0]))
def test_bound_never_exceeds_the_optimum(p, screen):
    opt = brute_force_optimum(p)
    b, info = cpsat_window_bound(p, time_limit=10, probe_time_limit=5, screen_time_limit=screen,
                                 widths=(None, 1, 2, 3))
    assert lower_bound(p) <= b <= opt
    if info["window"] is None:  # nothing proved: the floor rounded up to the quantum
        g = arena_quantum(p)
        assert b == -(-lower_bound(p) // g) * g
