/* The late-ordering tests' shared cases (test_gpu_late.c, test_gpu_late_mixed.c): a matrix
 * that first-col ordering compresses, one on the device behind a descriptor, SpMM cases
 * checked against the CPU double reference with C poisoned first, and calls run until the
 * trial starts or is over.  Include after <criterion/criterion.h>. */
#ifndef TC_LATE_CASE_H
#define TC_LATE_CASE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "plan.h"
#include "testutil.h"

/* Rows in groups of 16 that share a range of 32 columns (each row holds 20 of them), the
 * rows shuffled: in the caller's order a window holds rows of 16 groups, in first-col order
 * one group (16x fewer blocks).  M is not a multiple of 16 (the last group is short). */
static inline void grouped(int64_t M, uint64_t seed, tc_csr *m)
{
    uint64_t st = seed;
    int64_t *perm = malloc(sizeof *perm * (size_t)M);
    cr_assert_not_null(perm);
    for (int64_t i = 0; i < M; i++)
        perm[i] = i;
    for (int64_t i = M - 1; i > 0; i--) {
        const int64_t j = (int64_t)(tc_test_rand_u64(&st) % (uint64_t)(i + 1));
        const int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    const int per = 20;
    m->rows = M;
    m->cols = ((M + 15) / 16) * 32;
    m->nnz = M * per;
    m->row_off = malloc(sizeof *m->row_off * (size_t)(M + 1));
    m->col = malloc(sizeof *m->col * (size_t)m->nnz);
    m->val = malloc(sizeof *m->val * (size_t)m->nnz);
    cr_assert(m->row_off && m->col && m->val);
    for (int64_t i = 0; i < M; i++) {
        m->row_off[i] = i * per;
        const int64_t g = perm[i] / 16;
        int used[32] = {0}, k = 0;
        while (k < per) { /* 20 distinct columns of the group's 32, sorted below */
            const int c = (int)(tc_test_rand_u64(&st) % 32);
            if (!used[c]) {
                used[c] = 1;
                k++;
            }
        }
        int64_t p = i * per;
        for (int c = 0; c < 32; c++)
            if (used[c]) {
                m->col[p] = (int32_t)(g * 32 + c);
                m->val[p] = tc_test_rand_uniform(&st);
                p++;
            }
    }
    m->row_off[M] = m->nnz;
    free(perm);
}

typedef struct {
    tc_csr m;
    int32_t *h_off, *d_off, *d_col;
    float *d_val;
    tcsparseSpMatDescr_t A;
} sp_t;

static inline void sp_make(sp_t *s, const tc_csr *m)
{
    s->m = *m;
    s->h_off = malloc(sizeof *s->h_off * (size_t)(m->rows + 1));
    float *hv = malloc(sizeof *hv * (size_t)m->nnz);
    cr_assert(s->h_off && hv);
    for (int64_t i = 0; i <= m->rows; i++)
        s->h_off[i] = (int32_t)m->row_off[i];
    for (int64_t p = 0; p < m->nnz; p++) {
        hv[p] = (float)m->val[p];
        s->m.val[p] = hv[p]; /* the reference sees exactly what the GPU does */
    }
    cr_assert_eq(cudaMalloc((void **)&s->d_off, sizeof *s->d_off * (size_t)(m->rows + 1)), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&s->d_col, sizeof *s->d_col * (size_t)m->nnz), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&s->d_val, sizeof *s->d_val * (size_t)m->nnz), cudaSuccess);
    cudaMemcpy(s->d_off, s->h_off, sizeof *s->d_off * (size_t)(m->rows + 1), cudaMemcpyHostToDevice);
    cudaMemcpy(s->d_col, m->col, sizeof *s->d_col * (size_t)m->nnz, cudaMemcpyHostToDevice);
    cudaMemcpy(s->d_val, hv, sizeof *hv * (size_t)m->nnz, cudaMemcpyHostToDevice);
    free(hv);
    cr_assert_eq(tcsparseCreateCsr(&s->A, m->rows, m->cols, m->nnz, s->d_off, s->d_col, s->d_val,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
}

static inline void sp_free(sp_t *s)
{
    tcsparseDestroySpMat(s->A);
    cudaFree(s->d_off);
    cudaFree(s->d_col);
    cudaFree(s->d_val);
    free(s->h_off);
    tc_csr_free(&s->m);
}

/* One SpMM case: C (M x N) = A B, TF32, B and C row-major. */
typedef struct {
    sp_t *s;
    int64_t N;
    float *dB, *dC, *hC;
    double *ref, *out;
    tcsparseDnMatDescr_t B, C;
    void *buf;
    cudaStream_t stream; /* the handle's: the poison must be ordered before the call */
} spmm_t;

static inline void spmm_make(spmm_t *c, sp_t *s, int64_t N, uint64_t seed)
{
    const int64_t M = s->m.rows, K = s->m.cols;
    memset(c, 0, sizeof *c);
    c->s = s;
    c->N = N;
    float *hB = malloc(sizeof *hB * (size_t)(K * N));
    double *rB = malloc(sizeof *rB * (size_t)(K * N));
    c->hC = malloc(sizeof *c->hC * (size_t)(M * N));
    c->ref = calloc((size_t)(M * N), sizeof *c->ref);
    c->out = malloc(sizeof *c->out * (size_t)(M * N));
    cr_assert(hB && rB && c->hC && c->ref && c->out);
    uint64_t st = seed;
    for (int64_t i = 0; i < K * N; i++) {
        hB[i] = (float)tc_test_rand_uniform(&st);
        rB[i] = hB[i];
    }
    tc_ref_dense Bd = {K, N, N, TCSPARSE_ORDER_ROW, rB}, Cd = {M, N, N, TCSPARSE_ORDER_ROW, c->ref};
    tc_ref_spmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &s->m, &Bd,
                0.0, &Cd);
    cr_assert_eq(cudaMalloc((void **)&c->dB, sizeof *hB * (size_t)(K * N)), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&c->dC, sizeof *hB * (size_t)(M * N)), cudaSuccess);
    cudaMemcpy(c->dB, hB, sizeof *hB * (size_t)(K * N), cudaMemcpyHostToDevice);
    free(hB);
    free(rB);
    cr_assert_eq(tcsparseCreateDnMat(&c->B, K, N, N, c->dB, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&c->C, M, N, N, c->dC, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
}

static inline void spmm_free(spmm_t *c)
{
    tcsparseDestroyDnMat(c->B);
    tcsparseDestroyDnMat(c->C);
    cudaFree(c->dB);
    cudaFree(c->dC);
    cudaFree(c->buf);
    free(c->hC);
    free(c->ref);
    free(c->out);
}

static const float one = 1.0f, zero = 0.0f;

static inline void spmm_buffer(tcsparseHandle_t h, spmm_t *c)
{
    if (c->buf == NULL) {
        size_t bsz = 0;
        cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &one, c->s->A, c->B, &zero, c->C, CUDA_R_32F,
                                             TCSPARSE_SPMM_ALG_DEFAULT, &bsz), 0);
        cr_assert_eq(cudaMalloc(&c->buf, bsz ? bsz : 1), cudaSuccess);
    }
}

/* Enqueues one SpMM on the handle's stream (C poisoned first when poison is set, on s or,
 * when s is 0, on c->stream). */
static inline tcsparseStatus_t spmm_launch(tcsparseHandle_t h, spmm_t *c, cudaStream_t s, int poison)
{
    spmm_buffer(h, c);
    if (poison)
        cr_assert_eq(cudaMemsetAsync(c->dC, 0xff, sizeof(float) * (size_t)(c->s->m.rows * c->N),
                                     s ? s : c->stream),
                     cudaSuccess);
    return tcsparseSpMM(h, 0, 0, &one, c->s->A, c->B, &zero, c->C, CUDA_R_32F,
                        TCSPARSE_SPMM_ALG_DEFAULT, c->buf);
}

/* C against the reference (TF32 bound). */
static inline void spmm_check(spmm_t *c, const char *label)
{
    const size_t n = (size_t)(c->s->m.rows * c->N);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s", label);
    cudaMemcpy(c->hC, c->dC, sizeof(float) * n, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; i++)
        c->out[i] = c->hC[i];
    const double e = tc_rel_err(c->ref, c->out, n);
    cr_assert(e <= 5e-3, "%s: relative error %g", label, e);
}

static inline tcsparseMetcfStats_t stats_of(tcsparseHandle_t h, tcsparseSpMatDescr_t A)
{
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, A, &st), 0, "%s", tcsparseGetLastErrorMessage());
    return st;
}

static inline int64_t cached_plans(void)
{
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    return info.plans;
}

/* Runs checked calls until the trial is over (at most max calls); returns the calls made
 * and whether a route reason showed the trial. */
static inline int spmm_until_decided(tcsparseHandle_t h, spmm_t *c, int max, int *saw_trial,
                              const char *label)
{
    int calls = 0;
    *saw_trial = 0;
    for (; calls < max; calls++) {
        char lab[160];
        snprintf(lab, sizeof lab, "%s, call %d", label, calls + 1);
        cr_assert_eq(spmm_launch(h, c, 0, 1), 0, "%s: %s", lab, tcsparseGetLastErrorMessage());
        spmm_check(c, lab);
        tcsparseRouteInfo_t ri;
        tcsparseGetLastRoute(h, &ri);
        *saw_trial |= strstr(ri.reason, "; ordering: trial") != NULL;
        const int state = stats_of(h, c->s->A).late_state;
        if (state != TCSPARSE_LATE_WAITING && state != TCSPARSE_LATE_TRIAL)
            return calls + 1;
    }
    return calls;
}

static inline void late_env(void)
{
    unsetenv("TCSPARSE_REORDER"); /* the library's default: late */
    unsetenv("TCSPARSE_X_REORDER_LATE_BFS"); /* round 1 by its rule: not on these small B */
    unsetenv("TCSPARSE_SELECT");
    unsetenv("TCSPARSE_ROUTE");
    tc_config_reload();
}

/* Runs calls until the trial has started (the ordered plan built). */
static inline void spmm_until_trial(tcsparseHandle_t h, spmm_t *c, const char *label)
{
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(spmm_launch(h, c, 0, 1), 0, "%s", label);
        spmm_check(c, label);
        if (stats_of(h, c->s->A).late_state == TCSPARSE_LATE_TRIAL)
            return;
    }
    cr_assert(0, "%s: no trial after 40 calls", label);
}

#endif
