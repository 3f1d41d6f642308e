/* Kernel tuning on the executions (tune.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure.h"
#include "config.h"
#include "tune.h"

int tc_tune_enabled(void)
{
    if (!tc_config_get()->tune)
        return 0;
    return !tc_select_model_only();
}

const tc_tuned *tc_tuned_lookup(const struct tc_plan *p, const tc_call_kind *key)
{
    for (int i = p->ntuned - 1; i >= 0; i--)
        if (tc_call_kind_eq(&p->tuned[i].key, key))
            return &p->tuned[i];
    return NULL;
}

/* The measurement of p->tune is complete: the plan keeps its fastest variant (the
 * launcher's choice where nothing was measured). */
static const tc_tuned *tc_tune_finish(struct tc_plan *p)
{
    tc_explore *x = &p->tune;
    tc_tuned t = {.key = x->kind, .variant = x->cand[0], .nvar = x->ncand, .calls = x->calls};
    /* the launcher's choice without a sample (its events failed): nothing to compare with */
    const int compare = !x->dropped[0] && x->done[0] > 0;
    float best = -1.0f;
    for (int i = 0; i < x->ncand; i++) {
        t.var[i] = x->cand[i];
        t.ms[i] = !x->dropped[i] && x->done[i] > 0 ? x->best_ms[i] : -1.0f;
        /* another variant than the launcher's choice only when faster by TC_TUNE_MARGIN */
        const float ms = i == 0 ? t.ms[i] : t.ms[i] * (float)TC_TUNE_MARGIN;
        if (compare && t.ms[i] >= 0.0f && (best < 0.0f || ms < best)) {
            best = ms;
            t.variant = x->cand[i];
        }
    }
    if (p->ntuned == TC_PLAN_TUNED) { /* the oldest goes */
        memmove(&p->tuned[0], &p->tuned[1], sizeof t * (TC_PLAN_TUNED - 1));
        p->ntuned--;
    }
    p->tuned[p->ntuned++] = t;
    x->active = 0; /* the events stay for the next kind */
    return &p->tuned[p->ntuned - 1];
}

/* Samples of x still to issue. */
static int tc_tune_left(const tc_explore *x)
{
    int left = 0;
    for (int i = 0; i < x->ncand; i++)
        if (!x->dropped[i] && x->issued[i] < TC_TUNE_SAMPLES)
            left += TC_TUNE_SAMPLES - x->issued[i];
    return left;
}

static int tc_tune_step(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *key,
                        const int *var, int nvar, int *variant, int *which, int *sample)
{
    tc_explore *x = &p->tune;
    if (tc_stream_capturing(h->stream))
        return -1;
    if (tc_explore_wait_other(x, key))
        return -1;
    if (x->active && !tc_call_kind_eq(&x->kind, key)) {
        /* the other kind's samples, when all are in, still make its result */
        tc_explore_harvest(x);
        if (tc_tune_left(x) == 0 && tc_explore_pending(x) == 0)
            (void)tc_tune_finish(p);
        else
            tc_explore_abandon(x);
    }
    if (!x->active) {
        memset(x->cand, 0, sizeof x->cand);
        memset(x->issued, 0, sizeof x->issued);
        memset(x->done, 0, sizeof x->done);
        memset(x->dropped, 0, sizeof x->dropped);
        for (int i = 0; i < 4; i++)
            x->best_ms[i] = -1.0f;
        for (int i = 0; i < nvar; i++)
            x->cand[i] = var[i];
        x->active = 1;
        x->kind = *key;
        x->ncand = nvar;
        x->next = nvar - 1; /* the launcher's choice first */
        x->calls = 0;
    }
    x->idle = 0;
    x->calls++;
    tc_explore_harvest(x);
    const int left = tc_tune_left(x), pending = tc_explore_pending(x);
    if (left == 0 && pending == 0) {
        *variant = tc_tune_finish(p)->variant;
        return -1;
    }
    const int pair = left > 0 ? tc_explore_free_pair(x) : -1;
    if (pair < 0)
        return -1; /* samples in flight, or no events: the launcher's choice */
    /* the variants in turn, so that no sample follows one of its own kind: an application's
     * call follows other kernels, with their own data in L2 and their own shared memory
     * carveout (switching to and from the wide-L1 instance's costs time; measured back to
     * back, that instance won samples on ogbl-ddi that it lost 3-7% in the benchmark's
     * interleaved loop) */
    int k = -1;
    for (int j = 1; j <= x->ncand && k < 0; j++) {
        const int i = (x->next + j) % x->ncand;
        if (!x->dropped[i] && x->issued[i] < TC_TUNE_SAMPLES)
            k = i;
    }
    if (cudaEventRecord(x->ev[pair][0], h->stream) != cudaSuccess) {
        (void)cudaGetLastError(); /* this record's error, not the caller's */
        x->dropped[k] = 1;
        return -1;
    }
    x->next = k;
    x->issued[k]++;
    x->ev_cand[pair] = k + 1;
    *variant = x->cand[k];
    *which = k;
    *sample = x->issued[k];
    return pair;
}

/* The variant this execution runs for key (its path set), among var[0..nvar), var[0] the
 * launcher's choice: *variant receives it.  Returns -1, or an event pair whose first event
 * is recorded on the handle's stream: the call then runs sample *sample (1-based) of
 * variant number *which (0-based). */
static int tc_tune_begin(tcsparseHandle_t h, struct tc_plan *p, const tc_call_kind *key,
                         const int *var, int nvar, int *variant, int *which, int *sample)
{
    *variant = var[0];
    const tc_tuned *t = tc_tuned_lookup(p, key);
    if (t != NULL) {
        *variant = t->variant;
        return -1;
    }
    /* the automatic route is measuring this kind of call: its samples time the launcher's
     * choice (a forced route never measures, and must not wait for the route's measurement,
     * which only the automatic route's calls advance) */
    tc_call_kind route_key = *key;
    route_key.path = 0;
    if (p->explore.active && tc_call_kind_eq(&p->explore.kind, &route_key) &&
        tc_route_effective(h) == TCSPARSE_ROUTE_AUTO)
        return -1;
    /* relaxed: another thread's global-mode capture must not be invalidated by the event
     * queries (they are not part of any capture) */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    const int pair = tc_tune_step(h, p, key, var, nvar, variant, which, sample);
    if (swapped)
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return pair;
}

void tc_tune_end(tcsparseHandle_t h, struct tc_plan *p, int pair, int ok)
{
    tc_explore *x = &p->tune;
    const int k = x->ev_cand[pair] - 1;
    if (ok) {
        if (cudaEventRecord(x->ev[pair][1], h->stream) == cudaSuccess)
            return;
        (void)cudaGetLastError(); /* this record's error, not the caller's */
    }
    x->ev_cand[pair] = 0;
    if (k >= 0)
        x->dropped[k] = 1;
}

/* d's reason (a model's formatted now) followed by "; tuning: kernel W of N, sample S of 3". */
static void tc_tune_reason(tc_decision *d, int which, int nvar, int sample)
{
    char base[sizeof d->reason], tail[64];
    if (d->ra.kind != 0)
        tc_reason_format(&d->ra, base, sizeof base);
    else
        snprintf(base, sizeof base, "%s", d->reason);
    snprintf(tail, sizeof tail, "; tuning: kernel %d of %d, sample %d of %d", which + 1, nvar,
             sample, TC_TUNE_SAMPLES);
    const int room = (int)(sizeof d->reason - 1 - strlen(tail));
    snprintf(d->reason, sizeof d->reason, "%.*s%s", room, base, tail);
    d->ra.kind = 0;
}

int tc_tune_choose(tcsparseHandle_t h, struct tc_plan *p, tc_call_kind key, tc_decision *d,
                   const int *var, int nvar, int *variant)
{
    int which = 0, sample = 0;
    key.path = d->path;
    const int pair = tc_tune_begin(h, p, &key, var, nvar, variant, &which, &sample);
    if (pair >= 0 || tc_tuned_lookup(p, &key) == NULL)
        d->measuring = 1; /* the kernel tuning goes on (late.c waits for its end) */
    if (pair >= 0)
        tc_tune_reason(d, which, nvar, sample);
    return pair;
}
