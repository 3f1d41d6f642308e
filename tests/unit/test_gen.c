/* Generators: well-formed CSR (sorted, duplicate-free, in range, values in [-1,1) away from
 * zero), determinism per seed, exact sizes, and the spec parser; the benchmarks' roofline
 * counts (roofline.h). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gen.h"
#include "roofline.h"

static void check_csr(const tc_csr *m, const char *what)
{
    cr_assert(m->row_off && m->col && m->val, "%s: arrays missing", what);
    cr_assert_eq(m->row_off[0], 0, "%s", what);
    cr_assert_eq(m->row_off[m->rows], m->nnz, "%s", what);
    for (int64_t i = 0; i < m->rows; i++) {
        cr_assert_leq(m->row_off[i], m->row_off[i + 1], "%s: row %lld", what, (long long)i);
        for (int64_t k = m->row_off[i]; k < m->row_off[i + 1]; k++) {
            cr_assert(m->col[k] >= 0 && m->col[k] < m->cols, "%s: column %d out of range", what,
                      m->col[k]);
            cr_assert(k == m->row_off[i] || m->col[k] > m->col[k - 1],
                      "%s: row %lld not strictly increasing", what, (long long)i);
            double v = m->val[k];
            cr_assert(v >= -1.0 && v < 1.0 && (v >= 1e-3 || v <= -1e-3), "%s: value %g", what,
                      v);
        }
    }
}

static int same_csr(const tc_csr *a, const tc_csr *b)
{
    return a->rows == b->rows && a->cols == b->cols && a->nnz == b->nnz &&
           memcmp(a->row_off, b->row_off, (size_t)(a->rows + 1) * sizeof *a->row_off) == 0 &&
           memcmp(a->col, b->col, (size_t)a->nnz * sizeof *a->col) == 0 &&
           memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val) == 0;
}

static void load(const char *spec, tc_csr *m)
{
    char err[512] = "";
    cr_assert_eq(tc_csr_load(spec, m, err, sizeof err), 0, "%s: %s", spec, err);
    check_csr(m, spec);
}

Test(gen, rmat_shape_and_determinism)
{
    tc_csr a, b, c;
    cr_assert_eq(tc_gen_rmat(12, 8, 42, &a), 0);
    check_csr(&a, "rmat 12 8");
    cr_assert(a.rows == 4096 && a.cols == 4096);
    /* 32768 edges before dedupe; R-MAT's skew makes some duplicates, but not most. */
    cr_assert(a.nnz <= 32768 && a.nnz > 32768 * 8 / 10, "nnz %lld", (long long)a.nnz);
    cr_assert_eq(tc_gen_rmat(12, 8, 42, &b), 0);
    cr_assert(same_csr(&a, &b), "same seed, different matrix");
    cr_assert_eq(tc_gen_rmat(12, 8, 43, &c), 0);
    cr_assert(!same_csr(&a, &c), "different seeds, same matrix");
    /* skewed degrees: the largest row is far above the mean of 8 */
    int64_t maxlen = 0;
    for (int64_t i = 0; i < a.rows; i++)
        if (a.row_off[i + 1] - a.row_off[i] > maxlen)
            maxlen = a.row_off[i + 1] - a.row_off[i];
    cr_expect_gt(maxlen, 100);
    tc_csr_free(&a), tc_csr_free(&b), tc_csr_free(&c);
    cr_assert(a.row_off == NULL && a.nnz == 0);
    cr_assert_eq(tc_gen_rmat(0, 3, 1, &a), 0); /* 1 x 1 */
    check_csr(&a, "rmat 0 3");
    cr_assert(a.rows == 1 && a.nnz == 1);
    tc_csr_free(&a);
    cr_assert_eq(tc_gen_rmat(31, 1, 1, &a), -1);
    cr_assert_eq(tc_gen_rmat(-1, 1, 1, &a), -1);
}

Test(gen, chunglu_power_law_symmetric)
{
    tc_csr a, b, c;
    cr_assert_eq(tc_gen_chunglu(12, 16, 42, &a), 0);
    check_csr(&a, "chunglu 12 16");
    cr_assert(a.rows == 4096 && a.cols == 4096);
    /* at least n * degree entries, and not far more */
    cr_assert(a.nnz >= 4096 * 16 && a.nnz < 4096 * 16 * 3 / 2, "nnz %lld", (long long)a.nnz);
    /* undirected without self loops: (i, j) stored iff (j, i) is, never (i, i) */
    for (int64_t i = 0; i < a.rows; i++)
        for (int64_t k = a.row_off[i]; k < a.row_off[i + 1]; k++) {
            const int32_t j = a.col[k];
            cr_assert_neq(j, i, "self loop at row %lld", (long long)i);
            int found = 0;
            for (int64_t q = a.row_off[j]; q < a.row_off[j + 1] && !found; q++)
                found = a.col[q] == i;
            cr_assert(found, "(%lld, %d) without its mirror", (long long)i, j);
        }
    /* power law: the largest degree far above the mean of about 16, most rows below it */
    int64_t maxlen = 0, below = 0;
    for (int64_t i = 0; i < a.rows; i++) {
        const int64_t len = a.row_off[i + 1] - a.row_off[i];
        maxlen = len > maxlen ? len : maxlen;
        below += len < 16;
    }
    cr_expect_gt(maxlen, 200, "max degree %lld", (long long)maxlen);
    cr_expect_gt(below, a.rows / 2, "%lld rows below the mean", (long long)below);
    cr_assert_eq(tc_gen_chunglu(12, 16, 42, &b), 0);
    cr_assert(same_csr(&a, &b), "same seed, different matrix");
    cr_assert_eq(tc_gen_chunglu(12, 16, 43, &c), 0);
    cr_assert(!same_csr(&a, &c), "different seeds, same matrix");
    tc_csr_free(&a), tc_csr_free(&b), tc_csr_free(&c);
    cr_assert_eq(tc_gen_chunglu(0, 4, 1, &a), -1);
    cr_assert_eq(tc_gen_chunglu(29, 4, 1, &a), -1);
    cr_assert_eq(tc_gen_chunglu(8, 0, 1, &a), -1);
    cr_assert_eq(tc_gen_chunglu(4, 5, 1, &a), -1); /* more than a quarter of 16 nodes */
    /* small graphs keep to their size: every scale from 2 up at a quarter of its nodes */
    for (int sc = 2; sc <= 10; sc++) {
        const int deg = (1 << sc) / 4;
        cr_assert_eq(tc_gen_chunglu(sc, deg, 7, &a), 0, "scale %d degree %d", sc, deg);
        check_csr(&a, "small chunglu");
        const int64_t target = ((int64_t)1 << sc) * deg;
        cr_assert(a.nnz >= target && a.nnz <= target + target / 2 + 64,
                  "scale %d degree %d: %lld entries for %lld", sc, deg, (long long)a.nnz,
                  (long long)target);
        tc_csr_free(&a);
    }
}

Test(gen, uniform_exact_row_counts)
{
    tc_csr m, n;
    cr_assert_eq(tc_gen_uniform(101, 37, 5, 9, &m), 0);
    check_csr(&m, "uniform 101 37 5");
    cr_assert(m.rows == 101 && m.cols == 37 && m.nnz == 505);
    for (int64_t i = 0; i < m.rows; i++)
        cr_assert_eq(m.row_off[i], 5 * i);
    cr_assert_eq(tc_gen_uniform(101, 37, 5, 9, &n), 0);
    cr_assert(same_csr(&m, &n));
    tc_csr_free(&m), tc_csr_free(&n);
    /* dense request (selection sampling path) and more per row than columns */
    cr_assert_eq(tc_gen_uniform(13, 40, 31, 2, &m), 0);
    check_csr(&m, "uniform 13 40 31");
    cr_assert_eq(m.nnz, 13 * 31);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_uniform(7, 3, 5, 2, &m), 0);
    check_csr(&m, "uniform 7 3 5");
    cr_assert_eq(m.nnz, 21);
    tc_csr_free(&m);
    /* long rows exercise the radix sort */
    cr_assert_eq(tc_gen_uniform(3, 1000003, 5000, 4, &m), 0);
    check_csr(&m, "uniform 3 1000003 5000");
    cr_assert_eq(m.nnz, 15000);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_uniform(0, 10, 3, 1, &m), 0);
    check_csr(&m, "uniform 0 rows");
    cr_assert_eq(m.nnz, 0);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_uniform(5, 0, 3, 1, &m), 0);
    check_csr(&m, "uniform 0 cols");
    cr_assert_eq(m.nnz, 0);
    tc_csr_free(&m);
}

Test(gen, banded_exact)
{
    int64_t cases[][2] = {{100, 3}, {17, 0}, {1, 0}, {9, 8}, {9, 50}, {1000, 16}, {0, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t n = cases[c][0], hb = cases[c][1];
        tc_csr m;
        cr_assert_eq(tc_gen_banded(n, hb, 5, &m), 0);
        check_csr(&m, "banded");
        int64_t h = hb < n ? hb : (n ? n - 1 : 0);
        cr_assert_eq(m.nnz, n * (2 * h + 1) - h * (h + 1), "n %lld hb %lld", (long long)n,
                     (long long)hb);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = m.row_off[i]; k < m.row_off[i + 1]; k++)
                cr_assert_leq(llabs(m.col[k] - i), h);
        tc_csr_free(&m);
    }
}

Test(gen, blocks_dense_and_aligned)
{
    tc_csr m, n;
    cr_assert_eq(tc_gen_blocks(256, 16, 20, 3, &m), 0);
    check_csr(&m, "blocks 256 16 20");
    cr_assert_eq(m.nnz, 20 * 16 * 16);
    /* every row of a block row has the same columns, in whole aligned blocks */
    for (int64_t i = 0; i < m.rows; i++) {
        int64_t len = m.row_off[i + 1] - m.row_off[i], b0 = m.row_off[i - i % 16];
        cr_assert_eq(len % 16, 0);
        cr_assert_eq(len, m.row_off[i - i % 16 + 1] - b0);
        for (int64_t k = 0; k < len; k++) {
            cr_assert_eq(m.col[m.row_off[i] + k], m.col[b0 + k]);
            if (k % 16 == 0)
                cr_assert_eq(m.col[b0 + k] % 16, 0);
        }
    }
    cr_assert_eq(tc_gen_blocks(256, 16, 20, 3, &n), 0);
    cr_assert(same_csr(&m, &n));
    tc_csr_free(&m), tc_csr_free(&n);
    /* n not a multiple of bs; every cell taken: the whole matrix */
    cr_assert_eq(tc_gen_blocks(50, 16, 16, 3, &m), 0);
    check_csr(&m, "blocks 50 16 16");
    cr_assert_eq(m.nnz, 2500);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_blocks(50, 16, 17, 3, &m), -1);
    cr_assert_eq(tc_gen_blocks(50, 0, 1, 3, &m), -1);
}

Test(gen, block_diag_exact)
{
    tc_csr a, d;
    cr_assert_eq(tc_gen_uniform(9, 7, 3, 11, &a), 0);
    cr_assert_eq(tc_gen_block_diag(&a, 4, &d), 0);
    check_csr(&d, "block_diag");
    cr_assert(d.rows == 36 && d.cols == 28 && d.nnz == 4 * a.nnz);
    for (int c = 0; c < 4; c++)
        for (int64_t i = 0; i < a.rows; i++) {
            int64_t r = c * a.rows + i, len = a.row_off[i + 1] - a.row_off[i];
            cr_assert_eq(d.row_off[r + 1] - d.row_off[r], len);
            for (int64_t k = 0; k < len; k++) {
                cr_assert_eq(d.col[d.row_off[r] + k], a.col[a.row_off[i] + k] + c * a.cols);
                cr_assert_eq(d.val[d.row_off[r] + k], a.val[a.row_off[i] + k]);
            }
        }
    tc_csr_free(&d);
    cr_assert_eq(tc_gen_block_diag(&a, 0, &d), 0);
    cr_assert(d.rows == 0 && d.nnz == 0 && d.row_off[0] == 0);
    tc_csr_free(&d);
    cr_assert_eq(tc_gen_block_diag(&a, 1 << 30, &d), -1); /* columns past int32 */
    tc_csr_free(&a);
}

Test(gen, specs_good)
{
    tc_csr m, n;
    load("rmat:8:4", &m);
    cr_assert(m.rows == 256 && m.nnz > 0 && m.nnz <= 1024);
    load("rmat:8:4:seed=1", &n); /* the default seed is 1 */
    cr_assert(same_csr(&m, &n));
    tc_csr_free(&n);
    load("rmat:8:4:seed=2", &n);
    cr_assert(!same_csr(&m, &n));
    tc_csr_free(&m), tc_csr_free(&n);
    load("chunglu:8:4", &m);
    cr_assert(m.rows == 256 && m.nnz >= 1024);
    tc_csr_free(&m);
    load("uniform:10:20:3:seed=7", &m);
    cr_assert(m.rows == 10 && m.cols == 20 && m.nnz == 30);
    tc_csr_free(&m);
    load("banded:50:2", &m);
    cr_assert_eq(m.nnz, 50 * 5 - 6);
    tc_csr_free(&m);
    load("blocks:64:16:3", &m);
    cr_assert_eq(m.nnz, 3 * 256);
    tc_csr_free(&m);
    load("diag:banded:10:1:3", &m);
    cr_assert(m.rows == 30 && m.cols == 30 && m.nnz == 3 * 28);
    tc_csr_free(&m);
    load("diag:uniform:5:7:2:seed=3:2", &m);
    cr_assert(m.rows == 10 && m.cols == 14 && m.nnz == 20);
    tc_csr_free(&m);
}

Test(gen, specs_bad)
{
    static const struct {
        const char *spec, *what;
    } bad[] = {
        {"", "no such file, and not a generator spec"},
        {"rmat", "not a generator spec"},
        {"nosuch.mtx", "nosuch.mtx: no such file"},
        {"foo:1:2", "not a generator spec"},
        {"rmat:", "expected rmat:SCALE:EDGE_FACTOR"},
        {"rmat:8", "expected rmat:SCALE:EDGE_FACTOR"},
        {"rmat:8:4:5", "expected rmat:SCALE:EDGE_FACTOR"},
        {"rmat:x:4", "SCALE 'x' is not an integer in 0..30"},
        {"rmat:31:4", "SCALE '31' is not an integer in 0..30"},
        {"rmat:8:0", "EDGE_FACTOR '0'"},
        {"rmat:8:-4", "EDGE_FACTOR '-4'"},
        {"rmat:8:4:seed=", "bad seed"},
        {"rmat:8:4:seed=x", "bad seed"},
        {"rmat:8:4:seed=99999999999999999999999", "bad seed"},
        {"chunglu:0:4", "SCALE '0' is not an integer in 1..28"},
        {"chunglu:8:0", "DEGREE '0'"},
        {"chunglu:8", "expected chunglu:SCALE:DEGREE"},
        {"chunglu:8:65", "DEGREE 65 is more than a quarter of the 256 nodes"},
        {"uniform:-1:2:3", "ROWS '-1'"},
        {"uniform:10:3000000000:3", "COLS '3000000000'"},
        {"banded:1e3:2", "N '1e3'"},
        {"banded:100:2:", "expected banded:N:HALF_BANDWIDTH"},
        {"banded:100::2", "expected banded:N:HALF_BANDWIDTH"},
        {"banded: 100:2", "N ' 100'"},
        {"blocks:64:16:17", "17 blocks do not fit"},
        {"blocks:10:0:1", "BLOCK_SIZE '0'"},
        {"diag:banded:10:1", "expected banded:N:HALF_BANDWIDTH"},
        {"diag:3", "expected diag:FILE_OR_SPEC:COPIES"},
        {"diag:banded:10:1:x", "expected diag:FILE_OR_SPEC:COPIES"},
        {"diag:nosuch.mtx:3", "nosuch.mtx: no such file"},
        {"diag:rmat:4:2:2147483647", "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tc_csr m;
        char err[512] = "";
        memset(&m, 0x5a, sizeof m);
        cr_expect_eq(tc_csr_load(bad[i].spec, &m, err, sizeof err), -1, "'%s' accepted",
                     bad[i].spec);
        cr_expect(strstr(err, bad[i].what) != NULL, "'%s': message '%s' lacks '%s'", bad[i].spec,
                  err, bad[i].what);
        cr_expect(m.row_off == NULL && m.col == NULL && m.nnz == 0, "'%s': output not zeroed",
                  bad[i].spec);
    }
    char err[64];
    tc_csr m;
    cr_expect_eq(tc_gen_from_spec(NULL, &m, err, sizeof err), -1);
    cr_expect_eq(tc_csr_load(NULL, &m, err, sizeof err), -1);
    cr_expect_eq(tc_csr_load("/", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "is a directory") != NULL, "%s", err);
}

static char tmp_mtx[] = "/tmp/test_gen_XXXXXX";

static void write_tmp(const char *text)
{
    int fd = mkstemp(tmp_mtx);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void remove_tmp(void) { unlink(tmp_mtx); }

Test(gen, load_matrix_market_file, .fini = remove_tmp)
{
    write_tmp("%%MatrixMarket matrix coordinate real general\n3 4 4\n3 2 0.5\n1 4 -0.25\n"
              "3 2 0.125\n1 1 0.75\n");
    tc_csr m;
    char err[512];
    cr_assert_eq(tc_csr_load(tmp_mtx, &m, err, sizeof err), 0, "%s", err);
    cr_assert(m.rows == 3 && m.cols == 4 && m.nnz == 3);
    int64_t eo[] = {0, 2, 2, 3};
    int32_t ec[] = {0, 3, 1};
    double ev[] = {0.75, -0.25, 0.625};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(m.row_off[i], eo[i]);
    for (int k = 0; k < 3; k++)
        cr_expect(m.col[k] == ec[k] && m.val[k] == ev[k]);
    tc_csr_free(&m);

    char spec[128];
    snprintf(spec, sizeof spec, "diag:%s:3", tmp_mtx);
    cr_assert_eq(tc_csr_load(spec, &m, err, sizeof err), 0, "%s", err);
    cr_assert(m.rows == 9 && m.cols == 12 && m.nnz == 9);
    cr_expect(m.col[8] == 9 && m.val[8] == 0.625);
    tc_csr_free(&m);
}

Test(gen, load_pattern_file_gets_random_values, .fini = remove_tmp)
{
    write_tmp("%%MatrixMarket matrix coordinate pattern symmetric\n4 4 4\n1 1\n2 1\n4 2\n4 3\n");
    tc_csr a, b;
    char err[512];
    cr_assert_eq(tc_csr_load(tmp_mtx, &a, err, sizeof err), 0, "%s", err);
    check_csr(&a, "pattern");
    cr_assert_eq(a.nnz, 7);
    int ones = 0;
    for (int64_t k = 0; k < a.nnz; k++)
        ones += a.val[k] == 1.0;
    cr_expect_lt(ones, 2, "pattern values are all ones");
    cr_assert_eq(tc_csr_load(tmp_mtx, &b, err, sizeof err), 0, "%s", err);
    cr_assert(same_csr(&a, &b));
    tc_csr_free(&a), tc_csr_free(&b);
}

Test(gen, load_reports_file_errors, .fini = remove_tmp)
{
    write_tmp("%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 0.5\n");
    tc_csr m;
    char err[512], prefix[128];
    cr_assert_eq(tc_csr_load(tmp_mtx, &m, err, sizeof err), -1);
    snprintf(prefix, sizeof prefix, "%s:3: file ends after 1 of 2", tmp_mtx);
    cr_expect(strstr(err, prefix) == err, "%s", err);
    cr_expect_eq(m.row_off, NULL);
}

/* tcsparse-bench's roofline (roofline.h) on a matrix counted by hand: 20 rows, so a full
 * 16-row window and a window of 4; rows 0 and 1 touch columns {0, 1} and {1, 2}, row 17
 * {2, 9}. */
Test(roofline, counts_bytes_and_bound_by_hand)
{
    int64_t off[21];
    int32_t col[6] = {0, 1, 1, 2, 2, 9};
    double val[6] = {1, 1, 1, 1, 1, 1};
    for (int r = 0; r <= 20; r++)
        off[r] = r < 1 ? 0 : r < 2 ? 2 : r < 18 ? 4 : 6;
    tc_csr m = {20, 10, 6, off, col, val};
    tc_roofline_counts k;
    cr_assert_eq(tc_roofline_count(&m, &k), 0);
    cr_expect_eq(k.window_cols, 5, "window 0 gathers 3 rows of B, window 1 gathers 2");
    cr_expect_eq(k.distinct_cols, 4);
    /* N = 8, FP32: A 6 x (4 + 4) + 21 x 4 = 132, C 20 x 8 x 4 = 640, a row of B 32 */
    tc_roofline_bytes b = tc_roofline_bytes_of(&k, 20, 6, 8, 4, 4, 0);
    cr_expect_float_eq(b.l2_bytes, 5 * 32 + 132 + 640, 1e-9);
    cr_expect_float_eq(b.dram_bytes, 4 * 32 + 132 + 640, 1e-9);
    tc_roofline_bytes br = tc_roofline_bytes_of(&k, 20, 6, 8, 4, 4, 1); /* beta != 0 */
    cr_expect_float_eq(br.l2_bytes - b.l2_bytes, 640, 1e-9);
    /* 1 GB/s for L2, 2 GB/s for DRAM: L2 bounds, 932 bytes in 9.32e-4 ms */
    cr_expect_float_eq(tc_roofline_ms(&b, 1.0, 2.0), 9.32e-4, 1e-12);
    cr_expect_float_eq(tc_roofline_ms(&b, 1.0, 0.1), 900 / 0.1e6, 1e-12); /* DRAM bounds */
    cr_expect_eq(tc_roofline_ms(&b, 0.0, 2.0), 0.0, "no rate, no bound");
    tc_csr empty = {0, 0, 0, off, col, val};
    cr_assert_eq(tc_roofline_count(&empty, &k), 0);
    cr_expect_eq(k.window_cols + k.distinct_cols, 0);
}
