"""The compiled probe of telamalloc (planners/_ext/_telamalloc.c) against the Python reference.

Property: on small random problems (zero sizes, alignments 1..16 including non-powers of two,
identical twins, nested lifetimes), for every priority and a mix of targets, budgets,
``max_branch``, symmetry / dominance switches and the decomposed and plain searches (also without
the cell table and without neighbour lists), a sequence of probes with squeaky-wheel re-ranking
in between returns the same result (status or offsets) and leaves the same bookkeeping
(``nodes``, ``deep``, ``deep_unplaced``, ``truncated``) in both engines. The whole planner with
a placement budget (``max_nodes``) gives identical plans and ``info`` with both engines, and the
compiled plans pass the validator.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planners.telamalloc as tm
from planners import Buffer, ParameterError, Problem, check_plan
from planners.bounds import live_profile
from planners.telamalloc import PRIORITIES, TelaMalloc, _Search

_ext = pytest.importorskip(
    "planners._telamalloc", reason="the compiled probe planners._telamalloc is not built"
)

MINIMALLOC = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


@st.composite
def problems(draw, max_n: int = 40):
    """Small problems on a short horizon: zero sizes, alignments 1..16, identical twins (same
    size, lifetime and alignment) and buffers nested in the lifetime of an earlier one."""
    n = draw(st.integers(0, max_n))
    horizon = draw(st.integers(1, 14))
    bufs: list[Buffer] = []
    for i in range(n):
        kind = draw(st.integers(0, 9))
        if bufs and kind == 0:  # an identical twin of an earlier buffer
            b = bufs[draw(st.integers(0, len(bufs) - 1))]
            bufs.append(Buffer(str(i), b.start, b.end, b.size, b.alignment))
            continue
        if bufs and kind == 1:  # nested inside an earlier lifetime
            b = bufs[draw(st.integers(0, len(bufs) - 1))]
            s = draw(st.integers(b.start, b.end - 1))
            e = draw(st.integers(s + 1, b.end))
        else:
            s = draw(st.integers(0, horizon - 1))
            e = draw(st.integers(s + 1, horizon))
        size = draw(st.one_of(st.just(0), st.integers(1, 64), st.integers(1, 5000)))
        align = draw(st.integers(1, 16))
        bufs.append(Buffer(str(i), s, e, size, align))
    return Problem(bufs, name="hyp")


def _state(x: _Search) -> tuple:
    du = None if x.deep_unplaced is None else x.deep_unplaced.tolist()
    return x.nodes, x.deep, du, x.truncated


def _same(ra, rb) -> bool:
    if isinstance(ra, str) or isinstance(rb, str):
        return isinstance(ra, str) and isinstance(rb, str) and ra == rb
    return ra.dtype == rb.dtype == np.int64 and ra.tolist() == rb.tolist()


@settings(
    max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip
@given(
    problems(),
    st.sampled_from(PRIORITIES),
    st.one_of(st.none(), st.integers(1, 4)),
    st.sampled_from(("decomposed", "plain", "plain_no_cells", "plain_no_neighbours")),
    st.booleans(),
    st.booleans(),
    st.lists(st.tuples(st.integers(-2, 40), st.integers(1, 300), st.booleans()), max_size=6),
)
def test_compiled_probe_matches_python_node_for_node(
    p, priority, max_branch, mode, symmetry, dominance, probes
):
    dec = mode == "decomposed"
    a = _Search(p, priority, max_branch, symmetry, dominance, dec, "python")
    b = _Search(p, priority, max_branch, symmetry, dominance, dec, "compiled")
    assert a.engine == "python" and b.engine == "compiled"
    for x in (a, b):  # the fallbacks used on large problems
        if mode == "plain_no_cells":
            x.member = None
        elif mode == "plain_no_neighbours":
            x.nbrs = None
    live = int(live_profile(p)[1].max()) if p.n else 0
    for pct, budget, squeak in probes:  # targets from below the bound to 40 % above it
        target = max(0, live + live * pct // 100)
        deadline = time.perf_counter() + 600
        ra = a.run(target, budget, deadline)
        rb = b.run(target, budget, deadline)
        assert _same(ra, rb), (target, budget, ra, rb)
        assert _state(a) == _state(b), (target, budget)
        if not isinstance(ra, str):
            assert int((ra + p.sizes).max(initial=0)) <= target
            check_plan(p, ra)
        if squeak and isinstance(ra, str) and a.deep_unplaced is not None:
            for x in (a, b):  # the planner's squeaky wheel
                x.boost[x.deep_unplaced] += 1
                x.reorder()
            assert a.rank.tolist() == b.rank.tolist()


@pytest.mark.parametrize("decompose", [True, False])
def test_a_past_deadline_stops_both_engines_before_the_first_placement(decompose):
    p = Problem([Buffer(str(i), i % 3, i % 3 + 2, 10 + i, 1) for i in range(12)])
    for engine in ("python", "compiled"):
        x = _Search(p, "contention", None, True, True, decompose, engine)
        assert x.run(10**9, 1000, time.perf_counter() - 1.0) == "budget"
        assert x.nodes == 0 and x.deep == 0 and x.deep_unplaced is None


def _problems_for_planner():
    rng = np.random.default_rng(7)
    out = []
    for k in range(6):
        n = int(rng.integers(15, 60))
        bufs = []
        for i in range(n):
            s = int(rng.integers(0, 20))
            e = s + int(rng.integers(1, 8))
            size = 0 if rng.random() < 0.05 else int(rng.integers(1, 200))
            bufs.append(Buffer(str(i), s, e, size, int(rng.choice([1, 2, 3, 8]))))
        out.append(Problem(bufs, name=f"r{k}"))
    return out


def _comparable(pl) -> tuple:
    info = dict(pl.info)
    info.pop("engine")
    traj = [arena for _, arena in info.pop("trajectory")]  # seconds differ, arenas must not
    return pl.offsets.tolist(), pl.arena_size, pl.status, pl.best_bound, traj, info


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("decompose", [True, False])
def test_planner_with_max_nodes_is_identical_in_both_engines(k, decompose):
    p = _problems_for_planner()[k]
    kw = dict(time_limit=600.0, max_nodes=3000, node_limit=200, decompose=decompose)
    py = TelaMalloc(engine="python", **kw).plan(p)
    c = TelaMalloc(engine="compiled", **kw).plan(p)
    assert py.info["engine"] == "python" and c.info["engine"] == "compiled"
    assert _comparable(py) == _comparable(c)
    check_plan(p, c.offsets)


@pytest.mark.skipif(not MINIMALLOC.is_dir(), reason="MiniMalloc benchmarks not present")
@pytest.mark.parametrize("name", ["A", "D"])
def test_planner_on_minimalloc_is_identical_in_both_engines(name):
    from planners.io import read_minimalloc_csv

    p = read_minimalloc_csv(MINIMALLOC / f"{name}.1048576.csv")
    kw = dict(time_limit=600.0, max_nodes=4000)
    py = TelaMalloc(engine="python", **kw).plan(p)
    c = TelaMalloc(engine="compiled", **kw).plan(p)
    assert _comparable(py) == _comparable(c)
    assert c.info["nodes"] > 0
    check_plan(p, c.offsets)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.booleans(), st.one_of(st.none(), st.integers(1, 3)))
def test_compiled_plans_are_valid(p, decompose, max_branch):
    pl = TelaMalloc(
        engine="compiled", time_limit=60.0, max_nodes=500, node_limit=50,
        decompose=decompose, max_branch=max_branch,
    ).plan(p)  # fmt: skip
    check_plan(p, pl.offsets)
    assert pl.best_bound <= pl.arena_size
    assert (pl.status == "optimal") == (pl.best_bound == pl.arena_size)


def test_engine_parameter():
    p = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8)])
    assert TelaMalloc().plan(p).info["engine"] == "compiled"  # auto: the built module
    assert TelaMalloc(engine="python").plan(p).info["engine"] == "python"
    with pytest.raises(ParameterError):
        TelaMalloc(engine="c").plan(p)


def test_engine_auto_falls_back_to_python_without_the_module(monkeypatch):
    monkeypatch.setattr(tm, "_compiled_probe", lambda: None)
    p = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8)])
    assert TelaMalloc().plan(p).info["engine"] == "python"
    with pytest.raises(ImportError):
        TelaMalloc(engine="compiled").plan(p)


def test_probe_rejects_malformed_tables():
    p = Problem([Buffer("a", 0, 2, 8), Buffer("b", 1, 3, 8)])
    x = _Search(p, "contention", None, True, True, True, "compiled")
    tables = list(x._compiled_tables())
    n = p.n
    args = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))
    bad = tables.copy()
    bad[4] = np.array([0, 5], np.int64)  # lo beyond the end points
    with pytest.raises(ValueError):
        _ext.probe(tuple(bad), *args, np.zeros(n, np.int64), 100, 10, 1.0)
    with pytest.raises(TypeError):
        _ext.probe(tuple(tables), np.zeros(n, np.int32), *args, 100, 10, 1.0)


def test_compiled_probe_matches_python_above_2000_buffers():
    """Above 2,000 buffers the plain search checks the clock at every placement and the
    decomposition is off: the probes still agree node for node."""
    rng = np.random.default_rng(3)
    bufs = []
    for i in range(2100):
        s = int(rng.integers(0, 400))
        bufs.append(Buffer(str(i), s, s + int(rng.integers(1, 30)), int(rng.integers(0, 100))))
    p = Problem(bufs)
    live = int(live_profile(p)[1].max())
    a = _Search(p, "contention_width", None, True, True, True, "python")
    b = _Search(p, "contention_width", None, True, True, True, "compiled")
    assert not a.decompose and not b.decompose
    probes = (
        (live + live // 5, 300),
        (live, 150),
        (live + live // 50, 200),
        (live + live // 5, 3000),
    )
    outcomes = []
    for target, budget in probes:
        deadline = time.perf_counter() + 600
        ra, rb = a.run(target, budget, deadline), b.run(target, budget, deadline)
        assert _same(ra, rb) and _state(a) == _state(b), (target, budget)
        outcomes.append(ra if isinstance(ra, str) else "found")
        if isinstance(ra, str) and a.deep_unplaced is not None:
            for x in (a, b):
                x.boost[x.deep_unplaced] += 1
                x.reorder()
    assert "found" in outcomes and "budget" in outcomes  # both kinds of probe were compared
