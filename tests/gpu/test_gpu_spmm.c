#define _POSIX_C_SOURCE 200809L /* setenv */
/* Tensor-core SpMM through the public API on the GPU, against a CPU reference in double:
 * every kernel variant (base, balanced) and precision (3xTF32, TF32, FP16, BF16 with FP16/BF16
 * or FP32 output), generated matrices of every shape class and, when TC_DATA_DIR is set,
 * real ones; every format, index width and base; device resets.  Outputs are poisoned first
 * so that every element must be written.  The automatic route's measurement and the kernel
 * tuning are test_gpu_spmm_route.c's. */
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
#include "testutil.h"
#include "spmm_case.h"

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

/* opA = TRANSPOSE runs on the plan of the transpose (the descriptor's transposed view): every
 * format, index width and base, every precision and both kernels, non-square matrices with
 * tails, and the automatic route measuring the candidates on the executions. */
Test(gpu_spmm, transposed_a)
{
    TC_REQUIRE_GPU();
    tc_csr m[2];
    cr_assert_eq(tc_gen_uniform(1001, 517, 9, 7, &m[0]), 0);
    gen_or_fail("rmat:9:12", &m[1]);
    const tcsparseFormat_t fmts[] = {TCSPARSE_FORMAT_CSR, TCSPARSE_FORMAT_CSC, TCSPARSE_FORMAT_COO};
    static const int ns[] = {1, 45, 128};
    int i = 0;
    for (int g = 0; g < 2; g++)
        for (int f = 0; f < 3; f++)
            for (size_t p = 0; p < sizeof all_precs / sizeof all_precs[0]; p++, i++) {
                spmm_case k = prec_case(ns[i % 3], &all_precs[p], i % 2, i / 2);
                k.opA = TCSPARSE_OPERATION_TRANSPOSE;
                k.fmt = fmts[f];
                k.idx64 = (i / 3) % 2;
                k.base = (i / 5) % 2;
                k.ldb_pad = i % 4 == 3 ? 3 : 0;
                k.ldc_pad = i % 4 == 1 ? 5 : 0;
                k.device_ptrs = (i / 7) % 2;
                k.preprocess = i % 3 != 0;
                k.repeat = 2;
                char label[128];
                snprintf(label, sizeof label, "A^T of %s fmt=%d N=%d %s %s",
                         g ? "rmat:9:12" : "uniform 1001x517", (int)fmts[f], k.N,
                         all_precs[p].n, i % 2 ? "balanced" : "base");
                run_case(&m[g], &k, label);
            }
    /* the automatic route: every candidate measured, then the fastest kept */
    spmm_case k = base_case(40);
    k.opA = TCSPARSE_OPERATION_TRANSPOSE;
    k.route = TCSPARSE_ROUTE_AUTO;
    k.beta = 0.5f;
    k.repeat = 16; /* 3 paths x 3 samples, then the results of the last ones read */
    k.explore = 1;
    run_case(&m[1], &k, "A^T, automatic route");
    tc_csr_free(&m[0]);
    tc_csr_free(&m[1]);
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
        for (int t = 0; t < 2; t++) { /* A and its transpose: both plans follow */
            const tcsparseOperation_t op = t ? TCSPARSE_OPERATION_TRANSPOSE
                                             : TCSPARSE_OPERATION_NON_TRANSPOSE;
            cr_assert_eq(tcsparseSpMM(h, op, 0, &one, A, B, &zero, C, CUDA_R_32F, 0, NULL), 0,
                         "%s", tcsparseGetLastErrorMessage());
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(h, &ri);
            cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "step %d op %d: %s", step, t, ri.reason);
            cudaMemcpy(hC, dC, 4 * 300 * N, cudaMemcpyDeviceToHost);
            double ref[300 * 24] = {0}, num = 0, den = 0;
            for (int r = 0; r < 300; r++)
                for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
                    for (int j = 0; j < N; j++) {
                        if (t)
                            ref[m->col[e] * N + j] += (double)v[e] * hB[r * N + j];
                        else
                            ref[r * N + j] += (double)v[e] * hB[m->col[e] * N + j];
                    }
            for (int i = 0; i < 300 * N; i++) {
                num += (hC[i] - ref[i]) * (hC[i] - ref[i]);
                den += ref[i] * ref[i];
            }
            cr_assert(sqrt(num / den) < 1e-5, "step %d op %d: relative error %g", step, t,
                      sqrt(num / den));
        }
    }
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(dOff1); cudaFree(dCol1); cudaFree(dV1); cudaFree(dOff2); cudaFree(dCol2); cudaFree(dV2);
    cudaFree(dB); cudaFree(dC);
    free(off1); free(off2); free(v1); free(v2); free(hB); free(hC);
    tc_csr_free(&m1); tc_csr_free(&m2);
}

/* Column-major operands are routed to cuSPARSE before any launch. */
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
