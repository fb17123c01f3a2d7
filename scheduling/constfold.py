"""Compile-time evaluation of simple operators on constant tensors (constant folding).

A runtime folds a constant subgraph once (seed 000 section 3.1, "constant folding"); to fold it
here we need the values, not only the shapes. :func:`evaluate_constant_op` evaluates one operator
of :data:`FOLDABLE_OPS` with numpy, ONNX semantics (opset 9 to 21 forms of the attributes and
inputs). It is used by the ONNX importer (:func:`scheduling.onnx_import.load_onnx`) to keep the
values of small constants and by the ``simplify`` pass (:func:`scheduling.transforms.simplify`)
when it folds an operator whose inputs are all weights.

``Shape`` needs only its input's shape, so it folds even when the input is an activation with a
static shape (the importer uses that; the pass does not, see its docstring).

Anything outside the supported forms (an operator not in :data:`FOLDABLE_OPS`, a missing input
value, an attribute form we do not know) gives ``None``: the caller keeps the tensor without a
value, which is always safe (only value-based rewrites are lost). Each evaluation is linear in the
number of elements produced; callers bound that with a size limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["FOLDABLE_OPS", "evaluate_constant_op"]

#: Operator types :func:`evaluate_constant_op` can evaluate.
FOLDABLE_OPS = frozenset(
    {
        "Constant", "ConstantOfShape", "Identity", "Shape", "Reshape", "Flatten", "Squeeze",
        "Unsqueeze", "Transpose", "Cast", "Concat", "Gather", "Add", "Sub", "Mul", "Div", "Neg",
    }
)

_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


def _onnx_dtype(code: int) -> np.dtype:
    from onnx import helper  # local: the graph passes use this module without ONNX models

    return np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))


def _as_array(v: Any) -> np.ndarray:
    """An attribute value (numpy array, ``onnx.TensorProto``, number, list) as an array."""
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "dims") and hasattr(v, "data_type"):  # onnx.TensorProto
        from onnx import numpy_helper

        return numpy_helper.to_array(v)
    return np.asarray(v)


def _axes(attrs: Mapping[str, Any], values: Sequence[np.ndarray | None]) -> list[int] | None:
    """Axes of Squeeze/Unsqueeze: input 1 (opset >= 13) or attribute ``axes`` (older)."""
    if len(values) > 1:
        return None if values[1] is None else [int(a) for a in np.ravel(values[1])]
    ax = attrs.get("axes")
    return None if ax is None else [int(a) for a in ax]


def evaluate_constant_op(
    op_type: str,
    attributes: Mapping[str, Any],
    values: Sequence[np.ndarray | None],
    shapes: Sequence[Sequence[int] | None] = (),
) -> list[np.ndarray] | None:
    """Evaluate one operator on constant inputs with numpy.

    Parameters
    ----------
    op_type : str
        ONNX operator type; one of :data:`FOLDABLE_OPS` (anything else gives ``None``).
    attributes : mapping
        Operator attributes (tensor-valued ones as ``onnx.TensorProto`` or numpy arrays).
    values : sequence of numpy.ndarray or None
        Input values in argument order (omitted optional inputs removed); ``None`` where
        unknown.
    shapes : sequence of shapes, optional
        Input shapes; ``Shape`` uses them when its input's value is unknown.

    Returns
    -------
    list of numpy.ndarray or None
        The output values (one per output), or ``None`` when the operator or one of its needed
        input values is not supported/known. ``O(output elements)``.

    Examples
    --------
    >>> [v.tolist() for v in evaluate_constant_op("Shape", {}, [None], [(1, 3, 8, 8)])]
    [[1, 3, 8, 8]]
    >>> evaluate_constant_op("Reshape", {}, [np.ones((2, 3)), np.array([0, -1])])[0].shape
    (2, 3)
    >>> evaluate_constant_op("Softmax", {}, [np.ones(3)]) is None
    True
    """
    a = attributes
    v = list(values)
    try:
        if op_type == "Constant":
            if "value" in a:
                return [_as_array(a["value"])]
            if "value_float" in a:
                return [np.array(a["value_float"], np.float32)]
            if "value_floats" in a:
                return [np.array(a["value_floats"], np.float32)]
            if "value_int" in a:
                return [np.array(a["value_int"], np.int64)]
            if "value_ints" in a:
                return [np.array(a["value_ints"], np.int64)]
            return None
        if op_type == "Shape":
            shape = v[0].shape if v and v[0] is not None else (shapes[0] if shapes else None)
            if shape is None:
                return None
            s = np.array(list(shape), np.int64)
            start, end = int(a.get("start", 0)), a.get("end")
            return [s[start:] if end is None else s[start:int(end)]]
        if any(x is None for x in v):
            return None
        if op_type == "ConstantOfShape":
            fill = _as_array(a["value"]).ravel() if "value" in a else np.zeros(1, np.float32)
            return [np.full(tuple(int(d) for d in v[0]), fill[0], dtype=fill.dtype)]
        if op_type == "Identity":
            return [v[0]]
        if op_type == "Reshape":
            x, target = v[0], [int(d) for d in np.ravel(v[1])]
            if not a.get("allowzero", 0):
                target = [x.shape[k] if d == 0 else d for k, d in enumerate(target)]
            return [np.reshape(x, target)]
        if op_type == "Flatten":
            x = v[0]
            ax = int(a.get("axis", 1))
            ax = ax + x.ndim if ax < 0 else ax
            return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
        if op_type == "Squeeze":
            ax = _axes(a, v)
            return [np.squeeze(v[0]) if ax is None else np.squeeze(v[0], axis=tuple(ax))]
        if op_type == "Unsqueeze":
            ax = _axes(a, v)
            if ax is None:
                return None
            rank = v[0].ndim + len(ax)
            return [np.expand_dims(v[0], tuple(sorted(x + rank if x < 0 else x for x in ax)))]
        if op_type == "Transpose":
            perm = a.get("perm")
            return [np.transpose(v[0], None if perm is None else [int(p) for p in perm])]
        if op_type == "Cast":
            return [v[0].astype(_onnx_dtype(a["to"]))]
        if op_type == "Concat":
            return [np.concatenate(v, axis=int(a["axis"]))]
        if op_type == "Gather":
            return [np.take(v[0], v[1].astype(np.int64), axis=int(a.get("axis", 0)))]
        if op_type in _BINARY:
            out = _BINARY[op_type](v[0], v[1])
            return [out.astype(np.result_type(v[0], v[1]), copy=False)]
        if op_type == "Div":
            if np.dtype(v[0].dtype).kind in "iu":
                if np.any(v[1] == 0):
                    return None
                return [np.trunc(v[0] / v[1]).astype(v[0].dtype)]  # ONNX: truncation
            return [np.divide(v[0], v[1]).astype(np.result_type(v[0], v[1]), copy=False)]
        if op_type == "Neg":
            return [np.negative(v[0])]
    except (ValueError, IndexError, TypeError, KeyError):
        return None
    return None
