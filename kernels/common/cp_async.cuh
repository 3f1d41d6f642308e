// cp.async (sm_80+) for the pipelined kernels (kernels/sddmm/sddmm_kernel_pipe.cuh,
// kernels/spmm/spmm_kernel_pipe.cuh): global -> shared copies that do not hold registers
// while in flight, grouped per thread with commit / wait.
//
// .ca (allocate in L1, as __ldg does): neighbouring windows of a clustered graph gather the
// same rows / columns of B, and L1 is the only reuse an SM gets between them.
#pragma once
#include <cstdint>

namespace tc {

// Source of the zero-length copies (padding columns, pieces past the end of a row or
// column): a cp.async names a valid global address even when it reads no byte of it, and a
// padding column never forms a pointer into the caller's matrix.
__device__ __align__(16) const uint4 kCpAsyncZeros = {0u, 0u, 0u, 0u};

// 16 bytes of shared memory from the first `bytes` (0..16) bytes at src, the rest zeros.
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(d),
                 "l"(__cvta_generic_to_global(src)), "r"(bytes)
                 : "memory");
}

// The same for 16 whole bytes (no byte count to test).
__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(d),
                 "l"(__cvta_generic_to_global(src))
                 : "memory");
}

__device__ __forceinline__ void cp_async4(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d),
                 "l"(__cvta_generic_to_global(src))
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// All but the newest N of the thread's groups are complete and visible to the thread.
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void zero16(char *dst)
{
    *reinterpret_cast<uint4 *>(dst) = make_uint4(0u, 0u, 0u, 0u);
}

} // namespace tc
