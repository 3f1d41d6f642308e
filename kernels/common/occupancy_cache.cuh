// Resident thread blocks per SM of a kernel, from the occupancy API, remembered per thread:
// the router asks on every call, and the API call costs about a microsecond each time (the
// routed path's per-call host overhead on small matrices was measured at 2-4.5 us on the
// H100).  The key includes the device, since each device has its own answer.
#pragma once
#include <cstddef>
#include <cuda_runtime.h>

namespace tc {

inline cudaError_t cached_occupancy(int *blocks_per_sm, const void *fn, int threads, size_t smem)
{
    struct Entry {
        const void *fn;
        int threads, device, bps;
        size_t smem;
    };
    constexpr int kEntries = 16;
    static thread_local Entry cache[kEntries];
    static thread_local int used, next;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    for (int i = 0; i < used; ++i)
        if (cache[i].fn == fn && cache[i].threads == threads && cache[i].smem == smem &&
            cache[i].device == dev) {
            *blocks_per_sm = cache[i].bps;
            return cudaSuccess;
        }
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, fn, threads, smem);
    if (e != cudaSuccess)
        return e;
    cache[next] = Entry{fn, threads, dev, *blocks_per_sm, smem};
    next = (next + 1) % kEntries;
    if (used < kEntries)
        ++used;
    return cudaSuccess;
}

} // namespace tc
