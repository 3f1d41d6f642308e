// Tensor-core SDDMM, pipelined variant: same plan, numerics and output as sddmm_kernel.cuh,
// with the loads of B kept in flight without interruption.
//
// The other kernel keeps one chunk of B ahead in registers and restarts that pipeline for
// every group of 8 blocks (two barriers and the epilogue in between), so at K = 128 nearly
// every chunk step waits a full memory latency.  Here each warp is a pipeline of its own:
//   * A's 16 window rows, for the whole K, are staged once per work item (cp.async, one
//     barrier), overlapping the first B loads;
//   * the warp takes pairs of the item's blocks (warp, warp + 4, ... in pair order) and walks
//     their chunks of K as one stream of steps; the B pieces of step s + S - 1 are copied by
//     cp.async into one of S ring slots while step s is multiplied, across pair boundaries,
//     so the stream never drains until the warp has no blocks left;
//   * a lane copies and reads back only its own pieces (see sddmm_config.cuh), so waiting for
//     its own cp.async groups is all the ring needs: no barrier, no __syncwarp;
//   * a pair's nonzeros are written by its warp alone (through a per-warp tile in shared
//     memory, __syncwarp only), with their val_idx / blk_pos loaded while the pair is still
//     being multiplied, and the next pair's blk_col / blk_off a pair ahead.
// K beyond kPipeMaxChunks chunks (FP32 > 256, FP16 > 512) runs the other kernel.
#pragma once
#include "cp_async.cuh"
#include "sddmm_kernel.cuh"

namespace tc {
namespace sddmm {

// ---- cp.async ------------------------------------------------------------------------------

// Elements [k, k + 16 bytes) of the row / column at base into dst, zero past K (never read
// past it).  Aligned: asynchronous, with the tail's byte count.  Unaligned (base or leading
// dimension not on 16 bytes): the scalar loads of load16, stored synchronously; the slot
// discipline is the same, only that piece's latency is exposed.
template <class R>
__device__ __forceinline__ void copy16(char *dst, const R *base, int64_t k, int64_t K, bool vec)
{
    constexpr int E = 16 / (int)sizeof(R);
    if (vec) {
        const int64_t left = K - k;
        const int n = left <= 0 ? 0 : left >= E ? 16 : (int)left * (int)sizeof(R);
        cp_async16(dst, n > 0 ? static_cast<const void *>(base + k) : &kCpAsyncZeros, n);
    } else {
        *reinterpret_cast<uint4 *>(dst) = load16<R>(base, k, K, false);
    }
}

// ---- A -------------------------------------------------------------------------------------

// The window's 16 rows of A, chunks [0, nk), rows `stride` bytes apart, issued as cp.async
// (not waited for here).  Eight threads take one row, 128 consecutive bytes per round, so
// the row's original index (win_row) is looked up once.  Rows past M and a reordered plan's
// padding rows are zeros and are never read from A.
template <class R>
__device__ __forceinline__ void stage_a_async(char *sa, int stride, const Params &p, int32_t win,
                                              int nk)
{
    constexpr int E = 16 / (int)sizeof(R), kVecs = kChunkBytes / 16;
    const int r = (int)threadIdx.x >> 3, v0 = (int)threadIdx.x & 7;
    int64_t row = (int64_t)win * kWinRows + r;
    if (p.win_row != nullptr)
        row = __ldg(&p.win_row[row]);
    const bool live = row >= 0 && row < p.M;
    const R *base = live ? static_cast<const R *>(p.A) + row * p.lda : nullptr;
    char *dst = sa + r * stride;
    for (int v = v0; v < nk * kVecs; v += 8) {
        if (live)
            copy16<R>(dst + v * 16, base, (int64_t)v * E, p.K, p.a_vec);
        else
            zero16(dst + v * 16);
    }
}

// ---- the ring of B pieces ------------------------------------------------------------------

// The issuing end of a warp's stream: the step (pair q, chunk c) whose pieces are copied
// next, into ring slot `slot`; col: the lane's column of each block of pair q, as a pointer
// to its first element (null: a padding column, or no such block); next: the columns of
// the warp's following pair, loaded a pair ahead so that a pair boundary does not wait on
// blk_col before it can copy.
template <class R>
struct Issuer {
    int q, c, slot;
    const R *col[kPipeBlocks];
    int32_t next[kPipeBlocks];
};

__device__ __forceinline__ void pair_cols(int32_t (&col)[kPipeBlocks], const Params &p,
                                          int32_t b, int nb, int q, int g)
{
#pragma unroll
    for (int j = 0; j < kPipeBlocks; ++j) {
        const int s = q * kPipeBlocks + j;
        col[j] = s < nb ? __ldg(&p.blk_col[(int64_t)(b + s) * kBlkCols + g]) : -1;
    }
}

// Column pointers of pair cols: a padding column (-1) never forms a pointer into B.
template <class R>
__device__ __forceinline__ void col_ptrs(const R *(&ptr)[kPipeBlocks],
                                         const int32_t (&col)[kPipeBlocks], const Params &p)
{
#pragma unroll
    for (int j = 0; j < kPipeBlocks; ++j)
        ptr[j] = col[j] >= 0 ? static_cast<const R *>(p.B) + (int64_t)col[j] * p.ldb : nullptr;
}

// Copies the lane's pieces of the issuer's step (if the warp has one left) and moves on.
// Aligned pieces wholly inside K (all but the last chunk's) take the plain 16-byte copy.
template <class R, int S>
__device__ __forceinline__ void issue(Issuer<R> &is, char *ring, const Params &p, int32_t b,
                                      int nb, int npairs, int nk, int lane, int g, int t)
{
    constexpr int E = 16 / (int)sizeof(R), CE = kChunkBytes / (int)sizeof(R);
    constexpr int H = kLaneBytes / 16; // 16-byte pieces per block
    if (is.q < npairs) {
        const int64_t k = (int64_t)is.c * CE + (int64_t)t * (kLaneBytes / (int)sizeof(R));
        const bool whole = p.b_vec && k + H * E <= p.K;
        char *dst = ring + is.slot * kPipeSlotBytes + lane * 16;
#pragma unroll
        for (int j = 0; j < kPipeBlocks; ++j) {
            const R *base = is.col[j];
#pragma unroll
            for (int h = 0; h < H; ++h) {
                char *d = dst + (j * H + h) * (32 * 16);
                if (base == nullptr) // B is zero where A's staged padding is (NaN * 0 leaks)
                    zero16(d);
                else if (whole)
                    cp_async16(d, base + k + h * E);
                else
                    copy16<R>(d, base, k + h * E, p.K, p.b_vec);
            }
        }
        if (++is.c == nk) {
            is.c = 0;
            is.q += kWarps;
            col_ptrs<R>(is.col, is.next, p);
            pair_cols(is.next, p, b, nb, is.q + kWarps, g);
        }
    }
    is.slot = is.slot + 1 == S ? 0 : is.slot + 1;
}

// The lane's own 32 bytes of block j in a slot, in load_b's word order.
__device__ __forceinline__ void read_piece(uint32_t (&w)[kLaneWords], const char *slot, int j,
                                           int lane)
{
    const char *s = slot + j * (kLaneBytes / 16) * (32 * 16) + lane * 16;
    unpack(w, *reinterpret_cast<const uint4 *>(s), *reinterpret_cast<const uint4 *>(s + 32 * 16));
}

// ---- a pair's nonzeros ---------------------------------------------------------------------

// off[j]: first nonzero of the pair's block j (off[kPipeBlocks]: the end; blocks the pair
// lacks are empty).
__device__ __forceinline__ void pair_offsets(int32_t (&off)[kPipeBlocks + 1], const Params &p,
                                             int32_t b, int nb, int q)
{
    const int s0 = q * kPipeBlocks;
#pragma unroll
    for (int j = 0; j <= kPipeBlocks; ++j) {
        const int s = s0 + j < nb ? s0 + j : nb;
        off[j] = s0 < nb ? __ldg(&p.blk_off[b + s]) : 0;
    }
}

// The (blk_pos, val_idx) of the lane's first kPipePrefetch nonzeros of the pair, issued early
// so that the epilogue does not wait on them.
struct NzPrefetch {
    int32_t pos[kPipePrefetch], idx[kPipePrefetch];
};

__device__ __forceinline__ void prefetch_nonzeros(NzPrefetch &pf, const Params &p,
                                                  const int32_t (&off)[kPipeBlocks + 1], int lane)
{
#pragma unroll
    for (int r = 0; r < kPipePrefetch; ++r) {
        const int32_t e = off[0] + r * 32 + lane;
        pf.pos[r] = e < off[kPipeBlocks] ? (int32_t)__ldg(&p.blk_pos[e]) : 0;
        pf.idx[r] = e < off[kPipeBlocks] ? __ldg(&p.val_idx[e]) : 0;
    }
}

template <class CT>
__device__ __forceinline__ void write_nonzero(const Params &p, const Tile *tiles,
                                              const int32_t (&off)[kPipeBlocks + 1], int32_t e,
                                              int pos, int32_t idx, float alpha, float beta)
{
    int j = 0;
#pragma unroll
    for (int s = 1; s < kPipeBlocks; ++s)
        j += e >= off[s];
    CT *dst = static_cast<CT *>(p.C) + idx;
    const float old = beta != 0.0f ? beta * to_f(*dst) : 0.0f; // beta = 0 does not read C
    *dst = from_f<CT>(alpha * tiles[j][pos] + old);
}

// C[val_idx[e]] = alpha * tile[blk_pos[e]] + beta * C[val_idx[e]] for the pair's nonzeros,
// by the warp alone: its tiles are private, so __syncwarp orders them.
template <class CT>
__device__ __forceinline__ void write_pair(const Params &p, Tile *tiles,
                                           const float (&acc)[kPipeBlocks][4],
                                           const int32_t (&off)[kPipeBlocks + 1],
                                           const NzPrefetch &pf, int lane, int g, int t,
                                           float alpha, float beta)
{
    __syncwarp(); // the previous pair's reads of the tiles are done
    store_partials(tiles, acc, g, t);
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kPipePrefetch; ++r) {
        const int32_t e = off[0] + r * 32 + lane;
        if (e < off[kPipeBlocks])
            write_nonzero<CT>(p, tiles, off, e, pf.pos[r], pf.idx[r], alpha, beta);
    }
    for (int32_t e = off[0] + kPipePrefetch * 32 + lane; e < off[kPipeBlocks]; e += 32)
        write_nonzero<CT>(p, tiles, off, e, __ldg(&p.blk_pos[e]), __ldg(&p.val_idx[e]), alpha,
                          beta);
}

// ---- B through registers (the REGB variant, plain TF32) --------------------------------------
//
// The ring costs L1 three accesses per piece (the fill, the cp.async write to shared memory,
// the lane's read).  Here each lane loads its pieces straight into registers (ld.global.nc,
// cached in L1 as cp.async.ca is) two steps ahead, into two register buffers used in turn:
// one access per piece.  But a load into registers holds the warp at its first use, which
// cp.async does not: on the H100 it is faster only on some inputs (ogbl-ddi, uniform 2^18 x
// 256 at K = 128), so it is a variant the
// executions measure (src/route/tune.c), never the launcher's own choice.  It is the kernel below
// with kRegB: same products in the same order, the shared memory layout of the ring (unused).

template <class R>
__device__ __forceinline__ void issue_regs(Issuer<R> &is, uint4 (&dst)[kPipeBlocks * 2],
                                           const Params &p, int32_t b, int nb, int npairs,
                                           int nk, int g, int t)
{
    constexpr int E = 16 / (int)sizeof(R), CE = kChunkBytes / (int)sizeof(R);
    constexpr int H = kLaneBytes / 16;
    static_assert(H == 2, "two pieces a block per step");
    if (is.q < npairs) {
        const int64_t k = (int64_t)is.c * CE + (int64_t)t * (kLaneBytes / (int)sizeof(R));
        const bool whole = p.b_vec && k + H * E <= p.K;
#pragma unroll
        for (int j = 0; j < kPipeBlocks; ++j) {
            const R *base = is.col[j];
#pragma unroll
            for (int h = 0; h < H; ++h) {
                if (base == nullptr)
                    dst[j * H + h] = make_uint4(0u, 0u, 0u, 0u);
                else if (whole)
                    dst[j * H + h] = __ldg(reinterpret_cast<const uint4 *>(base + k + h * E));
                else
                    dst[j * H + h] = load16<R>(base, k + h * E, p.K, p.b_vec);
            }
        }
        if (++is.c == nk) {
            is.c = 0;
            is.q += kWarps;
            col_ptrs<R>(is.col, is.next, p);
            pair_cols(is.next, p, b, nb, is.q + kWarps, g);
        }
    }
}

// 5 resident thread blocks an SM asked of ptxas: 96 registers, no spill (4: 105, slower).
// ---- the kernel ----------------------------------------------------------------------------

// Dynamic shared memory: pipe_smem_bytes(nk, S), nk = chunks of K (at least 1, at most
// kPipeMaxChunks).  K = 0 runs one chunk of zeros, so every nonzero is still written.
// kWideL1: the same kernel as a separate instance, whose launcher asks for a smaller shared
// memory carveout (sddmm_launch.cu, wide_l1; a function attribute holds for every launch of
// an instance).  kRegB: B's pieces through registers (issue_regs) instead of the ring; 5
// resident thread blocks an SM asked of ptxas (96 registers for TF32, no spill; 4 gave 105
// and was slower).
template <class P, class CT, int S, bool kWideL1 = false, bool kRegB = false>
__global__ void __launch_bounds__(kThreads, kRegB ? 5 : pipe_min_blocks_per_sm<P>())
    sddmm_pipe_kernel(const Params p)
{
    using T = typename P::T;
    using R = typename Raw<T>::type;
    constexpr int CE = chunk_elems<T>();
    extern __shared__ __align__(16) char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int nk = p.K > 0 ? (int)((p.K + CE - 1) / CE) : 1;
    const int stride = nk * kChunkBytes + kRowPad;
    char *ring = smem + warp * (S * kPipeSlotBytes);
    Tile *tiles = reinterpret_cast<Tile *>(smem + kWarps * S * kPipeSlotBytes) +
                  warp * kPipeBlocks;
    char *sa = smem + kWarps * S * kPipeSlotBytes + kWarps * kPipeBlocks * kTileBytes;

    int32_t win, b, b_end;
    work_item(p, win, b, b_end);
    const int nb = b_end - b;
    if (nb <= 0)
        return; // the whole thread block: no barrier is left waiting
    const int npairs = (nb + kPipeBlocks - 1) / kPipeBlocks;

    // A first (the oldest cp.async group), then the first S - 1 steps of B (kRegB: the first
    // two, into the two register buffers).
    stage_a_async<R>(sa, stride, p, win, nk);
    cp_async_commit();
    Issuer<R> is;
    is.q = warp; is.c = 0; is.slot = 0;
    pair_cols(is.next, p, b, nb, warp, g);
    col_ptrs<R>(is.col, is.next, p);
    pair_cols(is.next, p, b, nb, warp + kWarps, g);
    uint4 regs[2][kPipeBlocks * 2];
    if constexpr (kRegB) {
        issue_regs<R>(is, regs[0], p, b, nb, npairs, nk, g, t);
        issue_regs<R>(is, regs[1], p, b, nb, npairs, nk, g, t);
    } else {
#pragma unroll
        for (int s = 0; s < S - 1; ++s) {
            issue<R, S>(is, ring, p, b, nb, npairs, nk, lane, g, t);
            cp_async_commit();
        }
    }
    int32_t off[kPipeBlocks + 1];
    pair_offsets(off, p, b, nb, warp);
    const float alpha = p.alpha_dev ? *p.alpha_dev : p.alpha;
    const float beta = p.beta_dev ? *p.beta_dev : p.beta;
    cp_async_wait<kRegB ? 0 : S - 1>(); // this thread's pieces of A have landed
    __syncthreads();                     // and everyone else's

    int slot = 0; // ring slot, or (kRegB) register buffer
    for (int q = warp; q < npairs; q += kWarps) {
        const int nlive = nb - q * kPipeBlocks < kPipeBlocks ? nb - q * kPipeBlocks : kPipeBlocks;
        NzPrefetch pf;
        prefetch_nonzeros(pf, p, off, lane);
        int32_t off_next[kPipeBlocks + 1];
        pair_offsets(off_next, p, b, nb, q + kWarps);
        float acc[kPipeBlocks][4];
#pragma unroll
        for (int j = 0; j < kPipeBlocks; ++j)
            acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

        for (int c = 0; c < nk; ++c) {
            AFrag<P> a;
            if constexpr (kRegB) {
                load_a<P>(a, sa, stride, c, g, t);
                // the buffer's index must be a constant for it to stay in registers
                auto step = [&](uint4 (&cur)[kPipeBlocks * 2]) {
#pragma unroll
                    for (int j = 0; j < kPipeBlocks; ++j)
                        if (j < nlive) {
                            uint32_t w[kLaneWords];
                            unpack(w, cur[2 * j], cur[2 * j + 1]);
                            chunk_mma<P>(acc[j], a, w);
                        }
                    issue_regs<R>(is, cur, p, b, nb, npairs, nk, g, t); // two steps ahead
                };
                if (slot == 0)
                    step(regs[0]);
                else
                    step(regs[1]);
                slot ^= 1;
            } else {
                // One group per step, empty once the warp has nothing left to copy, so that
                // "all but the newest S - 1" is always this step's group.
                issue<R, S>(is, ring, p, b, nb, npairs, nk, lane, g, t);
                cp_async_commit();
                cp_async_wait<S - 1>();
                load_a<P>(a, sa, stride, c, g, t);
                const char *cur = ring + slot * kPipeSlotBytes;
#pragma unroll
                for (int j = 0; j < kPipeBlocks; ++j)
                    if (j < nlive) {
                        uint32_t w[kLaneWords];
                        read_piece(w, cur, j, lane);
                        chunk_mma<P>(acc[j], a, w);
                    }
                slot = slot + 1 == S ? 0 : slot + 1;
            }
        }
        write_pair<CT>(p, tiles, acc, off, pf, lane, g, t, alpha, beta);
#pragma unroll
        for (int j = 0; j <= kPipeBlocks; ++j)
            off[j] = off_next[j];
    }
}

} // namespace sddmm
} // namespace tc
