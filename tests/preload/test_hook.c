/* The hook interface (include/tcsparse_hook.h) as the interposer sees it: built with include/
 * alone, like compat/cusparse.  Argument checks (status and message), the defaults of a new
 * handle and descriptor, the effective route, and the fingerprint (computed and compared on a
 * GPU; without one, a CUDA failure reported as EXECUTION_FAILED). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "tcsparse_hook.h"

static void expect_message(const char *what)
{
    const char *m = tcsparseGetLastErrorMessage();
    cr_expect(m != NULL && strstr(m, what) != NULL, "message \"%s\" lacks \"%s\"", m ? m : "",
              what);
}

Test(hook, set_mode_checks)
{
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_set_mode(NULL, TC_HOOK_QUIET), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_set_mode: handle");
    cr_expect_eq(tc_hook_set_mode(h, TC_HOOK_MODES + 1u), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("other than TC_HOOK_*");
    cr_expect_eq(tc_hook_set_mode(h, TC_HOOK_DEFER_CUSPARSE | TC_HOOK_QUIET),
                 TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_set_mode(h, TC_HOOK_MODES), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_set_mode(h, 0), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tcsparseDestroy(h), TCSPARSE_STATUS_SUCCESS);
}

Test(hook, deferred_starts_at_zero)
{
    tcsparseHandle_t h;
    int deferred = -1;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_deferred(NULL, &deferred), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_deferred: handle");
    cr_expect_eq(tc_hook_deferred(h, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("deferred is NULL");
    cr_expect_eq(deferred, -1, "a refused call wrote its output");
    cr_expect_eq(tc_hook_deferred(h, &deferred), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(deferred, 0);
    cr_expect_eq(tcsparseDestroy(h), TCSPARSE_STATUS_SUCCESS);
}

Test(hook, route_in_effect)
{
    unsetenv("TCSPARSE_ROUTE"); /* the handle's setting decides */
    tcsparseHandle_t h;
    tcsparseRoute_t r = (tcsparseRoute_t)-1;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_route(NULL, &r), TCSPARSE_STATUS_INVALID_VALUE);
    cr_expect_eq(tc_hook_route(h, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("route is NULL");
    cr_expect_eq(tc_hook_route(h, &r), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(r, TCSPARSE_ROUTE_AUTO);
    cr_assert_eq(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BALANCED), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_route(h, &r), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(r, TCSPARSE_ROUTE_TC_BALANCED);
    cr_expect_eq(tcsparseDestroy(h), TCSPARSE_STATUS_SUCCESS);
}

Test(hook, set_cusparse_checks)
{
    tc_cusparse_entry_points real = {
        cusparseSpMM_bufferSize,  cusparseSpMM_preprocess,  cusparseSpMM,
        cusparseSDDMM_bufferSize, cusparseSDDMM_preprocess, cusparseSDDMM,
    };
    cr_expect_eq(tc_hook_set_cusparse(NULL), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_set_cusparse");
    tc_cusparse_entry_points partial = real;
    partial.sddmm = NULL;
    cr_expect_eq(tc_hook_set_cusparse(&partial), TCSPARSE_STATUS_INVALID_VALUE);
    cr_expect_eq(tc_hook_set_cusparse(&real), TCSPARSE_STATUS_SUCCESS);
}

/* A 4x4 CSR matrix with 4 nonzeros over arrays at `off`, `idx`, `val`. */
static tcsparseSpMatDescr_t csr4(void *off, void *idx, void *val)
{
    tcsparseSpMatDescr_t d = NULL;
    cr_assert_eq(tcsparseCreateCsr(&d, 4, 4, 4, off, idx, val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 TCSPARSE_STATUS_SUCCESS);
    return d;
}

Test(hook, has_plan_checks)
{
    int32_t off[5] = {0, 1, 2, 3, 4}, idx[4] = {0, 1, 2, 3};
    float val[4] = {1, 2, 3, 4};
    tcsparseSpMatDescr_t d = csr4(off, idx, val);
    int has = -1;
    cr_expect_eq(tc_hook_spmat_has_plan(NULL, &has), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_spmat_has_plan: spMatDescr");
    cr_expect_eq(tc_hook_spmat_has_plan(d, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_expect_eq(has, -1, "a refused call wrote its output");
    cr_expect_eq(tc_hook_spmat_has_plan(d, &has), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(has, 0, "a new descriptor has no plan");
    /* the plan of one operation: the descriptor's own, or its transpose's */
    has = -1;
    cr_expect_eq(tc_hook_spmat_has_plan_for(NULL, 0, &has), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_spmat_has_plan_for: spMatDescr");
    cr_expect_eq(tc_hook_spmat_has_plan_for(d, 0, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("has_plan is NULL");
    cr_expect_eq(tc_hook_spmat_has_plan_for(d, 2, &has), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("transposed is 2, not 0 or 1");
    cr_expect_eq(has, -1, "a refused call wrote its output");
    for (int t = 0; t < 2; t++) {
        cr_expect_eq(tc_hook_spmat_has_plan_for(d, t, &has), TCSPARSE_STATUS_SUCCESS);
        cr_expect_eq(has, 0, "a new descriptor has no plan (transposed %d)", t);
    }
    cr_expect_eq(tcsparseDestroySpMat(d), TCSPARSE_STATUS_SUCCESS);
}

/* Argument checks of the device-side guard; its work is tested on a GPU (test_gpu_guard). */
Test(hook, guard_checks)
{
    int32_t off[5] = {0, 1, 2, 3, 4}, idx[4] = {0, 1, 2, 3};
    float val[4] = {1, 2, 3, 4};
    tcsparseSpMatDescr_t d = csr4(off, idx, val), coo;
    cr_assert_eq(tcsparseCreateCoo(&coo, 4, 4, 4, off, idx, val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 TCSPARSE_STATUS_SUCCESS);
    int t = -1;
    cr_expect_eq(tc_hook_spmat_guard(NULL, 1, 7), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_spmat_guard: spMatDescr");
    cr_expect_eq(tc_hook_spmat_guard(coo, 1, 7), TCSPARSE_STATUS_NOT_SUPPORTED);
    expect_message("one CSR matrix");
    cr_expect_eq(tc_hook_spmat_guard_tripped(NULL, &t), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_spmat_guard_tripped: spMatDescr");
    cr_expect_eq(tc_hook_spmat_guard_tripped(d, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_expect_eq(t, -1, "a refused call wrote its output");
    cr_expect_eq(tc_hook_spmat_guard(d, 0, 7), TCSPARSE_STATUS_SUCCESS, "disarming allocates nothing");
    cr_expect_eq(tc_hook_spmat_guard_tripped(d, &t), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(t, 0, "a descriptor without a guard has not tripped");
    cr_expect_eq(tcsparseDestroySpMat(coo), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tcsparseDestroySpMat(d), TCSPARSE_STATUS_SUCCESS);
}

Test(hook, fingerprint)
{
    uint64_t fp = 0, fp2 = 0;
    cr_expect_eq(tc_hook_spmat_fingerprint(NULL, 0, &fp), TCSPARSE_STATUS_INVALID_VALUE);
    expect_message("tc_hook_spmat_fingerprint: spMatDescr");
    int32_t h_off[5] = {0, 1, 2, 3, 4}, h_idx[4] = {0, 1, 2, 3};
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        /* no GPU: the fingerprint's CUDA calls fail, and it says so */
        float val[4] = {1, 2, 3, 4};
        tcsparseSpMatDescr_t d = csr4(h_off, h_idx, val);
        cr_expect_eq(tc_hook_spmat_fingerprint(d, NULL, NULL), TCSPARSE_STATUS_INVALID_VALUE);
        expect_message("fingerprint is NULL");
        cr_expect_eq(tc_hook_spmat_fingerprint(d, 0, &fp), TCSPARSE_STATUS_EXECUTION_FAILED);
        expect_message("a CUDA call failed");
        cr_expect_eq(tcsparseDestroySpMat(d), TCSPARSE_STATUS_SUCCESS);
        return;
    }
    int32_t *off, *idx;
    float *val;
    cr_assert_eq(cudaMalloc((void **)&off, sizeof h_off), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&idx, sizeof h_idx), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&val, 4 * sizeof *val), cudaSuccess);
    cr_assert_eq(cudaMemcpy(off, h_off, sizeof h_off, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMemcpy(idx, h_idx, sizeof h_idx, cudaMemcpyHostToDevice), cudaSuccess);
    tcsparseSpMatDescr_t d = csr4(off, idx, val);
    cr_expect_eq(tc_hook_spmat_fingerprint(d, 0, &fp), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(tc_hook_spmat_fingerprint(d, 0, &fp2), TCSPARSE_STATUS_SUCCESS);
    cr_expect_eq(fp, fp2, "the same structure gave two fingerprints");
    /* the same arrays, another structure: columns swapped in two rows */
    h_idx[0] = 1;
    h_idx[1] = 0;
    cr_assert_eq(cudaMemcpy(idx, h_idx, sizeof h_idx, cudaMemcpyHostToDevice), cudaSuccess);
    cr_expect_eq(tc_hook_spmat_fingerprint(d, 0, &fp2), TCSPARSE_STATUS_SUCCESS);
    cr_expect_neq(fp, fp2, "another structure gave the same fingerprint");
    cr_expect_eq(tcsparseDestroySpMat(d), TCSPARSE_STATUS_SUCCESS);
    cudaFree(off);
    cudaFree(idx);
    cudaFree(val);
}
