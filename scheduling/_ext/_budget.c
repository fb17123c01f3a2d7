/*
 * _budget.c: the compiled engine of the order decision ("is there an operator order with peak
 * <= B bytes?") used by scheduling/schedulers/bounds.py (ClosureCut) and
 * scheduling/schedulers/budget_search.py (BudgetSearch). C99, CPython API only.
 *
 * Two types:
 *
 *   Net(n, A, alloc, pos, inf, tails, heads, caps, force0, ban0)
 *       The closure-bound flow network of bounds.ClosureCut (bound 4): the arcs as ClosureCut
 *       builds them (int64 arrays), the ancestor matrix A (n*n bytes, A[v*n+u] = u is an
 *       ancestor of v), the forcing arcs source->x_u at force0+u and x_u->sink at ban0+u.
 *       Net.value(v, forced, banned, largest) -> (C, D bytes): the least live bytes at v's step
 *       over the down-sets D holding forced and v's ancestors, avoiding banned, v and its
 *       descendants; D the smallest (source side of the minimum cut) or the largest such set.
 *       A maximum flow by Dinic's algorithm; the two sides of a minimum cut are unique, so they
 *       are the sets OR-Tools' push-relabel gives (tests/test_budget_engine.py checks it).
 *
 *   Search(net, ...)
 *       The depth-first search of budget_search.BudgetSearch.probe: the same states in the same
 *       order, the same floors, witnesses, pools and memo (its module docstring has the method
 *       and the proof); the Python class is the reference and the tests compare the two probe
 *       by probe (status, order, bound, states, flows).
 *
 * Byte counts are int64; the network's capacities stay below 2**61 (ClosureCut checks it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int64_t i64;
typedef uint64_t u64;

/* ------------------------------------------------------------------------------------------ */
/* argument helpers                                                                            */

/* A C-contiguous buffer of `itemsize`-byte items; *len set to the item count. */
static int get_buf(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what,
                   Py_ssize_t *len) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous buffer", what);
        return -1;
    }
    if (view->itemsize != itemsize && !(itemsize == 1)) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    if (view->len % itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: length not a multiple of %zd", what, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    *len = view->len / itemsize;
    return 0;
}

/* Copy an int64 buffer of exactly `want` items (want < 0: any) into a new malloc'ed array. */
static i64 *copy_i64(PyObject *obj, const char *what, Py_ssize_t want, Py_ssize_t *got) {
    Py_buffer v;
    Py_ssize_t len;
    if (get_buf(obj, &v, 8, what, &len) < 0) return NULL;
    if (want >= 0 && len != want) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd, expected %zd", what, len, want);
        PyBuffer_Release(&v);
        return NULL;
    }
    i64 *out = (i64 *)malloc(sizeof(i64) * (size_t)(len ? len : 1));
    if (!out) {
        PyBuffer_Release(&v);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, v.buf, sizeof(i64) * (size_t)len);
    PyBuffer_Release(&v);
    if (got) *got = len;
    return out;
}

/* Copy a byte buffer (numpy bool) of exactly `want` items into a new malloc'ed array. */
static uint8_t *copy_u8(PyObject *obj, const char *what, Py_ssize_t want) {
    Py_buffer v;
    Py_ssize_t len;
    if (get_buf(obj, &v, 1, what, &len) < 0) return NULL;
    if (len != want) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd, expected %zd", what, len, want);
        PyBuffer_Release(&v);
        return NULL;
    }
    uint8_t *out = (uint8_t *)malloc((size_t)(want ? want : 1));
    if (!out) {
        PyBuffer_Release(&v);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, v.buf, (size_t)want);
    for (Py_ssize_t i = 0; i < want; i++) out[i] = out[i] ? 1 : 0;
    PyBuffer_Release(&v);
    return out;
}

static double now_seconds(void) { /* the callers pass seconds left, not a time of this clock */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------------------------ */
/* Net: the closure flow network and Dinic's maximum flow                                      */
/*
 * The network of bounds.ClosureCut: node 0 the source, 1 the sink, 2+u operator u, then one node
 * per freeable tensor y (source -> y of the tensor's bytes, y -> each reader: infinite), u ->
 * each predecessor p (infinite), u -> sink (w[u] = alloc - dead), and the forcing arcs. A solve
 * with operators `fin` forced in and `out` kept out works on the network with fin contracted
 * into the source and out into the sink: an operator of fin is on the source side of every
 * finite cut (infinite arc from the source) and one of out on the sink side; a tensor with a
 * reader in out is on the sink side (its bytes are a constant of the cut), a tensor all of whose
 * readers are in fin costs nothing on the source side. What is left is the free operators
 * (neither forced nor kept out), the tensors with a free reader and no reader kept out, and the
 * arcs among them; the minimum cuts of the two networks are the same operator sets, so the
 * smallest and largest source sides are read from the small one's residual network.
 */

typedef struct {
    PyObject_HEAD
    int n;           /* operators */
    int nt;          /* freeable tensors (nodes n+2 ..) */
    i64 inf, pos;
    i64 *alloc;      /* n */
    i64 *w;          /* n: bytes of u -> sink */
    uint8_t *anc;    /* n*n: anc[v*n+u] = u is a strict ancestor of v */
    int *pred_ptr, *pred;   /* operator -> predecessors (CSR) */
    i64 *tsize;             /* nt */
    int *tc_ptr, *tc;       /* tensor -> readers (CSR) */
    /* the small network of one solve */
    int cap_nodes, cap_arcs;
    int *lid;               /* n: local node of a free operator, else -1 */
    int *tail, *to;         /* arcs (forward 2i, reverse 2i+1) */
    i64 *r;
    int *adj_start, *adj, *fill, *level, *it, *queue;
    uint8_t *fin, *out, *mark;
} Net;

static void net_dealloc(Net *self) {
    void *ps[] = {self->alloc, self->w, self->anc, self->pred_ptr, self->pred, self->tsize,
                  self->tc_ptr, self->tc, self->lid, self->tail, self->to, self->r,
                  self->adj_start, self->adj, self->fill, self->level, self->it, self->queue,
                  self->fin, self->out, self->mark};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) free(ps[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int net_init(Net *self, PyObject *args, PyObject *kwds) {
    int n, force0, ban0;
    long long pos, inf;
    PyObject *A_obj, *alloc_obj, *tails_obj, *heads_obj, *caps_obj;
    if (!PyArg_ParseTuple(args, "iOOLLOOOii", &n, &A_obj, &alloc_obj, &pos, &inf, &tails_obj,
                          &heads_obj, &caps_obj, &force0, &ban0))
        return -1;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "Net: n < 0");
        return -1;
    }
    self->n = n;
    self->pos = pos;
    self->inf = inf;
    self->anc = copy_u8(A_obj, "A", (Py_ssize_t)n * n);
    if (!self->anc) return -1;
    self->alloc = copy_i64(alloc_obj, "alloc", n, NULL);
    if (!self->alloc) return -1;
    Py_ssize_t na, nh, nc;
    i64 *tails = copy_i64(tails_obj, "tails", -1, &na);
    if (!tails) return -1;
    i64 *heads = copy_i64(heads_obj, "heads", na, &nh);
    i64 *caps = heads ? copy_i64(caps_obj, "caps", na, &nc) : NULL;
    int rc = -1;
    int *cnt_p = NULL, *cnt_t = NULL;
    if (!heads || !caps) goto done;
    int N = n + 2;
    for (Py_ssize_t i = 0; i < na; i++) {
        if (tails[i] < 0 || heads[i] < 0 || caps[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "Net: negative node or capacity");
            goto done;
        }
        if (tails[i] + 1 > N) N = (int)tails[i] + 1;
        if (heads[i] + 1 > N) N = (int)heads[i] + 1;
    }
    int nt = N - n - 2;
    self->nt = nt;
    self->w = (i64 *)calloc((size_t)(n ? n : 1), sizeof(i64));
    self->tsize = (i64 *)calloc((size_t)(nt ? nt : 1), sizeof(i64));
    self->pred_ptr = (int *)calloc((size_t)n + 1, sizeof(int));
    self->tc_ptr = (int *)calloc((size_t)nt + 1, sizeof(int));
    cnt_p = (int *)calloc((size_t)n + 1, sizeof(int));
    cnt_t = (int *)calloc((size_t)nt + 1, sizeof(int));
    if (!self->w || !self->tsize || !self->pred_ptr || !self->tc_ptr || !cnt_p || !cnt_t) {
        PyErr_NoMemory();
        goto done;
    }
    /* classify the arcs (the forcing arcs, force0 .. force0+n and ban0 .. ban0+n, are not part
     * of the network: the solve contracts instead) */
    int npred = 0, ntc = 0;
    for (Py_ssize_t i = 0; i < na; i++) {
        if ((i >= force0 && i < force0 + n) || (i >= ban0 && i < ban0 + n)) continue;
        i64 a = tails[i], h = heads[i];
        int a_op = a >= 2 && a < n + 2, h_op = h >= 2 && h < n + 2;
        if (a_op && h_op) {
            self->pred_ptr[a - 2 + 1]++;
            npred++;
        } else if (a == 0 && h >= n + 2) {
            self->tsize[h - n - 2] += caps[i];
        } else if (a >= n + 2 && h_op) {
            self->tc_ptr[a - n - 2 + 1]++;
            ntc++;
        } else if (a_op && h == 1) {
            self->w[a - 2] += caps[i];
        } else {
            PyErr_Format(PyExc_ValueError, "Net: arc %zd (%lld -> %lld) is not of the closure "
                         "network", i, (long long)a, (long long)h);
            goto done;
        }
    }
    for (int u = 0; u < n; u++) self->pred_ptr[u + 1] += self->pred_ptr[u];
    for (int y = 0; y < nt; y++) self->tc_ptr[y + 1] += self->tc_ptr[y];
    self->pred = (int *)malloc(sizeof(int) * (size_t)(npred ? npred : 1));
    self->tc = (int *)malloc(sizeof(int) * (size_t)(ntc ? ntc : 1));
    if (!self->pred || !self->tc) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(cnt_p, self->pred_ptr, sizeof(int) * (size_t)(n + 1));
    memcpy(cnt_t, self->tc_ptr, sizeof(int) * (size_t)(nt + 1));
    for (Py_ssize_t i = 0; i < na; i++) {
        if ((i >= force0 && i < force0 + n) || (i >= ban0 && i < ban0 + n)) continue;
        i64 a = tails[i], h = heads[i];
        int a_op = a >= 2 && a < n + 2, h_op = h >= 2 && h < n + 2;
        if (a_op && h_op) self->pred[cnt_p[a - 2]++] = (int)(h - 2);
        else if (a >= n + 2 && h_op) self->tc[cnt_t[a - n - 2]++] = (int)(h - 2);
    }
    /* the small network's arrays, at their largest */
    int cn = N, ca = 2 * (nt + ntc + n + npred) + 2;
    self->cap_nodes = cn;
    self->cap_arcs = ca;
    self->lid = (int *)malloc(sizeof(int) * (size_t)(n ? n : 1));
    self->tail = (int *)malloc(sizeof(int) * (size_t)ca);
    self->to = (int *)malloc(sizeof(int) * (size_t)ca);
    self->r = (i64 *)malloc(sizeof(i64) * (size_t)ca);
    self->adj = (int *)malloc(sizeof(int) * (size_t)ca);
    self->adj_start = (int *)malloc(sizeof(int) * (size_t)(cn + 1));
    self->fill = (int *)malloc(sizeof(int) * (size_t)(cn + 1));
    self->level = (int *)malloc(sizeof(int) * (size_t)cn);
    self->it = (int *)malloc(sizeof(int) * (size_t)cn);
    self->queue = (int *)malloc(sizeof(int) * (size_t)cn);
    self->mark = (uint8_t *)malloc((size_t)cn);
    self->fin = (uint8_t *)malloc((size_t)(n ? n : 1));
    self->out = (uint8_t *)malloc((size_t)(n ? n : 1));
    if (!self->lid || !self->tail || !self->to || !self->r || !self->adj || !self->adj_start ||
        !self->fill || !self->level || !self->it || !self->queue || !self->mark || !self->fin ||
        !self->out) {
        PyErr_NoMemory();
        goto done;
    }
    rc = 0;
done:
    free(tails);
    free(heads);
    free(caps);
    free(cnt_p);
    free(cnt_t);
    return rc;
}

typedef struct {
    int N, E; /* nodes, arcs (forward and reverse) */
} Local;

static void add_arc(Net *g, Local *L, int a, int b, i64 cap) {
    g->tail[L->E] = a, g->to[L->E] = b, g->r[L->E] = cap;
    g->tail[L->E + 1] = b, g->to[L->E + 1] = a, g->r[L->E + 1] = 0;
    L->E += 2;
}

/* BFS levels from the source over residual arcs; returns whether the sink is reached. */
static int net_bfs(Net *g, const Local *L) {
    for (int x = 0; x < L->N; x++) g->level[x] = -1;
    int qh = 0, qt = 0;
    g->level[0] = 0;
    g->queue[qt++] = 0;
    while (qh < qt) {
        int x = g->queue[qh++];
        for (int k = g->adj_start[x]; k < g->adj_start[x + 1]; k++) {
            int e = g->adj[k], y = g->to[e];
            if (g->r[e] > 0 && g->level[y] < 0) {
                g->level[y] = g->level[x] + 1;
                g->queue[qt++] = y;
            }
        }
    }
    return g->level[1] >= 0;
}

static i64 net_dfs(Net *g, int x, i64 f) {
    if (x == 1) return f;
    for (; g->it[x] < g->adj_start[x + 1]; g->it[x]++) {
        int e = g->adj[g->it[x]], y = g->to[e];
        if (g->r[e] > 0 && g->level[y] == g->level[x] + 1) {
            i64 d = net_dfs(g, y, f < g->r[e] ? f : g->r[e]);
            if (d > 0) {
                g->r[e] -= d;
                g->r[e ^ 1] += d;
                return d;
            }
        }
    }
    return 0;
}

/* C_S(v) of bounds.ClosureCut.value into *c and the set D (n bytes) into D.
 * forced / banned: n bytes or NULL. Returns 0; -1 when forced meets the operators kept out
 * (*bad: that operator); -2 when no finite cut exists. */
static int net_value(Net *g, int v, const uint8_t *forced, const uint8_t *banned, int largest,
                     i64 *c, uint8_t *D, int *bad) {
    int n = g->n;
    const uint8_t *Av = g->anc + (size_t)v * n;
    Local L = {2, 0};
    i64 cons = 0; /* the cut's constant part */
    for (int u = 0; u < n; u++) {
        g->fin[u] = Av[u] | (forced ? forced[u] : 0);
        g->out[u] = g->anc[(size_t)u * n + v] | (u == v) | (banned ? banned[u] : 0);
        if (g->fin[u] && g->out[u]) {
            *bad = u;
            return -1;
        }
        if (g->fin[u]) {
            cons += g->w[u];
            g->lid[u] = -1;
        } else if (g->out[u]) {
            g->lid[u] = -1;
        } else {
            g->lid[u] = L.N++;
        }
    }
    for (int y = 0; y < g->nt; y++) {
        int any_out = 0, any_free = 0;
        for (int k = g->tc_ptr[y]; k < g->tc_ptr[y + 1]; k++) {
            int u = g->tc[k];
            if (g->out[u]) {
                any_out = 1;
                break;
            }
            if (g->lid[u] >= 0) any_free = 1;
        }
        if (any_out) {
            cons += g->tsize[y];
        } else if (any_free && g->tsize[y] > 0) {
            int x = L.N++;
            add_arc(g, &L, 0, x, g->tsize[y]);
            for (int k = g->tc_ptr[y]; k < g->tc_ptr[y + 1]; k++)
                if (g->lid[g->tc[k]] >= 0) add_arc(g, &L, x, g->lid[g->tc[k]], g->inf);
        }
    }
    for (int u = 0; u < n; u++) {
        int x = g->lid[u];
        if (x < 0) {
            if (!g->fin[u]) continue;
            /* a forced operator (the source) runs after its predecessors: they are forced too
             * (when `forced` is not a down-set) */
            for (int k = g->pred_ptr[u]; k < g->pred_ptr[u + 1]; k++) {
                int p = g->pred[k];
                if (g->out[p]) return -2; /* forced after a kept-out operator: no finite cut */
                if (g->lid[p] >= 0) add_arc(g, &L, 0, g->lid[p], g->inf);
            }
            continue;
        }
        if (g->w[u] > 0) add_arc(g, &L, x, 1, g->w[u]);
        for (int k = g->pred_ptr[u]; k < g->pred_ptr[u + 1]; k++) {
            int p = g->pred[k];
            if (g->lid[p] >= 0) add_arc(g, &L, x, g->lid[p], g->inf);
            else if (g->out[p]) add_arc(g, &L, x, 1, g->inf); /* (when banned is no up-set) */
            /* a forced predecessor is the source: no constraint */
        }
    }
    /* CSR by tail */
    memset(g->adj_start, 0, sizeof(int) * (size_t)(L.N + 1));
    for (int e = 0; e < L.E; e++) g->adj_start[g->tail[e] + 1]++;
    for (int x = 0; x < L.N; x++) g->adj_start[x + 1] += g->adj_start[x];
    memcpy(g->fill, g->adj_start, sizeof(int) * (size_t)L.N);
    for (int e = 0; e < L.E; e++) g->adj[g->fill[g->tail[e]]++] = e;
    i64 flow = cons;
    if (flow >= g->inf) return -2;
    while (net_bfs(g, &L)) {
        memcpy(g->it, g->adj_start, sizeof(int) * (size_t)L.N);
        i64 f;
        while ((f = net_dfs(g, 0, INT64_MAX / 4)) > 0) {
            flow += f;
            if (flow >= g->inf) return -2;
        }
    }
    if (!largest) { /* forced, and the free operators the source reaches (the last BFS) */
        for (int u = 0; u < n; u++) D[u] = g->fin[u] || (g->lid[u] >= 0 && g->level[g->lid[u]] >= 0);
    } else { /* every operator that cannot reach the sink: forced, and free ones */
        int qh = 0, qt = 0;
        memset(g->mark, 0, (size_t)L.N);
        g->mark[1] = 1;
        g->queue[qt++] = 1;
        while (qh < qt) {
            int x = g->queue[qh++];
            for (int k = g->adj_start[x]; k < g->adj_start[x + 1]; k++) {
                int e = g->adj[k], y = g->to[e];
                if (!g->mark[y] && g->r[e ^ 1] > 0) { /* arc y -> x has residual capacity */
                    g->mark[y] = 1;
                    g->queue[qt++] = y;
                }
            }
        }
        for (int u = 0; u < n; u++) D[u] = g->fin[u] || (g->lid[u] >= 0 && !g->mark[g->lid[u]]);
    }
    *c = g->alloc[v] + flow - g->pos;
    return 0;
}

static int opt_mask(PyObject *obj, int n, const char *what, Py_buffer *view, const uint8_t **p) {
    *p = NULL;
    if (obj == Py_None) return 0;
    Py_ssize_t len;
    if (get_buf(obj, view, 1, what, &len) < 0) return -1;
    if (len != n) {
        PyErr_Format(PyExc_ValueError, "%s: length %zd, expected %d", what, len, n);
        PyBuffer_Release(view);
        return -1;
    }
    *p = (const uint8_t *)view->buf;
    return 1;
}

static PyObject *net_py_value(Net *self, PyObject *args) {
    int v, largest;
    PyObject *forced_obj, *banned_obj;
    if (!PyArg_ParseTuple(args, "iOOp", &v, &forced_obj, &banned_obj, &largest)) return NULL;
    int n = self->n;
    if (v < 0 || v >= n) {
        PyErr_Format(PyExc_IndexError, "closure bound: operator %d out of range", v);
        return NULL;
    }
    Py_buffer fv, bv;
    const uint8_t *forced, *banned;
    int hf = opt_mask(forced_obj, n, "forced", &fv, &forced);
    if (hf < 0) return NULL;
    int hb = opt_mask(banned_obj, n, "banned", &bv, &banned);
    if (hb < 0) {
        if (hf) PyBuffer_Release(&fv);
        return NULL;
    }
    PyObject *Dbytes = PyBytes_FromStringAndSize(NULL, n);
    i64 c = 0;
    int bad = -1, rc = -3;
    if (Dbytes) rc = net_value(self, v, forced, banned, largest, &c,
                               (uint8_t *)PyBytes_AS_STRING(Dbytes), &bad);
    if (hf) PyBuffer_Release(&fv);
    if (hb) PyBuffer_Release(&bv);
    if (!Dbytes) return NULL;
    if (rc == -1) {
        Py_DECREF(Dbytes);
        PyErr_Format(PyExc_ValueError, "closure bound: operator %d is forced to run before "
                     "operator %d but is that operator or one of its descendants", bad, v);
        return NULL;
    }
    if (rc == -2) {
        Py_DECREF(Dbytes);
        PyErr_Format(PyExc_ValueError, "closure bound: no down-set fits operator %d", v);
        return NULL;
    }
    return Py_BuildValue("(LN)", (long long)c, Dbytes);
}

/* One node of the enumeration of Net.sets: operators forced in, kept out, and a least-live set
 * between them with its value. */
typedef struct {
    uint8_t *fin, *out, *D;
    i64 c;
} SetNode;

typedef struct {
    i64 c;
    uint8_t *D;
    int n;
} Found;

static int cmp_found(const void *a, const void *b) {
    const Found *x = (const Found *)a, *y = (const Found *)b;
    if (x->c != y->c) return x->c < y->c ? -1 : 1;
    return memcmp(x->D, y->D, (size_t)x->n);
}

/* sets(v, B, cap, seconds left or None) -> (status, sets, count): pivot_search's enumeration of every
 * down-set D valid for v (ancestors in, v and descendants out) with live(D) + alloc(v) <= B,
 * as a list of (value, D bytes) sorted by value then D; status "ok", "over" (more than cap
 * sets: sets is None) or "stopped" (the deadline passed: sets is None); count: sets found. */
static PyObject *net_py_sets(Net *g, PyObject *args) {
    int v;
    long long B, cap;
    PyObject *dl;
    if (!PyArg_ParseTuple(args, "iLLO", &v, &B, &cap, &dl)) return NULL;
    int n = g->n;
    if (v < 0 || v >= n) {
        PyErr_Format(PyExc_IndexError, "pivot sets: operator %d out of range", v);
        return NULL;
    }
    int has_dl = dl != Py_None; /* seconds left, measured on this module's clock */
    double deadline = has_dl ? now_seconds() + PyFloat_AsDouble(dl) : 0.0;
    if (has_dl && PyErr_Occurred()) return NULL;
    size_t scap = (size_t)n + 2, sp = 0, nf = 0, fcap = 16;
    SetNode *st = (SetNode *)calloc(scap, sizeof(SetNode));
    Found *found = (Found *)malloc(sizeof(Found) * fcap);
    uint8_t *buf = (uint8_t *)malloc((size_t)(n ? n : 1) * 3);
    const char *status = "ok";
    PyObject *result = NULL;
    int err = 0;
    if (!st || !found || !buf) {
        err = 1;
        PyErr_NoMemory();
        goto out;
    }
#define NEWNODE(node)                                                                          \
    do {                                                                                       \
        (node).fin = (uint8_t *)malloc((size_t)(n ? n : 1) * 3);                               \
        if (!(node).fin) {                                                                     \
            err = 1;                                                                           \
            PyErr_NoMemory();                                                                  \
            goto out;                                                                          \
        }                                                                                      \
        (node).out = (node).fin + n;                                                           \
        (node).D = (node).fin + 2 * n;                                                         \
    } while (0)
    {
        SetNode root;
        NEWNODE(root);
        for (int u = 0; u < n; u++) {
            root.fin[u] = g->anc[(size_t)v * n + u];
            root.out[u] = g->anc[(size_t)u * n + v] | (u == v);
        }
        int bad;
        if (net_value(g, v, root.fin, root.out, 0, &root.c, root.D, &bad) < 0) {
            free(root.fin);
            PyErr_Format(PyExc_ValueError, "pivot sets: no set fits operator %d", v);
            err = 1;
            goto out;
        }
        st[sp++] = root;
    }
    while (sp > 0) {
        if (has_dl && now_seconds() > deadline) {
            status = "stopped";
            break;
        }
        SetNode x = st[--sp];
        if (x.c > B) {
            free(x.fin);
            continue;
        }
        int u = -1;
        for (int k = 0; k < n; k++)
            if (!x.fin[k] && !x.out[k]) {
                u = k;
                break;
            }
        if (u < 0) { /* a set: D is x.fin */
            if (nf == fcap) {
                fcap *= 2;
                Found *f2 = (Found *)realloc(found, sizeof(Found) * fcap);
                if (!f2) {
                    free(x.fin);
                    err = 1;
                    PyErr_NoMemory();
                    goto out;
                }
                found = f2;
            }
            found[nf].c = x.c;
            found[nf].D = x.fin; /* owns the node's buffer; D is at offset 2n */
            found[nf].n = n;
            nf++;
            if ((long long)nf > cap) {
                status = "over";
                break;
            }
            continue;
        }
        /* o2: u and its descendants out; f2: u and its ancestors in */
        uint8_t *o2 = buf, *f2 = buf + n;
        int ok_out = 1, ok_in = 1;
        for (int k = 0; k < n; k++) {
            o2[k] = x.out[k] | g->anc[(size_t)k * n + u] | (k == u);
            f2[k] = x.fin[k] | g->anc[(size_t)u * n + k] | (k == u);
            if (x.fin[k] && o2[k]) ok_out = 0;
            if (f2[k] && x.out[k]) ok_in = 0;
        }
        int inside = x.D[u];
        if (sp + 2 > scap) {
            scap *= 2;
            SetNode *s2 = (SetNode *)realloc(st, sizeof(SetNode) * scap);
            if (!s2) {
                free(x.fin);
                err = 1;
                PyErr_NoMemory();
                goto out;
            }
            st = s2;
        }
        /* the branch "u out" first on the stack (popped after "u in"), as pivot_search does */
        SetNode a, b;
        int bad;
        if (ok_out) {
            NEWNODE(a);
            memcpy(a.fin, x.fin, (size_t)n);
            memcpy(a.out, o2, (size_t)n);
            if (!inside) {
                memcpy(a.D, x.D, (size_t)n);
                a.c = x.c;
            } else if (net_value(g, v, a.fin, a.out, 0, &a.c, a.D, &bad) < 0) {
                free(a.fin);
                free(x.fin);
                PyErr_Format(PyExc_ValueError, "pivot sets: flow failed at operator %d", v);
                err = 1;
                goto out;
            }
            st[sp++] = a;
        }
        if (ok_in) {
            NEWNODE(b);
            memcpy(b.fin, f2, (size_t)n);
            memcpy(b.out, x.out, (size_t)n);
            if (inside) {
                memcpy(b.D, x.D, (size_t)n);
                b.c = x.c;
            } else if (net_value(g, v, b.fin, b.out, 0, &b.c, b.D, &bad) < 0) {
                free(b.fin);
                free(x.fin);
                PyErr_Format(PyExc_ValueError, "pivot sets: flow failed at operator %d", v);
                err = 1;
                goto out;
            }
            st[sp++] = b;
        }
        free(x.fin);
    }
#undef NEWNODE
    if (!err) {
        long long count = (long long)nf;
        if (strcmp(status, "ok") != 0) {
            result = Py_BuildValue("(sOL)", status, Py_None, count);
        } else {
            for (size_t i = 0; i < nf; i++) found[i].D = found[i].D + 2 * n;
            qsort(found, nf, sizeof(Found), cmp_found);
            PyObject *lst = PyList_New((Py_ssize_t)nf);
            for (size_t i = 0; lst && i < nf; i++) {
                PyObject *item = Py_BuildValue("(Ly#)", (long long)found[i].c,
                                               (const char *)found[i].D, (Py_ssize_t)n);
                if (!item) {
                    Py_CLEAR(lst);
                    break;
                }
                PyList_SET_ITEM(lst, (Py_ssize_t)i, item);
            }
            for (size_t i = 0; i < nf; i++) found[i].D -= 2 * n;
            if (lst) result = Py_BuildValue("(sNL)", status, lst, count);
        }
    }
out:
    for (size_t i = 0; i < sp; i++) free(st[i].fin);
    for (size_t i = 0; found && i < nf; i++) free(found[i].D);
    free(st);
    free(found);
    free(buf);
    return result;
}

static PyMethodDef net_methods[] = {
    {"value", (PyCFunction)net_py_value, METH_VARARGS,
     "value(v, forced, banned, largest) -> (C bytes, D as n bytes); forced/banned: n-byte masks "
     "or None. ValueError when forced meets v, a descendant or a banned operator."},
    {"sets", (PyCFunction)net_py_sets, METH_VARARGS,
     "sets(v, B, cap, seconds) -> (status, [(value, D bytes)] or None, count): the pivot sets "
     "of operator v within B bytes (pivot_search)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject NetType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scheduling._budget.Net",
    .tp_basicsize = sizeof(Net),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)net_init,
    .tp_dealloc = (destructor)net_dealloc,
    .tp_methods = net_methods,
    .tp_doc = "Closure-bound flow network (bounds.ClosureCut) with Dinic's maximum flow.",
};

/* ------------------------------------------------------------------------------------------ */
/* Search: budget_search.BudgetSearch.probe                                                    */

typedef struct {
    i64 key, after, at;
    int u;
} Move;

typedef struct {
    PyObject_HEAD
    Net *net;
    int n, m, W;               /* operators, tensors, 64-bit words of a state */
    i64 *alloc, *dead, *gain, *size, *ncons, *indeg0, *upper;
    uint8_t *keep;
    int *ins_ptr, *ins, *succ_ptr, *succ;     /* CSR per operator */
    int *fr_ptr, *oth_ptr, *oth;              /* frees per operator: entries, their others */
    i64 *fr_size;
    int ncut;
    u64 *cuts;                 /* ncut * W */
    /* memo: open addressing, keys W words each */
    /* memo: a table of entry numbers (-1: empty slot; open addressing, at most half full) over
     * dense arrays of keys (W words each) and floors, so a state costs its key once */
    i64 max_memo, memo_count, memo_cap, memo_room;
    int32_t *memo_slot_of;
    u64 *memo_keys;
    i64 *memo_val;
    /* root witnesses */
    uint8_t *root_has, *root_D; /* n, n*n */
    i64 *root_c;
    /* pools */
    int pool_max;
    int *pool_len;
    i64 *pool_c;               /* n * pool_max */
    uint8_t *pool_D;           /* n * pool_max * n */
    int lookahead, reduce, chain;
    /* per probe */
    i64 B, limit, nodes, flows;
    double deadline;
    int has_deadline;
    uint8_t *Wd, *Sb, *ready, *tmpD;      /* n*n, n, n, n */
    i64 *Wv, *rem, *indeg;
    int *order, norder;
    u64 *S;
    /* undo stack for witness repairs: per entry (v, old Wv, row index into rows or -1 for a
     * column repair of operator u) */
    int *undo_v, *undo_row;
    i64 *undo_old;
    uint8_t *rows;             /* saved witness rows */
    i64 undo_top, undo_cap, rows_top, rows_cap;
    i64 cut_floor;
    int *broken;               /* n */
    i64 *val;                  /* n */
} Search;

#define ST_FOUND 1
#define ST_FAILED 0
#define ST_STOP (-1)
#define ST_CUT (-2)
#define ST_ERR (-3)

static void search_dealloc(Search *s) {
    Py_XDECREF(s->net);
    void *ps[] = {s->alloc, s->dead, s->gain, s->size, s->ncons, s->indeg0, s->upper, s->keep,
                  s->ins_ptr, s->ins, s->succ_ptr, s->succ, s->fr_ptr, s->oth_ptr, s->oth,
                  s->fr_size, s->cuts, s->memo_keys, s->memo_val, s->memo_slot_of, s->root_has,
                  s->root_D, s->root_c, s->pool_len, s->pool_c, s->pool_D, s->Wd, s->Sb,
                  s->ready, s->tmpD, s->Wv, s->rem, s->indeg, s->order, s->S, s->undo_v,
                  s->undo_row, s->undo_old, s->rows, s->broken, s->val};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) free(ps[i]);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int *to_int(i64 *a, Py_ssize_t len) {
    int *out = (int *)malloc(sizeof(int) * (size_t)(len ? len : 1));
    if (!out) {
        free(a);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) out[i] = (int)a[i];
    free(a);
    return out;
}

static int csr(PyObject *ptr_obj, PyObject *idx_obj, int rows, int bound, const char *what,
               int **ptr, int **idx) {
    Py_ssize_t np_, ni;
    i64 *p = copy_i64(ptr_obj, what, rows + 1, &np_);
    if (!p) return -1;
    i64 *x = copy_i64(idx_obj, what, -1, &ni);
    if (!x) {
        free(p);
        return -1;
    }
    if (p[0] != 0 || p[rows] != ni) {
        free(p), free(x);
        PyErr_Format(PyExc_ValueError, "%s: bad row pointers", what);
        return -1;
    }
    for (int i = 0; i < rows; i++)
        if (p[i + 1] < p[i]) {
            free(p), free(x);
            PyErr_Format(PyExc_ValueError, "%s: decreasing row pointers", what);
            return -1;
        }
    for (Py_ssize_t i = 0; i < ni; i++)
        if (x[i] < 0 || (bound >= 0 && x[i] >= bound)) {
            free(p), free(x);
            PyErr_Format(PyExc_ValueError, "%s: index out of range", what);
            return -1;
        }
    *ptr = to_int(p, rows + 1);
    if (!*ptr) {
        free(x);
        return -1;
    }
    *idx = to_int(x, ni);
    return *idx ? 0 : -1;
}

static int search_init(Search *s, PyObject *args, PyObject *kwds) {
    PyObject *net, *alloc, *dead, *size, *keep, *ncons, *indeg0, *upper, *ins_ptr, *ins,
        *succ_ptr, *succ, *fr_ptr, *fr_size, *oth_ptr, *oth, *cuts;
    long long max_memo;
    int lookahead, reduce, chain, pool_max;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOOOOOOOOOLppii", &NetType, &net, &alloc, &dead,
                          &size, &keep, &ncons, &indeg0, &upper, &ins_ptr, &ins, &succ_ptr,
                          &succ, &fr_ptr, &fr_size, &oth_ptr, &oth, &cuts, &max_memo,
                          &lookahead, &reduce, &chain, &pool_max))
        return -1;
    Net *g = (Net *)net;
    Py_INCREF(net);
    s->net = g;
    int n = g->n;
    s->n = n;
    s->W = (n + 63) / 64;
    if (s->W == 0) s->W = 1;
    Py_ssize_t m;
    if (!(s->alloc = copy_i64(alloc, "alloc", n, NULL))) return -1;
    if (!(s->dead = copy_i64(dead, "dead", n, NULL))) return -1;
    if (!(s->size = copy_i64(size, "size", -1, &m))) return -1;
    s->m = (int)m;
    if (!(s->keep = copy_u8(keep, "keep", m))) return -1;
    if (!(s->ncons = copy_i64(ncons, "n_consumers", m, NULL))) return -1;
    if (!(s->indeg0 = copy_i64(indeg0, "indeg", n, NULL))) return -1;
    if (!(s->upper = copy_i64(upper, "upper", n, NULL))) return -1;
    if (csr(ins_ptr, ins, n, (int)m, "ins", &s->ins_ptr, &s->ins) < 0) return -1;
    if (csr(succ_ptr, succ, n, n, "succs", &s->succ_ptr, &s->succ) < 0) return -1;
    Py_ssize_t nfr;
    i64 *fp = copy_i64(fr_ptr, "frees", n + 1, NULL);
    if (!fp || !(s->fr_ptr = to_int(fp, n + 1))) return -1;
    if (!(s->fr_size = copy_i64(fr_size, "free sizes", -1, &nfr))) return -1;
    if (s->fr_ptr[0] != 0 || s->fr_ptr[n] != nfr) {
        PyErr_SetString(PyExc_ValueError, "frees: bad row pointers");
        return -1;
    }
    if (csr(oth_ptr, oth, (int)nfr, n, "others", &s->oth_ptr, &s->oth) < 0) return -1;
    s->gain = (i64 *)malloc(sizeof(i64) * (size_t)(n ? n : 1));
    if (!s->gain) return PyErr_NoMemory(), -1;
    for (int u = 0; u < n; u++) s->gain[u] = s->alloc[u] - s->dead[u];
    /* complete cuts: a sequence of n-byte masks */
    PyObject *seq = PySequence_Fast(cuts, "cuts: expected a sequence of masks");
    if (!seq) return -1;
    s->ncut = (int)PySequence_Fast_GET_SIZE(seq);
    s->cuts = (u64 *)calloc((size_t)(s->ncut ? s->ncut : 1) * s->W, sizeof(u64));
    if (!s->cuts) {
        Py_DECREF(seq);
        return PyErr_NoMemory(), -1;
    }
    for (int k = 0; k < s->ncut; k++) {
        uint8_t *mk = copy_u8(PySequence_Fast_GET_ITEM(seq, k), "cut", n);
        if (!mk) {
            Py_DECREF(seq);
            return -1;
        }
        for (int u = 0; u < n; u++)
            if (mk[u]) s->cuts[(size_t)k * s->W + u / 64] |= (u64)1 << (u % 64);
        free(mk);
    }
    Py_DECREF(seq);
    s->max_memo = max_memo;
    if (s->max_memo > 1000000000LL) s->max_memo = 1000000000LL; /* entry numbers are int32 */
    s->memo_count = 0;
    s->memo_cap = 1024;
    s->memo_room = 512;
    s->memo_slot_of = (int32_t *)malloc(sizeof(int32_t) * (size_t)s->memo_cap);
    if (s->memo_slot_of) memset(s->memo_slot_of, 0xff, sizeof(int32_t) * (size_t)s->memo_cap);
    s->memo_keys = (u64 *)malloc(sizeof(u64) * (size_t)s->memo_room * s->W);
    s->memo_val = (i64 *)malloc(sizeof(i64) * (size_t)s->memo_room);
    size_t nn = (size_t)n * n;
    s->root_has = (uint8_t *)calloc((size_t)(n ? n : 1), 1);
    s->root_D = (uint8_t *)calloc(nn ? nn : 1, 1);
    s->root_c = (i64 *)calloc((size_t)(n ? n : 1), sizeof(i64));
    s->pool_max = pool_max < 1 ? 1 : pool_max;
    s->pool_len = (int *)calloc((size_t)(n ? n : 1), sizeof(int));
    s->pool_c = (i64 *)calloc((size_t)(n ? n : 1) * s->pool_max, sizeof(i64));
    s->pool_D = (uint8_t *)calloc((nn ? nn : 1) * s->pool_max, 1);
    s->lookahead = lookahead;
    s->reduce = reduce;
    s->chain = reduce ? chain : 0;
    s->Wd = (uint8_t *)malloc(nn ? nn : 1);
    s->Sb = (uint8_t *)malloc((size_t)(n ? n : 1));
    s->ready = (uint8_t *)malloc((size_t)(n ? n : 1));
    s->tmpD = (uint8_t *)malloc((size_t)(n ? n : 1));
    s->Wv = (i64 *)malloc(sizeof(i64) * (size_t)(n ? n : 1));
    s->rem = (i64 *)malloc(sizeof(i64) * (size_t)(m ? m : 1));
    s->indeg = (i64 *)malloc(sizeof(i64) * (size_t)(n ? n : 1));
    s->order = (int *)malloc(sizeof(int) * (size_t)(n ? n : 1));
    s->S = (u64 *)calloc((size_t)s->W, sizeof(u64));
    s->undo_cap = 1024;
    s->undo_v = (int *)malloc(sizeof(int) * (size_t)s->undo_cap);
    s->undo_row = (int *)malloc(sizeof(int) * (size_t)s->undo_cap);
    s->undo_old = (i64 *)malloc(sizeof(i64) * (size_t)s->undo_cap);
    s->rows_cap = (i64)(n ? n : 1) * 64;
    s->rows = (uint8_t *)malloc((size_t)s->rows_cap);
    s->broken = (int *)malloc(sizeof(int) * (size_t)(n ? n : 1));
    s->val = (i64 *)malloc(sizeof(i64) * (size_t)(n ? n : 1));
    if (!s->memo_keys || !s->memo_val || !s->memo_slot_of || !s->root_has || !s->root_D ||
        !s->root_c || !s->pool_len || !s->pool_c || !s->pool_D || !s->Wd || !s->Sb ||
        !s->ready || !s->tmpD || !s->Wv || !s->rem || !s->indeg || !s->order || !s->S ||
        !s->undo_v || !s->undo_row || !s->undo_old || !s->rows || !s->broken || !s->val)
        return PyErr_NoMemory(), -1;
    return 0;
}

/* ---- memo ---- */
static u64 hash_key(const u64 *k, int W) {
    u64 h = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < W; i++) {
        u64 x = k[i] + h;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
        h = x ^ (x >> 31);
    }
    return h;
}

static i64 memo_slot(Search *s, const u64 *k) { /* the slot holding k, or the empty one for it */
    u64 mask = (u64)s->memo_cap - 1;
    u64 i = hash_key(k, s->W) & mask;
    int32_t e;
    while ((e = s->memo_slot_of[i]) >= 0 &&
           memcmp(s->memo_keys + (size_t)e * s->W, k, sizeof(u64) * s->W) != 0)
        i = (i + 1) & mask;
    return (i64)i;
}

static int memo_get(Search *s, const u64 *k, i64 *val) {
    int32_t e = s->memo_slot_of[memo_slot(s, k)];
    if (e < 0) return 0;
    *val = s->memo_val[e];
    return 1;
}

static int memo_grow(Search *s) { /* twice the slots, the entries placed again */
    i64 cap = s->memo_cap * 2;
    int32_t *slots = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    if (!slots) return -1;
    memset(slots, 0xff, sizeof(int32_t) * (size_t)cap);
    free(s->memo_slot_of);
    s->memo_slot_of = slots;
    s->memo_cap = cap;
    for (i64 e = 0; e < s->memo_count; e++)
        s->memo_slot_of[memo_slot(s, s->memo_keys + (size_t)e * s->W)] = (int32_t)e;
    return 0;
}

/* memo[k] = max(memo.get(k, 0), val) while the memo holds fewer than max_memo states. */
static int memo_raise(Search *s, const u64 *k, i64 val) {
    if (s->memo_count >= s->max_memo) return 0;
    i64 i = memo_slot(s, k);
    int32_t e = s->memo_slot_of[i];
    if (e >= 0) {
        if (val > s->memo_val[e]) s->memo_val[e] = val;
        return 0;
    }
    if (val < 0) val = 0;
    if (s->memo_count == s->memo_room) {
        i64 room = 2 * s->memo_room;
        u64 *keys = (u64 *)realloc(s->memo_keys, sizeof(u64) * (size_t)room * s->W);
        if (!keys) return -1;
        s->memo_keys = keys;
        i64 *vals = (i64 *)realloc(s->memo_val, sizeof(i64) * (size_t)room);
        if (!vals) return -1;
        s->memo_val = vals;
        s->memo_room = room;
    }
    e = (int32_t)s->memo_count++;
    memcpy(s->memo_keys + (size_t)e * s->W, k, sizeof(u64) * s->W);
    s->memo_val[e] = val;
    s->memo_slot_of[i] = e;
    if (2 * s->memo_count > s->memo_cap && memo_grow(s) < 0) return -1;
    return 0;
}

static int is_cut(Search *s, const u64 *k) {
    for (int c = 0; c < s->ncut; c++)
        if (memcmp(s->cuts + (size_t)c * s->W, k, sizeof(u64) * s->W) == 0) return 1;
    return 0;
}

/* ---- undo stack ---- */
static int undo_push(Search *s, int v, i64 old, const uint8_t *row) {
    if (s->undo_top == s->undo_cap) {
        i64 cap = s->undo_cap * 2;
        int *a = (int *)realloc(s->undo_v, sizeof(int) * (size_t)cap);
        if (!a) return -1;
        s->undo_v = a;
        int *b = (int *)realloc(s->undo_row, sizeof(int) * (size_t)cap);
        if (!b) return -1;
        s->undo_row = b;
        i64 *c = (i64 *)realloc(s->undo_old, sizeof(i64) * (size_t)cap);
        if (!c) return -1;
        s->undo_old = c;
        s->undo_cap = cap;
    }
    int rowi = -1;
    if (row) {
        int n = s->n;
        if (s->rows_top + n > s->rows_cap) {
            i64 cap = 2 * s->rows_cap + n;
            uint8_t *r = (uint8_t *)realloc(s->rows, (size_t)cap);
            if (!r) return -1;
            s->rows = r;
            s->rows_cap = cap;
        }
        memcpy(s->rows + s->rows_top, row, (size_t)n);
        rowi = (int)(s->rows_top / (n ? n : 1));
        s->rows_top += n;
    }
    s->undo_v[s->undo_top] = v;
    s->undo_row[s->undo_top] = rowi;
    s->undo_old[s->undo_top] = old;
    s->undo_top++;
    return 0;
}

/* ---- moves ---- */
static i64 freed(Search *s, int u) { /* bytes freed by running u now */
    i64 fr = s->dead[u];
    for (int k = s->ins_ptr[u]; k < s->ins_ptr[u + 1]; k++) {
        int t = s->ins[k];
        if (s->rem[t] == 1 && !s->keep[t]) fr += s->size[t];
    }
    return fr;
}

static int chain_ok(Search *s, int u, i64 after, i64 low, int depth) {
    for (int k = s->ins_ptr[u]; k < s->ins_ptr[u + 1]; k++) s->rem[s->ins[k]]--;
    for (int k = s->succ_ptr[u]; k < s->succ_ptr[u + 1]; k++) s->indeg[s->succ[k]]--;
    i64 low2 = low < after ? low : after;
    int ok = 0;
    for (int k = s->succ_ptr[u]; k < s->succ_ptr[u + 1]; k++) {
        int w = s->succ[k];
        if (s->indeg[w] || after + s->alloc[w] > s->B) continue;
        i64 aw = after + s->alloc[w] - freed(s, w);
        if (aw <= low2 || (depth > 1 && chain_ok(s, w, aw, low2, depth - 1))) {
            ok = 1;
            break;
        }
    }
    for (int k = s->succ_ptr[u]; k < s->succ_ptr[u + 1]; k++) s->indeg[s->succ[k]]++;
    for (int k = s->ins_ptr[u]; k < s->ins_ptr[u + 1]; k++) s->rem[s->ins[k]]++;
    return ok;
}

/* The operators whose witness does not hold u (u just added to Sb) and their repaired values
 * Wv[v] + gain[u] - (inputs of u whose other readers are all in the witness); returns count. */
static int broken_values(Search *s, int u) {
    int n = s->n, nb = 0;
    const uint8_t *Wd = s->Wd;
    for (int v = 0; v < n; v++) {
        if (Wd[(size_t)v * n + u] || s->Sb[v]) continue;
        i64 val = s->Wv[v] + s->gain[u];
        const uint8_t *row = Wd + (size_t)v * n;
        for (int f = s->fr_ptr[u]; f < s->fr_ptr[u + 1]; f++) {
            int all = 1;
            for (int k = s->oth_ptr[f]; k < s->oth_ptr[f + 1]; k++)
                if (!row[s->oth[k]]) {
                    all = 0;
                    break;
                }
            if (all) val -= s->fr_size[f];
        }
        s->broken[nb] = v;
        s->val[nb] = val;
        nb++;
    }
    return nb;
}

static int cmp_after(const void *a, const void *b) {
    const Move *x = (const Move *)a, *y = (const Move *)b;
    if (x->after != y->after) return x->after < y->after ? -1 : 1;
    return (x->u > y->u) - (x->u < y->u);
}

static int cmp_key(const void *a, const void *b) {
    const Move *x = (const Move *)a, *y = (const Move *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return cmp_after(a, b);
}

#define SETBIT(S, u) ((S)[(u) / 64] |= (u64)1 << ((u) % 64))
#define CLRBIT(S, u) ((S)[(u) / 64] &= ~((u64)1 << ((u) % 64)))

/* One state of the search (budget_search.BudgetSearch._dfs): returns ST_FOUND, ST_FAILED
 * (*floor set), ST_STOP, ST_CUT (s->cut_floor set) or ST_ERR (exception set). */
static int dfs(Search *s, i64 live, i64 *floor_out) {
    int n = s->n;
    if (s->norder == n) return ST_FOUND;
    s->nodes++;
    if (s->nodes > s->limit || (s->has_deadline && now_seconds() > s->deadline)) return ST_STOP;
    const i64 B = s->B;
    i64 floor = 0;
    int has_floor = 0;
    Move *moves = (Move *)malloc(sizeof(Move) * (size_t)(n ? n : 1));
    if (!moves) return PyErr_NoMemory(), ST_ERR;
    int nm = 0;
    for (int u = 0; u < n; u++) {
        if (!s->ready[u]) continue;
        i64 at = live + s->alloc[u];
        if (at > B) {
            if (!has_floor || at < floor) floor = at, has_floor = 1;
            continue;
        }
        moves[nm].after = at - freed(s, u);
        moves[nm].u = u;
        moves[nm].at = at;
        moves[nm].key = 0;
        nm++;
    }
    if (s->reduce) {
        int best = -1;
        for (int i = 0; i < nm; i++)
            if (moves[i].after <= live && (best < 0 || cmp_after(&moves[i], &moves[best]) < 0))
                best = i;
        if (best < 0 && s->chain > 1) {
            qsort(moves, (size_t)nm, sizeof(Move), cmp_after);
            for (int i = 0; i < nm; i++)
                if (chain_ok(s, moves[i].u, moves[i].after, live, s->chain - 1)) {
                    best = i;
                    break;
                }
        }
        if (best >= 0) {
            moves[0] = moves[best];
            nm = 1;
            has_floor = 0;
        }
    }
    if (s->lookahead && nm > 1) {
        for (int i = 0; i < nm; i++) {
            int u = moves[i].u;
            s->Sb[u] = 1;
            int nb = broken_values(s, u);
            i64 h = 0;
            if (nb) {
                h = s->val[0];
                for (int k = 1; k < nb; k++)
                    if (s->val[k] > h) h = s->val[k];
            }
            s->Sb[u] = 0;
            moves[i].key = h > moves[i].at ? h : moves[i].at;
        }
        qsort(moves, (size_t)nm, sizeof(Move), cmp_key);
    } else {
        qsort(moves, (size_t)nm, sizeof(Move), cmp_after);
    }
    int status = ST_FAILED;
    for (int i = 0; i < nm; i++) {
        int u = moves[i].u;
        i64 at = moves[i].at, after = moves[i].after;
        SETBIT(s->S, u);
        i64 known;
        if (memo_get(s, s->S, &known) && known > B) {
            if (is_cut(s, s->S)) {
                s->cut_floor = known;
                CLRBIT(s->S, u);
                status = ST_CUT;
                break;
            }
            i64 v2 = known > at ? known : at;
            if (!has_floor || v2 < floor) floor = v2, has_floor = 1;
            CLRBIT(s->S, u);
            continue;
        }
        s->Sb[u] = 1;
        i64 undo0 = s->undo_top, rows0 = s->rows_top;
        int cut = 0;
        i64 cutv = 0;
        int nb = broken_values(s, u);
        int err = 0;
        /* repairs that fit: column u joins those witnesses */
        for (int k = 0; k < nb && !err; k++) {
            if (s->val[k] <= B) {
                int v = s->broken[k];
                if (undo_push(s, v, s->Wv[v], NULL) < 0) err = 1;
                s->Wd[(size_t)v * n + u] = 1;
                s->Wv[v] = s->val[k];
            }
        }
        for (int k = 0; k < nb && !err; k++) {
            if (s->val[k] <= B) continue;
            int v = s->broken[k];
            const uint8_t *D = NULL;
            i64 c = 0;
            int pl = s->pool_len[v];
            for (int p = 0; p < pl; p++) {
                const uint8_t *PD = s->pool_D + ((size_t)v * s->pool_max + p) * n;
                i64 pc = s->pool_c[(size_t)v * s->pool_max + p];
                if (pc > B) continue;
                int fits = 1;
                for (int x = 0; x < n; x++)
                    if (s->Sb[x] && !PD[x]) {
                        fits = 0;
                        break;
                    }
                if (fits) {
                    D = PD;
                    c = pc;
                    break;
                }
            }
            if (!D) {
                s->flows++;
                int bad;
                int rc = net_value(s->net, v, s->Sb, NULL, 1, &c, s->tmpD, &bad);
                if (rc < 0) {
                    PyErr_Format(PyExc_ValueError, "budget search: closure flow failed at "
                                 "operator %d", v);
                    err = 1;
                    break;
                }
                if (c > B) {
                    cut = 1;
                    cutv = c;
                    break;
                }
                /* pool.append((D, c)); pop the oldest beyond pool_max */
                uint8_t *base = s->pool_D + (size_t)v * s->pool_max * n;
                i64 *cb = s->pool_c + (size_t)v * s->pool_max;
                if (pl == s->pool_max) {
                    memmove(base, base + n, (size_t)(pl - 1) * n);
                    memmove(cb, cb + 1, sizeof(i64) * (size_t)(pl - 1));
                    pl--;
                }
                memcpy(base + (size_t)pl * n, s->tmpD, (size_t)n);
                cb[pl] = c;
                s->pool_len[v] = pl + 1;
                D = base + (size_t)pl * n;
            }
            if (undo_push(s, v, s->Wv[v], s->Wd + (size_t)v * n) < 0) {
                err = 1;
                break;
            }
            memcpy(s->Wd + (size_t)v * n, D, (size_t)n);
            s->Wv[v] = c;
        }
        if (err) {
            free(moves);
            if (!PyErr_Occurred()) PyErr_NoMemory();
            return ST_ERR;
        }
        i64 sub = 0;
        int rc = ST_FAILED;
        if (!cut) {
            for (int k = s->ins_ptr[u]; k < s->ins_ptr[u + 1]; k++) s->rem[s->ins[k]]--;
            s->ready[u] = 0;
            for (int k = s->succ_ptr[u]; k < s->succ_ptr[u + 1]; k++) {
                int w = s->succ[k];
                if (--s->indeg[w] == 0) s->ready[w] = 1;
            }
            s->order[s->norder++] = u;
            rc = dfs(s, after, &sub);
            if (rc == ST_FOUND) {
                free(moves);
                return ST_FOUND;
            }
            if (rc == ST_STOP || rc == ST_CUT || rc == ST_ERR) {
                free(moves);
                return rc; /* the probe ends; its per-probe state is rebuilt by the next one */
            }
            s->norder--;
            for (int k = s->succ_ptr[u]; k < s->succ_ptr[u + 1]; k++) {
                int w = s->succ[k];
                if (s->indeg[w]++ == 0) s->ready[w] = 0;
            }
            s->ready[u] = 1;
            for (int k = s->ins_ptr[u]; k < s->ins_ptr[u + 1]; k++) s->rem[s->ins[k]]++;
        } else {
            sub = cutv;
            if (memo_raise(s, s->S, cutv) < 0) {
                free(moves);
                PyErr_NoMemory();
                return ST_ERR;
            }
        }
        /* undo the witness repairs, last first */
        for (i64 k = s->undo_top - 1; k >= undo0; k--) {
            int v = s->undo_v[k];
            s->Wv[v] = s->undo_old[k];
            if (s->undo_row[k] < 0)
                s->Wd[(size_t)v * n + u] = 0;
            else
                memcpy(s->Wd + (size_t)v * n, s->rows + (size_t)s->undo_row[k] * n, (size_t)n);
        }
        s->undo_top = undo0;
        s->rows_top = rows0;
        s->Sb[u] = 0;
        if (is_cut(s, s->S)) { /* every order runs exactly S + u first, then peaks >= sub */
            s->cut_floor = sub;
            CLRBIT(s->S, u);
            status = ST_CUT;
            break;
        }
        CLRBIT(s->S, u);
        i64 v2 = sub > at ? sub : at;
        if (!has_floor || v2 < floor) floor = v2, has_floor = 1;
    }
    free(moves);
    if (status == ST_CUT) return ST_CUT;
    if (!has_floor) {
        PyErr_SetString(PyExc_RuntimeError, "budget search: a state with no move and no floor");
        return ST_ERR;
    }
    if (memo_raise(s, s->S, floor) < 0) return PyErr_NoMemory(), ST_ERR;
    *floor_out = floor;
    return ST_FAILED;
}

/* probe(B, max_nodes, seconds left or None) -> (status, order list or None, bound or None, nodes,
 * flows, root_op or None); status "found" / "failed" / "stopped". */
static PyObject *search_probe(Search *s, PyObject *args) {
    long long B, max_nodes;
    PyObject *dl;
    if (!PyArg_ParseTuple(args, "LLO", &B, &max_nodes, &dl)) return NULL;
    int n = s->n;
    i64 flows0 = s->flows;
    s->nodes = 0;
    if (n == 0) return Py_BuildValue("(sNOiiO)", "found", PyList_New(0), Py_None, 0, 0, Py_None);
    s->B = B;
    /* root witnesses: operators with upper(v) > B by decreasing upper (then index) */
    int *over = (int *)malloc(sizeof(int) * (size_t)n);
    if (!over) return PyErr_NoMemory();
    int no = 0;
    for (int v = 0; v < n; v++)
        if (s->upper[v] > B) over[no++] = v;
    for (int i = 1; i < no; i++) { /* stable insertion sort by -upper */
        int x = over[i], j = i;
        while (j > 0 && s->upper[over[j - 1]] < s->upper[x]) {
            over[j] = over[j - 1];
            j--;
        }
        over[j] = x;
    }
    for (int i = 0; i < no; i++) {
        int v = over[i];
        if (!s->root_has[v]) {
            s->flows++;
            int bad;
            i64 c;
            int rc = net_value(s->net, v, NULL, NULL, 1, &c, s->root_D + (size_t)v * n, &bad);
            if (rc < 0) {
                free(over);
                PyErr_Format(PyExc_ValueError, "budget search: closure flow failed at operator %d",
                             v);
                return NULL;
            }
            s->root_has[v] = 1;
            s->root_c[v] = c;
            if (c > B) break;
        }
    }
    free(over);
    i64 worst = -1;
    int root_op = -1;
    for (int v = 0; v < n; v++)
        if (s->root_has[v] && (s->root_c[v] > worst || (s->root_c[v] == worst && v > root_op))) {
            worst = s->root_c[v];
            root_op = v;
        }
    if (worst > B)
        return Py_BuildValue("(sOLiLi)", "failed", Py_None, (long long)worst, 0,
                             (long long)(s->flows - flows0), root_op);
    memcpy(s->Wd, s->net->anc, (size_t)n * n);
    memcpy(s->Wv, s->upper, sizeof(i64) * (size_t)n);
    for (int v = 0; v < n; v++)
        if (s->root_has[v]) {
            memcpy(s->Wd + (size_t)v * n, s->root_D + (size_t)v * n, (size_t)n);
            s->Wv[v] = s->root_c[v];
        }
    s->limit = max_nodes;
    s->has_deadline = dl != Py_None;
    if (s->has_deadline) { /* seconds left, measured on this module's clock */
        s->deadline = now_seconds() + PyFloat_AsDouble(dl);
        if (PyErr_Occurred()) return NULL;
    }
    memset(s->Sb, 0, (size_t)n);
    memcpy(s->rem, s->ncons, sizeof(i64) * (size_t)s->m);
    memcpy(s->indeg, s->indeg0, sizeof(i64) * (size_t)n);
    for (int v = 0; v < n; v++) s->ready[v] = s->indeg[v] == 0;
    memset(s->S, 0, sizeof(u64) * (size_t)s->W);
    s->norder = 0;
    s->undo_top = 0;
    s->rows_top = 0;
    i64 floor = 0;
    int rc = dfs(s, 0, &floor);
    long long nodes = (long long)s->nodes, flows = (long long)(s->flows - flows0);
    if (rc == ST_ERR) return NULL;
    if (rc == ST_STOP)
        return Py_BuildValue("(sOOLLO)", "stopped", Py_None, Py_None, nodes, flows, Py_None);
    if (rc == ST_FOUND) {
        PyObject *order = PyList_New(n);
        if (!order) return NULL;
        for (int i = 0; i < n; i++) PyList_SET_ITEM(order, i, PyLong_FromLong(s->order[i]));
        return Py_BuildValue("(sNOLLO)", "found", order, Py_None, nodes, flows, Py_None);
    }
    if (rc == ST_CUT) floor = s->cut_floor;
    return Py_BuildValue("(sOLLLO)", "failed", Py_None, (long long)floor, nodes, flows, Py_None);
}

static PyObject *search_memo_size(Search *s, PyObject *unused) {
    return PyLong_FromLongLong((long long)s->memo_count);
}

static PyMethodDef search_methods[] = {
    {"probe", (PyCFunction)search_probe, METH_VARARGS,
     "probe(B, max_nodes, seconds) -> (status, order, bound, nodes, flows, root_op)"},
    {"memo_size", (PyCFunction)search_memo_size, METH_NOARGS, "states in the memo"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scheduling._budget.Search",
    .tp_basicsize = sizeof(Search),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)search_init,
    .tp_dealloc = (destructor)search_dealloc,
    .tp_methods = search_methods,
    .tp_doc = "The compiled budget search of budget_search.BudgetSearch (same states, floors).",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_budget",
                                    "Compiled engine of the order decision (Net, Search).", -1,
                                    NULL};

PyMODINIT_FUNC PyInit__budget(void) {
    if (PyType_Ready(&NetType) < 0 || PyType_Ready(&SearchType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod) return NULL;
    Py_INCREF(&NetType);
    Py_INCREF(&SearchType);
    if (PyModule_AddObject(mod, "Net", (PyObject *)&NetType) < 0 ||
        PyModule_AddObject(mod, "Search", (PyObject *)&SearchType) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
