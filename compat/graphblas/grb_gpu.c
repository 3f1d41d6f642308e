/* The GPU backend of the GraphBLAS adapter: uploads the arrays GraphBLAS holds on the host,
 * calls tcsparseSpMM / tcsparseSDDMM (whose route picks the tensor cores or cuSPARSE), and
 * brings the result back.  GraphBLAS's 64-bit offsets and indices go up as 32-bit ones
 * where they fit, as they are otherwise (tcsparse takes 64-bit ones too).  The copies go
 * through the staged-copy engine (xfer.h).
 *
 * Device buffers of unpinned operands are kept between calls and only grow, so that a
 * sequence of calls does not pay cudaMalloc/cudaFree each time; pinned operands have their
 * own.  Everything here runs under the adapter lock.
 *
 * The GPU is the device current in the calling thread.  The tcsparse handle and the scratch
 * buffers are kept per device (a handle serves the device of its first use; a buffer is its
 * device's memory); a pin's device copy lives on one device and is rebuilt on the current one
 * when a call comes from another.
 *
 * Over 900 lines: the SpMM in one piece, the SpMM in row slices and the SDDMM share this
 * file's static state (the tcsparse handle, the scratch buffers) and its helpers that put
 * operands and pins on the device; the sections below keep them apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "grb_internal.h"
#include "xfer.h"

struct tc_grb_pin_dev {
    int valid;                 /* matches the pin's record */
    int device;                /* where dp, dj, dx and descr's plan live (with dp or dx set) */
    void *dp, *dj, *dx;
    size_t cap_p, cap_j, cap_x;
    tcsparseSpMatDescr_t descr; /* sparse forms: owns tcsparse's cached plan */
};

typedef struct {
    void *p;
    size_t cap;
} tc_dbuf;

enum { TC_S_P, TC_S_J, TC_S_X, TC_S_B, TC_S_R, TC_S_OUT, TC_S_WORK, TC_S_COUNT };

/* The handle and scratch buffers of each device (devices past the last are not served);
 * tc_h and tc_scratch point at the current device's, set by tc_handle at the start of every
 * call. */
#define TC_GRB_DEVICES 64
static struct {
    tcsparseHandle_t h;
    tc_dbuf scratch[TC_S_COUNT];
} tc_gpu[TC_GRB_DEVICES];
static tcsparseHandle_t tc_h;
static tc_dbuf *tc_scratch;
static int tc_gpu_state = -1; /* -1 not probed, 0 unusable, 1 usable */
static char tc_gpu_why[128];

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

static int tc_tcfail(char *why, size_t n, const char *what, tcsparseStatus_t st)
{
    snprintf(why, n, "%s: %s: %s", what, tcsparseGetErrorName(st), tcsparseGetLastErrorMessage());
    return -1;
}

/* The current device, or -1 with why. */
static int tc_device(char *why, size_t n)
{
    int dev = -1;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return tc_xfer_fail(why, n, "cudaGetDevice", e);
    if (dev < 0 || dev >= TC_GRB_DEVICES)
        return snprintf(why, n, "CUDA device %d: the adapter serves devices 0-%d", dev,
                        TC_GRB_DEVICES - 1), -1;
    return dev;
}

/* The current device's handle and scratch buffers in tc_h and tc_scratch (the handle created
 * on its first call). */
static int tc_handle(char *why, size_t n)
{
    const int dev = tc_device(why, n);
    if (dev < 0)
        return -1;
    if (tc_gpu[dev].h == NULL) {
        tcsparseStatus_t st = tcsparseCreate(&tc_gpu[dev].h);
        if (st != TCSPARSE_STATUS_SUCCESS) {
            tc_gpu[dev].h = NULL;
            return tc_tcfail(why, n, "tcsparseCreate", st);
        }
    }
    tc_h = tc_gpu[dev].h;
    tc_scratch = tc_gpu[dev].scratch;
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
        return tc_xfer_fail(why, n, "cudaMalloc", e);
    }
    *cap = bytes;
    return 0;
}

static int tc_scratch_get(int slot, size_t bytes, void **out, char *why, size_t n)
{
    if (tc_scratch == NULL) /* tc_handle sets the current device's buffers first */
        return snprintf(why, n, "internal: scratch buffer asked for before the handle"), -1;
    tc_dbuf *b = &tc_scratch[slot];
    if (tc_reserve(&b->p, &b->cap, bytes, why, n) != 0)
        return -1;
    *out = b->p;
    return 0;
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
        return tc_xfer_h2d_narrow(dp, c->p, (size_t)(c->rows + 1), why, n) ||
               tc_xfer_h2d_narrow(dj, c->j, (size_t)c->nnz, why, n);
    return tc_xfer_h2d(dp, c->p, (size_t)(c->rows + 1) * 8, why, n) ||
           tc_xfer_h2d(dj, c->j, (size_t)c->nnz * 8, why, n);
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

/* Frees a pin's device copy (its descriptor, with the plan, and its arrays) on the device it
 * lives on, the current one put back after; the copy is then invalid. */
static void tc_pin_dev_clear(struct tc_grb_pin_dev *d)
{
    int cur = -1;
    const int held = d->descr != NULL || d->dp != NULL || d->dj != NULL || d->dx != NULL;
    const int other = held && cudaGetDevice(&cur) == cudaSuccess && cur != d->device &&
                      cudaSetDevice(d->device) == cudaSuccess;
    if (d->descr != NULL)
        tcsparseDestroySpMat(d->descr);
    cudaFree(d->dp);
    cudaFree(d->dj);
    cudaFree(d->dx);
    if (other)
        (void)cudaSetDevice(cur);
    if (held)
        (void)cudaGetLastError();
    const int device = d->device;
    memset(d, 0, sizeof *d);
    d->device = device;
}

/* A pin's device copy made on another device than the current one: freed there, to be
 * rebuilt here (1); 0 when it is the current device's; -1 (with why) when the current device
 * is not known. */
static int tc_pin_follow_device(struct tc_grb_pin_dev *d, char *why, size_t n)
{
    const int dev = tc_device(why, n);
    if (dev < 0)
        return -1;
    if (d->device == dev)
        return 0;
    tc_pin_dev_clear(d);
    d->device = dev;
    return 1;
}

/* Brings a sparse pin's device copy up to date with csr (whose values are full). */
static int tc_pin_sync_sparse(tc_grb_pin *pin, tc_grb_pin_state st, const tc_grb_csr *c,
                              char *why, size_t n)
{
    struct tc_grb_pin_dev *d = tc_pin_dev(pin);
    if (d == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    const int moved = tc_pin_follow_device(d, why, n);
    if (moved < 0)
        return -1;
    if (moved || !d->valid || d->descr == NULL)
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
    if (tc_xfer_h2d(d->dx, c->x, (size_t)c->nnz * es, why, n))
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
    const int moved = tc_pin_follow_device(d, why, n);
    if (moved < 0)
        return -1;
    if (moved || !d->valid)
        st = TC_PIN_STRUCTURE;
    if (st == TC_PIN_HIT)
        return 0;
    const size_t bytes = (size_t)(v->rows * v->cols) * tc_grb_esize(pin->vtype);
    d->valid = 0;
    if (v->x == NULL)
        return snprintf(why, n, "out of host memory"), -1;
    if (tc_reserve(&d->dx, &d->cap_x, bytes, why, n) || tc_xfer_h2d(d->dx, v->x, bytes, why, n))
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
    tc_pin_dev_clear(d);
    free(d);
    pin->dev = NULL;
}

void tc_grb_gpu_release(void)
{
    int cur = -1, switched = 0;
    for (int dev = 0; dev < TC_GRB_DEVICES; dev++) {
        int held = tc_gpu[dev].h != NULL;
        for (int s = 0; s < TC_S_COUNT; s++)
            held |= tc_gpu[dev].scratch[s].p != NULL;
        if (!held)
            continue;
        /* each device's buffers freed with that device current */
        if (cur < 0 && cudaGetDevice(&cur) != cudaSuccess)
            cur = -1;
        if (cur >= 0 && dev != cur)
            switched |= cudaSetDevice(dev) == cudaSuccess;
        for (int s = 0; s < TC_S_COUNT; s++) {
            cudaFree(tc_gpu[dev].scratch[s].p);
            tc_gpu[dev].scratch[s].p = NULL;
            tc_gpu[dev].scratch[s].cap = 0;
        }
        if (tc_gpu[dev].h != NULL)
            tcsparseDestroy(tc_gpu[dev].h);
        tc_gpu[dev].h = NULL;
    }
    if (switched)
        (void)cudaSetDevice(cur);
    tc_h = NULL;
    tc_scratch = NULL;
    tc_xfer_release();
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
    return tc_scratch_get(slot, bytes, out, why, n) || tc_xfer_h2d(*out, v->x, bytes, why, n);
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
         tc_xfer_h2d(dx, c->x, (size_t)c->nnz * es, why, n)))
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
 * TCSPARSE_X_GRB_PIPE=0 turns slicing off, =1 takes it for calls below TC_PIPE_MIN too;
 * TCSPARSE_X_GRB_WAVE=0 keeps B whole, =2..32 sets the number of slices then (default 16, 8
 * when the call goes step by step: each step then ends in a barrier). */

#define TC_PIPE_SLICES 4
#define TC_PIPE_FINE 16 /* slices when B goes up in chunks (TCSPARSE_X_GRB_WAVE: 2..32) */
#define TC_PIPE_MAX TC_XFER_FLOW_STEPS /* each slice is a step of the flow */
#define TC_PIPE_MIN ((size_t)32 << 20) /* calls moving fewer bytes of A and C run whole */

static int tc_spmm_pipe_wanted(const tc_grb_csr *A, const tc_grb_dense *B, int a_one_shot,
                               size_t es)
{
    /* TC_CFG_RULE (by size), 0 never, 1 whenever the call qualifies */
    const int env = tc_config_get()->grb.pipe;
    if (env == 0 || !a_one_shot || !B->row_major || !tc_narrow_ok(A) || A->rows < TC_PIPE_SLICES)
        return 0;
    const size_t bytes = (size_t)A->nnz * (4 + es) + (size_t)(A->rows * B->cols) * es;
    if (env < 0 && bytes < TC_PIPE_MIN)
        return 0;
    return tc_xfer_lanes() >= 2; /* sets the lanes up */
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
    tc_xfer_flow *flow = NULL;
    const void *one = tc_scalar(vt, 1), *zero = tc_scalar(vt, 0);
    tcsparseStatus_t s;
    cudaError_t e;
    cudaStream_t stream;

    double t0 = tc_lanes_now_ms();
    /* taken at every call, so that a benchmark can interleave the settings (with
     * tcsparse_GrB_reload_config between them) */
    const int flow_env = tc_config_get()->grb.flow;
    const int wv = tc_config_get()->grb.wave;
    /* step by step, every slice costs a barrier: 8 slices did best there, 16 in one flow */
    const int step_only = !flow_env || tc_xfer_lanes() < 3; /* set up by tc_spmm_pipe_wanted */
    const int fine = wv != TC_CFG_RULE && (wv == 0 || (wv >= 2 && wv <= TC_PIPE_MAX))
                         ? wv
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
    tc_xfer_defer_begin(); /* B (when it goes up whole) joins the first job */
    if (tc_handle(why, n) || tc_route_for(1, why, n) ||
        tc_scratch_get(TC_S_P, (size_t)(m + 1 + S) * 4, &dp, why, n) ||
        tc_scratch_get(TC_S_J, (size_t)A->nnz * 4 + 4, &dj, why, n) ||
        tc_scratch_get(TC_S_X, (size_t)A->nnz * es + es, &dx, why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)m * rowb, &c_dev, why, n) ||
        (wave ? tc_scratch_get(TC_S_B, (size_t)B->rows * rowb, &b_dev, why, n)
              : tc_dense_up(B, pin_b, st_b, TC_S_B, es, &b_dev, why, n))) {
        tc_xfer_defer_end(1, why, n);
        goto done;
    }
    tc_xfer_defer_take(&up); /* its segments run below, with A's first slice */
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
            tc_xfer_fail(why, n, "cudaEventCreate", e);
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
    const int fr = flow_env ? tc_xfer_flow_run(flow, why, n) : 1;
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
                tc_xfer_fail(why, n, "cudaEventRecord", e);
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
        tc_xfer_fail(why, n, "tcsparseSpMM", e);
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
    tc_xfer_defer_begin(); /* A's arrays and B move in one job */
    if (tc_handle(why, n) ||
        tc_sparse_up(A, 1, pin_a, st_a, vt, NULL, &dA, &own_a, why, n) ||
        tc_dense_up(B, pin_b, st_b, TC_S_B, es, &b_dev, why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)(m * cols) * es, &c_dev, why, n) ||
        tc_route_for(own_a, why, n)) {
        tc_xfer_defer_end(1, why, n);
        goto done;
    }
    if (tc_xfer_defer_end(0, why, n))
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
        tc_xfer_fail(why, n, "tcsparseSpMM", e);
        goto done;
    }
    double t2 = tc_lanes_now_ms();
    if (tc_xfer_d2h(out, c_dev, (size_t)(m * cols) * es, why, n))
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
    tc_xfer_defer_begin(); /* P's structure, L and R move in one job */
    if (tc_handle(why, n) ||
        tc_scratch_get(TC_S_OUT, (size_t)P->nnz * es, &o_dev, why, n) ||
        tc_sparse_up(P, 0, pin_p, st_p, vt, o_dev, &dP, &own_p, why, n) ||
        tc_dense_up(L, pin_l, st_l, TC_S_B, es, &l_dev, why, n) ||
        tc_route_for(own_p, why, n)) {
        tc_xfer_defer_end(1, why, n);
        goto done;
    }
    if (R->x == L->x && (pin_r == pin_l || st_r == TC_PIN_NONE || st_l == TC_PIN_NONE)) {
        r_dev = l_dev; /* C<M> = X*X': one array, two views */
    } else if (tc_dense_up(R, pin_r, st_r, TC_S_R, es, &r_dev, why, n)) {
        tc_xfer_defer_end(1, why, n);
        goto done;
    }
    if (tc_xfer_defer_end(0, why, n))
        goto done;
    /* beta is 0, but a NaN in uninitialised memory times 0 is still NaN */
    if ((e = cudaMemset(o_dev, 0, (size_t)P->nnz * es)) != cudaSuccess) {
        tc_xfer_fail(why, n, "cudaMemset", e);
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
        tc_xfer_fail(why, n, "tcsparseSDDMM", e);
        goto done;
    }
    double t2 = tc_lanes_now_ms();
    if (tc_xfer_d2h(out, o_dev, (size_t)P->nnz * es, why, n))
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
