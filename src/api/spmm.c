/* SpMM: C = alpha·op(A)·op(B) + beta·C, A sparse (CSR, CSC, COO), B and C dense.  The three
 * public functions share one argument check, done before anything touches the GPU, then
 * hand over to the route table. */
#include "error.h"
#include "product_check.h"
#include "plan.h"
#include "route.h"

/* Value types (A and B alike), C's type and the compute type: the combinations cuSPARSE
 * documents for cusparseSpMM. */
static int tc_spmm_types_ok(cudaDataType ab, cudaDataType c, cudaDataType ct)
{
    if (ab == c && c == ct)
        return ab == CUDA_R_32F || ab == CUDA_R_64F || ab == CUDA_C_32F || ab == CUDA_C_64F;
    if (ab == CUDA_R_8I)
        return (c == CUDA_R_32I && ct == CUDA_R_32I) || (c == CUDA_R_32F && ct == CUDA_R_32F);
    if (ab == CUDA_R_16F || ab == CUDA_R_16BF)
        return ct == CUDA_R_32F && (c == ab || c == CUDA_R_32F);
    return 0;
}

/* The algorithm is a known one and fits the format, as cuSPARSE checks it: COO_ALGn need
 * COO, CSR_ALG1/2 take CSR or CSC, CSR_ALG3 only CSR; tcsparse has no Blocked-ELL or BSR. */
static tcsparseStatus_t tc_spmm_alg_format(const char *fn, tcsparseSpMMAlg_t alg,
                                           tcsparseFormat_t f, tcsparseOperation_t opA,
                                           tcsparseOperation_t opB)
{
    int ok;
    switch (alg) {
    case TCSPARSE_SPMM_ALG_DEFAULT: ok = 1; break;
    case TCSPARSE_SPMM_COO_ALG1:
    case TCSPARSE_SPMM_COO_ALG2:
    case TCSPARSE_SPMM_COO_ALG3:
    case TCSPARSE_SPMM_COO_ALG4: ok = f == TCSPARSE_FORMAT_COO; break;
    case TCSPARSE_SPMM_CSR_ALG1:
    case TCSPARSE_SPMM_CSR_ALG2: ok = f == TCSPARSE_FORMAT_CSR || f == TCSPARSE_FORMAT_CSC; break;
    case TCSPARSE_SPMM_CSR_ALG3: ok = f == TCSPARSE_FORMAT_CSR; break;
    case TCSPARSE_SPMM_BLOCKED_ELL_ALG1:
    case TCSPARSE_SPMM_BSR_ALG1: ok = 0; break;
    default:
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: alg %d is not a tcsparseSpMMAlg_t", fn, (int)alg);
    }
    if (!ok)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: alg %d does not apply to matA's format", fn, (int)alg);
    if (alg == TCSPARSE_SPMM_CSR_ALG3 && (opA != TCSPARSE_OPERATION_NON_TRANSPOSE ||
                                          opB == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE))
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: CSR_ALG3 needs opA non-transposed and opB not conjugated", fn);
    return TCSPARSE_STATUS_SUCCESS;
}

/* Arrays that an execution reads or writes must exist (creation accepts NULL, as cuSPARSE);
 * an empty matrix needs none, as in cuSPARSE. */
static int tc_spmat_arrays_ok(const struct tcsparseSpMatDescr *d)
{
    return d->nnz == 0 || (d->offsets != NULL && d->indices != NULL && d->values != NULL);
}

static tcsparseStatus_t tc_spmm_check(const char *fn, tcsparseHandle_t h, tcsparseOperation_t opA,
                                      tcsparseOperation_t opB, const void *alpha,
                                      tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                      const void *beta, tcsparseConstDnMatDescr_t C,
                                      cudaDataType ct, tcsparseSpMMAlg_t alg, int touches_data)
{
    const tcsparseStatus_t bad = TCSPARSE_STATUS_INVALID_VALUE;
    if (!tc_handle_ok(h))
        return tc_error_set(bad, "%s: handle is NULL or not a live tcsparse handle", fn);
    if (!tc_spmat_ok(A))
        return tc_error_set(bad, "%s: matA is NULL or not a live sparse descriptor", fn);
    if (!tc_dnmat_ok(B))
        return tc_error_set(bad, "%s: matB is NULL or not a live dense descriptor", fn);
    if (!tc_dnmat_ok(C))
        return tc_error_set(bad, "%s: matC is NULL or not a live dense descriptor", fn);
    if (alpha == NULL || beta == NULL)
        return tc_error_set(bad, "%s: %s is NULL", fn, alpha == NULL ? "alpha" : "beta");
    if (!tc_op_ok(opA) || !tc_op_ok(opB))
        return tc_error_set(bad, "%s: %s %d is not a tcsparseOperation_t", fn,
                            tc_op_ok(opA) ? "opB" : "opA", tc_op_ok(opA) ? (int)opB : (int)opA);
    if ((opA == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE && !tc_is_complex(A->value_type)) ||
        (opB == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE && !tc_is_complex(B->value_type)))
        return tc_error_set(bad, "%s: conjugate transpose needs a complex matrix", fn);
    tcsparseStatus_t st = tc_spmm_alg_format(fn, alg, A->format, opA, opB);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;

    st = tc_product_check(fn, opA, opB, A->rows, A->cols, B->rows, B->cols, C->rows, C->cols,
                          A->value_type, B->value_type, C->value_type, ct, tc_spmm_types_ok,
                          A->batch_count, B->batch_count, C->batch_count);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;

    if (touches_data) {
        if (!tc_spmat_arrays_ok(A))
            return tc_error_set(bad, "%s: an array of matA is NULL", fn);
        if (!tc_dnmat_array_ok(B) || !tc_dnmat_array_ok(C))
            return tc_error_set(bad, "%s: the values of %s are NULL", fn,
                                tc_dnmat_array_ok(B) ? "matC" : "matB");
    }
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMM_bufferSize(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                         tcsparseOperation_t opB, const void *alpha,
                                         tcsparseConstSpMatDescr_t matA,
                                         tcsparseConstDnMatDescr_t matB, const void *beta,
                                         tcsparseDnMatDescr_t matC, cudaDataType computeType,
                                         tcsparseSpMMAlg_t alg, size_t *bufferSize)
{
    static const char fn[] = "tcsparseSpMM_bufferSize";
    tc_error_clear();
    tcsparseStatus_t st = tc_spmm_check(fn, handle, opA, opB, alpha, matA, matB, beta, matC,
                                        computeType, alg, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (bufferSize == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: bufferSize is NULL", fn);
    size_t size = 0;
    tc_spmat_lock(matA); /* shared descriptors: see plan.h */
    st = tc_route_spmm_buffer_size(handle, opA, opB, alpha, matA, matB, beta, matC, computeType,
                                   alg, &size);
    tc_spmat_unlock(matA);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *bufferSize = size;
    return st;
}

/* externalBuffer may be NULL when the buffer size was 0; cuSPARSE judges the rest. */
tcsparseStatus_t tcsparseSpMM_preprocess(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                         tcsparseOperation_t opB, const void *alpha,
                                         tcsparseConstSpMatDescr_t matA,
                                         tcsparseConstDnMatDescr_t matB, const void *beta,
                                         tcsparseDnMatDescr_t matC, cudaDataType computeType,
                                         tcsparseSpMMAlg_t alg, void *externalBuffer)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmm_check("tcsparseSpMM_preprocess", handle, opA, opB, alpha, matA,
                                        matB, beta, matC, computeType, alg, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_spmat_lock(matA); /* shared descriptors: see plan.h */
    /* a short buffer is refused on the cuSPARSE side (fallback.c) */
    st = tc_route_spmm_preprocess(handle, opA, opB, alpha, matA, matB, beta, matC, computeType,
                                  alg, externalBuffer);
    tc_spmat_unlock(matA);
    return st;
}

tcsparseStatus_t tcsparseSpMM(tcsparseHandle_t handle, tcsparseOperation_t opA,
                              tcsparseOperation_t opB, const void *alpha,
                              tcsparseConstSpMatDescr_t matA, tcsparseConstDnMatDescr_t matB,
                              const void *beta, tcsparseDnMatDescr_t matC,
                              cudaDataType computeType, tcsparseSpMMAlg_t alg,
                              void *externalBuffer)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmm_check("tcsparseSpMM", handle, opA, opB, alpha, matA, matB,
                                        beta, matC, computeType, alg, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_spmat_lock(matA); /* shared descriptors: see plan.h */
    /* the buffer is checked on the cuSPARSE path only (fallback.c): the tensor cores need
     * none, and the check costs a _bufferSize query */
    st = tc_route_spmm(handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg,
                       externalBuffer);
    tc_spmat_unlock(matA);
    return st;
}
