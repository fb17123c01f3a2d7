"""Tests of the graph model, the schedule checker and the scheduler registry (scheduling/)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners.bounds import lower_bound
from planners.errors import MemplanError
from scheduling.errors import CycleError, GraphError, ScheduleError
from scheduling.graph import Graph
from scheduling.lifetimes import lifetime_problem, live_bytes, tensor_lifetimes
from scheduling.schedulers import (
    SCHEDULERS,
    FileOrder,
    Scheduler,
    check_schedule,
    get_scheduler,
    is_valid_schedule,
    schedule,
)


def chain(n: int = 3) -> Graph:
    """x -> op0 -> t0 -> op1 -> t1 ... -> t{n-1} (output); float32 [2, 3] tensors (24 bytes)."""
    g = Graph("chain")
    g.add_tensor("x", (2, 3), kind="input")
    prev = "x"
    for i in range(n):
        g.add_tensor(f"t{i}", (2, 3))
        g.add_op(f"op{i}", "Relu", [prev], [f"t{i}"])
        prev = f"t{i}"
    g.mark_output(prev)
    return g


# -- builders -------------------------------------------------------------------------------------
def test_tensor_bytes_from_shape_and_dtype():
    g = Graph()
    assert g.add_tensor("a", (2, 3, 4), "float32").nbytes == 96
    assert g.add_tensor("b", (2, 3, 4), "int8").bytes == 24
    assert g.add_tensor("c", (), "float64").nbytes == 8
    assert g.add_tensor("d", (10,), "float16", nbytes=64).nbytes == 64  # explicit (padded)


def test_producer_and_consumers_are_linked():
    g = chain(3)
    assert g.tensors["t0"].producer == "op0"
    assert g.tensors["t0"].consumers == ["op1"]
    assert g.tensors["x"].consumers == ["op0"]
    assert g.tensors["t2"].kind == "output" and g.outputs == ["t2"]
    g.validate()


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda g: g.add_tensor("x", (1,)), "duplicate tensor name 'x'"),
        (lambda g: g.add_op("op0", "Relu", ["x"], ["y"]), "duplicate operator name 'op0'"),
        (lambda g: g.add_op("opz", "Relu", ["nope"], ["y"]), "unknown tensor 'nope'"),
        (lambda g: g.add_op("opz", "Relu", ["x"], ["t0"]), "'t0' is already produced by 'op0'"),
        (
            lambda g: g.add_op("opz", "Relu", ["t0"], ["x"]),
            "cannot write tensor 'x' of kind 'input'",
        ),
        (lambda g: g.add_tensor("bad", (2, -1)), "tensor 'bad': dimensions"),
        (lambda g: g.add_tensor("bad", (2,), kind="scratch"), "tensor 'bad': kind"),
        (lambda g: g.add_tensor("bad", (2,), "str"), "no fixed element size"),
    ],
)
def test_builder_errors_name_the_item(build, match):
    g = chain(2)
    g.add_tensor("y", (1,))
    with pytest.raises(GraphError, match=match):
        build(g)


def test_graph_errors_are_memplan_errors():
    assert issubclass(GraphError, MemplanError)
    assert issubclass(ScheduleError, GraphError) and issubclass(CycleError, GraphError)


def test_consumed_activation_without_producer_is_an_error():
    g = Graph("g")
    g.add_tensor("a", (4,))
    g.add_tensor("b", (4,))
    g.add_op("op", "Relu", ["a"], ["b"])
    with pytest.raises(GraphError, match="operator 'op': reads tensor 'a'.*no operator produces"):
        g.validate()
    with pytest.raises(GraphError, match="operator 'op': reads tensor 'a'.*no operator produces"):
        tensor_lifetimes(g)


def test_cycle_is_detected_and_names_an_operator_on_it():
    g = Graph("cyc")
    g.add_tensor("x", (1,), kind="input")
    for t in ("y", "z", "w"):
        g.add_tensor(t, (1,))
    g.add_op("a", "Add", ["x", "z"], ["y"])  # reads z, produced later by b
    g.add_op("b", "Relu", ["y"], ["z"])
    g.add_op("c", "Relu", ["y"], ["w"])  # not on the cycle
    with pytest.raises(CycleError, match=r"operator '(a|b)' is on a cycle") as e:
        g.validate()
    assert "'c'" not in str(e.value)
    assert set(g.find_cycle()) == {"a", "b"}
    # no order of a cyclic graph is valid: file order names the cycle, not a misplaced producer
    with pytest.raises(CycleError, match=r"is on a cycle \((a -> b -> a|b -> a -> b)\)"):
        schedule(g, "file_order")


def test_op_graph_edges_carry_tensor_names():
    g = Graph()
    g.add_tensor("x", (1,), kind="input")
    g.add_tensor("w", (1,), kind="weight")
    for t in ("p", "q", "r"):
        g.add_tensor(t, (1,))
    g.add_op("A", "Split", ["x", "w"], ["p", "q"])
    g.add_op("B", "Add", ["p", "q", "p"], ["r"])
    dg = g.op_graph()
    assert isinstance(dg, nx.DiGraph)
    assert list(dg.nodes) == ["A", "B"]
    assert list(dg.edges) == [("A", "B")]
    assert dg.edges["A", "B"]["tensors"] == ["p", "q"]
    assert g.tensors["p"].consumers == ["B"]  # one entry per operator


def test_copy_is_independent():
    g = chain(3)
    h = g.copy("h")
    h.remove_op("op2")
    h.remove_tensor("t2")
    h.ops["op0"].attributes["alpha"] = 1
    assert "op2" in g.ops and "t2" in g.tensors and g.tensors["t1"].consumers == ["op2"]
    assert h.tensors["t1"].consumers == [] and g.ops["op0"].attributes == {}
    assert h.name == "h" and len(g) == 3 and len(h) == 2


def test_remove_tensor_still_used_is_an_error():
    g = chain(2)
    with pytest.raises(GraphError, match="tensor 't0' is still used by operator 'op0'"):
        g.remove_tensor("t0")


def test_add_op_at_position_and_topological_order():
    g = Graph()
    g.add_tensor("x", (1,), kind="input")
    g.add_tensor("y", (1,))
    g.add_tensor("z", (1,))
    g.add_op("second", "Relu", ["y"], ["z"])
    g.add_op("first", "Relu", ["x"], ["y"])  # stored after its consumer
    assert not g.is_topological()
    assert g.topological_order() == ["first", "second"]
    h = Graph()
    h.add_tensor("x", (1,), kind="input")
    h.add_tensor("y", (1,))
    h.add_tensor("z", (1,))
    h.add_op("second", "Relu", ["y"], ["z"])
    h.add_op("first", "Relu", ["x"], ["y"], position=0)
    assert h.order == ["first", "second"] and h.is_topological()


# -- schedule checker and schedulers --------------------------------------------------------------
@pytest.mark.parametrize(
    "order, match",
    [
        (["op0", "op1"], "operator 'op2' is missing"),
        (["op0", "op1", "op1", "op2"], "'op1' appears twice"),
        (["op0", "opX", "op2"], "unknown operator 'opX'"),
        (
            ["op1", "op0", "op2"],
            "'op1' at step 0 reads tensor 't0' whose producer 'op0' is at step 1",
        ),
    ],
)
def test_check_schedule_errors(order, match):
    g = chain(3)
    with pytest.raises(ScheduleError, match=match):
        check_schedule(g, order)
    assert not is_valid_schedule(g, order)


def test_file_order_scheduler():
    g = chain(3)
    s = schedule(g)
    assert s.order == ("op0", "op1", "op2")
    # a chain has one order, which the order lower bound proves optimal
    assert (s.scheduler, s.status, s.params) == ("file_order", "optimal", {})
    assert s.bound == s.info["peak_bytes"]
    assert s.seconds >= 0 and s.step_of("op1") == 1
    assert SCHEDULERS["file_order"] is FileOrder


def test_registry_accepts_name_instance_class_and_callable():
    g = chain(2)
    assert isinstance(get_scheduler("file_order"), FileOrder)
    assert isinstance(get_scheduler(FileOrder), FileOrder)
    inst = FileOrder()
    assert get_scheduler(inst) is inst
    with pytest.raises(
        ValueError, match="unknown scheduler 'nope'; registered schedulers: file_order"
    ):
        get_scheduler("nope")
    with pytest.raises(ValueError, match="scheduler 'file_order'"):
        get_scheduler("file_order", depth=3)

    def reverse_order(graph, flip=False):
        return list(reversed(graph.order)) if flip else graph.order

    s = schedule(g, reverse_order, flip=False)
    assert s.scheduler == "reverse_order" and s.params == {"flip": False}
    with pytest.raises(ScheduleError, match="producer"):
        schedule(g, reverse_order, flip=True)


def test_scheduler_subclass_params_roundtrip():
    class Depth(Scheduler):
        name = "depth"

        def __init__(self, seed=0, reverse=False):
            self.seed = seed
            self.reverse = reverse

        def _schedule(self, graph):
            return graph.topological_order()

    d = Depth(seed=3)
    assert d.get_params() == {"seed": 3, "reverse": False}
    assert repr(d) == "Depth(seed=3, reverse=False)"
    assert d.set_params(reverse=True).reverse is True
    with pytest.raises(ValueError, match="no parameter 'x'"):
        d.set_params(x=1)
    assert d.schedule(chain(2)).params == {"seed": 3, "reverse": True}


# -- lifetimes on random DAGs (hypothesis) --------------------------------------------------------
@st.composite
def random_dag_and_order(draw):
    """A random DAG of n ops (each op writes one tensor, reads up to 3 earlier tensors or the
    input), and a random topological order of it."""
    n = draw(st.integers(1, 12))
    g = Graph("rand")
    g.add_tensor("x", (draw(st.integers(1, 8)),), "int8", kind="input")
    for i in range(n):
        g.add_tensor(f"t{i}", (draw(st.integers(0, 50)),), "int8")
        pool = ["x"] + [f"t{j}" for j in range(i)]
        ins = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        g.add_op(f"op{i}", "Op", ins, [f"t{i}"])
    for i in draw(st.sets(st.integers(0, n - 1), max_size=2)):
        g.mark_output(f"t{i}")
    # random topological order: repeatedly pick a ready op
    done: set[str] = set()
    order = []
    while len(order) < n:
        ready = [
            o
            for o in g.ops
            if o not in done
            and all(g.tensors[t].producer in (None, *done) for t in g.ops[o].inputs)
        ]
        pick = draw(st.sampled_from(ready))
        done.add(pick)
        order.append(pick)
    return g, order


@settings(max_examples=examples(60), deadline=None)
@given(random_dag_and_order())
def test_lifetimes_properties_on_random_dags(gd):
    g, order = gd
    g.validate()
    s = schedule(g, lambda graph: order)
    assert list(s.order) == order
    lt = tensor_lifetimes(g, s)
    T = len(order)
    step = {o: k for k, o in enumerate(order)}
    for name, t in g.tensors.items():
        if t.kind in ("activation", "output"):
            first, last = lt[name]
            assert first == step[t.producer]
            cons = [step[c] for c in t.consumers]
            expected_last = T - 1 if t.kind == "output" else max(cons, default=first)
            assert last == expected_last
    # live bytes == brute-force sum per step, and the peak == the planners' lower bound
    p = lifetime_problem(g, order)
    live = live_bytes(g, order)
    brute = np.array(
        [sum(b.size for b in p.buffers if b.start <= k < b.end) for k in range(T)], np.int64
    )
    assert np.array_equal(live, brute)
    assert int(live.max()) == lower_bound(p)
    assert p.n == sum(t.kind in ("activation", "output") for t in g.tensors.values())
