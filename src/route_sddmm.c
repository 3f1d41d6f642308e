/* The SDDMM rows of the route table: the tensor-core SDDMM on C's plan when the call is
 * eligible (and, on the automatic route, predicted to gain), otherwise cuSPARSE.  As for
 * SpMM, the decision is complete before anything is launched. */
#include <stdio.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"

/* Automatic route, fitted to the H100 measurements of docs/performance.md (SDDMM): the
 * tensor-core SDDMM pays where a 16x8 block holds more than one nonzero per condensed column
 * on average (the 16 A rows and 8 B columns it reads then serve several outputs each) and
 * windows are short (long ones, typical of power-law graphs, lose to cusparseSDDMM even with
 * the chunked schedule).  Over the 116 measured cases of the shared matrices this picks
 * within 1.05x of the faster path in 83, 1.99x at worst, geomean regret 1.094 (the first
 * guess, >= 8 nonzeros per non-empty window, had 1.307). */
#define TC_SDDMM_MIN_NNZ_PER_BLOCK 8.5
#define TC_SDDMM_MAX_MEAN_BLOCKS 12.0

/* 0 with the reason when the tensor-core SDDMM cannot run this call. */
static int tc_sddmm_eligible(tcsparseHandle_t h, tcsparseOperation_t opA, tcsparseOperation_t opB,
                             tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                             tcsparseConstSpMatDescr_t C, cudaDataType ct, char *why, size_t n)
{
    const cudaDataType ab = A->value_type;
    if (opA != TCSPARSE_OPERATION_NON_TRANSPOSE || opB != TCSPARSE_OPERATION_NON_TRANSPOSE)
        return snprintf(why, n, "transposed operand"), 0;
    if (A->order != TCSPARSE_ORDER_ROW || B->order != TCSPARSE_ORDER_COL)
        return snprintf(why, n, "layout: the kernel takes A row-major and B column-major"), 0;
    if (A->batch_count > 1 || B->batch_count > 1 || C->batch_count > 1)
        return snprintf(why, n, "strided batch"), 0;
    if ((ab != CUDA_R_32F && ab != CUDA_R_16F) || B->value_type != ab || ct != CUDA_R_32F ||
        (C->value_type != CUDA_R_32F && C->value_type != ab))
        return snprintf(why, n, "type combination %s/%s/%s compute %s", tc_dtype_name(ab),
                        tc_dtype_name(B->value_type), tc_dtype_name(C->value_type),
                        tc_dtype_name(ct)), 0;
    if (C->nnz >= (1ll << 31) || C->rows >= (1ll << 31) - 16 || C->cols >= (1ll << 31))
        return snprintf(why, n, "matrix beyond the int32 tensor-core plan"), 0;
    if (h->cc_major < 9)
        return snprintf(why, n, "device is sm_%d%d; kernels are built for sm_90", h->cc_major,
                        h->cc_minor), 0;
    return 1;
}

static tcsparseStatus_t tc_sddmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                        tcsparseOperation_t opB, tcsparseConstDnMatDescr_t A,
                                        tcsparseConstDnMatDescr_t B, tcsparseConstSpMatDescr_t C,
                                        cudaDataType ct, tc_decision *d, struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    const tcsparseRoute_t route = tc_route_effective(h);
    d->path = TCSPARSE_PATH_CUSPARSE;
    snprintf(d->kernel, sizeof d->kernel, "cusparseSDDMM");
    *plan = NULL;
    if (route == TCSPARSE_ROUTE_CUSPARSE) {
        snprintf(d->reason, sizeof d->reason, "route forced to cuSPARSE");
        return TCSPARSE_STATUS_SUCCESS;
    }
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp); /* fills the device's capability */
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (!tc_sddmm_eligible(h, opA, opB, A, B, C, ct, d->reason, sizeof d->reason))
        return TCSPARSE_STATUS_SUCCESS;
    st = tc_plan_get(h, C, plan);
    if (st == TCSPARSE_STATUS_INVALID_VALUE)
        return st; /* the caller's structure is wrong: cuSPARSE would compute garbage */
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(d->reason, sizeof d->reason, "no plan: %s", tcsparseGetLastErrorMessage());
        tc_error_clear();
        *plan = NULL;
        return TCSPARSE_STATUS_SUCCESS;
    }
    const tcsparseMetcfStats_t *s = &(*plan)->stats;
    const int64_t busy = s->windows - s->empty_windows;
    const double per_window = busy > 0 ? (double)s->nnz / (double)busy : 0.0;
    if (route == TCSPARSE_ROUTE_AUTO && s->mean_nnz_per_block < TC_SDDMM_MIN_NNZ_PER_BLOCK) {
        snprintf(d->reason, sizeof d->reason, "%.2f nonzeros per 16x8 block < %.1f",
                 s->mean_nnz_per_block, TC_SDDMM_MIN_NNZ_PER_BLOCK);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (route == TCSPARSE_ROUTE_AUTO && s->mean_blocks_per_window > TC_SDDMM_MAX_MEAN_BLOCKS) {
        snprintf(d->reason, sizeof d->reason, "windows too long: %.1f blocks on average > %.0f",
                 s->mean_blocks_per_window, TC_SDDMM_MAX_MEAN_BLOCKS);
        return TCSPARSE_STATUS_SUCCESS;
    }
    /* Without a kernel named: the chunked schedule where some window is longer than a chunk
     * (otherwise both schedules are the same thread blocks). */
    const int balanced = route == TCSPARSE_ROUTE_TC_BALANCED ||
                         (route != TCSPARSE_ROUTE_TC_BASE &&
                          s->max_blocks_per_window > (*plan)->chunk_blocks);
    d->path = balanced ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
    snprintf(d->reason, sizeof d->reason,
             "%s; %.1f nnz per non-empty window, %.2f nnz/block, max/mean blocks per window %lld/%.1f",
             route == TCSPARSE_ROUTE_AUTO ? "auto" : "forced", per_window, s->mean_nnz_per_block,
             (long long)s->max_blocks_per_window, s->mean_blocks_per_window);
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_sddmm_tc(tcsparseHandle_t h, const void *alpha,
                                    tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                    const void *beta, tcsparseSpMatDescr_t C,
                                    const struct tc_plan *plan, tc_decision *d)
{
    tc_sddmm_args a = {0};
    a.M = C->rows;
    a.N = C->cols;
    a.K = A->cols;
    a.plan = &plan->dev;
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    a.A = A->values;
    a.lda = A->ld;
    a.B = B->values;
    a.ldb = B->ld;
    a.C = C->values;
    tc_route_scalars(h, alpha, beta, &a.alpha_dev, &a.beta_dev, &a.alpha, &a.beta);
    if (d->path == TCSPARSE_PATH_TC_BALANCED) {
        a.chunks = plan->chunks;
        a.nchunks = plan->nchunks;
    }
    snprintf(d->kernel, sizeof d->kernel, "%s_%s", tc_sddmm_kernel_name(&a),
             d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
    char msg[200];
    tcsparseStatus_t st = tc_sddmm_launch(&a, h->stream, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSDDMM: %s", msg);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_route_sddmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                            tcsparseOperation_t opB, const void *alpha,
                                            tcsparseConstDnMatDescr_t A,
                                            tcsparseConstDnMatDescr_t B, const void *beta,
                                            tcsparseSpMatDescr_t C, cudaDataType ct,
                                            tcsparseSDDMMAlg_t alg, size_t *size)
{
    /* The tensor-core path needs no workspace, so the size is cuSPARSE's (either path may
     * execute later), or 0 where only the tensor-core path can run. */
    tcsparseStatus_t st =
        tc_fallback_sddmm_buffer_size(h, opA, opB, alpha, A, B, beta, C, ct, alg, size);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && tc_route_effective(h) != TCSPARSE_ROUTE_CUSPARSE) {
        char why[160];
        if (tc_sddmm_eligible(h, opA, opB, A, B, C, ct, why, sizeof why)) {
            tc_error_clear();
            *size = 0;
            return TCSPARSE_STATUS_SUCCESS;
        }
    }
    return st;
}

tcsparseStatus_t tc_route_sddmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstDnMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseSpMatDescr_t C, cudaDataType ct,
                                           tcsparseSDDMMAlg_t alg, void *buffer)
{
    tc_decision d;
    struct tc_plan *plan;
    tcsparseStatus_t st = tc_sddmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_route_record(h, &d);
    /* cuSPARSE's own preprocessing too, so that either path can execute afterwards (the
     * interposer calls the real one itself). */
    h->deferred = h->defer_cusparse;
    st = h->deferred ? TCSPARSE_STATUS_SUCCESS
                     : tc_fallback_sddmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && d.path != TCSPARSE_PATH_CUSPARSE) {
        tc_error_clear();
        st = TCSPARSE_STATUS_SUCCESS;
    }
    return st;
}

tcsparseStatus_t tc_route_sddmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                tcsparseOperation_t opB, const void *alpha,
                                tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                const void *beta, tcsparseSpMatDescr_t C, cudaDataType ct,
                                tcsparseSDDMMAlg_t alg, void *buffer)
{
    tc_decision d;
    struct tc_plan *plan;
    tcsparseStatus_t st = tc_sddmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (d.path != TCSPARSE_PATH_CUSPARSE)
        st = tc_sddmm_tc(h, alpha, A, B, beta, C, plan, &d);
    tc_route_record(h, &d);
    h->deferred = d.path == TCSPARSE_PATH_CUSPARSE && h->defer_cusparse;
    if (d.path == TCSPARSE_PATH_CUSPARSE && !h->deferred)
        st = tc_fallback_sddmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    return st;
}
