/* The route table: after the public wrappers have validated their arguments, these decide
 * between the tensor-core kernels and cuSPARSE (before anything is launched), record the
 * decision in the handle (tcsparseGetLastRoute, TCSPARSE_LOG=1) and execute. */
#ifndef TC_ROUTE_H
#define TC_ROUTE_H

#include "internal.h"
#include "plan.h"

/* A routing decision: path, kernel name and a one-line reason. */
typedef struct {
    tcsparsePath_t path;
    char kernel[64];
    char reason[160];
    tc_reason_args ra;
    int alg3; /* SpMM on the cuSPARSE path: run as CSR_ALG3 (fallback.c) */
    /* SpMM decided by the model under the automatic route: the candidates of a measurement
     * on the executions (select.h, TC_SEL_CAND_*, the model's choice first; ncand 0: none) */
    int ncand;
    int cand[4];
    double pred[4];
    /* this execution is part of a measurement (the route's or the kernel tuning's) or waits
     * for one: its kind of call has not settled (late.c waits for a settled call) */
    int measuring;
} tc_decision;

/* The plan's measured decision for this kind of call (tc_call_kind, plan.h), or NULL. */
const struct tc_measured *tc_measured_lookup(const struct tc_plan *p, const tc_call_kind *k);
/* d takes the measured decision m; alg3_ok: the SpMM cuSPARSE route may run CSR_ALG3. */
void tc_decision_measured(tc_decision *d, const struct tc_measured *m, int op, int alg3_ok,
                          int force_alg3);
/* Runs decision d: run(ctx, d, &as_planned) executes and records a decision (as_planned 0
 * when it ran as another path: CSR_ALG3 falling back).  For the interposer's decide-only
 * calls it records d and runs nothing.  A model decision of the automatic route with
 * candidates (d->ncand > 0) goes through the measurement on the executions, which may run a
 * candidate instead; otherwise (nothing to measure, TCSPARSE_SELECT=model, the interposer,
 * another kind in progress, a capture) d runs as it is. */
typedef tcsparseStatus_t (*tc_exec_fn)(void *ctx, tc_decision *d, int *as_planned);
tcsparseStatus_t tc_route_run(tcsparseHandle_t h, struct tc_plan *plan, const tc_call_kind *k,
                              tc_decision *d, int alg3_ok, tc_exec_fn run, void *ctx);
/* TCSPARSE_SELECT=model: the model alone decides; nothing is measured on the executions. */
int tc_select_model_only(void);
/* Whether the stream is being captured (or cannot be asked): nothing is queried, created or
 * recorded for such a stream, since a query of an event inside a global-mode capture
 * invalidates the caller's graph. */
int tc_stream_capturing(cudaStream_t s);
/* x is measuring another kind than k: 1 while that kind may still come back (this call is
 * left alone; the call is counted), 0 once it has been idle for TC_EXPLORE_IDLE_CALLS calls
 * of other kinds (a one-off N must not hold the plan's measurement for ever), or when x is
 * idle or measuring k. */
int tc_explore_wait_other(tc_explore *x, const tc_call_kind *k);
/* Gives up x's measurement: its pending pairs are free again. */
void tc_explore_abandon(tc_explore *x);
/* Samples of x in flight (pairs recorded and not yet read back). */
int tc_explore_pending(const tc_explore *x);
/* A free event pair of x, created when none is (-1: none to be had). */
int tc_explore_free_pair(tc_explore *x);
/* Reads back the samples of x whose second event has completed (no synchronisation):
 * done[], best_ms[] and dropped[] by candidate index; their pairs are free again. */
void tc_explore_harvest(tc_explore *x);
/* TCSPARSE_X_EXPLORE_FACTOR or TC_SEL_EXPLORE_FACTOR. */
double tc_explore_factor(void);

/* The reason text of a model decision. */
void tc_reason_format(const tc_reason_args *ra, char *out, size_t n);

/* The handle's route, overridden by TCSPARSE_ROUTE when that is set. */
tcsparseRoute_t tc_route_effective(tcsparseHandle_t h);
/* Stores d as the handle's last route (tcsparseGetLastRoute) and logs it when TCSPARSE_LOG
 * is set. */
void tc_route_record(tcsparseHandle_t h, const tc_decision *d);
/* The kernels' alpha/beta (FP32 compute): device pointers in device pointer mode (never read
 * on the host), values otherwise. */
void tc_route_scalars(tcsparseHandle_t h, const void *alpha, const void *beta,
                      const float **alpha_dev, const float **beta_dev, float *alpha_host,
                      float *beta_host);
/* TC_T_* of a cudaDataType the tensor-core kernels take (kernels/common/kernels.h), -1 otherwise. */
int tc_route_ab_type(cudaDataType t);

tcsparseStatus_t tc_route_spmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstSpMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseDnMatDescr_t C, cudaDataType ct,
                                           tcsparseSpMMAlg_t alg, size_t *size);
tcsparseStatus_t tc_route_spmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstSpMatDescr_t A,
                                          tcsparseConstDnMatDescr_t B, const void *beta,
                                          tcsparseDnMatDescr_t C, cudaDataType ct,
                                          tcsparseSpMMAlg_t alg, void *buffer);
tcsparseStatus_t tc_route_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                               const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                               tcsparseSpMMAlg_t alg, void *buffer);
tcsparseStatus_t tc_route_sddmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                            tcsparseOperation_t opB, const void *alpha,
                                            tcsparseConstDnMatDescr_t A,
                                            tcsparseConstDnMatDescr_t B, const void *beta,
                                            tcsparseSpMatDescr_t C, cudaDataType ct,
                                            tcsparseSDDMMAlg_t alg, size_t *size);
tcsparseStatus_t tc_route_sddmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstDnMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseSpMatDescr_t C, cudaDataType ct,
                                           tcsparseSDDMMAlg_t alg, void *buffer);
tcsparseStatus_t tc_route_sddmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                tcsparseOperation_t opB, const void *alpha,
                                tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                const void *beta, tcsparseSpMatDescr_t C, cudaDataType ct,
                                tcsparseSDDMMAlg_t alg, void *buffer);

#endif
