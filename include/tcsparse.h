/**
 * @file tcsparse.h
 * @brief tcsparse public API: cuSPARSE's generic SpMM/SDDMM API with the prefix `tcsparse`.
 *
 * Every enum value equals its cuSPARSE counterpart (CUDA 13.0, cuSPARSE 12.6), so values
 * can be cast between the two libraries.  Functions take the same parameters, in the same
 * order, as cuSPARSE's.  Extensions that cuSPARSE lacks live in tcsparse_ext.h.
 *
 * Errors: every function returns a ::tcsparseStatus_t; on failure a one-line message for
 * the calling thread is available from tcsparseGetLastErrorMessage().
 */
#ifndef TCSPARSE_H
#define TCSPARSE_H

#include <stddef.h>
#include <stdint.h>
#include <driver_types.h>   /* cudaStream_t */
#include <library_types.h>  /* cudaDataType, libraryPropertyType */

#ifdef __cplusplus
extern "C" {
#endif

#define TCSPARSE_VER_MAJOR 0
#define TCSPARSE_VER_MINOR 1
#define TCSPARSE_VER_PATCH 0
/** Version as one number, major·1000 + minor·100 + patch (cuSPARSE's convention). */
#define TCSPARSE_VERSION (TCSPARSE_VER_MAJOR * 1000 + TCSPARSE_VER_MINOR * 100 + TCSPARSE_VER_PATCH)

/** Status codes, numerically equal to cusparseStatus_t. */
typedef enum {
    TCSPARSE_STATUS_SUCCESS = 0,
    TCSPARSE_STATUS_NOT_INITIALIZED = 1,
    TCSPARSE_STATUS_ALLOC_FAILED = 2,
    TCSPARSE_STATUS_INVALID_VALUE = 3,
    TCSPARSE_STATUS_ARCH_MISMATCH = 4,
    TCSPARSE_STATUS_MAPPING_ERROR = 5,
    TCSPARSE_STATUS_EXECUTION_FAILED = 6,
    TCSPARSE_STATUS_INTERNAL_ERROR = 7,
    TCSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED = 8,
    TCSPARSE_STATUS_ZERO_PIVOT = 9,
    TCSPARSE_STATUS_NOT_SUPPORTED = 10,
    TCSPARSE_STATUS_INSUFFICIENT_RESOURCES = 11
} tcsparseStatus_t;

/** Where alpha and beta live (cusparsePointerMode_t). */
typedef enum {
    TCSPARSE_POINTER_MODE_HOST = 0,
    TCSPARSE_POINTER_MODE_DEVICE = 1
} tcsparsePointerMode_t;

/** Index base (cusparseIndexBase_t). */
typedef enum {
    TCSPARSE_INDEX_BASE_ZERO = 0,
    TCSPARSE_INDEX_BASE_ONE = 1
} tcsparseIndexBase_t;

/** Operation applied to an operand (cusparseOperation_t). */
typedef enum {
    TCSPARSE_OPERATION_NON_TRANSPOSE = 0,
    TCSPARSE_OPERATION_TRANSPOSE = 1,
    TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE = 2
} tcsparseOperation_t;

/** Sparse storage formats (cusparseFormat_t).  tcsparse creates CSR, CSC and COO. */
typedef enum {
    TCSPARSE_FORMAT_CSR = 1,
    TCSPARSE_FORMAT_CSC = 2,
    TCSPARSE_FORMAT_COO = 3,
    TCSPARSE_FORMAT_BLOCKED_ELL = 5,
    TCSPARSE_FORMAT_BSR = 6,
    TCSPARSE_FORMAT_SLICED_ELLPACK = 7
} tcsparseFormat_t;

/** Dense layouts (cusparseOrder_t). */
typedef enum {
    TCSPARSE_ORDER_COL = 1,
    TCSPARSE_ORDER_ROW = 2
} tcsparseOrder_t;

/** Index widths (cusparseIndexType_t).  16U is not accepted for CSR/CSC/COO, as in cuSPARSE. */
typedef enum {
    TCSPARSE_INDEX_16U = 1,
    TCSPARSE_INDEX_32I = 2,
    TCSPARSE_INDEX_64I = 3
} tcsparseIndexType_t;

/** SpMM algorithms (cusparseSpMMAlg_t).  They choose the cuSPARSE algorithm on the fallback path. */
typedef enum {
    TCSPARSE_SPMM_ALG_DEFAULT = 0,
    TCSPARSE_SPMM_COO_ALG1 = 1,
    TCSPARSE_SPMM_COO_ALG2 = 2,
    TCSPARSE_SPMM_COO_ALG3 = 3,
    TCSPARSE_SPMM_COO_ALG4 = 5,
    TCSPARSE_SPMM_CSR_ALG1 = 4,
    TCSPARSE_SPMM_CSR_ALG2 = 6,
    TCSPARSE_SPMM_CSR_ALG3 = 12,
    TCSPARSE_SPMM_BLOCKED_ELL_ALG1 = 13,
    TCSPARSE_SPMM_BSR_ALG1 = 14
} tcsparseSpMMAlg_t;

/** SDDMM algorithms (cusparseSDDMMAlg_t). */
typedef enum {
    TCSPARSE_SDDMM_ALG_DEFAULT = 0
} tcsparseSDDMMAlg_t;

/** Opaque library context: stream, pointer mode, math mode, route setting. */
typedef struct tcsparseContext *tcsparseHandle_t;
/** Opaque sparse matrix descriptor; owns the cached tensor-core plan. */
typedef struct tcsparseSpMatDescr *tcsparseSpMatDescr_t;
typedef struct tcsparseSpMatDescr const *tcsparseConstSpMatDescr_t;
/** Opaque dense matrix descriptor. */
typedef struct tcsparseDnMatDescr *tcsparseDnMatDescr_t;
typedef struct tcsparseDnMatDescr const *tcsparseConstDnMatDescr_t;

/* ---- errors ---------------------------------------------------------------------- */

/** Name of a status code, e.g. "TCSPARSE_STATUS_INVALID_VALUE". Never NULL. */
const char *tcsparseGetErrorName(tcsparseStatus_t status);
/** Short description of a status code. Never NULL. */
const char *tcsparseGetErrorString(tcsparseStatus_t status);
/** One-line message describing the calling thread's last failure ("" after a success). */
const char *tcsparseGetLastErrorMessage(void);

/* ---- handle ---------------------------------------------------------------------- */

/** Creates a handle.  Works without a GPU; the GPU is first touched by an execution call. */
tcsparseStatus_t tcsparseCreate(tcsparseHandle_t *handle);
tcsparseStatus_t tcsparseDestroy(tcsparseHandle_t handle);
/** Library version as ::TCSPARSE_VERSION. */
tcsparseStatus_t tcsparseGetVersion(tcsparseHandle_t handle, int *version);
/** MAJOR_VERSION, MINOR_VERSION or PATCH_LEVEL of the library. */
tcsparseStatus_t tcsparseGetProperty(libraryPropertyType type, int *value);
tcsparseStatus_t tcsparseSetStream(tcsparseHandle_t handle, cudaStream_t streamId);
tcsparseStatus_t tcsparseGetStream(tcsparseHandle_t handle, cudaStream_t *streamId);
tcsparseStatus_t tcsparseGetPointerMode(tcsparseHandle_t handle, tcsparsePointerMode_t *mode);
tcsparseStatus_t tcsparseSetPointerMode(tcsparseHandle_t handle, tcsparsePointerMode_t mode);

/* ---- sparse matrix descriptors ----------------------------------------------------- */

tcsparseStatus_t tcsparseCreateCsr(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *csrRowOffsets, void *csrColInd,
                                   void *csrValues, tcsparseIndexType_t csrRowOffsetsType,
                                   tcsparseIndexType_t csrColIndType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType);
tcsparseStatus_t tcsparseCreateConstCsr(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *csrRowOffsets,
                                        const void *csrColInd, const void *csrValues,
                                        tcsparseIndexType_t csrRowOffsetsType,
                                        tcsparseIndexType_t csrColIndType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType);
tcsparseStatus_t tcsparseCreateCsc(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *cscColOffsets, void *cscRowInd,
                                   void *cscValues, tcsparseIndexType_t cscColOffsetsType,
                                   tcsparseIndexType_t cscRowIndType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType);
tcsparseStatus_t tcsparseCreateConstCsc(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *cscColOffsets,
                                        const void *cscRowInd, const void *cscValues,
                                        tcsparseIndexType_t cscColOffsetsType,
                                        tcsparseIndexType_t cscRowIndType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType);
tcsparseStatus_t tcsparseCreateCoo(tcsparseSpMatDescr_t *spMatDescr, int64_t rows, int64_t cols,
                                   int64_t nnz, void *cooRowInd, void *cooColInd, void *cooValues,
                                   tcsparseIndexType_t cooIdxType, tcsparseIndexBase_t idxBase,
                                   cudaDataType valueType);
tcsparseStatus_t tcsparseCreateConstCoo(tcsparseConstSpMatDescr_t *spMatDescr, int64_t rows,
                                        int64_t cols, int64_t nnz, const void *cooRowInd,
                                        const void *cooColInd, const void *cooValues,
                                        tcsparseIndexType_t cooIdxType,
                                        tcsparseIndexBase_t idxBase, cudaDataType valueType);
/** Destroys a sparse descriptor and the tensor-core plan cached with it. */
tcsparseStatus_t tcsparseDestroySpMat(tcsparseConstSpMatDescr_t spMatDescr);

tcsparseStatus_t tcsparseCsrGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **csrRowOffsets, void **csrColInd,
                                void **csrValues, tcsparseIndexType_t *csrRowOffsetsType,
                                tcsparseIndexType_t *csrColIndType, tcsparseIndexBase_t *idxBase,
                                cudaDataType *valueType);
tcsparseStatus_t tcsparseConstCsrGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **csrRowOffsets,
                                     const void **csrColInd, const void **csrValues,
                                     tcsparseIndexType_t *csrRowOffsetsType,
                                     tcsparseIndexType_t *csrColIndType,
                                     tcsparseIndexBase_t *idxBase, cudaDataType *valueType);
tcsparseStatus_t tcsparseCscGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **cscColOffsets, void **cscRowInd,
                                void **cscValues, tcsparseIndexType_t *cscColOffsetsType,
                                tcsparseIndexType_t *cscRowIndType, tcsparseIndexBase_t *idxBase,
                                cudaDataType *valueType);
tcsparseStatus_t tcsparseConstCscGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **cscColOffsets,
                                     const void **cscRowInd, const void **cscValues,
                                     tcsparseIndexType_t *cscColOffsetsType,
                                     tcsparseIndexType_t *cscRowIndType,
                                     tcsparseIndexBase_t *idxBase, cudaDataType *valueType);
tcsparseStatus_t tcsparseCooGet(tcsparseSpMatDescr_t spMatDescr, int64_t *rows, int64_t *cols,
                                int64_t *nnz, void **cooRowInd, void **cooColInd,
                                void **cooValues, tcsparseIndexType_t *idxType,
                                tcsparseIndexBase_t *idxBase, cudaDataType *valueType);
tcsparseStatus_t tcsparseConstCooGet(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                     int64_t *cols, int64_t *nnz, const void **cooRowInd,
                                     const void **cooColInd, const void **cooValues,
                                     tcsparseIndexType_t *idxType, tcsparseIndexBase_t *idxBase,
                                     cudaDataType *valueType);

/** Replaces the arrays of a CSR descriptor; invalidates its cached plan. */
tcsparseStatus_t tcsparseCsrSetPointers(tcsparseSpMatDescr_t spMatDescr, void *csrRowOffsets,
                                        void *csrColInd, void *csrValues);
/** Replaces the arrays of a CSC descriptor; invalidates its cached plan. */
tcsparseStatus_t tcsparseCscSetPointers(tcsparseSpMatDescr_t spMatDescr, void *cscColOffsets,
                                        void *cscRowInd, void *cscValues);
/** Replaces the arrays of a COO descriptor; invalidates its cached plan. */
tcsparseStatus_t tcsparseCooSetPointers(tcsparseSpMatDescr_t spMatDescr, void *cooRows,
                                        void *cooColumns, void *cooValues);

tcsparseStatus_t tcsparseSpMatGetSize(tcsparseConstSpMatDescr_t spMatDescr, int64_t *rows,
                                      int64_t *cols, int64_t *nnz);
tcsparseStatus_t tcsparseSpMatGetFormat(tcsparseConstSpMatDescr_t spMatDescr,
                                        tcsparseFormat_t *format);
tcsparseStatus_t tcsparseSpMatGetIndexBase(tcsparseConstSpMatDescr_t spMatDescr,
                                           tcsparseIndexBase_t *idxBase);
tcsparseStatus_t tcsparseSpMatGetValues(tcsparseSpMatDescr_t spMatDescr, void **values);
tcsparseStatus_t tcsparseConstSpMatGetValues(tcsparseConstSpMatDescr_t spMatDescr,
                                             const void **values);
/** Points the descriptor at another values array (same pattern); the plan stays valid. */
tcsparseStatus_t tcsparseSpMatSetValues(tcsparseSpMatDescr_t spMatDescr, void *values);
tcsparseStatus_t tcsparseSpMatGetStridedBatch(tcsparseConstSpMatDescr_t spMatDescr,
                                              int *batchCount);
/** Strided batches run on the cuSPARSE path. */
tcsparseStatus_t tcsparseCooSetStridedBatch(tcsparseSpMatDescr_t spMatDescr, int batchCount,
                                            int64_t batchStride);
tcsparseStatus_t tcsparseCsrSetStridedBatch(tcsparseSpMatDescr_t spMatDescr, int batchCount,
                                            int64_t offsetsBatchStride,
                                            int64_t columnsValuesBatchStride);

/* ---- dense matrix descriptors ------------------------------------------------------ */

tcsparseStatus_t tcsparseCreateDnMat(tcsparseDnMatDescr_t *dnMatDescr, int64_t rows, int64_t cols,
                                     int64_t ld, void *values, cudaDataType valueType,
                                     tcsparseOrder_t order);
tcsparseStatus_t tcsparseCreateConstDnMat(tcsparseConstDnMatDescr_t *dnMatDescr, int64_t rows,
                                          int64_t cols, int64_t ld, const void *values,
                                          cudaDataType valueType, tcsparseOrder_t order);
tcsparseStatus_t tcsparseDestroyDnMat(tcsparseConstDnMatDescr_t dnMatDescr);
tcsparseStatus_t tcsparseDnMatGet(tcsparseDnMatDescr_t dnMatDescr, int64_t *rows, int64_t *cols,
                                  int64_t *ld, void **values, cudaDataType *type,
                                  tcsparseOrder_t *order);
tcsparseStatus_t tcsparseConstDnMatGet(tcsparseConstDnMatDescr_t dnMatDescr, int64_t *rows,
                                       int64_t *cols, int64_t *ld, const void **values,
                                       cudaDataType *type, tcsparseOrder_t *order);
tcsparseStatus_t tcsparseDnMatGetValues(tcsparseDnMatDescr_t dnMatDescr, void **values);
tcsparseStatus_t tcsparseConstDnMatGetValues(tcsparseConstDnMatDescr_t dnMatDescr,
                                             const void **values);
tcsparseStatus_t tcsparseDnMatSetValues(tcsparseDnMatDescr_t dnMatDescr, void *values);
tcsparseStatus_t tcsparseDnMatSetStridedBatch(tcsparseDnMatDescr_t dnMatDescr, int batchCount,
                                              int64_t batchStride);
tcsparseStatus_t tcsparseDnMatGetStridedBatch(tcsparseConstDnMatDescr_t dnMatDescr,
                                              int *batchCount, int64_t *batchStride);

/* ---- SpMM: C = alpha·op(A)·op(B) + beta·C ------------------------------------------ */

/** Workspace size for tcsparseSpMM (covers both the tensor-core and the cuSPARSE path). */
tcsparseStatus_t tcsparseSpMM_bufferSize(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                         tcsparseOperation_t opB, const void *alpha,
                                         tcsparseConstSpMatDescr_t matA,
                                         tcsparseConstDnMatDescr_t matB, const void *beta,
                                         tcsparseDnMatDescr_t matC, cudaDataType computeType,
                                         tcsparseSpMMAlg_t alg, size_t *bufferSize);
/** Builds (and caches with matA) the tensor-core plan and cuSPARSE's own preprocessing. */
tcsparseStatus_t tcsparseSpMM_preprocess(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                         tcsparseOperation_t opB, const void *alpha,
                                         tcsparseConstSpMatDescr_t matA,
                                         tcsparseConstDnMatDescr_t matB, const void *beta,
                                         tcsparseDnMatDescr_t matC, cudaDataType computeType,
                                         tcsparseSpMMAlg_t alg, void *externalBuffer);
tcsparseStatus_t tcsparseSpMM(tcsparseHandle_t handle, tcsparseOperation_t opA,
                              tcsparseOperation_t opB, const void *alpha,
                              tcsparseConstSpMatDescr_t matA, tcsparseConstDnMatDescr_t matB,
                              const void *beta, tcsparseDnMatDescr_t matC,
                              cudaDataType computeType, tcsparseSpMMAlg_t alg,
                              void *externalBuffer);

/* ---- SDDMM: C = alpha·(op(A)·op(B)) ∘ spy(C) + beta·C -------------------------------- */

tcsparseStatus_t tcsparseSDDMM_bufferSize(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstDnMatDescr_t matA,
                                          tcsparseConstDnMatDescr_t matB, const void *beta,
                                          tcsparseSpMatDescr_t matC, cudaDataType computeType,
                                          tcsparseSDDMMAlg_t alg, size_t *bufferSize);
tcsparseStatus_t tcsparseSDDMM_preprocess(tcsparseHandle_t handle, tcsparseOperation_t opA,
                                          tcsparseOperation_t opB, const void *alpha,
                                          tcsparseConstDnMatDescr_t matA,
                                          tcsparseConstDnMatDescr_t matB, const void *beta,
                                          tcsparseSpMatDescr_t matC, cudaDataType computeType,
                                          tcsparseSDDMMAlg_t alg, void *externalBuffer);
tcsparseStatus_t tcsparseSDDMM(tcsparseHandle_t handle, tcsparseOperation_t opA,
                               tcsparseOperation_t opB, const void *alpha,
                               tcsparseConstDnMatDescr_t matA, tcsparseConstDnMatDescr_t matB,
                               const void *beta, tcsparseSpMatDescr_t matC,
                               cudaDataType computeType, tcsparseSDDMMAlg_t alg,
                               void *externalBuffer);

#ifdef __cplusplus
}
#endif

#endif /* TCSPARSE_H */
