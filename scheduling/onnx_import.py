"""ONNX importer: an ``.onnx`` file to a :class:`scheduling.graph.Graph`.

Steps of :func:`load_onnx`:

1. read the protobuf (a clear :class:`OnnxImportError` for a missing, empty or malformed file)
   and check the node order before any shape (:func:`scheduling.onnx_shapes.check_node_order`:
   a cycle is a :class:`~scheduling.errors.CycleError` whatever the shapes of its tensors);
   initializers stored as external data (the ONNX external data format, a file in the model's
   folder) are read when they have at most :data:`EXTERNAL_READ_MAX_ELEMS` elements (a shape,
   pads, scales), larger ones (weights) are not: only their dims are needed;
2. apply the caller's ``overrides`` (a whole shape by tensor name -- graph input, graph output,
   ``value_info`` or node output -- or a value per ``dim_param`` name; ``-1`` dims in the file
   are unknown until overridden);
3. resolve every tensor's shape with :func:`scheduling.onnx_shapes.resolve_shapes`: strict ONNX
   inference, with data propagation, constant folding of shape-only subgraphs, ONNX Runtime's
   symbolic inference (or, ``shapes="measured"``, one ONNX Runtime run), then ONNX Runtime's
   kernel arithmetic where it gives a larger size than the specification (``onnx_runtime``;
   :func:`scheduling.onnx_shapes.runtime_output_shape`): a planned size is never smaller than
   what ONNX Runtime writes, and each disagreement is one line of ``graph.notes`` (also logged
   once on the ``memplan.onnx`` logger as a warning); the source of each shape is kept on
   ``graph.shape_source``;
4. **constant folding of kinds**: initializers, and every output of a node whose inputs are all
   constants (``Constant``, ``ConstantOfShape`` of an initializer shape, ``Unsqueeze`` of a weight
   ...) are weights, and so is the output of a ``Shape`` node whose input has a static shape
   (only the shape is read). Those nodes are not operators of the graph: a runtime folds them
   once. Only what ONNX Runtime's constant folding folds is folded
   (:func:`scheduling.onnx_shapes.runtime_folds_constant`): a node whose output size shape
   inference cannot give before the run (``NonZero``, ``Compress``, ``NonMaxSuppression`` of
   constants) and a node reading an initializer that is also a graph input (IR >= 4: not a
   constant to ONNX Runtime) stay operators, their outputs planned at the sizes ONNX Runtime
   allocates; a ``Shape`` of such an output is not folded either. One line of ``graph.notes``
   counts the folded nodes other than ``Constant`` and their bytes: ONNX Runtime runs them,
   and allocates those bytes, only with graph optimisations off (``ORT_DISABLE_ALL``). The light models shipped in the onnx wheel keep each weight as ``ConstantOfShape(shape
   initializer)``; the shape initializers themselves are dropped (no remaining operator reads
   them). **Values**: a constant of at most ``max_value_elems`` elements keeps its elements on
   :attr:`Tensor.value <scheduling.graph.Tensor.value>` -- initializers (stored inline, not as
   external data) and the outputs of folded nodes of
   :data:`scheduling.constfold.FOLDABLE_OPS` (``Constant``, ``ConstantOfShape``, ``Shape``,
   ``Reshape``, ``Identity``, ``Unsqueeze``, ``Cast``, ...) whose input values are known,
   evaluated with numpy by :func:`scheduling.constfold.evaluate_constant_op`. Larger or
   non-foldable constants stay weights without a value;
5. IR v3 files list initializers among the graph inputs: those are weights, not inputs;
6. operators in file order with every named output: the operator writes it even if nothing
   reads it (e.g. the mask of an inference ``Dropout``, or a ``Split`` piece), so it lives at its
   producer's step; only an empty output name (an omitted optional output) is absent;
7. every kept tensor must have a static shape; otherwise :class:`OnnxImportError` names the first
   node whose output stays unknown, its operator type, and the ``--override`` that would help
   (:func:`scheduling.onnx_shapes.unknown_shape_error`);
8. empty (omitted optional) input names are left out of :attr:`Operator.inputs`;
9. MACs estimates for ``Conv``, ``ConvTranspose``, ``Gemm`` and ``MatMul`` (:func:`estimate_macs`);
10. control flow (:mod:`scheduling.onnx_control_flow`): model-local functions are expanded and an
    ``If`` with a truly constant condition (a constant, or decided by static shapes) is
    inlined before step 3 (then step 3 runs again); the scan outputs of a ``Loop`` with an
    exact constant trip count are sized by it and step 3 runs again for their consumers; a
    node with a subgraph
    (``If``, ``Loop``, ``Scan``) never folds into a weight, reads its implicit (outer-scope)
    inputs at its own step (they are added to :attr:`Operator.inputs`, names kept in the
    attribute ``implicit_inputs``) and writes an extra ``uint8`` output ``<op>_subgraph_ws``
    that no operator reads: its subgraphs' workspace, live exactly during its step. Sequence,
    optional and map values, an ``If`` on a runtime condition whose branches return different
    shapes (ONNX Runtime writes the taken branch's: no static size holds both), and any
    construct the module cannot model, are a clear error.

Element sizes come from ``onnx.helper.tensor_dtype_to_np_dtype``; bytes are
``prod(shape) * itemsize``.
"""

from __future__ import annotations

import logging
import math
import os
from collections import ChainMap, Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper

from .constfold import evaluate_constant_op
from .errors import OnnxImportError
from .graph import Graph
from .onnx_control_flow import (
    _static_dims,
    control_flow_nodes,
    infer_subgraphs,
    is_foldable_node,
    prepare_model,
)
from .onnx_shapes import (
    RUNTIME_NOTE,
    check_node_order,
    resolve_shapes,
    runtime_folds_constant,
    runtime_placeholders,
    unknown_shape_error,
)

__all__ = ["load_onnx", "estimate_macs", "onnx_symbolic_problem"]

Overrides = Mapping[str, Sequence[int] | int]


def _read_model(path: str | os.PathLike | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    if isinstance(path, onnx.ModelProto):
        return path, path.graph.name or "model"
    p = Path(path)
    if not p.is_file():
        raise OnnxImportError(f"{p}: no such ONNX file")
    if p.stat().st_size == 0:
        raise OnnxImportError(f"{p}: empty file, not an ONNX model")
    try:
        model = onnx.load(str(p), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as e:
        raise OnnxImportError(f"{p}: not a valid ONNX protobuf ({type(e).__name__}: {e})") from None
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise OnnxImportError(f"{p}: the file parses but holds no graph nodes (malformed ONNX)")
    bad = _undecodable_name(model.graph)
    if bad is not None:
        raise OnnxImportError(f"{p}: name {bad!r} is not valid UTF-8 (malformed ONNX string field)")
    _load_small_external(model, p)
    return model, p.stem


#: Initializers stored as external data with at most this many elements are read at import (a
#: shape, pads or scales); larger ones (weights) stay unread: only their dims are needed.
EXTERNAL_READ_MAX_ELEMS = 1 << 16


def _load_small_external(model: onnx.ModelProto, path: Path) -> None:
    """Read into ``model`` the external data of each main-graph initializer of at most
    :data:`EXTERNAL_READ_MAX_ELEMS` elements (``onnx.external_data_helper``; the ONNX external
    data format: ``location`` relative to the model's folder). A location outside that folder
    or a missing or short data file raises :class:`OnnxImportError` naming the initializer and
    the file."""
    from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_tensor

    base = path.resolve().parent
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL or math.prod(t.dims) > EXTERNAL_READ_MAX_ELEMS:
            continue
        info = ExternalDataInfo(t)
        target = (base / info.location).resolve()
        if base not in target.parents:
            raise OnnxImportError(
                f"{path}: initializer {t.name!r} stores its data in {info.location!r}, outside the "
                "model's folder (the ONNX external data format allows only paths inside it)")
        if not target.is_file():
            raise OnnxImportError(
                f"{path}: initializer {t.name!r} stores its data in {str(target)!r}, which does not "
                "exist")
        try:
            load_external_data_for_tensor(t, str(base))
        except Exception as e:  # noqa: BLE001 - onnx raises several types for a bad file
            raise OnnxImportError(
                f"{path}: initializer {t.name!r}: cannot read its external data from "
                f"{str(target)!r} ({type(e).__name__}: {e})") from None
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))
        if dt.kind not in "OUS" and len(t.raw_data) != math.prod(t.dims) * dt.itemsize:
            raise OnnxImportError(
                f"{path}: initializer {t.name!r}: {str(target)!r} holds {len(t.raw_data)} bytes "
                f"at its offset, the tensor needs {math.prod(t.dims) * dt.itemsize}")
        t.data_location = onnx.TensorProto.DEFAULT
        del t.external_data[:]


#: Graph-valued attributes each control-flow operator of the default domain must have.
_GRAPH_ATTRIBUTES = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",)}


def _check_graph_attributes(graph: onnx.GraphProto, where: str) -> None:
    """Raise :class:`OnnxImportError` naming the first ``If``/``Loop``/``Scan`` node of ``graph``
    (or of a subgraph) that lacks one of its graph attributes (:data:`_GRAPH_ATTRIBUTES`)."""
    for node in graph.node:
        subs = {a.name: a for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        if node.domain in ("", "ai.onnx"):
            for attr in _GRAPH_ATTRIBUTES.get(node.op_type, ()):
                if attr not in subs:
                    raise OnnxImportError(
                        f"{where}: node {node.name or node.op_type!r} ({node.op_type}) has no "
                        f"graph attribute {attr!r} (malformed control flow)"
                    )
        for a in node.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs):
                _check_graph_attributes(sub, where)


def _undecodable_name(graph: onnx.GraphProto) -> bytes | None:
    """The first tensor, node or dimension name of ``graph`` or its subgraphs that protobuf left
    as ``bytes`` because it is not valid UTF-8, else ``None``."""
    for vi in (*graph.input, *graph.output, *graph.value_info):
        names = [vi.name] + [d.dim_param for d in vi.type.tensor_type.shape.dim]
        for s in names:
            if not isinstance(s, str):
                return s
    for t in graph.initializer:
        if not isinstance(t.name, str):
            return t.name
    for node in graph.node:
        for s in (node.name, node.op_type, node.domain, *node.input, *node.output):
            if not isinstance(s, str):
                return s
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                bad = _undecodable_name(sub)
                if bad is not None:
                    return bad
    return None


def estimate_macs(
    op_type: str,
    attributes: Mapping[str, Any],
    in_shapes: Sequence[Sequence[int] | None],
    out_shapes: Sequence[Sequence[int] | None],
) -> int | None:
    """Multiply-accumulate estimate of one operator, or ``None`` for other operator types.

    * ``Conv``: ``prod(Y) * (C_in / group) * prod(kernel)`` for output ``Y = [N, M, spatial...]``,
      weight ``W = [M, C_in/group, k...]``;
    * ``ConvTranspose``: ``prod(X) * (M / group) * prod(kernel)`` (each input pixel scatters);
    * ``Gemm``: ``M * N * K`` (``K`` from ``A`` and ``transA``);
    * ``MatMul``: ``prod(Y) * K`` with ``K`` the last dimension of ``A`` (1-D ``A``: its length).

    Shapes are element counts per dimension. ``O(rank)``.

    >>> estimate_macs("Conv", {"group": 1}, [[1, 3, 224, 224], [32, 3, 3, 3]], [[1, 32, 112, 112]])
    10838016
    >>> estimate_macs("Gemm", {}, [[1, 2048], [1000, 2048]], [[1, 1000]])
    2048000
    """
    try:
        if op_type == "Conv":
            y, w = out_shapes[0], in_shapes[1]
            return math.prod(y) * math.prod(w[1:])
        if op_type == "ConvTranspose":
            x, w = in_shapes[0], in_shapes[1]
            return math.prod(x) * math.prod(w[1:])
        if op_type == "Gemm":
            a, y = in_shapes[0], out_shapes[0]
            k = a[0] if attributes.get("transA", 0) else a[1]
            return math.prod(y) * k
        if op_type == "MatMul":
            a, y = in_shapes[0], out_shapes[0]
            return math.prod(y) * a[-1]
    except (TypeError, IndexError):
        return None
    return None


def load_onnx(
    path: str | os.PathLike | onnx.ModelProto,
    overrides: Overrides | None = None,
    name: str | None = None,
    max_value_elems: int = 4096,
    shapes: str = "infer",
) -> Graph:
    """Import an ONNX model as a :class:`Graph` (steps in the module docstring).

    Parameters
    ----------
    path : path-like or onnx.ModelProto
        The ``.onnx`` file (or an in-memory model, which is not modified).
    overrides : mapping, optional
        Static shapes: ``{"tensor_name": [1, 3, 224, 224]}`` replaces the whole shape of any
        tensor (graph input, graph output, ``value_info`` entry or node output); ``{"batch": 1}``
        sets every declared dimension whose ``dim_param`` is ``"batch"``. A ``-1`` dim in the
        file is unknown until overridden (:func:`scheduling.onnx_shapes.apply_overrides`).
    name : str, optional
        Graph name (default: the file name without ``.onnx``).
    max_value_elems : int
        Constants (weights) of at most this many elements keep their values as numpy arrays on
        :attr:`Tensor.value <scheduling.graph.Tensor.value>` (step 4); ``0`` keeps none.
    shapes : {"infer", "measured"}
        Where shapes come from: the inference chain of :mod:`scheduling.onnx_shapes`, or one
        ONNX Runtime run on random inputs (:func:`scheduling.onnx_shapes.measured_shapes`; a
        cross-check: value-dependent shapes are those of that run).

    Returns
    -------
    Graph
        Operators in file order (constant subgraphs removed), tensors of kind weight / input /
        output / activation with static shapes, dtype names and bytes. Not yet validated for
        acyclicity beyond what ONNX guarantees; call :meth:`Graph.validate` to check.
        ``graph.shape_source`` maps each tensor to the source of its shape (one of
        :data:`scheduling.onnx_shapes.SHAPE_SOURCES`). ``graph.notes`` lists, one line each,
        what was not taken from the file: a declared shape strict inference contradicts
        (ignored; tensor and both shapes named), an ``If`` branch that cannot run with these
        shapes (its workspace not counted; :mod:`scheduling.onnx_control_flow`), a tensor the
        specification and ONNX Runtime's kernel size differently (both shapes, the larger
        taken) and a size that assumes an overridable initializer's default value.

    Raises
    ------
    CycleError
        The nodes form a cycle (checked before any shape: the nodes along it are named).
    OnnxImportError
        Missing, empty or malformed file; nodes out of topological order; external data outside
        the model's folder, missing or short; strict shape inference failure (an operator whose
        output inference leaves untyped is named, not its consumer); an ``If`` on a runtime
        condition whose branches return different shapes; an override that matches
        nothing; a tensor whose size stays unknown (named, with its symbolic dimensions); an
        element type without a fixed size (strings).

    Notes
    -----
    Runs in ``O(#nodes + #tensors)`` after shape inference. The nine light models of the onnx
    wheel load in well under a second each.
    """
    model, stem = _read_model(path)
    where = str(path) if not isinstance(path, onnx.ModelProto) else f"model {stem!r}"
    _check_graph_attributes(model.graph, where)
    check_node_order(model, where)  # before any shape: a cycle is reported as a cycle
    model = prepare_model(model, where)  # control flow: local functions, constant-condition If
    loop_shapes: dict[str, list[int]] = {}  # Loop outputs sized by an exact trip count
    while True:  # an If whose condition static shapes decide is inlined; shapes resolved again
        if not loop_shapes:
            res = first = resolve_shapes(model, overrides, mode=shapes, where=where)
        else:  # the Loop outputs' consumers: resolved again on the first resolution's model
            # (overrides applied; ONNX Runtime's larger shapes as placeholders)
            res = resolve_shapes(runtime_placeholders(first.model, first), loop_shapes,
                                 mode=shapes, where=where)
            res.model = first.model
            res.notes = list(first.notes) + [n for n in res.notes if n not in first.notes]
            for o, src in first.source.items():
                if src == "onnx_runtime":
                    res.source[o] = src
            for o in loop_shapes:
                res.source[o] = "onnx_strict"
        notes = list(res.notes)
        # ONNX Runtime's larger shapes (onnx_runtime) reach the subgraphs through placeholders
        flow_shapes = dict(res.shapes)
        flow_model, decided = infer_subgraphs(runtime_placeholders(res.model, res), flow_shapes,
                                              res.elem_types, where, notes, res.values)
        produced = {o for n in res.model.graph.node for o in n.output if o}
        new = {k: list(v) for k, v in flow_shapes.items()
               if k not in res.shapes and k in produced and k not in loop_shapes}
        if new and not decided:  # a Loop's scan outputs, sized by its exact trip count: its
            loop_shapes.update(new)  # consumers are resolved again from them
            continue
        for k in new:
            res.shapes[k] = tuple(new[k])
        if not decided:
            break
        loop_shapes = {}
        inlined = prepare_model(model, where, decided)
        if inlined is model:  # cannot happen: every decided node is an If of the model
            raise OnnxImportError(f"{where}: If conditions {sorted(decided)} were not inlined")
        model = inlined
    model = res.model
    g = model.graph
    if flow_model is not None:  # shapes that only inference with the subgraphs settles: the
        # outputs of an If one of whose branches cannot run with these shapes (ruled out)
        fg = flow_model.graph
        for vi in list(fg.value_info) + list(fg.output):
            dims = _static_dims(vi)
            if vi.name not in res.shapes and dims is not None and vi.type.tensor_type.elem_type:
                res.shapes[vi.name] = tuple(dims)
                res.elem_types[vi.name] = int(vi.type.tensor_type.elem_type)
                res.source[vi.name] = "onnx_strict"
        _check_if_branch_shapes(flow_model, res.shapes, where)

    init_names = {t.name for t in g.initializer}
    init_info = {t.name: (list(t.dims), t.data_type) for t in g.initializer}
    graph_outputs = [o.name for o in g.output]
    out_set = set(graph_outputs)

    # 4. constant propagation of kinds, and values of small constants.
    values: dict[str, np.ndarray] = {}
    if max_value_elems > 0:
        for t in g.initializer:
            inline = t.data_location != onnx.TensorProto.EXTERNAL
            if inline and math.prod(t.dims) <= max_value_elems:
                try:
                    values[t.name] = numpy_helper.to_array(t)
                except Exception:  # unsupported element type: keep it without a value
                    pass

    def known_shape(tname: str) -> list[int] | None:
        if tname in init_info:
            return init_info[tname][0]
        sh = res.shapes.get(tname)
        return None if sh is None else list(sh)

    def fold_values(node: onnx.NodeProto, ins: list[str]) -> None:
        outs = [o for o in node.output if o]
        sizes = [known_shape(o) for o in outs]
        if any(sh is None or math.prod(sh) > max_value_elems for sh in sizes):
            return  # too large to keep (or size unknown: never materialise it)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        res = evaluate_constant_op(
            node.op_type, attrs, [values.get(i) for i in ins], [known_shape(i) for i in ins]
        )
        if res is None or len(res) < len(outs):
            return
        for o, v, sh in zip(outs, res, sizes):
            if tuple(v.shape) == tuple(sh):  # agrees with ONNX shape inference
                values[o] = v

    const = set(init_names)
    # an initializer that is also a graph input (IR >= 4) is a default a caller may replace:
    # ONNX Runtime does not treat it as a constant, so it folds nothing that reads it
    overridable = init_names & {vi.name for vi in g.input} if model.ir_version >= 4 else set()
    # outputs ONNX Runtime sizes only when it runs their node (NonZero of a constant, or one its
    # own inference leaves unshaped: a GroupNormalization's, sized here by the specification),
    # and what is computed from them: a Shape of one is not folded either
    unsized = {t for t, src in res.source.items() if src in ("onnx_spec", "ort_symbolic")}
    known_values = ChainMap(values, res.values)  # live: folded values join as they come
    # shapes plain strict inference settles are sized before execution without a check
    inferred_src = ("declared", "override", "onnx_strict")
    op_nodes, folded = [], []
    for node in g.node:
        ins = [i for i in node.input if i]
        if node.op_type == "Shape":  # ONNX Runtime's ConstantFoldShapeNode: a static input
            folds = is_foldable_node(node) and len(ins) == 1 and (
                ins[0] in const or (known_shape(ins[0]) is not None and ins[0] not in unsized))
        else:
            folds = is_foldable_node(node) and all(i in const for i in ins) and not any(
                i in overridable for i in ins) and (
                    all(res.source.get(o) in inferred_src for o in node.output if o)
                    or runtime_folds_constant(node, known_values, res.shapes, res.elem_types,
                                              model.opset_import))
        if folds and not any(o in out_set for o in node.output):
            const.update(o for o in node.output if o)
            if max_value_elems > 0:
                fold_values(node, ins)
            folded.append(node)
        else:
            if not folds and all(i in const for i in ins) or any(i in unsized for i in ins):
                unsized.update(o for o in node.output if o)
            op_nodes.append(node)
    ran = [n for n in folded if n.op_type != "Constant"]  # Constant: an initializer at load
    if ran:
        kinds = Counter(n.op_type for n in ran)
        nbytes = sum(res.nbytes(o) or 0 for n in ran for o in n.output if o)
        notes.append(
            f"{where}: {len(ran)} node(s) whose inputs are constants or, for Shape, statically "
            f"shaped ({', '.join(f'{op} x{c}' for op, c in sorted(kinds.items()))}) are folded "
            f"into weights ({nbytes} bytes of outputs), as ONNX Runtime's constant folding does "
            "at its default graph optimisation level (basic and above); with optimisations off "
            "(ORT_DISABLE_ALL) ONNX Runtime runs them and allocates those outputs, which this "
            "plan does not hold")

    def tensor_spec(tname: str) -> tuple[list[int], str]:
        if tname in init_info:
            dims, dt = init_info[tname]
        else:
            if tname not in res.shapes or tname not in res.elem_types:
                raise unknown_shape_error(res, tname, where)
            dims, dt = list(res.shapes[tname]), res.elem_types[tname]
        try:
            np_dt = helper.tensor_dtype_to_np_dtype(dt)
        except Exception:
            raise OnnxImportError(
                f"{where}: tensor {tname!r} has unsupported element type {dt}"
            ) from None
        if np.dtype(np_dt).kind in "OUS":
            raise OnnxImportError(
                f"{where}: tensor {tname!r} has element type {np.dtype(np_dt)} without a fixed "
                "size in bytes"
            )
        return dims, np.dtype(np_dt).name

    graph = Graph(name if name is not None else stem)

    def add(tname: str, kind: str) -> None:
        if tname in graph.tensors:
            return
        dims, dt = tensor_spec(tname)
        val = values.get(tname) if kind == "weight" else None
        if val is not None and tuple(val.shape) != tuple(dims):
            val = None
        graph.add_tensor(tname, dims, dt, kind=kind, value=val)

    # Graph inputs (IR v3: initializers are listed as inputs -- those are weights).
    for vi in g.input:
        if vi.name not in init_names:
            add(vi.name, "input")
    # control flow: implicit (outer-scope) inputs are read at the step of their node
    pos = {id(n): k for k, n in enumerate(g.node)}
    flow = control_flow_nodes(flow_model, [pos[id(n)] for n in op_nodes], const, where, model)
    reads = {
        id(n): list(dict.fromkeys(
            [i for i in n.input if i]
            + list(flow[pos[id(n)]].implicit_inputs if pos[id(n)] in flow else ())
        ))
        for n in op_nodes
    }
    # Weights read by some operator, in first-use order.
    for node in op_nodes:
        for i in reads[id(node)]:
            if i in const:
                add(i, "weight")

    # Operators in file order. Every named output is written, read or not (an empty name is an
    # omitted optional output).
    seen_names: dict[str, int] = {}
    for k, node in enumerate(op_nodes):
        keep = [o for o in node.output if o]
        for o in keep:
            add(o, "output" if o in out_set else "activation")
        for i in reads[id(node)]:
            if i not in graph.tensors:
                _read_before_write(op_nodes, k, i, where)  # a cycle, or nodes out of order
                raise OnnxImportError(
                    f"{where}: node {node.name or node.op_type!r} reads tensor {i!r} that is "
                    "neither a graph input, an initializer nor an output of any node"
                )
        base = node.name or f"{node.op_type}_{k}"
        opname = base
        if opname in seen_names or opname in graph.ops:
            seen_names[base] = seen_names.get(base, 0) + 1
            opname = f"{base}#{seen_names[base]}"
        else:
            seen_names[base] = 0
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {
            a: (v.decode() if isinstance(v, bytes) else v)
            for a, v in attrs.items()
            if not isinstance(v, (onnx.TensorProto, onnx.GraphProto))
        }
        in_shapes = [graph.tensors[i].shape if i else None for i in node.input]
        out_shapes = [graph.tensors[o].shape if o in graph.tensors else None for o in node.output]
        macs = estimate_macs(node.op_type, attrs, in_shapes, out_shapes)
        cf = flow.get(pos[id(node)])
        if cf is not None:  # the subgraph workspace lives during this step (onnx_control_flow)
            attrs["implicit_inputs"] = cf.implicit_inputs
            attrs["subgraph_lower_bound"] = cf.lower_bound
            if cf.workspace > 0:
                ws = f"{opname}_subgraph_ws"
                while ws in graph.tensors:
                    ws += "_"
                graph.add_tensor(ws, (cf.workspace,), "uint8")
                keep = keep + [ws]
        graph.add_op(opname, node.op_type, reads[id(node)], keep, attrs, macs)

    for o in graph_outputs:
        if o not in graph.tensors:
            # an output computed only from constants, or passed straight through from an input
            kind = "weight" if o in const else "input"
            add(o, kind)
    graph.shape_source = {t: res.source.get(t, "declared") for t in graph.tensors}
    graph.notes = notes
    for n in notes:  # a size not the specification's: said once, also where no one reads notes
        if RUNTIME_NOTE in n:
            logging.getLogger("memplan.onnx").warning("memplan: note: %s", n)
    return graph


def _check_if_branch_shapes(inferred: onnx.ModelProto, shapes: Mapping[str, Sequence[int]],
                            where: str) -> None:
    """Raise :class:`OnnxImportError` for an ``If`` of the main graph (its condition a runtime
    value: the decided ones are inlined before) one of whose outputs has a static shape in one
    branch that differs from the other branch's or from the shape resolved for the output.

    ONNX allows the branches to return different shapes; ONNX Runtime then writes the shape of
    the branch that runs, so no single static size is right for the output and its consumers
    (ONNX Runtime's symbolic inference, one of the shape sources, takes one branch's: a plan
    from it can hold fewer bytes than ONNX Runtime writes when the other branch runs). A
    branch ruled out by the static shapes (``scheduling.onnx_control_flow``) is a copy of the
    other in ``inferred``, so it never differs.
    """
    for k, node in enumerate(inferred.graph.node):
        if node.op_type != "If" or node.domain not in ("", "ai.onnx"):
            continue
        subs = {a.name: a.g for a in node.attribute
                if a.name in ("then_branch", "else_branch") and a.type == onnx.AttributeProto.GRAPH}
        for j, out in enumerate(node.output):
            if not out:
                continue
            got = {b: _static_dims(sub.output[j]) for b, sub in sorted(subs.items())
                   if j < len(sub.output)}
            known = {b: tuple(d) for b, d in got.items() if d is not None}
            planned = tuple(shapes[out]) if out in shapes else None
            if len(set(known.values())) > 1 or (
                    planned is not None and any(d != planned for d in known.values())):
                label = node.name or f"If_{k}"
                said = ", ".join(f"{b} gives {list(d)}" for b, d in known.items())
                raise OnnxImportError(
                    f"{where}: output {j} {out!r} of node {label!r} (op If, node {k} in "
                    f"topological order) has a shape that depends on the branch taken at run "
                    f"time ({said}"
                    + (f"; resolved as {list(planned)}" if planned is not None else "")
                    + "): no static size holds it for both branches; make the branches return "
                    "one shape, or make the condition a constant so that the If is inlined")


def _read_before_write(nodes: Sequence[onnx.NodeProto], k: int, tensor: str, where: str) -> None:
    """Node ``k`` reads ``tensor`` before any node writes it. If a later node writes it, raise
    :class:`CycleError` naming the nodes on a cycle through them, or :class:`OnnxImportError` for
    an acyclic file whose nodes are not in topological order (the ONNX rule). Else return."""
    from .errors import CycleError
    from .graph import find_cycle_in

    def label(j: int) -> str:
        return nodes[j].name or f"{nodes[j].op_type}_{j}"

    writer = next((j for j in range(k + 1, len(nodes)) if tensor in nodes[j].output), None)
    if writer is None:
        return
    producer = {o: j for j, n in enumerate(nodes) for o in n.output if o}
    edges = [(label(producer[i]), label(j)) for j, n in enumerate(nodes) for i in n.input
             if i in producer]
    cycle = find_cycle_in(edges, label(k))
    if cycle:
        raise CycleError(
            f"{where}: the graph has a cycle ({' -> '.join(cycle)}): node {label(k)!r} reads "
            f"tensor {tensor!r} that node {label(writer)!r} writes later; a dataflow graph must be "
            "acyclic")
    raise OnnxImportError(
        f"{where}: node {label(k)!r} reads tensor {tensor!r} before node {label(writer)!r} writes "
        "it; ONNX requires the nodes in topological order")


def onnx_symbolic_problem(
    path: str | os.PathLike | onnx.ModelProto,
    dim_ranges: Mapping[str, tuple[int, int]],
    order: Sequence[str] | None = None,
    overrides: Overrides | None = None,
    name: str | None = None,
    unified: bool = False,
    include_inputs: bool = False,
    alignment: int = 1,
    shapes: str = "infer",
):
    """The activation problem of an ONNX model with its ``dim_param`` dims kept symbolic: a
    :class:`planners.symbolic.SymbolicProblem` whose sizes (bytes) are affine in the dims.

    Method (:func:`planners.symbolic.fit_affine_problem`): the model is imported with
    :func:`load_onnx` at several points of the box (each ``dim_param`` of ``dim_ranges`` given
    as an override, on top of ``overrides``), each time turned into a problem by
    :func:`scheduling.lifetimes.lifetime_problem` (half-open lifetimes ``[start, end)`` in steps
    of ``order``, default the file order); each tensor's size is fitted from the lower corner
    and each dim's upper bound and verified at ``lo + 1``, the middle, ``hi - 1`` and the
    all-upper and all-middle corners.

    Parameters
    ----------
    dim_ranges : mapping dim_param -> (lo, hi)
        Closed integer ranges, ``0 <= lo <= hi``.
    order, unified, include_inputs, alignment, name
        As :func:`scheduling.lifetimes.lifetime_problem` (alignment in bytes).
    overrides, shapes
        As :func:`load_onnx`, for the dims that stay fixed.

    Raises
    ------
    planners.errors.ProblemError
        One line naming a tensor whose size is not affine in the dims (attention's
        ``seq*seq``), or a buffer whose lifetime changes with the dims; a bad range.
    OnnxImportError
        As :func:`load_onnx` (e.g. a ``dim_ranges`` name that is no ``dim_param`` of the model).
    """
    from planners.symbolic import fit_affine_problem

    from .lifetimes import lifetime_problem

    base = dict(overrides or {})
    label = name if name is not None else (
        Path(path).name.removesuffix(".onnx") if isinstance(path, (str, os.PathLike)) else "")

    def problem_at(point):
        g = load_onnx(path, overrides={**base, **point}, name=name, shapes=shapes)
        return lifetime_problem(g, order, unified=unified, include_inputs=include_inputs,
                                alignment=alignment, name=label)

    return fit_affine_problem(problem_at, dim_ranges, name=label, what="tensor")
