/* The route table.  Rows, in order: tensor cores (when eligible and predicted to gain),
 * then cuSPARSE.  The decision is complete before anything is launched, so a fallback
 * never follows a partial write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"

/* Until the selector issue lands, a rule fitted to the H100 measurements of the small and
 * large suites (docs/performance.md, "Routing rule"): the tensor-core base kernel pays when
 *  - a 16x8 block carries >= 8 nonzeros on average (8 = one per condensed column, where
 *    TC gathers as many B rows as CSR does; above it, each B row fetched serves several rows
 *    of A), and
 *  - windows are short: the kernel stages 8 blocks at a time with ~4 dependent memory
 *    latencies per stage, so long windows are latency-bound (mean <= 12 blocks), and the
 *    longest window must not outlast the rest of the grid (max <= max(16, 2 x blocks per
 *    resident thread block slot)).
 * Over 312 measured cases this routing is within 1.05x of the faster of the two paths in
 * 293 and 1.9x at worst (geomean regret 1.018). */
#define TC_MIN_NNZ_PER_BLOCK 8.0
#define TC_MAX_MEAN_BLOCKS 12.0
#define TC_SLOTS_PER_SM 6

typedef struct {
    tcsparsePath_t path;
    char kernel[64];
    char reason[160];
} tc_decision;

static tcsparseRoute_t tc_effective_route(tcsparseHandle_t h)
{
    const char *e = getenv("TCSPARSE_ROUTE");
    if (e == NULL || e[0] == '\0')
        return h->route;
    if (strcmp(e, "tc") == 0) return TCSPARSE_ROUTE_TC;
    if (strcmp(e, "cusparse") == 0) return TCSPARSE_ROUTE_CUSPARSE;
    if (strcmp(e, "tc-base") == 0) return TCSPARSE_ROUTE_TC_BASE;
    if (strcmp(e, "tc-balanced") == 0) return TCSPARSE_ROUTE_TC_BALANCED;
    return TCSPARSE_ROUTE_AUTO;
}

static void tc_route_record(tcsparseHandle_t h, const tc_decision *d)
{
    tcsparseRouteInfo_t *r = &h->last_route;
    r->path = d->path;
    snprintf(r->kernel, sizeof r->kernel, "%s", d->kernel);
    snprintf(r->reason, sizeof r->reason, "%s", d->reason);
    r->predicted_tc_us = -1.0;
    r->predicted_cusparse_us = -1.0;
    const char *log = getenv("TCSPARSE_LOG");
    if (log != NULL && log[0] != '\0' && strcmp(log, "0") != 0)
        fprintf(stderr, "tcsparse: %s -> %s (%s)\n",
                d->path == TCSPARSE_PATH_CUSPARSE ? "cusparse" : "tensor cores", d->kernel,
                d->reason);
}

static int tc_ab_type(cudaDataType t)
{
    switch (t) {
    case CUDA_R_32F: return TC_T_F32;
    case CUDA_R_16F: return TC_T_F16;
    case CUDA_R_16BF: return TC_T_BF16;
    default: return -1;
    }
}

/* Fills args for the tensor-core SpMM, or returns 0 with the reason it is not eligible. */
static int tc_spmm_eligible(tcsparseHandle_t h, tcsparseOperation_t opA, tcsparseOperation_t opB,
                            tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                            tcsparseDnMatDescr_t C, cudaDataType ct, char *why, size_t n)
{
    int ab = tc_ab_type(A->value_type);
    if (opA != TCSPARSE_OPERATION_NON_TRANSPOSE || opB != TCSPARSE_OPERATION_NON_TRANSPOSE)
        return snprintf(why, n, "transposed operand"), 0;
    if (B->order != TCSPARSE_ORDER_ROW || C->order != TCSPARSE_ORDER_ROW)
        return snprintf(why, n, "column-major B or C"), 0;
    if (A->batch_count > 1 || B->batch_count > 1 || C->batch_count > 1)
        return snprintf(why, n, "strided batch"), 0;
    if (ab < 0 || B->value_type != A->value_type || ct != CUDA_R_32F ||
        (C->value_type != CUDA_R_32F && C->value_type != A->value_type))
        return snprintf(why, n, "type combination %s/%s/%s compute %s", tc_dtype_name(A->value_type),
                        tc_dtype_name(B->value_type), tc_dtype_name(C->value_type),
                        tc_dtype_name(ct)), 0;
    if (A->nnz >= (1ll << 31) || A->rows >= (1ll << 31) - 16 || A->cols >= (1ll << 31))
        return snprintf(why, n, "matrix beyond the int32 tensor-core plan"), 0;
    if (h->cc_major < 9)
        return snprintf(why, n, "device is sm_%d%d; kernels are built for sm_90", h->cc_major,
                        h->cc_minor), 0;
    return 1;
}

static tcsparseStatus_t tc_spmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                       tcsparseOperation_t opB, tcsparseConstSpMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C,
                                       cudaDataType ct, tc_decision *d, struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    tcsparseRoute_t route = tc_effective_route(h);
    d->path = TCSPARSE_PATH_CUSPARSE;
    snprintf(d->kernel, sizeof d->kernel, "cusparseSpMM");
    *plan = NULL;
    if (route == TCSPARSE_ROUTE_CUSPARSE) {
        snprintf(d->reason, sizeof d->reason, "route forced to cuSPARSE");
        return TCSPARSE_STATUS_SUCCESS;
    }
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (!tc_spmm_eligible(h, opA, opB, A, B, C, ct, d->reason, sizeof d->reason))
        return TCSPARSE_STATUS_SUCCESS;
    st = tc_plan_get(h, A, plan);
    if (st == TCSPARSE_STATUS_INVALID_VALUE)
        return st; /* the caller's structure is wrong: cuSPARSE would compute garbage */
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(d->reason, sizeof d->reason, "no plan: %s", tcsparseGetLastErrorMessage());
        tc_error_clear();
        *plan = NULL;
        return TCSPARSE_STATUS_SUCCESS;
    }
    const tcsparseMetcfStats_t *s = &(*plan)->stats;
    const double slots = (double)(h->sm_count > 0 ? h->sm_count : 132) * TC_SLOTS_PER_SM;
    const double max_ok = s->blocks / slots * 2.0 > 16.0 ? s->blocks / slots * 2.0 : 16.0;
    if (route == TCSPARSE_ROUTE_AUTO) {
        if (s->mean_nnz_per_block < TC_MIN_NNZ_PER_BLOCK) {
            snprintf(d->reason, sizeof d->reason, "%.2f nonzeros per 16x8 block < %.1f",
                     s->mean_nnz_per_block, TC_MIN_NNZ_PER_BLOCK);
            return TCSPARSE_STATUS_SUCCESS;
        }
        if (s->mean_blocks_per_window > TC_MAX_MEAN_BLOCKS) {
            snprintf(d->reason, sizeof d->reason, "windows too long: %.1f blocks on average > %.0f",
                     s->mean_blocks_per_window, TC_MAX_MEAN_BLOCKS);
            return TCSPARSE_STATUS_SUCCESS;
        }
        if (s->max_blocks_per_window > max_ok) {
            snprintf(d->reason, sizeof d->reason, "longest window %lld blocks > %.0f: imbalance",
                     (long long)s->max_blocks_per_window, max_ok);
            return TCSPARSE_STATUS_SUCCESS;
        }
    }
    /* Forced TC without a kernel named: balanced where the longest window would dominate. */
    int balanced = route == TCSPARSE_ROUTE_TC_BALANCED ||
                   (route == TCSPARSE_ROUTE_TC && s->max_blocks_per_window > max_ok);
    d->path = balanced ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
    snprintf(d->reason, sizeof d->reason, "%s; %.2f nnz/block, max/mean blocks per window %lld/%.1f",
             route == TCSPARSE_ROUTE_AUTO ? "auto" : "forced", s->mean_nnz_per_block,
             (long long)s->max_blocks_per_window, s->mean_blocks_per_window);
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_spmm_tc(tcsparseHandle_t h, const void *alpha,
                                   tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                   const void *beta, tcsparseDnMatDescr_t C,
                                   const struct tc_plan *plan, tc_decision *d)
{
    tc_spmm_args a = {0};
    a.M = A->rows;
    a.K = A->cols;
    a.N = C->cols;
    a.plan = &plan->dev;
    a.ab_type = tc_ab_type(A->value_type);
    a.c_type = tc_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32; /* TCSPARSE_MATH is read at handle creation */
    a.a_val = A->values;
    a.B = B->values;
    a.ldb = B->ld;
    a.C = C->values;
    a.ldc = C->ld;
    if (h->pointer_mode == TCSPARSE_POINTER_MODE_DEVICE) {
        a.alpha_dev = alpha;
        a.beta_dev = beta;
    } else {
        a.alpha = *(const float *)alpha;
        a.beta = *(const float *)beta;
    }
    if (d->path == TCSPARSE_PATH_TC_BALANCED) {
        a.chunks = plan->chunks;
        a.nchunks = plan->nchunks;
        a.split_windows = plan->split_windows;
        a.nsplit = plan->nsplit;
    }
    snprintf(d->kernel, sizeof d->kernel, "%s_%s", tc_spmm_kernel_name(&a),
             d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
    char msg[200];
    tcsparseStatus_t st = tc_spmm_launch(&a, h->stream, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSpMM: %s", msg);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_route_spmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstSpMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseDnMatDescr_t C, cudaDataType ct,
                                           tcsparseSpMMAlg_t alg, size_t *size)
{
    /* The tensor-core path needs no workspace (its plan lives with matA), so the size is
     * what cuSPARSE asks for, or 0 where only the tensor-core path can run. */
    tcsparseStatus_t st =
        tc_fallback_spmm_buffer_size(h, opA, opB, alpha, A, B, beta, C, ct, alg, size);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && tc_effective_route(h) != TCSPARSE_ROUTE_CUSPARSE) {
        char why[160];
        if (tc_spmm_eligible(h, opA, opB, A, B, C, ct, why, sizeof why)) {
            tc_error_clear();
            *size = 0;
            return TCSPARSE_STATUS_SUCCESS;
        }
    }
    return st;
}

tcsparseStatus_t tc_route_spmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstSpMatDescr_t A,
                                          tcsparseConstDnMatDescr_t B, const void *beta,
                                          tcsparseDnMatDescr_t C, cudaDataType ct,
                                          tcsparseSpMMAlg_t alg, void *buffer)
{
    tc_decision d;
    struct tc_plan *plan;
    tcsparseStatus_t st = tc_spmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_route_record(h, &d);
    /* cuSPARSE's own preprocessing too, so that either path can execute afterwards. */
    st = tc_fallback_spmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && d.path != TCSPARSE_PATH_CUSPARSE) {
        tc_error_clear();
        st = TCSPARSE_STATUS_SUCCESS;
    }
    return st;
}

tcsparseStatus_t tc_route_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                               const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                               tcsparseSpMMAlg_t alg, void *buffer)
{
    tc_decision d;
    struct tc_plan *plan;
    tcsparseStatus_t st = tc_spmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (d.path != TCSPARSE_PATH_CUSPARSE)
        st = tc_spmm_tc(h, alpha, A, B, beta, C, plan, &d);
    tc_route_record(h, &d);
    if (d.path == TCSPARSE_PATH_CUSPARSE)
        st = tc_fallback_spmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    return st;
}

tcsparseStatus_t tc_route_sddmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                            tcsparseOperation_t opB, const void *alpha,
                                            tcsparseConstDnMatDescr_t A,
                                            tcsparseConstDnMatDescr_t B, const void *beta,
                                            tcsparseSpMatDescr_t C, cudaDataType ct,
                                            tcsparseSDDMMAlg_t alg, size_t *size)
{
    return tc_fallback_sddmm_buffer_size(h, opA, opB, alpha, A, B, beta, C, ct, alg, size);
}

tcsparseStatus_t tc_route_sddmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstDnMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseSpMatDescr_t C, cudaDataType ct,
                                           tcsparseSDDMMAlg_t alg, void *buffer)
{
    return tc_fallback_sddmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
}

tcsparseStatus_t tc_route_sddmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                tcsparseOperation_t opB, const void *alpha,
                                tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                const void *beta, tcsparseSpMatDescr_t C, cudaDataType ct,
                                tcsparseSDDMMAlg_t alg, void *buffer)
{
    tc_decision d = {.path = TCSPARSE_PATH_CUSPARSE};
    snprintf(d.kernel, sizeof d.kernel, "cusparseSDDMM");
    snprintf(d.reason, sizeof d.reason, "tensor-core SDDMM not built yet");
    tc_route_record(h, &d);
    return tc_fallback_sddmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
}
