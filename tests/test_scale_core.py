"""The O(n log n) planning core (issue #34): the free-list sweep of the greedy C engine, the
compiled overlap sweep of the validator, max live bytes, the vectorised naive planner and the
realistic generator, each against an independent reference.

References: the Python engine (planners.greedy's sorted live list) and the C interval-tree path
for the sweep; an all-pairs double loop and the numpy pair test for the validator; a step-by-step
count for max live bytes; hand-checked vectors. The full differential count runs in
``python -m experiments.bench.scale_differential`` (``make soak``); a sample runs here.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.bench import scale_differential as sd
from planners import Buffer, Problem, get_planner
from planners.bounds import _max_live, _max_live_numpy, lower_bound
from planners.errors import InvalidPlanError
from planners.greedy import greedy_offsets
from planners.naive import Naive
from planners.random_problems import realistic_problem
from planners.validate import _overlap_free, _overlap_free_pairs, check_plan

_greedy = pytest.importorskip("planners._greedy", reason="the C engine planners._greedy is not built")
_validate = pytest.importorskip("planners._validate",
                                reason="the compiled validator planners._validate is not built")

ALIGNMENTS = (1, 2, 3, 4, 8, 12, 64)


@st.composite
def problems(draw, max_n: int = 50):
    """Short horizons (many equal starts and ends), zero sizes, mixed alignments, small or huge
    sizes."""
    n = draw(st.integers(0, max_n))
    horizon = draw(st.integers(1, 10))
    big = draw(st.booleans())
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, horizon))
        bufs.append(Buffer(str(i), s, s + draw(st.integers(1, horizon)),
                           draw(st.one_of(st.just(0), st.integers(1, 2**40 if big else 40))),
                           draw(st.sampled_from((None,) + ALIGNMENTS))))
    return Problem(bufs, alignment=draw(st.sampled_from(ALIGNMENTS)), name="hyp")


# --- the sweep engine -------------------------------------------------------------------------
@settings(max_examples=examples(150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.randoms(use_true_random=False))
def test_sweep_matches_python_and_interval_tree(p, rnd):
    keys = [rnd.random() for _ in range(p.n)]
    shuffled = np.lexsort((np.array(keys), p.starts)).astype(np.int64) if p.n else \
        np.zeros(0, np.int64)
    for perm in ("start", shuffled):
        for fit in ("first", "best"):
            c = greedy_offsets(p, perm, fit, method="sweep", engine="c")
            assert c.tolist() == greedy_offsets(p, perm, fit, engine="python").tolist()
            assert c.tolist() == greedy_offsets(p, perm, fit, method="graph", engine="c").tolist()


def test_sweep_hand_checked_coalescing_and_best_fit():
    # a [0, 2) 8 B at 0, b [0, 4) 4 B at 8, c [0, 2) 8 B at 12; at step 2 a and c expire: a's
    # range and the gaps around it coalesce into b's gap [0, 8), and the top drops from 20 to
    # b's 12. d (8 B from step 2) fits the coalesced gap at 0.
    p = Problem.from_closed([("a", 0, 1, 8), ("b", 0, 3, 4), ("c", 0, 1, 8), ("d", 2, 3, 8)])
    assert greedy_offsets(p, "start", "first", engine="c").tolist() == [0, 8, 12, 0]
    # x 0, p [2, 5), y [5, 8), q [8, 10), z [10, 20); at step 1 p and q are gone: gaps [2, 5)
    # and [8, 10). w (2 B, alignment 4) does not fit [2, 5) (round_up(2, 4) + 2 = 6 > 5), so
    # both fits give 8 although [2, 5) is long enough; v (9 B) fits no gap: above the top, 20
    q = Problem([Buffer("x", 0, 9, 2, 1), Buffer("p", 0, 1, 3, 1), Buffer("y", 0, 9, 3, 1),
                 Buffer("q", 0, 1, 2, 1), Buffer("z", 0, 9, 10, 1), Buffer("w", 1, 2, 2, 4),
                 Buffer("v", 1, 2, 9, 1)])
    assert greedy_offsets(q, "start", "first", engine="c").tolist() == [0, 2, 5, 8, 10, 8, 20]
    assert greedy_offsets(q, "start", "best", engine="c").tolist() == [0, 2, 5, 8, 10, 8, 20]
    # x 0, p [1, 6), y 6, q [7, 9), z 9; at step 1 the gaps are [1, 6) (5 B) and [7, 9) (2 B):
    # first fit puts w (2 B) at 1, best fit in the exact 2-byte gap at 7
    r = Problem([Buffer("x", 0, 9, 1), Buffer("p", 0, 1, 5), Buffer("y", 0, 9, 1),
                 Buffer("q", 0, 1, 2), Buffer("z", 0, 9, 1), Buffer("w", 1, 2, 2)])
    assert greedy_offsets(r, "start", "first", engine="c").tolist() == [0, 1, 6, 7, 9, 1]
    assert greedy_offsets(r, "start", "best", engine="c").tolist() == [0, 1, 6, 7, 9, 7]


def test_sweep_refuses_an_order_not_sorted_by_start():
    p = Problem.from_closed([("a", 0, 1, 8), ("b", 2, 3, 8)])
    out = np.empty(2, np.int64)
    args = dict(starts=p.starts, ends=p.ends, sizes=p.sizes,
                alignments=np.ascontiguousarray(p.alignments, np.int64), fit="first", out=out)
    with pytest.raises(ValueError, match="non-decreasing in start"):
        _greedy.sweep(perm=np.array([1, 0], np.int64), **args)
    with pytest.raises(ValueError, match="not a permutation"):
        _greedy.sweep(perm=np.array([0, 0], np.int64), **args)
    with pytest.raises(ValueError, match="non-decreasing in start step"):
        greedy_offsets(p, [1, 0], "first", method="sweep", engine="c")


def test_best_fit_planner_runs_the_sweep_and_stays_valid():
    p = realistic_problem(3000, seed=5)
    plan = get_planner("best_fit").plan(p)  # validated by Planner.plan
    assert plan.info["engine"] == "c"
    assert plan.offsets.tolist() == greedy_offsets(p, "start", "best", engine="python").tolist()


# --- the validator --------------------------------------------------------------------------
def _pairs_oracle(p, off) -> bool:
    return sd.brute_conflict(p, off) is None


@settings(max_examples=examples(120), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.data())
def test_validator_sweep_matches_all_pairs_and_numpy(p, data):
    lcm = int(np.lcm.reduce(p.alignments)) if p.n else 1
    plans = [greedy_offsets(p, "size", "first", engine="c")]
    if p.n:
        plans.append(np.array(data.draw(st.lists(st.integers(0, 60), min_size=p.n,
                                                 max_size=p.n)), np.int64) * lcm)
        moved = plans[0].copy()
        i, j = data.draw(st.integers(0, p.n - 1)), data.draw(st.integers(0, p.n - 1))
        moved[i] = moved[j] - moved[j] % int(p.alignments[i])
        plans.append(moved)
    for off in plans:
        want = _pairs_oracle(p, off)
        assert _overlap_free(p.starts, p.ends, off, p.sizes, engine="c") is want
        assert _overlap_free_pairs(p.starts, p.ends, off, p.sizes) is want
        if not want:
            with pytest.raises(InvalidPlanError, match="overlap in address"):
                check_plan(p, off)


def test_validator_names_the_first_pair_and_edges():
    p = Problem.from_closed([("a", 0, 3, 8), ("b", 1, 2, 8), ("c", 4, 5, 8)])
    with pytest.raises(InvalidPlanError, match=r"'a' and 'b' are both live in steps \[1, 3\)"):
        check_plan(p, [0, 4, 0])
    check_plan(p, [0, 8, 0])  # c starts after a ends: [0, 4) and [4, 6) never meet
    # equal offsets of two live buffers, and a zero-size buffer inside another never conflicts
    q = Problem.from_closed([("a", 0, 1, 8), ("b", 0, 1, 8), ("z", 0, 1, 0)])
    assert _validate.first_overlap(starts=q.starts, ends=q.ends, offsets=np.array([8, 8, 9]),
                                   sizes=q.sizes) == (0, 1)
    assert _overlap_free(q.starts, q.ends, np.array([0, 8, 3]), q.sizes, engine="c")
    with pytest.raises(ValueError, match="offset \\+ size <= 2\\*\\*63 - 1"):
        _validate.first_overlap(starts=q.starts, ends=q.ends, sizes=q.sizes,
                                offsets=np.array([2**63 - 4, 0, 0]))


def test_validator_sweep_on_a_large_plan_with_one_fault():
    p = realistic_problem(20000, seed=2)
    off = greedy_offsets(p, "start", "first", engine="c")
    assert _overlap_free(p.starts, p.ends, off, p.sizes, engine="c")
    # move one buffer onto a buffer live with it: the sweep finds it, check_plan names a pair
    i = 12345
    j = int(np.flatnonzero((p.starts <= p.starts[i]) & (p.ends > p.starts[i])
                           & (np.arange(p.n) != i))[0])
    off[i] = off[j]
    assert not _overlap_free(p.starts, p.ends, off, p.sizes, engine="c")
    assert not _overlap_free_pairs(p.starts, p.ends, off, p.sizes)
    with pytest.raises(InvalidPlanError, match="overlap in address"):
        check_plan(p, off)


# --- max live bytes -------------------------------------------------------------------------
@settings(max_examples=examples(120), deadline=None, derandomize=True)
@given(problems())
def test_max_live_matches_a_step_by_step_count(p):
    peak = sd.brute_peak(p)
    assert _max_live(p.starts, p.ends, p.sizes) == peak
    assert _max_live_numpy(p.starts, p.ends, p.sizes) == peak
    assert lower_bound(p) >= peak


def test_max_live_hand_checked_and_refuses_to_wrap():
    p = Problem.from_closed([("a", 0, 1, 10), ("b", 1, 2, 5), ("c", 2, 2, 7)])
    # [0, 2) 10 B, [1, 3) 5 B, [2, 3) 7 B: 15 at step 1, 12 at step 2
    assert lower_bound(p) == 15 == _max_live_numpy(p.starts, p.ends, p.sizes)
    big = np.array([2**62, 2**62], np.int64)
    with pytest.raises(OverflowError, match="exceed 2\\*\\*63 - 1"):
        _validate.max_live(starts=np.zeros(2, np.int64), ends=np.ones(2, np.int64), sizes=big)


# --- naive, the generator, the differential sample ------------------------------------------
@settings(max_examples=examples(80), deadline=None, derandomize=True)
@given(problems())
def test_naive_offsets_stack_in_problem_order(p):
    off = Naive()._solve(p).offsets.tolist()
    top, want = 0, []
    for z, a in zip(p.sizes.tolist(), p.alignments.tolist(), strict=True):
        top = -(-top // a) * a
        want.append(top)
        top += z
    assert off == want


def test_naive_uniform_alignment_hand_checked():
    p = Problem([Buffer("a", 0, 1, 5), Buffer("b", 0, 1, 0), Buffer("c", 0, 1, 9)], alignment=4)
    assert get_planner("naive").plan(p).offsets.tolist() == [0, 8, 8]


def test_realistic_problem_is_seeded_and_has_about_1000_live():
    a, b = realistic_problem(20000, seed=7), realistic_problem(20000, seed=7)
    assert a.starts.tolist() == b.starts.tolist() and a.sizes.tolist() == b.sizes.tolist()
    assert int(a.sizes.min()) >= 64 and int(a.sizes.max()) <= 2**20
    assert bool((a.ends > a.starts).all())
    # the expected live count is the mean lifetime (1,000) with horizon = n: at the middle
    # steps of a 20,000-step horizon the count is within a few percent of it
    steps = np.arange(5000, 15000, 50)
    live = (np.searchsorted(np.sort(a.starts), steps, "right")
            - np.searchsorted(np.sort(a.ends), steps, "right"))
    assert 900 < live.mean() < 1100


def test_differential_sample():
    df = sd.run(40, seed=0)
    assert int(df["comparisons"].sum()) > 500
    assert int(df["disagreements"].sum()) == 0, df[df["disagreements"] > 0]["first"].tolist()


# --- CSV reading: ids "0" .. "n-1" are not built as strings ---------------------------------
@settings(max_examples=examples(100), deadline=None, derandomize=True)
@given(st.integers(1, 30), st.sampled_from(["canonical", "lead0", "plus", "swap", "gap", "dup"]))
def test_csv_ids_read_as_the_csv_module_reads_them(tmp_path_factory, n, kind):
    import csv

    ids = [str(i) for i in range(n)]
    k = n // 2
    if kind == "lead0":
        ids[k] = "0" + ids[k]
    elif kind == "plus":
        ids[k] = "+" + ids[k]
    elif kind == "swap" and n > 1:
        ids[0], ids[1] = ids[1], ids[0]
    elif kind == "gap":
        ids[-1] = str(n)
    elif kind == "dup" and n > 1:
        ids[1] = ids[0]
    path = tmp_path_factory.mktemp("csv") / "p.csv"
    path.write_text("id,lower,upper,size\n" + "".join(f"{b},{i},{i + 2},{i + 1}\n"
                                                      for i, b in enumerate(ids)))
    from planners.errors import ProblemError
    from planners.io import read_minimalloc_csv
    with open(path, newline="") as f:
        want = [row["id"] for row in csv.DictReader(f)]
    if len(set(want)) < len(want):
        with pytest.raises(ProblemError, match="duplicate buffer id"):
            read_minimalloc_csv(path)
        return
    p = read_minimalloc_csv(path)
    assert list(p.ids) == want
    assert p.starts.tolist() == list(range(n)) and p.sizes.tolist() == list(range(1, n + 1))


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.lists(st.integers(-(2**61), 2**61), max_size=40), st.sampled_from([7, 1000, None]))
def test_order_by_start_packed_key_equals_stable_argsort(raw, modulus):
    from planners.greedy import order_by_start

    # starts mod 7 (many ties) and mod 1000 take the packed key; the raw starts spread so far
    # that (range + 1) x n leaves int64 and the stable argsort runs
    starts = raw if modulus is None else [v % modulus - 3 for v in raw]
    p = Problem([Buffer(str(i), s, s + 1, 1) for i, s in enumerate(starts)])
    assert order_by_start(p).tolist() == np.argsort(p.starts, kind="stable").tolist()
