/* The measurement on the executions (measure.h), and the plan's measured decisions. */
#include <stdio.h>
#include <string.h>
#include "error.h"
#include "measure.h"
#include "select.h"

_Static_assert(TC_SEL_NCAND == TC_NCAND &&
                   TC_EXPLORE_PAIRS >= TC_SEL_NCAND * TC_SEL_EXPLORE_SAMPLES,
               "plan.h's tc_explore is sized for select.h's candidates and samples");

/* ---- measured decisions ------------------------------------------------------------------ */

const tc_measured *tc_measured_lookup(const struct tc_plan *p, const tc_call_kind *k)
{
    for (int i = p->nmeasured - 1; i >= 0; i--)
        if (tc_call_kind_eq(&p->measured[i].kind, k))
            return &p->measured[i];
    return NULL;
}

void tc_decision_measured(tc_decision *d, const tc_measured *m, int op, int alg3_ok,
                          int force_alg3)
{
    const tc_route_row *alg3 = tc_route_row_of(op, TC_SEL_CAND_ALG3);
    d->ncand = 0;
    tc_decision_take(d, tc_route_cusparse_row(op));
    if (m->path == TCSPARSE_PATH_CUSPARSE && alg3 != NULL && alg3_ok && (m->alg3 || force_alg3))
        tc_decision_take(d, alg3);
    else
        tc_decision_take(d, tc_route_row_on(op, m->path));
    memset(&d->ra, 0, sizeof d->ra);
    d->ra.kind = 3;
    memcpy(d->ra.ms, m->ms, sizeof d->ra.ms);
    d->ra.calls = m->calls;
    d->reason[0] = '\0';
}

void tc_measured_push(struct tc_plan *plan, const tc_measured *m)
{
    if (plan->nmeasured == TC_PLAN_MEASURED) {
        memmove(&plan->measured[0], &plan->measured[1], sizeof *m * (TC_PLAN_MEASURED - 1));
        plan->nmeasured--;
    }
    plan->measured[plan->nmeasured++] = *m;
}

/* d runs candidate k (TC_SEL_CAND_*) of an operation op: that row. */
static void tc_decision_cand(tc_decision *d, int op, int k)
{
    const tc_route_row *r = tc_route_row_of(op, k);
    d->ra.kind = 0;
    tc_decision_take(d, tc_route_cusparse_row(op));
    if (r != NULL)
        tc_decision_take(d, r);
}

void tc_measured_choose(tc_measured *m, const int *order, int n, int first)
{
    int best = first;
    for (int i = 0; i < n; i++)
        if (m->ms[order[i]] >= 0.0f && (m->ms[best] < 0.0f || m->ms[order[i]] < m->ms[best]))
            best = order[i];
    const tc_route_row *r = tc_route_row_of(m->kind.op, best);
    if (r == NULL)
        r = tc_route_cusparse_row(m->kind.op);
    m->path = r->path;
    m->alg3 = r->form == TC_SEL_CAND_ALG3;
}

/* ---- event pairs ----------------------------------------------------------------------- */

int tc_stream_capturing(cudaStream_t s)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess) {
        (void)cudaGetLastError(); /* the error of this query, not the caller's */
        return 1;
    }
    return cap != cudaStreamCaptureStatusNone;
}

int tc_explore_wait_other(tc_explore *x, const tc_call_kind *k)
{
    if (!x->active || tc_call_kind_eq(&x->kind, k))
        return 0;
    return ++x->idle <= TC_EXPLORE_IDLE_CALLS;
}

void tc_explore_abandon(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++)
        x->ev_cand[i] = 0; /* a pending pair may be recorded again: the later record wins */
    x->active = 0;
}

int tc_explore_pending(const tc_explore *x)
{
    int pending = 0;
    for (int i = 0; i < x->nev; i++)
        pending += x->ev_cand[i] != 0;
    return pending;
}

int tc_explore_free_pair(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++)
        if (x->ev_cand[i] == 0)
            return i;
    if (x->nev == TC_EXPLORE_PAIRS)
        return -1;
    if (cudaEventCreate(&x->ev[x->nev][0]) != cudaSuccess) {
        (void)cudaGetLastError(); /* this creation's error, not the caller's */
        return -1;
    }
    if (cudaEventCreate(&x->ev[x->nev][1]) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaEventDestroy(x->ev[x->nev][0]);
        return -1;
    }
    return x->nev++;
}

/* Reads back the samples whose second event has completed (no synchronisation). */
void tc_explore_harvest(tc_explore *x)
{
    for (int i = 0; i < x->nev; i++) {
        if (x->ev_cand[i] == 0)
            continue;
        const cudaError_t e = cudaEventQuery(x->ev[i][1]);
        if (e == cudaErrorNotReady) /* not a last error: nothing to clear */
            continue;
        const int k = x->ev_cand[i] - 1;
        float ms = -1.0f;
        x->ev_cand[i] = 0;
        if (e != cudaSuccess) {
            x->dropped[k] = 1; /* an error of the call's own is the caller's to see */
        } else if (cudaEventElapsedTime(&ms, x->ev[i][0], x->ev[i][1]) != cudaSuccess) {
            (void)cudaGetLastError(); /* this query's error, not the caller's */
            x->dropped[k] = 1;
        } else {
            x->done[k]++;
            if (x->best_ms[k] < 0.0f || ms < x->best_ms[k])
                x->best_ms[k] = ms;
        }
    }
}

/* ---- the route's measurement ------------------------------------------------------------- */

/* Candidate k's name in the reasons: its row's. */
static const char *tc_cand_name(int op, int k)
{
    const tc_route_row *r = tc_route_row_of(op, k);
    return r != NULL ? r->name : "?";
}

/* The measurement is complete: the plan keeps the fastest candidate for this kind of call
 * (the model's choice where none was measured). */
static void tc_explore_finish(struct tc_plan *p)
{
    tc_explore *x = &p->explore;
    tc_measured m = {.kind = x->kind, .calls = x->calls};
    for (int k = 0; k < TC_NCAND; k++)
        m.ms[k] = -1.0f; /* not measured */
    for (int i = 0; i < x->ncand; i++)
        if (!x->dropped[i] && x->done[i] > 0)
            m.ms[x->cand[i]] = x->best_ms[i];
    tc_measured_choose(&m, x->cand, x->ncand, x->cand[0]); /* the model's choice unless faster */
    tc_measured_push(p, &m);
    x->active = 0; /* the events stay for the next kind of call */
}

/* This execution's part in the measurement of its kind of call: returns the pair of events
 * that must wrap it, with d rewritten to the candidate to run, or -1 to run d (rewritten
 * to the measured decision when the measurement completes here). */
static int tc_explore_step_relaxed(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *kind,
                                   tc_decision *d, int alg3_ok)
{
    tc_explore *x = &p->explore;
    if (tc_stream_capturing(h->stream))
        return -1;
    if (tc_explore_wait_other(x, kind)) {
        d->measuring = d->exploring = 1; /* this kind is measured after the other */
        return -1; /* the model decides this call */
    }
    if (x->active && !tc_call_kind_eq(&x->kind, kind))
        tc_explore_abandon(x);
    if (!x->active) {
        if (d->ncand < 2)
            return -1; /* the model's choice has no rival worth a measurement */
        x->active = 1;
        x->kind = *kind;
        x->ncand = d->ncand;
        for (int i = 0; i < TC_SEL_NCAND; i++) {
            x->cand[i] = i < d->ncand ? d->cand[i] : 0;
            x->issued[i] = x->done[i] = x->dropped[i] = 0;
            x->best_ms[i] = -1.0f;
        }
        x->next = 0;
        x->calls = 0;
    }
    x->idle = 0;
    x->calls++;
    tc_explore_harvest(x);
    const int pending = tc_explore_pending(x);
    int left = 0;
    for (int i = 0; i < x->ncand; i++) {
        if (x->cand[i] == TC_SEL_CAND_ALG3 && !alg3_ok)
            x->dropped[i] = 1; /* this call asked for another algorithm than ALG_DEFAULT */
        if (!x->dropped[i] && x->issued[i] < TC_SEL_EXPLORE_SAMPLES)
            left += TC_SEL_EXPLORE_SAMPLES - x->issued[i];
    }
    if (left == 0 && pending == 0) {
        tc_explore_finish(p);
        tc_decision_measured(d, tc_measured_lookup(p, kind), kind->op, alg3_ok, 0);
        return -1;
    }
    const int pair = left > 0 ? tc_explore_free_pair(x) : -1;
    d->measuring = d->exploring = 1;
    if (pair < 0) {
        /* samples still in flight (or no events to be had): the model's choice */
        d->ra.kind = 0;
        snprintf(d->reason, sizeof d->reason,
                 "exploring: %d sample(s) in flight; model: TC %.1f us, cuSPARSE %.1f us",
                 pending,
                 d->pred[d->path == TCSPARSE_PATH_TC_BALANCED ? TC_SEL_CAND_BALANCED
                                                              : TC_SEL_CAND_BASE],
                 d->pred[d->alg3 ? TC_SEL_CAND_ALG3 : TC_SEL_CAND_CUSPARSE]);
        return -1;
    }
    int k = -1;
    for (int j = 0; j < x->ncand && k < 0; j++) {
        const int i = (x->next + j) % x->ncand;
        if (!x->dropped[i] && x->issued[i] < TC_SEL_EXPLORE_SAMPLES)
            k = i;
    }
    x->next = k; /* its samples back to back: the later ones find its own data in L2, as
                  * repeated calls do (and as tcsparse-bench times them) */
    x->issued[k]++;
    x->ev_cand[pair] = k + 1;
    const double pm = d->pred[x->cand[k]];
    tc_decision_cand(d, kind->op, x->cand[k]);
    snprintf(d->reason, sizeof d->reason,
             "exploring: %s, sample %d of %d (model %.1f us; %d candidates)",
             tc_cand_name(kind->op, x->cand[k]),
             x->issued[k], TC_SEL_EXPLORE_SAMPLES, pm, x->ncand);
    return pair;
}

/* The step with this thread's capture mode relaxed: another thread's global-mode capture
 * must not be invalidated by the event queries (they are not part of any capture). */
static int tc_explore_step(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *kind,
                           tc_decision *d, int alg3_ok)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    const int pair = tc_explore_step_relaxed(h, p, kind, d, alg3_ok);
    if (swapped)
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return pair;
}

tcsparseStatus_t tc_route_run(tcsparseHandle_t h, struct tc_plan *plan, const tc_call_kind *k,
                              tc_decision *d, int alg3_ok, tc_exec_fn run, void *ctx)
{
    int as_planned;
    if (tc_hook_on(h, TC_HOOK_DECIDE_ONLY)) { /* the interposer asks where the call would go */
        tc_route_record(h, d);
        h->hook.deferred = 1;
        return TCSPARSE_STATUS_SUCCESS;
    }
    /* measured only for a model decision with candidates, not with TCSPARSE_SELECT=model; on
     * the interposer's handles, which run the real cuSPARSE themselves, the candidates are the
     * library's own paths (route.c, tc_route_own_paths) */
    if (d->ncand == 0 || plan == NULL || tc_select_model_only())
        return run(ctx, d, &as_planned);
    const tc_decision model = *d;
    const int pair = tc_explore_step(h, plan, k, d, alg3_ok);
    if (pair < 0)
        return run(ctx, d, &as_planned);
    tc_explore *x = &plan->explore;
    const int c = x->ev_cand[pair] - 1;
    tc_decision again = model;
    if (cudaEventRecord(x->ev[pair][0], h->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
        return run(ctx, &again, &as_planned);
    }
    tcsparseStatus_t st = run(ctx, d, &as_planned);
    if (st != TCSPARSE_STATUS_SUCCESS || !as_planned) {
        /* the candidate cannot run here, or ran as another: no sample, no candidate */
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
        /* the model's choice runs instead only after a refusal made before anything was
         * launched (a short cuSPARSE buffer, an unsupported case): after a failed launch C
         * may be partly written, and beta must not be applied twice */
        const int refused = st == TCSPARSE_STATUS_INVALID_VALUE || st == TCSPARSE_STATUS_NOT_SUPPORTED;
        if (st == TCSPARSE_STATUS_SUCCESS || c == 0 || !refused)
            return st; /* c == 0: the model's own choice failed, as it would have unmeasured */
        tc_error_clear();
        return run(ctx, &again, &as_planned);
    }
    if (cudaEventRecord(x->ev[pair][1], h->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        x->ev_cand[pair] = 0;
        x->dropped[c] = 1;
    }
    return st;
}
