"""A seeded generator of small TFLite models for the TFLite Micro differential test.

:func:`generate_model` turns a seed into a ``.tflite`` flatbuffer (written with
:func:`experiments.runtimes.tflm.writer.write_tflite`) that the ``tflite-micro`` interpreter
builds and invokes with every input zero, unless a kernel-limit feature of :data:`REFUSED` makes
it refuse the model. The same seed always gives the same bytes. A model mixes:

* a dtype: float32, or int8 with per-tensor quantisation (scale, zero point) on every tensor
  (int32 bias with scale ``input x weight`` for ``FULLY_CONNECTED``);
* shapes of rank 0 (scalars) to 5, at most 48 elements;
* a random DAG of operators TFLite Micro ships (``python_ops_resolver.cc`` of the
  ``tflite-micro`` package): ``ADD``, ``SUB``, ``MUL``, ``MAXIMUM``, ``MINIMUM``, ``RELU``,
  ``RELU6``, ``TANH`` / ``LOGISTIC`` / ``ABS`` (float), ``RESHAPE`` (with and without a shape
  tensor), ``CONCATENATION``, ``FULLY_CONNECTED``; on about a third of the seeds (tagged
  ``add_only``) only ``ADD`` with ``IF`` / ``CALL_ONCE``, the kernels whose persistent
  allocations memplan's arena model covers, so that ``runtime_arena`` comes from the model;
* constants (tensors with buffer data, some broadcast against the other operand), operators
  whose inputs are all constant, variables (``is_variable``, with and without initial data, read
  by operators and written by them), operator outputs nothing reads, tensors no operator
  touches, graph inputs nothing reads;
* control flow: ``IF`` (condition a zero graph input, a constant, or computed by ``LESS`` from
  constants), ``WHILE`` (an int32 counter from a zero input or a constant, counting to 1-3: the
  loop always terminates), ``CALL_ONCE`` (an initialisation subgraph of constant arithmetic);
  with some probability a second ``IF`` / ``WHILE`` / ``CALL_ONCE`` calls the same subgraphs
  (shared callees), and an ``IF`` branch has an ``IF`` of its own (nested, up to 3 levels).

:func:`model_tags` names the features a seed's model has (the differential test groups
failures by them). On about a third of the seeds, one or two operators at a kernel's limit are
appended (:func:`_limits`; :data:`REFUSED` names those the interpreter refuses at every arena
size). :func:`kernel_variant_specs` enumerates single-operator models at the limits of every
kernel the arena model covers (types, quantisation, arity, shapes, options). ``python -m experiments.runtimes.tflm.generate --models N --seed S --out DIR``
writes ``N`` models.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["TAGS", "REFUSED", "ACCEPTED_LIMITS", "VARIANT_KERNELS", "VARIANT_TYPES", "VARIANTS",
           "kernel_variant_specs", "model_spec", "model_tags", "generate_model", "write_models", "main"]

#: Every feature tag :func:`model_tags` can report.
TAGS = ("float32", "int8", "scalar", "rank5", "const", "const_op", "variable", "unread",
        "untouched", "unused_input", "if", "if_shared", "while", "while_shared", "call_once",
        "call_once_shared", "reshape", "concat", "fully_connected", "add_only", "broadcast",
        "variable_out", "nested", "concat_many", "concat_over_limit", "concat_rank7",
        "concat_act", "concat_requant", "zero_dim_op", "zero_dim_reshape", "zero_dim_input",
        "zero_dim_concat", "mul3", "custom", "dequantize_f16")

#: The tags of :func:`_limits` features that the interpreter refuses at every arena size, each
#: with the TFLM check that refuses it (the differential test expects no number and the
#: interpreter's reason quoted there).
REFUSED = {
    "concat_over_limit": "concatenation.cc: num_inputs <= kMaxInputNum (10)",
    "concat_rank7": "concatenation.cc: num dimensions > kMaxSmallSize (6)",
    "concat_act": "concatenation.cc: params->activation == kTfLiteActNone",
    "concat_requant": "concatenation.cc: int8 input scale == output scale",
    "zero_dim_op": "micro_interpreter_graph.cc CheckDynamicTensors (a dimension <= 0)",
    "zero_dim_reshape": "micro_interpreter_graph.cc CheckDynamicTensors after RESHAPE's Prepare",
    "mul3": "mul_common.cc: NumInputs(node) == 2",
    "custom": "an operator without a registration (CUSTOM, not in the op resolver)",
    "dequantize_f16": "dequantize_common.cc: input type int8, int16 or uint8",
}
#: The :func:`_limits` features the interpreter accepts (limits that are not refusals).
ACCEPTED_LIMITS = ("concat_many", "zero_dim_input", "zero_dim_concat")

_MAX_ELEMS = 48


def _tt():
    import tflite

    return tflite.TensorType


class _Sub:
    """One subgraph under construction: tensors (with extras), ops, inputs, outputs, and a pool
    of tensors operators may read ``(index, shape, qparams)``."""

    def __init__(self, rng: np.random.Generator, dtype: str, tags: set) -> None:
        self.rng, self.dtype, self.tags = rng, dtype, tags
        self.tensors: list = []
        self.ops: list = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.pool: list[tuple[int, tuple, tuple | None]] = []
        self.read: set[int] = set()
        self.produced: list[int] = []

    # -- tensors --------------------------------------------------------------------------
    def qparams(self) -> tuple | None:
        if self.dtype != "int8":
            return None
        return (float(self.rng.choice([0.02, 0.05, 0.1, 0.25])), int(self.rng.integers(-8, 9)))

    def tensor(self, shape, ttype=None, q=None, data=None, variable=False) -> int:
        tt = _tt()
        ttype = ttype if ttype is not None else (tt.INT8 if self.dtype == "int8" else tt.FLOAT32)
        extra = {}
        if q is not None:
            extra["quant"] = ([q[0]], [q[1]])
        if data is not None:
            extra["data"] = data
        if variable:
            extra["variable"] = True
        self.tensors.append((f"t{len(self.tensors)}", list(shape), ttype, extra))
        return len(self.tensors) - 1

    def act(self, shape, q="new") -> tuple[int, tuple, tuple | None]:
        """A new activation tensor (no data) of ``shape`` in the model's dtype."""
        q = self.qparams() if q == "new" else q
        return self.tensor(shape, q=q), tuple(shape), q

    def const(self, shape, q="new", variable=False, data=True) -> tuple[int, tuple, tuple | None]:
        """A constant (or, with ``variable``, an ``is_variable`` tensor) of ``shape``."""
        q = self.qparams() if q == "new" else q
        n = math.prod(shape)
        raw = None
        if data:
            if self.dtype == "int8":
                raw = self.rng.integers(-6, 7, size=n).astype(np.int8).tobytes()
            else:
                raw = (self.rng.standard_normal(n) * 0.5).astype("<f4").tobytes()
        self.tags.add("variable" if variable else "const")
        return self.tensor(shape, q=q, data=raw, variable=variable), tuple(shape), q

    # -- operators ------------------------------------------------------------------------
    def op(self, name, ins, outs, opts=None) -> None:
        self.ops.append((name, list(ins), list(outs), opts))
        self.read.update(i for i in ins if i >= 0)
        self.produced.extend(outs)

    def pick(self, shape=None, q=None):
        cands = [p for p in self.pool if (shape is None or p[1] == shape)
                 and (q is None or p[2] == q)]
        return cands[int(self.rng.integers(len(cands)))] if cands else None

    def operand(self, like):
        """A second operand of ``like``'s shape: a pool tensor, a constant or a variable."""
        r = self.rng.random()
        if r < 0.45:
            other = self.pick(like[1])
            if other is not None:
                return other
        if r < 0.85:
            return self.const(like[1])
        return self.const(like[1], variable=True, data=bool(self.rng.random() < 0.5))

    def random_op(self, allow_shape_change: bool = True) -> tuple | None:
        """Append one random data operator reading the pool; its output joins the pool (or, for
        an unread output, does not). Returns the output entry."""
        rng, f32 = self.rng, self.dtype == "float32"
        kinds = ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "RELU", "RELU6"]
        if f32:
            kinds += ["TANH", "LOGISTIC", "ABS"]
        if allow_shape_change:
            kinds += ["RESHAPE", "CONCATENATION", "FULLY_CONNECTED"]
        if "add_only" in self.tags:
            kinds = ["ADD"]
        kind = kinds[int(rng.integers(len(kinds)))]
        if rng.random() < 0.12 and kind in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"):
            shape = tuple(_shape(rng, int(rng.integers(0, 4))))
            a = self.const(shape)  # an operator whose inputs are all constant
            b = self.const(shape)
            self.tags.add("const_op")
        else:
            a = self.pick()
            if a is None:
                return None
            b = None
        shape, q = a[1], a[2]
        if kind in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"):
            if b is None and shape and rng.random() < 0.2:  # a broadcast constant
                keep = int(rng.integers(1, len(shape) + 1))
                bshape = tuple(d if rng.random() < 0.5 else 1 for d in shape[len(shape) - keep:])
                b = self.const(bshape)
                self.tags.add("broadcast")
            b = b or self.operand(a)
            out = self.act(shape, q if kind in ("MAXIMUM", "MINIMUM") else "new")
            opts = {"ADD": ("AddOptions", {}), "SUB": ("SubOptions", {}),
                    "MUL": ("MulOptions", {})}.get(kind)
            self.op(kind, [a[0], b[0]], [out[0]], opts)
        elif kind in ("RELU", "RELU6", "TANH", "LOGISTIC", "ABS"):
            if rng.random() < 0.1:  # an operator that writes a variable tensor (state)
                out = (self.tensor(shape, q=q, variable=True), shape, q)
                self.tags.add("variable_out")
            else:
                out = self.act(shape, q)
            self.op(kind, [a[0]], [out[0]])
        elif kind == "RESHAPE":
            n = math.prod(shape)
            new = tuple(_factor(rng, n, int(rng.integers(0 if n == 1 else 1, 6))))
            out = self.act(new, q)
            self.tags.add("reshape")
            if rng.random() < 0.5 and new:
                sh = self.tensor([len(new)], _tt().INT32,
                                 data=np.array(new, dtype="<i4").tobytes())
                self.op("RESHAPE", [a[0], sh], [out[0]])
            else:
                self.op("RESHAPE", [a[0]], [out[0]], ("ReshapeOptions", {"NewShape": list(new)}))
        elif kind == "CONCATENATION":
            if not shape or 2 * math.prod(shape) > _MAX_ELEMS:
                return None
            other = self.pick(shape, q) if rng.random() < 0.5 else None
            b = other or self.const(shape, q)
            axis = int(rng.integers(len(shape)))
            new = list(shape)
            new[axis] *= 2
            out = self.act(new, q)
            self.tags.add("concat")
            self.op("CONCATENATION", [a[0], b[0]], [out[0]],
                    ("ConcatenationOptions", {"Axis": axis}))
        else:  # FULLY_CONNECTED: weights [units, n], optional bias [units], output [1, units]
            n, units = math.prod(shape), int(rng.integers(1, 9))
            tt = _tt()
            if f32:
                w = self.const((units, n))
                bias = self.const((units,))[0] if rng.random() < 0.6 else -1
            else:
                wq = (float(rng.choice([0.01, 0.02, 0.05])), 0)
                w = self.const((units, n), wq)
                bias = -1
                if rng.random() < 0.6:
                    bq = (q[0] * wq[0], 0)
                    bias = self.tensor([units], tt.INT32, q=bq, data=rng.integers(
                        -50, 51, size=units).astype("<i4").tobytes())
            out = self.act((1, units))
            self.tags.add("fully_connected")
            self.op("FULLY_CONNECTED", [a[0], w[0], bias], [out[0]],
                    ("FullyConnectedOptions", {}))
        if rng.random() < 0.12:
            self.tags.add("unread")  # nothing will read this output
        else:
            self.pool.append(out)
        return out

    def spec(self) -> dict:
        return {"tensors": self.tensors, "inputs": self.inputs, "outputs": self.outputs,
                "ops": self.ops}


def _shape(rng: np.random.Generator, rank: int) -> list[int]:
    dims = []
    for _ in range(rank):
        room = _MAX_ELEMS // max(1, math.prod(dims))
        dims.append(int(rng.integers(1, min(4, room) + 1)))
    return dims


def _factor(rng: np.random.Generator, n: int, rank: int) -> list[int]:
    """A random shape of ``rank`` (0 only when ``n == 1``) with ``n`` elements."""
    if rank == 0:
        return []
    dims = []
    for _ in range(rank - 1):
        divs = [d for d in range(1, n + 1) if n % d == 0]
        d = divs[int(rng.integers(len(divs)))]
        dims.append(d)
        n //= d
    dims.append(n)
    return dims


def model_spec(seed: int) -> tuple[list[dict], set[str]]:
    """The subgraphs (the ``write_tflite`` format) and the feature tags of seed ``seed``'s
    model. Deterministic per seed (``numpy.random.default_rng(seed)``)."""
    tt = _tt()
    rng = np.random.default_rng(seed)
    tags: set[str] = set()
    dtype = "int8" if rng.random() < 0.35 else "float32"
    tags.add(dtype)
    if rng.random() < 0.35:  # only kernels memplan's arena model covers (ADD, IF, CALL_ONCE)
        tags.add("add_only")
    rank = int(rng.choice([0, 1, 2, 3, 4, 5], p=[0.12, 0.2, 0.22, 0.2, 0.14, 0.12]))
    base = tuple(_shape(rng, rank))
    if rank == 0:
        tags.add("scalar")
    if rank == 5:
        tags.add("rank5")
    subs: list = [None]  # subgraph 0 filled at the end
    main = _Sub(rng, dtype, tags)
    for _ in range(int(rng.integers(1, 3))):
        x = main.act(base)
        main.inputs.append(x[0])
        main.pool.append(x)
    if rng.random() < 0.2:
        u = main.act(_shape(rng, int(rng.integers(0, 4))))
        main.inputs.append(u[0])
        tags.add("unused_input")

    callees: dict[str, tuple] = {}

    def branch(ins: list[tuple], depth: int = 1) -> int:
        """A subgraph reading tensors like ``ins`` and writing one of ``ins[0]``'s shape;
        perhaps with an ``IF`` of its own (nested control flow, at most 3 levels)."""
        s = _Sub(rng, dtype, tags)
        for x in ins:
            t = s.act(x[1], x[2])
            s.inputs.append(t[0])
            s.pool.append(t)
        for _ in range(int(rng.integers(1, 4))):
            s.random_op(allow_shape_change=False)
        if depth < 3 and rng.random() < 0.25:
            x = s.pick()
            c = s.tensor([1], tt.BOOL, data=bytes([int(rng.random() < 0.5)]))
            then_i, else_i = branch([x], depth + 1), branch([x], depth + 1)
            then = subs[then_i]
            out_q = then["tensors"][then["outputs"][0]][3].get("quant")
            out = s.act(x[1], None if out_q is None else (out_q[0][0], out_q[1][0]))
            s.op("IF", [c, x[0]], [out[0]], ("IfOptions", {"ThenSubgraphIndex": then_i,
                                                            "ElseSubgraphIndex": else_i}))
            s.pool.append(out)
            tags.add("nested")
        done = [p for p in s.pool if p[0] in s.produced and p[1] == ins[0][1]]
        if done:
            a = done[-1]
        else:
            x0 = s.pool[0]
            b = s.operand(x0)
            a = s.act(x0[1], "new")
            s.op("ADD", [x0[0], b[0]], [a[0]], ("AddOptions", {}))
        s.outputs.append(a[0])
        subs.append(s.spec())
        return len(subs) - 1

    def operand(kind: str) -> tuple[tuple, bool]:
        """The operand of a new ``kind`` (IF/WHILE) operator -- often one shaped like the first
        such operator's, so its callees can be shared -- and whether they are shared."""
        x = main.pick()
        if kind in callees and rng.random() < 0.7:
            x = main.pick(callees[kind][2]) or x
        return x, kind in callees and callees[kind][2] == x[1]

    def control(kind: str) -> None:
        if kind == "IF":
            x, shared = operand("IF")
            if shared:
                then_i, else_i, _ = callees["IF"]
                tags.add("if_shared")
            else:
                then_i = branch([x])
                else_i = branch([x])
                callees.setdefault("IF", (then_i, else_i, x[1]))
            how = rng.random() * (0.7 if "add_only" in tags else 1.0)
            if how < 0.4:
                c = main.tensor([1], tt.BOOL)
                main.inputs.insert(0, c)
            elif how < 0.7:
                c = main.tensor([1], tt.BOOL, data=bytes([int(rng.random() < 0.5)]))
                tags.add("const")
            else:
                k = [main.tensor([1], tt.FLOAT32, data=np.array([rng.standard_normal()],
                                                                 "<f4").tobytes())
                     for _ in range(2)]
                c = main.tensor([1], tt.BOOL)
                main.op("LESS", k, [c])
                tags.update({"const", "const_op"})
            then = subs[then_i]
            out_q = then["tensors"][then["outputs"][0]][3].get("quant")
            out = main.act(x[1], None if out_q is None else (out_q[0][0], out_q[1][0]))
            main.op("IF", [c, x[0]], [out[0]], ("IfOptions", {"ThenSubgraphIndex": then_i,
                                                               "ElseSubgraphIndex": else_i}))
            tags.add("if")
            main.pool.append(out)
        elif kind == "WHILE":
            x, shared = operand("WHILE")
            if shared:
                cond_i, body_i, _ = callees["WHILE"]
                tags.add("while_shared")
            else:
                limit = int(rng.integers(1, 4))
                c = _Sub(rng, dtype, tags)
                ci, cx = c.tensor([], tt.INT32), c.act(x[1], x[2])
                lim = c.tensor([], tt.INT32, data=np.array([limit], "<i4").tobytes())
                cb = c.tensor([], tt.BOOL)
                c.op("LESS", [ci, lim], [cb])
                c.inputs, c.outputs = [ci, cx[0]], [cb]
                subs.append(c.spec())
                cond_i = len(subs) - 1
                b = _Sub(rng, dtype, tags)
                bi, bx = b.tensor([], tt.INT32), b.act(x[1], x[2])
                one = b.tensor([], tt.INT32, data=np.array([1], "<i4").tobytes())
                bi2 = b.tensor([], tt.INT32)
                b.op("ADD", [bi, one], [bi2])
                b.pool.append(bx)
                if x[2] is None:
                    y = b.act(x[1], None)
                    b.op(["RELU", "TANH", "ABS"][int(rng.integers(3))], [bx[0]], [y[0]])
                else:
                    y = b.act(x[1], x[2])
                    if rng.random() < 0.5:
                        b.op("RELU", [bx[0]], [y[0]])
                    else:
                        b.op("MAXIMUM", [bx[0], b.const(x[1], x[2])[0]], [y[0]])
                b.inputs, b.outputs = [bi, bx[0]], [bi2, y[0]]
                subs.append(b.spec())
                body_i = len(subs) - 1
                callees.setdefault("WHILE", (cond_i, body_i, x[1]))
            if rng.random() < 0.5:
                i0 = main.tensor([], tt.INT32)
                main.inputs.append(i0)
            else:
                i0 = main.tensor([], tt.INT32, data=np.array([0], "<i4").tobytes())
                tags.add("const")
            i_out = main.tensor([], tt.INT32)
            out = main.act(x[1], x[2])
            main.op("WHILE", [i0, x[0]], [i_out, out[0]],
                    ("WhileOptions", {"CondSubgraphIndex": cond_i, "BodySubgraphIndex": body_i}))
            tags.add("while")
            main.pool.append(out)
        else:  # CALL_ONCE
            if "CALL_ONCE" in callees and rng.random() < 0.6:
                init_i = callees["CALL_ONCE"]
                tags.add("call_once_shared")
            else:
                s = _Sub(rng, dtype, tags)
                shape = tuple(_shape(rng, int(rng.integers(0, 4))))
                a, b = s.const(shape), s.const(shape)
                o = s.act(shape, "new")
                s.op("ADD", [a[0], b[0]], [o[0]])
                s.pool.append(o)
                if rng.random() < 0.5:
                    s.random_op(allow_shape_change=False)
                tags.add("const_op")
                subs.append(s.spec())
                init_i = len(subs) - 1
                callees["CALL_ONCE"] = init_i
            main.op("CALL_ONCE", [], [], ("CallOnceOptions", {"InitSubgraphIndex": init_i}))
            tags.add("call_once")

    steps = int(rng.integers(2, 9))
    flow = [k for k, pr in (("IF", 0.3), ("WHILE", 0.25), ("CALL_ONCE", 0.2)) if rng.random() < pr
            and not (k == "WHILE" and "add_only" in tags)]
    flow += [k for k in flow if rng.random() < 0.5]  # a second call, perhaps of the same callee
    where = {int(rng.integers(steps + 1)): k for k in flow}
    for step in range(steps + 1):
        if step in where:
            control(where[step])
        if step < steps:
            main.random_op()
    # graph outputs: the last written tensor, perhaps another
    written = [p for p in main.pool if p[0] in main.produced]
    if not written:
        out = main.act(main.pool[0][1], "new")
        main.op("ADD", [main.pool[0][0], main.operand(main.pool[0])[0]], [out[0]])
        written = [out]
    main.outputs.append(written[-1][0])
    if len(written) > 1 and rng.random() < 0.4:
        extra = written[int(rng.integers(len(written) - 1))][0]
        if extra not in main.outputs:
            main.outputs.append(extra)
    if rng.random() < 0.15:
        main.act(_shape(rng, int(rng.integers(0, 4))))  # a tensor no operator touches
        tags.add("untouched")
    if any(o not in main.read and o not in main.outputs
           for (_, _, outs, _) in main.ops for o in outs):
        tags.add("unread")
    _limits(main, np.random.default_rng([seed, 4]), tags)
    subs[0] = main.spec()
    return subs, tags


def _one_of(rng: np.random.Generator, shapes: list) -> list[int]:
    return list(shapes[int(rng.integers(len(shapes)))])


def _limits(main: _Sub, rng: np.random.Generator, tags: set) -> None:
    """On about a third of the seeds, append to the main subgraph one or two operators at a
    kernel's limit (from their own random stream, so the rest of the model is the seed's model
    without them), each output a graph output: CONCATENATION of 6-13 inputs (over
    ``kMaxInputNum`` = 10 from 11), of rank-7 tensors, with a fused activation, of int8 inputs
    whose scale differs from the output's; tensors with a zero-size dimension (an operator's
    output, a RESHAPE's output, an unused graph input, an empty CONCATENATION input); MUL with
    three inputs, an unregistered CUSTOM operator, a float16 DEQUANTIZE. :data:`REFUSED` names
    those the interpreter refuses."""
    if rng.random() >= 0.35:
        return
    tt = _tt()
    main.rng, seed_rng = rng, main.rng  # every draw below from the features' own stream
    kinds = ["concat_many", "concat_many", "zero_dim_op", "zero_dim_reshape", "zero_dim_input",
             "zero_dim_concat", "concat_rank7", "concat_act", "concat_requant", "mul3", "custom",
             "dequantize_f16"]
    for _ in range(1 + int(rng.random() < 0.25)):
        kind = kinds[int(rng.integers(len(kinds)))]
        if kind == "concat_requant" and main.dtype != "int8":
            kind = "concat_act"
        q = main.qparams()
        if kind == "concat_many":
            k = int(rng.integers(6, 14))
            shape = _one_of(rng, [[2], [1, 2], [2, 1], [1, 1, 2], [1]])
            src = main.pick(tuple(shape))
            first = src if src is not None and src[2] == q else main.act(shape, q)
            if first is not src:
                main.inputs.append(first[0])
            ins = [first[0] if rng.random() < 0.3 else main.const(shape, q)[0]
                   for _ in range(k - 1)]
            axis = int(rng.integers(len(shape)))
            out_shape = list(shape)
            out_shape[axis] *= k
            out = main.act(out_shape, q)
            main.op("CONCATENATION", [first[0], *ins], [out[0]],
                    ("ConcatenationOptions", {"Axis": axis}))
            tags.update({"concat_many"} | ({"concat_over_limit"} if k > 10 else set()))
        elif kind in ("concat_rank7", "concat_act", "concat_requant"):
            shape = [1, 1, 1, 1, 1, 1, 2] if kind == "concat_rank7" else [1, 2]
            a = main.act(shape, q)
            main.inputs.append(a[0])
            bq = q
            if kind == "concat_requant":
                bq = (q[0] * 2, q[1])
            b = main.const(shape, bq)
            out = main.act(shape[:-1] + [4], q)
            opts = {"Axis": len(shape) - 1}
            if kind == "concat_act":
                opts["FusedActivationFunction"] = 1  # ActivationFunctionType.RELU
            main.op("CONCATENATION", [a[0], b[0]], [out[0]], ("ConcatenationOptions", opts))
            tags.add(kind)
        elif kind == "zero_dim_op":
            shape = _one_of(rng, [[2, 0], [0, 1], [0, 3], [1, 0, 2]])  # not [0]: TFLM's legacy
            # scalar shape, which CheckDynamicTensors lets through
            a = main.act(shape, q)
            main.inputs.append(a[0])
            out = main.act(shape, q)
            if rng.random() < 0.5:
                main.op("RELU", [a[0]], [out[0]])
            else:
                main.op("ADD", [a[0], a[0]], [out[0]], ("AddOptions", {}))
            tags.add(kind)
        elif kind == "zero_dim_reshape":
            a = main.act([2, 0], q)
            main.inputs.append(a[0])
            out = main.act([0, 2], q)
            main.op("RESHAPE", [a[0]], [out[0]], ("ReshapeOptions", {"NewShape": [0, 2]}))
            tags.add(kind)
        elif kind == "zero_dim_input":
            main.inputs.append(main.act(_one_of(rng, [[0], [2, 0], [0, 4]]))[0])
            tags.add(kind)
            continue
        elif kind == "zero_dim_concat":
            shape = [1, 2]
            src = main.pick(tuple(shape))
            a = src if src is not None and src[2] == q else main.act(shape, q)
            if a is not src:
                main.inputs.append(a[0])
            e = main.act([1, 0], q)
            main.inputs.append(e[0])
            out = main.act(shape, q)
            main.op("CONCATENATION", [e[0], a[0]] if rng.random() < 0.5 else [a[0], e[0]],
                    [out[0]], ("ConcatenationOptions", {"Axis": 1}))
            tags.add(kind)
        elif kind == "mul3":
            xs = [main.act([2], q) for _ in range(3)]
            main.inputs.extend(x[0] for x in xs)
            out = main.act([2])
            main.op("MUL", [x[0] for x in xs], [out[0]], ("MulOptions", {}))
            tags.add(kind)
        elif kind == "custom":
            a = main.act([2], q)
            main.inputs.append(a[0])
            out = main.act([2], q)
            main.op("CUSTOM:MemplanUnregistered", [a[0]], [out[0]])
            tags.add(kind)
        else:  # dequantize_f16
            a = main.tensor([4], tt.FLOAT16)
            main.inputs.append(a)
            out = main.tensor([4], tt.FLOAT32)
            main.op("DEQUANTIZE", [a], [out])
            tags.add(kind)
        main.outputs.append(out[0] if isinstance(out, tuple) else out)
    main.rng = seed_rng


def model_tags(seed: int) -> list[str]:
    """The sorted feature tags (:data:`TAGS`) of seed ``seed``'s model."""
    return sorted(model_spec(seed)[1])


def generate_model(seed: int, path: str | Path | None = None) -> bytes | Path:
    """The ``.tflite`` model of ``seed``: its bytes, or, with ``path``, written there (the path
    is returned). Deterministic: the same seed gives the same bytes."""
    from experiments.runtimes.tflm.writer import write_tflite

    subs, _ = model_spec(int(seed))
    if path is not None:
        return write_tflite(Path(path), subs)
    with tempfile.TemporaryDirectory() as d:
        return write_tflite(Path(d) / "m.tflite", subs).read_bytes()


def write_models(n: int, seed: int, folder: str | Path) -> dict[str, Path]:
    """Write the models of seeds ``seed .. seed + n - 1`` into ``folder`` as ``gNNNNN.tflite``;
    returns ``{name: path}``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {f"g{s:05d}": generate_model(s, folder / f"g{s:05d}.tflite")
            for s in range(seed, seed + n)}


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--models N --seed S --out DIR``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/tflm_generated")
    args = ap.parse_args(argv)
    paths = write_models(args.models, args.seed, args.out)
    print(f"wrote {len(paths)} models into {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# -- single-operator variants at the kernels' limits ---------------------------------------------

#: The kernels of :func:`kernel_variant_specs` (every data kernel memplan's arena model covers).
VARIANT_KERNELS = ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "RELU", "RELU6", "TANH",
                   "LOGISTIC", "ABS", "LESS", "CONCATENATION", "RESHAPE", "FULLY_CONNECTED")
#: Tensor type and quantisation of the variants: float32; int8 per tensor with zero point 0 or
#: 3; int8 without quantisation; int32 without and with quantisation; int16 per tensor.
VARIANT_TYPES = ("f32", "i8", "i8_zp3", "i8_noquant", "i32", "i32_quant", "i16")
#: How a variant departs from the plain operator on ``[2, 3]`` tensors.
VARIANTS = ("plain", "broadcast", "bad_broadcast", "rank7", "output_type", "output_shape",
            "zero_dim_input", "zero_dim_output", "fused_relu", "extra_input", "axis_negative",
            "axis_out_of_range", "eleven_inputs")

_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions",
            "CONCATENATION": "ConcatenationOptions", "FULLY_CONNECTED": "FullyConnectedOptions"}


def kernel_variant_specs() -> list[tuple[str, list, list[str]]]:
    """Single-operator models at the limits of every kernel of :data:`VARIANT_KERNELS`, for
    each :data:`VARIANT_TYPES` and :data:`VARIANTS` (the combinations that apply).

    Returns
    -------
    list of (str, list, list of str)
        ``(name, subgraphs in the :func:`experiments.runtimes.tflm.writer.write_tflite` format,
        tags)``: 840 models, deterministic (no randomness), named ``kernel.type.variant``,
        tagged with the kernel, the type and the variant. Many are refused by the interpreter (a
        kernel's check, a dynamic tensor, a crash at ``Invoke``); the differential test
        (:func:`experiments.runtimes.tflm.differential.run_kernel_variants`) expects memplan to
        give a number exactly where the interpreter runs the model, equal to its bisected
        minimum (bytes), and the interpreter's reason elsewhere.
    """
    tt = _tt()
    out = []
    for op in VARIANT_KERNELS:
        for ty in VARIANT_TYPES:
            for var in VARIANTS:
                spec = _variant(op, ty, var, tt)
                if spec is not None:
                    out.append((f"{op.lower()}.{ty}.{var}", [spec], [op, ty, var]))
    return out


def _variant(op: str, ty: str, var: str, tt) -> dict | None:
    """One single-operator model (see :func:`kernel_variant_specs`), ``None`` where ``var``
    does not apply to ``op``."""
    unary = op in ("RELU", "RELU6", "TANH", "LOGISTIC", "ABS")
    binary = op in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "LESS")
    if var in ("axis_negative", "axis_out_of_range", "eleven_inputs") and op != "CONCATENATION":
        return None
    if var == "fused_relu" and op not in _OPTIONS:
        return None
    if var in ("broadcast", "bad_broadcast") and not (binary or op == "CONCATENATION"):
        return None
    ttype = {"f32": tt.FLOAT32, "i8": tt.INT8, "i8_zp3": tt.INT8, "i8_noquant": tt.INT8,
             "i32": tt.INT32, "i32_quant": tt.INT32, "i16": tt.INT16}[ty]
    quant = {"i8": ([0.05], [0]), "i8_zp3": ([0.05], [3]), "i32_quant": ([0.05], [0]),
             "i16": ([0.05], [0])}.get(ty)
    tensors: list = []

    def tensor(shape, ttype=ttype, q="same", data=False):
        extra = {}
        qq = quant if q == "same" else q
        if qq is not None:
            extra["quant"] = qq
        if data:
            extra["data"] = bytes(math.prod(shape) * (4 if ttype in (tt.FLOAT32, tt.INT32)
                                                      else 2 if ttype == tt.INT16 else 1))
        tensors.append((f"t{len(tensors)}", list(shape), ttype, extra))
        return len(tensors) - 1

    a_shape = [1, 1, 1, 1, 1, 2, 3] if var == "rank7" else [2, 0] if var == "zero_dim_input" \
        else [2, 3]
    b_shape = {"broadcast": [3], "bad_broadcast": [2]}.get(var, a_shape)
    n_in = 11 if var == "eleven_inputs" else 3 if var == "extra_input" and binary else 2
    if unary:
        n_in = 2 if var == "extra_input" else 1
    ins = [tensor(a_shape)]
    opts: dict = {}
    if binary or unary:
        ins += [tensor(b_shape) for _ in range(n_in - 1)]
        o_shape = list(a_shape) if var != "zero_dim_input" else [2, 3]
    elif op == "CONCATENATION":
        ins += [tensor(b_shape if var in ("broadcast", "bad_broadcast") else a_shape)
                for _ in range(n_in - 1 + (var == "extra_input"))]
        axis = {"axis_negative": -1, "axis_out_of_range": 5}.get(var, 0)
        opts["Axis"] = axis
        o_shape = list(a_shape)
        o_shape[axis if axis < len(a_shape) else 0] *= len(ins)
    elif op == "RESHAPE":
        o_shape = [3, 2] if len(a_shape) == 2 and a_shape != [2, 0] else [6]
        if var == "extra_input":  # the shape as a constant int32 tensor
            ins.append(tensor([len(o_shape)], tt.INT32, None, data=True))
        opts["NewShape"] = o_shape
    else:  # FULLY_CONNECTED: weights [4, n], optional bias
        n = a_shape[-1]
        ins.append(tensor([4, n], data=True))
        bias_q = None if quant is None else ([quant[0][0] * quant[0][0]], [0])
        ins.append(tensor([4], tt.INT32 if ttype == tt.INT8 else ttype,
                          bias_q if ttype == tt.INT8 else "same", data=True)
                   if var == "extra_input" else -1)
        o_shape = [*a_shape[:-1], 4]
    if var == "output_shape":
        o_shape = [3, 3]
    if var == "zero_dim_output":
        o_shape = [2, 0]
    o_type = ttype
    if op == "LESS":
        o_type = tt.BOOL
    if var == "output_type":
        o_type = tt.FLOAT32 if ttype != tt.FLOAT32 else tt.INT8
    o_q = None if o_type in (tt.FLOAT32, tt.BOOL) else quant if o_type == ttype else ([0.05], [0])
    if ttype == tt.INT8 and quant is not None and o_type == tt.INT8:  # the int8 kernels' output
        o_q = {"LOGISTIC": ([1 / 256], [-128]), "TANH": ([1 / 128], [0])}.get(op, o_q)
    y = tensor(o_shape, o_type, o_q)
    if var == "fused_relu":
        opts["FusedActivationFunction"] = 1
    table = _OPTIONS.get(op) or ("ReshapeOptions" if op == "RESHAPE" else None)
    options = (table, opts) if table is not None else None
    graph_in = [i for i in dict.fromkeys(ins) if i >= 0 and "data" not in tensors[i][3]]
    return {"tensors": tensors, "inputs": graph_in, "outputs": [y],
            "ops": [(op, ins, [y], options)]}
