"""TFLite models with every subgraph, and the whole arena a TFLite Micro interpreter needs."""

from __future__ import annotations

import json

import pytest
from conftest import shared_case

from experiments.cli import main
from experiments.runtimes.tflm.writer import write_tflite
from experiments.workloads import tflite_model_files
from planners import plan

tflite = pytest.importorskip("tflite", reason="the optional 'tflite' package is not installed")

from experiments.runtimes.tflm.oracle import (  # noqa: E402
    runtime_arena,
    tflm_arena,
    tflm_arena_model,
    tflm_available,
    tflm_min_arena,
)
from scheduling.tflite_import import tflite_problem  # noqa: E402

WAKEWORD = {k: v for k, v in tflite_model_files().items() if k.startswith("wakeword:")}
needs_wakeword = pytest.mark.skipif(len(WAKEWORD) != 4,
                                    reason="pymicro-wakeword (4 int8 TFLite Micro models) not installed")
needs_tflm = pytest.mark.skipif(not tflm_available()[0], reason="tflite-micro not installed")


# -- the arena: head + persistent tail -------------------------------------------------------------

def test_add_chain_head_and_runtime_arena_model():
    path = shared_case("add_chain.tflite")
    assert plan(tflite_problem(path), "greedy_by_size").arena_size == 512
    m = tflm_arena_model(path)
    assert (m.head, m.tail, m.runtime_arena) == (512, 1152, 1664)
    # the tail's parts as TFLite Micro's recording allocator reports them
    assert m.parts["TfLiteEvalTensor data"] == 4 * 24
    assert m.parts["NodeAndRegistration struct"] == 3 * 64
    assert m.parts["Persistent TfLiteTensor data"] == 2 * 64
    assert m.parts["Persistent buffer data"] + m.parts["TfLiteTensor* arrays"] == 224
    assert m.planning_need < m.runtime_arena  # the final arena is the larger moment here


def test_cli_plan_reports_head_and_runtime_arena(capsys):
    path = str(shared_case("add_chain.tflite"))
    assert main(["plan", path, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["arena"] == 512 and rec["tflm_head"] == 512
    assert rec["runtime_arena"] == 1664 and rec["runtime_arena_source"] == "model"
    assert rec["runtime_arena_model"] == 1664


@needs_tflm
def test_add_chain_bisected_minimum_equals_the_model():
    path = shared_case("add_chain.tflite")
    assert tflm_min_arena(path) == 1664
    a = tflm_arena(path)
    assert (a.head, a.tail, a.total) == (512, 1152, 1664)


@needs_wakeword
def test_wakeword_models_are_not_modelled_and_say_why():
    """Known difference: the wakeword kernels (CONV_2D, ..., VAR_HANDLE) and resource variables
    have no verified persistent-allocation model, so the model gives no number for them."""
    for name, path in WAKEWORD.items():
        m = tflm_arena_model(path)
        assert m.tail is None and m.runtime_arena is None, name
        assert "CONV_2D" in m.reason and "resource variables" in m.reason
        assert "CONV_2D" in m.unknown_kernels and "ADD" not in m.unknown_kernels
        info = runtime_arena(path, measure=False)
        assert info["runtime_arena"] is None and info["runtime_arena_source"] is None
        assert info["runtime_arena_note"] == m.reason


@needs_wakeword
@needs_tflm
def test_wakeword_structure_and_planning_moment_equal_the_interpreter():
    """The modelled structure (eval tensors, node structs, input/output tensor structs) equals the
    recording allocator's counts, and the model of the two moments (final arena, plan commit)
    with the measured tail brackets the bisected minimum within 16 bytes (the two paddings, and
    an arena end that need not be 16-aligned) on all four models
    (20720, 20320, 21728, 27872 bytes, three of them above the total the interpreter reports for a
    large arena). Known difference: the full model gives no number for these models (their
    kernels are not modelled), so the CLI reports the bisected value."""
    import subprocess
    import sys

    from experiments.bench.tflm import bench_row
    from experiments.runtimes.tflm.oracle import _SCRIPT, parse_breakdown

    above = 0
    for name, path in WAKEWORD.items():
        r = subprocess.run([sys.executable, "-c", _SCRIPT, str(path), str(16 << 20)],
                           capture_output=True, text=True, timeout=120)
        parts = parse_breakdown(r.stdout + r.stderr)
        m = tflm_arena_model(path)
        for kind in ("TfLiteEvalTensor data", "NodeAndRegistration struct",
                     "Persistent TfLiteTensor data", "Persistent TfLiteTensor quantization data"):
            assert m.parts[kind] == parts[kind][0], (name, kind)
        row = bench_row(name, path)
        assert row["head_model"] == row["head"], name
        assert row["check_holds"] and row["check_high"] - row["check_low"] <= 16, name
        above += row["bisected_min"] > row["total"]
        info = runtime_arena(path)
        assert info["runtime_arena_source"] == "measured"
        assert info["runtime_arena"] == row["bisected_min"] and info["runtime_arena_model"] is None
    assert above == 3


# -- every subgraph: IF / WHILE / CALL_ONCE, built with the `tflite` package's flatbuffer schema ---

F32, BOOL = tflite.TensorType.FLOAT32, tflite.TensorType.BOOL
V = [1, 64]  # 256 bytes of float32
# callee A: a -> b -> o; a+b live at step 0, b+o at step 1: need 512
CALLEE_A = {"tensors": [("a", V, F32), ("b", V, F32), ("o", V, F32)], "inputs": [0], "outputs": [2],
            "ops": [("ADD", [0, 0], [1], None), ("ADD", [1, 1], [2], None)]}
# callee B: a, b1 = a+a, b2 = b1+a, o = b2+b1; a, b1, b2 live at step 1: need 768
CALLEE_B = {"tensors": [("a", V, F32), ("b1", V, F32), ("b2", V, F32), ("o", V, F32)],
            "inputs": [0], "outputs": [3],
            "ops": [("ADD", [0, 0], [1], None), ("ADD", [1, 0], [2], None),
                    ("ADD", [2, 1], [3], None)]}


def _if_model(tmp_path):
    main_sg = {"tensors": [("c", [1], BOOL), ("x", V, F32), ("y", V, F32)], "inputs": [0, 1],
               "outputs": [2],
               "ops": [("IF", [0, 1], [2], ("IfOptions", {"ThenSubgraphIndex": 1,
                                                           "ElseSubgraphIndex": 2}))]}
    return write_tflite(tmp_path / "if.tflite", [main_sg, CALLEE_A, CALLEE_B])


def test_if_branches_are_a_workspace_of_the_if_step(tmp_path):
    from planners import lower_bound
    from scheduling.tflite_import import load_tflite

    path = _if_model(tmp_path)
    m = load_tflite(path)
    assert m.subgraphs == 3
    assert m.workspaces == {"0:IF": (768, (1, 2))}  # max(512, 768): one branch runs
    ws = m.graph.tensors["0:IF:subgraphs"]
    assert ws.nbytes == 768 and ws.producer == "0:IF" and not ws.consumers
    # one step: c (1 byte) + x + y (256 each) + the branch workspace
    p = tflite_problem(path)
    assert lower_bound(p) == 1 + 256 + 256 + 768
    # TFLite Micro's head for this model: each buffer rounded to 16 bytes, the same 1296
    assert tflm_arena_model(path).head == 16 + 256 + 256 + 768


def test_control_flow_arena_model_without_the_interpreter(tmp_path):
    from experiments.bench.tflm import control_flow_models

    models = control_flow_models(tmp_path)
    m = tflm_arena_model(_if_model(tmp_path))
    # three subgraphs: 3 x 24 SubgraphAllocations, 10 eval tensors, 6 nodes
    assert m.parts["TfLiteEvalTensor data"] == 10 * 24
    assert m.parts["NodeAndRegistration struct"] == 6 * 64
    assert (m.head, m.tail, m.runtime_arena) == (1296, 1760, 3056)
    m = tflm_arena_model(models["built:call_once"])
    assert (m.head, m.tail, m.runtime_arena) == (768, 1280, 2048)
    info = runtime_arena(models["built:call_once"], measure=False)
    assert info["runtime_arena"] == 2048 and info["runtime_arena_source"] == "model"
    # a subgraph that nothing calls: TFLM still plans its four tensors, never marked by
    # MarkAllocationLifetimes (lifetime [-1, -1]: live together, apart from everything else), so
    # the head is their 1024 bytes (the interpreter agrees: tests/test_tflm_cases.py)
    lonely = write_tflite(tmp_path / "lonely.tflite", [CALLEE_A, CALLEE_B])
    m = tflm_arena_model(lonely)
    assert (m.head, m.tail, m.runtime_arena, m.reason) == (1024, 1520, 2544, "")


@needs_tflm
def test_control_flow_models_against_tflite_micro(tmp_path):
    """TFLM plans the branches inlined into the IF step; its head equals our workspace model
    (1296), and the whole modelled arena equals the bisected minimum (3056 for IF, 2048 for
    CALL_ONCE)."""
    from experiments.bench.tflm import control_flow_models

    for name, path in control_flow_models(tmp_path).items():
        a = tflm_arena(path)
        m = tflm_arena_model(path)
        assert (m.head, m.tail) == (a.head, a.tail), name
        assert m.runtime_arena == tflm_min_arena(path) == {"built:if": 3056,
                                                            "built:call_once": 2048}[name]


def test_while_and_call_once_workspaces(tmp_path):
    from scheduling.tflite_import import load_tflite

    main_sg = {"tensors": [("x", V, F32), ("y", V, F32)], "inputs": [0], "outputs": [1],
               "ops": [("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 1})),
                       ("WHILE", [0], [1], ("WhileOptions", {"CondSubgraphIndex": 1,
                                                             "BodySubgraphIndex": 2}))]}
    path = write_tflite(tmp_path / "while.tflite", [main_sg, CALLEE_A, CALLEE_B])
    m = load_tflite(path)
    # WHILE: cond and body live at once (body outputs are copied into cond inputs): 512 + 768
    assert m.workspaces == {"0:CALL_ONCE": (512, (1,)), "1:WHILE": (1280, (1, 2))}
    assert m.folded_ops == {}  # a CALL_ONCE with a workspace is scheduled, not dropped
    assert m.graph.tensors["0:CALL_ONCE:subgraphs"].nbytes == 512
    assert list(m.graph.ops) == ["0:CALL_ONCE", "1:WHILE"]


def test_nested_calls_and_bad_subgraph_references(tmp_path):
    from scheduling.tflite_import import TfliteImportError, load_tflite

    # subgraph 1 runs subgraph 2 by CALL_ONCE: its need is its own arena plus that workspace
    nested = {"tensors": [("a", V, F32), ("o", V, F32)], "inputs": [0], "outputs": [1],
              "ops": [("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 2})),
                      ("ADD", [0, 0], [1], None)]}
    main_sg = {"tensors": [("x", V, F32), ("y", V, F32)], "inputs": [0], "outputs": [1],
               "ops": [("WHILE", [0], [1], ("WhileOptions", {"CondSubgraphIndex": 1,
                                                             "BodySubgraphIndex": 1}))]}
    m = load_tflite(write_tflite(tmp_path / "nested.tflite", [main_sg, nested, CALLEE_B]))
    # nested: step 0 a (256) + workspace 768, step 1 a + o: greedy arena 1024; cond + body = 2048
    assert m.workspaces == {"0:WHILE": (2048, (1, 1))}

    loop = dict(nested, ops=[("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 1}))])
    with pytest.raises(TfliteImportError, match=r"runs subgraph 1 recursively \(call chain 0 -> 1 -> 1\)"):
        load_tflite(write_tflite(tmp_path / "rec.tflite", [dict(main_sg, ops=[
            ("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 1}))]), loop]))
    with pytest.raises(TfliteImportError, match=r"runs subgraph 5, but the model has 1 subgraphs"):
        load_tflite(write_tflite(tmp_path / "oor.tflite", [dict(main_sg, ops=[
            ("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 5}))])]))


def test_cli_error_on_recursive_subgraph(tmp_path, capsys):
    main_sg = {"tensors": [("x", V, F32)], "inputs": [0], "outputs": [0],
               "ops": [("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": 0}))]}
    path = write_tflite(tmp_path / "self.tflite", [main_sg])
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memplan: error:") and "recursively" in err and len(err.splitlines()) == 1
