"""Real model workloads shipped with the ``onnx`` wheel.

The ``onnx`` package ships nine "light" ImageNet models (weights replaced by
``ConstantOfShape``) in ``onnx/backend/test/data/light/``; the folder is found from
``onnx.__file__``, never a hard-coded path.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from .errors import OnnxImportError

__all__ = ["ONNX_LIGHT_MODELS", "onnx_light_dir", "onnx_light_models", "load_light_model"]

#: Short name -> file name of the nine light models.
ONNX_LIGHT_MODELS: dict[str, str] = {
    "alexnet": "light_bvlc_alexnet.onnx",
    "densenet121": "light_densenet121.onnx",
    "inception_v1": "light_inception_v1.onnx",
    "inception_v2": "light_inception_v2.onnx",
    "resnet50": "light_resnet50.onnx",
    "shufflenet": "light_shufflenet.onnx",
    "squeezenet": "light_squeezenet.onnx",
    "vgg19": "light_vgg19.onnx",
    "zfnet512": "light_zfnet512.onnx",
}


def onnx_light_dir() -> Path:
    """The folder of the light models inside the installed onnx package."""
    return Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"


def onnx_light_models() -> dict[str, Path]:
    """``{short name: path}`` of the nine light models, in :data:`ONNX_LIGHT_MODELS` order.

    Raises
    ------
    OnnxImportError
        A model file is missing from the installed onnx wheel (named).
    """
    d = onnx_light_dir()
    out = {}
    for short, fname in ONNX_LIGHT_MODELS.items():
        p = d / fname
        if not p.is_file():
            raise OnnxImportError(f"light model {short!r}: {p} not found in the onnx package")
        out[short] = p
    return out


def load_light_model(name: str):
    """Import one light model by short name (``"resnet50"``) as a :class:`Graph` named ``name``.

    Raises ``OnnxImportError`` for an unknown name (listing the known ones).
    """
    from .onnx_import import load_onnx

    if name not in ONNX_LIGHT_MODELS:
        raise OnnxImportError(
            f"unknown light model {name!r}; known: {', '.join(ONNX_LIGHT_MODELS)}"
        )
    return load_onnx(onnx_light_models()[name], name=name)
