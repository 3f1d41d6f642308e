// The GPU conversion's resources (convert_resources.cuh): its memory pool and scratch, the side
// stream and events its schedule runs on, the per-device caches that follow the context, and
// the release of a plan.
#include <cstdint>
#include <mutex>
#include <vector>
#include "config.h"
#include "kernels.h"
#include "convert_resources.cuh"

namespace tc_convert {

// The conversion's scratch comes from a memory pool of its own per device, which keeps up
// to tc_convert_extra::keep_scratch bytes mapped between conversions: with the default pool's
// release threshold (0) every conversion would map its scratch afresh (keeping it saved 5-7%
// of a build on the H100).  Where pools are not supported, a plain cudaMalloc serves.
std::mutex pool_mu;
static cudaMemPool_t pools[64];
static bool pool_tried[64];
static unsigned long long pool_keep[64]; // the release threshold last set (+1; 0: none yet)

// The current device as an index into pools, or -1.
int pool_device()
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
}

cudaMemPool_t scratch_pool(size_t keep, cudaStream_t s)
{
    const int dev = pool_device();
    if (dev < 0)
        return nullptr;
    std::lock_guard<std::mutex> g(pool_mu);
    bool fresh = false;
    if (!pool_tried[dev]) {
        pool_tried[dev] = true;
        pool_keep[dev] = 0;
        int ok = 0;
        cudaMemPoolProps pr{};
        pr.allocType = cudaMemAllocationTypePinned;
        pr.location.type = cudaMemLocationTypeDevice;
        pr.location.id = dev;
        if (cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess ||
            !ok || cudaMemPoolCreate(&pools[dev], &pr) != cudaSuccess)
            pools[dev] = nullptr;
        (void)cudaGetLastError();
        fresh = pools[dev] != nullptr;
    }
    if (pools[dev] != nullptr && pool_keep[dev] != (unsigned long long)keep + 1) {
        // set when it changes only: the call costs the host microseconds, twice a build
        unsigned long long t = keep;
        if (cudaMemPoolSetAttribute(pools[dev], cudaMemPoolAttrReleaseThreshold, &t) ==
            cudaSuccess)
            pool_keep[dev] = (unsigned long long)keep + 1;
        else
            (void)cudaGetLastError();
    }
    if (fresh && keep > 0) {
        // The pool's first mapping made as large as it may keep: later scratch and plans up
        // to that size are carved from it.  Otherwise a build after one of a smaller matrix
        // grew the pool on its path (ogbl-ddi after mdual on the H100: 0.20-0.24 ms against
        // 0.15-0.17 for the next builds).  Skipped if the memory is not there.
        void *p = nullptr;
        if (cudaMallocFromPoolAsync(&p, keep, pools[dev], s) == cudaSuccess)
            (void)cudaFreeAsync(p, s);
        (void)cudaGetLastError();
    }
    return pools[dev];
}

// Out of memory: the pool's unused memory (up to keep bytes, mapped in chunks that may be too
// small for this request) is given back once, after the stream's earlier frees have run, and
// the caller tries again.  True when it could be done.
bool pool_trim(cudaMemPool_t p, cudaStream_t s)
{
    (void)cudaGetLastError();
    const bool ok =
        cudaStreamSynchronize(s) == cudaSuccess && cudaMemPoolTrimTo(p, 0) == cudaSuccess;
    (void)cudaGetLastError();
    return ok;
}

// A pool that failed an allocation for another reason than memory (a stale handle after
// cudaDeviceReset, for one) is looked up again on the next conversion.
static void scratch_pool_forget()
{
    const int dev = pool_device();
    if (dev < 0)
        return;
    std::lock_guard<std::mutex> g(pool_mu);
    pool_tried[dev] = false;
}

cudaError_t Scratch::alloc(size_t bytes, size_t keep)
{
    cudaMemPool_t p = scratch_pool(keep, s);
    if (p != nullptr) {
        cudaError_t e = cudaMallocFromPoolAsync(reinterpret_cast<void **>(&base), bytes, p, s);
        if (e == cudaErrorMemoryAllocation && pool_trim(p, s))
            e = cudaMallocFromPoolAsync(reinterpret_cast<void **>(&base), bytes, p, s);
        if (e == cudaSuccess || e == cudaErrorMemoryAllocation)
            return e;
        (void)cudaGetLastError();
        scratch_pool_forget();
        base = nullptr;
    }
    plain = true;
    return cudaMalloc(reinterpret_cast<void **>(&base), bytes);
}

Scratch::~Scratch()
{
    if (base != nullptr && plain)
        cudaFree(base);
    else if (base != nullptr)
        cudaFreeAsync(base, s);
}

// The side sets kept for the next conversions (SideSet, convert_resources.cuh).
static std::mutex side_mu;
static std::vector<SideSet> side_free[64];

static void side_destroy(const SideSet &x)
{
    if (x.st != nullptr)
        (void)cudaStreamDestroy(x.st);
    if (x.fork != nullptr)
        (void)cudaEventDestroy(x.fork);
    if (x.join != nullptr)
        (void)cudaEventDestroy(x.join);
    (void)cudaGetLastError();
}

static bool side_take(int dev, SideSet &x)
{
    {
        std::lock_guard<std::mutex> g(side_mu);
        if (!side_free[dev].empty()) {
            x = side_free[dev].back();
            side_free[dev].pop_back();
            return true;
        }
    }
    x = SideSet{nullptr, nullptr, nullptr};
    if (cudaStreamCreateWithFlags(&x.st, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreateWithFlags(&x.fork, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreateWithFlags(&x.join, cudaEventDisableTiming) == cudaSuccess)
        return true;
    side_destroy(x);
    return false;
}

void SideFork::mark()
{
    const bool off = !tc_config_get()->convert.side; // 0: all on the caller's stream
    if (off || (dev = pool_device()) < 0 || !side_take(dev, x))
        return;
    if (cudaEventRecord(x.fork, s) != cudaSuccess) {
        (void)cudaGetLastError();
        healthy = false;
        return;
    }
    marked = true;
}

cudaStream_t SideFork::fork()
{
    if (!marked)
        return s;
    marked = false;
    if (cudaStreamWaitEvent(x.st, x.fork, 0) != cudaSuccess) {
        (void)cudaGetLastError();
        healthy = false;
        return s;
    }
    forked = true;
    return x.st;
}

cudaError_t SideFork::join()
{
    if (!forked)
        return cudaSuccess;
    forked = false;
    cudaError_t e = cudaEventRecord(x.join, x.st);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s, x.join, 0);
    if (e != cudaSuccess) { // the caller's stream cannot wait for it: the host does
        healthy = false;
        (void)cudaStreamSynchronize(x.st);
    }
    return e;
}

SideFork::~SideFork()
{
    (void)join();
    if (x.st == nullptr)
        return;
    if (healthy) { // a later record replaces a pending one; waits already queued keep theirs
        std::lock_guard<std::mutex> g(side_mu);
        side_free[dev].push_back(x);
    } else {
        (void)cudaStreamSynchronize(x.st); // a stream is destroyed once its work is done
        side_destroy(x);
    }
}

// The context the per-device caches above were filled in (tc_context_id; 0: none seen).  When
// the device's context is a new one (cudaDeviceReset ended the old), the caches are dropped:
// the pool, the side streams and events and the kernels' shared-memory limit died with the
// old context.  Their handles are forgotten, not destroyed (they are no longer valid).
static unsigned long long context_seen[64];

void caches_follow_context()
{
    const int dev = pool_device();
    if (dev < 0)
        return;
    unsigned long long id = tc_context_id();
    if (id == 0) { // none current on this thread yet: this makes the device's primary one current
        (void)cudaFree(nullptr);
        (void)cudaGetLastError();
        id = tc_context_id();
    }
    if (id == 0)
        return;
    std::lock_guard<std::mutex> g(pool_mu);
    if (context_seen[dev] == id)
        return;
    if (context_seen[dev] != 0) {
        pools[dev] = nullptr;
        pool_tried[dev] = false;
        pool_keep[dev] = 0;
        local_state[dev] = 0;
        std::lock_guard<std::mutex> h(side_mu);
        side_free[dev].clear();
    }
    context_seen[dev] = id;
}

} // namespace tc_convert

extern "C" void tc_dev_metcf_free(tc_dev_metcf *m)
{
    // cudaFree waits for the device before it frees a cudaMalloc allocation, but not before
    // it frees one from a pool: the plan may still be read by kernels on any stream
    if (m->pooled && m->win_off != nullptr)
        (void)cudaDeviceSynchronize();
    cudaFree(m->win_off); // the one allocation of the plan's arrays and schedule
    if (!m->win_row_inside)
        cudaFree(m->win_row);
    *m = tc_dev_metcf{};
}
