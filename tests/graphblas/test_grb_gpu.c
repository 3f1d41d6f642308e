#define _POSIX_C_SOURCE 200809L /* setenv */
/* The GraphBLAS adapter on the GPU (every test skips without a CUDA device): tcsparse_GrB_mxm
 * against GrB_mxm for every descriptor combination the adapter accepts (and those it
 * declines), on generated matrices, with tcsparse's automatic route and with the tensor
 * cores forced; SpMM and SDDMM on the real matrices of TC_DATA_DIR; pinned operands that
 * change in place and in structure. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grb_testlib.h"
#include "testutil.h"

#define MAX_CASES 1024

static void setup(void)
{
    tg_init();
    tg_setenv("TCSPARSE_X_GRB_MIN_FLOPS", "0");
    tg_unsetenv("TCSPARSE_X_GRB_BACKEND");
    tg_unsetenv("TCSPARSE_X_GRB_NOUNPACK");
    tg_unsetenv("TCSPARSE_GRB");
    tg_unsetenv("TCSPARSE_ROUTE");
    tg_unsetenv("TCSPARSE_X_GRB_WAVE");
    tg_unsetenv("TCSPARSE_X_GRB_FLOW");
}

static void teardown(void)
{
    tcsparse_GrB_release();
}

/* TC_TEST_CASE_STRIDE=k runs every k-th combination (default: all of them): for runs under
 * compute-sanitizer's racecheck, where each case costs seconds and the kernels reached are
 * the same for every combination (docs/reliability.md). */
static int case_stride(void)
{
    const char *e = getenv("TC_TEST_CASE_STRIDE");
    int k = e != NULL ? atoi(e) : 1;
    return k > 0 ? k : 1;
}

static int run_all(const GrB_Index dims[3])
{
    static tg_case cases[MAX_CASES];
    int n = tg_all_cases(cases, MAX_CASES, dims), failures = 0, ran = 0;
    const int stride = case_stride();
    for (int i = 0; i < n; i += stride, ran++) {
        char msg[400], name[300];
        double tol = cases[i].fp64 ? 1e-12 : 1e-5;
        if (tg_run_case(&cases[i], 1, tol, msg, sizeof msg) != 0) {
            tg_case_name(&cases[i], name, sizeof name);
            if (failures < 20)
                cr_log_error("case %d (%s): %s", i, name, msg);
            failures++;
        }
    }
    cr_log_info("%d of %d cases run, %d failures", ran, n, failures);
    return failures;
}

TestSuite(grb_gpu, .init = setup, .fini = teardown, .timeout = 900);

Test(grb_gpu, descriptor_combinations)
{
    TC_REQUIRE_GPU();
    cr_expect_eq(run_all(NULL), 0);
}

/* Sizes past a few 16-row windows, tensor cores forced where eligible. */
Test(grb_gpu, descriptor_combinations_tensor_cores)
{
    TC_REQUIRE_GPU();
    tg_setenv("TCSPARSE_ROUTE", "tc");
    const GrB_Index dims[3] = {101, 45, 64};
    cr_expect_eq(run_all(dims), 0);
}

/* ---------------------------------------------------------------- real matrices */

static const char *const data_files[] = {
    "cora.mtx.gz",   "citeseer.mtx.gz",  "494_bus.mtx.gz",    "ca-GrQc.mtx.gz",
    "Wiki-Vote.mtx.gz", "email-Eu-core.mtx.gz", "mbeacxc.mtx.gz", "bcsstk13.mtx.gz",
    "Franz6_id1959_aug.mtx.gz", "PROTEINS_full.mtx.gz", "cit-HepTh.mtx.gz",
};

/* C1 = GrB_mxm(...), C2 = tcsparse_GrB_mxm(...) from the same C0; checks path and values. */
static int compare_call(const char *label, GrB_Matrix C0, GrB_Matrix M, GrB_BinaryOp accum,
                        GrB_Semiring sr, GrB_Matrix A, GrB_Matrix B, GrB_Descriptor d,
                        tcsparse_GrB_path_t want, double tol)
{
    GrB_Matrix C1, C2;
    cr_assert_eq(GrB_Matrix_dup(&C1, C0), 0);
    cr_assert_eq(GrB_Matrix_dup(&C2, C0), 0);
    GrB_Info i1 = GrB_mxm(C1, M, accum, sr, A, B, d);
    GrB_Info i2 = tcsparse_GrB_mxm(C2, M, accum, sr, A, B, d);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    char msg[300];
    int bad = 0;
    if (i1 != GrB_SUCCESS || i2 != GrB_SUCCESS) {
        cr_log_error("%s: GrB_mxm %d, tcsparse_GrB_mxm %d", label, (int)i1, (int)i2);
        bad = 1;
    } else if (st.last_path != want) {
        cr_log_error("%s: path %d, expected %d (%s)", label, (int)st.last_path, (int)want,
                     st.last_reason);
        bad = 1;
    } else if (tg_compare(C2, C1, tol, msg, sizeof msg) != 0) {
        cr_log_error("%s (%s): %s", label, st.last_kernel, msg);
        bad = 1;
    }
    GrB_Matrix_free(&C1);
    GrB_Matrix_free(&C2);
    return bad;
}

static GrB_Matrix full_of(GrB_Type t, GrB_Index r, GrB_Index c, uint64_t seed)
{
    return tg_full(t, r, c, seed, TG_BYROW);
}

Test(grb_gpu, data_matrices)
{
    TC_REQUIRE_GPU();
    const char *dir = getenv("TC_DATA_DIR");
    if (dir == NULL || dir[0] == '\0')
        cr_skip_test("TC_DATA_DIR is not set");
    int failures = 0, done = 0;
    const GrB_Semiring s32 = GrB_PLUS_TIMES_SEMIRING_FP32, s64 = GrB_PLUS_TIMES_SEMIRING_FP64;
    const tcsparse_GrB_path_t SPMM = TCSPARSE_GRB_PATH_SPMM, SDDMM = TCSPARSE_GRB_PATH_SDDMM;
    for (size_t f = 0; f < sizeof data_files / sizeof *data_files; f++) {
        char path[1024], err[256], label[300];
        snprintf(path, sizeof path, "%s/%s", dir, data_files[f]);
        tc_csr m;
        if (tc_csr_load(path, &m, err, sizeof err) != 0) {
            /* info, not warn: Criterion exits 1 after any warning, so a data folder that
             * lacks some of the files would fail a run whose tests all passed */
            cr_log_info("%s: %s (skipped)", path, err);
            continue;
        }
        GrB_Matrix A = tg_from_csr(&m, GrB_FP32), A64 = tg_from_csr(&m, GrB_FP64);
        const GrB_Index R = (GrB_Index)m.rows, K = (GrB_Index)m.cols;
        for (int route = 0; route < 2; route++) {
            if (route)
                tg_setenv("TCSPARSE_ROUTE", "tc");
            else
                tg_unsetenv("TCSPARSE_ROUTE");
            const int ns[2] = {16, 64};
            for (int q = 0; q < 2; q++) {
                const GrB_Index N = (GrB_Index)ns[q];
                GrB_Matrix B = full_of(GrB_FP32, K, N, 31 + q), Bt = full_of(GrB_FP32, N, K, 32);
                GrB_Matrix B64 = full_of(GrB_FP64, K, N, 33), E, Cin;
                cr_assert_eq(GrB_Matrix_new(&E, GrB_FP32, R, N), 0);
                Cin = tg_sparse(GrB_FP32, R, N, 0.2, 34, TG_BYROW);
                GrB_Matrix E64;
                cr_assert_eq(GrB_Matrix_new(&E64, GrB_FP64, R, N), 0);
#define CALL(what, ...)                                                                        \
    do {                                                                                       \
        snprintf(label, sizeof label, "%s N=%d route=%s %s", data_files[f], ns[q],             \
                 route ? "tc" : "auto", what);                                                 \
        failures += compare_call(label, __VA_ARGS__);                                          \
        done++;                                                                                \
    } while (0)
                CALL("C=A*B", E, NULL, NULL, s32, A, B, NULL, SPMM, 1e-5);
                CALL("C=A*Bt'", E, NULL, NULL, s32, A, Bt, GrB_DESC_T1, SPMM, 1e-5);
                CALL("C+=A*B", Cin, NULL, GrB_PLUS_FP32, s32, A, B, NULL, SPMM, 1e-5);
                CALL("C=A*B fp64", E64, NULL, NULL, s64, A64, B64, NULL, SPMM, 1e-12);
                /* SDDMM on A's pattern: C<A> = X*Y' */
                GrB_Matrix X = full_of(GrB_FP32, R, N, 35), Y = full_of(GrB_FP32, K, N, 36);
                GrB_Matrix Cs, Cs0;
                cr_assert_eq(GrB_Matrix_new(&Cs, GrB_FP32, R, K), 0);
                Cs0 = tg_sparse(GrB_FP32, R, K, 0.001, 37, TG_BYROW);
                CALL("C<A,struct>=X*Y'", Cs, A, NULL, s32, X, Y, GrB_DESC_ST1, SDDMM, 1e-5);
                CALL("C<A>=X*Y' valued", Cs, A, NULL, s32, X, Y, GrB_DESC_T1, SDDMM, 1e-5);
                CALL("C<A,struct,replace>+=X*Y'", Cs0, A, GrB_PLUS_FP32, s32, X, Y,
                     GrB_DESC_RST1, SDDMM, 1e-5);
                if (R == K)
                    CALL("C<A,struct>=X*X'", Cs, A, NULL, s32, X, X, GrB_DESC_ST1, SDDMM, 1e-5);
#undef CALL
                GrB_Matrix_free(&X);
                GrB_Matrix_free(&Y);
                GrB_Matrix_free(&Cs);
                GrB_Matrix_free(&Cs0);
                GrB_Matrix_free(&B);
                GrB_Matrix_free(&Bt);
                GrB_Matrix_free(&B64);
                GrB_Matrix_free(&E);
                GrB_Matrix_free(&E64);
                GrB_Matrix_free(&Cin);
            }
        }
        GrB_Matrix_free(&A);
        GrB_Matrix_free(&A64);
        tc_csr_free(&m);
    }
    cr_log_info("%d calls, %d failures", done, failures);
    cr_expect_eq(failures, 0);
}

/* Pinned operands must never be served stale: values rewritten in place, a new entry, a
 * trusted pin refreshed by pinning again. */
Test(grb_gpu, pins)
{
    TC_REQUIRE_GPU();
    tc_csr g;
    char err[200];
    cr_assert_eq(tc_csr_load("rmat:12:8", &g, err, sizeof err), 0, "%s", err);
    GrB_Matrix A = tg_from_csr(&g, GrB_FP32);
    const GrB_Index R = (GrB_Index)g.rows, N = 32;
    GrB_Matrix B = full_of(GrB_FP32, R, N, 41), E, Cs;
    cr_assert_eq(GrB_Matrix_new(&E, GrB_FP32, R, N), 0);
    cr_assert_eq(GrB_Matrix_new(&Cs, GrB_FP32, R, R), 0);
    const GrB_Semiring s = GrB_PLUS_TIMES_SEMIRING_FP32;
    const tcsparse_GrB_path_t SPMM = TCSPARSE_GRB_PATH_SPMM, SDDMM = TCSPARSE_GRB_PATH_SDDMM;
    tcsparse_GrB_stats_t st;
    int failures = 0;

    cr_assert_eq(tcsparse_GrB_pin(A), GrB_SUCCESS);
    cr_assert_eq(tcsparse_GrB_pin(B), GrB_SUCCESS);
    tcsparse_GrB_reset_stats();
    failures += compare_call("pinned", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);
    failures += compare_call("pinned again", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_hits, 4);

    /* values of A and B rewritten in place */
    GrB_Index j = 0;
    float x;
    while (GrB_Matrix_extractElement_FP32(&x, A, 0, j) != GrB_SUCCESS)
        j++;
    cr_assert_eq(GrB_Matrix_setElement_FP32(A, x - 3.0f, 0, j), 0);
    cr_assert_eq(GrB_Matrix_setElement_FP32(B, 5.0f, 1, 1), 0);
    tcsparse_GrB_reset_stats();
    failures += compare_call("values changed", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_value_refreshes, 2);

    /* a new entry in A */
    GrB_Index i = 0;
    while (GrB_Matrix_extractElement_FP32(&x, A, i, 0) == GrB_SUCCESS)
        i++;
    cr_assert_eq(GrB_Matrix_setElement_FP32(A, 1.5f, i, 0), 0);
    tcsparse_GrB_reset_stats();
    failures += compare_call("structure changed", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_rebuilds, 1);

    /* SDDMM with the pinned A as the mask and pinned B as both inputs */
    failures += compare_call("sddmm pinned", Cs, A, NULL, s, B, B, GrB_DESC_ST1, SDDMM, 1e-5);

    /* trusted pins: the caller pins again after a change */
    cr_assert_eq(tcsparse_GrB_pin_ext(A, TCSPARSE_GRB_PIN_TRUST), GrB_SUCCESS);
    failures += compare_call("trusted", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);
    cr_assert_eq(GrB_Matrix_setElement_FP32(A, 7.0f, 0, j), 0);
    cr_assert_eq(tcsparse_GrB_pin_ext(A, TCSPARSE_GRB_PIN_TRUST), GrB_SUCCESS);
    failures += compare_call("trusted, pinned again", E, NULL, NULL, s, A, B, NULL, SPMM, 1e-5);

    cr_expect_eq(failures, 0);
    tcsparse_GrB_unpin(A);
    tcsparse_GrB_unpin(B);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
    GrB_Matrix_free(&E);
    GrB_Matrix_free(&Cs);
    tc_csr_free(&g);
}

/* Transfers large enough for the staged, multi-threaded copies (64-bit indices narrowed on
 * the way up, several lanes each way), and a C whose arrays an earlier call left in T's form
 * (full for the uniform matrix, bitmap for R-MAT's empty rows) reused by the next calls;
 * unpinned (cuSPARSE route) and pinned (automatic route); SpMM and SDDMM. */
Test(grb_gpu, large_transfers_reused_result)
{
    TC_REQUIRE_GPU();
    const char *specs[2] = {"uniform:131072:131072:16", "rmat:17:16"};
    const GrB_Semiring s = GrB_PLUS_TIMES_SEMIRING_FP32;
    int failures = 0;
    for (int f = 0; f < 2; f++) {
        tc_csr g;
        char err[200], msg[300];
        cr_assert_eq(tc_csr_load(specs[f], &g, err, sizeof err), 0, "%s", err);
        GrB_Matrix A = tg_from_csr(&g, GrB_FP32);
        const GrB_Index R = (GrB_Index)g.rows, K = (GrB_Index)g.cols, N = 64;
        for (int pinned = 0; pinned < 2; pinned++) {
            if (pinned)
                cr_assert_eq(tcsparse_GrB_pin(A), GrB_SUCCESS);
            GrB_Matrix C1, C2, S1, S2;
            cr_assert_eq(GrB_Matrix_new(&C1, GrB_FP32, R, N), 0);
            cr_assert_eq(GrB_Matrix_new(&C2, GrB_FP32, R, N), 0);
            cr_assert_eq(GrB_Matrix_new(&S1, GrB_FP32, R, K), 0);
            cr_assert_eq(GrB_Matrix_new(&S2, GrB_FP32, R, K), 0);
            for (int q = 0; q < 3; q++) {
                GrB_Matrix B = full_of(GrB_FP32, K, N, 50 + q);
                GrB_Matrix X = full_of(GrB_FP32, R, N, 60 + q), Y = full_of(GrB_FP32, K, N, 70 + q);
                tcsparse_GrB_stats_t st;
                cr_assert_eq(GrB_mxm(C1, NULL, NULL, s, A, B, NULL), GrB_SUCCESS);
                cr_assert_eq(tcsparse_GrB_mxm(C2, NULL, NULL, s, A, B, NULL), GrB_SUCCESS);
                tcsparse_GrB_get_stats(&st);
                if (st.last_path != TCSPARSE_GRB_PATH_SPMM ||
                    tg_compare(C2, C1, 1e-5, msg, sizeof msg) != 0) {
                    cr_log_error("%s pinned=%d call %d SpMM: path %d (%s): %s", specs[f], pinned,
                                 q, (int)st.last_path, st.last_reason, msg);
                    failures++;
                }
                cr_assert_eq(GrB_mxm(S1, A, NULL, s, X, Y, GrB_DESC_ST1), GrB_SUCCESS);
                cr_assert_eq(tcsparse_GrB_mxm(S2, A, NULL, s, X, Y, GrB_DESC_ST1), GrB_SUCCESS);
                tcsparse_GrB_get_stats(&st);
                if (st.last_path != TCSPARSE_GRB_PATH_SDDMM ||
                    tg_compare(S2, S1, 1e-5, msg, sizeof msg) != 0) {
                    cr_log_error("%s pinned=%d call %d SDDMM: path %d (%s): %s", specs[f],
                                 pinned, q, (int)st.last_path, st.last_reason, msg);
                    failures++;
                }
                cr_log_info("%s pinned=%d call %d: %s; %.2f ms read, %.2f up, %.2f compute, "
                            "%.2f down, %.2f finish", specs[f], pinned, q, st.last_kernel,
                            st.ms_acquire, st.ms_upload, st.ms_compute, st.ms_download,
                            st.ms_finish);
                GrB_Matrix_free(&B);
                GrB_Matrix_free(&X);
                GrB_Matrix_free(&Y);
            }
            if (pinned)
                cr_assert_eq(tcsparse_GrB_unpin(A), GrB_SUCCESS);
            GrB_Matrix_free(&C1);
            GrB_Matrix_free(&C2);
            GrB_Matrix_free(&S1);
            GrB_Matrix_free(&S2);
        }
        GrB_Matrix_free(&A);
        tc_csr_free(&g);
    }
    cr_expect_eq(failures, 0);
}

/* A CSR whose rows are uneven: every seventh empty, one row with most of the entries (row
 * slices must still hold one row each), the others 1-5 entries.  With empty_head, the first
 * 4000 of 6000 rows are empty instead (whole slices without an entry). */
static void uneven_csr(tc_csr *g, int empty_head)
{
    const int64_t rows = empty_head ? 6000 : 5000, cols = 3000, big = empty_head ? -1 : 2500;
    g->rows = rows;
    g->cols = cols;
    g->row_off = malloc(sizeof *g->row_off * (size_t)(rows + 1));
    cr_assert_not_null(g->row_off);
    g->row_off[0] = 0;
    for (int64_t i = 0; i < rows; i++) {
        const int64_t len = i == big ? 2900
                            : empty_head ? (i < 4000 ? 0 : 3)
                            : i % 7 == 3 ? 0
                                         : 1 + i % 5;
        g->row_off[i + 1] = g->row_off[i] + len;
    }
    g->nnz = g->row_off[rows];
    g->col = malloc(sizeof *g->col * (size_t)g->nnz);
    g->val = malloc(sizeof *g->val * (size_t)g->nnz);
    cr_assert(g->col != NULL && g->val != NULL);
    uint64_t s = 12345;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = g->row_off[i]; k < g->row_off[i + 1]; k++) {
            const int64_t q = k - g->row_off[i];
            g->col[k] = (int32_t)(i == big ? q : (i * 37) % 600 + q * 600); /* sorted, distinct */
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            g->val[k] = (double)(s >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
        }
}

/* A's columns following its rows (B then goes up in chunks beside the slices of A): row i of
 * rows x cols (cols = rows / 2) has up to 4 columns near i / 2, every eleventh row empty.
 * kind 1: one row in the middle also reaches B's last row (B goes up whole); kind 2: the
 * first 30% of the rows empty (slices with nothing to reach), cols = rows. */
static void local_csr(tc_csr *g, int kind)
{
    const int64_t rows = 9000, cols = kind == 2 ? rows : rows / 2;
    g->rows = rows;
    g->cols = cols;
    g->row_off = malloc(sizeof *g->row_off * (size_t)(rows + 1));
    g->col = malloc(sizeof *g->col * (size_t)(rows * 4 + 1));
    g->val = malloc(sizeof *g->val * (size_t)(rows * 4 + 1));
    cr_assert(g->row_off != NULL && g->col != NULL && g->val != NULL);
    g->row_off[0] = 0;
    uint64_t s = 777;
    int64_t k = 0;
    for (int64_t i = 0; i < rows; i++) {
        const int empty = i % 11 == 5 || (kind == 2 && i < rows * 3 / 10);
        const int64_t c0 = i * cols / rows;
        for (int64_t q = 0; !empty && q < 4; q++) {
            int64_t c = c0 - 3 + 2 * q;
            if (kind == 1 && i == rows / 2 && q == 3)
                c = cols - 1;
            if (c < 0 || c >= cols || (k > g->row_off[i] && c <= g->col[k - 1]))
                continue;
            g->col[k] = (int32_t)c;
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            g->val[k++] = (double)(s >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
        }
        g->row_off[i + 1] = k;
    }
    g->nnz = k;
}

/* Cold SpMM calls that must take the sliced path, each against GrB_mxm, twice into the same
 * C with a different B each time (the device buffers then hold the first call's data, not
 * the answer): uneven rows, empty rows (a bitmap result), leading empty slices, N that leaves
 * C's rows unaligned.  B in chunks where every slice reaches no further into B than its
 * share plus a quarter (wave: 1 must, 0 must not); the slices' transfers in one flow
 * (flow = 1) or step by step (0). */
static int sliced_cases(GrB_Type t, GrB_Semiring s, double tol, int flow)
{
    enum { F = 8 };
    const char *specs[F] = {NULL, NULL, "rmat:12:8", "uniform:20000:20000:4",
                            "banded:20000:40", NULL, NULL, NULL};
    const char *labels[F] = {"uneven rows", "empty head", NULL, NULL,
                             NULL, "local rectangular", "local, one far column",
                             "local, empty head"};
    const int wave[F] = {0, 1, 0, 0, 1, 1, 0, 1};
    const GrB_Index ns[F][2] = {{7, 64}, {5, 32}, {33, 1}, {16, 100},
                                {7, 64}, {1, 33}, {16, 5}, {64, 8}};
    int failures = 0;
    for (int f = 0; f < F; f++) {
        tc_csr g;
        char err[200], msg[300];
        if (specs[f] != NULL)
            cr_assert_eq(tc_csr_load(specs[f], &g, err, sizeof err), 0, "%s", err);
        else if (f < 2)
            uneven_csr(&g, f == 1);
        else
            local_csr(&g, f - 5);
        const char *label = specs[f] != NULL ? specs[f] : labels[f];
        GrB_Matrix A = tg_from_csr(&g, t);
        for (int q = 0; q < 2; q++) {
            const GrB_Index R = (GrB_Index)g.rows, K = (GrB_Index)g.cols, N = ns[f][q];
            GrB_Matrix C2;
            cr_assert_eq(GrB_Matrix_new(&C2, t, R, N), 0);
            for (int again = 0; again < 2; again++) {
                tcsparse_GrB_stats_t st;
                GrB_Matrix B = full_of(t, K, N, 90 + q + 10 * again), C1;
                cr_assert_eq(GrB_Matrix_new(&C1, t, R, N), 0);
                cr_assert_eq(GrB_mxm(C1, NULL, NULL, s, A, B, NULL), GrB_SUCCESS);
                cr_assert_eq(tcsparse_GrB_mxm(C2, NULL, NULL, s, A, B, NULL), GrB_SUCCESS);
                tcsparse_GrB_get_stats(&st);
                const int chunks = strstr(st.last_kernel, "B in chunks") != NULL;
                const int flowed = strstr(st.last_kernel, "one flow") != NULL;
                if (st.last_path != TCSPARSE_GRB_PATH_SPMM ||
                    strstr(st.last_kernel, "slices") == NULL || chunks != wave[f] ||
                    flowed != flow) {
                    cr_log_error("%s N=%d call %d: not sliced as expected (B in chunks: %s, "
                                 "one flow: %s): path %d, %s (%s)", label, (int)N, again,
                                 wave[f] ? "yes" : "no", flow ? "yes" : "no",
                                 (int)st.last_path, st.last_kernel, st.last_reason);
                    failures++;
                } else if (tg_compare(C2, C1, tol, msg, sizeof msg) != 0) {
                    cr_log_error("%s N=%d call %d: %s", label, (int)N, again, msg);
                    failures++;
                }
                GrB_Matrix_free(&B);
                GrB_Matrix_free(&C1);
            }
            GrB_Matrix_free(&C2);
        }
        GrB_Matrix_free(&A);
        tc_csr_free(&g);
    }
    return failures;
}

/* The cold SpMM in row slices (TCSPARSE_X_GRB_PIPE=1: also below its size threshold), whose
 * uploads and downloads overlap on disjoint lanes; FP32, the default staging buffers, the
 * OpenMP lanes. */
Test(grb_gpu, sliced_spmm)
{
    TC_REQUIRE_GPU();
    tg_setenv("TCSPARSE_X_GRB_PIPE", "1");
    tg_setenv("TCSPARSE_X_GRB_THREADS", "5");
    cr_expect_eq(sliced_cases(GrB_FP32, GrB_PLUS_TIMES_SEMIRING_FP32, 1e-5, 1), 0);
}

/* The same step by step (TCSPARSE_X_GRB_FLOW=0: a barrier between the slices' transfers, the
 * path taken when the flow's lanes cannot run at once). */
Test(grb_gpu, sliced_spmm_step_by_step)
{
    TC_REQUIRE_GPU();
    tg_setenv("TCSPARSE_X_GRB_PIPE", "1");
    tg_setenv("TCSPARSE_X_GRB_THREADS", "4");
    tg_setenv("TCSPARSE_X_GRB_FLOW", "0");
    cr_expect_eq(sliced_cases(GrB_FP32, GrB_PLUS_TIMES_SEMIRING_FP32, 1e-5, 0), 0);
}

/* The same in FP64, with 64 KiB staging buffers (each lane cycles its two buffers many times
 * within one array) and threads of the adapter's own instead of the OpenMP pool (the flow's
 * lanes through their start gate), 3 lanes: one up, one down, one launching. */
Test(grb_gpu, sliced_spmm_fp64_small_buffers_own_threads)
{
    TC_REQUIRE_GPU();
    tg_setenv("TCSPARSE_X_GRB_PIPE", "1");
    tg_setenv("TCSPARSE_X_GRB_THREADS", "3");
    tg_setenv("TCSPARSE_X_GRB_STAGE_KB", "64");
    tg_setenv("TCSPARSE_X_GRB_OMP", "0");
    cr_expect_eq(sliced_cases(GrB_FP64, GrB_PLUS_TIMES_SEMIRING_FP64, 1e-12, 1), 0);
}
