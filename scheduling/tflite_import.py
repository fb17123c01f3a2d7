"""Import a TensorFlow Lite flatbuffer (``.tflite``) as a dataflow :class:`Graph`.

The flatbuffer is read with the ``tflite`` PyPI package (the generated Python bindings of the
TFLite schema; optional dependency, ``pip install 'memplan[tflite]'``). The **main subgraph**
(index 0, the one ``Interpreter.invoke`` runs) becomes the graph; every subgraph it calls is read
too (recursively) and enters the graph as a workspace of the calling operator.

Subgraphs (control flow)
------------------------
``CALL_ONCE`` (its initialisation subgraph), ``IF`` (then/else), ``WHILE`` (cond/body) and ``CALL``
run other subgraphs inside their own step. A called subgraph's activations are live only during
the step of the operator that runs it, so that operator gets one extra output, the 0-reader
tensor ``"<op>:subgraphs"`` (live at its step only), of the callee's **need**: the arena of the
callee's own activation problem (its inputs, which the kernel copies in, included; file order;
16-byte alignment; ``greedy_by_size``, recursively with the callee's own calls). ``IF`` needs the
``max`` over its branches (one runs); ``WHILE`` the **sum** of cond and body (the kernel copies the
body's outputs into the cond's inputs, so both are live at once); ``CALL_ONCE`` and ``CALL`` their
callee. A workspace of 0 bytes is not added, and ``CALL_ONCE`` without one is dropped as before.
:attr:`TfliteModel.workspaces` lists the workspaces. This models the callee as one block planned
on its own: the **planning view**, valid for a runtime that runs each callee inside its block.
TFLite Micro instead plans the tensors of all subgraphs in one arena
(``MicroAllocator::CommitStaticMemoryPlan``, micro_allocator.cc), a callee's tensors live from its
first call to its last (``AllocationInfoBuilder::MarkAllocationLifetimes``,
micro_allocation_info.cc), and every buffer rounded up to 16 bytes. The numbers that name TFLite
Micro (``tflm_head``, ``runtime_arena``) therefore never come from this graph but from TFLM's own
lifetimes and planner (:func:`experiments.runtimes.tflm.oracle.tflm_head_problem`,
:mod:`planners.tflm_greedy`). Subgraph recursion, a
subgraph index out of range, and StableHLO operators with body subgraphs (``STABLEHLO_WHILE``,
``STABLEHLO_COMPOSITE``, ...) raise :class:`TfliteImportError`.

Tensor kinds (what the activation arena holds and what it does not)
------------------------------------------------------------------
* ``weight`` (persistent, kept **out** of the activation arena): tensors whose flatbuffer buffer
  holds data (constants), ``is_variable`` tensors (old-style variables: state, which TFLite Micro
  allocates in its persistent tail; an operator that writes one writes no arena bytes, and every
  operator touching a variable reads the previous toucher's 0-byte ``"<op>:state:<variable>"``
  token and writes its own, so a reordering scheduler keeps them in file order), and the
  ``VAR_HANDLE`` resource handles of resource variables. Every operator is scheduled, also one whose inputs are all persistent (TFLite
  Micro runs it at every ``Invoke`` and plans its output), except operators that read nothing
  and write no arena bytes (``VAR_HANDLE``, an empty ``CALL_ONCE``), which are dropped. With
  ``fold_constants=True`` (a planning view asked for explicitly, for a runtime that evaluates
  them once at ``Prepare``, as TFLite does for ``DEQUANTIZE`` of float16/int8 constants and
  ``DENSIFY`` of sparse constants) the outputs of operators whose inputs are all persistent are
  folded into persistent tensors too. Persistent bytes are reported in
  :attr:`TfliteModel.persistent_bytes`.
* ``input``: the subgraph inputs. Unlike the ONNX convention, TFLite Micro places the graph input
  in the arena, so :func:`tflite_problem` counts inputs as activations by default.
* ``output``: the subgraph outputs.
* ``activation``: every other operator output.

Operators with no output tensor (``ASSIGN_VARIABLE``, writing a resource variable) get one 0-byte
``"<op>:effect"`` output so the lifetimes of the tensors they read still reach them; 0-byte tensors
take no arena space. ``CALL_ONCE`` (no inputs, no outputs) is dropped.

Sizes are ``prod(shape) * element bytes`` (``INT4``: half a byte, rounded up; ``RESOURCE``,
``STRING`` and ``VARIANT`` tensors: 0 bytes in the arena). A dimension ``< 0`` in ``shape`` (a
dynamic dimension) must be set by ``overrides`` (``{"tensor name": [1, 49, 40]}``) or the import
raises :class:`TfliteImportError` naming the tensor.

Source: TensorFlow Lite schema (``tensorflow/lite/schema/schema.fbs``), TFLite Micro's
``MicroAllocator`` (persistent "tail" vs planned non-persistent "head" of the arena).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planners.model import Problem

from .errors import GraphError
from .graph import Graph

__all__ = ["TfliteImportError", "TfliteModel", "load_tflite", "tflite_problem", "tflite_available",
           "tensor_names", "operator_type", "tensor_has_data", "open_model"]

# TensorType enum value -> (numpy dtype name used for the Tensor, bytes per element or None)
_TYPES: dict[str, tuple[str, float]] = {
    "FLOAT32": ("float32", 4), "FLOAT16": ("float16", 2), "INT32": ("int32", 4),
    "UINT8": ("uint8", 1), "INT64": ("int64", 8), "STRING": ("uint8", 0), "BOOL": ("bool", 1),
    "INT16": ("int16", 2), "COMPLEX64": ("complex64", 8), "INT8": ("int8", 1),
    "FLOAT64": ("float64", 8), "COMPLEX128": ("complex128", 16), "UINT64": ("uint64", 8),
    "RESOURCE": ("uint8", 0), "VARIANT": ("uint8", 0), "UINT32": ("uint32", 4),
    "UINT16": ("uint16", 2), "INT4": ("uint8", 0.5), "BFLOAT16": ("uint16", 2),
}


#: Operators whose result changes between invocations although their inputs are persistent.
_STATEFUL = frozenset({"READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE", "RANDOM_UNIFORM",
                       "RANDOM_STANDARD_NORMAL", "MULTINOMIAL", "IF", "WHILE", "CALL"})


class TfliteImportError(GraphError):
    """A ``.tflite`` file cannot be imported: missing or malformed flatbuffer, the ``tflite``
    package missing, an unknown tensor type, or a dynamic dimension without an override."""


def tflite_available() -> tuple[bool, str]:
    """``(True, "")`` when the ``tflite`` package imports, else ``(False, reason)``."""
    try:
        import tflite  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return False, f"the 'tflite' package is missing ({e}); pip install 'memplan[tflite]'"
    return True, ""


@dataclass
class TfliteModel:
    """An imported TFLite model.

    Attributes
    ----------
    graph : Graph
        The main subgraph in file (execution) order, dropped (and, with ``fold_constants``,
        folded) operators removed.
    path : str
    subgraphs : int
        Number of subgraphs in the file (subgraph 0 is ``graph``; called ones are workspaces).
    persistent_bytes : int
        Bytes of persistent tensors kept out of the activation arena (constants, variables,
        dequantised / densified constants, resource handles).
    folded_ops : dict
        ``{op type: count}`` of operators not scheduled: dropped (they read nothing and write no
        arena bytes) or, with ``fold_constants``, folded into persistent tensors.
    resource_variable_bytes : int
        Bytes of resource-variable storage (size of the ``READ_VARIABLE`` results per handle).
    workspaces : dict
        ``{operator name: (bytes, (called subgraph indices))}`` for every operator that runs
        other subgraphs with a non-zero need (see the module docstring).
    """

    graph: Graph
    path: str
    subgraphs: int
    persistent_bytes: int
    folded_ops: dict = field(default_factory=dict)
    resource_variable_bytes: int = 0
    workspaces: dict = field(default_factory=dict)


def _enum_names(enum_cls) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_") and isinstance(v, int)}


def tensor_names(sg) -> list[str]:
    """The buffer id of every tensor of a TFLite subgraph (flatbuffer ``SubGraph``), by index:
    its UTF-8 name (undecodable bytes replaced), ``tensor{j}`` when unnamed, and ``name#j`` for a
    repeated name, so ids are unique."""
    names: list[str] = []
    seen: set[str] = set()
    for j in range(sg.TensorsLength()):
        raw = sg.Tensors(j).Name()
        nm = raw.decode("utf-8", "replace") if raw else f"tensor{j}"
        if nm in seen:
            nm = f"{nm}#{j}"
        seen.add(nm)
        names.append(nm)
    return names


def operator_type(model, op, op_names: Mapping[int, str]) -> str:
    """The type name of flatbuffer operator ``op`` of ``model``: its builtin operator's name
    (the larger of ``builtin_code`` and ``deprecated_builtin_code``, as TFLite's own readers
    take it), ``BUILTIN_<code>`` for a code this schema version does not name, and
    ``CUSTOM:<custom_code>`` for a custom operator. ``op_names``: code -> name of the
    ``tflite.BuiltinOperator`` enum. The operator names of the imported graph are
    ``"<index>:<type>"``."""
    oc = model.OperatorCodes(op.OpcodeIndex())
    code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
    otype = op_names.get(code, f"BUILTIN_{code}")
    if otype == "CUSTOM" and oc.CustomCode():
        otype = "CUSTOM:" + oc.CustomCode().decode("utf-8", "replace")
    return otype


def tensor_has_data(model, tensor) -> bool:
    """Whether a flatbuffer ``tensor`` of ``model`` holds constant data: its buffer index names a
    buffer other than the empty buffer 0 with data inline or stored after the flatbuffer
    (``offset > 1``)."""
    b = tensor.Buffer()
    if b <= 0 or b >= model.BuffersLength():
        return False
    buf = model.Buffers(b)
    return buf.DataLength() > 0 or buf.Offset() > 1


def open_model(path: str | os.PathLike):
    """``(Path, tflite.Model)`` of a ``.tflite`` file, its root table read (nothing imported).

    Raises
    ------
    TfliteImportError
        ``tflite`` not installed, no such file, an empty or truncated file, a file identifier
        other than ``TFL3``, or a root table that cannot be read.
    """
    ok, reason = tflite_available()
    if not ok:
        raise TfliteImportError(reason)
    import tflite

    path = Path(path)
    if not path.is_file():
        raise TfliteImportError(f"{path}: no such file")
    data = path.read_bytes()
    if len(data) < 8:
        raise TfliteImportError(f"{path}: empty or truncated file ({len(data)} bytes)")
    if data[4:8] != b"TFL3":
        raise TfliteImportError(f"{path}: not a TFLite flatbuffer (file identifier {data[4:8]!r}, "
                                "expected b'TFL3')")
    try:
        return path, tflite.Model.GetRootAsModel(data, 0)
    except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
        raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: {e})") from None


def load_tflite(
    path: str | os.PathLike,
    overrides: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
    fold_constants: bool = False,
) -> TfliteModel:
    """Import the main subgraph of a ``.tflite`` file (rules in the module docstring).

    Parameters
    ----------
    path : path-like
    overrides : mapping tensor name -> shape, optional
        Static shapes for tensors with dynamic (``< 0``) dimensions.
    name : str, optional
        Graph name (default: the file name without ``.tflite``).
    fold_constants : bool, default False
        Fold operators whose inputs are all constant into persistent tensors (a planning view for
        a runtime that evaluates them once; TFLite Micro does not, it runs them at every
        ``Invoke`` and plans their outputs). Off by default: every operator the file holds is
        scheduled, except those that read nothing and write no arena bytes (``VAR_HANDLE``,
        ``CALL_ONCE`` of an empty initialiser).

    Returns
    -------
    TfliteModel

    Raises
    ------
    TfliteImportError
        Missing/empty/malformed file, ``tflite`` not installed, unknown tensor type, a dynamic
        dimension without an override, or an override naming no tensor.

    Notes
    -----
    ``O(#operators + #tensors + #operator inputs)``.
    """
    import tflite

    path, model = open_model(path)
    try:
        n_sub = model.SubgraphsLength()
        if n_sub < 1:
            raise TfliteImportError(f"{path}: the model has no subgraph")
        op_names = _enum_names(tflite.BuiltinOperator)
        type_names = _enum_names(tflite.TensorType)
        return _build(path, model, 0, n_sub, op_names, type_names, dict(overrides or {}), name,
                      fold=bool(fold_constants))
    except TfliteImportError:
        raise
    except GraphError as e:
        raise TfliteImportError(f"{path}: {e}") from None
    except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
        raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: {e})") from None


def _build(path, model, index, n_sub, op_names, type_names, overrides, name,
           stack=(), memo=None, fold=False) -> TfliteModel:
    memo = {} if memo is None else memo  # subgraph index -> need, so each callee is planned once
    sg = model.Subgraphs(index)
    stack = (*stack, index)
    nt = sg.TensorsLength()
    tnames = tensor_names(sg)
    unknown = set(overrides) - set(tnames) if index == 0 else set()
    if unknown:
        raise TfliteImportError(f"{path}: overrides name no tensor: {sorted(unknown)}")

    def tensor_info(j: int) -> tuple[list[int], str, int]:
        t = sg.Tensors(j)
        tname = tnames[j]
        tcode = type_names.get(t.Type())
        if tcode not in _TYPES:
            raise TfliteImportError(f"{path}: tensor {tname!r} has unknown TensorType {t.Type()}")
        dtype, item = _TYPES[tcode]
        shape = [int(d) for d in overrides[tname]] if tname in overrides else (
            t.ShapeAsNumpy().tolist() if t.ShapeLength() else [])
        if any(d < 0 for d in shape):
            raise TfliteImportError(
                f"{path}: tensor {tname!r} has dynamic shape {shape}; give its static shape in "
                f"overrides, e.g. {{{tname!r}: [1, ...]}}")
        nbytes = int(math.ceil(math.prod(shape) * item)) if item else 0
        return shape, dtype, nbytes

    def has_data(j: int) -> bool:
        return tensor_has_data(model, sg.Tensors(j))

    workspaces: dict[str, tuple[int, tuple[int, ...]]] = {}
    inputs = [int(i) for i in (sg.InputsAsNumpy().tolist() if sg.InputsLength() else [])]
    outputs = [int(i) for i in (sg.OutputsAsNumpy().tolist() if sg.OutputsLength() else [])]
    variables = {j for j in range(nt) if sg.Tensors(j).IsVariable()}
    constant = {j for j in range(nt) if has_data(j)} - variables
    persistent = constant | variables
    ops = []
    for oi in range(sg.OperatorsLength()):
        op = sg.Operators(oi)
        otype = operator_type(model, op, op_names)
        ins = [int(i) for i in (op.InputsAsNumpy().tolist() if op.InputsLength() else []) if i >= 0]
        outs = [int(i) for i in (op.OutputsAsNumpy().tolist() if op.OutputsLength() else []) if i >= 0]
        ops.append((oi, otype, ins, outs))
        callees = _called_subgraphs(path, model, op, otype, n_sub, stack)
        if callees is not None:
            need = _callee_need(path, model, otype, callees, n_sub, op_names, type_names, stack,
                                memo, fold)
            workspaces[f"{oi}:{otype}"] = (need, callees)
    info = [tensor_info(j) for j in range(nt)]
    # Dropped: operators that read nothing and write no arena bytes (VAR_HANDLE, an empty
    # CALL_ONCE): no lifetime depends on them. With ``fold``, also constant folding: outputs of
    # operators whose inputs are all persistent (file order is a valid topological order of a
    # TFLite subgraph).
    folded: dict[str, int] = {}
    kept = []
    for oi, otype, ins, outs in ops:
        if otype == "CALL_ONCE" and not outs and not workspaces.get(f"{oi}:{otype}", (0,))[0]:
            workspaces.pop(f"{oi}:{otype}", None)
            folded[otype] = folded.get(otype, 0) + 1
            continue
        silent = not ins and all(info[o][2] == 0 for o in outs)
        if (outs and otype not in _STATEFUL and all(i in constant for i in ins)
                and not any(o in outputs or o in variables for o in outs) and (fold or silent)):
            constant.update(outs)  # a variable's value changes between invocations: never folded
            persistent.update(outs)
            folded[otype] = folded.get(otype, 0) + 1
            continue
        kept.append((oi, otype, ins, outs))

    workspaces = {k: v for k, v in workspaces.items() if v[0] > 0}
    g = Graph(name if name is not None else (path.stem if index == 0 else f"{path.stem}#{index}"))
    produced = {o for _, _, _, outs in kept for o in outs}
    used = {i for _, _, ins, _ in kept for i in ins} | produced | set(inputs) | set(outputs)
    persistent_bytes = 0
    for j in range(nt):
        shape, dtype, nbytes = info[j]
        if j in persistent:
            persistent_bytes += nbytes
            if j in used:
                g.add_tensor(tnames[j], shape, dtype, kind="weight", nbytes=nbytes)
        elif j in inputs:
            g.add_tensor(tnames[j], shape, dtype, kind="input", nbytes=nbytes)
        elif j in produced:
            g.add_tensor(tnames[j], shape, dtype, kind="activation", nbytes=nbytes)
        elif j in used:  # read but never written and not persistent: a state kept by the runtime
            persistent_bytes += nbytes
            g.add_tensor(tnames[j], shape, dtype, kind="weight", nbytes=nbytes)
    var_bytes: dict[int, int] = {}
    token: dict[int, str] = {}  # variable tensor -> the state token of its last toucher
    for oi, otype, ins, outs in kept:
        op_name = f"{oi}:{otype}"
        # A variable tensor is state in the persistent tail: an operator writing it writes no
        # arena bytes. Every operator touching a variable reads the state token of the previous
        # one and writes a new 0-byte token, so any schedule keeps their file order.
        touched = list(dict.fromkeys(v for v in (*ins, *outs) if v in variables))
        in_names = [tnames[i] for i in ins] + [token[v] for v in touched if v in token]
        out_names = [tnames[o] for o in outs if o not in variables]
        for v in touched:
            token[v] = f"{op_name}:state:{tnames[v]}"
            g.add_tensor(token[v], (0,), "uint8", kind="activation", nbytes=0)
            out_names.append(token[v])
        if op_name in workspaces:  # the called subgraphs' activations, live at this step only
            ws = f"{op_name}:subgraphs"
            g.add_tensor(ws, (workspaces[op_name][0],), "uint8", kind="activation",
                         nbytes=workspaces[op_name][0])
            out_names.append(ws)
        if not out_names:
            eff = f"{op_name}:effect"
            g.add_tensor(eff, (0,), "uint8", kind="activation", nbytes=0)
            out_names = [eff]
        if otype == "READ_VARIABLE" and ins and outs:
            var_bytes[ins[0]] = max(var_bytes.get(ins[0], 0), info[outs[0]][2])
        macs = (sum(info[o][2] for o in outs if o not in variables)
                + sum(info[i][2] for i in ins if i not in persistent))
        g.add_op(op_name, otype, in_names, out_names, macs=int(macs))
    for o in outputs:
        if o in produced and o not in variables:  # a variable output stays state in the tail
            g.mark_output(tnames[o])
    g.validate()
    return TfliteModel(
        graph=g,
        path=str(path),
        subgraphs=n_sub,
        persistent_bytes=int(persistent_bytes),
        folded_ops=folded,
        resource_variable_bytes=int(sum(var_bytes.values())),
        workspaces=workspaces,
    )


#: Operators that run other subgraphs, with the BuiltinOptions table naming them.
_CONTROL_FLOW = {"IF": "IfOptions", "WHILE": "WhileOptions", "CALL_ONCE": "CallOnceOptions",
                 "CALL": "CallOptions"}


def _called_subgraphs(path, model, op, otype, n_sub, stack) -> tuple[int, ...] | None:
    """The subgraph indices ``op`` runs (``None`` for an operator that runs none)."""
    import tflite

    if otype.startswith("STABLEHLO_") and otype in ("STABLEHLO_WHILE", "STABLEHLO_COMPOSITE",
                                                    "STABLEHLO_REDUCE", "STABLEHLO_REDUCE_WINDOW",
                                                    "STABLEHLO_SCATTER", "STABLEHLO_SORT",
                                                    "STABLEHLO_CASE", "STABLEHLO_CUSTOM_CALL"):
        raise TfliteImportError(f"{path}: operator {otype} runs body subgraphs; StableHLO control "
                                "flow is not modelled")
    if otype not in _CONTROL_FLOW:
        return None
    table = op.BuiltinOptions()
    if table is None:
        raise TfliteImportError(f"{path}: operator {otype} has no {_CONTROL_FLOW[otype]} naming "
                                "the subgraphs it runs")
    opts = getattr(tflite, _CONTROL_FLOW[otype])()
    opts.Init(table.Bytes, table.Pos)
    idx = {"IF": lambda: (opts.ThenSubgraphIndex(), opts.ElseSubgraphIndex()),
           "WHILE": lambda: (opts.CondSubgraphIndex(), opts.BodySubgraphIndex()),
           "CALL_ONCE": lambda: (opts.InitSubgraphIndex(),),
           "CALL": lambda: (opts.Subgraph(),)}[otype]()
    for i in idx:
        if not 0 <= i < n_sub:
            raise TfliteImportError(f"{path}: operator {otype} runs subgraph {i}, but the model "
                                    f"has {n_sub} subgraphs")
        if i in stack:
            raise TfliteImportError(f"{path}: operator {otype} runs subgraph {i} recursively "
                                    f"(call chain {' -> '.join(map(str, (*stack, i)))}); a "
                                    "recursive subgraph has no static memory plan")
    return tuple(int(i) for i in idx)


def _callee_need(path, model, otype, callees, n_sub, op_names, type_names, stack, memo,
                 fold=False) -> int:
    """Bytes the called subgraphs need at the calling step: each callee's greedy-by-size arena
    (inputs included, 16-byte alignment, file order); ``max`` over IF branches, the sum for
    WHILE's cond and body."""
    from planners import plan

    from .lifetimes import lifetime_problem

    needs = []
    for i in callees:
        if i not in memo:
            m = _build(path, model, i, n_sub, op_names, type_names, {}, None, stack, memo, fold)
            p = lifetime_problem(m.graph, None, include_inputs=True, alignment=16)
            memo[i] = plan(p, "greedy_by_size").arena_size if p.n else 0
        needs.append(memo[i])
    return int(max(needs) if otype == "IF" else sum(needs))


def tflite_problem(
    path: str | os.PathLike,
    schedule: str = "file_order",
    include_inputs: bool = True,
    alignment: int = 16,
    overrides: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
    fold_constants: bool = False,
) -> Problem:
    """The activation :class:`planners.Problem` of a ``.tflite`` model under a schedule.

    Half-open lifetimes ``[start, end)`` in schedule steps of the main subgraph, sizes in bytes,
    persistent tensors excluded. ``include_inputs=True`` and ``alignment=16`` match TFLite Micro's
    arena (the graph input is planned in the arena; ``MicroArenaBufferAlignment()`` is 16 bytes).
    ``fold_constants``: see :func:`load_tflite` (off: every operator TFLite Micro runs is
    scheduled). Raises :class:`TfliteImportError` (see :func:`load_tflite`) or ``ValueError``
    for an unknown scheduler name.

    This is the planning view of the main subgraph (called subgraphs as workspaces of their
    calling step). The numbers that name TFLite Micro (``tflm_head``, ``runtime_arena``) do not
    come from it but from TFLM's own lifetimes and planner
    (:func:`experiments.runtimes.tflm.oracle.tflm_head_problem`).
    """
    from .lifetimes import lifetime_problem
    from .schedulers import get_scheduler

    m = load_tflite(path, overrides=overrides, name=name, fold_constants=fold_constants)
    order = get_scheduler(schedule).schedule(m.graph).order
    return lifetime_problem(m.graph, order, include_inputs=include_inputs, alignment=alignment,
                            name=m.graph.name)
