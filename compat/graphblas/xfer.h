/* The staged-copy engine: large copies between pageable host memory and the device through
 * pinned staging buffers, on host lanes (lanes.h).
 *
 * Pageable memory (an ordinary malloc'd array) goes through the driver's own staging at the
 * speed of one CPU core's memcpy (8 GB/s up, 14 GB/s down on the H100 machine, 54 GB/s from
 * pinned memory).  The engine moves it faster:
 *
 *  - A lane is a host lane with a CUDA stream of its own and a ring of two pinned buffers
 *    (TCSPARSE_X_GRB_STAGE_KB each, 2 MiB by default).  The lanes are set up on first use (as
 *    many as tc_lanes_threads(), at most TC_XFER_LANES; none with TCSPARSE_X_GRB_STAGING=0)
 *    and kept until tc_xfer_release.
 *  - A segment is one array: count elements of host_es bytes on the host, of dev_es bytes
 *    on the device.  host_es 8 and dev_es 4 narrow 64-bit indices to 32 bits on the way up,
 *    less bias (a row slice's offsets rebased to 0).
 *  - A job is up to TC_XFER_SEGS segments moved in one direction.  Each of its lanes takes
 *    a share of every segment of 1 MiB or more, and small segments whole (dealt round the
 *    lanes).
 *  - A piece is what one buffer holds at once.  A lane walks its shares in pieces: up, the
 *    host fills piece c into buffer c % 2 once the copy engine has moved piece c - 2 out of
 *    it; down, the engine fills one buffer while the host drains the other into the
 *    destination (with streaming stores).  The host's memory and the link work at once.
 *  - A flow (tc_xfer_flow) runs the steps of a computation cut in slices with no barrier
 *    between them: its uploads, the caller's launches and its downloads overlap.
 *
 * Who synchronises what: every function here returns once its copies are complete (each
 * lane synchronises its own stream before it returns), with one exception: a flow's
 * launches are only enqueued on the caller's stream, which the caller synchronises.  A
 * download job waits, on its lanes' streams, for its event `after` when that is set.  Jobs
 * smaller than 1 MiB, and every job when no lane could be set up, go through cudaMemcpy.
 * The engine keeps its lanes in static storage: one caller at a time (the GraphBLAS adapter
 * calls it under its lock).  Failures return -1 with a one-line reason in why. */
#ifndef TC_XFER_H
#define TC_XFER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "lanes.h"

#define TC_XFER_LANES 16      /* staging lanes at most */
#define TC_XFER_SEGS 8        /* arrays in one job */
#define TC_XFER_FLOW_STEPS 32 /* steps of a flow */

/* One array of a job: count elements of host_es bytes on the host side, dev_es on the
 * device (8 -> 4: 64-bit indices narrowed on the way up, less bias). */
typedef struct {
    char *dev;
    char *host;
    size_t count, host_es, dev_es;
    int64_t bias;
} tc_xfer_seg;

/* A job's lanes are the engine's lanes [lane0, lane0 + lanes) (set by the engine); a
 * download's lanes first wait for after (an event of the computation's stream) when it is
 * set.  The caller sets up, nseg, seg[] and after, the rest zeroed. */
typedef struct {
    int up, device, lanes, lane0, nseg;
    cudaEvent_t after;
    tc_xfer_seg seg[TC_XFER_SEGS];
    cudaError_t err[TC_XFER_LANES];
} tc_xfer_job;

/* Writes "what: CUDA's message" to why, clears CUDA's last error and returns -1: how the
 * engine, and the callers' own CUDA calls, report a failure. */
int tc_xfer_fail(char *why, size_t n, const char *what, cudaError_t e);

/* The lanes, set up now if they were not yet: how many there are (0 when staging is off or
 * could not be set up). */
int tc_xfer_lanes(void);
/* Frees the lanes (their buffers, events and streams); the next use sets them up again. */
void tc_xfer_release(void);

/* Moves every segment of j (up and nseg set): staged when the job is large enough and
 * lanes are available, otherwise array by array through cudaMemcpy.  0, or -1 and why. */
int tc_xfer_run(tc_xfer_job *j, char *why, size_t n);
/* Runs an upload and a download at once, the lanes shared in proportion to their bytes
 * (at least two lanes must be set up). */
int tc_xfer_run_pair(tc_xfer_job *up, tc_xfer_job *down, char *why, size_t n);

/* One array each way (count of them narrowed: 64-bit indices up as 32-bit ones, which the
 * caller checked fit).  Between tc_xfer_defer_begin and tc_xfer_defer_end, uploads are not
 * moved at once but collected into one job (one set of threads, every lane busy until the
 * last byte, instead of one job and one barrier per array); a job that fills up is moved
 * then and collection goes on. */
int tc_xfer_h2d(void *d, const void *h, size_t bytes, char *why, size_t n);
int tc_xfer_d2h(void *h, const void *d, size_t bytes, char *why, size_t n);
int tc_xfer_h2d_narrow(void *d, const void *h, size_t count, char *why, size_t n);
void tc_xfer_defer_begin(void);
/* Ends the collection and moves what was collected (nothing when cancel: the caller failed
 * before its uploads could run). */
int tc_xfer_defer_end(int cancel, char *why, size_t n);
/* Ends the collection without moving anything: the collected job is copied to *j, for the
 * caller to move (or add to) itself. */
void tc_xfer_defer_take(tc_xfer_job *j);

/* A flow: the steps of a sliced computation with no barrier between them.  Upload lanes
 * move step after step (their ring of buffers runs on across steps) and record, per step,
 * an event once their part of it is issued.  One thread waits until every upload lane has
 * issued step q, makes the computation's stream wait for their events, calls launch(ctx, q)
 * to enqueue step q's work on that stream and records done_ev[q].  Download lanes take
 * pieces of each step's download once the step is launched (their streams wait for
 * done_ev[q]) and drain them as they arrive; the upload lanes join them once their last
 * upload is issued (TCSPARSE_X_GRB_JOIN=0: they stop).  The lanes wait on each other, so
 * they run at once (tc_lanes_run_together) or not at all.
 *
 * The caller sets steps, up[0..steps) (upload jobs), down[0..steps) (download jobs of one
 * segment each, not narrowed), launch, ctx, stream and done_ev (steps events), the rest
 * zeroed; t_first comes back. */
typedef struct {
    int steps, ul, dl, device;
    int join; /* upload lanes join the downloads when done (TCSPARSE_X_GRB_JOIN=0: not) */
    tc_xfer_job up[TC_XFER_FLOW_STEPS], down[TC_XFER_FLOW_STEPS]; /* upload lanes 0..ul-1,
                                                                     download lanes ul..ul+dl-1 */
    int (*launch)(void *ctx, int step); /* enqueues step's work on stream; 0 or -1 */
    void *ctx;
    cudaStream_t stream;
    cudaEvent_t *done_ev;
    double t_first; /* when step 0 was launched (tc_lanes_now_ms) */
    atomic_int up_done[TC_XFER_FLOW_STEPS];
    atomic_int next_piece[TC_XFER_FLOW_STEPS]; /* download pieces of each step claimed so far */
    atomic_int launched, failed;
    cudaError_t err[TC_XFER_LANES + 1];
} tc_xfer_flow;

/* Runs the flow f: 0; 1 when its lanes could not run at once, or there are fewer than three
 * lanes, or one direction has nothing to move (nothing moved: the caller goes step by step
 * with tc_xfer_run and tc_xfer_run_pair); -1 on a failure (why says which, unless the
 * launch callback wrote it).  On 0 every step is launched and every download has
 * arrived; the caller still synchronises stream (a step with nothing to download is not
 * waited for). */
int tc_xfer_flow_run(tc_xfer_flow *f, char *why, size_t n);

#endif
