// The guard's fallback SpMM (tc_spmm_guard_fallback, kernels.h): where the structure check
// launched before a guarded call found the caller's arrays changed since the plan was built,
// the tensor-core kernels do nothing and this CUDA-core kernel computes C = alpha * A * B +
// beta * C from the caller's CSR arrays instead.  It runs only then (every thread block reads
// the verdict first and returns at once otherwise), so its speed matters little: a warp a row,
// each lane 4 columns of a 128-column slice, FP32 accumulation.  For a transposed A (the
// transposed view's plan) C is scaled by beta first, then each CSR row r adds alpha * a_rc *
// B[r, :] into row c of C atomically.
#include <cstdint>
#include <cstdio>
#include "kernels.h"
#include "spmm_kernel.cuh" // tc::to_f, tc::from_f, tc::csr_index, tc::csr_row_start

namespace {

using tc::csr_index;
using tc::from_f;
using tc::to_f;

struct FallbackParams {
    int64_t M, K, N, nnz; // the product's: op(A) is M x K
    const void *offsets, *indices;
    int offsets_64, indices_64, base;
    const void *a_val, *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
    const int *verdict;
};

// Position k of row r's entries, clamped into [0, nnz].
__device__ __forceinline__ int64_t row_start(const FallbackParams &p, int64_t r)
{
    return tc::csr_row_start(p.offsets, p.offsets_64, p.base, p.nnz, r);
}

template <class AT, class CT>
__global__ void spmm_guard_fallback_kernel(const FallbackParams p)
{
    if (*p.verdict != 0)
        return;
    constexpr int kCols = 4;
    const int lane = threadIdx.x & 31;
    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    const AT *av = static_cast<const AT *>(p.a_val);
    const AT *B = static_cast<const AT *>(p.B);
    CT *C = static_cast<CT *>(p.C);
    const int64_t step = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < p.M;
         r += step) {
        const int64_t k0 = row_start(p, r), k1 = row_start(p, r + 1);
        for (int64_t c0 = 0; c0 < p.N; c0 += 32 * kCols) {
            float acc[kCols] = {};
            for (int64_t k = k0; k < k1; ++k) {
                const int64_t col = csr_index(p.indices, p.indices_64, k) - p.base;
                if (col < 0 || col >= p.K)
                    continue;
                const float v = to_f(av[k]);
                const AT *brow = B + col * p.ldb;
#pragma unroll
                for (int j = 0; j < kCols; ++j) {
                    const int64_t c = c0 + lane + 32 * j;
                    if (c < p.N)
                        acc[j] += v * to_f(brow[c]);
                }
            }
#pragma unroll
            for (int j = 0; j < kCols; ++j) {
                const int64_t c = c0 + lane + 32 * j;
                if (c >= p.N)
                    continue;
                CT *out = C + r * p.ldc + c;
                const float old = beta != 0.0f ? beta * to_f(*out) : 0.0f;
                *out = from_f<CT>(alpha * acc[j] + old);
            }
        }
    }
}

// C = beta * C over the M x N output (beta = 0 writes zeros, whatever C held).
template <class CT>
__global__ void spmm_guard_scale_kernel(const FallbackParams p)
{
    if (*p.verdict != 0)
        return;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    CT *C = static_cast<CT *>(p.C);
    const int64_t total = p.M * p.N;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        CT *out = C + (i / p.N) * p.ldc + i % p.N;
        *out = from_f<CT>(beta != 0.0f ? beta * to_f(*out) : 0.0f);
    }
}

__device__ __forceinline__ void add_to(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(__half *p, float v) { atomicAdd(p, __float2half(v)); }
__device__ __forceinline__ void add_to(__nv_bfloat16 *p, float v)
{
    atomicAdd(p, __float2bfloat16(v));
}

// op(A) = the transpose of the CSR matrix (K rows, M columns): a warp a CSR row r, whose
// nonzeros (r, c) add alpha * a_rc * B[r, :] into row c of C.
template <class AT, class CT>
__global__ void spmm_guard_fallback_t_kernel(const FallbackParams p)
{
    if (*p.verdict != 0)
        return;
    const int lane = threadIdx.x & 31;
    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const AT *av = static_cast<const AT *>(p.a_val);
    const AT *B = static_cast<const AT *>(p.B);
    CT *C = static_cast<CT *>(p.C);
    const int64_t step = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < p.K;
         r += step) {
        const int64_t k0 = row_start(p, r), k1 = row_start(p, r + 1);
        const AT *brow = B + r * p.ldb;
        for (int64_t k = k0; k < k1; ++k) {
            const int64_t col = csr_index(p.indices, p.indices_64, k) - p.base;
            if (col < 0 || col >= p.M)
                continue;
            const float v = alpha * to_f(av[k]);
            CT *crow = C + col * p.ldc;
            for (int64_t c = lane; c < p.N; c += 32)
                add_to(crow + c, v * to_f(brow[c]));
        }
    }
}

inline unsigned grid_of(int64_t units, int64_t per_block)
{
    int64_t blocks = (units + per_block - 1) / per_block;
    return (unsigned)(blocks < 1 ? 1 : blocks > 2048 ? 2048 : blocks);
}

template <class AT, class CT>
cudaError_t launch(const FallbackParams &p, int transposed, cudaStream_t s)
{
    // a warp a row, 8 rows a thread block; a grid of a few waves, strided over the rows
    if (!transposed) {
        spmm_guard_fallback_kernel<AT, CT><<<grid_of(p.M, 8), 256, 0, s>>>(p);
        return cudaGetLastError();
    }
    spmm_guard_scale_kernel<CT><<<grid_of(p.M * p.N, 256), 256, 0, s>>>(p);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    spmm_guard_fallback_t_kernel<AT, CT><<<grid_of(p.K, 8), 256, 0, s>>>(p);
    return cudaGetLastError();
}

} // namespace

extern "C" tcsparseStatus_t tc_spmm_guard_fallback(const tc_spmm_args *a,
                                                   const tc_csr_arrays *csr, cudaStream_t s,
                                                   char *err, size_t errlen)
{
    if (a->guard == nullptr || a->M == 0 || a->N == 0)
        return TCSPARSE_STATUS_SUCCESS;
    FallbackParams p{};
    p.M = a->M; p.K = a->K; p.N = a->N; p.nnz = csr->nnz;
    p.offsets = csr->offsets; p.indices = csr->indices;
    p.offsets_64 = csr->offsets_64; p.indices_64 = csr->indices_64; p.base = csr->base;
    p.a_val = a->a_val; p.B = a->B; p.ldb = a->ldb; p.C = a->C; p.ldc = a->ldc;
    p.alpha_dev = a->alpha_dev; p.beta_dev = a->beta_dev; p.alpha = a->alpha; p.beta = a->beta;
    p.verdict = a->guard;
    const int t = csr->transposed;
    const cudaError_t e = tc::with_storage_types(a->ab_type, a->c_type, [&](auto at, auto ct) {
        return launch<decltype(at), decltype(ct)>(p, t, s);
    });
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    snprintf(err, errlen, "the guard's fallback SpMM failed to launch: %s", cudaGetErrorString(e));
    return tc_launch_status(e);
}
