/* The GPU backend of the GraphBLAS adapter: uploads the arrays GraphBLAS holds on the host,
 * calls tcsparseSpMM / tcsparseSDDMM (whose route picks the tensor cores or cuSPARSE), and
 * brings the result back.  GraphBLAS's 64-bit offsets and indices go up as they are
 * (tcsparse takes CUSPARSE_INDEX_64I; its plan is int32 on the device).
 *
 * Device buffers of unpinned operands are kept between calls and only grow, so that a
 * sequence of calls does not pay cudaMalloc/cudaFree each time; pinned operands have their
 * own.  Everything here runs under the adapter lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <cuda_runtime_api.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "grb_internal.h"

struct tc_grb_pin_dev {
    int valid;                 /* matches the pin's record */
    void *dp, *dj, *dx;
    size_t cap_p, cap_j, cap_x;
    tcsparseSpMatDescr_t descr; /* sparse forms: owns tcsparse's cached plan */
};

typedef struct {
    void *p;
    size_t cap;
} tc_dbuf;

enum { TC_S_P, TC_S_J, TC_S_X, TC_S_B, TC_S_R, TC_S_OUT, TC_S_WORK, TC_S_COUNT };

static tcsparseHandle_t tc_h;
static int tc_gpu_state = -1; /* -1 not probed, 0 unusable, 1 usable */
static char tc_gpu_why[128];
static tc_dbuf tc_scratch[TC_S_COUNT];

int tc_grb_gpu_available(char *why, size_t n)
{
    if (tc_gpu_state < 0) {
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess) {
            snprintf(tc_gpu_why, sizeof tc_gpu_why, "no CUDA device (%s)", cudaGetErrorString(e));
            (void)cudaGetLastError();
            tc_gpu_state = 0;
        } else if (count == 0) {
            snprintf(tc_gpu_why, sizeof tc_gpu_why, "no CUDA device");
            tc_gpu_state = 0;
        } else {
            tc_gpu_state = 1;
        }
    }
    if (!tc_gpu_state)
        snprintf(why, n, "%s", tc_gpu_why);
    return tc_gpu_state;
}

static int tc_fail(char *why, size_t n, const char *what, cudaError_t e)
{
    snprintf(why, n, "%s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
}

static int tc_tcfail(char *why, size_t n, const char *what, tcsparseStatus_t st)
{
    snprintf(why, n, "%s: %s: %s", what, tcsparseGetErrorName(st), tcsparseGetLastErrorMessage());
    return -1;
}

static int tc_handle(char *why, size_t n)
{
    if (tc_h != NULL)
        return 0;
    tcsparseStatus_t st = tcsparseCreate(&tc_h);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_h = NULL;
        return tc_tcfail(why, n, "tcsparseCreate", st);
    }
    return 0;
}

/* Grows *p to hold bytes (contents are not kept). */
static int tc_reserve(void **p, size_t *cap, size_t bytes, char *why, size_t n)
{
    if (bytes == 0)
        bytes = 1;
    if (*cap >= bytes)
        return 0;
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
        *p = NULL;
        return tc_fail(why, n, "cudaMalloc", e);
    }
    *cap = bytes;
    return 0;
}

static int tc_scratch_get(int slot, size_t bytes, void **out, char *why, size_t n)
{
    tc_dbuf *b = &tc_scratch[slot];
    if (tc_reserve(&b->p, &b->cap, bytes, why, n) != 0)
        return -1;
    *out = b->p;
    return 0;
}

/* ---------------------------------------------------------------- staged copies
 *
 * GraphBLAS's arrays are ordinary (pageable) memory.  A copy from pageable memory runs
 * through the driver's own staging at the speed of one CPU core's memcpy (8 GB/s up, 14 GB/s
 * down on the H100 machine, against 54 GB/s from pinned memory).  Large copies here are
 * split between up to TC_XFER_LANES host threads; each thread owns a ring of TC_XFER_NBUF
 * pinned buffers (TCSPARSE_GRB_STAGE_KB each) and a stream, and fills one buffer (or drains
 * it) while the copy engine moves the other, so the host's memory bandwidth and the link are
 * used at once.  On the H100 machine (16 cores, 300 MB L3) 2 MiB buffers in pairs did best:
 * 268 MB up in 6.6 ms on 16 lanes (the same on 8), down in 6.1 ms with streaming stores into
 * the destination, against 0.5-1 MiB buffers or rings of 4 (`docs/graphblas.md`).  The same
 * pass can narrow 64-bit indices to 32 bits on the way up (half the bytes to move), less a
 * bias (a row slice's offsets rebased to 0).
 *
 * A call's uploads (a sparse operand's offsets, indices and values, the dense operands) are
 * collected (tc_defer_begin) and moved by one job (tc_defer_end): one set of threads, every
 * lane busy until the last byte, instead of one job and one barrier per array.
 * TCSPARSE_GRB_STAGING=0 turns staging off; any failure to set it up falls back to
 * cudaMemcpy. */

#define TC_XFER_LANES 16
#define TC_XFER_NBUF 2                     /* pinned buffers in a lane's ring */
#define TC_XFER_BUF_KB 2048                /* default bytes of one buffer, in KiB */
#define TC_XFER_MIN ((size_t)1 << 20)      /* smaller jobs go through cudaMemcpy */
#define TC_XFER_PER_LANE ((size_t)1 << 20) /* bytes a lane must have to pay for its thread */
#define TC_XFER_SEGS 8                     /* arrays in one job */
#define TC_FLOW_STEPS 32                   /* steps of a flow (a sliced SpMM's slices) */

typedef struct {
    void *buf[TC_XFER_NBUF];
    cudaEvent_t ev[TC_XFER_NBUF];
    cudaEvent_t step_ev[TC_FLOW_STEPS]; /* a flow's upload lane: its part of step q is up */
    cudaStream_t s;
} tc_xfer_lane;

static tc_xfer_lane tc_lanes[TC_XFER_LANES];
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
    for (int q = 0; q < TC_FLOW_STEPS; q++)
        if (x->step_ev[q] != NULL)
            cudaEventDestroy(x->step_ev[q]);
    if (x->s != NULL)
        cudaStreamDestroy(x->s);
    memset(x, 0, sizeof *x);
}

static void tc_xfer_free(void)
{
    for (int l = 0; l < tc_nlanes; l++)
        tc_xfer_lane_free(&tc_lanes[l]);
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
    for (int q = 0; ok && q < TC_FLOW_STEPS; q++)
        ok = cudaEventCreateWithFlags(&x->step_ev[q], cudaEventDisableTiming) == cudaSuccess;
    return ok;
}

/* TCSPARSE_GRB_STAGE_KB: 64..16384 KiB, a multiple of 64; anything else is the default */
static size_t tc_xfer_buf_bytes(void)
{
    const char *e = getenv("TCSPARSE_GRB_STAGE_KB");
    long kb = TC_XFER_BUF_KB;
    if (e != NULL && *e != '\0') {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 64 && v <= 16384 && v % 64 == 0)
            kb = v;
    }
    return (size_t)kb << 10;
}

/* Lanes for a job of bytes (at least one), set up on first use: as many as the host has
 * threads (TCSPARSE_GRB_THREADS), at most TC_XFER_LANES.  0 when staging is off or
 * unavailable. */
static int tc_xfer_lanes_for(size_t bytes)
{
    if (bytes < TC_XFER_MIN) /* before the set-up: small work never pins buffers */
        return 0;
    if (tc_xfer_state == 0) {
        const char *e = getenv("TCSPARSE_GRB_STAGING");
        int want = tc_lanes_threads();
        if (want > TC_XFER_LANES)
            want = TC_XFER_LANES;
        tc_xfer_state = -1;
        tc_xfer_buf = tc_xfer_buf_bytes();
        if (!(e != NULL && strcmp(e, "0") == 0)) {
            while (tc_nlanes < want && tc_xfer_lane_init(&tc_lanes[tc_nlanes]))
                tc_nlanes++;
            if (tc_nlanes < want) { /* the one that failed: free what it got */
                tc_xfer_lane_free(&tc_lanes[tc_nlanes]);
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

/* One array of a job: count elements of host_es bytes on the host side, dev_es on the
 * device (8 -> 4: 64-bit indices narrowed on the way up, less bias). */
typedef struct {
    char *dev;
    char *host;
    size_t count, host_es, dev_es;
    int64_t bias;
} tc_xfer_seg;

/* A job's lanes are tc_lanes[lane0, lane0 + lanes); a download's lanes first wait for
 * after (an event of the computation's stream) when it is set. */
typedef struct {
    int up, device, lanes, lane0, nseg;
    cudaEvent_t after;
    tc_xfer_seg seg[TC_XFER_SEGS];
    cudaError_t err[TC_XFER_LANES];
} tc_xfer_job;

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
    tc_xfer_lane *x = &tc_lanes[j->lane0 + l];
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

/* Moves every segment of j (whose up and nseg are set): staged when the job is large
 * enough and staging is available, otherwise array by array through cudaMemcpy. */
static int tc_xfer_run(tc_xfer_job *j, char *why, size_t n)
{
    const size_t bytes = tc_xfer_job_bytes(j);
    if (bytes == 0)
        return 0;
    const int lanes = tc_xfer_lanes_for(bytes);
    const char *what = j->up ? "cudaMemcpy to the device" : "cudaMemcpy to the host";
    cudaError_t e = cudaSuccess;
    if (lanes == 0) {
        if (!j->up && j->after != NULL && (e = cudaEventSynchronize(j->after)) != cudaSuccess)
            return tc_fail(why, n, what, e);
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
                return tc_fail(why, n, what, e);
        }
        return 0;
    }
    j->lanes = lanes;
    for (int l = 0; l < lanes; l++)
        j->err[l] = cudaSuccess;
    if ((e = cudaGetDevice(&j->device)) != cudaSuccess)
        return tc_fail(why, n, "cudaGetDevice", e);
    tc_lanes_run(lanes, tc_xfer_lane_run, j);
    for (int l = 0; l < lanes; l++)
        if (j->err[l] != cudaSuccess)
            return tc_fail(why, n, j->up ? "staged copy to the device" : "staged copy to the host",
                           j->err[l]);
    return 0;
}

/* The uploads of one call, collected between tc_defer_begin and tc_defer_end. */
static struct {
    int on;
    tc_xfer_job job;
} tc_defer;

static void tc_defer_begin(void)
{
    memset(&tc_defer, 0, sizeof tc_defer);
    tc_defer.on = 1;
    tc_defer.job.up = 1;
}

/* Moves what was collected (nothing when cancel: the call failed before its uploads ran). */
static int tc_defer_end(int cancel, char *why, size_t n)
{
    tc_defer.on = 0;
    if (cancel)
        return 0;
    return tc_xfer_run(&tc_defer.job, why, n);
}

static int tc_xfer(int up, void *d, void *h, size_t count, size_t host_es, size_t dev_es,
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

static int tc_h2d(void *d, const void *h, size_t bytes, char *why, size_t n)
{
    return tc_xfer(1, d, (void *)h, bytes, 1, 1, why, n);
}

static int tc_d2h(void *h, const void *d, size_t bytes, char *why, size_t n)
{
    return tc_xfer(0, (void *)d, h, bytes, 1, 1, why, n);
}

/* count 64-bit indices up as 32-bit ones (the caller checked that they fit) */
static int tc_h2d_narrow(void *d, const void *h, size_t count, char *why, size_t n)
{
    return tc_xfer(1, d, (void *)h, count, 8, 4, why, n);
}

/* alpha = 1 and beta = 0 in the call's type, for the host pointer mode */
static const void *tc_scalar(tc_grb_vtype vt, int one)
{
    static const float f[2] = {0.0f, 1.0f};
    static const double d[2] = {0.0, 1.0};
    return vt == TC_GRB_F64 ? (const void *)&d[one != 0] : (const void *)&f[one != 0];
}

static cudaDataType tc_cuda_type(tc_grb_vtype vt)
{
    return vt == TC_GRB_F64 ? CUDA_R_64F : CUDA_R_32F;
}

/* GraphBLAS's offsets and indices go up as 32-bit ones where they fit (half the bytes; the
 * tensor-core plan and cuSPARSE's fastest kernels are 32-bit anyway). */
static int tc_narrow_ok(const tc_grb_csr *c)
{
    return c->nnz < INT32_MAX && c->rows < INT32_MAX && c->cols < INT32_MAX;
}

static int tc_csr_up(const tc_grb_csr *c, void *dp, void *dj, int narrow, char *why, size_t n)
{
    if (narrow)
        return tc_h2d_narrow(dp, c->p, (size_t)(c->rows + 1), why, n) ||
               tc_h2d_narrow(dj, c->j, (size_t)c->nnz, why, n);
    return tc_h2d(dp, c->p, (size_t)(c->rows + 1) * 8, why, n) ||
           tc_h2d(dj, c->j, (size_t)c->nnz * 8, why, n);
}

/* A sparse operand that is not pinned is uploaded for this call only: its tensor-core plan
 * (a conversion of about 0.5 ms per million nonzeros) would be built for one execution,
 * which costs more than the tensor cores can save there.  Such calls take tcsparse's
 * cuSPARSE route; pinned operands keep their plan and the automatic route.  A route forced
 * through TCSPARSE_ROUTE still wins (tcsparse reads it over the handle's). */
static int tc_route_for(int one_shot, char *why, size_t n)
{
    tcsparseStatus_t s =
        tcsparseSetRoute(tc_h, one_shot ? TCSPARSE_ROUTE_CUSPARSE : TCSPARSE_ROUTE_AUTO);
    return s == TCSPARSE_STATUS_SUCCESS ? 0 : tc_tcfail(why, n, "tcsparseSetRoute", s);
}

/* ---------------------------------------------------------------- pinned copies */

static struct tc_grb_pin_dev *tc_pin_dev(tc_grb_pin *pin)
{
    if (pin->dev == NULL)
        pin->dev = calloc(1, sizeof *pin->dev);
    return pin->dev;
}

/* Brings a sparse pin's device copy up to date with csr (whose values are full). */
static int tc_pin_sync_sparse(tc_grb_pin *pin, tc_grb_pin_state st, const tc_grb_csr *c,
                              char *why, size_t n)
{
    struct tc_grb_pin_dev *d = tc_pin_dev(pin);
    if (d == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    if (!d->valid || d->descr == NULL)
        st = TC_PIN_STRUCTURE;
    if (st == TC_PIN_HIT)
        return 0;
    const size_t es = tc_grb_esize(pin->vtype);
    d->valid = 0;
    if (st == TC_PIN_STRUCTURE) {
        if (d->descr != NULL)
            tcsparseDestroySpMat(d->descr);
        d->descr = NULL;
        const int narrow = tc_narrow_ok(c);
        const size_t ies = narrow ? 4 : 8;
        if (tc_reserve(&d->dp, &d->cap_p, (size_t)(c->rows + 1) * ies, why, n) ||
            tc_reserve(&d->dj, &d->cap_j, (size_t)c->nnz * ies, why, n) ||
            tc_reserve(&d->dx, &d->cap_x, (size_t)c->nnz * es, why, n) ||
            tc_csr_up(c, d->dp, d->dj, narrow, why, n))
            return -1;
        const tcsparseIndexType_t it = narrow ? TCSPARSE_INDEX_32I : TCSPARSE_INDEX_64I;
        tcsparseStatus_t s = tcsparseCreateCsr(&d->descr, c->rows, c->cols, c->nnz, d->dp, d->dj,
                                               d->dx, it, it, TCSPARSE_INDEX_BASE_ZERO,
                                               tc_cuda_type(pin->vtype));
        if (s != TCSPARSE_STATUS_SUCCESS) {
            d->descr = NULL;
            return tc_tcfail(why, n, "tcsparseCreateCsr", s);
        }
    }
    if (c->x == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    if (tc_h2d(d->dx, c->x, (size_t)c->nnz * es, why, n))
        return -1;
    d->valid = 1;
    return 0;
}

static int tc_pin_sync_dense(tc_grb_pin *pin, tc_grb_pin_state st, const tc_grb_dense *v,
                             char *why, size_t n)
{
    struct tc_grb_pin_dev *d = tc_pin_dev(pin);
    if (d == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    if (!d->valid)
        st = TC_PIN_STRUCTURE;
    if (st == TC_PIN_HIT)
        return 0;
    const size_t bytes = (size_t)(v->rows * v->cols) * tc_grb_esize(pin->vtype);
    d->valid = 0;
    if (v->x == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    if (tc_reserve(&d->dx, &d->cap_x, bytes, why, n) || tc_h2d(d->dx, v->x, bytes, why, n))
        return -1;
    d->valid = 1;
    return 0;
}

int tc_grb_gpu_pin_upload(tc_grb_pin *pin, tc_grb_operand *op, char *why, size_t n)
{
    if (op->form == TC_FORM_CSR || op->form == TC_FORM_CSC) {
        tc_grb_csr c = tc_grb_operand_csr(op);
        c.x = tc_grb_operand_values(op);
        return tc_pin_sync_sparse(pin, TC_PIN_STRUCTURE, &c, why, n);
    }
    tc_grb_dense v = tc_grb_operand_dense(op, 0);
    return tc_pin_sync_dense(pin, TC_PIN_STRUCTURE, &v, why, n);
}

void tc_grb_gpu_pin_free(tc_grb_pin *pin)
{
    struct tc_grb_pin_dev *d = pin->dev;
    if (d == NULL)
        return;
    if (d->descr != NULL)
        tcsparseDestroySpMat(d->descr);
    cudaFree(d->dp);
    cudaFree(d->dj);
    cudaFree(d->dx);
    free(d);
    pin->dev = NULL;
}

void tc_grb_gpu_release(void)
{
    for (int s = 0; s < TC_S_COUNT; s++) {
        cudaFree(tc_scratch[s].p);
        tc_scratch[s].p = NULL;
        tc_scratch[s].cap = 0;
    }
    if (tc_h != NULL)
        tcsparseDestroy(tc_h);
    tc_h = NULL;
    tc_xfer_free();
}

/* ---------------------------------------------------------------- operands on the device */

/* A dense operand on the device: the pin's copy, or the scratch slot. */
static int tc_dense_up(const tc_grb_dense *v, tc_grb_pin *pin, tc_grb_pin_state st, int slot,
                       size_t es, void **out, char *why, size_t n)
{
    if (pin != NULL && st != TC_PIN_NONE) {
        if (tc_pin_sync_dense(pin, st, v, why, n) != 0)
            return -1;
        *out = pin->dev->dx;
        return 0;
    }
    const size_t bytes = (size_t)(v->rows * v->cols) * es;
    return tc_scratch_get(slot, bytes, out, why, n) || tc_h2d(*out, v->x, bytes, why, n);
}

/* A sparse operand's descriptor, values at vals_dev (NULL: its own values).  *own is set
 * when the descriptor is the caller's to destroy. */
static int tc_sparse_up(const tc_grb_csr *c, int need_values, tc_grb_pin *pin,
                        tc_grb_pin_state st, tc_grb_vtype vt, void *vals_dev,
                        tcsparseSpMatDescr_t *out, int *own, char *why, size_t n)
{
    const size_t es = tc_grb_esize(vt);
    *own = 0;
    if (pin != NULL && st != TC_PIN_NONE) {
        if (tc_pin_sync_sparse(pin, st, c, why, n) != 0)
            return -1;
        tcsparseStatus_t s = tcsparseSpMatSetValues(pin->dev->descr,
                                                    vals_dev != NULL ? vals_dev : pin->dev->dx);
        if (s != TCSPARSE_STATUS_SUCCESS)
            return tc_tcfail(why, n, "tcsparseSpMatSetValues", s);
        *out = pin->dev->descr;
        return 0;
    }
    void *dp, *dj, *dx = vals_dev;
    const int narrow = tc_narrow_ok(c);
    const size_t ies = narrow ? 4 : 8;
    if (tc_scratch_get(TC_S_P, (size_t)(c->rows + 1) * ies, &dp, why, n) ||
        tc_scratch_get(TC_S_J, (size_t)c->nnz * ies, &dj, why, n) ||
        tc_csr_up(c, dp, dj, narrow, why, n))
        return -1;
    if (need_values &&
        (tc_scratch_get(TC_S_X, (size_t)c->nnz * es, &dx, why, n) ||
         tc_h2d(dx, c->x, (size_t)c->nnz * es, why, n)))
        return -1;
    const tcsparseIndexType_t it = narrow ? TCSPARSE_INDEX_32I : TCSPARSE_INDEX_64I;
    tcsparseStatus_t s = tcsparseCreateCsr(out, c->rows, c->cols, c->nnz, dp, dj, dx, it, it,
                                           TCSPARSE_INDEX_BASE_ZERO, tc_cuda_type(vt));
    if (s != TCSPARSE_STATUS_SUCCESS)
        return tc_tcfail(why, n, "tcsparseCreateCsr", s);
    *own = 1;
    return 0;
}

static void tc_invalidate(tc_grb_pin *pin)
{
    if (pin != NULL && pin->dev != NULL)
        pin->dev->valid = 0;
}

static void tc_kernel_name(tc_grb_times *t)
{
    tcsparseRouteInfo_t ri;
    if (tcsparseGetLastRoute(tc_h, &ri) == TCSPARSE_STATUS_SUCCESS)
        snprintf(t->kernel, sizeof t->kernel, "%s", ri.kernel);
}

/* ---------------------------------------------------------------- SpMM in row slices
 *
 * A cold call (A not pinned, so tcsparse's cuSPARSE route; B and C by row, 32-bit indices)
 * runs in row slices of A and C.  Slice s is multiplied, and while its rows of C come down
 * the next slice of A goes up, on disjoint lanes.  The link's two directions and the host's
 * memory work at once: on the H100 machine 268 MB up and 268 MB down took 8.2-9.2 ms
 * together against 12.9 ms one after the other (staging probe, 8 lanes each way).  Slices
 * are cut where the bytes they move (A's indices and values up, C's rows down) are equal.
 * Each slice's offsets go up rebased to 0.
 *
 * B goes up whole before the first slice, unless A's columns follow its rows (banded,
 * block-diagonal: batched graphs, meshes in a local order).  Then B goes up in chunks, one
 * with each slice of A, in TC_PIPE_FINE slices: slice s waits only for the rows of B its
 * columns reach, and B's upload overlaps C's download instead of preceding it.  A scan of
 * A's columns (on the host lanes) decides; it gives up at the first column past the slice's
 * share of B plus a quarter of B, so matrices without that locality pay little for it.
 * TCSPARSE_GRB_PIPE=0 turns slicing off, =1 takes it for calls below TC_PIPE_MIN too;
 * TCSPARSE_GRB_WAVE=0 keeps B whole, =2..32 sets the number of slices then (default 16, 8
 * when the call goes step by step: each step then ends in a barrier). */

#define TC_PIPE_SLICES 4
#define TC_PIPE_FINE 16 /* slices when B goes up in chunks (TCSPARSE_GRB_WAVE: 2..32) */
#define TC_PIPE_MAX TC_FLOW_STEPS /* each slice is a step of the flow */
#define TC_PIPE_MIN ((size_t)32 << 20) /* calls moving fewer bytes of A and C run whole */

static int tc_spmm_pipe_wanted(const tc_grb_csr *A, const tc_grb_dense *B, int a_one_shot,
                               size_t es)
{
    static int env = -2; /* -1 unset (by size), 0 never, 1 whenever the call qualifies */
    if (env == -2) {
        const char *e = getenv("TCSPARSE_GRB_PIPE");
        env = e == NULL || *e == '\0' ? -1 : strcmp(e, "0") != 0;
    }
    if (env == 0 || !a_one_shot || !B->row_major || !tc_narrow_ok(A) || A->rows < TC_PIPE_SLICES)
        return 0;
    const size_t bytes = (size_t)A->nnz * (4 + es) + (size_t)(A->rows * B->cols) * es;
    if (env < 0 && bytes < TC_PIPE_MIN)
        return 0;
    (void)tc_xfer_lanes_for(SIZE_MAX); /* sets the lanes up */
    return tc_nlanes >= 2;
}

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

/* Runs an upload and a download at once, the lanes shared in proportion to their bytes
 * (staging is set up with at least two lanes). */
static int tc_xfer_run_pair(tc_xfer_job *up, tc_xfer_job *down, char *why, size_t n)
{
    const size_t ub = tc_xfer_job_bytes(up), db = tc_xfer_job_bytes(down);
    if (ub == 0 || db == 0)
        return tc_xfer_run(ub == 0 ? down : up, why, n);
    int ul = (int)((double)tc_nlanes * (double)ub / (double)(ub + db) + 0.5);
    ul = ul < 1 ? 1 : ul > tc_nlanes - 1 ? tc_nlanes - 1 : ul;
    cudaError_t e = cudaGetDevice(&up->device);
    if (e != cudaSuccess)
        return tc_fail(why, n, "cudaGetDevice", e);
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
            return tc_fail(why, n, "staged copy to the device", up->err[l]);
    for (int l = 0; l < down->lanes; l++)
        if (down->err[l] != cudaSuccess)
            return tc_fail(why, n, "staged copy to the host", down->err[l]);
    return 0;
}

/* A flow: the steps of a sliced multiplication with no barrier between them.  Upload lanes
 * move step after step (their ring of buffers runs on across steps) and record, per step,
 * an event once their part of it is issued; lane 0 waits until every upload lane has
 * issued step q, makes the computation's stream wait for their events, launches step q's
 * computation and records done_ev[q]; download lanes take pieces of each step's rows once it
 * is launched (their streams wait for done_ev[q]) and drain them as they arrive, joined by
 * the upload lanes once those have issued their last upload.  The lanes wait on each
 * other, so they run at once (tc_lanes_run_together) or not at all. */
typedef struct {
    int steps, ul, dl, device;
    int join; /* upload lanes join the downloads when done (TCSPARSE_GRB_JOIN=0: not) */
    tc_xfer_job up[TC_FLOW_STEPS], down[TC_FLOW_STEPS]; /* upload lanes 0..ul-1 of tc_lanes,
                                                           download lanes ul..ul+dl-1 */
    int (*launch)(void *ctx, int step); /* enqueues step's work on stream; 0 or -1 */
    void *ctx;
    cudaStream_t stream;
    cudaEvent_t *done_ev;
    double t_first; /* when step 0 was launched */
    atomic_int up_done[TC_FLOW_STEPS];
    atomic_int next_piece[TC_FLOW_STEPS]; /* download pieces of each step claimed so far */
    atomic_int launched, failed;
    cudaError_t err[TC_XFER_LANES + 1];
} tc_flow;

static void tc_flow_wait(void)
{
    sched_yield();
}

static cudaError_t tc_flow_take_down(tc_flow *f, tc_xfer_lane *x);

static void tc_flow_up(tc_flow *f, int u)
{
    tc_xfer_lane *x = &tc_lanes[u];
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
static cudaError_t tc_flow_take_down(tc_flow *f, tc_xfer_lane *x)
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

static void tc_flow_down(tc_flow *f, int d)
{
    tc_xfer_lane *x = &tc_lanes[f->ul + d];
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

static void tc_flow_launcher(tc_flow *f)
{
    cudaError_t e = cudaSuccess;
    for (int q = 0; q < f->steps; q++) {
        while (atomic_load_explicit(&f->up_done[q], memory_order_acquire) < f->ul &&
               !atomic_load_explicit(&f->failed, memory_order_relaxed))
            tc_flow_wait();
        if (atomic_load_explicit(&f->failed, memory_order_relaxed))
            break;
        for (int u = 0; u < f->ul && e == cudaSuccess; u++)
            e = cudaStreamWaitEvent(f->stream, tc_lanes[u].step_ev[q], 0);
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
    tc_flow *f = arg;
    if (l == 0)
        tc_flow_launcher(f);
    else if (l <= f->ul)
        tc_flow_up(f, l - 1);
    else
        tc_flow_down(f, l - 1 - f->ul);
}

/* Runs the flow f (steps, up, down, launch, ctx, stream, done_ev set): 0; 1 when its lanes
 * could not run at once (nothing moved: the caller goes step by step); -1 on a failure (why
 * says which, unless the launch callback wrote it). */
static int tc_flow_run(tc_flow *f, char *why, size_t n)
{
    size_t ub = 0, db = 0;
    for (int q = 0; q < f->steps; q++) {
        ub += tc_xfer_job_bytes(&f->up[q]);
        db += tc_xfer_job_bytes(&f->down[q]);
    }
    const int lanes = tc_nlanes - 1; /* one thread launches */
    if (lanes < 2 || ub == 0 || db == 0)
        return 1;
    int ul = (int)((double)lanes * (double)ub / (double)(ub + db) + 0.5);
    f->ul = ul < 1 ? 1 : ul > lanes - 1 ? lanes - 1 : ul;
    f->dl = lanes - f->ul;
    for (int q = 0; q < f->steps; q++) {
        f->up[q].lanes = f->ul;
        f->up[q].lane0 = 0;
        f->down[q].lanes = f->dl;
        f->down[q].lane0 = f->ul;
        atomic_init(&f->up_done[q], 0);
        atomic_init(&f->next_piece[q], 0);
    }
    const char *je = getenv("TCSPARSE_GRB_JOIN");
    f->join = !(je != NULL && strcmp(je, "0") == 0);
    atomic_init(&f->launched, 0);
    atomic_init(&f->failed, 0);
    for (int l = 0; l <= TC_XFER_LANES; l++)
        f->err[l] = cudaSuccess;
    cudaError_t e = cudaGetDevice(&f->device);
    if (e != cudaSuccess)
        return tc_fail(why, n, "cudaGetDevice", e);
    if (tc_lanes_run_together(1 + lanes, tc_flow_lane, f) != 0)
        return 1;
    for (int l = 1; l <= lanes; l++)
        if (f->err[l] != cudaSuccess) {
            (void)cudaGetLastError();
            return tc_fail(why, n, l <= f->ul ? "staged copy to the device"
                                              : "staged copy to the host", f->err[l]);
        }
    if (f->err[0] != cudaSuccess)
        return tc_fail(why, n, "a slice's launch", f->err[0]);
    if (atomic_load(&f->failed))
        return -1; /* the launch callback said why */
    return 0;
}

/* Adds slice s of A (rows r0..r1) to an upload job: offsets rebased, indices narrowed,
 * values.  dp holds slice s's offsets from entry r0 + s (each slice has one more).  -1 when
 * the job has no room for three more arrays (it never holds more than B before). */
static int tc_pipe_add_a(tc_xfer_job *j, const tc_grb_csr *A, int64_t r0, int64_t r1, int s,
                         char *dp, char *dj, char *dx, size_t es, char *why, size_t n)
{
    if (j->nseg + 3 > TC_XFER_SEGS)
        return snprintf(why, n, "internal error: a slice's upload job is full"), -1;
    const int64_t k0 = (int64_t)A->p[r0], k1 = (int64_t)A->p[r1];
    j->seg[j->nseg++] = (tc_xfer_seg){dp + (size_t)(r0 + s) * 4, (char *)(A->p + r0),
                                      (size_t)(r1 - r0 + 1), 8, 4, k0};
    if (k1 > k0) {
        j->seg[j->nseg++] = (tc_xfer_seg){dj + (size_t)k0 * 4, (char *)(A->j + k0),
                                          (size_t)(k1 - k0), 8, 4, 0};
        j->seg[j->nseg++] = (tc_xfer_seg){dx + (size_t)k0 * es, (char *)A->x + (size_t)k0 * es,
                                          (size_t)(k1 - k0) * es, 1, 1, 0};
    }
    return 0;
}

/* Row cuts r[0..ns] of ns slices that move equal bytes (A's indices and values up, C's rows
 * down); every slice at least one row (A->rows >= ns). */
static void tc_pipe_cuts(const tc_grb_csr *A, size_t es, size_t rowb, int ns, int64_t *r)
{
    const int64_t m = A->rows;
    const double wa = (double)(4 + es), wc = (double)rowb;
    const double total = wa * (double)A->nnz + wc * (double)m;
    r[0] = 0;
    r[ns] = m;
    for (int q = 1; q < ns; q++) {
        const double goal = total * q / ns;
        int64_t lo = r[q - 1], hi = m;
        while (lo < hi) { /* first row whose prefix reaches the goal */
            const int64_t mid = lo + (hi - lo) / 2;
            if (wa * (double)A->p[mid] + wc * (double)mid >= goal)
                hi = mid;
            else
                lo = mid + 1;
        }
        r[q] = lo;
    }
    for (int q = 1; q < ns; q++)
        r[q] = r[q] > r[q - 1] ? r[q] : r[q - 1] + 1;
    for (int q = ns - 1; q > 0; q--)
        r[q] = r[q] < r[q + 1] ? r[q] : r[q + 1] - 1;
}

/* How far each slice's columns reach into B, scanned on the host lanes. */
typedef struct {
    const GrB_Index *p, *j;
    const int64_t *r;
    int ns;
    int64_t limit[TC_PIPE_MAX]; /* a slice reaching past this gives up */
    int64_t reach[TC_PIPE_MAX]; /* 1 + the slice's largest column; 0 when it has none */
    atomic_int give_up;
    pthread_mutex_t lock;
} tc_reach_job;

#define TC_REACH_STEP 65536 /* entries between looks at give_up */

static void tc_reach_part(void *arg, size_t lo, size_t hi)
{
    tc_reach_job *rj = arg;
    int64_t top[TC_PIPE_MAX] = {0};
    int q = 0, quit = 0;
    for (size_t e = lo; e < hi && !quit;) {
        while ((size_t)rj->p[rj->r[q + 1]] <= e) /* e < nnz: stops at q <= ns - 1 */
            q++;
        size_t end = (size_t)rj->p[rj->r[q + 1]];
        end = end < hi ? end : hi;
        end = end < e + TC_REACH_STEP ? end : e + TC_REACH_STEP;
        GrB_Index t = 0;
        for (size_t i = e; i < end; i++)
            t = rj->j[i] > t ? rj->j[i] : t;
        if ((int64_t)t + 1 > top[q])
            top[q] = (int64_t)t + 1;
        if (top[q] > rj->limit[q]) {
            atomic_store(&rj->give_up, 1);
            quit = 1;
        } else if (atomic_load_explicit(&rj->give_up, memory_order_relaxed)) {
            quit = 1;
        }
        e = end;
    }
    pthread_mutex_lock(&rj->lock);
    for (int s = 0; s < rj->ns; s++)
        rj->reach[s] = top[s] > rj->reach[s] ? top[s] : rj->reach[s];
    pthread_mutex_unlock(&rj->lock);
}

/* B's chunk bounds bc[0..ns-1] (chunk s: rows bc[s-1] to bc[s], bc[-1] = 0) when every slice
 * s of A (cut at r) reaches no further than its share of B plus a quarter of it; 0 when one
 * reaches further (B then goes up whole), 1 otherwise.  bc[ns - 1] is all of B. */
static int tc_pipe_reach(const tc_grb_csr *A, const int64_t *r, int ns, int64_t *bc)
{
    const int64_t k = A->cols;
    tc_reach_job rj;
    memset(&rj, 0, sizeof rj);
    rj.p = A->p;
    rj.j = A->j;
    rj.r = r;
    rj.ns = ns;
    for (int q = 0; q < ns; q++)
        rj.limit[q] = k / ns * (q + 1) + k % ns * (q + 1) / ns + k / 4;
    atomic_init(&rj.give_up, 0);
    pthread_mutex_init(&rj.lock, NULL);
    tc_lanes_parallel((size_t)A->nnz, sizeof *A->j, tc_reach_part, &rj);
    pthread_mutex_destroy(&rj.lock);
    if (atomic_load(&rj.give_up))
        return 0;
    int64_t at = 0;
    for (int q = 0; q < ns; q++) {
        at = rj.reach[q] > at ? rj.reach[q] : at;
        bc[q] = q == ns - 1 ? k : at < k ? at : k;
    }
    return 1;
}

/* What a sliced SpMM's step launches: slice q's multiplication on the handle's stream. */
typedef struct {
    tcsparseSpMatDescr_t *dA;
    tcsparseDnMatDescr_t dB, *dC;
    cudaDataType ty;
    const void *one, *zero;
    void *work;
    char *why;
    size_t n;
} tc_pipe_ctx;

static int tc_pipe_launch(void *arg, int q)
{
    tc_pipe_ctx *c = arg;
    tcsparseStatus_t s = tcsparseSpMM(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                      TCSPARSE_OPERATION_NON_TRANSPOSE, c->one, c->dA[q], c->dB,
                                      c->zero, c->dC[q], c->ty, TCSPARSE_SPMM_ALG_DEFAULT, c->work);
    return s == TCSPARSE_STATUS_SUCCESS ? 0 : tc_tcfail(c->why, c->n, "tcsparseSpMM", s);
}

static int tc_grb_gpu_spmm_pipe(tc_grb_vtype vt, const tc_grb_csr *A, const tc_grb_dense *B,
                                tc_grb_pin *pin_b, tc_grb_pin_state st_b, void *out,
                                tc_grb_times *t, char *why, size_t n)
{
    enum { SMAX = TC_PIPE_MAX };
    const size_t es = tc_grb_esize(vt);
    const cudaDataType ty = tc_cuda_type(vt);
    const int64_t m = A->rows, cols = B->cols;
    const size_t rowb = (size_t)cols * es;
    tcsparseSpMatDescr_t dA[SMAX] = {NULL};
    tcsparseDnMatDescr_t dB = NULL, dC[SMAX] = {NULL};
    cudaEvent_t done_ev[SMAX] = {NULL};
    void *dp, *dj, *dx, *b_dev, *c_dev, *work = NULL;
    size_t wbytes = 0;
    int64_t r[SMAX + 1], bc[SMAX];
    int rc = -1, S = TC_PIPE_SLICES, wave = 0;
    tc_flow *flow = NULL;
    const void *one = tc_scalar(vt, 1), *zero = tc_scalar(vt, 0);
    tcsparseStatus_t s;
    cudaError_t e;
    cudaStream_t stream;

    double t0 = tc_lanes_now_ms();
    /* read at every call, so that a benchmark can interleave the settings */
    const char *fe = getenv("TCSPARSE_GRB_FLOW"), *we = getenv("TCSPARSE_GRB_WAVE");
    const int flow_env = !(fe != NULL && strcmp(fe, "0") == 0);
    char *wend = NULL;
    const long wv = we != NULL && *we != '\0' ? strtol(we, &wend, 10) : -1;
    /* step by step, every slice costs a barrier: 8 slices did best there, 16 in one flow */
    const int step_only = !flow_env || tc_nlanes < 3; /* lanes set up by tc_spmm_pipe_wanted */
    const int fine = wend != NULL && *wend == '\0' && (wv == 0 || (wv >= 2 && wv <= TC_PIPE_MAX))
                         ? (int)wv
                         : step_only ? TC_PIPE_FINE / 2 : TC_PIPE_FINE;
    if (fine > 0 && (pin_b == NULL || st_b == TC_PIN_NONE) && m >= fine && A->nnz > 0) {
        tc_pipe_cuts(A, es, rowb, fine, r);
        if ((wave = tc_pipe_reach(A, r, fine, bc)) != 0)
            S = fine;
    }
    if (!wave)
        tc_pipe_cuts(A, es, rowb, S, r);

    tc_xfer_job up;
    memset(&up, 0, sizeof up);
    up.up = 1;
    tc_defer_begin(); /* B (when it goes up whole) joins the first job */
    if (tc_handle(why, n) || tc_route_for(1, why, n) ||
        tc_scratch_get(TC_S_P, (size_t)(m + 1 + S) * 4, &dp, why, n) ||
        tc_scratch_get(TC_S_J, (size_t)A->nnz * 4 + 4, &dj, why, n) ||
        tc_scratch_get(TC_S_X, (size_t)A->nnz * es + es, &dx, why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)m * rowb, &c_dev, why, n) ||
        (wave ? tc_scratch_get(TC_S_B, (size_t)B->rows * rowb, &b_dev, why, n)
              : tc_dense_up(B, pin_b, st_b, TC_S_B, es, &b_dev, why, n))) {
        tc_defer_end(1, why, n);
        goto done;
    }
    up = tc_defer.job;
    tc_defer_end(1, why, n); /* its segments run below, with A's first slice */
    if ((s = tcsparseGetStream(tc_h, &stream)) != TCSPARSE_STATUS_SUCCESS) {
        tc_tcfail(why, n, "tcsparseGetStream", s);
        goto done;
    }
    if ((s = tcsparseCreateDnMat(&dB, B->rows, B->cols, B->ld, b_dev, ty, TCSPARSE_ORDER_ROW))) {
        tc_tcfail(why, n, "tcsparseCreateDnMat", s);
        goto done;
    }
    for (int q = 0; q < S; q++) {
        const int64_t rows = r[q + 1] - r[q], k0 = (int64_t)A->p[r[q]];
        const int64_t nnz = (int64_t)A->p[r[q + 1]] - k0;
        size_t wb = 0;
        if ((s = tcsparseCreateCsr(&dA[q], rows, A->cols, nnz, (char *)dp + (size_t)(r[q] + q) * 4,
                                   (char *)dj + (size_t)k0 * 4, (char *)dx + (size_t)k0 * es,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, ty)) ||
            (s = tcsparseCreateDnMat(&dC[q], rows, cols, cols, (char *)c_dev + (size_t)r[q] * rowb,
                                     ty, TCSPARSE_ORDER_ROW)) ||
            (s = tcsparseSpMM_bufferSize(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                         TCSPARSE_OPERATION_NON_TRANSPOSE, one, dA[q], dB, zero,
                                         dC[q], ty, TCSPARSE_SPMM_ALG_DEFAULT, &wb))) {
            tc_tcfail(why, n, "setting up a slice", s);
            goto done;
        }
        wbytes = wb > wbytes ? wb : wbytes;
        if ((e = cudaEventCreateWithFlags(&done_ev[q], cudaEventDisableTiming)) != cudaSuccess) {
            tc_fail(why, n, "cudaEventCreate", e);
            goto done;
        }
    }
    if (tc_scratch_get(TC_S_WORK, wbytes, &work, why, n))
        goto done;

    /* the steps' jobs: step q moves B's chunk q (wave) and A's slice q up, and C's slice q
     * down once slice q is multiplied; step 0's upload also holds B when it goes up whole */
    if ((flow = calloc(1, sizeof *flow)) == NULL) {
        snprintf(why, n, "out of host memory");
        goto done;
    }
    flow->steps = S;
    for (int q = 0; q < S; q++) {
        tc_xfer_job *u = &flow->up[q], *d = &flow->down[q];
        if (q == 0)
            *u = up; /* B, deferred above (nothing when resident or in chunks) */
        u->up = 1;
        const int64_t b0 = q == 0 ? 0 : bc[q - 1], b1 = bc[q];
        if (wave && b1 > b0)
            u->seg[u->nseg++] = (tc_xfer_seg){(char *)b_dev + (size_t)b0 * rowb,
                                              (char *)B->x + (size_t)b0 * rowb,
                                              (size_t)(b1 - b0) * rowb, 1, 1, 0};
        if (tc_pipe_add_a(u, A, r[q], r[q + 1], q, dp, dj, dx, es, why, n))
            goto done;
        d->nseg = 1;
        d->seg[0] = (tc_xfer_seg){(char *)c_dev + (size_t)r[q] * rowb,
                                  (char *)out + (size_t)r[q] * rowb,
                                  (size_t)(r[q + 1] - r[q]) * rowb, 1, 1, 0};
    }
    tc_pipe_ctx ctx = {dA, dB, dC, ty, one, zero, work, why, n};
    flow->launch = tc_pipe_launch;
    flow->ctx = &ctx;
    flow->stream = stream;
    flow->done_ev = done_ev;
    double t1 = tc_lanes_now_ms();
    const int fr = flow_env ? tc_flow_run(flow, why, n) : 1;
    if (fr < 0)
        goto done;
    if (fr == 0) {
        t1 = flow->t_first;
    } else {
        /* step by step: an upload and a download at once, then the next step */
        if (tc_xfer_run(&flow->up[0], why, n))
            goto done;
        t1 = tc_lanes_now_ms();
        for (int q = 0; q < S; q++) {
            if (tc_pipe_launch(&ctx, q))
                goto done;
            if ((e = cudaEventRecord(done_ev[q], stream)) != cudaSuccess) {
                tc_fail(why, n, "cudaEventRecord", e);
                goto done;
            }
            tc_xfer_job none;
            memset(&none, 0, sizeof none);
            none.up = 1;
            flow->down[q].after = done_ev[q];
            if (tc_xfer_run_pair(q + 1 < S ? &flow->up[q + 1] : &none, &flow->down[q], why, n))
                goto done;
        }
    }
    if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) {
        tc_fail(why, n, "tcsparseSpMM", e);
        goto done;
    }
    double t2 = tc_lanes_now_ms();
    t->upload = t1 - t0;
    t->compute = 0; /* inside the next figure: slices overlap their transfers */
    t->download = t2 - t1;
    tc_kernel_name(t);
    snprintf(t->kernel + strlen(t->kernel), sizeof t->kernel - strlen(t->kernel), ", %d slices%s%s",
             S, wave ? ", B in chunks" : "", fr == 0 ? ", one flow" : ", step by step");
    rc = 0;
done:
    if (rc != 0) {
        (void)cudaDeviceSynchronize(); /* no slice may still run, or write scratch or out */
        (void)cudaGetLastError();
        tc_invalidate(pin_b);
    }
    for (int q = 0; q < S; q++) {
        if (dA[q] != NULL)
            tcsparseDestroySpMat(dA[q]);
        if (dC[q] != NULL)
            tcsparseDestroyDnMat(dC[q]);
        if (done_ev[q] != NULL)
            cudaEventDestroy(done_ev[q]);
    }
    if (dB != NULL)
        tcsparseDestroyDnMat(dB);
    free(flow);
    return rc;
}

/* ---------------------------------------------------------------- SpMM */

int tc_grb_gpu_spmm(tc_grb_vtype vt, const tc_grb_csr *A, tc_grb_pin *pin_a,
                    tc_grb_pin_state st_a, const tc_grb_dense *B, tc_grb_pin *pin_b,
                    tc_grb_pin_state st_b, void *out, tc_grb_times *t, char *why, size_t n)
{
    const size_t es = tc_grb_esize(vt);
    const cudaDataType ty = tc_cuda_type(vt);
    const int64_t m = A->rows, cols = B->cols;
    tcsparseSpMatDescr_t dA = NULL;
    tcsparseDnMatDescr_t dB = NULL, dC = NULL;
    int own_a = 0, rc = -1;
    void *b_dev, *c_dev, *work = NULL;
    size_t wbytes = 0;
    const void *one = tc_scalar(vt, 1), *zero = tc_scalar(vt, 0);
    tcsparseStatus_t s;

    if (tc_spmm_pipe_wanted(A, B, pin_a == NULL || st_a == TC_PIN_NONE, es))
        return tc_grb_gpu_spmm_pipe(vt, A, B, pin_b, st_b, out, t, why, n);
    double t0 = tc_lanes_now_ms();
    tc_defer_begin(); /* A's arrays and B move in one job */
    if (tc_handle(why, n) ||
        tc_sparse_up(A, 1, pin_a, st_a, vt, NULL, &dA, &own_a, why, n) ||
        tc_dense_up(B, pin_b, st_b, TC_S_B, es, &b_dev, why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)(m * cols) * es, &c_dev, why, n) ||
        tc_route_for(own_a, why, n)) {
        tc_defer_end(1, why, n);
        goto done;
    }
    if (tc_defer_end(0, why, n))
        goto done;
    double t1 = tc_lanes_now_ms();
    if ((s = tcsparseCreateDnMat(&dB, B->rows, B->cols, B->ld, b_dev, ty,
                                 B->row_major ? TCSPARSE_ORDER_ROW : TCSPARSE_ORDER_COL)) ||
        (s = tcsparseCreateDnMat(&dC, m, cols, B->row_major ? cols : m, c_dev, ty,
                                 B->row_major ? TCSPARSE_ORDER_ROW : TCSPARSE_ORDER_COL))) {
        tc_tcfail(why, n, "tcsparseCreateDnMat", s);
        goto done;
    }
    s = tcsparseSpMM_bufferSize(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                TCSPARSE_OPERATION_NON_TRANSPOSE, one, dA, dB, zero, dC, ty,
                                TCSPARSE_SPMM_ALG_DEFAULT, &wbytes);
    if (s != TCSPARSE_STATUS_SUCCESS) {
        tc_tcfail(why, n, "tcsparseSpMM_bufferSize", s);
        goto done;
    }
    if (tc_scratch_get(TC_S_WORK, wbytes, &work, why, n))
        goto done;
    s = tcsparseSpMM(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                     one, dA, dB, zero, dC, ty, TCSPARSE_SPMM_ALG_DEFAULT, work);
    if (s != TCSPARSE_STATUS_SUCCESS) {
        tc_tcfail(why, n, "tcsparseSpMM", s);
        goto done;
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        tc_fail(why, n, "tcsparseSpMM", e);
        goto done;
    }
    double t2 = tc_lanes_now_ms();
    if (tc_d2h(out, c_dev, (size_t)(m * cols) * es, why, n))
        goto done;
    double t3 = tc_lanes_now_ms();
    t->upload = t1 - t0;
    t->compute = t2 - t1;
    t->download = t3 - t2;
    tc_kernel_name(t);
    rc = 0;
done:
    if (dB != NULL)
        tcsparseDestroyDnMat(dB);
    if (dC != NULL)
        tcsparseDestroyDnMat(dC);
    if (own_a)
        tcsparseDestroySpMat(dA);
    if (rc != 0) {
        tc_invalidate(pin_a);
        tc_invalidate(pin_b);
    }
    return rc;
}

/* ---------------------------------------------------------------- SDDMM */

int tc_grb_gpu_sddmm(tc_grb_vtype vt, const tc_grb_csr *P, tc_grb_pin *pin_p,
                     tc_grb_pin_state st_p, const tc_grb_dense *L, tc_grb_pin *pin_l,
                     tc_grb_pin_state st_l, const tc_grb_dense *R, tc_grb_pin *pin_r,
                     tc_grb_pin_state st_r, void *out, tc_grb_times *t, char *why, size_t n)
{
    const size_t es = tc_grb_esize(vt);
    const cudaDataType ty = tc_cuda_type(vt);
    tcsparseSpMatDescr_t dP = NULL;
    tcsparseDnMatDescr_t dL = NULL, dR = NULL;
    int own_p = 0, rc = -1;
    void *l_dev, *r_dev, *o_dev, *work = NULL;
    size_t wbytes = 0;
    const void *one = tc_scalar(vt, 1), *zero = tc_scalar(vt, 0);
    tcsparseStatus_t s;
    cudaError_t e;

    double t0 = tc_lanes_now_ms();
    tc_defer_begin(); /* P's structure, L and R move in one job */
    if (tc_handle(why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)P->nnz * es, &o_dev, why, n) ||
        tc_sparse_up(P, 0, pin_p, st_p, vt, o_dev, &dP, &own_p, why, n) ||
        tc_dense_up(L, pin_l, st_l, TC_S_B, es, &l_dev, why, n) ||
        tc_route_for(own_p, why, n)) {
        tc_defer_end(1, why, n);
        goto done;
    }
    if (R->x == L->x && (pin_r == pin_l || st_r == TC_PIN_NONE || st_l == TC_PIN_NONE)) {
        r_dev = l_dev; /* C<M> = X*X': one array, two views */
    } else if (tc_dense_up(R, pin_r, st_r, TC_S_R, es, &r_dev, why, n)) {
        tc_defer_end(1, why, n);
        goto done;
    }
    if (tc_defer_end(0, why, n))
        goto done;
    /* beta is 0, but a NaN in uninitialised memory times 0 is still NaN */
    if ((e = cudaMemset(o_dev, 0, (size_t)P->nnz * es)) != cudaSuccess) {
        tc_fail(why, n, "cudaMemset", e);
        goto done;
    }
    double t1 = tc_lanes_now_ms();
    if ((s = tcsparseCreateDnMat(&dL, L->rows, L->cols, L->ld, l_dev, ty,
                                 L->row_major ? TCSPARSE_ORDER_ROW : TCSPARSE_ORDER_COL)) ||
        (s = tcsparseCreateDnMat(&dR, R->rows, R->cols, R->ld, r_dev, ty,
                                 R->row_major ? TCSPARSE_ORDER_ROW : TCSPARSE_ORDER_COL))) {
        tc_tcfail(why, n, "tcsparseCreateDnMat", s);
        goto done;
    }
    s = tcsparseSDDMM_bufferSize(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                 TCSPARSE_OPERATION_NON_TRANSPOSE, one, dL, dR, zero, dP, ty,
                                 TCSPARSE_SDDMM_ALG_DEFAULT, &wbytes);
    if (s != TCSPARSE_STATUS_SUCCESS) {
        tc_tcfail(why, n, "tcsparseSDDMM_bufferSize", s);
        goto done;
    }
    if (tc_scratch_get(TC_S_WORK, wbytes, &work, why, n))
        goto done;
    s = tcsparseSDDMM(tc_h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                      one, dL, dR, zero, dP, ty, TCSPARSE_SDDMM_ALG_DEFAULT, work);
    if (s != TCSPARSE_STATUS_SUCCESS) {
        tc_tcfail(why, n, "tcsparseSDDMM", s);
        goto done;
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
        tc_fail(why, n, "tcsparseSDDMM", e);
        goto done;
    }
    double t2 = tc_lanes_now_ms();
    if (tc_d2h(out, o_dev, (size_t)P->nnz * es, why, n))
        goto done;
    double t3 = tc_lanes_now_ms();
    t->upload = t1 - t0;
    t->compute = t2 - t1;
    t->download = t3 - t2;
    tc_kernel_name(t);
    rc = 0;
done:
    if (dL != NULL)
        tcsparseDestroyDnMat(dL);
    if (dR != NULL)
        tcsparseDestroyDnMat(dR);
    if (own_p)
        tcsparseDestroySpMat(dP);
    else if (dP != NULL && pin_p != NULL && pin_p->dev != NULL)
        tcsparseSpMatSetValues(dP, pin_p->dev->dx); /* the output buffer is not the pin's */
    if (rc != 0) {
        tc_invalidate(pin_p);
        tc_invalidate(pin_l);
        tc_invalidate(pin_r);
    }
    return rc;
}
