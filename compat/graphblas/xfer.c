/* The staged-copy engine (xfer.h): lanes of pinned buffers, jobs, single arrays, the pair
 * of an upload and a download, and the flow.  Over 600 lines: the flow drives the same
 * lanes, rings of buffers and pieces as the jobs (this file's static state), and reads best
 * next to them.
 *
 * On the H100 machine (16 cores, 300 MB L3) 2 MiB buffers in pairs did best: 268 MB up in
 * 6.6 ms on 16 lanes (the same on 8), down in 6.1 ms with streaming stores into the
 * destination, against 0.5-1 MiB buffers or rings of 4 (`docs/graphblas.md`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <cuda_runtime_api.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "config.h"
#include "xfer.h"

int tc_xfer_fail(char *why, size_t n, const char *what, cudaError_t e)
{
    snprintf(why, n, "%s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
}

/* ---------------------------------------------------------------- lanes */

#define TC_XFER_NBUF 2                     /* pinned buffers in a lane's ring */
#define TC_XFER_MIN ((size_t)1 << 20)      /* smaller jobs go through cudaMemcpy */
#define TC_XFER_PER_LANE ((size_t)1 << 20) /* bytes a lane must have to pay for its thread */

typedef struct {
    void *buf[TC_XFER_NBUF];
    cudaEvent_t ev[TC_XFER_NBUF];
    cudaEvent_t step_ev[TC_XFER_FLOW_STEPS]; /* a flow's upload lane: its part of step q is up */
    cudaStream_t s;
} tc_xfer_lane;

static tc_xfer_lane tc_lane[TC_XFER_LANES];
static int tc_nlanes;      /* lanes set up */
static int tc_xfer_state;  /* 0 not tried, 1 ready, -1 unavailable */
static size_t tc_xfer_buf; /* bytes of one pinned buffer */

static void tc_xfer_lane_free(tc_xfer_lane *x)
{
    for (int b = 0; b < TC_XFER_NBUF; b++) {
        if (x->buf[b] != NULL)
            cudaFreeHost(x->buf[b]);
        if (x->ev[b] != NULL)
            cudaEventDestroy(x->ev[b]);
    }
    for (int q = 0; q < TC_XFER_FLOW_STEPS; q++)
        if (x->step_ev[q] != NULL)
            cudaEventDestroy(x->step_ev[q]);
    if (x->s != NULL)
        cudaStreamDestroy(x->s);
    memset(x, 0, sizeof *x);
}

void tc_xfer_release(void)
{
    for (int l = 0; l < tc_nlanes; l++)
        tc_xfer_lane_free(&tc_lane[l]);
    tc_nlanes = 0;
    tc_xfer_state = 0;
}

static int tc_xfer_lane_init(tc_xfer_lane *x)
{
    memset(x, 0, sizeof *x);
    int ok = cudaStreamCreateWithFlags(&x->s, cudaStreamNonBlocking) == cudaSuccess;
    for (int b = 0; ok && b < TC_XFER_NBUF; b++)
        ok = cudaHostAlloc(&x->buf[b], tc_xfer_buf, cudaHostAllocDefault) == cudaSuccess &&
             cudaEventCreateWithFlags(&x->ev[b], cudaEventDisableTiming) == cudaSuccess;
    for (int q = 0; ok && q < TC_XFER_FLOW_STEPS; q++)
        ok = cudaEventCreateWithFlags(&x->step_ev[q], cudaEventDisableTiming) == cudaSuccess;
    return ok;
}

/* TCSPARSE_X_GRB_STAGE_KB: 64..16384 KiB, a multiple of 64; anything else is the default */
static size_t tc_xfer_buf_bytes(void)
{
    return (size_t)tc_config_get()->grb.stage_kb << 10;
}

/* Lanes for a job of bytes (at least one), set up on first use: as many as the host has
 * threads (TCSPARSE_X_GRB_THREADS), at most TC_XFER_LANES.  0 when staging is off or
 * unavailable. */
static int tc_xfer_lanes_for(size_t bytes)
{
    if (bytes < TC_XFER_MIN) /* before the set-up: small work never pins buffers */
        return 0;
    if (tc_xfer_state == 0) {
        int want = tc_lanes_threads();
        if (want > TC_XFER_LANES)
            want = TC_XFER_LANES;
        tc_xfer_state = -1;
        tc_xfer_buf = tc_xfer_buf_bytes();
        if (tc_config_get()->grb.staging) {
            while (tc_nlanes < want && tc_xfer_lane_init(&tc_lane[tc_nlanes]))
                tc_nlanes++;
            if (tc_nlanes < want) { /* the one that failed: free what it got */
                tc_xfer_lane_free(&tc_lane[tc_nlanes]);
                (void)cudaGetLastError();
            }
            tc_xfer_state = tc_nlanes > 0 ? 1 : -1;
        }
    }
    if (tc_xfer_state < 0)
        return 0;
    size_t n = bytes / TC_XFER_PER_LANE;
    if (n < 1)
        n = 1;
    return n < (size_t)tc_nlanes ? (int)n : tc_nlanes;
}

int tc_xfer_lanes(void)
{
    (void)tc_xfer_lanes_for(SIZE_MAX); /* sets the lanes up */
    return tc_nlanes;
}

/* Upload lanes when `lanes` (at least two) are shared between an upload of ub bytes and a
 * download of db bytes in proportion to their bytes: at least one each way. */
static int tc_xfer_up_lanes(int lanes, size_t ub, size_t db)
{
    const int ul = (int)((double)lanes * (double)ub / (double)(ub + db) + 0.5);
    return ul < 1 ? 1 : ul > lanes - 1 ? lanes - 1 : ul;
}

/* ---------------------------------------------------------------- jobs
 *
 * A lane's share of a job goes piece by piece through its ring of buffers (xfer.h). */

static void tc_narrow(int32_t *dst, const int64_t *src, size_t n, int64_t bias)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (int32_t)(src[i] - bias);
}

/* A download's copy out of a pinned buffer into the caller's array: streaming stores where
 * the compiler has them (the destination is not read again soon; they skip reading its lines
 * first), memcpy otherwise. */
static void tc_copy_out(void *dst, const void *src, size_t n)
{
#if defined(__SSE2__)
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
        const __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
        _mm_stream_si128((__m128i *)(void *)(d + i), a);
        _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
    _mm_sfence();
#else
    memcpy(dst, src, n);
#endif
}

/* Lane l's elements [lo, hi) of segment s: a share of a large array, all of a small one
 * (small arrays are dealt round the lanes). */
static void tc_xfer_part(const tc_xfer_job *j, int s, int l, size_t *lo, size_t *hi)
{
    const tc_xfer_seg *g = &j->seg[s];
    if (g->count * g->host_es < TC_XFER_PER_LANE) {
        *lo = 0;
        *hi = s % j->lanes == l ? g->count : 0;
        return;
    }
    tc_lanes_share(g->count, j->lanes, l, lo, hi);
}

/* Walks a lane's pieces (at most one buffer each) through the job's segments in order. */
typedef struct {
    const tc_xfer_job *j;
    int lane, s;
    size_t at, hi;
} tc_piece_it;

static int tc_piece_next(tc_piece_it *it, const tc_xfer_seg **seg, size_t *at, size_t *len)
{
    while (it->at >= it->hi) {
        if (++it->s >= it->j->nseg)
            return 0;
        tc_xfer_part(it->j, it->s, it->lane, &it->at, &it->hi);
    }
    const tc_xfer_seg *g = &it->j->seg[it->s];
    const size_t per = tc_xfer_buf / (g->host_es > g->dev_es ? g->host_es : g->dev_es);
    *seg = g;
    *at = it->at;
    *len = it->hi - it->at < per ? it->hi - it->at : per;
    it->at += *len;
    return 1;
}


/* One upload piece through lane x's buffer b: once the engine has moved the buffer's last
 * piece, the host fills it (narrowing indices where the segment says so) and the engine
 * takes it up. */
static cudaError_t tc_stage_up(tc_xfer_lane *x, int b, const tc_xfer_seg *g, size_t at,
                               size_t len)
{
    cudaError_t e = cudaEventSynchronize(x->ev[b]);
    if (e != cudaSuccess)
        return e;
    if (g->host_es == g->dev_es)
        memcpy(x->buf[b], g->host + at * g->host_es, len * g->host_es);
    else
        tc_narrow(x->buf[b], (const int64_t *)(const void *)(g->host + at * g->host_es), len,
                  g->bias);
    e = cudaMemcpyAsync(g->dev + at * g->dev_es, x->buf[b], len * g->dev_es,
                        cudaMemcpyHostToDevice, x->s);
    return e == cudaSuccess ? cudaEventRecord(x->ev[b], x->s) : e;
}

static void tc_xfer_lane_run(void *arg, int l)
{
    tc_xfer_job *j = arg;
    tc_xfer_lane *x = &tc_lane[j->lane0 + l];
    tc_piece_it in = {j, l, -1, 0, 0}, out = in;
    const tc_xfer_seg *g;
    size_t at, len;
    cudaError_t e = cudaSetDevice(j->device);
    if (e == cudaSuccess && !j->up && j->after != NULL)
        e = cudaStreamWaitEvent(x->s, j->after, 0);
    if (j->up) {
        /* piece c goes through buffer c % NBUF once the engine has moved piece c - NBUF */
        for (size_t c = 0; e == cudaSuccess && tc_piece_next(&in, &g, &at, &len); c++) {
            const int b = (int)(c % TC_XFER_NBUF);
            if ((e = tc_stage_up(x, b, g, at, len)) != cudaSuccess)
                break;
        }
    } else {
        /* up to NBUF pieces in flight; the oldest is drained before another is issued */
        size_t issued = 0, drained = 0;
        int more = 1;
        while (e == cudaSuccess) {
            while (more && issued - drained < TC_XFER_NBUF && e == cudaSuccess) {
                if (!(more = tc_piece_next(&in, &g, &at, &len)))
                    break;
                const int b = (int)(issued % TC_XFER_NBUF);
                e = cudaMemcpyAsync(x->buf[b], g->dev + at * g->dev_es, len * g->dev_es,
                                    cudaMemcpyDeviceToHost, x->s);
                if (e == cudaSuccess)
                    e = cudaEventRecord(x->ev[b], x->s);
                issued++;
            }
            if (e != cudaSuccess || drained == issued)
                break;
            (void)tc_piece_next(&out, &g, &at, &len); /* the same sequence, behind */
            const int b = (int)(drained % TC_XFER_NBUF);
            if ((e = cudaEventSynchronize(x->ev[b])) == cudaSuccess)
                tc_copy_out(g->host + at * g->host_es, x->buf[b], len * g->host_es);
            drained++;
        }
    }
    cudaError_t s = cudaStreamSynchronize(x->s);
    j->err[l] = e != cudaSuccess ? e : s;
    if (j->err[l] != cudaSuccess)
        (void)cudaGetLastError();
}

/* host bytes of a job's segments */
static size_t tc_xfer_job_bytes(const tc_xfer_job *j)
{
    size_t b = 0;
    for (int s = 0; s < j->nseg; s++)
        b += j->seg[s].count * j->seg[s].host_es;
    return b;
}

int tc_xfer_run(tc_xfer_job *j, char *why, size_t n)
{
    const size_t bytes = tc_xfer_job_bytes(j);
    if (bytes == 0)
        return 0;
    const int lanes = tc_xfer_lanes_for(bytes);
    const char *what = j->up ? "cudaMemcpy to the device" : "cudaMemcpy to the host";
    cudaError_t e = cudaSuccess;
    if (lanes == 0) {
        if (!j->up && j->after != NULL && (e = cudaEventSynchronize(j->after)) != cudaSuccess)
            return tc_xfer_fail(why, n, what, e);
        for (int s = 0; s < j->nseg; s++) {
            const tc_xfer_seg *g = &j->seg[s];
            if (g->count == 0)
                continue;
            if (g->host_es == g->dev_es) {
                const size_t b = g->count * g->host_es;
                e = j->up ? cudaMemcpy(g->dev, g->host, b, cudaMemcpyHostToDevice)
                          : cudaMemcpy(g->host, g->dev, b, cudaMemcpyDeviceToHost);
            } else { /* narrowing without pinned buffers: through one host copy */
                int32_t *tmp = malloc(g->count * g->dev_es);
                if (tmp == NULL)
                    return snprintf(why, n, "out of host memory"), -1;
                tc_narrow(tmp, (const int64_t *)(const void *)g->host, g->count, g->bias);
                e = cudaMemcpy(g->dev, tmp, g->count * g->dev_es, cudaMemcpyHostToDevice);
                free(tmp);
            }
            if (e != cudaSuccess)
                return tc_xfer_fail(why, n, what, e);
        }
        return 0;
    }
    j->lanes = lanes;
    for (int l = 0; l < lanes; l++)
        j->err[l] = cudaSuccess;
    if ((e = cudaGetDevice(&j->device)) != cudaSuccess)
        return tc_xfer_fail(why, n, "cudaGetDevice", e);
    tc_lanes_run(lanes, tc_xfer_lane_run, j);
    for (int l = 0; l < lanes; l++)
        if (j->err[l] != cudaSuccess)
            return tc_xfer_fail(why, n,
                                j->up ? "staged copy to the device" : "staged copy to the host",
                                j->err[l]);
    return 0;
}

/* ---------------------------------------------------------------- single arrays */

/* The uploads collected between tc_xfer_defer_begin and tc_xfer_defer_end. */
static struct {
    int on;
    tc_xfer_job job;
} tc_defer;

void tc_xfer_defer_begin(void)
{
    memset(&tc_defer, 0, sizeof tc_defer);
    tc_defer.on = 1;
    tc_defer.job.up = 1;
}

int tc_xfer_defer_end(int cancel, char *why, size_t n)
{
    tc_defer.on = 0;
    if (cancel)
        return 0;
    return tc_xfer_run(&tc_defer.job, why, n);
}

void tc_xfer_defer_take(tc_xfer_job *j)
{
    *j = tc_defer.job;
    tc_defer.on = 0;
}

static int tc_xfer_one(int up, void *d, void *h, size_t count, size_t host_es, size_t dev_es,
                       char *why, size_t n)
{
    if (count == 0)
        return 0;
    const tc_xfer_seg g = {d, h, count, host_es, dev_es, 0};
    if (up && tc_defer.on) {
        if (tc_defer.job.nseg == TC_XFER_SEGS) { /* full: move what it holds first */
            if (tc_xfer_run(&tc_defer.job, why, n) != 0)
                return -1;
            tc_defer.job.nseg = 0;
        }
        tc_defer.job.seg[tc_defer.job.nseg++] = g;
        return 0;
    }
    tc_xfer_job j;
    memset(&j, 0, sizeof j);
    j.up = up;
    j.nseg = 1;
    j.seg[0] = g;
    return tc_xfer_run(&j, why, n);
}

int tc_xfer_h2d(void *d, const void *h, size_t bytes, char *why, size_t n)
{
    return tc_xfer_one(1, d, (void *)h, bytes, 1, 1, why, n);
}

int tc_xfer_d2h(void *h, const void *d, size_t bytes, char *why, size_t n)
{
    return tc_xfer_one(0, (void *)d, h, bytes, 1, 1, why, n);
}

int tc_xfer_h2d_narrow(void *d, const void *h, size_t count, char *why, size_t n)
{
    return tc_xfer_one(1, d, (void *)h, count, 8, 4, why, n);
}

/* ---------------------------------------------------------------- an upload and a download */

typedef struct {
    tc_xfer_job *a, *b;
} tc_xfer_pair;

static void tc_xfer_pair_lane(void *arg, int l)
{
    tc_xfer_pair *p = arg;
    if (l < p->a->lanes)
        tc_xfer_lane_run(p->a, l);
    else
        tc_xfer_lane_run(p->b, l - p->a->lanes);
}

int tc_xfer_run_pair(tc_xfer_job *up, tc_xfer_job *down, char *why, size_t n)
{
    const size_t ub = tc_xfer_job_bytes(up), db = tc_xfer_job_bytes(down);
    if (ub == 0 || db == 0)
        return tc_xfer_run(ub == 0 ? down : up, why, n);
    const int ul = tc_xfer_up_lanes(tc_nlanes, ub, db);
    cudaError_t e = cudaGetDevice(&up->device);
    if (e != cudaSuccess)
        return tc_xfer_fail(why, n, "cudaGetDevice", e);
    down->device = up->device;
    up->lanes = ul;
    up->lane0 = 0;
    down->lanes = tc_nlanes - ul;
    down->lane0 = ul;
    for (int l = 0; l < TC_XFER_LANES; l++)
        up->err[l] = down->err[l] = cudaSuccess;
    tc_xfer_pair pr = {up, down};
    tc_lanes_run(tc_nlanes, tc_xfer_pair_lane, &pr);
    for (int l = 0; l < up->lanes; l++)
        if (up->err[l] != cudaSuccess)
            return tc_xfer_fail(why, n, "staged copy to the device", up->err[l]);
    for (int l = 0; l < down->lanes; l++)
        if (down->err[l] != cudaSuccess)
            return tc_xfer_fail(why, n, "staged copy to the host", down->err[l]);
    return 0;
}

/* ---------------------------------------------------------------- the flow (xfer.h) */

static void tc_flow_wait(void)
{
    sched_yield();
}

static cudaError_t tc_flow_take_down(tc_xfer_flow *f, tc_xfer_lane *x);

static void tc_flow_up(tc_xfer_flow *f, int u)
{
    tc_xfer_lane *x = &tc_lane[u];
    cudaError_t e = cudaSetDevice(f->device);
    const tc_xfer_seg *g;
    size_t at, len, c = 0; /* c: pieces through the ring so far */
    for (int q = 0; q < f->steps; q++) {
        tc_piece_it in = {&f->up[q], u, -1, 0, 0};
        while (e == cudaSuccess && !atomic_load_explicit(&f->failed, memory_order_relaxed) &&
               tc_piece_next(&in, &g, &at, &len)) {
            const int b = (int)(c++ % TC_XFER_NBUF);
            if ((e = tc_stage_up(x, b, g, at, len)) != cudaSuccess)
                break;
        }
        if (e == cudaSuccess)
            e = cudaEventRecord(x->step_ev[q], x->s);
        if (e != cudaSuccess)
            atomic_store(&f->failed, 1);
        atomic_fetch_add_explicit(&f->up_done[q], 1, memory_order_release);
    }
    /* every upload issued: help with the downloads (this stream's uploads finish first) */
    if (e == cudaSuccess && f->join && (e = tc_flow_take_down(f, x)) != cudaSuccess)
        atomic_store(&f->failed, 1);
    cudaError_t s = cudaStreamSynchronize(x->s);
    f->err[1 + u] = e != cudaSuccess ? e : s;
    if (f->err[1 + u] != cudaSuccess)
        (void)cudaGetLastError(); /* not left on a pool thread */
}

/* Takes slices of C down through lane x, in pieces of one buffer claimed from a cursor per
 * step (a step's download is one array of bytes, C's rows of that slice), so that upload
 * lanes can join the download lanes once their uploads are all issued.  Up to NBUF pieces
 * are in flight.  A step's pieces are claimed once it is launched (the lane's stream then
 * waits for its done_ev), and what is in flight is drained before waiting for a launch.
 * Returns the first failure. */
static cudaError_t tc_flow_take_down(tc_xfer_flow *f, tc_xfer_lane *x)
{
    struct {
        const tc_xfer_seg *g;
        size_t at, len;
    } ring[TC_XFER_NBUF];
    cudaError_t e = cudaSuccess;
    size_t issued = 0, drained = 0;
    int q = 0, entered = -1; /* the step whose done_ev this lane's stream waits for */
    while (e == cudaSuccess && !atomic_load_explicit(&f->failed, memory_order_relaxed)) {
        while (e == cudaSuccess && issued - drained < TC_XFER_NBUF && q < f->steps) {
            if (atomic_load_explicit(&f->launched, memory_order_acquire) <= q) {
                if (issued > drained)
                    break; /* drain what is in flight first */
                while (atomic_load_explicit(&f->launched, memory_order_acquire) <= q &&
                       !atomic_load_explicit(&f->failed, memory_order_relaxed))
                    tc_flow_wait();
                if (atomic_load_explicit(&f->failed, memory_order_relaxed))
                    break;
            }
            const tc_xfer_seg *g = &f->down[q].seg[0];
            const size_t piece = tc_xfer_buf, total = g->count * g->host_es;
            const size_t k = (size_t)atomic_fetch_add_explicit(&f->next_piece[q], 1,
                                                               memory_order_relaxed);
            if (k >= (total + piece - 1) / piece) { /* this step's pieces are all taken */
                q++;
                continue;
            }
            if (entered != q) {
                if ((e = cudaStreamWaitEvent(x->s, f->done_ev[q], 0)) != cudaSuccess)
                    break;
                entered = q;
            }
            const int b = (int)(issued % TC_XFER_NBUF);
            ring[b].g = g;
            ring[b].at = k * piece;
            ring[b].len = total - k * piece < piece ? total - k * piece : piece;
            e = cudaMemcpyAsync(x->buf[b], g->dev + ring[b].at, ring[b].len,
                                cudaMemcpyDeviceToHost, x->s);
            if (e == cudaSuccess)
                e = cudaEventRecord(x->ev[b], x->s);
            issued++;
        }
        if (e != cudaSuccess || atomic_load_explicit(&f->failed, memory_order_relaxed))
            break;
        if (drained == issued) {
            if (q >= f->steps)
                break;
            continue;
        }
        const int b = (int)(drained % TC_XFER_NBUF);
        if ((e = cudaEventSynchronize(x->ev[b])) == cudaSuccess)
            tc_copy_out(ring[b].g->host + ring[b].at, x->buf[b], ring[b].len);
        drained++;
    }
    return e;
}

static void tc_flow_down(tc_xfer_flow *f, int d)
{
    tc_xfer_lane *x = &tc_lane[f->ul + d];
    cudaError_t e = cudaSetDevice(f->device);
    if (e == cudaSuccess)
        e = tc_flow_take_down(f, x);
    if (e != cudaSuccess)
        atomic_store(&f->failed, 1);
    cudaError_t s = cudaStreamSynchronize(x->s);
    f->err[1 + f->ul + d] = e != cudaSuccess ? e : s;
    if (f->err[1 + f->ul + d] != cudaSuccess)
        (void)cudaGetLastError();
}

static void tc_flow_launcher(tc_xfer_flow *f)
{
    cudaError_t e = cudaSuccess;
    for (int q = 0; q < f->steps; q++) {
        while (atomic_load_explicit(&f->up_done[q], memory_order_acquire) < f->ul &&
               !atomic_load_explicit(&f->failed, memory_order_relaxed))
            tc_flow_wait();
        if (atomic_load_explicit(&f->failed, memory_order_relaxed))
            break;
        for (int u = 0; u < f->ul && e == cudaSuccess; u++)
            e = cudaStreamWaitEvent(f->stream, tc_lane[u].step_ev[q], 0);
        if (e != cudaSuccess || f->launch(f->ctx, q) != 0) {
            atomic_store(&f->failed, 1);
            break;
        }
        if ((e = cudaEventRecord(f->done_ev[q], f->stream)) != cudaSuccess) {
            atomic_store(&f->failed, 1);
            break;
        }
        if (q == 0)
            f->t_first = tc_lanes_now_ms();
        atomic_store_explicit(&f->launched, q + 1, memory_order_release);
    }
    f->err[0] = e;
}

static void tc_flow_lane(void *arg, int l)
{
    tc_xfer_flow *f = arg;
    if (l == 0)
        tc_flow_launcher(f);
    else if (l <= f->ul)
        tc_flow_up(f, l - 1);
    else
        tc_flow_down(f, l - 1 - f->ul);
}

int tc_xfer_flow_run(tc_xfer_flow *f, char *why, size_t n)
{
    size_t ub = 0, db = 0;
    for (int q = 0; q < f->steps; q++) {
        ub += tc_xfer_job_bytes(&f->up[q]);
        db += tc_xfer_job_bytes(&f->down[q]);
    }
    const int lanes = tc_nlanes - 1; /* one thread launches */
    if (lanes < 2 || ub == 0 || db == 0)
        return 1;
    f->ul = tc_xfer_up_lanes(lanes, ub, db);
    f->dl = lanes - f->ul;
    for (int q = 0; q < f->steps; q++) {
        f->up[q].lanes = f->ul;
        f->up[q].lane0 = 0;
        f->down[q].lanes = f->dl;
        f->down[q].lane0 = f->ul;
        atomic_init(&f->up_done[q], 0);
        atomic_init(&f->next_piece[q], 0);
    }
    f->join = tc_config_get()->grb.join;
    atomic_init(&f->launched, 0);
    atomic_init(&f->failed, 0);
    for (int l = 0; l <= TC_XFER_LANES; l++)
        f->err[l] = cudaSuccess;
    cudaError_t e = cudaGetDevice(&f->device);
    if (e != cudaSuccess)
        return tc_xfer_fail(why, n, "cudaGetDevice", e);
    if (tc_lanes_run_together(1 + lanes, tc_flow_lane, f) != 0)
        return 1;
    for (int l = 1; l <= lanes; l++)
        if (f->err[l] != cudaSuccess) {
            (void)cudaGetLastError();
            return tc_xfer_fail(why, n, l <= f->ul ? "staged copy to the device"
                                                   : "staged copy to the host", f->err[l]);
        }
    if (f->err[0] != cudaSuccess)
        return tc_xfer_fail(why, n, "a slice's launch", f->err[0]);
    if (atomic_load(&f->failed))
        return -1; /* the launch callback said why */
    return 0;
}

