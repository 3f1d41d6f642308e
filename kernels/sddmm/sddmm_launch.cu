// Launchers of the tensor-core SDDMM: the one place that picks an instantiation.
#include <cstdio>
#include <cstdlib>
#include "../kernels.h"
#include "../occupancy_cache.cuh"
#include "sddmm_kernel.cuh"

namespace {

using namespace tc;
using namespace tc::sddmm;

// Instantiations: every (precision, C type) the router can ask for.  The base and the
// chunked schedule share one kernel (SDDMM blocks never add into each other's output).
void *pick_kernel(const tc_sddmm_args *a, const char **name)
{
    switch (a->ab_type) {
    case TC_T_F32:
        if (a->c_type != TC_T_F32)
            break;
        if (a->tf32) {
            *name = "tc_sddmm_tf32";
            return (void *)sddmm_kernel<Tf32, float>;
        }
        *name = "tc_sddmm_3xtf32";
        return (void *)sddmm_kernel<Tf32x3, float>;
    case TC_T_F16:
        if (a->c_type == TC_T_F32) {
            *name = "tc_sddmm_f16_f32out";
            return (void *)sddmm_kernel<F16, float>;
        }
        if (a->c_type == TC_T_F16) {
            *name = "tc_sddmm_f16";
            return (void *)sddmm_kernel<F16, __half>;
        }
        break;
    }
    return nullptr;
}

int env_int(const char *name)
{
    const char *e = getenv(name);
    return e ? atoi(e) : 0;
}

size_t elem_size(int t) { return t == TC_T_F32 ? 4 : 2; }

int64_t chunks_of_k(const tc_sddmm_args *a)
{
    const int64_t ce = kChunkBytes / (int64_t)elem_size(a->ab_type);
    return (a->K + ce - 1) / ce;
}

// Warps sharing a block: the most (of 4, 2) that still leave a group (the blocks a thread
// block multiplies at once) at least as large as the mean work item, and no more than there
// are chunks of K to share.  TCSPARSE_SDDMM_KSPLIT=1|2|4 forces it (a tuning knob for
// tcsparse-bench-sddmm).
int pick_ksplit(const tc_sddmm_args *a)
{
    static const int forced = env_int("TCSPARSE_SDDMM_KSPLIT");
    if (forced == 1 || forced == 2 || forced == 4)
        return forced;
    const int64_t items = a->chunks ? a->nchunks : a->plan->windows;
    const double mean = items > 0 ? (double)a->plan->blocks / (double)items : 0.0;
    const int64_t nk = chunks_of_k(a);
    for (int ks = kWarps; ks > 1; ks /= 2)
        if (ks <= nk && (kWarps / ks) * kBlocksPerWarp >= mean)
            return ks;
    return 1;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

Params make_params(const tc_sddmm_args *a)
{
    Params p{};
    const tc_dev_metcf *m = a->plan;
    const size_t es = elem_size(a->ab_type);
    p.M = a->M; p.K = a->K;
    p.win_off = m->win_off; p.blk_off = m->blk_off; p.blk_col = m->blk_col;
    p.val_idx = m->val_idx; p.blk_pos = m->blk_pos;
    p.win_row = m->win_row;
    p.A = a->A; p.lda = a->lda; p.B = a->B; p.ldb = a->ldb; p.C = a->C;
    p.alpha_dev = a->alpha_dev; p.beta_dev = a->beta_dev; p.alpha = a->alpha; p.beta = a->beta;
    p.chunks = reinterpret_cast<const int4 *>(a->chunks);
    p.ksplit = pick_ksplit(a);
    const int64_t nk = chunks_of_k(a);
    p.tile_chunks = (int32_t)(nk < kTileChunks ? nk : kTileChunks);
    p.a_vec = aligned16(a->A) && (a->lda * es) % 16 == 0;
    p.b_vec = aligned16(a->B) && (a->ldb * es) % 16 == 0;
    return p;
}

} // namespace

extern "C" const char *tc_sddmm_kernel_name(const tc_sddmm_args *a)
{
    const char *name = "unknown";
    pick_kernel(a, &name);
    return name;
}

extern "C" tcsparseStatus_t tc_sddmm_occupancy(const tc_sddmm_args *a, int *blocks_per_sm)
{
    const char *name = "unknown";
    void *fn = pick_kernel(a, &name);
    *blocks_per_sm = 0;
    if (fn == nullptr)
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    const int64_t nk = chunks_of_k(a);
    const int64_t tile_chunks = nk < kTileChunks ? nk : kTileChunks; // as make_params
    const size_t smem = (size_t)kWinRows * (size_t)(tile_chunks * kChunkBytes + kRowPad);
    cudaError_t e = cached_occupancy(blocks_per_sm, fn, kThreads, smem);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *blocks_per_sm = 0;
        return TCSPARSE_STATUS_ARCH_MISMATCH;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

extern "C" tcsparseStatus_t tc_sddmm_launch(const tc_sddmm_args *a, cudaStream_t s, char *err,
                                            size_t errlen)
{
    const char *name = "unknown";
    void *fn = pick_kernel(a, &name);
    if (fn == nullptr) {
        snprintf(err, errlen, "tensor-core SDDMM: no kernel for this type combination");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    const int64_t items = a->chunks ? a->nchunks : a->plan->windows;
    if (a->M == 0 || a->N == 0 || a->plan->blocks == 0 || items == 0)
        return TCSPARSE_STATUS_SUCCESS; // no nonzero of C: nothing to write
    Params p = make_params(a);
    const size_t smem = (size_t)kWinRows * (size_t)(p.tile_chunks * kChunkBytes + kRowPad);
    void *args[] = {&p};
    cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)items), dim3(kThreads), args, smem, s);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "tensor-core SDDMM (%s): launch failed: %s", name,
                 cudaGetErrorString(e));
        return e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction
                   ? TCSPARSE_STATUS_ARCH_MISMATCH
                   : TCSPARSE_STATUS_EXECUTION_FAILED;
    }
    return TCSPARSE_STATUS_SUCCESS;
}
