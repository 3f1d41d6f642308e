/* tcsparse_hook.h: what the cuSPARSE interposer (compat/cusparse) asks of the core beyond
 * tcsparse.h and tcsparse_ext.h.  Implemented in src/api/hook.c.
 *
 * The interposer mirrors a program's cuSPARSE calls on tcsparse handles and descriptors of its
 * own.  Where the route picks cuSPARSE it calls the real cuSPARSE itself, with the program's
 * own arguments, so it needs the route to decide without running cuSPARSE (the handle modes
 * below); it keeps the plans of destroyed descriptors and recognises their structure later
 * (has-plan, fingerprint); and tcsparse's own cuSPARSE calls must reach the real library,
 * never the interposer's names (tc_hook_set_cusparse).
 *
 * Not installed, and its names are tc_*: the installed libtcsparse.so exports only
 * tcsparse* names, and the interposer links the core itself.  Each function validates its
 * arguments like the public ones: a bad one gives TCSPARSE_STATUS_INVALID_VALUE with a
 * one-line message (tcsparseGetLastErrorMessage) and changes nothing. */
#ifndef TCSPARSE_HOOK_H
#define TCSPARSE_HOOK_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handle modes ---------------------------------------------------------------------- */

/* Bits of a handle's mode (tc_hook_set_mode); 0, the mode of every new handle, is the
 * library's ordinary behaviour. */
enum {
    /* Where the route picks cuSPARSE, SpMM/SDDMM execute and preprocess record the decision
     * (tcsparseGetLastRoute) and return SUCCESS without calling cuSPARSE; tc_hook_deferred
     * then says 1, and the caller runs cuSPARSE itself.  Nothing is measured against cuSPARSE
     * on such a handle (the caller's cuSPARSE calls cannot be timed): the automatic route
     * measures the library's own SpMM paths only, the CUDA-core kernel first where the model
     * prefers cuSPARSE (none with TCSPARSE_X_PRELOAD_MEASURE=0 or TCSPARSE_SELECT=model: the
     * model's decision, unmeasured), and keeps cuSPARSE's default algorithm (no CSR_ALG3
     * workspace of its own). */
    TC_HOOK_DEFER_CUSPARSE = 1u,
    /* The route writes no TCSPARSE_LOG line: the caller prints its own. */
    TC_HOOK_QUIET = 2u,
    /* SpMM/SDDMM execute decide and record the route, and launch nothing (tc_hook_deferred
     * says 1): the caller asks where a call would go before it lets the call run. */
    TC_HOOK_DECIDE_ONLY = 4u
};
#define TC_HOOK_MODES (TC_HOOK_DEFER_CUSPARSE | TC_HOOK_QUIET | TC_HOOK_DECIDE_ONLY)

/* Sets the handle's mode, a combination of the bits above (replacing the previous one).
 * INVALID_VALUE for a dead handle or an unknown bit. */
tcsparseStatus_t tc_hook_set_mode(tcsparseHandle_t handle, unsigned mode);

/* *deferred = 1 when the last SpMM/SDDMM execute or preprocess on the handle (one that
 * returned SUCCESS) left cuSPARSE's part to the caller: under TC_HOOK_DEFER_CUSPARSE an
 * execute routed to cuSPARSE, or any preprocess (cuSPARSE's own preprocessing); under
 * TC_HOOK_DECIDE_ONLY any execute.  0 when tcsparse did the whole call.  Read it right after
 * that call. */
tcsparseStatus_t tc_hook_deferred(tcsparseHandle_t handle, int *deferred);

/* *learning says whether the last SpMM/SDDMM execute on the handle (one that returned
 * SUCCESS) ran while the route was still measuring that kind of call on that matrix: 2 while
 * it measures its candidate paths (the call may have run any of them, or waited for another
 * kind's measurement); 1 while it tunes the kernel of the path it chose, or late ordering
 * times the matrix's plans (a trial under way, or starting with the next such call); 0 once
 * it has settled, and after a preprocess.  Only a 0 call's time is what the kind settles on;
 * a 1 call ran the path the route chose.  Read it right after that call. */
tcsparseStatus_t tc_hook_learning(tcsparseHandle_t handle, int *learning);

/* The route in effect on the handle: the environment variable TCSPARSE_ROUTE when set,
 * else tcsparseSetRoute's (tcsparseGetRoute returns only the latter). */
tcsparseStatus_t tc_hook_route(tcsparseHandle_t handle, tcsparseRoute_t *route);

/* ---- sparse descriptors ---------------------------------------------------------------- */

/* *has_plan = 1 when the descriptor holds a tensor-core plan now (one built by an earlier
 * call, which later calls reuse): its own, or its transpose's (opA = TRANSPOSE). */
tcsparseStatus_t tc_hook_spmat_has_plan(tcsparseConstSpMatDescr_t spMatDescr, int *has_plan);
/* *has_plan = 1 when the plan a call would use exists now: with transposed = 0 the
 * descriptor's own (SpMM with opA = NON_TRANSPOSE, SDDMM), with transposed = 1 its
 * transpose's (SpMM with opA = TRANSPOSE). */
tcsparseStatus_t tc_hook_spmat_has_plan_for(tcsparseConstSpMatDescr_t spMatDescr, int transposed,
                                            int *has_plan);

/* A 64-bit fingerprint of what the descriptor's two structure arrays hold now (CSR/CSC:
 * offsets and indices; COO: row and column indices), computed on `stream` and waited for
 * (one synchronisation).  The first call on a descriptor allocates the words it uses, which
 * are the guard's (below) and go with the descriptor; later calls allocate nothing.  Equal
 * structures give equal fingerprints; a changed one almost surely another.  EXECUTION_FAILED
 * on a CUDA error (cleared); NOT_SUPPORTED on a device other than the first call's. */
tcsparseStatus_t tc_hook_spmat_fingerprint(tcsparseConstSpMatDescr_t spMatDescr,
                                           cudaStream_t stream, uint64_t *fingerprint);

/* The device-side guard: plan identity without a synchronisation.  With on = 1, every later
 * tensor-core SpMM execution on the descriptor (until its structure arrays are set again)
 * first launches, on the caller's stream, the fingerprint of the structure arrays and its
 * comparison with `fingerprint`; the tensor-core kernels run only where it matches, and a
 * CUDA-core SpMM over the caller's CSR arrays computes the product where it does not.  Before
 * the CUDA-core kernel on its row schedule, which reads the caller's columns as they are, the
 * row offsets alone are hashed where `fingerprint` is the last tc_hook_spmat_fingerprint
 * computed on this descriptor, over the same offsets array (whose offsets' part is kept).
 * The host neither waits nor allocates on those executions.  The first call with on = 1
 * allocates (a few bytes of device memory and pinned host words), so make it once outside
 * any stream capture (arm, then disarm with on = 0 until the guard is needed).  Guarded
 * executions of one descriptor on different streams are ordered by an event (the later waits for the
 * earlier).  SDDMM executions are not guarded: check those with tc_hook_spmat_fingerprint.
 * on = 0 disarms and forgets a mismatch reported.  NOT_SUPPORTED for CSC, COO, a strided
 * batch, or a device other than the one the guard was set up on; ALLOC_FAILED when the
 * memory cannot be had.  docs/preload.md gives the
 * argument why this is safe. */
tcsparseStatus_t tc_hook_spmat_guard(tcsparseConstSpMatDescr_t spMatDescr, int on,
                                     uint64_t fingerprint);

/* *tripped = 1 when a guarded execution on the descriptor that has completed found the arrays
 * holding another structure (the plan is stale: drop it).  A CUDA-core execution checks the
 * row offsets only, so other columns under the same offsets raise nothing there (its result
 * is right; a tensor-core execution would find them).  Reads a host word; never waits. */
tcsparseStatus_t tc_hook_spmat_guard_tripped(tcsparseConstSpMatDescr_t spMatDescr, int *tripped);

/* ---- the cuSPARSE the core calls ------------------------------------------------------- */

/* The cuSPARSE SpMM/SDDMM entry points the core's cuSPARSE route calls
 * (src/cusparse/fallback.c).  They are the library's own symbols, except inside the
 * interposer, which defines those names itself and points these at the real cuSPARSE before
 * any call, so that the core never re-enters it. */
typedef struct {
    __typeof__(cusparseSpMM_bufferSize) *spmm_buffer_size;
    __typeof__(cusparseSpMM_preprocess) *spmm_preprocess;
    __typeof__(cusparseSpMM) *spmm;
    __typeof__(cusparseSDDMM_bufferSize) *sddmm_buffer_size;
    __typeof__(cusparseSDDMM_preprocess) *sddmm_preprocess;
    __typeof__(cusparseSDDMM) *sddmm;
} tc_cusparse_entry_points;

/* Points the core's cuSPARSE calls at these functions, for every handle; call it before any
 * other tcsparse call, from one thread.  INVALID_VALUE when `real` or one of its functions is
 * NULL. */
tcsparseStatus_t tc_hook_set_cusparse(const tc_cusparse_entry_points *real);

/* The interposer's settings, read by the core's configuration module (docs/configuration.md)
 * once per process, so that no environment variable is read anywhere else. */
typedef struct {
    int passthrough;    /* TCSPARSE_ROUTE=cusparse: every call goes to the real cuSPARSE */
    int log;            /* TCSPARSE_LOG: one line per intercepted call */
    int keep;           /* TCSPARSE_X_PRELOAD_KEEP: plans of destroyed descriptors kept */
    int convert_after;  /* TCSPARSE_X_PRELOAD_CONVERT_AFTER: executions before a conversion */
    int trust_pointers; /* TCSPARSE_X_PRELOAD_TRUST_POINTERS: adopt a kept plan unchecked */
    int measure;        /* TCSPARSE_X_PRELOAD_MEASURE: time cuSPARSE against tcsparse */
} tc_hook_settings;

/* Fills *settings (INVALID_VALUE when it is NULL). */
tcsparseStatus_t tc_hook_get_settings(tc_hook_settings *settings);

#ifdef __cplusplus
}
#endif

#endif /* TCSPARSE_HOOK_H */
