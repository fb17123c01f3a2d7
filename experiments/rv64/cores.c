/*
 * memplan RV64 allocator cores: plain C99, freestanding, no libc, 64-bit sizes.
 *
 * The host (experiments/rv64/emulate.py) writes a job_t and its arrays into emulator memory, sets
 * sp, a0 = &job, ra = memplan_halt and starts at memplan_run; it stops when the core returns to
 * memplan_halt, so only the core's instructions are counted (the _start routine below exists for a
 * standalone image and is never counted).
 *
 * Conventions (same as planners/model.py): lifetimes are half-open [start, end) in schedule steps;
 * two buffers interfere iff a.start < b.end && b.start < a.end; sizes and offsets are bytes; a
 * zero-size buffer takes no space, conflicts with nothing and gets offset 0.
 *
 * Cores (job->core):
 *   0 greedy_in_order  seed 000 section 8 assign(): residents first, then stable by start; each
 *                      buffer at the lowest aligned offset that collides with no placed buffer live
 *                      at the same time (the seed's "moved" rescan loop, O(n^2) per pass).
 *   1 first_fit        problem order, lowest aligned offset (gather + sort + gap scan).
 *   2 best_fit         stable by start; the smallest gap between placed, time-overlapping buffers
 *                      that fits (ties: lowest offset), else on top of them.
 *   3 greedy_by_size   size descending (ties: earlier start, then problem order), lowest offset.
 *   4 freelist_bump    seed 001 section 3 online pool, simulated in schedule order: at each step
 *                      free the buffers whose lifetime ended, then allocate those that start;
 *                      request rounded up to job->granule; best-fit over the freelist (no
 *                      coalescing, a reused block keeps its size, ties: lowest freelist index),
 *                      bump when nothing fits; compaction when the freelist exceeds 200 entries.
 *   5 greedy_by_size_tree  the same placement as greedy_by_size (same order, same lowest offset,
 *                      hence the same offsets), with an ordered structure over the placed
 *                      blocks instead of a scan of all of them: the static centred interval
 *                      tree over time of the compiled engine planners/_ext/_greedy.c (the role
 *                      of XLA's BufferIntervalTree), each node keeping its placed members sorted
 *                      by offset, finds the nodes holding the placed buffers live at the same
 *                      time in O(log n + d) (d: buffers live with it); the lowest fitting offset
 *                      is then found by lifting a candidate through those sorted runs, without
 *                      sorting the neighbours. O(n^2 log n) in the worst case, about
 *                      O(n log n + E) for E interfering pairs when the lifts take few passes
 *                      over the runs; see the section's comment.
 */
#include <stdint.h>

typedef struct {
    int64_t core;        /* 0..4, see above */
    int64_t n;           /* number of buffers */
    int64_t granule;     /* freelist_bump request rounding (bytes, power of two or any >= 1) */
    int64_t reserved;
    const int64_t *start;    /* [n] half-open lifetime start (steps) */
    const int64_t *end;      /* [n] half-open lifetime end (steps) */
    const int64_t *size;     /* [n] bytes */
    const int64_t *align;    /* [n] effective alignment (bytes, >= 1) */
    const int64_t *resident; /* [n] 1 = resident (weights/inputs) */
    int64_t *offset;         /* [n] out: bytes */
    int64_t *work;           /* scratch, >= 13 n + 64 int64 */
    int64_t arena;           /* out: bytes (max offset + size; bump pointer for freelist_bump) */
    int64_t status;          /* out: 0 ok, nonzero error */
} job_t;

/* The compiler may emit calls to these for struct copies / zeroing loops. */
void *memset(void *d, int c, unsigned long n)
{
    unsigned char *p = (unsigned char *)d;
    while (n--) *p++ = (unsigned char)c;
    return d;
}

void *memcpy(void *d, const void *s, unsigned long n)
{
    unsigned char *p = (unsigned char *)d;
    const unsigned char *q = (const unsigned char *)s;
    while (n--) *p++ = *q++;
    return d;
}

/* Round v up to a multiple of a (a >= 1). A power-of-two alignment (every alignment the
 * harness produces) takes a mask and never reaches the divider; any other value divides. */
static inline int64_t align_up(int64_t v, int64_t a)
{
    if ((a & (a - 1)) == 0) return (v + a - 1) & -a;
    return (v + a - 1) / a * a;
}

/* Stable bottom-up merge sort of idx[0..n) by (k1[i], k2[i]) ascending; tmp has n slots.
 * k2 may be 0 (then only k1). O(n log n). */
static void sort_idx(int64_t *idx, int64_t *tmp, int64_t n, const int64_t *k1, const int64_t *k2)
{
    int64_t *a = idx, *b = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n;
            int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                int64_t x = a[i], y = a[j];
                int take_right = k1[y] < k1[x] || (k2 && k1[y] == k1[x] && k2[y] < k2[x]);
                b[o++] = take_right ? a[j++] : a[i++];
            }
            while (i < mid) b[o++] = a[i++];
            while (j < hi) b[o++] = a[j++];
        }
        int64_t *t = a; a = b; b = t;
    }
    if (a != idx)
        for (int64_t i = 0; i < n; i++) idx[i] = a[i];
}

/* ---- 0: seed 000 section 8 assign() ------------------------------------------------------- */
static void greedy_in_order(job_t *job)
{
    int64_t n = job->n;
    const int64_t *st = job->start, *en = job->end, *sz = job->size, *al = job->align;
    int64_t *off = job->offset;
    int64_t *idx = job->work, *tmp = job->work + n, *key = job->work + 2 * n;
    for (int64_t i = 0; i < n; i++) {
        idx[i] = i;
        key[i] = job->resident[i] ? INT64_MIN : st[i];
    }
    sort_idx(idx, tmp, n, key, 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = idx[i], cs = st[c], ce = en[c], csz = sz[c], ca = al[c];
        int64_t o = 0;
        int moved = csz > 0;
        while (moved) {
            moved = 0;
            for (int64_t j = 0; j < i; j++) {
                int64_t p = idx[j];
                if (!(cs < en[p] && st[p] < ce) || sz[p] == 0) continue; /* no time overlap */
                if (o < off[p] + sz[p] && o + csz > off[p]) {
                    o = align_up(off[p] + sz[p], ca);
                    moved = 1;
                }
            }
        }
        off[c] = o;
    }
}

/* Lowest aligned offset for buffer c against placed buffers (placed[c'] != 0) live with it:
 * gather the conflicting ones, insertion-sort them by offset, scan the gaps. */
static int64_t lowest_fit(job_t *job, int64_t c, const int64_t *order, int64_t nplaced,
                          int64_t *buf)
{
    const int64_t *st = job->start, *en = job->end, *sz = job->size, *off = job->offset;
    int64_t cs = st[c], ce = en[c], csz = sz[c], ca = job->align[c];
    int64_t k = 0;
    if (csz == 0) return 0;
    for (int64_t j = 0; j < nplaced; j++) {
        int64_t p = order[j];
        if (sz[p] == 0 || !(cs < en[p] && st[p] < ce)) continue;
        /* insertion by offset */
        int64_t q = k++;
        while (q > 0 && off[buf[q - 1]] > off[p]) { buf[q] = buf[q - 1]; q--; }
        buf[q] = p;
    }
    int64_t o = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t p = buf[j];
        if (o + csz <= off[p]) break;
        int64_t top = align_up(off[p] + sz[p], ca);
        if (top > o) o = top;
    }
    return o;
}

/* ---- 1 first_fit / 3 greedy_by_size: an order, then lowest offset -------------------------- */
static void lowest_in_order(job_t *job, const int64_t *order)
{
    int64_t n = job->n;
    int64_t *buf = job->work + 4 * n;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = order[i];
        job->offset[c] = lowest_fit(job, c, order, i, buf);
    }
}

/* ---- 2 best_fit ---------------------------------------------------------------------------- */
static void best_fit(job_t *job)
{
    int64_t n = job->n;
    const int64_t *st = job->start, *en = job->end, *sz = job->size;
    int64_t *off = job->offset;
    int64_t *idx = job->work, *tmp = job->work + n, *buf = job->work + 4 * n;
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    sort_idx(idx, tmp, n, st, 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = idx[i], cs = st[c], ce = en[c], csz = sz[c], ca = job->align[c];
        int64_t k = 0;
        if (csz == 0) { off[c] = 0; continue; }
        for (int64_t j = 0; j < i; j++) {
            int64_t p = idx[j];
            if (sz[p] == 0 || !(cs < en[p] && st[p] < ce)) continue;
            int64_t q = k++;
            while (q > 0 && off[buf[q - 1]] > off[p]) { buf[q] = buf[q - 1]; q--; }
            buf[q] = p;
        }
        /* gap [top, off[p]) below each neighbour; its length is measured unaligned, the fit
         * test uses the aligned start (as planners/greedy.py _best_fit_scan) */
        int64_t best = -1, best_gap = INT64_MAX, top = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t p = buf[j];
            if (off[p] > top) {
                int64_t lo = align_up(top, ca);
                if (lo + csz <= off[p] && off[p] - top < best_gap) { best_gap = off[p] - top; best = lo; }
            }
            if (off[p] + sz[p] > top) top = off[p] + sz[p];
        }
        off[c] = best >= 0 ? best : align_up(top, ca);
    }
}

/* ---- 4 freelist_bump: seed 001 section 3 --------------------------------------------------- */
#define COMPACT_AT 200

static void freelist_bump(job_t *job)
{
    int64_t n = job->n, g = job->granule;
    const int64_t *st = job->start, *en = job->end, *sz = job->size;
    int64_t *off = job->offset;
    int64_t *alloc = job->work, *tmp = job->work + n, *fre = job->work + 2 * n;
    int64_t *fl_off = job->work + 3 * n, *fl_size = job->work + 4 * n;
    int64_t *fl_used = job->work + 5 * n, *blk = job->work + 6 * n;
    int64_t count = 0, bump = 0;
    for (int64_t i = 0; i < n; i++) { alloc[i] = i; fre[i] = i; }
    sort_idx(alloc, tmp, n, st, 0);
    sort_idx(fre, tmp, n, en, 0);
    int64_t f = 0;
    for (int64_t a = 0; a < n; a++) {
        int64_t c = alloc[a], t = st[c];
        /* free every buffer whose lifetime ended at or before step t */
        for (; f < n && en[fre[f]] <= t; f++) {
            int64_t d = fre[f];
            if (sz[d] == 0) continue;
            fl_off[count] = off[d];
            fl_size[count] = blk[d];
            fl_used[count] = 0;
            count++;
        }
        if (sz[c] == 0) { off[c] = 0; blk[c] = 0; continue; }
        int64_t req = align_up(sz[c], g);
        int64_t best = -1, best_size = INT64_MAX;
        for (int64_t i = 0; i < count; i++) {
            if (fl_used[i]) continue;
            if (fl_size[i] >= req && fl_size[i] < best_size) { best_size = fl_size[i]; best = i; }
        }
        if (best >= 0) {
            fl_used[best] = 1;
            off[c] = fl_off[best];
            blk[c] = fl_size[best];
            if (count > COMPACT_AT) {
                int64_t w = 0;
                for (int64_t r = 0; r < count; r++) {
                    if (!fl_used[r]) {
                        fl_off[w] = fl_off[r]; fl_size[w] = fl_size[r]; fl_used[w] = 0; w++;
                    }
                }
                count = w;
            }
        } else {
            off[c] = bump;
            blk[c] = req;
            bump += req;
        }
    }
    job->arena = bump;
}

/* ---- 5 greedy_by_size_tree ------------------------------------------------------------------ */
/* Same offsets as core 3 (planners.greedy greedy_by_size: size descending, ties earlier start,
 * then problem order; each buffer at the lowest offset, a multiple of its alignment, whose
 * [offset, offset + size) misses every placed neighbour: a placed buffer of non-zero size whose
 * half-open lifetime intersects its own), found without a scan of all placed buffers.
 *
 * Structure: the static centred interval tree over time of the compiled engine
 * (planners/_ext/_greedy.c), which plays the role of XLA's BufferIntervalTree (heap simulator,
 * xla/service/heap_simulator). Its nodes are a minimum set of steps stabbing every non-zero
 * lifetime, chosen greedily by decreasing start (the start of each lifetime no chosen step
 * stabs yet: the mirror of the engine's end-order greedy; the lifetime that gave a step holds no
 * other step, so every node is some buffer's home), point[0] < ... < point[m-1], as the implicit
 * balanced tree on index ranges (the node of [lo, hi) is (lo + hi) / 2). A buffer's home is the
 * first node on the root path whose step lies in its lifetime; every buffer homed in the left
 * subtree of a node with step p ends at or before p, every one in the right subtree starts
 * after p. Unlike the engine, a node keeps only its *placed* members, in one list sorted by
 * offset (a slot range sized by the member count, filled by insertion), and the largest end and
 * smallest start among them. The members of a node all hold its step, so they overlap in time
 * and hence are disjoint in memory: the list is a sorted run of disjoint address ranges.
 *
 * Query for [s, e): one descent from the root, shared down to the buffer's own home, then on
 * toward s in its left and toward e in its right subtree. A node with step p < s (all on the
 * search path of s) can hold live members only if its largest end exceeds s, a node with
 * p >= e (on the path of e) only if its smallest start is below e; the nodes with s <= p < e
 * are a contiguous index run and every member is live. Each node with a live placed member
 * gives a run (its list, with the liveness test of its kind). O(log m + d) for the d non-zero
 * buffers live with the query (each contained node is some buffer's home).
 *
 * Lowest offset without sorting: x = 0; "lifting" x through a run passes its members that end
 * at or below x (for good: x only grows) and the members not live with the query, raises x to
 * the aligned round-up of the top of a live member that overlaps [x, x + size), and stops at
 * the first member at or above x + size (the later ones are higher still; a run's list is
 * sorted and disjoint, so its tops rise too), whose offset it keeps as the run's head. Every
 * raise is forced (no aligned offset from x up to that top is free, and by induction none
 * below x), so x never passes the answer; passes over the runs (a run whose head is at or
 * above x + size is skipped without reading its list, an exhausted run leaves the array) end
 * when a whole pass leaves x unchanged, and then no live member overlaps [x, x + size): x is
 * the lowest free aligned offset, which is what the scan of lowest_fit over the sorted
 * neighbours returns. Within one lift, after the first raise x is the aligned top of the last
 * live member read (round-up is monotone and the tops rise), so later live members set x by a
 * branch-free select; before it one branch tests "above x and live". The runs of the three
 * kinds (path of s, path of e, contained) sit in three segments of the run array, so each kind
 * has its own loop and liveness test (end > s, start < e, none). After MAX_PASSES passes the
 * runs are merged instead: a binary min-heap by head, lifting the lowest while it lies below
 * x + size (each lift passes at least that member or fixes its head). Power-of-two alignments
 * round up with a mask, others divide (a separate, comparison-based lift).
 *
 * Cost per buffer: O(log m + d) for the descent and the runs, plus the members the lifts read
 * (each at most once, plus one re-read per lift call: live neighbours below the answer, and
 * members of the s- and e-path nodes that are not live with the buffer) and O(r) per pass for
 * r runs; at most MAX_PASSES passes, then O(log r) per member read. Worst case O(n log n) per
 * buffer, so O(n^2 log n) in all; with few passes and few non-live path members it is
 * O(n log n + E) for E interfering pairs, with no sort of the neighbours. Inserting a placed
 * buffer shifts the later members of its home list: O(sum_v c_v^2) for c_v members of node v.
 * Preprocessing: stable LSD radix sorts of (key, index) pairs (start; then -size, for the
 * order), digits of at most 11 bits over the bits in which the keys differ, and one O(log m)
 * descent per buffer to count each node's members.
 *
 * Scratch (int64 slots of job->work, within 13 n + 64): member records 4 n, nodes 4 n + 4, runs
 * 4 n (3 slots each, at most m <= n), order n / 2 and heap n / 2 (int32); while preprocessing
 * the record area holds the pairs and the run area the radix counters. Counts and positions are
 * int32 (n < 2^31). */
typedef struct { int64_t o, t; } seg_t;              /* (key, index) pair while sorting */
typedef struct { int64_t o, t, s, e; } rec_t;        /* placed member: [o, t) bytes, [s, e) steps */
typedef struct { int64_t point, max_end, min_start; int32_t b0, cnt; } tnode_t;

static inline int bit_length(uint64_t r)
{
    int b = 0;
    while (r) { b++; r >>= 1; }
    return b;
}

/* Stable LSD radix sort of a[0..n) by the signed key .o, digits of at most wmax bits over the
 * bits in which the keys differ (key - min); cnt holds 2^wmax counters, b n slots. Returns the
 * array holding the result (a or b). */
static seg_t *radix_pairs(seg_t *a, seg_t *b, int64_t n, uint32_t *cnt, int wmax)
{
    if (n < 2) return a;
    int64_t lo = a[0].o, hi = a[0].o;
    for (int64_t q = 1; q < n; q++) {
        int64_t x = a[q].o;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    const int bits = bit_length((uint64_t)hi - (uint64_t)lo);
    if (bits == 0) return a;
    int passes = 1, w = bits;
    while (w > wmax) { passes++; w = (bits + passes - 1) / passes; }
    const uint64_t mask = ((uint64_t)1 << w) - 1, ulo = (uint64_t)lo;
    for (int d = 0; d < passes; d++) {
        const int sh = d * w;
        for (uint64_t v = 0; v <= mask; v++) cnt[v] = 0;
        for (int64_t q = 0; q < n; q++) cnt[((uint64_t)a[q].o - ulo) >> sh & mask]++;
        uint32_t sum = 0;
        for (uint64_t v = 0; v <= mask; v++) { uint32_t c = cnt[v]; cnt[v] = sum; sum += c; }
        for (int64_t q = 0; q < n; q++) {
            seg_t x = a[q];
            b[cnt[((uint64_t)x.o - ulo) >> sh & mask]++] = x;
        }
        seg_t *t = a; a = b; b = t;
    }
    return a;
}

/* A run: the placed members [p, z) of one node, sorted by offset and disjoint (they share the
 * node's step), and head, a lower bound on the offset of *p (INT64_MAX once exhausted). Which
 * members are live with the query follows from where the run sits in the run array: kind 1
 * (node step < query start: those ending after it), kind 2 (node step >= query end: those
 * starting before it), kind 0 (node step inside the lifetime: all). */
typedef struct { const rec_t *p, *z; int64_t head; } run_t;

#define LIVE_(q) (kind == 0 ? 1 : kind == 1 ? (q)->e > lim : (q)->s < lim)

/* Moves x up through R (x a multiple of the alignment): passes the members below x + csz,
 * raising x to the aligned top of each live one above x, and stops at the first member at or
 * above x + csz (the later ones are higher still), which becomes R's head. Members are disjoint
 * and sorted, so their tops rise with p; once a live member raised x, x is the aligned top of
 * the last live member read (round-up is monotone) and each later live member sets it
 * outright: a select, no comparison with x. kind: see run_t; lim: the query's start (kind 1) or
 * end (kind 2); am = alignment - 1, a power of two. */
__attribute__((always_inline)) static inline int64_t lift(run_t *R, int64_t x, int64_t csz,
                                                          int64_t am, const int kind,
                                                          int64_t lim)
{
    const rec_t *p = R->p, *const z = R->z;
    int64_t head = INT64_MAX;
    const int64_t xc = x + csz;
    while (p < z) { /* until the first raise: x stays */
        const int64_t o = p->o, t = p->t;
        const int64_t w = kind == 1 ? p->e : kind == 2 ? p->s : 0;
        p++;
        if (o >= xc) { head = o; p--; goto out; }
        int64_t g = kind == 0 ? t > x : kind == 1 ? (t > x) & (w > lim) : (t > x) & (w < lim);
        __asm__("" : "+r"(g)); /* one branch for both tests */
        if (g) { x = (t + am) & ~am; break; }
    }
    for (; p < z; p++) { /* after it */
        const int64_t o = p->o;
        if (o >= x + csz) { head = o; break; }
        const int64_t y = (p->t + am) & ~am;
        if (kind == 0) x = y;
        else {
            int64_t mk = -(int64_t)LIVE_(p);
            __asm__("" : "+r"(mk)); /* keep the select branch-free */
            x = (y & mk) | (x & ~mk);
        }
    }
out:
    R->p = p; R->head = head;
    return x;
}

/* The same for any alignment ca (raise by comparison, a division per raise) and any kind: the
 * non-power-of-two path and the heap merge. */
__attribute__((noinline)) static int64_t lift_any(run_t *R, int64_t x, int64_t csz, int64_t ca,
                                                  const int kind, int64_t lim)
{
    const rec_t *p = R->p, *const z = R->z;
    int64_t head = INT64_MAX;
    for (; p < z; p++) {
        if (p->t <= x || !LIVE_(p)) continue;
        if (p->o >= x + csz) { head = p->o; break; }
        x = align_up(p->t, ca);
    }
    R->p = p; R->head = head;
    return x;
}
#undef LIVE_

/* passes over the runs before they are merged by a heap (-DMAX_PASSES=1 forces the merge) */
#ifndef MAX_PASSES
#define MAX_PASSES 16
#endif
static void greedy_by_size_tree(job_t *job)
{
    const int64_t n = job->n;
    const int64_t *st = job->start, *en = job->end, *sz = job->size, *al = job->align;
    int64_t *off = job->offset, *w = job->work;
    if (n <= 0) return;
    /* scratch layout: see the comment above */
    rec_t *rec = (rec_t *)w;
    tnode_t *node = (tnode_t *)(w + 4 * n);
    run_t *run = (run_t *)(w + 8 * n + 4);                  /* at most m <= n runs: 3 slots */
    int32_t *order = (int32_t *)(w + 12 * n + 4);
    int32_t *hp = (int32_t *)(w + 12 * n + 4 + (n + 1) / 2); /* heap of runs: n / 2 slots */
    seg_t *pa = (seg_t *)w, *pb = (seg_t *)(w + 2 * n);
    uint32_t *pcnt = (uint32_t *)run;            /* the run area, free while preprocessing */
    const int64_t ncnt = 2 * (4 * n);
    int pbits = 0;
    while (((int64_t)2 << pbits) <= ncnt && ((int64_t)1 << pbits) < 2 * n && pbits < 11) pbits++;

    /* the non-zero-size buffers by start (ties: index) */
    int64_t nz = 0;
    for (int64_t i = 0; i < n; i++) {
        if (sz[i] > 0) { pa[nz].o = st[i]; pa[nz].t = i; nz++; }
        else off[i] = 0;
    }
    if (nz == 0) return;
    seg_t *a = radix_pairs(pa, pb, nz, pcnt, pbits);
    /* stabbing steps, greedily by decreasing start: the start of each lifetime not yet stabbed
     * (a minimum stabbing set, mirror of the end-order greedy) */
    int64_t m = 0;
    for (int64_t q = nz - 1; q >= 0; q--) {
        int64_t i = a[q].t;
        if (m == 0 || en[i] <= node[m - 1].point) node[m++].point = st[i];
    }
    for (int64_t v = 0; v < m / 2; v++) {
        int64_t t = node[v].point;
        node[v].point = node[m - 1 - v].point;
        node[m - 1 - v].point = t;
    }
    for (int64_t v = 0; v < m; v++) {
        node[v].cnt = 0; node[v].max_end = INT64_MIN; node[v].min_start = INT64_MAX;
    }
    /* members per node (each buffer at its home), then slot ranges */
    for (int64_t i = 0; i < n; i++) {
        if (sz[i] <= 0) continue;
        int64_t s = st[i], e = en[i], lo = 0, hi = m, v;
        for (;;) {
            v = (lo + hi) >> 1;
            if (node[v].point < s) lo = v + 1;
            else if (node[v].point >= e) hi = v;
            else break;
        }
        node[v].cnt++;
    }
    int32_t b = 0;
    for (int64_t v = 0; v < m; v++) { node[v].b0 = b; b += node[v].cnt; node[v].cnt = 0; }
    /* then stably by size descending: (-size, start, index) */
    for (int64_t q = 0; q < nz; q++) a[q].o = -sz[a[q].t];
    a = radix_pairs(a, a == pa ? pb : pa, nz, pcnt, pbits);
    for (int64_t q = 0; q < nz; q++) order[q] = (int32_t)a[q].t;

    /* place in order */
#define HKEY(i) run[hp[i]].head
#define SIFT(i0)                                                                               \
    do {                                                                                       \
        int64_t i_ = (i0);                                                                     \
        const int32_t r_ = hp[i_];                                                             \
        const int64_t k_ = run[r_].head;                                                       \
        for (;;) {                                                                             \
            int64_t c_ = 2 * i_ + 1;                                                           \
            if (c_ >= nh) break;                                                               \
            if (c_ + 1 < nh && HKEY(c_ + 1) < HKEY(c_)) c_++;                                  \
            if (HKEY(c_) >= k_) break;                                                         \
            hp[i_] = hp[c_];                                                                   \
            i_ = c_;                                                                           \
        }                                                                                      \
        hp[i_] = r_;                                                                           \
    } while (0)
#define ADD_RUN(R, N)                                                                          \
    do {                                                                                       \
        (R)->p = rec + (N)->b0; (R)->z = rec + (N)->b0 + (N)->cnt; (R)->head = INT64_MIN;      \
    } while (0)
    for (int64_t q = 0; q < nz; q++) {
        const int64_t c = order[q], qs = st[c], qe = en[c], csz = sz[c], ca = al[c];
        int64_t lo = 0, hi = m, v;
        /* the nodes holding a placed member live with c: one descent, shared down to the home
         * of c, then toward qs on its left and toward qe on its right. Runs of kind 1 fill the
         * run array from the front, kind 2 from the back (slot m - 1 down), kind 0 follow
         * kind 1: at most m runs in all. */
        run_t *r1 = run, *r2 = run + m;
        for (;;) {
            v = (lo + hi) >> 1;
            const tnode_t *N = &node[v];
            if (N->point < qs) {
                if (N->max_end > qs) { ADD_RUN(r1, N); r1++; }
                lo = v + 1;
            } else if (N->point >= qe) {
                if (N->min_start < qe) { --r2; ADD_RUN(r2, N); }
                hi = v;
            } else break;
        }
        const int64_t h = v;
        int64_t l = lo, r = h;
        while (l < r) {
            const int64_t u = (l + r) >> 1;
            if (node[u].point < qs) {
                if (node[u].max_end > qs) { ADD_RUN(r1, &node[u]); r1++; }
                l = u + 1;
            } else r = u;
        }
        const int64_t first = l;
        l = h + 1; r = hi;
        while (l < r) {
            const int64_t u = (l + r) >> 1;
            if (node[u].point >= qe) {
                if (node[u].min_start < qe) { --r2; ADD_RUN(r2, &node[u]); }
                r = u;
            } else l = u + 1;
        }
        run_t *r0 = r1;
        for (int64_t u = first; u < l; u++)
            if (node[u].cnt) { ADD_RUN(r0, &node[u]); r0++; }
        /* lowest aligned offset: lift x through the runs (see the comment above) */
        int64_t x = 0;
        if (r0 > run || r2 < run + m) {
            const int64_t am = (ca & (ca - 1)) == 0 ? ca - 1 : -1;
            int passes = 0;
            int64_t x0;
            run_t *R, *e1 = r1, *e0 = r0, *b2 = r2;
            do { /* passes over the runs until one leaves x unchanged */
                x0 = x;
                if (am >= 0) { /* an exhausted run leaves its kind's segment */
                    for (R = b2; R < run + m;) {
                        if (R->head < x + csz) {
                            x = lift(R, x, csz, am, 2, qe);
                            if (R->head == INT64_MAX) { *R = *b2++; }
                        }
                        R++;
                    }
                    for (R = run; R < e1;) {
                        if (R->head < x + csz) {
                            x = lift(R, x, csz, am, 1, qs);
                            if (R->head == INT64_MAX) { *R = *--e1; continue; }
                        }
                        R++;
                    }
                    for (R = r1; R < e0;) {
                        if (R->head < x + csz) {
                            x = lift(R, x, csz, am, 0, 0);
                            if (R->head == INT64_MAX) { *R = *--e0; continue; }
                        }
                        R++;
                    }
                } else {
                    for (R = run; R < r1; R++)
                        if (R->head < x + csz) x = lift_any(R, x, csz, ca, 1, qs);
                    for (; R < r0; R++)
                        if (R->head < x + csz) x = lift_any(R, x, csz, ca, 0, 0);
                    for (R = r2; R < run + m; R++)
                        if (R->head < x + csz) x = lift_any(R, x, csz, ca, 2, qe);
                }
            } while (x != x0 && ++passes < MAX_PASSES);
            if (x != x0) {
                /* many passes: merge instead, a min-heap of the runs by head; lift the lowest
                 * while it lies below x + csz (each lift passes at least that member or fixes
                 * the run's head: O(log nr) per member) */
                int64_t nh = 0;
                for (R = run; R < e1; R++) hp[nh++] = (int32_t)(R - run);
                for (R = r1; R < e0; R++) hp[nh++] = (int32_t)(R - run);
                for (R = b2; R < run + m; R++) hp[nh++] = (int32_t)(R - run);
                for (int64_t i = nh / 2 - 1; i >= 0; i--) SIFT(i);
                while (nh > 0 && HKEY(0) < x + csz) {
                    R = &run[hp[0]];
                    const int kind = R < r1 ? 1 : R < r0 ? 0 : 2;
                    x = lift_any(R, x, csz, ca, kind, kind == 1 ? qs : qe);
                    if (R->head == INT64_MAX) hp[0] = hp[--nh];
                    SIFT(0);
                }
            }
        }
        off[c] = x;
        /* insert c into its home's list (by offset) */
        tnode_t *H = &node[h];
        rec_t *base = rec + H->b0;
        int64_t k = H->cnt;
        while (k > 0 && base[k - 1].o > x) { base[k] = base[k - 1]; k--; }
        base[k].o = x; base[k].t = x + csz; base[k].s = qs; base[k].e = qe;
        H->cnt++;
        if (qe > H->max_end) H->max_end = qe;
        if (qs < H->min_start) H->min_start = qs;
    }
#undef ADD_RUN
#undef SIFT
#undef HKEY
}

void memplan_run(job_t *job)
{
    int64_t n = job->n;
    job->status = 0;
    switch (job->core) {
/* -DMEMPLAN_CORE=<id> builds an image with one core only (code size per core). */
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 0
    case 0: greedy_in_order(job); break;
#endif
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 1
    case 1: {
        int64_t *order = job->work + 2 * n;
        for (int64_t i = 0; i < n; i++) order[i] = i;
        lowest_in_order(job, order);
        break;
    }
#endif
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 2
    case 2: best_fit(job); break;
#endif
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 3
    case 3: {
        int64_t *order = job->work + 2 * n, *tmp = job->work + n, *neg = job->work + 3 * n;
        for (int64_t i = 0; i < n; i++) { order[i] = i; neg[i] = -job->size[i]; }
        sort_idx(order, tmp, n, neg, job->start);
        lowest_in_order(job, order);
        break;
    }
#endif
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 4
    case 4: freelist_bump(job); return;
#endif
#if !defined(MEMPLAN_CORE) || MEMPLAN_CORE == 5
    case 5: greedy_by_size_tree(job); break;
#endif
    default: job->status = 1; return;
    }
    int64_t arena = 0;
    for (int64_t i = 0; i < n; i++)
        if (job->size[i] > 0 && job->offset[i] + job->size[i] > arena)
            arena = job->offset[i] + job->size[i];
    job->arena = arena;
}

/* Standalone entry: stack from the linker script, job at the fixed address MEMPLAN_JOB. */
#ifndef MEMPLAN_JOB
#define MEMPLAN_JOB 0x1000000
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
__asm__(".section .text.start,\"ax\",@progbits\n"
        ".globl _start\n"
        "_start:\n"
        "  la sp, _stack_top\n"
        "  li a0, " STR(MEMPLAN_JOB) "\n"
        "  call memplan_run\n"
        ".globl memplan_halt\n"
        "memplan_halt:\n"
        "  ebreak\n"
        "  j memplan_halt\n"
        ".text\n");
