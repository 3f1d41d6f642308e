// Rows ordered on the GPU (the first-col ordering) and the row maps of an ordered plan.
#pragma once
#include "convert_kernel.cuh"

namespace tc {

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
