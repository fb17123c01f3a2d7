"""Workspaces (seed 002 section 5.3.4): per-operator scratch buffers that live only during their
operator.

* ``Conv`` with a kernel larger than 1x1 or a stride > 1 needs an **im2col** buffer of
  ``H_out x W_out x (C_in / group) x K_h x K_w x element size`` bytes (groups are lowered one
  after another, so one group's columns at a time; a 1x1 stride-1 convolution is a GEMM on the
  input as it is and needs none);
* ``Gemm`` / ``MatMul`` need packed **GEMM tile buffers** (BLIS-style panels): ``(tile_m + tile_n)
  x K x element size`` bytes, ``K`` the reduction length.

The element size is that of the value the kernel computes with: for an operator that absorbed a
prologue cast (:func:`~.fuse.fuse`, attribute ``prologue_casts``) the cast's output type (an int8
im2col buffer filled from a float input), else the input tensor's.

Per-operator mode (default): each workspace is an extra output ``<op>_ws`` (``uint8``) that no
operator reads, so its closed lifetime is the operator's step alone. ``shared=True``: one global
``workspace`` tensor sized by the maximum, written by a ``Workspace`` allocation operator at step 0
and read by every operator that needs scratch, so it lives from step 0 to the last one. Run this
pass last: other passes only fuse single-output operators. ``O(#ops)``.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from planners.params import Interval, param_rules

from ..graph import Graph, Operator, Tensor
from .base import PassLog, rebuild

__all__ = ["workspaces", "workspace_bytes"]


def workspace_bytes(graph: Graph, op: Operator, tile_m: int = 8, tile_n: int = 8) -> int:
    """Scratch bytes of ``op`` (module docstring); 0 when it needs none.

    >>> from scheduling.examples import mobilenet_v1_first_layer
    >>> g = mobilenet_v1_first_layer()
    >>> workspace_bytes(g, g.ops["conv"])  # 112 * 112 * 3 * 3 * 3 * 1 byte
    338688
    """
    cast_to = {r["input"]: r["dtype"] for r in op.attributes.get("prologue_casts", ())}

    def itemsize(t: Tensor) -> int:
        return np.dtype(cast_to.get(t.name, t.dtype)).itemsize

    if op.op_type == "Conv" and len(op.inputs) >= 2:
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        y = graph.tensors[op.outputs[0]]
        k = list(op.attributes.get("kernel_shape") or w.shape[2:])
        s = list(op.attributes.get("strides") or [1] * len(k))
        if math.prod(k) == 1 and all(v == 1 for v in s):
            return 0
        return math.prod(y.shape[2:]) * w.shape[1] * math.prod(k) * itemsize(x)
    if op.op_type in ("Gemm", "MatMul") and len(op.inputs) >= 2:
        a = graph.tensors[op.inputs[0]]
        if op.op_type == "Gemm":
            kdim = a.shape[0] if op.attributes.get("transA", 0) else a.shape[-1]
        else:
            kdim = a.shape[-1]
        return (tile_m + tile_n) * kdim * itemsize(a)
    return 0


@param_rules({
    "shared": ["boolean"],
    "tile_m": [Interval(Integral, 1, None)],
    "tile_n": [Interval(Integral, 1, None)],
})
def workspaces(graph: Graph, *, shared: bool = False, tile_m: int = 8,
               tile_n: int = 8) -> tuple[Graph, PassLog]:
    """Add workspace buffers (module docstring).

    Returns
    -------
    (Graph, PassLog)
        Log actions ``workspace`` (op, bytes) and, when shared, ``shared_workspace`` (bytes);
        ``stats["total_bytes"]`` / ``stats["max_bytes"]``.
    """
    log = PassLog("workspaces")
    need = {n: workspace_bytes(graph, op, tile_m, tile_n) for n, op in graph.ops.items()}
    need = {n: b for n, b in need.items() if b > 0}
    log.stats["total_bytes"] = sum(need.values())
    log.stats["max_bytes"] = max(need.values(), default=0)
    if not need:
        return graph.copy(), log
    new: dict[str, Tensor] = {}
    ops: list[Operator] = []
    if shared:
        size = log.stats["max_bytes"]
        new["workspace"] = Tensor("workspace", (size,), "uint8", size, "activation")
        ops.append(Operator("workspace_alloc", "Workspace", (), ("workspace",),
                            {"kernel": "workspace"}))
        log.add("shared_workspace", bytes=size, users=list(need))
    for n, op in graph.ops.items():
        if n not in need:
            ops.append(op)
            continue
        attrs = dict(op.attributes)
        if shared:
            attrs["workspace"] = "workspace"
            ops.append(Operator(n, op.op_type, op.inputs + ("workspace",), op.outputs, attrs,
                                op.macs))
        else:
            ws = f"{n}_ws"
            new[ws] = Tensor(ws, (need[n],), "uint8", need[n], "activation")
            attrs["workspace"] = ws
            ops.append(Operator(n, op.op_type, op.inputs, op.outputs + (ws,), attrs, op.macs))
            log.add("workspace", op=n, tensor=ws, bytes=need[n])
    return rebuild(graph, ops, new_tensors=new), log
