/*
 * _exact_search: the compiled core of planners.exact_search (C99, CPython extension).
 *
 * Decision problem: given buffers (size in bytes, offset alignment in bytes, lifetime expressed as
 * a half-open range [slo, shi) of *sections*) and a capacity in bytes, find offsets such that
 * buffers whose section ranges intersect never overlap in address and every top
 * (offset + size) is <= capacity, or prove that none exist.
 *
 * Method (after MiniMalloc, Moffitt, ASPLOS 2023; the code is our own):
 *   - canonical placements: a buffer is put at its lowest offset allowed by already-placed
 *     buffers (its "min offset"); placements happen in lexicographically non-decreasing
 *     (offset, static rank) order, so every canonical layout is enumerated once;
 *   - section inference: per section, floor + unplaced bytes must fit below the capacity, with
 *     floor = max(placed tops, current offset, smallest min offset of an unplaced member);
 *   - dynamic ordering: candidates are tried by increasing min offset, ties by static rank;
 *   - dominance: a buffer is not placed at an offset >= some unplaced buffer's min offset + size
 *     (that buffer would fit in the gap below, so a lower layout exists);
 *   - decomposition: when no unplaced buffer crosses a section boundary, the two sides are
 *     independent subproblems solved one after the other;
 *   - round robin over several static rankings with doubling node budgets;
 *   - floor-profile memo: a hash set of search states proved to have no completion (see below).
 *
 * Memo (switch memo_floor_profiles). With canonical placements every placed buffer lies below
 * every later placement, so an unplaced buffer's min offset is the round-up of the highest top of
 * the placed buffers it interferes with: the placed layout acts on the rest of the search only
 * through the floor profile (skyline) it leaves, i.e. through the min offsets of the unplaced
 * buffers. Hence the set of completions explored by dfs() is a function of
 *   (section range [s0, s1), the unplaced set U, minoff[j] and rank[j] for j in U)
 * and of the canonical constraint (last_off, last_rank): a completion must start at
 * (offset, rank) >= (last_off, last_rank) lexicographically, so a larger constraint admits a
 * subset of the completions. (Totals, cuts and twin status are functions of U; floors only prune,
 * and every pruning is sound.) When dfs() returns "no completion" the key is stored with its
 * constraint and the capacity (a failure at capacity K holds at every capacity <= K); a later node
 * with the same key, a constraint >= the stored one and a capacity <= the stored one is cut. Keys are stored in full (sorted (buffer, minoff, rank) triples) and compared
 * exactly, so a hash collision never cuts a subtree. Memory is bounded: when the key pool and
 * table would exceed memo_bytes bytes the memo is emptied and starts again.
 *
 * Range: planners.model admits only problems whose worst-case arena
 * W = sum(round_up(size, align) + align - 1) is <= 2^63 - 1. Every offset this search forms is 0
 * or the round-up of a placed top, so (by induction over the chain of placed buffers below it)
 * min offsets, tops, "min offset + size", "offset + unplaced section total" and "floor + total"
 * are all <= W and never overflow i64. The capacity is clamped to 2^63 - 1 (larger values are
 * equivalent), and the area key width * size, which can exceed i64, saturates.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef long long i64;
#define MEMO_CAPSULE "planners._exact_search.memo"

enum { ST_FOUND = 0, ST_NOTFOUND = 1, ST_ABORT = 2, ST_TIMEOUT = 3, ST_NODELIMIT = 4, ST_NOMEM = 5,
       ST_INTERRUPT = 6 };

/* Seconds between two checks for a pending signal (Ctrl-C) during the search. */
#define SIGNAL_CHECK_SECONDS 0.05

typedef struct { int idx; i64 old; } Undo; /* idx >= 0: buffer min offset; idx < 0: floor of section -idx-1 */
typedef struct { i64 off; int rank; int b; } Cand;

/* Floor-profile memo; may outlive one search() call (a capsule from memo_new()), so that probes
   of the same problem at decreasing capacities, or again at one capacity with a longer time, reuse
   the failures already proved. A failure proved at capacity K holds at every capacity <= K, so
   each entry keeps the capacity it was proved at and is used only at capacities <= it. */
typedef struct Memo {
    i64 memo_bytes;               /* cap on storage (bytes) */
    unsigned long long fp;        /* fingerprint of the problem the entries belong to */
    i64 *mkeys; size_t nmkeys, capmkeys;      /* key pool: [s0, s1, k, (b, minoff, rank) x k] */
    size_t *mslot; unsigned long long *mhash; /* open addressing: pool offset + 1 (0 = empty), hash */
    i64 *mlo; int *mlr; i64 *mcapv;           /* stored constraint and capacity per slot */
    size_t mcap, mcount;
    int mfull;
} Memo;

static void memo_clear(Memo *m) {
    free(m->mkeys); free(m->mslot); free(m->mhash); free(m->mlo); free(m->mlr); free(m->mcapv);
    m->mkeys = NULL; m->mslot = NULL; m->mhash = NULL; m->mlo = NULL; m->mlr = NULL; m->mcapv = NULL;
    m->nmkeys = m->capmkeys = m->mcap = m->mcount = 0;
    m->mfull = 0;
}

typedef struct {
    int n, ns;
    i64 *size, *align;
    int *slo, *shi;
    i64 cap;
    int canonical, inference, dynamic, dominance, decompose;
    int *adj_start, *adj;         /* time-interference lists (CSR) */
    int *sec_start, *sec_mem;     /* members of each section (CSR) */
    i64 *off, *minoff, *floor_, *total, *sol;
    int *cuts;                    /* unplaced buffers crossing boundary k | k+1 */
    int *rank;                    /* current static rank (recomputed for every subproblem) */
    i64 *width;                   /* lifetime length in steps */
    const char *heur;             /* current preordering string */
    unsigned long long seed;      /* for the pseudo-random key 'R' */
    int *mark; int epoch; int *affected;
    int *twin;                    /* previous identical buffer (same size, alignment, lifetime) or -1 */
    Undo *undo; size_t nundo, capundo;
    i64 nodes, budget, node_limit;
    double deadline;              /* now_s() at which the call stops: set at entry, so the set-up
                                     (interference lists, twins) counts against time_limit */
    i64 work, next_tick;          /* work units done, and at which to look at the clock again */
    PyThreadState *tstate;        /* saved while the search runs without the GIL */
    double next_signal_check;     /* now_s() at which to look for a pending signal again */
    /* floor-profile memo */
    int memo;
    struct Memo *M;               /* the call's own memo, or one kept across calls (capsule) */
    i64 mhits, mstored;
    i64 *kbuf;                    /* scratch key of the current node */
    int *kmark, *kat; int kepoch; /* buffer stamps and positions for building keys */
} Ctx;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int push_undo(Ctx *c, int idx, i64 old) {
    if (c->nundo == c->capundo) {
        size_t nc = c->capundo ? 2 * c->capundo : 1024;
        Undo *u = (Undo *)realloc(c->undo, nc * sizeof(Undo));
        if (!u) return -1;
        c->undo = u; c->capundo = nc;
    }
    c->undo[c->nundo].idx = idx;
    c->undo[c->nundo].old = old;
    c->nundo++;
    return 0;
}

/* x + (a - r) <= x + a - 1 <= W: no intermediate above the result. */
static i64 round_up(i64 x, i64 a) { i64 r = x % a; return r ? x + (a - r) : x; }

/* w * z for w, z >= 0, saturated at 2^63 - 1 (a ranking key only). */
static i64 mul_sat(i64 w, i64 z) { return (w > 0 && z > LLONG_MAX / w) ? LLONG_MAX : w * z; }

/* Place buffer b at offset o; returns -1 on out-of-memory. Undo entries are pushed above the
   caller's saved stack height. */
static int place(Ctx *c, int b, i64 o) {
    i64 h = o + c->size[b];
    int naff = 0;
    c->off[b] = o;
    c->sol[b] = o;
    if (++c->epoch == 0x7fffffff) { memset(c->mark, 0, sizeof(int) * (size_t)c->ns); c->epoch = 1; }
    for (int k = c->adj_start[b]; k < c->adj_start[b + 1]; k++) {
        int j = c->adj[k];
        if (c->off[j] >= 0 || c->minoff[j] >= h) continue;
        if (push_undo(c, j, c->minoff[j])) return -1;
        c->minoff[j] = round_up(h, c->align[j]);
        if (c->inference) {
            for (int s = c->slo[j]; s < c->shi[j]; s++)
                if (c->mark[s] != c->epoch) { c->mark[s] = c->epoch; c->affected[naff++] = s; }
        }
    }
    for (int s = c->slo[b]; s < c->shi[b]; s++) {
        if (c->floor_[s] < h) {
            if (push_undo(c, -s - 1, c->floor_[s])) return -1;
            c->floor_[s] = h;
        }
        c->total[s] -= c->size[b];
    }
    for (int a = 0; a < naff; a++) {
        int s = c->affected[a];
        i64 m = -1;
        for (int k = c->sec_start[s]; k < c->sec_start[s + 1]; k++) {
            int j = c->sec_mem[k];
            if (c->off[j] < 0 && (m < 0 || c->minoff[j] < m)) m = c->minoff[j];
        }
        if (m > c->floor_[s]) {
            if (push_undo(c, -s - 1, c->floor_[s])) return -1;
            c->floor_[s] = m;
        }
    }
    return 0;
}

static void unplace(Ctx *c, int b, size_t saved) {
    while (c->nundo > saved) {
        Undo *u = &c->undo[--c->nundo];
        if (u->idx >= 0) c->minoff[u->idx] = u->old;
        else c->floor_[-u->idx - 1] = u->old;
    }
    for (int s = c->slo[b]; s < c->shi[b]; s++) c->total[s] += c->size[b];
    c->off[b] = -1;
}

/* Section inference over sections [s0, s1) after a placement at offset o. */
static int check(const Ctx *c, int s0, int s1, i64 o) {
    for (int s = s0; s < s1; s++) {
        i64 f = c->floor_[s];
        if (c->canonical && f < o && c->total[s] > 0) f = o;
        if (c->inference) f += c->total[s];
        if (f > c->cap) return 0;
    }
    return 1;
}

/* ---- floor-profile memo --------------------------------------------------------------------- */

static unsigned long long mix64(unsigned long long x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Build the key of the node (unplaced members of cand[0..nc), listed by buffer index) into
   c->kbuf; returns its length in i64 words and its hash. O(n) with a stamp per buffer. */
static size_t memo_key(Ctx *c, const Cand *cand, int nc, int s0, int s1, unsigned long long *hash) {
    i64 *k = c->kbuf;
    if (++c->kepoch == 0x7fffffff) { memset(c->kmark, 0, sizeof(int) * (size_t)c->n); c->kepoch = 1; }
    for (int i = 0; i < nc; i++) { c->kmark[cand[i].b] = c->kepoch; c->kat[cand[i].b] = i; }
    k[0] = s0; k[1] = s1; k[2] = nc;
    size_t w = 3;
    for (int b = 0; b < c->n; b++) {
        if (c->kmark[b] != c->kepoch) continue;
        const Cand *x = &cand[c->kat[b]];
        k[w++] = b; k[w++] = x->off; k[w++] = x->rank;
    }
    size_t len = 3 + 3 * (size_t)nc;
    unsigned long long h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < len; i++) h = mix64(h ^ (unsigned long long)k[i]) + i;
    *hash = h ? h : 1;
    return len;
}

/* Slot of the key (found or the empty slot where it would go); the table is never full. */
static size_t memo_find(const Ctx *c, unsigned long long h, size_t len, int *found) {
    const Memo *m = c->M;
    size_t mask = m->mcap - 1, i = (size_t)h & mask;
    for (;;) {
        if (!m->mslot[i]) { *found = 0; return i; }
        if (m->mhash[i] == h) {
            const i64 *e = m->mkeys + (m->mslot[i] - 1);
            if ((size_t)(3 + 3 * e[2]) == len && !memcmp(e, c->kbuf, len * sizeof(i64))) {
                *found = 1;
                return i;
            }
        }
        i = (i + 1) & mask;
    }
}

static int memo_grow(Memo *m) {
    size_t nc = m->mcap ? 2 * m->mcap : 4096;
    size_t *slot = (size_t *)calloc(nc, sizeof(size_t));
    unsigned long long *hash = (unsigned long long *)malloc(nc * sizeof(unsigned long long));
    i64 *lo = (i64 *)malloc(nc * sizeof(i64));
    int *lr = (int *)malloc(nc * sizeof(int));
    i64 *cv = (i64 *)malloc(nc * sizeof(i64));
    if (!slot || !hash || !lo || !lr || !cv) { free(slot); free(hash); free(lo); free(lr); free(cv); return -1; }
    for (size_t i = 0; i < m->mcap; i++) {
        if (!m->mslot[i]) continue;
        size_t j = (size_t)m->mhash[i] & (nc - 1);
        while (slot[j]) j = (j + 1) & (nc - 1);
        slot[j] = m->mslot[i]; hash[j] = m->mhash[i]; lo[j] = m->mlo[i]; lr[j] = m->mlr[i];
        cv[j] = m->mcapv[i];
    }
    free(m->mslot); free(m->mhash); free(m->mlo); free(m->mlr); free(m->mcapv);
    m->mslot = slot; m->mhash = hash; m->mlo = lo; m->mlr = lr; m->mcapv = cv; m->mcap = nc;
    return 0;
}

/* Record "no completion from this key under constraint (lo, lr) at capacity c->cap". Out of
   memory or over the byte cap: the entry is simply not stored (the memo is an accelerator only).
   An existing entry is replaced when the new fact covers more: a larger capacity, or the same
   capacity with a smaller constraint. */
static void memo_store(Ctx *c, unsigned long long h, size_t len, i64 lo, int lr) {
    Memo *m = c->M;
    int found;
    if (!m->mcap) { if (m->mfull || memo_grow(m)) { m->mfull = 1; return; } }
    size_t i = memo_find(c, h, len, &found);
    if (found) {
        if (c->cap > m->mcapv[i] ||
            (c->cap == m->mcapv[i] && (lo < m->mlo[i] || (lo == m->mlo[i] && lr < m->mlr[i])))) {
            m->mlo[i] = lo; m->mlr[i] = lr; m->mcapv[i] = c->cap;
        }
        return;
    }
    if (m->mfull) return;
    size_t bytes = (m->nmkeys + len) * sizeof(i64) +
                   m->mcap * (sizeof(size_t) + sizeof(unsigned long long) + 2 * sizeof(i64) + sizeof(int));
    if ((i64)bytes > m->memo_bytes) {
        /* Bounded memory: at the cap the memo is emptied and starts again (recent failures are
           the likeliest to recur); a single key above the cap is not stored. */
        if (!m->mcount) return;
        memo_clear(m);
        if (memo_grow(m)) { m->mfull = 1; return; }
        i = memo_find(c, h, len, &found);
    }
    if (m->nmkeys + len > m->capmkeys) {
        size_t nc = m->capmkeys ? 2 * m->capmkeys : 1 << 16;
        while (nc < m->nmkeys + len) nc *= 2;
        i64 *q = (i64 *)realloc(m->mkeys, nc * sizeof(i64));
        if (!q) { m->mfull = 1; return; }
        m->mkeys = q; m->capmkeys = nc;
    }
    memcpy(m->mkeys + m->nmkeys, c->kbuf, len * sizeof(i64));
    m->mslot[i] = m->nmkeys + 1; m->mhash[i] = h; m->mlo[i] = lo; m->mlr[i] = lr; m->mcapv[i] = c->cap;
    m->nmkeys += len;
    m->mcount++; c->mstored++;
    if (2 * m->mcount > m->mcap && memo_grow(m)) m->mfull = 1;
}

static int cmp_dynamic(const void *pa, const void *pb) {
    const Cand *a = (const Cand *)pa, *b = (const Cand *)pb;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int cmp_static(const void *pa, const void *pb) {
    const Cand *a = (const Cand *)pa, *b = (const Cand *)pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int solve_range(Ctx *c, const int *list, int nl, int s0, int s1);

/* Work units between two looks at the clock: a node costs about its list length, a candidate
   its section count, so one look per TICK_WORK units keeps the clock cheap on small nodes and
   looks at every node of a large one (a node of 18,692 candidates took 27 ms, and the clock was
   read every 256 nodes: 7 s past a 1 s limit). */
#define TICK_WORK 4096

/* Count `work` units; every TICK_WORK units read the clock: ST_TIMEOUT past the deadline,
   ST_INTERRUPT when a signal handler raised (Ctrl-C), else 0. */
static int tick(Ctx *c, i64 work) {
    c->work += work;
    if (c->work < c->next_tick) return 0;
    c->next_tick = c->work + TICK_WORK;
    double t = now_s();
    if (t > c->deadline) return ST_TIMEOUT;
    /* Ctrl-C: the search runs without the GIL; take it back briefly (every
       SIGNAL_CHECK_SECONDS) to run the signal handlers. A handler that raises (SIGINT:
       KeyboardInterrupt) leaves its exception set and the search unwinds. */
    if (c->tstate && t >= c->next_signal_check) {
        int r;
        PyEval_RestoreThread(c->tstate);
        r = PyErr_CheckSignals();
        c->tstate = PyEval_SaveThread();
        c->next_signal_check = t + SIGNAL_CHECK_SECONDS;
        if (r) return ST_INTERRUPT;
    }
    return 0;
}

static int dfs(Ctx *c, const int *list, int nl, int s0, int s1, i64 last_off, int last_rank) {
    if (c->budget-- <= 0) return ST_ABORT;
    c->nodes++;
    if (c->node_limit > 0 && c->nodes > c->node_limit) return ST_NODELIMIT;
    {
        int tt = tick(c, (i64)nl + 16);
        if (tt) return tt;
    }
    Cand *cand = (Cand *)malloc(sizeof(Cand) * (size_t)(nl ? nl : 1));
    int *sub = (int *)malloc(sizeof(int) * (size_t)(nl ? nl : 1));
    if (!cand || !sub) { free(cand); free(sub); return ST_NOMEM; }
    int nc = 0;
    i64 min_height = -1;
    for (int i = 0; i < nl; i++) {
        int b = list[i];
        if (c->off[b] >= 0) continue;
        cand[nc].off = c->minoff[b];
        cand[nc].rank = c->rank[b];
        cand[nc].b = b;
        i64 h = c->minoff[b] + c->size[b];
        if (min_height < 0 || h < min_height) min_height = h;
        nc++;
    }
    if (nc == 0) { free(cand); free(sub); return ST_FOUND; }
    unsigned long long mh = 0;
    size_t mlen = 0;
    /* Without the canonical rule there is no constraint: every arrival is "(0, -1)". */
    i64 key_lo = c->canonical ? last_off : 0;
    int key_lr = c->canonical ? last_rank : -1;
    if (c->memo) {
        int found;
        mlen = memo_key(c, cand, nc, s0, s1, &mh);
        if (c->M->mcap) {
            const Memo *m = c->M;
            size_t slot = memo_find(c, mh, mlen, &found);
            if (found && m->mcapv[slot] >= c->cap &&
                (m->mlo[slot] < key_lo || (m->mlo[slot] == key_lo && m->mlr[slot] <= key_lr))) {
                c->mhits++;
                free(cand); free(sub);
                return ST_NOTFOUND;
            }
        }
    }
    qsort(cand, (size_t)nc, sizeof(Cand), c->dynamic ? cmp_dynamic : cmp_static);
    for (int i = 0; i < nc; i++) sub[i] = cand[i].b;
    /* Placing any buffer at offset o leaves every section s that still has unplaced bytes with
       height >= o + total[s] (its floor rises to o + size in the buffer's own sections; with
       canonical placements nothing goes below o elsewhere), so o + max_total > capacity fails. */
    i64 max_total = 0;
    if (c->canonical && c->inference)
        for (int s = s0; s < s1; s++) if (c->total[s] > max_total) max_total = c->total[s];
    int status = ST_NOTFOUND;
    for (int i = 0; i < nc; i++) {
        i64 o = cand[i].off;
        int r = cand[i].rank, b = cand[i].b;
        if (c->canonical && (o < last_off || (o == last_off && r < last_rank))) continue;
        if (c->dominance && o >= min_height) { if (c->dynamic) break; continue; }
        /* Identical buffers are interchangeable: place them in index order only. */
        if (c->dominance && c->twin[b] >= 0 && c->off[c->twin[b]] < 0) continue;
        if (c->canonical && c->inference && o + max_total > c->cap) { if (c->dynamic) break; continue; }
        if (o + c->size[b] > c->cap) continue;
        {
            int tt = tick(c, (i64)(c->shi[b] - c->slo[b]) + 1);
            if (tt) { status = tt; break; }
        }
        size_t saved = c->nundo;
        if (place(c, b, o)) { unplace(c, b, saved); status = ST_NOMEM; break; }
        int st = ST_NOTFOUND;
        if (check(c, s0, s1, o)) {
            if (c->decompose) {
                int split = 0;
                for (int k = c->slo[b]; k + 1 < c->shi[b]; k++)
                    if (--c->cuts[k] == 0 && k >= s0 && k + 1 < s1) split = 1;
                if (split) st = solve_range(c, sub, nc, s0, s1);
                else st = dfs(c, sub, nc, s0, s1, o, r);
                for (int k = c->slo[b]; k + 1 < c->shi[b]; k++) c->cuts[k]++;
            } else {
                st = dfs(c, sub, nc, s0, s1, o, r);
            }
        }
        unplace(c, b, saved);
        if (st != ST_NOTFOUND) { status = st; break; }
    }
    /* dfs() may be re-entered below and overwrite kbuf: rebuild the key before storing. */
    if (c->memo && status == ST_NOTFOUND) {
        mlen = memo_key(c, cand, nc, s0, s1, &mh);
        memo_store(c, mh, mlen, key_lo, key_lr);
    }
    free(cand);
    free(sub);
    return status;
}

typedef struct { i64 key[8]; int b; } KeyRow;

static int cmp_keyrow(const void *pa, const void *pb) {
    const KeyRow *a = (const KeyRow *)pa, *b = (const KeyRow *)pb;
    for (int k = 0; k < 8; k++)
        if (a->key[k] != b->key[k]) return a->key[k] > b->key[k] ? -1 : 1; /* descending */
    return (a->b > b->b) - (a->b < b->b);
}

/* Static rank of the buffers of one subproblem under the current preordering string, using the
   current unplaced section totals (so a subproblem is ranked by what is left of it). */
static int rank_part(Ctx *c, const int *part, int np) {
    KeyRow *rows = (KeyRow *)malloc(sizeof(KeyRow) * (size_t)(np ? np : 1));
    if (!rows) return -1;
    for (int i = 0; i < np; i++) {
        int b = part[i];
        memset(rows[i].key, 0, sizeof rows[i].key);
        rows[i].b = b;
        for (int k = 0; k < 8 && c->heur[k]; k++) {
            i64 v = 0;
            switch (c->heur[k]) {
            case 'T': for (int s = c->slo[b]; s < c->shi[b]; s++) if (c->total[s] > v) v = c->total[s]; break;
            case 'W': v = c->width[b]; break;
            case 'A': v = mul_sat(c->width[b], c->size[b]); break;
            case 'C': v = c->shi[b] - c->slo[b]; break;
            case 'Z': v = c->size[b]; break;
            case 'R': v = (i64)(mix64(c->seed * 0x9e3779b97f4a7c15ULL + (unsigned long long)b + 1) >> 1); break;
            default: v = 0;
            }
            rows[i].key[k] = v;
        }
    }
    qsort(rows, (size_t)np, sizeof(KeyRow), cmp_keyrow);
    for (int i = 0; i < np; i++) c->rank[rows[i].b] = i;
    free(rows);
    return 0;
}

/* Split sections [s0, s1) at boundaries no unplaced buffer crosses and search each part. */
static int solve_range(Ctx *c, const int *list, int nl, int s0, int s1) {
    int *part = (int *)malloc(sizeof(int) * (size_t)(nl ? nl : 1));
    int *saved_rank = (int *)malloc(sizeof(int) * (size_t)(nl ? nl : 1));
    if (!part || !saved_rank) { free(part); free(saved_rank); return ST_NOMEM; }
    for (int i = 0; i < nl; i++) saved_rank[i] = c->rank[list[i]];
    int a = s0, status = ST_FOUND;
    while (a < s1 && status == ST_FOUND) {
        int e = a + 1;
        if (c->decompose) { while (e < s1 && c->cuts[e - 1] > 0) e++; }
        else e = s1;
        int np = 0;
        for (int i = 0; i < nl; i++) {
            int b = list[i];
            if (c->off[b] < 0 && c->slo[b] < e && a < c->shi[b]) part[np++] = b;
        }
        if (np) {
            if (rank_part(c, part, np)) { status = ST_NOMEM; break; }
            status = dfs(c, part, np, a, e, 0, -1);
        }
        a = e;
    }
    for (int i = 0; i < nl; i++) c->rank[list[i]] = saved_rank[i];
    free(part);
    free(saved_rank);
    return status;
}

static int get_i64_list(PyObject *seq, Py_ssize_t n, i64 *out, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items", what, n);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1 && PyErr_Occurred()) { Py_DECREF(fast); return -1; }
    }
    Py_DECREF(fast);
    return 0;
}

static const char *status_name(int st) {
    switch (st) {
    case ST_FOUND: return "found";
    case ST_NOTFOUND: return "infeasible";
    case ST_TIMEOUT: return "timeout";
    case ST_NODELIMIT: return "node_limit";
    default: return "error";
    }
}

PyDoc_STRVAR(search_doc,
"search(sizes, aligns, slo, shi, widths, n_sections, capacity, preorderings, *, time_limit,\n"
"       node_limit=0, memo_bytes=0, memo=None, canonical_only=True, section_inference=True,\n"
"       dynamic_ordering=True, check_dominance=True, decompose=True, memo_floor_profiles=True,\n"
"       seed=0)\n"
"       -> (status, offsets or None, nodes, attempts, memo_hits, memo_entries)\n\n"
"Complete search for the fixed-capacity decision problem (see planners.exact_search).\n"
"sizes, aligns: bytes (> 0); slo, shi: half-open section range of each buffer; widths: lifetime\n"
"lengths (steps); n_sections: number of sections; capacity: bytes; preorderings: strings of keys\n"
"T, W, A, C, Z, R (see planners.exact_search) tried round robin with doubling node budgets.\n"
"Keyword-only: time_limit in seconds (> 0, required); node_limit <= 0 means none; memo_bytes\n"
"caps the memo's storage; memo: a memo_new() object kept across calls (its own cap then\n"
"applies); the six switches are the techniques of planners.exact_search; seed: the\n"
"pseudo-random key R (an unsigned 64-bit integer).\n"
"status is 'found', 'infeasible', 'timeout' or 'node_limit'. A signal whose handler raises\n"
"(Ctrl-C: KeyboardInterrupt) stops the search within about 0.05 s and the exception propagates.");

static PyObject *py_search(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"sizes", "aligns", "slo", "shi", "widths", "n_sections", "capacity",
                             "preorderings", "time_limit", "node_limit", "memo_bytes", "memo",
                             "canonical_only", "section_inference", "dynamic_ordering",
                             "check_dominance", "decompose", "memo_floor_profiles", "seed", NULL};
    PyObject *py_size, *py_align, *py_slo, *py_shi, *py_width, *py_ranks, *py_cap;
    int ns, cap_over = 0;
    PyObject *py_memo = Py_None;
    long long cap, node_limit = 0, memo_bytes = 0;
    double time_limit = -1.0;
    int flags[6] = {1, 1, 1, 1, 1, 1};
    unsigned long long seed = 0;
    Memo local_memo;
    memset(&local_memo, 0, sizeof local_memo);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOiOO|$dLLOppppppK", kwlist, &py_size,
                                     &py_align, &py_slo, &py_shi, &py_width, &ns, &py_cap,
                                     &py_ranks, &time_limit, &node_limit, &memo_bytes, &py_memo,
                                     &flags[0], &flags[1], &flags[2], &flags[3], &flags[4],
                                     &flags[5], &seed))
        return NULL;
    if (!(time_limit > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "time_limit: required keyword, seconds > 0");
        return NULL;
    }
    if (ns < 0) { PyErr_SetString(PyExc_ValueError, "n_sections: must be >= 0"); return NULL; }
    /* A capacity above 2^63 - 1 is equivalent to 2^63 - 1: no top exceeds W <= 2^63 - 1. */
    cap = PyLong_AsLongLongAndOverflow(py_cap, &cap_over);
    if (cap == -1 && PyErr_Occurred()) return NULL;
    if (cap_over > 0) cap = LLONG_MAX;
    if (cap_over < 0 || cap < 0) { PyErr_SetString(PyExc_ValueError, "capacity: must be >= 0 bytes"); return NULL; }
    Py_ssize_t n = PySequence_Size(py_size);
    Py_ssize_t nr = PySequence_Size(py_ranks);
    if (n < 0 || nr < 0) return NULL;
    if (nr < 1) { PyErr_SetString(PyExc_ValueError, "preorderings: need at least one"); return NULL; }
    Ctx c;
    memset(&c, 0, sizeof c);
    /* time_limit counts from here: the set-up below (O(n + E) interference lists for E
       interfering pairs) is part of the call, and looks at the clock as it goes */
    c.deadline = now_s() + time_limit;
    c.next_tick = TICK_WORK;
    c.n = (int)n; c.ns = ns; c.cap = cap; c.seed = seed;
    c.canonical = flags[0]; c.inference = flags[1]; c.dynamic = flags[2];
    c.dominance = flags[3]; c.decompose = flags[4];
    if (py_memo != Py_None) {
        c.M = (Memo *)PyCapsule_GetPointer(py_memo, MEMO_CAPSULE);
        if (!c.M) return NULL;
    } else {
        c.M = &local_memo;
        local_memo.memo_bytes = memo_bytes;
    }
    c.memo = flags[5] && c.M->memo_bytes > 0;
    size_t N = (size_t)(n ? n : 1), S = (size_t)(ns ? ns : 1);
    i64 *tmp = (i64 *)malloc(sizeof(i64) * N * 2);
    c.size = (i64 *)malloc(sizeof(i64) * N);
    c.align = (i64 *)malloc(sizeof(i64) * N);
    c.slo = (int *)malloc(sizeof(int) * N);
    c.shi = (int *)malloc(sizeof(int) * N);
    c.off = (i64 *)malloc(sizeof(i64) * N);
    c.minoff = (i64 *)calloc(N, sizeof(i64));
    c.sol = (i64 *)malloc(sizeof(i64) * N);
    c.floor_ = (i64 *)calloc(S, sizeof(i64));
    c.total = (i64 *)calloc(S, sizeof(i64));
    c.cuts = (int *)calloc(S, sizeof(int));
    c.mark = (int *)calloc(S, sizeof(int));
    c.affected = (int *)malloc(sizeof(int) * S);
    c.sec_start = (int *)calloc(S + 1, sizeof(int));
    c.adj_start = (int *)calloc(N + 1, sizeof(int));
    char *heurs = (char *)calloc((size_t)nr * 9, 1);
    c.rank = (int *)calloc(N, sizeof(int));
    c.width = (i64 *)malloc(sizeof(i64) * N);
    c.twin = (int *)malloc(sizeof(int) * N);
    int *order = (int *)malloc(sizeof(int) * N);
    c.kbuf = (i64 *)malloc(sizeof(i64) * (3 + 3 * N));
    c.kmark = (int *)calloc(N, sizeof(int));
    c.kat = (int *)malloc(sizeof(int) * N);
    PyObject *result = NULL;
    int status = ST_NOMEM, attempts = 0;
    if (!tmp || !c.size || !c.align || !c.slo || !c.shi || !c.off || !c.minoff || !c.sol ||
        !c.floor_ || !c.total || !c.cuts || !c.mark || !c.affected || !c.sec_start ||
        !c.adj_start || !heurs || !c.rank || !c.width || !c.twin || !order || !c.kbuf || !c.kmark || !c.kat) { PyErr_NoMemory(); goto done; }
    if (get_i64_list(py_size, n, c.size, "sizes") || get_i64_list(py_align, n, c.align, "aligns"))
        goto done;
    if (get_i64_list(py_slo, n, tmp, "slo") || get_i64_list(py_shi, n, tmp + N, "shi")) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        c.slo[i] = (int)tmp[i]; c.shi[i] = (int)tmp[N + i];
        if (c.slo[i] < 0 || c.shi[i] > ns || c.shi[i] <= c.slo[i] || c.size[i] <= 0 || c.align[i] < 1) {
            PyErr_Format(PyExc_ValueError, "buffer %zd: bad size/alignment/section range", i);
            goto done;
        }
    }
    if (get_i64_list(py_width, n, c.width, "widths")) goto done;
    for (Py_ssize_t r = 0; r < nr; r++) {
        PyObject *item = PySequence_GetItem(py_ranks, r);
        if (!item) goto done;
        const char *h = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (!h || strlen(h) < 1 || strlen(h) > 8 || strspn(h, "TWACZR") != strlen(h)) {
            Py_DECREF(item);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "preordering %zd: 1-8 characters from 'TWACZR'", r);
            goto done;
        }
        memcpy(heurs + (size_t)r * 9, h, strlen(h));
        Py_DECREF(item);
    }
    free(tmp); tmp = NULL;

    /* Section members and unplaced totals. */
    for (int i = 0; i < c.n; i++) {
        for (int s = c.slo[i]; s < c.shi[i]; s++) { c.sec_start[s + 1]++; c.total[s] += c.size[i]; }
        if (tick(&c, (i64)(c.shi[i] - c.slo[i]) + 1)) { status = ST_TIMEOUT; goto finish; }
    }
    for (int s = 0; s < ns; s++) c.sec_start[s + 1] += c.sec_start[s];
    c.sec_mem = (int *)malloc(sizeof(int) * (size_t)(c.sec_start[ns] ? c.sec_start[ns] : 1));
    if (!c.sec_mem) { PyErr_NoMemory(); goto done; }
    {
        int *fill = c.cuts; /* reuse as a cursor, reset below */
        for (int s = 0; s < ns; s++) fill[s] = c.sec_start[s];
        for (int i = 0; i < c.n; i++)
            for (int s = c.slo[i]; s < c.shi[i]; s++) c.sec_mem[fill[s]++] = i;
        memset(c.cuts, 0, sizeof(int) * S);
    }
    if (now_s() > c.deadline) { status = ST_TIMEOUT; goto finish; }
    for (int i = 0; i < c.n; i++)
        for (int k = c.slo[i]; k + 1 < c.shi[i]; k++) c.cuts[k]++;
    /* Interference lists: sweep buffers sorted by first section (counting sort). */
    {
        int *cnt = (int *)calloc(S + 1, sizeof(int));
        if (!cnt) { PyErr_NoMemory(); goto done; }
        for (int i = 0; i < c.n; i++) cnt[c.slo[i] + 1]++;
        for (int s = 0; s < ns; s++) cnt[s + 1] += cnt[s];
        for (int i = 0; i < c.n; i++) order[cnt[c.slo[i]]++] = i;
        free(cnt);
        size_t npairs = 0, cappairs = 1024;
        int *pa = (int *)malloc(sizeof(int) * cappairs * 2);
        if (!pa) { PyErr_NoMemory(); goto done; }
        for (int x = 0; x < c.n; x++) {
            int i = order[x];
            for (int y = x + 1; y < c.n && c.slo[order[y]] < c.shi[i]; y++) {
                if ((npairs & 0xFFFF) == 0 && now_s() > c.deadline) {
                    free(pa); status = ST_TIMEOUT; goto finish;
                }
                if (npairs == cappairs) {
                    cappairs *= 2;
                    int *q = (int *)realloc(pa, sizeof(int) * cappairs * 2);
                    if (!q) { free(pa); PyErr_NoMemory(); goto done; }
                    pa = q;
                }
                pa[2 * npairs] = i; pa[2 * npairs + 1] = order[y]; npairs++;
            }
        }
        if (now_s() > c.deadline) { free(pa); status = ST_TIMEOUT; goto finish; }
        for (size_t p = 0; p < npairs; p++) {
            if ((p & 0xFFFF) == 0 && now_s() > c.deadline) { free(pa); status = ST_TIMEOUT; goto finish; }
            c.adj_start[pa[2 * p] + 1]++; c.adj_start[pa[2 * p + 1] + 1]++;
        }
        for (int i = 0; i < c.n; i++) c.adj_start[i + 1] += c.adj_start[i];
        c.adj = (int *)malloc(sizeof(int) * (npairs ? 2 * npairs : 1));
        if (!c.adj) { free(pa); PyErr_NoMemory(); goto done; }
        for (int i = 0; i < c.n; i++) order[i] = c.adj_start[i];
        for (size_t p = 0; p < npairs; p++) {
            if ((p & 0xFFFF) == 0 && now_s() > c.deadline) { free(pa); status = ST_TIMEOUT; goto finish; }
            int u = pa[2 * p], v = pa[2 * p + 1];
            c.adj[order[u]++] = v; c.adj[order[v]++] = u;
        }
        free(pa);
    }
    /* Twins: same size, alignment and section range, hence interchangeable in every layout
       (interference is decided by section ranges alone). Twins interfere, so the interference
       list of a buffer holds all its twins. */
    if (now_s() > c.deadline) { status = ST_TIMEOUT; goto finish; }
    for (int i = 0; i < c.n; i++) {
        if (tick(&c, (i64)(c.adj_start[i + 1] - c.adj_start[i]) + 1)) { status = ST_TIMEOUT; goto finish; }
        c.twin[i] = -1;
        for (int k = c.adj_start[i]; k < c.adj_start[i + 1]; k++) {
            int j = c.adj[k];
            if (j < i && j > c.twin[i] && c.size[j] == c.size[i] && c.align[j] == c.align[i] &&
                c.slo[j] == c.slo[i] && c.shi[j] == c.shi[i])
                c.twin[i] = j;
        }
    }
    for (int i = 0; i < c.n; i++) { c.off[i] = -1; c.sol[i] = -1; order[i] = i; }
    c.node_limit = node_limit;
    {
        /* A kept memo belongs to one problem: clear it when the problem differs. */
        unsigned long long fp = mix64((unsigned long long)c.n * 1000003ULL + (unsigned long long)ns);
        for (int i = 0; i < c.n; i++) {
            fp = mix64(fp ^ (unsigned long long)c.size[i]) + (unsigned long long)c.align[i];
            fp = mix64(fp ^ ((unsigned long long)c.slo[i] << 32 | (unsigned long long)(unsigned)c.shi[i]));
        }
        if (c.M->fp != fp) { memo_clear(c.M); c.M->fp = fp; }
    }

    if (now_s() > c.deadline) { status = ST_TIMEOUT; goto finish; }
    c.tstate = PyEval_SaveThread();
    c.next_signal_check = now_s() + SIGNAL_CHECK_SECONDS;
    if (nr == 1) {
        c.heur = heurs;
        c.budget = (i64)1 << 62;
        attempts = 1;
        status = solve_range(&c, order, c.n, 0, ns);
    } else {
        i64 limit = c.n > 0 ? c.n : 1;
        for (;;) {
            if (limit < ((i64)1 << 61)) limit *= 2; /* the deadline ends the loop long before */
            for (Py_ssize_t r = 0; r < nr; r++) {
                c.heur = heurs + (size_t)r * 9;
                c.budget = limit;
                attempts++;
                status = solve_range(&c, order, c.n, 0, ns);
                if (status != ST_ABORT) break;
            }
            if (status != ST_ABORT) break;
        }
    }
    PyEval_RestoreThread(c.tstate);
    c.tstate = NULL;
finish: /* here with the GIL held: after the search, or a set-up stopped by the deadline */

    if (status == ST_INTERRUPT) goto done; /* the handler's exception is set */
    if (status == ST_NOMEM) { PyErr_NoMemory(); goto done; }
    {
        PyObject *offs;
        if (status == ST_FOUND) {
            offs = PyList_New(n);
            if (!offs) goto done;
            for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(offs, i, PyLong_FromLongLong(c.sol[i]));
        } else {
            offs = Py_None; Py_INCREF(offs);
        }
        result = Py_BuildValue("(sNLiLL)", status_name(status), offs, (long long)c.nodes, attempts,
                               (long long)c.mhits, (long long)c.mstored);
    }
done:
    free(tmp); free(c.size); free(c.align); free(c.slo); free(c.shi); free(c.off); free(c.minoff);
    free(c.sol); free(c.floor_); free(c.total); free(c.cuts); free(c.mark); free(c.affected);
    free(c.sec_start); free(c.sec_mem); free(c.adj_start); free(c.adj); free(c.undo);
    free(heurs); free(c.rank); free(c.width); free(c.twin); free(order);
    free(c.kbuf); free(c.kmark); free(c.kat); memo_clear(&local_memo);
    return result;
}

static void memo_capsule_free(PyObject *cap) {
    Memo *m = (Memo *)PyCapsule_GetPointer(cap, MEMO_CAPSULE);
    if (m) { memo_clear(m); free(m); }
}

PyDoc_STRVAR(memo_new_doc,
"memo_new(memo_bytes) -> memo\n\n"
"A floor-profile memo that search() can keep across calls on the same problem (pass it as the\n"
"last argument): failures proved at capacity K are reused at capacities <= K. Cleared when used\n"
"with another problem; memo_bytes caps its storage.");

static PyObject *py_memo_new(PyObject *self, PyObject *args) {
    (void)self;
    long long bytes;
    if (!PyArg_ParseTuple(args, "L", &bytes)) return NULL;
    Memo *m = (Memo *)calloc(1, sizeof(Memo));
    if (!m) return PyErr_NoMemory();
    m->memo_bytes = bytes;
    PyObject *cap = PyCapsule_New(m, MEMO_CAPSULE, memo_capsule_free);
    if (!cap) free(m);
    return cap;
}

static PyMethodDef methods[] = {
    {"search", (PyCFunction)(void (*)(void))py_search, METH_VARARGS | METH_KEYWORDS, search_doc},
    {"memo_new", py_memo_new, METH_VARARGS, memo_new_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_exact_search",
    "Compiled core of planners.exact_search (canonical complete search, MiniMalloc-style).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__exact_search(void) { return PyModule_Create(&module); }
