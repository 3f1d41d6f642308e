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
 * 293 and 1.9x at worst (geomean regret 1.018).  Matrices with >= 20 nonzeros per block but
 * long windows take the balanced kernel (after its atomics became 16-byte vector atomics). */
#define TC_MIN_NNZ_PER_BLOCK 8.0
#define TC_MAX_MEAN_BLOCKS 12.0
#define TC_SLOTS_PER_SM 6
#define TC_BALANCED_NNZ_PER_BLOCK 20.0


tcsparseRoute_t tc_route_effective(tcsparseHandle_t h)
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

void tc_route_record(tcsparseHandle_t h, const tc_decision *d)
{
    tcsparseRouteInfo_t *r = &h->last_route;
    r->path = d->path;
    snprintf(r->kernel, sizeof r->kernel, "%s", d->kernel);
    snprintf(r->reason, sizeof r->reason, "%s", d->reason);
    r->predicted_tc_us = -1.0;
    r->predicted_cusparse_us = -1.0;
    const char *log = getenv("TCSPARSE_LOG");
    if (!h->quiet && log != NULL && log[0] != '\0' && strcmp(log, "0") != 0)
        fprintf(stderr, "tcsparse: %s -> %s (%s)\n",
                d->path == TCSPARSE_PATH_CUSPARSE ? "cusparse" : "tensor cores", d->kernel,
                d->reason);
}

void tc_route_scalars(tcsparseHandle_t h, const void *alpha, const void *beta,
                      const float **alpha_dev, const float **beta_dev, float *alpha_host,
                      float *beta_host)
{
    if (h->pointer_mode == TCSPARSE_POINTER_MODE_DEVICE) {
        *alpha_dev = alpha;
        *beta_dev = beta;
    } else {
        *alpha_host = *(const float *)alpha;
        *beta_host = *(const float *)beta;
    }
}

int tc_route_ab_type(cudaDataType t)
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
    int ab = tc_route_ab_type(A->value_type);
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

/* The measured decision for this call's kind, if _preprocess measured one. */
static const tc_measured *tc_measured_find(tcsparseHandle_t h, const struct tc_plan *p,
                                           tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C)
{
    const int tf32 = h->math == TCSPARSE_MATH_TF32, ab = tc_route_ab_type(B->value_type);
    const int c = tc_route_ab_type(C->value_type);
    for (int i = p->nmeasured - 1; i >= 0; i--) {
        const tc_measured *m = &p->measured[i];
        if (m->N == C->cols && m->ab_type == ab && m->c_type == c && m->tf32 == tf32)
            return m;
    }
    return NULL;
}

static tcsparseStatus_t tc_spmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                       tcsparseOperation_t opB, tcsparseConstSpMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C,
                                       cudaDataType ct, tc_decision *d, struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    tcsparseRoute_t route = tc_route_effective(h);
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
    const tc_measured *meas = route == TCSPARSE_ROUTE_AUTO ? tc_measured_find(h, *plan, B, C) : NULL;
    if (meas != NULL) {
        d->path = meas->path;
        snprintf(d->reason, sizeof d->reason,
                 "measured at preprocess: base %.3f ms, balanced %.3f ms, cuSPARSE %.3f ms",
                 meas->ms_base, meas->ms_balanced, meas->ms_cusparse);
        return TCSPARSE_STATUS_SUCCESS;
    }
    const double slots = (double)(h->sm_count > 0 ? h->sm_count : 132) * TC_SLOTS_PER_SM;
    const double max_ok = s->blocks / slots * 2.0 > 16.0 ? s->blocks / slots * 2.0 : 16.0;
    /* Dense blocks but long or uneven windows: the balanced kernel (measured faster than
     * cuSPARSE on ogbl-ddi and the dlmc matrices, which have >= 22 nonzeros per block). */
    if (route == TCSPARSE_ROUTE_AUTO && s->mean_nnz_per_block >= TC_BALANCED_NNZ_PER_BLOCK &&
        (s->mean_blocks_per_window > TC_MAX_MEAN_BLOCKS || s->max_blocks_per_window > max_ok)) {
        d->path = TCSPARSE_PATH_TC_BALANCED;
        snprintf(d->reason, sizeof d->reason,
                 "auto; %.2f nnz/block >= %.0f with long windows (mean %.1f, max %lld blocks)",
                 s->mean_nnz_per_block, TC_BALANCED_NNZ_PER_BLOCK, s->mean_blocks_per_window,
                 (long long)s->max_blocks_per_window);
        return TCSPARSE_STATUS_SUCCESS;
    }
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
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32; /* TCSPARSE_MATH is read at handle creation */
    a.a_val = A->values;
    a.B = B->values;
    a.ldb = B->ld;
    a.C = C->values;
    a.ldc = C->ld;
    tc_route_scalars(h, alpha, beta, &a.alpha_dev, &a.beta_dev, &a.alpha, &a.beta);
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

/* TCSPARSE_SELECT=measure: _preprocess times the candidates once on the caller's operands
 * (into a scratch C, so the caller's C is untouched) and the plan keeps the fastest. */
static int tc_select_measure(void)
{
    const char *e = getenv("TCSPARSE_SELECT");
    return e != NULL && strcmp(e, "measure") == 0;
}

typedef struct {
    tcsparseOperation_t opA, opB;
    const void *alpha, *beta;
    tcsparseConstSpMatDescr_t A;
    tcsparseConstDnMatDescr_t B;
    tcsparseDnMatDescr_t C;
    cudaDataType ct;
    tcsparseSpMMAlg_t alg;
    void *buffer;
} tc_spmm_call;

static tcsparseStatus_t tc_run_path(tcsparseHandle_t h, const tc_spmm_call *c,
                                    const struct tc_plan *plan, tcsparsePath_t path)
{
    if (path == TCSPARSE_PATH_CUSPARSE)
        return tc_fallback_spmm(h, c->opA, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct,
                                c->alg, c->buffer);
    tc_decision d = {.path = path};
    return tc_spmm_tc(h, c->alpha, c->A, c->B, c->beta, c->C, plan, &d);
}

/* One warm-up, then the best of three runs; negative when the path fails. */
static float tc_time_path(tcsparseHandle_t h, const tc_spmm_call *c, const struct tc_plan *plan,
                          tcsparsePath_t path, cudaEvent_t e0, cudaEvent_t e1)
{
    float best = -1.0f;
    if (tc_run_path(h, c, plan, path) != TCSPARSE_STATUS_SUCCESS) {
        tc_error_clear();
        return -1.0f;
    }
    for (int i = 0; i < 3; i++) {
        float ms = 0.0f;
        if (cudaEventRecord(e0, h->stream) != cudaSuccess ||
            tc_run_path(h, c, plan, path) != TCSPARSE_STATUS_SUCCESS ||
            cudaEventRecord(e1, h->stream) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess) {
            (void)cudaGetLastError();
            tc_error_clear();
            return -1.0f;
        }
        if (best < 0.0f || ms < best)
            best = ms;
    }
    return best;
}

static void tc_spmm_measure(tcsparseHandle_t h, const tc_spmm_call *call, struct tc_plan *plan)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(h->stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone)
        return; /* nothing may run or synchronise inside a capture */
    struct tcsparseDnMatDescr scratch = *call->C;
    scratch.cusp = NULL;
    const size_t bytes = (size_t)call->C->rows * (size_t)call->C->ld * tc_dtype_size(call->C->value_type);
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaMalloc(&scratch.values, bytes + 16) != cudaSuccess ||
        cudaMemsetAsync(scratch.values, 0, bytes, h->stream) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
        goto done; /* measuring is an optimisation: without memory, the rule decides */
    tc_spmm_call c = *call;
    c.C = &scratch;
    tc_measured m = {.N = call->C->cols, .ab_type = tc_route_ab_type(call->B->value_type),
                     .c_type = tc_route_ab_type(call->C->value_type),
                     .tf32 = h->math == TCSPARSE_MATH_TF32};
    m.ms_base = tc_time_path(h, &c, plan, TCSPARSE_PATH_TC_BASE, e0, e1);
    m.ms_balanced = tc_time_path(h, &c, plan, TCSPARSE_PATH_TC_BALANCED, e0, e1);
    m.ms_cusparse = tc_time_path(h, &c, plan, TCSPARSE_PATH_CUSPARSE, e0, e1);
    m.path = TCSPARSE_PATH_CUSPARSE;
    float best = m.ms_cusparse;
    if (m.ms_base >= 0.0f && (best < 0.0f || m.ms_base < best)) {
        m.path = TCSPARSE_PATH_TC_BASE;
        best = m.ms_base;
    }
    if (m.ms_balanced >= 0.0f && (best < 0.0f || m.ms_balanced < best))
        m.path = TCSPARSE_PATH_TC_BALANCED;
    if (plan->nmeasured == TC_PLAN_MEASURED) {
        memmove(&plan->measured[0], &plan->measured[1], sizeof m * (TC_PLAN_MEASURED - 1));
        plan->nmeasured--;
    }
    plan->measured[plan->nmeasured++] = m;
done:
    tc_dnmat_cusparse_release(&scratch);
    cudaFree(scratch.values);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    (void)cudaGetLastError();
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
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && tc_route_effective(h) != TCSPARSE_ROUTE_CUSPARSE) {
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
    /* cuSPARSE's own preprocessing too, so that either path can execute afterwards (the
     * interposer calls the real one itself). */
    h->deferred = h->defer_cusparse;
    st = h->deferred ? TCSPARSE_STATUS_SUCCESS
                     : tc_fallback_spmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && d.path != TCSPARSE_PATH_CUSPARSE) {
        tc_error_clear();
        st = TCSPARSE_STATUS_SUCCESS;
    }
    if (st == TCSPARSE_STATUS_SUCCESS && plan != NULL && tc_route_effective(h) == TCSPARSE_ROUTE_AUTO &&
        tc_select_measure() && tc_measured_find(h, plan, B, C) == NULL) {
        tc_spmm_call c = {opA, opB, alpha, beta, A, B, C, ct, alg, buffer};
        tc_spmm_measure(h, &c, plan);
        st = tc_spmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
        if (st == TCSPARSE_STATUS_SUCCESS)
            tc_route_record(h, &d);
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
    h->deferred = d.path == TCSPARSE_PATH_CUSPARSE && h->defer_cusparse;
    if (d.path == TCSPARSE_PATH_CUSPARSE && !h->deferred)
        st = tc_fallback_spmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    return st;
}
