"""Differential test of the ONNX importer's tensor sizes against ONNX Runtime (issue #23 section 2).

:func:`generate` builds small valid ONNX models from a seed, one *kind* each, over the operators
the importer supports: broadcasting, ``Reshape`` with ``0`` and ``-1``, ``Expand``, ``Tile``,
``Slice`` with negative steps, ``Pad``, ``Resize``/``Upsample`` with float scales and with sizes,
``Range`` with floats, shape arithmetic through ``Shape``/``Gather``/``Concat``/``Cast``/``Div``,
``Where``, ``TopK``, ``Compress`` with a constant condition, pooling and convolution,
``ConvTranspose``, ``OneHot`` with a float depth, ``DepthToSpace``, ``Loop``/
``Scan``/``If`` with constant trip counts and conditions, unused inputs, initializers that are
also inputs, graphs whose sizes depend on runtime data (which the importer must refuse),
operators whose outputs ONNX shape inference leaves untyped (``GroupNormalization`` opsets 18 and
21, ``MeanVarianceNormalization``-13, ``Compress``-9), ``NonZero`` and ``Shape`` of constants
(ONNX Runtime runs the first and folds the second), cycles through tensors of unknown shape
(which the importer must refuse as cycles), and ``If`` nodes on a runtime condition whose
branches return different shapes (refused).

:func:`check_model` imports a model with :func:`scheduling.onnx_import.load_onnx` (the inference
chain, ``shapes="infer"``) and runs it once in ONNX Runtime with every node output exposed as a
graph output (:func:`scheduling.onnx_shapes.measured_sizes`: CPU provider, graph optimisations
off, random float inputs, zero integer and bool inputs). Every tensor of the imported graph that
ONNX Runtime returned is compared in bytes. Every node output ONNX Runtime still computes after
its constant folding (:func:`ort_runtime_outputs`: the model it writes after optimising at level
basic) must be planned (an activation or output, not a weight). Outcomes (:data:`OUTCOMES`):

``equal``
    every compared size equals ONNX Runtime's;
``larger_noted``
    some planned size is larger than what ONNX Runtime writes, and the import notes
    (``graph.notes``) name that tensor or one it is computed from (the spec and ONNX Runtime
    disagree; the plan takes the larger size and says so);
``refused``
    a graph whose sizes depend on runtime data was refused with :class:`OnnxImportError`
    naming the operator whose size depends on it, or a cyclic graph with
    :class:`~scheduling.errors.CycleError` naming the cycle (expected for those kinds only);
``smaller`` *(failure)*
    a planned size below what ONNX Runtime writes: a corrupting plan;
``folded_runtime`` *(failure)*
    a tensor ONNX Runtime computes at run time (its node survives ONNX Runtime's constant
    folding) that the import folded into a weight or left out: bytes the plan does not hold;
``larger_silent`` *(failure)*
    a planned size above ONNX Runtime's that no note explains;
``import_error`` *(failure)*
    a static graph the importer refused;
``not_refused`` *(failure)*
    a data-dependent or cyclic graph the importer planned;
``wrong_refusal`` *(failure)*
    a data-dependent graph refused with an error that does not name the operator, or a cyclic
    one refused with another error than the cycle (e.g. an unknown size);
``ort_error`` *(failure)*
    ONNX Runtime could not run a generated graph (a generator bug).

``python -m experiments.bench.onnx_differential --graphs 300 --seed 0`` runs the full set (the
``make soak`` part) and prints one line per failing graph and a table of outcomes per kind;
``--out FILE.csv`` writes one row per graph. Exit status 1 if any graph fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

__all__ = ["KINDS", "OUTCOMES", "FAILURES", "Outcome", "generate", "check_model", "run", "main",
           "ort_runtime_outputs"]

#: Every outcome :func:`check_model` reports (module docstring).
OUTCOMES = ("equal", "larger_noted", "refused", "smaller", "folded_runtime", "larger_silent",
            "import_error", "not_refused", "wrong_refusal", "ort_error")
#: The outcomes that fail the test.
FAILURES = frozenset({"smaller", "folded_runtime", "larger_silent", "import_error", "not_refused",
                      "wrong_refusal", "ort_error"})

F = T.FLOAT


def _vi(name: str, shape, et: int = F) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, et, shape)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17, ir: int | None = None,
           name: str = "g") -> onnx.ModelProto:
    m = h.make_model(h.make_graph(nodes, name, inputs, outputs, list(inits)),
                     opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = ir if ir is not None else min(m.ir_version, 8)
    return m


def _shape(rng: np.random.Generator, rank: int | None = None, lo: int = 1, hi: int = 6) -> list:
    rank = int(rng.integers(1, 5)) if rank is None else rank
    return [int(rng.integers(lo, hi + 1)) for _ in range(rank)]


def _i64(name: str, vals) -> onnx.TensorProto:
    return nh.from_array(np.asarray(vals, np.int64), name)


def _f32(name: str, vals) -> onnx.TensorProto:
    return nh.from_array(np.asarray(vals, np.float32), name)


def _tail(nodes: list, last: str) -> None:
    """A consumer after the operator under test (its output is an intermediate, then ``y``)."""
    nodes.append(h.make_node("Relu", [last], ["y"]))


# -- kinds -------------------------------------------------------------------------------------
def k_broadcast(rng):
    a = _shape(rng, int(rng.integers(1, 5)))
    b = [d if rng.random() < 0.5 else 1 for d in a][int(rng.integers(0, len(a))):]
    if rng.random() < 0.5:
        a, b = b, a
    op = str(rng.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"]))
    nodes = [h.make_node(op, ["a", "b"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("a", a), _vi("b", b)], [_vi("y", None)])


def k_reshape(rng):
    x = _shape(rng, int(rng.integers(2, 5)))
    target = list(x)
    k = int(rng.integers(0, len(x)))
    keep0 = int(rng.integers(0, len(x)))
    tgt = [0 if j == keep0 else d for j, d in enumerate(target)]
    if k != keep0:
        tgt[k] = -1
    if rng.random() < 0.5 and len(tgt) > 2 and -1 not in tgt[:-2]:  # merge the last two dims
        tgt = tgt[:-2] + [-1]
    nodes = [h.make_node("Reshape", ["x", "s"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_i64("s", tgt)], opset=14)


def k_expand(rng):
    x = _shape(rng, int(rng.integers(1, 4)))
    x = [d if rng.random() < 0.5 else 1 for d in x]
    tgt = [d if d != 1 else int(rng.integers(1, 5)) for d in x]
    if rng.random() < 0.5:
        tgt = [int(rng.integers(1, 4))] + tgt
    if rng.random() < 0.3:  # a 1 in the target keeps the input's dim (bidirectional broadcast)
        tgt[-1] = 1
    nodes = [h.make_node("Expand", ["x", "s"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_i64("s", tgt)])


def k_tile(rng):
    x = _shape(rng, int(rng.integers(1, 4)))
    reps = [int(rng.integers(1, 4)) for _ in x]
    nodes = [h.make_node("Tile", ["x", "r"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_i64("r", reps)])


def k_slice(rng):
    x = _shape(rng, int(rng.integers(1, 4)), 2, 9)
    axes = sorted(rng.choice(len(x), size=int(rng.integers(1, len(x) + 1)), replace=False))
    starts, ends, steps = [], [], []
    for a in axes:
        d = x[a]
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        s = int(rng.integers(-d - 2, d + 3))
        e = int(rng.integers(-d - 2, d + 3))
        if rng.random() < 0.2:
            e = -(2 ** 62) if step < 0 else 2 ** 62
        starts.append(s)
        ends.append(e)
        steps.append(step)
    nodes = [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)],
                  [_i64("st", starts), _i64("en", ends), _i64("ax", [int(a) for a in axes]),
                   _i64("sp", steps)], opset=13)


def k_pad(rng):
    x = _shape(rng, int(rng.integers(1, 5)), 2, 6)
    pads = [int(rng.integers(-1, 4)) for _ in range(2 * len(x))]
    mode = str(rng.choice(["constant", "reflect", "edge"]))
    if mode != "constant":  # edge and reflect read the input: no cropping, reflect < dim
        pads = [max(p, 0) for p in pads]
    if mode == "reflect":
        pads = [min(p, x[j % len(x)] - 1) for j, p in enumerate(pads)]
    if rng.random() < 0.3:
        nodes = [h.make_node("Pad", ["x"], ["t"], pads=[max(p, 0) for p in pads], mode=mode)]
        _tail(nodes, "t")
        return _model(nodes, [_vi("x", x)], [_vi("y", None)], opset=10)
    nodes = [h.make_node("Pad", ["x", "p"], ["t"], mode=mode)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_i64("p", pads)], opset=13)


#: Float scales that are not exact in binary: float32 products round up or down.
_SCALES = (10 / 3, 7 / 3, 5 / 3, 4 / 3, 2 / 3, 1 / 3, 0.1 * 7, 1.1, 1.3, 1.7, 2.2, 2.6, 0.3,
           0.6, 0.9, 1.5, 2.0, 3.0, 1 / 7 * 10, 1 / 6 * 11, 0.55, 3.3, 1.15, 2.35)


def _scale(rng, d: int, at_least_one: bool = False) -> float:
    """A float scale for a dimension of ``d``: one of :data:`_SCALES`, or (as exporters write
    them, ``target / d``) a ratio whose float32 value may fall below or above the exact one."""
    if rng.random() < 0.6:
        target = int(rng.integers(d if at_least_one else 1, 3 * d + 1))
        return float(np.float32(target / d))
    return float(rng.choice([v for v in _SCALES if v >= 1 or not at_least_one]))


def k_resize_scales(rng):
    x = [1, int(rng.integers(1, 3))] + _shape(rng, 2, 2, 16)
    sc = [1.0, 1.0] + [_scale(rng, d) for d in x[2:]]
    mode = str(rng.choice(["nearest", "linear"]))
    opset = int(rng.choice([10, 11, 13, 18, 19]))
    if opset == 10:
        node = h.make_node("Resize", ["x", "sc"], ["t"], mode=mode)
    elif opset >= 18 and rng.random() < 0.5:  # axes: scales only for the spatial dims
        node = h.make_node("Resize", ["x", "", "sc"], ["t"], mode=mode, axes=[2, 3])
        sc = sc[2:]
    elif opset >= 18:
        node = h.make_node("Resize", ["x", "", "sc"], ["t"], mode=mode)
    else:  # opsets 11 and 13: roi is a required input (an empty tensor when unused)
        node = h.make_node("Resize", ["x", "roi", "sc"], ["t"], mode=mode)
    nodes = [node]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_f32("sc", sc), _f32("roi", [])],
                  opset=opset)


def k_resize_sizes(rng):
    x = [1, int(rng.integers(1, 3))] + _shape(rng, 2, 2, 12)
    sizes = [x[0], x[1]] + [int(rng.integers(1, 25)) for _ in range(2)]
    opset = int(rng.choice([11, 13, 18, 19]))
    kw = {}
    if opset >= 18 and rng.random() < 0.6:
        kw["keep_aspect_ratio_policy"] = str(rng.choice(["not_larger", "not_smaller"]))
        kw["axes"] = [2, 3]
        sizes = sizes[2:]
    roi, sc = ("", "") if opset >= 18 else ("roi", "sc")
    nodes = [h.make_node("Resize", ["x", roi, sc, "sz"], ["t"], mode="nearest", **kw)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)],
                  [_i64("sz", sizes), _f32("roi", []), _f32("sc", [])], opset=opset)


def k_upsample(rng):
    x = [1, 1] + _shape(rng, 2, 2, 12)
    sc = [1.0, 1.0] + [_scale(rng, d, True) for d in x[2:]]
    if rng.random() < 0.5:
        nodes = [h.make_node("Upsample", ["x"], ["t"], scales=sc, mode="nearest")]
        _tail(nodes, "t")
        return _model(nodes, [_vi("x", x)], [_vi("y", None)], opset=7)
    nodes = [h.make_node("Upsample", ["x", "sc"], ["t"], mode="nearest")]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [_f32("sc", sc)], opset=9)


def k_range(rng):
    start = float(rng.choice([0.0, 0.1, 0.3, 1.0, -1.5, 0.7, 0.2, 1.1]))
    delta = float(rng.choice([0.1, 0.2, 0.3, 0.7, 1.0, 1 / 3, 0.05, 0.25, 0.5, 1.0, 2.0]))
    # a limit on the grid: float rounding of limit - start decides the last element
    limit = start + delta * int(rng.integers(1, 30)) + float(rng.choice([0.0, 0.0, 1e-7, -1e-7]))
    dt = rng.choice([np.float32, np.float64])
    et = T.FLOAT if dt == np.float32 else T.DOUBLE
    inits = [nh.from_array(np.asarray(v, dt), n)
             for n, v in (("s", start), ("l", limit), ("d", delta))]
    nodes = [h.make_node("Range", ["s", "l", "d"], ["r"]), h.make_node("Add", ["r", "x"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", [1], et)], [_vi("y", None, et)], inits, opset=13)


def k_shape_arith(rng):
    x = _shape(rng, 3, 2, 8)
    x[2] = x[2] * 2
    nodes = [
        h.make_node("Shape", ["x"], ["sh"]),
        h.make_node("Gather", ["sh", "i2"], ["d2"], axis=0),
        h.make_node("Cast", ["d2"], ["d2f"], to=T.FLOAT),
        h.make_node("Div", ["d2f", "two_f"], ["half_f"]),
        h.make_node("Cast", ["half_f"], ["half"], to=T.INT64),
        h.make_node("Gather", ["sh", "i01"], ["d01"], axis=0),
        h.make_node("Div", ["d2", "two"], ["half_i"]),
        h.make_node("Mul", ["half", "half_i"], ["sq"]),
        h.make_node("Div", ["sq", "half_i"], ["h2"]),
        h.make_node("Concat", ["d01", "h2", "minus1"], ["tgt"], axis=0),
        h.make_node("Reshape", ["x", "tgt"], ["t"]),
    ]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)],
                  [_i64("i2", [2]), _i64("i01", [0, 1]), _f32("two_f", [2.0]), _i64("two", [2]),
                   _i64("minus1", [-1])], opset=13)


def k_where(rng):
    c = _shape(rng, int(rng.integers(1, 4)))
    a = [d if rng.random() < 0.6 else 1 for d in c]
    b = [d if rng.random() < 0.6 else 1 for d in c][int(rng.integers(0, len(c))):]
    nodes = [h.make_node("Where", ["c", "a", "b"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("c", c, T.BOOL), _vi("a", a), _vi("b", b)], [_vi("y", None)])


def k_topk(rng):
    x = _shape(rng, int(rng.integers(1, 4)), 2, 8)
    axis = int(rng.integers(-len(x), len(x)))
    k = int(rng.integers(1, x[axis] + 1))
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis),
             h.make_node("Relu", ["v"], ["y"])]
    return _model(nodes, [_vi("x", x)], [_vi("y", None), _vi("i", None, T.INT64)],
                  [_i64("k", [k])], opset=11)


def k_compress(rng):
    x = _shape(rng, int(rng.integers(1, 4)), 2, 7)
    axis = int(rng.integers(0, len(x))) if rng.random() < 0.8 else None
    n = x[axis] if axis is not None else math.prod(x)
    cond = rng.random(int(rng.integers(1, n + 1))) < 0.5
    kw = {} if axis is None else {"axis": axis}
    nodes = [h.make_node("Compress", ["x", "c"], ["t"], **kw)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [nh.from_array(cond, "c")], opset=11)


def k_pool(rng):
    x = [1, int(rng.integers(1, 3))] + _shape(rng, 2, 3, 12)
    k = [int(rng.integers(1, 4)) for _ in range(2)]
    s = [int(rng.integers(1, 4)) for _ in range(2)]
    p = [int(rng.integers(0, kk)) for kk in k] * 2
    op = str(rng.choice(["MaxPool", "AveragePool"]))
    kw = dict(kernel_shape=k, strides=s, pads=p, ceil_mode=int(rng.integers(0, 2)))
    nodes = [h.make_node(op, ["x"], ["t"], **kw)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], opset=int(rng.choice([11, 19])))


def k_conv(rng):
    c = int(rng.integers(1, 4))
    x = [1, c] + _shape(rng, 2, 5, 10)  # >= the dilated kernel (3 - 1) * 2 + 1
    k = [int(rng.integers(1, 4)) for _ in range(2)]
    m = int(rng.integers(1, 4))
    w = rng.standard_normal([m, c] + k).astype(np.float32)
    kw = dict(strides=[int(rng.integers(1, 3))] * 2, dilations=[int(rng.integers(1, 3))] * 2)
    if rng.random() < 0.5:
        kw["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    else:
        kw["pads"] = [int(rng.integers(0, 2)) for _ in range(4)]
    if kw.get("auto_pad", "").startswith("SAME"):
        kw["dilations"] = [1, 1]
    nodes = [h.make_node("Conv", ["x", "w"], ["t"], **kw)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [nh.from_array(w, "w")], opset=13)


def k_misc(rng):
    """A chain of shape-preserving and shape-changing operators with unread outputs."""
    x = _shape(rng, 3, 2, 6)
    nodes = [
        h.make_node("Transpose", ["x"], ["tr"], perm=[2, 0, 1]),
        h.make_node("Split", ["tr", "sp"], ["s0", "s1"], axis=1) if x[0] >= 2 else
        h.make_node("Identity", ["tr"], ["s0"]),
        h.make_node("ReduceSum", ["s0", "ax"], ["rs"], keepdims=int(rng.integers(0, 2))),
        h.make_node("Softmax", ["tr"], ["sm"], axis=-1),
        h.make_node("Concat", ["sm", "tr"], ["cc"], axis=0),
        h.make_node("MatMul", ["cc", "w"], ["mm"]),
        h.make_node("Flatten", ["mm"], ["t"], axis=1),
    ]
    _tail(nodes, "t")
    inits = [_i64("sp", [1, x[0] - 1]), _i64("ax", [int(rng.integers(0, 3))]),
             _f32("w", rng.standard_normal((x[1], 3)))]
    return _model(nodes, [_vi("x", x)], [_vi("y", None), _vi("rs", None)], inits, opset=13)


def k_misc2(rng):
    """OneHot with a float depth (cast to int64), ConvTranspose with strides and output
    padding, DepthToSpace/SpaceToDepth, Unsqueeze/Squeeze, ArgMax, GatherElements."""
    b = int(rng.integers(1, 3))
    c = 4 * int(rng.integers(1, 3))
    hw = [2 * int(rng.integers(1, 4)) for _ in range(2)]
    s = [int(rng.integers(1, 4)) for _ in range(2)]
    op = [int(rng.integers(0, s[i])) for i in range(2)]
    k = [int(rng.integers(1, 4)) for _ in range(2)]
    depth = float(rng.choice([2.2, 3.7, 4.0, 5.5, 6.9]))
    pads = [int(rng.integers(0, 2)) for _ in range(4)]
    for i in range(2):  # keep every output dimension positive (ONNX Runtime refuses 0)
        if s[i] * (hw[i] - 1) + op[i] + k[i] - pads[i] - pads[i + 2] < 1:
            pads[i] = pads[i + 2] = 0
    nodes = [
        h.make_node("ConvTranspose", ["x", "w"], ["ct"], strides=s, output_padding=op,
                    pads=pads),
        h.make_node("DepthToSpace", ["x"], ["d2s"], blocksize=2,
                    mode=str(rng.choice(["DCR", "CRD"]))),
        h.make_node("SpaceToDepth", ["d2s"], ["s2d"], blocksize=2),
        h.make_node("Unsqueeze", ["s2d", "ax0"], ["us"]),
        h.make_node("Squeeze", ["us", "ax0"], ["sq"]),
        h.make_node("ArgMax", ["sq"], ["am"], axis=1, keepdims=int(rng.integers(0, 2))),
        h.make_node("OneHot", ["am", "dp", "vals"], ["oh"], axis=-1),
        h.make_node("GatherElements", ["x", "gi"], ["ge"], axis=1),
        h.make_node("Relu", ["ct"], ["y"]),
    ]
    gi = np.zeros([b, 1] + hw, np.int64)
    inits = [_f32("w", rng.standard_normal([c, 2] + k)), _i64("ax0", [0]),
             _f32("dp", [depth]), _f32("vals", [0, 1]), nh.from_array(gi, "gi")]
    return _model(nodes, [_vi("x", [b, c] + hw)],
                  [_vi("y", None), _vi("oh", None), _vi("ge", None)], inits, opset=13)


def k_loop(rng):
    """A Loop with a constant trip count (an initializer, or ``Shape(x)[0]``); the condition
    passed through ``Identity`` or returned as is; scan outputs read by a consumer."""
    n = int(rng.integers(1, 6))
    d = _shape(rng, int(rng.integers(1, 3)))
    through_identity = bool(rng.random() < 0.6)
    body_nodes = [h.make_node("Add", ["s", "one"], ["s2"]), h.make_node("Mul", ["s2", "s2"], ["sc"])]
    body_nodes.insert(0, h.make_node("Identity", ["cin"], ["cout"]) if through_identity
                      else h.make_node("Identity", ["cin"], ["cout"]))
    body = h.make_graph(body_nodes, "body",
                        [_vi("i", [], T.INT64), _vi("cin", [], T.BOOL), _vi("s", d)],
                        [_vi("cout", [], T.BOOL), _vi("s2", d), _vi("sc", d)],
                        [_f32("one", np.ones(d))])
    if not through_identity:  # the condition output is the condition input itself
        body = h.make_graph(body_nodes[1:], "body",
                            [_vi("i", [], T.INT64), _vi("cin", [], T.BOOL), _vi("s", d)],
                            [_vi("cin", [], T.BOOL), _vi("s2", d), _vi("sc", d)],
                            [_f32("one", np.ones(d))])
    nodes = [h.make_node("Loop", ["M", "c", "x"], ["sf", "scan"], body=body),
             h.make_node("Relu", ["scan"], ["y"])]
    inits = [nh.from_array(np.array(True), "c")]
    if rng.random() < 0.5:
        inits.append(_i64("M", n))
    else:  # the trip count from shape arithmetic, as exporters write it: Shape(x)[0]
        nodes[:0] = [h.make_node("Shape", ["x"], ["xs"]),
                     h.make_node("Gather", ["xs", "zero"], ["M"], axis=0)]
        inits.append(_i64("zero", 0))
    return _model(nodes, [_vi("x", d)], [_vi("y", None), _vi("sf", None)], inits, opset=13)


def k_scan(rng):
    n = int(rng.integers(1, 6))
    d = _shape(rng, int(rng.integers(1, 3)))
    body = h.make_graph(
        [h.make_node("Add", ["st", "xi"], ["st2"]), h.make_node("Neg", ["st2"], ["o"])],
        "body", [_vi("st", d), _vi("xi", d)], [_vi("st2", d), _vi("o", d)])
    nodes = [h.make_node("Scan", ["s0", "xs"], ["sf", "os"], body=body, num_scan_inputs=1),
             h.make_node("Relu", ["os"], ["y"])]
    return _model(nodes, [_vi("s0", d), _vi("xs", [n] + d)], [_vi("y", None), _vi("sf", None)],
                  opset=13)


def k_if(rng):
    d = _shape(rng, int(rng.integers(1, 4)))
    taken = bool(rng.random() < 0.5)
    tb = h.make_graph([h.make_node("Add", ["x", "x"], ["o1"])], "then", [], [_vi("o1", d)])
    eb = h.make_graph([h.make_node("Neg", ["x"], ["o2"])], "else", [], [_vi("o2", d)])
    nodes = [h.make_node("Relu", ["x0"], ["x"]),
             h.make_node("If", ["c"], ["t"], then_branch=tb, else_branch=eb)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x0", d)], [_vi("y", None)],
                  [nh.from_array(np.array(taken), "c")], opset=13)


def k_unused_input(rng):
    x = _shape(rng)
    nodes = [h.make_node("Sigmoid", ["x"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("unused", _shape(rng))], [_vi("y", None)])


def k_init_input(rng):
    """An initializer that is also a graph input, read as data (its shape is declared)."""
    x = _shape(rng, 2)
    w = rng.standard_normal(x).astype(np.float32)
    nodes = [h.make_node("Add", ["x", "w"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("w", x)], [_vi("y", None)], [nh.from_array(w, "w")])


def k_default_shape(rng):
    """The Reshape target is an initializer that is also a graph input (IR >= 4: a default a
    caller may replace): the sizes of the default run are planned and a note names the input."""
    x = _shape(rng, 2)
    nodes = [h.make_node("Reshape", ["x", "s"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("s", [2], T.INT64)], [_vi("y", None)],
                  [_i64("s", [x[1], x[0]])])


def k_dd_nonzero(rng):
    """Refusal expected: NonZero's output size depends on the input values."""
    x = _shape(rng, 2)
    nodes = [h.make_node("NonZero", ["x"], ["t"]), h.make_node("Neg", ["t"], ["y"])]
    return _model(nodes, [_vi("x", x)], [_vi("y", None, T.INT64)])


def k_groupnorm(rng):
    """GroupNormalization (opsets 18 and 21), whose output ONNX shape inference leaves untyped:
    the importer types it by the specification (X's shape and type); sometimes two in a row."""
    groups = int(rng.integers(1, 4))
    c = groups * int(rng.integers(1, 4))
    x = [int(rng.integers(1, 4)), c] + _shape(rng, int(rng.integers(1, 4)), 1, 5)
    opset = int(rng.choice([18, 21]))
    per = groups if opset == 18 else c  # opset 18: scale and bias per group; 21: per channel
    inits = [_f32("s", rng.standard_normal(per)), _f32("b", rng.standard_normal(per))]
    nodes = [h.make_node("GroupNormalization", ["x", "s", "b"], ["t"], num_groups=groups,
                         epsilon=1e-5)]
    if rng.random() < 0.4:
        nodes.append(h.make_node("GroupNormalization", ["t", "s", "b"], ["t2"],
                                 num_groups=groups))
        nodes.append(h.make_node("Transpose", ["t2"], ["t3"], perm=list(range(len(x)))[::-1]))
        last = "t3"
    else:
        last = "t"
    if rng.random() < 0.5:  # ONNX Runtime cannot size t itself: it runs this Shape
        last = _shape_of(nodes, last)
    _tail(nodes, last)
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], inits, opset=opset)


def _shape_of(nodes: list, t: str) -> str:
    """Append ``Add(t, ReduceSum(Cast(Shape(t))))``; returns the sum's name."""
    nodes += [h.make_node("Shape", [t], [f"{t}_sh"]),
              h.make_node("Cast", [f"{t}_sh"], [f"{t}_shf"], to=F),
              h.make_node("ReduceSum", [f"{t}_shf"], [f"{t}_n"], keepdims=0),
              h.make_node("Add", [t, f"{t}_n"], [f"{t}_plus"])]
    return f"{t}_plus"


def k_untyped_spec(rng):
    """MeanVarianceNormalization-13 (inference of its function body fails) or Compress-9 with
    a constant condition (no inference function): typed by the specification."""
    x = _shape(rng, int(rng.integers(2, 4)), 2, 5)
    if rng.random() < 0.5:
        nodes = [h.make_node("MeanVarianceNormalization", ["x"], ["t"])]
        _tail(nodes, _shape_of(nodes, "t") if rng.random() < 0.5 else "t")
        return _model(nodes, [_vi("x", x)], [_vi("y", None)], opset=13)
    axis = int(rng.integers(0, len(x))) if rng.random() < 0.7 else None
    n = x[axis] if axis is not None else math.prod(x)
    cond = rng.random(int(rng.integers(1, n + 1))) < 0.5
    kw = {} if axis is None else {"axis": axis}
    nodes = [h.make_node("Compress", ["x", "c"], ["t"], **kw)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x)], [_vi("y", None)], [nh.from_array(cond, "c")], opset=9)


def k_const_fold(rng):
    """NonZero of a constant (ONNX Runtime runs it: its size cannot be estimated before the
    run), Shape of a constant and of a static input (ONNX Runtime folds those), their
    consumers, and sometimes an initializer that is also a graph input (not a constant to ONNX
    Runtime)."""
    cs = _shape(rng, int(rng.integers(1, 4)), 1, 4)
    c = rng.standard_normal(cs).astype(np.float32) * (rng.random(cs) < 0.5)
    x = [int(rng.integers(1, 4))]
    nodes = [h.make_node("NonZero", ["c"], ["nz"]),
             h.make_node("Cast", ["nz"], ["nzf"], to=F),
             h.make_node("ReduceSum", ["nzf"], ["s"], keepdims=0),
             h.make_node("Shape", [str(rng.choice(["c", "x"]))], ["sh"]),
             h.make_node("Cast", ["sh"], ["shf"], to=F),
             h.make_node("ReduceMax", ["shf"], ["m"], keepdims=0),
             h.make_node("Add", ["s", "m"], ["sm"]),
             h.make_node("Add", ["x", "sm"], ["t"])]
    inputs, inits = [_vi("x", x)], [nh.from_array(c, "c")]
    if rng.random() < 0.3:  # Shape of the NonZero output: not static for ONNX Runtime
        nodes[3] = h.make_node("Shape", ["nz"], ["sh"])
    if rng.random() < 0.3:  # an overridable initializer read by a node of constant inputs
        inputs.append(_vi("w", x))
        inits.append(_f32("w", rng.standard_normal(x)))
        nodes += [h.make_node("Neg", ["w"], ["nw"]), h.make_node("Add", ["t", "nw"], ["t2"])]
        _tail(nodes, "t2")
    else:
        _tail(nodes, "t")
    return _model(nodes, inputs, [_vi("y", None)], inits, opset=13)


def k_cycle(rng):
    """Refusal expected (a :class:`CycleError`): a chain of elementwise nodes with one edge
    back to an earlier node, through tensors whose shapes nothing declares (sometimes the
    others' are declared, sometimes the back edge goes through an ``If`` branch's outer-scope
    read)."""
    n = int(rng.integers(2, 6))
    x = _shape(rng)
    back_from, back_to = int(rng.integers(0, n)), None
    back_to = int(rng.integers(0, back_from + 1))
    nodes = []
    for k in range(n):
        prev = "x" if k == 0 else f"t{k - 1}"
        if k == back_to and not (rng.random() < 0.3 and k < back_from):
            nodes.append(h.make_node("Add", [prev, f"t{back_from}"], [f"t{k}"], name=f"n{k}"))
        elif k == back_to:  # read through an If branch (an implicit input)
            tb = h.make_graph([h.make_node("Add", [prev, f"t{back_from}"], ["o1"])], "then", [],
                              [_vi("o1", None)])
            eb = h.make_graph([h.make_node("Neg", [prev], ["o2"])], "else", [],
                              [_vi("o2", None)])
            nodes.append(h.make_node("If", ["c"], [f"t{k}"], then_branch=tb, else_branch=eb,
                                     name=f"n{k}"))
        else:
            nodes.append(h.make_node(str(rng.choice(["Relu", "Neg", "Sigmoid"])), [prev],
                                     [f"t{k}"], name=f"n{k}"))
    _tail(nodes, f"t{n - 1}")
    vi = [_vi(f"t{k}", x) for k in range(n) if k != back_from and rng.random() < 0.5]
    m = _model(nodes, [_vi("x", x), _vi("c", [], T.BOOL)], [_vi("y", None)], opset=13)
    m.graph.value_info.extend(vi)
    return m


def k_dd_if_shapes(rng):
    """Refusal expected: an ``If`` on a runtime condition whose branches return different
    shapes (ONNX Runtime writes the shape of the branch that runs)."""
    x = _shape(rng, int(rng.integers(1, 4)), 2, 5)
    other = str(rng.choice(["ReduceMin", "ReduceMax"]))
    branches = [h.make_graph([h.make_node("Neg", ["x"], ["o1"])], "then", [], [_vi("o1", None)]),
                h.make_graph([h.make_node(other, ["x"], ["o2"], keepdims=0)], "else", [],
                             [_vi("o2", None)])]
    if rng.random() < 0.5:
        branches = [branches[1], branches[0]]
    nodes = [h.make_node("If", ["c"], ["t"], then_branch=branches[0], else_branch=branches[1])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("c", [], T.BOOL)], [_vi("y", None)], opset=13)


def ort_runtime_outputs(model: onnx.ModelProto) -> set[str]:
    """The node outputs of ``model`` that ONNX Runtime computes at run time after its constant
    folding.

    The outputs, among ``model``'s node outputs, of the nodes left in the model ONNX Runtime
    (CPU provider) writes after optimising it at graph optimisation level basic
    (``SessionOptions.optimized_model_filepath``, in a temporary folder; ``ConstantFolding`` is
    a level-1 transformer, and the session default, all levels, folds the same nodes). A name
    ONNX Runtime folded into an initializer, or removed (an ``Identity``), is absent; a node
    ONNX Runtime expands into its function body (``GroupNormalization``) keeps its output name.

    Parameters
    ----------
    model : onnx.ModelProto
        The model as the importer reads it (not modified).

    Returns
    -------
    set of str
        Tensor names: each is allocated by ONNX Runtime at run time, so a plan must hold it.

    Raises
    ------
    scheduling.errors.OnnxImportError
        ONNX Runtime cannot load the model (its message).
    """
    import os
    import tempfile

    import onnxruntime as ort

    from scheduling.errors import OnnxImportError

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        opts.optimized_model_filepath = os.path.join(d, "optimized.onnx")
        try:
            ort.InferenceSession(model.SerializeToString(), opts,
                                 providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise OnnxImportError(
                f"ONNX Runtime could not load the model: {' '.join(str(e).split())}") from None
        optimized = onnx.load(opts.optimized_model_filepath)
    produced = {o for n in model.graph.node for o in n.output if o}
    return {o for n in optimized.graph.node for o in n.output if o in produced}


def _ort_shapes(model: onnx.ModelProto) -> dict | None:
    """Every node output's shape in one ONNX Runtime run, or ``None`` if it cannot run."""
    from scheduling.errors import OnnxImportError
    from scheduling.onnx_shapes import measured_shapes

    try:
        return {k: v[0] for k, v in measured_shapes(model).items()}
    except OnnxImportError:
        return None


def _chain_step(rng, cur: str, shape: tuple, k: int):
    """One rank-4 operator applied to ``cur`` (shape ``shape``, as ONNX Runtime gives it):
    ``(nodes, initializers, out)``."""
    o = f"c{k}"
    op = str(rng.choice(["Resize", "Upsample", "Pad", "Slice", "Tile", "MaxPool", "Transpose",
                         "Reshape", "Concat"]))
    if op == "Resize":
        sc = [1.0, 1.0] + [_scale(rng, d) for d in shape[2:]]
        return ([h.make_node("Resize", [cur, f"roi{k}", f"sc{k}"], [o], mode="nearest")],
                [_f32(f"roi{k}", []), _f32(f"sc{k}", sc)], o)
    if op == "Upsample":  # as Resize-13 with scales >= 1 (Upsample is deprecated at opset 13)
        sc = [1.0, 1.0] + [_scale(rng, d, True) for d in shape[2:]]
        return ([h.make_node("Resize", [cur, f"roi{k}", f"sc{k}"], [o], mode="linear")],
                [_f32(f"roi{k}", []), _f32(f"sc{k}", sc)], o)
    if op == "Pad":
        pads = [0, 0] + [int(rng.integers(0, 3)) for _ in range(2)] + [0, 0] + \
            [int(rng.integers(-1, 3)) for _ in range(2)]
        return [h.make_node("Pad", [cur, f"p{k}"], [o])], [_i64(f"p{k}", pads)], o
    if op == "Slice":
        ax = int(rng.integers(2, 4))
        step = int(rng.choice([-2, -1, 1, 2]))
        st, en = (-1, -(2 ** 62)) if step < 0 else (0, 2 ** 62)
        return ([h.make_node("Slice", [cur, f"st{k}", f"en{k}", f"ax{k}", f"sp{k}"], [o])],
                [_i64(f"st{k}", [st]), _i64(f"en{k}", [en]), _i64(f"ax{k}", [ax]),
                 _i64(f"sp{k}", [step])], o)
    if op == "Tile":
        reps = [1, 1, int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        return [h.make_node("Tile", [cur, f"r{k}"], [o])], [_i64(f"r{k}", reps)], o
    if op == "MaxPool":
        kk = [int(rng.integers(1, 3)) for _ in range(2)]
        return ([h.make_node("MaxPool", [cur], [o], kernel_shape=kk, strides=[2, 2],
                             ceil_mode=int(rng.integers(0, 2)))], [], o)
    if op == "Transpose":
        return [h.make_node("Transpose", [cur], [o], perm=[0, 1, 3, 2])], [], o
    if op == "Concat":  # with itself along a spatial axis
        return [h.make_node("Concat", [cur, cur], [o], axis=int(rng.integers(2, 4)))], [], o
    # Reshape through shape arithmetic: [N, C, H, W] -> [N, C, H * W // W, -1]
    return ([h.make_node("Shape", [cur], [f"sh{k}"]),
             h.make_node("Gather", [f"sh{k}", f"g{k}"], [f"hw{k}"], axis=0),
             h.make_node("Concat", [f"hw{k}", f"m{k}"], [f"tg{k}"], axis=0),
             h.make_node("Reshape", [cur, f"tg{k}"], [o])],
            [_i64(f"g{k}", [0, 1, 2]), _i64(f"m{k}", [-1])], o)


def k_chain(rng):
    """Three to six rank-4 operators in a row (float scales, pads, slices, shape arithmetic);
    each step is kept only if ONNX Runtime runs the model with it (a valid graph)."""
    x = [1, int(rng.integers(1, 3))] + _shape(rng, 2, 2, 9)
    nodes, inits, cur, shape = [], [], "x", tuple(x)
    base = [_vi("x", x)]
    for k in range(int(rng.integers(3, 7))):
        for _ in range(4):
            n, i, o = _chain_step(rng, cur, shape, k)
            trial = _model(nodes + n, base, [_vi(o, None)], inits + i, opset=13)
            got = _ort_shapes(trial)
            if got is not None and all(d > 0 for d in got.get(o, (0,))):
                nodes, inits, cur, shape = nodes + n, inits + i, o, got[o]
                break
    nodes.append(h.make_node("Relu", [cur], ["y"]))
    return _model(nodes, base, [_vi("y", None)], inits, opset=13)


def k_resize_loop(rng):
    """A float-scale Resize whose output a Loop body reads from the outer scope."""
    x = [1, 1] + _shape(rng, 2, 2, 9)
    sc = [1.0, 1.0] + [_scale(rng, d) for d in x[2:]]
    # the body declares its state with the shape ONNX Runtime gives r (as an export trace does)
    probe = _model([h.make_node("Resize", ["x", "roi", "sc"], ["r"], mode="nearest")],
                   [_vi("x", x)], [_vi("r", None)], [_f32("roi", []), _f32("sc", sc)], opset=13)
    rs = list((_ort_shapes(probe) or {}).get("r", ()))
    spec = [int(math.floor(d * float(np.float32(v)))) for d, v in zip(x, sc)]
    if rs != spec:  # ONNX Runtime checks a body's declared shapes against the specification's
        rs = rs[:2] + ["sh", "sw"]
    if "sh" in rs:  # the state then follows x (declared), the scan output r (implicit input)
        body = h.make_graph(
            [h.make_node("Identity", ["cin"], ["cout"]),
             h.make_node("ReduceMax", ["r"], ["rm"], keepdims=0),
             h.make_node("Add", ["s", "rm"], ["s2"]), h.make_node("Neg", ["r"], ["sc_out"])],
            "body", [_vi("i", [], T.INT64), _vi("cin", [], T.BOOL), _vi("s", x)],
            [_vi("cout", [], T.BOOL), _vi("s2", x), _vi("sc_out", None)])
        nodes = [h.make_node("Resize", ["x", "roi", "sc"], ["r"], mode="nearest"),
                 h.make_node("Neg", ["x"], ["s0"]),
                 h.make_node("Loop", ["M", "c", "s0"], ["sf", "scan"], body=body),
                 h.make_node("Relu", ["scan"], ["y"])]
        inits = [_f32("roi", []), _f32("sc", sc), _i64("M", int(rng.integers(1, 4))),
                 nh.from_array(np.array(True), "c")]
        return _model(nodes, [_vi("x", x)], [_vi("y", None), _vi("sf", None)], inits, opset=13)
    body = h.make_graph(
        [h.make_node("Identity", ["cin"], ["cout"]), h.make_node("Add", ["s", "r"], ["s2"]),
         h.make_node("Neg", ["s2"], ["sc_out"])],
        "body", [_vi("i", [], T.INT64), _vi("cin", [], T.BOOL), _vi("s", rs)],
        [_vi("cout", [], T.BOOL), _vi("s2", rs), _vi("sc_out", rs)])
    nodes = [h.make_node("Resize", ["x", "roi", "sc"], ["r"], mode="nearest"),
             h.make_node("Neg", ["r"], ["s0"]),
             h.make_node("Loop", ["M", "c", "s0"], ["sf", "scan"], body=body),
             h.make_node("Relu", ["scan"], ["y"])]
    inits = [_f32("roi", []), _f32("sc", sc), _i64("M", int(rng.integers(1, 4))),
             nh.from_array(np.array(True), "c")]
    return _model(nodes, [_vi("x", x)], [_vi("y", None), _vi("sf", None)], inits, opset=13)


def k_resize_if(rng):
    """A float-scale Resize inside an ``If`` branch whose condition is a runtime input (not
    inlined): only the outer tensors are compared (ONNX Runtime returns no branch tensor), the
    branch's size goes into the workspace."""
    x = [1, 1] + _shape(rng, 2, 2, 9)
    sc = [1.0, 1.0] + [_scale(rng, d) for d in x[2:]]
    tb = h.make_graph([h.make_node("Resize", ["x", "roi", "sc"], ["r"], mode="nearest"),
                       h.make_node("ReduceMax", ["r"], ["o1"], keepdims=0)],
                      "then", [], [_vi("o1", None)])
    eb = h.make_graph([h.make_node("ReduceMin", ["x"], ["o2"], keepdims=0)], "else", [],
                      [_vi("o2", None)])
    nodes = [h.make_node("If", ["c"], ["t"], then_branch=tb, else_branch=eb)]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("c", [], T.BOOL)], [_vi("y", None)],
                  [_f32("sc", sc), _f32("roi", [])], opset=13)


def k_dd_scales(rng):
    """Refusal expected: Resize scales come from a graph input (runtime data)."""
    x = [1, 1] + _shape(rng, 2, 2, 9)
    nodes = [h.make_node("Resize", ["x", "roi", "sc"], ["t"], mode="nearest")]
    _tail(nodes, "t")
    return _model(nodes, [_vi("x", x), _vi("sc", [4])], [_vi("y", None)], [_f32("roi", [])],
                  opset=13)


def k_dd_range(rng):
    """Refusal expected: the Range limit is a graph input."""
    nodes = [h.make_node("Range", ["s", "l", "d"], ["t"])]
    _tail(nodes, "t")
    return _model(nodes, [_vi("l", [])], [_vi("y", None)], [_f32("s", 0.0), _f32("d", 0.5)],
                  opset=13)


#: Generators by kind; ``refuse`` kinds are data-dependent (the importer must refuse them).
KINDS: dict[str, Callable[[np.random.Generator], onnx.ModelProto]] = {
    "broadcast": k_broadcast, "reshape": k_reshape, "expand": k_expand, "tile": k_tile,
    "slice": k_slice, "pad": k_pad, "resize_scales": k_resize_scales,
    "resize_sizes": k_resize_sizes, "upsample": k_upsample, "range": k_range,
    "shape_arith": k_shape_arith, "where": k_where, "topk": k_topk, "compress": k_compress,
    "pool": k_pool, "conv": k_conv, "misc": k_misc, "misc2": k_misc2, "loop": k_loop,
    "scan": k_scan, "if": k_if,
    "unused_input": k_unused_input, "init_input": k_init_input, "default_shape": k_default_shape,
    "chain": k_chain, "resize_loop": k_resize_loop, "resize_if": k_resize_if,
    "dd_nonzero": k_dd_nonzero,
    "dd_scales": k_dd_scales, "dd_range": k_dd_range,
    "groupnorm": k_groupnorm, "untyped_spec": k_untyped_spec, "const_fold": k_const_fold,
    "cycle": k_cycle, "dd_if_shapes": k_dd_if_shapes,
}
#: Data-dependent kinds (the importer must refuse them) and the operator the refusal must name.
_REFUSE = {"dd_nonzero": "NonZero", "dd_scales": "Resize", "dd_range": "Range",
           "dd_if_shapes": "If"}
#: Kinds whose sizes assume a default value: the import notes must name that input.
_NOTED_INPUT = {"default_shape": "s"}
#: Cyclic kinds: the importer must raise :class:`scheduling.errors.CycleError`.
_CYCLE = frozenset({"cycle"})


def generate(seed: int, index: int) -> tuple[str, onnx.ModelProto]:
    """Graph ``index`` of the set of ``seed``: ``(kind, model)``. Kinds take turns in the order
    of :data:`KINDS`; the dimensions and parameters come from ``numpy.random.default_rng((seed,
    index))``, so one graph can be rebuilt alone. Graph outputs are declared without shapes
    (ONNX Runtime's session, which validates the model, is the judge of validity)."""
    names = list(KINDS)
    kind = names[index % len(names)]
    model = KINDS[kind](np.random.default_rng((seed, index)))
    model.graph.name = f"{kind}_{seed}_{index}"
    return kind, model


@dataclass
class Outcome:
    """The result of :func:`check_model` for one graph (sizes in bytes)."""

    kind: str
    name: str
    outcome: str
    compared: int = 0
    detail: str = ""
    diffs: list = field(default_factory=list)
    #: How many tensors the import notes as sized differently by the specification and by
    #: ONNX Runtime's kernel (the larger taken).
    disagreements: int = 0


def check_model(kind: str, model: onnx.ModelProto) -> Outcome:
    """Import ``model`` and compare every tensor's bytes with ONNX Runtime's (module docstring).

    Raises nothing for a bad graph: an importer error is the outcome ``import_error`` (or
    ``refused`` for a data-dependent kind) and an ONNX Runtime failure is ``ort_error``;
    anything else (a traceback in the importer) propagates.
    """
    from scheduling.errors import CycleError, OnnxImportError
    from scheduling.onnx_import import load_onnx
    from scheduling.onnx_shapes import measured_sizes

    name = model.graph.name
    try:
        graph = load_onnx(model)
    except (OnnxImportError, CycleError) as e:
        msg = " ".join(str(e).split())
        if kind in _CYCLE:
            right = isinstance(e, CycleError) and "has a cycle (" in msg
            return Outcome(kind, name, "refused" if right else "wrong_refusal", 0, msg[:300])
        if kind in _REFUSE:
            right = f"(op {_REFUSE[kind]}," in msg
            return Outcome(kind, name, "refused" if right else "wrong_refusal", 0, msg[:300])
        return Outcome(kind, name, "import_error", 0, msg[:300])
    if kind in _REFUSE or kind in _CYCLE:
        return Outcome(kind, name, "not_refused", 0, "imported a data-dependent or cyclic graph")
    if kind in _NOTED_INPUT and not any(repr(_NOTED_INPUT[kind]) in n for n in graph.notes):
        return Outcome(kind, name, "larger_silent", 0,
                       f"sizes follow default-valued input {_NOTED_INPUT[kind]!r}; no note says so")
    try:
        ort = measured_sizes(model)
        kept = ort_runtime_outputs(model)
    except OnnxImportError as e:
        return Outcome(kind, name, "ort_error", 0, " ".join(str(e).split())[:300])
    # a tensor ONNX Runtime computes at run time (its constant folding leaves the node) that
    # the graph holds as a weight or leaves out: the plan lacks bytes the runtime allocates
    folded = sorted(t for t in kept
                    if t not in graph.tensors or graph.tensors[t].kind == "weight")
    notes = " ".join(getattr(graph, "notes", []))
    # a tensor named in a note, and everything computed from it, may be planned larger
    explained = {t for t in graph.tensors if repr(t) in notes}
    for op in graph.ops.values():  # file order is topological
        if any(i in explained for i in op.inputs):
            explained.update(op.outputs)
    diffs, smaller, silent = [], [], []
    compared = 0
    for t in graph.tensors.values():
        if t.name not in ort:
            continue
        compared += 1
        ours, theirs = t.nbytes, ort[t.name]
        if ours == theirs:
            continue
        diffs.append((t.name, ours, theirs))
        if ours < theirs:
            smaller.append(t.name)
        elif t.name not in explained:
            silent.append(t.name)
    detail = "; ".join(f"{n}: planned {a} B, ONNX Runtime {b} B" for n, a, b in diffs)
    if folded:
        detail = "; ".join(
            [f"{t}: ONNX Runtime computes it at run time ({ort.get(t, '?')} B), planned as "
             + ("a weight" if t in graph.tensors else "nothing") for t in folded] + [detail])
    if smaller:
        out = "smaller"
    elif folded:
        out = "folded_runtime"
    elif silent:
        out = "larger_silent"
    elif diffs:
        out = "larger_noted"
    else:
        out = "equal"
    disagree = sum("ONNX Runtime's kernel writes" in n for n in graph.notes)
    return Outcome(kind, name, out, compared, detail[:400], diffs, disagree)


def run(graphs: int, seed: int = 0, start: int = 0,
        progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Check graphs ``start .. start + graphs - 1`` of the set of ``seed``; one
    :class:`Outcome` each. The importer's ``memplan.onnx`` warnings (each spec-vs-runtime
    choice) are held back meanwhile: the outcome reads them from ``graph.notes``."""
    log = logging.getLogger("memplan.onnx")
    level = log.level
    log.setLevel(logging.ERROR)
    out = []
    try:
        for k in range(start, start + graphs):
            kind, model = generate(seed, k)
            o = check_model(kind, model)
            out.append(o)
            if progress is not None:
                progress(o)
    finally:
        log.setLevel(level)
    return out


def summary(results: list[Outcome]) -> str:
    """A table of outcomes per kind (counts), and the totals line."""
    by = defaultdict(Counter)
    for r in results:
        by[r.kind][r.outcome] += 1
        by[r.kind]["spec!=runtime"] += r.disagreements > 0
    cols = [o for o in OUTCOMES if any(by[k][o] for k in by)] + ["spec!=runtime"]
    lines = [f"{'kind':14s} " + " ".join(f"{c:>13s}" for c in cols)]
    for k in KINDS:
        if k in by:
            lines.append(f"{k:14s} " + " ".join(f"{by[k][c]:13d}" for c in cols))
    failed = sum(r.outcome in FAILURES for r in results)
    differ = sum(r.disagreements > 0 for r in results)
    lines.append(f"{len(results)} graphs, {failed} failed; in {differ} the specification and "
                 "ONNX Runtime's kernel give different sizes (the larger planned, noted)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.bench.onnx_differential [--graphs 300] [--seed 0] [--out F]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out", default=None, help="CSV file: one row per graph")
    args = ap.parse_args(argv)
    if args.graphs < 1:
        print("onnx_differential: error: --graphs must be >= 1", file=sys.stderr)
        return 2

    def show(o: Outcome) -> None:
        if o.outcome in FAILURES:
            print(f"FAIL {o.name} {o.outcome}: {o.detail}", flush=True)

    results = run(args.graphs, args.seed, args.start, show)
    print(summary(results))
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["graph", "kind", "outcome", "compared", "spec_runtime_notes", "detail"])
            for r in results:
                w.writerow([r.name, r.kind, r.outcome, r.compared, r.disagreements, r.detail])
    return 1 if any(r.outcome in FAILURES for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
