/* The public API without a GPU: enum values equal to cuSPARSE's (checked at compile time),
 * error names and messages, and the handle: defaults, get/set round trips and the checks of
 * every handle function.  The descriptors are test_api_descr.c's, SpMM and SDDMM argument
 * checks test_api_ops.c's. */
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
#include "api_test.h"

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
    for (int r = TCSPARSE_ROUTE_AUTO; r <= TCSPARSE_ROUTE_CUDA_CORE; r++) {
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
    EXPECT_FAIL(tcsparseSetRoute(h, (tcsparseRoute_t)6), BAD);
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
