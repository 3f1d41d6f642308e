// The CUDA-core CSR SpMM's schedule (tc_csr_sched, kernels.h), built on the GPU from the
// caller's row offsets: rows sorted by nonzeros descending (stable, so rows of one length keep
// their order and their neighbours' rows of B), rows longer than TC_CSR_PIECE first and cut
// into pieces of TC_CSR_PIECE.  Launched in this order a group a unit, the long rows start
// first and the short ones fill in behind them: on power-law matrices no single row holds up
// the end of the kernel (docs/performance.md, "CUDA cores").
//
// Steps, all on the caller's stream: each row's key (0 for a long row, else TC_CSR_PIECE + 1
// minus its length) sorted with the row numbers (a 9-bit radix sort); each sorted row's unit
// count, scanned into its first unit; the units written; then the counts read back (the one
// synchronisation).  Offsets that decrease are refused (found on the way, nothing written out
// of bounds).
#include <cstdint>
#include <cstdio>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include "kernels.h"
#include "spmm_kernel.cuh" // tc::csr_row_start

namespace {

constexpr int kPiece = TC_CSR_PIECE;
constexpr int kKeyBits = 9; // keys 0 .. kPiece + 1
static_assert(kPiece + 1 < (1 << kKeyBits), "the sort's keys must fit its bits");
constexpr int kThreads = 256;

struct Rows {
    const void *off;
    int off64, base;
    int64_t nnz;
    int32_t M;
};

// Row `row`'s first nonzero and length, its offsets clamped into [0, nnz]; false where its
// offsets decrease.
__device__ __forceinline__ bool row_range(const Rows &r, int32_t row, int32_t &s, int32_t &len)
{
    if (r.off == nullptr) { // no nonzeros, no offsets array (accepted as cuSPARSE does)
        s = len = 0;
        return true;
    }
    const int64_t a = tc::csr_row_start(r.off, r.off64, r.base, r.nnz, row);
    const int64_t b = tc::csr_row_start(r.off, r.off64, r.base, r.nnz, row + 1);
    s = (int32_t)a;
    len = b > a ? (int32_t)(b - a) : 0;
    return tc::csr_index(r.off, r.off64, row + 1) >= tc::csr_index(r.off, r.off64, row);
}

__device__ __forceinline__ int32_t units_of(int32_t len)
{
    return len > kPiece ? (len + kPiece - 1) / kPiece : 1;
}

// hdr[3] is set where offsets decrease: the lengths would then not sum to at most nnz.
__global__ void sched_keys(const Rows r, uint16_t *key, int32_t *row, int32_t *hdr)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r.M)
        return;
    int32_t s, len;
    if (!row_range(r, (int32_t)i, s, len))
        hdr[3] = 1;
    key[i] = (uint16_t)(len > kPiece ? 0 : kPiece + 1 - len);
    row[i] = (int32_t)i;
}

__global__ void sched_counts(const Rows r, const int32_t *sorted, int64_t *count)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r.M)
        return;
    int32_t s, len;
    row_range(r, sorted[i], s, len);
    count[i] = units_of(len);
}

// hdr: units, units of split rows, split rows (zero before: a structure without long rows
// leaves the last two 0), and 1 where the structure does not fit the layout's bounds (offsets
// that decrease), in which case nothing past them is written.
__global__ void sched_units(const Rows r, const int32_t *sorted, const int64_t *first,
                            int64_t max_units, int64_t max_split, int32_t *u_row,
                            int32_t *u_start, int32_t *u_len, int32_t *split, int32_t *hdr)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= r.M)
        return;
    const int32_t row = sorted[i];
    int32_t s, len;
    row_range(r, row, s, len);
    const int32_t n = units_of(len);
    const int64_t u0 = first[i];
    if (u0 + n > max_units || (len > kPiece && i >= max_split)) {
        hdr[3] = 1;
        return;
    }
    for (int32_t j = 0; j < n; ++j) {
        u_row[u0 + j] = row;
        u_start[u0 + j] = s + j * kPiece;
        u_len[u0 + j] = len - j * kPiece < kPiece ? len - j * kPiece : kPiece;
    }
    if (len > kPiece)
        split[i] = row; // long rows sort first: split rows 0 .. i
    if (i == r.M - 1)
        hdr[0] = (int32_t)(u0 + n);
    if (len > kPiece) {
        bool last_long = i == r.M - 1;
        if (!last_long) {
            int32_t s2, len2;
            row_range(r, sorted[i + 1], s2, len2);
            last_long = len2 <= kPiece;
        }
        if (last_long) {
            hdr[1] = (int32_t)(u0 + n);
            hdr[2] = (int32_t)(i + 1);
        }
    }
}

// The schedule's layout in its allocation: header, then the arrays.
struct Layout {
    int64_t max_units, max_split;
    size_t row, start, len, split, bytes;
};

Layout layout_of(int64_t M, int64_t nnz)
{
    Layout l{};
    // every row is at least one unit; a row of n > kPiece nonzeros is ceil(n / kPiece) <=
    // n / kPiece + 1 units, and fewer than nnz / (kPiece + 1) rows are that long
    l.max_split = nnz / (kPiece + 1);
    l.max_units = M + nnz / kPiece + 1;
    l.row = 16; // 4 int32 of header
    l.start = l.row + 4 * (size_t)l.max_units;
    l.len = l.start + 4 * (size_t)l.max_units;
    l.split = l.len + 4 * (size_t)l.max_units;
    l.bytes = l.split + 4 * (size_t)(l.max_split + 1);
    return l;
}

size_t cub_scratch(int M)
{
    size_t a = 0, b = 0;
    if (cub::DeviceRadixSort::SortPairs(nullptr, a, (const uint16_t *)nullptr,
                                        (uint16_t *)nullptr, (const int32_t *)nullptr,
                                        (int32_t *)nullptr, M, 0, kKeyBits) != cudaSuccess ||
        cub::DeviceScan::ExclusiveSum(nullptr, b, (const int64_t *)nullptr, (int64_t *)nullptr,
                                      M) != cudaSuccess)
        return 0;
    return (a > b ? a : b) + 256;
}

size_t round_up(size_t x) { return (x + 255) & ~(size_t)255; }

// The build's scratch, one allocation: two key arrays, two row arrays, the unit counts and
// first units, CUB's temporary storage (each part 256-byte aligned).
struct Scratch {
    size_t key1, row0, row1, count, first, cub, cub_bytes, bytes;
};

Scratch scratch_of(int32_t M)
{
    const size_t k2 = round_up(2 * (size_t)M), k4 = round_up(4 * (size_t)M),
                 k8 = round_up(8 * (size_t)M);
    Scratch x{};
    x.key1 = k2;
    x.row0 = 2 * k2;
    x.row1 = x.row0 + k4;
    x.count = x.row1 + k4;
    x.first = x.count + k8;
    x.cub = x.first + k8;
    x.cub_bytes = round_up(cub_scratch(M));
    x.bytes = x.cub + x.cub_bytes;
    return x;
}

} // namespace

extern "C" size_t tc_csr_sched_bytes(int64_t M, int64_t nnz, size_t *scratch)
{
    if (M < 0 || nnz < 0 || M >= INT32_MAX || nnz >= INT32_MAX ||
        layout_of(M, nnz).max_units >= INT32_MAX) {
        if (scratch != nullptr)
            *scratch = 0;
        return 0;
    }
    if (scratch != nullptr)
        *scratch = scratch_of((int32_t)M).bytes;
    return layout_of(M, nnz).bytes;
}

extern "C" void tc_csr_sched_free(tc_csr_sched *out)
{
    if (out->mem != nullptr)
        (void)cudaFree(out->mem);
    *out = tc_csr_sched{};
}

extern "C" tcsparseStatus_t tc_csr_sched_build(const tc_csr_arrays *csr, int64_t M,
                                               cudaStream_t s, tc_csr_sched *out, char *err,
                                               size_t errlen)
{
    *out = tc_csr_sched{};
    if (csr->transposed || M < 0 || csr->nnz < 0 || tc_csr_sched_bytes(M, csr->nnz, nullptr) == 0) {
        snprintf(err, errlen, "the CUDA-core schedule takes an untransposed CSR structure of "
                              "fewer than 2^31 rows and nonzeros");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "the CUDA-core schedule is not built inside a stream capture");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    const Layout l = layout_of(M, csr->nnz);
    const Rows r{csr->nnz > 0 ? csr->offsets : nullptr, csr->offsets_64, csr->base, csr->nnz,
                 (int32_t)M};
    char *mem = nullptr, *tmp = nullptr;
    const Scratch x = scratch_of((int32_t)M);
    cudaError_t e = cudaMalloc(&mem, l.bytes);
    if (e == cudaSuccess && M > 0)
        e = cudaMallocAsync(reinterpret_cast<void **>(&tmp), x.bytes, s);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (mem != nullptr)
            (void)cudaFree(mem);
        snprintf(err, errlen, "the CUDA-core schedule: allocating %zu bytes: %s",
                 l.bytes + x.bytes, cudaGetErrorString(e));
        return e == cudaErrorMemoryAllocation ? TCSPARSE_STATUS_ALLOC_FAILED
                                              : TCSPARSE_STATUS_EXECUTION_FAILED;
    }
    int32_t *hdr = reinterpret_cast<int32_t *>(mem);
    int32_t *u_row = reinterpret_cast<int32_t *>(mem + l.row);
    int32_t *u_start = reinterpret_cast<int32_t *>(mem + l.start);
    int32_t *u_len = reinterpret_cast<int32_t *>(mem + l.len);
    int32_t *split = reinterpret_cast<int32_t *>(mem + l.split);
    e = cudaMemsetAsync(hdr, 0, 16, s);
    if (e == cudaSuccess && M > 0) {
        uint16_t *key0 = reinterpret_cast<uint16_t *>(tmp);
        uint16_t *key1 = reinterpret_cast<uint16_t *>(tmp + x.key1);
        int32_t *row0 = reinterpret_cast<int32_t *>(tmp + x.row0);
        int32_t *row1 = reinterpret_cast<int32_t *>(tmp + x.row1);
        int64_t *count = reinterpret_cast<int64_t *>(tmp + x.count);
        int64_t *first = reinterpret_cast<int64_t *>(tmp + x.first);
        void *cub_tmp = tmp + x.cub;
        const unsigned blocks = (unsigned)((M + kThreads - 1) / kThreads);
        size_t cb = x.cub_bytes;
        sched_keys<<<blocks, kThreads, 0, s>>>(r, key0, row0, hdr);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cub::DeviceRadixSort::SortPairs(cub_tmp, cb, key0, key1, row0, row1, (int)M, 0,
                                                kKeyBits, s);
        if (e == cudaSuccess) {
            sched_counts<<<blocks, kThreads, 0, s>>>(r, row1, count);
            e = cudaGetLastError();
        }
        cb = x.cub_bytes;
        if (e == cudaSuccess)
            e = cub::DeviceScan::ExclusiveSum(cub_tmp, cb, count, first, (int)M, s);
        if (e == cudaSuccess) {
            sched_units<<<blocks, kThreads, 0, s>>>(r, row1, first, l.max_units, l.max_split,
                                                    u_row, u_start, u_len, split, hdr);
            e = cudaGetLastError();
        }
    }
    if (tmp != nullptr) {
        const cudaError_t f = cudaFreeAsync(tmp, s);
        if (e == cudaSuccess)
            e = f;
    }
    int32_t h[4] = {0, 0, 0, 0};
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(h, hdr, sizeof h, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaFree(mem);
        snprintf(err, errlen, "the CUDA-core schedule: building it on the GPU failed: %s",
                 cudaGetErrorString(e));
        return tc_launch_status(e);
    }
    if (h[3] != 0) {
        (void)cudaFree(mem);
        snprintf(err, errlen, "the CUDA-core schedule: the row offsets decrease");
        return TCSPARSE_STATUS_INVALID_VALUE;
    }
    out->mem = mem;
    out->bytes = l.bytes;
    out->row = u_row;
    out->start = u_start;
    out->len = u_len;
    out->split_rows = split;
    out->nunits = h[0];
    out->nsplit_units = h[1];
    out->nsplit_rows = h[2];
    return TCSPARSE_STATUS_SUCCESS;
}
