/* tcsparse-bench: times tcsparseSpMM (routed, forced tensor-core base and balanced, and with
 * --reorder both again on a plan with reordered rows, forced CUDA cores) against cuSPARSE (ALG_DEFAULT,
 * CSR_ALG2, CSR_ALG3) in one run, with CUDA events, warm-up and the median of repeated runs;
 * prints a table and optionally writes CSV. */
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
#include "roofline.h"

enum { V_ROUTED, V_TC_BASE, V_TC_BAL, V_TC_BASE_R, V_TC_BAL_R, V_CUDA_CORE, V_CU_DEFAULT,
       V_CU_ALG2, V_CU_ALG3, V_COUNT };
static const char *vname[V_COUNT] = {"routed", "tc-base", "tc-balanced", "tc-base-reordered",
                                     "tc-balanced-reordered", "cuda-cores", "cusparse-default",
                                     "cusparse-alg2", "cusparse-alg3"};
#define V_TC_LAST V_CUDA_CORE /* the variants that run through tcsparse */
static int is_reordered(int v) { return v == V_TC_BASE_R || v == V_TC_BAL_R; }
static tcsparseRoute_t tc_route_of(int v)
{
    return v == V_ROUTED ? TCSPARSE_ROUTE_AUTO
           : v == V_CUDA_CORE ? TCSPARSE_ROUTE_CUDA_CORE
           : v == V_TC_BASE || v == V_TC_BASE_R ? TCSPARSE_ROUTE_TC_BASE
                                                : TCSPARSE_ROUTE_TC_BALANCED;
}
/* The path a forced variant must run on to be timed as itself. */
static tcsparsePath_t tc_path_of(int v)
{
    return v == V_CUDA_CORE ? TCSPARSE_PATH_CUDA_CORE
           : tc_route_of(v) == TCSPARSE_ROUTE_TC_BASE ? TCSPARSE_PATH_TC_BASE
                                                      : TCSPARSE_PATH_TC_BALANCED;
}

/* Device buffer of n elements of the precision's storage type from doubles/randoms. */
static void *upload(const double *src, size_t n, cudaDataType t)
{
    size_t es = t == CUDA_R_32F ? 4 : 2;
    void *h = malloc(n * es + 16), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        float v = src ? (float)src[i] : tc_bench_rand();
        if (t == CUDA_R_32F) ((float *)h)[i] = v;
        else if (t == CUDA_R_16F) ((uint16_t *)h)[i] = tc_f2h(v);
        else ((uint16_t *)h)[i] = tc_f2bf(v);
    }
    CK(cudaMalloc(&d, n * es + 16));
    CK(cudaMemcpy(d, h, n * es, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static double *download(const void *d, size_t n, cudaDataType t)
{
    size_t es = t == CUDA_R_32F ? 4 : 2;
    void *h = malloc(n * es + 16);
    double *out = malloc(n * sizeof *out + 8);
    CK(cudaMemcpy(h, d, n * es, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        out[i] = t == CUDA_R_32F ? ((float *)h)[i]
                 : t == CUDA_R_16F ? tc_h2f(((uint16_t *)h)[i])
                                   : tc_bf2f(((uint16_t *)h)[i]);
    free(h);
    return out;
}

typedef struct {
    cusparseHandle_t cu;
    tcsparseHandle_t tc;
    cusparseSpMatDescr_t cuA;
    cusparseDnMatDescr_t cuB, cuC;
    tcsparseSpMatDescr_t tcA, tcA_r; /* tcA_r: the same arrays, plan with reordered rows */
    tcsparseDnMatDescr_t tcB, tcC;
    void *buf[V_COUNT];
    cudaEvent_t e0, e1;
    int N;
} ctx_t;

/* Runs variant v once; returns 0 on success. */
static int run_variant(ctx_t *c, int v, cudaDataType vt)
{
    float one = 1.0f, zero = 0.0f;
    if (v <= V_TC_LAST) {
        tcsparseSetRoute(c->tc, tc_route_of(v));
        return tcsparseSpMM(c->tc, TCSPARSE_OPERATION_NON_TRANSPOSE,
                            TCSPARSE_OPERATION_NON_TRANSPOSE, &one,
                            is_reordered(v) ? c->tcA_r : c->tcA, c->tcB, &zero, c->tcC,
                            CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, c->buf[v]) != TCSPARSE_STATUS_SUCCESS;
    }
    cusparseSpMMAlg_t alg = v == V_CU_DEFAULT ? CUSPARSE_SPMM_ALG_DEFAULT
                            : v == V_CU_ALG2 ? CUSPARSE_SPMM_CSR_ALG2 : CUSPARSE_SPMM_CSR_ALG3;
    (void)vt;
    return cusparseSpMM(c->cu, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                        &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F, alg, c->buf[v]) !=
           CUSPARSE_STATUS_SUCCESS;
}

static int prepare_variant(ctx_t *c, int v)
{
    float one = 1.0f, zero = 0.0f;
    size_t sz = 0;
    if (v <= V_TC_LAST) {
        tcsparseSpMatDescr_t A = is_reordered(v) ? c->tcA_r : c->tcA;
        if (A == NULL)
            return 1;
        tcsparseSetRoute(c->tc, tc_route_of(v));
        if (tcsparseSpMM_bufferSize(c->tc, 0, 0, &one, A, c->tcB, &zero, c->tcC, CUDA_R_32F,
                                    TCSPARSE_SPMM_ALG_DEFAULT, &sz) != TCSPARSE_STATUS_SUCCESS)
            return 1;
        CK(cudaMalloc(&c->buf[v], sz + 16));
        return tcsparseSpMM_preprocess(c->tc, 0, 0, &one, A, c->tcB, &zero, c->tcC,
                                       CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, c->buf[v]) != 0;
    }
    cusparseSpMMAlg_t alg = v == V_CU_DEFAULT ? CUSPARSE_SPMM_ALG_DEFAULT
                            : v == V_CU_ALG2 ? CUSPARSE_SPMM_CSR_ALG2 : CUSPARSE_SPMM_CSR_ALG3;
    if (cusparseSpMM_bufferSize(c->cu, 0, 0, &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F, alg,
                                &sz) != CUSPARSE_STATUS_SUCCESS)
        return 1;
    CK(cudaMalloc(&c->buf[v], sz + 16));
    if (alg == CUSPARSE_SPMM_CSR_ALG3 &&
        cusparseSpMM_preprocess(c->cu, 0, 0, &one, c->cuA, c->cuB, &zero, c->cuC, CUDA_R_32F, alg,
                                c->buf[v]) != CUSPARSE_STATUS_SUCCESS)
        return 1;
    return 0;
}

/* tc_bench_time_interleaved's callback: one run of a variant of the case in ctx. */
typedef struct {
    ctx_t *c;
    cudaDataType vt;
} run_ctx;

static int run_cb(void *p, int v)
{
    run_ctx *b = p;
    return run_variant(b->c, v, b->vt);
}

/* The device's L2 and DRAM rates (GB/s), measured at the first input (roofline.h). */
static double rate_l2, rate_dram;

static void measure_rates_once(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    if (tc_util_bandwidth(&rate_l2, &rate_dram) != cudaSuccess) {
        (void)cudaGetLastError();
        fprintf(stderr, "tcsparse-bench: the memory rates could not be measured: no roofline\n");
    }
    printf("roofline rates (measured): L2 %.0f GB/s, DRAM %.0f GB/s\n", rate_l2, rate_dram);
}

static void bench_one(const char *input, const tc_csr *m, const char *prec, int N, const tc_bench_opts *o)
{
    cudaDataType vt = strcmp(prec, "f16") == 0 ? CUDA_R_16F
                      : strcmp(prec, "bf16") == 0 ? CUDA_R_16BF : CUDA_R_32F;
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.N = N;
    int *d_off, *d_col;
    int32_t *h_off = malloc(sizeof *h_off * (size_t)(m->rows + 1));
    for (int64_t i = 0; i <= m->rows; i++)
        h_off[i] = (int32_t)m->row_off[i];
    CK(cudaMalloc((void **)&d_off, sizeof *d_off * (size_t)(m->rows + 1)));
    CK(cudaMalloc((void **)&d_col, sizeof *d_col * (size_t)(m->nnz + 1)));
    CK(cudaMemcpy(d_off, h_off, sizeof *d_off * (size_t)(m->rows + 1), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_col, m->col, sizeof *d_col * (size_t)m->nnz, cudaMemcpyHostToDevice));
    free(h_off);
    void *d_val = upload(m->val, (size_t)m->nnz, vt);
    void *d_B = upload(NULL, (size_t)m->cols * N, vt);
    void *d_C;
    size_t es = vt == CUDA_R_32F ? 4 : 2;
    CK(cudaMalloc(&d_C, (size_t)m->rows * N * es + 16));
    CK(cudaEventCreate(&c.e0));
    CK(cudaEventCreate(&c.e1));
    cusparseCreate(&c.cu);
    tcsparseCreate(&c.tc);
    if (strcmp(prec, "tf32") == 0)
        tcsparseSetMathMode(c.tc, TCSPARSE_MATH_TF32);
    cusparseCreateCsr(&c.cuA, m->rows, m->cols, m->nnz, d_off, d_col, d_val, CUSPARSE_INDEX_32I,
                      CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt);
    cusparseCreateDnMat(&c.cuB, m->cols, N, N, d_B, vt, CUSPARSE_ORDER_ROW);
    cusparseCreateDnMat(&c.cuC, m->rows, N, N, d_C, vt, CUSPARSE_ORDER_ROW);
    tcsparseCreateCsr(&c.tcA, m->rows, m->cols, m->nnz, d_off, d_col, d_val, TCSPARSE_INDEX_32I,
                      TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, vt);
    tcsparseCreateDnMat(&c.tcB, m->cols, N, N, d_B, vt, TCSPARSE_ORDER_ROW);
    tcsparseCreateDnMat(&c.tcC, m->rows, N, N, d_C, vt, TCSPARSE_ORDER_ROW);

    tcsparseMetcfStats_t st;
    /* the handle's first GPU call creates its cuSPARSE handle: keep that out of the plan time */
    {
        float one = 1.0f, zero = 0.0f;
        size_t sz;
        tcsparseSpMM_bufferSize(c.tc, 0, 0, &one, c.tcA, c.tcB, &zero, c.tcC, CUDA_R_32F,
                                TCSPARSE_SPMM_ALG_DEFAULT, &sz);
        /* and one kernel launch, on the handle's stream: after the bench's own work
         * (reading and parsing the input) the host's first launch cost 30-47 us on the H100
         * machine, whatever the kernel, against 6-10 us for the next; that is the host's
         * state, not the plan's cost.  (A 4-byte memset does not take that cost.) */
        CK(tc_util_launch_nop(0));
        CK(cudaDeviceSynchronize());
    }
    double t0 = tc_bench_now_ms();
    int have_plan = tcsparseSpMatGetMetcfStats(c.tc, c.tcA, &st) == TCSPARSE_STATUS_SUCCESS;
    double conv_ms = tc_bench_now_ms() - t0;
    /* the first build may carry the process's one-time costs (the pool's mapping, kernels
     * loaded): the median of it and o->builds - 1 more (bench_timing.h) */
    const double conv_first_ms = conv_ms;
    if (have_plan && o->builds > 1)
        conv_ms = tc_bench_build_median_ms(c.tc, m->rows, m->cols, m->nnz, d_off, d_col, d_val,
                                           vt, conv_ms, o->builds - 1);
    if (!have_plan)
        fprintf(stderr, "  no tensor-core plan: %s\n", tcsparseGetLastErrorMessage());
    /* --reorder: a second descriptor on the same arrays whose plan reorders rows */
    tcsparseMetcfStats_t st_r;
    memset(&st_r, 0, sizeof st_r);
    double conv_r_ms = 0;
    if (o->reorder) {
        tcsparseCreateCsr(&c.tcA_r, m->rows, m->cols, m->nnz, d_off, d_col, d_val,
                          TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, vt);
        tcsparseSpMatSetReorder(c.tcA_r, (tcsparseReorder_t)o->reorder);
        t0 = tc_bench_now_ms();
        if (tcsparseSpMatGetMetcfStats(c.tc, c.tcA_r, &st_r) != TCSPARSE_STATUS_SUCCESS) {
            fprintf(stderr, "  no reordered tensor-core plan: %s\n", tcsparseGetLastErrorMessage());
            tcsparseDestroySpMat(c.tcA_r);
            c.tcA_r = NULL;
        }
        conv_r_ms = tc_bench_now_ms() - t0;
    }

    float ms[V_COUNT];
    int want[V_COUNT] = {0};
    double err[V_COUNT];
    double *ref = NULL;
    char route_kernel[64] = "";
    int explore_calls = 0;
    run_ctx rc = {&c, vt};
    /* cuSPARSE's default first: it is the reference every other variant is checked against */
    int order[V_COUNT], no = 0;
    order[no++] = V_CU_DEFAULT;
    for (int v = V_COUNT - 1; v >= 0; v--)
        if (v != V_CU_DEFAULT)
            order[no++] = v;
    for (int oi = 0; oi < no; oi++) {
        const int v = order[oi];
        ms[v] = -1;
        err[v] = NAN;
        if (prepare_variant(&c, v)) {
            cudaGetLastError();
            continue;
        }
        CK(cudaMemset(d_C, 0xff, (size_t)m->rows * N * es)); /* NaN poison */
        if (run_variant(&c, v, vt)) {
            cudaGetLastError();
            continue;
        }
        CK(cudaDeviceSynchronize());
        if (o->check) {
            double *out = download(d_C, (size_t)m->rows * N, vt);
            if (v == V_CU_DEFAULT)
                ref = out;
            else if (ref) {
                err[v] = tc_bench_rel_err(ref, out, (size_t)m->rows * N);
                free(out);
            } else
                free(out);
        }
        if (v <= V_TC_LAST) {
            tcsparseRouteInfo_t ri;
            tcsparseGetLastRoute(c.tc, &ri);
            /* the first calls of a kind measure the candidate paths (routed, src/route/route.c)
             * and the kernel variants (every tensor-core path, src/route/tune.c) on themselves:
             * time what they settle on, and report the calls taken */
            const int calls = tc_bench_settle_route(c.tc, &ri, run_cb, &rc, v);
            /* the settled call's result is the one checked */
            if (calls > 0 && o->check && ref) {
                CK(cudaMemset(d_C, 0xff, (size_t)m->rows * N * es));
                if (run_variant(&c, v, vt) == 0) {
                    CK(cudaDeviceSynchronize());
                    double *out = download(d_C, (size_t)m->rows * N, vt);
                    err[v] = tc_bench_rel_err(ref, out, (size_t)m->rows * N);
                    free(out);
                }
            }
            if (v == V_ROUTED) {
                explore_calls = calls;
                snprintf(route_kernel, sizeof route_kernel, "%s", ri.kernel);
            } else if (ri.path != tc_path_of(v)) {
                /* a forced route falls back to cuSPARSE where the kernels cannot run: that
                 * time must not be reported as the forced path's */
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
    tc_bench_late_report(c.tc, have_plan ? c.tcA : NULL, st.mean_nnz_per_block, &st_late);
    tc_bench_time_interleaved(V_COUNT, want, ms, o->reps, o->warm, run_cb, &rc, c.e0, c.e1, vname);
    float best_cu = -1;
    for (int v = V_CU_DEFAULT; v < V_COUNT; v++)
        if (ms[v] > 0 && (best_cu < 0 || ms[v] < best_cu))
            best_cu = ms[v];
    double flop = 2.0 * (double)m->nnz * N;
    /* the roofline (roofline.h): the least traffic at the measured rates; C written only
     * (beta = 0) */
    measure_rates_once();
    tc_roofline_counts rk;
    double bound_ms = 0;
    if (tc_roofline_count(m, &rk) == 0) {
        const tc_roofline_bytes rb = tc_roofline_bytes_of(&rk, m->rows, m->nnz, N, (int)es,
                                                          (int)es, 0);
        bound_ms = tc_roofline_ms(&rb, rate_l2, rate_dram);
    }
    /* the plan's device bytes per nonzero (the caller's CSR comes on top) */
    const double plan_bpn = have_plan && m->nnz > 0 ? (double)st.metcf_bytes / (double)m->nnz : 0;
    printf("%-28s nnz=%-10lld N=%-4d %-5s conv=%.2fms (first %.2f) nnz/blk=%.2f route=%s (%d "
           "calls measuring)\n", input, (long long)m->nnz, N, prec, conv_ms, conv_first_ms,
           have_plan ? st.mean_nnz_per_block : 0.0, route_kernel, explore_calls);
    printf("    plan %.2f bytes/nnz (%.3fx CSR); roofline bound %.4f ms\n", plan_bpn,
           have_plan && st.csr_bytes > 0 ? (double)st.metcf_bytes / (double)st.csr_bytes : 0.0,
           bound_ms);
    const char *ord = c.tcA_r ? tcsparseGetOrderingName((tcsparseOrdering_t)st_r.reorder_ordering) : "";
    if (o->reorder)
        printf("    reordered plan: %s, nnz/blk %.2f -> %.2f, reorder %.1f ms of conv %.1f ms\n",
               c.tcA_r ? ord : "n/a", st_r.reorder_nnz_per_block_before,
               st_r.reorder_nnz_per_block_after, st_r.reorder_ms, conv_r_ms);
    for (int v = 0; v < V_COUNT; v++) {
        if (is_reordered(v) && !o->reorder)
            continue;
        if (ms[v] < 0) {
            printf("    %-17s %10s\n", vname[v], "n/a");
            continue;
        }
        printf("    %-17s %10.4f ms %9.1f GFLOP/s  x%.2f vs default  x%.2f vs best-cusparse",
               vname[v], ms[v], flop / ms[v] / 1e6,
               ms[V_CU_DEFAULT] > 0 ? ms[V_CU_DEFAULT] / ms[v] : NAN, best_cu / ms[v]);
        if (bound_ms > 0)
            printf("  %3.0f%% of bound", 100.0 * bound_ms / ms[v]);
        if (o->check && !isnan(err[v]))
            printf("  relerr=%.2e", err[v]);
        printf("\n");
        if (o->csv)
            fprintf(o->csv, "%s,%lld,%lld,%lld,%d,%s,%s,%.5f,%.1f,%.3f,%.3f,%.3e,%.3f,%.3f,%s,"
                            "%s,%.3f,%.3f,%d,%s,%.3f,%.3f,%.3f,%.3f,%.5f,%.3f\n",
                    input, (long long)m->rows, (long long)m->cols, (long long)m->nnz, N, prec,
                    vname[v], ms[v], flop / ms[v] / 1e6,
                    ms[V_CU_DEFAULT] > 0 ? ms[V_CU_DEFAULT] / ms[v] : NAN, best_cu / ms[v],
                    err[v], is_reordered(v) ? conv_r_ms : conv_ms,
                    have_plan ? st.mean_nnz_per_block : 0.0, route_kernel,
                    is_reordered(v) ? ord : "", is_reordered(v) ? st_r.reorder_ms : 0.0,
                    is_reordered(v) ? st_r.reorder_nnz_per_block_after : 0.0,
                    v == V_ROUTED ? explore_calls : 0,
                    is_reordered(v) ? "" : tc_bench_late_name(&st_late),
                    is_reordered(v) ? 0.0 : st_late.late_build_ms,
                    is_reordered(v) ? 0.0 : st_late.mean_nnz_per_block,
                    is_reordered(v) ? conv_r_ms : conv_first_ms, plan_bpn, bound_ms,
                    bound_ms > 0 ? bound_ms / ms[v] : 0.0);
    }
    fflush(stdout);
    if (o->csv)
        fflush(o->csv); /* rows survive a run cut short */
    for (int v = 0; v < V_COUNT; v++)
        cudaFree(c.buf[v]);
    cusparseDestroySpMat(c.cuA);
    cusparseDestroyDnMat(c.cuB);
    cusparseDestroyDnMat(c.cuC);
    tcsparseDestroySpMat(c.tcA);
    if (c.tcA_r)
        tcsparseDestroySpMat(c.tcA_r);
    tcsparseDestroyDnMat(c.tcB);
    tcsparseDestroyDnMat(c.tcC);
    tcsparseDestroy(c.tc);
    cusparseDestroy(c.cu);
    cudaEventDestroy(c.e0);
    cudaEventDestroy(c.e1);
    cudaFree(d_off);
    cudaFree(d_col);
    cudaFree(d_val);
    cudaFree(d_B);
    cudaFree(d_C);
}


static const char *const precisions[] = {"f32", "tf32", "f16", "bf16", NULL};

static const tc_bench_tool tool = {
    .name = "tcsparse-bench",
    .size_flag = 'n',
    .precisions = precisions,
    .csv_header = "input,rows,cols,nnz,N,prec,variant,ms,gflops,x_default,x_best_cusparse,"
                  "relerr_vs_cusparse,convert_ms,nnz_per_block,route,reorder,"
                  "reorder_ms,nnz_per_block_reordered,explore_calls,late,late_build_ms,"
                  "nnz_per_block_late,convert_first_ms,plan_bytes_per_nnz,bound_ms,of_bound\n",
    .usage_input = "Matrix Market file (.mtx, .mtx.gz) or generator spec",
    .usage_sizes =
        "  -n LIST      N values, comma separated (default 32,128,256)\n"
        "  -p LIST      precisions: f32 (3xTF32), tf32, f16, bf16 (default f32,tf32)\n",
    .usage_reorder =
        "  --reorder[=always|auto]  also time tc-base-reordered and tc-balanced-reordered:\n"
        "               the same matrix on a plan with reordered rows (always: the best\n"
        "               ordering by block count, the default here; auto: only with a gain\n"
        "               of TCSPARSE_X_REORDER_MIN_GAIN percent, default 10); the header line\n"
        "               and CSV add the ordering, reorder ms and nnz/block after\n",
    .bench_one = bench_one,
};

int main(int argc, char **argv) { return tc_bench_main(&tool, argc, argv); }
