/* SDDMM: C = alpha·(op(A)·op(B)) ∘ spy(C) + beta·C, A and B dense, C sparse (CSR).  The three
 * public functions share one argument check, done before anything touches the GPU, then
 * hand over to the route table. */
#include "error.h"
#include "product_check.h"
#include "plan.h"
#include "route.h"

/* A and B's type, C's type and the compute type: the combinations cuSPARSE documents for
 * cusparseSDDMM (BF16 is not among them, unlike SpMM). */
static int tc_sddmm_types_ok(cudaDataType ab, cudaDataType c, cudaDataType ct)
{
    if (ab == c && c == ct)
        return ab == CUDA_R_32F || ab == CUDA_R_64F || ab == CUDA_C_32F || ab == CUDA_C_64F;
    if (ab == CUDA_R_16F)
        return ct == CUDA_R_32F && (c == ab || c == CUDA_R_32F);
    return 0;
}

static tcsparseStatus_t tc_sddmm_check(const char *fn, tcsparseHandle_t h,
                                       tcsparseOperation_t opA, tcsparseOperation_t opB,
                                       const void *alpha, tcsparseConstDnMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, const void *beta,
                                       tcsparseConstSpMatDescr_t C, cudaDataType ct,
                                       tcsparseSDDMMAlg_t alg, int touches_data)
{
    const tcsparseStatus_t bad = TCSPARSE_STATUS_INVALID_VALUE;
    if (!tc_handle_ok(h))
        return tc_error_set(bad, "%s: handle is NULL or not a live tcsparse handle", fn);
    if (!tc_dnmat_ok(A))
        return tc_error_set(bad, "%s: matA is NULL or not a live dense descriptor", fn);
    if (!tc_dnmat_ok(B))
        return tc_error_set(bad, "%s: matB is NULL or not a live dense descriptor", fn);
    if (!tc_spmat_ok(C))
        return tc_error_set(bad, "%s: matC is NULL or not a live sparse descriptor", fn);
    if (alpha == NULL || beta == NULL)
        return tc_error_set(bad, "%s: %s is NULL", fn, alpha == NULL ? "alpha" : "beta");
    if (!tc_op_ok(opA) || !tc_op_ok(opB))
        return tc_error_set(bad, "%s: %s %d is not a tcsparseOperation_t", fn,
                            tc_op_ok(opA) ? "opB" : "opA", tc_op_ok(opA) ? (int)opB : (int)opA);
    if (alg != TCSPARSE_SDDMM_ALG_DEFAULT)
        return tc_error_set(bad, "%s: alg %d is not a tcsparseSDDMMAlg_t", fn, (int)alg);
    if ((opA == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE && !tc_is_complex(A->value_type)) ||
        (opB == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE && !tc_is_complex(B->value_type)))
        return tc_error_set(bad, "%s: conjugate transpose needs a complex matrix", fn);
    if (C->format != TCSPARSE_FORMAT_CSR)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: matC must be CSR (cuSPARSE's SDDMM takes CSR or BSR)", fn);

    tcsparseStatus_t st = tc_product_check(fn, opA, opB, A->rows, A->cols, B->rows, B->cols,
                                           C->rows, C->cols, A->value_type, B->value_type,
                                           C->value_type, ct, tc_sddmm_types_ok, A->batch_count,
                                           B->batch_count, C->batch_count);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;

    if (touches_data) {
        if (!tc_dnmat_array_ok(A) || !tc_dnmat_array_ok(B))
            return tc_error_set(bad, "%s: the values of %s are NULL", fn,
                                tc_dnmat_array_ok(A) ? "matB" : "matA");
        if (C->nnz > 0 && (C->offsets == NULL || C->indices == NULL || C->values == NULL))
            return tc_error_set(bad, "%s: an array of matC is NULL", fn);
    }
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSDDMM_bufferSize(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstDnMatDescr_t matA,
                                          tcsparseConstDnMatDescr_t matB, const void *beta,
                                          tcsparseSpMatDescr_t matC, cudaDataType computeType,
                                          tcsparseSDDMMAlg_t alg, size_t *bufferSize)
{
    static const char fn[] = "tcsparseSDDMM_bufferSize";
    tc_error_clear();
    tcsparseStatus_t st = tc_sddmm_check(fn, handle, opA, opB, alpha, matA, matB, beta, matC,
                                         computeType, alg, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (bufferSize == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: bufferSize is NULL", fn);
    size_t size = 0;
    tc_spmat_lock(matC); /* shared descriptors: see plan.h */
    st = tc_route_sddmm_buffer_size(handle, opA, opB, alpha, matA, matB, beta, matC, computeType,
                                    alg, &size);
    tc_spmat_unlock(matC);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *bufferSize = size;
    return st;
}

/* externalBuffer may be NULL when the buffer size was 0; cuSPARSE judges the rest. */
tcsparseStatus_t tcsparseSDDMM_preprocess(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstDnMatDescr_t matA,
                                          tcsparseConstDnMatDescr_t matB, const void *beta,
                                          tcsparseSpMatDescr_t matC, cudaDataType computeType,
                                          tcsparseSDDMMAlg_t alg, void *externalBuffer)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_sddmm_check("tcsparseSDDMM_preprocess", handle, opA, opB, alpha,
                                         matA, matB, beta, matC, computeType, alg, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_spmat_lock(matC); /* shared descriptors: see plan.h */
    /* a short buffer is refused on the cuSPARSE side (fallback.c) */
    st = tc_route_sddmm_preprocess(handle, opA, opB, alpha, matA, matB, beta, matC, computeType,
                                   alg, externalBuffer);
    tc_spmat_unlock(matC);
    return st;
}

tcsparseStatus_t tcsparseSDDMM(tcsparseHandle_t handle, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstDnMatDescr_t matA, tcsparseConstDnMatDescr_t matB,
                               const void *beta, tcsparseSpMatDescr_t matC,
                               cudaDataType computeType, tcsparseSDDMMAlg_t alg,
                               void *externalBuffer)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_sddmm_check("tcsparseSDDMM", handle, opA, opB, alpha, matA, matB,
                                         beta, matC, computeType, alg, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_spmat_lock(matC); /* shared descriptors: see plan.h */
    /* the buffer is checked on the cuSPARSE path only (fallback.c) */
    st = tc_route_sddmm(handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg,
                        externalBuffer);
    tc_spmat_unlock(matC);
    return st;
}
