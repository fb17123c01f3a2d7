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
 *                      blocks instead of a scan of all of them: a max-end segment tree over the
 *                      buffers in start order (the role of XLA's BufferIntervalTree) enumerates
 *                      exactly the placed buffers live at the same time in O(k log(n / k) +
 *                      log n), which are merge-sorted by offset (O(k log k)) and scanned for
 *                      the lowest gap. Total O(n log n + sum_i k_i log k_i), k_i = placed
 *                      buffers overlapping buffer i in time: O(n log n) when the live set is
 *                      bounded, O(n^2 log n) when every buffer overlaps every other.
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
/* Lowest aligned offset for a block of csz bytes (alignment ca) given the k placed blocks live
 * with it as [L[j], H[j]) sorted by L: the gap scan of lowest_fit. */
static inline int64_t gap_scan(const int64_t *L, const int64_t *H, int64_t k, int64_t csz,
                               int64_t ca)
{
    int64_t o = 0;
    for (int64_t j = 0; j < k; j++) {
        if (o + csz <= L[j]) break;
        int64_t t = align_up(H[j], ca);
        if (t > o) o = t;
    }
    return o;
}

/* Stable sort of the pairs (L[j], H[j]), j < k, by L: insertion sort of runs of 8, then
 * bottom-up merges between (L, H) and (tL, tH) (k slots each). O(k log k). Returns 1 when the
 * sorted pairs ended in (tL, tH), 0 when in (L, H). */
static int sort_pairs(int64_t *L, int64_t *H, int64_t *tL, int64_t *tH, int64_t k)
{
    for (int64_t lo = 0; lo < k; lo += 8) {
        int64_t hi = lo + 8 < k ? lo + 8 : k;
        for (int64_t j = lo + 1; j < hi; j++) {
            int64_t x = L[j], y = H[j], q = j;
            while (q > lo && L[q - 1] > x) { L[q] = L[q - 1]; H[q] = H[q - 1]; q--; }
            L[q] = x; H[q] = y;
        }
    }
    int64_t *aL = L, *aH = H, *bL = tL, *bH = tH;
    int swapped = 0;
    for (int64_t w = 8; w < k; w *= 2) {
        for (int64_t lo = 0; lo < k; lo += 2 * w) {
            int64_t mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                if (aL[j] < aL[i]) { bL[o] = aL[j]; bH[o++] = aH[j++]; }
                else { bL[o] = aL[i]; bH[o++] = aH[i++]; }
            }
            while (i < mid) { bL[o] = aL[i]; bH[o++] = aH[i++]; }
            while (j < hi) { bL[o] = aL[j]; bH[o++] = aH[j++]; }
        }
        int64_t *t = aL; aL = bL; bL = t;
        t = aH; aH = bH; bH = t;
        swapped ^= 1;
    }
    return swapped;
}

/* Append to (L, H)[k..) the [offset, top) of the placed blocks under tree node u whose end
 * exceeds cs (depth-first, only into children whose max end exceeds cs); returns the new k.
 * posoff / postop: offset and top by start position (leaf u >= P is position u - P). */
static inline int64_t tree_collect(const int64_t *tree, int64_t P, int64_t u, int64_t cs,
                                   const int64_t *posoff, const int64_t *postop, int64_t *L,
                                   int64_t *H, int64_t k)
{
    int64_t stk[64], top = 0; /* depth-first: at most the subtree height + 1 entries */
    if (tree[u] > cs) stk[top++] = u;
    while (top > 0) {
        int64_t v = stk[--top];
        if (v >= P) { L[k] = posoff[v - P]; H[k] = postop[v - P]; k++; continue; }
        if (tree[2 * v + 1] > cs) stk[top++] = 2 * v + 1;
        if (tree[2 * v] > cs) stk[top++] = 2 * v;
    }
    return k;
}

static void greedy_by_size_tree(job_t *job)
{
    int64_t n = job->n;
    const int64_t *st = job->start, *en = job->end, *sz = job->size, *al = job->align;
    int64_t *off = job->offset, *w = job->work;
    int64_t *order = w, *tmp = w + n, *key = w + 2 * n, *sst = w + 3 * n, *rank = w + 4 * n;
    int64_t *L = w + 5 * n, *tree = w + 6 * n; /* tree: 2 P <= 4 n slots */
    int64_t *postop = w + 10 * n, *H = w + 11 * n, *tL = w + 12 * n, *tH = tmp;
    int64_t P = 1;
    while (P < n) P *= 2;
    /* start order (ties: index), then stably by size descending: (-size, start, index) */
    for (int64_t i = 0; i < n; i++) { key[i] = st[i]; sst[i] = i; }
    if (sort_pairs(key, sst, tL, tH, n))
        for (int64_t i = 0; i < n; i++) sst[i] = tH[i];
    for (int64_t i = 0; i < n; i++) { key[i] = -sz[sst[i]]; order[i] = sst[i]; }
    if (sort_pairs(key, order, tL, tH, n))
        for (int64_t i = 0; i < n; i++) order[i] = tH[i];
    for (int64_t i = 0; i < n; i++) { rank[sst[i]] = i; sst[i] = st[sst[i]]; } /* sorted starts */
    int64_t *posoff = key; /* by start position: offset and top of each placed block */
    for (int64_t v = 1; v < 2 * P; v++) tree[v] = INT64_MIN; /* max end of placed blocks */
    for (int64_t i = 0; i < n; i++) {
        int64_t c = order[i], cs = st[c], ce = en[c], csz = sz[c], ca = al[c];
        if (csz == 0) { off[c] = 0; continue; }
        /* lim: number of buffers starting before ce (binary search over the sorted starts) */
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (sst[mid] < ce) lo = mid + 1; else hi = mid;
        }
        /* placed blocks at positions [0, lim) whose end > cs: the canonical nodes of [0, lim)
         * bottom-up (l = P is a power of two: only l = 1, the root, is odd), each searched
         * depth-first where its max end exceeds cs */
        int64_t k = 0;
        for (int64_t l = P, r = P + lo; l < r; l >>= 1, r >>= 1) {
            if (l & 1) { k = tree_collect(tree, P, l, cs, posoff, postop, L, H, k); break; }
            if (r & 1) k = tree_collect(tree, P, r - 1, cs, posoff, postop, L, H, k);
        }
        int64_t o = sort_pairs(L, H, tL, tH, k) ? gap_scan(tL, tH, k, csz, ca)
                                                : gap_scan(L, H, k, csz, ca);
        off[c] = o;
        /* insert c at its start position: offset, top, its end at the leaf, maxima to the root */
        int64_t pos = rank[c], v = P + pos;
        posoff[pos] = o;
        postop[pos] = o + csz;
        tree[v] = ce;
        for (v /= 2; v >= 1; v /= 2) {
            int64_t a = tree[2 * v], b = tree[2 * v + 1];
            tree[v] = a > b ? a : b;
        }
    }
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
