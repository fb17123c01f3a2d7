/*
 * _telamalloc: the compiled probe of planners.telamalloc (C99, CPython extension).
 *
 * One call of probe() is one call of planners.telamalloc._Search.run (or of _run_decomposed when
 * the decompose flag is set), node for node: a depth-first search over MiniMalloc's canonical
 * layouts (every buffer at its skyline offset, the lowest aligned offset above the placed buffers
 * live with it, placed in non-decreasing (offset, rank)) under a capacity target (bytes), with
 * the same candidates in the same order (_candidates: the (offset, rank) rule, dominance, twin
 * symmetry, max_branch truncation), the same pruning (_sections_fit, the
 * "level + max unplaced bytes > target" cut, the room check of the decomposed search), the same
 * placement counting, the same clock checks (every 64 placements, every placement above 2,000
 * buffers in the plain search) and the same deepest-node bookkeeping (the squeaky wheel's mask of
 * the buffers still unplaced there). The decomposed search re-ranks every independent range with
 * the contention left, by the key tuple of _Search._keys (squeaky-wheel failures first, then the
 * priority's keys with float64 area, then the buffer index), so the ranks equal numpy.lexsort's.
 * The Python code in planners/telamalloc.py is the reference; tests/test_telamalloc_engine.py
 * checks that both return identical results.
 *
 * Lifetimes are half-open [start, end) in schedule steps, mapped by the caller to segment indices
 * lo..hi (end points 0..m-1); sizes, offsets and targets in bytes. The caller guarantees the
 * worst-case arena is below 2**62 (TelaMalloc returns its start plan otherwise), so every sum
 * formed here (offset + size, level + unplaced bytes) stays inside int64.
 *
 * Cost per placement: O(d) for the d neighbours of the placed buffer (their lists come from the
 * caller up to 4,000 buffers, else a scan of all n), O(p) for the candidates among the p buffers
 * of the searched range (selected lazily in (offset, rank) order: O(p) per candidate tried), and
 * the section check, O(segments) when a witness member per segment still fits, at most
 * O(cells); the plain search without cells checks the m segment heights instead.
 *
 * Memory: the caller's O(n + m + cells + neighbour pairs) tables, O(n + m) state, the undo log
 * (at most n placements with their changed neighbours) and the candidate lists and buffer pools
 * of the nodes on the current path (at most n per node, as in the Python reference). The plain
 * search uses an explicit stack; the decomposed search recurses at most about 2n C frames deep
 * (TelaMalloc decomposes only up to 2,000 buffers). The GIL is released during the search.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "int64_view.h"

typedef long long i64;
#define INF LLONG_MAX

enum { P_CONT = 0, P_CONTW = 1, P_SIZE = 2, P_AREA = 3, P_WIDTH = 4 };
enum { R_FOUND = 0, R_EXHAUSTED = 1, R_BUDGET = 2 };
#define STOP (-1)
#define NOMEM (-2)

/* A growable stack of i64, addressed by index (its storage moves when it grows). */
typedef struct {
    i64 *a;
    size_t len, cap;
} Vec;

static int vreserve(Vec *v, size_t extra) {
    if (v->len + extra <= v->cap) return 0;
    size_t c = v->cap ? v->cap : 256;
    while (c < v->len + extra) c *= 2;
    i64 *p = (i64 *)realloc(v->a, c * sizeof(i64));
    if (!p) return -1;
    v->a = p;
    v->cap = c;
    return 0;
}

typedef struct {
    int n, m, decompose;
    const i64 *size, *start, *end, *align, *lo, *hi;
    const i64 *nptr, *nidx;                /* neighbour lists (CSR); NULL: scan all buffers */
    const i64 *owner, *segs, *at;          /* (segment, buffer) cells by segment; NULL: none */
    i64 nsegs;
    const i64 *twin;                       /* identical buffer just before by rank; NULL: none */
    const i64 *boost;
    int any_boost, prio, dominance, aligned;
    i64 max_branch;                        /* < 0: no limit */
    i64 target, budget, every;
    double deadline;
    /* state */
    i64 *rank, *minoff, *xa, *unpl, *height, *cross, *off, *cont;
    i64 *deep_out;
    i64 used, deep, depth, umax;
    int deep_set, truncated, udirty;
    Vec undo;  /* per placement: i, floor, last, nb mark, height mark */
    Vec nb;    /* pairs (buffer, old skyline offset) */
    Vec hs;    /* old heights (plain search without cells) */
    Vec cand;  /* pairs (buffer, offset) of the nodes on the path */
    Vec pool;  /* buffer lists of the decomposed search */
    Vec saved; /* ranks saved by the decomposed search */
    i64 *sa, *sb; /* merge sort scratch */
    i64 *wit;     /* per segment: the cell that passed the section check last */
} S;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline i64 lowest_of(const S *s, i64 i, i64 mo) {
    if (mo == INF || !s->aligned) return mo;
    i64 a = s->align[i];
    return (mo + a - 1) / a * a; /* mo >= 0 */
}

static inline void set_minoff(S *s, i64 j, i64 v) {
    s->minoff[j] = v;
    s->xa[j] = lowest_of(s, j, v);
}

static i64 unpl_max(S *s) {
    if (s->udirty) {
        i64 mx = s->unpl[0];
        for (int k = 1; k < s->m; k++)
            if (s->unpl[k] > mx) mx = s->unpl[k];
        s->umax = mx;
        s->udirty = 0;
    }
    return s->umax;
}

/* Place buffer i at level (Python's place(): deepest-node mask, neighbours, profiles). */
static int place(S *s, i64 i, i64 level, i64 floor, i64 last) {
    if (s->depth >= s->deep) {
        s->deep = s->depth + 1;
        for (int j = 0; j < s->n; j++) s->deep_out[j] = s->minoff[j] != INF;
        s->deep_set = 1;
    }
    i64 sz = s->size[i], top = level + sz, a = s->lo[i], b = s->hi[i];
    if (vreserve(&s->undo, 5)) return NOMEM;
    i64 *u = s->undo.a + s->undo.len;
    u[0] = i;
    u[1] = floor;
    u[2] = last;
    u[3] = (i64)s->nb.len;
    u[4] = (i64)s->hs.len;
    s->undo.len += 5;
    if (s->nptr) {
        i64 p0 = s->nptr[i], p1 = s->nptr[i + 1];
        if (vreserve(&s->nb, 2 * (size_t)(p1 - p0))) return NOMEM;
        for (i64 p = p0; p < p1; p++) {
            i64 j = s->nidx[p];
            if (s->minoff[j] < top) {
                s->nb.a[s->nb.len++] = j;
                s->nb.a[s->nb.len++] = s->minoff[j];
            }
        }
    } else {
        i64 st = s->start[i], en = s->end[i];
        for (int j = 0; j < s->n; j++) {
            if (s->start[j] < en && s->end[j] > st && s->minoff[j] < top) {
                if (vreserve(&s->nb, 2)) return NOMEM;
                s->nb.a[s->nb.len++] = j;
                s->nb.a[s->nb.len++] = s->minoff[j];
            }
        }
    }
    if (s->height) {
        if (vreserve(&s->hs, (size_t)(b - a))) return NOMEM;
        for (i64 k = a; k < b; k++) {
            s->hs.a[s->hs.len++] = s->height[k];
            s->height[k] = top;
        }
    }
    for (i64 k = a; k < b; k++) s->unpl[k] -= sz;
    s->udirty = 1;
    if (s->cross)
        for (i64 k = a + 1; k < b; k++) s->cross[k] -= 1;
    for (size_t p = (size_t)s->undo.a[s->undo.len - 2]; p < s->nb.len; p += 2)
        set_minoff(s, s->nb.a[p], top);
    set_minoff(s, i, INF);
    s->off[i] = level;
    s->depth++;
    return 0;
}

/* Take back the last placement; its (floor, last) go to *floor, *last. */
static void unplace(S *s, i64 *floor, i64 *last) {
    s->undo.len -= 5;
    i64 *u = s->undo.a + s->undo.len;
    i64 i = u[0], a = s->lo[i], b = s->hi[i], sz = s->size[i];
    if (floor) *floor = u[1];
    if (last) *last = u[2];
    if (s->height) {
        size_t h0 = (size_t)u[4];
        for (i64 k = a; k < b; k++) s->height[k] = s->hs.a[h0 + (size_t)(k - a)];
        s->hs.len = h0;
    }
    for (i64 k = a; k < b; k++) s->unpl[k] += sz;
    s->udirty = 1;
    if (s->cross)
        for (i64 k = a + 1; k < b; k++) s->cross[k] += 1;
    size_t p0 = (size_t)u[3];
    for (size_t p = p0; p < s->nb.len; p += 2) set_minoff(s, s->nb.a[p], s->nb.a[p + 1]);
    s->nb.len = p0;
    s->depth--;
}

/* _candidates: push the (buffer, offset, rank) triples of the candidates onto s->cand, unsorted,
   and return their count (NOMEM when out of memory). The node takes them in (offset, rank) order
   with pick(), the first max_branch of them (s->truncated is set when there are more). Every
   (offset, rank) pair is distinct, so this is exactly numpy.lexsort's order, and the sorting is
   lazy: a node usually tries only a few of its candidates. */
static i64 candidates(S *s, i64 floor, i64 last, i64 pool_off, i64 np) {
    int use_pool = np >= 0; /* np < 0: every buffer */
    i64 cnt = use_pool ? np : s->n, mintop = INF;
    if (vreserve(&s->cand, 3 * (size_t)cnt)) return NOMEM;
    const i64 *pool = use_pool ? s->pool.a + pool_off : NULL;
    const i64 *xa = s->xa;
    if (s->dominance) /* the lowest top of any unplaced buffer */
        for (i64 t = 0; t < cnt; t++) {
            i64 i = use_pool ? pool[t] : t, x = xa[i];
            if (x != INF && x + s->size[i] < mintop) mintop = x + s->size[i];
        }
    i64 *out = s->cand.a + s->cand.len, q = 0;
    for (i64 t = 0; t < cnt; t++) {
        i64 i = use_pool ? pool[t] : t, x = xa[i];
        if (x == INF || x < floor || x >= mintop) continue; /* mintop is INF without dominance */
        i64 r = s->rank[i];
        if (x == floor && r <= last) continue;
        if (s->twin) {
            i64 tw = s->twin[i];
            if (tw >= 0 && xa[tw] != INF) continue;
        }
        out[3 * q] = i;
        out[3 * q + 1] = x;
        out[3 * q + 2] = r;
        q++;
    }
    s->cand.len += 3 * (size_t)q;
    if (s->max_branch >= 0 && q > s->max_branch) s->truncated = 1;
    return q;
}

/* The number of candidates a node with q of them tries at most (max_branch). */
static inline i64 branch_limit(const S *s, i64 q) {
    return s->max_branch >= 0 && q > s->max_branch ? s->max_branch : q;
}

/* Move the k-th smallest (offset, rank) of the node's triples c0..c0+q-1 (the first k already in
   order) to position k; returns a pointer to it (valid until s->cand grows). */
static i64 *pick(S *s, i64 c0, i64 q, i64 k) {
    i64 *a = s->cand.a + 3 * c0;
    i64 b = k;
    for (i64 t = k + 1; t < q; t++)
        if (a[3 * t + 1] < a[3 * b + 1] || (a[3 * t + 1] == a[3 * b + 1] && a[3 * t + 2] < a[3 * b + 2]))
            b = t;
    if (b != k)
        for (int f = 0; f < 3; f++) {
            i64 tmp = a[3 * k + f];
            a[3 * k + f] = a[3 * b + f];
            a[3 * b + f] = tmp;
        }
    return a + 3 * k;
}

/* _sections_fit with the floor applied on the segments [s0, s1) (all when within == 0): fails
   when on some segment with unplaced bytes left, max(floor, lowest skyline offset of a member)
   > target - left. The same answer, found faster: a segment passes as soon as one member's
   offset is <= target - left (the member that passed last time, its witness, is tried first). */
static int sections_fit(S *s, i64 floor, int within, i64 s0, i64 s1) {
    for (i64 j = 0; j < s->nsegs; j++) {
        i64 seg = s->segs[j], left = s->unpl[seg];
        if (left <= 0) continue;
        i64 thr = s->target - left;
        if ((!within || (seg >= s0 && seg < s1)) && floor > thr) return 0;
        if (s->xa[s->owner[s->wit[j]]] <= thr) continue;
        i64 c = s->at[j], c1 = s->at[j + 1];
        while (c < c1 && s->xa[s->owner[c]] > thr) c++;
        if (c == c1) return 0;
        s->wit[j] = c;
    }
    return 1;
}

/* The fallback of the plain search without cells: max(height, floor) + unplaced <= target. */
static int heights_fit(const S *s, i64 floor) {
    for (int k = 0; k < s->m; k++) {
        i64 left = s->unpl[k];
        if (left <= 0) continue;
        i64 h = s->height[k] > floor ? s->height[k] : floor;
        if (h + left > s->target) return 0;
    }
    return 1;
}

static inline int out_of_budget(S *s) {
    return s->used >= s->budget || ((s->used & s->every) == 0 && now_s() > s->deadline);
}

/* _Search.run without decomposition (an explicit stack of nodes). */
static int run_plain(S *s, i64 remaining) {
    i64 floor = 0, last = -1;
    Vec stk = {NULL, 0, 0}; /* per node: first candidate (triple index), tried, next, count */
    int ret = R_EXHAUSTED;
    i64 c0 = (i64)s->cand.len / 3;
    i64 q = candidates(s, floor, last, 0, -1);
    if (q < 0 || vreserve(&stk, 4)) { ret = NOMEM; goto done; }
    stk.a[0] = c0; stk.a[1] = branch_limit(s, q); stk.a[2] = 0; stk.a[3] = q;
    stk.len = 4;
    while (stk.len) {
        i64 *node = stk.a + stk.len - 4;
        i64 k = node[2];
        if (k >= node[1]) {
            s->cand.len = 3 * (size_t)node[0];
            stk.len -= 4;
            if (s->depth == 0) { ret = R_EXHAUSTED; goto done; }
            unplace(s, &floor, &last);
            remaining++;
            continue;
        }
        node[2] = k + 1;
        const i64 *cd = pick(s, node[0], node[3], k);
        i64 i = cd[0], level = cd[1];
        if (level + unpl_max(s) > s->target) {
            node[2] = node[1];
            continue;
        }
        if (level + s->size[i] > s->target) continue;
        if (out_of_budget(s)) { ret = R_BUDGET; goto done; }
        s->used++;
        if (place(s, i, level, floor, last)) { ret = NOMEM; goto done; }
        floor = level;
        last = s->rank[i];
        if (--remaining == 0) { ret = R_FOUND; goto done; }
        int ok = s->owner ? sections_fit(s, floor, 0, 0, 0) : heights_fit(s, floor);
        if (!ok) {
            unplace(s, &floor, &last);
            remaining++;
            continue;
        }
        c0 = (i64)s->cand.len / 3;
        q = candidates(s, floor, last, 0, -1);
        if (q < 0 || vreserve(&stk, 4)) { ret = NOMEM; goto done; }
        stk.a[stk.len] = c0; stk.a[stk.len + 1] = branch_limit(s, q); stk.a[stk.len + 2] = 0;
        stk.a[stk.len + 3] = q;
        stk.len += 4;
    }
done:
    free(stk.a);
    return ret;
}

/* The ranking key of _Search._keys: negative when buffer i ranks before buffer j. */
static int key_cmp(const S *s, i64 i, i64 j) {
    if (s->any_boost && s->boost[i] != s->boost[j]) return s->boost[i] > s->boost[j] ? -1 : 1;
    i64 wi = s->end[i] - s->start[i], wj = s->end[j] - s->start[j];
    i64 zi = s->size[i], zj = s->size[j];
    double ai = (double)wi * (double)zi, aj = (double)wj * (double)zj;
    i64 ci = s->cont[i], cj = s->cont[j];
#define DESC(u, v) \
    if ((u) != (v)) return (u) > (v) ? -1 : 1;
    switch (s->prio) {
    case P_CONT: DESC(ci, cj) DESC(ai, aj) DESC(wi, wj) break;
    case P_CONTW: DESC(ci, cj) DESC(wi, wj) DESC(ai, aj) break;
    case P_SIZE: DESC(zi, zj) DESC(wi, wj) break;
    case P_AREA: DESC(ai, aj) DESC(zi, zj) break;
    default: DESC(wi, wj) DESC(ai, aj) DESC(ci, cj) break;
    }
#undef DESC
    return (i > j) - (i < j);
}

/* Stable merge sort of a[0..k) by key_cmp (the key ends with the index: a total order). */
static void key_sort(const S *s, i64 *a, i64 k, i64 *tmp) {
    if (k < 2) return;
    if (k <= 16) {
        for (i64 t = 1; t < k; t++) {
            i64 v = a[t], u = t;
            while (u > 0 && key_cmp(s, a[u - 1], v) > 0) { a[u] = a[u - 1]; u--; }
            a[u] = v;
        }
        return;
    }
    i64 h = k / 2;
    key_sort(s, a, h, tmp);
    key_sort(s, a + h, k - h, tmp);
    i64 p = 0, q = h, o = 0;
    while (p < h && q < k) tmp[o++] = key_cmp(s, a[q], a[p]) < 0 ? a[q++] : a[p++];
    while (p < h) tmp[o++] = a[p++];
    while (q < k) tmp[o++] = a[q++];
    memcpy(a, tmp, (size_t)k * sizeof(i64));
}

static int dfs(S *s, i64 pool_off, i64 np, i64 s0, i64 s1, i64 floor, i64 last);

/* solve_range of _run_decomposed: 1 solved, 0 failed (placements taken back), STOP, NOMEM. */
static int solve_range(S *s, i64 pool_off, i64 np, i64 s0, i64 s1) {
    size_t base = s->pool.len;
    if (vreserve(&s->pool, (size_t)np + (size_t)(s1 - s0) + 1)) return NOMEM;
    for (i64 t = 0; t < np; t++) {
        i64 i = s->pool.a[pool_off + t];
        if (s->minoff[i] != INF) s->pool.a[s->pool.len++] = i;
    }
    i64 fp = (i64)base, fn = (i64)(s->pool.len - base);
    if (fn == 0) { s->pool.len = base; return 1; }
    i64 mark = s->depth;
    /* the bounds at entry: s0, the end points k in (s0, s1) no unplaced buffer crosses, s1 */
    i64 bp = (i64)s->pool.len;
    s->pool.a[s->pool.len++] = s0;
    for (i64 k = s0 + 1; k < s1; k++)
        if (s->cross[k] == 0) s->pool.a[s->pool.len++] = k;
    s->pool.a[s->pool.len++] = s1;
    i64 nb = (i64)s->pool.len - bp;
    for (i64 t = 0; t + 1 < nb; t++) {
        i64 a = s->pool.a[bp + t], e = s->pool.a[bp + t + 1];
        size_t pbase = s->pool.len;
        if (vreserve(&s->pool, (size_t)fn)) return NOMEM;
        for (i64 u = 0; u < fn; u++) {
            i64 i = s->pool.a[fp + u];
            if (s->lo[i] < e && s->hi[i] > a) s->pool.a[s->pool.len++] = i;
        }
        i64 po = (i64)pbase, pn = (i64)(s->pool.len - pbase);
        if (pn == 0) continue;
        size_t sbase = s->saved.len;
        if (vreserve(&s->saved, (size_t)pn)) return NOMEM;
        for (i64 u = 0; u < pn; u++) {
            i64 i = s->pool.a[po + u];
            s->saved.a[s->saved.len++] = s->rank[i];
            i64 c = s->unpl[s->lo[i]];
            for (i64 g = s->lo[i] + 1; g < s->hi[i]; g++)
                if (s->unpl[g] > c) c = s->unpl[g];
            s->cont[i] = c;
            s->sa[u] = i;
        }
        key_sort(s, s->sa, pn, s->sb);
        for (i64 u = 0; u < pn; u++) s->rank[s->sa[u]] = u;
        int r = dfs(s, po, pn, a, e, 0, -1);
        if (r < 0) return r;
        for (i64 u = 0; u < pn; u++) s->rank[s->pool.a[po + u]] = s->saved.a[sbase + (size_t)u];
        s->saved.len = sbase;
        s->pool.len = pbase;
        if (!r) {
            while (s->depth > mark) unplace(s, NULL, NULL);
            s->pool.len = base;
            return 0;
        }
    }
    s->pool.len = base;
    return 1;
}

/* dfs of _run_decomposed over the buffers pool (indices into s->pool) on segments [s0, s1). */
static int dfs(S *s, i64 pool_off, i64 np, i64 s0, i64 s1, i64 floor, i64 last) {
    int any = 0;
    for (i64 t = 0; t < np && !any; t++) any = s->xa[s->pool.a[pool_off + t]] != INF;
    if (!any) return 1;
    i64 c0 = (i64)s->cand.len / 3;
    i64 q = candidates(s, floor, last, pool_off, np);
    if (q < 0) return NOMEM;
    i64 lim = branch_limit(s, q);
    i64 mx = s->unpl[s0];
    for (i64 k = s0 + 1; k < s1; k++)
        if (s->unpl[k] > mx) mx = s->unpl[k];
    i64 room = s->target - mx;
    for (i64 t = 0; t < lim; t++) {
        const i64 *cd = pick(s, c0, q, t);
        i64 i = cd[0], level = cd[1];
        if (level > room) break;
        if (level + s->size[i] > s->target) continue;
        if (out_of_budget(s)) return STOP;
        s->used++;
        if (place(s, i, level, 0, 0)) return NOMEM;
        if (sections_fit(s, level, 1, s0, s1)) {
            i64 k0 = s->lo[i] + 1 > s0 + 1 ? s->lo[i] + 1 : s0 + 1;
            i64 k1 = s->hi[i] < s1 ? s->hi[i] : s1;
            int split = 0;
            for (i64 k = k0; k < k1 && !split; k++) split = s->cross[k] == 0;
            int r = split ? solve_range(s, pool_off, np, s0, s1)
                          : dfs(s, pool_off, np, s0, s1, level, s->rank[i]);
            if (r < 0) return r;
            if (r) {
                s->cand.len = 3 * (size_t)c0;
                return 1;
            }
        }
        unplace(s, NULL, NULL);
    }
    s->cand.len = 3 * (size_t)c0;
    return 0;
}

/* One probe. Returns R_FOUND, R_EXHAUSTED, R_BUDGET or NOMEM; *reset says whether the deepest-node
   bookkeeping was reset (Python resets it only after the two early returns). */
static int probe(S *s, int *reset) {
    int n = s->n, m = s->m;
    *reset = 0;
    i64 live = 0;
    for (int i = 0; i < n; i++) {
        s->off[i] = 0;
        live += s->size[i] > 0;
    }
    if (live == 0) return R_FOUND;
    for (int i = 0; i < n; i++) {
        s->minoff[i] = s->size[i] > 0 ? 0 : INF;
        s->xa[i] = s->minoff[i];
    }
    for (int k = 0; k <= m; k++) s->unpl[k] = 0;
    for (int i = 0; i < n; i++)
        if (s->size[i] > 0) {
            s->unpl[s->lo[i]] += s->size[i];
            s->unpl[s->hi[i]] -= s->size[i];
        }
    for (int k = 1; k < m; k++) s->unpl[k] += s->unpl[k - 1];
    s->unpl[m] = 0; /* unused tail */
    s->udirty = 1;
    if (unpl_max(s) > s->target) return R_EXHAUSTED;
    *reset = 1;
    s->deep = 0;
    s->deep_set = 0;
    s->depth = 0;
    if (!s->decompose) return run_plain(s, live);
    for (int k = 0; k <= m; k++) s->cross[k] = 0;
    for (int i = 0; i < n; i++)
        if (s->size[i] > 0) {
            s->cross[s->lo[i] + 1] += 1;
            s->cross[s->hi[i]] -= 1;
        }
    for (int k = 1; k <= m; k++) s->cross[k] += s->cross[k - 1];
    if (vreserve(&s->pool, (size_t)live)) return NOMEM;
    for (int i = 0; i < n; i++)
        if (s->size[i] > 0) s->pool.a[s->pool.len++] = i;
    int r = solve_range(s, 0, live, 0, m);
    if (r == STOP) return R_BUDGET;
    if (r == NOMEM) return NOMEM;
    return r ? R_FOUND : R_EXHAUSTED;
}

/* ---- Python interface ---- */

PyDoc_STRVAR(probe_doc,
"probe(tables, rank, boost, off, deep, target, budget, seconds) -> tuple\n\n"
"One probe of planners.telamalloc._Search.run (see the module source for the semantics).\n"
"tables = (sizes, starts, ends, alignments, lo, hi, nptr, nidx, owner, segs, at, twin, m,\n"
"priority, dominance, max_branch, aligned, decompose, has_nbrs, has_member, has_twin): int64\n"
"arrays (bytes, schedule steps, segment indices) and ints; rank, boost: int64 arrays of n;\n"
"off, deep: writable int64 arrays of n receiving the offsets (bytes) and the deepest node's\n"
"unplaced mask; target (bytes), budget (placements), seconds (wall-clock seconds left).\n"
"Returns (code, used, deep, deep_set, truncated, reset) with code 0 found, 1 exhausted,\n"
"2 budget. Raises TypeError/ValueError on malformed arrays, MemoryError. The GIL is released.");

/* 1 if every a[0..len) lies in [lo, hi), else 0 with a ValueError naming the array. */
static int indices_in_range(const i64 *a, Py_ssize_t len, i64 lo, i64 hi, const char *what) {
    for (Py_ssize_t p = 0; p < len; p++)
        if (a[p] < lo || a[p] >= hi) {
            PyErr_Format(PyExc_ValueError, "%s: index out of range", what);
            return 0;
        }
    return 1;
}

static PyObject *py_probe(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tables, *o_rank, *o_boost, *o_off, *o_deep;
    long long target, budget;
    double seconds;
    if (!PyArg_ParseTuple(args, "O!OOOOLLd:probe", &PyTuple_Type, &tables, &o_rank, &o_boost,
                          &o_off, &o_deep, &target, &budget, &seconds))
        return NULL;
    if (PyTuple_GET_SIZE(tables) != 21) {
        PyErr_SetString(PyExc_ValueError, "tables: expected 21 items");
        return NULL;
    }
    long long iv[9];
    for (int k = 0; k < 9; k++) {
        iv[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(tables, 12 + k));
        if (iv[k] == -1 && PyErr_Occurred()) return NULL;
    }
    enum { NV = 16 };
    Py_buffer v[NV];
    const char *names[NV] = {"sizes", "starts", "ends", "alignments", "lo", "hi", "nptr",
                             "nidx", "owner", "segs", "at", "twin", "rank", "boost", "off",
                             "deep"};
    PyObject *objs[NV];
    for (int k = 0; k < 12; k++) objs[k] = PyTuple_GET_ITEM(tables, k);
    objs[12] = o_rank; objs[13] = o_boost; objs[14] = o_off; objs[15] = o_deep;
    int got = 0;
    PyObject *result = NULL;
    Py_ssize_t n = -1;
    S s;
    memset(&s, 0, sizeof s);
    for (; got < NV; got++) {
        Py_ssize_t want = (got < 6 || got >= 12) ? n : -1;
        if (got == 6) want = iv[6] ? n + 1 : -1;
        if (get_i64_view(objs[got], &v[got], got >= 14, names[got], &want)) goto done;
        if (got == 0) n = v[0].len / 8;
    }
    i64 m = iv[0];
    if (n > INT_MAX - 1 || m < 1 || m > INT_MAX - 2) {
        PyErr_SetString(PyExc_ValueError, "problem too large or no end points");
        goto done;
    }
    s.n = (int)n;
    s.m = (int)m;
    s.size = v[0].buf; s.start = v[1].buf; s.end = v[2].buf; s.align = v[3].buf;
    s.lo = v[4].buf; s.hi = v[5].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s.lo[i] < 0 || s.hi[i] > m - 1 || s.lo[i] >= s.hi[i] || s.size[i] < 0 ||
            s.align[i] < 1) {
            PyErr_Format(PyExc_ValueError, "buffer %zd: bad segments, size or alignment", i);
            goto done;
        }
    }
    s.prio = (int)iv[1];
    s.dominance = (int)iv[2];
    s.max_branch = iv[3];
    s.aligned = (int)iv[4];
    s.decompose = (int)iv[5];
    if (iv[6]) {
        s.nptr = v[6].buf;
        s.nidx = v[7].buf;
        Py_ssize_t nn = v[7].len / 8;
        for (Py_ssize_t i = 0; i < n; i++)
            if (s.nptr[i] < 0 || s.nptr[i] > s.nptr[i + 1] || s.nptr[i + 1] > nn) {
                PyErr_SetString(PyExc_ValueError, "nptr: not a CSR pointer array");
                goto done;
            }
        if (!indices_in_range(s.nidx, nn, 0, n, "nidx")) goto done;
    }
    if (iv[7]) {
        s.owner = v[8].buf;
        s.segs = v[9].buf;
        s.at = v[10].buf;
        s.nsegs = v[9].len / 8;
        Py_ssize_t nc = v[8].len / 8;
        if (v[10].len / 8 != s.nsegs + 1 || s.at[0] != 0 || s.at[s.nsegs] != nc) {
            PyErr_SetString(PyExc_ValueError, "at: expected nsegs + 1 cell bounds");
            goto done;
        }
        for (i64 j = 0; j < s.nsegs; j++)
            if (s.segs[j] < 0 || s.segs[j] >= m || s.at[j] > s.at[j + 1]) {
                PyErr_SetString(PyExc_ValueError, "segs/at: malformed");
                goto done;
            }
        if (!indices_in_range(s.owner, nc, 0, n, "owner")) goto done;
    } else if (s.decompose) {
        PyErr_SetString(PyExc_ValueError, "decompose needs the cell table");
        goto done;
    }
    if (iv[8]) {
        if (v[11].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "twin: length n expected");
            goto done;
        }
        s.twin = v[11].buf;
        if (!indices_in_range(s.twin, n, -1, n, "twin")) goto done; /* -1: no twin */
    }
    s.boost = v[13].buf;
    for (Py_ssize_t i = 0; i < n; i++) s.any_boost |= s.boost[i] != 0;
    s.off = v[14].buf;
    s.deep_out = v[15].buf;
    s.target = target;
    s.budget = budget;
    s.every = (s.decompose || n <= 2000) ? 63 : 0;
    size_t nn1 = (size_t)n + 1, mm = (size_t)m + 1;
    s.rank = malloc(nn1 * sizeof(i64));
    s.minoff = malloc(nn1 * sizeof(i64));
    s.xa = malloc(nn1 * sizeof(i64));
    s.cont = malloc(nn1 * sizeof(i64));
    s.sa = malloc(nn1 * sizeof(i64));
    s.sb = malloc(nn1 * sizeof(i64));
    s.unpl = malloc(mm * sizeof(i64));
    if (s.owner) {
        s.wit = malloc(((size_t)s.nsegs + 1) * sizeof(i64));
        if (!s.wit) { PyErr_NoMemory(); goto done; }
        for (i64 j = 0; j < s.nsegs; j++) s.wit[j] = s.at[j];
        for (i64 j = 0; j < s.nsegs; j++)
            if (s.at[j] >= s.at[j + 1]) {
                PyErr_SetString(PyExc_ValueError, "at: a segment without cells");
                goto done;
            }
    }
    if (!s.decompose && !s.owner) s.height = calloc(mm, sizeof(i64));
    if (s.decompose) s.cross = malloc(mm * sizeof(i64));
    if (!s.rank || !s.minoff || !s.xa || !s.cont || !s.sa || !s.sb || !s.unpl ||
        (!s.decompose && !s.owner && !s.height) || (s.decompose && !s.cross)) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(s.rank, v[12].buf, (size_t)n * sizeof(i64));
    int code, reset;
    Py_BEGIN_ALLOW_THREADS
    s.deadline = now_s() + seconds;
    code = probe(&s, &reset);
    Py_END_ALLOW_THREADS
    if (code == NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(iLLiii)", code, (long long)s.used, (long long)s.deep, s.deep_set,
                           s.truncated, reset);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    free(s.rank); free(s.minoff); free(s.xa); free(s.cont); free(s.sa); free(s.sb);
    free(s.unpl); free(s.height); free(s.cross); free(s.wit);
    free(s.undo.a); free(s.nb.a); free(s.hs.a); free(s.cand.a); free(s.pool.a); free(s.saved.a);
    return result;
}

static PyMethodDef methods[] = {
    {"probe", (PyCFunction)py_probe, METH_VARARGS, probe_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_telamalloc",
    "Compiled probe of planners.telamalloc (the canonical skyline search of _Search.run).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__telamalloc(void) { return PyModule_Create(&module); }
