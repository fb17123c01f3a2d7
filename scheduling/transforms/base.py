"""Shared machinery of the graph transforms: the pass log, alias annotations, graph rebuilding and
the allocation problem of a transformed graph.

Alias annotations
-----------------
A pass that makes a tensor share memory with another records it on an operator, in the attribute
``"aliases"``: a list of ``[child, parent, delta_bytes]``. The child tensor occupies
``[offset(parent) + delta, offset(parent) + delta + nbytes(child))``. Views and in-place operators
put ``[output, input, 0]`` on themselves; a Concat written in place puts ``[input_i, output,
slice offset]`` on the Concat. :func:`graph_aliases` collects them; :func:`transformed_problem`
passes them to :class:`planners.Problem` (``aliases=``), where every planner and the validator
honour them (one buffer per alias group, lifetime the hull of its members', see
:meth:`planners.model.Problem.collapse`). :meth:`scheduling.graph.Graph.copy` deep-copies
attributes, so annotations survive copies and later passes.

Fused operators
---------------
A fused operator keeps its anchor's name and ``op_type`` (``Conv`` stays ``Conv``, so MACs,
workspaces and tiling still see a convolution) and gains attributes ``fused_ops`` (original
operator names), ``fused_types`` (their types), ``epilogue`` (types applied to the anchor's result,
in order), ``registers`` (vector registers of the fused group, :mod:`.legality`), ``prologue`` /
``prologue_casts`` (casts applied on load of an input, in front of the anchor in ``fused_ops``)
and ``kernel`` (a kernel name such as ``conv_bias_relu``, used by the plan export).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planners.bounds import lower_bound
from planners.model import Problem

from ..errors import GraphError
from ..graph import Graph, Operator, Tensor
from ..lifetimes import lifetime_problem

__all__ = [
    "PassLog",
    "ELEMENTWISE_UNARY",
    "ELEMENTWISE_BINARY",
    "ELEMENTWISE",
    "REDUCTIONS",
    "VIEW_OPS",
    "graph_aliases",
    "add_alias",
    "rebuild",
    "transformed_problem",
    "transformed_peak",
    "kernel_name",
    "is_elementwise",
]

#: Unary elementwise operators (each output element depends on the same input element only).
ELEMENTWISE_UNARY = frozenset(
    {
        "Relu", "Relu6", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish",
        "Elu", "Selu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Erf", "Gelu", "Softplus",
        "Identity", "Cast", "QuantizeLinear", "DequantizeLinear", "BatchNormalization",
        "PRelu", "Dropout",
    }
)
#: Binary elementwise operators (same-index operands, broadcasting allowed on the second).
ELEMENTWISE_BINARY = frozenset({"Add", "Sum", "Sub", "Mul", "Div", "Max", "Min", "Pow"})
#: Every elementwise operator type.
ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY
#: Operators whose output elements depend on many input elements through a reduction that must
#: finish first (seed 000 section 4, "semantic boundary"): a fused kernel cannot hand them a
#: partial result of its producer.
REDUCTIONS = frozenset(
    {
        "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
        "ReduceProd", "ReduceL2", "GlobalAveragePool", "GlobalMaxPool", "LayerNormalization",
        "InstanceNormalization", "LRN", "ArgMax", "ArgMin", "TopK", "MatMul", "Gemm", "Conv",
        "ConvTranspose", "MaxPool", "AveragePool",
    }
)
#: Operators that only reinterpret the shape of their first input (no data movement).
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})


def is_elementwise(op: Operator) -> bool:
    """True iff ``op`` (or every member of a fused ``op``) is elementwise."""
    types = op.attributes.get("fused_types") or [op.op_type]
    return all(t in ELEMENTWISE for t in types)


@dataclass
class PassLog:
    """What one pass changed.

    Attributes
    ----------
    name : str
        Registry name of the pass.
    changes : list of dict
        One record per change, with at least ``action`` (``"remove"``, ``"fold_bn"``,
        ``"fuse"``, ``"alias"``, ``"refuse"``, ...) and the operator/tensor names involved.
    stats : dict
        Counters (changes per action, ``saved_bytes`` total for fusion, ``would_be_spills``...).
    """

    name: str
    changes: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def add(self, action: str, **info: Any) -> None:
        """Record one change and count it under ``stats[action]``."""
        self.changes.append({"action": action, **info})
        self.stats[action] = self.stats.get(action, 0) + 1

    def count(self, action: str) -> int:
        """Number of changes recorded with ``action``."""
        return int(self.stats.get(action, 0))

    def __repr__(self) -> str:
        return f"PassLog(name={self.name!r}, changes={len(self.changes)}, stats={self.stats})"


def graph_aliases(graph: Graph) -> dict[str, tuple[str, int]]:
    """``{child tensor: (parent tensor, delta bytes)}`` from every operator's ``aliases``
    attribute (module docstring). ``O(#ops + #aliases)``.

    Raises
    ------
    GraphError
        A tensor is given two parents, or an annotation names an unknown tensor.
    """
    out: dict[str, tuple[str, int]] = {}
    for op in graph.ops.values():
        for child, parent, delta in op.attributes.get("aliases", ()):
            for t in (child, parent):
                if t not in graph.tensors:
                    raise GraphError(
                        f"operator {op.name!r}: alias annotation names unknown tensor {t!r}"
                    )
            if child in out and out[child] != (parent, int(delta)):
                raise GraphError(
                    f"tensor {child!r}: aliased to both {out[child][0]!r} and {parent!r} "
                    f"(operator {op.name!r}); a tensor has one alias parent"
                )
            out[child] = (parent, int(delta))
    return out


def add_alias(op: Operator, child: str, parent: str, delta: int = 0) -> None:
    """Append ``[child, parent, delta]`` to ``op.attributes["aliases"]`` (in place)."""
    op.attributes.setdefault("aliases", []).append([child, parent, int(delta)])


def alias_root(aliases: Mapping[str, tuple[str, int]], t: str) -> tuple[str, int]:
    """(root tensor, accumulated delta bytes) of ``t`` following parent links."""
    d = 0
    seen = set()
    while t in aliases:
        if t in seen:
            raise GraphError(f"tensor {t!r}: alias parent links form a cycle")
        seen.add(t)
        t, dd = aliases[t]
        d += dd
    return t, d


def kernel_name(types: Sequence[str], has_bias: bool = False) -> str:
    """A kernel name from fused operator types: ``["Conv", "Relu"]`` -> ``"conv_relu"``;
    ``has_bias`` inserts ``bias`` after the anchor (``conv_bias_relu``)."""
    parts = [types[0].lower()] + (["bias"] if has_bias else []) + [t.lower() for t in types[1:]]
    return "_".join(parts)


def rebuild(
    src: Graph,
    ops: Iterable[Operator],
    new_tensors: Mapping[str, Tensor] | None = None,
    rename: Mapping[str, str] | None = None,
    kinds: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Graph:
    """A new graph holding ``ops`` (in the given order) and the tensors they use.

    Parameters
    ----------
    src : Graph
        Source of tensor metadata (shape, dtype, bytes, kind) and of the graph inputs and outputs.
    ops : iterable of Operator
        The operators of the new graph, in stored order (attributes are deep-copied).
    new_tensors : mapping, optional
        Tensors not in ``src`` (new weights, workspaces), by name.
    rename : mapping, optional
        Tensor renames applied to operator inputs/outputs, alias annotations and graph outputs
        (``old -> new``, followed transitively): removing an ``Identity`` renames its output to
        its input.
    kinds : mapping, optional
        Kind overrides by tensor name (``"weight"`` for a constant-folded result).
    name : str, optional
        Graph name (default ``src.name``).

    Returns
    -------
    Graph
        Graph inputs of ``src`` (all kept, even if unread), then the tensors in first-use order;
        unused weights and activations are dropped; ``src``'s graph outputs (renamed) stay
        outputs. ``O(#ops + #tensor uses)``.
    """
    new_tensors = dict(new_tensors or {})
    rename = dict(rename or {})
    kinds = dict(kinds or {})

    def rn(t: str) -> str:
        seen = 0
        while t in rename and seen <= len(rename):
            t = rename[t]
            seen += 1
        return t

    g = Graph(src.name if name is None else name)

    def add(t: str) -> None:
        if t in g.tensors:
            return
        meta = new_tensors.get(t) or src.tensors.get(t)
        if meta is None:
            raise GraphError(f"graph {g.name!r}: rebuilt operator uses unknown tensor {t!r}")
        kind = kinds.get(t, meta.kind)
        if kind == "output":
            kind = "activation"  # marked below, after its producer exists
        value = meta.value if kind == "weight" else None  # constant values travel with weights
        g.add_tensor(t, meta.shape, meta.dtype, kind=kind, nbytes=meta.nbytes, value=value)

    for t in src.inputs:
        add(t)
    for op in ops:
        ins = tuple(rn(t) for t in op.inputs)
        outs = tuple(rn(t) for t in op.outputs)
        for t in ins + outs:
            add(t)
        attrs = copy.deepcopy(op.attributes)
        if "aliases" in attrs:
            attrs["aliases"] = [[rn(c), rn(p), d] for c, p, d in attrs["aliases"]]
        g.add_op(op.name, op.op_type, ins, outs, attrs, op.macs)
    for t in src.outputs:
        r = rn(t)
        if r not in g.tensors:
            meta = src.tensors.get(r)
            if meta is not None and meta.kind in ("input", "weight"):
                add(r)
            continue
        if g.tensors[r].kind in ("activation", "output"):
            g.mark_output(r)
    for t, meta in src.tensors.items():  # outputs produced here that were outputs in src
        if meta.kind == "output" and t in g.tensors and g.tensors[t].producer is not None:
            g.mark_output(t)
    return g


def transformed_problem(
    graph: Graph,
    order: Sequence[str] | None = None,
    *,
    unified: bool = False,
    include_inputs: bool = False,
    alignment: int = 1,
    capacity: int | None = None,
    name: str | None = None,
) -> Problem:
    """:func:`scheduling.lifetimes.lifetime_problem` of ``graph`` plus its alias groups.

    Parameters are those of :func:`~scheduling.lifetimes.lifetime_problem`. Aliases whose child or
    parent is not a buffer of the problem (e.g. a view of a graph input when inputs are not
    buffers) are left out.

    Returns
    -------
    Problem
        Buffers as ``lifetime_problem`` (half-open ``[first, last + 1)`` steps, bytes) with
        ``aliases={child: (parent, delta)}``.

    Raises
    ------
    ProblemError
        An alias breaks a rule of :class:`planners.Problem` (e.g. a slice offset that is not a
        multiple of ``alignment``); ``ScheduleError`` for a bad order.
    """
    p = lifetime_problem(
        graph, order, unified=unified, include_inputs=include_inputs, alignment=alignment,
        capacity=capacity, name=name,
    )
    al = {c: v for c, v in graph_aliases(graph).items() if c in p.index and v[0] in p.index}
    if not al:
        return p
    return Problem(p.buffers, capacity=p.capacity, alignment=p.alignment, name=p.name, aliases=al)


def transformed_peak(graph: Graph, order: Sequence[str] | None = None, **kw: Any) -> int:
    """Lower bound (max live bytes, alias groups collapsed) of :func:`transformed_problem`."""
    return lower_bound(transformed_problem(graph, order, **kw))
