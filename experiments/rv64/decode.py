"""A small RV64GC decoder for instruction classification and register dependences.

It decodes what the cycle model needs, not full disassembly: the length (2 or 4 bytes), the class,
the destination register and the source registers. Integer registers are ``0..31`` (``x0`` is never
a destination), floating-point registers ``32..63``. Covered: RV64I, M, A (as loads), F/D loads,
stores and arithmetic (class ``other``), Zicsr/system (``other``) and the C extension's RV64
encodings (the images are built with the C extension, so the compiler emits them).

Classes (:data:`CLASSES`): ``alu``, ``load``, ``store``, ``branch`` (conditional), ``jump``
(``jal``/``jalr`` and their compressed forms), ``mul``, ``div`` (divide and remainder), ``other``.
Reports merge ``mul`` and ``div`` into ``muldiv``.

Reference: The RISC-V Instruction Set Manual, Volume I (unprivileged), chapters RV32I/RV64I, "M",
"C" (opcode maps, tables 16.4-16.6 of the 2019 edition).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Insn", "CLASSES", "decode", "decode_block"]

CLASSES = ("alu", "load", "store", "branch", "jump", "mul", "div", "other")


class Insn(NamedTuple):
    """One decoded instruction.

    length : bytes (2 or 4). kind : a class of :data:`CLASSES`. rd : destination register (``-1``
    when none or ``x0``). srcs : tuple of source registers (``x0`` dropped). word32 : True for a
    32-bit (``*w``) multiply/divide, whose latency may differ. data : for a store, the index in
    ``srcs`` of its data operand (LLVM ``ReadStoreData``; the address base is ``ReadMemBase``),
    ``-1`` when none (other kinds, or data ``x0``).
    """

    length: int
    kind: str
    rd: int
    srcs: tuple
    word32: bool = False
    data: int = -1


def _rd(r: int) -> int:
    return r if r else -1


def _srcs(*regs: int) -> tuple:
    return tuple(r for r in regs if r)


def _decode32(w: int) -> Insn:
    op = w & 0x7F
    rd = (w >> 7) & 31
    f3 = (w >> 12) & 7
    rs1 = (w >> 15) & 31
    rs2 = (w >> 20) & 31
    f7 = w >> 25
    if op in (0x37, 0x17):  # lui, auipc
        return Insn(4, "alu", _rd(rd), ())
    if op == 0x6F:  # jal
        return Insn(4, "jump", _rd(rd), ())
    if op == 0x67:  # jalr
        return Insn(4, "jump", _rd(rd), _srcs(rs1))
    if op == 0x63:
        return Insn(4, "branch", -1, _srcs(rs1, rs2))
    if op == 0x03:
        return Insn(4, "load", _rd(rd), _srcs(rs1))
    if op == 0x07:  # fp load
        return Insn(4, "load", 32 + rd, _srcs(rs1))
    if op == 0x23:
        srcs = _srcs(rs1, rs2)
        return Insn(4, "store", -1, srcs, data=len(srcs) - 1 if rs2 else -1)
    if op == 0x27:  # fp store
        return Insn(4, "store", -1, _srcs(rs1) + (32 + rs2,), data=len(_srcs(rs1)))
    if op in (0x13, 0x1B):
        return Insn(4, "alu", _rd(rd), _srcs(rs1))
    if op in (0x33, 0x3B):
        if f7 == 1:
            return Insn(4, "mul" if f3 < 4 else "div", _rd(rd), _srcs(rs1, rs2), op == 0x3B)
        return Insn(4, "alu", _rd(rd), _srcs(rs1, rs2))
    if op == 0x2F:  # atomics: a load that also writes memory
        return Insn(4, "load", _rd(rd), _srcs(rs1, rs2))
    if op == 0x53:  # OP-FP: int<->fp moves/compares use integer regs at one end
        f5 = f7 >> 2
        if f5 in (0x14, 0x18, 0x1C):  # compare, fcvt.int.fp, fmv.x/fclass -> integer rd
            return Insn(4, "other", _rd(rd), (32 + rs1, 32 + rs2) if f5 == 0x14 else (32 + rs1,))
        if f5 in (0x1A, 0x1E):  # fcvt.fp.int, fmv.fp.x <- integer rs1
            return Insn(4, "other", 32 + rd, _srcs(rs1))
        return Insn(4, "other", 32 + rd, (32 + rs1, 32 + rs2))
    if op in (0x43, 0x47, 0x4B, 0x4F):  # fused multiply-add
        return Insn(4, "other", 32 + rd, (32 + rs1, 32 + rs2, 32 + (w >> 27)))
    if op == 0x73:  # system / csr
        return Insn(4, "other", _rd(rd), _srcs(rs1) if f3 in (1, 2, 3) else ())
    return Insn(4, "other", -1, ())  # fence and anything unknown


def _decode16(h: int) -> Insn:
    q = h & 3
    f3 = (h >> 13) & 7
    rdp = 8 + ((h >> 2) & 7)  # rd'/rs2'
    rs1p = 8 + ((h >> 7) & 7)  # rs1'/rd'
    r = (h >> 7) & 31
    r2 = (h >> 2) & 31
    if q == 0:
        if f3 == 0:  # c.addi4spn
            return Insn(2, "alu", rdp, (2,))
        if f3 == 1:  # c.fld
            return Insn(2, "load", 32 + (rdp - 8) + 8, (rs1p,))
        if f3 in (2, 3):  # c.lw, c.ld
            return Insn(2, "load", rdp, (rs1p,))
        if f3 == 5:  # c.fsd
            return Insn(2, "store", -1, (rs1p, 32 + rdp), data=1)
        if f3 in (6, 7):  # c.sw, c.sd
            return Insn(2, "store", -1, (rs1p, rdp), data=1)
        return Insn(2, "other", -1, ())
    if q == 1:
        if f3 in (0, 1):  # c.addi, c.addiw
            return Insn(2, "alu", _rd(r), _srcs(r))
        if f3 == 2:  # c.li
            return Insn(2, "alu", _rd(r), ())
        if f3 == 3:  # c.addi16sp (rd = sp) or c.lui
            return Insn(2, "alu", _rd(r), (2,) if r == 2 else ())
        if f3 == 4:
            f2 = (h >> 10) & 3
            if f2 < 3:  # c.srli, c.srai, c.andi
                return Insn(2, "alu", rs1p, (rs1p,))
            return Insn(2, "alu", rs1p, (rs1p, rdp))  # c.sub/xor/or/and/subw/addw
        if f3 == 5:  # c.j
            return Insn(2, "jump", -1, ())
        return Insn(2, "branch", -1, (rs1p,))  # c.beqz, c.bnez
    # q == 2
    if f3 == 0:  # c.slli
        return Insn(2, "alu", _rd(r), _srcs(r))
    if f3 == 1:  # c.fldsp
        return Insn(2, "load", 32 + r, (2,))
    if f3 in (2, 3):  # c.lwsp, c.ldsp
        return Insn(2, "load", _rd(r), (2,))
    if f3 == 4:
        if not (h >> 12) & 1:
            if r2 == 0:  # c.jr
                return Insn(2, "jump", -1, _srcs(r))
            return Insn(2, "alu", _rd(r), _srcs(r2))  # c.mv
        if r == 0 and r2 == 0:  # c.ebreak
            return Insn(2, "other", -1, ())
        if r2 == 0:  # c.jalr
            return Insn(2, "jump", 1, _srcs(r))
        return Insn(2, "alu", _rd(r), _srcs(r, r2))  # c.add
    if f3 == 5:  # c.fsdsp
        return Insn(2, "store", -1, (2, 32 + r2), data=1)
    return Insn(2, "store", -1, _srcs(2, r2), data=1 if r2 else -1)  # c.swsp, c.sdsp


def decode(code: bytes, offset: int = 0) -> Insn:
    """Decode the instruction at ``code[offset:]`` (little-endian, 16- or 32-bit). ``O(1)``."""
    h = code[offset] | (code[offset + 1] << 8)
    if h & 3 != 3:
        return _decode16(h)
    w = h | (code[offset + 2] << 16) | (code[offset + 3] << 24)
    return _decode32(w)


def decode_block(code: bytes) -> list[Insn]:
    """Decode a straight-line block of machine code (as the emulator's block hook reports it)."""
    out, k = [], 0
    while k < len(code):
        ins = decode(code, k)
        out.append(ins)
        k += ins.length
    return out
