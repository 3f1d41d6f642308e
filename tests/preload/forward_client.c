/* An ordinary cuSPARSE program (linked with -lcusparse, knows nothing of tcsparse) that needs
 * no GPU: descriptor calls, error strings, and intercepted calls given bad arguments.  It checks
 * each answer against what cuSPARSE documents, so it passes alone and must pass unchanged
 * under LD_PRELOAD=libtcsparse_preload.so (tests/preload/test-preload-cpu.sh): the interposer
 * forwards what it does not handle and passes bad arguments on to cuSPARSE's own checks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cusparse.h>

static int failures, checks;

#define EXPECT(cond, ...)                                          \
    do {                                                           \
        checks++;                                                  \
        if (!(cond)) {                                             \
            failures++;                                            \
            fprintf(stderr, "forward_client: FAILED %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                          \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

/* Threads creating, re-pointing and destroying their own descriptors and making intercepted
 * calls at once: the interposer's caches take one lock, and nothing may deadlock, crash or
 * answer differently from cuSPARSE. */
#define TC_THREADS 8
#define TC_ROUNDS 50
static void *tc_thread(void *arg)
{
    int32_t *arrays = arg; /* host arrays stand in for device pointers */
    float alpha = 1.0f, beta = 0.0f, dense[4];
    long bad = 0;
    for (int i = 0; i < TC_ROUNDS; i++) {
        cusparseSpMatDescr_t A = NULL;
        cusparseDnMatDescr_t B = NULL;
        if (cusparseCreateCsr(&A, 2, 2, 2, arrays, arrays + 3, dense, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                              CUDA_R_32F) != CUSPARSE_STATUS_SUCCESS ||
            cusparseCreateDnMat(&B, 2, 2, 2, dense, CUDA_R_32F, CUSPARSE_ORDER_ROW) !=
                CUSPARSE_STATUS_SUCCESS) {
            bad++;
            break;
        }
        size_t size = 0;
        bad += cusparseSpMM_bufferSize(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, B,
                                       CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT,
                                       &size) != CUSPARSE_STATUS_INVALID_VALUE;
        bad += cusparseSpMM(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                            CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, B, CUDA_R_32F,
                            CUSPARSE_SPMM_ALG_DEFAULT, NULL) != CUSPARSE_STATUS_INVALID_VALUE;
        bad += cusparseCsrSetPointers(A, arrays + 1, arrays + 3, dense) != CUSPARSE_STATUS_SUCCESS;
        bad += cusparseDestroyDnMat(B) != CUSPARSE_STATUS_SUCCESS;
        bad += cusparseDestroySpMat(A) != CUSPARSE_STATUS_SUCCESS;
    }
    return (void *)bad;
}

int main(void)
{
    /* Host arrays stand in for device pointers: descriptor calls only store them. */
    static int32_t off[5] = {0, 1, 2, 3, 4}, col[4] = {0, 1, 2, 3}, off2[5], col2[4];
    static float val[4] = {1, 2, 3, 4}, val2[4], dense[16];
    cusparseSpMatDescr_t A = NULL;
    cusparseDnMatDescr_t B = NULL, C = NULL;
    cusparseStatus_t st;

    EXPECT(strcmp(cusparseGetErrorName(CUSPARSE_STATUS_NOT_SUPPORTED),
                  "CUSPARSE_STATUS_NOT_SUPPORTED") == 0,
           "%s", cusparseGetErrorName(CUSPARSE_STATUS_NOT_SUPPORTED));

    st = cusparseCreateCsr(&A, 4, 4, 4, off, col, val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseCreateCsr: %d", (int)st);
    st = cusparseCreateDnMat(&B, 4, 4, 4, dense, CUDA_R_32F, CUSPARSE_ORDER_ROW);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseCreateDnMat B: %d", (int)st);
    st = cusparseCreateDnMat(&C, 4, 4, 4, dense, CUDA_R_32F, CUSPARSE_ORDER_ROW);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseCreateDnMat C: %d", (int)st);

    int64_t rows = 0, cols = 0, nnz = 0;
    st = cusparseSpMatGetSize(A, &rows, &cols, &nnz);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS && rows == 4 && cols == 4 && nnz == 4,
           "cusparseSpMatGetSize: %d %lld %lld %lld", (int)st, (long long)rows, (long long)cols,
           (long long)nnz);

    /* intercepted descriptor calls reach cuSPARSE */
    st = cusparseCsrSetPointers(A, off2, col2, val2);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseCsrSetPointers: %d", (int)st);
    void *o, *c, *v;
    cusparseIndexType_t ot, it;
    cusparseIndexBase_t base;
    cudaDataType t;
    st = cusparseCsrGet(A, &rows, &cols, &nnz, &o, &c, &v, &ot, &it, &base, &t);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS && o == (void *)off2 && c == (void *)col2 &&
               v == (void *)val2,
           "cusparseCsrGet after set pointers: %d", (int)st);
    st = cusparseSpMatSetValues(A, val);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseSpMatSetValues: %d", (int)st);
    st = cusparseSpMatGetValues(A, &v);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS && v == (void *)val, "cusparseSpMatGetValues: %d",
           (int)st);
    st = cusparseCsrSetStridedBatch(A, 1, 0, 0);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseCsrSetStridedBatch: %d", (int)st);

    /* intercepted computations with a NULL handle: cuSPARSE's own answer */
    float alpha = 1.0f, beta = 0.0f;
    size_t size = 12345;
    st = cusparseSpMM_bufferSize(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C,
                                 CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &size);
    EXPECT(st == CUSPARSE_STATUS_INVALID_VALUE, "cusparseSpMM_bufferSize(NULL handle): %d",
           (int)st);
    st = cusparseSpMM(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                      &alpha, A, B, &beta, C, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, NULL);
    EXPECT(st == CUSPARSE_STATUS_INVALID_VALUE, "cusparseSpMM(NULL handle): %d", (int)st);
    st = cusparseSpMM_preprocess(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C,
                                 CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG3, NULL);
    EXPECT(st == CUSPARSE_STATUS_INVALID_VALUE, "cusparseSpMM_preprocess(NULL handle): %d",
           (int)st);
    st = cusparseSDDMM_bufferSize(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, B, C, &beta, A,
                                  CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &size);
    EXPECT(st == CUSPARSE_STATUS_INVALID_VALUE, "cusparseSDDMM_bufferSize(NULL handle): %d",
           (int)st);
    st = cusparseSDDMM(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                       &alpha, B, C, &beta, A, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, NULL);
    EXPECT(st == CUSPARSE_STATUS_INVALID_VALUE, "cusparseSDDMM(NULL handle): %d", (int)st);

    /* a handle: without a GPU cuSPARSE refuses to create one; with one, it is destroyed
     * through the interposer */
    cusparseHandle_t h = NULL;
    st = cusparseCreate(&h);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS || st == CUSPARSE_STATUS_NOT_INITIALIZED,
           "cusparseCreate: %d", (int)st);
    if (st == CUSPARSE_STATUS_SUCCESS) {
        st = cusparseDestroy(h);
        EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseDestroy: %d", (int)st);
    }

    {
        static int32_t arrays[TC_THREADS][8];
        pthread_t t[TC_THREADS];
        int started = 0;
        long bad = 0;
        for (int i = 0; i < TC_THREADS; i++) {
            arrays[i][0] = 0, arrays[i][1] = 1, arrays[i][2] = 2;
            started += pthread_create(&t[started], NULL, tc_thread, arrays[i]) == 0;
        }
        for (int i = 0; i < started; i++) {
            void *r = NULL;
            pthread_join(t[i], &r);
            bad += (long)r;
        }
        EXPECT(started == TC_THREADS && bad == 0,
               "%d threads of %d started, %ld wrong answers", started, TC_THREADS, bad);
    }

    /* a forked child: the interposer passes everything through there (its log says so) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cusparseStatus_t cs = cusparseSpMM(NULL, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta,
                                           C, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, NULL);
        _exit(cs == CUSPARSE_STATUS_INVALID_VALUE ? 0 : 1);
    }
    int wst = 0;
    EXPECT(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
           "forked child's cusparseSpMM(NULL handle)");

    st = cusparseDestroyDnMat(B);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseDestroyDnMat: %d", (int)st);
    st = cusparseDestroyDnMat(C);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseDestroyDnMat: %d", (int)st);
    st = cusparseDestroySpMat(A);
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseDestroySpMat: %d", (int)st);
    st = cusparseDestroySpMat(NULL); /* cuSPARSE accepts a NULL descriptor */
    EXPECT(st == CUSPARSE_STATUS_SUCCESS, "cusparseDestroySpMat(NULL): %d", (int)st);

    printf("forward_client: %d of %d checks passed\n", checks - failures, checks);
    return failures == 0 ? 0 : 1;
}
