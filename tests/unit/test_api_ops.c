/* SpMM and SDDMM argument checks without a GPU: every check must finish before any CUDA
 * call, so that a call that passes them all stops at the first CUDA step. */
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
