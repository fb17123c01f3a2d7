"""Tests of the memory-aware schedulers (scheduling/schedulers/*) and the graph generators."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planners.errors import ParameterError
from scheduling.errors import CycleError, GraphError
from scheduling.generators import GENERATORS, generate
from scheduling.graph import Graph
from scheduling.lifetimes import live_bytes, peak_live_bytes
from scheduling.schedulers import SCHEDULERS, schedule
from scheduling.schedulers.genetic import decode_priorities
from scheduling.schedulers.memsim import MemoryModel

FAST = [s for s in SCHEDULERS if s not in ("cpsat_schedule", "joint")]  # joint: test_joint.py


def build(name: str, sizes: dict[str, int], ops: list[tuple[str, list[str], str]], outputs=()):
    """Graph with input ``x`` (1 byte, resident) and uint8 tensors of the given byte sizes;
    ``ops`` are ``(op name, inputs, output)`` in stored order."""
    g = Graph(name)
    g.add_tensor("x", (1,), "uint8", kind="input")
    for t, b in sizes.items():
        g.add_tensor(t, (b,), "uint8")
    for op, ins, out in ops:
        g.add_op(op, "Op", ins, [out])
    for t in outputs:
        g.mark_output(t)
    return g


def diamond() -> Graph:
    """s -> S(10) -> {b1 -> B1(100) -> c1 -> C1(10), b2 -> B2(100) -> c2 -> C2(10)} -> j -> J(10),
    stored in breadth-first order."""
    sizes = {"S": 10, "B1": 100, "B2": 100, "C1": 10, "C2": 10, "J": 10}
    ops = [
        ("s", ["x"], "S"),
        ("b1", ["S"], "B1"),
        ("b2", ["S"], "B2"),
        ("c1", ["B1"], "C1"),
        ("c2", ["B2"], "C2"),
        ("j", ["C1", "C2"], "J"),
    ]
    return build("diamond", sizes, ops, ["J"])


def xla_trap() -> Graph:
    """The greedy list scheduler's trap: ``c`` (+50 bytes) looks cheaper than ``a`` (+100), but
    running it first keeps C live while ``v`` holds A and V together.

    a: x -> A(100); c: x -> C(50); v: A -> V(99); z: V, C -> Z(1) (output).
    Orders by hand: c,a,v,z peaks at C+A+V = 249; a,v,c,z peaks at A+V = 199 (optimal, because
    ``v`` alone needs its input and output, 100 + 99)."""
    sizes = {"A": 100, "C": 50, "V": 99, "Z": 1}
    ops = [("a", ["x"], "A"), ("c", ["x"], "C"), ("v", ["A"], "V"), ("z", ["V", "C"], "Z")]
    return build("xla_trap", sizes, ops, ["Z"])


def peak(g: Graph, name: str, **params) -> int:
    return peak_live_bytes(g, schedule(g, name, **params).order)


# -- hand-checked small DAGs -----------------------------------------------------------------------
def test_diamond_min_live_beats_bfs():
    g = diamond()
    # BFS: s, b1, b2, c1, c2, j -> at b2: S + B1 + B2 = 210 bytes
    assert schedule(g, "bfs").order == ("s", "b1", "b2", "c1", "c2", "j")
    assert peak(g, "bfs") == 210
    assert peak(g, "file_order") == 210
    # min-live finishes branch 1 first: s, b1, c1, b2, c2, j -> max(S + B1 + C1, S + C1 + B2) = 120
    assert schedule(g, "min_live").order == ("s", "b1", "c1", "b2", "c2", "j")
    for name in ("min_live", "earliest_free", "list_xla", "lpmf", "dfs", "exact_dp", "best_of"):
        assert peak(g, name) == 120, name
    assert schedule(g, "exact_dp").status == "optimal"


def test_xla_trap_greedy_list_scheduler_above_optimum():
    g = xla_trap()
    for name in ("list_xla", "min_live", "lpmf", "earliest_free"):
        assert schedule(g, name).order == ("c", "a", "v", "z"), name
        assert peak(g, name) == 249, name
    assert peak(g, "file_order") == 249  # a, c, v, z: A + C + V at v's step
    # ONNX Runtime's DFS from the outputs reaches V (z's first input) before C: a, v, c, z
    assert schedule(g, "dfs").order == ("a", "v", "c", "z")
    assert peak(g, "dfs") == 199
    s = schedule(g, "exact_dp")
    assert s.status == "optimal" and s.info["peak_bytes"] == 199
    assert peak_live_bytes(g, s.order) == 199
    b = schedule(g, "best_of")
    assert b.info["peak_bytes"] == 199 and b.info["peaks"]["file_order"] == 249
    # critical path only (beta=0): a's path a-v-z (100+99+1) is longer than c's (50+1)
    assert schedule(g, "critical_path", beta=0.0).order == ("a", "v", "c", "z")


def test_cpsat_schedule_proves_the_hand_checked_optima():
    for g, best in ((xla_trap(), 199), (diamond(), 120)):
        s = schedule(g, "cpsat_schedule", time_limit=10.0)
        assert s.status == "optimal"
        assert peak_live_bytes(g, s.order) == best


def test_memory_model_profile_matches_live_bytes():
    g = generate("randwire", seed=3, n_nodes=20)
    m = MemoryModel(g)
    for name in ("file_order", "bfs", "min_live"):
        order = schedule(g, name).order
        idx = m.to_indices(order)
        assert m.profile(idx).tolist() == live_bytes(g, order).tolist()
        assert m.peak(idx) == peak_live_bytes(g, order)


# -- random graphs --------------------------------------------------------------------------------
@st.composite
def random_graphs(draw, max_ops: int = 10):
    """Random DAGs: op i reads 1-3 earlier tensors (or x), random byte sizes, some graph outputs,
    some tensors nobody reads, occasionally two outputs per operator."""
    n = draw(st.integers(2, max_ops))
    g = Graph("rand")
    g.add_tensor("x", (1,), "uint8", kind="input")
    made: list[str] = []
    for i in range(n):
        pool = ["x"] + made
        k = draw(st.integers(1, min(3, len(pool))))
        ins = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=k))
        outs = []
        for j in range(draw(st.integers(1, 2)) if i % 3 == 0 else 1):
            t = f"t{i}_{j}"
            g.add_tensor(t, (draw(st.integers(0, 64)),), "uint8")
            outs.append(t)
        g.add_op(f"op{i}", "Op", ins, outs)
        made.extend(outs)
    g.mark_output(made[-1])
    if draw(st.booleans()) and len(made) > 2:
        g.mark_output(made[0])
    return g


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=12))
def test_every_scheduler_gives_a_topological_order_and_its_true_peak(g):
    dg = g.op_graph()
    file_peak = peak_live_bytes(g)
    for name in FAST:
        params = {"iterations": 200} if name == "anneal" else {}
        if name == "genetic":
            params = {"generations": 5, "population": 6}
        s = schedule(g, name, **params)
        pos = {v: k for k, v in enumerate(s.order)}
        assert sorted(s.order) == sorted(g.ops)
        assert all(pos[u] < pos[v] for u, v in dg.edges), name
        if "peak_bytes" in s.info:
            assert s.info["peak_bytes"] == peak_live_bytes(g, s.order), name
    assert peak(g, "best_of") <= file_peak


def naive_greedy(g: Graph, key) -> list[str]:
    """Reference list scheduler recomputing everything from the graph at every step (O(n^2)):
    ``key(live, peak, alloc, freed, index)`` of each ready operator, smallest first."""
    names = list(g.ops)
    done: set[str] = set()
    live = top = 0
    order = []
    while len(order) < len(names):
        best = None
        for i, v in enumerate(names):
            op = g.ops[v]
            if v in done or any(
                g.tensors[t].producer not in done
                for t in op.inputs
                if g.tensors[t].producer is not None
            ):
                continue
            acts = [t for t in op.outputs]
            alloc = sum(g.tensors[t].nbytes for t in acts)
            freed = sum(
                g.tensors[t].nbytes
                for t in acts
                if not g.tensors[t].consumers and g.tensors[t].kind != "output"
            )
            for t in dict.fromkeys(op.inputs):
                ten = g.tensors[t]
                if ten.producer is None or ten.kind == "output":
                    continue
                if all(c in done or c == v for c in ten.consumers):
                    freed += ten.nbytes
            k = key(live, top, alloc, freed, i)
            if best is None or k < best[0]:
                best = (k, v, alloc, freed)
        _, v, alloc, freed = best
        top = max(top, live + alloc)
        live += alloc - freed
        done.add(v)
        order.append(v)
    return order


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=12))
def test_incremental_greedy_schedulers_match_a_from_scratch_reference(g):
    ref_min_live = naive_greedy(g, lambda L, M, a, f, i: (a - f, a, i))
    assert list(schedule(g, "min_live").order) == ref_min_live
    ref_lpmf = naive_greedy(g, lambda L, M, a, f, i: (max(L + a, M), a - f, i))
    assert list(schedule(g, "lpmf").order) == ref_lpmf
    ref_free = naive_greedy(g, lambda L, M, a, f, i: (-(f - 0), a, i))
    # earliest_free counts only inputs freed; differs from ref_free only by unread outputs
    if all(t.consumers or t.kind == "output" for t in g.tensors.values() if t.producer):
        assert list(schedule(g, "earliest_free").order) == ref_free


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=8))
def test_exact_dp_equals_brute_force_over_all_topological_orders(g):
    brute = min(peak_live_bytes(g, o) for o in nx.all_topological_sorts(g.op_graph()))
    s = schedule(g, "exact_dp")
    assert s.status == "optimal"
    assert s.info["peak_bytes"] == brute == peak_live_bytes(g, s.order)
    # no heuristic beats the proved optimum
    for name in ("min_live", "lpmf", "list_xla", "dfs", "best_of"):
        assert peak(g, name) >= brute


def test_exact_dp_budget_reports_timeout_with_the_best_cheap_order():
    g = generate("randwire", seed=0, n_nodes=32)
    cheap = min(peak(g, "min_live"), peak(g, "dfs"), peak(g, "file_order"))
    # (without the pivot splits: once the probes' 5 states are spent the splits go on alone)
    s = schedule(g, "exact_dp", max_states=5, best_of_start=False, pivot_search=False)
    assert s.status == "timeout"
    assert peak_live_bytes(g, s.order) == cheap == s.info["peak_bytes"]
    # by default the start is the best of every heuristic (best_of's candidates, anneal, genetic)
    b = schedule(g, "exact_dp", max_states=5, pivot_search=False)
    assert b.status == "timeout" and "memo limit of 5 states" in b.info["reason"]
    heur = min(peak(g, "best_of"), peak(g, "anneal"), peak(g, "genetic"))
    assert peak_live_bytes(g, b.order) == heur == b.info["peak_bytes"] < cheap
    assert b.info["initial_winner"] in ("anneal", "genetic")  # here a search beats best_of
    assert b.info["initial_peak"] < peak(g, "best_of")
    full = schedule(g, "exact_dp")  # a few thousand states: proves an optimum below them here
    assert full.status == "optimal" and full.info["peak_bytes"] < cheap
    assert full.info["peak_bytes"] == peak_live_bytes(g, full.order)
    # with the pivot splits, 5 probe states are enough: the decisions prove the same optimum
    p = schedule(g, "exact_dp", max_states=5)
    assert p.status == "optimal" and p.info["pivot_decisions"] >= 1
    assert p.info["peak_bytes"] == full.info["peak_bytes"] == peak_live_bytes(g, p.order)


def test_search_schedulers_are_seeded_and_never_worse_than_their_start():
    g = generate("randwire", seed=2, n_nodes=32)
    greedy = peak(g, "min_live")
    a1 = schedule(g, "anneal", iterations=500, seed=7)
    a2 = schedule(g, "anneal", iterations=500, seed=7)
    assert a1.order == a2.order and a1.info["peak_bytes"] <= greedy
    g1 = schedule(g, "genetic", generations=5, population=8, seed=3)
    g2 = schedule(g, "genetic", generations=5, population=8, seed=3)
    assert g1.order == g2.order and g1.info["peak_bytes"] <= greedy


# -- errors ---------------------------------------------------------------------------------------
def cyclic() -> Graph:
    g = Graph("loop")
    g.add_tensor("t1", (4,), "uint8")
    g.add_tensor("t2", (4,), "uint8")
    g.add_op("a", "Op", ["t2"], ["t1"])
    g.add_op("b", "Op", ["t1"], ["t2"])
    return g


@pytest.mark.parametrize("name", [s for s in SCHEDULERS if s != "file_order"])
def test_cyclic_graph_raises_cycle_error_naming_the_cycle(name):
    with pytest.raises(CycleError, match=r"operator '(a|b)' is on a cycle"):
        schedule(cyclic(), name)


def test_bad_parameters_are_named():
    g = diamond()
    with pytest.raises(ParameterError, match=r"parameter 'alpha' = -1 .* a number in \[0, inf\)"):
        schedule(g, "critical_path", alpha=-1)
    with pytest.raises(ParameterError, match="'direction' = 'sideways'"):
        schedule(g, "dfs", direction="sideways")
    with pytest.raises(ParameterError, match=r"'population' = 2 .* an int in \[4, inf\)"):
        schedule(g, "genetic", population=2)


# -- generators -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, params, n_ops",
    [
        ("random_layered", {"n_ops": 30}, 30),
        ("moccasin_layered", {"n_ops": 40}, 40),
        ("randwire", {"n_nodes": 24}, 25),
        ("nas_cell", {"n_cells": 2, "nodes_per_cell": 3}, 2 * (2 + 9 + 1)),
        ("unet", {"depth": 3, "convs": 2}, 3 * 7 + 2),
        ("transformer", {"n_blocks": 2, "heads": 3, "d_model": 96}, 2 * (9 + 18)),
    ],
)
def test_generators_are_seeded_valid_dags_of_the_documented_size(name, params, n_ops):
    g = generate(name, seed=5, **params)
    h = generate(name, seed=5, **params)
    assert len(g) == n_ops
    assert nx.is_directed_acyclic_graph(g.op_graph())
    assert g.is_topological() and g.outputs
    sig = [(t.name, t.nbytes, tuple(t.consumers)) for t in g.tensors.values()]
    assert sig == [(t.name, t.nbytes, tuple(t.consumers)) for t in h.tensors.values()]
    other = generate(name, seed=6, **params)
    assert sig != [(t.name, t.nbytes, tuple(t.consumers)) for t in other.tensors.values()]


def test_generator_registry_and_errors():
    assert set(GENERATORS) == {"random_layered", "moccasin_layered", "randwire", "nas_cell",
                               "unet", "transformer"}
    with pytest.raises(GraphError, match="unknown generator 'nope'"):
        generate("nope")
    with pytest.raises(GraphError, match="d_model 100 must be divisible by heads 3"):
        generate("transformer", d_model=100, heads=3)
    with pytest.raises(GraphError, match="n_ops must be >= 2"):
        generate("random_layered", n_ops=1)
    with pytest.raises(GraphError, match="moccasin_layered: n_ops must be >= 3"):
        generate("moccasin_layered", n_ops=2)


def test_moccasin_layered_has_one_source_one_sink_and_the_published_shape():
    g = generate("moccasin_layered", seed=1, n_ops=250, width_factor=0.43)
    m = MemoryModel(g)
    assert [m.names[v] for v in range(m.n) if not m.preds[v]] == ["source"]
    assert [m.names[v] for v in range(m.n) if not m.succs[v]] == ["sink"]
    assert g.outputs == ["sink_out"]
    sizes = [t.nbytes for t in g.tensors.values() if t.producer]
    assert all(s % 10 == 0 and 10 <= s <= 8000 for s in sizes)
    # the published n=250 file has 24 layers and 944 edges; this reading of it is close
    assert 18 <= int(m.levels().max()) + 1 <= 30
    assert 700 <= sum(len(p) for p in m.preds) <= 1100


# -- at scale -------------------------------------------------------------------------------------
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=12), st.randoms(use_true_random=False))
def test_vector_peak_equals_the_loop_and_live_bytes_on_orders_and_prefixes(g, rnd):
    m = MemoryModel(g)
    keys = np.asarray([rnd.random() for _ in range(m.n)])
    order = decode_priorities(m, keys)
    assert m.peak_vector(order) == m.peak_loop(order) == peak_live_bytes(g, m.to_names(order))
    for k in range(len(order) + 1):  # a prefix: tensors still to be read stay live to its end
        assert m.peak_vector(order[:k]) == m.peak_loop(order[:k])


def test_vector_peak_is_exact_above_2_to_the_53():
    # sizes whose sums float64 cannot hold exactly: the int64 path, the same as the loop
    sizes = {"a": 2**60 + 1, "b": 2**60 + 3, "c": 5}
    g = build("big", sizes, [("p", ["x"], "a"), ("q", ["a"], "b"), ("r", ["b"], "c")], ["c"])
    m = MemoryModel(g)
    assert not m._float_exact
    assert m.peak_vector([0, 1, 2]) == m.peak_loop([0, 1, 2]) == 2**61 + 4


@pytest.fixture(scope="module")
def big_graph() -> Graph:
    return generate("moccasin_layered", seed=0, n_ops=20_000)


def test_schedulers_at_20000_operators_return_and_say_what_stopped_them(big_graph):
    g = big_graph
    # the budget is work: two generations of four orders (elite 2: two new per generation)
    s = schedule(g, "genetic", generations=2, population=4)
    assert s.info["encoding"] == "order" and s.info["stopped_by"] == "generations"
    assert s.info["generations"] == 2 and s.info["evaluations"] == 4 + 2 * 2
    ml = schedule(g, "min_live")
    assert s.info["peak_bytes"] <= ml.info["peak_bytes"] == peak_live_bytes(g, ml.order)
    assert s.order == schedule(g, "genetic", generations=2, population=4).order  # seeded
    # a wall clock too short for one generation stops it, and it says so
    t = schedule(g, "genetic", time_limit=1e-3)
    assert t.info["stopped_by"] == "time_limit" and t.info["generations"] == 0
    assert t.info["peak_bytes"] <= ml.info["peak_bytes"]
    # exact_dp with a limit its set-up cannot meet: timeout with the best order it has
    e = schedule(g, "exact_dp", time_limit=0.05)
    assert e.status == "timeout" and e.info["peak_bytes"] == peak_live_bytes(g, e.order)
    assert e.info["peak_bytes"] <= ml.info["peak_bytes"]
    assert e.info["states"] == 0 and "initial" in e.info["reason"]
    assert e.info["initial_skipped"]  # the candidates after min_live: the time was spent
    assert ml.bound >= e.bound >= MemoryModel(g).op_lower_bound()


def test_exact_dp_memo_of_a_wide_segment_is_capped_by_bytes(monkeypatch):
    # the memo holds one k-bit set per state: a segment's states are capped at MEMO_BYTES over
    # (200 + k / 8) bytes (at least 1,000), below max_states, and the reason says so
    import scheduling.schedulers.exact_dp as exact_dp

    g = generate("moccasin_layered", seed=0, n_ops=100)
    free = schedule(g, "exact_dp", budget_search=False, time_limit=None, max_states=20_000)
    assert free.info["states"] > 1001
    monkeypatch.setattr(exact_dp, "MEMO_BYTES", 100_000)
    s = schedule(g, "exact_dp", budget_search=False, time_limit=None, max_states=20_000)
    assert s.status == "timeout" and s.info["states"] == 1001
    assert "memo limit of 1000 states reached (100000 bytes for sets of" in s.info["reason"]
    assert s.info["peak_bytes"] == peak_live_bytes(g, s.order) <= peak(g, "best_of")
