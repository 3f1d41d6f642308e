// Launcher of the GPU ME-TCF conversion (see convert_kernel.cuh for the method): the
// window-local kernels' shared memory (local_ready) and tc_convert_gpu; the conversion's memory
// and side stream are in convert_resources.cu.  One file because every kernel of the
// conversion is instantiated here, in the object where local_ready sets their attributes (an
// instance taken in another .cu would be another copy of the kernel), and the paths of
// tc_convert_gpu share its locals, the layout of the plan and of the scratch.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include "config.h"
#include "kernels.h"
#include "occupancy_cache.cuh"
#include "convert_kernel.cuh"
#include "convert_resources.cuh"

using namespace tc_convert;

namespace tc_convert {
int local_state[64]; // 0 not tried, 1 ready, -1 not possible (local_ready)
} // namespace tc_convert

namespace {

int bits_for(int64_t v) // bits needed to represent values in [0, v)
{
    int b = 1;
    while (b < 63 && (1ll << b) < v)
        ++b;
    return b;
}

unsigned grid_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

// Once per device: the long window_local kernels' limit of dynamic shared memory raised to
// their largest bitmap (kLocalMaxSmem), if the device can give that plus their static shared
// memory to a thread block.  One value for every matrix: a limit fitted to each would race
// with other threads' launches (a smaller limit set between another thread's setting and
// its launch made that launch fail).  False: the conversion takes the sort.
constexpr int kLocalMaxSmem = (int)(2 * sizeof(unsigned) * (tc::kLocalMaxCols / 32));
// Per device, filled with local_state: shared memory an SM has, and that each thread block
// takes besides its dynamic part (the runtime's reserve and the largest static shared memory
// of the long kinds' kernels): for the staging area's fit (local_fit_stage).
struct LocalSmem {
    int per_sm, per_block;
};
LocalSmem local_smem_info[64];

// The placing pass's staging area (stage_cap nonzeros, 5 bytes each) shrunk, when that lets
// its thread blocks run in fewer waves, to the largest that does so and still holds a mean
// window (min_cap): a pass of one thread block a window (kBothKind: blocks = windows), whose
// blocks the staging area limits to fewer an SM than threads and registers allow
// (tc_fit_stage, metcf_rules.h).  ogbl-ddi (267 windows, 132 SMs): a 60 KB staging area left
// 2 thread blocks an SM, 264 windows in a first wave and 3 in a second; fitted, 3 an SM take
// them in one.  That alone did not make the pass faster (58.0 -> 59.5 us): its busiest SM
// bounded it, which the windows' order addresses (docs/performance.md, "Plan build").
int local_fit_stage(int stage_cap, int64_t min_cap, int64_t blocks, int sm_count,
                    size_t local_smem, int bps_max)
{
    const int dev = pool_device();
    if (dev < 0 || stage_cap <= 0 || sm_count <= 0 || bps_max <= 1)
        return stage_cap;
    LocalSmem li;
    {
        std::lock_guard<std::mutex> g(pool_mu);
        li = local_smem_info[dev];
    }
    return tc_fit_stage(stage_cap, min_cap, blocks, sm_count, (int64_t)local_smem, bps_max,
                        li.per_sm, li.per_block); // metcf_rules.h
}

bool local_ready()
{
    const int dev = pool_device();
    if (dev < 0)
        return false;
    std::lock_guard<std::mutex> g(pool_mu);
    if (local_state[dev] == 0) {
        int optin = 0;
        // (and the kernels of rows ordered on the GPU, kOrd)
        const void *fns[8] = {(const void *)tc::window_local<false, tc::kLongKind>,
                              (const void *)tc::window_local<true, tc::kLongKind>,
                              (const void *)tc::window_local<false, tc::kBothKind>,
                              (const void *)tc::window_local<true, tc::kBothKind>,
                              (const void *)tc::window_local<false, tc::kLongKind, true>,
                              (const void *)tc::window_local<true, tc::kLongKind, true>,
                              (const void *)tc::window_local<false, tc::kBothKind, true>,
                              (const void *)tc::window_local<true, tc::kBothKind, true>};
        bool ok = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) ==
                  cudaSuccess;
        int per_sm = 0, reserve = 0;
        size_t static_max = 0;
        for (int i = 0; ok && i < 8; i++) {
            cudaFuncAttributes a{};
            ok = cudaFuncGetAttributes(&a, fns[i]) == cudaSuccess &&
                 a.sharedSizeBytes + kLocalMaxSmem <= (size_t)optin &&
                 cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      kLocalMaxSmem) == cudaSuccess;
            static_max = a.sharedSizeBytes > static_max ? a.sharedSizeBytes : static_max;
        }
        if (ok &&
            (cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) !=
                 cudaSuccess ||
             cudaDeviceGetAttribute(&reserve, cudaDevAttrReservedSharedMemoryPerBlock, dev) !=
                 cudaSuccess))
            per_sm = 0; // unknown: the staging area is not fitted (local_fit_stage)
        local_smem_info[dev] = LocalSmem{per_sm, reserve + (int)static_max};
        if (!ok)
            (void)cudaGetLastError();
        // The other kernels of this path loaded now, at the device's first build (which pays
        // for the pool and the loading of the kernels above anyway), rather than lazily at the
        // first build that needs them: a build after one of another shape loaded its own
        // (ogbl-ddi after mdual on the H100: 0.25 ms against 0.17, 0.20 with
        // CUDA_MODULE_LOADING=EAGER).  cudaFuncGetAttributes loads a kernel.
        const void *more[] = {(const void *)tc::check_offsets,
                              (const void *)tc::check_offsets_small,
                              (const void *)tc::scan_small,
                              (const void *)tc::schedule_small,
                              (const void *)tc::window_stats,
                              (const void *)tc::write_chunks,
                              (const void *)tc::window_local<false, tc::kShortKind>,
                              (const void *)tc::window_local<true, tc::kShortKind>,
                              (const void *)tc::find_long_windows<false>,
                              (const void *)tc::find_long_windows<true>};
        for (const void *f : more) {
            cudaFuncAttributes a{};
            (void)cudaFuncGetAttributes(&a, f);
        }
        (void)cudaGetLastError();
        local_state[dev] = ok ? 1 : -1;
    }
    return local_state[dev] > 0;
}

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

extern "C" int tc_convert_can_order(const tc_convert_input *in)
{
    return in->format == TCSPARSE_FORMAT_CSR && in->row_new == nullptr;
}

extern "C" tc_plan_layout tc_plan_layout_of(int64_t rows, int64_t cols, int64_t nnz,
                                            int chunk_blocks, int win_rows)
{
    tc_plan_layout l{};
    l.windows = (rows + 15) / 16;
    l.blocks_bound = (nnz + 7 * (l.windows < nnz ? l.windows : nnz)) / 8;
    if (l.windows * ((cols + 7) / 8) < l.blocks_bound)
        l.blocks_bound = l.windows * ((cols + 7) / 8);
    l.slots = l.windows + l.blocks_bound / (chunk_blocks > 0 ? chunk_blocks : 16) + 1;
    const size_t w = (size_t)l.windows, b = (size_t)l.blocks_bound;
    l.blk_off = align16(4 * (w + 1));
    l.blk_col = l.blk_off + align16(4 * (b + 1));
    l.val_idx = l.blk_col + 32 * b;
    l.blk_pos = l.val_idx + align16(4 * (size_t)nnz);
    l.chunks = l.blk_pos + align16((size_t)nnz);
    l.split = l.chunks + 16 * (size_t)l.slots;
    l.win_row = align16(l.split + 4 * w);
    l.bytes = win_rows ? l.win_row + 4 * 16 * w : l.split + 4 * w + 1;
    return l;
}

extern "C" tcsparseStatus_t tc_convert_gpu(const tc_convert_input *in, tc_dev_metcf *out,
                                           tc_convert_extra *xo, cudaStream_t s, char *err,
                                           size_t errlen)
{
    using namespace tc;
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    Scratch x(s);
    SideFork side(s); // after x: joined before the scratch is released
    cudaStream_t ss = s; // the schedule's stream (side.fork())
    tc_dev_metcf m{};
    const int T = 256;
    const int64_t nnz = in->nnz;
    const bool csr = in->format == TCSPARSE_FORMAT_CSR, csc = in->format == TCSPARSE_FORMAT_CSC;
    const int64_t dim = csr ? in->rows : in->cols;
    summary host{};
    int cbits, shift, wbits;
    int32_t windows;
    int64_t bub, slots;
    size_t cub_bytes = 0, dev_bytes = 0;
    unsigned long long *k0, *k1, *packed, *pscan;
    int32_t *v0, *v1, *head, *dist, *nblk, *dfirst, *split;
    int2 *crange;
    int32_t *long_list = nullptr; // window_local's long windows (find_long_windows)
    unsigned *occ;
    tc_chunk *chunks;
    summary *sum;
    void *cub;

    *out = tc_dev_metcf{};
    caches_follow_context();
    if (in->rows >= (1ll << 31) - 16 || in->cols >= (1ll << 31) || nnz >= (1ll << 31)) {
        snprintf(err, errlen, "ME-TCF conversion on the GPU: %lld x %lld with %lld nonzeros "
                 "exceeds the int32 tensor-core plan", (long long)in->rows,
                 (long long)in->cols, (long long)nnz);
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    windows = (int32_t)((in->rows + 15) / 16);
    // The kernels below run before the validation flags are read; every index they derive
    // stays inside the arrays for any input (keys are built from clamped rows and columns),
    // except with no window at all to place nonzeros in.
    if ((windows == 0 || in->cols == 0) && nnz > 0) {
        snprintf(err, errlen, "ME-TCF conversion on the GPU: a %lld x %lld matrix cannot hold "
                 "%lld nonzeros", (long long)in->rows, (long long)in->cols, (long long)nnz);
        return TCSPARSE_STATUS_INVALID_VALUE;
    }
    m.rows = in->rows; m.cols = in->cols; m.nnz = nnz; m.windows = windows;
    cbits = bits_for(in->cols > 1 ? in->cols : 2);
    shift = cbits + 4;
    wbits = bits_for(windows > 1 ? windows : 2);
    const bool narrow = shift + wbits <= 32; // the sort's keys fit 32 bits
    // CSR in the caller's row order with few enough columns for a bitmap: window by window
    bool local = csr && in->row_new == nullptr && in->cols <= kLocalMaxCols && xo->method != 1;
    const int wmax = (int)((in->cols + 31) / 32);
    const size_t local_smem = 2 * sizeof(unsigned) * (size_t)wmax;
    if (local && !local_ready())
        local = false; // the device cannot give the long kernel its shared memory: the sort
    // The long placing kernel stages a window's output in shared memory when it fits (see
    // there): room for about 1.5 times the mean window, within the shared memory the kernel
    // was given (kLocalMaxSmem); none when windows are mostly short, whose kernel does not
    // stage.  TCSPARSE_X_CONVERT_STAGE=0 turns it off.
    int stage_cap = 0;
    {
        const bool stage_off = !tc_config_get()->convert.stage;
        const int64_t mean = windows > 0 ? nnz / windows : 0;
        if (local && !stage_off && mean > kShortMax) {
            const int64_t want = (mean + mean / 2 + 255) / 256 * 256;
            const int64_t room = ((int64_t)kLocalMaxSmem - (int64_t)local_smem) / 5 / 16 * 16;
            stage_cap = (int)(want < room ? want : room);
        }
    }
    xo->used_local = local && nnz > 0;
    // the window-local passes: one kernel of one thread block a window for both kinds of
    // window when windows are few and the bitmap small (see there)
    const bool both = local && windows <= kBothMaxWindows && local_smem <= kBothMaxBitmap;
    bool have_order = false; // long_list holds both's order of the windows (check_offsets_small)
    bool merged_scan = false; // the counting pass scans the block counts (count_then_scan)
    // Rows ordered on the GPU (first-col): on the window-local path (gperm) or through the sort
    // (gsort: wider matrices; the permutation as row_new would be).  With a gain asked for,
    // both orders are counted and one chosen on the device (through the sort that costs a
    // second sort of the nonzeros, and a third when the caller's order is kept).
    const bool gwant = csr && nnz > 0 && in->rows > 1 && in->row_new == nullptr &&
                       in->gpu_order == TC_GPU_ORDER_FIRST_COL;
    const bool gperm = gwant && local;
    const bool gsort = gwant && !local;
    const bool gkeys = gperm || gsort;
    // the order always taken: the caller's order is not counted (window-local path too)
    const bool galways = gkeys && in->gpu_order_min_gain < 0;
    xo->gpu_ordered = 0;
    xo->blocks_unordered = 0;
    const int64_t M = in->rows;
    // the rows' keys: first column (<= cols) and degree (clamped to cols), 32 bits when they fit
    const int dbits = bits_for(in->cols + 1), kbits = 2 * dbits;
    const bool key32 = kbits <= 32;
    unsigned long long *rk0 = nullptr, *rk1 = nullptr;
    int32_t *rv0 = nullptr, *rv1 = nullptr, *perm = nullptr, *row_new = nullptr;
    int64_t *pro = nullptr;
    int32_t *nblk_id = nullptr;
    int2 *crange_id = nullptr;
    // Upper bounds: a window with d distinct columns has ceil(d / 8) <= (d + 7) / 8 blocks,
    // and d <= its nonzeros and d <= cols (the second bound is the tighter one for matrices
    // of few columns, whose windows are dense); every window has at least one chunk and a
    // window of b >= 1 blocks at most 1 + (b - 1) / length of them.
    const tc_plan_layout lay = tc_plan_layout_of(in->rows, in->cols, nnz, xo->force_chunk, gkeys);
    bub = lay.blocks_bound;
    slots = lay.slots;
    if (bub >= (1ll << 31) - 1 || slots >= (1ll << 31) - 1) {
        snprintf(err, errlen, "ME-TCF conversion on the GPU: %lld nonzeros exceed the int32 "
                 "tensor-core plan's block arrays", (long long)nnz);
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }

    // The plan: one allocation, each part 16-byte aligned, from the conversion's pool (the
    // memory of earlier plans and scratch, kept mapped up to keep_scratch bytes), else from
    // cudaMalloc.  cudaMalloc blocks the host for 0.15-0.5 ms on the H100, longer than the
    // first kernels it is made behind; from the pool, once warm, it costs microseconds.
    auto alloc_plan = [&]() -> cudaError_t {
        dev_bytes = lay.bytes;
        char *base = nullptr;
        cudaError_t e = cudaErrorMemoryAllocation;
        if (cudaMemPool_t p = scratch_pool(xo->keep_scratch, s)) {
            e = cudaMallocFromPoolAsync(reinterpret_cast<void **>(&base), dev_bytes, p, s);
            if (e == cudaErrorMemoryAllocation && pool_trim(p, s))
                e = cudaMallocFromPoolAsync(reinterpret_cast<void **>(&base), dev_bytes, p, s);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                base = nullptr;
            }
        }
        m.pooled = e == cudaSuccess;
        if (!m.pooled)
            e = cudaMalloc(&base, dev_bytes);
        if (e != cudaSuccess)
            return e;
        m.win_off = reinterpret_cast<int32_t *>(base);
        m.blk_off = reinterpret_cast<int32_t *>(base + lay.blk_off);
        m.blk_col = reinterpret_cast<int32_t *>(base + lay.blk_col);
        m.val_idx = reinterpret_cast<int32_t *>(base + lay.val_idx);
        m.blk_pos = reinterpret_cast<uint8_t *>(base + lay.blk_pos);
        chunks = reinterpret_cast<tc_chunk *>(base + lay.chunks);
        split = reinterpret_cast<int32_t *>(base + lay.split);
        m.win_row = gkeys ? reinterpret_cast<int32_t *>(base + lay.win_row) : nullptr;
        m.win_row_inside = gkeys;
        return cudaSuccess;
    };
    // The window offsets from the block counts: one thread block when windows are few (the
    // counts' slot `windows` is then not read), else CUB.
    const bool small_scan = (int64_t)windows + 1 <= kSmallScanMax;
    // schedule_small: few windows, and chunk slots few enough for one thread block to write
    // (a forced chunk length of 1 on 4095 windows of many blocks would not be)
    const bool small_sched = (int64_t)windows + 1 <= kScheduleSmallMax && slots <= (1 << 18);
    // first-col on the GPU: the rows' keys (first column, degree), sorted stably by CUB into
    // perm (the caller's row of each plan row); after check_offsets, which they read
    auto order_rows = [&]() -> cudaError_t {
        auto sort = [&](auto *k0, auto *k1) -> cudaError_t {
            using K = std::remove_pointer_t<decltype(k0)>;
            if (nnz >= 64 * M)
                row_first_col<32, K><<<grid_for(M * 32, T), T, 0, s>>>(
                    in->offsets, in->offsets_64, in->indices, in->indices_64, M, in->cols, nnz,
                    in->base, dbits, &sum->flags, k0, rv0);
            else
                row_first_col<8, K><<<grid_for(M * 8, T), T, 0, s>>>(
                    in->offsets, in->offsets_64, in->indices, in->indices_64, M, in->cols, nnz,
                    in->base, dbits, &sum->flags, k0, rv0);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                return e;
            cub::DoubleBuffer<K> rk(k0, k1);
            cub::DoubleBuffer<int32_t> rv(rv0, rv1);
            e = cub::DeviceRadixSort::SortPairs(cub, cub_bytes, rk, rv, M, 0, kbits, s);
            perm = rv.Current();
            return e;
        };
        return key32 ? sort(reinterpret_cast<unsigned *>(rk0), reinterpret_cast<unsigned *>(rk1))
                     : sort(rk0, rk1);
    };
    auto window_offsets = [&]() -> cudaError_t {
        if (!small_scan)
            return cub::DeviceScan::ExclusiveSum(cub, cub_bytes, nblk, m.win_off, windows + 1, s);
        scan_small<<<1, kSmallScanThreads, 0, s>>>(nblk, windows, m.win_off);
        return cudaGetLastError();
    };
    {
        // CUB's workspace, big enough for the sort and every scan
        size_t a = 0, b = 0, c = 0, d = 0;
        if (nnz > 0 && !local) {
            cub::DoubleBuffer<unsigned long long> dk(nullptr, nullptr);
            cub::DoubleBuffer<int32_t> dv(nullptr, nullptr);
            if (narrow) {
                cub::DoubleBuffer<unsigned> d32(nullptr, nullptr);
                TC_CU(cub::DeviceRadixSort::SortPairs(nullptr, a, d32, dv, nnz, 0, 32, s),
                      "sizing sort");
            } else {
                TC_CU(cub::DeviceRadixSort::SortPairs(nullptr, a, dk, dv, nnz, 0, 64, s),
                      "sizing sort");
            }
            TC_CU(cub::DeviceScan::InclusiveSum(nullptr, b, (int32_t *)nullptr, (int32_t *)nullptr,
                                                nnz, s), "sizing scan");
        }
        if (!small_scan)
            TC_CU(cub::DeviceScan::ExclusiveSum(nullptr, c, (int32_t *)nullptr,
                                                (int32_t *)nullptr, windows + 1, s),
                  "sizing scan");
        if (!small_sched)
            TC_CU(cub::DeviceScan::ExclusiveSum(nullptr, d, (unsigned long long *)nullptr,
                                                (unsigned long long *)nullptr, windows + 1, s),
                  "sizing scan");
        if (gkeys) { // the rows' keys sorted, (gperm) the ordered degrees scanned
            size_t e = 0, f = 0;
            cub::DoubleBuffer<int32_t> dv(nullptr, nullptr);
            if (key32) {
                cub::DoubleBuffer<unsigned> dk(nullptr, nullptr);
                TC_CU(cub::DeviceRadixSort::SortPairs(nullptr, e, dk, dv, M, 0, kbits, s),
                      "sizing the rows' sort");
            } else {
                cub::DoubleBuffer<unsigned long long> dk(nullptr, nullptr);
                TC_CU(cub::DeviceRadixSort::SortPairs(nullptr, e, dk, dv, M, 0, kbits, s),
                      "sizing the rows' sort");
            }
            TC_CU(cub::DeviceScan::ExclusiveSum(nullptr, f, (int64_t *)nullptr,
                                                (int64_t *)nullptr, M + 1, s),
                  "sizing scan");
            a = a > e ? a : e;
            a = a > f ? a : f;
        }
        cub_bytes = a > b ? a : b;
        cub_bytes = cub_bytes > c ? cub_bytes : c;
        cub_bytes = cub_bytes > d ? cub_bytes : d;
        const size_t n = local ? 0 : (size_t)nnz, w1 = (size_t)windows + 1;
        const size_t total = 2 * align16(8 * n) + 4 * align16(4 * n) + align16(16 * (size_t)bub) +
                             3 * align16(4 * w1) + (small_sched ? 1 : 3) * align16(8 * w1) +
                             align16(sizeof(summary)) +
                             align16(cub_bytes) + 16 +
                             (gkeys ? 2 * align16(8 * ((size_t)M + 1)) + 2 * align16(4 * (size_t)M)
                                    : 0) +
                             (gperm ? align16(8 * ((size_t)M + 1)) : 0) +
                             (gsort ? align16(4 * (size_t)M) : 0) +
                             (gkeys && !galways ? align16(4 * ((size_t)windows + 1)) : 0) +
                             (gperm && !galways ? align16(8 * ((size_t)windows + 1)) : 0);
        TC_CU(x.alloc(total, xo->keep_scratch), "allocating scratch");
        k0 = x.take<unsigned long long>(8 * n);
        k1 = x.take<unsigned long long>(8 * n);
        v0 = x.take<int32_t>(4 * n);
        v1 = x.take<int32_t>(4 * n);
        head = x.take<int32_t>(4 * n);
        dist = x.take<int32_t>(4 * n);
        occ = x.take<unsigned>(16 * (size_t)bub);
        nblk = x.take<int32_t>(4 * w1);
        crange = x.take<int2>(local ? 8 * w1 : 0);
        long_list = x.take<int32_t>(local ? 4 * w1 : 0);
        dfirst = x.take<int32_t>(4 * w1);
        packed = x.take<unsigned long long>(small_sched ? 0 : 8 * w1);
        pscan = x.take<unsigned long long>(small_sched ? 0 : 8 * w1);
        sum = x.take<summary>(sizeof(summary));
        cub = x.take<char>(cub_bytes);
        if (gkeys) { // each only where it is used (NULL elsewhere)
            rk0 = x.take<unsigned long long>(8 * ((size_t)M + 1));
            rk1 = x.take<unsigned long long>(8 * ((size_t)M + 1));
            rv0 = x.take<int32_t>(4 * (size_t)M);
            rv1 = x.take<int32_t>(4 * (size_t)M);
            if (gperm) // the ordered rows' offsets
                pro = x.take<int64_t>(8 * ((size_t)M + 1));
            if (gsort) // the permutation as the sort path's row_new
                row_new = x.take<int32_t>(4 * (size_t)M);
            if (!galways) // the caller's order counted
                nblk_id = x.take<int32_t>(4 * ((size_t)windows + 1));
            if (gperm && !galways)
                crange_id = x.take<int2>(8 * ((size_t)windows + 1));
        }
    }
    {
        // The summary cleared, then the offsets checked (CSR, CSC): they run first, and every
        // window-local kernel stops once they are flagged.  NULL arrays are accepted with no
        // nonzeros (as cuSPARSE does); offsets given must still be all equal to the base, or
        // the cuSPARSE route would read past them.  Up to kSmallScanMax offsets, one thread
        // block does both (one launch instead of a memset and a launch).
        const bool check = (csr || csc) && (nnz > 0 || in->offsets != nullptr);
        if (dim + 1 <= kSmallScanMax) {
            // and, for the window-local passes of one thread block a window, the windows'
            // order (tc_snake_rank) in long_list, which those passes do not otherwise use
            // (not when every pass runs on rows ordered on the GPU, which take no order)
            have_order = local && both && nnz > 0 && !(gperm && galways) &&
                         windows <= (int64_t)kSmallScanThreads * kSmallScanItems;
            check_offsets_small<<<1, kSmallScanThreads, 0, s>>>(
                check ? in->offsets : nullptr, in->offsets_64, dim, nnz, in->base, sum,
                have_order ? in->offsets : nullptr, windows, have_order ? long_list : nullptr);
            TC_CU(cudaGetLastError(), "launching check_offsets_small");
        } else {
            TC_CU(cudaMemsetAsync(sum, 0, sizeof(summary), s), "clearing the summary");
            if (check) {
                check_offsets<<<grid_for(dim + 1, T), T, 0, s>>>(in->offsets, in->offsets_64,
                                                                 dim, nnz, in->base, &sum->flags);
                TC_CU(cudaGetLastError(), "launching check_offsets");
            }
        }
    }
    if (nnz == 0) {
        TC_CU(alloc_plan(), "allocating the plan");
        TC_CU(cudaMemsetAsync(m.win_off, 0, sizeof(int32_t) * ((size_t)windows + 1), s), "win_off");
        TC_CU(cudaMemsetAsync(m.blk_off, 0, sizeof(int32_t), s), "blk_off");
        side.mark();
    } else if (local) {
        if (!small_scan)
            TC_CU(cudaMemsetAsync(nblk + windows, 0, sizeof(int32_t), s), "clearing nblk");
        // A pass (counting, then placing) over every window: long windows (the bitmap; they
        // take longest, so they go first), then short ones (one nonzero a thread); one kernel
        // for both when windows are few and the bitmap small (every block of that kernel
        // holds the long windows' shared memory, short windows' too).  The counting pass
        // writes nblk and crange, the placing pass the plan (staging long windows' output in
        // stage_cap nonzeros).
        int pass = 0; // the summary's long-window counters of each pass (lq)
        auto local_pass = [&](auto place) {
            constexpr bool kPlace = decltype(place)::value;
            int cap = kPlace ? stage_cap : 0;
            if (kPlace && both && cap > 0) { // one thread block a window: fit the waves
                auto kernel = perm != nullptr ? window_local<true, kBothKind, true>
                                              : window_local<true, kBothKind>;
                int bps_max = 0;
                if (cached_occupancy(&bps_max, (const void *)kernel, kLongThreads, local_smem) !=
                    cudaSuccess) {
                    (void)cudaGetLastError();
                    bps_max = 0;
                }
                cap = local_fit_stage(cap, nnz / windows, windows, xo->sm_count, local_smem,
                                      bps_max);
            }
            const size_t smem = local_smem + 5 * (size_t)cap;
            int *lq = sum->lq[pass < 3 ? pass : 2];
            pass++;
            const int *ord = kPlace && !galways ? &sum->ordered : nullptr;
            auto go = [&](auto kind, int threads, size_t bytes) {
                constexpr int kKind = decltype(kind)::value;
                auto kernel = perm != nullptr ? window_local<kPlace, kKind, true>
                                              : window_local<kPlace, kKind>;
                unsigned grid = (unsigned)windows;
                if (kKind == kLongKind) {
                    // as many persistent thread blocks as fit (at most one a window), asked
                    // first (a failed query's error is cleared, a launch's must not be),
                    // then the long windows listed
                    int per_sm = 0;
                    if (cached_occupancy(&per_sm, (const void *)kernel, threads, bytes) !=
                            cudaSuccess ||
                        per_sm < 1) {
                        (void)cudaGetLastError();
                        per_sm = 1;
                    }
                    const int64_t fit = (int64_t)per_sm * (xo->sm_count > 0 ? xo->sm_count : 1);
                    grid = (unsigned)(fit < windows ? fit : windows);
                    auto find = perm != nullptr ? find_long_windows<true> : find_long_windows<false>;
                    find<<<grid_for(windows, T), T, 0, s>>>(in->offsets, in->offsets_64,
                                                            in->rows, nnz, in->base, windows,
                                                            perm, pro, ord, long_list, lq);
                }
                // kBothKind: long_list is the windows' order, of the caller's (unordered) rows
                const int32_t *list = kKind != kBothKind            ? long_list
                                      : have_order && perm == nullptr ? long_list
                                                                      : nullptr;
                kernel<<<grid, threads, bytes, s>>>(
                    in->offsets, in->offsets_64, in->indices, in->indices_64, in->rows, in->cols,
                    nnz, in->base, windows, bub, wmax, cap, perm, pro, ord,
                    kPlace ? nullptr : nblk, crange,
                    kPlace ? m.win_off : nullptr, kPlace ? m.blk_col : nullptr,
                    kPlace ? m.blk_off : nullptr, kPlace ? occ : nullptr,
                    kPlace ? m.blk_pos : nullptr, kPlace ? m.val_idx : nullptr, &sum->flags,
                    list, lq, xo->sm_count,
                    kKind == kBothKind && !kPlace && merged_scan ? m.win_off : nullptr,
                    &sum->counted);
            };
            if (both) {
                go(std::integral_constant<int, kBothKind>(), kLongThreads, smem);
            } else {
                go(std::integral_constant<int, kLongKind>(), kLongThreads, smem);
                go(std::integral_constant<int, kShortKind>(), kShortThreads, 0);
            }
            return cudaGetLastError();
        };
        if (gperm) {
            // the plan's row offsets in the order (the ordered rows' degrees scanned)
            TC_CU(order_rows(), "ordering the rows");
            int64_t *deg = reinterpret_cast<int64_t *>(rk0); // the keys are not needed now
            ordered_degrees<<<grid_for(M + 1, T), T, 0, s>>>(in->offsets, in->offsets_64, perm,
                                                             M, nnz, in->base, deg);
            TC_CU(cudaGetLastError(), "launching ordered_degrees");
            TC_CU(cub::DeviceScan::ExclusiveSum(cub, cub_bytes, deg, pro, M + 1, s),
                  "the ordered rows' offsets");
        }
        // In the caller's order with one thread block a window, the counting pass also scans
        // (count_then_scan): the plan, which holds the window offsets, allocated before it.
        merged_scan = both && have_order && small_scan && perm == nullptr && !gperm;
        if (merged_scan)
            TC_CU(alloc_plan(), "allocating the plan");
        TC_CU(local_pass(std::false_type()), "launching window_local (counting)");
        if (gperm && !galways) { // the caller's order counted too, then the choice (summary->ordered)
            int32_t *const keep = perm;
            perm = nullptr;
            std::swap(nblk, nblk_id);
            std::swap(crange, crange_id);
            const cudaError_t e = local_pass(std::false_type());
            std::swap(nblk, nblk_id);
            std::swap(crange, crange_id);
            perm = keep;
            TC_CU(e, "launching window_local (counting, caller's order)");
            choose_order<<<1, kChooseThreads, 0, s>>>(nblk_id, crange_id, nblk, crange, windows,
                                                      in->gpu_order_min_gain, sum);
            TC_CU(cudaGetLastError(), "launching choose_order");
        }
        if (!merged_scan) {
            TC_CU(alloc_plan(), "allocating the plan");
            TC_CU(window_offsets(), "window offsets");
        }
        side.mark();
        TC_CU(local_pass(std::true_type()), "launching window_local (placing)");
    } else {
        const int32_t *rnew = in->row_new;
        const unsigned long long *ks = nullptr;
        const int32_t *vs = nullptr;
        // The nonzeros' keys for the rows placed by r (row_new, or NULL: as they are), sorted
        // into ks and vs; then (count) their columns numbered and each window's blocks counted.
        auto sorted = [&](const int32_t *r) -> cudaError_t {
            cub::DoubleBuffer<unsigned long long> dk(k0, k1);
            cub::DoubleBuffer<int32_t> dv(v0, v1);
            auto keys = [&](auto *k) { // 32- or 64-bit keys, the caller's positions in v0
                make_keys<<<grid_for(nnz, T), T, 0, s>>>(csr, csc, in->offsets, in->offsets_64,
                                                         in->indices, in->indices_64, in->rows,
                                                         in->cols, nnz, in->base, cbits, r, k,
                                                         v0, &sum->flags);
                return cudaGetLastError();
            };
            cudaError_t e;
            if (narrow) { // 32-bit keys in k1's bytes, widened into k0 after the sort
                unsigned *k32 = reinterpret_cast<unsigned *>(k1);
                if ((e = keys(k32)) != cudaSuccess)
                    return e;
                cub::DoubleBuffer<unsigned> d32(k32, k32 + nnz);
                if ((e = cub::DeviceRadixSort::SortPairs(cub, cub_bytes, d32, dv, nnz, 0,
                                                         shift + wbits, s)) != cudaSuccess)
                    return e;
                widen_keys<<<grid_for(nnz, T), T, 0, s>>>(d32.Current(), nnz, k0);
                ks = k0;
            } else {
                if ((e = keys(k0)) != cudaSuccess)
                    return e;
                if ((e = cub::DeviceRadixSort::SortPairs(cub, cub_bytes, dk, dv, nnz, 0,
                                                         shift + wbits, s)) != cudaSuccess)
                    return e;
                ks = dk.Current();
            }
            vs = dv.Current();
            return cudaGetLastError();
        };
        auto count = [&](int32_t *cnt) -> cudaError_t {
            mark_heads<<<grid_for(nnz, T), T, 0, s>>>(ks, nnz, head, &sum->flags);
            cudaError_t e = cub::DeviceScan::InclusiveSum(cub, cub_bytes, head, dist, nnz, s);
            if (e != cudaSuccess)
                return e;
            window_blocks<<<grid_for((int64_t)windows + 1, T), T, 0, s>>>(ks, dist, nnz, windows,
                                                                           shift, cnt, dfirst);
            return cudaGetLastError();
        };
        if (gsort) { // the order as a permutation of the rows, as the host's row_new
            TC_CU(order_rows(), "ordering the rows");
            invert_perm<<<grid_for(M, T), T, 0, s>>>(perm, M, row_new);
            TC_CU(cudaGetLastError(), "launching invert_perm");
            rnew = row_new;
        }
        const bool choose = gsort && !galways;
        if (choose) { // the caller's order counted first
            TC_CU(sorted(nullptr), "sorting by column (caller's order)");
            TC_CU(alloc_plan(), "allocating the plan");
            TC_CU(count(nblk_id), "counting blocks (caller's order)");
        }
        TC_CU(sorted(rnew), "sorting by column");
        if (!choose)
            TC_CU(alloc_plan(), "allocating the plan");
        TC_CU(count(nblk), "counting blocks");
        if (choose) {
            // The choice on the device, read back: the keys sorted last are the ordered rows';
            // the caller's order kept means sorting its keys again (a third sort, where
            // counting both orders without keeping both would take twice the scratch).
            choose_order<<<1, kChooseThreads, 0, s>>>(nblk_id, nullptr, nblk, nullptr, windows,
                                                      in->gpu_order_min_gain, sum);
            TC_CU(cudaGetLastError(), "launching choose_order");
            int taken = 0;
            TC_CU(cudaMemcpyAsync(&taken, &sum->ordered, sizeof taken, cudaMemcpyDeviceToHost, s),
                  "reading the order's choice");
            TC_CU(cudaStreamSynchronize(s), "choosing the order");
            if (!taken) {
                TC_CU(sorted(nullptr), "sorting by column (caller's order kept)");
                TC_CU(count(nblk), "counting blocks (caller's order kept)");
            }
        }
        TC_CU(window_offsets(), "window offsets");
        side.mark();
        TC_CU(cudaMemsetAsync(m.blk_col, 0xff, sizeof(int32_t) * 8 * (size_t)bub, s), "padding");
        TC_CU(cudaMemsetAsync(occ, 0, 16 * (size_t)bub, s), "clearing occupancy");
        place_cols<<<grid_for(nnz, T), T, 0, s>>>(ks, dist, head, m.win_off, dfirst, nnz,
                                                  windows, shift, m.blk_col, occ, m.blk_off);
        TC_CU(cudaGetLastError(), "launching place_cols");
        place_values<<<grid_for(nnz, T), T, 0, s>>>(ks, vs, dist, m.win_off, dfirst, occ,
                                                    m.blk_off, nnz, shift, m.blk_pos, m.val_idx);
        TC_CU(cudaGetLastError(), "launching place_values");
    }
    if (gkeys) { // win_row: the permutation (either path), unless the caller's order was kept
        fill_win_row<<<grid_for((int64_t)windows * 16, T), T, 0, s>>>(
            perm, galways ? nullptr : &sum->ordered, M, (int64_t)windows * 16, m.win_row);
        TC_CU(cudaGetLastError(), "launching fill_win_row");
    }
    // The schedule, beside the placing pass (SideFork): one thread block for at most
    // kScheduleSmallMax - 1 windows, else three kernels.  Their CUB workspace is the one the
    // window offsets' scan used, finished before the mark; the placing kernels use none.
    ss = side.fork();
    if (small_sched) {
        schedule_small<<<1, kSmallScanThreads, 0, ss>>>(m.win_off, windows, xo->sm_count,
                                                        xo->force_chunk, slots, chunks, split, sum);
        TC_CU(cudaGetLastError(), "launching schedule_small");
    } else {
        window_stats<<<grid_for((int64_t)windows + 1, T), T, 0, ss>>>(
            m.win_off, windows, xo->sm_count, xo->force_chunk, packed, sum);
        TC_CU(cudaGetLastError(), "launching window_stats");
        TC_CU(cub::DeviceScan::ExclusiveSum(cub, cub_bytes, packed, pscan, windows + 1, ss),
              "numbering chunks");
        write_chunks<<<grid_for(slots > windows ? slots : windows, T), T, 0, ss>>>(
            m.win_off, pscan, windows, xo->sm_count, xo->force_chunk, slots, chunks, split, sum);
        TC_CU(cudaGetLastError(), "launching write_chunks");
    }
    TC_CU(side.join(), "joining the schedule's stream");
    if (in->row_new != nullptr && in->rows > 0) { // the caller's row of each window row
        const int64_t wslots = (int64_t)windows * 16;
        TC_CU(cudaMalloc(&m.win_row, sizeof(int32_t) * wslots), "allocating win_row");
        TC_CU(cudaMemsetAsync(m.win_row, 0xff, sizeof(int32_t) * wslots, s), "padding win_row");
        scatter_win_row<<<grid_for(in->rows, T), T, 0, s>>>(in->row_new, in->rows, wslots,
                                                             m.win_row);
        TC_CU(cudaGetLastError(), "launching scatter_win_row");
        dev_bytes += sizeof(int32_t) * (size_t)wslots;
    }
    TC_CU(cudaMemcpyAsync(&host, sum, sizeof host, cudaMemcpyDeviceToHost, s), "reading the summary");
    // finished before returning: the plan may next be used on another stream
    TC_CU(cudaStreamSynchronize(s), "conversion");
    if (host.flags)
        goto invalid;
    m.blocks = host.blocks;
    if (galways)
        xo->gpu_ordered = 1;
    else if (gkeys) {
        xo->gpu_ordered = host.ordered != 0;
        xo->blocks_unordered = host.blocks_id;
        if (!host.ordered) { // the caller's order kept: the plan has no win_row
            m.win_row = nullptr;
            m.win_row_inside = 0;
        }
    }
    xo->empty_windows = (int64_t)host.empty;
    xo->max_blocks_per_window = (int64_t)host.maxb;
    for (int k = 0; k < 16; k++)
        xo->hist[k] = (int64_t)host.hist[k];
    xo->chunk_blocks = host.chunk_blocks;
    xo->nchunks = host.nchunks;
    xo->nsplit = host.nsplit;
    xo->chunks = chunks;
    xo->split_windows = split;
    xo->dev_bytes = dev_bytes;
    *out = m;
    return TCSPARSE_STATUS_SUCCESS;

invalid:
    snprintf(err, errlen, "ME-TCF conversion on the GPU: %s",
             (host.flags & kScheduleBound) ? "internal error: the balanced schedule outgrew its bound"
             : (host.flags & kBadOffsets) ? "offsets array is not a valid prefix sum of nnz entries"
             : (host.flags & kBadIndex) ? "an index is outside the matrix (check the index base)"
                                        : "duplicate entries (same row and column)");
    st = TCSPARSE_STATUS_INVALID_VALUE;
done:
    // the scratch is freed in stream order; the plan only after its kernels finished
    (void)side.join();
    (void)cudaStreamSynchronize(s);
    tc_dev_metcf_free(&m);
    return st;
}
