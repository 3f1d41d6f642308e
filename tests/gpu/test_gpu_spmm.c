#define _POSIX_C_SOURCE 200809L /* setenv */
/* Tensor-core SpMM through the public API on the GPU, against a CPU reference in double:
 * every kernel variant (base, balanced) and precision (3xTF32, TF32, FP16, BF16 with FP16/BF16
 * or FP32 output), generated matrices of every shape class and, when TC_DATA_DIR is set,
 * real ones.  Outputs are poisoned first so that every element must be written. */
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

typedef struct {
    int N;
    cudaDataType ab, c;      /* A/B type, C type */
    int tf32;                /* FP32 only */
    tcsparseRoute_t route;
    tcsparseFormat_t fmt;
    int idx64, base;
    int ldb_pad, ldc_pad;
    float alpha, beta;
    int device_ptrs;
    int preprocess;
    int repeat;   /* executions, each on C's initial contents and checked; 0 means 1 */
    int explore;  /* 1: the executions must measure the paths and settle ("exploring" then
                   * "measured on"); -1: they must not measure; 0: no expectation */
} spmm_case;

static double bound_for(const spmm_case *k)
{
    if (k->ab != CUDA_R_32F || k->c != CUDA_R_32F)
        return 2e-2;
    return k->tf32 ? 5e-3 : 1e-5;
}

static size_t esize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/* Stores v as type t at p[i], returning the value actually stored (after rounding). */
static double put(void *p, size_t i, cudaDataType t, double v)
{
    if (t == CUDA_R_32F) {
        ((float *)p)[i] = (float)v;
        return (float)v;
    }
    uint16_t h = t == CUDA_R_16F ? tc_f2h((float)v) : tc_f2bf((float)v);
    ((uint16_t *)p)[i] = h;
    return t == CUDA_R_16F ? tc_h2f(h) : tc_bf2f(h);
}

static double get(const void *p, size_t i, cudaDataType t)
{
    if (t == CUDA_R_32F)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == CUDA_R_16F ? tc_h2f(h) : tc_bf2f(h);
}

static void put_index(void *p, size_t i, int is64, int64_t v)
{
    if (is64)
        ((int64_t *)p)[i] = v;
    else
        ((int32_t *)p)[i] = (int32_t)v;
}

static void *to_device(const void *h, size_t bytes)
{
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
    if (bytes)
        cr_assert_eq(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}

static uint64_t seed = 12345;
static double urand(void)
{
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Runs one case on m and checks it; returns the relative error. */
static char last_kernel[64]; /* the kernel of run_case's last execution */
static tc_test_call_log call_log; /* what run_case's executions did (the tuning's test) */

static double run_case(const tc_csr *m, const spmm_case *k, const char *label)
{
    const int64_t M = m->rows, K = m->cols, nnz = m->nnz, N = k->N;
    const int64_t ldb = N + k->ldb_pad, ldc = N + k->ldc_pad;
    const size_t is = k->idx64 ? 8 : 4;
    /* A's arrays in the requested format, values rounded to the input type */
    int64_t noff = k->fmt == TCSPARSE_FORMAT_CSR ? M + 1 : k->fmt == TCSPARSE_FORMAT_CSC ? K + 1 : nnz;
    void *h_off = malloc(is * (size_t)(noff + 1)), *h_idx = malloc(is * (size_t)(nnz + 1));
    void *h_val = malloc(esize(k->ab) * (size_t)(nnz + 1));
    double *a_val = malloc(sizeof(double) * (size_t)(nnz + 1)); /* in CSR order */
    for (int64_t e = 0; e < nnz; e++)
        a_val[e] = m->val[e];
    if (k->fmt == TCSPARSE_FORMAT_CSR || k->fmt == TCSPARSE_FORMAT_COO) {
        for (int64_t r = 0; r < M; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                if (k->fmt == TCSPARSE_FORMAT_COO)
                    put_index(h_off, (size_t)e, k->idx64, r + k->base);
                put_index(h_idx, (size_t)e, k->idx64, m->col[e] + k->base);
                a_val[e] = put(h_val, (size_t)e, k->ab, m->val[e]);
            }
        if (k->fmt == TCSPARSE_FORMAT_CSR)
            for (int64_t r = 0; r <= M; r++)
                put_index(h_off, (size_t)r, k->idx64, m->row_off[r] + k->base);
    } else { /* CSC: counting sort by column */
        int64_t *cnt = calloc((size_t)K + 1, sizeof *cnt);
        for (int64_t e = 0; e < nnz; e++)
            cnt[m->col[e] + 1]++;
        for (int64_t c = 0; c < K; c++)
            cnt[c + 1] += cnt[c];
        for (int64_t c = 0; c <= K; c++)
            put_index(h_off, (size_t)c, k->idx64, cnt[c] + k->base);
        for (int64_t r = 0; r < M; r++)
            for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
                int64_t dst = cnt[m->col[e]]++;
                put_index(h_idx, (size_t)dst, k->idx64, r + k->base);
                a_val[e] = put(h_val, (size_t)dst, k->ab, m->val[e]);
            }
        free(cnt);
    }
    /* B and C with padding columns; C's padding holds a sentinel that must survive */
    void *h_B = malloc(esize(k->ab) * (size_t)(K * ldb + 1));
    double *b = malloc(sizeof(double) * (size_t)(K * N + 1));
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < ldb; j++) {
            double v = put(h_B, (size_t)(i * ldb + j), k->ab, j < N ? urand() : 1e30);
            if (j < N)
                b[i * N + j] = v;
        }
    void *h_C = malloc(esize(k->c) * (size_t)(M * ldc + 1));
    double *c0 = malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < ldc; j++) {
            double v = put(h_C, (size_t)(i * ldc + j), k->c, j < N ? urand() : 7.0);
            if (j < N)
                c0[i * N + j] = v;
        }
    if (k->beta == 0.0f) /* beta = 0 must not read C: poison it with NaN */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                put(h_C, (size_t)(i * ldc + j), k->c, NAN);
    /* reference in double from the rounded inputs */
    double *ref = malloc(sizeof(double) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t e = m->row_off[i]; e < m->row_off[i + 1]; e++)
                s += a_val[e] * b[m->col[e] * N + j];
            ref[i * N + j] = k->alpha * s + (k->beta != 0.0f ? k->beta * c0[i * N + j] : 0.0);
        }

    void *d_off = to_device(h_off, is * (size_t)noff), *d_idx = to_device(h_idx, is * (size_t)nnz);
    void *d_val = to_device(h_val, esize(k->ab) * (size_t)nnz);
    void *d_B = to_device(h_B, esize(k->ab) * (size_t)(K * ldb));
    void *d_C = to_device(h_C, esize(k->c) * (size_t)(M * ldc));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tcsparseIndexType_t it = k->idx64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    tcsparseIndexBase_t ib = (tcsparseIndexBase_t)k->base;
    tcsparseStatus_t st =
        k->fmt == TCSPARSE_FORMAT_CSR ? tcsparseCreateCsr(&A, M, K, nnz, d_off, d_idx, d_val, it, it, ib, k->ab)
        : k->fmt == TCSPARSE_FORMAT_CSC ? tcsparseCreateCsc(&A, M, K, nnz, d_off, d_idx, d_val, it, it, ib, k->ab)
                                        : tcsparseCreateCoo(&A, M, K, nnz, d_off, d_idx, d_val, it, ib, k->ab);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, ldb, d_B, k->ab, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, M, N, ldc, d_C, k->c, TCSPARSE_ORDER_ROW), 0);
    tcsparseSetRoute(h, k->route);
    tcsparseSetMathMode(h, k->tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT);
    float *d_ab = NULL;
    const void *pa = &k->alpha, *pb = &k->beta;
    if (k->device_ptrs) {
        float ab[2] = {k->alpha, k->beta};
        d_ab = to_device(ab, sizeof ab);
        tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE);
        pa = d_ab;
        pb = d_ab + 1;
    }
    size_t bsz = 0;
    st = tcsparseSpMM_bufferSize(h, 0, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, &bsz);
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: bufferSize: %s", label, tcsparseGetLastErrorMessage());
    void *buf = NULL;
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    if (k->preprocess) {
        st = tcsparseSpMM_preprocess(h, 0, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: preprocess: %s", label, tcsparseGetLastErrorMessage());
    }
    void *h_C_init = malloc(esize(k->c) * (size_t)(M * ldc + 1));
    memcpy(h_C_init, h_C, esize(k->c) * (size_t)(M * ldc));
    const int reps = k->repeat > 0 ? k->repeat : 1;
    tc_test_measuring measuring = {0, 0};
    double err = 0;
    tcsparseRouteInfo_t ri;
    tc_test_call_log_reset(&call_log);
    for (int rep = 0; rep < reps; rep++) {
        if (rep > 0) /* each execution starts from C's initial contents (NaN where beta = 0) */
            cr_assert_eq(cudaMemcpy(d_C, h_C_init, esize(k->c) * (size_t)(M * ldc), cudaMemcpyHostToDevice),
                         cudaSuccess);
        st = tcsparseSpMM(h, 0, 0, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf);
        cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s: %s", label, tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: kernel failed", label);
        tcsparseGetLastRoute(h, &ri);
        snprintf(last_kernel, sizeof last_kernel, "%s", ri.kernel);
        tc_test_measuring_note(&measuring, &ri);
        if (k->explore < 0)
            cr_assert(strncmp(ri.reason, "exploring", 9) != 0, "%s: call %d measured: '%s'", label,
                      rep, ri.reason);
        if (k->route == TCSPARSE_ROUTE_AUTO && getenv("TCSPARSE_SELECT") != NULL && k->explore >= 0)
            cr_assert(strncmp(ri.reason, "measured", 8) == 0, "%s: reason '%s'", label, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC_BASE)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "%s: took %s (%s)", label, ri.kernel, ri.reason);
        if (k->route == TCSPARSE_ROUTE_TC_BALANCED)
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BALANCED, "%s: took %s (%s)", label, ri.kernel, ri.reason);

        cr_assert_eq(cudaMemcpy(h_C, d_C, esize(k->c) * (size_t)(M * ldc), cudaMemcpyDeviceToHost), cudaSuccess);
        tc_test_call_log_note(&call_log, &ri, h_C, esize(k->c) * (size_t)(M * ldc));
        double num = 0, den = 0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < ldc; j++) {
                double v = get(h_C, (size_t)(i * ldc + j), k->c);
                if (j >= N) {
                    cr_assert_eq(v, 7.0, "%s: padding C[%lld][%lld] overwritten", label, (long long)i, (long long)j);
                    continue;
                }
                cr_assert(isfinite(v), "%s: C[%lld][%lld] = %g not written or not finite", label,
                          (long long)i, (long long)j, v);
                double d = v - ref[i * N + j];
                num += d * d;
                den += ref[i * N + j] * ref[i * N + j];
            }
        err = den > 0 ? sqrt(num / den) : sqrt(num);
        cr_assert(err <= bound_for(k), "%s: call %d: relative error %.3e > %.1e (%s; %s)", label, rep,
                  err, bound_for(k), ri.kernel, ri.reason);
    }
    if (k->explore > 0)
        TC_ASSERT_MEASURED_AND_SETTLED(&measuring, &ri, label);
    free(h_C_init);

    cudaFree(buf); cudaFree(d_ab);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(d_off); cudaFree(d_idx); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C);
    free(h_off); free(h_idx); free(h_val); free(a_val); free(h_B); free(b); free(h_C); free(c0); free(ref);
    return err;
}

static spmm_case base_case(int N)
{
    spmm_case k = {.N = N, .ab = CUDA_R_32F, .c = CUDA_R_32F, .route = TCSPARSE_ROUTE_TC_BASE,
                   .fmt = TCSPARSE_FORMAT_CSR, .alpha = 1.25f, .beta = 0.0f, .preprocess = 1};
    return k;
}

typedef struct {
    cudaDataType ab, c;
    int tf32;
    const char *n;
} prec_t;

static const prec_t all_precs[] = {
    {CUDA_R_32F, CUDA_R_32F, 0, "3xtf32"}, {CUDA_R_32F, CUDA_R_32F, 1, "tf32"},
    {CUDA_R_16F, CUDA_R_16F, 0, "f16"},    {CUDA_R_16F, CUDA_R_32F, 0, "f16->f32"},
    {CUDA_R_16BF, CUDA_R_16BF, 0, "bf16"}, {CUDA_R_16BF, CUDA_R_32F, 0, "bf16->f32"}};

/* A sweep's case: precision pr, the base or the balanced kernel, beta 0 or -0.5 by parity. */
static spmm_case prec_case(int N, const prec_t *pr, int bal, int parity)
{
    spmm_case k = base_case(N);
    k.ab = pr->ab;
    k.c = pr->c;
    k.tf32 = pr->tf32;
    k.route = bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
    k.beta = parity % 2 ? -0.5f : 0.0f;
    return k;
}

/* Every precision x kernel on one matrix for a list of N. */
static void sweep(const tc_csr *m, const char *name, const int *ns, int nn)
{
    for (int i = 0; i < nn; i++)
        for (size_t p = 0; p < sizeof all_precs / sizeof all_precs[0]; p++)
            for (int bal = 0; bal < 2; bal++) {
                spmm_case k = prec_case(ns[i], &all_precs[p], bal, i + (int)p);
                char label[160];
                snprintf(label, sizeof label, "%s N=%d %s %s", name, ns[i], all_precs[p].n,
                         bal ? "balanced" : "base");
                run_case(m, &k, label);
            }
}

static const int all_n[] = {1, 7, 8, 32, 100, 128, 256, 512};

static void gen_or_fail(const char *spec, tc_csr *m)
{
    char err[256];
    cr_assert_eq(tc_gen_from_spec(spec, m, err, sizeof err), 0, "%s: %s", spec, err);
}

Test(gpu_spmm, rmat_power_law)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:11:8", &m);
    sweep(&m, "rmat:11:8", all_n, 8);
    tc_csr_free(&m);
}

Test(gpu_spmm, uniform_odd_sizes)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    cr_assert_eq(tc_gen_uniform(1001, 517, 9, 7, &m), 0);
    static const int ns[] = {7, 100, 256};
    sweep(&m, "uniform 1001x517", ns, 3);
    tc_csr_free(&m);
}

/* cudaDeviceReset ends the device's context and everything in it.  The library's per-device
 * caches (the conversion's pool, its side streams and events, the long conversion kernels'
 * raised shared-memory limit) must follow: a matrix of 2^18 columns needs that limit (a 64 KiB
 * bitmap) and R-MAT windows are staged, before a reset and after each of two. */
static const char *const reset_specs[] = {"uniform:3000:262144:40", "rmat:12:64"};

static void reset_round(const tc_csr *m, int resets)
{
    for (int i = 0; i < 2; i++) {
        spmm_case k = base_case(32);
        k.route = i == 0 ? TCSPARSE_ROUTE_TC_BASE : TCSPARSE_ROUTE_TC_BALANCED;
        char label[96];
        snprintf(label, sizeof label, "%s, after %d resets", reset_specs[i], resets);
        run_case(&m[i], &k, label);
    }
}

Test(gpu_spmm, after_device_reset)
{
    TC_REQUIRE_GPU();
    tc_csr m[2];
    for (int i = 0; i < 2; i++)
        gen_or_fail(reset_specs[i], &m[i]);
    for (int round = 0; round < 3; round++) {
        if (round > 0)
            cr_assert_eq(cudaDeviceReset(), cudaSuccess);
        reset_round(m, round);
    }
    for (int i = 0; i < 2; i++)
        tc_csr_free(&m[i]);
}

/* A plan built before a reset and its descriptor destroyed after it: the plan's memory went
 * with the context, and destroying it must not free what is now another allocation (nor
 * crash).  The plan's allocation is alive at the reset by design: compute-sanitizer's leak
 * check reports it (run this test without --leak-check). */
Test(gpu_spmm, plan_outliving_context)
{
    TC_REQUIRE_GPU();
    tc_csr m[2];
    for (int i = 0; i < 2; i++)
        gen_or_fail(reset_specs[i], &m[i]);
    const tc_csr *a = &m[1];
    int32_t *h_off = malloc(sizeof *h_off * (size_t)(a->rows + 1));
    for (int64_t r = 0; r <= a->rows; r++)
        h_off[r] = (int32_t)a->row_off[r];
    float *h_val = calloc((size_t)a->nnz + 1, sizeof *h_val);
    void *d_off = to_device(h_off, sizeof *h_off * (size_t)(a->rows + 1));
    void *d_col = to_device(a->col, sizeof *a->col * (size_t)a->nnz);
    void *d_val = to_device(h_val, sizeof *h_val * (size_t)a->nnz);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateCsr(&A, a->rows, a->cols, a->nnz, d_off, d_col, d_val,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 TCSPARSE_STATUS_SUCCESS);
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, A, &st), TCSPARSE_STATUS_SUCCESS, "%s",
                 tcsparseGetLastErrorMessage());
    cr_assert_eq(tcsparseDestroy(h), TCSPARSE_STATUS_SUCCESS);
    cudaFree(d_off);
    cudaFree(d_col);
    cudaFree(d_val);
    cr_assert_eq(cudaDeviceReset(), cudaSuccess);
    /* new allocations, which may take the old addresses, then the old plan destroyed */
    const size_t bytes = (size_t)64 << 20;
    unsigned char *d_new = NULL;
    cr_assert_eq(cudaMalloc((void **)&d_new, bytes), cudaSuccess);
    cr_assert_eq(cudaMemset(d_new, 0x5a, bytes), cudaSuccess);
    cr_assert_eq(tcsparseDestroySpMat(A), TCSPARSE_STATUS_SUCCESS);
    unsigned char *back = malloc(bytes);
    cr_assert_eq(cudaMemcpy(back, d_new, bytes, cudaMemcpyDeviceToHost), cudaSuccess,
                 "a new allocation was lost after destroying a plan of the old context");
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++)
        bad += back[i] != 0x5a;
    cr_assert_eq(bad, 0, "%zu bytes of a new allocation changed", bad);
    cudaFree(d_new);
    free(back);
    free(h_off);
    free(h_val);
    reset_round(m, 1); /* and the library works in the new context */
    for (int i = 0; i < 2; i++)
        tc_csr_free(&m[i]);
}

Test(gpu_spmm, banded_and_blocks)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    cr_assert_eq(tc_gen_banded(1999, 6, 3, &m), 0);
    static const int ns[] = {8, 128};
    sweep(&m, "banded", ns, 2);
    tc_csr_free(&m);
    cr_assert_eq(tc_gen_blocks(2003, 16, 300, 5, &m), 0);
    sweep(&m, "blocks", ns, 2);
    tc_csr_free(&m);
}

/* One dense row (a window with many blocks: the balanced kernel splits it) and empty rows. */
Test(gpu_spmm, dense_row_and_empty_rows)
{
    TC_REQUIRE_GPU();
    const int64_t M = 333, K = 4099;
    tc_csr m = {.rows = M, .cols = K};
    m.row_off = calloc((size_t)M + 1, sizeof *m.row_off);
    m.col = malloc(sizeof *m.col * (size_t)(K + M * 3));
    m.val = malloc(sizeof *m.val * (size_t)(K + M * 3));
    int64_t e = 0;
    for (int64_t r = 0; r < M; r++) {
        if (r == 17)
            for (int64_t c = 0; c < K; c++) {
                m.col[e] = (int32_t)c;
                m.val[e++] = urand();
            }
        else if (r % 3 != 0) /* every third row empty */
            for (int64_t c = (r * 7) % 11; c < K; c += 1500) {
                m.col[e] = (int32_t)c;
                m.val[e++] = urand();
            }
        m.row_off[r + 1] = e;
    }
    m.nnz = e;
    static const int ns[] = {32, 129};
    sweep(&m, "dense row", ns, 2);
    tc_csr_free(&m);
}

Test(gpu_spmm, formats_bases_widths_layouts)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:10:6", &m);
    const tcsparseFormat_t fmts[] = {TCSPARSE_FORMAT_CSR, TCSPARSE_FORMAT_CSC, TCSPARSE_FORMAT_COO};
    for (int f = 0; f < 3; f++)
        for (int w = 0; w < 2; w++)
            for (int b = 0; b < 2; b++) {
                spmm_case k = base_case(45);
                k.fmt = fmts[f];
                k.idx64 = w;
                k.base = b;
                k.ldb_pad = 3;     /* misaligned rows: the scalar path */
                k.ldc_pad = 5;
                k.beta = 0.75f;
                k.device_ptrs = (f + w + b) % 2;
                k.preprocess = b;
                k.route = (f + b) % 2 ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
                char label[96];
                snprintf(label, sizeof label, "fmt=%d idx64=%d base=%d", (int)fmts[f], w, b);
                run_case(&m, &k, label);
            }
    tc_csr_free(&m);
}

/* N that is not a whole number of a lane's B pieces, with 16-byte aligned rows (ldb a multiple
 * of 8 elements): the vector path's tail (a partial copy), where the padding columns of B
 * (1e30) must not be read.  The other tests' ldb = N makes such rows unaligned. */
Test(gpu_spmm, tails_with_aligned_rows)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:9:12", &m);
    const struct { cudaDataType ab, c; int tf32; } precs[] = {
        {CUDA_R_32F, CUDA_R_32F, 0}, {CUDA_R_32F, CUDA_R_32F, 1}, {CUDA_R_16F, CUDA_R_16F, 0},
        {CUDA_R_16BF, CUDA_R_32F, 0}};
    static const int ns[] = {1, 6, 13, 100, 250};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
            for (int bal = 0; bal < 2; bal++) {
                spmm_case k = base_case(ns[i]);
                k.ab = precs[p].ab;
                k.c = precs[p].c;
                k.tf32 = precs[p].tf32;
                k.ldb_pad = (8 - ns[i] % 8) % 8;
                k.ldc_pad = k.ldb_pad;
                k.beta = bal ? 0.5f : 0.0f;
                k.route = bal ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE;
                char label[96];
                snprintf(label, sizeof label, "aligned tail N=%d prec=%zu %s", ns[i], p,
                         bal ? "balanced" : "base");
                run_case(&m, &k, label);
            }
    tc_csr_free(&m);
}

/* A NaN in B where A's blocks only have padding must not reach C. */
Test(gpu_spmm, padding_never_reads_b)
{
    TC_REQUIRE_GPU();
    /* row 0 of B is NaN; A has no entry in column 0, and every window has a padded block */
    const int64_t M = 40, K = 50, N = 16;
    int32_t off[41], col[40];
    float val[40];
    for (int r = 0; r < M; r++) {
        off[r] = r;
        col[r] = 1 + r % 3;
        val[r] = 0.5f + r;
    }
    off[M] = (int32_t)M;
    float *hB = malloc(sizeof(float) * K * N), *hC = malloc(sizeof(float) * M * N);
    for (int i = 0; i < K * N; i++)
        hB[i] = i < N ? NAN : (float)(i % 7);
    void *dOff = to_device(off, sizeof off), *dCol = to_device(col, sizeof col);
    void *dVal = to_device(val, sizeof val), *dB = to_device(hB, sizeof(float) * K * N);
    void *dC = to_device(hB, sizeof(float) * M * N);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    tcsparseCreate(&h);
    tcsparseCreateCsr(&A, M, K, M, dOff, dCol, dVal, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    tcsparseCreateDnMat(&B, K, N, N, dB, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&C, M, N, N, dC, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    for (int route = TCSPARSE_ROUTE_TC_BASE; route <= TCSPARSE_ROUTE_TC_BALANCED; route++) {
        float one = 1, zero = 0;
        tcsparseSetRoute(h, (tcsparseRoute_t)route);
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, NULL), 0, "%s",
                     tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaMemcpy(hC, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost), cudaSuccess);
        for (int i = 0; i < M * N; i++) {
            int r = i / N, j = i % N;
            float want = val[r] * hB[col[r] * N + j];
            cr_assert_float_eq(hC[i], want, 1e-5f, "C[%d][%d] = %g, want %g", r, j, hC[i], want);
        }
    }
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(dOff); cudaFree(dCol); cudaFree(dVal); cudaFree(dB); cudaFree(dC);
    free(hB); free(hC);
}

/* Values rewritten in place are seen; CsrSetPointers to another pattern rebuilds the plan. */
Test(gpu_spmm, values_fresh_and_set_pointers)
{
    TC_REQUIRE_GPU();
    tc_csr m1, m2;
    cr_assert_eq(tc_gen_banded(300, 3, 1, &m1), 0);
    /* m2: same nnz (SetPointers keeps the sizes), columns permuted c -> 7c mod 300 */
    m2.rows = m2.cols = 300;
    m2.nnz = m1.nnz;
    m2.row_off = malloc(sizeof *m2.row_off * 301);
    m2.col = malloc(sizeof *m2.col * (size_t)m1.nnz);
    m2.val = malloc(sizeof *m2.val * (size_t)m1.nnz);
    memcpy(m2.row_off, m1.row_off, sizeof *m2.row_off * 301);
    for (int r = 0; r < 300; r++) {
        int64_t b = m1.row_off[r], e = m1.row_off[r + 1];
        for (int64_t i = b; i < e; i++) {
            int32_t c = (int32_t)((m1.col[i] * 7) % 300), j = (int32_t)i;
            while (j > b && m2.col[j - 1] > c) { /* insertion keeps each row sorted */
                m2.col[j] = m2.col[j - 1];
                j--;
            }
            m2.col[j] = c;
        }
        for (int64_t i = b; i < e; i++)
            m2.val[i] = urand();
    }
    const int N = 24;
    int32_t *off1 = malloc(4 * 301), *off2 = malloc(4 * 301);
    float *v1 = malloc(4 * (size_t)m1.nnz), *v2 = malloc(4 * (size_t)m2.nnz);
    for (int r = 0; r <= 300; r++) {
        off1[r] = (int32_t)m1.row_off[r];
        off2[r] = (int32_t)m2.row_off[r];
    }
    for (int64_t e = 0; e < m1.nnz; e++) v1[e] = (float)m1.val[e];
    for (int64_t e = 0; e < m2.nnz; e++) v2[e] = (float)m2.val[e];
    float *hB = malloc(4 * 300 * N), *hC = malloc(4 * 300 * N);
    for (int i = 0; i < 300 * N; i++) hB[i] = (float)urand();
    void *dOff1 = to_device(off1, 4 * 301), *dCol1 = to_device(m1.col, 4 * (size_t)m1.nnz);
    void *dV1 = to_device(v1, 4 * (size_t)m1.nnz);
    void *dOff2 = to_device(off2, 4 * 301), *dCol2 = to_device(m2.col, 4 * (size_t)m2.nnz);
    void *dV2 = to_device(v2, 4 * (size_t)m2.nnz);
    void *dB = to_device(hB, 4 * 300 * N), *dC = to_device(hB, 4 * 300 * N);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    tcsparseCreate(&h);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE);
    tcsparseCreateCsr(&A, 300, 300, m1.nnz, dOff1, dCol1, dV1, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    tcsparseCreateDnMat(&B, 300, N, N, dB, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&C, 300, N, N, dC, CUDA_R_32F, TCSPARSE_ORDER_ROW);
    float one = 1, zero = 0;
    for (int step = 0; step < 3; step++) {
        const tc_csr *m = step < 2 ? &m1 : &m2;
        float *v = step < 2 ? v1 : v2;
        if (step == 1) { /* rewrite the values in place, same pointer */
            for (int64_t e = 0; e < m1.nnz; e++) v1[e] = (float)urand();
            cudaMemcpy(dV1, v1, 4 * (size_t)m1.nnz, cudaMemcpyHostToDevice);
        }
        if (step == 2)
            cr_assert_eq(tcsparseCsrSetPointers(A, dOff2, dCol2, dV2), 0);
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, NULL), 0, "%s",
                     tcsparseGetLastErrorMessage());
        cudaMemcpy(hC, dC, 4 * 300 * N, cudaMemcpyDeviceToHost);
        double num = 0, den = 0;
        for (int r = 0; r < 300; r++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
                    s += (double)v[e] * hB[m->col[e] * N + j];
                num += (hC[r * N + j] - s) * (hC[r * N + j] - s);
                den += s * s;
            }
        cr_assert(sqrt(num / den) < 1e-5, "step %d: relative error %g", step, sqrt(num / den));
    }
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(dOff1); cudaFree(dCol1); cudaFree(dV1); cudaFree(dOff2); cudaFree(dCol2); cudaFree(dV2);
    cudaFree(dB); cudaFree(dC);
    free(off1); free(off2); free(v1); free(v2); free(hB); free(hC);
    tc_csr_free(&m1); tc_csr_free(&m2);
}

/* Column-major or transposed operands are routed to cuSPARSE before any launch. */
Test(gpu_spmm, ineligible_goes_to_cusparse)
{
    TC_REQUIRE_GPU();
    const int64_t n = 64, N = 8;
    int32_t off[65], col[64];
    float val[64], hB[64 * 8], hC[64 * 8];
    for (int r = 0; r < n; r++) {
        off[r] = r;
        col[r] = (r * 5) % (int)n;
        val[r] = 1.0f + r;
    }
    off[n] = (int32_t)n;
    for (int i = 0; i < n * N; i++)
        hB[i] = (float)urand();
    void *dOff = to_device(off, sizeof off), *dCol = to_device(col, sizeof col);
    void *dVal = to_device(val, sizeof val), *dB = to_device(hB, sizeof hB);
    void *dC = to_device(hB, sizeof hB);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    tcsparseCreate(&h);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC);
    tcsparseCreateCsr(&A, n, n, n, dOff, dCol, dVal, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    tcsparseCreateDnMat(&B, n, N, n, dB, CUDA_R_32F, TCSPARSE_ORDER_COL);
    tcsparseCreateDnMat(&C, n, N, n, dC, CUDA_R_32F, TCSPARSE_ORDER_COL);
    float one = 1, zero = 0;
    size_t sz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, &sz), 0);
    cudaMalloc(&buf, sz + 1);
    cr_assert_eq(tcsparseSpMM(h, 0, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, buf), 0, "%s",
                 tcsparseGetLastErrorMessage());
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    cr_assert_eq(ri.path, TCSPARSE_PATH_CUSPARSE, "took %s", ri.kernel);
    cr_assert(strstr(ri.reason, "column-major") != NULL, "reason: %s", ri.reason);
    cudaMemcpy(hC, dC, sizeof hC, cudaMemcpyDeviceToHost);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < N; j++) /* column-major: element (r, j) at j*ld + r */
            cr_assert_float_eq(hC[j * n + r], val[r] * hB[j * n + col[r]], 1e-4f);
    cudaFree(buf);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(dOff); cudaFree(dCol); cudaFree(dVal); cudaFree(dB); cudaFree(dC);
}

/* Real matrices from TC_DATA_DIR (small ones, to keep the CPU reference quick). */
Test(gpu_spmm, shared_matrices, .timeout = 600)
{
    TC_REQUIRE_GPU();
    const char *dir = getenv("TC_DATA_DIR");
    if (dir == NULL)
        cr_skip_test("TC_DATA_DIR not set: no real matrices");
    static const char *names[] = {"cora", "citeseer_features", "PROTEINS_full", "mdual",
                                  "bcsstk13", "dlmc_transformer_mp0.7_dec0_ffn1", "lp_afiro",
                                  "west0067", "ca-GrQc", "Wiki-Vote"};
    int ran = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/%s.mtx.gz", dir, names[i]);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fclose(f);
        tc_csr m;
        cr_assert_eq(tc_csr_load(path, &m, err, sizeof err), 0, "%s", err);
        /* the structure is under test; values of engineering matrices (1e10 and more) would
         * overflow FP16 and make the reference itself infinite */
        for (int64_t e = 0; e < m.nnz; e++)
            m.val[e] = urand();
        static const int ns[] = {32, 128};
        sweep(&m, names[i], ns, 2);
        tc_csr_free(&m);
        ran++;
    }
    if (ran == 0)
        cr_skip_test("none of the listed matrices found in %s", dir);
}

/* TCSPARSE_SELECT=measure: _preprocess times the candidates into a scratch C (the caller's C
 * is untouched until the execution), the decision is kept in the plan and read back. */
Test(gpu_spmm, measured_selection)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("blocks:3000:16:400", &m);
    setenv("TCSPARSE_SELECT", "measure", 1);
    tc_config_reload();
    for (int prec = 0; prec < 2; prec++) {
        spmm_case k = base_case(64);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.beta = 0.5f;
        k.ab = prec ? CUDA_R_16F : CUDA_R_32F;
        k.c = k.ab;
        run_case(&m, &k, prec ? "measured f16" : "measured f32");
    }
    unsetenv("TCSPARSE_SELECT");
    tc_config_reload();
    tc_csr_free(&m);
}

/* The automatic route measures the candidate paths on the first executions of a kind of call
 * and keeps the fastest (src/route/route.c); every one of those executions must be as correct as
 * any other.  TCSPARSE_X_EXPLORE_FACTOR widens the candidates to every applicable path
 * (TC base, balanced, cuSPARSE, and CSR_ALG3 for FP32). */
Test(gpu_spmm, measured_on_calls)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("uniform:1500:700:9", &m);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    tc_config_reload();
    const struct { cudaDataType t; int tf32; float beta; const char *name; } v[] = {
        {CUDA_R_32F, 0, 0.5f, "3xtf32 beta=0.5"}, {CUDA_R_32F, 1, 0.0f, "tf32 beta=0"},
        {CUDA_R_16F, 0, 0.0f, "f16 beta=0"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        spmm_case k = base_case(40);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.preprocess = (int)(i % 2);
        k.ab = k.c = v[i].t;
        k.tf32 = v[i].tf32;
        k.beta = v[i].beta;
        k.repeat = 16; /* up to 4 paths x 3 samples, then the results of the last ones read */
        k.explore = 1;
        run_case(&m, &k, v[i].name);
    }
    setenv("TCSPARSE_SELECT", "model", 1); /* the model alone: nothing measured */
    tc_config_reload();
    spmm_case k = base_case(40);
    k.route = TCSPARSE_ROUTE_AUTO;
    k.repeat = 4;
    k.explore = -1;
    run_case(&m, &k, "model only");
    unsetenv("TCSPARSE_SELECT");
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    tc_csr_free(&m);
}

/* A measurement in progress must not disturb a stream capture: samples recorded before the
 * capture are not read inside it (an event query there invalidates a global-mode capture),
 * the captured call takes the model's path, the graph replays correctly, and the
 * measurement resumes after the capture and settles. */
Test(gpu_spmm, measuring_then_capture)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("uniform:1500:700:9", &m);
    const int64_t M = m.rows, K = m.cols, N = 40;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    float *val = malloc(sizeof *val * (size_t)m.nnz), *hB = malloc(sizeof *hB * (size_t)(K * N));
    float *hC = malloc(sizeof *hC * (size_t)(M * N));
    double *ref = calloc((size_t)(M * N), sizeof *ref);
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m.row_off[r];
    for (int64_t e = 0; e < m.nnz; e++)
        val[e] = (float)m.val[e];
    for (int64_t i = 0; i < K * N; i++)
        hB[i] = (float)urand();
    for (int64_t r = 0; r < M; r++)
        for (int64_t e = m.row_off[r]; e < m.row_off[r + 1]; e++)
            for (int64_t j = 0; j < N; j++)
                ref[r * N + j] += (double)val[e] * hB[m.col[e] * N + j];
    void *d_off = to_device(off, sizeof *off * (size_t)(M + 1));
    void *d_col = to_device(m.col, sizeof *m.col * (size_t)m.nnz);
    void *d_val = to_device(val, sizeof *val * (size_t)m.nnz);
    void *d_B = to_device(hB, sizeof *hB * (size_t)(K * N));
    void *d_C = NULL;
    cr_assert_eq(cudaMalloc(&d_C, sizeof *hC * (size_t)(M * N)), cudaSuccess);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    tc_config_reload();
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cudaStream_t cs;
    cr_assert_eq(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(tcsparseCreate(&h), 0);
    cr_assert_eq(tcsparseSetStream(h, cs), 0);
    cr_assert_eq(tcsparseSetMathMode(h, TCSPARSE_MATH_TF32), 0);
    cr_assert_eq(tcsparseCreateCsr(&A, M, K, m.nnz, d_off, d_col, d_val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, N, d_B, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, M, N, N, d_C, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    const float alpha = 1.0f, beta = 0.0f;
    size_t bsz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, &bsz), 0);
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    tcsparseRouteInfo_t ri;
    for (int i = 0; i < 2; i++) { /* the measurement starts; its samples complete, unread */
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0, "%s",
                     tcsparseGetLastErrorMessage());
        tcsparseGetLastRoute(h, &ri);
        cr_assert(strncmp(ri.reason, "exploring", 9) == 0, "call %d: %s", i, ri.reason);
    }
    cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
    cr_assert_eq(cudaMemset(d_C, 0xff, sizeof *hC * (size_t)(M * N)), cudaSuccess); /* NaN */
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec;
    cr_assert_eq(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal), cudaSuccess);
    tcsparseStatus_t st = tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf);
    cr_assert_eq(cudaStreamEndCapture(cs, &graph), cudaSuccess, "the capture was invalidated");
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "captured call: %s", tcsparseGetLastErrorMessage());
    cr_assert_not_null(graph);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "an error left behind by the captured call");
    tcsparseGetLastRoute(h, &ri);
    cr_assert(strncmp(ri.reason, "exploring", 9) != 0 || strstr(ri.reason, "sample ") == NULL,
              "a sample was taken inside the capture: %s", ri.reason);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(exec, cs), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
    cr_assert_eq(cudaMemcpy(hC, d_C, sizeof *hC * (size_t)(M * N), cudaMemcpyDeviceToHost), cudaSuccess);
    double num = 0, den = 0;
    for (int64_t i = 0; i < M * N; i++) {
        cr_assert(isfinite(hC[i]), "C[%lld] not written by the graph", (long long)i);
        num += (hC[i] - ref[i]) * (hC[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    cr_assert(sqrt(num / den) <= 5e-3, "graph: relative error %.3e (%s)", sqrt(num / den), ri.kernel);
    /* after the capture the measurement goes on and settles */
    int calls = 0;
    do {
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0);
        cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
        tcsparseGetLastRoute(h, &ri);
    } while (strncmp(ri.reason, "measured on", 11) != 0 && ++calls < 20);
    cr_assert(strncmp(ri.reason, "measured on", 11) == 0, "did not settle: %s", ri.reason);
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaStreamDestroy(cs);
    cudaFree(buf); cudaFree(d_off); cudaFree(d_col); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C);
    free(off); free(val); free(hB); free(hC); free(ref);
    tc_csr_free(&m);
}

/* The kernel forms the launcher only takes when a tuning knob asks (docs/performance.md,
 * "Kernel tuning knobs"): the thread-block kernel (TCSPARSE_X_SPMM_PIPE=0, alone and with FP32
 * J = 8), the pipelined ring at 4, 6 and 8 slots (TCSPARSE_X_SPMM_PIPE_STAGES) and FP32 J = 8
 * (TCSPARSE_X_SPMM_J=8).  The test sets the knobs and reads the configuration again
 * (tc_config_reload); the kernel's name proves the form ran. */
typedef struct {
    const char *var[2], *val[2];
    const char *expect;  /* in the kernel's name (NULL: see reject) */
    const char *reject;  /* never in it */
    int fp32_only;       /* the expectation holds for FP32 kernels only (2: plain TF32 only) */
} knob_set;

static const knob_set knob_sets[] = {
    {{"TCSPARSE_X_SPMM_PIPE", NULL}, {"0", NULL}, NULL, "_pipe", 0},
    {{"TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_J"}, {"0", "8"}, "_j8", "_pipe", 1},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"4", NULL}, "_pipe", "_pipe6", 0},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"6", NULL}, "_pipe6", NULL, 0},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"8", NULL}, "_pipe8", NULL, 0},
    {{"TCSPARSE_X_SPMM_J", NULL}, {"8", NULL}, "_j8_pipe", NULL, 1},
    {{"TCSPARSE_X_SPMM_WIDE_L1", NULL}, {"1", NULL}, "_j4_pipe_l1", NULL, 2},
    {{"TCSPARSE_X_SPMM_WIDE_L1", NULL}, {"0", NULL}, "_pipe", "_l1", 0},
};

/* a parameter is copied into the test's process: an index, not pointers */
typedef struct {
    int set;
} knob_case;

ParameterizedTestParameters(gpu_spmm, kernel_knobs)
{
    static knob_case knobs[sizeof knob_sets / sizeof knob_sets[0]];
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        knobs[i].set = (int)i;
    return cr_make_param_array(knob_case, knobs, sizeof knobs / sizeof knobs[0]);
}

ParameterizedTest(knob_case *kp, gpu_spmm, kernel_knobs)
{
    TC_REQUIRE_GPU();
    const knob_set *kc = &knob_sets[kp->set];
    for (int v = 0; v < 2; v++)
        if (kc->var[v] != NULL)
            setenv(kc->var[v], kc->val[v], 1);
    tc_config_reload();
    const prec_t precs[] = {all_precs[0], all_precs[1], all_precs[2], all_precs[5]};
    const char *specs[2] = {"rmat:9:8", "uniform:1001:777:5"};
    const int ns[2] = {7, 100};
    for (int f = 0; f < 2; f++) {
        tc_csr m;
        gen_or_fail(specs[f], &m);
        for (int i = 0; i < 2; i++)
            for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
                for (int bal = 0; bal < 2; bal++) {
                    spmm_case k = prec_case(ns[i], &precs[p], bal, i + (int)p);
                    char label[200];
                    snprintf(label, sizeof label, "%s=%s%s%s%s%s: %s N=%d %s %s", kc->var[0],
                             kc->val[0], kc->var[1] ? " " : "", kc->var[1] ? kc->var[1] : "",
                             kc->var[1] ? "=" : "", kc->var[1] ? kc->val[1] : "", specs[f],
                             ns[i], precs[p].n, bal ? "balanced" : "base");
                    run_case(&m, &k, label);
                    if ((kc->fp32_only && precs[p].ab != CUDA_R_32F) ||
                        (kc->fp32_only == 2 && !precs[p].tf32))
                        continue;
                    const int ok = (kc->expect == NULL || strstr(last_kernel, kc->expect) != NULL) &&
                                   (kc->reject == NULL || strstr(last_kernel, kc->reject) == NULL);
                    cr_assert(ok, "%s: ran %s", label, last_kernel);
                }
        tc_csr_free(&m);
    }
}

/* The wide-L1 instance (spmm_launch.cu, wide_l1) by its default rule: plain TF32 on a plan of
 * fewer than 10 nonzeros a block with at least two warps a thread block (N > 32); not for
 * dense blocks, one-warp thread blocks or 3xTF32.  Every call is checked against the CPU
 * reference as well, base and balanced (the balanced kernel with beta != 0 through its
 * scaling pass). */
Test(gpu_spmm, wide_l1_rule)
{
    TC_REQUIRE_GPU();
    if (getenv("TCSPARSE_X_SPMM_WIDE_L1") != NULL || getenv("TCSPARSE_X_SPMM_J") != NULL ||
        getenv("TCSPARSE_X_SPMM_PIPE") != NULL || getenv("TCSPARSE_X_SPMM_PIPE_STAGES") != NULL)
        cr_skip_test("a kernel knob is set in the environment");
    static const struct {
        const char *spec;
        int N, prec, wide; /* prec: index in all_precs */
    } cases[] = {
        {"uniform:3001:2999:9", 100, 1, 1}, /* 8 nonzeros a block: sparse */
        {"uniform:3001:2999:9", 64, 1, 1},
        {"uniform:3001:2999:9", 32, 1, 0},  /* one warp a thread block */
        {"uniform:3001:2999:9", 100, 0, 0}, /* 3xTF32 */
        {"banded:3001:6", 100, 1, 0},       /* dense blocks */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_csr m;
        gen_or_fail(cases[c].spec, &m);
        for (int bal = 0; bal < 2; bal++) {
            spmm_case k = prec_case(cases[c].N, &all_precs[cases[c].prec], bal, bal);
            k.beta = bal ? 0.75f : 0.0f;
            char label[160];
            snprintf(label, sizeof label, "%s N=%d %s %s", cases[c].spec, cases[c].N,
                     all_precs[cases[c].prec].n, bal ? "balanced" : "base");
            run_case(&m, &k, label);
            const int wide = strstr(last_kernel, "_pipe_l1") != NULL;
            cr_assert_eq(wide, cases[c].wide, "%s: ran %s", label, last_kernel);
        }
        tc_csr_free(&m);
    }
}

/* Kernel tuning on the executions (src/route/tune.c): on a plan where the launcher offers several
 * FP32 kernel variants (N > 32), the first executions of a kind of call on a forced path run
 * each variant three times (plain TF32: J = 4 with and without the wide L1, J = 8; 3xTF32:
 * J = 4 and 8) and later calls run one of them.  Every call is checked against the CPU
 * reference (run_case), and on the base kernel, which adds in a fixed order, every call's
 * output equals the first's bit for bit: the variants differ in tiling and caching only.
 * Nothing is measured at N <= 32, for 16-bit inputs, or with TCSPARSE_X_TUNE=0. */
Test(gpu_spmm, tune_kernels)
{
    TC_REQUIRE_GPU();
    static const char *const knobs[] = {"TCSPARSE_X_SPMM_WIDE_L1", "TCSPARSE_X_SPMM_J",
                                         "TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_PIPE_STAGES",
                                         "TCSPARSE_X_TUNE", "TCSPARSE_SELECT"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL)
            cr_skip_test("%s is set in the environment", knobs[i]);
    static const struct {
        int N, prec, bal; /* prec: index in all_precs */
        int tuning, kernels; /* tuning calls and distinct kernels expected */
        int off;             /* with TCSPARSE_X_TUNE=0 */
    } cases[] = {
        {100, 1, 0, 9, 3, 0}, /* TF32, base */
        {100, 1, 1, 9, 3, 0}, /* TF32, balanced (beta != 0: the scaling pass) */
        {64, 1, 0, 9, 3, 0},
        {100, 0, 0, 6, 2, 0}, /* 3xTF32: J = 4 and 8 */
        {100, 0, 1, 6, 2, 0},
        {32, 1, 0, 0, 1, 0},  /* one warp a thread block: the launcher's choice only */
        {100, 2, 0, 0, 1, 0}, /* FP16 */
        {100, 1, 0, 0, 1, 1}, /* TCSPARSE_X_TUNE=0 */
    };
    tc_csr m;
    gen_or_fail("uniform:3001:2999:9", &m);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].off)
            setenv("TCSPARSE_X_TUNE", "0", 1);
        tc_config_reload();
        spmm_case k = prec_case(cases[c].N, &all_precs[cases[c].prec], cases[c].bal, (int)c);
        k.beta = cases[c].bal ? 0.75f : 0.0f;
        k.repeat = 13;
        char label[160];
        snprintf(label, sizeof label, "N=%d %s %s%s", cases[c].N, all_precs[cases[c].prec].n,
                 cases[c].bal ? "balanced" : "base", cases[c].off ? " TCSPARSE_X_TUNE=0" : "");
        run_case(&m, &k, label);
        unsetenv("TCSPARSE_X_TUNE");
        tc_config_reload();
        /* the balanced kernel's atomic additions make its last bits run-dependent */
        TC_ASSERT_TUNED(&call_log, cases[c].tuning, cases[c].kernels, !cases[c].bal, label);
    }
    tc_csr_free(&m);
}

/* A forced route tunes its kernels even while the automatic route's own measurement of the
 * same kind of call is unfinished on that plan (a handle switched from the automatic route
 * to a forced one): only the automatic route's calls advance that measurement, so waiting
 * for it would leave the kind untuned for ever. */
Test(gpu_spmm, tune_after_route_switch)
{
    TC_REQUIRE_GPU();
    static const char *const knobs[] = {"TCSPARSE_X_SPMM_WIDE_L1", "TCSPARSE_X_SPMM_J",
                                         "TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_PIPE_STAGES",
                                         "TCSPARSE_X_TUNE", "TCSPARSE_SELECT",
                                         "TCSPARSE_ROUTE"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL)
            cr_skip_test("%s is set in the environment", knobs[i]);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1000", 1); /* every path a candidate: the route measures */
    tc_config_reload();
    tc_csr m;
    gen_or_fail("uniform:3001:2999:9", &m);
    const int64_t M = m.rows, K = m.cols, N = 100;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    float *val = malloc(sizeof *val * (size_t)m.nnz), *hb = malloc(sizeof *hb * (size_t)(K * N));
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m.row_off[r];
    for (int64_t e = 0; e < m.nnz; e++)
        val[e] = (float)m.val[e];
    for (int64_t i = 0; i < K * N; i++)
        hb[i] = (float)urand();
    void *d_off = to_device(off, sizeof *off * (size_t)(M + 1));
    void *d_col = to_device(m.col, sizeof *m.col * (size_t)m.nnz);
    void *d_val = to_device(val, sizeof *val * (size_t)m.nnz);
    void *d_B = to_device(hb, sizeof *hb * (size_t)(K * N)), *d_C = NULL;
    cr_assert_eq(cudaMalloc(&d_C, sizeof(float) * (size_t)(M * N)), cudaSuccess);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateCsr(&A, M, K, m.nnz, d_off, d_col, d_val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, N, d_B, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, M, N, N, d_C, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    const float alpha = 1.0f, beta = 0.0f;
    size_t bsz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &bsz), 0);
    cr_assert_eq(cudaMalloc(&buf, bsz + 16), cudaSuccess);
    tcsparseRouteInfo_t ri;
    cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf), 0,
                 "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    tcsparseGetLastRoute(h, &ri);
    cr_assert(strncmp(ri.reason, "exploring", 9) == 0, "the route did not measure: %s", ri.reason);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE);
    int tuning = 0;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf), 0,
                     "%s", tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
        tcsparseGetLastRoute(h, &ri);
        cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "took %s (%s)", ri.kernel, ri.reason);
        tuning += strstr(ri.reason, "; tuning:") != NULL;
    }
    cr_assert_eq(tuning, 9, "%d forced calls tuning (last: %s)", tuning, ri.reason);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(d_off); cudaFree(d_col); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C); cudaFree(buf);
    free(off); free(val); free(hb);
    tc_csr_free(&m);
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
}
