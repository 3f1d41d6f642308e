/* The device-side guard (tc_hook_spmat_guard, include/tcsparse_hook.h): a tensor-core SpMM on
 * an armed descriptor checks on the device that the structure arrays still hold the plan's
 * structure, and computes from the arrays where they do not.  Every result is checked against
 * the CPU reference in double over the structure the arrays hold at the call: the plan's
 * (tensor cores), and another one written into the same arrays (the fallback), for 32- and
 * 64-bit indices, FP32 / 3xTF32 and BF16, the base and balanced kernels, beta = 0 over a C
 * full of NaN and beta != 0, host and device scalars; the trip word; a capture in global mode
 * (no synchronisation, no allocation on a guarded execution); one descriptor on two streams.
 * The CUDA-core path checks the row offsets alone: other columns under the same offsets are
 * computed by its kernel without a trip, other row lengths trip. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "tcsparse_hook.h"
#include "gen.h"
#include "testutil.h"
#include "gpu_test.h"

static uint64_t seed = 777;
static double urand(void) { return tc_test_rand_uniform(&seed); }

typedef struct {
    int64_t M, K, N, nnz; /* the CSR matrix is M x K */
    int is64;
    int trans;      /* the products are A^T B (opA = TRANSPOSE): B has M rows, C K */
    cudaDataType t;
    int64_t *off;   /* host, rows + 1 */
    int32_t *col;   /* host, nnz */
    void *h_val, *h_B, *h_C0; /* host in type t */
    void *d_off, *d_col, *d_val, *d_B, *d_C;
} gcase;

/* Rows of the given lengths, columns drawn at random (sorted, distinct). */
static void draw_columns(gcase *g)
{
    for (int64_t r = 0; r < g->M; r++) {
        const int64_t len = g->off[r + 1] - g->off[r];
        int64_t c = (int64_t)((urand() + 1.0) * 0.5 * (double)(g->K - len));
        for (int64_t p = g->off[r]; p < g->off[r + 1]; p++) {
            g->col[p] = (int32_t)c;
            c += 1 + (urand() > 0.6 && c + 2 + (g->off[r + 1] - p) < g->K);
        }
    }
}

static void upload_structure(gcase *g)
{
    const size_t is = g->is64 ? 8 : 4;
    void *ho = malloc(is * (size_t)(g->M + 1)), *hc = malloc(is * (size_t)g->nnz);
    for (int64_t r = 0; r <= g->M; r++)
        put_index(ho, (size_t)r, g->is64, g->off[r]);
    for (int64_t p = 0; p < g->nnz; p++)
        put_index(hc, (size_t)p, g->is64, g->col[p]);
    cr_assert_eq(cudaMemcpy(g->d_off, ho, is * (size_t)(g->M + 1), cudaMemcpyHostToDevice),
                 cudaSuccess);
    cr_assert_eq(cudaMemcpy(g->d_col, hc, is * (size_t)g->nnz, cudaMemcpyHostToDevice),
                 cudaSuccess);
    free(ho);
    free(hc);
}

static int64_t b_rows(const gcase *g) { return g->trans ? g->M : g->K; }
static int64_t c_rows(const gcase *g) { return g->trans ? g->K : g->M; }

static void make_case(gcase *g, int64_t M, int64_t K, int64_t N, int is64, cudaDataType t,
                      int trans)
{
    memset(g, 0, sizeof *g);
    g->M = M, g->K = K, g->N = N, g->is64 = is64, g->t = t, g->trans = trans;
    const int64_t BR = b_rows(g), CR = c_rows(g);
    g->off = malloc(sizeof(int64_t) * (size_t)(M + 1));
    g->off[0] = 0;
    for (int64_t r = 0; r < M; r++) /* rows of 0 to 40 entries, a few long ones */
        g->off[r + 1] = g->off[r] + (r % 97 == 5 ? 300 : (int64_t)((urand() + 1.0) * 20.0));
    g->nnz = g->off[M];
    g->col = malloc(sizeof(int32_t) * (size_t)g->nnz);
    draw_columns(g);
    const size_t es = esize(t);
    g->h_val = malloc(es * (size_t)g->nnz);
    g->h_B = malloc(es * (size_t)(BR * N));
    g->h_C0 = malloc(es * (size_t)(CR * N));
    for (int64_t i = 0; i < g->nnz; i++)
        put(g->h_val, (size_t)i, t, urand());
    for (int64_t i = 0; i < BR * N; i++)
        put(g->h_B, (size_t)i, t, urand());
    for (int64_t i = 0; i < CR * N; i++)
        put(g->h_C0, (size_t)i, t, urand());
    const size_t is = is64 ? 8 : 4;
    cr_assert_eq(cudaMalloc(&g->d_off, is * (size_t)(M + 1)), cudaSuccess);
    cr_assert_eq(cudaMalloc(&g->d_col, is * (size_t)g->nnz), cudaSuccess);
    upload_structure(g);
    g->d_val = to_device(g->h_val, es * (size_t)g->nnz);
    g->d_B = to_device(g->h_B, es * (size_t)(BR * N));
    cr_assert_eq(cudaMalloc(&g->d_C, es * (size_t)(CR * N)), cudaSuccess);
}

static void free_case(gcase *g)
{
    cudaFree(g->d_off), cudaFree(g->d_col), cudaFree(g->d_val), cudaFree(g->d_B);
    cudaFree(g->d_C);
    free(g->off), free(g->col), free(g->h_val), free(g->h_B), free(g->h_C0);
}

/* C before the call: the case's C0, or NaN everywhere (beta = 0 must not read it). */
static void reset_c(const gcase *g, int nan_c)
{
    const size_t bytes = esize(g->t) * (size_t)(c_rows(g) * g->N);
    if (nan_c)
        cr_assert_eq(cudaMemset(g->d_C, 0xff, bytes), cudaSuccess);
    else
        cr_assert_eq(cudaMemcpy(g->d_C, g->h_C0, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

/* ||C - (alpha op(A) B + beta C0)|| / ||ref|| over the structure the host arrays hold now. */
static double check_c(const gcase *g, double alpha, double beta)
{
    const size_t es = esize(g->t), n = (size_t)(c_rows(g) * g->N);
    void *hc = malloc(es * n);
    cr_assert_eq(cudaMemcpy(hc, g->d_C, es * n, cudaMemcpyDeviceToHost), cudaSuccess);
    double num = 0, den = 0;
    double *acc = calloc(n, sizeof *acc);
    for (int64_t r = 0; r < g->M; r++)
        for (int64_t p = g->off[r]; p < g->off[r + 1]; p++) {
            const double v = get(g->h_val, (size_t)p, g->t);
            const int64_t crow = g->trans ? g->col[p] : r, brow = g->trans ? r : g->col[p];
            for (int64_t j = 0; j < g->N; j++)
                acc[crow * g->N + j] += v * get(g->h_B, (size_t)(brow * g->N + j), g->t);
        }
    for (size_t i = 0; i < n; i++) {
        const double ref = alpha * acc[i] + (beta != 0 ? beta * get(g->h_C0, i, g->t) : 0);
        const double out = get(hc, i, g->t);
        if (!isfinite(out)) {
            free(hc), free(acc);
            return INFINITY;
        }
        num += (out - ref) * (out - ref);
        den += ref * ref;
    }
    free(hc), free(acc);
    return sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
}

static tcsparseSpMatDescr_t make_descr(const gcase *g)
{
    tcsparseSpMatDescr_t A;
    const tcsparseIndexType_t it = g->is64 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    cr_assert_eq(tcsparseCreateCsr(&A, g->M, g->K, g->nnz, g->d_off, g->d_col, g->d_val, it, it,
                                   TCSPARSE_INDEX_BASE_ZERO, g->t),
                 TCSPARSE_STATUS_SUCCESS);
    return A;
}

/* One SpMM (op(A) B, g->trans) with host or device scalars; returns the kernel the route
 * names and, in *path, its path. */
static void spmm_path(tcsparseHandle_t h, const gcase *g, tcsparseSpMatDescr_t A, float alpha,
                      float beta, int dev_scalars, char *kernel, size_t kn, tcsparsePath_t *path)
{
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreateDnMat(&B, b_rows(g), g->N, g->N, g->d_B, g->t, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&C, c_rows(g), g->N, g->N, g->d_C, g->t, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    float *ds = NULL;
    const void *pa = &alpha, *pb = &beta;
    if (dev_scalars) {
        float s[2] = {alpha, beta};
        ds = to_device(s, sizeof s);
        pa = ds, pb = ds + 1;
        cr_assert_eq(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_DEVICE),
                     TCSPARSE_STATUS_SUCCESS);
    }
    const tcsparseOperation_t NT = TCSPARSE_OPERATION_NON_TRANSPOSE;
    const tcsparseOperation_t opA = g->trans ? TCSPARSE_OPERATION_TRANSPOSE : NT;
    size_t bsz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSpMM_bufferSize(h, opA, NT, pa, A, B, pb, C, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &bsz),
                 TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    cr_assert_eq(tcsparseSpMM(h, opA, NT, pa, A, B, pb, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT,
                              buf),
                 TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(buf);
    tcsparseRouteInfo_t info;
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    snprintf(kernel, kn, "%s", info.kernel);
    *path = info.path;
    if (ds != NULL) {
        cr_assert_eq(tcsparseSetPointerMode(h, TCSPARSE_POINTER_MODE_HOST),
                     TCSPARSE_STATUS_SUCCESS);
        cudaFree(ds);
    }
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
}

/* spmm_path on the forced tensor-core route, which must have run the tensor cores. */
static void spmm(tcsparseHandle_t h, const gcase *g, tcsparseSpMatDescr_t A, float alpha,
                 float beta, int dev_scalars, char *kernel, size_t kn)
{
    tcsparsePath_t path;
    spmm_path(h, g, A, alpha, beta, dev_scalars, kernel, kn, &path);
    cr_expect_neq(path, TCSPARSE_PATH_CUSPARSE, "the forced route ran cuSPARSE (%s)", kernel);
}

static int tripped(tcsparseSpMatDescr_t A)
{
    int t = -1;
    cr_assert_eq(tc_hook_spmat_guard_tripped(A, &t), TCSPARSE_STATUS_SUCCESS);
    return t;
}

/* Products over the structure the arrays hold now (the plan's or not), both scalar kinds,
 * beta != 0 and beta = 0 over a C full of NaN, each within the bound. */
static void products_now(tcsparseHandle_t h, const gcase *g, tcsparseSpMatDescr_t A,
                         double bound, const char *what)
{
    char kernel[64];
    for (int dev = 0; dev < 2; dev++) {
        reset_c(g, 0);
        spmm(h, g, A, 1.5f, 0.5f, dev, kernel, sizeof kernel);
        double e = check_c(g, 1.5, 0.5);
        cr_expect_leq(e, bound, "%s, %s, %s scalars: relerr %g", what, kernel,
                      dev ? "device" : "host", e);
        reset_c(g, 1);
        spmm(h, g, A, 1.0f, 0.0f, dev, kernel, sizeof kernel);
        e = check_c(g, 1.0, 0.0);
        cr_expect_leq(e, bound, "%s, beta 0 over NaN, %s: relerr %g", what, kernel, e);
    }
}

/* The plan's structure (tensor cores behind a passing check), then another structure in the
 * same arrays (the check fails: the fallback computes it), for one configuration.  The
 * CUDA-core path depends on the row offsets alone (its row schedule) and reads the columns
 * as they are: there other columns under the same offsets pass its check and are computed
 * by the kernel itself, and other row lengths fail it. */
static void guard_round(int is64, cudaDataType t, tcsparseRoute_t route, int math_tf32,
                        int trans)
{
    gcase g;
    make_case(&g, 3001, 2500, 72, is64, t, trans);
    const double bound = t == CUDA_R_32F ? (math_tf32 ? 5e-3 : 1e-5) : 2e-2;
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseSetRoute(h, route), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseSetMathMode(h, math_tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT),
                 TCSPARSE_STATUS_SUCCESS);
    tcsparseSpMatDescr_t A = make_descr(&g);
    char kernel[64];
    reset_c(&g, 0);
    spmm(h, &g, A, 1.0f, 0.5f, 0, kernel, sizeof kernel); /* builds the plan */
    cr_expect_leq(check_c(&g, 1.0, 0.5), bound, "unguarded %s", kernel);
    uint64_t fp;
    cr_assert_eq(tc_hook_spmat_fingerprint(A, 0, &fp), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tc_hook_spmat_guard(A, 1, fp), TCSPARSE_STATUS_SUCCESS, "%s",
                 tcsparseGetLastErrorMessage());
    products_now(h, &g, A, bound, "guard passes");
    cr_expect_eq(tripped(A), 0, "a passing check raised the trip word");
    /* the fallback and the CUDA-core kernel accumulate in FP32 from the caller's values */
    const double fp32_bound = t == CUDA_R_32F ? 1e-5 : 2e-2;
    const int cuda_core = route == TCSPARSE_ROUTE_CUDA_CORE;
    /* another structure, same row lengths, written into the same arrays */
    draw_columns(&g);
    upload_structure(&g);
    products_now(h, &g, A, fp32_bound, "other columns");
    cr_expect_eq(tripped(A), !cuda_core, "other columns under the same offsets: trip word %d",
                 tripped(A));
    if (cuda_core) { /* other row lengths: 10 entries of the long row 5 move to row 6 */
        g.off[6] -= 10;
        draw_columns(&g);
        upload_structure(&g);
        products_now(h, &g, A, fp32_bound, "other row lengths");
        cr_expect_eq(tripped(A), 1, "other row offsets did not raise the trip word");
    }
    /* disarmed: a setter announcing the rewrite drops the plan, and the next plan is right */
    cr_assert_eq(tc_hook_spmat_guard(A, 0, 0), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCsrSetPointers(A, g.d_off, g.d_col, g.d_val), TCSPARSE_STATUS_SUCCESS);
    reset_c(&g, 0);
    spmm(h, &g, A, 1.0f, 0.5f, 0, kernel, sizeof kernel);
    cr_expect_leq(check_c(&g, 1.0, 0.5), bound, "new plan after the rewrite");
    tcsparseDestroySpMat(A);
    tcsparseDestroy(h);
    free_case(&g);
}

Test(gpu_guard, fp32_base_32bit)
{
    TC_REQUIRE_GPU();
    guard_round(0, CUDA_R_32F, TCSPARSE_ROUTE_TC_BASE, 0, 0);
}

Test(gpu_guard, fp32_balanced_64bit)
{
    TC_REQUIRE_GPU();
    guard_round(1, CUDA_R_32F, TCSPARSE_ROUTE_TC_BALANCED, 0, 0);
}

Test(gpu_guard, tf32_base_64bit)
{
    TC_REQUIRE_GPU();
    guard_round(1, CUDA_R_32F, TCSPARSE_ROUTE_TC_BASE, 1, 0);
}

Test(gpu_guard, bf16_balanced_32bit)
{
    TC_REQUIRE_GPU();
    guard_round(0, CUDA_R_16BF, TCSPARSE_ROUTE_TC_BALANCED, 0, 0);
}

/* The CUDA-core path (its schedule hangs off the plan) behind the same check. */
Test(gpu_guard, cuda_core_fp32_32bit)
{
    TC_REQUIRE_GPU();
    guard_round(0, CUDA_R_32F, TCSPARSE_ROUTE_CUDA_CORE, 0, 0);
}

Test(gpu_guard, cuda_core_bf16_64bit)
{
    TC_REQUIRE_GPU();
    guard_round(1, CUDA_R_16BF, TCSPARSE_ROUTE_CUDA_CORE, 0, 0);
}

/* Armed with a fingerprint that is not the last one computed on the arrays, the CUDA-core
 * path does not know the offsets' own fingerprint and checks both arrays: other columns under
 * the same offsets then trip and are computed by the fallback. */
Test(gpu_guard, cuda_core_full_check_without_offsets_fingerprint)
{
    TC_REQUIRE_GPU();
    gcase g;
    make_case(&g, 3001, 2500, 72, 0, CUDA_R_32F, 0);
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseSetRoute(h, TCSPARSE_ROUTE_CUDA_CORE), TCSPARSE_STATUS_SUCCESS);
    tcsparseSpMatDescr_t A = make_descr(&g);
    products_now(h, &g, A, 1e-5, "unguarded"); /* builds the plan and its schedule */
    uint64_t fp, fp2;
    cr_assert_eq(tc_hook_spmat_fingerprint(A, 0, &fp), TCSPARSE_STATUS_SUCCESS);
    draw_columns(&g);
    upload_structure(&g);
    cr_assert_eq(tc_hook_spmat_fingerprint(A, 0, &fp2), TCSPARSE_STATUS_SUCCESS);
    cr_assert_neq(fp, fp2, "other columns gave the same fingerprint");
    cr_assert_eq(tc_hook_spmat_guard(A, 1, fp), TCSPARSE_STATUS_SUCCESS, "%s",
                 tcsparseGetLastErrorMessage());
    products_now(h, &g, A, 1e-5, "other columns, full check");
    cr_expect_eq(tripped(A), 1, "the full check did not find the other columns");
    tcsparseDestroySpMat(A);
    tcsparseDestroy(h);
    free_case(&g);
}

/* opA = TRANSPOSE: the transposed view's plan behind the same check; on a mismatch the
 * fallback adds each nonzero's product into C (C scaled by beta first). */
Test(gpu_guard, transposed_fp32_balanced)
{
    TC_REQUIRE_GPU();
    guard_round(0, CUDA_R_32F, TCSPARSE_ROUTE_TC_BALANCED, 0, 1);
}

Test(gpu_guard, transposed_tf32_base_64bit)
{
    TC_REQUIRE_GPU();
    guard_round(1, CUDA_R_32F, TCSPARSE_ROUTE_TC_BASE, 1, 1);
}

/* Plans built while a guard is armed must be of the guarded structure: a transposed view
 * planned first while the arrays hold another structure is refused (cuSPARSE computes the
 * call from the arrays, and the trip word rises); a guarded transposed product with 16-bit C
 * goes to cuSPARSE (the fallback's atomic 16-bit sums would lose the terms of long
 * columns). */
Test(gpu_guard, transposed_plan_built_under_guard)
{
    TC_REQUIRE_GPU();
    for (int bf16 = 0; bf16 < 2; bf16++) {
        gcase g;
        const cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
        make_case(&g, 1500, 1700, 40, 0, t, 0);
        tcsparseHandle_t h;
        cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE), TCSPARSE_STATUS_SUCCESS);
        tcsparseSpMatDescr_t A = make_descr(&g);
        char kernel[64];
        tcsparsePath_t path;
        reset_c(&g, 0);
        spmm(h, &g, A, 1.0f, 0.5f, 0, kernel, sizeof kernel); /* A's plan only */
        uint64_t fp;
        cr_assert_eq(tc_hook_spmat_fingerprint(A, 0, &fp), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(tc_hook_spmat_guard(A, 1, fp), TCSPARSE_STATUS_SUCCESS);
        gcase gt = g; /* the same arrays (host and device), products with the transpose */
        gt.trans = 1;
        gt.N = 40;
        cr_assert_eq(cudaMalloc(&gt.d_B, esize(t) * (size_t)(g.M * 40)), cudaSuccess);
        cr_assert_eq(cudaMalloc(&gt.d_C, esize(t) * (size_t)(g.K * 40)), cudaSuccess);
        gt.h_B = malloc(esize(t) * (size_t)(g.M * 40));
        gt.h_C0 = malloc(esize(t) * (size_t)(g.K * 40));
        for (int64_t i = 0; i < g.M * 40; i++)
            put(gt.h_B, (size_t)i, t, urand());
        for (int64_t i = 0; i < g.K * 40; i++)
            put(gt.h_C0, (size_t)i, t, urand());
        cr_assert_eq(cudaMemcpy(gt.d_B, gt.h_B, esize(t) * (size_t)(g.M * 40),
                                cudaMemcpyHostToDevice), cudaSuccess);
        if (bf16) { /* the structure unchanged: still cuSPARSE, for the type */
            reset_c(&gt, 0);
            spmm_path(h, &gt, A, 1.0f, 0.5f, 0, kernel, sizeof kernel, &path);
            cr_expect_eq(path, TCSPARSE_PATH_CUSPARSE, "BF16 transposed, guarded: %s", kernel);
            cr_expect_leq(check_c(&gt, 1.0, 0.5), 2e-2, "BF16 transposed by cuSPARSE");
        }
        draw_columns(&g); /* another structure in the same arrays */
        upload_structure(&g);
        reset_c(&gt, 0);
        spmm_path(h, &gt, A, 1.0f, 0.5f, 0, kernel, sizeof kernel, &path);
        cr_expect_eq(path, TCSPARSE_PATH_CUSPARSE, "a view planned from another structure: %s",
                     kernel);
        cr_expect_leq(check_c(&gt, 1.0, 0.5), t == CUDA_R_32F ? 1e-5 : 2e-2,
                      "the transposed product of the arrays' structure");
        cr_expect_eq(tripped(A), !bf16, "the refused build raised the trip word");
        reset_c(&gt, 1); /* again: the refusal is remembered, the product still right */
        spmm_path(h, &gt, A, 1.0f, 0.0f, 0, kernel, sizeof kernel, &path);
        cr_expect_eq(path, TCSPARSE_PATH_CUSPARSE, "a second call on the refused view: %s",
                     kernel);
        cr_expect_leq(check_c(&gt, 1.0, 0.0), t == CUDA_R_32F ? 1e-5 : 2e-2,
                      "the second transposed product, beta 0 over NaN");
        cudaFree(gt.d_B), cudaFree(gt.d_C), free(gt.h_B), free(gt.h_C0);
        tcsparseDestroySpMat(A);
        tcsparseDestroy(h);
        free_case(&g);
    }
}

/* A guarded execution captured in global mode: any synchronisation or allocation on that path
 * would invalidate the capture; the graph's replays check the arrays each time. */
Test(gpu_guard, captured_in_global_mode)
{
    TC_REQUIRE_GPU();
    gcase g;
    make_case(&g, 2000, 1800, 64, 0, CUDA_R_32F, 0);
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE), TCSPARSE_STATUS_SUCCESS);
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(tcsparseSetStream(h, s), TCSPARSE_STATUS_SUCCESS);
    tcsparseSpMatDescr_t A = make_descr(&g);
    char kernel[64];
    reset_c(&g, 0);
    spmm(h, &g, A, 1.0f, 0.5f, 0, kernel, sizeof kernel);
    /* later executions take the plan's settled kernel: run a few before the capture */
    for (int i = 0; i < 12; i++)
        spmm(h, &g, A, 1.0f, 0.5f, 0, kernel, sizeof kernel);
    uint64_t fp;
    cr_assert_eq(tc_hook_spmat_fingerprint(A, s, &fp), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tc_hook_spmat_guard(A, 1, fp), TCSPARSE_STATUS_SUCCESS);
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreateDnMat(&B, g.K, g.N, g.N, g.d_B, g.t, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&C, g.M, g.N, g.N, g.d_C, g.t, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    const float alpha = 1.0f, beta = 0.0f;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    const tcsparseStatus_t st =
        tcsparseSpMM(h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                     &alpha, A, B, &beta, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, NULL);
    cr_assert_eq(cudaStreamEndCapture(s, &graph), cudaSuccess,
                 "the guarded execution broke the capture");
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
    tcsparseRouteInfo_t info;
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    cr_expect_neq(info.path, TCSPARSE_PATH_CUSPARSE, "captured call on cuSPARSE: %s",
                  info.reason);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    reset_c(&g, 1);
    cr_assert_eq(cudaGraphLaunch(exec, s), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
    cr_expect_leq(check_c(&g, 1.0, 0.0), 1e-5, "replay, plan's structure");
    draw_columns(&g);
    upload_structure(&g);
    reset_c(&g, 1);
    cr_assert_eq(cudaGraphLaunch(exec, s), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
    cr_expect_leq(check_c(&g, 1.0, 0.0), 1e-5, "replay, another structure in the arrays");
    cr_expect_eq(tripped(A), 1);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(C);
    tcsparseDestroySpMat(A);
    tcsparseDestroy(h);
    cudaStreamDestroy(s);
    free_case(&g);
}

/* One guarded descriptor used on two streams without a synchronisation between the calls
 * (cuSPARSE allows a descriptor on several handles): the checks share the descriptor's device
 * words, so each waits for the other stream's last guarded execution; every result right, on
 * the plan's structure and on another one. */
Test(gpu_guard, two_streams)
{
    TC_REQUIRE_GPU();
    gcase g;
    make_case(&g, 2500, 2200, 40, 0, CUDA_R_32F, 0);
    tcsparseHandle_t h[2];
    cudaStream_t s[2];
    void *dC[2];
    const size_t cbytes = sizeof(float) * (size_t)(g.M * g.N);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tcsparseCreate(&h[i]), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(tcsparseSetRoute(h[i], TCSPARSE_ROUTE_TC_BASE), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking), cudaSuccess);
        cr_assert_eq(tcsparseSetStream(h[i], s[i]), TCSPARSE_STATUS_SUCCESS);
        cr_assert_eq(cudaMalloc(&dC[i], cbytes), cudaSuccess);
    }
    tcsparseSpMatDescr_t A = make_descr(&g);
    char kernel[64];
    reset_c(&g, 0);
    spmm(h[0], &g, A, 1.0f, 0.0f, 0, kernel, sizeof kernel); /* the plan */
    uint64_t fp;
    cr_assert_eq(tc_hook_spmat_fingerprint(A, 0, &fp), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tc_hook_spmat_guard(A, 1, fp), TCSPARSE_STATUS_SUCCESS);
    tcsparseDnMatDescr_t B, C[2];
    cr_assert_eq(tcsparseCreateDnMat(&B, g.K, g.N, g.N, g.d_B, g.t, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tcsparseCreateDnMat(&C[i], g.M, g.N, g.N, dC[i], g.t, TCSPARSE_ORDER_ROW),
                     TCSPARSE_STATUS_SUCCESS);
    const float alpha = 1.0f, beta = 0.0f;
    const tcsparseOperation_t NT = TCSPARSE_OPERATION_NON_TRANSPOSE;
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* another structure in the same arrays: the fallback on both */
            draw_columns(&g);
            upload_structure(&g);
        }
        for (int i = 0; i < 2; i++)
            cr_assert_eq(cudaMemset(dC[i], 0xff, cbytes), cudaSuccess);
        for (int it = 0; it < 8; it++)
            for (int i = 0; i < 2; i++)
                cr_assert_eq(tcsparseSpMM(h[i], NT, NT, &alpha, A, B, &beta, C[i], CUDA_R_32F,
                                          TCSPARSE_SPMM_ALG_DEFAULT, NULL),
                             TCSPARSE_STATUS_SUCCESS, "%s", tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
        for (int i = 0; i < 2; i++) {
            cr_assert_eq(cudaMemcpy(g.d_C, dC[i], cbytes, cudaMemcpyDeviceToDevice), cudaSuccess);
            const double e = check_c(&g, 1.0, 0.0);
            cr_expect_leq(e, 1e-5, "round %d, stream %d: relerr %g", round, i, e);
        }
    }
    cr_expect_eq(tripped(A), 1);
    tcsparseDestroyDnMat(B);
    for (int i = 0; i < 2; i++) {
        tcsparseDestroyDnMat(C[i]);
        tcsparseDestroy(h[i]);
        cudaStreamDestroy(s[i]);
        cudaFree(dC[i]);
    }
    tcsparseDestroySpMat(A);
    free_case(&g);
}
