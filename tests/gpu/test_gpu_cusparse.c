/* SpMM and SDDMM through the public API on the cuSPARSE path (route forced), against the CPU
 * reference in double: CSR/CSC/COO, 32/64-bit indices, base 0/1, row- and column-major
 * dense operands with padded leading dimensions, transposes, odd sizes, empty rows and
 * empty matrices, host and device scalars, a non-default stream, FP32 and FP16 inputs.
 * Outputs are poisoned with NaN where they must not be read or written: the padding of C
 * (and of the inputs) must come back untouched, and with beta = 0 the whole of C is NaN.
 * One file over 600 lines: its SpMM and SDDMM cases are tables run through the same
 * host-data, device-copy and reference-check helpers, which take up the top of the file. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "halfconv.h"
#include "testutil.h"

#define CUDA_OK(call)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        cr_assert_eq(e_, cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));               \
    } while (0)
#define TC_OK(call)                                                                            \
    do {                                                                                       \
        tcsparseStatus_t s_ = (call);                                                          \
        cr_assert_eq(s_, TCSPARSE_STATUS_SUCCESS, "%s: %s (%s)", #call,                        \
                     tcsparseGetErrorName(s_), tcsparseGetLastErrorMessage());                 \
    } while (0)

/* ---- host data in the library's types ------------------------------------------------ */

static size_t esize(cudaDataType t) { return t == CUDA_R_16F ? 2 : 4; }

/* Stores v as type t at p[i] and returns the value actually stored. */
static double put(void *p, size_t i, cudaDataType t, double v)
{
    if (t == CUDA_R_16F) {
        uint16_t h = tc_f2h((float)v);
        ((uint16_t *)p)[i] = h;
        return isnan(v) ? v : tc_h2f(h);
    }
    ((float *)p)[i] = (float)v;
    return (float)v;
}

static double get(const void *p, size_t i, cudaDataType t)
{
    return t == CUDA_R_16F ? tc_h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void put_index(void *p, size_t i, int wide, int64_t v)
{
    if (wide)
        ((int64_t *)p)[i] = v;
    else
        ((int32_t *)p)[i] = (int32_t)v;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A rows x cols CSR with sorted distinct columns, about a fifth of the rows empty (the first
 * always), values uniform in [-1, 1) rounded to t. */
static void random_csr(int64_t rows, int64_t cols, int empty, cudaDataType t, uint64_t seed,
                       tc_csr *m)
{
    uint64_t rng = seed;
    int64_t per_row_max = cols < 12 ? cols : 12;
    m->rows = rows;
    m->cols = cols;
    m->row_off = calloc((size_t)rows + 1, sizeof *m->row_off);
    m->col = malloc(sizeof *m->col * (size_t)(rows * per_row_max + 1));
    m->val = malloc(sizeof *m->val * (size_t)(rows * per_row_max + 1));
    int32_t *perm = malloc(sizeof *perm * (size_t)(cols + 1));
    uint16_t typed[1];
    int64_t nnz = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t cnt = 0;
        if (!empty && r > 0 && tc_test_rand_u64(&rng) % 5 != 0)
            cnt = 1 + (int64_t)(tc_test_rand_u64(&rng) % (uint64_t)per_row_max);
        for (int64_t c = 0; c < cols; c++)
            perm[c] = (int32_t)c;
        for (int64_t k = 0; k < cnt; k++) { /* partial Fisher-Yates: distinct columns */
            int64_t j = k + (int64_t)(tc_test_rand_u64(&rng) % (uint64_t)(cols - k));
            int32_t tmp = perm[k];
            perm[k] = perm[j];
            perm[j] = tmp;
        }
        qsort(perm, (size_t)cnt, sizeof *perm, cmp_i32);
        for (int64_t k = 0; k < cnt; k++) {
            m->col[nnz] = perm[k];
            m->val[nnz++] = t == CUDA_R_16F ? put(typed, 0, t, tc_test_rand_uniform(&rng))
                                            : (float)tc_test_rand_uniform(&rng);
        }
        m->row_off[r + 1] = nnz;
    }
    m->nnz = nnz;
    free(perm);
}

static void *to_device(const void *h, size_t bytes)
{
    void *d = NULL;
    if (bytes == 0)
        return NULL;
    CUDA_OK(cudaMalloc(&d, bytes));
    CUDA_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* The sparse matrix m on the device in format f: (offsets or row indices, indices, values). */
typedef struct {
    void *off, *idx, *val;
    size_t val_bytes;
} dev_sparse;

static void sparse_to_device(const tc_csr *m, tcsparseFormat_t f, int wide, int base,
                             cudaDataType t, size_t extra_vals, dev_sparse *d)
{
    size_t is = wide ? 8 : 4, nnz = (size_t)m->nnz;
    size_t noff = f == TCSPARSE_FORMAT_CSR ? (size_t)m->rows + 1
                  : f == TCSPARSE_FORMAT_CSC ? (size_t)m->cols + 1 : nnz;
    void *off = malloc(is * noff + 1), *idx = malloc(is * nnz + 1);
    void *val = malloc(esize(t) * (nnz + extra_vals) + 1);
    if (f == TCSPARSE_FORMAT_CSC) { /* transpose by counting */
        int64_t *cnt = calloc((size_t)m->cols + 1, sizeof *cnt);
        for (size_t p = 0; p < nnz; p++)
            cnt[m->col[p] + 1]++;
        for (int64_t c = 0; c < m->cols; c++)
            cnt[c + 1] += cnt[c];
        for (int64_t c = 0; c <= m->cols; c++)
            put_index(off, (size_t)c, wide, cnt[c] + base);
        for (int64_t r = 0; r < m->rows; r++) {
            for (int64_t p = m->row_off[r]; p < m->row_off[r + 1]; p++) {
                int64_t q = cnt[m->col[p]]++;
                put_index(idx, (size_t)q, wide, r + base);
                put(val, (size_t)q, t, m->val[p]);
            }
        }
        free(cnt);
    } else {
        for (int64_t r = 0; r < m->rows; r++) {
            if (f == TCSPARSE_FORMAT_CSR)
                put_index(off, (size_t)r, wide, m->row_off[r] + base);
            for (int64_t p = m->row_off[r]; p < m->row_off[r + 1]; p++) {
                if (f == TCSPARSE_FORMAT_COO)
                    put_index(off, (size_t)p, wide, r + base);
                put_index(idx, (size_t)p, wide, m->col[p] + base);
                put(val, (size_t)p, t, m->val[p]);
            }
        }
        if (f == TCSPARSE_FORMAT_CSR)
            put_index(off, (size_t)m->rows, wide, m->row_off[m->rows] + base);
    }
    for (size_t p = nnz; p < nnz + extra_vals; p++)
        put(val, p, t, NAN);
    d->off = to_device(off, is * noff);
    d->idx = to_device(idx, is * nnz);
    d->val_bytes = esize(t) * (nnz + extra_vals);
    d->val = to_device(val, d->val_bytes);
    free(off);
    free(idx);
    free(val);
}

static void sparse_free(dev_sparse *d)
{
    cudaFree(d->off);
    cudaFree(d->idx);
    cudaFree(d->val);
}

/* A rows x cols dense matrix with ld = (rows or cols) + pad: random values (or NaN when
 * nan_inside), NaN in the padding.  ref gets the double view, typed the host copy. */
static void random_dense(int64_t rows, int64_t cols, tcsparseOrder_t o, int pad, cudaDataType t,
                         int nan_inside, uint64_t seed, tc_ref_dense *ref, void **typed)
{
    int64_t ld = (o == TCSPARSE_ORDER_COL ? rows : cols) + pad;
    int64_t other = o == TCSPARSE_ORDER_COL ? cols : rows;
    size_t n = (size_t)(ld * other);
    uint64_t rng = seed;
    ref->rows = rows;
    ref->cols = cols;
    ref->ld = ld;
    ref->order = o;
    ref->val = malloc(sizeof(double) * n + 1);
    *typed = malloc(esize(t) * n + 1);
    for (size_t k = 0; k < n; k++)
        ref->val[k] = put(*typed, k, t, NAN);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            size_t k = tc_ref_at(ref, i, j);
            ref->val[k] = put(*typed, k, t, nan_inside ? NAN : tc_test_rand_uniform(&rng));
        }
}

/* Scalars as the compute type (FP32 in every case here), on the host or the device. */
typedef struct {
    float host[2];
    float *dev;
} scalars;

static void scalars_make(scalars *s, double alpha, double beta)
{
    s->host[0] = (float)alpha;
    s->host[1] = (float)beta;
    s->dev = to_device(s->host, sizeof s->host);
}

static tcsparseHandle_t make_handle(void)
{
    tcsparseHandle_t h;
    TC_OK(tcsparseCreate(&h));
    TC_OK(tcsparseSetRoute(h, TCSPARSE_ROUTE_CUSPARSE));
    return h;
}

/* Switches the handle to the case's stream and pointer mode (after a first run has created
 * the cuSPARSE handle, so that the change must reach it). */
static cudaStream_t apply_settings(tcsparseHandle_t h, int own_stream, int device_scalars)
{
    cudaStream_t s = NULL, got = (cudaStream_t)(uintptr_t)1;
    if (own_stream) {
        CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        TC_OK(tcsparseSetStream(h, s));
        TC_OK(tcsparseGetStream(h, &got));
        cr_assert_eq(got, s);
    }
    if (device_scalars)
        TC_OK(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE));
    return s;
}

static double bound(cudaDataType ab, cudaDataType c)
{
    return ab == CUDA_R_32F && c == CUDA_R_32F ? 1e-5 : 2e-2;
}

static void expect_cusparse_path(tcsparseHandle_t h)
{
    tcsparseRouteInfo_t info;
    TC_OK(tcsparseGetLastRoute(h, &info));
    cr_assert_eq(info.path, TCSPARSE_PATH_CUSPARSE, "path %d (%s)", (int)info.path, info.reason);
}

/* ---- SpMM ----------------------------------------------------------------------------- */

typedef struct {
    tcsparseFormat_t fmt;
    int idx64, base;
    int m0, k0, n; /* A is stored m0 x k0; C is rows(op(A)) x n */
    tcsparseOperation_t opA, opB;
    tcsparseOrder_t ordB, ordC;
    int padB, padC;
    cudaDataType ab, c;
    double alpha, beta;
    int device_scalars, own_stream;
    tcsparseSpMMAlg_t alg;
    int preprocess;
    int empty;
    int revalue; /* second run after 1: SpMatSetValues, 2: Set*Pointers (values negated) */
} spmm_case;

#define CSR TCSPARSE_FORMAT_CSR
#define CSC TCSPARSE_FORMAT_CSC
#define COO TCSPARSE_FORMAT_COO
#define N_ TCSPARSE_OPERATION_NON_TRANSPOSE
#define T_ TCSPARSE_OPERATION_TRANSPOSE
#define ROW TCSPARSE_ORDER_ROW
#define COL TCSPARSE_ORDER_COL
#define F32 CUDA_R_32F
#define F16 CUDA_R_16F
#define DEF TCSPARSE_SPMM_ALG_DEFAULT

static spmm_case spmm_cases[] = {
    /* fmt idx64 base m0 k0 n opA opB ordB ordC padB padC ab c alpha beta dev strm alg pre
     * empty revalue */
    {CSR, 0, 0, 37, 53, 7, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, -0.75, 0, 0, DEF, 0, 0, 0},
    {CSR, 1, 1, 37, 53, 33, N_, N_, COL, COL, 3, 5, F32, F32, -0.5, 0.25, 0, 0,
     TCSPARSE_SPMM_CSR_ALG1, 0, 0, 0},
    {CSR, 0, 1, 37, 53, 33, N_, N_, ROW, COL, 1, 0, F32, F32, 0.75, 1.0, 0, 0, DEF, 1, 0, 0},
    {CSR, 0, 0, 61, 45, 20, N_, N_, ROW, ROW, 0, 2, F32, F32, 1.0, -1.0, 0, 0,
     TCSPARSE_SPMM_CSR_ALG3, 1, 0, 1},
    {CSR, 1, 0, 37, 53, 7, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.0, 0.5, 0, 0,
     TCSPARSE_SPMM_CSR_ALG2, 1, 0, 2},
    {CSR, 1, 0, 37, 53, 7, T_, N_, COL, ROW, 2, 1, F32, F32, 2.0, 0.5, 0, 0, DEF, 0, 0, 0},
    {CSR, 0, 1, 37, 53, 33, N_, T_, ROW, ROW, 0, 0, F32, F32, -1.25, 0.5, 0, 0, DEF, 0, 0, 0},
    {CSR, 0, 0, 37, 53, 33, T_, T_, COL, COL, 0, 3, F32, F32, 0.5, 2.0, 0, 0, DEF, 0, 0, 0},
    {CSC, 0, 0, 37, 53, 7, N_, N_, COL, COL, 0, 0, F32, F32, 1.5, -0.75, 0, 0, DEF, 0, 0, 0},
    {CSC, 1, 1, 37, 53, 33, T_, N_, ROW, COL, 1, 1, F32, F32, -0.5, 1.5, 0, 0, DEF, 0, 0, 0},
    {CSC, 0, 1, 29, 31, 9, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.0, 0.0, 0, 0, DEF, 0, 0, 2},
    {COO, 0, 1, 37, 53, 33, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, -0.75, 0, 0,
     TCSPARSE_SPMM_COO_ALG4, 0, 0, 0},
    {COO, 1, 0, 37, 53, 7, N_, T_, COL, COL, 2, 2, F32, F32, 0.25, 0.5, 0, 0, DEF, 0, 0, 1},
    {CSR, 0, 0, 37, 53, 7, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, -0.75, 1, 1, DEF, 1, 0, 0},
    {COO, 1, 1, 37, 53, 33, N_, N_, COL, ROW, 0, 0, F32, F32, -1.0, 0.5, 1, 1, DEF, 0, 0, 1},
    {CSR, 0, 0, 37, 53, 33, N_, N_, ROW, ROW, 0, 4, F32, F32, 1.5, 0.0, 0, 0, DEF, 0, 0, 0},
    {COO, 0, 0, 37, 53, 7, N_, N_, COL, COL, 0, 0, F32, F32, 1.5, 0.0, 0, 0, DEF, 0, 0, 0},
    {CSR, 0, 0, 37, 53, 7, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, 0.5, 0, 0, DEF, 0, 1, 0},
    {COO, 1, 1, 37, 53, 7, N_, N_, COL, COL, 0, 0, F32, F32, 1.5, 0.5, 0, 0, DEF, 0, 1, 0},
    {CSR, 0, 0, 1, 1, 1, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, 0.5, 0, 0, DEF, 0, 0, 0},
    {CSR, 1, 1, 40, 17, 1, N_, N_, COL, COL, 0, 0, F32, F32, 1.5, 0.5, 0, 0, DEF, 0, 0, 0},
    {CSR, 0, 0, 37, 53, 33, N_, N_, ROW, ROW, 0, 0, F16, F32, 1.5, -0.75, 0, 0, DEF, 0, 0, 0},
    {CSR, 1, 1, 37, 53, 7, N_, N_, COL, COL, 1, 3, F16, F16, 0.5, 0.25, 0, 0, DEF, 0, 0, 0},
    {COO, 0, 1, 37, 53, 33, N_, N_, ROW, ROW, 0, 0, F16, F32, 1.0, 1.0, 1, 1, DEF, 0, 0, 0},
    {CSC, 0, 0, 37, 53, 7, N_, N_, ROW, COL, 0, 0, F16, F16, -0.5, 0.0, 0, 0, DEF, 0, 0, 0},
};

/* Criterion hands a test a copy of its parameter: the case is found again by content, for
 * its seed and for messages. */
static int spmm_index(const spmm_case *k)
{
    for (size_t i = 0; i < sizeof spmm_cases / sizeof spmm_cases[0]; i++)
        if (memcmp(&spmm_cases[i], k, sizeof *k) == 0)
            return (int)i;
    return -1;
}

ParameterizedTestParameters(gpu_cusparse, spmm)
{
    return cr_make_param_array(spmm_case, spmm_cases, sizeof spmm_cases / sizeof spmm_cases[0]);
}

static tcsparseSpMatDescr_t spmm_descr(const spmm_case *k, const tc_csr *A, const dev_sparse *d)
{
    tcsparseSpMatDescr_t s;
    tcsparseIndexType_t it = k->idx64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    tcsparseIndexBase_t b = (tcsparseIndexBase_t)k->base;
    if (k->fmt == CSR)
        TC_OK(tcsparseCreateCsr(&s, A->rows, A->cols, A->nnz, d->off, d->idx, d->val, it, it, b,
                                k->ab));
    else if (k->fmt == CSC)
        TC_OK(tcsparseCreateCsc(&s, A->rows, A->cols, A->nnz, d->off, d->idx, d->val, it, it, b,
                                k->ab));
    else
        TC_OK(tcsparseCreateCoo(&s, A->rows, A->cols, A->nnz, d->off, d->idx, d->val, it, b,
                                k->ab));
    return s;
}

static void spmm_set_pointers(tcsparseSpMatDescr_t s, tcsparseFormat_t f, const dev_sparse *d)
{
    if (f == CSR)
        TC_OK(tcsparseCsrSetPointers(s, d->off, d->idx, d->val));
    else if (f == CSC)
        TC_OK(tcsparseCscSetPointers(s, d->off, d->idx, d->val));
    else
        TC_OK(tcsparseCooSetPointers(s, d->off, d->idx, d->val));
}

/* Compares C (typed, on the host) with the reference and checks its padding kept its NaN. */
static void check_dense(const tc_ref_dense *ref, const void *out, cudaDataType t, double tol,
                        const char *what)
{
    int64_t other = ref->order == COL ? ref->cols : ref->rows;
    size_t n = (size_t)(ref->ld * other), m = (size_t)(ref->rows * ref->cols);
    double *r = malloc(sizeof *r * (m + 1)), *o = malloc(sizeof *o * (m + 1));
    size_t q = 0;
    for (int64_t i = 0; i < ref->rows; i++)
        for (int64_t j = 0; j < ref->cols; j++, q++) {
            r[q] = ref->val[tc_ref_at(ref, i, j)];
            o[q] = get(out, tc_ref_at(ref, i, j), t);
        }
    double err = tc_rel_err(r, o, m);
    cr_assert_leq(err, tol, "%s: relative error %.3g > %.1g", what, err, tol);
    for (size_t k = 0; k < n; k++) {
        int64_t lead = (int64_t)(k % (size_t)ref->ld);
        if (lead >= (ref->order == COL ? ref->rows : ref->cols))
            cr_assert(isnan(get(out, k, t)), "%s: padding element %zu was written", what, k);
    }
    free(r);
    free(o);
}

static void negate_values(tc_csr *A, cudaDataType t)
{
    for (int64_t p = 0; p < A->nnz; p++)
        A->val[p] = -A->val[p]; /* exact in every type */
    (void)t;
}

/* Whether the cuSPARSE route may run the case as CSR_ALG3 (src/route/route.c, tc_alg3_applies). */
static int alg3_applies(const spmm_case *k)
{
    return k->fmt == CSR && k->opA == N_ && k->opB == N_ && k->alg == DEF && k->ab == F32 &&
           k->c == F32 && k->ordB == ROW && k->ordC == ROW;
}

/* With TCSPARSE_X_CUSPARSE_ALG3=1: the call ran as CSR_ALG3 where that applies (must, for
 * 32-bit indices and base 0; may fall back to ALG_DEFAULT, with the reason, elsewhere), and
 * as asked everywhere else. */
static void expect_alg3(tcsparseHandle_t h, const spmm_case *k, const char *what)
{
    tcsparseRouteInfo_t info;
    TC_OK(tcsparseGetLastRoute(h, &info));
    cr_assert_eq(info.path, TCSPARSE_PATH_CUSPARSE, "%s: path %d", what, (int)info.path);
    const int ran3 = strcmp(info.kernel, "cusparseSpMM(CSR_ALG3)") == 0;
    if (!alg3_applies(k))
        cr_assert(!ran3, "%s: CSR_ALG3 where it does not apply", what);
    else if (!k->idx64 && k->base == 0)
        cr_assert(ran3, "%s: ran %s (%s)", what, info.kernel, info.reason);
    else if (!ran3)
        cr_log_info("%s: CSR_ALG3 fell back: %s", what, info.reason);
}

static void spmm_run(const spmm_case *k, int id, int alg3);

ParameterizedTest(spmm_case *k, gpu_cusparse, spmm)
{
    spmm_run(k, spmm_index(k), 0);
}

/* The same cases with the cuSPARSE route's CSR_ALG3 forced where it applies (the selector
 * chooses it on small FP32 CSR matrices), plus three more that change values, structure
 * arrays, stream and pointer mode between calls on the same descriptor. */
static spmm_case spmm_alg3_cases[sizeof spmm_cases / sizeof spmm_cases[0] + 3];

ParameterizedTestParameters(gpu_cusparse, spmm_alg3)
{
    const size_t n = sizeof spmm_cases / sizeof spmm_cases[0];
    memcpy(spmm_alg3_cases, spmm_cases, sizeof spmm_cases);
    const spmm_case extra[3] = {
        {CSR, 0, 0, 61, 45, 20, N_, N_, ROW, ROW, 0, 2, F32, F32, 1.0, -1.0, 0, 0, DEF, 1, 0, 1},
        {CSR, 0, 0, 37, 53, 40, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.0, 0.5, 0, 0, DEF, 0, 0, 2},
        {CSR, 0, 0, 37, 53, 33, N_, N_, ROW, ROW, 3, 1, F32, F32, -1.5, 0.5, 1, 1, DEF, 0, 0, 2},
    };
    memcpy(spmm_alg3_cases + n, extra, sizeof extra);
    return cr_make_param_array(spmm_case, spmm_alg3_cases, n + 3);
}

ParameterizedTest(spmm_case *k, gpu_cusparse, spmm_alg3)
{
    int id = -1;
    for (size_t i = 0; i < sizeof spmm_alg3_cases / sizeof spmm_alg3_cases[0]; i++)
        if (memcmp(&spmm_alg3_cases[i], k, sizeof *k) == 0)
            id = (int)i;
    setenv("TCSPARSE_X_CUSPARSE_ALG3", "1", 1);
    tc_config_reload();
    spmm_run(k, id, 1);
}

static void spmm_run(const spmm_case *k, int id, int alg3)
{
    TC_REQUIRE_GPU();
    uint64_t seed = 0x5eed0000u + (uint64_t)id;
    int64_t M = k->opA == N_ ? k->m0 : k->k0, K = k->opA == N_ ? k->k0 : k->m0, N = k->n;
    tc_csr A;
    random_csr(k->m0, k->k0, k->empty, k->ab, seed, &A);
    dev_sparse dA;
    sparse_to_device(&A, k->fmt, k->idx64, k->base, k->ab, 0, &dA);
    tc_ref_dense B, C0, R;
    void *hB, *hC, *hOut;
    random_dense(k->opB == N_ ? K : N, k->opB == N_ ? N : K, k->ordB, k->padB, k->ab, 0,
                 seed + 1, &B, &hB);
    random_dense(M, N, k->ordC, k->padC, k->c, k->beta == 0.0, seed + 2, &C0, &hC);
    size_t nB = (size_t)(B.ld * (k->ordB == COL ? B.cols : B.rows));
    size_t nC = (size_t)(C0.ld * (k->ordC == COL ? C0.cols : C0.rows));
    void *dB = to_device(hB, esize(k->ab) * nB), *dC = to_device(hC, esize(k->c) * nC);
    hOut = malloc(esize(k->c) * nC + 1);
    R = C0;
    R.val = malloc(sizeof(double) * nC + 1);

    tcsparseHandle_t h = make_handle();
    tcsparseSpMatDescr_t sA = spmm_descr(k, &A, &dA);
    tcsparseDnMatDescr_t sB, sC;
    TC_OK(tcsparseCreateDnMat(&sB, B.rows, B.cols, B.ld, dB, k->ab, k->ordB));
    TC_OK(tcsparseCreateDnMat(&sC, C0.rows, C0.cols, C0.ld, dC, k->c, k->ordC));
    scalars sc;
    scalars_make(&sc, k->alpha, k->beta);
    cudaStream_t stream = NULL;
    dev_sparse dA2 = {0};
    int passes = k->device_scalars || k->own_stream || k->revalue ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        if (pass == 1) {
            stream = apply_settings(h, k->own_stream, k->device_scalars);
            CUDA_OK(cudaMemcpy(dC, hC, esize(k->c) * nC, cudaMemcpyHostToDevice));
            if (k->revalue) {
                negate_values(&A, k->ab);
                sparse_to_device(&A, k->fmt, k->idx64, k->base, k->ab, 0, &dA2);
                if (k->revalue == 1)
                    TC_OK(tcsparseSpMatSetValues(sA, dA2.val));
                else
                    spmm_set_pointers(sA, k->fmt, &dA2);
            }
        }
        int dev = pass == 1 && k->device_scalars;
        const void *al = dev ? (void *)&sc.dev[0] : (void *)&sc.host[0];
        const void *be = dev ? (void *)&sc.dev[1] : (void *)&sc.host[1];
        memcpy(R.val, C0.val, sizeof(double) * nC);
        tc_ref_spmm(k->opA, k->opB, (float)k->alpha, &A, &B, (float)k->beta, &R);

        size_t bytes = 0;
        void *buf = NULL;
        TC_OK(tcsparseSpMM_bufferSize(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F, k->alg,
                                      &bytes));
        if (bytes > 0)
            CUDA_OK(cudaMalloc(&buf, bytes));
        if (k->preprocess)
            TC_OK(tcsparseSpMM_preprocess(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F,
                                          k->alg, buf));
        TC_OK(tcsparseSpMM(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F, k->alg, buf));
        expect_cusparse_path(h);
        char what[64];
        snprintf(what, sizeof what, "spmm%s case %d pass %d", alg3 ? "_alg3" : "", id, pass);
        if (alg3)
            expect_alg3(h, k, what);
        CUDA_OK(cudaMemcpyAsync(hOut, dC, esize(k->c) * nC, cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        check_dense(&R, hOut, k->c, bound(k->ab, k->c), what);
        cudaFree(buf);
    }
    TC_OK(tcsparseDestroySpMat(sA));
    TC_OK(tcsparseDestroyDnMat(sB));
    TC_OK(tcsparseDestroyDnMat(sC));
    TC_OK(tcsparseDestroy(h));
    if (stream != NULL)
        cudaStreamDestroy(stream);
    sparse_free(&dA);
    sparse_free(&dA2);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(sc.dev);
    free(hB);
    free(hC);
    free(hOut);
    free(B.val);
    free(C0.val);
    free(R.val);
    tc_csr_free(&A);
}

/* ---- SDDMM ---------------------------------------------------------------------------- */

typedef struct {
    int idx64, base;
    int m, n, kdim;
    tcsparseOperation_t opA, opB;
    tcsparseOrder_t ordA, ordB;
    int padA, padB;
    cudaDataType ab, c;
    double alpha, beta;
    int device_scalars, own_stream, preprocess, empty;
} sddmm_case;

static sddmm_case sddmm_cases[] = {
    /* idx64 base m n k opA opB ordA ordB padA padB ab c alpha beta dev strm pre empty */
    {0, 0, 37, 53, 19, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.25, -0.5, 0, 0, 0, 0},
    {1, 1, 37, 53, 19, N_, N_, COL, COL, 3, 2, F32, F32, -0.75, 2.0, 0, 0, 1, 0},
    {0, 1, 37, 53, 33, T_, T_, ROW, COL, 1, 0, F32, F32, 0.5, 1.0, 0, 0, 0, 0},
    {1, 0, 37, 53, 7, T_, N_, COL, ROW, 0, 1, F32, F32, 2.0, -1.0, 0, 0, 0, 0},
    {0, 0, 37, 53, 19, N_, T_, ROW, ROW, 0, 0, F32, F32, 1.5, 0.0, 0, 0, 0, 0},
    {0, 1, 37, 53, 19, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, 0.25, 1, 1, 1, 0},
    {1, 1, 37, 53, 19, N_, N_, ROW, ROW, 0, 0, F32, F32, 1.5, 0.25, 0, 0, 0, 1},
    {0, 0, 37, 53, 33, N_, N_, ROW, ROW, 0, 0, F16, F32, 1.25, -0.5, 0, 0, 0, 0},
    {1, 1, 37, 53, 19, N_, N_, COL, ROW, 2, 0, F16, F16, 0.5, 0.5, 0, 0, 1, 0},
};

static int sddmm_index(const sddmm_case *k)
{
    for (size_t i = 0; i < sizeof sddmm_cases / sizeof sddmm_cases[0]; i++)
        if (memcmp(&sddmm_cases[i], k, sizeof *k) == 0)
            return (int)i;
    return -1;
}

ParameterizedTestParameters(gpu_cusparse, sddmm)
{
    return cr_make_param_array(sddmm_case, sddmm_cases,
                               sizeof sddmm_cases / sizeof sddmm_cases[0]);
}

#define TAIL 8 /* NaN values after C's nnz that must stay untouched */

ParameterizedTest(sddmm_case *k, gpu_cusparse, sddmm)
{
    TC_REQUIRE_GPU();
    int id = sddmm_index(k);
    uint64_t seed = 0x5dd30000u + (uint64_t)id;
    tc_csr C;
    random_csr(k->m, k->n, k->empty, k->c, seed, &C);
    if (k->beta == 0.0)
        for (int64_t p = 0; p < C.nnz; p++)
            C.val[p] = NAN; /* must not be read */
    dev_sparse dC;
    sparse_to_device(&C, CSR, k->idx64, k->base, k->c, TAIL, &dC);
    tc_ref_dense A, B;
    void *hA, *hB;
    random_dense(k->opA == N_ ? k->m : k->kdim, k->opA == N_ ? k->kdim : k->m, k->ordA, k->padA,
                 k->ab, 0, seed + 1, &A, &hA);
    random_dense(k->opB == N_ ? k->kdim : k->n, k->opB == N_ ? k->n : k->kdim, k->ordB, k->padB,
                 k->ab, 0, seed + 2, &B, &hB);
    size_t nA = (size_t)(A.ld * (k->ordA == COL ? A.cols : A.rows));
    size_t nB = (size_t)(B.ld * (k->ordB == COL ? B.cols : B.rows));
    void *dA = to_device(hA, esize(k->ab) * nA), *dB = to_device(hB, esize(k->ab) * nB);
    double *ref = malloc(sizeof *ref * (size_t)(C.nnz + 1));
    double *out = malloc(sizeof *out * (size_t)(C.nnz + 1));
    void *hOut = malloc(dC.val_bytes + 1), *hC0 = malloc(dC.val_bytes + 1);
    CUDA_OK(cudaMemcpy(hC0, dC.val, dC.val_bytes, cudaMemcpyDeviceToHost));
    tc_ref_sddmm(k->opA, k->opB, (float)k->alpha, &A, &B, (float)k->beta, &C, ref);

    tcsparseHandle_t h = make_handle();
    tcsparseSpMatDescr_t sC;
    tcsparseDnMatDescr_t sA, sB;
    tcsparseIndexType_t it = k->idx64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    TC_OK(tcsparseCreateCsr(&sC, C.rows, C.cols, C.nnz, dC.off, dC.idx, dC.val, it, it,
                            (tcsparseIndexBase_t)k->base, k->c));
    TC_OK(tcsparseCreateDnMat(&sA, A.rows, A.cols, A.ld, dA, k->ab, k->ordA));
    TC_OK(tcsparseCreateDnMat(&sB, B.rows, B.cols, B.ld, dB, k->ab, k->ordB));
    scalars sc;
    scalars_make(&sc, k->alpha, k->beta);
    cudaStream_t stream = NULL;
    int passes = k->device_scalars || k->own_stream ? 2 : 1;
    for (int pass = 0; pass < passes; pass++) {
        if (pass == 1) {
            stream = apply_settings(h, k->own_stream, k->device_scalars);
            CUDA_OK(cudaMemcpy(dC.val, hC0, dC.val_bytes, cudaMemcpyHostToDevice));
        }
        int dev = pass == 1 && k->device_scalars;
        const void *al = dev ? (void *)&sc.dev[0] : (void *)&sc.host[0];
        const void *be = dev ? (void *)&sc.dev[1] : (void *)&sc.host[1];
        size_t bytes = 0;
        void *buf = NULL;
        const tcsparseSDDMMAlg_t alg = TCSPARSE_SDDMM_ALG_DEFAULT;
        TC_OK(tcsparseSDDMM_bufferSize(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F, alg,
                                       &bytes));
        if (bytes > 0)
            CUDA_OK(cudaMalloc(&buf, bytes));
        if (k->preprocess)
            TC_OK(tcsparseSDDMM_preprocess(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F,
                                           alg, buf));
        TC_OK(tcsparseSDDMM(h, k->opA, k->opB, al, sA, sB, be, sC, CUDA_R_32F, alg, buf));
        expect_cusparse_path(h);
        CUDA_OK(cudaMemcpyAsync(hOut, dC.val, dC.val_bytes, cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        for (int64_t p = 0; p < C.nnz; p++)
            out[p] = get(hOut, (size_t)p, k->c);
        double err = tc_rel_err(ref, out, (size_t)C.nnz);
        cr_assert_leq(err, bound(k->ab, k->c), "sddmm case %d pass %d: relative error %.3g",
                      id, pass, err);
        for (int p = 0; p < TAIL; p++)
            cr_assert(isnan(get(hOut, (size_t)C.nnz + (size_t)p, k->c)),
                      "sddmm case %d: value %d past nnz was written", id, p);
        cudaFree(buf);
    }
    TC_OK(tcsparseDestroySpMat(sC));
    TC_OK(tcsparseDestroyDnMat(sA));
    TC_OK(tcsparseDestroyDnMat(sB));
    TC_OK(tcsparseDestroy(h));
    if (stream != NULL)
        cudaStreamDestroy(stream);
    sparse_free(&dC);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(sc.dev);
    free(hA);
    free(hB);
    free(hOut);
    free(hC0);
    free(ref);
    free(out);
    free(A.val);
    free(B.val);
    tc_csr_free(&C);
}

/* ---- the cuSPARSE route's CSR_ALG3 workspaces ------------------------------------------ */

/* Row r of the result is row rows-1-r of A (same nnz, the row lengths permuted). */
static void reverse_rows(tc_csr *A)
{
    int64_t *off = malloc(sizeof *off * (size_t)(A->rows + 1));
    int32_t *col = malloc(sizeof *col * (size_t)A->nnz + 1);
    double *val = malloc(sizeof *val * (size_t)A->nnz + 1);
    off[0] = 0;
    for (int64_t r = 0; r < A->rows; r++) {
        int64_t src = A->rows - 1 - r, a = A->row_off[src], b = A->row_off[src + 1];
        memcpy(col + off[r], A->col + a, sizeof *col * (size_t)(b - a));
        memcpy(val + off[r], A->val + a, sizeof *val * (size_t)(b - a));
        off[r + 1] = off[r] + (b - a);
    }
    free(A->row_off);
    free(A->col);
    free(A->val);
    A->row_off = off;
    A->col = col;
    A->val = val;
}

/* One FP32 CSR descriptor through a sequence of calls with CSR_ALG3 forced: two widths of B
 * and C in turn (two workspaces of the handle), values rewritten in place, then new structure
 * arrays with another pattern (same nnz) set by tcsparseCsrSetPointers, and a second
 * descriptor created after the first is destroyed.  Every result against the reference:
 * a workspace preprocessed for the old pattern must never be used for the new one. */
Test(gpu_cusparse, alg3_workspaces_follow_the_structure)
{
    TC_REQUIRE_GPU();
    setenv("TCSPARSE_X_CUSPARSE_ALG3", "1", 1);
    tc_config_reload();
    const int64_t M = 300, K = 211;
    const int widths[2] = {32, 96};
    tc_csr A;
    random_csr(M, K, 1, F32, 0xa13a13u, &A);
    dev_sparse dA;
    sparse_to_device(&A, CSR, 0, 0, F32, 0, &dA);
    tcsparseHandle_t h = make_handle();
    tcsparseSpMatDescr_t sA;
    TC_OK(tcsparseCreateCsr(&sA, M, K, A.nnz, dA.off, dA.idx, dA.val, TCSPARSE_INDEX_32I,
                            TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, F32));
    tc_ref_dense B[2], C0[2], R;
    void *hB[2], *hC[2], *dB[2], *dC[2];
    tcsparseDnMatDescr_t sB[2], sC[2];
    for (int w = 0; w < 2; w++) {
        random_dense(K, widths[w], ROW, 0, F32, 0, 0xb0u + (uint64_t)w, &B[w], &hB[w]);
        random_dense(M, widths[w], ROW, 0, F32, 0, 0xc0u + (uint64_t)w, &C0[w], &hC[w]);
        dB[w] = to_device(hB[w], 4 * (size_t)(K * widths[w]));
        dC[w] = to_device(hC[w], 4 * (size_t)(M * widths[w]));
        TC_OK(tcsparseCreateDnMat(&sB[w], K, widths[w], widths[w], dB[w], F32, ROW));
        TC_OK(tcsparseCreateDnMat(&sC[w], M, widths[w], widths[w], dC[w], F32, ROW));
    }
    float *hOut = malloc(4 * (size_t)(M * widths[1]));
    const float alpha = 1.25f, beta = -0.5f;
    dev_sparse dA2 = {0};
    for (int step = 0; step < 10; step++) {
        const int w = step % 2;
        if (step == 4) { /* values rewritten in place: the same arrays */
            negate_values(&A, F32);
            float *v = malloc(4 * (size_t)A.nnz + 1);
            for (int64_t p = 0; p < A.nnz; p++)
                v[p] = (float)A.val[p];
            CUDA_OK(cudaMemcpy(dA.val, v, 4 * (size_t)A.nnz, cudaMemcpyHostToDevice));
            free(v);
        }
        if (step == 6) { /* another pattern, same nnz, other row lengths: rows reversed */
            reverse_rows(&A);
            sparse_to_device(&A, CSR, 0, 0, F32, 0, &dA2);
            TC_OK(tcsparseCsrSetPointers(sA, dA2.off, dA2.idx, dA2.val));
        }
        if (step == 8) { /* rewritten in place, announced with the same arrays */
            reverse_rows(&A);
            dev_sparse t;
            sparse_to_device(&A, CSR, 0, 0, F32, 0, &t);
            CUDA_OK(cudaMemcpy(dA2.off, t.off, 4 * (size_t)(M + 1), cudaMemcpyDeviceToDevice));
            CUDA_OK(cudaMemcpy(dA2.idx, t.idx, 4 * (size_t)A.nnz, cudaMemcpyDeviceToDevice));
            CUDA_OK(cudaMemcpy(dA2.val, t.val, 4 * (size_t)A.nnz, cudaMemcpyDeviceToDevice));
            sparse_free(&t);
            TC_OK(tcsparseCsrSetPointers(sA, dA2.off, dA2.idx, dA2.val));
        }
        CUDA_OK(cudaMemcpy(dC[w], hC[w], 4 * (size_t)(M * widths[w]), cudaMemcpyHostToDevice));
        size_t bytes = 0;
        void *buf = NULL;
        TC_OK(tcsparseSpMM_bufferSize(h, N_, N_, &alpha, sA, sB[w], &beta, sC[w], F32, DEF, &bytes));
        if (bytes > 0)
            CUDA_OK(cudaMalloc(&buf, bytes));
        TC_OK(tcsparseSpMM(h, N_, N_, &alpha, sA, sB[w], &beta, sC[w], F32, DEF, buf));
        tcsparseRouteInfo_t info;
        TC_OK(tcsparseGetLastRoute(h, &info));
        cr_assert_str_eq(info.kernel, "cusparseSpMM(CSR_ALG3)", "step %d: %s", step, info.reason);
        CUDA_OK(cudaMemcpy(hOut, dC[w], 4 * (size_t)(M * widths[w]), cudaMemcpyDeviceToHost));
        R = C0[w];
        R.val = malloc(sizeof(double) * (size_t)(M * widths[w]));
        memcpy(R.val, C0[w].val, sizeof(double) * (size_t)(M * widths[w]));
        tc_ref_spmm(N_, N_, alpha, &A, &B[w], beta, &R);
        char what[48];
        snprintf(what, sizeof what, "alg3 step %d", step);
        check_dense(&R, hOut, F32, 1e-5, what);
        free(R.val);
        cudaFree(buf);
    }
    /* The first pattern written over the second's arrays in place, and a new descriptor (maybe
     * at the old one's address) on them: same arrays, same sizes, other row lengths.  Its
     * own workspace, never the destroyed descriptor's. */
    TC_OK(tcsparseDestroySpMat(sA));
    tc_csr A1;
    random_csr(M, K, 1, F32, 0xa13a13u, &A1); /* the first pattern again */
    dev_sparse dA1;
    sparse_to_device(&A1, CSR, 0, 0, F32, 0, &dA1);
    CUDA_OK(cudaMemcpy(dA2.off, dA1.off, 4 * (size_t)(M + 1), cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaMemcpy(dA2.idx, dA1.idx, 4 * (size_t)A1.nnz, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaMemcpy(dA2.val, dA1.val, 4 * (size_t)A1.nnz, cudaMemcpyDeviceToDevice));
    TC_OK(tcsparseCreateCsr(&sA, M, K, A1.nnz, dA2.off, dA2.idx, dA2.val, TCSPARSE_INDEX_32I,
                            TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, F32));
    CUDA_OK(cudaMemcpy(dC[0], hC[0], 4 * (size_t)(M * widths[0]), cudaMemcpyHostToDevice));
    size_t bytes0 = 0;
    void *buf0 = NULL;
    TC_OK(tcsparseSpMM_bufferSize(h, N_, N_, &alpha, sA, sB[0], &beta, sC[0], F32, DEF, &bytes0));
    if (bytes0 > 0)
        CUDA_OK(cudaMalloc(&buf0, bytes0));
    TC_OK(tcsparseSpMM(h, N_, N_, &alpha, sA, sB[0], &beta, sC[0], F32, DEF, buf0));
    tcsparseRouteInfo_t info;
    TC_OK(tcsparseGetLastRoute(h, &info));
    cr_assert_str_eq(info.kernel, "cusparseSpMM(CSR_ALG3)", "new descriptor: %s", info.reason);
    CUDA_OK(cudaMemcpy(hOut, dC[0], 4 * (size_t)(M * widths[0]), cudaMemcpyDeviceToHost));
    R = C0[0];
    R.val = malloc(sizeof(double) * (size_t)(M * widths[0]));
    memcpy(R.val, C0[0].val, sizeof(double) * (size_t)(M * widths[0]));
    tc_ref_spmm(N_, N_, alpha, &A1, &B[0], beta, &R);
    check_dense(&R, hOut, F32, 1e-5, "alg3 new descriptor");

    /* Inside a stream capture no workspace is used (the graph would outlive it): the call is
     * captured as ALG_DEFAULT with the caller's buffer, and the replayed graph computes C. */
    cudaStream_t cs;
    CUDA_OK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    TC_OK(tcsparseSetStream(h, cs));
    CUDA_OK(cudaMemcpy(dC[0], hC[0], 4 * (size_t)(M * widths[0]), cudaMemcpyHostToDevice));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
    tcsparseStatus_t cst = tcsparseSpMM(h, N_, N_, &alpha, sA, sB[0], &beta, sC[0], F32, DEF, buf0);
    CUDA_OK(cudaStreamEndCapture(cs, &graph));
    cr_assert_eq(cst, TCSPARSE_STATUS_SUCCESS, "captured call: %s", tcsparseGetLastErrorMessage());
    TC_OK(tcsparseGetLastRoute(h, &info));
    cr_assert_str_eq(info.kernel, "cusparseSpMM", "captured call ran %s (%s)", info.kernel, info.reason);
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphLaunch(exec, cs));
    CUDA_OK(cudaStreamSynchronize(cs));
    CUDA_OK(cudaMemcpy(hOut, dC[0], 4 * (size_t)(M * widths[0]), cudaMemcpyDeviceToHost));
    check_dense(&R, hOut, F32, 1e-5, "alg3 captured graph");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    TC_OK(tcsparseSetStream(h, NULL));
    cudaStreamDestroy(cs);
    cudaFree(buf0);
    free(R.val);
    TC_OK(tcsparseDestroySpMat(sA));
    for (int w = 0; w < 2; w++) {
        TC_OK(tcsparseDestroyDnMat(sB[w]));
        TC_OK(tcsparseDestroyDnMat(sC[w]));
        cudaFree(dB[w]);
        cudaFree(dC[w]);
        free(hB[w]);
        free(hC[w]);
        free(B[w].val);
        free(C0[w].val);
    }
    TC_OK(tcsparseDestroy(h));
    sparse_free(&dA);
    sparse_free(&dA1);
    sparse_free(&dA2);
    free(hOut);
    tc_csr_free(&A);
    tc_csr_free(&A1);
}
