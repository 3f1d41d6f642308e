/* A cuSPARSE program written the way cuSPARSE's public samples are (create handle and
 * descriptors, _bufferSize, cudaMalloc the buffer, [_preprocess], execute, copy back), knowing
 * nothing of tcsparse.  Run alone it uses cuSPARSE; under LD_PRELOAD=libtcsparse_preload.so
 * the same binary is routed by tcsparse.  Every case is checked against a CPU reference in
 * double (relative Frobenius error <= 1e-5, FP32), with C poisoned first so that an element
 * left unwritten shows.
 *
 * Cases: SpMM with column-major B/C and ALG_DEFAULT; row-major with CSR_ALG2; row-major with
 * _preprocess + CSR_ALG3; SDDMM with A row-major and B column-major; SpMM captured into a
 * CUDA graph (after a first uncaptured call) and replayed; a new descriptor over the same
 * arrays, then over the same arrays holding another matrix; the same product 40 times on one
 * descriptor (a training loop).  Exit 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#define CHECK_CUDA(x)                                                                     \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_CUSPARSE(x)                                                                 \
    do {                                                                                  \
        cusparseStatus_t s_ = (x);                                                        \
        if (s_ != CUSPARSE_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                    \
                    cusparseGetErrorString(s_));                                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t rng = 88172645463325252ull;
static double urand(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

/* M x K: dense 16x16 blocks on the diagonal (tensor-core friendly) plus a few random entries
 * per row, some rows empty. */
static void make_matrix(int M, int K, int **off, int **col, float **val, int *nnz)
{
    int cap = M * 24, n = 0;
    *off = malloc(sizeof(int) * (M + 1));
    *col = malloc(sizeof(int) * cap);
    *val = malloc(sizeof(float) * cap);
    for (int r = 0; r < M; r++) {
        (*off)[r] = n;
        if (r % 97 == 5)
            continue; /* empty row */
        int used[24], nu = 0;
        int b0 = (r / 16) * 16;
        for (int c = b0; c < b0 + 16 && c < K; c++)
            used[nu++] = c;
        for (int extra = 0; extra < 3; extra++) {
            int c = (int)((urand() + 1.0) * 0.5 * K) % K, dup = 0;
            for (int i = 0; i < nu; i++)
                dup |= used[i] == c;
            if (!dup)
                used[nu++] = c;
        }
        for (int i = 1; i < nu; i++) /* sort the row */
            for (int j = i; j > 0 && used[j - 1] > used[j]; j--) {
                int t = used[j];
                used[j] = used[j - 1];
                used[j - 1] = t;
            }
        for (int i = 0; i < nu; i++) {
            (*col)[n] = used[i];
            (*val)[n++] = (float)urand();
        }
    }
    (*off)[M] = n;
    *nnz = n;
}

static double relerr(const float *out, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)out[i] - ref[i];
        if (isnan(out[i]))
            return INFINITY;
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int failures;
static void report(const char *name, double err)
{
    int ok = err <= 1e-5;
    printf("sample_client: %-28s relerr %.3e %s\n", name, err, ok ? "OK" : "FAILED");
    failures += !ok;
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("sample_client: no CUDA device: skipped\n");
        return 77;
    }
    const int M = 4099, K = 4099, N = 64;
    int *hoff, *hcol, nnz;
    float *hval;
    make_matrix(M, K, &hoff, &hcol, &hval, &nnz);
    float *hB = malloc(sizeof(float) * (size_t)K * N), *hC = malloc(sizeof(float) * (size_t)M * N);
    for (size_t i = 0; i < (size_t)K * N; i++)
        hB[i] = (float)urand();
    /* reference of A * B, B given row-major (K x N) */
    double *ref = calloc((size_t)M * N, sizeof(double));
    for (int r = 0; r < M; r++)
        for (int p = hoff[r]; p < hoff[r + 1]; p++)
            for (int j = 0; j < N; j++)
                ref[(size_t)r * N + j] += (double)hval[p] * hB[(size_t)hcol[p] * N + j];

    int *doff, *dcol;
    float *dval, *dB, *dC, *dBt, *dCt;
    CHECK_CUDA(cudaMalloc((void **)&doff, sizeof(int) * (M + 1)));
    CHECK_CUDA(cudaMalloc((void **)&dcol, sizeof(int) * nnz));
    CHECK_CUDA(cudaMalloc((void **)&dval, sizeof(float) * nnz));
    CHECK_CUDA(cudaMalloc((void **)&dB, sizeof(float) * (size_t)K * N));
    CHECK_CUDA(cudaMalloc((void **)&dC, sizeof(float) * (size_t)M * N));
    CHECK_CUDA(cudaMalloc((void **)&dBt, sizeof(float) * (size_t)K * N));
    CHECK_CUDA(cudaMalloc((void **)&dCt, sizeof(float) * (size_t)M * N));
    CHECK_CUDA(cudaMemcpy(doff, hoff, sizeof(int) * (M + 1), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dcol, hcol, sizeof(int) * nnz, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dval, hval, sizeof(float) * nnz, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, hB, sizeof(float) * (size_t)K * N, cudaMemcpyHostToDevice));
    /* the same B column-major (K x N, ld K) */
    float *tmp = malloc(sizeof(float) * (size_t)K * N);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++)
            tmp[(size_t)j * K + k] = hB[(size_t)k * N + j];
    CHECK_CUDA(cudaMemcpy(dBt, tmp, sizeof(float) * (size_t)K * N, cudaMemcpyHostToDevice));

    cusparseHandle_t handle;
    cudaStream_t stream;
    CHECK_CUSPARSE(cusparseCreate(&handle));
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUSPARSE(cusparseSetStream(handle, stream));
    cusparseSpMatDescr_t matA;
    CHECK_CUSPARSE(cusparseCreateCsr(&matA, M, K, nnz, doff, dcol, dval, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    float alpha = 1.0f, beta = 0.0f;
    const cusparseOperation_t NT = CUSPARSE_OPERATION_NON_TRANSPOSE;

    /* 1. column-major B and C, ALG_DEFAULT */
    {
        cusparseDnMatDescr_t matB, matC;
        CHECK_CUSPARSE(cusparseCreateDnMat(&matB, K, N, K, dBt, CUDA_R_32F, CUSPARSE_ORDER_COL));
        CHECK_CUSPARSE(cusparseCreateDnMat(&matC, M, N, M, dCt, CUDA_R_32F, CUSPARSE_ORDER_COL));
        CHECK_CUDA(cudaMemsetAsync(dCt, 0xff, sizeof(float) * (size_t)M * N, stream));
        size_t bytes = 0;
        void *buf = NULL;
        CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &alpha, matA, matB, &beta, matC,
                                               CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &alpha, matA, matB, &beta, matC, CUDA_R_32F,
                                    CUSPARSE_SPMM_ALG_DEFAULT, buf));
        CHECK_CUDA(cudaMemcpyAsync(tmp, dCt, sizeof(float) * (size_t)M * N,
                                   cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (int r = 0; r < M; r++)
            for (int j = 0; j < N; j++)
                hC[(size_t)r * N + j] = tmp[(size_t)j * M + r];
        report("spmm col-major ALG_DEFAULT", relerr(hC, ref, (size_t)M * N));
        CHECK_CUDA(cudaFree(buf));
        CHECK_CUSPARSE(cusparseDestroyDnMat(matB));
        CHECK_CUSPARSE(cusparseDestroyDnMat(matC));
    }

    cusparseDnMatDescr_t matB, matC;
    CHECK_CUSPARSE(cusparseCreateDnMat(&matB, K, N, N, dB, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    CHECK_CUSPARSE(cusparseCreateDnMat(&matC, M, N, N, dC, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    /* 2. row-major, CSR_ALG2; 3. row-major, preprocess + CSR_ALG3 */
    for (int alg3 = 0; alg3 < 2; alg3++) {
        cusparseSpMMAlg_t alg = alg3 ? CUSPARSE_SPMM_CSR_ALG3 : CUSPARSE_SPMM_CSR_ALG2;
        size_t bytes = 0;
        void *buf = NULL;
        CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &alpha, matA, matB, &beta, matC,
                                               CUDA_R_32F, alg, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        if (alg3)
            CHECK_CUSPARSE(cusparseSpMM_preprocess(handle, NT, NT, &alpha, matA, matB, &beta,
                                                   matC, CUDA_R_32F, alg, buf));
        CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
        CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &alpha, matA, matB, &beta, matC, CUDA_R_32F,
                                    alg, buf));
        CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost,
                                   stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        report(alg3 ? "spmm row-major CSR_ALG3+pre" : "spmm row-major CSR_ALG2",
               relerr(hC, ref, (size_t)M * N));
        CHECK_CUDA(cudaFree(buf));
    }

    /* 3b. the transpose: C = A^T B (opA = TRANSPOSE, as a backward pass computes it), twice;
     * A is square, so B and C keep their descriptors */
    {
        double *reft = calloc((size_t)K * N, sizeof(double));
        for (int r = 0; r < M; r++)
            for (int p = hoff[r]; p < hoff[r + 1]; p++)
                for (int j = 0; j < N; j++)
                    reft[(size_t)hcol[p] * N + j] += (double)hval[p] * hB[(size_t)r * N + j];
        const cusparseOperation_t T = CUSPARSE_OPERATION_TRANSPOSE;
        for (int rep = 0; rep < 2; rep++) {
            size_t bytes = 0;
            void *buf = NULL;
            CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, T, NT, &alpha, matA, matB, &beta,
                                                   matC, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT,
                                                   &bytes));
            CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
            CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
            CHECK_CUSPARSE(cusparseSpMM(handle, T, NT, &alpha, matA, matB, &beta, matC,
                                        CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf));
            CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N,
                                       cudaMemcpyDeviceToHost, stream));
            CHECK_CUDA(cudaStreamSynchronize(stream));
            report("spmm transposed A", relerr(hC, reft, (size_t)K * N));
            CHECK_CUDA(cudaFree(buf));
        }
        free(reft);
    }

    /* 4. SpMM captured into a graph (the plan exists from the calls above), replayed with
     * alpha = 2 (host pointer mode: the value is read at capture time, as in cuSPARSE). */
    {
        size_t bytes = 0;
        void *buf = NULL;
        float two = 2.0f;
        CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &two, matA, matB, &beta, matC,
                                               CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &two, matA, matB, &beta, matC, CUDA_R_32F,
                                    CUSPARSE_SPMM_CSR_ALG2, buf));
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
        CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost,
                                   stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < (size_t)M * N; i++)
            hC[i] *= 0.5f;
        report("spmm row-major in a graph", relerr(hC, ref, (size_t)M * N));
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        CHECK_CUDA(cudaGraphDestroy(graph));
        CHECK_CUDA(cudaFree(buf));
    }

    /* 5. SDDMM: C = (X * Y) o spy(A), X row-major M x D, Y column-major D x K */
    {
        const int D = 32;
        float *hX = malloc(sizeof(float) * (size_t)M * D), *hY = malloc(sizeof(float) * (size_t)D * K);
        for (size_t i = 0; i < (size_t)M * D; i++)
            hX[i] = (float)urand();
        for (size_t i = 0; i < (size_t)D * K; i++)
            hY[i] = (float)urand(); /* column-major: Y[d, k] at k * D + d */
        double *sref = malloc(sizeof(double) * nnz);
        for (int r = 0; r < M; r++)
            for (int p = hoff[r]; p < hoff[r + 1]; p++) {
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += (double)hX[(size_t)r * D + d] * hY[(size_t)hcol[p] * D + d];
                sref[p] = s;
            }
        float *dX, *dY, *dS;
        CHECK_CUDA(cudaMalloc((void **)&dX, sizeof(float) * (size_t)M * D));
        CHECK_CUDA(cudaMalloc((void **)&dY, sizeof(float) * (size_t)D * K));
        CHECK_CUDA(cudaMalloc((void **)&dS, sizeof(float) * nnz));
        CHECK_CUDA(cudaMemcpy(dX, hX, sizeof(float) * (size_t)M * D, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(dY, hY, sizeof(float) * (size_t)D * K, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemset(dS, 0xff, sizeof(float) * nnz));
        cusparseSpMatDescr_t matS;
        cusparseDnMatDescr_t matX, matY;
        CHECK_CUSPARSE(cusparseCreateCsr(&matS, M, K, nnz, doff, dcol, dS, CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        CHECK_CUSPARSE(cusparseCreateDnMat(&matX, M, D, D, dX, CUDA_R_32F, CUSPARSE_ORDER_ROW));
        CHECK_CUSPARSE(cusparseCreateDnMat(&matY, D, K, D, dY, CUDA_R_32F, CUSPARSE_ORDER_COL));
        size_t bytes = 0;
        void *buf = NULL;
        CHECK_CUSPARSE(cusparseSDDMM_bufferSize(handle, NT, NT, &alpha, matX, matY, &beta, matS,
                                                CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        CHECK_CUSPARSE(cusparseSDDMM_preprocess(handle, NT, NT, &alpha, matX, matY, &beta, matS,
                                                CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buf));
        CHECK_CUSPARSE(cusparseSDDMM(handle, NT, NT, &alpha, matX, matY, &beta, matS, CUDA_R_32F,
                                     CUSPARSE_SDDMM_ALG_DEFAULT, buf));
        float *hS = malloc(sizeof(float) * nnz);
        CHECK_CUDA(cudaMemcpyAsync(hS, dS, sizeof(float) * nnz, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        report("sddmm X row / Y col-major", relerr(hS, sref, (size_t)nnz));
        CHECK_CUSPARSE(cusparseDestroySpMat(matS));
        CHECK_CUSPARSE(cusparseDestroyDnMat(matX));
        CHECK_CUSPARSE(cusparseDestroyDnMat(matY));
        cudaFree(buf);
        cudaFree(dX);
        cudaFree(dY);
        cudaFree(dS);
        free(hX);
        free(hY);
        free(hS);
        free(sref);
    }

    /* 6. a descriptor per product, as PyTorch does: a new descriptor over the same arrays
     * (the interposer may reuse the plan), then another matrix with the same sizes written
     * into the same arrays (a reused plan would give wrong results), then a new descriptor
     * over that matrix again. */
    CHECK_CUSPARSE(cusparseDestroySpMat(matA));
    static const char *const pass_name[3] = {"spmm new descr, same arrays",
                                             "spmm new descr, new matrix",
                                             "spmm new descr, new matrix again"};
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            /* same row lengths, other columns: each row's columns drawn again */
            for (int r = 0; r < M; r++) {
                int len = hoff[r + 1] - hoff[r], c = (int)((urand() + 1.0) * 0.5 * (K - len));
                for (int p = hoff[r]; p < hoff[r + 1]; p++)
                    hcol[p] = c++;
            }
            CHECK_CUDA(cudaMemcpy(dcol, hcol, sizeof(int) * nnz, cudaMemcpyHostToDevice));
            memset(ref, 0, sizeof(double) * (size_t)M * N);
            for (int r = 0; r < M; r++)
                for (int p = hoff[r]; p < hoff[r + 1]; p++)
                    for (int j = 0; j < N; j++)
                        ref[(size_t)r * N + j] += (double)hval[p] * hB[(size_t)hcol[p] * N + j];
        }
        CHECK_CUSPARSE(cusparseCreateCsr(&matA, M, K, nnz, doff, dcol, dval, CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                         CUDA_R_32F));
        size_t bytes = 0;
        void *buf = NULL;
        CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &alpha, matA, matB, &beta, matC,
                                               CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
        CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &alpha, matA, matB, &beta, matC, CUDA_R_32F,
                                    CUSPARSE_SPMM_CSR_ALG2, buf));
        CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost,
                                   stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        report(pass_name[pass], relerr(hC, ref, (size_t)M * N));
        CHECK_CUDA(cudaFree(buf));
        CHECK_CUSPARSE(cusparseDestroySpMat(matA));
    }

    /* 6b. the steady state of a descriptor-per-product program (create, buffer size, SpMM,
     * destroy), warmed up, then captured into a graph in global mode: a synchronisation or an
     * allocation anywhere on that path would invalidate the capture.  The markers on stderr
     * let the test read the interposer's log lines of the captured calls. */
    {
        void *buf = NULL;
        CHECK_CUDA(cudaMalloc(&buf, 1 << 20));
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        for (int phase = 0; phase < 2; phase++) {
            if (phase == 1) {
                fprintf(stderr, "sample_client: capture begins\n");
                CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
            }
            for (int it = 0; it < (phase ? 2 : 12); it++) {
                size_t bytes = 0;
                CHECK_CUSPARSE(cusparseCreateCsr(&matA, M, K, nnz, doff, dcol, dval,
                                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
                CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &alpha, matA, matB, &beta,
                                                       matC, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2,
                                                       &bytes));
                if (bytes > (1 << 20)) {
                    fprintf(stderr, "sample_client: cuSPARSE asks for %zu bytes\n", bytes);
                    return 1;
                }
                CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &alpha, matA, matB, &beta, matC,
                                            CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, buf));
                CHECK_CUSPARSE(cusparseDestroySpMat(matA));
            }
        }
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
        fprintf(stderr, "sample_client: capture ends\n");
        CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost,
                                   stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        report("spmm descr per call, captured", relerr(hC, ref, (size_t)M * N));
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        CHECK_CUDA(cudaGraphDestroy(graph));
        CHECK_CUDA(cudaFree(buf));
    }

    /* 7. a training loop: the same product 40 times on one descriptor, over a matrix whose
     * rows are shuffled 16-row groups sharing 16 columns (each row 12 of them), so that the
     * interposer's late ordering (docs/reorder.md) has something to gain; every result is
     * checked. */
    {
        int *goff = malloc(sizeof(int) * (M + 1)), *gcol = malloc(sizeof(int) * (size_t)M * 12);
        float *gval = malloc(sizeof(float) * (size_t)M * 12);
        int *perm = malloc(sizeof(int) * M), gn = 0;
        for (int r = 0; r < M; r++)
            perm[r] = r;
        for (int r = M - 1; r > 0; r--) {
            int j = (int)((urand() + 1.0) * 0.5 * (r + 1)) % (r + 1), t = perm[r];
            perm[r] = perm[j];
            perm[j] = t;
        }
        for (int r = 0; r < M; r++) {
            goff[r] = gn;
            int used[16] = {0}, k = 0, g0 = (perm[r] / 16) * 16;
            while (k < 12) {
                int c = (int)((urand() + 1.0) * 8.0) % 16;
                if (!used[c] && g0 + c < K) {
                    used[c] = 1;
                    k++;
                } else if (g0 + 12 > K) {
                    break; /* the last group is narrower */
                }
            }
            for (int c = 0; c < 16; c++)
                if (used[c]) {
                    gcol[gn] = g0 + c;
                    gval[gn++] = (float)urand();
                }
        }
        goff[M] = gn;
        memset(ref, 0, sizeof(double) * (size_t)M * N);
        for (int r = 0; r < M; r++)
            for (int p = goff[r]; p < goff[r + 1]; p++)
                for (int j = 0; j < N; j++)
                    ref[(size_t)r * N + j] += (double)gval[p] * hB[(size_t)gcol[p] * N + j];
        int *dgoff, *dgcol;
        float *dgval;
        CHECK_CUDA(cudaMalloc((void **)&dgoff, sizeof(int) * (M + 1)));
        CHECK_CUDA(cudaMalloc((void **)&dgcol, sizeof(int) * (gn ? gn : 1)));
        CHECK_CUDA(cudaMalloc((void **)&dgval, sizeof(float) * (gn ? gn : 1)));
        CHECK_CUDA(cudaMemcpy(dgoff, goff, sizeof(int) * (M + 1), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(dgcol, gcol, sizeof(int) * gn, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(dgval, gval, sizeof(float) * gn, cudaMemcpyHostToDevice));
        cusparseSpMatDescr_t matG;
        CHECK_CUSPARSE(cusparseCreateCsr(&matG, M, K, gn, dgoff, dgcol, dgval, CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                         CUDA_R_32F));
        size_t bytes = 0;
        void *buf = NULL;
        CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, NT, NT, &alpha, matG, matB, &beta, matC,
                                               CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes));
        CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
        double worst = 0;
        for (int it = 0; it < 40; it++) {
            CHECK_CUDA(cudaMemsetAsync(dC, 0xff, sizeof(float) * (size_t)M * N, stream));
            CHECK_CUSPARSE(cusparseSpMM(handle, NT, NT, &alpha, matG, matB, &beta, matC,
                                        CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf));
            CHECK_CUDA(cudaMemcpyAsync(hC, dC, sizeof(float) * (size_t)M * N,
                                       cudaMemcpyDeviceToHost, stream));
            CHECK_CUDA(cudaStreamSynchronize(stream));
            const double e = relerr(hC, ref, (size_t)M * N);
            worst = e > worst || isnan(e) ? e : worst;
        }
        report("spmm 40 times, one descr", worst);
        CHECK_CUSPARSE(cusparseDestroySpMat(matG));
        cudaFree(buf);
        cudaFree(dgoff);
        cudaFree(dgcol);
        cudaFree(dgval);
        free(goff);
        free(gcol);
        free(gval);
        free(perm);
    }

    CHECK_CUSPARSE(cusparseDestroyDnMat(matB));
    CHECK_CUSPARSE(cusparseDestroyDnMat(matC));
    CHECK_CUSPARSE(cusparseDestroy(handle));
    CHECK_CUDA(cudaStreamDestroy(stream));
    cudaFree(doff);
    cudaFree(dcol);
    cudaFree(dval);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(dBt);
    cudaFree(dCt);
    free(hoff);
    free(hcol);
    free(hval);
    free(hB);
    free(hC);
    free(tmp);
    free(ref);
    printf("sample_client: %s\n", failures ? "FAILED" : "all cases OK");
    return failures ? 1 : 0;
}
