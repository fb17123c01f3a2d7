"""Issue 7: MobileNet generators, alias groups in the interval model, graph passes, export."""

from __future__ import annotations

import json
import shutil
import subprocess
import types

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from planners import (
    Buffer,
    InvalidPlanError,
    Problem,
    ProblemError,
    check_plan,
    live_profile,
    lower_bound,
    naive_arena,
    plan,
)
from planners.registry import PLANNERS
from scheduling.examples import mobilenet_v1_first_layer, seed000_graph
from scheduling.graph import Graph
from scheduling.lifetimes import peak_live_bytes
from scheduling.mobilenet import mobilenet_v1, mobilenet_v2
from scheduling.transforms import (
    PASSES,
    fold_batchnorm,
    fuse,
    graph_aliases,
    inplace,
    quantize,
    run_pipeline,
    simplify,
    transformed_peak,
    transformed_problem,
    views,
    workspace_bytes,
    workspaces,
)
from scheduling.transforms.export import c_header, execution_plan

# -- MobileNet generators -----------------------------------------------------------------------


def _macs(g):
    return sum(op.macs or 0 for op in g.ops.values())


def test_mobilenet_v1_matches_paper():
    g = mobilenet_v1()
    g.validate()
    # Howard et al. 2017 Table 1/2: 569 M mult-adds, 4.2 M parameters (BN excluded).
    assert abs(_macs(g) - 569e6) / 569e6 < 0.005
    params = sum(t.numel for t in g.tensors.values() if t.kind == "weight" and "_bn_" not in t.name)
    assert abs(params - 4.2e6) / 4.2e6 < 0.01
    assert g.tensors["pw13_y"].shape == (1, 1024, 7, 7)
    ops = [o.op_type for o in g.ops.values()]
    assert ops.count("BatchNormalization") == 27 and ops.count("Relu") == 27
    # alpha 0.25 at 128 px: the paper's 14 M mult-adds
    assert abs(_macs(mobilenet_v1(0.25, 128)) - 14e6) / 14e6 < 0.05


def test_mobilenet_v2_matches_paper():
    g = mobilenet_v2(dtype="float32")
    g.validate()
    assert abs(_macs(g) - 300e6) / 300e6 < 0.01  # Sandler et al. 2018: 300 M
    assert sum(o.op_type == "Clip" for o in g.ops.values()) == 35
    assert g.tensors["b17_project_bn_y"].shape == (1, 320, 7, 7)
    assert g.tensors["conv1_y"].nbytes == 32 * 112 * 112 * 4  # float32


def test_mobilenet_first_layer_is_seed003_case():
    g = mobilenet_v1(blocks=0)
    assert [o.op_type for o in g.ops.values()] == ["Conv", "BatchNormalization", "Relu"]
    assert g.tensors["conv1_y"].nbytes == 401408
    assert g.ops["conv1"].macs == 32 * 112 * 112 * 27
    with pytest.raises(Exception, match="alpha"):
        mobilenet_v1(alpha=0)


# -- alias groups in the interval model ----------------------------------------------------------


def _alias_problem(alignment=1):
    bufs = [
        Buffer("a", 0, 2, 64),
        Buffer("b", 1, 3, 64),  # in place over a
        Buffer("s0", 2, 4, 32),  # concat slices
        Buffer("s1", 3, 5, 32),
        Buffer("cat", 4, 6, 64),
        Buffer("d", 0, 6, 16),
    ]
    al = {"b": ("a", 0), "s0": ("cat", 0), "s1": ("cat", 32)}
    return Problem(bufs, alignment=alignment, name="alias", aliases=al)


def test_collapse_and_lower_bound_hand_checked():
    p = _alias_problem()
    c, group, delta = p.collapse()
    assert [(b.id, b.start, b.end, b.size) for b in c.buffers] == [
        ("a", 0, 3, 64), ("cat", 2, 6, 64), ("d", 0, 6, 16)]
    assert group.tolist() == [0, 0, 1, 1, 1, 2] and delta.tolist() == [0, 0, 0, 32, 0, 0]
    # groups A [0,3) and C [2,6) overlap at step 2: 64 + 64 + 16
    assert lower_bound(p) == 144
    # live bytes per step with groups: 80 (A + d), 80, 144, 80, 80, 80; without aliases step 1
    # holds a + b + d = 144 and step 3 s0 + s1 + d = 80
    times, live = live_profile(p)
    assert times.tolist() == [0, 2, 3, 6] and live.tolist() == [80, 144, 80, 0]
    assert naive_arena(p) == 144 and naive_arena(Problem(p.buffers)) == 272


EXACT = {"cpsat", "ilp_blocks", "milp_offsets", "exact_search", "minimize"}


@pytest.mark.parametrize("name", list(PLANNERS))
def test_every_planner_honours_alias_groups(name):
    p = _alias_problem()
    params = {"time_limit": 5.0} if "time_limit" in PLANNERS[name]._param_names() else {}
    if name == "exact_search":
        p = p.with_capacity(lower_bound(p))
    pl = plan(p, name, **params)
    off = pl.as_dict()
    assert off["b"] == off["a"] and off["s0"] == off["cat"] and off["s1"] == off["cat"] + 32
    check_plan(p, pl.offsets)
    assert pl.arena_size >= 144
    if name in EXACT:
        assert pl.arena_size == 144


def test_validator_rejects_misplaced_child_and_cross_group_overlap():
    p = _alias_problem()
    # a/b at 0, cat at 64 (slices at 64 and 96), d at 128: valid
    good = np.array([0, 0, 64, 96, 64, 128])
    check_plan(p, good)
    bad = good.copy()
    bad[3] = 100  # s1 not at cat + 32
    with pytest.raises(InvalidPlanError, match="s1"):
        check_plan(p, bad)
    clash = np.array([0, 0, 32, 64, 32, 128])  # group C overlaps group A at step 2
    with pytest.raises(InvalidPlanError, match="overlap"):
        check_plan(p, clash)


def test_alias_rules_raise_problem_errors():
    bufs = [Buffer("p", 0, 2, 64), Buffer("c", 1, 3, 32), Buffer("e", 0, 1, 8)]
    with pytest.raises(ProblemError, match="'c'.*inside parent"):
        Problem(bufs, aliases={"c": ("p", 40)})
    with pytest.raises(ProblemError, match="not a buffer"):
        Problem(bufs, aliases={"c": ("zz", 0)})
    with pytest.raises(ProblemError, match="cycle"):
        Problem([Buffer("x", 0, 1, 8), Buffer("y", 0, 1, 8)],
                aliases={"x": ("y", 0), "y": ("x", 0)})
    with pytest.raises(ProblemError, match="alignment"):
        Problem([Buffer("p", 0, 2, 64), Buffer("c", 0, 1, 8, alignment=16)],
                aliases={"c": ("p", 8)})


@st.composite
def alias_problems(draw):
    n = draw(st.integers(2, 12))
    bufs, al = [], {}
    for i in range(n):
        s = draw(st.integers(0, 8))
        e = s + draw(st.integers(1, 5))
        bufs.append(Buffer(f"b{i}", s, e, draw(st.integers(0, 64))))
    for i in range(1, n):
        if draw(st.booleans()):
            j = draw(st.integers(0, i - 1))
            if bufs[i].size <= bufs[j].size:
                al[f"b{i}"] = (f"b{j}", draw(st.integers(0, bufs[j].size - bufs[i].size)))
    return Problem(bufs, aliases=al)


@settings(max_examples=examples(60), deadline=None)
@given(alias_problems(), st.sampled_from(["greedy_by_size", "first_fit", "best_fit", "naive",
                                           "interval_colouring", "freelist_bump"]))
def test_random_alias_problems_planned_validly(p, name):
    pl = plan(p, name)
    check_plan(p, pl.offsets)
    for c, (par, d) in p.aliases.items():
        assert pl.offset_of(c) == pl.offset_of(par) + d
    assert pl.arena_size >= lower_bound(p) or lower_bound(p) == 0


def test_no_alias_path_unchanged():
    p = Problem.from_closed([("a", 0, 1, 32), ("b", 1, 2, 16), ("c", 2, 3, 32)])
    assert not p.has_aliases and p.collapse()[0] is p
    assert plan(p, "naive").arena_size == 80


# -- passes ---------------------------------------------------------------------------------------


def _conv_nchw(x, w, b, stride=1, pad=1):
    """Reference NCHW convolution (batch 1, group 1) by explicit im2col."""
    c, h, wd = x.shape
    m, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.empty((c * k * k, ho * wo))
    r = 0
    for ci in range(c):
        for i in range(k):
            for j in range(k):
                cols[r] = xp[ci, i:i + stride * ho:stride, j:j + stride * wo:stride].ravel()
                r += 1
    return (w.reshape(m, -1) @ cols).reshape(m, ho, wo) + b[:, None, None]


def test_bn_folding_keeps_numerical_result():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9, 9))
    w = rng.standard_normal((8, 3, 3, 3))
    b = rng.standard_normal(8)
    gamma, beta, mean = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal(8)
    var = rng.uniform(0.1, 2.0, 8)
    eps = 1e-5
    y = _conv_nchw(x, w, b, stride=2)
    ref = (y - mean[:, None, None]) / np.sqrt(var[:, None, None] + eps) * gamma[:, None, None] \
        + beta[:, None, None]
    w2, b2 = fold_batchnorm(w, b, gamma, beta, mean, var, eps)
    assert w2.shape == w.shape and b2.shape == b.shape
    np.testing.assert_allclose(_conv_nchw(x, w2, b2, stride=2), ref, atol=1e-5, rtol=1e-5)


def test_seed003_intermediate_gone_after_fusion():
    g = mobilenet_v1_first_layer()
    assert peak_live_bytes(g) == 802816
    g2, log = fuse(g)
    assert list(g2.ops) == ["conv"]
    assert "conv_y" not in g2.tensors and "bn_y" not in g2.tensors
    assert not any(t.startswith("bn_") for t in g2.tensors)  # BN weights vanish
    assert g2.tensors["conv_w_bnfold"].nbytes == g.tensors["conv_w"].nbytes
    assert g2.tensors["conv_bias"].shape == (32,)
    assert transformed_peak(g2) == 401408
    assert log.stats["saved_bytes"] == 2 * 401408 * 2  # two intermediates, one step each
    assert g2.ops["conv"].attributes["kernel"] == "conv_bias_relu"


def _softmax_graph():
    g = Graph("sm")
    g.add_tensor("x", (1, 64), "float32", kind="input")
    g.add_tensor("w", (64, 64), "float32", kind="weight")
    g.add_tensor("bias", (64,), "float32", kind="weight")
    g.add_tensor("s", (64,), "float32", kind="weight")
    for t in ("mm", "lin", "p", "y"):
        g.add_tensor(t, (1, 64), "float32")
    g.add_op("matmul", "MatMul", ["x", "w"], ["mm"])
    g.add_op("addb", "Add", ["mm", "bias"], ["lin"])
    g.add_op("softmax", "Softmax", ["lin"], ["p"])
    g.add_op("scale", "Mul", ["p", "s"], ["y"])
    g.mark_output("y")
    return g


def test_fusion_stops_at_softmax_boundary():
    g2, log = fuse(_softmax_graph())
    g2.validate()
    assert [op.attributes.get("fused_ops") for op in g2.ops.values()] == [
        ["matmul", "addb"], ["softmax", "scale"]]
    refusals = [c for c in log.changes if c["action"] == "refuse"]
    assert refusals == [{"action": "refuse", "reason": "reduction_boundary",
                         "group": ["matmul", "addb"], "op": "softmax", "op_type": "Softmax",
                         "intermediate": "lin"}]


def test_register_pressure_rejects_with_small_vlen():
    # After BN folding: Conv int8 (int32 acc) + Relu: tiles of 16 elements need
    # ceil(16*32/vlen) + ceil(16*8/vlen) [results] + x, w (int8) + bias (int32).
    g = mobilenet_v1_first_layer()
    ok, log_ok = fuse(g, vlen=128)  # 4 + 1 + 1 + 1 + 4 = 11 <= 32
    assert len(ok.ops) == 1 and log_ok.stats["would_be_spills"] == 0
    small, log = fuse(g, vlen=16)  # 32 + 8 + 8 + 8 + 32 = 88 > 32
    assert list(small.ops) == ["conv", "relu"]
    ref = [c for c in log.changes if c["action"] == "refuse"]
    assert ref[0]["reason"] == "register_pressure" and ref[0]["registers"] == 88
    assert log.stats["would_be_spills"] == 56
    assert log.stats["saved_bytes"] == 2 * 401408  # only BN folding


def _residual_graph():
    g = Graph("res")
    g.add_tensor("x", (1, 8, 4, 4), "int8", kind="input")
    g.add_tensor("w", (8, 8, 1, 1), "int8", kind="weight")
    for t in ("a", "c", "s", "y"):
        g.add_tensor(t, (1, 8, 4, 4), "int8")
    g.add_op("stem", "Relu", ["x"], ["a"])
    g.add_op("conv", "Conv", ["a", "w"], ["c"], {"kernel_shape": [1, 1]})
    g.add_op("add", "Add", ["c", "a"], ["s"])
    g.add_op("relu", "Relu", ["s"], ["y"])
    g.mark_output("y")
    return g


def test_residual_add_fused_into_conv_output_stage():
    g2, log = fuse(_residual_graph())
    op = g2.ops["conv"]
    assert op.attributes["epilogue"] == ["Add", "Relu"] and op.inputs == ("a", "w")
    assert "c" not in g2.tensors and "s" not in g2.tensors
    assert log.stats["saved_bytes"] == 2 * 128 * 2


def test_inplace_only_when_input_dies():
    g = _residual_graph()
    g2, log = inplace(g)
    # add reads c (dies at add) -> s aliases c; relu reads s (dies) -> y is a graph output, but
    # y itself may alias s; stem's input x is a graph input -> no alias.
    assert graph_aliases(g2) == {"s": ("c", 0), "y": ("s", 0)}
    p = transformed_problem(g2)
    pl = plan(p, "greedy_by_size")
    assert pl.offset_of("y") == pl.offset_of("c")
    # if c is read again after the add, the add cannot overwrite it: it takes its other input
    # a, which dies there; the late Mul then writes into c (c dies at it)
    g.add_tensor("z", (1, 8, 4, 4), "int8")
    g.add_op("late", "Mul", ["c", "y"], ["z"])
    g.mark_output("z")
    g3, _ = inplace(g)
    assert graph_aliases(g3) == {"s": ("a", 0), "y": ("s", 0), "z": ("c", 0)}
    p3 = transformed_problem(g3)
    check_plan(p3, plan(p3, "best_fit").offsets)


def test_views_and_concat_in_place():
    g = Graph("cat")
    g.add_tensor("x", (1, 4, 2, 2), "int8", kind="input")
    for t, c in (("a", 4), ("b", 2), ("cat", 6)):
        g.add_tensor(t, (1, c, 2, 2), "int8")
    g.add_tensor("flat", (1, 24), "int8")
    g.add_op("pa", "Relu", ["x"], ["a"])
    g.add_op("pb", "Conv", ["x", "x"], ["b"])
    g.add_op("concat", "Concat", ["a", "b"], ["cat"], {"axis": 1})
    g.add_op("flatten", "Flatten", ["cat"], ["flat"])
    g.mark_output("flat")
    g2, _ = views(g)
    g3, log = fuse(g2)
    assert graph_aliases(g3) == {"flat": ("cat", 0), "a": ("cat", 0), "b": ("cat", 16)}
    assert g3.ops["concat"].attributes["kernel"] == "concat_in_place"
    p = transformed_problem(g3)
    assert lower_bound(p) == 24  # one 24-byte group instead of a + b + cat
    pl = plan(p, "first_fit")
    assert pl.offset_of("b") == pl.offset_of("cat") + 16 and pl.arena_size == 24


def test_simplify_rewrites():
    g = Graph("s")
    g.add_tensor("x", (2, 3), "float32", kind="input")
    g.add_tensor("one", (), "float32", kind="weight")
    for t, sh in (("a", (2, 3)), ("i", (2, 3)), ("t1", (3, 2)), ("t2", (2, 3)), ("m", (2, 3)),
                  ("y", (2, 3))):
        g.add_tensor(t, sh, "float32")
    g.add_op("relu", "Relu", ["x"], ["a"])
    g.add_op("id", "Identity", ["a"], ["i"])
    g.add_op("tr1", "Transpose", ["i"], ["t1"], {"perm": [1, 0]})
    g.add_op("tr2", "Transpose", ["t1"], ["t2"], {"perm": [1, 0]})
    g.add_op("mul1", "Mul", ["t2", "one"], ["m"])
    g.add_op("sig", "Sigmoid", ["m"], ["y"])
    g.mark_output("y")
    g2, log = simplify(g, constants={"one": 1.0})
    g2.validate()
    assert list(g2.ops) == ["relu", "sig"] and g2.ops["sig"].inputs == ("a",)
    assert {c["action"] for c in log.changes} == {"remove_identity", "cancel_transpose",
                                                 "remove_neutral"}
    g3, _ = simplify(g)  # without known constants the Mul stays
    assert "mul1" in g3.ops


def test_workspaces_per_operator_and_shared():
    g = mobilenet_v1_first_layer()
    assert workspace_bytes(g, g.ops["conv"]) == 112 * 112 * 3 * 3 * 3
    g2, log = workspaces(g)
    g2.validate()
    p = transformed_problem(g2)
    b = p.buffers[p.index["conv_ws"]]
    assert (b.start, b.end, b.size) == (0, 1, 338688)  # lives during its operator only
    g3, log3 = workspaces(mobilenet_v1(blocks=2), shared=True)
    g3.validate()
    ws = g3.tensors["workspace"]
    assert ws.nbytes == log3.stats["max_bytes"] == 338688


def test_quantize_sizes_and_casts_folded():
    g = mobilenet_v1(blocks=0, dtype="float32")
    g2, log = quantize(g)
    g2.validate()
    assert g2.tensors["conv1_y"].nbytes == 401408 and g2.tensors["conv1_y"].dtype == "int8"
    assert g2.tensors["conv1_relu_y"].dtype == "float32"  # the graph output stays float
    assert [o.op_type for o in g2.ops.values()][0] == "QuantizeLinear"
    assert [o.op_type for o in g2.ops.values()][-1] == "DequantizeLinear"
    g3, _ = fuse(g2)
    assert g3.ops["conv1"].attributes["epilogue"] == ["Relu", "DequantizeLinear"]


@pytest.mark.parametrize("model", ["seed000", "mobilenet_v2", "squeezenet", "shufflenet"])
def test_every_pass_output_is_valid(model):
    from experiments.workloads import load_graph

    g = load_graph(model) if model != "seed000" else seed000_graph()
    for name in PASSES:
        g2, log = PASSES[name](g)
        g2.validate()
        assert g2.is_topological()
        for op in g2.ops.values():  # consistent shapes: elementwise results keep the shape
            if op.op_type in ("Relu", "Clip") and "fused_ops" not in op.attributes:
                assert g2.tensors[op.inputs[0]].shape == g2.tensors[op.outputs[0]].shape
        transformed_problem(g2)  # alias annotations obey the Problem rules
    g_all, logs = run_pipeline(g, "simplify,views,fuse,inplace,workspaces")
    assert [lg.name for lg in logs] == ["simplify", "views", "fuse", "inplace", "workspaces"]
    assert transformed_peak(g_all) <= peak_live_bytes(g) + logs[-1].stats["max_bytes"]


def test_horizontal_fusion_peak_report_and_refusal():
    g = Graph("h")
    g.add_tensor("x", (1, 4, 8, 8), "int8", kind="input")
    g.add_tensor("x2", (1, 4, 8, 8), "int8")
    g.add_op("stem", "Relu", ["x"], ["x2"])
    for k in ("1", "2"):
        g.add_tensor(f"w{k}", (16, 4, 1, 1), "int8", kind="weight")
        g.add_tensor(f"c{k}", (1, 16, 8, 8), "int8")
        g.add_tensor(f"r{k}", (1, 1, 1, 1), "int8")
    g.add_op("conv1", "Conv", ["x2", "w1"], ["c1"], {"kernel_shape": [1, 1]})
    g.add_op("red1", "GlobalAveragePool", ["c1"], ["r1"])
    g.add_op("conv2", "Conv", ["x2", "w2"], ["c2"], {"kernel_shape": [1, 1]})
    g.add_op("red2", "GlobalAveragePool", ["c2"], ["r2"])
    g.mark_output("r1")
    g.mark_output("r2")
    base = transformed_peak(g)  # x2 + c2 + r1 at step 3 = 256 + 1024 + 1 ... max is 256+1024+1
    g2, log = fuse(g, horizontal=True, allow_peak_increase=True)
    g2.validate()
    rp = [c for c in log.changes if c["action"] == "raises_peak"]
    assert rp and rp[0]["peak_before"] == base == 1281
    assert rp[0]["peak_after"] == transformed_peak(g2) == 256 + 2048
    g3, log3 = fuse(g, horizontal=True)  # refused by default
    assert "conv1" in g3.ops and transformed_peak(g3) == base


# -- export ---------------------------------------------------------------------------------------


def test_export_json_tables():
    from experiments.cli.transforms import run

    g2, _ = run_pipeline(_residual_graph(), "fuse,inplace")
    p = transformed_problem(g2)
    pl = plan(p, "greedy_by_size")
    ep = execution_plan(g2, pl, pipeline="fuse,inplace")
    assert ep["arena_size"] == pl.arena_size
    rows = {b["tensor"]: b for b in ep["buffers"]}
    assert rows["y"]["alias_parent"] is None or rows["y"]["offset"] == pl.offset_of("y")
    assert [o["kernel"] for o in ep["operators"]] == ["relu", "conv_add_relu"]
    assert json.loads(json.dumps(ep)) == ep
    args = types.SimpleNamespace(model="mobilenet_v1_first_layer", pipeline="fuse",
                                 planner="greedy_by_size", alignment=1, unified=False,
                                 time_limit=1.0, format="json", prefix="memplan", output=None)
    assert run(args) == 0


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
def test_c_header_compiles_and_offsets_equal_plan(tmp_path):
    from experiments.workloads import load_graph

    g2, _ = run_pipeline(load_graph("squeezenet"), "simplify,views,fuse,inplace")
    p = transformed_problem(g2, alignment=16)
    pl = plan(p, "greedy_by_size")
    ep = execution_plan(g2, pl)
    (tmp_path / "plan.h").write_text(c_header(ep))
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "plan.h"\n'
        "int main(void) {\n"
        '  printf("%u\\n", (unsigned)MEMPLAN_ARENA_SIZE);\n'
        "  for (int i = 0; i < MEMPLAN_NUM_BUFFERS; i++)\n"
        '    printf("%s %u %u %d\\n", memplan_buffers[i].name, memplan_buffers[i].offset,\n'
        "           memplan_buffers[i].length, memplan_buffers[i].alias_parent);\n"
        '  printf("%s %d\\n", memplan_ops[0].kernel, MEMPLAN_NUM_OPS);\n'
        "  return 0;\n}\n"
    )
    exe = tmp_path / "a.out"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-o", str(exe), str(tmp_path / "main.c")],
                   check=True, capture_output=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    assert int(out[0]) == pl.arena_size
    got = {}
    for line in out[1:1 + p.n]:
        name, off, length, parent = line.split()
        got[name] = (int(off), int(length), int(parent))
    for k, b in enumerate(p.buffers):
        par = p.aliases.get(b.id)
        assert got[b.id] == (int(pl.offsets[k]), b.size, p.index[par[0]] if par else -1)
    assert out[1 + p.n].split()[1] == str(len(g2.ops))
