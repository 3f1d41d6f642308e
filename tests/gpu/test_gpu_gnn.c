/* A GNN attention layer on one sparse descriptor (docs/gnn-attention.md):
 *   S = (Q·Kᵀ)/sqrt(d) ∘ spy(G)     tcsparseSDDMM, written into G's values
 *   H = S·V                         tcsparseSpMM with the same descriptor
 * Both calls run on the tensor cores with the one ME-TCF plan cached with G, checked against
 * a CPU reference in double. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "internal.h"
#include "testutil.h"

static void *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, bytes), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}

Test(gpu_gnn, attention_layer_one_plan)
{
    TC_REQUIRE_GPU();
    tc_csr g;
    char err[200];
    cr_assert_eq(tc_gen_from_spec("blocks:3001:16:400", &g, err, sizeof err), 0, "%s", err);
    const int64_t n = g.rows, d = 64, f = 48;
    uint64_t seed = 7;
    float *q = malloc(sizeof *q * n * d), *k = malloc(sizeof *k * n * d);
    float *v = malloc(sizeof *v * n * f), *h = malloc(sizeof *h * n * f);
    double *qd = malloc(sizeof *qd * n * d), *kd = malloc(sizeof *kd * n * d);
    double *vd = malloc(sizeof *vd * n * f), *hd = malloc(sizeof *hd * n * f);
    for (int64_t i = 0; i < n * d; i++) {
        qd[i] = q[i] = (float)tc_test_rand_uniform(&seed);
        kd[i] = k[i] = (float)tc_test_rand_uniform(&seed);
    }
    for (int64_t i = 0; i < n * f; i++)
        vd[i] = v[i] = (float)tc_test_rand_uniform(&seed);
    int32_t *off = malloc(sizeof *off * (n + 1));
    for (int64_t i = 0; i <= n; i++)
        off[i] = (int32_t)g.row_off[i];
    float *s0 = malloc(sizeof *s0 * g.nnz);
    for (int64_t e = 0; e < g.nnz; e++)
        s0[e] = NAN; /* beta = 0: the old values must not be read */

    /* reference: S on G's pattern, then H = S·V */
    const double scale = 1.0 / sqrt((double)d);
    tc_ref_dense Qr = {n, d, d, TCSPARSE_ORDER_ROW, qd}, Kt = {d, n, d, TCSPARSE_ORDER_COL, kd};
    double *sref = malloc(sizeof *sref * g.nnz);
    tc_ref_sddmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, scale, &Qr,
                 &Kt, 0.0, &g, sref);
    tc_csr sg = g;
    sg.val = sref;
    tc_ref_dense Vr = {n, f, f, TCSPARSE_ORDER_ROW, vd}, Hr = {n, f, f, TCSPARSE_ORDER_ROW, hd};
    tc_ref_spmm(TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE, 1.0, &sg, &Vr,
                0.0, &Hr);

    void *dq = dev_copy(q, sizeof *q * n * d), *dk = dev_copy(k, sizeof *k * n * d);
    void *dv = dev_copy(v, sizeof *v * n * f), *dh = dev_copy(v, sizeof *v * n * f);
    void *doff = dev_copy(off, sizeof *off * (n + 1)), *dcol = dev_copy(g.col, sizeof *g.col * g.nnz);
    void *ds = dev_copy(s0, sizeof *s0 * g.nnz);
    tcsparseHandle_t hd_;
    tcsparseSpMatDescr_t G;
    tcsparseDnMatDescr_t Q, Kd, V, H;
    cr_assert_eq(tcsparseCreate(&hd_), 0);
    cr_assert_eq(tcsparseSetRoute(hd_, TCSPARSE_ROUTE_TC), 0);
    cr_assert_eq(tcsparseCreateCsr(&G, n, n, g.nnz, doff, dcol, ds, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateDnMat(&Q, n, d, d, dq, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    /* Kᵀ as a d x n column-major matrix is K (n x d, row-major) itself */
    cr_assert_eq(tcsparseCreateDnMat(&Kd, d, n, d, dk, CUDA_R_32F, TCSPARSE_ORDER_COL), 0);
    cr_assert_eq(tcsparseCreateDnMat(&V, n, f, f, dv, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&H, n, f, f, dh, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    const float alpha = (float)scale, one = 1.0f, zero = 0.0f;
    size_t b1 = 0, b2 = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSDDMM_bufferSize(hd_, 0, 0, &alpha, Q, Kd, &zero, G, CUDA_R_32F,
                                          TCSPARSE_SDDMM_ALG_DEFAULT, &b1), 0, "%s",
                 tcsparseGetLastErrorMessage());
    cr_assert_eq(tcsparseSpMM_bufferSize(hd_, 0, 0, &one, G, V, &zero, H, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &b2), 0);
    cr_assert_eq(cudaMalloc(&buf, (b1 > b2 ? b1 : b2) + 1), cudaSuccess);

    cr_assert_eq(tcsparseSDDMM(hd_, 0, 0, &alpha, Q, Kd, &zero, G, CUDA_R_32F,
                               TCSPARSE_SDDMM_ALG_DEFAULT, buf), 0, "%s",
                 tcsparseGetLastErrorMessage());
    tcsparseRouteInfo_t ri;
    tcsparseGetLastRoute(hd_, &ri);
    cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "SDDMM took %s (%s)", ri.kernel, ri.reason);
    const struct tc_plan *plan = G->plan; /* built by the SDDMM */
    cr_assert_not_null(plan);

    cr_assert_eq(tcsparseSpMM(hd_, 0, 0, &one, G, V, &zero, H, CUDA_R_32F,
                              TCSPARSE_SPMM_ALG_DEFAULT, buf), 0, "%s",
                 tcsparseGetLastErrorMessage());
    tcsparseGetLastRoute(hd_, &ri);
    cr_assert_neq(ri.path, TCSPARSE_PATH_CUSPARSE, "SpMM took %s (%s)", ri.kernel, ri.reason);
    cr_assert_eq(G->plan, plan, "the SpMM built a second plan");

    float *s = malloc(sizeof *s * g.nnz);
    cr_assert_eq(cudaMemcpy(s, ds, sizeof *s * g.nnz, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(cudaMemcpy(h, dh, sizeof *h * n * f, cudaMemcpyDeviceToHost), cudaSuccess);
    double *sgot = malloc(sizeof *sgot * g.nnz), *hgot = malloc(sizeof *hgot * n * f);
    for (int64_t e = 0; e < g.nnz; e++)
        sgot[e] = s[e];
    for (int64_t i = 0; i < n * f; i++)
        hgot[i] = h[i];
    double es = tc_rel_err(sref, sgot, (size_t)g.nnz), eh = tc_rel_err(hd, hgot, (size_t)(n * f));
    cr_assert(es <= 1e-5, "attention scores: relative error %.3e", es);
    cr_assert(eh <= 1e-5, "layer output: relative error %.3e", eh);

    cudaFree(buf); cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dh); cudaFree(doff);
    cudaFree(dcol); cudaFree(ds);
    tcsparseDestroySpMat(G); tcsparseDestroyDnMat(Q); tcsparseDestroyDnMat(Kd);
    tcsparseDestroyDnMat(V); tcsparseDestroyDnMat(H); tcsparseDestroy(hd_);
    free(q); free(k); free(v); free(h); free(qd); free(kd); free(vd); free(hd); free(off);
    free(s0); free(sref); free(s); free(sgot); free(hgot);
    tc_csr_free(&g);
}
