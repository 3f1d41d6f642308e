#define _POSIX_C_SOURCE 200809L /* setenv */
/* Late ordering across kinds of call and rounds (src/route/late.h, docs/reorder.md): an
 * attention layer's SDDMM and SpMM taking turns on one descriptor, a trial whose kind of call
 * stops coming, and round 1 (bfs, built on the host, against round 0's choice).  Every call
 * is checked against the CPU double reference with C poisoned (NaN) first, as in
 * test_gpu_late.c. */
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
#include "plan.h"
#include "testutil.h"
#include "late_case.h"

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
 * B fit in L2 and round 1 is skipped, as the other late-ordering tests rely on): after
 * first-col's round the bfs plan is built on the host and timed against the plan round 0
 * kept.  Every call right; one plan left; no ordering note once settled; after an eviction
 * between the rounds and after the end the plan kept is rebuilt in its ordering.  And with
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
