// Launcher of the GPU ME-TCF conversion (see convert_kernel.cuh for the method).
#include <cstdio>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include "../kernels.h"
#include "convert_kernel.cuh"

namespace {

int bits_for(int64_t v) // bits needed to represent values in [0, v)
{
    int b = 1;
    while (b < 63 && (1ll << b) < v)
        ++b;
    return b;
}

unsigned grid_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// All temporaries of one conversion: stream-ordered allocations from the device's memory
// pool (a plain cudaMalloc/cudaFree pair costs more than a whole conversion of a small
// matrix), freed together in stream order.
struct Scratch {
    cudaStream_t s;
    unsigned long long *k[2] = {nullptr, nullptr};
    int32_t *v[2] = {nullptr, nullptr};
    int32_t *head = nullptr, *dist = nullptr, *nblk = nullptr, *dfirst = nullptr;
    int *flags = nullptr;
    void *cub = nullptr;
    size_t cub_bytes = 0;
    explicit Scratch(cudaStream_t st) : s(st) {}
    template <class T> cudaError_t get(T **p, size_t bytes)
    {
        return cudaMallocAsync(reinterpret_cast<void **>(p), bytes ? bytes : 1, s);
    }
    ~Scratch()
    {
        void *all[] = {k[0], k[1], v[0], v[1], head, dist, nblk, dfirst, flags, cub};
        for (void *q : all)
            if (q)
                cudaFreeAsync(q, s);
    }
};

tcsparseStatus_t fail_cuda(cudaError_t e, const char *what, char *err, size_t n)
{
    snprintf(err, n, "ME-TCF conversion on the GPU: %s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? TCSPARSE_STATUS_ALLOC_FAILED
                                          : TCSPARSE_STATUS_EXECUTION_FAILED;
}

} // namespace

#define TC_CU(call, what)                                                                  \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            st = fail_cuda(e_, what, err, errlen);                                         \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)

extern "C" void tc_dev_metcf_free(tc_dev_metcf *m)
{
    cudaFree(m->win_off);
    cudaFree(m->blk_off); // one allocation holds blk_off, blk_col, val_idx and blk_pos
    cudaFree(m->win_row);
    *m = tc_dev_metcf{};
}

extern "C" tcsparseStatus_t tc_convert_gpu(const tc_convert_input *in, tc_dev_metcf *out,
                                           int32_t *host_win_off, cudaStream_t s, char *err,
                                           size_t errlen)
{
    using namespace tc;
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    Scratch x(s);
    tc_dev_metcf m{};
    const int T = 256;
    const int64_t nnz = in->nnz;
    const bool csr = in->format == TCSPARSE_FORMAT_CSR, csc = in->format == TCSPARSE_FORMAT_CSC;
    const int64_t dim = csr ? in->rows : in->cols;
    int host_flags = 0;
    int cbits, shift, wbits, bbits;
    int32_t windows;

    *out = tc_dev_metcf{};
    if (in->rows >= (1ll << 31) - 16 || in->cols >= (1ll << 31) || nnz >= (1ll << 31)) {
        snprintf(err, errlen, "ME-TCF conversion on the GPU: %lld x %lld with %lld nonzeros "
                 "exceeds the int32 tensor-core plan", (long long)in->rows,
                 (long long)in->cols, (long long)nnz);
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    windows = (int32_t)((in->rows + 15) / 16);
    m.rows = in->rows; m.cols = in->cols; m.nnz = nnz; m.windows = windows;
    cbits = bits_for(in->cols > 1 ? in->cols : 2);
    shift = cbits + 4;
    wbits = bits_for(windows > 1 ? windows : 2);

    TC_CU(cudaMalloc(&m.win_off, sizeof(int32_t) * (windows + 1)), "allocating win_off");
    TC_CU(x.get(&x.flags, sizeof(int)), "allocating flags");
    TC_CU(cudaMemsetAsync(x.flags, 0, sizeof(int), s), "clearing flags");
    // With no nonzeros cuSPARSE accepts NULL arrays, so nothing is read.
    if ((csr || csc) && nnz > 0)
        check_offsets<<<grid_for(dim + 1, T), T, 0, s>>>(in->offsets, in->offsets_64, dim, nnz,
                                                         in->base, x.flags);
    if (nnz == 0) {
        TC_CU(cudaMemsetAsync(m.win_off, 0, sizeof(int32_t) * (windows + 1), s), "win_off");
        if (host_win_off)
            memset(host_win_off, 0, sizeof(int32_t) * ((size_t)windows + 1));
        TC_CU(cudaMalloc(&m.blk_off, sizeof(int32_t)), "allocating blk_off");
        TC_CU(cudaMemsetAsync(m.blk_off, 0, sizeof(int32_t), s), "blk_off");
    } else {
        TC_CU(x.get(&x.k[0], 8 * nnz), "allocating keys");
        TC_CU(x.get(&x.k[1], 8 * nnz), "allocating keys");
        TC_CU(x.get(&x.v[0], 4 * nnz), "allocating values");
        TC_CU(x.get(&x.v[1], 4 * nnz), "allocating values");
        TC_CU(x.get(&x.head, 4 * nnz), "allocating heads");
        TC_CU(x.get(&x.dist, 4 * nnz), "allocating column ids");
        TC_CU(x.get(&x.nblk, 4 * ((int64_t)windows + 1)), "allocating block counts");
        TC_CU(x.get(&x.dfirst, 4 * ((int64_t)windows + 1)), "allocating window starts");
        make_keys<<<grid_for(nnz, T), T, 0, s>>>(csr, csc, in->offsets, in->offsets_64,
                                                 in->indices, in->indices_64, in->rows, in->cols,
                                                 nnz, in->base, cbits, in->row_new, x.k[0],
                                                 x.v[0], x.flags);
        TC_CU(cudaGetLastError(), "launching make_keys");

        // One CUB workspace big enough for both sorts and the scans.
        {
            size_t a = 0, b = 0, c = 0;
            cub::DoubleBuffer<unsigned long long> dk(x.k[0], x.k[1]);
            cub::DoubleBuffer<int32_t> dv(x.v[0], x.v[1]);
            TC_CU(cub::DeviceRadixSort::SortPairs(nullptr, a, dk, dv, nnz, 0, 64, s), "sizing sort");
            TC_CU(cub::DeviceScan::InclusiveSum(nullptr, b, x.head, x.dist, nnz, s), "sizing scan");
            TC_CU(cub::DeviceScan::ExclusiveSum(nullptr, c, x.nblk, m.win_off, windows + 1, s),
                  "sizing scan");
            x.cub_bytes = a > b ? a : b;
            x.cub_bytes = x.cub_bytes > c ? x.cub_bytes : c;
            TC_CU(x.get(&x.cub, x.cub_bytes), "allocating sort workspace");
        }
        int cur;
        {
            cub::DoubleBuffer<unsigned long long> dk(x.k[0], x.k[1]);
            cub::DoubleBuffer<int32_t> dv(x.v[0], x.v[1]);
            TC_CU(cub::DeviceRadixSort::SortPairs(x.cub, x.cub_bytes, dk, dv, nnz, 0,
                                                  shift + wbits, s), "sorting by column");
            cur = dk.selector; // both buffers move together
        }
        const unsigned long long *k1 = x.k[cur];
        const int32_t *v1 = x.v[cur];
        mark_heads<<<grid_for(nnz, T), T, 0, s>>>(k1, nnz, x.head, x.flags);
        TC_CU(cub::DeviceScan::InclusiveSum(x.cub, x.cub_bytes, x.head, x.dist, nnz, s),
              "numbering columns");
        window_blocks<<<grid_for((int64_t)windows + 1, T), T, 0, s>>>(k1, x.dist, nnz, windows,
                                                                       shift, x.nblk, x.dfirst);
        TC_CU(cub::DeviceScan::ExclusiveSum(x.cub, x.cub_bytes, x.nblk, m.win_off, windows + 1, s),
              "window offsets");
        // the caller's copy of the window offsets comes with the one synchronisation needed
        // to size the block arrays
        if (host_win_off)
            TC_CU(cudaMemcpyAsync(host_win_off, m.win_off, sizeof(int32_t) * ((size_t)windows + 1),
                                  cudaMemcpyDeviceToHost, s), "reading window offsets");
        else
            TC_CU(cudaMemcpyAsync(&m.blocks, m.win_off + windows, sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, s), "reading block count");
        TC_CU(cudaMemcpyAsync(&host_flags, x.flags, sizeof(int), cudaMemcpyDeviceToHost, s),
              "reading flags");
        TC_CU(cudaStreamSynchronize(s), "first pass");
        if (host_flags)
            goto invalid; // every check ran in the first pass: the second cannot fail one
        if (host_win_off)
            m.blocks = host_win_off[windows];

        {
            // the plan's block arrays share one allocation, each part 16-byte aligned
            const size_t a_off = 0, a_col = a_off + (((size_t)m.blocks + 1) * 4 + 15) / 16 * 16;
            const size_t a_val = a_col + (size_t)m.blocks * 32, a_pos = a_val + (size_t)nnz * 4;
            char *base = nullptr;
            TC_CU(cudaMalloc(&base, a_pos + (size_t)nnz), "allocating the block arrays");
            m.blk_off = reinterpret_cast<int32_t *>(base + a_off);
            m.blk_col = reinterpret_cast<int32_t *>(base + a_col);
            m.val_idx = reinterpret_cast<int32_t *>(base + a_val);
            m.blk_pos = reinterpret_cast<uint8_t *>(base + a_pos);
        }
        TC_CU(cudaMemsetAsync(m.blk_col, 0xff, sizeof(int32_t) * 8 * (int64_t)m.blocks, s), "padding");
        unsigned long long *k2 = x.k[cur ^ 1];
        int32_t *v2 = x.v[cur ^ 1];
        place<<<grid_for(nnz, T), T, 0, s>>>(k1, v1, x.dist, x.head, m.win_off, x.dfirst, nnz,
                                             shift, m.blk_col, k2, v2);
        TC_CU(cudaGetLastError(), "launching place");
        bbits = bits_for((int64_t)m.blocks + 1);
        {
            cub::DoubleBuffer<unsigned long long> dk(k2, x.k[cur]);
            cub::DoubleBuffer<int32_t> dv(v2, x.v[cur]);
            TC_CU(cub::DeviceRadixSort::SortPairs(x.cub, x.cub_bytes, dk, dv, nnz, 0, 7 + bbits, s),
                  "sorting by block");
            finish<<<grid_for(nnz, T), T, 0, s>>>(dk.Current(), dv.Current(), nnz, m.blocks,
                                                   m.blk_pos, m.val_idx, m.blk_off);
            TC_CU(cudaGetLastError(), "launching finish");
        }
    }
    if (in->row_new != nullptr && in->rows > 0) { // the caller's row of each window row
        const int64_t slots = (int64_t)windows * 16;
        TC_CU(cudaMalloc(&m.win_row, sizeof(int32_t) * slots), "allocating win_row");
        TC_CU(cudaMemsetAsync(m.win_row, 0xff, sizeof(int32_t) * slots, s), "padding win_row");
        scatter_win_row<<<grid_for(in->rows, T), T, 0, s>>>(in->row_new, in->rows, slots,
                                                             m.win_row);
        TC_CU(cudaGetLastError(), "launching scatter_win_row");
    }
    // finished before returning: the plan may next be used on another stream
    TC_CU(cudaStreamSynchronize(s), "conversion");
    *out = m;
    return TCSPARSE_STATUS_SUCCESS;

invalid:
    snprintf(err, errlen, "ME-TCF conversion on the GPU: %s",
             (host_flags & kBadOffsets) ? "offsets array is not a valid prefix sum of nnz entries"
             : (host_flags & kBadIndex) ? "an index is outside the matrix (check the index base)"
                                        : "duplicate entries (same row and column)");
    st = TCSPARSE_STATUS_INVALID_VALUE;
done:
    tc_dev_metcf_free(&m);
    return st;
}
