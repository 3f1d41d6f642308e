#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "testutil.h"

int tc_test_gpu_available(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, n, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError();
        return 0;
    }
    if (count == 0) {
        snprintf(why, n, "no device");
        return 0;
    }
    if (n > 0)
        why[0] = '\0';
    /* GPU tests keep each descriptor's plan in the caller's order: late ordering, the
     * library's default, would swap plans in the middle of the call series whose routes,
     * tuning and bitwise repeatability they assert.  tests/gpu/test_gpu_late.c and
     * test_gpu_late_mixed.c test it; TCSPARSE_REORDER set by whoever runs the tests is kept. */
    setenv("TCSPARSE_REORDER", "off", 0);
    tc_config_reload();
    return 1;
}

int tc_test_gpus_available(int need, char *why, size_t n)
{
    if (!tc_test_gpu_available(why, n))
        return 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) { /* counted once already: not expected */
        (void)cudaGetLastError();
        count = 0;
    }
    if (count < need) {
        snprintf(why, n, "%d visible", count);
        return 0;
    }
    return 1;
}

static double tc_ref_op_get(const tc_ref_dense *d, tcsparseOperation_t op, int64_t i, int64_t j)
{
    return op == TCSPARSE_OPERATION_NON_TRANSPOSE ? d->val[tc_ref_at(d, i, j)]
                                                   : d->val[tc_ref_at(d, j, i)];
}

void tc_ref_spmm(tcsparseOperation_t opA, tcsparseOperation_t opB, double alpha, const tc_csr *A,
                 const tc_ref_dense *B, double beta, tc_ref_dense *C)
{
    int64_t m = C->rows, n = C->cols;
    double *acc = calloc((size_t)(m * n > 0 ? m * n : 1), sizeof *acc);
    if (acc == NULL) {
        fprintf(stderr, "tc_ref_spmm: out of memory\n");
        abort();
    }
    int transA = opA != TCSPARSE_OPERATION_NON_TRANSPOSE;
    for (int64_t r = 0; r < A->rows; r++) {
        for (int64_t p = A->row_off[r]; p < A->row_off[r + 1]; p++) {
            /* Entry (r, c) of A is entry (c, r) of Aᵀ. */
            int64_t i = transA ? A->col[p] : r, k = transA ? r : A->col[p];
            double v = A->val[p];
            for (int64_t j = 0; j < n; j++)
                acc[i * n + j] += v * tc_ref_op_get(B, opB, k, j);
        }
    }
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double *c = &C->val[tc_ref_at(C, i, j)];
            *c = alpha * acc[i * n + j] + (beta == 0.0 ? 0.0 : beta * *c);
        }
    }
    free(acc);
}

void tc_ref_sddmm(tcsparseOperation_t opA, tcsparseOperation_t opB, double alpha,
                  const tc_ref_dense *A, const tc_ref_dense *B, double beta, const tc_csr *C,
                  double *out)
{
    int64_t k = opA == TCSPARSE_OPERATION_NON_TRANSPOSE ? A->cols : A->rows;
    for (int64_t i = 0; i < C->rows; i++) {
        for (int64_t p = C->row_off[i]; p < C->row_off[i + 1]; p++) {
            int64_t j = C->col[p];
            double dot = 0.0;
            for (int64_t q = 0; q < k; q++)
                dot += tc_ref_op_get(A, opA, i, q) * tc_ref_op_get(B, opB, q, j);
            out[p] = alpha * dot + (beta == 0.0 ? 0.0 : beta * C->val[p]);
        }
    }
}

double tc_rel_err(const double *ref, const double *out, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i]))
            return INFINITY;
        double d = out[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den == 0.0 ? sqrt(num) : sqrt(num / den);
}

uint64_t tc_test_rand_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tc_test_rand_uniform(uint64_t *state)
{
    return (double)(tc_test_rand_u64(state) >> 11) * 0x1.0p-52 - 1.0;
}

void tc_test_measuring_note(tc_test_measuring *m, const tcsparseRouteInfo_t *ri)
{
    if (strncmp(ri->reason, "exploring", 9) != 0)
        return;
    m->explored++;
    m->paths |= 1u << (ri->path * 2 + (strstr(ri->kernel, "ALG3") != NULL));
}

void tc_test_call_log_reset(tc_test_call_log *l)
{
    free(l->first);
    memset(l, 0, sizeof *l);
}

void tc_test_call_log_note(tc_test_call_log *l, const tcsparseRouteInfo_t *ri, const void *out,
                           size_t bytes)
{
    snprintf(l->last_reason, sizeof l->last_reason, "%s", ri->reason);
    l->tuning_calls += strstr(ri->reason, "; tuning:") != NULL;
    int seen = 0;
    for (int i = 0; i < l->nkernels; i++)
        seen |= strcmp(l->kernels[i], ri->kernel) == 0;
    if (!seen && l->nkernels < 4)
        snprintf(l->kernels[l->nkernels++], sizeof l->kernels[0], "%s", ri->kernel);
    if (l->first == NULL) {
        l->first = malloc(bytes ? bytes : 1);
        if (l->first != NULL)
            memcpy(l->first, out, bytes);
    } else {
        l->bit_diffs += memcmp(l->first, out, bytes) != 0;
    }
}
