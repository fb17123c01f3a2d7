"""Run an allocator core of the RV64 image and cost it with in-hook core models.

The host writes the problem into emulator memory (a ``job_t``, see ``cores.c``: half-open lifetimes
``[start, end)`` in steps, sizes and alignments in bytes, resident flags), points ``a0`` at it, sets
``ra`` to ``memplan_halt`` and starts at ``memplan_run``; emulation stops when the core returns.

Two engines execute the image: our RV64IMC interpreter (``interp.c``, :func:`interp_run`; the
default) and unicorn (the reference). The interpreter cuts blocks where unicorn's translator cuts
its translation blocks and calls the same hooks in the same order, so every count is the same
(``tests/test_rv64_interp.py``); it avoids unicorn's slow path on every load and store.

The cycle models run inside the engine's hooks (:class:`.cycles.HostSim`, ``hostsim.c``): a block
hook costs each executed basic block once its successor is known and counts executions per block in
place, and a memory hook hands each block's data addresses to the cache models. Nothing grows with
the run length: memory is ``O(code size + n)``, so long runs (``n = 8192`` with the ``O(n^2)``
cores) fit in a bounded footprint. ``record=True`` (unicorn only) additionally keeps the full block
trace and data addresses in Python, for tests that replay them through
:func:`.cycles.simulate_reference`.

Memory map: the image at ``0x10000`` (``link.ld``), a 1 MiB stack below ``0x400000``, the job at
``JOB_ADDR = 0x1000000`` followed by its arrays (:func:`job_bytes`).
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field

import numpy as np

from .build import CORES, Image, build_image

__all__ = ["CORES", "ENGINES", "INTERP_STATUS", "JOB_ADDR", "RunResult", "core_stack_bytes",
           "interp_run", "job_bytes", "run_core", "work_words"]


def work_words(n: int) -> int:
    """int64 slots of the scratch array the host gives a core for ``n`` buffers (``cores.c``)."""
    return 13 * n + 64


def job_bytes(n: int) -> int:
    """Bytes of the job block: header, five input arrays, offsets, scratch."""
    return _HEADER + 8 * (6 * n + work_words(n))

JOB_ADDR = 0x1000000
STACK_BASE, STACK_SIZE = 0x300000, 0x100000
_HEADER = 16 * 8  # job_t: 13 int64 fields, padded


@dataclass
class RunResult:
    """What one emulated run returns.

    offsets : int64 array ``(n,)`` bytes, problem order. arena : bytes reported by the core.
    sim : :class:`.cycles.SimResult` of the in-hook models (``None`` without models).
    halt : address the core returned to. code : ``(base, bytes)`` of the executable segment.
    trace : with ``record=True``, int64 array of executed block addresses in order, else empty.
    block_sizes : with ``record=True``, ``{address: bytes}`` of each executed block.
    mem : with ``record=True``, one list of data addresses (loads and stores, program order) per
    executed block.
    """

    offsets: np.ndarray
    arena: int
    sim: object
    halt: int
    code: tuple
    trace: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    block_sizes: dict = field(default_factory=dict)
    mem: list = field(default_factory=list)


def _page(n: int) -> int:
    return (n + 0xFFF) & ~0xFFF


_TABLES: dict = {}


def code_table(image: Image):
    """``(base, code bytes, decode table)`` of the image's executable segment (cached per image)."""
    from .cycles import decode_table

    key = (image.digest, image.cpu)
    if key not in _TABLES:
        entry = image.symbols["memplan_run"][0]
        for addr, body in image.segments:
            if addr <= entry < addr + len(body):
                _TABLES[key] = (addr, bytes(body), decode_table(addr, bytes(body)))
                break
    return _TABLES[key]


#: Engines that can run a core: our interpreter (``interp.c``) or unicorn (the reference).
ENGINES = ("auto", "interp", "unicorn")

#: Status codes of ``memplan_interp_run`` (``interp.c``).
INTERP_STATUS = {1: "illegal or unsupported instruction", 2: "data access outside mapped memory",
                 3: "instruction fetch outside the image", 4: "instruction limit reached",
                 5: "ecall", 6: "ebreak", 7: "out of host memory"}  # fmt: skip


class _Region(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("len", ctypes.c_uint64), ("host", ctypes.c_void_p)]


def interp_run(regions, regs, entry: int, halt: int, sim=None, max_insns: int = 0):
    """Run RV64 code in the interpreter of ``interp.c`` from ``entry`` until the pc is ``halt``.

    Parameters
    ----------
    regions : list of ``(guest_address, numpy uint8 array)``
        The guest memory: each array is mapped at ``[guest_address, guest_address + size)``
        (bytes) and modified in place by stores. Code is fetched from the region holding
        ``entry``.
    regs : sequence of 32 integers
        Initial ``x0..x31`` (``x0`` ignored; values taken modulo ``2**64``).
    entry, halt : int
        Guest addresses (bytes) of the first instruction and of the stop address.
    sim : :class:`.cycles.HostSim` or None
        Its block and memory hooks see every executed block and data access, as with unicorn.
    max_insns : int
        Stop after that many instructions (0: no limit).

    Returns
    -------
    ``(status, final registers (list of 32), instructions executed, stop pc, fault address)``;
    status 0 means the halt address was reached, else a key of :data:`INTERP_STATUS` (the
    faulting instruction is not counted; the fault address is set for status 2).

    Raises
    ------
    ValueError
        A memory array that is not C-contiguous ``uint8``.

    Semantics: the RISC-V Unprivileged ISA (20191213), RV64I, M and the integer C forms.
    """
    from .cycles import host_library

    lib = host_library()
    arr = (_Region * len(regions))()
    for i, (lo, buf) in enumerate(regions):
        if buf.dtype != np.uint8 or not buf.flags.c_contiguous:
            raise ValueError("interpreter memory must be C-contiguous uint8 arrays")
        arr[i] = _Region(lo, buf.size, buf.ctypes.data)
    r = (ctypes.c_uint64 * 32)(*[int(v) & (2**64 - 1) for v in regs])
    out = (ctypes.c_uint64 * 3)()
    status = lib.memplan_interp_run(arr, len(regions), r, entry, halt, int(max_insns),
                                    sim.sim if sim is not None else None, out)  # fmt: skip
    return int(status), list(r), int(out[0]), int(out[1]), int(out[2])


def run_core(
    image: Image,
    core: str,
    starts: np.ndarray,
    ends: np.ndarray,
    sizes: np.ndarray,
    alignments: np.ndarray,
    resident: np.ndarray,
    granule: int = 16,
    models=(),
    record: bool = False,
    engine: str = "auto",
) -> RunResult:
    """Emulate ``core`` on one problem (arrays of shape ``(n,)``, int64; lifetimes half-open).

    Parameters
    ----------
    models : sequence of :class:`.cycles.CoreModel`
        Core models advanced inside the hooks (one state each); empty: only the block counters.
    record : bool
        Also keep the block trace and data addresses (Python hooks; ``O(run length)`` memory;
        needs unicorn).
    engine : ``"auto"``, ``"interp"`` or ``"unicorn"``
        What executes the image: our RV64IMC interpreter (``interp.c``; 1.3x to 1.9x less CPU time,
        same block and data-address stream, checked against unicorn by
        ``tests/test_rv64_interp.py``) or unicorn (the reference). ``auto``: the interpreter,
        unicorn when ``record`` is set.

    Complexity: the emulated core's own (e.g. ``O(n^2)`` instructions for the greedy cores) plus
    one native callback per executed basic block and per data access.

    Raises
    ------
    ValueError
        Unknown core name or engine, or ``record`` with the interpreter.
    RuntimeError
        The emulator faulted or the core reported an error status.
    """
    if core not in CORES:
        raise ValueError(f"unknown RV64 core {core!r}; known: {', '.join(CORES)}")
    if engine not in ENGINES:
        raise ValueError(f"unknown RV64 engine {engine!r}; known: {', '.join(ENGINES)}")
    if engine == "auto":
        engine = "unicorn" if record else "interp"
    if record and engine != "unicorn":
        raise ValueError("record=True keeps the trace through unicorn hooks; use engine='unicorn'")
    from .cycles import HostSim

    n = len(starts)
    lo = min(a for a, _ in image.segments) & ~0xFFF
    hi = max(a + len(b) for a, b in image.segments)
    entry = image.symbols["memplan_run"][0]
    halt = image.symbols["memplan_halt"][0]
    base, code, table = code_table(image)
    p_in = [JOB_ADDR + _HEADER + k * 8 * n for k in range(5)]
    p_off = JOB_ADDR + _HEADER + 5 * 8 * n
    p_work = p_off + 8 * n
    total = job_bytes(n)
    # the guest memory, built once for either engine: image, stack, job block
    img_mem = np.zeros(_page(hi - lo), np.uint8)
    for addr, body in image.segments:
        img_mem[addr - lo: addr - lo + len(body)] = np.frombuffer(bytes(body), np.uint8)
    job = np.zeros(_page(total), np.uint8)
    header = struct.pack("<4q7Q2q", CORES[core], n, int(granule), 0, *p_in, p_off, p_work, 0, 0)
    job[: len(header)] = np.frombuffer(header, np.uint8)
    for p, a in zip(p_in, [starts, ends, sizes, alignments, resident], strict=True):
        raw = np.ascontiguousarray(a, dtype="<i8").view(np.uint8)
        job[p - JOB_ADDR: p - JOB_ADDR + raw.size] = raw
    memory = [(lo, img_mem), (STACK_BASE, np.zeros(STACK_SIZE, np.uint8)), (JOB_ADDR, job)]
    sp = STACK_BASE + STACK_SIZE - 64
    sim = HostSim(base, table, list(models))
    sim.regions(STACK_BASE, sp, p_work, JOB_ADDR + total)
    trace_py: list[int] = []
    sizes_seen: dict[int, int] = {}
    mem_py: list[list[int]] = []
    if engine == "interp":
        regs = [0] * 32
        regs[1], regs[2], regs[10] = halt, sp, JOB_ADDR  # ra, sp, a0
        status, _, _, stop_pc, fault = interp_run(memory, regs, entry, halt, sim)
        if status != 0:
            sim.close()
            where = f" (data address {fault:#x})" if status == 2 else ""
            raise RuntimeError(f"RV64 core {core!r} stopped in the interpreter at pc {stop_pc:#x}: "
                               f"{INTERP_STATUS.get(status, status)}{where}")  # fmt: skip
        result = sim.finish(halt)
    else:
        from unicorn import (
            UC_ARCH_RISCV,
            UC_HOOK_BLOCK,
            UC_HOOK_MEM_READ,
            UC_HOOK_MEM_WRITE,
            UC_MODE_RISCV64,
            Uc,
            UcError,
        )
        from unicorn.riscv_const import UC_RISCV_REG_A0, UC_RISCV_REG_RA, UC_RISCV_REG_SP

        uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
        for addr, buf in memory:
            uc.mem_map(addr, buf.size)
            uc.mem_write(addr, buf.tobytes())
        uc.reg_write(UC_RISCV_REG_SP, sp)
        uc.reg_write(UC_RISCV_REG_A0, JOB_ADDR)
        uc.reg_write(UC_RISCV_REG_RA, halt)
        _keep = sim.attach(uc)
        if record:

            def on_block(_uc, address, size, _user):
                trace_py.append(address)
                mem_py.append([])
                sizes_seen.setdefault(address, size)

            def on_mem(_uc, _access, address, _size, _value, _user):
                mem_py[-1].append(address)

            uc.hook_add(UC_HOOK_BLOCK, on_block)
            uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, on_mem)
        try:
            uc.emu_start(entry, halt)
        except UcError as e:
            sim.close()
            raise RuntimeError(f"RV64 core {core!r} faulted in the emulator: {e}") from None
        result = sim.finish(halt)
        del _keep
        job = np.frombuffer(bytes(uc.mem_read(JOB_ADDR, job.size)), np.uint8)
    arena, status = struct.unpack_from("<qq", job, 11 * 8)
    if status != 0:
        raise RuntimeError(f"RV64 core {core!r} returned status {status}")
    offsets = job[p_off - JOB_ADDR: p_off - JOB_ADDR + 8 * n].view("<i8").astype(np.int64)
    return RunResult(
        offsets=offsets,
        arena=int(arena),
        sim=result,
        halt=halt,
        code=(base, code),
        trace=np.asarray(trace_py, dtype=np.int64),
        block_sizes=sizes_seen,
        mem=mem_py,
    )


def core_stack_bytes(core: str, cpu: str) -> int:
    """Stack bytes the core ``core`` touches below its entry stack pointer, measured in an image
    holding that core alone (in the full image ``memplan_run``'s frame is sized for the largest
    core). The cores do not recurse, so a small problem (seed 000 section 8's graph) shows it.

    Parameters
    ----------
    core : str
        A key of :data:`CORES` (a planner registry name).
    cpu : str
        A build of :data:`experiments.rv64.build.CPUS`.

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    KeyError
        Unknown ``core``.
    ValueError, RuntimeError
        As :func:`experiments.rv64.build.build_image` (unknown ``cpu``, compiler failure).

    Notes
    -----
    Moved here from :mod:`experiments.rv64.build`, which imports no emulator (the emulator loads
    the images it builds).
    """
    from planners.examples import seed000_problem

    p = seed000_problem()
    img = build_image(cpu, only_core=CORES[core])
    run = run_core(img, core, p.starts, p.ends, p.sizes, p.alignments, p.resident.astype("int64"))
    return run.sim.stack_bytes
