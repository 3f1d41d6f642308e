/* Dense matrix descriptors.  Rules follow cuSPARSE 12's own checks: sizes >= 0,
 * ld >= rows (column-major) or ld >= cols (row-major), known order and value type, values
 * aligned to the element size.  A NULL values pointer is accepted here, as in cuSPARSE, and
 * refused by the operations that would read or write it.  As with sparse descriptors, a
 * const-created descriptor may be passed (after a cast) to the non-const functions. */
#include <stdlib.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"

static tcsparseStatus_t tc_dnmat_create(const char *fn, int is_const,
                                        struct tcsparseDnMatDescr **out, int64_t rows,
                                        int64_t cols, int64_t ld, const void *values,
                                        cudaDataType vt, tcsparseOrder_t order)
{
    if (out == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: dnMatDescr is NULL", fn);
    if (rows < 0 || cols < 0 || ld < 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: negative size (rows %lld, cols %lld, ld %lld)", fn,
                            (long long)rows, (long long)cols, (long long)ld);
    if (order != TCSPARSE_ORDER_COL && order != TCSPARSE_ORDER_ROW)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: order %d is not a tcsparseOrder_t",
                            fn, (int)order);
    int64_t lead = order == TCSPARSE_ORDER_COL ? rows : cols;
    int64_t other = order == TCSPARSE_ORDER_COL ? cols : rows;
    if (ld < lead)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: ld (%lld) < %s (%lld) with %s order",
                            fn, (long long)ld, order == TCSPARSE_ORDER_COL ? "rows" : "cols",
                            (long long)lead, order == TCSPARSE_ORDER_COL ? "column" : "row");
    /* Element offsets are formed as ld * index in 64 bits. */
    if (other > 0 && ld > INT64_MAX / other)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: ld (%lld) x %lld overflows", fn,
                            (long long)ld, (long long)other);
    size_t esz = tc_dtype_size(vt);
    if (esz == 0)
        return tc_error_set(vt == CUDA_C_16F || vt == CUDA_C_16BF ? TCSPARSE_STATUS_NOT_SUPPORTED
                                                                  : TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: valueType %s (%d) is not supported", fn, tc_dtype_name(vt),
                            (int)vt);
    if ((uintptr_t)values % esz != 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: values is not aligned to %s", fn,
                            tc_dtype_name(vt));
    struct tcsparseDnMatDescr *d = calloc(1, sizeof *d);
    if (d == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "%s: out of host memory", fn);
    d->magic = TC_MAGIC_DNMAT;
    d->is_const = is_const;
    d->rows = rows;
    d->cols = cols;
    d->ld = ld;
    d->values = (void *)(uintptr_t)values;
    d->value_type = vt;
    d->order = order;
    d->batch_count = 1;
    d->batch_stride = 0;
    *out = d;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseCreateDnMat(tcsparseDnMatDescr_t *dnMatDescr, int64_t rows, int64_t cols,
                                     int64_t ld, void *values, cudaDataType valueType,
                                     tcsparseOrder_t order)
{
    tc_error_clear();
    return tc_dnmat_create("tcsparseCreateDnMat", 0, dnMatDescr, rows, cols, ld, values,
                           valueType, order);
}

tcsparseStatus_t tcsparseCreateConstDnMat(tcsparseConstDnMatDescr_t *dnMatDescr, int64_t rows,
                                          int64_t cols, int64_t ld, const void *values,
                                          cudaDataType valueType, tcsparseOrder_t order)
{
    tc_error_clear();
    return tc_dnmat_create("tcsparseCreateConstDnMat", 1, (struct tcsparseDnMatDescr **)dnMatDescr,
                           rows, cols, ld, values, valueType, order);
}

tcsparseStatus_t tcsparseDestroyDnMat(tcsparseConstDnMatDescr_t dnMatDescr)
{
    tc_error_clear();
    /* NULL is a no-op, as in cuSPARSE. */
    if (dnMatDescr == NULL)
        return TCSPARSE_STATUS_SUCCESS;
    if (!tc_dnmat_ok(dnMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseDestroyDnMat: dnMatDescr is not a live dense descriptor");
    struct tcsparseDnMatDescr *d = (struct tcsparseDnMatDescr *)dnMatDescr;
    tc_dnmat_cusparse_release(d);
    d->magic = TC_MAGIC_DEAD;
    tc_retire(d); /* kept a while, so that a use after destroy reads the wiped magic */
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_dnmat_check(const char *fn, const struct tcsparseDnMatDescr *d)
{
    if (!tc_dnmat_ok(d))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: dnMatDescr is NULL or not a live dense descriptor", fn);
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_dnmat_get(const char *fn, const struct tcsparseDnMatDescr *d,
                                     int64_t *rows, int64_t *cols, int64_t *ld, void **values,
                                     cudaDataType *type, tcsparseOrder_t *order)
{
    tcsparseStatus_t st = tc_dnmat_check(fn, d);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (rows == NULL || cols == NULL || ld == NULL || values == NULL || type == NULL ||
        order == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: an output pointer is NULL", fn);
    *rows = d->rows;
    *cols = d->cols;
    *ld = d->ld;
    *values = d->values;
    *type = d->value_type;
    *order = d->order;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseDnMatGet(tcsparseDnMatDescr_t dnMatDescr, int64_t *rows, int64_t *cols,
                                  int64_t *ld, void **values, cudaDataType *type,
                                  tcsparseOrder_t *order)
{
    tc_error_clear();
    return tc_dnmat_get("tcsparseDnMatGet", dnMatDescr, rows, cols, ld, values, type, order);
}

tcsparseStatus_t tcsparseConstDnMatGet(tcsparseConstDnMatDescr_t dnMatDescr, int64_t *rows,
                                       int64_t *cols, int64_t *ld, const void **values,
                                       cudaDataType *type, tcsparseOrder_t *order)
{
    tc_error_clear();
    void *v;
    tcsparseStatus_t st = tc_dnmat_get("tcsparseConstDnMatGet", dnMatDescr, rows, cols, ld,
                                       values ? &v : NULL, type, order);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *values = v;
    return st;
}

tcsparseStatus_t tcsparseDnMatGetValues(tcsparseDnMatDescr_t dnMatDescr, void **values)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_dnmat_check("tcsparseDnMatGetValues", dnMatDescr);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (values == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseDnMatGetValues: values is NULL");
    *values = dnMatDescr->values;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseConstDnMatGetValues(tcsparseConstDnMatDescr_t dnMatDescr,
                                             const void **values)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_dnmat_check("tcsparseConstDnMatGetValues", dnMatDescr);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (values == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseConstDnMatGetValues: values is NULL");
    *values = dnMatDescr->values;
    return TCSPARSE_STATUS_SUCCESS;
}

/* The cuSPARSE mirror picks the new pointer up when it is next used (fallback.c). */
tcsparseStatus_t tcsparseDnMatSetValues(tcsparseDnMatDescr_t dnMatDescr, void *values)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_dnmat_check("tcsparseDnMatSetValues", dnMatDescr);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if ((uintptr_t)values % tc_dtype_size(dnMatDescr->value_type) != 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseDnMatSetValues: values is not aligned to %s",
                            tc_dtype_name(dnMatDescr->value_type));
    dnMatDescr->values = values;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseDnMatSetStridedBatch(tcsparseDnMatDescr_t dnMatDescr, int batchCount,
                                              int64_t batchStride)
{
    static const char fn[] = "tcsparseDnMatSetStridedBatch";
    tc_error_clear();
    tcsparseStatus_t st = tc_dnmat_check(fn, dnMatDescr);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (batchCount < 1)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: batchCount (%d) must be >= 1",
                            fn, batchCount);
    const struct tcsparseDnMatDescr *d = dnMatDescr;
    int64_t size = d->ld * (d->order == TCSPARSE_ORDER_COL ? d->cols : d->rows);
    /* Stride 0 shares one matrix across the batch, as in cuSPARSE. */
    if (batchStride < 0 || (batchStride != 0 && batchStride < size))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: batchStride (%lld) must be 0 or >= ld x %s (%lld)", fn,
                            (long long)batchStride,
                            d->order == TCSPARSE_ORDER_COL ? "cols" : "rows", (long long)size);
    /* The mirror is rebuilt on next use with the new batch. */
    tc_dnmat_cusparse_release(dnMatDescr);
    dnMatDescr->batch_count = batchCount;
    dnMatDescr->batch_stride = batchStride;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseDnMatGetStridedBatch(tcsparseConstDnMatDescr_t dnMatDescr,
                                              int *batchCount, int64_t *batchStride)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_dnmat_check("tcsparseDnMatGetStridedBatch", dnMatDescr);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (batchCount == NULL || batchStride == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseDnMatGetStridedBatch: an output pointer is NULL");
    *batchCount = dnMatDescr->batch_count;
    *batchStride = dnMatDescr->batch_stride;
    return TCSPARSE_STATUS_SUCCESS;
}
