"""Shapes that exporters really produce: the resolution chain of scheduling/onnx_shapes.py, its
sources, overrides on any tensor, the errors for unknown shapes, measured shapes from ONNX Runtime,
and the cases of ../shared/cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_case
from onnx import TensorProto, helper

from planners.bounds import lower_bound
from scheduling.errors import OnnxImportError
from scheduling.lifetimes import lifetime_problem, tensor_lifetimes
from scheduling.onnx_import import load_onnx
from scheduling.onnx_shapes import SHAPE_SOURCES, measured_sizes, resolve_shapes
from scheduling.uses import buffer_uses
from scheduling.workloads import onnx_light_models

ROOT = Path(__file__).resolve().parents[1]


def _model(nodes, inputs, outputs, value_info=(), initializers=(), opset=17):
    g = helper.make_graph(nodes, "exported", inputs, outputs, initializer=list(initializers),
                          value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _const(name, values):
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name + "_v", TensorProto.INT64,
                                                     [len(values)], values))


def _vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


# -- the cases of ../shared/cases ---------------------------------------------------------------
def test_pad_const_imports_with_folded_pads():
    g = load_onnx(shared_case("pad_const.onnx"))
    assert g.tensors["y"].shape == g.tensors["z"].shape == (1, 12)
    assert g.tensors["y"].nbytes == g.tensors["z"].nbytes == 48
    assert g.tensors["y"].dtype == "float32"
    # the pads come from Transpose+Reshape of constants: a weight, not an operator
    assert g.tensors["pads"].kind == "weight" and [op.op_type for op in g.ops.values()] == [
        "Pad", "Relu"]
    assert g.shape_source["y"] == "constant_folding" and g.shape_source["z"] == "declared"
    assert lower_bound(lifetime_problem(g)) == 96


def test_neg_dim_imports_with_override():
    g = load_onnx(shared_case("neg_dim.onnx"), overrides={"x": [1, 4]})
    assert g.tensors["y"].nbytes == g.tensors["z"].nbytes == 16
    assert g.tensors["z"].shape == (1, 4) and g.tensors["z"].kind == "output"
    assert g.shape_source["x"] == "override" and g.shape_source["z"] == "onnx_strict"


def test_neg_dim_without_override_names_file_tensor_and_override():
    path = shared_case("neg_dim.onnx")
    with pytest.raises(OnnxImportError) as e:
        load_onnx(path)
    msg = str(e.value)
    assert str(path) in msg and "tensor 'x'" in msg and "--override x=" in msg
    assert "-1" in msg


def test_unused_split_output_is_still_written():
    g = load_onnx(shared_case("unused_split_output.onnx"))
    q = g.tensors["Q"]
    assert q.nbytes == 3072 and q.producer is not None and not q.consumers
    lt = tensor_lifetimes(g)
    assert lt["Q"] == (0, 0) and lt["P"] == (0, 1) and lt["Y"] == (1, 1)
    p = lifetime_problem(g)
    assert lower_bound(p) == 4096  # P and Q together at the Split
    uses = dict(zip(p.ids, buffer_uses(g, p)))
    # the write is a use; a graph output is also read at the last step
    assert uses["Q"] == [0] and uses["P"] == [0, 1] and uses["Y"] == [1, 1]


# -- the resolution chain -----------------------------------------------------------------------
def _shape_gather_concat_model():
    """An exporter's dynamic-batch flatten: Reshape(x, Concat(Gather(Shape(x), 0), [-1]))."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        _const("i0", [0]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        _const("m1", [-1]),
        helper.make_node("Concat", ["n", "m1"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    return _model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", None)])


def test_shape_gather_concat_reshape_is_resolved():
    g = load_onnx(_shape_gather_concat_model())
    assert g.tensors["r"].shape == g.tensors["y"].shape == (2, 12)
    assert g.tensors["r"].nbytes == 96
    assert g.shape_source["r"] == g.shape_source["y"] == "onnx_data_prop"
    assert g.tensors["t"].kind == "weight"  # shape arithmetic on a static shape is folded
    assert [op.op_type for op in g.ops.values()] == ["Reshape", "Relu"]
    assert set(g.shape_source.values()) <= set(SHAPE_SOURCES)


def test_transpose_cast_chain_needs_constant_folding():
    """A Reshape target that ONNX inference cannot evaluate (a Transpose of a 2-D constant, then
    a Cast): resolved by constant folding with the reference evaluator."""
    nodes = [
        helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
            "c_v", TensorProto.FLOAT, [2, 1], [3.0, 8.0])),
        helper.make_node("Transpose", ["c"], ["ct"], perm=[1, 0]),
        helper.make_node("Cast", ["ct"], ["ci"], to=TensorProto.INT64),
        _const("flat", [2]),
        helper.make_node("Reshape", ["ci", "flat"], ["t"]),
        helper.make_node("Reshape", ["x", "t"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    m = _model(nodes, [_vi("x", [2, 12])], [_vi("y", None)])
    res = resolve_shapes(m)
    assert res.values["t"].tolist() == [3, 8]
    g = load_onnx(m)
    assert g.tensors["r"].shape == (3, 8) and g.tensors["y"].nbytes == 96
    assert g.shape_source["r"] == "constant_folding"


def _runtime_target_model(declared_out=None, value_info=()):
    """Reshape whose target is computed from the *values* of input x (ReduceMax, Cast): it
    depends on runtime data and must never be folded."""
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
        helper.make_node("Cast", ["mx"], ["mi"], to=TensorProto.INT64),
        helper.make_node("Unsqueeze", ["mi", "ax"], ["mu"]),
        _const("m1", [-1]),
        helper.make_node("Concat", ["mu", "m1"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    ax = helper.make_tensor("ax", TensorProto.INT64, [1], [0])
    return _model(nodes, [_vi("x", [2, 12])], [_vi("y", declared_out)],
                  value_info=value_info, initializers=[ax])


def test_runtime_value_reshape_target_is_not_folded():
    m = _runtime_target_model()
    res = resolve_shapes(m)
    assert "t" not in res.values and "mi" not in res.values and "r" not in res.shapes
    with pytest.raises(OnnxImportError) as e:
        load_onnx(m)
    msg = str(e.value)
    assert "tensor 'r'" in msg and "op Reshape" in msg and "node 5 in topological order" in msg
    assert "'t'" in msg and "runtime" in msg and "--override r=" in msg


def test_runtime_value_reshape_target_with_override():
    g = load_onnx(_runtime_target_model(), overrides={"r": [3, 8]})
    assert g.tensors["r"].shape == (3, 8) and g.shape_source["r"] == "override"
    assert g.tensors["y"].nbytes == 96 and g.shape_source["y"] == "onnx_strict"
    assert g.tensors["t"].kind == "activation"  # computed at run time, not a weight
    assert g.tensors["t"].producer is not None


def test_override_on_value_info_and_declared_output():
    # value_info declares r with a -1 dim; the declared output y with symbolic dims
    m = _runtime_target_model(declared_out=["a", "b"], value_info=[_vi("r", [-1, 8])])
    g = load_onnx(m, overrides={"r": [3, 8]})
    assert g.tensors["y"].shape == (3, 8) and g.shape_source["r"] == "override"
    g = load_onnx(m, overrides={"y": [3, 8], "r": [3, 8]})
    assert g.shape_source["y"] == "override" and g.tensors["y"].nbytes == 96
    g = load_onnx(m, overrides={"a": 4, "b": 6, "r": [4, 6]})  # dim names of a declared output
    assert g.tensors["y"].shape == (4, 6) and g.shape_source["y"] == "override"
    with pytest.raises(OnnxImportError, match=r"override for tensor 'r' has rank 3"):
        load_onnx(m, overrides={"r": [1, 3, 8]})
    with pytest.raises(OnnxImportError, match=r"override key\(s\) \['nope'\]"):
        load_onnx(m, overrides={"nope": 1, "r": [3, 8]})


def test_wrong_declared_output_is_an_error_an_override_fixes():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 4])], [_vi("y", [3, 4])])
    with pytest.raises(OnnxImportError, match=r"strict ONNX shape inference failed.*--override"):
        load_onnx(m)
    g = load_onnx(m, overrides={"y": [2, 4]})
    assert g.tensors["y"].nbytes == 32 and g.shape_source["y"] == "override"


def test_dim_param_override_reaches_value_info():
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    m = _model(nodes, [_vi("x", ["N", 4])], [_vi("y", ["N", -1])],
               value_info=[_vi("h", ["N", 4])])
    g = load_onnx(m, overrides={"N": 3})
    assert g.tensors["h"].nbytes == g.tensors["y"].nbytes == 48
    assert g.shape_source["x"] == "override"


def test_contrib_operator_is_settled_by_ort_symbolic_inference():
    """ONNX has no schema for com.microsoft Gelu (as ORT-optimised exports contain): only ONNX
    Runtime's symbolic inference settles its output, and ONNX Runtime's run agrees."""
    nodes = [helper.make_node("Gelu", ["x"], ["h"], domain="com.microsoft"),
             helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "contrib", [_vi("x", [2, 8])], [_vi("y", None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    gr = load_onnx(m)
    assert gr.tensors["h"].shape == gr.tensors["y"].shape == (2, 8)
    assert gr.shape_source["h"] == gr.shape_source["y"] == "ort_symbolic"
    assert measured_sizes(m) == {"h": 64, "y": 64}


def test_ort_symbolic_inference_does_not_import_torch():
    """The contrib graph above settled by ONNX Runtime's symbolic inference in a fresh process:
    ``onnxruntime.tools``' package ``__init__`` imports torch where it is installed (1.5-4 s per
    ONNX import); the tool's module is loaded from its file without it."""
    code = (
        "import sys\n"
        "from onnx import TensorProto, helper\n"
        "from scheduling.onnx_import import load_onnx\n"
        "vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)\n"
        "nodes = [helper.make_node('Gelu', ['x'], ['h'], domain='com.microsoft'),\n"
        "         helper.make_node('Relu', ['h'], ['y'])]\n"
        "g = helper.make_graph(nodes, 'contrib', [vi('x', [2, 8])], [vi('y', None)])\n"
        "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17),\n"
        "                                        helper.make_opsetid('com.microsoft', 1)])\n"
        "gr = load_onnx(m)\n"
        "print(gr.shape_source['y'], 'torch' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ort_symbolic", "False"]


def test_sweep_workload_overrides(tmp_path):
    from experiments.sweep import execute_run, expand_runs, parse_config

    path = str(shared_case("neg_dim.onnx"))
    recs = []
    for item in ({"path": path, "overrides": {"x": [1, 4]}}, {"path": path}):
        cfg = parse_config({"name": "t", "out": str(tmp_path / "sweep"), "workloads": [item],
                            "planners": {"greedy_by_size": {}}}, base=tmp_path)
        (spec,) = expand_runs(cfg)
        recs.append(execute_run(spec)[0])
    assert recs[0]["status"] == "optimal" and recs[0]["lower_bound"] == 32 == recs[0]["arena"]
    assert recs[1]["status"] == "error" and "tensor 'x'" in recs[1]["error"]


# -- measured shapes ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(onnx_light_models()))
def test_measured_equals_inferred_on_light_models(name):
    path = onnx_light_models()[name]
    g = load_onnx(path)
    measured = measured_sizes(path)
    acts = [t for t in g.tensors.values() if t.kind in ("activation", "output")]
    assert len(acts) > 20
    assert {t.name: t.nbytes for t in acts} == {t.name: measured[t.name] for t in acts}


@pytest.mark.parametrize("case, overrides", [
    ("pad_const.onnx", None), ("neg_dim.onnx", {"x": [1, 4]}),
    ("unused_split_output.onnx", None),
])
def test_measured_equals_inferred_on_cases(case, overrides):
    path = shared_case(case)
    g = load_onnx(path, overrides=overrides)
    gm = load_onnx(path, overrides=overrides, shapes="measured")
    measured = measured_sizes(path, overrides=overrides)
    acts = [t.name for t in g.tensors.values() if t.kind in ("activation", "output")]
    assert {n: g.tensors[n].nbytes for n in acts} == {n: measured[n] for n in acts}
    assert {n: gm.tensors[n].nbytes for n in acts} == {n: measured[n] for n in acts}
    assert all(gm.shape_source[n] == "measured" for n in acts)


def test_measured_needs_static_inputs():
    with pytest.raises(OnnxImportError, match=r"graph input 'x'.*--override x="):
        measured_sizes(shared_case("neg_dim.onnx"))


# -- command line -------------------------------------------------------------------------------
def _memplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cli_plan_with_override():
    path = str(shared_case("neg_dim.onnx"))
    r = _memplan("plan", path, "--override", "x=1,4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["buffers"] == 2 and out["lower_bound"] == 32 and out["valid"]


def test_cli_plan_without_override_exits_2():
    path = str(shared_case("neg_dim.onnx"))
    r = _memplan("plan", path, "--json")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memplan: error: ")
    assert path in lines[0] and "'x'" in lines[0] and "--override" in lines[0]


def test_cli_export_and_budget_take_override(tmp_path):
    path = str(shared_case("neg_dim.onnx"))
    r = _memplan("export", path, "--override", "x=1,4", "--pipeline", "", "-o",
                 str(tmp_path / "plan.json"))
    assert r.returncode == 0, r.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["arena_size"] == 32
    r = _memplan("budget", path, "--override", "x=1,4", "--budget", "64", "--technique",
                 "recompute", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["baseline_peak"] == 32
    r = _memplan("plan", "seed000", "--override", "x=1")
    assert r.returncode == 2 and "--override applies to ONNX" in r.stderr


# -- declared shapes are hints; contrib operators with documented shapes -------------------------
def _if_model(then_nodes, then_out, else_nodes, else_out, x_dims, opset=17, outer=()):
    """y = Relu(If(cond, then, else)) on input x; cond is a runtime bool input; ``outer``: main
    graph nodes before the If (constants the branches read)."""
    then_g = helper.make_graph(then_nodes, "then_g", [], [then_out])
    else_g = helper.make_graph(else_nodes, "else_g", [], [else_out])
    nodes = [*outer,
             helper.make_node("If", ["cond"], ["b"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Relu", ["b"], ["y"])]
    return _model(nodes, [_vi("x", x_dims), _vi("cond", [], TensorProto.BOOL)],
                  [_vi("y", None)], opset=opset)


def _sizes(g):
    return {t.name: t.nbytes for t in g.tensors.values() if t.kind in ("activation", "output")}


def test_subgraph_output_declared_from_another_trace_is_a_hint():
    """A branch output declared [7, 3] (the export trace had N = 7): with N = 2, strict inference
    contradicts it; it is ignored, named in graph.notes with both shapes, and every size equals
    ONNX Runtime's (which only warns about such declared shapes)."""
    then_nodes = [helper.make_node("Relu", ["x"], ["t1"]), helper.make_node("Neg", ["t1"], ["t"])]
    else_nodes = [helper.make_node("Abs", ["x"], ["e"])]
    m = _if_model(then_nodes, _vi("t", [7, 3]), else_nodes, _vi("e", ["N", 3]), ["N", 3])
    g = load_onnx(m, overrides={"N": 2})
    assert any("'t'" in n and "[7, 3]" in n and "[2, 3]" in n for n in g.notes)
    assert g.tensors["b"].shape == (2, 3) and g.tensors["y"].nbytes == 24
    ws = g.tensors["If_0_subgraph_ws"].nbytes
    assert ws == 24  # then branch: t1 (24 B) lives while t is written into b
    for cond in (True, False):
        measured = measured_sizes(m, {"N": 2}, values={"cond": cond})
        assert {n: measured[n] for n in ("b", "y")} == {"b": 24, "y": 24}
        assert {k: v for k, v in _sizes(g).items() if k in measured} == {
            k: measured[k] for k in _sizes(g) if k in measured}


def test_main_graph_value_info_conflict_is_a_hint():
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])]
    m = _model(nodes, [_vi("x", ["N", 3])], [_vi("y", None)], value_info=[_vi("h", [7, 3])])
    g = load_onnx(m, overrides={"N": 2})
    assert g.tensors["h"].nbytes == g.tensors["y"].nbytes == 24
    assert g.shape_source["h"] == "onnx_strict"
    assert any("'h'" in n and "[7, 3]" in n and "[2, 3]" in n for n in g.notes)
    assert _sizes(g) == measured_sizes(m, {"N": 2})
    # a fully static declared graph output stays a law (the error points to --override)
    bad = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [7, 3])])
    with pytest.raises(OnnxImportError, match=r"strict ONNX shape inference failed"):
        load_onnx(bad)


def test_if_branch_that_cannot_run_with_the_shapes_is_ruled_out():
    """silero-vad's kind: the else branch squeezes a dimension that is 2 at these shapes, so the
    ONNX spec rejects it and ONNX Runtime fails when it is taken; the workspace is the then
    branch's, the If's output its shape, and sizes equal ONNX Runtime's run with cond true."""
    # the axes are an outer-scope constant, as silero-vad's are: ONNX Runtime's load-time
    # inference does not see the value, the importer lends it to the branch
    ax = helper.make_node("Constant", [], ["a0"],
                          value=helper.make_tensor("ax", TensorProto.INT64, [1], [0]))
    then_nodes = [helper.make_node("Relu", ["x"], ["t1"]), helper.make_node("Neg", ["t1"], ["t"])]
    else_nodes = [helper.make_node("Squeeze", ["x", "a0"], ["s"]),
                  helper.make_node("Unsqueeze", ["s", "a0"], ["e"])]
    m = _if_model(then_nodes, _vi("t", None), else_nodes, _vi("e", None), ["N", 4], outer=[ax])
    g = load_onnx(m, overrides={"N": 2})
    assert any("else_branch of If node" in n and "Squeeze" in n for n in g.notes)
    assert g.tensors["b"].shape == (2, 4) and g.tensors["y"].nbytes == 32
    assert g.tensors["If_0_subgraph_ws"].nbytes == 32  # t1, the then branch's temporary
    assert g.ops["If_0"].inputs == ("cond", "x", "a0")  # the ruled-out branch's reads too
    # ONNX Runtime (N symbolic in the file: it loads) with x of 2 rows: the then branch runs
    # and gives y the imported size; the else branch fails
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    x = np.ones((2, 4), np.float32)
    (y,) = sess.run(["y"], {"x": x, "cond": np.array(True)})
    assert y.nbytes == g.tensors["y"].nbytes == g.tensors["b"].nbytes
    with pytest.raises(Exception, match=r"Squeeze|squeeze|dimension"):
        sess.run(["y"], {"x": x, "cond": np.array(False)})
    # with N = 1 both branches run: nothing is ruled out, the workspace is the larger branch's
    g1 = load_onnx(m, overrides={"N": 1})
    assert not g1.notes and g1.tensors["If_0_subgraph_ws"].nbytes == 16


def test_measured_values_must_name_an_input_with_its_shape():
    m = _if_model([helper.make_node("Relu", ["x"], ["t"])], _vi("t", None),
                  [helper.make_node("Neg", ["x"], ["e"])], _vi("e", None), [2, 4])
    with pytest.raises(OnnxImportError, match=r"'nope': not a graph input"):
        measured_sizes(m, values={"nope": 1})
    with pytest.raises(OnnxImportError, match=r"'cond' has shape \[2\]"):
        measured_sizes(m, values={"cond": [True, False]})


def _dq_lstm_model(direction="bidirectional", seq=5, batch=1, inp=4, hidden=3):
    import numpy as np
    from onnx import numpy_helper

    dirs = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(-5, 5, (dirs, inp, 4 * hidden)).astype(np.int8), "W"),
        numpy_helper.from_array(rng.integers(-5, 5, (dirs, hidden, 4 * hidden)).astype(np.int8),
                                "R"),
        numpy_helper.from_array(rng.standard_normal((dirs, 8 * hidden)).astype(np.float32), "B"),
        numpy_helper.from_array(np.full(dirs, 0.05, np.float32), "Ws"),
        numpy_helper.from_array(np.zeros(dirs, np.int8), "Wz"),
        numpy_helper.from_array(np.full(dirs, 0.05, np.float32), "Rs"),
        numpy_helper.from_array(np.zeros(dirs, np.int8), "Rz"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"]),
        helper.make_node("DynamicQuantizeLSTM",
                         ["xr", "W", "R", "B", "", "", "", "", "Ws", "Wz", "Rs", "Rz"],
                         ["Y", "Y_h", "Y_c"], domain="com.microsoft", hidden_size=hidden,
                         direction=direction),
        helper.make_node("Transpose", ["Y"], ["yt"], perm=[0, 2, 1, 3]),
        helper.make_node("Add", ["Y_h", "Y_c"], ["hc"]),
    ]
    g = helper.make_graph(nodes, "dqlstm", [_vi("x", [seq, batch, inp])],
                          [_vi("yt", None), _vi("hc", None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("direction", ["bidirectional", "forward"])
def test_dynamic_quantize_lstm_has_its_documented_shapes(direction):
    """com.microsoft DynamicQuantizeLSTM (ddddocr's common_old.onnx): neither ONNX nor ONNX
    Runtime's symbolic inference knows it; the onnx_spec rule (ContribOperators.md) gives Y
    [seq, dirs, batch, hidden] and Y_h, Y_c [dirs, batch, hidden], and ONNX Runtime agrees."""
    m = _dq_lstm_model(direction)
    g = load_onnx(m)
    dirs = 2 if direction == "bidirectional" else 1
    assert g.tensors["Y"].shape == (5, dirs, 1, 3) and g.tensors["Y_h"].shape == (dirs, 1, 3)
    assert g.shape_source["Y"] == g.shape_source["Y_c"] == "onnx_spec"
    assert g.tensors["yt"].shape == (5, 1, dirs, 3)
    assert _sizes(g) == measured_sizes(m)


def test_unknown_contrib_operator_is_still_a_clear_error():
    nodes = [helper.make_node("NoSuchContribOp", ["x"], ["h"], domain="com.microsoft"),
             helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "contrib", [_vi("x", [2, 8])], [_vi("y", None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(OnnxImportError,
                       match=r"tensor 'h'.*op NoSuchContribOp.*--override h="):
        load_onnx(m)
