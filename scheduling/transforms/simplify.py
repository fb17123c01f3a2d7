"""Algebraic simplification (seed 000 section 3.1): fewer operators, shorter lifetime chains.

:func:`simplify` removes, in one pass over the stored order:

* **constant folding**: an operator whose inputs are all weights is evaluated at compile time; its
  outputs become weights and the operator disappears (the ONNX importer already folds constant
  subgraphs; hand-built or transformed graphs may still have them). When the operator is one of
  :data:`scheduling.constfold.FOLDABLE_OPS`, its input values are known and each output has at
  most ``max_value_elems`` elements, the folded weight gets its value
  (:func:`scheduling.constfold.evaluate_constant_op`), so later rewrites can use it;
* ``Identity`` and inference-mode ``Dropout`` (output 0 is input 0; the mask output must be unread);
* **Transpose pairs that cancel**: ``Transpose(p1)`` whose output is read only by
  ``Transpose(p2)`` with ``p1[p2[j]] == j`` for every axis ``j``;
* **multiply by one / add zero**: ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0``
  where the constant is a weight whose value (:attr:`Tensor.value <scheduling.graph.Tensor.value>`,
  kept by the ONNX importer for small constants, or given in ``constants``) is all ones / all
  zeros -- a scalar or any tensor that broadcasts to ``x`` -- and the result has ``x``'s shape
  and dtype (no broadcasting growth, no type promotion). ``1 / x`` and ``0 - x`` are not neutral.
  Exact in IEEE arithmetic except that ``-0.0 + 0`` gives ``+0.0`` (the usual compiler
  convention, also in XLA's algebraic simplifier).

A removed operator's output is renamed to its input everywhere (``rebuild(rename=...)``), so a
removed operator that wrote a graph output makes its input the graph output. Runs in
``O(#ops + #tensor uses)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral
from typing import Any

import numpy as np

from planners.params import Interval, param_rules

from ..constfold import FOLDABLE_OPS, evaluate_constant_op
from ..graph import Graph, Tensor
from .base import PassLog, rebuild

__all__ = ["simplify"]


def _is_const_value(v: Any, value: float) -> bool:
    a = np.asarray(v)
    return a.size > 0 and bool(np.all(a == value))


def _passthrough(g: Graph, out: str, src: str) -> bool:
    """``out`` may be renamed to ``src``: not when a graph output would become a graph input or
    a weight (that needs a copy)."""
    return not (g.tensors[out].kind == "output" and g.tensors[src].kind in ("input", "weight"))


def _broadcasts_to(c_shape: tuple[int, ...], x_shape: tuple[int, ...]) -> bool:
    """True iff a constant of ``c_shape`` broadcasts to ``x_shape`` without growing it."""
    try:
        return np.broadcast_shapes(c_shape, x_shape) == tuple(x_shape)
    except ValueError:
        return False


@param_rules({
    "fold_constants": ["boolean"],
    "remove_identity": ["boolean"],
    "remove_dropout": ["boolean"],
    "cancel_transposes": ["boolean"],
    "remove_neutral": ["boolean"],
    "constants": [Mapping, None],
    "max_value_elems": [Interval(Integral, 0, None)],
})
def simplify(
    graph: Graph,
    *,
    fold_constants: bool = True,
    remove_identity: bool = True,
    remove_dropout: bool = True,
    cancel_transposes: bool = True,
    remove_neutral: bool = True,
    constants: Mapping[str, Any] | None = None,
    max_value_elems: int = 4096,
) -> tuple[Graph, PassLog]:
    """Algebraic simplification pass (module docstring).

    Parameters
    ----------
    graph : Graph
    fold_constants, remove_identity, remove_dropout, cancel_transposes, remove_neutral : bool
        Named switches for each rewrite (all on).
    constants : mapping, optional
        Extra weight values ``{tensor name: scalar or array}`` for multiply-by-one / add-zero;
        they take precedence over :attr:`Tensor.value <scheduling.graph.Tensor.value>`.
    max_value_elems : int
        A constant-folded output keeps its value when it has at most this many elements.

    Returns
    -------
    (Graph, PassLog)
        The simplified graph (input graph untouched) and the log: actions ``fold_constant``,
        ``remove_identity``, ``remove_dropout``, ``cancel_transpose``, ``remove_neutral``.
    """
    log = PassLog("simplify")
    g = graph
    rename: dict[str, str] = {}
    kinds: dict[str, str] = {}
    drop: set[str] = set()
    const = {t.name for t in g.tensors.values() if t.kind == "weight"}
    values: dict[str, Any] = {
        t.name: t.value for t in g.tensors.values() if t.kind == "weight" and t.value is not None
    }
    values.update(constants or {})
    folded: dict[str, Tensor] = {}  # folded outputs with a computed value

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
            res = None
            small = all(g.tensors[o].numel <= max_value_elems for o in op.outputs)
            if op.op_type in FOLDABLE_OPS and small:
                res = evaluate_constant_op(
                    op.op_type, op.attributes, [values.get(t) for t in ins],
                    [g.tensors[t].shape for t in ins],
                )
            valued = []
            for o, v in zip(op.outputs, res or ()):
                t = g.tensors[o]
                if tuple(np.shape(v)) == t.shape:
                    val = np.asarray(v, dtype=t.dtype)
                    folded[o] = Tensor(o, t.shape, t.dtype, t.nbytes, "weight", value=val)
                    values[o] = val
                    valued.append(o)
            log.add("fold_constant", op=op.name, op_type=op.op_type, outputs=list(op.outputs),
                    valued=valued)
            continue
        src_kind = g.tensors[ins[0]].kind if ins else None
        out0 = op.outputs[0]
        passthrough_ok = bool(ins) and _passthrough(g, out0, ins[0])
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
        if remove_neutral and op.op_type in ("Mul", "Div", "Add", "Sub") and len(ins) == 2:
            neutral = 1.0 if op.op_type in ("Mul", "Div") else 0.0
            cands = [0, 1] if op.op_type in ("Mul", "Add") else [0]  # x/1, x-0 only
            for k in cands:
                x, c = ins[k], ins[1 - k]
                if (
                    c in const
                    and c in values
                    and _is_const_value(values[c], neutral)
                    and _broadcasts_to(np.shape(values[c]), g.tensors[x].shape)
                    and g.tensors[x].shape == g.tensors[out0].shape
                    and g.tensors[x].dtype == g.tensors[out0].dtype
                    and _passthrough(g, out0, x)
                ):
                    bypass(op.name, out0, x, "remove_neutral", op_type=op.op_type, constant=c)
                    break
    if not drop:
        return graph.copy(), log
    ops = [op for op in g.ops.values() if op.name not in drop]
    return rebuild(g, ops, new_tensors=folded, rename=rename, kinds=kinds), log
