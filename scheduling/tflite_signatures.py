"""The signatures of a multi-signature ``.tflite`` model as one shared arena.

A TFLite model may carry several **signatures** (``Model.signature_defs``: a key, the subgraph it
runs, named inputs and outputs), the methods of one program: ``prefill`` and ``decode`` of a
language model, ``train`` and ``infer``, ``init`` and ``step``. State that outlives one call is a
**resource variable**: ``VAR_HANDLE`` names it by ``(container, shared_name)``,
``ASSIGN_VARIABLE`` writes it, ``READ_VARIABLE`` reads it; two signatures whose ``VAR_HANDLE`` give
the same names see one variable (the interpreter's resource map: a value assigned by one signature
is read by the next; ``tests/test_tflite_signatures.py`` checks this in LiteRT itself).

:func:`tflite_shared_problem` states the model as a :class:`planners.shared_arena.SharedArenaProblem`
(one arena for every signature, as ExecuTorch shares one arena across the methods of a program):

* one :class:`planners.Problem` per signature, named by its key: the activations of its subgraph
  under file order (TFLite runs a subgraph in file order), imported exactly as
  :func:`scheduling.tflite_import.tflite_problem` imports the main subgraph (called subgraphs as
  workspaces, persistent tensors out of the arena, graph inputs in it, 16-byte alignment);
  half-open lifetimes ``[start, end)`` in the signature's own schedule steps, sizes in bytes;
* one **shared buffer** ``var:<name>`` per resource variable of the model (``<name>`` the
  ``shared_name``, prefixed ``<container>/`` when the container is not empty), of the largest size
  any ``READ_VARIABLE`` result or ``ASSIGN_VARIABLE`` value of it has (bytes); in **every**
  signature's problem it is live over the whole schedule ``[0, H)``, ``H`` that problem's horizon:
  its value must survive the signature's own steps and the calls of the other signatures, so no
  buffer of any signature may reuse its bytes, and it keeps one offset in all of them.

This is a planning view: full TFLite gives each subgraph its own arena and keeps resource
variables in dynamically allocated memory, TFLite Micro keeps them in the persistent tail
(``MicroResourceVariables``). The shared arena is the one-arena layout of a runtime that plans the
methods together. Which variable a handle names is followed through ``CALL_ONCE``, ``IF``,
``WHILE`` and ``CALL`` (a handle passed as an operand reaches the callee's input at the same
position); a ``READ_VARIABLE``/``ASSIGN_VARIABLE`` whose handle comes from anywhere else (a
subgraph input of a signature) cannot be told and raises :class:`TfliteImportError`.

Source: TensorFlow Lite schema (``SignatureDef``, ``VarHandleOptions``,
``tensorflow/lite/schema/schema.fbs``), TFLite's resource variables
(``tensorflow/lite/kernels/var_handle.cc``, ``read_variable.cc``, ``assign_variable.cc``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from planners.model import Buffer, Problem

from .tflite_import import (
    _TYPES,
    TfliteImportError,
    _build,
    _called_subgraphs,
    _enum_names,
    open_model,
    operator_type,
    tensor_names,
)

__all__ = ["TfliteSignature", "tflite_signatures", "tflite_shared_problem", "variable_sizes"]


@dataclass(frozen=True)
class TfliteSignature:
    """One signature (method) of a ``.tflite`` model.

    Attributes
    ----------
    key : str
        The signature key (``SignatureDef.signature_key``).
    subgraph : int
        Index of the subgraph it runs.
    inputs, outputs : dict
        Signature name -> tensor name in that subgraph (the ``TensorMap`` entries, in file order).
    """

    key: str
    subgraph: int
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)


def _signatures(path, model) -> list[TfliteSignature]:
    n_sub = model.SubgraphsLength()
    sigs = []
    for i in range(model.SignatureDefsLength()):
        sd = model.SignatureDefs(i)
        key = (sd.SignatureKey() or b"").decode()
        k = int(sd.SubgraphIndex())
        if not key:
            raise TfliteImportError(f"{path}: signature {i} has an empty signature key")
        if not 0 <= k < n_sub:
            raise TfliteImportError(f"{path}: signature {key!r} runs subgraph {k}, but the model "
                                    f"has {n_sub} subgraphs")
        names = tensor_names(model.Subgraphs(k))

        def tmap(get, length, names=names, key=key, k=k):
            out = {}
            for j in range(length):
                tm = get(j)
                t = int(tm.TensorIndex())
                if not 0 <= t < len(names):
                    raise TfliteImportError(f"{path}: signature {key!r} names tensor {t}, but "
                                            f"subgraph {k} has {len(names)} tensors")
                out[(tm.Name() or b"").decode()] = names[t]
            return out

        sigs.append(TfliteSignature(key, k, tmap(sd.Inputs, sd.InputsLength()),
                                    tmap(sd.Outputs, sd.OutputsLength())))
    keys = [s.key for s in sigs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise TfliteImportError(f"{path}: repeated signature key(s) {dup}")
    return sigs


def tflite_signatures(path: str | os.PathLike) -> list[TfliteSignature]:
    """The signatures of a ``.tflite`` model, in file order (empty: the model has none).

    Raises
    ------
    TfliteImportError
        Missing or malformed file, ``tflite`` not installed, a signature naming a subgraph or
        tensor out of range, an empty or repeated signature key.
    """
    path, model = open_model(path)
    try:
        return _signatures(path, model)
    except TfliteImportError:
        raise
    except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
        raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: {e})") from None


def _tensor_bytes(path, sg, j, names, type_names, overrides) -> int:
    t = sg.Tensors(j)
    tcode = type_names.get(t.Type())
    if tcode not in _TYPES:
        raise TfliteImportError(f"{path}: tensor {names[j]!r} has unknown TensorType {t.Type()}")
    shape = ([int(d) for d in overrides[names[j]]] if names[j] in overrides
             else (t.ShapeAsNumpy().tolist() if t.ShapeLength() else []))
    if any(d < 0 for d in shape):
        raise TfliteImportError(f"{path}: tensor {names[j]!r} has dynamic shape {shape}; give its "
                                f"static shape in overrides, e.g. {{{names[j]!r}: [1, ...]}}")
    return int(math.ceil(math.prod(shape) * _TYPES[tcode][1]))


def _scan_variables(path, model, index, handles_in, op_names, type_names, overrides, sizes,
                    stack=()) -> None:
    """Add to ``sizes`` (variable name -> bytes) every variable subgraph ``index`` and its callees
    read or assign; ``handles_in``: subgraph input position -> variable name (handles passed in)."""
    import tflite

    sg = model.Subgraphs(index)
    names = tensor_names(sg)
    inputs = sg.InputsAsNumpy().tolist() if sg.InputsLength() else []
    handle = {int(inputs[pos]): v for pos, v in handles_in.items() if pos < len(inputs)}
    n_sub = model.SubgraphsLength()
    for oi in range(sg.OperatorsLength()):
        op = sg.Operators(oi)
        otype = operator_type(model, op, op_names)
        ins = [int(i) for i in (op.InputsAsNumpy().tolist() if op.InputsLength() else [])]
        outs = [int(i) for i in (op.OutputsAsNumpy().tolist() if op.OutputsLength() else [])]
        if otype == "VAR_HANDLE":
            opts = tflite.VarHandleOptions()
            table = op.BuiltinOptions()
            if table is not None:
                opts.Init(table.Bytes, table.Pos)
            container = (opts.Container() or b"").decode() if table is not None else ""
            shared = (opts.SharedName() or b"").decode() if table is not None else ""
            if not shared:
                raise TfliteImportError(f"{path}: subgraph {index}: VAR_HANDLE operator {oi} has "
                                        "no shared_name; which variable it names cannot be told")
            name = f"{container}/{shared}" if container else shared
            for o in outs:
                handle[o] = name
                sizes.setdefault(name, 0)
        elif otype in ("READ_VARIABLE", "ASSIGN_VARIABLE"):
            if not ins or ins[0] not in handle:
                raise TfliteImportError(
                    f"{path}: subgraph {index}: {otype} operator {oi} uses a resource handle "
                    f"({names[ins[0]]!r}) that no VAR_HANDLE of the model makes on its way "
                    f"here; which variable it names cannot be told" if ins else
                    f"{path}: subgraph {index}: {otype} operator {oi} has no handle input")
            value = outs[0] if otype == "READ_VARIABLE" and outs else (
                ins[1] if len(ins) > 1 else None)
            if value is not None and value >= 0:
                v = handle[ins[0]]
                sizes[v] = max(sizes.get(v, 0),
                               _tensor_bytes(path, sg, value, names, type_names, overrides))
        callees = _called_subgraphs(path, model, op, otype, n_sub, (*stack, index))
        if callees:
            # operands reach the callee's inputs by position (IF: after the condition)
            operands = ins[1:] if otype == "IF" else ins
            passed = {pos: handle[t] for pos, t in enumerate(operands) if t in handle}
            for c in callees:
                _scan_variables(path, model, c, passed, op_names, type_names, overrides, sizes,
                                (*stack, index))


def variable_sizes(path: str | os.PathLike,
                   overrides: Mapping[str, Sequence[int]] | None = None) -> dict[str, int]:
    """Every resource variable the signatures of a ``.tflite`` model use -> its bytes (the largest
    ``READ_VARIABLE`` result or ``ASSIGN_VARIABLE`` value of it), in first-use order.

    Raises :class:`TfliteImportError` (module docstring: a handle whose variable cannot be told,
    a ``VAR_HANDLE`` without ``shared_name``, a dynamic shape without an override)."""
    import tflite

    path, model = open_model(path)
    op_names = _enum_names(tflite.BuiltinOperator)
    type_names = _enum_names(tflite.TensorType)
    sizes: dict[str, int] = {}
    for sig in _signatures(path, model) or [TfliteSignature("main", 0)]:
        _scan_variables(path, model, sig.subgraph, {}, op_names, type_names,
                        dict(overrides or {}), sizes)
    return sizes


def tflite_shared_problem(
    path: str | os.PathLike,
    signatures: Sequence[str] | None = None,
    include_inputs: bool = True,
    alignment: int = 16,
    overrides: Mapping[str, Sequence[int]] | None = None,
    fold_constants: bool = False,
):
    """The signatures of a ``.tflite`` model as one :class:`planners.shared_arena.SharedArenaProblem`.

    Parameters
    ----------
    path : path-like
    signatures : sequence of str, optional
        Signature keys to plan, in this order (default: every signature, in file order).
    include_inputs, alignment, overrides, fold_constants
        As :func:`scheduling.tflite_import.tflite_problem` (inputs in the arena, 16-byte
        alignment: TFLite Micro's); ``overrides`` may name tensors of any signature's subgraph.

    Returns
    -------
    SharedArenaProblem
        One problem per signature (named by its key, file-order schedule, half-open lifetimes in
        its steps, bytes), the resource variables ``var:<name>`` as shared buffers live over every
        problem's whole schedule (module docstring).

    Raises
    ------
    TfliteImportError
        The model has no signature (plan its main subgraph with ``memplan plan``), a key not among
        the signatures, an override naming no tensor, or any import error of
        :func:`scheduling.tflite_import.load_tflite` or :func:`variable_sizes`.
    """
    import tflite

    from planners.shared_arena import SharedArenaProblem

    from .errors import GraphError
    from .lifetimes import lifetime_problem

    path, model = open_model(path)
    try:
        sigs = _signatures(path, model)
        if not sigs:
            raise TfliteImportError(f"{path}: the model has no signatures; plan its main "
                                    "subgraph with `memplan plan`")
        by_key = {s.key: s for s in sigs}
        if signatures is not None:
            unknown = [k for k in signatures if k not in by_key]
            if unknown:
                raise TfliteImportError(f"{path}: no signature {unknown[0]!r} (signatures: "
                                        f"{', '.join(by_key)})")
            sigs = [by_key[k] for k in signatures]
        overrides = dict(overrides or {})
        known = {n for k in range(model.SubgraphsLength())
                 for n in tensor_names(model.Subgraphs(k))}
        if set(overrides) - known:
            raise TfliteImportError(f"{path}: overrides name no tensor: "
                                    f"{sorted(set(overrides) - known)}")
        op_names = _enum_names(tflite.BuiltinOperator)
        type_names = _enum_names(tflite.TensorType)
        sizes: dict[str, int] = {}
        for s in sigs:
            _scan_variables(path, model, s.subgraph, {}, op_names, type_names, overrides, sizes)
        shared = {f"var:{v}": b for v, b in sizes.items() if b > 0}
        problems = []
        n_sub = model.SubgraphsLength()
        for s in sigs:
            own = set(tensor_names(model.Subgraphs(s.subgraph)))
            m = _build(path, model, s.subgraph, n_sub, op_names, type_names,
                       {k: v for k, v in overrides.items() if k in own}, s.key,
                       fold=bool(fold_constants))
            p = lifetime_problem(m.graph, None, include_inputs=include_inputs,
                                 alignment=alignment, name=s.key)
            clash = sorted(set(shared) & set(p.ids))
            if clash:
                raise TfliteImportError(f"{path}: signature {s.key!r} has a tensor named "
                                        f"{clash[0]!r}, the name of a shared variable buffer")
            horizon = max(1, p.horizon)
            bufs = list(p.buffers) + [Buffer(sid, 0, horizon, size, alignment)
                                      for sid, size in shared.items()]
            problems.append(Problem(bufs, alignment=alignment, name=s.key))
        return SharedArenaProblem(problems, tuple(shared))
    except TfliteImportError:
        raise
    except GraphError as e:
        raise TfliteImportError(f"{path}: {e}") from None
    except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
        raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: {e})") from None
