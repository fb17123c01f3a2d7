/*
 * Host-side helpers for the RV64 measurement (compiled for the host with `python -m ziglang cc
 * -shared`, loaded with ctypes). Not part of the allocator cores.
 *
 * 1. memplan_trace_hook: a unicorn UC_HOOK_BLOCK callback that appends (address | size << 32) of
 *    every executed basic block to a growable buffer (no Python call per block).
 * 2. memplan_cycles: the in-order core model of experiments/rv64/cycles.py run over a block trace.
 *    The semantics are exactly those of cycles.simulate_reference (the pure-Python reference,
 *    cross-checked by tests/test_rv64.py); keep the two in sync.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t *buf;
    int64_t len, cap;
    int failed;
} trace_t;

trace_t *memplan_trace_new(void)
{
    trace_t *t = (trace_t *)calloc(1, sizeof(trace_t));
    return t;
}

void memplan_trace_free(trace_t *t)
{
    if (t) { free(t->buf); free(t); }
}

int64_t memplan_trace_len(const trace_t *t) { return t->failed ? -1 : t->len; }

void memplan_trace_copy(const trace_t *t, uint64_t *out)
{
    memcpy(out, t->buf, (size_t)t->len * sizeof(uint64_t));
}

void memplan_trace_hook(void *uc, uint64_t address, uint32_t size, void *user)
{
    (void)uc;
    trace_t *t = (trace_t *)user;
    if (t->len == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : (1 << 16);
        uint64_t *b = (uint64_t *)realloc(t->buf, (size_t)cap * sizeof(uint64_t));
        if (!b) { t->failed = 1; return; }
        t->buf = b;
        t->cap = cap;
    }
    t->buf[t->len++] = address | ((uint64_t)size << 32);
}

/* Instruction kinds, same order as decode.CLASSES. */
enum { K_ALU, K_LOAD, K_STORE, K_BRANCH, K_JUMP, K_MUL, K_DIV, K_OTHER };

typedef struct {
    int64_t width;          /* issue width */
    int64_t dual_pipes;     /* 1: pipe A = memory, pipe B = control/mul/div/other (SiFive7) */
    int64_t lat[8];         /* result latency per kind */
    int64_t lat_div32;      /* latency of divw/remw */
    int64_t div_busy;       /* cycles the divider stays busy after a 64-bit divide issues */
    int64_t div32_busy;
    int64_t mispredict;     /* extra cycles after a mispredicted branch */
    int64_t taken_ends_group; /* 1: a taken branch / jump ends the issue group */
    int64_t bht_entries;    /* power of two */
    int64_t bht_init;       /* initial 2-bit counter value */
} model_t;

typedef struct {
    int64_t cycles, mispredicts, branches;
} result_t;

/* ids[e]: block index of the e-th executed block; blocks: first insn, count, fallthrough, addr;
 * insns: kind, rd, s0, s1, s2, w32 (int8 each, -1 = none); branch_pc[b]: pc of the last insn. */
void memplan_cycles(const int32_t *ids, int64_t nexec, const int64_t *blk_first,
                    const int64_t *blk_count, const uint64_t *blk_fall, const uint64_t *blk_addr,
                    const uint64_t *blk_lastpc, const int8_t *insn, uint64_t halt,
                    const model_t *m, result_t *out)
{
    int64_t ready[64];
    uint8_t *bht = (uint8_t *)malloc((size_t)m->bht_entries);
    for (int i = 0; i < 64; i++) ready[i] = 0;
    for (int64_t i = 0; i < m->bht_entries; i++) bht[i] = (uint8_t)m->bht_init;
    int64_t t = 0, cnt = 0, a_used = 0, b_used = 0, end = 0, div_free = 0, issue = 0;
    int64_t mispredicts = 0, branches = 0;
    for (int64_t e = 0; e < nexec; e++) {
        int32_t b = ids[e];
        const int8_t *p = insn + 6 * blk_first[b];
        int64_t k, nk = blk_count[b], kind = K_ALU;
        for (k = 0; k < nk; k++, p += 6) {
            kind = p[0];
            int64_t e0 = t;
            for (int s = 2; s < 5; s++)
                if (p[s] >= 0 && ready[(int)p[s]] > e0) e0 = ready[(int)p[s]];
            if (kind == K_DIV && div_free > e0) e0 = div_free;
            if (e0 > t) { t = e0; cnt = a_used = b_used = 0; }
            int needA = m->dual_pipes && (kind == K_LOAD || kind == K_STORE);
            int needB = m->dual_pipes && (kind >= K_BRANCH && kind != K_LOAD && kind != K_STORE);
            if (cnt >= m->width || (needA && a_used) || (needB && b_used)) {
                t += 1; cnt = a_used = b_used = 0;
            }
            issue = t;
            cnt++;
            a_used |= needA;
            b_used |= needB;
            if (p[1] >= 0) {
                int64_t lat = (kind == K_DIV && p[5]) ? m->lat_div32 : m->lat[kind];
                ready[(int)p[1]] = issue + lat;
            }
            if (kind == K_DIV) div_free = issue + (p[5] ? m->div32_busy : m->div_busy);
            if (issue + 1 > end) end = issue + 1;
        }
        if (kind == K_BRANCH) {
            uint64_t next = e + 1 < nexec ? blk_addr[ids[e + 1]] : halt;
            int taken = next != blk_fall[b];
            int64_t idx = (int64_t)((blk_lastpc[b] >> 1) & (uint64_t)(m->bht_entries - 1));
            int pred = bht[idx] >= 2;
            if (taken && bht[idx] < 3) bht[idx]++;
            if (!taken && bht[idx] > 0) bht[idx]--;
            branches++;
            if (pred != taken) {
                mispredicts++;
                t = issue + 1 + m->mispredict;
                cnt = a_used = b_used = 0;
                if (t > end) end = t;
            } else if (taken && m->taken_ends_group) {
                t = issue + 1; cnt = a_used = b_used = 0;
            }
        } else if (kind == K_JUMP && m->taken_ends_group) {
            t = issue + 1; cnt = a_used = b_used = 0;
        }
    }
    free(bht);
    out->cycles = end;
    out->mispredicts = mispredicts;
    out->branches = branches;
}
