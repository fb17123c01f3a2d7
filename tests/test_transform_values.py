"""Issue 7 gaps: constant values in the graph (ONNX importer, constant folding, value-based
simplification) and prologue fusion of boundary casts."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from scheduling.constfold import evaluate_constant_op
from scheduling.errors import GraphError
from scheduling.graph import Graph
from scheduling.mobilenet import mobilenet_v1
from scheduling.onnx_import import load_onnx
from scheduling.transforms import (
    fuse,
    quantize,
    simplify,
    transformed_peak,
    workspace_bytes,
)
from scheduling.transforms.legality import CAST_OPS

# -- a numpy interpreter of the few operators used here ------------------------------------------


def run_graph(g: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Evaluate ``g`` in stored order; weights must carry values. Returns the graph outputs."""
    env = {t.name: t.value for t in g.tensors.values() if t.kind == "weight"}
    assert all(v is not None for v in env.values()), "a weight without a value"
    env.update(feeds)
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}
    for op in g.ops.values():
        a = [env[t] for t in op.inputs]
        if op.op_type in binary:
            with np.errstate(divide="ignore"):  # x / 0 -> inf in both graphs
                r = binary[op.op_type](a[0], a[1])
        elif op.op_type == "Relu":
            r = np.maximum(a[0], 0)
        elif op.op_type == "Transpose":
            r = np.transpose(a[0], op.attributes.get("perm"))
        elif op.op_type == "Identity":
            r = a[0]
        else:
            raise AssertionError(f"interpreter has no {op.op_type}")
        env[op.outputs[0]] = np.asarray(r, dtype=g.tensors[op.outputs[0]].dtype)
    return {o: env[o] for o in g.outputs}


def _f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def neutral_model() -> onnx.ModelProto:
    """x[2,3] -> x*ones -> 0+. -> . - zeros(Shape(x)) -> *2 (k) -> Transpose pair -> / ones
    (Reshape of a Constant) -> + k -> Relu -> y."""
    ones = numpy_helper.from_array(np.ones(3, np.float32), "ones")
    two = numpy_helper.from_array(np.array([2.0], np.float32), "two")
    nodes = [
        helper.make_node("Mul", ["x", "ones"], ["m"], name="mul_one"),
        helper.make_node("Constant", [], ["zero"], name="c_zero", value_float=0.0),
        helper.make_node("Add", ["zero", "m"], ["a"], name="add_zero"),
        helper.make_node("Shape", ["x"], ["shp"], name="shape_x"),
        helper.make_node("ConstantOfShape", ["shp"], ["zeros"], name="cos",
                         value=numpy_helper.from_array(np.zeros(1, np.float32))),
        helper.make_node("Sub", ["a", "zeros"], ["s"], name="sub_zero"),
        helper.make_node("Mul", ["s", "two"], ["k"], name="mul_two"),
        helper.make_node("Transpose", ["k"], ["t1"], name="tr1", perm=[1, 0]),
        helper.make_node("Transpose", ["t1"], ["t2"], name="tr2", perm=[1, 0]),
        helper.make_node("Constant", [], ["ones6"], name="c_ones6",
                         value=numpy_helper.from_array(np.ones(6, np.float32))),
        helper.make_node("Constant", [], ["shape23"], name="c_shape",
                         value=numpy_helper.from_array(np.array([2, -1], np.int64))),
        helper.make_node("Reshape", ["ones6", "shape23"], ["ones23"], name="reshape_ones"),
        helper.make_node("Div", ["t2", "ones23"], ["q"], name="div_one"),
        helper.make_node("Add", ["q", "k"], ["r"], name="add_res"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "neutral", [_f32("x", [2, 3])], [_f32("y", [2, 3])],
                              initializer=[ones, two])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_importer_keeps_small_constant_values():
    g = load_onnx(neutral_model())
    # constant nodes are folded away; their small results are weights with values
    assert list(g.ops) == ["mul_one", "add_zero", "sub_zero", "mul_two", "tr1", "tr2",
                           "div_one", "add_res", "relu"]
    assert set(g.weights) == {"ones", "zero", "zeros", "two", "ones23"}
    v = {t: g.tensors[t].value for t in g.weights}
    assert v["ones"].tolist() == [1.0, 1.0, 1.0] and v["ones"].dtype == np.float32
    assert v["zero"].shape == () and float(v["zero"]) == 0.0
    assert v["zeros"].shape == (2, 3) and not v["zeros"].any()  # ConstantOfShape(Shape(x))
    assert v["ones23"].shape == (2, 3) and (v["ones23"] == 1).all()  # Reshape([2, -1])
    assert v["two"].tolist() == [2.0]
    assert not v["ones"].flags.writeable  # shared between copies: read-only
    assert g.copy().tensors["ones"].value is v["ones"]
    # the importer's graph computes what the ONNX reference evaluator computes
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    ref = ReferenceEvaluator(neutral_model()).run(None, {"x": x})[0]
    np.testing.assert_allclose(run_graph(g, {"x": x})["y"], ref, rtol=1e-6)
    np.testing.assert_allclose(ref, np.maximum(4 * x, 0), rtol=1e-6)  # by hand: 2x + 2x


def test_value_size_limit():
    big = numpy_helper.from_array(np.ones((500, 10), np.float32), "big")
    small = numpy_helper.from_array(np.zeros(10, np.float32), "small")
    nodes = [helper.make_node("Add", ["x", "big"], ["a"]),
             helper.make_node("Add", ["a", "small2"], ["y"]),
             helper.make_node("Reshape", ["small", "shp"], ["small2"])]
    shp = numpy_helper.from_array(np.array([1, 10], np.int64), "shp")
    m = helper.make_model(helper.make_graph(
        nodes[2:] + nodes[:2], "lim", [_f32("x", [500, 10])], [_f32("y", [500, 10])],
        initializer=[big, small, shp]), opset_imports=[helper.make_opsetid("", 17)])
    g = load_onnx(m)
    assert g.tensors["big"].value is None  # 5000 > 4096 elements
    assert g.tensors["small2"].value.shape == (1, 10)
    assert load_onnx(m, max_value_elems=5000).tensors["big"].value.shape == (500, 10)
    g0 = load_onnx(m, max_value_elems=0)
    assert all(g0.tensors[t].value is None for t in g0.weights)
    # the Add of zeros is removed only when the value is known
    assert [c["op"] for c in simplify(g)[1].changes] == ["Add_1"]
    assert simplify(g0)[1].changes == []


def test_simplify_from_graph_alone_peak_and_numerics():
    g = load_onnx(neutral_model())
    g2, log = simplify(g)
    g2.validate()
    assert list(g2.ops) == ["mul_two", "add_res", "relu"]
    assert g2.ops["mul_two"].inputs == ("x", "two") and g2.ops["add_res"].inputs == ("k", "k")
    acts = sorted(log.stats.items())
    assert acts == [("cancel_transpose", 1), ("remove_neutral", 4)]
    assert [c["op_type"] for c in log.changes if c["action"] == "remove_neutral"] == [
        "Mul", "Add", "Sub", "Div"]
    # by hand (inputs are not buffers, 24-byte activations): before, k lives from step 3 to the
    # residual add at step 7, so steps 5-7 hold k + two more = 72 bytes; after, 48 (k + r)
    assert transformed_peak(g) == 72 and transformed_peak(g2) == 48
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_array_equal(run_graph(g2, {"x": x})["y"], run_graph(g, {"x": x})["y"])


def test_non_neutral_constants_stay():
    g = Graph("nn")
    g.add_tensor("x", (2, 3), kind="input")
    g.add_tensor("one3", (2, 2, 3), kind="weight", value=np.ones((2, 2, 3)))
    g.add_tensor("one", (), kind="weight", value=1.0)
    g.add_tensor("zero", (3,), kind="weight", value=np.zeros(3))
    g.add_tensor("b", (2, 2, 3))
    g.add_tensor("c", (2, 3))
    g.add_tensor("d", (2, 3))
    g.add_tensor("y", (2, 3))
    g.add_op("grow", "Mul", ["x", "one3"], ["b"])  # broadcasting grows the result: not neutral
    g.add_op("recip", "Div", ["one", "x"], ["c"])  # 1 / x
    g.add_op("neg", "Sub", ["zero", "c"], ["d"])  # 0 - c
    g.add_op("keep", "Relu", ["d"], ["y"])
    g.mark_output("y")
    g.mark_output("b")
    g2, log = simplify(g)
    assert list(g2.ops) == list(g.ops) and log.changes == []


@settings(max_examples=examples(40), deadline=None)
@given(
    op=st.sampled_from(["Mul", "Div", "Add", "Sub"]),
    value=st.sampled_from([0.0, 1.0, 2.0, -1.0]),
    cshape=st.sampled_from([(), (1,), (3,), (1, 3), (2, 3)]),
    const_first=st.booleans(),
)
def test_neutral_removed_iff_identity_and_numerics_kept(op, value, cshape, const_first):
    g = Graph("h")
    g.add_tensor("x", (2, 3), kind="input")
    g.add_tensor("c", cshape, kind="weight", value=np.full(cshape, value))
    g.add_tensor("a", (2, 3))
    g.add_tensor("y", (2, 3))
    g.add_op("pre", "Relu", ["x"], ["a"])
    g.add_op("bin", op, ["c", "a"] if const_first else ["a", "c"], ["y"])
    g.mark_output("y")
    g2, log = simplify(g)
    g2.validate()
    neutral = (op in ("Mul", "Div") and value == 1.0) or (op in ("Add", "Sub") and value == 0.0)
    commutes = op in ("Mul", "Add")
    assert ("bin" not in g2.ops) == (neutral and (commutes or not const_first))
    x = np.random.default_rng(2).uniform(0.5, 2.0, (2, 3)).astype(np.float32)
    (out2,), (out,) = run_graph(g2, {"x": x}).values(), run_graph(g, {"x": x}).values()
    np.testing.assert_array_equal(out2, out)


def test_simplify_folds_constant_values_for_later_rewrites():
    g = Graph("f")
    g.add_tensor("x", (2, 3), kind="input")
    g.add_tensor("six", (6,), kind="weight", value=np.ones(6))
    g.add_tensor("s", (2,), "int64", kind="weight", value=[2, -1])
    g.add_tensor("big", (5000,), kind="weight")  # no value
    g.add_tensor("r", (2, 3))
    g.add_tensor("nb", (5000,))
    g.add_tensor("a", (2, 3))
    g.add_tensor("m", (2, 3))
    g.add_tensor("y", (2, 3))
    g.add_op("resh", "Reshape", ["six", "s"], ["r"])  # a constant subgraph left in the graph
    g.add_op("negb", "Neg", ["big"], ["nb"])  # constant, but its value is unknown
    g.add_op("relu", "Relu", ["x"], ["a"])
    g.add_op("mul", "Mul", ["a", "r"], ["m"])  # a * ones: neutral once r's value is known
    g.add_op("sig", "Relu", ["m"], ["y"])
    g.mark_output("y")
    g2, log = simplify(g)
    g2.validate()
    folds = [c for c in log.changes if c["action"] == "fold_constant"]
    assert [(c["op"], c["valued"]) for c in folds] == [("resh", ["r"]), ("negb", [])]
    assert list(g2.ops) == ["relu", "sig"] and g2.ops["sig"].inputs == ("a",)
    assert simplify(g, max_value_elems=5)[0].ops.keys() == {"relu", "mul", "sig"}


def test_tensor_value_errors():
    g = Graph("e")
    with pytest.raises(GraphError, match="'a'.*only a weight"):
        g.add_tensor("a", (2,), value=[1, 2])
    with pytest.raises(GraphError, match="'w'.*shape \\(3,\\)"):
        g.add_tensor("w", (2,), kind="weight", value=[1, 2, 3])
    assert evaluate_constant_op("Reshape", {}, [np.ones(6), None]) is None


# -- prologue fusion of boundary casts ------------------------------------------------------------


def _standalone_casts(g):
    return [n for n, op in g.ops.items() if op.op_type in CAST_OPS and "fused_ops" not in op.attributes]


def test_quantize_then_fuse_leaves_no_standalone_cast():
    g = mobilenet_v1(blocks=0, dtype="float32")
    g2, _ = quantize(g)
    assert _standalone_casts(g2) == ["input_quantize", "conv1_relu_y_dequantize"]
    # after quantize, by hand: the quantised input (3*224*224 = 150528 B) lives to the conv,
    # which writes ... ; the peak is relu_y_q (401408) + the float output (1605632)
    assert transformed_peak(g2) == 401408 + 1605632
    g3, log = fuse(g2)
    g3.validate()
    assert _standalone_casts(g3) == [] and list(g3.ops) == ["conv1"]
    op = g3.ops["conv1"]
    assert op.inputs[0] == "input" and op.attributes["prologue"] == ["QuantizeLinear"]
    assert op.attributes["epilogue"] == ["Relu", "DequantizeLinear"]
    assert op.attributes["fused_ops"][0] == "input_quantize"
    assert op.attributes["kernel"] == "quantizelinear_conv_bias_relu_dequantizelinear"
    assert "input_q" not in g3.tensors
    # peak: the float output alone (the graph input is not an arena buffer)
    assert transformed_peak(g3) == 32 * 112 * 112 * 4
    # without prologue fusion the conv step holds input_q + the output
    g4, log4 = fuse(g2, prologues=False)
    assert _standalone_casts(g4) == ["input_quantize"]
    assert transformed_peak(g4) == 150528 + 1605632
    pro = [c for c in log.changes if c["action"] == "fuse_prologue"]
    assert len(pro) == 1 and pro[0]["saved_bytes"] == 2 * 150528
    assert log.stats["saved_bytes"] - log4.stats["saved_bytes"] == 301056
    # the im2col buffer holds the cast's int8 values, not the float input's
    assert workspace_bytes(g3, op) == 112 * 112 * 27 == workspace_bytes(g4, g4.ops["conv1"])


def _cast_graph(consumers=("mm",)):
    """x -> relu -> a (4096 B f32) -> quant -> q (1024 B int8) -> MatMul(q, w) -> y; a also read
    by sig -> b -> tanh -> e (an output), so the cast has no producer-side fusion."""
    g = Graph("p")
    g.add_tensor("x", (1, 1024), kind="input")
    g.add_tensor("a", (1, 1024))
    g.add_tensor("q", (1, 1024), "int8")
    g.add_tensor("w", (1024, 16), "int8", kind="weight")
    g.add_tensor("b", (1, 1024))
    g.add_tensor("e", (1, 1024))
    g.add_tensor("y", (1, 16), "int8")
    g.add_op("relu", "Relu", ["x"], ["a"])
    g.add_op("quant", "QuantizeLinear", ["a"], ["q"])
    g.add_op("sig", "Sigmoid", ["a"], ["b"])
    g.add_op("tanh", "Tanh", ["b"], ["e"])
    g.add_op("mm", "MatMul", ["q", "w"], ["y"])
    for t in ("e", "y"):
        g.mark_output(t)
    return g


def test_prologue_that_raises_the_peak_is_reported_and_refusable():
    g = _cast_graph()
    # by hand: step 2 holds a + q + b = 4096 + 1024 + 4096, step 3 q + b + e: 9216
    assert transformed_peak(g) == 9216
    g2, log = fuse(g, epilogues=False, allow_peak_increase=True)
    # MatMul now reads a at its step: a lives through tanh, step 2 holds a + b + e = 12288
    assert list(g2.ops) == ["relu", "sig", "tanh", "mm"] and g2.ops["mm"].inputs == ("a", "w")
    assert transformed_peak(g2) == 12288
    raised = [c for c in log.changes if c["action"] == "raises_peak"]
    assert raised == [{"action": "raises_peak", "group": ["quant", "mm"], "peak_before": 9216,
                       "peak_after": 12288, "refused": False}]
    assert log.stats["saved_bytes"] == 2048
    g3, log3 = fuse(g, epilogues=False)  # refused by default
    assert "quant" in g3.ops and transformed_peak(g3) == 9216 and log3.stats["saved_bytes"] == 0


def test_prologue_without_lifetime_extension_needs_no_peak_check():
    g = _cast_graph()
    g.remove_op("mm")
    g.add_op("mm", "MatMul", ["q", "w"], ["y"], position=2)  # right after the cast
    # a is read later by sig anyway. Before: step 1 a + q (5120), step 2 a + q + y (5136),
    # step 3 a + b + y (8208), step 4 b + e + y (8208); after: a + y (4112) at the MatMul
    assert transformed_peak(g) == 8208
    g2, log = fuse(g, epilogues=False)
    assert _standalone_casts(g2) == [] and not any(c["action"] == "raises_peak"
                                                  for c in log.changes)
    assert list(g2.ops) == ["relu", "mm", "sig", "tanh"]
    assert transformed_peak(g2) == 8208 and log.stats["saved_bytes"] == 2048


def test_prologue_legality_shared_output_view_and_registers():
    g = Graph("l")
    g.add_tensor("x", (1, 64), kind="input")
    for t, dt in (("q", "int8"), ("r", "int8"), ("s", "int8"), ("v", "int8")):
        g.add_tensor(t, (1, 64) if t != "v" else (64,), dt)
    g.add_op("cast", "QuantizeLinear", ["x"], ["q"])
    g.add_op("relu", "Relu", ["q"], ["r"])
    g.mark_output("r")
    g2, _ = fuse(g, epilogues=False)
    assert _standalone_casts(g2) == [] and g2.ops["relu"].attributes["prologue_casts"][0][
        "dtype"] == "int8"
    # register budget: Relu out (1) + q tile (1) + the float x tile (16 x 32 / 128 = 4) = 6
    g3, log3 = fuse(g, epilogues=False, num_registers=3)
    assert _standalone_casts(g3) == ["cast"]
    ref = [c for c in log3.changes if c["action"] == "refuse"]
    assert ref[0]["registers"] == 6 and ref[0]["would_be_spill"] == 3
    assert log3.stats["would_be_spills"] == 3
    # two readers of the cast's output, or a view reading it: the cast stays
    g.add_op("sig", "Sigmoid", ["q"], ["s"])
    g.mark_output("s")
    assert _standalone_casts(fuse(g)[0]) == ["cast"]
    h = Graph("v")
    h.add_tensor("x", (1, 64), kind="input")
    h.add_tensor("q", (1, 64), "int8")
    h.add_tensor("v", (64,), "int8")
    h.add_tensor("shape", (1,), "int64", kind="weight", value=[64])
    h.add_op("cast", "QuantizeLinear", ["x"], ["q"])
    h.add_op("flat", "Reshape", ["q", "shape"], ["v"])
    h.mark_output("v")
    assert _standalone_casts(fuse(h)[0]) == ["cast"]


@pytest.mark.parametrize("model", ["squeezenet", "shufflenet"])
def test_quantized_light_models_keep_no_absorbable_cast(model):
    from experiments.workloads import load_graph

    g2, _ = quantize(load_graph(model))
    before = _standalone_casts(fuse(g2, prologues=False)[0])
    assert len(before) == 1 and before[0].endswith("_quantize")  # the input cast feeds a Conv
    g3, log = fuse(g2)
    g3.validate()
    assert _standalone_casts(g3) == [] and log.count("fuse_prologue") == 1
    first = next(iter(g3.ops.values()))
    assert first.op_type == "Conv" and first.attributes["prologue"] == ["QuantizeLinear"]
    assert first.inputs[0] == g2.inputs[0]  # the kernel reads the float graph input
