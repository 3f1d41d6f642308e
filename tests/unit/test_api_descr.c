/* The sparse and dense matrix descriptors without a GPU: argument checks of every function
 * (status and message), get/set round trips, and the cuSPARSE mirror descriptors, which
 * cuSPARSE lets us create on the host. */
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
#include "plan.h"
#include "testutil.h"
#include "api_test.h"

static tcsparseSpMatDescr_t make_csr(void)
{
    tcsparseSpMatDescr_t d;
    EXPECT_OK(tcsparseCreateCsr(&d, 3, 4, 4, off32, ind32, vals, TCSPARSE_INDEX_32I,
                                TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    return d;
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

/* The transposed view (tc_plan_transposed, plan.h), whose plan serves SpMM with opA =
 * TRANSPOSE: the transpose's format, sizes and arrays over the caller's own, its values and
 * reordering setting following the descriptor, one view kept, and the setters and destroy
 * taking it along.  (Its plans and products need a GPU: tests/gpu/test_gpu_spmm.c.) */
Test(spmat, transposed_view)
{
    int32_t off[4] = {0, 1, 2, 3}, idx[3] = {4, 0, 2}, rows[3] = {0, 1, 2};
    float val[3] = {1, 2, 3}, val2[3] = {4, 5, 6};
    int64_t off64[6] = {1, 2, 2, 3, 4, 4}, idx64[3] = {1, 3, 2}; /* one-based */
    tcsparseSpMatDescr_t csr, csc, coo;
    cr_assert_eq(tcsparseCreateCsr(&csr, 3, 5, 3, off, idx, val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateCsc(&csc, 3, 5, 3, off64, idx64, val, TCSPARSE_INDEX_64I,
                                   TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ONE, CUDA_R_16F), 0);
    cr_assert_eq(tcsparseCreateCoo(&coo, 3, 5, 3, rows, idx, val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    /* CSR 3 x 5 read as the CSC of its 5 x 3 transpose, over the same arrays */
    pthread_mutex_lock(&csr->mu);
    struct tcsparseSpMatDescr *t = tc_plan_transposed(csr);
    cr_assert_not_null(t);
    cr_expect_eq(t->format, TCSPARSE_FORMAT_CSC);
    cr_expect(t->rows == 5 && t->cols == 3 && t->nnz == 3);
    cr_expect(t->offsets == (void *)off && t->indices == (void *)idx && t->values == (void *)val);
    cr_expect(t->offsets_type == TCSPARSE_INDEX_32I && t->indices_type == TCSPARSE_INDEX_32I);
    cr_expect_eq(t->value_type, CUDA_R_32F);
    cr_expect_eq(t->parent, csr);
    cr_expect_eq(t->plan, NULL);
    cr_expect_eq(tc_plan_transposed(csr), t, "one view, kept");
    pthread_mutex_unlock(&csr->mu);
    /* the values and the reordering setting follow the descriptor */
    cr_assert_eq(tcsparseSpMatSetValues(csr, val2), 0);
    cr_assert_eq(tcsparseSpMatSetReorder(csr, TCSPARSE_REORDER_OFF), 0);
    pthread_mutex_lock(&csr->mu);
    cr_expect_eq(tc_plan_transposed(csr), t);
    cr_expect_eq(t->values, (void *)val2);
    cr_expect_eq(t->reorder, TCSPARSE_REORDER_OFF);
    pthread_mutex_unlock(&csr->mu);
    /* new arrays: the view reads them at its next use */
    cr_assert_eq(tcsparseCsrSetPointers(csr, off, rows, val), 0);
    pthread_mutex_lock(&csr->mu);
    cr_expect_eq(tc_plan_transposed(csr)->indices, (void *)rows);
    cr_expect_eq(t->struct_gen, csr->struct_gen);
    pthread_mutex_unlock(&csr->mu);
    /* CSC 3 x 5 (offsets over 5 columns) is the CSR of the transpose; base and types kept */
    pthread_mutex_lock(&csc->mu);
    t = tc_plan_transposed(csc);
    cr_assert_not_null(t);
    cr_expect_eq(t->format, TCSPARSE_FORMAT_CSR);
    cr_expect(t->rows == 5 && t->cols == 3);
    cr_expect(t->offsets == (void *)off64 && t->indices == (void *)idx64);
    cr_expect(t->offsets_type == TCSPARSE_INDEX_64I && t->base == TCSPARSE_INDEX_BASE_ONE);
    cr_expect_eq(t->value_type, CUDA_R_16F);
    pthread_mutex_unlock(&csc->mu);
    /* COO: the row and column index arrays trade places */
    pthread_mutex_lock(&coo->mu);
    t = tc_plan_transposed(coo);
    cr_assert_not_null(t);
    cr_expect_eq(t->format, TCSPARSE_FORMAT_COO);
    cr_expect(t->rows == 5 && t->cols == 3);
    cr_expect(t->offsets == (void *)idx && t->indices == (void *)rows);
    pthread_mutex_unlock(&coo->mu);
    /* destroy frees the views with their descriptors (ASan: no leak) */
    cr_expect_eq(tcsparseDestroySpMat(csr), 0);
    cr_expect_eq(tcsparseDestroySpMat(csc), 0);
    cr_expect_eq(tcsparseDestroySpMat(coo), 0);
}

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
