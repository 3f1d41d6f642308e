/* The GraphBLAS adapter's internals, shared by libtcsparse_grb and the preload module.
 *
 * A call goes: classify (grb_mxm.c) -> run it as an SpMM (grb_spmm.c) or an SDDMM
 * (grb_sddmm.c): acquire the operands' arrays (grb_operand.c) -> check pins (grb_pin.c) ->
 * compute T on a backend (grb_gpu.c, or grb_host.c for tests) -> restore the operands ->
 * T into C, or to GraphBLAS for mask / accum / replace.  Large host passes run on the host
 * lanes (lanes.h); the GPU backend's copies go through the staged-copy engine (xfer.h). */
#ifndef TC_GRB_INTERNAL_H
#define TC_GRB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <GraphBLAS.h>
#include "tcsparse_grb.h"
#include "lanes.h"

typedef GrB_Info (*tc_grb_mxm_fn)(GrB_Matrix C, const GrB_Matrix Mask, const GrB_BinaryOp accum,
                                  const GrB_Semiring semiring, const GrB_Matrix A,
                                  const GrB_Matrix B, const GrB_Descriptor desc);

/* The adapter: real_mxm receives every call it does not accelerate, with the caller's own
 * arguments.  who names the entry point in log lines. */
GrB_Info tc_grb_mxm(tc_grb_mxm_fn real_mxm, const char *who, GrB_Matrix C, const GrB_Matrix M,
                    const GrB_BinaryOp accum, const GrB_Semiring semiring, const GrB_Matrix A,
                    const GrB_Matrix B, const GrB_Descriptor desc);

/* ---------------------------------------------------------------- operands */

/* Value types the GPU takes; OTHER marks a mask of another type (its values are never
 * read by the adapter). */
typedef enum { TC_GRB_F32 = 0, TC_GRB_F64 = 1, TC_GRB_OTHER = 2 } tc_grb_vtype;

static inline size_t tc_grb_esize(tc_grb_vtype t) { return t == TC_GRB_F64 ? 8 : 4; }

/* A matrix's own settings that packing arrays into it resets to the defaults. */
typedef struct {
    int32_t sparsity_control;
    double hyper_switch, bitmap_switch;
} tc_grb_settings;
GrB_Info tc_grb_settings_get(GrB_Matrix X, tc_grb_settings *s);
GrB_Info tc_grb_settings_set(GrB_Matrix X, const tc_grb_settings *s);

/* The form a matrix's arrays were taken in.  CSC of X is CSR of X'. */
typedef enum { TC_FORM_CSR = 0, TC_FORM_CSC, TC_FORM_FULLR, TC_FORM_FULLC } tc_grb_form;

/* A matrix's arrays, taken from GraphBLAS.  With in_place, they belong to the user's matrix
 * (unpacked from it) and tc_grb_operand_release packs them back; otherwise they came from a
 * private copy and are freed. */
typedef struct {
    GrB_Matrix mat;           /* the user's matrix */
    int in_place;
    int held;                 /* arrays are out of mat (in_place) or owned (copy) */
    tc_grb_form form;
    GrB_Index nrows, ncols;   /* of the matrix as GraphBLAS sees it */
    GrB_Index nvals;
    tc_grb_vtype vtype;
    GrB_Index *p, *i;         /* sparse forms */
    void *x;
    GrB_Index p_size, i_size, x_size;
    bool iso;
    void *x_full;             /* iso values expanded (owned), else NULL */
    tc_grb_settings settings; /* the user's, which packing resets (in_place only) */
} tc_grb_operand;

/* What the operand will serve as: the sparse A of an SpMM (form CSR, or CSC when
 * transposed), the pattern of an SDDMM (CSR or CSC, whichever is cheaper), or a full
 * operand (FULLR or FULLC, whichever it is held in). */
typedef enum { TC_ROLE_SPARSE, TC_ROLE_PATTERN, TC_ROLE_FULL } tc_grb_role;

/* Takes X's arrays for role (transposed: used as X').  Zero-copy when X is held in a
 * suitable form and nounpack is 0.  Returns GrB_SUCCESS, or an error with nothing held. */
GrB_Info tc_grb_operand_acquire(tc_grb_operand *op, GrB_Matrix X, tc_grb_vtype vt,
                                tc_grb_role role, int transposed, int nounpack);
/* Gives the arrays back (packs them into the user's matrix, or frees the copy).  Safe to
 * call twice, and on an operand never acquired (zeroed).  Returns the first failure. */
GrB_Info tc_grb_operand_release(tc_grb_operand *op);
/* Values as a full array (iso ones expanded on first use); NULL when out of memory. */
const void *tc_grb_operand_values(tc_grb_operand *op);

/* Row-major or column-major dense view, element (r, c) at x[r*ld + c] or x[r + c*ld]. */
typedef struct {
    int64_t rows, cols, ld;
    int row_major;
    const void *x;
} tc_grb_dense;

/* 0-based CSR with GraphBLAS's 64-bit offsets and indices. */
typedef struct {
    int64_t rows, cols, nnz;
    const GrB_Index *p, *j;
    const void *x;            /* may be NULL for a pattern */
} tc_grb_csr;

/* The dense view of a full operand, transposed or not. */
tc_grb_dense tc_grb_operand_dense(tc_grb_operand *op, int transposed);
/* The CSR view of a sparse operand's form (CSC gives the CSR of X'). */
tc_grb_csr tc_grb_operand_csr(tc_grb_operand *op);
static inline tc_grb_dense tc_grb_dense_t(tc_grb_dense d)
{
    tc_grb_dense t = {d.cols, d.rows, d.ld, !d.row_major, d.x};
    return t;
}

/* ---------------------------------------------------------------- pins */

typedef struct tc_grb_pin tc_grb_pin;
struct tc_grb_pin_dev; /* backend state, grb_gpu.c */

typedef enum {
    TC_PIN_NONE = 0,   /* not pinned (or pinned in another form) */
    TC_PIN_HIT,        /* device copy up to date */
    TC_PIN_VALUES,     /* values changed: upload them again */
    TC_PIN_STRUCTURE   /* structure (or shape) changed: rebuild */
} tc_grb_pin_state;

struct tc_grb_pin {
    GrB_Matrix mat;
    unsigned flags;
    tc_grb_form form;
    tc_grb_vtype vtype;
    GrB_Index nrows, ncols, nvals;
    bool iso;
    const void *p_addr, *i_addr, *x_addr;
    uint64_t h_struct, h_values;
    struct tc_grb_pin_dev *dev; /* NULL until uploaded */
    tc_grb_pin *next;
};

/* All pin functions are called with the adapter lock held (tc_grb_lock). */
void tc_grb_lock(void);
void tc_grb_unlock(void);
tc_grb_pin *tc_grb_pin_find(GrB_Matrix X, tc_grb_form form);
/* Compares op with the pin, updates the pin's record, counts the outcome; returns what the
 * device copy needs.  A pin in another form gives TC_PIN_NONE. */
tc_grb_pin_state tc_grb_pin_check(tc_grb_pin *pin, const tc_grb_operand *op);
/* After a check that saw new content (st), when the call did not refresh the pin's device
 * copy (it failed or never reached the GPU): the next check rebuilds the copy. */
void tc_grb_pin_unsync(tc_grb_pin *pin, tc_grb_pin_state st);
/* Hash of n bytes; the same on every machine and thread count. */
uint64_t tc_grb_hash(const void *data, size_t n, uint64_t seed);

/* ---------------------------------------------------------------- backends */

typedef struct {
    double upload, compute, download; /* ms */
    char kernel[64];
} tc_grb_times;

/* 1 when the GPU backend can run (a CUDA device is visible); else 0 and the reason. */
int tc_grb_gpu_available(char *why, size_t n);

/* out (A.rows x B.cols) = A * B, in B's order (row-major with ld = B.cols, or column-major
 * with ld = A.rows: cuSPARSE takes B and C in one order).  pin/pin_state describe a pinned A
 * or B (NULL / TC_PIN_NONE when not pinned).  Returns 0, or -1 with a reason (nothing was
 * written to the user's matrices; the caller may fall back to GraphBLAS). */
int tc_grb_gpu_spmm(tc_grb_vtype vt, const tc_grb_csr *A, tc_grb_pin *pin_a,
                    tc_grb_pin_state st_a, const tc_grb_dense *B, tc_grb_pin *pin_b,
                    tc_grb_pin_state st_b, void *out, tc_grb_times *t, char *why, size_t n);
/* out[e] = (L * R)(P.row(e), P.j[e]) for the entries of P. */
int tc_grb_gpu_sddmm(tc_grb_vtype vt, const tc_grb_csr *P, tc_grb_pin *pin_p,
                     tc_grb_pin_state st_p, const tc_grb_dense *L, tc_grb_pin *pin_l,
                     tc_grb_pin_state st_l, const tc_grb_dense *R, tc_grb_pin *pin_r,
                     tc_grb_pin_state st_r, void *out, tc_grb_times *t, char *why, size_t n);
/* Uploads a pin's device copy now (tcsparse_GrB_pin). */
int tc_grb_gpu_pin_upload(tc_grb_pin *pin, tc_grb_operand *op, char *why, size_t n);
void tc_grb_gpu_pin_free(tc_grb_pin *pin);
void tc_grb_gpu_release(void);

/* The host backend (TCSPARSE_X_GRB_BACKEND=host): the same results computed on the CPU in
 * double, so that the adapter's GraphBLAS side can be tested without a GPU. */
void tc_grb_host_spmm(tc_grb_vtype vt, const tc_grb_csr *A, const tc_grb_dense *B, void *out);
void tc_grb_host_sddmm(tc_grb_vtype vt, const tc_grb_csr *P, const tc_grb_dense *L,
                       const tc_grb_dense *R, void *out);

/* ------------------------------------ a call (grb_mxm.c, grb_spmm.c, grb_sddmm.c) */

/* One GrB_mxm call: its classification, then its outcome. */
typedef struct {
    tcsparse_GrB_path_t path;
    tc_grb_vtype vt;
    int tran_a, tran_b, replace, mask_struct;
    GrB_Index m, k, n;
    GrB_Type ctype, ttype;
    int host;      /* TCSPARSE_X_GRB_BACKEND=host */
    int fail;      /* TCSPARSE_X_GRB_BACKEND=fail: every computation fails (tests the way back) */
    int nounpack;  /* TCSPARSE_X_GRB_NOUNPACK */
    char why[160];
    tc_grb_times times;
    double ms_acquire, ms_finish;
    const char *finish_how; /* how T reached C (last_reason of an accelerated call) */
    double ms_restore;      /* of ms_finish: giving the inputs back to GraphBLAS (log line) */
} tc_grb_call;

/* C<M> = accum(C, T) by GraphBLAS (GrB_Matrix_apply with the call's descriptor settings).
 * Returns 1 when the call must go to GraphBLAS (C unchanged), 0 otherwise with the result
 * in *info. */
int tc_grb_finish(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum, GrB_Matrix T,
                  GrB_Info *info);
/* Gives back every operand still held (NULL ones skipped; error paths).  A matrix that
 * could not be restored must not reach GraphBLAS as it is (without its arrays): the call
 * then fails with the restore's error (*info, *pass = 0) instead of passing through. */
void tc_grb_release_all(tc_grb_call *k, int *pass, GrB_Info *info, tc_grb_operand *o1,
                        tc_grb_operand *o2, tc_grb_operand *o3);
/* Gives the operands back to GraphBLAS once T is computed (NULL ones skipped), timed as
 * k->ms_restore: GrB_SUCCESS, or the first failure. */
GrB_Info tc_grb_restore(tc_grb_call *k, tc_grb_operand *o1, tc_grb_operand *o2,
                        tc_grb_operand *o3);
/* The accelerated paths (grb_spmm.c, grb_sddmm.c): 1 when the call must go to GraphBLAS
 * (C unchanged, k->why says why), 0 when it is done, with GrB_mxm's result in *info. */
int tc_grb_run_spmm(tc_grb_call *k, GrB_Matrix C, GrB_BinaryOp accum, GrB_Matrix A, GrB_Matrix B,
                    GrB_Info *info);
int tc_grb_run_sddmm(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum,
                     GrB_Matrix A, GrB_Matrix B, GrB_Info *info);

/* ---------------------------------------------------------------- utilities */

/* Threads for large host passes and the clock: lanes.h.  malloc for an array that is
 * written at once in full: large ones get transparent huge pages where the kernel offers
 * them and are touched on the host lanes. */
void *tc_grb_alloc_out(size_t bytes);
/* 1 when the n bytes at a and b are equal (compared on the host lanes when n is large). */
int tc_grb_same_bytes(const void *a, const void *b, size_t n);
/* Logging (TCSPARSE_LOG) and counters. */
int tc_grb_log_on(void);
extern tcsparse_GrB_stats_t tc_grb_stats; /* guarded by the adapter lock */

#endif
