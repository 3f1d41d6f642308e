// Tensor-core SDDMM on the ME-TCF plan of C: C = alpha * (A * B) o spy(C) + beta * C, A
// row-major M x K, B column-major K x N.
//
// A thread block takes one work item: a window, or a run of blocks of one window (the plan's
// chunks).  It stages the window's 16 rows of A in shared memory, a tile of up to kTileChunks
// chunks at a time, and its warps multiply groups of the item's blocks: each warp holds the A
// fragment of a chunk in registers and multiplies it by the B pieces of up to kBlocksPerWarp
// blocks (whose loads for the next chunk are already in flight).  When windows have few
// blocks, ksplit warps share a block, each taking every ksplit-th chunk, so that the
// thread block is not left with idle warps.  The 16x8 partial tiles go through shared
// memory, where the threads pick out the tile elements that are nonzeros of C and write
// them, in the order of the nonzeros (coalesced, and only existing nonzeros are touched).
#pragma once
#include <cstdint>
#include <type_traits>
#include "spmm/spmm_kernel.cuh"
#include "sddmm_config.cuh"

namespace tc {
namespace sddmm {

struct Params {
    int64_t M, K;
    const int32_t *win_off, *blk_off, *blk_col, *val_idx;
    const uint8_t *blk_pos;
    const int32_t *win_row;   // reordered plan: A's row of each window row (-1: padding), or null
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    void *C;                  // the caller's values array of C
    const float *alpha_dev, *beta_dev;
    float alpha, beta;
    const int4 *chunks;       // (window, first block, end block, -) per thread block, or null
    int32_t ksplit;           // warps sharing one block: 1, 2 or 4
    int32_t tile_chunks;      // chunks of A staged at a time: min(chunks of K, kTileChunks)
    int a_vec, b_vec;         // rows of A / columns of B start on 16 bytes
};

// Loads move raw bits: they only need the element width.
template <class T> struct Raw;
template <> struct Raw<float> { using type = uint32_t; };
template <> struct Raw<__half> { using type = uint16_t; };

// ---- loads ---------------------------------------------------------------------------------

// Elements [k, k + 16 bytes) of one row of A or column of B, zero past K: a tail never reads
// past the row, and B is zero wherever A's staged padding is (NaN * 0 would leak otherwise).
template <class R>
__device__ __forceinline__ uint4 load16(const R *base, int64_t k, int64_t K, bool vec)
{
    constexpr int E = 16 / (int)sizeof(R), kPerWord = 4 / (int)sizeof(R);
    if (k >= K)
        return make_uint4(0u, 0u, 0u, 0u);
    const R *src = base + k;
    if (vec && k + E <= K)
        return __ldg(reinterpret_cast<const uint4 *>(src));
    uint32_t w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int j = 0; j < E; ++j)
        if (k + j < K) // little-endian: the lower k is the lower half of a word
            w[j / kPerWord] |= (uint32_t)__ldg(src + j) << (8 * (int)sizeof(R) * (j % kPerWord));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void unpack(uint32_t (&w)[kLaneWords], uint4 u0, uint4 u1)
{
    w[0] = u0.x; w[1] = u0.y; w[2] = u0.z; w[3] = u0.w;
    w[4] = u1.x; w[5] = u1.y; w[6] = u1.z; w[7] = u1.w;
}

// The lane's 32 bytes of B column col at k; a padding column (-1) is zeros and never forms
// a pointer into B.
template <class R>
__device__ __forceinline__ void load_b(uint32_t (&w)[kLaneWords], const Params &p, int32_t col,
                                       int64_t k)
{
    if (col < 0) {
#pragma unroll
        for (int j = 0; j < kLaneWords; ++j)
            w[j] = 0u;
        return;
    }
    constexpr int E = 16 / (int)sizeof(R);
    const R *base = static_cast<const R *>(p.B) + (int64_t)col * p.ldb;
    unpack(w, load16<R>(base, k, p.K, p.b_vec), load16<R>(base, k + E, p.K, p.b_vec));
}

// Chunks [c0, c0 + nc) of the window's 16 rows of A into shared memory, rows `stride` bytes
// apart; rows past M (and a reordered plan's padding rows) are zeros and are never read from
// A.  A reordered plan's window row r is A's row win_row[16 * win + r].
template <class R>
__device__ __forceinline__ void stage_a(char *sa, int stride, const Params &p, int32_t win, int c0,
                                        int nc)
{
    constexpr int E = 16 / (int)sizeof(R), kVecs = kChunkBytes / 16;
    const int per_row = nc * kVecs;
    const int64_t k0 = (int64_t)c0 * (kChunkBytes / (int)sizeof(R));
    for (int i = threadIdx.x; i < kWinRows * per_row; i += blockDim.x) {
        const int r = i / per_row, v = i - r * per_row;
        int64_t row = (int64_t)win * kWinRows + r;
        if (p.win_row != nullptr)
            row = __ldg(&p.win_row[row]);
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (row >= 0 && row < p.M)
            u = load16<R>(static_cast<const R *>(p.A) + row * p.lda, k0 + (int64_t)v * E, p.K,
                          p.a_vec);
        *reinterpret_cast<uint4 *>(sa + r * stride + v * 16) = u;
    }
}

// ---- one chunk of A times the B pieces -------------------------------------------------------

// The lane's A words of one chunk for rows g ([0]) and g+8 ([1]): TF32 big parts (and for
// 3xTF32 each MMA's BF16 correction registers, split3_a) converted once, then shared by the
// warp's blocks; FP16 pairs raw.
template <class P>
struct AFrag {
    uint32_t hi[2][kLaneWords];
    uint32_t corr[P::kSplit ? kMmasPerChunk : 1][P::kSplit ? 4 : 1];
};

template <class P>
__device__ __forceinline__ void load_a(AFrag<P> &a, const char *sa, int stride, int c, int g,
                                       int t)
{
    uint32_t w[2][kLaneWords];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const uint4 *q = reinterpret_cast<const uint4 *>(sa + (g + 8 * h) * stride +
                                                         c * kChunkBytes + t * kLaneBytes);
        unpack(w[h], q[0], q[1]);
#pragma unroll
        for (int j = 0; j < kLaneWords; ++j) {
            if constexpr (P::kHalf)
                a.hi[h][j] = w[h][j];
            else
                a.hi[h][j] = tf32_bits(__uint_as_float(w[h][j]));
        }
    }
    if constexpr (P::kSplit) {
#pragma unroll
        for (int i = 0; i < kMmasPerChunk; ++i) {
            const float f[4] = {__uint_as_float(w[0][2 * i]), __uint_as_float(w[1][2 * i]),
                                __uint_as_float(w[0][2 * i + 1]),
                                __uint_as_float(w[1][2 * i + 1])};
            uint32_t big[4]; // a.hi's words again
            split3_a(big, a.corr[i], f);
        }
    }
}

// acc += the chunk's 16x8 product.  3xTF32 sums the chunk's products from zero on the tensor
// cores and adds that into acc in ordinary FP32: the tensor cores' accumulation truncates,
// and over hundreds of MMAs (K = 1024) the bias would exceed FP32-level error.
template <class P>
__device__ __forceinline__ void chunk_mma(float (&acc)[4], const AFrag<P> &a,
                                          const uint32_t (&b)[kLaneWords])
{
    if constexpr (P::kHalf) {
        static_assert(std::is_same<typename P::T, __half>::value, "m16n8k16 here is FP16 only");
#pragma unroll
        for (int i = 0; i < kMmasPerChunk; ++i) {
            const uint32_t af[4] = {a.hi[0][2 * i], a.hi[1][2 * i], a.hi[0][2 * i + 1],
                                    a.hi[1][2 * i + 1]};
            mma_k16<__half>(acc, af, b[2 * i], b[2 * i + 1]);
        }
    } else if constexpr (!P::kSplit) {
#pragma unroll
        for (int i = 0; i < kMmasPerChunk; ++i) {
            const uint32_t af[4] = {a.hi[0][2 * i], a.hi[1][2 * i], a.hi[0][2 * i + 1],
                                    a.hi[1][2 * i + 1]};
            mma_tf32(acc, af, tf32_bits(__uint_as_float(b[2 * i])),
                     tf32_bits(__uint_as_float(b[2 * i + 1])));
        }
    } else {
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = 0; i < kMmasPerChunk; ++i) {
            const uint32_t ab[4] = {a.hi[0][2 * i], a.hi[1][2 * i], a.hi[0][2 * i + 1],
                                    a.hi[1][2 * i + 1]};
            split3_mma(part, ab, a.corr[i], __uint_as_float(b[2 * i]),
                       __uint_as_float(b[2 * i + 1]));
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
            acc[q] += part[q];
    }
}

// The B pieces of the warp's live blocks for chunk c.
template <class R>
__device__ __forceinline__ void load_bs(uint32_t (&w)[kBlocksPerWarp][kLaneWords],
                                        const Params &p, const int32_t (&col)[kBlocksPerWarp],
                                        int nlive, int64_t k)
{
#pragma unroll
    for (int i = 0; i < kBlocksPerWarp; ++i)
        if (i < nlive)
            load_b<R>(w[i], p, col[i], k);
}

// acc[i] += A[:, tile] * B[tile, block i] over the tile's chunks kpart, kpart + ks, ...; the
// next chunk's B loads are issued before this chunk's MMAs.
template <class P>
__device__ __forceinline__ void multiply_tile(float (&acc)[kBlocksPerWarp][4], const char *sa,
                                              int stride, const Params &p,
                                              const int32_t (&col)[kBlocksPerWarp], int nlive,
                                              int c0, int nc, int kpart, int ks, int g, int t)
{
    using T = typename P::T;
    using R = typename Raw<T>::type;
    constexpr int CE = chunk_elems<T>();
    const int64_t klane = (int64_t)t * (kLaneBytes / (int)sizeof(T));
    uint32_t bw[kBlocksPerWarp][kLaneWords];
    int c = kpart;
    if (c < nc)
        load_bs<R>(bw, p, col, nlive, (int64_t)(c0 + c) * CE + klane);
    for (; c < nc; c += ks) {
        uint32_t nx[kBlocksPerWarp][kLaneWords];
        const bool more = c + ks < nc;
        if (more)
            load_bs<R>(nx, p, col, nlive, (int64_t)(c0 + c + ks) * CE + klane);
        AFrag<P> a;
        load_a<P>(a, sa, stride, c, g, t);
#pragma unroll
        for (int i = 0; i < kBlocksPerWarp; ++i)
            if (i < nlive)
                chunk_mma<P>(acc[i], a, bw[i]);
        if (more) {
#pragma unroll
            for (int i = 0; i < kBlocksPerWarp; ++i)
#pragma unroll
                for (int j = 0; j < kLaneWords; ++j)
                    bw[i][j] = nx[i][j];
        }
    }
}

// ---- epilogue --------------------------------------------------------------------------------

using Tile = float[kWinRows * kBlkCols]; // row-major 16x8, indexed by blk_pos

// The lane's accumulator elements (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) into the tiles.
__device__ __forceinline__ void store_partials(Tile *tiles, const float (&acc)[kBlocksPerWarp][4],
                                               int g, int t)
{
#pragma unroll
    for (int i = 0; i < kBlocksPerWarp; ++i) {
        *reinterpret_cast<float2 *>(&tiles[i][g * kBlkCols + 2 * t]) =
            make_float2(acc[i][0], acc[i][1]);
        *reinterpret_cast<float2 *>(&tiles[i][(g + 8) * kBlkCols + 2 * t]) =
            make_float2(acc[i][2], acc[i][3]);
    }
}

// C[val_idx[e]] = alpha * tile[blk_pos[e]] + beta * C[val_idx[e]] for the nonzeros e of the
// group's nb blocks (off: their blk_off); block s was computed by the ks warps of team
// s % teams, as their block s / teams.  beta = 0 does not read C.
template <class CT>
__device__ __forceinline__ void write_nonzeros(const Params &p, Tile (*part)[kBlocksPerWarp],
                                               const int32_t *off, int nb, int teams, int ks,
                                               float alpha, float beta)
{
    for (int32_t e = off[0] + (int32_t)threadIdx.x; e < off[nb]; e += (int32_t)blockDim.x) {
        int s = 0;
        while (s + 1 < nb && off[s + 1] <= e)
            ++s;
        const int pos = __ldg(&p.blk_pos[e]), w0 = (s % teams) * ks, i = s / teams;
        float v = 0.0f;
        for (int kp = 0; kp < ks; ++kp)
            v += part[w0 + kp][i][pos];
        CT *dst = static_cast<CT *>(p.C) + __ldg(&p.val_idx[e]);
        const float old = beta != 0.0f ? beta * to_f(*dst) : 0.0f;
        *dst = from_f<CT>(alpha * v + old);
    }
}

// ---- the kernel ----------------------------------------------------------------------------

__device__ __forceinline__ void work_item(const Params &p, int32_t &win, int32_t &b,
                                          int32_t &b_end)
{
    if (p.chunks != nullptr) {
        const int4 ch = p.chunks[blockIdx.x];
        win = ch.x; b = ch.y; b_end = ch.z;
    } else {
        win = (int32_t)blockIdx.x;
        b = __ldg(&p.win_off[win]);
        b_end = __ldg(&p.win_off[win + 1]);
    }
}

// Dynamic shared memory: 16 * (tile_chunks * kChunkBytes + kRowPad) bytes (A's tile).
template <class P, class CT>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm<P>()) sddmm_kernel(const Params p)
{
    using T = typename P::T;
    using R = typename Raw<T>::type;
    extern __shared__ __align__(16) char sa[];
    __shared__ __align__(16) Tile part[kWarps][kBlocksPerWarp];
    __shared__ int32_t off[kGroup + 1];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int ks = p.ksplit, teams = kWarps / ks, team = warp / ks, kpart = warp % ks;
    const int group = teams * kBlocksPerWarp;
    const int stride = p.tile_chunks * kChunkBytes + kRowPad;
    const int nk = (int)((p.K + chunk_elems<T>() - 1) / chunk_elems<T>());
    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;

    int32_t win, b, b_end;
    work_item(p, win, b, b_end);
    int staged = -1; // first chunk of the A tile now in shared memory
    for (int32_t gb = b; gb < b_end; gb += group) {
        const int nb = b_end - gb < group ? b_end - gb : group;
        for (int i = tid; i <= nb; i += blockDim.x)
            off[i] = __ldg(&p.blk_off[gb + i]);
        // the warp's blocks are group blocks team, team + teams, ...: the first nlive exist
        const int nlive = team < nb ? (nb - team + teams - 1) / teams : 0;
        int32_t col[kBlocksPerWarp];
#pragma unroll
        for (int i = 0; i < kBlocksPerWarp; ++i)
            col[i] = i < nlive ? __ldg(&p.blk_col[(int64_t)(gb + team + teams * i) * kBlkCols + g])
                               : -1;
        float acc[kBlocksPerWarp][4];
#pragma unroll
        for (int i = 0; i < kBlocksPerWarp; ++i)
            acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

        for (int c0 = 0; c0 < nk; c0 += kTileChunks) {
            const int nc = nk - c0 < kTileChunks ? nk - c0 : kTileChunks;
            if (staged != c0) { // with K in one tile, A is staged once per work item
                __syncthreads(); // every warp is done with the previous tile
                stage_a<R>(sa, stride, p, win, c0, nc);
                __syncthreads();
                staged = c0;
            }
            if (nlive > 0)
                multiply_tile<P>(acc, sa, stride, p, col, nlive, c0, nc, kpart, ks, g, t);
        }
        store_partials(part[warp], acc, g, t);
        __syncthreads(); // partial tiles and off[] complete
        write_nonzeros<CT>(p, part, off, nb, teams, ks, alpha, beta);
        __syncthreads(); // part[] and off[] are reused by the next group
    }
}

} // namespace sddmm
} // namespace tc
