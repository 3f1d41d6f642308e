/* What the files of row reordering share (reorder.c, reorder_order.c, reorder_plan.c); the
 * rest of the library sees reorder.h only. */
#ifndef TC_REORDER_INTERNAL_H
#define TC_REORDER_INTERNAL_H

#include <stdint.h>
#include "reorder.h"

#define WIN 16 /* rows of a window */

/* Host time in milliseconds (CLOCK_MONOTONIC), for the figures of the choice. */
double tc_reorder_now_ms(void);

/* A parallel loop: fn(ctx, begin, end, tid) over [0, n) in pieces (at least min_piece long)
 * taken dynamically by nthreads threads (tid in [0, nthreads)); the caller's thread is tid 0.
 * A thread that cannot be created leaves its share to the others. */
typedef void (*tc_reorder_range_fn)(void *ctx, int64_t begin, int64_t end, int tid);
void tc_reorder_par_for(int64_t n, int nthreads, int64_t min_piece, tc_reorder_range_fn fn,
                        void *ctx);

/* The columns renumbered densely where the matrix is much wider than its nonzeros (see
 * reorder.c): the new column of each nonzero (caller frees) and *ncols, or NULL when the
 * matrix is narrow enough as it is, or on allocation failure. */
int32_t *tc_reorder_dense_columns(const tc_rcsr *a, int64_t *ncols);

#endif
