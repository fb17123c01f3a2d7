"""Interval model, lower bound, validator and MiniMalloc CSV I/O."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners import (
    Buffer,
    CapacityError,
    InvalidPlanError,
    Problem,
    ProblemError,
    capacity_from_name,
    check_plan,
    is_valid,
    live_profile,
    lower_bound,
    naive_arena,
    plan,
    read_minimalloc_csv,
    write_minimalloc_csv,
)
from planners.examples import exercise_5_1_problem

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "minimalloc"


def exercise_51() -> Problem:
    # Seed 002 exercise 5.1, closed intervals T1[0,3] 100, T2[1,4] 200, T3[2,5] 150, T4[3,6] 250,
    # T5[4,7] 180.
    return exercise_5_1_problem()


# -- model ----------------------------------------------------------------------------------------
def test_closed_to_half_open():
    b = Buffer.from_closed("t", 2, 5, 64)
    assert (b.start, b.end, b.first_use, b.last_use) == (2, 6, 2, 5)
    assert b.overlaps_in_time(Buffer("u", 5, 7, 1))
    assert not b.overlaps_in_time(Buffer("u", 6, 7, 1))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(id="x", start=0, end=2, size=-1), "size must be >= 0"),
        (dict(id="x", start=3, end=3, size=1), "end > start"),
        (dict(id="x", start=4, end=2, size=1), "end > start"),
        (dict(id="x", start=0, end=2, size=1, alignment=0), "alignment must be >= 1"),
        (dict(id="x", start=0, end=2, size="big"), "size must be an integer"),
        (dict(id="", start=0, end=2, size=1), "non-empty string"),
        (dict(id="x", start=0, end=2, size=1, kind="weird"), "kind must be one of"),
    ],
)
def test_bad_buffers_name_item_and_rule(kwargs, message):
    with pytest.raises(ProblemError, match=message):
        Buffer(**kwargs)


def test_closed_first_after_last_is_an_error():
    with pytest.raises(ProblemError, match=r"buffer 'x'.*first_use <= last_use"):
        Buffer.from_closed("x", 4, 3, 10)


def test_duplicate_ids_rejected():
    with pytest.raises(ProblemError, match="duplicate buffer id 'a'"):
        Problem([Buffer("a", 0, 1, 1), Buffer("a", 1, 2, 1)])


# -- bounds ---------------------------------------------------------------------------------------
def test_exercise_51_bounds():
    p = exercise_51()
    assert lower_bound(p) == 780  # step 4: T2+T3+T4+T5 = 200+150+250+180
    assert naive_arena(p) == 880
    times, live = live_profile(p)
    assert times.tolist() == list(range(9))
    assert live.tolist() == [100, 300, 450, 700, 780, 580, 430, 180, 0]


def test_zero_size_buffers_count_for_nothing():
    p = Problem([Buffer("z", 0, 5, 0), Buffer("a", 0, 2, 8), Buffer("b", 2, 4, 8)])
    assert lower_bound(p) == 8
    check_plan(p, [0, 0, 0])  # zero-size buffer at the same address is fine


def test_alignment_rounding_never_exceeds_achievable():
    # One buffer of 10 bytes with alignment 16 needs only 10 bytes of arena.
    p = Problem([Buffer("a", 0, 1, 10)], alignment=16)
    assert lower_bound(p) == 10
    # Two live together: the lower one is padded to 16.
    p = Problem([Buffer("a", 0, 1, 10), Buffer("b", 0, 1, 10)], alignment=16)
    assert lower_bound(p) == 26
    assert plan(p, "naive").arena_size == 26


# -- validator ------------------------------------------------------------------------------------
def test_validator_names_first_offending_pair():
    p = exercise_51()
    with pytest.raises(InvalidPlanError, match=r"'T1' and 'T2'.*steps \[1, 4\)"):
        check_plan(p, [0, 50, 300, 450, 700])


def test_validator_rules():
    p = Problem([Buffer("a", 0, 2, 16, alignment=16), Buffer("b", 2, 4, 16)])
    check_plan(p, [0, 0])  # touching lifetimes [0,2) and [2,4) do not overlap
    with pytest.raises(InvalidPlanError, match="not a multiple of its alignment 16"):
        check_plan(p, [8, 0])
    with pytest.raises(InvalidPlanError, match="negative"):
        check_plan(p, [0, -16])
    with pytest.raises(InvalidPlanError, match="above the capacity 20"):
        check_plan(p, [0, 16], capacity=20)
    with pytest.raises(InvalidPlanError, match="offsets for 2 buffers"):
        check_plan(p, [0])


def _brute_force_valid(p: Problem, off) -> bool:
    for i, j in itertools.combinations(range(p.n), 2):
        a, b = p.buffers[i], p.buffers[j]
        if a.size == 0 or b.size == 0 or not a.overlaps_in_time(b):
            continue
        if off[i] < off[j] + b.size and off[j] < off[i] + a.size:
            return False
    return True


@st.composite
def problems_with_offsets(draw):
    n = draw(st.integers(1, 12))
    bufs, offs = [], []
    for i in range(n):
        s = draw(st.integers(0, 10))
        e = s + draw(st.integers(1, 6))
        bufs.append(Buffer(f"b{i}", s, e, draw(st.integers(0, 8))))
        offs.append(draw(st.integers(0, 24)))
    return Problem(bufs), offs


@settings(max_examples=examples(300), deadline=None)
@given(problems_with_offsets())
def test_sweep_validator_agrees_with_all_pairs(case):
    p, off = case
    assert is_valid(p, off) == _brute_force_valid(p, off)


def test_capacity_below_lower_bound_is_refused():
    p = exercise_51().with_capacity(779)
    with pytest.raises(CapacityError, match="capacity 779 bytes is below the lower bound 780"):
        plan(p, "naive")


def test_naive_over_capacity_is_reported_not_hidden():
    p = exercise_51().with_capacity(800)
    result = plan(p, "naive")
    assert result.arena_size == 880 and result.status == "over_capacity"


# -- CSV ------------------------------------------------------------------------------------------
def test_csv_round_trip(tmp_path):
    p = Problem(
        [Buffer("a", 0, 3, 10, alignment=4), Buffer("b", 1, 4, 7), Buffer("c", 3, 5, 0)],
        alignment=1,
        name="t",
    )
    result = plan(p, "naive")
    out = tmp_path / "t.csv"
    write_minimalloc_csv(p, out, result)
    q = read_minimalloc_csv(out)
    assert q.ids == p.ids
    assert q.starts.tolist() == [0, 1, 3] and q.ends.tolist() == [3, 4, 5]
    assert q.sizes.tolist() == [10, 7, 0] and q.alignments.tolist() == [4, 1, 1]
    assert out.read_text().splitlines()[0] == "id,lower,upper,size,alignment,offset"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        ("id,lower,upper,size\n", "header only"),
        ("id,lower,size\n0,1,2\n", "lacks column"),
        ("id,lower,upper,size\n0,0,2,x\n", r":2: column 'size' must be an integer"),
        ("id,lower,upper,size\n0,0,2\n", r":2: missing value for column 'size'"),
        ("id,lower,upper,size\n0,0,2,-5\n", r":2: buffer '0': size must be >= 0"),
        ("id,lower,upper,size\n0,2,2,5\n", r":2: buffer '0': lifetime .* end > start"),
        ("id,lower,upper,size\n0,0,2,5\n0,1,3,5\n", r":3: .*duplicate|duplicate buffer id '0'"),
    ],
)
def test_bad_csv(tmp_path, text, message):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(ProblemError, match=message):
        read_minimalloc_csv(f)


def test_capacity_from_name():
    assert capacity_from_name("A.1048576.csv") == 1048576
    assert capacity_from_name("input.12.csv") == 12
    assert capacity_from_name("model.csv") is None


def test_minimalloc_readme_example():
    f = SHARED / "input.12.csv"
    if not f.exists():
        pytest.skip("../shared/benchmarks/minimalloc is not present in this clone")
    p = read_minimalloc_csv(f)
    assert p.capacity == 12 and p.n == 5
    assert lower_bound(p) <= 12


@pytest.mark.parametrize("name", ["A", "B", "C", "D", "E", "F"])
def test_minimalloc_challenging_files_load(name):
    f = SHARED / f"{name}.1048576.csv"
    if not f.exists():
        pytest.skip("../shared/benchmarks/minimalloc is not present in this clone")
    p = read_minimalloc_csv(f)
    assert p.capacity == 1048576
    assert 150 <= p.n <= 300
    assert np.all(p.ends > p.starts)
    assert lower_bound(p) <= 1048576


def test_lower_bound_with_alignments_that_do_not_divide_each_other():
    # Offsets 0 (alignment 2) and 3 (alignment 3) place two live 3-byte buffers in 6 bytes.
    p = Problem([Buffer("a", 0, 1, 3, alignment=2), Buffer("b", 0, 1, 3, alignment=3)])
    check_plan(p, [0, 3])
    assert lower_bound(p) == 6
    # Alignments 4 and 8 (gcd 4): the lower 3-byte buffer is padded to 4.
    q = Problem([Buffer("a", 0, 1, 3, alignment=4), Buffer("b", 0, 1, 3, alignment=8)])
    assert lower_bound(q) == 7
    check_plan(q, [4, 0])


def test_optimal_means_arena_equals_the_proved_bound():
    from planners import SolveResult

    p = exercise_51()

    def claims_optimal(problem):  # first-fit offsets (arena 880), claiming optimality
        return SolveResult(np.array([0, 100, 300, 450, 700]), "optimal", best_bound=780)

    r = plan(p, claims_optimal)
    assert r.arena_size == 880 and r.status == "feasible"
    assert r.info["solver_claim"] == "optimal"

    def proves_optimal(problem):  # arena 780 = bound 780
        return SolveResult(np.array([0, 180, 380, 530, 0]), "optimal", best_bound=780)

    assert plan(p, proves_optimal).status == "optimal"


def test_out_of_range_values_are_named():
    with pytest.raises(ProblemError, match=r"buffer 'x': size .* out of range"):
        Buffer("x", 0, 1, 10**30)
    with pytest.raises(ProblemError, match=r"capacity .* out of range"):
        Problem([Buffer("x", 0, 1, 1)], capacity=10**30)


# -- array-backed problems, vectorised checks -----------------------------------------------------
@settings(max_examples=examples(200), deadline=None)
@given(problems_with_offsets(), st.integers(1, 5))
def test_vectorised_overlap_test_in_small_blocks_agrees_with_all_pairs(case, block):
    """The numpy pair test of the validator, cut into blocks of a few pairs (rows split across
    blocks, long rows alone), against the brute force over all pairs."""
    import planners.validate as validate

    p, off = case
    old = validate._BLOCK_PAIRS
    validate._BLOCK_PAIRS = block
    try:
        got = validate._overlap_free(p.starts, p.ends, np.asarray(off, np.int64), p.sizes)
    finally:
        validate._BLOCK_PAIRS = old
    assert got == _brute_force_valid(p, off)


def test_validator_fast_test_and_sweep_name_the_same_pair():
    """An overlap found by the vectorised test is named by the sweep: the first pair in sweep
    order, as before."""
    p = Problem.from_arrays([0, 1, 2, 3], [5, 6, 7, 8], [8, 8, 8, 8], ids=["w", "x", "y", "z"])
    with pytest.raises(InvalidPlanError, match=r"buffers 'x' and 'z' are both live in steps \[3, 6\)"):
        check_plan(p, [0, 8, 16, 12])


def _slow_from_arrays(starts, ends, sizes, ids=None, **kw):
    """The buffer-by-buffer construction (the reference of the numpy path)."""
    ids = [str(i) for i in range(len(starts))] if ids is None else ids
    return Problem(
        [Buffer(str(i), int(s), int(e), int(z)) for i, s, e, z in zip(ids, starts, ends, sizes)],
        **kw,
    )


def _outcome(fn):
    try:
        p = fn()
    except ProblemError as e:
        return str(e)
    return (p.ids, p.buffers, p.starts.tolist(), p.ends.tolist(), p.sizes.tolist(),
            p.alignments.tolist(), p.aligned_sizes.tolist(), p.resident.tolist(), p.capacity,
            p.alignment, p.name, dict(p.index))


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_from_arrays_numpy_path_equals_buffer_by_buffer(data):
    """Integer arrays are checked with numpy and stored without Buffer objects; the result (or
    the error message) equals the buffer-by-buffer construction's, including bad values, a
    duplicate id, an empty id, the range rule and a bad capacity."""
    n = data.draw(st.integers(0, 8))
    big = st.sampled_from([2**62 - 1, 2**62, -(2**62), -(2**62) + 1])
    val = st.one_of(st.integers(-3, 12), big)
    starts = data.draw(st.lists(val, min_size=n, max_size=n))
    ends = data.draw(st.lists(val, min_size=n, max_size=n))
    sizes = data.draw(st.lists(val, min_size=n, max_size=n))
    ids = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "", "d7"]),
                                                   min_size=n, max_size=n)))
    kw = {"capacity": data.draw(st.sampled_from([None, 0, 100, -1])),
          "alignment": data.draw(st.sampled_from([1, 8, 0])), "name": "q"}
    arrays = [np.array(v, dtype=np.int64) for v in (starts, ends, sizes)]
    fast = _outcome(lambda: Problem.from_arrays(*arrays, ids=ids, **kw))
    slow = _outcome(lambda: _slow_from_arrays(starts, ends, sizes, ids=ids, **kw))
    assert fast == slow


def test_array_backed_problem_builds_buffers_lazily():
    p = Problem.from_arrays(np.array([0, 1]), np.array([2, 3]), np.array([8, 0]), ids=["a", "b"],
                            alignment=4, name="lazy")
    assert p._buffers is None  # nothing built yet
    assert p.n == len(p) == 2 and p.index == {"a": 0, "b": 1}
    assert p.buffers == (Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 0))
    assert p.buffers[0].alignment is None and p.alignments.tolist() == [4, 4]
    q = p.with_capacity(64)
    assert (q.capacity, q.ids, q.sizes.tolist()) == (64, ["a", "b"], [8, 0])
    with pytest.raises(ProblemError, match="duplicate buffer id 'a' \\(items 0 and 1\\)"):
        Problem.from_arrays(np.array([0, 1]), np.array([2, 3]), np.array([8, 0]), ids=["a", "a"])
    with pytest.raises(ProblemError, match="size must be >= 0 bytes, got -1"):
        Problem.from_arrays(np.array([0, 1]), np.array([2, 3]), np.array([8, -1]))
