// Kernels of the GPU CSR/CSC/COO -> ME-TCF conversion.  One thread per nonzero or per
// window throughout: no thread walks a whole window, so a dense row costs what its nonzeros
// cost.  Sort keys: pass 1 (window, column, row-in-window) condenses columns; pass 2
// (block, position) orders each block's nonzeros by position.
#pragma once
#include <cstdint>

namespace tc {

enum : int { kBadOffsets = 1, kBadIndex = 2, kDuplicate = 4 };

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

__global__ void check_offsets(const void *off, int is64, int64_t dim, int64_t nnz, int base,
                              int *flags)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i > dim)
        return;
    int64_t v = ld_any(off, is64, i) - base;
    bool bad = (i == 0 && v != 0) || (i == dim && v != nnz) || v < 0 || v > nnz;
    if (i < dim && ld_any(off, is64, i + 1) - base < v)
        bad = true;
    if (bad)
        atomicOr(flags, kBadOffsets);
}

// Key 1 = window << (cbits + 4) | col << 4 | row & 15; value = position in caller's arrays.
// With row_new (a permutation of the rows), row r is placed at row row_new[r]: the value is
// still the caller's position, so val_idx needs no remapping.
__global__ void make_keys(int fmt_csr, int fmt_csc, const void *off, int off64, const void *idx,
                          int idx64, int64_t rows, int64_t cols, int64_t nnz, int base, int cbits,
                          const int32_t *row_new, unsigned long long *keys, int32_t *vals,
                          int *flags)
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
    keys[e] = ((unsigned long long)(r >> 4) << (cbits + 4)) | ((unsigned long long)c << 4) |
              (unsigned long long)(r & 15);
    vals[e] = (int32_t)e;
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

// Block and position of every nonzero; the column ids of every block.
__global__ void place(const unsigned long long *keys, const int32_t *vals, const int32_t *dist,
                      const int32_t *head, const int32_t *win_off, const int32_t *dfirst,
                      int64_t nnz, int shift, int32_t *blk_col, unsigned long long *keys2,
                      int32_t *vals2)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz)
        return;
    unsigned long long k = keys[i];
    int32_t w = (int32_t)(k >> shift);
    int32_t lc = dist[i] - dfirst[w];
    int32_t blk = win_off[w] + lc / 8;
    int cc = lc % 8;
    int row = (int)(k & 15);
    int pos = row * 8 + cc;
    if (head[i])
        blk_col[(int64_t)blk * 8 + cc] = (int32_t)((k >> 4) & ((1ull << (shift - 4)) - 1));
    keys2[i] = ((unsigned long long)blk << 7) | (unsigned long long)pos;
    vals2[i] = vals[i];
}

__global__ void finish(const unsigned long long *keys2, const int32_t *vals2, int64_t nnz,
                       int32_t blocks, uint8_t *blk_pos, int32_t *val_idx, int32_t *blk_off)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nnz)
        return;
    unsigned long long k = keys2[i];
    blk_pos[i] = (uint8_t)(k & 127);
    val_idx[i] = vals2[i];
    int32_t b = (int32_t)(k >> 7);
    if (i == 0 || (int32_t)(keys2[i - 1] >> 7) != b)
        blk_off[b] = (int32_t)i;
    if (i == nnz - 1)
        blk_off[blocks] = (int32_t)nnz;
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
