/* The route (route.h): the decision among the rows of the route table (table.h), shared by
 * SpMM and SDDMM, and its record.  The decision is complete before anything is launched, so a
 * fallback never follows a partial write.
 *
 * The automatic route asks the selector (select.c, docs/selector.md): the balanced kernel
 * (SDDMM: the chunked schedule) when the simulated thread-block schedule of the base kernel,
 * with this device's SM count and the kernels' occupancy, is TC_SEL_BALANCE_THRESHOLD times
 * longer than the balanced one's; tensor cores when the cost model calibrated on the H100
 * predicts the chosen kernel faster than cuSPARSE (by TC_SEL_GAIN_MARGIN); for SpMM on the
 * cuSPARSE route, CSR_ALG3 where it predicts that faster (TC_SEL_ALG3_*).  Over the 164
 * measured SDDMM cases the model is within 1.05x of the fastest path in 133 (geomean regret
 * 1.078; a threshold rule on the statistics: 1.219 on the same runs).  The measurement on the
 * executions (measure.c) then corrects what the model gets wrong among its candidates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"
#include "measure.h"
#include "select.h"

tcsparseRoute_t tc_route_effective(tcsparseHandle_t h)
{
    switch (tc_config_get()->route) {
    case TC_CFG_ROUTE_HANDLE: return h->route;
    case TC_CFG_ROUTE_TC: return TCSPARSE_ROUTE_TC;
    case TC_CFG_ROUTE_CUSPARSE: return TCSPARSE_ROUTE_CUSPARSE;
    case TC_CFG_ROUTE_TC_BASE: return TCSPARSE_ROUTE_TC_BASE;
    case TC_CFG_ROUTE_TC_BALANCED: return TCSPARSE_ROUTE_TC_BALANCED;
    case TC_CFG_ROUTE_CUDA_CORE: return TCSPARSE_ROUTE_CUDA_CORE;
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
        char t[TC_NCAND][16], when[24];
        for (int i = 0; i < TC_NCAND; i++)
            tc_ms_text(t[i], sizeof t[i], ra->ms[i]);
        if (ra->calls > 0)
            snprintf(when, sizeof when, "on %d calls", ra->calls);
        else
            snprintf(when, sizeof when, "at preprocess");
        snprintf(out, n, "measured %s: base %s, balanced %s, cuSPARSE %s, CSR_ALG3 %s, CUDA "
                 "cores %s", when, t[0], t[1], t[2], t[3], t[4]);
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
    const int logging = !tc_hook_on(h, TC_HOOK_QUIET) && tc_config_get()->log;
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

/* TCSPARSE_X_EXPLORE_FACTOR (tests): candidates within this factor of the model's fastest
 * prediction, in place of TC_SEL_EXPLORE_FACTOR. */
double tc_explore_factor(void)
{
    const double f = tc_config_get()->explore_factor;
    return f >= 1.0 ? f : TC_SEL_EXPLORE_FACTOR;
}

/* TCSPARSE_SELECT=model: the model alone decides; nothing is measured on the executions. */
int tc_select_model_only(void)
{
    return tc_config_get()->select == TC_CFG_SELECT_MODEL;
}

void tc_decision_take(tc_decision *d, const tc_route_row *r)
{
    d->path = r->path;
    if (r->kernel == NULL)
        return; /* a tensor-core row: its launcher names the kernel */
    d->alg3 = r->form == TC_SEL_CAND_ALG3;
    tc_str_join(d->kernel, sizeof d->kernel, r->kernel, NULL);
}

void tc_decision_to_cusparse(tc_decision *d, int op)
{
    char why[sizeof d->reason - 16];
    snprintf(why, sizeof why, "%s", tcsparseGetLastErrorMessage());
    tc_error_clear();
    tc_decision_take(d, tc_route_cusparse_row(op));
    d->ra.kind = 0;
    snprintf(d->reason, sizeof d->reason, "cuSPARSE; %s", why);
}

void tc_route_csr_prepare(tcsparseHandle_t h, const tc_decision *d,
                          const struct tcsparseSpMatDescr *sp, struct tc_plan *plan)
{
    int wanted = d->path == TCSPARSE_PATH_CUDA_CORE;
    for (int i = 0; i < d->ncand; i++)
        wanted |= d->cand[i] == TC_SEL_CAND_CSR;
    if (!wanted || plan == NULL || sp->format != TCSPARSE_FORMAT_CSR)
        return;
    const tc_csr_sched *sched;
    if (tc_plan_csr_sched(h, sp, plan, &sched) != TCSPARSE_STATUS_SUCCESS)
        tc_error_clear();
}

/* Whether call c may run as CSR_ALG3 under alg3 mode `mode` (TC_ALG3_*). */
static int tc_alg3_allowed(const tc_route_call *c, int mode)
{
    const tc_route_row *alg3 = tc_route_row_of(c->op, TC_SEL_CAND_ALG3);
    return mode != TC_ALG3_NEVER && alg3 != NULL && tc_route_row_eligible(alg3, c);
}

int tc_route_alg3_ok(const tc_route_call *c)
{
    return tc_alg3_allowed(c, tc_alg3_mode());
}

/* The selector's decision for SpMM call c: occupancy of the kernels it would launch (the
 * occupancy API; without it the H100's values), the plan's statistics and chunk length. */
static void tc_spmm_select(tcsparseHandle_t h, const tc_route_call *c, const struct tc_plan *plan,
                           int alg3_ok, tc_sel_config *cfg, tc_sel_result *r, int *occ_known)
{
    static const tc_chunk any_chunk = {0, 0, 0, 0};
    tc_spmm_args a = {0};
    a.N = c->n;
    /* a.plan stays NULL: the occupancy is that of the CTA kernel the model was fitted to,
     * although the pipelined kernel runs every call on a plan (spmm_launch.cu, pipe_wanted;
     * 1.0-1.4x faster than the CTA kernel on the H100, one case 0.94x); with the pipelined
     * kernel's own occupancy (fewer resident blocks) the model predicts it slower and routes
     * mdual at N = 128 to cuSPARSE (regret 1.30).  The measured route (section 5 of
     * docs/selector.md) corrects what the model gets wrong among the candidates within 2.5x. */
    a.ab_type = tc_route_ab_type(c->a_type);
    a.c_type = tc_route_ab_type(c->c_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    memset(cfg, 0, sizeof *cfg);
    cfg->op = TC_SEL_OP_SPMM;
    cfg->prec = a.ab_type != TC_T_F32 ? TC_SEL_P_F16 : a.tf32 ? TC_SEL_P_TF32 : TC_SEL_P_3XTF32;
    cfg->N = c->n;
    cfg->ab_bytes = (int)tc_dtype_size(c->a_type);
    cfg->c_bytes = (int)tc_dtype_size(c->c_type);
    cfg->sm_count = h->sm_count;
    cfg->cc = h->cc_major * 10 + h->cc_minor;
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
    cfg->slices = warps > 0 ? (int)((c->n + warp_n * warps - 1) / (warp_n * warps)) : 1;
    if (tc_select_decide(&plan->stats, cfg, r) != 0)
        memset(r, 0, sizeof *r);
}

/* The selector's decision for SDDMM call c: one kernel for both schedules (its occupancy;
 * without it the H100's), the plan's statistics and chunk length. */
static void tc_sddmm_select(tcsparseHandle_t h, const tc_route_call *c, const struct tc_plan *plan,
                            tc_sel_config *cfg, tc_sel_result *r, int *occ_known)
{
    tc_sddmm_args a = {0};
    a.K = c->n;
    a.ab_type = tc_route_ab_type(c->a_type);
    a.c_type = tc_route_ab_type(c->c_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    memset(cfg, 0, sizeof *cfg);
    cfg->op = TC_SEL_OP_SDDMM;
    cfg->prec = a.ab_type != TC_T_F32 ? TC_SEL_P_F16 : a.tf32 ? TC_SEL_P_TF32 : TC_SEL_P_3XTF32;
    cfg->N = c->n;
    cfg->ab_bytes = (int)tc_dtype_size(c->a_type);
    cfg->c_bytes = (int)tc_dtype_size(c->c_type);
    cfg->sm_count = h->sm_count;
    cfg->cc = h->cc_major * 10 + h->cc_minor;
    cfg->warps = 4;
    cfg->slices = 1;
    cfg->chunk_blocks = plan->chunk_blocks;
    int bps = 0;
    *occ_known = tc_sddmm_occupancy(&a, &bps) == TCSPARSE_STATUS_SUCCESS;
    cfg->bps_base = cfg->bps_balanced = *occ_known ? bps : 0;
    if (tc_select_decide(&plan->stats, cfg, r) != 0)
        memset(r, 0, sizeof *r);
}

/* The plan of sp for the rows that run on it: SUCCESS with *plan; INVALID_VALUE where the
 * caller's structure is wrong (cuSPARSE would compute garbage); or SUCCESS with *plan NULL and
 * d->reason saying why there is none (the call stays on d's cuSPARSE row). */
static tcsparseStatus_t tc_route_plan(tcsparseHandle_t h, const struct tcsparseSpMatDescr *sp,
                                      tc_decision *d, struct tc_plan **plan)
{
    const tcsparseStatus_t st = tc_plan_get(h, sp, plan);
    if (st == TCSPARSE_STATUS_INVALID_VALUE)
        return st;
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(d->reason, sizeof d->reason, "no plan: %s", tcsparseGetLastErrorMessage());
        tc_error_clear();
        *plan = NULL;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

/* The interposer's handles (TC_HOOK_DEFER_CUSPARSE) time the real cuSPARSE against what the
 * library runs themselves (compat/cusparse/choose.c), so there the library measures only its
 * own paths and runs one of them: the CUDA-core kernel first where the model prefers cuSPARSE
 * (the model has no coefficients for that kernel, and on scattered matrices it is the one that
 * beats cuSPARSE).  Where the model prefers cuSPARSE and the kernel does not take the call,
 * the decision stays cuSPARSE's, unmeasured, and so do the tensor-core candidates (none is
 * measured).  SpMM only (SDDMM's decision on these handles is the model's, timed as it is by
 * the interposer; tc_route_decide says why). */
static void tc_route_own_paths(tc_decision *d, const tc_route_row *csr)
{
    int cand[TC_NCAND], n = 0;
    const int to_cusparse = d->path == TCSPARSE_PATH_CUSPARSE;
    if (to_cusparse) {
        if (csr == NULL) {
            d->ncand = 0;
            return;
        }
        tc_decision_take(d, csr);
        d->ra.kind = 0;
        snprintf(d->reason, sizeof d->reason, "CUDA cores, timed against the real cuSPARSE by "
                 "the interposer (the model prefers cuSPARSE to the tensor cores)");
        cand[n++] = TC_SEL_CAND_CSR;
    }
    for (int i = 0; i < d->ncand; i++) {
        const int k = d->cand[i];
        if (k != TC_SEL_CAND_CUSPARSE && k != TC_SEL_CAND_ALG3 &&
            !(to_cusparse && k == TC_SEL_CAND_CSR))
            cand[n++] = k;
    }
    memcpy(d->cand, cand, sizeof cand[0] * (size_t)n);
    d->ncand = n;
}

tcsparseStatus_t tc_route_decide(tcsparseHandle_t h, tc_route_call *c,
                                 const struct tcsparseSpMatDescr *sp, const tc_call_kind *k,
                                 tc_decision *d, struct tc_plan **plan)
{
    cusparseHandle_t cusp;
    const tcsparseRoute_t route = tc_route_effective(h);
    const tc_route_row *cus = tc_route_cusparse_row(c->op);
    const tc_route_row *alg3 = tc_route_row_of(c->op, TC_SEL_CAND_ALG3);
    /* TCSPARSE_X_CUSPARSE_ALG3 concerns the operations with a CSR_ALG3 row (SpMM) */
    const int alg3_mode = alg3 != NULL ? tc_alg3_mode() : TC_ALG3_NEVER;
    tc_decision_take(d, cus);
    d->ra.kind = 0;
    d->ncand = 0;
    d->measuring = 0;
    d->exploring = 0;
    *plan = NULL;
    tc_select_note(h, -1.0, -1.0);
    if (route == TCSPARSE_ROUTE_CUSPARSE) {
        tc_str_join(d->reason, sizeof d->reason, "route forced to cuSPARSE", NULL);
        if (alg3_mode == TC_ALG3_ALWAYS && tc_alg3_allowed(c, alg3_mode)) {
            tc_decision_take(d, alg3);
            tc_str_join(d->reason, sizeof d->reason,
                        "route forced to cuSPARSE, CSR_ALG3 forced "
                        "(TCSPARSE_X_CUSPARSE_ALG3=1)", NULL);
        }
        return TCSPARSE_STATUS_SUCCESS;
    }
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp); /* fills the device's capability */
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    c->cc_major = h->cc_major;
    c->cc_minor = h->cc_minor;
    /* the walk over the table: which rows take this call (why: the first refusal) */
    const unsigned ok = tc_route_eligible(c, d->reason, sizeof d->reason);
    const int alg3_ok = alg3_mode != TC_ALG3_NEVER && alg3 != NULL && (ok & tc_route_bit(alg3));
    /* the cuSPARSE row the route ends on: CSR_ALG3 where TCSPARSE_X_CUSPARSE_ALG3=1 forces it */
    const tc_route_row *fallback = alg3_ok && alg3_mode == TC_ALG3_ALWAYS ? alg3 : cus;
    if (fallback != cus)
        tc_decision_take(d, fallback);
    const tc_route_row *csr = tc_route_row_of(c->op, TC_SEL_CAND_CSR);
    const int csr_ok = csr != NULL && (ok & tc_route_bit(csr));
    if (route == TCSPARSE_ROUTE_CUDA_CORE) { /* its schedule hangs off the plan */
        char why[128] = "no CUDA-core kernel for this operation";
        if (!csr_ok) {
            if (csr != NULL)
                (void)csr->eligible(c, why, sizeof why);
            snprintf(d->reason, sizeof d->reason, "route forced to the CUDA-core kernel, "
                     "which does not take the call: %s", why);
            return TCSPARSE_STATUS_SUCCESS;
        }
        st = tc_route_plan(h, sp, d, plan);
        if (st != TCSPARSE_STATUS_SUCCESS || *plan == NULL)
            return st;
        tc_decision_take(d, csr);
        tc_str_join(d->reason, sizeof d->reason, "route forced to the CUDA-core kernel", NULL);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (!tc_route_tc_ok(ok, c->op))
        return TCSPARSE_STATUS_SUCCESS; /* d->reason: why the tensor-core rows refused */
    st = tc_route_plan(h, sp, d, plan);
    if (st != TCSPARSE_STATUS_SUCCESS || *plan == NULL)
        return st;
    const tc_measured *meas = route == TCSPARSE_ROUTE_AUTO ? tc_measured_lookup(*plan, k) : NULL;
    if (meas != NULL) { /* measured on the first executions of this kind (measure.c) */
        tc_decision_measured(d, meas, c->op, alg3_ok, alg3_mode == TC_ALG3_ALWAYS);
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (route == TCSPARSE_ROUTE_TC_BASE || route == TCSPARSE_ROUTE_TC_BALANCED) {
        const tcsparseMetcfStats_t *s = &(*plan)->stats;
        tc_decision_take(d, tc_route_row_on(c->op, route == TCSPARSE_ROUTE_TC_BALANCED
                                                       ? TCSPARSE_PATH_TC_BALANCED
                                                       : TCSPARSE_PATH_TC_BASE));
        snprintf(d->reason, sizeof d->reason, "forced; %.2f nnz/block, max/mean blocks per window %lld/%.1f",
                 s->mean_nnz_per_block, (long long)s->max_blocks_per_window, s->mean_blocks_per_window);
        return TCSPARSE_STATUS_SUCCESS;
    }
    /* the model: TCSPARSE_ROUTE=tc (or the handle's) takes its tensor-core kernel whatever the
     * prediction, the automatic route its choice among the eligible rows */
    const int sddmm = c->op == TC_SEL_OP_SDDMM;
    tc_sel_config cfg;
    tc_sel_result r;
    int occ_known;
    if (sddmm)
        tc_sddmm_select(h, c, *plan, &cfg, &r, &occ_known);
    else
        tc_spmm_select(h, c, *plan, alg3_ok, &cfg, &r, &occ_known);
    const int tc = route == TCSPARSE_ROUTE_TC || r.use_tc;
    tc_select_note(h, r.us_tc, r.us_cusparse);
    if (tc)
        tc_decision_take(d, tc_route_row_on(c->op, r.balanced ? TCSPARSE_PATH_TC_BALANCED
                                                              : TCSPARSE_PATH_TC_BASE));
    else
        tc_decision_take(d, r.use_alg3 && alg3 != NULL ? alg3 : fallback);
    /* SDDMM: one kernel for both schedules, no CSR_ALG3 */
    d->ra = (tc_reason_args){sddmm ? 2 : 1, route == TCSPARSE_ROUTE_AUTO, r.balanced, occ_known,
                             r.bps_base, sddmm ? r.bps_base : r.bps_balanced, r.sm_count,
                             r.us_tc, r.us_cusparse, r.balance_ratio, TC_SEL_BALANCE_THRESHOLD,
                             sddmm ? 0 : r.use_alg3, sddmm ? -1.0 : r.us_cusparse_alg3,
                             {0, 0, 0, 0}, 0};
    d->reason[0] = '\0';
    /* the automatic route measures the candidates on the executions, unless
     * TCSPARSE_X_CUSPARSE_ALG3 pins the algorithm of the operation's CSR_ALG3 row */
    const int alg3_pinned = alg3 != NULL && alg3_mode != TC_ALG3_MODEL;
    /* the model was fitted on untransposed products on the H100: a transposed A's (whose
     * cuSPARSE time it does not know), or any call on a GPU it was not fitted on, has every
     * candidate measured */
    const int unfitted = c->a_view || !tc_select_fitted(c->cc_major, c->cc_minor);
    cfg.csr_ok = csr_ok;
    if (route == TCSPARSE_ROUTE_AUTO && !alg3_pinned)
        d->ncand = tc_select_explore_candidates(&cfg, &r, unfitted ? 1e30 : tc_explore_factor(),
                                                d->cand, d->pred);
    if (route == TCSPARSE_ROUTE_AUTO && tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE)) {
        /* the CUDA-core kernel stands in for the model's cuSPARSE where the interposer times
         * the kinds of call against cuSPARSE (docs/preload.md, "Measured choice"): not for
         * SDDMM (PyTorch's sampled_addmm makes a new structure of C on every call, which the
         * interposer does not always recognise: the measurement then starts afresh on each
         * call and never ends, 0.74x on a GAT epoch on ogbl-ddi), nor with
         * TCSPARSE_X_PRELOAD_MEASURE=0; nor with TCSPARSE_SELECT=model, which asks for the
         * model's decisions.  There the library measures none of its paths (the interposer
         * still times the decision against cuSPARSE).  Inside a capture
         * it stands in as outside (nothing is measured there), so that a kind's decision does
         * not depend on whether its call was captured. */
        if (sddmm || !tc_config_get()->preload.measure || tc_select_model_only())
            d->ncand = 0;
        else
            tc_route_own_paths(d, csr_ok ? csr : NULL);
    }
    return TCSPARSE_STATUS_SUCCESS;
}
