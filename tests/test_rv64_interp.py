"""The RV64IMC interpreter (experiments/rv64/interp.c) against unicorn, the reference emulator.

Three levels:
- random straight-line and forward-branching programs over every instruction the interpreter
  decodes (RV64I, M, the integer C forms), with edge-case register values (0, -1, INT64_MIN,
  INT32_MIN, ...) for the divide and shift rules: the final registers and data memory equal
  unicorn's, and so do the block and data-address streams the hooks see (compared through the
  in-hook models' block counters and a cached core model's cycles, which depend on the order of
  the data addresses), including programs that cross a 4 KiB page;
- every allocator core on both builds: offsets, arena and every counter of the estimate equal;
- faults are reported, not run through: an illegal instruction and a data access outside the
  mapped memory stop the run with their status.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import rv64
from planners import Problem

OK, REASON = rv64.available()
needs_rv64 = pytest.mark.skipif(not OK, reason=REASON or "rv64 toolchain available")

DATA = 0x200000  # data region (4 KiB); x2 (sp) and x8 (s0) point into it and are never written
DATA_LEN = 0x1000
BASES = (2, 8)
EDGE = [0, 1, 2, 3, 31, 32, 63, 64, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63 - 1,
        2**63, 2**64 - 1, 2**64 - 2, 2**32 + 5, 0xFFFFFFFF80000000, 12345678901234]  # fmt: skip

# -- encoders (RISC-V unprivileged ISA, chapter 2 formats and chapter 16 compressed formats) ----


def _r(f7, rs2, rs1, f3, rd, op):
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _i(imm, rs1, f3, rd, op):
    return ((imm & 0xFFF) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _s(imm, rs2, rs1, f3, op=0x23):
    imm &= 0xFFF
    return ((imm >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | op


def _b(off, rs2, rs1, f3):
    o = off & 0x1FFF
    return (((o >> 12) & 1) << 31) | (((o >> 5) & 0x3F) << 25) | (rs2 << 20) | (rs1 << 15) | \
        (f3 << 12) | (((o >> 1) & 0xF) << 8) | (((o >> 11) & 1) << 7) | 0x63


def _j(off, rd):
    o = off & 0x1FFFFF
    return (((o >> 20) & 1) << 31) | (((o >> 1) & 0x3FF) << 21) | (((o >> 11) & 1) << 20) | \
        (((o >> 12) & 0xFF) << 12) | (rd << 7) | 0x6F


R_OPS = [(0, f3, 0x33) for f3 in range(8)] + [(0x20, 0, 0x33), (0x20, 5, 0x33)] + \
    [(1, f3, 0x33) for f3 in range(8)] + [(0, 0, 0x3B), (0, 1, 0x3B), (0, 5, 0x3B),
                                          (0x20, 0, 0x3B), (0x20, 5, 0x3B)] + \
    [(1, f3, 0x3B) for f3 in (0, 4, 5, 6, 7)]  # fmt: skip

dest = st.sampled_from([r for r in range(32) if r not in BASES])  # x0 allowed (writes ignored)
src = st.integers(0, 31)


@st.composite
def insn(draw):
    """One instruction as ``([encoding], tag)``: tag ``"b"`` (branch) or ``"j"`` (jal) marks an
    instruction whose target :func:`_assemble` fixes to skip a drawn number of following
    instructions (so every target is an instruction boundary), else ``None``."""
    kind = draw(st.sampled_from(["r", "i", "sh", "w", "u", "ld", "sd", "c", "c", "br", "jal"]))
    rd, rs1, rs2 = draw(dest), draw(src), draw(src)
    if kind == "r":
        f7, f3, op = draw(st.sampled_from(R_OPS))
        return [_r(f7, rs2, rs1, f3, rd, op)], None
    if kind == "i":
        f3 = draw(st.sampled_from([0, 2, 3, 4, 6, 7]))
        return [_i(draw(st.integers(-2048, 2047)), rs1, f3, rd, 0x13)], None
    if kind == "sh":
        f3, top = draw(st.sampled_from([(1, 0), (5, 0), (5, 0x10)]))
        return [(top << 26) | (draw(st.integers(0, 63)) << 20) | (rs1 << 15) | (f3 << 12)
                | (rd << 7) | 0x13], None  # fmt: skip
    if kind == "w":
        form = draw(st.sampled_from(["addiw", "slliw", "srliw", "sraiw"]))
        if form == "addiw":
            return [_i(draw(st.integers(-2048, 2047)), rs1, 0, rd, 0x1B)], None
        f3, f7 = {"slliw": (1, 0), "srliw": (5, 0), "sraiw": (5, 0x20)}[form]
        return [_r(f7, draw(st.integers(0, 31)), rs1, f3, rd, 0x1B)], None
    if kind == "u":
        op = draw(st.sampled_from([0x37, 0x17]))
        return [(draw(st.integers(0, 2**20 - 1)) << 12) | (rd << 7) | op], None
    base = draw(st.sampled_from(BASES))
    if kind == "ld":
        f3 = draw(st.sampled_from(range(7)))
        size = 1 << (f3 & 3)
        off = draw(st.integers(0, 255)) * size
        return [_i(off, base, f3, rd, 0x03)], None
    if kind == "sd":
        f3 = draw(st.sampled_from(range(4)))
        off = draw(st.integers(0, 255)) * (1 << f3)
        return [_s(off, rs2, base, f3)], None
    if kind == "br":
        return [_b(0, rs2, rs1, draw(st.sampled_from([0, 1, 4, 5, 6, 7])))], "b"
    if kind == "jal":
        return [_j(0, rd)], "j"
    return [draw(compressed())], None


@st.composite
def compressed(draw):
    """A 16-bit instruction of the RV64C integer forms (no stack-pointer or s0 writes)."""
    rdp = draw(st.sampled_from([9, 10, 11, 12, 13, 14, 15])) - 8  # rd' (x8 is a base)
    rs2p = draw(st.integers(0, 7))
    rd = draw(st.sampled_from([r for r in range(1, 32) if r not in BASES]))
    rs2 = draw(st.integers(1, 31))
    i6 = draw(st.integers(-32, 31)) & 0x3F
    nz6 = draw(st.integers(1, 63))
    form = draw(st.sampled_from(["addi", "addiw", "li", "lui", "srli", "srai", "andi", "alu",
                                 "slli", "mv", "add", "lw", "ld", "sw", "sd", "lwsp", "ldsp",
                                 "swsp", "sdsp", "addi4spn"]))  # fmt: skip
    hi, lo = (i6 >> 5) << 12, (i6 & 31) << 2
    if form == "addi":
        return 0x0001 | hi | (rd << 7) | lo
    if form == "addiw":
        return 0x2001 | hi | (rd << 7) | lo
    if form == "li":
        return 0x4001 | hi | (rd << 7) | lo
    if form == "lui":
        v = i6 or 1
        return 0x6001 | ((v >> 5) << 12) | (rd << 7) | ((v & 31) << 2)
    if form in ("srli", "srai", "andi"):
        f2 = {"srli": 0, "srai": 1, "andi": 2}[form]
        v = nz6 if form != "andi" else i6
        return 0x8001 | ((v >> 5) << 12) | (f2 << 10) | (rdp << 7) | ((v & 31) << 2)
    if form == "alu":
        k = draw(st.sampled_from([0, 1, 2, 3, 4, 5]))  # sub xor or and subw addw
        return 0x8C01 | ((k >> 2) << 12) | (rdp << 7) | ((k & 3) << 5) | (rs2p << 2)
    if form == "slli":
        return 0x0002 | ((nz6 >> 5) << 12) | (rd << 7) | ((nz6 & 31) << 2)
    if form == "mv":
        return 0x8002 | (rd << 7) | (rs2 << 2)
    if form == "add":
        return 0x9002 | (rd << 7) | (rs2 << 2)
    if form in ("lw", "sw"):
        u = draw(st.integers(0, 31)) * 4
        enc = ((u >> 3) & 7) << 10 | ((u >> 2) & 1) << 6 | ((u >> 6) & 1) << 5
        f3 = 0x4000 if form == "lw" else 0xC000
        return f3 | enc | (0 << 7) | (rdp << 2)  # base x8
    if form in ("ld", "sd"):
        u = draw(st.integers(0, 31)) * 8
        enc = ((u >> 3) & 7) << 10 | ((u >> 6) & 3) << 5
        f3 = 0x6000 if form == "ld" else 0xE000
        return f3 | enc | (0 << 7) | (rdp << 2)
    if form == "lwsp":
        u = draw(st.integers(0, 63)) * 4
        return 0x4002 | ((u >> 5) & 1) << 12 | (rd << 7) | ((u >> 2) & 7) << 4 | ((u >> 6) & 3) << 2
    if form == "ldsp":
        u = draw(st.integers(0, 63)) * 8
        return 0x6002 | ((u >> 5) & 1) << 12 | (rd << 7) | ((u >> 3) & 3) << 5 | ((u >> 6) & 7) << 2
    if form == "swsp":
        u = draw(st.integers(0, 63)) * 4
        return 0xC002 | ((u >> 2) & 15) << 9 | ((u >> 6) & 3) << 7 | (rs2 << 2)
    if form == "sdsp":
        u = draw(st.integers(0, 63)) * 8
        return 0xE002 | ((u >> 3) & 7) << 10 | ((u >> 6) & 7) << 7 | (rs2 << 2)
    # addi4spn: rd' = sp + nzuimm (rd' never x8)
    u = draw(st.integers(1, 255)) * 4
    enc = ((u >> 4) & 3) << 11 | ((u >> 6) & 15) << 7 | ((u >> 2) & 1) << 6 | ((u >> 3) & 1) << 5
    return enc | (rdp << 2)


def _assemble(items, skips):
    """Lay out the instructions; fix each branch/jal to skip ``skips[k]`` following
    instructions (clamped to the end of the program)."""
    lens = [2 if (w & 3) != 3 else 4 for w, _ in items]
    pos = np.concatenate([[0], np.cumsum(lens)]).tolist()
    out = bytearray()
    for k, ((w, tag), skip) in enumerate(zip(items, skips, strict=True)):
        if tag is not None:
            tgt = pos[min(len(items), k + 1 + skip)]
            off = tgt - pos[k]
            rs1, rs2, f3, rd = (w >> 15) & 31, (w >> 20) & 31, (w >> 12) & 7, (w >> 7) & 31
            w = _b(off, rs2, rs1, f3) if tag == "b" else _j(off, rd)
        out += w.to_bytes(lens[k], "little")
    return bytes(out)


@st.composite
def program(draw):
    raw = draw(st.lists(insn(), min_size=1, max_size=60))
    items = [(ws[0], tag) for ws, tag in raw]
    skips = [draw(st.integers(0, 4)) for _ in items]
    regs = [0] + [draw(st.sampled_from(EDGE) | st.integers(0, 2**64 - 1)) for _ in range(31)]
    regs[2] = DATA + 0x400
    regs[8] = DATA + 0x100
    # place the code anywhere in a two-page window, so some programs cross a page boundary
    start = 0x10000 + 2 * draw(st.integers(0, 2047))
    data = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).bytes(DATA_LEN)
    return _assemble(items, skips), regs, start, data


def _unicorn(code, regs, start, data, hostsim):
    from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV64, Uc
    from unicorn import riscv_const as rc

    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    uc.mem_map(0x10000, 0x3000)
    uc.mem_write(start, code)
    uc.mem_map(DATA, DATA_LEN)
    uc.mem_write(DATA, data)
    for r in range(1, 32):
        uc.reg_write(rc.UC_RISCV_REG_X0 + r, regs[r])
    keep = hostsim.attach(uc)
    uc.emu_start(start, start + len(code))
    out = [0] + [uc.reg_read(rc.UC_RISCV_REG_X0 + r) for r in range(1, 32)]
    del keep
    return out, bytes(uc.mem_read(DATA, DATA_LEN))


def _hostsim(code, start):
    from experiments.rv64.cycles import CORE_MODELS, HostSim, decode_table

    page = np.zeros(0x3000, np.uint8)
    page[start - 0x10000: start - 0x10000 + len(code)] = np.frombuffer(code, np.uint8)
    table = decode_table(0x10000, page.tobytes())
    return page, HostSim(0x10000, table, [CORE_MODELS["u74"]])


@needs_rv64
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program())
def test_random_programs_match_unicorn(prog):
    from experiments.rv64.emulate import interp_run

    code, regs, start, data = prog
    end = start + len(code)
    page, sim_u = _hostsim(code, start)
    want_regs, want_data = _unicorn(code, regs, start, data, sim_u)
    want = sim_u.finish(end)
    page, sim_i = _hostsim(code, start)
    mem = np.frombuffer(data, np.uint8).copy()
    status, got_regs, executed, stop, _ = interp_run([(0x10000, page), (DATA, mem)], regs, start,
                                                     end, sim_i)  # fmt: skip
    got = sim_i.finish(end)
    assert status == 0 and stop == end
    assert got_regs == want_regs
    assert mem.tobytes() == want_data
    assert got.block_counts == want.block_counts  # same blocks (starts and sizes), same counts
    assert got.by_kind == want.by_kind and got.blocks == want.blocks
    assert got.pipes == want.pipes  # cycles with caches: same data addresses in the same order
    assert executed == sum(want.by_kind.values())


@needs_rv64
def test_page_crossing_block_is_cut_like_unicorn():
    """A straight run of 4-byte adds across a page boundary: unicorn cuts the block after the
    instruction that reaches the next page, and so must the interpreter."""
    from experiments.rv64.emulate import interp_run

    code = b"".join(_i(1, 10, 0, 10, 0x13).to_bytes(4, "little") for _ in range(40))
    start = 0x11000 - 4 * 17 + 2  # an addi straddles the boundary
    regs = [0] * 32
    page, sim_u = _hostsim(code, start)
    want_regs, _ = _unicorn(code, regs, start, bytes(DATA_LEN), sim_u)
    want = sim_u.finish(start + len(code))
    page, sim_i = _hostsim(code, start)
    status, got_regs, *_ = interp_run([(0x10000, page), (DATA, np.zeros(DATA_LEN, np.uint8))],
                                      regs, start, start + len(code), sim_i)  # fmt: skip
    got = sim_i.finish(start + len(code))
    assert status == 0 and got_regs[10] == want_regs[10] == 40
    assert len(want.block_counts) == 2  # the cut is real ...
    assert got.block_counts == want.block_counts  # ... and in the same place


@needs_rv64
def test_faults_stop_with_their_status():
    from experiments.rv64.emulate import INTERP_STATUS, interp_run

    page = np.zeros(0x1000, np.uint8)
    page[:4] = np.frombuffer(_i(0, 10, 3, 11, 0x03).to_bytes(4, "little"), np.uint8)  # ld a1,0(a0)
    regs = [0] * 32
    regs[10] = 0x999000  # unmapped
    status, _, executed, stop, fault = interp_run([(0x10000, page)], regs, 0x10000, 0x10004)
    assert INTERP_STATUS[status] == "data access outside mapped memory"
    assert (executed, stop, fault) == (0, 0x10000, 0x999000)
    page[:4] = 0xFF  # not an instruction this interpreter knows
    status, _, _, stop, _ = interp_run([(0x10000, page)], regs, 0x10000, 0x10004)
    assert INTERP_STATUS[status] == "illegal or unsupported instruction" and stop == 0x10000
    page[:4] = np.frombuffer(_j(0, 0).to_bytes(4, "little"), np.uint8)  # j . (endless loop)
    status, _, executed, *_ = interp_run([(0x10000, page)], regs, 0x10000, 0x10004, max_insns=1000)
    assert INTERP_STATUS[status] == "instruction limit reached" and executed == 1000


def _problem(seed, n, alignment=16):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2 * n, n)
    return Problem.from_arrays(s, s + rng.integers(1, max(2, n // 3), n),
                               rng.integers(0, 5000, n), alignment=alignment)  # fmt: skip


@needs_rv64
@pytest.mark.parametrize("cpu,key", [("sifive_u74", "u74"), ("baseline_rv64", "c906")])
def test_every_core_matches_unicorn(cpu, key):
    """Offsets, arena and every counter of both in-hook models, for every core."""
    from experiments.rv64.build import build_image
    from experiments.rv64.cycles import CORE_MODELS
    from experiments.rv64.emulate import run_core

    img = build_image(cpu)
    m = CORE_MODELS[key]
    for n, align in ((1, 16), (40, 16), (40, 24), (300, 16)):  # 24: the cores' divide path
        p = _problem(n, n, align)
        args = (p.starts, p.ends, p.sizes, p.alignments, p.resident.astype(np.int64))
        for core in rv64.CORE_NAMES:
            a = run_core(img, core, *args, models=[m, m.without_caches()], engine="unicorn")
            b = run_core(img, core, *args, models=[m, m.without_caches()], engine="interp")
            assert np.array_equal(a.offsets, b.offsets) and a.arena == b.arena, (core, n)
            assert a.sim == b.sim, (core, n)


@needs_rv64
def test_engine_choice_is_checked():
    from experiments.rv64.build import build_image
    from experiments.rv64.emulate import run_core

    p = _problem(0, 4)
    args = (p.starts, p.ends, p.sizes, p.alignments, p.resident.astype(np.int64))
    with pytest.raises(ValueError, match="unknown RV64 engine"):
        run_core(build_image("sifive_u74"), "first_fit", *args, engine="qemu")
    with pytest.raises(ValueError, match="record=True"):
        run_core(build_image("sifive_u74"), "first_fit", *args, record=True, engine="interp")
