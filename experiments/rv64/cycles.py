"""In-order RV64 core models: the cycle estimate of an executed block stream.

The U74 model is LLVM's SiFive7 scheduling model (``RISCVSchedSiFive7.td``) applied the way
``llvm-mca`` applies an in-order model (``InOrderIssueStage``), plus the parts llvm-mca leaves out
of a straight block: branch prediction, fetch redirects and (optionally) L1 caches. Semantics
(the same in :func:`simulate_reference`, pure Python, and in ``hostsim.c``, which runs inside the
emulator's hooks; tests cross-check the two):

* **Issue.** In program order, up to ``width`` instructions per cycle. With ``dual_pipes``
  (SiFive7) loads and stores take pipe A; branches, jumps, multiply, divide and other (FP/system)
  take pipe B; an ALU instruction takes A or B, chosen by llvm-mca's round-robin resource strategy
  (``DefaultResourceStrategy``: the highest free unit of the group not yet used in the sequence).
* **Operands.** A result is written back ``latency[kind]`` cycles after its producer issues. A
  consumer whose kind is in ``bypass_consumers`` (ALU, branch and jump operands:
  ``SiFive7AnyToGPRBypass<ReadIALU/ReadJmp/ReadJalr>``), and a store's data operand with
  ``bypass_store_data`` (``SiFive7AnyToGPRBypass<ReadStoreData>``), reads it ``bypass`` cycles
  earlier when the producer kind is in ``bypass_producers`` (ALU, load, multiply, divide); every
  other read (load/store address ``ReadMemBase``, multiply and divide operands) waits for the
  full latency. U74: ALU->ALU 1, load->ALU/branch 1, ALU->load address 3, load->load address 3,
  ALU->multiply 3, multiply->ALU 1; load/ALU->store data 2 (bypass 1, then the in-order
  write-back rule below).
* **In-order write-back** (``inorder_writeback``, llvm-mca's rule for models without
  ``RetireOOO``): an instruction may not write back before the previously issued one, i.e. it
  issues no earlier than ``last_writeback - its latency`` (a store, latency 1, after a load or ALU
  op, latency 3, waits 2 cycles).
* **Divider.** Not pipelined: a divide waits until the previous one released the divider.
* **Branches** (not in llvm-mca). A table of ``bht_entries`` 2-bit counters indexed by
  ``(pc >> 1)``, initialised to ``bht_init``; predict taken iff counter >= 2. A mispredicted
  branch makes the next instruction issue ``mispredict`` cycles after the cycle following the
  branch. A correctly predicted taken branch and any jump end the issue group.
* **Caches** (optional, :class:`CacheModel`). L1 instruction cache: every 64-byte line an
  executed block touches is looked up; each miss delays issue by ``l1i_penalty``. L1 data cache:
  every load/store address from the emulator's memory hook is looked up (allocate on miss, LRU);
  a load miss adds ``l1d_penalty`` to its latency; a store miss does not stall.
* **Total.** Cycles = one past the last cycle in which anything issued, or the end of a pending
  mispredict penalty, whichever is later.

Parameter sources are in :data:`CORE_MODELS` (field ``sources``); assumptions say so.
Complexity: ``O(instructions)``; state is ``O(1)`` in the run length (registers, issue group,
branch table, cache tags).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .build import cache_dir
from .decode import CLASSES, Insn, decode

__all__ = [
    "CacheModel",
    "CoreModel",
    "CORE_MODELS",
    "LLVM_SCHED",
    "simulate_reference",
    "simulate_trace",
    "block_cycles",
    "block_cycles_reference",
    "decode_table",
    "expand_trace",
    "host_library",
    "HostSim",
]

_KIND = {k: i for i, k in enumerate(CLASSES)}

#: The scheduling model the U74 parameters come from (file at the llvm-project commit read; the
#: values equal those of LLVM 19.1.7, whose ``llvm-mca-19`` the cross-check runs).
LLVM_SCHED = ("llvm/lib/Target/RISCV/RISCVSchedSiFive7.td (llvm-project "
              "00df6250f66a5ebcb58e9fac8e6652997ce01de4; same values in LLVM 19.1)")  # fmt: skip


@dataclass(frozen=True)
class CacheModel:
    """L1 caches of a core (bytes, lines of ``line`` bytes, ``ways``-way set-associative, LRU).

    ``l1i_penalty`` / ``l1d_penalty``: cycles added per L1 miss (the next level always hits).
    """

    l1i_size: int
    l1i_ways: int
    l1d_size: int
    l1d_ways: int
    line: int
    l1i_penalty: int
    l1d_penalty: int
    replacement: str = "lru"


@dataclass(frozen=True)
class CoreModel:
    """Parameters of an in-order core (cycles unless stated).

    Parameters
    ----------
    name : str
    width : int
        Instructions issued per cycle.
    dual_pipes : bool
        SiFive7 pipe A / pipe B resources (see the module docstring).
    latency : dict
        Write-back latency per class (``alu``, ``load``, ``store``, ``branch``, ``jump``, ``mul``,
        ``div`` = 64-bit divide/remainder, ``other``).
    div32_latency : int
        ``divw``/``remw`` latency.
    div_busy, div32_busy : int
        Cycles the divider is occupied after a divide issues.
    bypass : int
        ReadAdvance cycles for a (producer, consumer) pair in ``bypass_producers`` x
        ``bypass_consumers``.
    bypass_producers, bypass_consumers : tuple of class names
    bypass_store_data : bool
        The same bypass also applies to a store's data operand (not its address base).
    inorder_writeback : bool
        llvm-mca's in-order write-back rule.
    mispredict : int
        Penalty of a mispredicted conditional branch.
    taken_ends_group : bool
        A taken branch or a jump ends the issue group.
    bht_entries, bht_init : int
        Branch history table size (power of two) and initial counter value.
    caches : CacheModel or None
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
    bypass: int = 0
    bypass_producers: tuple = ()
    bypass_consumers: tuple = ()
    bypass_store_data: bool = False
    inorder_writeback: bool = False
    taken_ends_group: bool = True
    bht_entries: int = 1024
    bht_init: int = 1
    caches: CacheModel | None = None
    sources: dict = field(default_factory=dict)

    def without_caches(self) -> CoreModel:
        """The same core with ideal memory (every access hits, no fetch misses)."""
        return replace(self, caches=None)

    def assumptions(self) -> list[str]:
        """Names of the parameters whose source is an assumption (for every output)."""
        return sorted(k for k, v in self.sources.items() if "assumption" in v)


_L = LLVM_SCHED.split(" (")[0].rsplit("/", 1)[1]
_U74_MANUAL = "SiFive U74 Core Complex Manual (FU740-C000 manual, ch. 3-4)"

#: The two core models (keys are the column suffixes ``u74`` and ``c906``).
CORE_MODELS: dict[str, CoreModel] = {
    "u74": CoreModel(
        name="SiFive U74",
        width=2,
        dual_pipes=True,
        latency={"alu": 3, "load": 3, "store": 1, "branch": 3, "jump": 3, "mul": 3, "div": 66,
                 "other": 3},  # fmt: skip
        div32_latency=34,
        div_busy=65,
        div32_busy=33,
        mispredict=3,
        bypass=2,
        bypass_producers=("alu", "load", "mul", "div"),
        bypass_consumers=("alu", "branch", "jump"),
        bypass_store_data=True,
        inorder_writeback=True,
        caches=CacheModel(l1i_size=32768, l1i_ways=4, l1d_size=32768, l1d_ways=8, line=64,
                          l1i_penalty=20, l1d_penalty=20),  # fmt: skip
        sources={
            "width": f"{_L}: SiFive7Model IssueWidth = 2",
            "dual_pipes": f"{_L}: SiFive7PipeA, SiFive7PipeB, SiFive7PipeAB = ProcResGroup<[A, B]>; "
            "WriteIALU on PipeAB, loads/stores on PipeA, WriteJmp/Jal/Jalr, WriteIMul, WriteIDiv on "
            "PipeB; unit choice: llvm-mca DefaultResourceStrategy",
            "latency.alu": f"{_L}: let Latency = 3 in WriteRes<WriteIALU, [SiFive7PipeAB]>",
            "latency.load": f"{_L}: let Latency = 3 in WriteRes<WriteLDD, [SiFive7PipeA]>",
            "latency.store": f"{_L}: WriteRes<WriteSTD, [SiFive7PipeA]> (default Latency 1)",
            "latency.branch": f"{_L}: let Latency = 3 in WriteRes<WriteJmp, [SiFive7PipeB]>",
            "latency.jump": f"{_L}: let Latency = 3 in WriteRes<WriteJal/WriteJalr, [SiFive7PipeB]>",
            "latency.mul": f"{_L}: let Latency = 3 in WriteRes<WriteIMul, [SiFive7PipeB]>",
            "latency.div": f"{_L}: WriteRes<WriteIDiv, [SiFive7PipeB, SiFive7IDiv]> Latency = 66, "
            "ReleaseAtCycles = [1, 65]; the worst case (1 quotient bit per cycle, LLVM review "
            "D151139). Kept for every operand value, an assumption: SiFive's core manuals give "
            "the divider's latency only as a range 'depending on the operand values' (e.g. the "
            "E31 manual, FE310-G000, sec. 3.3: 2 to 33 cycles), no formula of the operands "
            "(the cores divide only for non-power-of-two alignments)",
            "div32_latency": f"{_L}: WriteIDiv32 Latency = 34, ReleaseAtCycles = [1, 33] "
            "(worst case, as latency.div)",
            "latency.other": f"{_L}: FP sign-inject/compare/convert Latency = 3",
            "bypass": f"{_L}: class SiFive7AnyToGPRBypass<read, cycles = 2> (ReadAdvance 2 from "
            "WriteIALU*, WriteIMul*, WriteIDiv*, WriteIRem*, WriteLD*) on ReadIALU, ReadJmp, ReadJalr "
            "and ReadStoreData (bypass_store_data); ReadAdvance 0 on ReadMemBase, ReadIMul, ReadIDiv",
            "inorder_writeback": "llvm-mca InOrderIssueStage: writes happen in program order "
            "(SiFive7 sets no RetireOOO)",
            "mispredict": f"{_L}: SiFive7Model MispredictPenalty = 3",
            "bht_entries": "assumption (2-bit counters, no aliasing for the < 4 KiB cores image)",
            "taken_ends_group": "assumption (fetch redirect after a taken branch)",
            "caches.l1d": f"{_U74_MANUAL}: 32 KiB data cache, 8-way, 64-byte lines",
            "caches.l1i": f"{_U74_MANUAL}: 32 KiB instruction cache, 4-way, 64-byte lines",
            "caches.replacement": "assumption (LRU; allocate on load and store miss)",
            "caches.l1d_penalty": "assumption (20 cycles per L1 miss; the L2 always hits; no "
            "published L2 latency)",
            "caches.l1i_penalty": "assumption (20 cycles per L1 instruction miss)",
        },
    ),
    "c906": CoreModel(
        name="T-Head C906",
        width=1,
        dual_pipes=False,
        latency={"alu": 1, "load": 3, "store": 1, "branch": 1, "jump": 1, "mul": 4, "div": 36,
                 "other": 3},  # fmt: skip
        div32_latency=20,
        div_busy=36,
        div32_busy=20,
        mispredict=4,
        caches=CacheModel(l1i_size=32768, l1i_ways=2, l1d_size=32768, l1d_ways=4, line=64,
                          l1i_penalty=20, l1d_penalty=20),  # fmt: skip
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
            "caches.l1i": "assumption (32 KiB 2-way, 64-byte lines: the Allwinner D1 configuration)",
            "caches.l1d": "assumption (32 KiB 4-way, 64-byte lines: the Allwinner D1 configuration)",
            "caches.replacement": "assumption (LRU)",
            "caches.l1d_penalty": "assumption (20 cycles)",
            "caches.l1i_penalty": "assumption (20 cycles)",
        },
    ),
}


def _lat(m: CoreModel, ins: Insn) -> int:
    if ins.kind == "div" and ins.word32:
        return m.div32_latency
    return m.latency[ins.kind]


class _Cache:
    def __init__(self, size: int, ways: int, line: int):
        self.sets = size // (ways * line)
        self.ways = ways
        self.shift = line.bit_length() - 1
        self.tags = [[0] * ways for _ in range(self.sets)]
        self.stamp = [[0] * ways for _ in range(self.sets)]
        self.clock = self.accesses = self.misses = 0

    def access(self, addr: int) -> bool:
        """Touch byte address ``addr``; return True on a miss (LRU fill of its set)."""
        line = addr >> self.shift
        s = line & (self.sets - 1)
        tags, st = self.tags[s], self.stamp[s]
        self.clock += 1
        self.accesses += 1
        victim = 0
        for w in range(self.ways):
            if tags[w] == line + 1:
                st[w] = self.clock
                return False
            if st[w] < st[victim]:
                victim = w
        self.misses += 1
        tags[victim] = line + 1
        st[victim] = self.clock
        return True


class _RefPipe:
    """One model state, advanced one instruction at a time (the reference semantics)."""

    def __init__(self, m: CoreModel, perfect_branches: bool = False):
        self.m = m
        self.perfect = perfect_branches
        self.ready = [0] * 64
        self.ready_byp = [0] * 64
        self.t = self.cnt = self.a_used = self.b_used = self.end = 0
        self.div_free = self.last_wb = 0
        self.rr_next, self.rr_removed = 3, 0
        self.bht = [m.bht_init] * m.bht_entries
        self.mis = self.br = self.n = 0
        c = None if perfect_branches else m.caches
        self.l1i = _Cache(c.l1i_size, c.l1i_ways, c.line) if c else None
        self.l1d = _Cache(c.l1d_size, c.l1d_ways, c.line) if c else None
        self.last_iline = None

    def _new_cycle(self, t):
        self.t, self.cnt, self.a_used, self.b_used = t, 0, 0, 0

    def _rr_impl(self, cand):
        c = 2 if cand & 2 else 1
        self.rr_next &= c | (c - 1)
        return c

    def _rr_select(self, ready):
        cand = ready & self.rr_next
        if cand:
            return self._rr_impl(cand)
        self.rr_next, self.rr_removed = 3 ^ self.rr_removed, 0
        cand = ready & self.rr_next
        if cand:
            return self._rr_impl(cand)
        self.rr_next = 3
        return self._rr_impl(ready & 3)

    def _rr_used(self, mask):
        if mask > self.rr_next:
            self.rr_removed |= mask
            return
        self.rr_next &= ~mask
        if self.rr_next:
            return
        self.rr_next, self.rr_removed = 3 ^ self.rr_removed, 0

    def fetch(self, addr: int, size: int):
        """Instruction-cache lookups of one executed block (no-op without caches)."""
        if self.l1i is None:
            return
        sh = self.l1i.shift
        misses = sum(self.l1i.access(ln << sh) for ln in range(addr >> sh, ((addr + size - 1) >> sh) + 1))
        if misses:
            self._new_cycle(self.t + misses * self.m.caches.l1i_penalty)

    def step(self, ins: Insn, pc: int = 0, taken: bool = False, addr: int | None = None,
             last: bool = True):  # fmt: skip
        """Issue one instruction (its branch outcome ``taken`` and data address ``addr`` from
        the emulator) and advance the pipeline clock in cycles."""
        m = self.m
        self.n += 1
        lat = _lat(m, ins)
        extra = 0
        if addr is not None and self.l1d is not None and ins.kind in ("load", "store"):
            if self.l1d.access(addr) and ins.kind == "load":
                extra = m.caches.l1d_penalty
        byp = ins.kind in m.bypass_consumers
        c = self.t
        for j, s in enumerate(ins.srcs):
            b = byp or (m.bypass_store_data and j == ins.data)
            c = max(c, self.ready_byp[s] if b else self.ready[s])
        if ins.kind == "div":
            c = max(c, self.div_free)
        if m.inorder_writeback:
            c = max(c, self.last_wb - (lat + extra))
        if c > self.t:
            self._new_cycle(c)
        dual = m.dual_pipes
        need_a = dual and ins.kind in ("load", "store")
        need_b = dual and ins.kind in ("branch", "jump", "mul", "div", "other")
        need_ab = dual and ins.kind == "alu"
        while (self.cnt >= m.width or (need_a and self.a_used) or (need_b and self.b_used)
               or (need_ab and self.a_used and self.b_used)):  # fmt: skip
            self._new_cycle(self.t + 1)
        issue = self.t
        self.cnt += 1
        if need_a:
            self.a_used = 1
            self._rr_used(1)
        if need_b:
            self.b_used = 1
            self._rr_used(2)
        if need_ab:
            u = self._rr_select((0 if self.a_used else 1) | (0 if self.b_used else 2))
            if u == 1:
                self.a_used = 1
            else:
                self.b_used = 1
            self._rr_used(u)
        if ins.rd >= 0:
            r = issue + lat + extra
            self.ready[ins.rd] = r
            self.ready_byp[ins.rd] = r - m.bypass if ins.kind in m.bypass_producers else r
        if ins.kind == "div":
            self.div_free = issue + (m.div32_busy if ins.word32 else m.div_busy)
        if m.inorder_writeback:
            self.last_wb = issue + lat + extra
        self.end = max(self.end, issue + 1)
        if self.perfect or not last:
            return
        if ins.kind == "branch":
            self.br += 1
            idx = (pc >> 1) & (m.bht_entries - 1)
            pred = self.bht[idx] >= 2
            self.bht[idx] = min(3, self.bht[idx] + 1) if taken else max(0, self.bht[idx] - 1)
            if pred != bool(taken):
                self.mis += 1
                self._new_cycle(issue + 1 + m.mispredict)
                self.end = max(self.end, self.t)
            elif taken and m.taken_ends_group:
                self._new_cycle(issue + 1)
        elif ins.kind == "jump" and m.taken_ends_group:
            self._new_cycle(issue + 1)

    def result(self) -> dict:
        """Cycles, instructions, branch and cache counts so far."""
        out = {"cycles": self.end, "instructions": self.n, "mispredicts": self.mis,
               "branches": self.br}  # fmt: skip
        for name in ("l1i", "l1d"):
            c = getattr(self, name)
            out[f"{name}_accesses"] = c.accesses if c else 0
            out[f"{name}_misses"] = c.misses if c else 0
        return out


def simulate_reference(trace: Iterable[tuple], model: CoreModel | str) -> dict[str, int]:
    """Cycle estimate of an executed instruction stream, one instruction at a time (reference).

    Parameters
    ----------
    trace : iterable of ``(insn, pc, taken)`` or ``(insn, pc, taken, addr, block)``
        Executed instructions in order; ``pc`` (bytes) indexes the branch table; ``taken`` is the
        outcome of a block-ending branch; ``addr`` is the data address of a load/store (``None``
        otherwise); ``block`` is ``(address, size)`` on the first instruction of each executed
        block (for instruction fetch), else ``None``. Without the last two fields the caches are
        not consulted.
    model : CoreModel or a key of :data:`CORE_MODELS`

    Returns
    -------
    dict with ``cycles``, ``instructions``, ``mispredicts``, ``branches`` and the cache counters
    ``l1i_accesses``, ``l1i_misses``, ``l1d_accesses``, ``l1d_misses``.

    Runs in ``O(len(trace))`` Python steps; the emulator runs the same model in C.
    """
    m = CORE_MODELS[model] if isinstance(model, str) else model
    p = _RefPipe(m)
    for item in trace:
        ins, pc, taken = item[0], item[1], item[2]
        addr = item[3] if len(item) > 3 else None
        blk = item[4] if len(item) > 4 else None
        if blk is not None:
            p.fetch(*blk)
        p.step(ins, pc, taken, addr)
    return p.result()


def block_cycles_reference(insns: Sequence[Insn], model: CoreModel | str, iterations: int) -> int:
    """Cycles of ``iterations`` back-to-back copies of a straight block as llvm-mca sees it:
    every branch correctly predicted and not taken, ideal memory. Pure Python."""
    m = CORE_MODELS[model] if isinstance(model, str) else model
    p = _RefPipe(m, perfect_branches=True)
    for _ in range(iterations):
        for ins in insns:
            p.step(ins)
    return p.end


def expand_trace(ids: np.ndarray, blocks: Sequence[tuple[int, int, list[Insn]]], halt: int,
                 mem: Sequence[Sequence[int]] | None = None):  # fmt: skip
    """Yield ``(insn, pc, taken, addr, block)`` for every executed instruction of a block trace (the
    input of :func:`simulate_reference`); a block-ending branch is taken iff the next block does not
    start right after it; ``mem[e]`` lists the data addresses of the ``e``-th executed block.
    ``O(executed instructions)`` Python steps: for tests and small traces."""
    ids = np.asarray(ids).tolist()
    for e, b in enumerate(ids):
        addr, size, insns = blocks[b]
        nxt = blocks[ids[e + 1]][0] if e + 1 < len(ids) else halt
        pc = addr
        addrs = list(mem[e]) if mem is not None else []
        j = 0
        for k, ins in enumerate(insns):
            a = None
            if ins.kind in ("load", "store") and j < len(addrs):
                a = addrs[j]
                j += 1
            yield ins, pc, nxt != addr + size, a, ((addr, size) if k == 0 else None)
            pc += ins.length


# -- the compiled model: hostsim.c -----------------------------------------------------------------
class _Model(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in ("width", "dual_pipes")] + [
        ("lat", ctypes.c_int64 * 8)] + [(n, ctypes.c_int64) for n in (
            "lat_div32", "div_busy", "div32_busy", "bypass", "bypass_prod", "bypass_cons",
            "inorder_wb", "mispredict", "taken_ends_group", "perfect_branches", "bht_entries",
            "bht_init", "l1i_sets", "l1i_ways", "l1i_shift", "l1i_penalty", "l1d_sets", "l1d_ways",
            "l1d_shift", "l1d_penalty", "bypass_store_data")]  # fmt: skip


class _PipeResult(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in ("cycles", "mispredicts", "branches", "l1i_accesses",
                                              "l1i_misses", "l1d_accesses", "l1d_misses",
                                              "memo_hits", "memo_misses")]  # fmt: skip


class _SimStats(ctypes.Structure):
    _fields_ = [("kind_count", ctypes.c_int64 * 8), ("blocks", ctypes.c_int64),
                ("stack_min", ctypes.c_uint64), ("work_max", ctypes.c_uint64)]  # fmt: skip


_LIB = None

#: C sources of the host library, compiled together: the in-hook core models and the RV64
#: interpreter that can drive them instead of unicorn.
HOST_SOURCES = ("hostsim.c", "interp.c")


def host_library() -> ctypes.CDLL:
    """Compile (once, cached by content hash) and load ``hostsim.c`` and ``interp.c`` for the host.

    Raises ``RuntimeError`` with the compiler's message when the build fails.
    """
    global _LIB
    if _LIB is not None:
        return _LIB
    here = os.path.dirname(__file__)
    srcs = [os.path.join(here, name) for name in HOST_SOURCES]
    text = b"".join(open(src, "rb").read() for src in srcs)
    digest = hashlib.sha256(text + sys.platform.encode()).hexdigest()[:16]
    out = cache_dir() / f"hostsim-{digest}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        cmd = [sys.executable, "-m", "ziglang", "cc", "-shared", "-fPIC", "-O2", "-std=c99",
               *srcs, "-o", str(tmp)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"zig cc failed to build the host helper:\n{proc.stderr}")
        tmp.replace(out)
    lib = ctypes.CDLL(str(out))
    vp, i64, u64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64
    lib.memplan_pipe_new.restype = vp
    lib.memplan_pipe_new.argtypes = [ctypes.POINTER(_Model)]
    lib.memplan_pipe_free.argtypes = [vp]
    lib.memplan_pipe_result.argtypes = [vp, ctypes.POINTER(_PipeResult)]
    lib.memplan_block_cycles.restype = i64
    lib.memplan_block_cycles.argtypes = [ctypes.POINTER(_Model), vp, i64, i64]
    lib.memplan_sim_new.restype = vp
    lib.memplan_sim_new.argtypes = [u64, i64, vp]
    lib.memplan_sim_add_pipe.restype = i64
    lib.memplan_sim_add_pipe.argtypes = [vp, vp]
    lib.memplan_set_memo.restype = ctypes.c_int
    lib.memplan_set_memo.argtypes = [ctypes.c_int]
    lib.memplan_sim_regions.argtypes = [vp, u64, u64, u64, u64]
    lib.memplan_sim_free.argtypes = [vp]
    lib.memplan_sim_finish.restype = i64
    lib.memplan_sim_finish.argtypes = [vp, u64]
    lib.memplan_sim_stats.argtypes = [vp, ctypes.POINTER(_SimStats), vp, vp]
    lib.memplan_block_hook.argtypes = [vp, u64, ctypes.c_uint32, vp]
    lib.memplan_mem_hook.argtypes = [vp, ctypes.c_int, u64, ctypes.c_int, i64, vp]
    lib.memplan_interp_run.restype = i64
    lib.memplan_interp_run.argtypes = [vp, i64, vp, u64, u64, i64, vp, vp]
    _LIB = lib
    return lib


def _mask(kinds) -> int:
    return sum(1 << _KIND[k] for k in kinds)


def _c_model(m: CoreModel, perfect_branches: bool = False) -> _Model:
    if m.bht_entries & (m.bht_entries - 1):
        raise ValueError(f"core model {m.name!r}: bht_entries must be a power of two")
    lat = (ctypes.c_int64 * 8)(*[m.latency[k] for k in CLASSES])
    c = m.caches
    geo = [0] * 8
    if c is not None:
        geo = [c.l1i_size // (c.l1i_ways * c.line), c.l1i_ways, c.line.bit_length() - 1,
               c.l1i_penalty, c.l1d_size // (c.l1d_ways * c.line), c.l1d_ways,
               c.line.bit_length() - 1, c.l1d_penalty]  # fmt: skip
    return _Model(m.width, int(m.dual_pipes), lat, m.div32_latency, m.div_busy, m.div32_busy,
                  m.bypass, _mask(m.bypass_producers), _mask(m.bypass_consumers),
                  int(m.inorder_writeback), m.mispredict, int(m.taken_ends_group),
                  int(perfect_branches), m.bht_entries, m.bht_init, *geo,
                  int(m.bypass_store_data))  # fmt: skip


def _insn_rows(insns: Sequence[Insn]) -> np.ndarray:
    rows = [(_KIND[i.kind], i.rd, *(list(i.srcs) + [-1, -1, -1])[:3],
             int(i.word32) | (i.data + 1) << 1, i.length) for i in insns]  # fmt: skip
    return np.array(rows, np.int8).reshape(-1, 7)


def block_cycles(insns: Sequence[Insn], model: CoreModel | str, iterations: int) -> int:
    """:func:`block_cycles_reference` in C (same semantics)."""
    m = CORE_MODELS[model] if isinstance(model, str) else model
    rows = np.ascontiguousarray(_insn_rows(insns))
    cm = _c_model(m, perfect_branches=True)
    return int(host_library().memplan_block_cycles(ctypes.byref(cm), rows.ctypes.data, len(rows),
                                                   iterations))  # fmt: skip


def decode_table(base: int, code: bytes) -> np.ndarray:
    """Decode an instruction at every halfword of ``code`` (loaded at ``base``): int8 array
    ``(len(code) // 2, 7)`` of kind, rd, three sources (``-1`` = none), ``word32 | (data + 1) << 1``
    (:class:`.decode.Insn`), length. Entries
    that do not start an executed instruction are never read. ``O(len(code))``, once per image."""
    n = len(code) // 2
    out = np.zeros((n, 7), np.int8)
    out[:, 6] = 2
    out[:, 1:5] = -1
    padded = bytes(code) + b"\0\0"
    for k in range(n):
        try:
            ins = decode(padded, 2 * k)
        except Exception:  # noqa: BLE001 - data or a truncated word: never executed
            continue
        out[k] = _insn_rows([ins])[0]
    return out


def simulate_trace(
    ids: np.ndarray,
    blocks: Sequence[tuple[int, int, list[Insn]]],
    halt: int,
    model: CoreModel | str,
    mem: Sequence[Sequence[int]] | None = None,
) -> dict[str, int]:
    """Run the compiled model (``hostsim.c``) over a stored block trace by calling its hooks
    directly, as the emulator would (for tests: the result must equal :func:`simulate_reference`).

    Parameters
    ----------
    ids : int array ``(executions,)``: index into ``blocks`` of each executed block, in order.
    blocks : list of ``(address, size_bytes, decoded instructions)``.
    halt : address control reaches after the last block (decides the last branch's outcome).
    model : CoreModel or key of :data:`CORE_MODELS`.
    mem : optional, data addresses of each executed block (loads and stores in program order).

    Returns the model's counters (``cycles``, ``mispredicts``, ``branches``, cache counters).
    """
    m = CORE_MODELS[model] if isinstance(model, str) else model
    lo = min(a for a, _, _ in blocks)
    hi = max(a + sz for a, sz, _ in blocks)
    table = np.zeros(((hi - lo) // 2 + 1, 7), np.int8)
    table[:, 1:5] = -1
    table[:, 6] = 2
    for a, _, insns in blocks:
        pc = a
        for ins in insns:
            table[(pc - lo) // 2] = _insn_rows([ins])[0]
            pc += ins.length
    sim = HostSim(lo, table, [m])
    lib = sim.lib
    for e, b in enumerate(np.asarray(ids).tolist()):
        a, sz, _ = blocks[b]
        lib.memplan_block_hook(None, a, sz, sim.sim)
        for addr in mem[e] if mem is not None else ():
            lib.memplan_mem_hook(None, 0, addr, 8, 0, sim.sim)
    return sim.finish(halt).pipes[0]


@dataclass
class SimResult:
    """What the in-hook models report after a run.

    pipes : list of dicts (one per model variant, in the order given): ``cycles``,
    ``mispredicts``, ``branches``, ``l1i_accesses``, ``l1i_misses``, ``l1d_accesses``,
    ``l1d_misses``. by_kind : ``{class: executed instructions}``. blocks : executed blocks.
    block_counts : ``{address: (executions, size_bytes)}`` of every executed block start.
    stack_bytes : bytes of stack below the initial stack pointer the core touched.
    scratch_bytes : bytes of the host-provided work array the core touched.
    """

    pipes: list
    by_kind: dict
    blocks: int
    block_counts: dict
    stack_bytes: int
    scratch_bytes: int


class HostSim:
    """The in-hook cycle models of one emulated run (``hostsim.c``), for one decoded image.

    Parameters
    ----------
    base : int
        Address of the decode table's first halfword.
    table : int8 array from :func:`decode_table`
    models : list of CoreModel
        One model state each (e.g. a core with and without caches), all advanced on the same
        block and data-address stream.
    """

    def __init__(self, base: int, table: np.ndarray, models: Sequence[CoreModel]):
        self.lib = host_library()
        self.table = np.ascontiguousarray(table, np.int8)
        self.base = base
        self.n = len(self.table)
        self.sim = self.lib.memplan_sim_new(base, self.n, self.table.ctypes.data)
        self.pipes = []
        self._models = [_c_model(m) for m in models]
        for cm in self._models:
            p = self.lib.memplan_pipe_new(ctypes.byref(cm))
            if not p or not self.sim:
                raise RuntimeError("out of memory creating the cycle model")
            self.pipes.append(p)
            self.lib.memplan_sim_add_pipe(self.sim, p)
        self.stack_top = 0
        self.work_lo = 0

    def regions(self, stack_lo: int, stack_top: int, work_lo: int, work_hi: int) -> None:
        """Address ranges whose touched extent is measured (stack below ``stack_top``, scratch)."""
        self.stack_top, self.work_lo = stack_top, work_lo
        self.lib.memplan_sim_regions(self.sim, stack_lo, stack_top, work_lo, work_hi)

    def attach(self, uc) -> tuple:
        """Register the block and memory hooks on a unicorn instance; returns objects to keep."""
        from unicorn.unicorn_const import UC_HOOK_BLOCK, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE
        from unicorn.unicorn_py3.unicorn import uclib

        keep = []
        for fn, kind in ((self.lib.memplan_block_hook, UC_HOOK_BLOCK),
                         (self.lib.memplan_mem_hook, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE)):  # fmt: skip
            fptr = ctypes.cast(fn, ctypes.c_void_p)
            hh = ctypes.c_size_t()
            err = uclib.uc_hook_add(uc._uch, ctypes.byref(hh), kind, fptr,
                                    ctypes.c_void_p(self.sim), 1, 0)  # fmt: skip
            if err != 0:
                raise RuntimeError(f"unicorn refused the cycle-model hook (error {err})")
            keep.append((fptr, hh))
        return tuple(keep)

    def finish(self, halt: int) -> SimResult:
        """Cost the last block, read every counter and free the C state."""
        err = self.lib.memplan_sim_finish(self.sim, halt)
        if err == 1:
            raise RuntimeError("a basic block made more than 256 memory accesses (model buffer)")
        if err == 2:
            raise RuntimeError("an executed block lies outside the decoded code segment")
        if err == 3:
            raise RuntimeError("two executed blocks of different sizes start at one address "
                               "(per-block counters assume one size)")
        pipes = []
        for p in self.pipes:
            r = _PipeResult()
            self.lib.memplan_pipe_result(p, ctypes.byref(r))
            pipes.append({k: int(getattr(r, k)) for k, _ in _PipeResult._fields_})
        st = _SimStats()
        counts = np.zeros(self.n, np.int64)
        sizes = np.zeros(self.n, np.int64)
        self.lib.memplan_sim_stats(self.sim, ctypes.byref(st), counts.ctypes.data,
                                   sizes.ctypes.data)  # fmt: skip
        self.close()
        nz = np.flatnonzero(counts)
        block_counts = {int(self.base + 2 * k): (int(counts[k]), int(sizes[k])) for k in nz}
        by_kind = {k: int(st.kind_count[i]) for i, k in enumerate(CLASSES)}
        stack = self.stack_top - st.stack_min if st.stack_min != 2**64 - 1 else 0
        scratch = max(0, int(st.work_max) - self.work_lo) if st.work_max else 0
        return SimResult(pipes, by_kind, int(st.blocks), block_counts, int(stack), scratch)

    def close(self) -> None:
        """Free the C state (idempotent)."""
        if self.sim:
            for p in self.pipes:
                self.lib.memplan_pipe_free(p)
            self.lib.memplan_sim_free(self.sim)
            self.sim = None
            self.pipes = []

    def __del__(self):  # pragma: no cover - safety net
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
