"""Shape resolution for ONNX import: a chain of sources, and which one gave each tensor's shape.

Exporters write models whose intermediate shapes ``onnx.shape_inference`` alone cannot settle:
pads or Reshape targets computed by ``Shape -> Gather -> Concat`` or ``Transpose -> Reshape`` of
constants, ``-1`` in declared shapes, masks that old operator versions leave untyped.
:func:`resolve_shapes` settles them with these sources, in order; a tensor keeps the first
source that gave it a fully static shape (:attr:`ShapeResolution.source`):

``"declared"``
    a static shape written in the file (graph input, graph output, ``value_info``) or an
    initializer's dims;
``"override"``
    the caller's ``overrides`` (a tensor's whole shape, or a value per ``dim_param``);
``"onnx_strict"``
    ``onnx.shape_inference.infer_shapes(strict_mode=True)``;
``"onnx_data_prop"``
    the same with ``data_prop=True`` (shape arithmetic on ``Shape`` outputs);
``"constant_folding"``
    shape-only subgraphs evaluated with the ONNX reference evaluator
    (:class:`onnx.reference.ReferenceEvaluator`), then strict inference again on a copy where the
    folded values are initializers. A node folds only when every input is an initializer that is
    not also a graph input, a ``Constant``, an already folded value, or for ``Shape``/``Size``,
    a tensor whose shape is static. A value that depends on runtime input data never folds;
``"onnx_spec"``
    output shapes an operator specification fixes but the inference functions omit: the
    outputs of :data:`UNTYPED_SPEC_OPS` that inference leaves untyped or fails on
    (``GroupNormalization``: its input's shape and type; :func:`_infer` cuts those nodes out,
    gives their outputs these types and infers the rest strictly; any other operator whose
    output stays untyped is named as the producer, not its consumer), the mask of
    ``Dropout`` opset 7 to 9 (the input's shape and type), ``Compress`` with a constant
    condition (the count of its true entries along ``axis``), and the ``com.microsoft`` operators of
    :data:`CONTRIB_SPEC_OPS` (``DynamicQuantizeLSTM``: ONNX Runtime ``docs/ContribOperators.md``);
    inference then carries these shapes to the consumers;
``"ort_symbolic"``
    ONNX Runtime's symbolic shape inference
    (:class:`onnxruntime.tools.symbolic_shape_infer.SymbolicShapeInference`), kept only where it
    gives a static shape;
``"onnx_runtime"``
    after the chain: an operator whose output size ONNX Runtime's CPU kernel computes with its
    own (float) arithmetic (:data:`RUNTIME_RULE_OPS`: ``Resize``/``Upsample`` scales, ``Range``,
    pooling with ``ceil_mode``) gets the shape that kernel writes when its bytes exceed the
    spec's (:func:`runtime_output_shape`); the consumers are inferred again from it. Where the
    two differ, the larger is kept and one line of :attr:`ShapeResolution.notes` names the
    tensor, both shapes and which one was taken: a planned size is never smaller than what ONNX
    Runtime writes;
``"measured"``
    ``mode="measured"``: one ONNX Runtime run on random inputs with every node output exposed as
    a graph output (:func:`measured_shapes`). A cross-check, not an inference: a shape that
    depends on input *values* is the shape for these inputs.

Declared intermediate shapes are hints, not laws: when strict inference fails and succeeds
without the file's ``value_info`` entries (never the graph inputs, a fully static declared graph
output, or an override), they are dropped; each one inference contradicts is named with both
shapes in :attr:`ShapeResolution.notes`, and a declared shape inference does not confirm is no
longer trusted. A graph output declared with symbolic dims (``[1, 'seqlen']``, the export
trace) is likewise a hint. A failure inside a subgraph leaves the main graph checked strictly
around the control-flow node; the subgraphs are judged by
:func:`scheduling.onnx_control_flow.infer_subgraphs`.

A tensor no source settles is absent from :attr:`ShapeResolution.shapes`; the importer raises
:func:`unknown_shape_error`, which names the first node (file order, which ONNX requires to be
topological) whose output stays unknown, its operator type, and the ``--override`` that would
help.

Before any of this, :func:`check_node_order` checks the node order by names alone, so a cycle
is reported as a cycle (:class:`~scheduling.errors.CycleError`) whatever the shapes of its
tensors.

Overrides (:func:`apply_overrides`) work on any tensor of the model by name (graph input, graph
output, ``value_info`` entry, node output) and on any ``dim_param``; a ``-1`` (or other negative)
``dim_value`` in a declared shape, which some exporters write for "dynamic", is treated as
unknown rather than as a size.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from .errors import OnnxImportError

__all__ = [
    "SHAPE_SOURCES",
    "CONTRIB_SPEC_OPS",
    "UNTYPED_SPEC_OPS",
    "type_untyped_outputs",
    "RUNTIME_FUNCTION_OPS",
    "ShapeResolution",
    "apply_overrides",
    "check_node_order",
    "resolve_shapes",
    "measured_shapes",
    "measured_sizes",
    "unknown_shape_error",
    "RUNTIME_RULE_OPS",
    "runtime_output_shape",
    "runtime_placeholders",
    "runtime_folds_constant",
    "RUNTIME_NOTE",
]

Overrides = Mapping[str, Sequence[int] | int]

#: Shape sources in the order :func:`resolve_shapes` tries them (``"measured"`` replaces the
#: inference sources in measured mode).
SHAPE_SOURCES = (
    "declared", "override", "onnx_strict", "onnx_data_prop", "constant_folding", "onnx_spec",
    "ort_symbolic", "onnx_runtime", "measured",
)

#: Operators never folded although their inputs may all be constants: random, stateful or with
#: subgraphs.
_NEVER_FOLD = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli", "Dropout", "If", "Loop", "Scan",
})

_EVAL_ONLY_SHAPE = frozenset({"Shape", "Size"})

#: Operators whose output shape follows the *value* of an input after the first.
_VALUE_SHAPED = frozenset({
    "Reshape", "Expand", "Pad", "Tile", "Slice", "Resize", "Upsample", "Range", "TopK", "OneHot",
    "Squeeze", "Unsqueeze", "ConstantOfShape", "ReduceSum", "ReduceMean", "ReduceMax",
    "ReduceMin", "ReduceProd", "Split", "NonMaxSuppression", "Compress", "NonZero", "Unique",
})
#: Of :data:`_VALUE_SHAPED`, the operators whose output shape follows the value of input 0.
_VALUE_SHAPED_BY_INPUT0 = frozenset({"ConstantOfShape", "NonZero", "Unique"})


@dataclass
class ShapeResolution:
    """Result of :func:`resolve_shapes`.

    Attributes
    ----------
    shapes : dict[str, tuple[int, ...]]
        Static shape (elements per dimension) of every tensor some source settled.
    elem_types : dict[str, int]
        ONNX element type (``onnx.TensorProto`` code) of each tensor in ``shapes``.
    source : dict[str, str]
        The source of each shape, one of :data:`SHAPE_SOURCES`.
    values : dict[str, numpy.ndarray]
        Values computed by constant folding (shape computations; small).
    why : dict[str, str]
        For tensors with a type but no static shape: the unknown part (``"dim 0 = 'N'"``).
    model : onnx.ModelProto
        The model after overrides (a copy; the caller's model is never modified).
    opset : int
        Default-domain opset of the model.
    notes : list of str
        What the chain did not take from the file: declared intermediate shapes (``value_info``)
        that contradicted strict inference and were dropped, each with both shapes; each
        tensor where the specification and ONNX Runtime's kernel disagree (both shapes, the one
        taken); each size that assumes the default value of an initializer that is also a graph
        input.
    """

    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    elem_types: dict[str, int] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    model: onnx.ModelProto | None = field(default=None, repr=False)
    opset: int = 0
    notes: list[str] = field(default_factory=list)

    def nbytes(self, name: str) -> int | None:
        """Bytes of tensor ``name`` (``prod(shape) * itemsize``), or ``None`` if unknown."""
        if name not in self.shapes or name not in self.elem_types:
            return None
        try:
            item = np.dtype(helper.tensor_dtype_to_np_dtype(self.elem_types[name])).itemsize
        except Exception:
            return None
        return math.prod(self.shapes[name]) * item


def _opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 0


def _load(model_or_path: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path, f"model {model_or_path.graph.name or 'model'!r}"
    p = Path(model_or_path)
    if not p.is_file():
        raise OnnxImportError(f"{p}: no such ONNX file")
    try:
        return onnx.load(str(p)), str(p)
    except Exception as e:  # DecodeError, ValueError, OSError
        raise OnnxImportError(f"{p}: not a valid ONNX protobuf ({type(e).__name__}: {e})") from None


def _node_outputs(model: onnx.ModelProto) -> list[str]:
    return [o for n in model.graph.node for o in n.output if o]


def apply_overrides(model: onnx.ModelProto, overrides: Overrides | None, where: str) -> set[str]:
    """Apply ``overrides`` to ``model`` in place and clear negative declared dims.

    Parameters
    ----------
    model : onnx.ModelProto
        Modified in place (pass a copy).
    overrides : mapping or None
        ``{tensor_name: [d0, d1, ...]}`` sets the whole shape of any tensor (graph input, graph
        output, ``value_info`` entry or node output; an int is a rank-1 shape);
        ``{dim_param: value}`` sets every dimension of that name in every declared shape. A key
        that names a tensor is a tensor override.
    where : str
        File or model label for error messages.

    Returns
    -------
    set of str
        Names of the tensors whose shape the overrides fixed completely.

    Raises
    ------
    OnnxImportError
        An override matching no tensor and no ``dim_param``, a negative or non-integer value, a
        tensor override whose rank differs from the declared rank, or one naming an initializer.
    """
    g = model.graph
    declared: dict[str, onnx.ValueInfoProto] = {}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        declared.setdefault(vi.name, vi)
    init_names = {t.name for t in g.initializer}
    produced = set(_node_outputs(model))
    overrides = dict(overrides or {})
    done: set[str] = set()
    used: set[str] = set()

    def as_dims(key, val) -> list[int]:
        vals = [val] if isinstance(val, (int, np.integer)) else list(val)
        if not vals or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0
                           for v in vals):
            raise OnnxImportError(
                f"{where}: override for tensor {key!r} must be non-negative integer dims, "
                f"got {val!r}")
        return [int(v) for v in vals]

    for key, val in overrides.items():
        if key in init_names and key not in {i.name for i in g.input}:
            raise OnnxImportError(
                f"{where}: override {key!r} names an initializer; weights have fixed shapes")
        if key in declared or key in produced:
            dims = as_dims(key, val)
            vi = declared.get(key)
            if vi is None:  # a node output without value_info: declare its shape
                vi = g.value_info.add()
                vi.name = key
                declared[key] = vi
            tt = vi.type.tensor_type
            if tt.HasField("shape") and len(tt.shape.dim) and len(tt.shape.dim) != len(dims):
                raise OnnxImportError(
                    f"{where}: override for tensor {key!r} has rank {len(dims)}, the file "
                    f"declares rank {len(tt.shape.dim)}")
            tt.shape.Clear()
            for d in dims:
                tt.shape.dim.add().dim_value = d
            done.add(key)
            used.add(key)
    for vi in declared.values():
        if vi.name in done or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        for d in tt.shape.dim:
            if d.HasField("dim_param") and d.dim_param in overrides:
                val = overrides[d.dim_param]
                if isinstance(val, (list, tuple)) and len(val) == 1:
                    val = val[0]
                if not isinstance(val, (int, np.integer)) or isinstance(val, bool) or val < 0:
                    raise OnnxImportError(
                        f"{where}: override for dim {d.dim_param!r} must be an int >= 0, "
                        f"got {val!r}")
                used.add(d.dim_param)
                d.dim_value = int(val)
            elif d.HasField("dim_value") and d.dim_value < 0:
                d.Clear()  # "-1" written for a dynamic dim: unknown, not a size
    unknown = [k for k in overrides if k not in used]
    if unknown:
        params = sorted({d.dim_param for vi in declared.values()
                         for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")})
        inputs = [i.name for i in g.input if i.name not in init_names]
        raise OnnxImportError(
            f"{where}: override key(s) {unknown} match no graph input ({inputs[:10]}), no "
            f"tensor of the model and no symbolic dimension ({params})")
    return done


def _subgraph_reads(node: onnx.NodeProto) -> list[str]:
    """Names the subgraphs of ``node`` (at any depth) read from outside themselves: its implicit
    (outer-scope) inputs, in first-read order."""
    out: dict[str, None] = {}

    def walk(g: onnx.GraphProto, outer: set[str]) -> None:
        defined = set(outer) | {i.name for i in g.input} | {t.name for t in g.initializer}
        defined |= {t.values.name for t in g.sparse_initializer}
        mine = {o for n in g.node for o in n.output if o}
        for n in g.node:
            for i in n.input:
                if i and i not in defined and i not in mine:
                    out[i] = None
            for a in n.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs):
                    walk(sub, defined | mine)

    for a in node.attribute:
        for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs):
            walk(sub, set())
    return list(out)


def check_node_order(model: onnx.ModelProto | onnx.GraphProto, where: str) -> None:
    """Check, before any shape is resolved, that no node of the main graph reads a tensor that
    only the same or a later node writes.

    ONNX requires a graph's nodes in topological order (``onnx/onnx.proto``, ``GraphProto.node``:
    "nodes in the graph are sorted topologically"). A node whose input, explicit or read by one
    of its subgraphs from the outer scope (an implicit input), is written by itself or a later
    node is either on a cycle or out of order. The check looks at names only, never at shapes,
    so a cycle through a tensor of unknown shape is reported as a cycle, not as that tensor's
    unknown size (:func:`resolve_shapes` and :func:`scheduling.onnx_import.load_onnx` run it
    first).

    Parameters
    ----------
    model : onnx.ModelProto or onnx.GraphProto
        The model (or its main graph); not modified.
    where : str
        File or model label for error messages.

    Raises
    ------
    scheduling.errors.CycleError
        The nodes form a directed cycle through such a tensor: the message names the nodes
        along the cycle, the tensor read and the node that writes it.
    OnnxImportError
        The graph is acyclic but a node reads a tensor that a later node writes (the file's
        nodes are not in topological order).

    Notes
    -----
    ``O(#nodes + #edges)`` (one pass over the nodes; the cycle search,
    :func:`scheduling.graph.find_cycle_in`, only on a failure).

    Examples
    --------
    >>> from onnx import helper
    >>> g = helper.make_graph([helper.make_node("Add", ["x", "t1"], ["t0"], name="a"),
    ...                        helper.make_node("Relu", ["t0"], ["t1"], name="r")], "g",
    ...                       [helper.make_tensor_value_info("x", 1, None)], [])
    >>> check_node_order(g, "g.onnx")
    Traceback (most recent call last):
    ...
    scheduling.errors.CycleError: g.onnx: the graph has a cycle (a -> r -> a): node 'a' reads tensor 't1' that node 'r' writes; a dataflow graph must be acyclic
    """
    from .errors import CycleError
    from .graph import find_cycle_in

    g = model.graph if isinstance(model, onnx.ModelProto) else model
    nodes = list(g.node)
    defined = {i.name for i in g.input} | {t.name for t in g.initializer}
    defined |= {t.values.name for t in g.sparse_initializer}
    producer: dict[str, int] = {}
    for j, n in enumerate(nodes):
        for o in n.output:
            if o:
                producer.setdefault(o, j)

    def label(j: int) -> str:
        return nodes[j].name or f"{nodes[j].op_type}_{j}"

    reads = [[i for i in n.input if i] + _subgraph_reads(n) for n in nodes]
    for k in range(len(nodes)):
        for i in reads[k]:
            if i in defined or producer.get(i, -1) < k:
                continue  # a graph input, an initializer, an earlier node's output or unknown
            writer = producer[i]
            edges = [(producer[t], j) for j in range(len(nodes)) for t in reads[j]
                     if t in producer and t not in defined]
            # node positions (names may repeat); a cycle elsewhere is still a cycle
            cycle = find_cycle_in(edges, k) or find_cycle_in(edges)
            if cycle:
                reader, writer = cycle[0], cycle[-2]  # the cycle's last edge enters its start
                tensor = next(t for t in reads[reader] if producer.get(t) == writer
                              and t not in defined)
                raise CycleError(
                    f"{where}: the graph has a cycle ({' -> '.join(map(label, cycle))}): node "
                    f"{label(reader)!r} reads tensor {tensor!r} that node {label(writer)!r} "
                    "writes; a dataflow graph must be acyclic")
            raise OnnxImportError(
                f"{where}: node {label(k)!r} reads tensor {i!r} before node {label(writer)!r} "
                "writes it; ONNX requires the nodes in topological order")


def _static(vi: onnx.ValueInfoProto) -> tuple[tuple[int, ...] | None, str]:
    if not vi.type.HasField("tensor_type"):
        return None, "not a tensor type"
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None, "no shape was inferred (unknown rank)"
    dims, bad = [], []
    for k, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        else:
            bad.append(f"dim {k} = {d.dim_param!r}" if d.dim_param else f"dim {k} unknown")
    if bad:
        return None, "symbolic or unknown " + ", ".join(bad)
    return tuple(dims), ""


def _harvest(res: ShapeResolution, model: onnx.ModelProto, src: str) -> int:
    """Take every newly static shape of ``model``'s value infos with source ``src``."""
    new = 0
    g = model.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.elem_type and vi.name not in res.elem_types:
            res.elem_types[vi.name] = int(tt.elem_type)
        if vi.name in res.shapes:
            continue
        shape, why = _static(vi)
        if shape is None:
            res.why.setdefault(vi.name, why)
            continue
        if tt is None or not tt.elem_type:
            continue
        res.shapes[vi.name] = shape
        res.elem_types[vi.name] = int(tt.elem_type)
        res.source[vi.name] = "onnx_spec" if vi.doc_string == _UNTYPED_SPEC_DOC else src
        res.why.pop(vi.name, None)
        new += 1
    return new


#: Operators of the default domain whose outputs ONNX shape inference (onnx 1.23) leaves
#: untyped, or fails on inside the operator's function body, although the operator
#: specification fixes them; :func:`_infer` gives them these types (source ``"onnx_spec"``):
#:
#: * ``GroupNormalization`` (opsets 18 and 21, a context-dependent function without an
#:   inference function): ``Y`` has the shape and type of ``X``;
#: * ``MeanVarianceNormalization`` (opset 13: inference of its function body fails): ``Y`` has
#:   the shape and type of ``X``;
#: * ``Compress`` (opset 9, no inference function): the type of ``input``, rank ``r`` with the
#:   ``axis`` dimension unknown, or rank 1 without ``axis`` (a constant condition then gives the
#:   size, :func:`_spec_rules`).
#:
#: Any other operator whose output inference leaves untyped is named as the culprit
#: (:func:`untyped_output_error`).
UNTYPED_SPEC_OPS = frozenset({"GroupNormalization", "MeanVarianceNormalization", "Compress"})

#: ``doc_string`` of the value infos :func:`_infer` writes for the outputs of
#: :data:`UNTYPED_SPEC_OPS` (:func:`_harvest` records their source as ``"onnx_spec"``).
_UNTYPED_SPEC_DOC = "memplan: output type from the operator specification (onnx_spec)"


def _untyped_rule(node: onnx.NodeProto, typed: Mapping[str, onnx.TypeProto]
                  ) -> list[onnx.TypeProto] | None:
    """The output types (:data:`UNTYPED_SPEC_OPS`) of ``node`` from its input types ``typed``,
    or ``None`` (another operator, or an input type unknown)."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in UNTYPED_SPEC_OPS \
            or not node.input or node.input[0] not in typed:
        return None
    x = typed[node.input[0]]
    if not x.HasField("tensor_type") or not x.tensor_type.elem_type:
        return None
    out = onnx.TypeProto()
    out.CopyFrom(x)
    if node.op_type == "Compress":
        if not x.tensor_type.HasField("shape"):
            return None
        axis = _attr(node, "axis")
        rank = len(x.tensor_type.shape.dim)
        out.tensor_type.shape.Clear()
        if axis is None:
            out.tensor_type.shape.dim.add()
        else:
            axis = int(axis) + rank if int(axis) < 0 else int(axis)
            if not 0 <= axis < rank:
                return None
            for k, d in enumerate(x.tensor_type.shape.dim):
                nd = out.tensor_type.shape.dim.add()
                if k != axis:
                    nd.CopyFrom(d)
    return [out] + [None] * (len(node.output) - 1)


def _node_label(node: onnx.NodeProto, k: int) -> str:
    return node.name or f"{node.op_type}_{k}"


def _untyped_producers(model: onnx.ModelProto, data_prop: bool
                       ) -> tuple[onnx.ModelProto | None, dict[str, onnx.TypeProto], str | None]:
    """After strict inference failed on ``model``: a copy without the nodes of
    :data:`UNTYPED_SPEC_OPS` whose output types their rule gives (those outputs become graph
    inputs of these types, so that strict inference of the rest can be tried), the types given,
    and the error text naming the first other node (file order, which is topological) whose
    inputs lenient inference types but some read output it leaves untyped: the producer its
    consumers' failures come from. ``(None, {}, text)`` when no node is cut."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    given: dict[str, onnx.TypeProto] = {}
    culprit = None
    readers: dict[str, tuple[int, onnx.NodeProto]] = {}
    for k, n in enumerate(model.graph.node):
        for i in list(n.input) + _subgraph_reads(n):
            if i:
                readers.setdefault(i, (k, n))
    graph_outputs = {o.name for o in model.graph.output}
    pos = list(range(len(g.node)))  # each remaining node's position in the file
    for _ in range(len(g.node) + 1):  # each round cuts at least one node
        try:
            lenient = shape_inference.infer_shapes(m, strict_mode=False, data_prop=data_prop)
        except Exception:  # noqa: BLE001 - lenient inference failing: nothing to cut with
            break
        typed = {vi.name: vi.type
                 for vi in list(lenient.graph.input) + list(lenient.graph.value_info)
                 + list(lenient.graph.output)
                 if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type}
        for t in lenient.graph.initializer:
            typed.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
        cut = []
        culprit = None
        for j, node in enumerate(g.node):
            if node.domain not in ("", "ai.onnx") or any(
                    a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                    for a in node.attribute):
                continue
            types = _untyped_rule(node, typed)
            if types is not None:
                cut.append((j, node, types))
                continue
            if not all(i in typed for i in node.input if i):
                continue  # untyped because of an earlier node
            bare = [o for o in node.output if o and o not in typed
                    and (o in readers or o in graph_outputs)]
            if bare and culprit is None:
                k = pos[j]
                o = bare[0]
                if o in readers:
                    rk, rn = readers[o]
                    after = (f"so strict inference fails at its consumer "
                             f"{_node_label(rn, rk)!r} (op {rn.op_type}, node {rk})")
                else:
                    after = "and it is a graph output"
                culprit = (
                    f"ONNX shape inference gives no type to output {o!r} of node "
                    f"{_node_label(node, k)!r} (op {node.op_type}, opset {_opset(model)}, node "
                    f"{k} in topological order), {after}; the toolkit types the outputs of "
                    f"{', '.join(sorted(UNTYPED_SPEC_OPS))} itself, not those of "
                    f"{node.op_type} (scheduling.onnx_shapes.UNTYPED_SPEC_OPS); "
                    "load_onnx(path, shapes='measured') takes the shapes from one ONNX Runtime "
                    "run instead")
        if not cut:
            break
        drop = {j for j, _, _ in cut}
        for _, node, types in cut:
            for o, t in zip(node.output, types):
                if o and t is not None:
                    given[o] = t
                    vi = onnx.ValueInfoProto(name=o)
                    vi.type.CopyFrom(t)
                    g.input.append(vi)
        keep = [n for j, n in enumerate(g.node) if j not in drop]
        pos = [k for j, k in enumerate(pos) if j not in drop]
        del g.node[:]
        g.node.extend(keep)
        vi_keep = [vi for vi in g.value_info if vi.name not in given]
        del g.value_info[:]
        g.value_info.extend(vi_keep)
        out_keep = [vi for vi in g.output if vi.name not in given]
        del g.output[:]
        g.output.extend(out_keep)
    return (m if given else None), given, culprit


def _with_given_types(model: onnx.ModelProto, inferred: onnx.ModelProto,
                      given: Mapping[str, onnx.TypeProto]) -> onnx.ModelProto:
    """A copy of ``model`` with the value infos and output types of ``inferred`` (strict
    inference of :func:`_untyped_producers`' cut copy) and the types ``given`` to the cut nodes'
    outputs, marked with :data:`_UNTYPED_SPEC_DOC`."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    del g.value_info[:]
    g.value_info.extend(vi for vi in inferred.graph.value_info if vi.name not in given)
    got = {vi.name: vi for vi in inferred.graph.output}
    for vi in g.output:
        if vi.name in given:
            vi.type.CopyFrom(given[vi.name])
            vi.doc_string = _UNTYPED_SPEC_DOC
        elif vi.name in got:
            vi.type.CopyFrom(got[vi.name].type)
    outs = {vi.name for vi in g.output}
    for name, t in given.items():
        if name not in outs:
            vi = g.value_info.add()
            vi.name = name
            vi.type.CopyFrom(t)
            vi.doc_string = _UNTYPED_SPEC_DOC
    return out


def type_untyped_outputs(model: onnx.ModelProto) -> int:
    """Declare, in place, the outputs of the :data:`UNTYPED_SPEC_OPS` nodes of ``model`` and of
    its subgraphs (at any depth) that ONNX shape inference leaves untyped, with the types their
    specification gives (:func:`_untyped_rule`), as ``value_info`` entries of their graph.

    For strict inference of a whole model with its subgraphs
    (:func:`scheduling.onnx_control_flow.infer_subgraphs`), where the main graph's shapes are
    already resolved but a ``GroupNormalization`` inside an ``If`` branch would leave its
    consumer untyped (the branch then looks as if it could not run). Rounds of lenient
    inference (with data propagation), each typing what the previous one made known; outer-scope
    types reach the subgraphs. A ``MeanVarianceNormalization``-13 inside a subgraph still fails
    strict inference (its function body does; the declaration does not help).

    Parameters
    ----------
    model : onnx.ModelProto
        Changed in place.

    Returns
    -------
    int
        How many outputs were declared.

    Notes
    -----
    At most one round per node with such an operator, each a lenient shape inference of the
    model.
    """
    def subgraphs(n: onnx.NodeProto) -> list[onnx.GraphProto]:
        return [s for a in n.attribute
                for s in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs)]

    def has_rule_op(g: onnx.GraphProto) -> bool:
        return any(n.op_type in UNTYPED_SPEC_OPS or any(has_rule_op(s) for s in subgraphs(n))
                   for n in g.node)

    if not has_rule_op(model.graph):
        return 0
    total = 0

    def walk(gm: onnx.GraphProto, gl: onnx.GraphProto, outer: dict) -> int:
        typed = dict(outer)
        for vi in list(gl.input) + list(gl.value_info) + list(gl.output):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                typed[vi.name] = vi.type
        for t in gl.initializer:
            typed.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
        added = 0
        for nm, nl in zip(gm.node, gl.node):
            for sm, sl in zip(subgraphs(nm), subgraphs(nl)):
                added += walk(sm, sl, typed)
            if nm.op_type not in UNTYPED_SPEC_OPS:
                continue
            types = _untyped_rule(nm, typed)
            for o, t in zip(nm.output, types or ()):
                if o and t is not None and o not in typed:
                    vi = gm.value_info.add()
                    vi.name = o
                    vi.type.CopyFrom(t)
                    typed[o] = t
                    added += 1
        return added

    for _ in range(_count_nodes(model.graph) + 1):  # each round declares at least one
        try:
            lenient = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        except Exception:  # noqa: BLE001 - nothing more to learn
            break
        added = walk(model.graph, lenient.graph, {})
        total += added
        if not added:
            break
    return total


def _count_nodes(g: onnx.GraphProto) -> int:
    return sum(1 + sum(_count_nodes(s) for a in n.attribute
                       for s in ([a.g] if a.type == onnx.AttributeProto.GRAPH else [])
                       + list(a.graphs)) for n in g.node)


def _infer(model: onnx.ModelProto, data_prop: bool, where: str, stage: str) -> onnx.ModelProto:
    try:
        return shape_inference.infer_shapes(model, strict_mode=True, data_prop=data_prop)
    except Exception as e:  # InferenceError / ValidationError / RuntimeError
        msg = " ".join(str(e).split())
        msg = msg if len(msg) <= 600 else msg[:600] + " ..."
    # an operator whose outputs inference leaves untyped: typed by its specification where the
    # toolkit knows it (UNTYPED_SPEC_OPS), else the producer -- not its consumer -- is named
    cut, given, culprit = _untyped_producers(model, data_prop)
    if cut is not None:
        try:
            inferred = shape_inference.infer_shapes(cut, strict_mode=True, data_prop=data_prop)
        except Exception:  # noqa: BLE001 - the rest fails too: reported below
            inferred = None
        if inferred is not None:
            return _with_given_types(model, inferred, given)
    if culprit is not None:
        raise OnnxImportError(f"{where}: strict ONNX shape inference failed{stage}: {culprit}")
    raise OnnxImportError(
        f"{where}: strict ONNX shape inference failed{stage}: {msg} (a declared or "
        "overridden shape disagrees with the operators: correct it with --override "
        "NAME=D1,D2,...)")


def _dims(vi: onnx.ValueInfoProto) -> list | None:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]


def _infer_hinted(model: onnx.ModelProto, res: ShapeResolution, overridden: set[str],
                  where: str, data_prop: bool = False, stage: str = "",
                  base: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """Strict inference, where declared intermediate shapes are hints.

    Hints are the file's ``value_info`` entries and the declared shapes of graph outputs that
    are not fully static (``[1, 'seqlen']``: a description of the export trace), never the
    graph inputs, a fully static declared output, or the caller's overrides. When strict
    inference fails and succeeds without the hints, they are removed from ``model`` (in place)
    and from ``res``: each one inference contradicts (rank, or a static dimension) is named in
    ``res.notes`` with both shapes, and a declared static shape inference does not confirm is
    no longer trusted (a later source must settle it). Otherwise the first failure is raised
    (:func:`_infer`). ``base``: the model ``model`` is a copy of (folded values as
    initializers), from which the hints are removed too.
    """
    try:
        return _infer(model, data_prop, where, stage)
    except OnnxImportError as first:
        failure = first
    g = model.graph
    hints = [vi for vi in g.value_info if vi.name not in overridden]
    partial = [vi for vi in g.output if vi.name not in overridden
               and vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
               and _static(vi)[0] is None]
    trial = onnx.ModelProto()
    trial.CopyFrom(model)
    keep = [vi for vi in trial.graph.value_info if vi.name in overridden]
    del trial.graph.value_info[:]
    trial.graph.value_info.extend(keep)
    names = {vi.name for vi in partial}
    for vi in trial.graph.output:
        if vi.name in names:
            vi.type.tensor_type.ClearField("shape")
    inferred = None
    if hints or partial:
        try:
            inferred = _infer(trial, data_prop, where, stage)
        except OnnxImportError:
            pass
    if inferred is None:
        # a subgraph that fails at these shapes is :func:`infer_subgraphs`' to judge (a branch
        # that cannot run, or an error); the main graph around it is still checked strictly
        cut = _without_control_flow(trial, data_prop)
        if cut is None:
            raise failure
        try:
            inferred = _infer(cut, data_prop, where, stage)
        except OnnxImportError:
            raise failure from None
        cut_outs = {i.name for i in cut.graph.input} - {i.name for i in trial.graph.input}
        keep = [i for i in inferred.graph.input if i.name not in cut_outs]
        del inferred.graph.input[:]
        inferred.graph.input.extend(keep)
    got = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for vi in hints + partial:
        declared, now = _dims(vi), (_dims(got[vi.name]) if vi.name in got else None)
        conflict = declared is not None and now is not None and (
            len(declared) != len(now) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                             for a, b in zip(declared, now)))
        if conflict:
            res.notes.append(
                f"{where}: tensor {vi.name!r} is declared with shape {declared}, strict shape "
                f"inference gives {now}; the declared shape was ignored")
        if res.source.get(vi.name) == "declared" and (
                conflict or vi.name not in got or _static(got[vi.name])[0] is None):
            res.shapes.pop(vi.name, None)
            res.source.pop(vi.name, None)
    dropped = {vi.name for vi in hints}
    for m in (model, base) if base is not None else (model,):
        keep = [vi for vi in m.graph.value_info if vi.name not in dropped]
        del m.graph.value_info[:]  # later stages infer from the overrides alone
        m.graph.value_info.extend(keep)
        for vi in m.graph.output:
            if vi.name in names:
                vi.type.tensor_type.ClearField("shape")
    return inferred


def _without_control_flow(model: onnx.ModelProto, data_prop: bool) -> onnx.ModelProto | None:
    """A copy of ``model`` without its main graph's nodes that have subgraphs; their outputs
    become graph inputs with the element type lenient inference gives and no shape (``None``
    when there is no such node or a type is unknown)."""
    if not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for n in model.graph.node for a in n.attribute):
        return None
    try:
        lenient = shape_inference.infer_shapes(model, strict_mode=False, data_prop=data_prop)
    except Exception:  # noqa: BLE001 - lenient inference failing: nothing to cut with
        return None
    types = {vi.name: vi.type.tensor_type.elem_type
             for vi in list(lenient.graph.value_info) + list(lenient.graph.output)
             if vi.type.HasField("tensor_type")}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep, added = [], []
    for n in g.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in n.attribute):
            for o in n.output:
                if o and not types.get(o):
                    return None
                if o:
                    added.append(helper.make_tensor_value_info(o, types[o], None))
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    g.input.extend(added)
    return m


def _fold(model: onnx.ModelProto, res: ShapeResolution, max_elems: int) -> int:
    """Evaluate foldable nodes; returns how many new values were computed."""
    from onnx.reference import ReferenceEvaluator

    g = model.graph
    new = 0
    for node in g.node:
        outs = [o for o in node.output if o]
        if not outs or all(o in res.values for o in outs):
            continue
        if node.domain not in ("", "ai.onnx") or node.op_type in _NEVER_FOLD \
                or node.doc_string == _PLACEHOLDER_DOC:
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute):
            continue
        ins = [i for i in node.input if i]
        if node.op_type in _EVAL_ONLY_SHAPE and len(ins) == 1 and ins[0] in res.shapes:
            shape = np.array(res.shapes[ins[0]], np.int64)
            if node.op_type == "Size":
                val = np.array(int(np.prod(shape)), np.int64)
            else:
                attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                start, end = attrs.get("start", 0), attrs.get("end")
                val = shape[start:] if end is None else shape[start:end]
            res.values[outs[0]] = val
            new += 1
            continue
        if not all(i in res.values for i in ins):
            continue  # reads a runtime value (or one too large to keep): never folded
        if any(res.values[i].size > max_elems for i in ins) or any(
            o in res.shapes and math.prod(res.shapes[o]) > max_elems for o in outs
        ) or (node.op_type == "ConstantOfShape" and ins
              and math.prod(int(d) for d in np.ravel(res.values[ins[0]])) > max_elems):
            continue  # too large to evaluate here (weights, not shape arithmetic)
        try:
            # wrapped in a model of the file's opset: evaluating the bare node picks the newest
            # version (Unsqueeze-13 reads axes from an input, not the opset-12 attribute)
            one = helper.make_model(
                helper.make_graph(
                    [node], "fold",
                    [helper.make_tensor_value_info(
                        i, helper.np_dtype_to_tensor_dtype(res.values[i].dtype), None)
                     for i in dict.fromkeys(ins)],
                    [helper.make_tensor_value_info(o, 0, None) for o in outs]),
                opset_imports=[helper.make_opsetid("", res.opset or 1)])
            got = ReferenceEvaluator(one).run(None, {i: res.values[i] for i in ins})
        except Exception:  # noqa: BLE001 - an operator the evaluator cannot run: no value
            continue
        vals = [np.asarray(v) for v in got if isinstance(v, np.ndarray) or np.isscalar(v)]
        if len(vals) < len(outs) or any(v.size > max_elems or v.dtype.kind in "OUS"
                                        for v in vals):
            continue
        for o, v in zip(outs, vals):
            if o:
                res.values[o] = v
                new += 1
    return new


def _folded_copy(model: onnx.ModelProto, res: ShapeResolution) -> onnx.ModelProto:
    """A copy where every folded node is replaced by initializers holding its values."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep = []
    have = {t.name for t in g.initializer}
    for node in g.node:
        outs = [o for o in node.output if o]
        if outs and all(o in res.values for o in outs):
            for o in outs:
                if o not in have:
                    g.initializer.append(numpy_helper.from_array(res.values[o], o))
                    if m.ir_version < 4:  # IR v3: every initializer is also a graph input
                        g.input.append(helper.make_tensor_value_info(
                            o, helper.np_dtype_to_tensor_dtype(res.values[o].dtype),
                            list(res.values[o].shape)))
                    have.add(o)
            continue
        keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    return m


#: ``com.microsoft`` operators whose output shapes :func:`_spec_rules` gives (documented in
#: ONNX Runtime's ``docs/ContribOperators.md``; the shapes follow input shapes and attributes,
#: never input values). Any other operator of that domain that ONNX Runtime's symbolic inference
#: does not settle stays unknown (:func:`unknown_shape_error`).
CONTRIB_SPEC_OPS = frozenset({"DynamicQuantizeLSTM"})


def _set_spec(res: ShapeResolution, name: str, shape: Sequence[int], elem_type: int) -> int:
    if not name or name in res.shapes:
        return 0
    res.shapes[name] = tuple(int(d) for d in shape)
    res.elem_types[name] = int(elem_type)
    res.source[name] = "onnx_spec"
    res.why.pop(name, None)
    return 1


def _contrib_rule(node: onnx.NodeProto, res: ShapeResolution) -> int:
    """Output shapes of the ``com.microsoft`` operators of :data:`CONTRIB_SPEC_OPS`.

    ``DynamicQuantizeLSTM`` (ONNX Runtime ``docs/ContribOperators.md``,
    ``com.microsoft.DynamicQuantizeLSTM``, version 1): input ``X`` is ``[seq_length,
    batch_size, input_size]``; outputs ``Y`` ``[seq_length, num_directions, batch_size,
    hidden_size]``, ``Y_h`` and ``Y_c`` ``[num_directions, batch_size, hidden_size]``, of type
    ``T`` (``X``'s), with ``num_directions`` 2 when ``direction`` is ``"bidirectional"``, else 1,
    and ``hidden_size`` the attribute (else the second dimension of ``R``, ``[num_directions,
    hidden_size, 4*hidden_size]``). As ONNX ``LSTM`` without ``layout``.
    """
    if node.op_type != "DynamicQuantizeLSTM" or not node.input or node.input[0] not in res.shapes:
        return 0
    x = res.shapes[node.input[0]]
    et = res.elem_types.get(node.input[0])
    if len(x) != 3 or not et:
        return 0
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    direction = attrs.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    dirs = 2 if direction == "bidirectional" else 1
    hidden = attrs.get("hidden_size")
    if hidden is None:
        r = res.shapes.get(node.input[2]) if len(node.input) > 2 else None
        if r is None or len(r) != 3:
            return 0
        hidden = r[1]
    seq, batch = x[0], x[1]
    outs = list(node.output) + ["", "", ""]
    return (_set_spec(res, outs[0], (seq, dirs, batch, hidden), et)
            + _set_spec(res, outs[1], (dirs, batch, hidden), et)
            + _set_spec(res, outs[2], (dirs, batch, hidden), et))


def _with_spec(model: onnx.ModelProto, res: ShapeResolution) -> onnx.ModelProto:
    """``model`` (changed in place) with the ``onnx_spec`` shapes as value infos, so that
    inference carries them to the consumers."""
    g = model.graph
    have = {vi.name: vi for vi in list(g.input) + list(g.output) + list(g.value_info)}
    for name, src in res.source.items():
        if src != "onnx_spec" or name not in res.elem_types:
            continue
        vi = have.get(name)
        if vi is None:
            vi = g.value_info.add()
            vi.name = name
        vi.type.tensor_type.elem_type = res.elem_types[name]
        vi.type.tensor_type.shape.Clear()  # the file's unknown or symbolic dims: now static
        for d in res.shapes[name]:
            vi.type.tensor_type.shape.dim.add().dim_value = int(d)
    return model


def _spec_rules(model: onnx.ModelProto, res: ShapeResolution) -> int:
    """Outputs whose shape the operator spec fixes but ONNX inference leaves out."""
    new = 0
    for node in model.graph.node:
        if node.domain == "com.microsoft" and node.op_type in CONTRIB_SPEC_OPS:
            new += _contrib_rule(node, res)
            continue
        if node.op_type == "Compress" and len(node.input) > 1 and node.output \
                and node.output[0] not in res.shapes:
            # Compress with a constant condition: the kept slices are its true entries among
            # the first len(condition) along axis (the flattened input without axis)
            x, cond = res.shapes.get(node.input[0]), res.values.get(node.input[1])
            et = res.elem_types.get(node.input[0])
            if x is None or cond is None or not et:
                continue
            axis = _attr(node, "axis")
            if axis is not None:
                axis = int(axis) + len(x) if int(axis) < 0 else int(axis)
                if not 0 <= axis < len(x):
                    continue
            length = math.prod(x) if axis is None else x[axis]
            flat = np.ravel(cond)
            if flat.size > length:
                continue  # the specification forbids it; ONNX Runtime refuses it
            kept = int(np.count_nonzero(flat))
            shape = (kept,) if axis is None else x[:axis] + (kept,) + x[axis + 1:]
            new += _set_spec(res, node.output[0], shape, et)
            continue
        if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
            mask, x = node.output[1], node.input[0]
            if mask in res.shapes or x not in res.shapes:
                continue
            res.shapes[mask] = res.shapes[x]
            # Dropout-7..9: mask has type T (the input's); Dropout-10 and later: bool
            res.elem_types[mask] = (res.elem_types[x] if res.opset < 10
                                    else onnx.TensorProto.BOOL)
            res.source[mask] = "onnx_spec"
            new += 1
    return new

#: Operators whose output size ONNX Runtime's CPU kernel computes with its own arithmetic, which
#: can differ from the ONNX specification's (and ``onnx.shape_inference``'s) exact arithmetic;
#: :func:`runtime_output_shape` gives the kernel's.
RUNTIME_RULE_OPS = frozenset({"Resize", "Upsample", "Range", "MaxPool", "AveragePool", "LpPool"})


#: The words every note of a size where the specification and ONNX Runtime's kernel disagree
#: contains (:func:`_runtime_sizes`).
RUNTIME_NOTE = "ONNX Runtime's kernel writes"


def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            v = helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def _resize_runtime(node, x, values, opset):
    """ONNX Runtime ``UpsampleBase`` (``core/providers/cpu/tensor/upsamplebase.h``)."""
    ins = list(node.input) + ["", "", "", ""]
    rank = len(x)
    axes = list(range(rank))
    if node.op_type == "Resize" and opset >= 18 and _attr(node, "axes") is not None:
        axes = [a + rank if a < 0 else a for a in _attr(node, "axes")]
    sizes = None
    if node.op_type == "Upsample" and opset < 9:
        scales = _attr(node, "scales")
    elif node.op_type == "Upsample" or opset == 10:
        scales = values.get(ins[1]) if ins[1] else None
        if scales is None:
            return None
    else:
        scales = sizes = None
        if ins[2]:
            scales = values.get(ins[2])
            if scales is None:
                return None
        if ins[3]:
            sizes = values.get(ins[3])
            if sizes is None:
                return None
        if scales is not None and np.size(scales) == 0:
            scales = None
        if sizes is not None and np.size(sizes) == 0:
            sizes = None
    f32 = np.float32
    if sizes is not None:
        sizes = [int(v) for v in np.ravel(sizes)]
        if len(sizes) != len(axes):
            return None
        out = list(x)
        for a, n in zip(axes, sizes):
            out[a] = n
        policy = _attr(node, "keep_aspect_ratio_policy", "stretch") if opset >= 18 else "stretch"
        if policy in ("not_larger", "not_smaller") and all(x[a] > 0 for a in axes):
            # AdjustOutputSizeAsPolicy: one float32 scale, output = std::round(scale * in)
            ratios = [f32(out[a]) / f32(x[a]) for a in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                out[a] = int(math.floor(float(f32(scale) * f32(x[a])) + 0.5))
        return tuple(out)
    if scales is None:
        return None
    scales = [float(v) for v in np.ravel(np.asarray(scales, np.float32))]
    if len(scales) != len(axes):
        return None
    full = [1.0] * rank
    for a, v in zip(axes, scales):
        full[a] = v
    # ComputeOutputShape: static_cast<int64_t>(scales[i] * input_dims[i]), a float32 product
    return tuple(int(f32(sv) * f32(d)) for sv, d in zip(full, x))


def _range_runtime(node, values):
    """ONNX Runtime ``Range`` (``core/providers/cpu/generator/range.cc``, ``ComputeRange``):
    ``n = static_cast<int64_t>(ceil((1.0 * (limit - start)) / delta))``, ``n < 0`` gives 0.
    The source subtracts in the element type ``T``; the CPU build of onnxruntime 1.32 gives the
    count of a double subtraction of the (float32) inputs, measured: float32 ``0.7, 16.7, 1.0``
    gives 17 elements (a float32 difference would give 16) and ``-1.5, 0.9, 0.1`` gives 24 (a
    float32 difference would give 25). That count is returned (the differential test checks it
    against the installed ONNX Runtime)."""
    vals = [values.get(i) if i else None for i in list(node.input)[:3]]
    if len(vals) < 3 or any(v is None or np.size(v) != 1 for v in vals):
        return None
    start, limit, delta = (np.ravel(v)[0] for v in vals)
    if float(delta) == 0:
        return None
    count = (float(limit) - float(start)) / float(delta)
    if not math.isfinite(count):
        return None
    return (max(math.ceil(count), 0),)


def _pool_runtime(node, x):
    """ONNX Runtime ``PoolAttributes::ComputeOutputSize`` (``core/providers/cpu/nn/
    pool_attributes.h``) with ``ceil_mode``: ``ceil(float(in + pads - dilation * (k - 1) - 1) /
    stride + 1)``, less one when the last window would start at or after the end of the input
    plus the head padding (the window must start inside the input or the left padding)."""
    if not _attr(node, "ceil_mode", 0) or _attr(node, "auto_pad", "NOTSET") not in ("NOTSET", ""):
        return None
    k = _attr(node, "kernel_shape")
    if not k or len(x) != len(k) + 2:
        return None
    n = len(k)
    strides = _attr(node, "strides") or [1] * n
    pads = _attr(node, "pads") or [0] * (2 * n)
    dil = _attr(node, "dilations") or [1] * n
    if any(int(v) <= 0 for v in strides) or any(int(v) <= 0 for v in dil):
        return None
    out = list(x[:2])
    for i in range(n):
        eff = x[i + 2] + pads[i] + pads[i + n] - dil[i] * (k[i] - 1) - 1
        o = math.ceil(float(np.float32(eff) / np.float32(strides[i]) + np.float32(1)))
        if (o - 1) * strides[i] >= x[i + 2] + pads[i]:
            o -= 1
        out.append(int(o))
    return tuple(out)


def runtime_output_shape(
    node: onnx.NodeProto,
    shapes: Mapping[str, Sequence[int]],
    values: Mapping[str, np.ndarray],
    opset: int,
) -> tuple[int, ...] | None:
    """The shape of output 0 that ONNX Runtime's CPU kernel writes for ``node``, or ``None``.

    Only for :data:`RUNTIME_RULE_OPS` whose size-giving inputs are known (``shapes``: static
    shapes by tensor name; ``values``: constant values; ``opset``: default-domain opset):

    * ``Resize`` / ``Upsample`` (``upsamplebase.h``): with scales, ``int64(float32(scale) *
      float32(in))`` per dimension (truncation of a float32 product; the specification's
      ``floor(in * scale)`` in exact arithmetic can be one smaller, e.g. ``3 * 10/3`` gives 9
      exactly and 10 in float32); with sizes, the sizes, except under
      ``keep_aspect_ratio_policy`` (opset 18), where one float32 scale gives
      ``round(scale * in)``; ``axes`` (opset 18) select the dimensions;
    * ``Range`` (``range.cc``): ``ceil((limit - start) / delta)`` in double (the specification's
      inference rounds the float32 difference first: the counts differ by one either way);
    * ``MaxPool`` / ``AveragePool`` / ``LpPool`` with ``ceil_mode=1`` (``pool_attributes.h``):
      the last window must start inside the input or its head padding (one element fewer than
      the specification's formula when it would not).

    ``None`` when the operator is not one of those, a needed shape or value is unknown (a size
    that depends on runtime data), or the attributes are outside these forms. ``O(rank)``.

    >>> from onnx import helper
    >>> n = helper.make_node("Resize", ["x", "", "sc"], ["r"], mode="nearest")
    >>> runtime_output_shape(n, {"x": (1, 1, 3, 7)},
    ...                      {"sc": np.array([1, 1, 10 / 3, 10 / 7], np.float32)}, 13)
    (1, 1, 10, 10)
    """
    if node.domain not in ("", "ai.onnx") or node.op_type not in RUNTIME_RULE_OPS:
        return None
    try:
        with np.errstate(all="ignore"):
            if node.op_type == "Range":
                got = _range_runtime(node, values)
            else:
                x = shapes.get(node.input[0]) if node.input and node.input[0] else None
                if x is None:
                    return None
                if node.op_type in ("Resize", "Upsample"):
                    got = _resize_runtime(node, tuple(x), values, opset)
                else:
                    got = _pool_runtime(node, tuple(x))
    except (TypeError, ValueError, IndexError, OverflowError, KeyError):
        return None
    if got is None or any(d < 0 for d in got):
        return None  # not a shape ONNX Runtime would write (it refuses the node)
    return tuple(int(d) for d in got)


def _runtime_sizes(model: onnx.ModelProto, res: ShapeResolution, where: str,
                   max_fold_elems: int, seed: int) -> None:
    """Where ONNX Runtime's kernel and the specification disagree on an output size
    (:func:`runtime_output_shape`), keep the larger and say once which was taken (``notes``).
    When the kernel's is larger, the node is cut out of a copy of ``model`` (its outputs become
    graph inputs of the kernel's shape) and the chain resolves the copy, so that the consumers
    follow the kernel's shape. One node is cut at a time, the first in file (topological) order:
    the copy is checked the same way, so a later node is judged with its inputs' new shapes."""
    cut: dict[str, tuple[int, ...]] = {}
    cut_nodes = set()
    for k, node in enumerate(model.graph.node):
        out = node.output[0] if node.output else ""
        spec = res.shapes.get(out)
        if not out or spec is None:
            continue
        rt = runtime_output_shape(node, res.shapes, res.values, res.opset)
        if rt is None or tuple(rt) == tuple(spec):
            continue
        label = node.name or f"{node.op_type}_{k}"
        ort_larger = math.prod(rt) > math.prod(spec)
        res.notes.append(
            f"{where}: tensor {out!r} ({node.op_type} node {label!r}): the ONNX specification "
            f"gives shape {list(spec)}, {RUNTIME_NOTE} {list(rt)} (its own "
            "arithmetic, see scheduling.onnx_shapes.runtime_output_shape); planned at the "
            + ("larger, ONNX Runtime's" if ort_larger else "larger, the specification's"))
        if ort_larger:  # the first only: later nodes may read its consumers, whose shapes
            cut_nodes.add(k)  # change; the copy is checked again from there
            for o in node.output:
                if o:
                    cut[o] = tuple(int(d) for d in rt)
            break
    if not cut:
        return
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    keep = [n for k, n in enumerate(g.node) if k not in cut_nodes]
    del g.node[:]
    g.node.extend(keep)
    have = {vi.name for vi in g.input}
    for o, dims in cut.items():
        if o not in have and o in res.elem_types:
            g.input.append(helper.make_tensor_value_info(o, res.elem_types[o], list(dims)))
    vi_keep = [vi for vi in g.value_info if vi.name not in cut]
    del g.value_info[:]
    g.value_info.extend(vi_keep)
    for vi in g.output:  # declared output shapes follow the specification: hints here
        vi.type.tensor_type.ClearField("shape")
    sub = resolve_shapes(m, None, mode="infer", where=where, max_fold_elems=max_fold_elems,
                         seed=seed)
    for name, dims in sub.shapes.items():
        res.shapes[name] = dims
        res.elem_types[name] = sub.elem_types.get(name, res.elem_types.get(name))
        res.source[name] = "onnx_runtime" if name in cut else sub.source.get(name, "declared")
        res.why.pop(name, None)
    res.values = {k: v for k, v in sub.values.items() if k not in cut}
    res.notes.extend(n for n in sub.notes if n not in res.notes)


#: Operators ONNX Runtime folds although shape inference cannot size their outputs: ``Constant``
#: (an initializer when the graph loads) and ``Unique`` (onnxruntime 1.32 folds ``Unique`` of a
#: constant, with or without ``axis``, measured with ``optimized_model_filepath``; inference
#: leaves its length unknown, as for ``NonZero``, which it does not fold).
_RUNTIME_FOLDS_ANYWAY = frozenset({"Constant", "Unique"})


def runtime_folds_constant(
    node: onnx.NodeProto,
    values: Mapping[str, np.ndarray],
    shapes: Mapping[str, Sequence[int]],
    elem_types: Mapping[str, int],
    opset_imports: Sequence[onnx.OperatorSetIdProto],
) -> bool:
    """Whether ONNX Runtime's constant folding replaces ``node``, whose inputs are all
    constants, by initializers before the run (so that it allocates nothing for it at run time).

    ONNX Runtime's ``ConstantFolding`` graph transformer (``onnxruntime/core/optimizer/
    constant_folding.cc``; graph optimisation level basic and above, the session default)
    folds a deterministic node without subgraphs whose inputs are all constant initializers
    only when the outputs' sizes can be estimated before executing it (``EstimateNodeOutputSize
    InBytes``, from shape inference with the initializers' values): onnxruntime 1.32 logs
    "Skipping constant folding for NonZero node '' because output size could not be estimated
    before execution" and runs ``NonZero`` of a constant at run time, allocating its output.
    This function runs ONNX shape inference on ``node`` alone, its inputs given as initializers
    holding ``values`` (else as graph inputs of ``shapes`` and ``elem_types``), and answers
    whether every output gets a type and a static shape. ``Constant`` and ``Unique`` always
    fold (:data:`_RUNTIME_FOLDS_ANYWAY`, measured). ``Shape`` and an initializer
    that is also a graph input are the caller's to judge (``ConstantFoldShapeNode`` folds
    ``Shape`` whenever its input's shape is static; an overridable initializer is not a
    constant to ONNX Runtime).

    Parameters
    ----------
    node : onnx.NodeProto
        A node of the main graph whose inputs are all constants.
    values : mapping
        Known constant values by tensor name (shape, axes, pads: what inference reads).
    shapes, elem_types : mapping
        Static shapes (elements per dimension) and ONNX element types of the inputs whose value
        is not in ``values`` (large weights: inference needs only their shapes).
    opset_imports : sequence of onnx.OperatorSetIdProto
        The model's opsets (the node is inferred at its model's operator versions).

    Returns
    -------
    bool
        ``True`` when every output would be sized before execution (ONNX Runtime folds the
        node), ``False`` when one would not, or an input is neither valued nor shaped (then
        ONNX Runtime is assumed to run the node: its outputs are planned).

    Notes
    -----
    One shape inference of a one-node model: linear in the size of the valued inputs.

    Examples
    --------
    >>> from onnx import helper
    >>> c = np.array([[1.0, 0.0], [2.0, 3.0]], np.float32)
    >>> ops = [helper.make_opsetid("", 13)]
    >>> runtime_folds_constant(helper.make_node("NonZero", ["c"], ["nz"]), {"c": c}, {}, {}, ops)
    False
    >>> runtime_folds_constant(helper.make_node("Neg", ["c"], ["n"]), {"c": c}, {}, {}, ops)
    True
    """
    if node.op_type in _RUNTIME_FOLDS_ANYWAY and node.domain in ("", "ai.onnx"):
        return True
    outs = [o for o in node.output if o]
    inits, inputs = [], []
    for i in dict.fromkeys(i for i in node.input if i):
        v = values.get(i)
        if v is not None:
            try:
                inits.append(numpy_helper.from_array(np.asarray(v), i))
            except Exception:  # noqa: BLE001 - an element type numpy_helper cannot store
                v = None
        if v is None:
            if i not in shapes or not elem_types.get(i):
                return False
            inputs.append(helper.make_tensor_value_info(i, elem_types[i], list(shapes[i])))
    one = helper.make_model(
        helper.make_graph([node], "fold", inputs, [onnx.ValueInfoProto(name=o) for o in outs],
                          inits),
        opset_imports=list(opset_imports))
    try:
        inferred = shape_inference.infer_shapes(one, strict_mode=False)
    except Exception:  # noqa: BLE001 - inference failing: ONNX Runtime could not size it either
        return False
    got = {vi.name: vi for vi in list(inferred.graph.output) + list(inferred.graph.value_info)}
    return all(o in got and got[o].type.tensor_type.elem_type and _static(got[o])[0] is not None
               for o in outs)


#: ``doc_string`` of the nodes :func:`runtime_placeholders` writes: their output is a runtime
#: value of a known shape, never a constant (:func:`_fold` skips them).
_PLACEHOLDER_DOC = "memplan: placeholder for a runtime-sized output (not a constant)"


def runtime_placeholders(model: onnx.ModelProto, res: ShapeResolution) -> onnx.ModelProto:
    """``model`` for a second strict inference that must agree with the ``onnx_runtime``
    shapes of ``res`` (:func:`scheduling.onnx_control_flow.infer_subgraphs`): a copy where each
    node whose output took ONNX Runtime's larger shape is replaced, at the same position (node
    paths stay valid), by ``ConstantOfShape`` of an initializer holding that shape, so that
    inference gives the consumers, subgraphs included, the runtime's shape instead of the
    specification's. The nodes of :data:`UNTYPED_SPEC_OPS` whose output shape is resolved are
    replaced the same way (strict inference of ``MeanVarianceNormalization``-13 fails inside its
    function body whatever its output's declaration). ``model`` itself when there is no such
    node (or the opset is below 9, where ``ConstantOfShape`` does not exist: the subgraphs then
    see the specification's shapes)."""
    adjusted = {n for n, src in res.source.items() if src == "onnx_runtime"}
    # and the outputs of UNTYPED_SPEC_OPS (a MeanVarianceNormalization-13 fails strict
    # inference even with its output declared): their resolved shapes, without the node
    adjusted |= {n.output[0] for n in model.graph.node
                 if n.op_type in UNTYPED_SPEC_OPS and n.domain in ("", "ai.onnx")
                 and len(n.output) == 1 and n.output[0] in res.shapes
                 and n.output[0] in res.elem_types}
    if not adjusted or res.opset < 9:
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    taken = {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    for k, node in enumerate(g.node):
        if not node.output or node.output[0] not in adjusted:
            continue
        out = node.output[0]
        shape_name = f"{out}__runtime_shape"
        while shape_name in taken:
            shape_name += "_"
        taken.add(shape_name)
        g.initializer.append(numpy_helper.from_array(
            np.asarray(res.shapes[out], np.int64), shape_name))
        fill = numpy_helper.from_array(
            np.zeros(1, helper.tensor_dtype_to_np_dtype(res.elem_types[out])), "value")
        g.node[k].CopyFrom(helper.make_node("ConstantOfShape", [shape_name], [out],
                                            name=node.name, value=fill,
                                            doc_string=_PLACEHOLDER_DOC))
    return m


def _default_valued_inputs(model: onnx.ModelProto, res: ShapeResolution, where: str) -> None:
    """Note each initializer that is also a graph input (IR >= 4: a default a caller may
    replace) and that gives a size: an operator of :data:`_VALUE_SHAPED` reads it as a shape,
    pads, repeats, scales, sizes, axes or count. The sizes assume its default value."""
    if model.ir_version < 4:
        return
    g = model.graph
    defaults = {t.name for t in g.initializer} & {vi.name for vi in g.input}
    told = set()
    for k, node in enumerate(g.node):
        if node.op_type not in _VALUE_SHAPED:
            continue
        shaping = node.input[:1] if node.op_type in _VALUE_SHAPED_BY_INPUT0 else node.input[1:]
        for i in shaping:
            if i in defaults and i not in told:
                told.add(i)
                res.notes.append(
                    f"{where}: the size of {node.op_type} node {node.name or f'{node.op_type}_{k}'!r}"
                    f" follows graph input {i!r}, an initializer that is also a graph input: "
                    "sizes assume its default value (a caller that feeds another value gets "
                    "other sizes)")


#: Operators ONNX Runtime's CPU provider (onnxruntime 1.32) runs as their ONNX function body,
#: having no kernel for them: ``GroupNormalization`` (opsets 18 and 21; the model ONNX Runtime
#: writes after optimising holds the body's ``Reshape``, ``ReduceMean``, ``Sub``, ``Mul``, ...,
#: measured). The body's intermediate tensors are allocated at run time; an operator's
#: internals are not tensors of the graph here (:func:`_function_body_notes` says so).
RUNTIME_FUNCTION_OPS = frozenset({"GroupNormalization"})


def _function_body_notes(model: onnx.ModelProto, res: ShapeResolution, where: str) -> None:
    """One note per operator type of :data:`RUNTIME_FUNCTION_OPS` in the main graph: ONNX
    Runtime runs it as its function body, whose intermediates the plan does not hold."""
    count: dict[str, list[str]] = {}
    for k, node in enumerate(model.graph.node):
        if node.op_type in RUNTIME_FUNCTION_OPS and node.domain in ("", "ai.onnx"):
            count.setdefault(node.op_type, []).append(_node_label(node, k))
    for op, labels in count.items():
        res.notes.append(
            f"{where}: {len(labels)} {op} node(s) (first {labels[0]!r}): ONNX Runtime's CPU "
            "provider has no kernel for it and runs its ONNX function body, whose intermediate "
            "tensors it allocates at run time; the plan holds the operator's inputs and outputs "
            "only (as for any kernel's internal scratch)")


def _symbolic_shape_infer_module():
    """ONNX Runtime's ``symbolic_shape_infer`` module, or ``None`` where it cannot be imported.

    The module is loaded from its file, not through ``onnxruntime.tools``: that package's
    ``__init__`` imports torch whenever torch is installed (for an export helper the tool never
    uses), which cost every ONNX import 1.5-4 s in an environment with the ``executorch`` extra.
    The module's own imports are numpy, onnx, sympy and packaging."""
    import importlib.util
    import sys

    name = "onnxruntime.tools.symbolic_shape_infer"
    if name in sys.modules and sys.modules[name] is None:  # blocked, as a missing module
        return None
    mod = sys.modules.get(name) or sys.modules.get("_memplan_ort_symbolic_shape_infer")
    if mod is None:
        from planners.io import package_folder

        ort = package_folder("onnxruntime")
        path = ort / "tools" / "symbolic_shape_infer.py" if ort is not None else None
        if path is None or not path.is_file():
            return None
        spec = importlib.util.spec_from_file_location("_memplan_ort_symbolic_shape_infer", path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except ImportError:  # sympy missing
            return None
        sys.modules["_memplan_ort_symbolic_shape_infer"] = mod
    return mod if hasattr(mod, "SymbolicShapeInference") else None


def _ort_symbolic(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """ONNX Runtime's symbolic shape inference, keeping partial results (``None`` on failure).

    ``SymbolicShapeInference.infer_shapes`` raises on an incomplete result and writes a file to
    the working directory; we run its loop ourselves to keep what it did settle.
    """
    tool = _symbolic_shape_infer_module()
    if tool is None:  # sympy missing or an onnxruntime without the tool
        return None
    SymbolicShapeInference = tool.SymbolicShapeInference
    if _opset(model) < 7:
        return None
    log = getattr(tool, "logger", None) or logging.getLogger(tool.__name__)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        ssi = SymbolicShapeInference(2**31 - 1, False, False, 0)
        ssi._preprocess(model)
        for _ in range(8):  # the tool reruns only after a symbolic-dim merge; bound it anyway
            if not ssi.run_:
                break
            ssi._infer_impl()
        ssi._update_output_from_vi()
        out = ssi.out_mp_
        del out.graph.value_info[:]
        out.graph.value_info.extend(v for k, v in ssi.known_vi_.items())
        return out
    except Exception:  # noqa: BLE001 - any failure of the tool means "no contribution"
        return None
    finally:
        log.setLevel(level)


def resolve_shapes(
    model_or_path: str | os.PathLike | onnx.ModelProto,
    overrides: Overrides | None = None,
    *,
    mode: str = "infer",
    where: str | None = None,
    max_fold_elems: int = 1 << 16,
    seed: int = 0,
) -> ShapeResolution:
    """Resolve every tensor's static shape through the chain of the module docstring.

    Parameters
    ----------
    model_or_path : path-like or onnx.ModelProto
        The model (never modified).
    overrides : mapping, optional
        See :func:`apply_overrides`.
    mode : {"infer", "measured"}
        ``"infer"``: the inference chain. ``"measured"``: node outputs from one ONNX Runtime run
        (:func:`measured_shapes`); graph inputs must then be static (declared or overridden).
    where : str, optional
        Label for error messages (default: the path or the graph name).
    max_fold_elems : int
        Largest value (elements) constant folding evaluates or keeps.
    seed : int
        Seed of the random inputs in measured mode.

    Returns
    -------
    ShapeResolution
        Tensors no source settled are absent from ``shapes`` (see :func:`unknown_shape_error`).

    Raises
    ------
    CycleError
        The nodes form a cycle (:func:`check_node_order`, before any shape).
    OnnxImportError
        Nodes out of topological order; a bad override; strict shape inference finds a
        conflict (e.g. a declared shape that disagrees with the operators) or an operator whose
        output it leaves untyped without a rule here (the producer named); measured mode with a
        non-static input or a failed run.

    Notes
    -----
    Each inference pass is linear in the model size; constant folding repeats (folding may make
    a ``Shape`` input static) at most once per node and in practice two or three times.
    """
    src_model, label = _load(model_or_path)
    where = where or label
    if mode not in ("infer", "measured"):
        raise ValueError(f"mode {mode!r}: expected 'infer' or 'measured'")
    check_node_order(src_model, where)  # a cycle is a cycle, whatever the shapes
    model = onnx.ModelProto()
    model.CopyFrom(src_model)
    overridden = apply_overrides(model, overrides, where)
    res = ShapeResolution(model=model, opset=_opset(model))
    g = model.graph
    for t in g.initializer:
        res.shapes[t.name] = tuple(int(d) for d in t.dims)
        res.elem_types[t.name] = int(t.data_type)
        res.source[t.name] = "declared"
    for vi in list(src_model.graph.input) + list(src_model.graph.output):
        neg = [f"dim {k} = {d.dim_value}" for k, d in enumerate(vi.type.tensor_type.shape.dim)
               if d.HasField("dim_value") and d.dim_value < 0]
        if neg:  # "-1" written for a dynamic dimension
            res.why[vi.name] = f"declared {', '.join(neg)} in the file, a dynamic dimension"
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.name in res.shapes:
            continue
        n0 = len(res.shapes)
        _harvest_one(res, vi)
        if vi.name in overridden and vi.name not in res.shapes:  # node output: type inferred later
            res.shapes[vi.name] = _static(vi)[0]
        if len(res.shapes) > n0 and (vi.name in overridden or _had_param(src_model, vi.name)):
            res.source[vi.name] = "override"

    # a graph output declared with symbolic dims ([1, 'seqlen']) describes the export trace: a
    # hint that inference may contradict without failing, so inference starts without it
    partial_out = {}
    for vi in g.output:
        if vi.name not in res.shapes and vi.type.HasField("tensor_type") \
                and vi.type.tensor_type.HasField("shape"):
            partial_out[vi.name] = _dims(vi)
            vi.type.tensor_type.ClearField("shape")

    # values of constants: inline initializers (not overridable graph inputs) and Constant nodes
    graph_inputs = {i.name for i in g.input}
    for t in g.initializer:
        if (t.name not in graph_inputs or model.ir_version < 4) and \
                t.data_location != onnx.TensorProto.EXTERNAL and math.prod(t.dims) <= max_fold_elems:
            try:
                res.values[t.name] = numpy_helper.to_array(t)
            except Exception:  # noqa: BLE001 - unsupported element type: no value
                pass

    if mode == "measured":
        for vi in g.input:
            if vi.name not in res.shapes:
                raise unknown_shape_error(res, vi.name, where)
        for name, (shape, et) in measured_shapes(model, seed=seed, where=where).items():
            if name not in graph_inputs:
                res.shapes[name] = shape
                res.elem_types[name] = et
                res.source[name] = "measured"
        return res

    inferred = _infer_hinted(model, res, overridden, where)
    _harvest(res, inferred, "onnx_strict")
    inferred = _infer_hinted(model, res, overridden, where, True, " (with data propagation)")
    _harvest(res, inferred, "onnx_data_prop")
    spec_new = _spec_rules(model, res)
    for _ in range(len(g.node) + 1):
        if all(o in res.shapes for o in _node_outputs(model)):
            break  # nothing left to settle (the common case): no folding needed
        n_folded = _fold(model, res, max_fold_elems)
        if not n_folded and not spec_new:
            break
        for name, v in res.values.items():
            if name not in res.shapes:
                res.shapes[name] = tuple(v.shape)
                res.elem_types[name] = int(helper.np_dtype_to_tensor_dtype(v.dtype))
                res.source[name] = "constant_folding"
        # new values may let the next Shape fold; spec shapes reach their consumers
        folded = _infer_hinted(
            _with_spec(_folded_copy(model, res), res), res, overridden, where, True,
            " after constant folding" if n_folded else " with operator spec shapes", base=model)
        _harvest(res, folded, "constant_folding" if n_folded else "onnx_spec")
        spec_new = _spec_rules(model, res)
    missing = [o for o in _node_outputs(model) if o not in res.shapes]
    if missing:
        sym = _ort_symbolic(_with_spec(_folded_copy(model, res), res))
        if sym is not None:
            _harvest(res, sym, "ort_symbolic")
            _spec_rules(model, res)
    _runtime_sizes(model, res, where, max_fold_elems, seed)
    _default_valued_inputs(model, res, where)
    _function_body_notes(model, res, where)
    for name, declared in partial_out.items():
        now = res.shapes.get(name)
        if now is not None and declared is not None and (len(declared) != len(now) or any(
                isinstance(a, int) and a != b for a, b in zip(declared, now))):
            res.notes.append(
                f"{where}: graph output {name!r} is declared with shape {declared}, the "
                f"{res.source[name]} shape is {list(now)}; the declared shape was ignored")
    return res


def _had_param(model: onnx.ModelProto, name: str) -> bool:
    g = model.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.name == name:
            return any(d.HasField("dim_param") or (d.HasField("dim_value") and d.dim_value < 0)
                       for d in vi.type.tensor_type.shape.dim)
    return False


def _harvest_one(res: ShapeResolution, vi: onnx.ValueInfoProto) -> None:
    if not vi.type.HasField("tensor_type"):
        return
    tt = vi.type.tensor_type
    shape, why = _static(vi)
    if tt.elem_type:
        res.elem_types.setdefault(vi.name, int(tt.elem_type))
    if shape is None:
        res.why.setdefault(vi.name, why)
    elif tt.elem_type:
        res.shapes[vi.name] = shape
        res.source[vi.name] = "declared"


def _random_input(shape: Sequence[int], elem_type: int, rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    if dt.kind == "f":
        return rng.standard_normal(tuple(shape)).astype(dt)
    if dt.kind == "b":
        return np.zeros(tuple(shape), dt)
    return np.zeros(tuple(shape), dt)  # integers: 0 is a valid index and a valid count


def measured_shapes(
    model_or_path: str | os.PathLike | onnx.ModelProto,
    overrides: Overrides | None = None,
    seed: int = 0,
    *,
    where: str | None = None,
    values: Mapping[str, object] | None = None,
) -> dict[str, tuple[tuple[int, ...], int]]:
    """Run the model once with ONNX Runtime and return every node output's shape and type.

    A copy of the model lists every non-empty node output as a graph output; ONNX Runtime runs it
    on the CPU with graph optimisations off, on random inputs: standard normal floats (``seed``),
    zeros for integer and bool inputs (0 is a valid index, count and flag), except the inputs
    ``values`` gives (a sample rate, a mode flag: an input the model rejects at 0).

    Parameters
    ----------
    model_or_path : path-like or onnx.ModelProto
    overrides : mapping, optional
        As :func:`apply_overrides`; graph inputs must end up with static shapes.
    seed : int
        Seed of :func:`numpy.random.default_rng` for the float inputs.
    where : str, optional
        Label for error messages.
    values : mapping, optional
        ``{graph input: value}`` fed instead of the random or zero input: a number or nested
        list, converted to the input's element type, with the input's static shape (a scalar
        for a rank-0 input, e.g. silero-vad's ``{"sr": 16000}``).

    Returns
    -------
    dict
        ``{tensor name: (shape, onnx element type)}`` for every node output ONNX Runtime
        returned (node order). A shape that depends on input *values* is the one for these
        inputs.

    Raises
    ------
    OnnxImportError
        A graph input without a static shape (named, with the ``--override`` to give), a
        ``values`` entry that names no graph input or has another shape, or ONNX Runtime failing
        to load or run the model (its message).
    """
    import onnxruntime as ort

    src, label = _load(model_or_path)
    where = where or label
    m = onnx.ModelProto()
    m.CopyFrom(src)
    if overrides:
        apply_overrides(m, overrides, where)
    g = m.graph
    init_names = {t.name for t in g.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in g.input:
        if vi.name in init_names:
            continue
        shape, why = _static(vi)
        if shape is None:
            raise OnnxImportError(
                f"{where}: graph input {vi.name!r} has an unknown shape ({why}); measured shapes "
                f"need static inputs: --override {vi.name}=D1,D2,... "
                f"(overrides={{{vi.name!r}: [...]}})")
        feeds[vi.name] = _random_input(shape, vi.type.tensor_type.elem_type, rng)
    for name, val in (values or {}).items():
        if name not in feeds:
            raise OnnxImportError(
                f"{where}: input value for {name!r}: not a graph input of the model "
                f"(inputs {sorted(feeds)})")
        arr = np.asarray(val, dtype=feeds[name].dtype)
        if arr.shape != feeds[name].shape:
            raise OnnxImportError(
                f"{where}: input value for {name!r} has shape {list(arr.shape)}, the input's "
                f"shape is {list(feeds[name].shape)}")
        feeds[name] = arr
    have = {o.name for o in g.output}
    extra = [o for o in _node_outputs(m) if o not in have and o not in init_names]
    g.output.extend(onnx.ValueInfoProto(name=o) for o in dict.fromkeys(extra))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(m.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        got = sess.run(names, {k: v for k, v in feeds.items()
                               if k in {i.name for i in sess.get_inputs()}})
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        msg = " ".join(str(e).split())
        raise OnnxImportError(f"{where}: ONNX Runtime could not run the model: {msg}") from None
    produced = set(_node_outputs(m))
    out = {}
    for name, v in zip(names, got):
        if name not in produced or not isinstance(v, np.ndarray):
            continue
        out[name] = (tuple(int(d) for d in v.shape), int(helper.np_dtype_to_tensor_dtype(v.dtype)))
    return out


def measured_sizes(
    model_or_path: str | os.PathLike | onnx.ModelProto,
    overrides: Overrides | None = None,
    seed: int = 0,
    values: Mapping[str, object] | None = None,
) -> dict[str, int]:
    """Bytes of every node output in one ONNX Runtime run (:func:`measured_shapes`; ``values``:
    input values fed instead of random or zero inputs).

    Returns
    -------
    dict
        ``{tensor name: prod(shape) * itemsize}`` in bytes.

    Raises
    ------
    OnnxImportError
        As :func:`measured_shapes`.

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    >>> m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    ...                                        [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    >>> measured_sizes(m)
    {'y': 24}
    """
    out = {}
    for name, (shape, et) in measured_shapes(model_or_path, overrides, seed,
                                             values=values).items():
        item = np.dtype(helper.tensor_dtype_to_np_dtype(et)).itemsize
        out[name] = math.prod(shape) * item
    return out


def unknown_shape_error(res: ShapeResolution, tensor: str, where: str) -> OnnxImportError:
    """The error for a tensor whose shape no source settled.

    Names the file, the tensor and the unknown part; for a node output, the node (its position
    in file order, which ONNX requires to be topological), its operator type and, for operators
    whose output shape follows an input's *value*, that input when it is not a constant (it
    depends on runtime data, so it was not folded); and the ``--override`` that would help: the
    graph inputs without static shapes and their symbolic dimensions, or the tensor itself.
    """
    g = res.model.graph
    why = res.why.get(tensor, "no shape was inferred")
    params = sorted({d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim
                     if d.HasField("dim_param") and not d.HasField("dim_value")})
    init_names = {t.name for t in g.initializer}
    unknown_inputs = [vi.name for vi in g.input
                      if vi.name not in res.shapes and vi.name not in init_names]
    head = f"{where}: tensor {tensor!r} has an unknown size ({why})"
    own = f"--override {tensor}=D1,D2,... (overrides={{{tensor!r}: [...]}})"
    for k, node in enumerate(g.node):
        if tensor not in node.output:
            continue
        shaping = node.input[:1] if node.op_type in _VALUE_SHAPED_BY_INPUT0 else node.input[1:]
        runtime = [i for i in shaping if i and i not in res.values]
        hint = ""
        if runtime and node.op_type in _VALUE_SHAPED:
            hint = (f"; its shape follows the value of {runtime[0]!r}, which depends on runtime "
                    "data and is never constant-folded")
        help_ = own
        if unknown_inputs:
            help_ = (f"give graph input(s) {unknown_inputs} static shapes with --override "
                     "INPUT=D1,D2,..." + (f" or --override DIM=VALUE for {params}" if params
                                          else "") + f", or this tensor's with {own}")
        return OnnxImportError(
            f"{head}: it is output {list(node.output).index(tensor)} of node "
            f"{node.name or node.op_type!r} (op {node.op_type}, node {k} in topological order), "
            "the first whose output shape stays unknown after ONNX shape inference, data "
            f"propagation, constant folding and ONNX Runtime symbolic inference{hint}; {help_}")
    kind = "a graph input" if tensor in {vi.name for vi in g.input} else "a graph tensor"
    return OnnxImportError(
        f"{head}: it is {kind}; give it a static shape with {own}"
        + (f" or set its symbolic dims with --override DIM=VALUE ({params})" if params else ""))
