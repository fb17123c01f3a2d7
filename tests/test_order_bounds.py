"""The order lower bound (scheduling/schedulers/bounds.py), complete cuts, exact_dp's divide and
conquer and the one status rule of every scheduler."""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import build, diamond, random_graphs, xla_trap

from scheduling.generators import moccasin_layered, random_layered
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.schedulers import schedule
from scheduling.schedulers.base import decide_status
from scheduling.schedulers.bounds import complete_cuts, order_bound_details, order_lower_bound
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


def test_bound_sizes_are_stated_when_skipped():
    g = random_layered(seed=1, n_ops=20)
    d = order_bound_details(g, pair_max_ops=10)
    assert d["pair"] is None and "pair bound not computed: 20 operators > 10" in d["skipped"]
    d = order_bound_details(g, cut_max_ops=10)
    assert d["cut"] is None and d["bound"] == d["op"] == MemoryModel(g).op_lower_bound()


# -- property tests against brute force ------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8))
def test_bound_never_above_the_brute_force_optimum_and_exact_dp_reaches_it(g):
    opt = brute(g)
    d = order_bound_details(g)
    for key in ("op", "cut", "pair"):
        assert d[key] is None or d[key] <= opt, key
    s = schedule(g, "exact_dp")
    assert s.status == "optimal" and s.info["peak_bytes"] == opt == s.bound
    assert peak_live_bytes(g, s.order) == opt
    h = schedule(g, "min_live")  # a heuristic's bound is the order bound, never above the optimum
    assert h.bound == d["bound"] <= opt
    assert h.status == ("optimal" if peak_live_bytes(g, h.order) <= h.bound else "heuristic")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    whole = schedule(g, "exact_dp", decompose=False, best_of_start=False, time_limit=None)
    parts = schedule(g, "exact_dp", best_of_start=False, time_limit=None)
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
    seg = schedule(g, "exact_dp", best_of_start=False, time_limit=None)
    assert seg.status == "optimal" and seg.info["segments_searched"] == 3
    limit = seg.info["memo_peak_states"]  # enough for every segment, not for the whole graph
    assert limit < seg.info["states"]
    whole = schedule(g, "exact_dp", decompose=False, best_of_start=False, time_limit=None,
                     max_states=limit)
    assert whole.status == "timeout" and f"memo limit of {limit} states" in whole.info["reason"]
    assert whole.bound < whole.info["peak_bytes"]
    parts = schedule(g, "exact_dp", best_of_start=False, time_limit=None, max_states=limit)
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
