#define _POSIX_C_SOURCE 200809L /* setenv */
/* Misuse and failure paths that need a GPU (each test skips without one):
 *   - NULL and too-small external buffers: a status, never a write past the buffer, no
 *     sticky CUDA error, and the next correct call still works;
 *   - a plan whose device allocation fails (TCSPARSE_X_FAULT_PLAN_ALLOC) falls back to cuSPARSE
 *     with the right result and the reason in tcsparseGetLastRoute, and leaves nothing behind;
 *   - TCSPARSE_CACHE_BYTES: least-recently-used eviction across descriptors, and a plan larger
 *     than the limit is not cached (cuSPARSE, with the reason);
 *   - TCSPARSE_MEM_RESERVE: a plan that would leave less device memory free is not built
 *     (cuSPARSE, with the reason), and is once the reserve allows it;
 *   - destroy with a built plan, then use after destroy and double destroy. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "internal.h"
#include "plan.h"
#include "gen.h"
#include "testutil.h"

#define N_ TCSPARSE_OPERATION_NON_TRANSPOSE
#define CU_OK(x)                                                                            \
    do {                                                                                    \
        const cudaError_t cu_ok_e = (x);                                                    \
        cr_assert_eq(cu_ok_e, cudaSuccess, "%s: %s", #x, cudaGetErrorString(cu_ok_e));      \
    } while (0)
#define TC_OK(x)                                                                               \
    do {                                                                                       \
        tcsparseStatus_t st_ = (x);                                                            \
        cr_assert_eq(st_, TCSPARSE_STATUS_SUCCESS, "%s -> %s: %s", #x,                         \
                     tcsparseGetErrorName(st_), tcsparseGetLastErrorMessage());                \
    } while (0)

/* One SpMM problem on the device: A (CSR, int32, FP32), B (K x N row-major), C (M x N). */
typedef struct {
    tc_csr m;
    int64_t N;
    void *dOff, *dCol, *dVal, *dB, *dC;
    float *hB, *hC;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
} problem;

static void *upload(const void *h, size_t bytes)
{
    void *d = NULL;
    CU_OK(cudaMalloc(&d, bytes ? bytes : 1));
    if (bytes)
        CU_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* A banded matrix (dense 16x8 blocks: the automatic route would pick tensor cores). */
static void problem_make(problem *p, int64_t n, int64_t half, int64_t N, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    cr_assert_eq(tc_gen_banded(n, half, seed, &p->m), 0);
    p->N = N;
    int32_t *off = malloc(sizeof *off * (size_t)(n + 1));
    float *val = malloc(sizeof *val * (size_t)p->m.nnz);
    for (int64_t i = 0; i <= n; i++)
        off[i] = (int32_t)p->m.row_off[i];
    for (int64_t k = 0; k < p->m.nnz; k++)
        val[k] = (float)p->m.val[k];
    p->hB = malloc(sizeof(float) * (size_t)(n * N));
    p->hC = malloc(sizeof(float) * (size_t)(n * N));
    uint64_t s = seed * 7 + 1;
    for (int64_t i = 0; i < n * N; i++)
        p->hB[i] = (float)tc_test_rand_uniform(&s);
    p->dOff = upload(off, sizeof *off * (size_t)(n + 1));
    p->dCol = upload(p->m.col, sizeof(int32_t) * (size_t)p->m.nnz);
    p->dVal = upload(val, sizeof(float) * (size_t)p->m.nnz);
    p->dB = upload(p->hB, sizeof(float) * (size_t)(n * N));
    p->dC = upload(p->hB, sizeof(float) * (size_t)(n * N));
    free(off);
    free(val);
    TC_OK(tcsparseCreateCsr(&p->A, n, n, p->m.nnz, p->dOff, p->dCol, p->dVal, TCSPARSE_INDEX_32I,
                            TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    TC_OK(tcsparseCreateDnMat(&p->B, n, N, N, p->dB, CUDA_R_32F, TCSPARSE_ORDER_ROW));
    TC_OK(tcsparseCreateDnMat(&p->C, n, N, N, p->dC, CUDA_R_32F, TCSPARSE_ORDER_ROW));
}

static void problem_free(problem *p)
{
    if (p->A)
        tcsparseDestroySpMat(p->A);
    tcsparseDestroyDnMat(p->B);
    tcsparseDestroyDnMat(p->C);
    cudaFree(p->dOff);
    cudaFree(p->dCol);
    cudaFree(p->dVal);
    cudaFree(p->dB);
    cudaFree(p->dC);
    free(p->hB);
    free(p->hC);
    tc_csr_free(&p->m);
}

/* C = A·B in double; checks the device C against it (alpha 1, beta 0). */
static void problem_check(problem *p, const char *what)
{
    const int64_t n = p->m.rows, N = p->N;
    CU_OK(cudaDeviceSynchronize());
    CU_OK(cudaMemcpy(p->hC, p->dC, sizeof(float) * (size_t)(n * N), cudaMemcpyDeviceToHost));
    double *ref = calloc((size_t)(n * N), sizeof *ref), *out = malloc(sizeof *out * (size_t)(n * N));
    double *b = malloc(sizeof *b * (size_t)(n * N));
    for (int64_t i = 0; i < n * N; i++) {
        out[i] = p->hC[i];
        b[i] = p->hB[i];
    }
    tc_ref_dense B = {n, N, N, TCSPARSE_ORDER_ROW, b}, C = {n, N, N, TCSPARSE_ORDER_ROW, ref};
    tc_csr a = p->m;
    double *av = malloc(sizeof *av * (size_t)a.nnz);
    for (int64_t k = 0; k < a.nnz; k++)
        av[k] = (float)a.val[k]; /* the FP32 values the device holds */
    a.val = av;
    tc_ref_spmm(N_, N_, 1.0, &a, &B, 0.0, &C);
    double err = tc_rel_err(ref, out, (size_t)(n * N));
    cr_assert_lt(err, 1e-5, "%s: relative error %g", what, err);
    free(ref);
    free(out);
    free(b);
    free(av);
}

static tcsparseStatus_t spmm(tcsparseHandle_t h, problem *p, tcsparseSpMMAlg_t alg, void *buf)
{
    const float one = 1.0f, zero = 0.0f;
    return tcsparseSpMM(h, N_, N_, &one, p->A, p->B, &zero, p->C, CUDA_R_32F, alg, buf);
}

/* The call as a careful caller makes it: with a buffer of the size _bufferSize gives. */
static tcsparseStatus_t spmm_buf(tcsparseHandle_t h, problem *p, tcsparseSpMMAlg_t alg)
{
    const float one = 1.0f, zero = 0.0f;
    size_t need = 0;
    void *buf = NULL;
    tcsparseStatus_t st = tcsparseSpMM_bufferSize(h, N_, N_, &one, p->A, p->B, &zero, p->C,
                                                  CUDA_R_32F, alg, &need);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (need > 0 && cudaMalloc(&buf, need) != cudaSuccess)
        return TCSPARSE_STATUS_ALLOC_FAILED;
    st = spmm(h, p, alg, buf);
    cudaFree(buf); /* waits for the call */
    return st;
}

static void poison_c(problem *p)
{
    CU_OK(cudaMemset(p->dC, 0x7f, sizeof(float) * (size_t)(p->m.rows * p->N)));
}

/* C still holds the poison: nothing was written. */
static void expect_c_untouched(problem *p, const char *what)
{
    const size_t n = (size_t)(p->m.rows * p->N);
    unsigned char *h = malloc(n * sizeof(float));
    CU_OK(cudaDeviceSynchronize());
    CU_OK(cudaMemcpy(h, p->dC, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n * sizeof(float); i++)
        cr_assert_eq(h[i], 0x7f, "%s: C was written at byte %zu", what, i);
    free(h);
}

/* ---- buffers ------------------------------------------------------------------------------ */

/* The algorithms whose cuSPARSE buffer may be non-empty on CSR. */
static const tcsparseSpMMAlg_t buffer_algs[] = {TCSPARSE_SPMM_CSR_ALG2, TCSPARSE_SPMM_CSR_ALG3,
                                                TCSPARSE_SPMM_CSR_ALG1, TCSPARSE_SPMM_ALG_DEFAULT};

Test(gpu_misuse, null_buffer_where_cusparse_needs_one)
{
    TC_REQUIRE_GPU();
    problem p;
    problem_make(&p, 1000, 6, 40, 11);
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_CUSPARSE));
    int tried = 0;
    for (size_t k = 0; k < sizeof buffer_algs / sizeof buffer_algs[0]; k++) {
        const float one = 1.0f, zero = 0.0f;
        size_t need = 0;
        TC_OK(tcsparseSpMM_bufferSize(h, N_, N_, &one, p.A, p.B, &zero, p.C, CUDA_R_32F,
                                      buffer_algs[k], &need));
        if (need == 0)
            continue;
        tried++;
        poison_c(&p);
        tcsparseStatus_t st = spmm(h, &p, buffer_algs[k], NULL);
        /* a NULL buffer where cuSPARSE needs one: refused, nothing written, no CUDA error */
        cr_log_info("alg %d, NULL buffer where %zu bytes were asked: %s (%s)",
                    (int)buffer_algs[k], need, tcsparseGetErrorName(st),
                    tcsparseGetLastErrorMessage());
        /* cuSPARSE itself writes part of C and then fails (seen on the H100 with
         * ALG_DEFAULT); tcsparse refuses before calling it */
        cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "alg %d: %s", (int)buffer_algs[k],
                     tcsparseGetErrorName(st));
        cr_assert_str_not_empty(tcsparseGetLastErrorMessage());
        expect_c_untouched(&p, "NULL buffer");
        CU_OK(cudaDeviceSynchronize());
        CU_OK(cudaGetLastError());
        void *buf;
        CU_OK(cudaMalloc(&buf, need));
        if (buffer_algs[k] == TCSPARSE_SPMM_CSR_ALG3)
            TC_OK(tcsparseSpMM_preprocess(h, N_, N_, &one, p.A, p.B, &zero, p.C, CUDA_R_32F,
                                          buffer_algs[k], buf));
        TC_OK(spmm(h, &p, buffer_algs[k], buf));
        problem_check(&p, "after a NULL buffer, with the right one");
        cudaFree(buf);
    }
    if (tried == 0)
        cr_log_info("cuSPARSE needs no buffer for any CSR algorithm here");
    tcsparseDestroy(h);
    problem_free(&p);
}

Test(gpu_misuse, buffer_smaller_than_buffer_size_is_refused)
{
    TC_REQUIRE_GPU();
    problem p;
    problem_make(&p, 1000, 6, 40, 12);
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    void *probe;
    size_t room = 0;
    CU_OK(cudaMalloc(&probe, 1000));
    cr_assert(tc_device_room((char *)probe + 100, &room), "no cuMemGetAddressRange");
    cr_assert_geq(room, 900);
    cudaFree(probe);
    int tried = 0;
    for (int route = 0; route < 2; route++) {
        /* execution: the cuSPARSE path refuses the short buffer before cuSPARSE runs; the
         * tensor-core path never touches the buffer, so it runs (checking costs a
         * _bufferSize query per call, which the fast path does not pay).  _preprocess
         * refuses it on both routes. */
        TC_OK(tcsparseSetRoute(h, route ? TCSPARSE_ROUTE_TC : TCSPARSE_ROUTE_CUSPARSE));
        for (size_t k = 0; k < sizeof buffer_algs / sizeof buffer_algs[0]; k++) {
            const float one = 1.0f, zero = 0.0f;
            size_t need = 0;
            TC_OK(tcsparseSpMM_bufferSize(h, N_, N_, &one, p.A, p.B, &zero, p.C, CUDA_R_32F,
                                          buffer_algs[k], &need));
            if (need < 2)
                continue;
            tried++;
            char *big;
            CU_OK(cudaMalloc((void **)&big, need * 2));
            /* the last need/2 bytes of an allocation: too small */
            char *tail = big + 2 * need - need / 2;
            poison_c(&p);
            tcsparseStatus_t st = spmm(h, &p, buffer_algs[k], tail);
            if (route) {
                cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "alg %d, tensor cores: %s (%s)",
                             (int)buffer_algs[k], tcsparseGetErrorName(st),
                             tcsparseGetLastErrorMessage());
                problem_check(&p, "tensor cores, short buffer unused");
                poison_c(&p);
            } else {
                cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "alg %d: %s (%s)",
                             (int)buffer_algs[k], tcsparseGetErrorName(st),
                             tcsparseGetLastErrorMessage());
                cr_assert_not_null(strstr(tcsparseGetLastErrorMessage(), "externalBuffer"),
                                   "%s", tcsparseGetLastErrorMessage());
            }
            st = tcsparseSpMM_preprocess(h, N_, N_, &one, p.A, p.B, &zero, p.C, CUDA_R_32F,
                                         buffer_algs[k], tail);
            cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "preprocess: %s",
                         tcsparseGetErrorName(st));
            expect_c_untouched(&p, "buffer too small");
            CU_OK(cudaGetLastError());
            /* exactly need bytes at the end of the allocation: accepted */
            char *exact = big + need;
            TC_OK(tcsparseSpMM_preprocess(h, N_, N_, &one, p.A, p.B, &zero, p.C, CUDA_R_32F,
                                          buffer_algs[k], exact));
            TC_OK(spmm(h, &p, buffer_algs[k], exact));
            problem_check(&p, "exact buffer");
            cudaFree(big);
        }
    }
    if (tried == 0)
        cr_log_info("cuSPARSE needs no buffer for any CSR algorithm here");
    tcsparseDestroy(h);
    problem_free(&p);
}

Test(gpu_misuse, sddmm_buffer_smaller_than_buffer_size_is_refused)
{
    TC_REQUIRE_GPU();
    const int64_t n = 300, K = 24;
    tc_csr m;
    cr_assert_eq(tc_gen_banded(n, 5, 3, &m), 0);
    int32_t *off = malloc(sizeof *off * (size_t)(n + 1));
    for (int64_t i = 0; i <= n; i++)
        off[i] = (int32_t)m.row_off[i];
    float *x = calloc((size_t)(n * K), sizeof *x);
    void *dOff = upload(off, sizeof *off * (size_t)(n + 1));
    void *dCol = upload(m.col, sizeof(int32_t) * (size_t)m.nnz);
    void *dVal = upload(x, sizeof(float) * (size_t)m.nnz);
    void *dX = upload(x, sizeof(float) * (size_t)(n * K));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t C;
    tcsparseDnMatDescr_t A, B;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_CUSPARSE));
    TC_OK(tcsparseCreateCsr(&C, n, n, m.nnz, dOff, dCol, dVal, TCSPARSE_INDEX_32I,
                            TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    TC_OK(tcsparseCreateDnMat(&A, n, K, K, dX, CUDA_R_32F, TCSPARSE_ORDER_ROW));
    TC_OK(tcsparseCreateDnMat(&B, K, n, K, dX, CUDA_R_32F, TCSPARSE_ORDER_COL));
    const float one = 1.0f, zero = 0.0f;
    size_t need = 0;
    TC_OK(tcsparseSDDMM_bufferSize(h, N_, N_, &one, A, B, &zero, C, CUDA_R_32F,
                                   TCSPARSE_SDDMM_ALG_DEFAULT, &need));
    if (need >= 2) {
        char *big;
        CU_OK(cudaMalloc((void **)&big, need));
        tcsparseStatus_t st = tcsparseSDDMM(h, N_, N_, &one, A, B, &zero, C, CUDA_R_32F,
                                            TCSPARSE_SDDMM_ALG_DEFAULT, big + need / 2 + 1);
        cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "%s", tcsparseGetLastErrorMessage());
        TC_OK(tcsparseSDDMM(h, N_, N_, &one, A, B, &zero, C, CUDA_R_32F,
                            TCSPARSE_SDDMM_ALG_DEFAULT, big));
        CU_OK(cudaDeviceSynchronize());
        cudaFree(big);
    } else {
        cr_log_info("cuSPARSE's SDDMM needs %zu bytes here: nothing to refuse", need);
    }
    tcsparseDestroySpMat(C);
    tcsparseDestroyDnMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroy(h);
    cudaFree(dOff);
    cudaFree(dCol);
    cudaFree(dVal);
    cudaFree(dX);
    free(off);
    free(x);
    tc_csr_free(&m);
}

/* ---- plan allocation failure ---------------------------------------------------------------- */

Test(gpu_misuse, plan_alloc_failure_falls_back_to_cusparse)
{
    TC_REQUIRE_GPU();
    setenv("TCSPARSE_X_FAULT_PLAN_ALLOC", "1", 1); /* the next plan build fails */
    tc_config_reload();
    tc_plan_cache_reconfigure();
    problem p;
    problem_make(&p, 777, 7, 33, 13);
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC)); /* would take tensor cores */
    poison_c(&p);
    TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
    cr_assert_str_empty(tcsparseGetLastErrorMessage(), "the fallback left a message: %s",
                        tcsparseGetLastErrorMessage());
    tcsparseRouteInfo_t ri;
    TC_OK(tcsparseGetLastRoute(h, &ri));
    cr_assert_eq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s (%s)", ri.kernel, ri.reason);
    cr_assert_not_null(strstr(ri.reason, "TCSPARSE_X_FAULT_PLAN_ALLOC"), "reason: %s", ri.reason);
    cr_assert_null(p.A->plan);
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    cr_assert_eq(info.bytes, 0);
    CU_OK(cudaGetLastError());
    problem_check(&p, "cuSPARSE after the failed plan");
    /* the fault is spent: the next call builds the plan and takes tensor cores */
    poison_c(&p);
    TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
    TC_OK(tcsparseGetLastRoute(h, &ri));
    cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s (%s)", ri.kernel, ri.reason);
    cr_assert_not_null(p.A->plan);
    problem_check(&p, "tensor cores after the retry");
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 1);
    cr_assert_eq(info.bytes, p.A->plan->bytes);
    tcsparseDestroy(h);
    problem_free(&p);
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0, "destroy left the plan in the cache");
    unsetenv("TCSPARSE_X_FAULT_PLAN_ALLOC");
    tc_config_reload();
}

/* ---- the byte limit --------------------------------------------------------------------- */

Test(gpu_misuse, cache_limit_evicts_least_recently_used)
{
    TC_REQUIRE_GPU();
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    problem p[3];
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE));
    size_t sz[3];
    for (int k = 0; k < 3; k++) {
        problem_make(&p[k], 500 + 100 * k, 5, 16, 20 + (uint64_t)k);
        TC_OK(spmm_buf(h, &p[k], TCSPARSE_SPMM_ALG_DEFAULT));
        problem_check(&p[k], "unlimited");
        cr_assert_not_null(p[k].A->plan);
        sz[k] = p[k].A->plan->bytes;
    }
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 3);
    cr_assert_eq(info.bytes, sz[0] + sz[1] + sz[2]);
    /* room for all but one byte: the least recently used (p[0]) goes */
    char lim[32];
    snprintf(lim, sizeof lim, "%zu", sz[0] + sz[1] + sz[2] - 1);
    setenv("TCSPARSE_CACHE_BYTES", lim, 1);
    tc_config_reload();
    tc_plan_cache_reconfigure();
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 2);
    cr_assert_eq(info.evictions, 1);
    cr_assert_null(p[0].A->plan);
    cr_assert_not_null(p[1].A->plan);
    cr_assert_not_null(p[2].A->plan);
    /* p[1] is used, then p[0] comes back: p[2] is now the least recently used */
    TC_OK(spmm_buf(h, &p[1], TCSPARSE_SPMM_ALG_DEFAULT));
    poison_c(&p[0]);
    TC_OK(spmm_buf(h, &p[0], TCSPARSE_SPMM_ALG_DEFAULT));
    problem_check(&p[0], "rebuilt after eviction");
    cr_assert_not_null(p[0].A->plan);
    cr_assert_not_null(p[1].A->plan);
    cr_assert_null(p[2].A->plan);
    tc_plan_cache_get_info(&info);
    cr_assert_leq(info.bytes, sz[0] + sz[1] + sz[2] - 1);
    poison_c(&p[2]);
    TC_OK(spmm_buf(h, &p[2], TCSPARSE_SPMM_ALG_DEFAULT));
    problem_check(&p[2], "rebuilt after eviction");
    for (int k = 0; k < 3; k++)
        problem_free(&p[k]);
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    cr_assert_eq(info.bytes, 0);
    tcsparseDestroy(h);
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
}

Test(gpu_misuse, plan_larger_than_limit_is_not_cached)
{
    TC_REQUIRE_GPU();
    setenv("TCSPARSE_CACHE_BYTES", "4K", 1);
    tc_config_reload();
    tc_plan_cache_reconfigure();
    problem p;
    problem_make(&p, 3000, 8, 24, 31); /* ~51000 nonzeros: a plan of ~300 KB */
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC));
    for (int it = 0; it < 2; it++) {
        poison_c(&p);
        TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
        tcsparseRouteInfo_t ri;
        TC_OK(tcsparseGetLastRoute(h, &ri));
        cr_assert_eq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s (%s)", ri.kernel, ri.reason);
        cr_assert_not_null(strstr(ri.reason, "TCSPARSE_CACHE_BYTES"), "reason: %s", ri.reason);
        cr_assert_null(p.A->plan);
        cr_assert_gt(p.A->plan_refused, 4096);
        problem_check(&p, "cuSPARSE instead of an oversized plan");
    }
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, p.A, &st), TCSPARSE_STATUS_NOT_SUPPORTED);
    cr_assert_not_null(strstr(tcsparseGetLastErrorMessage(), "TCSPARSE_CACHE_BYTES"));
    /* a raised limit lets the plan in */
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
    cr_assert_not_null(p.A->plan);
    problem_check(&p, "tensor cores once the limit is gone");
    tcsparseDestroy(h);
    problem_free(&p);
}

/* ---- the device memory kept free -------------------------------------------------------- */

Test(gpu_misuse, plan_refused_near_the_memory_limit)
{
    TC_REQUIRE_GPU();
    /* all of the device kept free: no plan can leave that much */
    setenv("TCSPARSE_MEM_RESERVE", "100%", 1);
    tc_config_reload();
    problem p;
    problem_make(&p, 3000, 8, 24, 37);
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC)); /* would take tensor cores */
    for (int it = 0; it < 2; it++) {
        poison_c(&p);
        TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
        cr_assert_str_empty(tcsparseGetLastErrorMessage(), "the fallback left a message: %s",
                            tcsparseGetLastErrorMessage());
        tcsparseRouteInfo_t ri;
        TC_OK(tcsparseGetLastRoute(h, &ri));
        cr_assert_eq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s (%s)", ri.kernel, ri.reason);
        cr_assert_not_null(strstr(ri.reason, "TCSPARSE_MEM_RESERVE"), "reason: %s", ri.reason);
        cr_assert_not_null(strstr(ri.reason, "device memory"), "reason: %s", ri.reason);
        cr_assert_null(p.A->plan);
        problem_check(&p, "cuSPARSE instead of a plan past the reserve");
    }
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, p.A, &st), TCSPARSE_STATUS_NOT_SUPPORTED);
    cr_assert_not_null(strstr(tcsparseGetLastErrorMessage(), "TCSPARSE_MEM_RESERVE"), "%s",
                       tcsparseGetLastErrorMessage());
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    CU_OK(cudaGetLastError());
    /* a byte count the device has room for lets the plan in */
    setenv("TCSPARSE_MEM_RESERVE", "1M", 1);
    tc_config_reload();
    poison_c(&p);
    TC_OK(spmm_buf(h, &p, TCSPARSE_SPMM_ALG_DEFAULT));
    tcsparseRouteInfo_t ri;
    TC_OK(tcsparseGetLastRoute(h, &ri));
    cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s (%s)", ri.kernel, ri.reason);
    cr_assert_not_null(p.A->plan);
    problem_check(&p, "tensor cores once the reserve allows the plan");
    tcsparseDestroy(h);
    problem_free(&p);
    unsetenv("TCSPARSE_MEM_RESERVE");
    tc_config_reload();
}

/* ---- destroy with a plan, use after destroy ----------------------------------------------- */

Test(gpu_misuse, destroy_with_plan_then_use)
{
    TC_REQUIRE_GPU();
    problem p;
    problem_make(&p, 400, 4, 16, 41);
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BALANCED));
    TC_OK(spmm(h, &p, TCSPARSE_SPMM_ALG_DEFAULT, NULL)); /* queued; destroy must wait for it */
    cr_assert_not_null(p.A->plan);
    TC_OK(tcsparseDestroySpMat(p.A));
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    CU_OK(cudaDeviceSynchronize());
    cr_assert_eq(spmm(h, &p, TCSPARSE_SPMM_ALG_DEFAULT, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tcsparseDestroySpMat(p.A), TCSPARSE_STATUS_INVALID_VALUE);
    p.A = NULL;
    TC_OK(tcsparseDestroy(h));
    cr_assert_eq(tcsparseDestroy(h), TCSPARSE_STATUS_INVALID_VALUE);
    problem_free(&p);
}
