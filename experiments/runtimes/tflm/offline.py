"""A plan TFLite Micro uses: memplan offsets in a model's ``OfflineMemoryAllocation`` metadata.

TFLite Micro's offline planner reads a metadata entry named ``OfflineMemoryAllocation`` whose
buffer holds little-endian int32 words ``[version = 1, subgraph = 0, nbr_tensors, offset of
tensor 0, offset of tensor 1, ...]``: one offset (bytes from the start of the non-persistent
head of the arena) per tensor, ``-1`` for a tensor TFLM should plan online
(``AllocationInfoBuilder::GetOfflinePlannedOffsets``, micro_allocation_info.cc;
micro/docs/memory_management.md). Three rules of that code (tflite-micro since #1195, 2023,
the version the ``tflite-micro`` package ships) shape this module:

* ``nbr_tensors`` must equal the number of tensors of **all** subgraphs (``info_.tensor_count``),
  else ``AllocateTensors`` fails;
* ``InitializeAllocationInfo`` reads the offsets with one running index over every tensor of
  every subgraph in order (``offline_offsets[offline_index++]``): subgraph 1's tensor 0 takes
  the entry after subgraph 0's last tensor;
* ``MicroAllocator::AllocateVariables`` instead reads a variable tensor's entry by its index
  **within its subgraph** and skips the variable's persistent allocation when that entry is not
  ``-1``; so the entry at position ``i`` is left ``-1`` (that tensor planned online by TFLM)
  for every variable tensor ``i`` of a called subgraph, else the variable gets no memory.

:func:`tflm_problem` is every buffer TFLM plans, of every subgraph (called subgraphs, shared
callees, unread outputs, untouched tensors, unused inputs), with the lifetimes TFLM itself
computes (:func:`tflm_lifetimes`, a transcription of ``MarkAllocationLifetimes`` with its
allocation scopes across subgraphs; :func:`experiments.runtimes.tflm.oracle.tflm_head_problem`), every
size rounded up to 16 bytes as TFLM's ``CreatePlan`` rounds each buffer before its
``GreedyMemoryPlanner`` places it. :func:`write_offline_plan` writes a plan of it (optionally
reordering the main subgraph's operators to a scheduler's order), checks the result with
:func:`check_offline_plan` (the offsets against TFLM's lifetimes, sharing no code with the
planners: :func:`planners.validate.plan_violations`; and the variable rule above) and refuses
(``ValueError``) rather than write a plan TFLM would corrupt. With a plan of the file order by
``greedy_by_size``, TFLM's head equals its own plan; with a better planner or a better order it
is smaller (``make bench-tflm-offline``, ``results/bench_tflm_offline.csv``).

Reordering is applied only when it is safe: the new order is topological, every operator that
the importer folded or dropped (``CALL_ONCE``, ``VAR_HANDLE``, constant folding) writes no
arena tensor and is moved to the front in file order, and the accesses to each resource
variable (``READ_VARIABLE`` / ``ASSIGN_VARIABLE`` and any other reader of a ``RESOURCE``
tensor) keep their file order.

The ``tflite`` package's bindings read flatbuffers only; the rewrite uses the object API
generated from the same schema that ``tflite-micro`` ships
(``tflite_micro/tensorflow/lite/micro/python/schema_py_generated.py``), and aligns every buffer's
data to 16 bytes as the TFLite converter does. Models with buffers stored outside the flatbuffer
(the > 2 GB layout) are refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planners.model import Buffer, Plan, Problem

__all__ = ["METADATA_NAME", "TflmLifetime", "tflm_lifetimes", "tflm_problem", "offline_offsets",
           "read_offline_plan", "check_offline_plan", "write_offline_plan", "run_model",
           "export_offline", "ALIGN", "tflm_head_problem"]

#: Metadata name TFLite Micro looks for (micro_allocation_info.cc ``kOfflineMemAllocMetadata``).
METADATA_NAME = "OfflineMemoryAllocation"
#: ``MicroArenaBufferAlignment()``: TFLM rounds every planned buffer up to it.
ALIGN = 16


def _schema():
    try:
        from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"writing TFLite models needs the 'tflite-micro' package's schema "
                         f"object API ({type(e).__name__}: {e}); pip install 'memplan[tflite]'") from None
    return schema


def _read(data: bytes, what: str):
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ValueError(f"{what}: not a TFLite flatbuffer (file identifier {data[4:8]!r})")
    import tflite

    return tflite.Model.GetRootAsModel(data, 0)


@dataclass(frozen=True)
class TflmLifetime:
    """One tensor as TFLite Micro's planner sees it: subgraph, index, ``bytes`` (unrounded),
    ``first``/``last`` allocation scopes (closed, ``-1`` when never marked) and whether TFLM
    plans it (``needs_allocating``: no constant data, not ``is_variable``, non-zero size)."""

    subgraph: int
    index: int
    bytes: int
    first: int
    last: int
    needs_allocating: bool


def tflm_lifetimes(data: bytes) -> list[list[TflmLifetime]]:
    """The lifetimes TFLite Micro gives every tensor of every subgraph of the model ``data``.

    A transcription of ``AllocationInfoBuilder::MarkAllocationLifetimes`` (micro_allocation_info.cc):
    one allocation scope counter, incremented per operator and on entering each subgraph an
    ``IF`` / ``WHILE`` / ``CALL_ONCE`` runs (which are marked recursively at that point); a
    subgraph's inputs are created at its entry scope, an operator's outputs at its scope, its
    inputs used at its scope (after the subgraphs it runs), the outputs held to the end of the
    subgraph's invocation. Bytes are ``prod(shape) x element size`` (TfLiteEvalTensorByteLength).
    """
    import tflite

    from scheduling.tflite_import import (
        _TYPES,
        _called_subgraphs,
        _enum_names,
        operator_type,
        tensor_has_data,
    )

    model = _read(data, "model")
    op_names = _enum_names(tflite.BuiltinOperator)
    type_names = _enum_names(tflite.TensorType)
    nsub = model.SubgraphsLength()
    info: list[list[list]] = []
    for s in range(nsub):
        sg = model.Subgraphs(s)
        rows = []
        for j in range(sg.TensorsLength()):
            t = sg.Tensors(j)
            code = type_names.get(t.Type())
            item = _TYPES[code][1] if code in _TYPES else 0
            shape = t.ShapeAsNumpy().tolist() if t.ShapeLength() else []
            nbytes = int(np.ceil(np.prod(shape, dtype=np.float64) * item)) if shape else int(
                item)
            has = tensor_has_data(model, t)
            rows.append([nbytes, -1, -1, (not has) and not t.IsVariable() and nbytes != 0])
        info.append(rows)
    scope = [0]

    def mark(s: int, stack: tuple[int, ...]) -> None:
        sg = model.Subgraphs(s)
        rows = info[s]
        for i in (sg.InputsAsNumpy().tolist() if sg.InputsLength() else []):
            if rows[i][1] == -1:
                rows[i][1] = scope[0]
            rows[i][2] = scope[0]  # UpdateLastUsed too: an unread input lives at its entry scope
        for oi in range(sg.OperatorsLength()):
            scope[0] += 1
            op = sg.Operators(oi)
            outs = op.OutputsAsNumpy().tolist() if op.OutputsLength() else []
            for o in outs:
                if o >= 0 and rows[o][1] == -1:
                    rows[o][1] = scope[0]
            name = operator_type(model, op, op_names)
            if name in ("IF", "WHILE", "CALL_ONCE"):
                for callee in _called_subgraphs("model", model, op, name, nsub, stack) or ():
                    scope[0] += 1
                    mark(callee, (*stack, callee))
            for i in (op.InputsAsNumpy().tolist() if op.InputsLength() else []):
                if i >= 0:
                    rows[i][2] = scope[0]
            for o in outs:
                if o >= 0:
                    rows[o][2] = scope[0]
        for o in (sg.OutputsAsNumpy().tolist() if sg.OutputsLength() else []):
            if rows[o][1] == -1:  # UpdateFirstCreated too (an output no operator writes)
                rows[o][1] = scope[0]
            rows[o][2] = scope[0]

    mark(0, (0,))
    return [[TflmLifetime(s, j, r[0], r[1], r[2], bool(r[3])) for j, r in enumerate(rows)]
            for s, rows in enumerate(info)]


def tflm_head_problem(path: str | Path) -> Problem:
    """The buffers TFLite Micro's memory planner places for the model at ``path``, exactly as
    ``MicroAllocator::CommitStaticMemoryPlan`` hands them to it (micro_allocator.cc
    ``CreatePlan``).

    One :class:`planners.model.Buffer` per tensor that ``needs_allocating`` (no constant data,
    not ``is_variable``, non-zero bytes; micro_allocation_info.cc ``InitializeAllocationInfo``),
    of every subgraph, in TFLM's order (subgraph 0's tensors by index, then subgraph 1's, ...),
    id ``"<subgraph>:<index>"``; size rounded up to 16 bytes (``MicroArenaBufferAlignment``); the
    lifetime TFLM computes (:func:`tflm_lifetimes`, a transcription of
    ``AllocationInfoBuilder::MarkAllocationLifetimes``) turned from the closed allocation-scope
    range ``[first, last]`` into the half-open ``[first, last + 1)``. A tensor no operator and no
    subgraph boundary touches keeps TFLM's ``[-1, -1]`` (start -1): it is still planned, and
    overlaps only other such tensors. Scratch buffers are not included (every modelled kernel
    requests none). Alignment 16.

    Raises
    ------
    ValueError
        Not a TFLite flatbuffer.

    Notes
    -----
    Defined here, beside :func:`tflm_lifetimes` and :func:`tflm_problem` that use it;
    :mod:`experiments.runtimes.tflm.oracle` re-exports it.
    """
    rows = tflm_lifetimes(Path(path).read_bytes())
    bufs = [Buffer(f"{t.subgraph}:{t.index}", t.first, t.last + 1,
                   -(-t.bytes // ALIGN) * ALIGN)
            for sub in rows for t in sub if t.needs_allocating]
    return Problem(bufs, alignment=ALIGN, name=Path(path).stem)


def tflm_problem(path: str | Path, schedule: str = "file_order",
                 scheduler_params: dict | None = None) -> tuple[Problem, list[str]]:
    """Every buffer TFLite Micro plans for the model, with TFLM's own lifetimes, under the
    operator order of ``schedule`` (built with ``scheduler_params``, its constructor's keyword
    parameters); and that order.

    The order is the file order for ``file_order`` (no import needed), else the ``schedule``'s
    order of the imported main subgraph (:func:`scheduling.tflite_import.load_tflite`; a model the
    importer refuses is refused with its reason); when it differs from the file order the
    operators are reordered as :func:`write_offline_plan` will reorder them (refused with
    ``ValueError`` where unsafe, see the module docstring). The problem is
    :func:`experiments.runtimes.tflm.oracle.tflm_head_problem` of that (reordered) model: one buffer per
    tensor that TFLM plans, in every subgraph (called subgraphs, shared callees, unread outputs,
    untouched tensors and unused inputs included), id ``"<subgraph>:<index>"``, lifetime in
    TFLM's allocation scopes (``MarkAllocationLifetimes``, half-open), size rounded up to
    :data:`ALIGN` bytes as ``CreatePlan`` rounds each buffer (micro_allocator.cc), alignment 16.
    So a plan's ``arena_size`` is the head TFLM reports when it uses the plan (no kernel
    scratch buffers: those TFLM always plans online, around the offline buffers). The order lists
    operator names ``"<index>:<TYPE>"`` of the imported graph.
    """
    import tempfile

    import tflite

    from scheduling.schedulers import get_scheduler
    from scheduling.tflite_import import (
        TfliteImportError,
        _enum_names,
        load_tflite,
        operator_type,
    )

    data = Path(path).read_bytes()
    if schedule == "file_order":  # TFLM's own order: no graph import needed
        model = _read(data, str(path))
        names = _enum_names(tflite.BuiltinOperator)
        sg = model.Subgraphs(0)
        order = []
        for i in range(sg.OperatorsLength()):
            order.append(f"{i}:{operator_type(model, sg.Operators(i), names)}")
        p = tflm_head_problem(path)
        return Problem(p.buffers, alignment=ALIGN, name=Path(path).stem), order
    try:
        m = load_tflite(path)
    except TfliteImportError as e:
        raise ValueError(f"--scheduler {schedule} reorders memplan's graph of the model, and "
                         f"the importer refuses it: {e}") from None
    order = list(get_scheduler(schedule, **(scheduler_params or {})).schedule(m.graph).order)
    new = _new_operator_order(data, order)
    if new is None:
        p = tflm_head_problem(path)
    else:
        with tempfile.TemporaryDirectory(prefix="memplan_tflm_") as d:
            q = Path(d) / Path(path).name
            q.write_bytes(_rewrite(data, None, new))
            p = tflm_head_problem(q)
    return Problem(p.buffers, alignment=ALIGN, name=m.graph.name), order


def _global_index(data: bytes) -> dict[tuple[int, int], int]:
    """``(subgraph, tensor index) -> position`` in the offsets array: TFLM reads
    ``offline_offsets[offline_index++]`` over every tensor of every subgraph in order
    (micro_allocation_info.cc ``InitializeAllocationInfo``)."""
    model = _read(data, "model")
    out, k = {}, 0
    for s in range(model.SubgraphsLength()):
        for i in range(model.Subgraphs(s).TensorsLength()):
            out[(s, i)] = k
            k += 1
    return out


def _variables(data: bytes) -> list[tuple[int, int]]:
    """``(subgraph, tensor index)`` of every ``is_variable`` tensor of the model."""
    model = _read(data, "model")
    return [(s, i) for s in range(model.SubgraphsLength())
            for i in range(model.Subgraphs(s).TensorsLength())
            if model.Subgraphs(s).Tensors(i).IsVariable()]


def offline_offsets(data: bytes, plan: Plan) -> list[int]:
    """The ``OfflineMemoryAllocation`` offsets for ``plan`` (of :func:`tflm_problem`): one int32
    per tensor of every subgraph in subgraph order (TFLM's running index), the plan's offset for
    each tensor in the plan (ids ``"<subgraph>:<index>"``), ``-1`` (plan online) for every other
    tensor; and ``-1`` at position ``i`` for every variable tensor ``i`` of a called subgraph:
    ``MicroAllocator::AllocateVariables`` (micro_allocator.cc) reads the entry of a variable
    by its index *within its subgraph*, and skips the persistent allocation when that entry is
    not ``-1``, leaving the variable without memory (the interpreter crashes). The tensor whose
    entry that is then is planned online by TFLM, around the offline plan.

    Raises
    ------
    ValueError
        A buffer id that names no tensor of the model, or an offset outside ``[0, 2**31)``.
    """
    index = _global_index(data)
    out = [-1] * len(index)
    for b, off in zip(plan.problem.buffers, plan.offsets.tolist(), strict=True):
        sub, _, ti = str(b.id).partition(":")
        key = (int(sub), int(ti)) if sub.isdigit() and ti.isdigit() else None
        if key not in index:
            raise ValueError(f"buffer {b.id!r} names no tensor of the model (expected "
                             "'<subgraph>:<tensor index>', as tflm_problem names them)")
        if not 0 <= off < 2**31:
            raise ValueError(f"buffer {b.id!r}: offset {off} does not fit an int32 offset")
        out[index[key]] = int(off)
    for sub, i in _variables(data):
        if sub > 0 and i < len(out):
            out[i] = -1
    return out


def read_offline_plan(data: bytes) -> list[int] | None:
    """The offsets of the model's ``OfflineMemoryAllocation`` metadata (``None`` without one).

    Raises ``ValueError`` for a malformed entry (short buffer, version other than 1)."""
    model = _read(data, "model")
    for i in range(model.MetadataLength()):
        md = model.Metadata(i)
        if (md.Name() or b"").decode("utf-8", "replace") != METADATA_NAME:
            continue
        raw = model.Buffers(md.Buffer()).DataAsNumpy()
        words = np.frombuffer(np.asarray(raw, dtype=np.uint8).tobytes(), dtype="<i4")
        if len(words) < 3 or len(words) < 3 + int(words[2]):
            raise ValueError(f"{METADATA_NAME}: buffer of {len(words)} words is too short")
        if int(words[0]) != 1:
            raise ValueError(f"{METADATA_NAME}: version {int(words[0])}, expected 1")
        return words[3:3 + int(words[2])].astype(int).tolist()
    return None


def check_offline_plan(data: bytes) -> dict:
    """Validate a model's ``OfflineMemoryAllocation`` against TFLite Micro's own lifetimes.

    Every tensor TFLM plans (``needs_allocating``) whose offset entry (at its running index over
    all subgraphs, as TFLM reads it) is not ``-1`` becomes a buffer ``[first, last + 1)`` of its
    size rounded up to 16 bytes at that offset (a tensor nothing touches keeps TFLM's lifetime
    ``[-1, -1]``); :func:`planners.validate.plan_violations` checks them.

    Returns
    -------
    dict
        ``offline`` (tensors placed offline), ``online`` (tensors TFLM plans itself),
        ``arena`` (highest ``offset + rounded size`` of the offline tensors, bytes),
        ``violations`` (messages; empty when valid).

    Raises
    ------
    ValueError
        No metadata, or ``nbr_tensors`` differs from the model's tensor count (TFLM would
        fail ``AllocateTensors``).
    """
    from planners.validate import plan_violations

    offs = read_offline_plan(data)
    if offs is None:
        raise ValueError(f"the model has no {METADATA_NAME} metadata")
    lives = tflm_lifetimes(data)
    total = sum(len(s) for s in lives)
    if len(offs) != total:
        raise ValueError(f"{METADATA_NAME} lists {len(offs)} tensors, the model has {total} "
                         "(TFLM compares the two and fails AllocateTensors)")
    bufs, where, online = [], [], 0
    index = _global_index(data)
    for sub in lives:
        for t in sub:
            if not t.needs_allocating:
                continue
            off = offs[index[(t.subgraph, t.index)]]
            if off == -1:
                online += 1
                continue
            if t.last < t.first or (t.first < 0) != (t.last < 0):
                raise ValueError(f"tensor {t.index} of subgraph {t.subgraph} has an offline "
                                 f"offset but no consistent lifetime in TFLM ({t.first}, "
                                 f"{t.last})")
            bufs.append(Buffer(f"s{t.subgraph}:t{t.index}", t.first, t.last + 1,
                               -(-t.bytes // ALIGN) * ALIGN))
            where.append(off)
    p = Problem(bufs, alignment=ALIGN, name="tflm offline")
    bad = [v.message for v in plan_violations(p, where)]
    for sub, i in _variables(data):
        if i < len(offs) and offs[i] != -1 and offs[index[(sub, i)]] == -1:
            bad.append(f"variable tensor {i} of subgraph {sub} gets no memory: TFLM's "
                       f"AllocateVariables reads entry {i} ({offs[i]}, not -1) for it")
        elif offs[index[(sub, i)]] != -1:
            bad.append(f"variable tensor {i} of subgraph {sub} has an offline offset: TFLM "
                       "would plan it in the shared head and lose its state")
    arena = max((o + b.size for o, b in zip(where, bufs, strict=True)), default=0)
    return {"offline": len(bufs), "online": online, "arena": int(arena),
            "violations": bad}


def _aligned_buffer_type(schema):
    class AlignedBufferT(schema.BufferT):
        """``BufferT`` whose data vector starts on a 16-byte boundary (the converter's
        ``force_align: 16``)."""

        def Pack(self, builder):
            data = None
            if self.data is not None and len(self.data):
                payload = np.asarray(self.data, dtype=np.uint8).tobytes()
                builder.StartVector(1, len(payload), ALIGN)
                builder.head = builder.head - len(payload)
                builder.Bytes[builder.head:builder.head + len(payload)] = payload
                data = builder.EndVector()
            schema.BufferStart(builder)
            if data is not None:
                schema.BufferAddData(builder, data)
            schema.BufferAddOffset(builder, self.offset)
            schema.BufferAddSize(builder, self.size)
            return schema.BufferEnd(builder)

    return AlignedBufferT


def _new_operator_order(data: bytes, order: list[str]) -> list[int] | None:
    """Indices of the main subgraph's operators in the order ``order`` (imported graph op names
    ``"<index>:<TYPE>"``), the importer's dropped operators first; ``None`` when it is the file
    order. ``ValueError`` when the reorder is not safe (module docstring)."""
    import tflite

    from scheduling.tflite_import import _enum_names

    model = _read(data, "model")
    sg = model.Subgraphs(0)
    nops = sg.OperatorsLength()
    kept = [int(name.split(":", 1)[0]) for name in order]
    if kept == sorted(kept):
        return None
    type_names = _enum_names(tflite.TensorType)
    lives = tflm_lifetimes(data)[0]
    dropped = [i for i in range(nops) if i not in set(kept)]
    ops = [sg.Operators(i) for i in range(nops)]

    def ins(i):
        return [t for t in (ops[i].InputsAsNumpy().tolist() if ops[i].InputsLength() else [])
                if t >= 0]

    def outs(i):
        return [t for t in (ops[i].OutputsAsNumpy().tolist() if ops[i].OutputsLength() else [])
                if t >= 0]

    for i in dropped:
        big = [t for t in outs(i) if lives[t].needs_allocating]
        if big:
            raise ValueError(f"operator {i} is not scheduled by the importer but writes arena "
                             f"tensor(s) {big}; reordering would move it")
    new = dropped + kept
    producer = {t: i for i in range(nops) for t in outs(i)}
    pos = {i: k for k, i in enumerate(new)}
    for i in new:
        for t in ins(i):
            if t in producer and pos[producer[t]] > pos[i]:
                raise ValueError(f"order is not topological: operator {i} reads tensor {t} "
                                 f"before operator {producer[t]} writes it")
    resource = {t for t in range(sg.TensorsLength())
                if type_names.get(sg.Tensors(t).Type()) == "RESOURCE"}
    for t in resource:
        before = [i for i in range(nops) if t in ins(i)]
        after = [i for i in new if t in ins(i)]
        if before != after:
            raise ValueError(f"the order changes the sequence of accesses to resource variable "
                             f"tensor {t} ({before} -> {after})")
    return new


def write_offline_plan(path: str | Path, plan: Plan, out: str | Path,
                       order: list[str] | None = None) -> dict:
    """Write the model at ``path`` to ``out`` with ``plan`` in its ``OfflineMemoryAllocation``
    metadata (an existing entry is replaced), the main subgraph's operators in ``order`` when it
    differs from the file order (:func:`tflm_problem` returns both).

    Returns
    -------
    dict
        :func:`check_offline_plan` of the written model plus ``reordered`` (bool),
        ``bytes`` (file size) and ``note`` (one line when some planned tensors had to be left
        to TFLM's online planner, so that TFLM's head can exceed the plan's arena; else "").

    Raises
    ------
    ValueError
        The plan does not fit the model, the reorder is unsafe, the model stores buffers
        outside the flatbuffer, or TFLM's lifetimes show a conflict (nothing is written).
    """
    data = Path(path).read_bytes()
    model = _read(data, str(path))
    for b in range(model.BuffersLength()):
        if model.Buffers(b).Offset() > 1:
            raise ValueError(f"{path}: buffer {b} is stored outside the flatbuffer (the > 2 GB "
                             "layout); not rewritten")
    offs = offline_offsets(data, plan)
    new_order = _new_operator_order(data, order) if order is not None else None
    result = _rewrite(data, offs, new_order)
    rep = check_offline_plan(result)
    if rep["violations"]:
        raise ValueError(f"{path}: the offsets conflict under TFLite Micro's lifetimes: "
                         + "; ".join(rep["violations"][:3]))
    outp = Path(out)
    from planners.io import atomic_write  # OutputError: one line naming the path and cause

    atomic_write(outp, result)
    online = plan.problem.n - rep["offline"]
    note = "" if not online else (
        f"{online} tensor(s) left to TFLite Micro's online planner (entries that a called "
        "subgraph's variable tensor shares, see offline_offsets): TFLM places them around this "
        "plan, so its head can exceed the plan's arena")
    return {**rep, "reordered": new_order is not None, "bytes": len(result), "note": note}


def _rewrite(data: bytes, offs: list[int] | None, new_order: list[int] | None) -> bytes:
    """The model ``data`` with ``offs`` as its ``OfflineMemoryAllocation`` (replacing an
    existing entry; ``None``: metadata unchanged) and the main subgraph's operators in
    ``new_order``; no checks."""
    schema = _schema()
    import flatbuffers

    m = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    Aligned = _aligned_buffer_type(schema)
    bufs = []
    for b in m.buffers or []:
        nb = Aligned()
        nb.data, nb.offset, nb.size = b.data, b.offset, b.size
        bufs.append(nb)
    words = np.array([1, 0, len(offs), *offs], dtype="<i4").view(np.uint8) if offs is not None \
        else np.zeros(0, np.uint8)
    m.buffers = bufs
    if offs is not None:
        meta = [md for md in (m.metadata or []) if (md.name or b"") not in
                (METADATA_NAME, METADATA_NAME.encode())]
        old = [md for md in (m.metadata or []) if md not in meta]
        nb = Aligned()
        nb.data = words
        if old:  # reuse the replaced entry's buffer slot
            bufs[old[0].buffer] = nb
            slot = old[0].buffer
        else:
            bufs.append(nb)
            slot = len(bufs) - 1
        md = schema.MetadataT()
        md.name = METADATA_NAME
        md.buffer = slot
        m.metadata = [*meta, md]
    if new_order is not None:
        sg = m.subgraphs[0]
        sg.operators = [sg.operators[i] for i in new_order]
    builder = flatbuffers.Builder(len(data) + 4 * len(words) + 1024)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


_RUN = r"""
import ctypes, json, sys
import numpy as np
from tflite_micro.python.tflite_micro import runtime
path, arena, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
span = int(sys.argv[5])
try:
    it = runtime.Interpreter.from_file(path, arena_size=arena)
except Exception as e:
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)
    print("MEMPLAN_ERROR " + str(e).replace("\n", " "), flush=True)
    sys.exit(3)
rng = np.random.default_rng(seed)
outs = []
for call in range(n):
    loud = (call // 10) % 2 == 1
    k = 0
    while True:
        try:
            d = it.get_input_details(k)
        except Exception:
            break
        shape, dt = tuple(d["shape"]), np.dtype(d["dtype"])
        if dt == np.bool_:
            x = rng.integers(0, 2, size=shape).astype(dt)
        elif np.issubdtype(dt, np.integer) and dt.itemsize > 2:  # counts, indices: small
            x = rng.integers(0, span + 1, size=shape).astype(dt)
        elif np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            lo = max(info.min, info.max - span) if loud else info.min
            x = rng.integers(lo, min(info.max, lo + span) + 1, size=shape, dtype=dt)
        else:
            x = rng.standard_normal(shape).astype(dt)
        it.set_input(x, k)
        k += 1
    it.invoke()
    row, k = [], 0
    while True:
        try:
            row.append(np.asarray(it.get_output(k)).tolist())
        except Exception:
            break
        k += 1
    outs.append(row)
sys.stdout.flush()
print("MEMPLAN_OUT " + json.dumps(outs), flush=True)
it.print_allocations()
"""


def run_model(path: str | Path, invocations: int = 60, seed: int = 0, span: int = 28,
              arena_size: int = 1 << 20, timeout: float = 120.0) -> dict:
    """Run the ``tflite-micro`` interpreter on ``path`` in a child process: ``invocations``
    calls with seeded random inputs (the same for the same seed and input shapes), state kept
    between calls as a streaming model keeps it. 8- and 16-bit integer inputs alternate every 10
    calls between the lowest and the highest ``span + 1`` codes of their type (quiet and loud
    features: on the wake-word models uniform noise over the whole int8 range leaves the output
    at 0, while these move it); wider integer inputs (counters, indices) are drawn from
    ``0..span``, booleans uniformly, floats from a standard normal.

    Returns ``{"outputs": [[output 0, ...] per invocation], "head", "tail", "total"}`` (bytes,
    from ``print_allocations``). Raises :class:`experiments.runtimes.tflm.oracle.TflmRefused`
    (quoting what the interpreter printed, in one line) when the interpreter refuses to build
    the model, :class:`experiments.runtimes.tflm.oracle.TflmUnavailable` when it fails otherwise
    (a crash: ``exit -11``).
    """
    from experiments.runtimes.tflm.interpreter import (
        TflmRefused,
        TflmUnavailable,
        arena_too_small,
        parse_allocations,
        runtime_reason,
        tflm_available,
    )

    ok, why = tflm_available()
    if not ok:
        raise TflmUnavailable(why)
    r = subprocess.run([sys.executable, "-c", _RUN, str(path), str(arena_size), str(seed),
                        str(invocations), str(span)],
                       capture_output=True, text=True, timeout=timeout)
    text = r.stdout + "\n" + r.stderr
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("MEMPLAN_OUT ")), None)
    if r.returncode != 0 or line is None:
        printed = "\n".join(ln for ln in (r.stdout + "\n" + r.stderr).splitlines()
                            if not ln.startswith("MEMPLAN_ERROR "))
        error = next((ln[len("MEMPLAN_ERROR "):] for ln in r.stdout.splitlines()
                      if ln.startswith("MEMPLAN_ERROR ")), "")
        why = runtime_reason(printed, error)
        if r.returncode == 3 and arena_too_small(printed):
            raise TflmUnavailable(f"{path}: the TFLite Micro interpreter needs more than "
                                  f"arena_size {arena_size} bytes: {why}")
        if r.returncode == 3:  # refused while building: quote what the interpreter printed
            raise TflmRefused(f"{path}: the TFLite Micro interpreter refuses the model "
                              f"(arena_size {arena_size} bytes): {why}", why)
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        raise TflmUnavailable(f"{path}: the TFLite Micro interpreter failed (exit "
                              f"{r.returncode}): " + " | ".join(tail))
    a = parse_allocations(text)
    return {"outputs": json.loads(line[len("MEMPLAN_OUT "):]), "head": a.head, "tail": a.tail,
            "total": a.total}


def export_offline(model: str | Path, out: str | Path, planner: str = "greedy_by_size",
                   schedule: str = "file_order", time_limit: float = 10.0,
                   scheduler_params: dict | None = None) -> dict:
    """Plan ``model`` (a ``.tflite`` path or a ``wakeword:`` / ``mediapipe:`` name) with
    ``planner`` under ``schedule`` with ``scheduler_params`` (:func:`tflm_problem`) and write it to ``out`` with the plan
    (:func:`write_offline_plan`); the command ``memplan export MODEL --format tflm-offline``.

    Returns ``{"model", "output", "scheduler", "planner", "status", "buffers", "arena",
    "lower_bound", "offline", "online", "reordered", "note"}`` (bytes; ``arena`` is TFLM's head
    exactly when ``note`` is empty). Raises ``ValueError`` or
    :class:`planners.MemplanError` on bad input or when the planner finds no plan.
    """
    from experiments.workloads import tflite_model_files
    from planners import lower_bound
    from planners.registry import planner_for

    spec = str(model)
    path = Path(spec) if spec.endswith(".tflite") else tflite_model_files().get(spec)
    if path is None:
        raise ValueError(f"{spec!r}: --format tflm-offline needs a .tflite file or a TFLite "
                         f"workload name ({', '.join(tflite_model_files()) or 'none installed'})")
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such file")
    problem, order = tflm_problem(path, schedule, scheduler_params)
    pl = planner_for(planner, time_limit)
    if getattr(pl, "requires_capacity", False) and problem.capacity is None:
        problem = problem.with_capacity(lower_bound(problem))
    result = pl.plan(problem)
    if result.status in ("infeasible", "timeout", "skipped"):
        raise ValueError(f"planner {planner!r} found no plan (status {result.status})")
    rep = write_offline_plan(path, result, out, order=order)
    return {"model": spec, "output": str(out), "scheduler": schedule, "planner": planner,
            "status": result.status, "buffers": problem.n, "arena": result.arena_size,
            "lower_bound": int(lower_bound(problem)), "offline": rep["offline"],
            "online": rep["online"], "reordered": rep["reordered"], "note": rep["note"]}
