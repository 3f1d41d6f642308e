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
#include <cuda_runtime_api.h>
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
 * split between up to TC_XFER_LANES host threads; each thread owns two pinned buffers and a
 * stream, fills one buffer (or drains it) while the copy engine moves the other, and so the
 * host's memory bandwidth and the link are used at once.  The same pass can narrow 64-bit
 * indices to 32 bits on the way up (half the bytes to move).  TCSPARSE_GRB_STAGING=0 turns
 * staging off; any failure to set it up falls back to cudaMemcpy. */

#define TC_XFER_LANES 16
#define TC_XFER_BUF ((size_t)2 << 20)  /* bytes of one pinned buffer */
#define TC_XFER_MIN ((size_t)1 << 20)  /* smaller copies go through cudaMemcpy */
#define TC_XFER_PER_LANE ((size_t)1 << 20) /* bytes a lane must have to pay for its thread */

typedef struct {
    void *buf[2];
    cudaEvent_t ev[2];
    cudaStream_t s;
} tc_xfer_lane;

static tc_xfer_lane tc_lanes[TC_XFER_LANES];
static int tc_nlanes;      /* lanes set up */
static int tc_xfer_state;  /* 0 not tried, 1 ready, -1 unavailable */

static void tc_xfer_lane_free(tc_xfer_lane *x)
{
    for (int b = 0; b < 2; b++) {
        if (x->buf[b] != NULL)
            cudaFreeHost(x->buf[b]);
        if (x->ev[b] != NULL)
            cudaEventDestroy(x->ev[b]);
    }
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
    for (int b = 0; ok && b < 2; b++)
        ok = cudaHostAlloc(&x->buf[b], TC_XFER_BUF, cudaHostAllocDefault) == cudaSuccess &&
             cudaEventCreateWithFlags(&x->ev[b], cudaEventDisableTiming) == cudaSuccess;
    return ok;
}

/* Lanes for a copy of bytes (at least one), set up on first use: as many as the host has
 * threads (TCSPARSE_GRB_THREADS), at most TC_XFER_LANES.  0 when staging is off or
 * unavailable. */
static int tc_xfer_lanes_for(size_t bytes)
{
    if (bytes < TC_XFER_MIN) /* before the set-up: small work never pins 64 MiB */
        return 0;
    if (tc_xfer_state == 0) {
        const char *e = getenv("TCSPARSE_GRB_STAGING");
        int want = tc_grb_threads();
        if (want > TC_XFER_LANES)
            want = TC_XFER_LANES;
        tc_xfer_state = -1;
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

/* One copy: count elements of src_es bytes on the host side, dst_es on the other (8 -> 4:
 * 64-bit indices narrowed on the way up).  Lane l moves elements [lo(l), lo(l + 1)). */
typedef struct {
    int up, device, lanes;
    char *dev;
    char *host;
    size_t count, host_es, dev_es;
    cudaError_t err[TC_XFER_LANES];
} tc_xfer_job;

static void tc_narrow(int32_t *dst, const int64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (int32_t)src[i];
}

static void tc_xfer_lane_run(void *arg, int l)
{
    tc_xfer_job *j = arg;
    tc_xfer_lane *x = &tc_lanes[l];
    size_t lo, hi;
    tc_grb_share(j->count, j->lanes, l, &lo, &hi);
    const size_t per = TC_XFER_BUF / (j->host_es > j->dev_es ? j->host_es : j->dev_es);
    cudaError_t e = cudaSetDevice(j->device);
    if (j->up) {
        for (size_t at = lo, c = 0; at < hi && e == cudaSuccess; at += per, c++) {
            const int b = (int)(c & 1);
            const size_t len = hi - at < per ? hi - at : per;
            if ((e = cudaEventSynchronize(x->ev[b])) != cudaSuccess) /* the engine is done with it */
                break;
            if (j->host_es == j->dev_es)
                memcpy(x->buf[b], j->host + at * j->host_es, len * j->host_es);
            else
                tc_narrow(x->buf[b], (const int64_t *)(const void *)(j->host + at * j->host_es), len);
            e = cudaMemcpyAsync(j->dev + at * j->dev_es, x->buf[b], len * j->dev_es,
                                cudaMemcpyHostToDevice, x->s);
            if (e == cudaSuccess)
                e = cudaEventRecord(x->ev[b], x->s);
        }
    } else {
        /* piece c goes to buffer c & 1; piece c + 1 is in flight while piece c is drained */
        const size_t pieces = hi > lo ? (hi - lo + per - 1) / per : 0;
        for (size_t c = 0; c < pieces + 1 && e == cudaSuccess; c++) {
            if (c < pieces) {
                const size_t at = lo + c * per, len = hi - at < per ? hi - at : per;
                e = cudaMemcpyAsync(x->buf[c & 1], j->dev + at * j->dev_es, len * j->dev_es,
                                    cudaMemcpyDeviceToHost, x->s);
                if (e == cudaSuccess)
                    e = cudaEventRecord(x->ev[c & 1], x->s);
            }
            if (c > 0 && e == cudaSuccess) {
                const size_t at = lo + (c - 1) * per, len = hi - at < per ? hi - at : per;
                if ((e = cudaEventSynchronize(x->ev[(c - 1) & 1])) == cudaSuccess)
                    memcpy(j->host + at * j->host_es, x->buf[(c - 1) & 1], len * j->host_es);
            }
        }
    }
    cudaError_t s = cudaStreamSynchronize(x->s);
    j->err[l] = e != cudaSuccess ? e : s;
    if (j->err[l] != cudaSuccess)
        (void)cudaGetLastError();
}

static int tc_xfer(int up, void *d, void *h, size_t count, size_t host_es, size_t dev_es,
                   char *why, size_t n)
{
    if (count == 0)
        return 0;
    const size_t bytes = count * host_es;
    int lanes = tc_xfer_lanes_for(bytes);
    cudaError_t e = cudaSuccess;
    if (lanes == 0 && host_es == dev_es) {
        e = up ? cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice)
               : cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
        return e == cudaSuccess ? 0 : tc_fail(why, n, up ? "cudaMemcpy to the device"
                                                         : "cudaMemcpy to the host", e);
    }
    if (lanes == 0) { /* narrowing without pinned buffers: through one host copy */
        int32_t *tmp = malloc(count * dev_es);
        if (tmp == NULL)
            return snprintf(why, n, "out of host memory"), -1;
        tc_narrow(tmp, h, count);
        e = cudaMemcpy(d, tmp, count * dev_es, cudaMemcpyHostToDevice);
        free(tmp);
        return e == cudaSuccess ? 0 : tc_fail(why, n, "cudaMemcpy to the device", e);
    }
    tc_xfer_job j;
    memset(&j, 0, sizeof j);
    j.up = up;
    j.lanes = lanes;
    j.dev = d;
    j.host = h;
    j.count = count;
    j.host_es = host_es;
    j.dev_es = dev_es;
    if ((e = cudaGetDevice(&j.device)) != cudaSuccess)
        return tc_fail(why, n, "cudaGetDevice", e);
    tc_grb_run_lanes(lanes, tc_xfer_lane_run, &j);
    for (int l = 0; l < lanes; l++)
        if (j.err[l] != cudaSuccess)
            return tc_fail(why, n, up ? "staged copy to the device" : "staged copy to the host",
                           j.err[l]);
    return 0;
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
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = vt == TC_GRB_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = vt == TC_GRB_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    tcsparseStatus_t s;

    double t0 = tc_grb_now_ms();
    if (tc_handle(why, n) ||
        tc_sparse_up(A, 1, pin_a, st_a, vt, NULL, &dA, &own_a, why, n) ||
        tc_dense_up(B, pin_b, st_b, TC_S_B, es, &b_dev, why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)(m * cols) * es, &c_dev, why, n) ||
        tc_route_for(own_a, why, n))
        goto done;
    double t1 = tc_grb_now_ms();
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
    double t2 = tc_grb_now_ms();
    if (tc_d2h(out, c_dev, (size_t)(m * cols) * es, why, n))
        goto done;
    double t3 = tc_grb_now_ms();
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
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = vt == TC_GRB_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = vt == TC_GRB_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    tcsparseStatus_t s;
    cudaError_t e;

    double t0 = tc_grb_now_ms();
    if (tc_handle(why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)P->nnz * es, &o_dev, why, n) ||
        tc_sparse_up(P, 0, pin_p, st_p, vt, o_dev, &dP, &own_p, why, n) ||
        tc_dense_up(L, pin_l, st_l, TC_S_B, es, &l_dev, why, n) ||
        tc_route_for(own_p, why, n))
        goto done;
    if (R->x == L->x && (pin_r == pin_l || st_r == TC_PIN_NONE || st_l == TC_PIN_NONE)) {
        r_dev = l_dev; /* C<M> = X*X': one array, two views */
    } else if (tc_dense_up(R, pin_r, st_r, TC_S_R, es, &r_dev, why, n)) {
        goto done;
    }
    /* beta is 0, but a NaN in uninitialised memory times 0 is still NaN */
    if ((e = cudaMemset(o_dev, 0, (size_t)P->nnz * es)) != cudaSuccess) {
        tc_fail(why, n, "cudaMemset", e);
        goto done;
    }
    double t1 = tc_grb_now_ms();
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
    double t2 = tc_grb_now_ms();
    if (tc_d2h(out, o_dev, (size_t)P->nnz * es, why, n))
        goto done;
    double t3 = tc_grb_now_ms();
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
