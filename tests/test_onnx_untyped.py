"""Operators whose outputs ONNX shape inference leaves untyped (issue #33 item 5a).

``GroupNormalization`` (opsets 18 and 21), ``MeanVarianceNormalization`` (opset 13, whose
function body inference fails) and ``Compress`` (opset 9, no inference function) are typed by
their specification (:data:`scheduling.onnx_shapes.UNTYPED_SPEC_OPS`) and planned with ONNX
Runtime's sizes, measured here (``measured_sizes``: one ONNX Runtime run with every node output
exposed). Any other operator whose outputs inference leaves untyped is named as the culprit:
the producer, never its consumer.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_case
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from scheduling.errors import OnnxImportError
from scheduling.onnx_import import load_onnx
from scheduling.onnx_shapes import measured_sizes, resolve_shapes


def _vi(name, shape, et=T.FLOAT):
    return h.make_tensor_value_info(name, et, shape)


def _model(nodes, inputs, outputs, inits=(), opset=18, ir=8):
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def _activations(graph) -> dict[str, int]:
    return {t.name: t.nbytes for t in graph.tensors.values() if t.kind in ("activation", "output")}


def _groupnorm(x, groups, opset, chained=False, name="gn"):
    c = x[1]
    per = groups if opset == 18 else c  # opset 18: scale and bias per group; 21: per channel
    nodes = [h.make_node("GroupNormalization", ["x", "s", "b"], ["g"], num_groups=groups,
                         name=name)]
    last = "g"
    if chained:  # a second one reads the first's untyped output
        nodes.append(h.make_node("GroupNormalization", ["g", "s", "b"], ["g2"],
                                 num_groups=groups, name=name + "2"))
        last = "g2"
    nodes.append(h.make_node("Relu", [last], ["y"], name="relu"))
    return _model(nodes, [_vi("x", x)], [_vi("y", None)],
                  [nh.from_array(np.ones(per, np.float32), "s"),
                   nh.from_array(np.zeros(per, np.float32), "b")], opset=opset)


def test_shared_groupnorm18_planned_with_onnx_runtime_sizes():
    """The shared case: refused before, blaming the following Relu; now every tensor ONNX
    Runtime returns has its size (g and y: 2*6*4*5 float32 = 960 bytes), g's from the spec."""
    path = shared_case("groupnorm18.onnx")
    g = load_onnx(path)
    ort = measured_sizes(path)
    assert ort == {"g": 960, "y": 960}
    assert _activations(g) == ort
    assert g.shape_source["g"] == "onnx_spec" and g.shape_source["y"] == "onnx_strict"


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("x,groups", [([2, 6, 4, 5], 3), ([1, 4, 7], 2), ([3, 8, 2, 3, 2], 8),
                                      ([1, 5, 3], 1)])
@pytest.mark.parametrize("chained", [False, True])
def test_groupnorm_sizes_equal_onnx_runtime(opset, x, groups, chained):
    m = _groupnorm(x, groups, opset, chained)
    assert _activations(load_onnx(m)) == measured_sizes(m)


def test_other_untyped_spec_ops_equal_onnx_runtime():
    cond = nh.from_array(np.array([True, False, True]), "cd")
    cases = [
        _model([h.make_node("MeanVarianceNormalization", ["x"], ["c"]),
                h.make_node("Relu", ["c"], ["y"])], [_vi("x", [2, 3, 4])], [_vi("y", None)],
               opset=13),
        _model([h.make_node("Compress", ["x", "cd"], ["c"], axis=1),
                h.make_node("Relu", ["c"], ["y"])], [_vi("x", [2, 3, 4])], [_vi("y", None)],
               [cond], opset=9),
        _model([h.make_node("Compress", ["x", "cd"], ["c"]),
                h.make_node("Relu", ["c"], ["y"])], [_vi("x", [2, 3, 4])], [_vi("y", None)],
               [cond], opset=9),
    ]
    got = [_activations(load_onnx(m)) for m in cases]
    assert got == [measured_sizes(m) for m in cases]
    assert got == [{"c": 96, "y": 96}, {"c": 64, "y": 64}, {"c": 8, "y": 8}]


def test_groupnorm_of_symbolic_input_asks_for_the_dimension_then_plans():
    """With a symbolic batch the error names the graph input and its dimension (not the Relu,
    not a strict-inference failure); ``--override N=2`` plans every tensor at ONNX Runtime's
    size (measured with that batch)."""
    m = _groupnorm([2, 6, 4, 5], 3, 18)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    with pytest.raises(OnnxImportError, match=r"tensor 'x' has an unknown size .*dim 0 = 'N'"
                                              r".*--override DIM=VALUE \(\['N'\]\)") as e:
        load_onnx(m)
    assert "Relu" not in str(e.value) and "strict" not in str(e.value)
    assert _activations(load_onnx(m, overrides={"N": 2})) == measured_sizes(m, {"N": 2}) \
        == {"g": 960, "y": 960}


def test_untyped_output_without_a_rule_names_the_producer():
    """Neg-1 (opset 5) has no inference function: strict inference fails at the Reshape that
    reads it; the error names Neg's node and output, the Reshape only as the consumer."""
    m = _model([h.make_node("Neg", ["x"], ["n"], name="neg"),
                h.make_node("Reshape", ["n", "s"], ["y"], name="rs")],
               [_vi("x", [2, 3]), _vi("s", [2], T.INT64)], [_vi("y", None)],
               [nh.from_array(np.array([3, 2], np.int64), "s")], opset=5, ir=3)
    for call in (load_onnx, resolve_shapes):
        with pytest.raises(OnnxImportError) as e:
            call(m)
        msg = str(e.value)
        assert "no type to output 'n' of node 'neg' (op Neg, opset 5, node 0" in msg
        assert "consumer 'rs' (op Reshape, node 1)" in msg
        assert "--override" not in msg  # an override gives a shape, not a type: no help


def test_untyped_graph_output_producer_named():
    m = _model([h.make_node("Neg", ["x"], ["y"], name="neg")], [_vi("x", [2, 3])],
               [_vi("y", None)], opset=5, ir=3)
    with pytest.raises(OnnxImportError, match=r"tensor 'y'.*node 'neg' \(op Neg, node 0"):
        load_onnx(m)


def test_declared_value_info_is_kept_for_a_spec_output():
    """A file that declares the GroupNormalization output (as exporters with a trace do) is
    accepted as it was: inference never needs the rule."""
    m = _groupnorm([2, 6, 4, 5], 3, 18)
    m.graph.value_info.append(_vi("g", [2, 6, 4, 5]))
    g = load_onnx(m)
    assert _activations(g) == measured_sizes(m) and g.shape_source["g"] == "declared"


def _if_model(main_nodes, then_nodes, inputs, inits, opset=18):
    tb = h.make_graph(then_nodes, "then", [], [_vi("o1", None)])
    eb = h.make_graph([h.make_node("ReduceMin", ["x"], ["o2"], keepdims=0)], "else", [],
                      [_vi("o2", None)])
    nodes = main_nodes + [h.make_node("If", ["c"], ["t"], then_branch=tb, else_branch=eb,
                                      name="iff"), h.make_node("Relu", ["t"], ["y"])]
    return _model(nodes, inputs, [_vi("y", None)], inits, opset=opset)


_GN_INITS = [nh.from_array(np.ones(3, np.float32), "s"), nh.from_array(np.zeros(3, np.float32), "b")]


def test_groupnorm_inside_an_if_branch_is_in_the_workspace():
    """Before: the branch looked as if it could not run (its Relu untyped), only the other
    branch's workspace was counted. Now the branch's GroupNormalization output, [2, 6, 4, 5]
    float32 = 960 bytes, is the workspace; ONNX Runtime runs the branch."""
    m = _if_model([], [h.make_node("GroupNormalization", ["x", "s", "b"], ["gg"], num_groups=3),
                       h.make_node("ReduceSum", ["gg"], ["o1"], keepdims=0)],
                  [_vi("x", [2, 6, 4, 5]), _vi("c", [], T.BOOL)], _GN_INITS)
    g = load_onnx(m)
    assert g.tensors["iff_subgraph_ws"].nbytes == 960 and not g.notes
    assert measured_sizes(m, values={"c": True}) == {"t": 4, "y": 4}


@pytest.mark.parametrize("op", ["MeanVarianceNormalization", "GroupNormalization"])
def test_untyped_op_beside_control_flow_equals_onnx_runtime(op):
    """MVN-13 fails strict inference inside its function body; with an If in the same graph the
    subgraph inference sees its resolved shape (a placeholder), and the sizes are ONNX
    Runtime's."""
    node = (h.make_node(op, ["x"], ["m"]) if op.startswith("Mean") else
            h.make_node(op, ["x", "s", "b"], ["m"], num_groups=3))
    m = _if_model([node], [h.make_node("Neg", ["m"], ["o1"])],
                  [_vi("x", [2, 6, 4, 5]), _vi("c", [], T.BOOL)],
                  [] if op.startswith("Mean") else _GN_INITS)
    else_branch = next(a.g for a in m.graph.node[1].attribute if a.name == "else_branch")
    else_branch.node[0].CopyFrom(h.make_node("Relu", ["m"], ["o2"]))  # both branches: m's shape
    g = load_onnx(m)
    ort = measured_sizes(m, values={"c": True})
    assert _activations(g) == ort == {"m": 960, "t": 960, "y": 960}


def test_if_condition_computed_from_a_spec_typed_output_stays_a_runtime_if():
    """The condition is Greater(ReduceSum(GroupNormalization(x)), z): runtime data. The
    subgraph inference replaces the GroupNormalization by a shape placeholder; its zeros must
    not decide the If (before: the then branch was inlined from the placeholder's value)."""
    m = _if_model([h.make_node("GroupNormalization", ["x", "s", "b"], ["m"], num_groups=3),
                   h.make_node("ReduceSum", ["m"], ["rs"], keepdims=0),
                   h.make_node("Greater", ["rs", "z"], ["c"])],
                  [h.make_node("Tile", ["x", "rep"], ["big"]),
                   h.make_node("ReduceSum", ["big"], ["o1"], keepdims=0)],
                  [_vi("x", [2, 6, 4, 5])],
                  _GN_INITS + [nh.from_array(np.array(-1e9, np.float32), "z"),
                               nh.from_array(np.array([4, 1, 1, 1], np.int64), "rep")])
    g = load_onnx(m)
    assert "iff" in g.ops and "big" not in g.tensors
    assert g.tensors["iff_subgraph_ws"].nbytes == 4 * 960  # Tile's [8, 6, 4, 5] float32
