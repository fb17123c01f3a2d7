"""What the TFLite Micro interpreter says, as :mod:`experiments.runtimes.tflm.oracle`, its probe
worker (:mod:`~experiments.runtimes.tflm.probe`) and the offline-plan runs
(:mod:`~experiments.runtimes.tflm.offline`) read it: its failures as exceptions
(:class:`TflmUnavailable`, :class:`TflmRefused`), its printed reason in one line, whether that
reason is an arena too small, and its ``print_allocations`` report (:class:`TflmArena`).

This module imports none of the three, so the probe and the offline runs do not import the oracle
that calls them (``tests/test_import_cycles.py``); :mod:`~experiments.runtimes.tflm.oracle`
re-exports every name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planners.errors import MemplanError

__all__ = ["TflmUnavailable", "TflmRefused", "runtime_reason", "arena_too_small", "TflmArena",
           "tflm_available", "parse_allocations"]

_LINE = re.compile(r"Arena allocation (total|head|tail) (\d+) bytes")


class TflmUnavailable(MemplanError, RuntimeError):
    """``tflite-micro`` is not installed, or its interpreter could not load the model (the message
    carries the interpreter's own error, e.g. an operator TFLM does not implement)."""


class TflmRefused(TflmUnavailable):
    """The ``tflite-micro`` interpreter refuses the model for another reason than the arena's
    size: a kernel's check fails in ``Prepare`` (``TF_LITE_ENSURE``), an operator has no
    registration, an output is a dynamic tensor, or the interpreter crashes.

    Attributes
    ----------
    reason : str
        What the interpreter printed, in one line (:func:`runtime_reason`).
    stage : str
        ``"build"`` (``AllocateTensors``), ``"invoke"`` or ``"crash"``.
    """

    def __init__(self, message: str, reason: str, stage: str = "build") -> None:
        super().__init__(message)
        self.reason = reason
        self.stage = stage


_ARENA_SHORT = re.compile(r"\bmissing: \d+")


def runtime_reason(printed: str, error: str = "") -> str:
    """The interpreter's own reason in one line.

    Parameters
    ----------
    printed : str
        What the interpreter printed to its file descriptors 1 and 2 (``MicroPrintf`` from C,
        e.g. ``tensorflow/lite/micro/kernels/concatenation.cc:156 num_inputs <= kMaxInputNum
        was not true.`` then ``Node CONCATENATION (number 0) failed to prepare with status 1``).
    error : str, optional
        The Python exception's text (``TFLM failed to allocate tensors``), used only when
        nothing was printed.

    Returns
    -------
    str
        The distinct non-empty lines of ``printed``, stripped, in order, joined by ``" | "``;
        else ``error``; else ``"no message"``. Never raises.
    """
    lines = list(dict.fromkeys(ln.strip() for ln in printed.splitlines() if ln.strip()))
    return " | ".join(lines) if lines else (error.strip() or "no message")


def arena_too_small(printed: str) -> bool:
    """Whether the interpreter's messages ``printed`` say the arena was too small, rather than
    refusing the model itself.

    Returns
    -------
    bool
        True when a line has ``missing: N`` (bytes), as the allocator's messages do: ``Failed to
        allocate tail memory. Requested: 60, available 8, missing: 52``, ``Failed to resize
        buffer. Requested: 512, available 496, missing: 16`` (single_arena_buffer_allocator.cc).
    """
    return bool(_ARENA_SHORT.search(printed))


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
