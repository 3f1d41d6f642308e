/* Internal header of the cuSPARSE interposer (libtcsparse_preload.so), shared by its files:
 *   real.c    the real cuSPARSE functions, the settings (environment), the log, the rules of
 *             when a call may be routed;
 *   shadow.c  the tcsparse handles and descriptors mirroring the caller's, the plans kept
 *             from destroyed descriptors, the structures seen without a plan;
 *   choose.c  the measured choice between tcsparse and cuSPARSE per kind of call;
 *   preload.c the intercepted functions (what the interposer does: read it first).
 * The interposer is a client of tcsparse.h, tcsparse_ext.h and tcsparse_hook.h only. */
#ifndef TC_SHIM_H
#define TC_SHIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "tcsparse_hook.h"

#define TC_SHIM_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ real.c */

/* The real cuSPARSE functions the interposer defines names of. */
typedef struct {
    __typeof__(cusparseSpMM_bufferSize) *spmm_buffer_size;
    __typeof__(cusparseSpMM_preprocess) *spmm_preprocess;
    __typeof__(cusparseSpMM) *spmm;
    __typeof__(cusparseSDDMM_bufferSize) *sddmm_buffer_size;
    __typeof__(cusparseSDDMM_preprocess) *sddmm_preprocess;
    __typeof__(cusparseSDDMM) *sddmm;
    __typeof__(cusparseDestroySpMat) *destroy_spmat;
    __typeof__(cusparseCsrSetPointers) *csr_set_pointers;
    __typeof__(cusparseCscSetPointers) *csc_set_pointers;
    __typeof__(cusparseCooSetPointers) *coo_set_pointers;
    __typeof__(cusparseSpMatSetValues) *spmat_set_values;
    __typeof__(cusparseCsrSetStridedBatch) *csr_set_strided_batch;
    __typeof__(cusparseCooSetStridedBatch) *coo_set_strided_batch;
    __typeof__(cusparseDestroy) *destroy;
} tc_shim_real_fns;
extern tc_shim_real_fns tc_shim_real;

/* What tc_shim_init found and read, once per process. */
typedef struct {
    volatile int forked; /* set in a child of fork() (pthread_atfork): it only forwards */
    int ready;         /* every real function was found */
    int passthrough;   /* TCSPARSE_ROUTE=cusparse */
    int log;           /* TCSPARSE_LOG */
    int keep;          /* TCSPARSE_X_PRELOAD_KEEP (default 8) */
    int trust;         /* TCSPARSE_X_PRELOAD_TRUST_POINTERS=1: adopt without a check */
    int convert_after; /* TCSPARSE_X_PRELOAD_CONVERT_AFTER (default 2) */
    int measure;       /* TCSPARSE_X_PRELOAD_MEASURE (default 1): choose.c */
} tc_shim_settings;
extern tc_shim_settings tc_shim;

/* > 0 inside the interposer or a real call: such calls go straight to the real function. */
extern __thread int tc_shim_depth;

/* Finds the real functions and reads the environment, once (every entry point calls it
 * through tc_shim_route_on or tc_shim_top; the constructor too). */
void tc_shim_once(void);
/* Whether this call may be routed: the real functions exist, it is not a nested call, not a
 * forked child, not pass-through. */
int tc_shim_route_on(void);
/* Whether this call may touch the interposer's tables: not a nested call, and not a forked
 * child (which only forwards: the tables and tc_shim_lock are the parent's copies, and the
 * lock may have been held by another thread at the fork). */
int tc_shim_top(void);
/* One line "tcsparse-preload: ..." on stderr with TCSPARSE_LOG. */
void tc_shim_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Calls through to the real function with the depth raised; NOT_INITIALIZED if it is
 * missing. */
#define TC_REAL(field, ...)                                                            \
    (tc_shim_real.field == NULL                                                        \
         ? CUSPARSE_STATUS_NOT_INITIALIZED                                             \
         : (tc_shim_depth++, tc_shim_real_status = tc_shim_real.field(__VA_ARGS__),    \
            tc_shim_depth--, tc_shim_real_status))
extern __thread cusparseStatus_t tc_shim_real_status;

/* ------------------------------------------------------------------ shadow.c */

/* Guards every table of shadow.c; held (with the depth raised) around each routed call. */
extern pthread_mutex_t tc_shim_lock;

/* What a shadow sparse descriptor was made from. */
typedef struct {
    int format;
    int64_t rows, cols, nnz;
    const void *offsets, *indices;
    int offsets_type, indices_type, base, value_type;
} tc_spmat_sig;

/* ------------------------------------------------------------------ choose.c */

/* A kind of call (choose.c): everything about a call but the structure (whose shadow holds
 * the list) and the values; and the device it runs on, so that a kind measured (or settled on
 * cuSPARSE) on one GPU is measured again on another, with events of that device. */
typedef struct {
    int sddmm, opA, opB, ct, alg;
    int device; /* current at the call (the caller's handle's) */
    int64_t rows[2], cols[2], ld[2]; /* the dense operands: SpMM B, C; SDDMM A, B */
    int type[2], order[2];
} tc_call_shape;
typedef struct tc_choice tc_choice;
enum { TC_CHOICE_MEASURING, TC_CHOICE_ROUTE, TC_CHOICE_CUSPARSE }; /* a kind's state */
enum { TC_PATH_TCSPARSE = 0, TC_PATH_CUSPARSE = 1 };                /* who runs a call */

/* A kind's verdict (TC_CHOICE_*) from its completed samples, counts and fastest (ms):
 * cuSPARSE's; tcsparse's of its route's pick (phase 0 or 1); tcsparse's of its settled route
 * (phase 0, a subset).  MEASURING until cuSPARSE has TC_CHOICE_CU (3); then CUSPARSE where
 * TC_CHOICE_PICK (3) of the pick's are none of them faster; else, on TC_CHOICE_TC (6)
 * settled ones, ROUTE where their fastest is faster, CUSPARSE where not. */
int tc_choice_verdict(int cu_done, float cu_best, int pick_done, float pick_best,
                      int settled_done, float settled_best);
/* The kind's record in *list (moved to its front), made when `create`; NULL if none. */
tc_choice *tc_choice_find(tc_choice **list, const tc_call_shape *shape, int create);
void tc_choice_free_all(tc_choice **list);
/* With `read`, reads the samples that completed (never waits; not inside a stream capture,
 * where querying an event invalidates the capture); the kind's state. */
int tc_choice_poll(tc_choice *c, int read);
/* While measuring: who runs this call. */
int tc_choice_next(const tc_choice *c);
/* Times this call on `stream` for `path`: a slot for tc_choice_stop, or -1 (not timed). */
int tc_choice_start(tc_choice *c, int path, cudaStream_t stream);
/* Ends the timing of the slot (ok = 0: the call did not run that path; the sample is
 * dropped); phase: tc_choice_phase's for a tcsparse call, 0 for cuSPARSE's. */
void tc_choice_stop(tc_choice *c, int slot, cudaStream_t stream, int ok, int phase);
/* The phase of the timed call tcsparse just ran, from tc_hook_learning's answer: 2 its route
 * was trying its candidate paths, 1 it ran the route's pick while tuning or late ordering
 * went on, 0 the route had settled (also once TC_CHOICE_LEARN timed calls of the kind were 1
 * or 2). */
int tc_choice_phase(tc_choice *c, int learning);
/* Stops measuring: the route's own decisions stand (it sent the call to cuSPARSE itself). */
void tc_choice_settle(tc_choice *c);
/* The kind's state in words, for the log. */
void tc_choice_describe(const tc_choice *c, char *out, size_t n);

/* Kinds of call whose structure and shape were settled on the real cuSPARSE (measured, or
 * tcsparse's route sent them there: a model's decision or a case the tensor cores do not
 * take): later calls go to cuSPARSE at once, before any shadow is made (a small direct-mapped table; an entry pushed out only costs the full path
 * once more).  Stale entries are harmless: cuSPARSE reads the arrays as they are.  Lock held. */
int tc_verdict_cusparse(const tc_spmat_sig *sig, const tc_call_shape *shape, char *why,
                        size_t n);
void tc_verdict_set_cusparse(const tc_spmat_sig *sig, const tc_call_shape *shape,
                             const char *why);

/* The shadow of a caller's sparse descriptor, or a kept one (key NULL). */
typedef struct tc_shim_spmat {
    const void *key; /* the caller's descriptor; NULL for a kept orphan */
    tc_spmat_sig sig;
    tcsparseSpMatDescr_t shadow;
    int have_fp;
    uint64_t fp;
    int unverified; /* adopted from a kept plan; checked before tcsparse's own paths run on it */
    int guardable;  /* the shadow's device-side guard is set up (CSR, fingerprint known) */
    int guarded;    /* the guard is armed for this adoption (SpMM checked on the device) */
    tc_choice *choices; /* the kinds of call measured on this structure (choose.c) */
    unsigned renewals;  /* times the shadow was renewed (a stale plan dropped) */
    unsigned long long used; /* orphans: last use, for least-recently-used */
    struct tc_shim_spmat *next;
} tc_shim_spmat;

/* The mode of the interposer's tcsparse handles (tcsparse_hook.h): the route leaves the
 * cuSPARSE calls to the interposer, which logs them itself. */
#define TC_SHIM_MODE (TC_HOOK_DEFER_CUSPARSE | TC_HOOK_QUIET)

/* Reads a cuSPARSE sparse descriptor (the signature zeroed first, so that it compares as
 * bytes).  0 and a reason when tcsparse cannot mirror it.  No lock needed. */
int tc_shim_read_spmat(cusparseConstSpMatDescr_t d, tc_spmat_sig *s, const void **values,
                       char *why, size_t n);

/* All below: lock held. */

/* The tcsparse handle mirroring a cuSPARSE handle, with its stream and pointer mode; NULL
 * with a reason when it cannot be had. */
tcsparseHandle_t tc_shim_handle_get(cusparseHandle_t handle, cudaStream_t *stream, char *why,
                                    size_t n);
/* Frees the mirror of a cuSPARSE handle being destroyed, if any. */
void tc_shim_handle_drop(cusparseHandle_t handle);
/* Notes whether this thread's routed call runs on a capturing stream, and outside a capture
 * frees what earlier captured calls could not. */
void tc_shim_capture_note(cudaStream_t stream);
/* What tc_shim_capture_note found for this thread's call. */
int tc_shim_capturing(void);
/* The shadow of a caller's sparse descriptor d, made or refreshed, or a kept plan over the
 * same arrays taken over, from what tc_shim_read_spmat read of d (sig, values); NULL with a
 * reason when tcsparse cannot mirror it. */
tc_shim_spmat *tc_shim_spmat_get(cusparseConstSpMatDescr_t d, const tc_spmat_sig *sig,
                                 const void *values, char *why, size_t n);
/* Forgets the shadow of a descriptor whose structure may change; `orphan`: the descriptor is
 * being destroyed, so a plan that can be recognised later is kept.  1 when it had one. */
int tc_shim_spmat_forget(const void *d, int orphan);
/* Whether the shadow holds a tensor-core plan. */
int tc_shim_has_plan(const tc_shim_spmat *e);
/* The plan a call would use: the shadow's own (transposed = 0) or its transpose's. */
int tc_shim_has_plan_for(const tc_shim_spmat *e, int transposed);
/* An adopted plan is about to drive tcsparse's own paths (tensor cores, or a CUDA-core kernel
 * on the plan's row schedule): 1 to go ahead; 0 when it was stale or cannot be checked now
 * (e->unverified then tells which). */
int tc_shim_verify(tc_shim_spmat *e, cudaStream_t stream);
/* An adopted plan is about to run an SpMM: arms the shadow's device-side guard, which checks
 * the arrays on the caller's stream before the tensor cores use the plan (no wait).  0 where
 * there is no guard (CSC, COO, no fingerprint): tc_shim_verify then. */
int tc_shim_guard(tc_shim_spmat *e);
/* After a call that may have built the plan: its fingerprint and the guard's memory, once,
 * outside any capture. */
void tc_shim_note_plan(tc_shim_spmat *e, cudaStream_t stream);
/* Counts one more execution of the shadow's structure without a plan; returns the count. */
int tc_shim_seen_count(const tc_shim_spmat *e);
/* The executions counted so far (0: never seen). */
int tc_shim_seen_peek(const tc_shim_spmat *e);
/* A tcsparse dense descriptor mirroring a cuSPARSE one (const: read-only operand). */
tcsparseStatus_t tc_shim_dn_shadow(cusparseConstDnMatDescr_t d, int is_const,
                                   tcsparseDnMatDescr_t *out, char *why, size_t n);

#endif
