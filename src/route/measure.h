/* The measurement on the executions (docs/selector.md, section 5): with the automatic route,
 * the first executions of a kind of call (tc_call_kind) on a plan run each candidate row of
 * the model's TC_SEL_EXPLORE_SAMPLES times between CUDA events, the model's choice first; the
 * plan then keeps the fastest as its measured decision for that kind (tc_measured, plan.h).
 * No synchronisation: a sample's time is read back by a later call (cudaEventQuery); nothing
 * is queried or recorded while the stream is captured.  Its event pairs (tc_explore) also
 * serve the kernel tuning (tune.c) and late ordering (late.c). */
#ifndef TC_MEASURE_H
#define TC_MEASURE_H

#include "route.h"

/* ---- measured decisions ------------------------------------------------------------------ */

/* The plan's measured decision for this kind of call, or NULL. */
const struct tc_measured *tc_measured_lookup(const struct tc_plan *p, const tc_call_kind *k);
/* Appends m to the plan's measured decisions, dropping the oldest when full. */
void tc_measured_push(struct tc_plan *plan, const struct tc_measured *m);
/* m->path and m->alg3: the row of the fastest measured of the candidates (TC_SEL_CAND_*) in
 * order[0..n), starting from candidate first (kept where nothing is faster; ties go to the
 * earlier). */
void tc_measured_choose(struct tc_measured *m, const int *order, int n, int first);
/* d takes the measured decision m (its reason text made when read, like a model's); alg3_ok:
 * the SpMM cuSPARSE route may run CSR_ALG3, force_alg3: TCSPARSE_X_CUSPARSE_ALG3=1. */
void tc_decision_measured(tc_decision *d, const struct tc_measured *m, int op, int alg3_ok,
                          int force_alg3);

/* ---- running a decision ------------------------------------------------------------------ */

/* Runs decision d: run(ctx, d, &as_planned) executes and records a decision (as_planned 0
 * when it ran as another path: CSR_ALG3 falling back).  For the interposer's decide-only
 * calls it records d and runs nothing.  A model decision of the automatic route with
 * candidates (d->ncand > 0) goes through the measurement on the executions, which may run a
 * candidate instead; otherwise (nothing to measure, TCSPARSE_SELECT=model, the interposer,
 * another kind in progress, a capture) d runs as it is. */
typedef tcsparseStatus_t (*tc_exec_fn)(void *ctx, tc_decision *d, int *as_planned);
tcsparseStatus_t tc_route_run(tcsparseHandle_t h, struct tc_plan *plan, const tc_call_kind *k,
                              tc_decision *d, int alg3_ok, tc_exec_fn run, void *ctx);

/* ---- event pairs (the route's measurement, the kernel tuning, late ordering) --------------- */

/* Whether the stream is being captured (or cannot be asked): nothing is queried, created or
 * recorded for such a stream, since a query of an event inside a global-mode capture
 * invalidates the caller's graph. */
int tc_stream_capturing(cudaStream_t s);
/* x is measuring another kind than k: 1 while that kind may still come back (this call is
 * left alone; the call is counted), 0 once it has been idle for TC_EXPLORE_IDLE_CALLS calls
 * of other kinds (a one-off N must not hold the plan's measurement for ever), or when x is
 * idle or measuring k. */
int tc_explore_wait_other(tc_explore *x, const tc_call_kind *k);
/* Gives up x's measurement: its pending pairs are free again. */
void tc_explore_abandon(tc_explore *x);
/* Samples of x in flight (pairs recorded and not yet read back). */
int tc_explore_pending(const tc_explore *x);
/* A free event pair of x, created when none is (-1: none to be had). */
int tc_explore_free_pair(tc_explore *x);
/* Reads back the samples of x whose second event has completed (no synchronisation):
 * done[], best_ms[] and dropped[] by candidate index; their pairs are free again. */
void tc_explore_harvest(tc_explore *x);

#endif
