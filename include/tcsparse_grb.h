/**
 * @file tcsparse_grb.h
 * @brief SuiteSparse:GraphBLAS adapter: GrB_mxm on the GPU through tcsparse.
 *
 * tcsparse_GrB_mxm() has GrB_mxm's signature and semantics.  Two kinds of call run on the
 * GPU (tensor cores or cuSPARSE, as tcsparse's route decides):
 *
 *  - SpMM:  C = A*B or C = accum(C, A*B) with no mask, the PLUS_TIMES semiring over FP32
 *           or FP64, A sparse (or hypersparse) and B full (every entry present);
 *  - SDDMM: C<M> = A*B' (or with accum, or a valued mask) with a mask that is not
 *           complemented, the same semirings, and A and B full.
 *
 * Everything else, including every call when no CUDA device can be used, goes to the real
 * GrB_mxm unchanged.  The GPU computes T = op(A)*op(B) with the pattern GraphBLAS gives
 * it (a row of T exists where the row of op(A) has an entry); GraphBLAS's own methods then
 * apply the mask, accumulator and replace flag, so those follow GraphBLAS exactly.  Values
 * agree with GraphBLAS's to FP32 (or FP64) accuracy, not bit for bit.
 *
 * The operands are read without copying where GraphBLAS allows it (GxB_Matrix_unpack_* and
 * GxB_Matrix_pack_* around the upload); they are restored before tcsparse_GrB_mxm returns,
 * on error paths too.  While a call runs, its input matrices must not be used by another
 * thread (set TCSPARSE_X_GRB_NOUNPACK=1 to read private copies instead).
 *
 * libtcsparse_grb_preload.so exports GrB_mxm itself: run an unmodified GraphBLAS program
 * with LD_PRELOAD naming it.  docs/graphblas.md has the details.
 */
#ifndef TCSPARSE_GRB_H
#define TCSPARSE_GRB_H

#include <stdint.h>
#include <GraphBLAS.h>

#ifdef __cplusplus
extern "C" {
#endif

/** C<Mask> = accum(C, A*B): GrB_mxm, on the GPU where the call is one of those above. */
GrB_Info tcsparse_GrB_mxm(GrB_Matrix C, const GrB_Matrix Mask, const GrB_BinaryOp accum,
                          const GrB_Semiring semiring, const GrB_Matrix A, const GrB_Matrix B,
                          const GrB_Descriptor desc);

/** Flags of tcsparse_GrB_pin_ext(). */
enum {
    /** Every use hashes the matrix's arrays on the host (structure and values apart) and
     *  uploads again what changed.  The default: always safe. */
    TCSPARSE_GRB_PIN_VERIFY = 0,
    /** Every use compares only the dimensions, type, entry count and array addresses; the
     *  caller promises to call tcsparse_GrB_pin() again (or unpin) after changing the matrix
     *  in place, and to unpin it before GrB_free. */
    TCSPARSE_GRB_PIN_TRUST = 1
};

/**
 * Keeps a device copy of A (FP32 or FP64; sparse arrays with tcsparse's descriptor and its
 * cached tensor-core plan, or a full matrix's values) for later tcsparse_GrB_mxm calls that
 * use A in the form it is stored in: as the sparse A of an SpMM (not transposed when A is
 * held by row), as the mask of an SDDMM, or as a full operand.  Pinning again refreshes
 * the copy.  Without a usable GPU the pin is recorded and checked but holds no device data.
 * @return GrB_SUCCESS; GrB_NULL_POINTER; GrB_DOMAIN_MISMATCH for other types;
 *         GrB_OUT_OF_MEMORY when the device copy cannot be made (nothing is pinned then).
 */
GrB_Info tcsparse_GrB_pin(GrB_Matrix A);
/** tcsparse_GrB_pin() with a TCSPARSE_GRB_PIN_* flag. */
GrB_Info tcsparse_GrB_pin_ext(GrB_Matrix A, unsigned flags);
/** Frees A's device copy.  GrB_NO_VALUE when A was not pinned. */
GrB_Info tcsparse_GrB_unpin(GrB_Matrix A);
/** Unpins everything and frees the adapter's device buffers and tcsparse handle (call it
 *  before GrB_finalize or cudaDeviceReset). */
void tcsparse_GrB_release(void);

/** What a call did. */
typedef enum {
    TCSPARSE_GRB_PATH_NONE = 0,        /**< no call yet */
    TCSPARSE_GRB_PATH_GRAPHBLAS = 1,   /**< passed to the real GrB_mxm */
    TCSPARSE_GRB_PATH_SPMM = 2,        /**< computed by tcsparseSpMM */
    TCSPARSE_GRB_PATH_SDDMM = 3        /**< computed by tcsparseSDDMM */
} tcsparse_GrB_path_t;

/** Counters since the last reset, and the last call's decision and timings (process-wide). */
typedef struct {
    uint64_t calls, spmm, sddmm, passthrough;
    /** pinned operands used as they were / values uploaded again / rebuilt (structure) */
    uint64_t pin_hits, pin_value_refreshes, pin_rebuilds;
    tcsparse_GrB_path_t last_path;
    char last_reason[160];  /**< why the last call took its path */
    char last_kernel[64];   /**< tcsparse's kernel name for the last accelerated call */
    /** last accelerated call, host wall milliseconds: reading the operands out of GraphBLAS
     *  (and hashing pinned ones), host-to-device copies, the tcsparse call, the
     *  device-to-host copy, and building the result in GraphBLAS (mask, accum). */
    double ms_acquire, ms_upload, ms_compute, ms_download, ms_finish;
} tcsparse_GrB_stats_t;

void tcsparse_GrB_get_stats(tcsparse_GrB_stats_t *stats);
void tcsparse_GrB_reset_stats(void);
/** Reads the environment again (TCSPARSE_GRB, TCSPARSE_LOG, TCSPARSE_ROUTE and the
 *  TCSPARSE_X_GRB_* knobs of docs/configuration.md): the adapter reads it once per process,
 *  so a program that changes a variable between calls (a benchmark comparing settings)
 *  calls this after the change. */
void tcsparse_GrB_reload_config(void);

#ifdef __cplusplus
}
#endif

#endif /* TCSPARSE_GRB_H */
