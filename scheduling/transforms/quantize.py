"""Quantisation as a size transform (seed 000 section 3.3): element sizes follow the new types.

:func:`quantize` converts floating-point activations (and optionally the weights of Conv, Gemm and
MatMul, whose bias becomes int32 for int8 weights) to ``int8`` or ``float16``. Boundaries get
explicit cast operators: a ``QuantizeLinear`` (int8) or ``Cast`` (float16) after each float graph
input, and a ``DequantizeLinear`` / ``Cast`` producing each float graph output from its quantised
value. Casts are elementwise, so the fusion pass folds them into a neighbour when that is legal:
an output-side cast into its producer's epilogue (e.g. ``Softmax + DequantizeLinear``), an
input-side cast (which has no producer in the graph) into the operator reading it as a prologue
(``QuantizeLinear + Conv``: the quantised input is never stored), see :func:`~.fuse.fuse`. Only
sizes change: the numerics of quantisation (scales, zero points, calibration) are out of scope.
``O(#ops + #tensors)``.
"""

from __future__ import annotations

import numpy as np

from planners.params import StrOptions, param_rules

from ..graph import Graph, Operator, Tensor
from .base import PassLog, rebuild

__all__ = ["quantize"]

_CONTRACT = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def _is_float(dtype: str) -> bool:
    return np.dtype(dtype).kind == "f"


def _retype(t: Tensor, dtype: str) -> Tensor:
    return Tensor(t.name, t.shape, dtype, t.numel * np.dtype(dtype).itemsize, t.kind)


@param_rules({
    "activations": [StrOptions(("int8", "float16")), None],
    "weights": [StrOptions(("int8", "float16")), None],
})
def quantize(graph: Graph, *, activations: str | None = "int8",
             weights: str | None = None) -> tuple[Graph, PassLog]:
    """Quantisation pass (module docstring).

    Parameters
    ----------
    graph : Graph
    activations : {"int8", "float16", None}
        New element type of floating-point activations (``None``: keep).
    weights : {"int8", "float16", None}
        New element type of contraction weights (input 1); biases (input 2) become int32 for int8.

    Returns
    -------
    (Graph, PassLog)
        Log actions ``retype`` (tensor, old/new dtype and bytes), ``cast`` (inserted operator);
        ``stats["bytes_before"]`` / ``stats["bytes_after"]`` over activations.

    Raises
    ------
    ParameterError
        An unsupported target type (the rules declared above the function).
    """
    log = PassLog("quantize")
    new: dict[str, Tensor] = {}
    before = after = 0
    if activations:
        for t in graph.tensors.values():
            if t.kind in ("activation", "output") and _is_float(t.dtype):
                before += t.nbytes
                if t.kind == "output":
                    q = _retype(t, activations)
                    q.name = f"{t.name}_q"
                    q.kind = "activation"
                    new[q.name] = q
                else:
                    new[t.name] = _retype(t, activations)
                    log.add("retype", tensor=t.name, old=t.dtype, new=activations,
                            old_bytes=t.nbytes, new_bytes=new[t.name].nbytes)
                after += new.get(t.name, new.get(f"{t.name}_q")).nbytes
    if weights:
        for op in graph.ops.values():
            if op.op_type not in _CONTRACT:
                continue
            for i, x in enumerate(op.inputs[1:3], start=1):
                t = graph.tensors[x]
                if t.kind != "weight" or not _is_float(t.dtype) or x in new:
                    continue
                dt = "int32" if (i == 2 and weights == "int8") else weights
                new[x] = _retype(t, dt)
                log.add("retype", tensor=x, old=t.dtype, new=dt, old_bytes=t.nbytes,
                        new_bytes=new[x].nbytes)
    log.stats["bytes_before"], log.stats["bytes_after"] = before, after
    cast_in = "QuantizeLinear" if activations == "int8" else "Cast"
    cast_out = "DequantizeLinear" if activations == "int8" else "Cast"
    rename_in: dict[str, str] = {}
    ops: list[Operator] = []
    if activations:
        for x in graph.inputs:
            t = graph.tensors[x]
            if _is_float(t.dtype) and t.consumers:
                q = _retype(t, activations)
                q.name, q.kind = f"{x}_q", "activation"
                new[q.name] = q
                rename_in[x] = q.name
                ops.append(Operator(f"{x}_quantize", cast_in, (x,), (q.name,),
                                    {"to": activations}))
                log.add("cast", op=f"{x}_quantize", op_type=cast_in, tensor=x)
    outq = {t: f"{t}_q" for t in graph.outputs if f"{t}_q" in new}
    for op in graph.ops.values():
        ins = tuple(outq.get(rename_in.get(x, x), rename_in.get(x, x)) for x in op.inputs)
        outs = tuple(outq.get(o, o) for o in op.outputs)
        ops.append(Operator(op.name, op.op_type, ins, outs, dict(op.attributes), op.macs))
        for o in op.outputs:
            if o in outq:
                ops.append(Operator(f"{o}_dequantize", cast_out, (outq[o],), (o,),
                                    {"to": graph.tensors[o].dtype}))
                log.add("cast", op=f"{o}_dequantize", op_type=cast_out, tensor=o)
    return rebuild(graph, ops, new_tensors=new), log
