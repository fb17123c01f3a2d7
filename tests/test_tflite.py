"""TFLite import (the `tflite` package) and TFLite Micro as an oracle (`tflite-micro`)."""

from __future__ import annotations

import pytest

from experiments.workloads import load_problem, tflite_model_files
from planners import lower_bound, plan

tflite = pytest.importorskip("tflite", reason="the optional 'tflite' package is not installed")

from scheduling.tflite_import import TfliteImportError, load_tflite, tflite_problem  # noqa: E402

WAKEWORD = {k: v for k, v in tflite_model_files().items() if k.startswith("wakeword:")}
needs_wakeword = pytest.mark.skipif(len(WAKEWORD) != 4,
                                    reason="pymicro-wakeword (4 int8 TFLite Micro models) not installed")


def test_malformed_and_missing_files(tmp_path):
    with pytest.raises(TfliteImportError, match="no such file"):
        load_tflite(tmp_path / "none.tflite")
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(TfliteImportError, match=r"bad.tflite: not a TFLite flatbuffer"):
        load_tflite(bad)


@needs_wakeword
def test_wakeword_model_structure():
    m = load_tflite(WAKEWORD["wakeword:alexa"])
    g = m.graph
    assert m.subgraphs == 2  # main + the NoOp initialiser run by CALL_ONCE
    assert m.folded_ops == {"CALL_ONCE": 1, "VAR_HANDLE": 6}
    types = [op.op_type for op in g.ops.values()]
    assert types.count("READ_VARIABLE") == 6 and types.count("ASSIGN_VARIABLE") == 6
    assert types.count("CONV_2D") == 5 and types.count("DEPTHWISE_CONV_2D") == 4
    x = g.tensors["serving_default_input_audio:0"]
    assert x.kind == "input" and x.shape == (1, 3, 40) and x.nbytes == 120  # int8
    weights = [t for t in g.tensors.values() if t.kind == "weight"]
    assert weights and all(t.producer is None for t in weights)
    p = tflite_problem(WAKEWORD["wakeword:alexa"])
    assert p.alignment == 16 and "serving_default_input_audio:0" in p.index
    assert p.n == 39


@needs_wakeword
def test_load_problem_by_name_and_path():
    a = load_problem("wakeword:hey_jarvis")
    b = load_problem(str(WAKEWORD["wakeword:hey_jarvis"]))
    assert a.n == b.n and lower_bound(a) == lower_bound(b)


@needs_wakeword
def test_greedy_by_size_equals_tflite_micro_head():
    """TFLite Micro's GreedyMemoryPlanner is greedy by size: on the same tensors and alignment our
    greedy_by_size arena must equal the head it reports (an independent implementation)."""
    tfm = pytest.importorskip("tflite_micro", reason="tflite-micro not installed")  # noqa: F841
    from experiments.runtimes.tflm.oracle import tflm_arena

    for name, path in WAKEWORD.items():
        ours = plan(tflite_problem(path), "greedy_by_size").arena_size
        head = tflm_arena(path).head
        assert ours == head, name
        assert lower_bound(tflite_problem(path)) <= head


def test_parse_allocations():
    from experiments.runtimes.tflm.oracle import parse_allocations

    text = ("[RecordingMicroAllocator] Arena allocation total 20432 bytes\n"
            "[RecordingMicroAllocator] Arena allocation head 3648 bytes\n"
            "[RecordingMicroAllocator] Arena allocation tail 16784 bytes\n")
    a = parse_allocations(text)
    assert (a.head, a.tail, a.total) == (3648, 16784, 20432)
    with pytest.raises(ValueError, match="lacks"):
        parse_allocations(text.splitlines()[0])


def test_mediapipe_models_when_installed():
    mp = {k: v for k, v in tflite_model_files().items() if k.startswith("mediapipe:")}
    if not mp:
        pytest.skip("mediapipe==0.10.14 (optional, model files only) not installed")
    m = load_tflite(mp["mediapipe:face_detection_short_range"])
    # TFLite Micro runs the 74 DEQUANTIZE of float16 weights at every Invoke and plans their
    # outputs, so by default they are scheduled; folding them is a planning view asked for
    assert m.folded_ops == {}
    assert sum(op.op_type == "DEQUANTIZE" for op in m.graph.ops.values()) == 74
    m = load_tflite(mp["mediapipe:face_detection_short_range"], fold_constants=True)
    assert m.folded_ops == {"DEQUANTIZE": 74}
    assert all(op.op_type != "DEQUANTIZE" for op in m.graph.ops.values())
    p = tflite_problem(mp["mediapipe:face_detection_short_range"])
    assert p.index and p.buffers[0].size == 128 * 128 * 3 * 4  # the float input image
