#define _POSIX_C_SOURCE 200809L /* setenv */
/* Concurrency stress (skips without a GPU): THREADS threads, each with its own handle and
 * stream, share MATS sparse descriptors (plans built on first use by whichever thread comes
 * first, under the descriptor's lock) and run SpMM on them in thread-specific orders and
 * routes (automatic, tensor-core base, balanced, cuSPARSE), checking every result against a
 * CPU reference in double after each round.  Once with an unlimited plan cache (every plan
 * built exactly once), once with TCSPARSE_CACHE_BYTES below the sum of the plans, so that
 * plans are evicted and rebuilt while other threads run.  Dense descriptors are per thread
 * (the rule: a dense descriptor is used by one call at a time; see docs/reliability.md). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
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

#define THREADS 8
#define MATS 4
#define ROUNDS 6
#define NCOLS 24 /* N of every SpMM */

typedef struct {
    tc_csr m;
    tcsparseSpMatDescr_t A;
    void *dOff, *dRow, *dCol, *dVal, *dB;
    double *ref; /* rows x NCOLS, row-major */
    float *hB;
} shared_mat;

typedef struct {
    int id;
    shared_mat *mats;
    pthread_barrier_t *start;
    int failures;
    char first[256];
} worker;

static shared_mat mats[MATS];

static void *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess)
        return NULL;
    if (bytes && cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        return NULL;
    }
    return d;
}

static void mat_make(shared_mat *s, int k)
{
    memset(s, 0, sizeof *s);
    int r;
    switch (k) {
    case 0: r = tc_gen_banded(1500, 6, 101, &s->m); break;
    case 1: r = tc_gen_uniform(1000, 800, 12, 102, &s->m); break;
    case 2: r = tc_gen_blocks(1024, 16, 60, 103, &s->m); break;
    default: r = tc_gen_rmat(10, 8, 104, &s->m); break;
    }
    cr_assert_eq(r, 0);
    const int64_t n = s->m.rows, K = s->m.cols, nnz = s->m.nnz;
    int32_t *off = malloc(sizeof *off * (size_t)(n + 1)), *row = malloc(sizeof *row * (size_t)(nnz + 1));
    float *val = malloc(sizeof *val * (size_t)(nnz + 1));
    double *vd = malloc(sizeof *vd * (size_t)(nnz + 1));
    for (int64_t i = 0; i <= n; i++)
        off[i] = (int32_t)s->m.row_off[i];
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = s->m.row_off[i]; e < s->m.row_off[i + 1]; e++)
            row[e] = (int32_t)i;
    for (int64_t e = 0; e < nnz; e++) {
        val[e] = (float)s->m.val[e];
        vd[e] = val[e];
    }
    s->hB = malloc(sizeof(float) * (size_t)(K * NCOLS));
    double *bd = malloc(sizeof(double) * (size_t)(K * NCOLS));
    uint64_t seed = 900 + (uint64_t)k;
    for (int64_t i = 0; i < K * NCOLS; i++) {
        s->hB[i] = (float)tc_test_rand_uniform(&seed);
        bd[i] = s->hB[i];
    }
    s->dOff = dev_copy(off, sizeof *off * (size_t)(n + 1));
    s->dRow = dev_copy(row, sizeof *row * (size_t)nnz);
    s->dCol = dev_copy(s->m.col, sizeof(int32_t) * (size_t)nnz);
    s->dVal = dev_copy(val, sizeof *val * (size_t)nnz);
    s->dB = dev_copy(s->hB, sizeof(float) * (size_t)(K * NCOLS));
    cr_assert(s->dOff && s->dRow && s->dCol && s->dVal && s->dB);
    /* matrix 3 as COO: the plan cache does not care about the format */
    if (k == 3)
        cr_assert_eq(tcsparseCreateCoo(&s->A, n, K, nnz, s->dRow, s->dCol, s->dVal,
                                       TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                     0);
    else
        cr_assert_eq(tcsparseCreateCsr(&s->A, n, K, nnz, s->dOff, s->dCol, s->dVal,
                                       TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                     0);
    s->ref = calloc((size_t)(n * NCOLS), sizeof *s->ref);
    tc_csr a = s->m;
    a.val = vd;
    tc_ref_dense B = {K, NCOLS, NCOLS, TCSPARSE_ORDER_ROW, bd};
    tc_ref_dense C = {n, NCOLS, NCOLS, TCSPARSE_ORDER_ROW, s->ref};
    tc_ref_spmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &a, &B,
                0.0, &C);
    free(off);
    free(row);
    free(val);
    free(vd);
    free(bd);
}

static void mat_free(shared_mat *s)
{
    tcsparseDestroySpMat(s->A);
    cudaFree(s->dOff);
    cudaFree(s->dRow);
    cudaFree(s->dCol);
    cudaFree(s->dVal);
    cudaFree(s->dB);
    free(s->ref);
    free(s->hB);
    tc_csr_free(&s->m);
}

static void note(worker *w, const char *fmt, const char *a, const char *b, int k, int round)
{
    if (w->failures++ == 0)
        snprintf(w->first, sizeof w->first, fmt, a, b, k, round);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    tcsparseHandle_t h = NULL;
    cudaStream_t stream = NULL;
    tcsparseDnMatDescr_t B[MATS], C[MATS];
    void *dC[MATS];
    float *hC[MATS];
    if (tcsparseCreate(&h) != 0 || cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != 0 ||
        tcsparseSetStream(h, stream) != 0) {
        w->failures++;
        snprintf(w->first, sizeof w->first, "setup failed");
        pthread_barrier_wait(w->start);
        return NULL;
    }
    for (int k = 0; k < MATS; k++) {
        const shared_mat *s = &w->mats[k];
        const size_t cbytes = sizeof(float) * (size_t)(s->m.rows * NCOLS);
        hC[k] = malloc(cbytes);
        if (cudaMalloc(&dC[k], cbytes) != cudaSuccess)
            dC[k] = NULL;
        /* own descriptors over the shared B array */
        tcsparseCreateDnMat(&B[k], s->m.cols, NCOLS, NCOLS, s->dB, CUDA_R_32F, TCSPARSE_ORDER_ROW);
        tcsparseCreateDnMat(&C[k], s->m.rows, NCOLS, NCOLS, dC[k], CUDA_R_32F, TCSPARSE_ORDER_ROW);
    }
    /* a buffer as large as cuSPARSE asks for on any of the matrices (the route may pick it) */
    size_t need = 0;
    void *buf = NULL;
    for (int k = 0; k < MATS; k++) {
        const float one = 1.0f, zero = 0.0f;
        size_t nk = 0;
        if (tcsparseSpMM_bufferSize(h, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                    TCSPARSE_OPERATION_NON_TRANSPOSE, &one, w->mats[k].A, B[k],
                                    &zero, C[k], CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT,
                                    &nk) == TCSPARSE_STATUS_SUCCESS && nk > need)
            need = nk;
    }
    if (need > 0 && cudaMalloc(&buf, need) != cudaSuccess)
        buf = NULL;
    static const tcsparseRoute_t routes[4] = {TCSPARSE_ROUTE_AUTO, TCSPARSE_ROUTE_TC_BASE,
                                              TCSPARSE_ROUTE_TC_BALANCED, TCSPARSE_ROUTE_CUSPARSE};
    const float one = 1.0f, zero = 0.0f;
    pthread_barrier_wait(w->start); /* every thread's first call at once: plans race */
    for (int round = 0; round < ROUNDS; round++) {
        for (int j = 0; j < MATS; j++) {
            int k = (j + w->id + round) % MATS;
            const shared_mat *s = &w->mats[k];
            tcsparseSetRoute(h, routes[(w->id + round + k) % 4]);
            cudaMemsetAsync(dC[k], 0x7f, sizeof(float) * (size_t)(s->m.rows * NCOLS), stream);
            if (tcsparseSpMM(h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                             &one, s->A, B[k], &zero, C[k], CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT,
                             buf) != TCSPARSE_STATUS_SUCCESS)
                note(w, "SpMM failed: %s%s (matrix %d, round %d)", tcsparseGetLastErrorMessage(),
                     "", k, round);
            if (round % 2 == 1) {
                tcsparseMetcfStats_t st;
                const tcsparseStatus_t gs = tcsparseSpMatGetMetcfStats(h, s->A, &st);
                if (gs == TCSPARSE_STATUS_SUCCESS && st.nnz != s->m.nnz)
                    note(w, "statistics of the wrong matrix%s%s (matrix %d, round %d)", "", "",
                         k, round);
                /* a plan is built, or refused by the cache's limit: never a failed build
                 * (one that fell back to cuSPARSE unnoticed, as concurrent conversions once
                 * did when they raced on a kernel's shared-memory limit) */
                if (gs != TCSPARSE_STATUS_SUCCESS && gs != TCSPARSE_STATUS_NOT_SUPPORTED)
                    note(w, "plan build failed: %s%s (matrix %d, round %d)",
                         tcsparseGetLastErrorMessage(), "", k, round);
            }
        }
        if (cudaStreamSynchronize(stream) != cudaSuccess) {
            note(w, "stream: %s%s (matrix %d, round %d)", cudaGetErrorString(cudaGetLastError()),
                 "", -1, round);
            break;
        }
        for (int k = 0; k < MATS; k++) {
            const shared_mat *s = &w->mats[k];
            const size_t n = (size_t)(s->m.rows * NCOLS);
            cudaMemcpy(hC[k], dC[k], n * sizeof(float), cudaMemcpyDeviceToHost);
            double *out = malloc(n * sizeof *out);
            for (size_t i = 0; i < n; i++)
                out[i] = hC[k][i];
            double err = tc_rel_err(s->ref, out, n);
            free(out);
            if (!(err < 1e-5)) {
                char e[64];
                snprintf(e, sizeof e, "%g", err);
                note(w, "relative error %s%s (matrix %d, round %d)", e, "", k, round);
            }
        }
    }
    for (int k = 0; k < MATS; k++) {
        tcsparseDestroyDnMat(B[k]);
        tcsparseDestroyDnMat(C[k]);
        cudaFree(dC[k]);
        free(hC[k]);
    }
    cudaFree(buf);
    tcsparseDestroy(h);
    cudaStreamDestroy(stream);
    return NULL;
}

static void stress(const char *cache_bytes)
{
    if (cache_bytes)
        setenv("TCSPARSE_CACHE_BYTES", cache_bytes, 1);
    else
        unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    for (int k = 0; k < MATS; k++)
        mat_make(&mats[k], k);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        w[i].mats = mats;
        w[i].start = &start;
        cr_assert_eq(pthread_create(&t[i], NULL, run_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        cr_expect_eq(w[i].failures, 0, "thread %d: %d failures, first: %s", i, w[i].failures,
                     w[i].first);
}

Test(gpu_stress, shared_descriptors_unlimited_cache)
{
    TC_REQUIRE_GPU();
    stress(NULL);
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    /* every matrix's plan was built exactly once (the auto route may skip one) */
    cr_assert_leq(info.plans, MATS);
    cr_assert_eq(info.evictions, 0);
    size_t sum = 0;
    for (int k = 0; k < MATS; k++)
        if (mats[k].A->plan != NULL)
            sum += mats[k].A->plan->bytes;
    cr_assert_eq(sum, info.bytes);
    for (int k = 0; k < MATS; k++)
        mat_free(&mats[k]);
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    cr_assert_eq(info.bytes, 0);
}

Test(gpu_stress, shared_descriptors_evicting_cache)
{
    TC_REQUIRE_GPU();
    /* first the plans' sizes, then a limit that holds about two of them */
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    size_t total = 0;
    for (int k = 0; k < MATS; k++) {
        mat_make(&mats[k], k);
        tcsparseMetcfStats_t st;
        cr_assert_eq(tcsparseSpMatGetMetcfStats(h, mats[k].A, &st), 0, "%s",
                     tcsparseGetLastErrorMessage());
        total += mats[k].A->plan->bytes;
    }
    for (int k = 0; k < MATS; k++)
        mat_free(&mats[k]);
    tcsparseDestroy(h);
    char lim[32];
    snprintf(lim, sizeof lim, "%zu", total / 2);
    stress(lim);
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_leq(info.bytes, total / 2);
    cr_assert_gt(info.evictions, 0, "a limit of half the plans evicted nothing");
    for (int k = 0; k < MATS; k++)
        mat_free(&mats[k]);
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
}
