#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "fallback.h"
#include "route.h"

static void tc_route_record(tcsparseHandle_t h, tcsparsePath_t path, const char *kernel,
                            const char *reason)
{
    tcsparseRouteInfo_t *r = &h->last_route;
    r->path = path;
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    snprintf(r->reason, sizeof r->reason, "%s", reason);
    r->predicted_tc_us = -1.0;
    r->predicted_cusparse_us = -1.0;
    const char *log = getenv("TCSPARSE_LOG");
    if (log != NULL && strcmp(log, "0") != 0 && log[0] != '\0')
        fprintf(stderr, "tcsparse: %s (%s)\n", r->kernel, r->reason);
}

tcsparseStatus_t tc_route_spmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB, const void *alpha,
                                           tcsparseConstSpMatDescr_t A,
                                           tcsparseConstDnMatDescr_t B, const void *beta,
                                           tcsparseDnMatDescr_t C, cudaDataType ct,
                                           tcsparseSpMMAlg_t alg, size_t *size)
{
    return tc_fallback_spmm_buffer_size(h, opA, opB, alpha, A, B, beta, C, ct, alg, size);
}

tcsparseStatus_t tc_route_spmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstSpMatDescr_t A,
                                          tcsparseConstDnMatDescr_t B, const void *beta,
                                          tcsparseDnMatDescr_t C, cudaDataType ct,
                                          tcsparseSpMMAlg_t alg, void *buffer)
{
    return tc_fallback_spmm_preprocess(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
}

tcsparseStatus_t tc_route_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                               const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                               tcsparseSpMMAlg_t alg, void *buffer)
{
    tc_route_record(h, TCSPARSE_PATH_CUSPARSE, "cusparseSpMM", "no tensor-core kernel built");
    return tc_fallback_spmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
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
    tc_route_record(h, TCSPARSE_PATH_CUSPARSE, "cusparseSDDMM", "no tensor-core kernel built");
    return tc_fallback_sddmm(h, opA, opB, alpha, A, B, beta, C, ct, alg, buffer);
}
