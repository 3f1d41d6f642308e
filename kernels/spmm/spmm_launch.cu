// Launchers of the tensor-core SpMM: the one place that picks an instantiation.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include "config.h"
#include "kernels.h"
#include "metcf_rules.h"
#include "occupancy_cache.cuh"
#include "spmm_kernel_pipe.cuh"

namespace {

using namespace tc;

// Instantiations: every (precision, output type, J) the router can ask for, base and balanced,
// in the pipelined form (spmm_kernel_pipe.cuh) with each ring depth the launcher offers, and
// the other form (S = 0).
template <class P, class CT, int J, bool kBal>
void *fn_of(int S)
{
    static_assert(spmm::kPipeStages == 4 && spmm::kPipeStagesTf32 == 3,
                  "ring depths instantiated below");
    // depths whose shared memory would pass the limit are never picked (pipe_stages)
    constexpr bool k6 = spmm::pipe_smem_bytes<P, J>(kMaxCtaWarps, 6) <= spmm::kPipeSmemLimit;
    constexpr bool k8 = spmm::pipe_smem_bytes<P, J>(kMaxCtaWarps, 8) <= spmm::kPipeSmemLimit;
    if (S == 0)
        return (void *)spmm_cta_kernel<P, CT, J, kBal>;
    if (S == 3)
        return (void *)spmm::spmm_pipe_kernel<P, CT, J, kBal, 3>;
    if constexpr (k6)
        if (S == 6)
            return (void *)spmm::spmm_pipe_kernel<P, CT, J, kBal, 6>;
    if constexpr (k8)
        if (S == 8)
            return (void *)spmm::spmm_pipe_kernel<P, CT, J, kBal, 8>;
    return (void *)spmm::spmm_pipe_kernel<P, CT, J, kBal, 4>;
}

// The wide-L1 form of the plain TF32 J = 4 pipelined kernel (3-slot ring): the same code
// with a shared memory carveout of TC_WIDE_L1_CARVEOUT (72) percent, i.e. 164 KB of the
// H100's 228 KB for shared memory, 6 resident thread blocks of 26 KB instead of 8, and about
// 92 KB of L1 instead of about 48 KB.  Measured on the H100: it pays where blocks are sparse (the kernel is then a gather of B rows, and L1 hits are
// what it lacks: R-MAT, uniform random, mdual, 8-10 nonzeros a block, 2-8% faster at
// N = 128 and 256) and costs where they are denser (PROTEINS_full replicas at 12.6-15.2, up
// to 4% slower; the BlogCatalog replicas at 10.8, 2%) or when a thread block is one warp
// (N <= 32: 3-13% slower everywhere).  The threshold of 10 is fitted to those ten inputs.
// The attribute is set once per device, after the first plan's build there
// (tc_spmm_plan_ready; a hint: a device where it did not take runs the kernel with the
// default carveout).

template <bool kBal>
void *wide_l1_fn()
{
    return (void *)spmm::spmm_pipe_kernel<Tf32, float, 4, kBal, spmm::kPipeStagesTf32, 1, true>;
}

// FP32: J = 4 (32 columns per warp: 80-96 registers; J = 8 needs 128-165 and was no faster
// on the H100), 16-bit types J = 8 (16-byte B pieces).  TCSPARSE_X_SPMM_J=8 forces FP32 to 8,
// a tuning knob for tcsparse-bench.
// A variant (tc_spmm_args::variant, tc_spmm_variants) pins J for FP32.
int pick_j(const tc_spmm_args *a)
{
    const int forced = tc_config_get()->spmm.j; // 4, 8 or 0 (the rule)
    if (a->ab_type != TC_T_F32)
        return 8;
    if (a->variant == TC_SPMM_VAR_J8)
        return 8;
    if (a->variant == TC_SPMM_VAR_J4 || a->variant == TC_SPMM_VAR_J4_WIDE)
        return 4;
    return forced == 8 ? 8 : 4;
}

// Warps per thread block of the thread-block form: enough to cover N, at most 4.
int cta_warps(const tc_spmm_args *a)
{
    const int64_t warp_n = 8 * pick_j(a);
    const int64_t w = (a->N + warp_n - 1) / warp_n;
    return w < kMaxCtaWarps ? (int)(w > 0 ? w : 1) : kMaxCtaWarps;
}

// Ring slots of the pipelined kernel (spmm_kernel_pipe.cuh), or 0 for the other kernel.
// TCSPARSE_X_SPMM_PIPE=1 runs it for every call, 0 never; unset, it runs for every call on a
// plan.  With its copies coalesced it is faster
// than the other kernel almost everywhere on the H100: CTA time / pipelined time, geomean
// over the large suite (10 inputs) and the small one (45), TF32 1.04-1.41 for N = 32 to 512,
// FP16 1.02-1.23, 3xTF32 1.00-1.10 except the balanced kernel at N = 32 on the large suite
// (0.94).  Without a plan (the selector's occupancy query, tc_spmm_occupancy) it names the
// other kernel, whose occupancy the selector's model was fitted to.
// TCSPARSE_X_SPMM_PIPE_STAGES = 3, 4, 6 or 8 sets the ring's depth (a tuning knob for
// tcsparse-bench; unset: 3 for plain TF32, 4 for the others, spmm::default_stages; a depth
// whose shared memory would pass 48 KB, FP32 J = 8 with 6 or 8, keeps the default).
enum { kPipeAuto = TC_CFG_RULE, kPipeNever = 0, kPipeAlways = 1 };

int pipe_mode()
{
    return tc_config_get()->spmm.pipe;
}

bool pipe_wanted(const tc_spmm_args *a)
{
    const int mode = pipe_mode();
    if (mode != kPipeAuto)
        return mode == kPipeAlways;
    return a->plan != nullptr;
}

template <class P, int J>
int pipe_stages(bool wanted)
{
    const int forced = tc_config_get()->spmm.pipe_stages;
    if (!wanted)
        return 0;
    const int S = forced == 3 || forced == 4 || forced == 6 || forced == 8
                      ? forced
                      : spmm::default_stages<P>();
    return spmm::pipe_smem_bytes<P, J>(kMaxCtaWarps, S) <= spmm::kPipeSmemLimit
               ? S
               : spmm::default_stages<P>();
}

// Whether a call takes the wide-L1 instance (see wide_l1_fn): plain TF32, J = 4, the
// default 3-slot ring, at least two warps a thread block (N > 32), and a plan of fewer than
// 10 nonzeros a block (tc_wide_l1_plan).  TCSPARSE_X_SPMM_WIDE_L1=1 takes it for every plain
// TF32 J = 4 call on the default ring, 0 never (tuning knobs for tcsparse-bench).  The
// variants TC_SPMM_VAR_J4_WIDE and TC_SPMM_VAR_J4 take it and leave it whatever the rule says.
bool wide_l1(const tc_spmm_args *a, int j, int S, int warps)
{
    const int forced = tc_config_get()->spmm.wide_l1; // 0, 1 or TC_CFG_RULE
    if (a->ab_type != TC_T_F32 || !a->tf32 || j != 4 || S != spmm::kPipeStagesTf32 ||
        a->plan == nullptr)
        return false;
    if (a->variant == TC_SPMM_VAR_J4_WIDE || a->variant == TC_SPMM_VAR_J4)
        return a->variant == TC_SPMM_VAR_J4_WIDE;
    if (forced >= 0)
        return forced == 1;
    return warps >= 2 && tc_wide_l1_plan(a->plan->nnz, a->plan->blocks);
}

// The kernel tc_spmm_launch runs for these arguments, its name and its dynamic shared memory.
struct Pick {
    void *fn;
    const char *name;
    size_t smem;
};

// names: the other kernel's, then the pipelined one's with the default ring ("..._pipe"), 6
// and 8 slots ("..._pipe6", "..._pipe8").
template <class P, class CT, int J>
Pick pick_of(bool balanced, int warps, bool pipe, const char *const (&names)[4])
{
    const int S = pipe_stages<P, J>(pipe);
    return Pick{balanced ? fn_of<P, CT, J, true>(S) : fn_of<P, CT, J, false>(S),
                names[S == 0 ? 0 : S == 6 ? 2 : S == 8 ? 3 : 1],
                S == 0 ? 0 : (size_t)spmm::pipe_smem_bytes<P, J>(warps, S)};
}

#define TC_SPMM_NAMES(base) {base, base "_pipe", base "_pipe6", base "_pipe8"}

Pick pick_kernel(const tc_spmm_args *a, bool balanced)
{
    static const char *const tf32_4[4] = TC_SPMM_NAMES("tc_spmm_tf32_j4");
    static const char *const tf32_8[4] = TC_SPMM_NAMES("tc_spmm_tf32_j8");
    static const char *const x3_4[4] = TC_SPMM_NAMES("tc_spmm_3xtf32_j4");
    static const char *const x3_8[4] = TC_SPMM_NAMES("tc_spmm_3xtf32_j8");
    static const char *const h_f[4] = TC_SPMM_NAMES("tc_spmm_f16_f32out");
    static const char *const h_h[4] = TC_SPMM_NAMES("tc_spmm_f16");
    static const char *const bf_f[4] = TC_SPMM_NAMES("tc_spmm_bf16_f32out");
    static const char *const bf_bf[4] = TC_SPMM_NAMES("tc_spmm_bf16");
    const int j = pick_j(a), w = cta_warps(a);
    const bool cf = a->c_type == TC_T_F32, pp = pipe_wanted(a);
    switch (a->ab_type) {
    case TC_T_F32:
        if (a->tf32) {
            if (j == 4) {
                const Pick k = pick_of<Tf32, float, 4>(balanced, w, pp, tf32_4);
                const int S = pipe_stages<Tf32, 4>(pp);
                if (wide_l1(a, j, S, w))
                    return Pick{balanced ? wide_l1_fn<true>() : wide_l1_fn<false>(),
                                "tc_spmm_tf32_j4_pipe_l1", k.smem};
                return k;
            }
            return pick_of<Tf32, float, 8>(balanced, w, pp, tf32_8);
        }
        return j == 4 ? pick_of<Tf32x3, float, 4>(balanced, w, pp, x3_4)
                      : pick_of<Tf32x3, float, 8>(balanced, w, pp, x3_8);
    case TC_T_F16:
        return cf ? pick_of<F16, float, 8>(balanced, w, pp, h_f)
                  : pick_of<F16, __half, 8>(balanced, w, pp, h_h);
    case TC_T_BF16:
        return cf ? pick_of<Bf16, float, 8>(balanced, w, pp, bf_f)
                  : pick_of<Bf16, __nv_bfloat16, 8>(balanced, w, pp, bf_bf);
    }
    return Pick{nullptr, "unknown", 0};
}

#undef TC_SPMM_NAMES

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

size_t elem_size(int t) { return t == TC_T_F32 ? 4 : 2; }

SpmmParams make_params(const tc_spmm_args *a)
{
    SpmmParams p{};
    const tc_dev_metcf *m = a->plan;
    p.M = a->M; p.N = a->N;
    p.win_off = m->win_off; p.blk_off = m->blk_off; p.blk_col = m->blk_col;
    p.val_idx = m->val_idx; p.blk_pos = m->blk_pos;
    p.win_row = m->win_row;
    p.a_val = a->a_val; p.B = a->B; p.ldb = a->ldb; p.C = a->C; p.ldc = a->ldc;
    p.alpha_dev = a->alpha_dev; p.beta_dev = a->beta_dev; p.alpha = a->alpha; p.beta = a->beta;
    p.chunks = reinterpret_cast<const int4 *>(a->chunks);
    p.items = a->chunks ? a->nchunks : m->windows;
    const int64_t slice_n = 8 * pick_j(a) * cta_warps(a);
    p.n_slices = (int32_t)((a->N + slice_n - 1) / slice_n);
    p.b_vec = aligned16(a->B) && (a->ldb * elem_size(a->ab_type)) % 16 == 0;
    p.c_vec = aligned16(a->C) && (a->ldc * elem_size(a->c_type)) % 16 == 0;
    p.guard = a->guard;
    return p;
}

template <class CT>
void launch_scale(const SpmmParams &p, const int32_t *wins, int32_t n, cudaStream_t s)
{
    // a warp a row, 8 rows a thread block
    const int64_t grid = ((int64_t)n * kWinRows + 7) / 8;
    scale_windows<CT><<<(unsigned)(grid < 4096 ? grid : 4096), 256, 0, s>>>(p, wins, n);
}

} // namespace

// Devices whose attributes are tracked (as the conversion's per-device caches).
constexpr int kPlanReadyDevices = 64;

extern "C" void tc_spmm_plan_ready(void)
{
    // Set at a plan's build, which synchronises and so never runs inside a stream capture
    // (where an attribute call could invalidate the capture), rather than at a launch.  A
    // function's attributes are set per device: once on each device a plan is built on.
    static std::once_flag once[kPlanReadyDevices];
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kPlanReadyDevices) {
        (void)cudaGetLastError(); // the default carveout there
        return;
    }
    std::call_once(once[dev], [] {
        for (void *f : {wide_l1_fn<false>(), wide_l1_fn<true>()})
            if (cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     TC_WIDE_L1_CARVEOUT) != cudaSuccess)
                (void)cudaGetLastError();
    });
}

extern "C" int tc_spmm_variants(const tc_spmm_args *a, int var[TC_SPMM_MAX_VARIANTS])
{
    const tc_config *c = tc_config_get(); // a kernel knob that is set pins the kernel
    const bool pinned = c->spmm.j != 0 || c->spmm.wide_l1 != TC_CFG_RULE ||
                        c->spmm.pipe != TC_CFG_RULE || c->spmm.pipe_stages != 0;
    if (pinned || a->ab_type != TC_T_F32 || a->plan == nullptr || a->N <= 32 || !pipe_wanted(a))
        return 0;
    tc_spmm_args r = *a;
    r.variant = TC_SPMM_VAR_RULE;
    int n = 0;
    if (pick_j(&r) == 8)
        var[n++] = TC_SPMM_VAR_J8;
    else
        var[n++] = wide_l1(&r, 4, pipe_stages<Tf32, 4>(true), cta_warps(&r)) ? TC_SPMM_VAR_J4_WIDE
                                                                             : TC_SPMM_VAR_J4;
    // the wide-L1 instance exists for plain TF32 only (3xTF32 gained nothing from it)
    const int others[3] = {TC_SPMM_VAR_J4, a->tf32 ? TC_SPMM_VAR_J4_WIDE : -1, TC_SPMM_VAR_J8};
    for (int v : others)
        if (v >= 0 && v != var[0] && n < TC_SPMM_MAX_VARIANTS)
            var[n++] = v;
    return n;
}

extern "C" const char *tc_spmm_kernel_name(const tc_spmm_args *a)
{
    return pick_kernel(a, a->chunks != nullptr).name;
}

extern "C" tcsparseStatus_t tc_spmm_occupancy(const tc_spmm_args *a, int *warps_per_block,
                                              int *blocks_per_sm)
{
    const Pick k = pick_kernel(a, a->chunks != nullptr);
    *warps_per_block = cta_warps(a);
    cudaError_t e = cached_occupancy(blocks_per_sm, k.fn, *warps_per_block * 32, k.smem);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return TCSPARSE_STATUS_ARCH_MISMATCH;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

extern "C" tcsparseStatus_t tc_spmm_launch(const tc_spmm_args *a, cudaStream_t s, char *err,
                                           size_t errlen)
{
    const bool balanced = a->chunks != nullptr;
    const Pick k = pick_kernel(a, balanced);
    const char *name = k.name;
    if (k.fn == nullptr) {
        snprintf(err, errlen, "tensor-core SpMM: no kernel for this type combination");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    SpmmParams p = make_params(a);
    if (a->M == 0 || a->N == 0)
        return TCSPARSE_STATUS_SUCCESS;
    if (balanced && a->nsplit > 0) {
        if (a->c_type == TC_T_F32)
            launch_scale<float>(p, a->split_windows, a->nsplit, s);
        else if (a->c_type == TC_T_F16)
            launch_scale<__half>(p, a->split_windows, a->nsplit, s);
        else
            launch_scale<__nv_bfloat16>(p, a->split_windows, a->nsplit, s);
        // a failed beta pass must stop the call: the main kernel adds into C atomically
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            snprintf(err, errlen, "tensor-core SpMM (%s): the beta pass failed to launch: %s",
                     name, cudaGetErrorString(e));
            return tc_launch_status(e);
        }
    }
    // one thread block per item (window or chunk) and column slice
    const dim3 grid((unsigned)p.items, (unsigned)p.n_slices), block(cta_warps(a) * 32);
    if (grid.x > 0 && grid.y > 0) {
        void *args[] = {&p};
        cudaError_t e = cudaLaunchKernel(k.fn, grid, block, args, k.smem, s);
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(err, errlen, "tensor-core SpMM (%s): launch failed: %s", name,
                     cudaGetErrorString(e));
            return tc_launch_status(e);
        }
    }
    return TCSPARSE_STATUS_SUCCESS;
}
