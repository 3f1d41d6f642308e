/* The SDDMM rows of the route table: the tensor-core SDDMM on C's plan when the call is
 * eligible (and, on the automatic route, predicted to gain), otherwise cuSPARSE.  As for
 * SpMM, the decision is complete before anything is launched. */
#include <stdio.h>
#include <string.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"
#include "select.h"
#include "tune.h"
#include "late.h"

/* Automatic route: the selector (src/route/select.c, docs/selector.md), as for SpMM: the chunked
 * schedule when the simulated makespan of one thread block per window is
 * TC_SEL_BALANCE_THRESHOLD times the chunked one's (this device's SMs, the kernel's
 * occupancy), tensor cores when the H100-calibrated cost model predicts them faster than
 * cusparseSDDMM.  Over the 164 measured cases it is within 1.05x of the fastest path in 133
 * (geomean regret 1.078; the threshold rule before it: 1.219 on the same runs). */

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

/* The kind of this SDDMM call (the key of its measured decision). */
static tc_call_kind tc_sddmm_kind(tcsparseHandle_t h, tcsparseConstDnMatDescr_t A,
                                  tcsparseConstSpMatDescr_t C)
{
    tc_call_kind k = {TC_SEL_OP_SDDMM, A->cols, tc_route_ab_type(A->value_type),
                      tc_route_ab_type(C->value_type), h->math == TCSPARSE_MATH_TF32, 0};
    return k;
}

static tcsparseStatus_t tc_sddmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                        tcsparseOperation_t opB, tcsparseConstDnMatDescr_t A,
                                        tcsparseConstDnMatDescr_t B, tcsparseConstSpMatDescr_t C,
                                        cudaDataType ct, tc_decision *d, struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    const tcsparseRoute_t route = tc_route_effective(h);
    d->path = TCSPARSE_PATH_CUSPARSE;
    d->alg3 = 0;
    d->ra.kind = 0;
    d->ncand = 0;
    d->measuring = 0;
    tc_str_join(d->kernel, sizeof d->kernel, "cusparseSDDMM", NULL);
    *plan = NULL;
    tc_select_note(h, -1.0, -1.0);
    if (route == TCSPARSE_ROUTE_CUSPARSE) {
        tc_str_join(d->reason, sizeof d->reason, "route forced to cuSPARSE", NULL);
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
    const tc_call_kind kind = tc_sddmm_kind(h, A, C);
    const tc_measured *meas = route == TCSPARSE_ROUTE_AUTO ? tc_measured_lookup(*plan, &kind) : NULL;
    if (meas != NULL) { /* measured on the first executions of this kind (route.c) */
        tc_decision_measured(d, meas, TC_SEL_OP_SDDMM, 0, 0);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (route == TCSPARSE_ROUTE_TC_BASE || route == TCSPARSE_ROUTE_TC_BALANCED) {
        d->path = route == TCSPARSE_ROUTE_TC_BALANCED ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
        snprintf(d->reason, sizeof d->reason, "forced; %.2f nnz/block, max/mean blocks per window %lld/%.1f",
                 s->mean_nnz_per_block, (long long)s->max_blocks_per_window, s->mean_blocks_per_window);
        return TCSPARSE_STATUS_SUCCESS;
    }
    tc_sddmm_args a = {0};
    a.K = A->cols;
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    tc_sel_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.op = TC_SEL_OP_SDDMM;
    cfg.prec = a.ab_type != TC_T_F32 ? TC_SEL_P_F16 : a.tf32 ? TC_SEL_P_TF32 : TC_SEL_P_3XTF32;
    cfg.N = A->cols;
    cfg.ab_bytes = (int)tc_dtype_size(A->value_type);
    cfg.c_bytes = (int)tc_dtype_size(C->value_type);
    cfg.sm_count = h->sm_count;
    cfg.warps = 4;
    cfg.slices = 1;
    cfg.chunk_blocks = (*plan)->chunk_blocks;
    int bps = 0; /* one kernel for both schedules */
    const int occ_known = tc_sddmm_occupancy(&a, &bps) == TCSPARSE_STATUS_SUCCESS;
    cfg.bps_base = cfg.bps_balanced = occ_known ? bps : 0;
    tc_sel_result r;
    if (tc_select_decide(s, &cfg, &r) != 0)
        memset(&r, 0, sizeof r);
    const int tc = route == TCSPARSE_ROUTE_TC || r.use_tc;
    tc_select_note(h, r.us_tc, r.us_cusparse);
    d->path = !tc ? TCSPARSE_PATH_CUSPARSE : r.balanced ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
    d->ra = (tc_reason_args){2, route == TCSPARSE_ROUTE_AUTO, r.balanced, occ_known,
                             r.bps_base, r.bps_base, r.sm_count, r.us_tc, r.us_cusparse,
                             r.balance_ratio, TC_SEL_BALANCE_THRESHOLD, 0, -1.0,
                             {0, 0, 0, 0}, 0};
    d->reason[0] = '\0';
    if (route == TCSPARSE_ROUTE_AUTO)
        d->ncand = tc_select_explore_candidates(&cfg, &r, tc_explore_factor(), d->cand, d->pred);
    return TCSPARSE_STATUS_SUCCESS;
}

/* As tc_spmm_tc (route.c): the executions may measure the kernel variants (tune.h). */
static tcsparseStatus_t tc_sddmm_tc(tcsparseHandle_t h, const void *alpha,
                                    tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                    const void *beta, tcsparseSpMatDescr_t C,
                                    struct tc_plan *plan, tc_decision *d)
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
    int var[TC_SDDMM_MAX_VARIANTS];
    const int nvar = tc_tune_enabled() ? tc_sddmm_variants(&a, var) : 0;
    const int pair =
        nvar > 1 ? tc_tune_choose(h, plan, tc_sddmm_kind(h, A, C), d, var, nvar, &a.variant) : -1;
    tc_str_join(d->kernel, sizeof d->kernel, tc_sddmm_kernel_name(&a),
                d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
    char msg[200];
    tcsparseStatus_t st = tc_sddmm_launch(&a, h->stream, msg, sizeof msg);
    if (pair >= 0)
        tc_tune_end(h, plan, pair, st == TCSPARSE_STATUS_SUCCESS);
    if (st != TCSPARSE_STATUS_SUCCESS && nvar > 1 && a.variant != var[0]) {
        /* a variant the launcher would not have chosen failed to launch (SDDMM writes
         * nothing before its one kernel): the launcher's choice runs instead */
        a.variant = var[0];
        tc_str_join(d->kernel, sizeof d->kernel, tc_sddmm_kernel_name(&a),
                    d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
        st = tc_sddmm_launch(&a, h->stream, msg, sizeof msg);
    }
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
    h->hook.deferred = tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE);
    st = h->hook.deferred ? TCSPARSE_STATUS_SUCCESS
                     : tc_fallback_sddmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && d.path != TCSPARSE_PATH_CUSPARSE) {
        tc_error_clear();
        st = TCSPARSE_STATUS_SUCCESS;
    }
    return st;
}

typedef struct {
    tcsparseHandle_t h;
    struct tc_plan *plan;
    tcsparseOperation_t opA, opB;
    const void *alpha, *beta;
    tcsparseConstDnMatDescr_t A, B;
    tcsparseSpMatDescr_t C;
    cudaDataType ct;
    tcsparseSDDMMAlg_t alg;
    void *buffer;
} tc_sddmm_exec_ctx;

/* Runs decision d and records it. */
static tcsparseStatus_t tc_sddmm_exec_cb(void *p, tc_decision *d, int *as_planned)
{
    const tc_sddmm_exec_ctx *c = p;
    tcsparseHandle_t h = c->h;
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    *as_planned = 1;
    if (d->path != TCSPARSE_PATH_CUSPARSE)
        st = tc_sddmm_tc(h, c->alpha, c->A, c->B, c->beta, c->C, c->plan, d);
    tc_route_record(h, d);
    h->hook.deferred = d->path == TCSPARSE_PATH_CUSPARSE && tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE);
    if (d->path == TCSPARSE_PATH_CUSPARSE && !h->hook.deferred)
        st = tc_fallback_sddmm(h, c->opA, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct,
                               c->alg, c->buffer);
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
    const tc_call_kind k = tc_sddmm_kind(h, A, C);
    tc_late_begin(h, C, &k); /* may pick late ordering's other plan for this call */
    tcsparseStatus_t st = tc_sddmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_late_end(h, C, NULL, &k, &d, st);
        return st;
    }
    tc_sddmm_exec_ctx ctx = {h, plan, opA, opB, alpha, beta, A, B, C, ct, alg, buffer};
    st = tc_route_run(h, plan, &k, &d, 0, tc_sddmm_exec_cb, &ctx);
    tc_late_end(h, C, plan, &k, &d, st);
    return st;
}
