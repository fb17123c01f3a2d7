"""Optional cross-check: run the same RV64 allocator-core image in the ``rvsim`` cycle-level simulator.

Issue 5 item 7. ``rvsim`` (PyPI, "Cycle-level RISC-V system simulator", 2.x; Rust core with Python
bindings) simulates an RV64IMAFDC SoC cycle by cycle with an in-order or out-of-order back end,
caches and a branch predictor. This module feeds it the very image our unicorn measurement uses
(:func:`experiments.rv64.build.build_image`) and reports its cycles and retired instructions beside
our own in-order core models (:mod:`experiments.rv64.cycles`).

How the image gets into rvsim (its 2.1 API, read from the installed sources):

* ``rvsim.Simulator(config_dict, elf_data=bytes)`` loads the PT_LOAD segments of an ELF at their
  physical addresses and starts at the ELF entry, in machine mode, with no firmware.
* rvsim has **no memory-write API** (``Simulator.mem64`` is read-only; ``regs`` and ``pc`` are
  writable). So the host writes the problem by *building the ELF*: :func:`job_elf` emits a minimal
  ELF64 whose segments are the image's own PT_LOAD segments (byte-identical code and data at
  ``0x10000``) plus one more segment holding the ``job_t`` and its arrays at
  :data:`experiments.rv64.emulate.JOB_ADDR`, laid out exactly as :func:`.emulate.run_core` writes it.
  The entry is ``memplan_run``.
* RAM is moved to ``ram_base = 0`` (rvsim's default is ``0x8000_0000``; the image is linked at
  ``0x10000`` with the medlow code model, so it cannot move). The devices stay at rvsim's defaults
  (syscon ``0x100000``, CLINT ``0x2000000``, UART ``0x10000000``) and do not overlap the image, the
  stack (``0x300000``-``0x400000``) or the job.
* Registers are set as in unicorn (``sp``, ``a0 = &job``, ``ra = memplan_halt``) and
  ``Simulator.run_to(pc=memplan_halt)`` stops when the core's final ``ret`` has retired, so rvsim
  counts exactly the executed range our basic-block trace counts (checked by the tests: the retired
  instruction count equals ours for the same build).
* Offsets, arena and status are read back with ``Simulator.read_phys_bytes``.

Core configurations (:data:`RVSIM_CORES`): rvsim ships no U74 or C906 preset (its presets are a
generic OoO core, an M4-class core, Cortex-A72, M1 and the SiFive P550), so ``u74`` and ``c906``
are rvsim's **in-order back end** with the issue width, multiply and divide latencies and L1D
load-to-use latency of our models; everything else (pipeline depth and hence mispredict penalty,
gshare predictor, caches, memory) is rvsim's own. See ``results/bench_rv64.md`` for how the two
models differ.

Entry points: :func:`available` and :func:`run_rvsim`. Nothing imports this module unless asked;
a missing ``rvsim`` only makes :func:`available` return ``(False, reason)``.
"""

from __future__ import annotations

import importlib
import struct
from dataclasses import dataclass, field

import numpy as np

from planners.errors import MemplanError

__all__ = [
    "RVSIM_CORES",
    "RvsimResult",
    "RvsimUnavailable",
    "available",
    "job_bytes",
    "job_elf",
    "rvsim_config",
    "run_rvsim",
]

_INSTALL = "pip install 'memplan[rvsim]'  (or: .venv/bin/pip install rvsim)"

#: rvsim configurations compared with our core models (keys match :data:`.cycles.CORE_MODELS`).
#: ``build`` is the image whose trace our model of the same name costs.
RVSIM_CORES: dict[str, dict] = {
    "u74": {
        "build": "sifive_u74",
        "width": 2,
        "int_mul_latency": 3,
        "int_div_latency": 66,
        "l1d_latency": 3,
        "sources": {
            "width/mul/div/load-to-use": "as CORE_MODELS['u74'] (LLVM RISCVSchedSiFive7.td)",
            "L1I/L1D 32 KiB, L2 2 MiB": "SiFive U74 core complex manual (cache sizes)",
            "pipeline depth, mispredict penalty, gshare, cache timing": "rvsim's own in-order model",
        },
    },
    "c906": {
        "build": "baseline_rv64",
        "width": 1,
        "int_mul_latency": 4,
        "int_div_latency": 36,
        "l1d_latency": 3,
        "sources": {
            "width/mul/div/load-to-use": "as CORE_MODELS['c906'] (assumptions, see cycles.py)",
            "L1I/L1D 32 KiB, L2 256 KiB": "assumption (C906 L1 is configurable 8-64 KiB; no L2)",
            "pipeline depth, mispredict penalty, gshare, cache timing": "rvsim's own in-order model",
        },
    },
}


class RvsimUnavailable(MemplanError, RuntimeError):
    """``rvsim`` (or the RV64 toolchain that builds the image) is missing or broken."""


def available() -> tuple[bool, str]:
    """Whether the rvsim cross-check can run here: ``(True, "")`` or ``(False, reason)``.

    Needs ``rvsim`` (the simulator) plus ``ziglang`` and ``unicorn`` (the image is built by
    :mod:`.build`, and the ``unicorn`` run is the reference the offsets are compared with). The reason
    names what is missing and how to install it.
    """
    from . import available as rv64_available

    ok, reason = rv64_available()
    if not ok:
        return False, reason
    try:
        mod = importlib.import_module("rvsim")
    except Exception as e:  # noqa: BLE001 - ImportError or a broken wheel
        return False, (
            f"the rvsim cross-check needs the Python package rvsim (cycle-level RISC-V simulator); "
            f"import failed ({type(e).__name__}: {e}). Install with: {_INSTALL}"
        )
    major = str(getattr(mod, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 2:
        return (
            False,
            f"rvsim>=2 is needed (its Simulator(elf_data=...) and run_to API); found {mod.__version__}",
        )
    return True, ""


@dataclass
class RvsimResult:
    """One rvsim run of an allocator core on one problem.

    Attributes
    ----------
    planner : registry name of the core.
    core : key of :data:`RVSIM_CORES` (``"u74"`` or ``"c906"``).
    build : image build that ran (``"sifive_u74"`` or ``"baseline_rv64"``).
    n : number of buffers.
    cycles : int, rvsim cycles from ``memplan_run`` until its return retired.
    instructions : int, instructions rvsim retired over that range.
    offsets : int64 array ``(n,)`` bytes, problem order, read back from rvsim's memory.
    python_offsets : int64 array ``(n,)`` of the Python planner (empty when ``check=False``).
    offsets_match : bool or None, rvsim's offsets equal the Python planner's.
    arena : bytes reported by the core.
    stats : selected rvsim statistics (branch mispredicts, cache misses, stall cycles).
    """

    planner: str
    core: str
    build: str
    n: int
    cycles: int
    instructions: int
    offsets: np.ndarray
    python_offsets: np.ndarray
    offsets_match: bool | None
    arena: int
    stats: dict = field(default_factory=dict)


def job_bytes(
    core_id: int, starts, ends, sizes, alignments, resident, granule: int, job_addr: int
) -> tuple[bytes, int]:
    """The ``job_t`` and its arrays as :func:`.emulate.run_core` lays them out at ``job_addr``.

    Arrays have shape ``(n,)`` (int64; lifetimes half-open ``[start, end)`` in steps, sizes and
    alignments in bytes). Returns ``(bytes, offsets_address)``; the block is
    ``128 + 8 * (14 n + 16)`` bytes (header, five inputs, offsets, scratch). ``O(n)``.
    """
    from .emulate import _HEADER
    from .emulate import job_bytes as job_size

    n = len(starts)
    p_in = [job_addr + _HEADER + k * 8 * n for k in range(5)]
    p_off = job_addr + _HEADER + 5 * 8 * n
    p_work = p_off + 8 * n
    buf = bytearray(job_size(n))
    header = struct.pack("<4q7Q2q", core_id, n, int(granule), 0, *p_in, p_off, p_work, 0, 0)
    buf[: len(header)] = header
    for p, a in zip(p_in, (starts, ends, sizes, alignments, resident), strict=True):
        b = np.ascontiguousarray(a, dtype="<i8").tobytes()
        buf[p - job_addr : p - job_addr + len(b)] = b
    return bytes(buf), p_off


def job_elf(segments, extra: tuple[int, bytes], entry: int) -> bytes:
    """A minimal little-endian ELF64 RISC-V executable: ``segments`` plus ``extra`` as PT_LOADs.

    Parameters
    ----------
    segments : list of ``(address, bytes)``
        The image's PT_LOAD segments (:attr:`.build.Image.segments`, zero-filled to memory size).
    extra : ``(address, bytes)``
        One more segment (the job).
    entry : int
        Entry address (``memplan_run``).

    No section headers (rvsim needs none; symbols come from the original image). ``O(size)``.
    """
    segs = [*segments, extra]
    phoff = 64
    data_off = phoff + 56 * len(segs)
    phdrs, body = [], bytearray()
    for addr, data in segs:
        pad = (-(data_off + len(body))) % 16
        body += bytes(pad)
        off = data_off + len(body)
        phdrs.append(struct.pack("<IIQQQQQQ", 1, 7, off, addr, addr, len(data), len(data), 16))
        body += data
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH", 2, 243, 1, entry, phoff, 0, 0x5, 64, 56, len(segs), 64, 0, 0
    )  # e_flags 0x5 = RVC | double-float ABI
    return ehdr + b"".join(phdrs) + bytes(body)


def rvsim_config(core: str) -> dict:
    """The rvsim config dict of :data:`RVSIM_CORES` ``[core]``: in-order back end, RAM at 0.

    Raises ``ValueError`` for an unknown core. The in-order back end reads the functional-unit
    latencies from the dict, which rvsim's ``Config`` fills with its defaults for ``InOrder``; they
    are overridden here.
    """
    import rvsim

    if core not in RVSIM_CORES:
        raise ValueError(f"unknown rvsim core {core!r}; known: {', '.join(RVSIM_CORES)}")
    c = RVSIM_CORES[core]
    cfg = rvsim.Config(
        width=c["width"],
        backend=rvsim.Backend.InOrder(),
        branch_predictor=rvsim.BranchPredictor.GShare(),
        l1i=rvsim.Cache("32KB", ways=4, latency=1),
        l1d=rvsim.Cache("32KB", ways=8 if core == "u74" else 4, latency=c["l1d_latency"]),
        l2=rvsim.Cache("2MB" if core == "u74" else "256KB", ways=16 if core == "u74" else 8,
                       latency=20 if core == "u74" else 12),
        ram_base=0,
        ram_size="64MB",
        uart_quiet=True,
    )  # fmt: skip
    d = cfg.to_dict()
    fu = d["pipeline"]["fu_config"]
    fu["int_mul_latency"] = c["int_mul_latency"]
    fu["int_div_latency"] = c["int_div_latency"]
    return d


_STATS = {
    "mispredicts": "core0.bp.committed.mispredicts",
    "l1d_misses": "core0.cache.l1d.misses",
    "l1i_misses": "core0.cache.l1i.misses",
    "l2_misses": "core0.cache.l2.misses",
    "stall_data": "core0.pipeline.stalls.data",
    "stall_control": "core0.pipeline.stalls.control",
}


def run_rvsim(
    problem, planner_name: str, core: str = "u74", check: bool = True,
    max_instructions: int = 2_000_000_000,
) -> RvsimResult:  # fmt: skip
    """Run the RV64 core ``planner_name`` on ``problem`` in rvsim and read the offsets back.

    Parameters
    ----------
    problem : planners.Problem
        ``n`` buffers, half-open lifetimes ``[start, end)`` (steps), sizes and alignments (bytes).
    planner_name : one of :data:`experiments.rv64.CORE_NAMES`.
    core : key of :data:`RVSIM_CORES`; selects the rvsim configuration and the image build.
    check : bool, default True
        Also run the Python planner and set ``offsets_match``.
    max_instructions : int
        Safety stop: a core that has not returned after this many instructions is an error.

    Returns
    -------
    RvsimResult

    Raises
    ------
    RvsimUnavailable
        rvsim, ziglang or unicorn missing (the message says how to install them).
    ValueError
        Unknown planner or core.
    RuntimeError
        rvsim stopped elsewhere than ``memplan_halt`` (trap, instruction limit) or the core reported
        an error status.

    Notes
    -----
    Cost: rvsim simulates every cycle in Rust, about 0.3 to 1 million instructions per host second
    here (measured in ``results/bench_rv64.md``), so the ``O(n^2)`` cores at ``n = 1024`` (15 to 23
    million instructions) take tens of seconds per run.
    """
    ok, reason = available()
    if not ok:
        raise RvsimUnavailable(reason)
    from . import CORE_NAMES

    if planner_name not in CORE_NAMES:
        raise ValueError(
            f"planner {planner_name!r} has no RV64 core; cores exist for {', '.join(CORE_NAMES)}"
        )
    import rvsim

    from planners.freelist_bump import freelist_granule

    from .build import build_image
    from .emulate import CORES, JOB_ADDR, STACK_BASE, STACK_SIZE

    cfg = rvsim_config(core)
    build = RVSIM_CORES[core]["build"]
    image = build_image(build)
    granule = freelist_granule(problem) if planner_name == "freelist_bump" else 16
    job, p_off = job_bytes(
        CORES[planner_name], problem.starts, problem.ends, problem.sizes, problem.alignments,
        problem.resident.astype(np.int64), granule, JOB_ADDR,
    )  # fmt: skip
    entry = image.symbols["memplan_run"][0]
    halt = image.symbols["memplan_halt"][0]
    sim = rvsim.Simulator(cfg, elf_data=job_elf(image.segments, (JOB_ADDR, job), entry))
    if sim.pc != entry:
        raise RuntimeError(f"rvsim started at {sim.pc:#x}, not at memplan_run {entry:#x}")
    sim.regs[2] = STACK_BASE + STACK_SIZE - 64  # sp
    sim.regs[10] = JOB_ADDR  # a0
    sim.regs[1] = halt  # ra
    reason_stop, _ = sim.run_to(pc=halt, instructions=max_instructions)
    st = sim.stats
    if reason_stop != "pc" or sim.pc != halt:
        raise RuntimeError(
            f"rvsim: core {planner_name!r} did not return to memplan_halt ({halt:#x}): stopped by "
            f"{reason_stop!r} at pc {sim.pc:#x} after {sim.instructions_retired} instructions, "
            f"traps {st.get('hart0.traps', 0)}"
        )
    n = problem.n
    arena, status = struct.unpack("<qq", sim.read_phys_bytes(JOB_ADDR + 11 * 8, 16))
    if status != 0:
        raise RuntimeError(f"rvsim: RV64 core {planner_name!r} returned status {status}")
    offsets = np.frombuffer(sim.read_phys_bytes(p_off, 8 * n), dtype="<i8").astype(np.int64)
    if check:
        from planners.registry import get_planner

        from . import CORE_PLANNER

        py = np.asarray(get_planner(CORE_PLANNER[planner_name]).plan(problem).offsets, np.int64)
        match = bool(np.array_equal(py, offsets))
    else:
        py, match = np.zeros(0, np.int64), None
    return RvsimResult(
        planner=planner_name,
        core=core,
        build=build,
        n=n,
        cycles=int(st.cycles),
        instructions=int(st.instructions_retired),
        offsets=offsets,
        python_offsets=py,
        offsets_match=match,
        arena=int(arena),
        stats={k: int(st.get(path, 0) or 0) for k, path in _STATS.items()},
    )
