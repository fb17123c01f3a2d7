"""Tests of the ONNX importer, lifetime analysis, seed examples and workloads (scheduling/)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from planners.bounds import lower_bound
from planners.errors import MemplanError
from scheduling.errors import OnnxImportError
from scheduling.examples import (
    SEED000_TABLE,
    mobilenet_v1_first_layer,
    seed000_graph,
    seed000_problem,
)
from scheduling.graph import Graph
from scheduling.lifetimes import (
    lifetime_problem,
    live_bytes,
    peak_live_bytes,
    resident_bytes,
    tensor_lifetimes,
)
from scheduling.onnx_import import estimate_macs, load_onnx
from scheduling.schedulers import schedule
from scheduling.workloads import ONNX_LIGHT_MODELS, onnx_light_models

LIGHT = [
    "alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


@pytest.fixture(scope="module")
def light_graphs():
    """All nine light models, imported once for the module."""
    return {name: load_onnx(path, name=name) for name, path in onnx_light_models().items()}


# -- workloads and import of the nine light models ------------------------------------------------
def test_onnx_light_models_lists_nine_existing_files():
    models = onnx_light_models()
    assert list(models) == LIGHT == list(ONNX_LIGHT_MODELS)
    for name, path in models.items():
        assert (
            path.is_file()
            and path.name == f"light_{'bvlc_' if name == 'alexnet' else ''}{name}.onnx"
        )


@pytest.mark.parametrize("name", LIGHT)
def test_light_model_imports_as_a_valid_graph(light_graphs, name):
    g = light_graphs[name]
    g.validate()
    s = schedule(g, "file_order")
    assert len(s.order) == len(g.ops) > 0
    # exactly one runtime input (1x3x224x224 float32) and one output
    assert len(g.inputs) == 1 and len(g.outputs) == 1
    x = g.tensors[g.inputs[0]]
    assert x.shape == (1, 3, 224, 224) and x.nbytes == 602112
    # the constant subgraphs are folded away: no ConstantOfShape operator remains
    assert not any(op.op_type == "ConstantOfShape" for op in g.ops.values())
    # every weight is read by an operator; every tensor has static, positive bytes
    assert all(g.tensors[w].consumers for w in g.weights)
    assert all(
        t.nbytes == math.prod(t.shape) * np.dtype(t.dtype).itemsize for t in g.tensors.values()
    )
    p = lifetime_problem(g)
    # every named output is written (Dropout masks too, read or not): one buffer each
    assert p.n == sum(len(op.outputs) for op in g.ops.values())
    assert peak_live_bytes(g) == lower_bound(p) > 0


def test_resnet50_cross_check(light_graphs):
    """Independent count on light_resnet50 in file order: 176 activation tensors (415 nodes minus
    239 ConstantOfShape), peak 9,633,792 live activation bytes; graph input excluded."""
    g = light_graphs["resnet50"]
    p = lifetime_problem(g)
    assert p.n == 176
    assert peak_live_bytes(g) == 9_633_792
    # counting the graph input as an activation: one more buffer, same peak
    p_in = lifetime_problem(g, include_inputs=True)
    assert p_in.n == 177 and lower_bound(p_in) == 9_633_792
    # unified arena: residents first, lower bound = resident bytes + activation peak
    u = lifetime_problem(g, unified=True)
    nres = int(u.resident.sum())
    assert u.resident[:nres].all() and not u.resident[nres:].any()
    assert lower_bound(u) == resident_bytes(g) + 9_633_792
    # ResNet-50 has ~25.6 M float32 parameters (+ BN statistics)
    assert 25_000_000 * 4 < resident_bytes(g) - 602112 < 26_000_000 * 4


def test_resnet50_macs(light_graphs):
    g = light_graphs["resnet50"]
    convs = [op for op in g.ops.values() if op.op_type == "Conv"]
    # stem: 7x7 conv, 3 -> 64 channels, stride 2 -> 112x112 output
    assert convs[0].macs == 64 * 112 * 112 * 3 * 7 * 7
    (fc,) = [op for op in g.ops.values() if op.op_type == "Gemm"]
    assert fc.macs == 2048 * 1000
    assert all(op.macs is None for op in g.ops.values() if op.op_type in ("Relu", "Sum"))
    total = sum(op.macs or 0 for op in g.ops.values())
    assert 4.0e9 < total < 4.2e9  # the usual "4.1 GMACs" of ResNet-50


def test_problem_sizes_round_trip_against_onnx_shapes(light_graphs):
    """Bytes of every buffer == prod(shape) * element size, read independently from the inferred
    ONNX value infos."""
    path = onnx_light_models()["squeezenet"]
    m = onnx.shape_inference.infer_shapes(onnx.load(str(path)), strict_mode=True)
    vis = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    p = lifetime_problem(light_graphs["squeezenet"])
    assert p.n == 67  # 66 operators, and the Dropout writes its (unread) mask r62 too
    sizes = dict(zip(p.ids, p.sizes.tolist()))
    assert "r62" not in vis and sizes["r62"] == sizes["r61"] == 512 * 13 * 13 * 4
    for b in p.buffers:
        if b.id == "r62":
            continue  # ONNX infers no shape for a Dropout-7 mask (see test_dropout_mask_kept)
        tt = vis[b.id].type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        assert b.size == math.prod(dims) * helper.tensor_dtype_to_np_dtype(tt.elem_type).itemsize


def test_dropout_mask_kept(light_graphs):
    """An inference Dropout with a named mask output writes the mask (ONNX Runtime allocates
    it): a buffer of the input's shape and type (opset 9), live at its producer's step only."""
    g = light_graphs["vgg19"]
    drops = [op for op in g.ops.values() if op.op_type == "Dropout"]
    assert len(drops) == 2 and all(len(op.outputs) == 2 for op in drops)
    lt = tensor_lifetimes(g)
    order = list(g.ops)
    for op in drops:
        mask = g.tensors[op.outputs[1]]
        assert mask.shape == g.tensors[op.inputs[0]].shape == (1, 4096)
        assert mask.nbytes == 16384 and not mask.consumers
        assert g.shape_source[mask.name] == "onnx_spec"
        assert lt[mask.name] == (order.index(op.name), order.index(op.name))


# -- importer errors and overrides ----------------------------------------------------------------
def _relu_model(dims, name="X"):
    x = helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    w = helper.make_tensor("W", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    nodes = [
        helper.make_node("Relu", [name], ["R"], name="relu"),
        helper.make_node("Add", ["R", "W"], ["Y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "tiny", [x], [y], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_symbolic_dim_without_override_names_the_tensor(tmp_path):
    path = tmp_path / "sym.onnx"
    onnx.save(_relu_model(["N", 4]), str(path))
    with pytest.raises(OnnxImportError, match=r"tensor 'X' has an unknown size.*'N'") as e:
        load_onnx(path)
    assert isinstance(e.value, MemplanError)


def test_overrides_by_dim_param_and_by_input_name(tmp_path):
    path = tmp_path / "sym.onnx"
    onnx.save(_relu_model(["N", 4]), str(path))
    g = load_onnx(path, overrides={"N": 2})
    assert g.tensors["X"].shape == (2, 4) and g.tensors["R"].nbytes == 32
    assert g.tensors["Y"].kind == "output" and g.tensors["W"].kind == "weight"
    g = load_onnx(path, overrides={"X": [3, 4]})
    assert g.tensors["Y"].nbytes == 48
    with pytest.raises(OnnxImportError, match=r"override key\(s\) \['M'\] match no graph input"):
        load_onnx(path, overrides={"M": 1})


def test_model_proto_is_accepted_and_not_modified():
    m = _relu_model(["N", 4])
    g = load_onnx(m, overrides={"N": 5})
    assert g.tensors["X"].nbytes == 80
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"


@pytest.mark.parametrize(
    "content, match",
    [
        (b"this is not a protobuf \x00\xff\x13", "not a valid ONNX protobuf"),
        (b"\x08\x07", "parses but holds no graph nodes"),  # ir_version=7 and nothing else
        (b"", "empty file"),
    ],
)
def test_malformed_file_is_a_clear_error(tmp_path, content, match):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=match) as e:
        load_onnx(path)
    assert str(path) in str(e.value)


def test_missing_file_and_failed_shape_inference(tmp_path):
    with pytest.raises(OnnxImportError, match="no such ONNX file"):
        load_onnx(tmp_path / "nope.onnx")
    # Add of [2, 4] and [3] cannot broadcast: strict shape inference fails
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])
    z = helper.make_tensor_value_info("Z", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Add", ["X", "Z"], ["Y"])], "bad", [x, z], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match="strict ONNX shape inference failed"):
        load_onnx(m)


def test_estimate_macs_matmul_and_gemm_trans():
    assert estimate_macs("MatMul", {}, [[2, 5, 7], [7, 3]], [[2, 5, 3]]) == 2 * 5 * 3 * 7
    assert estimate_macs("Gemm", {"transA": 1}, [[7, 5], [7, 3]], [[5, 3]]) == 5 * 3 * 7
    assert estimate_macs("Relu", {}, [[4]], [[4]]) is None


# -- lifetime rules on hand-built graphs ---------------------------------------------------------
def _dead_and_output_graph() -> Graph:
    """step 0: A(x) -> out (graph output); step 1: B(x) -> dead (never read);
    step 2: C(x) -> h; step 3: D(h) -> y (graph output)."""
    g = Graph("rules")
    g.add_tensor("x", (10,), "int8", kind="input")
    for t in ("out", "dead", "h", "y"):
        g.add_tensor(t, (10,), "int8")
    g.add_op("A", "Relu", ["x"], ["out"])
    g.add_op("B", "Relu", ["x"], ["dead"])
    g.add_op("C", "Relu", ["x"], ["h"])
    g.add_op("D", "Relu", ["h"], ["y"])
    g.mark_output("out")
    g.mark_output("y")
    return g


def test_produced_but_unused_tensor_lives_one_step():
    lt = tensor_lifetimes(_dead_and_output_graph())
    assert lt["dead"] == (1, 1)
    assert lt["h"] == (2, 3)


def test_graph_output_lives_to_the_end_and_input_from_step_0():
    g = _dead_and_output_graph()
    lt = tensor_lifetimes(g)
    assert lt["out"] == (0, 3) and lt["y"] == (3, 3)
    assert lt["x"] == (0, 2)  # last read by C at step 2
    p = lifetime_problem(g)
    assert p.ids == ["out", "dead", "h", "y"]  # input excluded by default
    assert (p.index["out"], p.buffers[p.index["out"]].end) == (0, 4)  # half-open [0, 4)
    assert live_bytes(g).tolist() == [10, 20, 20, 30]
    assert live_bytes(g, include_inputs=True).tolist() == [20, 30, 30, 30]


def test_lifetimes_follow_the_schedule():
    g = _dead_and_output_graph()
    lt = tensor_lifetimes(g, ["C", "D", "B", "A"])
    assert lt["h"] == (0, 1) and lt["out"] == (3, 3) and lt["dead"] == (2, 2) and lt["x"] == (0, 3)


# -- seed examples -------------------------------------------------------------------------------
def test_seed000_graph_reproduces_the_seed_table():
    g = seed000_graph()
    g.validate()
    lt = tensor_lifetimes(g)
    for name, first, last, size, resident in SEED000_TABLE:
        assert g.tensors[name].nbytes == size
        assert (g.tensors[name].kind in ("weight", "input")) == resident
        if name != "gemm_w":  # documented: our weights are available from step 0
            assert lt[name] == (first, last), name
    assert lt["gemm_w"] == (0, 4)
    assert lt["relu_y"] == (3, 4)  # the tensor the seed's table omits (see scheduling.examples)


def test_seed000_peak_and_unified_lower_bound():
    g = seed000_graph()
    assert live_bytes(g).tolist() == [4096, 12288, 20480, 16384, 9216, 2048]
    assert peak_live_bytes(g) == 20480
    acts = lifetime_problem(g)
    seed_acts = [r[0] for r in SEED000_TABLE if not r[4]]
    assert sorted(acts.ids) == sorted(seed_acts + ["relu_y"])  # the seed's 5 + relu_y
    assert resident_bytes(g) == 331776
    u = lifetime_problem(g, unified=True, alignment=16)
    assert u.ids[:3] == ["input", "conv_w", "gemm_w"] and u.resident.sum() == 3
    assert lower_bound(u) == 352256 == 331776 + 20480
    assert peak_live_bytes(g, unified=True) == 352256
    # the seed's own table as a problem: 5 activations, same bounds
    sp = seed000_problem(unified=False)
    assert sp.n == 5 and lower_bound(sp) == 20480
    assert lower_bound(seed000_problem()) == 352256


def test_mobilenet_v1_first_layer():
    g = mobilenet_v1_first_layer()
    g.validate()
    assert g.tensors["conv_y"].nbytes == 112 * 112 * 32 == 401408
    assert g.tensors["input"].nbytes == 224 * 224 * 3
    assert g.ops["conv"].macs == 32 * 112 * 112 * 3 * 3 * 3
    assert peak_live_bytes(g) == 2 * 401408
    f = mobilenet_v1_first_layer(fused=True)
    f.validate()
    assert len(f.ops) == 1 and peak_live_bytes(f) == 401408
