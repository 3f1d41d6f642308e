/* The orderings of row reordering (reorder.h, docs/reorder.md): per-row features, the radix
 * sort they are ordered by, the clustering, breadth-first order, and tc_reorder_compute,
 * which runs one of them.  On the host, for the reasons reorder.c gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "reorder.h"
#include "reorder_internal.h"

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
 * |row - column| 36,000) loses most of its L2 hits in the caller's order (docs/reorder.md).
 * Each search starts at the lowest-degree nonempty row not yet placed
 * (a row at the edge of its component); empty rows come last.  The graph is the bipartite one,
 * not the symmetrised pattern, so that it holds whether or not rows and columns index the same
 * vertices (a matrix whose rows alone were permuted).  On ogbl-ddi the degree order of a row's
 * columns gives 42.2 nonzeros a block against 39.8 in index order.  O(nnz) time (radix sorts of
 * the degrees), one thread (deterministic by construction); memory O(nnz + cols), or O(nnz)
 * for a hypersparse matrix, whose columns are first renumbered densely. */
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
    int32_t *dcol = tc_reorder_dense_columns(a, &N);
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
    tc_reorder_par_for(M, nthreads, 4096, feat_range, &f);
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
