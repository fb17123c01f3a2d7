"""Models the TFLite Micro interpreter refuses at every arena size get no ``runtime_arena``, and
the refusal quotes the interpreter's own reason (issue #33, item 4).

Each refused model is built here and run through the ``tflite-micro`` interpreter itself: its
reason must appear in memplan's one ``runtime_refusal`` line, and memplan's model alone (no
interpreter, ``measure=False``) must give no number (it says "refuses" where TFLM's checks are
transcribed: :func:`experiments.runtimes.tflm.oracle.tflm_refusal`). The models just inside the
same limits (10 inputs, a zero-size dimension TFLM lets through) keep their modelled numbers, equal
to the interpreter's bisected minimum.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import examples, shared_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cli import main
from experiments.runtimes.tflm.writer import write_tflite

tflite = pytest.importorskip("tflite", reason="the optional 'tflite' package is not installed")

from experiments.runtimes.tflm.oracle import (  # noqa: E402
    TflmRefused,
    TflmUnavailable,
    arena_too_small,
    runtime_arena,
    runtime_reason,
    tflm_arena,
    tflm_arena_model,
    tflm_available,
    tflm_min_arena,
)

needs_tflm = pytest.mark.skipif(not tflm_available()[0], reason="tflite-micro not installed")
F32, F16, I8, INT32, BOOL = (tflite.TensorType.FLOAT32, tflite.TensorType.FLOAT16,
                             tflite.TensorType.INT8, tflite.TensorType.INT32,
                             tflite.TensorType.BOOL)
Q1, Q2 = {"quant": ([0.1], [0])}, {"quant": ([0.2], [0])}


def _digits(text):
    return re.sub(r"-?\d+", "N", text)


def _one(tensors, inputs, outputs, ops):
    return [{"tensors": tensors, "inputs": inputs, "outputs": outputs, "ops": ops}]


def _concat(n, shape=(1, 2), ttype=F32, extra=None, out_extra=None, opts=None):
    shape = list(shape)
    out = shape[:-1] + [shape[-1] * n]
    ins = [(f"x{i}", shape, ttype, (extra or {}) if i else (out_extra or extra or {}))
           for i in range(n)]
    return _one(ins + [("y", out, ttype, out_extra or extra or {})], list(range(n)), [n],
                [("CONCATENATION", list(range(n)), [n],
                  ("ConcatenationOptions", {"Axis": len(shape) - 1, **(opts or {})}))])


def _if_with_empty_branch_tensor():
    """An IF whose then-branch has an operator writing a [2, 0] tensor (subgraph 1)."""
    br = {"tensors": [("x", [1, 2], F32), ("e", [2, 0], F32), ("f", [2, 0], F32),
                      ("o", [1, 2], F32)], "inputs": [0], "outputs": [3],
          "ops": [("RELU", [1], [2], None), ("ADD", [0, 0], [3], ("AddOptions", {}))]}
    ok = {"tensors": [("x", [1, 2], F32), ("o", [1, 2], F32)], "inputs": [0], "outputs": [1],
          "ops": [("ADD", [0, 0], [1], ("AddOptions", {}))]}
    main_sg = {"tensors": [("c", [1], BOOL), ("x", [1, 2], F32), ("y", [1, 2], F32)],
               "inputs": [0, 1], "outputs": [2],
               "ops": [("IF", [0, 1], [2], ("IfOptions", {"ThenSubgraphIndex": 1,
                                                           "ElseSubgraphIndex": 2}))]}
    return [main_sg, br, ok]


def _if(cond=((1,), BOOL), then_inputs=1):
    """IF on a [1, 2] operand whose branches ADD it to itself; the condition's shape and type
    and the then-branch's number of inputs as given."""
    def branch(n_in):
        return {"tensors": [(f"i{k}", [1, 2], F32) for k in range(n_in)] + [("o", [1, 2], F32)],
                "inputs": list(range(n_in)), "outputs": [n_in],
                "ops": [("ADD", [0, 0], [n_in], ("AddOptions", {}))]}
    main_sg = {"tensors": [("c", list(cond[0]), cond[1]), ("x", [1, 2], F32), ("y", [1, 2], F32)],
               "inputs": [0, 1], "outputs": [2],
               "ops": [("IF", [0, 1], [2], ("IfOptions", {"ThenSubgraphIndex": 1,
                                                           "ElseSubgraphIndex": 2}))]}
    return [main_sg, branch(then_inputs), branch(1)]


#: name -> (subgraphs, a fragment of the interpreter's own message, a fragment of memplan's
#: model's refusal or None where the kernel is not modelled and the interpreter alone decides)
REFUSED = {
    "concat11": (_concat(11), "num_inputs <= kMaxInputNum was not true",
                 "num_inputs <= kMaxInputNum fails (11 inputs, kMaxInputNum = 10)"),
    "concat_rank7": (_concat(2, (1, 1, 1, 1, 1, 1, 2)),
                     "does not currently support num dimensions > 6", "has 7 dimensions"),
    "concat_relu": (_concat(2, opts={"FusedActivationFunction": 1}),
                    "params->activation != kTfLiteActNone", "fused activation 1"),
    "concat_requant": (_concat(2, ttype=I8, extra=Q2, out_extra=Q1),
                       "static_cast<double>(input->params.scale) != static_cast<double>",
                       "scale and zero point must equal the output's"),
    "add_zero_dim": (_one([("x", [2, 0], F32), ("y", [2, 0], F32), ("z", [2, 0], F32)], [0, 1],
                          [2], [("ADD", [0, 1], [2], ("AddOptions", {}))]),
                     "Op#0 (ADD) of subgraph 0 has dynamic tensor #2 | Dynamic tensors are not "
                     "supported", "output tensor 2 has shape [2, 0], a dynamic tensor"),
    "add_negative_dim": (_one([("x", [2, 3], F32), ("y", [2, 3], F32), ("z", [-1, 3], F32)],
                              [0, 1], [2], [("ADD", [0, 1], [2], ("AddOptions", {}))]),
                         "Op#0 (ADD) of subgraph 0 has dynamic tensor #2",
                         "output tensor 2 has shape [-1, 3]"),
    "reshape_zero_dim": (_one([("x", [2, 0], F32), ("z", [0, 2], F32)], [0], [1],
                              [("RESHAPE", [0], [1], ("ReshapeOptions", {"NewShape": [0, 2]}))]),
                         "Op#0 (RESHAPE) of subgraph 0 has dynamic tensor #1",
                         "output tensor 1 has shape [0, 2]"),
    "reshape_count": (_one([("x", [2, 3], F32), ("z", [4, 2], F32)], [0], [1],
                           [("RESHAPE", [0], [1], ("ReshapeOptions", {"NewShape": [4, 2]}))]),
                      "num_input_elements != num_output_elements (6 != 8)",
                      "num_input_elements == num_output_elements fails (6 != 8)"),
    "if_branch_zero_dim": (_if_with_empty_branch_tensor(),
                           "Op#0 (RELU) of subgraph 1 has dynamic tensor #2",
                           "operator 0 (RELU) of subgraph 1: output tensor 2 has shape [2, 0]"),
    "dynamic_before_concat11": (
        _one([("a", [2, 0], F32), ("b", [2, 0], F32)] + [(f"x{i}", [1, 2], F32)
                                                       for i in range(11)]
             + [("y", [1, 22], F32)], [0, *range(2, 13)], [1, 13],
             [("RELU", [0], [1], None), ("CONCATENATION", list(range(2, 13)), [13],
                                         ("ConcatenationOptions", {"Axis": 1}))]),
        "Op#0 (RELU) of subgraph 0 has dynamic tensor #1", "operator 0 (RELU) of subgraph 0"),
    "add_int8_unquantized": (_one([("x", [2, 3], I8), ("y", [2, 3], I8), ("z", [2, 3], I8)],
                                  [0, 1], [2], [("ADD", [0, 1], [2], ("AddOptions", {}))]),
                             "add_common.cc:41 output->quantization.type != "
                             "kTfLiteNoQuantization was not true.", None),
    "add_int32_quantized": (_one([("x", [2, 3], INT32, Q1), ("y", [2, 3], INT32, Q1),
                                  ("z", [2, 3], INT32, Q1)], [0, 1], [2],
                                 [("ADD", [0, 1], [2], ("AddOptions", {}))]),
                            "input1->quantization.type != kTfLiteNoQuantization (1 != 0)", None),
    "if_float_condition": (_if(cond=((1,), F32)), "if.cc:58 cond->type != kTfLiteBool (1 != 6)",
                           "cond->type == kTfLiteBool fails (condition FLOAT32)"),
    "if_two_element_condition": (_if(cond=((2,), BOOL)), "NumElements(cond) != 1 (2 != 1)",
                                 "NumElements(cond) == 1 fails (shape [2])"),
    "if_then_branch_arity": (_if(then_inputs=2),
                             "num_inputs != graph_info.NumSubgraphInputs(op_data->then_subgraph_"
                             "index) (1 != 2)", "the then-branch takes 2 and gives 1"),
    "mul_three_inputs": (_one([("x", [2], F32), ("y", [2], F32), ("w", [2], F32),
                               ("z", [2], F32)], [0, 1, 2], [3],
                              [("MUL", [0, 1, 2], [3], ("MulOptions", {}))]),
                         "NumInputs(node) != 2 (3 != 2)", None),
    "custom_unregistered": (_one([("x", [4], F32), ("y", [4], F32)], [0], [1],
                                 [("CUSTOM:MyOp", [0], [1], None)]),
                            "Failed to get registration from op code CUSTOM", None),
    "dequantize_float16": (_one([("x", [4], F16), ("y", [4], F32)], [0], [1],
                                [("DEQUANTIZE", [0], [1], None)]),
                           "dequantize_common.cc:", None),
}

#: Just inside the limits: the interpreter runs these, and the model's numbers are its own.
ACCEPTED = {
    "concat10": _concat(10),
    "unused_zero_dim_input": _one([("x", [2, 3], F32), ("y", [2, 3], F32), ("z", [2, 3], F32),
                                   ("u", [0, 3], F32)], [0, 1, 3], [2],
                                  [("ADD", [0, 1], [2], ("AddOptions", {}))]),
    "concat_empty_input": _one([("x", [1, 0], F32), ("y", [1, 2], F32), ("z", [1, 2], F32)],
                               [0, 1], [2], [("CONCATENATION", [0, 1], [2],
                                              ("ConcatenationOptions", {"Axis": 1}))]),
    "legacy_scalar_shape": _one([("x", [0], F32), ("y", [0], F32), ("z", [0], F32)], [0, 1],
                                [2], [("ADD", [0, 1], [2], ("AddOptions", {}))]),
    "concat_int8_same_scale": _concat(3, ttype=I8, extra=Q1),
}


@needs_tflm
def test_shared_case_concat11_quotes_the_interpreter(capsys):
    """../shared/cases/k4_concat11_f32_neg.tflite: was runtime_arena 3552 with source model;
    now no runtime number and one line with the interpreter's reason (memplan's own plan of
    the graph is still printed, exit 0)."""
    path = shared_case("k4_concat11_f32_neg.tflite")
    assert main(["plan", str(path), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert not {"runtime_arena", "runtime_arena_model", "tflm_head"} & set(rec)
    line = rec["runtime_refusal"]
    assert line.startswith("TFLite Micro refuses the model at every arena_size: ")
    assert "kernels/concatenation.cc:" in line
    assert "num_inputs <= kMaxInputNum was not true." in line
    assert line.endswith("Node CONCATENATION (number 0) failed to prepare with status 1")
    assert "\n" not in line and rec["arena"] > 0 and rec["valid"] is True
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in out if "runtime" in ln or "tflm" in ln] == ["runtime_refusal"]


def test_shared_case_concat11_refused_by_the_model_alone():
    """Without the interpreter, the transcribed check says why (concatenation.cc kMaxInputNum)
    and says that the interpreter was not run; the arena model gives no number."""
    path = shared_case("k4_concat11_f32_neg.tflite")
    info = runtime_arena(path, measure=False)
    assert list(info) == ["runtime_refusal"]
    assert "the interpreter not run" in info["runtime_refusal"]
    assert "CONCATENATION" in info["runtime_refusal"] and "kMaxInputNum = 10" in info["runtime_refusal"]
    m = tflm_arena_model(path)
    assert (m.head, m.tail, m.runtime_arena) == (None, None, None) and m.refusal


@needs_tflm
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_models_get_no_number_and_the_interpreters_reason(tmp_path, name):
    subs, said, modelled = REFUSED[name]
    path = write_tflite(tmp_path / f"{name}.tflite", subs)
    with pytest.raises(TflmRefused) as exc:  # the interpreter itself, at 16 MiB
        tflm_min_arena(path)
    assert said in exc.value.reason and exc.value.stage == "build"
    info = runtime_arena(path)
    assert list(info) == ["runtime_refusal"]
    if name == "custom_unregistered":  # the interpreter names no custom code: memplan adds it
        exc.value.reason += " (the model's custom operators: MyOp)"
    # integers aside: concatenation.cc prints its failed double comparison with %d (garbage
    # that differs between two runs of the interpreter)
    assert _digits(info["runtime_refusal"]) == _digits(
        "TFLite Micro refuses the model at every arena_size: " + exc.value.reason)
    alone = runtime_arena(path, measure=False)
    assert alone.get("runtime_arena") is None
    if modelled is None:  # not a modelled kernel: no number, and no claim either way
        assert "runtime_refusal" not in alone and alone["runtime_arena_source"] is None
    else:
        assert modelled in alone["runtime_refusal"], alone


@needs_tflm
@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_models_inside_the_limits_keep_the_interpreters_numbers(tmp_path, name):
    path = write_tflite(tmp_path / f"{name}.tflite", ACCEPTED[name])
    info = runtime_arena(path, measure=False)
    assert info["runtime_arena_source"] == "model", info
    assert info["runtime_arena"] == tflm_min_arena(path)
    assert info["tflm_head"] == tflm_arena(path).head


def test_runtime_reason_and_arena_too_small():
    """Hand-checked vectors: distinct non-empty lines in order, joined in one line; the
    exception's text only when nothing was printed; 'missing: N' marks an arena too small."""
    printed = ("Failed to allocate tail memory. Requested: 60, available 8, missing: 52\n\n"
               "Failed to allocate tail memory. Requested: 60, available 8, missing: 52\n"
               "Node ADD (number 0) failed to prepare with status 1\n")
    assert runtime_reason(printed, "TFLM failed to allocate tensors") == (
        "Failed to allocate tail memory. Requested: 60, available 8, missing: 52 | "
        "Node ADD (number 0) failed to prepare with status 1")
    assert runtime_reason(" \n", "TFLM failed to allocate tensors") == (
        "TFLM failed to allocate tensors")
    assert arena_too_small(printed)
    assert arena_too_small("Failed to resize buffer. Requested: 512, available 496, missing: 16")
    assert not arena_too_small("Op#0 (ADD) of subgraph 0 has dynamic tensor #2")


@needs_tflm
def test_arena_too_small_is_not_a_refusal():
    """An arena too small for add_chain (1664 bytes needed) is no refusal of the model: the
    error says the arena is too small and quotes the allocator."""
    from experiments.runtimes.tflm import probe

    path = shared_case("add_chain.tflite")
    for size in (1000, 1500):
        for call in (tflm_arena, probe.report):
            with pytest.raises(TflmUnavailable, match="too small") as exc:
                call(path, arena_size=size)
            assert not isinstance(exc.value, TflmRefused) and "missing: " in str(exc.value)
    assert probe.report(path, arena_size=1664).total > 0


@needs_tflm
def test_every_path_to_the_interpreter_quotes_it(tmp_path):
    """The persistent probe worker, the child process of tflm_arena and run_model's child
    process give the same reason, and memplan's one-line error carries it."""
    from experiments.runtimes.tflm import probe
    from experiments.runtimes.tflm.offline import run_model

    subs, said, _ = REFUSED["custom_unregistered"]
    path = write_tflite(tmp_path / "custom.tflite", subs)
    reasons = []
    for call in (lambda: probe.report(path), lambda: tflm_arena(path),
                 lambda: run_model(path, invocations=1)):
        with pytest.raises(TflmRefused) as exc:
            call()
        assert said in str(exc.value) and "\n" not in str(exc.value)
        reasons.append(exc.value.reason)
    assert reasons == ["Failed to get registration from op code CUSTOM"] * 3
    r = probe._worker().probe(str(path), 1 << 20)
    assert r["ok"] is False and r["stage"] == "build" and said in r["log"]
    assert r["error"] == "TFLM failed to allocate tensors"  # what memplan used to report alone


@needs_tflm
def test_a_crash_is_no_number_and_says_so(tmp_path):
    """ADD of two [2, 3] tensors into a [3, 3] output: Prepare accepts it, Invoke aborts (the
    reference kernel's TFLITE_CHECK). The old model claimed 1128 bytes; the shapes are outside
    its verified domain now, and the interpreter's crash is reported, not a number."""
    path = write_tflite(tmp_path / "add_shape.tflite", _one(
        [("x", [2, 3], F32), ("y", [2, 3], F32), ("z", [3, 3], F32)], [0, 1], [2],
        [("ADD", [0, 1], [2], ("AddOptions", {}))]))
    alone = runtime_arena(path, measure=False)
    assert alone["runtime_arena"] is None
    assert "ADD (shapes [[2, 3], [2, 3]] -> [[3, 3]])" in alone["runtime_arena_note"]
    info = runtime_arena(path)
    assert info == {"runtime_refusal": "TFLite Micro crashes on the model instead of running "
                                       "it: the interpreter crashed (worker exited with -6)"}


@needs_tflm
def test_an_unverified_arity_is_measured(tmp_path):
    """int8 ADD with a third input: the interpreter runs it (AddPrepare reads two) and the old
    model claimed 1296 bytes for it, 80 more than the interpreter needs; an arity outside the
    verified domain is measured now."""
    t = [(n, [2, 3], I8, Q1) for n in ("x", "y", "w", "z")]
    path = write_tflite(tmp_path / "add3.tflite", _one(t, [0, 1, 2], [3], [
        ("ADD", [0, 1, 2], [3], ("AddOptions", {}))]))
    alone = runtime_arena(path, measure=False)
    assert alone["runtime_arena"] is None and "ADD (3 inputs, 1 outputs)" in alone[
        "runtime_arena_note"]
    info = runtime_arena(path)
    assert info["runtime_arena_source"] == "measured"
    assert info["runtime_arena"] == tflm_min_arena(path) == 1216


_SHAPE = st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=4)
_UNARY = ("RELU", "RELU6", "TANH", "LOGISTIC", "ABS")
_BINARY = ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "LESS")


@st.composite
def _single_op(draw):
    """A single-operator model of a modelled kernel with drawn shapes: zero-size and broadcast
    dimensions, consistent or not with the kernel's output, CONCATENATION of 2-12 inputs,
    RESHAPE to any shape; float32 or int8."""
    op = draw(st.sampled_from(_UNARY + _BINARY + ("CONCATENATION", "RESHAPE")))
    int8 = draw(st.booleans())
    t, q = (I8, {"quant": ([0.05], [0])}) if int8 else (F32, {})
    a = draw(_SHAPE)
    n = 1 if op in _UNARY or op == "RESHAPE" else draw(st.integers(2, 12)) \
        if op == "CONCATENATION" else 2
    ins = [a] + [draw(st.sampled_from([a, draw(_SHAPE)])) for _ in range(n - 1)]
    opts = {"ADD": ("AddOptions", {}), "SUB": ("SubOptions", {}), "MUL": ("MulOptions", {})}.get(op)
    if op == "CONCATENATION":
        axis = draw(st.integers(0, max(len(a) - 1, 0)))
        out = list(a) or [n]
        if a:
            out[axis] = sum(x[axis] if len(x) == len(a) else 0 for x in ins)
        opts = ("ConcatenationOptions", {"Axis": axis})
    elif op == "RESHAPE":
        out = draw(_SHAPE)
        opts = ("ReshapeOptions", {"NewShape": out})
    else:
        out = list(a)
    out = draw(st.sampled_from([out, draw(_SHAPE)]))
    ot, oq = (BOOL, {}) if op == "LESS" else (t, q)
    if int8 and op in ("LOGISTIC", "TANH"):  # the output quantisation their int8 kernels need
        oq = {"quant": ([1 / 256], [-128]) if op == "LOGISTIC" else ([1 / 128], [0])}
    tensors = [(f"x{k}", s, t, q) for k, s in enumerate(ins)] + [("y", out, ot, oq)]
    return op, _one(tensors, list(range(n)), [n], [(op, list(range(n)), [n], opts)])


@needs_tflm
@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_single_op())
def test_property_a_number_only_where_the_interpreter_runs(tmp_path, case):
    """Against the interpreter on drawn single-operator models (deterministic draws): where it
    runs the model memplan's number (modelled or measured) is its bisected minimum; where it
    refuses or crashes, no number, from the model alone either, and its reason quoted
    (:func:`experiments.runtimes.tflm.differential.check_model`)."""
    from experiments.runtimes.tflm.differential import check_model

    op, subs = case
    path = write_tflite(tmp_path / "drawn.tflite", subs)
    row = check_model("drawn", path, None, [op])
    assert row["kind"] == "", (subs, row["kind"], row["error"], row["refusal"] or
                               row["bisected_min"])
