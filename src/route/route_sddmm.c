/* SDDMM's entry points (route.h): the buffer size, the preprocessing and the execution of the
 * decision route.c takes for the call: the tensor-core SDDMM on C's plan, the CUDA-core SDDMM
 * on C's CSR arrays, or cuSPARSE. */
#include <stdio.h>
#include <string.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"
#include "route.h"
#include "measure.h"
#include "select.h"
#include "tune.h"
#include "late.h"

/* K: the columns of op(A).  A transposed operand reaches the kernel as the other layout over
 * the same array (table.c), so the kernel reads it with its own leading dimension. */
static int64_t tc_sddmm_k(tcsparseOperation_t opA, tcsparseConstDnMatDescr_t A)
{
    return opA == TCSPARSE_OPERATION_NON_TRANSPOSE ? A->cols : A->rows;
}

/* The kind of this SDDMM call (the key of its measured decision). */
static tc_call_kind tc_sddmm_kind(tcsparseHandle_t h, tcsparseOperation_t opA,
                                  tcsparseConstDnMatDescr_t A, tcsparseConstSpMatDescr_t C)
{
    tc_call_kind k = {TC_SEL_OP_SDDMM, tc_sddmm_k(opA, A), tc_route_ab_type(A->value_type),
                      tc_route_ab_type(C->value_type), h->math == TCSPARSE_MATH_TF32, 0};
    return k;
}

/* The decision for this SDDMM call (route.c). */
static tcsparseStatus_t tc_sddmm_decide(tcsparseHandle_t h, tcsparseOperation_t opA,
                                        tcsparseOperation_t opB, tcsparseConstDnMatDescr_t A,
                                        tcsparseConstDnMatDescr_t B, tcsparseConstSpMatDescr_t C,
                                        cudaDataType ct, tc_decision *d, struct tc_plan **plan)
{
    tc_route_call c;
    const tc_call_kind k = tc_sddmm_kind(h, opA, A, C);
    tc_route_call_sddmm(&c, h, opA, opB, A, B, C, ct);
    return tc_route_decide(h, &c, C, &k, d, plan);
}

/* The kernels' arguments of this call (the tensor-core kernel's plan and chunks left unset). */
static tc_sddmm_args tc_sddmm_args_of(tcsparseHandle_t h, const void *alpha,
                                      tcsparseOperation_t opA, tcsparseConstDnMatDescr_t A,
                                      tcsparseConstDnMatDescr_t B, const void *beta,
                                      tcsparseSpMatDescr_t C)
{
    tc_sddmm_args a = {0};
    a.M = C->rows;
    a.N = C->cols;
    a.K = tc_sddmm_k(opA, A);
    a.ab_type = tc_route_ab_type(A->value_type);
    a.c_type = tc_route_ab_type(C->value_type);
    a.tf32 = h->math == TCSPARSE_MATH_TF32;
    a.A = A->values;
    a.lda = A->ld;
    a.B = B->values;
    a.ldb = B->ld;
    a.C = C->values;
    tc_route_scalars(h, alpha, beta, &a.alpha_dev, &a.beta_dev, &a.alpha, &a.beta);
    return a;
}

/* The CUDA-core CSR SDDMM on the caller's arrays of C in the order of the plan's schedule
 * (built on its first call).  NOT_SUPPORTED, nothing launched, where it does not take the call
 * (no plan or schedule, a type or size it refuses). */
static tcsparseStatus_t tc_sddmm_csr(tcsparseHandle_t h, const void *alpha,
                                     tcsparseOperation_t opA, tcsparseConstDnMatDescr_t A,
                                     tcsparseConstDnMatDescr_t B, const void *beta,
                                     tcsparseSpMatDescr_t C, struct tc_plan *plan)
{
    const tc_sddmm_args a = tc_sddmm_args_of(h, alpha, opA, A, B, beta, C);
    const tc_csr_arrays csr = tc_csr_arrays_of(C, C->format != TCSPARSE_FORMAT_CSR);
    char msg[200];
    tcsparseStatus_t st = tc_sddmm_csr_takes(&a, &csr, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSDDMM: %s", msg);
    if (a.M == 0 || a.N == 0 || C->nnz == 0)
        return TCSPARSE_STATUS_SUCCESS; /* nothing to compute */
    if (plan == NULL)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "tcsparseSDDMM: no plan for the CUDA-core schedule");
    const tc_csr_sched *sched;
    st = tc_plan_csr_sched(h, C, plan, &sched);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st == TCSPARSE_STATUS_INVALID_VALUE ? st : TCSPARSE_STATUS_NOT_SUPPORTED;
    st = tc_sddmm_csr_launch(&a, &csr, sched, h->stream, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return tc_error_set(st, "tcsparseSDDMM: %s", msg);
    return TCSPARSE_STATUS_SUCCESS;
}

/* As tc_spmm_tc (route_spmm.c): the executions may measure the kernel variants (tune.h). */
static tcsparseStatus_t tc_sddmm_tc(tcsparseHandle_t h, const void *alpha,
                                    tcsparseOperation_t opA, tcsparseConstDnMatDescr_t A,
                                    tcsparseConstDnMatDescr_t B,
                                    const void *beta, tcsparseSpMatDescr_t C,
                                    struct tc_plan *plan, tc_decision *d)
{
    tc_sddmm_args a = tc_sddmm_args_of(h, alpha, opA, A, B, beta, C);
    a.plan = &plan->dev;
    if (d->path == TCSPARSE_PATH_TC_BALANCED) {
        a.chunks = plan->chunks;
        a.nchunks = plan->nchunks;
    }
    int var[TC_SDDMM_MAX_VARIANTS];
    const int nvar = tc_tune_enabled() ? tc_sddmm_variants(&a, var) : 0;
    const int pair =
        nvar > 1 ? tc_tune_choose(h, plan, tc_sddmm_kind(h, opA, A, C), d, var, nvar,
                                   &a.variant) : -1;
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
        tc_route_call c;
        tc_route_call_sddmm(&c, h, opA, opB, A, B, C, ct);
        if (tc_route_tc_ok(tc_route_eligible(&c, why, sizeof why), c.op)) {
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
    h->hook.learning = 0; /* a preprocess measures nothing on the executions */
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
    if (st == TCSPARSE_STATUS_SUCCESS)
        tc_route_csr_prepare(h, &d, C, plan);
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
    if (d->path == TCSPARSE_PATH_CUDA_CORE) {
        st = tc_sddmm_csr(h, c->alpha, c->opA, c->A, c->B, c->beta, c->C, c->plan);
        if (st != TCSPARSE_STATUS_NOT_SUPPORTED) {
            tc_route_record(h, d);
            h->hook.deferred = 0;
            return st;
        }
        tc_decision_to_cusparse(d, TC_SEL_OP_SDDMM); /* nothing launched */
        *as_planned = 0; /* cuSPARSE's time is not the CUDA cores' */
        st = TCSPARSE_STATUS_SUCCESS;
    }
    if (d->path != TCSPARSE_PATH_CUSPARSE)
        st = tc_sddmm_tc(h, c->alpha, c->opA, c->A, c->B, c->beta, c->C, c->plan, d);
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
    const tc_call_kind k = tc_sddmm_kind(h, opA, A, C);
    tc_late_begin(h, C, &k); /* may pick late ordering's other plan for this call */
    tcsparseStatus_t st = tc_sddmm_decide(h, opA, opB, A, B, C, ct, &d, &plan);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_late_end(h, C, NULL, &k, &d, st);
        h->hook.learning = 0;
        return st;
    }
    tc_sddmm_exec_ctx ctx = {h, plan, opA, opB, alpha, beta, A, B, C, ct, alg, buffer};
    st = tc_route_run(h, plan, &k, &d, 0, tc_sddmm_exec_cb, &ctx);
    tc_late_end(h, C, plan, &k, &d, st);
    h->hook.learning = st == TCSPARSE_STATUS_SUCCESS ? tc_call_learning(C, plan, &k, &d) : 0;
    return st;
}
