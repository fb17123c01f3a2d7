"""The compiled greedy placement engine (planners/_ext/_greedy.c) against the Python reference.

Property: for every order and fit rule, on random problems with equal starts and ends, zero sizes,
power-of-two and other alignments, and alias groups (through ``planners.plan``), both engines give
byte-identical offsets. Plus the engine switch (``engine=``, ``plan.info["engine"]``, the fallback
when the extension is missing) and the checks of the C API itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planners.greedy as greedy
from planners import Buffer, ParameterError, Problem, get_planner, plan
from planners.choose_best import ChooseBest
from planners.greedy import FITS, ORDERS, greedy_offsets, resolve_engine
from planners.random_problems import random_problem

_greedy = pytest.importorskip("planners._greedy", reason="the C engine planners._greedy is not built")

#: Every greedy planner of the registry (subclasses of the engine with fixed order and fit).
GREEDY_NAMES = (
    "greedy_in_order",
    "first_fit",
    "best_fit",
    "greedy_by_size",
    "greedy_by_size_best_fit",
    "greedy_by_breadth",
    "greedy_by_conflicts",
    "lifetime_aware",
    "greedy",
)

ALIGNMENTS = (1, 2, 4, 8, 16, 64, 3, 5, 6, 12, 24)


@st.composite
def problems(draw, max_n: int = 40):
    """Small problems on a short horizon (many equal starts and ends), some zero sizes, mixed
    alignments (powers of two and others), a few residents."""
    n = draw(st.integers(0, max_n))
    horizon = draw(st.integers(1, 12))
    big = draw(st.booleans())
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, horizon))
        e = s + draw(st.integers(1, horizon))
        size = draw(
            st.one_of(
                st.just(0),
                st.integers(1, 64),
                st.integers(1, 2**40 if big else 4096),
            )
        )
        align = draw(st.sampled_from((None,) + ALIGNMENTS))
        kind = "resident" if draw(st.integers(0, 9)) == 0 else "activation"
        bufs.append(Buffer(str(i), s, e, size, align, kind))
    return Problem(bufs, alignment=draw(st.sampled_from(ALIGNMENTS)), name="hyp")


def _both(problem, order, fit):
    py = greedy_offsets(problem, order, fit, engine="python")
    c = greedy_offsets(problem, order, fit, engine="c")
    assert py.dtype == c.dtype == np.int64
    return py, c


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_c_engine_matches_python_every_order_and_fit(p):
    for order in ORDERS:
        for fit in FITS:
            py, c = _both(p, order, fit)
            assert py.tolist() == c.tolist(), (order, fit)


@settings(max_examples=examples(100), deadline=None)
@given(problems(max_n=30), st.data())
def test_c_engine_matches_python_any_permutation(p, data):
    perm = np.asarray(data.draw(st.permutations(range(p.n))), np.int64)
    for fit in FITS:
        py, c = _both(p, perm, fit)
        assert py.tolist() == c.tolist(), fit
        # the Python engine's graph path on the same order gives the same offsets too
        graph = greedy_offsets(p, perm, fit, method="graph", engine="python")
        assert graph.tolist() == c.tolist()


@st.composite
def aliased_problems(draw):
    """A problem with alias groups: some buffers are views of an earlier buffer at an aligned
    delta inside it."""
    n = draw(st.integers(2, 25))
    bufs, aliases = [], {}
    for i in range(n):
        s = draw(st.integers(0, 10))
        e = s + draw(st.integers(1, 8))
        size = draw(st.integers(0, 512))
        align = draw(st.sampled_from((1, 2, 4, 8, 3)))
        if i and draw(st.integers(0, 3)) == 0:
            j = draw(st.integers(0, i - 1))
            parent = bufs[j]
            if parent.size >= 1 and str(j) not in aliases:
                delta = draw(st.integers(0, parent.size - 1))
                size = draw(st.integers(0, parent.size - delta))
                # the accumulated delta must be a multiple of the child's alignment: align 1
                bufs.append(Buffer(str(i), s, e, size, 1))
                aliases[str(i)] = (str(j), delta)
                continue
        bufs.append(Buffer(str(i), s, e, size, align))
    return Problem(bufs, name="aliased", aliases=aliases)


@settings(max_examples=examples(80), deadline=None)
@given(aliased_problems())
def test_engines_agree_through_plan_with_alias_groups(p):
    for name in GREEDY_NAMES:
        a = plan(p, name, engine="python")
        b = plan(p, name, engine="c")
        assert a.offsets.tolist() == b.offsets.tolist(), name
        assert (a.info["engine"], b.info["engine"]) == ("python", "c")


@pytest.mark.parametrize("name", GREEDY_NAMES)
def test_every_greedy_planner_on_a_random_problem(name):
    p = random_problem(2000, seed=5, zero_fraction=0.05, alignment=8, mean_lifetime=40)
    a = plan(p, name, engine="python")
    b = plan(p, name, engine="c")
    assert a.offsets.tolist() == b.offsets.tolist()
    assert a.arena_size == b.arena_size and b.arena_size >= b.lower_bound


def test_values_near_the_int64_limit():
    big = 2**60
    bufs = [Buffer("a", 0, 3, big, 3), Buffer("b", 1, 4, big, 3), Buffer("c", 2, 5, big - 1, 8),
            Buffer("d", 4, 6, 5, 2**40)]
    p = Problem(bufs)
    for order in ORDERS:
        for fit in FITS:
            py, c = _both(p, order, fit)
            assert py.tolist() == c.tolist()
    # by size: a at 0; b above a, 2**60 rounded up to a multiple of 3; c above b rounded up to 8;
    # d (from step 4) meets only c and fits below it
    b_off = big + 2  # 2**60 = 1 (mod 3)
    c_off = -(-(b_off + big) // 8) * 8
    assert plan(p, "greedy_by_size", engine="c").offsets.tolist() == [0, b_off, c_off, 0]


def test_hand_checked_offsets():
    # exercise 5.1 of seed 002 (first-fit in problem order: 880 bytes)
    p = Problem.from_closed([("T1", 0, 3, 100), ("T2", 1, 4, 200), ("T3", 2, 5, 150),
                             ("T4", 3, 6, 250), ("T5", 4, 7, 180)])
    r = plan(p, "first_fit", engine="c")
    assert r.offsets.tolist() == [0, 100, 300, 450, 700] and r.arena_size == 880
    # At step 1 the buffers live are A [0, 10), C [40, 50), E [55, 65): gaps [10, 40) and
    # [50, 55). F (4 bytes) goes to the lowest gap with first fit, the smallest with best fit;
    # with alignment 4 only [10, 40) holds it (52 + 4 > 55).
    starts, ends, sizes = [0, 0, 0, 0, 0, 1], [2, 1, 2, 1, 2, 2], [10, 30, 10, 5, 10, 4]
    q = Problem.from_arrays(starts, ends, sizes)
    assert greedy_offsets(q, "problem", "first", engine="c").tolist() == [0, 10, 40, 50, 55, 10]
    assert greedy_offsets(q, "problem", "best", engine="c").tolist() == [0, 10, 40, 50, 55, 50]
    q4 = Problem([Buffer(str(i), s, e, z, 4 if i == 5 else 1)
                  for i, (s, e, z) in enumerate(zip(starts, ends, sizes))])
    assert greedy_offsets(q4, "problem", "best", engine="c").tolist() == [0, 10, 40, 50, 55, 12]
    # zero-size buffers sit at 0 and are nobody's neighbour
    z = Problem.from_arrays([0, 0, 0], [2, 2, 2], [8, 0, 8])
    assert greedy_offsets(z, "problem", "first", engine="c").tolist() == [0, 0, 8]


def test_engine_switch_and_info(monkeypatch):
    p = random_problem(300, seed=2)
    assert resolve_engine("auto") == "c"
    assert plan(p, "greedy_by_size").info["engine"] == "c"
    assert plan(p, "greedy_by_size", engine="python").info["engine"] == "python"
    assert get_planner("best_fit").get_params() == {"order": "start", "fit": "best", "engine": "auto"}
    with pytest.raises(ParameterError, match="^greedy_by_size: parameter 'engine' = 'fortran'"):
        plan(p, "greedy_by_size", engine="fortran")
    with pytest.raises(ValueError, match="unknown engine"):  # the function keeps its own check
        resolve_engine("fortran")
    # without the compiled module, "auto" runs the Python engine and "c" says it is not built
    monkeypatch.setattr(greedy, "_c_core", lambda: None)
    r = plan(p, "greedy_by_size")
    assert r.info["engine"] == "python"
    with pytest.raises(ImportError, match="not built"):
        plan(p, "greedy_by_size", engine="c")


def test_sweep_method_still_checks_the_order():
    p = random_problem(50, seed=1)
    with pytest.raises(ValueError, match="non-decreasing in start"):
        greedy_offsets(p, "size", "first", method="sweep", engine="c")
    a = greedy_offsets(p, "start", "best", method="sweep", engine="c")
    assert a.tolist() == greedy_offsets(p, "start", "best", method="sweep", engine="python").tolist()


def _args(n=3):
    z = np.zeros(n, np.int64)
    return dict(perm=np.arange(n, dtype=np.int64), starts=z.copy(), ends=z + 1,
                sizes=z + 4, alignments=z + 1, fit="first", out=np.empty(n, np.int64))


def test_c_api_checks_its_input():
    kw = _args()
    _greedy.place(**kw)
    assert kw["out"].tolist() == [0, 4, 8]
    with pytest.raises(TypeError):
        _greedy.place(*kw.values())  # keyword-only
    with pytest.raises(ValueError, match="permutation"):
        _greedy.place(**{**kw, "perm": np.array([0, 0, 1], np.int64)})
    with pytest.raises(ValueError, match="permutation"):
        _greedy.place(**{**kw, "perm": np.array([0, 1, 3], np.int64)})
    with pytest.raises(TypeError, match="int64"):
        _greedy.place(**{**kw, "sizes": np.zeros(3, np.int32)})
    with pytest.raises(ValueError, match="length"):
        _greedy.place(**{**kw, "sizes": np.zeros(4, np.int64)})
    with pytest.raises(ValueError, match="fit"):
        _greedy.place(**{**kw, "fit": "worst"})
    with pytest.raises(TypeError, match="writable"):
        ro = np.empty(3, np.int64)
        ro.setflags(write=False)
        _greedy.place(**{**kw, "out": ro})
    with pytest.raises(ValueError, match="lifetime"):
        _greedy.place(**{**kw, "ends": np.zeros(3, np.int64)})
    with pytest.raises(ValueError, match="worst-case arena"):
        _greedy.place(**{**kw, "sizes": np.full(3, 2**62 - 1, np.int64)})
    empty = _args(0)
    _greedy.place(**empty)
    assert empty["out"].tolist() == []


def test_choose_best_parallel_is_deterministic():
    p = random_problem(3000, seed=9, zero_fraction=0.05, alignment=4)
    one = ChooseBest(workers=1).plan(p)
    two = ChooseBest(workers=2).plan(p)
    assert one.offsets.tolist() == two.offsets.tolist()
    assert one.info["arenas"] == two.info["arenas"] and one.info["chosen"] == two.info["chosen"]
    assert list(two.info["arenas"]) == list(ChooseBest().planners)
    py = ChooseBest(planners=("greedy_by_size", "best_fit", "chaitin"), workers=2).plan(p)
    assert py.info["arenas"]["greedy_by_size"] == plan(p, "greedy_by_size").arena_size


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("fit", FITS)
def test_engines_agree_with_hundreds_of_placed_neighbours(seed, fit):
    """Long lifetimes (a few hundred buffers live at once) exercise the C engine's sort of 24 to
    255 placed neighbours (counting pass on the top bits, then insertion sort) and its radix sort
    above; offsets clustered (powers of two, many equal sizes) and spread (lognormal)."""
    for size_dist in ("pow2", "lognormal"):
        p = random_problem(1500, seed=seed, mean_lifetime=150.0, horizon=600, size_dist=size_dist,
                           alignment=(1, 8, 3)[seed])
        for order in ("size", "start", "problem"):
            py, c = _both(p, order, fit)
            assert np.array_equal(py, c), (size_dist, order)


def _order_by_size_reference(p):
    return np.lexsort((np.arange(p.n), p.starts, -p.sizes)).astype(np.int64)


@settings(max_examples=examples(100), deadline=None)
@given(problems(), st.sampled_from([0, 2**31 - 2, 2**31, 2**40]),
       st.sampled_from([0, 2**32 - 5, 2**32, -(2**40)]))
def test_order_by_size_packed_key_equals_lexsort(p, size_shift, start_shift):
    """The packed single-key sort of ``order_by_size`` (sizes within 2**31 of the largest, starts
    within 2**32 of the earliest) and the three-key lexsort it falls back to give the same
    permutation; shifted sizes and starts push the problem to either side of the limits."""
    if p.n == 0:
        assert greedy.order_by_size(p).tolist() == []
        return
    sizes = p.sizes.copy()
    sizes[0] += size_shift
    starts = p.starts.copy()
    starts[-1] += start_shift
    q = Problem.from_arrays(starts, starts + (p.ends - p.starts), sizes)
    assert np.array_equal(greedy.order_by_size(q), _order_by_size_reference(q))
