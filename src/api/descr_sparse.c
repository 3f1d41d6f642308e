/* Sparse matrix descriptors (CSR, CSC, COO).  Creation rules follow cuSPARSE 12's own checks:
 * negative sizes, nnz > rows*cols, 32-bit indices too narrow for rows/cols/nnz (+ base),
 * mixed index widths, unknown enums and misaligned pointers are refused; NULL arrays are
 * accepted at creation and by the setters (the "create now, set pointers later" pattern) and
 * checked by the operations that read them.
 *
 * Const descriptors: cuSPARSE lets a descriptor created by a CreateConst* function be passed,
 * after a cast, to the non-const getters and setters, and so does tcsparse: a drop-in must not
 * refuse what cuSPARSE accepts.  is_const is kept for diagnostics only. */
#include <stdlib.h>
#include "error.h"
#include "fallback.h"
#include "plan.h"

static const char *tc_format_name(tcsparseFormat_t f)
{
    switch (f) {
    case TCSPARSE_FORMAT_CSR: return "CSR";
    case TCSPARSE_FORMAT_CSC: return "CSC";
    case TCSPARSE_FORMAT_COO: return "COO";
    default: return "unsupported format";
    }
}

static int tc_aligned(const void *p, size_t a)
{
    return a == 0 || (uintptr_t)p % a == 0;
}

static tcsparseStatus_t tc_check_index_type(const char *fn, const char *what,
                                            tcsparseIndexType_t t)
{
    if (t == TCSPARSE_INDEX_32I || t == TCSPARSE_INDEX_64I)
        return TCSPARSE_STATUS_SUCCESS;
    if (t == TCSPARSE_INDEX_16U)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: %s CUSPARSE_INDEX_16U is not supported (use 32I or 64I)", fn,
                            what);
    return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: %s %d is not a tcsparseIndexType_t",
                        fn, what, (int)t);
}

static tcsparseStatus_t tc_check_value_type(const char *fn, cudaDataType t)
{
    if (tc_dtype_size(t) != 0)
        return TCSPARSE_STATUS_SUCCESS;
    /* cuSPARSE still accepts the deprecated half complex types; tcsparse does not. */
    if (t == CUDA_C_16F || t == CUDA_C_16BF)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED, "%s: valueType %s is not supported",
                            fn, tc_dtype_name(t));
    return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: valueType %s (%d) is not accepted",
                        fn, tc_dtype_name(t), (int)t);
}

/* Pointer alignment to the element sizes of the descriptor's types (cuSPARSE requires it). */
static tcsparseStatus_t tc_check_alignment(const char *fn, const void *off, const void *idx,
                                           const void *val, tcsparseIndexType_t off_t,
                                           tcsparseIndexType_t idx_t, cudaDataType vt)
{
    if (!tc_aligned(off, tc_index_size(off_t)) || !tc_aligned(idx, tc_index_size(idx_t)))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: an index array is not aligned to its index type", fn);
    if (!tc_aligned(val, tc_dtype_size(vt)))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: the values array is not aligned to %s", fn, tc_dtype_name(vt));
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_spmat_create(const char *fn, tcsparseFormat_t fmt, int is_const,
                                        struct tcsparseSpMatDescr **out, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *off,
                                        const void *idx, const void *val,
                                        tcsparseIndexType_t off_t, tcsparseIndexType_t idx_t,
                                        tcsparseIndexBase_t base, cudaDataType vt)
{
    tcsparseStatus_t st;
    if (out == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: spMatDescr is NULL", fn);
    if (rows < 0 || cols < 0 || nnz < 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: negative size (rows %lld, cols %lld, nnz %lld)", fn,
                            (long long)rows, (long long)cols, (long long)nnz);
    /* nnz <= rows*cols without forming the product, which may overflow. */
    if (nnz > 0 && (rows == 0 || (nnz - 1) / rows >= cols))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: nnz (%lld) exceeds rows*cols (%lld x %lld)", fn,
                            (long long)nnz, (long long)rows, (long long)cols);
    if ((st = tc_check_index_type(fn, fmt == TCSPARSE_FORMAT_COO ? "cooIdxType" : "offsets type",
                                  off_t)) != TCSPARSE_STATUS_SUCCESS)
        return st;
    if ((st = tc_check_index_type(fn, "indices type", idx_t)) != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (off_t != idx_t)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: offsets and indices of different widths are not supported", fn);
    if (base != TCSPARSE_INDEX_BASE_ZERO && base != TCSPARSE_INDEX_BASE_ONE)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: idxBase %d is not a tcsparseIndexBase_t", fn, (int)base);
    if ((st = tc_check_value_type(fn, vt)) != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (idx_t == TCSPARSE_INDEX_32I) {
        int64_t lim = (int64_t)INT32_MAX - (int64_t)base;
        if (rows > lim || cols > lim || nnz > lim)
            return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                                "%s: rows, cols and nnz (+ base) must fit 32-bit indices "
                                "(rows %lld, cols %lld, nnz %lld)",
                                fn, (long long)rows, (long long)cols, (long long)nnz);
    }
    if ((st = tc_check_alignment(fn, off, idx, val, off_t, idx_t, vt)) != TCSPARSE_STATUS_SUCCESS)
        return st;

    struct tcsparseSpMatDescr *d = calloc(1, sizeof *d);
    if (d == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "%s: out of host memory", fn);
    if (pthread_mutex_init(&d->mu, NULL) != 0) {
        free(d);
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "%s: cannot create a mutex", fn);
    }
    d->magic = TC_MAGIC_SPMAT;
    static uint64_t tc_spmat_serial;
    d->serial = __atomic_add_fetch(&tc_spmat_serial, 1, __ATOMIC_RELAXED);
    d->is_const = is_const;
    d->format = fmt;
    d->rows = rows;
    d->cols = cols;
    d->nnz = nnz;
    /* The const qualifier comes back when the descriptor is read through a Const getter. */
    d->offsets = (void *)(uintptr_t)off;
    d->indices = (void *)(uintptr_t)idx;
    d->values = (void *)(uintptr_t)val;
    d->offsets_type = off_t;
    d->indices_type = idx_t;
    d->base = base;
    d->value_type = vt;
    d->batch_count = 1;
    *out = d;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseCreateCsr(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *csrRowOffsets, void *csrColInd,
                                   void *csrValues, tcsparseIndexType_t csrRowOffsetsType,
                                   tcsparseIndexType_t csrColIndType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateCsr", TCSPARSE_FORMAT_CSR, 0, spMatDescr, rows, cols,
                           nnz, csrRowOffsets, csrColInd, csrValues, csrRowOffsetsType,
                           csrColIndType, idxBase, valueType);
}

tcsparseStatus_t tcsparseCreateConstCsr(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *csrRowOffsets,
                                        const void *csrColInd, const void *csrValues,
                                        tcsparseIndexType_t csrRowOffsetsType,
                                        tcsparseIndexType_t csrColIndType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateConstCsr", TCSPARSE_FORMAT_CSR, 1,
                           (struct tcsparseSpMatDescr **)spMatDescr, rows, cols, nnz,
                           csrRowOffsets, csrColInd, csrValues, csrRowOffsetsType, csrColIndType,
                           idxBase, valueType);
}

tcsparseStatus_t tcsparseCreateCsc(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *cscColOffsets, void *cscRowInd,
                                   void *cscValues, tcsparseIndexType_t cscColOffsetsType,
                                   tcsparseIndexType_t cscRowIndType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateCsc", TCSPARSE_FORMAT_CSC, 0, spMatDescr, rows, cols,
                           nnz, cscColOffsets, cscRowInd, cscValues, cscColOffsetsType,
                           cscRowIndType, idxBase, valueType);
}

tcsparseStatus_t tcsparseCreateConstCsc(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *cscColOffsets,
                                        const void *cscRowInd, const void *cscValues,
                                        tcsparseIndexType_t cscColOffsetsType,
                                        tcsparseIndexType_t cscRowIndType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateConstCsc", TCSPARSE_FORMAT_CSC, 1,
                           (struct tcsparseSpMatDescr **)spMatDescr, rows, cols, nnz,
                           cscColOffsets, cscRowInd, cscValues, cscColOffsetsType, cscRowIndType,
                           idxBase, valueType);
}

tcsparseStatus_t tcsparseCreateCoo(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *cooRowInd, void *cooColInd, void *cooValues,
                                   tcsparseIndexType_t cooIdxType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateCoo", TCSPARSE_FORMAT_COO, 0, spMatDescr, rows, cols,
                           nnz, cooRowInd, cooColInd, cooValues, cooIdxType, cooIdxType, idxBase,
                           valueType);
}

tcsparseStatus_t tcsparseCreateConstCoo(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *cooRowInd,
                                        const void *cooColInd, const void *cooValues,
                                        tcsparseIndexType_t cooIdxType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType)
{
    tc_error_clear();
    return tc_spmat_create("tcsparseCreateConstCoo", TCSPARSE_FORMAT_COO, 1,
                           (struct tcsparseSpMatDescr **)spMatDescr, rows, cols, nnz, cooRowInd,
                           cooColInd, cooValues, cooIdxType, cooIdxType, idxBase, valueType);
}

/* A descriptor's device-side guard (src/api/hook.c arms it): its memory goes with it. */
void tc_guard_free(struct tcsparseSpMatDescr *d)
{
    struct tc_guard *g = d->guard;
    if (g == NULL)
        return;
    int cur = -1;
    const int switched = cudaGetDevice(&cur) == cudaSuccess && cur != g->device &&
                         cudaSetDevice(g->device) == cudaSuccess;
    /* each freed on its own; a context that has ended took them with it, and their
     * addresses may be another allocation's now: forgotten */
    const unsigned long long ctx = tc_context_id();
    if (g->context == 0 || ctx == 0 || ctx == g->context) {
        const int failed = (cudaFree(g->dev) != cudaSuccess) +
                           (cudaFreeHost((void *)g->tripped) != cudaSuccess) +
                           (cudaEventDestroy(g->done) != cudaSuccess);
        if (failed)
            (void)cudaGetLastError();
    }
    if (switched)
        (void)cudaSetDevice(cur);
    free(g);
    d->guard = NULL;
}

tcsparseStatus_t tcsparseDestroySpMat(tcsparseConstSpMatDescr_t spMatDescr)
{
    tc_error_clear();
    /* NULL is a no-op, as in cuSPARSE. */
    if (spMatDescr == NULL)
        return TCSPARSE_STATUS_SUCCESS;
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseDestroySpMat: spMatDescr is not a live sparse descriptor");
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    /* The lock waits for a plan eviction that holds it (plan.c); calls on d must be over. */
    pthread_mutex_lock(&d->mu);
    tc_plan_invalidate(d);
    tc_plan_transposed_free(d);
    tc_spmat_cusparse_release(d);
    tc_guard_free(d);
    d->magic = TC_MAGIC_DEAD;
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_destroy(&d->mu);
    tc_retire(d); /* kept a while, so that a use after destroy reads the wiped magic */
    return TCSPARSE_STATUS_SUCCESS;
}

/* Validity and, when fmt is not 0, format of a descriptor passed to a format-specific call. */
static tcsparseStatus_t tc_spmat_check(const char *fn, const struct tcsparseSpMatDescr *d,
                                       tcsparseFormat_t fmt)
{
    if (!tc_spmat_ok(d))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: spMatDescr is NULL or not a live sparse descriptor", fn);
    if (fmt != 0 && d->format != fmt)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: the descriptor is %s, not %s", fn, tc_format_name(d->format),
                            tc_format_name(fmt));
    return TCSPARSE_STATUS_SUCCESS;
}

/* The getters share one body; `offsets_type` is NULL for COO, which has a single index type. */
static tcsparseStatus_t tc_spmat_get(const char *fn, const struct tcsparseSpMatDescr *d,
                                     tcsparseFormat_t fmt, int64_t *rows, int64_t *cols,
                                     int64_t *nnz, void **off, void **idx, void **val,
                                     tcsparseIndexType_t *off_t,
                                     tcsparseIndexType_t *idx_t, tcsparseIndexBase_t *base,
                                     cudaDataType *vt)
{
    tcsparseStatus_t st = tc_spmat_check(fn, d, fmt);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (rows == NULL || cols == NULL || nnz == NULL || off == NULL || idx == NULL ||
        val == NULL || (fmt != TCSPARSE_FORMAT_COO && off_t == NULL) || idx_t == NULL ||
        base == NULL || vt == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: an output pointer is NULL", fn);
    *rows = d->rows;
    *cols = d->cols;
    *nnz = d->nnz;
    *off = d->offsets;
    *idx = d->indices;
    *val = d->values;
    if (off_t != NULL)
        *off_t = d->offsets_type;
    *idx_t = d->indices_type;
    *base = d->base;
    *vt = d->value_type;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseCsrGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **csrRowOffsets, void **csrColInd,
                                void **csrValues, tcsparseIndexType_t *csrRowOffsetsType,
                                tcsparseIndexType_t *csrColIndType, tcsparseIndexBase_t *idxBase,
                                cudaDataType *valueType)
{
    tc_error_clear();
    return tc_spmat_get("tcsparseCsrGet", spMatDescr, TCSPARSE_FORMAT_CSR, rows, cols, nnz,
                        csrRowOffsets, csrColInd, csrValues, csrRowOffsetsType, csrColIndType, idxBase,
                        valueType);
}

tcsparseStatus_t tcsparseConstCsrGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **csrRowOffsets,
                                     const void **csrColInd, const void **csrValues,
                                     tcsparseIndexType_t *csrRowOffsetsType,
                                     tcsparseIndexType_t *csrColIndType,
                                     tcsparseIndexBase_t *idxBase, cudaDataType *valueType)
{
    tc_error_clear();
    void *o, *i, *v;
    tcsparseStatus_t st = tc_spmat_get(
        "tcsparseConstCsrGet", spMatDescr, TCSPARSE_FORMAT_CSR, rows, cols, nnz,
        csrRowOffsets ? &o : NULL, csrColInd ? &i : NULL, csrValues ? &v : NULL,
        csrRowOffsetsType, csrColIndType, idxBase, valueType);
    if (st == TCSPARSE_STATUS_SUCCESS) {
        *csrRowOffsets = o;
        *csrColInd = i;
        *csrValues = v;
    }
    return st;
}

tcsparseStatus_t tcsparseCscGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **cscColOffsets, void **cscRowInd,
                                void **cscValues, tcsparseIndexType_t *cscColOffsetsType,
                                tcsparseIndexType_t *cscRowIndType, tcsparseIndexBase_t *idxBase,
                                cudaDataType *valueType)
{
    tc_error_clear();
    return tc_spmat_get("tcsparseCscGet", spMatDescr, TCSPARSE_FORMAT_CSC, rows, cols, nnz,
                        cscColOffsets, cscRowInd, cscValues, cscColOffsetsType, cscRowIndType, idxBase,
                        valueType);
}

tcsparseStatus_t tcsparseConstCscGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **cscColOffsets,
                                     const void **cscRowInd, const void **cscValues,
                                     tcsparseIndexType_t *cscColOffsetsType,
                                     tcsparseIndexType_t *cscRowIndType,
                                     tcsparseIndexBase_t *idxBase, cudaDataType *valueType)
{
    tc_error_clear();
    void *o, *i, *v;
    tcsparseStatus_t st = tc_spmat_get(
        "tcsparseConstCscGet", spMatDescr, TCSPARSE_FORMAT_CSC, rows, cols, nnz,
        cscColOffsets ? &o : NULL, cscRowInd ? &i : NULL, cscValues ? &v : NULL,
        cscColOffsetsType, cscRowIndType, idxBase, valueType);
    if (st == TCSPARSE_STATUS_SUCCESS) {
        *cscColOffsets = o;
        *cscRowInd = i;
        *cscValues = v;
    }
    return st;
}

tcsparseStatus_t tcsparseCooGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **cooRowInd, void **cooColInd,
                                void **cooValues, tcsparseIndexType_t *idxType,
                                tcsparseIndexBase_t *idxBase, cudaDataType *valueType)
{
    tc_error_clear();
    return tc_spmat_get("tcsparseCooGet", spMatDescr, TCSPARSE_FORMAT_COO, rows, cols, nnz,
                        cooRowInd, cooColInd, cooValues, NULL, idxType, idxBase, valueType);
}

tcsparseStatus_t tcsparseConstCooGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **cooRowInd,
                                     const void **cooColInd, const void **cooValues,
                                     tcsparseIndexType_t *idxType, tcsparseIndexBase_t *idxBase,
                                     cudaDataType *valueType)
{
    tc_error_clear();
    void *r, *c, *v;
    tcsparseStatus_t st = tc_spmat_get(
        "tcsparseConstCooGet", spMatDescr, TCSPARSE_FORMAT_COO, rows, cols, nnz,
        cooRowInd ? &r : NULL, cooColInd ? &c : NULL, cooValues ? &v : NULL, NULL, idxType,
        idxBase, valueType);
    if (st == TCSPARSE_STATUS_SUCCESS) {
        *cooRowInd = r;
        *cooColInd = c;
        *cooValues = v;
    }
    return st;
}

/* A structure change: the tensor-core plan goes; the cuSPARSE mirror is brought in step with
 * cuSPARSE's own setter when it is next used (fallback.c), so cuSPARSE sees exactly the
 * calls it would have seen without tcsparse. */
static tcsparseStatus_t tc_spmat_set_pointers(const char *fn, struct tcsparseSpMatDescr *d,
                                              tcsparseFormat_t fmt, void *off, void *idx,
                                              void *val)
{
    tcsparseStatus_t st = tc_spmat_check(fn, d, fmt);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    st = tc_check_alignment(fn, off, idx, val, d->offsets_type, d->indices_type, d->value_type);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    pthread_mutex_lock(&d->mu);
    tc_plan_invalidate(d);
    d->offsets = off;
    d->indices = idx;
    d->values = val;
    d->struct_gen++; /* even with the same arrays: the structure may have been rewritten */
    pthread_mutex_unlock(&d->mu);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseCsrSetPointers(tcsparseSpMatDescr_t spMatDescr, void *csrRowOffsets,
                                        void *csrColInd, void *csrValues)
{
    tc_error_clear();
    return tc_spmat_set_pointers("tcsparseCsrSetPointers", spMatDescr, TCSPARSE_FORMAT_CSR,
                                 csrRowOffsets, csrColInd, csrValues);
}

tcsparseStatus_t tcsparseCscSetPointers(tcsparseSpMatDescr_t spMatDescr, void *cscColOffsets,
                                        void *cscRowInd, void *cscValues)
{
    tc_error_clear();
    return tc_spmat_set_pointers("tcsparseCscSetPointers", spMatDescr, TCSPARSE_FORMAT_CSC,
                                 cscColOffsets, cscRowInd, cscValues);
}

tcsparseStatus_t tcsparseCooSetPointers(tcsparseSpMatDescr_t spMatDescr, void *cooRows,
                                        void *cooColumns, void *cooValues)
{
    tc_error_clear();
    return tc_spmat_set_pointers("tcsparseCooSetPointers", spMatDescr, TCSPARSE_FORMAT_COO,
                                 cooRows, cooColumns, cooValues);
}

tcsparseStatus_t tcsparseSpMatGetSize(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                      int64_t *cols, int64_t *nnz)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check("tcsparseSpMatGetSize", spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (rows == NULL || cols == NULL || nnz == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetSize: an output pointer is NULL");
    *rows = spMatDescr->rows;
    *cols = spMatDescr->cols;
    *nnz = spMatDescr->nnz;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetFormat(tcsparseConstSpMatDescr_t spMatDescr,
                                        tcsparseFormat_t *format)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check("tcsparseSpMatGetFormat", spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (format == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetFormat: format is NULL");
    *format = spMatDescr->format;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetIndexBase(tcsparseConstSpMatDescr_t spMatDescr,
                                           tcsparseIndexBase_t *idxBase)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check("tcsparseSpMatGetIndexBase", spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (idxBase == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetIndexBase: idxBase is NULL");
    *idxBase = spMatDescr->base;
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_spmat_get_values(const char *fn, const struct tcsparseSpMatDescr *d,
                                            void **values)
{
    tcsparseStatus_t st = tc_spmat_check(fn, d, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (values == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: values is NULL", fn);
    *values = d->values;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetValues(tcsparseSpMatDescr_t spMatDescr, void **values)
{
    tc_error_clear();
    return tc_spmat_get_values("tcsparseSpMatGetValues", spMatDescr, values);
}

tcsparseStatus_t tcsparseConstSpMatGetValues(tcsparseConstSpMatDescr_t spMatDescr,
                                             const void **values)
{
    tc_error_clear();
    void *v = NULL;
    tcsparseStatus_t st =
        tc_spmat_get_values("tcsparseConstSpMatGetValues", spMatDescr, values ? &v : NULL);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *values = v;
    return st;
}

/* Same pattern, new values: the plan reads values through the descriptor, so it stays. */
tcsparseStatus_t tcsparseSpMatSetValues(tcsparseSpMatDescr_t spMatDescr, void *values)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check("tcsparseSpMatSetValues", spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (!tc_aligned(values, tc_dtype_size(spMatDescr->value_type)))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetValues: values is not aligned to %s",
                            tc_dtype_name(spMatDescr->value_type));
    tc_spmat_lock(spMatDescr); /* calls on other threads read values under the lock */
    spMatDescr->values = values;
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetStridedBatch(tcsparseConstSpMatDescr_t spMatDescr,
                                              int *batchCount)
{
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check("tcsparseSpMatGetStridedBatch", spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (batchCount == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetStridedBatch: batchCount is NULL");
    *batchCount = spMatDescr->batch_count;
    return TCSPARSE_STATUS_SUCCESS;
}

/* A batch changes what the arrays mean: the plan goes, and the mirror is rebuilt on next use
 * (its strides cannot be read back to be compared). */
static void tc_spmat_set_batch(struct tcsparseSpMatDescr *d, int count, int64_t off_stride,
                               int64_t val_stride)
{
    pthread_mutex_lock(&d->mu);
    tc_plan_invalidate(d);
    tc_spmat_cusparse_release(d);
    d->struct_gen++;
    d->batch_count = count;
    d->offsets_batch_stride = off_stride;
    d->values_batch_stride = val_stride;
    pthread_mutex_unlock(&d->mu);
}

tcsparseStatus_t tcsparseCooSetStridedBatch(tcsparseSpMatDescr_t spMatDescr, int batchCount,
                                            int64_t batchStride)
{
    static const char fn[] = "tcsparseCooSetStridedBatch";
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check(fn, spMatDescr, TCSPARSE_FORMAT_COO);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (batchCount < 1)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: batchCount (%d) must be >= 1",
                            fn, batchCount);
    /* Stride 0 shares one matrix across the batch, as in cuSPARSE. */
    if (batchStride < 0 || (batchStride != 0 && batchStride < spMatDescr->nnz))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: batchStride (%lld) must be 0 or >= nnz (%lld)", fn,
                            (long long)batchStride, (long long)spMatDescr->nnz);
    tc_spmat_set_batch(spMatDescr, batchCount, batchStride, batchStride);
    return TCSPARSE_STATUS_SUCCESS;
}

/* cuSPARSE accepts CSC descriptors here too (strides then count column offsets). */
tcsparseStatus_t tcsparseCsrSetStridedBatch(tcsparseSpMatDescr_t spMatDescr, int batchCount,
                                            int64_t offsetsBatchStride,
                                            int64_t columnsValuesBatchStride)
{
    static const char fn[] = "tcsparseCsrSetStridedBatch";
    tc_error_clear();
    tcsparseStatus_t st = tc_spmat_check(fn, spMatDescr, 0);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (spMatDescr->format == TCSPARSE_FORMAT_COO)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: the descriptor is COO (use tcsparseCooSetStridedBatch)", fn);
    if (batchCount < 1)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: batchCount (%d) must be >= 1",
                            fn, batchCount);
    /* rows + 1 offsets, compared without forming rows + 1 (64-bit rows may be INT64_MAX) */
    int64_t major = spMatDescr->format == TCSPARSE_FORMAT_CSR ? spMatDescr->rows
                                                               : spMatDescr->cols;
    if (offsetsBatchStride < 0 || (offsetsBatchStride != 0 && offsetsBatchStride - 1 < major))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: offsetsBatchStride (%lld) must be 0 or >= %lld + 1 offsets", fn,
                            (long long)offsetsBatchStride, (long long)major);
    if (columnsValuesBatchStride < 0 ||
        (columnsValuesBatchStride != 0 && columnsValuesBatchStride < spMatDescr->nnz))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: columnsValuesBatchStride (%lld) must be 0 or >= nnz (%lld)", fn,
                            (long long)columnsValuesBatchStride, (long long)spMatDescr->nnz);
    tc_spmat_set_batch(spMatDescr, batchCount, offsetsBatchStride, columnsValuesBatchStride);
    return TCSPARSE_STATUS_SUCCESS;
}
