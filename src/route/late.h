/* Late ordering (TCSPARSE_REORDER_LATE, the default; docs/reorder.md "Late ordering").
 *
 * A descriptor's plan is built in the caller's order, so the first call pays no ordering.
 * When a kind of call (tc_call_kind) has settled on that plan (its route and kernel tuning
 * measure nothing more) and ran on tensor cores (or on the CUDA cores, with a tensor-core
 * path measured within TC_LATE_CC_REACH of them), that call also builds the first-col plan on
 * the GPU.  If it saves TC_LATE_MIN_GAIN of the blocks, it becomes the current plan
 * and the caller's order's plan is kept aside (late.other): the next calls of that kind
 * settle on the ordered plan (its own route measurement and tuning), then run on the two
 * plans in turn, TC_LATE_SAMPLES times each between CUDA events (the whole call: host work
 * and kernels), and the faster plan is kept and the other freed.  As the route's
 * measurement: no synchronisation for the samples, nothing recorded or built inside a stream
 * capture, every call computes the whole result.
 *
 * Two rounds: round 0 tries first-col (built on the GPU) against the caller's order; round 1
 * then tries bfs (reorder_order.c; built on the host) against the plan round 0 kept, where B's
 * gathered rows do not fit in L2 and the matrix is small enough for the host's search
 * (TC_LATE_BFS_MAX_NNZ).  Each round's plan must save TC_LATE_MIN_GAIN of the caller's order's
 * blocks to be timed.  The state is TRIAL during either round and, between them, WAITING.
 *
 * CUDA graphs: a captured call bakes in the plan it ran on, so a capture before the trial
 * gives it up (TCSPARSE_LATE_NOT_TRIED), and a capture during the trial ends it keeping the
 * ordered plan, which the capture used; the plan set aside is freed by the next uncaptured
 * call on the descriptor, or when the descriptor's plan is invalidated. */
#ifndef TC_LATE_H
#define TC_LATE_H

#include "plan.h"
#include "route.h"

#define TC_LATE_SAMPLES 3
/* blocks the first-col plan must save, as a share of the caller's order's, to be timed
 * (TCSPARSE_X_REORDER_MIN_GAIN, a percentage, overrides it) */
#define TC_LATE_MIN_GAIN 0.02
/* calls of other kinds after which a trial whose kind stopped coming moves to the kind of the
 * next call (and the interposer's decide-only calls after which it ends, keeping the ordered
 * plan) */
#define TC_LATE_IDLE_CALLS 32
/* calls of the trial's kind after which it ends anyway, keeping the ordered plan (the
 * ordered plan settles in about 10-20 calls, the samples take 6 more) */
#define TC_LATE_MAX_CALLS 64
/* round 1's bfs is computed on the host inside the call that starts it: at most this many
 * nonzeros (about 0.1 s on the H100 machine's host) */
#define TC_LATE_BFS_MAX_NNZ (1ll << 22)
/* A kind of call settled on the CUDA cores takes part too where the route measured a
 * tensor-core path within this factor of them on the same plan: an ordering that packs the
 * blocks denser can turn that contest (ogbl-ddi under PyTorch at N = 128: the balanced
 * kernel 0.140 ms against the CUDA cores' 0.130 in the caller's order, 0.09 on first-col).
 * The round's plan must then also save the share of blocks by which the tensor cores lost. */
#define TC_LATE_CC_REACH 1.25

/* Around one execution (SpMM or SDDMM) on sparse descriptor d, with the descriptor's lock
 * held: begin before the decision (it may set d->late.pick_other, so that tc_plan_get gives
 * the plan set aside to this call, and record a sample's first event), end after the run
 * with the plan that ran (NULL: none), the decision that ran and the call's status.  end may
 * build the ordered plan (the trial's first call) and adds "; ordering: ..." to the handle's
 * last route reason while a trial goes on and when it ends. */
void tc_late_begin(tcsparseHandle_t h, struct tcsparseSpMatDescr *d, const tc_call_kind *k);
void tc_late_end(tcsparseHandle_t h, struct tcsparseSpMatDescr *d, const struct tc_plan *ran,
                 const tc_call_kind *k, const tc_decision *dec, tcsparseStatus_t st);

/* Whether a call of kind k that ran dec on plan ran takes part in late ordering, and the most
 * blocks a round's plan may keep (a share of the caller's order's) to be timed for it (*reach,
 * where not NULL): a call on the tensor cores, with 1 - the minimum gain; or a call on the
 * CUDA cores where the route measured a tensor-core path on ran within TC_LATE_CC_REACH of
 * them for k, with the CUDA cores' time as a share of that path's (the blocks an ordering must
 * save for it to catch up) where lower. */
int tc_late_path_in(const struct tc_plan *ran, const tc_call_kind *k, const tc_decision *dec,
                    double *reach);

/* After tc_late_end, for a call that ran decision dec on plan ran (NULL: none) of d (NULL: a
 * call without late ordering): 2 while the route is still trying its candidate paths on that
 * kind of call (dec->exploring); 1 while it tunes the kernel of its pick (dec->measuring), or
 * late ordering still times d's plans (a trial under way) or will start a trial with the
 * next call like this one (waiting, and this call, of kind k, ran on d's plan on a path that
 * takes part); 0 once settled.  The hook's learning flag (tc_hook_learning): a call's time is
 * what the kind settles on only at 0. */
int tc_call_learning(const struct tcsparseSpMatDescr *d, const struct tc_plan *ran,
                     const tc_call_kind *k, const tc_decision *dec);

/* The descriptor's plans were dropped or its setting changed: late ordering starts over
 * (events destroyed). */
void tc_late_reset(struct tcsparseSpMatDescr *d);
/* A plan of a trial was evicted from the cache (plan.c, under the cache's lock: no CUDA
 * calls): the trial ends with the plan that is left. */
void tc_late_trial_lost(struct tcsparseSpMatDescr *d);
/* Fills the late_* fields of stats. */
void tc_late_stats(const struct tcsparseSpMatDescr *d, tcsparseMetcfStats_t *stats);

#endif
