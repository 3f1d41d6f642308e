#define _POSIX_C_SOURCE 200809L
/* Several GPUs (every test needs two and skips with fewer: TC_REQUIRE_GPUS).
 *
 * What the library supports.  A handle belongs to the device current at its first use: its
 * cuSPARSE handle, its CSR_ALG3 workspaces and the plans it finds are that device's, and a
 * call made with it while another device is current is refused (INVALID_VALUE), so a program
 * driving two GPUs creates a handle per device.  A sparse descriptor is not tied to a device,
 * but its arrays live on one; its plan is kept for the device of the handle that built it,
 * and a call from another device's handle rebuilds it there (the first device's is freed).
 * One descriptor serves two GPUs in either of two ways:
 *  - re-pointed: tcsparseCsrSetPointers to the copy of its arrays on the device whose handle
 *    runs the next calls (plan, cuSPARSE mirror and CSR_ALG3 workspaces follow the structure
 *    setter), the dense descriptors with tcsparseDnMatSetValues;
 *  - shared through peer access (cudaDeviceEnablePeerAccess): the arrays stay on one device
 *    and the other device's handle reads them over the link.  Each change of device rebuilds
 *    the plan; a late-ordering trial under way ends at the change (its plans and timing events
 *    are the first device's) and starts again on the new device.
 * Without one of these a handle of one device would run on arrays of another: a fault that
 * ends the CUDA context, which the library cannot tell in advance.
 *
 * Tests: one descriptor re-pointed back and forth between two devices, SpMM and SDDMM on the
 * route forced to the tensor cores and on the automatic one, then a handle used while the
 * other device is current (refused) and handles and descriptor destroyed from the other
 * device; one descriptor shared through peer access (skipped where device 1 cannot reach
 * device 0's memory), alternating, and a late-ordering trial interrupted by the other device;
 * two threads, each with its own device, handle, stream and descriptor, running 20 SpMMs and
 * 20 SDDMMs on each route at the same time.  Every result is checked against the CPU
 * reference in double (FP32 with 3xTF32: relative error 1e-5), the output poisoned (NaN)
 * before each call.  The worker threads check without Criterion's assertions (which must not
 * run off the test's thread) and report to the test's thread.  Over 600 lines: the three
 * tests share the problem, its device copies and the checked calls, which come first. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "testutil.h"
#include "gpu_test.h"  /* gen_or_fail() */
#include "late_case.h" /* grouped(), stats_of(), one, zero */

#define BOUND 1e-5 /* FP32 on the tensor cores (3xTF32) or cuSPARSE */
enum { KD = 32 };  /* SDDMM's inner dimension */

/* A problem on the host: A (pattern, FP32 values), SpMM's B (K x N row-major), SDDMM's X
 * (M x KD row-major) and Y (KD x K column-major, on A's pattern), and the references in
 * double from the rounded inputs. */
typedef struct {
    tc_csr m; /* values rounded to FP32 */
    int64_t N;
    int32_t *off;
    float *val, *B, *X, *Y;
    double *ref_spmm;  /* M x N row-major */
    double *ref_sddmm; /* nnz */
} problem;

static void problem_make(problem *p, tc_csr *m, int64_t N, uint64_t seed)
{
    const int64_t M = m->rows, K = m->cols, nnz = m->nnz;
    memset(p, 0, sizeof *p);
    p->m = *m;
    p->N = N;
    p->off = malloc(sizeof *p->off * (size_t)(M + 1));
    p->val = malloc(sizeof *p->val * (size_t)(nnz + 1));
    p->B = malloc(sizeof *p->B * (size_t)(K * N));
    p->X = malloc(sizeof *p->X * (size_t)(M * KD));
    p->Y = malloc(sizeof *p->Y * (size_t)(KD * K));
    p->ref_spmm = calloc((size_t)(M * N), sizeof *p->ref_spmm);
    p->ref_sddmm = calloc((size_t)nnz + 1, sizeof *p->ref_sddmm);
    double *b = malloc(sizeof *b * (size_t)(K * N)), *x = malloc(sizeof *x * (size_t)(M * KD));
    double *y = malloc(sizeof *y * (size_t)(KD * K));
    cr_assert(p->off && p->val && p->B && p->X && p->Y && p->ref_spmm && p->ref_sddmm && b && x &&
              y);
    for (int64_t i = 0; i <= M; i++)
        p->off[i] = (int32_t)m->row_off[i];
    for (int64_t e = 0; e < nnz; e++) {
        p->val[e] = (float)m->val[e];
        p->m.val[e] = p->val[e];
    }
    uint64_t st = seed;
    for (int64_t i = 0; i < K * N; i++)
        b[i] = p->B[i] = (float)tc_test_rand_uniform(&st);
    for (int64_t i = 0; i < M * KD; i++)
        x[i] = p->X[i] = (float)tc_test_rand_uniform(&st);
    for (int64_t i = 0; i < KD * K; i++)
        y[i] = p->Y[i] = (float)tc_test_rand_uniform(&st);
    const tcsparseOperation_t nt = TCSPARSE_OPERATION_NON_TRANSPOSE;
    tc_ref_dense Bd = {K, N, N, TCSPARSE_ORDER_ROW, b}, Cd = {M, N, N, TCSPARSE_ORDER_ROW, p->ref_spmm};
    tc_ref_spmm(nt, nt, 1.0, &p->m, &Bd, 0.0, &Cd);
    tc_ref_dense Xd = {M, KD, KD, TCSPARSE_ORDER_ROW, x}, Yd = {KD, K, KD, TCSPARSE_ORDER_COL, y};
    tc_ref_sddmm(nt, nt, 1.0, &Xd, &Yd, 0.0, &p->m, p->ref_sddmm);
    free(b);
    free(x);
    free(y);
}

static void problem_from_spec(problem *p, const char *spec, int64_t N, uint64_t seed)
{
    tc_csr m;
    gen_or_fail(spec, &m);
    problem_make(p, &m, N, seed);
}

static void problem_free(problem *p)
{
    tc_csr_free(&p->m);
    free(p->off);
    free(p->val);
    free(p->B);
    free(p->X);
    free(p->Y);
    free(p->ref_spmm);
    free(p->ref_sddmm);
}

/* A problem's arrays on one device, and the workspace of the calls made there.  With
 * `shared`, the sparse arrays (off, col, val, sval) are another copy's, reached by peer
 * access, and not freed here. */
typedef struct {
    int dev, shared;
    int32_t *off, *col;
    float *val, *sval; /* A's values (SpMM), SDDMM's output on A's pattern */
    float *B, *C, *X, *Y;
    void *buf;
    size_t buf_bytes;
} dcopy;

/* cudaMalloc and, when h is not NULL, a copy of h; the call's error in *e. */
static void *dev_copy_of(const void *h, size_t bytes, cudaError_t *e)
{
    void *d = NULL;
    if (*e == cudaSuccess)
        *e = cudaMalloc(&d, bytes ? bytes : 1);
    if (*e == cudaSuccess && h != NULL && bytes > 0)
        *e = cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    return d;
}

/* p's arrays on device dev (made current); from sparse_of, when not NULL, the sparse arrays
 * are taken as they are (peer access).  0, or -1 with msg. */
static int copy_make(dcopy *c, const problem *p, int dev, const dcopy *sparse_of, char *msg,
                     size_t n)
{
    const int64_t M = p->m.rows, K = p->m.cols, nnz = p->m.nnz, N = p->N;
    memset(c, 0, sizeof *c);
    c->dev = dev;
    cudaError_t e = cudaSetDevice(dev);
    if (sparse_of != NULL) {
        c->shared = 1;
        c->off = sparse_of->off;
        c->col = sparse_of->col;
        c->val = sparse_of->val;
        c->sval = sparse_of->sval;
    } else {
        c->off = dev_copy_of(p->off, sizeof(int32_t) * (size_t)(M + 1), &e);
        c->col = dev_copy_of(p->m.col, sizeof(int32_t) * (size_t)nnz, &e);
        c->val = dev_copy_of(p->val, sizeof(float) * (size_t)nnz, &e);
        c->sval = dev_copy_of(NULL, sizeof(float) * (size_t)nnz, &e);
    }
    c->B = dev_copy_of(p->B, sizeof(float) * (size_t)(K * N), &e);
    c->C = dev_copy_of(NULL, sizeof(float) * (size_t)(M * N), &e);
    c->X = dev_copy_of(p->X, sizeof(float) * (size_t)(M * KD), &e);
    c->Y = dev_copy_of(p->Y, sizeof(float) * (size_t)(KD * K), &e);
    if (e != cudaSuccess) {
        snprintf(msg, n, "device %d: setting up its copy: %s", dev, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

static void copy_free(dcopy *c)
{
    (void)cudaSetDevice(c->dev);
    if (!c->shared) {
        cudaFree(c->off);
        cudaFree(c->col);
        cudaFree(c->val);
        cudaFree(c->sval);
    }
    cudaFree(c->B);
    cudaFree(c->C);
    cudaFree(c->X);
    cudaFree(c->Y);
    cudaFree(c->buf);
    memset(c, 0, sizeof *c);
}

/* The descriptors of a problem: A (SpMM's sparse operand and SDDMM's output, through its
 * values pointer), SpMM's B and C, SDDMM's X and Y. */
typedef struct {
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C, X, Y;
} descrs;

static int descrs_make(descrs *d, const problem *p, const dcopy *c, char *msg, size_t n)
{
    const int64_t M = p->m.rows, K = p->m.cols, N = p->N;
    memset(d, 0, sizeof *d);
    if (tcsparseCreateCsr(&d->A, M, K, p->m.nnz, c->off, c->col, c->val, TCSPARSE_INDEX_32I,
                          TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F) != 0 ||
        tcsparseCreateDnMat(&d->B, K, N, N, c->B, CUDA_R_32F, TCSPARSE_ORDER_ROW) != 0 ||
        tcsparseCreateDnMat(&d->C, M, N, N, c->C, CUDA_R_32F, TCSPARSE_ORDER_ROW) != 0 ||
        tcsparseCreateDnMat(&d->X, M, KD, KD, c->X, CUDA_R_32F, TCSPARSE_ORDER_ROW) != 0 ||
        tcsparseCreateDnMat(&d->Y, KD, K, KD, c->Y, CUDA_R_32F, TCSPARSE_ORDER_COL) != 0) {
        snprintf(msg, n, "creating the descriptors: %s", tcsparseGetLastErrorMessage());
        return -1;
    }
    return 0;
}

static void descrs_free(descrs *d)
{
    tcsparseDestroySpMat(d->A);
    tcsparseDestroyDnMat(d->B);
    tcsparseDestroyDnMat(d->C);
    tcsparseDestroyDnMat(d->X);
    tcsparseDestroyDnMat(d->Y);
}

/* The descriptors pointed at copy c: the dense ones always, A's structure with `sparse`. */
static int descrs_point(descrs *d, const dcopy *c, int sparse, char *msg, size_t n)
{
    if ((sparse && tcsparseCsrSetPointers(d->A, c->off, c->col, c->val) != 0) ||
        tcsparseDnMatSetValues(d->B, c->B) != 0 || tcsparseDnMatSetValues(d->C, c->C) != 0 ||
        tcsparseDnMatSetValues(d->X, c->X) != 0 || tcsparseDnMatSetValues(d->Y, c->Y) != 0) {
        snprintf(msg, n, "re-pointing the descriptors to device %d: %s", c->dev,
                 tcsparseGetLastErrorMessage());
        return -1;
    }
    return 0;
}

/* c's workspace holds at least bytes (the calls before on the handle's stream are over:
 * cudaFree waits for the device). */
static int buffer_for(dcopy *c, size_t bytes, char *msg, size_t n)
{
    if (bytes <= c->buf_bytes && c->buf != NULL)
        return 0;
    cudaFree(c->buf);
    c->buf = NULL;
    c->buf_bytes = 0;
    cudaError_t e = cudaMalloc(&c->buf, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        snprintf(msg, n, "device %d: workspace of %zu bytes: %s", c->dev, bytes,
                 cudaGetErrorString(e));
        return -1;
    }
    c->buf_bytes = bytes;
    return 0;
}

/* out (n values of the device array d, after the stream's work) against ref. */
static int check_out(const float *d, const double *ref, size_t count, cudaStream_t s,
                     const tcsparseRouteInfo_t *ri, const char *label, char *msg, size_t n)
{
    float *h = malloc(sizeof *h * (count + 1));
    double *out = malloc(sizeof *out * (count + 1));
    cudaError_t e = h == NULL || out == NULL ? cudaErrorMemoryAllocation : cudaStreamSynchronize(s);
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, sizeof *h * count, cudaMemcpyDeviceToHost);
    double err = INFINITY;
    if (e == cudaSuccess) {
        for (size_t i = 0; i < count; i++)
            out[i] = h[i];
        err = tc_rel_err(ref, out, count);
    }
    free(h);
    free(out);
    if (e != cudaSuccess) {
        snprintf(msg, n, "%s: %s", label, cudaGetErrorString(e));
        return -1;
    }
    if (!(err <= BOUND)) { /* NaN too: an element never written */
        snprintf(msg, n, "%s: relative error %.3e > %.0e (%s; %s)", label, err, BOUND, ri->kernel,
                 ri->reason);
        return -1;
    }
    return 0;
}

/* One checked SpMM C = A B with c's arrays on its device (current), on handle h and its
 * stream s; the forced tensor-core route must take the tensor cores. */
static int run_spmm(tcsparseHandle_t h, cudaStream_t s, tcsparseRoute_t route, descrs *d,
                    dcopy *c, const problem *p, const char *label, char *msg, size_t n)
{
    const tcsparseOperation_t nt = TCSPARSE_OPERATION_NON_TRANSPOSE;
    size_t bsz = 0;
    tcsparseStatus_t st = tcsparseSpMatSetValues(d->A, c->val);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tcsparseSpMM_bufferSize(h, nt, nt, &one, d->A, d->B, &zero, d->C, CUDA_R_32F,
                                     TCSPARSE_SPMM_ALG_DEFAULT, &bsz);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(msg, n, "%s: SpMM set-up: %s", label, tcsparseGetLastErrorMessage());
        return -1;
    }
    if (buffer_for(c, bsz, msg, n) != 0)
        return -1;
    const size_t count = (size_t)(p->m.rows * p->N);
    if (cudaMemsetAsync(c->C, 0xff, sizeof(float) * count, s) != cudaSuccess) {
        snprintf(msg, n, "%s: poisoning C failed", label);
        return -1;
    }
    st = tcsparseSpMM(h, nt, nt, &one, d->A, d->B, &zero, d->C, CUDA_R_32F,
                      TCSPARSE_SPMM_ALG_DEFAULT, c->buf);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(msg, n, "%s: tcsparseSpMM: %s", label, tcsparseGetLastErrorMessage());
        return -1;
    }
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    if (route == TCSPARSE_ROUTE_TC && ri.path == TCSPARSE_PATH_CUSPARSE) {
        snprintf(msg, n, "%s: the forced route took cuSPARSE (%s)", label, ri.reason);
        return -1;
    }
    return check_out(c->C, p->ref_spmm, count, s, &ri, label, msg, n);
}

/* One checked SDDMM on A's pattern, written into c's sval through A's values pointer. */
static int run_sddmm(tcsparseHandle_t h, cudaStream_t s, tcsparseRoute_t route, descrs *d,
                     dcopy *c, const problem *p, const char *label, char *msg, size_t n)
{
    const tcsparseOperation_t nt = TCSPARSE_OPERATION_NON_TRANSPOSE;
    size_t bsz = 0;
    tcsparseStatus_t st = tcsparseSpMatSetValues(d->A, c->sval);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tcsparseSDDMM_bufferSize(h, nt, nt, &one, d->X, d->Y, &zero, d->A, CUDA_R_32F,
                                      TCSPARSE_SDDMM_ALG_DEFAULT, &bsz);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(msg, n, "%s: SDDMM set-up: %s", label, tcsparseGetLastErrorMessage());
        return -1;
    }
    if (buffer_for(c, bsz, msg, n) != 0)
        return -1;
    const size_t count = (size_t)p->m.nnz;
    if (cudaMemsetAsync(c->sval, 0xff, sizeof(float) * count, s) != cudaSuccess) {
        snprintf(msg, n, "%s: poisoning the output failed", label);
        return -1;
    }
    st = tcsparseSDDMM(h, nt, nt, &one, d->X, d->Y, &zero, d->A, CUDA_R_32F,
                       TCSPARSE_SDDMM_ALG_DEFAULT, c->buf);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(msg, n, "%s: tcsparseSDDMM: %s", label, tcsparseGetLastErrorMessage());
        return -1;
    }
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    if (route == TCSPARSE_ROUTE_TC && ri.path == TCSPARSE_PATH_CUSPARSE) {
        snprintf(msg, n, "%s: the forced route took cuSPARSE (%s)", label, ri.reason);
        return -1;
    }
    return check_out(c->sval, p->ref_sddmm, count, s, &ri, label, msg, n);
}

/* A handle (first used on device dev, made current) on a stream of its own. */
static void handle_on(int dev, tcsparseHandle_t *h, cudaStream_t *s)
{
    cr_assert_eq(cudaSetDevice(dev), cudaSuccess);
    cr_assert_eq(tcsparseCreate(h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(tcsparseSetStream(*h, *s), TCSPARSE_STATUS_SUCCESS);
}

static const tcsparseRoute_t routes[2] = {TCSPARSE_ROUTE_TC, TCSPARSE_ROUTE_AUTO};
static const char *const route_names[2] = {"tensor cores", "automatic"};

/* Rounds of calls alternating between the devices, on each route: SpMM and SDDMM twice per
 * round, on c[dev] through h[dev]; A re-pointed at each change when `repoint`. */
static void alternate(tcsparseHandle_t h[2], cudaStream_t s[2], descrs *d, dcopy c[2],
                      const problem *p, int repoint, const char *what)
{
    char msg[600], label[160];
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 2; i++)
            cr_assert_eq(tcsparseSetRoute(h[i], routes[r]), TCSPARSE_STATUS_SUCCESS);
        for (int round = 0; round < 6; round++) {
            const int dev = round % 2;
            cr_assert_eq(cudaSetDevice(dev), cudaSuccess);
            cr_assert_eq(descrs_point(d, &c[dev], repoint, msg, sizeof msg), 0, "%s", msg);
            for (int k = 0; k < 2; k++) {
                snprintf(label, sizeof label, "%s, %s route, round %d on device %d, call %d",
                         what, route_names[r], round, dev, k);
                cr_assert_eq(run_spmm(h[dev], s[dev], routes[r], d, &c[dev], p, label, msg,
                                      sizeof msg), 0, "%s", msg);
                cr_assert_eq(run_sddmm(h[dev], s[dev], routes[r], d, &c[dev], p, label, msg,
                                       sizeof msg), 0, "%s", msg);
            }
        }
    }
}

Test(gpu_multi, one_descriptor_repointed)
{
    TC_REQUIRE_GPUS(2);
    problem p;
    problem_from_spec(&p, "rmat:11:8", 64, 1);
    char msg[600];
    dcopy c[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(copy_make(&c[i], &p, i, NULL, msg, sizeof msg), 0, "%s", msg);
    tcsparseHandle_t h[2];
    cudaStream_t s[2];
    for (int i = 0; i < 2; i++)
        handle_on(i, &h[i], &s[i]);
    descrs d;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(descrs_make(&d, &p, &c[0], msg, sizeof msg), 0, "%s", msg);
    alternate(h, s, &d, c, &p, 1, "re-pointed");

    /* The last round ran on device 1.  Device 0's handle while device 1 is current: refused
     * before anything runs; device 1's handle goes on as before. */
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    const tcsparseOperation_t nt = TCSPARSE_OPERATION_NON_TRANSPOSE;
    tcsparseStatus_t st = tcsparseSpMM(h[0], nt, nt, &one, d.A, d.B, &zero, d.C, CUDA_R_32F,
                                       TCSPARSE_SPMM_ALG_DEFAULT, c[1].buf);
    cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "device 0's handle on device 1: status %d",
                 (int)st);
    cr_assert(strstr(tcsparseGetLastErrorMessage(), "device") != NULL, "message: %s",
              tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(run_spmm(h[1], s[1], TCSPARSE_ROUTE_AUTO, &d, &c[1], &p, "after the refusal",
                          msg, sizeof msg), 0, "%s", msg);

    /* the descriptor (its plan on device 1) and device 1's handle destroyed with device 0
     * current: freed on their own device */
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    descrs_free(&d);
    cr_assert_eq(tcsparseDestroy(h[1]), TCSPARSE_STATUS_SUCCESS, "%s",
                 tcsparseGetLastErrorMessage());
    cr_assert_eq(tcsparseDestroy(h[0]), TCSPARSE_STATUS_SUCCESS);
    int cur = -1;
    cr_assert_eq(cudaGetDevice(&cur), cudaSuccess);
    cr_assert_eq(cur, 0, "the destruction left device %d current", cur);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(cudaSetDevice(i), cudaSuccess);
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "device %d", i);
        cudaStreamDestroy(s[i]);
        copy_free(&c[i]);
    }
    problem_free(&p);
}

/* Device 1 reads device 0's memory: 1 when peer access is on (*enabled: turned on here). */
static int peer_on(int *enabled)
{
    int can = 0;
    *enabled = 0;
    if (cudaDeviceCanAccessPeer(&can, 1, 0) != cudaSuccess || !can)
        return 0;
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    cudaError_t e = cudaDeviceEnablePeerAccess(0, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        return 1;
    }
    cr_assert_eq(e, cudaSuccess, "cudaDeviceEnablePeerAccess: %s", cudaGetErrorString(e));
    *enabled = 1;
    return 1;
}

static void peer_off(int enabled)
{
    if (enabled) {
        cr_assert_eq(cudaSetDevice(1), cudaSuccess);
        cr_assert_eq(cudaDeviceDisablePeerAccess(0), cudaSuccess);
    }
}

Test(gpu_multi, one_descriptor_peer_access)
{
    TC_REQUIRE_GPUS(2);
    int enabled;
    if (!peer_on(&enabled))
        cr_skip_test("device 1 cannot access device 0's memory (no peer access)");
    problem p;
    problem_from_spec(&p, "uniform:3001:1999:9", 64, 2);
    char msg[600];
    dcopy c[2]; /* A on device 0; B, C, X, Y on each device */
    cr_assert_eq(copy_make(&c[0], &p, 0, NULL, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(copy_make(&c[1], &p, 1, &c[0], msg, sizeof msg), 0, "%s", msg);
    tcsparseHandle_t h[2];
    cudaStream_t s[2];
    for (int i = 0; i < 2; i++)
        handle_on(i, &h[i], &s[i]);
    descrs d;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(descrs_make(&d, &p, &c[0], msg, sizeof msg), 0, "%s", msg);
    alternate(h, s, &d, c, &p, 0, "peer access");
    descrs_free(&d);
    copy_free(&c[1]);
    copy_free(&c[0]);
    problem_free(&p);

    /* Late ordering on a matrix it compresses (late_case.h): a trial that has reached its
     * samples on device 0 ends when device 1's handle takes the descriptor (its plans and
     * events are device 0's); device 1 then runs a trial of its own to a decision, and
     * device 0 afterwards rebuilds the plan that was kept.  Every call checked. */
    late_env(); /* no TCSPARSE_SELECT or TCSPARSE_ROUTE from outside; the descriptor asks LATE */
    tc_csr gm;
    grouped(4093, 11, &gm);
    problem_make(&p, &gm, 64, 3);
    cr_assert_eq(copy_make(&c[0], &p, 0, NULL, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(copy_make(&c[1], &p, 1, &c[0], msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(descrs_make(&d, &p, &c[0], msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(tcsparseSpMatSetReorder(d.A, TCSPARSE_REORDER_LATE), TCSPARSE_STATUS_SUCCESS);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tcsparseSetRoute(h[i], TCSPARSE_ROUTE_TC), TCSPARSE_STATUS_SUCCESS);
    char label[120];
    tcsparseRouteInfo_t ri;
    int sampled = 0;
    for (int k = 0; k < 60 && !sampled; k++) {
        snprintf(label, sizeof label, "late ordering, device 0, call %d", k);
        cr_assert_eq(run_spmm(h[0], s[0], TCSPARSE_ROUTE_TC, &d, &c[0], &p, label, msg,
                              sizeof msg), 0, "%s", msg);
        tcsparseGetLastRoute(h[0], &ri);
        sampled = strstr(ri.reason, "; ordering: trial, sample") != NULL;
    }
    cr_assert(sampled, "no trial sample on device 0 (last reason: %s)", ri.reason);
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    cr_assert_eq(descrs_point(&d, &c[1], 0, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(run_spmm(h[1], s[1], TCSPARSE_ROUTE_TC, &d, &c[1], &p,
                          "late ordering, device 1 during device 0's trial", msg, sizeof msg),
                 0, "%s", msg);
    tcsparseMetcfStats_t st = stats_of(h[1], d.A);
    cr_assert_eq(st.late_state, TCSPARSE_LATE_WAITING, "late state %d after the move",
                 (int)st.late_state);
    int k = 0;
    for (; k < 80; k++) {
        snprintf(label, sizeof label, "late ordering, device 1, call %d", k);
        cr_assert_eq(run_spmm(h[1], s[1], TCSPARSE_ROUTE_TC, &d, &c[1], &p, label, msg,
                              sizeof msg), 0, "%s", msg);
        tcsparseGetLastRoute(h[1], &ri);
        cr_assert(strstr(ri.reason, "the trial took") == NULL,
                  "device 1's trial timed nothing: %s", ri.reason);
        st = stats_of(h[1], d.A);
        if (st.late_state != TCSPARSE_LATE_WAITING && st.late_state != TCSPARSE_LATE_TRIAL)
            break;
    }
    cr_assert(st.late_state == TCSPARSE_LATE_KEPT_ORDERED ||
                  st.late_state == TCSPARSE_LATE_KEPT_CALLER,
              "device 1's trial: state %d after %d calls (%s)", (int)st.late_state, k + 1,
              ri.reason);
    const tcsparseMetcfStats_t kept = st;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(descrs_point(&d, &c[0], 0, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(run_spmm(h[0], s[0], TCSPARSE_ROUTE_TC, &d, &c[0], &p,
                          "late ordering, back on device 0", msg, sizeof msg), 0, "%s", msg);
    st = stats_of(h[0], d.A);
    cr_assert_eq(st.late_state, kept.late_state, "the decision was not kept on device 0");
    cr_assert_eq(st.reorder_ordering, kept.reorder_ordering,
                 "device 0 rebuilt the plan in ordering %d, not %d", (int)st.reorder_ordering,
                 (int)kept.reorder_ordering);
    cr_assert_eq(run_sddmm(h[0], s[0], TCSPARSE_ROUTE_TC, &d, &c[0], &p,
                           "late ordering, SDDMM on device 0", msg, sizeof msg), 0, "%s", msg);

    descrs_free(&d);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(cudaSetDevice(i), cudaSuccess);
        cr_assert_eq(tcsparseDestroy(h[i]), TCSPARSE_STATUS_SUCCESS);
        cudaStreamDestroy(s[i]);
    }
    copy_free(&c[1]);
    copy_free(&c[0]);
    problem_free(&p);
    peer_off(enabled);
}

/* One thread driving one device: its own handle, stream, copy and descriptors; 20 SpMMs and
 * 20 SDDMMs on each route, each checked.  No Criterion assertion here: the outcome goes back
 * in failed and msg. */
typedef struct {
    int dev;
    const problem *p;
    pthread_barrier_t *start;
    int calls; /* checked calls that passed */
    int failed;
    char msg[600];
} worker;

static void *worker_run(void *arg)
{
    worker *w = arg;
    dcopy c;
    descrs d;
    tcsparseHandle_t h = NULL;
    cudaStream_t s = NULL;
    int ok = copy_make(&c, w->p, w->dev, NULL, w->msg, sizeof w->msg) == 0;
    const int made = ok;
    if (ok && (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
               tcsparseCreate(&h) != TCSPARSE_STATUS_SUCCESS ||
               tcsparseSetStream(h, s) != TCSPARSE_STATUS_SUCCESS)) {
        snprintf(w->msg, sizeof w->msg, "device %d: handle or stream: %s", w->dev,
                 tcsparseGetLastErrorMessage());
        ok = 0;
    }
    int have_d = ok && descrs_make(&d, w->p, &c, w->msg, sizeof w->msg) == 0;
    ok = ok && have_d;
    pthread_barrier_wait(w->start); /* both devices busy at once */
    char label[120];
    for (int r = 0; r < 2 && ok; r++) {
        ok = tcsparseSetRoute(h, routes[r]) == TCSPARSE_STATUS_SUCCESS;
        for (int i = 0; i < 20 && ok; i++) {
            snprintf(label, sizeof label, "thread on device %d, %s route, call %d", w->dev,
                     route_names[r], i);
            ok = run_spmm(h, s, routes[r], &d, &c, w->p, label, w->msg, sizeof w->msg) == 0 &&
                 run_sddmm(h, s, routes[r], &d, &c, w->p, label, w->msg, sizeof w->msg) == 0;
            w->calls += 2 * ok;
        }
    }
    if (have_d)
        descrs_free(&d);
    if (h != NULL)
        tcsparseDestroy(h);
    if (s != NULL)
        cudaStreamDestroy(s);
    if (made)
        copy_free(&c);
    w->failed = !ok;
    return NULL;
}

Test(gpu_multi, two_threads_two_devices)
{
    TC_REQUIRE_GPUS(2);
    problem p[2];
    problem_from_spec(&p[0], "rmat:12:8", 64, 4);
    problem_from_spec(&p[1], "uniform:3001:1999:9", 48, 5);
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
    worker w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].dev = i;
        w[i].p = &p[i];
        w[i].start = &start;
        cr_assert_eq(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) {
        cr_assert(!w[i].failed, "device %d: %s", i, w[i].msg);
        cr_assert_eq(w[i].calls, 80, "device %d: %d checked calls", i, w[i].calls);
    }
    for (int i = 0; i < 2; i++)
        problem_free(&p[i]);
}
