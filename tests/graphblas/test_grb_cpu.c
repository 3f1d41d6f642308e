#define _POSIX_C_SOURCE 200809L /* setenv */
/* The GraphBLAS adapter without a GPU.
 *  - as_it_comes: every descriptor combination through tcsparse_GrB_mxm and GrB_mxm; with
 *    no CUDA device the adapter must pass every call through (identical results), with one
 *    it must accelerate the accepted ones (results within FP32 accuracy);
 *  - host_backend: the same with TCSPARSE_X_GRB_BACKEND=host, which computes T on the CPU:
 *    everything around the multiplication (what is accepted, zero-copy access and
 *    restoration of the inputs, the result's pattern, mask / accum / replace, aliasing,
 *    storage formats) is checked here, GPU or not;
 *  - failing_backend: every computation fails after the inputs were unpacked: the call must
 *    still give GrB_mxm's exact result, with the inputs restored;
 *  - zero-copy, pins, declined calls, thresholds. */
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
}

static int run_all(int accelerate, double tol32)
{
    static tg_case cases[MAX_CASES];
    int n = tg_all_cases(cases, MAX_CASES, NULL), failures = 0;
    for (int i = 0; i < n; i++) {
        char msg[400], name[300];
        double tol = cases[i].fp64 ? tol32 * 1e-7 : tol32;
        if (tg_run_case(&cases[i], accelerate, tol, msg, sizeof msg) != 0) {
            tg_case_name(&cases[i], name, sizeof name);
            if (failures < 20)
                cr_log_error("case %d (%s): %s", i, name, msg);
            failures++;
        }
    }
    cr_log_info("%d cases, %d failures", n, failures);
    return failures;
}

TestSuite(grb_cpu, .init = setup);

Test(grb_cpu, as_it_comes)
{
    char why[200];
    int gpu = tc_test_gpu_available(why, sizeof why);
    cr_expect_eq(run_all(gpu, 1e-5), 0);
}

Test(grb_cpu, host_backend)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    cr_expect_eq(run_all(1, 1e-5), 0);
}

Test(grb_cpu, host_backend_without_unpack)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    tg_setenv("TCSPARSE_X_GRB_NOUNPACK", "1");
    cr_expect_eq(run_all(1, 1e-5), 0);
}

Test(grb_cpu, failing_backend)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "fail");
    cr_expect_eq(run_all(0, 0.0), 0);
}

Test(grb_cpu, switched_off)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    tg_setenv("TCSPARSE_GRB", "off");
    cr_expect_eq(run_all(0, 0.0), 0);
}

/* The arrays GraphBLAS holds for A and B are the same ones after the call: they were moved
 * out and back, not copied. */
Test(grb_cpu, zero_copy)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    GrB_Matrix A = tg_sparse(GrB_FP32, 60, 40, 0.2, 7, TG_BYROW);
    GrB_Matrix B = tg_full(GrB_FP32, 40, 24, 8, TG_BYROW), C;
    cr_assert_eq(GrB_Matrix_new(&C, GrB_FP32, 60, 24), GrB_SUCCESS);
    GrB_Index *ap, *aj, aps, ajs, axs, bxs;
    void *ax, *bx;
    bool iso;
    cr_assert_eq(GxB_Matrix_unpack_CSR(A, &ap, &aj, &ax, &aps, &ajs, &axs, &iso, NULL, NULL), 0);
    GrB_Index *ap0 = ap, *aj0 = aj;
    void *ax0 = ax;
    cr_assert_eq(GxB_Matrix_pack_CSR(A, &ap, &aj, &ax, aps, ajs, axs, iso, false, NULL), 0);
    cr_assert_eq(GxB_Matrix_unpack_FullR(B, &bx, &bxs, &iso, NULL), 0);
    void *bx0 = bx;
    cr_assert_eq(GxB_Matrix_pack_FullR(B, &bx, bxs, iso, NULL), 0);

    cr_assert_eq(tcsparse_GrB_mxm(C, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL), 0);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.last_path, TCSPARSE_GRB_PATH_SPMM, "%s", st.last_reason);

    cr_assert_eq(GxB_Matrix_unpack_CSR(A, &ap, &aj, &ax, &aps, &ajs, &axs, &iso, NULL, NULL), 0);
    cr_expect(ap == ap0 && aj == aj0 && ax == ax0, "A's arrays were replaced");
    cr_assert_eq(GxB_Matrix_pack_CSR(A, &ap, &aj, &ax, aps, ajs, axs, iso, false, NULL), 0);
    cr_assert_eq(GxB_Matrix_unpack_FullR(B, &bx, &bxs, &iso, NULL), 0);
    cr_expect(bx == bx0, "B's array was replaced");
    cr_assert_eq(GxB_Matrix_pack_FullR(B, &bx, bxs, iso, NULL), 0);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
    GrB_Matrix_free(&C);
}

#define expect_same_as_grb(...) expect_same_as_grb_(__LINE__, __VA_ARGS__)
static void expect_same_as_grb_(int line, GrB_Matrix M, GrB_BinaryOp accum, GrB_Semiring sr, GrB_Matrix A,
                               GrB_Matrix B, GrB_Descriptor d, tcsparse_GrB_path_t want,
                               double tol)
{
    GrB_Index m, n;
    GrB_Type ct = GrB_FP32;
    GrB_Desc_Value t0 = GxB_DEFAULT, t1 = GxB_DEFAULT;
    cr_assert_eq(GxB_Desc_get(d, GrB_INP0, &t0), 0);
    cr_assert_eq(GxB_Desc_get(d, GrB_INP1, &t1), 0);
    cr_assert_eq(t0 == GrB_TRAN ? GrB_Matrix_ncols(&m, A) : GrB_Matrix_nrows(&m, A), 0);
    cr_assert_eq(t1 == GrB_TRAN ? GrB_Matrix_nrows(&n, B) : GrB_Matrix_ncols(&n, B), 0);
    GrB_Matrix C1, C2;
    cr_assert_eq(GrB_Matrix_new(&C1, ct, m, n), 0);
    cr_assert_eq(GrB_Matrix_new(&C2, ct, m, n), 0);
    GrB_Info i1 = GrB_mxm(C1, M, accum, sr, A, B, d);
    GrB_Info i2 = tcsparse_GrB_mxm(C2, M, accum, sr, A, B, d);
    cr_expect_eq(i1, i2);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.last_path, want, "line %d: path %d (%s)", line, (int)st.last_path,
                 st.last_reason);
    char msg[300];
    cr_expect_eq(tg_compare(C2, C1, tol, msg, sizeof msg), 0, "line %d: %s", line, msg);
    GrB_Matrix_free(&C1);
    GrB_Matrix_free(&C2);
}

/* A pinned matrix on the host backend: the check runs (counted), results stay right after
 * the matrix changes in place and in structure. */
Test(grb_cpu, pins)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    GrB_Matrix A = tg_sparse(GrB_FP32, 50, 30, 0.25, 11, TG_BYROW);
    GrB_Matrix B = tg_full(GrB_FP32, 30, 17, 12, TG_BYROW);
    GrB_Semiring sr = GrB_PLUS_TIMES_SEMIRING_FP32;
    cr_assert_eq(tcsparse_GrB_pin(A), GrB_SUCCESS);
    cr_assert_eq(tcsparse_GrB_pin(B), GrB_SUCCESS);
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_hits, 2);
    cr_expect_eq(st.pin_value_refreshes + st.pin_rebuilds, 0);

    /* a value rewritten in place, in an entry that exists */
    GrB_Index j = 0;
    float x;
    while (GrB_Matrix_extractElement_FP32(&x, A, 0, j) != GrB_SUCCESS)
        j++;
    cr_assert_eq(GrB_Matrix_setElement_FP32(A, x + 0.5f, 0, j), 0);
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_value_refreshes, 1);
    cr_expect_eq(st.pin_hits, 1);

    /* a new entry: the structure changed (row 3 was empty) */
    cr_assert_eq(GrB_Matrix_setElement_FP32(A, 2.0f, 3, 4), 0);
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_rebuilds, 1);

    /* trusted: no hashing, still a hit */
    cr_assert_eq(tcsparse_GrB_pin_ext(A, TCSPARSE_GRB_PIN_TRUST), GrB_SUCCESS);
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_hits, 2);

    /* used transposed, A's pin (CSR) does not apply */
    GrB_Matrix At = tg_full(GrB_FP32, 50, 9, 13, TG_BYROW);
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, At, GrB_DESC_T0, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_hits, 0);

    cr_expect_eq(tcsparse_GrB_unpin(A), GrB_SUCCESS);
    cr_expect_eq(tcsparse_GrB_unpin(A), GrB_NO_VALUE);
    cr_expect_eq(tcsparse_GrB_pin(NULL), GrB_NULL_POINTER);
    GrB_Matrix I32;
    cr_assert_eq(GrB_Matrix_new(&I32, GrB_INT32, 3, 3), 0);
    cr_expect_eq(tcsparse_GrB_pin(I32), GrB_DOMAIN_MISMATCH);
    tcsparse_GrB_release();
    cr_expect_eq(tcsparse_GrB_unpin(B), GrB_NO_VALUE);
    GrB_Matrix_free(&I32);
    GrB_Matrix_free(&At);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
}

/* Calls the adapter must leave to GraphBLAS: exact results and the reason. */
Test(grb_cpu, declined)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    GrB_Matrix A = tg_sparse(GrB_FP32, 31, 29, 0.3, 21, TG_BYROW);
    GrB_Matrix A64 = tg_sparse(GrB_FP64, 31, 29, 0.3, 21, TG_BYROW);
    GrB_Matrix B = tg_full(GrB_FP32, 29, 13, 22, TG_BYROW);
    GrB_Matrix Bs = tg_sparse(GrB_FP32, 29, 13, 0.5, 23, TG_BYROW);
    GrB_Matrix Af = tg_full(GrB_FP32, 31, 29, 24, TG_BYROW);
    GrB_Matrix M = tg_sparse(GrB_BOOL, 31, 13, 0.4, 25, TG_BYROW);
    const tcsparse_GrB_path_t G = TCSPARSE_GRB_PATH_GRAPHBLAS;
    expect_same_as_grb(NULL, NULL, GrB_MIN_PLUS_SEMIRING_FP32, A, B, NULL, G, 0.0);
    expect_same_as_grb(NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A64, B, NULL, G, 0.0);
    expect_same_as_grb(NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, Bs, NULL, G, 0.0);
    expect_same_as_grb(NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, Af, B, NULL, G, 0.0);
    expect_same_as_grb(M, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, GrB_DESC_S, G, 0.0);
    /* GraphBLAS gives a monoid of the built-in PLUS operator the operator's own identity
     * and no terminal, whatever GrB_Monoid_new / GxB_Monoid_terminal_new were given: these
     * are PLUS_TIMES, and GrB_mxm's sums ignore the 1.0 and the 0.5 */
    GrB_Monoid odd;
    GrB_Semiring odd_sr;
    cr_assert_eq(GxB_Monoid_terminal_new_FP32(&odd, GrB_PLUS_FP32, 0.0f, 0.5f), 0);
    cr_assert_eq(GrB_Semiring_new(&odd_sr, odd, GrB_TIMES_FP32), 0);
    expect_same_as_grb(NULL, NULL, odd_sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    GrB_Monoid plus1;
    GrB_Semiring plus1_sr;
    cr_assert_eq(GrB_Monoid_new_FP32(&plus1, GrB_PLUS_FP32, 1.0f), 0);
    cr_assert_eq(GrB_Semiring_new(&plus1_sr, plus1, GrB_TIMES_FP32), 0);
    expect_same_as_grb(NULL, NULL, plus1_sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    /* dimension mismatch: GraphBLAS's own error */
    GrB_Matrix C;
    cr_assert_eq(GrB_Matrix_new(&C, GrB_FP32, 5, 5), 0);
    cr_expect_eq(tcsparse_GrB_mxm(C, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL),
                 GrB_DIMENSION_MISMATCH);
    cr_expect_eq(tcsparse_GrB_mxm(NULL, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL),
                 GrB_NULL_POINTER);
    /* too little work for the GPU by default */
    tg_unsetenv("TCSPARSE_X_GRB_MIN_FLOPS");
    expect_same_as_grb(NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL, G, 0.0);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    cr_expect(strstr(st.last_reason, "TCSPARSE_X_GRB_MIN_FLOPS") != NULL, "%s", st.last_reason);
    GrB_Semiring_free(&odd_sr);
    GrB_Monoid_free(&odd);
    GrB_Semiring_free(&plus1_sr);
    GrB_Monoid_free(&plus1);
    GrB_Matrix_free(&C);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&A64);
    GrB_Matrix_free(&B);
    GrB_Matrix_free(&Bs);
    GrB_Matrix_free(&Af);
    GrB_Matrix_free(&M);
}

/* The result matrix keeps what GrB_mxm keeps: its format, sparsity control and switches,
 * whatever the adapter's fast path (T packed straight into C) would have made of them. */
static void c_settings(GrB_Matrix C, int32_t *fmt, int32_t *ctrl, double *hyper, double *bitmap)
{
    cr_assert_eq(GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, fmt), GrB_SUCCESS);
    cr_assert_eq(GxB_Matrix_Option_get_INT32(C, GxB_SPARSITY_CONTROL, ctrl), GrB_SUCCESS);
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_HYPER_SWITCH, hyper), GrB_SUCCESS);
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_BITMAP_SWITCH, bitmap), GrB_SUCCESS);
}

Test(grb_cpu, result_keeps_its_settings)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    GrB_Matrix A = tg_sparse(GrB_FP32, 48, 40, 0.2, 21, TG_BYROW);
    GrB_Matrix B = tg_full(GrB_FP32, 40, 24, 22, TG_BYROW);
    const int32_t fmts[2] = {GxB_BY_ROW, GxB_BY_COL};
    const int32_t ctrls[3] = {GxB_SPARSE, GxB_BITMAP | GxB_FULL, GxB_AUTO_SPARSITY};
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 3; c++) {
            GrB_Matrix C[2]; /* each set up on its own: GrB_Matrix_dup does not copy them all */
            for (int q = 0; q < 2; q++) {
                cr_assert_eq(GrB_Matrix_new(&C[q], GrB_FP32, 48, 24), GrB_SUCCESS);
                cr_assert_eq(GxB_Matrix_Option_set_INT32(C[q], GxB_FORMAT, fmts[f]), 0);
                cr_assert_eq(GxB_Matrix_Option_set_INT32(C[q], GxB_SPARSITY_CONTROL, ctrls[c]),
                             0);
                cr_assert_eq(GxB_Matrix_Option_set_FP64(C[q], GxB_HYPER_SWITCH, 0.375), 0);
                cr_assert_eq(GxB_Matrix_Option_set_FP64(C[q], GxB_BITMAP_SWITCH, 0.125), 0);
            }
            GrB_Matrix C1 = C[0], C2 = C[1];
            cr_assert_eq(GrB_mxm(C1, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL),
                         GrB_SUCCESS);
            tcsparse_GrB_reset_stats();
            cr_assert_eq(tcsparse_GrB_mxm(C2, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B,
                                          NULL), GrB_SUCCESS);
            tcsparse_GrB_stats_t st;
            tcsparse_GrB_get_stats(&st);
            cr_expect_eq(st.last_path, TCSPARSE_GRB_PATH_SPMM, "format %d control %d: %s",
                         fmts[f], ctrls[c], st.last_reason);
            char why[200];
            cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "%s", why);
            int32_t f1, c1, f2, c2;
            double h1, b1, h2, b2;
            c_settings(C1, &f1, &c1, &h1, &b1);
            c_settings(C2, &f2, &c2, &h2, &b2);
            cr_expect(f1 == f2 && c1 == c2 && h1 == h2 && b1 == b2,
                      "format/control/hyper/bitmap: GrB_mxm %d %d %g %g, adapter %d %d %g %g",
                      f1, c1, h1, b1, f2, c2, h2, b2);
            GrB_Matrix_free(&C1);
            GrB_Matrix_free(&C2);
        }
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
}

/* A pin whose check saw new values while the call did not finish on the GPU (here the
 * failing backend) must not be taken as current by the next call. */
Test(grb_cpu, pin_not_refreshed_is_not_reused)
{
    GrB_Matrix A = tg_sparse(GrB_FP32, 50, 30, 0.25, 31, TG_BYROW);
    GrB_Matrix B = tg_full(GrB_FP32, 30, 17, 32, TG_BYROW);
    GrB_Semiring sr = GrB_PLUS_TIMES_SEMIRING_FP32;
    cr_assert_eq(tcsparse_GrB_pin(A), GrB_SUCCESS);
    cr_assert_eq(tcsparse_GrB_pin(B), GrB_SUCCESS);
    float x;
    cr_assert_eq(GrB_Matrix_extractElement_FP32(&x, B, 0, 0), GrB_SUCCESS);
    cr_assert_eq(GrB_Matrix_setElement_FP32(B, x + 1.0f, 0, 0), GrB_SUCCESS);
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "fail");
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_GRAPHBLAS, 0.0);
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_value_refreshes, 1, "B's new values seen by the failing call");
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    tcsparse_GrB_reset_stats();
    expect_same_as_grb(NULL, NULL, sr, A, B, NULL, TCSPARSE_GRB_PATH_SPMM, 1e-5);
    tcsparse_GrB_get_stats(&st);
    cr_expect_eq(st.pin_hits, 1, "only A's pin is current");
    cr_expect_eq(st.pin_rebuilds, 1, "B's copy was never refreshed: rebuilt");
    tcsparse_GrB_release();
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
}

/* 4 entries a row, rows 3 and 10 empty when asked (the result is then a bitmap, else
 * full). */
static GrB_Matrix sparse_rows(GrB_Index m, GrB_Index k, int32_t fmt, int empty)
{
    GrB_Matrix A;
    cr_assert_eq(GrB_Matrix_new(&A, GrB_FP32, m, k), GrB_SUCCESS);
    cr_assert_eq(GxB_Matrix_Option_set_INT32(A, GxB_FORMAT, fmt), GrB_SUCCESS);
    for (GrB_Index r = 0; r < m; r++)
        for (GrB_Index t = 0; t < 4 && !(empty && (r == 3 || r == 10)); t++)
            cr_assert_eq(GrB_Matrix_setElement_FP32(A, 0.25f * (float)(t + 1) - 0.01f * (float)r, r,
                                                    (r * 7 + t * 5) % k), GrB_SUCCESS);
    cr_assert_eq(GrB_Matrix_wait(A, GrB_MATERIALIZE), GrB_SUCCESS);
    return A;
}

/* The address of C's values array (C held full or bitmap, by row or by column).  Looking
 * means unpacking and packing, which resets C's switches: they are put back. */
static void *c_values_at_(GrB_Matrix C);
static void *c_values_at(GrB_Matrix C)
{
    double h, b;
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_HYPER_SWITCH, &h), 0);
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_BITMAP_SWITCH, &b), 0);
    void *at = c_values_at_(C);
    cr_assert_eq(GxB_Matrix_Option_set_FP64(C, GxB_HYPER_SWITCH, h), 0);
    cr_assert_eq(GxB_Matrix_Option_set_FP64(C, GxB_BITMAP_SWITCH, b), 0);
    return at;
}

static void *c_values_at_(GrB_Matrix C)
{
    int32_t fmt, status;
    bool iso;
    void *x = NULL;
    int8_t *b = NULL;
    GrB_Index xs, bs, nv;
    cr_assert_eq(GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, &fmt), 0);
    cr_assert_eq(GxB_Matrix_Option_get_INT32(C, GxB_SPARSITY_STATUS, &status), 0);
    const int row = fmt == GxB_BY_ROW;
    if (status == GxB_FULL) {
        cr_assert_eq(row ? GxB_Matrix_unpack_FullR(C, &x, &xs, &iso, NULL)
                         : GxB_Matrix_unpack_FullC(C, &x, &xs, &iso, NULL), 0);
        void *at = x;
        cr_assert_eq(row ? GxB_Matrix_pack_FullR(C, &x, xs, iso, NULL)
                         : GxB_Matrix_pack_FullC(C, &x, xs, iso, NULL), 0);
        return at;
    }
    cr_assert_eq(status, GxB_BITMAP, "C is neither full nor bitmap (%d)", (int)status);
    cr_assert_eq(row ? GxB_Matrix_unpack_BitmapR(C, &b, &x, &bs, &xs, &iso, &nv, NULL)
                     : GxB_Matrix_unpack_BitmapC(C, &b, &x, &bs, &xs, &iso, &nv, NULL), 0);
    void *at = x;
    cr_assert_eq(row ? GxB_Matrix_pack_BitmapR(C, &b, &x, bs, xs, iso, nv, NULL)
                     : GxB_Matrix_pack_BitmapC(C, &b, &x, bs, xs, iso, nv, NULL), 0);
    return at;
}

/* A C that an earlier call left full (or bitmap) in T's form gives its own arrays to the
 * next C = A*B: same results as GrB_mxm, the settings kept, the array reused; a failure
 * after C's arrays were taken still gives GrB_mxm's result; an iso C is not taken. */
Test(grb_cpu, result_reuses_c_arrays)
{
    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
    GrB_Semiring sr = GrB_PLUS_TIMES_SEMIRING_FP32;
    const int32_t fmts[2] = {GxB_BY_ROW, GxB_BY_COL};
    for (int f = 0; f < 2; f++)
        for (int empty = 0; empty < 2; empty++) {
            GrB_Matrix A = sparse_rows(48, 40, GxB_BY_ROW, empty);
            GrB_Matrix B[3], C1, C2;
            for (int q = 0; q < 3; q++)
                B[q] = tg_full(GrB_FP32, 40, 24, 42 + q, f == 0 ? TG_BYROW : TG_BYCOL);
            cr_assert_eq(GrB_Matrix_new(&C1, GrB_FP32, 48, 24), 0);
            cr_assert_eq(GrB_Matrix_new(&C2, GrB_FP32, 48, 24), 0);
            cr_assert_eq(GxB_Matrix_Option_set_INT32(C2, GxB_FORMAT, fmts[f]), 0);
            cr_assert_eq(GxB_Matrix_Option_set_FP64(C2, GxB_HYPER_SWITCH, 0.375), 0);
            cr_assert_eq(GxB_Matrix_Option_set_FP64(C2, GxB_BITMAP_SWITCH, 0.125), 0);
            char why[200];
            void *first = NULL;
            for (int q = 0; q < 3; q++) {
                tg_unsetenv("TCSPARSE_X_GRB_BACKEND");
                if (q == 2) /* fails after taking C's arrays: GrB_mxm's result all the same */
                    tg_setenv("TCSPARSE_X_GRB_BACKEND", "fail");
                else
                    tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
                cr_assert_eq(GrB_mxm(C1, NULL, NULL, sr, A, B[q], NULL), GrB_SUCCESS);
                cr_assert_eq(tcsparse_GrB_mxm(C2, NULL, NULL, sr, A, B[q], NULL), GrB_SUCCESS);
                tcsparse_GrB_stats_t st;
                tcsparse_GrB_get_stats(&st);
                cr_expect_eq(st.last_path,
                             q == 2 ? TCSPARSE_GRB_PATH_GRAPHBLAS : TCSPARSE_GRB_PATH_SPMM,
                             "fmt %d empty %d call %d: %s", fmts[f], empty, q, st.last_reason);
                cr_expect_eq(tg_compare(C2, C1, q == 2 ? 0.0 : 1e-5, why, sizeof why), 0,
                             "fmt %d empty %d call %d: %s", fmts[f], empty, q, why);
                double h, b;
                cr_assert_eq(GxB_Matrix_Option_get_FP64(C2, GxB_HYPER_SWITCH, &h), 0);
                cr_assert_eq(GxB_Matrix_Option_get_FP64(C2, GxB_BITMAP_SWITCH, &b), 0);
                cr_expect(h == 0.375 && b == 0.125, "call %d: C's switches %g %g", q, h, b);
                int32_t status = 0;
                cr_assert_eq(GxB_Matrix_Option_get_INT32(C2, GxB_SPARSITY_STATUS, &status), 0);
                cr_expect_eq(status, empty ? GxB_BITMAP : GxB_FULL, "call %d: C's form %d", q,
                             (int)status);
                if (q < 2)
                    cr_expect(strstr(st.last_reason, q == 0 ? "packed into C"
                                                            : "written into C's arrays") != NULL,
                              "fmt %d empty %d call %d: %s", fmts[f], empty, q, st.last_reason);
                if (q == 0)
                    first = c_values_at(C2);
                else if (q == 1)
                    cr_expect(c_values_at(C2) == first,
                              "fmt %d empty %d: C's values array was not reused", fmts[f], empty);
            }
            /* an iso C (one value everywhere) is not taken; the result is still right */
            tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
            cr_assert_eq(GrB_Matrix_assign_FP32(C2, NULL, NULL, 2.0f, GrB_ALL, 48, GrB_ALL, 24,
                                                NULL), GrB_SUCCESS);
            cr_assert_eq(GrB_Matrix_wait(C2, GrB_MATERIALIZE), GrB_SUCCESS);
            bool iso = false;
            cr_assert_eq(GxB_Matrix_iso(&iso, C2), GrB_SUCCESS);
            cr_expect(iso, "the assigned C should be iso");
            cr_assert_eq(GrB_mxm(C1, NULL, NULL, sr, A, B[1], NULL), GrB_SUCCESS);
            cr_assert_eq(tcsparse_GrB_mxm(C2, NULL, NULL, sr, A, B[1], NULL), GrB_SUCCESS);
            cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "iso C: %s", why);
            GrB_Matrix_free(&A);
            for (int q = 0; q < 3; q++)
                GrB_Matrix_free(&B[q]);
            GrB_Matrix_free(&C1);
            GrB_Matrix_free(&C2);
        }
}

/* The address of C's values array, C held sparse (CSR or CSC). */
static void *c_sparse_values_at(GrB_Matrix C)
{
    int32_t fmt;
    GrB_Index *p, *i, ps, is, xs;
    void *x;
    bool iso;
    double h, b;
    cr_assert_eq(GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, &fmt), 0);
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_HYPER_SWITCH, &h), 0);
    cr_assert_eq(GxB_Matrix_Option_get_FP64(C, GxB_BITMAP_SWITCH, &b), 0);
    const int row = fmt == GxB_BY_ROW;
    cr_assert_eq(row ? GxB_Matrix_unpack_CSR(C, &p, &i, &x, &ps, &is, &xs, &iso, NULL, NULL)
                     : GxB_Matrix_unpack_CSC(C, &p, &i, &x, &ps, &is, &xs, &iso, NULL, NULL), 0);
    void *at = x;
    cr_assert_eq(row ? GxB_Matrix_pack_CSR(C, &p, &i, &x, ps, is, xs, iso, false, NULL)
                     : GxB_Matrix_pack_CSC(C, &p, &i, &x, ps, is, xs, iso, false, NULL), 0);
    cr_assert_eq(GxB_Matrix_Option_set_FP64(C, GxB_HYPER_SWITCH, h), 0);
    cr_assert_eq(GxB_Matrix_Option_set_FP64(C, GxB_BITMAP_SWITCH, b), 0);
    return at;
}

/* C<M,struct> = X*Y' repeated into the same C (held sparse: its bitmap switch is high): the
 * first call packs T into the empty C,
 * the next ones write into C's values array (C holds M's pattern); the results are
 * GrB_mxm's, C's settings stay, a failure after C's arrays were taken still gives GrB_mxm's
 * result; a C with another pattern, a valued mask and an accumulator take GraphBLAS's
 * masked apply. */
Test(grb_cpu, sddmm_result_into_c)
{
    GrB_Semiring sr = GrB_PLUS_TIMES_SEMIRING_FP32;
    const int32_t fmts[2] = {GxB_BY_ROW, GxB_BY_COL};
    char why[200];
    for (int f = 0; f < 2; f++) {
        GrB_Matrix M = tg_sparse(GrB_FP32, 40, 36, 0.15, 51, f == 0 ? TG_BYROW : TG_BYCOL);
        GrB_Matrix X[3], Y = tg_full(GrB_FP32, 36, 12, 55, TG_BYROW), C1, C2;
        for (int q = 0; q < 3; q++)
            X[q] = tg_full(GrB_FP32, 40, 12, 52 + q, TG_BYROW);
        cr_assert_eq(GrB_Matrix_new(&C1, GrB_FP32, 40, 36), 0);
        cr_assert_eq(GrB_Matrix_new(&C2, GrB_FP32, 40, 36), 0);
        cr_assert_eq(GxB_Matrix_Option_set_INT32(C1, GxB_FORMAT, fmts[f]), 0);
        cr_assert_eq(GxB_Matrix_Option_set_INT32(C2, GxB_FORMAT, fmts[f]), 0);
        cr_assert_eq(GxB_Matrix_Option_set_FP64(C2, GxB_HYPER_SWITCH, 0.375), 0);
        cr_assert_eq(GxB_Matrix_Option_set_FP64(C2, GxB_BITMAP_SWITCH, 0.875), 0);
        void *first = NULL;
        for (int q = 0; q < 3; q++) {
            tg_setenv("TCSPARSE_X_GRB_BACKEND", q == 2 ? "fail" : "host");
            cr_assert_eq(GrB_mxm(C1, M, NULL, sr, X[q], Y, GrB_DESC_ST1), GrB_SUCCESS);
            cr_assert_eq(tcsparse_GrB_mxm(C2, M, NULL, sr, X[q], Y, GrB_DESC_ST1), GrB_SUCCESS);
            tcsparse_GrB_stats_t st;
            tcsparse_GrB_get_stats(&st);
            cr_expect_eq(st.last_path,
                         q == 2 ? TCSPARSE_GRB_PATH_GRAPHBLAS : TCSPARSE_GRB_PATH_SDDMM,
                         "fmt %d call %d: %s", fmts[f], q, st.last_reason);
            cr_expect_eq(tg_compare(C2, C1, q == 2 ? 0.0 : 1e-5, why, sizeof why), 0,
                         "fmt %d call %d: %s", fmts[f], q, why);
            double h, b;
            int32_t fmt;
            cr_assert_eq(GxB_Matrix_Option_get_FP64(C2, GxB_HYPER_SWITCH, &h), 0);
            cr_assert_eq(GxB_Matrix_Option_get_FP64(C2, GxB_BITMAP_SWITCH, &b), 0);
            cr_assert_eq(GxB_Matrix_Option_get_INT32(C2, GxB_FORMAT, &fmt), 0);
            cr_expect(h == 0.375 && b == 0.875 && fmt == fmts[f],
                      "call %d: C's switches %g %g, format %d", q, h, b, (int)fmt);
            if (q < 2)
                cr_expect(strstr(st.last_reason, q == 0 ? "packed into C"
                                                        : "written into C's arrays") != NULL,
                          "fmt %d call %d: %s", fmts[f], q, st.last_reason);
            if (q == 0)
                first = c_sparse_values_at(C2);
            else if (q == 1)
                cr_expect(c_sparse_values_at(C2) == first,
                          "fmt %d: C's values array was not written in place", fmts[f]);
        }
        tg_setenv("TCSPARSE_X_GRB_BACKEND", "host");
        /* C with one more entry than M's pattern: the masked apply keeps it */
        GrB_Index mi[1] = {0}, mj[1] = {0}, done = 0;
        for (GrB_Index r = 0; r < 40 && !done; r++)
            for (GrB_Index c = 0; c < 36 && !done; c++) {
                float v;
                if (GrB_Matrix_extractElement_FP32(&v, M, r, c) == GrB_NO_VALUE) {
                    mi[0] = r, mj[0] = c, done = 1;
                }
            }
        cr_assert(done, "fmt %d: M's pattern has no free position for the extra entry", fmts[f]);
        cr_assert_eq(GrB_Matrix_setElement_FP32(C1, 7.0f, mi[0], mj[0]), 0);
        cr_assert_eq(GrB_Matrix_setElement_FP32(C2, 7.0f, mi[0], mj[0]), 0);
        cr_assert_eq(GrB_mxm(C1, M, NULL, sr, X[0], Y, GrB_DESC_ST1), GrB_SUCCESS);
        cr_assert_eq(tcsparse_GrB_mxm(C2, M, NULL, sr, X[0], Y, GrB_DESC_ST1), GrB_SUCCESS);
        cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "extra entry: %s", why);
        /* valued mask (explicit zeros of M drop out) and an accumulator */
        cr_assert_eq(GrB_mxm(C1, M, NULL, sr, X[1], Y, GrB_DESC_T1), GrB_SUCCESS);
        cr_assert_eq(tcsparse_GrB_mxm(C2, M, NULL, sr, X[1], Y, GrB_DESC_T1), GrB_SUCCESS);
        cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "valued mask: %s", why);
        cr_assert_eq(GrB_mxm(C1, M, GrB_PLUS_FP32, sr, X[2], Y, GrB_DESC_ST1), GrB_SUCCESS);
        cr_assert_eq(tcsparse_GrB_mxm(C2, M, GrB_PLUS_FP32, sr, X[2], Y, GrB_DESC_ST1),
                     GrB_SUCCESS);
        cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "accumulator: %s", why);
        /* replace: T packed into C whatever C held */
        cr_assert_eq(GrB_mxm(C1, M, NULL, sr, X[0], Y, GrB_DESC_RST1), GrB_SUCCESS);
        cr_assert_eq(tcsparse_GrB_mxm(C2, M, NULL, sr, X[0], Y, GrB_DESC_RST1), GrB_SUCCESS);
        cr_expect_eq(tg_compare(C2, C1, 1e-5, why, sizeof why), 0, "replace: %s", why);
        GrB_Matrix_free(&M);
        GrB_Matrix_free(&Y);
        for (int q = 0; q < 3; q++)
            GrB_Matrix_free(&X[q]);
        GrB_Matrix_free(&C1);
        GrB_Matrix_free(&C2);
    }
}
