/* Two rules of the ME-TCF plan that the host code and the conversion kernels both apply,
 * written once and compiled for both (plain C99 for the host, __host__ __device__ under
 * nvcc): the histogram bucket of a window's block count (tcsparseMetcfStats_t) and the
 * balanced kernel's default chunk length; and, for the kernel launchers, which plans take the
 * wide-L1 kernel instances. */
#ifndef TC_METCF_RULES_H
#define TC_METCF_RULES_H

#include <stdint.h>

#ifdef __CUDACC__
#define TC_HOST_DEVICE __host__ __device__
#else
#define TC_HOST_DEVICE
#endif

/* Bucket of a window with b blocks: 0, 1, 2, 3-4, 5-8, ..., i.e. 1 + ceil(log2 b) for
 * b >= 1, the last bucket (15) open-ended. */
static inline TC_HOST_DEVICE int tc_hist_bucket(int64_t b)
{
    if (b <= 0)
        return 0;
    int k = 1;
    for (int64_t cap = 1; cap < b && k < 15; cap <<= 1)
        k++;
    return k;
}

/* Longest run of blocks one thread block of the balanced kernel takes from a window: about
 * four waves of chunks over the GPU's SMs (132 when unknown), a multiple of the kernels'
 * 8-block stage within [16, 128] (measured on the H100: 16 suits small matrices, 64 large
 * ones, where fewer chunks mean fewer atomic additions into C). */
static inline TC_HOST_DEVICE int64_t tc_default_chunk_blocks(int64_t blocks, int sm_count)
{
    int64_t want = blocks / ((int64_t)(sm_count > 0 ? sm_count : 132) * 24);
    want = (want + 7) / 8 * 8;
    return want < 16 ? 16 : want > 128 ? 128 : want;
}

/* The wide-L1 instances of the plain TF32 SpMM and SDDMM kernels (spmm_launch.cu,
 * sddmm_launch.cu; docs/performance.md, "Fifteenth session"): their shared memory carveout in
 * percent, and the plans they are for, fewer than 10 nonzeros a block (sparse blocks, where
 * the kernels gather B and L1 hits pay; fitted to the large suite). */
#define TC_WIDE_L1_CARVEOUT 72
static inline TC_HOST_DEVICE int tc_wide_l1_plan(int64_t nnz, int64_t blocks)
{
    return blocks > 0 && nnz < 10 * blocks;
}

#endif
