"""The seed 001 section 3 freelist + bump pool as a planner (planners.freelist_bump)."""

from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners import (
    Buffer,
    ParameterError,
    Problem,
    check_plan,
    get_planner,
    lower_bound,
    plan,
)
from planners.freelist_bump import FreelistBump, freelist_granule


def test_registered():
    assert isinstance(get_planner("freelist_bump"), FreelistBump)
    assert get_planner("freelist_bump", granule=32).granule == 32


def test_hand_checked_best_fit_bump_and_no_coalescing():
    # step 0: a(100->112) bump@0, b(40->48) bump@112, bump=160
    # step 1: free a -> freelist [(112 @0)]; c(64) best fit: block of 112 at 0 (keeps size 112)
    # step 2: free b -> [(48 @112)]; d(30->32) best fit 48 @112
    p = Problem.from_arrays([0, 0, 1, 2], [1, 2, 3, 3], [100, 40, 64, 30])
    pl = plan(p, "freelist_bump")
    assert pl.offsets.tolist() == [0, 112, 0, 112]
    assert pl.info["bump"] == 160 and pl.info["reused"] == 2


def test_no_coalescing_of_neighbouring_free_blocks():
    # two 32-byte neighbours freed at step 1 cannot hold a 64-byte request: it bumps to 64
    p = Problem.from_arrays([0, 0, 1], [1, 1, 2], [32, 32, 64])
    assert plan(p, "freelist_bump").offsets.tolist() == [0, 32, 64]


def test_best_fit_prefers_smallest_block_then_earliest_freed():
    # blocks freed at step 1: 64 @0, 32 @64, 32 @96; request 20 -> 32, the first freed (@64)
    p = Problem.from_arrays([0, 0, 0, 1], [1, 1, 1, 2], [64, 32, 32, 20])
    assert plan(p, "freelist_bump").offsets.tolist() == [0, 64, 96, 64]


def test_reused_block_is_not_handed_out_twice():
    # one freed block of 48; two requests at step 1: the second must bump
    p = Problem.from_arrays([0, 1, 1], [1, 2, 2], [48, 16, 16])
    assert plan(p, "freelist_bump").offsets.tolist() == [0, 0, 48]


def test_granule_takes_alignment_into_account():
    p = Problem([Buffer("a", 0, 1, 10, alignment=64), Buffer("b", 0, 1, 10)], alignment=1)
    assert freelist_granule(p) == 64
    assert plan(p, "freelist_bump").offsets.tolist() == [0, 64]
    with pytest.raises(ParameterError, match="granule"):
        plan(p, "freelist_bump", granule=0)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(1, 10), st.integers(0, 2000)),
        min_size=0,
        max_size=60,
    ),
    st.sampled_from([1, 16, 32]),
)
def test_random_plans_are_valid(rows, align):
    p = Problem.from_arrays(
        [s for s, _, _ in rows], [s + d for s, d, _ in rows], [z for _, _, z in rows],
        alignment=align,
    )  # fmt: skip
    pl = plan(p, "freelist_bump")  # plan() already validates; check again explicitly
    check_plan(p, pl.offsets)
    assert pl.arena_size >= lower_bound(p)
    assert pl.arena_size <= pl.info["bump"]
