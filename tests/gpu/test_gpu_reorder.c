#define _POSIX_C_SOURCE 200809L /* setenv */
/* Row reordering is invisible to the caller (docs/reorder.md): SpMM (base and balanced
 * kernels; 3xTF32, TF32, FP16) and SDDMM (3xTF32, TF32, FP16) give the CPU double reference's
 * result within the precision's bound with reordering off, forced (every ordering) and
 * automatic, on matrices with M not a multiple of 16, empty rows and a window the balanced
 * kernel splits.  C is poisoned with NaN (beta = 0) so every row must be written, through
 * win_row, exactly where the caller has it. */
#include <criterion/criterion.h>
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
#include "gpu_test.h"

typedef struct {
    cudaDataType t; /* A, B and C */
    int tf32;
    const char *name;
} prec_t;

static const prec_t precs[] = {{CUDA_R_32F, 0, "3xtf32"}, {CUDA_R_32F, 1, "tf32"},
                               {CUDA_R_16F, 0, "f16"}};

static double bound(const prec_t *p) { return p->t != CUDA_R_32F ? 2e-2 : p->tf32 ? 5e-3 : 1e-5; }

/* How a case sets reordering up: mode on the descriptor, candidates in the environment. */
typedef struct {
    tcsparseReorder_t mode;
    const char *only; /* TCSPARSE_X_REORDER_ORDERINGS, or NULL */
    const char *name;
    int by_descr;     /* `only` (first-col) set on the descriptor instead of the environment */
} reorder_t;

static void apply_reorder(tcsparseSpMatDescr_t A, const reorder_t *r)
{
    if (r->only && !r->by_descr)
        setenv("TCSPARSE_X_REORDER_ORDERINGS", r->only, 1);
    else
        unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();
    if (r->by_descr)
        cr_assert_eq(tcsparseSpMatSetReorderOrderings(A, 1u << TCSPARSE_ORDERING_FIRST_COL),
                     TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseSpMatSetReorder(A, r->mode), TCSPARSE_STATUS_SUCCESS);
}

/* After the first call: the plan's statistics say what happened. */
static void check_stats(tcsparseHandle_t h, tcsparseSpMatDescr_t A, const reorder_t *r,
                        const char *label)
{
    tcsparseMetcfStats_t st;
    cr_assert_eq(tcsparseSpMatGetMetcfStats(h, A, &st), TCSPARSE_STATUS_SUCCESS, "%s: %s", label,
                 tcsparseGetLastErrorMessage());
    if (r->mode == TCSPARSE_REORDER_OFF) {
        cr_assert_eq(st.reorder_ordering, 0, "%s", label);
        return;
    }
    if (r->mode == TCSPARSE_REORDER_DEFAULT) { /* TCSPARSE_REORDER names an ordering */
        cr_assert_eq(st.reorder_mode, (int32_t)TCSPARSE_REORDER_ALWAYS, "%s", label);
        cr_assert_str_eq(tcsparseGetOrderingName((tcsparseOrdering_t)st.reorder_ordering),
                         getenv("TCSPARSE_REORDER"), "%s", label);
        return;
    }
    cr_assert_eq(st.reorder_mode, (int32_t)r->mode, "%s", label);
    if (r->mode == TCSPARSE_REORDER_ALWAYS) {
        cr_assert_neq(st.reorder_ordering, 0, "%s: not reordered", label);
        if (r->only)
            cr_assert_str_eq(tcsparseGetOrderingName((tcsparseOrdering_t)st.reorder_ordering),
                             r->only, "%s", label);
    }
    /* first-col forced on CSR is ordered on the GPU, which then does not count the caller's
     * order */
    if (!(r->mode == TCSPARSE_REORDER_ALWAYS && r->only && strcmp(r->only, "first-col") == 0))
        cr_assert(st.reorder_nnz_per_block_before > 0, "%s", label);
    cr_assert(fabs(st.reorder_nnz_per_block_after - st.mean_nnz_per_block) < 1e-9,
              "%s: after %.4f, plan %.4f", label, st.reorder_nnz_per_block_after,
              st.mean_nnz_per_block);
}

/* SpMM C = alpha A B + beta C, B and C row-major; returns the relative error. */
static void spmm_case(const tc_csr *m, const prec_t *pr, int balanced, int N, float beta,
                      const reorder_t *ro, uint64_t *seed)
{
    const int64_t M = m->rows, K = m->cols, nnz = m->nnz;
    const cudaDataType t = pr->t;
    const float alpha = 1.5f;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m->row_off[r];
    void *hv = malloc(esize(t) * (size_t)(nnz + 1)), *hB = malloc(esize(t) * (size_t)(K * N + 1));
    void *hC = malloc(esize(t) * (size_t)(M * N + 1));
    double *av = malloc(sizeof *av * (size_t)(nnz + 1)), *b = malloc(sizeof *b * (size_t)(K * N + 1));
    double *c0 = malloc(sizeof *c0 * (size_t)(M * N + 1)), *ref = malloc(sizeof *ref * (size_t)(M * N + 1));
    for (int64_t e = 0; e < nnz; e++)
        av[e] = put(hv, (size_t)e, t, tc_test_rand_uniform(seed));
    for (int64_t i = 0; i < K * N; i++)
        b[i] = put(hB, (size_t)i, t, tc_test_rand_uniform(seed));
    for (int64_t i = 0; i < M * N; i++)
        c0[i] = put(hC, (size_t)i, t, beta != 0.0f ? tc_test_rand_uniform(seed) : NAN);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t e = m->row_off[i]; e < m->row_off[i + 1]; e++)
                s += av[e] * b[m->col[e] * N + j];
            ref[i * N + j] = alpha * s + (beta != 0.0f ? beta * c0[i * N + j] : 0.0);
        }
    void *dOff = to_device(off, 4 * (size_t)(M + 1)), *dCol = to_device(m->col, 4 * (size_t)nnz);
    void *dV = to_device(hv, esize(t) * (size_t)nnz), *dB = to_device(hB, esize(t) * (size_t)(K * N));
    void *dC = to_device(hC, esize(t) * (size_t)(M * N));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreate(&h), 0);
    cr_assert_eq(tcsparseCreateCsr(&A, M, K, nnz, dOff, dCol, dV, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, t), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, N, dB, t, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, M, N, N, dC, t, TCSPARSE_ORDER_ROW), 0);
    tcsparseSetRoute(h, balanced ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE);
    tcsparseSetMathMode(h, pr->tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT);
    apply_reorder(A, ro);
    char label[200];
    snprintf(label, sizeof label, "SpMM %lldx%lld N=%d %s %s beta=%g reorder=%s", (long long)M,
             (long long)K, N, pr->name, balanced ? "balanced" : "base", beta, ro->name);
    cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, NULL), 0, "%s: %s",
                 label, tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: kernel failed", label);
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    cr_assert_eq(ri.path, balanced ? TCSPARSE_PATH_TC_BALANCED : TCSPARSE_PATH_TC_BASE,
                 "%s: took %s (%s)", label, ri.kernel, ri.reason);
    check_stats(h, A, ro, label);
    cr_assert_eq(cudaMemcpy(hC, dC, esize(t) * (size_t)(M * N), cudaMemcpyDeviceToHost), cudaSuccess);
    double *out = malloc(sizeof *out * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M * N; i++) {
        out[i] = get(hC, (size_t)i, t);
        cr_assert(isfinite(out[i]), "%s: C[%lld][%lld] not written", label, (long long)(i / N),
                  (long long)(i % N));
    }
    const double err = tc_rel_err(ref, out, (size_t)(M * N));
    cr_assert(err <= bound(pr), "%s: relative error %.3e > %.1e", label, err, bound(pr));
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(dOff); cudaFree(dCol); cudaFree(dV); cudaFree(dB); cudaFree(dC);
    free(off); free(hv); free(hB); free(hC); free(av); free(b); free(c0); free(ref); free(out);
    unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();
}

/* SDDMM on the pattern of m: C = alpha (A B) o spy(C) + beta C, A row-major M x K, B
 * column-major K x cols; values written in the caller's order. */
static void sddmm_case(const tc_csr *m, const prec_t *pr, int balanced, int K, float beta,
                       const reorder_t *ro, uint64_t *seed)
{
    const int64_t M = m->rows, N = m->cols, nnz = m->nnz;
    const cudaDataType t = pr->t;
    const float alpha = -0.75f;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m->row_off[r];
    void *hA = malloc(esize(t) * (size_t)(M * K + 1)), *hB = malloc(esize(t) * (size_t)(K * N + 1));
    void *hC = malloc(esize(t) * (size_t)(nnz + 1));
    double *a = malloc(sizeof *a * (size_t)(M * K + 1)), *b = malloc(sizeof *b * (size_t)(K * N + 1));
    double *c0 = malloc(sizeof *c0 * (size_t)(nnz + 1)), *ref = malloc(sizeof *ref * (size_t)(nnz + 1));
    for (int64_t i = 0; i < M * K; i++)
        a[i] = put(hA, (size_t)i, t, tc_test_rand_uniform(seed));
    for (int64_t i = 0; i < K * N; i++) /* column j of B: K elements at j*K */
        b[i] = put(hB, (size_t)i, t, tc_test_rand_uniform(seed));
    for (int64_t e = 0; e < nnz; e++)
        c0[e] = put(hC, (size_t)e, t, beta != 0.0f ? tc_test_rand_uniform(seed) : NAN);
    for (int64_t i = 0; i < M; i++)
        for (int64_t e = m->row_off[i]; e < m->row_off[i + 1]; e++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += a[i * K + k] * b[(int64_t)m->col[e] * K + k];
            ref[e] = alpha * s + (beta != 0.0f ? beta * c0[e] : 0.0);
        }
    void *dOff = to_device(off, 4 * (size_t)(M + 1)), *dCol = to_device(m->col, 4 * (size_t)nnz);
    void *dC = to_device(hC, esize(t) * (size_t)nnz), *dA = to_device(hA, esize(t) * (size_t)(M * K));
    void *dB = to_device(hB, esize(t) * (size_t)(K * N));
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t C;
    tcsparseDnMatDescr_t A, B;
    cr_assert_eq(tcsparseCreate(&h), 0);
    cr_assert_eq(tcsparseCreateCsr(&C, M, N, nnz, dOff, dCol, dC, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, t), 0);
    cr_assert_eq(tcsparseCreateDnMat(&A, M, K, K, dA, t, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, K, dB, t, TCSPARSE_ORDER_COL), 0);
    tcsparseSetRoute(h, balanced ? TCSPARSE_ROUTE_TC_BALANCED : TCSPARSE_ROUTE_TC_BASE);
    tcsparseSetMathMode(h, pr->tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT);
    apply_reorder(C, ro);
    char label[200];
    snprintf(label, sizeof label, "SDDMM %lldx%lld K=%d %s %s beta=%g reorder=%s", (long long)M,
             (long long)N, K, pr->name, balanced ? "chunked" : "base", beta, ro->name);
    size_t bsz = 0;
    cr_assert_eq(tcsparseSDDMM_bufferSize(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, &bsz), 0,
                 "%s: %s", label, tcsparseGetLastErrorMessage());
    void *buf = NULL;
    cr_assert_eq(cudaMalloc(&buf, bsz + 1), cudaSuccess);
    cr_assert_eq(tcsparseSDDMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0, "%s: %s",
                 label, tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "%s: kernel failed", label);
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(h, &ri);
    cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "%s: took %s (%s)", label, ri.kernel, ri.reason);
    check_stats(h, C, ro, label);
    cr_assert_eq(cudaMemcpy(hC, dC, esize(t) * (size_t)nnz, cudaMemcpyDeviceToHost), cudaSuccess);
    double *out = malloc(sizeof *out * (size_t)(nnz + 1));
    for (int64_t e = 0; e < nnz; e++) {
        out[e] = get(hC, (size_t)e, t);
        cr_assert(isfinite(out[e]), "%s: value %lld not written", label, (long long)e);
    }
    const double err = tc_rel_err(ref, out, (size_t)nnz);
    cr_assert(err <= bound(pr), "%s: relative error %.3e > %.1e", label, err, bound(pr));
    cudaFree(buf);
    tcsparseDestroySpMat(C); tcsparseDestroyDnMat(A); tcsparseDestroyDnMat(B); tcsparseDestroy(h);
    cudaFree(dOff); cudaFree(dCol); cudaFree(dC); cudaFree(dA); cudaFree(dB);
    free(off); free(hA); free(hB); free(hC); free(a); free(b); free(c0); free(ref); free(out);
    unsetenv("TCSPARSE_X_REORDER_ORDERINGS");
    tc_config_reload();
}

static const reorder_t modes[] = {
    {TCSPARSE_REORDER_OFF, NULL, "off", 0},
    {TCSPARSE_REORDER_ALWAYS, "cluster", "cluster", 0},
    {TCSPARSE_REORDER_ALWAYS, "first-col", "first-col", 0}, /* CSR: ordered on the GPU */
    {TCSPARSE_REORDER_ALWAYS, "degree", "degree", 0},
    {TCSPARSE_REORDER_ALWAYS, "minhash", "minhash", 0},
    {TCSPARSE_REORDER_AUTO, NULL, "auto", 0},
    {TCSPARSE_REORDER_AUTO, "first-col", "auto first-col (on the GPU)", 0},
    {TCSPARSE_REORDER_AUTO, "first-col", "auto, first-col on the descriptor (on the GPU)", 1},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* 333 x 4099: every third row empty, row 17 dense (its window splits in the balanced kernel),
 * rows of two interleaved column families so that reordering gains. */
static void awkward(tc_csr *m, uint64_t *seed)
{
    const int64_t M = 333, K = 4099;
    m->rows = M;
    m->cols = K;
    m->row_off = calloc((size_t)M + 1, sizeof *m->row_off);
    m->col = malloc(sizeof *m->col * (size_t)(K + M * 12));
    m->val = malloc(sizeof *m->val * (size_t)(K + M * 12));
    int64_t e = 0;
    for (int64_t r = 0; r < M; r++) {
        if (r == 17)
            for (int64_t c = 0; c < K; c++)
                m->col[e++] = (int32_t)c;
        else if (r % 3 != 0)
            for (int64_t c = (r % 2) * 2000 + r % 5; c < K; c += 350)
                m->col[e++] = (int32_t)c;
        m->row_off[r + 1] = e;
    }
    m->nnz = e;
    for (int64_t i = 0; i < e; i++)
        m->val[i] = tc_test_rand_uniform(seed);
}

Test(gpu_reorder, spmm_every_ordering_kernel_precision, .timeout = 600)
{
    TC_REQUIRE_GPU();
    uint64_t seed = 7;
    tc_csr m1, m2;
    awkward(&m1, &seed);
    char err[256];
    cr_assert_eq(tc_gen_from_spec("rmat:11:8", &m2, err, sizeof err), 0, "%s", err);
    const tc_csr *ms[] = {&m1, &m2};
    for (int mi = 0; mi < 2; mi++)
        for (size_t r = 0; r < NMODES; r++)
            for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
                for (int bal = 0; bal < 2; bal++) {
                    const float beta = (r + p + (size_t)bal) % 2 ? 0.0f : -0.5f;
                    spmm_case(ms[mi], &precs[p], bal, mi ? 64 : 40, beta, &modes[r], &seed);
                }
    tc_csr_free(&m1);
    tc_csr_free(&m2);
}

Test(gpu_reorder, sddmm_every_ordering_schedule_precision, .timeout = 600)
{
    TC_REQUIRE_GPU();
    uint64_t seed = 11;
    tc_csr m1, m2;
    awkward(&m1, &seed);
    char err[256];
    cr_assert_eq(tc_gen_from_spec("rmat:10:8", &m2, err, sizeof err), 0, "%s", err);
    const tc_csr *ms[] = {&m1, &m2};
    for (int mi = 0; mi < 2; mi++)
        for (size_t r = 0; r < NMODES; r++)
            for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
                for (int bal = 0; bal < 2; bal++) {
                    const float beta = (r + p + (size_t)bal) % 2 ? 0.0f : 0.25f;
                    sddmm_case(ms[mi], &precs[p], bal, mi ? 40 : 33, beta, &modes[r], &seed);
                }
    tc_csr_free(&m1);
    tc_csr_free(&m2);
}

/* TCSPARSE_REORDER names an ordering: a descriptor left at DEFAULT follows it. */
Test(gpu_reorder, environment_forces_an_ordering)
{
    TC_REQUIRE_GPU();
    uint64_t seed = 3;
    tc_csr m;
    awkward(&m, &seed);
    setenv("TCSPARSE_REORDER", "degree", 1);
    tc_config_reload();
    const reorder_t env = {TCSPARSE_REORDER_DEFAULT, NULL, "env", 0};
    for (int bal = 0; bal < 2; bal++)
        spmm_case(&m, &precs[0], bal, 16, 0.0f, &env, &seed);
    unsetenv("TCSPARSE_REORDER");
    tc_config_reload();
    tc_csr_free(&m);
}
