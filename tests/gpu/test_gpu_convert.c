#define _POSIX_C_SOURCE 200809L /* setenv */
/* GPU ME-TCF conversion against the CPU reference: identical arrays on generated matrices
 * and on every matrix in TC_DATA_DIR, for CSR/CSC/COO, both index widths and bases;
 * invalid structures rejected. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "gen.h"
#include "metcf.h"
#include "reorder.h"
#include "kernels.h"
#include "testutil.h"
#include "gpu_test.h"

static void *from_device(const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (bytes)
        cr_assert_eq(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
}

/* Host arrays of m in format fmt; returns the number of offsets entries. */
static int64_t build_arrays(const tc_csr *m, tcsparseFormat_t fmt, int is64, int base, void **off,
                            void **idx)
{
    const size_t is = is64 ? 8 : 4;
    int64_t noff = fmt == TCSPARSE_FORMAT_CSR ? m->rows + 1 : fmt == TCSPARSE_FORMAT_CSC ? m->cols + 1 : m->nnz;
    *off = malloc(is * (size_t)(noff + 1));
    *idx = malloc(is * (size_t)(m->nnz + 1));
    if (fmt == TCSPARSE_FORMAT_CSC) {
        int64_t *cnt = calloc((size_t)m->cols + 1, sizeof *cnt);
        for (int64_t e = 0; e < m->nnz; e++)
            cnt[m->col[e] + 1]++;
        for (int64_t c = 0; c < m->cols; c++)
            cnt[c + 1] += cnt[c];
        for (int64_t c = 0; c <= m->cols; c++)
            put_index(*off, (size_t)c, is64, cnt[c] + base);
        for (int64_t r = 0; r < m->rows; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
                put_index(*idx, (size_t)cnt[m->col[e]]++, is64, r + base);
        free(cnt);
        return noff;
    }
    /* COO entries listed in reverse order: unsorted input */
    if (fmt == TCSPARSE_FORMAT_CSR) {
        for (int64_t r = 0; r <= m->rows; r++)
            put_index(*off, (size_t)r, is64, m->row_off[r] + base);
        for (int64_t e = 0; e < m->nnz; e++)
            put_index(*idx, (size_t)e, is64, m->col[e] + base);
    } else {
        int64_t pos = m->nnz;
        for (int64_t r = 0; r < m->rows; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                --pos;
                put_index(*off, (size_t)pos, is64, r + base);
                put_index(*idx, (size_t)pos, is64, m->col[e] + base);
            }
    }
    return noff;
}

/* The statistics and the balanced schedule the conversion computed on the device against
 * the host's: tc_metcf_stats, and chunks of at most L blocks of one window (at least one per
 * window), L = the forced length or about four waves of chunks on sm_count SMs. */
static void check_extra(const tc_metcf *ref, const tc_convert_extra *x, const char *name)
{
    tcsparseMetcfStats_t st;
    tc_metcf_stats(ref, &st);
    cr_assert_eq(x->empty_windows, st.empty_windows, "%s: empty windows", name);
    cr_assert_eq(x->max_blocks_per_window, st.max_blocks_per_window, "%s: largest window", name);
    for (int k = 0; k < 16; k++)
        cr_assert_eq(x->hist[k], st.blocks_per_window_hist[k], "%s: hist[%d]", name, k);
    int64_t L = x->force_chunk > 0 ? x->force_chunk : ref->blocks / ((int64_t)x->sm_count * 24);
    if (x->force_chunk <= 0) {
        L = (L + 7) / 8 * 8;
        L = L < 16 ? 16 : L > 128 ? 128 : L;
    }
    cr_assert_eq(x->chunk_blocks, L, "%s: chunk length %d, expected %lld", name, x->chunk_blocks,
                 (long long)L);
    tc_chunk *ch = from_device(x->chunks, sizeof *ch * (size_t)x->nchunks);
    int32_t *sp = from_device(x->split_windows, sizeof *sp * (size_t)x->nsplit);
    int64_t k = 0, q = 0;
    for (int64_t w = 0; w < ref->windows; w++) {
        int64_t b = ref->win_off[w], e = ref->win_off[w + 1];
        const int split = e - b > L;
        if (split) {
            cr_assert_lt(q, x->nsplit, "%s: too few split windows", name);
            cr_assert_eq(sp[q], w, "%s: split window %lld", name, (long long)q);
            q++;
        }
        do {
            int64_t end = e - b > L ? b + L : e;
            cr_assert_lt(k, x->nchunks, "%s: too few chunks", name);
            cr_assert(ch[k].win == w && ch[k].begin == b && ch[k].end == end && ch[k].split == split,
                      "%s: chunk %lld is {%d, %d, %d, %d}, expected {%lld, %lld, %lld, %d}", name,
                      (long long)k, ch[k].win, ch[k].begin, ch[k].end, ch[k].split, (long long)w,
                      (long long)b, (long long)end, split);
            k++;
            b = end;
        } while (b < e);
    }
    cr_assert_eq(k, x->nchunks, "%s: %d chunks, expected %lld", name, x->nchunks, (long long)k);
    cr_assert_eq(q, x->nsplit, "%s: %d split windows, expected %lld", name, x->nsplit, (long long)q);
    free(ch);
    free(sp);
}

/* The GPU arrays of g against the host plan ref, whose val_idx is mapped through vmap (NULL:
 * as it is) to the caller's positions. */
static void compare_plan(const tc_dev_metcf *g, const tc_metcf *ref, const int64_t *vmap,
                         int64_t nnz, const char *name)
{
    cr_assert_eq(g->windows, ref->windows, "%s: windows", name);
    cr_assert_eq(g->blocks, ref->blocks, "%s: blocks %d vs %lld", name, g->blocks,
                 (long long)ref->blocks);
    int32_t *win = from_device(g->win_off, 4 * (size_t)(g->windows + 1));
    int32_t *boff = from_device(g->blk_off, 4 * (size_t)(g->blocks + 1));
    int32_t *bcol = from_device(g->blk_col, 4 * 8 * (size_t)g->blocks);
    int32_t *vidx = from_device(g->val_idx, 4 * (size_t)nnz);
    uint8_t *bpos = from_device(g->blk_pos, (size_t)nnz);
    for (int64_t w = 0; w <= ref->windows; w++)
        cr_assert_eq(win[w], ref->win_off[w], "%s: win_off[%lld]", name, (long long)w);
    for (int64_t b = 0; b <= ref->blocks; b++)
        cr_assert_eq(boff[b], ref->blk_off[b], "%s: blk_off[%lld]", name, (long long)b);
    for (int64_t i = 0; i < 8 * ref->blocks; i++)
        cr_assert_eq(bcol[i], ref->blk_col[i], "%s: blk_col[%lld]", name, (long long)i);
    for (int64_t i = 0; i < nnz; i++) {
        cr_assert_eq(bpos[i], ref->blk_pos[i], "%s: blk_pos[%lld]", name, (long long)i);
        const int64_t want = vmap ? vmap[ref->val_idx[i]] : ref->val_idx[i];
        cr_assert_eq(vidx[i], want, "%s: val_idx[%lld]", name, (long long)i);
    }
    free(win); free(boff); free(bcol); free(vidx); free(bpos);
}

/* Rows ordered first-col on the GPU inside the conversion (CSR): the plan must be the CPU
 * reference's for the rows in the host's first-col order (the same permutation,
 * tc_reorder_compute), val_idx still the caller's positions, and win_row that permutation
 * padded with -1.  Variants, on the window-local path (at most 2^18 columns) and through the
 * sort (forced, or past 2^18 columns): the order always taken; a gain of 0 asked for (kept
 * when it has at most the caller's order's blocks); a gain of 99.9% (refused: the plan is the
 * unordered one, without win_row).  The caller's order is counted only where a gain is asked
 * for. */
static void compare_gpu_ordered(const tc_csr *m, const tc_metcf *plain, const void *d_off,
                                const void *d_idx, int is64, int base, const char *name)
{
    const int64_t M = m->rows, nnz = m->nnz;
    tc_rcsr a = {M, m->cols, nnz, m->row_off, m->col};
    int32_t *order = malloc(sizeof *order * (size_t)M);
    cr_assert_eq(tc_reorder_compute(&a, TC_ORD_FIRST_COL, order, 1), 0);
    int64_t *ro = malloc(sizeof *ro * (size_t)(M + 1)), *vmap = malloc(sizeof *vmap * (size_t)nnz);
    int32_t *col = malloc(sizeof *col * (size_t)nnz);
    ro[0] = 0;
    for (int64_t i = 0; i < M; i++) { /* new row i = the caller's row order[i] */
        int64_t e = ro[i];
        for (int64_t k = m->row_off[order[i]]; k < m->row_off[order[i] + 1]; k++, e++) {
            col[e] = m->col[k];
            vmap[e] = k;
        }
        ro[i + 1] = e;
    }
    tc_sparse_view v = {.format = TCSPARSE_FORMAT_CSR, .rows = M, .cols = m->cols, .nnz = nnz,
                        .offsets = ro, .indices = col, .offsets_type = TCSPARSE_INDEX_64I,
                        .indices_type = TCSPARSE_INDEX_32I, .base = TCSPARSE_INDEX_BASE_ZERO};
    tc_metcf ref;
    cr_assert_eq(tc_metcf_build_cpu(&v, &ref), TCSPARSE_STATUS_SUCCESS, "%s: CPU: %s", name,
                 tcsparseGetLastErrorMessage());
    tc_convert_input in = {.format = TCSPARSE_FORMAT_CSR, .rows = M, .cols = m->cols, .nnz = nnz,
                           .offsets = d_off, .indices = d_idx, .offsets_64 = is64,
                           .indices_64 = is64, .base = base,
                           .gpu_order = TC_GPU_ORDER_FIRST_COL, .gpu_order_min_gain = -1.0};
    const int local = m->cols <= (1 << 18);
    cr_assert(tc_convert_can_order(&in), "%s: not ordered on the GPU", name);
    for (int variant = local ? 0 : 3; variant < 6; variant++) {
        /* 0-2 window by window, 3-5 through the sort; forced, a gain of 0, a gain of 99.9% */
        const int sort = variant >= 3, gain0 = variant % 3 == 1, refuse = variant % 3 == 2;
        const int counted = gain0 || refuse;
        char label[200], err[256];
        snprintf(label, sizeof label, "%s, first-col on the GPU%s%s", name, sort ? ", sort" : "",
                 gain0 ? ", gain 0" : refuse ? ", refused" : "");
        in.gpu_order_min_gain = refuse ? 0.999 : gain0 ? 0.0 : -1.0;
        tc_convert_extra x = {.sm_count = 132, .keep_scratch = 1 << 20, .method = sort};
        tc_dev_metcf g;
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err), TCSPARSE_STATUS_SUCCESS,
                     "%s: %s", label, err);
        cr_assert_eq(x.used_local, !sort, "%s: path", label);
        cr_assert_eq(x.blocks_unordered, counted ? plain->blocks : 0, "%s: blocks unordered",
                     label);
        const int taken = refuse ? 0 : gain0 ? ref.blocks <= plain->blocks : 1;
        cr_assert_eq(x.gpu_ordered, taken, "%s: order taken (%lld blocks ordered, %lld not)",
                     label, (long long)ref.blocks, (long long)plain->blocks);
        if (!taken) {
            cr_assert_null(g.win_row, "%s: win_row", label);
            check_extra(plain, &x, label);
            compare_plan(&g, plain, NULL, nnz, label);
        } else {
            cr_assert_not_null(g.win_row, "%s: no win_row", label);
            const int64_t slots = (int64_t)g.windows * 16;
            int32_t *wr = from_device(g.win_row, 4 * (size_t)slots);
            for (int64_t i = 0; i < slots; i++)
                cr_assert_eq(wr[i], i < M ? order[i] : -1, "%s: win_row[%lld]", label,
                             (long long)i);
            free(wr);
            check_extra(&ref, &x, label);
            compare_plan(&g, &ref, vmap, nnz, label);
        }
        tc_dev_metcf_free(&g);
    }
    tc_metcf_free(&ref);
    free(order); free(ro); free(vmap); free(col);
}

/* Converts on both sides and compares every array. */
static void compare(const tc_csr *m, tcsparseFormat_t fmt, int is64, int base, const char *name)
{
    void *off, *idx;
    int64_t noff = build_arrays(m, fmt, is64, base, &off, &idx);
    const size_t is = is64 ? 8 : 4;
    tc_sparse_view v = {.format = fmt, .rows = m->rows, .cols = m->cols, .nnz = m->nnz,
                        .offsets = off, .indices = idx,
                        .offsets_type = is64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I,
                        .indices_type = is64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I,
                        .base = (tcsparseIndexBase_t)base};
    tc_metcf ref;
    cr_assert_eq(tc_metcf_build_cpu(&v, &ref), TCSPARSE_STATUS_SUCCESS, "%s: CPU: %s", name,
                 tcsparseGetLastErrorMessage());
    void *d_off = to_device(off, is * (size_t)noff), *d_idx = to_device(idx, is * (size_t)m->nnz);
    tc_convert_input in = {.format = fmt, .rows = m->rows, .cols = m->cols, .nnz = m->nnz,
                           .offsets = d_off, .indices = d_idx, .offsets_64 = is64,
                           .indices_64 = is64, .base = base};
    /* CSR converts window by window (few columns) or through the sort: both, every time */
    for (int method = 0; method <= (fmt == TCSPARSE_FORMAT_CSR); method++) {
        tc_dev_metcf g;
        char err[256];
        /* the schedule under each configuration in turn: the default chunk length for 132 SMs
         * (16 on these sizes), for 1 and 2 SMs (longer chunks, up to the cap of 128), and
         * forced lengths of 3 and 1 */
        static const struct { int sm; int32_t force; } cfg[] = {{132, 0}, {132, 3}, {1, 0}, {2, 0}, {132, 1}};
        static unsigned next;
        const unsigned c = next++ % (sizeof cfg / sizeof cfg[0]);
        tc_convert_extra x = {.sm_count = cfg[c].sm, .force_chunk = cfg[c].force, .keep_scratch = 1 << 20,
                              .method = method};
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err), TCSPARSE_STATUS_SUCCESS,
                     "%s (method %d): GPU: %s", name, method, err);
        /* the path compared is the one meant (the window-local one on the H100 where it
         * applies) */
        if (method == 1 || fmt != TCSPARSE_FORMAT_CSR || m->cols > (1 << 18) || m->nnz == 0)
            cr_assert(!x.used_local, "%s (method %d): the window-local path ran", name, method);
        else
            cr_assert(x.used_local, "%s: the sort ran, not the window-local path", name);
        check_extra(&ref, &x, name);
        cr_assert_null(g.win_row, "%s: win_row", name);
        compare_plan(&g, &ref, NULL, m->nnz, name);
        tc_dev_metcf_free(&g);
    }
    if (fmt == TCSPARSE_FORMAT_CSR && m->nnz > 0 && m->rows > 1)
        compare_gpu_ordered(m, &ref, d_off, d_idx, is64, base, name);
    tc_metcf_free(&ref);
    cudaFree(d_off); cudaFree(d_idx);
    free(off); free(idx);
}

static void all_variants(const tc_csr *m, const char *name)
{
    const tcsparseFormat_t f[] = {TCSPARSE_FORMAT_CSR, TCSPARSE_FORMAT_CSC, TCSPARSE_FORMAT_COO};
    for (int i = 0; i < 3; i++)
        compare(m, f[i], i == 1, i == 2, name);
    compare(m, TCSPARSE_FORMAT_CSR, 1, 1, name);
}

Test(gpu_convert, generated)
{
    TC_REQUIRE_GPU();
    /* 70000 x 70000 and 3000 x 1e8 need more than 32 bits of sort key (window and column
     * bits), 65536 x 65536 exactly 32, the others fewer (the conversion's 32-bit sort); the
     * last has 65536 windows (the window offsets by CUB's scan, not one thread block's) */
    static const char *specs[] = {"rmat:12:8", "uniform:1001:333:7", "banded:2049:9",
                                  "blocks:4000:16:200", "rmat:4:2", "uniform:17:5:3",
                                  "uniform:65536:65536:2", "uniform:70000:70000:2",
                                  "uniform:3000:100000000:3", "uniform:1048576:1000:1"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        tc_csr m;
        char err[256];
        cr_assert_eq(tc_gen_from_spec(specs[i], &m, err, sizeof err), 0, "%s", err);
        all_variants(&m, specs[i]);
        tc_csr_free(&m);
    }
}

/* Columns in reverse order within every row (CSR does not require them sorted). */
static void reverse_rows(tc_csr *m)
{
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t i = m->row_off[r], j = m->row_off[r + 1] - 1; i < j; i++, j--) {
            int32_t c = m->col[i];
            double v = m->val[i];
            m->col[i] = m->col[j];
            m->val[i] = m->val[j];
            m->col[j] = c;
            m->val[j] = v;
        }
}

/* The window-local path's limits: 2^18 columns (its largest bitmap) and one past it (the
 * sort), 160000 columns (static and dynamic shared memory above the default 48 KiB), windows
 * of 32000 nonzeros over the whole column range (occupancy in global memory), windows of
 * exactly 256 nonzeros (the longest short ones), dense windows, columns unsorted within
 * rows, 8750 windows, and the window offsets' two scans: 65535 windows (the last taken by one
 * thread block, 16 tiles of it) and 65536 (CUB's).  Long windows' output staged in shared
 * memory: dense windows of 100 columns, 640-nonzero windows of 160000 columns, and R-MAT
 * windows of 1024 nonzeros on average, some staged and the longest not.  Up to 4096 windows
 * one kernel takes both kinds; 4375 windows of 320 nonzeros (staged) and R-MAT's 8192 windows
 * of every length take the long and the short kernels.  The schedule: 4095 windows (one thread
 * block, schedule_small) and 4096 (three kernels).  The long kernel is persistent over the
 * long windows a pass lists: 8750 windows of 48 nonzeros list none, 4375 of 320 list all. */
Test(gpu_convert, window_local_limits)
{
    TC_REQUIRE_GPU();
    static const char *specs[] = {"uniform:3000:262144:40", "uniform:3000:262145:40",
                                  "uniform:50:262144:2000", "blocks:4000:16:200",
                                  "rmat:12:8", "uniform:333:100:60", "uniform:1600:5000:16",
                                  "uniform:2000:160000:40", "banded:4000:8",
                                  "uniform:140000:1000:3", "uniform:1048560:1000:1",
                                  "uniform:1048576:1000:1", "rmat:12:64",
                                  "uniform:70000:1000:20", "rmat:17:24",
                                  "uniform:65520:3000:5", "uniform:65536:3000:5",
                                  /* 4096 windows of 320 nonzeros: the most windows one
                                   * block a window takes (order, scan in the counting pass) */
                                  "uniform:65535:1000:20"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        tc_csr m;
        char err[256], name[64];
        cr_assert_eq(tc_gen_from_spec(specs[i], &m, err, sizeof err), 0, "%s", err);
        compare(&m, TCSPARSE_FORMAT_CSR, 0, 0, specs[i]);
        reverse_rows(&m);
        snprintf(name, sizeof name, "%s reversed rows", specs[i]);
        compare(&m, TCSPARSE_FORMAT_CSR, 0, 1, name);
        compare(&m, TCSPARSE_FORMAT_CSR, 1, 0, name);
        tc_csr_free(&m);
    }
}

Test(gpu_convert, empty_and_tiny)
{
    TC_REQUIRE_GPU();
    int64_t off0[6] = {0, 0, 0, 0, 0, 0};
    tc_csr e = {.rows = 5, .cols = 3, .nnz = 0, .row_off = off0};
    all_variants(&e, "5x3 empty");
    tc_csr z = {.rows = 0, .cols = 3, .nnz = 0, .row_off = off0}; /* no window at all */
    all_variants(&z, "0x3");
    int64_t off1[2] = {0, 3};
    int32_t col1[3] = {0, 4, 9};
    double v1[3] = {1, 2, 3};
    tc_csr one = {.rows = 1, .cols = 10, .nnz = 3, .row_off = off1, .col = col1, .val = v1};
    all_variants(&one, "1 row");
}

/* A CSR structure with 32-bit indices (rows + 1 offsets, nnz indices) that both paths
 * (method 0: window by window where it applies, 1: the sort) must refuse with a message
 * containing `needle` (any message when NULL), also with the rows ordered first-col on the
 * GPU (2: window by window, the order forced; 3: the same, both orders counted and one chosen;
 * 4 and 5: the same through the sort). */
static void refuse_csr(const int32_t *off, const int32_t *idx, int64_t rows, int64_t cols,
                       int64_t nnz, const char *needle, const char *what)
{
    for (int method = 0; method < 6; method++) {
        void *d_off = to_device(off, sizeof *off * (size_t)(rows + 1));
        void *d_col = to_device(idx, sizeof *idx * (size_t)nnz);
        tc_convert_input in = {.format = TCSPARSE_FORMAT_CSR, .rows = rows, .cols = cols,
                               .nnz = nnz, .offsets = d_off, .indices = d_col,
                               .gpu_order = method >= 2 ? TC_GPU_ORDER_FIRST_COL : 0,
                               .gpu_order_min_gain = method == 3 || method == 5 ? 0.0 : -1.0};
        tc_dev_metcf g;
        tc_convert_extra x = {.sm_count = 132, .method = method == 1 || method >= 4};
        char err[256] = "";
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err),
                     TCSPARSE_STATUS_INVALID_VALUE, "%s accepted (method %d)", what, method);
        cr_assert(err[0] != '\0' && (needle == NULL || strstr(err, needle) != NULL),
                  "%s (method %d): %s", what, method, err);
        cudaFree(d_off);
        cudaFree(d_col);
    }
}

Test(gpu_convert, rejects_bad_structure)
{
    TC_REQUIRE_GPU();
    int32_t off[4] = {0, 2, 3, 4}, bad_col[4] = {0, 5, 1, 1}, dup_col[4] = {1, 1, 0, 2};
    int32_t bad_off[4] = {0, 3, 2, 4};
    refuse_csr(off, bad_col, 3, 3, 4, NULL, "column out of range");
    refuse_csr(off, dup_col, 3, 3, 4, NULL, "duplicate");
    refuse_csr(bad_off, dup_col, 3, 3, 4, NULL, "offsets");
    /* Offsets that overlap, [0, nnz, 0, nnz, ...]: every other row would cover all of the
     * nonzeros, M / 2 x nnz reads for a path that read them before refusing (the rows' keys
     * of the GPU ordering must not). */
    {
        const int64_t n = 1 << 18;
        int32_t *alt = malloc(sizeof *alt * (size_t)(n + 1)), *cols = malloc(sizeof *cols * (size_t)n);
        for (int64_t r = 0; r <= n; r++)
            alt[r] = r % 2 ? (int32_t)n : 0;
        alt[n] = (int32_t)n;
        for (int64_t e = 0; e < n; e++)
            cols[e] = (int32_t)(e % 1000);
        refuse_csr(alt, cols, n, 1000, n, "offsets", "overlapping offsets");
        free(alt);
        free(cols);
    }
    /* a window longer than a thread block (the window-local path's bitmap): a duplicate, a
     * column past the end */
    {
        enum { L = 300 };
        int32_t loff[4] = {0, L, L, L}, lcol[L];
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < L; i++)
                lcol[i] = i;
            lcol[150] = k == 0 ? 149 : L + 5;
            refuse_csr(loff, lcol, 3, L, L, k == 0 ? "duplicate" : "outside",
                       k == 0 ? "long window: duplicate" : "long window: column past the end");
        }
    }
    /* many windows whose offsets go down and up again (every other window spans all the
     * nonzeros): refused, no write outside the plan (memcheck).  16000 rows: the offsets
     * checked by one thread block with the summary cleared; 80000: by the grid-wide check */
    for (int W = 1000; W <= 5000; W += 4000) {
        enum { NZ = 4096 };
        int32_t *o = malloc(sizeof *o * (size_t)(16 * W + 1)), *c = malloc(sizeof *c * NZ);
        for (int r = 0; r <= 16 * W; r++)
            o[r] = (r / 16) % 2 == 0 ? 0 : NZ; /* window w's last row: 0 -> NZ or NZ -> 0 */
        o[16 * W] = NZ;
        for (int i = 0; i < NZ; i++)
            c[i] = i;
        refuse_csr(o, c, 16 * W, NZ, NZ, "offsets", W == 1000 ? "overlapping windows"
                                                              : "overlapping windows, 80000 rows");
        free(o);
        free(c);
    }
    /* more windows than one kernel takes (4100, each 300 nonzeros long, so staged up to 512):
     * a duplicate in a staged window, and in a window of 600 (not staged) */
    for (int k = 0; k < 2; k++) {
        enum { W = 4100, L = 300, C = 1000 };
        const int64_t rows = 16 * (int64_t)W, nnz = (int64_t)W * L + (k == 1 ? L : 0);
        int32_t *o = malloc(sizeof *o * (size_t)(rows + 1)), *c = malloc(sizeof *c * (size_t)nnz);
        int64_t e = 0;
        for (int64_t r = 0; r < rows; r++) {
            o[r] = (int32_t)e;
            if (r % 16 == 0) { /* a window's first row holds its nonzeros */
                const int len = k == 1 && r / 16 == 7 ? 2 * L : L;
                for (int i = 0; i < len; i++)
                    c[e++] = i;
                if (r / 16 == (k == 0 ? 3 : 7))
                    c[e - 2] = c[e - 3]; /* the same column twice in one row */
            }
        }
        o[rows] = (int32_t)e;
        refuse_csr(o, c, rows, C, e, "duplicate",
                   k == 0 ? "4100 windows: duplicate, staged" : "4100 windows: duplicate, not staged");
        free(o);
        free(c);
    }
    /* a window of 257 nonzeros (the shortest long one) whose columns are all out of range */
    {
        enum { L = 257 };
        int32_t loff[2] = {0, L}, lcol[L];
        for (int i = 0; i < L; i++)
            lcol[i] = 1000 + i;
        refuse_csr(loff, lcol, 1, 300, L, "outside", "columns past the end");
    }
    /* COO and CSC, 64-bit indices: a negative row, a column past the end, bad column offsets */
    {
        int64_t rows_neg[4] = {0, -1, 2, 2}, cols_ok[4] = {0, 1, 1, 2}, rows_ok[4] = {0, 1, 2, 2};
        int64_t cols_big[4] = {0, 1, 1, 7}, coff_bad[4] = {0, 3, 1, 4}, ridx[4] = {0, 1, 2, 0};
        struct { tcsparseFormat_t f; const int64_t *o, *i; size_t no; const char *what; } c64[] = {
            {TCSPARSE_FORMAT_COO, rows_neg, cols_ok, 4, "COO negative row"},
            {TCSPARSE_FORMAT_COO, rows_ok, cols_big, 4, "COO column past the end"},
            {TCSPARSE_FORMAT_CSC, coff_bad, ridx, 4, "CSC decreasing offsets"}};
        for (int i = 0; i < 3; i++) {
            void *d_off = to_device(c64[i].o, 8 * c64[i].no), *d_idx = to_device(c64[i].i, 8 * 4);
            tc_convert_input in = {.format = c64[i].f, .rows = 3, .cols = 3, .nnz = 4,
                                   .offsets = d_off, .indices = d_idx, .offsets_64 = 1,
                                   .indices_64 = 1};
            tc_dev_metcf g;
            tc_convert_extra x = {.sm_count = 132};
            char err[256] = "";
            cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err),
                         TCSPARSE_STATUS_INVALID_VALUE, "%s accepted", c64[i].what);
            cudaFree(d_off); cudaFree(d_idx);
        }
    }
    /* no nonzeros, but offsets that claim some (or decrease): refused, as the CPU
     * reference refuses them; all-zero offsets and NULL arrays are accepted */
    {
        int32_t claim[4] = {0, 0, 1, 1}, down[4] = {0, 1, 0, 0}, fine[4] = {0, 0, 0, 0};
        const int32_t *offs[3] = {claim, down, fine};
        for (int i = 0; i < 3; i++) {
            void *d_off = to_device(offs[i], sizeof claim);
            tc_convert_input in = {.format = i == 1 ? TCSPARSE_FORMAT_CSC : TCSPARSE_FORMAT_CSR,
                                   .rows = 3, .cols = 3, .nnz = 0, .offsets = d_off};
            tc_dev_metcf g;
            tc_convert_extra x = {.sm_count = 132};
            char err[256] = "";
            tcsparseStatus_t st = tc_convert_gpu(&in, &g, &x, 0, err, sizeof err);
            if (i < 2) {
                cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "nnz = 0 with offsets %d accepted", i);
                cr_assert(strstr(err, "offsets") != NULL, "%s", err);
            } else {
                cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s", err);
                tc_dev_metcf_free(&g);
            }
            cudaFree(d_off);
        }
        tc_convert_input in = {.format = TCSPARSE_FORMAT_CSR, .rows = 3, .cols = 3, .nnz = 0};
        tc_dev_metcf g;
        tc_convert_extra x = {.sm_count = 132};
        char err[256] = "";
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err), TCSPARSE_STATUS_SUCCESS, "%s", err);
        tc_dev_metcf_free(&g);
    }
    /* no row (or no column) to hold the nonzeros: refused before anything runs */
    {
        int32_t off0[1] = {0}, col0[2] = {0, 0};
        void *d_off = to_device(off0, sizeof off0), *d_col = to_device(col0, sizeof col0);
        tc_convert_input in = {.format = TCSPARSE_FORMAT_COO, .rows = 0, .cols = 3, .nnz = 2,
                               .offsets = d_col, .indices = d_col};
        tc_dev_metcf g;
        tc_convert_extra x = {.sm_count = 132};
        char err[256] = "";
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err), TCSPARSE_STATUS_INVALID_VALUE);
        in.rows = 3;
        in.cols = 0;
        cr_assert_eq(tc_convert_gpu(&in, &g, &x, 0, err, sizeof err), TCSPARSE_STATUS_INVALID_VALUE);
        cr_assert(err[0] != '\0');
        cudaFree(d_off); cudaFree(d_col);
    }
}

Test(gpu_convert, shared_matrices, .timeout = 900)
{
    TC_REQUIRE_GPU();
    const char *dir = getenv("TC_DATA_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    if (d == NULL)
        cr_skip_test("TC_DATA_DIR not set or unreadable: no real matrices");
    struct dirent *ent;
    int n = 0;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len < 7 || strcmp(ent->d_name + len - 7, ".mtx.gz") != 0)
            continue;
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        tc_csr m;
        cr_assert_eq(tc_csr_load(path, &m, err, sizeof err), 0, "%s", err);
        compare(&m, TCSPARSE_FORMAT_CSR, 0, 0, ent->d_name);
        compare(&m, TCSPARSE_FORMAT_COO, 1, 1, ent->d_name);
        tc_csr_free(&m);
        n++;
    }
    closedir(d);
    cr_assert(n > 0, "no .mtx.gz files in %s", dir);
}

/* The conversion's knobs, each in a process of its own (they are read once): the schedule on
 * the caller's stream (TCSPARSE_X_CONVERT_SIDE=0), long windows written without staging
 * (TCSPARSE_X_CONVERT_STAGE=0).  The arrays must not change.  A parameter is copied into the
 * test's process: an index, not a pointer. */
static const char *const knob_vars[] = {"TCSPARSE_X_CONVERT_SIDE", "TCSPARSE_X_CONVERT_STAGE"};

typedef struct {
    int var;
} convert_knob;

ParameterizedTestParameters(gpu_convert, knobs)
{
    static convert_knob knobs[] = {{0}, {1}};
    return cr_make_param_array(convert_knob, knobs, sizeof knobs / sizeof knobs[0]);
}

ParameterizedTest(convert_knob *kp, gpu_convert, knobs)
{
    TC_REQUIRE_GPU();
    const char *var = knob_vars[kp->var];
    setenv(var, "0", 1);
    tc_config_reload();
    static const char *specs[] = {"rmat:12:64", "uniform:70000:1000:20", "uniform:3000:262144:40",
                                  "uniform:1001:333:7"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        tc_csr m;
        char err[256], name[96];
        cr_assert_eq(tc_gen_from_spec(specs[i], &m, err, sizeof err), 0, "%s", err);
        snprintf(name, sizeof name, "%s=0: %s", var, specs[i]);
        compare(&m, TCSPARSE_FORMAT_CSR, 0, 0, name);
        compare(&m, TCSPARSE_FORMAT_COO, 1, 1, name);
        tc_csr_free(&m);
    }
}
