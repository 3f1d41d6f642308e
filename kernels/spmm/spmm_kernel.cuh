// Tensor-core SpMM on ME-TCF: C = alpha * A * B + beta * C, B and C row-major.
//
// Work unit: one warp = (row window or chunk of one, slice of WARP_N columns).  Warps never
// share data, so there is no shared memory and no barrier: the A fragment of each 16x8
// block is rebuilt in registers from its 128-bit occupancy mask (a lane finds its value's
// position by counting the mask bits below it), and the B fragment is two 16-byte-aligned
// row pieces per lane.  Values are gathered through val_idx on every call, so values the
// caller rewrites in place are always seen.
#pragma once
#include <cstdint>
#include "spmm_config.cuh"

namespace tc {

struct SpmmParams {
    int64_t M, N;
    const int32_t *win_off, *blk_off, *blk_col, *val_idx;
    const ulonglong2 *blk_mask;
    const void *a_val;
    const void *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
    const int4 *chunks;   // balanced kernel only
    int32_t items;        // windows (base) or chunks (balanced)
    int32_t n_slices;     // ceil(N / WARP_N)
    int b_vec, c_vec;     // 16-byte vector access allowed (alignment of pointers and ld)
};

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

// ---- per-block loads ------------------------------------------------------------------

struct BlockMeta {
    unsigned long long lo, hi; // occupancy of rows 0-7 and 8-15
    int32_t col0, col1;        // original columns of this lane's two k slots (-1 = padding)
    int32_t first;             // first nonzero of the block
};

__device__ __forceinline__ BlockMeta load_meta(const SpmmParams &p, int32_t b, int k0, int k1)
{
    BlockMeta m;
    ulonglong2 mk = __ldg(&p.blk_mask[b]);
    m.lo = mk.x;
    m.hi = mk.y;
    m.col0 = __ldg(&p.blk_col[(int64_t)b * kBlkCols + k0]);
    m.col1 = __ldg(&p.blk_col[(int64_t)b * kBlkCols + k1]);
    m.first = __ldg(&p.blk_off[b]);
    return m;
}

// Value of A at bit `bit` of word w (the other word's population comes first when hi).
template <class T>
__device__ __forceinline__ float a_value(const SpmmParams &p, const BlockMeta &m, bool hi,
                                         int bit)
{
    unsigned long long w = hi ? m.hi : m.lo;
    if (!((w >> bit) & 1ull))
        return 0.0f;
    int before = __popcll(w & ((1ull << bit) - 1ull)) + (hi ? __popcll(m.lo) : 0);
    int32_t src = __ldg(&p.val_idx[m.first + before]);
    return to_f(static_cast<const T *>(p.a_val)[src]);
}

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
    } else {
        uint32_t big[4], small[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            big[i] = tf32_bits(a[i]);
            small[i] = tf32_bits(a[i] - __uint_as_float(big[i]));
        }
#pragma unroll
        for (int j = 0; j < J; ++j) {
            uint32_t bb0 = tf32_bits(b0[j]), bb1 = tf32_bits(b1[j]);
            if constexpr (P::kSplit) {
                // small terms first: they are tiny and lose nothing added to a zero sum
                uint32_t bs0 = tf32_bits(b0[j] - __uint_as_float(bb0));
                uint32_t bs1 = tf32_bits(b1[j] - __uint_as_float(bb1));
                mma_tf32(acc[j], small, bb0, bb1);
                mma_tf32(acc[j], big, bs0, bs1);
            }
            mma_tf32(acc[j], big, bb0, bb1);
        }
    }
}

// ---- epilogue -----------------------------------------------------------------------------

template <class CT, int E>
__device__ __forceinline__ void store_row(const SpmmParams &p, int64_t row, int64_t col,
                                          const float (&v)[E], float alpha, float beta,
                                          bool atomic)
{
    if (row >= p.M || col >= p.N)
        return;
    CT *dst = static_cast<CT *>(p.C) + row * p.ldc + col;
    if (atomic) {
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

template <class P, class CT, int J, bool kBalanced>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    spmm_kernel(const SpmmParams p)
{
    using T = typename P::T;
    using S = Shape<P, J>;
    const int lane = threadIdx.x & 31;
    const int64_t task = (int64_t)blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
    const int32_t item = (int32_t)(task / p.n_slices);
    if (item >= p.items)
        return;
    const int64_t n0 = (task % p.n_slices) * S::kWarpN;
    const int g = lane >> 2, t = lane & 3;
    // this lane's two k slots of a block: TF32 uses (t, t+4), 16-bit types (2t, 2t+1)
    const int k0 = P::kHalf ? 2 * t : t;
    const int k1 = P::kHalf ? 2 * t + 1 : t + 4;

    int32_t win, b, b_end;
    bool atomic = false;
    if constexpr (kBalanced) {
        int4 ch = p.chunks[item];
        win = ch.x; b = ch.y; b_end = ch.z; atomic = ch.w != 0;
    } else {
        win = item; b = __ldg(&p.win_off[win]); b_end = __ldg(&p.win_off[win + 1]);
    }

    float acc[J][4];
#pragma unroll
    for (int j = 0; j < J; ++j)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

    // Software pipeline: the next block's metadata is in flight while this block's B and A
    // loads and products run.
    // 3xTF32 promises FP32 accuracy, but the tensor cores' FP32 accumulation truncates:
    // over hundreds of blocks the bias shows.  So every kFlush blocks the accumulators are
    // moved into an ordinary (round-to-nearest) FP32 sum.
    constexpr bool kFlushes = P::kSplit;
    constexpr int kFlush = 16;
    float total[kFlushes ? J : 1][4];
    if constexpr (kFlushes) {
#pragma unroll
        for (int j = 0; j < J; ++j)
            total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.0f;
    }
    int since_flush = 0;

    // Two blocks per iteration, and the metadata of the next two in flight while this pair's
    // B and A loads and products run: each warp keeps several independent global loads
    // outstanding, which is what a gather-bound kernel lives on.
    const int64_t ncol = n0 + (int64_t)g * J;
    BlockMeta m0, m1;
    if (b < b_end)
        m0 = load_meta(p, b, k0, k1);
    if (b + 1 < b_end)
        m1 = load_meta(p, b + 1, k0, k1);
    for (; b < b_end; b += 2) {
        const bool two = b + 1 < b_end;
        if constexpr (kFlushes) {
            since_flush += 2;
            if (since_flush >= kFlush) {
                since_flush = 0;
#pragma unroll
                for (int j = 0; j < J; ++j)
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        total[j][q] += acc[j][q];
                        acc[j][q] = 0.0f;
                    }
            }
        }
        T b00[J], b01[J], b10[J], b11[J];
        load_b<T, J>(b00, p, m0.col0, ncol);
        load_b<T, J>(b01, p, m0.col1, ncol);
        if (two) {
            load_b<T, J>(b10, p, m1.col0, ncol);
            load_b<T, J>(b11, p, m1.col1, ncol);
        }
        float a0[4] = {a_value<T>(p, m0, false, g * 8 + k0), a_value<T>(p, m0, true, g * 8 + k0),
                       a_value<T>(p, m0, false, g * 8 + k1), a_value<T>(p, m0, true, g * 8 + k1)};
        float a1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (two) {
            a1[0] = a_value<T>(p, m1, false, g * 8 + k0);
            a1[1] = a_value<T>(p, m1, true, g * 8 + k0);
            a1[2] = a_value<T>(p, m1, false, g * 8 + k1);
            a1[3] = a_value<T>(p, m1, true, g * 8 + k1);
        }
        BlockMeta next0 = m0, next1 = m1;
        if (b + 2 < b_end)
            next0 = load_meta(p, b + 2, k0, k1);
        if (b + 3 < b_end)
            next1 = load_meta(p, b + 3, k0, k1);
        block_mma<P, J>(acc, a0, b00, b01);
        if (two)
            block_mma<P, J>(acc, a1, b10, b11);
        m0 = next0;
        m1 = next1;
    }

    if constexpr (kFlushes) {
#pragma unroll
        for (int j = 0; j < J; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[j][q] += total[j][q];
    }
    (void)since_flush;

    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    float r0[2 * J], r1[2 * J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
        r0[j] = acc[j][0]; r0[J + j] = acc[j][1];
        r1[j] = acc[j][2]; r1[J + j] = acc[j][3];
    }
    const int64_t col = n0 + (int64_t)2 * t * J;
    const int64_t row = (int64_t)win * kWinRows + g;
    store_row<CT, 2 * J>(p, row, col, r0, alpha, beta, atomic);
    store_row<CT, 2 * J>(p, row + 8, col, r1, alpha, beta, atomic);
}

// C = beta * C on the rows of the windows listed (those the balanced kernel accumulates into
// atomically).  beta = 0 writes zeros without reading C.
template <class CT>
__global__ void scale_windows(const SpmmParams p, const int32_t *wins, int32_t nwins)
{
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    const int64_t per_win = (int64_t)kWinRows * p.N;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < per_win * nwins;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t w = wins[i / per_win];
        int64_t r = w * kWinRows + (i % per_win) / p.N, c = i % p.N;
        if (r >= p.M)
            continue;
        CT *q = static_cast<CT *>(p.C) + r * p.ldc + c;
        *q = from_f<CT>(beta != 0.0f ? beta * to_f(*q) : 0.0f);
    }
}

} // namespace tc
