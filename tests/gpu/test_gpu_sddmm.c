#define _POSIX_C_SOURCE 200809L /* setenv */
/* SDDMM through the public API on the GPU, against a CPU reference in double: on the tensor
 * cores every precision (3xTF32, TF32, FP16 with FP16 or FP32 C) and schedule (base, chunked) for
 * K in {1, 8, 17, 32, 64, 128, 256} and beyond one staged tile of A, on generated patterns of
 * every shape class and, when TC_DATA_DIR is set, real ones.  On the forced tensor-core
 * route, the operands' padding, the rows of A whose rows of C are empty and the columns of B
 * outside C's pattern are NaN: the kernel must never let them reach a written nonzero.  The
 * CUDA-core SDDMM gets the same on its forced route, and the measured route times it too.
 * One file over 600 lines: every test, the measurement and tuning ones too, runs its calls
 * through run_case, and the two of those are too few for a program of their own. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "halfconv.h"
#include "testutil.h"
#include "gpu_test.h"

typedef struct {
    int64_t K;
    cudaDataType ab, c; /* A/B type, C type */
    int tf32;           /* FP32 only */
    tcsparseRoute_t route;
    int idx64, base;
    int lda_pad, ldb_pad;
    float alpha, beta;
    int device_ptrs;
    int preprocess;
    int repeat;   /* executions, each on C's initial values and checked; 0 means 1 */
    int explore;  /* 1: the executions must measure the paths and settle (route.c) */
    int trans;    /* bit 0: A given as its transpose (K x M column-major, opA = TRANSPOSE);
                   * bit 1: B as its transpose (N x K row-major, opB = TRANSPOSE); the same
                   * arrays either way */
} sddmm_case;

enum { SENTINELS = 3 }; /* values after C's nnz that must survive */

static double bound_for(const sddmm_case *k)
{
    if (k->ab != CUDA_R_32F)
        return 2e-2;
    return k->tf32 ? 5e-3 : 1e-5;
}

static int forced_tc(tcsparseRoute_t r)
{
    return r == TCSPARSE_ROUTE_TC || r == TCSPARSE_ROUTE_TC_BASE || r == TCSPARSE_ROUTE_TC_BALANCED;
}

static uint64_t seed = 4242;
static double urand(void) { return tc_test_rand_uniform(&seed); }

/* Runs one case with C's pattern m and checks it; returns the relative error and, when path
 * is not NULL, the path taken. */
static char last_kernel[64]; /* the kernel of run_case's last execution */
static tc_test_call_log call_log; /* what run_case's executions did (the tuning's test) */

static double run_case(const tc_csr *m, const sddmm_case *k, const char *label, tcsparsePath_t *path)
{
    const int64_t M = m->rows, N = m->cols, nnz = m->nnz, K = k->K;
    const int64_t lda = K + k->lda_pad, ldb = K + k->ldb_pad;
    const size_t is = k->idx64 ? 8 : 4;
    /* the forced kernels must never read what no written nonzero uses */
    const int poison = forced_tc(k->route) || k->route == TCSPARSE_ROUTE_CUDA_CORE;
    /* which rows and columns of C hold nonzeros */
    char *row_used = calloc((size_t)M + 1, 1), *col_used = calloc((size_t)N + 1, 1);
    for (int64_t r = 0; r < M; r++)
        for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
            row_used[r] = 1;
            col_used[m->col[e]] = 1;
        }
    /* A row-major M x K, B column-major K x N; reference copies hold the rounded values */
    void *h_A = malloc(esize(k->ab) * (size_t)(M * lda + 1));
    void *h_B = malloc(esize(k->ab) * (size_t)(N * ldb + 1));
    tc_ref_dense A = {M, K, K, TCSPARSE_ORDER_ROW, malloc(sizeof(double) * (size_t)(M * K + 1))};
    tc_ref_dense B = {K, N, K, TCSPARSE_ORDER_COL, malloc(sizeof(double) * (size_t)(K * N + 1))};
    for (int64_t i = 0; i < M; i++)
        for (int64_t q = 0; q < lda; q++) {
            int live = q < K && (row_used[i] || !poison);
            double v = put(h_A, (size_t)(i * lda + q), k->ab, live ? urand() : NAN);
            if (q < K)
                A.val[i * K + q] = live ? v : 0.0;
        }
    for (int64_t j = 0; j < N; j++)
        for (int64_t q = 0; q < ldb; q++) {
            int live = q < K && (col_used[j] || !poison);
            double v = put(h_B, (size_t)(j * ldb + q), k->ab, live ? urand() : NAN);
            if (q < K)
                B.val[j * K + q] = live ? v : 0.0;
        }
    /* C in CSR with the requested index width and base; old values rounded to C's type */
    void *h_off = malloc(is * (size_t)(M + 1)), *h_idx = malloc(is * (size_t)(nnz + 1));
    void *h_val = malloc(esize(k->c) * (size_t)(nnz + SENTINELS));
    tc_csr ref_c = *m;
    ref_c.val = malloc(sizeof(double) * (size_t)(nnz + 1));
    for (int64_t r = 0; r <= M; r++)
        put_index(h_off, (size_t)r, k->idx64, m->row_off[r] + k->base);
    for (int64_t e = 0; e < nnz; e++) {
        put_index(h_idx, (size_t)e, k->idx64, m->col[e] + k->base);
        ref_c.val[e] = put(h_val, (size_t)e, k->c, k->beta == 0.0f ? NAN : urand());
    }
    for (int s = 0; s < SENTINELS; s++)
        put(h_val, (size_t)(nnz + s), k->c, 7.0);
    double *ref = malloc(sizeof(double) * (size_t)(nnz + 1));
    tc_ref_sddmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, k->alpha, &A,
                 &B, k->beta, &ref_c, ref);

    void *d_off = to_device(h_off, is * (size_t)(M + 1)), *d_idx = to_device(h_idx, is * (size_t)nnz);
    void *d_val = to_device(h_val, esize(k->c) * (size_t)(nnz + SENTINELS));
    void *d_A = to_device(h_A, esize(k->ab) * (size_t)(M * lda));
    void *d_B = to_device(h_B, esize(k->ab) * (size_t)(N * ldb));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t C;
    tcsparseDnMatDescr_t dA, dB;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tcsparseIndexType_t it = k->idx64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    cr_assert_eq(tcsparseCreateCsr(&C, M, N, nnz, d_off, d_idx, d_val, it, it,
                                   (tcsparseIndexBase_t)k->base, k->c), 0, "%s",
                 tcsparseGetLastErrorMessage());
    if (k->trans & 1)
        cr_assert_eq(tcsparseCreateDnMat(&dA, K, M, lda, d_A, k->ab, TCSPARSE_ORDER_COL), 0);
    else
        cr_assert_eq(tcsparseCreateDnMat(&dA, M, K, lda, d_A, k->ab, TCSPARSE_ORDER_ROW), 0);
    if (k->trans & 2)
        cr_assert_eq(tcsparseCreateDnMat(&dB, N, K, ldb, d_B, k->ab, TCSPARSE_ORDER_ROW), 0);
    else
        cr_assert_eq(tcsparseCreateDnMat(&dB, K, N, ldb, d_B, k->ab, TCSPARSE_ORDER_COL), 0);
    tcsparseSetRoute(h, k->route);
    tcsparseSetMathMode(h, k->tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT);
    float *d_ab = NULL;
    const void *pa = &k->alpha, *pb = &k->beta;
    if (k->device_ptrs) {
        float ab[2] = {k->alpha, k->beta};
        d_ab = to_device(ab, sizeof ab);
        tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE);
        pa = d_ab;
        pb = d_ab + 1;
    }
    const tcsparseOperation_t nt = TCSPARSE_OPERATION_NON_TRANSPOSE;
    const tcsparseOperation_t opA = k->trans & 1 ? TCSPARSE_OPERATION_TRANSPOSE : nt;
    const tcsparseOperation_t opB = k->trans & 2 ? TCSPARSE_OPERATION_TRANSPOSE : nt;
    size_t bsz = 0;
    tcsparseStatus_t st = tcsparseSDDMM_bufferSize(h, opA, opB, pa, dA, dB, pb, C, CUDA_R_32F,
                                                   TCSPARSE_SDDMM_ALG_DEFAULT, &bsz);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: bufferSize: %s", label, tcsparseGetLastErrorMessage());
    void *buf = NULL;
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    if (k->preprocess) {
        st = tcsparseSDDMM_preprocess(h, opA, opB, pa, dA, dB, pb, C, CUDA_R_32F,
                                      TCSPARSE_SDDMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: preprocess: %s", label, tcsparseGetLastErrorMessage());
    }
    const size_t vbytes = esize(k->c) * (size_t)(nnz + SENTINELS);
    void *h_val_init = malloc(vbytes);
    memcpy(h_val_init, h_val, vbytes);
    double *out = malloc(sizeof(double) * (size_t)(nnz + 1));
    double err = 0;
    tc_test_measuring measuring = {0, 0};
    tcsparseRouteInfo_t ri;
    tc_test_call_log_reset(&call_log);
    for (int rep = 0; rep < (k->repeat > 0 ? k->repeat : 1); rep++) {
        if (rep > 0) /* each execution from C's initial values (NaN where beta = 0) */
            cr_assert_eq(cudaMemcpy(d_val, h_val_init, vbytes, cudaMemcpyHostToDevice), cudaSuccess);
        st = tcsparseSDDMM(h, opA, opB, pa, dA, dB, pb, C, CUDA_R_32F, TCSPARSE_SDDMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: %s", label, tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: kernel failed", label);
        tcsparseGetLastRoute(h, &ri);
        snprintf(last_kernel, sizeof last_kernel, "%s", ri.kernel);
        if (k->route == TCSPARSE_ROUTE_TC_BASE)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "%s: took %s (%s)", label, ri.kernel, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC_BALANCED)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BALANCED, "%s: took %s (%s)", label, ri.kernel, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC)
            cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "%s: took %s (%s)", label, ri.kernel, ri.reason);
        if (k->route == TCSPARSE_ROUTE_CUDA_CORE)
            cr_assert_eq(ri.path, TCSPARSE_PATH_CUDA_CORE, "%s: took %s (%s)", label, ri.kernel, ri.reason);

        cr_assert_eq(cudaMemcpy(h_val, d_val, esize(k->c) * (size_t)(nnz + SENTINELS),
                                cudaMemcpyDeviceToHost), cudaSuccess);
        tc_test_call_log_note(&call_log, &ri, h_val, vbytes);
        for (int64_t e = 0; e < nnz; e++) {
            out[e] = get(h_val, (size_t)e, k->c);
            cr_assert(isfinite(out[e]), "%s: C value %lld = %g not written or not finite (%s)", label,
                      (long long)e, out[e], ri.kernel);
        }
        for (int s = 0; s < SENTINELS; s++)
            cr_assert_eq(get(h_val, (size_t)(nnz + s), k->c), 7.0, "%s: value past nnz overwritten", label);
        err = tc_rel_err(ref, out, (size_t)nnz);
        if (path != NULL)
            *path = ri.path;
        cr_assert(err <= bound_for(k), "%s: call %d: relative error %.3e > %.1e (%s; %s)", label, rep,
                  err, bound_for(k), ri.kernel, ri.reason);
        tc_test_measuring_note(&measuring, &ri);
    }
    if (k->explore > 0)
        TC_ASSERT_MEASURED_AND_SETTLED(&measuring, &ri, label);
    free(h_val_init);

    cudaFree(buf); cudaFree(d_ab);
    tcsparseDestroySpMat(C); tcsparseDestroyDnMat(dA); tcsparseDestroyDnMat(dB); tcsparseDestroy(h);
    cudaFree(d_off); cudaFree(d_idx); cudaFree(d_val); cudaFree(d_A); cudaFree(d_B);
    free(row_used); free(col_used); free(h_A); free(h_B); free(A.val); free(B.val);
    free(h_off); free(h_idx); free(h_val); free(ref_c.val); free(ref); free(out);
    return err;
}

static sddmm_case base_case(int64_t K)
{
    sddmm_case k = {.K = K, .ab = CUDA_R_32F, .c = CUDA_R_32F, .route = TCSPARSE_ROUTE_TC_BASE,
                    .alpha = 1.25f, .beta = 0.0f, .preprocess = 1};
    return k;
}

/* Every precision x schedule on one pattern for a list of K. */
static void sweep(const tc_csr *m, const char *name, const int64_t *ks, int nk)
{
    const struct { cudaDataType ab, c; int tf32; const char *n; } precs[] = {
        {CUDA_R_32F, CUDA_R_32F, 0, "3xtf32"}, {CUDA_R_32F, CUDA_R_32F, 1, "tf32"},
        {CUDA_R_16F, CUDA_R_16F, 0, "f16"},    {CUDA_R_16F, CUDA_R_32F, 0, "f16->f32"}};
    for (int i = 0; i < nk; i++)
        for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
            for (int bal = 0; bal < 2; bal++) {
                sddmm_case k = base_case(ks[i]);
                k.ab = precs[p].ab;
                k.c = precs[p].c;
                k.tf32 = precs[p].tf32;
                k.route = bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
                k.beta = (i + p + bal) % 2 ? -0.5f : 0.0f;
                char label[160];
                snprintf(label, sizeof label, "%s K=%lld %s %s", name, (long long)ks[i],
                         precs[p].n, bal ? "balanced" : "base");
                run_case(m, &k, label, NULL);
            }
}

static const int64_t all_k[] = {1, 8, 17, 32, 64, 128, 256};

Test(gpu_sddmm, rmat_power_law)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:10:8", &m);
    sweep(&m, "rmat:10:8", all_k, 7);
    tc_csr_free(&m);
}

Test(gpu_sddmm, uniform_odd_sizes)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    cr_assert_eq(tc_gen_uniform(1001, 517, 9, 7, &m), 0);
    sweep(&m, "uniform 1001x517", all_k, 7);
    tc_csr_free(&m);
}

Test(gpu_sddmm, banded_and_blocks)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    static const int64_t ks[] = {17, 128};
    cr_assert_eq(tc_gen_banded(1999, 6, 3, &m), 0);
    sweep(&m, "banded", ks, 2);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_blocks(2003, 16, 300, 5, &m), 0);
    sweep(&m, "blocks", ks, 2);
    tc_csr_free(&m);
}

/* The wide-L1 instance (sddmm_launch.cu, wide_l1) by its default rule: plain TF32 on a plan
 * of fewer than 10 nonzeros a block and K > 32; not for dense blocks, 3xTF32 or K <= 32.
 * Every call is checked against the CPU reference as well, base and balanced, K = 17, 33
 * and 128. */
Test(gpu_sddmm, wide_l1_rule)
{
    TC_REQUIRE_GPU();
    if (getenv("TCSPARSE_X_SDDMM_WIDE_L1") != NULL || getenv("TCSPARSE_X_SDDMM_PIPE") != NULL ||
        getenv("TCSPARSE_X_SDDMM_PIPE_STAGES") != NULL)
        cr_skip_test("a kernel knob is set in the environment");
    static const struct {
        const char *spec;
        int tf32, wide;
    } cases[] = {
        {"uniform:3001:2999:9", 1, 1}, /* 8 nonzeros a block: sparse */
        {"uniform:3001:2999:9", 0, 0}, /* 3xTF32 */
        {"banded:3001:6", 1, 0},       /* dense blocks */
    };
    static const int64_t ks[] = {17, 33, 128};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_csr m;
        gen_or_fail(cases[c].spec, &m);
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (int bal = 0; bal < 2; bal++) {
                sddmm_case k = base_case(ks[ki]);
                k.tf32 = cases[c].tf32;
                k.route = bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
                k.beta = bal ? 0.5f : 0.0f;
                char label[160];
                snprintf(label, sizeof label, "%s K=%lld %s %s", cases[c].spec, (long long)ks[ki],
                         cases[c].tf32 ? "tf32" : "3xtf32", bal ? "balanced" : "base");
                run_case(&m, &k, label, NULL);
                const int wide = strstr(last_kernel, "_pipe_l1") != NULL;
                cr_assert_eq(wide, cases[c].wide && ks[ki] > 32, "%s: ran %s", label, last_kernel);
            }
        tc_csr_free(&m);
    }
}

/* 333 rows: row 17 holds every one of 4,099 columns (longer than a CUDA-core unit), every
 * third row is empty, the others hold 2 or 3 nonzeros. */
static void dense_row_pattern(tc_csr *m)
{
    const int64_t M = 333, N = 4099;
    *m = (tc_csr){.rows = M, .cols = N};
    m->row_off = calloc((size_t)M + 1, sizeof *m->row_off);
    m->col = malloc(sizeof *m->col * (size_t)(N + M * 3));
    m->val = malloc(sizeof *m->val * (size_t)(N + M * 3));
    int64_t e = 0;
    for (int64_t r = 0; r < M; r++) {
        if (r == 17)
            for (int64_t c = 0; c < N; c++) {
                m->col[e] = (int32_t)c;
                m->val[e++] = 1.0;
            }
        else if (r % 3 != 0)
            for (int64_t c = (r * 7) % 11; c < N; c += 1500) {
                m->col[e] = (int32_t)c;
                m->val[e++] = 1.0;
            }
        m->row_off[r + 1] = e;
    }
    m->nnz = e;
}

/* One dense row (a window of hundreds of blocks: many groups, split into chunks), every
 * third row empty, and K beyond one staged tile of A (FP32: 256, FP16: 512 per tile). */
Test(gpu_sddmm, dense_row_empty_rows_long_k)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    dense_row_pattern(&m);
    /* 200, 512: the pipelined kernel's longest streams (a warp carries the dense row's
     * blocks across many pairs; FP16 at its largest staged K); 600, 1100: the other kernel */
    static const int64_t ks[] = {33, 200, 512, 600, 1100};
    sweep(&m, "dense row", ks, 5);
    tc_csr_free(&m);
}

/* Index widths and bases, pointer modes, misaligned leading dimensions (the scalar load
 * paths), preprocess or not, the TC route without a kernel named. */
Test(gpu_sddmm, widths_bases_pointer_modes_layouts)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:9:6", &m);
    for (int w = 0; w < 2; w++)
        for (int b = 0; b < 2; b++)
            for (int dev = 0; dev < 2; dev++) {
                sddmm_case k = base_case(45);
                k.idx64 = w;
                k.base = b;
                k.lda_pad = 3 * dev;
                k.ldb_pad = 5 * b;
                k.beta = 0.75f;
                k.device_ptrs = dev;
                k.preprocess = w;
                k.ab = k.c = (w + b) % 2 ? CUDA_R_16F : CUDA_R_32F;
                k.route = b ? TCSPARSE_ROUTE_TC : TCSPARSE_ROUTE_TC_BALANCED;
                char label[96];
                snprintf(label, sizeof label, "idx64=%d base=%d device_ptrs=%d", w, b, dev);
                run_case(&m, &k, label, NULL);
            }
    tc_csr_free(&m);
}

/* The automatic route at its two extremes: dense 16x16 blocks (256 nonzeros per non-empty
 * window) and one nonzero per window (the 16-row A tile and the 16x8 products almost all
 * wasted: cuSPARSE); both correct. */
Test(gpu_sddmm, auto_route_extremes)
{
    TC_REQUIRE_GPU();
    for (int i = 0; i < 2; i++) {
        tc_csr m;
        const char *name = i == 0 ? "blocks:2048:16:200" : "one nonzero per window";
        if (i == 0) {
            gen_or_fail(name, &m);
        } else {
            const int64_t n = 4096;
            m.rows = m.cols = n;
            m.nnz = n / 16;
            m.row_off = calloc((size_t)n + 1, sizeof *m.row_off);
            m.col = malloc(sizeof *m.col * (size_t)m.nnz);
            m.val = malloc(sizeof *m.val * (size_t)m.nnz);
            for (int64_t r = 0, e = 0; r < n; r++) {
                if (r % 16 == 5) {
                    m.col[e] = (int32_t)((r * 7) % n);
                    m.val[e++] = 1.0;
                }
                m.row_off[r + 1] = e;
            }
        }
        sddmm_case k = base_case(64);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.beta = 0.5f;
        tcsparsePath_t path = TCSPARSE_PATH_NONE;
        run_case(&m, &k, name, &path);
        /* Both are small and latency-bound: which path the calibrated model picks is a
         * performance guess (on the H100 it sent the dense blocks to cuSPARSE and the single
         * nonzeros to tensor cores), so the route is logged and the results are checked. */
        cr_log_info("%s: route %d", name, (int)path);
        tc_csr_free(&m);
    }
}

/* A column-major A (or a transposed operand) is not the kernel's layout: cuSPARSE, decided
 * before any launch, with a correct result, even on the forced tensor-core route. */
Test(gpu_sddmm, ineligible_goes_to_cusparse)
{
    TC_REQUIRE_GPU();
    const int64_t M = 64, N = 48, K = 20;
    int32_t off[65], col[128];
    float hA[64 * 20], hB[20 * 48], hC[128], ref[128];
    int nnz = 0;
    for (int r = 0; r < M; r++) {
        off[r] = nnz;
        for (int c = r % 3; c < N && nnz < 128; c += 23)
            col[nnz++] = c;
    }
    off[M] = nnz;
    for (int i = 0; i < M * K; i++) hA[i] = (float)urand(); /* column-major: (r, q) at q*M + r */
    for (int i = 0; i < K * N; i++) hB[i] = (float)urand(); /* column-major: (q, c) at c*K + q */
    for (int e = 0; e < nnz; e++) hC[e] = (float)urand();
    for (int r = 0; r < M; r++)
        for (int e = off[r]; e < off[r + 1]; e++) {
            double s = 0;
            for (int q = 0; q < K; q++)
                s += (double)hA[q * M + r] * hB[col[e] * K + q];
            ref[e] = (float)(2.0 * s + 0.5 * hC[e]);
        }
    void *dOff = to_device(off, sizeof off), *dCol = to_device(col, sizeof col);
    void *dC = to_device(hC, sizeof hC), *dA = to_device(hA, sizeof hA), *dB = to_device(hB, sizeof hB);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t C;
    tcsparseDnMatDescr_t A, B;
    tcsparseCreate(&h);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    tcsparseCreateCsr(&C, M, N, nnz, dOff, dCol, dC, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    tcsparseCreateDnMat(&A, M, K, M, dA, CUDA_R_32F, TCSPARSE_ORDER_COL);
    tcsparseCreateDnMat(&B, K, N, K, dB, CUDA_R_32F, TCSPARSE_ORDER_COL);
    float alpha = 2, beta = 0.5f;
    size_t sz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSDDMM_bufferSize(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, &sz), 0,
                 "%s", tcsparseGetLastErrorMessage());
    cudaMalloc(&buf, sz + 1);
    cr_assert_eq(tcsparseSDDMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0, "%s",
                 tcsparseGetLastErrorMessage());
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    cr_assert_eq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s", ri.kernel);
    cr_assert(strstr(ri.reason, "layout") != NULL, "reason: %s", ri.reason);
    cudaMemcpy(hC, dC, sizeof hC, cudaMemcpyDeviceToHost);
    for (int e = 0; e < nnz; e++)
        cr_assert_float_eq(hC[e], ref[e], 1e-4f, "value %d: %g, want %g", e, hC[e], ref[e]);
    cudaFree(buf);
    tcsparseDestroySpMat(C); tcsparseDestroyDnMat(A); tcsparseDestroyDnMat(B); tcsparseDestroy(h);
    cudaFree(dOff); cudaFree(dCol); cudaFree(dC); cudaFree(dA); cudaFree(dB);
}

/* A transposed dense operand in the other layout is the layout the kernel reads (the same
 * array): op(A) row-major through opA = TRANSPOSE on a column-major A, op(B) column-major
 * through opB = TRANSPOSE on a row-major B, each alone and both, every precision, both
 * kernels, padded leading dimensions. */
Test(gpu_sddmm, transposed_operands)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    cr_assert_eq(tc_gen_uniform(700, 333, 9, 5, &m), 0);
    const struct { cudaDataType ab, c; int tf32; } precs[] = {
        {CUDA_R_32F, CUDA_R_32F, 0}, {CUDA_R_32F, CUDA_R_32F, 1}, {CUDA_R_16F, CUDA_R_16F, 0},
        {CUDA_R_16F, CUDA_R_32F, 0}};
    static const int64_t ks[] = {17, 64, 128};
    int i = 0;
    for (int t = 1; t <= 3; t++)
        for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++, i++) {
            sddmm_case k = base_case(ks[i % 3]);
            k.ab = precs[p].ab;
            k.c = precs[p].c;
            k.tf32 = precs[p].tf32;
            k.trans = t;
            k.route = i % 2 ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
            k.lda_pad = i % 3 == 1 ? 3 : 0;
            k.ldb_pad = i % 3 == 2 ? 5 : 0;
            k.beta = i % 2 ? 0.5f : 0.0f;
            char label[96];
            snprintf(label, sizeof label, "trans=%d K=%lld prec=%zu", t, (long long)k.K, p);
            run_case(&m, &k, label, NULL);
        }
    tc_csr_free(&m);
}

/* C with no nonzero: success and nothing written, on every route. */
Test(gpu_sddmm, empty_pattern)
{
    TC_REQUIRE_GPU();
    tc_csr m = {.rows = 50, .cols = 40, .nnz = 0};
    m.row_off = calloc(51, sizeof *m.row_off);
    m.col = malloc(sizeof *m.col);
    m.val = malloc(sizeof *m.val);
    for (int r = 0; r <= TCSPARSE_ROUTE_CUDA_CORE; r++) {
        sddmm_case k = base_case(32);
        k.route = (tcsparseRoute_t)r;
        k.beta = 0.5f;
        char label[64];
        snprintf(label, sizeof label, "empty pattern, route %d", r);
        run_case(&m, &k, label, NULL);
    }
    tc_csr_free(&m);
}

/* CsrSetPointers to another pattern with the same nnz rebuilds the plan of C. */
Test(gpu_sddmm, set_pointers_rebuilds_plan)
{
    TC_REQUIRE_GPU();
    const int64_t n = 300, K = 24;
    tc_csr m1, m2;
    cr_assert_eq(tc_gen_banded(n, 3, 1, &m1), 0);
    m2 = m1; /* same row lengths, columns c -> (c + 150) mod n, kept sorted per row */
    m2.row_off = malloc(sizeof *m2.row_off * (size_t)(n + 1));
    m2.col = malloc(sizeof *m2.col * (size_t)m1.nnz);
    m2.val = NULL;
    memcpy(m2.row_off, m1.row_off, sizeof *m2.row_off * (size_t)(n + 1));
    for (int64_t r = 0; r < n; r++) {
        int64_t b = m1.row_off[r], e = m1.row_off[r + 1];
        for (int64_t i = b; i < e; i++) {
            int32_t c = (int32_t)((m1.col[i] + 150) % n), j = (int32_t)i;
            while (j > b && m2.col[j - 1] > c) {
                m2.col[j] = m2.col[j - 1];
                j--;
            }
            m2.col[j] = c;
        }
    }
    int32_t *o1 = malloc(4 * (size_t)(n + 1)), *o2 = malloc(4 * (size_t)(n + 1));
    for (int64_t r = 0; r <= n; r++) {
        o1[r] = (int32_t)m1.row_off[r];
        o2[r] = (int32_t)m2.row_off[r];
    }
    float *hA = malloc(4 * (size_t)(n * K)), *hB = malloc(4 * (size_t)(n * K));
    float *hC = malloc(4 * (size_t)m1.nnz);
    for (int64_t i = 0; i < n * K; i++) {
        hA[i] = (float)urand();
        hB[i] = (float)urand();
    }
    void *dO1 = to_device(o1, 4 * (size_t)(n + 1)), *dC1 = to_device(m1.col, 4 * (size_t)m1.nnz);
    void *dO2 = to_device(o2, 4 * (size_t)(n + 1)), *dC2 = to_device(m2.col, 4 * (size_t)m1.nnz);
    void *dV = to_device(hC, 4 * (size_t)m1.nnz);
    void *dA = to_device(hA, 4 * (size_t)(n * K)), *dB = to_device(hB, 4 * (size_t)(n * K));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t C;
    tcsparseDnMatDescr_t A, B;
    tcsparseCreate(&h);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE);
    tcsparseCreateCsr(&C, n, n, m1.nnz, dO1, dC1, dV, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    tcsparseCreateDnMat(&A, n, K, K, dA, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&B, K, n, K, dB, CUDA_R_32F, TCSPARSE_ORDER_COL);
    float one = 1, zero = 0;
    for (int step = 0; step < 2; step++) {
        const tc_csr *m = step ? &m2 : &m1;
        if (step)
            cr_assert_eq(tcsparseCsrSetPointers(C, dO2, dC2, dV), 0);
        cr_assert_eq(tcsparseSDDMM(h, 0, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, NULL), 0, "%s",
                     tcsparseGetLastErrorMessage());
        cudaMemcpy(hC, dV, 4 * (size_t)m1.nnz, cudaMemcpyDeviceToHost);
        double num = 0, den = 0;
        for (int64_t r = 0; r < n; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                double s = 0;
                for (int64_t q = 0; q < K; q++)
                    s += (double)hA[r * K + q] * hB[m->col[e] * K + q];
                num += (hC[e] - s) * (hC[e] - s);
                den += s * s;
            }
        cr_assert(sqrt(num / den) < 1e-5, "step %d: relative error %g", step, sqrt(num / den));
    }
    tcsparseDestroySpMat(C); tcsparseDestroyDnMat(A); tcsparseDestroyDnMat(B); tcsparseDestroy(h);
    cudaFree(dO1); cudaFree(dC1); cudaFree(dO2); cudaFree(dC2); cudaFree(dV); cudaFree(dA); cudaFree(dB);
    free(o1); free(o2); free(hA); free(hB); free(hC);
    free(m2.row_off); free(m2.col);
    tc_csr_free(&m1);
}

/* Real matrices from TC_DATA_DIR (small ones, to keep the CPU reference quick). */
Test(gpu_sddmm, shared_matrices, .timeout = 600)
{
    TC_REQUIRE_GPU();
    const char *dir = getenv("TC_DATA_DIR");
    if (dir == NULL)
        cr_skip_test("TC_DATA_DIR not set: no real matrices");
    static const char *names[] = {"cora", "citeseer_features", "PROTEINS_full", "mdual",
                                  "bcsstk13", "dlmc_transformer_mp0.7_dec0_ffn1", "lp_afiro",
                                  "west0067", "ca-GrQc", "Wiki-Vote"};
    int ran = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, names[i]);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fclose(f);
        tc_csr m;
        cr_assert_eq(tc_csr_load(path, &m, err, sizeof err), 0, "%s", err);
        static const int64_t ks[] = {32, 128};
        sweep(&m, names[i], ks, 2);
        tc_csr_free(&m);
        ran++;
    }
    if (ran == 0)
        cr_skip_test("none of the listed matrices found in %s", dir);
}

/* The CUDA-core SDDMM (kernels/sddmm/sddmm_csr.cu) on the forced route, the operands' padding
 * and the rows and columns no nonzero uses NaN: every type pair; K from 1 to 600 (every group
 * width, several steps a lane); the 4-element loads and the scalar ones (K not a multiple of 4,
 * padded leading dimensions); transposed operands; index widths and bases; both pointer modes;
 * beta 0 over a NaN C and beta != 0; a row longer than a unit of the schedule (its pieces) and
 * empty rows. */
Test(gpu_sddmm, cuda_core_kernel)
{
    TC_REQUIRE_GPU();
    const struct { cudaDataType ab, c; const char *n; } precs[] = {
        {CUDA_R_32F, CUDA_R_32F, "f32"}, {CUDA_R_16F, CUDA_R_16F, "f16"},
        {CUDA_R_16F, CUDA_R_32F, "f16->f32"}};
    static const int64_t ks[] = {1, 8, 17, 32, 64, 128, 256, 600};
    tc_csr m;
    gen_or_fail("rmat:10:8", &m);
    int i = 0;
    for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
        for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++, i++) {
            sddmm_case k = base_case(ks[q]);
            k.route = TCSPARSE_ROUTE_CUDA_CORE;
            k.ab = precs[p].ab;
            k.c = precs[p].c;
            k.beta = i % 2 ? -0.5f : 0.0f;
            const size_t pad = (q + p) % 3; /* each type meets each padding over the K */
            k.lda_pad = pad == 1 ? 3 : 0;
            k.ldb_pad = pad == 2 ? 5 : 0;
            k.idx64 = (i / 2) % 2;
            k.base = (i / 3) % 2;
            k.device_ptrs = i % 5 == 0;
            k.preprocess = (i / 4) % 2;
            k.trans = i % 4;
            char label[128];
            snprintf(label, sizeof label, "cuda-core rmat K=%lld %s pads %d/%d trans=%d",
                     (long long)k.K, precs[p].n, k.lda_pad, k.ldb_pad, k.trans);
            run_case(&m, &k, label, NULL);
        }
    tc_csr_free(&m);
    dense_row_pattern(&m);
    for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++) {
        sddmm_case k = base_case(p == 0 ? 128 : 33);
        k.route = TCSPARSE_ROUTE_CUDA_CORE;
        k.ab = precs[p].ab;
        k.c = precs[p].c;
        k.beta = p == 1 ? 0.25f : 0.0f;
        k.repeat = 2; /* the second call on the schedule the first built */
        char label[96];
        snprintf(label, sizeof label, "cuda-core dense row K=%lld %s", (long long)k.K,
                 precs[p].n);
        run_case(&m, &k, label, NULL);
    }
    tc_csr_free(&m);
}

/* The automatic route measures the candidate paths (TC base, chunked, the CUDA cores,
 * cusparseSDDMM) on the first executions and keeps the fastest (src/route/route.c); each of
 * those executions is checked. */
Test(gpu_sddmm, measured_on_calls)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("uniform:1200:900:11", &m);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    tc_config_reload();
    const struct { cudaDataType t; int tf32; float beta; const char *name; } v[] = {
        {CUDA_R_32F, 0, 0.5f, "3xtf32 beta=0.5"}, {CUDA_R_32F, 1, 0.0f, "tf32 beta=0"},
        {CUDA_R_16F, 0, 0.0f, "f16 beta=0"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sddmm_case k = base_case(48);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.preprocess = (int)(i % 2);
        k.ab = k.c = v[i].t;
        k.tf32 = v[i].tf32;
        k.beta = v[i].beta;
        k.repeat = 16; /* 4 paths (the CUDA cores too) x 3 samples, then the settled route */
        k.explore = 1;
        run_case(&m, &k, v[i].name, NULL);
        cr_expect(strstr(call_log.last_reason, "CUDA cores ") != NULL &&
                      strstr(call_log.last_reason, "CUDA cores -") == NULL,
                  "%s: the CUDA-core kernel not measured: '%s'", v[i].name, call_log.last_reason);
    }
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    tc_csr_free(&m);
}

/* Kernel tuning on the executions (src/route/tune.c): on a plan where the launcher offers several
 * plain TF32 kernel variants (K > 32: the ring with and without the wide L1, B through
 * registers), the first executions of a kind of call on a forced path run each three times,
 * and later calls one of them.  Every call is checked against the CPU reference (run_case),
 * and every call's output equals the first's bit for bit (the variants compute the same
 * products in the same order, and an SDDMM block never adds into another's output).
 * Nothing is measured at K <= 32, in 3xTF32 or with TCSPARSE_X_TUNE=0. */
Test(gpu_sddmm, tune_kernels)
{
    TC_REQUIRE_GPU();
    static const char *const knobs[] = {"TCSPARSE_X_SDDMM_WIDE_L1", "TCSPARSE_X_SDDMM_PIPE",
                                         "TCSPARSE_X_SDDMM_PIPE_STAGES", "TCSPARSE_X_TUNE",
                                         "TCSPARSE_SELECT"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL)
            cr_skip_test("%s is set in the environment", knobs[i]);
    static const struct {
        int64_t K;
        int tf32, bal;
        int tuning, kernels; /* tuning calls and distinct kernels expected */
        int off;             /* with TCSPARSE_X_TUNE=0 */
    } cases[] = {
        {128, 1, 0, 9, 3, 0}, {128, 1, 1, 9, 3, 0}, /* TF32, base and chunked (beta != 0) */
        {33, 1, 0, 9, 3, 0},                        /* a K tail */
        {32, 1, 0, 0, 1, 0},                        /* K <= 32: the launcher's choice only */
        {128, 0, 0, 0, 1, 0},                       /* 3xTF32 */
        {128, 1, 0, 0, 1, 1},                       /* TCSPARSE_X_TUNE=0 */
    };
    tc_csr m;
    gen_or_fail("uniform:3001:2999:9", &m);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].off)
            setenv("TCSPARSE_X_TUNE", "0", 1);
        tc_config_reload();
        sddmm_case k = base_case(cases[c].K);
        k.tf32 = cases[c].tf32;
        k.route = cases[c].bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
        k.beta = cases[c].bal ? 0.5f : 0.0f;
        k.repeat = 13;
        char label[160];
        snprintf(label, sizeof label, "K=%lld %s %s%s", (long long)cases[c].K,
                 cases[c].tf32 ? "tf32" : "3xtf32", cases[c].bal ? "balanced" : "base",
                 cases[c].off ? " TCSPARSE_X_TUNE=0" : "");
        run_case(&m, &k, label, NULL);
        unsetenv("TCSPARSE_X_TUNE");
        tc_config_reload();
        TC_ASSERT_TUNED(&call_log, cases[c].tuning, cases[c].kernels, 1, label);
    }
    tc_csr_free(&m);
}
