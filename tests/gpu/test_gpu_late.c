#define _POSIX_C_SOURCE 200809L /* setenv */
/* Late ordering (TCSPARSE_REORDER_LATE, the default; src/route/late.h, docs/reorder.md): the plan
 * starts in the caller's order, a settled tensor-core call builds the first-col plan, the
 * next calls time both and the faster stays.  Every call of the series is checked against
 * the CPU double reference with C poisoned (NaN) first; the descriptor's statistics tell the
 * state; the plan cache holds one plan once the trial is over.  Which plan wins is the GPU's
 * business (no timing is asserted); TCSPARSE_LATE_* states, the plans held and the results
 * are.  Also: off by the environment and by the descriptor, no gain, a capture before and
 * during the trial, SetPointers during the trial, a cache too small for both plans, four
 * threads with their own handles and streams calling on one descriptor through a trial, an
 * attention layer's SDDMM and SpMM taking turns on one descriptor, a trial whose kind of
 * call stops coming, and round 1 (bfs, built on the host, against round 0's choice). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
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
static void grouped(int64_t M, uint64_t seed, tc_csr *m)
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

static void sp_make(sp_t *s, const tc_csr *m)
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

static void sp_free(sp_t *s)
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

static void spmm_make(spmm_t *c, sp_t *s, int64_t N, uint64_t seed)
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

static void spmm_free(spmm_t *c)
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

static void spmm_buffer(tcsparseHandle_t h, spmm_t *c)
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
static tcsparseStatus_t spmm_launch(tcsparseHandle_t h, spmm_t *c, cudaStream_t s, int poison)
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
static void spmm_check(spmm_t *c, const char *label)
{
    const size_t n = (size_t)(c->s->m.rows * c->N);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s", label);
    cudaMemcpy(c->hC, c->dC, sizeof(float) * n, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; i++)
        c->out[i] = c->hC[i];
    const double e = tc_rel_err(c->ref, c->out, n);
    cr_assert(e <= 5e-3, "%s: relative error %g", label, e);
}

static tcsparseMetcfStats_t stats_of(tcsparseHandle_t h, tcsparseSpMatDescr_t A)
{
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, A, &st), 0, "%s", tcsparseGetLastErrorMessage());
    return st;
}

static int64_t cached_plans(void)
{
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    return info.plans;
}

/* Runs checked calls until the trial is over (at most max calls); returns the calls made
 * and whether a route reason showed the trial. */
static int spmm_until_decided(tcsparseHandle_t h, spmm_t *c, int max, int *saw_trial,
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

static void late_env(void)
{
    unsetenv("TCSPARSE_REORDER"); /* the library's default: late */
    unsetenv("TCSPARSE_X_REORDER_LATE_BFS"); /* round 1 by its rule: not on these small B */
    unsetenv("TCSPARSE_SELECT");
    unsetenv("TCSPARSE_ROUTE");
    tc_config_reload();
}

/* The trial runs to a decision on each route; every call right; one plan left. */
Test(gpu_late, spmm_trial_on_every_route)
{
    TC_REQUIRE_GPU();
    late_env();
    const tcsparseRoute_t routes[] = {TCSPARSE_ROUTE_TC, TCSPARSE_ROUTE_AUTO,
                                      TCSPARSE_ROUTE_TC_BALANCED};
    for (int r = 0; r < 3; r++) {
        tc_csr m;
        grouped(routes[r] == TCSPARSE_ROUTE_AUTO ? 32765 : 4093, 11 + r, &m);
        sp_t s;
        sp_make(&s, &m);
        spmm_t c;
        spmm_make(&c, &s, 64, 100 + r);
        tcsparseHandle_t h;
        cr_assert_eq(tcsparseCreate(&h), 0);
        tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
        tcsparseSetRoute(h, routes[r]);
        char label[80];
        snprintf(label, sizeof label, "SpMM route %d", (int)routes[r]);
        tcsparseMetcfStats_t st = stats_of(h, s.A);
        cr_assert_eq(st.late_state, TCSPARSE_LATE_WAITING, "%s", label);
        cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_IDENTITY, "%s", label);
        const int64_t blocks_caller = st.blocks;
        int saw = 0;
        const int calls = spmm_until_decided(h, &c, 80, &saw, label);
        st = stats_of(h, s.A);
        tcsparseRouteInfo_t last;
        tcsparseGetLastRoute(h, &last);
        if (routes[r] == TCSPARSE_ROUTE_AUTO && last.path == TCSPARSE_PATH_CUSPARSE &&
            st.late_state == TCSPARSE_LATE_WAITING) {
            /* the automatic route settled on cuSPARSE here: nothing to order (checked right) */
            cr_log_info("%s: routed to cuSPARSE (%s); no trial", label, last.reason);
            spmm_free(&c);
            sp_free(&s);
            tcsparseDestroy(h);
            continue;
        }
        cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED ||
                      st.late_state == TCSPARSE_LATE_KEPT_CALLER,
                  "%s: state %d after %d calls (last: %s: %s)", label, st.late_state, calls,
                  last.kernel, last.reason);
        cr_assert(saw, "%s: no call reported the trial", label);
        cr_assert_gt(st.late_ms_caller, 0.0f, "%s", label);
        cr_assert_gt(st.late_ms_ordered, 0.0f, "%s", label);
        cr_assert_gt(st.late_build_ms, 0.0, "%s", label);
        cr_assert_gt(st.late_calls, 2 * 3, "%s", label);
        if (st.late_state == TCSPARSE_LATE_KEPT_ORDERED) {
            cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_FIRST_COL, "%s", label);
            cr_assert_eq(st.reorder_mode, TCSPARSE_REORDER_LATE, "%s", label);
            cr_assert_lt(st.blocks * 4, blocks_caller, "%s: %lld blocks ordered, %lld before",
                         label, (long long)st.blocks, (long long)blocks_caller);
        } else {
            cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_IDENTITY, "%s", label);
            cr_assert_eq(st.blocks, blocks_caller, "%s", label);
        }
        cr_assert_eq(cached_plans(), 1, "%s: the other plan was not freed", label);
        /* later calls: settled, right, no trial */
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(spmm_launch(h, &c, 0, 1), 0);
            spmm_check(&c, label);
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(h, &ri);
            cr_assert(strstr(ri.reason, "ordering") == NULL, "%s: %s", label, ri.reason);
        }
        spmm_free(&c);
        sp_free(&s);
        tcsparseDestroy(h);
    }
}

/* SDDMM: the same trial on C's plan; every call right. */
Test(gpu_late, sddmm_trial)
{
    TC_REQUIRE_GPU();
    late_env();
    tc_csr m;
    grouped(2045, 21, &m);
    sp_t s;
    sp_make(&s, &m);
    const int64_t M = m.rows, N = m.cols, K = 64;
    uint64_t rs = 5;
    float *hA = malloc(sizeof *hA * (size_t)(M * K)), *hB = malloc(sizeof *hB * (size_t)(K * N));
    double *rA = malloc(sizeof *rA * (size_t)(M * K)), *rB = malloc(sizeof *rB * (size_t)(K * N));
    double *ref = malloc(sizeof *ref * (size_t)m.nnz), *out = malloc(sizeof *out * (size_t)m.nnz);
    float *hv = malloc(sizeof *hv * (size_t)m.nnz);
    cr_assert(hA && hB && rA && rB && ref && out && hv);
    for (int64_t i = 0; i < M * K; i++)
        rA[i] = hA[i] = (float)tc_test_rand_uniform(&rs);
    for (int64_t i = 0; i < K * N; i++)
        rB[i] = hB[i] = (float)tc_test_rand_uniform(&rs);
    tc_ref_dense Ad = {M, K, K, TCSPARSE_ORDER_ROW, rA}, Bd = {K, N, K, TCSPARSE_ORDER_COL, rB};
    tc_ref_sddmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &Ad, &Bd,
                 0.0, &s.m, ref);
    float *dA, *dB;
    cudaMalloc((void **)&dA, sizeof *hA * (size_t)(M * K));
    cudaMalloc((void **)&dB, sizeof *hB * (size_t)(K * N));
    cudaMemcpy(dA, hA, sizeof *hA * (size_t)(M * K), cudaMemcpyHostToDevice);
    cudaMemcpy(dB, hB, sizeof *hB * (size_t)(K * N), cudaMemcpyHostToDevice);
    tcsparseDnMatDescr_t A, B;
    cr_assert_eq(tcsparseCreateDnMat(&A, M, K, K, dA, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, K, dB, CUDA_R_32F, TCSPARSE_ORDER_COL), 0);
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC); /* the automatic route may keep cuSPARSE here */
    size_t bsz = 0;
    cr_assert_eq(tcsparseSDDMM_bufferSize(h, 0, 0, &one, A, B, &zero, s.A, CUDA_R_32F, 0, &bsz), 0);
    void *buf;
    cudaMalloc(&buf, bsz ? bsz : 1);
    int calls = 0, saw = 0, state = TCSPARSE_LATE_WAITING;
    for (; calls < 80 && (state == TCSPARSE_LATE_WAITING || state == TCSPARSE_LATE_TRIAL); calls++) {
        cudaMemset(s.d_val, 0xff, sizeof(float) * (size_t)m.nnz);
        cr_assert_eq(tcsparseSDDMM(h, 0, 0, &one, A, B, &zero, s.A, CUDA_R_32F, 0, buf), 0, "%s",
                     tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
        cudaMemcpy(hv, s.d_val, sizeof(float) * (size_t)m.nnz, cudaMemcpyDeviceToHost);
        for (int64_t p = 0; p < m.nnz; p++)
            out[p] = hv[p];
        const double e = tc_rel_err(ref, out, (size_t)m.nnz);
        cr_assert(e <= 5e-3, "SDDMM call %d: relative error %g", calls + 1, e);
        tcsparseRouteInfo_t ri;
        tcsparseGetLastRoute(h, &ri);
        saw |= strstr(ri.reason, "; ordering: trial") != NULL;
        state = stats_of(h, s.A).late_state;
    }
    tcsparseRouteInfo_t last;
    tcsparseGetLastRoute(h, &last);
    cr_assert(state == TCSPARSE_LATE_KEPT_ORDERED || state == TCSPARSE_LATE_KEPT_CALLER,
              "SDDMM: state %d after %d calls (last: %s: %s)", state, calls, last.kernel,
              last.reason);
    cr_assert(saw);
    cr_assert_eq(cached_plans(), 1);
    tcsparseDestroyDnMat(A);
    tcsparseDestroyDnMat(B);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(buf);
    free(hA);
    free(hB);
    free(rA);
    free(rB);
    free(ref);
    free(out);
    free(hv);
    sp_free(&s);
    tcsparseDestroy(h);
}

/* Off: TCSPARSE_REORDER=0, the descriptor at OFF; on with the descriptor at LATE whatever the
 * environment says.  No gain: a banded matrix (already in first-col order). */
Test(gpu_late, off_and_no_gain)
{
    TC_REQUIRE_GPU();
    late_env();
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    for (int v = 0; v < 4; v++) {
        tc_csr m;
        if (v < 3)
            grouped(1021, 31 + v, &m);
        else /* rows already in first-col order: the ordering saves nothing */
            cr_assert_eq(tc_gen_banded(1021, 6, 7, &m), 0);
        sp_t s;
        sp_make(&s, &m);
        if (v == 0)
            setenv("TCSPARSE_REORDER", "0", 1);
        else if (v == 1)
            cr_assert_eq(tcsparseSpMatSetReorder(s.A, TCSPARSE_REORDER_OFF), 0);
        else if (v == 2) {
            setenv("TCSPARSE_REORDER", "off", 1);
            tc_config_reload();
            cr_assert_eq(tcsparseSpMatSetReorder(s.A, TCSPARSE_REORDER_LATE), 0);
        }
        spmm_t c;
        spmm_make(&c, &s, 16, 40 + v); /* N <= 32: nothing tuned, the first call is settled */
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(spmm_launch(h, &c, 0, 1), 0);
            spmm_check(&c, "off/no gain");
        }
        const tcsparseMetcfStats_t st = stats_of(h, s.A);
        const int want[4] = {TCSPARSE_LATE_NONE, TCSPARSE_LATE_NONE, -1, TCSPARSE_LATE_NO_GAIN};
        if (want[v] >= 0)
            cr_assert_eq(st.late_state, want[v], "case %d: state %d", v, st.late_state);
        else
            cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED ||
                          st.late_state == TCSPARSE_LATE_KEPT_CALLER ||
                          st.late_state == TCSPARSE_LATE_TRIAL,
                      "case %d: state %d", v, st.late_state);
        if (v != 2)
            cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_IDENTITY, "case %d", v);
        if (v == 3)
            cr_assert_eq(cached_plans(), 1);
        spmm_free(&c);
        sp_free(&s);
        unsetenv("TCSPARSE_REORDER");
        tc_config_reload();
    }
    tcsparseDestroy(h);
}

/* Runs calls until the trial has started (the ordered plan built). */
static void spmm_until_trial(tcsparseHandle_t h, spmm_t *c, const char *label)
{
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(spmm_launch(h, c, 0, 1), 0, "%s", label);
        spmm_check(c, label);
        if (stats_of(h, c->s->A).late_state == TCSPARSE_LATE_TRIAL)
            return;
    }
    cr_assert(0, "%s: no trial after 40 calls", label);
}

/* SetPointers (same arrays) during the trial: both plans go, late ordering starts over and
 * runs to a decision again; a cache too small for both plans: not tried. */
Test(gpu_late, set_pointers_and_small_cache)
{
    TC_REQUIRE_GPU();
    late_env();
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    tc_csr m;
    grouped(2043, 51, &m);
    sp_t s;
    sp_make(&s, &m);
    spmm_t c;
    spmm_make(&c, &s, 48, 52);
    spmm_until_trial(h, &c, "set pointers");
    cr_assert_eq(cached_plans(), 2);
    cr_assert_eq(tcsparseCsrSetPointers(s.A, s.d_off, s.d_col, s.d_val), 0);
    cr_assert_eq(cached_plans(), 0);
    int saw = 0;
    spmm_until_decided(h, &c, 80, &saw, "after SetPointers");
    const int state = stats_of(h, s.A).late_state;
    cr_assert(state == TCSPARSE_LATE_KEPT_ORDERED || state == TCSPARSE_LATE_KEPT_CALLER, "%d", state);
    cr_assert(saw);
    cr_assert_eq(cached_plans(), 1);

    /* room for one plan only */
    cr_assert_eq(tcsparseCsrSetPointers(s.A, s.d_off, s.d_col, s.d_val), 0);
    tc_plan_cache_info info;
    (void)stats_of(h, s.A); /* builds the caller's order's plan */
    tc_plan_cache_get_info(&info);
    char lim[32];
    snprintf(lim, sizeof lim, "%zu", info.bytes + 1); /* the ordered plan needs more than 1 */
    setenv("TCSPARSE_CACHE_BYTES", lim, 1);
    tc_config_reload();
    tc_plan_cache_reconfigure();
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(spmm_launch(h, &c, 0, 1), 0);
        spmm_check(&c, "small cache");
    }
    const tcsparseMetcfStats_t st = stats_of(h, s.A);
    cr_assert_eq(st.late_state, TCSPARSE_LATE_NOT_TRIED, "state %d", st.late_state);
    cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_IDENTITY);
    cr_assert_eq(cached_plans(), 1);
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    spmm_free(&c);
    sp_free(&s);
    tcsparseDestroy(h);
}

/* Captures into a CUDA graph: before the trial (the graph holds the caller's order's plan:
 * never tried, the graph stays right), and during it (the ordered plan is kept, the other
 * freed by the next uncaptured call; the graph stays right). */
Test(gpu_late, captures)
{
    TC_REQUIRE_GPU();
    late_env();
    for (int during = 0; during < 2; during++) {
        const char *label = during ? "capture during the trial" : "capture before the trial";
        tcsparseHandle_t h;
        cr_assert_eq(tcsparseCreate(&h), 0);
        cudaStream_t s0;
        cr_assert_eq(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
        tcsparseSetStream(h, s0);
        tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
        tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
        tc_csr m;
        grouped(2041, 61 + during, &m);
        sp_t s;
        sp_make(&s, &m);
        spmm_t c;
        spmm_make(&c, &s, 16, 62 + during); /* nothing tuned: the first call is settled */
        c.stream = s0;
        (void)stats_of(h, s.A); /* the plan before the capture */
        if (during) {
            spmm_until_trial(h, &c, label);
            cr_assert_eq(cached_plans(), 2, "%s", label);
        } else {
            spmm_buffer(h, &c); /* outside the capture; no execution yet */
        }
        cudaGraph_t g;
        cudaGraphExec_t ge;
        cr_assert_eq(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal), cudaSuccess);
        cr_assert_eq(cudaMemsetAsync(c.dC, 0xff, sizeof(float) * (size_t)(m.rows * c.N), s0), cudaSuccess);
        cr_assert_eq(spmm_launch(h, &c, s0, 0), 0, "%s: %s", label, tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaStreamEndCapture(s0, &g), cudaSuccess, "%s", label);
        cr_assert_eq(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
        tcsparseRouteInfo_t ri;
        tcsparseGetLastRoute(h, &ri);
        cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "%s: %s", label, ri.reason);
        cr_assert_eq(cudaGraphLaunch(ge, s0), cudaSuccess);
        spmm_check(&c, label);
        /* uncaptured calls after it: no trial, or none any more */
        for (int i = 0; i < 6; i++) {
            cr_assert_eq(spmm_launch(h, &c, s0, 1), 0);
            spmm_check(&c, label);
        }
        const tcsparseMetcfStats_t st = stats_of(h, s.A);
        cr_assert_eq(st.late_state, during ? TCSPARSE_LATE_KEPT_ORDERED : TCSPARSE_LATE_NOT_TRIED,
                     "%s: state %d", label, st.late_state);
        cr_assert_eq(cached_plans(), 1, "%s", label);
        /* the graph still reads a live plan */
        cr_assert_eq(cudaGraphLaunch(ge, s0), cudaSuccess);
        spmm_check(&c, label);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
        spmm_free(&c);
        sp_free(&s);
        tcsparseDestroy(h);
        cudaStreamDestroy(s0);
    }
}

/* Four threads, each with its own handle, stream and C, call SpMM on one sparse descriptor
 * (the descriptor's lock serialises the host side; samples are timed on each caller's
 * stream): every result right, the trial decided, one plan left. */
typedef struct {
    sp_t *s;
    int64_t N;
    float *dB;
    uint64_t seed;
    const double *ref;
    pthread_barrier_t *start;
    double worst;
    int failed;
} thr_t;

static void *thr_run(void *arg)
{
    thr_t *w = arg;
    const int64_t M = w->s->m.rows, K = w->s->m.cols, N = w->N;
    tcsparseHandle_t h;
    cudaStream_t st;
    float *dC = NULL, *hC = malloc(sizeof *hC * (size_t)(M * N));
    double *out = malloc(sizeof *out * (size_t)(M * N));
    tcsparseDnMatDescr_t B, C;
    void *buf = NULL;
    size_t bsz = 0;
    w->failed = hC == NULL || out == NULL || tcsparseCreate(&h) != 0 ||
                cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
                cudaMalloc((void **)&dC, sizeof(float) * (size_t)(M * N)) != cudaSuccess;
    pthread_barrier_wait(w->start);
    if (w->failed)
        return NULL;
    tcsparseSetStream(h, st);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    tcsparseCreateDnMat(&B, K, N, N, w->dB, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&C, M, N, N, dC, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    w->failed |= tcsparseSpMM_bufferSize(h, 0, 0, &one, w->s->A, B, &zero, C, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &bsz) != 0 ||
                 cudaMalloc(&buf, bsz ? bsz : 1) != cudaSuccess;
    for (int i = 0; i < 40 && !w->failed; i++) {
        cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)(M * N), st);
        if (tcsparseSpMM(h, 0, 0, &one, w->s->A, B, &zero, C, CUDA_R_32F,
                         TCSPARSE_SPMM_ALG_DEFAULT, buf) != 0 ||
            cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)(M * N), cudaMemcpyDeviceToHost,
                            st) != cudaSuccess ||
            cudaStreamSynchronize(st) != cudaSuccess) {
            w->failed = 1;
            break;
        }
        for (int64_t j = 0; j < M * N; j++)
            out[j] = hC[j];
        const double e = tc_rel_err(w->ref, out, (size_t)(M * N));
        if (!(e <= w->worst))
            w->worst = e; /* NaN and inf stay */
    }
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
    cudaFree(buf);
    cudaFree(dC);
    cudaStreamDestroy(st);
    tcsparseDestroy(h);
    free(hC);
    free(out);
    return NULL;
}

Test(gpu_late, threads_share_a_descriptor)
{
    TC_REQUIRE_GPU();
    late_env();
    tc_csr m;
    grouped(8189, 71, &m);
    sp_t s;
    sp_make(&s, &m);
    spmm_t c; /* B and the reference */
    spmm_make(&c, &s, 64, 72);
    enum { T = 4 };
    pthread_t th[T];
    thr_t w[T];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, T);
    for (int i = 0; i < T; i++) {
        w[i] = (thr_t){&s, 64, c.dB, 80 + (uint64_t)i, c.ref, &start, 0.0, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, thr_run, &w[i]), 0);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < T; i++) {
        cr_assert(!w[i].failed, "thread %d: a call failed: %s", i, tcsparseGetLastErrorMessage());
        cr_assert(w[i].worst <= 5e-3, "thread %d: relative error %g", i, w[i].worst);
    }
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    const tcsparseMetcfStats_t st = stats_of(h, s.A);
    cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED || st.late_state == TCSPARSE_LATE_KEPT_CALLER,
              "state %d after 4 x 40 calls", st.late_state);
    cr_assert_eq(cached_plans(), 1);
    tcsparseDestroy(h);
    spmm_free(&c);
    sp_free(&s);
}

/* An attention layer on one descriptor S (GNN shape): S = X Y^T on S's pattern (SDDMM), then
 * H = S Z (SpMM), 50 times; two kinds of call take turns, so the trial's kind comes every
 * other call and the other kind runs on the current plan meanwhile.  Each SDDMM is checked
 * against the reference, each SpMM against the reference of S's values as computed. */
Test(gpu_late, attention_sddmm_then_spmm)
{
    TC_REQUIRE_GPU();
    late_env();
    tc_csr m;
    grouped(4091, 91, &m);
    sp_t s;
    sp_make(&s, &m);
    const int64_t M = m.rows, Ncol = m.cols, D = 64, F = 64;
    uint64_t rs = 92;
    float *hX = malloc(sizeof(float) * (size_t)(M * D)), *hY = malloc(sizeof(float) * (size_t)(Ncol * D));
    float *hZ = malloc(sizeof(float) * (size_t)(Ncol * F)), *hH = malloc(sizeof(float) * (size_t)(M * F));
    float *hS = malloc(sizeof(float) * (size_t)m.nnz);
    double *rX = malloc(sizeof(double) * (size_t)(M * D)), *rY = malloc(sizeof(double) * (size_t)(Ncol * D));
    double *rZ = malloc(sizeof(double) * (size_t)(Ncol * F)), *refS = malloc(sizeof(double) * (size_t)m.nnz);
    double *outS = malloc(sizeof(double) * (size_t)m.nnz), *refH = malloc(sizeof(double) * (size_t)(M * F));
    double *outH = malloc(sizeof(double) * (size_t)(M * F));
    cr_assert(hX && hY && hZ && hH && hS && rX && rY && rZ && refS && outS && refH && outH);
    for (int64_t i = 0; i < M * D; i++)
        rX[i] = hX[i] = (float)tc_test_rand_uniform(&rs);
    for (int64_t i = 0; i < Ncol * D; i++)
        rY[i] = hY[i] = (float)tc_test_rand_uniform(&rs);
    for (int64_t i = 0; i < Ncol * F; i++)
        rZ[i] = hZ[i] = (float)tc_test_rand_uniform(&rs);
    tc_ref_dense Xd = {M, D, D, TCSPARSE_ORDER_ROW, rX}, Yd = {D, Ncol, D, TCSPARSE_ORDER_COL, rY};
    tc_ref_sddmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &Xd, &Yd,
                 0.0, &s.m, refS);
    float *dX, *dY, *dZ, *dH;
    cudaMalloc((void **)&dX, sizeof(float) * (size_t)(M * D));
    cudaMalloc((void **)&dY, sizeof(float) * (size_t)(Ncol * D));
    cudaMalloc((void **)&dZ, sizeof(float) * (size_t)(Ncol * F));
    cudaMalloc((void **)&dH, sizeof(float) * (size_t)(M * F));
    cudaMemcpy(dX, hX, sizeof(float) * (size_t)(M * D), cudaMemcpyHostToDevice);
    cudaMemcpy(dY, hY, sizeof(float) * (size_t)(Ncol * D), cudaMemcpyHostToDevice);
    cudaMemcpy(dZ, hZ, sizeof(float) * (size_t)(Ncol * F), cudaMemcpyHostToDevice);
    tcsparseDnMatDescr_t X, Y, Z, H;
    cr_assert_eq(tcsparseCreateDnMat(&X, M, D, D, dX, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&Y, D, Ncol, D, dY, CUDA_R_32F, TCSPARSE_ORDER_COL), 0);
    cr_assert_eq(tcsparseCreateDnMat(&Z, Ncol, F, F, dZ, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&H, M, F, F, dH, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    size_t b1 = 0, b2 = 0;
    cr_assert_eq(tcsparseSDDMM_bufferSize(h, 0, 0, &one, X, Y, &zero, s.A, CUDA_R_32F, 0, &b1), 0);
    cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &one, s.A, Z, &zero, H, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &b2), 0);
    void *buf;
    cudaMalloc(&buf, (b1 > b2 ? b1 : b2) + 1);
    int saw = 0;
    for (int it = 0; it < 50; it++) {
        cudaMemset(s.d_val, 0xff, sizeof(float) * (size_t)m.nnz);
        cr_assert_eq(tcsparseSDDMM(h, 0, 0, &one, X, Y, &zero, s.A, CUDA_R_32F, 0, buf), 0, "%s",
                     tcsparseGetLastErrorMessage());
        tcsparseRouteInfo_t ri;
        tcsparseGetLastRoute(h, &ri);
        saw |= strstr(ri.reason, "; ordering: trial") != NULL;
        cudaMemset(dH, 0xff, sizeof(float) * (size_t)(M * F));
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &one, s.A, Z, &zero, H, CUDA_R_32F,
                                  TCSPARSE_SPMM_ALG_DEFAULT, buf), 0, "%s",
                     tcsparseGetLastErrorMessage());
        tcsparseGetLastRoute(h, &ri);
        saw |= strstr(ri.reason, "; ordering: trial") != NULL;
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
        cudaMemcpy(hS, s.d_val, sizeof(float) * (size_t)m.nnz, cudaMemcpyDeviceToHost);
        cudaMemcpy(hH, dH, sizeof(float) * (size_t)(M * F), cudaMemcpyDeviceToHost);
        for (int64_t p = 0; p < m.nnz; p++)
            outS[p] = s.m.val[p] = hS[p]; /* the SpMM's A: S as computed */
        const double es = tc_rel_err(refS, outS, (size_t)m.nnz);
        cr_assert(es <= 5e-3, "iteration %d: SDDMM relative error %g", it, es);
        tc_ref_dense Zd = {Ncol, F, F, TCSPARSE_ORDER_ROW, rZ}, Hd = {M, F, F, TCSPARSE_ORDER_ROW, refH};
        tc_ref_spmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &s.m,
                    &Zd, 0.0, &Hd);
        for (int64_t i = 0; i < M * F; i++)
            outH[i] = hH[i];
        const double eh = tc_rel_err(refH, outH, (size_t)(M * F));
        cr_assert(eh <= 5e-3, "iteration %d: SpMM relative error %g", it, eh);
    }
    const tcsparseMetcfStats_t st = stats_of(h, s.A);
    cr_assert(saw, "no call reported a trial (state %d)", st.late_state);
    cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED || st.late_state == TCSPARSE_LATE_KEPT_CALLER,
              "state %d after 50 iterations", st.late_state);
    cr_assert_eq(cached_plans(), 1);
    tcsparseDestroyDnMat(X);
    tcsparseDestroyDnMat(Y);
    tcsparseDestroyDnMat(Z);
    tcsparseDestroyDnMat(H);
    cudaFree(dX);
    cudaFree(dY);
    cudaFree(dZ);
    cudaFree(dH);
    cudaFree(buf);
    free(hX);
    free(hY);
    free(hZ);
    free(hH);
    free(hS);
    free(rX);
    free(rY);
    free(rZ);
    free(refS);
    free(outS);
    free(refH);
    free(outH);
    sp_free(&s);
    tcsparseDestroy(h);
}

/* The trial starts on one kind of call (SpMM, N = 16: settled on its second call) and that
 * kind stops; SpMM calls of another N (64: tuned) follow.  After 32 of them the trial moves
 * to that kind and decides on its timings: both plans timed, one plan left. */
Test(gpu_late, trial_moves_to_the_kind_that_comes)
{
    TC_REQUIRE_GPU();
    late_env();
    tc_csr m;
    grouped(4093, 101, &m);
    sp_t s;
    sp_make(&s, &m);
    spmm_t c16, c64;
    spmm_make(&c16, &s, 16, 102);
    spmm_make(&c64, &s, 64, 103);
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    spmm_until_trial(h, &c16, "N = 16");
    int moved = 0, calls = 0, state = TCSPARSE_LATE_TRIAL;
    for (; calls < 120 && state == TCSPARSE_LATE_TRIAL; calls++) {
        cr_assert_eq(spmm_launch(h, &c64, 0, 1), 0, "%s", tcsparseGetLastErrorMessage());
        spmm_check(&c64, "N = 64 during the trial");
        tcsparseRouteInfo_t ri;
        tcsparseGetLastRoute(h, &ri);
        moved |= strstr(ri.reason, "; ordering: trial moved") != NULL;
        state = stats_of(h, s.A).late_state;
    }
    const tcsparseMetcfStats_t st = stats_of(h, s.A);
    cr_assert(moved, "no call reported the trial's move to N = 64 (state %d after %d calls)",
              st.late_state, calls);
    cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED || st.late_state == TCSPARSE_LATE_KEPT_CALLER,
              "state %d after %d calls", st.late_state, calls);
    cr_assert_gt(st.late_ms_caller, 0.0f, "the caller's order's plan was not timed");
    cr_assert_gt(st.late_ms_ordered, 0.0f, "the ordered plan was not timed");
    cr_assert_eq(cached_plans(), 1);
    for (int i = 0; i < 2; i++) { /* both kinds right on the plan kept */
        cr_assert_eq(spmm_launch(h, i ? &c64 : &c16, 0, 1), 0);
        spmm_check(i ? &c64 : &c16, "after the trial");
    }
    spmm_free(&c16);
    spmm_free(&c64);
    sp_free(&s);
    tcsparseDestroy(h);
}

/* Evicts every cached plan (a one-byte cache for a moment); the descriptors keep their late
 * ordering state, so the next call rebuilds in the ordering kept. */
static void evict_every_plan(void)
{
    setenv("TCSPARSE_CACHE_BYTES", "1", 1);
    tc_config_reload();
    tc_plan_cache_reconfigure();
    cr_assert_eq(cached_plans(), 0);
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
}

/* Round 1, forced (TCSPARSE_X_REORDER_LATE_BFS=1: whatever B's size; by the rule these small
 * B fit in L2 and round 1 is skipped, as every test above relies on): after first-col's round
 * the bfs plan is built on the host and timed against the plan round 0 kept.  Every call
 * right; one plan left; no ordering note once settled; after an eviction between the rounds
 * and after the end the plan kept is rebuilt in its ordering.  And with
 * TCSPARSE_X_REORDER_LATE_BFS=0 no round 1. */
Test(gpu_late, bfs_round)
{
    TC_REQUIRE_GPU();
    late_env();
    for (int forced = 1; forced >= 0; forced--) {
        setenv("TCSPARSE_X_REORDER_LATE_BFS", forced ? "1" : "0", 1);
        tc_config_reload();
        tc_csr m;
        grouped(4093, 131, &m);
        sp_t s;
        sp_make(&s, &m);
        spmm_t c;
        spmm_make(&c, &s, 32, 132);
        tcsparseHandle_t h;
        cr_assert_eq(tcsparseCreate(&h), 0);
        tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
        tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
        const int64_t blocks_caller = stats_of(h, s.A).blocks;
        int first = 0, bfs = 0, calls = 0, state = TCSPARSE_LATE_WAITING, evicted = 0;
        char label[64];
        for (; calls < 160; calls++) {
            snprintf(label, sizeof label, "bfs round (forced %d), call %d", forced, calls + 1);
            cr_assert_eq(spmm_launch(h, &c, 0, 1), 0, "%s: %s", label, tcsparseGetLastErrorMessage());
            spmm_check(&c, label);
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(h, &ri);
            first |= strstr(ri.reason, "; ordering: trial, first-col built") != NULL;
            bfs |= strstr(ri.reason, "; ordering: trial, bfs built") != NULL;
            state = stats_of(h, s.A).late_state;
            if (forced && first && !bfs && !evicted && state == TCSPARSE_LATE_WAITING &&
                strstr(ri.reason, " kept (") != NULL) {
                /* round 0 decided, round 1 not started: an eviction now must rebuild the
                 * plan round 0 kept, not the caller's order */
                const int kept0 = stats_of(h, s.A).reorder_ordering;
                evict_every_plan();
                cr_assert_eq(spmm_launch(h, &c, 0, 1), 0, "%s", tcsparseGetLastErrorMessage());
                spmm_check(&c, "rebuilt between the rounds");
                cr_assert_eq(stats_of(h, s.A).reorder_ordering, kept0,
                             "rebuilt between the rounds in ordering %d, round 0 kept %d",
                             stats_of(h, s.A).reorder_ordering, kept0);
                evicted = 1;
            }
            if ((bfs || (!forced && first)) && state != TCSPARSE_LATE_WAITING &&
                state != TCSPARSE_LATE_TRIAL)
                break;
        }
        const tcsparseMetcfStats_t st = stats_of(h, s.A);
        cr_assert(first, "forced %d: round 0 never started (state %d)", forced, st.late_state);
        cr_assert_eq(bfs, forced, "forced %d: round 1 %s", forced, bfs ? "ran" : "never started");
        cr_assert_eq(evicted, forced, "forced %d: no eviction between the rounds", forced);
        cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED ||
                      st.late_state == TCSPARSE_LATE_KEPT_CALLER,
                  "forced %d: state %d after %d calls", forced, st.late_state, calls + 1);
        if (st.late_state == TCSPARSE_LATE_KEPT_ORDERED) {
            cr_assert(st.reorder_ordering == TCSPARSE_ORDERING_FIRST_COL ||
                          (forced && st.reorder_ordering == TCSPARSE_ORDERING_BFS),
                      "ordering %d kept", st.reorder_ordering);
            cr_assert_lt(st.blocks * 4, blocks_caller, "%lld blocks kept, %lld before",
                         (long long)st.blocks, (long long)blocks_caller);
        } else {
            cr_assert_eq(st.reorder_ordering, TCSPARSE_ORDERING_IDENTITY);
        }
        cr_assert_gt(st.late_ms_caller, 0.0f, "the last round's plan set aside was not timed");
        cr_assert_gt(st.late_ms_ordered, 0.0f, "the last round's plan was not timed");
        cr_assert_eq(cached_plans(), 1, "forced %d: the other plan was not freed", forced);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(spmm_launch(h, &c, 0, 1), 0);
            spmm_check(&c, "settled");
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(h, &ri);
            cr_assert(strstr(ri.reason, "ordering") == NULL, "settled: %s", ri.reason);
        }
        /* evicted (a one-byte cache), then rebuilt on the next call in the ordering kept */
        evict_every_plan();
        cr_assert_eq(spmm_launch(h, &c, 0, 1), 0, "%s", tcsparseGetLastErrorMessage());
        spmm_check(&c, "rebuilt");
        const tcsparseMetcfStats_t re = stats_of(h, s.A);
        cr_assert_eq(re.reorder_ordering, st.reorder_ordering, "rebuilt in ordering %d, kept %d",
                     re.reorder_ordering, st.reorder_ordering);
        cr_assert_eq(re.blocks, st.blocks);
        cr_assert_eq(re.late_state, st.late_state);
        spmm_free(&c);
        sp_free(&s);
        tcsparseDestroy(h);
    }
    unsetenv("TCSPARSE_X_REORDER_LATE_BFS");
    tc_config_reload();
}
