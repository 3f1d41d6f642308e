// Tensor-core SpMM, thread-block form: one thread block = one work item (a row window, or a
// chunk of one for the balanced schedule) times a slice of warps * WARP_N columns.
//
// Why: were every warp to fetch every block's metadata and values itself, each through two
// dependent global loads (mask -> val_idx -> value), a warp would spend most of its time
// waiting (measured: a warp-per-window form was 1.3x slower in FP16, equal in TF32).  Here the
// block stages up to kStage blocks at once: metadata and values are read with coalesced loads
// by all threads, A is scattered into dense 16x8 tiles in shared memory, and then every warp
// issues the B loads of several blocks back to back (their columns are all known), so one
// memory latency is paid per group of blocks instead of two or three per block.
#pragma once
#include "spmm_kernel.cuh"

namespace tc {

#ifndef TC_KSTAGE
#define TC_KSTAGE 8
#endif
constexpr int kStage = TC_KSTAGE; // blocks staged in shared memory at a time
constexpr int kGroup = 4;       // blocks whose B loads a warp issues together
constexpr int kMaxCtaWarps = 4;

#ifndef TC_PREFETCH_META
#define TC_PREFETCH_META 0 // experiment: prefetch the next block's metadata; off by default
#endif
#ifndef TC_MIN_BLOCKS
#define TC_MIN_BLOCKS 0
#endif
// Thread blocks per SM the register allocation must allow (0: no hint): TC_MIN_BLOCKS for
// the one-product TF32 kernel with J = 4; the others would spill.
template <class P, int J> struct MinBlocks {
    static constexpr int value = (J == 4 && !P::kSplit && !P::kHalf) ? TC_MIN_BLOCKS : 0;
};

static_assert(kStage % kGroup == 0 && (kStage & (kStage - 1)) == 0,
              "a stage is whole groups, and a power of two for the block search");

struct alignas(16) CtaSmem {
    float a[kStage][kWinRows * kBlkCols]; // dense A tiles, row-major 16x8
    int32_t col[kStage][kBlkCols];
    int32_t off[kStage + 1];              // nonzero range of each staged block
};

// The thread block's work item: a window, or (balanced schedule) a chunk of one, whose sums
// are added atomically into C when its window is split.
template <bool kBalanced>
__device__ __forceinline__ void work_item(const SpmmParams &p, int32_t &win, int32_t &b,
                                          int32_t &b_end, bool &atomic)
{
    atomic = false;
    if constexpr (kBalanced) {
        int4 ch = p.chunks[blockIdx.x];
        win = ch.x; b = ch.y; b_end = ch.z; atomic = ch.w != 0;
    } else {
        win = blockIdx.x; b = __ldg(&p.win_off[win]); b_end = __ldg(&p.win_off[win + 1]);
    }
}

template <int J>
__device__ __forceinline__ void zero_acc(float (&a)[J][4])
{
#pragma unroll
    for (int j = 0; j < J; ++j)
        a[j][0] = a[j][1] = a[j][2] = a[j][3] = 0.0f;
}

// 3xTF32's flush: the tensor-core accumulators moved into the round-to-nearest FP32 sums.
template <int J>
__device__ __forceinline__ void flush_acc(float (&total)[J][4], float (&acc)[J][4])
{
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            total[j][q] += acc[j][q];
            acc[j][q] = 0.0f;
        }
}

// The end of a work item: 3xTF32's last flush (total: the flushed sums, unused otherwise),
// then the window's two rows of the lane's columns, alpha * acc + beta * C, written (or, for a
// chunk of a split window, added atomically).  Shared by the pipelined kernel.
template <class CT, int J, bool kFlushes, int TJ>
__device__ __forceinline__ void store_window(const SpmmParams &p, float (&acc)[J][4],
                                             const float (&total)[TJ][4], int32_t win,
                                             int64_t n0, int g, int t, bool atomic)
{
    if constexpr (kFlushes) {
#pragma unroll
        for (int j = 0; j < J; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q)
                acc[j][q] += total[j][q];
    }

    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    float r0[2 * J], r1[2 * J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
        r0[j] = acc[j][0]; r0[J + j] = acc[j][1];
        r1[j] = acc[j][2]; r1[J + j] = acc[j][3];
    }
    const int64_t col = n0 + (int64_t)2 * t * J;
    int64_t row0 = (int64_t)win * kWinRows + g, row1 = row0 + 8;
    if (p.win_row != nullptr) { // uniform branch: reordered plan, the caller's rows (-1: none)
        row0 = __ldg(&p.win_row[row0]);
        row1 = __ldg(&p.win_row[row1]);
    }
    store_row<CT, 2 * J>(p, row0, col, r0, alpha, beta, atomic);
    store_row<CT, 2 * J>(p, row1, col, r1, alpha, beta, atomic);
}

template <class P, class CT, int J, bool kBalanced>
__global__ void __launch_bounds__(kMaxCtaWarps * 32, MinBlocks<P, J>::value)
    spmm_cta_kernel(const SpmmParams p)
{
    using T = typename P::T;
    using S = Shape<P, J>;
    __shared__ CtaSmem sm;
    if (guard_stops(p))
        return;
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int k0 = P::kHalf ? 2 * t : t;
    const int k1 = P::kHalf ? 2 * t + 1 : t + 4;
    const int64_t n0 = ((int64_t)blockIdx.y * (nthreads >> 5) + warp) * S::kWarpN;
    const int64_t ncol = n0 + (int64_t)g * J;

    int32_t win, b, b_end;
    bool atomic;
    work_item<kBalanced>(p, win, b, b_end, atomic);

    float acc[J][4];
    zero_acc(acc);
    // 3xTF32 promises FP32 accuracy, but the tensor cores' FP32 accumulation truncates: over
    // hundreds of blocks the bias shows (2.5e-5 on a 4099-nonzero row).  So after every stage
    // the accumulators are moved into an ordinary round-to-nearest FP32 sum.
    constexpr bool kFlushes = P::kSplit;
    float total[kFlushes ? J : 1][4];
    if constexpr (kFlushes)
        zero_acc(total);

#if TC_PREFETCH_META
    // The next stage's block columns and offsets, loaded into registers while this stage's
    // products run, so a stage starts with one dependent global load (value index, value)
    // fewer.  Sized for the smallest thread block (one warp).
    constexpr int kColPer = (kStage * kBlkCols + 31) / 32, kOffPer = (kStage + 1 + 31) / 32;
    int32_t pcol[kColPer], poff[kOffPer];
    auto fetch_meta = [&](int32_t bs) {
        const int n = b_end - bs < kStage ? b_end - bs : kStage;
#pragma unroll
        for (int c = 0; c < kColPer; ++c) {
            const int i = tid + c * nthreads;
            pcol[c] = i < n * kBlkCols ? __ldg(&p.blk_col[(int64_t)bs * kBlkCols + i]) : 0;
        }
#pragma unroll
        for (int c = 0; c < kOffPer; ++c) {
            const int i = tid + c * nthreads;
            poff[c] = i <= n ? __ldg(&p.blk_off[bs + i]) : 0;
        }
    };
    if (b < b_end)
        fetch_meta(b);
#endif
    for (; b < b_end; b += kStage) {
        const int nb = b_end - b < kStage ? b_end - b : kStage;
        __syncthreads(); // the previous stage's tiles have been read
        for (int i = tid; i < nb * kWinRows * kBlkCols / 4; i += nthreads)
            reinterpret_cast<float4 *>(&sm.a[0][0])[i] = make_float4(0.f, 0.f, 0.f, 0.f);
#if TC_PREFETCH_META
#pragma unroll
        for (int c = 0; c < kColPer; ++c) {
            const int i = tid + c * nthreads;
            if (i < nb * kBlkCols)
                sm.col[0][i] = pcol[c];
        }
#pragma unroll
        for (int c = 0; c < kOffPer; ++c) {
            const int i = tid + c * nthreads;
            if (i <= nb)
                sm.off[i] = poff[c];
        }
#else
        for (int i = tid; i < nb * kBlkCols; i += nthreads)
            sm.col[0][i] = __ldg(&p.blk_col[(int64_t)b * kBlkCols + i]);
        for (int i = tid; i <= nb; i += nthreads)
            sm.off[i] = __ldg(&p.blk_off[b + i]);
#endif
        __syncthreads();
        const int32_t e0 = sm.off[0], e1 = sm.off[nb];
        for (int32_t e = e0 + tid; e < e1; e += nthreads) {
            int k = 0; // staged block holding nonzero e: last k with off[k] <= e
#pragma unroll
            for (int step = kStage / 2; step > 0; step /= 2)
                if (k + step < nb && sm.off[k + step] <= e)
                    k += step;
            const T v = static_cast<const T *>(p.a_val)[__ldg(&p.val_idx[e])];
            sm.a[k][__ldg(&p.blk_pos[e])] = to_f(v);
        }
#if TC_PREFETCH_META
        if (b + kStage < b_end)
            fetch_meta(b + kStage); // lands while this stage's products run
#endif
        __syncthreads();

#pragma unroll
        for (int k = 0; k < kStage; k += kGroup) {
            if (k >= nb)
                break;
            T bv[kGroup][2][J];
#pragma unroll
            for (int u = 0; u < kGroup; ++u) {
                const bool live = k + u < nb;
                load_b<T, J>(bv[u][0], p, live ? sm.col[k + u][k0] : -1, ncol);
                load_b<T, J>(bv[u][1], p, live ? sm.col[k + u][k1] : -1, ncol);
            }
#pragma unroll
            for (int u = 0; u < kGroup; ++u) {
                if (k + u >= nb)
                    break;
                const float *tile = sm.a[k + u];
                const float a[4] = {tile[g * 8 + k0], tile[(g + 8) * 8 + k0], tile[g * 8 + k1],
                                    tile[(g + 8) * 8 + k1]};
                block_mma<P, J>(acc, a, bv[u][0], bv[u][1]);
            }
        }
        if constexpr (kFlushes)
            flush_acc(total, acc);
    }
    store_window<CT, J, kFlushes>(p, acc, total, win, n0, g, t, atomic);
}

} // namespace tc
