/* Kernel tuning on the executions.  The first executions of a kind of call (tc_call_kind with
 * its tensor-core path) on a plan run each kernel variant the launcher offers
 * (kernels/common/kernels.h: TC_SPMM_VAR_*, TC_SDDMM_VAR_*) TC_TUNE_SAMPLES times between CUDA
 * events, the launcher's own choice first and the variants in turn; later calls of that kind
 * run the fastest (the launcher's choice unless another beats it by TC_TUNE_MARGIN).  As the
 * route's measurement (route.c): no synchronisation, nothing queried or recorded while the
 * stream is captured, and every execution computes the whole result (the variants differ in
 * tiling, caching and the path of B's pieces only). */
#ifndef TC_TUNE_H
#define TC_TUNE_H

#include "route.h"

#define TC_TUNE_SAMPLES 3
/* Another variant replaces the launcher's choice when its fastest sample, times this, is
 * still faster: a sample's noise on the H100 is about 1% */
#define TC_TUNE_MARGIN 1.02
_Static_assert(TC_SPMM_MAX_VARIANTS * TC_TUNE_SAMPLES <= TC_EXPLORE_PAIRS &&
                   TC_SPMM_MAX_VARIANTS <= 4 &&
                   TC_SDDMM_MAX_VARIANTS * TC_TUNE_SAMPLES <= TC_EXPLORE_PAIRS &&
                   TC_SDDMM_MAX_VARIANTS <= 4,
               "plan.h's tc_explore holds the tuning's variants and samples");

/* Off with TCSPARSE_X_TUNE=0 (the launcher's rule then decides every call) and with
 * TCSPARSE_SELECT=model (nothing measured on the executions). */
int tc_tune_enabled(void);

/* The variant a tensor-core execution of kind key on d's path runs, among var[0..nvar)
 * (nvar > 1), var[0] the launcher's choice: *variant receives it.  While the variants are
 * being measured d->measuring is set and, for a timed call, d's reason ends in "; tuning:
 * kernel W of N, sample S of 3".  Returns -1, or an event pair whose first event is recorded
 * on the handle's stream, which the call must close with tc_tune_end after its launch. */
int tc_tune_choose(tcsparseHandle_t h, struct tc_plan *p, tc_call_kind key, tc_decision *d,
                   const int *var, int nvar, int *variant);
/* Closes the pair after the launch; ok = 0 (the launch failed) drops the variant. */
void tc_tune_end(tcsparseHandle_t h, struct tc_plan *p, int pair, int ok);
/* The plan's tuned result for key, or NULL. */
const tc_tuned *tc_tuned_lookup(const struct tc_plan *p, const tc_call_kind *key);

#endif
