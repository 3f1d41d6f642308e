// Tensor-core SpMM, pipelined variant of spmm_kernel_cta.cuh: the same grid (one thread block
// = one work item times a slice of warps * WARP_N columns), the same products in the same
// order (so the same numerics, bit for bit, 3xTF32's flush after every kStage blocks
// included) and the same epilogue, with the loads kept in flight across stages.
//
// The other kernel pays, for every stage of kStage blocks, the chain blk_off -> val_idx ->
// value -> A tile -> barrier, then blk_col -> B, each link one memory latency that nothing
// overlaps, and drains its B loads every kGroup blocks.  Here:
//   * every warp walks all blocks of the item for its own WARP_N columns, one block a step,
//     and streams the block's B pieces (8 rows of its columns) through a ring of S slots in
//     shared memory, cp.async S - 1 steps ahead of the step that reads them, across stage
//     boundaries: the stream drains only at the end of the item.  The copies are coalesced
//     (a quarter warp copies 128 contiguous bytes of one row) and land where the lane whose
//     fragment they are reads them (piece_offset); one __syncwarp a step publishes them;
//   * the A side runs as a software pipeline over stages, one barrier a stage: stage m + 3's
//     blk_col / blk_off are copied (cp.async) into one of 4 metadata slots, stage m + 2's
//     val_idx / blk_pos and stage m + 1's values are loaded into registers (kPipeNz nonzeros
//     a thread) while stage m is multiplied, and stage m + 1 is scattered into the next of
//     3 A tile buffers after it (the third is zeroed meanwhile, so zeroing and scattering
//     need no barrier of their own).  Nonzeros beyond kPipeNz a thread (stages denser than
//     kPipeNz * threads nonzeros) are loaded when scattered, as the other kernel does;
//   * A tiles are kept in fragment order (lane-major), so a lane reads its A fragment with
//     one 16-byte (FP32) or 8-byte (16-bit: already packed pairs) shared load.
// One work item's prologue still waits on the chain once (metadata, then indices, then
// values); items are short, so other resident blocks are what hides it.
#pragma once
#include "cp_async.cuh"
#include "spmm_kernel_cta.cuh"

namespace tc {
namespace spmm {

// Ring slots a warp, S: S - 1 blocks of B in flight.  The default for 3xTF32 and 16-bit
// types; plain TF32 takes 3 (kPipeStagesTf32: a smaller ring lets 8 thread blocks share an
// SM).  The launcher also has 6 and 8, and either default for any type
// (TCSPARSE_X_SPMM_PIPE_STAGES).
constexpr int kPipeStages = 4;
constexpr int kPipeStagesTf32 = 3;
template <class P>
constexpr int default_stages() { return !P::kHalf && !P::kSplit ? kPipeStagesTf32 : kPipeStages; }
constexpr int kPipeNz = 4;      // nonzeros a thread per stage whose loads run a stage ahead
constexpr int kMetaSlots = 4;   // stages m .. m + 3 of blk_col / blk_off
constexpr int kTileBufs = 3;    // A tiles: multiplied, being scattered, being zeroed
constexpr int kMetaInts = (kStage * kBlkCols + kStage + 1 + 3) / 4 * 4;
constexpr int kMetaOff = kStage * kBlkCols; // offsets after the columns in a metadata slot

static_assert(kPipeStages >= 2 && kPipeStages <= kStage && kPipeStagesTf32 >= 2,
              "a ring issues at most one stage ahead: the metadata pipeline counts on it");
static_assert(kPipeNz <= 4, "a thread's prefetched positions are packed in one word");

// Element of the staged A tiles: FP32 for TF32 (split at read time), the input type for 16-bit
// products (exact: the other kernel's float round trip is the identity on them).
template <class P>
using TileT = typename std::conditional<P::kHalf, typename P::T, float>::type;

// A value as staged in a tile: plain TF32 products are rounded here, once per nonzero, rather
// than by every warp at every read (mma_block takes them as they are); the same rounding
// (cvt.rna) at another place, so the same products.
template <class P>
__device__ __forceinline__ TileT<P> tile_value(typename P::T v)
{
    if constexpr (!P::kHalf && !P::kSplit)
        return __uint_as_float(tf32_bits(v));
    else
        return static_cast<TileT<P>>(v);
}

// R: 16-row MMA tiles a block holds (1: the 16-row windows of ME-TCF; 2: 32-row windows, whose
// blocks are two tiles over the same 8 rows of B, blk_pos = row * 8 + col still one byte).
template <class P, int J, int R = 1>
struct PipeShape {
    static constexpr int kVec = Shape<P, J>::kRowBytes / 16; // 16-byte pieces of a lane's row
    static constexpr int kRowStride = kVec * 32 * 16;        // one B row's pieces, all lanes
    static constexpr int kSlotBytes = 2 * kRowStride;        // one block of B for one warp
    static constexpr int kTileElems = R * kWinRows * kBlkCols; // one block's A tile(s)
    static constexpr int kTileBytes = kTileElems * (int)sizeof(TileT<P>);
    static constexpr int kTileStageBytes = kStage * kTileBytes;
};

// Dynamic shared memory: the warps' rings, the A tile buffers, the metadata slots.
template <class P, int J, int R = 1>
constexpr int pipe_smem_bytes(int warps, int S)
{
    using PS = PipeShape<P, J, R>;
    return warps * S * PS::kSlotBytes + kTileBufs * PS::kTileStageBytes +
           kMetaSlots * kMetaInts * 4;
}
constexpr int kPipeSmemLimit = 48 * 1024; // above: the opt-in attribute would be needed
static_assert(pipe_smem_bytes<Tf32, 8>(kMaxCtaWarps, kPipeStages) <= kPipeSmemLimit &&
                  pipe_smem_bytes<F16, 8>(kMaxCtaWarps, kPipeStages) <= kPipeSmemLimit,
              "pipelined SpMM: the ring must fit without the shared-memory opt-in");

// Thread blocks (of 4 warps) per SM asked of ptxas, where the shared memory allows as many
// and nothing spills (sm_90): TF32 J = 4 8 (<= 64 registers; 25.9 KB of shared memory each
// with its 3-slot ring), 3xTF32 J = 4 6 (<= 80; 29.9 KB with its 4-slot ring; 7 would spill),
// 16-bit J = 8 5 (<= 102; the balanced ones would take 114 and fit 4).  J = 8 FP32 (a tuning
// knob) asks nothing.
template <class P, int J>
struct PipeMinBlocks {
    static constexpr int value = J == 4 ? (P::kSplit ? 6 : 8) : P::kHalf ? 5 : 0;
};

// ---- metadata and A tiles ------------------------------------------------------------------

__device__ __forceinline__ int stage_blocks(int nb, int m)
{
    const int left = nb - m * kStage;
    return left < kStage ? left : kStage;
}

// blk_col and blk_off of the nbs blocks from block bs into a metadata slot (not waited for
// here).  Word by word: no alignment is assumed of the plan's arrays.
__device__ __forceinline__ void stage_meta_async(int32_t *slot, const SpmmParams &p, int32_t bs,
                                                 int nbs)
{
    const int ncol = nbs * kBlkCols;
    for (int i = threadIdx.x; i < ncol + nbs + 1; i += blockDim.x) {
        if (i < ncol)
            cp_async4(slot + i, p.blk_col + (int64_t)bs * kBlkCols + i);
        else
            cp_async4(slot + kMetaOff + (i - ncol), p.blk_off + bs + (i - ncol));
    }
}

// A stage's tile buffer to zeros, by the whole thread block.
__device__ __forceinline__ void zero_tiles(char *buf, int bytes)
{
    for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x)
        zero16(buf + i * 16);
}

// Index in a fragment-ordered tile of position pos = row * 8 + col of the 16x8 block: lane
// (g, t) keeps its four A fragment elements together, in the order the mma takes them
// (TF32: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); 16-bit: (g, 2t), (g, 2t + 1),
// (g + 8, 2t), (g + 8, 2t + 1), i.e. the two packed registers).
template <class P>
__device__ __forceinline__ int frag_index16(int pos)
{
    const int r = pos >> 3, c = pos & 7;
    const int g = r & 7, hi = r >> 3;
    if constexpr (P::kHalf)
        return ((g * 4 + (c >> 1)) << 2) + 2 * hi + (c & 1);
    else
        return ((g * 4 + (c & 3)) << 2) + hi + 2 * (c >> 2);
}

// The same for a block of R tiles: rows 16h .. 16h + 15 are tile h, kept after tile h - 1.
template <class P, int R>
__device__ __forceinline__ int frag_index(int pos)
{
    if constexpr (R == 1)
        return frag_index16<P>(pos);
    else
        return (pos >> 7) * (kWinRows * kBlkCols) + frag_index16<P>(pos & 127);
}

// The thread's first kPipeNz nonzeros of a stage: value index (-1: none) and position.
struct NzBatch {
    int32_t idx[kPipeNz];
    uint32_t pos; // kPipeNz bytes
};

__device__ __forceinline__ void load_nz(NzBatch &z, const SpmmParams &p, const int32_t *meta,
                                        int nbs)
{
    const int32_t e0 = meta[kMetaOff], e1 = meta[kMetaOff + nbs];
    z.pos = 0;
#pragma unroll
    for (int r = 0; r < kPipeNz; ++r) {
        const int32_t e = e0 + (int32_t)threadIdx.x + r * (int32_t)blockDim.x;
        z.idx[r] = -1;
        if (e < e1) {
            z.idx[r] = __ldg(&p.val_idx[e]);
            z.pos |= (uint32_t)__ldg(&p.blk_pos[e]) << (8 * r);
        }
    }
}

template <class T>
__device__ __forceinline__ void load_vals(T (&v)[kPipeNz], const SpmmParams &p, const NzBatch &z)
{
#pragma unroll
    for (int r = 0; r < kPipeNz; ++r)
        v[r] = z.idx[r] >= 0 ? static_cast<const T *>(p.a_val)[z.idx[r]] : from_f<T>(0.0f);
}

// Staged block holding nonzero e: the last k with off[k] <= e (empty blocks skipped).
__device__ __forceinline__ int block_of(const int32_t *off, int nbs, int32_t e)
{
    int k = 0;
#pragma unroll
    for (int step = kStage / 2; step > 0; step /= 2)
        if (k + step < nbs && off[k + step] <= e)
            k += step;
    return k;
}

// A stage's nonzeros into its (zeroed) tile buffer: the prefetched ones from registers, the
// rest loaded here.
template <class P, int R>
__device__ __forceinline__ void scatter(TileT<P> *tiles, const SpmmParams &p,
                                        const int32_t *meta, int nbs, const NzBatch &z,
                                        const typename P::T (&v)[kPipeNz])
{
    using T = typename P::T;
    const int32_t *off = meta + kMetaOff;
    const int32_t e0 = off[0], e1 = off[nbs];
    const int32_t nt = (int32_t)blockDim.x;
#pragma unroll
    for (int r = 0; r < kPipeNz; ++r) {
        if (z.idx[r] >= 0) {
            const int32_t e = e0 + (int32_t)threadIdx.x + r * nt;
            const int pos = (int)((z.pos >> (8 * r)) & 0xffu);
            tiles[block_of(off, nbs, e) * (R * kWinRows * kBlkCols) + frag_index<P, R>(pos)] =
                tile_value<P>(v[r]);
        }
    }
    for (int32_t e = e0 + (int32_t)threadIdx.x + kPipeNz * nt; e < e1; e += nt) {
        const T val = static_cast<const T *>(p.a_val)[__ldg(&p.val_idx[e])];
        tiles[block_of(off, nbs, e) * (R * kWinRows * kBlkCols) +
              frag_index<P, R>(__ldg(&p.blk_pos[e]))] =
            tile_value<P>(val);
    }
}

// ---- the ring of B pieces ------------------------------------------------------------------

// A block's B pieces in a ring slot.  A warp needs, per block, the 8 B rows of the block's
// columns times its WARP_N columns: 8 rows of 8 * kVec 16-byte pieces.  The mma fragment
// wants lane (g, t) to hold J elements (kVec pieces) of two rows (TF32: t and t + 4; 16-bit:
// 2t and 2t + 1), so a quarter of a warp reading its own fragment from global memory would
// touch four rows, 32 bytes of each, and the L1 would serve every sector on its own (the
// H100 profile: 14 data-pipe wavefronts a request, the kernel bound by the L1).  Instead the
// copies are coalesced: a quarter q of the warp copies 128 contiguous bytes of one row (block
// row 4c + q in copy c, pieces 8v .. 8v + 7 of it), each piece to the place its consumer
// reads, and the consumer reads its pieces after a __syncwarp.
//
// Consumer lane l = 4g + t keeps piece v of its row h (0: k0, 1: k1) at
//   h * kRowStride + v * 512 + 16 * (8 * (g >> 1) + ((g + 2t + 4v) & 7)),
// a swizzle under which both the consumers' reads (a quarter: two g, four t) and the
// producers' writes (a quarter: eight consecutive pieces of one row, so eight g at one t, or
// four g and both v when kVec = 2) fall on eight distinct 16-byte bank groups.
__device__ __forceinline__ int piece_offset(int g, int t, int v)
{
    return v * 512 + 16 * (8 * (g >> 1) + ((g + 2 * t + 4 * v) & 7));
}

// What a lane copies of every block, fixed for the work item: the place of each of its
// pieces in a slot (copy c, vector v), its first column and how many bytes of each piece lie
// inside N (16, a tail's count, or 0 past N).  Computed once, so that a step's copies are a
// shared load of the row index and one cp.async per piece.
template <class P, int J>
struct RingLane {
    static constexpr int kVec = PipeShape<P, J>::kVec;
    int dst[2][kVec];
    int nbytes[kVec];
    const char *src; // B + the lane's first column (bytes; row 0)
    int q;

    __device__ __forceinline__ RingLane(const SpmmParams &p, int64_t n0, int lane)
    {
        using T = typename P::T;
        constexpr int E = 16 / (int)sizeof(T);
        const int i = lane & 7;
        q = lane >> 3;
        const int64_t col = n0 + (int64_t)i * E;
        src = reinterpret_cast<const char *>(static_cast<const T *>(p.B) + col);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int r = 4 * c + q;                   // block row (condensed column)
            const int t = P::kHalf ? r >> 1 : r & 3;   // its consumers' t
            const int h = P::kHalf ? r & 1 : r >> 2;   // and which of their two rows
#pragma unroll
            for (int v = 0; v < kVec; ++v) {
                const int pc = v * 8 + i;              // piece of the warp's row segment
                dst[c][v] = h * PipeShape<P, J>::kRowStride +
                            piece_offset(pc / kVec, t, pc % kVec);
                // kept in a register: recomputing it from the thread index at every step
                // (what the compiler otherwise does under the register cap) costs more
                // instructions than the copies themselves
                asm volatile("" : "+r"(dst[c][v]));
            }
        }
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
            const int64_t left = p.N - (col + (int64_t)v * 8 * E);
            nbytes[v] = left <= 0 ? 0 : left >= E ? 16 : (int)left * (int)sizeof(T);
            asm volatile("" : "+r"(nbytes[v]));
        }
        asm volatile("" : "+l"(src));
        asm volatile("" : "+r"(q));
    }
};

// The issuing end of a warp's stream: the next block (step) whose pieces are copied, its
// place in its stage and the stage's metadata slot, and the ring slot it goes to.
struct Issuer {
    int step, k, mslot, slot;
};

// Copies the lane's share of the issuer's block (coalesced, see piece_offset), if the item
// has one left, and moves on.  The block's columns come from its stage's metadata slot: at
// most one stage ahead of the stage being multiplied (S <= kStage), whose slot is complete
// and visible.  Aligned B: one cp.async per piece, zero-filled past N and for padding
// columns; unaligned B (base or ldb not on 16 bytes): scalar loads stored synchronously (the
// slot discipline is the same: consumers read after the warp's barrier).
template <class P, int J, int S>
__device__ __forceinline__ void issue(Issuer &is, char *ring, const int32_t *meta,
                                      const SpmmParams &p, int nb, const RingLane<P, J> &rl)
{
    using T = typename P::T;
    using PS = PipeShape<P, J>;
    constexpr int E = 16 / (int)sizeof(T), kVec = PS::kVec;
    if (is.step < nb) {
        const int32_t *cols = meta + is.mslot * kMetaInts + is.k * kBlkCols + rl.q;
        char *slot = ring + is.slot * PS::kSlotBytes;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int32_t row = cols[4 * c];
            const char *src = rl.src + (int64_t)(row < 0 ? 0 : row) * p.ldb * (int64_t)sizeof(T);
#pragma unroll
            for (int v = 0; v < kVec; ++v) {
                char *dst = slot + rl.dst[c][v];
                const int n = row < 0 ? 0 : rl.nbytes[v];
                const char *sv = src + v * 128;
                if (p.b_vec) {
                    cp_async16(dst, n > 0 ? static_cast<const void *>(sv) : &kCpAsyncZeros, n);
                } else {
                    T tmp[E];
#pragma unroll
                    for (int x = 0; x < E; ++x)
                        tmp[x] = (int)sizeof(T) * x < n ? reinterpret_cast<const T *>(sv)[x]
                                                        : from_f<T>(0.0f);
                    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(tmp);
                }
            }
        }
        ++is.step;
        if (++is.k == kStage) {
            is.k = 0;
            is.mslot = is.mslot + 1 == kMetaSlots ? 0 : is.mslot + 1;
        }
    }
    is.slot = is.slot + 1 == S ? 0 : is.slot + 1;
}

// The lane's pieces of one of its B rows from a slot, in load_b's element order.
template <class T, int J>
__device__ __forceinline__ void read_row(T (&dst)[J], const char *src, int g, int t)
{
    constexpr int E = 16 / (int)sizeof(T), kVec = J / E;
#pragma unroll
    for (int v = 0; v < kVec; ++v)
        *reinterpret_cast<uint4 *>(&dst[v * E]) =
            *reinterpret_cast<const uint4 *>(src + piece_offset(g, t, v));
}

// The lane's A fragment of one block, from its fragment-ordered tile: 16-bit types two packed
// registers, FP32 four words (plain TF32: TF32 values already, see tile_value).
struct AFrag {
    uint32_t w[4];
};

template <class P>
__device__ __forceinline__ AFrag load_frag(const TileT<P> *tile, int lane)
{
    AFrag a;
    if constexpr (P::kHalf) {
        const uint2 u = reinterpret_cast<const uint2 *>(tile)[lane];
        a.w[0] = u.x, a.w[1] = u.y, a.w[2] = a.w[3] = 0u;
    } else {
        const uint4 u = reinterpret_cast<const uint4 *>(tile)[lane];
        a.w[0] = u.x, a.w[1] = u.y, a.w[2] = u.z, a.w[3] = u.w;
    }
    return a;
}

// One block's products: the same products, in the same order, as block_mma (plain TF32: A
// rounded when staged).
template <class P, int J>
__device__ __forceinline__ void mma_block(float (&acc)[J][4], const AFrag &a,
                                          const typename P::T (&b0)[J],
                                          const typename P::T (&b1)[J])
{
    using T = typename P::T;
    if constexpr (P::kHalf) {
        const uint32_t af[2] = {a.w[0], a.w[1]};
#pragma unroll
        for (int j = 0; j < J; ++j)
            mma_16<T>(acc[j], af, pack2raw<T>(b0[j], b1[j]));
    } else if constexpr (!P::kSplit) {
#pragma unroll
        for (int j = 0; j < J; ++j)
            mma_tf32(acc[j], a.w, tf32_bits(b0[j]), tf32_bits(b1[j]));
    } else {
        const float f[4] = {__uint_as_float(a.w[0]), __uint_as_float(a.w[1]),
                            __uint_as_float(a.w[2]), __uint_as_float(a.w[3])};
        block_mma<P, J>(acc, f, b0, b1);
    }
}

// ---- the kernel ----------------------------------------------------------------------------

// Dynamic shared memory: pipe_smem_bytes<P, J, R>(warps, S) (the 48 KB check above is for R = 1;
// R = 2 fits it for FP32 J = 4 with up to 4 ring slots, not for J = 8).
// kWideL1: the same kernel as a separate instance, whose launcher asks for a smaller shared
// memory carveout (more L1, fewer resident thread blocks; spmm_launch.cu, wide_l1).  A
// function attribute holds for every launch of an instance, hence the second instance.
template <class P, class CT, int J, bool kBalanced, int S, int R = 1, bool kWideL1 = false>
__global__ void __launch_bounds__(kMaxCtaWarps * 32, R == 1 ? PipeMinBlocks<P, J>::value : 0)
    spmm_pipe_kernel(const SpmmParams p)
{
    static_assert(S >= 2 && S <= kStage, "ring depth out of range (see kPipeStages)");
    static_assert(R == 1 || R == 2, "a block holds one or two 16-row tiles");
    using T = typename P::T;
    using PS = PipeShape<P, J, R>;
    using S_ = Shape<P, J>;
    extern __shared__ __align__(16) char smem[];
    if (guard_stops(p))
        return;
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const int lane = tid & 31, warp = tid >> 5, nwarps = nthreads >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int64_t n0 = ((int64_t)blockIdx.y * nwarps + warp) * S_::kWarpN;
    char *ring = smem + warp * (S * PS::kSlotBytes);
    char *tbase = smem + nwarps * (S * PS::kSlotBytes);
    int32_t *meta = reinterpret_cast<int32_t *>(tbase + kTileBufs * PS::kTileStageBytes);
    auto tiles = [&](int m) { // tile buffer of stage m
        return reinterpret_cast<TileT<P> *>(tbase + (m % kTileBufs) * PS::kTileStageBytes);
    };
    auto meta_of = [&](int m) { return meta + (m % kMetaSlots) * kMetaInts; };

    int32_t win, b, b_end;
    bool atomic;
    work_item<kBalanced>(p, win, b, b_end, atomic);
    const int nb = b_end - b;

    float acc[R][J][4];
#pragma unroll
    for (int h = 0; h < R; ++h)
        zero_acc(acc[h]);
    // 3xTF32: the other kernel's flush of the tensor-core accumulators into a round-to-nearest
    // FP32 sum after every stage of kStage blocks (see there), at the same block boundaries.
    constexpr bool kFlushes = P::kSplit;
    float total[R][kFlushes ? J : 1][4];
    if constexpr (kFlushes)
#pragma unroll
        for (int h = 0; h < R; ++h)
            zero_acc(total[h]);

    if (nb > 0) { // uniform over the thread block: every barrier below is reached by all
        const int nstages = (nb + kStage - 1) / kStage;

        // Prologue: metadata of stages 0..2 (waited for: the one exposed latency of the
        // chain), the ring's first S - 1 blocks, and stage 0's tile.
        zero_tiles(reinterpret_cast<char *>(tiles(0)), PS::kTileStageBytes);
        zero_tiles(reinterpret_cast<char *>(tiles(1)), PS::kTileStageBytes);
        for (int m = 0; m < 3 && m < nstages; ++m)
            stage_meta_async(meta_of(m), p, b + m * kStage, stage_blocks(nb, m));
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads(); // metadata visible, tiles 0 and 1 zeroed
        NzBatch za, zb;
        load_nz(za, p, meta_of(0), stage_blocks(nb, 0));
        Issuer is{0, 0, 0, 0};
        const RingLane<P, J> rl(p, n0, lane);
#pragma unroll
        for (int s = 0; s < S - 1; ++s) {
            issue<P, J, S>(is, ring, meta, p, nb, rl);
            cp_async_commit();
        }
        T v[kPipeNz];
        load_vals<T>(v, p, za);
        if (nstages > 1)
            load_nz(zb, p, meta_of(1), stage_blocks(nb, 1));
        else
            zb = za; // unused
        scatter<P, R>(tiles(0), p, meta_of(0), stage_blocks(nb, 0), za, v);
        za = zb;

        int rslot = 0;
        for (int m = 0; m < nstages; ++m) {
            const int nbs = stage_blocks(nb, m);
            // Stage m's tile is complete; stage m - 1's tiles and metadata are no longer
            // read (their buffers are reused below); stage m + 2's metadata is visible
            // (its copies were waited for by their threads during stage m - 1).
            __syncthreads();
            if (m + 2 < nstages)
                zero_tiles(reinterpret_cast<char *>(tiles(m + 2)), PS::kTileStageBytes);
            if (m + 1 < nstages)
                load_vals<T>(v, p, za);
            if (m + 2 < nstages)
                load_nz(zb, p, meta_of(m + 2), stage_blocks(nb, m + 2));
            // Joins the group of this stage's first step, waited for at step S - 1 <
            // kStage of this (then whole) stage: visible after the next stage's barrier,
            // a stage before load_nz needs it.
            if (m + 3 < nstages)
                stage_meta_async(meta_of(m + 3), p, b + (m + 3) * kStage,
                                 stage_blocks(nb, m + 3));
            const TileT<P> *tm = tiles(m);
            for (int k = 0; k < nbs; ++k) {
                // One group a step (empty once the item has no block left to copy), so
                // "all but the newest S - 2" is this step's block.  The warp's barrier makes
                // every lane's pieces of it visible, and orders the previous step's reads of
                // the slot the issue below overwrites (S - 1 blocks ahead) before the copies.
                cp_async_wait<S - 2>();
                __syncwarp();
                // the shared loads first: their latency hides under the copies' issue
                const char *cur = ring + rslot * PS::kSlotBytes;
                T b0[J], b1[J];
                read_row<T, J>(b0, cur, g, t);
                read_row<T, J>(b1, cur + PS::kRowStride, g, t);
                AFrag a[R];
#pragma unroll
                for (int h = 0; h < R; ++h)
                    a[h] = load_frag<P>(tm + k * PS::kTileElems + h * (kWinRows * kBlkCols), lane);
                issue<P, J, S>(is, ring, meta, p, nb, rl);
                cp_async_commit();
#pragma unroll
                for (int h = 0; h < R; ++h)
                    mma_block<P, J>(acc[h], a[h], b0, b1);
                rslot = rslot + 1 == S ? 0 : rslot + 1;
            }
            if constexpr (kFlushes)
#pragma unroll
                for (int h = 0; h < R; ++h)
                    flush_acc(total[h], acc[h]);
            if (m + 1 < nstages) // into the buffer zeroed during stage m - 1 (or the prologue)
                scatter<P, R>(tiles(m + 1), p, meta_of(m + 1), stage_blocks(nb, m + 1), za, v);
            za = zb;
        }
    }
    // tile h of window win is the 16-row window R * win + h
#pragma unroll
    for (int h = 0; h < R; ++h)
        store_window<CT, J, kFlushes>(p, acc[h], total[h], R * win + h, n0, g, t, atomic);
}
} // namespace spmm
} // namespace tc
