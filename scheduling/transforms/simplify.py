"""Algebraic simplification (seed 000 section 3.1): fewer operators, shorter lifetime chains.

:func:`simplify` removes, in one pass over the stored order:

* **constant folding**: an operator whose inputs are all weights is evaluated at compile time; its
  outputs become weights and the operator disappears (the ONNX importer already folds constant
  subgraphs; hand-built or transformed graphs may still have them);
* ``Identity`` and inference-mode ``Dropout`` (output 0 is input 0; the mask output must be unread);
* **Transpose pairs that cancel**: ``Transpose(p1)`` whose output is read only by
  ``Transpose(p2)`` with ``p1[p2[j]] == j`` for every axis ``j``;
* **multiply by one / add zero**: ``Mul``/``Div`` by a constant one, ``Add``/``Sub`` of a constant
  zero, when the constant's value is given in ``constants`` (graphs carry shapes, not weight
  values) and the result has the activation operand's shape (no broadcasting growth).

A removed operator's output is renamed to its input everywhere (``rebuild(rename=...)``), so a
removed operator that wrote a graph output makes its input the graph output. Runs in
``O(#ops + #tensor uses)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..graph import Graph
from .base import PassLog, rebuild

__all__ = ["simplify"]


def _is_const_value(v: Any, value: float) -> bool:
    a = np.asarray(v)
    return a.size > 0 and bool(np.all(a == value))


def simplify(
    graph: Graph,
    *,
    fold_constants: bool = True,
    remove_identity: bool = True,
    remove_dropout: bool = True,
    cancel_transposes: bool = True,
    constants: Mapping[str, Any] | None = None,
) -> tuple[Graph, PassLog]:
    """Algebraic simplification pass (module docstring).

    Parameters
    ----------
    graph : Graph
    fold_constants, remove_identity, remove_dropout, cancel_transposes : bool
        Named switches for each rewrite (all on).
    constants : mapping, optional
        Known weight values ``{tensor name: scalar or array}`` for multiply-by-one / add-zero.

    Returns
    -------
    (Graph, PassLog)
        The simplified graph (input graph untouched) and the log: actions ``fold_constant``,
        ``remove_identity``, ``remove_dropout``, ``cancel_transpose``, ``remove_neutral``.
    """
    log = PassLog("simplify")
    constants = dict(constants or {})
    g = graph
    rename: dict[str, str] = {}
    kinds: dict[str, str] = {}
    drop: set[str] = set()
    const = {t.name for t in g.tensors.values() if t.kind == "weight"}

    def bypass(op_name: str, out: str, inp: str, action: str, **info: Any) -> None:
        # The output is replaced by the input; legal unless both are graph-level names that must
        # stay distinct (an input that is also an output would need a copy).
        drop.add(op_name)
        rename[out] = inp
        log.add(action, op=op_name, removed_tensor=out, replaced_by=inp, **info)

    for op in g.ops.values():
        if op.name in drop:
            continue
        ins = [rename.get(t, t) for t in op.inputs]
        if fold_constants and ins and all(t in const for t in ins) and not any(
            g.tensors[o].kind == "output" for o in op.outputs
        ):
            drop.add(op.name)
            for o in op.outputs:
                kinds[o] = "weight"
                const.add(o)
            log.add("fold_constant", op=op.name, op_type=op.op_type, outputs=list(op.outputs))
            continue
        src_kind = g.tensors[ins[0]].kind if ins else None
        out0 = op.outputs[0]
        passthrough_ok = not (
            g.tensors[out0].kind == "output" and src_kind in ("input", "weight")
        )
        if remove_identity and op.op_type == "Identity" and passthrough_ok:
            bypass(op.name, out0, ins[0], "remove_identity")
            continue
        if (
            remove_dropout
            and op.op_type == "Dropout"
            and passthrough_ok
            and all(not g.tensors[o].consumers and g.tensors[o].kind != "output"
                    for o in op.outputs[1:])
        ):
            bypass(op.name, out0, ins[0], "remove_dropout")
            continue
        if cancel_transposes and op.op_type == "Transpose":
            t = g.tensors[out0]
            if len(t.consumers) == 1 and t.kind != "output":
                nxt = g.ops[t.consumers[0]]
                rev = list(range(len(t.shape)))[::-1]  # ONNX default perm: reversed axes
                p1 = list(op.attributes.get("perm", rev))
                p2 = list(nxt.attributes.get("perm", rev))
                ok_kind = not (g.tensors[nxt.outputs[0]].kind == "output"
                               and src_kind in ("input", "weight"))
                if (
                    nxt.op_type == "Transpose"
                    and ok_kind
                    and len(p1) == len(p2)
                    and all(p1[p2[j]] == j for j in range(len(p2)))
                ):
                    drop.add(op.name)
                    bypass(nxt.name, nxt.outputs[0], ins[0], "cancel_transpose",
                           first=op.name, perm=p1, inverse=p2)
                    continue
        if op.op_type in ("Mul", "Div", "Add", "Sub") and len(ins) == 2 and passthrough_ok:
            neutral = 1.0 if op.op_type in ("Mul", "Div") else 0.0
            cands = [0, 1] if op.op_type in ("Mul", "Add") else [0]  # x/1, x-0 only
            for k in cands:
                x, c = ins[k], ins[1 - k]
                if (
                    c in constants
                    and _is_const_value(constants[c], neutral)
                    and g.tensors[x].shape == g.tensors[out0].shape
                    and g.tensors[x].dtype == g.tensors[out0].dtype
                ):
                    bypass(op.name, out0, x, "remove_neutral", op_type=op.op_type, constant=c)
                    break
    if not drop:
        return graph.copy(), log
    ops = [op for op in g.ops.values() if op.name not in drop]
    return rebuild(g, ops, rename=rename, kinds=kinds), log
