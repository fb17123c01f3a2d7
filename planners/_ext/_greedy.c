/*
 * _greedy: the compiled placement core of planners.greedy (C99, CPython extension).
 *
 * Input: n buffers with half-open lifetimes [start, end) in schedule steps, sizes and alignments
 * in bytes, a placement order (a permutation of 0..n-1, first placed first) and a fit rule. Each
 * buffer, in order, gets an offset among the address ranges [offset, offset + size) of its
 * *placed neighbours*: the buffers already placed, of non-zero size, whose lifetimes intersect its
 * own (a.start < b.end and b.start < a.end):
 *
 *   first fit: the lowest multiple of the alignment x such that [x, x + size) misses every
 *              placed neighbour;
 *   best fit:  the smallest maximal gap [c, o) between placed neighbours (by length o - c, ties to
 *              the lowest) whose aligned start round_up(c) still holds the buffer below o; else
 *              the aligned round-up of the highest placed neighbour top.
 *
 * Zero-size buffers take no space: offset 0, never a neighbour. These are exactly the semantics of
 * planners.greedy._first_fit_scan / _best_fit_scan (the Python reference engine), and the scans
 * below are the same loops over the neighbours sorted by offset, so both engines give identical
 * offsets (tests/test_greedy_engine.py checks it on random problems).
 *
 * Finding the placed neighbours: a static centred interval tree over time (the role of XLA's
 * BufferIntervalTree). Its nodes are a minimum set of steps that stabs every lifetime, as a
 * balanced binary search tree; a buffer is stored at the highest node whose step lies in its
 * lifetime. Every buffer in the left subtree of a node with step p ends at or before p, every
 * buffer in the right subtree starts after p. So the buffers live with a query [s, e) are: at the
 * nodes with s <= p < e (a contiguous run in step order) all members; at the nodes with p < s,
 * which all lie on the search path of s, the members ending after s (read in decreasing end
 * order up to the first that does not); at the nodes with p >= e, all on the search path of e,
 * the members starting before e. A query therefore costs O(log n + d) for d buffers of non-zero
 * size live with the buffer (placed or not), and its k placed neighbours are then sorted by
 * offset (below 256 of them one counting pass on the top bits and an insertion sort, else an
 * LSD radix sort: one O(k) pass per 8-bit digit in which the offsets differ). In total O(n log n + E) time for E interfering pairs, never a pass over all placed
 * buffers, and O(n) memory (at most about 140 bytes per buffer), no edge list.
 *
 * Range: planners.model admits only problems whose worst-case arena
 * W = sum(round_up(size, align) + align - 1) is <= 2^63 - 1, and this module re-checks it (it
 * refuses inputs beyond it with ValueError). Every offset is 0, the round-up of a placed
 * neighbour's top, or the round-up of a gap start below a placed offset; by induction over the
 * chain of placed buffers below it every top, round-up and "x + size" formed here is <= W, so no
 * i64 arithmetic overflows. The round-up has no intermediate above its result, and a power-of-two
 * alignment uses a mask instead of a division.
 *
 * The placement loop runs without the GIL (the inputs are held as buffer views), so several
 * placements can run in parallel threads (planners.choose_best does).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "int64_view.h"

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#define ALWAYS_INLINE __attribute__((always_inline))
#else
#define ALWAYS_INLINE
#define PREFETCH(p) ((void)0)
#endif

typedef long long i64;

/* A placed neighbour's address range [o, t); also a (key, index) pair while building the tree. */
typedef struct { i64 o, t; } Seg;

enum { FIT_FIRST = 0, FIT_BEST = 1 };

/* Smallest multiple of a >= x, for 0 <= x and a >= 1; x + (a - r) <= x + a - 1 and no
   intermediate exceeds the result. */
static inline i64 round_up(i64 x, i64 a) {
    i64 r = (a & (a - 1)) == 0 ? (x & (a - 1)) : x % a;
    return r ? x + (a - r) : x;
}

/* ---- sorting (key, payload) pairs by key: LSD radix sort, insertion sort when small ---- */
typedef unsigned long long u64;

/* Sorts a[0..n) by the key (u64)(a[q].o ^ flip) ascending (flip = 2^63 orders signed keys;
   stable). Below 24 keys an insertion sort; below 256 one counting pass on the top bits of
   (key - min) and an insertion sort; else LSD radix digits of 8 bits, only over the bits in which
   the keys differ (key - min). Returns the array holding the result: a or tmp (length >= n). */
static Seg *sort_by_key(Seg *a, Seg *tmp, i64 n, u64 flip) {
    if (n < 24) {
        for (i64 q = 1; q < n; q++) {
            Seg v = a[q];
            u64 kv = (u64)v.o ^ flip;
            i64 j = q - 1;
            while (j >= 0 && ((u64)a[j].o ^ flip) > kv) { a[j + 1] = a[j]; j--; }
            a[j + 1] = v;
        }
        return a;
    }
    u64 lo = ~(u64)0, hi = 0;
    for (i64 q = 0; q < n; q++) {
        u64 key = (u64)a[q].o ^ flip;
        if (key < lo) lo = key;
        if (key > hi) hi = key;
    }
    if (n < 256) {
        /* One stable counting pass on the top bits of (key - lo), into at least 2n buckets, then
           an insertion sort of the nearly sorted result (about one move per key when the keys
           are spread, at most n^2 / 2 < 2^15 when they cluster). */
        int bits = 1, rbits = 0;
        while ((1 << bits) < 2 * n) bits++;
        for (u64 r = hi - lo; r; r >>= 1) rbits++;
        const int sh = rbits > bits ? rbits - bits : 0;
        unsigned cnt[513];
        memset(cnt, 0, sizeof(unsigned) * (size_t)((1 << bits) + 1));
        for (i64 q = 0; q < n; q++) cnt[((((u64)a[q].o ^ flip) - lo) >> sh) + 1]++;
        for (int b = 1; b <= (1 << bits); b++) cnt[b] += cnt[b - 1];
        for (i64 q = 0; q < n; q++) tmp[cnt[(((u64)a[q].o ^ flip) - lo) >> sh]++] = a[q];
        for (i64 q = 1; q < n; q++) {
            Seg v = tmp[q];
            u64 kv = (u64)v.o ^ flip;
            i64 j = q - 1;
            while (j >= 0 && ((u64)tmp[j].o ^ flip) > kv) { tmp[j + 1] = tmp[j]; j--; }
            tmp[j + 1] = v;
        }
        return tmp;
    }
    const int w = 8, nbuck = 1 << w;
    const u64 mask = (u64)nbuck - 1;
    int nd = 0;
    for (u64 r = hi - lo; r; r >>= w) nd++;
    unsigned cnt[16][256];
    memset(cnt, 0, sizeof(cnt[0]) * (size_t)nd);
    for (i64 q = 0; q < n; q++) {
        u64 key = ((u64)a[q].o ^ flip) - lo;
        for (int d = 0; d < nd; d++, key >>= w) cnt[d][key & mask]++;
    }
    Seg *src = a, *dst = tmp;
    for (int d = 0; d < nd; d++) {
        unsigned *c = cnt[d], sum = 0;
        for (int b = 0; b < nbuck; b++) { unsigned t = c[b]; c[b] = sum; sum += t; }
        const int sh = w * d;
        for (i64 q = 0; q < n; q++) dst[c[(((u64)src[q].o ^ flip) - lo) >> sh & mask]++] = src[q];
        Seg *t = src; src = dst; dst = t;
    }
    return src;
}

/* ---- the two scans (same loops as planners.greedy._first_fit_scan / _best_fit_scan) ----
   seg is sorted by offset; the order among equal offsets changes neither result. */
static i64 first_fit_scan(const Seg *seg, i64 k, i64 s, i64 a) {
    i64 c = 0;
    for (i64 q = 0; q < k; q++) {
        if (c + s <= seg[q].o) break;
        if (seg[q].t > c) c = round_up(seg[q].t, a);
    }
    return c;
}

static i64 best_fit_scan(const Seg *seg, i64 k, i64 s, i64 a) {
    i64 best_len = -1, best = 0, c = 0; /* c: highest top so far; the gap [c, o) lies below o */
    for (i64 q = 0; q < k; q++) {
        i64 o = seg[q].o;
        if (o > c) {
            i64 x = round_up(c, a);
            if (x + s <= o && (best_len < 0 || o - c < best_len)) { best_len = o - c; best = x; }
        }
        if (seg[q].t > c) c = seg[q].t;
    }
    return best_len < 0 ? round_up(c, a) : best;
}

/* ---- the static centred interval tree ----
   Its nodes are a minimum set of steps stabbing every lifetime (chosen greedily in end order,
   each the last step of the first lifetime not yet stabbed), point[0] < ... < point[m-1], as the
   implicit balanced tree on index ranges (the node of [lo, hi) is lo + (hi - lo) / 2). A buffer's
   home is the first node on the root path whose step lies in its lifetime. Members of a node are
   stored twice, by increasing start and by decreasing end, each with a record of the buffer's
   address range once it is placed (t = 0 before: sizes are > 0), so a query reads them in
   sequence; a node keeps the smallest start and the largest end of its members, so a query looks
   at a member list only when it holds a live neighbour. */
typedef struct { i64 point, min_start, max_end; int b0, pad; } Node;
typedef struct { i64 key, o, t; } Rec; /* member key (start or end), address range [o, t) */

/* What the placement loop reads about the buffer placed at one position, gathered in blocks in
   placement order (independent loads, not one dependent miss after another). */
typedef struct { i64 qs, qe, s, a; int i, ps, pe, lo, hi, pad; } Query;

typedef struct {
    int n;
    const i64 *perm, *start, *end, *size, *align;
    i64 *out;
    int fit;
} Input;

enum { OK = 0, ERR_NOMEM = 1, BLOCK = 4096, AHEAD = 8 };

/* The placement proper: pure C, runs without the GIL. Returns OK or ERR_NOMEM. */
static int place_all(const Input *in) {
    const int n = in->n;
    const i64 *st = in->start, *en = in->end, *sz = in->size, *al = in->align;
    size_t N = (size_t)(n > 0 ? n : 1);
    int status = ERR_NOMEM;
    Seg *seg = (Seg *)malloc(sizeof(Seg) * N), *tmp = (Seg *)malloc(sizeof(Seg) * N);
    Rec *rec_s = (Rec *)malloc(sizeof(Rec) * N), *rec_e = (Rec *)malloc(sizeof(Rec) * N);
    int *home = (int *)malloc(sizeof(int) * N);
    int *lo_of = (int *)malloc(sizeof(int) * N), *hi_of = (int *)malloc(sizeof(int) * N);
    int *pos_s = (int *)malloc(sizeof(int) * N), *pos_e = (int *)malloc(sizeof(int) * N);
    Query *qb = (Query *)malloc(sizeof(Query) * BLOCK);
    Node *node = NULL;
    int *fill = NULL;
    if (!seg || !tmp || !rec_s || !rec_e || !home || !lo_of || !hi_of || !pos_s || !pos_e || !qb)
        goto done;
    const u64 flip = (u64)1 << 63;

    /* The non-zero-size buffers by end (kept in rec_s for the moment). */
    i64 nz = 0;
    for (int i = 0; i < n; i++)
        if (sz[i] > 0) { seg[nz].o = en[i]; seg[nz].t = i; nz++; }
    Seg *by_end = sort_by_key(seg, tmp, nz, flip);
    memcpy(rec_s, by_end, sizeof(Seg) * (size_t)nz);
    by_end = (Seg *)rec_s;
    /* Stabbing steps, greedily in end order: ascending, every lifetime holds one. */
    int m = 0;
    i64 last = 0;
    for (i64 q = 0; q < nz; q++) {
        int i = (int)by_end[q].t;
        if (m == 0 || last < st[i]) { last = en[i] - 1; m++; }
    }
    node = (Node *)calloc((size_t)(m > 0 ? m : 1) + 1, sizeof(Node));
    fill = (int *)malloc(sizeof(int) * (size_t)(m > 0 ? m : 1));
    if (!node || !fill) goto done;
    m = 0;
    for (i64 q = 0; q < nz; q++) {
        int i = (int)by_end[q].t;
        if (m == 0 || node[m - 1].point < st[i]) node[m++].point = en[i] - 1;
    }
    for (i64 q = 0; q < nz; q++) {
        int i = (int)by_end[q].t, lo = 0, hi = m, v;
        for (;;) {
            v = lo + (hi - lo) / 2;
            if (node[v].point < st[i]) lo = v + 1;
            else if (node[v].point >= en[i]) hi = v;
            else break;
        }
        home[i] = v;
        node[v + 1].b0++;
    }
    for (int v = 0; v < m; v++) node[v + 1].b0 += node[v].b0;
    for (int v = 0; v < m; v++) fill[v] = node[v].b0;
    for (i64 q = nz - 1, v = m; q >= 0; q--) { /* by decreasing end */
        int i = (int)by_end[q].t, b = fill[home[i]]++;
        rec_e[b].key = en[i]; rec_e[b].o = 0; rec_e[b].t = 0; pos_e[i] = b;
        while (v > 0 && node[v - 1].point >= en[i]) v--;
        hi_of[i] = (int)v; /* first node with step >= end */
    }
    nz = 0;
    for (int i = 0; i < n; i++)
        if (sz[i] > 0) { seg[nz].o = st[i]; seg[nz].t = i; nz++; }
    Seg *by_start = sort_by_key(seg, tmp, nz, flip);
    for (int v = 0; v < m; v++) fill[v] = node[v].b0;
    for (i64 q = 0, v = 0; q < nz; q++) { /* by increasing start */
        int i = (int)by_start[q].t, b = fill[home[i]]++;
        rec_s[b].key = st[i]; rec_s[b].o = 0; rec_s[b].t = 0; pos_s[i] = b;
        while (v < m && node[v].point < st[i]) v++;
        lo_of[i] = (int)v; /* first node with step >= start */
    }
    for (int v = 0; v < m; v++) {
        node[v].min_start = rec_s[node[v].b0].key; /* every node is some buffer's home */
        node[v].max_end = rec_e[node[v].b0].key;
    }

    /* Place in order; seg collects the placed neighbours of the current buffer. */
    for (int p0 = 0; p0 < n; p0 += BLOCK) {
        int nb = n - p0 < BLOCK ? n - p0 : BLOCK;
        for (int r = 0; r < nb; r++) {
            int i = (int)in->perm[p0 + r];
            Query *Q = &qb[r];
            Q->i = i; Q->qs = st[i]; Q->qe = en[i]; Q->s = sz[i]; Q->a = al[i];
            Q->ps = Q->s ? pos_s[i] : 0; Q->pe = Q->s ? pos_e[i] : 0;
            Q->lo = Q->s ? lo_of[i] : 0; Q->hi = Q->s ? hi_of[i] : 0;
        }
        for (int r = 0; r < nb; r++) {
            /* Warm the caches for later buffers (no effect on the result): first the tree nodes
               around the ends of their lifetimes (the bottom of both search paths) and their
               own records, then the member records those nodes point to. */
            if (r + 2 * AHEAD < nb && qb[r + 2 * AHEAD].s) {
                const Query *F = &qb[r + 2 * AHEAD];
                for (int d = -3; d <= 3; d += 2) {
                    if (F->lo + d >= 0 && F->lo + d < m) PREFETCH(&node[F->lo + d]);
                    if (F->hi + d >= 0 && F->hi + d < m) PREFETCH(&node[F->hi + d]);
                }
                PREFETCH(&rec_s[F->ps]);
                PREFETCH(&rec_e[F->pe]);
                PREFETCH(&in->out[F->i]);
            }
            if (r + AHEAD < nb && qb[r + AHEAD].s) {
                const Query *F = &qb[r + AHEAD];
                const int e0 = F->lo > 0 ? node[F->lo - 1].b0 : (int)nz;
                const int s0 = node[F->lo].b0, s1 = node[F->hi].b0;
                for (int d = 0; d < 8; d += 3) { /* 3 records apart: about one cache line */
                    if (e0 + d < nz) PREFETCH(&rec_e[e0 + d]);
                    if (s0 + d < nz) PREFETCH(&rec_s[s0 + d]);
                    if (s1 + d < nz) PREFETCH(&rec_s[s1 + d]);
                }
            }
            const Query *Q = &qb[r];
            const i64 s = Q->s, qs = Q->qs, qe = Q->qe;
            if (s == 0) { in->out[Q->i] = 0; continue; }
            i64 k = 0;
            int lo, hi, a, b;
            /* nodes with step < qs: only on the search path of qs; members ending after qs */
            for (lo = 0, hi = m; lo < hi;) {
                int v = lo + (hi - lo) / 2;
                if (node[v].point < qs) {
                    if (node[v].max_end > qs)
                        for (b = node[v].b0; b < node[v + 1].b0 && rec_e[b].key > qs; b++) {
                            seg[k].o = rec_e[b].o; seg[k].t = rec_e[b].t; k += rec_e[b].t > 0;
                        }
                    lo = v + 1;
                } else hi = v;
            }
            a = lo; /* first node with step >= qs */
            /* nodes with step >= qe: only on the search path of qe; members starting before qe */
            for (lo = 0, hi = m; lo < hi;) {
                int v = lo + (hi - lo) / 2;
                if (node[v].point >= qe) {
                    if (node[v].min_start < qe)
                        for (b = node[v].b0; b < node[v + 1].b0 && rec_s[b].key < qe; b++) {
                            seg[k].o = rec_s[b].o; seg[k].t = rec_s[b].t; k += rec_s[b].t > 0;
                        }
                    hi = v;
                } else lo = v + 1;
            }
            /* nodes with qs <= step < qe (a contiguous run): every member is live with buffer i */
            for (b = node[a].b0; b < node[lo].b0; b++) {
                seg[k].o = rec_s[b].o; seg[k].t = rec_s[b].t; k += rec_s[b].t > 0;
            }
            i64 x = 0;
            if (k) {
                Seg *sorted = sort_by_key(seg, tmp, k, 0);
                x = in->fit == FIT_FIRST ? first_fit_scan(sorted, k, s, Q->a)
                                         : best_fit_scan(sorted, k, s, Q->a);
            }
            in->out[Q->i] = x;
            rec_s[Q->ps].o = x; rec_s[Q->ps].t = x + s;
            rec_e[Q->pe].o = x; rec_e[Q->pe].t = x + s;
        }
    }
    status = OK;
done:
    free(seg); free(tmp); free(rec_s); free(rec_e); free(home); free(lo_of); free(hi_of);
    free(pos_s); free(pos_e); free(qb); free(node); free(fill);
    return status;
}

/* ---- the sweep engine: orders non-decreasing in start, an address-ordered free list ----
   When the order visits the buffers by start step (ties in any order), the placed neighbours of
   a buffer are exactly the placed buffers still live at its start: those with end > start (every
   buffer ending at or before that step was placed before it). They are disjoint in address, so
   the free space below the highest of them is a list of gaps, one below each live buffer b:
   [gap(b), offset(b)) with gap(b) the top of b's predecessor in address order (0 for the lowest);
   the space above the highest top is open. A buffer is placed in a gap, splitting it (the new
   buffer takes the gap's low part, the gap of the buffer above it now starts at its top); a
   buffer that expires gives its gap to its successor (the two gaps and its range coalesce into
   one), or lowers the top when it was the highest.

   first fit: the lowest gap (by address) whose aligned start holds the buffer below its end,
              else the aligned top;
   best fit:  the shortest such gap, ties to the lowest, else the aligned top;
   exactly what the scans above return over the live neighbours sorted by offset (gaps of length
   0 between adjacent buffers are kept; they hold nothing).

   The gaps sit in blocked sorted arrays (cache-friendly for the ~10^3 buffers live at once of a
   realistic problem, where the randomised search trees used before spent most of their time
   on pointer chasing). Each holds pairs (a, b) sorted by (a, b), in blocks of at most BCAP pairs
   (a block is split in two halves when full, merged with a neighbour when it falls below a
   quarter), listed in a directory of blocks in key order with each block's first key:
   - by address: (offset of a live buffer, start of its gap), one pair per live buffer; every
     block keeps the longest gap a - b it holds and every group of GRP blocks the longest of
     theirs, so the first-fit search skips groups and blocks without a gap of `size` bytes and
     scans the rest in address order (only for first fit: best fit does not search it);
   - for best fit, by (gap length, offset of the buffer above it), the gaps of length > 0 only
     (a gap of length 0, between two adjacent buffers, holds nothing); the search starts at the
     first gap of at least `size` bytes (binary search) and walks on in (length, address) order.
   Alignment is tested at each candidate (a gap of that length may still fail once its start is
   rounded up) and the search goes on to the next in the same order. An expiring buffer is found
   by its offset (binary search over the directory, then in its block). The live buffers expire
   from a binary heap by end. Per buffer O(log L + BCAP + GRP + L / (BCAP * GRP)) steps for L
   buffers live at once, plus the block splits and merges (O(L / BCAP) each; a block splits after
   at least BCAP / 4 insertions into it and every merge removes a block a split made, so on
   average at most one per BCAP / 8 insertions), plus one step per candidate that fails only by
   its alignment. Memory O(L): 16 bytes per slot of a block (blocks are mostly at least a quarter
   full) and per heap entry, touched only for the live set. */

enum { BCAP = 64, GRP = 64 };

typedef struct { i64 a, b; } Pair;
typedef struct { Pair e[BCAP]; } Blk;                 /* a block's pairs, key order */
typedef struct { i64 ka, kb, mx; int id, cnt; } Dir;    /* first key, longest a - b, block, size */

typedef struct {
    Blk *blk; int *freeb; int nblk, capblk, nfreeb;  /* block pool and its free ids */
    Dir *dir; i64 *smx; int D, capD;                 /* directory; group maxima of mx */
    int track;                                       /* keep mx / smx (the address array) */
} BArr;

static inline int key_lt(i64 a1, i64 b1, i64 a2, i64 b2) { /* without branches */
    return (a1 < a2) | ((a1 == a2) & (b1 < b2));
}

static int ba_init(BArr *A, int track) {
    memset(A, 0, sizeof *A);
    A->track = track;
    A->capblk = A->capD = 16;
    A->blk = (Blk *)malloc(sizeof(Blk) * (size_t)A->capblk);
    A->freeb = (int *)malloc(sizeof(int) * (size_t)A->capblk);
    A->dir = (Dir *)malloc(sizeof(Dir) * (size_t)A->capD);
    A->smx = (i64 *)malloc(sizeof(i64) * (size_t)(A->capD / GRP + 1));
    return A->blk && A->freeb && A->dir && A->smx ? OK : ERR_NOMEM;
}

static void ba_free(BArr *A) { free(A->blk); free(A->freeb); free(A->dir); free(A->smx); }

/* A fresh block id (the pool may move: pointers into it are stale after), or -1. */
static int ba_newblock(BArr *A) {
    if (A->nfreeb) return A->freeb[--A->nfreeb];
    if (A->nblk == A->capblk) {
        int cap = 2 * A->capblk;
        Blk *nb = (Blk *)realloc(A->blk, sizeof(Blk) * (size_t)cap);
        if (!nb) return -1;
        A->blk = nb;
        int *nf = (int *)realloc(A->freeb, sizeof(int) * (size_t)cap);
        if (!nf) return -1;
        A->freeb = nf;
        A->capblk = cap;
    }
    return A->nblk++;
}

static inline i64 blk_max(const Blk *k, int c) {
    i64 m = LLONG_MIN;
    for (int p = 0; p < c; p++) {
        i64 l = k->e[p].a - k->e[p].b;
        if (l > m) m = l;
    }
    return m;
}

static void ba_regroup(BArr *A, int j) { /* recompute group j's maximum */
    int d1 = (j + 1) * GRP < A->D ? (j + 1) * GRP : A->D;
    i64 m = LLONG_MIN;
    for (int d = j * GRP; d < d1; d++)
        if (A->dir[d].mx > m) m = A->dir[d].mx;
    A->smx[j] = m;
}

static void ba_regroup_from(BArr *A, int d) { /* the directory moved from position d on */
    if (!A->track) return;
    for (int j = d / GRP; j * GRP < A->D; j++) ba_regroup(A, j);
}

static int ba_dir_insert(BArr *A, int d, Dir e) {
    if (A->D == A->capD) {
        int cap = 2 * A->capD;
        Dir *nd = (Dir *)realloc(A->dir, sizeof(Dir) * (size_t)cap);
        if (!nd) return ERR_NOMEM;
        A->dir = nd;
        i64 *ns = (i64 *)realloc(A->smx, sizeof(i64) * (size_t)(cap / GRP + 1));
        if (!ns) return ERR_NOMEM;
        A->smx = ns;
        A->capD = cap;
    }
    memmove(A->dir + d + 1, A->dir + d, sizeof(Dir) * (size_t)(A->D - d));
    A->dir[d] = e;
    A->D++;
    ba_regroup_from(A, d);
    return OK;
}

static void ba_dir_remove(BArr *A, int d) {
    A->freeb[A->nfreeb++] = A->dir[d].id;
    memmove(A->dir + d, A->dir + d + 1, sizeof(Dir) * (size_t)(A->D - d - 1));
    A->D--;
    ba_regroup_from(A, d);
}

/* Block d's gap maximum after a pair's a - b grew to l. */
static inline void ba_bump(BArr *A, int d, i64 l) {
    if (l > A->dir[d].mx) {
        A->dir[d].mx = l;
        if (l > A->smx[d / GRP]) A->smx[d / GRP] = l;
    }
}

/* ... after a pair's a - b shrank from l (the block and its group are rescanned if it was their
   maximum). */
static inline void ba_drop(BArr *A, int d, i64 l) {
    Dir *e = &A->dir[d];
    if (l == e->mx) {
        e->mx = blk_max(&A->blk[e->id], e->cnt);
        if (l == A->smx[d / GRP]) ba_regroup(A, d / GRP);
    }
}

/* The lower bound of key (ka, kb): the first pair >= it is at (d, p), p == cnt meaning past the
   block's end (then it is the first pair of block d + 1, or there is none). D == 0: (0, 0). */
static inline ALWAYS_INLINE void ba_find(const BArr *A, i64 ka, i64 kb, int *dp, int *pp) {
    /* branch-free binary searches: the answer stays in [lo, lo + m] */
    int lo = 0, m = A->D;
    while (m > 1) { /* the first block whose first key is > the key */
        const int h = m >> 1;
        const Dir *e = &A->dir[lo + h - 1];
        lo = key_lt(ka, kb, e->ka, e->kb) ? lo : lo + h;
        m -= h;
    }
    if (m == 1 && !key_lt(ka, kb, A->dir[lo].ka, A->dir[lo].kb)) lo++;
    const int d = lo > 0 ? lo - 1 : 0;
    *dp = d;
    if (A->D == 0) { *pp = 0; return; }
    const Blk *k = &A->blk[A->dir[d].id];
    lo = 0; m = A->dir[d].cnt;
    while (m > 1) { /* the first pair >= the key */
        const int h = m >> 1;
        lo = key_lt(k->e[lo + h - 1].a, k->e[lo + h - 1].b, ka, kb) ? lo + h : lo;
        m -= h;
    }
    if (m == 1 && key_lt(k->e[lo].a, k->e[lo].b, ka, kb)) lo++;
    *pp = lo;
}

/* Past-the-end of block d becomes the start of block d + 1 (when there is one). */
static inline void ba_norm(const BArr *A, int *d, int *p) {
    if (*p == A->dir[*d].cnt && *d + 1 < A->D) { ++*d; *p = 0; }
}

/* Insert the pair (va, vb) at position p (0..cnt) of block d, which must keep the key order;
   with D == 0 it becomes the only pair. Returns OK or ERR_NOMEM. */
static int ba_insert(BArr *A, int d, int p, i64 va, i64 vb) {
    if (A->D == 0) {
        int id = ba_newblock(A);
        if (id < 0) return ERR_NOMEM;
        A->blk[id].e[0].a = va; A->blk[id].e[0].b = vb;
        Dir e = {va, vb, va - vb, id, 1, };
        return ba_dir_insert(A, 0, e);
    }
    if (A->dir[d].cnt == BCAP) { /* split: the upper half into a new block after it */
        int id2 = ba_newblock(A);
        if (id2 < 0) return ERR_NOMEM;
        const int h = BCAP / 2;
        Blk *k1 = &A->blk[A->dir[d].id], *k2 = &A->blk[id2];
        memcpy(k2->e, k1->e + h, sizeof(Pair) * (BCAP - h));
        A->dir[d].cnt = h;
        Dir e = {k2->e[0].a, k2->e[0].b, 0, id2, BCAP - h};
        if (A->track) { A->dir[d].mx = blk_max(k1, h); e.mx = blk_max(k2, BCAP - h); }
        if (ba_dir_insert(A, d + 1, e)) return ERR_NOMEM; /* regroups from d + 1 on */
        if (A->track) ba_regroup(A, d / GRP);
        if (p > h) { d++; p -= h; }
    }
    Dir *e = &A->dir[d];
    Blk *k = &A->blk[e->id];
    memmove(k->e + p + 1, k->e + p, sizeof(Pair) * (size_t)(e->cnt - p));
    k->e[p].a = va; k->e[p].b = vb;
    e->cnt++;
    if (p == 0) { e->ka = va; e->kb = vb; }
    if (A->track) ba_bump(A, d, va - vb);
    return OK;
}

/* Remove the pair at (d, p), p < cnt; a block below a quarter full merges with a neighbour when
   the two fill at most three quarters of one. */
static void ba_erase(BArr *A, int d, int p) {
    Dir *e = &A->dir[d];
    Blk *k = &A->blk[e->id];
    const i64 l = k->e[p].a - k->e[p].b;
    memmove(k->e + p, k->e + p + 1, sizeof(Pair) * (size_t)(e->cnt - p - 1));
    e->cnt--;
    if (e->cnt == 0) { ba_dir_remove(A, d); return; }
    if (p == 0) { e->ka = k->e[0].a; e->kb = k->e[0].b; }
    if (A->track) ba_drop(A, d, l);
    if (e->cnt >= BCAP / 4) return;
    int left;
    if (d + 1 < A->D && e->cnt + A->dir[d + 1].cnt <= 3 * BCAP / 4) left = d;
    else if (d > 0 && e->cnt + A->dir[d - 1].cnt <= 3 * BCAP / 4) left = d - 1;
    else return;
    Dir *L = &A->dir[left], *R = &A->dir[left + 1];
    Blk *kl = &A->blk[L->id], *kr = &A->blk[R->id];
    memcpy(kl->e + L->cnt, kr->e, sizeof(Pair) * (size_t)R->cnt);
    L->cnt += R->cnt;
    if (R->mx > L->mx) L->mx = R->mx;
    ba_dir_remove(A, left + 1); /* regroups from left + 1 on */
    if (A->track) ba_regroup(A, left / GRP);
}

/* Set the b of the pair at (d, p) to vb (the key order must not change: a is unique). */
static inline void ba_setb(BArr *A, int d, int p, i64 vb) {
    Dir *e = &A->dir[d];
    Blk *k = &A->blk[e->id];
    const i64 old = k->e[p].a - k->e[p].b, nw = k->e[p].a - vb;
    k->e[p].b = vb;
    if (p == 0) e->kb = vb;
    if (!A->track) return;
    if (nw > old) ba_bump(A, d, nw);
    else if (nw < old) ba_drop(A, d, old);
}

/* The gap-length array: add / remove the gap of length l below offset o (only when l > 0). */
static inline int lx_put(BArr *X, i64 l, i64 o) {
    if (l <= 0) return OK;
    int d, p;
    ba_find(X, l, o, &d, &p);
    return ba_insert(X, d, p, l, o);
}

static inline void lx_take(BArr *X, i64 l, i64 o) {
    if (l <= 0) return;
    int d, p;
    ba_find(X, l, o, &d, &p);
    ba_norm(X, &d, &p);
    ba_erase(X, d, p);
}

/* First fit: the lowest pair (offset o, gap start g) with o - g >= s and round_up(g, al) + s <= o;
   1 and its position, or 0. */
static int ff_search(const BArr *A, i64 s, i64 al, int *dp, int *pp) {
    const int D = A->D;
    for (int j = 0; j * GRP < D; j++) {
        if (A->smx[j] < s) continue;
        const int d1 = (j + 1) * GRP < D ? (j + 1) * GRP : D;
        for (int d = j * GRP; d < d1; d++) {
            if (A->dir[d].mx < s) continue;
            const Blk *k = &A->blk[A->dir[d].id];
            const int c = A->dir[d].cnt;
            for (int p = 0; p < c; p++) {
                const i64 o = k->e[p].a, g = k->e[p].b;
                if (o - g >= s && round_up(g, al) + s <= o) { *dp = d; *pp = p; return 1; }
            }
        }
    }
    return 0;
}

/* Best fit: the first pair (length l, offset o) in (length, address) order with l >= s and
   round_up(o - l, al) + s <= o; 1 and its position, or 0. */
static int bf_search(const BArr *X, i64 s, i64 al, int *dp, int *pp) {
    if (X->D == 0) return 0;
    int d, p;
    ba_find(X, s, LLONG_MIN, &d, &p);
    for (; d < X->D; d++, p = 0) {
        const Blk *k = &X->blk[X->dir[d].id];
        const int c = X->dir[d].cnt;
        for (; p < c; p++) {
            const i64 o = k->e[p].b;
            if (round_up(o - k->e[p].a, al) + s <= o) { *dp = d; *pp = p; return 1; }
        }
    }
    return 0;
}

typedef struct { i64 end, off; } Expiry;

/* binary min-heap of the live buffers by end */
static void h_push(Expiry *h, int *len, Expiry e) {
    int q = (*len)++;
    while (q > 0) {
        int p = (q - 1) / 2;
        if (h[p].end <= e.end) break;
        h[q] = h[p]; q = p;
    }
    h[q] = e;
}

static void h_pop(Expiry *h, int *len) { /* the hole goes down to a leaf, the last entry up */
    const int m = --(*len);
    int q = 0;
    for (;;) {
        int c = 2 * q + 1;
        if (c + 1 < m) c += h[c + 1].end < h[c].end;
        else if (c >= m) break;
        h[q] = h[c]; q = c;
    }
    if (q == m) return;
    const Expiry e = h[m];
    while (q > 0) {
        int p = (q - 1) / 2;
        if (h[p].end <= e.end) break;
        h[q] = h[p]; q = p;
    }
    h[q] = e;
}

/* The sweep placement proper (pure C, runs without the GIL): in->perm must be non-decreasing in
   start (checked by the caller). Returns OK or ERR_NOMEM. */
static int sweep_all(const Input *in) {
    const int n = in->n;
    const i64 *st = in->start, *en = in->end, *sz = in->size, *al = in->align;
    size_t N = (size_t)(n > 0 ? n : 1);
    int status = ERR_NOMEM;
    const int best = in->fit == FIT_BEST;
    BArr A, X; /* by address; by (gap length, address) for best fit */
    int okA = ba_init(&A, !best) == OK, okX = ba_init(&X, 0) == OK;
    /* at most n entries live; pages beyond the live peak are never touched */
    Expiry *heap = (Expiry *)malloc(sizeof(Expiry) * N);
    if (!okA || !okX || !heap) goto done;
    int hlen = 0, d, p;
    i64 top = 0;
    for (int k = 0; k < n; k++) {
        if (k + AHEAD * 2 < n) { /* the columns are read in a random order: fetch ahead */
            const i64 f = in->perm[k + AHEAD * 2];
            PREFETCH(&st[f]); PREFETCH(&en[f]); PREFETCH(&sz[f]); PREFETCH(&al[f]);
            PREFETCH(&in->out[f]);
        }
        const int i = (int)in->perm[k];
        const i64 s = sz[i];
        if (s == 0) { in->out[i] = 0; continue; }
        while (hlen && heap[0].end <= st[i]) { /* expire: its gap goes to its successor */
            const i64 o = heap[0].off;
            h_pop(heap, &hlen);
            ba_find(&A, o, LLONG_MIN, &d, &p);
            ba_norm(&A, &d, &p); /* the pair (o, g) of the expiring buffer */
            const i64 g = A.blk[A.dir[d].id].e[p].b;
            int d2 = d, p2 = p + 1;
            if (p2 == A.dir[d].cnt) { d2 = d + 1; p2 = 0; }
            if (best) lx_take(&X, o - g, o);
            if (d2 < A.D) {
                if (best) {
                    const i64 no = A.blk[A.dir[d2].id].e[p2].a, ng = A.blk[A.dir[d2].id].e[p2].b;
                    lx_take(&X, no - ng, no);
                    if (lx_put(&X, no - g, no)) goto done;
                }
                ba_setb(&A, d2, p2, g);
            } else top = g;
            ba_erase(&A, d, p);
        }
        const i64 a = al[i];
        i64 x, below;
        int found;
        if (best) {
            found = bf_search(&X, s, a, &d, &p);
            if (found) { /* the low part of the gap below o; that gap now starts at x + s */
                const Blk *kb = &X.blk[X.dir[d].id];
                const i64 o = kb->e[p].b;
                below = o - kb->e[p].a;
                x = round_up(below, a);
                ba_erase(&X, d, p);
                if (lx_put(&X, o - x - s, o) || lx_put(&X, x - below, x)) goto done;
                ba_find(&A, o, LLONG_MIN, &d, &p);
                ba_norm(&A, &d, &p);
            }
        } else {
            found = ff_search(&A, s, a, &d, &p);
            if (found) {
                below = A.blk[A.dir[d].id].e[p].b;
                x = round_up(below, a);
            }
        }
        if (found) {
            ba_setb(&A, d, p, x + s);
            if (ba_insert(&A, d, p, x, below)) goto done;
        } else { /* above the highest live buffer */
            x = round_up(top, a);
            below = top;
            top = x + s;
            if (best && lx_put(&X, x - below, x)) goto done;
            d = A.D ? A.D - 1 : 0;
            if (ba_insert(&A, d, A.D ? A.dir[d].cnt : 0, x, below)) goto done;
        }
        in->out[i] = x;
        Expiry e = {en[i], x};
        h_push(heap, &hlen, e);
    }
    status = OK;
done:
    ba_free(&A); ba_free(&X); free(heap);
    return status;
}

/* ---- Python interface ---- */

#define LIM (((i64)1 << 62) - 1)

/* Reject inputs outside the model's range (so the arithmetic of place_all cannot overflow) and an
   order that is not a permutation. Returns 0 or sets ValueError. */
static int check_input(const Input *in) {
    i64 w = 0;
    for (int i = 0; i < in->n; i++) {
        i64 s = in->size[i], a = in->align[i];
        if (s < 0 || s > LIM || a < 1 || a > LIM) {
            PyErr_Format(PyExc_ValueError, "buffer %d: size %lld / alignment %lld out of range "
                         "(0 <= size, 1 <= alignment, both < 2**62)", i, s, a);
            return -1;
        }
        if (in->start[i] < -LIM || in->end[i] > LIM || in->end[i] <= in->start[i]) {
            PyErr_Format(PyExc_ValueError, "buffer %d: lifetime [%lld, %lld) is empty or out of "
                         "range (|step| < 2**62)", i, in->start[i], in->end[i]);
            return -1;
        }
        i64 term = round_up(s, a); /* <= s + a - 1 < 2^63 */
        if (term > LLONG_MAX - (a - 1) || (term += a - 1) > LLONG_MAX - w) {
            PyErr_SetString(PyExc_ValueError,
                            "worst-case arena sum(round_up(size, alignment) + alignment - 1) "
                            "exceeds 2**63 - 1 bytes");
            return -1;
        }
        w += term;
    }
    char *seen = (char *)calloc((size_t)(in->n > 0 ? in->n : 1), 1);
    if (!seen) { PyErr_NoMemory(); return -1; }
    for (int k = 0; k < in->n; k++) {
        i64 i = in->perm[k];
        if (i < 0 || i >= in->n || seen[i]) {
            free(seen);
            PyErr_Format(PyExc_ValueError, "perm: not a permutation of 0..%d (position %d holds "
                         "%lld)", in->n - 1, k, i);
            return -1;
        }
        seen[i] = 1;
    }
    free(seen);
    return 0;
}

PyDoc_STRVAR(place_doc,
"place(*, perm, starts, ends, sizes, alignments, fit, out) -> None\n\n"
"Greedy placement (see planners.greedy): buffers in the order perm, each at the offset the fit\n"
"rule ('first': lowest aligned offset colliding with no placed neighbour; 'best': smallest gap\n"
"between placed neighbours that holds it, ties lowest, else above the top) picks among the placed\n"
"buffers of non-zero size whose half-open lifetimes [start, end) intersect its own. Zero-size\n"
"buffers get offset 0. All arrays are C-contiguous int64 of length n; offsets (bytes) are\n"
"written to out. Raises ValueError for sizes, alignments or steps outside the model's range\n"
"(|value| < 2**62, worst-case arena <= 2**63 - 1) or a perm that is not a permutation.\n"
"O(n log n + E) time for E interfering pairs, O(n) memory; the GIL is released while placing.");

/* place() and sweep(): parse, check, run `engine` without the GIL. */
static PyObject *run_engine(PyObject *args, PyObject *kwargs, const char *fmt,
                            int (*engine)(const Input *), int by_start) {
    static char *kwlist[] = {"perm", "starts", "ends", "sizes", "alignments", "fit", "out", NULL};
    PyObject *o_perm, *o_st, *o_en, *o_sz, *o_al, *o_out;
    const char *fit;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &o_perm, &o_st, &o_en,
                                     &o_sz, &o_al, &fit, &o_out))
        return NULL;
    Input in;
    memset(&in, 0, sizeof in);
    if (strcmp(fit, "first") == 0) in.fit = FIT_FIRST;
    else if (strcmp(fit, "best") == 0) in.fit = FIT_BEST;
    else return PyErr_Format(PyExc_ValueError, "fit: 'first' or 'best', got '%s'", fit);
    Py_buffer v[6];
    PyObject *objs[6] = {o_perm, o_st, o_en, o_sz, o_al, o_out};
    const char *names[6] = {"perm", "starts", "ends", "sizes", "alignments", "out"};
    Py_ssize_t n = -1;
    int got = 0;
    PyObject *result = NULL;
    for (; got < 6; got++)
        if (get_i64_view(objs[got], &v[got], got == 5, names[got], &n)) goto done;
    if (n > INT_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "more than 2**31 - 2 buffers");
        goto done;
    }
    in.n = (int)n;
    in.perm = (const i64 *)v[0].buf;
    in.start = (const i64 *)v[1].buf;
    in.end = (const i64 *)v[2].buf;
    in.size = (const i64 *)v[3].buf;
    in.align = (const i64 *)v[4].buf;
    in.out = (i64 *)v[5].buf;
    if (check_input(&in)) goto done;
    if (by_start)
        for (int k = 1; k < in.n; k++)
            if (in.start[in.perm[k]] < in.start[in.perm[k - 1]]) {
                PyErr_Format(PyExc_ValueError, "perm: not non-decreasing in start (position %d "
                             "starts at step %lld, before step %lld)", k, in.start[in.perm[k]],
                             in.start[in.perm[k - 1]]);
                goto done;
            }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = engine(&in);
    Py_END_ALLOW_THREADS
    if (status != OK) { PyErr_NoMemory(); goto done; }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyObject *py_place(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    return run_engine(args, kwargs, "$OOOOOsO:place", place_all, 0);
}

PyDoc_STRVAR(sweep_doc,
"sweep(*, perm, starts, ends, sizes, alignments, fit, out) -> None\n\n"
"The same placement as place() for an order perm that is non-decreasing in start step (ties in\n"
"any order), by a sweep over time that keeps the gaps between the live placed buffers in\n"
"blocked sorted arrays (by address with the longest gap per block of 64 and per group of 64\n"
"blocks; for best fit also by (length, address)); an expiring buffer's range coalesces with the\n"
"gaps on both sides. Offsets identical to place(). Same arguments and errors as place(), and\n"
"ValueError when perm is not non-decreasing in start. O(log L + 64 + L / 4096) steps per buffer\n"
"for L buffers live at once, plus block splits and merges (O(L / 64) each, on average at most one\n"
"per 8 insertions) and one step per gap that holds the size but not at its aligned\n"
"start; the memory it touches grows with the buffers live at once; the GIL is released while\n"
"placing.");

static PyObject *py_sweep(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    return run_engine(args, kwargs, "$OOOOOsO:sweep", sweep_all, 1);
}

static PyMethodDef methods[] = {
    {"place", (PyCFunction)(void (*)(void))py_place, METH_VARARGS | METH_KEYWORDS, place_doc},
    {"sweep", (PyCFunction)(void (*)(void))py_sweep, METH_VARARGS | METH_KEYWORDS, sweep_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_greedy",
    "Compiled placement core of planners.greedy (order x fit over a static interval tree).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__greedy(void) { return PyModule_Create(&module); }
