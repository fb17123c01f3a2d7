"""Fast, faithful probes of the TFLite Micro interpreter: one persistent child process.

The reference for the arena a model needs is **the smallest ``arena_size`` at which the
``tflite-micro`` interpreter both builds the model (``MicroInterpreter`` construction and
``AllocateTensors``, done by ``runtime.Interpreter``'s constructor) and invokes it once with every
input zero**. :func:`accepts` answers one such probe, :func:`min_arena` bisects it and
:func:`report` returns the recording allocator's ``head``/``tail``/``total`` for one arena size.

Starting a Python process that imports ``tflite_micro`` costs about half a second, so probes go
to one persistent worker (:class:`ProbeWorker`) over a pipe: the worker answers many
``(model, arena_size)`` requests. The interpreter can crash (SIGSEGV) rather than fail cleanly
when the arena is slightly short; a crash counts as *rejected* and the worker is restarted for the
next probe. The worker writes its answers to a private duplicate of its standard output and sends
its own file descriptors 1 and 2 (where the interpreter's C code prints) to a temporary file,
emptied before each request, so the interpreter's messages never corrupt the protocol and a
rejection carries what the interpreter printed (its own reason: the failed ``TF_LITE_ENSURE`` of
a kernel, an operator without a registration, a dynamic tensor, an arena too small).

Monotonicity: the bisection assumes acceptance is monotone in ``arena_size`` (a larger arena never
fails where a smaller one succeeds), which holds for TFLM's two-ended arena (every allocation
either fits between head and tail or does not, independently of the bytes beyond). It is checked,
not trusted: after bisection :func:`min_arena` probes ``hi`` and ``hi - 1`` again (each in a
freshly built interpreter) and raises :class:`experiments.runtimes.tflm.oracle.TflmUnavailable` when
``hi`` is rejected or ``hi - 1`` accepted.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["ProbeWorker", "accepts", "report", "min_arena", "shutdown", "MAX_REPORT_ARENA"]

_WORKER = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None)
proto = os.fdopen(os.dup(1), "w", buffering=1)
requests = os.fdopen(os.dup(0), "r")
log = open(sys.argv[1], "w+b")  # what the interpreter prints, per request (read after a crash)
os.dup2(log.fileno(), 1)
os.dup2(log.fileno(), 2)
import numpy as np
from tflite_micro.python.tflite_micro import runtime

def zero_inputs(it):
    k = 0
    while True:
        try:
            d = it.get_input_details(k)
        except Exception:
            return k
        it.set_input(np.zeros(tuple(d["shape"]), dtype=d["dtype"]), k)
        k += 1

def printed():
    sys.stdout.flush()
    sys.stderr.flush()
    libc.fflush(None)
    log.seek(0)
    return log.read()[-4000:].decode("utf-8", "replace")

proto.write("READY\n")
for line in requests:
    req = json.loads(line)
    libc.fflush(None)
    log.seek(0)
    log.truncate()
    try:
        it = runtime.Interpreter.from_file(req["path"], arena_size=int(req["arena"]))
    except Exception as e:
        proto.write(json.dumps({"ok": False, "stage": "build", "error": str(e)[:300],
                                "log": printed()}) + "\n")
        continue
    try:
        zero_inputs(it)
        printed()  # the end of the inputs ("Input index N out of range") is no message of Invoke
        log.seek(0)
        log.truncate()
        it.invoke()
    except Exception as e:
        proto.write(json.dumps({"ok": False, "stage": "invoke", "error": str(e)[:300],
                                "log": printed()}) + "\n")
        del it
        continue
    out = {"ok": True}
    if req.get("report"):
        printed()
        log.seek(0)
        log.truncate()
        it.print_allocations()
        out["text"] = printed()
    del it
    proto.write(json.dumps(out) + "\n")
"""


class ProbeWorker:
    """A persistent child Python process that builds and invokes TFLite Micro interpreters.

    :meth:`probe` sends one request and waits at most ``timeout`` seconds; a worker that dies
    (the interpreter crashed) makes the probe *rejected* (``{"ok": False, "stage": "crash"}``)
    and is restarted on the next request. Not thread-safe by itself (the module functions hold
    a lock).
    """

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.crashes = 0
        self.probes = 0
        self.log: str | None = None  # the file the worker's fds 1 and 2 write to

    def _start(self) -> None:
        fd, self.log = tempfile.mkstemp(prefix="tflm_probe_", suffix=".log")
        os.close(fd)
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, self.log],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)
        line = self._readline(120.0)
        if line != "READY":
            self.close()
            raise _unavailable("the TFLite Micro probe worker did not start "
                               f"(got {line!r}); is tflite-micro installed?")

    def _readline(self, timeout: float) -> str | None:
        """One line from the worker, ``None`` on EOF (a crash); ``TimeoutError`` after
        ``timeout`` seconds."""
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError
        line = self.proc.stdout.readline()
        return line.rstrip("\n") if line else None

    def close(self) -> None:
        """Stop the worker (it is restarted by the next probe)."""
        if self.proc is not None:
            try:
                self.proc.kill()
            except OSError:
                pass
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
            self.proc = None
        if self.log is not None:
            Path(self.log).unlink(missing_ok=True)
            self.log = None

    def probe(self, path: str, arena_size: int, timeout: float = 120.0,
              want_report: bool = False) -> dict:
        """Build and invoke (inputs zero) the model at ``path`` with ``arena_size`` bytes.

        Returns ``{"ok": bool, "stage": "build" | "invoke" | "crash", "error": str, "log": str}``
        (``stage``, ``error``, the Python exception's text or the worker's exit status, and
        ``log``, what the interpreter printed during the request, its last 4,000 characters,
        only when rejected) and, with ``want_report`` and success, ``"text"``: the
        interpreter's ``print_allocations`` report. Raises ``TimeoutError`` when the worker
        does not answer within ``timeout`` seconds (the worker is then killed).
        """
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.probes += 1
        try:
            self.proc.stdin.write(json.dumps({"path": path, "arena": int(arena_size),
                                              "report": bool(want_report)}) + "\n")
            self.proc.stdin.flush()
            line = self._readline(timeout)
        except BrokenPipeError:
            line = None
        except TimeoutError:
            self.close()
            raise
        if line is None:  # the interpreter crashed the worker: rejected, restart next time
            code = self.proc.wait()
            self.crashes += 1
            try:  # what it printed before dying (an abort's message, an allocator's complaint)
                printed = Path(self.log).read_bytes()[-4000:].decode("utf-8", "replace")
            except (OSError, TypeError):
                printed = ""
            self.close()
            return {"ok": False, "stage": "crash", "error": f"worker exited with {code}",
                    "log": printed}
        return json.loads(line)


_LOCK = threading.Lock()
_WORKERS: dict[int, ProbeWorker] = {}


def _unavailable(msg: str):
    from experiments.runtimes.tflm.interpreter import TflmUnavailable

    return TflmUnavailable(msg)


def _worker() -> ProbeWorker:
    pid = os.getpid()  # a forked process gets its own worker
    if pid not in _WORKERS:
        _WORKERS[pid] = ProbeWorker()
    return _WORKERS[pid]


def shutdown() -> None:
    """Stop this process's probe worker (restarted on the next probe)."""
    with _LOCK:
        w = _WORKERS.pop(os.getpid(), None)
        if w is not None:
            w.close()


def _probe(path: str | Path, arena_size: int, timeout: float, want_report: bool) -> dict:
    from experiments.runtimes.tflm.interpreter import tflm_available

    ok, why = tflm_available()
    if not ok:
        raise _unavailable(why)
    p = str(Path(path).resolve())
    with _LOCK:
        try:
            return _worker().probe(p, int(arena_size), timeout, want_report)
        except TimeoutError:
            raise _unavailable(f"{path}: TFLite Micro probe at arena_size {arena_size} did not "
                               f"finish in {timeout:g} s") from None


def accepts(path: str | Path, arena_size: int, timeout: float = 120.0) -> bool:
    """Whether the ``tflite-micro`` interpreter builds **and** invokes (every input zero) the
    model at ``path`` with an arena of ``arena_size`` bytes. A failure at either stage or a crash
    of the interpreter counts as rejected (``False``).

    Raises
    ------
    experiments.runtimes.tflm.oracle.TflmUnavailable
        ``tflite-micro`` missing, or no answer within ``timeout`` seconds.
    """
    return bool(_probe(path, arena_size, timeout, False)["ok"])


#: The largest ``arena_size`` (bytes) :func:`report` tries when the interpreter says the arena is
#: too small (it doubles from the default until then).
MAX_REPORT_ARENA = 1 << 30


def report(path: str | Path, arena_size: int | None = None, timeout: float = 120.0):
    """The recording allocator's report (:class:`experiments.runtimes.tflm.oracle.TflmArena`: ``head``,
    ``tail``, ``total`` in bytes) after building and invoking the model at ``path`` with
    ``arena_size`` bytes (default ``max(10 x file size, 16 MiB)``, as
    :func:`experiments.runtimes.tflm.oracle.tflm_arena`, doubled up to
    :data:`MAX_REPORT_ARENA` while the interpreter reports an arena too small: ``missing: N``).

    Raises
    ------
    experiments.runtimes.tflm.oracle.TflmRefused
        The interpreter rejects the model for another reason than the arena's size (a kernel's
        check, an operator without a registration, a dynamic tensor, a crash): the message and
        ``reason`` quote what the interpreter printed, in one line.
    experiments.runtimes.tflm.oracle.TflmUnavailable
        ``tflite-micro`` missing, a probe timed out, or the arena is still too small at
        ``arena_size`` (or at :data:`MAX_REPORT_ARENA`).
    """
    from experiments.runtimes.tflm.interpreter import (
        TflmRefused,
        arena_too_small,
        parse_allocations,
        runtime_reason,
    )

    size = int(arena_size) if arena_size else max(10 * Path(path).stat().st_size, 16 << 20)
    while True:
        r = _probe(path, size, timeout, True)
        if r["ok"]:
            return parse_allocations(r["text"])
        log = r.get("log", "")
        if r["stage"] == "crash":  # the interpreter's last words, then how the worker ended
            log += f"\nthe interpreter crashed ({r.get('error', '')})"
        why = runtime_reason(log, r.get("error", ""))
        if not arena_too_small(log):  # a crash right after "missing: N" is a short arena too
            raise TflmRefused(f"{path}: TFLite Micro refuses the model ({r['stage']}, "
                              f"arena_size {size} bytes): {why}", why, r["stage"])
        if arena_size or 2 * size > MAX_REPORT_ARENA:
            raise _unavailable(f"{path}: TFLite Micro rejects the model at arena_size {size} "
                               f"bytes, the arena too small ({r['stage']}: {why})")
        size *= 2


def min_arena(path: str | Path, hi: int, timeout: float = 120.0) -> int:
    """The smallest ``arena_size`` (bytes) at which :func:`accepts` holds, by bisection.

    ``hi`` is a first guess of an accepted size (e.g. the reported ``total``); it is doubled until
    accepted (the report can be short of the need). The lower end is 0 (an empty arena holds
    nothing). Monotonicity of acceptance is assumed for the bisection and checked at its end:
    ``hi`` accepted and ``hi - 1`` rejected, each probed again in a fresh interpreter.

    Raises
    ------
    experiments.runtimes.tflm.oracle.TflmUnavailable
        ``tflite-micro`` missing, every size up to 2**31 rejected, a probe timed out, or the
        final check contradicts monotonicity (the message gives both sizes).
    """
    lo, hi = 0, max(1, int(hi))  # invariant: lo rejected, hi accepted
    while not accepts(path, hi, timeout):
        lo, hi = hi, 2 * hi
        if hi > (1 << 31):
            raise _unavailable(f"{path}: TFLite Micro rejects every arena_size up to {lo}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if accepts(path, mid, timeout):
            hi = mid
        else:
            lo = mid
    if not accepts(path, hi, timeout) or (hi > 1 and accepts(path, hi - 1, timeout)):
        raise _unavailable(f"{path}: TFLite Micro's acceptance is not monotone in arena_size "
                           f"near {hi} (re-probing {hi} and {hi - 1} disagrees with the "
                           "bisection); no minimum reported")
    return hi
