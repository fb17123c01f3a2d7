/*
 * A small RV64IMC interpreter for the allocator-core images (host side, compiled with hostsim.c).
 *
 * Why: unicorn runs the cores correctly but calls back into the host on every load and store
 * through a slow path (its memory hooks resynchronise the guest PC through a translation-block
 * lookup), a large share of the cost of an estimate on the O(n^2) cores. The cores use a tiny
 * integer subset of RV64GC (no floating point, atomics or CSRs), so an interpreter over a decoded
 * table runs them faster (1.3x to 1.9x less CPU time per estimate, measured on n = 4096 and 8192
 * greedy_in_order; the in-hook models then take most of the time) and feeds the very same hooks
 * of hostsim.c.
 *
 * Contract (checked against unicorn by tests/test_rv64_interp.py: on random programs over every
 * decoded instruction, equal final registers and memory, equal per-block execution counters and
 * equal cycles of a cached core model, which depend on the order of the data addresses; on every
 * core and both builds, equal offsets and every counter of the in-hook models):
 *   - the hooks see the same stream as with unicorn: memplan_block_hook once at the start of each
 *     executed block with its address and size in bytes, then memplan_mem_hook once per load or
 *     store in program order, with the data address;
 *   - blocks are cut where QEMU's RISC-V translator (unicorn 2) cuts its translation blocks: after
 *     a branch, jump or trapping instruction, after the instruction whose end reaches the next
 *     4 KiB page of the block's first instruction (so a block never runs into a second page),
 *     and before the halt address;
 *   - the architectural results (registers, memory) are those of the RISC-V unprivileged
 *     specification (RV64I, M, C; fence is a no-op, ecall/ebreak stop with a status).
 *
 * Memory is a list of host buffers, each mapped at a guest address range; an access outside
 * them stops the run with a status (the emulator's fault). Code is fetched from the region that
 * holds the entry point and decoded once per halfword.
 *
 * Reference: The RISC-V Instruction Set Manual, Volume I: Unprivileged ISA (20191213), chapters
 * 2 (RV32I), 5 (RV64I), 7 (M) and 16 (C, tables 16.4-16.6 for the compressed opcode maps).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void memplan_block_hook(void *uc, uint64_t address, uint32_t size, void *user);
void memplan_mem_hook(void *uc, int type, uint64_t address, int size, int64_t value, void *user);

enum {
    O_ILLEGAL = 0, O_LI, /* rd = imm (lui, auipc: the value is known when decoding) */
    O_ADDI, O_SLTI, O_SLTIU, O_XORI, O_ORI, O_ANDI, O_SLLI, O_SRLI, O_SRAI,
    O_ADDIW, O_SLLIW, O_SRLIW, O_SRAIW,
    O_ADD, O_SUB, O_SLL, O_SLT, O_SLTU, O_XOR, O_SRL, O_SRA, O_OR, O_AND,
    O_ADDW, O_SUBW, O_SLLW, O_SRLW, O_SRAW,
    O_MUL, O_MULH, O_MULHSU, O_MULHU, O_DIV, O_DIVU, O_REM, O_REMU,
    O_MULW, O_DIVW, O_DIVUW, O_REMW, O_REMUW,
    O_LB, O_LH, O_LW, O_LD, O_LBU, O_LHU, O_LWU, O_SB, O_SH, O_SW, O_SD,
    O_BEQ, O_BNE, O_BLT, O_BGE, O_BLTU, O_BGEU, O_JAL, O_JALR,
    O_FENCE, O_ECALL, O_EBREAK
};

/* One decoded instruction. rd 32 is a sink for writes to x0; imm is the immediate, or the
 * absolute target of a branch or jal, or the value of lui/auipc. */
typedef struct {
    uint8_t op, rd, rs1, rs2, len, ends; /* ends: the instruction closes its block */
    int64_t imm;
} dinsn_t;

/* Must match emulate._Region. */
typedef struct {
    uint64_t lo, len;
    uint8_t *host;
} region_t;

/* Run status (memplan_interp_run's return value; names in emulate.INTERP_STATUS). */
enum { S_HALT = 0, S_ILLEGAL = 1, S_MEMFAULT = 2, S_FETCH = 3, S_LIMIT = 4, S_ECALL = 5,
       S_EBREAK = 6, S_NOMEM = 7 };

static inline int64_t sext(uint64_t v, int bits)
{
    return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static void set(dinsn_t *d, int op, int rd, int rs1, int rs2, int64_t imm)
{
    d->op = (uint8_t)op;
    d->rd = (uint8_t)(rd ? rd : 32);
    d->rs1 = (uint8_t)rs1;
    d->rs2 = (uint8_t)rs2;
    d->imm = imm;
}

static void decode32(uint32_t w, uint64_t pc, dinsn_t *d)
{
    int opc = w & 0x7F, rd = (w >> 7) & 31, f3 = (w >> 12) & 7, rs1 = (w >> 15) & 31;
    int rs2 = (w >> 20) & 31, f7 = (int)(w >> 25);
    int64_t imm_i = sext(w >> 20, 12);
    d->len = 4;
    switch (opc) {
    case 0x37: set(d, O_LI, rd, 0, 0, sext(w & 0xFFFFF000u, 32)); return;
    case 0x17: set(d, O_LI, rd, 0, 0, (int64_t)(pc + (uint64_t)sext(w & 0xFFFFF000u, 32))); return;
    case 0x6F: {
        uint64_t im = ((uint64_t)(w >> 31) << 20) | (((w >> 21) & 0x3FF) << 1) |
                      (((w >> 20) & 1) << 11) | (((w >> 12) & 0xFF) << 12);
        set(d, O_JAL, rd, 0, 0, (int64_t)(pc + (uint64_t)sext(im, 21)));
        return;
    }
    case 0x67:
        if (f3 == 0) set(d, O_JALR, rd, rs1, 0, imm_i);
        return;
    case 0x63: {
        static const int8_t ops[8] = {O_BEQ, O_BNE, -1, -1, O_BLT, O_BGE, O_BLTU, O_BGEU};
        uint64_t im = ((uint64_t)(w >> 31) << 12) | (((w >> 25) & 0x3F) << 5) |
                      (((w >> 8) & 0xF) << 1) | (((w >> 7) & 1) << 11);
        if (ops[f3] >= 0) set(d, ops[f3], 0, rs1, rs2, (int64_t)(pc + (uint64_t)sext(im, 13)));
        return;
    }
    case 0x03: {
        static const int8_t ops[8] = {O_LB, O_LH, O_LW, O_LD, O_LBU, O_LHU, O_LWU, -1};
        if (ops[f3] >= 0) set(d, ops[f3], rd, rs1, 0, imm_i);
        return;
    }
    case 0x23: {
        static const int8_t ops[8] = {O_SB, O_SH, O_SW, O_SD, -1, -1, -1, -1};
        int64_t im = sext(((w >> 25) << 5) | ((w >> 7) & 31), 12);
        if (ops[f3] >= 0) set(d, ops[f3], 0, rs1, rs2, im);
        return;
    }
    case 0x13: {
        int sh = (w >> 20) & 63, f6 = (int)(w >> 26);
        switch (f3) {
        case 0: set(d, O_ADDI, rd, rs1, 0, imm_i); return;
        case 2: set(d, O_SLTI, rd, rs1, 0, imm_i); return;
        case 3: set(d, O_SLTIU, rd, rs1, 0, imm_i); return;
        case 4: set(d, O_XORI, rd, rs1, 0, imm_i); return;
        case 6: set(d, O_ORI, rd, rs1, 0, imm_i); return;
        case 7: set(d, O_ANDI, rd, rs1, 0, imm_i); return;
        case 1: if (f6 == 0) set(d, O_SLLI, rd, rs1, 0, sh); return;
        case 5:
            if (f6 == 0) set(d, O_SRLI, rd, rs1, 0, sh);
            else if (f6 == 0x10) set(d, O_SRAI, rd, rs1, 0, sh);
            return;
        }
        return;
    }
    case 0x1B: {
        int sh = (w >> 20) & 31;
        if (f3 == 0) set(d, O_ADDIW, rd, rs1, 0, imm_i);
        else if (f3 == 1 && f7 == 0) set(d, O_SLLIW, rd, rs1, 0, sh);
        else if (f3 == 5 && f7 == 0) set(d, O_SRLIW, rd, rs1, 0, sh);
        else if (f3 == 5 && f7 == 0x20) set(d, O_SRAIW, rd, rs1, 0, sh);
        return;
    }
    case 0x33: {
        static const int8_t base[8] = {O_ADD, O_SLL, O_SLT, O_SLTU, O_XOR, O_SRL, O_OR, O_AND};
        static const int8_t mext[8] = {O_MUL, O_MULH, O_MULHSU, O_MULHU,
                                       O_DIV, O_DIVU, O_REM, O_REMU};
        if (f7 == 0) set(d, base[f3], rd, rs1, rs2, 0);
        else if (f7 == 1) set(d, mext[f3], rd, rs1, rs2, 0);
        else if (f7 == 0x20 && f3 == 0) set(d, O_SUB, rd, rs1, rs2, 0);
        else if (f7 == 0x20 && f3 == 5) set(d, O_SRA, rd, rs1, rs2, 0);
        return;
    }
    case 0x3B: {
        static const int8_t mext[8] = {O_MULW, -1, -1, -1, O_DIVW, O_DIVUW, O_REMW, O_REMUW};
        if (f7 == 0 && f3 == 0) set(d, O_ADDW, rd, rs1, rs2, 0);
        else if (f7 == 0 && f3 == 1) set(d, O_SLLW, rd, rs1, rs2, 0);
        else if (f7 == 0 && f3 == 5) set(d, O_SRLW, rd, rs1, rs2, 0);
        else if (f7 == 0x20 && f3 == 0) set(d, O_SUBW, rd, rs1, rs2, 0);
        else if (f7 == 0x20 && f3 == 5) set(d, O_SRAW, rd, rs1, rs2, 0);
        else if (f7 == 1 && mext[f3] >= 0) set(d, mext[f3], rd, rs1, rs2, 0);
        return;
    }
    case 0x0F:
        if (f3 == 0) set(d, O_FENCE, 0, 0, 0, 0);
        return;
    case 0x73:
        if (w == 0x00000073u) set(d, O_ECALL, 0, 0, 0, 0);
        else if (w == 0x00100073u) set(d, O_EBREAK, 0, 0, 0, 0);
        return;
    }
}

static void decode16(uint32_t w, uint64_t pc, dinsn_t *d)
{
    int q = w & 3, f3 = (w >> 13) & 7;
    int rd = (w >> 7) & 31, rs2 = (w >> 2) & 31;     /* full register fields */
    int rdp = 8 + ((w >> 7) & 7), rs2p = 8 + ((w >> 2) & 7); /* rd'/rs1', rs2' */
    int64_t imm6 = sext(((w >> 7) & 0x20) | ((w >> 2) & 0x1F), 6);
    d->len = 2;
    if (q == 0) {
        uint64_t uw = ((w >> 7) & 0x38) | ((w << 1) & 0x40) | ((w >> 4) & 0x4); /* c.lw/c.sw */
        uint64_t ud = ((w >> 7) & 0x38) | ((w << 1) & 0xC0);                    /* c.ld/c.sd */
        switch (f3) {
        case 0: {
            uint64_t im = ((w >> 7) & 0x30) | ((w >> 1) & 0x3C0) | ((w >> 4) & 0x4) |
                          ((w >> 2) & 0x8);
            if (im) set(d, O_ADDI, rs2p, 2, 0, (int64_t)im);
            return;
        }
        case 2: set(d, O_LW, rs2p, rdp, 0, (int64_t)uw); return;
        case 3: set(d, O_LD, rs2p, rdp, 0, (int64_t)ud); return;
        case 6: set(d, O_SW, 0, rdp, rs2p, (int64_t)uw); return;
        case 7: set(d, O_SD, 0, rdp, rs2p, (int64_t)ud); return;
        }
        return; /* c.fld, c.fsd, reserved: not supported */
    }
    if (q == 1) {
        switch (f3) {
        case 0: set(d, O_ADDI, rd, rd, 0, imm6); return; /* c.addi, c.nop */
        case 1: if (rd) set(d, O_ADDIW, rd, rd, 0, imm6); return;
        case 2: set(d, O_ADDI, rd, 0, 0, imm6); return; /* c.li */
        case 3:
            if (rd == 2) {
                uint64_t im = ((w >> 3) & 0x200) | ((w >> 2) & 0x10) | ((w << 1) & 0x40) |
                              ((w << 4) & 0x180) | ((w << 3) & 0x20);
                if (im) set(d, O_ADDI, 2, 2, 0, sext(im, 10));
            } else {
                int64_t v = sext(((uint64_t)((w >> 12) & 1) << 17) | ((uint64_t)((w >> 2) & 0x1F) << 12), 18);
                if (v) set(d, O_LI, rd, 0, 0, v);
            }
            return;
        case 4: {
            int f2 = (w >> 10) & 3;
            int sh = (int)(((w >> 7) & 0x20) | ((w >> 2) & 0x1F));
            if (f2 == 0) set(d, O_SRLI, rdp, rdp, 0, sh);
            else if (f2 == 1) set(d, O_SRAI, rdp, rdp, 0, sh);
            else if (f2 == 2) set(d, O_ANDI, rdp, rdp, 0, imm6);
            else {
                static const int8_t ops[8] = {O_SUB, O_XOR, O_OR, O_AND, O_SUBW, O_ADDW, -1, -1};
                int k = (int)(((w >> 10) & 4) | ((w >> 5) & 3));
                if (ops[k] >= 0) set(d, ops[k], rdp, rdp, rs2p, 0);
            }
            return;
        }
        case 5: {
            uint64_t im = ((w >> 1) & 0x800) | ((w >> 7) & 0x10) | ((w >> 1) & 0x300) |
                          ((w << 2) & 0x400) | ((w >> 1) & 0x40) | ((w << 1) & 0x80) |
                          ((w >> 2) & 0xE) | ((w << 3) & 0x20);
            set(d, O_JAL, 0, 0, 0, (int64_t)(pc + (uint64_t)sext(im, 12)));
            return;
        }
        case 6:
        case 7: {
            uint64_t im = ((w >> 4) & 0x100) | ((w >> 7) & 0x18) | ((w << 1) & 0xC0) |
                          ((w >> 2) & 0x6) | ((w << 3) & 0x20);
            set(d, f3 == 6 ? O_BEQ : O_BNE, 0, rdp, 0, (int64_t)(pc + (uint64_t)sext(im, 9)));
            return;
        }
        }
        return;
    }
    /* q == 2 */
    switch (f3) {
    case 0: set(d, O_SLLI, rd, rd, 0, (int64_t)(((w >> 7) & 0x20) | ((w >> 2) & 0x1F))); return;
    case 2:
        if (rd) set(d, O_LW, rd, 2, 0, (int64_t)(((w >> 7) & 0x20) | ((w >> 2) & 0x1C) | ((w << 4) & 0xC0)));
        return;
    case 3:
        if (rd) set(d, O_LD, rd, 2, 0, (int64_t)(((w >> 7) & 0x20) | ((w >> 2) & 0x18) | ((w << 4) & 0x1C0)));
        return;
    case 4:
        if (!((w >> 12) & 1)) {
            if (rs2 == 0) { if (rd) set(d, O_JALR, 0, rd, 0, 0); } /* c.jr */
            else set(d, O_ADD, rd, 0, rs2, 0);                     /* c.mv */
        } else {
            if (rd == 0 && rs2 == 0) set(d, O_EBREAK, 0, 0, 0, 0);
            else if (rs2 == 0) set(d, O_JALR, 1, rd, 0, 0);        /* c.jalr */
            else set(d, O_ADD, rd, rd, rs2, 0);                    /* c.add */
        }
        return;
    case 6: set(d, O_SW, 0, 2, rs2, (int64_t)(((w >> 7) & 0x3C) | ((w >> 1) & 0xC0))); return;
    case 7: set(d, O_SD, 0, 2, rs2, (int64_t)(((w >> 7) & 0x38) | ((w >> 1) & 0x1C0))); return;
    }
    /* c.fldsp, c.fsdsp: not supported */
}

static inline int closes_block(int op)
{
    return op == O_ILLEGAL || (op >= O_BEQ && op <= O_JALR) || op == O_ECALL || op == O_EBREAK;
}

typedef struct {
    uint64_t lo, hi;    /* code region [lo, hi) */
    const uint8_t *host;
    dinsn_t *dec;       /* [nhalf], len 0: not decoded yet */
    int32_t *bsize;     /* [nhalf] bytes of the block starting there (0: not built) */
    int32_t *bcount;    /* [nhalf] its instructions */
} code_t;

static dinsn_t *decode_at(code_t *c, uint64_t pc)
{
    dinsn_t *d = c->dec + ((pc - c->lo) >> 1);
    if (d->len) return d;
    memset(d, 0, sizeof(*d));
    const uint8_t *p = c->host + (pc - c->lo);
    uint32_t lo16 = (uint32_t)p[0] | (uint32_t)p[1] << 8;
    d->rd = 32;
    if ((lo16 & 3) != 3) decode16(lo16, pc, d);
    else if (pc + 4 <= c->hi) decode32(lo16 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24, pc, d);
    else d->len = 2; /* a 32-bit instruction cut by the end of the region: illegal */
    d->ends = (uint8_t)closes_block(d->op);
    return d;
}

/* The block starting at pc: cut after a closing instruction, at the end of the code region, or
 * after the instruction whose end reaches the next page (QEMU's translator_loop and
 * riscv_tr_translate_insn: `pc_next - page_start >= TARGET_PAGE_SIZE`), or before the halt
 * address (unicorn ends a translation block at its exit address). */
static void build_block(code_t *c, uint64_t pc, uint64_t halt)
{
    uint64_t page_end = (pc & ~(uint64_t)0xFFF) + 0x1000, p = pc;
    int32_t n = 0;
    for (;;) {
        dinsn_t *d = decode_at(c, p);
        p += d->len;
        n++;
        if (d->ends || p >= page_end || p >= c->hi || p == halt) break;
    }
    int64_t k = (int64_t)((pc - c->lo) >> 1);
    c->bsize[k] = (int32_t)(p - pc);
    c->bcount[k] = n;
}

static inline uint8_t *host_addr(const region_t *r, int64_t nreg, int64_t *last, uint64_t a,
                                 int size)
{
    const region_t *g = r + *last;
    if (a - g->lo <= g->len - (uint64_t)size && g->len >= (uint64_t)size) return g->host + (a - g->lo);
    for (int64_t i = 0; i < nreg; i++) {
        g = r + i;
        if (g->len >= (uint64_t)size && a - g->lo <= g->len - (uint64_t)size) {
            *last = i;
            return g->host + (a - g->lo);
        }
    }
    return 0;
}

/*
 * Run from `entry` until the pc equals `halt`, starting from registers regs[0..31] (regs[0]
 * ignored) and leaving the final registers there. user: a sim from memplan_sim_new whose hooks
 * see every block and data access, or 0 for none. max_insns: stop with S_LIMIT after that many
 * instructions (<= 0: no limit). out[0] = instructions executed, out[1] = pc where it stopped
 * (the halt, or the faulting instruction), out[2] = faulting data address (S_MEMFAULT).
 * Returns a status (S_*).
 */
int64_t memplan_interp_run(const region_t *regions, int64_t nreg, uint64_t *regs, uint64_t entry,
                           uint64_t halt, int64_t max_insns, void *user, uint64_t *out)
{
    uint64_t x[33];
    int64_t last = 0, status = S_HALT, executed = 0;
    code_t c;
    memset(&c, 0, sizeof(c));
    memcpy(x, regs, 32 * sizeof(uint64_t));
    x[0] = 0;
    x[32] = 0;
    out[0] = out[1] = out[2] = 0;
    for (int64_t i = 0; i < nreg; i++)
        if (entry - regions[i].lo < regions[i].len) {
            c.lo = regions[i].lo;
            c.hi = regions[i].lo + regions[i].len;
            c.host = regions[i].host;
        }
    uint64_t pc = entry;
    if (!c.host) { out[1] = pc; return S_FETCH; }
    int64_t nhalf = (int64_t)((c.hi - c.lo) >> 1);
    c.dec = (dinsn_t *)calloc((size_t)nhalf, sizeof(dinsn_t));
    c.bsize = (int32_t *)calloc((size_t)nhalf, sizeof(int32_t));
    c.bcount = (int32_t *)calloc((size_t)nhalf, sizeof(int32_t));
    if (!c.dec || !c.bsize || !c.bcount) { status = S_NOMEM; goto done; }

    while (pc != halt) {
        if (pc < c.lo || pc >= c.hi || (pc & 1)) { status = S_FETCH; break; }
        int64_t k = (int64_t)((pc - c.lo) >> 1);
        if (!c.bsize[k]) build_block(&c, pc, halt);
        if (max_insns > 0 && executed + c.bcount[k] > max_insns) { status = S_LIMIT; break; }
        if (user) memplan_block_hook(0, pc, (uint32_t)c.bsize[k], user);
        int32_t left = c.bcount[k];
        uint64_t next = pc;
        executed += left; /* corrected below if an instruction faults */
        while (left--) {
            const dinsn_t *d = c.dec + ((pc - c.lo) >> 1);
            uint64_t a = x[d->rs1], b = x[d->rs2];
            int64_t imm = d->imm;
            uint8_t *h;
            next = pc + d->len;
#define MEM(sz)                                                                              \
    do {                                                                                     \
        uint64_t ea = a + (uint64_t)imm;                                                     \
        h = host_addr(regions, nreg, &last, ea, sz);                                         \
        if (!h) { status = S_MEMFAULT; out[2] = ea; goto stop; }                             \
        if (user) memplan_mem_hook(0, 0, ea, sz, 0, user);                                   \
    } while (0)
            switch (d->op) {
            case O_LI: x[d->rd] = (uint64_t)imm; break;
            case O_ADDI: x[d->rd] = a + (uint64_t)imm; break;
            case O_SLTI: x[d->rd] = (int64_t)a < imm; break;
            case O_SLTIU: x[d->rd] = a < (uint64_t)imm; break;
            case O_XORI: x[d->rd] = a ^ (uint64_t)imm; break;
            case O_ORI: x[d->rd] = a | (uint64_t)imm; break;
            case O_ANDI: x[d->rd] = a & (uint64_t)imm; break;
            case O_SLLI: x[d->rd] = a << imm; break;
            case O_SRLI: x[d->rd] = a >> imm; break;
            case O_SRAI: x[d->rd] = (uint64_t)((int64_t)a >> imm); break;
            case O_ADDIW: x[d->rd] = (uint64_t)(int64_t)(int32_t)(uint32_t)(a + (uint64_t)imm); break;
            case O_SLLIW: x[d->rd] = (uint64_t)(int64_t)(int32_t)((uint32_t)a << imm); break;
            case O_SRLIW: x[d->rd] = (uint64_t)(int64_t)(int32_t)((uint32_t)a >> imm); break;
            case O_SRAIW: x[d->rd] = (uint64_t)(int64_t)((int32_t)(uint32_t)a >> imm); break;
            case O_ADD: x[d->rd] = a + b; break;
            case O_SUB: x[d->rd] = a - b; break;
            case O_SLL: x[d->rd] = a << (b & 63); break;
            case O_SLT: x[d->rd] = (int64_t)a < (int64_t)b; break;
            case O_SLTU: x[d->rd] = a < b; break;
            case O_XOR: x[d->rd] = a ^ b; break;
            case O_SRL: x[d->rd] = a >> (b & 63); break;
            case O_SRA: x[d->rd] = (uint64_t)((int64_t)a >> (b & 63)); break;
            case O_OR: x[d->rd] = a | b; break;
            case O_AND: x[d->rd] = a & b; break;
            case O_ADDW: x[d->rd] = (uint64_t)(int64_t)(int32_t)(uint32_t)(a + b); break;
            case O_SUBW: x[d->rd] = (uint64_t)(int64_t)(int32_t)(uint32_t)(a - b); break;
            case O_SLLW: x[d->rd] = (uint64_t)(int64_t)(int32_t)((uint32_t)a << (b & 31)); break;
            case O_SRLW: x[d->rd] = (uint64_t)(int64_t)(int32_t)((uint32_t)a >> (b & 31)); break;
            case O_SRAW: x[d->rd] = (uint64_t)(int64_t)((int32_t)(uint32_t)a >> (b & 31)); break;
            case O_MUL: x[d->rd] = a * b; break;
            case O_MULH:
                x[d->rd] = (uint64_t)(((__int128)(int64_t)a * (__int128)(int64_t)b) >> 64);
                break;
            case O_MULHSU:
                x[d->rd] = (uint64_t)(((__int128)(int64_t)a * (__int128)(unsigned __int128)b) >> 64);
                break;
            case O_MULHU:
                x[d->rd] = (uint64_t)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
                break;
            case O_DIV:
                x[d->rd] = b == 0 ? ~(uint64_t)0
                           : ((int64_t)a == INT64_MIN && (int64_t)b == -1) ? a
                           : (uint64_t)((int64_t)a / (int64_t)b);
                break;
            case O_DIVU: x[d->rd] = b == 0 ? ~(uint64_t)0 : a / b; break;
            case O_REM:
                x[d->rd] = b == 0 ? a
                           : ((int64_t)a == INT64_MIN && (int64_t)b == -1) ? 0
                           : (uint64_t)((int64_t)a % (int64_t)b);
                break;
            case O_REMU: x[d->rd] = b == 0 ? a : a % b; break;
            case O_MULW: x[d->rd] = (uint64_t)(int64_t)(int32_t)(uint32_t)(a * b); break;
            case O_DIVW: {
                int32_t p = (int32_t)(uint32_t)a, q = (int32_t)(uint32_t)b;
                int32_t r = q == 0 ? -1 : (p == INT32_MIN && q == -1) ? p : p / q;
                x[d->rd] = (uint64_t)(int64_t)r;
                break;
            }
            case O_DIVUW: {
                uint32_t p = (uint32_t)a, q = (uint32_t)b;
                x[d->rd] = (uint64_t)(int64_t)(int32_t)(q == 0 ? 0xFFFFFFFFu : p / q);
                break;
            }
            case O_REMW: {
                int32_t p = (int32_t)(uint32_t)a, q = (int32_t)(uint32_t)b;
                int32_t r = q == 0 ? p : (p == INT32_MIN && q == -1) ? 0 : p % q;
                x[d->rd] = (uint64_t)(int64_t)r;
                break;
            }
            case O_REMUW: {
                uint32_t p = (uint32_t)a, q = (uint32_t)b;
                x[d->rd] = (uint64_t)(int64_t)(int32_t)(q == 0 ? p : p % q);
                break;
            }
            case O_LB: { MEM(1); x[d->rd] = (uint64_t)(int64_t)(int8_t)h[0]; break; }
            case O_LBU: { MEM(1); x[d->rd] = h[0]; break; }
            case O_LH: { int16_t v; MEM(2); memcpy(&v, h, 2); x[d->rd] = (uint64_t)(int64_t)v; break; }
            case O_LHU: { uint16_t v; MEM(2); memcpy(&v, h, 2); x[d->rd] = v; break; }
            case O_LW: { int32_t v; MEM(4); memcpy(&v, h, 4); x[d->rd] = (uint64_t)(int64_t)v; break; }
            case O_LWU: { uint32_t v; MEM(4); memcpy(&v, h, 4); x[d->rd] = v; break; }
            case O_LD: { MEM(8); memcpy(&x[d->rd], h, 8); break; }
            case O_SB: { MEM(1); h[0] = (uint8_t)b; break; }
            case O_SH: { uint16_t v = (uint16_t)b; MEM(2); memcpy(h, &v, 2); break; }
            case O_SW: { uint32_t v = (uint32_t)b; MEM(4); memcpy(h, &v, 4); break; }
            case O_SD: { MEM(8); memcpy(h, &b, 8); break; }
            case O_BEQ: if (a == b) next = (uint64_t)imm; break;
            case O_BNE: if (a != b) next = (uint64_t)imm; break;
            case O_BLT: if ((int64_t)a < (int64_t)b) next = (uint64_t)imm; break;
            case O_BGE: if ((int64_t)a >= (int64_t)b) next = (uint64_t)imm; break;
            case O_BLTU: if (a < b) next = (uint64_t)imm; break;
            case O_BGEU: if (a >= b) next = (uint64_t)imm; break;
            case O_JAL: x[d->rd] = next; next = (uint64_t)imm; break;
            case O_JALR: {
                uint64_t t = (a + (uint64_t)imm) & ~(uint64_t)1;
                x[d->rd] = next;
                next = t;
                break;
            }
            case O_FENCE: break;
            case O_ECALL: status = S_ECALL; goto stop;
            case O_EBREAK: status = S_EBREAK; goto stop;
            default: status = S_ILLEGAL; goto stop;
            }
#undef MEM
            pc = next;
        }
        continue;
    stop:
        executed -= left + 1; /* neither the faulting instruction nor the rest ran */
        break;
    }
done:
    out[0] = (uint64_t)executed;
    out[1] = pc;
    memcpy(regs + 1, x + 1, 31 * sizeof(uint64_t));
    regs[0] = 0;
    free(c.dec);
    free(c.bsize);
    free(c.bcount);
    return status;
}
