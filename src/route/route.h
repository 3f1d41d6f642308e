/* The route: after the public wrappers have validated their arguments, the decision between
 * the rows of the route table (table.h: the tensor-core kernels, cuSPARSE) before anything is
 * launched, and its record in the handle (tcsparseGetLastRoute, TCSPARSE_LOG=1).  route.c
 * decides and records; route_spmm.c and route_sddmm.c are each operation's entry points and
 * execution; measure.h is the measurement on the executions that may correct the model. */
#ifndef TC_ROUTE_H
#define TC_ROUTE_H

#include "internal.h"
#include "plan.h"
#include "table.h"

/* A routing decision: path, kernel name and a one-line reason. */
typedef struct {
    tcsparsePath_t path;
    char kernel[64];
    char reason[160];
    tc_reason_args ra;
    int alg3; /* SpMM on the cuSPARSE path: run as CSR_ALG3 (fallback.c) */
    /* decided by the model under the automatic route: the candidates of a measurement on the
     * executions (select.h, TC_SEL_CAND_*, the model's choice first; ncand 0: none) */
    int ncand;
    int cand[TC_NCAND];
    double pred[TC_NCAND];
    /* this execution is part of a measurement (the route's or the kernel tuning's) or waits
     * for one: its kind of call has not settled (late.c waits for a settled call) */
    int measuring;
    /* ... of the route's measurement of its candidate paths (not the tuning of the path it
     * chose): the call may run any candidate */
    int exploring;
} tc_decision;

/* Whether a path runs on the matrix's tensor-core plan (the CUDA-core kernel and cuSPARSE
 * read the caller's arrays). */
static inline int tc_path_on_plan(tcsparsePath_t p)
{
    return p == TCSPARSE_PATH_TC_BASE || p == TCSPARSE_PATH_TC_BALANCED;
}

/* d takes row r: its path and, for a cuSPARSE row, its kernel name and algorithm (alg3).  A
 * tensor-core row keeps d's kernel name, which its launcher replaces when it runs. */
void tc_decision_take(tc_decision *d, const tc_route_row *r);
/* The decision for call c, its kind k, on the sparse operand sp (whose plan *plan receives,
 * NULL where none is used): the route forced to cuSPARSE; the tensor-core rows refused (the
 * reason says why) or no plan; the plan's measured decision for k (automatic route); the route
 * forced to a tensor-core row; else the selector's choice among the eligible rows, with the
 * candidates of a measurement on the executions (automatic route).  c's device capability is
 * refreshed once the handle's cuSPARSE handle exists.  Returns an error only where the call
 * cannot run at all (no CUDA device, invalid sparse structure). */
tcsparseStatus_t tc_route_decide(tcsparseHandle_t h, tc_route_call *c,
                                 const struct tcsparseSpMatDescr *sp, const tc_call_kind *k,
                                 tc_decision *d, struct tc_plan **plan);
/* d goes to op's cuSPARSE row after a CUDA-core row refused the call with nothing launched:
 * the reason says cuSPARSE and quotes the refusal (the last error, which is cleared). */
void tc_decision_to_cusparse(tc_decision *d, int op);
/* The CUDA-core schedule of sp's plan at _preprocess, where executions may run a CUDA-core row
 * (d's path, or a candidate of its measurement) on sp's CSR arrays as they are, so that the
 * first execution does not build it (and a captured one can run it).  An optimisation only:
 * the execution builds it otherwise; any failure is cleared. */
void tc_route_csr_prepare(tcsparseHandle_t h, const tc_decision *d,
                          const struct tcsparseSpMatDescr *sp, struct tc_plan *plan);
/* Whether the cuSPARSE route may run call c as CSR_ALG3: the operation has that row, it takes
 * c, and TCSPARSE_X_CUSPARSE_ALG3 is not 0. */
int tc_route_alg3_ok(const tc_route_call *c);
/* TCSPARSE_SELECT=model: the model alone decides; nothing is measured on the executions. */
int tc_select_model_only(void);
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
