// The plan's statistics and the balanced kernel's chunk schedule, computed on the GPU after
// either conversion path has placed the nonzeros.
#pragma once
#include "convert_kernel.cuh"
#include "convert_local.cuh" // kSmallScanThreads, kSmallScanItems

namespace tc {

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

} // namespace tc
