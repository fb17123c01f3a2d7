/*
 * Host-side helper for the RV64 measurement (compiled for the host with `python -m ziglang cc
 * -shared`, loaded with ctypes). Not part of the allocator cores.
 *
 * The in-order core models of experiments/rv64/cycles.py run *inside* unicorn's hooks, so the
 * cost of an estimate is bounded in memory (no block trace is stored):
 *
 *   memplan_block_hook  UC_HOOK_BLOCK: the block that just finished executing is costed now that
 *                       its successor (hence its branch outcome) is known; the new block becomes
 *                       the pending one; per-block execution counters are bumped in place.
 *   memplan_mem_hook    UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE: data addresses of the pending block,
 *                       in program order (paired with its loads and stores when it is costed).
 *   memplan_sim_finish  costs the last block (its successor is the halt address).
 *
 * Every model state (one per core model variant, e.g. with and without caches) is advanced block
 * by block with the whole history it needs (registers' ready cycles, issue group, divider,
 * branch history table, cache tags): the result equals running the model over the full trace.
 * The semantics are exactly those of cycles.simulate_reference (pure Python, cross-checked by
 * tests/test_rv64.py); keep the two in sync.
 *
 * Cost: a block is costed from a memo of its effect keyed by its entry state (see "block memo"
 * below) and only run instruction by instruction the first time that state is seen; on the
 * allocator cores' loops over 99.9% of blocks hit the memo. The memo changes no number
 * (tests/test_rv64_memo.py runs every core with it on and off).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Instruction kinds, same order as decode.CLASSES. */
enum { K_ALU, K_LOAD, K_STORE, K_BRANCH, K_JUMP, K_MUL, K_DIV, K_OTHER };

/* Must match cycles._Model field by field. */
typedef struct {
    int64_t width;            /* issue width */
    int64_t dual_pipes;       /* SiFive7: pipe A memory, pipe B control/mul/div/other, ALU A or B */
    int64_t lat[8];           /* write-back latency per kind */
    int64_t lat_div32;        /* divw/remw */
    int64_t div_busy, div32_busy;
    int64_t bypass;           /* ReadAdvance cycles ... */
    int64_t bypass_prod;      /* ... when the producer kind is in this bit mask ... */
    int64_t bypass_cons;      /* ... and the consumer kind is in this bit mask */
    int64_t inorder_wb;       /* llvm-mca in-order write-back rule */
    int64_t mispredict;
    int64_t taken_ends_group;
    int64_t perfect_branches; /* 1: no prediction, no fetch redirect (llvm-mca block mode) */
    int64_t bht_entries, bht_init;
    int64_t l1i_sets, l1i_ways, l1i_shift, l1i_penalty; /* l1i_sets 0: no instruction cache */
    int64_t l1d_sets, l1d_ways, l1d_shift, l1d_penalty; /* l1d_sets 0: no data cache */
    int64_t bypass_store_data; /* the bypass also applies to a store's data operand */
} model_t;

typedef struct {
    int64_t sets, ways, shift;
    uint64_t *tag;   /* line number + 1; 0 = invalid */
    uint64_t *stamp; /* LRU: last access */
    uint8_t *mru;    /* per set: way of the last hit or fill (a shortcut for the lookup only) */
    uint64_t clock;
    int64_t accesses, misses;
} cache_t;

/* One instruction with everything its issue needs precomputed for one model (built once per
 * decoded image and model, so the per-instruction work has no lookups by kind). */
enum { F_A = 1, F_B = 2, F_AB = 4, F_PBYP = 16, F_MEM = 32, F_DIV = 64, F_LOAD = 128 };
typedef struct {
    int8_t kind, rd, nsrc, len;
    int8_t src[3];
    uint8_t flags;
    uint8_t bypmask; /* bit s: source s reads the bypassed ready time */
    int32_t lat, busy; /* write-back latency; divider busy cycles (divides only) */
} pins_t;

typedef struct {
    model_t m;
    pins_t *ins; /* [nhalf] for the image of the sim the pipe belongs to (0 until added) */
    int64_t ready[64], ready_byp[64];
    int64_t t, cnt, a_used, b_used, end, div_free, last_wb;
    uint64_t rr_next, rr_removed; /* llvm-mca DefaultResourceStrategy of the A|B group */
    uint8_t *bht;
    cache_t l1i, l1d;
    int64_t mispredicts, branches;
    struct binfo **binfo; /* [nhalf] per-block facts for the memo, built on first execution */
    struct memo *memo;    /* [MEMO_SLOTS] block effects by entry state (0: memo off) */
    int64_t nhalf, memo_hits, memo_misses;
} pipe_t;

/* Must match cycles._PipeResult. */
typedef struct {
    int64_t cycles, mispredicts, branches;
    int64_t l1i_accesses, l1i_misses, l1d_accesses, l1d_misses;
    int64_t memo_hits, memo_misses; /* blocks costed from the memo / by the instruction loop */
} pipe_result_t;

#define MAXMEM 256
#define MAXPIPES 4

typedef struct {
    uint64_t base;        /* first code address of the decode table */
    int64_t nhalf;        /* entries (one per halfword) */
    const int8_t *dec;    /* 7 per entry: kind, rd, s0, s1, s2, w32, length */
    pipe_t *pipes[MAXPIPES];
    int64_t npipes;
    uint64_t prev_addr;
    int64_t prev_size, have_prev;
    uint64_t mem[MAXMEM];
    int64_t nmem, error;  /* error: 1 memory buffer overflow, 2 block outside the table,
                           * 3 two blocks of different sizes start at one address */
    int64_t *block_count; /* [nhalf] executions of a block starting at base + 2 k */
    int64_t *block_size;  /* [nhalf] its size in bytes */
    int64_t blocks;
    uint64_t stack_lo, stack_hi, stack_min; /* lowest address touched in [stack_lo, stack_hi) */
    uint64_t work_lo, work_hi, work_max;    /* highest address touched in [work_lo, work_hi) */
} sim_t;

static int cache_init(cache_t *c, int64_t sets, int64_t ways, int64_t shift)
{
    memset(c, 0, sizeof(*c));
    if (sets <= 0) return 0;
    c->sets = sets; c->ways = ways; c->shift = shift;
    c->tag = (uint64_t *)calloc((size_t)(sets * ways), sizeof(uint64_t));
    c->stamp = (uint64_t *)calloc((size_t)(sets * ways), sizeof(uint64_t));
    c->mru = (uint8_t *)calloc((size_t)sets, 1);
    return c->tag && c->stamp && c->mru ? 0 : -1;
}

/* Access the line holding addr; 1 on a miss (the line is then allocated, LRU victim: the way
 * with the oldest stamp, the lowest such way on ties). The MRU way is tried first; the result
 * (hit/miss, victim, stamps) is the same as a full scan. */
static inline int cache_access(cache_t *c, uint64_t addr)
{
    uint64_t line = addr >> c->shift, key = line + 1;
    int64_t set = (int64_t)(line & (uint64_t)(c->sets - 1));
    uint64_t *tag = c->tag + set * c->ways, *st = c->stamp + set * c->ways;
    uint64_t now = ++c->clock;
    c->accesses++;
    int64_t w0 = c->mru[set];
    if (tag[w0] == key) { st[w0] = now; return 0; }
    for (int64_t w = 0; w < c->ways; w++)
        if (tag[w] == key) { st[w] = now; c->mru[set] = (uint8_t)w; return 0; }
    int64_t victim = 0;
    for (int64_t w = 1; w < c->ways; w++)
        if (st[w] < st[victim]) victim = w;
    c->misses++;
    tag[victim] = key;
    st[victim] = now;
    c->mru[set] = (uint8_t)victim;
    return 1;
}

pipe_t *memplan_pipe_new(const model_t *m)
{
    pipe_t *p = (pipe_t *)calloc(1, sizeof(pipe_t));
    if (!p) return 0;
    p->m = *m;
    p->bht = (uint8_t *)malloc((size_t)m->bht_entries);
    if (!p->bht) { free(p); return 0; }
    for (int64_t i = 0; i < m->bht_entries; i++) p->bht[i] = (uint8_t)m->bht_init;
    p->rr_next = 3;
    if (cache_init(&p->l1i, m->l1i_sets, m->l1i_ways, m->l1i_shift) ||
        cache_init(&p->l1d, m->l1d_sets, m->l1d_ways, m->l1d_shift))
        return 0;
    return p;
}

void memplan_pipe_free(pipe_t *p)
{
    if (!p) return;
    free(p->bht);
    free(p->l1i.tag); free(p->l1i.stamp); free(p->l1i.mru);
    free(p->l1d.tag); free(p->l1d.stamp); free(p->l1d.mru);
    free(p->ins);
    if (p->binfo)
        for (int64_t k = 0; k < p->nhalf; k++) free(p->binfo[k]);
    free(p->binfo);
    free(p->memo);
    free(p);
}

void memplan_pipe_result(const pipe_t *p, pipe_result_t *r)
{
    r->cycles = p->end; /* one past the last issue, or the end of a mispredict penalty */
    r->mispredicts = p->mispredicts;
    r->branches = p->branches;
    r->l1i_accesses = p->l1i.accesses; r->l1i_misses = p->l1i.misses;
    r->l1d_accesses = p->l1d.accesses; r->l1d_misses = p->l1d.misses;
    r->memo_hits = p->memo_hits; r->memo_misses = p->memo_misses;
}

/* llvm-mca DefaultResourceStrategy (ResourceManager.cpp) for the group {A = 1, B = 2}. */
static uint64_t rr_impl(uint64_t cand, uint64_t *next)
{
    uint64_t c = (cand & 2) ? 2 : 1; /* the highest set bit */
    *next &= (c | (c - 1));
    return c;
}

static uint64_t rr_select(pipe_t *p, uint64_t ready)
{
    uint64_t cand = ready & p->rr_next;
    if (cand) return rr_impl(cand, &p->rr_next);
    p->rr_next = 3 ^ p->rr_removed;
    p->rr_removed = 0;
    cand = ready & p->rr_next;
    if (cand) return rr_impl(cand, &p->rr_next);
    p->rr_next = 3;
    return rr_impl(ready & 3, &p->rr_next);
}

static void rr_used(pipe_t *p, uint64_t mask)
{
    if (mask > p->rr_next) { p->rr_removed |= mask; return; }
    p->rr_next &= ~mask;
    if (p->rr_next) return;
    p->rr_next = 3 ^ p->rr_removed;
    p->rr_removed = 0;
}

static inline void new_cycle(pipe_t *p, int64_t t)
{
    p->t = t;
    p->cnt = p->a_used = p->b_used = 0;
}

/* Fill the precomputed form of one instruction (d = 7 decode bytes: kind, rd, three sources,
 * word32 | (store data index + 1) << 1, length) for model m. */
static void pins_fill(pins_t *o, const model_t *m, const int8_t *d)
{
    int kind = d[0], w32 = d[5] & 1, data = (d[5] >> 1) - 1;
    memset(o, 0, sizeof(*o));
    o->kind = (int8_t)kind;
    o->rd = d[1];
    int cbyp = (int)((m->bypass_cons >> kind) & 1);
    for (int s = 2; s < 5; s++) {
        if (d[s] < 0) continue;
        if (cbyp || (m->bypass_store_data && kind == K_STORE && s - 2 == data))
            o->bypmask |= (uint8_t)(1u << o->nsrc);
        o->src[o->nsrc++] = d[s];
    }
    o->len = (int8_t)(d[6] > 0 ? d[6] : 2);
    o->lat = (int32_t)((kind == K_DIV && w32) ? m->lat_div32 : m->lat[kind]);
    o->busy = (int32_t)(w32 ? m->div32_busy : m->div_busy);
    uint8_t f = 0;
    if (m->dual_pipes && (kind == K_LOAD || kind == K_STORE)) f |= F_A;
    if (m->dual_pipes && (kind == K_BRANCH || kind == K_JUMP || kind == K_MUL || kind == K_DIV ||
                          kind == K_OTHER)) f |= F_B;
    if (m->dual_pipes && kind == K_ALU) f |= F_AB;
    if ((m->bypass_prod >> kind) & 1) f |= F_PBYP;
    if (kind == K_LOAD || kind == K_STORE) f |= F_MEM;
    if (kind == K_DIV) f |= F_DIV;
    if (kind == K_LOAD) f |= F_LOAD;
    o->flags = f;
}

/* Issue one instruction d; extra = its data-cache miss penalty (cycles added to a load's
 * latency, 0 on a hit or without a data cache); next_pc / fall: for the branch outcome of the
 * block's last instruction. */
static inline void step(pipe_t *p, const pins_t *d, uint64_t pc, int64_t extra, int last,
                        uint64_t fall, uint64_t next_pc)
{
    const model_t *m = &p->m;
    int kind = d->kind, rd = d->rd;
    unsigned f = d->flags;
    int64_t lat = d->lat;
    int64_t c = p->t;
    for (int s = 0; s < d->nsrc; s++) {
        int64_t r = ((d->bypmask >> s) & 1) ? p->ready_byp[(int)d->src[s]] : p->ready[(int)d->src[s]];
        if (r > c) c = r;
    }
    if ((f & F_DIV) && p->div_free > c) c = p->div_free;
    int64_t le = lat + extra;
    if (m->inorder_wb && p->last_wb - le > c) c = p->last_wb - le;
    if (c > p->t) new_cycle(p, c);
    for (;;) {
        if (p->cnt >= m->width || ((f & F_A) && p->a_used) || ((f & F_B) && p->b_used) ||
            ((f & F_AB) && p->a_used && p->b_used)) {
            new_cycle(p, p->t + 1);
            continue;
        }
        break;
    }
    int64_t issue = p->t;
    p->cnt++;
    if (f & F_A) { p->a_used = 1; rr_used(p, 1); }
    if (f & F_B) { p->b_used = 1; rr_used(p, 2); }
    if (f & F_AB) {
        uint64_t u = rr_select(p, (p->a_used ? 0 : 1) | (p->b_used ? 0 : 2));
        if (u == 1) p->a_used = 1; else p->b_used = 1;
        rr_used(p, u);
    }
    if (rd >= 0) {
        p->ready[rd] = issue + le;
        p->ready_byp[rd] = (f & F_PBYP) ? issue + le - m->bypass : issue + le;
    }
    if (f & F_DIV) p->div_free = issue + d->busy;
    if (m->inorder_wb) p->last_wb = issue + le;
    if (issue + 1 > p->end) p->end = issue + 1;
    if (!last || m->perfect_branches) return;
    if (kind == K_BRANCH) {
        int taken = next_pc != fall;
        int64_t idx = (int64_t)((pc >> 1) & (uint64_t)(m->bht_entries - 1));
        int pred = p->bht[idx] >= 2;
        if (taken && p->bht[idx] < 3) p->bht[idx]++;
        if (!taken && p->bht[idx] > 0) p->bht[idx]--;
        p->branches++;
        if (pred != taken) {
            p->mispredicts++;
            new_cycle(p, issue + 1 + m->mispredict);
            if (p->t > p->end) p->end = p->t;
        } else if (taken && m->taken_ends_group) {
            new_cycle(p, issue + 1);
        }
    } else if (kind == K_JUMP && m->taken_ends_group) {
        new_cycle(p, issue + 1);
    }
}

/* L1 instruction-cache misses of fetching [addr, addr + size) (0 without an instruction cache). */
static int64_t icache_misses(pipe_t *p, uint64_t addr, int64_t size)
{
    const model_t *m = &p->m;
    int64_t misses = 0;
    if (m->l1i_sets) {
        uint64_t first = addr >> m->l1i_shift, lastl = (addr + (uint64_t)size - 1) >> m->l1i_shift;
        for (uint64_t l = first; l <= lastl; l++) misses += cache_access(&p->l1i, l << m->l1i_shift);
    }
    return misses;
}

/* Issue the instructions of [addr, addr + size) (successor next_pc) after `imiss` L1I misses;
 * lmiss[j] != 0: the j-th load or store (j < nmem) is a load that missed L1D. The caches were
 * advanced before (their contents do not depend on timing). */
static void issue_block(pipe_t *p, uint64_t base, uint64_t addr, int64_t size, uint64_t next_pc,
                        int64_t imiss, const uint8_t *lmiss, int64_t nmem)
{
    const model_t *m = &p->m;
    if (imiss) new_cycle(p, p->t + imiss * m->l1i_penalty);
    uint64_t pc = addr, fall = addr + (uint64_t)size;
    const pins_t *ins = p->ins + ((addr - base) >> 1);
    int64_t j = 0;
    while (pc < fall) {
        int64_t extra = 0;
        if ((ins->flags & F_MEM) && j < nmem) {
            if (lmiss[j]) extra = m->l1d_penalty;
            j++;
        }
        int len = ins->len;
        step(p, ins, pc, extra, pc + (uint64_t)len >= fall, fall, next_pc);
        pc += (uint64_t)len;
        ins += len >> 1;
    }
}

/* Cost one executed block [addr, addr + size) whose successor starts at next_pc; mem[0..nmem)
 * are the data addresses of its loads and stores in program order: instruction by instruction
 * (the definition; run_block below gives the same result through the memo). */
static void run_block_direct(pipe_t *p, uint64_t base, uint64_t addr, int64_t size,
                             uint64_t next_pc, const uint64_t *mem, int64_t nmem)
{
    const model_t *m = &p->m;
    int64_t imiss = icache_misses(p, addr, size);
    uint8_t lmiss[MAXMEM];
    uint64_t pc = addr, fall = addr + (uint64_t)size;
    const pins_t *ins = p->ins + ((addr - base) >> 1);
    int64_t j = 0;
    for (; pc < fall && j < nmem; pc += (uint64_t)ins->len, ins += ins->len >> 1)
        if (ins->flags & F_MEM) {
            int miss = m->l1d_sets ? cache_access(&p->l1d, mem[j]) : 0;
            lmiss[j++] = (uint8_t)(miss && (ins->flags & F_LOAD));
        }
    issue_block(p, base, addr, size, next_pc, imiss, lmiss, nmem);
}

/* ---- block memo --------------------------------------------------------------------------
 * The timing of a block depends on the pipe state only through values *relative to* t0, the
 * issue cycle at block entry: every ready time, the divider's free time and the last write-back
 * enter the model only as max(c, value) or "value - latency > c" with c >= t0 and latency >= 0,
 * so a value at or below t0 acts exactly like t0 (clamped to 0 below). The entry state of a
 * block is therefore fully described by the key
 *   issue-group state (cnt, pipes used, the A|B round robin), the branch prediction and outcome
 *   of its last instruction, its L1I misses, which of its loads miss L1D (cache contents do not
 *   depend on timing, so the caches are advanced first), the clamped divider and write-back
 *   times, and the clamped ready times of the registers it reads before writing them;
 * and its effect by: the new t, group state and end (relative to t0) and the final ready times
 * of the registers it writes. A hit applies the stored effect; a miss runs run_block_direct's
 * loop and stores it. Entries are compared in full (never by hash alone), so the result equals
 * run_block_direct exactly (tests/test_rv64.py runs real traces with the memo on and off). */
#define MEMO_IN 24
#define MEMO_OUT 24
#define MEMO_KEY (4 + MEMO_IN)
#define MEMO_SLOTS 8192 /* direct-mapped: a new entry replaces the slot's old one */
static int memo_enabled = 1;

typedef struct binfo {
    int64_t size, nin, nout, nmemins, last_off; /* last_off: last instruction's pc - block pc */
    int ok, has_div, last_kind;
    int8_t in_reg[MEMO_IN], in_byp[MEMO_IN], out_reg[MEMO_OUT];
    int32_t in_at[MEMO_IN];   /* byte offset in pipe_t of the ready time source q reads */
    int32_t out_at[MEMO_OUT]; /* byte offset in pipe_t of ready[out_reg[q]] */
    uint8_t is_load[64];
} binfo_t;

typedef struct memo {
    int64_t tag; /* block index + 1; 0: empty */
    int64_t key[MEMO_KEY];
    int64_t dt, group, end_rel, div_rel, wb_rel;
    int64_t rdy[MEMO_OUT], byp[MEMO_OUT];
} memo_t;

/* Turn the memo on (1) or off (0) for pipes added to a sim afterwards (memplan_sim_add_pipe);
 * returns the previous setting. */
int memplan_set_memo(int on)
{
    int old = memo_enabled;
    memo_enabled = on ? 1 : 0;
    return old;
}

static binfo_t *block_info(pipe_t *p, uint64_t base, uint64_t addr, int64_t size)
{
    int64_t k = (int64_t)((addr - base) >> 1);
    binfo_t *bi = p->binfo[k];
    if (bi) return bi;
    bi = (binfo_t *)calloc(1, sizeof(binfo_t));
    if (!bi) return 0;
    bi->size = size;
    bi->ok = 1;
    uint8_t written[64] = {0};
    uint64_t pc = addr, fall = addr + (uint64_t)size;
    const pins_t *ins = p->ins + k;
    while (pc < fall) {
        for (int s = 0; s < ins->nsrc; s++) {
            int r = ins->src[s], byp = (ins->bypmask >> s) & 1, seen = 0;
            if (written[r]) continue;
            for (int64_t q = 0; q < bi->nin; q++)
                if (bi->in_reg[q] == r && bi->in_byp[q] == byp) seen = 1;
            if (seen) continue;
            if (bi->nin >= MEMO_IN) { bi->ok = 0; break; }
            bi->in_reg[bi->nin] = (int8_t)r;
            bi->in_byp[bi->nin++] = (int8_t)byp;
        }
        if (ins->rd >= 0 && !written[(int)ins->rd]) {
            written[(int)ins->rd] = 1;
            if (bi->nout >= MEMO_OUT) bi->ok = 0;
            else bi->out_reg[bi->nout++] = ins->rd;
        }
        if (ins->flags & F_MEM) {
            if (bi->nmemins >= 64) bi->ok = 0;
            else bi->is_load[bi->nmemins] = (ins->flags & F_LOAD) ? 1 : 0;
            bi->nmemins++;
        }
        if (ins->flags & F_DIV) bi->has_div = 1;
        bi->last_off = (int64_t)(pc - addr);
        bi->last_kind = ins->kind;
        pc += (uint64_t)ins->len;
        ins += ins->len >> 1;
    }
    for (int64_t q = 0; q < bi->nin; q++)
        bi->in_at[q] = (int32_t)((bi->in_byp[q] ? offsetof(pipe_t, ready_byp)
                                                : offsetof(pipe_t, ready)) +
                                 sizeof(int64_t) * (size_t)bi->in_reg[q]);
    for (int64_t q = 0; q < bi->nout; q++)
        bi->out_at[q] = (int32_t)(offsetof(pipe_t, ready) + sizeof(int64_t) * (size_t)bi->out_reg[q]);
    p->binfo[k] = bi;
    return bi;
}

static inline int64_t rel0(int64_t v, int64_t t0) { return v > t0 ? v - t0 : 0; }

/* Cost one executed block (same arguments and result as run_block_direct). */
static void run_block(pipe_t *p, uint64_t base, uint64_t addr, int64_t size, uint64_t next_pc,
                      const uint64_t *mem, int64_t nmem)
{
    binfo_t *bi = p->memo ? block_info(p, base, addr, size) : 0;
    if (!bi || !bi->ok || bi->size != size) {
        run_block_direct(p, base, addr, size, next_pc, mem, nmem);
        return;
    }
    const model_t *m = &p->m;
    int64_t k = (int64_t)((addr - base) >> 1);
    uint64_t fall = addr + (uint64_t)size;
    /* caches first: their contents do not depend on timing */
    int64_t imiss = icache_misses(p, addr, size);
    int64_t nm = bi->nmemins < nmem ? bi->nmemins : nmem;
    uint64_t dmask = 0;
    if (m->l1d_sets)
        for (int64_t j = 0; j < nm; j++)
            if (cache_access(&p->l1d, mem[j]) && bi->is_load[j]) dmask |= 1ull << j;
    /* the last instruction's branch prediction and outcome */
    uint64_t lastpc = addr + (uint64_t)bi->last_off; /* the instruction that ends at fall */
    int64_t pred = 0, taken = 0, bidx = 0;
    int branch = bi->last_kind == K_BRANCH && !m->perfect_branches;
    if (branch) {
        bidx = (int64_t)((lastpc >> 1) & (uint64_t)(m->bht_entries - 1));
        pred = p->bht[bidx] >= 2;
        taken = next_pc != fall;
    }
    int64_t t0 = p->t, key[MEMO_KEY];
    key[0] = p->cnt | p->a_used << 8 | p->b_used << 9 | (int64_t)p->rr_next << 10 |
             (int64_t)p->rr_removed << 12 | pred << 14 | taken << 15 | imiss << 16;
    key[1] = (int64_t)dmask;
    key[2] = bi->has_div ? rel0(p->div_free, t0) : 0;
    key[3] = m->inorder_wb ? rel0(p->last_wb, t0) : 0;
    const char *pb = (const char *)p;
    for (int64_t q = 0; q < bi->nin; q++) key[4 + q] = rel0(*(const int64_t *)(pb + bi->in_at[q]), t0);
    int64_t nkey = 4 + bi->nin;
    /* slot hash: rotate-xor over the key (one-cycle operations), then one multiplicative mix */
    uint64_t h = (uint64_t)(k + 1);
    for (int64_t q = 0; q < nkey; q++) h = ((h << 7) | (h >> 57)) ^ (uint64_t)key[q];
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    memo_t *e = p->memo + ((h >> 40) & (MEMO_SLOTS - 1));
    int same = e->tag == k + 1;
    for (int64_t q = 0; same && q < nkey; q++) same = e->key[q] == key[q];
    if (same) {
        p->memo_hits++;
        p->t = t0 + e->dt;
        p->cnt = e->group & 0xFF;
        p->a_used = (e->group >> 8) & 1;
        p->b_used = (e->group >> 9) & 1;
        p->rr_next = (uint64_t)(e->group >> 10) & 3;
        p->rr_removed = (uint64_t)(e->group >> 12) & 3;
        if (t0 + e->end_rel > p->end) p->end = t0 + e->end_rel;
        char *pw = (char *)p;
        const ptrdiff_t to_byp = offsetof(pipe_t, ready_byp) - offsetof(pipe_t, ready);
        for (int64_t q = 0; q < bi->nout; q++) {
            *(int64_t *)(pw + bi->out_at[q]) = t0 + e->rdy[q];
            *(int64_t *)(pw + bi->out_at[q] + to_byp) = t0 + e->byp[q];
        }
        if (bi->has_div) p->div_free = t0 + e->div_rel;
        if (m->inorder_wb) p->last_wb = t0 + e->wb_rel;
        if (branch) { /* the bookkeeping step() does for the block's last branch */
            if (taken && p->bht[bidx] < 3) p->bht[bidx]++;
            if (!taken && p->bht[bidx] > 0) p->bht[bidx]--;
            p->branches++;
            if (pred != taken) p->mispredicts++;
        }
        return;
    }
    /* miss: issue the instructions with the cache outcomes found above */
    p->memo_misses++;
    int64_t end_in = p->end;
    p->end = INT64_MIN;
    uint8_t lmiss[64];
    for (int64_t j = 0; j < nm; j++) lmiss[j] = (uint8_t)((dmask >> j) & 1);
    issue_block(p, base, addr, size, next_pc, imiss, lmiss, nm);
    e->tag = k + 1;
    memcpy(e->key, key, (size_t)nkey * sizeof(int64_t));
    e->dt = p->t - t0;
    e->group = p->cnt | p->a_used << 8 | p->b_used << 9 | (int64_t)p->rr_next << 10 |
               (int64_t)p->rr_removed << 12;
    e->end_rel = p->end - t0;
    for (int64_t q = 0; q < bi->nout; q++) {
        int r = bi->out_reg[q];
        e->rdy[q] = p->ready[r] - t0;
        e->byp[q] = p->ready_byp[r] - t0;
    }
    e->div_rel = p->div_free - t0;
    e->wb_rel = p->last_wb - t0;
    if (end_in > p->end) p->end = end_in;
}

/* Cost a straight sequence of decoded instructions (7 bytes each) `iterations` times with the
 * block's branches counted as correctly predicted and not taken (llvm-mca's view of a block).
 * Returns the cycle count (one past the last issue). */
int64_t memplan_block_cycles(const model_t *m, const int8_t *insns, int64_t n, int64_t iterations)
{
    model_t mm = *m;
    mm.perfect_branches = 1;
    mm.l1i_sets = mm.l1d_sets = 0;
    pipe_t *p = memplan_pipe_new(&mm);
    if (!p) return -1;
    pins_t *ins = (pins_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(pins_t));
    if (!ins) { memplan_pipe_free(p); return -1; }
    for (int64_t k = 0; k < n; k++) pins_fill(ins + k, &mm, insns + 7 * k);
    for (int64_t it = 0; it < iterations; it++)
        for (int64_t k = 0; k < n; k++) step(p, ins + k, 0, 0, 0, 0, 0);
    int64_t c = p->end;
    free(ins);
    memplan_pipe_free(p);
    return c;
}

sim_t *memplan_sim_new(uint64_t base, int64_t nhalf, const int8_t *dec)
{
    sim_t *s = (sim_t *)calloc(1, sizeof(sim_t));
    if (!s) return 0;
    s->base = base;
    s->nhalf = nhalf;
    s->dec = dec;
    s->block_count = (int64_t *)calloc((size_t)nhalf, sizeof(int64_t));
    s->block_size = (int64_t *)calloc((size_t)nhalf, sizeof(int64_t));
    s->stack_min = UINT64_MAX;
    if (!s->block_count || !s->block_size) return 0;
    return s;
}

int64_t memplan_sim_add_pipe(sim_t *s, pipe_t *p)
{
    if (s->npipes >= MAXPIPES) return -1;
    free(p->ins);
    p->ins = (pins_t *)calloc((size_t)(s->nhalf > 0 ? s->nhalf : 1), sizeof(pins_t));
    if (!p->ins) return -1;
    for (int64_t k = 0; k < s->nhalf; k++) pins_fill(p->ins + k, &p->m, s->dec + 7 * k);
    free(p->binfo);
    free(p->memo);
    p->binfo = 0;
    p->memo = 0;
    p->nhalf = s->nhalf;
    if (memo_enabled) {
        p->binfo = (binfo_t **)calloc((size_t)(s->nhalf > 0 ? s->nhalf : 1), sizeof(binfo_t *));
        p->memo = (memo_t *)calloc(MEMO_SLOTS, sizeof(memo_t));
        if (!p->binfo || !p->memo) { /* no memo: every block takes run_block_direct */
            free(p->binfo);
            free(p->memo);
            p->binfo = 0;
            p->memo = 0;
        }
    }
    s->pipes[s->npipes++] = p;
    return 0;
}

void memplan_sim_regions(sim_t *s, uint64_t stack_lo, uint64_t stack_hi, uint64_t work_lo,
                         uint64_t work_hi)
{
    s->stack_lo = stack_lo; s->stack_hi = stack_hi;
    s->work_lo = work_lo; s->work_hi = work_hi;
}

void memplan_sim_free(sim_t *s)
{
    if (!s) return;
    free(s->block_count);
    free(s->block_size);
    free(s);
}

static void cost_pending(sim_t *s, uint64_t next_pc)
{
    uint64_t addr = s->prev_addr;
    int64_t size = s->prev_size;
    if (addr < s->base || (int64_t)((addr + (uint64_t)size - s->base) >> 1) > s->nhalf) {
        s->error = 2;
        return;
    }
    int64_t k = (int64_t)((addr - s->base) >> 1);
    if (s->block_count[k] && s->block_size[k] != size) { /* counts by kind assume one size */
        s->error = 3;
        return;
    }
    s->block_count[k]++;
    s->block_size[k] = size;
    s->blocks++;
    for (int64_t i = 0; i < s->npipes; i++)
        run_block(s->pipes[i], s->base, addr, size, next_pc, s->mem, s->nmem);
}

void memplan_block_hook(void *uc, uint64_t address, uint32_t size, void *user)
{
    (void)uc;
    sim_t *s = (sim_t *)user;
    if (s->have_prev) cost_pending(s, address);
    s->prev_addr = address;
    s->prev_size = (int64_t)size;
    s->have_prev = 1;
    s->nmem = 0;
}

void memplan_mem_hook(void *uc, int type, uint64_t address, int size, int64_t value, void *user)
{
    (void)uc; (void)type; (void)size; (void)value;
    sim_t *s = (sim_t *)user;
    if (s->nmem < MAXMEM) s->mem[s->nmem++] = address;
    else s->error = 1;
    if (address >= s->stack_lo && address < s->stack_hi && address < s->stack_min)
        s->stack_min = address;
    if (address >= s->work_lo && address < s->work_hi && address + 8 > s->work_max)
        s->work_max = address + 8;
}

/* Cost the last block (successor: halt). Returns the error flag (0 ok). */
int64_t memplan_sim_finish(sim_t *s, uint64_t halt)
{
    if (s->have_prev) cost_pending(s, halt);
    s->have_prev = 0;
    return s->error;
}

/* Must match cycles._SimStats. */
typedef struct {
    int64_t kind_count[8];
    int64_t blocks;
    uint64_t stack_min, work_max;
} sim_stats_t;

void memplan_sim_stats(const sim_t *s, sim_stats_t *out, int64_t *block_count, int64_t *block_size)
{
    /* executed instructions by kind: each block's instructions times its execution count */
    for (int i = 0; i < 8; i++) out->kind_count[i] = 0;
    for (int64_t k = 0; k < s->nhalf; k++) {
        if (!s->block_count[k]) continue;
        uint64_t pc = s->base + 2 * (uint64_t)k, fall = pc + (uint64_t)s->block_size[k];
        while (pc < fall) {
            const int8_t *d = s->dec + 7 * (int64_t)((pc - s->base) >> 1);
            out->kind_count[(int)d[0]] += s->block_count[k];
            pc += (uint64_t)(d[6] > 0 ? d[6] : 2);
        }
    }
    out->blocks = s->blocks;
    out->stack_min = s->stack_min;
    out->work_max = s->work_max;
    memcpy(block_count, s->block_count, (size_t)s->nhalf * sizeof(int64_t));
    memcpy(block_size, s->block_size, (size_t)s->nhalf * sizeof(int64_t));
}
