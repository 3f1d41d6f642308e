// The CUDA-core CSR SDDMM (tc_sddmm_csr_launch, kernels.h): C = alpha * (A * B) o spy(C) +
// beta * C, each nonzero (i, j) of C the dot product of row i of A and column j of B, read
// from the caller's CSR arrays of C in the order of the structure's schedule (tc_csr_sched,
// spmm_csr_sched.cu, the one the CUDA-core SpMM uses).  The route measures it beside the
// tensor-core kernels and cuSPARSE; FP32 products are exact FMA, summed in FP32.
//
// Work: one group of G lanes a unit of the schedule (a row, or a piece of at most TC_CSR_PIECE
// nonzeros of a longer row; every nonzero is written by its own unit, so pieces need nothing
// more), longest units first.  The group takes its unit's nonzeros U at a time: each lane
// reads W consecutive elements of K (W = 4 where K, lda, ldb and the pointers allow vector
// loads, 1 otherwise) at a stride of W * G, of row i of A and of the U columns of B, so a
// group reads each column of B in whole cache lines with U columns in flight; the U sums are
// then added across the group by shuffles and lane u % G writes the u-th.  G grows with K (up
// to K = 512 with vector loads the lanes cover K in about four steps), so the shuffles stay
// few beside the loads.
//
// Bad structure cannot make it read or write out of bounds: the schedule holds positions
// inside [0, nnz] (clamped when it was built), and a column index outside [0, N) reads
// nothing: that nonzero gets beta * C, as if its product were 0.
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include "kernels.h"
#include "spmm/spmm_kernel.cuh" // tc::to_f, from_f, load4, scalar

namespace {

using tc::from_f;
using tc::load4;
using tc::scalar;
using tc::to_f;

constexpr int kThreads = 256; // threads a block
constexpr int kU = 4;         // nonzeros a group takes at a time (columns of B in flight)

struct SddmmCsrParams { // sizes and nnz below TC_CSR_MAX (kernels.h): no counter wraps
    int32_t N, K;
    const void *idx;
    int base;
    const int32_t *u_row, *u_start, *u_len; // the schedule
    int32_t nunits;
    const void *A, *B;
    int64_t lda, ldb;
    void *C;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
};

// W elements from q as floats: a 4-element vector (load4) or one element.
template <int W, class T>
__device__ __forceinline__ void load_w(const T *q, float (&x)[W])
{
    if constexpr (W == 4)
        load4(q, x);
    else
        x[0] = to_f(__ldg(q));
}

template <class T, class CT, class IT, int G, int W>
__global__ void __launch_bounds__(kThreads) sddmm_csr_kernel(const SddmmCsrParams p)
{
    const int lane = threadIdx.x & 31;
    const int gl = lane % G;
    const unsigned gmask = G == 32 ? 0xffffffffu : ((1u << G) - 1) << (lane - gl);
    const int64_t unit = (int64_t)blockIdx.x * (kThreads / G) + threadIdx.x / G;
    if (unit >= p.nunits)
        return; // a group leaves whole
    const int32_t row = __ldg(p.u_row + unit);
    const int32_t kbeg = __ldg(p.u_start + unit);
    const int32_t kend = kbeg + __ldg(p.u_len + unit);
    const T *arow = static_cast<const T *>(p.A) + (int64_t)row * p.lda;
    const T *B = static_cast<const T *>(p.B);
    const IT *ix = static_cast<const IT *>(p.idx);
    CT *C = static_cast<CT *>(p.C);
    const float alpha = scalar(p.alpha_dev, p.alpha);
    const float beta = scalar(p.beta_dev, p.beta);
    for (int32_t e0 = kbeg; e0 < kend; e0 += kU) {
        const T *bcol[kU];
        bool use[kU];
        float acc[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
            int64_t c = -1;
            if (e0 + u < kend)
                c = (int64_t)__ldg(ix + e0 + u) - p.base; // one address for the group
            use[u] = c >= 0 && c < p.N;
            bcol[u] = B + (use[u] ? c : 0) * p.ldb;
            acc[u] = 0.0f;
        }
#pragma unroll 2
        for (int32_t k = W * gl; k < p.K; k += W * G) {
            float a[W];
            load_w<W>(arow + k, a);
#pragma unroll
            for (int u = 0; u < kU; ++u) {
                if (!use[u])
                    continue;
                float b[W];
                load_w<W>(bcol[u] + k, b);
#pragma unroll
                for (int i = 0; i < W; ++i)
                    acc[u] = fmaf(a[i], b[i], acc[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < kU; ++u)
#pragma unroll
            for (int o = G / 2; o > 0; o /= 2)
                acc[u] += __shfl_xor_sync(gmask, acc[u], o, G);
        // every lane holds the U sums: lane u % G writes nonzero e0 + u
#pragma unroll
        for (int u = 0; u < kU; ++u) {
            if (gl != u % G || e0 + u >= kend)
                continue;
            CT *out = C + e0 + u;
            const float old = beta != 0.0f ? to_f(*out) : 0.0f;
            *out = from_f<CT>(alpha * acc[u] + (beta != 0.0f ? beta * old : 0.0f));
        }
    }
}

template <class T, class CT, class IT, int G, int W>
cudaError_t launch_gw(const SddmmCsrParams &p, cudaStream_t s)
{
    constexpr int per_block = kThreads / G;
    const unsigned grid = (unsigned)(((int64_t)p.nunits + per_block - 1) / per_block);
    sddmm_csr_kernel<T, CT, IT, G, W><<<grid, kThreads, 0, s>>>(p);
    return cudaGetLastError();
}

// G: the power of two from 2 to 32 nearest below K / (4 W): about four steps a lane up to
// 4 W * 32 elements of K, more beyond.
template <class T, class CT, class IT, int W>
cudaError_t launch_w(const SddmmCsrParams &p, cudaStream_t s)
{
    const int64_t per = p.K / (4 * W);
    if (per >= 32)
        return launch_gw<T, CT, IT, 32, W>(p, s);
    if (per >= 16)
        return launch_gw<T, CT, IT, 16, W>(p, s);
    if (per >= 8)
        return launch_gw<T, CT, IT, 8, W>(p, s);
    if (per >= 4)
        return launch_gw<T, CT, IT, 4, W>(p, s);
    return launch_gw<T, CT, IT, 2, W>(p, s);
}

template <class T, class CT>
cudaError_t launch_types(const SddmmCsrParams &p, int idx64, int vec, cudaStream_t s)
{
    if (vec)
        return idx64 ? launch_w<T, CT, long long, 4>(p, s) : launch_w<T, CT, int32_t, 4>(p, s);
    return idx64 ? launch_w<T, CT, long long, 1>(p, s) : launch_w<T, CT, int32_t, 1>(p, s);
}

} // namespace

extern "C" tcsparseStatus_t tc_sddmm_csr_takes(const tc_sddmm_args *a, const tc_csr_arrays *csr,
                                               char *err, size_t errlen)
{
    if (csr->transposed) {
        snprintf(err, errlen, "the CUDA-core CSR SDDMM takes C's CSR arrays untransposed");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    if (a->ab_type != TC_T_F32 && a->ab_type != TC_T_F16) {
        snprintf(err, errlen, "the CUDA-core CSR SDDMM takes FP32 or FP16 A and B");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    if (a->c_type != TC_T_F32 && a->c_type != a->ab_type) {
        snprintf(err, errlen, "the CUDA-core CSR SDDMM takes C in FP32 or A's type");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    if (a->M >= TC_CSR_MAX || a->N >= TC_CSR_MAX || a->K >= TC_CSR_MAX ||
        csr->nnz >= TC_CSR_MAX) {
        snprintf(err, errlen, "the CUDA-core CSR SDDMM takes sizes and nonzeros below 2^31 - 256");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

extern "C" tcsparseStatus_t tc_sddmm_csr_launch(const tc_sddmm_args *a, const tc_csr_arrays *csr,
                                                const tc_csr_sched *sched, cudaStream_t s,
                                                char *err, size_t errlen)
{
    const tcsparseStatus_t takes = tc_sddmm_csr_takes(a, csr, err, errlen);
    if (takes != TCSPARSE_STATUS_SUCCESS)
        return takes;
    if (a->M == 0 || a->N == 0 || csr->nnz == 0)
        return TCSPARSE_STATUS_SUCCESS;
    if (sched == nullptr || sched->mem == nullptr) {
        snprintf(err, errlen, "the CUDA-core CSR SDDMM needs the structure's schedule");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    SddmmCsrParams p{};
    p.N = (int32_t)a->N;
    p.K = (int32_t)a->K;
    p.idx = csr->indices;
    p.base = csr->base;
    p.u_row = sched->row;
    p.u_start = sched->start;
    p.u_len = sched->len;
    p.nunits = sched->nunits;
    p.A = a->A;
    p.B = a->B;
    p.lda = a->lda;
    p.ldb = a->ldb;
    p.C = a->C;
    p.alpha_dev = a->alpha_dev;
    p.beta_dev = a->beta_dev;
    p.alpha = a->alpha;
    p.beta = a->beta;
    // 4-element vectors: K, lda, ldb multiples of 4 and A, B on the vector's boundary
    const uintptr_t vb = a->ab_type == TC_T_F32 ? 16 : 8;
    const int vec = a->K % 4 == 0 && a->lda % 4 == 0 && a->ldb % 4 == 0 &&
                    (uintptr_t)a->A % vb == 0 && (uintptr_t)a->B % vb == 0;
    const int i64 = csr->indices_64;
    cudaError_t e;
    if (a->ab_type == TC_T_F32)
        e = launch_types<float, float>(p, i64, vec, s);
    else if (a->c_type == TC_T_F32)
        e = launch_types<__half, float>(p, i64, vec, s);
    else
        e = launch_types<__half, __half>(p, i64, vec, s);
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    snprintf(err, errlen, "the CUDA-core CSR SDDMM failed to launch: %s", cudaGetErrorString(e));
    return tc_launch_status(e);
}
