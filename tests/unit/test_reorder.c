#define _POSIX_C_SOURCE 200809L /* setenv */
/* Row reordering on the CPU (src/plan/reorder*.c): every ordering is a permutation, deterministic
 * whatever the thread count, the block count agrees with the reference conversion, hand-made
 * matrices reach their known block counts, the choice keeps what it should, and the public
 * setting checks its arguments. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "metcf.h"
#include "reorder.h"

static tc_rcsr view(const tc_csr *m)
{
    tc_rcsr a = {m->rows, m->cols, m->nnz, m->row_off, m->col};
    return a;
}

static void gen(const char *spec, tc_csr *m)
{
    char err[256];
    cr_assert_eq(tc_gen_from_spec(spec, m, err, sizeof err), 0, "%s: %s", spec, err);
}

/* Rows given as lists of columns (-1 ends a row, -2 ends the matrix). */
static void from_lists(int64_t cols, const int *lists, tc_csr *m)
{
    int64_t rows = 0, nnz = 0;
    for (const int *p = lists; *p != -2; p++) {
        if (*p == -1)
            rows++;
        else
            nnz++;
    }
    m->rows = rows;
    m->cols = cols;
    m->nnz = nnz;
    m->row_off = calloc((size_t)rows + 1, sizeof *m->row_off);
    m->col = malloc(sizeof *m->col * (size_t)(nnz + 1));
    m->val = malloc(sizeof *m->val * (size_t)(nnz + 1));
    int64_t r = 0, e = 0;
    for (const int *p = lists; *p != -2; p++) {
        if (*p == -1) {
            m->row_off[++r] = e;
        } else {
            m->col[e] = *p;
            m->val[e++] = 1.0;
        }
    }
}

/* The matrix with rows in order (row i of the result = row order[i] of m). */
static void permute(const tc_csr *m, const int32_t *order, tc_csr *out)
{
    out->rows = m->rows;
    out->cols = m->cols;
    out->nnz = m->nnz;
    out->row_off = malloc(sizeof *out->row_off * (size_t)(m->rows + 1));
    out->col = malloc(sizeof *out->col * (size_t)(m->nnz + 1));
    out->val = malloc(sizeof *out->val * (size_t)(m->nnz + 1));
    out->row_off[0] = 0;
    int64_t e = 0;
    for (int64_t i = 0; i < m->rows; i++) {
        const int64_t r = order[i];
        for (int64_t k = m->row_off[r]; k < m->row_off[r + 1]; k++) {
            out->col[e] = m->col[k];
            out->val[e++] = m->val[k];
        }
        out->row_off[i + 1] = e;
    }
}

static int64_t reference_blocks(const tc_csr *m)
{
    tc_sparse_view v = {TCSPARSE_FORMAT_CSR, m->rows, m->cols, m->nnz, m->row_off, m->col,
                        TCSPARSE_INDEX_64I, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    tc_metcf t;
    cr_assert_eq(tc_metcf_build_cpu(&v, &t), TCSPARSE_STATUS_SUCCESS, "%s",
                 tcsparseGetLastErrorMessage());
    int64_t b = t.blocks;
    tc_metcf_free(&t);
    return b;
}

static void assert_permutation(const int32_t *order, int64_t n, const char *what)
{
    char *seen = calloc((size_t)n + 1, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_assert(order[i] >= 0 && order[i] < n, "%s: order[%lld] = %d out of range", what,
                  (long long)i, order[i]);
        cr_assert(!seen[order[i]], "%s: row %d placed twice", what, order[i]);
        seen[order[i]] = 1;
    }
    free(seen);
}

/* Every ordering on m: a permutation, the same with 1 and 3 threads, and its block count
 * equal to the reference conversion's of the permuted matrix. */
static void check_all(const tc_csr *m, const char *name)
{
    tc_rcsr a = view(m);
    int32_t *o1 = malloc(sizeof *o1 * (size_t)(m->rows + 1));
    int32_t *o3 = malloc(sizeof *o3 * (size_t)(m->rows + 1));
    cr_assert_eq(tc_reorder_count_blocks(&a, NULL, 2), reference_blocks(m), "%s: identity", name);
    for (int k = 0; k < TC_ORD_COUNT; k++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s", name, tc_ordering_name(k));
        cr_assert_eq(tc_reorder_compute(&a, k, o1, 1), 0, "%s", what);
        cr_assert_eq(tc_reorder_compute(&a, k, o3, 3), 0, "%s", what);
        assert_permutation(o1, m->rows, what);
        cr_assert_eq(memcmp(o1, o3, sizeof *o1 * (size_t)m->rows), 0,
                     "%s: differs between 1 and 3 threads", what);
        tc_csr p;
        permute(m, o1, &p);
        const int64_t b1 = tc_reorder_count_blocks(&a, o1, 1);
        cr_assert_eq(b1, tc_reorder_count_blocks(&a, o1, 3), "%s: count depends on threads", what);
        cr_assert_eq(b1, reference_blocks(&p), "%s: block count", what);
        tc_csr_free(&p);
    }
    free(o1);
    free(o3);
}

Test(reorder, orderings_are_deterministic_permutations)
{
    static const char *specs[] = {"rmat:12:8", "uniform:1001:517:9", "banded:777:5",
                                  "blocks:2003:16:60"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        tc_csr m;
        gen(specs[i], &m);
        check_all(&m, specs[i]);
        tc_csr_free(&m);
    }
}

/* Empty rows, M not a multiple of 16, a dense row, one row, no nonzero. */
Test(reorder, edge_shapes)
{
    tc_csr m;
    /* 21 rows, every third empty, one dense row */
    int lists[21 * 40 + 2], *p = lists;
    for (int r = 0; r < 21; r++) {
        if (r == 5)
            for (int c = 0; c < 30; c++)
                *p++ = c;
        else if (r % 3 != 0)
            for (int c = r % 4; c < 30; c += 7)
                *p++ = c;
        *p++ = -1;
    }
    *p = -2;
    from_lists(30, lists, &m);
    check_all(&m, "21 rows");
    tc_csr_free(&m);
    static const int one[] = {3, 1, -1, -2};
    from_lists(5, one, &m);
    check_all(&m, "one row");
    tc_csr_free(&m);
    static const int none[] = {-1, -1, -1, -2};
    from_lists(5, none, &m);
    check_all(&m, "no nonzero");
    cr_assert_eq(tc_reorder_count_blocks(&(tc_rcsr){m.rows, m.cols, 0, m.row_off, m.col}, NULL, 2), 0);
    tc_csr_free(&m);
}

/* 32 rows alternating between columns 0-7 and 8-15: 4 blocks as given, 2 once the two kinds
 * are grouped, which every ordering does. */
Test(reorder, alternating_rows_are_grouped)
{
    int lists[32 * 9 + 1], *p = lists;
    for (int r = 0; r < 32; r++) {
        for (int c = 0; c < 8; c++)
            *p++ = (r % 2) * 8 + c;
        *p++ = -1;
    }
    *p = -2;
    tc_csr m;
    from_lists(16, lists, &m);
    tc_rcsr a = view(&m);
    int32_t order[32];
    cr_assert_eq(tc_reorder_count_blocks(&a, NULL, 1), 4);
    for (int k = 1; k < TC_ORD_COUNT; k++) {
        cr_assert_eq(tc_reorder_compute(&a, k, order, 2), 0);
        cr_assert_eq(tc_reorder_count_blocks(&a, order, 1), 2, "%s", tc_ordering_name(k));
    }
    /* the choice: AUTO keeps a 50% gain, reports every candidate */
    tc_reorder_opts o = {TC_ORD_ALL_CANDIDATES, 0.10, 2};
    tc_reorder_result res;
    cr_assert_eq(tc_reorder_choose(&a, &o, order, &res), 0);
    cr_assert_neq(res.kept, TC_ORD_IDENTITY);
    cr_assert_eq(res.blocks[TC_ORD_IDENTITY], 4);
    for (int k = 1; k < TC_ORD_COUNT; k++)
        cr_assert_eq(res.blocks[k], 2, "%s", tc_ordering_name(k));
    cr_assert_eq(res.kept, TC_ORD_CLUSTER, "ties go to the first candidate");
    cr_assert_eq(tc_reorder_count_blocks(&a, order, 1), 2);
    /* one candidate only */
    o.candidates = 1u << TC_ORD_DEGREE;
    cr_assert_eq(tc_reorder_choose(&a, &o, order, &res), 0);
    cr_assert_eq(res.kept, TC_ORD_DEGREE);
    cr_assert_eq(res.blocks[TC_ORD_CLUSTER], -1);
    tc_csr_free(&m);
}

/* Rows whose column sets are near-duplicates of each other (four families of 16, shuffled):
 * the clustering finds the families. */
Test(reorder, cluster_finds_families)
{
    const int F = 4, per = 16, width = 24;
    int *lists = malloc(sizeof *lists * (size_t)(F * per * (width + 1) + 1)), *p = lists;
    for (int i = 0; i < F * per; i++) {
        const int fam = (i * 7) % F; /* families interleaved */
        for (int c = 0; c < width; c++)
            if ((c + i) % 12 != 0) /* each row drops two of the family's columns */
                *p++ = fam * 1000 + c * 3;
        *p++ = -1;
    }
    *p = -2;
    tc_csr m;
    from_lists(F * 1000, lists, &m);
    free(lists);
    tc_rcsr a = view(&m);
    int32_t order[64];
    cr_assert_eq(tc_reorder_compute(&a, TC_ORD_CLUSTER, order, 2), 0);
    for (int w = 0; w < F; w++) {
        const int fam = (order[w * per] * 7) % F;
        for (int i = 1; i < per; i++)
            cr_assert_eq((order[w * per + i] * 7) % F, fam, "window %d mixes families", w);
    }
    cr_assert_eq(tc_reorder_count_blocks(&a, order, 1), F * 3); /* 24 columns: 3 blocks */
    tc_csr_free(&m);
}

/* A banded matrix is already in its best order: AUTO keeps the identity, ALWAYS does not. */
Test(reorder, choice_needs_a_gain)
{
    tc_csr m;
    gen("banded:4096:3", &m);
    tc_rcsr a = view(&m);
    int32_t *order = malloc(sizeof *order * 4096);
    tc_reorder_opts o = {TC_ORD_ALL_CANDIDATES, 0.10, 2};
    tc_reorder_result res;
    cr_assert_eq(tc_reorder_choose(&a, &o, order, &res), 0);
    cr_assert_eq(res.kept, TC_ORD_IDENTITY);
    for (int i = 0; i < 4096; i++)
        cr_assert_eq(order[i], i);
    o.min_gain = -1;
    cr_assert_eq(tc_reorder_choose(&a, &o, order, &res), 0);
    cr_assert_neq(res.kept, TC_ORD_IDENTITY);
    assert_permutation(order, 4096, "always");
    cr_assert_eq(tc_reorder_count_blocks(&a, order, 2), res.blocks[res.kept]);
    free(order);
    tc_csr_free(&m);
}

Test(reorder, names)
{
    for (int k = 0; k < TC_ORD_COUNT; k++) {
        cr_assert_eq(tc_ordering_parse(tc_ordering_name(k)), k);
        cr_assert_str_eq(tcsparseGetOrderingName((tcsparseOrdering_t)k), tc_ordering_name(k));
    }
    cr_assert_eq(tc_ordering_parse("bogus"), -1);
    cr_assert_null(tcsparseGetOrderingName((tcsparseOrdering_t)TC_ORD_COUNT));
    cr_assert_null(tcsparseGetOrderingName((tcsparseOrdering_t)-1));
}

/* The environment and the descriptor setting (no GPU needed: no plan is built). */
Test(reorder, mode_from_environment_and_descriptor)
{
    unsigned mask;
    unsetenv("TCSPARSE_REORDER");
    unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_LATE); /* the default */
    setenv("TCSPARSE_REORDER", "late", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_LATE);
    setenv("TCSPARSE_REORDER", "0", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_OFF);
    setenv("TCSPARSE_REORDER", "off", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_OFF);
    setenv("TCSPARSE_REORDER", "1", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_AUTO);
    cr_assert_eq(mask, TC_ORD_ALL_CANDIDATES);
    setenv("TCSPARSE_REORDER", "always", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_ALWAYS);
    setenv("TCSPARSE_REORDER", "minhash", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_ALWAYS);
    cr_assert_eq(mask, 1u << TC_ORD_MINHASH);
    setenv("TCSPARSE_REORDER", "1", 1);
    setenv("TCSPARSE_X_REORDER_ORDERINGS", "degree,cluster", 1);
    tc_config_reload();
    tc_reorder_mode(NULL, &mask);
    cr_assert_eq(mask, (1u << TC_ORD_DEGREE) | (1u << TC_ORD_CLUSTER));
    /* one ordering named by TCSPARSE_REORDER wins over a list that leaves it out */
    setenv("TCSPARSE_REORDER", "degree", 1);
    setenv("TCSPARSE_X_REORDER_ORDERINGS", "cluster", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(NULL, &mask), TCSPARSE_REORDER_ALWAYS);
    cr_assert_eq(mask, 1u << TC_ORD_DEGREE);
    setenv("TCSPARSE_REORDER", "1", 1);
    unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();

    static int32_t off[3] = {0, 1, 2}, col[2] = {0, 1};
    static float val[2] = {1, 2};
    tcsparseSpMatDescr_t d;
    cr_assert_eq(tcsparseCreateCsr(&d, 2, 2, 2, off, col, val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    tcsparseReorder_t r;
    cr_assert_eq(tcsparseSpMatGetReorder(d, &r), 0);
    cr_assert_eq(r, TCSPARSE_REORDER_DEFAULT);
    cr_assert_eq(tc_reorder_mode(d, NULL), TCSPARSE_REORDER_AUTO); /* from the environment */
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_OFF), 0);
    cr_assert_eq(tc_reorder_mode(d, NULL), TCSPARSE_REORDER_OFF); /* the descriptor wins */
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_LATE), 0);
    cr_assert_eq(tc_reorder_mode(d, NULL), TCSPARSE_REORDER_LATE); /* over the environment's */
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_OFF), 0);
    cr_assert_eq(tcsparseSpMatSetReorder(d, (tcsparseReorder_t)5), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert(strstr(tcsparseGetLastErrorMessage(), "not a tcsparseReorder_t") != NULL);
    cr_assert_eq(tcsparseSpMatSetReorder(d, (tcsparseReorder_t)-1), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatGetReorder(d, &r), 0);
    cr_assert_eq(r, TCSPARSE_REORDER_OFF);
    cr_assert_eq(tcsparseSpMatGetReorder(d, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatSetReorder(NULL, TCSPARSE_REORDER_AUTO), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_ALWAYS), 0);
    cr_assert_eq(tc_reorder_mode(d, NULL), TCSPARSE_REORDER_ALWAYS);

    /* the descriptor's list of orderings: 0 leaves it to TCSPARSE_X_REORDER_ORDERINGS */
    unsigned o = 99;
    cr_assert_eq(tcsparseSpMatGetReorderOrderings(d, &o), 0);
    cr_assert_eq(o, 0u);
    setenv("TCSPARSE_X_REORDER_ORDERINGS", "degree,cluster", 1);
    tc_config_reload();
    tc_reorder_mode(d, &mask);
    cr_assert_eq(mask, (1u << TC_ORD_DEGREE) | (1u << TC_ORD_CLUSTER));
    const unsigned fc = 1u << TCSPARSE_ORDERING_FIRST_COL;
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, fc), 0);
    tc_reorder_mode(d, &mask);
    cr_assert_eq(mask, fc, "the descriptor's list wins over the environment's");
    cr_assert_eq(tcsparseSpMatGetReorderOrderings(d, &o), 0);
    cr_assert_eq(o, fc);
    const unsigned bfs = 1u << TCSPARSE_ORDERING_BFS;
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, bfs), 0);
    tc_reorder_mode(d, &mask);
    cr_assert_eq(mask, bfs);
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, 1u | fc), 0); /* the caller's order: implied */
    cr_assert_eq(tcsparseSpMatGetReorderOrderings(d, &o), 0);
    cr_assert_eq(o, fc);
    const unsigned bad[] = {1u, 1u << TC_ORD_COUNT, fc | (1u << TC_ORD_COUNT), 0x80000000u};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, bad[i]), TCSPARSE_STATUS_INVALID_VALUE,
                     "mask 0x%x accepted", bad[i]);
        cr_assert(strstr(tcsparseGetLastErrorMessage(), "names no ordering") != NULL);
        cr_assert_eq(tcsparseSpMatGetReorderOrderings(d, &o), 0);
        cr_assert_eq(o, fc, "a refused mask changed the list");
    }
    cr_assert_eq(tcsparseSpMatGetReorderOrderings(d, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(NULL, fc), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatGetReorderOrderings(NULL, &o), TCSPARSE_STATUS_INVALID_VALUE);
    /* an ordering named by TCSPARSE_REORDER forces itself on a descriptor left at DEFAULT */
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_DEFAULT), 0);
    setenv("TCSPARSE_REORDER", "minhash", 1);
    tc_config_reload();
    cr_assert_eq(tc_reorder_mode(d, &mask), TCSPARSE_REORDER_ALWAYS);
    cr_assert_eq(mask, 1u << TC_ORD_MINHASH);
    setenv("TCSPARSE_REORDER", "1", 1);
    unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, 0), 0);
    tc_reorder_mode(d, &mask);
    cr_assert_eq(mask, TC_ORD_ALL_CANDIDATES);

    cr_assert_eq(tcsparseDestroySpMat(d), 0);
    cr_assert_eq(tcsparseSpMatSetReorder(d, TCSPARSE_REORDER_AUTO), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseSpMatSetReorderOrderings(d, fc), TCSPARSE_STATUS_INVALID_VALUE);
    unsetenv("TCSPARSE_REORDER");
    tc_config_reload();
}

/* A matrix far wider than its nonzeros (columns spread up to 1.5e9): the choice counts blocks
 * on densely renumbered columns, so it needs memory for the nonzeros, not for 2^31 columns
 * (before, each count allocated and cleared 8.6 GB per thread), and gets the same counts. */
Test(reorder, hypersparse_columns_counted_densely)
{
    int lists[32 * 9 + 1], *p = lists;
    for (int r = 0; r < 32; r++) {
        for (int c = 0; c < 8; c++)
            *p++ = ((r % 2) * 8 + c) * 100000000;
        *p++ = -1;
    }
    *p = -2;
    tc_csr m;
    from_lists((1ll << 31) - 1, lists, &m);
    tc_rcsr a = view(&m);
    int32_t order[32];
    tc_reorder_opts o = {TC_ORD_ALL_CANDIDATES, 0.10, 2};
    tc_reorder_result res;
    cr_assert_eq(tc_reorder_choose(&a, &o, order, &res), 0);
    cr_assert_eq(res.blocks[TC_ORD_IDENTITY], 4);
    for (int k = 1; k < TC_ORD_COUNT; k++)
        cr_assert_eq(res.blocks[k], 2, "%s", tc_ordering_name(k));
    cr_assert_neq(res.kept, TC_ORD_IDENTITY);
    tc_csr_free(&m);
}

/* A band whose rows are scrambled loses its blocks' sharing; the breadth-first order finds
 * the band again: nearly as few blocks as the band as generated, and rows next to each other
 * in the order next to each other in the band. */
Test(reorder, bfs_restores_a_scrambled_band)
{
    tc_csr band, scr;
    gen("banded:3001:3", &band);
    int32_t *perm = malloc(sizeof *perm * (size_t)band.rows);
    for (int64_t i = 0; i < band.rows; i++)
        perm[i] = (int32_t)i;
    uint64_t x = 12345;
    for (int64_t i = band.rows - 1; i > 0; i--) { /* Fisher-Yates, a fixed LCG */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int64_t j = (int64_t)((x >> 33) % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    permute(&band, perm, &scr);
    tc_rcsr a = view(&scr);
    const int64_t b_band = reference_blocks(&band), b_scr = tc_reorder_count_blocks(&a, NULL, 2);
    cr_assert_gt(b_scr, 2 * b_band, "the scrambled band: %lld blocks, the band %lld",
                 (long long)b_scr, (long long)b_band);
    int32_t *order = malloc(sizeof *order * (size_t)band.rows);
    cr_assert_eq(tc_reorder_compute(&a, TC_ORD_BFS, order, 2), 0);
    assert_permutation(order, scr.rows, "bfs");
    const int64_t b_bfs = tc_reorder_count_blocks(&a, order, 2);
    cr_assert_leq(4 * b_bfs, 5 * b_band, "bfs: %lld blocks, the band %lld", (long long)b_bfs,
                  (long long)b_band);
    /* neighbours in the order are neighbours in the band: a row's position in the order is
     * within a few bandwidths of its position in the band, up to the search's direction */
    int64_t far = 0;
    for (int64_t i = 1; i < scr.rows; i++) {
        const int64_t d = (int64_t)perm[order[i]] - (int64_t)perm[order[i - 1]];
        far += d > 8 || d < -8;
    }
    cr_assert_lt(far, scr.rows / 50, "%lld of %lld consecutive rows far apart in the band",
                 (long long)far, (long long)scr.rows);
    free(order);
    free(perm);
    tc_csr_free(&band);
    tc_csr_free(&scr);
}
