/* The route table.  Rows, in order: tensor cores (when eligible and predicted to gain),
 * then cuSPARSE.  The decision is complete before anything is launched, so a fallback
 * never follows a partial write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"
#include "select.h"
#include "tune.h"
#include "late.h"

/* The automatic route asks the selector (src/route/select.c, docs/selector.md): the balanced kernel
 * when the simulated thread-block schedule of the base kernel, with this device's SM count
 * and the kernels' occupancy, is TC_SEL_BALANCE_THRESHOLD times longer than the balanced
 * one's; tensor cores when the cost model calibrated on the H100 predicts the chosen kernel
 * faster than cuSPARSE (by TC_SEL_GAIN_MARGIN).  Replaces the threshold rule of
 * docs/performance.md ("Routing rule"). */

tcsparseRoute_t tc_route_effective(tcsparseHandle_t h)
{
    switch (tc_config_get()->route) {
    case TC_CFG_ROUTE_HANDLE: return h->route;
    case TC_CFG_ROUTE_TC: return TCSPARSE_ROUTE_TC;
    case TC_CFG_ROUTE_CUSPARSE: return TCSPARSE_ROUTE_CUSPARSE;
    case TC_CFG_ROUTE_TC_BASE: return TCSPARSE_ROUTE_TC_BASE;
    case TC_CFG_ROUTE_TC_BALANCED: return TCSPARSE_ROUTE_TC_BALANCED;
    default: return TCSPARSE_ROUTE_AUTO;
    }
}

/* A time for the reason text: milliseconds, or "-" where the path was not a candidate. */
static void tc_ms_text(char *out, size_t n, float ms)
{
    if (ms < 0.0f)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.3f ms", ms);
}

void tc_reason_format(const tc_reason_args *ra, char *out, size_t n)
{
    const int sddmm = ra->kind == 2;
    if (ra->kind == 3) {
        char t[4][16], when[24];
        for (int i = 0; i < 4; i++)
            tc_ms_text(t[i], sizeof t[i], ra->ms[i]);
        if (ra->calls > 0)
            snprintf(when, sizeof when, "on %d calls", ra->calls);
        else
            snprintf(when, sizeof when, "at preprocess");
        snprintf(out, n, "measured %s: base %s, balanced %s, cuSPARSE %s, CSR_ALG3 %s", when,
                 t[0], t[1], t[2], t[3]);
    } else if (sddmm)
        snprintf(out, n,
                 "%s; model: TC %s %.1f us, cuSPARSE %.1f us; schedule base/chunked %.2f "
                 "(%s %.2f), %d blocks/SM%s x %d SMs",
                 ra->autoroute ? "auto" : "forced", ra->balanced ? "chunked" : "base", ra->us_tc,
                 ra->us_cusparse, ra->ratio, ra->balanced ? ">" : "<=", ra->threshold,
                 ra->bps_base, ra->occ_known ? "" : " (assumed)", ra->sm_count);
    else
        snprintf(out, n,
                 "%s; model: TC %s %.1f us, cuSPARSE%s %.1f us; schedule base/balanced %.2f "
                 "(%s %.2f), %d/%d blocks/SM%s x %d SMs",
                 ra->autoroute ? "auto" : "forced", ra->balanced ? "balanced" : "base",
                 ra->us_tc, ra->alg3 ? " CSR_ALG3" : "", ra->us_cusparse, ra->ratio,
                 ra->balanced ? ">" : "<=", ra->threshold, ra->bps_base, ra->bps_balanced,
                 ra->occ_known ? "" : " (assumed)", ra->sm_count);
}

void tc_route_record(tcsparseHandle_t h, const tc_decision *d)
{
    tcsparseRouteInfo_t *r = &h->last_route;
    r->path = d->path;
    tc_str_join(r->kernel, sizeof r->kernel, d->kernel, NULL);
    const int logging = !h->quiet && tc_config_get()->log;
    if (d->ra.kind != 0 && !logging) {
        h->pending_reason = d->ra; /* formatted when read: tcsparseGetLastRoute */
        r->reason[0] = '\0';
    } else {
        h->pending_reason.kind = 0;
        if (d->ra.kind != 0)
            tc_reason_format(&d->ra, r->reason, sizeof r->reason);
        else
            tc_str_join(r->reason, sizeof r->reason, d->reason, NULL);
    }
    tc_select_take(h, &r->predicted_tc_us, &r->predicted_cusparse_us);
    if (logging)
        fprintf(stderr, "tcsparse: %s -> %s (%s)\n",
                d->path == TCSPARSE_PATH_CUSPARSE ? "cusparse" : "tensor cores", d->kernel,
                r->reason);
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

/* TCSPARSE_X_CUSPARSE_ALG3: 0 never runs CSR_ALG3 on the cuSPARSE route, 1 always where it
 * applies (tests), unset lets the model decide (src/route/select.h). */
enum { TC_ALG3_MODEL = 0, TC_ALG3_NEVER = 1, TC_ALG3_ALWAYS = 2 };
static int tc_alg3_mode(void)
{
    switch (tc_config_get()->cusparse_alg3) {
    case TC_CFG_ALG3_NEVER: return TC_ALG3_NEVER;
    case TC_CFG_ALG3_ALWAYS: return TC_ALG3_ALWAYS;
    default: return TC_ALG3_MODEL;
    }
}

/* Where the cuSPARSE route may run CSR_ALG3 in place of the ALG_DEFAULT asked for: FP32 CSR,
 * both operands non-transposed, row-major B and C (what the model was measured on), no batch,
 * and not for the interposer (which runs the real cuSPARSE with the caller's arguments). */
static int tc_alg3_applies(tcsparseHandle_t h, tcsparseOperation_t opA, tcsparseOperation_t opB,
                           tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                           tcsparseDnMatDescr_t C, cudaDataType ct, tcsparseSpMMAlg_t alg)
{
    return alg == TCSPARSE_SPMM_ALG_DEFAULT && A->format == TCSPARSE_FORMAT_CSR &&
           opA == TCSPARSE_OPERATION_NON_TRANSPOSE && opB == TCSPARSE_OPERATION_NON_TRANSPOSE &&
           A->value_type == CUDA_R_32F && B->value_type == CUDA_R_32F &&
           C->value_type == CUDA_R_32F && ct == CUDA_R_32F && B->order == TCSPARSE_ORDER_ROW &&
           C->order == TCSPARSE_ORDER_ROW && A->batch_count == 1 && B->batch_count == 1 &&
           C->batch_count == 1 && !h->defer_cusparse;
}

static void tc_decision_alg3(tc_decision *d)
{
    d->alg3 = 1;
    tc_str_join(d->kernel, sizeof d->kernel, "cusparseSpMM(CSR_ALG3)", NULL);
}

const tc_measured *tc_measured_lookup(const struct tc_plan *p, const tc_call_kind *k)
{
    for (int i = p->nmeasured - 1; i >= 0; i--)
        if (tc_call_kind_eq(&p->measured[i].kind, k))
            return &p->measured[i];
    return NULL;
}

/* The kind of this SpMM call. */
static tc_call_kind tc_spmm_kind(tcsparseHandle_t h, tcsparseConstDnMatDescr_t B,
                                 tcsparseDnMatDescr_t C)
{
    tc_call_kind k = {TC_SEL_OP_SPMM, C->cols, tc_route_ab_type(B->value_type),
                      tc_route_ab_type(C->value_type), h->math == TCSPARSE_MATH_TF32, 0};
    return k;
}

static const tc_measured *tc_measured_find(tcsparseHandle_t h, const struct tc_plan *p,
                                           tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C)
{
    const tc_call_kind k = tc_spmm_kind(h, B, C);
    return tc_measured_lookup(p, &k);
}

/* d takes the measured decision m (its reason text made when read, like a model's). */
void tc_decision_measured(tc_decision *d, const tc_measured *m, int op, int alg3_ok,
                          int force_alg3)
{
    d->path = m->path;
    d->alg3 = 0;
    d->ncand = 0;
    tc_str_join(d->kernel, sizeof d->kernel, op == TC_SEL_OP_SDDMM ? "cusparseSDDMM" : "cusparseSpMM",
                NULL);
    if (m->path == TCSPARSE_PATH_CUSPARSE && alg3_ok && (m->alg3 || force_alg3))
        tc_decision_alg3(d);
    memset(&d->ra, 0, sizeof d->ra);
    d->ra.kind = 3;
    memcpy(d->ra.ms, m->ms, sizeof d->ra.ms);
    d->ra.calls = m->calls;
    d->reason[0] = '\0';
}

/* Appends m to the plan's measured decisions, dropping the oldest when full. */
static void tc_measured_push(struct tc_plan *plan, const tc_measured *m)
{
    if (plan->nmeasured == TC_PLAN_MEASURED) {
        memmove(&plan->measured[0], &plan->measured[1], sizeof *m * (TC_PLAN_MEASURED - 1));
        plan->nmeasured--;
    }
    plan->measured[plan->nmeasured++] = *m;
}

/* d runs candidate k (TC_SEL_CAND_*) of an operation op. */
static void tc_decision_cand(tc_decision *d, int op, int k)
{
    d->alg3 = 0;
    d->ra.kind = 0;
    tc_str_join(d->kernel, sizeof d->kernel, op == TC_SEL_OP_SDDMM ? "cusparseSDDMM" : "cusparseSpMM",
                NULL);
    d->path = k == TC_SEL_CAND_BASE       ? TCSPARSE_PATH_TC_BASE
              : k == TC_SEL_CAND_BALANCED ? TCSPARSE_PATH_TC_BALANCED
                                          : TCSPARSE_PATH_CUSPARSE;
    if (k == TC_SEL_CAND_ALG3)
        tc_decision_alg3(d);
}

/* m->path and m->alg3: the fastest measured of the candidates in order[0..n), starting from
 * candidate first (kept where nothing is faster; ties go to the earlier). */
static void tc_measured_choose(tc_measured *m, const int *order, int n, int first)
{
    int best = first;
    for (int i = 0; i < n; i++)
        if (m->ms[order[i]] >= 0.0f && (m->ms[best] < 0.0f || m->ms[order[i]] < m->ms[best]))
            best = order[i];
    tc_decision d;
    tc_decision_cand(&d, m->kind.op, best);
    m->path = d.path;
    m->alg3 = d.alg3;
}

/* TCSPARSE_X_EXPLORE_FACTOR (tests): candidates within this factor of the model's fastest
 * prediction, in place of TC_SEL_EXPLORE_FACTOR. */
double tc_explore_factor(void)
{
    const double f = tc_config_get()->explore_factor;
    return f >= 1.0 ? f : TC_SEL_EXPLORE_FACTOR;
}

/* The selector's decision for this call: occupancy of the kernels it would launch (the
 * occupancy API; without it the H100's values), the plan's statistics and chunk length. */
static void tc_spmm_select(tcsparseHandle_t h, tcsparseConstSpMatDescr_t A,
                           tcsparseDnMatDescr_t C, const struct tc_plan *plan, int alg3_ok,
                           tc_sel_config *cfg, tc_sel_result *r, int *occ_known)
{
    static const tc_chunk any_chunk = {0, 0, 0, 0};
    tc_spmm_args a = {0};
    a.N = C->cols;
    /* a.plan stays NULL: the occupancy is that of the CTA kernel the model was fitted to,
     * although the pipelined kernel runs every call on a plan (spmm_launch.cu, pipe_wanted;
     * 1.0-1.4x faster than the CTA kernel on the H100 since the eighth session, one case
     * 0.94x); with the pipelined kernel's own occupancy (fewer resident blocks) the sixth
     * session's model predicted it slower and routed mdual at N = 128 to cuSPARSE (regret
     * 1.30).  The measured route (section 5 of docs/selector.md) corrects what the model
     * gets wrong among the candidates within 2.5x. */
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    memset(cfg, 0, sizeof *cfg);
    cfg->op = TC_SEL_OP_SPMM;
    cfg->prec = a.ab_type != TC_T_F32 ? TC_SEL_P_F16 : a.tf32 ? TC_SEL_P_TF32 : TC_SEL_P_3XTF32;
    cfg->N = C->cols;
    cfg->ab_bytes = (int)tc_dtype_size(A->value_type);
    cfg->c_bytes = (int)tc_dtype_size(C->value_type);
    cfg->sm_count = h->sm_count;
    cfg->chunk_blocks = plan->chunk_blocks;
    cfg->alg3_ok = alg3_ok;
    int warps = 0, bps = 0;
    *occ_known = tc_spmm_occupancy(&a, &warps, &bps) == TCSPARSE_STATUS_SUCCESS;
    cfg->bps_base = *occ_known ? bps : 0;
    a.chunks = &any_chunk; /* the balanced kernel */
    if (tc_spmm_occupancy(&a, &warps, &bps) != TCSPARSE_STATUS_SUCCESS)
        *occ_known = 0, bps = 0;
    cfg->bps_balanced = bps;
    cfg->warps = warps;
    const int64_t warp_n = cfg->ab_bytes == 4 ? 32 : 64; /* spmm_launch.cu: 8 x J columns */
    cfg->slices = warps > 0 ? (int)((C->cols + warp_n * warps - 1) / (warp_n * warps)) : 1;
    if (tc_select_decide(&plan->stats, cfg, r) != 0)
        memset(r, 0, sizeof *r);
}

static tcsparseStatus_t tc_spmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                       tcsparseOperation_t opB, tcsparseConstSpMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C,
                                       cudaDataType ct, tcsparseSpMMAlg_t alg, tc_decision *d,
                                       struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    tcsparseRoute_t route = tc_route_effective(h);
    const int alg3_mode = tc_alg3_mode();
    const int alg3_ok = alg3_mode != TC_ALG3_NEVER && tc_alg3_applies(h, opA, opB, A, B, C, ct, alg);
    d->path = TCSPARSE_PATH_CUSPARSE;
    d->ra.kind = 0;
    d->alg3 = 0;
    d->ncand = 0;
    d->measuring = 0;
    tc_str_join(d->kernel, sizeof d->kernel, "cusparseSpMM", NULL);
    *plan = NULL;
    tc_select_note(h, -1.0, -1.0);
    if (route == TCSPARSE_ROUTE_CUSPARSE) {
        tc_str_join(d->reason, sizeof d->reason, "route forced to cuSPARSE", NULL);
        if (alg3_ok && alg3_mode == TC_ALG3_ALWAYS) {
            tc_decision_alg3(d);
            tc_str_join(d->reason, sizeof d->reason, "route forced to cuSPARSE, CSR_ALG3 forced "
                        "(TCSPARSE_X_CUSPARSE_ALG3=1)", NULL);
        }
        return TCSPARSE_STATUS_SUCCESS;
    }
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (alg3_ok && alg3_mode == TC_ALG3_ALWAYS)
        tc_decision_alg3(d); /* wherever the route ends on cuSPARSE */
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
    const tc_measured *meas = route == TCSPARSE_ROUTE_AUTO ? tc_measured_find(h, *plan, B, C) : NULL;
    if (meas != NULL) {
        tc_decision_measured(d, meas, TC_SEL_OP_SPMM, alg3_ok, alg3_mode == TC_ALG3_ALWAYS);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (route == TCSPARSE_ROUTE_TC_BASE || route == TCSPARSE_ROUTE_TC_BALANCED) {
        const tcsparseMetcfStats_t *s = &(*plan)->stats;
        d->path = route == TCSPARSE_ROUTE_TC_BALANCED ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
        snprintf(d->reason, sizeof d->reason, "forced; %.2f nnz/block, max/mean blocks per window %lld/%.1f",
                 s->mean_nnz_per_block, (long long)s->max_blocks_per_window, s->mean_blocks_per_window);
        return TCSPARSE_STATUS_SUCCESS;
    }
    tc_sel_config cfg;
    tc_sel_result r;
    int occ_known;
    tc_spmm_select(h, A, C, *plan, alg3_ok, &cfg, &r, &occ_known);
    const int tc = route == TCSPARSE_ROUTE_TC || r.use_tc;
    tc_select_note(h, r.us_tc, r.us_cusparse);
    d->path = !tc ? TCSPARSE_PATH_CUSPARSE : r.balanced ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE;
    if (!tc && r.use_alg3)
        tc_decision_alg3(d);
    d->ra = (tc_reason_args){1, route == TCSPARSE_ROUTE_AUTO, r.balanced, occ_known,
                             r.bps_base, r.bps_balanced, r.sm_count, r.us_tc, r.us_cusparse,
                             r.balance_ratio, TC_SEL_BALANCE_THRESHOLD, r.use_alg3,
                             r.us_cusparse_alg3, {0, 0, 0, 0}, 0};
    d->reason[0] = '\0';
    if (route == TCSPARSE_ROUTE_AUTO && alg3_mode == TC_ALG3_MODEL)
        d->ncand = tc_select_explore_candidates(&cfg, &r, tc_explore_factor(), d->cand, d->pred);
    return TCSPARSE_STATUS_SUCCESS;
}

/* tune: the executions may measure the kernel variants (tune.h); not the timings of the
 * measured mode at _preprocess, which compare the paths with the launcher's choice. */
static tcsparseStatus_t tc_spmm_tc(tcsparseHandle_t h, const void *alpha,
                                   tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                   const void *beta, tcsparseDnMatDescr_t C,
                                   struct tc_plan *plan, tc_decision *d, int tune)
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
    int var[TC_SPMM_MAX_VARIANTS];
    const int nvar = tune && tc_tune_enabled() ? tc_spmm_variants(&a, var) : 0;
    const int pair =
        nvar > 1 ? tc_tune_choose(h, plan, tc_spmm_kind(h, B, C), d, var, nvar, &a.variant) : -1;
    tc_str_join(d->kernel, sizeof d->kernel, tc_spmm_kernel_name(&a),
                d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
    char msg[200];
    tcsparseStatus_t st = tc_spmm_launch(&a, h->stream, msg, sizeof msg);
    if (pair >= 0)
        tc_tune_end(h, plan, pair, st == TCSPARSE_STATUS_SUCCESS);
    if (st != TCSPARSE_STATUS_SUCCESS && nvar > 1 && a.variant != var[0] &&
        (a.chunks == NULL || a.nsplit == 0)) {
        /* a variant the launcher would not have chosen failed before anything was written
         * (no beta pass ran): the launcher's choice runs instead */
        a.variant = var[0];
        tc_str_join(d->kernel, sizeof d->kernel, tc_spmm_kernel_name(&a),
                    d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
        st = tc_spmm_launch(&a, h->stream, msg, sizeof msg);
    }
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSpMM: %s", msg);
    return TCSPARSE_STATUS_SUCCESS;
}

/* TCSPARSE_SELECT=measure: _preprocess times the candidates once on the caller's operands
 * (into a scratch C, so the caller's C is untouched) and the plan keeps the fastest. */
static int tc_select_measure(void)
{
    return tc_config_get()->select == TC_CFG_SELECT_MEASURE;
}

/* One SpMM call's arguments: what the measured mode at _preprocess times, and what the
 * measurement on the executions runs (tc_spmm_exec_cb). */
typedef struct {
    tcsparseHandle_t h;
    struct tc_plan *plan;
    tcsparseOperation_t opA, opB;
    const void *alpha, *beta;
    tcsparseConstSpMatDescr_t A;
    tcsparseConstDnMatDescr_t B;
    tcsparseDnMatDescr_t C;
    cudaDataType ct;
    tcsparseSpMMAlg_t alg;
    void *buffer;
    int alg3_ok; /* the cuSPARSE route may run CSR_ALG3: measured as a fourth candidate */
} tc_spmm_call;

/* TC_PATH_ALG3: the cuSPARSE route as CSR_ALG3, a candidate of the measured mode only. */
#define TC_PATH_ALG3 ((tcsparsePath_t)100)

static tcsparseStatus_t tc_run_path(tcsparseHandle_t h, const tc_spmm_call *c,
                                    struct tc_plan *plan, tcsparsePath_t path)
{
    if (path == TC_PATH_ALG3)
        return tc_fallback_spmm_alg3(h, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct, 1);
    if (path == TCSPARSE_PATH_CUSPARSE)
        return tc_fallback_spmm(h, c->opA, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct,
                                c->alg, c->buffer);
    tc_decision d = {.path = path};
    return tc_spmm_tc(h, c->alpha, c->A, c->B, c->beta, c->C, plan, &d, 0);
}

/* One warm-up, then the best of three runs; negative when the path fails. */
static float tc_time_path(tcsparseHandle_t h, const tc_spmm_call *c, struct tc_plan *plan,
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
    tc_measured m = {.kind = tc_spmm_kind(h, call->B, call->C)};
    m.ms[TC_SEL_CAND_BASE] = tc_time_path(h, &c, plan, TCSPARSE_PATH_TC_BASE, e0, e1);
    m.ms[TC_SEL_CAND_BALANCED] = tc_time_path(h, &c, plan, TCSPARSE_PATH_TC_BALANCED, e0, e1);
    m.ms[TC_SEL_CAND_CUSPARSE] = tc_time_path(h, &c, plan, TCSPARSE_PATH_CUSPARSE, e0, e1);
    m.ms[TC_SEL_CAND_ALG3] = c.alg3_ok ? tc_time_path(h, &c, plan, TC_PATH_ALG3, e0, e1) : -1.0f;
    static const int order[3] = {TC_SEL_CAND_ALG3, TC_SEL_CAND_BASE, TC_SEL_CAND_BALANCED};
    tc_measured_choose(&m, order, 3, TC_SEL_CAND_CUSPARSE); /* cuSPARSE unless faster */
    tc_measured_push(plan, &m);
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
    tcsparseStatus_t st = tc_spmm_decide(h, opA, opB, A, B, C, ct, alg, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_route_record(h, &d);
    /* cuSPARSE's own preprocessing too, so that either path can execute afterwards (the
     * interposer calls the real one itself). */
    h->deferred = h->defer_cusparse;
    st = h->deferred ? TCSPARSE_STATUS_SUCCESS
                     : tc_fallback_spmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_SUCCESS && d.path == TCSPARSE_PATH_CUSPARSE && d.alg3 &&
        !h->deferred) {
        /* the CSR_ALG3 workspace now, so that the first execution does not pay for it; where
         * it cannot be had, executions run ALG_DEFAULT */
        (void)tc_fallback_spmm_alg3(h, opB, alpha, A, B, beta, C, ct, 0);
        tc_error_clear(); /* an optimisation only: executions fall back where it failed */
    }
    if (st == TCSPARSE_STATUS_NOT_SUPPORTED && d.path != TCSPARSE_PATH_CUSPARSE) {
        tc_error_clear();
        st = TCSPARSE_STATUS_SUCCESS;
    }
    if (st == TCSPARSE_STATUS_SUCCESS && plan != NULL && tc_route_effective(h) == TCSPARSE_ROUTE_AUTO &&
        tc_select_measure() && tc_measured_find(h, plan, B, C) == NULL) {
        tc_spmm_call c = {h, plan, opA, opB, alpha, beta, A, B, C, ct, alg, buffer,
                          tc_alg3_mode() != TC_ALG3_NEVER &&
                              tc_alg3_applies(h, opA, opB, A, B, C, ct, alg)};
        tc_spmm_measure(h, &c, plan);
        st = tc_spmm_decide(h, opA, opB, A, B, C, ct, alg, &d, &plan);
        if (st == TCSPARSE_STATUS_SUCCESS)
            tc_route_record(h, &d);
    }
    return st;
}

/* ---- measured on the executions (select.h) ----------------------------------------------- */

_Static_assert(TC_SEL_NCAND == 4 && TC_EXPLORE_PAIRS >= TC_SEL_NCAND * TC_SEL_EXPLORE_SAMPLES,
               "plan.h's tc_explore is sized for select.h's candidates and samples");

/* TCSPARSE_SELECT=model: the model alone decides; nothing is measured on the executions. */
int tc_select_model_only(void)
{
    return tc_config_get()->select == TC_CFG_SELECT_MODEL;
}

static const char *const tc_cand_name[TC_SEL_NCAND] = {"TC base", "TC balanced", "cuSPARSE",
                                                       "cuSPARSE CSR_ALG3"};

int tc_stream_capturing(cudaStream_t s)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess) {
        (void)cudaGetLastError(); /* the error of this query, not the caller's */
        return 1;
    }
    return cap != cudaStreamCaptureStatusNone;
}

int tc_explore_wait_other(tc_explore *x, const tc_call_kind *k)
{
    if (!x->active || tc_call_kind_eq(&x->kind, k))
        return 0;
    return ++x->idle <= TC_EXPLORE_IDLE_CALLS;
}

void tc_explore_abandon(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++)
        x->ev_cand[i] = 0; /* a pending pair may be recorded again: the later record wins */
    x->active = 0;
}

int tc_explore_pending(const tc_explore *x)
{
    int pending = 0;
    for (int i = 0; i < x->nev; i++)
        pending += x->ev_cand[i] != 0;
    return pending;
}

int tc_explore_free_pair(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++)
        if (x->ev_cand[i] == 0)
            return i;
    if (x->nev == TC_EXPLORE_PAIRS)
        return -1;
    if (cudaEventCreate(&x->ev[x->nev][0]) != cudaSuccess) {
        (void)cudaGetLastError(); /* this creation's error, not the caller's */
        return -1;
    }
    if (cudaEventCreate(&x->ev[x->nev][1]) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaEventDestroy(x->ev[x->nev][0]);
        return -1;
    }
    return x->nev++;
}

/* Reads back the samples whose second event has completed (no synchronisation). */
void tc_explore_harvest(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++) {
        if (x->ev_cand[i] == 0)
            continue;
        const cudaError_t e = cudaEventQuery(x->ev[i][1]);
        if (e == cudaErrorNotReady) /* not a last error: nothing to clear */
            continue;
        const int k = x->ev_cand[i] - 1;
        float ms = -1.0f;
        x->ev_cand[i] = 0;
        if (e != cudaSuccess) {
            x->dropped[k] = 1; /* an error of the call's own is the caller's to see */
        } else if (cudaEventElapsedTime(&ms, x->ev[i][0], x->ev[i][1]) != cudaSuccess) {
            (void)cudaGetLastError(); /* this query's error, not the caller's */
            x->dropped[k] = 1;
        } else {
            x->done[k]++;
            if (x->best_ms[k] < 0.0f || ms < x->best_ms[k])
                x->best_ms[k] = ms;
        }
    }
}

/* The measurement is complete: the plan keeps the fastest candidate for this kind of call
 * (the model's choice where none was measured). */
static void tc_explore_finish(struct tc_plan *p)
{
    tc_explore *x = &p->explore;
    tc_measured m = {.kind = x->kind, .ms = {-1.0f, -1.0f, -1.0f, -1.0f}, .calls = x->calls};
    for (int i = 0; i < x->ncand; i++)
        if (!x->dropped[i] && x->done[i] > 0)
            m.ms[x->cand[i]] = x->best_ms[i];
    tc_measured_choose(&m, x->cand, x->ncand, x->cand[0]); /* the model's choice unless faster */
    tc_measured_push(p, &m);
    x->active = 0; /* the events stay for the next kind of call */
}

/* This execution's part in the measurement of its kind of call: returns the pair of events
 * that must wrap it, with d rewritten to the candidate to run, or -1 to run d (rewritten
 * to the measured decision when the measurement completes here). */
static int tc_explore_step_relaxed(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *kind,
                                   tc_decision *d, int alg3_ok)
{
    tc_explore *x = &p->explore;
    if (tc_stream_capturing(h->stream))
        return -1;
    if (tc_explore_wait_other(x, kind)) {
        d->measuring = 1; /* this kind is measured after the other */
        return -1; /* the model decides this call */
    }
    if (x->active && !tc_call_kind_eq(&x->kind, kind))
        tc_explore_abandon(x);
    if (!x->active) {
        if (d->ncand < 2)
            return -1; /* the model's choice has no rival worth a measurement */
        x->active = 1;
        x->kind = *kind;
        x->ncand = d->ncand;
        for (int i = 0; i < TC_SEL_NCAND; i++) {
            x->cand[i] = i < d->ncand ? d->cand[i] : 0;
            x->issued[i] = x->done[i] = x->dropped[i] = 0;
            x->best_ms[i] = -1.0f;
        }
        x->next = 0;
        x->calls = 0;
    }
    x->idle = 0;
    x->calls++;
    tc_explore_harvest(x);
    const int pending = tc_explore_pending(x);
    int left = 0;
    for (int i = 0; i < x->ncand; i++) {
        if (x->cand[i] == TC_SEL_CAND_ALG3 && !alg3_ok)
            x->dropped[i] = 1; /* this call asked for another algorithm than ALG_DEFAULT */
        if (!x->dropped[i] && x->issued[i] < TC_SEL_EXPLORE_SAMPLES)
            left += TC_SEL_EXPLORE_SAMPLES - x->issued[i];
    }
    if (left == 0 && pending == 0) {
        tc_explore_finish(p);
        tc_decision_measured(d, tc_measured_lookup(p, kind), kind->op, alg3_ok, 0);
        return -1;
    }
    const int pair = left > 0 ? tc_explore_free_pair(x) : -1;
    d->measuring = 1;
    if (pair < 0) {
        /* samples still in flight (or no events to be had): the model's choice */
        d->ra.kind = 0;
        snprintf(d->reason, sizeof d->reason,
                 "exploring: %d sample(s) in flight; model: TC %.1f us, cuSPARSE %.1f us",
                 pending,
                 d->pred[d->path == TCSPARSE_PATH_TC_BALANCED ? TC_SEL_CAND_BALANCED
                                                              : TC_SEL_CAND_BASE],
                 d->pred[d->alg3 ? TC_SEL_CAND_ALG3 : TC_SEL_CAND_CUSPARSE]);
        return -1;
    }
    int k = -1;
    for (int j = 0; j < x->ncand && k < 0; j++) {
        const int i = (x->next + j) % x->ncand;
        if (!x->dropped[i] && x->issued[i] < TC_SEL_EXPLORE_SAMPLES)
            k = i;
    }
    x->next = k; /* its samples back to back: the later ones find its own data in L2, as
                  * repeated calls do (and as tcsparse-bench times them) */
    x->issued[k]++;
    x->ev_cand[pair] = k + 1;
    const double pm = d->pred[x->cand[k]];
    tc_decision_cand(d, kind->op, x->cand[k]);
    snprintf(d->reason, sizeof d->reason,
             "exploring: %s, sample %d of %d (model %.1f us; %d candidates)", tc_cand_name[x->cand[k]],
             x->issued[k], TC_SEL_EXPLORE_SAMPLES, pm, x->ncand);
    return pair;
}

/* The step with this thread's capture mode relaxed: another thread's global-mode capture
 * must not be invalidated by the event queries (they are not part of any capture). */
static int tc_explore_step(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *kind,
                           tc_decision *d, int alg3_ok)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    const int pair = tc_explore_step_relaxed(h, p, kind, d, alg3_ok);
    if (swapped)
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return pair;
}

/* Runs decision d and records it; *ran_alg3 tells whether CSR_ALG3 ran (it falls back to
 * ALG_DEFAULT where it cannot). */
static tcsparseStatus_t tc_spmm_execute(tcsparseHandle_t h, tc_decision *d,
                                        struct tc_plan *plan, tcsparseOperation_t opA,
                                        tcsparseOperation_t opB, const void *alpha,
                                        tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                        const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                                        tcsparseSpMMAlg_t alg, void *buffer, int *ran_alg3)
{
    tcsparseStatus_t st;
    *ran_alg3 = 0;
    if (d->path != TCSPARSE_PATH_CUSPARSE) {
        st = tc_spmm_tc(h, alpha, A, B, beta, C, plan, d, 1);
        tc_route_record(h, d);
        h->deferred = 0;
        return st;
    }
    h->deferred = h->defer_cusparse;
    if (h->deferred) {
        tc_route_record(h, d);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (d->alg3) {
        st = tc_fallback_spmm_alg3(h, opB, alpha, A, B, beta, C, ct, 1);
        if (st != TCSPARSE_STATUS_NOT_SUPPORTED) {
            *ran_alg3 = st == TCSPARSE_STATUS_SUCCESS;
            tc_route_record(h, d);
            return st;
        }
        /* CSR_ALG3 cannot run here (refused, no memory, a capture): ALG_DEFAULT as asked */
        char why[96];
        snprintf(why, sizeof why, "%s", tcsparseGetLastErrorMessage());
        tc_error_clear();
        d->alg3 = 0;
        d->ra.kind = 0; /* the model's text would quote the CSR_ALG3 prediction */
        tc_str_join(d->kernel, sizeof d->kernel, "cusparseSpMM", NULL);
        snprintf(d->reason, sizeof d->reason, "cuSPARSE; CSR_ALG3 not available (%s)", why);
    }
    tc_route_record(h, d);
    return tc_fallback_spmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
}

tcsparseStatus_t tc_route_run(tcsparseHandle_t h, struct tc_plan *plan, const tc_call_kind *k,
                              tc_decision *d, int alg3_ok, tc_exec_fn run, void *ctx)
{
    int as_planned;
    if (h->decide_only) { /* the interposer asks where the call would go */
        tc_route_record(h, d);
        h->deferred = 1;
        return TCSPARSE_STATUS_SUCCESS;
    }
    /* measured only for a model decision with candidates, not with TCSPARSE_SELECT=model, and
     * not for the interposer, which runs the real cuSPARSE itself (its calls cannot be timed
     * here) */
    if (d->ncand == 0 || plan == NULL || h->defer_cusparse || tc_select_model_only())
        return run(ctx, d, &as_planned);
    const tc_decision model = *d;
    const int pair = tc_explore_step(h, plan, k, d, alg3_ok);
    if (pair < 0)
        return run(ctx, d, &as_planned);
    tc_explore *x = &plan->explore;
    const int c = x->ev_cand[pair] - 1;
    tc_decision again = model;
    if (cudaEventRecord(x->ev[pair][0], h->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
        return run(ctx, &again, &as_planned);
    }
    tcsparseStatus_t st = run(ctx, d, &as_planned);
    if (st != TCSPARSE_STATUS_SUCCESS || !as_planned) {
        /* the candidate cannot run here, or ran as another: no sample, no candidate */
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
        /* the model's choice runs instead only after a refusal made before anything was
         * launched (a short cuSPARSE buffer, an unsupported case): after a failed launch C
         * may be partly written, and beta must not be applied twice */
        const int refused = st == TCSPARSE_STATUS_INVALID_VALUE || st == TCSPARSE_STATUS_NOT_SUPPORTED;
        if (st == TCSPARSE_STATUS_SUCCESS || c == 0 || !refused)
            return st; /* c == 0: the model's own choice failed, as it would have unmeasured */
        tc_error_clear();
        return run(ctx, &again, &as_planned);
    }
    if (cudaEventRecord(x->ev[pair][1], h->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
    }
    return st;
}

static tcsparseStatus_t tc_spmm_exec_cb(void *p, tc_decision *d, int *as_planned)
{
    const tc_spmm_call *c = p;
    const int want_alg3 = d->path == TCSPARSE_PATH_CUSPARSE && d->alg3;
    int ran_alg3;
    tcsparseStatus_t st = tc_spmm_execute(c->h, d, c->plan, c->opA, c->opB, c->alpha, c->A, c->B,
                                          c->beta, c->C, c->ct, c->alg, c->buffer, &ran_alg3);
    *as_planned = !want_alg3 || ran_alg3;
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
    struct tcsparseSpMatDescr *md = (struct tcsparseSpMatDescr *)A; /* the plans are a cache */
    const tc_call_kind k = tc_spmm_kind(h, B, C);
    tc_late_begin(h, md, &k); /* may pick late ordering's other plan for this call */
    tcsparseStatus_t st = tc_spmm_decide(h, opA, opB, A, B, C, ct, alg, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_late_end(h, md, NULL, &k, &d, st);
        return st;
    }
    tc_spmm_call ctx = {h, plan, opA, opB, alpha, beta, A, B, C, ct, alg, buffer,
                        tc_alg3_applies(h, opA, opB, A, B, C, ct, alg)};
    st = tc_route_run(h, plan, &k, &d, ctx.alg3_ok, tc_spmm_exec_cb, &ctx);
    tc_late_end(h, md, plan, &k, &d, st);
    return st;
}
