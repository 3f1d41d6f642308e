/**
 * @file tcsparse_ext.h
 * @brief tcsparse extensions that cuSPARSE lacks: math mode, route forcing, route read-back,
 *        tensor-core format statistics.
 */
#ifndef TCSPARSE_EXT_H
#define TCSPARSE_EXT_H

#include "tcsparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How FP32 operands are multiplied on Tensor Cores. */
typedef enum {
    /** FP32 inputs: 3xTF32 split (big + small parts), FP32-level error.  The default. */
    TCSPARSE_MATH_DEFAULT = 0,
    /** FP32 inputs: plain TF32 (10-bit mantissa), like cuBLAS's TF32 mode.  Opt-in. */
    TCSPARSE_MATH_TF32 = 1
} tcsparseMathMode_t;

/** Which path executes SpMM/SDDMM. */
typedef enum {
    /** Decide per call from the plan's statistics (the default). */
    TCSPARSE_ROUTE_AUTO = 0,
    /** Tensor cores whenever the operation is eligible; the kernel variant is chosen. */
    TCSPARSE_ROUTE_TC = 1,
    /** Always cuSPARSE. */
    TCSPARSE_ROUTE_CUSPARSE = 2,
    /** Tensor cores, base kernel (one thread block per row window), when eligible. */
    TCSPARSE_ROUTE_TC_BASE = 3,
    /** Tensor cores, balanced kernel (fixed share of TC blocks per thread block). */
    TCSPARSE_ROUTE_TC_BALANCED = 4,
    /** SpMM and SDDMM on tcsparse's CUDA-core CSR kernels (FP32 accumulation, in the order
     *  of a row schedule kept with the matrix's plan) where they take the call, cuSPARSE
     *  otherwise. */
    TCSPARSE_ROUTE_CUDA_CORE = 5
} tcsparseRoute_t;

/** Path actually taken by a call. */
typedef enum {
    TCSPARSE_PATH_NONE = 0,      /**< no call yet on this handle */
    TCSPARSE_PATH_CUSPARSE = 1,
    TCSPARSE_PATH_TC_BASE = 2,
    TCSPARSE_PATH_TC_BALANCED = 3,
    TCSPARSE_PATH_CUDA_CORE = 4  /**< tcsparse's CUDA-core CSR SpMM or SDDMM */
} tcsparsePath_t;

/** A routing decision, as recorded for the last SpMM/SDDMM call on a handle. */
typedef struct {
    tcsparsePath_t path;
    /** Human-readable kernel name, e.g. "tc_spmm_base_3xtf32" or "cusparseSpMM(CSR_ALG2)". */
    char kernel[64];
    /** One line: why this path was chosen. */
    char reason[160];
    /** Model predictions in microseconds; negative when not computed. */
    double predicted_tc_us;
    double predicted_cusparse_us;
} tcsparseRouteInfo_t;

/** ME-TCF statistics of a sparse matrix (16-row windows, 16x8 blocks). */
typedef struct {
    int64_t rows, cols, nnz;
    int64_t windows;             /**< ceil(rows / 16) */
    int64_t empty_windows;       /**< windows with no nonzero */
    int64_t blocks;              /**< 16x8 tensor-core blocks */
    int64_t max_blocks_per_window;
    double mean_nnz_per_block;   /**< nnz / blocks (0 when there are no blocks) */
    double mean_blocks_per_window;
    /** Windows by block count: [0]=0, [1]=1, [2]=2, [3]=3-4, [4]=5-8, ..., [k]=2^(k-2)+1..2^(k-1),
     *  last bucket open-ended. */
    int64_t blocks_per_window_hist[16];
    int64_t metcf_bytes;         /**< win_off + blk_off + blk_pos + blk_col + value index */
    int64_t csr_bytes;           /**< CSR with int32 indices and offsets, no values */
    /* Row reordering (docs/reorder.md).  With reordering off, reorder_mode is OFF and the
     * other fields are zero. */
    int32_t reorder_mode;        /**< tcsparseReorder_t in effect (OFF, AUTO or ALWAYS) */
    int32_t reorder_ordering;    /**< tcsparseOrdering_t kept; 0 = caller's order */
    double reorder_ms;           /**< host time spent choosing (copy, orderings, counts); 0
                                  *   when first-col alone is ordered on the GPU, inside the
                                  *   conversion (docs/reorder.md) */
    double reorder_nnz_per_block_before; /**< nonzeros per block in the caller's order; 0
                                          *   when not counted (first-col forced on CSR: ordered
                                          *   on the GPU, docs/reorder.md) */
    double reorder_nnz_per_block_after;  /**< with the ordering kept */
    /* Late ordering (TCSPARSE_REORDER_LATE): where it stands for this descriptor.  Two
     * rounds (docs/reorder.md): first-col against the caller's order, then, where B's
     * gathered rows overflow L2, bfs against the plan the first kept; the fields below are
     * the latest round's, and between the rounds the state is WAITING again. */
    int32_t late_state;          /**< tcsparseLateState_t */
    int32_t late_calls;          /**< executions the trial took (build to decision) */
    double late_build_ms;        /**< host wall time of the round's plan's build */
    float late_ms_caller;        /**< fastest timed call on the plan set aside: the caller's
                                  *   order's in round 0, round 0's choice in round 1 (< 0:
                                  *   none) */
    float late_ms_ordered;       /**< fastest timed call on the round's ordered plan (< 0:
                                  *   none) */
} tcsparseMetcfStats_t;

/** Where late ordering stands for a descriptor (tcsparseMetcfStats_t::late_state). */
typedef enum {
    TCSPARSE_LATE_NONE = 0,          /**< not in effect (another reorder mode, not CSR, ...) */
    TCSPARSE_LATE_WAITING = 1,       /**< waiting for a kind of call to settle on tensor cores */
    TCSPARSE_LATE_TRIAL = 2,         /**< both plans held; calls are being timed */
    TCSPARSE_LATE_KEPT_ORDERED = 3,  /**< an ordered plan is kept (reorder_ordering: which):
                                      *   it was faster, or the
                                      *   trial ended early (a capture, or calls that could
                                      *   not be timed; late_ms_* then tell what was timed) */
    TCSPARSE_LATE_KEPT_CALLER = 4,   /**< the caller's order was faster and is kept */
    TCSPARSE_LATE_NO_GAIN = 5,       /**< the ordering saves too few blocks: not timed */
    TCSPARSE_LATE_NOT_TRIED = 6      /**< given up: a stream capture before the trial (a
                                      *   captured graph may hold the plan), or the ordered
                                      *   plan could not be built or cached */
} tcsparseLateState_t;

tcsparseStatus_t tcsparseSetMathMode(tcsparseHandle_t handle, tcsparseMathMode_t mode);
tcsparseStatus_t tcsparseGetMathMode(tcsparseHandle_t handle, tcsparseMathMode_t *mode);
/** Sets the route for this handle.  The environment variable TCSPARSE_ROUTE
 *  (auto|tc|tc-base|tc-balanced|cuda-core|cusparse) overrides it when set.  With the
 *  automatic route, the first executions of a kind of SpMM or SDDMM call on a matrix (N or K,
 *  types, math mode) run each path the model predicts close to its fastest, and the CUDA-core
 *  kernel wherever it takes the call, three times, timed with CUDA
 *  events (no synchronisation), and later calls of that kind take the fastest; the last
 *  route's reason reads "exploring: ..." meanwhile and "measured on K calls: ..." after.
 *  Every one of those executions computes the full, correct result.  TCSPARSE_SELECT=model
 *  keeps the model's decision without measuring; TCSPARSE_SELECT=measure times the paths in
 *  tcsparseSpMM_preprocess instead (into a scratch copy of C).  On any route, the first
 *  tensor-core executions of a kind of FP32 SpMM call with N > 32 (and of plain TF32 SDDMM
 *  call with K > 32) also measure the kernel variants (6-9 calls, the reason then ends in
 *  "; tuning: ..."), and later calls run the fastest; TCSPARSE_X_TUNE=0 turns that off. */
tcsparseStatus_t tcsparseSetRoute(tcsparseHandle_t handle, tcsparseRoute_t route);
tcsparseStatus_t tcsparseGetRoute(tcsparseHandle_t handle, tcsparseRoute_t *route);
/** The decision taken by the last SpMM/SDDMM execution (or preprocess) on this handle.  The
 *  reason text of a model decision is written when it is first read, so this call, like every
 *  call on a handle, belongs to the one thread using the handle at a time. */
tcsparseStatus_t tcsparseGetLastRoute(tcsparseHandle_t handle, tcsparseRouteInfo_t *info);
/** ME-TCF statistics of a sparse matrix, building its plan on the GPU when needed. */
tcsparseStatus_t tcsparseSpMatGetMetcfStats(tcsparseHandle_t handle,
                                            tcsparseConstSpMatDescr_t spMatDescr,
                                            tcsparseMetcfStats_t *stats);

#ifdef __cplusplus
}
#endif

/* ---- row reordering (docs/reorder.md) --------------------------------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/** Whether the tensor-core plan of a sparse matrix reorders its rows.  Only the plan's rows
 *  move: B, C and the values array keep the caller's order and results are the same (within
 *  the precision's bound). */
typedef enum {
    /** The environment variable TCSPARSE_REORDER decides: late (also when unset), 0/off,
     *  1/auto, always, or an ordering name (cluster, first-col, degree, minhash, bfs: that one,
     *  forced). */
    TCSPARSE_REORDER_DEFAULT = 0,
    TCSPARSE_REORDER_OFF = 1,
    /** Keep the best ordering when it needs at least TCSPARSE_X_REORDER_MIN_GAIN percent
     *  (default 10) fewer 16x8 blocks than the caller's order. */
    TCSPARSE_REORDER_AUTO = 2,
    /** Keep the best ordering other than the caller's, whatever it gains (measurements). */
    TCSPARSE_REORDER_ALWAYS = 3,
    /** The plan is built in the caller's order; once a kind of call has settled on tensor
     *  cores, one call builds the first-col ordering on the GPU (CSR only), and when it has
     *  2% fewer blocks (TCSPARSE_X_REORDER_MIN_GAIN percent when that is set) the next calls
     *  of that kind time both plans (CUDA events, no synchronisation) and keep the faster
     *  (docs/reorder.md, "Late ordering").  The first call's build is not lengthened; the
     *  later one costs a few calls' time, once.  Off under TCSPARSE_SELECT=model. */
    TCSPARSE_REORDER_LATE = 4
} tcsparseReorder_t;

/** Orderings a plan may keep (tcsparseMetcfStats_t::reorder_ordering). */
typedef enum {
    TCSPARSE_ORDERING_IDENTITY = 0,  /**< the caller's order */
    TCSPARSE_ORDERING_CLUSTER = 1,   /**< DTC-SpMM's two-level MinHash LSH clustering */
    TCSPARSE_ORDERING_FIRST_COL = 2, /**< by first column, then degree */
    TCSPARSE_ORDERING_DEGREE = 3,    /**< by degree descending, then first column */
    TCSPARSE_ORDERING_MINHASH = 4,   /**< by one MinHash of the column set, then degree */
    TCSPARSE_ORDERING_BFS = 5        /**< breadth-first over rows and columns: rows close in
                                      *   the graph close in the order (L2 locality of B) */
} tcsparseOrdering_t;

/** Sets the reordering of the descriptor's tensor-core plan; a change drops a plan already
 *  built (the next call builds it again).  Unknown values give INVALID_VALUE. */
tcsparseStatus_t tcsparseSpMatSetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t mode);
tcsparseStatus_t tcsparseSpMatGetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t *mode);
/** The orderings the descriptor's plan chooses from with AUTO or ALWAYS: a bit mask, bit k for
 *  tcsparseOrdering_t k (CLUSTER .. BFS); 0, the default, leaves it to the environment
 *  variable TCSPARSE_X_REORDER_ORDERINGS (default: all five).  First-col alone
 *  (1u << TCSPARSE_ORDERING_FIRST_COL) on a CSR matrix is ordered on the GPU inside the plan
 *  build (milliseconds); the others on the host (seconds on 10M
 *  nonzeros).  An ordering named by TCSPARSE_REORDER still wins for a descriptor left at
 *  TCSPARSE_REORDER_DEFAULT.  A change drops a plan already built.  A mask naming no ordering
 *  (bit 0 alone) or a bit above BFS gives INVALID_VALUE. */
tcsparseStatus_t tcsparseSpMatSetReorderOrderings(tcsparseConstSpMatDescr_t spMatDescr,
                                                  unsigned orderings);
tcsparseStatus_t tcsparseSpMatGetReorderOrderings(tcsparseConstSpMatDescr_t spMatDescr,
                                                  unsigned *orderings);
/** "identity", "cluster", "first-col", "degree", "minhash" or "bfs"; NULL when out of range. */
const char *tcsparseGetOrderingName(tcsparseOrdering_t ordering);

#ifdef __cplusplus
}
#endif

#endif /* TCSPARSE_EXT_H */
