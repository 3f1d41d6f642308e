// Kernels of the GPU CSR/CSC/COO -> ME-TCF conversion.  Two ways to the same arrays:
// * the sorted path (any input): one thread per nonzero, per window or per chunk throughout
//   (no thread walks a whole window, so a dense row costs what its nonzeros cost).  One sort,
//   by (window, column, row-in-window), condenses the columns; each block's nonzeros are then
//   ordered by position with a 128-bit occupancy mask per block (a nonzero's slot is the
//   number of occupied positions before its own), not a second sort;
// * the window-local path (CSR in the caller's row order, at most kLocalMaxCols columns): one
//   thread block per window, no sort (window_local below).
// The statistics and the balanced schedule follow either.
#pragma once
#include <cstdint>
#include <climits>
#include <type_traits>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include "kernels.h"
#include "metcf_rules.h"

namespace tc {

enum : int { kBadOffsets = 1, kBadIndex = 2, kDuplicate = 4, kScheduleBound = 8 };

template <class I>
__device__ __forceinline__ int64_t ld_index(const void *p, int64_t i)
{
    return (int64_t)static_cast<const I *>(p)[i];
}

__device__ __forceinline__ int64_t ld_any(const void *p, int is64, int64_t i)
{
    return is64 ? ld_index<int64_t>(p, i) : ld_index<int32_t>(p, i);
}

// Last position r in [0, n) with off[r] <= e (offsets already shifted by base).
__device__ __forceinline__ int64_t upper_row(const void *off, int is64, int64_t n, int64_t e,
                                             int base)
{
    int64_t lo = 0, hi = n; // invariant: answer in [lo, hi)
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ld_any(off, is64, mid) - base <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Offset i (0 <= i <= dim) of a CSR/CSC array breaks the rules: the first is not the base, the
// last not nnz past it, one lies outside [0, nnz], or the next one is smaller.
__device__ __forceinline__ bool offset_bad(const void *off, int is64, int64_t i, int64_t dim,
                                           int64_t nnz, int base)
{
    const int64_t v = ld_any(off, is64, i) - base;
    return (i == 0 && v != 0) || (i == dim && v != nnz) || v < 0 || v > nnz ||
           (i < dim && ld_any(off, is64, i + 1) - base < v);
}

__global__ void check_offsets(const void *off, int is64, int64_t dim, int64_t nnz, int base,
                              int *flags)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= dim && offset_bad(off, is64, i, dim, nnz, base))
        atomicOr(flags, kBadOffsets);
}

// Key 1 = window << (cbits + 4) | col << 4 | row & 15; value = position in caller's arrays.
// With row_new (a permutation of the rows), row r is placed at row row_new[r]: the value is
// still the caller's position, so val_idx needs no remapping.
// Keys fit 32 bits when window and column bits together do (K = unsigned): half the bytes
// through the sort.
template <class K>
__global__ void make_keys(int fmt_csr, int fmt_csc, const void *off, int off64, const void *idx,
                          int idx64, int64_t rows, int64_t cols, int64_t nnz, int base, int cbits,
                          const int32_t *row_new, K *keys, int32_t *vals, int *flags)
{
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= nnz)
        return;
    int64_t r, c;
    if (fmt_csr) {
        r = upper_row(off, off64, rows, e, base);
        c = ld_any(idx, idx64, e) - base;
    } else if (fmt_csc) {
        c = upper_row(off, off64, cols, e, base);
        r = ld_any(idx, idx64, e) - base;
    } else {
        r = ld_any(off, off64, e) - base;
        c = ld_any(idx, idx64, e) - base;
    }
    if (r < 0 || r >= rows || c < 0 || c >= cols) {
        atomicOr(flags, kBadIndex);
        r = 0;
        c = 0;
    }
    if (row_new != nullptr)
        r = row_new[r];
    keys[e] = (K)(((unsigned long long)(r >> 4) << (cbits + 4)) | ((unsigned long long)c << 4) |
                  (unsigned long long)(r & 15));
    vals[e] = (int32_t)e;
}

__global__ void widen_keys(const unsigned *k32, int64_t nnz, unsigned long long *keys)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nnz)
        keys[i] = k32[i];
}

// head[i] = 1 where a new (window, column) starts; duplicates flagged.
__global__ void mark_heads(const unsigned long long *keys, int64_t nnz, int32_t *head,
                           int *flags)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz)
        return;
    unsigned long long k = keys[i];
    int h = 1;
    if (i > 0) {
        unsigned long long p = keys[i - 1];
        if (p == k)
            atomicOr(flags, kDuplicate);
        h = (p >> 4) != (k >> 4);
    }
    head[i] = h;
}

// Per window: number of blocks and the id of its first distinct column (dist is the
// inclusive scan of head, so ids start at 1).
__global__ void window_blocks(const unsigned long long *keys, const int32_t *dist, int64_t nnz,
                              int32_t windows, int shift, int32_t *nblk, int32_t *dfirst)
{
    int32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w > windows)
        return;
    if (w == windows) { // the extra slot makes the exclusive scan yield the total
        nblk[w] = 0;
        return;
    }
    unsigned long long lo_key = (unsigned long long)w << shift;
    int64_t lo = 0, hi = nnz; // first index with key >= lo_key
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < lo_key) lo = mid + 1; else hi = mid;
    }
    int64_t s = lo;
    unsigned long long hi_key = (unsigned long long)(w + 1) << shift;
    hi = nnz;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < hi_key) lo = mid + 1; else hi = mid;
    }
    int64_t e = lo;
    int32_t d = e > s ? dist[e - 1] - dist[s] + 1 : 0;
    nblk[w] = (d + 7) / 8;
    dfirst[w] = e > s ? dist[s] : 0;
}

__device__ __forceinline__ int popc4(uint4 o)
{
    return __popc(o.x) + __popc(o.y) + __popc(o.z) + __popc(o.w);
}

// Number of occupied positions before pos in a block's mask.
__device__ __forceinline__ int rank_in(uint4 o, int pos)
{
    // by selects, not an array indexed by pos (which the compiler put in local memory)
    const int q = pos >> 5;
    const unsigned own = q == 0 ? o.x : q == 1 ? o.y : q == 2 ? o.z : o.w;
    return __popc(own & ((1u << (pos & 31)) - 1u)) + (q > 0 ? __popc(o.x) : 0) +
           (q > 1 ? __popc(o.y) : 0) + (q > 2 ? __popc(o.z) : 0);
}

// Block and position-in-block of the sorted nonzero i (keys by window, column, row).
struct placed {
    int32_t blk;
    int cc, pos;
};
__device__ __forceinline__ placed place_of(unsigned long long k, int32_t d, const int32_t *win_off,
                                           const int32_t *dfirst, int shift)
{
    const int32_t w = (int32_t)(k >> shift);
    const int32_t lc = d - dfirst[w];
    placed p;
    p.blk = win_off[w] + lc / 8;
    p.cc = lc % 8;
    p.pos = (int)(k & 15) * 8 + p.cc;
    return p;
}

// The column ids of every block, each block's occupancy (128 bits, one per position) and
// its first nonzero: a block starts at the head of a condensed column that is a multiple of 8,
// and its nonzeros are contiguous in the sorted order.
__global__ void place_cols(const unsigned long long *keys, const int32_t *dist,
                           const int32_t *head, const int32_t *win_off, const int32_t *dfirst,
                           int64_t nnz, int32_t windows, int shift, int32_t *blk_col,
                           unsigned *occ, int32_t *blk_off)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz)
        return;
    const unsigned long long k = keys[i];
    const placed p = place_of(k, dist[i], win_off, dfirst, shift);
    if (head[i]) {
        blk_col[(int64_t)p.blk * 8 + p.cc] = (int32_t)((k >> 4) & ((1ull << (shift - 4)) - 1));
        if (p.cc == 0)
            blk_off[p.blk] = (int32_t)i;
    }
    atomicOr(&occ[(int64_t)p.blk * 4 + (p.pos >> 5)], 1u << (p.pos & 31));
    if (i == nnz - 1)
        blk_off[win_off[windows]] = (int32_t)nnz;
}

// Each nonzero's slot in its block: the block's start plus the number of occupied positions
// before its own (positions ascending within a block, as the CPU reference orders them).
__global__ void place_values(const unsigned long long *keys, const int32_t *vals,
                             const int32_t *dist, const int32_t *win_off, const int32_t *dfirst,
                             const unsigned *occ, const int32_t *blk_off, int64_t nnz, int shift,
                             uint8_t *blk_pos, int32_t *val_idx)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz)
        return;
    const placed p = place_of(keys[i], dist[i], win_off, dfirst, shift);
    const int64_t dst =
        (int64_t)blk_off[p.blk] + rank_in(reinterpret_cast<const uint4 *>(occ)[p.blk], p.pos);
    blk_pos[dst] = (uint8_t)p.pos;
    val_idx[dst] = vals[i];
}

// ---- Window-local conversion of CSR (no row permutation, at most kLocalMaxCols columns) ----
//
// A CSR window's nonzeros are one contiguous range of the caller's arrays, and they keep that
// range in ME-TCF (windows in order, each window's nonzeros together), so one thread block
// can convert a window without any global sort.  A column's condensed index is the number of
// distinct columns of the window below it, found
//   * in a window of at most kShortMax nonzeros (a few a thread), by comparing the column
//     with those of the window's first occurrences, held in shared memory;
//   * in a longer window, from a bitmap of the window's columns over [min, max] in shared
//     memory and the prefix count of its words.
// A nonzero's slot in its block is then counted with the block's 128-bit occupancy mask, as
// in the sorted path (shared memory, or global memory for windows of more than
// kLocalOccBlocks blocks).  window_local<false, *> counts each window's blocks for the scan
// that numbers them, window_local<true, *> writes the window's blocks; each kernel takes the
// windows of its kind (short, long, or both: kBothKind below) and leaves the others.  The
// arrays are identical to the sorted path's; the columns within a row need not be sorted.
constexpr int kShortThreads = 64, kShortItems = 4; // short windows: at most 256 nonzeros
constexpr int kShortMax = kShortThreads * kShortItems;
constexpr int kLongThreads = 512; // 1024 measured slower on the BlogCatalog replicas and mdual
constexpr int kLongItems = 4;     // long windows: nonzeros a thread reads at a time (for_cols)
// The long kinds' registers bounded for 3 thread blocks of kLongThreads an SM (40 a thread).
// Unbounded, the placing kernels took 64, which leaves 2 blocks an SM: one wave of ogbl-ddi's
// 267 windows needs 3 on 132 SMs (local_fit_stage fits the staging area for 3).  The
// ordered-rows (kOrd) placing kernels spill a little at 40 (ptxas: up to 40 bytes stored,
// 92 loaded a thread).
constexpr int kLongMinBlocks = 3;
constexpr int64_t kLocalMaxCols = 1 << 18; // long windows' bitmap and prefix counts: 64 KiB
constexpr int kLocalOccBlocks = 1024;      // long windows' occupancy in shared memory (20 KiB)

struct MinOp {
    __device__ __forceinline__ int operator()(int a, int b) const { return a < b ? a : b; }
};
struct MaxOp {
    __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};

// Row of nonzero j within its window: the last r with ro[r] <= j.
template <typename T>
__device__ __forceinline__ int row_in_window(const T *ro, T j)
{
    int r = 0;
    for (int step = 8; step > 0; step >>= 1)
        if (ro[r + step] <= j)
            r += step;
    return r;
}

// Row r's nonzeros [b, e) in the caller's arrays, clamped into [0, nnz]; a decreasing pair
// reads as an empty row (check_offsets flags both).
__device__ __forceinline__ void row_range(const void *off, int off64, int64_t r, int64_t nnz,
                                          int base, int64_t &b, int64_t &e)
{
    b = ld_any(off, off64, r) - base;
    e = ld_any(off, off64, r + 1) - base;
    b = b < 0 ? 0 : b > nnz ? nnz : b;
    e = e < b ? b : e > nnz ? nnz : e;
}

// Short windows run in thread blocks of kShortThreads (many windows in flight on an SM),
// long ones in blocks of kLongThreads (a long window's passes spread over more threads):
// kKind = kShortKind and kLongKind, each kernel taking the windows of its kind.  When windows
// are few (at most kBothMaxWindows) one kernel of kLongThreads takes both kinds (kBothKind; a
// short window then on its first kShortThreads threads): one launch a pass instead of two,
// whose host time was on the path to the placing pass.
constexpr int kShortKind = 0, kLongKind = 1, kBothKind = 2;
constexpr int32_t kBothMaxWindows = 4096;
constexpr size_t kBothMaxBitmap = 16 * 1024; // bytes of bitmap and prefix counts (4096 words each)

// The order in which a window_local pass of one thread block a window (kBothKind) takes the
// windows: thread block b takes window order[tc_snake_rank(b, windows, sm_count)]
// (metcf_rules.h), order listing the windows by decreasing nonzeros, so that an SM's windows
// add up to about the mean.  In the caller's order an SM could get two of the longest:
// ogbl-ddi's busiest SM had 1.8 times the mean nonzeros (29,149 against 16,180; 1.31 times
// with this order), and its passes took as long as that SM (docs/performance.md, "Nineteenth
// session").

// The short windows' barrier: the block's, or in a kBothKind block (whose other threads have
// left) a named barrier of its first kShortThreads threads (two whole warps).
template <int kKind>
__device__ __forceinline__ void short_sync()
{
    static_assert(kShortThreads % 32 == 0, "the named barrier counts whole warps");
    if constexpr (kKind == kBothKind)
        asm volatile("bar.sync 1, %0;" ::"n"(kShortThreads) : "memory");
    else
        __syncthreads();
}

// The window offsets a window_local pass reads (clamped into [0, nnz]), row r (at most rows):
// the window's own in window_local_one, its two ends in find_long_windows, which must class
// the windows as the pass does.
template <bool kOrd>
__device__ __forceinline__ int64_t window_row_offset(const void *off, int off64, int64_t rows,
                                                     int64_t nnz, int base,
                                                     const int32_t *perm, const int64_t *pro,
                                                     int64_t r)
{
    r = r < rows ? r : rows;
    const int64_t v = kOrd && perm != nullptr ? pro[r] : ld_any(off, off64, r) - base;
    return v < 0 ? 0 : v > nnz ? nnz : v;
}

template <bool kPlace, int kKind, bool kOrd = false>
__device__ __forceinline__ void
    window_local_one(const int32_t w, const void *off, int off64, const void *idx, int idx64,
                     int64_t rows, int64_t cols, int64_t nnz, int base, int32_t windows,
                     int64_t bub, int wmax, int stage_cap, const int32_t *perm_in,
                     const int64_t *pro, const int *ordered, int32_t *nblk, int2 *crange,
                     const int32_t *win_off, int32_t *blk_col, int32_t *blk_off, unsigned *occ,
                     uint8_t *blk_pos, int32_t *val_idx, int *flags)
{
    constexpr bool kLong = kKind != kShortKind; // the long windows' code and block size
    constexpr int NT = kLong ? kLongThreads : kShortThreads;
    using Reduce = cub::BlockReduce<int, NT>;
    using Scan = cub::BlockScan<int, NT>;
    __shared__ union {
        typename Reduce::TempStorage r;
        typename Scan::TempStorage s;
        int col[2][kKind == kLongKind ? 1 : kShortMax]; // short windows: columns, first occurrences
    } tmp;
    __shared__ int64_t ro[17];
    __shared__ int64_t rdel[16]; // rows ordered (perm): a nonzero's caller position minus its own
    __shared__ int ro32[17], rdel32[16]; // the same in 32 bits (positions <= nnz < 2^31)
    __shared__ int sh_a, sh_b, sh_bad;
    __shared__ uint4 so[kLong ? kLocalOccBlocks : kShortMax / 8];
    __shared__ int sboff[kLong ? kLocalOccBlocks : kShortMax / 8];
    // long windows: bitmap, then prefix counts (wmax words each), then (placing, stage_cap > 0)
    // the staged value indices (stage_cap words; first the condensed columns) and positions
    // (stage_cap bytes)
    extern __shared__ unsigned smem[];
    const int t = threadIdx.x;
    // Rows ordered on the GPU (kOrd kernels only, so that the others are compiled as if the
    // order did not exist): when perm_in is given and, with `ordered`, the order was taken.
    const int32_t *perm =
        kOrd && perm_in != nullptr && (ordered == nullptr || *ordered) ? perm_in : nullptr;
    // The window's row offsets, clamped into [0, nnz] (check_offsets flags them).  With rows
    // ordered on the GPU, window row i is the caller's row perm[16 w + i]: the offsets are
    // the ordered ones (pro), where the window's nonzeros are numbered contiguously as in
    // the plan, and rdel maps that number back to the caller's arrays.
    if (t < 17) {
        ro[t] = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro,
                                        (int64_t)w * 16 + t);
        ro32[t] = (int)ro[t];
    }
    if (perm != nullptr && t < 16) {
        const int64_t r = (int64_t)w * 16 + t;
        int64_t b = 0, e = 0;
        if (r < rows)
            row_range(off, off64, perm[r], nnz, base, b, e);
        rdel[t] = b; // minus ro[t] below, once ro is complete
    }
    if (kPlace && kKind != kLongKind && w == windows - 1 && t == 0) {
        const int32_t tot = win_off[windows];
        if (tot >= 0 && tot <= bub)
            blk_off[tot] = (int32_t)nnz;
    }
    __syncthreads();
    // Invalid offsets (flagged by check_offsets, which ran before on the stream, or
    // decreasing inside this window) would make windows overlap: their nonzeros counted
    // again for every window, work without bound and more blocks than the plan holds.  Every
    // window then stops here; the writes below are bounded by the plan's sizes in any case.
    if (t == 0) {
        int bad = *reinterpret_cast<volatile int *>(flags) & kBadOffsets;
        for (int k = 0; k < 16; k++)
            bad |= ro[k + 1] < ro[k];
        sh_a = bad;
    }
    if (perm != nullptr && t < 16) {
        rdel[t] -= ro[t];
        rdel32[t] = (int)rdel[t];
    }
    __syncthreads();
    // the caller's position of the window's nonzero j (window row r)
    auto src = [&](int64_t j, int r) -> int64_t { return perm != nullptr ? j + rdel[r] : j; };
    if (sh_a) {
        if (!kPlace && kKind != kLongKind && t == 0) { // one counting kernel reports it
            nblk[w] = 0;
            atomicOr(flags, kBadOffsets);
        }
        return;
    }
    const int64_t s = ro[0], e = ro[16];
    const bool is_long = e - s > kShortMax; // uniform over the block
    if ((kKind == kShortKind && is_long) || (kKind == kLongKind && !is_long))
        return; // the other kernel's window
    const int32_t wo = kPlace ? win_off[w] : 0, nb = kPlace ? win_off[w + 1] - wo : 0;
    __syncthreads(); // sh_a is reused below

    if (kKind != kLongKind && !is_long) {
        if (kKind == kBothKind && t >= kShortThreads)
            return; // the rest is done by the first kShortThreads (short_sync)
        // item k of thread t is the window's nonzero t + k * kShortThreads
        const int n = (int)(e - s);
        int c[kShortItems], lrow[kShortItems], lc[kShortItems];
        bool first[kShortItems];
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            const int i = t + k * kShortThreads;
            c[k] = -1;
            lrow[k] = 0;
            lc[k] = 0;
            if (i < n) {
                const int r = row_in_window(ro, s + i);
                const int64_t cc = ld_any(idx, idx64, src(s + i, r)) - base;
                if (cc >= 0 && cc < cols) {
                    c[k] = (int)cc;
                    lrow[k] = r;
                } else if (!kPlace) {
                    atomicOr(flags, kBadIndex);
                }
            }
            tmp.col[0][i] = c[k];
        }
        short_sync<kKind>();
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            const int i = t + k * kShortThreads;
            first[k] = c[k] >= 0;
            for (int q = 0; first[k] && q < i; q++)
                first[k] = tmp.col[0][q] != c[k];
            tmp.col[1][i] = first[k] ? c[k] : INT_MAX;
        }
        short_sync<kKind>();
        int d = 0; // condensed index: distinct columns below c
        for (int q = 0; q < n; q++) {
            const int f = tmp.col[1][q];
            d += f != INT_MAX;
#pragma unroll
            for (int k = 0; k < kShortItems; k++)
                lc[k] += f < c[k];
        }
        if (!kPlace) {
            if (t == 0)
                nblk[w] = (d + 7) / 8;
            return;
        }
        if (nb != (d + 7) / 8 || wo < 0 || (int64_t)wo + nb > bub) { // never, but bounded
            if (t == 0)
                atomicOr(flags, kBadOffsets);
            return;
        }
#pragma unroll
        for (int k = 0; k < kShortItems; k++)
            if (first[k])
                blk_col[((int64_t)wo + lc[k] / 8) * 8 + lc[k] % 8] = c[k];
        if (t < nb * 8 - d)
            blk_col[(int64_t)wo * 8 + d + t] = -1;
        if (t < nb)
            so[t] = make_uint4(0, 0, 0, 0);
        short_sync<kKind>();
        unsigned *sw = reinterpret_cast<unsigned *>(so);
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            if (c[k] < 0)
                continue;
            const int pos = lrow[k] * 8 + lc[k] % 8;
            const unsigned bit = 1u << (pos & 31);
            if (atomicOr(&sw[lc[k] / 8 * 4 + (pos >> 5)], bit) & bit)
                atomicOr(flags, kDuplicate); // the same row and column twice
        }
        short_sync<kKind>();
        if (t < 32) { // nb <= 32: one warp numbers the blocks' nonzeros
            const int cnt = t < nb ? popc4(so[t]) : 0;
            int inc = cnt;
            for (int k = 1; k < 32; k <<= 1) {
                const int y = __shfl_up_sync(0xffffffffu, inc, k);
                if (t >= k)
                    inc += y;
            }
            if (t < nb) {
                sboff[t] = inc - cnt;
                blk_off[wo + t] = (int32_t)(s + inc - cnt);
            }
        }
        short_sync<kKind>();
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            if (c[k] < 0)
                continue;
            const int lb = lc[k] / 8, pos = lrow[k] * 8 + lc[k] % 8;
            const int64_t dst = s + sboff[lb] + rank_in(so[lb], pos);
            if (dst < e) {
                blk_pos[dst] = (uint8_t)pos;
                val_idx[dst] = (int32_t)src(s + t + k * kShortThreads, lrow[k]);
            }
        }
        return;
    }

    // Long windows read their nonzeros' columns in every loop below, kLongItems a thread at a
    // time, in two phases: prep(r, p, c) for each (window row r, found when kRow or for
    // ordered rows; caller position p; column c), which only loads, then commit(prep's
    // result) for each, which stores.  So the items' loads (the columns' from global memory,
    // then the bitmap's, prefix counts' and occupancy's from shared memory) are in flight
    // together: one item at a time, each item's loads waited for the stores of the one
    // before (the compiler cannot tell the shared-memory arrays apart), and the passes were
    // bound by those loads' latency (ogbl-ddi, 267 windows of 8,000 nonzeros: 23 + 58 us;
    // docs/performance.md, "Nineteenth session").
    // Within a window, in 32 bits: positions (j, p) are below nnz < 2^31 (tc_convert_gpu
    // refuses more); a column out of range reads as c = -1.
    const int s32 = (int)s, e32 = (int)e;
    auto for_cols = [&](auto kRowTag, auto &&prep, auto &&commit) {
        constexpr bool kRow = decltype(kRowTag)::value;
        using Item = decltype(prep(0, 0, 0));
        for (int64_t j0 = s + t; j0 < e; j0 += (int64_t)kLongItems * NT) {
            int c[kLongItems], p[kLongItems], r[kLongItems];
#pragma unroll
            for (int u = 0; u < kLongItems; u++) {
                const int64_t j = j0 + (int64_t)u * NT;
                const int jj = j < e ? (int)j : s32; // past the end: a valid place, not used
                r[u] = kRow || perm != nullptr ? row_in_window(ro32, jj) : 0;
                p[u] = perm != nullptr ? jj + rdel32[r[u]] : jj;
                const int64_t cc = ld_any(idx, idx64, p[u]) - base;
                c[u] = cc >= 0 && cc < cols ? (int)cc : -1;
            }
            Item v[kLongItems];
#pragma unroll
            for (int u = 0; u < kLongItems; u++)
                v[u] = prep(r[u], p[u], c[u]);
#pragma unroll
            for (int u = 0; u < kLongItems; u++)
                if (j0 + (int64_t)u * NT < e)
                    commit(v[u]);
        }
    };
    auto col_of = [](int, int, int c) { return c; };
    using NoRow = std::integral_constant<bool, false>;
    using WithRow = std::integral_constant<bool, true>;
    // long windows: the column range; invalid columns are flagged and skipped after
    // (the counting pass finds it and keeps it in crange for the placing pass)
    int cmin = INT_MAX, cmax = -1;
    if (kPlace) {
        const int2 cr = crange[w];
        cmin = cr.x;
        cmax = cr.y;
    } else {
        for_cols(NoRow{}, col_of, [&](int c) {
            if (c < 0) {
                atomicOr(flags, kBadIndex);
                return;
            }
            cmin = min(cmin, c);
            cmax = max(cmax, c);
        });
        int v = Reduce(tmp.r).Reduce(cmin, MinOp());
        if (t == 0)
            sh_a = v;
        __syncthreads();
        v = Reduce(tmp.r).Reduce(cmax, MaxOp());
        if (t == 0) {
            sh_b = v;
            crange[w] = make_int2(sh_a, v);
        }
        __syncthreads();
        cmin = sh_a;
        cmax = sh_b;
    }
    if (cmin > cmax || cmin < 0 || cmax >= cols) // crange only ever holds a valid range
        cmax = -1;
    if (cmax < 0) { // no valid nonzero: no block
        if (!kPlace && t == 0)
            nblk[w] = 0;
        return;
    }
    const int nw = (cmax - cmin) / 32 + 1;
    unsigned *bm = smem, *pref = smem + wmax; // wmax = ceil(cols / 32) >= nw
    for (int i = t; i < nw; i += NT)
        bm[i] = 0;
    __syncthreads();
    for_cols(NoRow{}, col_of, [&](int c) {
        if (c >= 0)
            atomicOr(&bm[(c - cmin) >> 5], 1u << ((c - cmin) & 31));
    });
    __syncthreads();
    // each thread counts a contiguous run of words; the scan numbers the distinct columns
    const int per = (nw + NT - 1) / NT, w0 = t * per;
    const int w1 = w0 + per < nw ? w0 + per : nw;
    int mine = 0;
    for (int i = w0; i < w1; i++)
        mine += __popc(bm[i]);
    int first, d;
    Scan(tmp.s).ExclusiveSum(mine, first, d);
    if (!kPlace) {
        if (t == 0)
            nblk[w] = (d + 7) / 8;
        return;
    }
    if (nb != (d + 7) / 8 || wo < 0 || (int64_t)wo + nb > bub) {
        if (t == 0)
            atomicOr(flags, kBadOffsets);
        return;
    }
    // The condensed columns and their prefix counts.  A thread writes the columns of its run of
    // words, so a warp's stores are 32 runs apart: written straight to the plan, each touched a
    // sector of its own (ogbl-ddi's placing pass: 49% of its global sectors were excess).  When
    // they fit the staging area (free until the nonzeros are staged, below) they go there and
    // are copied out in order after the next barrier.
    int32_t *sval = reinterpret_cast<int32_t *>(smem + 2 * wmax);
    const bool cols_staged = nb * 8 <= stage_cap; // uniform over the block
    int32_t *cdst = cols_staged ? sval : blk_col + (int64_t)wo * 8;
    for (int i = w0, lc = first; i < w1; i++) {
        pref[i] = lc;
        for (unsigned bits = bm[i]; bits != 0; bits &= bits - 1, lc++)
            cdst[lc] = cmin + 32 * i + __ffs(bits) - 1;
    }
    if (t < nb * 8 - d)
        cdst[d + t] = -1;
    // occupancy in shared memory when the window's blocks fit, else in the scratch
    const bool in_smem = nb <= kLocalOccBlocks;
    uint4 *o4 = in_smem ? so : reinterpret_cast<uint4 *>(occ) + wo;
    for (int b = t; b < nb; b += NT)
        o4[b] = make_uint4(0, 0, 0, 0);
    if (t == 0)
        sh_bad = 0;
    __syncthreads();
    if (cols_staged) // read before the barrier after the occupancy pass; staging comes after it
        for (int i = t; i < nb * 8; i += NT)
            blk_col[(int64_t)wo * 8 + i] = sval[i];
    // a nonzero's block (lb; -1: its column is out of range) and position in it, and (the
    // placing loop) its place in the plan (dst) and caller position (p)
    struct Slot {
        int lb, pos, dst, p;
    };
    auto place = [&](int r, int p, int c) {
        Slot q{-1, 0, 0, p};
        if (c >= 0) {
            const int i = c - cmin;
            const int lc = pref[i >> 5] + __popc(bm[i >> 5] & ((1u << (i & 31)) - 1u));
            q.lb = lc / 8;
            q.pos = r * 8 + lc % 8;
        }
        return q;
    };
    unsigned *ow = reinterpret_cast<unsigned *>(o4);
    for_cols(WithRow{}, place, [&](const Slot &q) {
        if (q.lb < 0) { // a column out of range (flagged by the counting pass)
            sh_bad = 1;
            return;
        }
        const unsigned bit = 1u << (q.pos & 31);
        if (atomicOr(&ow[q.lb * 4 + (q.pos >> 5)], bit) & bit) {
            atomicOr(flags, kDuplicate);
            sh_bad = 1;
        }
    });
    __syncthreads();
    // The plan is refused: nothing more to write.  (Duplicates would share a place, and a
    // skipped nonzero would leave a staged slot unwritten.)
    if (sh_bad)
        return;
    // each block's first nonzero: the window's start plus the nonzeros of the blocks before
    int carry = 0;
    for (int b0 = 0; b0 < nb; b0 += NT) {
        const int b = b0 + t;
        const int cnt = b < nb ? popc4(in_smem ? so[b] : __ldcg(&o4[b])) : 0;
        int ex, tot;
        Scan(tmp.s).ExclusiveSum(cnt, ex, tot);
        if (b < nb) {
            blk_off[wo + b] = (int32_t)(s + carry + ex);
            if (in_smem)
                sboff[b] = carry + ex;
        }
        carry += tot;
        __syncthreads();
    }
    // A nonzero's place in the window's range is scattered over it: a window that fits the
    // staging area is written there first and copied out in order (coalesced), the others
    // straight to global memory.  (On ogbl-ddi, 63% of the pass's global sectors were the
    // scattered writes' excess.)
    const bool staged = e - s <= (int64_t)stage_cap; // uniform over the block
    uint8_t *spos = reinterpret_cast<uint8_t *>(sval + stage_cap);
    for_cols(
        WithRow{},
        [&](int r, int p, int c) {
            Slot q = place(r, p, c);
            if (q.lb >= 0) {
                const int first_nz = in_smem ? s32 + sboff[q.lb] : __ldcg(&blk_off[wo + q.lb]);
                q.dst = first_nz + rank_in(in_smem ? so[q.lb] : __ldcg(&o4[q.lb]), q.pos);
            }
            return q;
        },
        [&](const Slot &q) {
            if (q.lb < 0 || q.dst < s32 || q.dst >= e32)
                return;
            if (staged) {
                spos[q.dst - s32] = (uint8_t)q.pos;
                sval[q.dst - s32] = q.p;
            } else {
                blk_pos[q.dst] = (uint8_t)q.pos;
                val_idx[q.dst] = q.p;
            }
        });
    if (staged) {
        __syncthreads();
        // slots no nonzero was placed in exist only for invalid input (duplicates, columns
        // out of range), which the flags reject: the plan is then discarded
        const int n = (int)(e - s);
        for (int i = t; i < n; i += NT) {
            blk_pos[s + i] = spos[i];
            val_idx[s + i] = sval[i];
        }
    }
}

// The long windows of a pass (more than kShortMax nonzeros, as window_local_one decides),
// listed for the long kernel: list[lq[0]++] (in no particular order: each window is converted
// on its own).  One thread a window.
template <bool kOrd = false>
__global__ void __launch_bounds__(256)
    find_long_windows(const void *off, int off64, int64_t rows, int64_t nnz, int base,
                      int32_t windows, const int32_t *perm_in, const int64_t *pro,
                      const int *ordered, int32_t *list, int *lq)
{
    const int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= windows)
        return;
    const int32_t *perm =
        kOrd && perm_in != nullptr && (ordered == nullptr || *ordered) ? perm_in : nullptr;
    const int64_t s = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro, w * 16),
                  e = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro, w * 16 + 16);
    if (e - s > kShortMax)
        list[atomicAdd(&lq[0], 1)] = (int32_t)w;
}

// The counting pass of one thread block a window (kBothKind, at most kBothMaxWindows windows)
// also numbers the blocks: its last thread block to finish (counted, cleared with the
// summary) scans the windows' block counts into out[0 .. windows] (window offsets, the total
// last), which took a launch of its own (scan_small) on the host's path to the placing pass.
// One warp does it, with no block barrier and no shared memory: a block's count (nblk[w]) is
// written by its thread 0, which also takes the ticket, and the window's other threads may
// have left through a named barrier (short_sync).
__device__ __forceinline__ void count_then_scan(const int32_t *nblk, int32_t windows,
                                                int32_t *out, int *counted)
{
    if (threadIdx.x >= 32)
        return;
    __syncwarp();
    const int lane = (int)threadIdx.x;
    int last = 0;
    if (lane == 0) {
        __threadfence(); // nblk[w], written by this thread, before the ticket
        last = atomicAdd(counted, 1) == (int)gridDim.x - 1;
        __threadfence(); // the ticket before this block's reads of the counts
    }
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    __syncwarp(); // orders the other lanes' reads below after lane 0's fence (a shuffle does not)
    // tiles of 32 windows, 4 tiles' counts loaded at a time (a lane's contiguous run of 128
    // windows, read one after another, took the pass from 19 to 36 us on ogbl-ddi)
    constexpr int kTiles = 4;
    int32_t carry = 0;
    for (int32_t t0 = 0; t0 < windows; t0 += 32 * kTiles) {
        int32_t v[kTiles];
#pragma unroll
        for (int u = 0; u < kTiles; u++) {
            const int32_t i = t0 + u * 32 + lane;
            v[u] = i < windows ? __ldcg(&nblk[i]) : 0;
        }
#pragma unroll
        for (int u = 0; u < kTiles; u++) {
            int32_t inc = v[u];
            for (int k = 1; k < 32; k <<= 1) {
                const int32_t y = __shfl_up_sync(0xffffffffu, inc, k);
                if (lane >= k)
                    inc += y;
            }
            const int32_t i = t0 + u * 32 + lane;
            if (i < windows)
                out[i] = carry + inc - v[u];
            carry += __shfl_sync(0xffffffffu, inc, 31);
        }
    }
    if (lane == 0)
        out[windows] = carry; // the total
}

// A window_local pass: one window a thread block for the short kinds (kShortKind, kBothKind);
// the long kind (kLongKind) persistent: its thread blocks take the windows find_long_windows
// listed (list[0 .. lq[0]), lq[1] counting those taken) one after another.  Launched over
// every window, the long kernel's thread blocks found their window short and left at once,
// but each held the long kernel's shared memory (its bitmap is sized by the columns, up to
// 64 KiB: 3 thread blocks an SM): on mdual (16,161 windows, none long) its two launches took
// 44 and 64 us of GPU time in a 0.3 ms build (docs/performance.md, "Eighteenth session").
template <bool kPlace, int kKind, bool kOrd = false>
__global__ void __launch_bounds__(kKind != kShortKind ? kLongThreads : kShortThreads,
                               kKind != kShortKind ? kLongMinBlocks : 1)
    window_local(const void *off, int off64, const void *idx, int idx64, int64_t rows,
                 int64_t cols, int64_t nnz, int base, int32_t windows, int64_t bub, int wmax,
                 int stage_cap, const int32_t *perm_in, const int64_t *pro,
                 const int *ordered, int32_t *nblk,
                 int2 *crange, const int32_t *win_off, int32_t *blk_col, int32_t *blk_off,
                 unsigned *occ, uint8_t *blk_pos, int32_t *val_idx, int *flags,
                 const int32_t *long_list, int *lq, int sm_count, int32_t *scan_out,
                 int *counted)
{
    if constexpr (kKind == kLongKind) {
        __shared__ int taken;
        const int n = *reinterpret_cast<volatile int *>(&lq[0]); // find_long_windows ran before
        for (;;) {
            if (threadIdx.x == 0)
                taken = atomicAdd(&lq[1], 1);
            __syncthreads();
            const int i = taken;
            if (i >= n)
                return; // uniform over the block
            window_local_one<kPlace, kKind, kOrd>(
                long_list[i], off, off64, idx, idx64, rows, cols, nnz, base, windows, bub, wmax,
                stage_cap, perm_in, pro, ordered, nblk, crange, win_off, blk_col, blk_off, occ,
                blk_pos, val_idx, flags);
            __syncthreads(); // every thread is done with the window's shared memory (and taken)
        }
    } else {
        // kBothKind: long_list, when given, is the windows' order (check_offsets_small)
        const int32_t b = (int32_t)blockIdx.x;
        const int32_t w = kKind == kBothKind && long_list != nullptr
                              ? long_list[tc_snake_rank(b, windows, sm_count)]
                              : b;
        window_local_one<kPlace, kKind, kOrd>(
            w, off, off64, idx, idx64, rows, cols, nnz, base, windows, bub,
            wmax, stage_cap, perm_in, pro, ordered, nblk, crange, win_off, blk_col, blk_off, occ,
            blk_pos, val_idx, flags);
        if constexpr (kKind == kBothKind && !kPlace)
            if (scan_out != nullptr)
                count_then_scan(nblk, windows, scan_out, counted);
    }
}

// Exclusive scan of n block counts into out[0..n] (out[n]: the total) by one thread block,
// for the window offsets when windows are few (at most kSmallScanMax): one launch where
// CUB's scan costs two and its host-side queries, on the path to the placing pass (on
// ogbl-ddi, 267 windows, the host spent 19 us in CUB's scan and the GPU 6 us).
constexpr int kSmallScanThreads = 1024, kSmallScanItems = 4;
constexpr int64_t kSmallScanMax = 1 << 16;

__global__ void __launch_bounds__(kSmallScanThreads)
    scan_small(const int32_t *in, int32_t n, int32_t *out)
{
    using Scan = cub::BlockScan<int32_t, kSmallScanThreads>;
    __shared__ typename Scan::TempStorage tmp;
    constexpr int kTile = kSmallScanThreads * kSmallScanItems;
    int32_t carry = 0;
    for (int32_t base = 0; base < n; base += kTile) {
        int32_t v[kSmallScanItems];
        const int32_t first = base + (int32_t)threadIdx.x * kSmallScanItems;
#pragma unroll
        for (int i = 0; i < kSmallScanItems; i++)
            v[i] = first + i < n ? in[first + i] : 0;
        int32_t tile_total;
        Scan(tmp).ExclusiveSum(v, v, tile_total);
#pragma unroll
        for (int i = 0; i < kSmallScanItems; i++)
            if (first + i < n)
                out[first + i] = carry + v[i];
        carry += tile_total;
        __syncthreads(); // tmp is reused by the next tile
    }
    if (threadIdx.x == 0)
        out[n] = carry;
}

// The conversion's summary, read back by the host after its one synchronisation.
struct summary {
    int flags;
    int32_t blocks, chunk_blocks, nchunks, nsplit;
    unsigned long long empty, maxb, hist[16];
    // rows ordered on the GPU: blocks in the caller's order, and whether the plan takes the
    // order (choose_order)
    long long blocks_id;
    int ordered;
    // window_local's long windows, per pass (counting, counting the caller's order, placing):
    // how many find_long_windows listed, and how many the long kernel has taken
    int lq[3][2];
    // the one-block-a-window counting pass's thread blocks done (count_then_scan)
    int counted;
};

// The summary cleared and the offsets (if any) checked by one thread block, for at most
// kSmallScanMax offsets: the same checks as check_offsets (offset_bad).  With order, also the
// windows (at most kSmallScanThreads * kSmallScanItems) by decreasing nonzeros (worder: the
// CSR offsets the windows are read from; ties in window order).
__global__ void __launch_bounds__(kSmallScanThreads)
    check_offsets_small(const void *off, int is64, int64_t dim, int64_t nnz, int base,
                        summary *sum, const void *worder, int32_t windows, int32_t *order)
{
    using Sort = cub::BlockRadixSort<unsigned, kSmallScanThreads, kSmallScanItems, int32_t>;
    __shared__ typename Sort::TempStorage sort_tmp;
    __shared__ int bad;
    if (threadIdx.x == 0)
        bad = 0;
    int *words = reinterpret_cast<int *>(sum);
    for (int i = threadIdx.x; i < (int)(sizeof(summary) / sizeof(int)); i += blockDim.x)
        words[i] = 0;
    __syncthreads();
    if (off != nullptr) {
        for (int64_t i = threadIdx.x; i <= dim; i += blockDim.x)
            if (offset_bad(off, is64, i, dim, nnz, base))
                bad = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0 && bad)
        sum->flags = kBadOffsets;
    if (order == nullptr || windows > kSmallScanThreads * kSmallScanItems)
        return;
    // The windows' nonzeros (offsets clamped as window_local reads them), then 8-bit keys
    // for a decreasing order: 254 - 254 n / (the most), past the windows 255 (last); equal
    // keys stay in window order.  (The balance needs sizes only roughly: 32-bit keys took the
    // sort 18 us on the H100, 2 passes of 4 bits take a few.)
    __shared__ int most;
    if (threadIdx.x == 0)
        most = 0;
    int n[kSmallScanItems];
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        const int32_t w = (int32_t)threadIdx.x * kSmallScanItems + k;
        n[k] = -1;
        if (w < windows) {
            const int64_t b = window_row_offset<false>(worder, is64, dim, nnz, base, nullptr,
                                                       nullptr, (int64_t)w * 16),
                          e = window_row_offset<false>(worder, is64, dim, nnz, base, nullptr,
                                                       nullptr, (int64_t)w * 16 + 16);
            n[k] = e > b ? (int)(e - b) : 0;
        }
    }
    __syncthreads();
    int mine = 0;
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++)
        mine = max(mine, n[k]);
    if (mine > 0)
        atomicMax(&most, mine);
    __syncthreads();
    const int64_t top = most > 0 ? most : 1;
    unsigned key[kSmallScanItems];
    int32_t val[kSmallScanItems];
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        key[k] = n[k] < 0 ? 255u : 254u - (unsigned)(254 * (int64_t)n[k] / top);
        val[k] = (int32_t)threadIdx.x * kSmallScanItems + k;
    }
    Sort(sort_tmp).Sort(key, val, 0, 8); // ascending and stable
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        const int32_t r = (int32_t)threadIdx.x * kSmallScanItems + k;
        if (r < windows)
            order[r] = val[k];
    }
}

// The chunk length: forced, or the default rule (metcf_rules.h).
__device__ __forceinline__ int32_t chunk_len(int32_t blocks, int sm_count, int32_t force)
{
    return force > 0 ? force : (int32_t)tc_default_chunk_blocks(blocks, sm_count);
}

// A thread block's statistics of its windows: the histogram of blocks per window, the empty
// windows and the most blocks in one window.
struct block_stats {
    unsigned long long h[16], empty, maxb;
};

__device__ __forceinline__ void block_stats_clear(block_stats &st) // then __syncthreads()
{
    if (threadIdx.x < 16)
        st.h[threadIdx.x] = 0;
    if (threadIdx.x == 0) {
        st.empty = 0;
        st.maxb = 0;
    }
}

// A window of nb blocks: its statistics counted in st, and its number of chunks of at most ch
// blocks packed with its split flag, chunks << 32 | split, for one scan of both.
__device__ __forceinline__ unsigned long long window_entry(int32_t nb, int32_t ch,
                                                           block_stats &st)
{
    const unsigned long long c = nb == 0 ? 1 : (unsigned long long)(((int64_t)nb + ch - 1) / ch);
    atomicAdd(&st.h[tc_hist_bucket(nb)], 1ull);
    if (nb == 0)
        atomicAdd(&st.empty, 1ull);
    atomicMax(&st.maxb, (unsigned long long)nb);
    return c << 32 | (unsigned long long)(c > 1);
}

// The schedule's totals into the summary (one thread); total is the scan's last entry.
__device__ __forceinline__ void schedule_totals(summary *sum, int32_t blocks, int32_t ch,
                                                unsigned long long total, int64_t slots)
{
    const int64_t nch = (int64_t)(total >> 32);
    if (nch > slots) // the launcher's bound assumed a shorter schedule: refuse, never truncate
        atomicOr(&sum->flags, kScheduleBound);
    sum->blocks = blocks;
    sum->chunk_blocks = ch;
    sum->nchunks = (int32_t)nch;
    sum->nsplit = (int32_t)(total & 0xffffffffull);
}

// Chunk t (< the total) from pscan, the exclusive scan of the packed entries (global or
// shared memory): it belongs to the last window whose first chunk is <= t.
__device__ __forceinline__ tc_chunk chunk_at(int64_t t, const unsigned long long *pscan,
                                             const int32_t *win_off, int32_t windows, int32_t ch)
{
    int32_t lo = 0, hi = windows; // last w in [0, windows) with first chunk <= t
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)(pscan[mid] >> 32) <= t)
            lo = mid;
        else
            hi = mid;
    }
    const int64_t first = (int64_t)(pscan[lo] >> 32), cw = (int64_t)(pscan[lo + 1] >> 32) - first;
    const int32_t b = win_off[lo] + (int32_t)((t - first) * ch), e = win_off[lo + 1];
    tc_chunk c;
    c.win = lo;
    c.begin = b;
    c.end = e - b > ch ? b + ch : e;
    c.split = cw > 1;
    return c;
}

// Per window: the statistics (CTA-local histogram, then one atomic per bucket) and the
// packed entry (window_entry); slot `windows` is 0, so the exclusive scan ends with both
// totals.
__global__ void window_stats(const int32_t *win_off, int32_t windows, int sm_count,
                             int32_t force, unsigned long long *packed, summary *sum)
{
    __shared__ block_stats st;
    block_stats_clear(st);
    __syncthreads();
    const int32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < windows)
        packed[w] = window_entry(win_off[w + 1] - win_off[w],
                                 chunk_len(win_off[windows], sm_count, force), st);
    else if (w == windows)
        packed[w] = 0;
    __syncthreads();
    if (threadIdx.x < 16 && st.h[threadIdx.x] != 0)
        atomicAdd(&sum->hist[threadIdx.x], st.h[threadIdx.x]);
    if (threadIdx.x == 0) {
        if (st.empty != 0)
            atomicAdd(&sum->empty, st.empty);
        atomicMax(&sum->maxb, st.maxb);
    }
}

// One thread per chunk slot (chunk_at).  Threads below `windows` also list the split windows.
// Slots past the total do nothing (the allocation is sized by an upper bound).
__global__ void write_chunks(const int32_t *win_off, const unsigned long long *pscan,
                             int32_t windows, int sm_count, int32_t force, int64_t slots,
                             tc_chunk *chunks, int32_t *split, summary *sum)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int32_t blocks = win_off[windows];
    const int32_t ch = chunk_len(blocks, sm_count, force);
    const int64_t nch = (int64_t)(pscan[windows] >> 32);
    if (t == 0)
        schedule_totals(sum, blocks, ch, pscan[windows], slots);
    if (t < windows) {
        const unsigned long long a = pscan[t], b = pscan[t + 1];
        if ((b & 0xffffffffull) != (a & 0xffffffffull))
            split[a & 0xffffffffull] = (int32_t)t;
    }
    if (t < nch && t < slots)
        chunks[t] = chunk_at(t, pscan, win_off, windows, ch);
}

// The whole schedule (window_stats, the scan of its packed counts, write_chunks) by one
// thread block when windows + 1 <= kScheduleSmallMax: one launch instead of three and CUB's
// host-side queries.  On ogbl-ddi (267 windows) those cost the host about 50 us after the
// placing pass was launched, as long as that pass ran on the GPU.  Same results as the three
// kernels: the scanned counts are kept in shared memory, where each chunk looks up its window.
constexpr int kScheduleSmallMax = kSmallScanThreads * kSmallScanItems;

__global__ void __launch_bounds__(kSmallScanThreads)
    schedule_small(const int32_t *win_off, int32_t windows, int sm_count, int32_t force,
                   int64_t slots, tc_chunk *chunks, int32_t *split, summary *sum)
{
    // warp scans: the default (raking) spilled at 1024 threads and 4 64-bit items a thread
    using Scan =
        cub::BlockScan<unsigned long long, kSmallScanThreads, cub::BLOCK_SCAN_WARP_SCANS>;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ unsigned long long ps[kScheduleSmallMax];
    __shared__ block_stats st;
    block_stats_clear(st);
    __syncthreads();
    const int32_t blocks = win_off[windows];
    const int32_t ch = chunk_len(blocks, sm_count, force);
    unsigned long long v[kSmallScanItems];
    unsigned split_bits = 0; // item i's window is split (scanned in place below)
    const int32_t first = (int32_t)threadIdx.x * kSmallScanItems;
#pragma unroll
    for (int i = 0; i < kSmallScanItems; i++) {
        const int32_t w = first + i;
        v[i] = w < windows ? window_entry(win_off[w + 1] - win_off[w], ch, st) : 0;
        split_bits |= (unsigned)(v[i] & 1ull) << i;
    }
    Scan(tmp).ExclusiveSum(v, v);
#pragma unroll
    for (int i = 0; i < kSmallScanItems; i++) {
        const int32_t w = first + i;
        if (w <= windows)
            ps[w] = v[i];
        if ((split_bits >> i) & 1u)
            split[v[i] & 0xffffffffull] = w;
    }
    __syncthreads();
    const int64_t nch = (int64_t)(ps[windows] >> 32);
    if (threadIdx.x < 16)
        sum->hist[threadIdx.x] = st.h[threadIdx.x];
    if (threadIdx.x == 0) {
        sum->empty = st.empty;
        sum->maxb = st.maxb;
        schedule_totals(sum, blocks, ch, ps[windows], slots);
    }
    for (int64_t t = threadIdx.x; t < nch && t < slots; t += blockDim.x)
        chunks[t] = chunk_at(t, ps, win_off, windows, ch);
}

// ---- rows ordered on the GPU (first-col ordering) ------------------------------------------
// The first-col ordering (docs/reorder.md: rows by smallest column, then degree, empty rows
// last) computed on the device for CSR: key = first column << dbits | degree, dbits =
// bits_for(cols + 1), the row's index as value, sorted stably by CUB, which gives the host
// ordering's permutation exactly (its key is first column << 32 | degree; a valid row holds
// at most cols nonzeros, and a longer one, which must repeat a column, is clamped here and
// refused by the counting pass).  32-bit keys when both fields fit (fewer radix passes).  A
// row with no valid column (empty, or only indices out of range, which the counting pass
// flags) takes cols as its first column.  Offsets are clamped into [0, nnz] and a decreasing
// pair reads as an empty row, so each row's range is inside [0, nnz]; once check_offsets (run
// before on the stream) has flagged them, every row reads as empty here (invalid offsets may
// overlap: [0, nnz, 0, nnz, ...] would make M / 2 rows of nnz each) and every window-local
// kernel stops before reading a nonzero.
template <int kLanes, class K> // lanes a row (8, or 32 for rows of 64 nonzeros on average)
__global__ void row_first_col(const void *off, int off64, const void *idx, int idx64,
                              int64_t rows, int64_t cols, int64_t nnz, int base, int dbits,
                              const int *flags, K *keys, int32_t *vals)
{
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t r = g / kLanes;
    const int l = (int)(g % kLanes);
    int64_t b = 0, e = 0;
    if (r < rows && !(*reinterpret_cast<const volatile int *>(flags) & kBadOffsets))
        row_range(off, off64, r, nnz, base, b, e);
    int64_t fc = cols;
    for (int64_t j = b + l; j < e; j += kLanes) {
        const int64_t c = ld_any(idx, idx64, j) - base;
        if (c >= 0 && c < cols && c < fc)
            fc = c;
    }
    for (int k = kLanes / 2; k > 0; k >>= 1) { // the lanes of a row are one aligned group
        const int64_t o = __shfl_xor_sync(0xffffffffu, fc, k, kLanes);
        fc = o < fc ? o : fc;
    }
    if (r < rows && l == 0) {
        const int64_t d = e - b < cols ? e - b : cols;
        keys[r] = (K)((unsigned long long)fc << dbits | (unsigned long long)d);
        vals[r] = (int32_t)r;
    }
}

// The degree of each plan row (the caller's row perm[i]), and 0 at [rows], for the scan that
// gives the plan's row offsets in the order.
__global__ void ordered_degrees(const void *off, int off64, const int32_t *perm, int64_t rows,
                                int64_t nnz, int base, int64_t *deg)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t b = 0, e = 0;
    if (i < rows)
        row_range(off, off64, perm[i], nnz, base, b, e);
    if (i <= rows)
        deg[i] = e - b;
}

// The plan's order from the two counting passes (one thread block): the ordered rows when
// their blocks are at most (1 - min_gain) of the caller's order's (min_gain < 0: always),
// else the caller's order, whose counts and column ranges then replace the ordered ones in
// nblk and crange, which the scan and the placing pass read.  The caller's order's total and
// the choice go to the summary, which the placing pass and fill_win_row read.
constexpr int kChooseThreads = 1024;
__global__ void __launch_bounds__(kChooseThreads)
    choose_order(const int32_t *nblk_id, const int2 *crange_id, int32_t *nblk, int2 *crange,
                 int32_t windows, double min_gain, summary *sum)
{
    using Reduce = cub::BlockReduce<long long, kChooseThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    __shared__ int take;
    long long a = 0, b = 0;
    for (int32_t w = threadIdx.x; w < windows; w += kChooseThreads) {
        a += nblk_id[w];
        b += nblk[w];
    }
    a = Reduce(tmp).Sum(a);
    __syncthreads();
    b = Reduce(tmp).Sum(b);
    if (threadIdx.x == 0) {
        take = min_gain < 0 || (double)b <= (1.0 - min_gain) * (double)a;
        sum->blocks_id = a;
        sum->ordered = take;
    }
    __syncthreads();
    if (!take)
        for (int32_t w = threadIdx.x; w < windows; w += kChooseThreads) {
            nblk[w] = nblk_id[w];
            if (crange != nullptr) // (the window-local path's)
                crange[w] = crange_id[w];
        }
}

// win_row of a plan whose rows the GPU ordered: the permutation, then -1 past the last row
// (nothing when choose_order kept the caller's order; ordered NULL: always).
__global__ void fill_win_row(const int32_t *perm, const int *ordered, int64_t rows,
                             int64_t slots, int32_t *win_row)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < slots && (ordered == nullptr || *ordered))
        win_row[i] = i < rows ? perm[i] : -1;
}

// row_new[perm[i]] = i: the sort path's form of the permutation (make_keys).
__global__ void invert_perm(const int32_t *perm, int64_t rows, int32_t *row_new)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows)
        row_new[perm[i]] = (int32_t)i;
}

// win_row[row_new[r]] = r for every row; the caller has set the padding positions to -1.
__global__ void scatter_win_row(const int32_t *row_new, int64_t rows, int64_t slots,
                                int32_t *win_row)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int32_t p = row_new[r];
    if (p >= 0 && p < slots)
        win_row[p] = (int32_t)r;
}

} // namespace tc
