"""Fusion legality and cost (seed 000 section 4).

* **Semantic boundary**: a fused kernel hands each epilogue operator its producer's result tile by
  tile. An operator in :data:`SEMANTIC_REDUCTIONS` (Softmax, ReduceMean, ...) needs its producer's
  *whole* output (a full row or tensor) before it can emit anything, so inside a fused group it
  would consume a partial result ("a proper subset of an operator's output used by another").
  :func:`consumes_partial_result` is that check; only elementwise operators join a group as
  epilogues, and a reduction may start a group (Softmax followed by an elementwise scale is legal).
* **Register pressure** (:class:`VectorRegisterModel`): RISC-V V style, ``vlen`` bits per vector
  register, ``num_registers`` (32) registers. A fused kernel computes ``tile_elems`` output
  elements per iteration; each value of the group (one result per operator, one operand tile per
  distinct non-scalar external input) occupies ``ceil(tile_elems * width / vlen)`` registers,
  where ``width`` is the element width in bits (int8 -> 8, float32 -> 32) and integer
  contractions (Conv, MatMul, Gemm) accumulate in ``acc_bits`` (32). We count every value of the
  group as live at once (a software-pipelined kernel keeps them all): a conservative model. A
  group needing more than ``num_registers`` registers is refused; the excess is the would-be spill
  count.
* **Prologue casts** (:func:`prologue_refusal`): a standalone ``Cast`` / ``QuantizeLinear`` /
  ``DequantizeLinear`` (:data:`CAST_OPS`) is elementwise, so the operator reading its output can
  apply it to each input tile as it loads it: the cast's output tensor is never stored. Unlike an
  epilogue this never hands anyone a partial result (element ``i`` of the cast needs only element
  ``i`` of its input), so a reduction or a contraction may absorb it too; the anchor must be a
  compute kernel that loads its operands (:data:`PROLOGUE_ANCHORS`: contractions, elementwise
  operators, pooling and reductions), not a view, a ``Concat`` written in place or a horizontal
  group, and the cast's output must have no other reader and not be a graph output. A
  contraction re-applies the cast on every reload of an input element (``k_h x k_w`` times for a
  convolution without im2col); that is compute, not memory, and is not modelled. The register
  budget is checked like an epilogue's, the cast's input tile added to the group's values.
* **Peak** (:func:`accept_without_peak_increase`): a fusion changes lifetimes. A fused operator
  placed at its last member's step keeps the anchor's inputs alive longer; one placed at the
  anchor's step produces the last member's output earlier (a widening cast in the chain makes it
  larger than the intermediates it replaces); a horizontal group keeps several outputs alive
  together; a Concat written in place makes the whole concat buffer live from its first input's
  producer on. So every fusion of every pattern is judged on the whole schedule: the peak (max
  live bytes, alias groups collapsed, :func:`~.base.transformed_peak`) of the transformed graph
  under its stored operator order -- the schedule that ``memplan export``, ``memplan compare
  --pipeline`` and ``make bench-transforms`` plan -- never rises above the peak before the
  fusion. A fusion that would raise it is refused (log action ``refuse``, ``reason="raises_peak"``,
  with ``peak_before`` / ``peak_after`` in bytes) unless the caller allows it.
* **Saved bytes**: ``saved_bytes = 2 x size(intermediate) x steps_eliminated`` (one write and one
  read of each intermediate tensor no longer stored; each merge eliminates one step).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graph import Graph, Operator
from .base import ELEMENTWISE, PassLog, transformed_peak

__all__ = [
    "SEMANTIC_REDUCTIONS",
    "CONTRACTIONS",
    "CAST_OPS",
    "POOLING",
    "PROLOGUE_ANCHORS",
    "consumes_partial_result",
    "prologue_refusal",
    "VectorRegisterModel",
    "saved_bytes",
    "accept_without_peak_increase",
]

#: Operators whose every output element depends on a reduction over many producer elements.
SEMANTIC_REDUCTIONS = frozenset(
    {
        "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
        "ReduceProd", "ReduceL2", "ReduceL1", "ReduceLogSumExp", "GlobalAveragePool",
        "GlobalMaxPool", "LayerNormalization", "InstanceNormalization", "LRN", "ArgMax",
        "ArgMin", "TopK", "CumSum",
    }
)
#: Contractions that accumulate (integer inputs accumulate in wider registers).
CONTRACTIONS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})
#: Type conversions the quantisation pass inserts at boundaries (seed 000 section 3.3).
CAST_OPS = frozenset({"Cast", "QuantizeLinear", "DequantizeLinear"})
#: Window pooling operators (they load input tiles like a contraction).
POOLING = frozenset({"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"})
#: Operators that can apply a cast to their operand tiles on load (prologue fusion).
PROLOGUE_ANCHORS = CONTRACTIONS | ELEMENTWISE | POOLING | SEMANTIC_REDUCTIONS


def consumes_partial_result(producer: Operator, consumer: Operator) -> bool:
    """True iff fusing ``consumer`` after ``producer`` would make it consume a partial result:
    ``consumer`` reduces over ``producer``'s output (it needs a proper superset of the tile a
    fused kernel has when it runs). A fused ``consumer`` keeps its anchor's ``op_type`` (a
    prologue cast absorbed in front of it does not change that). ``O(1)``."""
    return consumer.op_type in SEMANTIC_REDUCTIONS


def prologue_refusal(graph: Graph, cast: Operator, consumer: Operator) -> str | None:
    """Why ``cast`` cannot be folded into ``consumer`` as a prologue, or ``None`` if it can
    (module docstring; the register budget and the peak are checked by the fusion pass).

    Reasons: ``"not_a_cast"`` (not a standalone operator of :data:`CAST_OPS` with one output),
    ``"cast_output_shared"`` (the cast's output is a graph output, has another reader, or is
    aliased), ``"anchor_not_fusable"`` (``consumer`` is not a :data:`PROLOGUE_ANCHORS` kernel,
    is a horizontal group or writes in place / into a view). ``O(#consumers)``.
    """
    if (cast.op_type not in CAST_OPS or "fused_ops" in cast.attributes
            or len(cast.outputs) != 1 or "aliases" in cast.attributes):
        return "not_a_cast"
    t = graph.tensors[cast.outputs[0]]
    if t.kind == "output" or t.consumers != [consumer.name]:
        return "cast_output_shared"
    if (consumer.op_type not in PROLOGUE_ANCHORS or "horizontal" in consumer.attributes
            or "aliases" in consumer.attributes):
        return "anchor_not_fusable"
    return None


@dataclass(frozen=True)
class VectorRegisterModel:
    """Vector register file model for the register-pressure limit (module docstring).

    Parameters
    ----------
    vlen : int
        Bits per vector register (RVV ``VLEN``), ``>= 8``.
    num_registers : int
        Architectural vector registers (32 in RVV).
    tile_elems : int
        Output elements a fused kernel computes per iteration.
    acc_bits : int
        Accumulator width of integer contractions (bits).

    Examples
    --------
    Seed 003's first layer after BN folding, Conv (int8) + Relu, 32-element tiles, VLEN 128:
    conv result 8 registers (int32 accumulators), Relu result 2, operand tiles x 2, weights 2,
    int32 bias 8: 22 <= 32. At VLEN 64 every tile needs twice the registers: 44 > 32.

    >>> from scheduling.examples import mobilenet_v1_first_layer
    >>> from scheduling.transforms import fuse
    >>> g, _ = fuse(mobilenet_v1_first_layer(), epilogues=False)
    >>> group = [g.ops["conv"], g.ops["relu"]]
    >>> m128, m64 = VectorRegisterModel(128, tile_elems=32), VectorRegisterModel(64, tile_elems=32)
    >>> m128.registers_of(g, group), m64.registers_of(g, group)
    (22, 44)
    """

    vlen: int = 128
    num_registers: int = 32
    tile_elems: int = 16
    acc_bits: int = 32

    def registers(self, bits: int) -> int:
        """Registers holding one ``tile_elems`` tile of ``bits``-wide elements."""
        return math.ceil(self.tile_elems * bits / self.vlen)

    def registers_of(self, graph: Graph, group: Sequence[Operator]) -> int:
        """Vector registers a fused group needs: its operators' results plus its distinct
        non-scalar external operand tiles. ``O(#group inputs)``."""
        produced = {t for op in group for t in op.outputs}
        total = 0
        for op in group:
            out = graph.tensors[op.outputs[0]]
            bits = np.dtype(out.dtype).itemsize * 8
            if op.op_type in CONTRACTIONS and np.dtype(out.dtype).kind in "iu":
                bits = max(bits, self.acc_bits)
            total += self.registers(bits)
        seen = set()
        for op in group:
            for t in op.inputs:
                if t in produced or t in seen:
                    continue
                seen.add(t)
                ten = graph.tensors[t]
                if ten.numel <= 1:
                    continue  # a scalar lives in a scalar register
                total += self.registers(np.dtype(ten.dtype).itemsize * 8)
        return total


def saved_bytes(intermediate_bytes: int, steps_eliminated: int = 1) -> int:
    """Seed 000 section 4: ``2 x size(intermediate) x steps_eliminated`` (bytes).

    >>> saved_bytes(401408)
    802816
    """
    return 2 * int(intermediate_bytes) * int(steps_eliminated)


def accept_without_peak_increase(
    graph: Graph,
    candidates: Sequence[Any],
    build: Callable[[list[Any]], Graph],
    log: PassLog,
    fusion: str,
    *,
    risky: Callable[[Any], bool] | None = None,
    describe: Callable[[Any], Any] = list,
    allow_peak_increase: bool = False,
) -> list[Any]:
    """The candidate fusions to apply so that the peak of ``graph`` does not rise (module
    docstring, "Peak").

    Candidates that cannot raise the peak by construction (``risky(c)`` false) are tried together
    and accepted with one peak computation when, together, they do not raise it. Otherwise (the
    construction argument failed for some) the block is split in halves, each judged the same way
    in order, down to single candidates. Every ``risky`` candidate is judged alone, in the given
    order. A block ``B`` is accepted when the peak of ``build(chosen + B)`` is at most the peak of
    ``build(chosen)``; a single candidate that fails is refused. So the peak never rises above
    :func:`~.base.transformed_peak` ``(graph)``, and each refusal names the fusion and the bytes.

    Parameters
    ----------
    graph : Graph
        The graph before these fusions (its stored order is the schedule judged).
    candidates : sequence
        Candidate fusions in stored order (any objects ``build`` understands).
    build : callable
        ``build(list of candidates) -> Graph``: the graph with exactly those fusions applied.
    log : PassLog
        Receives ``refuse`` records (``reason="raises_peak"``, ``fusion``, ``group``,
        ``peak_before``, ``peak_after``, bytes) and, when allowed, ``raises_peak`` records
        (``group``, ``peak_before``, ``peak_after``, ``refused=False``).
    fusion : str
        Name of the fusion pattern for the log (``"epilogue"``, ``"horizontal"``, ...).
    risky : callable, optional
        ``risky(c)``: ``c`` may raise the peak by construction (default: every candidate).
    describe : callable
        ``describe(c)``: the ``group`` recorded in the log (default ``list``).
    allow_peak_increase : bool
        Accept fusions that raise the peak (they are still logged as ``raises_peak``).

    Returns
    -------
    list
        The accepted candidates, in the order of ``candidates``.

    Notes
    -----
    One build and peak computation (``O(n log n)``, ``n`` the number of tensors) for the safe
    candidates together, ``O(r log k)`` more when ``r`` of ``k`` of them raise the peak, and one
    per risky candidate.
    """
    idx = list(range(len(candidates)))
    is_risky = [risky is None or bool(risky(c)) for c in candidates]
    state = {"peak": transformed_peak(graph)}
    chosen: list[int] = []

    def trial_peak(extra: list[int]) -> int:
        return transformed_peak(build([candidates[j] for j in sorted(chosen + extra)]))

    def judge(block: list[int]) -> None:
        """Accept ``block`` when together it keeps the peak, else split it; a single candidate
        that raises the peak is refused (or, allowed, accepted and logged)."""
        trial = trial_peak(block)
        if trial <= state["peak"]:
            chosen.extend(block)
            state["peak"] = trial
            return
        if len(block) > 1:
            half = len(block) // 2
            judge(block[:half])
            judge(block[half:])
            return
        c = candidates[block[0]]
        if not allow_peak_increase:
            log.add("refuse", reason="raises_peak", fusion=fusion, group=describe(c),
                    peak_before=state["peak"], peak_after=trial)
            return
        log.add("raises_peak", group=describe(c), peak_before=state["peak"], peak_after=trial,
                refused=False)
        chosen.extend(block)
        state["peak"] = trial

    safe = [i for i in idx if not is_risky[i]]
    if safe:
        judge(safe)  # one peak computation when, as expected, they keep the peak together
    for i in idx:
        if is_risky[i]:
            judge([i])
    return [candidates[i] for i in sorted(chosen)]
