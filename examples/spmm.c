/* A complete tcsparse program: C = A·B with A sparse (CSR, FP32) and B, C dense row-major,
 * through the same calls a cuSPARSE program makes (descriptors, _bufferSize, execute).
 * The library decides per call whether the tensor cores or cuSPARSE run it; the result is
 * the same either way, within FP32 accuracy.
 *
 * It checks C against a CPU product in double: normwise relative error at most 1e-5 (the
 * default FP32 math, 3xTF32, is accurate to under 1e-6).  Exit status 0 when it matches,
 * 1 when it does not or a call fails, 77 (skipped, for `make check`) without a CUDA device.
 *
 * Build against an installed library:
 *     cc -std=c11 spmm.c $(pkg-config --cflags --libs tcsparse) -lcudart -lm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "tcsparse.h"
#include "tcsparse_ext.h" /* tcsparseGetLastRoute: which path ran the call */

#define CHECK_TC(call)                                                                    \
    do {                                                                                  \
        tcsparseStatus_t s_ = (call);                                                     \
        if (s_ != TCSPARSE_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,                      \
                    tcsparseGetErrorString(s_), tcsparseGetLastErrorMessage());           \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* Uniform in [-1, 1) from a 64-bit linear congruential generator: the same matrix on
 * every run. */
static float next_value(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("spmm: no CUDA device: skipped\n");
        return 77;
    }

    /* A: a graph of 16,384 nodes, each joined to its 8 nearest neighbours on either side
     * (wrapping around) and to 4 far nodes; B: 64 features a node.  Each row's columns are
     * sorted and distinct, as CSR asks. */
    enum { NEAR = 8, FAR = 4, PER_ROW = 2 * NEAR + FAR };
    const int m = 16384, k = 16384, n = 64;
    int *row_off = malloc(sizeof(int) * (m + 1)), *col = malloc(sizeof(int) * m * PER_ROW);
    float *val = malloc(sizeof(float) * m * PER_ROW), *b = malloc(sizeof(float) * k * n);
    float *c = malloc(sizeof(float) * m * n);
    if (!row_off || !col || !val || !b || !c)
        return 1;
    uint64_t seed = 1;
    int nnz = 0;
    for (int i = 0; i < m; i++) {
        int cols[PER_ROW], count = 0;
        for (int d = 1; d <= NEAR; d++) {
            cols[count++] = (i + k - d) % k;
            cols[count++] = (i + d) % k;
        }
        for (int f = 1; f <= FAR; f++)
            cols[count++] = (int)(((int64_t)i * 7919 + (int64_t)f * 104729) % k);
        qsort(cols, (size_t)count, sizeof(int), compare_int);
        row_off[i] = nnz;
        for (int q = 0; q < count; q++)
            if (q == 0 || cols[q] != cols[q - 1]) {
                col[nnz] = cols[q];
                val[nnz++] = next_value(&seed);
            }
    }
    row_off[m] = nnz;
    for (int i = 0; i < k * n; i++)
        b[i] = next_value(&seed);

    int *d_row_off, *d_col;
    float *d_val, *d_b, *d_c;
    CHECK_CUDA(cudaMalloc((void **)&d_row_off, sizeof(int) * (m + 1)));
    CHECK_CUDA(cudaMalloc((void **)&d_col, sizeof(int) * nnz));
    CHECK_CUDA(cudaMalloc((void **)&d_val, sizeof(float) * nnz));
    CHECK_CUDA(cudaMalloc((void **)&d_b, sizeof(float) * k * n));
    CHECK_CUDA(cudaMalloc((void **)&d_c, sizeof(float) * m * n));
    CHECK_CUDA(cudaMemcpy(d_row_off, row_off, sizeof(int) * (m + 1), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_col, col, sizeof(int) * nnz, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_val, val, sizeof(float) * nnz, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d_b, b, sizeof(float) * k * n, cudaMemcpyHostToDevice));

    /* [spmm] */
    tcsparseHandle_t handle;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    CHECK_TC(tcsparseCreate(&handle));
    CHECK_TC(tcsparseCreateCsr(&A, m, k, nnz, d_row_off, d_col, d_val, TCSPARSE_INDEX_32I,
                               TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CHECK_TC(tcsparseCreateDnMat(&B, k, n, n, d_b, CUDA_R_32F, TCSPARSE_ORDER_ROW));
    CHECK_TC(tcsparseCreateDnMat(&C, m, n, n, d_c, CUDA_R_32F, TCSPARSE_ORDER_ROW));

    const float alpha = 1.0f, beta = 0.0f;
    size_t size = 0;
    void *buffer = NULL;
    CHECK_TC(tcsparseSpMM_bufferSize(handle, TCSPARSE_OPERATION_NON_TRANSPOSE,
                                     TCSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C,
                                     CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, &size));
    CHECK_CUDA(cudaMalloc(&buffer, size > 0 ? size : 1));
    /* C = alpha·A·B + beta·C, on the handle's stream (the default stream here) */
    CHECK_TC(tcsparseSpMM(handle, TCSPARSE_OPERATION_NON_TRANSPOSE,
                          TCSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C, CUDA_R_32F,
                          TCSPARSE_SPMM_ALG_DEFAULT, buffer));
    /* [spmm] */

    tcsparseRouteInfo_t route;
    CHECK_TC(tcsparseGetLastRoute(handle, &route));
    printf("spmm: %d x %d, %d nonzeros, N = %d: %s (%s)\n", m, k, nnz, n, route.kernel,
           route.reason);
    CHECK_CUDA(cudaMemcpy(c, d_c, sizeof(float) * m * n, cudaMemcpyDeviceToHost));

    /* The CPU product in double, and the normwise relative error of C. */
    double num = 0.0, den = 0.0;
    double *ref_row = malloc(sizeof(double) * n);
    if (!ref_row)
        return 1;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++)
            ref_row[j] = 0.0;
        for (int p = row_off[i]; p < row_off[i + 1]; p++)
            for (int j = 0; j < n; j++)
                ref_row[j] += (double)val[p] * (double)b[(size_t)col[p] * n + j];
        for (int j = 0; j < n; j++) {
            double out = c[(size_t)i * n + j], d = out - ref_row[j];
            num += isfinite(out) ? d * d : INFINITY;
            den += ref_row[j] * ref_row[j];
        }
    }
    double rel = sqrt(num / den);
    printf("spmm: relative error %.3g (bound 1e-5)\n", rel);

    CHECK_TC(tcsparseDestroySpMat(A)); /* frees the matrix's tensor-core plan with it */
    CHECK_TC(tcsparseDestroyDnMat(B));
    CHECK_TC(tcsparseDestroyDnMat(C));
    CHECK_TC(tcsparseDestroy(handle));
    cudaFree(buffer);
    cudaFree(d_row_off);
    cudaFree(d_col);
    cudaFree(d_val);
    cudaFree(d_b);
    cudaFree(d_c);
    free(ref_row);
    free(row_off);
    free(col);
    free(val);
    free(b);
    free(c);
    return rel <= 1e-5 ? 0 : 1;
}
