// The CUDA-core CSR SpMM (tc_spmm_csr_launch, kernels.h): C = alpha * A * B + beta * C read
// straight from the caller's CSR arrays, no plan.  The route measures it beside the
// tensor-core kernels and cuSPARSE (docs/performance.md, "CUDA cores"); FP32 products are
// exact FMA, as cuSPARSE's.
//
// Work: one group of G lanes a row, rows in order; each lane owns 4 consecutive columns (one
// 16- or 8-byte vector) of V column slices of 4G columns, a grid row (blockIdx.y) a tile of
// 4GV columns.  A group reads its row's column indices and values G at a time, broadcasts
// them by shuffles and keeps U rows of B in flight a lane, then writes its row once (beta *
// old added).  A long row is one group's work: power-law rows make a long tail, which the
// route's measurement sees (the schedules that split rows are in docs/performance.md).
//
// Bad structure cannot make it read or write out of bounds: offsets are clamped into
// [0, nnz], a column outside [0, K) contributes nothing.
#include <cstdint>
#include <cstdio>
#include "kernels.h"
#include "spmm_kernel.cuh" // tc::to_f, tc::from_f, tc::csr_index, tc::csr_row_start

namespace {

using tc::csr_index;
using tc::from_f;
using tc::to_f;

constexpr int kThreads = 256; // threads a block

struct CsrParams { // M, K, N, nnz below 2^31 (the route's eligibility)
    int32_t M, K, N, nnz;
    const void *off, *idx;
    int off64, idx64, base;
    const void *a_val, *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
};

// Where row r (at most M) starts, clamped into [0, nnz].
__device__ __forceinline__ int32_t row_start(const CsrParams &p, int32_t r)
{
    return (int32_t)tc::csr_row_start(p.off, p.off64, p.base, p.nnz, r);
}

// 4 consecutive elements as floats, and back.
__device__ __forceinline__ void load4(const float *q, float (&x)[4])
{
    const float4 v = __ldg(reinterpret_cast<const float4 *>(q));
    x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w;
}
template <class T2, class T>
__device__ __forceinline__ void load4_16(const T *q, float (&x)[4])
{
    const uint2 u = __ldg(reinterpret_cast<const uint2 *>(q));
    const T2 a = *reinterpret_cast<const T2 *>(&u.x), b = *reinterpret_cast<const T2 *>(&u.y);
    x[0] = to_f(a.x); x[1] = to_f(a.y); x[2] = to_f(b.x); x[3] = to_f(b.y);
}
__device__ __forceinline__ void load4(const __half *q, float (&x)[4]) { load4_16<__half2>(q, x); }
__device__ __forceinline__ void load4(const __nv_bfloat16 *q, float (&x)[4])
{
    load4_16<__nv_bfloat162>(q, x);
}
__device__ __forceinline__ void plain4(const float *q, float (&x)[4])
{
    const float4 v = *reinterpret_cast<const float4 *>(q);
    x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w;
}
template <class T>
__device__ __forceinline__ void plain4(const T *q, float (&x)[4])
{
    for (int i = 0; i < 4; ++i)
        x[i] = to_f(q[i]);
}
__device__ __forceinline__ void store4(float *q, const float (&x)[4])
{
    *reinterpret_cast<float4 *>(q) = make_float4(x[0], x[1], x[2], x[3]);
}
template <class T>
__device__ __forceinline__ void store4(T *q, const float (&x)[4])
{
    for (int i = 0; i < 4; ++i)
        q[i] = from_f<T>(x[i]);
}
__device__ __forceinline__ float scalar(const float *dev, float host)
{
    return dev != nullptr ? *dev : host;
}

// G lanes a row, V slices of 4G columns a lane, U nonzeros' rows of B in flight a lane.
template <class AT, class CT, int G, int V>
__global__ void __launch_bounds__(kThreads) csr_spmm_kernel(const CsrParams p)
{
    constexpr int U = V == 1 ? 8 : 4;
    const int lane = threadIdx.x & 31;
    const int gl = lane % G;
    const unsigned gmask = G == 32 ? 0xffffffffu : ((1u << G) - 1) << (lane - gl);
    const int64_t item = (int64_t)blockIdx.x * (kThreads / G) + threadIdx.x / G;
    if (item >= p.M)
        return; // a group leaves whole
    const int32_t row = (int32_t)item;
    const AT *B = static_cast<const AT *>(p.B);
    const AT *av = static_cast<const AT *>(p.a_val);
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
    const int32_t kbeg = row_start(p, row);
    const int32_t kend = row_start(p, row + 1);
    for (int32_t kb = kbeg; kb < kend; kb += G) {
        const int cnt = kend - kb < G ? kend - kb : G;
        int32_t my_col = -1;
        float my_val = 0.0f;
        if (gl < cnt) {
            const int64_t c = csr_index(p.idx, p.idx64, kb + gl) - p.base;
            if (c >= 0 && c < p.K) {
                my_col = (int32_t)c;
                my_val = to_f(av[kb + gl]);
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
        float old[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (beta != 0.0f)
            plain4(out, old);
        float o[4];
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

template <class AT, class CT, int G, int V>
cudaError_t launch_gv(const CsrParams &p, cudaStream_t s)
{
    const dim3 grid(blocks_for(p.M, kThreads / G), (unsigned)((p.N + 4 * G * V - 1) / (4 * G * V)));
    csr_spmm_kernel<AT, CT, G, V><<<grid, kThreads, 0, s>>>(p);
    return cudaGetLastError();
}

template <class AT, class CT>
cudaError_t launch(const CsrParams &p, cudaStream_t s)
{
    if (p.N > 128)
        return launch_gv<AT, CT, 32, 2>(p, s);
    if (p.N > 64)
        return launch_gv<AT, CT, 32, 1>(p, s);
    if (p.N > 32)
        return launch_gv<AT, CT, 16, 1>(p, s);
    if (p.N > 16)
        return launch_gv<AT, CT, 8, 1>(p, s);
    if (p.N > 8)
        return launch_gv<AT, CT, 4, 1>(p, s);
    return launch_gv<AT, CT, 2, 1>(p, s);
}

} // namespace

extern "C" tcsparseStatus_t tc_spmm_csr_launch(const tc_spmm_args *a, const tc_csr_arrays *csr,
                                               cudaStream_t s, char *err, size_t errlen)
{
    if (csr->transposed || !tc_spmm_csr_fits(a->B, a->ldb, a->C, a->ldc, a->N, a->ab_type,
                                             a->c_type)) {
        snprintf(err, errlen, "the CUDA-core CSR SpMM takes an untransposed A and B, C with "
                              "N, ldb, ldc multiples of 4 on 4-element boundaries");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    if (a->M == 0 || a->N == 0)
        return TCSPARSE_STATUS_SUCCESS;
    if (a->M >= INT32_MAX || a->K >= INT32_MAX || a->N >= INT32_MAX || csr->nnz >= INT32_MAX) {
        snprintf(err, errlen, "the CUDA-core CSR SpMM takes sizes and nonzeros below 2^31");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    CsrParams p{};
    p.M = (int32_t)a->M; p.K = (int32_t)a->K; p.N = (int32_t)a->N;
    p.nnz = csr->nnz < 0 ? 0 : (int32_t)csr->nnz;
    p.off = csr->offsets; p.idx = csr->indices;
    p.off64 = csr->offsets_64; p.idx64 = csr->indices_64; p.base = csr->base;
    p.a_val = a->a_val; p.B = a->B; p.ldb = a->ldb; p.C = a->C; p.ldc = a->ldc;
    p.alpha_dev = a->alpha_dev; p.beta_dev = a->beta_dev; p.alpha = a->alpha; p.beta = a->beta;
    cudaError_t e;
    switch (a->ab_type) {
    case TC_T_F32:
        e = launch<float, float>(p, s);
        break;
    case TC_T_F16:
        e = a->c_type == TC_T_F32 ? launch<__half, float>(p, s) : launch<__half, __half>(p, s);
        break;
    default:
        e = a->c_type == TC_T_F32 ? launch<__nv_bfloat16, float>(p, s)
                                  : launch<__nv_bfloat16, __nv_bfloat16>(p, s);
        break;
    }
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    snprintf(err, errlen, "the CUDA-core CSR SpMM failed to launch: %s", cudaGetErrorString(e));
    return tc_launch_status(e);
}
