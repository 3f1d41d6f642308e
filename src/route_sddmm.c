/* The SDDMM rows of the route table (tensor-core SDDMM: not written yet, so cuSPARSE). */
#include <stdio.h>
#include "error.h"
#include "fallback.h"
#include "route.h"

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
