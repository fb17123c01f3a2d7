"""Operator fusion (seed 003 sections 3.2-3.3, seed 000 sections 3.2 and 4).

:func:`fuse` applies, in this order, each behind a named switch:

1. ``fold_bn`` -- **BatchNorm folding** into the preceding ``Conv`` (seed 003 section 3.2.1):
   ``scale = gamma / sqrt(var + eps)``, ``W' = W * scale`` per output channel, ``b' = (b - mean)
   * scale + beta`` (:func:`fold_batchnorm`). The new weight has the old weight's shape and bytes;
   a conv without bias gains a ``[C_out]`` bias (int32 for integer weights, else the weight dtype);
   the four BN tensors and the conv's intermediate output vanish.
2. ``epilogues`` -- **vertical fusion**: an operator (the anchor: Conv, MatMul, Gemm, an
   elementwise operator, Softmax...) absorbs the chain of elementwise operators reading its single
   output when that output has one consumer and is not a graph output: bias Add, activations
   (Relu, Clip/ReLU6, Sigmoid, ...), casts, chains of elementwise operators, and the **residual
   Add** whose other operand is another activation of the same shape (fused into the conv's output
   stage, seed 003 section 3.2.2). Legality (:mod:`.legality`): a reduction (Softmax, ReduceMean,
   ...) never joins a group as an epilogue (``refuse`` with ``reason="reduction_boundary"``); a
   group over the vector register budget is refused (``reason="register_pressure"``, counted in
   ``stats["would_be_spills"]``).
3. ``prologues`` -- **prologue fusion** of boundary casts (seed 000 section 3.3): a standalone
   ``Cast`` / ``QuantizeLinear`` / ``DequantizeLinear`` left after the epilogue step (typically
   the cast after a graph input, which has no producer to join) is applied on load by the
   operator reading its output (Conv, MatMul, an elementwise operator, pooling, a reduction), so
   the cast's output is never stored (:func:`~.legality.prologue_refusal`). The fused operator
   keeps the consumer's name, ``op_type`` and input positions (the cast's output replaced by the
   cast's input), and gains ``prologue`` (cast types) and ``prologue_casts`` (one record per
   absorbed cast: ``op``, ``op_type``, ``input``, ``replaces``, ``dtype`` of the value the kernel
   computes with). Legality as for epilogues: the register budget (the cast's input tile is one
   more live value; ``reason="register_pressure"``) and the peak: reading the cast's *input*
   instead of its output at the consumer's step extends that input's lifetime when nothing else
   read it so late, which can raise the peak (logged ``raises_peak``, refused with
   ``refuse_peak_increase``).
4. ``concat_in_place`` -- **Concat written in place**: when the concat axis is the outermost
   non-unit one (``prod(shape[:axis]) == 1``, so each input is one contiguous slice), each
   input produced by an operator aliases the concat output at its slice offset (annotation
   ``[input, output, offset]``), so producers write straight into the concat buffer. An input
   already aliased elsewhere (e.g. DenseNet features read by several concats) is copied; the
   kernel is ``concat_in_place`` (no copy) or ``concat_partial``.
5. ``horizontal`` -- **horizontal fusion**: operators of the same type and kernel geometry that
   read the same activation and otherwise only weights become one multi-output operator at the
   earliest member's step (one kernel launch).

Every merge is logged with ``saved_bytes = 2 x size(intermediate) x steps_eliminated`` (totals in
``stats["saved_bytes"]``).

**Peak.** No fusion of any of the five patterns raises the peak of live bytes by default
(:mod:`.legality`, "Peak"): each step's candidates are judged on the peak of the whole transformed
graph under its stored order (the schedule the export and the comparisons plan), and one that
raises it is refused and logged (``refuse``, ``reason="raises_peak"``, ``fusion``, ``group``,
``peak_before``, ``peak_after``). Horizontal fusion keeps several outputs alive together; a fused
operator placed at its last member's step keeps its anchor's inputs longer (two MatMul +
ReduceSum branches joined by an Add: 1032 -> 2052 bytes); one placed at its anchor's step
produces a widened (cast) output early; a Concat written in place is live from its first input
on. ``allow_peak_increase=True`` (``memplan ... --allow-peak-increase``) applies them, logged as
``raises_peak``. ``stats["peak_before"]`` / ``stats["peak_after"]`` hold the pass's peaks.

Complexity: ``O(#ops + #tensor uses)`` per step, plus one peak computation (``O(n log n)``) per
step, per horizontal group, and per fused operator that must be placed at its last member's step
or extends a cast's input (each candidate alone when a step's joint check fails).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from planners.params import Interval, param_rules

from ..errors import GraphError
from ..graph import Graph, Operator, Tensor
from .base import (
    ELEMENTWISE,
    VIEW_OPS,
    PassLog,
    add_alias,
    graph_aliases,
    kernel_name,
    rebuild,
    transformed_peak,
)
from .legality import (
    VectorRegisterModel,
    accept_without_peak_increase,
    consumes_partial_result,
    prologue_refusal,
    saved_bytes,
)

__all__ = ["fuse", "fold_batchnorm"]


def fold_batchnorm(
    weight: np.ndarray,
    bias: np.ndarray | None,
    gamma: np.ndarray,
    beta: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    eps: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold inference BatchNorm into the preceding convolution (seed 003 section 3.2.1).

    Parameters
    ----------
    weight : array, shape ``(C_out, C_in/group, k_h, k_w)`` (any trailing dims)
    bias : array of shape ``(C_out,)`` or None (zeros)
    gamma, beta, mean, var : arrays of shape ``(C_out,)``
    eps : float

    Returns
    -------
    (weight', bias')
        Same shapes: ``W' = W * scale[:, None, ...]``, ``b' = (b - mean) * scale + beta`` with
        ``scale = gamma / sqrt(var + eps)``, so ``BN(conv(x, W, b)) == conv(x, W', b')``.

    Examples
    --------
    >>> w, b = fold_batchnorm(np.ones((1, 1, 1, 1)), None, np.array([2.0]), np.array([1.0]),
    ...                       np.array([0.5]), np.array([4.0 - 1e-5]))
    >>> float(w.ravel()[0]), float(b[0])
    (1.0, 0.5)
    """
    weight = np.asarray(weight, dtype=np.float64)
    c = weight.shape[0]
    bias = np.zeros(c) if bias is None else np.asarray(bias, dtype=np.float64)
    scale = np.asarray(gamma, np.float64) / np.sqrt(np.asarray(var, np.float64) + eps)
    w2 = weight * scale.reshape((c,) + (1,) * (weight.ndim - 1))
    b2 = (bias - np.asarray(mean, np.float64)) * scale + np.asarray(beta, np.float64)
    return w2, b2


def _members(op: Operator) -> tuple[list[str], list[str]]:
    return (list(op.attributes.get("fused_ops") or [op.name]),
            list(op.attributes.get("fused_types") or [op.op_type]))


def _fold_bn(g: Graph, log: PassLog, allow: bool) -> Graph:
    cands: list[tuple[str, str]] = []  # (conv, bn)
    for op in g.ops.values():
        if op.op_type == "Conv" and len(op.outputs) == 1 and "aliases" not in op.attributes:
            t = g.tensors[op.outputs[0]]
            bn = g.ops[t.consumers[0]] if len(t.consumers) == 1 else None
            if (
                bn is not None
                and bn.op_type == "BatchNormalization"
                and t.kind != "output"
                and bn.inputs[0] == t.name
                and len(bn.inputs) == 5
                and all(g.tensors[p].kind == "weight" for p in bn.inputs[1:])
                and len(bn.outputs) == 1
            ):
                cands.append((op.name, bn.name))
    if not cands:
        return g

    def folded(conv: str, bn_name: str) -> tuple[Operator, Tensor, Tensor]:
        op, bn = g.ops[conv], g.ops[bn_name]
        t = g.tensors[op.outputs[0]]
        w = g.tensors[op.inputs[1]]
        cout = t.shape[1] if len(t.shape) > 1 else w.shape[0]
        w2 = Tensor(f"{w.name}_bnfold", w.shape, w.dtype, w.nbytes, "weight")
        if len(op.inputs) > 2:
            b = g.tensors[op.inputs[2]]
            b2 = Tensor(f"{b.name}_bnfold", b.shape, b.dtype, b.nbytes, "weight")
        else:
            dt = "int32" if np.dtype(w.dtype).kind in "iu" else w.dtype
            b2 = Tensor(f"{op.name}_bias", (cout,), dt, cout * np.dtype(dt).itemsize, "weight")
        names, types = _members(op)
        attrs = dict(op.attributes)
        attrs.update(fused_ops=names + [bn.name], fused_types=types + [bn.op_type],
                     folded_bn=bn.name, epsilon=bn.attributes.get("epsilon", 1e-5))
        attrs.setdefault("epilogue", [])
        attrs["kernel"] = kernel_name([op.op_type], has_bias=True)
        return (Operator(op.name, op.op_type, (op.inputs[0], w2.name, b2.name), bn.outputs,
                         attrs, op.macs), w2, b2)

    def build(chosen: Sequence[tuple[str, str]]) -> Graph:
        new: dict[str, Operator] = {}
        new_tensors: dict[str, Tensor] = {}
        for conv, bn in chosen:
            new[conv], w2, b2 = folded(conv, bn)
            new_tensors[w2.name] = w2
            new_tensors[b2.name] = b2
        skip = {bn for _, bn in chosen}
        return rebuild(g, [new.get(n, op) for n, op in g.ops.items() if n not in skip],
                       new_tensors)

    # the conv keeps its step and writes the BN output, of the intermediate's shape and dtype:
    # no lifetime grows, so the folds are checked together (one peak computation)
    chosen = accept_without_peak_increase(g, cands, build, log, "fold_bn", risky=lambda c: False,
                                          allow_peak_increase=allow)
    if not chosen:
        return g
    for conv, bn_name in chosen:
        op, bn = g.ops[conv], g.ops[bn_name]
        t = g.tensors[op.outputs[0]]
        _, w2, b2 = folded(conv, bn_name)
        log.add("fold_bn", op=op.name, bn=bn.name, intermediate=t.name,
                intermediate_bytes=t.nbytes, steps_eliminated=1,
                saved_bytes=saved_bytes(t.nbytes),
                removed_weights=list(bn.inputs[1:]),
                new_weight=w2.name, new_bias=b2.name)
        log.stats["saved_bytes"] = log.stats.get("saved_bytes", 0) + saved_bytes(t.nbytes)
    return build(chosen)


def _epilogue_ok(g: Graph, t: str, c: Operator) -> bool:
    """``c`` is elementwise, single-output, and its output has ``t``'s shape (no growth by
    broadcasting); other operands are weights or same-shape activations (residual)."""
    if len(c.outputs) != 1 or "aliases" in c.attributes or "horizontal" in c.attributes:
        return False
    types = c.attributes.get("fused_types") or [c.op_type]
    if not all(x in ELEMENTWISE for x in types):
        return False
    shape = g.tensors[t].shape
    if g.tensors[c.outputs[0]].shape != shape:
        return False
    for x in c.inputs:
        if x == t:
            continue
        tx = g.tensors[x]
        if tx.kind not in ("weight",) and tx.shape != shape:
            return False
    return True


def _fuse_epilogues(g: Graph, log: PassLog, regs: VectorRegisterModel, allow: bool) -> Graph:
    aliases = graph_aliases(g)
    aliased = set(aliases) | {p for p, _ in aliases.values()}
    pos = {n: i for i, n in enumerate(g.ops)}
    absorbed: set[str] = set()
    groups: list[list[str]] = []
    need_of: dict[str, int] = {}  # anchor -> vector registers of its accepted group
    for name, op in g.ops.items():
        if name in absorbed or len(op.outputs) != 1 or op.op_type in VIEW_OPS:
            continue
        if op.op_type == "Concat" or "aliases" in op.attributes or "horizontal" in op.attributes:
            continue
        group = [name]
        cur = op
        while True:
            t = g.tensors[cur.outputs[0]]
            if t.kind == "output" or len(t.consumers) != 1 or t.name in aliased:
                break
            c = g.ops[t.consumers[0]]
            if c.name in absorbed or pos[c.name] <= pos[cur.name]:
                break
            if consumes_partial_result(cur, c):
                log.add("refuse", reason="reduction_boundary", group=list(group), op=c.name,
                        op_type=c.op_type, intermediate=t.name)
                break
            if not _epilogue_ok(g, t.name, c):
                break
            need = regs.registers_of(g, [g.ops[x] for x in group] + [c])
            if need > regs.num_registers:
                spill = need - regs.num_registers
                log.add("refuse", reason="register_pressure", group=list(group), op=c.name,
                        registers=need, limit=regs.num_registers, would_be_spill=spill)
                log.stats["would_be_spills"] = log.stats.get("would_be_spills", 0) + spill
                break
            group.append(c.name)
            need_of[name] = need
            cur = c
        if len(group) > 1:
            groups.append(group)
            absorbed.update(group)
    if not groups:
        return g

    def fused_op(group: list[str]) -> Operator:
        anchor = g.ops[group[0]]
        names, types = _members(anchor)
        inputs = list(anchor.inputs)
        epi = list(anchor.attributes.get("epilogue", []))
        epi_attrs = list(anchor.attributes.get("epilogue_attributes", []))
        prev = anchor.outputs[0]
        for n in group[1:]:
            c = g.ops[n]
            cn, ct = _members(c)
            names += cn
            types += ct
            epi += ct
            epi_attrs.append(dict(c.attributes))
            inputs += [x for x in c.inputs if x != prev]
            prev = c.outputs[0]
        attrs = dict(anchor.attributes)
        has_bias = "folded_bn" in attrs or (anchor.op_type in ("Conv", "Gemm")
                                            and len(anchor.inputs) > 2)
        attrs.update(fused_ops=names, fused_types=types, epilogue=epi,
                     epilogue_attributes=epi_attrs, registers=need_of[group[0]],
                     kernel=kernel_name([anchor.op_type] + epi, has_bias=has_bias))
        return Operator(anchor.name, anchor.op_type, tuple(dict.fromkeys(inputs)),
                        g.ops[group[-1]].outputs, attrs, anchor.macs)

    def place(group: list[str]) -> int:
        """Anchor's step when every extra input exists by then, else the last member's."""
        a = pos[group[0]]
        for n in group[1:]:
            for x in g.ops[n].inputs:
                p = g.tensors[x].producer
                if p is not None and p not in group and pos[p] > a:
                    return pos[group[-1]]
        return a

    def build(chosen: Sequence[list[str]]) -> Graph:
        at = {place(gr): gr for gr in chosen}
        member = {n for gr in chosen for n in gr}
        ops = []
        for i, (n, op) in enumerate(g.ops.items()):
            if i in at:
                ops.append(fused_op(at[i]))
            elif n not in member:
                ops.append(op)
        return rebuild(g, ops)

    # a group placed at its anchor's step extends no input's lifetime, but still produces its
    # last output earlier (larger than the intermediates after a widening Cast): checked together;
    # a group placed at its last member's step keeps the anchor's inputs longer: one at a time
    chosen = accept_without_peak_increase(g, groups, build, log, "epilogue",
                                          risky=lambda gr: place(gr) != pos[gr[0]],
                                          allow_peak_increase=allow)
    if not chosen:
        return g
    for gr in chosen:
        inter = [(g.ops[n].outputs[0], g.tensors[g.ops[n].outputs[0]].nbytes) for n in gr[:-1]]
        sb = sum(saved_bytes(b) for _, b in inter)
        log.add("fuse", ops=list(gr), types=[g.ops[n].op_type for n in gr],
                intermediates=[t for t, _ in inter], steps_eliminated=len(gr) - 1,
                saved_bytes=sb, kernel=fused_op(gr).attributes["kernel"])
        log.stats["saved_bytes"] = log.stats.get("saved_bytes", 0) + sb
    return build(chosen)


def _absorb_prologue(g: Graph, cast: Operator, cons: Operator, need: int) -> Operator:
    """``cons`` with ``cast`` applied on load of the cast's output (see :func:`fuse`)."""
    xq, x = cast.outputs[0], cast.inputs[0]
    inputs = [x if t == xq else t for t in cons.inputs]
    inputs += [t for t in cast.inputs[1:] if t not in inputs]  # scale / zero point
    names, types = _members(cons)
    attrs = dict(cons.attributes)
    rec = {"op": cast.name, "op_type": cast.op_type, "input": x, "replaces": xq,
           "dtype": g.tensors[xq].dtype, "attributes": dict(cast.attributes)}
    kern = str(cons.attributes.get("kernel", cons.op_type.lower()))
    attrs.update(fused_ops=[cast.name] + names, fused_types=[cast.op_type] + types,
                 prologue=[cast.op_type] + list(cons.attributes.get("prologue", [])),
                 prologue_casts=[rec] + list(cons.attributes.get("prologue_casts", [])),
                 registers=need, kernel=f"{cast.op_type.lower()}_{kern}")
    return Operator(cons.name, cons.op_type, tuple(inputs), cons.outputs, attrs, cons.macs)


def _fuse_prologues(g: Graph, log: PassLog, regs: VectorRegisterModel, allow: bool) -> Graph:
    aliases = graph_aliases(g)
    aliased = set(aliases) | {p for p, _ in aliases.values()}
    pos = {n: i for i, n in enumerate(g.ops)}
    need: dict[str, int] = {}  # consumer -> registers with the casts accepted so far
    cands: list[tuple[str, str]] = []  # (cast, consumer) in stored order
    for name, op in g.ops.items():
        if len(op.outputs) != 1 or len(g.tensors[op.outputs[0]].consumers) != 1:
            continue
        cons = g.ops[g.tensors[op.outputs[0]].consumers[0]]
        if (op.outputs[0] in aliased or pos[cons.name] <= pos[name]
                or prologue_refusal(g, op, cons) is not None):
            continue
        if name in need:
            continue  # this cast already absorbs an earlier cast: it stays an operator
        base = need.get(cons.name)
        if base is None:
            base = cons.attributes.get("registers") or regs.registers_of(g, [cons])
        extra = 0
        for t in dict.fromkeys(op.inputs):  # the cast's operand tiles become live values
            if t not in cons.inputs and g.tensors[t].numel > 1:
                extra += regs.registers(np.dtype(g.tensors[t].dtype).itemsize * 8)
        if base + extra > regs.num_registers:
            spill = base + extra - regs.num_registers
            log.add("refuse", reason="register_pressure", group=[name, cons.name], op=name,
                    registers=base + extra, limit=regs.num_registers, would_be_spill=spill)
            log.stats["would_be_spills"] = log.stats.get("would_be_spills", 0) + spill
            continue
        need[cons.name] = base + extra
        cands.append((name, cons.name))
    if not cands:
        return g

    def build(chosen: Sequence[tuple[str, str]]) -> Graph:
        casts = {c for c, _ in chosen}
        new: dict[str, Operator] = {}
        for c, n in chosen:
            cur = new.get(n, g.ops[n])
            r = max(need[n], int(cur.attributes.get("registers") or 0))
            new[n] = _absorb_prologue(g, g.ops[c], cur, r)
        return rebuild(g, [new.get(n, op) for n, op in g.ops.items() if n not in casts])

    def extends(cast: str, cons: str) -> bool:
        """Reading the cast's input at ``cons``'s step makes that activation live longer."""
        x = g.tensors[g.ops[cast].inputs[0]]
        if x.producer is None or x.kind == "output":
            return False  # graph inputs / weights are not activation buffers here
        return max(pos[c] for c in x.consumers) < pos[cons]

    chosen = accept_without_peak_increase(g, cands, build, log, "prologue",
                                          risky=lambda cc: extends(*cc),
                                          allow_peak_increase=allow)
    if not chosen:
        return g
    for c, n in chosen:
        xq = g.tensors[g.ops[c].outputs[0]]
        sb = saved_bytes(xq.nbytes)
        log.add("fuse_prologue", cast=c, op=n, op_type=g.ops[c].op_type, intermediate=xq.name,
                intermediate_bytes=xq.nbytes, steps_eliminated=1, saved_bytes=sb)
        log.stats["saved_bytes"] = log.stats.get("saved_bytes", 0) + sb
    return build(chosen)


def _concat_in_place(g: Graph, log: PassLog, alignment: int, allow: bool) -> Graph:
    def apply(names: set[str] | None, lg: PassLog | None) -> tuple[Graph, list[str]]:
        """Write the Concats in ``names`` (``None``: all) in place; the ones that changed."""
        h = g.copy()
        aliases = graph_aliases(h)
        changed = []
        for op in h.ops.values():
            if op.op_type != "Concat" or len(op.outputs) != 1:
                continue
            if names is not None and op.name not in names:
                continue
            out = h.tensors[op.outputs[0]]
            rank = len(out.shape)
            axis = int(op.attributes.get("axis", 1))
            axis = axis + rank if axis < 0 else axis
            if not 0 <= axis < rank or int(np.prod(out.shape[:axis])) != 1:
                if lg is not None:
                    lg.add("skip", op=op.name,
                           reason=f"axis {axis} of {out.shape} is not outermost")
                continue
            counts = {x: op.inputs.count(x) for x in op.inputs}
            delta = 0
            done = []
            for x in op.inputs:
                t = h.tensors[x]
                ok = (t.producer is not None and t.kind == "activation" and counts[x] == 1
                      and x not in aliases and t.dtype == out.dtype and delta % alignment == 0)
                if ok:
                    add_alias(op, x, out.name, delta)
                    aliases[x] = (out.name, delta)
                    done.append(x)
                delta += t.nbytes
            if delta != out.nbytes:
                op.attributes.pop("aliases", None)
                for x in done:
                    aliases.pop(x, None)
                if lg is not None:
                    lg.add("skip", op=op.name,
                           reason=f"inputs total {delta} bytes, output {out.nbytes}")
                continue
            if done:
                changed.append(op.name)
                full = len(done) == len(op.inputs)
                op.attributes["kernel"] = "concat_in_place" if full else "concat_partial"
                if lg is not None:
                    copied = [x for x in op.inputs if x not in done]
                    sb = sum(saved_bytes(h.tensors[x].nbytes) for x in done)
                    lg.add("concat_in_place", op=op.name, aliased=done, copied=copied,
                           saved_bytes=sb)
                    lg.stats["saved_bytes"] = lg.stats.get("saved_bytes", 0) + sb
        return h, changed

    skips = PassLog(log.name)
    _, cands = apply(None, skips)
    for c in skips.changes:
        if c["action"] == "skip":
            log.add(**c)
    if not cands:
        return g.copy()
    # the concat buffer becomes live at its first aliased input's producer: checked together,
    # one at a time when together they raise the peak
    chosen = accept_without_peak_increase(
        g, cands, lambda ch: apply(set(ch), None)[0], log, "concat_in_place",
        risky=lambda c: False, describe=lambda c: [c], allow_peak_increase=allow)
    return apply(set(chosen), log)[0]


def _horizontal(g: Graph, log: PassLog, allow: bool) -> Graph:
    pos = {n: i for i, n in enumerate(g.ops)}
    groups: list[list[str]] = []
    used: set[str] = set()
    for t in g.tensors.values():
        if t.producer is None and t.kind != "input":
            continue
        by_key: dict[Any, list[str]] = {}
        for c in t.consumers:
            op = g.ops[c]
            if c in used or len(op.outputs) != 1 or op.inputs[:1] != (t.name,):
                continue
            if op.op_type not in ("Conv", "MatMul", "Gemm") or "aliases" in op.attributes:
                continue
            if any(g.tensors[x].kind != "weight" for x in op.inputs[1:]):
                continue
            a = op.attributes
            key = (op.op_type, str(a.get("kernel_shape")), str(a.get("strides")),
                   str(a.get("pads")), str(a.get("group", 1)))
            by_key.setdefault(key, []).append(c)
        for members in by_key.values():
            if len(members) > 1:
                groups.append(sorted(members, key=pos.__getitem__))
                used.update(members)
    if not groups:
        return g

    def build(chosen: list[list[str]]) -> Graph:
        first = {gr[0]: gr for gr in chosen}
        member = {n for gr in chosen for n in gr}
        ops = []
        for n, op in g.ops.items():
            if n in first:
                gr = first[n]
                ms = [g.ops[m] for m in gr]
                inputs = [ms[0].inputs[0]] + [x for m in ms for x in m.inputs[1:]]
                attrs = {"horizontal": list(gr), "members": [dict(m.attributes) for m in ms],
                         "fused_ops": [x for m in ms for x in _members(m)[0]],
                         "fused_types": [x for m in ms for x in _members(m)[1]],
                         "kernel": "horizontal_" + str(ms[0].attributes.get(
                             "kernel", ms[0].op_type.lower()))}
                macs = sum(m.macs or 0 for m in ms) if all(m.macs is not None for m in ms) else None
                ops.append(Operator("+".join(gr), ms[0].op_type, tuple(dict.fromkeys(inputs)),
                                    tuple(o for m in ms for o in m.outputs), attrs, macs))
            elif n not in member:
                ops.append(op)
        return rebuild(g, ops)

    # several outputs live together from the earliest member's step: one group at a time
    chosen = accept_without_peak_increase(g, groups, build, log, "horizontal",
                                          allow_peak_increase=allow)
    for gr in chosen:
        log.add("horizontal", ops=gr, launches_saved=len(gr) - 1, saved_bytes=0)
    return build(chosen) if chosen else g


@param_rules({
    "fold_bn": ["boolean"],
    "epilogues": ["boolean"],
    "prologues": ["boolean"],
    "concat_in_place": ["boolean"],
    "horizontal": ["boolean"],
    "vlen": [Interval(Integral, 1, None, unit="bits")],
    "num_registers": [Interval(Integral, 1, None)],
    "tile_elems": [Interval(Integral, 1, None)],
    "acc_bits": [Interval(Integral, 1, None, unit="bits")],
    "allow_peak_increase": ["boolean"],
    "refuse_peak_increase": ["boolean", None],
    "alignment": [Interval(Integral, 1, None, unit="bytes")],
})
def fuse(
    graph: Graph,
    *,
    fold_bn: bool = True,
    epilogues: bool = True,
    prologues: bool = True,
    concat_in_place: bool = True,
    horizontal: bool = False,
    vlen: int = 128,
    num_registers: int = 32,
    tile_elems: int = 16,
    acc_bits: int = 32,
    allow_peak_increase: bool = False,
    refuse_peak_increase: bool | None = None,
    alignment: int = 1,
) -> tuple[Graph, PassLog]:
    """The fusion pass (module docstring).

    Parameters
    ----------
    graph : Graph
    fold_bn, epilogues, prologues, concat_in_place, horizontal : bool
        Named switches for the five fusions (horizontal fusion is off by default: it often raises
        the peak, see the log's ``refuse`` records with ``reason="raises_peak"``).
    vlen, num_registers, tile_elems, acc_bits : int
        The :class:`~.legality.VectorRegisterModel` (VLEN bits, registers, tile elements,
        accumulator bits).
    allow_peak_increase : bool
        ``False`` (default): a fusion of any pattern that would raise the peak of live bytes of
        the graph under its stored order is refused and logged (``refuse``,
        ``reason="raises_peak"``, ``fusion``, ``group``, ``peak_before`` and ``peak_after`` in
        bytes); the fused graph's peak is at most the input's
        (:func:`~.legality.accept_without_peak_increase`). ``True``: such fusions are applied
        and logged as ``raises_peak`` (``refused=False``).
    refuse_peak_increase : bool, optional
        Former name: ``refuse_peak_increase=False`` means ``allow_peak_increase=True``.
    alignment : int
        Concat slice offsets must be multiples of it (bytes) to be written in place.

    Returns
    -------
    (Graph, PassLog)
        The fused graph (a valid DAG; input untouched) and the log (``stats["saved_bytes"]``
        total, ``stats["would_be_spills"]``, actions ``fold_bn``, ``fuse``, ``fuse_prologue``,
        ``refuse``, ``concat_in_place``, ``horizontal``, ``raises_peak``).

    Raises
    ------
    ParameterError
        A parameter its rules (declared above the function) do not allow.
    GraphError
        Only on an internal fault: the fused graph's peak exceeds the input's although no
        increase was allowed (never silently returned).

    Examples
    --------
    Two MatMul + ReduceSum branches joined by an Add: fusing ``ReduceSum + Add`` places the
    fused operator at the Add, which keeps the first MatMul's 1024-byte output alive next to
    the second's, so it is refused by default:

    >>> from scheduling.graph import Graph
    >>> g = Graph("two_branches")
    >>> _ = g.add_tensor("x", (1, 16), kind="input")
    >>> for k in "12":
    ...     _ = g.add_tensor(f"w{k}", (16, 256), kind="weight")
    ...     _ = g.add_tensor(f"m{k}", (1, 256))
    ...     _ = g.add_tensor(f"r{k}", (1, 1))
    ...     _ = g.add_op(f"mm{k}", "MatMul", [f"x", f"w{k}"], [f"m{k}"])
    ...     _ = g.add_op(f"rs{k}", "ReduceSum", [f"m{k}"], [f"r{k}"])
    >>> _ = g.add_tensor("y", (1, 1))
    >>> _ = g.add_op("add", "Add", ["r1", "r2"], ["y"])
    >>> g.mark_output("y")
    >>> g2, log = fuse(g)
    >>> [(c["group"], c["peak_before"], c["peak_after"]) for c in log.changes
    ...  if c.get("reason") == "raises_peak"]
    [(['rs1', 'add'], 1032, 2052)]
    >>> transformed_peak(g2), transformed_peak(fuse(g, allow_peak_increase=True)[0])
    (1032, 2052)
    """
    allow = bool(allow_peak_increase)
    if refuse_peak_increase is not None:
        allow = not refuse_peak_increase
    log = PassLog("fuse")
    log.stats["saved_bytes"] = 0
    log.stats["would_be_spills"] = 0
    regs = VectorRegisterModel(vlen, num_registers, tile_elems, acc_bits)
    g = graph
    if fold_bn:
        g = _fold_bn(g, log, allow)
    if epilogues:
        g = _fuse_epilogues(g, log, regs, allow)
    if prologues:
        g = _fuse_prologues(g, log, regs, allow)
    if concat_in_place:
        g = _concat_in_place(g, log, alignment, allow)
    if horizontal:
        g = _horizontal(g, log, allow)
    if g is graph:
        g = graph.copy()
    before, after = transformed_peak(graph), transformed_peak(g)
    if after > before and not allow:  # each step above guarantees it; a wrong number is worse
        raise GraphError(f"graph {graph.name!r}: fusion raised the peak from {before} to {after} "
                         "bytes although no increase was allowed (a fault in the fusion pass)")
    log.stats["peak_before"], log.stats["peak_after"] = before, after
    return g, log
