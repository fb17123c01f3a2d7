"""Run an allocator core of the RV64 image in unicorn and record its basic-block trace.

The host writes the problem into emulator memory (a ``job_t``, see ``cores.c``: half-open lifetimes
``[start, end)`` in steps, sizes and alignments in bytes, resident flags), points ``a0`` at it, sets
``ra`` to ``memplan_halt`` and starts at ``memplan_run``; emulation stops when the core returns. A
basic-block hook appends each executed block's address to a list (one Python call per block, not per
instruction); blocks are decoded once per address afterwards.

Memory map: the image at ``0x10000`` (``link.ld``), a 1 MiB stack below ``0x400000``, the job at
``JOB_ADDR = 0x1000000`` followed by its arrays (``8 * (14 n + 16)`` bytes for ``n`` buffers).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .build import Image

__all__ = ["CORES", "JOB_ADDR", "RunResult", "run_core"]

#: Core ids of ``memplan_run`` (``cores.c``) by planner registry name.
CORES = {
    "greedy_in_order": 0,
    "first_fit": 1,
    "best_fit": 2,
    "greedy_by_size": 3,
    "freelist_bump": 4,
}

JOB_ADDR = 0x1000000
STACK_BASE, STACK_SIZE = 0x300000, 0x100000
_HEADER = 16 * 8  # job_t: 13 int64 fields, padded


@dataclass
class RunResult:
    """What one emulated run returns.

    offsets : int64 array ``(n,)`` bytes, problem order. arena : bytes reported by the core.
    trace : int64 array of executed block addresses in execution order. block_sizes : ``{address:
    bytes}`` of each block as the emulator translated it. halt : address the core returned to.
    code : ``(base, bytes)`` of the executable segment, for decoding blocks.
    """

    offsets: np.ndarray
    arena: int
    trace: np.ndarray
    block_sizes: dict
    halt: int
    code: tuple


def _page(n: int) -> int:
    return (n + 0xFFF) & ~0xFFF


def _native_hook(uc):
    """Register hostsim.c's block hook on ``uc``; ``None`` when the host helper is unavailable."""
    import ctypes

    try:
        from unicorn.unicorn_const import UC_HOOK_BLOCK
        from unicorn.unicorn_py3.unicorn import uclib

        from .cycles import host_library

        lib = host_library()
    except Exception:  # noqa: BLE001 - fall back to the Python hook
        return None
    handle = lib.memplan_trace_new()
    fptr = ctypes.cast(lib.memplan_trace_hook, ctypes.c_void_p)
    hh = ctypes.c_size_t()
    err = uclib.uc_hook_add(
        uc._uch, ctypes.byref(hh), UC_HOOK_BLOCK, fptr, ctypes.c_void_p(handle), 1, 0
    )
    if err != 0:
        lib.memplan_trace_free(handle)
        return None
    return lib, handle, (fptr, hh)


def run_core(
    image: Image,
    core: str,
    starts: np.ndarray,
    ends: np.ndarray,
    sizes: np.ndarray,
    alignments: np.ndarray,
    resident: np.ndarray,
    granule: int = 16,
    use_native: bool = True,
) -> RunResult:
    """Emulate ``core`` on one problem (arrays of shape ``(n,)``, int64; lifetimes half-open).

    Complexity: the emulated core's own (e.g. ``O(n^2)`` instructions for the greedy cores) plus one
    Python callback per executed basic block.

    Raises
    ------
    ValueError
        Unknown core name.
    RuntimeError
        The emulator faulted or the core reported an error status.
    """
    from unicorn import UC_ARCH_RISCV, UC_HOOK_BLOCK, UC_MODE_RISCV64, Uc, UcError
    from unicorn.riscv_const import UC_RISCV_REG_A0, UC_RISCV_REG_RA, UC_RISCV_REG_SP

    if core not in CORES:
        raise ValueError(f"unknown RV64 core {core!r}; known: {', '.join(CORES)}")
    n = len(starts)
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    lo = min(a for a, _ in image.segments) & ~0xFFF
    hi = max(a + len(b) for a, b in image.segments)
    uc.mem_map(lo, _page(hi - lo))
    entry = image.symbols["memplan_run"][0]
    code = None
    for addr, body in image.segments:
        uc.mem_write(addr, body)
        if addr <= entry < addr + len(body):
            code = (addr, bytes(body))
    uc.mem_map(STACK_BASE, STACK_SIZE)
    arrays = [starts, ends, sizes, alignments, resident]
    p_in = [JOB_ADDR + _HEADER + k * 8 * n for k in range(5)]
    p_off = JOB_ADDR + _HEADER + 5 * 8 * n
    p_work = p_off + 8 * n
    total = _HEADER + 8 * (14 * n + 16)
    uc.mem_map(JOB_ADDR, _page(total))
    header = struct.pack("<4q7Q2q", CORES[core], n, int(granule), 0, *p_in, p_off, p_work, 0, 0)
    uc.mem_write(JOB_ADDR, header)
    for p, a in zip(p_in, arrays, strict=True):
        uc.mem_write(p, np.ascontiguousarray(a, dtype="<i8").tobytes())
    halt = image.symbols["memplan_halt"][0]
    uc.reg_write(UC_RISCV_REG_SP, STACK_BASE + STACK_SIZE - 64)
    uc.reg_write(UC_RISCV_REG_A0, JOB_ADDR)
    uc.reg_write(UC_RISCV_REG_RA, halt)
    native = _native_hook(uc) if use_native else None
    trace_py: list[int] = []
    sizes_seen: dict[int, int] = {}
    if native is None:
        append = trace_py.append

        def on_block(_uc, address, size, _user):
            append(address)
            if address not in sizes_seen:
                sizes_seen[address] = size

        uc.hook_add(UC_HOOK_BLOCK, on_block)
    try:
        uc.emu_start(entry, halt)
    except UcError as e:
        raise RuntimeError(f"RV64 core {core!r} faulted in the emulator: {e}") from None
    finally:
        if native is not None:
            lib, handle, _keep = native
            length = lib.memplan_trace_len(handle)
            packed = np.empty(max(length, 0), np.uint64)
            if length > 0:
                lib.memplan_trace_copy(handle, packed.ctypes.data)
            lib.memplan_trace_free(handle)
    if native is not None:
        if length < 0:
            raise RuntimeError("out of memory while recording the block trace")
        addrs = (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
        uniq, first = np.unique(addrs, return_index=True)
        sizes_seen = dict(
            zip(
                uniq.tolist(),
                (packed[first] >> np.uint64(32)).astype(np.int64).tolist(),
                strict=True,
            )
        )
        trace = addrs
    else:
        trace = np.asarray(trace_py, dtype=np.int64)
    arena, status = struct.unpack("<qq", uc.mem_read(JOB_ADDR + 11 * 8, 16))
    if status != 0:
        raise RuntimeError(f"RV64 core {core!r} returned status {status}")
    offsets = np.frombuffer(bytes(uc.mem_read(p_off, 8 * n)), dtype="<i8").astype(np.int64)
    return RunResult(
        offsets=offsets,
        arena=int(arena),
        trace=trace,
        block_sizes=sizes_seen,
        halt=halt,
        code=code,
    )
