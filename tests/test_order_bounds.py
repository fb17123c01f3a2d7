"""The order lower bound (scheduling/schedulers/bounds.py), complete cuts, exact_dp's divide and
conquer and the one status rule of every scheduler."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import build, diamond, random_graphs, xla_trap

from scheduling.generators import moccasin_layered, random_layered
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.schedulers import schedule
from scheduling.schedulers.base import decide_status
from scheduling.schedulers.bounds import (
    ClosureCut,
    ancestor_matrix,
    closure_bounds,
    complete_cuts,
    order_bound_details,
    order_lower_bound,
    sample_operators,
    sampled_closure_bound,
)
from scheduling.schedulers.budget_search import BudgetSearch
from scheduling.schedulers.memsim import MemoryModel


def brute(g: Graph) -> int:
    """The minimum peak over every topological order (enumerated)."""
    return min(peak_live_bytes(g, o) for o in nx.all_topological_sorts(g.op_graph()))


# -- hand-checked bounds --------------------------------------------------------------------------
def skip_chain() -> Graph:
    """a -> A(10) -> b -> B(10) -> c -> C(10); d reads A and C -> D(1) (output). One order; at c
    A + B + C = 30 are live, while no operator's own inputs and outputs exceed 21 (d: A + C + D)."""
    sizes = {"A": 10, "B": 10, "C": 10, "D": 1}
    ops = [("a", ["x"], "A"), ("b", ["A"], "B"), ("c", ["B"], "C"), ("d", ["A", "C"], "D")]
    return build("skip_chain", sizes, ops, ["D"])


def two_branches() -> Graph:
    """a -> A(100) -> a2 -> A2(1); b -> B(100) -> b2 -> B2(1); j joins A2, B2 -> J(1).
    Whichever of a2, b2 runs second has its input, its output and the other's 1-byte output live:
    100 + 1 + 1 = 102, the optimum; one operator alone needs at most 101."""
    sizes = {"A": 100, "B": 100, "A2": 1, "B2": 1, "J": 1}
    ops = [("a", ["x"], "A"), ("b", ["x"], "B"), ("a2", ["A"], "A2"), ("b2", ["B"], "B2"),
           ("j", ["A2", "B2"], "J")]
    return build("two_branches", sizes, ops, ["J"])


def test_each_bound_on_hand_checked_graphs():
    d = order_bound_details(skip_chain())
    assert (d["op"], d["cut"]) == (21, 30) and d["bound"] == 30 == brute(skip_chain())
    d = order_bound_details(two_branches())
    assert (d["op"], d["cut"], d["pair"]) == (101, 101, 102)
    assert d["bound"] == 102 == brute(two_branches())
    d = order_bound_details(xla_trap())  # v alone: A + V = 199, the optimum
    assert d["op"] == 199 and d["bound"] == 199
    # diamond: b1 alone needs S + B1 = 110; of c1 and c2, the second runs with the first's
    # 10-byte output, its input and its output live: 120, the optimum
    d = order_bound_details(diamond())
    assert (d["op"], d["cut"], d["pair"]) == (110, 110, 120) and brute(diamond()) == 120


def side_reader() -> Graph:
    """a -> A(10); b reads A -> B(10); c reads B -> C(10), unread; d reads A -> D(10), the output.
    When c runs, either d has not run (A is still live: A + B + C = 30) or it has (A is freed,
    but D, a graph output, is live: B + D + C = 30); the optimum is 30. c's own inputs and the
    tensors its ancestors make for c and its descendants are only B + C = 20, and every pair
    bound is 20 too: only the least live set around c (closure) sees 30."""
    sizes = {"A": 10, "B": 10, "C": 10, "D": 10}
    ops = [("a", ["x"], "A"), ("b", ["A"], "B"), ("c", ["B"], "C"), ("d", ["A"], "D")]
    return build("side_reader", sizes, ops, ["D"])


def test_closure_bound_by_hand():
    g = side_reader()
    d = order_bound_details(g)
    assert (d["op"], d["cut"], d["pair"], d["closure"]) == (20, 20, 20, 30)
    assert d["bound"] == 30 == brute(g)
    m = MemoryModel(g)
    A = ancestor_matrix(m)
    net = ClosureCut(m, A)
    c, dd = m.index["c"], m.index["d"]
    value, D = net.value(c)
    assert value == 30 and set(m.to_names(list(D.nonzero()[0]))) in ({"a", "b"}, {"a", "b", "d"})
    assert net.upper[c] == 30  # D = anc(c) = {a, b}: A (d unread) + B, plus C
    forced = np.zeros(m.n, bool)
    forced[[m.index["a"], dd]] = True
    assert net.value(c, forced)[0] == 30  # d run before c: B + D + C
    assert net.value(dd)[0] == 20  # d first after a: A + D
    with pytest.raises(ValueError, match="forced to run before operator"):
        net.value(dd, forced)
    best, C = closure_bounds(m, A)
    assert best == 30 and C[c] == 30


def enumerated_least_live(m: MemoryModel, A, v: int, S: set[int]) -> int:
    """Bound 4 by definition: the least alloc(v) + live(D) over every down-set D holding S and
    v's ancestors, and neither v nor a descendant of v (all subsets enumerated)."""
    n = m.n
    best = None
    for bits in range(1 << n):
        D = {u for u in range(n) if bits >> u & 1}
        if any(p not in D for u in D for p in m.preds[u]):
            continue
        if not (S | set(np.flatnonzero(A[v]).tolist())) <= D or v in D or any(A[u, v] for u in D):
            continue
        live = live_after(m, D)
        best = live if best is None else min(best, live)
    return int(m.alloc[v]) + best


def live_after(m: MemoryModel, D: set[int]) -> int:
    """Bytes live once exactly the operators ``D`` have run (memsim's convention)."""
    return sum(int(m.size[t]) for t in range(m.m) if int(m.producer[t]) in D and (
        m.keep[t] or any(c not in D for c in m.consumers[t])))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8), st.randoms(use_true_random=False))
def test_closure_cut_is_the_least_live_set_and_never_above_the_optimum(g, rnd):
    m = MemoryModel(g)
    A = ancestor_matrix(m)
    net = ClosureCut(m, A)
    for v in range(m.n):
        free = [u for u in range(m.n) if u != v and not A[u, v]]
        S = set(rnd.sample(free, rnd.randint(0, len(free))))
        S |= {u for s in S for u in np.flatnonzero(A[s]).tolist()}  # close downwards
        forced = np.zeros(m.n, bool)
        forced[sorted(S)] = True
        value, D = net.value(v, forced)
        assert value == enumerated_least_live(m, A, v, S)
        assert D[sorted(S)].all() and not D[v]
        big_value, big = net.value(v, forced, largest=True)
        assert big_value == value and (big >= D).all() and not big[v]
        for W in (D, big):
            assert live_after(m, set(np.flatnonzero(W).tolist())) + int(m.alloc[v]) == value
        assert not any(big[u] and not big[p] for u in range(m.n) for p in m.preds[u])
        if not S:
            assert value <= net.upper[v]
    d = order_bound_details(g)
    assert d["closure"] <= brute(g) and d["closure"] >= d["cut"]


def test_bound_sizes_are_stated_when_skipped():
    g = random_layered(seed=1, n_ops=20)
    d = order_bound_details(g, pair_max_ops=10)
    assert d["pair"] is None and "pair bound not computed: 20 operators > 10" in d["skipped"]
    d = order_bound_details(g, closure_max_ops=10)
    assert d["closure"] is None and "closure bound not computed: 20 operators > 10" in d["skipped"]
    d = order_bound_details(g, cut_max_ops=10, closure_sample=0)
    assert d["cut"] is None and d["closure"] is None and d["bound"] == d["op"] == MemoryModel(g).op_lower_bound()
    # above cut_max_ops the closure bound is computed at a sample of operators, and said so
    d = order_bound_details(g, cut_max_ops=10)
    assert d["cut"] is None and d["closure"] is None and d["sampled_ops"] == 8
    assert "closure bound at 8 sampled operators only" in d["skipped"]
    assert d["bound"] == max(d["op"], d["closure_sampled"]) <= order_bound_details(g)["bound"]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8))
def test_sampled_closure_bound_equals_the_closure_cut_and_stays_below_the_optimum(g):
    # every operator's value without the ancestor matrix is the ClosureCut's (with it), and the
    # sampled bound above cut_max_ops never exceeds the brute-force optimum
    m = MemoryModel(g)
    net = ClosureCut(m, ancestor_matrix(m), engine="python")
    best, vals = sampled_closure_bound(m, ops=range(m.n))
    assert vals == {v: net.value(v)[0] for v in range(m.n)}
    opt = brute(g)
    assert best <= opt
    d = order_bound_details(g, cut_max_ops=0)
    assert d["closure_sampled"] <= best and d["bound"] <= opt


def test_sampled_closure_bound_by_hand():
    # side_reader (above): only the least live set around c sees the optimum, 30 bytes; the
    # other operators' values are their working sets plus what must stay live (a: 10, b: 20)
    g = side_reader()
    m = MemoryModel(g)
    best, vals = sampled_closure_bound(m, ops=range(m.n))
    assert vals[m.index["c"]] == best == 30 == brute(g)
    assert vals[m.index["a"]] == 10 and vals[m.index["b"]] == 20
    assert sample_operators(m, 0) == [] and sampled_closure_bound(m, ops=[]) == (0, {})


def test_sampled_closure_bound_at_5000_operators_is_far_above_the_working_set():
    # moccasin_layered at 5,000 operators: the working-set bound is a few percent of the peak;
    # the closure bound at 8 sampled operators is within a few percent of the best order found
    g = moccasin_layered(seed=0, n_ops=5000)
    d = order_bound_details(g)
    assert d["cut"] is None and d["sampled_ops"] == 8
    assert d["op"] == 174_930 and d["closure_sampled"] == d["bound"]
    s = schedule(g, "min_live")
    assert s.bound == d["bound"] and 20 * d["op"] < d["bound"] <= s.info["peak_bytes"]
    assert s.info["peak_bytes"] / d["bound"] < 1.05


# -- property tests against brute force ------------------------------------------------------------
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8))
def test_bound_never_above_the_brute_force_optimum_and_exact_dp_reaches_it(g):
    opt = brute(g)
    d = order_bound_details(g)
    for key in ("op", "cut", "pair", "closure"):
        assert d[key] is None or d[key] <= opt, key
    s = schedule(g, "exact_dp")
    assert s.status == "optimal" and s.info["peak_bytes"] == opt == s.bound
    assert peak_live_bytes(g, s.order) == opt
    h = schedule(g, "min_live")  # a heuristic's bound is the order bound, never above the optimum
    assert h.bound == d["bound"] <= opt
    assert h.status == ("optimal" if peak_live_bytes(g, h.order) <= h.bound else "heuristic")


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(3, 8), st.integers(1, 3))
def test_cuts_are_exactly_the_prefixes_every_order_shares(seed, n, width):
    g = random_layered(seed=seed, n_ops=n, width=width, p_skip=0.3)
    m = MemoryModel(g)
    topo = m.to_names(m.topological())
    orders = list(nx.all_topological_sorts(g.op_graph()))
    shared = [k for k in range(1, n) if all(set(o[:k]) == set(topo[:k]) for o in orders)]
    assert complete_cuts(m) == shared
    assert order_lower_bound(g) <= min(peak_live_bytes(g, o) for o in orders)


# -- divide and conquer ---------------------------------------------------------------------------
def chain_of_cells(n_cells: int, seed: int = 0, n_ops: int = 14) -> Graph:
    """``n_cells`` MOCCASIN-like layered cells (``n_ops`` operators each) joined by one operator
    each: every join is an articulation operator (all paths cross it)."""
    g = Graph(f"cells{n_cells}")
    g.add_tensor("x", (1,), "uint8", kind="input")
    prev = "x"
    for c in range(n_cells):
        cell = moccasin_layered(seed=seed + c, n_ops=n_ops, width_factor=0.6)
        ren = {t: f"c{c}_{t}" for t in cell.tensors if t != "x"}
        ren["x"] = prev
        for t in cell.tensors.values():
            if t.name != "x":
                g.add_tensor(ren[t.name], t.shape, t.dtype, nbytes=t.nbytes)
        for op in cell.ops.values():
            g.add_op(f"c{c}_{op.name}", op.op_type, [ren[t] for t in op.inputs],
                     [ren[t] for t in op.outputs])
        out = ren[cell.outputs[0]]
        g.add_tensor(f"j{c}", (64,), "uint8")
        g.add_op(f"join{c}", "Op", [out], [f"j{c}"])
        prev = f"j{c}"
    g.mark_output(prev)
    g.validate()
    return g


def test_divide_and_conquer_matches_the_whole_dp_with_far_fewer_states():
    g = chain_of_cells(3)
    whole = schedule(g, "exact_dp", decompose=False, best_of_start=False, time_limit=None,
                     budget_search=False)
    parts = schedule(g, "exact_dp", best_of_start=False, time_limit=None, budget_search=False)
    assert whole.status == parts.status == "optimal"
    assert parts.info["peak_bytes"] == whole.info["peak_bytes"] == parts.bound
    assert peak_live_bytes(g, parts.order) == parts.info["peak_bytes"]
    # each cell's source, sink and join are articulation operators: at least 3 cuts per cell
    m = MemoryModel(g)
    assert parts.info["segments"] == len(complete_cuts(m)) + 1 >= 9
    assert parts.info["largest_segment"] == 12  # a cell's 14 operators less source and sink
    assert parts.info["states"] < whole.info["states"]


def test_memo_limit_stops_the_whole_dp_but_not_the_segments():
    g = chain_of_cells(3, seed=4)
    dp = {"best_of_start": False, "time_limit": None, "budget_search": False}
    seg = schedule(g, "exact_dp", **dp)
    assert seg.status == "optimal" and seg.info["segments_searched"] == 3
    limit = seg.info["memo_peak_states"]  # enough for every segment, not for the whole graph
    assert limit < seg.info["states"]
    whole = schedule(g, "exact_dp", decompose=False, max_states=limit, **dp)
    assert whole.status == "timeout" and f"memo limit of {limit} states" in whole.info["reason"]
    assert whole.bound < whole.info["peak_bytes"]
    parts = schedule(g, "exact_dp", max_states=limit, **dp)
    assert parts.status == "optimal" and parts.info["peak_bytes"] == seg.info["peak_bytes"]


def test_exact_dp_on_a_wide_layered_graph_reports_timeout_with_a_bound_below_its_peak():
    g = moccasin_layered(seed=0, n_ops=60)
    s = schedule(g, "exact_dp", max_states=2000, time_limit=20)
    heur = min(s.info["initial_peaks"].values())
    assert s.info["peak_bytes"] == peak_live_bytes(g, s.order) <= heur
    assert s.bound <= s.info["peak_bytes"]
    assert s.status == ("optimal" if s.bound == s.info["peak_bytes"] else "timeout")
    if s.status == "timeout":
        assert "memo limit of 2000 states" in s.info["reason"]


# -- budget search ---------------------------------------------------------------------------------
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8), st.booleans(), st.booleans(), st.booleans(),
       st.lists(st.integers(-3, 40), max_size=4))
def test_budget_probes_agree_with_brute_force(g, with_cuts, lookahead, reduce, offsets):
    """A probe finds an order within the budget exactly when one exists, and a failed probe's
    bound is above the budget and never above the optimum (floors memoised across probes), with
    and without the dominance of moves that do not raise the live bytes."""
    opt = brute(g)
    m = MemoryModel(g)
    A = ancestor_matrix(m)
    bs = BudgetSearch(m, A, complete_cuts(m, A) if with_cuts else (), lookahead=lookahead,
                      reduce=reduce)
    for budget in [opt - 1, opt, *(max(opt + d, 0) for d in offsets), opt // 2]:
        r = bs.probe(budget, 10**6)
        if budget >= opt:
            assert r.status == "found" and m.is_topological(r.order)
            assert r.peak == peak_live_bytes(g, m.to_names(r.order)) <= budget
        else:
            assert r.status == "failed" and budget < r.bound <= opt


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=9), st.integers(1, 6))
def test_a_stopped_exact_dp_claims_only_what_its_bound_proves(g, max_states):
    """With a memo limit of a few states the searches stop: the result is optimal only when the
    proved bound meets the peak, and that bound is never above the brute-force optimum."""
    opt = brute(g)
    s = schedule(g, "exact_dp", max_states=max_states, best_of_start=False, time_limit=None)
    peak = peak_live_bytes(g, s.order)
    assert s.info["peak_bytes"] == peak >= opt >= s.bound
    assert s.status == ("optimal" if peak == s.bound else "timeout")
    assert s.info["lower_bound"] <= opt


def test_budget_search_proves_a_250_operator_optimum_at_the_closure_bound():
    """moccasin_layered seed 1 at 250 operators: no heuristic reaches the closure bound, the
    budget search's first probe does; the DP alone stops at its memo limit."""
    g = moccasin_layered(seed=1, n_ops=250)
    closure = order_bound_details(g)["closure"]
    s = schedule(g, "exact_dp", best_of_start=False, time_limit=None)
    assert s.status == "optimal" and s.info["peak_bytes"] == s.bound == closure
    assert peak_live_bytes(g, s.order) == closure < s.info["initial_peak"]
    assert s.info["budget_probes"] == 1 and s.info["budget_nodes"] <= 1000
    again = schedule(g, "exact_dp", best_of_start=False, time_limit=None)
    assert again.order == s.order  # deterministic
    dp = schedule(g, "exact_dp", best_of_start=False, time_limit=None, budget_search=False,
                  max_states=20_000)
    assert dp.status == "timeout" and dp.bound == closure < dp.info["peak_bytes"]


# -- one status rule -------------------------------------------------------------------------------
def test_one_status_rule():
    assert decide_status("heuristic", 100, 100) == "optimal"
    assert decide_status("heuristic", 101, 100) == "heuristic"
    assert decide_status("optimal", 101, 100) == "feasible"  # claimed, not proved
    assert decide_status("timeout", 100, 100) == "optimal"
    g = two_branches()  # the file order a, b, a2, b2, j holds A and B together: 201 > 102
    f = schedule(g, "file_order")
    assert (f.status, f.bound, f.info["peak_bytes"]) == ("heuristic", 102, 201)
    d = schedule(g, "dfs")
    assert d.info["peak_bytes"] == 102 and d.status == "optimal"  # proved by the pair bound
    b = schedule(g, "best_of")
    assert b.status == "optimal" and b.bound == 102


def test_scale_differential_sample_agrees_with_brute_force(monkeypatch):
    # the make-test sample of python -m experiments.bench.sched_scale --differential (the soak
    # runs 2,000): sampled closure bound = ClosureCut, <= the optimum; exact_dp reaches it;
    # peak_vector = the oracle's peak on every order and = peak_loop on every prefix
    from experiments.bench import sched_scale

    rows = sched_scale.run_differential(25, seed=0)
    assert len(rows) == 25 and not [r for r in rows if r["failed"]]
    # the check can fail: a sampled bound one byte too high is caught on every graph
    real = sched_scale.sampled_closure_bound

    def high(m, ops=None, **kw):
        best, vals = real(m, ops=ops, **kw)
        return best + 1, {v: c + 1 for v, c in vals.items()}

    monkeypatch.setattr(sched_scale, "sampled_closure_bound", high)
    rows = sched_scale.run_differential(5, seed=0)
    assert all(r["failed"] and "ClosureCut" in r["why"] for r in rows)
