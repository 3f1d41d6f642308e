/* preload_hostcost: the host time a program's cuSPARSE SpMM call costs under
 * LD_PRELOAD=libtcsparse_preload.so over the real cuSPARSE, measured in one process
 * (docs/preload.md, "Host cost").
 *
 * A plain cuSPARSE program (it links cuSPARSE only): a cora-sized matrix (2708 rows, 4
 * nonzeros a row by default), N = 32, row-major B and C, CSR_ALG2 as PyTorch asks.  Each call
 * is made two ways, alternately: through the ordinary names (the interposer's, when it is
 * preloaded) and through the real cuSPARSE's own functions, found in libcusparse with dlsym
 * on its handle.  Two forms of call, each timed on the host (clock around the calls, the GPU
 * idle before them), median of R calls of each way after a warm-up:
 *   same:  cusparseSpMM on one descriptor, kept;
 *   fresh: what PyTorch does for every product: cusparseCreateCsr, cusparseSpMM_bufferSize,
 *          cusparseSpMM, cusparseDestroySpMat.
 * Without the interposer both ways are the same functions: their difference is the noise.
 * Usage: preload_hostcost [rows [nnz_per_row [N [col]]]]; "col" makes B and C column-major
 * (a case tcsparse's route leaves to cuSPARSE).
 * Build:
 *   gcc -O2 -DDISABLE_CUSPARSE_DEPRECATED -o preload_hostcost bench/preload_hostcost.c \
 *       -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcusparse -lcudart -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#define R 2000
#define WARM 200

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(x)                                                                             \
    do {                                                                                     \
        if ((x) != 0) {                                                                      \
            fprintf(stderr, "preload_hostcost: %s failed at line %d\n", #x, __LINE__);       \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    const int rows = argc > 1 ? atoi(argv[1]) : 2708, per = argc > 2 ? atoi(argv[2]) : 4;
    const int N = argc > 3 ? atoi(argv[3]) : 32;
    const int colmajor = argc > 4 && argv[4][0] == 'c';
    if (rows < 64 || per < 1 || per > rows || N < 1) {
        fprintf(stderr, "usage: preload_hostcost [rows >= 64 [nnz_per_row [N [col]]]]\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "preload_hostcost: no CUDA device\n");
        return 77;
    }
    const int nnz = rows * per;
    int *off = malloc(sizeof(int) * (rows + 1)), *col = malloc(sizeof(int) * nnz);
    float *val = malloc(sizeof(float) * nnz);
    srand(1);
    for (int r = 0; r <= rows; r++)
        off[r] = r * per;
    for (int r = 0; r < rows; r++) /* per distinct columns in a band */
        for (int j = 0, c = rand() % (rows - per); j < per; j++)
            col[r * per + j] = c + j;
    for (int i = 0; i < nnz; i++)
        val[i] = (float)rand() / RAND_MAX;
    int *doff, *dcol;
    float *dval, *dB, *dC;
    void *buf;
    CHECK(cudaMalloc((void **)&doff, sizeof(int) * (rows + 1)));
    CHECK(cudaMalloc((void **)&dcol, sizeof(int) * nnz));
    CHECK(cudaMalloc((void **)&dval, sizeof(float) * nnz));
    CHECK(cudaMalloc((void **)&dB, sizeof(float) * rows * N));
    CHECK(cudaMalloc((void **)&dC, sizeof(float) * rows * N));
    CHECK(cudaMalloc(&buf, 1 << 24));
    CHECK(cudaMemcpy(doff, off, sizeof(int) * (rows + 1), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dcol, col, sizeof(int) * nnz, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dval, val, sizeof(float) * nnz, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dB, 0, sizeof(float) * rows * N));
    cusparseHandle_t h;
    cusparseDnMatDescr_t B, C;
    CHECK(cusparseCreate(&h));
    const cusparseOrder_t order = colmajor ? CUSPARSE_ORDER_COL : CUSPARSE_ORDER_ROW;
    const int64_t ld = colmajor ? rows : N;
    CHECK(cusparseCreateDnMat(&B, rows, N, ld, dB, CUDA_R_32F, order));
    CHECK(cusparseCreateDnMat(&C, rows, N, ld, dC, CUDA_R_32F, order));
    const float alpha = 1.0f, beta = 0.0f;
    const cusparseOperation_t NT = CUSPARSE_OPERATION_NON_TRANSPOSE;
    const cusparseSpMMAlg_t alg = colmajor ? CUSPARSE_SPMM_ALG_DEFAULT : CUSPARSE_SPMM_CSR_ALG2;
    /* the real cuSPARSE's own functions, past any interposer */
    void *lib = dlopen("libcusparse.so.12", RTLD_LAZY | RTLD_NOLOAD);
    __typeof__(cusparseSpMM) *real_spmm = lib ? dlsym(lib, "cusparseSpMM") : NULL;
    __typeof__(cusparseSpMM_bufferSize) *real_size = lib ? dlsym(lib, "cusparseSpMM_bufferSize") : NULL;
    __typeof__(cusparseDestroySpMat) *real_destroy = lib ? dlsym(lib, "cusparseDestroySpMat") : NULL;
    if (real_spmm == NULL || real_size == NULL || real_destroy == NULL) {
        fprintf(stderr, "preload_hostcost: libcusparse.so.12's own functions not found\n");
        return 1;
    }
    static double t[2][R];
    for (int form = 0; form < 2; form++) {
        cusparseSpMatDescr_t A = NULL;
        if (form == 0)
            CHECK(cusparseCreateCsr(&A, rows, rows, nnz, doff, dcol, dval, CUSPARSE_INDEX_32I,
                                    CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        for (int i = -WARM; i < R; i++)
            for (int way = 0; way < 2; way++) { /* 0: the ordinary names; 1: the real ones */
                CHECK(cudaDeviceSynchronize());
                const double t0 = now_us();
                if (form == 1) {
                    size_t bytes = 0;
                    CHECK(cusparseCreateCsr(&A, rows, rows, nnz, doff, dcol, dval,
                                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                            CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
                    CHECK((way ? real_size : cusparseSpMM_bufferSize)(
                        h, NT, NT, &alpha, A, B, &beta, C, CUDA_R_32F, alg, &bytes));
                    if (bytes > (1 << 24))
                        return fprintf(stderr, "preload_hostcost: %zu buffer bytes\n", bytes), 1;
                }
                CHECK((way ? real_spmm : cusparseSpMM)(h, NT, NT, &alpha, A, B, &beta, C,
                                                       CUDA_R_32F, alg, buf));
                if (form == 1)
                    CHECK((way ? real_destroy : cusparseDestroySpMat)(A));
                const double t1 = now_us();
                if (i >= 0)
                    t[way][i] = t1 - t0;
            }
        if (form == 0)
            CHECK(cusparseDestroySpMat(A));
        qsort(t[0], R, sizeof t[0][0], cmp);
        qsort(t[1], R, sizeof t[1][0], cmp);
        printf("%-6s host us/call, median [p10-p90]: ordinary names %.2f [%.2f-%.2f], real "
               "cuSPARSE %.2f [%.2f-%.2f], difference %+.2f\n",
               form ? "fresh" : "same", t[0][R / 2], t[0][R / 10], t[0][R * 9 / 10], t[1][R / 2],
               t[1][R / 10], t[1][R * 9 / 10], t[0][R / 2] - t[1][R / 2]);
    }
    cusparseDestroyDnMat(B);
    cusparseDestroyDnMat(C);
    cusparseDestroy(h);
    return 0;
}
