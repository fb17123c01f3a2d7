"""The compiled engine of the order decision (scheduling/_ext/_budget.c) against its Python
reference: the closure flows give the same values and sets as OR-Tools' max-flow, and the budget
search expands the same states with the same floors, probe after probe (memo, pools and root
witnesses carried over), with every option of the search."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import random_graphs

from scheduling.generators import moccasin_layered, randwire
from scheduling.schedulers import schedule
from scheduling.schedulers.bounds import (
    ClosureCut,
    ancestor_matrix,
    compiled_module,
    complete_cuts,
    resolve_engine,
)
from scheduling.schedulers.budget_search import BudgetSearch
from scheduling.schedulers.memsim import MemoryModel
from scheduling.schedulers.pivot_search import PivotSearch

pytestmark = pytest.mark.skipif(compiled_module() is None,
                                reason="scheduling._budget is not built (pip install -e .)")


def down_set(m: MemoryModel, rng: random.Random, avoid: np.ndarray) -> np.ndarray:
    """A random down-set of ``m`` none of whose operators is in the up-set ``avoid``."""
    indeg = [len(p) for p in m.preds]
    ready = [v for v in range(m.n) if not indeg[v] and not avoid[v]]
    D = np.zeros(m.n, bool)
    for _ in range(rng.randrange(m.n + 1)):
        if not ready:
            break
        v = ready.pop(rng.randrange(len(ready)))
        D[v] = True
        for s in m.succs[v]:
            indeg[s] -= 1
            if not indeg[s] and not avoid[s]:
                ready.append(s)
    return D


def check_flows(m: MemoryModel, rng: random.Random, trials: int) -> None:
    A = ancestor_matrix(m)
    c_net, py_net = ClosureCut(m, A, engine="compiled"), ClosureCut(m, A, engine="python")
    assert c_net.cnet is not None and py_net.flow is not None
    for _ in range(trials):
        v = rng.randrange(m.n)
        below = A[:, v].copy()  # v's descendants and v: kept out
        below[v] = True
        banned = None
        if rng.random() < 0.5:  # an up-set beside them: the descendants of a few operators
            banned = np.zeros(m.n, bool)
            for u in rng.sample(range(m.n), min(2, m.n)):
                if not A[v, u] and u != v:
                    banned |= A[:, u]
                    banned[u] = True
            banned &= ~A[v]
            banned = banned | below  # an up-set holding v's descendants
            banned = np.asarray([banned[u] or (A[u] & banned).any() for u in range(m.n)])
            if (banned & A[v]).any():
                banned = None
        forced = None
        kept = below if banned is None else banned | below
        if rng.random() < 0.7:
            forced = down_set(m, rng, kept)
        elif rng.random() < 0.5:  # any set beside the kept-out ones: its ancestors come along
            forced = np.asarray([rng.random() < 0.3 for _ in range(m.n)]) & ~kept
        for largest in (False, True):
            try:
                c2, D2 = py_net.value(v, forced, largest=largest, banned=banned)
            except ValueError as e:  # a forced operator after a kept-out one: no set fits
                assert "no down-set fits" in str(e)
                with pytest.raises(ValueError, match="no down-set fits"):
                    c_net.value(v, forced, largest=largest, banned=banned)
                continue
            c1, D1 = c_net.value(v, forced, largest=largest, banned=banned)
            assert c1 == c2 and np.array_equal(D1, D2), (v, largest)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=12), st.integers(0, 2**16))
def test_compiled_flows_equal_or_tools(g, seed):
    check_flows(MemoryModel(g), random.Random(seed), 8)


def test_compiled_flows_on_larger_graphs():
    for g in (moccasin_layered(seed=0, n_ops=80), randwire(seed=0, n_nodes=40)):
        check_flows(MemoryModel(g), random.Random(0), 60)


def test_compiled_flows_refuse_a_forced_descendant():
    m = MemoryModel(moccasin_layered(seed=0, n_ops=12))
    A = ancestor_matrix(m)
    v = int(np.flatnonzero(A.any(axis=1))[0])  # an operator with an ancestor
    u = int(np.flatnonzero(A[v])[0])
    forced = A[u].copy()
    forced[u] = True
    for engine in ("compiled", "python"):
        with pytest.raises(ValueError, match=f"forced to run before operator {u}"):
            ClosureCut(m, A, engine=engine).value(u, forced)


def probes(m: MemoryModel, budgets: list[tuple[int, int]], **kw) -> None:
    """Both engines, the same probes in the same order: identical outcomes and counts."""
    A = ancestor_matrix(m)
    cuts = complete_cuts(m, A)
    c = BudgetSearch(m, A, cuts, engine="compiled", **kw)
    p = BudgetSearch(m, A, cuts, engine="python", **kw)
    assert c.engine == "compiled" and p.engine == "python"
    for budget, nodes in budgets:
        rc, rp = c.probe(budget, nodes), p.probe(budget, nodes)
        assert rc == rp, (budget, nodes)
        assert (c.nodes, c.flows) == (p.nodes, p.flows)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=12), st.booleans(), st.booleans(), st.integers(1, 4),
       st.lists(st.tuples(st.integers(-40, 40), st.sampled_from([1, 3, 10, 10**6])),
                min_size=1, max_size=6))
def test_compiled_probes_equal_the_python_reference(g, lookahead, reduce, chain, asks):
    m = MemoryModel(g)
    base = m.op_lower_bound()
    probes(m, [(max(base + d, 0), k) for d, k in asks], lookahead=lookahead, reduce=reduce,
           chain=chain)


def test_compiled_probes_on_larger_graphs():
    """60-operator MOCCASIN-shaped and 41-operator RandWire graphs: probes from below the
    closure bound to well above it, some stopped by their state limits (the memo, pools and root
    witnesses they leave are used by the next ones), and a memo limit that fills."""
    for g in (moccasin_layered(seed=0, n_ops=60), randwire(seed=1, n_nodes=40)):
        m = MemoryModel(g)
        A = ancestor_matrix(m)
        lo = int(ClosureCut(m, A).upper.min())
        hi = int(m.peak(m.topological()))
        steps = [lo + (hi - lo) * k // 8 for k in range(9)]
        asks = [(b, k) for b in steps for k in (50, 2000)]
        probes(m, asks)
        probes(m, asks, max_memo=40)


def decisions(m: MemoryModel, budgets: list[int], **kw) -> list:
    """Both engines, the same pivot decisions in the same order: identical results."""
    c = PivotSearch(m, engine="compiled", **kw)
    p = PivotSearch(m, engine="python", **kw)
    out = []
    for b in budgets:
        rc, rp = c.decide(b), p.decide(b)
        assert rc == rp, b
        out.append(rc)
    return out


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=10), st.sampled_from([0, 3]),
       st.lists(st.integers(-20, 40), min_size=1, max_size=4))
def test_compiled_pivot_decisions_equal_the_python_reference(g, probe_nodes, offsets):
    """With ``probe_nodes=0`` nearly every part is split: the sets of the compiled enumeration
    are those of the Python one, in the same order."""
    m = MemoryModel(g)
    decisions(m, [max(m.op_lower_bound() + d, 0) for d in offsets], probe_nodes=probe_nodes)


def test_compiled_pivot_decisions_on_a_layered_graph():
    """A 60-operator MOCCASIN-shaped graph split at every part, one byte below its optimum (a
    proof over about a thousand parts) and at it."""
    g = moccasin_layered(seed=0, n_ops=60)
    s = schedule(g, "exact_dp")
    assert s.status == "optimal"
    opt = s.info["peak_bytes"]
    below, at = decisions(MemoryModel(g), [opt - 1, opt], probe_nodes=0, max_sets=400)
    assert below.status == "failed" and below.parts > 500
    assert at.status == "found" and at.peak == opt


def test_engine_names():
    assert resolve_engine("python") == "python"
    assert resolve_engine("auto") == "compiled"
    with pytest.raises(ValueError, match="unknown engine"):
        resolve_engine("fast")


def test_a_compiled_probe_or_enumeration_past_its_deadline_claims_nothing():
    """Deadlines reach the compiled engine as seconds left (its clock need not be
    ``time.perf_counter``'s): a deadline already passed stops the probe at its first state and
    the pivot-set enumeration at its first node, with nothing claimed."""
    import time

    m = MemoryModel(moccasin_layered(seed=0, n_ops=60))
    A = ancestor_matrix(m)
    bs = BudgetSearch(m, A, engine="compiled")
    budget = int(m.peak(m.topological()))  # an order exists within it
    r = bs.probe(budget, 10**6, time.perf_counter() - 1.0)
    assert (r.status, r.order, r.bound) == ("stopped", None, None)
    assert bs.probe(budget, 10**6, time.perf_counter() + 600).status == "found"
    net = ClosureCut(m, A, engine="compiled")
    v = int(np.argmax(net.upper))
    assert net.cnet.sets(v, budget, 10**6, -1.0)[:2] == ("stopped", None)
    st, sets, count = net.cnet.sets(v, budget, 10**6, 600.0)
    assert st == "ok" and len(sets) == count > 0


def test_exact_dp_engines_give_the_same_schedule():
    """``exact_dp(engine=...)``: the compiled engine and the Python reference prove the same
    optimum with the same order, states, flows, pivot decisions and parts (no time limit, so
    no wall clock cuts either run)."""
    g = randwire(seed=0, n_nodes=32)
    keys = ("peak_bytes", "budget_nodes", "budget_flows", "pivot_decisions", "pivot_parts",
            "pivot_sets")
    # the probes alone (15,560 states), then 5 probe states and the pivot decisions (68 parts)
    for extra, key in (({}, "budget_nodes"), ({"max_states": 5}, "pivot_parts")):
        c, p = (schedule(g, "exact_dp", time_limit=None, best_of_start=False, engine=e, **extra)
                for e in ("compiled", "python"))
        assert c.status == p.status == "optimal" and c.order == p.order
        assert [c.info.get(k) for k in keys] == [p.info.get(k) for k in keys]
        assert c.info[key] > 50
    with pytest.raises(ValueError, match="engine"):
        schedule(g, "exact_dp", engine="fast")
