"""TFLite Micro as an oracle: the arena that TFLite Micro's own planner reports for a model.

The optional ``tflite-micro`` PyPI package (``pip install 'memplan[tflite]'``) ships the TFLM
interpreter as a Python extension. Its ``Interpreter`` is built with the recording allocator
(``InterpreterConfig.kAllocationRecording``); ``print_allocations()`` prints, from C, lines such as::

    [RecordingMicroAllocator] Arena allocation total 20432 bytes
    [RecordingMicroAllocator] Arena allocation head 3648 bytes
    [RecordingMicroAllocator] Arena allocation tail 16784 bytes

The **head** is the non-persistent part of the arena: the activation buffers placed by TFLM's
``GreedyMemoryPlanner`` (16-byte alignment; the same area is used temporarily for node
structures during ``AllocateTensors``, so the head is ``max`` of the two). The **tail** holds
persistent data (tensor structs, quantisation parameters, variables, operator data, scratch
handles).

The interpreter prints from C to file descriptor 1, so :func:`tflm_arena` runs it in a child
Python process and parses that process's output (robust against the C library's buffering and the
interpreter aborting on an unsupported operator).

The reported total is not always enough: :func:`tflm_min_arena` bisects the smallest
``arena_size`` the interpreter accepts (on three of the four pymicro-wakeword models it is above
the reported total, because committing the plan needs temporary working memory in the head).

What is **modelled**, from the flatbuffer and TFLM's source, never from memplan's planning view
of the model (:mod:`scheduling.tflite_import`):

* :func:`tflm_head`: TFLM's own planner (:mod:`planners.tflm_greedy`, greedy_memory_planner.cc)
  on TFLM's own lifetimes of every tensor of every subgraph (:func:`tflm_head_problem`, from
  :func:`experiments.runtimes.tflm.offline.tflm_lifetimes`, a transcription of
  ``AllocationInfoBuilder::MarkAllocationLifetimes``): nothing folded, variables in the tail,
  shared callees live from their first call to their last, unread outputs, untouched tensors and
  unused inputs with the lifetimes TFLM gives them;
* :func:`tflm_arena_model`: the persistent tail, simulated allocation by allocation with TFLM's
  64-bit struct sizes and the verified kernels of :data:`KERNELS`, and the three moments the
  arena must hold (each kernel's ``Prepare`` with its temporary tensors, the plan commit, the
  end), replayed on an arena whose end need not be 16-aligned. Where every kernel is modelled
  its ``runtime_arena`` equals :func:`tflm_min_arena` byte for byte.

What is **measured**: :func:`runtime_arena` reports the model where it covers every kernel
(source ``"model"``), else the interpreter's bisected minimum and reported head (source
``"measured"``). ``make bench-tflm`` compares the two.

What is **refused**: a number is given only where the interpreter runs the model. Where TFLM's
own checks refuse it at every arena size -- a kernel's ``Prepare`` (CONCATENATION: at most
``kMaxInputNum`` = 10 inputs, ...), an output with a dimension ``<= 0`` (``CheckDynamicTensors``:
a zero-size dimension is a dynamic tensor), an operator without a registration, a tensor type a
kernel does not take -- :func:`runtime_arena` gives ``runtime_refusal``, one line quoting what the
interpreter printed (:class:`TflmRefused`, :func:`runtime_reason`; the probes capture its file
descriptors 1 and 2), or, without the interpreter, the transcribed check (:func:`tflm_refusal`).
An operator outside the verified domain of its kernel (another mix of tensor types, another
number of inputs) is not modelled: measured.
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
from typing import NamedTuple

from experiments.runtimes.tflm.interpreter import (
    TflmArena,
    TflmRefused,
    TflmUnavailable,
    arena_too_small,
    parse_allocations,
    runtime_reason,
    tflm_available,
)
from experiments.runtimes.tflm.offline import tflm_head_problem

__all__ = ["TflmUnavailable", "TflmRefused", "runtime_reason", "arena_too_small", "TflmArena", "tflm_available", "tflm_arena", "parse_allocations",
           "tflm_min_arena", "parse_breakdown", "TflmArenaModel", "tflm_arena_model", "KERNELS",
           "runtime_arena", "Kernel", "tflm_head", "tflm_head_problem", "tflm_refusal"]

_SCRIPT = r"""
import ctypes, sys
from tflite_micro.python.tflite_micro import runtime
try:
    it = runtime.Interpreter.from_file(sys.argv[1], arena_size=int(sys.argv[2]))
except Exception as e:
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)
    print("MEMPLAN_ERROR " + str(e).replace("\n", " "), flush=True)
    sys.exit(3)
sys.stdout.flush()
it.print_allocations()
"""

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


@functools.lru_cache(maxsize=256)
def _cached(path: str, digest: str, arena_size: int, timeout: float) -> TflmArena:
    r = subprocess.run([sys.executable, "-c", _SCRIPT, path, str(arena_size)],
                       capture_output=True, text=True, timeout=timeout)
    try:
        return parse_allocations(r.stdout + "\n" + r.stderr)
    except ValueError:
        pass
    error = next((ln[len("MEMPLAN_ERROR "):] for ln in r.stdout.splitlines()
                  if ln.startswith("MEMPLAN_ERROR ")), "")
    printed = "\n".join(ln for ln in r.stdout.splitlines() if not ln.startswith("MEMPLAN_ERROR "))
    if r.returncode == 3:  # the interpreter refused; stderr holds only C messages then
        printed += "\n" + r.stderr
    else:  # a crash or a Python error: the last lines of stderr say which
        printed += "\n" + "\n".join(r.stderr.strip().splitlines()[-3:])
    why = runtime_reason(printed, error or f"exit {r.returncode}")
    stage = "build" if r.returncode == 3 else "crash"
    if arena_too_small(printed):
        raise TflmUnavailable(f"{path}: TFLite Micro rejects the model at arena_size {arena_size} "
                              f"bytes, the arena too small (exit {r.returncode}): {why}")
    raise TflmRefused(f"{path}: TFLite Micro refuses the model ({stage}, arena_size "
                      f"{arena_size} bytes, exit {r.returncode}): {why}", why, stage)


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
    TflmRefused
        The interpreter refuses the model (a kernel's check, an operator without a registration,
        a dynamic tensor, a crash); the message quotes what it printed, in one line.
    TflmUnavailable
        ``tflite-micro`` missing, or the arena given is too small.

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
    ``arena_size`` bytes (:func:`experiments.runtimes.tflm.probe.accepts`, a persistent worker)."""
    from experiments.runtimes.tflm.probe import accepts

    return accepts(path, arena_size, timeout)


@functools.lru_cache(maxsize=1024)
def _cached_min(path: str, digest: str, hi: int, timeout: float) -> int:
    from experiments.runtimes.tflm.probe import min_arena

    return min_arena(path, hi, timeout)


def tflm_min_arena(path: str | Path, timeout: float = 120.0) -> int:
    """The smallest ``arena_size`` (bytes) with which the TFLite Micro interpreter both builds
    the model at ``path`` (``AllocateTensors`` succeeds) and invokes it once with every input
    zero, by bisection (:func:`experiments.runtimes.tflm.probe.min_arena`).

    The search starts from the ``total`` the recording allocator reports for a large arena
    (:func:`experiments.runtimes.tflm.probe.report`), doubled until accepted (the report can be short of
    the need: on the pymicro-wakeword models the reported total is rejected as ``arena_size``);
    the lower end is 0. Probes go to one persistent child process
    (:class:`experiments.runtimes.tflm.probe.ProbeWorker`); a probe that fails or crashes (the
    interpreter can segfault on a slightly short arena) counts as rejected and the worker is
    restarted. Assumes acceptance is monotone in ``arena_size`` (a larger arena never fails
    where a smaller one succeeds), which holds for TFLM's two-ended arena: every allocation
    either fits between head and tail or not, independently of the bytes beyond; checked at the
    end (the minimum accepted, one byte less rejected, both re-probed).

    Raises
    ------
    TflmRefused
        The interpreter refuses the model for another reason than the arena's size (the message
        and ``reason`` quote the interpreter, :func:`experiments.runtimes.tflm.probe.report`).
    TflmUnavailable
        ``tflite-micro`` missing, the interpreter rejects every size tried, a probe takes
        longer than ``timeout`` seconds, or the monotonicity check fails.

    Notes
    -----
    About ``log2(total) + 3`` probes (a few milliseconds each once the worker runs), cached per
    file content.
    """
    from experiments.runtimes.tflm.probe import report

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

class Kernel(NamedTuple):
    """What one TFLM reference kernel allocates while ``AllocateTensors`` runs (bytes).

    ``options``: the builtin options struct ``(size, alignment)`` that ``MicroBuiltinDataAllocator``
    parses into the tail (``(0, 1)``: none); ``init``: ``AllocatePersistentBuffer`` sizes in the
    kernel's ``Init`` (16-byte aligned); ``prepare``: those in its ``Prepare``; ``scratch``:
    scratch-buffer requests; ``temps``: which tensors ``Prepare`` takes as temporary
    ``TfLiteTensor`` structs (``AllocateTempInputTensor`` / ``AllocateTempOutputTensor``): ``"io"``
    every input (index >= 0) then every output, ``"first"`` the first input only, ``"in2"`` the
    first two inputs, ``"i0o"`` the first input and the first output, ``"i0o+i"`` the first input,
    the first output, then every input again (CONCATENATION), ``"i0+io"`` the first input, then every
    input and output (TANH), ``""`` none. ``types``: the tensor types (of the operator's first
    input; every other non-bias input must have the same) for which the entry was checked;
    ``None``: any. ``per_channel``: the weights input (or -1): weights of another type than the
    first input, or quantised per channel (more than one scale), are not modelled.
    """

    options: tuple[int, int]
    init: tuple[int, ...]
    prepare: tuple[int, ...]
    scratch: int
    temps: str
    types: frozenset | None = None
    per_channel: int = -1


def _temp_indices(temps: str, inputs: list, outputs: list) -> list:
    """The tensors a kernel's ``Prepare`` takes as temporaries (:class:`Kernel` ``temps``); an
    omitted optional input (index -1) takes none (``AllocateTempInputTensor`` returns null)."""
    ins = [i for i in inputs if i >= 0]
    first = [i for i in inputs[:1] if i >= 0]
    return {"io": ins + list(outputs), "first": first, "i0+io": first + ins + list(outputs),
            "in2": [i for i in inputs[:2] if i >= 0], "i0o": first + list(outputs[:1]),
            "i0o+i": first + list(outputs[:1]) + ins, "": []}[temps]


#: The TFLM reference kernels whose allocations are modelled, each checked against the
#: ``tflite-micro`` interpreter (``tests/test_tflm_cases.py`` builds models of each and compares
#: the bisected minimum); the kernel source named beside each. Any other kernel makes the model
#: incomplete (it is never guessed) and ``runtime_arena`` is measured.
_F32_I8 = frozenset({"FLOAT32", "INT8"})
_F32_I8_I32 = frozenset({"FLOAT32", "INT8", "INT32"})
KERNELS: dict[str, Kernel] = {
    # kernels/add.cc AddInit: OpDataAdd (60 bytes on LP64); add_common.cc AddPrepare takes
    # input1, input2, output as temps; builtin_op_data.h TfLiteAddParams (8, align 4)
    "ADD": Kernel((8, 4), (60,), (), 0, "io", _F32_I8_I32),
    # kernels/if.cc IfInit: OpData {then, else subgraph index}; IfPrepare takes the condition
    # as a temp; TfLiteIfParams (8, align 4)
    "IF": Kernel((8, 4), (8,), (), 0, "first"),
    # kernels/call_once.cc CallOnceInit: OpData {init_subgraph_index, has_run}; no temps;
    # TfLiteCallOnceParams (4, align 4)
    "CALL_ONCE": Kernel((4, 4), (8,), (), 0, ""),
    # kernels/while.cc WhileInit: OpData {cond, body subgraph index}; WhilePrepare takes no
    # temps; TfLiteWhileParams (8, align 4)
    "WHILE": Kernel((8, 4), (8,), (), 0, ""),
    # kernels/activations.cc ReluInit: ReluOpData {ReluParams} (types.h: ActivationParams
    # {type, quantized min, max} 12 + 16 = 28 bytes, the 28 the recording allocator reports);
    # activations_common.cc ReluPrepare: input, output; no builtin options
    "RELU": Kernel((0, 1), (28,), (), 0, "io", _F32_I8),
    # activations.cc Relu6Init: Relu6OpData {six, zero} (8 bytes); Relu6Prepare: input only
    "RELU6": Kernel((0, 1), (8,), (), 0, "first", _F32_I8),
    # kernels/tanh.cc TanhInit: OpData (16 bytes); TanhPrepare takes the input, then
    # CalculateArithmeticOpData the input and the output again; no builtin options
    "TANH": Kernel((0, 1), (16,), (), 0, "i0+io", _F32_I8),
    # kernels/mul_common.cc MulInit: OpDataMul (mul.h, 36 bytes); MulPrepare: input1, input2,
    # output; TfLiteMulParams (4, align 4)
    "MUL": Kernel((4, 4), (36,), (), 0, "io", _F32_I8),
    # kernels/sub.cc SubInit: OpDataSub (sub.h, 52 bytes); sub_common.cc SubPrepare: input1,
    # input2, output; TfLiteSubParams (8, align 4)
    "SUB": Kernel((8, 4), (52,), (), 0, "io", _F32_I8),
    # kernels/fully_connected.cc FullyConnectedInit: OpDataFullyConnected (fully_connected.h: 64
    # bytes on LP64, 72 with the two scratch indices of USE_TFLM_COMPRESSION, which the
    # tflite-micro Python package is built with); FullyConnectedPrepare: input, filter, bias
    # (when present), output; float and int8 with per-tensor weights (per-channel weights make
    # CalculateOpDataFullyConnected allocate multiplier and shift arrays, and the installed
    # build needs 48 bytes more than that model on a tested model: not modelled; an int4
    # filter's scratch buffer neither);
    # TfLiteFullyConnectedParams: 16 bytes in the mirrored builtin_op_data.h, but the installed
    # build's schema adds FullyConnectedOptions.quantSpec and its tail grows by 16 bytes more
    # per operator (measured on one and two FULLY_CONNECTED, with and without bias): (32, 8)
    "FULLY_CONNECTED": Kernel((32, 8), (72,), (), 0, "io", _F32_I8, per_channel=1),
    # kernels/reshape.cc: no Init; reshape_common.cc PrepareReshapeReference: input, output;
    # TfLiteReshapeParams (int32 shape[8] + int, 36, align 4)
    "RESHAPE": Kernel((36, 4), (), (), 0, "i0o", _F32_I8),
    # kernels/concatenation.cc ConcatenationInit: OpData {ConcatenationParams} (40 bytes on
    # LP64, + int scratch_indices[kMaxInputNum = 10] under USE_TFLM_COMPRESSION: 80);
    # ConcatenationPrepare: input 0, output, then every input; TfLiteConcatenationParams
    # (8, align 4)
    "CONCATENATION": Kernel((8, 4), (80,), (), 0, "i0o+i", _F32_I8),
    # kernels/logistic.cc LogisticInit: OpDataLogistic (16 bytes); logistic_common.cc: input,
    # output; no builtin options
    "LOGISTIC": Kernel((0, 1), (16,), (), 0, "io", _F32_I8),
    # kernels/elementwise.cc ElementWiseAbsRsqrtInit: OpDataAbsRsqrt (28 bytes);
    # PrepareAbsRsqrt: input, output; no builtin options
    "ABS": Kernel((0, 1), (28,), (), 0, "io", _F32_I8),
    # kernels/comparisons.cc Init: OpData {ComparisonParams} (32 bytes); ComparisonsPrepare:
    # input1, input2; no builtin options
    "LESS": Kernel((0, 1), (32,), (), 0, "in2", _F32_I8_I32),
    # kernels/maximum_minimum.cc: no Init, no Prepare, no builtin options
    "MAXIMUM": Kernel((0, 1), (), (), 0, "", _F32_I8),
    "MINIMUM": Kernel((0, 1), (), (), 0, "", _F32_I8),
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
        #: the allocator's steps, replayed by :func:`_fits` on an arena of a given size
        self.events: list[tuple] = []

    def alloc(self, part: str, size: int, alignment: int) -> None:
        """Take ``size`` bytes for ``part`` and round the tail up to ``alignment`` bytes."""
        before = self.used
        self.used = _align_up(self.used + int(size), int(alignment))
        self.parts[part] = self.parts.get(part, 0) + self.used - before
        self.events.append(("tail", int(size), int(alignment)))


def _fits(events: list, arena_size: int) -> bool:
    """Whether the allocator steps ``events`` succeed in an arena of ``arena_size`` bytes whose
    start is 16-byte aligned (the interpreter's ``new uint8_t[]``) and whose end is not aligned
    (``SingleArenaBufferAllocator`` starts its tail at ``buffer + size``; the first allocations
    align 8). Steps: ``("tail", size, alignment)``: ``AllocatePersistentBuffer``, fails below the
    head; ``("head", bytes)``: the resizable head buffer (``ResizeBuffer``, fails above the tail);
    ``("temp", end)``: temporaries up to byte ``end`` (``AllocateTemp``); ``("plan", end,
    buffers)``: the planner's working memory, ``align_down(tail, 16) - align_up(end, 16) >= 40 x
    buffers`` (``CommitStaticMemoryPlan``, ``GreedyMemoryPlanner::Init``)."""
    tail, head = int(arena_size), 0
    for ev in events:
        if ev[0] == "tail":
            tail = (tail - ev[1]) // ev[2] * ev[2]
            if tail < head:
                return False
        elif ev[0] == "head":
            head = ev[1]
            if head > tail:
                return False
        elif ev[0] == "temp":
            if ev[1] > tail:
                return False
        elif (tail // _ARENA_ALIGN * _ARENA_ALIGN - _align_up(ev[1], _ARENA_ALIGN)
              < _SIZEOF["GreedyPlannerPerBuffer"][0] * ev[2]):
            return False
    return True


@dataclass(frozen=True)
class TflmArenaModel:
    """The modelled TFLite Micro arena of one model (bytes; see :func:`tflm_arena_model`).

    ``head``: the planned non-persistent head (:func:`tflm_head`: TFLM's GreedyMemoryPlanner on
    TFLM's lifetimes of every subgraph's tensors); ``None`` when a tensor's size is unknown. ``tail``: the persistent tail after
    ``AllocateTensors``, or ``None`` when a kernel is not modelled. ``planning_need``: tail at
    plan time + the planner's temporary working memory. ``prepare_need``: the largest moment of
    the kernels' ``Prepare`` (tail of that moment + scratch-request area + temporary tensor
    structs), or ``None``. ``runtime_arena``: ``max(head + tail, planning_need, prepare_need)``,
    or ``None``. ``unknown_kernels``: the operators whose allocations are not modelled.
    ``parts``: bytes per kind of allocation (the known ones). ``planning_work``: head bytes the
    plan commit needs above the tail of that moment (scratch requests of unknown kernels counted
    as none); ``post_commit``: tail bytes allocated after the commit (input/output tensor
    structs); where the tail is not modelled, a pair: those bytes when the commit-time tail is
    16-aligned and when it is 8 bytes off (the input/output arrays are 16-byte aligned).
    ``refusal``: why the interpreter refuses the model at every arena size, by the transcribed
    checks of :func:`tflm_refusal` (then every number is ``None``), else ``""``.
    """

    head: int | None
    tail: int | None
    planning_need: int | None
    runtime_arena: int | None
    unknown_kernels: tuple[str, ...]
    parts: dict
    reason: str = ""
    planning_work: int = 0
    post_commit: int | tuple[int, int] = 0
    prepare_need: int | None = None
    refusal: str = ""


def _flatbuffer_facts(path: Path) -> dict:
    """What the arena model reads from the flatbuffer (all subgraphs)."""
    from scheduling.tflite_import import (
        _TYPES,
        TfliteImportError,
        _called_subgraphs,
        _enum_names,
        operator_type,
        tensor_has_data,
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
            has = tensor_has_data(model, t)
            code = type_names.get(t.Type())
            item = _TYPES[code][1] if code in _TYPES else None
            shape = t.ShapeAsNumpy().tolist() if t.ShapeLength() else []
            nbytes = None if item is None or any(d < 0 for d in shape) else int(
                math.ceil(math.prod(shape) * item))
            q = t.Quantization()
            channels = q.ScaleLength() if q is not None and q.ZeroPointLength() > 0 else 0
            scale = float(q.Scale(0)) if q is not None and q.ScaleLength() else None
            zero = int(q.ZeroPoint(0)) if q is not None and q.ZeroPointLength() else None
            tensors.append({"data": has, "variable": bool(t.IsVariable()), "bytes": nbytes,
                            "channels": channels, "type": code, "shape": shape,
                            "scale": scale, "zero_point": zero})
        ops = []
        for oi in range(sg.OperatorsLength()):
            op = sg.Operators(oi)
            name = operator_type(model, op, op_names)
            activation, axis = _concat_options(op, name)
            ops.append({"type": name,
                        "inputs": op.InputsAsNumpy().tolist() if op.InputsLength() else [],
                        "outputs": op.OutputsAsNumpy().tolist() if op.OutputsLength() else [],
                        "activation": activation, "axis": axis})
        called = set()
        for oi, op in enumerate(ops):
            op["callees"] = list(_called_subgraphs(path, model, sg.Operators(oi), op["type"],
                                                   model.SubgraphsLength(), ()) or ())
            called.update(op["callees"])
        sub = {
            "tensors": tensors, "ops": [op["type"] for op in ops], "op_io": ops, "calls": called,
            "inputs": sg.InputsAsNumpy().tolist() if sg.InputsLength() else [],
            "outputs": sg.OutputsAsNumpy().tolist() if sg.OutputsLength() else [],
        }
        n = len(tensors)
        refs = [(f"subgraph {s} {key}", sub[key], 0) for key in ("inputs", "outputs")]
        refs += [(f"operator {oi} ({op['type']}) of subgraph {s} {key}", op[key], lo)
                 for oi, op in enumerate(ops) for key, lo in (("inputs", -1), ("outputs", 0))]
        for what, idx, lo in refs:
            bad = [i for i in idx if not lo <= i < n]
            if bad:
                raise TfliteImportError(f"{path}: {what} name tensor(s) {bad}, but subgraph {s} "
                                        f"has {n} tensors")
        subs.append(sub)
    for sub in subs:  # what each called subgraph takes and gives: (shape, type) per tensor
        for op in sub["op_io"]:
            op["callee_io"] = [
                {key: [(subs[c]["tensors"][j]["shape"], subs[c]["tensors"][j]["type"])
                       for j in subs[c][key]] for key in ("inputs", "outputs")}
                for c in op["callees"]]
    return {"subgraphs": subs, "resource_variables": sum(
        op == "VAR_HANDLE" for s in subs for op in s["ops"])}


def _concat_options(op, otype: str) -> tuple[int | None, int | None]:
    """``(fused_activation_function, axis)`` of a ``CONCATENATION`` operator, read from its
    options table once (``(0, 0)``, ``NONE`` and axis 0, when the table is absent;
    ``(None, None)`` for another operator)."""
    if otype != "CONCATENATION":
        return None, None
    import tflite

    table = op.BuiltinOptions()
    if table is None:
        return 0, 0
    opts = tflite.ConcatenationOptions()
    opts.Init(table.Bytes, table.Pos)
    return int(opts.FusedActivationFunction()), int(opts.Axis())


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


def _temp_tensors(start: int, tensors: list, indices) -> int:
    """Where the temp section ends after ``AllocateTempTfLiteTensor`` of ``indices`` starting at
    byte ``start`` of the head (micro_allocator.cc): a ``TfLiteTensor`` (8-aligned) each, and for a
    quantised tensor its ``TfLiteAffineQuantization`` and zero-point ``TfLiteIntArray``
    (``InitializeTfLiteTensorFromFlatbuffer`` with ``allocate_temp``). Bytes from the arena
    start (``AllocateTemp`` aligns each pointer up)."""
    top = start
    for j in indices:
        size, align = _SIZEOF["TfLiteTensor"]
        top = _align_up(top, align) + size
        ch = tensors[j]["channels"]
        if ch:
            size, align = _SIZEOF["TfLiteAffineQuantization"]
            top = _align_up(top, align) + size
            top = _align_up(top, 4) + 4 + 4 * ch
    return top


#: The verified domain of the modelled kernels beyond the first input's type: which tensors must
#: share the first input's type (``"io"`` every input and output, ``"i0o"`` the first input and
#: the outputs, ``"in"`` the inputs) and the numbers of inputs (min, max; ``None``: any) and
#: outputs. An operator outside it is not modelled (its allocations or its kernel's checks were
#: not verified there) and ``runtime_arena`` is measured.
_DOMAIN: dict[str, tuple[str, int, int | None, int]] = {
    **{k: ("io", 2, 2, 1) for k in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")},
    **{k: ("io", 1, 1, 1) for k in ("RELU", "RELU6", "TANH", "LOGISTIC", "ABS")},
    "RESHAPE": ("i0o", 1, 2, 1), "CONCATENATION": ("io", 1, None, 1),
    "FULLY_CONNECTED": ("i0o", 2, 3, 1), "LESS": ("in", 2, 2, 1),
}


def _kernel_key(sub: dict, op: dict, shapes: bool = True) -> str:
    """The :data:`KERNELS` key of ``op``: its type, or ``"TYPE (...)"`` when the entry was not
    checked for the tensor type of its first input, for the mix of types, the quantisation or
    the number of tensors the operator has (:data:`_DOMAIN`), or, with ``shapes``, for its
    shapes (:func:`_shapes_verified`); then it is not modelled."""
    k = KERNELS.get(op["type"])
    if k is None:
        return op["type"]
    if k.types is None:  # the control-flow kernels
        if shapes and not _control_flow_refusal(sub, op) and not _shapes_verified(sub, op):
            return f"{op['type']} (operands unlike the called subgraphs' tensors)"
        return op["type"]
    first = next((i for i in op["inputs"] if i >= 0), None)
    t = sub["tensors"][first]["type"] if first is not None else None
    if t not in k.types:
        return f"{op['type']} ({t})"
    same, lo, hi, n_out = _DOMAIN.get(op["type"], ("", 0, None, len(op["outputs"])))
    n_in = len(op["inputs"])
    if n_in < lo or (hi is not None and n_in > hi) or len(op["outputs"]) != n_out:
        return f"{op['type']} ({n_in} inputs, {len(op['outputs'])} outputs)"
    ins = [i for i in op["inputs"] if i >= 0]
    share = {"io": ins + op["outputs"], "i0o": ins[:1] + op["outputs"], "in": ins}.get(same, [])
    mixed = sorted({str(sub["tensors"][j]["type"]) for j in share} - {t})
    if mixed:
        return f"{op['type']} ({t} with {', '.join(mixed)})"
    # verified: int8 tensors quantised (per tensor or per channel), int32 ones not (int8
    # kernels without quantisation fail a check or abort; quantised int32 ADD is refused)
    tens = {j: sub["tensors"][j] for j in (*ins, *op["outputs"]) if j >= 0}
    if any(x["type"] == "INT8" and not x["channels"] for x in tens.values()):
        return f"{op['type']} (INT8 without quantization)"
    bias = op["inputs"][2:3] if op["type"] == "FULLY_CONNECTED" else []
    if any(x["type"] == "INT32" and x["channels"] for j, x in tens.items() if j not in bias):
        return f"{op['type']} (quantized INT32)"
    if k.per_channel >= 0 and len(op["inputs"]) > k.per_channel:
        w = op["inputs"][k.per_channel]
        wt = sub["tensors"][w]["type"] if w >= 0 else t
        if wt != t:  # e.g. an int4 filter: unpacked into a scratch buffer, not modelled
            return f"{op['type']} ({t}, weights {wt})"
        if w >= 0 and sub["tensors"][w]["channels"] > 1:
            return f"{op['type']} (per-channel weights)"
    if shapes and not _shapes_verified(sub, op):
        return f"{op['type']} (shapes {[sub['tensors'][j]['shape'] for j in ins]} -> " \
               f"{[sub['tensors'][j]['shape'] for j in op['outputs']]})"
    return op["type"]


def _shapes_verified(sub: dict, op: dict) -> bool:
    """Whether ``op``'s shapes are those its kernel computes, where the arena model's numbers
    were checked: an elementwise operator's output has the broadcast shape of its inputs (a
    unary one its input's), CONCATENATION's inputs agree off the axis and sum to the output on
    it, FULLY_CONNECTED's output holds ``input elements / n x units`` for weights ``[units,
    n]``. Elsewhere the interpreter aborts at ``Invoke`` (TFLITE_CHECK of the reference kernels)
    or computes something else, and memplan claims nothing. RESHAPE's shapes are its
    ``Prepare``'s checks (:func:`_reshape_output`). IF and WHILE: their operands and results
    have the shapes and types of every called subgraph's inputs and outputs (the condition
    aside; the kernels copy them tensor by tensor)."""
    t = op["type"]
    if t in ("IF", "WHILE"):
        mine = [(sub["tensors"][j]["shape"], sub["tensors"][j]["type"]) if j >= 0 else None
                for j in op["inputs"][1 if t == "IF" else 0:]]
        outs = [(sub["tensors"][j]["shape"], sub["tensors"][j]["type"]) for j in op["outputs"]]
        callees = op["callee_io"] if t == "IF" else op["callee_io"][1:]
        return all(c["inputs"] == mine and c["outputs"] == outs for c in callees) and (
            t == "IF" or op["callee_io"][0]["inputs"] == mine)
    sh = [list(sub["tensors"][j]["shape"]) for j in op["inputs"] if j >= 0]
    out = [list(sub["tensors"][j]["shape"]) for j in op["outputs"] if j >= 0]
    if any(d < 0 for x in sh + out for d in x):
        return False
    if t in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "LESS"):
        rank = max(len(x) for x in sh)
        padded = [[1] * (rank - len(x)) + x for x in sh]
        want = []
        for dims in zip(*padded, strict=True):
            big = {d for d in dims if d != 1}
            if len(big) > 1:
                return False
            want.append(big.pop() if big else 1)
        return out[0] == want
    if t in ("RELU", "RELU6", "TANH", "LOGISTIC", "ABS"):
        return out[0] == sh[0]
    if t == "CONCATENATION":
        axis = op.get("axis", 0)
        rank = len(out[0])
        if not -rank <= axis < rank or any(len(x) != rank for x in sh):
            return False
        axis %= rank
        off = [x[:axis] + x[axis + 1:] for x in sh + out]
        return all(o == off[0] for o in off) and sum(x[axis] for x in sh) == out[0][axis]
    if t == "FULLY_CONNECTED":
        w = sh[1]
        if len(w) != 2 or not w[1] or math.prod(sh[0]) % w[1]:
            return False
        return math.prod(out[0]) == math.prod(sh[0]) // w[1] * w[0]
    return True


#: RuntimeShape::kMaxSmallSize (runtime_shape.h): CONCATENATION refuses inputs of higher rank.
_MAX_SMALL_SIZE = 6
#: kMaxInputNum (concatenation.cc): CONCATENATION refuses more inputs.
_CONCAT_MAX_INPUTS = 10


def _kernel_refusal(sub: dict, op: dict) -> str:
    """The check of a modelled kernel's ``Prepare`` that fails on ``op``, as the TFLM source
    states it (``""``: none of the transcribed checks fails). Transcribed: CONCATENATION
    (concatenation.cc ``ConcatenationPrepare``: fused activation ``NONE``, at most
    ``kMaxInputNum`` = 10 inputs, every input of rank <= ``kMaxSmallSize`` = 6, an int8 input's
    scale and zero point equal to the output's), RESHAPE (reshape_common.cc
    ``ReshapeOutput``: at most one ``-1``, as many output elements as input elements) and the
    control-flow kernels (:func:`_control_flow_refusal`)."""
    tensors, ins = sub["tensors"], [i for i in op["inputs"] if i >= 0]
    if op["type"] == "RESHAPE":
        return _reshape_output(sub, op)[0]
    if op["type"] in ("IF", "WHILE", "CALL_ONCE"):
        return _control_flow_refusal(sub, op)
    if op["type"] != "CONCATENATION":
        return ""
    if op["activation"]:
        return ("concatenation.cc ConcatenationPrepare: params->activation == kTfLiteActNone "
                f"fails (fused activation {op['activation']})")
    if len(op["inputs"]) > _CONCAT_MAX_INPUTS:
        return (f"concatenation.cc ConcatenationPrepare: num_inputs <= kMaxInputNum fails "
                f"({len(op['inputs'])} inputs, kMaxInputNum = {_CONCAT_MAX_INPUTS})")
    out = tensors[op["outputs"][0]]
    for i in ins:
        if len(tensors[i]["shape"]) > _MAX_SMALL_SIZE:
            return (f"concatenation.cc ConcatenationPrepare: input tensor {i} has "
                    f"{len(tensors[i]['shape'])} dimensions (at most kMaxSmallSize = "
                    f"{_MAX_SMALL_SIZE})")
        if tensors[i]["type"] == "INT8" and (tensors[i]["scale"], tensors[i]["zero_point"]) != (
                out["scale"], out["zero_point"]):
            return (f"concatenation.cc ConcatenationPrepare: int8 input tensor {i}'s scale and "
                    "zero point must equal the output's (no re-scaling)")
    return ""


def _control_flow_refusal(sub: dict, op: dict) -> str:
    """The ``Prepare`` checks of IF (if.cc ``IfPrepare``: a condition input, of type bool, one
    element; as many other inputs as the then-branch takes, as many outputs as it gives), WHILE
    (while.cc ``WhilePrepare``: inputs == cond's inputs == body's inputs == outputs == body's
    outputs) and CALL_ONCE (call_once.cc ``CallOncePrepare``: no inputs, no outputs) that fail on
    ``op`` (``""``: none). The subgraph indices are checked when the file is read."""
    t, n_in, n_out, io = op["type"], len(op["inputs"]), len(op["outputs"]), op["callee_io"]
    if t == "CALL_ONCE":
        if n_in or n_out:
            return ("call_once.cc CallOncePrepare: NumInputs(node) == 0 and NumOutputs(node) "
                    f"== 0 fail ({n_in} inputs, {n_out} outputs)")
        return ""
    if t == "IF":
        if not n_in:
            return "if.cc IfPrepare: node->inputs->size > 0 fails"
        cond = sub["tensors"][op["inputs"][0]] if op["inputs"][0] >= 0 else None
        if cond is None or cond["type"] != "BOOL":
            return ("if.cc IfPrepare: cond->type == kTfLiteBool fails (condition "
                    f"{None if cond is None else cond['type']})")
        if math.prod(cond["shape"]) != 1:
            return f"if.cc IfPrepare: NumElements(cond) == 1 fails (shape {cond['shape']})"
        if n_in - 1 != len(io[0]["inputs"]) or n_out != len(io[0]["outputs"]):
            return (f"if.cc IfPrepare: {n_in - 1} inputs and {n_out} outputs, the then-branch "
                    f"takes {len(io[0]['inputs'])} and gives {len(io[0]['outputs'])}")
        return ""
    counts = (n_in, len(io[0]["inputs"]), len(io[1]["inputs"]), n_out, len(io[1]["outputs"]))
    if len(set(counts)) > 1:
        return ("while.cc WhilePrepare: inputs, cond's inputs, body's inputs, outputs and "
                f"body's outputs must be as many: {counts}")
    return ""


def _reshape_output(sub: dict, op: dict) -> tuple[str, list | None]:
    """RESHAPE's ``Prepare`` (reshape_common.cc ``ReshapeOutput``): ``(refusal, output shape
    after Prepare)``. The legacy scalar ``[0]`` becomes ``[]`` with one input; one ``-1`` is
    set to ``input elements / other output elements``; a second ``-1``, or element counts that
    differ, refuse. ``("", None)`` where the outcome is not modelled (an input dimension
    ``< 0``; a ``-1`` beside a zero dimension, a division by zero in the kernel)."""
    tensors = sub["tensors"]
    ins = [i for i in op["inputs"] if i >= 0]
    shape = list(tensors[ins[0]]["shape"])
    if any(d < 0 for d in shape):
        return "", None
    n_in = math.prod(shape)
    out = list(tensors[op["outputs"][0]]["shape"])
    if len(op["inputs"]) == 1 and out == [0]:
        out = []
    stretch = [i for i, d in enumerate(out) if d == -1]
    if len(stretch) > 1:
        return ("reshape_common.cc ReshapeOutput: more than one -1 in the output shape "
                f"{out} (TF_LITE_ENSURE_EQ(stretch_dim, -1))"), None
    other = math.prod(d for d in out if d != -1)
    if stretch:
        if other == 0:
            return "", None
        out[stretch[0]] = n_in // other
    if math.prod(out) != n_in:
        return (f"reshape_common.cc ReshapeOutput: num_input_elements == num_output_elements "
                f"fails ({n_in} != {math.prod(out)})"), None
    return "", out


def _dynamic(shape: list) -> bool:
    """Whether TFLM takes ``shape`` as a dynamic tensor (micro_interpreter_graph.cc
    ``CheckDynamicTensors``: a dimension ``<= 0``, except the legacy scalar shape ``[0]``)."""
    return shape != [0] and any(d <= 0 for d in shape)


def tflm_refusal(subs: list) -> str:
    """Why the TFLite Micro interpreter refuses a model at every ``arena_size``, from its
    flatbuffer and TFLM's source, without running it.

    Parameters
    ----------
    subs : list
        The model's subgraphs as :func:`_flatbuffer_facts` reads them (``["subgraphs"]``).

    Returns
    -------
    str
        ``"operator I (TYPE) of subgraph S: <the TFLM check that fails, with its source
        file>"``, or ``""`` when no transcribed check fails (then the interpreter may still
        refuse an operator that is not modelled; :func:`runtime_arena` measures those).

    Notes
    -----
    Operators are visited in the order of ``MicroInterpreterGraph::PrepareSubgraphs``
    (micro_interpreter_graph.cc: subgraph by subgraph, operator by operator); for each operator
    whose kernel is modelled (:data:`KERNELS`, its types, quantisation and arity verified; its
    shapes need not be) the transcribed checks of its ``Prepare`` (:func:`_kernel_refusal`),
    then ``CheckDynamicTensors`` on its outputs (an output with a dimension ``<= 0`` other than
    the legacy scalar ``[0]``: "Dynamic tensors are not supported"; for ``RESHAPE`` on the
    dimensions its ``Prepare`` sets, :func:`_reshape_output`). Each of these fails whatever came
    before it (an earlier failure refuses the model too), so the first one found is a refusal
    (the interpreter's own message may name an earlier one). ``O(#operators + #tensors)``.
    """
    for s, sub in enumerate(subs):
        for oi, op in enumerate(sub["op_io"]):
            if _kernel_key(sub, op, shapes=False) not in KERNELS:
                continue
            why = _kernel_refusal(sub, op)
            if why:
                return f"operator {oi} ({op['type']}) of subgraph {s}: {why}"
            shapes = {j: sub["tensors"][j]["shape"] for j in op["outputs"] if j >= 0}
            if op["type"] == "RESHAPE":  # its Prepare rewrites the output's dimensions
                out = _reshape_output(sub, op)[1]
                if out is None:
                    continue
                shapes = {op["outputs"][0]: out}
            dyn = [j for j, shape in shapes.items() if _dynamic(shape)]
            if dyn:
                return (f"operator {oi} ({op['type']}) of subgraph {s}: output tensor {dyn[0]} "
                        f"has shape {shapes[dyn[0]]}, a dynamic tensor "
                        "(micro_interpreter_graph.cc CheckDynamicTensors: Dynamic tensors are "
                        "not supported)")
    return ""


def tflm_head(path: str | Path) -> int:
    """TFLite Micro's non-persistent head (bytes) for the model at ``path``: the ``tflm_greedy``
    planner (:mod:`planners.tflm_greedy`, a reproduction of greedy_memory_planner.cc) on
    :func:`tflm_head_problem`; 0 when nothing is planned. Equals the head the ``tflite-micro``
    recording allocator reports when no kernel requests scratch buffers."""
    from planners import plan

    p = tflm_head_problem(path)
    return plan(p, "tflm_greedy").arena_size if p.n else 0


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
    4. per operator its parsed builtin options, then every operator's ``Init`` data, then, operator
       by operator, its ``Prepare`` data, from :data:`KERNELS`; an operator missing there makes
       the tail unknown;
    5. ``FinishModelAllocation``: scratch-buffer handles (once per subgraph, as the loop does),
       variable tensors (``is_variable``, 16-byte aligned, in the tail), then the plan is
       committed;
    6. the input and output ``TfLiteTensor*`` arrays (16-byte aligned) and one persistent
       ``TfLiteTensor`` per main-subgraph input and output, with its ``TfLiteAffineQuantization``
       and zero-point array when quantised.

    Three moments bound the arena, and it must hold each:

    * the end: ``head + tail``;
    * the plan commit (``CommitStaticMemoryPlan``): the head then holds, above the tail of that
      moment, the scratch-request buffer (``(requests + 12) x ScratchBufferRequest``), the
      ``AllocationInfo`` array over every tensor of every subgraph and every scratch buffer, the
      subgraph offsets, and the GreedyMemoryPlanner's working memory (40 bytes per planned
      buffer, :func:`tflm_head_problem`);
    * each kernel's ``Prepare`` (``MicroInterpreterGraph::PrepareSubgraphs``): above the tail of
      that moment, the scratch-request buffer and the temporary ``TfLiteTensor`` structs the
      kernel takes (freed by ``FinishPrepareNodeAllocations`` after each operator; on tiny
      models this is the largest moment).

    ``runtime_arena = max(head + tail, planning_need, prepare_need)``.

    Parameters
    ----------
    path : the ``.tflite`` file.
    head : bytes of the planned head; default :func:`tflm_head` (TFLM's own planner on TFLM's own
        lifetimes: every tensor TFLM plans, of every subgraph, nothing constant-folded).

    Returns
    -------
    TflmArenaModel
        ``tail``/``runtime_arena`` are ``None`` (with ``reason``) when some kernel or resource
        variables are not modelled; never an estimate. Every number is ``None`` and ``refusal``
        says why when TFLM's checks refuse the model (:func:`tflm_refusal`: a kernel's input
        limit such as CONCATENATION's 10 inputs, a dynamic tensor such as an output with a
        zero-size dimension).

    Raises
    ------
    scheduling.tflite_import.TfliteImportError
        The file cannot be read.

    Notes
    -----
    Checked against the ``tflite-micro`` interpreter (``make bench-tflm``,
    ``results/bench_tflm_arena.csv``, ``tests/test_tflm_cases.py``). Differences from a device
    build: a 32-bit target has smaller structs (pointers of 4 bytes), and a build with optimised
    kernels (CMSIS-NN, ...) has other operator data and scratch buffers.
    """
    from scheduling.tflite_import import TfliteImportError

    try:
        facts = _flatbuffer_facts(Path(path))
    except TfliteImportError:
        raise
    except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
        raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: "
                                f"{e})") from None
    subs = facts["subgraphs"]
    unknown = sorted({_kernel_key(s, op) for s in subs for op in s["op_io"]
                      if _kernel_key(s, op) not in KERNELS})
    refusal = tflm_refusal(subs)
    if refusal:  # the interpreter runs no plan: no head, no tail, no arena
        return TflmArenaModel(None, None, None, None, tuple(unknown), {},
                              f"TFLite Micro refuses the model at every arena_size: {refusal}",
                              refusal=refusal)
    reasons = []
    if unknown:
        reasons.append("no verified persistent-allocation model for kernel(s) " + ", ".join(unknown))
    if facts["resource_variables"]:
        reasons.append(f"resource variables ({facts['resource_variables']} VAR_HANDLE operators; "
                       "MicroResourceVariables not modelled)")
    if any(t["bytes"] is None for s in subs for t in s["tensors"]):
        reasons.append("a tensor of unknown size (dynamic shape or unknown type)")
    from .offline import read_offline_plan

    try:
        offline = read_offline_plan(Path(path).read_bytes()) is not None
    except ValueError as e:  # a malformed entry: TFLM's own reading of it is not modelled either
        offline = True
        reasons.append(f"a malformed offline plan ({e})")
    if offline:
        reasons.append("the model carries an offline plan (OfflineMemoryAllocation metadata), "
                       "whose offsets TFLite Micro takes as given: its head is not modelled")
    if head is None and not offline and not any(t["bytes"] is None for s in subs
                                                for t in s["tensors"]):
        try:
            head = tflm_head(path)
        except Exception as e:  # noqa: BLE001 - a malformed flatbuffer fails anywhere inside
            raise TfliteImportError(f"{path}: malformed TFLite flatbuffer ({type(e).__name__}: "
                                    f"{e})") from None
    sz = _SIZEOF
    tail = _Tail()
    tail.alloc("allocator objects", _OBJECTS, 8)
    tail.alloc("MicroBuiltinDataAllocator", *sz["MicroBuiltinDataAllocator"])
    tail.events.append(("head", sz["ScratchBufferRequest"][0] * _MAX_SCRATCH_PER_OP))
    tail.alloc("SubgraphAllocations", sz["SubgraphAllocations"][0] * len(subs), 8)
    for s in subs:
        tail.alloc("TfLiteEvalTensor data", sz["TfLiteEvalTensor"][0] * len(s["tensors"]), 8)
    for s in subs:
        tail.alloc("NodeAndRegistration struct", sz["NodeAndRegistration"][0] * len(s["ops"]), 8)
    scratch = 0
    prepare_need = 0
    if not reasons:
        for s in subs:  # builtin options, operator by operator (PrepareNodeAndRegistration...)
            for op in s["ops"]:
                size, align = KERNELS[op].options
                if size:
                    tail.alloc("builtin options", size, align)
        for s in subs:  # InitSubgraphs: every operator's Init
            for op in s["ops"]:
                for size in KERNELS[op].init:
                    tail.alloc("Persistent buffer data", size, _ARENA_ALIGN)
        for s in subs:  # PrepareSubgraphs: operator by operator
            for op in s["op_io"]:
                k = KERNELS[op["type"]]
                temps = _temp_indices(k.temps, op["inputs"], op["outputs"])
                requests = _align_up(sz["ScratchBufferRequest"][0]
                                     * (scratch + _MAX_SCRATCH_PER_OP), _ARENA_ALIGN)
                end = _temp_tensors(requests, s["tensors"], temps)
                prepare_need = max(prepare_need, tail.used + end)
                tail.events.append(("temp", end))
                for size in k.prepare:  # after the temporaries (kernels take them first)
                    tail.alloc("Persistent buffer data", size, _ARENA_ALIGN)
                scratch += k.scratch
                tail.events.append(("head", sz["ScratchBufferRequest"][0]
                                    * (scratch + _MAX_SCRATCH_PER_OP)))
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
    temp_end = _align_up(sz["ScratchBufferRequest"][0] * (scratch + _MAX_SCRATCH_PER_OP), 8)
    temp_end = _align_up(temp_end + 8 * len(subs), 8) + sz["AllocationInfo"][0] * (n_tensors
                                                                                   + scratch)
    tail.events.append(("plan", temp_end, planned + scratch))
    tail.events.append(("head", int(head or 0)))
    before_io = tail.used
    _io_tensors(tail, subs)
    post = tail.used - before_io
    if reasons:  # the tail position is unknown: both possible paddings after the commit
        post = tuple(_io_tensors(_Tail(start), subs) for start in (0, 8))
        return TflmArenaModel(None if head is None else int(head), None, None, None,
                              tuple(unknown), dict(tail.parts),
                              "; ".join(reasons), work, post)
    planning = at_commit + work
    # ``need`` assumes a 16-aligned arena end; the real end is ``start + arena_size``, so the
    # allocator's steps are replayed (_fits) near it: the answer is the smallest size from which
    # every size up to need + 96 fits (what a bisection over a monotone acceptance finds)
    need = max(int(head) + tail.used, planning, prepare_need)
    start = need
    while True:
        start = max(start - 64, 0)
        ok = {n: _fits(tail.events, n) for n in range(start, need + 97)}
        if not all(ok.values()) or start == 0:
            break
    lo = max((n for n in ok if not ok[n]), default=-1) + 1
    if lo > need + 32:  # pragma: no cover - the model's steps never need this much more
        raise RuntimeError(f"{path}: the arena model finds no size that fits near {need} bytes")
    return TflmArenaModel(int(head), tail.used, planning, lo,
                          (), dict(tail.parts), "", work, post, prepare_need)


def runtime_arena(path: str | Path, measure: bool = True) -> dict:
    """The ``arena_size`` a TFLite Micro interpreter needs for ``path``, and where the number
    comes from (the TFLite fields of ``memplan plan MODEL.tflite --json``); or, where the
    interpreter does not run the model, no number and its reason.

    Parameters
    ----------
    path : path of a ``.tflite`` file.
    measure : bool, default True
        Run the ``tflite-micro`` interpreter (when installed) where the model does not cover
        the kernels, and to quote its own reason where TFLM's checks refuse the model.

    Returns
    -------
    dict
        Where the interpreter runs the model (or nothing says it would not): ``{"tflm_head",
        "tflm_head_source", "runtime_arena", "runtime_arena_source", "runtime_arena_model",
        "runtime_arena_note"}`` (bytes).

        * ``tflm_head``: :func:`tflm_head` (TFLM's planner on TFLM's lifetimes), source
          ``"model"``, when every kernel is modelled (none requests scratch buffers); else, when
          ``measure`` and ``tflite-micro`` is installed, the head the interpreter reports
          (:func:`tflm_arena`'s number, from the probe worker), source ``"measured"``; else the modelled value with source
          ``"model (scratch buffers of unmodelled kernels not included)"`` (``None`` when a
          tensor's size is unknown).
        * ``runtime_arena``: :func:`tflm_arena_model`'s value, source ``"model"``, when it
          covers every kernel; else (``measure`` and ``tflite-micro`` installed) the smallest
          ``arena_size`` the interpreter accepts (:func:`tflm_min_arena`), source
          ``"measured"``, with the model's value (``None``) beside it; else ``None``.
          ``runtime_arena_note`` says why the model is incomplete or why nothing was measured.
          Never an estimate.

        Where the interpreter refuses the model at every ``arena_size`` -- by the transcribed
        checks of TFLM's kernels (:func:`tflm_refusal`) or, measured, by the interpreter
        itself (:class:`TflmRefused`) -- ``{"runtime_refusal": one line}`` only, and no number:
        the line quotes what the interpreter printed when it ran (``measure`` and
        ``tflite-micro`` installed), else the TFLM check that fails, saying it was not run.

    Raises
    ------
    scheduling.tflite_import.TfliteImportError
        The file cannot be read.
    TflmUnavailable
        A measurement failed for another reason than a refusal (a probe timed out, every
        arena size tried was too small, acceptance not monotone).

    Notes
    -----
    A model that TFLM's checks refuse but the interpreter runs would be a wrong transcription:
    it is measured, and ``runtime_arena_note`` says so (the differential test counts it).
    """
    m = tflm_arena_model(path)
    ok, why = tflm_available()
    if m.refusal:
        if not (measure and ok):
            return {"runtime_refusal": (
                f"TFLite Micro refuses the model at every arena_size (TFLM's check, the "
                f"interpreter not run: {why or 'measure=False'}): {m.refusal}")}
        try:
            _report(path)
        except TflmRefused as e:
            return {"runtime_refusal": _refusal_line(e, m)}
        note = (f"memplan's model of TFLite Micro's checks refuses the model ({m.refusal}), but "
                "the interpreter runs it: measured")
        m = TflmArenaModel(None, None, None, None, m.unknown_kernels, {}, note)
    out = {"tflm_head": m.head, "tflm_head_source": "model",
           "runtime_arena": m.runtime_arena,
           "runtime_arena_source": "model" if m.runtime_arena is not None else None,
           "runtime_arena_model": m.runtime_arena, "runtime_arena_note": m.reason}
    if m.runtime_arena is None:
        if measure and ok:
            try:
                out["tflm_head"] = _report(path).head
                out["runtime_arena"] = tflm_min_arena(path)
            except TflmRefused as e:
                return {"runtime_refusal": _refusal_line(e, m)}
            out["tflm_head_source"] = "measured"
            out["runtime_arena_source"] = "measured"
        else:
            out["tflm_head_source"] = (None if m.head is None else
                                       "model (scratch buffers of unmodelled kernels not included)")
            if measure:
                out["runtime_arena_note"] = f"{m.reason}; not measured: {why}"
    return out


def _report(path: str | Path) -> TflmArena:
    """The interpreter's report for ``path`` from the persistent probe worker
    (:func:`experiments.runtimes.tflm.probe.report`: the numbers of :func:`tflm_arena`, without
    a child process per call)."""
    from experiments.runtimes.tflm.probe import report

    return report(path)


def _refusal_line(e: TflmRefused, m: TflmArenaModel) -> str:
    """The one line of ``runtime_refusal`` for the interpreter's own refusal ``e`` (its words
    verbatim), with the custom codes of the model's CUSTOM operators when the interpreter names
    only ``op code CUSTOM``."""
    customs = [k.split(":", 1)[1] for k in m.unknown_kernels if k.startswith("CUSTOM:")]
    extra = (f" (the model's custom operators: {', '.join(customs)})"
             if customs and "op code CUSTOM" in e.reason else "")
    if e.stage == "crash":  # known at one large arena only: said as such
        return f"TFLite Micro crashes on the model instead of running it: {e.reason}"
    where = " (Invoke)" if e.stage == "invoke" else ""
    return f"TFLite Micro refuses the model at every arena_size{where}: {e.reason}{extra}"
