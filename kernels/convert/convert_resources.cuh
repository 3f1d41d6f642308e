// What the conversion's launcher (convert_launch.cu) takes from convert_resources.cu: its
// memory (a pool per device, the scratch of one conversion), the side stream its schedule
// runs on, and the per-device caches that follow the device's context.  Host code only: no
// kernel is declared or instantiated here, so the kernels stay in the launcher's object.
#ifndef TC_CONVERT_RESOURCES_CUH
#define TC_CONVERT_RESOURCES_CUH

#include <cstddef>
#include <mutex>
#include <cuda_runtime_api.h>

namespace tc_convert {

// Guards the per-device caches: the pools (convert_resources.cu) and the window-local
// kernels' state (local_state, local_smem_info: convert_launch.cu).
extern std::mutex pool_mu;

// The current device as an index into the per-device caches, or -1.
int pool_device();

// The conversion's pool on the current device, keeping up to keep bytes mapped between
// conversions; nullptr where pools are not supported (then cudaMalloc serves).
cudaMemPool_t scratch_pool(size_t keep, cudaStream_t s);

inline size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// Out of memory: the pool's unused memory given back, for the caller to try again (see there).
bool pool_trim(cudaMemPool_t p, cudaStream_t s);

// One scratch allocation, carved into parts: stream-ordered from the pool, else a plain
// cudaMalloc (freed after the conversion's synchronisation, which precedes the destructor
// on every path of tc_convert_gpu).
struct Scratch {
    cudaStream_t s;
    char *base = nullptr;
    size_t used = 0;
    bool plain = false;
    explicit Scratch(cudaStream_t st) : s(st) {}
    cudaError_t alloc(size_t bytes, size_t keep);
    template <class T> T *take(size_t bytes)
    {
        T *p = reinterpret_cast<T *>(base + used);
        used += align16(bytes);
        return p;
    }
    ~Scratch();
};

// The plan's schedule (statistics, chunk numbering, chunk list) needs only the window
// offsets, so it runs on a second stream beside the placing pass: on inputs of few long
// windows that pass fills a fraction of the GPU (ogbl-ddi: 267 thread blocks), and the
// schedule's four launches otherwise ran after it.  Each conversion takes a side stream and
// its two events for itself (one stream shared by all would tie a conversion to others'
// streams through their fork waits), from a per-device cache that keeps them for the next
// conversion: creating them cost the host about 10 us a build on the H100, on the path to
// the placing pass.  At most as many sets as conversions ever ran at once, kept for the
// process's life.  Where they cannot be had, everything runs on the caller's stream.
struct SideSet {
    cudaStream_t st;
    cudaEvent_t fork, join;
};

// The fork is in two steps: mark() once the window offsets are written on the caller's stream
// (one event record, before the placing kernels are launched), fork() after them (the side
// stream waits for the mark; the schedule's kernels then go there).  join() before the summary
// is read back, and on every failure path before the scratch and the plan are released.
struct SideFork {
    cudaStream_t s;
    SideSet x{nullptr, nullptr, nullptr};
    int dev = -1;
    bool marked = false, forked = false, healthy = true;

    explicit SideFork(cudaStream_t st) : s(st) {}
    void mark();
    // The stream the schedule's kernels go to.
    cudaStream_t fork();
    cudaError_t join();
    ~SideFork();
};

// Per device: 0 the window_local kernels' shared-memory limit not tried, 1 set, -1 not
// possible (convert_launch.cu, local_ready); under pool_mu.  caches_follow_context resets it.
extern int local_state[64];

// The per-device caches dropped when the device's context is a new one (see there).
void caches_follow_context();

} // namespace tc_convert

#endif
