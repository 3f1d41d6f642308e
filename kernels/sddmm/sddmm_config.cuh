// Tile shapes of the tensor-core SDDMM.
//
// One 16x8 ME-TCF block of C is the output tile A[16 window rows, :] * B[:, 8 block columns],
// accumulated over K in chunks of kChunkBytes bytes of an A row / a B column (32 FP32 or 64
// FP16 elements).  The k order inside a chunk is permuted (the same way for A and B, so the
// dot products are unchanged): lane (g = lane/4, t = lane%4) owns the kLaneBytes = 32 bytes
// at t*32 of the chunk, i.e. 8 words, and MMA i of the chunk takes its words 2i and 2i+1.
// For m16n8k8 TF32 a word is one k slot (t, then t+4); for m16n8k16 FP16 a word is a pair of
// k slots (2t..2t+1, then 2t+8..2t+9).  Either way every lane loads A and B with 16-byte
// vectors and the A fragment registers are {row g word 2i, row g+8 word 2i, row g word 2i+1,
// row g+8 word 2i+1}, the B fragment {word 2i, word 2i+1}.
#pragma once
#include "spmm/spmm_config.cuh"

namespace tc {
namespace sddmm {

constexpr int kWarps = 4;           // warps per thread block
constexpr int kBlocksPerWarp = 2;   // blocks a warp multiplies at once (one A fragment, NB B loads)
constexpr int kLaneBytes = 32;      // bytes of one A row / B column one lane holds per chunk
constexpr int kLaneWords = kLaneBytes / 4;
constexpr int kChunkBytes = 4 * kLaneBytes; // the four lanes of a group cover one chunk
constexpr int kMmasPerChunk = kLaneWords / 2;
constexpr int kTileChunks = 8;      // A is staged 16 rows x up to 8 chunks (1 KB a row) at a time
constexpr int kRowPad = 16;         // bytes after each staged A row (bank skew, see below)
constexpr int kGroup = kWarps * kBlocksPerWarp; // blocks of one work item in flight at once
constexpr int kThreads = kWarps * 32;

static_assert(kLaneWords == 2 * kMmasPerChunk && kMmasPerChunk == 4,
              "a lane's 8 words feed 4 MMAs, two words (k slots or k slot pairs) each");
static_assert(kLaneBytes % 16 == 0, "lane pieces are whole 16-byte vectors");
// Lanes 4g..4g+3 read row g at t*32 bytes with 16-byte loads: a row stride of 16 (mod 128)
// bytes puts rows g and g+1 four banks apart, so each quarter-warp phase is conflict free.
static_assert(kChunkBytes % 128 == 0 && kRowPad == 16, "staged A rows: stride 16 mod 128 bytes");
static_assert(kWinRows == 16 && kBlkCols == 8, "m16n8 tiles are ME-TCF blocks");

template <class T>
constexpr int chunk_elems() { return kChunkBytes / (int)sizeof(T); }

// Resident thread blocks per SM asked of ptxas: 5 (20 warps, <= 96 registers) costs TF32 and
// FP16 no spill; 3xTF32 (A's correction registers too) would spill there and keeps 4 (<= 128).
template <class P>
constexpr int min_blocks_per_sm() { return P::kSplit ? 4 : 5; }

// ---- the pipelined variant (sddmm_kernel_pipe.cuh) ---------------------------------------
//
// Each warp streams its own blocks through a ring of S slots in shared memory, filled by
// cp.async S - 1 steps ahead (S = kPipeStages unless TCSPARSE_X_SDDMM_PIPE_STAGES says 2 or 4).
// A step is one chunk of K for the kPipeBlocks blocks the warp multiplies at once; lane
// (g, t) copies, and later reads back, exactly its own 32 bytes of each block's column g (the
// fragment it needs), so a slot is private to its lane and the ring needs no barrier at all.
// A slot keeps the lane's pieces as kPipeVecs rows of 32 lanes x 16 bytes: every
// quarter-warp touches 128 consecutive bytes, conflict free for the cp.async writes and the
// 16-byte reads alike.
constexpr int kPipeStages = 3;      // ring depth: steps in flight per warp = S - 1
constexpr int kPipeMaxStages = 4;
constexpr int kPipeBlocks = kBlocksPerWarp;
constexpr int kPipeVecs = kPipeBlocks * kLaneBytes / 16; // 16-byte pieces per lane per step
constexpr int kPipeSlotBytes = kPipeVecs * 32 * 16;
constexpr int kPipeMaxChunks = 8;   // A's whole K is staged once per work item: up to 1 KB a row
constexpr int kPipePrefetch = 2;    // nonzeros per lane whose (val_idx, blk_pos) are prefetched
constexpr int kTileBytes = kWinRows * kBlkCols * 4;

// Dynamic shared memory of the pipelined kernel with an S-slot ring for nk chunks of K: the
// warps' rings, their 16x8 output tiles, and the window's 16 rows of A.
constexpr int pipe_smem_bytes(int nk, int S)
{
    return kWarps * S * kPipeSlotBytes + kWarps * kPipeBlocks * kTileBytes +
           kWinRows * (nk * kChunkBytes + kRowPad);
}

// Above this the kernel would need the opt-in attribute: the launcher keeps under it (a
// 4-slot ring falls back to 3 slots past 5 chunks of K).
constexpr int kPipeSmemLimit = 48 * 1024;

static_assert(kPipeStages >= 2 && kPipeStages <= kPipeMaxStages, "ring: 2 to 4 slots");
static_assert(kThreads == kWinRows * 8, "A staging: 8 threads (128 bytes) per window row");
// The default ring fits every staged K: 4-6 thread blocks an SM (smem at K = 256/128/32
// FP32: 44.3/36.3/30.3 KB).
static_assert(pipe_smem_bytes(kPipeMaxChunks, kPipeStages) <= kPipeSmemLimit,
              "pipelined SDDMM: the default ring must fit every staged K");

// Resident thread blocks per SM asked of ptxas: 6 (<= 80 registers; shared memory allows 6 up
// to K = 128 FP32) for TF32 and FP16, no spill; 3xTF32 keeps 5 (<= 96; it would also fit 6
// without spills, a change not measured yet).
template <class P>
constexpr int pipe_min_blocks_per_sm() { return P::kSplit ? 5 : 6; }

} // namespace sddmm
} // namespace tc
