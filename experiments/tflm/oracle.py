"""TFLite Micro as an oracle: the arena that TFLite Micro's own planner reports for a model.

The optional ``tflite-micro`` PyPI package (``pip install 'memplan[tflite]'``) ships the TFLM
interpreter as a Python extension. Its ``Interpreter`` is built with the recording allocator
(``InterpreterConfig.kAllocationRecording``); ``print_allocations()`` prints, from C, lines such as::

    [RecordingMicroAllocator] Arena allocation total 20432 bytes
    [RecordingMicroAllocator] Arena allocation head 3648 bytes
    [RecordingMicroAllocator] Arena allocation tail 16784 bytes

The **head** is the non-persistent part of the arena: the activation buffers placed by TFLM's
``GreedyMemoryPlanner`` (greedy by size, 16-byte alignment; the same area is used temporarily for
node structures during ``AllocateTensors``, so the head is ``max`` of the two). The **tail** holds
persistent data (tensor structs, quantisation parameters, variables, operator scratch). Our
planners' arena for :func:`scheduling.tflite_import.tflite_problem` (graph input included,
alignment 16) is compared with the head.

The interpreter prints from C to file descriptor 1, so :func:`tflm_arena` runs it in a child
Python process and parses that process's output (robust against the C library's buffering and the
interpreter aborting on an unsupported operator).

The reported total is not always enough: :func:`tflm_min_arena` bisects the smallest
``arena_size`` the interpreter accepts (on three of the four pymicro-wakeword models it is above
the reported total, because committing the plan needs temporary working memory in the head).
:func:`tflm_arena_model` models the whole need from the flatbuffer (head, persistent tail, and the
plan-commit moment) with TFLM's 64-bit struct sizes; :func:`runtime_arena` reports it, or the
bisected value where a kernel is not modelled. ``make bench-tflm`` compares the two.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from planners.errors import MemplanError

__all__ = ["TflmUnavailable", "TflmArena", "tflm_available", "tflm_arena", "parse_allocations",
           "tflm_min_arena", "parse_breakdown", "TflmArenaModel", "tflm_arena_model", "KERNELS",
           "runtime_arena"]

_SCRIPT = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
it = runtime.Interpreter.from_file(sys.argv[1], arena_size=int(sys.argv[2]))
sys.stdout.flush()
it.print_allocations()
"""

_LINE = re.compile(r"Arena allocation (total|head|tail) (\d+) bytes")
_PART = re.compile(r"'([^']+)' used (\d+) bytes with alignment overhead \(requested (\d+) bytes for (\d+) ")

# One probe per child process: the interpreter can crash (SIGSEGV) rather than fail cleanly when
# the arena is a little too small, so a probe that does not print OK counts as rejected.
_PROBE = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
try:
    runtime.Interpreter.from_file(sys.argv[1], arena_size=int(sys.argv[2]))
except RuntimeError:
    sys.exit(3)
print("OK")
"""


class TflmUnavailable(MemplanError, RuntimeError):
    """``tflite-micro`` is not installed, or its interpreter could not load the model (the message
    carries the interpreter's own error, e.g. an operator TFLM does not implement)."""


@dataclass(frozen=True)
class TflmArena:
    """TFLite Micro's arena for one model (bytes): ``head`` (non-persistent, planned), ``tail``
    (persistent) and ``total = head + tail``."""

    head: int
    tail: int
    total: int


def tflm_available() -> tuple[bool, str]:
    """``(True, "")`` when ``tflite_micro`` imports here, else ``(False, reason)``."""
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return False, f"tflite-micro is not usable here ({type(e).__name__}: {e})"
    return True, ""


def parse_allocations(text: str) -> TflmArena:
    """Parse the ``print_allocations`` report; ``ValueError`` when a line is missing."""
    found = {k: int(v) for k, v in _LINE.findall(text)}
    missing = {"total", "head", "tail"} - set(found)
    if missing:
        raise ValueError(f"TFLM allocation report lacks the {sorted(missing)} line(s)")
    return TflmArena(found["head"], found["tail"], found["total"])


@functools.lru_cache(maxsize=256)
def _cached(path: str, digest: str, arena_size: int, timeout: float) -> TflmArena:
    r = subprocess.run([sys.executable, "-c", _SCRIPT, path, str(arena_size)],
                       capture_output=True, text=True, timeout=timeout)
    try:
        return parse_allocations(r.stdout + "\n" + r.stderr)
    except ValueError:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        raise TflmUnavailable(
            f"{path}: TFLite Micro could not allocate the model (exit {r.returncode}): "
            + " | ".join(tail)) from None


def tflm_arena(path: str | Path, arena_size: int | None = None, timeout: float = 120.0) -> TflmArena:
    """The arena TFLite Micro allocates for the ``.tflite`` model at ``path``.

    Parameters
    ----------
    path : path of a ``.tflite`` file.
    arena_size : bytes given to the interpreter (default ``max(10 * file size, 16 MiB)``; the
        report gives what was used, not this).
    timeout : seconds for the child process.

    Raises
    ------
    TflmUnavailable
        ``tflite-micro`` missing, or the interpreter failed (unsupported operator, arena too small).

    Notes
    -----
    One child process per call (about a second); results are cached per file content.
    """
    ok, reason = tflm_available()
    if not ok:
        raise TflmUnavailable(reason)
    p = Path(path)
    data = p.read_bytes()
    size = int(arena_size) if arena_size else max(10 * len(data), 16 << 20)
    return _cached(str(p.resolve()), hashlib.sha256(data).hexdigest(), size, float(timeout))


def parse_breakdown(text: str) -> dict[str, tuple[int, int, int]]:
    """The per-kind lines of the ``print_allocations`` report: ``{kind: (used bytes with alignment,
    requested bytes, count)}``, e.g. ``{"TfLiteEvalTensor data": (96, 96, 4), ...}``."""
    return {k: (int(u), int(r), int(c)) for k, u, r, c in _PART.findall(text)}


def _accepts(path: str, arena_size: int, timeout: float) -> bool:
    """One probe: the interpreter builds and invokes (inputs zero) the model with
    ``arena_size`` bytes (:func:`experiments.tflm.probe.accepts`, a persistent worker)."""
    from experiments.tflm.probe import accepts

    return accepts(path, arena_size, timeout)


@functools.lru_cache(maxsize=1024)
def _cached_min(path: str, digest: str, hi: int, timeout: float) -> int:
    from experiments.tflm.probe import min_arena

    return min_arena(path, hi, timeout)


def tflm_min_arena(path: str | Path, timeout: float = 120.0) -> int:
    """The smallest ``arena_size`` (bytes) with which the TFLite Micro interpreter both builds
    the model at ``path`` (``AllocateTensors`` succeeds) and invokes it once with every input
    zero, by bisection (:func:`experiments.tflm.probe.min_arena`).

    The search starts from the ``total`` the recording allocator reports for a large arena
    (:func:`experiments.tflm.probe.report`), doubled until accepted (the report can be short of
    the need: on the pymicro-wakeword models the reported total is rejected as ``arena_size``);
    the lower end is 0. Probes go to one persistent child process
    (:class:`experiments.tflm.probe.ProbeWorker`); a probe that fails or crashes (the
    interpreter can segfault on a slightly short arena) counts as rejected and the worker is
    restarted. Assumes acceptance is monotone in ``arena_size`` (a larger arena never fails
    where a smaller one succeeds), which holds for TFLM's two-ended arena: every allocation
    either fits between head and tail or not, independently of the bytes beyond; checked at the
    end (the minimum accepted, one byte less rejected, both re-probed).

    Raises
    ------
    TflmUnavailable
        ``tflite-micro`` missing, the interpreter rejects the model at any size, a probe takes
        longer than ``timeout`` seconds, or the monotonicity check fails.

    Notes
    -----
    About ``log2(total) + 3`` probes (a few milliseconds each once the worker runs), cached per
    file content.
    """
    from experiments.tflm.probe import report

    p = Path(path)
    data = p.read_bytes()
    total = report(p, timeout=timeout).total
    return _cached_min(str(p.resolve()), hashlib.sha256(data).hexdigest(), int(total),
                       float(timeout))


# --------------------------------------------------------------------------------------------
# A model of the whole arena (head + persistent tail) that the TFLite Micro interpreter needs
# --------------------------------------------------------------------------------------------

#: Host struct sizes (bytes) and alignments of TFLite Micro on 64-bit x86 (LP64), from the TFLM
#: headers named beside each entry. ``_OBJECTS`` is the one calibrated constant (see
#: :func:`tflm_arena_model`).
_SIZEOF = {
    "TfLiteEvalTensor": (24, 8),          # c/common.h: data ptr, dims ptr, type
    "NodeAndRegistration": (64, 8),       # micro_allocator.h: TfLiteNode (static memory) + ptr
    "SubgraphAllocations": (24, 8),       # micro_allocator.h; 24 on this build, fixed by models
                                          # with 1, 2 and 3 subgraphs (16 fits only one)
    "MicroBuiltinDataAllocator": (16, 8),  # micro_allocator.cc: vptr + persistent allocator ptr
    "TfLiteTensor": (64, 8),              # c/common.h under TF_LITE_STATIC_MEMORY
    "TfLiteAffineQuantization": (24, 8),  # c/common.h: scale ptr, zero_point ptr, dimension
    "ScratchBufferHandle": (8, 8),        # micro_allocator.h: uint8_t* data
    "ScratchBufferRequest": (16, 8),      # micro_allocator.h: bytes, node_idx, subgraph_idx
    "AllocationInfo": (32, 8),            # micro_allocation_info.h
    "GreedyPlannerPerBuffer": (40, 4),    # greedy_memory_planner.cc per_buffer_size:
                                          # BufferRequirements 16 + 2 int + ListEntry 12 + int
}
#: ``sizeof`` RecordingSingleArenaBufferAllocator + GreedyMemoryPlanner + RecordingMicroAllocator
#: (recording_micro_allocator.cc ``Create``), placed first in the tail; not exposed by the Python
#: package, so calibrated once: the residual of ``add_chain.tflite`` (1152-byte tail) after every
#: other modelled allocation.
_OBJECTS = 448
_ARENA_ALIGN = 16           # MicroArenaBufferAlignment()
_MAX_SCRATCH_PER_OP = 12    # kMaxScratchBuffersPerOp, micro_allocator.cc

#: Per-kernel persistent allocations of the TFLM reference kernels, verified against the
#: interpreter: op -> (builtin options struct (size, alignment) parsed into the tail by
#: MicroBuiltinDataAllocator, [operator-data AllocatePersistentBuffer sizes in Init/Prepare],
#: scratch-buffer requests). Only kernels whose numbers have been checked are listed; any other
#: kernel makes the model incomplete (it is never guessed).
KERNELS: dict[str, tuple[tuple[int, int], tuple[int, ...], int]] = {
    # kernels/add.h OpDataAdd (60 bytes on LP64); builtin_op_data.h TfLiteAddParams (8, align 4)
    "ADD": ((8, 4), (60,), 0),
    # kernels/if.cc OpData {then, else subgraph index}; TfLiteIfParams (8, align 4)
    "IF": ((8, 4), (8,), 0),
    # kernels/call_once.cc OpData {init_subgraph_index, has_run}; TfLiteCallOnceParams (4, 4)
    "CALL_ONCE": ((4, 4), (8,), 0),
}


def _align_up(n: int, a: int) -> int:
    return -(-n // a) * a


class _Tail:
    """The persistent tail grows down from the arena end: each allocation of ``size`` bytes with
    ``alignment`` moves the tail pointer to ``AlignPointerDown(tail - size, alignment)``
    (single_arena_buffer_allocator.cc ``AllocatePersistentBuffer``); with a 16-aligned end the used
    bytes are ``align_up(used + size, alignment)``."""

    def __init__(self, used: int = 0) -> None:
        self.used = used
        self.parts: dict[str, int] = {}

    def alloc(self, part: str, size: int, alignment: int) -> None:
        """Take ``size`` bytes for ``part`` and round the tail up to ``alignment`` bytes."""
        before = self.used
        self.used = _align_up(self.used + int(size), int(alignment))
        self.parts[part] = self.parts.get(part, 0) + self.used - before


@dataclass(frozen=True)
class TflmArenaModel:
    """The modelled TFLite Micro arena of one model (bytes; see :func:`tflm_arena_model`).

    ``head``: the planned non-persistent head (greedy by size over all subgraphs' tensors).
    ``tail``: the persistent tail after ``AllocateTensors``, or ``None`` when a kernel is not
    modelled. ``planning_need``: tail at plan time + the planner's temporary working memory.
    ``runtime_arena``: ``max(head + tail, planning_need)``, or ``None``. ``unknown_kernels``: the
    operators whose persistent allocations are not modelled. ``parts``: bytes per kind of
    allocation (the known ones). ``planning_work``: head bytes the plan commit needs above the
    tail of that moment (scratch requests of unknown kernels counted as none);
    ``post_commit``: tail bytes allocated after the commit (input/output tensor structs); where
    the tail is not modelled, a pair: those bytes when the commit-time tail is 16-aligned and
    when it is 8 bytes off (the input/output arrays are 16-byte aligned).
    """

    head: int
    tail: int | None
    planning_need: int | None
    runtime_arena: int | None
    unknown_kernels: tuple[str, ...]
    parts: dict
    reason: str = ""
    planning_work: int = 0
    post_commit: int | tuple[int, int] = 0


def _flatbuffer_facts(path: Path) -> dict:
    """What the arena model reads from the flatbuffer (all subgraphs)."""
    from scheduling.tflite_import import (
        _TYPES,
        TfliteImportError,
        _called_subgraphs,
        _enum_names,
        tflite_available,
    )

    ok, reason = tflite_available()
    if not ok:
        raise TfliteImportError(reason)
    import tflite

    data = Path(path).read_bytes()
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TfliteImportError(f"{path}: not a TFLite flatbuffer")
    model = tflite.Model.GetRootAsModel(data, 0)
    op_names = _enum_names(tflite.BuiltinOperator)
    type_names = _enum_names(tflite.TensorType)
    subs = []
    for s in range(model.SubgraphsLength()):
        sg = model.Subgraphs(s)
        tensors = []
        for j in range(sg.TensorsLength()):
            t = sg.Tensors(j)
            b = t.Buffer()
            has = 0 < b < model.BuffersLength() and (model.Buffers(b).DataLength() > 0
                                                     or model.Buffers(b).Offset() > 1)
            code = type_names.get(t.Type())
            item = _TYPES[code][1] if code in _TYPES else None
            shape = t.ShapeAsNumpy().tolist() if t.ShapeLength() else []
            nbytes = None if item is None or any(d < 0 for d in shape) else int(
                math.ceil(math.prod(shape) * item))
            q = t.Quantization()
            channels = q.ScaleLength() if q is not None and q.ZeroPointLength() > 0 else 0
            tensors.append({"data": has, "variable": bool(t.IsVariable()), "bytes": nbytes,
                            "channels": channels, "type": code})
        ops = []
        for oi in range(sg.OperatorsLength()):
            oc = model.OperatorCodes(sg.Operators(oi).OpcodeIndex())
            code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
            name = op_names.get(code, f"BUILTIN_{code}")
            if name == "CUSTOM" and oc.CustomCode():
                name = "CUSTOM:" + oc.CustomCode().decode("utf-8", "replace")
            ops.append(name)
        called = set()
        for oi, name in enumerate(ops):
            called.update(_called_subgraphs(path, model, sg.Operators(oi), name,
                                            model.SubgraphsLength(), ()) or ())
        subs.append({
            "tensors": tensors, "ops": ops, "calls": called,
            "inputs": sg.InputsAsNumpy().tolist() if sg.InputsLength() else [],
            "outputs": sg.OutputsAsNumpy().tolist() if sg.OutputsLength() else [],
        })
    return {"subgraphs": subs, "resource_variables": sum(
        op == "VAR_HANDLE" for s in subs for op in s["ops"])}


def _io_tensors(tail: _Tail, subs: list) -> int:
    """Step 6 of :func:`tflm_arena_model` on ``tail``; returns the bytes it added."""
    before = tail.used
    main = subs[0] if subs else {"inputs": [], "outputs": [], "tensors": []}
    for key in ("inputs", "outputs"):
        tail.alloc("TfLiteTensor* arrays", 8 * len(main[key]), _ARENA_ALIGN)
        for j in main[key]:
            tail.alloc("Persistent TfLiteTensor data", *_SIZEOF["TfLiteTensor"])
            ch = main["tensors"][j]["channels"]
            if ch:
                tail.alloc("Persistent TfLiteTensor quantization data",
                           *_SIZEOF["TfLiteAffineQuantization"])
                tail.alloc("Persistent TfLiteTensor quantization data", 4 + 4 * ch, 4)
    return tail.used - before


def tflm_arena_model(path: str | Path, head: int | None = None) -> TflmArenaModel:
    """A model of the ``arena_size`` the TFLite Micro interpreter needs: head plus persistent tail.

    The tail is simulated allocation by allocation in the order of
    ``MicroInterpreter::AllocateTensors`` (micro_interpreter.cc), each allocation moving the tail
    pointer down with its alignment (single_arena_buffer_allocator.cc), with the 64-bit host
    struct sizes of :data:`_SIZEOF`:

    1. the allocator objects (recording_micro_allocator.cc ``Create``; one calibrated constant);
    2. ``MicroResourceVariables`` when the model has ``VAR_HANDLE`` operators (not modelled: the
       model is then incomplete);
    3. ``StartModelAllocation`` (micro_allocator.cc): ``MicroBuiltinDataAllocator``, one
       ``SubgraphAllocations`` per subgraph, per subgraph ``TfLiteEvalTensor`` x tensors and
       ``NodeAndRegistration`` x operators;
    4. per operator its parsed builtin options, then its operator data (kernel ``Init`` /
       ``Prepare``), from :data:`KERNELS`; an operator missing there makes the tail unknown;
    5. ``FinishModelAllocation``: scratch-buffer handles (once per subgraph, as the loop does),
       variable tensors (``is_variable``, 16-byte aligned), then the plan is committed;
    6. the input and output ``TfLiteTensor*`` arrays (16-byte aligned) and one persistent
       ``TfLiteTensor`` per main-subgraph input and output, with its ``TfLiteAffineQuantization``
       and zero-point array when quantised.

    While the plan is committed (``CommitStaticMemoryPlan``) the head holds, above the tail of
    that moment, the scratch-request buffer (``(requests + 12) x ScratchBufferRequest``), the
    ``AllocationInfo`` array over every tensor of every subgraph and every scratch buffer, the
    subgraph offsets, and the GreedyMemoryPlanner's working memory (40 bytes per planned buffer:
    tensors without data, not variable, of non-zero size). The arena must hold both moments:
    ``runtime_arena = max(head + tail, planning_need)``. Temporary ``TfLiteTensor`` structs that
    kernels take during ``Prepare`` are not modelled (they are freed after each operator and, for
    the modelled kernels, smaller than the planning moment).

    Parameters
    ----------
    path : the ``.tflite`` file.
    head : bytes of the planned head; default: ``greedy_by_size`` on
        :func:`scheduling.tflite_import.tflite_problem` with every size rounded up to 16 bytes as
        TFLM's ``CreatePlan`` does (its GreedyMemoryPlanner; equal to the reported head on the
        bundled models and on a constructed IF model).

    Returns
    -------
    TflmArenaModel
        ``tail``/``runtime_arena`` are ``None`` (with ``reason``) when some kernel or resource
        variables are not modelled; never an estimate.

    Raises
    ------
    scheduling.tflite_import.TfliteImportError
        The file cannot be read.

    Notes
    -----
    Calibrated and checked against the ``tflite-micro`` interpreter (``make bench-tflm``,
    ``results/bench_tflm_arena.csv``). Differences from a device build: a 32-bit target has
    smaller structs (pointers of 4 bytes), and a build with optimised kernels (CMSIS-NN, ...)
    has other operator data and scratch buffers.
    """
    facts = _flatbuffer_facts(Path(path))
    if head is None:  # TFLM's CreatePlan rounds every buffer up to 16 bytes before planning
        from planners import Buffer, Problem, plan
        from scheduling.tflite_import import tflite_problem

        p = tflite_problem(path)
        p = Problem([Buffer(b.id, b.start, b.end, _align_up(b.size, _ARENA_ALIGN))
                     for b in p.buffers], alignment=_ARENA_ALIGN)
        head = plan(p, "greedy_by_size").arena_size if p.n else 0
    subs = facts["subgraphs"]
    unknown = sorted({op for s in subs for op in s["ops"] if op not in KERNELS})
    reasons = []
    if unknown:
        reasons.append("no verified persistent-allocation model for kernel(s) " + ", ".join(unknown))
    if facts["resource_variables"]:
        reasons.append(f"resource variables ({facts['resource_variables']} VAR_HANDLE operators; "
                       "MicroResourceVariables not modelled)")
    if any(t["bytes"] is None for s in subs for t in s["tensors"]):
        reasons.append("a tensor of unknown size (dynamic shape or unknown type)")
    reached, todo = {0}, [0]
    while todo:
        for c in subs[todo.pop()]["calls"] - reached:
            reached.add(c)
            todo.append(c)
    uncalled = sorted(set(range(len(subs))) - reached)
    if uncalled:
        reasons.append(f"subgraph(s) {uncalled} never called (how TFLM plans them is not modelled)")
    sz = _SIZEOF
    tail = _Tail()
    tail.alloc("allocator objects", _OBJECTS, 8)
    tail.alloc("MicroBuiltinDataAllocator", *sz["MicroBuiltinDataAllocator"])
    tail.alloc("SubgraphAllocations", sz["SubgraphAllocations"][0] * len(subs), 8)
    for s in subs:
        tail.alloc("TfLiteEvalTensor data", sz["TfLiteEvalTensor"][0] * len(s["tensors"]), 8)
    for s in subs:
        tail.alloc("NodeAndRegistration struct", sz["NodeAndRegistration"][0] * len(s["ops"]), 8)
    scratch = 0
    if not reasons:
        for s in subs:  # builtin options, operator by operator (PrepareNodeAndRegistration...)
            for op in s["ops"]:
                size, align = KERNELS[op][0]
                if size:
                    tail.alloc("builtin options", size, align)
        for s in subs:  # operator data (InitSubgraphs, then PrepareSubgraphs)
            for op in s["ops"]:
                for size in KERNELS[op][1]:
                    tail.alloc("Persistent buffer data", size, _ARENA_ALIGN)
                scratch += KERNELS[op][2]
    for s in subs:  # FinishModelAllocation, per subgraph
        if scratch:
            tail.alloc("scratch buffer handles", sz["ScratchBufferHandle"][0] * scratch, 8)
        for t in s["tensors"]:
            if t["variable"] and t["bytes"]:
                tail.alloc("variable tensor data", t["bytes"], _ARENA_ALIGN)
    at_commit = tail.used
    n_tensors = sum(len(s["tensors"]) for s in subs)
    planned = sum(1 for s in subs for t in s["tensors"]
                  if not t["data"] and not t["variable"] and t["bytes"])
    work = _align_up(sz["ScratchBufferRequest"][0] * (scratch + _MAX_SCRATCH_PER_OP), _ARENA_ALIGN)
    work = _align_up(work + sz["AllocationInfo"][0] * (n_tensors + scratch), 8)
    work = _align_up(work + 8 * len(subs), _ARENA_ALIGN)
    work += sz["GreedyPlannerPerBuffer"][0] * (planned + scratch)
    before_io = tail.used
    _io_tensors(tail, subs)
    post = tail.used - before_io
    if reasons:  # the tail position is unknown: both possible paddings after the commit
        post = tuple(_io_tensors(_Tail(start), subs) for start in (0, 8))
        return TflmArenaModel(int(head), None, None, None, tuple(unknown), dict(tail.parts),
                              "; ".join(reasons), work, post)
    planning = at_commit + work
    return TflmArenaModel(int(head), tail.used, planning, max(int(head) + tail.used, planning),
                          (), dict(tail.parts), "", work, post)


def runtime_arena(path: str | Path, measure: bool = True) -> dict:
    """The ``arena_size`` a TFLite Micro interpreter needs for ``path``, and where the number
    comes from (the ``runtime_arena*`` fields of ``memplan plan MODEL.tflite --json``).

    Returns ``{"tflm_head", "runtime_arena", "runtime_arena_source", "runtime_arena_model",
    "runtime_arena_note"}`` (bytes). ``runtime_arena_source`` is ``"model"`` when
    :func:`tflm_arena_model` covers every kernel of the model; else ``"measured"`` (the smallest
    ``arena_size`` the ``tflite-micro`` interpreter accepts, :func:`tflm_min_arena`) when
    ``measure`` and ``tflite-micro`` is installed, the model's value (``None``) beside it; else
    ``runtime_arena`` is ``None``. ``runtime_arena_note`` says why the model is incomplete or why
    nothing was measured. Never an estimate.
    """
    m = tflm_arena_model(path)
    out = {"tflm_head": m.head, "runtime_arena": m.runtime_arena,
           "runtime_arena_source": "model" if m.runtime_arena is not None else None,
           "runtime_arena_model": m.runtime_arena, "runtime_arena_note": m.reason}
    if m.runtime_arena is None and measure:
        ok, why = tflm_available()
        if ok:
            out["runtime_arena"] = tflm_min_arena(path)
            out["runtime_arena_source"] = "measured"
        else:
            out["runtime_arena_note"] = f"{m.reason}; not measured: {why}"
    return out
