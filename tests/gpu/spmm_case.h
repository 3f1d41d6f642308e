/* One tensor-core SpMM case through the public API, checked against a CPU reference in
 * double (run_case), and the sweeps over precisions and kernels that the SpMM tests share
 * (test_gpu_spmm.c, test_gpu_spmm_route.c).  Include after <criterion/criterion.h>. */
#ifndef TC_SPMM_CASE_H
#define TC_SPMM_CASE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "testutil.h"
#include "gpu_test.h"

typedef struct {
    int N;
    cudaDataType ab, c;      /* A/B type, C type */
    int tf32;                /* FP32 only */
    tcsparseRoute_t route;
    tcsparseFormat_t fmt;
    int idx64, base;
    int ldb_pad, ldc_pad;
    float alpha, beta;
    int device_ptrs;
    int preprocess;
    int repeat;   /* executions, each on C's initial contents and checked; 0 means 1 */
    int explore;  /* 1: the executions must measure the paths and settle ("exploring" then
                   * "measured on"); -1: they must not measure; 0: no expectation */
    tcsparseOperation_t opA; /* TRANSPOSE: the product is alpha * m^T * B + beta * C */
    int nan_unused_b; /* rows of B that no nonzero multiplies hold NaN (must not leak) */
} spmm_case;

static inline double bound_for(const spmm_case *k)
{
    if (k->ab != CUDA_R_32F || k->c != CUDA_R_32F)
        return 2e-2;
    return k->tf32 ? 5e-3 : 1e-5;
}

static uint64_t seed = 12345;
static inline double urand(void) { return tc_test_rand_uniform(&seed); }

/* Runs one case on m and checks it; returns the relative error. */
static char last_kernel[64]; /* the kernel of run_case's last execution */
static tcsparsePath_t last_path; /* and its path */
static int cuda_core_calls;      /* run_case's executions on the CUDA-core kernel */
static tc_test_call_log call_log; /* what run_case's executions did (the tuning's test) */

static inline double run_case(const tc_csr *m, const spmm_case *k, const char *label)
{
    const int64_t M = m->rows, K = m->cols, nnz = m->nnz, N = k->N;
    /* the product's op(A) is Mo x Ko: m, or its transpose (opA = TRANSPOSE) */
    const int tr = k->opA == TCSPARSE_OPERATION_TRANSPOSE;
    const int64_t Mo = tr ? K : M, Ko = tr ? M : K;
    const int64_t ldb = N + k->ldb_pad, ldc = N + k->ldc_pad;
    const size_t is = k->idx64 ? 8 : 4;
    /* A's arrays in the requested format, values rounded to the input type */
    int64_t noff = k->fmt == TCSPARSE_FORMAT_CSR ? M + 1 : k->fmt == TCSPARSE_FORMAT_CSC ? K + 1 : nnz;
    void *h_off = malloc(is * (size_t)(noff + 1)), *h_idx = malloc(is * (size_t)(nnz + 1));
    void *h_val = malloc(esize(k->ab) * (size_t)(nnz + 1));
    double *a_val = malloc(sizeof(double) * (size_t)(nnz + 1)); /* in CSR order */
    for (int64_t e = 0; e < nnz; e++)
        a_val[e] = m->val[e];
    if (k->fmt == TCSPARSE_FORMAT_CSR || k->fmt == TCSPARSE_FORMAT_COO) {
        for (int64_t r = 0; r < M; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                if (k->fmt == TCSPARSE_FORMAT_COO)
                    put_index(h_off, (size_t)e, k->idx64, r + k->base);
                put_index(h_idx, (size_t)e, k->idx64, m->col[e] + k->base);
                a_val[e] = put(h_val, (size_t)e, k->ab, m->val[e]);
            }
        if (k->fmt == TCSPARSE_FORMAT_CSR)
            for (int64_t r = 0; r <= M; r++)
                put_index(h_off, (size_t)r, k->idx64, m->row_off[r] + k->base);
    } else { /* CSC: counting sort by column */
        int64_t *cnt = calloc((size_t)K + 1, sizeof *cnt);
        for (int64_t e = 0; e < nnz; e++)
            cnt[m->col[e] + 1]++;
        for (int64_t c = 0; c < K; c++)
            cnt[c + 1] += cnt[c];
        for (int64_t c = 0; c <= K; c++)
            put_index(h_off, (size_t)c, k->idx64, cnt[c] + k->base);
        for (int64_t r = 0; r < M; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                int64_t dst = cnt[m->col[e]]++;
                put_index(h_idx, (size_t)dst, k->idx64, r + k->base);
                a_val[e] = put(h_val, (size_t)dst, k->ab, m->val[e]);
            }
        free(cnt);
    }
    /* B and C with padding columns; C's padding holds a sentinel that must survive */
    void *h_B = malloc(esize(k->ab) * (size_t)(Ko * ldb + 1));
    double *b = malloc(sizeof(double) * (size_t)(Ko * N + 1));
    for (int64_t i = 0; i < Ko; i++)
        for (int64_t j = 0; j < ldb; j++) {
            double v = put(h_B, (size_t)(i * ldb + j), k->ab, j < N ? urand() : 1e30);
            if (j < N)
                b[i * N + j] = v;
        }
    if (k->nan_unused_b) {
        char *used = calloc((size_t)Ko + 1, 1);
        for (int64_t i = 0; i < M; i++)
            for (int64_t e = m->row_off[i]; e < m->row_off[i + 1]; e++)
                used[tr ? i : m->col[e]] = 1;
        for (int64_t i = 0; i < Ko; i++)
            for (int64_t j = 0; j < N && !used[i]; j++)
                put(h_B, (size_t)(i * ldb + j), k->ab, NAN);
        free(used);
    }
    void *h_C = malloc(esize(k->c) * (size_t)(Mo * ldc + 1));
    double *c0 = malloc(sizeof(double) * (size_t)(Mo * N + 1));
    for (int64_t i = 0; i < Mo; i++)
        for (int64_t j = 0; j < ldc; j++) {
            double v = put(h_C, (size_t)(i * ldc + j), k->c, j < N ? urand() : 7.0);
            if (j < N)
                c0[i * N + j] = v;
        }
    if (k->beta == 0.0f) /* beta = 0 must not read C: poison it with NaN */
        for (int64_t i = 0; i < Mo; i++)
            for (int64_t j = 0; j < N; j++)
                put(h_C, (size_t)(i * ldc + j), k->c, NAN);
    /* reference in double from the rounded inputs */
    double *ref = malloc(sizeof(double) * (size_t)(Mo * N + 1));
    double *acc = calloc((size_t)(Mo * N + 1), sizeof *acc);
    for (int64_t i = 0; i < M; i++)
        for (int64_t e = m->row_off[i]; e < m->row_off[i + 1]; e++)
            for (int64_t j = 0; j < N; j++) {
                if (tr) /* (i, col) of m is (col, i) of op(A) */
                    acc[m->col[e] * N + j] += a_val[e] * b[i * N + j];
                else
                    acc[i * N + j] += a_val[e] * b[m->col[e] * N + j];
            }
    for (int64_t i = 0; i < Mo * N; i++)
        ref[i] = k->alpha * acc[i] + (k->beta != 0.0f ? k->beta * c0[i] : 0.0);
    free(acc);

    void *d_off = to_device(h_off, is * (size_t)noff), *d_idx = to_device(h_idx, is * (size_t)nnz);
    void *d_val = to_device(h_val, esize(k->ab) * (size_t)nnz);
    void *d_B = to_device(h_B, esize(k->ab) * (size_t)(Ko * ldb));
    void *d_C = to_device(h_C, esize(k->c) * (size_t)(Mo * ldc));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tcsparseIndexType_t it = k->idx64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    tcsparseIndexBase_t ib = (tcsparseIndexBase_t)k->base;
    tcsparseStatus_t st =
        k->fmt == TCSPARSE_FORMAT_CSR ? tcsparseCreateCsr(&A, M, K, nnz, d_off, d_idx, d_val, it, it, ib, k->ab)
        : k->fmt == TCSPARSE_FORMAT_CSC ? tcsparseCreateCsc(&A, M, K, nnz, d_off, d_idx, d_val, it, it, ib, k->ab)
                                        : tcsparseCreateCoo(&A, M, K, nnz, d_off, d_idx, d_val, it, ib, k->ab);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(tcsparseCreateDnMat(&B, Ko, N, ldb, d_B, k->ab, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, Mo, N, ldc, d_C, k->c, TCSPARSE_ORDER_ROW), 0);
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
    size_t bsz = 0;
    st = tcsparseSpMM_bufferSize(h, k->opA, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, &bsz);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: bufferSize: %s", label, tcsparseGetLastErrorMessage());
    void *buf = NULL;
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    if (k->preprocess) {
        st = tcsparseSpMM_preprocess(h, k->opA, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: preprocess: %s", label, tcsparseGetLastErrorMessage());
    }
    void *h_C_init = malloc(esize(k->c) * (size_t)(Mo * ldc + 1));
    memcpy(h_C_init, h_C, esize(k->c) * (size_t)(Mo * ldc));
    const int reps = k->repeat > 0 ? k->repeat : 1;
    tc_test_measuring measuring = {0, 0};
    double err = 0;
    tcsparseRouteInfo_t ri;
    tc_test_call_log_reset(&call_log);
    cuda_core_calls = 0;
    for (int rep = 0; rep < reps; rep++) {
        if (rep > 0) /* each execution starts from C's initial contents (NaN where beta = 0) */
            cr_assert_eq(cudaMemcpy(d_C, h_C_init, esize(k->c) * (size_t)(Mo * ldc), cudaMemcpyHostToDevice),
                         cudaSuccess);
        st = tcsparseSpMM(h, k->opA, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: %s", label, tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: kernel failed", label);
        tcsparseGetLastRoute(h, &ri);
        snprintf(last_kernel, sizeof last_kernel, "%s", ri.kernel);
        last_path = ri.path;
        cuda_core_calls += ri.path == TCSPARSE_PATH_CUDA_CORE;
        tc_test_measuring_note(&measuring, &ri);
        if (k->explore < 0)
            cr_assert(strncmp(ri.reason, "exploring", 9) != 0, "%s: call %d measured: '%s'", label,
                      rep, ri.reason);
        if (k->route == TCSPARSE_ROUTE_AUTO && getenv("TCSPARSE_SELECT") != NULL && k->explore >= 0)
            cr_assert(strncmp(ri.reason, "measured", 8) == 0, "%s: reason '%s'", label, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC_BASE)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "%s: took %s (%s)", label, ri.kernel, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC_BALANCED)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BALANCED, "%s: took %s (%s)", label, ri.kernel, ri.reason);

        cr_assert_eq(cudaMemcpy(h_C, d_C, esize(k->c) * (size_t)(Mo * ldc), cudaMemcpyDeviceToHost), cudaSuccess);
        tc_test_call_log_note(&call_log, &ri, h_C, esize(k->c) * (size_t)(Mo * ldc));
        double num = 0, den = 0;
        for (int64_t i = 0; i < Mo; i++)
            for (int64_t j = 0; j < ldc; j++) {
                double v = get(h_C, (size_t)(i * ldc + j), k->c);
                if (j >= N) {
                    cr_assert_eq(v, 7.0, "%s: padding C[%lld][%lld] overwritten", label, (long long)i, (long long)j);
                    continue;
                }
                cr_assert(isfinite(v), "%s: C[%lld][%lld] = %g not written or not finite", label,
                          (long long)i, (long long)j, v);
                double d = v - ref[i * N + j];
                num += d * d;
                den += ref[i * N + j] * ref[i * N + j];
            }
        err = den > 0 ? sqrt(num / den) : sqrt(num);
        cr_assert(err <= bound_for(k), "%s: call %d: relative error %.3e > %.1e (%s; %s)", label, rep,
                  err, bound_for(k), ri.kernel, ri.reason);
    }
    if (k->explore > 0)
        TC_ASSERT_MEASURED_AND_SETTLED(&measuring, &ri, label);
    free(h_C_init);

    cudaFree(buf); cudaFree(d_ab);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(d_off); cudaFree(d_idx); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C);
    free(h_off); free(h_idx); free(h_val); free(a_val); free(h_B); free(b); free(h_C); free(c0); free(ref);
    return err;
}

static inline spmm_case base_case(int N)
{
    spmm_case k = {.N = N, .ab = CUDA_R_32F, .c = CUDA_R_32F, .route = TCSPARSE_ROUTE_TC_BASE,
                   .fmt = TCSPARSE_FORMAT_CSR, .alpha = 1.25f, .beta = 0.0f, .preprocess = 1};
    return k;
}

typedef struct {
    cudaDataType ab, c;
    int tf32;
    const char *n;
} prec_t;

static const prec_t all_precs[] = {
    {CUDA_R_32F, CUDA_R_32F, 0, "3xtf32"}, {CUDA_R_32F, CUDA_R_32F, 1, "tf32"},
    {CUDA_R_16F, CUDA_R_16F, 0, "f16"},    {CUDA_R_16F, CUDA_R_32F, 0, "f16->f32"},
    {CUDA_R_16BF, CUDA_R_16BF, 0, "bf16"}, {CUDA_R_16BF, CUDA_R_32F, 0, "bf16->f32"}};

/* A sweep's case: precision pr, the base or the balanced kernel, beta 0 or -0.5 by parity. */
static inline spmm_case prec_case(int N, const prec_t *pr, int bal, int parity)
{
    spmm_case k = base_case(N);
    k.ab = pr->ab;
    k.c = pr->c;
    k.tf32 = pr->tf32;
    k.route = bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
    k.beta = parity % 2 ? -0.5f : 0.0f;
    return k;
}

/* Every precision x kernel on one matrix for a list of N. */
static inline void sweep(const tc_csr *m, const char *name, const int *ns, int nn)
{
    for (int i = 0; i < nn; i++)
        for (size_t p = 0; p < sizeof all_precs / sizeof all_precs[0]; p++)
            for (int bal = 0; bal < 2; bal++) {
                spmm_case k = prec_case(ns[i], &all_precs[p], bal, i + (int)p);
                char label[160];
                snprintf(label, sizeof label, "%s N=%d %s %s", name, ns[i], all_precs[p].n,
                         bal ? "balanced" : "base");
                run_case(m, &k, label);
            }
}

static const int all_n[] = {1, 7, 8, 32, 100, 128, 256, 512};

#endif
