/* Host lanes: a large host pass split between threads, and the clock that times it.
 *
 * A lane is one call fn(arg, lane), for lane = 0 .. lanes - 1.  With OpenMP (and
 * TCSPARSE_X_GRB_OMP not 0) the lanes run on the OpenMP pool, the one GraphBLAS's parallel
 * regions use, when a team of that size can be asked for (lanes.c says when); otherwise
 * each lane gets a thread made with pthread_create, lane 0 the caller's.  Every function
 * returns once all its lanes have returned.
 *
 * Nothing here knows about GraphBLAS or CUDA: the GraphBLAS adapter (grb_*.c) and the
 * staged-copy engine (xfer.c) both run on it. */
#ifndef TC_LANES_H
#define TC_LANES_H

#include <stddef.h>

#define TC_LANES_MAX 64 /* lanes one call runs at most */

/* The monotonic clock, in milliseconds. */
double tc_lanes_now_ms(void);
/* Host threads the lanes may use: TCSPARSE_X_GRB_THREADS, else the online CPU count (at most
 * TC_LANES_MAX). */
int tc_lanes_threads(void);
/* [lo, hi): part `part` of [0, n) cut into `parts` shares differing by at most one. */
void tc_lanes_share(size_t n, int parts, int part, size_t *lo, size_t *hi);
/* Runs fn(arg, lane) for lane = 0 .. lanes - 1 (at most TC_LANES_MAX), each on its own
 * thread where one can be had; a lane without a thread runs on the caller's, in turn.  For
 * lanes that do not wait on each other. */
void tc_lanes_run(int lanes, void (*fn)(void *arg, int lane), void *arg);
/* The same for lanes that wait on each other: all run at once, or none runs and -1 comes
 * back (also for lanes < 1 or > TC_LANES_MAX); 0 when all ran. */
int tc_lanes_run_together(int lanes, void (*fn)(void *arg, int lane), void *arg);
/* Runs fn(arg, first, last) over [0, n) split into shares (tc_lanes_share), one lane each,
 * on up to tc_lanes_threads() lanes when n * unit_bytes is large enough to pay for them. */
void tc_lanes_parallel(size_t n, size_t unit_bytes, void (*fn)(void *arg, size_t lo, size_t hi),
                       void *arg);

#endif
