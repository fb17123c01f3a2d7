"""Which constant nodes the importer folds into weights: those ONNX Runtime folds (issue #33
item 5c).

ONNX Runtime's constant folding (graph optimisation level basic and above, the session default)
runs ``NonZero`` of a constant at run time (its output size cannot be estimated before
execution) and folds ``Shape`` of a statically shaped tensor. The reference here is ONNX Runtime
itself: the node outputs left in the model it writes after optimising
(``SessionOptions.optimized_model_filepath``) and its run with every node output exposed.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from experiments.bench.onnx_differential import ort_runtime_outputs
from scheduling.errors import OnnxImportError
from scheduling.onnx_import import load_onnx
from scheduling.onnx_shapes import measured_sizes, runtime_folds_constant


def _vi(name, shape, et=T.FLOAT):
    return h.make_tensor_value_info(name, et, shape)


def _model(nodes, inputs, inits, opset=13):
    m = h.make_model(h.make_graph(nodes, "g", inputs, [_vi("y", None)], list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _nonzero_and_shape():
    """NonZero of a 3x3 constant with 4 non-zeros (int64 [2, 4]: 64 bytes) and its consumers;
    Shape of the input x and of a constant (int64 [2]: 16 bytes each) and theirs."""
    c = nh.from_array(np.array([[1, 0, 2], [0, 3, 0], [4, 0, 0]], np.float32), "c")
    c2 = nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "c2")
    nodes = [h.make_node("NonZero", ["c"], ["nz"]), h.make_node("Cast", ["nz"], ["nzf"], to=T.FLOAT),
             h.make_node("ReduceSum", ["nzf"], ["s"], keepdims=1),
             h.make_node("Shape", ["x"], ["sh"]), h.make_node("Shape", ["c2"], ["sh2"]),
             h.make_node("Cast", ["sh"], ["shf"], to=T.FLOAT),
             h.make_node("Cast", ["sh2"], ["sh2f"], to=T.FLOAT),
             h.make_node("Add", ["shf", "sh2f"], ["a"]),
             h.make_node("ReduceSum", ["a"], ["s2"], keepdims=1),
             h.make_node("Add", ["s", "s2"], ["t"]), h.make_node("Add", ["t", "x"], ["y"])]
    return _model(nodes, [_vi("x", [2, 3])], [c, c2])


def test_nonzero_of_a_constant_is_planned_as_onnx_runtime_runs_it():
    m = _nonzero_and_shape()
    g = load_onnx(m)
    kept = ort_runtime_outputs(m)
    assert kept == {"nz", "nzf", "s", "t", "y"}  # ONNX Runtime's optimised graph
    planned = {t.name for t in g.tensors.values() if t.kind in ("activation", "output")}
    assert planned == kept
    ort = measured_sizes(m)
    assert {n: g.tensors[n].nbytes for n in kept} == {n: ort[n] for n in kept}
    assert g.tensors["nz"].nbytes == 64 and g.tensors["nz"].shape == (2, 4)
    assert {t.name for t in g.tensors.values() if t.kind == "weight"} == {"c", "s2"}


def test_folded_shape_nodes_are_said_in_one_line_with_their_bytes():
    """The six folded nodes ONNX Runtime runs only with optimisations off: one note, with the
    bytes those outputs take in that run (16 + 16 + 8 + 8 + 8 + 4 = 60, measured)."""
    m = _nonzero_and_shape()
    g = load_onnx(m)
    ort = measured_sizes(m)  # graph optimisations off: every node runs
    folded = ["sh", "sh2", "shf", "sh2f", "a", "s2"]
    said = [n for n in g.notes if "folded into weights" in n]
    assert len(said) == 1
    assert f"({sum(ort[t] for t in folded)} bytes of outputs)" in said[0] == said[0]
    assert sum(ort[t] for t in folded) == 60 and "Shape x2" in said[0]
    assert "ORT_DISABLE_ALL" in said[0]


def test_initializer_that_is_a_graph_input_is_not_folded():
    """ONNX Runtime does not treat an overridable initializer as a constant: Neg of it runs;
    Shape of it folds (its declared shape is static)."""
    w = nh.from_array(np.array([1, 2, 3], np.float32), "w")
    nodes = [h.make_node("Neg", ["w"], ["nw"]), h.make_node("Shape", ["w"], ["sw"]),
             h.make_node("Cast", ["sw"], ["swf"], to=T.FLOAT), h.make_node("Add", ["nw", "x"], ["t"]),
             h.make_node("Add", ["t", "swf"], ["y"])]
    m = _model(nodes, [_vi("x", [3]), _vi("w", [3])], [w])
    g = load_onnx(m)
    assert ort_runtime_outputs(m) == {"nw", "t", "y"}
    assert {t.name for t in g.tensors.values() if t.kind in ("activation", "output")} \
        == {"nw", "t", "y"}
    assert g.tensors["nw"].nbytes == measured_sizes(m)["nw"] == 12


@pytest.mark.parametrize("op,folds", [
    ("NonZero", False), ("Neg", True), ("Unique", True), ("Identity", True), ("Compress", False),
    ("NonMaxSuppression", False)])
def test_runtime_folds_constant_matches_onnx_runtime(op, folds):
    """Our answer for one node of constant inputs against ONNX Runtime's optimised graph."""
    vals = {"c": np.array([[1.0, 0.0, 1.0], [2.0, 2.0, 0.0]], np.float32),
            "cd": np.array([True, False, True]),
            "bx": np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]]], np.float32),
            "sc": np.array([[[0.9, 0.8, 0.7]]], np.float32)}
    ins = {"Compress": ["c", "cd"], "NonMaxSuppression": ["bx", "sc"]}.get(op, ["c"])
    node = h.make_node(op, ins, ["o"], **({"axis": 1} if op == "Compress" else {}))
    assert runtime_folds_constant(node, vals, {}, {}, [h.make_opsetid("", 13)]) is folds
    m = _model([node, h.make_node("Cast", ["o"], ["of"], to=T.FLOAT),
                h.make_node("ReduceSum", ["of"], ["r"], keepdims=0),
                h.make_node("Add", ["r", "x"], ["y"])], [_vi("x", [1])],
               [nh.from_array(vals[i], i) for i in ins])
    assert ("o" in ort_runtime_outputs(m)) is not folds
    if op == "NonMaxSuppression":  # its count is not evaluated here: refused, named
        with pytest.raises(OnnxImportError, match=r"tensor 'o'.*op NonMaxSuppression"):
            load_onnx(m)
        return
    g = load_onnx(m)
    planned = "o" in g.tensors and g.tensors["o"].kind == "activation"
    assert planned is not folds


@pytest.mark.parametrize("op", ["GroupNormalization", "MeanVarianceNormalization"])
def test_shape_of_an_output_onnx_runtime_cannot_size_is_planned(op):
    """ONNX Runtime's own inference leaves these outputs unshaped (the toolkit sizes them by the
    specification), so it runs a Shape of one instead of folding it: planned, as ONNX
    Runtime's optimised graph keeps it."""
    ins, kw = (["x", "s", "b"], {"num_groups": 3}) if op[0] == "G" else (["x"], {})
    nodes = [h.make_node(op, ins, ["g"], **kw), h.make_node("Shape", ["g"], ["sh"]),
             h.make_node("Cast", ["sh"], ["shf"], to=T.FLOAT),
             h.make_node("ReduceSum", ["shf"], ["r"], keepdims=0),
             h.make_node("Add", ["g", "r"], ["y"])]
    m = _model(nodes, [_vi("x", [2, 6, 4, 5])],
               [nh.from_array(np.ones(3, np.float32), "s"),
                nh.from_array(np.zeros(3, np.float32), "b")], opset=18)
    g = load_onnx(m)
    kept = ort_runtime_outputs(m)
    assert {"sh", "shf", "r"} <= kept
    ort = measured_sizes(m)
    assert {t: g.tensors[t].nbytes for t in ("g", "sh", "shf", "r", "y")} == \
        {t: ort[t] for t in ("g", "sh", "shf", "r", "y")} == \
        {"g": 960, "sh": 32, "shf": 16, "r": 4, "y": 960}
    assert all(g.tensors[t].kind == "activation" for t in ("sh", "shf", "r"))
    body = [n for n in g.notes if "function body" in n]
    assert len(body) == (1 if op == "GroupNormalization" else 0)
    if body:  # ONNX Runtime does run the body: its nodes are in the optimised graph
        assert "ReduceMean" in {n.op_type for n in _optimized(m).graph.node}


def _optimized(m):
    import os
    import tempfile

    import onnx
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        opts.optimized_model_filepath = os.path.join(d, "o.onnx")
        ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return onnx.load(opts.optimized_model_filepath)
