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
#else
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

   The gaps sit in treaps (randomised balanced search trees; priorities a fixed hash): one by
   address, each node keeping the longest gap of its subtree, so the first-fit search skips every
   subtree without a gap of at least `size` bytes; for best fit a second one by (gap length,
   address), searched from the first gap of at least `size` bytes. Alignment is tested at the
   candidates (a gap of that length may still fail once its start is rounded up) and the search
   goes on to the next. The live buffers expire from a binary heap by end. Nodes live in a pool of
   slots reused as buffers expire, so the working set is the L live buffers (48 bytes each), not
   n. Expected O(log L) per insertion, removal and search, plus one step per candidate that fails
   only by its alignment: O(n log L) in total, 4 bytes per buffer beyond the inputs and the
   output (touched memory: O(L)). */

typedef struct {
    i64 off, gap, mx;   /* address range starts at off; its gap is [gap, off); mx: subtree max */
    int l, r, bl, br;   /* children in the address treap and the (length, address) treap */
    unsigned prio;
    int inb;            /* in the (length, address) treap: only gaps of length > 0 are */
} TNode;

typedef struct { i64 end; int slot, pad; } Expiry;

static inline unsigned prio_of(unsigned x) { /* a fixed hash (splitmix32-like) */
    x *= 0x9E3779B9u;
    x ^= x >> 16; x *= 0x85EBCA6Bu; x ^= x >> 13; x *= 0xC2B2AE35u; x ^= x >> 16;
    return x;
}

#define GL(T, t) ((T)[t].off - (T)[t].gap)

static inline void t_pull(TNode *T, int t) {
    i64 m = GL(T, t);
    int c = T[t].l;
    if (c >= 0 && T[c].mx > m) m = T[c].mx;
    c = T[t].r;
    if (c >= 0 && T[c].mx > m) m = T[c].mx;
    T[t].mx = m;
}

/* address treap: split t into offsets < key (*a) and >= key (*b) */
static void a_split(TNode *T, int t, i64 key, int *a, int *b) {
    if (t < 0) { *a = *b = -1; return; }
    if (T[t].off < key) { a_split(T, T[t].r, key, &T[t].r, b); *a = t; }
    else { a_split(T, T[t].l, key, a, &T[t].l); *b = t; }
    t_pull(T, t);
}

static int a_merge(TNode *T, int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (T[a].prio > T[b].prio) { T[a].r = a_merge(T, T[a].r, b); t_pull(T, a); return a; }
    T[b].l = a_merge(T, a, T[b].l); t_pull(T, b); return b;
}

/* Insert node i (its off and gap set) under root t. */
static int a_insert(TNode *T, int t, int i) {
    if (t < 0) { T[i].l = T[i].r = -1; t_pull(T, i); return i; }
    if (T[i].prio > T[t].prio) {
        a_split(T, t, T[i].off, &T[i].l, &T[i].r);
        t_pull(T, i);
        return i;
    }
    if (T[i].off < T[t].off) T[t].l = a_insert(T, T[t].l, i);
    else T[t].r = a_insert(T, T[t].r, i);
    t_pull(T, t);
    return t;
}

/* Remove node i (offsets are distinct) from under root t. */
static int a_erase(TNode *T, int t, int i) {
    if (t == i) return a_merge(T, T[i].l, T[i].r);
    if (T[i].off < T[t].off) T[t].l = a_erase(T, T[t].l, i);
    else T[t].r = a_erase(T, T[t].r, i);
    t_pull(T, t);
    return t;
}

/* Recompute the subtree maxima on the path to node i (its gap changed). */
static void a_refresh(TNode *T, int t, int i) {
    if (t == i) { t_pull(T, t); return; }
    a_refresh(T, T[i].off < T[t].off ? T[t].l : T[t].r, i);
    t_pull(T, t);
}

/* The node with the smallest offset > key, or -1. */
static int a_next(const TNode *T, int t, i64 key) {
    int best = -1;
    while (t >= 0) {
        if (T[t].off > key) { best = t; t = T[t].l; } else t = T[t].r;
    }
    return best;
}

/* The node with the smallest offset > key takes the gap start g (its gap grows: a coalesce);
   the subtree maxima on its path are recomputed on the way back. Returns it, or -1. */
static int a_give(TNode *T, int t, i64 key, i64 g) {
    if (t < 0) return -1;
    int r;
    if (T[t].off > key) {
        r = a_give(T, T[t].l, key, g);
        if (r < 0) { T[t].gap = g; r = t; }
    } else r = a_give(T, T[t].r, key, g);
    if (r >= 0) t_pull(T, t);
    return r;
}

/* First fit and the split in one descent: the lowest node whose gap holds s bytes at its aligned
   start x (alignment a); its gap then starts at x + s (maxima recomputed on the way back). Returns
   it, with *x and *below (the gap's old start, now the new buffer's), or -1. */
static int a_fit(TNode *T, int t, i64 s, i64 a, i64 *x, i64 *below) {
    if (t < 0 || T[t].mx < s) return -1;
    int r = a_fit(T, T[t].l, s, a, x, below);
    if (r < 0) {
        if (GL(T, t) >= s && round_up(T[t].gap, a) + s <= T[t].off) {
            *below = T[t].gap;
            *x = round_up(T[t].gap, a);
            T[t].gap = *x + s;
            r = t;
        } else r = a_fit(T, T[t].r, s, a, x, below);
    }
    if (r >= 0) t_pull(T, t);
    return r;
}

/* (length, address) treap */
static inline int b_less(const TNode *T, int i, int j) { /* key of i < key of j */
    i64 li = GL(T, i), lj = GL(T, j);
    return li < lj || (li == lj && T[i].off < T[j].off);
}

static void b_split(TNode *T, int t, int k, int *a, int *b) { /* keys < key(k), >= key(k) */
    if (t < 0) { *a = *b = -1; return; }
    if (b_less(T, t, k)) { b_split(T, T[t].br, k, &T[t].br, b); *a = t; }
    else { b_split(T, T[t].bl, k, a, &T[t].bl); *b = t; }
}

static int b_merge(TNode *T, int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (T[a].prio > T[b].prio) { T[a].br = b_merge(T, T[a].br, b); return a; }
    T[b].bl = b_merge(T, a, T[b].bl); return b;
}

static int b_insert(TNode *T, int t, int i) {
    if (t < 0) { T[i].bl = T[i].br = -1; return i; }
    if (T[i].prio > T[t].prio) { b_split(T, t, i, &T[i].bl, &T[i].br); return i; }
    if (b_less(T, i, t)) T[t].bl = b_insert(T, T[t].bl, i);
    else T[t].br = b_insert(T, T[t].br, i);
    return t;
}

static int b_erase(TNode *T, int root, int i) { /* i's key: the one it was inserted with */
    int *link = &root, t = root;
    while (t >= 0 && t != i) {
        link = b_less(T, i, t) ? &T[t].bl : &T[t].br;
        t = *link;
    }
    if (t == i) *link = b_merge(T, T[i].bl, T[i].br);
    return root;
}

/* The (length, address) treap holds only the gaps of length > 0 (a gap of length 0, between two
   adjacent buffers, holds nothing; with alignment 1 every buffer placed into a gap leaves one). */
static inline int b_put(TNode *T, int root, int i) {
    T[i].inb = GL(T, i) > 0;
    return T[i].inb ? b_insert(T, root, i) : root;
}

static inline int b_take(TNode *T, int root, int i) {
    return T[i].inb ? b_erase(T, root, i) : root;
}

/* Best fit: the first node in (length, address) order of length >= s whose aligned gap start
   holds s bytes, or -1. */
static int b_best(const TNode *T, int t, i64 s, i64 a) {
    while (t >= 0) {
        if (GL(T, t) < s) { t = T[t].br; continue; }
        int r = b_best(T, T[t].bl, s, a);
        if (r >= 0) return r;
        if (round_up(T[t].gap, a) + s <= T[t].off) return t;
        t = T[t].br;
    }
    return -1;
}

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

static void h_pop(Expiry *h, int *len) {
    Expiry e = h[--(*len)];
    int q = 0, m = *len;
    for (;;) {
        int c = 2 * q + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1].end < h[c].end) c++;
        if (e.end <= h[c].end) break;
        h[q] = h[c]; q = c;
    }
    if (m) h[q] = e;
}

/* The sweep placement proper (pure C, runs without the GIL): in->perm must be non-decreasing in
   start (checked by the caller). Returns OK or ERR_NOMEM. */
static int sweep_all(const Input *in) {
    const int n = in->n;
    const i64 *st = in->start, *en = in->end, *sz = in->size, *al = in->align;
    size_t N = (size_t)(n > 0 ? n : 1);
    int status = ERR_NOMEM;
    /* at most n nodes live; pages beyond the live peak are never touched */
    TNode *T = (TNode *)malloc(sizeof(TNode) * N);
    Expiry *heap = (Expiry *)malloc(sizeof(Expiry) * N);
    int *free_slot = (int *)malloc(sizeof(int) * N);
    if (!T || !heap || !free_slot) goto done;
    const int best = in->fit == FIT_BEST;
    int aroot = -1, broot = -1, hlen = 0, nfree = 0, used = 0;
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
            const int b = heap[0].slot;
            h_pop(heap, &hlen);
            free_slot[nfree++] = b;
            if (best) {
                broot = b_take(T, broot, b);
                const int nx = a_next(T, aroot, T[b].off);
                if (nx >= 0) broot = b_take(T, broot, nx);
            }
            const int nx = a_give(T, aroot, T[b].off, T[b].gap);
            aroot = a_erase(T, aroot, b);
            if (nx < 0) top = T[b].gap;
            else if (best) broot = b_put(T, broot, nx);
        }
        const i64 a = al[i];
        const int v = nfree ? free_slot[--nfree] : used++;
        i64 x, below;
        int g;
        if (best) {
            g = b_best(T, broot, s, a);
            if (g >= 0) { /* the low part of g's gap; g's gap now starts at the new top */
                x = round_up(T[g].gap, a);
                below = T[g].gap;
                broot = b_take(T, broot, g);
                T[g].gap = x + s;
                a_refresh(T, aroot, g);
                broot = b_put(T, broot, g);
            }
        } else g = a_fit(T, aroot, s, a, &x, &below);
        if (g < 0) { /* above the highest live buffer */
            x = round_up(top, a);
            below = top;
            top = x + s;
        }
        T[v].gap = below;
        in->out[i] = x;
        T[v].off = x;
        T[v].prio = prio_of((unsigned)k);
        aroot = a_insert(T, aroot, v);
        if (best) broot = b_put(T, broot, v);
        Expiry e = {en[i], v, 0};
        h_push(heap, &hlen, e);
    }
    status = OK;
done:
    free(T); free(heap); free(free_slot);
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
"balanced search trees (by address with the longest gap per subtree; for best fit also by\n"
"(length, address)); an expiring buffer's range coalesces with the gaps on both sides. Offsets\n"
"identical to place(). Same arguments and errors as place(), and ValueError when perm is not\n"
"non-decreasing in start. Expected O(n log n) time (O(log L) per buffer for L buffers live at\n"
"once, plus one step per gap that holds the size but not at its aligned start); the memory it\n"
"touches grows with the buffers live at once; the GIL is released while placing.");

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
