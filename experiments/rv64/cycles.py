"""In-order RV64 core models and the cycle estimate over an executed block trace.

The model (same semantics in :func:`simulate_reference`, pure Python, and in ``hostsim.c``'s
``memplan_cycles``, used for long traces; tests cross-check the two):

* **Issue.** Instructions issue in program order, up to ``width`` per cycle. With ``dual_pipes``
  (SiFive 7 series) pipe A takes loads/stores, pipe B takes branches, jumps, multiply, divide and
  other (FP/system) instructions, and ALU instructions take either: at most one memory and at most one
  control/mul/div instruction per cycle.
* **Register dependences.** An instruction issues no earlier than the cycle its sources are ready;
  a result is ready ``latency[kind]`` cycles after its producer issues (ALU 1: a dependent ALU
  instruction issues in the next cycle). Integer and FP registers are tracked (``x0`` never).
* **Divider.** Not pipelined: a divide waits until the previous one has released the divider.
* **Branches.** A table of ``bht_entries`` 2-bit saturating counters indexed by ``(pc >> 1)``,
  initialised to ``bht_init`` (1 = weakly not taken); predict taken iff counter >= 2. A mispredicted
  branch makes the next instruction issue ``mispredict`` cycles after the cycle following the
  branch. A correctly predicted taken branch and any jump (BTB/return-address stack assumed to hit)
  end the issue group (the next instruction issues in the next cycle).
* **Total.** Cycles = one past the last cycle in which anything issued, or the end of a pending
  mispredict penalty, whichever is later. Caches are ideal (every load hits L1).

Parameter sources are in :data:`CORE_MODELS` (field ``sources``). Complexity: ``O(instructions)``.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .build import cache_dir
from .decode import CLASSES, Insn

__all__ = [
    "CoreModel",
    "CORE_MODELS",
    "simulate_reference",
    "simulate_trace",
    "expand_trace",
    "host_library",
]

_KIND = {k: i for i, k in enumerate(CLASSES)}


@dataclass(frozen=True)
class CoreModel:
    """Parameters of an in-order core (cycles unless stated).

    Parameters
    ----------
    name : str
    width : int
        Instructions issued per cycle.
    dual_pipes : bool
        SiFive 7 pipe A / pipe B restrictions (see module docstring).
    latency : dict
        Result latency per class (``alu``, ``load`` = load-to-use, ``store``, ``branch``, ``jump``,
        ``mul``, ``div`` = 64-bit divide/remainder, ``other``).
    div32_latency : int
        ``divw``/``remw`` latency.
    div_busy, div32_busy : int
        Cycles the divider is occupied after a divide issues.
    mispredict : int
        Penalty of a mispredicted conditional branch.
    taken_ends_group : bool
        A taken branch or a jump ends the issue group.
    bht_entries, bht_init : int
        Branch history table size (power of two) and initial counter value.
    sources : dict
        ``{parameter: source}``; values marked "assumption" are not confirmed by a public table.
    """

    name: str
    width: int
    dual_pipes: bool
    latency: dict
    div32_latency: int
    div_busy: int
    div32_busy: int
    mispredict: int
    taken_ends_group: bool = True
    bht_entries: int = 1024
    bht_init: int = 1
    sources: dict = field(default_factory=dict)


_LLVM = "LLVM RISCVSchedSiFive7.td (SiFive7Model)"

#: The two core models (keys are the column suffixes ``u74`` and ``c906``).
CORE_MODELS: dict[str, CoreModel] = {
    "u74": CoreModel(
        name="SiFive U74",
        width=2,
        dual_pipes=True,
        latency={
            "alu": 1,
            "load": 3,
            "store": 1,
            "branch": 1,
            "jump": 1,
            "mul": 3,
            "div": 66,
            "other": 3,
        },  # fmt: skip
        div32_latency=34,
        div_busy=65,
        div32_busy=33,
        mispredict=3,
        sources={
            "width": f"{_LLVM}: IssueWidth = 2",
            "dual_pipes": f"{_LLVM}: pipe A memory+ALU, pipe B ALU+control+mul/div+FP",
            "latency.alu": f"{_LLVM}: WriteIALU latency 3 minus ReadAdvance 2 (SiFive7AnyToGPRBypass)",
            "latency.load": f"{_LLVM}: LoadLatency = 3",
            "latency.mul": f"{_LLVM}: WriteIMul latency 3",
            "latency.div": f"{_LLVM}: WriteIDiv latency 66, ReleaseAtCycles [1, 65]",
            "div32_latency": f"{_LLVM}: WriteIDiv32 latency 34, ReleaseAtCycles [1, 33]",
            "mispredict": f"{_LLVM}: MispredictPenalty = 3",
            "latency.other": f"{_LLVM}: FP sign-inject/compare/convert latency 3",
            "bht_entries": "assumption (no aliasing for the < 4 KiB cores image)",
            "taken_ends_group": "assumption (fetch redirect after a taken branch)",
        },
    ),
    "c906": CoreModel(
        name="T-Head C906",
        width=1,
        dual_pipes=False,
        latency={
            "alu": 1,
            "load": 3,
            "store": 1,
            "branch": 1,
            "jump": 1,
            "mul": 4,
            "div": 36,
            "other": 3,
        },  # fmt: skip
        div32_latency=20,
        div_busy=36,
        div32_busy=20,
        mispredict=4,
        sources={
            "width": "T-Head C906 datasheet: single-issue, 5-stage in-order pipeline",
            "latency.alu": "assumption (full bypass)",
            "latency.load": "assumption (load-to-use 3; no public latency table)",
            "latency.mul": "assumption",
            "latency.div": "assumption (iterative divider, data-dependent in hardware)",
            "div32_latency": "assumption",
            "mispredict": "assumption",
            "bht_entries": "assumption",
            "taken_ends_group": "single issue: no effect",
        },
    ),
}


def _lat(m: CoreModel, ins: Insn) -> int:
    if ins.kind == "div" and ins.word32:
        return m.div32_latency
    return m.latency[ins.kind]


def simulate_reference(
    trace: Iterable[tuple[Insn, int, bool]], model: CoreModel | str
) -> dict[str, int]:
    """Cycle estimate of an executed instruction sequence, one instruction at a time (reference).

    Parameters
    ----------
    trace : iterable of ``(insn, pc, taken)``
        Executed instructions in order; ``pc`` (bytes) indexes the branch table; ``taken`` is the
        outcome of a conditional branch (ignored for other classes).
    model : CoreModel or a key of :data:`CORE_MODELS`

    Returns
    -------
    dict with ``cycles``, ``instructions``, ``mispredicts``, ``branches``.

    Runs in ``O(len(trace))`` Python steps; use :func:`simulate_trace` for long traces.
    """
    m = CORE_MODELS[model] if isinstance(model, str) else model
    ready = [0] * 64
    bht = [m.bht_init] * m.bht_entries
    t = cnt = a_used = b_used = end = div_free = 0
    n = mis = br = 0
    for ins, pc, taken in trace:
        n += 1
        e0 = max([t] + [ready[s] for s in ins.srcs])
        if ins.kind == "div":
            e0 = max(e0, div_free)
        if e0 > t:
            t, cnt, a_used, b_used = e0, 0, 0, 0
        need_a = m.dual_pipes and ins.kind in ("load", "store")
        need_b = m.dual_pipes and ins.kind in ("branch", "jump", "mul", "div", "other")
        if cnt >= m.width or (need_a and a_used) or (need_b and b_used):
            t, cnt, a_used, b_used = t + 1, 0, 0, 0
        issue = t
        cnt += 1
        a_used |= need_a
        b_used |= need_b
        if ins.rd >= 0:
            ready[ins.rd] = issue + _lat(m, ins)
        if ins.kind == "div":
            div_free = issue + (m.div32_busy if ins.word32 else m.div_busy)
        end = max(end, issue + 1)
        if ins.kind == "branch":
            br += 1
            idx = (pc >> 1) & (m.bht_entries - 1)
            pred = bht[idx] >= 2
            bht[idx] = min(3, bht[idx] + 1) if taken else max(0, bht[idx] - 1)
            if pred != bool(taken):
                mis += 1
                t, cnt, a_used, b_used = issue + 1 + m.mispredict, 0, 0, 0
                end = max(end, t)
            elif taken and m.taken_ends_group:
                t, cnt, a_used, b_used = issue + 1, 0, 0, 0
        elif ins.kind == "jump" and m.taken_ends_group:
            t, cnt, a_used, b_used = issue + 1, 0, 0, 0
    return {"cycles": end, "instructions": n, "mispredicts": mis, "branches": br}


def expand_trace(ids: np.ndarray, blocks: Sequence[tuple[int, int, list[Insn]]], halt: int):
    """Yield ``(insn, pc, taken)`` for every executed instruction of a block trace (the input of
    :func:`simulate_reference`); a branch is taken iff the next block does not start right after
    it. ``O(executed instructions)`` Python steps: for tests and small traces."""
    ids = np.asarray(ids).tolist()
    for e, b in enumerate(ids):
        addr, size, insns = blocks[b]
        nxt = blocks[ids[e + 1]][0] if e + 1 < len(ids) else halt
        pc = addr
        for ins in insns:
            yield ins, pc, nxt != addr + size
            pc += ins.length


# -- the fast path: hostsim.c over the block trace -------------------------------------------------
class _Model(ctypes.Structure):
    _fields_ = [
        ("width", ctypes.c_int64),
        ("dual_pipes", ctypes.c_int64),
        ("lat", ctypes.c_int64 * 8),
        ("lat_div32", ctypes.c_int64),
        ("div_busy", ctypes.c_int64),
        ("div32_busy", ctypes.c_int64),
        ("mispredict", ctypes.c_int64),
        ("taken_ends_group", ctypes.c_int64),
        ("bht_entries", ctypes.c_int64),
        ("bht_init", ctypes.c_int64),
    ]


class _Result(ctypes.Structure):
    _fields_ = [("cycles", ctypes.c_int64), ("mispredicts", ctypes.c_int64),
                ("branches", ctypes.c_int64)]  # fmt: skip


_LIB = None


def host_library() -> ctypes.CDLL:
    """Compile (once, cached by content hash) and load ``hostsim.c`` for the host.

    Raises ``RuntimeError`` with the compiler's message when the build fails.
    """
    global _LIB
    if _LIB is not None:
        return _LIB
    src = os.path.join(os.path.dirname(__file__), "hostsim.c")
    text = open(src, "rb").read()
    digest = hashlib.sha256(text + sys.platform.encode()).hexdigest()[:16]
    out = cache_dir() / f"hostsim-{digest}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        cmd = [sys.executable, "-m", "ziglang", "cc", "-shared", "-fPIC", "-O2", "-std=c99",
               src, "-o", str(tmp)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"zig cc failed to build the host helper:\n{proc.stderr}")
        tmp.replace(out)
    lib = ctypes.CDLL(str(out))
    lib.memplan_trace_new.restype = ctypes.c_void_p
    lib.memplan_trace_free.argtypes = [ctypes.c_void_p]
    lib.memplan_trace_len.argtypes = [ctypes.c_void_p]
    lib.memplan_trace_len.restype = ctypes.c_int64
    lib.memplan_trace_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.memplan_cycles.argtypes = [ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_void_p] * 6 + [
        ctypes.c_uint64, ctypes.POINTER(_Model), ctypes.POINTER(_Result)]  # fmt: skip
    _LIB = lib
    return lib


def _c_model(m: CoreModel) -> _Model:
    lat = (ctypes.c_int64 * 8)(*[m.latency[k] for k in CLASSES])
    return _Model(m.width, int(m.dual_pipes), lat, m.div32_latency, m.div_busy, m.div32_busy,
                  m.mispredict, int(m.taken_ends_group), m.bht_entries, m.bht_init)  # fmt: skip


def simulate_trace(
    ids: np.ndarray,
    blocks: Sequence[tuple[int, int, list[Insn]]],
    halt: int,
    model: CoreModel | str,
) -> dict[str, int]:
    """Cycle estimate over a block trace with the compiled model (same semantics as the reference).

    Parameters
    ----------
    ids : int32 array ``(executions,)``: index into ``blocks`` of each executed block, in order.
    blocks : list of ``(address, size_bytes, decoded instructions)``.
    halt : address control reaches after the last block (decides the last branch's outcome).
    model : CoreModel or key of :data:`CORE_MODELS`.

    Returns ``{"cycles", "mispredicts", "branches"}``. ``O(executed instructions)`` in C.
    """
    m = CORE_MODELS[model] if isinstance(model, str) else model
    if m.bht_entries & (m.bht_entries - 1):
        raise ValueError(f"core model {m.name!r}: bht_entries must be a power of two")
    lib = host_library()
    counts = np.array([len(b[2]) for b in blocks], np.int64)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    fall = np.array([a + s for a, s, _ in blocks], np.uint64)
    addr = np.array([a for a, _, _ in blocks], np.uint64)
    lastpc = np.array([a + s - (b[-1].length if b else 0) for a, s, b in blocks], np.uint64)
    rows = [
        (_KIND[i.kind], i.rd, *(list(i.srcs) + [-1, -1, -1])[:3], int(i.word32))
        for _, _, b in blocks
        for i in b
    ]
    insn = np.array(rows, np.int8).reshape(-1, 6)
    ids = np.ascontiguousarray(ids, np.int32)
    res = _Result()
    lib.memplan_cycles(
        ids.ctypes.data, len(ids), first.ctypes.data, counts.ctypes.data, fall.ctypes.data,
        addr.ctypes.data, lastpc.ctypes.data, insn.ctypes.data, halt,
        ctypes.byref(_c_model(m)), ctypes.byref(res),
    )  # fmt: skip
    return {"cycles": res.cycles, "mispredicts": res.mispredicts, "branches": res.branches}
