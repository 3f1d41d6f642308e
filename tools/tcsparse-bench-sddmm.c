/* tcsparse-bench-sddmm: times tcsparseSDDMM (routed, forced tensor-core base and chunked, the
 * forced CUDA-core kernel; with --reorder the two tensor-core ones again on a plan with
 * reordered rows) against cusparseSDDMM in one run,
 * with CUDA events, warm-up and the median of repeated runs; prints a table and optionally
 * writes CSV.  The matrix given is C's pattern; A is
 * M x K row-major and B is K x N column-major (cuSPARSE's fastest layout and the tensor-core
 * kernel's), C = A·B ∘ spy(C) with alpha = 1, beta = 0. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"
#include "halfconv.h"
#include "bench_cli.h"
#include "bench_timing.h"
#include "util_cuda.h"

/* cuSPARSE last: the variants are prepared from the last down, its result the reference */
enum { V_ROUTED, V_TC_BASE, V_TC_BAL, V_TC_BASE_R, V_TC_BAL_R, V_CUDA_CORE, V_CUSPARSE, V_COUNT };
static const char *vname[V_COUNT] = {"routed", "tc-base", "tc-balanced", "tc-base-reordered",
                                     "tc-balanced-reordered", "cuda-core", "cusparse"};
static int is_reordered(int v) { return v == V_TC_BASE_R || v == V_TC_BAL_R; }

static size_t tsize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/* Device buffer of n random elements of type t. */
static void *upload_random(size_t n, cudaDataType t)
{
    void *h = malloc(n * tsize(t) + 16), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        float v = tc_bench_rand();
        if (t == CUDA_R_32F)
            ((float *)h)[i] = v;
        else
            ((uint16_t *)h)[i] = tc_f2h(v);
    }
    CK(cudaMalloc(&d, n * tsize(t) + 16));
    CK(cudaMemcpy(d, h, n * tsize(t), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static double *download(const void *d, size_t n, cudaDataType t)
{
    void *h = malloc(n * tsize(t) + 16);
    double *out = malloc(n * sizeof *out + 8);
    CK(cudaMemcpy(h, d, n * tsize(t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        out[i] = t == CUDA_R_32F ? ((float *)h)[i] : tc_h2f(((uint16_t *)h)[i]);
    free(h);
    return out;
}

typedef struct {
    cusparseHandle_t cu;
    tcsparseHandle_t tc;
    cusparseSpMatDescr_t cuC;
    cusparseDnMatDescr_t cuA, cuB;
    tcsparseSpMatDescr_t tcC, tcC_r; /* tcC_r: the same arrays, plan with reordered rows */
    tcsparseDnMatDescr_t tcA, tcB;
    void *buf[V_COUNT];
    cudaEvent_t e0, e1;
} ctx_t;

static tcsparseRoute_t route_of(int v)
{
    return v == V_ROUTED ? TCSPARSE_ROUTE_AUTO
           : v == V_CUDA_CORE                   ? TCSPARSE_ROUTE_CUDA_CORE
           : v == V_TC_BASE || v == V_TC_BASE_R ? TCSPARSE_ROUTE_TC_BASE
                                                : TCSPARSE_ROUTE_TC_BALANCED;
}

/* The path a forced variant must take to be timed as itself. */
static tcsparsePath_t path_of(int v)
{
    return v == V_CUDA_CORE                     ? TCSPARSE_PATH_CUDA_CORE
           : route_of(v) == TCSPARSE_ROUTE_TC_BASE ? TCSPARSE_PATH_TC_BASE
                                                   : TCSPARSE_PATH_TC_BALANCED;
}

static tcsparseSpMatDescr_t descr_of(const ctx_t *c, int v)
{
    return is_reordered(v) ? c->tcC_r : c->tcC;
}

/* Runs variant v once; returns 0 on success. */
static int run_variant(ctx_t *c, int v)
{
    const float one = 1.0f, zero = 0.0f;
    if (v != V_CUSPARSE) {
        tcsparseSetRoute(c->tc, route_of(v));
        return tcsparseSDDMM(c->tc, TCSPARSE_OPERATION_NON_TRANSPOSE,
                             TCSPARSE_OPERATION_NON_TRANSPOSE, &one, c->tcA, c->tcB, &zero,
                             descr_of(c, v), CUDA_R_32F, TCSPARSE_SDDMM_ALG_DEFAULT,
                             c->buf[v]) != TCSPARSE_STATUS_SUCCESS;
    }
    return cusparseSDDMM(c->cu, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                         &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F,
                         CUSPARSE_SDDMM_ALG_DEFAULT, c->buf[v]) != CUSPARSE_STATUS_SUCCESS;
}

/* Workspace and preprocessing (outside the timed runs, as an application would do once). */
static int prepare_variant(ctx_t *c, int v)
{
    const float one = 1.0f, zero = 0.0f;
    size_t sz = 0;
    if (v != V_CUSPARSE) {
        tcsparseSetRoute(c->tc, route_of(v));
        if (tcsparseSDDMM_bufferSize(c->tc, 0, 0, &one, c->tcA, c->tcB, &zero, descr_of(c, v),
                                     CUDA_R_32F, TCSPARSE_SDDMM_ALG_DEFAULT,
                                     &sz) != TCSPARSE_STATUS_SUCCESS)
            return 1;
        CK(cudaMalloc(&c->buf[v], sz + 16));
        return tcsparseSDDMM_preprocess(c->tc, 0, 0, &one, c->tcA, c->tcB, &zero, descr_of(c, v),
                                        CUDA_R_32F, TCSPARSE_SDDMM_ALG_DEFAULT, c->buf[v]) != 0;
    }
    if (cusparseSDDMM_bufferSize(c->cu, 0, 0, &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F,
                                 CUSPARSE_SDDMM_ALG_DEFAULT, &sz) != CUSPARSE_STATUS_SUCCESS)
        return 1;
    CK(cudaMalloc(&c->buf[v], sz + 16));
    return cusparseSDDMM_preprocess(c->cu, 0, 0, &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F,
                                    CUSPARSE_SDDMM_ALG_DEFAULT, c->buf[v]) != CUSPARSE_STATUS_SUCCESS;
}

/* tc_bench_time_interleaved's callback: one run of a variant of the case in ctx. */
static int run_cb(void *p, int v)
{
    return run_variant(p, v);
}

static void bench_one(const char *input, const tc_csr *m, const char *prec, int K, const tc_bench_opts *o)
{
    /* f32 (3xTF32) and tf32: FP32 everywhere; f16: FP16 A, B and C; f16f32: FP16 A and B,
     * FP32 C.  cuSPARSE computes FP32 in every case. */
    const cudaDataType ab = strncmp(prec, "f16", 3) == 0 ? CUDA_R_16F : CUDA_R_32F;
    const cudaDataType ct = strcmp(prec, "f16") == 0 ? CUDA_R_16F : CUDA_R_32F;
    const int64_t M = m->rows, N = m->cols, nnz = m->nnz;
    ctx_t c;
    memset(&c, 0, sizeof c);
    int *d_off, *d_col;
    int32_t *h_off = malloc(sizeof *h_off * (size_t)(M + 1));
    for (int64_t i = 0; i <= M; i++)
        h_off[i] = (int32_t)m->row_off[i];
    CK(cudaMalloc((void **)&d_off, sizeof *d_off * (size_t)(M + 1)));
    CK(cudaMalloc((void **)&d_col, sizeof *d_col * (size_t)(nnz + 1)));
    CK(cudaMemcpy(d_off, h_off, sizeof *d_off * (size_t)(M + 1), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_col, m->col, sizeof *d_col * (size_t)nnz, cudaMemcpyHostToDevice));
    free(h_off);
    void *d_A = upload_random((size_t)(M * K), ab), *d_B = upload_random((size_t)(K * N), ab);
    void *d_C;
    CK(cudaMalloc(&d_C, (size_t)nnz * tsize(ct) + 16));
    CK(cudaEventCreate(&c.e0));
    CK(cudaEventCreate(&c.e1));
    cusparseCreate(&c.cu);
    tcsparseCreate(&c.tc);
    if (strcmp(prec, "tf32") == 0)
        tcsparseSetMathMode(c.tc, TCSPARSE_MATH_TF32);
    cusparseCreateCsr(&c.cuC, M, N, nnz, d_off, d_col, d_C, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                      CUSPARSE_INDEX_BASE_ZERO, ct);
    cusparseCreateDnMat(&c.cuA, M, K, K, d_A, ab, CUSPARSE_ORDER_ROW);
    cusparseCreateDnMat(&c.cuB, K, N, K, d_B, ab, CUSPARSE_ORDER_COL);
    tcsparseCreateCsr(&c.tcC, M, N, nnz, d_off, d_col, d_C, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_BASE_ZERO, ct);
    tcsparseCreateDnMat(&c.tcA, M, K, K, d_A, ab, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&c.tcB, K, N, K, d_B, ab, TCSPARSE_ORDER_COL);

    tcsparseMetcfStats_t st;
    /* the handle's first GPU call creates its cuSPARSE handle: keep that out of the plan time */
    {
        const float one = 1.0f, zero = 0.0f;
        size_t sz;
        tcsparseSDDMM_bufferSize(c.tc, 0, 0, &one, c.tcA, c.tcB, &zero, c.tcC, CUDA_R_32F,
                                 TCSPARSE_SDDMM_ALG_DEFAULT, &sz);
        /* and one kernel launch, on the handle's stream: after the bench's own work
         * (reading and parsing the input) the host's first launch cost 30-47 us on the H100
         * machine, whatever the kernel, against 6-10 us for the next; that is the host's
         * state, not the plan's cost.  (A 4-byte memset does not take that cost.) */
        CK(tc_util_launch_nop(0));
        CK(cudaDeviceSynchronize());
    }
    double t0 = tc_bench_now_ms();
    int have_plan = tcsparseSpMatGetMetcfStats(c.tc, c.tcC, &st) == TCSPARSE_STATUS_SUCCESS;
    double conv_ms = tc_bench_now_ms() - t0;
    /* the first build may carry the process's one-time costs (the pool's mapping, kernels
     * loaded): the median of it and o->builds - 1 more (bench_timing.h) */
    const double conv_first_ms = conv_ms;
    if (have_plan && o->builds > 1)
        conv_ms = tc_bench_build_median_ms(c.tc, M, N, nnz, d_off, d_col, d_C, ct, conv_ms,
                                           o->builds - 1);
    if (!have_plan)
        fprintf(stderr, "  no tensor-core plan: %s\n", tcsparseGetLastErrorMessage());
    /* --reorder: a second descriptor on the same arrays whose plan reorders rows */
    tcsparseMetcfStats_t st_r;
    double conv_r_ms = 0;
    memset(&st_r, 0, sizeof st_r);
    if (o->reorder) {
        tcsparseCreateCsr(&c.tcC_r, M, N, nnz, d_off, d_col, d_C, TCSPARSE_INDEX_32I,
                          TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, ct);
        tcsparseSpMatSetReorder(c.tcC_r, (tcsparseReorder_t)o->reorder);
        t0 = tc_bench_now_ms();
        if (tcsparseSpMatGetMetcfStats(c.tc, c.tcC_r, &st_r) != TCSPARSE_STATUS_SUCCESS) {
            fprintf(stderr, "  no reordered tensor-core plan: %s\n",
                    tcsparseGetLastErrorMessage());
            tcsparseDestroySpMat(c.tcC_r);
            c.tcC_r = NULL;
        }
        conv_r_ms = tc_bench_now_ms() - t0;
    }

    float ms[V_COUNT];
    int want[V_COUNT] = {0};
    double err[V_COUNT], *ref = NULL;
    char route_kernel[64] = "";
    int explore_calls = 0;
    for (int v = V_COUNT - 1; v >= 0; v--) { /* cuSPARSE first: its result is the reference */
        ms[v] = -1;
        err[v] = NAN;
        if (is_reordered(v) && c.tcC_r == NULL)
            continue;
        if (prepare_variant(&c, v)) {
            cudaGetLastError();
            continue;
        }
        CK(cudaMemset(d_C, 0xff, (size_t)nnz * tsize(ct))); /* NaN poison: beta = 0 */
        if (run_variant(&c, v)) {
            cudaGetLastError();
            continue;
        }
        CK(cudaDeviceSynchronize());
        if (o->check) {
            double *out = download(d_C, (size_t)nnz, ct);
            if (v == V_CUSPARSE)
                ref = out;
            else {
                if (ref)
                    err[v] = tc_bench_rel_err(ref, out, (size_t)nnz);
                free(out);
            }
        }
        if (v != V_CUSPARSE) {
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(c.tc, &ri);
            /* the first calls of a kind measure the candidate paths (routed, src/route/route.c)
             * and the kernel variants (every tensor-core path, src/route/tune.c) on themselves:
             * time what they settle on, and report the calls taken */
            const int calls = tc_bench_settle_route(c.tc, &ri, run_cb, &c, v);
            /* the settled call's result is the one checked */
            if (calls > 0 && o->check && ref) {
                CK(cudaMemset(d_C, 0xff, (size_t)nnz * tsize(ct)));
                if (run_variant(&c, v) == 0) {
                    CK(cudaDeviceSynchronize());
                    double *out = download(d_C, (size_t)nnz, ct);
                    err[v] = tc_bench_rel_err(ref, out, (size_t)nnz);
                    free(out);
                }
            }
            if (v == V_ROUTED) {
                explore_calls = calls;
                snprintf(route_kernel, sizeof route_kernel, "%s", ri.kernel);
            } else if (ri.path != path_of(v)) {
                /* a forced route falls back to cuSPARSE where the kernels cannot run: that
                 * time must not be reported as the kernel's */
                fprintf(stderr, "  %s: ran as %s (%s); not timed\n", vname[v], ri.kernel,
                        ri.reason);
                continue;
            } else if (calls > 0) {
                printf("  %s: %s after %d calls measuring its kernels\n", vname[v], ri.kernel,
                       calls);
            }
        }
        want[v] = 1;
    }
    free(ref);
    /* late ordering (the default): where the plain descriptor's plan ended after settling */
    tcsparseMetcfStats_t st_late;
    tc_bench_late_report(c.tc, have_plan ? c.tcC : NULL, st.mean_nnz_per_block, &st_late);
    tc_bench_time_interleaved(V_COUNT, want, ms, o->reps, o->warm, run_cb, &c, c.e0, c.e1, vname);
    /* Bytes every SDDMM must move at least: A and B once, the CSR indices, C's values out. */
    /* the automatic route's statistic (src/route/route_sddmm.c) */
    const double per_win = have_plan && st.windows > st.empty_windows
                               ? (double)nnz / (double)(st.windows - st.empty_windows) : 0.0;
    const double flop = 2.0 * (double)nnz * K;
    const double bytes = (double)(M + N) * K * tsize(ab) + (double)nnz * (4 + tsize(ct)) +
                         4.0 * (double)(M + 1);
    printf("%-28s nnz=%-10lld K=%-4d %-6s conv=%.2fms (first %.2f) nnz/blk=%.2f nnz/win=%.1f "
           "route=%s (%d calls measuring)\n", input, (long long)nnz, K, prec, conv_ms,
           conv_first_ms,
           have_plan ? st.mean_nnz_per_block : 0.0, per_win, route_kernel, explore_calls);
    const char *ord = c.tcC_r ? tcsparseGetOrderingName((tcsparseOrdering_t)st_r.reorder_ordering)
                              : "";
    if (o->reorder)
        printf("    reordered plan: %s, nnz/blk %.2f -> %.2f, reorder %.1f ms of conv %.1f ms\n",
               c.tcC_r ? ord : "n/a", st_r.reorder_nnz_per_block_before,
               st_r.reorder_nnz_per_block_after, st_r.reorder_ms, conv_r_ms);
    for (int v = 0; v < V_COUNT; v++) {
        if (is_reordered(v) && !o->reorder)
            continue;
        if (ms[v] < 0) {
            printf("    %-12s %10s\n", vname[v], "n/a");
            continue;
        }
        const double x = ms[V_CUSPARSE] > 0 ? ms[V_CUSPARSE] / ms[v] : NAN;
        printf("    %-12s %10.4f ms %9.1f GFLOP/s %7.1f GB/s  x%.2f vs cusparse", vname[v], ms[v],
               flop / ms[v] / 1e6, bytes / ms[v] / 1e6, x);
        if (o->check && !isnan(err[v]))
            printf("  relerr=%.2e", err[v]);
        printf("\n");
        if (o->csv)
            fprintf(o->csv, "%s,%lld,%lld,%lld,%d,%s,%s,%.5f,%.1f,%.1f,%.3f,%.3e,%.3f,%.3f,%.2f,%s,%d,"
                            "%s,%.3f,%.3f,%s,%.3f,%.3f,%.3f\n",
                    input, (long long)M, (long long)N, (long long)nnz, K, prec, vname[v], ms[v],
                    flop / ms[v] / 1e6, bytes / ms[v] / 1e6, x, err[v],
                    is_reordered(v) ? conv_r_ms : conv_ms,
                    have_plan ? st.mean_nnz_per_block : 0.0, per_win, route_kernel,
                    v == V_ROUTED ? explore_calls : 0, is_reordered(v) ? ord : "",
                    is_reordered(v) ? st_r.reorder_ms : 0.0,
                    is_reordered(v) ? st_r.reorder_nnz_per_block_after : 0.0,
                    is_reordered(v) ? "" : tc_bench_late_name(&st_late),
                    is_reordered(v) ? 0.0 : st_late.late_build_ms,
                    is_reordered(v) ? 0.0 : st_late.mean_nnz_per_block,
                    is_reordered(v) ? conv_r_ms : conv_first_ms);
    }
    fflush(stdout);
    for (int v = 0; v < V_COUNT; v++)
        cudaFree(c.buf[v]);
    cusparseDestroySpMat(c.cuC);
    cusparseDestroyDnMat(c.cuA);
    cusparseDestroyDnMat(c.cuB);
    tcsparseDestroySpMat(c.tcC);
    if (c.tcC_r)
        tcsparseDestroySpMat(c.tcC_r);
    tcsparseDestroyDnMat(c.tcA);
    tcsparseDestroyDnMat(c.tcB);
    tcsparseDestroy(c.tc);
    cusparseDestroy(c.cu);
    cudaEventDestroy(c.e0);
    cudaEventDestroy(c.e1);
    cudaFree(d_off);
    cudaFree(d_col);
    cudaFree(d_A);
    cudaFree(d_B);
    cudaFree(d_C);
}


static const char *const precisions[] = {"f32", "tf32", "f16", "f16f32", NULL};

static const tc_bench_tool tool = {
    .name = "tcsparse-bench-sddmm",
    .size_flag = 'k',
    .precisions = precisions,
    .csv_header = "input,rows,cols,nnz,K,prec,variant,ms,gflops,gbps,x_cusparse,"
                  "relerr_vs_cusparse,convert_ms,nnz_per_block,nnz_per_window,route,explore_calls,"
                  "reorder,reorder_ms,nnz_per_block_reordered,late,late_build_ms,nnz_per_block_late,"
                  "convert_first_ms\n",
    .usage_input = "C's pattern: Matrix Market file (.mtx, .mtx.gz) or generator spec",
    .usage_sizes =
        "  -k LIST      K values (inner dimension), comma separated (default 32,128,256)\n"
        "  -p LIST      precisions: f32 (3xTF32), tf32, f16 (FP16 A, B, C), f16f32 (FP16 A, B,\n"
        "               FP32 C) (default f32,tf32)\n",
    .usage_reorder =
        "  --reorder[=always|auto]  also time tc-base-reordered and tc-balanced-reordered:\n"
        "               the same pattern on a plan with reordered rows (always: the best\n"
        "               ordering by block count, the default here; auto: only with a gain\n"
        "               of TCSPARSE_X_REORDER_MIN_GAIN percent, default 10; candidates from\n"
        "               TCSPARSE_X_REORDER_ORDERINGS); the header line and CSV add the\n"
        "               ordering, reorder ms and nnz/block after\n",
    .bench_one = bench_one,
};

int main(int argc, char **argv) { return tc_bench_main(&tool, argc, argv); }
