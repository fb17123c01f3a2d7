"""Patch-based inference planning under a memory budget (MCUNetV2).

MCUNetV2 (Lin, Chen, Lin, Gan, Han, "MCUNetV2: Memory-Efficient Patch-based Inference for Tiny
Deep Learning", NeurIPS 2021) runs the first, memory-hungry stage of a CNN **patch by patch**:
the output of the stage is cut into a ``P x Q`` grid, and each patch is computed from its own
input region (the patch plus the halo its receptive field needs, :mod:`scheduling.tiling`),
so only one patch's intermediate tensors are live at a time; the stage output is assembled in
a full-size buffer and the rest of the network runs layer by layer. The price is the recomputed
overlap of the halos (extra MACs) and the extra bytes read.

:func:`evaluate_patch` measures one choice (where the stage ends, the grid), and
:func:`plan_patches` chooses, for a budget, the stage end and grid with the least recomputed
MACs among those whose peak fits (seed 000 section 7's graceful degradation; seed 002 section
5.4.4). :func:`layer_live_bytes` is the layer-by-layer baseline.

Memory accounting (bytes), selected by ``accounting``:

* ``"lifetime"`` (default, the toolkit's): at step ``k`` every activation whose closed lifetime
  ``[first, last]`` contains ``k`` is live (residual shortcuts included);
* ``"layer_io"`` (MCUNet/TinyEngine's per-layer count): only the operator's own activation
  inputs and outputs.

In both, an **in-place** operator -- a unary elementwise operator (BatchNormalization, Relu,
Clip, ...: what fusion removes) and, with ``inplace_depthwise``, a depthwise convolution as in
TinyEngine -- whose input dies at that step counts ``max(in, out)`` instead of ``in + out``.
Weights are not counted (they live in flash / a resident region, seed 000 section 6). The graph
input is counted like an activation; in the patch stage either only its regions
(``input_resident=False``: the image is streamed from the sensor or flash patch by patch) or
all of it (``True``).

Operators a patch stage may contain: Conv, MaxPool, AveragePool (a window per spatial
dimension) and spatially pointwise operators (:data:`POINTWISE`, Concat on channels). The
stage is a prefix of the schedule; it ends before the first other operator (Reshape, Gemm,
GlobalAveragePool ...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .graph import Graph, Operator
from .lifetimes import _resolve_order, tensor_lifetimes
from .tiling import BudgetError, Window, split_even

__all__ = [
    "POINTWISE",
    "WINDOWED",
    "UNARY_INPLACE",
    "op_windows",
    "patchable_prefix",
    "layer_live_bytes",
    "layer_peak",
    "PatchResult",
    "evaluate_patch",
    "patch_candidates",
    "plan_patches",
]

#: Operators whose output element depends only on the same spatial position of the inputs.
POINTWISE = frozenset({
    "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
    "HardSwish", "Mul", "Add", "Sum", "Sub", "Div", "Dropout", "LRN", "Identity", "Concat",
    "PRelu", "QuantizeLinear", "DequantizeLinear",
})
#: Sliding-window operators (a :class:`~scheduling.tiling.Window` per spatial dimension).
WINDOWED = frozenset({"Conv", "MaxPool", "AveragePool"})
#: Unary elementwise operators that can run in place on their input when it dies there.
UNARY_INPLACE = frozenset({
    "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
    "HardSwish", "Dropout", "Identity", "QuantizeLinear", "DequantizeLinear",
})


def _acts(graph: Graph, names: Iterable[str]) -> list[str]:
    return [t for t in dict.fromkeys(names) if graph.tensors[t].kind != "weight"]


def op_windows(graph: Graph, op: Operator) -> tuple[Window, Window]:
    """(height, width) windows of a Conv/MaxPool/AveragePool in NCHW (ONNX attributes
    ``kernel_shape`` -- or the weight's shape --, ``strides``, ``pads`` ``[top, left, bottom,
    right]``, ``dilations``; ``auto_pad`` SAME_* derives the leading pad from the shapes)."""
    a = op.attributes
    ks = a.get("kernel_shape") or list(graph.tensors[op.inputs[1]].shape[2:])
    st = a.get("strides") or [1, 1]
    dl = a.get("dilations") or [1, 1]
    pads = a.get("pads")
    if pads is None:
        pads = [0, 0, 0, 0]
        ap = a.get("auto_pad", "NOTSET")
        if isinstance(ap, bytes):
            ap = ap.decode()
        if ap in ("SAME_UPPER", "SAME_LOWER"):
            xin = graph.tensors[op.inputs[0]].shape[2:]
            yout = graph.tensors[op.outputs[0]].shape[2:]
            for d in range(2):
                tot = max(0, (yout[d] - 1) * st[d] + (ks[d] - 1) * dl[d] + 1 - xin[d])
                pads[d] = tot // 2 if ap == "SAME_UPPER" else tot - tot // 2
    return (Window(int(ks[0]), int(st[0]), int(pads[0]), int(dl[0])),
            Window(int(ks[1]), int(st[1]), int(pads[1]), int(dl[1])))


def _is_depthwise(graph: Graph, op: Operator) -> bool:
    if op.op_type != "Conv":
        return False
    g = int(op.attributes.get("group", 1))
    return g > 1 and g == graph.tensors[op.inputs[0]].shape[1]


def _patchable(graph: Graph, op: Operator) -> bool:
    if op.op_type not in POINTWISE and op.op_type not in WINDOWED:
        return False
    if op.op_type == "Concat" and int(op.attributes.get("axis", 1)) != 1:
        return False
    for t in _acts(graph, op.inputs) + list(op.outputs):
        if len(graph.tensors[t].shape) != 4:
            return False
    return True


def patchable_prefix(graph: Graph, order: Sequence[str] | None = None) -> int:
    """Length of the longest schedule prefix whose operators can all run patch by patch
    (NCHW tensors; :data:`WINDOWED` or :data:`POINTWISE`). ``O(#ops)``."""
    order = _resolve_order(graph, order)
    for k, name in enumerate(order):
        if not _patchable(graph, graph.ops[name]):
            return k
    return len(order)


def _inplace(graph: Graph, op: Operator, last: dict[str, int], k: int, depthwise: bool) -> bool:
    if op.op_type in UNARY_INPLACE or (depthwise and _is_depthwise(graph, op)):
        ins = _acts(graph, op.inputs)
        return len(ins) == 1 and last.get(ins[0], -1) == k and len(op.outputs) == 1
    return False


def layer_live_bytes(graph: Graph, order: Sequence[str] | None = None,
                     accounting: str = "lifetime", inplace_depthwise: bool = True) -> np.ndarray:
    """Layer-by-layer activation bytes at each step (module docstring's accounting).

    Returns an int64 array of shape ``(T,)`` (bytes); the graph input counts as an activation
    from step 0 to its last consumer, weights are not counted. ``O(#ops + #tensor uses)``.

    Raises
    ------
    ValueError
        Unknown ``accounting``. ``ScheduleError`` for an invalid order.
    """
    if accounting not in ("lifetime", "layer_io"):
        raise ValueError(f"accounting must be 'lifetime' or 'layer_io', got {accounting!r}")
    order = _resolve_order(graph, order)
    lt = tensor_lifetimes(graph, order)
    last = {t: b for t, (_, b) in lt.items()}
    T = len(order)
    live = np.zeros(T, np.int64)
    if accounting == "lifetime":
        delta = np.zeros(T + 1, np.int64)
        for t, (f, b) in lt.items():
            if graph.tensors[t].kind != "weight":
                delta[f] += graph.tensors[t].nbytes
                delta[b + 1] -= graph.tensors[t].nbytes
        live = np.cumsum(delta[:T])
    for k, name in enumerate(order):
        op = graph.ops[name]
        if accounting == "layer_io":
            live[k] = sum(graph.tensors[t].nbytes for t in _acts(graph, op.inputs + op.outputs))
        if _inplace(graph, op, last, k, inplace_depthwise):
            i = _acts(graph, op.inputs)[0]
            live[k] -= min(graph.tensors[i].nbytes, graph.tensors[op.outputs[0]].nbytes)
    return live


def layer_peak(graph: Graph, order: Sequence[str] | None = None, accounting: str = "lifetime",
               inplace_depthwise: bool = True) -> int:
    """Max of :func:`layer_live_bytes` (bytes): the layer-by-layer peak."""
    live = layer_live_bytes(graph, order, accounting, inplace_depthwise)
    return int(live.max()) if live.size else 0


@dataclass
class PatchResult:
    """One evaluated patch-based execution (all sizes bytes, MACs as multiply-accumulates).

    Attributes
    ----------
    split : int
        Number of operators in the patch stage (schedule prefix ``order[:split]``).
    stage_end : str
        Last operator of the stage.
    grid : (int, int)
        Patches ``P x Q`` over the stage output.
    peak, stage_peak, rest_peak, layer_peak : int
        Overall peak ``max(stage_peak, rest_peak)``; the largest per-patch working set (plus the
        full stage output buffers); the layer-by-layer peak of the operators after the stage;
        the layer-by-layer peak of the whole graph (the baseline).
    macs, extra_macs : int
        MACs of the whole graph without patches; MACs recomputed in halo overlaps.
    extra_macs_ratio : float
        ``extra_macs / macs``.
    extra_bytes_read : int
        Activation bytes read by the stage's operators beyond the untiled execution (halos).
    """

    split: int
    stage_end: str
    grid: tuple[int, int]
    peak: int
    stage_peak: int
    rest_peak: int
    layer_peak: int
    macs: int
    extra_macs: int
    extra_macs_ratio: float
    extra_bytes_read: int

    @property
    def reduction(self) -> float:
        """``layer_peak / peak`` (how many times smaller the patch-based peak is)."""
        return self.layer_peak / self.peak if self.peak else math.inf

    def as_dict(self) -> dict:
        """A flat record (grid as ``"PxQ"``) with :attr:`reduction`."""
        d = asdict(self)
        d["grid"] = f"{self.grid[0]}x{self.grid[1]}"
        d["reduction"] = self.reduction
        return d


class _Ctx:
    """Per-graph data shared by the evaluations of many (split, grid) pairs."""

    def __init__(self, graph: Graph, order, accounting: str, inplace_depthwise: bool,
                 input_resident: bool) -> None:
        self.g = graph
        self.order = _resolve_order(graph, order)
        self.accounting = accounting
        self.inplace_depthwise = inplace_depthwise
        self.input_resident = input_resident
        self.lt = tensor_lifetimes(graph, self.order)
        self.last = {t: b for t, (_, b) in self.lt.items()}
        self.live = layer_live_bytes(graph, self.order, accounting, inplace_depthwise)
        self.layer_peak = int(self.live.max()) if self.live.size else 0
        # suffix max of the layer-by-layer curve: rest_peak of split s is suf[s]
        self.suf = np.concatenate([np.maximum.accumulate(self.live[::-1])[::-1], [0]])
        self.prefix = patchable_prefix(graph, self.order)
        self.ops = [graph.ops[n] for n in self.order]
        self.win = {op.name: op_windows(graph, op) for op in self.ops[: self.prefix]
                    if op.op_type in WINDOWED}
        self.macs = sum(int(op.macs or 0) for op in self.ops)

    def cut(self, s: int) -> list[str]:
        """Activations produced in ``order[:s]`` and read after it (or graph outputs)."""
        out = []
        for op in self.ops[:s]:
            for t in op.outputs:
                ten = self.g.tensors[t]
                if ten.kind == "output" or self.last.get(t, -1) >= s:
                    out.append(t)
        return out


def _evaluate(ctx: _Ctx, s: int, grid: tuple[int, int]) -> PatchResult | None:
    g = ctx.g
    cut = ctx.cut(s)
    if not cut:
        return None
    shapes = {g.tensors[t].shape[2:] for t in cut}
    if len(shapes) != 1:
        return None
    H, W = next(iter(shapes))
    P, Q = grid
    if P > H or Q > W:
        return None
    rows, cols = split_even(H, P), split_even(W, Q)
    reg: dict[str, list[np.ndarray]] = {}
    for t in cut:
        reg[t] = [rows[:-1].copy(), rows[1:].copy(), cols[:-1].copy(), cols[1:].copy()]

    def merge(t, r):
        if t in reg:
            o = reg[t]
            reg[t] = [np.minimum(o[0], r[0]), np.maximum(o[1], r[1]),
                      np.minimum(o[2], r[2]), np.maximum(o[3], r[3])]
        else:
            reg[t] = r

    for op in reversed(ctx.ops[:s]):
        outs = [reg[t] for t in op.outputs if t in reg]
        if not outs:
            continue  # an output nothing in the stage or after reads
        o = outs[0]
        for r in outs[1:]:
            o = [np.minimum(o[0], r[0]), np.maximum(o[1], r[1]),
                 np.minimum(o[2], r[2]), np.maximum(o[3], r[3])]
        for t in _acts(g, op.inputs):
            h, w = g.tensors[t].shape[2:]
            if op.op_type in WINDOWED:
                wh, ww = ctx.win[op.name]
                a, b = wh.input_interval(o[0], o[1])
                c, d = ww.input_interval(o[2], o[3])
                merge(t, [np.clip(a, 0, h), np.clip(b, 0, h), np.clip(c, 0, w), np.clip(d, 0, w)])
            elif h == 1 and w == 1:  # broadcast per-channel operand
                merge(t, [np.zeros(P, np.int64), np.ones(P, np.int64),
                          np.zeros(Q, np.int64), np.ones(Q, np.int64)])
            else:
                merge(t, [x.copy() for x in o])

    def area(t) -> np.ndarray:  # (P, Q) region bytes of tensor t
        r = reg[t]
        ten = g.tensors[t]
        per = ten.nbytes // max(1, ten.shape[2] * ten.shape[3])
        return per * np.outer(r[1] - r[0], r[3] - r[2])

    cutset = set(cut)
    full_cut = sum(g.tensors[t].nbytes for t in cut)
    inputs = [t for t in reg if g.tensors[t].kind == "input"]
    fixed = full_cut + (sum(g.tensors[t].nbytes for t in inputs) if ctx.input_resident else 0)
    skip = cutset | (set(inputs) if ctx.input_resident else set())
    areas = {t: area(t) for t in reg if t not in skip}
    # stage lifetimes of the region tensors (first, last step inside the stage)
    stage_peak = 0
    extra_macs = 0
    extra_read = 0
    if ctx.accounting == "lifetime":
        events: list[list[str]] = [[] for _ in range(s + 1)]
        for t in areas:
            f, b = ctx.lt[t]
            events[f].append(t)
            events[min(b, s - 1) + 1].append("-" + t)
        cur = np.zeros((P, Q), np.int64)
    for k, op in enumerate(ctx.ops[:s]):
        ins = _acts(g, op.inputs)
        if ctx.accounting == "lifetime":
            for e in events[k]:
                if e.startswith("-"):
                    continue
                cur = cur + areas[e]
            live = cur.copy()
        else:
            live = np.zeros((P, Q), np.int64)
            for t in dict.fromkeys(ins + list(op.outputs)):
                if t in areas:
                    live = live + areas[t]
        if _inplace(g, op, ctx.last, k, ctx.inplace_depthwise) and ins[0] in areas \
                and op.outputs[0] in areas:
            live = live - np.minimum(areas[ins[0]], areas[op.outputs[0]])
        stage_peak = max(stage_peak, int(live.max()) + fixed)
        if ctx.accounting == "lifetime":
            for e in events[k + 1]:
                if e.startswith("-"):
                    cur = cur - areas[e[1:]]
        # recomputation: output elements computed over all patches vs once
        y = op.outputs[0]
        if y in reg:
            r = reg[y]
            ten = g.tensors[y]
            hw = ten.shape[2] * ten.shape[3]
            computed = int((r[1] - r[0]).sum()) * int((r[3] - r[2]).sum())
            if op.macs:
                extra_macs += op.macs * (computed - hw) // hw
            for t in ins:
                if t in reg:
                    rr = reg[t]
                    tt = g.tensors[t]
                    read = int((rr[1] - rr[0]).sum()) * int((rr[3] - rr[2]).sum())
                    extra_read += tt.nbytes * (read - tt.shape[2] * tt.shape[3]) // (
                        tt.shape[2] * tt.shape[3])
    rest = int(ctx.suf[s])
    return PatchResult(
        split=s, stage_end=ctx.order[s - 1], grid=(P, Q), peak=max(stage_peak, rest),
        stage_peak=stage_peak, rest_peak=rest, layer_peak=ctx.layer_peak, macs=ctx.macs,
        extra_macs=int(extra_macs), extra_macs_ratio=extra_macs / ctx.macs if ctx.macs else 0.0,
        extra_bytes_read=int(extra_read),
    )


def evaluate_patch(graph: Graph, split: int | str, grid: tuple[int, int] | int,
                   order: Sequence[str] | None = None, accounting: str = "lifetime",
                   inplace_depthwise: bool = True, input_resident: bool = False) -> PatchResult:
    """Peak, recomputed MACs and extra bytes of one patch-based execution.

    Parameters
    ----------
    graph : Graph
        NCHW, batch 1 (tensor bytes are split over ``H x W``).
    split : int or str
        Operators in the patch stage (prefix length of the schedule), or the name of the stage's
        last operator.
    grid : (int, int) or int
        Patches ``P x Q`` (an int ``P`` means ``P x P``) over the stage output; patch edges are
        :func:`~scheduling.tiling.split_even`.
    order : sequence of str or None
        Schedule (default stored order).
    accounting, inplace_depthwise, input_resident
        See the module docstring.

    Returns
    -------
    PatchResult

    Raises
    ------
    GraphError
        ``split`` outside ``1..patchable_prefix``, a stage whose output tensors differ in spatial
        size, or a grid larger than the stage output.

    Notes
    -----
    Regions are propagated from the stage output back to the input (union over consumers of the
    intervals of :meth:`Window.input_interval`), separately for rows and columns; a step of the
    stage costs the sum of its live tensors' regions, maximised over patches. Runs in
    ``O(split x (P + Q + P Q))`` with numpy.
    """
    from .errors import GraphError

    ctx = _Ctx(graph, order, accounting, inplace_depthwise, input_resident)
    if isinstance(split, str):
        if split not in ctx.order:
            raise GraphError(f"patch stage: no operator named {split!r} in the schedule")
        split = ctx.order.index(split) + 1
    if not 1 <= split <= ctx.prefix:
        raise GraphError(
            f"patch stage: split {split} must be in 1..{ctx.prefix} (operator "
            f"{ctx.order[ctx.prefix] if ctx.prefix < len(ctx.order) else None!r} cannot run per "
            "patch)"
        )
    grid = (grid, grid) if isinstance(grid, int) else tuple(grid)
    res = _evaluate(ctx, split, grid)
    if res is None:
        raise GraphError(
            f"patch stage ending at {ctx.order[split - 1]!r}: its output tensors "
            f"{ctx.cut(split)} need one common spatial size of at least {grid[0]}x{grid[1]}"
        )
    return res


def patch_candidates(graph: Graph, order: Sequence[str] | None = None,
                     grids: Iterable[int | tuple[int, int]] = range(1, 9),
                     accounting: str = "lifetime", inplace_depthwise: bool = True,
                     input_resident: bool = False, single_cut: bool = True) -> list[PatchResult]:
    """Every feasible (stage end, grid) pair: stage ends are the schedule positions inside the
    patchable prefix where the stage output is one tensor (``single_cut``, MCUNetV2's block
    boundaries) or several of one spatial size. ``O(#splits x #grids x split x P Q)``."""
    ctx = _Ctx(graph, order, accounting, inplace_depthwise, input_resident)
    grids = [(g, g) if isinstance(g, int) else tuple(g) for g in grids]
    out = []
    for s in range(1, ctx.prefix + 1):
        cut = ctx.cut(s)
        if not cut or (single_cut and len(cut) != 1):
            continue
        for gr in grids:
            r = _evaluate(ctx, s, gr)
            if r is not None:
                out.append(r)
    return out


def plan_patches(graph: Graph, budget: int, order: Sequence[str] | None = None,
                 grids: Iterable[int | tuple[int, int]] = range(1, 9),
                 accounting: str = "lifetime", inplace_depthwise: bool = True,
                 input_resident: bool = False, single_cut: bool = True) -> PatchResult:
    """The patch stage end and grid with the least recomputed MACs whose peak fits ``budget``.

    Parameters
    ----------
    graph : Graph
    budget : int
        Bytes available for activations.
    grids : iterable of int or (int, int)
        Grids tried (``1`` is layer-by-layer execution of the stage: no overhead).
    order, accounting, inplace_depthwise, input_resident, single_cut
        As :func:`evaluate_patch` and :func:`patch_candidates`.

    Returns
    -------
    PatchResult
        Ties in extra MACs go to the lower peak, then to fewer patches.

    Raises
    ------
    BudgetError
        No candidate fits; the message names the smallest reachable peak and how it is reached.

    References
    ----------
    Lin et al., "MCUNetV2: Memory-Efficient Patch-based Inference for Tiny Deep Learning",
    NeurIPS 2021, section 3.
    """
    cands = patch_candidates(graph, order, grids, accounting, inplace_depthwise, input_resident,
                             single_cut)
    if not cands:
        base = layer_peak(graph, order, accounting, inplace_depthwise)
        if base <= budget:
            ctx = _Ctx(graph, order, accounting, inplace_depthwise, input_resident)
            return PatchResult(0, "", (1, 1), base, 0, base, base, ctx.macs, 0, 0.0, 0)
        raise BudgetError(
            f"graph {graph.name!r}: budget {budget} bytes is below the smallest reachable peak "
            f"{base} bytes (no operator prefix can run patch by patch)", smallest_peak=base
        )
    ok = [c for c in cands if c.peak <= budget]
    if not ok:
        best = min(cands, key=lambda c: (c.peak, c.extra_macs))
        raise BudgetError(
            f"graph {graph.name!r}: budget {budget} bytes is below the smallest reachable peak "
            f"{best.peak} bytes (patch stage ending at {best.stage_end!r}, grid "
            f"{best.grid[0]}x{best.grid[1]}; layer-by-layer peak {best.layer_peak} bytes)",
            smallest_peak=best.peak,
        )
    return min(ok, key=lambda c: (c.extra_macs, c.peak, c.grid[0] * c.grid[1]))
