/* The benchmarks' timing, shared by tcsparse-bench and tcsparse-bench-sddmm: the variants of
 * one case timed interleaved, one call's latency each (CUDA events, warm-up, median). */
#ifndef TC_BENCH_TIMING_H
#define TC_BENCH_TIMING_H

#include <cuda_runtime_api.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"

/* Runs variant v of the case in ctx once on the default stream; 0 on success. */
typedef int (*tc_bench_run_fn)(void *ctx, int v);

/* Times the variants v < n with want[v] set: `warm` untimed runs of each, then `reps`
 * repetitions in which every variant runs in turn, an untimed run, the GPU idle, then a timed
 * run between the events e0 and e1 (so the timed call finds its own data in L2, not the
 * previous variant's, and its host work is inside the events: the latency of one call).
 * Timing the variants one after another instead let clock and cache drift show up as 0.3-0.5
 * us between identical calls on 20 us matrices.  ms[v] gets the median, or -1 for a variant
 * not wanted or whose run failed (reported on stderr with names[v]). */
void tc_bench_time_interleaved(int n, const int *want, float *ms, int reps, int warm,
                               tc_bench_run_fn run, void *ctx, cudaEvent_t e0, cudaEvent_t e1,
                               const char *const *names);

/* A short name of late ordering's outcome in st for tables and CSV: the ordering kept
 * ("first-col", "bfs"), or the state ("caller", "no-gain", ...). */
const char *tc_bench_late_name(const tcsparseMetcfStats_t *st);
/* Late ordering's outcome on d (NULL: no plan) after the settling calls: its statistics into
 * *st (zeroed when they cannot be had), and one line printed when late ordering is in effect
 * (before: the caller's order's nonzeros per block). */
void tc_bench_late_report(tcsparseHandle_t h, tcsparseConstSpMatDescr_t d, double before,
                          tcsparseMetcfStats_t *st);

/* Milliseconds on the monotonic clock (host wall time). */
double tc_bench_now_ms(void);

/* The plan build's time in steady state: `reps` more builds of the matrix in csr (a CSR
 * descriptor's arrays, 32-bit indices, base 0, rows x cols with nnz nonzeros of type vt), each
 * on a descriptor of its own created and destroyed around it, each after L2 was flushed (a
 * memset of twice its size) and an empty kernel launch the GPU has run (util_cuda.h), timed
 * on the host around
 * tcsparseSpMatGetMetcfStats.  Returns the median of those times and first_ms (the first
 * build's, which may include the process's one-time costs: the pool's mapping, loading
 * kernels); a failed build ends the series. */
double tc_bench_build_median_ms(tcsparseHandle_t h, int64_t rows, int64_t cols, int64_t nnz,
                                void *offsets, void *indices, void *values, cudaDataType vt,
                                double first_ms, int reps);

/* The automatic route measures its candidate paths on the first calls of a kind of call
 * (src/route/route.c), every tensor-core path its kernel variants (src/route/tune.c), and late ordering
 * times two plans (src/route/late.c).  When the last call on h was one of those ("exploring",
 * "; tuning:" or "; ordering: " in ri->reason), runs variant v
 * again, synchronising after each run, until a call measures nothing, at most 128 calls; *ri
 * is then the last route.  Returns the calls that were measuring, 0 when the last call was
 * not. */
int tc_bench_settle_route(tcsparseHandle_t h, tcsparseRouteInfo_t *ri, tc_bench_run_fn run,
                          void *ctx, int v);

#endif
