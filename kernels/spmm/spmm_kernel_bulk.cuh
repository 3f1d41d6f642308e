// Tensor-core SpMM with B copied by the bulk copy engine (sm_90): the pipelined kernel of
// spmm_kernel_pipe.cuh with its B ring replaced, FP32 data (TF32 and 3xTF32), J = 4.
//
// The pipelined kernel's lanes copy B themselves: per block and warp a shared load of the
// row index and a 16-byte cp.async per lane and row pair, plus their bookkeeping, about 45 of
// its 160 instructions a block, and the copies go through the L1's data pipe, where the H100
// profile found it bound (docs/performance.md, "Eighth session").  Here the thread block
// shares one ring of S slots; a slot holds one block's 8 B rows, each the block's whole
// column slice (warps * 32 columns), and is filled by 8 bulk copies (cp.async.bulk, one a
// row) that complete on the slot's "full" mbarrier.  Lanes 0-7 of warp 0 issue them, S - 1
// blocks ahead of the block being multiplied, once every warp has released the slot
// ("empty" mbarrier: one arrival a warp, after its reads).  Everything else (A tiles,
// metadata pipeline, products, 3xTF32 flushes, epilogue) is the pipelined kernel's, so the
// products are the same, in the same order, bit for bit.
//
// A slot's rows are kBulkPitch bytes apart: 32 bytes more than the widest slice, so that a
// quarter warp's fragment reads (rows t = 0..3, 16 bytes at 16 * g for g = 0, 1) fall on
// eight distinct 16-byte bank groups (row r starts at group 2r mod 8).
//
// What it needs (bulk_eligible in the launcher): a device of compute capability 9.0 or
// more, B 16-byte aligned with ldb a multiple of 4 (rows on 16 bytes) and N a multiple of 4
// (a copy is a whole number of 16-byte units).  Columns of the slice past N are not copied;
// what the slot holds there only reaches output columns past N, which are not stored.
// Padding columns of a block (blk_col -1) are copied from a buffer of zeros, never from B.
#pragma once
#include "spmm_kernel_pipe.cuh"

namespace tc {
namespace spmm {

constexpr int kBulkStages = 4;                                // default ring depth
constexpr int kBulkJ = 4;                                     // FP32 only: 32 columns a warp
constexpr int kBulkWidthBytes = kMaxCtaWarps * 8 * kBulkJ * 4; // widest slice: 512 bytes
constexpr int kBulkPitch = kBulkWidthBytes + 32;
constexpr int kBulkSlotBytes = kBlkCols * kBulkPitch;
static_assert(kBulkPitch % 128 == 32, "the fragment reads' bank groups count on this pitch");

// Source of padding rows: as wide as the widest slice.
__device__ __align__(128) const float kBulkZeros[kBulkWidthBytes / 4] = {};

template <class P>
constexpr int bulk_smem_bytes(int S)
{
    using PS = PipeShape<P, kBulkJ>;
    return S * kBulkSlotBytes + kTileBufs * PS::kTileStageBytes + kMetaSlots * kMetaInts * 4 +
           2 * S * 8;
}
static_assert(bulk_smem_bytes<Tf32x3>(8) <= kPipeSmemLimit,
              "bulk SpMM: the ring must fit without the shared-memory opt-in");

// ---- mbarrier and bulk copy (PTX ISA 8.0+, sm_90) ------------------------------------------

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
                 : "memory");
}

// The barriers' initialisation visible to the copy engine (the async proxy) and, after the
// thread block's barrier that follows, to every thread.
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_arrive_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

// Until the barrier's phase of the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    const uint32_t a = smem_addr(bar);
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}

__device__ __forceinline__ void bulk_copy(void *dst, const void *src, uint32_t bytes,
                                          uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}

// ---- the kernel ----------------------------------------------------------------------------

// Dynamic shared memory: bulk_smem_bytes<P>(S).  Launched on sm_90 and later only.
template <class P, class CT, bool kBalanced, int S>
__global__ void __launch_bounds__(kMaxCtaWarps * 32, PipeMinBlocks<P, kBulkJ>::value)
    spmm_bulk_kernel(const SpmmParams p)
{
    static_assert(!P::kHalf, "bulk SpMM: FP32 data only");
    static_assert(S >= 2 && S <= kStage, "ring depth out of range: the metadata pipeline "
                                         "serves at most one stage ahead");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap(); // the launcher never picks this kernel below compute capability 9.0
#else
    constexpr int J = kBulkJ;
    using T = typename P::T;
    using PS = PipeShape<P, J>;
    extern __shared__ __align__(16) char smem[];
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const int lane = tid & 31, warp = tid >> 5, nwarps = nthreads >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int64_t slice0 = (int64_t)blockIdx.y * nwarps * (8 * J); // the block's first column
    const int64_t n0 = slice0 + (int64_t)warp * (8 * J);
    char *ring = smem;
    char *tbase = smem + S * kBulkSlotBytes;
    int32_t *meta = reinterpret_cast<int32_t *>(tbase + kTileBufs * PS::kTileStageBytes);
    uint64_t *full = reinterpret_cast<uint64_t *>(meta + kMetaSlots * kMetaInts);
    uint64_t *empty = full + S;
    auto tiles = [&](int m) {
        return reinterpret_cast<TileT<P> *>(tbase + (m % kTileBufs) * PS::kTileStageBytes);
    };
    auto meta_of = [&](int m) { return meta + (m % kMetaSlots) * kMetaInts; };

    int32_t win, b, b_end;
    bool atomic;
    work_item<kBalanced>(p, win, b, b_end, atomic);
    const int nb = b_end - b;

    float acc[J][4];
    zero_acc(acc);
    constexpr bool kFlushes = P::kSplit;
    float total[kFlushes ? J : 1][4];
    if constexpr (kFlushes)
        zero_acc(total);

    if (nb > 0) { // uniform over the thread block
        const int nstages = (nb + kStage - 1) / kStage;
        // Bytes of a row copy: the slice, cut at N (a multiple of 4 columns).
        const int64_t left = p.N - slice0;
        const uint32_t row_bytes =
            (uint32_t)(left < nwarps * 8 * J ? left : nwarps * 8 * J) * (uint32_t)sizeof(T);

        if (tid == 0) {
            for (int s = 0; s < S; ++s) {
                mbar_init(&full[s], 1);
                mbar_init(&empty[s], (uint32_t)nwarps);
            }
            mbar_init_fence();
        }
        zero_tiles(reinterpret_cast<char *>(tiles(0)), PS::kTileStageBytes);
        zero_tiles(reinterpret_cast<char *>(tiles(1)), PS::kTileStageBytes);
        for (int m = 0; m < 3 && m < nstages; ++m)
            stage_meta_async(meta_of(m), p, b + m * kStage, stage_blocks(nb, m));
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads(); // metadata visible, tiles 0 and 1 zeroed, barriers initialised

        // Producer (lanes 0-7 of warp 0): block `step` of the item into slot step % S, its
        // row lane of it.  Its columns are in the metadata slot of its stage, at most one
        // stage ahead of the stage being multiplied (S <= kStage): complete and visible.
        int pstep = 0;
        auto produce = [&]() {
            if (pstep < nb) {
                const int slot = pstep % S;
                if (pstep >= S) // the slot's previous block released by every warp
                    mbar_wait(&empty[slot], (uint32_t)((pstep / S - 1) & 1));
                if (lane == 0)
                    mbar_arrive_tx(&full[slot], kBlkCols * row_bytes);
                __syncwarp();
                if (lane < kBlkCols) {
                    const int32_t row =
                        meta_of(pstep / kStage)[(pstep % kStage) * kBlkCols + lane];
                    const void *src =
                        row < 0 ? static_cast<const void *>(kBulkZeros)
                                : static_cast<const void *>(static_cast<const T *>(p.B) +
                                                            (int64_t)row * p.ldb + slice0);
                    bulk_copy(ring + slot * kBulkSlotBytes + lane * kBulkPitch, src, row_bytes,
                              &full[slot]);
                }
                ++pstep;
            }
        };
        if (warp == 0)
            for (int s = 0; s < S - 1; ++s)
                produce();

        NzBatch za, zb;
        load_nz(za, p, meta_of(0), stage_blocks(nb, 0));
        T v[kPipeNz];
        load_vals<T>(v, p, za);
        if (nstages > 1)
            load_nz(zb, p, meta_of(1), stage_blocks(nb, 1));
        else
            zb = za; // unused
        scatter<P>(tiles(0), p, meta_of(0), stage_blocks(nb, 0), za, v);
        za = zb;

        // The lane's fragment rows in a slot: B rows t and t + 4 of the block, its 4
        // columns of the warp's 32 (fragment column g).
        const int rd = t * kBulkPitch + warp * (8 * J * 4) + g * 16;
        int rslot = 0;
        uint32_t rphase = 0;
        for (int m = 0; m < nstages; ++m) {
            const int nbs = stage_blocks(nb, m);
            // The thread's metadata copies of stage m + 2 (issued a stage ago) are complete;
            // after the barrier every thread's are visible.
            cp_async_wait<0>();
            __syncthreads();
            if (m + 2 < nstages)
                zero_tiles(reinterpret_cast<char *>(tiles(m + 2)), PS::kTileStageBytes);
            if (m + 1 < nstages)
                load_vals<T>(v, p, za);
            if (m + 2 < nstages)
                load_nz(zb, p, meta_of(m + 2), stage_blocks(nb, m + 2));
            if (m + 3 < nstages)
                stage_meta_async(meta_of(m + 3), p, b + (m + 3) * kStage,
                                 stage_blocks(nb, m + 3));
            cp_async_commit();
            const TileT<P> *tm = tiles(m);
            for (int k = 0; k < nbs; ++k) {
                mbar_wait(&full[rslot], rphase);
                const char *cur = ring + rslot * kBulkSlotBytes + rd;
                T b0[J], b1[J];
                *reinterpret_cast<uint4 *>(b0) = *reinterpret_cast<const uint4 *>(cur);
                *reinterpret_cast<uint4 *>(b1) =
                    *reinterpret_cast<const uint4 *>(cur + 4 * kBulkPitch);
                const AFrag a = load_frag<P>(tm + k * (kWinRows * kBlkCols), lane);
                __syncwarp();
                if (lane == 0)
                    mbar_arrive(&empty[rslot]);
                if (warp == 0)
                    produce();
                mma_block<P, J>(acc, a, b0, b1);
                if (++rslot == S) {
                    rslot = 0;
                    rphase ^= 1u;
                }
            }
            if constexpr (kFlushes)
                flush_acc(total, acc);
            if (m + 1 < nstages)
                scatter<P>(tiles(m + 1), p, meta_of(m + 1), stage_blocks(nb, m + 1), za, v);
            za = zb;
        }
    }
    store_window<CT, J, kFlushes>(p, acc, total, win, n0, g, t, atomic);
#endif
}

} // namespace spmm
} // namespace tc
