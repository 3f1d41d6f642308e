// Tensor-core SpMM on ME-TCF, C = alpha * A * B + beta * C with B and C row-major: the
// parameters and the per-warp pieces (B loads, one block's products, the epilogue) that the
// kernel in spmm_kernel_cta.cuh is assembled from.  Values are gathered through val_idx on
// every call, so values the caller rewrites in place are always seen.
#pragma once
#include <cstdint>
#include <type_traits>
#include "kernels.h" // TC_T_*
#include "spmm_config.cuh"

namespace tc {

struct SpmmParams {
    int64_t M, N;
    const int32_t *win_off, *blk_off, *blk_col, *val_idx;
    const uint8_t *blk_pos;
    const int32_t *win_row; // reordered plan: the caller's row of each window row (-1:
                            // padding); NULL: window row i of window w is row 16w+i
    const void *a_val;
    const void *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
    const int4 *chunks;   // balanced kernel only
    int32_t items;        // windows (base) or chunks (balanced)
    int32_t n_slices;     // ceil(N / (warps per block * WARP_N))
    int b_vec, c_vec;     // 16-byte vector access allowed (alignment of pointers and ld)
    const int *guard;     // NULL, or a guard's verdict: 0 = the plan is stale, do nothing
};

// A guarded call whose check found the arrays changed: the kernels leave C to the fallback
// (P: the parameters of a kernel with a guard member, SpmmParams or the CUDA-core SpMM's).
template <class P>
__device__ __forceinline__ bool guard_stops(const P &p)
{
    return p.guard != nullptr && *p.guard == 0;
}

// ---- the caller's CSR arrays (the CUDA-core SpMMs: spmm_csr.cu, spmm_guard.cu) ----------

// Entry i of an int32 or int64 index array (read only while the kernel runs).
__device__ __forceinline__ int64_t csr_index(const void *p, int is64, int64_t i)
{
    return is64 ? __ldg(static_cast<const long long *>(p) + i)
                : (int64_t)__ldg(static_cast<const int32_t *>(p) + i);
}

// Where row r starts (offsets[r] - base), clamped into [0, nnz]: whatever the offsets hold,
// no nonzero outside the arrays is read.
__device__ __forceinline__ int64_t csr_row_start(const void *offsets, int is64, int base,
                                                 int64_t nnz, int64_t r)
{
    const int64_t k = csr_index(offsets, is64, r) - base;
    return k < 0 ? 0 : k > nnz ? nnz : k;
}

// f(AT(), CT()) with the storage types of A and B (AT) and of C (CT) of a call of value types
// ab_type and c_type (TC_T_*: FP32 with FP32 C; FP16 or BF16 with C of the same type or FP32):
// the type pairs the CUDA-core SpMMs are instantiated for.
template <class F>
cudaError_t with_storage_types(int ab_type, int c_type, F &&f)
{
    switch (ab_type) {
    case TC_T_F32:
        return f(float(), float());
    case TC_T_F16:
        return c_type == TC_T_F32 ? f(__half(), float()) : f(__half(), __half());
    default:
        return c_type == TC_T_F32 ? f(__nv_bfloat16(), float())
                                  : f(__nv_bfloat16(), __nv_bfloat16());
    }
}

// ---- conversions and tensor-core instructions -------------------------------------------

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

// ---- 4 consecutive elements as floats, and back (the CUDA-core kernels: spmm_csr.cu,
// sddmm_csr.cu).  load4 reads through the read-only cache (16 bytes for FP32, 8 for 16-bit
// types: the pointer on that boundary); plain4 and store4 read and write C.
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


__device__ __forceinline__ uint32_t tf32_bits(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// 16-bit pair packed low = first, as the mma fragments expect.
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <class T> __device__ __forceinline__ uint32_t pack2raw(T lo, T hi)
{
    uint16_t l = *reinterpret_cast<uint16_t *>(&lo), h = *reinterpret_cast<uint16_t *>(&hi);
    return (uint32_t)l | ((uint32_t)h << 16);
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// m16n8k16 with 16-bit inputs: the SDDMM's FP16 chunks, 3xTF32's BF16 corrections (split3_mma).
template <class T>
__device__ __forceinline__ void mma_k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1);
template <>
__device__ __forceinline__ void mma_k16<__half>(float (&d)[4], const uint32_t (&a)[4],
                                                uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_k16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                       uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <class T>
__device__ __forceinline__ void mma_16(float (&d)[4], const uint32_t (&a)[2], uint32_t b);
template <>
__device__ __forceinline__ void mma_16<__half>(float (&d)[4], const uint32_t (&a)[2], uint32_t b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
}
template <>
__device__ __forceinline__ void mma_16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[2],
                                                      uint32_t b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
}

// ---- 3xTF32 ---------------------------------------------------------------------------------

// A*B = big(A)*big(B) + big(A)*small(B) + small(A)*big(B), big = TF32 (cvt.rna), small(x) =
// x - big(x), the small*small term (2^-22 relative) dropped.  The two correction products are
// about 2^-11 of the main one, so BF16 (8-bit significand) carries them with about 2^-19
// relative error of the product; both go into one m16n8k16 BF16 MMA whose K = 16 is the 8 of
// the TF32 MMA twice: [A | small(A)] times [small(B) ; B].  K may be numbered in any order
// that A and B share, and this one needs nothing from other lanes: lane (g, t) holds A
// columns t and t + 4 and B rows t and t + 4 (m16n8k8 TF32 fragments); its k16 fragments
// want K indices 2t, 2t + 1 (here A's columns t, t + 4 against small(B)'s rows t, t + 4) and
// 2t + 8, 2t + 9 (small(A)'s columns t, t + 4 against B's rows t, t + 4).  Used by the SpMM
// (block_mma) and SDDMM (chunk_mma) kernels.

// A fragment a = {(g,t), (g+8,t), (g,t+4), (g+8,t+4)}: its TF32 words and the k16 BF16 A
// registers of the corrections, {row g, K 2t/2t+1}, {row g+8, same}, {row g, K 2t+8/2t+9},
// {row g+8, same}.
__device__ __forceinline__ void split3_a(uint32_t (&big)[4], uint32_t (&corr)[4],
                                         const float (&a)[4])
{
    float small[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        big[i] = tf32_bits(a[i]);
        small[i] = a[i] - __uint_as_float(big[i]);
    }
    corr[0] = pack2<__nv_bfloat16>(a[0], a[2]);
    corr[1] = pack2<__nv_bfloat16>(a[1], a[3]);
    corr[2] = pack2<__nv_bfloat16>(small[0], small[2]);
    corr[3] = pack2<__nv_bfloat16>(small[1], small[3]);
}

// d += A * B for B rows t (b0) and t + 4 (b1) of column g: the corrections first (tiny: they
// lose nothing added to a small sum), then the main product.
__device__ __forceinline__ void split3_mma(float (&d)[4], const uint32_t (&big)[4],
                                           const uint32_t (&corr)[4], float b0, float b1)
{
    const uint32_t bb0 = tf32_bits(b0), bb1 = tf32_bits(b1);
    // k16 B registers: {K 2t, 2t+1} = small(B) rows t, t+4; {K 2t+8, 2t+9} = B's
    const uint32_t bs = pack2<__nv_bfloat16>(b0 - __uint_as_float(bb0), b1 - __uint_as_float(bb1));
    mma_k16<__nv_bfloat16>(d, corr, bs, pack2<__nv_bfloat16>(b0, b1));
    mma_tf32(d, big, bb0, bb1);
}

// ---- per-block loads ------------------------------------------------------------------

// J consecutive elements of B row `row` from column `col`; zeros for padding columns and
// past N.  A padding column never forms a pointer into B.
template <class T, int J>
__device__ __forceinline__ void load_b(T (&dst)[J], const SpmmParams &p, int32_t row,
                                       int64_t col)
{
    if (row < 0 || col >= p.N) {
#pragma unroll
        for (int j = 0; j < J; ++j)
            dst[j] = from_f<T>(0.0f);
        return;
    }
    const T *src = static_cast<const T *>(p.B) + (int64_t)row * p.ldb + col;
    if (p.b_vec && col + J <= p.N) {
        constexpr int kVec = J * (int)sizeof(T) / 16;
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
            uint4 u = __ldg(reinterpret_cast<const uint4 *>(src) + v);
            *reinterpret_cast<uint4 *>(&dst[v * 16 / sizeof(T)]) = u;
        }
    } else {
#pragma unroll
        for (int j = 0; j < J; ++j)
            dst[j] = col + j < p.N ? src[j] : from_f<T>(0.0f);
    }
}

// ---- one block of A times the lane's B pieces ----------------------------------------------

template <class P, int J>
__device__ __forceinline__ void block_mma(float (&acc)[J][4], const float (&a)[4],
                                          const typename P::T (&b0)[J],
                                          const typename P::T (&b1)[J])
{
    using T = typename P::T;
    if constexpr (P::kHalf) {
        // a = {(g,k0), (g+8,k0), (g,k1), (g+8,k1)}; f16 rows pack (k0, k1) = (2t, 2t+1)
        uint32_t af[2] = {pack2<T>(a[0], a[2]), pack2<T>(a[1], a[3])};
#pragma unroll
        for (int j = 0; j < J; ++j)
            mma_16<T>(acc[j], af, pack2raw<T>(b0[j], b1[j]));
    } else if constexpr (!P::kSplit) {
        uint32_t big[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            big[i] = tf32_bits(a[i]);
#pragma unroll
        for (int j = 0; j < J; ++j)
            mma_tf32(acc[j], big, tf32_bits(b0[j]), tf32_bits(b1[j]));
    } else {
        uint32_t big[4], corr[4];
        split3_a(big, corr, a);
#pragma unroll
        for (int j = 0; j < J; ++j)
            split3_mma(acc[j], big, corr, b0[j], b1[j]);
    }
}

// ---- epilogue -----------------------------------------------------------------------------

template <class CT, int E>
__device__ __forceinline__ void store_row(const SpmmParams &p, int64_t row, int64_t col,
                                          const float (&v)[E], float alpha, float beta,
                                          bool atomic)
{
    if (row < 0 || row >= p.M || col >= p.N) // row < 0: a reordered plan's padding row
        return;
    CT *dst = static_cast<CT *>(p.C) + row * p.ldc + col;
    if (atomic) {
        // Windows split over several chunks add their parts into C: vector atomics where
        // the row piece is whole and aligned (4x fewer operations than scalar ones; measured
        // as the balanced kernel's main cost), scalar ones at the tail.
        if (p.c_vec && col + E <= p.N) {
            if constexpr (std::is_same<CT, float>::value) {
#if __CUDA_ARCH__ >= 900
#pragma unroll
                for (int u = 0; u < E / 4; ++u)
                    atomicAdd(reinterpret_cast<float4 *>(dst) + u,
                              make_float4(alpha * v[4 * u], alpha * v[4 * u + 1],
                                          alpha * v[4 * u + 2], alpha * v[4 * u + 3]));
                return;
#endif
            } else if constexpr (std::is_same<CT, __half>::value) {
#pragma unroll
                for (int u = 0; u < E / 2; ++u)
                    atomicAdd(reinterpret_cast<__half2 *>(dst) + u,
                              __floats2half2_rn(alpha * v[2 * u], alpha * v[2 * u + 1]));
                return;
            } else {
#pragma unroll
                for (int u = 0; u < E / 2; ++u)
                    atomicAdd(reinterpret_cast<__nv_bfloat162 *>(dst) + u,
                              __floats2bfloat162_rn(alpha * v[2 * u], alpha * v[2 * u + 1]));
                return;
            }
        }
#pragma unroll
        for (int x = 0; x < E; ++x)
            if (col + x < p.N)
                atomicAdd(dst + x, from_f<CT>(alpha * v[x]));
        return;
    }
    if (p.c_vec && col + E <= p.N) {
        constexpr int kPer = 16 / (int)sizeof(CT);
        static_assert(E % kPer == 0, "C row piece must be whole 16-byte vectors");
#pragma unroll
        for (int u = 0; u < E / kPer; ++u) {
            uint4 *q = reinterpret_cast<uint4 *>(dst) + u;
            CT out[kPer];
            if (beta != 0.0f) {
                uint4 old = *q;
                const CT *o = reinterpret_cast<const CT *>(&old);
#pragma unroll
                for (int x = 0; x < kPer; ++x)
                    out[x] = from_f<CT>(alpha * v[u * kPer + x] + beta * to_f(o[x]));
            } else {
#pragma unroll
                for (int x = 0; x < kPer; ++x)
                    out[x] = from_f<CT>(alpha * v[u * kPer + x]);
            }
            *q = *reinterpret_cast<uint4 *>(out);
        }
    } else {
#pragma unroll
        for (int x = 0; x < E; ++x) {
            if (col + x >= p.N)
                break;
            float o = beta != 0.0f ? beta * to_f(dst[x]) : 0.0f;
            dst[x] = from_f<CT>(alpha * v[x] + o);
        }
    }
}

// ---- the kernel ---------------------------------------------------------------------------

// C = beta * C on the rows of the windows listed (those the balanced kernel accumulates into
// atomically), through win_row when the plan is reordered.  beta = 0 writes zeros without
// reading C.  A warp a row: the row's place is worked out once (no 64-bit division per
// element), and its elements go in 16-byte pieces where C allows (c_vec), scalar otherwise
// and for the tail past the last whole piece.
template <class CT>
__device__ __forceinline__ CT scaled(CT x, float beta)
{
    return from_f<CT>(beta != 0.0f ? beta * to_f(x) : 0.0f);
}

template <class CT>
__global__ void scale_windows(const SpmmParams p, const int32_t *wins, int32_t nwins)
{
    constexpr int E = 16 / (int)sizeof(CT);
    if (guard_stops(p))
        return;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    const int lane = threadIdx.x & 31;
    const int64_t nrows = (int64_t)nwins * kWinRows;
    const int64_t step = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t k = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); k < nrows;
         k += step) {
        int64_t r = (int64_t)wins[k / kWinRows] * kWinRows + k % kWinRows;
        if (p.win_row != nullptr)
            r = __ldg(&p.win_row[r]);
        if (r < 0 || r >= p.M)
            continue;
        CT *row = static_cast<CT *>(p.C) + r * p.ldc;
        int64_t c0 = 0;
        if (p.c_vec) {
            const int64_t nv = p.N / E;
            uint4 *vrow = reinterpret_cast<uint4 *>(row);
            for (int64_t v = lane; v < nv; v += 32) {
                uint4 u = make_uint4(0u, 0u, 0u, 0u);
                if (beta != 0.0f) {
                    u = vrow[v];
                    CT *x = reinterpret_cast<CT *>(&u);
#pragma unroll
                    for (int e = 0; e < E; ++e)
                        x[e] = scaled<CT>(x[e], beta);
                }
                vrow[v] = u;
            }
            c0 = nv * E;
        }
        for (int64_t c = c0 + lane; c < p.N; c += 32)
            row[c] = beta != 0.0f ? scaled<CT>(row[c], beta) : from_f<CT>(0.0f);
    }
}

} // namespace tc
