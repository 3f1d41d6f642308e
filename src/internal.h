/* Internal definitions shared by the host sources: struct bodies of the opaque types. */
#ifndef TC_INTERNAL_H
#define TC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "tcsparse_hook.h"

/* Magic values: set at create, wiped at destroy, so that use after destroy is caught
 * (as long as the memory has not been reused). */
#define TC_MAGIC_HANDLE 0x74634831u
#define TC_MAGIC_SPMAT 0x74635331u
#define TC_MAGIC_DNMAT 0x74634431u
#define TC_MAGIC_DEAD 0xdeaddeadu

struct tc_plan; /* plan.h */

/* A kind of call, the key of measured decisions: operation (TC_SEL_OP_SPMM 0 or
 * TC_SEL_OP_SDDMM 1), N (SpMM) or the inner dimension K (SDDMM), A/B and C types (TC_T_*),
 * math mode. */
typedef struct {
    int op;
    int64_t n;
    int ab_type, c_type, tf32;
    int path; /* the tensor-core path (tcsparsePath_t) in the keys of kernel tuning (tune.c);
               * 0 in the route's keys */
} tc_call_kind;

static inline int tc_call_kind_eq(const tc_call_kind *a, const tc_call_kind *b)
{
    return a->op == b->op && a->n == b->n && a->ab_type == b->ab_type &&
           a->c_type == b->c_type && a->tf32 == b->tf32 && a->path == b->path;
}

/* The measurement on the executions themselves (route.c, select.h): one kind of call at a
 * time per plan.  A sample is a pair of events around one execution; its time is read back
 * by a later call (cudaEventQuery, no synchronisation). */
#define TC_NCAND 5 /* the paths a call may be measured on: select.h's TC_SEL_CAND_* */
#define TC_EXPLORE_PAIRS (TC_NCAND * 3) /* TC_SEL_NCAND x TC_SEL_EXPLORE_SAMPLES */
/* calls of other kinds after which an unfinished measurement is abandoned (its kind did not
 * come back: a one-off N), so that those kinds can be measured */
#define TC_EXPLORE_IDLE_CALLS 32
typedef struct {
    int active;
    tc_call_kind kind;      /* the kind being measured */
    int ncand;
    int cand[TC_NCAND];     /* TC_SEL_CAND_*, the model's choice first */
    int issued[TC_NCAND], done[TC_NCAND], dropped[TC_NCAND];
    float best_ms[TC_NCAND]; /* fastest sample of each candidate; negative: none yet */
    int next;               /* candidate being sampled (its samples run back to back) */
    int calls;              /* executions since the kind was first seen */
    int idle;               /* calls of other kinds since this kind's last call */
    cudaEvent_t ev[TC_EXPLORE_PAIRS][2];
    int ev_cand[TC_EXPLORE_PAIRS]; /* 1 + candidate index of a pending sample; 0: free */
    int nev;                /* pairs created */
} tc_explore;

/* The selector's numbers behind a model decision: the reason text is formatted from them
 * only when it is read (tcsparseGetLastRoute) or logged, not on every call (snprintf of
 * seven numbers was a measurable part of the routed path's per-call host time). */
typedef struct {
    int kind;      /* 0: none (the reason text is final); 1: SpMM model; 2: SDDMM model;
                    * 3: SpMM measured (ms, calls) */
    int autoroute, balanced, occ_known, bps_base, bps_balanced, sm_count;
    double us_tc, us_cusparse, ratio, threshold;
    int alg3;                 /* SpMM: the cuSPARSE route's CSR_ALG3 was predicted faster */
    double us_cusparse_alg3;  /* its prediction (< 0: not considered) */
    float ms[TC_NCAND];       /* kind 3: base, balanced, cuSPARSE, CSR_ALG3, CUDA cores
                               * (< 0: none) */
    int calls;                /* kind 3: executions measured on (0: at _preprocess) */
} tc_reason_args;

/* A cuSPARSE CSR_ALG3 workspace of the handle's (src/cusparse/fallback.c): preprocessed for one sparse
 * descriptor's structure and one call shape.  The key holds everything the preprocessing may
 * depend on except the dense arrays' addresses (their alignment is in it). */
typedef struct {
    uint64_t serial;          /* the sparse descriptor's serial number; 0: a free entry */
    uint64_t gen;             /* its struct_gen: moves whenever the structure arrays do */
    int64_t ar, ac, annz, br, bc, bld, cr, cc, cld;
    int ot, it, base, avt, bvt, bord, cvt, cord, ct, device, align, pad_;
} tc_alg3_key;

typedef struct {
    tc_alg3_key key;
    void *buf;                /* device workspace, preprocessed */
    size_t bytes;
    int failed;               /* cuSPARSE refused CSR_ALG3: the key runs ALG_DEFAULT */
    uint64_t used;            /* least recently used entry is replaced */
} tc_alg3_entry;

#define TC_ALG3_ENTRIES 4


struct tcsparseContext {
    uint32_t magic;
    cudaStream_t stream;
    tcsparsePointerMode_t pointer_mode;
    tcsparseMathMode_t math;
    tcsparseRoute_t route;
    /* Created on first use (needs a GPU); kept in step with stream and pointer mode. */
    cusparseHandle_t cusp;
    int device;           /* CUDA device current when cusp was created, -1 before */
    int sm_count;         /* of that device, 0 before */
    int cc_major, cc_minor;
    tcsparseRouteInfo_t last_route;
    /* last_route.reason still to be formatted from these (kind != 0): see route.h */
    tc_reason_args pending_reason;
    /* What the handle's caller asked through include/tcsparse_hook.h (the cuSPARSE
     * interposer): mode, TC_HOOK_* bits (0: the library's ordinary behaviour), read through
     * tc_hook_on; deferred, whether the last execute or preprocess left its cuSPARSE work to
     * the caller (tc_hook_deferred); learning, whether the last execute ran while the route
     * was still measuring its kind of call (tc_hook_learning). */
    struct {
        unsigned mode;
        int deferred;
        int learning;
    } hook;
    /* CSR_ALG3 workspaces for the cuSPARSE route (fallback.c), freed at destroy.  Kept per
     * handle: a handle's calls are ordered on its stream, so a workspace is never used by two
     * calls at once (tcsparseSetStream waits for the old stream, or retires them). */
    tc_alg3_entry alg3[TC_ALG3_ENTRIES];
    uint64_t alg3_clock;
};

struct tcsparseSpMatDescr {
    uint32_t magic;
    int is_const;                 /* created by a CreateConst* function */
    tcsparseFormat_t format;      /* CSR, CSC or COO */
    int64_t rows, cols, nnz;
    /* CSR: row offsets / column indices; CSC: column offsets / row indices;
     * COO: row indices / column indices. */
    void *offsets;
    void *indices;
    void *values;
    tcsparseIndexType_t offsets_type; /* COO: equals indices_type */
    tcsparseIndexType_t indices_type;
    tcsparseIndexBase_t base;
    cudaDataType value_type;
    int batch_count;              /* 1 unless a strided batch was set */
    int64_t offsets_batch_stride; /* CSR: offsets; COO: whole batch stride */
    int64_t values_batch_stride;  /* CSR: columns and values */
    /* Mirror descriptor for the cuSPARSE path, created on first use and kept in step. */
    cusparseSpMatDescr_t cusp;
    /* struct_gen and the values array when the mirror was last set (fallback.c): comparing
     * these costs nothing, asking cuSPARSE (cusparseCsrGet) costs a call per execution.
     * The structure arrays change only through Set*Pointers, which moves struct_gen. */
    void *cusp_values;
    uint64_t cusp_gen;
    /* Tensor-core plan, NULL when none is built; see plan.h. */
    struct tc_plan *plan;
    /* Held by every call that uses the descriptor (plan, mirror) and by the setters: several
     * threads, each with its own handle, may share the descriptor (plan.h).  plan is read and
     * written only under it. */
    pthread_mutex_t mu;
    /* Bytes of the last plan refused because it exceeds TCSPARSE_CACHE_BYTES (0: none); no
     * rebuild is tried until the structure changes. */
    size_t plan_refused;
    /* Bytes of the last plan refused because it left less device memory free than
     * TCSPARSE_MEM_RESERVE (0: none); no build starts until the device has room for a plan of
     * that size and the reserve. */
    size_t mem_refused;
    /* tcsparseReorder_t of the plan (reorder_api.c); 0 = TCSPARSE_REORDER decides */
    int reorder;
    /* orderings the plan may choose from, bit k = tcsparseOrdering_t k (reorder_api.c); 0 =
     * TCSPARSE_X_REORDER_ORDERINGS decides */
    int reorder_orderings;
    /* Late ordering (late.c, TCSPARSE_REORDER_LATE), under mu like plan. */
    struct tc_late {
        int state;               /* tcsparseLateState_t; 0 (NONE) until first looked at */
        int looked;              /* state was set from the reorder mode */
        tc_call_kind kind;       /* the kind of call of the trial (path 0) */
        struct tc_plan *other;   /* the plan that is not current: the caller's order's during
                                  * the trial, then the loser until it can be freed */
        int pick_other;          /* this call runs on other (a sample of the trial) */
        int sample;              /* this call's event pair in x, or -1 */
        int sampling;            /* the ordered plan has settled: calls are being timed */
        int issued, idle, calls;
        int plan_calls;          /* calls that take part (tc_late_path_in) the current
                                  * plan ran while waiting */
        int untimed;             /* bit p: a sample on plan p ran cuSPARSE outside the library
                                  * (the interposer's deferred calls): p cannot be timed */
        /* the samples, on route.c's sampler: candidate 0 the caller's order's plan, 1 the
         * ordered plan (x.done, x.best_ms); the events' CUDA context and device */
        tc_explore x;
        unsigned long long ctx;
        int dev;
        double build_ms;
        int64_t caller_blocks;   /* blocks of the caller's order's plan */
        double reach;            /* the most blocks a round's plan may keep, as a share of
                                  * caller_blocks, to be timed (tc_late_path_in) */
        /* rounds: 0 tries first-col against the caller's order, 1 bfs against the plan round
         * 0 kept (late.c); the round's ordering, round 0's outcome, and the ordering of the
         * plan kept (what a rebuild builds) */
        int round, ordering, prev_state, kept_ordering;
        char note[128];          /* what this call's begin decided, for its route reason */
    } late;
    /* Unique per descriptor created (never 0): keys the handles' CSR_ALG3 workspaces, which
     * a descriptor created later at the same address must not find. */
    uint64_t serial;
    /* Counts the structure setters (Set*Pointers, even with the same arrays: a structure
     * rewritten in place is announced that way; strided batch): the CSR_ALG3 workspaces'
     * preprocessing and the mirror follow it. */
    uint64_t struct_gen;
    /* The device-side guard (tc_hook_spmat_guard, src/api/hook.c), NULL until first asked for;
     * under mu. */
    struct tc_guard *guard;
    /* The transposed view (tc_plan_transposed, plan.h): a descriptor of the transpose over the
     * same arrays, whose plan serves SpMM with opA = TRANSPOSE; NULL until first needed.  Its
     * own mu is taken after this one's. */
    struct tcsparseSpMatDescr *tr;
    /* In a transposed view: the descriptor it views (whose guard vouches for its arrays). */
    struct tcsparseSpMatDescr *parent;
    /* A plan build refused because the arrays no longer matched the armed guard's fingerprint
     * (plan.c, tc_guard_vouches): that fingerprint and the structure's generation then. */
    int guard_refused;
    uint64_t guard_refused_fp, guard_refused_gen;
};

/* A descriptor's device-side guard: while armed (and struct_gen unchanged since), every
 * tensor-core SpMM on the descriptor first checks on the device that the structure arrays
 * still hash to fp (a CUDA-core SpMM: that the row offsets hash to fp_off, where known), and
 * computes from the arrays instead where they do not (route_spmm.c).
 * Its memory also serves the descriptor's fingerprints (hook.c), armed or not. */
struct tc_guard {
    int armed;
    uint64_t fp;
    /* The row offsets' own fingerprint, for the CUDA-core path, which reads the caller's
     * columns as they are and depends on the offsets alone (its row schedule): known
     * (fp_off_ok) where fp is the last fingerprint computed on these arrays (last_*). */
    uint64_t fp_off;
    int fp_off_ok;
    uint64_t last_fp, last_fp_off;
    const void *last_off;
    size_t last_off_bytes;
    int have_last;
    uint64_t gen;                   /* the descriptor's struct_gen when armed */
    const void *off, *idx;          /* the arrays checked, and their bytes */
    size_t off_bytes, idx_bytes;
    int device;                     /* where dev lives */
    unsigned long long context;     /* tc_context_id() at allocation: after a device reset
                                     * the memory is gone and only forgotten */
    /* Guarded executions on different streams must not overlap (one dev for all): each
     * records `done` on its stream, and one on another stream waits for it first. */
    cudaEvent_t done;
    cudaStream_t last;
    int has_last;
    struct tc_guard_dev_s *dev;     /* tc_guard_dev (kernels.h), device memory */
    volatile int *tripped;          /* pinned host word the check raises on a mismatch */
    unsigned long long *host_fp;    /* pinned, two words beside tripped:
                                     * tc_hook_spmat_fingerprint's */
};
/* Frees d->guard (descriptor destruction, under mu). */
void tc_guard_free(struct tcsparseSpMatDescr *d);

/* d's guard where it is armed for d's present structure (armed, and no structure setter
 * since), else NULL; under d's mu. */
static inline struct tc_guard *tc_guard_armed(const struct tcsparseSpMatDescr *d)
{
    struct tc_guard *g = d->guard;
    return g != NULL && g->armed && g->gen == d->struct_gen ? g : NULL;
}

struct tcsparseDnMatDescr {
    uint32_t magic;
    int is_const;
    int64_t rows, cols, ld;
    void *values;
    cudaDataType value_type;
    tcsparseOrder_t order;
    int batch_count;
    int64_t batch_stride;
    cusparseDnMatDescr_t cusp; /* mirror for the cuSPARSE path, created on first use */
    void *cusp_values;         /* the array the mirror was last given */
};

/* Validity checks used by every public function (non-NULL and magic intact). */
static inline int tc_handle_ok(const struct tcsparseContext *h)
{
    return h != NULL && h->magic == TC_MAGIC_HANDLE;
}
static inline int tc_spmat_ok(const struct tcsparseSpMatDescr *d)
{
    return d != NULL && d->magic == TC_MAGIC_SPMAT;
}
static inline int tc_dnmat_ok(const struct tcsparseDnMatDescr *d)
{
    return d != NULL && d->magic == TC_MAGIC_DNMAT;
}

/* Whether the handle's caller asked for the hook mode `bit` (TC_HOOK_*, tcsparse_hook.h). */
static inline int tc_hook_on(const struct tcsparseContext *h, unsigned bit)
{
    return (h->hook.mode & bit) != 0;
}

/* Size in bytes of one index of a tcsparseIndexType_t, 0 when unsupported by tcsparse. */
static inline size_t tc_index_size(tcsparseIndexType_t t)
{
    return t == TCSPARSE_INDEX_64I ? 8 : t == TCSPARSE_INDEX_32I ? 4 : 0;
}

/* Size in bytes of one element of a cudaDataType, 0 when unsupported by tcsparse. */
size_t tc_dtype_size(cudaDataType t);
/* Name of a cudaDataType for messages ("CUDA_R_32F"). */
const char *tc_dtype_name(cudaDataType t);

#endif
