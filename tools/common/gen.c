/* Deterministic matrix generators.  Every random draw comes from xoshiro256** streams
 * seeded through splitmix64, so a (spec, seed) pair names one matrix on every machine.  It
 * stays one file: every generator draws from those file-local streams (rng_t) and shares the
 * CSR helpers, and the spec parser calls the generators, all of which a split would have to
 * expose in a header. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* stat */
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "gen.h"
#include "mmio.h"

typedef struct {
    uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Distinct streams for distinct purposes (structure, values) from one user seed. */
static void rng_seed(rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull + 0x632be59bd9b4e019ull);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, n), n >= 1 (multiply-shift; the bias, below n / 2^64, is irrelevant here). */
__extension__ typedef unsigned __int128 u128;

static inline uint64_t rng_below(rng_t *r, uint64_t n)
{
    return (uint64_t)(((u128)rng_next(r) * n) >> 64);
}

/* Uniform in [-1, 1) without the tiny values that make relative error checks meaningless. */
static inline double rng_value(rng_t *r)
{
    for (;;) {
        double v = (double)(rng_next(r) >> 11) * 0x1p-52 - 1.0;
        if (v >= 1e-3 || v <= -1e-3)
            return v;
    }
}

void tc_csr_free(tc_csr *m)
{
    if (!m)
        return;
    free(m->row_off);
    free(m->col);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* Allocates out for rows and nnz (nnz may be trimmed later by shrink). */
static int csr_alloc(tc_csr *out, int64_t rows, int64_t cols, int64_t nnz)
{
    memset(out, 0, sizeof *out);
    if (rows < 0 || cols < 0 || nnz < 0 || (uint64_t)nnz > SIZE_MAX / 8 ||
        (uint64_t)rows >= SIZE_MAX / 8)
        return -1;
    out->rows = rows, out->cols = cols, out->nnz = nnz;
    out->row_off = calloc((size_t)rows + 1, sizeof *out->row_off);
    out->col = malloc((size_t)(nnz ? nnz : 1) * sizeof *out->col);
    out->val = malloc((size_t)(nnz ? nnz : 1) * sizeof *out->val);
    if (!out->row_off || !out->col || !out->val) {
        tc_csr_free(out);
        return -1;
    }
    return 0;
}

static void fill_values(tc_csr *m, uint64_t seed)
{
    rng_t r;
    rng_seed(&r, seed, 2);
    for (int64_t k = 0; k < m->nnz; k++)
        m->val[k] = rng_value(&r);
}

/* Hands a square n x n structure built in place (off[n + 1], col of at least nnz entries,
 * shrunk to nnz here) to out, with random values; on failure frees both and returns -1. */
static int csr_adopt(tc_csr *out, int64_t n, int64_t *off, int32_t *col, int64_t nnz,
                     uint64_t seed)
{
    int32_t *shrunk = realloc(col, (size_t)(nnz ? nnz : 1) * sizeof *col);
    out->rows = out->cols = n;
    out->nnz = nnz;
    out->row_off = off;
    out->col = shrunk ? shrunk : col;
    out->val = malloc((size_t)(nnz ? nnz : 1) * sizeof *out->val);
    if (!out->val) {
        tc_csr_free(out);
        return -1;
    }
    fill_values(out, seed);
    return 0;
}

/* Sorts a[0..n) ascending (insertion sort for short runs, LSD radix by bytes otherwise)
 * and drops duplicates; returns the new length.  tmp holds n ints. */
static int64_t sort_unique(int32_t *a, int64_t n, int32_t *tmp)
{
    if (n <= 48) {
        for (int64_t i = 1; i < n; i++) {
            int32_t x = a[i];
            int64_t j = i;
            for (; j > 0 && a[j - 1] > x; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    } else {
        uint32_t hi = 0;
        for (int64_t i = 0; i < n; i++)
            hi |= (uint32_t)a[i];
        int32_t *src = a, *dst = tmp;
        for (int sh = 0; sh < 32 && (hi >> sh); sh += 8) {
            int64_t cnt[257] = {0};
            for (int64_t i = 0; i < n; i++)
                cnt[(((uint32_t)src[i] >> sh) & 255) + 1]++;
            for (int b = 0; b < 256; b++)
                cnt[b + 1] += cnt[b];
            for (int64_t i = 0; i < n; i++)
                dst[cnt[((uint32_t)src[i] >> sh) & 255]++] = src[i];
            int32_t *t = src;
            src = dst, dst = t;
        }
        if (src != a)
            memcpy(a, src, (size_t)n * sizeof *a);
    }
    int64_t w = n ? 1 : 0;
    for (int64_t i = 1; i < n; i++)
        if (a[i] != a[w - 1])
            a[w++] = a[i];
    return w;
}

/* R-MAT, row by row.  An edge's row bits are independent coin flips (P(1) = c + d) and,
 * given its row, its column bits are independent too (P(1) = b/(a+b) where the row bit is
 * 0, d/(c+d) where it is 1).  So the row degrees are the multinomial the per-edge recursion
 * would give, split level by level with binomial draws, and each row's columns are drawn
 * on their own: no scatter of edges across memory, one int32 per edge. */
static const double RMAT_A = 0.57, RMAT_B = 0.19, RMAT_C = 0.19, RMAT_D = 0.05;

static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

static int64_t rng_binomial(rng_t *r, int64_t n, double p)
{
    if (n <= 0)
        return 0;
    if (p > 0.5)
        return n - rng_binomial(r, n, 1.0 - p);
    double mean = (double)n * p;
    if (mean < 32.0) { /* exact: inversion of the CDF */
        double s = p / (1.0 - p), f = pow(1.0 - p, (double)n), u = rng_unit(r);
        int64_t k = 0;
        while (u > f && k < n) {
            u -= f;
            f *= s * (double)(n - k) / (double)(k + 1);
            k++;
        }
        return k;
    }
    /* Normal approximation (Box-Muller): at this mean the difference does not matter. */
    double u1 = 1.0 - rng_unit(r), u2 = rng_unit(r);
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    double x = floor(mean + z * sqrt(mean * (1.0 - p)) + 0.5);
    return x < 0 ? 0 : x > (double)n ? n : (int64_t)x;
}

/* A bijection of [0, 2^scale) (odd multiplies and xorshifts, seeded): Graph500 scrambles
 * vertex labels so that degree does not follow the label. */
typedef struct {
    uint64_t mask, m1, m2;
    int sh;
} scramble_t;

static inline uint64_t scramble(const scramble_t *s, uint64_t x)
{
    x = (x * s->m1) & s->mask;
    x ^= x >> s->sh;
    x = (x * s->m2) & s->mask;
    x ^= x >> s->sh;
    return x;
}

/* Column of one edge of unscrambled row i.  Where a row bit is 0 the column bit is 1 with
 * probability b/(a+b) = 1/4 exactly: the AND of two random bits, all such levels at once.
 * Where it is 1, P = d/(c+d) = 5/24, drawn per level with 16 bits against thr1. */
static inline uint64_t rmat_col(rng_t *r, uint64_t i, uint64_t mask, uint32_t thr1)
{
    uint64_t x = rng_next(r);
    uint64_t j = x & (x >> 32) & ~i & mask, bits = 0;
    int have = 0;
    for (uint64_t ones = i; ones; ones &= ones - 1) {
        if (have == 0)
            bits = rng_next(r), have = 4;
        j |= ones & (0 - ones) & (0 - (uint64_t)((bits & 0xffff) < thr1));
        bits >>= 16, have--;
    }
    return j;
}

#define RMAT_ROWS_PER_STREAM 4096

int tc_gen_rmat(int scale, int edge_factor, uint64_t seed, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    if (scale < 0 || scale > 30 || edge_factor < 0 ||
        (int64_t)edge_factor > (((int64_t)1 << 36) >> scale))
        return -1;
    int64_t n = (int64_t)1 << scale, edges = (int64_t)edge_factor << scale;
    int64_t *deg = malloc((size_t)n * sizeof *deg);
    int64_t *off = calloc((size_t)n + 1, sizeof *off);
    int32_t *col = malloc((size_t)(edges ? edges : 1) * sizeof *col), *tmp = NULL;
    if (!deg || !off || !col)
        goto fail;
    rng_t r;
    rng_seed(&r, seed, 3);
    scramble_t sc = {(uint64_t)n - 1, rng_next(&r) | 1, rng_next(&r) | 1, scale / 2 + 1};
    /* Degrees: level by level, node k of a level splits into 2k (row bit 0) and 2k+1;
     * going downwards in k keeps unsplit nodes intact. */
    deg[0] = edges;
    for (int lv = 0; lv < scale; lv++)
        for (int64_t k = ((int64_t)1 << lv) - 1; k >= 0; k--) {
            int64_t top = rng_binomial(&r, deg[k], RMAT_A + RMAT_B);
            deg[2 * k + 1] = deg[k] - top;
            deg[2 * k] = top;
        }
    int64_t maxlen = 0;
    for (int64_t i = 0; i < n; i++) {
        off[scramble(&sc, (uint64_t)i) + 1] = deg[i];
        maxlen = deg[i] > maxlen ? deg[i] : maxlen;
    }
    for (int64_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    tmp = malloc((size_t)(maxlen ? maxlen : 1) * sizeof *tmp);
    if (!tmp)
        goto fail;
    uint32_t t1 = (uint32_t)(RMAT_D / (RMAT_C + RMAT_D) * 65536.0 + 0.5);
    /* Duplicates removed in place leave -1 holes at the end of each row, squeezed out
     * below in output order. */
    for (int64_t i = 0; i < n; i++) {
        if (i % RMAT_ROWS_PER_STREAM == 0)
            rng_seed(&r, seed, 16 + (uint64_t)(i / RMAT_ROWS_PER_STREAM));
        int32_t *row = col + off[scramble(&sc, (uint64_t)i)];
        for (int64_t e = 0; e < deg[i]; e++)
            row[e] = (int32_t)scramble(&sc, rmat_col(&r, (uint64_t)i, sc.mask, t1));
        for (int64_t e = sort_unique(row, deg[i], tmp); e < deg[i]; e++)
            row[e] = -1;
    }
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = off[i], e = off[i + 1];
        off[i] = w;
        for (int64_t p = b; p < e && col[p] >= 0; p++)
            col[w++] = col[p];
    }
    off[n] = w;
    free(tmp);
    free(deg);
    return csr_adopt(out, n, off, col, w, seed);
fail:
    free(deg);
    free(off);
    free(col);
    free(tmp);
    return -1;
}

/* Chooses k distinct values of [0, n) into a (sorted); tmp holds k ints.  Dense requests
 * walk the range once (selection sampling); sparse ones draw, dedupe and top up. */
static void choose_distinct(rng_t *r, int64_t n, int64_t k, int32_t *a, int32_t *tmp)
{
    if (k >= n) {
        for (int64_t i = 0; i < n; i++)
            a[i] = (int32_t)i;
        return;
    }
    if (2 * k >= n) {
        int64_t got = 0;
        for (int64_t i = 0; i < n && got < k; i++)
            if ((int64_t)rng_below(r, (uint64_t)(n - i)) < k - got)
                a[got++] = (int32_t)i;
        return;
    }
    int64_t got = 0;
    while (got < k) {
        for (int64_t i = got; i < k; i++)
            a[i] = (int32_t)rng_below(r, (uint64_t)n);
        got = sort_unique(a, k, tmp);
    }
}

int tc_gen_uniform(int64_t rows, int64_t cols, int64_t per_row, uint64_t seed, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    if (rows < 0 || cols < 0 || cols > INT32_MAX || per_row < 0)
        return -1;
    int64_t k = per_row < cols ? per_row : cols;
    if (k && rows > INT64_MAX / k)
        return -1;
    int32_t *tmp = malloc((size_t)(k ? k : 1) * sizeof *tmp);
    if (!tmp || csr_alloc(out, rows, cols, rows * k)) {
        free(tmp);
        return -1;
    }
    rng_t r;
    rng_seed(&r, seed, 1);
    for (int64_t i = 0; i < rows; i++) {
        out->row_off[i] = i * k;
        choose_distinct(&r, cols, k, out->col + i * k, tmp);
    }
    out->row_off[rows] = rows * k;
    free(tmp);
    fill_values(out, seed);
    return 0;
}

int tc_gen_banded(int64_t n, int64_t half_bandwidth, uint64_t seed, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    if (n < 0 || n > INT32_MAX || half_bandwidth < 0)
        return -1;
    int64_t hb = half_bandwidth < n ? half_bandwidth : (n ? n - 1 : 0), nnz = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = i - hb < 0 ? 0 : i - hb, hi = i + hb >= n ? n - 1 : i + hb;
        nnz += hi - lo + 1;
    }
    if (csr_alloc(out, n, n, nnz))
        return -1;
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = i - hb < 0 ? 0 : i - hb, hi = i + hb >= n ? n - 1 : i + hb;
        out->row_off[i] = w;
        for (int64_t j = lo; j <= hi; j++)
            out->col[w++] = (int32_t)j;
    }
    out->row_off[n] = w;
    fill_values(out, seed);
    return 0;
}

int tc_gen_block_diag(const tc_csr *m, int copies, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    if (!m || copies < 0 || m->rows < 0 || m->cols < 0 || m->nnz < 0 ||
        (copies && (m->rows > INT64_MAX / copies || m->cols > INT32_MAX / copies ||
                    m->nnz > INT64_MAX / copies)))
        return -1;
    if (csr_alloc(out, m->rows * copies, m->cols * copies, m->nnz * copies))
        return -1;
    for (int64_t c = 0; c < copies; c++) {
        int64_t base = c * m->nnz;
        int32_t shift = (int32_t)(c * m->cols);
        for (int64_t i = 0; i < m->rows; i++)
            out->row_off[c * m->rows + i] = base + m->row_off[i];
        for (int64_t k = 0; k < m->nnz; k++) {
            out->col[base + k] = m->col[k] + shift;
            out->val[base + k] = m->val[k];
        }
    }
    out->row_off[out->rows] = out->nnz;
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Distinct sorted cell numbers in [0, cells), like choose_distinct but 64-bit. */
static void choose_cells(rng_t *r, int64_t cells, int64_t k, int64_t *a)
{
    if (2 * k >= cells) {
        int64_t got = 0;
        for (int64_t i = 0; i < cells && got < k; i++)
            if ((int64_t)rng_below(r, (uint64_t)(cells - i)) < k - got)
                a[got++] = i;
        return;
    }
    int64_t got = 0;
    while (got < k) {
        for (int64_t i = got; i < k; i++)
            a[i] = (int64_t)rng_below(r, (uint64_t)cells);
        qsort(a, (size_t)k, sizeof *a, cmp_i64);
        int64_t w = 1;
        for (int64_t i = 1; i < k; i++)
            if (a[i] != a[w - 1])
                a[w++] = a[i];
        got = w;
    }
}

int tc_gen_blocks(int64_t n, int64_t bs, int64_t nblocks, uint64_t seed, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    if (n < 0 || n > INT32_MAX || bs < 1 || nblocks < 0)
        return -1;
    /* Blocks sit on the bs-aligned grid, so they never overlap and nnz is exact. */
    int64_t nb = (n + bs - 1) / bs, cells = nb * nb, nnz = 0;
    if (nblocks > cells)
        return -1;
    int64_t *cell = malloc((size_t)(nblocks ? nblocks : 1) * sizeof *cell);
    if (!cell)
        return -1;
    rng_t r;
    rng_seed(&r, seed, 1);
    choose_cells(&r, cells, nblocks, cell);
    for (int64_t k = 0; k < nblocks; k++) {
        int64_t br = cell[k] / nb, bc = cell[k] % nb;
        int64_t h = (br + 1) * bs > n ? n - br * bs : bs, w = (bc + 1) * bs > n ? n - bc * bs : bs;
        nnz += h * w;
    }
    if (csr_alloc(out, n, n, nnz)) {
        free(cell);
        return -1;
    }
    int64_t w = 0, p = 0;
    for (int64_t br = 0; br < nb; br++) {
        int64_t q = p;
        while (q < nblocks && cell[q] / nb == br)
            q++;
        int64_t r1 = (br + 1) * bs > n ? n : (br + 1) * bs;
        for (int64_t i = br * bs; i < r1; i++) {
            out->row_off[i] = w;
            for (int64_t k = p; k < q; k++) {
                int64_t c0 = (cell[k] % nb) * bs, c1 = c0 + bs > n ? n : c0 + bs;
                for (int64_t j = c0; j < c1; j++)
                    out->col[w++] = (int32_t)j;
            }
        }
        p = q;
    }
    out->row_off[n] = w;
    free(cell);
    fill_values(out, seed);
    return 0;
}

/* Chung-Lu power-law graph (undirected): expected degrees w_i ~ (i + 1)^(-1/(gamma - 1)),
 * gamma = 2.5, capped at sqrt(sum w) (as in the model, where it keeps every edge probability
 * <= 1) and scaled to the average degree; both ends of each edge drawn in proportion to w,
 * labels scrambled, each edge stored in both directions, self loops dropped.  Edges are drawn
 * in rounds until the deduplicated matrix holds at least n * degree entries (degree at most
 * n / 4). */
static int64_t cl_draw(rng_t *r, const double *cdf, int64_t n)
{
    const double u = rng_unit(r) * cdf[n - 1];
    int64_t lo = 0, hi = n - 1; /* the first k with cdf[k] > u */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The CSR of the edge list (both directions), rows sorted and deduplicated; returns its
 * number of entries, or -1 out of memory. */
static int64_t cl_csr(const int32_t *eu, const int32_t *ev, int64_t edges, int64_t n,
                      int64_t *off, int32_t **colp)
{
    memset(off, 0, (size_t)(n + 1) * sizeof *off);
    for (int64_t e = 0; e < edges; e++) {
        if (eu[e] == ev[e]) /* no self loops */
            continue;
        off[eu[e] + 1]++;
        off[ev[e] + 1]++;
    }
    int64_t maxlen = 0;
    for (int64_t i = 0; i < n; i++) {
        maxlen = off[i + 1] > maxlen ? off[i + 1] : maxlen;
        off[i + 1] += off[i];
    }
    int32_t *col = realloc(*colp, (size_t)(2 * edges + 1) * sizeof *col);
    int64_t *fill = malloc((size_t)n * sizeof *fill);
    int32_t *tmp = malloc((size_t)(maxlen + 1) * sizeof *tmp);
    if (col != NULL)
        *colp = col;
    if (col == NULL || fill == NULL || tmp == NULL) {
        free(fill);
        free(tmp);
        return -1;
    }
    memcpy(fill, off, (size_t)n * sizeof *fill);
    for (int64_t e = 0; e < edges; e++) {
        if (eu[e] == ev[e])
            continue;
        col[fill[eu[e]]++] = ev[e];
        col[fill[ev[e]]++] = eu[e];
    }
    int64_t w = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = off[i], len = off[i + 1] - b;
        const int64_t u = sort_unique(col + b, len, tmp);
        off[i] = w;
        memmove(col + w, col + b, (size_t)u * sizeof *col);
        w += u;
    }
    off[n] = w;
    free(fill);
    free(tmp);
    return w;
}

int tc_gen_chunglu(int scale, int degree, uint64_t seed, tc_csr *out)
{
    memset(out, 0, sizeof *out);
    /* at most a quarter of the possible entries: denser targets take many rounds to reach */
    if (scale < 1 || scale > 28 || degree < 1 || (int64_t)degree * 4 > ((int64_t)1 << scale) ||
        (int64_t)degree > (((int64_t)1 << 34) >> scale))
        return -1;
    const int64_t n = (int64_t)1 << scale, target = n * degree;
    const double gamma = 2.5;
    double *cdf = malloc((size_t)n * sizeof *cdf);
    int64_t *off = malloc((size_t)(n + 1) * sizeof *off);
    int32_t *eu = NULL, *ev = NULL, *col = NULL;
    if (cdf == NULL || off == NULL)
        goto fail;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += cdf[i] = pow((double)(i + 1), -1.0 / (gamma - 1.0));
    for (int it = 0; it <= 20; it++) { /* scale, cap, again until the cap settles */
        const double f = (double)target / sum, cap = sqrt((double)target);
        sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            cdf[i] *= f;
            if (it < 20 && cdf[i] > cap)
                cdf[i] = cap;
            sum += cdf[i];
        }
    }
    for (int64_t i = 1; i < n; i++)
        cdf[i] += cdf[i - 1];
    rng_t r;
    rng_seed(&r, seed, 5);
    const scramble_t sc = {(uint64_t)n - 1, rng_next(&r) | 1, rng_next(&r) | 1, scale / 2 + 1};
    int64_t edges = 0, draw = target / 2, have = 0;
    for (int round = 0; round < 16 && have < target; round++) {
        int32_t *nu = realloc(eu, (size_t)(edges + draw) * sizeof *eu);
        if (nu != NULL)
            eu = nu;
        int32_t *nv = realloc(ev, (size_t)(edges + draw) * sizeof *ev);
        if (nv != NULL)
            ev = nv;
        if (nu == NULL || nv == NULL)
            goto fail;
        for (int64_t e = edges; e < edges + draw; e++) {
            eu[e] = (int32_t)scramble(&sc, (uint64_t)cl_draw(&r, cdf, n));
            ev[e] = (int32_t)scramble(&sc, (uint64_t)cl_draw(&r, cdf, n));
        }
        edges += draw;
        const int64_t before = have;
        have = cl_csr(eu, ev, edges, n, off, &col);
        if (have < 0)
            goto fail;
        /* the next round is sized from this one's new entries per edge drawn (+25%) */
        double gain = (double)(have - before) / (double)draw;
        gain = gain > 0.05 ? gain : 0.05;
        const int64_t extra = (target - have) / 8 + 16; /* and a margin, small for small graphs */
        draw = (int64_t)((double)(target - have) / gain * 1.25) + (extra < 1024 ? extra : 1024);
    }
    if (have < target)
        goto fail;
    free(cdf);
    free(eu);
    free(ev);
    return csr_adopt(out, n, off, col, have, seed);
fail:
    free(cdf);
    free(off);
    free(eu);
    free(ev);
    free(col);
    return -1;
}

static int spec_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int spec_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Strict decimal in [lo, hi]: 0, or -1. */
static int parse_num(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
    uint64_t x = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    if (*s || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

typedef struct {
    const char *kind, *usage;
    int nargs;
    const char *names[3];
    uint64_t lo[3], hi[3];
} gen_kind;

static const gen_kind kinds[] = {
    {"rmat", "rmat:SCALE:EDGE_FACTOR", 2, {"SCALE", "EDGE_FACTOR"}, {0, 1}, {30, 65536}},
    {"chunglu", "chunglu:SCALE:DEGREE", 2, {"SCALE", "DEGREE"}, {1, 1}, {28, 1024}},
    {"uniform", "uniform:ROWS:COLS:PER_ROW", 3, {"ROWS", "COLS", "PER_ROW"}, {0, 0, 0},
     {(uint64_t)1 << 40, INT32_MAX, INT32_MAX}},
    {"banded", "banded:N:HALF_BANDWIDTH", 2, {"N", "HALF_BANDWIDTH"}, {0, 0},
     {INT32_MAX, INT32_MAX}},
    {"blocks", "blocks:N:BLOCK_SIZE:NBLOCKS", 3, {"N", "BLOCK_SIZE", "NBLOCKS"}, {0, 1, 0},
     {INT32_MAX, INT32_MAX, (uint64_t)1 << 40}},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define KIND_LIST "rmat, chunglu, uniform, banded, blocks or diag"

/* out NULL: the file is read and checked, not converted */
static int load_mm(const char *path, tc_csr *out, char *err, size_t errlen)
{
    tc_mm_matrix m;
    if (tc_mm_read(path, &m, err, errlen))
        return -1;
    if (m.cols > INT32_MAX) {
        tc_mm_free(&m);
        return spec_fail(err, errlen, "%s: %lld columns exceed the int32 index range", path,
                         (long long)m.cols);
    }
    if (!out) {
        tc_mm_free(&m);
        return 0;
    }
    int r = tc_mm_to_csr(&m, &out->row_off, &out->col, &out->val, &out->nnz);
    out->rows = m.rows, out->cols = m.cols;
    int pattern = m.is_pattern;
    tc_mm_free(&m);
    if (r) {
        memset(out, 0, sizeof *out);
        return spec_fail(err, errlen, "%s: out of memory", path);
    }
    /* All-ones values hide value-permutation bugs, so pattern files get random values. */
    if (pattern)
        fill_values(out, 0x5eedull);
    return 0;
}

static int csr_source(const char *spec_or_path, tc_csr *out, char *err, size_t errlen);

/* out NULL: only checked */
static int gen_diag(const char *spec, tc_csr *out, char *err, size_t errlen)
{
    const char *body = spec + 5, *last = strrchr(body, ':');
    uint64_t copies;
    if (!last || last == body || parse_num(last + 1, 0, INT32_MAX, &copies))
        return spec_fail(err, errlen, "spec '%s': expected diag:FILE_OR_SPEC:COPIES", spec);
    size_t n = (size_t)(last - body);
    char *inner = malloc(n + 1);
    if (!inner)
        return spec_fail(err, errlen, "spec '%s': out of memory", spec);
    memcpy(inner, body, n);
    inner[n] = '\0';
    tc_csr one;
    int r = csr_source(inner, out ? &one : NULL, err, errlen);
    free(inner);
    if (r || !out)
        return r;
    r = tc_gen_block_diag(&one, (int)copies, out);
    tc_csr_free(&one);
    if (r)
        return spec_fail(err, errlen, "spec '%s': too large (int32 columns) or out of memory",
                         spec);
    return 0;
}

static const gen_kind *find_kind(const char *spec)
{
    for (size_t i = 0; i < NKINDS; i++) {
        size_t n = strlen(kinds[i].kind);
        if (strncmp(spec, kinds[i].kind, n) == 0 && spec[n] == ':')
            return &kinds[i];
    }
    return NULL;
}

/* out NULL: only checked */
static int gen_spec(const char *spec, tc_csr *out, char *err, size_t errlen)
{
    if (!spec)
        return spec_fail(err, errlen, "no generator spec");
    if (strncmp(spec, "diag:", 5) == 0)
        return gen_diag(spec, out, err, errlen);
    const gen_kind *k = find_kind(spec);
    if (!k)
        return spec_fail(err, errlen, "spec '%s': unknown generator (expected " KIND_LIST ")",
                         spec);
    char buf[256], *field[6];
    int nf = 0;
    if (strlen(spec) >= sizeof buf)
        return spec_fail(err, errlen, "spec '%.40s...': too long", spec);
    strcpy(buf, spec);
    for (char *p = buf; nf < 6;) {
        field[nf++] = p;
        p = strchr(p, ':');
        if (!p)
            break;
        *p++ = '\0';
    }
    uint64_t seed = 1, a[3];
    if (nf > 1 && strncmp(field[nf - 1], "seed=", 5) == 0) {
        if (parse_num(field[nf - 1] + 5, 0, UINT64_MAX, &seed))
            return spec_fail(err, errlen, "spec '%s': bad seed '%s' (expected seed=N)", spec,
                             field[nf - 1] + 5);
        nf--;
    }
    if (nf != k->nargs + 1)
        return spec_fail(err, errlen, "spec '%s': expected %s[:seed=N]", spec, k->usage);
    for (int i = 0; i < k->nargs; i++)
        if (parse_num(field[i + 1], k->lo[i], k->hi[i], &a[i]))
            return spec_fail(err, errlen, "spec '%s': %s '%s' is not an integer in %llu..%llu",
                             spec, k->names[i], field[i + 1], (unsigned long long)k->lo[i],
                             (unsigned long long)k->hi[i]);
    if (k - kinds == 1 && a[1] * 4 > ((uint64_t)1 << a[0]))
        return spec_fail(err, errlen, "spec '%s': DEGREE %llu is more than a quarter of the %llu "
                         "nodes", spec, (unsigned long long)a[1], (unsigned long long)1 << a[0]);
    if (k - kinds == 4) {
        uint64_t nb = (a[0] + a[1] - 1) / a[1];
        if (a[2] > nb * nb)
            return spec_fail(err, errlen, "spec '%s': %llu blocks do not fit (the %llu x %llu "
                             "block grid has %llu cells)", spec, (unsigned long long)a[2],
                             (unsigned long long)nb, (unsigned long long)nb,
                             (unsigned long long)(nb * nb));
    }
    if (!out)
        return 0;
    int r;
    switch (k - kinds) {
    case 0:
        r = tc_gen_rmat((int)a[0], (int)a[1], seed, out);
        break;
    case 1:
        r = tc_gen_chunglu((int)a[0], (int)a[1], seed, out);
        break;
    case 2:
        r = tc_gen_uniform((int64_t)a[0], (int64_t)a[1], (int64_t)a[2], seed, out);
        break;
    case 3:
        r = tc_gen_banded((int64_t)a[0], (int64_t)a[1], seed, out);
        break;
    default:
        r = tc_gen_blocks((int64_t)a[0], (int64_t)a[1], (int64_t)a[2], seed, out);
    }
    if (r)
        return spec_fail(err, errlen, "spec '%s': too large or out of memory", spec);
    return 0;
}

int tc_gen_from_spec(const char *spec, tc_csr *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    return gen_spec(spec, out, err, errlen);
}

/* tc_csr_load, or with out NULL tc_csr_check */
static int csr_source(const char *spec_or_path, tc_csr *out, char *err, size_t errlen)
{
    struct stat st;
    if (out)
        memset(out, 0, sizeof *out);
    if (!spec_or_path)
        return spec_fail(err, errlen, "no file name or generator spec");
    if (stat(spec_or_path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return spec_fail(err, errlen, "%s: is a directory", spec_or_path);
        return load_mm(spec_or_path, out, err, errlen);
    }
    if (!find_kind(spec_or_path) && strncmp(spec_or_path, "diag:", 5) != 0)
        return spec_fail(err, errlen, "%s: no such file, and not a generator spec (" KIND_LIST
                         ")", spec_or_path);
    return gen_spec(spec_or_path, out, err, errlen);
}

int tc_csr_load(const char *spec_or_path, tc_csr *out, char *err, size_t errlen)
{
    return csr_source(spec_or_path, out, err, errlen);
}

int tc_csr_check(const char *spec_or_path, char *err, size_t errlen)
{
    return csr_source(spec_or_path, NULL, err, errlen);
}
