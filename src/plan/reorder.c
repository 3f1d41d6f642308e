/* Row reordering for the tensor-core plan: the orderings, the block count that judges them,
 * and the plan's conversion with a row permutation (reorder.h, docs/reorder.md).
 *
 * Where it runs: on the host, with pthreads.  Every ordering here is a few O(nnz) passes
 * (per-row features, MinHash signatures, block counts: parallel over rows or windows) and a
 * handful of O(rows) sorts and union-find sweeps (sequential, cheap next to the passes).  On
 * the host the same code serves the plan, tcsparse-inspect and the unit tests, runs without
 * a GPU, and is deterministic whatever the thread count; copying the index arrays down costs
 * about 5 ms per 16M nonzeros, small next to the passes themselves. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "internal.h"
#include "plan.h"
#include "reorder.h"

#define WIN 16

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *const ord_names[TC_ORD_COUNT] = {"identity", "cluster", "first-col", "degree",
                                                    "minhash",  "bfs"};

const char *tc_ordering_name(int ordering)
{
    return ordering >= 0 && ordering < TC_ORD_COUNT ? ord_names[ordering] : "?";
}

int tc_ordering_parse(const char *name)
{
    for (int k = 0; k < TC_ORD_COUNT; k++)
        if (name != NULL && strcmp(name, ord_names[k]) == 0)
            return k;
    return -1;
}

int tc_reorder_threads(void)
{
    const int t = tc_config_get()->reorder.threads;
    long n = t > 0 ? t : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ---- a parallel loop -------------------------------------------------------------------
 * fn(ctx, begin, end, tid) over [0, n) in pieces taken dynamically by nthreads threads (tid
 * in [0, nthreads)); the caller's thread is tid 0.  A thread that cannot be created leaves
 * its share to the others. */
typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end, int tid);

typedef struct {
    range_fn fn;
    void *ctx;
    int64_t n, piece;
    atomic_llong next;
} par_state;

typedef struct {
    par_state *s;
    int tid;
} par_arg;

static void *par_worker(void *p)
{
    par_arg *a = p;
    par_state *s = a->s;
    for (;;) {
        int64_t b = atomic_fetch_add(&s->next, s->piece);
        if (b >= s->n)
            break;
        int64_t e = b + s->piece < s->n ? b + s->piece : s->n;
        s->fn(s->ctx, b, e, a->tid);
    }
    return NULL;
}

static void par_for(int64_t n, int nthreads, int64_t min_piece, range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (nthreads > 64)
        nthreads = 64;
    if (nthreads <= 1 || n <= min_piece) {
        fn(ctx, 0, n, 0);
        return;
    }
    par_state s = {.fn = fn, .ctx = ctx, .n = n};
    s.piece = n / ((int64_t)nthreads * 16);
    if (s.piece < min_piece)
        s.piece = min_piece;
    atomic_init(&s.next, 0);
    pthread_t th[64];
    par_arg args[64];
    int started[64] = {0};
    for (int t = 0; t < nthreads; t++)
        args[t] = (par_arg){&s, t};
    for (int t = 1; t < nthreads; t++)
        started[t] = pthread_create(&th[t], NULL, par_worker, &args[t]) == 0;
    par_worker(&args[0]);
    for (int t = 1; t < nthreads; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* ---- block count -------------------------------------------------------------------------- */

typedef struct {
    const tc_rcsr *a;
    const int32_t *order;
    int32_t **mark;     /* per thread: cols entries, the last window that saw the column */
    int64_t *blocks;    /* per thread */
} count_ctx;

static void count_range(void *p, int64_t wb, int64_t we, int tid)
{
    count_ctx *c = p;
    const tc_rcsr *a = c->a;
    int32_t *mark = c->mark[tid];
    int64_t blocks = 0;
    for (int64_t w = wb; w < we; w++) {
        int64_t distinct = 0;
        for (int64_t pos = w * WIN; pos < (w + 1) * WIN && pos < a->rows; pos++) {
            const int64_t r = c->order ? c->order[pos] : pos;
            for (int64_t e = a->row_off[r]; e < a->row_off[r + 1]; e++) {
                const int32_t col = a->col[e];
                if (mark[col] != (int32_t)w) {
                    mark[col] = (int32_t)w;
                    distinct++;
                }
            }
        }
        blocks += (distinct + 7) / 8;
    }
    c->blocks[tid] += blocks;
}

int64_t tc_reorder_count_blocks(const tc_rcsr *a, const int32_t *order, int nthreads)
{
    const int64_t W = (a->rows + WIN - 1) / WIN;
    if (a->nnz == 0 || W == 0)
        return 0;
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > 64)
        nthreads = 64;
    /* a thread needs work for its marker array to pay off */
    while (nthreads > 1 && a->nnz / nthreads < 65536)
        nthreads--;
    int32_t *marks[64] = {0};
    int64_t blocks[64] = {0};
    int64_t total = -1;
    for (int t = 0; t < nthreads; t++) {
        marks[t] = malloc(sizeof(int32_t) * (size_t)(a->cols > 0 ? a->cols : 1));
        if (marks[t] == NULL)
            goto done;
        memset(marks[t], 0xff, sizeof(int32_t) * (size_t)a->cols);
    }
    count_ctx c = {a, order, marks, blocks};
    par_for(W, nthreads, 256, count_range, &c);
    total = 0;
    for (int t = 0; t < nthreads; t++)
        total += blocks[t];
done:
    for (int t = 0; t < nthreads; t++)
        free(marks[t]);
    return total;
}

/* ---- per-row features --------------------------------------------------------------------- */

#define NSIG 8 /* MinHash functions of the clustering; the minhash ordering uses the first */

static inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* Hash j of column c: distinct odd multipliers and offsets, then a full avalanche. */
static inline uint32_t col_hash(int j, int32_t c)
{
    static const uint32_t mul[NSIG] = {0x9e3779b1u, 0x85ebca77u, 0xc2b2ae3du, 0x27d4eb2fu,
                                       0x165667b1u, 0xd3a2646du, 0xfd7046c5u, 0xb55a4f09u};
    return mix32((uint32_t)c * mul[j] + 0x6a09e667u * (uint32_t)(j + 1));
}

typedef struct {
    const tc_rcsr *a;
    int32_t *deg, *fcol;
    uint32_t *sig; /* rows * nsig, or NULL */
    int nsig;
} feat_ctx;

static void feat_range(void *p, int64_t rb, int64_t re, int tid)
{
    (void)tid;
    feat_ctx *f = p;
    const tc_rcsr *a = f->a;
    for (int64_t r = rb; r < re; r++) {
        const int64_t b = a->row_off[r], e = a->row_off[r + 1];
        int32_t first = INT32_MAX;
        uint32_t s[NSIG];
        for (int j = 0; j < f->nsig; j++)
            s[j] = UINT32_MAX;
        for (int64_t k = b; k < e; k++) {
            const int32_t c = a->col[k];
            if (c < first)
                first = c;
            for (int j = 0; j < f->nsig; j++) {
                const uint32_t h = col_hash(j, c);
                if (h < s[j])
                    s[j] = h;
            }
        }
        f->deg[r] = (int32_t)(e - b);
        f->fcol[r] = first;
        if (f->sig)
            for (int j = 0; j < f->nsig; j++)
                f->sig[r * f->nsig + j] = s[j];
    }
}

/* ---- sorting -------------------------------------------------------------------------------- */

/* Sorts idx[0..n) by key[idx[i]] ascending, stably (LSD radix, 8 bits a pass; passes where
 * every key has the same byte are skipped).  keys is indexed by idx's values. */
static int sort_by_key(int32_t *idx, int64_t n, const uint64_t *keys)
{
    int32_t *tmp = malloc(sizeof *tmp * (size_t)(n > 0 ? n : 1));
    uint64_t *k0 = malloc(sizeof *k0 * (size_t)(n > 0 ? n : 1));
    uint64_t *k1 = malloc(sizeof *k1 * (size_t)(n > 0 ? n : 1));
    if (tmp == NULL || k0 == NULL || k1 == NULL) {
        free(tmp);
        free(k0);
        free(k1);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        k0[i] = keys[idx[i]];
    int32_t *src = idx, *dst = tmp;
    uint64_t *ks = k0, *kd = k1;
    for (int shift = 0; shift < 64; shift += 8) {
        int64_t cnt[257] = {0};
        for (int64_t i = 0; i < n; i++)
            cnt[((ks[i] >> shift) & 255) + 1]++;
        int same = 0;
        for (int b = 1; b <= 256; b++)
            same |= cnt[b] == n;
        if (same)
            continue;
        for (int b = 0; b < 256; b++)
            cnt[b + 1] += cnt[b];
        for (int64_t i = 0; i < n; i++) {
            const int64_t d = cnt[(ks[i] >> shift) & 255]++;
            dst[d] = src[i];
            kd[d] = ks[i];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
        uint64_t *u = ks;
        ks = kd;
        kd = u;
    }
    if (src != idx)
        memcpy(idx, src, sizeof *idx * (size_t)n);
    free(tmp);
    free(k0);
    free(k1);
    return 0;
}

/* order = the rows sorted by key (ties: row index). */
static int order_by_key(int64_t rows, const uint64_t *key, int32_t *order)
{
    for (int64_t i = 0; i < rows; i++)
        order[i] = (int32_t)i;
    return sort_by_key(order, rows, key);
}

/* ---- the clustering (DTC-SpMM's TCU-cache-aware reordering) ------------------------------
 *
 * Level I groups rows into clusters of at most 16 (one window) by Jaccard similarity of their
 * column sets; level II groups the clusters into clusters of clusters (at most kSuper) by the
 * similarity of their column unions, so that windows a wave of thread blocks runs together
 * read nearby rows of B.  Similarity comes from NSIG MinHash values per row: candidate pairs
 * are LSH with one value per band (rows sharing value j, sorted by (value j, value j+1), pair
 * with their neighbour in that order: O(rows) candidates per band rather than every pair of a
 * bucket), their similarity the fraction of the NSIG values they share.  Pairs are merged
 * greedily from the most similar down (union-find; a merge that would exceed the cap is
 * skipped).  A cluster's signature is the element-wise minimum of its rows' (the MinHash of
 * the union).  Placement: the clusters of each cluster of clusters are packed into 16-row
 * windows first-fit decreasing; full windows come first, in cluster-of-clusters order; the
 * clusters of windows left part-full follow, each kept contiguous, sorted by their smallest
 * first column (measured: better than sorting those rows one by one), and empty rows come
 * last. */

enum { kSuper = 128, kMinScore = 2 };

typedef struct {
    int32_t *parent, *size;
} dsu;

static int32_t dsu_find(dsu *d, int32_t x)
{
    while (d->parent[x] != x) {
        d->parent[x] = d->parent[d->parent[x]];
        x = d->parent[x];
    }
    return x;
}

/* Candidate pairs over n items with signatures sig (n * NSIG; items with live[i] == 0 take
 * no part), merged greedily into groups of at most cap (size[] per item, added up).  The dsu
 * is initialised by the caller. */
static int lsh_merge(int64_t n, const uint32_t *sig, const uint8_t *live, dsu *d, int32_t cap)
{
    int32_t *idx = malloc(sizeof *idx * (size_t)(n > 0 ? n : 1));
    uint64_t *key = malloc(sizeof *key * (size_t)(n > 0 ? n : 1));
    int32_t *pa = malloc(sizeof *pa * (size_t)(n * NSIG + 1));
    int32_t *pb = malloc(sizeof *pb * (size_t)(n * NSIG + 1));
    uint8_t *ps = malloc((size_t)(n * NSIG + 1));
    int rc = -1;
    if (idx == NULL || key == NULL || pa == NULL || pb == NULL || ps == NULL)
        goto done;
    int64_t np = 0;
    for (int j = 0; j < NSIG; j++) {
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++) {
            if (!live[i])
                continue;
            idx[m++] = (int32_t)i;
            key[i] = (uint64_t)sig[i * NSIG + j] << 32 | sig[i * NSIG + (j + 1) % NSIG];
        }
        if (sort_by_key(idx, m, key) != 0)
            goto done;
        for (int64_t t = 1; t < m; t++) {
            const int32_t x = idx[t - 1], y = idx[t];
            if (sig[(int64_t)x * NSIG + j] != sig[(int64_t)y * NSIG + j])
                continue;
            int s = 0;
            for (int q = 0; q < NSIG; q++)
                s += sig[(int64_t)x * NSIG + q] == sig[(int64_t)y * NSIG + q];
            if (s < kMinScore)
                continue;
            pa[np] = x;
            pb[np] = y;
            ps[np++] = (uint8_t)s;
        }
    }
    /* most similar first; within a score, in the order found */
    for (int s = NSIG; s >= kMinScore; s--)
        for (int64_t q = 0; q < np; q++) {
            if (ps[q] != s)
                continue;
            int32_t x = dsu_find(d, pa[q]), y = dsu_find(d, pb[q]);
            if (x == y || d->size[x] + d->size[y] > cap)
                continue;
            if (x > y) { /* the smaller index is the root: deterministic */
                int32_t t = x;
                x = y;
                y = t;
            }
            d->parent[y] = x;
            d->size[x] += d->size[y];
        }
    rc = 0;
done:
    free(idx);
    free(key);
    free(pa);
    free(pb);
    free(ps);
    return rc;
}

static int order_cluster(const tc_rcsr *a, const int32_t *deg, const int32_t *fcol,
                         const uint32_t *sig, int32_t *order)
{
    const int64_t M = a->rows;
    int rc = -1;
    int32_t *parent = malloc(sizeof *parent * (size_t)M), *size = malloc(sizeof *size * (size_t)M);
    uint8_t *live = calloc((size_t)M + 1, 1);
    int32_t *cid = malloc(sizeof *cid * (size_t)M);   /* row -> cluster */
    int32_t *cfirst = NULL, *cmemb = NULL, *csize = NULL, *cpar = NULL, *cssz = NULL;
    int32_t *cmin = NULL, *corder = NULL, *bin_of = NULL, *bin_fill = NULL, *rest = NULL;
    uint32_t *csig = NULL;
    uint8_t *clive = NULL;
    uint64_t *key = NULL;
    if (parent == NULL || size == NULL || live == NULL || cid == NULL)
        goto done;
    /* level I */
    for (int64_t r = 0; r < M; r++) {
        parent[r] = (int32_t)r;
        size[r] = 1;
        live[r] = deg[r] > 0;
    }
    dsu d = {parent, size};
    if (lsh_merge(M, sig, live, &d, WIN) != 0)
        goto done;
    int64_t NC = 0;
    for (int64_t r = 0; r < M; r++)
        if (live[r] && dsu_find(&d, (int32_t)r) == r)
            cid[r] = (int32_t)NC++;
    for (int64_t r = 0; r < M; r++)
        cid[r] = live[r] ? cid[dsu_find(&d, (int32_t)r)] : -1;
    /* members of each cluster, by row index */
    cfirst = calloc((size_t)NC + 1, sizeof *cfirst);
    cmemb = malloc(sizeof *cmemb * (size_t)(M > 0 ? M : 1));
    csig = malloc(sizeof *csig * (size_t)(NC * NSIG + 1));
    csize = malloc(sizeof *csize * (size_t)(NC + 1));
    cpar = malloc(sizeof *cpar * (size_t)(NC + 1));
    cssz = malloc(sizeof *cssz * (size_t)(NC + 1));
    cmin = malloc(sizeof *cmin * (size_t)(NC + 1));
    clive = malloc((size_t)NC + 1);
    if (!cfirst || !cmemb || !csig || !csize || !cpar || !cssz || !cmin || !clive)
        goto done;
    for (int64_t r = 0; r < M; r++)
        if (cid[r] >= 0)
            cfirst[cid[r] + 1]++;
    for (int64_t c = 0; c < NC; c++)
        cfirst[c + 1] += cfirst[c];
    {
        int32_t *cur = malloc(sizeof *cur * (size_t)(NC + 1));
        if (cur == NULL)
            goto done;
        memcpy(cur, cfirst, sizeof *cur * (size_t)(NC + 1));
        for (int64_t r = 0; r < M; r++)
            if (cid[r] >= 0)
                cmemb[cur[cid[r]]++] = (int32_t)r;
        free(cur);
    }
    /* level II: clusters of clusters */
    for (int64_t c = 0; c < NC; c++) {
        csize[c] = cfirst[c + 1] - cfirst[c];
        cpar[c] = (int32_t)c;
        cssz[c] = 1;
        clive[c] = 1;
        cmin[c] = INT32_MAX;
        for (int j = 0; j < NSIG; j++)
            csig[c * NSIG + j] = UINT32_MAX;
        for (int32_t q = cfirst[c]; q < cfirst[c + 1]; q++) {
            const int32_t r = cmemb[q];
            if (fcol[r] < cmin[c])
                cmin[c] = fcol[r];
            for (int j = 0; j < NSIG; j++)
                if (sig[(int64_t)r * NSIG + j] < csig[c * NSIG + j])
                    csig[c * NSIG + j] = sig[(int64_t)r * NSIG + j];
        }
    }
    dsu d2 = {cpar, cssz};
    if (lsh_merge(NC, csig, clive, &d2, kSuper) != 0)
        goto done;
    /* clusters sorted by (cluster of clusters, size descending, index); a cluster of clusters
     * is known by its root, ranked by the smallest first column in it */
    int32_t *smin = cmin; /* reused below: per root, the minimum over its clusters */
    corder = malloc(sizeof *corder * (size_t)(NC + 1));
    key = calloc((size_t)(NC > M ? NC + 1 : M + 1), sizeof *key);
    int32_t *rootmin = malloc(sizeof *rootmin * (size_t)(NC + 1));
    if (corder == NULL || key == NULL || rootmin == NULL) {
        free(rootmin);
        goto done;
    }
    for (int64_t c = 0; c < NC; c++)
        rootmin[c] = INT32_MAX;
    for (int64_t c = 0; c < NC; c++) {
        const int32_t rt = dsu_find(&d2, (int32_t)c);
        if (smin[c] < rootmin[rt])
            rootmin[rt] = smin[c];
    }
    /* rank of each root: roots sorted by (minimum first column, root) */
    {
        int64_t nroot = 0;
        for (int64_t c = 0; c < NC; c++)
            if (cpar[c] == c) {
                corder[nroot++] = (int32_t)c;
                key[c] = (uint64_t)(uint32_t)rootmin[c];
            }
        if (sort_by_key(corder, nroot, key) != 0) {
            free(rootmin);
            goto done;
        }
        for (int64_t i = 0; i < nroot; i++)
            rootmin[corder[i]] = (int32_t)i; /* now the rank */
    }
    for (int64_t c = 0; c < NC; c++) {
        corder[c] = (int32_t)c;
        const uint64_t rank = (uint64_t)rootmin[dsu_find(&d2, (int32_t)c)];
        key[c] = rank << 5 | (uint64_t)(WIN - csize[c]); /* ties: cluster index */
    }
    free(rootmin);
    if (sort_by_key(corder, NC, key) != 0)
        goto done;
    /* first-fit decreasing into 16-row windows within each cluster of clusters */
    bin_of = malloc(sizeof *bin_of * (size_t)(NC + 1));
    bin_fill = malloc(sizeof *bin_fill * (size_t)(NC + 1));
    rest = malloc(sizeof *rest * (size_t)(M > 0 ? M : 1));
    if (bin_of == NULL || bin_fill == NULL || rest == NULL)
        goto done;
    int64_t nbins = 0;
    for (int64_t i = 0; i < NC;) {
        const int32_t group = dsu_find(&d2, corder[i]);
        const int64_t first_bin = nbins;
        int64_t j = i;
        for (; j < NC && dsu_find(&d2, corder[j]) == group; j++) {
            const int32_t c = corder[j];
            int64_t b = first_bin;
            while (b < nbins && bin_fill[b] + csize[c] > WIN)
                b++;
            if (b == nbins)
                bin_fill[nbins++] = 0;
            bin_fill[b] += csize[c];
            bin_of[c] = (int32_t)b;
        }
        i = j;
    }
    /* full windows in bin order (their clusters in corder order), then the rest */
    {
        int32_t *bstart = calloc((size_t)nbins + 1, sizeof *bstart);
        if (bstart == NULL)
            goto done;
        int64_t pos = 0;
        for (int64_t b = 0; b < nbins; b++)
            if (bin_fill[b] == WIN) {
                bstart[b] = (int32_t)pos;
                pos += WIN;
            }
        int64_t nrest = 0;
        for (int64_t i = 0; i < NC; i++) {
            const int32_t c = corder[i];
            for (int32_t q = cfirst[c]; q < cfirst[c + 1]; q++) {
                if (bin_fill[bin_of[c]] == WIN)
                    order[bstart[bin_of[c]]++] = cmemb[q];
                else
                    rest[nrest++] = cmemb[q];
            }
        }
        free(bstart);
        for (int64_t i = 0; i < nrest; i++) {
            const int32_t r = rest[i];
            key[r] = (uint64_t)(uint32_t)cmin[cid[r]] << 32 | (uint32_t)cid[r];
        }
        if (sort_by_key(rest, nrest, key) != 0)
            goto done;
        memcpy(order + pos, rest, sizeof *rest * (size_t)nrest);
        pos += nrest;
        for (int64_t r = 0; r < M; r++)
            if (!live[r])
                order[pos++] = (int32_t)r;
    }
    rc = 0;
done:
    free(parent); free(size); free(live); free(cid); free(cfirst); free(cmemb); free(csize);
    free(cpar); free(cssz); free(cmin); free(corder); free(bin_of); free(bin_fill); free(rest);
    free(csig); free(clive); free(key);
    return rc;
}

/* ---- breadth-first order (bfs) --------------------------------------------------------------
 *
 * Rows in the order a breadth-first search of the bipartite graph of rows and columns reaches
 * them: from a row to its columns, from a column to every row holding it, each by ascending
 * degree (Cuthill-McKee's rule; ties by index).  Rows sharing a column are placed together,
 * and rows close in the graph close in the order.  The second matters to the kernels more than
 * any block count shows: the windows that run at one time then gather overlapping columns of
 * B, which stay in L2.  A graph numbered at random (mdual, a finite-element dual graph: median
 * |row - column| 36,000) loses most of its L2 hits in the caller's order (docs/performance.md,
 * "Eighteenth session").  Each search starts at the lowest-degree nonempty row not yet placed
 * (a row at the edge of its component); empty rows come last.  The graph is the bipartite one,
 * not the symmetrised pattern, so that it holds whether or not rows and columns index the same
 * vertices (a matrix whose rows alone were permuted).  On ogbl-ddi the degree order of a row's
 * columns gives 42.2 nonzeros a block against 39.8 in index order.  O(nnz) time (radix sorts of
 * the degrees), one thread (deterministic by construction); memory O(nnz + cols), or O(nnz)
 * for a hypersparse matrix, whose columns are first renumbered densely. */
static int32_t *dense_columns(const tc_rcsr *a, int64_t *ncols);

static int order_bfs(const tc_rcsr *a, const int32_t *deg, int32_t *order)
{
    const int64_t M = a->rows, nnz = a->nnz;
    if (nnz == 0) { /* every row empty: the caller's order */
        for (int64_t i = 0; i < M; i++)
            order[i] = (int32_t)i;
        return 0;
    }
    int64_t N = a->cols;
    const int32_t *col = a->col;
    int32_t *dcol = dense_columns(a, &N);
    if (dcol != NULL)
        col = dcol;
    else if (a->cols > 2 * nnz + 65536)
        return -1; /* too wide to search as it is, and no memory to renumber its columns */
    else
        N = a->cols;
    int64_t *coff = calloc((size_t)N + 1, sizeof *coff);
    int32_t *crow = malloc(sizeof *crow * (size_t)(nnz > 0 ? nnz : 1));
    int32_t *rcol = malloc(sizeof *rcol * (size_t)(nnz > 0 ? nnz : 1));
    int64_t *fill = malloc(sizeof *fill * (size_t)(M > 0 ? M : 1));
    const int64_t nk = M > N ? M : N;
    uint64_t *key = malloc(sizeof *key * (size_t)(nk > 0 ? nk : 1));
    int32_t *start = malloc(sizeof *start * (size_t)(M > 0 ? M : 1));
    int32_t *cstart = malloc(sizeof *cstart * (size_t)(N > 0 ? N : 1));
    uint8_t *rseen = calloc((size_t)M + 1, 1), *cseen = calloc((size_t)N + 1, 1);
    int rc = -1;
    if (coff == NULL || crow == NULL || rcol == NULL || fill == NULL || key == NULL ||
        start == NULL || cstart == NULL || rseen == NULL || cseen == NULL)
        goto done;
    /* the rows by degree, empty rows last: the searches' starts, and each column's order */
    for (int64_t r = 0; r < M; r++)
        key[r] = deg[r] > 0 ? (uint64_t)(uint32_t)deg[r] << 32 | (uint64_t)r : UINT64_MAX;
    if (order_by_key(M, key, start) != 0)
        goto done;
    /* a CSC of the pattern, each column's rows by degree */
    for (int64_t e = 0; e < nnz; e++)
        coff[col[e] + 1]++;
    for (int64_t c = 0; c < N; c++)
        coff[c + 1] += coff[c];
    for (int64_t i = 0; i < M; i++) {
        const int32_t r = start[i];
        for (int64_t e = a->row_off[r]; e < a->row_off[r + 1]; e++)
            crow[coff[col[e]]++] = r;
    }
    for (int64_t c = N; c > 0; c--) /* back to the columns' starts */
        coff[c] = coff[c - 1];
    coff[0] = 0;
    /* each row's columns by degree: the columns scanned by degree, appended to their rows */
    for (int64_t c = 0; c < N; c++)
        key[c] = (uint64_t)(coff[c + 1] - coff[c]) << 32 | (uint64_t)c;
    if (order_by_key(N, key, cstart) != 0)
        goto done;
    for (int64_t r = 0; r < M; r++)
        fill[r] = a->row_off[r];
    for (int64_t i = 0; i < N; i++) {
        const int32_t c = cstart[i];
        for (int64_t f = coff[c]; f < coff[c + 1]; f++)
            rcol[fill[crow[f]]++] = c;
    }
    /* the searches; order[] is the queue of rows */
    int64_t head = 0, tail = 0;
    for (int64_t i = 0; i < M; i++) {
        const int32_t s = start[i];
        if (rseen[s])
            continue;
        rseen[s] = 1;
        order[tail++] = s;
        while (head < tail) {
            const int32_t u = order[head++];
            for (int64_t e = a->row_off[u]; e < a->row_off[u + 1]; e++) {
                const int32_t c = rcol[e];
                if (cseen[c])
                    continue;
                cseen[c] = 1;
                for (int64_t f = coff[c]; f < coff[c + 1]; f++)
                    if (!rseen[crow[f]]) {
                        rseen[crow[f]] = 1;
                        order[tail++] = crow[f];
                    }
            }
        }
    }
    rc = tail == M ? 0 : -1;
done:
    free(dcol);
    free(coff);
    free(crow);
    free(rcol);
    free(fill);
    free(key);
    free(start);
    free(cstart);
    free(rseen);
    free(cseen);
    return rc;
}

int tc_reorder_compute(const tc_rcsr *a, int ordering, int32_t *order, int nthreads)
{
    const int64_t M = a->rows;
    if (ordering == TC_ORD_IDENTITY || ordering < 0 || ordering >= TC_ORD_COUNT || M == 0) {
        for (int64_t i = 0; i < M; i++)
            order[i] = (int32_t)i;
        return 0;
    }
    const int nsig = ordering == TC_ORD_CLUSTER ? NSIG : ordering == TC_ORD_MINHASH ? 1 : 0;
    int32_t *deg = malloc(sizeof *deg * (size_t)M), *fcol = malloc(sizeof *fcol * (size_t)M);
    uint32_t *sig = nsig ? malloc(sizeof *sig * (size_t)M * (size_t)nsig) : NULL;
    const int keyed = ordering != TC_ORD_CLUSTER && ordering != TC_ORD_BFS;
    uint64_t *key = keyed ? malloc(sizeof *key * (size_t)M) : NULL;
    int rc = -1;
    if (deg == NULL || fcol == NULL || (nsig && sig == NULL) || (keyed && key == NULL))
        goto done;
    feat_ctx f = {a, deg, fcol, sig, nsig};
    par_for(M, nthreads, 4096, feat_range, &f);
    switch (ordering) {
    case TC_ORD_FIRST_COL: /* empty rows (first column INT32_MAX) last */
        for (int64_t r = 0; r < M; r++)
            key[r] = (uint64_t)(uint32_t)fcol[r] << 32 | (uint32_t)deg[r];
        rc = order_by_key(M, key, order);
        break;
    case TC_ORD_DEGREE:
        for (int64_t r = 0; r < M; r++)
            key[r] = (uint64_t)(UINT32_MAX - (uint32_t)deg[r]) << 32 | (uint32_t)fcol[r];
        rc = order_by_key(M, key, order);
        break;
    case TC_ORD_MINHASH: /* an empty row's MinHash is UINT32_MAX: last */
        for (int64_t r = 0; r < M; r++)
            key[r] = (uint64_t)sig[r] << 32 | (uint32_t)deg[r];
        rc = order_by_key(M, key, order);
        break;
    case TC_ORD_CLUSTER:
        rc = order_cluster(a, deg, fcol, sig, order);
        break;
    case TC_ORD_BFS:
        rc = order_bfs(a, deg, order);
        break;
    }
done:
    free(deg);
    free(fcol);
    free(sig);
    free(key);
    if (rc != 0)
        for (int64_t i = 0; i < M; i++)
            order[i] = (int32_t)i;
    return rc;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* The block count only sees which columns a window shares, so it may run on the columns
 * renumbered densely: for a matrix much wider than its nonzeros (hypersparse), the count's
 * per-thread marker arrays then take O(nnz) memory instead of O(cols) (a 10^9-column matrix
 * needed 4 GB per thread).  Returns the renumbered columns (caller frees) and sets *ncols, or
 * NULL when the matrix is narrow enough to count as it is, or on allocation failure. */
static int32_t *dense_columns(const tc_rcsr *a, int64_t *ncols)
{
    if (a->cols <= 2 * a->nnz + 65536)
        return NULL;
    int32_t *u = malloc(sizeof *u * (size_t)a->nnz);
    int32_t *c = malloc(sizeof *c * (size_t)a->nnz);
    if (u == NULL || c == NULL) {
        free(u);
        free(c);
        return NULL;
    }
    if (a->nnz > 0)
        memcpy(u, a->col, sizeof *u * (size_t)a->nnz);
    qsort(u, (size_t)a->nnz, sizeof *u, cmp_i32);
    int64_t d = 0;
    for (int64_t e = 0; e < a->nnz; e++)
        if (d == 0 || u[d - 1] != u[e])
            u[d++] = u[e];
    for (int64_t e = 0; e < a->nnz; e++) { /* rank of the column among the distinct ones */
        int64_t lo = 0, hi = d - 1;
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (u[mid] < a->col[e])
                lo = mid + 1;
            else
                hi = mid;
        }
        c[e] = (int32_t)lo;
    }
    free(u);
    *ncols = d;
    return c;
}

int tc_reorder_choose(const tc_rcsr *a, const tc_reorder_opts *o, int32_t *order,
                      tc_reorder_result *res)
{
    const double t0 = now_ms();
    const int64_t M = a->rows;
    const int nt = o->nthreads > 0 ? o->nthreads : 1;
    memset(res, 0, sizeof *res);
    for (int k = 0; k < TC_ORD_COUNT; k++)
        res->blocks[k] = -1;
    for (int64_t i = 0; i < M; i++)
        order[i] = (int32_t)i;
    int32_t *cand = malloc(sizeof *cand * (size_t)(M > 0 ? M : 1));
    if (cand == NULL)
        return -1;
    int rc = 0;
    double t = now_ms();
    int64_t dcols = 0;
    int32_t *dcol = dense_columns(a, &dcols);
    const tc_rcsr dense = {a->rows, dcols, a->nnz, a->row_off, dcol};
    const tc_rcsr *ca = dcol != NULL ? &dense : a; /* what the counts run on */
    res->blocks[TC_ORD_IDENTITY] = tc_reorder_count_blocks(ca, NULL, nt);
    res->ms[TC_ORD_IDENTITY] = now_ms() - t;
    if (res->blocks[TC_ORD_IDENTITY] < 0)
        rc = -1;
    int best = -1;
    for (int k = 1; k < TC_ORD_COUNT && rc == 0; k++) {
        if (!(o->candidates & (1u << k)) || M == 0)
            continue;
        t = now_ms();
        if (tc_reorder_compute(a, k, cand, nt) != 0 ||
            (res->blocks[k] = tc_reorder_count_blocks(ca, cand, nt)) < 0) {
            res->blocks[k] = -1; /* this candidate failed (memory): the others still count */
            continue;
        }
        res->ms[k] = now_ms() - t;
        if (best < 0 || res->blocks[k] < res->blocks[best]) {
            best = k;
            memcpy(order, cand, sizeof *cand * (size_t)M);
        }
    }
    free(cand);
    free(dcol);
    const int64_t b0 = res->blocks[TC_ORD_IDENTITY];
    int keep = rc == 0 && best > 0 &&
               (o->min_gain < 0 || (double)res->blocks[best] <= (1.0 - o->min_gain) * (double)b0);
    res->kept = keep ? best : TC_ORD_IDENTITY;
    if (!keep)
        for (int64_t i = 0; i < M; i++)
            order[i] = (int32_t)i;
    res->total_ms = now_ms() - t0;
    return rc;
}

/* ---- the plan's side ---------------------------------------------------------------------- */

int tc_reorder_mode(const struct tcsparseSpMatDescr *d, unsigned *only)
{
    unsigned mask = TC_ORD_ALL_CANDIDATES;
    int forced = 0; /* TCSPARSE_REORDER names one ordering: it wins over the candidate list */
    int mode = d != NULL ? d->reorder : TCSPARSE_REORDER_DEFAULT;
    const tc_config *c = tc_config_get();
    if (mode == TCSPARSE_REORDER_DEFAULT) {
        switch (c->reorder.mode) {
        case TC_CFG_REORDER_OFF: mode = TCSPARSE_REORDER_OFF; break;
        case TC_CFG_REORDER_AUTO: mode = TCSPARSE_REORDER_AUTO; break;
        case TC_CFG_REORDER_ALWAYS: mode = TCSPARSE_REORDER_ALWAYS; break;
        case TC_CFG_REORDER_ONE:
            mode = TCSPARSE_REORDER_ALWAYS;
            mask = 1u << c->reorder.ordering;
            forced = 1;
            break;
        default: mode = TCSPARSE_REORDER_LATE; break;
        }
    }
    if (c->reorder.orderings != 0 && !forced) /* TCSPARSE_X_REORDER_ORDERINGS */
        mask &= c->reorder.orderings;
    if (d != NULL && d->reorder_orderings != 0 && !forced) /* the descriptor's list wins */
        mask = (unsigned)d->reorder_orderings & TC_ORD_ALL_CANDIDATES;
    if (only)
        *only = mask;
    return mode;
}

static int64_t ld_idx(const void *p, int is64, int64_t i)
{
    return is64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* Host 0-based CSR from the device arrays of in; 0 on success, 1 when the structure is
 * invalid (left to the GPU conversion to report), -1 on a failure to allocate or copy. */
static int host_csr(const tc_convert_input *in, cudaStream_t s, int64_t **row_off_out,
                    int32_t **col_out)
{
    const int64_t M = in->rows, K = in->cols, nnz = in->nnz;
    const int csr = in->format == TCSPARSE_FORMAT_CSR, csc = in->format == TCSPARSE_FORMAT_CSC;
    const int64_t noff = csr ? M + 1 : csc ? K + 1 : nnz;
    const size_t ob = in->offsets_64 ? 8 : 4, ib = in->indices_64 ? 8 : 4;
    void *off = malloc(ob * (size_t)(noff > 0 ? noff : 1));
    void *idx = malloc(ib * (size_t)(nnz > 0 ? nnz : 1));
    int64_t *ro = calloc((size_t)M + 1, sizeof *ro);
    int32_t *col = malloc(sizeof *col * (size_t)(nnz > 0 ? nnz : 1));
    int rc = -1;
    if (off == NULL || idx == NULL || ro == NULL || col == NULL)
        goto done;
    if (cudaMemcpyAsync(off, in->offsets, ob * (size_t)noff, cudaMemcpyDefault, s) != cudaSuccess ||
        cudaMemcpyAsync(idx, in->indices, ib * (size_t)nnz, cudaMemcpyDefault, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        (void)cudaGetLastError();
        goto done;
    }
    rc = 1;
    const int64_t base = in->base;
    if (csr) {
        if (ld_idx(off, in->offsets_64, 0) - base != 0 || ld_idx(off, in->offsets_64, M) - base != nnz)
            goto done;
        for (int64_t r = 0; r < M; r++) {
            const int64_t b = ld_idx(off, in->offsets_64, r) - base;
            const int64_t e = ld_idx(off, in->offsets_64, r + 1) - base;
            if (e < b || e > nnz)
                goto done;
            ro[r + 1] = e;
            for (int64_t k = b; k < e; k++) {
                const int64_t c = ld_idx(idx, in->indices_64, k) - base;
                if (c < 0 || c >= K)
                    goto done;
                col[k] = (int32_t)c;
            }
        }
    } else {
        /* (row, column) of every entry, counting-sorted by row */
        for (int64_t e = 0; e < nnz; e++) {
            const int64_t r = csc ? ld_idx(idx, in->indices_64, e) - base
                                  : ld_idx(off, in->offsets_64, e) - base;
            if (r < 0 || r >= M)
                goto done;
            ro[r + 1]++;
        }
        for (int64_t r = 0; r < M; r++)
            ro[r + 1] += ro[r];
        int64_t *cur = malloc(sizeof *cur * (size_t)(M > 0 ? M : 1));
        if (cur == NULL) {
            rc = -1;
            goto done;
        }
        memcpy(cur, ro, sizeof *cur * (size_t)M);
        if (csc) {
            if (ld_idx(off, in->offsets_64, 0) - base != 0 || ld_idx(off, in->offsets_64, K) - base != nnz) {
                free(cur);
                goto done;
            }
            for (int64_t c = 0; c < K; c++) {
                const int64_t b = ld_idx(off, in->offsets_64, c) - base;
                const int64_t e = ld_idx(off, in->offsets_64, c + 1) - base;
                if (e < b || e > nnz || b < 0) {
                    free(cur);
                    goto done;
                }
                for (int64_t k = b; k < e; k++)
                    col[cur[ld_idx(idx, in->indices_64, k) - base]++] = (int32_t)c;
            }
        } else {
            for (int64_t e = 0; e < nnz; e++) {
                const int64_t c = ld_idx(idx, in->indices_64, e) - base;
                if (c < 0 || c >= K) {
                    free(cur);
                    goto done;
                }
                col[cur[ld_idx(off, in->offsets_64, e) - base]++] = (int32_t)c;
            }
        }
        free(cur);
    }
    rc = 0;
done:
    free(off);
    free(idx);
    if (rc != 0) {
        free(ro);
        free(col);
        ro = NULL;
        col = NULL;
    }
    *row_off_out = ro;
    *col_out = col;
    return rc;
}

/* TCSPARSE_X_REORDER_MIN_GAIN: percent fewer blocks a reordering must give (default 10). */
double tc_reorder_min_gain(void)
{
    const double g = tc_config_get()->reorder.min_gain;
    return g >= 0.0 ? g : 0.10;
}

int tc_reorder_late_applies(const tc_convert_input *in)
{
    return in->nnz > 0 && in->rows > 1 && in->rows < (1ll << 31) - 16 &&
           in->cols < (1ll << 31) && in->nnz < (1ll << 31) && tc_convert_can_order(in);
}

tcsparseStatus_t tc_reorder_convert(const struct tcsparseSpMatDescr *d,
                                    const tc_convert_input *in, tc_dev_metcf *out,
                                    tc_convert_extra *x, cudaStream_t stream, int late_ordering,
                                    tc_reorder_info *info, char *err, size_t errlen)
{
    unsigned mask = 0;
    memset(info, 0, sizeof *info);
    info->mode = tc_reorder_mode(d, &mask);
    if (late_ordering != 0) {
        /* late ordering's plan (late.c): first-col on the GPU or bfs on the host, kept
         * whatever it gains (the caller's order's plan already counted its blocks) */
        if (!tc_reorder_late_applies(in) ||
            (late_ordering != TC_ORD_FIRST_COL && late_ordering != TC_ORD_BFS)) {
            snprintf(err, errlen, "late ordering: the matrix cannot be ordered %s",
                     late_ordering == TC_ORD_FIRST_COL ? "on the GPU" : "that way");
            return TCSPARSE_STATUS_NOT_SUPPORTED;
        }
        info->mode = TCSPARSE_REORDER_LATE;
        mask = 1u << late_ordering;
    } else if (info->mode == TCSPARSE_REORDER_LATE) {
        return tc_convert_gpu(in, out, x, stream, err, errlen); /* the caller's order first */
    }
    if (info->mode == TCSPARSE_REORDER_OFF || in->nnz == 0 || in->rows <= 1 ||
        in->rows >= (1ll << 31) - 16 || in->cols >= (1ll << 31) || in->nnz >= (1ll << 31))
        return tc_convert_gpu(in, out, x, stream, err, errlen);

    /* first-col alone, CSR: ordered on the GPU inside the conversion (the same permutation as
     * the host's, docs/reorder.md).  AUTO: counted against the caller's order and kept or
     * not; ALWAYS: kept, the caller's order not counted */
    const int always = info->mode == TCSPARSE_REORDER_ALWAYS || late_ordering != 0;
    if (mask == (1u << TC_ORD_FIRST_COL) && tc_convert_can_order(in)) {
        tc_convert_input gin = *in;
        gin.gpu_order = TC_GPU_ORDER_FIRST_COL;
        gin.gpu_order_min_gain = always ? -1.0 : tc_reorder_min_gain();
        tcsparseStatus_t st = tc_convert_gpu(&gin, out, x, stream, err, errlen);
        /* info->ms stays 0: no host time apart from the conversion's */
        if (st == TCSPARSE_STATUS_SUCCESS) {
            info->blocks_before = x->blocks_unordered; /* 0: not counted */
            info->blocks_after = out->blocks;
            info->ordering = x->gpu_ordered ? TC_ORD_FIRST_COL : TC_ORD_IDENTITY;
        }
        return st;
    }
    const double t0 = now_ms();
    int64_t *ro = NULL;
    int32_t *col = NULL, *order = NULL, *row_new = NULL, *d_row_new = NULL;
    tc_convert_input rin = *in;
    if (host_csr(in, stream, &ro, &col) == 0) {
        tc_rcsr a = {in->rows, in->cols, in->nnz, ro, col};
        tc_reorder_opts o = {.candidates = mask,
                             .min_gain = always ? -1.0 : tc_reorder_min_gain(),
                             .nthreads = tc_reorder_threads()};
        tc_reorder_result res;
        order = malloc(sizeof *order * (size_t)in->rows);
        row_new = malloc(sizeof *row_new * (size_t)in->rows);
        if (order != NULL && row_new != NULL && tc_reorder_choose(&a, &o, order, &res) == 0) {
            info->blocks_before = res.blocks[TC_ORD_IDENTITY];
            info->blocks_after = res.blocks[res.kept];
            info->ordering = res.kept;
            if (res.kept != TC_ORD_IDENTITY) {
                for (int64_t i = 0; i < in->rows; i++)
                    row_new[order[i]] = (int32_t)i;
                if (cudaMalloc((void **)&d_row_new, sizeof *d_row_new * (size_t)in->rows) == cudaSuccess &&
                    cudaMemcpy(d_row_new, row_new, sizeof *row_new * (size_t)in->rows,
                               cudaMemcpyHostToDevice) == cudaSuccess) {
                    rin.row_new = d_row_new;
                } else { /* no room for the permutation: the plan is built unreordered */
                    (void)cudaGetLastError();
                    info->ordering = TC_ORD_IDENTITY;
                    info->blocks_after = info->blocks_before;
                }
            }
        }
    }
    free(ro);
    free(col);
    free(order);
    free(row_new);
    info->ms = now_ms() - t0;
    tcsparseStatus_t st = tc_convert_gpu(&rin, out, x, stream, err, errlen);
    cudaFree(d_row_new); /* the conversion synchronised its stream before returning */
    return st;
}

void tc_reorder_plan_done(struct tc_plan *p, const tc_reorder_info *info)
{
    tcsparseMetcfStats_t *s = &p->stats;
    s->reorder_mode = info->mode;
    s->reorder_ordering = info->ordering;
    s->reorder_ms = info->ms;
    if (info->blocks_before > 0)
        s->reorder_nnz_per_block_before = (double)p->dev.nnz / (double)info->blocks_before;
    if (info->blocks_after > 0)
        s->reorder_nnz_per_block_after = (double)p->dev.nnz / (double)info->blocks_after;
}
