// GPU helpers of the tools and tests (util_cuda.h).
#include <algorithm>
#include "util_cuda.h"

namespace {
__global__ void nop_kernel() {}

// Reads n float4 `reps` times over (each thread its grid-stride share, the same addresses
// every pass, so that after the first pass they come from L2); writes the sum only where it
// is impossible, so that the loads cannot be dropped.
__global__ void read_kernel(const float4 *__restrict__ p, size_t n, int reps, float *sink)
{
    float acc = 0.0f;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; ++r)
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            const float4 v = __ldcg(p + i); // cached in L2 only: the L1 must not serve it
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == -1.2345f)
        *sink = acc;
}

// The median of five timings of f (ms), each between two events on the default stream.
template <class F> cudaError_t median_ms(F f, float *out)
{
    cudaEvent_t e0, e1;
    cudaError_t e = cudaEventCreate(&e0);
    if (e != cudaSuccess)
        return e;
    if ((e = cudaEventCreate(&e1)) != cudaSuccess) {
        cudaEventDestroy(e0);
        return e;
    }
    float t[5];
    for (int i = 0; i < 5 && e == cudaSuccess; ++i) {
        if ((e = cudaEventRecord(e0)) == cudaSuccess && (e = f()) == cudaSuccess &&
            (e = cudaEventRecord(e1)) == cudaSuccess && (e = cudaEventSynchronize(e1)) == cudaSuccess)
            e = cudaEventElapsedTime(&t[i], e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (e != cudaSuccess)
        return e;
    std::sort(t, t + 5);
    *out = t[2];
    return cudaSuccess;
}
} // namespace

extern "C" cudaError_t tc_util_launch_nop(cudaStream_t s)
{
    nop_kernel<<<1, 1, 0, s>>>();
    return cudaGetLastError();
}

extern "C" cudaError_t tc_util_bandwidth(double *l2_gbs, double *dram_gbs)
{
    *l2_gbs = *dram_gbs = 0;
    int dev = 0, l2 = 0, sms = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
        return e;
    // DRAM: a device-to-device copy far larger than L2 reads and writes every byte once
    const size_t big = std::max<size_t>((size_t)256 << 20, (size_t)l2 * 16);
    // L2: reads of a buffer of half its size, repeated
    const size_t small = std::max<size_t>((size_t)l2 / 2 / 16 * 16, 1 << 20);
    char *buf = nullptr;
    float *sink = nullptr;
    if ((e = cudaMalloc(&buf, 2 * big)) != cudaSuccess)
        return e;
    if ((e = cudaMalloc(&sink, sizeof *sink)) != cudaSuccess) {
        cudaFree(buf);
        return e;
    }
    float ms = 0;
    e = cudaMemset(buf, 0, 2 * big);
    if (e == cudaSuccess)
        e = cudaMemcpy(buf + big, buf, big, cudaMemcpyDeviceToDevice); // warm-up
    if (e == cudaSuccess)
        e = median_ms([&] { return cudaMemcpy(buf + big, buf, big, cudaMemcpyDeviceToDevice); }, &ms);
    if (e == cudaSuccess && ms > 0)
        *dram_gbs = 2.0 * (double)big / (ms * 1e6);
    const int reps = 20;
    const size_t n4 = small / sizeof(float4);
    auto read = [&] {
        read_kernel<<<sms * 8, 256>>>(reinterpret_cast<const float4 *>(buf), n4, reps, sink);
        return cudaGetLastError();
    };
    if (e == cudaSuccess)
        e = read(); // warm-up: the buffer into L2
    if (e == cudaSuccess)
        e = median_ms(read, &ms);
    if (e == cudaSuccess && ms > 0)
        *l2_gbs = (double)small * reps / (ms * 1e6);
    cudaFree(buf);
    cudaFree(sink);
    return e;
}
