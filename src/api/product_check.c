/* The argument checks SpMM and SDDMM share (product_check.h). */
#include "error.h"
#include "product_check.h"

int tc_op_ok(tcsparseOperation_t op)
{
    return op == TCSPARSE_OPERATION_NON_TRANSPOSE || op == TCSPARSE_OPERATION_TRANSPOSE ||
           op == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
}

int tc_is_complex(cudaDataType t)
{
    return t == CUDA_C_32F || t == CUDA_C_64F;
}

int tc_dnmat_array_ok(const struct tcsparseDnMatDescr *d)
{
    return d->values != NULL || d->rows == 0 || d->cols == 0;
}

tcsparseStatus_t tc_product_check(const char *fn, tcsparseOperation_t opA,
                                  tcsparseOperation_t opB, int64_t ar, int64_t ac, int64_t br,
                                  int64_t bc, int64_t cr, int64_t cc, cudaDataType a_type,
                                  cudaDataType b_type, cudaDataType c_type, cudaDataType ct,
                                  int (*types_ok)(cudaDataType, cudaDataType, cudaDataType),
                                  int a_batch, int b_batch, int c_batch)
{
    const tcsparseStatus_t bad = TCSPARSE_STATUS_INVALID_VALUE;
    int64_t m = opA == TCSPARSE_OPERATION_NON_TRANSPOSE ? ar : ac;
    int64_t k = opA == TCSPARSE_OPERATION_NON_TRANSPOSE ? ac : ar;
    int64_t kb = opB == TCSPARSE_OPERATION_NON_TRANSPOSE ? br : bc;
    int64_t n = opB == TCSPARSE_OPERATION_NON_TRANSPOSE ? bc : br;
    if (k != kb)
        return tc_error_set(bad, "%s: op(A) is %lldx%lld but op(B) is %lldx%lld (inner dimensions "
                            "differ)", fn, (long long)m, (long long)k, (long long)kb,
                            (long long)n);
    if (cr != m || cc != n)
        return tc_error_set(bad, "%s: matC is %lldx%lld, op(A)·op(B) is %lldx%lld", fn,
                            (long long)cr, (long long)cc, (long long)m, (long long)n);

    if (a_type != b_type)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: matA is %s but matB is %s (they must have the same type)", fn,
                            tc_dtype_name(a_type), tc_dtype_name(b_type));
    if (!types_ok(a_type, c_type, ct))
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: A/B %s, C %s with computeType %s is not a supported combination",
                            fn, tc_dtype_name(a_type), tc_dtype_name(c_type),
                            tc_dtype_name(ct));

    if (a_batch != c_batch || b_batch != c_batch)
        return tc_error_set(bad, "%s: batch counts A %d, B %d, C %d do not match", fn, a_batch,
                            b_batch, c_batch);
    return TCSPARSE_STATUS_SUCCESS;
}
