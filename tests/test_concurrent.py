"""Lifetimes over a partial order (planners.concurrent, scheduling.streams; issue #35 section 1).

Hand-checked vectors, properties against the interval model (one stream), the differential
sample against oracles written from the definitions (experiments.bench.concurrent_differential:
conflicts by networkx reachability, bound by enumerating subsets, optimum by exhaustive offsets),
every registered planner on a two-stream problem, file round trips, and the importer checked
against simulated interleavings of the streams.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from conftest import examples, shared_case
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.bench.concurrent_differential import Oracle, random_concurrent, run
from planners.bounds import lower_bound
from planners.concurrent import (
    ConcurrentBuffer,
    ConcurrentProblem,
    check_concurrent_plan,
    concurrent_lower_bound,
    concurrent_planners,
    greedy_concurrent,
    max_weight_antichain,
    plan_concurrent,
)
from planners.errors import InvalidPlanError, ProblemError
from planners.greedy import greedy_offsets
from planners.interference import interference_edges
from planners.model import STATUSES, Buffer, Problem
from scheduling.generators import random_layered
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem
from scheduling.streams import assign_streams, concurrent_problem, stream_orders

B = ConcurrentBuffer

#: The registered planners that are the greedy engine (planners.greedy.GreedyPlanner's _solve).
GREEDY_ENGINE = ("greedy_in_order", "first_fit", "best_fit", "greedy_by_size",
                 "greedy_by_size_best_fit", "greedy_by_breadth", "greedy_by_conflicts",
                 "lifetime_aware", "greedy")


def two_stream() -> ConcurrentProblem:
    """Hand-checked two-stream problem (sizes in bytes, closed step ranges).

    stream 0: steps 0..4, stream 1: steps 0..3; edges (0,0)->(1,1) and (1,2)->(0,3).
      a: stream 0 [0, 1], read at (1, 1)    8 bytes
      b: stream 1 [0, 1]                    4
      c: stream 1 [2, 3]                    8
      d: stream 0 [2, 4]                    6
      e: stream 0 [1, 2]                    3
    a precedes c? a's ends (0,1), (1,1): (1,1) hb (1,2) yes; (0,1) hb (1,2)? no path -> conflict.
    b precedes d? b ends at (1,1); (1,1) reaches (1,2) -> (0,3), not (0,2) -> conflict.
    b precedes c (same stream, 1 < 2): no conflict. e precedes nothing (d starts at its last step,
    c is not reached from (0,2)). Conflicts: ab ac ad ae bd be cd ce de; max antichain
    {a, c, d, e} = 8 + 8 + 6 + 3 = 25 (b + a + d + e = 21 is the other maximal one).
    """
    return ConcurrentProblem(
        [B("a", 0, 0, 1, 8, reads=((1, 1),)), B("b", 1, 0, 1, 4), B("c", 1, 2, 3, 8),
         B("d", 0, 2, 4, 6), B("e", 0, 1, 2, 3)],
        edges=[((0, 0), (1, 1)), ((1, 2), (0, 3))], name="two")


def test_hand_checked_two_stream_problem():
    cp = two_stream()
    assert cp.k == 2
    assert sorted(cp.conflict_pairs()) == [("a", "b"), ("a", "c"), ("a", "d"), ("a", "e"),
                                           ("b", "d"), ("b", "e"), ("c", "d"), ("c", "e"),
                                           ("d", "e")]
    weight, members = max_weight_antichain(cp)
    assert weight == 25 and [cp.buffers[i].id for i in members] == ["a", "c", "d", "e"]
    assert concurrent_lower_bound(cp) == 25
    assert cp.happens_before((1, 2), (0, 3)) and cp.happens_before((0, 0), (1, 3))
    assert not cp.happens_before((0, 1), (1, 3)) and not cp.happens_before((0, 1), (0, 1))
    # hand layout at the bound: a [0, 8), c [8, 16), d [16, 22), e [22, 25), b on c's range
    off = [0, 8, 8, 16, 22]
    assert check_concurrent_plan(cp, off) == 25
    with pytest.raises(InvalidPlanError, match="'a' .* and 'b'"):
        check_concurrent_plan(cp, [0, 4, 8, 16, 22])  # a and b overlap, both live at once
    with pytest.raises(InvalidPlanError, match="alignment"):
        check_concurrent_plan(ConcurrentProblem([B("x", 0, 0, 0, 4, alignment=4)]), [2])


def test_bad_problems_are_refused():
    with pytest.raises(ProblemError, match="cycle"):
        ConcurrentProblem([B("a", 0, 0, 1, 4)], edges=[((0, 1), (1, 0)), ((1, 0), (0, 0))])
    with pytest.raises(ProblemError, match="does not happen after its write"):
        ConcurrentProblem([B("a", 0, 1, 1, 4, reads=((1, 0),))])
    with pytest.raises(ProblemError, match="duplicate buffer id"):
        ConcurrentProblem([B("a", 0, 0, 1, 4), B("a", 1, 0, 1, 4)])
    with pytest.raises(ProblemError, match="before first step"):
        B("a", 0, 3, 1, 4)
    with pytest.raises(ProblemError, match="self-loop"):
        ConcurrentProblem([B("a", 0, 0, 1, 4)], edges=[(0, 1, 0, 1)])


def test_every_planner_plans_two_streams_or_refuses_in_one_line(tmp_path):
    """The done-when of issue #35 section 1: the two-stream problem round-trips through CSV and
    JSON files, plans with every planner (or a one-line refusal) and passes the validator."""
    cp = two_stream()
    path, epath = cp.write_csv(tmp_path / "two.csv")
    assert epath.name == "two.edges.csv"
    from_csv = ConcurrentProblem.read_csv(path, name="two")
    (tmp_path / "two.json").write_text(cp.to_json())
    from_json = ConcurrentProblem.from_json((tmp_path / "two.json").read_text())
    assert from_csv.to_dict() == from_json.to_dict() == cp.to_dict()
    lb = concurrent_lower_bound(cp)
    oracle = Oracle(cp)
    planned = 0
    for name in concurrent_planners():
        p = plan_concurrent(from_json, name, time_limit=5)
        assert p.status in STATUSES
        if p.offsets is None:
            assert p.route == "refused" and p.status in ("skipped", "timeout")
            assert p.info["reason"] and "\n" not in p.info["reason"], name
            continue
        planned += 1
        assert oracle.valid(p.offsets), name
        assert p.arena == check_concurrent_plan(cp, p.offsets) >= lb == 25
        assert (p.status == "optimal") == (p.arena == lb), name
        assert p.route == ("conflict graph" if name in GREEDY_ENGINE + ("conflict_cpsat", "cpsat")
                           else "interval cover"), name
    # refused: exact_search (a decision solver, no capacity) and vela_hillclimb when
    # ethos-u-vela is not installed
    assert planned >= len(concurrent_planners()) - 2
    cs = plan_concurrent(cp, "conflict_cpsat", time_limit=5)
    assert cs.arena == 25 and cs.status == "optimal"


def test_exact_search_plans_the_cover_within_a_capacity():
    cp = ConcurrentProblem(two_stream().buffers, two_stream().edges, capacity=64)
    p = plan_concurrent(cp, "exact_search", time_limit=5)
    assert p.offsets is not None and check_concurrent_plan(cp, p.offsets) == p.arena <= 64


def test_cover_plan_optimal_for_the_cover_is_not_claimed_optimal():
    """Two unsynchronised streams: x [0, 0] then y [1, 1] on stream 0; w [0, 0] then z [1, 2]
    on stream 1 (8, 8, 1, 8 bytes). Real conflicts: x and y with w and z (x precedes y, w
    precedes z): bound 16. In the linear extension (0,0) (1,0) (0,1) (1,1) (1,2) the cover keeps
    x live until z's first event (nothing orders z after x), so x, y, z interfere there: the
    cover's optimum is 24, reported ``feasible``, not ``optimal``."""
    cp = ConcurrentProblem([B("x", 0, 0, 0, 8), B("y", 0, 1, 1, 8), B("w", 1, 0, 0, 1),
                            B("z", 1, 1, 2, 8)])
    assert sorted(cp.conflict_pairs()) == [("x", "w"), ("x", "z"), ("y", "w"), ("y", "z")]
    assert concurrent_lower_bound(cp) == 16
    assert [(b.start, b.end) for b in cp.interval_cover().buffers] == [(0, 4), (2, 4), (1, 3),
                                                                       (3, 4)]
    cover = plan_concurrent(cp, "milp_offsets", time_limit=5)
    assert cover.route == "interval cover" and cover.arena == 24
    assert cover.status == "feasible" and cover.info["cover_status"] == "optimal"
    assert cover.info["cover_lower_bound"] == 24
    direct = plan_concurrent(cp, "greedy_by_size")
    assert direct.arena == 16 and direct.status == "optimal"
    exact = plan_concurrent(cp, "cpsat", time_limit=5)  # native: the conflict-graph model
    assert (exact.route, exact.arena, exact.status) == ("conflict graph", 16, "optimal")


intervals = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6), st.integers(0, 40),
                               st.sampled_from((None, None, 1, 2, 4, 8))),
                     min_size=1, max_size=25)


@settings(max_examples=examples(60), deadline=None, derandomize=True)
@given(intervals)
def test_one_stream_is_the_interval_model(items):
    """With one stream: conflicts = interference pairs, bound = planners.bounds.lower_bound
    (alignments included), and the greedy engine over the conflict edges gives greedy_offsets'
    offsets."""
    prob = Problem([Buffer(f"t{i}", s, s + w + 1, z, a)
                    for i, (s, w, z, a) in enumerate(items)])
    cp = ConcurrentProblem.from_problem(prob)
    a, b = interference_edges(prob, ignore_zero_size=True)
    want = sorted(zip(a.tolist(), b.tolist(), strict=True))
    ca, cb = cp.conflict_edges()
    assert sorted(zip(ca.tolist(), cb.tolist(), strict=True)) == want
    assert concurrent_lower_bound(cp) == lower_bound(prob)
    for order in ("size", "start", "problem", "conflicts"):
        for fit in ("first", "best"):
            got = greedy_concurrent(cp, order, fit)
            assert got.tolist() == greedy_offsets(prob, order, fit).tolist()
            check_concurrent_plan(cp, got)


def test_differential_sample():
    """40 generated problems against the oracles (the full count: python -m
    experiments.bench.concurrent_differential --problems 2000). The single-schedule planning
    that this module replaces is invalid on 14 of them."""
    rows = run(40, seed=0, time_limit=2)
    assert [r["first"] for r in rows if r["disagreements"]] == []
    assert sum(r["comparisons"] for r in rows) > 2000
    assert sum(r["single_schedule_invalid"] for r in rows) == 14
    assert {r["streams"] for r in rows} == {1, 2, 3}


def test_the_oracle_catches_a_wrong_conflict_relation(monkeypatch):
    """The differential can fail: a non-strict happens-before (an event before itself) makes
    buffers meeting at one step share addresses, and the sample finds it."""
    def non_strict(self, rows, cols):
        return self.clocks[rows[:, None], self.streams[cols][None, :]] - 1 \
            <= self.firsts[cols][None, :]

    monkeypatch.setattr(ConcurrentProblem, "precedes_block", non_strict)
    rows = run(20, seed=0, time_limit=1)
    assert sum(r["disagreements"] > 0 for r in rows) >= 10


def test_validator_is_independent_of_the_clocks():
    """Corrupted clocks (every buffer precedes every other, so nothing conflicts) leave the
    validator's verdict unchanged: all offsets 0 are still refused."""
    cp = two_stream()
    cp.clocks[:] = 0
    cp._event_clock[:] = 0
    assert cp.conflict_pairs() == []  # what the corrupted clocks say
    with pytest.raises(InvalidPlanError, match="neither happens before"):
        check_concurrent_plan(cp, [0] * cp.n)
    assert check_concurrent_plan(cp, [0, 8, 8, 16, 22]) == 25


def test_reads_on_the_problem_csv_and_json_round_trip(tmp_path):
    cp = ConcurrentProblem([B("a", 0, 0, 0, 3, 4, ((1, 2), (2, 1))), B("b", 2, 0, 2, 0)],
                           edges=[(0, 0, 1, 1), (0, 0, 2, 1)], alignment=2, capacity=100,
                           name="r")
    text, edges = cp.to_csv()
    assert text.splitlines()[1] == "a,0,0,0,3,4,1:2;2:1"
    assert edges.splitlines() == ["from_stream,from_step,to_stream,to_step", "0,0,1,1", "0,0,2,1"]
    again = ConcurrentProblem.from_csv(text, edges, alignment=2, capacity=100, name="r")
    assert again.to_dict() == cp.to_dict() == ConcurrentProblem.from_json(cp.to_json()).to_dict()
    with pytest.raises(ProblemError, match="line 2"):
        ConcurrentProblem.from_csv("id,stream,first,last,size,reads\na,0,0,0,3,1-2\n")
    with pytest.raises(ProblemError, match="format"):
        ConcurrentProblem.from_dict({"buffers": []})


# ---------------------------------------------------------------------------------------------
# Importer
# ---------------------------------------------------------------------------------------------
def fork() -> Graph:
    """x -> pa -> a, x -> pb -> b, (a, b) -> join -> y (output); 16-byte tensors."""
    g = Graph("fork")
    for t in ("x", "a", "b", "y"):
        g.add_tensor(t, (4,), "float32", kind="input" if t == "x" else "activation")
    g.add_op("pa", "Relu", ["x"], ["a"])
    g.add_op("pb", "Relu", ["x"], ["b"])
    g.add_op("join", "Add", ["a", "b"], ["y"])
    g.mark_output("y")
    return g


def test_importer_hand_checked_fork():
    g = fork()
    assign = assign_streams(g, 2)
    assert assign == {"pa": 0, "pb": 1, "join": 0}
    assert stream_orders(g, assign) == {0: ["pa", "join"], 1: ["pb"]}
    cp = concurrent_problem(g, assign)
    # b is written at (1, 0) and read by join at (0, 1): edge (1,0)->(0,1), read (0, 1);
    # y is an output: held to the end stream 2, which every stream's last step precedes
    assert cp.edges == ((0, 1, 2, 0), (1, 0, 0, 1), (1, 0, 2, 0))
    assert [(b.id, b.stream, b.first, b.last, b.reads) for b in cp.buffers] == [
        ("a", 0, 0, 1, ()), ("b", 1, 0, 0, ((0, 1),)), ("y", 0, 1, 1, ((2, 0),))]
    assert sorted(cp.conflict_pairs()) == [("a", "b"), ("a", "y"), ("b", "y")]
    assert concurrent_lower_bound(cp) == 48
    one = concurrent_problem(g, 1)
    assert concurrent_lower_bound(one) == lower_bound(lifetime_problem(g)) == 48
    with pytest.raises(Exception, match="without a stream"):
        concurrent_problem(g, {"pa": 0})


def _interleavings_overlap(g: Graph, orders: dict[int, list[str]], rng: random.Random):
    """One random interleaving of the streams respecting data edges and stream order (ops
    atomic); the pairs of activation/output tensors live at once in it (closed ranges from the
    producer to the last reader, outputs to the end)."""
    preds = {op: set() for op in g.ops}
    for t in g.tensors.values():
        for c in t.consumers:
            if t.producer is not None:
                preds[c].add(t.producer)
    heads = {s: 0 for s in orders}
    done: list[str] = []
    fin = set()
    while len(done) < len(g.ops):
        ready = [s for s, i in heads.items() if i < len(orders[s])
                 and preds[orders[s][i]] <= fin]
        s = rng.choice(ready)
        op = orders[s][heads[s]]
        heads[s] += 1
        done.append(op)
        fin.add(op)
    pos = {op: k for k, op in enumerate(done)}
    live = {}
    for t in g.tensors.values():
        if t.kind in ("weight", "input") or t.producer is None:
            continue
        hi = len(done) - 1 if t.kind == "output" else max([pos[c] for c in t.consumers],
                                                              default=pos[t.producer])
        live[t.name] = (pos[t.producer], hi)
    return {tuple(sorted((u, v))) for u, v in itertools.combinations(live, 2)
            if live[u][0] <= live[v][1] and live[v][0] <= live[u][1]}


def _check_against_interleavings(g: Graph, seed: int) -> None:
    """Every pair of tensors live at once in some execution of the streams (30 random
    interleavings) is a conflict, and the greedy plan keeps them apart; with one stream the
    conflicts are exactly lifetime_problem's interferences and the bounds agree."""
    rng = random.Random(seed)
    for k in (1, 2, 3):
        assign = assign_streams(g, k)
        cp = concurrent_problem(g, assign)
        conflicts = {tuple(sorted(p)) for p in cp.conflict_pairs()}
        seen = set()
        for _ in range(30):
            seen |= _interleavings_overlap(g, stream_orders(g, assign), rng)
        nonzero = {b.id for b in cp.buffers if b.size}
        seen = {p for p in seen if set(p) <= nonzero}
        assert seen <= conflicts, sorted(seen - conflicts)[:3]
        if k == 1:
            assert seen == conflicts
            prob = lifetime_problem(g, g.topological_order())
            a, b = interference_edges(prob, ignore_zero_size=True)
            ids = [x.id for x in prob.buffers]
            assert {tuple(sorted((ids[i], ids[j]))) for i, j in zip(a.tolist(), b.tolist(),
                                                                      strict=True)} == conflicts
            assert concurrent_lower_bound(cp) == lower_bound(prob)
        p = plan_concurrent(cp, "greedy_by_size")
        off = dict(zip([b.id for b in cp.buffers], p.offsets.tolist(), strict=True))
        size = {b.id: b.size for b in cp.buffers}
        for u, v in seen:
            assert off[u] + size[u] <= off[v] or off[v] + size[v] <= off[u]


@pytest.mark.parametrize("seed", range(6))
def test_importer_against_simulated_interleavings(seed):
    _check_against_interleavings(random_layered(seed=seed, n_ops=14, width=4), seed)


def test_importer_on_a_tflite_model():
    """tflm_rand00.tflite (8 arena tensors, branches): the interleaving check, and the price of
    running its branches at once (bound 992 bytes on one stream, the interval peak; more on
    two streams, where tensors of parallel branches are live together)."""
    from scheduling.tflite_import import load_tflite

    g = load_tflite(shared_case("tflm_rand00.tflite")).graph
    _check_against_interleavings(g, 0)
    one, two = concurrent_problem(g, 1), concurrent_problem(g, 2)
    assert concurrent_lower_bound(one) == lower_bound(lifetime_problem(g)) == 992
    assert concurrent_lower_bound(two) > 992


def test_importer_on_an_onnx_model():
    """An imported ONNX graph on two streams plans and validates."""
    from scheduling.onnx_import import load_onnx

    g = load_onnx(shared_case("groupnorm18.onnx"))
    cp = concurrent_problem(g, 2)
    p = plan_concurrent(cp, "greedy_by_size")
    assert p.offsets is not None
    assert check_concurrent_plan(cp, p.offsets) == p.arena >= concurrent_lower_bound(cp) > 0
    assert np.all(p.offsets >= 0)


def test_empty_and_zero_size_problems():
    """No buffers, or only zero-size ones: bound 0, every plan at 0, optimal."""
    for cp in (ConcurrentProblem([]),
               ConcurrentProblem([B("z", 0, 0, 0, 0), B("y", 1, 0, 0, 0)])):
        assert concurrent_lower_bound(cp) == 0 and cp.conflict_pairs() == []
        for name in ("greedy_by_size", "naive", "conflict_cpsat"):
            p = plan_concurrent(cp, name)
            assert p.arena == 0 and p.status == "optimal" and p.offsets.tolist() == [0] * cp.n


@settings(max_examples=examples(40), deadline=None, derandomize=True)
@given(st.integers(0, 10**6))
def test_larger_problems_against_the_reachability_oracle(seed):
    """Up to 30 buffers on streams of up to 12 steps with up to 12 edges (beyond the exhaustive
    oracle): conflicts equal the oracle's, the cover interferes on every conflict, the maximum
    antichain is pairwise conflicting, and plans of both routes pass the oracle's check."""
    cp = random_concurrent(seed, max_buffers=30, max_steps=12, max_edges=12)
    o = Oracle(cp)
    a, b = cp.conflict_edges()
    assert set(zip(a.tolist(), b.tolist(), strict=True)) == o.conflict
    cover = cp.interval_cover()
    assert all(cover.starts[x] < cover.ends[y] and cover.starts[y] < cover.ends[x]
               for x, y in o.conflict)
    weight, members = max_weight_antichain(cp)
    assert all((x, y) in o.conflict for x, y in itertools.combinations(members, 2))
    assert weight == sum(cp.buffers[i].size for i in members)
    for name in ("greedy_by_size", "best_fit", "greedy_by_conflicts", "choose_best",
                 "telamalloc"):
        p = plan_concurrent(cp, name)
        assert o.valid(p.offsets), name
        assert p.arena >= concurrent_lower_bound(cp)
