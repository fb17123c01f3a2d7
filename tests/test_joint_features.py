"""The joint optimiser (scheduling/joint.py) with in-place alias groups, pins and pools: on tiny
graphs its exact result is the brute-force optimum (every topological order x the exact
feature CP-SAT planner on that order's problem), ranked by (traffic cost, total arena); its plans
validate on the problem of their order; pins are honoured and impossible pins are reported."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_schedulers import build, diamond, random_graphs

from planners.errors import CapacityError, FeatureError, ProblemError
from planners.feature_cpsat import traffic_cost
from planners.model import Buffer, MemoryPool, Problem
from planners.registry import get_planner
from planners.validate import check_plan
from scheduling.graph import Graph
from scheduling.joint import joint_optimize, sequential_pairs
from scheduling.lifetimes import lifetime_problem
from scheduling.schedule import check_schedule
from scheduling.transforms import run_pipeline, transformed_problem

START = ["file_order", "min_live", "dfs"]
KW = dict(time_limit=30, deterministic_time=10, schedulers=START, workers=1)


def order_problem(g, order, pins=None, pools=None):
    """The problem of ``order`` with the pins and pools, built here independently."""
    p = lifetime_problem(g, order)
    bufs = [Buffer(b.id, b.start, b.end, b.size, b.alignment, b.kind,
                   (pins or {}).get(b.id)) for b in p.buffers]
    return Problem(bufs, name=p.name, pools=pools)


def brute(g, pins=None, pools=None, ok=lambda order: True):
    """Least (traffic, total arena) over every topological order (``ok`` ones), each planned by
    the exact feature CP-SAT (``cpsat``, proved optimal); ``None`` if no order has a plan."""
    best = None
    for order in nx.all_topological_sorts(g.op_graph()):
        if not ok(order):
            continue
        prob = order_problem(g, order, pins, pools)
        try:
            plan = get_planner("cpsat", time_limit=20).plan(prob)
        except CapacityError:  # a pinned buffer above the first pool's capacity
            continue
        if plan.status == "infeasible":
            continue
        # with pools the plan's status stays "feasible" (no single bound): the solver's word
        assert plan.info.get("solver_status") == "OPTIMAL", plan.info
        key = (traffic_cost(prob, plan.pools) if pools else 0, plan.arena_size)
        best = key if best is None else min(best, key)
    return best


def checked(g, r, pins=None, pools=None):
    """Re-check a JointResult on the problem of its order; ``(traffic, arena)``."""
    check_schedule(g, r.order)
    prob = order_problem(g, r.order, pins, pools)
    assert [b.id for b in prob.buffers] == [b.id for b in r.problem.buffers]
    check_plan(prob, r.offsets, pools=r.pools if pools else None)
    for t, o in (pins or {}).items():
        assert r.offsets_by_id()[t] == o
    if pools:
        arenas = {q.name: int(max([o + s for o, s, k in zip(r.offsets, prob.sizes, r.pools)
                                   if k == i and s] or [0])) for i, q in enumerate(pools)}
        assert arenas == r.arenas
        return traffic_cost(prob, r.pools), sum(arenas.values())
    return 0, int(max((o + s for o, s in zip(r.offsets, prob.sizes)), default=0))


def two_pools(g, frac: float, aligns: tuple[int, int] = (1, 1)):
    """A fast pool holding ``frac`` of the file order's peak (cost 0), a slow one (cost 1), with
    the offset alignments ``aligns`` (bytes; different ones give each pool its own grid)."""
    from scheduling.lifetimes import peak_live_bytes

    cap = int(peak_live_bytes(g, list(g.ops)) * frac)
    return [MemoryPool("sram", cap, aligns[0], 0), MemoryPool("psram", None, aligns[1], 1)]


#: Pool alignments drawn by the property tests: one grid, and two different grids.
ALIGNS = [(1, 1), (16, 1), (4, 8)]


# -- pools --------------------------------------------------------------------------------------


def test_pools_on_the_diamond_match_brute_force_by_hand():
    """Diamond (S 10, B1/B2 100, C1/C2 10, J 10 bytes): the best order (s,b1,c1,b2,c2,j) peaks
    at 120 bytes; an sram of 100 bytes takes one 100-byte buffer at a time, so B1 and B2 (live
    2 steps each) fit in it in turn, the small ones spill: brute force decides the rest."""
    g = diamond()
    pools = [MemoryPool("sram", 100, 1, 0), MemoryPool("psram", None, 1, 1)]
    best = brute(g, pools=pools)
    r = joint_optimize(g, pools=pools, **KW)
    assert r.info["mode"] == "exact" and r.status == "optimal"
    assert checked(g, r, pools=pools) == (r.traffic, r.arena) == best
    assert r.arenas["sram"] <= 100
    assert set(r.pools_by_id().values()) <= {"sram", "psram"}
    assert (r.traffic, r.arena) <= (r.start["traffic"], r.start["arena"])


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=5), st.sampled_from([0.3, 0.6, 1.0]), st.sampled_from(ALIGNS))
def test_exact_joint_with_pools_equals_brute_force(g, frac, aligns):
    pools = two_pools(g, frac, aligns)
    best = brute(g, pools=pools)
    pairs = sequential_pairs(g, START, "telamalloc", time_limit=2, pools=pools)
    r = joint_optimize(g, pools=pools, **KW)
    assert r.info["mode"] == "exact"
    assert checked(g, r, pools=pools) == (r.traffic, r.arena) == best
    assert (r.traffic, r.arena) <= min((p["traffic"], p["arena"]) for p in pairs)
    assert r.bound <= r.arena  # the order bound on the total arena
    # proved (traffic, arena); optimal only at the bound (Planner.plan's rule with pools)
    assert r.status == ("optimal" if r.arena == r.bound else "feasible")


# -- pins ---------------------------------------------------------------------------------------


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(max_ops=5), st.data())
def test_exact_joint_with_pins_equals_brute_force(g, data):
    ids = [b.id for b in lifetime_problem(g).buffers if b.size]
    assume(ids)
    t = data.draw(st.sampled_from(ids))
    pins = {t: data.draw(st.sampled_from([0, 8, 40]))}
    pools = two_pools(g, 0.6, data.draw(st.sampled_from(ALIGNS))) if data.draw(st.booleans()) \
        else None
    best = brute(g, pins=pins, pools=pools)
    r = joint_optimize(g, pins=pins, pools=pools, **KW)
    if best is None:
        assert r.status == "infeasible" and r.offsets is None
        return
    assert checked(g, r, pins=pins, pools=pools) == (r.traffic, r.arena) == best
    assert r.bound <= best[1]


def test_pins_on_the_diamond_by_hand():
    """B1 pinned at 0 and B2 at 50 share bytes [50, 100): they must never be live together, so
    only the orders finishing one branch before the other keep them apart."""
    g = diamond()
    pins = {"B1": 0, "B2": 50}
    best = brute(g, pins=pins)
    r = joint_optimize(g, pins=pins, **KW)
    assert checked(g, r, pins=pins) == (0, r.arena) == best
    st_ = {n: k for k, n in enumerate(r.order)}
    assert st_["c1"] < st_["b2"] or st_["c2"] < st_["b1"]
    assert r.status == "optimal" and r.bound == r.arena


def test_pins_colliding_on_every_order_are_reported_infeasible():
    """S (read by b1 and b2) is live whenever B1 is: pinned over common bytes they always
    collide -- no plan, the reason in one line."""
    g = diamond()
    r = joint_optimize(g, pins={"S": 0, "B1": 5}, **KW)
    assert r.status == "infeasible" and r.offsets is None and r.schedule is None
    assert "'S'" in r.info["reason"] and "'B1'" in r.info["reason"]
    assert "\n" not in r.info["reason"]
    assert brute(g, pins={"S": 0, "B1": 5}) is None


def test_bad_pins_and_feature_combinations_are_named():
    g = diamond()
    with pytest.raises(ProblemError, match="pin of 'nope'"):
        joint_optimize(g, pins={"nope": 0}, **KW)
    with pytest.raises(ProblemError, match="pin of 'B1'.*multiple of the alignment 4"):
        joint_optimize(g, pins={"B1": 2}, alignment=4, **KW)
    g2, _ = run_pipeline(inplace_graph(), "inplace")
    with pytest.raises(FeatureError, match="alias groups .* with pools"):
        joint_optimize(g2, pools=[MemoryPool("sram")], **KW)


# -- in-place aliases ---------------------------------------------------------------------------


def inplace_graph() -> Graph:
    """a: x -> A(100); d: A -> D(50); b: Relu(A) -> B(100); c: Relu(B) -> C(100);
    e: Add(C, D) -> E(100, output). The in-place pass writes B over A, C over B, E over C, so
    ``d`` (A's other reader) must run before ``b``."""
    h = Graph("ew")
    h.add_tensor("x", (1,), "uint8", kind="input")
    for t, b in {"A": 100, "B": 100, "C": 100, "D": 50, "E": 100}.items():
        h.add_tensor(t, (b,), "uint8")
    h.add_op("a", "Conv", ["x"], ["A"])
    h.add_op("d", "Conv", ["A"], ["D"])
    h.add_op("b", "Relu", ["A"], ["B"])
    h.add_op("c", "Relu", ["B"], ["C"])
    h.add_op("e", "Add", ["C", "D"], ["E"])
    h.mark_output("E")
    return h


def alias_brute(g2) -> int:
    """Least arena over the orders that keep every in-place read before its overwrite (checked
    here from the annotations: every other reader of an overwritten input runs first)."""
    rules = []
    for name, op in g2.ops.items():
        for _child, parent, _ in op.attributes.get("aliases", ()):
            if op.attributes.get("kernel", "").endswith("_inplace"):
                rules += [(c, name) for c in g2.tensors[parent].consumers if c != name]
    best = None
    for order in nx.all_topological_sorts(g2.op_graph()):
        k = {n: i for i, n in enumerate(order)}
        if any(k[a] > k[b] for a, b in rules):
            continue
        plan = get_planner("cpsat", time_limit=20).plan(transformed_problem(g2, order))
        assert plan.status == "optimal"
        best = plan.arena_size if best is None else min(best, plan.arena_size)
    return best


def test_inplace_graph_by_hand_and_brute_force():
    """One alias group A/B/C/E (100 bytes, live from a to the end) beside D (50 bytes, from d to
    e): 150 bytes in every valid order, which the exact model proves."""
    g2, logs = run_pipeline(inplace_graph(), "inplace")
    assert logs[0].count("inplace") == 3
    r = joint_optimize(g2, **KW)
    prob = transformed_problem(g2, r.order)
    assert prob.aliases == r.problem.aliases and len(prob.aliases) == 3
    check_plan(prob, r.offsets)
    k = {n: i for i, n in enumerate(r.order)}
    assert k["d"] < k["b"]
    assert r.arena == alias_brute(g2) == 150
    assert (r.status, r.bound) == ("optimal", 150)


def concat_graph() -> Graph:
    """Two branches x -> p1 -> P1 -> r1 (Relu) -> R1 and x -> p2 -> P2 -> r2 (Relu) -> R2, a
    Concat k of R1, R2 -> K (output) and a side reader s of P1 -> Q; with the in-place pass R1
    overwrites P1 (so ``s`` must run before ``r1``), with fusion the concat writes in place."""
    g = build("cat", {"P1": 40, "P2": 40, "R1": 40, "R2": 40, "Q": 30, "K": 80}, [], [])
    g.add_op("p1", "Conv", ["x"], ["P1"])
    g.add_op("p2", "Conv", ["x"], ["P2"])
    g.add_op("s", "Conv", ["P1"], ["Q"])
    g.add_op("r1", "Relu", ["P1"], ["R1"])
    g.add_op("r2", "Relu", ["P2"], ["R2"])
    g.add_op("k", "Concat", ["R1", "R2"], ["K"], {"axis": 0})
    g.mark_output("K")
    g.mark_output("Q")
    return g


@pytest.mark.parametrize("pipeline", ["inplace", "simplify,views,fuse,inplace"])
def test_pipeline_graph_validates_on_its_transformed_problem_and_beats_its_start(pipeline):
    g2, _ = run_pipeline(concat_graph(), pipeline)
    pairs = sequential_pairs(g2, START, "telamalloc", time_limit=2)
    r = joint_optimize(g2, **KW)
    prob = transformed_problem(g2, r.order)
    assert prob.aliases and prob.aliases == r.problem.aliases
    check_plan(prob, r.offsets)
    assert r.arena == int(max(o + s for o, s in zip(r.offsets, prob.sizes)))
    assert r.arena <= min(p["arena"] for p in pairs)
    assert r.arena == alias_brute(g2)
    assert r.bound <= r.arena


def test_order_that_breaks_an_inplace_decision_is_refused():
    g2, _ = run_pipeline(inplace_graph(), "inplace")
    bad = {"scheduler": "x", "order": ["a", "b", "c", "d", "e"],
           "offsets": {"A": 0, "B": 0, "C": 0, "D": 100, "E": 0}}
    with pytest.raises(ValueError, match="'d' must run before the in-place operator 'b'"):
        joint_optimize(g2, start=bad, **KW)


# -- anytime mode and determinism ---------------------------------------------------------------


def test_lns_with_pools_pins_and_aliases_is_valid_and_deterministic():
    from scheduling.generators import generate

    g = generate("randwire", seed=3, n_nodes=24)
    pools = two_pools(g, 0.5)
    kw = dict(time_limit=60, deterministic_time=1.5, schedulers=START, planner="greedy",
              exact_max_ops=0, workers=1, seed=2)
    a = joint_optimize(g, pools=pools, **kw)
    b = joint_optimize(g, pools=pools, **kw)
    assert a.info["mode"] == "lns"
    # stopped by the work budget, not the clock (issue #34), so the two runs are the same
    assert [r.info["stopped_by"] for r in (a, b)] == ["deterministic_time"] * 2
    assert a.order == b.order and np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.pools, b.pools)
    assert checked(g, a, pools=pools) == (a.traffic, a.arena)
    assert (a.traffic, a.arena) <= (a.start["traffic"], a.start["arena"])
    first = next(t for t in g.tensors if g.tensors[t].producer == list(g.ops)[2])
    c = joint_optimize(g, pins={first: 64}, **kw)
    assert checked(g, c, pins={first: 64}) == (0, c.arena) and c.arena <= c.start["arena"]
    g2, _ = run_pipeline(concat_graph(), "inplace")
    d = joint_optimize(g2, **kw)
    e = joint_optimize(g2, **kw)
    assert not (c.cut_by_clock or d.cut_by_clock or e.cut_by_clock)
    assert d.order == e.order and np.array_equal(d.offsets, e.offsets)
    check_plan(transformed_problem(g2, d.order), d.offsets)


# -- the scheduler and the CLI ------------------------------------------------------------------


def test_joint_scheduler_carries_pools_and_refuses_colliding_pins():
    from scheduling.schedulers import schedule

    pools = [MemoryPool("sram", 100, 1, 0), MemoryPool("psram", None, 1, 1)]
    s = schedule(diamond(), "joint", time_limit=20, deterministic_time=5, pools=pools,
                 pins={"B1": 0})
    info = s.info
    assert info["offsets"]["B1"] == 0 and info["pools"]["B1"] == "sram"
    assert sum(info["arenas"].values()) == info["arena_bytes"]
    best = brute(diamond(), pins={"B1": 0}, pools=pools)
    assert (info["traffic"], info["arena_bytes"]) == best
    with pytest.raises(ProblemError, match="pinned buffers \\['S', 'B1'\\]"):
        schedule(diamond(), "joint", time_limit=20, pins={"S": 0, "B1": 5})


def _cli_json(capsys, *argv):
    import json

    from experiments.cli import main

    rc = main(["plan", *argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_cli_joint_with_a_pipeline_validates_on_the_transformed_problem(tmp_path, capsys):
    from experiments.cli.check import read_offsets
    from experiments.cli.plan import _graph_and_kind

    csv = tmp_path / "j.csv"
    pipe = "simplify,views,fuse,inplace"
    out = _cli_json(capsys, "mobilenet_v2", "--scheduler", "joint", "--planner", "joint",
                    "--pipeline", pipe, "--time-limit", "20", "--scheduler-param",
                    "deterministic_time=1", "--scheduler-param", "planner=greedy_by_size",
                    "-o", str(csv))
    g2, _ = run_pipeline(_graph_and_kind("mobilenet_v2")[0], pipe)
    prob = transformed_problem(g2, out["order"])
    assert prob.aliases  # the in-place and view groups of the passes
    offs = read_offsets(csv, prob.ids)
    check_plan(prob, offs)
    assert out["valid"] and out["arena"] == int(max(o + s for o, s in zip(offs, prob.sizes)))
    assert out["joint_bound"] <= out["arena"] <= out["start_arena"]
    assert out["status"] == ("optimal" if out["arena"] == out["joint_bound"] else "feasible")


def test_cli_joint_with_pools_gives_each_buffer_a_pool(capsys):
    out = _cli_json(capsys, "mobilenet_v2", "--scheduler", "joint", "--planner", "joint",
                    "--pools", "sram=512k,psram=inf", "--time-limit", "20",
                    "--scheduler-param", "deterministic_time=1",
                    "--scheduler-param", "planner=greedy")
    assert out["valid"] and set(out["arenas"]) == {"sram", "psram"}
    assert sum(out["arenas"].values()) == out["arena"] and out["arenas"]["sram"] <= 512 * 1024
    assert out["joint_bound"] <= out["arena"] <= out["start_arena"]
