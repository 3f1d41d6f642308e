/* Interleaved timing of the benchmarks' variants (bench_timing.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_timing.h"
#include "util_cuda.h"

static void ck(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "bench_timing: %s: %s\n", what, cudaGetErrorString(e));
        exit(2);
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void tc_bench_time_interleaved(int n, const int *want, float *ms, int reps, int warm,
                               tc_bench_run_fn run, void *ctx, cudaEvent_t e0, cudaEvent_t e1,
                               const char *const *names)
{
    float **t = calloc((size_t)n, sizeof *t);
    int *live = calloc((size_t)n, sizeof *live);
    if (t == NULL || live == NULL) {
        fprintf(stderr, "bench_timing: out of host memory\n");
        exit(2);
    }
    for (int v = 0; v < n; v++) {
        live[v] = want[v];
        if (live[v] && (t[v] = malloc(sizeof *t[v] * (size_t)(reps > 0 ? reps : 1))) == NULL) {
            fprintf(stderr, "bench_timing: out of host memory\n");
            exit(2);
        }
    }
    for (int v = 0; v < n; v++)
        for (int i = 0; live[v] && i < warm; i++)
            if (run(ctx, v)) {
                fprintf(stderr, "  %s: a warm-up run failed; variant dropped\n", names[v]);
                live[v] = 0;
            }
    for (int i = 0; i < reps; i++)
        for (int v = 0; v < n; v++) {
            if (!live[v])
                continue;
            if (run(ctx, v)) { /* untimed: the timed run finds its own data in L2 */
                fprintf(stderr, "  %s: a run failed; variant dropped\n", names[v]);
                live[v] = 0;
                continue;
            }
            ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); /* host work inside events */
            ck(cudaEventRecord(e0, 0), "cudaEventRecord");
            int failed = run(ctx, v); /* events around no work would time nothing */
            ck(cudaEventRecord(e1, 0), "cudaEventRecord");
            ck(cudaEventSynchronize(e1), "cudaEventSynchronize");
            ck(cudaEventElapsedTime(&t[v][i], e0, e1), "cudaEventElapsedTime");
            if (failed) {
                fprintf(stderr, "  %s: a timed run failed; variant dropped\n", names[v]);
                live[v] = 0;
            }
        }
    for (int v = 0; v < n; v++) {
        if (live[v] && reps > 0) {
            qsort(t[v], (size_t)reps, sizeof *t[v], cmp_float);
            ms[v] = t[v][reps / 2];
        } else {
            ms[v] = -1;
        }
        free(t[v]);
    }
    free(t);
    free(live);
}

/* Whether ri is a call that was measuring: the route's paths or the kernel variants. */
static int tc_bench_measuring(const tcsparseRouteInfo_t *ri)
{
    /* any ordering note: a round's decision may be followed by the next round's start */
    return strncmp(ri->reason, "exploring", 9) == 0 || strstr(ri->reason, "; tuning:") != NULL ||
           strstr(ri->reason, "; ordering: ") != NULL;
}

const char *tc_bench_late_name(const tcsparseMetcfStats_t *st)
{
    static const char *const names[] = {"none", "waiting", "trial", "ordered", "caller",
                                        "no-gain", "not-tried"};
    const int state = st->late_state;
    if (state == TCSPARSE_LATE_KEPT_ORDERED) { /* the ordering kept: first-col or bfs */
        const char *n = tcsparseGetOrderingName((tcsparseOrdering_t)st->reorder_ordering);
        return n != NULL ? n : "?";
    }
    return state >= 0 && state < (int)(sizeof names / sizeof names[0]) ? names[state] : "?";
}

int tc_bench_settle_route(tcsparseHandle_t h, tcsparseRouteInfo_t *ri, tc_bench_run_fn run,
                          void *ctx, int v)
{
    if (!tc_bench_measuring(ri))
        return 0;
    int calls = 1;
    while (calls < 128) {
        if (run(ctx, v))
            break;
        ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        tcsparseGetLastRoute(h, ri);
        if (!tc_bench_measuring(ri))
            break;
        calls++;
    }
    return calls;
}

void tc_bench_late_report(tcsparseHandle_t h, tcsparseConstSpMatDescr_t d, double before,
                          tcsparseMetcfStats_t *st)
{
    memset(st, 0, sizeof *st);
    if (d == NULL || tcsparseSpMatGetMetcfStats(h, d, st) != TCSPARSE_STATUS_SUCCESS) {
        memset(st, 0, sizeof *st);
        return;
    }
    if (st->late_state != TCSPARSE_LATE_NONE)
        printf("  late ordering: %s (nnz/blk %.2f -> %.2f; last round: build %.2f ms, %d calls, "
               "fastest call %.4f ms on the plan set aside, %.4f ms on the round's)\n",
               tc_bench_late_name(st), before, st->mean_nnz_per_block, st->late_build_ms,
               st->late_calls, st->late_ms_caller, st->late_ms_ordered);
}

double tc_bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tc_bench_build_median_ms(tcsparseHandle_t h, int64_t rows, int64_t cols, int64_t nnz,
                                void *offsets, void *indices, void *values, cudaDataType vt,
                                double first_ms, int reps)
{
    enum { kMax = 16 };
    double t[kMax];
    int n = 0;
    t[n++] = first_ms;
    if (reps > kMax - 1)
        reps = kMax - 1;
    /* L2 flushed before each build (a memset twice its size): the arrays the build reads
     * are not left in L2 by the build before */
    static void *flush;
    static size_t flush_bytes;
    static int flush_tried;
    if (!flush_tried) {
        flush_tried = 1;
        int dev = 0, l2 = 0;
        if (cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess && l2 > 0 &&
            cudaMalloc(&flush, 2 * (size_t)l2) == cudaSuccess)
            flush_bytes = 2 * (size_t)l2;
        else
            flush = NULL;
        (void)cudaGetLastError();
    }
    for (int i = 0; i < reps; i++) {
        tcsparseSpMatDescr_t d;
        if (tcsparseCreateCsr(&d, rows, cols, nnz, offsets, indices, values, TCSPARSE_INDEX_32I,
                              TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, vt) !=
            TCSPARSE_STATUS_SUCCESS)
            break;
        tcsparseMetcfStats_t st;
        if (flush != NULL && cudaMemsetAsync(flush, i, flush_bytes, 0) != cudaSuccess) {
            fprintf(stderr, "tcsparse-bench: the L2 flush failed (%s); builds timed without it\n",
                    cudaGetErrorString(cudaGetLastError()));
            flush = NULL; /* not freed: a failed memset leaves its state unknown */
        }
        int ok = tc_util_launch_nop(0) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
        const double t0 = tc_bench_now_ms();
        ok = ok && tcsparseSpMatGetMetcfStats(h, d, &st) == TCSPARSE_STATUS_SUCCESS;
        const double ms = tc_bench_now_ms() - t0;
        tcsparseDestroySpMat(d);
        if (!ok)
            break;
        t[n++] = ms;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
