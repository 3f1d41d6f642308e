#define _POSIX_C_SOURCE 200809L /* setenv */
/* Late ordering (TCSPARSE_REORDER_LATE, the default; src/route/late.h, docs/reorder.md): the plan
 * starts in the caller's order, a settled tensor-core call builds the first-col plan, the
 * next calls time both and the faster stays.  Every call of the series is checked against
 * the CPU double reference with C poisoned (NaN) first; the descriptor's statistics tell the
 * state; the plan cache holds one plan once the trial is over.  Which plan wins is the GPU's
 * business (no timing is asserted); TCSPARSE_LATE_* states, the plans held and the results
 * are.  Also: off by the environment and by the descriptor, no gain, a capture before and
 * during the trial, SetPointers during the trial, a cache too small for both plans, four
 * threads with their own handles and streams calling on one descriptor through a trial.
 * Trials across kinds of call and round 1 are test_gpu_late_mixed.c's. */
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
#include "late_case.h"

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
        if (routes[r] == TCSPARSE_ROUTE_AUTO &&
            (last.path == TCSPARSE_PATH_CUSPARSE || last.path == TCSPARSE_PATH_CUDA_CORE) &&
            st.late_state == TCSPARSE_LATE_WAITING) {
            /* the automatic route settled on a path that reads the caller's rows in their own
             * order (cuSPARSE, CUDA cores): nothing to order (every call checked right) */
            cr_log_info("%s: routed to %s (%s); no trial", label, last.kernel, last.reason);
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
        if (v == 0) {
            setenv("TCSPARSE_REORDER", "0", 1);
            tc_config_reload();
        } else if (v == 1)
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
