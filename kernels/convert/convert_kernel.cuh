// Kernels of the GPU CSR/CSC/COO -> ME-TCF conversion.  Two ways to the same arrays:
// * the sorted path (any input): one thread per nonzero, per window or per chunk throughout
//   (no thread walks a whole window, so a dense row costs what its nonzeros cost).  One sort,
//   by (window, column, row-in-window), condenses the columns; each block's nonzeros are then
//   ordered by position with a 128-bit occupancy mask per block (a nonzero's slot is the
//   number of occupied positions before its own), not a second sort;
// * the window-local path (CSR in the caller's row order, at most kLocalMaxCols columns): one
//   thread block per window, no sort (window_local below).
// The statistics and the balanced schedule follow either.
// This file holds the sorted path and the helpers every part uses; the window-local path
// (convert_local.cuh), the statistics and schedule (convert_schedule.cuh) and the GPU row
// ordering (convert_order.cuh) are included at its end.
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

} // namespace tc

// The other parts of the conversion, after the shared helpers above.
#include "convert_local.cuh"
#include "convert_schedule.cuh"
#include "convert_order.cuh"
