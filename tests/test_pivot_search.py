"""Pivot splits of the order decision (scheduling/schedulers/pivot_search.py): the parts are
exact memory models of the whole, the decision agrees with brute force, and the 250-operator
MOCCASIN-shaped graph that the budget search alone could not settle is proved optimal."""

from __future__ import annotations

import random
import time

import networkx as nx
import numpy as np
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import random_graphs

from scheduling.generators import moccasin_layered
from scheduling.lifetimes import peak_live_bytes
from scheduling.schedulers import schedule
from scheduling.schedulers.bounds import ClosureCut, ancestor_matrix
from scheduling.schedulers.memsim import MemoryModel
from scheduling.schedulers.pivot_search import PivotSearch, sub_model


def brute(g) -> int:
    """The minimum peak over every topological order (enumerated)."""
    return min(peak_live_bytes(g, o) for o in nx.all_topological_sorts(g.op_graph()))


def random_order(m: MemoryModel, rng: random.Random) -> list[int]:
    indeg = [len(p) for p in m.preds]
    ready = [v for v in range(m.n) if not indeg[v]]
    order = []
    while ready:
        v = ready.pop(rng.randrange(len(ready)))
        order.append(v)
        for s in m.succs[v]:
            indeg[s] -= 1
            if not indeg[s]:
                ready.append(s)
    return order


def check_parts(m: MemoryModel, rng: random.Random, trials: int) -> None:
    """For random orders and prefixes ``S0 <= T`` of them: the part ``(S0, T)`` run in the same
    order (after its source operator) has, plus its baseline, exactly the whole graph's live
    bytes at each of those steps."""
    for _ in range(trials):
        order = random_order(m, rng)
        a = rng.randrange(0, m.n + 1)
        b = rng.randrange(a, m.n + 1)
        S0 = np.zeros(m.n, bool)
        S0[order[:a]] = True
        T = np.zeros(m.n, bool)
        T[order[:b]] = True
        sm = sub_model(m, S0, T)
        src = [0] if sm.ops and sm.ops[0] == -1 else []
        sub_order = src + [sm.ops.index(v) for v in order[a:b]]
        assert sm.is_topological(sub_order)
        prof = sm.profile(sub_order)[len(src):] + sm.baseline
        assert np.array_equal(prof, m.profile(order)[a:b])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=10), st.integers(0, 2**16))
def test_parts_have_the_whole_graphs_live_bytes(g, seed):
    check_parts(MemoryModel(g), random.Random(seed), 10)


def test_parts_of_a_layered_graph_have_the_whole_graphs_live_bytes():
    """The same on a 60-operator MOCCASIN-shaped graph (tensors with up to 13 readers)."""
    check_parts(MemoryModel(moccasin_layered(seed=0, n_ops=60)), random.Random(0), 200)


def check_screen(m: MemoryModel, rng: random.Random, trials: int) -> None:
    """The screen's identity: for random prefixes ``S0 <= T`` and an operator ``w`` of
    ``T - S0``, the whole graph's closure value of ``w`` with ``S0`` forced and the operators
    outside ``T`` banned is the part's own ``C(w)`` plus the part's baseline."""
    A = ancestor_matrix(m)
    net = ClosureCut(m, A)
    checked = 0
    for _ in range(trials):
        order = random_order(m, rng)
        a = rng.randrange(0, m.n)
        b = rng.randrange(a + 1, m.n + 1)
        S0 = np.zeros(m.n, bool)
        S0[order[:a]] = True
        T = np.zeros(m.n, bool)
        T[order[:b]] = True
        sm = sub_model(m, S0, T)
        snet = ClosureCut(sm, ancestor_matrix(sm))
        for w in order[a:b]:
            whole = net.value(w, S0, banned=~T)[0]
            assert whole == snet.value(sm.ops.index(w))[0] + sm.baseline, (a, b, w)
            checked += 1
    assert checked >= trials


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=10), st.integers(0, 2**16))
def test_the_screen_is_the_parts_own_closure_bound(g, seed):
    check_screen(MemoryModel(g), random.Random(seed), 6)


def test_the_screen_on_a_layered_graph():
    check_screen(MemoryModel(moccasin_layered(seed=0, n_ops=60)), random.Random(1), 40)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8), st.sampled_from([0, 3, 2000]),
       st.lists(st.integers(-3, 40), max_size=3))
def test_decisions_agree_with_brute_force(g, probe_nodes, offsets):
    """``found`` exactly when an order within the budget exists (the order is topological and
    within it), ``failed`` otherwise; with ``probe_nodes=0`` nearly every part is split."""
    opt = brute(g)
    m = MemoryModel(g)
    ps = PivotSearch(m, probe_nodes=probe_nodes, probe_top=probe_nodes != 3)
    for budget in [opt - 1, opt, *(max(opt + d, 0) for d in offsets), opt // 2]:
        r = ps.decide(budget)
        if budget >= opt:
            assert r.status == "found" and m.is_topological(r.order)
            assert r.peak == peak_live_bytes(g, m.to_names(r.order)) <= budget
        else:
            assert r.status == "failed" and r.order is None


def test_a_decision_out_of_time_or_sets_claims_nothing():
    """A past deadline, or a split with more sets than ``max_sets``: ``stopped``, no order."""
    m = MemoryModel(moccasin_layered(seed=0, n_ops=250))
    r = PivotSearch(m).decide(195_559, deadline=time.perf_counter() - 1)
    assert (r.status, r.order, r.peak) == ("stopped", None, None)
    r = PivotSearch(m, max_sets=0, probe_nodes=0, probe_top=False).decide(195_559)
    assert (r.status, r.order) == ("stopped", None)


def test_moccasin_250_is_proved_optimal():
    """``moccasin_layered`` seed 0, 250 operators: the budget search's probes at 195,559 bytes
    never finished (6.7 million states in 15 minutes); the pivot splits prove that no order is
    within it (operator 131 fits after 10 sets only), and ``exact_dp`` returns 195,560 optimal."""
    g = moccasin_layered(seed=0, n_ops=250)
    m = MemoryModel(g)
    ps = PivotSearch(m)
    r = ps.decide(195_559)
    assert r.status == "failed" and r.sets == 10
    r = ps.decide(195_560)
    assert r.status == "found" and r.peak == peak_live_bytes(g, m.to_names(r.order)) <= 195_560
    s = schedule(g, "exact_dp", time_limit=60)
    assert s.status == "optimal" and s.info["peak_bytes"] == s.bound == 195_560
    assert s.info["order_bound"] == 194_170 and s.info["pivot_decisions"] >= 1
    assert peak_live_bytes(g, s.order) == 195_560


def test_splitting_every_part_still_decides_exactly():
    """``moccasin_layered`` seed 0 at 60 operators, every part split (``probe_nodes=0``): the
    decision fails just below ``exact_dp``'s proved optimum and finds an order at it, through
    many parts."""
    g = moccasin_layered(seed=0, n_ops=60)
    s = schedule(g, "exact_dp", time_limit=60, pivot_search=False)
    assert s.status == "optimal"
    opt = s.info["peak_bytes"]
    ps = PivotSearch(MemoryModel(g), probe_nodes=0, probe_top=False)
    below, at = ps.decide(opt - 1), ps.decide(opt)
    assert below.status == "failed" and at.status == "found" and at.peak <= opt
    assert below.parts > 10 and at.parts > 1
    # with no answer kept, parts asked again are decided again: the same outcomes, more parts
    nc = PivotSearch(MemoryModel(g), probe_nodes=0, probe_top=False, max_cache=0)
    below0, at0 = nc.decide(opt - 1), nc.decide(opt)
    assert below0.status == "failed" and at0.status == "found" and at0.peak <= opt
    assert len(nc._cache) <= 1 and below0.parts > below.parts  # (the whole graph, marked probed)


def test_a_stopped_decision_resumes_from_its_settled_parts():
    """Asked again at the same budget, a decision that ran out of work goes on from the parts
    it settled (fewer parts decided anew) and reaches the same proof; a new budget starts over."""
    m = MemoryModel(moccasin_layered(seed=0, n_ops=250))
    fresh = PivotSearch(m).decide(195_559)
    assert fresh.parts > 8
    ps = PivotSearch(m, max_parts=8)
    first = ps.decide(195_559)
    assert first.status == "stopped" and first.order is None and first.parts == 8
    ps.max_parts = None
    again = ps.decide(195_559)
    assert again.status == fresh.status == "failed"
    assert again.parts < fresh.parts
    assert ps.decide(195_560).status == "found"
