"""Problems with a known optimum (planners.known_optimum) and the bench that uses them.

* the construction: the known plan passes ``check_plan`` at capacity = optimum, every step has
  exactly ``width`` live bytes (so lower bound = optimum), hypothesis over kinds, seeds, sizes
  and strips;
* a hand-checked vector: the only pinwheel of a 3 x 3 strip;
* the pinwheel kind has no guillotine cut (no step boundary and no address that no buffer
  crosses), the guillotine kind always has one;
* a differential test: the claimed optimum against an exhaustive search
  (``experiments.bench.known.brute_force_optimum``) on 60 generated problems here, the full count
  through ``python -m experiments.bench.known --differential N``;
* the bench module's smoke run (CSV columns, ratios, no plan below the optimum).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.bench import known
from planners import ProblemError, check_plan, live_profile, lower_bound
from planners.known_optimum import (
    KINDS,
    guillotine_problem,
    known_optimum_problem,
    pinwheel_problem,
)


def _rects(ko):
    p = ko.problem
    return sorted(zip(p.starts.tolist(), p.ends.tolist(), ko.offsets.tolist(),
                      p.sizes.tolist()))


def _has_guillotine_cut(ko) -> bool:
    """A straight line across the whole strip that cuts no rectangle's interior: a step
    boundary ``0 < t < horizon`` that no lifetime crosses, or an address ``0 < b < width`` that
    no buffer's range crosses. Brute force over every line."""
    r = _rects(ko)
    for t in range(1, ko.horizon):
        if not any(s < t < e for s, e, _, _ in r):
            return True
    cuts = {o for _, _, o, _ in r} | {o + z for _, _, o, z in r}
    return any(not any(o < b < o + z for _, _, o, z in r) for b in cuts if 0 < b < ko.width)


@settings(max_examples=examples(60), deadline=None)
@given(kind=st.sampled_from(KINDS), n=st.integers(1, 400), seed=st.integers(0, 2**32),
       width=st.integers(64, 1 << 22), horizon=st.integers(16, 2000),
       granule=st.sampled_from([1, 2, 16]))
def test_known_plan_is_valid_and_optimal(kind, n, seed, width, horizon, granule):
    width -= width % granule
    try:
        ko = known_optimum_problem(kind, n, seed, width=width, horizon=horizon, granule=granule)
    except ProblemError as e:  # only a strip too small for n rectangles may refuse
        assert "cannot be cut" in str(e)
        return
    p = ko.problem
    assert p.n == n and ko.optimum == width and ko.kind == kind
    check_plan(p, ko.offsets, capacity=ko.optimum)
    assert int((ko.offsets + p.sizes).max()) == ko.optimum  # the known plan's arena
    assert lower_bound(p) == ko.optimum
    times, live = live_profile(p)
    # every step of [0, horizon) has exactly width live bytes (a perfect tiling)
    assert times[0] == 0 and times[-1] == ko.horizon
    assert set(live[:-1].tolist()) == {width}
    assert (p.sizes % granule == 0).all() and (ko.offsets % granule == 0).all()
    if kind == "pinwheel" and n >= 5:
        assert ko.pinwheels == (n - 1) // 4


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(5, 200), seed=st.integers(0, 2**32))
def test_pinwheel_has_no_guillotine_cut(n, seed):
    assert not _has_guillotine_cut(pinwheel_problem(n, seed, width=4096, horizon=256))


@settings(max_examples=examples(25), deadline=None)
@given(n=st.integers(2, 200), seed=st.integers(0, 2**32))
def test_guillotine_has_a_cut(n, seed):
    assert _has_guillotine_cut(guillotine_problem(n, seed, width=4096, horizon=256))


def test_the_only_pinwheel_of_a_3x3_strip():
    # Hand-checked: with 1-step, 1-byte minima a 3 x 3 strip seats only p = q = 1:
    # bottom [0,2)x[0,1), right [2,3)x[0,2), top [1,3)x[2,3), left [0,1)x[1,3), centre
    # [1,2)x[1,2), or its mirror in time (t -> 3 - t).
    ring = [(0, 2, 0, 1), (2, 3, 0, 2), (1, 3, 2, 1), (0, 1, 1, 2), (1, 2, 1, 1)]
    mirror = sorted((3 - e, 3 - s, o, z) for s, e, o, z in ring)
    seen = set()
    for seed in range(12):
        ko = pinwheel_problem(5, seed, width=3, horizon=3)
        r = _rects(ko)
        assert r in (sorted(ring), mirror)
        seen.add(tuple(r))
        assert ko.optimum == 3 and ko.pinwheels == 1
    assert len(seen) == 2  # both chiralities occur


def test_seeded_and_shuffled():
    a, b = guillotine_problem(300, 7), guillotine_problem(300, 7)
    assert _rects(a) == _rects(b) and a.problem.ids == b.problem.ids
    assert (a.problem.starts == b.problem.starts).all()
    assert _rects(guillotine_problem(300, 8)) != _rects(a)
    # buffer order is not the construction order: starts are not sorted
    assert not (np.diff(a.problem.starts) >= 0).all()


def test_large_problem():
    ko = pinwheel_problem(10**4, 3)
    check_plan(ko.problem, ko.offsets, capacity=ko.optimum)
    assert lower_bound(ko.problem) == ko.optimum == 1 << 20
    assert ko.problem.n == 10**4 and ko.pinwheels == 2499


@pytest.mark.parametrize("kw, words", [
    ({"kind": "spiral"}, "unknown kind"),
    ({"n": 0}, "n must be >= 1"),
    ({"n": 2.5}, "n must be an integer"),
    ({"width": 10, "granule": 4}, "not a multiple of the granule"),
    ({"n": 50, "width": 4, "horizon": 4}, "cannot be cut"),
    ({"kind": "pinwheel", "n": 5, "width": 2, "horizon": 9}, "cannot be cut"),
    ({"min_duration": 0}, "min_duration must be >= 1"),
])
def test_refusals(kw, words):
    args = {"kind": "guillotine", "n": 10, **kw}
    with pytest.raises(ProblemError, match=words):
        known_optimum_problem(args.pop("kind"), args.pop("n"), **args)


def test_brute_force_oracle_hand_vectors():
    # a [0,2) 4 B, b [1,3) 8 B, c [2,4) 4 B: a and c never meet, 12 B at steps 1 and 2
    assert known.brute_force_optimum([0, 1, 2], [2, 3, 4], [4, 8, 4]) == 12
    # three buffers live together: their sum
    assert known.brute_force_optimum([0, 0, 0], [1, 1, 1], [3, 5, 7]) == 15
    # disjoint in time: the largest
    assert known.brute_force_optimum([0, 1, 2], [1, 2, 3], [3, 5, 7]) == 7
    with pytest.raises(ValueError, match="at most 8"):
        known.brute_force_optimum([0] * 9, [1] * 9, [1] * 9)


def test_differential_against_brute_force():
    ran, failed, messages = known.differential(60, seed=0)
    assert ran >= 50 and failed == 0, messages


def test_bench_smoke(tmp_path):
    out = tmp_path / "k.csv"
    planners = [p for p in known.PLANNERS if p[0] in ("naive", "greedy_by_size", "telamalloc")]
    rows = known.run(out, sizes=[10, 40], seeds=1, scale=0.05, planners=planners)
    assert len(rows) == 2 * 2 * 3
    with out.open() as fh:
        back = list(csv.DictReader(fh))
    assert list(back[0]) == known.COLUMNS and len(back) == len(rows)
    for r in back:
        assert int(r["optimum"]) == 1 << 20 and float(r["bound_ratio"]) == 1.0
        assert float(r["ratio"]) >= 1.0
        assert float(r["ratio"]) == pytest.approx(int(r["arena"]) / int(r["optimum"]), abs=1e-6)
    naive = [r for r in back if r["planner"] == "naive"]
    assert all(float(r["ratio"]) > 1.0 for r in naive)  # no reuse: above the optimum
    files = known.plot(out, tmp_path / "fig")
    assert sorted(f.suffix for f in files) == [".pdf", ".png"]


def test_time_limit_for():
    assert [known.time_limit_for(n) for n in (10, 1000, 10**4, 10**5)] == [5.0, 5.0, 10.0, 15.0]
