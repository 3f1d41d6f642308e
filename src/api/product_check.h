/* The argument checks SpMM and SDDMM share (spmm.c, sddmm.c): operations, the shapes of
 * op(A)·op(B) against C, the operand types and the batch counts.  Each wrapper keeps its own
 * order of checks; these are the pieces that are the same rule for both. */
#ifndef TC_PRODUCT_CHECK_H
#define TC_PRODUCT_CHECK_H

#include "internal.h"

int tc_op_ok(tcsparseOperation_t op);
int tc_is_complex(cudaDataType t);
/* A dense operand's values exist, or it is empty (as cuSPARSE accepts). */
int tc_dnmat_array_ok(const struct tcsparseDnMatDescr *d);
/* op(A) is ar x ac (before op), op(B) br x bc, C cr x cc; the inner dimensions must agree and
 * C must be op(A)·op(B)'s shape.  A and B must have one value type, (A/B, C, compute) must pass
 * types_ok, and the batch counts must be equal (cuSPARSE's rule; a shared operand has a batch
 * stride of 0).  Returns the status with the error message set, or success. */
tcsparseStatus_t tc_product_check(const char *fn, tcsparseOperation_t opA,
                                  tcsparseOperation_t opB, int64_t ar, int64_t ac, int64_t br,
                                  int64_t bc, int64_t cr, int64_t cc, cudaDataType a_type,
                                  cudaDataType b_type, cudaDataType c_type, cudaDataType ct,
                                  int (*types_ok)(cudaDataType, cudaDataType, cudaDataType),
                                  int a_batch, int b_batch, int c_batch);

#endif
