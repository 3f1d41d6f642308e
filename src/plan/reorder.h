/* Row reordering for the tensor-core plan (docs/reorder.md).
 *
 * Only rows move.  An ordering is a permutation order[0..rows): order[i] is the caller's row
 * placed at position i, so window w holds the caller's rows order[16w .. 16w+15].  The plan
 * keeps that as win_row (padding positions past rows = -1) and the kernels scatter their
 * output rows back, so B, C and the values array stay in the caller's order.
 *
 * The orderings are computed on the host with pthreads (see reorder.c for why), and the one
 * kept is the candidate with the fewest 16x8 blocks (counted exactly, O(nnz)). */
#ifndef TC_REORDER_H
#define TC_REORDER_H

#include <stddef.h>
#include <stdint.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "kernels.h"

/* Orderings; numerically equal to tcsparseOrdering_t. */
enum {
    TC_ORD_IDENTITY = 0,
    TC_ORD_CLUSTER = 1,   /* DTC-SpMM's two-level TCU/cache-aware clustering (MinHash LSH) */
    TC_ORD_FIRST_COL = 2, /* by first column, then degree */
    TC_ORD_DEGREE = 3,    /* by degree descending, then first column */
    TC_ORD_MINHASH = 4,   /* by one MinHash of the column set, then degree */
    TC_ORD_BFS = 5,       /* breadth-first over rows and columns (L2 locality of B) */
    TC_ORD_COUNT = 6
};
#define TC_ORD_ALL_CANDIDATES 0x3eu /* every ordering but the identity */

/* Name of an ordering ("identity", "cluster", "first-col", "degree", "minhash", "bfs"), "?" when
 * out of range; tc_ordering_parse is its inverse (-1 when unknown). */
const char *tc_ordering_name(int ordering);
int tc_ordering_parse(const char *name);

/* A host CSR, 0-based; columns within a row in any order, no duplicates. */
typedef struct {
    int64_t rows, cols, nnz;
    const int64_t *row_off; /* rows+1 */
    const int32_t *col;     /* nnz */
} tc_rcsr;

/* Threads used by the host side: TCSPARSE_X_REORDER_THREADS when set, else the online CPUs,
 * at most 64. */
int tc_reorder_threads(void);

/* Number of 16x8 blocks of ME-TCF with rows in the given order (NULL: the identity):
 * sum over windows of ceil(distinct columns / 8).  O(nnz) work, parallel over windows. */
int64_t tc_reorder_count_blocks(const tc_rcsr *a, const int32_t *order, int nthreads);

/* Computes one ordering into order[rows] (a permutation).  Deterministic: the same matrix
 * gives the same order whatever the thread count.  Returns 0, or -1 when out of memory. */
int tc_reorder_compute(const tc_rcsr *a, int ordering, int32_t *order, int nthreads);

/* Options of the choice. */
typedef struct {
    unsigned candidates; /* bit mask of orderings tried (bit k = ordering k; the identity is
                          * always measured) */
    double min_gain;     /* keep a reordering only when its block count is at least this
                          * fraction below the identity's; < 0: keep the best non-identity
                          * candidate whatever its count (forced, for tests and measurements) */
    int nthreads;
} tc_reorder_opts;

typedef struct {
    int kept;                      /* TC_ORD_*; TC_ORD_IDENTITY: no reordering */
    int64_t blocks[TC_ORD_COUNT];  /* block count of each ordering, -1 when not tried */
    double ms[TC_ORD_COUNT];       /* host time to compute and count each */
    double total_ms;               /* the whole choice */
} tc_reorder_result;

/* Tries the candidates, writes the kept ordering into order[rows] (the identity when none is
 * kept) and fills res.  Returns 0, or -1 when out of memory (order is then the identity). */
int tc_reorder_choose(const tc_rcsr *a, const tc_reorder_opts *o, int32_t *order,
                      tc_reorder_result *res);

/* The plan's side (tc_reorder_convert, tc_reorder_plan_done) is declared in
 * kernels/common/kernels.h, which plan.c includes. */

/* The descriptor's effective mode: its own setting, else TCSPARSE_REORDER (late, 0/off,
 * 1/auto, always, or an ordering name, which forces that ordering), else LATE.  *only, when not
 * NULL, receives the candidate mask (TC_ORD_ALL_CANDIDATES, or one ordering's bit),
 * narrowed by TCSPARSE_X_REORDER_ORDERINGS=name,name..., or the descriptor's own list
 * (tcsparseSpMatSetReorderOrderings) instead, unless TCSPARSE_REORDER forces one. */
struct tcsparseSpMatDescr;
int tc_reorder_mode(const struct tcsparseSpMatDescr *d, unsigned *only);
/* TCSPARSE_X_REORDER_MIN_GAIN as a fraction (default 0.10): the share of the caller's order's
 * blocks an ordering must save to be kept (AUTO) or timed (LATE). */
double tc_reorder_min_gain(void);

#endif
