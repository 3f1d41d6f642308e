/* CPU ME-TCF conversion: round trip to CSR, layout invariants, statistics against an
 * independent count, every input form (CSR/CSC/COO, int32/int64, base 0/1, unsorted).  One
 * file over 600 lines because every test runs its matrices through the same input forms and
 * oracles (the first half of the file); the rejection of malformed input, which needs none of
 * them, is test_convert_reject.c's. */
#define _POSIX_C_SOURCE 200809L /* dirent, clock_gettime */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "error.h"
#include "gen.h"
#include "metcf.h"
#include "mmio.h"
#include "metcf_rules.h"

/* Checks inside loops: report only on failure, with the details. */
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond))                                                                           \
            cr_assert_fail(__VA_ARGS__);                                                       \
    } while (0)

/* ---- random input -------------------------------------------------------------------- */

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_val(uint64_t *s)
{
    double v;
    do
        v = (double)(rng(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    while (v > -1e-3 && v < 1e-3);
    return v;
}

static void csr_free(tc_csr *a)
{
    free(a->row_off);
    free(a->col);
    free(a->val);
    memset(a, 0, sizeof *a);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorted 0-based CSR with up to per_row distinct columns per row; about empty_pct percent of
 * rows are empty and columns with col % 7 == 3 are never used (empty columns). */
static tc_csr rand_csr(int64_t rows, int64_t cols, int64_t per_row, int empty_pct, uint64_t seed)
{
    tc_csr a = {.rows = rows, .cols = cols};
    int64_t usable = cols - (cols + 3) / 7;
    int64_t cap = rows * (per_row < usable ? per_row : usable);
    a.row_off = calloc((size_t)rows + 1, sizeof *a.row_off);
    a.col = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *a.col);
    a.val = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *a.val);
    unsigned char *mark = calloc((size_t)cols + 1, 1);
    cr_assert(a.row_off && a.col && a.val && mark);
    int64_t nnz = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t k = (int64_t)(rng(&seed) % 100) < empty_pct
                        ? 0
                        : (int64_t)(rng(&seed) % (uint64_t)(per_row + 1));
        if (k > usable)
            k = usable;
        int64_t row0 = nnz;
        while (nnz - row0 < k) {
            int64_t c = (int64_t)(rng(&seed) % (uint64_t)cols);
            if (c % 7 == 3 || mark[c])
                continue;
            mark[c] = 1;
            a.col[nnz++] = (int32_t)c;
        }
        qsort(a.col + row0, (size_t)k, sizeof *a.col, cmp_i32);
        for (int64_t i = row0; i < nnz; i++) {
            mark[a.col[i]] = 0;
            a.val[i] = rng_val(&seed);
        }
        a.row_off[r + 1] = nnz;
    }
    a.nnz = nnz;
    free(mark);
    return a;
}

/* ---- input forms ------------------------------------------------------------------------ */

typedef struct {
    tcsparseFormat_t fmt;
    tcsparseIndexType_t ot, it;
    int base, shuffle;
} form;

typedef struct {
    tc_sparse_view v;
    void *off, *idx;
    double *val; /* aligned with the caller's positions */
} input;

static void *idx_alloc(int64_t n, tcsparseIndexType_t t)
{
    void *p = malloc((size_t)(n > 0 ? n : 1) * (t == TCSPARSE_INDEX_64I ? 8 : 4));
    cr_assert(p);
    return p;
}

static void idx_put(void *p, tcsparseIndexType_t t, int64_t i, int64_t x)
{
    if (t == TCSPARSE_INDEX_64I)
        ((int64_t *)p)[i] = x;
    else
        ((int32_t *)p)[i] = (int32_t)x;
}

/* Fisher-Yates over [lo, hi) of the parallel arrays a (index) and v (value). */
static void shuffle_range(int64_t *a, double *v, int64_t lo, int64_t hi, uint64_t *s)
{
    for (int64_t i = hi - 1; i > lo; i--) {
        int64_t j = lo + (int64_t)(rng(s) % (uint64_t)(i - lo + 1));
        int64_t t = a[i]; a[i] = a[j]; a[j] = t;
        double tv = v[i]; v[i] = v[j]; v[j] = tv;
    }
}

/* Builds the caller-side arrays of A in form f. */
static void make_input(const tc_csr *A, form f, uint64_t seed, input *in)
{
    const int64_t n = A->nnz, b = f.base;
    memset(in, 0, sizeof *in);
    in->v = (tc_sparse_view){f.fmt, A->rows, A->cols, n, NULL, NULL, f.ot, f.it,
                             (tcsparseIndexBase_t)f.base};
    int64_t *minor = malloc((size_t)(n > 0 ? n : 1) * sizeof *minor);
    int64_t *major = malloc((size_t)(n > 0 ? n : 1) * sizeof *major);
    in->val = malloc((size_t)(n > 0 ? n : 1) * sizeof *in->val);
    cr_assert(minor && major && in->val);
    int64_t nmaj = f.fmt == TCSPARSE_FORMAT_CSC ? A->cols : A->rows;
    int64_t *off = calloc((size_t)nmaj + 2, sizeof *off);
    cr_assert(off);
    if (f.fmt == TCSPARSE_FORMAT_CSC) {
        for (int64_t k = 0; k < n; k++)
            off[A->col[k] + 2]++;
        for (int64_t c = 0; c < nmaj; c++)
            off[c + 2] += off[c + 1];
        for (int64_t r = 0; r < A->rows; r++)
            for (int64_t k = A->row_off[r]; k < A->row_off[r + 1]; k++) {
                int64_t s = off[A->col[k] + 1]++;
                minor[s] = r;
                major[s] = A->col[k];
                in->val[s] = A->val[k];
            }
    } else {
        for (int64_t r = 0; r < A->rows; r++) {
            off[r + 1] = A->row_off[r + 1];
            for (int64_t k = A->row_off[r]; k < A->row_off[r + 1]; k++) {
                minor[k] = A->col[k];
                major[k] = r;
                in->val[k] = A->val[k];
            }
        }
    }
    if (f.shuffle && f.fmt == TCSPARSE_FORMAT_COO) {
        /* Shuffle whole entries: swap majors along with minors and values. */
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(rng(&seed) % (uint64_t)(i + 1));
            int64_t t = major[i]; major[i] = major[j]; major[j] = t;
            t = minor[i]; minor[i] = minor[j]; minor[j] = t;
            double tv = in->val[i]; in->val[i] = in->val[j]; in->val[j] = tv;
        }
    } else if (f.shuffle) {
        for (int64_t m = 0; m < nmaj; m++)
            shuffle_range(minor, in->val, off[m], off[m + 1], &seed);
    }
    in->idx = idx_alloc(n, f.it);
    for (int64_t k = 0; k < n; k++)
        idx_put(in->idx, f.it, k, minor[k] + b);
    if (f.fmt == TCSPARSE_FORMAT_COO) {
        in->off = idx_alloc(n, f.ot);
        for (int64_t k = 0; k < n; k++)
            idx_put(in->off, f.ot, k, major[k] + b);
    } else {
        in->off = idx_alloc(nmaj + 1, f.ot);
        for (int64_t m = 0; m <= nmaj; m++)
            idx_put(in->off, f.ot, m, off[m] + b);
    }
    in->v.offsets = in->off;
    in->v.indices = in->idx;
    free(minor);
    free(major);
    free(off);
}

static void input_free(input *in)
{
    free(in->off);
    free(in->idx);
    free(in->val);
}

/* ---- oracles ---------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Window-block statistics counted from A directly: distinct (window, column) pairs found by
 * sorting window * cols + col with qsort (the converter radix-sorts per window). */
static void expected_stats(const tc_csr *A, tcsparseMetcfStats_t *e)
{
    memset(e, 0, sizeof *e);
    int64_t W = (A->rows + 15) / 16;
    e->rows = A->rows;
    e->cols = A->cols;
    e->nnz = A->nnz;
    e->windows = W;
    uint64_t *keys = malloc((size_t)(A->nnz > 0 ? A->nnz : 1) * sizeof *keys);
    int64_t *blocks = calloc((size_t)W + 1, sizeof *blocks);
    cr_assert(keys && blocks);
    for (int64_t r = 0; r < A->rows; r++)
        for (int64_t k = A->row_off[r]; k < A->row_off[r + 1]; k++)
            keys[k] = (uint64_t)(r / 16) * (uint64_t)A->cols + (uint64_t)A->col[k];
    qsort(keys, (size_t)A->nnz, sizeof *keys, cmp_u64);
    /* Count distinct columns per window first; blocks follow. */
    for (int64_t k = 0; k < A->nnz; k++)
        if (k == 0 || keys[k] != keys[k - 1])
            blocks[keys[k] / (uint64_t)A->cols]++;
    for (int64_t w = 0; w < W; w++) {
        int64_t b = (blocks[w] + 7) / 8;
        e->blocks += b;
        if (b == 0)
            e->empty_windows++;
        if (b > e->max_blocks_per_window)
            e->max_blocks_per_window = b;
        int k = 0;
        if (b == 1)
            k = 1;
        else if (b > 1)
            for (k = 2; k < 15 && b > ((int64_t)1 << (k - 1)); k++)
                ;
        e->blocks_per_window_hist[k]++;
    }
    e->mean_nnz_per_block = e->blocks ? (double)A->nnz / (double)e->blocks : 0.0;
    e->mean_blocks_per_window = W ? (double)e->blocks / (double)W : 0.0;
    int64_t wide = A->nnz >= ((int64_t)1 << 31) ? 8 : 4;
    e->metcf_bytes = 4 * (W + 1) + wide * (e->blocks + 1) + A->nnz + 32 * e->blocks + wide * A->nnz;
    e->csr_bytes = 4 * (A->rows + 1) + 4 * A->nnz;
    free(keys);
    free(blocks);
}

static void check_stats(const tc_metcf *m, const tc_csr *A)
{
    tcsparseMetcfStats_t got, want;
    tc_metcf_stats(m, &got);
    expected_stats(A, &want);
    cr_assert_eq(got.rows, want.rows);
    cr_assert_eq(got.cols, want.cols);
    cr_assert_eq(got.nnz, want.nnz);
    cr_assert_eq(got.windows, want.windows);
    cr_assert_eq(got.blocks, want.blocks, "blocks %lld, expected %lld", (long long)got.blocks,
                 (long long)want.blocks);
    cr_assert_eq(got.empty_windows, want.empty_windows);
    cr_assert_eq(got.max_blocks_per_window, want.max_blocks_per_window);
    cr_assert_float_eq(got.mean_nnz_per_block, want.mean_nnz_per_block, 1e-12);
    cr_assert_float_eq(got.mean_blocks_per_window, want.mean_blocks_per_window, 1e-12);
    for (int k = 0; k < 16; k++)
        cr_assert_eq(got.blocks_per_window_hist[k], want.blocks_per_window_hist[k],
                     "histogram bucket %d: %lld, expected %lld", k,
                     (long long)got.blocks_per_window_hist[k],
                     (long long)want.blocks_per_window_hist[k]);
    cr_assert_eq(got.metcf_bytes, want.metcf_bytes);
    cr_assert_eq(got.csr_bytes, want.csr_bytes);
    cr_assert_eq(m->blocks, want.blocks);
}

/* Layout rules a kernel relies on. */
static void check_layout(const tc_metcf *m)
{
    cr_assert_eq(m->windows, (m->rows + 15) / 16);
    cr_assert_eq(m->win_off[0], 0);
    cr_assert_eq(m->win_off[m->windows], m->blocks);
    cr_assert_eq(m->blk_off[0], 0);
    cr_assert_eq(m->blk_off[m->blocks], m->nnz);
    unsigned char *seen = calloc((size_t)(m->nnz > 0 ? m->nnz : 1), 1);
    cr_assert(seen);
    for (int64_t w = 0; w < m->windows; w++) {
        int64_t b0 = m->win_off[w], b1 = m->win_off[w + 1];
        CHECK(b0 <= b1, "window %lld: win_off decreases", (long long)w);
        int64_t prev = -1;
        for (int64_t b = b0; b < b1; b++) {
            CHECK(m->blk_off[b] < m->blk_off[b + 1], "block %lld is empty", (long long)b);
            int used = 0;
            for (int s = 0; s < 8; s++) {
                int32_t c = m->blk_col[b * 8 + s];
                if (c == -1) {
                    CHECK(b == b1 - 1 && s > 0, "padding inside window %lld block %lld",
                          (long long)w, (long long)b);
                    for (int t = s; t < 8; t++)
                        CHECK(m->blk_col[b * 8 + t] == -1, "padding not trailing");
                    break;
                }
                CHECK(c > prev && c < m->cols, "window %lld: column %d not ascending/in range",
                      (long long)w, c);
                prev = c;
            }
            for (int64_t k = m->blk_off[b]; k < m->blk_off[b + 1]; k++) {
                uint8_t p = m->blk_pos[k];
                CHECK(p < 128, "blk_pos %u", p);
                CHECK(k == m->blk_off[b] || m->blk_pos[k - 1] < p,
                      "block %lld: blk_pos not ascending", (long long)b);
                CHECK(m->blk_col[b * 8 + (p & 7)] >= 0, "nonzero in a padding column");
                CHECK(w * 16 + (p >> 3) < m->rows, "nonzero in a row past the end");
                used |= 1 << (p & 7);
                int64_t vi = m->val_idx[k];
                CHECK(vi >= 0 && vi < m->nnz && !seen[vi], "val_idx %lld repeated/out of range",
                      (long long)vi);
                seen[vi] = 1;
            }
            /* Written as two flags on purpose: GCC 12.2 -O1 and above miscompiles
             * (x >= 0) == ((y >> s) & 1) here. */
            for (int s = 0; s < 8; s++) {
                int real = m->blk_col[b * 8 + s] != -1, hit = (used & (1 << s)) != 0;
                CHECK(real == hit, "block %lld column slot %d: real %d but used %d",
                      (long long)b, s, real, hit);
            }
        }
    }
    free(seen);
}

/* Round trip: the reconstructed CSR equals A, and every nonzero's value index finds A's value
 * in the caller's array. */
static void check_roundtrip(const tc_metcf *m, const tc_csr *A, const double *val)
{
    int64_t *ro = malloc((size_t)(A->rows + 1) * sizeof *ro);
    int64_t *col = malloc((size_t)(A->nnz > 0 ? A->nnz : 1) * sizeof *col);
    int64_t *vi = malloc((size_t)(A->nnz > 0 ? A->nnz : 1) * sizeof *vi);
    cr_assert(ro && col && vi);
    tc_metcf_to_csr(m, ro, col, vi);
    for (int64_t r = 0; r <= A->rows; r++)
        CHECK(ro[r] == A->row_off[r], "row_off[%lld] = %lld, expected %lld", (long long)r,
              (long long)ro[r], (long long)A->row_off[r]);
    for (int64_t k = 0; k < A->nnz; k++) {
        CHECK(col[k] == A->col[k], "entry %lld: column %lld, expected %d", (long long)k,
              (long long)col[k], A->col[k]);
        CHECK(val[vi[k]] == A->val[k], "entry %lld: value index %lld has the wrong value",
              (long long)k, (long long)vi[k]);
    }
    free(ro);
    free(col);
    free(vi);
}

static void check_form(const tc_csr *A, form f, uint64_t seed)
{
    input in;
    make_input(A, f, seed, &in);
    tc_metcf m;
    tcsparseStatus_t st = tc_metcf_build_cpu(&in.v, &m);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "format %d, types %d/%d, base %d: %s", f.fmt, f.ot,
                 f.it, f.base, tcsparseGetLastErrorMessage());
    check_layout(&m);
    check_roundtrip(&m, A, in.val);
    check_stats(&m, A);
    tc_metcf_free(&m);
    cr_assert_null(m.win_off);
    cr_assert_eq(m.nnz, 0);
    input_free(&in);
}

static const form all_forms[] = {
    {TCSPARSE_FORMAT_CSR, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, 0, 0},
    {TCSPARSE_FORMAT_CSR, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_32I, 1, 1},
    {TCSPARSE_FORMAT_CSR, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_64I, 1, 0},
    {TCSPARSE_FORMAT_CSR, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I, 0, 1},
    {TCSPARSE_FORMAT_CSC, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, 0, 0},
    {TCSPARSE_FORMAT_CSC, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I, 1, 1},
    {TCSPARSE_FORMAT_CSC, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_64I, 1, 1},
    {TCSPARSE_FORMAT_COO, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, 0, 1},
    {TCSPARSE_FORMAT_COO, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I, 1, 0},
    {TCSPARSE_FORMAT_COO, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I, 0, 1},
};
#define NFORMS (sizeof all_forms / sizeof all_forms[0])

static void check_all_forms(const tc_csr *A, uint64_t seed)
{
    for (size_t i = 0; i < NFORMS; i++)
        check_form(A, all_forms[i], seed + i);
}

/* ---- valid input -------------------------------------------------------------------------- */

Test(convert, random_odd_sizes)
{
    static const int64_t dims[][3] = {{37, 29, 6},  {1, 1000, 40}, {1000, 1, 1},  {17, 9, 9},
                                      {16, 8, 8},   {15, 7, 7},    {33, 65, 20},  {250, 513, 30},
                                      {1, 1, 1},    {2, 3, 3},     {129, 17, 17}, {500, 70, 70}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        tc_csr A = rand_csr(dims[i][0], dims[i][1], dims[i][2], 20, 100 + i);
        check_all_forms(&A, 7 * i);
        csr_free(&A);
    }
}

Test(convert, fully_dense)
{
    /* Every block full (128 nonzeros) except the tails: 33 x 70 has 3 windows, 9 blocks each. */
    tc_csr A = {.rows = 33, .cols = 70};
    A.row_off = calloc(34, sizeof *A.row_off);
    A.col = malloc(33 * 70 * sizeof *A.col);
    A.val = malloc(33 * 70 * sizeof *A.val);
    cr_assert(A.row_off && A.col && A.val);
    int64_t n = 0;
    for (int64_t r = 0; r < 33; r++) {
        for (int64_t c = 0; c < 70; c++) {
            A.col[n] = (int32_t)c;
            A.val[n++] = 0.5 + (double)(r * 70 + c) * 1e-3;
        }
        A.row_off[r + 1] = n;
    }
    A.nnz = n;
    check_all_forms(&A, 9);
    tcsparseMetcfStats_t st;
    input in;
    make_input(&A, all_forms[0], 1, &in);
    tc_metcf m;
    cr_assert_eq(tc_metcf_build_cpu(&in.v, &m), TCSPARSE_STATUS_SUCCESS);
    tc_metcf_stats(&m, &st);
    cr_assert_eq(st.blocks, 27);
    cr_assert_eq(m.blk_off[1], 128);
    cr_assert_eq(m.blk_col[8 * 8 + 5], 69);
    cr_assert_eq(m.blk_col[8 * 8 + 6], -1);
    tc_metcf_free(&m);
    input_free(&in);
    csr_free(&A);
}

Test(convert, histogram_boundaries)
{
    /* Window w holds blocks[w] * 8 distinct columns in one row: its block count exactly. */
    static const int64_t nblk[] = {0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 8192, 8193, 0};
    static const int bucket[] = {0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 14, 15, 0};
    const int64_t W = sizeof nblk / sizeof nblk[0], cols = 8193 * 8 + 5;
    int64_t total = 0;
    for (int64_t w = 0; w < W; w++)
        total += nblk[w] * 8;
    tc_csr A = {.rows = W * 16 - 3, .cols = cols, .nnz = total};
    A.row_off = calloc((size_t)A.rows + 1, sizeof *A.row_off);
    A.col = malloc((size_t)total * sizeof *A.col);
    A.val = malloc((size_t)total * sizeof *A.val);
    cr_assert(A.row_off && A.col && A.val);
    uint64_t s = 17;
    int64_t n = 0;
    for (int64_t r = 0; r < A.rows; r++) {
        if (r % 16 == 7)
            for (int64_t c = 0; c < nblk[r / 16] * 8; c++) {
                A.col[n] = (int32_t)c;
                A.val[n++] = rng_val(&s);
            }
        A.row_off[r + 1] = n;
    }
    check_form(&A, all_forms[0], 1);
    input in;
    make_input(&A, all_forms[8], 2, &in);
    tc_metcf m;
    cr_assert_eq(tc_metcf_build_cpu(&in.v, &m), TCSPARSE_STATUS_SUCCESS);
    tcsparseMetcfStats_t st;
    tc_metcf_stats(&m, &st);
    int64_t want[16] = {0};
    for (int64_t w = 0; w < W; w++)
        want[bucket[w]]++;
    for (int k = 0; k < 16; k++)
        cr_assert_eq(st.blocks_per_window_hist[k], want[k], "bucket %d: %lld, expected %lld", k,
                     (long long)st.blocks_per_window_hist[k], (long long)want[k]);
    cr_assert_eq(st.max_blocks_per_window, 8193);
    cr_assert_eq(st.empty_windows, 2);
    cr_assert_eq(st.blocks, total / 8);
    tc_metcf_free(&m);
    input_free(&in);
    csr_free(&A);
}

/* The wide-L1 rule of the TF32 kernels (metcf_rules.h, tc_wide_l1_plan): fewer than 10
 * nonzeros a block, none for a plan without blocks; and the two matrices the GPU tests
 * gpu_spmm/wide_l1_rule and gpu_sddmm/wide_l1_rule use for each side of it, checked on the
 * CPU reference plan, so that a change of generator cannot silently move them across. */
Test(convert, wide_l1_rule)
{
    cr_assert(tc_wide_l1_plan(9, 1));
    cr_assert(!tc_wide_l1_plan(10, 1));
    cr_assert(tc_wide_l1_plan(79999, 8000));
    cr_assert(!tc_wide_l1_plan(80000, 8000));
    cr_assert(!tc_wide_l1_plan(0, 0));
    cr_assert(tc_wide_l1_plan(0, 5)); /* blocks without nonzeros do not occur, but are sparse */
    static const struct {
        const char *spec;
        int wide;
    } cases[] = {{"uniform:3001:2999:9", 1}, {"banded:3001:6", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_csr A;
        char err[256];
        cr_assert_eq(tc_gen_from_spec(cases[i].spec, &A, err, sizeof err), 0, "%s: %s",
                     cases[i].spec, err);
        input in;
        make_input(&A, all_forms[0], 0, &in);
        tc_metcf m;
        cr_assert_eq(tc_metcf_build_cpu(&in.v, &m), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(tc_wide_l1_plan(A.nnz, m.blocks), cases[i].wide,
                     "%s: %lld nonzeros in %lld blocks", cases[i].spec, (long long)A.nnz,
                     (long long)m.blocks);
        tc_metcf_free(&m);
        input_free(&in);
        tc_csr_free(&A);
    }
}

/* The window order of the conversion's one-block-a-window passes (metcf_rules.h,
 * tc_snake_rank): a permutation of the windows for any count and SM count, and, on windows of
 * decreasing size, SM loads (blocks b, b + S, ... on one SM) near the mean; with two rounds of
 * linearly decreasing sizes every SM gets the same load. */
Test(convert, snake_rank)
{
    static const int sms[] = {1, 2, 3, 7, 114, 132, 4096, 5000};
    static char seen[4097];
    for (size_t k = 0; k < sizeof sms / sizeof sms[0]; k++)
        for (int32_t n = 1; n <= 4096; n += n < 300 ? 1 : 37) {
            memset(seen, 0, sizeof seen);
            for (int32_t b = 0; b < n; b++) {
                const int32_t r = tc_snake_rank(b, n, sms[k]);
                cr_assert(r >= 0 && r < n && !seen[r], "n %d S %d: block %d -> rank %d", n,
                          sms[k], b, r);
                seen[r] = 1;
            }
        }
    cr_assert_eq(tc_snake_rank(5, 10, 0), 5); /* no SM count: one a round, in order */
    enum { S = 132, W = 2 * S };
    int64_t load[S] = {0};
    for (int32_t b = 0; b < W; b++)
        load[b % S] += W - tc_snake_rank(b, W, S); /* rank r holds W - r nonzeros */
    for (int s = 1; s < S; s++)
        cr_assert_eq(load[s], load[0], "SM %d: %lld against %lld", s, (long long)load[s],
                     (long long)load[0]);
}

/* The staging area of those passes fitted to the fewest waves (metcf_rules.h, tc_fit_stage),
 * on the H100's figures for ogbl-ddi (267 windows, 132 SMs, 228 KiB a SM, 3 blocks an SM by
 * registers): the staging area shrinks until 3 blocks fit (one wave), a multiple of 16 and
 * still a mean window; unchanged where no wave is saved or the mean window would not fit. */
Test(convert, fit_stage)
{
    const int64_t per_sm = 233472, per_block = 1024 + 22912, local = 1072;
    const int cap = tc_fit_stage(12032, 7999, 267, 132, local, 3, per_sm, per_block);
    cr_assert(cap < 12032 && cap >= 7999 && cap % 16 == 0, "cap %d", cap);
    cr_assert_eq(tc_fit_stage_bps(cap, local, 3, per_sm, per_block), 3, "cap %d", cap);
    cr_assert_eq(tc_fit_stage_bps(12032, local, 3, per_sm, per_block), 2);
    /* already one wave (264 blocks fit at 2 an SM), no room for the mean, one block an SM at
     * most, nothing to stage */
    cr_assert_eq(tc_fit_stage(12032, 7999, 264, 132, local, 3, per_sm, per_block), 12032);
    cr_assert_eq(tc_fit_stage(12032, 11000, 267, 132, local, 3, per_sm, per_block), 12032);
    cr_assert_eq(tc_fit_stage(12032, 7999, 267, 132, local, 1, per_sm, per_block), 12032);
    cr_assert_eq(tc_fit_stage(0, 7999, 267, 132, local, 3, per_sm, per_block), 0);
    cr_assert_eq(tc_fit_stage(12032, 7999, 267, 132, local, 3, 0, per_block), 12032);
    /* many waves either way: 3 an SM saves one (1000 blocks: 4 waves at 2, 3 at 3) */
    const int many = tc_fit_stage(12032, 7999, 1000, 132, local, 3, per_sm, per_block);
    cr_assert_eq(tc_fit_stage_bps(many, local, 3, per_sm, per_block), 3, "cap %d", many);
}

Test(convert, empty_matrices)
{
    static const int64_t dims[][2] = {{0, 0}, {5, 0}, {0, 5}, {5, 7}, {16, 8}, {40, 3}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        tc_csr A = rand_csr(dims[i][0], dims[i][1], 0, 0, 1);
        check_all_forms(&A, i);
        tcsparseMetcfStats_t st;
        input in;
        make_input(&A, all_forms[1], 1, &in);
        tc_metcf m;
        cr_assert_eq(tc_metcf_build_cpu(&in.v, &m), TCSPARSE_STATUS_SUCCESS);
        tc_metcf_stats(&m, &st);
        cr_assert_eq(st.blocks, 0);
        cr_assert_eq(st.empty_windows, (dims[i][0] + 15) / 16);
        cr_assert_eq(st.blocks_per_window_hist[0], st.windows);
        tc_metcf_free(&m);
        input_free(&in);
        csr_free(&A);
    }
}

Test(convert, null_arrays_when_legal)
{
    /* nnz = 0: index arrays may be NULL; offsets only when their dimension is 0. */
    tc_sparse_view v = {TCSPARSE_FORMAT_COO, 9, 4, 0, NULL, NULL, TCSPARSE_INDEX_32I,
                         TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ONE};
    tc_metcf m;
    cr_assert_eq(tc_metcf_build_cpu(&v, &m), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(m.windows, 1);
    cr_assert_eq(m.blocks, 0);
    tc_metcf_free(&m);
    v.format = TCSPARSE_FORMAT_CSR;
    v.rows = 0;
    cr_assert_eq(tc_metcf_build_cpu(&v, &m), TCSPARSE_STATUS_SUCCESS);
    tc_metcf_free(&m);
    int32_t off[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    v.rows = 9;
    v.offsets = off;
    cr_assert_eq(tc_metcf_build_cpu(&v, &m), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(m.win_off[1], 0);
    tc_metcf_free(&m);
    v.format = TCSPARSE_FORMAT_CSC;
    v.rows = 3;
    v.cols = 0;
    v.offsets = NULL;
    cr_assert_eq(tc_metcf_build_cpu(&v, &m), TCSPARSE_STATUS_SUCCESS);
    tc_metcf_free(&m);
}

Test(convert, dense_row_of_a_million_columns)
{
    const int64_t cols = 1000003;
    tc_csr A = rand_csr(37, cols, 50, 10, 77);
    /* Replace row 21 by a full row. */
    tc_csr B = {.rows = A.rows, .cols = cols};
    B.row_off = calloc((size_t)A.rows + 1, sizeof *B.row_off);
    B.col = malloc((size_t)(A.nnz + cols) * sizeof *B.col);
    B.val = malloc((size_t)(A.nnz + cols) * sizeof *B.val);
    cr_assert(B.row_off && B.col && B.val);
    uint64_t s = 3;
    int64_t n = 0;
    for (int64_t r = 0; r < A.rows; r++) {
        if (r == 21)
            for (int64_t c = 0; c < cols; c++) {
                B.col[n] = (int32_t)c;
                B.val[n++] = rng_val(&s);
            }
        else
            for (int64_t k = A.row_off[r]; k < A.row_off[r + 1]; k++) {
                B.col[n] = A.col[k];
                B.val[n++] = A.val[k];
            }
        B.row_off[r + 1] = n;
    }
    B.nnz = n;
    check_form(&B, all_forms[1], 1);
    check_form(&B, all_forms[5], 2);
    check_form(&B, all_forms[7], 3);
    csr_free(&A);
    csr_free(&B);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A conversion of about 2.1M nonzeros in each input form, checked by the round trip; its
 * time is logged, not asserted (about 0.1 s on the CI machine, more under the sanitizers and
 * a loaded machine). */
Test(convert, two_million_nonzeros)
{
    tc_csr A = rand_csr(131072, 131072, 32, 0, 11); /* about 2.1M nonzeros */
    static const form forms[] = {
        {TCSPARSE_FORMAT_CSR, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, 0, 1},
        {TCSPARSE_FORMAT_COO, TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I, 1, 1},
        {TCSPARSE_FORMAT_CSC, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, 0, 0},
    };
    for (size_t i = 0; i < 3; i++) {
        input in;
        make_input(&A, forms[i], i, &in);
        tc_metcf m;
        double t0 = now_s();
        cr_assert_eq(tc_metcf_build_cpu(&in.v, &m), TCSPARSE_STATUS_SUCCESS);
        double dt = now_s() - t0;
        cr_log_info("format %d: %lld nonzeros converted in %.3f s", forms[i].fmt,
                    (long long)A.nnz, dt);
        check_roundtrip(&m, &A, in.val);
        tc_metcf_free(&m);
        input_free(&in);
    }
    csr_free(&A);
}

/* ---- generated matrices ------------------------------------------------------------------- */

static void check_generated(int rc, tc_csr *A, const char *what, uint64_t seed)
{
    cr_assert_eq(rc, 0, "generator %s failed", what);
    cr_log_info("%s: %lld x %lld, %lld nonzeros", what, (long long)A->rows, (long long)A->cols,
                (long long)A->nnz);
    check_all_forms(A, seed);
    tc_csr_free(A);
}

Test(convert, generated)
{
    tc_csr A;
    check_generated(tc_gen_rmat(12, 8, 1, &A), &A, "rmat:12:8", 1);
    check_generated(tc_gen_rmat(14, 16, 2, &A), &A, "rmat:14:16", 2);
    check_generated(tc_gen_uniform(5001, 3003, 13, 3, &A), &A, "uniform:5001:3003:13", 3);
    check_generated(tc_gen_uniform(100, 20, 40, 4, &A), &A, "uniform:100:20:40", 4);
    check_generated(tc_gen_banded(4099, 9, 5, &A), &A, "banded:4099:9", 5);
    check_generated(tc_gen_blocks(3001, 16, 300, 6, &A), &A, "blocks:3001:16:300", 6);
    check_generated(tc_gen_blocks(1000, 7, 100, 7, &A), &A, "blocks:1000:7:100", 7);
    tc_csr B;
    cr_assert_eq(tc_gen_uniform(37, 37, 5, 8, &B), 0);
    check_generated(tc_gen_block_diag(&B, 21, &A), &A, "diag(uniform:37:37:5, 21)", 8);
    tc_csr_free(&B);
}

/* ---- matrices on disk -------------------------------------------------------------------- */

static int is_mtx(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && strcmp(name + n - 4, ".mtx") == 0) ||
           (n > 7 && strcmp(name + n - 7, ".mtx.gz") == 0);
}

Test(convert, data_dir, .timeout = 600)
{
    const char *dir = getenv("TC_DATA_DIR");
    if (dir == NULL || *dir == '\0')
        cr_skip_test("TC_DATA_DIR is not set (point it at a folder of .mtx/.mtx.gz files)");
    DIR *d = opendir(dir);
    if (d == NULL)
        cr_skip_test("TC_DATA_DIR=%s cannot be opened", dir);
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_mtx(de->d_name))
            continue;
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        tc_mm_matrix mm;
        cr_assert_eq(tc_mm_read(path, &mm, err, sizeof err), 0, "%s", err);
        tc_csr A = {.rows = mm.rows, .cols = mm.cols};
        cr_assert_eq(tc_mm_to_csr(&mm, &A.row_off, &A.col, &A.val, &A.nnz), 0, "%s", path);
        tc_mm_free(&mm);
        cr_log_info("%s: %lld x %lld, %lld nonzeros", de->d_name, (long long)A.rows,
                    (long long)A.cols, (long long)A.nnz);
        check_form(&A, all_forms[0], 1); /* CSR, sorted, 0-based, int32 */
        check_form(&A, all_forms[1], 2); /* CSR, unsorted rows, 1-based */
        check_form(&A, all_forms[7], 3); /* COO, shuffled */
        csr_free(&A);
        count++;
    }
    closedir(d);
    if (count == 0)
        cr_skip_test("TC_DATA_DIR=%s holds no .mtx or .mtx.gz file", dir);
}
