/* The per-sparse-matrix plan: ME-TCF on the GPU plus statistics and the balanced kernel's
 * schedule, built on first need and cached with the descriptor. */
#ifndef TC_PLAN_H
#define TC_PLAN_H

#include "config.h"
#include "internal.h"
#include "kernels.h"

/* A decision measured for one kind of call (tc_call_kind, internal.h): at _preprocess
 * (TCSPARSE_SELECT=measure, SpMM) or on the first executions (route.c). */typedef struct tc_measured {
    tc_call_kind kind;
    tcsparsePath_t path;    /* the fastest of the candidates */
    float ms[TC_NCAND];     /* by TC_SEL_CAND_* (select.h): TC base, TC balanced, cuSPARSE,
                             * its CSR_ALG3, the CUDA-core CSR kernel; negative: not
                             * measured */
    int alg3;               /* path is cuSPARSE and CSR_ALG3 was the faster algorithm */
    int calls;              /* 0: measured at _preprocess; else the executions it took */
} tc_measured;

#define TC_PLAN_MEASURED 8

/* A kernel variant measured for one kind of call on one tensor-core path (tune.c): the
 * variants of kernels.h (TC_SPMM_VAR_*) and the fastest sample of each. */
typedef struct {
    tc_call_kind key;       /* path set */
    int variant;            /* the fastest */
    int nvar;
    int var[4];
    float ms[4];            /* by position in var; negative: not measured */
    int calls;              /* executions the measurement took */
} tc_tuned;
#define TC_PLAN_TUNED 8

struct tc_plan {
    tc_dev_metcf dev;
    tcsparseMetcfStats_t stats;
    int device;            /* CUDA device the arrays live on */
    unsigned long long context; /* tc_context_id() when it was built (0: not known) */
    double convert_ms;     /* host wall time of the conversion, synchronisation included */
    /* balanced kernel: chunks of at most chunk_blocks blocks of one window */
    int32_t chunk_blocks;
    tc_chunk *chunks;      /* device */
    int32_t nchunks;
    int32_t *split_windows; /* device, after the chunks in their allocation: windows covered by
                             * more than one chunk */
    int32_t nsplit;
    /* the CUDA-core path's schedule of the caller's CSR arrays (kernels.h), built on its first
     * call (tc_plan_csr_sched); its bytes are counted in bytes below */
    tc_csr_sched csr;
    /* measured decisions, most recent last; the oldest is dropped when full */
    tc_measured measured[TC_PLAN_MEASURED];
    int nmeasured;
    tc_explore explore;
    /* kernel variants measured on the executions (tune.c): the measurement in progress
     * (its cand[] are variants) and the results, most recent last */
    tc_explore tune;
    tc_tuned tuned[TC_PLAN_TUNED];
    int ntuned;
    /* the cache (plan.c): device bytes, owning descriptor, place in the global LRU list */
    size_t bytes;
    struct tcsparseSpMatDescr *owner;
    struct tc_plan *lru_prev, *lru_next; /* prev: more recently used */
};

/* Concurrency.  Several threads, each with its own handle (a handle is used by one thread at a
 * time), may run calls on the same sparse descriptor.  Every public function that reaches
 * tc_plan_get or the cuSPARSE mirror holds the descriptor's mutex d->mu for its whole host-side
 * run (spmm.c, sddmm.c, tcsparseSpMatGetMetcfStats), so a plan is built once and cannot be
 * freed between tc_plan_get and the kernel launch.  The global LRU list of plans has its own
 * mutex, always taken after a descriptor's; eviction only try-locks other descriptors and skips
 * the busy ones, so there is no lock-order cycle.  A plan is freed (eviction, invalidation)
 * after cudaDeviceSynchronize, so kernels already queued never read freed memory.
 *
 * Setters that change the structure and destroy (tcsparse*SetPointers, *SetStridedBatch,
 * tcsparseDestroySpMat) must not run concurrently with a call using the same descriptor, as in
 * cuSPARSE. */

/* Frees the descriptor's plan, if any, and its transposed view's (destroy, set pointers,
 * strided batch change); the caller holds d->mu. */
void tc_plan_invalidate(struct tcsparseSpMatDescr *d);
/* The descriptor's plan, built on the handle's stream when missing (or built for another
 * device); the caller holds d->mu until it no longer uses the plan.  Invalid structure gives
 * INVALID_VALUE; a matrix beyond the kernels' limits, or a plan that does not fit
 * TCSPARSE_CACHE_BYTES, gives NOT_SUPPORTED; a failed allocation ALLOC_FAILED; all with a
 * message (route.c then falls back to cuSPARSE, except on INVALID_VALUE). */
tcsparseStatus_t tc_plan_get(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                             struct tc_plan **out);

/* A's CSR arrays as the CUDA-core kernels read them (transposed: the product's A is their
 * transpose). */
tc_csr_arrays tc_csr_arrays_of(const struct tcsparseSpMatDescr *A, int transposed);

/* The CUDA-core path's schedule on p, d's current plan (d untransposed CSR), built on the
 * handle's stream on first need (one synchronisation) and counted in the plan's bytes.
 * NOT_SUPPORTED where it would exceed TCSPARSE_CACHE_BYTES or TCSPARSE_MEM_RESERVE, inside a
 * stream capture, or past 2^31 rows or nonzeros; INVALID_VALUE where the offsets decrease;
 * ALLOC_FAILED; all with a message.  The caller holds d->mu. */
tcsparseStatus_t tc_plan_csr_sched(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                                   struct tc_plan *p, const tc_csr_sched **out);

/* Late ordering (late.c): the plan of d in an ordering (TC_ORD_FIRST_COL: on the GPU; TC_ORD_BFS:
 * on the host) built outside the cache (NOT_SUPPORTED where it cannot be ordered); entering a built plan in the cache
 * without making it d's current plan (NOT_SUPPORTED, p freed, when it cannot fit); freeing a
 * plan never cached; and freeing one of d's cached plans (current or late.other).  The
 * caller holds d->mu. */
tcsparseStatus_t tc_plan_build_late(tcsparseHandle_t h, struct tcsparseSpMatDescr *d,
                                    int ordering, struct tc_plan **out);
tcsparseStatus_t tc_plan_cache_add(struct tcsparseSpMatDescr *d, struct tc_plan *p);
void tc_plan_discard(struct tc_plan *p);
void tc_plan_release(struct tcsparseSpMatDescr *d, struct tc_plan *p);

/* The transposed view of d (held in d->tr, created on first need): a descriptor of the
 * transpose over d's own arrays (CSR <-> CSC with rows and columns swapped; COO with its two
 * index arrays swapped), brought up to date with d's arrays, values and reordering settings
 * on every call.  Its plan is the plan of the transpose, with its own measured decisions,
 * tuning and late ordering; d's structure setters and destruction drop it with d's own
 * (tc_plan_invalidate).  The caller holds d->mu, and takes the view's mu (after d's) while it
 * uses the view's plan.  NULL when out of host memory. */
struct tcsparseSpMatDescr *tc_plan_transposed(struct tcsparseSpMatDescr *d);
/* Frees d->tr (destruction of d, under d->mu). */
void tc_plan_transposed_free(struct tcsparseSpMatDescr *d);

/* Descriptor lock helpers (d may be const: the mutex guards caches). */
void tc_spmat_lock(const struct tcsparseSpMatDescr *d);
void tc_spmat_unlock(const struct tcsparseSpMatDescr *d);

/* The plan cache's state, for tests and tools: bytes and number of cached plans, the limit
 * (SIZE_MAX: unlimited) and evictions so far. */
typedef struct {
    size_t bytes, limit;
    int64_t plans, evictions;
} tc_plan_cache_info;
void tc_plan_cache_get_info(tc_plan_cache_info *info);
/* Takes TCSPARSE_CACHE_BYTES and TCSPARSE_X_FAULT_PLAN_ALLOC from the configuration again
 * (the cache takes them at the first plan lookup; after tc_config_reload, config.h); evicts
 * down to a lowered limit.  For tests. */
void tc_plan_cache_reconfigure(void);

/* TCSPARSE_MEM_RESERVE: the device memory a plan build leaves free on a device of `total`
 * bytes (config.h).  tc_plan_room: whether `need` more bytes leave it when `free_b` are free;
 * a plan build that would not is refused, and the route falls back to cuSPARSE. */
size_t tc_mem_reserve(const tc_config *c, size_t total);
int tc_plan_room(size_t free_b, size_t need, size_t reserve);

/* Bytes from p to the end of the device allocation holding it (cuMemGetAddressRange, found
 * through the runtime: no -lcuda).  Returns 0 when unknown: host memory, no driver entry
 * point, or TCSPARSE_X_CHECK_BUFFER=0.  spmm.c and sddmm.c refuse an externalBuffer smaller
 * than what _bufferSize asks for, instead of letting cuSPARSE write past it. */
int tc_device_room(const void *p, size_t *room);

/* Handles and descriptors are not freed at destroy but kept, with their magic wiped, in a
 * quarantine of the most recently destroyed TC_RETIRED_KEPT objects: a use after destroy or a
 * double destroy of one of them reads memory that is still allocated and gets a clear
 * INVALID_VALUE, even under AddressSanitizer.  Older ones are freed. */
#define TC_RETIRED_KEPT 256
void tc_retire(void *obj);

#endif
