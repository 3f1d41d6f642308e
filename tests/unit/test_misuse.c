/* Misuse of the API without a GPU, beyond what test_api.c and test_api_descr.c cover with
 * hand-made dead objects: real use after destroy and double destroy (the quarantine of plan.h
 * keeps the shells, so these are defined behaviour even under AddressSanitizer), objects of
 * the wrong kind, type and index-type mismatches, the threading rules (thread-local messages,
 * a handle handed from thread to thread, descriptors shared by threads with their own
 * handles), and the plan cache's configuration (TCSPARSE_CACHE_BYTES,
 * TCSPARSE_X_FAULT_PLAN_ALLOC). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "internal.h"
#include "plan.h"
#include "testutil.h"

static const char *msg(void) { return tcsparseGetLastErrorMessage(); }

#define EXPECT_OK(call)                                                                        \
    do {                                                                                       \
        tcsparseStatus_t st_ = (call);                                                         \
        cr_assert_eq(st_, TCSPARSE_STATUS_SUCCESS, "%s -> %s: %s", #call,                      \
                     tcsparseGetErrorName(st_), msg());                                        \
    } while (0)

#define EXPECT_FAIL(call, status)                                                              \
    do {                                                                                       \
        tcsparseStatus_t st_ = (call);                                                         \
        cr_assert_eq(st_, (status), "%s -> %s, expected %s (%s)", #call,                       \
                     tcsparseGetErrorName(st_), tcsparseGetErrorName(status), msg());          \
        cr_assert_str_not_empty(msg(), "%s failed without a message", #call);                  \
    } while (0)

#define BAD TCSPARSE_STATUS_INVALID_VALUE
#define UNSUP TCSPARSE_STATUS_NOT_SUPPORTED
#define N_ TCSPARSE_OPERATION_NON_TRANSPOSE
#define DEF TCSPARSE_SPMM_ALG_DEFAULT
#define SDEF TCSPARSE_SDDMM_ALG_DEFAULT

static int32_t off32[4] = {0, 2, 2, 4}, ind32[4] = {0, 2, 1, 3};
static float vals[4] = {1.5f, -2.0f, 0.25f, 7.0f};
static float dense[64];
static float one = 1.0f;

static tcsparseSpMatDescr_t make_csr(void)
{
    tcsparseSpMatDescr_t d;
    EXPECT_OK(tcsparseCreateCsr(&d, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    return d;
}

static tcsparseDnMatDescr_t make_dn(int64_t r, int64_t c)
{
    tcsparseDnMatDescr_t d;
    EXPECT_OK(tcsparseCreateDnMat(&d, r, c, c, dense, CUDA_R_32F, TCSPARSE_ORDER_ROW));
    return d;
}

/* Every function taking a sparse descriptor refuses s with INVALID_VALUE and a message. */
static void all_sparse_refuse(tcsparseSpMatDescr_t s, tcsparseHandle_t h)
{
    int64_t r, c, n;
    void *o, *i, *v;
    const void *co, *ci, *cv;
    tcsparseIndexType_t ot, it;
    tcsparseIndexBase_t b;
    cudaDataType vt;
    tcsparseFormat_t f;
    int bc;
    tcsparseMetcfStats_t stats;
    EXPECT_FAIL(tcsparseSpMatGetSize(s, &r, &c, &n), BAD);
    EXPECT_FAIL(tcsparseSpMatGetFormat(s, &f), BAD);
    EXPECT_FAIL(tcsparseSpMatGetIndexBase(s, &b), BAD);
    EXPECT_FAIL(tcsparseSpMatGetValues(s, &v), BAD);
    EXPECT_FAIL(tcsparseConstSpMatGetValues(s, &cv), BAD);
    EXPECT_FAIL(tcsparseSpMatSetValues(s, vals), BAD);
    EXPECT_FAIL(tcsparseSpMatGetStridedBatch(s, &bc), BAD);
    EXPECT_FAIL(tcsparseCsrGet(s, &r, &c, &n, &o, &i, &v, &ot, &it, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCsrGet(s, &r, &c, &n, &co, &ci, &cv, &ot, &it, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCscGet(s, &r, &c, &n, &o, &i, &v, &ot, &it, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCooGet(s, &r, &c, &n, &o, &i, &v, &it, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCsrSetPointers(s, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCscSetPointers(s, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCooSetPointers(s, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(s, 2, 0, 0), BAD);
    EXPECT_FAIL(tcsparseCooSetStridedBatch(s, 2, 0), BAD);
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, s, &stats), BAD);
    tcsparseDnMatDescr_t B = make_dn(4, 5), C = make_dn(3, 5);
    size_t size = 77;
    EXPECT_FAIL(tcsparseSpMM_bufferSize(h, N_, N_, &one, s, B, &one, C, CUDA_R_32F, DEF, &size),
                BAD);
    EXPECT_FAIL(tcsparseSpMM_preprocess(h, N_, N_, &one, s, B, &one, C, CUDA_R_32F, DEF, NULL),
                BAD);
    EXPECT_FAIL(tcsparseSpMM(h, N_, N_, &one, s, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    tcsparseDnMatDescr_t A = make_dn(3, 6), Bt = make_dn(6, 4);
    EXPECT_FAIL(tcsparseSDDMM(h, N_, N_, &one, A, Bt, &one, s, CUDA_R_32F, SDEF, NULL), BAD);
    cr_assert_eq(size, 77);
    tcsparseDestroyDnMat(A);
    tcsparseDestroyDnMat(Bt);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

/* Every function taking a dense descriptor refuses d. */
static void all_dense_refuse(tcsparseDnMatDescr_t d, tcsparseHandle_t h)
{
    int64_t r, c, ld, st;
    void *v;
    const void *cv;
    cudaDataType t;
    tcsparseOrder_t o;
    int bc;
    EXPECT_FAIL(tcsparseDnMatGet(d, &r, &c, &ld, &v, &t, &o), BAD);
    EXPECT_FAIL(tcsparseConstDnMatGet(d, &r, &c, &ld, &cv, &t, &o), BAD);
    EXPECT_FAIL(tcsparseDnMatGetValues(d, &v), BAD);
    EXPECT_FAIL(tcsparseConstDnMatGetValues(d, &cv), BAD);
    EXPECT_FAIL(tcsparseDnMatSetValues(d, dense), BAD);
    EXPECT_FAIL(tcsparseDnMatSetStridedBatch(d, 2, 100), BAD);
    EXPECT_FAIL(tcsparseDnMatGetStridedBatch(d, &bc, &st), BAD);
    tcsparseSpMatDescr_t A = make_csr();
    tcsparseDnMatDescr_t C = make_dn(3, 4);
    EXPECT_FAIL(tcsparseSpMM(h, N_, N_, &one, A, d, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_FAIL(tcsparseSpMM(h, N_, N_, &one, A, C, &one, d, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_FAIL(tcsparseSDDMM(h, N_, N_, &one, d, C, &one, A, CUDA_R_32F, SDEF, NULL), BAD);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(C);
}

/* ---- use after destroy, double destroy ------------------------------------------------- */

Test(misuse, sparse_use_after_destroy_and_double_destroy)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    for (int fmt = 0; fmt < 3; fmt++) {
        tcsparseSpMatDescr_t s;
        if (fmt == 0)
            s = make_csr();
        else if (fmt == 1)
            EXPECT_OK(tcsparseCreateCsc(&s, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                        TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO,
                                        CUDA_R_32F));
        else
            EXPECT_OK(tcsparseCreateCoo(&s, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                        TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        EXPECT_OK(tcsparseDestroySpMat(s));
        all_sparse_refuse(s, h);
        EXPECT_FAIL(tcsparseDestroySpMat(s), BAD);
        EXPECT_FAIL(tcsparseDestroySpMat(s), BAD); /* and a third time */
    }
    EXPECT_OK(tcsparseDestroy(h));
}

Test(misuse, dense_use_after_destroy_and_double_destroy)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    tcsparseDnMatDescr_t d = make_dn(4, 4);
    EXPECT_OK(tcsparseDestroyDnMat(d));
    all_dense_refuse(d, h);
    EXPECT_FAIL(tcsparseDestroyDnMat(d), BAD);
    EXPECT_OK(tcsparseDestroy(h));
}

Test(misuse, handle_use_after_destroy_and_double_destroy)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    EXPECT_OK(tcsparseDestroy(h));
    int ver;
    cudaStream_t s;
    tcsparsePointerMode_t pm;
    tcsparseMathMode_t mm;
    tcsparseRoute_t rt;
    tcsparseRouteInfo_t ri;
    tcsparseMetcfStats_t stats;
    EXPECT_FAIL(tcsparseGetVersion(h, &ver), BAD);
    EXPECT_FAIL(tcsparseSetStream(h, 0), BAD);
    EXPECT_FAIL(tcsparseGetStream(h, &s), BAD);
    EXPECT_FAIL(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_HOST), BAD);
    EXPECT_FAIL(tcsparseGetPointerMode(h, &pm), BAD);
    cr_assert_neq(tcsparseSetMathMode(h, TCSPARSE_MATH_DEFAULT), TCSPARSE_STATUS_SUCCESS);
    cr_assert_neq(tcsparseGetMathMode(h, &mm), TCSPARSE_STATUS_SUCCESS);
    cr_assert_neq(tcsparseSetRoute(h, TCSPARSE_ROUTE_AUTO), TCSPARSE_STATUS_SUCCESS);
    cr_assert_neq(tcsparseGetRoute(h, &rt), TCSPARSE_STATUS_SUCCESS);
    cr_assert_neq(tcsparseGetLastRoute(h, &ri), TCSPARSE_STATUS_SUCCESS);
    tcsparseSpMatDescr_t A = make_csr();
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, A, &stats), TCSPARSE_STATUS_NOT_INITIALIZED);
    tcsparseDnMatDescr_t B = make_dn(4, 5), C = make_dn(3, 5);
    size_t size = 5;
    EXPECT_FAIL(tcsparseSpMM_bufferSize(h, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, &size),
                BAD);
    EXPECT_FAIL(tcsparseSpMM(h, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_FAIL(tcsparseDestroy(h), BAD);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

/* The quarantine keeps the last TC_RETIRED_KEPT destroyed objects: each of them is still
 * refused after many more creations and destructions. */
Test(misuse, quarantine_depth)
{
    enum { N = TC_RETIRED_KEPT };
    tcsparseSpMatDescr_t *s = malloc(sizeof *s * 3 * N);
    for (int k = 0; k < 3 * N; k++)
        s[k] = make_csr();
    for (int k = 0; k < 3 * N; k++)
        EXPECT_OK(tcsparseDestroySpMat(s[k]));
    for (int k = 2 * N; k < 3 * N; k++)
        EXPECT_FAIL(tcsparseDestroySpMat(s[k]), BAD);
    free(s);
}

/* ---- objects of the wrong kind ----------------------------------------------------------- */

Test(misuse, wrong_kind_of_object)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    tcsparseDnMatDescr_t d = make_dn(4, 4);
    tcsparseSpMatDescr_t s = make_csr();
    /* a dense descriptor and a handle where a sparse descriptor belongs */
    all_sparse_refuse((tcsparseSpMatDescr_t)(void *)d, h);
    all_sparse_refuse((tcsparseSpMatDescr_t)(void *)h, h);
    EXPECT_FAIL(tcsparseDestroySpMat((tcsparseSpMatDescr_t)(void *)d), BAD);
    /* a sparse descriptor and a handle where a dense one belongs */
    all_dense_refuse((tcsparseDnMatDescr_t)(void *)s, h);
    all_dense_refuse((tcsparseDnMatDescr_t)(void *)h, h);
    EXPECT_FAIL(tcsparseDestroyDnMat((tcsparseDnMatDescr_t)(void *)s), BAD);
    /* descriptors where the handle belongs */
    int ver;
    EXPECT_FAIL(tcsparseGetVersion((tcsparseHandle_t)(void *)s, &ver), BAD);
    EXPECT_FAIL(tcsparseGetVersion((tcsparseHandle_t)(void *)d, &ver), BAD);
    EXPECT_FAIL(tcsparseDestroy((tcsparseHandle_t)(void *)d), BAD);
    EXPECT_FAIL(tcsparseSetStream((tcsparseHandle_t)(void *)s, 0), BAD);
    tcsparseDnMatDescr_t B = make_dn(4, 5), C = make_dn(3, 5);
    EXPECT_FAIL(tcsparseSpMM((tcsparseHandle_t)(void *)s, N_, N_, &one, s, B, &one, C, CUDA_R_32F,
                             DEF, NULL), BAD);
    /* all still alive and intact */
    int64_t r, c, n;
    EXPECT_OK(tcsparseSpMatGetSize(s, &r, &c, &n));
    cr_assert_eq(r, 3);
    EXPECT_OK(tcsparseDestroySpMat(s));
    EXPECT_OK(tcsparseDestroyDnMat(d));
    EXPECT_OK(tcsparseDestroyDnMat(B));
    EXPECT_OK(tcsparseDestroyDnMat(C));
    EXPECT_OK(tcsparseDestroy(h));
}

/* ---- mismatched types ------------------------------------------------------------------- */

Test(misuse, mismatched_index_and_value_types)
{
    tcsparseSpMatDescr_t s = NULL;
    int64_t off64[4] = {0, 2, 2, 4};
    EXPECT_FAIL(tcsparseCreateCsr(&s, 3, 4, 4, off64, ind32, vals, TCSPARSE_INDEX_64I,
                                  TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                UNSUP);
    EXPECT_FAIL(tcsparseCreateCsc(&s, 4, 3, 4, off32, off64, vals, TCSPARSE_INDEX_32I,
                                  TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                UNSUP);
    EXPECT_FAIL(tcsparseCreateCoo(&s, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_16U,
                                  TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), UNSUP);
    /* a 64-bit array passed as 32-bit width is the caller's lie, caught later by structure
     * checks; a misaligned array for the declared width is caught now */
    EXPECT_FAIL(tcsparseCreateCsr(&s, 3, 4, 4, (char *)off64 + 4, (char *)off64 + 4, vals,
                                  TCSPARSE_INDEX_64I, TCSPARSE_INDEX_64I,
                                  TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), BAD);
    cr_assert_null(s);

    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    EXPECT_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC)); /* forcing TC does not relax checks */
    struct {
        cudaDataType a, b, c, ct;
    } bad_spmm[] = {
        {CUDA_R_32F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F},
        {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F},
        {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F},
        {CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_32F},
        {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_32F},
        {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_16F},
    };
    for (size_t k = 0; k < sizeof bad_spmm / sizeof bad_spmm[0]; k++) {
        tcsparseSpMatDescr_t A;
        tcsparseDnMatDescr_t B, C;
        static double store[64];
        EXPECT_OK(tcsparseCreateCsr(&A, 3, 4, 4, off32, ind32, store, TCSPARSE_INDEX_32I,
                                    TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, bad_spmm[k].a));
        EXPECT_OK(tcsparseCreateDnMat(&B, 4, 5, 5, store, bad_spmm[k].b, TCSPARSE_ORDER_ROW));
        EXPECT_OK(tcsparseCreateDnMat(&C, 3, 5, 5, store, bad_spmm[k].c, TCSPARSE_ORDER_ROW));
        double scal[2] = {1, 0};
        size_t size = 9;
        EXPECT_FAIL(tcsparseSpMM_bufferSize(h, N_, N_, scal, A, B, scal, C, bad_spmm[k].ct, DEF,
                                            &size), UNSUP);
        EXPECT_FAIL(tcsparseSpMM(h, N_, N_, scal, A, B, scal, C, bad_spmm[k].ct, DEF, NULL),
                    UNSUP);
        /* SDDMM: dense X (3x5, A's type), Y (5x4, B's type), sparse S (3x4, C's type) */
        tcsparseDnMatDescr_t X, Y;
        tcsparseSpMatDescr_t S;
        EXPECT_OK(tcsparseCreateDnMat(&X, 3, 5, 5, store, bad_spmm[k].a, TCSPARSE_ORDER_ROW));
        EXPECT_OK(tcsparseCreateDnMat(&Y, 5, 4, 5, store, bad_spmm[k].b, TCSPARSE_ORDER_COL));
        EXPECT_OK(tcsparseCreateCsr(&S, 3, 4, 4, off32, ind32, store, TCSPARSE_INDEX_32I,
                                    TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, bad_spmm[k].c));
        EXPECT_FAIL(tcsparseSDDMM_bufferSize(h, N_, N_, scal, X, Y, scal, S, bad_spmm[k].ct,
                                             SDEF, &size), UNSUP);
        EXPECT_FAIL(tcsparseSDDMM(h, N_, N_, scal, X, Y, scal, S, bad_spmm[k].ct, SDEF, NULL),
                    UNSUP);
        cr_assert_eq(size, 9);
        tcsparseDestroyDnMat(X);
        tcsparseDestroyDnMat(Y);
        tcsparseDestroySpMat(S);
        tcsparseDestroySpMat(A);
        tcsparseDestroyDnMat(B);
        tcsparseDestroyDnMat(C);
    }
    EXPECT_OK(tcsparseDestroy(h));
}

/* ---- threads ----------------------------------------------------------------------------- */

/* The last error message is per thread: a failure in one thread does not show in another. */
static void *fail_and_wait(void *arg)
{
    pthread_barrier_t *bar = arg;
    int v;
    (void)tcsparseGetVersion(NULL, &v);
    pthread_barrier_wait(bar); /* the other thread succeeds now */
    pthread_barrier_wait(bar);
    return strstr(msg(), "tcsparseGetVersion") != NULL ? (void *)1 : NULL;
}

Test(threads, messages_are_per_thread)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, fail_and_wait, &bar);
    pthread_barrier_wait(&bar);
    int ver;
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    EXPECT_OK(tcsparseGetVersion(h, &ver));
    cr_assert_str_empty(msg(), "another thread's failure shows here: %s", msg());
    pthread_barrier_wait(&bar);
    void *kept;
    pthread_join(t, &kept);
    cr_assert_not_null(kept, "the failing thread lost its message");
    pthread_barrier_destroy(&bar);
    tcsparseDestroy(h);
}

/* The rule: a handle may move between threads; calls on it must not overlap. */
static void *use_handle(void *arg)
{
    tcsparseHandle_t h = arg;
    if (tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE) != TCSPARSE_STATUS_SUCCESS)
        return NULL;
    tcsparsePointerMode_t m;
    if (tcsparseGetPointerMode(h, &m) != TCSPARSE_STATUS_SUCCESS ||
        m != TCSPARSE_POINTER_MODE_DEVICE)
        return NULL;
    return (void *)1;
}

static void *destroy_handle(void *arg)
{
    return tcsparseDestroy(arg) == TCSPARSE_STATUS_SUCCESS ? (void *)1 : NULL;
}

Test(threads, handle_handed_between_threads)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    pthread_t t;
    void *ok;
    pthread_create(&t, NULL, use_handle, h);
    pthread_join(t, &ok);
    cr_assert_not_null(ok);
    tcsparsePointerMode_t m;
    EXPECT_OK(tcsparseGetPointerMode(h, &m));
    cr_assert_eq(m, TCSPARSE_POINTER_MODE_DEVICE);
    pthread_create(&t, NULL, destroy_handle, h);
    pthread_join(t, &ok);
    cr_assert_not_null(ok);
    EXPECT_FAIL(tcsparseDestroy(h), BAD); /* destroyed by the other thread */
}

/* Threads with their own handles share one sparse descriptor: creation, getters and (without
 * a GPU) SpMM calls that stop at the first CUDA step, all at once. */
#define NTHREADS 8
typedef struct {
    tcsparseSpMatDescr_t shared;
    int gpu;
    int failures;
    char why[200];
} share_arg;

static void *share_worker(void *p)
{
    share_arg *a = p;
    tcsparseHandle_t h;
    if (tcsparseCreate(&h) != TCSPARSE_STATUS_SUCCESS) {
        a->failures++;
        return NULL;
    }
    tcsparseDnMatDescr_t B, C;
    static float store[64];
    tcsparseCreateDnMat(&B, 4, 5, 5, store, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&C, 3, 5, 5, store, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    for (int it = 0; it < 200; it++) {
        int64_t r, c, n;
        tcsparseFormat_t f;
        if (tcsparseSpMatGetSize(a->shared, &r, &c, &n) != TCSPARSE_STATUS_SUCCESS || r != 3 ||
            tcsparseSpMatGetFormat(a->shared, &f) != TCSPARSE_STATUS_SUCCESS)
            a->failures++;
        tcsparseSpMatDescr_t own;
        if (tcsparseCreateCoo(&own, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                              TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F) != TCSPARSE_STATUS_SUCCESS ||
            tcsparseDestroySpMat(own) != TCSPARSE_STATUS_SUCCESS)
            a->failures++;
        if (!a->gpu) {
            size_t size = 0;
            tcsparseStatus_t st = tcsparseSpMM_bufferSize(h, N_, N_, &one, a->shared, B, &one, C,
                                                          CUDA_R_32F, DEF, &size);
            if (st != TCSPARSE_STATUS_NOT_INITIALIZED || strstr(msg(), "no CUDA device") == NULL)
                a->failures++;
            st = tcsparseSpMM(h, N_, N_, &one, a->shared, B, &one, C, CUDA_R_32F, DEF, NULL);
            if (st != TCSPARSE_STATUS_NOT_INITIALIZED)
                a->failures++;
        }
    }
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
    tcsparseDestroy(h);
    return NULL;
}

Test(threads, shared_sparse_descriptor_own_handles)
{
    share_arg args[NTHREADS];
    pthread_t t[NTHREADS];
    tcsparseSpMatDescr_t s = make_csr();
    char why[200];
    int gpu = tc_test_gpu_available(why, sizeof why);
    for (int k = 0; k < NTHREADS; k++) {
        memset(&args[k], 0, sizeof args[k]);
        args[k].shared = s;
        args[k].gpu = gpu; /* with a GPU the calls would read these host arrays */
        pthread_create(&t[k], NULL, share_worker, &args[k]);
    }
    for (int k = 0; k < NTHREADS; k++) {
        pthread_join(t[k], NULL);
        cr_assert_eq(args[k].failures, 0, "thread %d: %d failures", k, args[k].failures);
    }
    EXPECT_OK(tcsparseDestroySpMat(s));
}

/* ---- plan cache configuration ----------------------------------------------------------- */

Test(plan_cache, parse_bytes)
{
    struct {
        const char *s;
        int64_t v;
    } cases[] = {
        {"0", 0}, {"1024", 1024}, {"4K", 4096}, {"4k", 4096}, {"2M", 2 << 20},
        {"3G", (int64_t)3 << 30}, {"5KiB", 5120}, {"7MB", 7 << 20}, {"10B", 10},
        {"", -1}, {"K", -1}, {"x", -1}, {"-1", -1}, {"1T", -1}, {"12 K", -1}, {" 12", -1},
        {"4KK", -1}, {"99999999999999999999", -1}, {"9999999999999G", -1}, {"1.5G", -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        cr_assert_eq(tc_parse_bytes(cases[k].s), cases[k].v, "'%s' -> %lld, expected %lld",
                     cases[k].s, (long long)tc_parse_bytes(cases[k].s), (long long)cases[k].v);
    cr_assert_eq(tc_parse_bytes(NULL), -1);
}

Test(plan_cache, limit_from_environment)
{
    tc_plan_cache_info info;
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.limit, SIZE_MAX, "unset must mean unlimited");
    cr_assert_eq(info.plans, 0);
    cr_assert_eq(info.bytes, 0);
    setenv("TCSPARSE_CACHE_BYTES", "64M", 1);
    tc_config_reload();
    tc_plan_cache_reconfigure();
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.limit, (size_t)64 << 20);
    setenv("TCSPARSE_CACHE_BYTES", "lots", 1); /* refused with a message: unlimited */
    tc_config_reload();
    tc_plan_cache_reconfigure();
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.limit, SIZE_MAX);
    unsetenv("TCSPARSE_CACHE_BYTES");
    tc_config_reload();
    tc_plan_cache_reconfigure();
}

/* Without a GPU no plan is ever built: the descriptor API and SpMM validation leave the cache
 * empty, and destroying descriptors that never had a plan touches no CUDA call. */
Test(plan_cache, no_plans_without_gpu)
{
    char why[200];
    if (tc_test_gpu_available(why, sizeof why))
        cr_skip_test("a GPU is present");
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    tcsparseSpMatDescr_t A = make_csr();
    tcsparseMetcfStats_t st;
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, A, &st), TCSPARSE_STATUS_NOT_INITIALIZED);
    tc_plan_cache_info info;
    tc_plan_cache_get_info(&info);
    cr_assert_eq(info.plans, 0);
    cr_assert_null(A->plan);
    cr_assert_eq(A->plan_refused, 0);
    EXPECT_OK(tcsparseDestroySpMat(A));
    EXPECT_OK(tcsparseDestroy(h));
}

/* Arrays left NULL at creation (to be set later, as cuSPARSE allows) must be refused before
 * anything reads them on the device: a device fault there would end the process's CUDA
 * context.  Checked without a GPU too: the refusal comes before any device work. */
Test(misuse, plan_of_a_matrix_with_null_arrays)
{
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tcsparseSpMatDescr_t a = NULL, b = NULL, c = NULL;
    cr_assert_eq(tcsparseCreateCsr(&a, 3, 4, 4, NULL, NULL, NULL, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateCsr(&b, 3, 4, 4, off32, NULL, vals, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateCoo(&c, 3, 4, 4, NULL, ind32, vals, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    tcsparseMetcfStats_t stats;
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, a, &stats), BAD);
    cr_expect(strstr(msg(), "NULL") != NULL, "%s", msg());
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, b, &stats), BAD);
    cr_expect(strstr(msg(), "index array is NULL") != NULL, "%s", msg());
    EXPECT_FAIL(tcsparseSpMatGetMetcfStats(h, c, &stats), BAD);
    /* an empty matrix has nothing to read: NULL arrays are fine there (no GPU: no plan) */
    tcsparseSpMatDescr_t e = NULL;
    cr_assert_eq(tcsparseCreateCsr(&e, 3, 4, 0, NULL, NULL, NULL, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    tcsparseStatus_t st = tcsparseSpMatGetMetcfStats(h, e, &stats);
    cr_expect_neq(st, BAD, "empty matrix refused: %s", msg());
    tcsparseDestroySpMat(a);
    tcsparseDestroySpMat(b);
    tcsparseDestroySpMat(c);
    tcsparseDestroySpMat(e);
    tcsparseDestroy(h);
}
