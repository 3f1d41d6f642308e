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

/* The conversion's window-local passes of one thread block a window (convert_kernel.cuh):
 * thread block b takes the window of rank tc_snake_rank(b, n, sm_count) among the n windows
 * listed by decreasing nonzeros.  The first sm_count blocks (one an SM) take the longest
 * windows, the next sm_count (a second on each SM) the next ones in reverse, and so on, so
 * that the windows an SM gets add up to about the mean (blocks are handed out to the SMs in
 * about index order).  A permutation of [0, n) for b in [0, n). */
static inline TC_HOST_DEVICE int32_t tc_snake_rank(int32_t b, int32_t n, int sm_count)
{
    const int32_t s = sm_count > 0 ? sm_count : 1;
    const int32_t q = b / s, i = b % s;
    const int32_t here = s < n - q * s ? s : n - q * s; /* windows of this round */
    return q * s + ((q & 1) ? here - 1 - i : i);
}

/* The same passes' staging area (stage_cap nonzeros of 5 bytes), shrunk to the largest that
 * lets `blocks` thread blocks run in the fewest waves and still holds min_cap nonzeros (a mean
 * window); else stage_cap.  An SM has per_sm bytes of shared memory; a thread block takes
 * per_block (the runtime's reserve and its static shared memory) + local_smem + 5 * cap, and
 * at most bps_max of them fit an SM by threads and registers. */
static inline int64_t tc_fit_stage_bps(int64_t cap, int64_t local_smem, int bps_max,
                                       int64_t per_sm, int64_t per_block)
{
    const int64_t b = per_sm / (per_block + local_smem + 5 * cap);
    return b < bps_max ? b : bps_max;
}
static inline int64_t tc_fit_stage_waves(int64_t blocks, int sm_count, int64_t bps)
{
    return bps < 1 ? INT64_MAX : (blocks + sm_count * bps - 1) / (sm_count * bps);
}
static inline int tc_fit_stage(int stage_cap, int64_t min_cap, int64_t blocks, int sm_count,
                               int64_t local_smem, int bps_max, int64_t per_sm,
                               int64_t per_block)
{
    if (stage_cap <= 0 || sm_count <= 0 || bps_max <= 1 || per_sm <= 0 || blocks <= 0)
        return stage_cap;
    const int64_t now = tc_fit_stage_bps(stage_cap, local_smem, bps_max, per_sm, per_block);
    const int64_t best = tc_fit_stage_waves(blocks, sm_count, bps_max);
    if (tc_fit_stage_waves(blocks, sm_count, now) <= best)
        return stage_cap;
    for (int64_t b = now + 1; b <= bps_max; b++) {
        if (tc_fit_stage_waves(blocks, sm_count, b) > best)
            continue;
        const int64_t room = (per_sm / b - per_block - local_smem) / 5 / 16 * 16;
        if (room >= min_cap && room < stage_cap &&
            tc_fit_stage_bps(room, local_smem, bps_max, per_sm, per_block) >= b)
            return (int)room;
        break; /* the fewest blocks that reach the fewest waves do not fit a mean window */
    }
    return stage_cap;
}

/* The wide-L1 instances of the plain TF32 SpMM and SDDMM kernels (spmm_launch.cu,
 * sddmm_launch.cu; docs/performance.md): their shared memory carveout in
 * percent, and the plans they are for, fewer than 10 nonzeros a block (sparse blocks, where
 * the kernels gather B and L1 hits pay; fitted to the large suite). */
#define TC_WIDE_L1_CARVEOUT 72
static inline TC_HOST_DEVICE int tc_wide_l1_plan(int64_t nnz, int64_t blocks)
{
    return blocks > 0 && nnz < 10 * blocks;
}

#endif
