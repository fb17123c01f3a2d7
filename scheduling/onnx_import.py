"""ONNX importer: an ``.onnx`` file to a :class:`scheduling.graph.Graph`.

Steps of :func:`load_onnx`:

1. read the protobuf (a clear :class:`OnnxImportError` for a missing, empty or malformed file);
2. apply the caller's ``overrides`` of symbolic input dimensions (a whole input shape by input
   name, or a value per ``dim_param`` name);
3. run ``onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)`` (data
   propagation gives static shapes to ``ConstantOfShape(Shape(x))`` and similar shape
   computations);
4. **constant folding of kinds**: initializers, and every output of a node whose inputs are all
   constants (``Constant``, ``ConstantOfShape`` of an initializer shape, ``Unsqueeze`` of a weight
   ...) are weights, and so is the output of a ``Shape`` node whose input has a static shape
   (only the shape is read). Those nodes are not operators of the graph: a runtime folds them
   once. The light models shipped in the onnx wheel keep each weight as ``ConstantOfShape(shape
   initializer)``; the shape initializers themselves are dropped (no remaining operator reads
   them). **Values**: a constant of at most ``max_value_elems`` elements keeps its elements on
   :attr:`Tensor.value <scheduling.graph.Tensor.value>` -- initializers (stored inline, not as
   external data) and the outputs of folded nodes of
   :data:`scheduling.constfold.FOLDABLE_OPS` (``Constant``, ``ConstantOfShape``, ``Shape``,
   ``Reshape``, ``Identity``, ``Unsqueeze``, ``Cast``, ...) whose input values are known,
   evaluated with numpy by :func:`scheduling.constfold.evaluate_constant_op`. Larger or
   non-foldable constants stay weights without a value;
5. IR v3 files list initializers among the graph inputs: those are weights, not inputs;
6. operators in file order; an output that no operator reads and that is not a graph output
   (e.g. the mask of an inference ``Dropout``, which has no inferred shape) is dropped when its
   node has another output that is used; a node whose outputs are all unused keeps them (a dead
   operator; its outputs live one step);
7. every kept tensor must have a static shape; otherwise :class:`OnnxImportError` names the tensor
   and its unknown (symbolic) dimensions;
8. empty (omitted optional) input names are left out of :attr:`Operator.inputs`;
9. MACs estimates for ``Conv``, ``ConvTranspose``, ``Gemm`` and ``MatMul`` (:func:`estimate_macs`).

Element sizes come from ``onnx.helper.tensor_dtype_to_np_dtype``; bytes are
``prod(shape) * itemsize``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper, shape_inference

from .constfold import evaluate_constant_op
from .errors import OnnxImportError
from .graph import Graph

__all__ = ["load_onnx", "estimate_macs"]

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
    return model, p.stem


def _apply_overrides(model: onnx.ModelProto, overrides: Overrides, where: str) -> None:
    """Set input dims in place: ``{input_name: [dims]}`` or ``{dim_param: value}``."""
    inputs = {i.name: i for i in model.graph.input}
    used: set[str] = set()
    for vi in model.graph.input:
        dims = vi.type.tensor_type.shape.dim
        if vi.name in overrides:
            new = overrides[vi.name]
            if isinstance(new, (int, np.integer)):
                raise OnnxImportError(
                    f"{where}: override for input {vi.name!r} must be a list of dims, got {new!r}"
                )
            new = [int(d) for d in new]
            if len(dims) and len(new) != len(dims):
                raise OnnxImportError(
                    f"{where}: override for input {vi.name!r} has rank {len(new)}, the input has "
                    f"rank {len(dims)}"
                )
            vi.type.tensor_type.shape.Clear()
            for d in new:
                vi.type.tensor_type.shape.dim.add().dim_value = d
            used.add(vi.name)
            continue
        for d in dims:
            if d.HasField("dim_param") and d.dim_param in overrides:
                val = overrides[d.dim_param]
                if not isinstance(val, (int, np.integer)) or isinstance(val, bool) or val < 0:
                    raise OnnxImportError(
                        f"{where}: override for dim {d.dim_param!r} must be an int >= 0, got {val!r}"
                    )
                used.add(d.dim_param)
                d.dim_value = int(val)
    unknown = [k for k in overrides if k not in used]
    if unknown:
        params = sorted(
            {
                d.dim_param
                for vi in model.graph.input
                for d in vi.type.tensor_type.shape.dim
                if d.HasField("dim_param")
            }
        )
        raise OnnxImportError(
            f"{where}: override key(s) {unknown} match no graph input ({sorted(inputs)[:10]}) "
            f"and no symbolic dimension ({params})"
        )


def _static_shape(vi: onnx.ValueInfoProto | None) -> tuple[list[int] | None, str]:
    """(shape or None, description of the unknown part)."""
    if vi is None or not vi.type.HasField("tensor_type"):
        return None, "no type or shape was inferred"
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None, "no shape was inferred (unknown rank)"
    dims, bad = [], []
    for k, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            bad.append(f"dim {k} = {d.dim_param!r}" if d.dim_param else f"dim {k} unknown")
    if bad:
        return None, "symbolic or unknown " + ", ".join(bad)
    return dims, ""


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
) -> Graph:
    """Import an ONNX model as a :class:`Graph` (steps in the module docstring).

    Parameters
    ----------
    path : path-like or onnx.ModelProto
        The ``.onnx`` file (or an in-memory model, which is not modified).
    overrides : mapping, optional
        Static values for symbolic input dimensions: ``{"input_name": [1, 3, 224, 224]}`` replaces
        a whole input shape; ``{"batch": 1}`` sets every dimension whose ``dim_param`` is
        ``"batch"``.
    name : str, optional
        Graph name (default: the file name without ``.onnx``).
    max_value_elems : int
        Constants (weights) of at most this many elements keep their values as numpy arrays on
        :attr:`Tensor.value <scheduling.graph.Tensor.value>` (step 4); ``0`` keeps none.

    Returns
    -------
    Graph
        Operators in file order (constant subgraphs removed), tensors of kind weight / input /
        output / activation with static shapes, dtype names and bytes. Not yet validated for
        acyclicity beyond what ONNX guarantees; call :meth:`Graph.validate` to check.

    Raises
    ------
    OnnxImportError
        Missing, empty or malformed file; strict shape inference failure; an override that matches
        nothing; a tensor whose size stays unknown (named, with its symbolic dimensions); an
        element type without a fixed size (strings).

    Notes
    -----
    Runs in ``O(#nodes + #tensors)`` after shape inference. The nine light models of the onnx
    wheel load in well under a second each.
    """
    model, stem = _read_model(path)
    where = str(path) if not isinstance(path, onnx.ModelProto) else f"model {stem!r}"
    if overrides:
        m2 = onnx.ModelProto()
        m2.CopyFrom(model)
        model = m2
        _apply_overrides(model, overrides, where)
    try:
        model = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as e:  # onnx raises InferenceError / ValidationError / RuntimeError
        raise OnnxImportError(f"{where}: strict ONNX shape inference failed: {e}") from None
    g = model.graph

    vinfo: dict[str, onnx.ValueInfoProto] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        vinfo[vi.name] = vi
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
        return _static_shape(vinfo.get(tname))[0]

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
    op_nodes = []
    for node in g.node:
        ins = [i for i in node.input if i]
        folds = all(i in const for i in ins) or (
            node.op_type == "Shape" and len(ins) == 1 and known_shape(ins[0]) is not None
        )
        if folds and not any(o in out_set for o in node.output):
            const.update(o for o in node.output if o)
            if max_value_elems > 0:
                fold_values(node, ins)
        else:
            op_nodes.append(node)

    used: set[str] = set()
    for node in op_nodes:
        used.update(i for i in node.input if i)

    def tensor_spec(tname: str) -> tuple[list[int], str]:
        if tname in init_info and tname not in vinfo:
            dims, dt = init_info[tname]
        else:
            dims, why = _static_shape(vinfo.get(tname))
            if dims is None:
                raise OnnxImportError(
                    f"{where}: tensor {tname!r} has an unknown size ({why}); give its graph "
                    "input a static shape with overrides={input_name: [dims]} or "
                    "{dim_param: value} (command line: --override DIM_PARAM=VALUE or "
                    "--override INPUT=D1,D2,...)"
                )
            dt = vinfo[tname].type.tensor_type.elem_type
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
    # Weights read by some operator, in first-use order.
    for node in op_nodes:
        for i in node.input:
            if i and i in const:
                add(i, "weight")

    # Operators in file order.
    seen_names: dict[str, int] = {}
    for k, node in enumerate(op_nodes):
        outs = [o for o in node.output if o]
        keep = [o for o in outs if o in used or o in out_set]
        if not keep:
            keep = outs  # a dead operator keeps its outputs (they live one step)
        for o in keep:
            add(o, "output" if o in out_set else "activation")
        for i in node.input:
            if i and i not in graph.tensors:
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
        graph.add_op(opname, node.op_type, [i for i in node.input if i], keep, attrs, macs)

    for o in graph_outputs:
        if o not in graph.tensors:
            # an output computed only from constants, or passed straight through from an input
            kind = "weight" if o in const else "input"
            add(o, kind)
    return graph
