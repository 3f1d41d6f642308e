// Fingerprint of a sparse matrix's structure arrays, for the LD_PRELOAD interposer, which reuses
// a plan left behind by a destroyed cuSPARSE descriptor for a new descriptor over the same
// arrays only where the arrays still hold the structure the plan was built from:
//  - tc_fingerprint_arrays (tc_hook_spmat_fingerprint) computes it and waits for it;
//  - tc_guard_check_launch (the device-side guard, tc_hook_spmat_guard) computes it on the
//    caller's stream and compares it there, so that the kernels launched after it can choose
//    between the plan and the caller's arrays without the host waiting.
// Both compute the same function: sum over each array's 32-bit words w_i of
// mix(w_i + salt + i * golden), xor the two byte counts.  The first array alone (the row
// offsets, b NULL) is the offsets' own fingerprint, which the CUDA-core path checks.
#include <cstdint>
#include <cstdio>

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

constexpr uint64_t kSaltA = 0x1234567ull, kSaltB = 0x7654321ull;

__device__ __forceinline__ uint64_t tc_fp_word(uint32_t w, uint64_t salt, uint64_t i)
{
    return tc_mix64(w + salt + i * 0x9e3779b97f4a7c15ull);
}

// This thread's share of the sum over n 32-bit words w_i of mix(w_i + salt + i * golden)
// (position-dependent, so a permutation of the words changes the sum).  Four words a load
// where the array is 16-byte aligned: the check reads the whole structure on every guarded
// call, at close to the memory's rate.
__device__ __forceinline__ uint64_t tc_fp_share(const uint32_t *__restrict__ w, uint64_t n,
                                                uint64_t salt)
{
    uint64_t acc = 0, i0 = 0;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    if (((uintptr_t)w & 15u) == 0) {
        const uint4 *w4 = reinterpret_cast<const uint4 *>(w);
        const uint64_t n4 = n / 4;
        for (uint64_t q = t; q < n4; q += stride) {
            const uint4 v = __ldg(&w4[q]);
            acc += tc_fp_word(v.x, salt, 4 * q) + tc_fp_word(v.y, salt, 4 * q + 1) +
                   tc_fp_word(v.z, salt, 4 * q + 2) + tc_fp_word(v.w, salt, 4 * q + 3);
        }
        i0 = 4 * n4;
    }
    for (uint64_t i = i0 + t; i < n; i += stride)
        acc += tc_fp_word(__ldg(&w[i]), salt, i);
    return acc;
}

// Thread blocks of 256 threads for n words: a thread a 16-byte load, at most 8 blocks an SM's
// worth for the largest arrays (the loops stride).
inline unsigned tc_fp_blocks(uint64_t n)
{
    const uint64_t b = (n / 4 + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 2048 ? 2048 : b);
}

__global__ void tc_fingerprint_kernel(const uint32_t *__restrict__ words, uint64_t n, uint64_t salt,
                                      unsigned long long *__restrict__ out)
{
    uint64_t acc = tc_fp_share(words, n, salt);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, (unsigned long long)acc);
}

// The guard's check: both arrays in one grid, the sums added into g->acc; the last thread
// block to finish (ticket) compares, writes the verdict, resets acc and ticket for the next
// check on the stream, and on a mismatch raises the host-visible word.
__global__ void tc_guard_check_kernel(const uint32_t *__restrict__ a, uint64_t na,
                                      const uint32_t *__restrict__ b, uint64_t nb,
                                      uint64_t sizes, uint64_t expected, tc_guard_dev *g,
                                      volatile int *tripped)
{
    uint64_t acc = tc_fp_share(a, na, kSaltA) + tc_fp_share(b, nb, kSaltB);
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0 && acc != 0) {
        atomicAdd(&g->acc, (unsigned long long)acc);
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    __threadfence();
    if (atomicAdd(&g->ticket, 1u) != gridDim.x - 1)
        return;
    __threadfence();
    const uint64_t fp = (uint64_t)atomicAdd(&g->acc, 0ull) ^ sizes;
    const int ok = fp == expected;
    g->verdict = ok;
    g->acc = 0;
    g->ticket = 0;
    __threadfence();
    if (!ok && tripped != nullptr) {
        *tripped = 1;
        __threadfence_system();
    }
}

} // namespace

extern "C" tcsparseStatus_t tc_guard_check_launch(const void *a, size_t a_bytes, const void *b,
                                                  size_t b_bytes, uint64_t expected,
                                                  tc_guard_dev *g, int *tripped,
                                                  cudaStream_t stream, char *err, size_t errlen)
{
    const uint64_t na = a != nullptr ? a_bytes / 4 : 0, nb = b != nullptr ? b_bytes / 4 : 0;
    tc_guard_check_kernel<<<tc_fp_blocks(na > nb ? na : nb), 256, 0, stream>>>(
        static_cast<const uint32_t *>(a), na, static_cast<const uint32_t *>(b), nb,
        ((uint64_t)a_bytes << 32) ^ (uint64_t)b_bytes, expected, g, tripped);
    const cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    snprintf(err, errlen, "the structure check failed to launch: %s", cudaGetErrorString(e));
    return tc_launch_status(e);
}

extern "C" int tc_fingerprint_arrays(const void *a, size_t a_bytes, const void *b,
                                     size_t b_bytes, cudaStream_t stream,
                                     unsigned long long *dword, unsigned long long *hword,
                                     uint64_t *fp, uint64_t *fp_a)
{
    if (cudaMemsetAsync(dword, 0, 2 * sizeof *dword, stream) != cudaSuccess)
        goto fail;
    for (int part = 0; part < 2; part++) {
        const void *p = part == 0 ? a : b;
        const uint64_t n = (part == 0 ? a_bytes : b_bytes) / 4;
        if (p == nullptr || n == 0)
            continue;
        tc_fingerprint_kernel<<<tc_fp_blocks(n), 256, 0, stream>>>(
            static_cast<const uint32_t *>(p), n, part == 0 ? kSaltA : kSaltB,
            dword + part);
        if (cudaGetLastError() != cudaSuccess)
            goto fail;
    }
    if (cudaMemcpyAsync(hword, dword, 2 * sizeof *hword, cudaMemcpyDeviceToHost,
                        stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
        goto fail;
    // the sums wrap modulo 2^64 as the check's single running sum does
    *fp = ((uint64_t)hword[0] + (uint64_t)hword[1]) ^ ((uint64_t)a_bytes << 32) ^ (uint64_t)b_bytes;
    *fp_a = (uint64_t)hword[0] ^ ((uint64_t)a_bytes << 32);
    return 0;
fail:
    (void)cudaGetLastError();
    return -1;
}
