/* The public API without a GPU: argument checks of every function (status and message),
 * get/set round trips, enum values equal to cuSPARSE's, SpMM/SDDMM validation (which must
 * finish before any CUDA call), and the cuSPARSE mirror descriptors, which cuSPARSE lets us
 * create on the host. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <cusparse.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "internal.h"
#include "fallback.h"
#include "testutil.h"

/* ---- enum values equal cuSPARSE's (checked at compile time) ------------------------- */

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " differs from " #b)
SAME(TCSPARSE_STATUS_SUCCESS, CUSPARSE_STATUS_SUCCESS);
SAME(TCSPARSE_STATUS_NOT_INITIALIZED, CUSPARSE_STATUS_NOT_INITIALIZED);
SAME(TCSPARSE_STATUS_ALLOC_FAILED, CUSPARSE_STATUS_ALLOC_FAILED);
SAME(TCSPARSE_STATUS_INVALID_VALUE, CUSPARSE_STATUS_INVALID_VALUE);
SAME(TCSPARSE_STATUS_ARCH_MISMATCH, CUSPARSE_STATUS_ARCH_MISMATCH);
SAME(TCSPARSE_STATUS_MAPPING_ERROR, CUSPARSE_STATUS_MAPPING_ERROR);
SAME(TCSPARSE_STATUS_EXECUTION_FAILED, CUSPARSE_STATUS_EXECUTION_FAILED);
SAME(TCSPARSE_STATUS_INTERNAL_ERROR, CUSPARSE_STATUS_INTERNAL_ERROR);
SAME(TCSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED, CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
SAME(TCSPARSE_STATUS_ZERO_PIVOT, CUSPARSE_STATUS_ZERO_PIVOT);
SAME(TCSPARSE_STATUS_NOT_SUPPORTED, CUSPARSE_STATUS_NOT_SUPPORTED);
SAME(TCSPARSE_STATUS_INSUFFICIENT_RESOURCES, CUSPARSE_STATUS_INSUFFICIENT_RESOURCES);
SAME(TCSPARSE_POINTER_MODE_HOST, CUSPARSE_POINTER_MODE_HOST);
SAME(TCSPARSE_POINTER_MODE_DEVICE, CUSPARSE_POINTER_MODE_DEVICE);
SAME(TCSPARSE_INDEX_BASE_ZERO, CUSPARSE_INDEX_BASE_ZERO);
SAME(TCSPARSE_INDEX_BASE_ONE, CUSPARSE_INDEX_BASE_ONE);
SAME(TCSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE);
SAME(TCSPARSE_OPERATION_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE);
SAME(TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE, CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE);
SAME(TCSPARSE_FORMAT_CSR, CUSPARSE_FORMAT_CSR);
SAME(TCSPARSE_FORMAT_CSC, CUSPARSE_FORMAT_CSC);
SAME(TCSPARSE_FORMAT_COO, CUSPARSE_FORMAT_COO);
SAME(TCSPARSE_FORMAT_BLOCKED_ELL, CUSPARSE_FORMAT_BLOCKED_ELL);
SAME(TCSPARSE_FORMAT_BSR, CUSPARSE_FORMAT_BSR);
SAME(TCSPARSE_FORMAT_SLICED_ELLPACK, CUSPARSE_FORMAT_SLICED_ELLPACK);
SAME(TCSPARSE_ORDER_COL, CUSPARSE_ORDER_COL);
SAME(TCSPARSE_ORDER_ROW, CUSPARSE_ORDER_ROW);
SAME(TCSPARSE_INDEX_16U, CUSPARSE_INDEX_16U);
SAME(TCSPARSE_INDEX_32I, CUSPARSE_INDEX_32I);
SAME(TCSPARSE_INDEX_64I, CUSPARSE_INDEX_64I);
SAME(TCSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_ALG_DEFAULT);
SAME(TCSPARSE_SPMM_COO_ALG1, CUSPARSE_SPMM_COO_ALG1);
SAME(TCSPARSE_SPMM_COO_ALG2, CUSPARSE_SPMM_COO_ALG2);
SAME(TCSPARSE_SPMM_COO_ALG3, CUSPARSE_SPMM_COO_ALG3);
SAME(TCSPARSE_SPMM_COO_ALG4, CUSPARSE_SPMM_COO_ALG4);
SAME(TCSPARSE_SPMM_CSR_ALG1, CUSPARSE_SPMM_CSR_ALG1);
SAME(TCSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG2);
SAME(TCSPARSE_SPMM_CSR_ALG3, CUSPARSE_SPMM_CSR_ALG3);
SAME(TCSPARSE_SPMM_BLOCKED_ELL_ALG1, CUSPARSE_SPMM_BLOCKED_ELL_ALG1);
SAME(TCSPARSE_SPMM_BSR_ALG1, CUSPARSE_SPMM_BSR_ALG1);
SAME(TCSPARSE_SDDMM_ALG_DEFAULT, CUSPARSE_SDDMM_ALG_DEFAULT);

/* ---- helpers ------------------------------------------------------------------------ */

static const char *msg(void) { return tcsparseGetLastErrorMessage(); }

#define EXPECT_OK(call)                                                                        \
    do {                                                                                       \
        tcsparseStatus_t st_ = (call);                                                         \
        cr_assert_eq(st_, TCSPARSE_STATUS_SUCCESS, "%s -> %s: %s", #call,                      \
                     tcsparseGetErrorName(st_), msg());                                        \
        cr_assert_str_empty(msg(), "%s succeeded but left a message", #call);                  \
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

/* Host arrays of a 3x4 matrix: rows {0: (0,1.5) (2,-2)}, {1: empty}, {2: (1, 0.25) (3, 7)}. */
static int32_t off32[4] = {0, 2, 2, 4}, ind32[4] = {0, 2, 1, 3};
static int64_t off64[4] = {0, 2, 2, 4}, ind64[4] = {0, 2, 1, 3};
static int32_t rows32[4] = {0, 0, 2, 2};
static float vals[4] = {1.5f, -2.0f, 0.25f, 7.0f}, vals2[4];
static double dense[64], dense2[64];

static tcsparseSpMatDescr_t make_csr(void)
{
    tcsparseSpMatDescr_t d;
    EXPECT_OK(tcsparseCreateCsr(&d, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    return d;
}

/* ---- errors ------------------------------------------------------------------------- */

Test(errors, names_and_strings)
{
    for (int s = 0; s <= 11; s++) {
        const char *n = tcsparseGetErrorName((tcsparseStatus_t)s);
        cr_assert_not_null(n);
        cr_assert_eq(strncmp(n, "TCSPARSE_STATUS_", 16), 0, "%s", n);
        cr_assert_str_not_empty(tcsparseGetErrorString((tcsparseStatus_t)s));
        for (int t = 0; t < s; t++)
            cr_assert_str_neq(n, tcsparseGetErrorName((tcsparseStatus_t)t));
    }
    cr_assert_not_null(tcsparseGetErrorName((tcsparseStatus_t)99));
    cr_assert_not_null(tcsparseGetErrorString((tcsparseStatus_t)99));
    cr_assert_str_eq(tcsparseGetErrorName(TCSPARSE_STATUS_NOT_SUPPORTED),
                     "TCSPARSE_STATUS_NOT_SUPPORTED");
}

Test(errors, message_cleared_after_success)
{
    EXPECT_FAIL(tcsparseCreate(NULL), BAD);
    int v;
    EXPECT_OK(tcsparseGetProperty(MAJOR_VERSION, &v));
}

/* ---- handle ------------------------------------------------------------------------- */

Test(handle, defaults)
{
    unsetenv("TCSPARSE_MATH");
    tc_config_reload();
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    cudaStream_t s = (cudaStream_t)(uintptr_t)1;
    tcsparsePointerMode_t pm = TCSPARSE_POINTER_MODE_DEVICE;
    tcsparseMathMode_t mm = TCSPARSE_MATH_TF32;
    tcsparseRoute_t r = TCSPARSE_ROUTE_TC;
    tcsparseRouteInfo_t info;
    EXPECT_OK(tcsparseGetStream(h, &s));
    EXPECT_OK(tcsparseGetPointerMode(h, &pm));
    EXPECT_OK(tcsparseGetMathMode(h, &mm));
    EXPECT_OK(tcsparseGetRoute(h, &r));
    EXPECT_OK(tcsparseGetLastRoute(h, &info));
    cr_assert_null(s);
    cr_assert_eq(pm, TCSPARSE_POINTER_MODE_HOST);
    cr_assert_eq(mm, TCSPARSE_MATH_DEFAULT);
    cr_assert_eq(r, TCSPARSE_ROUTE_AUTO);
    cr_assert_eq(info.path, TCSPARSE_PATH_NONE);
    /* No GPU was touched. */
    cr_assert_null(h->cusp);
    cr_assert_eq(h->device, -1);
    EXPECT_OK(tcsparseDestroy(h));
}

Test(handle, math_from_environment)
{
    const char *vals_env[] = {"tf32", "TF32", "fp32", ""};
    tcsparseMathMode_t want[] = {TCSPARSE_MATH_TF32, TCSPARSE_MATH_TF32, TCSPARSE_MATH_DEFAULT,
                                 TCSPARSE_MATH_DEFAULT};
    for (int i = 0; i < 4; i++) {
        setenv("TCSPARSE_MATH", vals_env[i], 1);
        tc_config_reload();
        tcsparseHandle_t h;
        tcsparseMathMode_t m;
        EXPECT_OK(tcsparseCreate(&h));
        EXPECT_OK(tcsparseGetMathMode(h, &m));
        cr_assert_eq(m, want[i], "TCSPARSE_MATH=%s", vals_env[i]);
        EXPECT_OK(tcsparseDestroy(h));
    }
}

Test(handle, round_trips_and_version)
{
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    cudaStream_t s = (cudaStream_t)(uintptr_t)0x1230, got;
    EXPECT_OK(tcsparseSetStream(h, s));
    EXPECT_OK(tcsparseGetStream(h, &got));
    cr_assert_eq(got, s);
    tcsparsePointerMode_t pm;
    EXPECT_OK(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE));
    EXPECT_OK(tcsparseGetPointerMode(h, &pm));
    cr_assert_eq(pm, TCSPARSE_POINTER_MODE_DEVICE);
    tcsparseMathMode_t mm;
    EXPECT_OK(tcsparseSetMathMode(h, TCSPARSE_MATH_TF32));
    EXPECT_OK(tcsparseGetMathMode(h, &mm));
    cr_assert_eq(mm, TCSPARSE_MATH_TF32);
    for (int r = TCSPARSE_ROUTE_AUTO; r <= TCSPARSE_ROUTE_TC_BALANCED; r++) {
        tcsparseRoute_t got_r;
        EXPECT_OK(tcsparseSetRoute(h, (tcsparseRoute_t)r));
        EXPECT_OK(tcsparseGetRoute(h, &got_r));
        cr_assert_eq((int)got_r, r);
    }
    int v = -1;
    EXPECT_OK(tcsparseGetVersion(h, &v));
    cr_assert_eq(v, TCSPARSE_VERSION);
    EXPECT_OK(tcsparseGetProperty(MAJOR_VERSION, &v));
    cr_assert_eq(v, TCSPARSE_VER_MAJOR);
    EXPECT_OK(tcsparseGetProperty(MINOR_VERSION, &v));
    cr_assert_eq(v, TCSPARSE_VER_MINOR);
    EXPECT_OK(tcsparseGetProperty(PATCH_LEVEL, &v));
    cr_assert_eq(v, TCSPARSE_VER_PATCH);
    EXPECT_OK(tcsparseDestroy(h));
}

/* Every handle function on h must fail with INVALID_VALUE and leave outputs alone. */
static void check_bad_handle(tcsparseHandle_t h)
{
    int v = 42;
    cudaStream_t s = (cudaStream_t)(uintptr_t)7;
    tcsparsePointerMode_t pm = (tcsparsePointerMode_t)7;
    tcsparseMathMode_t mm = (tcsparseMathMode_t)7;
    tcsparseRoute_t r = (tcsparseRoute_t)7;
    tcsparseRouteInfo_t info;
    memset(&info, 0x5a, sizeof info);
    EXPECT_FAIL(tcsparseGetVersion(h, &v), BAD);
    EXPECT_FAIL(tcsparseSetStream(h, NULL), BAD);
    EXPECT_FAIL(tcsparseGetStream(h, &s), BAD);
    EXPECT_FAIL(tcsparseGetPointerMode(h, &pm), BAD);
    EXPECT_FAIL(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_HOST), BAD);
    EXPECT_FAIL(tcsparseSetMathMode(h, TCSPARSE_MATH_DEFAULT), BAD);
    EXPECT_FAIL(tcsparseGetMathMode(h, &mm), BAD);
    EXPECT_FAIL(tcsparseSetRoute(h, TCSPARSE_ROUTE_AUTO), BAD);
    EXPECT_FAIL(tcsparseGetRoute(h, &r), BAD);
    EXPECT_FAIL(tcsparseGetLastRoute(h, &info), BAD);
    cr_assert_eq(v, 42);
    cr_assert_eq(s, (cudaStream_t)(uintptr_t)7);
    cr_assert_eq((int)pm, 7);
    cr_assert_eq((int)mm, 7);
    cr_assert_eq((int)r, 7);
    cr_assert_eq(((unsigned char *)&info)[0], 0x5a);
}

Test(handle, null_handle_and_outputs)
{
    check_bad_handle(NULL);
    EXPECT_FAIL(tcsparseCreate(NULL), BAD);
    EXPECT_OK(tcsparseDestroy(NULL)); /* a no-op, as cusparseDestroy(NULL) */
    int v = 42;
    EXPECT_FAIL(tcsparseGetProperty(MAJOR_VERSION, NULL), BAD);
    EXPECT_FAIL(tcsparseGetProperty((libraryPropertyType)9, &v), BAD);
    cr_assert_eq(v, 42);
    tcsparseHandle_t h;
    EXPECT_OK(tcsparseCreate(&h));
    EXPECT_FAIL(tcsparseGetVersion(h, NULL), BAD);
    EXPECT_FAIL(tcsparseGetStream(h, NULL), BAD);
    EXPECT_FAIL(tcsparseGetPointerMode(h, NULL), BAD);
    EXPECT_FAIL(tcsparseSetPointerMode(h, (tcsparsePointerMode_t)2), BAD);
    EXPECT_FAIL(tcsparseGetMathMode(h, NULL), BAD);
    EXPECT_FAIL(tcsparseSetMathMode(h, (tcsparseMathMode_t)2), BAD);
    EXPECT_FAIL(tcsparseGetRoute(h, NULL), BAD);
    EXPECT_FAIL(tcsparseSetRoute(h, (tcsparseRoute_t)5), BAD);
    EXPECT_FAIL(tcsparseSetRoute(h, (tcsparseRoute_t)-1), BAD);
    EXPECT_FAIL(tcsparseGetLastRoute(h, NULL), BAD);
    tcsparsePointerMode_t pm;
    EXPECT_OK(tcsparseGetPointerMode(h, &pm));
    cr_assert_eq(pm, TCSPARSE_POINTER_MODE_HOST, "a refused mode must not be stored");
    EXPECT_OK(tcsparseDestroy(h));
}

/* A destroyed handle is caught by its wiped magic; reading freed memory is undefined, so the
 * test uses a live object whose magic is wrong, which is what a destroyed one looks like. */
Test(handle, wiped_magic)
{
    struct tcsparseContext fake;
    memset(&fake, 0, sizeof fake);
    fake.magic = TC_MAGIC_DEAD;
    check_bad_handle(&fake);
    EXPECT_FAIL(tcsparseDestroy(&fake), BAD); /* and it was not freed */
    fake.magic = TC_MAGIC_SPMAT;             /* another object's magic */
    check_bad_handle(&fake);
}

/* ---- sparse descriptors ------------------------------------------------------------- */

Test(spmat, csr_csc_coo_round_trips)
{
    for (int fmt = 0; fmt < 3; fmt++) {
        for (int wide = 0; wide < 2; wide++) {
            for (int base = 0; base < 2; base++) {
                tcsparseIndexType_t it = wide ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
                void *o = wide ? (void *)off64 : (void *)off32;
                void *i = wide ? (void *)ind64 : (void *)ind32;
                tcsparseIndexBase_t b = (tcsparseIndexBase_t)base;
                tcsparseSpMatDescr_t d;
                int64_t r, c, n;
                void *po, *pi, *pv;
                const void *co, *ci, *cv;
                tcsparseIndexType_t ot = (tcsparseIndexType_t)0, xt = (tcsparseIndexType_t)0;
                tcsparseIndexBase_t gb;
                cudaDataType vt;
                tcsparseFormat_t f;
                if (fmt == 0) {
                    EXPECT_OK(tcsparseCreateCsr(&d, 3, 4, 4, o, i, vals, it, it, b, CUDA_R_32F));
                    EXPECT_OK(tcsparseCsrGet(d, &r, &c, &n, &po, &pi, &pv, &ot, &xt, &gb, &vt));
                    EXPECT_OK(tcsparseConstCsrGet(d, &r, &c, &n, &co, &ci, &cv, &ot, &xt, &gb,
                                                  &vt));
                } else if (fmt == 1) {
                    EXPECT_OK(tcsparseCreateCsc(&d, 4, 3, 4, o, i, vals, it, it, b, CUDA_R_32F));
                    EXPECT_OK(tcsparseCscGet(d, &c, &r, &n, &po, &pi, &pv, &ot, &xt, &gb, &vt));
                    EXPECT_OK(tcsparseConstCscGet(d, &c, &r, &n, &co, &ci, &cv, &ot, &xt, &gb,
                                                  &vt));
                } else {
                    EXPECT_OK(tcsparseCreateCoo(&d, 3, 4, 4, o, i, vals, it, b, CUDA_R_32F));
                    EXPECT_OK(tcsparseCooGet(d, &r, &c, &n, &po, &pi, &pv, &xt, &gb, &vt));
                    EXPECT_OK(tcsparseConstCooGet(d, &r, &c, &n, &co, &ci, &cv, &xt, &gb, &vt));
                    ot = xt;
                }
                cr_assert(r == 3 && c == 4 && n == 4);
                cr_assert(po == o && pi == i && pv == vals && co == o && ci == i && cv == vals);
                cr_assert(ot == it && xt == it && gb == b && vt == CUDA_R_32F);
                EXPECT_OK(tcsparseSpMatGetSize(d, &r, &c, &n));
                cr_assert(n == 4 && (fmt == 1 ? r == 4 && c == 3 : r == 3 && c == 4));
                EXPECT_OK(tcsparseSpMatGetFormat(d, &f));
                cr_assert_eq(f, fmt == 0 ? TCSPARSE_FORMAT_CSR
                                         : fmt == 1 ? TCSPARSE_FORMAT_CSC : TCSPARSE_FORMAT_COO);
                EXPECT_OK(tcsparseSpMatGetIndexBase(d, &gb));
                cr_assert_eq(gb, b);
                int bc = 0;
                EXPECT_OK(tcsparseSpMatGetStridedBatch(d, &bc));
                cr_assert_eq(bc, 1);
                EXPECT_OK(tcsparseSpMatGetValues(d, &pv));
                EXPECT_OK(tcsparseConstSpMatGetValues(d, &cv));
                cr_assert(pv == vals && cv == vals);
                EXPECT_OK(tcsparseSpMatSetValues(d, vals2));
                EXPECT_OK(tcsparseSpMatGetValues(d, &pv));
                cr_assert_eq(pv, vals2);
                EXPECT_OK(tcsparseDestroySpMat(d));
            }
        }
    }
}

/* Const-created descriptors go through the non-const functions after a cast, as in cuSPARSE. */
Test(spmat, const_descriptors)
{
    tcsparseConstSpMatDescr_t d;
    EXPECT_OK(tcsparseCreateConstCsr(&d, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                     TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ONE, CUDA_R_32F));
    cr_assert(d->is_const);
    void *v;
    EXPECT_OK(tcsparseSpMatGetValues((tcsparseSpMatDescr_t)d, &v));
    cr_assert_eq(v, vals);
    EXPECT_OK(tcsparseCsrSetPointers((tcsparseSpMatDescr_t)d, off32, ind32, vals2));
    EXPECT_OK(tcsparseDestroySpMat(d));
    EXPECT_OK(tcsparseCreateConstCsc(&d, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                     TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    EXPECT_OK(tcsparseDestroySpMat(d));
    EXPECT_OK(tcsparseCreateConstCoo(&d, 3, 4, 4, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                     TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    EXPECT_OK(tcsparseDestroySpMat(d));
}

Test(spmat, wrong_format_functions)
{
    tcsparseSpMatDescr_t d = make_csr(), coo;
    int64_t r = -5, c = -5, n = -5;
    void *p1 = NULL, *p2 = NULL, *p3 = NULL;
    const void *c1 = NULL, *c2 = NULL, *c3 = NULL;
    tcsparseIndexType_t t1 = (tcsparseIndexType_t)0, t2 = (tcsparseIndexType_t)0;
    tcsparseIndexBase_t b = (tcsparseIndexBase_t)9;
    cudaDataType vt = (cudaDataType)99;
    EXPECT_FAIL(tcsparseCscGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCscGet(d, &r, &c, &n, &c1, &c2, &c3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCooGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCooGet(d, &r, &c, &n, &c1, &c2, &c3, &t1, &b, &vt), BAD);
    cr_assert(r == -5 && c == -5 && n == -5 && !p1 && !p2 && !p3 && !c1 && !c2 && !c3);
    cr_assert(t1 == 0 && t2 == 0 && b == 9 && vt == 99, "outputs written on failure");
    EXPECT_FAIL(tcsparseCscSetPointers(d, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCooSetPointers(d, rows32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCooSetStridedBatch(d, 2, 4), BAD);
    EXPECT_OK(tcsparseCreateCoo(&coo, 3, 4, 4, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    EXPECT_FAIL(tcsparseCsrGet(coo, &r, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCsrSetPointers(coo, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(coo, 2, 0, 0), BAD);
    EXPECT_OK(tcsparseDestroySpMat(coo));
    EXPECT_OK(tcsparseDestroySpMat(d));
}

/* Every descriptor function on d must fail with INVALID_VALUE (d NULL or not live). */
static void check_bad_spmat(struct tcsparseSpMatDescr *d)
{
    int64_t r, c, n;
    void *p1, *p2, *p3;
    const void *c1, *c2, *c3;
    tcsparseIndexType_t t1, t2;
    tcsparseIndexBase_t b;
    cudaDataType vt;
    tcsparseFormat_t f;
    int bc;
    EXPECT_FAIL(tcsparseCsrGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCsrGet(d, &r, &c, &n, &c1, &c2, &c3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCscGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCscGet(d, &r, &c, &n, &c1, &c2, &c3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCooGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseConstCooGet(d, &r, &c, &n, &c1, &c2, &c3, &t1, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCsrSetPointers(d, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCscSetPointers(d, off32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseCooSetPointers(d, rows32, ind32, vals), BAD);
    EXPECT_FAIL(tcsparseSpMatGetSize(d, &r, &c, &n), BAD);
    EXPECT_FAIL(tcsparseSpMatGetFormat(d, &f), BAD);
    EXPECT_FAIL(tcsparseSpMatGetIndexBase(d, &b), BAD);
    EXPECT_FAIL(tcsparseSpMatGetValues(d, &p1), BAD);
    EXPECT_FAIL(tcsparseConstSpMatGetValues(d, &c1), BAD);
    EXPECT_FAIL(tcsparseSpMatSetValues(d, vals), BAD);
    EXPECT_FAIL(tcsparseSpMatGetStridedBatch(d, &bc), BAD);
    EXPECT_FAIL(tcsparseCooSetStridedBatch(d, 1, 0), BAD);
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(d, 1, 0, 0), BAD);
}

Test(spmat, null_and_wiped_descriptors)
{
    check_bad_spmat(NULL);
    EXPECT_OK(tcsparseDestroySpMat(NULL)); /* a no-op, as in cuSPARSE */
    struct tcsparseSpMatDescr fake;
    memset(&fake, 0, sizeof fake);
    fake.magic = TC_MAGIC_DEAD;
    fake.format = TCSPARSE_FORMAT_CSR;
    check_bad_spmat(&fake);
    EXPECT_FAIL(tcsparseDestroySpMat(&fake), BAD);
    fake.magic = TC_MAGIC_DNMAT;
    check_bad_spmat(&fake);
}

Test(spmat, null_outputs)
{
    tcsparseSpMatDescr_t d = make_csr();
    int64_t r, c, n;
    void *p1, *p2, *p3;
    tcsparseIndexType_t t1, t2;
    tcsparseIndexBase_t b;
    cudaDataType vt;
    EXPECT_FAIL(tcsparseCsrGet(d, NULL, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCsrGet(d, &r, &c, &n, &p1, NULL, &p3, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseCsrGet(d, &r, &c, &n, &p1, &p2, &p3, &t1, &t2, &b, NULL), BAD);
    EXPECT_FAIL(tcsparseConstCsrGet(d, &r, &c, &n, NULL, NULL, NULL, &t1, &t2, &b, &vt), BAD);
    EXPECT_FAIL(tcsparseSpMatGetSize(d, &r, NULL, &n), BAD);
    EXPECT_FAIL(tcsparseSpMatGetFormat(d, NULL), BAD);
    EXPECT_FAIL(tcsparseSpMatGetIndexBase(d, NULL), BAD);
    EXPECT_FAIL(tcsparseSpMatGetValues(d, NULL), BAD);
    EXPECT_FAIL(tcsparseConstSpMatGetValues(d, NULL), BAD);
    EXPECT_FAIL(tcsparseSpMatGetStridedBatch(d, NULL), BAD);
    EXPECT_FAIL(tcsparseCreateCsr(NULL, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                  TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), BAD);
    EXPECT_FAIL(tcsparseCreateConstCoo(NULL, 3, 4, 4, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), BAD);
    EXPECT_FAIL(tcsparseCreateConstCsr(NULL, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                BAD);
    EXPECT_FAIL(tcsparseCreateCsc(NULL, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                  TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), BAD);
    EXPECT_FAIL(tcsparseCreateConstCsc(NULL, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                BAD);
    /* The const and CSC variants share the checks of CreateCsr. */
    tcsparseConstSpMatDescr_t cd = NULL;
    EXPECT_FAIL(tcsparseCreateConstCsr(&cd, -3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                BAD);
    EXPECT_FAIL(tcsparseCreateConstCsc(&cd, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_16U,
                                       TCSPARSE_INDEX_16U, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                UNSUP);
    EXPECT_FAIL(tcsparseCreateCsc(&d, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                  TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_8U), BAD);
    EXPECT_FAIL(tcsparseCreateConstCoo(&cd, 3, 4, 13, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                       TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), BAD);
    cr_assert_null(cd);
    EXPECT_OK(tcsparseDestroySpMat(d));
}

typedef struct {
    int64_t rows, cols, nnz;
    void *off, *val;
    tcsparseIndexType_t ot, it;
    int base;
    cudaDataType vt;
    tcsparseStatus_t want;
} create_case;

Test(spmat, create_validation)
{
    const int64_t big = (int64_t)1 << 40, i32max = INT32_MAX;
    const tcsparseIndexType_t I32 = TCSPARSE_INDEX_32I, I64 = TCSPARSE_INDEX_64I;
    char *mis = (char *)off32 + 1;
    create_case cases[] = {
        {-1, 4, 0, off32, vals, I32, I32, 0, CUDA_R_32F, BAD},
        {3, -1, 0, off32, vals, I32, I32, 0, CUDA_R_32F, BAD},
        {3, 4, -1, off32, vals, I32, I32, 0, CUDA_R_32F, BAD},
        {3, 4, 13, off32, vals, I32, I32, 0, CUDA_R_32F, BAD},        /* nnz > rows*cols */
        {0, 4, 1, off32, vals, I32, I32, 0, CUDA_R_32F, BAD},
        {big, big, big, NULL, NULL, I64, I64, 0, CUDA_R_64F, TCSPARSE_STATUS_SUCCESS},
        {3, 4, 4, off32, vals, TCSPARSE_INDEX_16U, TCSPARSE_INDEX_16U, 0, CUDA_R_32F, UNSUP},
        {3, 4, 4, off32, vals, I64, I32, 0, CUDA_R_32F, UNSUP},       /* mixed widths */
        {3, 4, 4, off32, vals, (tcsparseIndexType_t)7, I32, 0, CUDA_R_32F, BAD},
        {3, 4, 4, off32, vals, I32, I32, 2, CUDA_R_32F, BAD},
        {3, 4, 4, off32, vals, I32, I32, 0, CUDA_R_8U, BAD},
        {3, 4, 4, off32, vals, I32, I32, 0, (cudaDataType)77, BAD},
        {3, 4, 4, off32, vals, I32, I32, 0, CUDA_C_16F, UNSUP},
        {i32max, 4, 0, NULL, NULL, I32, I32, 0, CUDA_R_32F, TCSPARSE_STATUS_SUCCESS},
        {i32max, 4, 0, NULL, NULL, I32, I32, 1, CUDA_R_32F, BAD},    /* rows + base > 2^31-1 */
        {4, i32max + 1, 0, NULL, NULL, I32, I32, 0, CUDA_R_32F, BAD},
        {1 << 20, 1 << 20, i32max + 1, NULL, NULL, I32, I32, 0, CUDA_R_32F, BAD},
        {1 << 20, 1 << 20, i32max + 1, NULL, NULL, I64, I64, 0, CUDA_R_32F,
         TCSPARSE_STATUS_SUCCESS},
        {3, 4, 4, mis, vals, I32, I32, 0, CUDA_R_32F, BAD},           /* misaligned */
        {3, 4, 4, off32, (char *)vals + 2, I32, I32, 0, CUDA_R_32F, BAD},
        {3, 4, 4, off64, dense, I64, I64, 0, CUDA_R_64F, TCSPARSE_STATUS_SUCCESS},
        {3, 4, 4, NULL, NULL, I32, I32, 0, CUDA_R_32F, TCSPARSE_STATUS_SUCCESS}, /* set later */
        {0, 0, 0, NULL, NULL, I32, I32, 1, CUDA_R_16BF, TCSPARSE_STATUS_SUCCESS},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const create_case *q = &cases[k];
        for (int fmt = 0; fmt < 2; fmt++) {
            tcsparseSpMatDescr_t d = (tcsparseSpMatDescr_t)(uintptr_t)0x10;
            void *idx = q->off == mis ? (void *)ind32 : q->off;
            tcsparseStatus_t st =
                fmt == 0 ? tcsparseCreateCsr(&d, q->rows, q->cols, q->nnz, q->off, idx, q->val,
                                             q->ot, q->it, (tcsparseIndexBase_t)q->base, q->vt)
                         : tcsparseCreateCoo(&d, q->rows, q->cols, q->nnz, q->off, idx, q->val,
                                             q->ot == q->it ? q->it : (tcsparseIndexType_t)7,
                                             (tcsparseIndexBase_t)q->base, q->vt);
            tcsparseStatus_t want = q->want;
            if (fmt == 1 && q->ot != q->it)
                want = BAD; /* COO has one index type; 7 stands in for the mixed case */
            cr_assert_eq(st, want, "case %zu fmt %d: %s, expected %s (%s)", k, fmt,
                         tcsparseGetErrorName(st), tcsparseGetErrorName(want), msg());
            if (st == TCSPARSE_STATUS_SUCCESS) {
                cr_assert_str_empty(msg());
                EXPECT_OK(tcsparseDestroySpMat(d));
            } else {
                cr_assert_str_not_empty(msg(), "case %zu: no message", k);
                cr_assert_eq(d, (tcsparseSpMatDescr_t)(uintptr_t)0x10, "case %zu wrote", k);
            }
        }
    }
}

Test(spmat, set_pointers)
{
    tcsparseSpMatDescr_t d = make_csr();
    int32_t o2[4], i2[4];
    void *po, *pi, *pv;
    int64_t r, c, n;
    tcsparseIndexType_t t1, t2;
    tcsparseIndexBase_t b;
    cudaDataType vt;
    EXPECT_OK(tcsparseCsrSetPointers(d, o2, i2, vals2));
    EXPECT_OK(tcsparseCsrGet(d, &r, &c, &n, &po, &pi, &pv, &t1, &t2, &b, &vt));
    cr_assert(po == o2 && pi == i2 && pv == vals2);
    EXPECT_FAIL(tcsparseCsrSetPointers(d, (char *)o2 + 2, i2, vals2), BAD);
    EXPECT_FAIL(tcsparseSpMatSetValues(d, (char *)vals2 + 1), BAD);
    EXPECT_OK(tcsparseCsrGet(d, &r, &c, &n, &po, &pi, &pv, &t1, &t2, &b, &vt));
    cr_assert(po == o2 && pi == i2 && pv == vals2, "a refused setter changed the descriptor");
    EXPECT_OK(tcsparseCsrSetPointers(d, NULL, NULL, NULL)); /* accepted, as in cuSPARSE */
    EXPECT_OK(tcsparseDestroySpMat(d));
}

Test(spmat, strided_batch)
{
    tcsparseSpMatDescr_t csr = make_csr(), csc, coo;
    int bc;
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(csr, 0, 4, 4), BAD);
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(csr, 2, -1, 4), BAD);
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(csr, 2, 3, 4), BAD); /* < rows+1 offsets */
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(csr, 2, 4, 3), BAD); /* < nnz */
    EXPECT_OK(tcsparseSpMatGetStridedBatch(csr, &bc));
    cr_assert_eq(bc, 1);
    EXPECT_OK(tcsparseCsrSetStridedBatch(csr, 3, 4, 4));
    EXPECT_OK(tcsparseSpMatGetStridedBatch(csr, &bc));
    cr_assert_eq(bc, 3);
    EXPECT_OK(tcsparseCsrSetStridedBatch(csr, 2, 0, 0)); /* one matrix shared by the batch */
    EXPECT_OK(tcsparseCreateCsc(&csc, 4, 3, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    EXPECT_FAIL(tcsparseCsrSetStridedBatch(csc, 2, 3, 4), BAD); /* < cols+1 offsets */
    EXPECT_OK(tcsparseCsrSetStridedBatch(csc, 2, 4, 4));
    EXPECT_OK(tcsparseCreateCoo(&coo, 3, 4, 4, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    EXPECT_FAIL(tcsparseCooSetStridedBatch(coo, 2, 3), BAD);
    EXPECT_FAIL(tcsparseCooSetStridedBatch(coo, -1, 4), BAD);
    EXPECT_OK(tcsparseCooSetStridedBatch(coo, 2, 4));
    EXPECT_OK(tcsparseCooSetStridedBatch(coo, 5, 0));
    EXPECT_OK(tcsparseSpMatGetStridedBatch(coo, &bc));
    cr_assert_eq(bc, 5);
    EXPECT_OK(tcsparseDestroySpMat(csr));
    EXPECT_OK(tcsparseDestroySpMat(csc));
    EXPECT_OK(tcsparseDestroySpMat(coo));
}

/* The cuSPARSE mirror is cached (cuSPARSE keeps preprocessing data with it) and follows
 * the setters; cuSPARSE descriptors live on the host, so this needs no GPU. */
Test(spmat, cusparse_mirror_follows_setters)
{
    tcsparseSpMatDescr_t d = make_csr();
    cusparseSpMatDescr_t m, m2;
    int64_t r, c, n;
    void *po, *pi, *pv;
    cusparseIndexType_t t1, t2;
    cusparseIndexBase_t b;
    cudaDataType vt;
    int32_t o2[4], i2[4];
    EXPECT_OK(tc_spmat_cusparse(d, &m));
    cr_assert_eq(d->cusp, m);
    cr_assert_eq(cusparseCsrGet(m, &r, &c, &n, &po, &pi, &pv, &t1, &t2, &b, &vt), 0);
    cr_assert(r == 3 && c == 4 && n == 4 && po == off32 && pi == ind32 && pv == vals);
    EXPECT_OK(tcsparseSpMatSetValues(d, vals2));
    EXPECT_OK(tc_spmat_cusparse(d, &m2));
    cr_assert_eq(m2, m, "the mirror must be kept");
    cr_assert_eq(cusparseSpMatGetValues(m, &pv), 0);
    cr_assert_eq(pv, vals2);
    EXPECT_OK(tcsparseCsrSetPointers(d, o2, i2, vals));
    EXPECT_OK(tc_spmat_cusparse(d, &m2));
    cr_assert_eq(m2, m);
    cr_assert_eq(cusparseCsrGet(m, &r, &c, &n, &po, &pi, &pv, &t1, &t2, &b, &vt), 0);
    cr_assert(po == o2 && pi == i2 && pv == vals);
    EXPECT_OK(tcsparseCsrSetStridedBatch(d, 2, 4, 4));
    cr_assert_null(d->cusp, "a batch change rebuilds the mirror");
    EXPECT_OK(tc_spmat_cusparse(d, &m));
    int bc = 0;
    cr_assert_eq(cusparseSpMatGetStridedBatch(m, &bc), 0);
    cr_assert_eq(bc, 2);
    EXPECT_OK(tcsparseDestroySpMat(d));

    tcsparseSpMatDescr_t coo;
    EXPECT_OK(tcsparseCreateCoo(&coo, 3, 4, 4, rows32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_BASE_ONE, CUDA_R_32F));
    EXPECT_OK(tc_spmat_cusparse(coo, &m));
    EXPECT_OK(tcsparseCooSetPointers(coo, i2, o2, vals2));
    EXPECT_OK(tc_spmat_cusparse(coo, &m2));
    cr_assert_eq(m2, m);
    cr_assert_eq(cusparseCooGet(m, &r, &c, &n, &po, &pi, &pv, &t1, &b, &vt), 0);
    cr_assert(po == i2 && pi == o2 && pv == vals2 && b == CUSPARSE_INDEX_BASE_ONE);
    EXPECT_OK(tcsparseDestroySpMat(coo));

    tcsparseDnMatDescr_t dn;
    cusparseDnMatDescr_t dm, dm2;
    EXPECT_OK(tcsparseCreateDnMat(&dn, 5, 3, 7, dense, CUDA_R_64F, TCSPARSE_ORDER_COL));
    EXPECT_OK(tc_dnmat_cusparse(dn, &dm));
    EXPECT_OK(tcsparseDnMatSetValues(dn, dense2));
    EXPECT_OK(tc_dnmat_cusparse(dn, &dm2));
    cr_assert_eq(dm2, dm);
    cr_assert_eq(cusparseDnMatGetValues(dm, &pv), 0);
    cr_assert_eq(pv, dense2);
    EXPECT_OK(tcsparseDnMatSetStridedBatch(dn, 2, 21));
    EXPECT_OK(tc_dnmat_cusparse(dn, &dm));
    int64_t stride = 0;
    cr_assert_eq(cusparseDnMatGetStridedBatch(dm, &bc, &stride), 0);
    cr_assert(bc == 2 && stride == 21);
    EXPECT_OK(tcsparseDestroyDnMat(dn));
}

/* ---- dense descriptors -------------------------------------------------------------- */

Test(dnmat, round_trips)
{
    for (int o = TCSPARSE_ORDER_COL; o <= TCSPARSE_ORDER_ROW; o++) {
        tcsparseDnMatDescr_t d;
        tcsparseConstDnMatDescr_t cd;
        int64_t r, c, ld;
        void *v;
        const void *cv;
        cudaDataType t;
        tcsparseOrder_t got;
        EXPECT_OK(tcsparseCreateDnMat(&d, 5, 3, 9, dense, CUDA_R_64F, (tcsparseOrder_t)o));
        EXPECT_OK(tcsparseDnMatGet(d, &r, &c, &ld, &v, &t, &got));
        cr_assert(r == 5 && c == 3 && ld == 9 && v == dense && t == CUDA_R_64F && (int)got == o);
        EXPECT_OK(tcsparseConstDnMatGet(d, &r, &c, &ld, &cv, &t, &got));
        cr_assert_eq(cv, dense);
        EXPECT_OK(tcsparseDnMatSetValues(d, dense2));
        EXPECT_OK(tcsparseDnMatGetValues(d, &v));
        EXPECT_OK(tcsparseConstDnMatGetValues(d, &cv));
        cr_assert(v == dense2 && cv == dense2);
        int bc = 0;
        int64_t bs = -1;
        EXPECT_OK(tcsparseDnMatGetStridedBatch(d, &bc, &bs));
        cr_assert(bc == 1 && bs == 0);
        int64_t size = o == TCSPARSE_ORDER_COL ? 27 : 45;
        EXPECT_FAIL(tcsparseDnMatSetStridedBatch(d, 2, size - 1), BAD);
        EXPECT_FAIL(tcsparseDnMatSetStridedBatch(d, 0, size), BAD);
        EXPECT_FAIL(tcsparseDnMatSetStridedBatch(d, 2, -size), BAD);
        EXPECT_OK(tcsparseDnMatSetStridedBatch(d, 2, size));
        EXPECT_OK(tcsparseDnMatGetStridedBatch(d, &bc, &bs));
        cr_assert(bc == 2 && bs == size);
        EXPECT_OK(tcsparseDnMatSetStridedBatch(d, 4, 0));
        EXPECT_OK(tcsparseDestroyDnMat(d));
        EXPECT_OK(tcsparseCreateConstDnMat(&cd, 5, 3, 9, dense, CUDA_R_64F, (tcsparseOrder_t)o));
        cr_assert(cd->is_const);
        EXPECT_OK(tcsparseConstDnMatGet(cd, &r, &c, &ld, &cv, &t, &got));
        EXPECT_OK(tcsparseDestroyDnMat(cd));
    }
}

Test(dnmat, create_validation)
{
    struct {
        int64_t rows, cols, ld;
        void *v;
        cudaDataType t;
        int order;
        tcsparseStatus_t want;
    } cases[] = {
        {-1, 3, 5, dense, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},
        {5, -1, 5, dense, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},
        {5, 3, -1, dense, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},
        {5, 3, 4, dense, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},  /* ld < rows */
        {5, 3, 2, dense, CUDA_R_64F, TCSPARSE_ORDER_ROW, BAD},  /* ld < cols */
        {5, 3, 3, dense, CUDA_R_64F, TCSPARSE_ORDER_ROW, TCSPARSE_STATUS_SUCCESS},
        {0, 3, 0, NULL, CUDA_R_64F, TCSPARSE_ORDER_COL, TCSPARSE_STATUS_SUCCESS},
        {5, 0, 0, NULL, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},   /* ld 0 < rows 5 */
        {5, 3, 5, NULL, CUDA_R_32F, TCSPARSE_ORDER_COL, TCSPARSE_STATUS_SUCCESS}, /* set later */
        {5, 3, 5, dense, CUDA_R_64F, 0, BAD},
        {5, 3, 5, dense, CUDA_R_64F, 3, BAD},
        {5, 3, 5, dense, CUDA_R_8U, TCSPARSE_ORDER_COL, BAD},
        {5, 3, 5, dense, CUDA_C_16BF, TCSPARSE_ORDER_COL, UNSUP},
        {5, 3, 5, (char *)dense + 4, CUDA_R_64F, TCSPARSE_ORDER_COL, BAD},
        {5, 3, 5, (char *)dense + 4, CUDA_R_32F, TCSPARSE_ORDER_COL, TCSPARSE_STATUS_SUCCESS},
        {2, (int64_t)1 << 62, 8, NULL, CUDA_R_32F, TCSPARSE_ORDER_COL, BAD}, /* ld*cols overflow */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcsparseDnMatDescr_t d = (tcsparseDnMatDescr_t)(uintptr_t)0x10;
        tcsparseStatus_t st = tcsparseCreateDnMat(&d, cases[k].rows, cases[k].cols, cases[k].ld,
                                                  cases[k].v, cases[k].t,
                                                  (tcsparseOrder_t)cases[k].order);
        cr_assert_eq(st, cases[k].want, "case %zu: %s (%s)", k, tcsparseGetErrorName(st), msg());
        if (st == TCSPARSE_STATUS_SUCCESS) {
            EXPECT_OK(tcsparseDestroyDnMat(d));
        } else {
            cr_assert_str_not_empty(msg());
            cr_assert_eq(d, (tcsparseDnMatDescr_t)(uintptr_t)0x10, "case %zu wrote", k);
        }
    }
    EXPECT_FAIL(tcsparseCreateDnMat(NULL, 5, 3, 5, dense, CUDA_R_64F, TCSPARSE_ORDER_COL), BAD);
    EXPECT_FAIL(tcsparseCreateConstDnMat(NULL, 5, 3, 5, dense, CUDA_R_64F, TCSPARSE_ORDER_COL),
                BAD);
}

static void check_bad_dnmat(struct tcsparseDnMatDescr *d)
{
    int64_t r, c, ld, bs;
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
    EXPECT_FAIL(tcsparseDnMatSetStridedBatch(d, 1, 0), BAD);
    EXPECT_FAIL(tcsparseDnMatGetStridedBatch(d, &bc, &bs), BAD);
}

Test(dnmat, null_wiped_and_outputs)
{
    check_bad_dnmat(NULL);
    EXPECT_OK(tcsparseDestroyDnMat(NULL));
    struct tcsparseDnMatDescr fake;
    memset(&fake, 0, sizeof fake);
    fake.magic = TC_MAGIC_DEAD;
    check_bad_dnmat(&fake);
    EXPECT_FAIL(tcsparseDestroyDnMat(&fake), BAD);
    fake.magic = TC_MAGIC_SPMAT;
    check_bad_dnmat(&fake);

    tcsparseDnMatDescr_t d;
    EXPECT_OK(tcsparseCreateDnMat(&d, 5, 3, 5, dense, CUDA_R_64F, TCSPARSE_ORDER_COL));
    int64_t r, c, ld, bs;
    void *v;
    cudaDataType t;
    tcsparseOrder_t o;
    int bc;
    EXPECT_FAIL(tcsparseDnMatGet(d, &r, &c, NULL, &v, &t, &o), BAD);
    EXPECT_FAIL(tcsparseConstDnMatGet(d, &r, &c, &ld, NULL, &t, &o), BAD);
    EXPECT_FAIL(tcsparseDnMatGetValues(d, NULL), BAD);
    EXPECT_FAIL(tcsparseConstDnMatGetValues(d, NULL), BAD);
    EXPECT_FAIL(tcsparseDnMatGetStridedBatch(d, &bc, NULL), BAD);
    EXPECT_FAIL(tcsparseDnMatGetStridedBatch(d, NULL, &bs), BAD);
    EXPECT_FAIL(tcsparseDnMatSetValues(d, (char *)dense + 1), BAD);
    EXPECT_OK(tcsparseDestroyDnMat(d));
}

/* ---- SpMM / SDDMM argument checks, all before any CUDA call ------------------------- */

static tcsparseHandle_t H;
static float one = 1.0f, half_ = 0.5f;
static int gpu;

static void ops_init(void)
{
    char why[200];
    gpu = tc_test_gpu_available(why, sizeof why);
    EXPECT_OK(tcsparseCreate(&H));
    /* cuSPARSE, so that on a GPU a call that passes the checks never reads the host arrays. */
    EXPECT_OK(tcsparseSetRoute(H, TCSPARSE_ROUTE_CUSPARSE));
}

static void ops_fini(void) { tcsparseDestroy(H); }

/* A call whose arguments pass every check: without a GPU it stops at the first CUDA step. */
static void expect_passes(tcsparseStatus_t st, const char *what)
{
    if (gpu) {
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: %s (%s)", what, tcsparseGetErrorName(st),
                     msg());
    } else {
        cr_assert_eq(st, TCSPARSE_STATUS_NOT_INITIALIZED, "%s: %s (%s)", what,
                     tcsparseGetErrorName(st), msg());
        cr_assert_not_null(strstr(msg(), "no CUDA device"), "%s: %s", what, msg());
    }
}

static tcsparseDnMatDescr_t dn(int64_t r, int64_t c, cudaDataType t, tcsparseOrder_t o)
{
    tcsparseDnMatDescr_t d;
    EXPECT_OK(tcsparseCreateDnMat(&d, r, c, o == TCSPARSE_ORDER_COL ? r : c, dense, t, o));
    return d;
}

static tcsparseSpMatDescr_t sp(tcsparseFormat_t f, int64_t r, int64_t c, cudaDataType t)
{
    tcsparseSpMatDescr_t d;
    if (f == TCSPARSE_FORMAT_CSR)
        EXPECT_OK(tcsparseCreateCsr(&d, r, c, 4, off64, ind64, dense, TCSPARSE_INDEX_64I,
                                    TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ZERO, t));
    else if (f == TCSPARSE_FORMAT_CSC)
        EXPECT_OK(tcsparseCreateCsc(&d, r, c, 4, off64, ind64, dense, TCSPARSE_INDEX_64I,
                                    TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ZERO, t));
    else
        EXPECT_OK(tcsparseCreateCoo(&d, r, c, 4, off64, ind64, dense, TCSPARSE_INDEX_64I,
                                    TCSPARSE_INDEX_BASE_ZERO, t));
    return d;
}

/* The three SpMM functions with the same arguments must all give `want`; SUCCESS means
 * "passes the checks", and bufferSize must not be written on failure.  On a GPU only
 * bufferSize runs a passing case: the others would read the host arrays. */
static void spmm3(tcsparseOperation_t opA, tcsparseOperation_t opB, const void *alpha,
                  tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B, const void *beta,
                  tcsparseDnMatDescr_t C, cudaDataType ct, tcsparseSpMMAlg_t alg,
                  tcsparseStatus_t want, int line)
{
    size_t size = 12345;
    tcsparseStatus_t st[3];
    st[0] = tcsparseSpMM_bufferSize(H, opA, opB, alpha, A, B, beta, C, ct, alg, &size);
    if (want == TCSPARSE_STATUS_SUCCESS) {
        expect_passes(st[0], "SpMM_bufferSize");
        if (!gpu) {
            expect_passes(tcsparseSpMM_preprocess(H, opA, opB, alpha, A, B, beta, C, ct, alg,
                                                  NULL), "SpMM_preprocess");
            expect_passes(tcsparseSpMM(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL), "SpMM");
        }
        return;
    }
    st[1] = tcsparseSpMM_preprocess(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL);
    st[2] = tcsparseSpMM(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(st[k], want, "line %d, call %d: %s, expected %s", line, k,
                     tcsparseGetErrorName(st[k]), tcsparseGetErrorName(want));
    cr_assert_str_not_empty(msg());
    cr_assert_eq(size, 12345, "line %d: bufferSize written on failure", line);
}

#define SPMM3(opA, opB, al, A, B, be, C, ct, alg, want)                                        \
    spmm3(opA, opB, al, A, B, be, C, ct, alg, want, __LINE__)
#define N_ TCSPARSE_OPERATION_NON_TRANSPOSE
#define T_ TCSPARSE_OPERATION_TRANSPOSE
#define H_ TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE
#define COL TCSPARSE_ORDER_COL
#define ROW TCSPARSE_ORDER_ROW
#define DEF TCSPARSE_SPMM_ALG_DEFAULT
#define OK_ TCSPARSE_STATUS_SUCCESS

TestSuite(spmm, .init = ops_init, .fini = ops_fini);

Test(spmm, null_and_wiped_arguments)
{
    tcsparseSpMatDescr_t A = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F);
    tcsparseDnMatDescr_t B = dn(5, 7, CUDA_R_32F, COL), C = dn(6, 7, CUDA_R_32F, ROW);
    struct tcsparseContext fh;
    struct tcsparseSpMatDescr fa;
    struct tcsparseDnMatDescr fd;
    memset(&fh, 0, sizeof fh);
    memset(&fa, 0, sizeof fa);
    memset(&fd, 0, sizeof fd);
    fh.magic = fa.magic = fd.magic = TC_MAGIC_DEAD;
    size_t size = 7;
    tcsparseHandle_t hs[] = {NULL, &fh};
    for (int k = 0; k < 2; k++) {
        EXPECT_FAIL(tcsparseSpMM_bufferSize(hs[k], N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF,
                                            &size), BAD);
        EXPECT_FAIL(tcsparseSpMM_preprocess(hs[k], N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF,
                                            NULL), BAD);
        EXPECT_FAIL(tcsparseSpMM(hs[k], N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    }
    SPMM3(N_, N_, &one, NULL, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, &fa, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, NULL, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, &fd, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, B, &one, NULL, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, B, &one, &fd, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, NULL, A, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, B, NULL, C, CUDA_R_32F, DEF, BAD);
    EXPECT_FAIL(tcsparseSpMM_bufferSize(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL),
                BAD);
    cr_assert_eq(size, 7);
    SPMM3(N_, N_, &one, A, B, &half_, C, CUDA_R_32F, DEF, OK_);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

Test(spmm, enums_and_dimensions)
{
    tcsparseSpMatDescr_t A = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F);
    tcsparseDnMatDescr_t B = dn(5, 7, CUDA_R_32F, COL), C = dn(6, 7, CUDA_R_32F, ROW);
    tcsparseDnMatDescr_t B4 = dn(4, 7, CUDA_R_32F, COL), C8 = dn(6, 8, CUDA_R_32F, COL);
    tcsparseDnMatDescr_t C5 = dn(5, 7, CUDA_R_32F, COL), Bt = dn(7, 5, CUDA_R_32F, ROW);
    tcsparseDnMatDescr_t B6 = dn(6, 7, CUDA_R_32F, ROW);
    SPMM3((tcsparseOperation_t)3, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, (tcsparseOperation_t)-1, &one, A, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, N_, &one, A, B, &one, C, CUDA_R_32F, (tcsparseSpMMAlg_t)7, BAD);
    SPMM3(N_, N_, &one, A, B, &one, C, CUDA_R_32F, (tcsparseSpMMAlg_t)99, BAD);
    SPMM3(N_, N_, &one, A, B4, &one, C, CUDA_R_32F, DEF, BAD); /* inner 5 vs 4 */
    SPMM3(N_, N_, &one, A, B, &one, C8, CUDA_R_32F, DEF, BAD); /* C 6x8, op(A)op(B) 6x7 */
    SPMM3(N_, N_, &one, A, B, &one, C5, CUDA_R_32F, DEF, BAD);
    SPMM3(T_, N_, &one, A, B6, &one, C5, CUDA_R_32F, DEF, OK_); /* Aᵀ: 5x6 · 6x7 */
    SPMM3(T_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(N_, T_, &one, A, Bt, &one, C, CUDA_R_32F, DEF, OK_); /* Bᵀ: 5x7 */
    SPMM3(N_, T_, &one, A, B, &one, C, CUDA_R_32F, DEF, BAD);
    SPMM3(H_, N_, &one, A, B6, &one, C5, CUDA_R_32F, DEF, BAD); /* conjugate of real data */
    SPMM3(N_, H_, &one, A, Bt, &one, C, CUDA_R_32F, DEF, BAD);
    tcsparseSpMatDescr_t Ac = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_C_32F);
    tcsparseDnMatDescr_t Bc = dn(6, 7, CUDA_C_32F, COL), Cc = dn(5, 7, CUDA_C_32F, COL);
    float cone[2] = {1, 0};
    SPMM3(H_, N_, cone, Ac, Bc, cone, Cc, CUDA_C_32F, DEF, OK_);
    tcsparseDestroySpMat(Ac);
    tcsparseDestroyDnMat(Bc);
    tcsparseDestroyDnMat(Cc);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
    tcsparseDestroyDnMat(B4);
    tcsparseDestroyDnMat(C8);
    tcsparseDestroyDnMat(C5);
    tcsparseDestroyDnMat(Bt);
    tcsparseDestroyDnMat(B6);
}

Test(spmm, value_types)
{
    struct {
        cudaDataType a, b, c, ct;
        tcsparseStatus_t want;
    } cases[] = {
        {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, OK_},
        {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, OK_},
        {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, OK_},
        {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, OK_},
        {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, OK_},
        {CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, OK_},
        {CUDA_R_8I, CUDA_R_8I, CUDA_R_32F, CUDA_R_32F, OK_},
        {CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, OK_},
        {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, UNSUP},
        {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_64F, UNSUP},
        {CUDA_R_32F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, UNSUP}, /* A and B differ */
        {CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, UNSUP},
        {CUDA_R_32I, CUDA_R_32I, CUDA_R_32I, CUDA_R_32I, UNSUP},
        {CUDA_R_8I, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, UNSUP},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcsparseSpMatDescr_t A = sp(TCSPARSE_FORMAT_COO, 6, 5, cases[k].a);
        tcsparseDnMatDescr_t B = dn(5, 3, cases[k].b, ROW), C = dn(6, 3, cases[k].c, COL);
        double scal[2] = {1, 0}; /* large enough for any scalar type */
        SPMM3(N_, N_, scal, A, B, scal, C, cases[k].ct, DEF, cases[k].want);
        tcsparseDestroySpMat(A);
        tcsparseDestroyDnMat(B);
        tcsparseDestroyDnMat(C);
    }
}

Test(spmm, algorithms_formats_batches)
{
    tcsparseSpMatDescr_t csr = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F);
    tcsparseSpMatDescr_t csc = sp(TCSPARSE_FORMAT_CSC, 6, 5, CUDA_R_32F);
    tcsparseSpMatDescr_t coo = sp(TCSPARSE_FORMAT_COO, 6, 5, CUDA_R_32F);
    tcsparseDnMatDescr_t B = dn(5, 7, CUDA_R_32F, ROW), C = dn(6, 7, CUDA_R_32F, ROW);
    tcsparseDnMatDescr_t B6 = dn(6, 7, CUDA_R_32F, ROW), C5 = dn(5, 7, CUDA_R_32F, ROW);
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_COO_ALG1, BAD);
    SPMM3(N_, N_, &one, csc, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_COO_ALG4, BAD);
    SPMM3(N_, N_, &one, coo, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG2, BAD);
    SPMM3(N_, N_, &one, csc, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG3, BAD);
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_BSR_ALG1, BAD);
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_BLOCKED_ELL_ALG1, BAD);
    SPMM3(T_, N_, &one, csr, B6, &one, C5, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG3, UNSUP);
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG3, OK_);
    SPMM3(N_, N_, &one, csc, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG1, OK_);
    SPMM3(N_, N_, &one, coo, B, &one, C, CUDA_R_32F, TCSPARSE_SPMM_COO_ALG4, OK_);
    /* Batch counts must be equal. */
    EXPECT_OK(tcsparseDnMatSetStridedBatch(C, 2, 42));
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, DEF, BAD);
    EXPECT_OK(tcsparseDnMatSetStridedBatch(B, 2, 0));
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, DEF, BAD);
    EXPECT_OK(tcsparseCsrSetStridedBatch(csr, 2, 0, 0));
    SPMM3(N_, N_, &one, csr, B, &one, C, CUDA_R_32F, DEF, OK_);
    tcsparseDestroySpMat(csr);
    tcsparseDestroySpMat(csc);
    tcsparseDestroySpMat(coo);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
    tcsparseDestroyDnMat(B6);
    tcsparseDestroyDnMat(C5);
}

/* Creation accepts NULL arrays; an execution that would read them does not. */
Test(spmm, null_arrays_at_execution)
{
    tcsparseSpMatDescr_t A = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F), E;
    tcsparseDnMatDescr_t B = dn(5, 7, CUDA_R_32F, ROW), C = dn(6, 7, CUDA_R_32F, ROW);
    size_t size = 99;
    EXPECT_OK(tcsparseSpMatSetValues(A, NULL));
    tcsparseStatus_t st =
        tcsparseSpMM_bufferSize(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, &size);
    expect_passes(st, "bufferSize reads no arrays");
    EXPECT_FAIL(tcsparseSpMM_preprocess(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL),
                BAD);
    EXPECT_FAIL(tcsparseSpMM(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_OK(tcsparseSpMatSetValues(A, dense));
    EXPECT_OK(tcsparseDnMatSetValues(C, NULL));
    EXPECT_FAIL(tcsparseSpMM(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_OK(tcsparseDnMatSetValues(C, dense));
    EXPECT_OK(tcsparseDnMatSetValues(B, NULL));
    EXPECT_FAIL(tcsparseSpMM(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, NULL), BAD);
    EXPECT_OK(tcsparseDnMatSetValues(B, dense));
    /* An empty matrix needs no arrays (cuSPARSE accepts this too). */
    EXPECT_OK(tcsparseCreateCsr(&E, 6, 5, 0, NULL, NULL, NULL, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    SPMM3(N_, N_, &one, E, B, &one, C, CUDA_R_32F, DEF, OK_);
    tcsparseDestroySpMat(E);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

Test(spmm, valid_call_without_gpu_fails_cleanly)
{
    if (gpu)
        cr_skip_test("a GPU is present");
    tcsparseSpMatDescr_t A = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F);
    tcsparseDnMatDescr_t B = dn(5, 7, CUDA_R_32F, ROW), C = dn(6, 7, CUDA_R_32F, ROW);
    EXPECT_OK(tcsparseSetRoute(H, TCSPARSE_ROUTE_AUTO));
    size_t size = 5;
    EXPECT_FAIL(tcsparseSpMM_bufferSize(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F, DEF, &size),
                TCSPARSE_STATUS_NOT_INITIALIZED);
    cr_assert_eq(size, 5);
    cr_assert_not_null(strstr(msg(), "no CUDA device"), "%s", msg());
    cr_assert_null(H->cusp);
    tcsparseDestroySpMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

/* ---- SDDMM -------------------------------------------------------------------------- */

static void sddmm3(tcsparseOperation_t opA, tcsparseOperation_t opB, const void *alpha,
                   tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B, const void *beta,
                   tcsparseSpMatDescr_t C, cudaDataType ct, tcsparseSDDMMAlg_t alg,
                   tcsparseStatus_t want, int line)
{
    size_t size = 12345;
    tcsparseStatus_t st[3];
    st[0] = tcsparseSDDMM_bufferSize(H, opA, opB, alpha, A, B, beta, C, ct, alg, &size);
    if (want == TCSPARSE_STATUS_SUCCESS) {
        expect_passes(st[0], "SDDMM_bufferSize");
        if (!gpu) {
            expect_passes(tcsparseSDDMM_preprocess(H, opA, opB, alpha, A, B, beta, C, ct, alg,
                                                   NULL), "SDDMM_preprocess");
            expect_passes(tcsparseSDDMM(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL),
                          "SDDMM");
        }
        return;
    }
    st[1] = tcsparseSDDMM_preprocess(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL);
    st[2] = tcsparseSDDMM(H, opA, opB, alpha, A, B, beta, C, ct, alg, NULL);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(st[k], want, "line %d, call %d: %s, expected %s", line, k,
                     tcsparseGetErrorName(st[k]), tcsparseGetErrorName(want));
    cr_assert_str_not_empty(msg());
    cr_assert_eq(size, 12345, "line %d: bufferSize written on failure", line);
}

#define SDDMM3(opA, opB, al, A, B, be, C, ct, want)                                            \
    sddmm3(opA, opB, al, A, B, be, C, ct, TCSPARSE_SDDMM_ALG_DEFAULT, want, __LINE__)

TestSuite(sddmm, .init = ops_init, .fini = ops_fini);

Test(sddmm, arguments)
{
    tcsparseDnMatDescr_t A = dn(6, 9, CUDA_R_32F, ROW), B = dn(9, 5, CUDA_R_32F, COL);
    tcsparseDnMatDescr_t At = dn(9, 6, CUDA_R_32F, COL), B8 = dn(8, 5, CUDA_R_32F, COL);
    tcsparseSpMatDescr_t C = sp(TCSPARSE_FORMAT_CSR, 6, 5, CUDA_R_32F);
    tcsparseSpMatDescr_t Cc = sp(TCSPARSE_FORMAT_CSC, 6, 5, CUDA_R_32F);
    tcsparseSpMatDescr_t Co = sp(TCSPARSE_FORMAT_COO, 6, 5, CUDA_R_32F);
    tcsparseSpMatDescr_t C7 = sp(TCSPARSE_FORMAT_CSR, 7, 5, CUDA_R_32F);
    struct tcsparseSpMatDescr fake;
    memset(&fake, 0, sizeof fake);
    size_t size = 3;
    EXPECT_FAIL(tcsparseSDDMM_bufferSize(NULL, N_, N_, &one, A, B, &one, C, CUDA_R_32F,
                                         TCSPARSE_SDDMM_ALG_DEFAULT, &size), BAD);
    EXPECT_FAIL(tcsparseSDDMM_bufferSize(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F,
                                         TCSPARSE_SDDMM_ALG_DEFAULT, NULL), BAD);
    EXPECT_FAIL(tcsparseSDDMM_preprocess(NULL, N_, N_, &one, A, B, &one, C, CUDA_R_32F,
                                         TCSPARSE_SDDMM_ALG_DEFAULT, NULL), BAD);
    EXPECT_FAIL(tcsparseSDDMM(NULL, N_, N_, &one, A, B, &one, C, CUDA_R_32F,
                              TCSPARSE_SDDMM_ALG_DEFAULT, NULL), BAD);
    cr_assert_eq(size, 3);
    SDDMM3(N_, N_, &one, NULL, B, &one, C, CUDA_R_32F, BAD);
    SDDMM3(N_, N_, &one, A, NULL, &one, C, CUDA_R_32F, BAD);
    SDDMM3(N_, N_, &one, A, B, &one, NULL, CUDA_R_32F, BAD);
    SDDMM3(N_, N_, &one, A, B, &one, &fake, CUDA_R_32F, BAD);
    SDDMM3(N_, N_, NULL, A, B, &one, C, CUDA_R_32F, BAD);
    SDDMM3(N_, N_, &one, A, B, NULL, C, CUDA_R_32F, BAD);
    SDDMM3((tcsparseOperation_t)5, N_, &one, A, B, &one, C, CUDA_R_32F, BAD);
    sddmm3(N_, N_, &one, A, B, &one, C, CUDA_R_32F, (tcsparseSDDMMAlg_t)1, BAD, __LINE__);
    SDDMM3(N_, N_, &one, A, B, &one, Cc, CUDA_R_32F, UNSUP); /* C must be CSR */
    SDDMM3(N_, N_, &one, A, B, &one, Co, CUDA_R_32F, UNSUP);
    SDDMM3(N_, N_, &one, A, B8, &one, C, CUDA_R_32F, BAD);   /* inner 9 vs 8 */
    SDDMM3(N_, N_, &one, A, B, &one, C7, CUDA_R_32F, BAD);   /* C 7x5 */
    SDDMM3(T_, N_, &one, A, B, &one, C, CUDA_R_32F, BAD);
    SDDMM3(T_, N_, &one, At, B, &one, C, CUDA_R_32F, OK_);
    SDDMM3(H_, N_, &one, At, B, &one, C, CUDA_R_32F, BAD);  /* conjugate of real data */
    SDDMM3(N_, N_, &one, A, B, &one, C, CUDA_R_64F, UNSUP);
    SDDMM3(N_, N_, &one, A, B, &half_, C, CUDA_R_32F, OK_);
    EXPECT_OK(tcsparseSpMatSetValues(C, NULL));
    EXPECT_FAIL(tcsparseSDDMM(H, N_, N_, &one, A, B, &one, C, CUDA_R_32F,
                              TCSPARSE_SDDMM_ALG_DEFAULT, NULL), BAD);
    tcsparseDestroyDnMat(A);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(At);
    tcsparseDestroyDnMat(B8);
    tcsparseDestroySpMat(C);
    tcsparseDestroySpMat(Cc);
    tcsparseDestroySpMat(Co);
    tcsparseDestroySpMat(C7);
}

Test(sddmm, value_types)
{
    struct {
        cudaDataType ab, c, ct;
        tcsparseStatus_t want;
    } cases[] = {
        {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, OK_},  {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, OK_},
        {CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, OK_},  {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, OK_},
        {CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, OK_},  {CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F, UNSUP},
        {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, UNSUP}, {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, UNSUP},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcsparseDnMatDescr_t A = dn(6, 9, cases[k].ab, ROW), B = dn(9, 5, cases[k].ab, ROW);
        tcsparseSpMatDescr_t C = sp(TCSPARSE_FORMAT_CSR, 6, 5, cases[k].c);
        double scal[2] = {1, 0};
        SDDMM3(N_, N_, scal, A, B, scal, C, cases[k].ct, cases[k].want);
        tcsparseDestroyDnMat(A);
        tcsparseDestroyDnMat(B);
        tcsparseDestroySpMat(C);
    }
}
