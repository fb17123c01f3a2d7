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
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from planners.errors import MemplanError

__all__ = ["TflmUnavailable", "TflmArena", "tflm_available", "tflm_arena", "parse_allocations",
           "tflm_min_arena", "parse_breakdown"]

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
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE, path, str(arena_size)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TflmUnavailable(f"{path}: TFLite Micro probe at arena_size {arena_size} did not "
                              f"finish in {timeout:g} s") from None
    return r.returncode == 0 and r.stdout.strip().endswith("OK")


@functools.lru_cache(maxsize=256)
def _cached_min(path: str, digest: str, hi: int, timeout: float) -> int:
    lo = 0  # invariant: lo is rejected (an empty arena holds nothing), hi is accepted
    while not _accepts(path, hi, timeout):  # the reported total can be short of the need
        lo, hi = hi, 2 * hi
        if hi > (1 << 31):
            raise TflmUnavailable(f"{path}: TFLite Micro rejects every arena_size up to {lo}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _accepts(path, mid, timeout):
            hi = mid
        else:
            lo = mid
    return hi


def tflm_min_arena(path: str | Path, timeout: float = 120.0) -> int:
    """The smallest ``arena_size`` (bytes) with which the TFLite Micro interpreter accepts the
    model at ``path`` (``AllocateTensors`` succeeds), by bisection.

    The search starts from the ``total`` that :func:`tflm_arena` reports for a large arena, doubled
    until accepted (the report can be short of the need: on the pymicro-wakeword models the total
    reported for a large arena is rejected as ``arena_size``); the lower end is 0. Each probe builds a fresh ``tflite_micro`` interpreter (recording
    allocator, as ``tflite_micro.python.tflite_micro.runtime.Interpreter`` does) in its own child
    process; a probe that fails or crashes (the interpreter can segfault on a slightly short
    arena) counts as rejected. Assumes acceptance is monotone in ``arena_size`` (a larger arena never fails where a
    smaller one succeeds), which holds for TFLM's two-ended arena: every allocation either fits
    between head and tail or not, independently of the bytes beyond.

    Raises
    ------
    TflmUnavailable
        ``tflite-micro`` missing, or the interpreter rejects the model at any size.

    Notes
    -----
    About ``log2(total)`` interpreter builds (15-20 child processes, a few seconds), cached per
    file content. ``timeout`` is per probe.
    """
    total = tflm_arena(path).total
    p = Path(path)
    data = p.read_bytes()
    return _cached_min(str(p.resolve()), hashlib.sha256(data).hexdigest(), int(total),
                       float(timeout))
