"""Cycles and node order in ONNX files are judged before any shape (issue #33 item 5b).

A cycle through a tensor of unknown shape used to be reported as that tensor's unknown size;
:func:`scheduling.onnx_shapes.check_node_order` runs first in both
:func:`scheduling.onnx_import.load_onnx` and :func:`scheduling.onnx_shapes.resolve_shapes`.
The property test compares it with an independent oracle (Kahn's algorithm over the node
reads, written here) on random node lists.
"""

from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h

from scheduling.errors import CycleError, OnnxImportError
from scheduling.onnx_import import load_onnx
from scheduling.onnx_shapes import check_node_order, resolve_shapes


def _vi(name, shape, et=T.FLOAT):
    return h.make_tensor_value_info(name, et, shape)


def _model(nodes, inputs, outputs, value_info=()):
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs, value_info=list(value_info)),
                     opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _cycle(declared_shape: bool):
    nodes = [h.make_node("Add", ["x", "t1"], ["t0"], name="a"),
             h.make_node("Relu", ["t0"], ["t1"], name="r"),
             h.make_node("Relu", ["t1"], ["y"], name="o")]
    vi = [_vi("t1", [2, 3])] if declared_shape else []
    return _model(nodes, [_vi("x", [2, 3])], [_vi("y", None)], vi)


@pytest.mark.parametrize("declared_shape", [False, True])
@pytest.mark.parametrize("call", [load_onnx, resolve_shapes])
def test_cycle_is_a_cycle_whatever_the_shapes(declared_shape, call):
    """Before: with t1's shape unknown, "tensor 't0' has an unknown size"; now the same
    CycleError as with its shape declared."""
    with pytest.raises(CycleError, match=r"cycle \(a -> r -> a\): node 'a' reads tensor 't1' "
                                         r"that node 'r' writes"):
        call(_cycle(declared_shape))


def test_self_loop_and_cycle_through_an_if_branch():
    m = _model([h.make_node("Add", ["x", "s"], ["s"], name="self")], [_vi("x", [2])],
               [_vi("s", None)])
    with pytest.raises(CycleError, match=r"\(self -> self\)"):
        load_onnx(m)
    # the If's branch reads 'z' from the outer scope, written by a node that reads the If
    tb = h.make_graph([h.make_node("Neg", ["z"], ["o1"])], "then", [], [_vi("o1", None)])
    eb = h.make_graph([h.make_node("Neg", ["x"], ["o2"])], "else", [], [_vi("o2", None)])
    m = _model([h.make_node("If", ["c"], ["t"], then_branch=tb, else_branch=eb, name="iff"),
                h.make_node("Relu", ["t"], ["z"], name="rz"),
                h.make_node("Relu", ["z"], ["y"], name="o")],
               [_vi("x", [2]), _vi("c", [], T.BOOL)], [_vi("y", None)])
    with pytest.raises(CycleError, match=r"\(iff -> rz -> iff\).*reads tensor 'z'"):
        load_onnx(m)


def test_acyclic_out_of_order_is_an_order_error_not_a_cycle():
    m = _model([h.make_node("Relu", ["t"], ["y"], name="second"),
                h.make_node("Neg", ["x"], ["t"], name="first")],
               [_vi("x", [2])], [_vi("y", None)])
    with pytest.raises(OnnxImportError, match=r"node 'second' reads tensor 't' before node "
                                              r"'first' writes it.*topological order") as e:
        load_onnx(m)
    assert not isinstance(e.value, CycleError)


def _kahn_verdict(reads: list[list[int]]) -> str:
    """Oracle, independent of the code under test: ``reads[k]`` lists the nodes whose output
    node ``k`` reads. 'cycle' if Kahn's algorithm cannot order all nodes, else 'order' if some
    node reads one at or after its own position, else 'ok'."""
    n = len(reads)
    indeg = [len(set(r)) for r in reads]
    users = [[] for _ in range(n)]
    for k, r in enumerate(reads):
        for j in set(r):
            users[j].append(k)
    ready = [k for k in range(n) if indeg[k] == 0]
    done = 0
    while ready:
        j = ready.pop()
        done += 1
        for k in users[j]:
            indeg[k] -= 1
            if indeg[k] == 0:
                ready.append(k)
    if done < n:
        return "cycle"
    return "order" if any(j >= k for k, r in enumerate(reads) for j in r) else "ok"


@settings(max_examples=examples(150), deadline=None, derandomize=True)
@given(st.integers(1, 7).flatmap(lambda n: st.lists(
    st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n)))
def test_check_node_order_agrees_with_kahn(reads):
    """Random node lists (node k reads the outputs of the nodes in reads[k], and the graph
    input 'x'): CycleError exactly when the oracle finds a cycle, the order error exactly when
    it finds a read ahead without one, nothing otherwise."""
    nodes = [h.make_node("Sum", ["x"] + [f"t{j}" for j in r], [f"t{k}"], name=f"n{k}")
             for k, r in enumerate(reads)]
    g = h.make_graph(nodes, "g", [_vi("x", None)], [])
    verdict = _kahn_verdict(reads)
    if verdict == "ok":
        check_node_order(g, "g")
        return
    with pytest.raises((CycleError, OnnxImportError)) as e:
        check_node_order(g, "g")
    assert isinstance(e.value, CycleError) == (verdict == "cycle"), str(e.value)
