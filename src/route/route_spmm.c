/* SpMM's entry points (route.h): the buffer size, the preprocessing (with the measured mode
 * TCSPARSE_SELECT=measure) and the execution of the decision route.c takes for the call, on
 * the tensor cores or cuSPARSE. */
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
#include "tune.h"
#include "late.h"

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

/* The descriptor whose plan serves the call: A's own, or for opA = TRANSPOSE its transposed
 * view (plan.h), locked here and unlocked by tc_spmm_view_done.  NULL leaves a transposed
 * call to cuSPARSE: out of host memory, or a guarded A (tc_hook_spmat_guard) with FP16 or
 * BF16 C, where the guard's fallback (atomic sums into C, one rounding per nonzero) would
 * lose the terms of long columns. */
static struct tcsparseSpMatDescr *tc_spmm_view(tcsparseHandle_t h, tcsparseOperation_t opA,
                                               tcsparseConstSpMatDescr_t A,
                                               tcsparseConstDnMatDescr_t C)
{
    struct tcsparseSpMatDescr *md = (struct tcsparseSpMatDescr *)A; /* plans are a cache */
    if (opA != TCSPARSE_OPERATION_TRANSPOSE)
        return md;
    if (tc_route_effective(h) == TCSPARSE_ROUTE_CUSPARSE)
        return NULL;
    if (tc_guard_armed(A) != NULL && C->value_type != CUDA_R_32F)
        return NULL;
    struct tcsparseSpMatDescr *t = tc_plan_transposed(md);
    if (t != NULL)
        tc_spmat_lock(t);
    return t;
}

static void tc_spmm_view_done(tcsparseConstSpMatDescr_t A, struct tcsparseSpMatDescr *P)
{
    if (P != NULL && P != A)
        tc_spmat_unlock(P);
}

/* The decision for this SpMM call (route.c); c receives the call.  P: the plan's descriptor
 * (tc_spmm_view); NULL leaves a transposed call to cuSPARSE. */
static tcsparseStatus_t tc_spmm_decide(tcsparseHandle_t h, tc_route_call *c,
                                       tcsparseOperation_t opA, tcsparseOperation_t opB,
                                       tcsparseConstSpMatDescr_t A,
                                       const struct tcsparseSpMatDescr *P,
                                       tcsparseConstDnMatDescr_t B, tcsparseDnMatDescr_t C,
                                       cudaDataType ct, tcsparseSpMMAlg_t alg, tc_decision *d,
                                       struct tc_plan **plan)
{
    const tc_call_kind k = tc_spmm_kind(h, B, C);
    tc_route_call_spmm(c, h, opA, opB, A, B, C, ct, alg);
    c->a_view = P != NULL && P != A;
    return tc_route_decide(h, c, P != NULL ? P : A, &k, d, plan);
}

/* The launchers' arguments of an SpMM of A's values, B and C, M x K = rows x cols of P (the
 * product's A: the caller's, or its transposed view); no plan, no schedule. */
static tc_spmm_args tc_spmm_args_of(tcsparseHandle_t h, const void *alpha,
                                    tcsparseConstSpMatDescr_t A,
                                    const struct tcsparseSpMatDescr *P,
                                    tcsparseConstDnMatDescr_t B, const void *beta,
                                    tcsparseDnMatDescr_t C)
{
    tc_spmm_args a = {0};
    a.M = P->rows;
    a.K = P->cols;
    a.N = C->cols;
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.a_val = A->values;
    a.B = B->values;
    a.ldb = B->ld;
    a.C = C->values;
    a.ldc = C->ld;
    tc_route_scalars(h, alpha, beta, &a.alpha_dev, &a.beta_dev, &a.alpha, &a.beta);
    return a;
}

/* An armed guard's check of A's arrays (tc_hook_spmat_guard), launched on the caller's stream
 * before a kernel that reads A through its plan; a->guard then points at its verdict, where
 * 0 makes that kernel do nothing (kernels.h) and tc_guard_finish's fallback compute C.  *gp is
 * NULL where no guard is armed.  Nothing is launched where it fails: another path may run the
 * call.  offsets_only: the kernel depends on A's row offsets alone (the CUDA-core kernel,
 * whose row schedule the plan holds, reads the caller's columns and values as they are), so
 * only those are checked where their own fingerprint is known (a 17th of the bytes at 16
 * nonzeros a row). */
static tcsparseStatus_t tc_guard_start(tcsparseHandle_t h, tcsparseConstSpMatDescr_t A,
                                       tc_spmm_args *a, struct tc_guard **gp, int offsets_only)
{
    struct tc_guard *g = tc_guard_armed(A); /* under the descriptor's lock, like the plan */
    *gp = g;
    if (g == NULL)
        return TCSPARSE_STATUS_SUCCESS;
    /* the guard's words are its device's: a launch from another device would need peer
     * access to them (the caller's arrays may be managed memory, which does not) */
    if (g->device != h->device)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "tcsparseSpMM: the descriptor's guard is on device %d, the "
                            "handle's is %d", g->device, h->device);
    /* an earlier guarded execution on another stream must be over (one set of device words) */
    if (g->has_last && g->last != h->stream &&
        cudaStreamWaitEvent(h->stream, g->done, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "tcsparseSpMM: the guarded descriptor's last stream could not be "
                            "waited for");
    }
    char msg[200];
    const int off_only = offsets_only && g->fp_off_ok;
    const tcsparseStatus_t gst = tc_guard_check_launch(
        g->off, g->off_bytes, off_only ? NULL : g->idx, off_only ? 0 : g->idx_bytes,
        off_only ? g->fp_off : g->fp, (tc_guard_dev *)g->dev, (int *)g->tripped, h->stream, msg,
        sizeof msg);
    if (gst != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(gst == TCSPARSE_STATUS_EXECUTION_FAILED ? TCSPARSE_STATUS_INTERNAL_ERROR
                                                                     : gst,
                            "tcsparseSpMM: %s", msg);
    a->guard = &((tc_guard_dev *)g->dev)->verdict;
    return TCSPARSE_STATUS_SUCCESS;
}

/* After the guarded kernel's launch (st, msg its status and message, msg msgn bytes): the
 * fallback that runs where the verdict is 0, and the guard's event for the next stream.
 * Returns the call's status, its message set. */
static tcsparseStatus_t tc_guard_finish(tcsparseHandle_t h, struct tc_guard *g,
                                        const tc_spmm_args *a, const tc_csr_arrays *csr,
                                        tcsparseStatus_t st, char *msg, size_t msgn)
{
    if (st == TCSPARSE_STATUS_SUCCESS && g != NULL) {
        st = tc_spmm_guard_fallback(a, csr, h->stream, msg, msgn);
        if (st != TCSPARSE_STATUS_SUCCESS)
            st = TCSPARSE_STATUS_EXECUTION_FAILED; /* the guarded kernel was launched */
        else if (!tc_stream_capturing(h->stream)) {
            /* outside captures only: an event recorded in a capture cannot be waited for
             * from outside it (a captured execution replays on the capture's stream) */
            if (cudaEventRecord(g->done, h->stream) == cudaSuccess) {
                g->last = h->stream;
                g->has_last = 1;
            } else {
                (void)cudaGetLastError();
            }
        }
    }
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSpMM: %s", msg);
    return TCSPARSE_STATUS_SUCCESS;
}

/* tune: the executions may measure the kernel variants (tune.h); not the timings of the
 * measured mode at _preprocess, which compare the paths with the launcher's choice. */
static tcsparseStatus_t tc_spmm_tc(tcsparseHandle_t h, const void *alpha,
                                   tcsparseConstSpMatDescr_t A,
                                   const struct tcsparseSpMatDescr *P,
                                   tcsparseConstDnMatDescr_t B, const void *beta,
                                   tcsparseDnMatDescr_t C, struct tc_plan *plan, tc_decision *d,
                                   int tune)
{
    tc_spmm_args a = tc_spmm_args_of(h, alpha, A, P, B, beta, C);
    a.plan = &plan->dev;
    a.tf32 = h->math == TCSPARSE_MATH_TF32; /* TCSPARSE_MATH is read at handle creation */
    if (d->path == TCSPARSE_PATH_TC_BALANCED) {
        a.chunks = plan->chunks;
        a.nchunks = plan->nchunks;
        a.split_windows = plan->split_windows;
        a.nsplit = plan->nsplit;
    }
    char msg[200];
    struct tc_guard *g;
    tcsparseStatus_t st = tc_guard_start(h, A, &a, &g, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    const tc_csr_arrays csr = tc_csr_arrays_of(A, P != A);
    int var[TC_SPMM_MAX_VARIANTS];
    const int nvar = tune && tc_tune_enabled() ? tc_spmm_variants(&a, var) : 0;
    const int pair =
        nvar > 1 ? tc_tune_choose(h, plan, tc_spmm_kind(h, B, C), d, var, nvar, &a.variant) : -1;
    tc_str_join(d->kernel, sizeof d->kernel, tc_spmm_kernel_name(&a),
                d->path == TCSPARSE_PATH_TC_BALANCED ? "balanced" : "base");
    st = tc_spmm_launch(&a, h->stream, msg, sizeof msg);
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
    return tc_guard_finish(h, g, &a, &csr, st, msg, sizeof msg);
}

/* The CUDA-core CSR kernel on the caller's arrays in the order of the plan's schedule (built
 * on its first call; a guard armed on A checks A's row offsets first, both arrays where the
 * offsets' fingerprint is not known).  NOT_SUPPORTED, nothing launched, where it does not take
 * the call (a transposed A, dense operands off its 4-element boundaries, no plan or schedule). */
static tcsparseStatus_t tc_spmm_csr(tcsparseHandle_t h, tcsparseOperation_t opA,
                                    const void *alpha, tcsparseConstSpMatDescr_t A,
                                    tcsparseConstDnMatDescr_t B, const void *beta,
                                    tcsparseDnMatDescr_t C, struct tc_plan *plan)
{
    tc_spmm_args a = tc_spmm_args_of(h, alpha, A, A, B, beta, C);
    const tc_csr_arrays csr = tc_csr_arrays_of(
        A, opA != TCSPARSE_OPERATION_NON_TRANSPOSE || A->format != TCSPARSE_FORMAT_CSR);
    char msg[200];
    tcsparseStatus_t st = tc_spmm_csr_takes(&a, &csr, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSpMM: %s", msg);
    if (a.M == 0 || a.N == 0)
        return TCSPARSE_STATUS_SUCCESS; /* nothing to compute */
    if (plan == NULL)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "tcsparseSpMM: no plan for the CUDA-core schedule");
    const tc_csr_sched *sched;
    st = tc_plan_csr_sched(h, A, plan, &sched);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st == TCSPARSE_STATUS_INVALID_VALUE ? st : TCSPARSE_STATUS_NOT_SUPPORTED;
    struct tc_guard *g;
    st = tc_guard_start(h, A, &a, &g, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    st = tc_spmm_csr_launch(&a, &csr, sched, h->stream, msg, sizeof msg);
    return tc_guard_finish(h, g, &a, &csr, st, msg, sizeof msg);
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
    const struct tcsparseSpMatDescr *P; /* the plan's descriptor (tc_spmm_view) */
} tc_spmm_call;

/* Runs row r of the table on call c. */
static tcsparseStatus_t tc_run_row(tcsparseHandle_t h, const tc_spmm_call *c,
                                   struct tc_plan *plan, const tc_route_row *r)
{
    if (r->form == TC_SEL_CAND_ALG3)
        return tc_fallback_spmm_alg3(h, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct, 1);
    if (r->path == TCSPARSE_PATH_CUDA_CORE)
        return tc_spmm_csr(h, c->opA, c->alpha, c->A, c->B, c->beta, c->C, plan);
    if (r->path == TCSPARSE_PATH_CUSPARSE)
        return tc_fallback_spmm(h, c->opA, c->opB, c->alpha, c->A, c->B, c->beta, c->C, c->ct,
                                c->alg, c->buffer);
    tc_decision d = {.path = r->path};
    return tc_spmm_tc(h, c->alpha, c->A, c->P, c->B, c->beta, c->C, plan, &d, 0);
}

/* One warm-up, then the best of three runs; negative when the row fails. */
static float tc_time_row(tcsparseHandle_t h, const tc_spmm_call *c, struct tc_plan *plan,
                         const tc_route_row *r, cudaEvent_t e0, cudaEvent_t e1)
{
    float best = -1.0f;
    if (tc_run_row(h, c, plan, r) != TCSPARSE_STATUS_SUCCESS) {
        tc_error_clear();
        return -1.0f;
    }
    for (int i = 0; i < 3; i++) {
        float ms = 0.0f;
        if (cudaEventRecord(e0, h->stream) != cudaSuccess ||
            tc_run_row(h, c, plan, r) != TCSPARSE_STATUS_SUCCESS ||
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

/* The measured mode (TCSPARSE_SELECT=measure): each of SpMM's rows timed on the caller's
 * operands into a scratch C; the plan keeps cuSPARSE unless another row is faster. */
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
    for (int k = 0; k < TC_SEL_NCAND; k++) { /* SpMM's rows, in the order of the candidates */
        const tc_route_row *r = tc_route_row_of(TC_SEL_OP_SPMM, k);
        m.ms[k] = r->form != TC_SEL_CAND_ALG3 || c.alg3_ok ? tc_time_row(h, &c, plan, r, e0, e1)
                                                          : -1.0f;
    }
    static const int order[4] = {TC_SEL_CAND_ALG3, TC_SEL_CAND_CSR, TC_SEL_CAND_BASE,
                                 TC_SEL_CAND_BALANCED};
    tc_measured_choose(&m, order, 4, TC_SEL_CAND_CUSPARSE); /* cuSPARSE unless faster */
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
        tc_route_call c;
        tc_route_call_spmm(&c, h, opA, opB, A, B, C, ct, alg);
        c.a_view = opA == TCSPARSE_OPERATION_TRANSPOSE; /* the view is made at the call */
        if (tc_route_tc_ok(tc_route_eligible(&c, why, sizeof why), c.op)) {
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
    tc_route_call call;
    struct tc_plan *plan;
    h->hook.learning = 0; /* a preprocess measures nothing on the executions */
    struct tcsparseSpMatDescr *P = tc_spmm_view(h, opA, A, C);
    tcsparseStatus_t st = tc_spmm_decide(h, &call, opA, opB, A, P, B, C, ct, alg, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_spmm_view_done(A, P);
        return st;
    }
    tc_route_record(h, &d);
    /* cuSPARSE's own preprocessing too, so that either path can execute afterwards (the
     * interposer calls the real one itself). */
    h->hook.deferred = tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE);
    st = h->hook.deferred ? TCSPARSE_STATUS_SUCCESS
                     : tc_fallback_spmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
    if (st == TCSPARSE_STATUS_SUCCESS && d.path == TCSPARSE_PATH_CUSPARSE && d.alg3 &&
        !h->hook.deferred) {
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
                          tc_route_alg3_ok(&call), P};
        tc_spmm_measure(h, &c, plan);
        st = tc_spmm_decide(h, &call, opA, opB, A, P, B, C, ct, alg, &d, &plan);
        if (st == TCSPARSE_STATUS_SUCCESS)
            tc_route_record(h, &d);
    }
    if (st == TCSPARSE_STATUS_SUCCESS && opA == TCSPARSE_OPERATION_NON_TRANSPOSE)
        tc_route_csr_prepare(h, &d, A, plan);
    tc_spmm_view_done(A, P);
    return st;
}

/* Runs decision d and records it; *ran_alg3 tells whether CSR_ALG3 ran (it falls back to
 * ALG_DEFAULT where it cannot). */
static tcsparseStatus_t tc_spmm_execute(tcsparseHandle_t h, tc_decision *d,
                                        struct tc_plan *plan, tcsparseOperation_t opA,
                                        tcsparseOperation_t opB, const void *alpha,
                                        tcsparseConstSpMatDescr_t A,
                                        const struct tcsparseSpMatDescr *P,
                                        tcsparseConstDnMatDescr_t B,
                                        const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                                        tcsparseSpMMAlg_t alg, void *buffer, int *ran_alg3)
{
    tcsparseStatus_t st;
    *ran_alg3 = 0;
    if (d->path == TCSPARSE_PATH_CUDA_CORE) {
        st = tc_spmm_csr(h, opA, alpha, A, B, beta, C, plan);
        if (st != TCSPARSE_STATUS_NOT_SUPPORTED) {
            tc_route_record(h, d);
            h->hook.deferred = 0;
            return st;
        }
        /* nothing launched (a call of a kind measured on aligned operands, say) */
        tc_decision_to_cusparse(d, TC_SEL_OP_SPMM);
    }
    if (d->path != TCSPARSE_PATH_CUSPARSE) {
        st = tc_spmm_tc(h, alpha, A, P, B, beta, C, plan, d, 1);
        tc_route_record(h, d);
        h->hook.deferred = 0;
        return st;
    }
    h->hook.deferred = tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE);
    if (h->hook.deferred) {
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

static tcsparseStatus_t tc_spmm_exec_cb(void *p, tc_decision *d, int *as_planned)
{
    const tc_spmm_call *c = p;
    const int want_alg3 = d->path == TCSPARSE_PATH_CUSPARSE && d->alg3;
    const int want_csr = d->path == TCSPARSE_PATH_CUDA_CORE;
    int ran_alg3;
    tcsparseStatus_t st = tc_spmm_execute(c->h, d, c->plan, c->opA, c->opB, c->alpha, c->A, c->P,
                                          c->B, c->beta, c->C, c->ct, c->alg, c->buffer,
                                          &ran_alg3);
    /* not as planned: CSR_ALG3 fell back to ALG_DEFAULT, or the CUDA cores refused and
     * cuSPARSE ran (their time is not the path's) */
    *as_planned = (!want_alg3 || ran_alg3) && (!want_csr || d->path == TCSPARSE_PATH_CUDA_CORE);
    return st;
}

tcsparseStatus_t tc_route_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                               const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                               tcsparseSpMMAlg_t alg, void *buffer)
{
    tc_decision d;
    tc_route_call call;
    struct tc_plan *plan;
    /* the plans are a cache: A's, or its transposed view's for opA = TRANSPOSE; a transposed
     * call without its view (cuSPARSE's) takes no part in A's late ordering */
    struct tcsparseSpMatDescr *P = tc_spmm_view(h, opA, A, C); /* NULL: no late ordering */
    const tc_call_kind k = tc_spmm_kind(h, B, C);
    if (P != NULL)
        tc_late_begin(h, P, &k); /* may pick late ordering's other plan for this call */
    tcsparseStatus_t st = tc_spmm_decide(h, &call, opA, opB, A, P, B, C, ct, alg, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        if (P != NULL)
            tc_late_end(h, P, NULL, &k, &d, st);
        h->hook.learning = 0;
        tc_spmm_view_done(A, P);
        return st;
    }
    /* the measurement's CSR_ALG3 candidate runs where the row takes the call */
    tc_spmm_call ctx = {h, plan, opA, opB, alpha, beta, A, B, C, ct, alg, buffer,
                        tc_route_row_eligible(tc_route_row_of(TC_SEL_OP_SPMM, TC_SEL_CAND_ALG3),
                                              &call), P != NULL ? P : A};
    st = tc_route_run(h, plan, &k, &d, ctx.alg3_ok, tc_spmm_exec_cb, &ctx);
    if (P != NULL)
        tc_late_end(h, P, plan, &k, &d, st);
    h->hook.learning = st == TCSPARSE_STATUS_SUCCESS ? tc_call_learning(P, plan, &k, &d) : 0;
    tc_spmm_view_done(A, P);
    return st;
}
