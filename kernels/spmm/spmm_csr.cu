// The CUDA-core CSR SpMM (tc_spmm_csr_launch, kernels.h): C = alpha * A * B + beta * C read
// from the caller's CSR arrays in the order of the structure's schedule (tc_csr_sched,
// spmm_csr_sched.cu).  The route measures it beside the tensor-core kernels and cuSPARSE
// (docs/performance.md, "CUDA cores"); FP32 products are exact FMA, as cuSPARSE's.
//
// Work: one group of G lanes a unit of the schedule (a row, or a piece of at most
// TC_CSR_PIECE nonzeros of a longer row), longest units first, so that the long rows of
// power-law matrices start early and no single row holds up the end.  Each lane owns 4
// consecutive columns (one 16- or 8-byte vector) of V column slices of 4G columns, a grid row
// (blockIdx.y) a tile of 4GV columns.  A group reads its unit's column indices and values G at
// a time, broadcasts them by shuffles and keeps U rows of B in flight a lane, then writes its
// row once (beta * old added), or for a piece adds into the row that a first kernel scaled by
// beta (FP32 C; a half-precision C gets each long row from one group, rounded once).
//
// Bad structure cannot make it read or write out of bounds: the schedule holds positions
// inside [0, nnz] (clamped when it was built), a column outside [0, K) contributes nothing.
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include "kernels.h"
#include "spmm_kernel.cuh" // tc::to_f, from_f, guard_stops, with_storage_types, load4, ...

namespace {

using tc::from_f;
using tc::guard_stops;
using tc::load4;
using tc::plain4;
using tc::scalar;
using tc::store4;
using tc::to_f;

constexpr int kThreads = 256; // threads a block
// Blocks an SM keeps resident: the kernel waits on gathers of B, and 5 blocks (48 registers,
// 40 warps an SM) with 4 rows of B in flight a lane beat 3 blocks with 8 in flight by 10-30%
// (docs/performance.md, "CUDA cores"); two column slices a lane need 4 blocks' registers.
constexpr int min_blocks(int V) { return V == 1 ? 5 : 4; }

struct CsrParams { // M, K, N, nnz below TC_CSR_MAX (the route's eligibility)
    int32_t M, K, N;
    const void *idx;
    int base;
    const int32_t *u_row, *u_start, *u_len; // the schedule
    int32_t nunits, nsplit_units;
    const int32_t *split_rows;
    int32_t nsplit_rows;
    const int *guard; // NULL, or the guard's verdict: nothing runs where it is 0
    const void *a_val, *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
};

// Adds 4 values into an FP32 C atomically (a piece of a split row).
__device__ __forceinline__ void add4(float *q, const float (&x)[4])
{
#if __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float4 *>(q), make_float4(x[0], x[1], x[2], x[3]));
#else
    for (int i = 0; i < 4; ++i)
        atomicAdd(q + i, x[i]);
#endif
}

// The rows split into pieces: C = beta * C (0 where beta is 0, whatever C held), a block a row.
template <class CT>
__global__ void __launch_bounds__(kThreads) csr_split_rows_beta(const CsrParams p)
{
    const float beta = scalar(p.beta_dev, p.beta);
    if (beta == 1.0f || guard_stops(p))
        return;
    CT *C = static_cast<CT *>(p.C);
    for (int32_t i = blockIdx.x; i < p.nsplit_rows; i += gridDim.x) {
        CT *crow = C + (int64_t)p.split_rows[i] * p.ldc;
        for (int32_t col = 4 * threadIdx.x; col < p.N; col += 4 * kThreads) {
            float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (beta != 0.0f) {
                plain4(crow + col, o);
#pragma unroll
                for (int x = 0; x < 4; ++x)
                    o[x] *= beta;
            }
            store4(crow + col, o);
        }
    }
}

// G lanes a unit, V slices of 4G columns a lane, U nonzeros' rows of B in flight a lane; IT
// the type of the column indices.
template <class AT, class CT, class IT, int G, int V>
__global__ void __launch_bounds__(kThreads, min_blocks(V)) csr_spmm_kernel(const CsrParams p)
{
    constexpr int U = 4 / V; // 16 B values a lane in flight

    const int lane = threadIdx.x & 31;
    const int gl = lane % G;
    const unsigned gmask = G == 32 ? 0xffffffffu : ((1u << G) - 1) << (lane - gl);
    const int64_t unit = (int64_t)blockIdx.x * (kThreads / G) + threadIdx.x / G;
    if (unit >= p.nunits || guard_stops(p))
        return; // a group leaves whole
    const int32_t row = __ldg(p.u_row + unit);
    const int32_t kbeg = __ldg(p.u_start + unit);
    int32_t kend = kbeg + __ldg(p.u_len + unit);
    bool piece = unit < p.nsplit_units;
    if (!std::is_same<CT, float>::value && piece) {
        // A half-precision C is rounded once a row, as the rows written whole: the first of
        // a long row's pieces (consecutive units) sums the whole row, the others do nothing.
        if (unit > 0 && __ldg(p.u_row + unit - 1) == row)
            return;
        int64_t last = unit;
        while (last + 1 < p.nsplit_units && __ldg(p.u_row + last + 1) == row)
            ++last;
        kend = __ldg(p.u_start + last) + __ldg(p.u_len + last);
        piece = false;
    }
    const AT *B = static_cast<const AT *>(p.B);
    const AT *av = static_cast<const AT *>(p.a_val);
    const IT *ix = static_cast<const IT *>(p.idx);
    const float alpha = scalar(p.alpha_dev, p.alpha);
    const float beta = scalar(p.beta_dev, p.beta);
    int32_t col0[V];
    bool live[V];
    float acc[V][4];
#pragma unroll
    for (int v = 0; v < V; ++v) {
        col0[v] = (int32_t)blockIdx.y * (4 * G * V) + v * 4 * G + 4 * gl;
        live[v] = col0[v] < p.N;
        acc[v][0] = acc[v][1] = acc[v][2] = acc[v][3] = 0.0f;
    }
    for (int32_t kb = kbeg; kb < kend; kb += G) {
        const int cnt = kend - kb < G ? kend - kb : G;
        int32_t my_col = -1;
        float my_val = 0.0f;
        if (gl < cnt) {
            const int64_t c = (int64_t)__ldg(ix + kb + gl) - p.base;
            if (c >= 0 && c < p.K) {
                my_col = (int32_t)c;
                my_val = to_f(__ldg(av + kb + gl));
            }
        }
        for (int j = 0; j < cnt; j += U) {
            float b[U][V][4];
            float val[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int src = j + u < cnt ? j + u : 0;
                const int32_t c = __shfl_sync(gmask, my_col, src, G);
                const float x = __shfl_sync(gmask, my_val, src, G);
                const bool use = j + u < cnt && c >= 0;
                val[u] = use ? x : 0.0f;
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    if (live[v] && use)
                        load4(B + (int64_t)c * p.ldb + col0[v], b[u][v]);
                    else
                        b[u][v][0] = b[u][v][1] = b[u][v][2] = b[u][v][3] = 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int v = 0; v < V; ++v)
#pragma unroll
                    for (int i = 0; i < 4; ++i)
                        acc[v][i] = fmaf(val[u], b[u][v][i], acc[v][i]);
        }
    }
    CT *C = static_cast<CT *>(p.C);
#pragma unroll
    for (int v = 0; v < V; ++v) {
        if (!live[v])
            continue;
        CT *out = C + (int64_t)row * p.ldc + col0[v];
        float o[4];
        if constexpr (std::is_same<CT, float>::value) {
            if (piece) {
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    o[i] = alpha * acc[v][i];
                add4(out, o);
                continue;
            }
        }
        float old[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (beta != 0.0f)
            plain4(out, old);
#pragma unroll
        for (int i = 0; i < 4; ++i)
            o[i] = alpha * acc[v][i] + (beta != 0.0f ? beta * old[i] : 0.0f);
        store4(out, o);
    }
}

inline unsigned blocks_for(int64_t units, int64_t per_block)
{
    return (unsigned)((units + per_block - 1) / per_block);
}

template <class AT, class CT, class IT, int G, int V>
cudaError_t launch_gv(const CsrParams &p, cudaStream_t s)
{
    const dim3 grid(blocks_for(p.nunits, kThreads / G),
                    (unsigned)((p.N + 4 * G * V - 1) / (4 * G * V)));
    csr_spmm_kernel<AT, CT, IT, G, V><<<grid, kThreads, 0, s>>>(p);
    return cudaGetLastError();
}

template <class AT, class CT, class IT>
cudaError_t launch(const CsrParams &p, cudaStream_t s)
{
    if (p.nsplit_rows > 0 && std::is_same<CT, float>::value) { // pieces add into FP32 C only
        const unsigned blocks = p.nsplit_rows < 4096 ? (unsigned)p.nsplit_rows : 4096u;
        csr_split_rows_beta<CT><<<blocks, kThreads, 0, s>>>(p);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    if (p.nunits == 0)
        return cudaSuccess;
    if (p.N > 128)
        return launch_gv<AT, CT, IT, 32, 2>(p, s);
    if (p.N > 64)
        return launch_gv<AT, CT, IT, 32, 1>(p, s);
    if (p.N > 32)
        return launch_gv<AT, CT, IT, 16, 1>(p, s);
    if (p.N > 16)
        return launch_gv<AT, CT, IT, 8, 1>(p, s);
    if (p.N > 8)
        return launch_gv<AT, CT, IT, 4, 1>(p, s);
    return launch_gv<AT, CT, IT, 2, 1>(p, s);
}

template <class AT, class CT>
cudaError_t launch_types(const CsrParams &p, int idx64, cudaStream_t s)
{
    return idx64 ? launch<AT, CT, long long>(p, s) : launch<AT, CT, int32_t>(p, s);
}

} // namespace

extern "C" tcsparseStatus_t tc_spmm_csr_takes(const tc_spmm_args *a, const tc_csr_arrays *csr,
                                              char *err, size_t errlen)
{
    if (csr->transposed || !tc_spmm_csr_fits(a->B, a->ldb, a->C, a->ldc, a->N, a->ab_type,
                                             a->c_type)) {
        snprintf(err, errlen, "the CUDA-core CSR SpMM takes an untransposed A and B, C with "
                              "N, ldb, ldc multiples of 4 on 4-element boundaries");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    if (a->M >= TC_CSR_MAX || a->K >= TC_CSR_MAX || a->N >= TC_CSR_MAX || csr->nnz >= TC_CSR_MAX) {
        snprintf(err, errlen, "the CUDA-core CSR SpMM takes sizes and nonzeros below 2^31 - 256");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

extern "C" tcsparseStatus_t tc_spmm_csr_launch(const tc_spmm_args *a, const tc_csr_arrays *csr,
                                               const tc_csr_sched *sched, cudaStream_t s,
                                               char *err, size_t errlen)
{
    const tcsparseStatus_t takes = tc_spmm_csr_takes(a, csr, err, errlen);
    if (takes != TCSPARSE_STATUS_SUCCESS)
        return takes;
    if (a->M == 0 || a->N == 0)
        return TCSPARSE_STATUS_SUCCESS;
    if (sched == nullptr || sched->mem == nullptr) {
        snprintf(err, errlen, "the CUDA-core CSR SpMM needs the structure's schedule");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    CsrParams p{};
    p.M = (int32_t)a->M; p.K = (int32_t)a->K; p.N = (int32_t)a->N;
    p.idx = csr->indices; p.base = csr->base;
    p.u_row = sched->row; p.u_start = sched->start; p.u_len = sched->len;
    p.nunits = sched->nunits; p.nsplit_units = sched->nsplit_units;
    p.split_rows = sched->split_rows; p.nsplit_rows = sched->nsplit_rows;
    p.guard = a->guard;
    p.a_val = a->a_val; p.B = a->B; p.ldb = a->ldb; p.C = a->C; p.ldc = a->ldc;
    p.alpha_dev = a->alpha_dev; p.beta_dev = a->beta_dev; p.alpha = a->alpha; p.beta = a->beta;
    const int i64 = csr->indices_64;
    const cudaError_t e = tc::with_storage_types(a->ab_type, a->c_type, [&](auto at, auto ct) {
        return launch_types<decltype(at), decltype(ct)>(p, i64, s);
    });
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    snprintf(err, errlen, "the CUDA-core CSR SpMM failed to launch: %s", cudaGetErrorString(e));
    return tc_launch_status(e);
}
