/* The cuSPARSE path: every call into cuSPARSE lives in fallback.c.  Arguments have been
 * validated by the public wrappers before these are called. */
#ifndef TC_FALLBACK_H
#define TC_FALLBACK_H

#include "internal.h"

/* The handle's cuSPARSE handle, created on first use (needs a CUDA device: otherwise
 * TCSPARSE_STATUS_NOT_INITIALIZED with a message), with the handle's stream and pointer mode
 * applied.  Also fills h->device, h->sm_count, h->cc_major/minor. */
tcsparseStatus_t tc_handle_cusparse(tcsparseHandle_t h, cusparseHandle_t *out);
/* Mirror descriptors, created on first use and kept in step with the tcsparse descriptor
 * (pointers, values, strided batch). */
tcsparseStatus_t tc_spmat_cusparse(const struct tcsparseSpMatDescr *d, cusparseSpMatDescr_t *out);
tcsparseStatus_t tc_dnmat_cusparse(const struct tcsparseDnMatDescr *d, cusparseDnMatDescr_t *out);
/* Frees the mirrors (called by the destroy functions). */
void tc_spmat_cusparse_release(struct tcsparseSpMatDescr *d);
void tc_dnmat_cusparse_release(struct tcsparseDnMatDescr *d);

/* The cuSPARSE SpMM/SDDMM entry points this file calls (tcsparse_hook.h: the library's own
 * symbols, or the real cuSPARSE's inside the LD_PRELOAD interposer). */
extern tc_cusparse_entry_points tc_cusparse_real;

tcsparseStatus_t tc_fallback_spmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                              tcsparseOperation_t opB, const void *alpha,
                                              tcsparseConstSpMatDescr_t A,
                                              tcsparseConstDnMatDescr_t B, const void *beta,
                                              tcsparseDnMatDescr_t C, cudaDataType ct,
                                              tcsparseSpMMAlg_t alg, size_t *size);
tcsparseStatus_t tc_fallback_spmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                             tcsparseOperation_t opB, const void *alpha,
                                             tcsparseConstSpMatDescr_t A,
                                             tcsparseConstDnMatDescr_t B, const void *beta,
                                             tcsparseDnMatDescr_t C, cudaDataType ct,
                                             tcsparseSpMMAlg_t alg, void *buffer);
tcsparseStatus_t tc_fallback_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                  tcsparseOperation_t opB, const void *alpha,
                                  tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                  const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                                  tcsparseSpMMAlg_t alg, void *buffer);
/* SpMM (opA non-transposed, CSR) as cuSPARSE CSR_ALG3 with a preprocessed workspace of the
 * handle's own (the caller's buffer is not used); run = 0 only prepares the workspace.
 * NOT_SUPPORTED, before anything is launched, where CSR_ALG3 cannot run: the caller then
 * runs ALG_DEFAULT.  tc_alg3_release_all frees the handle's workspaces. */
tcsparseStatus_t tc_fallback_spmm_alg3(tcsparseHandle_t h, tcsparseOperation_t opB,
                                       const void *alpha, tcsparseConstSpMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, const void *beta,
                                       tcsparseDnMatDescr_t C, cudaDataType ct, int run);
void tc_alg3_release_all(tcsparseHandle_t h);
/* Before the handle's stream changes: waits for the old stream where the handle holds
 * CSR_ALG3 workspaces (or retires them where it cannot). */
void tc_alg3_stream_change(tcsparseHandle_t h, cudaStream_t old_stream);
tcsparseStatus_t tc_fallback_sddmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                               tcsparseOperation_t opB, const void *alpha,
                                               tcsparseConstDnMatDescr_t A,
                                               tcsparseConstDnMatDescr_t B, const void *beta,
                                               tcsparseSpMatDescr_t C, cudaDataType ct,
                                               tcsparseSDDMMAlg_t alg, size_t *size);
tcsparseStatus_t tc_fallback_sddmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                              tcsparseOperation_t opB, const void *alpha,
                                              tcsparseConstDnMatDescr_t A,
                                              tcsparseConstDnMatDescr_t B, const void *beta,
                                              tcsparseSpMatDescr_t C, cudaDataType ct,
                                              tcsparseSDDMMAlg_t alg, void *buffer);
tcsparseStatus_t tc_fallback_sddmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                   tcsparseOperation_t opB, const void *alpha,
                                   tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                   const void *beta, tcsparseSpMatDescr_t C, cudaDataType ct,
                                   tcsparseSDDMMAlg_t alg, void *buffer);

#endif
