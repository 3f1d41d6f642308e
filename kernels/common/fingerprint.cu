// Fingerprint of a sparse matrix's structure arrays (tc_fingerprint_arrays, kernels.h), for
// tc_hook_spmat_fingerprint: the LD_PRELOAD interposer reuses a plan left behind by a destroyed
// cuSPARSE descriptor for a new descriptor over the same arrays only when the fingerprint of
// what those arrays hold now matches.
#include <cstdint>

#include "kernels.h"

namespace {

__device__ __forceinline__ uint64_t tc_mix64(uint64_t x)
{
    // splitmix64's finaliser: every input bit reaches every output bit.
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

// Sum over the 32-bit words w_i of mix(w_i + salt + i * golden): position-dependent, so a
// permutation of the words changes the sum.
__global__ void tc_fingerprint_kernel(const uint32_t *__restrict__ words, uint64_t n, uint64_t salt,
                                      unsigned long long *__restrict__ out)
{
    uint64_t acc = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc += tc_mix64(words[i] + salt + i * 0x9e3779b97f4a7c15ull);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, (unsigned long long)acc);
}

} // namespace

extern "C" int tc_fingerprint_arrays(const void *a, size_t a_bytes, const void *b,
                                     size_t b_bytes, cudaStream_t stream, uint64_t *fp)
{
    // One device word and one pinned host word per device, kept for the process: the
    // fingerprint is taken on every adoption of a kept plan, so it must not allocate.
    // Calls do not overlap (kernels.h).
    // They are forgotten (not freed) when the device's context is a new one: cudaDeviceReset
    // freed them, and the device address may since be another allocation.
    static unsigned long long *dword[64], *hword[64];
    static unsigned long long context[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        goto fail;
    if (dword[dev] != nullptr && tc_context_id() != context[dev])
        dword[dev] = hword[dev] = nullptr;
    if (dword[dev] == nullptr) {
        if (cudaMalloc(&dword[dev], sizeof *dword[dev]) != cudaSuccess) {
            dword[dev] = nullptr;
            goto fail;
        }
        if (cudaMallocHost(&hword[dev], sizeof *hword[dev]) != cudaSuccess) {
            cudaFree(dword[dev]);
            dword[dev] = hword[dev] = nullptr;
            goto fail;
        }
        context[dev] = tc_context_id();
    }
    if (cudaMemsetAsync(dword[dev], 0, sizeof *dword[dev], stream) != cudaSuccess)
        goto fail;
    for (int part = 0; part < 2; part++) {
        const void *p = part == 0 ? a : b;
        const uint64_t n = (part == 0 ? a_bytes : b_bytes) / 4;
        if (p == nullptr || n == 0)
            continue;
        uint64_t blocks = (n + 255) / 256;
        if (blocks > 1024)
            blocks = 1024;
        tc_fingerprint_kernel<<<(unsigned)blocks, 256, 0, stream>>>(
            static_cast<const uint32_t *>(p), n, part == 0 ? 0x1234567ull : 0x7654321ull,
            dword[dev]);
        if (cudaGetLastError() != cudaSuccess)
            goto fail;
    }
    if (cudaMemcpyAsync(hword[dev], dword[dev], sizeof *hword[dev], cudaMemcpyDeviceToHost,
                        stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
        goto fail;
    *fp = (uint64_t)*hword[dev] ^ ((uint64_t)a_bytes << 32) ^ (uint64_t)b_bytes;
    return 0;
fail:
    (void)cudaGetLastError();
    return -1;
}
