/* The only header host C code includes from kernels/: extern "C" launchers.
 * Launchers return a tcsparseStatus_t and write a one-line message into err on failure. */
#ifndef TC_KERNELS_H
#define TC_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <driver_types.h>
#include "tcsparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The status of a kernel launch that failed with e: ARCH_MISMATCH where the build has no code
 * for this GPU, EXECUTION_FAILED otherwise. */
static inline tcsparseStatus_t tc_launch_status(cudaError_t e)
{
    return e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction
               ? TCSPARSE_STATUS_ARCH_MISMATCH
               : TCSPARSE_STATUS_EXECUTION_FAILED;
}

/* ---- the current CUDA context ------------------------------------------------------ */

/* The unique ID of the calling thread's current CUDA context (cuCtxGetId), or 0 where there is
 * none or it cannot be had.  cudaDeviceReset ends a device's primary context, and the next
 * one has a new ID: objects a cache keeps from the old context (pools, streams, events,
 * allocations, kernel attributes) are gone and must not be used. */
unsigned long long tc_context_id(void);

/* ---- structure fingerprint (fingerprint.cu) ------------------------------------------ */

/* Fingerprint of the bytes of two device arrays (sizes multiples of 4; either may be NULL),
 * computed on `stream` through the two device words dword[0..1] and the two pinned host
 * words hword[0..1], and waited for (tc_hook_spmat_fingerprint, tcsparse_hook.h): *fp of both
 * arrays, *fp_a of the first alone (what tc_guard_check_launch computes with b NULL).  0 on
 * success, -1 on any CUDA error (cleared).  Calls sharing the words must not overlap. */
int tc_fingerprint_arrays(const void *a, size_t a_bytes, const void *b, size_t b_bytes,
                          cudaStream_t stream, unsigned long long *dword,
                          unsigned long long *hword, uint64_t *fp, uint64_t *fp_a);

/* ---- the device-side guard (fingerprint.cu, spmm/spmm_guard.cu) --------------------------- */

/* Device state of one descriptor's guard (tc_hook_spmat_guard, tcsparse_hook.h): the running
 * sum of a check, the thread blocks that finished it, and its verdict, which the kernels
 * launched after it on the same stream read (1: the arrays hold the plan's structure). */
typedef struct tc_guard_dev_s {
    unsigned long long acc;
    unsigned long long fp[2]; /* tc_fingerprint_arrays' device words */
    unsigned int ticket;
    int verdict;
} tc_guard_dev;

/* Launches, on `stream`, the fingerprint of the two arrays (tc_fingerprint_arrays' function)
 * and its comparison with `expected` into g->verdict; on a mismatch it also writes 1 into
 * *tripped (host memory mapped for the device, or NULL).  g starts zeroed and is left ready
 * for the next check; checks of one g must be ordered on one stream.  No allocation, no
 * synchronisation. */
tcsparseStatus_t tc_guard_check_launch(const void *a, size_t a_bytes, const void *b,
                                       size_t b_bytes, uint64_t expected, tc_guard_dev *g,
                                       int *tripped, cudaStream_t stream, char *err,
                                       size_t errlen);

/* ---- conversion -------------------------------------------------------------------- */

/* Index arrays of a sparse matrix in device memory (see tc_sparse_view in src/plan/metcf.h). */
typedef struct {
    tcsparseFormat_t format; /* CSR, CSC or COO */
    int64_t rows, cols, nnz;
    const void *offsets;     /* CSR row offsets, CSC column offsets, COO row indices */
    const void *indices;     /* CSR column indices, CSC row indices, COO column indices */
    int offsets_64, indices_64;
    int base;
    /* device, rows entries, or NULL: the window position of each row (a permutation; row r
     * becomes row row_new[r] of the plan, which then keeps win_row) */
    const int32_t *row_new;
    /* TC_GPU_ORDER_FIRST_COL: the rows ordered first-col (docs/reorder.md) on the GPU, for
     * CSR without row_new (tc_convert_can_order; tc_convert_extra::gpu_ordered says whether
     * the plan took the order); 0: the rows as they are */
    int gpu_order;
    double gpu_order_min_gain; /* keep that order only with at least this fraction fewer
                                * blocks (< 0: always) */
} tc_convert_input;
#define TC_GPU_ORDER_FIRST_COL 1

/* ME-TCF in device memory (int32 arrays: rows, cols and nnz below 2^31). */
typedef struct {
    int64_t rows, cols, nnz;
    int32_t windows, blocks;
    int32_t *win_off;   /* windows+1; the start of the one allocation that also holds blk_off,
                         * blk_col, val_idx, blk_pos and the balanced schedule */
    int32_t *blk_off;   /* blocks+1 */
    uint8_t *blk_pos;   /* nnz */
    int32_t *blk_col;   /* blocks*8, -1 = padding */
    int32_t *val_idx;   /* nnz: position in the caller's values array */
    int32_t *win_row;   /* windows*16 or NULL (rows not reordered): the caller's row of each
                         * window row, -1 past the last row; kernels read and write row
                         * win_row[w*16+i] instead of w*16+i */
    int pooled;         /* win_off's allocation came from the conversion's memory pool */
    int win_row_inside; /* win_row is part of win_off's allocation (rows ordered on the GPU) */
} tc_dev_metcf;

/* One unit of work of the balanced kernel: blocks [begin, end) of window win; split != 0
 * when the window is shared by several chunks (its output is accumulated atomically). */
typedef struct {
    int32_t win, begin, end, split;
} tc_chunk;

/* What the conversion computes besides the arrays, on the device, so that the host needs
 * no copy of the window offsets: the statistics the selector reads and the balanced
 * kernel's schedule (chunks of at most chunk_blocks blocks of one window; every window,
 * even an empty one, has at least one chunk). */
typedef struct {
    /* in */
    int sm_count;             /* sizes the default chunk length (about four waves) */
    int32_t force_chunk;      /* > 0: this chunk length (TCSPARSE_X_CHUNK_BLOCKS) */
    size_t keep_scratch;      /* bytes of conversion scratch the device may keep pooled */
    int method;               /* 0: window-local for CSR with no row permutation and at most
                               * 2^18 columns, the sort otherwise; 1: always the sort
                               * (TCSPARSE_X_CONVERT_SORT=1; the tests compare both) */
    /* out */
    int used_local;           /* the window-local path ran (else the sort) */
    int gpu_ordered;          /* the rows were ordered on the GPU (in->gpu_order taken and
                               * the order kept): the plan has win_row */
    long long blocks_unordered; /* with in->gpu_order and a gain asked for (min_gain >= 0):
                                 * the blocks of the caller's order (else 0: not counted) */
    int64_t empty_windows, max_blocks_per_window;
    int64_t hist[16];         /* tcsparseMetcfStats_t's blocks_per_window_hist */
    int32_t chunk_blocks, nchunks, nsplit;
    tc_chunk *chunks;         /* inside the plan's allocation (freed with it) */
    int32_t *split_windows;   /* windows covered by more than one chunk, ascending */
    size_t dev_bytes;         /* bytes of the plan's allocations */
} tc_convert_extra;

/* The plan's one device allocation as tc_convert_gpu lays it out (16-byte aligned parts):
 * the upper bounds it is sized by (blocks <= (nnz + 7 min(windows, nnz)) / 8 and blocks <=
 * windows ceil(cols / 8); chunk slots of the balanced schedule, chunk_blocks blocks a chunk,
 * 0: the default), the place of each array, and the bytes.  win_rows: the plan keeps the
 * caller's row of each window row (rows ordered on the GPU). */
typedef struct {
    int64_t windows, blocks_bound, slots;
    size_t blk_off, blk_col, val_idx, blk_pos, chunks, split, win_row, bytes;
} tc_plan_layout;
tc_plan_layout tc_plan_layout_of(int64_t rows, int64_t cols, int64_t nnz, int chunk_blocks,
                                 int win_rows);

/* Builds ME-TCF on the GPU (rows permuted by in->row_new when not NULL; val_idx still
 * indexes the caller's values array), with the statistics and schedule of *x.  One
 * allocation (from the conversion's memory pool where it can; tc_dev_metcf_free waits for
 * the device before freeing it), laid out by tc_plan_layout_of, and one
 * synchronisation at the end, after which the plan may be used on any stream.  Invalid input
 * (offsets, indices out of range, duplicates) gives TCSPARSE_STATUS_INVALID_VALUE; sizes
 * beyond int32 give TCSPARSE_STATUS_NOT_SUPPORTED. */
tcsparseStatus_t tc_convert_gpu(const tc_convert_input *in, tc_dev_metcf *out,
                                tc_convert_extra *x, cudaStream_t stream, char *err,
                                size_t errlen);
void tc_dev_metcf_free(tc_dev_metcf *m);
/* Whether tc_convert_gpu orders the rows itself for in->gpu_order: CSR without row_new (on the
 * window-local path, or through the sort for wider matrices or when the sort is forced). */
int tc_convert_can_order(const tc_convert_input *in);

/* ---- conversion with row reordering (host code: src/plan/reorder_plan.c, docs/reorder.md) ---- */

struct tcsparseSpMatDescr;
struct tc_plan;

/* What a plan records about its reordering (tcsparseMetcfStats_t's reorder_* fields). */
typedef struct {
    int mode;       /* tcsparseReorder_t in effect: OFF, AUTO or ALWAYS */
    int ordering;   /* tcsparseOrdering_t kept; 0: the caller's order */
    double ms;      /* host wall time of copying the structure and choosing */
    int64_t blocks_before, blocks_after; /* caller's order and kept ordering; 0 when off */
} tc_reorder_info;

/* tc_convert_gpu (same arguments and results) after choosing a row ordering, when the
 * descriptor's reordering mode asks for one: the plan then has win_row.  With the mode OFF
 * or LATE it is exactly tc_convert_gpu.  late_ordering (a tcsparseOrdering_t, 0: none): late
 * ordering's plan in that ordering instead, kept whatever it gains: first-col on the GPU,
 * bfs on the host (NOT_SUPPORTED where tc_reorder_late_applies is false).  A structure that
 * is invalid is left to tc_convert_gpu to report, unreordered. */
tcsparseStatus_t tc_reorder_convert(const struct tcsparseSpMatDescr *d,
                                    const tc_convert_input *in, tc_dev_metcf *out,
                                    tc_convert_extra *x, cudaStream_t stream, int late_ordering,
                                    tc_reorder_info *info, char *err, size_t errlen);
/* Whether late ordering can build its first-col plan on the GPU for this input (CSR within
 * the GPU ordering's limits). */
int tc_reorder_late_applies(const tc_convert_input *in);
/* Copies info into the plan's statistics (after they are computed); win_row's bytes are
 * already in tc_convert_extra::dev_bytes. */
void tc_reorder_plan_done(struct tc_plan *p, const tc_reorder_info *info);

/* ---- SpMM -------------------------------------------------------------------------- */

enum { TC_T_F32 = 0, TC_T_F16 = 1, TC_T_BF16 = 2 };

typedef struct {
    int64_t M, K, N;
    const tc_dev_metcf *plan;
    int ab_type;           /* TC_T_*: type of A's values and of B */
    int c_type;            /* TC_T_F32 or ab_type */
    int tf32;              /* FP32 only: 1 = plain TF32, 0 = 3xTF32 */
    const void *a_val;     /* caller's values array of A */
    const void *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev; /* device pointer mode when non-NULL */
    float alpha, beta;                 /* host pointer mode */
    /* balanced kernel when chunks != NULL */
    const tc_chunk *chunks;
    int32_t nchunks;
    const int32_t *split_windows;      /* windows whose rows are pre-scaled by beta */
    int32_t nsplit;
    int variant;                       /* TC_SPMM_VAR_*: 0 (RULE) lets the launcher choose */
    /* device, or NULL: a guard's verdict (tc_guard_dev::verdict); where it is 0 the kernels
     * do nothing and tc_spmm_guard_fallback computes C instead */
    const int *guard;
} tc_spmm_args;

/* The caller's CSR arrays, for the guard's fallback and the CUDA-core CSR SpMM. */
typedef struct {
    int64_t nnz;
    const void *offsets, *indices;
    int offsets_64, indices_64;
    int base;
    int transposed; /* the product's A is the transpose of this CSR matrix (a->M its columns,
                     * a->K its rows) */
} tc_csr_arrays;

/* Launches, after tc_spmm_launch with a->guard set, a CUDA-core SpMM of the same call from the
 * caller's CSR arrays (FP32 accumulation) that runs only where the verdict is 0: C = alpha *
 * A * B + beta * C with a->plan unused (A the CSR matrix or, csr->transposed, its transpose:
 * C scaled by beta, then each nonzero's product added atomically into its row of C).  Offsets
 * outside [0, nnz] are clamped and columns outside the matrix skipped, so no array is read or
 * written out of bounds whatever the arrays hold.  No allocation, no synchronisation. */
tcsparseStatus_t tc_spmm_guard_fallback(const tc_spmm_args *a, const tc_csr_arrays *csr,
                                        cudaStream_t stream, char *err, size_t errlen);

/* Whether the CUDA-core CSR SpMM (tc_spmm_csr_launch) takes these dense operands: N, ldb and
 * ldc multiples of 4, B and C on 4-element boundaries (it reads and writes 4 columns at a
 * time). */
static inline int tc_spmm_csr_fits(const void *B, int64_t ldb, const void *C, int64_t ldc,
                                   int64_t N, int ab_type, int c_type)
{
    const uintptr_t b_vec = ab_type == TC_T_F32 ? 16 : 8, c_vec = c_type == TC_T_F32 ? 16 : 8;
    return N % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 && (uintptr_t)B % b_vec == 0 &&
           (uintptr_t)C % c_vec == 0;
}
/* The CUDA-core kernels' schedule of a CSR structure (kernels/spmm/spmm_csr_sched.cu; the
 * SDDMM's units are independent, the split rows' beta pass is the SpMM's):
 * units of at most TC_CSR_PIECE nonzeros, each a row or a piece of one, longest first.  The
 * first nsplit_units units are the pieces of the nsplit_rows rows longer than TC_CSR_PIECE
 * (split_rows), which the kernel scales by beta first and then adds into atomically; the
 * others are whole rows, by nonzeros descending (empty rows last: they write beta * C).
 * Device arrays in one allocation (mem), 12 bytes a unit and 4 a split row. */
#define TC_CSR_PIECE 256
/* The CUDA-core kernels' sizes (rows, columns, N or K) and nonzeros stay below this, so their
 * 32-bit counters (a position plus a step of at most 256) never wrap; the route table's
 * CUDA-core rows refuse larger calls. */
#define TC_CSR_MAX (INT32_MAX - 256)
typedef struct {
    void *mem;                    /* device; NULL: no schedule */
    size_t bytes;
    const int32_t *row, *start, *len; /* by unit: row, first nonzero (0-based position in the
                                       * arrays), nonzeros */
    const int32_t *split_rows;
    int32_t nunits, nsplit_units, nsplit_rows;
} tc_csr_sched;

/* Device bytes of the schedule of an M-row structure of nnz nonzeros (at most; what
 * tc_csr_sched_build allocates), and of its temporary arrays during the build.  0 where M or
 * nnz reaches 2^31. */
size_t tc_csr_sched_bytes(int64_t M, int64_t nnz, size_t *scratch);
/* Builds the schedule of the untransposed CSR structure csr of M rows on stream s and waits for
 * it (one synchronisation of s).  Offsets are clamped into [0, nnz] as the kernels read them.
 * NOT_SUPPORTED where M or nnz reaches 2^31 or s is capturing; ALLOC_FAILED; with a message. */
tcsparseStatus_t tc_csr_sched_build(const tc_csr_arrays *csr, int64_t M, cudaStream_t s,
                                    tc_csr_sched *out, char *err, size_t errlen);
/* Frees a schedule's memory (after the kernels that read it are done); out is zeroed. */
void tc_csr_sched_free(tc_csr_sched *out);

/* Whether the CUDA-core CSR SpMM takes the call: SUCCESS, or NOT_SUPPORTED with the reason
 * (A transposed, tc_spmm_csr_fits false, a size reaching TC_CSR_MAX).  Nothing launched. */
tcsparseStatus_t tc_spmm_csr_takes(const tc_spmm_args *a, const tc_csr_arrays *csr, char *err,
                                   size_t errlen);
/* Launches the CUDA-core CSR SpMM (kernels/spmm/spmm_csr.cu): C = alpha * A * B + beta * C
 * from the caller's CSR arrays (csr, untransposed; a->plan, a->chunks unused) in the order of
 * sched (csr's structure's schedule), FP32 accumulation, a group of lanes a unit.  Rows of
 * at most TC_CSR_PIECE nonzeros are written once; longer rows, into an FP32 C, are scaled by
 * beta first and their pieces added atomically (their sums' order varies between runs), and
 * into a half-precision C summed whole by one group and written once.  Columns outside
 * the matrix are skipped, so no array is read or written out of bounds.  With a->guard, it
 * does nothing where the verdict is 0 (tc_spmm_guard_fallback computes C then).
 * NOT_SUPPORTED (nothing launched) where tc_spmm_csr_takes refuses or sched is NULL.  No
 * allocation, no synchronisation. */
tcsparseStatus_t tc_spmm_csr_launch(const tc_spmm_args *a, const tc_csr_arrays *csr,
                                    const tc_csr_sched *sched, cudaStream_t stream, char *err,
                                    size_t errlen);

/* Kernel variants of an FP32 SpMM (spmm_launch.cu): the same products in the same order,
 * different tilings and caches.  RULE is the launcher's own choice; the others pin J (8 * J
 * columns a warp) and, for plain TF32 J = 4, the wide-L1 instance.  Which is fastest depends
 * on the plan and N in ways no rule fitted so far separates (docs/performance.md), so the
 * first executions of a kind of call measure them (src/route/tune.c). */
enum { TC_SPMM_VAR_RULE = 0, TC_SPMM_VAR_J4 = 1, TC_SPMM_VAR_J4_WIDE = 2, TC_SPMM_VAR_J8 = 3 };
#define TC_SPMM_MAX_VARIANTS 3
/* The variants worth measuring for a call (a->variant ignored), the launcher's own choice
 * first: FP32 on a plan with the pipelined kernel, N > 32 (one warp a thread block below:
 * J = 8 and the wide L1 lost there everywhere), and no kernel knob (TCSPARSE_X_SPMM_J,
 * TCSPARSE_X_SPMM_WIDE_L1, TCSPARSE_X_SPMM_PIPE, TCSPARSE_X_SPMM_PIPE_STAGES) pinning the
 * kernel.
 * Returns how many were written to var (0 or 1: nothing to measure). */
int tc_spmm_variants(const tc_spmm_args *a, int var[TC_SPMM_MAX_VARIANTS]);

/* Launches the tensor-core SpMM on the stream (no allocation, no synchronisation). */
tcsparseStatus_t tc_spmm_launch(const tc_spmm_args *a, cudaStream_t stream, char *err,
                                size_t errlen);
/* After a plan is built (never inside a stream capture), once per device: the function
 * attributes some SpMM kernel instances need (the wide-L1 carveout, spmm_launch.cu), set on
 * the current device. */
void tc_spmm_plan_ready(void);
void tc_sddmm_plan_ready(void); /* the same for the SDDMM kernels (sddmm_launch.cu) */
/* Name of the kernel tc_spmm_launch would run, for logs. */
const char *tc_spmm_kernel_name(const tc_spmm_args *a);
/* Warps per thread block and the maximum number of resident thread blocks per SM of the
 * kernel tc_spmm_launch would run (for the selector's schedule simulation).  Reads the
 * types, N, chunks != NULL and, when plan is not NULL, the plan's windows and blocks (which
 * kernel form runs: spmm_launch.cu, pipe_wanted); with plan NULL, the CTA kernel's. */
tcsparseStatus_t tc_spmm_occupancy(const tc_spmm_args *a, int *warps_per_block,
                                   int *blocks_per_sm);

/* ---- SDDMM ------------------------------------------------------------------------- */

/* C = alpha * (A * B) o spy(C) + beta * C on the plan of C, A row-major M x K, B column-major
 * K x N (column j is K contiguous elements at B + j*ldb).  Needs no workspace. */
typedef struct {
    int64_t M, N, K;
    const tc_dev_metcf *plan; /* of C */
    int ab_type;              /* TC_T_F32 or TC_T_F16: type of A and B */
    int c_type;               /* TC_T_F32 or ab_type */
    int tf32;                 /* FP32 only: 1 = plain TF32, 0 = 3xTF32 */
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    void *C;                  /* the caller's values array of C */
    const float *alpha_dev, *beta_dev; /* device pointer mode when non-NULL */
    float alpha, beta;                 /* host pointer mode */
    /* chunked schedule (the plan's chunks: runs of blocks of one window) when non-NULL;
     * otherwise one thread block per window */
    const tc_chunk *chunks;
    int32_t nchunks;
    int variant;              /* TC_SDDMM_VAR_*: 0 (RULE) lets the launcher choose */
} tc_sddmm_args;

/* Kernel variants of a plain TF32 SDDMM (sddmm_launch.cu), the same products in the same
 * order: RULE is the launcher's own choice; PIPE and PIPE_WIDE pin the pipelined kernel
 * without and with the wide-L1 instance; REGB is the pipelined kernel with B's pieces in
 * registers instead of the shared-memory ring (faster on some inputs only:
 * docs/performance.md).  The executions measure them (src/route/tune.c). */
enum { TC_SDDMM_VAR_RULE = 0, TC_SDDMM_VAR_PIPE = 1, TC_SDDMM_VAR_PIPE_WIDE = 2,
       TC_SDDMM_VAR_REGB = 3 };
#define TC_SDDMM_MAX_VARIANTS 3
/* The variants worth measuring for a call (a->variant ignored), the launcher's choice first:
 * plain TF32 with FP32 C on a plan, the pipelined kernel's default ring, K > 32, and no SDDMM
 * kernel knob (TCSPARSE_X_SDDMM_PIPE, TCSPARSE_X_SDDMM_PIPE_STAGES, TCSPARSE_X_SDDMM_WIDE_L1)
 * pinning the kernel.  Returns how many were written (0 or 1: nothing to measure). */
int tc_sddmm_variants(const tc_sddmm_args *a, int var[TC_SDDMM_MAX_VARIANTS]);

/* Launches the tensor-core SDDMM on the stream (no allocation, no synchronisation). */
tcsparseStatus_t tc_sddmm_launch(const tc_sddmm_args *a, cudaStream_t stream, char *err,
                                 size_t errlen);
/* Whether the CUDA-core CSR SDDMM takes the call: SUCCESS, or NOT_SUPPORTED with the reason
 * (C's arrays transposed, A and B neither FP32 nor FP16, C neither FP32 nor A's type, a size
 * or the nonzeros reaching 2^31 - 256).  Any layout strides and alignment: where K, lda, ldb
 * and the pointers allow, it reads 4 elements at a time.  Nothing launched. */
tcsparseStatus_t tc_sddmm_csr_takes(const tc_sddmm_args *a, const tc_csr_arrays *csr, char *err,
                                    size_t errlen);
/* Launches the CUDA-core CSR SDDMM (kernels/sddmm/sddmm_csr.cu): each nonzero of C's CSR
 * arrays (csr; a->plan, a->chunks, a->tf32 unused) gets alpha * (row i of A . column j of B) +
 * beta * its old value (not read where beta is 0), in FP32 arithmetic, in the order of sched
 * (the structure's schedule, tc_csr_sched: any pieces of long rows are independent here).  A
 * row-major, B column-major as for tc_sddmm_launch.  A column index outside [0, N) reads
 * nothing (its product counts as 0).  NOT_SUPPORTED (nothing launched) where
 * tc_sddmm_csr_takes refuses or sched is NULL.  No allocation, no synchronisation. */
tcsparseStatus_t tc_sddmm_csr_launch(const tc_sddmm_args *a, const tc_csr_arrays *csr,
                                     const tc_csr_sched *sched, cudaStream_t stream, char *err,
                                     size_t errlen);
/* Name of the kernel tc_sddmm_launch would run, for logs. */
const char *tc_sddmm_kernel_name(const tc_sddmm_args *a);
/* Maximum number of resident thread blocks per SM of the kernel tc_sddmm_launch would run
 * (the selector's schedule simulation); reads only the types and K of a.  Without a usable
 * device it returns TCSPARSE_STATUS_ARCH_MISMATCH and leaves *blocks_per_sm 0. */
tcsparseStatus_t tc_sddmm_occupancy(const tc_sddmm_args *a, int *blocks_per_sm);

#ifdef __cplusplus
}
#endif

#endif
