/*
 * _validate: the compiled overlap sweep of planners.validate (C99, CPython extension).
 *
 * It answers one question for the independent plan validator: do two buffers of non-zero size
 * that are live at a common schedule step overlap in address? Lifetimes are half-open
 * [start, end) in steps, address ranges [offset, offset + size) in bytes. It shares no code with
 * any planner (planners/_ext/_greedy.c and the others): its own sorts, its own ordered set.
 *
 * Method: a sweep over time. The events (every buffer's end and start) are sorted by step, ends
 * before starts at the same step (so [0, 2) and [2, 4) never meet): one stable LSD radix sort of
 * the ends followed by the starts. The live buffers form an ordered set by address: the buffers
 * are ranked once by (offset, index) (a second radix sort), and the live set is a bit set over
 * those ranks with a 64-ary summary tree, so the live buffer just below or just above a rank is
 * found in O(log_64 n) word operations. As long as no overlap has been found the live ranges are
 * disjoint, and then a starting buffer overlaps a live one iff it overlaps its predecessor or its
 * successor in address order; the sweep stops at the first overlap. O(n) sorting and
 * O(n log_64 n) sweeping in total, about 100 bytes per buffer of memory; no pair list.
 *
 * max_live() gives the lower bound of planners.bounds (the maximum over steps of the live bytes)
 * with the same event sort and a running sum (an overflow of 2**63 - 1 raises, never wraps).
 *
 * The caller (planners.validate) has checked that every offset is >= 0 and offset + size <=
 * 2**63 - 1; this module re-checks both and raises ValueError otherwise, so no i64 sum wraps.
 * The GIL is released during the sweep.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "int64_view.h"

typedef long long i64;
typedef unsigned long long u64;

/* ---- stable LSD radix sort of (key, item) pairs by the unsigned key ---- */
typedef struct { u64 key; i64 item; } Pair;

/* Sorts p[0..m) by key, stable; tmp has room for m pairs. Returns the array holding the result. */
static Pair *radix(Pair *p, Pair *tmp, i64 m) {
    if (m < 2) return p;
    u64 lo = p[0].key, hi = p[0].key;
    for (i64 q = 1; q < m; q++) {
        if (p[q].key < lo) lo = p[q].key;
        if (p[q].key > hi) hi = p[q].key;
    }
    int passes = 0;
    for (u64 r = hi - lo; r; r >>= 11) passes++;
    static const int W = 11;
    size_t *cnt = (size_t *)malloc(sizeof(size_t) << W);
    if (!cnt) return NULL;
    Pair *src = p, *dst = tmp;
    for (int d = 0; d < passes; d++) {
        const int sh = W * d;
        memset(cnt, 0, sizeof(size_t) << W);
        for (i64 q = 0; q < m; q++) cnt[((src[q].key - lo) >> sh) & ((1u << W) - 1)]++;
        size_t sum = 0;
        for (int b = 0; b < (1 << W); b++) { size_t t = cnt[b]; cnt[b] = sum; sum += t; }
        for (i64 q = 0; q < m; q++) dst[cnt[((src[q].key - lo) >> sh) & ((1u << W) - 1)]++] = src[q];
        Pair *t = src; src = dst; dst = t;
    }
    free(cnt);
    return src;
}

/* ---- a bit set over 0..m-1 with a 64-ary summary tree (predecessor / successor) ---- */
enum { MAXLEV = 8 };
typedef struct { int levels; u64 *w[MAXLEV]; i64 len[MAXLEV]; } BitTree;

static int bt_init(BitTree *t, i64 m) {
    memset(t, 0, sizeof *t);
    i64 len = m;
    do {
        len = (len + 63) / 64;
        if (t->levels == MAXLEV) return -1;
        t->len[t->levels] = len;
        t->w[t->levels] = (u64 *)calloc((size_t)len, sizeof(u64));
        if (!t->w[t->levels]) return -1;
        t->levels++;
    } while (len > 1);
    return 0;
}

static void bt_free(BitTree *t) {
    for (int l = 0; l < t->levels; l++) free(t->w[l]);
}

static void bt_set(BitTree *t, i64 x) {
    for (int l = 0; l < t->levels; l++, x >>= 6) {
        u64 *w = &t->w[l][x >> 6];
        const u64 bit = (u64)1 << (x & 63);
        const int was_empty = *w == 0;
        *w |= bit;
        if (!was_empty) break; /* the summary bits above are already set */
    }
}

static void bt_clear(BitTree *t, i64 x) {
    for (int l = 0; l < t->levels; l++, x >>= 6) {
        u64 *w = &t->w[l][x >> 6];
        *w &= ~((u64)1 << (x & 63));
        if (*w) break; /* the word still holds a member: the summary stays */
    }
}

static inline int low_bit(u64 v) { return __builtin_ctzll(v); }
static inline int high_bit(u64 v) { return 63 - __builtin_clzll(v); }

/* The largest member < x, or -1. */
static i64 bt_prev(const BitTree *t, i64 x) {
    int l = 0;
    for (; l < t->levels; l++, x >>= 6) {
        if ((x & 63) == 0) continue;
        const u64 v = t->w[l][x >> 6] & (((u64)1 << (x & 63)) - 1);
        if (v) { x = (x & ~(i64)63) | high_bit(v); break; }
    }
    if (l == t->levels) return -1;
    for (; l > 0; l--) x = (x << 6) | high_bit(t->w[l - 1][x]);
    return x;
}

/* The smallest member > x, or -1. */
static i64 bt_next(const BitTree *t, i64 x) {
    int l = 0;
    for (; l < t->levels; l++, x >>= 6) {
        if ((x & 63) == 63) continue;
        if ((x >> 6) >= t->len[l]) return -1;
        const u64 v = t->w[l][x >> 6] & ~((((u64)1 << (x & 63)) << 1) - 1);
        if (v) { x = (x & ~(i64)63) | low_bit(v); break; }
    }
    if (l == t->levels) return -1;
    for (; l > 0; l--) x = (x << 6) | low_bit(t->w[l - 1][x]);
    return x;
}

/* ---- the sweep ---- */
typedef struct { i64 lo, hi; } Range;

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

enum { FREE_OF_OVERLAP = 0, OVERLAP = 1, NOMEM = 2 };

/* Returns FREE_OF_OVERLAP or OVERLAP (*a, *b: the first pair found, buffer indices), or NOMEM. */
static int sweep(i64 n, const i64 *st, const i64 *en, const i64 *off, const i64 *sz,
                 i64 *a, i64 *b) {
    const u64 flip = (u64)1 << 63; /* signed order as unsigned */
    int status = NOMEM;
    i64 m = 0;
    for (i64 i = 0; i < n; i++) m += sz[i] > 0;
    if (m < 2) return FREE_OF_OVERLAP;
    Pair *p = (Pair *)malloc(sizeof(Pair) * (size_t)(2 * m));
    Pair *tmp = (Pair *)malloc(sizeof(Pair) * (size_t)(2 * m));
    i64 *rank = (i64 *)malloc(sizeof(i64) * (size_t)n);
    i64 *who = (i64 *)malloc(sizeof(i64) * (size_t)m); /* buffer of each rank */
    Range *rng = (Range *)malloc(sizeof(Range) * (size_t)m); /* address range of each rank */
    BitTree live;
    int tree_ok = 0;
    if (!p || !tmp || !rank || !who || !rng) goto done;
    /* ranks by (offset, index): the radix sort is stable and the items are in index order; the
       address range of each rank [lo, hi) is kept by rank, so the sweep reads only the ranks */
    i64 q = 0;
    for (i64 i = 0; i < n; i++)
        if (sz[i] > 0) { p[q].key = (u64)off[i]; p[q].item = i; q++; }
    Pair *by_off = radix(p, tmp, m);
    if (!by_off) goto done;
    for (i64 r = 0; r < m; r++) {
        const i64 i = by_off[r].item;
        who[r] = i; rank[i] = r; rng[r].lo = (i64)by_off[r].key; rng[r].hi = off[i] + sz[i];
    }
    /* events: ends (item 2 rank) then starts (item 2 rank + 1), stably by step */
    q = 0;
    for (i64 i = 0; i < n; i++)
        if (sz[i] > 0) { p[q].key = (u64)en[i] ^ flip; p[q].item = 2 * rank[i]; q++; }
    for (i64 i = 0; i < n; i++)
        if (sz[i] > 0) { p[q].key = (u64)st[i] ^ flip; p[q].item = 2 * rank[i] + 1; q++; }
    Pair *ev = radix(p, tmp, 2 * m);
    if (!ev) goto done;
    if (bt_init(&live, m)) { bt_free(&live); goto done; }
    tree_ok = 1;
    status = FREE_OF_OVERLAP;
    for (i64 k = 0; k < 2 * m; k++) {
        if (k + 16 < 2 * m) { /* the ranks come in a random order: fetch ahead */
            const i64 f = ev[k + 16].item >> 1;
            PREFETCH(&rng[f]);
            PREFETCH(&live.w[0][f >> 6]);
        }
        const i64 r = ev[k].item >> 1;
        if (!(ev[k].item & 1)) { bt_clear(&live, r); continue; }
        const i64 pr = bt_prev(&live, r), nx = bt_next(&live, r);
        if (pr >= 0 && rng[pr].hi > rng[r].lo) {
            *a = who[pr]; *b = who[r]; status = OVERLAP; break;
        }
        if (nx >= 0 && rng[r].hi > rng[nx].lo) {
            *a = who[nx]; *b = who[r]; status = OVERLAP; break;
        }
        bt_set(&live, r);
    }
done:
    if (tree_ok) bt_free(&live);
    free(p); free(tmp); free(rank); free(who); free(rng);
    return status;
}

PyDoc_STRVAR(overlap_doc,
"first_overlap(*, starts, ends, offsets, sizes) -> None or (i, j)\n\n"
"None when no two buffers of non-zero size live at a common step (half-open lifetimes\n"
"[start, end), steps) overlap in address ([offset, offset + size), bytes); else the indices of\n"
"the first overlapping pair the sweep meets (j starts while i is live). All arrays are\n"
"C-contiguous int64 of length n. Raises ValueError for a negative offset or size, an offset +\n"
"size above 2**63 - 1, or an empty lifetime. O(n log_64 n) after two O(n) radix sorts; the GIL\n"
"is released during the sweep.");

static PyObject *py_first_overlap(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"starts", "ends", "offsets", "sizes", NULL};
    PyObject *objs[4];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOO:first_overlap", kwlist, &objs[0],
                                     &objs[1], &objs[2], &objs[3]))
        return NULL;
    const char *names[4] = {"starts", "ends", "offsets", "sizes"};
    Py_buffer v[4];
    Py_ssize_t n = -1;
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++)
        if (get_i64_view(objs[got], &v[got], 0, names[got], &n)) goto done;
    const i64 *st = (const i64 *)v[0].buf, *en = (const i64 *)v[1].buf;
    const i64 *off = (const i64 *)v[2].buf, *sz = (const i64 *)v[3].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i] < 0 || sz[i] < 0 || off[i] > LLONG_MAX - sz[i] || en[i] <= st[i]) {
            PyErr_Format(PyExc_ValueError, "buffer %zd: offset %lld, size %lld, lifetime [%lld, "
                         "%lld): need offset, size >= 0, offset + size <= 2**63 - 1 and start < "
                         "end", i, off[i], sz[i], st[i], en[i]);
            goto done;
        }
    }
    i64 a = -1, b = -1;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = sweep((i64)n, st, en, off, sz, &a, &b);
    Py_END_ALLOW_THREADS
    if (status == NOMEM) { PyErr_NoMemory(); goto done; }
    if (status == OVERLAP) result = Py_BuildValue("(LL)", a, b);
    else { result = Py_None; Py_INCREF(result); }
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- max live bytes ---- */

/* The maximum over steps of the bytes live (sizes of the buffers with start <= t < end): the
   events sorted as in sweep() (ends before starts at one step), a running sum. Returns 0, 1 when a
   sum exceeds 2**63 - 1 (never wrapped), 2 when out of memory. */
static int max_live(i64 n, const i64 *st, const i64 *en, const i64 *sz, i64 *out) {
    const u64 flip = (u64)1 << 63;
    *out = 0;
    if (n == 0) return 0;
    Pair *p = (Pair *)malloc(sizeof(Pair) * (size_t)(2 * n));
    Pair *tmp = (Pair *)malloc(sizeof(Pair) * (size_t)(2 * n));
    int status = 2;
    if (!p || !tmp) goto done;
    i64 q = 0;
    for (i64 i = 0; i < n; i++) { p[q].key = (u64)en[i] ^ flip; p[q].item = -sz[i]; q++; }
    for (i64 i = 0; i < n; i++) { p[q].key = (u64)st[i] ^ flip; p[q].item = sz[i]; q++; }
    Pair *ev = radix(p, tmp, 2 * n);
    if (!ev) goto done;
    i64 live = 0, best = 0;
    status = 0;
    for (i64 k = 0; k < 2 * n; k++) {
        if (__builtin_add_overflow(live, ev[k].item, &live)) { status = 1; break; }
        if (live > best) best = live;
    }
    *out = best;
done:
    free(p); free(tmp);
    return status;
}

PyDoc_STRVAR(max_live_doc,
"max_live(*, starts, ends, sizes) -> int\n\n"
"The maximum over schedule steps of the live bytes: the sum of the sizes of the buffers with\n"
"start <= t < end (half-open lifetimes, steps; sizes in bytes, >= 0). 0 for no buffers. Events\n"
"sorted by one O(n) radix sort (ends before starts at a step), then a running sum. Raises\n"
"ValueError for a negative size or an empty lifetime, OverflowError when a live sum exceeds\n"
"2**63 - 1 (never a wrapped number). The GIL is released.");

static PyObject *py_max_live(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"starts", "ends", "sizes", NULL};
    PyObject *objs[3];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOO:max_live", kwlist, &objs[0], &objs[1],
                                     &objs[2]))
        return NULL;
    const char *names[3] = {"starts", "ends", "sizes"};
    Py_buffer v[3];
    Py_ssize_t n = -1;
    int got = 0;
    PyObject *result = NULL;
    for (; got < 3; got++)
        if (get_i64_view(objs[got], &v[got], 0, names[got], &n)) goto done;
    const i64 *st = (const i64 *)v[0].buf, *en = (const i64 *)v[1].buf;
    const i64 *sz = (const i64 *)v[2].buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (sz[i] < 0 || en[i] <= st[i]) {
            PyErr_Format(PyExc_ValueError, "buffer %zd: size %lld, lifetime [%lld, %lld): need "
                         "size >= 0 and start < end", i, sz[i], st[i], en[i]);
            goto done;
        }
    i64 best = 0;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = max_live((i64)n, st, en, sz, &best);
    Py_END_ALLOW_THREADS
    if (status == 2) { PyErr_NoMemory(); goto done; }
    if (status == 1) {
        PyErr_SetString(PyExc_OverflowError, "max_live: the live bytes exceed 2**63 - 1");
        goto done;
    }
    result = PyLong_FromLongLong(best);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"max_live", (PyCFunction)(void (*)(void))py_max_live, METH_VARARGS | METH_KEYWORDS,
     max_live_doc},
    {"first_overlap", (PyCFunction)(void (*)(void))py_first_overlap,
     METH_VARARGS | METH_KEYWORDS, overlap_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_validate",
    "Compiled overlap sweep of planners.validate and max live bytes of planners.bounds.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__validate(void) { return PyModule_Create(&module); }
