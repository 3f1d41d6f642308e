// Launchers of the tensor-core SDDMM: the one place that picks an instantiation.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include "config.h"
#include "kernels.h"
#include "metcf_rules.h"
#include "occupancy_cache.cuh"
#include "sddmm_kernel_pipe.cuh"

namespace {

using namespace tc;
using namespace tc::sddmm;

size_t elem_size(int t) { return t == TC_T_F32 ? 4 : 2; }

int64_t chunks_of_k(const tc_sddmm_args *a)
{
    const int64_t ce = kChunkBytes / (int64_t)elem_size(a->ab_type);
    return (a->K + ce - 1) / ce;
}

// Slots of the pipelined kernel's ring (sddmm_kernel_pipe.cuh), or 0 for the other kernel:
// the pipelined one unless TCSPARSE_X_SDDMM_PIPE=0, wherever the whole K of A fits its shared
// memory (the other kernel beyond).  TCSPARSE_X_SDDMM_PIPE_STAGES=2|3|4 forces the ring depth
// (a tuning knob for tcsparse-bench-sddmm; 4 slots fall back to the default where they would
// exceed 48 KB: FP32 K > 160, FP16 K > 320).  Reads only the types and K, as tc_sddmm_occupancy
// promises.
int pipe_stages(const tc_sddmm_args *a)
{
    const tc_config *c = tc_config_get();
    const bool enabled = c->sddmm.pipe != 0; // 0, 1 or TC_CFG_RULE
    const int forced = c->sddmm.pipe_stages;
    const int64_t nk = chunks_of_k(a);
    if (!enabled || nk > kPipeMaxChunks)
        return 0;
    const int s = forced >= 2 && forced <= kPipeMaxStages ? forced : kPipeStages;
    return pipe_smem_bytes(nk > 0 ? (int)nk : 1, s) <= kPipeSmemLimit ? s : kPipeStages;
}

// The pipelined instantiation with an S-slot ring, and its name: the default depth is
// "<base>_pipe", the others "<base>_pipe2" / "<base>_pipe4".
template <class P, class CT>
void *pipe_kernel(int S, const char *const (&names)[3], const char **name)
{
    static_assert(kPipeMaxStages == 4 && kPipeStages == 3, "names and instantiations below");
    *name = names[S - 2];
    if (S == 2)
        return (void *)sddmm_pipe_kernel<P, CT, 2>;
    if (S == 4)
        return (void *)sddmm_pipe_kernel<P, CT, 4>;
    return (void *)sddmm_pipe_kernel<P, CT, 3>;
}

// The wide-L1 form of the plain TF32 pipelined kernel (default 3-slot ring): the same code
// with a shared memory carveout of TC_WIDE_L1_CARVEOUT percent (fewer resident thread blocks,
// more L1).  As for SpMM (spmm_launch.cu, wide_l1): it
// pays where blocks are sparse, the kernel then being a gather of B's columns (R-MAT, uniform
// random, mdual: 4-14% faster at K = 128, 4-15% at K = 256) and costs where they are denser
// (PROTEINS_full replicas, NotreDame_www: 7-9% slower at K = 128), hence the same threshold of
// 10 nonzeros a block; at K = 32 it costs on the sparse inputs too (R-MAT and mdual 5-8%
// slower), hence K > 32 (K = 33-127 was not measured).  TCSPARSE_X_SDDMM_WIDE_L1=1 takes it
// for every plain TF32 call on the default ring, 0 never (tuning knobs for
// tcsparse-bench-sddmm).  The attribute is set by tc_sddmm_plan_ready.

// The variants (tc_sddmm_args::variant) PIPE_WIDE and PIPE take it and leave it whatever the
// rule says; REGB leaves it.
bool wide_l1(const tc_sddmm_args *a, int S)
{
    const int forced = tc_config_get()->sddmm.wide_l1; // 0, 1 or TC_CFG_RULE
    if (a->ab_type != TC_T_F32 || a->c_type != TC_T_F32 || !a->tf32 || S != kPipeStages ||
        a->plan == nullptr)
        return false;
    if (a->variant != TC_SDDMM_VAR_RULE)
        return a->variant == TC_SDDMM_VAR_PIPE_WIDE;
    if (forced >= 0)
        return forced == 1;
    return a->K > 32 && tc_wide_l1_plan(a->plan->nnz, a->plan->blocks);
}

void *wide_l1_fn() { return (void *)sddmm_pipe_kernel<Tf32, float, kPipeStages, true>; }

// Instantiations: every (precision, C type) the router can ask for, in both variants.  The
// base and the chunked schedule share one kernel (SDDMM blocks never add into each other's
// output).  allow_wide: false for the occupancy query (the selector's model was fitted
// without the wide-L1 instance).
void *pick_kernel(const tc_sddmm_args *a, const char **name, bool allow_wide = true)
{
    static const char *const tf32[3] = {"tc_sddmm_tf32_pipe2", "tc_sddmm_tf32_pipe",
                                        "tc_sddmm_tf32_pipe4"};
    static const char *const x3[3] = {"tc_sddmm_3xtf32_pipe2", "tc_sddmm_3xtf32_pipe",
                                      "tc_sddmm_3xtf32_pipe4"};
    static const char *const h32[3] = {"tc_sddmm_f16_f32out_pipe2", "tc_sddmm_f16_f32out_pipe",
                                       "tc_sddmm_f16_f32out_pipe4"};
    static const char *const h16[3] = {"tc_sddmm_f16_pipe2", "tc_sddmm_f16_pipe",
                                       "tc_sddmm_f16_pipe4"};
    const int S = pipe_stages(a);
    switch (a->ab_type) {
    case TC_T_F32:
        if (a->c_type != TC_T_F32)
            break;
        if (a->tf32) {
            if (S == kPipeStages && a->variant == TC_SDDMM_VAR_REGB) {
                *name = "tc_sddmm_tf32_regb";
                return (void *)sddmm_pipe_kernel<Tf32, float, kPipeStages, false, true>;
            }
            if (S > 0 && allow_wide && wide_l1(a, S)) {
                *name = "tc_sddmm_tf32_pipe_l1";
                return wide_l1_fn();
            }
            if (S > 0)
                return pipe_kernel<Tf32, float>(S, tf32, name);
            *name = "tc_sddmm_tf32";
            return (void *)sddmm_kernel<Tf32, float>;
        }
        if (S > 0)
            return pipe_kernel<Tf32x3, float>(S, x3, name);
        *name = "tc_sddmm_3xtf32";
        return (void *)sddmm_kernel<Tf32x3, float>;
    case TC_T_F16:
        if (a->c_type == TC_T_F32) {
            if (S > 0)
                return pipe_kernel<F16, float>(S, h32, name);
            *name = "tc_sddmm_f16_f32out";
            return (void *)sddmm_kernel<F16, float>;
        }
        if (a->c_type == TC_T_F16) {
            if (S > 0)
                return pipe_kernel<F16, __half>(S, h16, name);
            *name = "tc_sddmm_f16";
            return (void *)sddmm_kernel<F16, __half>;
        }
        break;
    }
    return nullptr;
}

// Dynamic shared memory of the kernel pick_kernel chose.
size_t smem_bytes(const tc_sddmm_args *a)
{
    const int64_t nk = chunks_of_k(a);
    const int S = pipe_stages(a);
    if (S > 0)
        return (size_t)pipe_smem_bytes(nk > 0 ? (int)nk : 1, S);
    const int64_t tile_chunks = nk < kTileChunks ? nk : kTileChunks; // as make_params
    return (size_t)kWinRows * (size_t)(tile_chunks * kChunkBytes + kRowPad);
}

// Warps sharing a block: the most (of 4, 2) that still leave a group (the blocks a thread
// block multiplies at once) at least as large as the mean work item, and no more than there
// are chunks of K to share.  TCSPARSE_X_SDDMM_KSPLIT=1|2|4 forces it (a tuning knob for
// tcsparse-bench-sddmm).
int pick_ksplit(const tc_sddmm_args *a)
{
    const int forced = tc_config_get()->sddmm.ksplit; // 1, 2, 4 or 0 (the rule)
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

extern "C" int tc_sddmm_variants(const tc_sddmm_args *a, int var[TC_SDDMM_MAX_VARIANTS])
{
    const tc_config *c = tc_config_get(); // a kernel knob that is set pins the kernel
    const bool pinned = c->sddmm.pipe != TC_CFG_RULE || c->sddmm.pipe_stages != 0 ||
                        c->sddmm.wide_l1 != TC_CFG_RULE;
    if (pinned || a->ab_type != TC_T_F32 || a->c_type != TC_T_F32 || !a->tf32 ||
        a->plan == nullptr || a->K <= 32 || pipe_stages(a) != kPipeStages)
        return 0;
    tc_sddmm_args r = *a;
    r.variant = TC_SDDMM_VAR_RULE;
    var[0] = wide_l1(&r, kPipeStages) ? TC_SDDMM_VAR_PIPE_WIDE : TC_SDDMM_VAR_PIPE;
    var[1] = var[0] == TC_SDDMM_VAR_PIPE_WIDE ? TC_SDDMM_VAR_PIPE : TC_SDDMM_VAR_PIPE_WIDE;
    var[2] = TC_SDDMM_VAR_REGB;
    return 3;
}

extern "C" const char *tc_sddmm_kernel_name(const tc_sddmm_args *a)
{
    const char *name = "unknown";
    pick_kernel(a, &name);
    return name;
}

constexpr int kPlanReadyDevices = 64; // as tc_spmm_plan_ready

extern "C" void tc_sddmm_plan_ready(void)
{
    // as tc_spmm_plan_ready: at a plan's build, never inside a stream capture; once per device
    static std::once_flag once[kPlanReadyDevices];
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kPlanReadyDevices) {
        (void)cudaGetLastError();
        return;
    }
    std::call_once(once[dev], [] {
        if (cudaFuncSetAttribute(wide_l1_fn(), cudaFuncAttributePreferredSharedMemoryCarveout,
                                 TC_WIDE_L1_CARVEOUT) != cudaSuccess)
            (void)cudaGetLastError();
    });
}

extern "C" tcsparseStatus_t tc_sddmm_occupancy(const tc_sddmm_args *a, int *blocks_per_sm)
{
    const char *name = "unknown";
    void *fn = pick_kernel(a, &name, false);
    *blocks_per_sm = 0;
    if (fn == nullptr)
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    cudaError_t e = cached_occupancy(blocks_per_sm, fn, kThreads, smem_bytes(a));
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
    const size_t smem = smem_bytes(a);
    void *args[] = {&p};
    cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)items), dim3(kThreads), args, smem, s);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "tensor-core SDDMM (%s): launch failed: %s", name,
                 cudaGetErrorString(e));
        return tc_launch_status(e);
    }
    return TCSPARSE_STATUS_SUCCESS;
}
