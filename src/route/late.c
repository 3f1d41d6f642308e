/* Late ordering (late.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "config.h"
#include "error.h"
#include "late.h"
#include "measure.h"
#include "reorder.h"

static double tc_late_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

_Static_assert(2 * TC_LATE_SAMPLES <= TC_EXPLORE_PAIRS, "tc_explore holds a pair for every sample");

/* The share of blocks the ordering must save to be timed: TCSPARSE_X_REORDER_MIN_GAIN when
 * set, else TC_LATE_MIN_GAIN (lower than AUTO's 10%: the trial measures, and NotreDame_www's
 * SDDMM gains 17% from a 6% block saving). */
static double tc_late_min_gain(void)
{
    const double g = tc_config_get()->reorder.min_gain;
    return g >= 0.0 ? g : TC_LATE_MIN_GAIN;
}

/* late.h */
int tc_late_path_in(const struct tc_plan *ran, const tc_call_kind *k, const tc_decision *dec,
                    double *reach)
{
    double share = -1.0; /* the CUDA cores' time as a share of the tensor cores' */
    int in = tc_path_on_plan(dec->path);
    if (!in && dec->path == TCSPARSE_PATH_CUDA_CORE && ran != NULL) {
        const struct tc_measured *m = tc_measured_lookup(ran, k);
        const float cc = m != NULL && m->path == TCSPARSE_PATH_CUDA_CORE
                             ? m->ms[TC_SEL_CAND_CSR] : -1.0f;
        float tc = -1.0f;
        for (int c = TC_SEL_CAND_BASE; c <= TC_SEL_CAND_BALANCED && cc > 0.0f; c++)
            if (m->ms[c] > 0.0f && (tc < 0.0f || m->ms[c] < tc))
                tc = m->ms[c];
        in = tc > 0.0f && tc <= TC_LATE_CC_REACH * cc;
        share = in ? (double)cc / tc : -1.0;
    }
    if (reach != NULL) {
        *reach = 1.0 - tc_late_min_gain();
        if (share > 0.0 && share < *reach)
            *reach = share;
    }
    return in;
}

static int tc_late_logging(tcsparseHandle_t h)
{
    return !tc_hook_on(h, TC_HOOK_QUIET) && tc_config_get()->log;
}

/* Appends tail to the handle's last route reason (formatting a pending model reason first). */
static void tc_late_note(tcsparseHandle_t h, const char *tail)
{
    tcsparseRouteInfo_t *r = &h->last_route;
    if (h->pending_reason.kind != 0) {
        tc_reason_format(&h->pending_reason, r->reason, sizeof r->reason);
        h->pending_reason.kind = 0;
    }
    const size_t tl = strlen(tail);
    if (tl + 1 > sizeof r->reason)
        return;
    size_t len = strlen(r->reason);
    if (len + tl + 1 > sizeof r->reason)
        len = sizeof r->reason - 1 - tl;
    memcpy(r->reason + len, tail, tl + 1);
    if (tc_late_logging(h))
        fprintf(stderr, "tcsparse: late ordering%s\n", tail);
}

/* "the caller's order", or the name of the plan's ordering. */
static const char *tc_late_plan_name(const struct tc_plan *p)
{
    const int o = p != NULL ? p->stats.reorder_ordering : TC_ORD_IDENTITY;
    return o == TC_ORD_IDENTITY ? "the caller's order" : tc_ordering_name(o);
}

/* The state that describes the current plan once a trial has ended. */
static int tc_late_kept_state(struct tcsparseSpMatDescr *d)
{
    const int o = d->plan != NULL ? d->plan->stats.reorder_ordering : TC_ORD_IDENTITY;
    if (o != TC_ORD_IDENTITY)
        d->late.kept_ordering = o;
    return o != TC_ORD_IDENTITY ? TCSPARSE_LATE_KEPT_ORDERED : TCSPARSE_LATE_KEPT_CALLER;
}

/* Whether round 1 tries bfs for calls of kind k: a matrix of at most TC_LATE_BFS_MAX_NNZ
 * nonzeros (the host's search, about 25 ms a million nonzeros with the copy) whose gathered
 * rows of B (cols x N or K elements) do not fit in L2, where the order of the rows decides
 * how many gathers hit there.  TCSPARSE_X_REORDER_LATE_BFS=0 never, 1 whatever B's size (tests
 * and measurements). */
static int tc_late_bfs_applies(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                               const tc_call_kind *k)
{
    const int forced = tc_config_get()->reorder.late_bfs; /* 0, 1 or TC_CFG_RULE */
    if (forced == 0 || d->nnz <= 0 || d->nnz > TC_LATE_BFS_MAX_NNZ)
        return 0;
    if (forced == 1)
        return 1;
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, h->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const double row = (double)k->n * (k->ab_type == TC_T_F32 ? 4.0 : 2.0);
    return (double)d->cols * row > (double)l2;
}

/* A round has ended with state (its plan kept): round 1 follows round 0 where it applies to
 * the trial's kind of call, started by the next settled tensor-core call (which checks again
 * for its own kind). */
static void tc_late_round_done(tcsparseHandle_t h, struct tcsparseSpMatDescr *d, int state)
{
    struct tc_late *l = &d->late;
    l->state = state;
    if (l->round == 0 && tc_late_bfs_applies(h, d, &l->kind)) {
        l->round = 1;
        l->prev_state = state;
        l->state = TCSPARSE_LATE_WAITING;
    }
}

/* Destroys the events (on their own device; those of a context that has ended since,
 * cudaDeviceReset, went with it) and forgets any pending sample. */
static void tc_late_forget_events(struct tc_late *l)
{
    if (l->x.nev == 0)
        return;
    int cur = -1;
    const int other = cudaGetDevice(&cur) == cudaSuccess && cur != l->dev &&
                      cudaSetDevice(l->dev) == cudaSuccess;
    const unsigned long long ctx = tc_context_id();
    if (l->ctx == 0 || ctx == 0 || ctx == l->ctx)
        for (int i = 0; i < l->x.nev; i++) {
            (void)cudaEventDestroy(l->x.ev[i][0]);
            (void)cudaEventDestroy(l->x.ev[i][1]);
        }
    if (other)
        (void)cudaSetDevice(cur);
    (void)cudaGetLastError(); /* these calls' errors, not the caller's */
    memset(l->x.ev_cand, 0, sizeof l->x.ev_cand);
    l->x.nev = 0;
    l->sample = -1;
}

void tc_late_reset(struct tcsparseSpMatDescr *d)
{
    struct tc_late *l = &d->late;
    tc_late_forget_events(l); /* no CUDA call when there are none */
    memset(l, 0, sizeof *l);
    l->sample = -1;
}

void tc_late_trial_lost(struct tcsparseSpMatDescr *d)
{
    struct tc_late *l = &d->late;
    tc_explore_abandon(&l->x);
    l->state = tc_late_kept_state(d);
}

void tc_late_stats(const struct tcsparseSpMatDescr *d, tcsparseMetcfStats_t *s)
{
    const struct tc_late *l = &d->late;
    s->late_state = l->state;
    if (!l->looked && tc_reorder_mode(d, NULL) == TCSPARSE_REORDER_LATE && !tc_select_model_only() &&
        d->format == TCSPARSE_FORMAT_CSR && d->batch_count <= 1)
        s->late_state = TCSPARSE_LATE_WAITING; /* no execution has looked yet */
    s->late_calls = l->calls;
    s->late_build_ms = l->build_ms;
    s->late_ms_caller = l->x.done[0] > 0 ? l->x.best_ms[0] : -1.0f;
    s->late_ms_ordered = l->x.done[1] > 0 ? l->x.best_ms[1] : -1.0f;
}

/* A free event pair of the sampler (route.c), noting the context and device of new ones. */
static int tc_late_free_pair(struct tc_late *l)
{
    const int before = l->x.nev;
    const int pair = tc_explore_free_pair(&l->x);
    if (l->x.nev > before) {
        l->ctx = tc_context_id();
        if (cudaGetDevice(&l->dev) != cudaSuccess) {
            (void)cudaGetLastError();
            l->dev = 0;
        }
    }
    return pair;
}

/* The trial measures kind k from scratch: no sample, the ordered plan to settle first. */
static void tc_late_trial_kind(struct tc_late *l, const tc_call_kind *k)
{
    l->kind = *k;
    l->sampling = 0;
    l->issued = l->idle = l->calls = 0;
    l->untimed = 0;
    tc_explore_abandon(&l->x);
    for (int i = 0; i < 2; i++) {
        l->x.done[i] = l->x.dropped[i] = 0;
        l->x.best_ms[i] = -1.0f;
    }
}

/* The trial ends: the current plan stays (the ordered one), the other is freed when no
 * capture is under way (else by a later call). */
static void tc_late_end_trial(struct tc_late *l, int state)
{
    tc_explore_abandon(&l->x);
    l->state = state;
    l->sampling = 0;
}

/* Both plans timed: the faster stays current (the round's plan, or the one set aside: the
 * caller's order's in round 0, round 0's choice in round 1). */
static void tc_late_decide(tcsparseHandle_t h, struct tcsparseSpMatDescr *d)
{
    struct tc_late *l = &d->late;
    char *tail = l->note;
    const float *best = l->x.best_ms;
    const int both = l->x.done[0] > 0 && l->x.done[1] > 0;
    const char *cand = tc_ordering_name(l->ordering), *prev = tc_late_plan_name(l->other);
    if (both && best[0] < best[1] && l->other != NULL) {
        struct tc_plan *ordered = d->plan;
        d->plan = l->other;
        l->other = ordered;
        snprintf(tail, sizeof l->note, "; ordering: %s kept (%.4f ms, %s %.4f ms)", prev,
                 best[0], cand, best[1]);
    } else if (both) {
        snprintf(tail, sizeof l->note, "; ordering: %s kept (%.4f ms, %s %.4f ms)", cand,
                 best[1], prev, best[0]);
    } else {
        snprintf(tail, sizeof l->note, "; ordering: %s kept (samples lost)", cand);
    }
    tc_late_end_trial(l, TCSPARSE_LATE_TRIAL);
    tc_plan_release(d, l->other); /* not capturing: checked by the caller */
    tc_late_round_done(h, d, tc_late_kept_state(d));
}

static void tc_late_begin_relaxed(tcsparseHandle_t h, struct tcsparseSpMatDescr *d,
                                  const tc_call_kind *k)
{
    struct tc_late *l = &d->late;
    const int capturing = tc_stream_capturing(h->stream);
    if (l->other != NULL && l->state != TCSPARSE_LATE_TRIAL && !capturing)
        tc_plan_release(d, l->other); /* a trial's loser, left by a capture */
    if (l->state != TCSPARSE_LATE_TRIAL)
        return;
    /* The trial's plans and sample events are one device's (the descriptor used through
     * handles on two devices, its arrays reached by peer access): a call from another
     * device's handle neither samples nor counts.  Its tc_plan_get drops both plans, which
     * ends the trial (WAITING), and tc_late_start forgets the events before the next one.
     * Nor does a call made while another device than the handle's is current (refused by
     * tc_handle_cusparse): its events would be that device's. */
    if (d->plan != NULL && d->plan->device != h->device)
        return;
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        (void)cudaGetLastError(); /* this query's error, not the caller's */
        return;
    }
    if (cur != h->device)
        return;
    if (capturing) {
        tc_late_end_trial(l, tc_late_kept_state(d)); /* the capture uses it */
        snprintf(l->note, sizeof l->note, "; ordering: %s kept (a stream capture ended the trial)",
                 tc_ordering_name(l->ordering));
        return;
    }
    if (tc_hook_on(h, TC_HOOK_DECIDE_ONLY)) {
        /* the interposer asks where a call would go: nothing runs, nothing to time */
        if (++l->idle > TC_LATE_IDLE_CALLS) {
            tc_late_end_trial(l, tc_late_kept_state(d));
            snprintf(l->note, sizeof l->note,
                     "; ordering: %s kept (the trial's calls cannot be timed)",
                     tc_ordering_name(l->ordering));
        }
        return;
    }
    if (!tc_call_kind_eq(&l->kind, k)) {
        if (++l->idle <= TC_LATE_IDLE_CALLS)
            return;
        /* the trial's kind stopped coming: the trial goes on with this call's kind (its
         * calls settle on the ordered plan first, as the first kind's did) */
        tc_late_trial_kind(l, k);
        snprintf(l->note, sizeof l->note, "; ordering: trial moved to another kind of call");
    }
    l->idle = 0;
    if (++l->calls > TC_LATE_MAX_CALLS) {
        /* no progress (events that cannot be had or recorded, calls that never reach the
         * tensor cores): the trial ends rather than hold both plans */
        tc_late_end_trial(l, tc_late_kept_state(d));
        snprintf(l->note, sizeof l->note, "; ordering: %s kept (the trial took %d calls)",
                 tc_ordering_name(l->ordering), TC_LATE_MAX_CALLS);
        return;
    }
    if (!l->sampling)
        return; /* the ordered plan is still measuring its route and kernels */
    tc_explore_harvest(&l->x);
    if (l->issued >= 2 * TC_LATE_SAMPLES) {
        if (tc_explore_pending(&l->x) == 0)
            tc_late_decide(h, d);
        return;
    }
    const int pair = tc_late_free_pair(l);
    if (pair < 0)
        return;
    const int which = l->issued % 2; /* the caller's order first, then in turn */
    if (cudaEventRecord(l->x.ev[pair][0], h->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    l->x.ev_cand[pair] = which + 1;
    l->sample = pair;
    l->pick_other = which == 0;
    l->issued++;
}

void tc_late_begin(tcsparseHandle_t h, struct tcsparseSpMatDescr *d, const tc_call_kind *k)
{
    struct tc_late *l = &d->late;
    l->pick_other = 0;
    l->sample = -1;
    l->note[0] = '\0';
    if (!l->looked) { /* once per descriptor and setting (tc_late_reset starts over) */
        l->looked = 1;
        l->sample = -1;
        const int on = tc_reorder_mode(d, NULL) == TCSPARSE_REORDER_LATE &&
                       d->format == TCSPARSE_FORMAT_CSR && d->batch_count <= 1 &&
                       !tc_select_model_only();
        l->state = on ? TCSPARSE_LATE_WAITING : TCSPARSE_LATE_NONE;
    }
    if (l->state != TCSPARSE_LATE_TRIAL && l->other == NULL)
        return; /* nothing to time or free: no CUDA call on the settled path */
    /* relaxed: another thread's global-mode capture must not be invalidated by the event
     * queries (they are not part of any capture) */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    tc_late_begin_relaxed(h, d, k);
    if (swapped)
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

/* A round that could not run ends: round 0 with state, round 1 with round 0's outcome. */
static void tc_late_not_run(struct tc_late *l, int state)
{
    l->state = l->round == 0 ? state : l->prev_state;
}

/* The first call of a round's trial: the round's plan is built and, with enough fewer blocks
 * than the caller's order, becomes current; the current plan is set aside. */
static void tc_late_start(tcsparseHandle_t h, struct tcsparseSpMatDescr *d,
                          const tc_call_kind *k)
{
    struct tc_late *l = &d->late;
    struct tc_plan *cur = d->plan, *p = NULL;
    char tail[160];
    if (l->round == 1 && !tc_late_bfs_applies(h, d, k)) {
        l->state = l->prev_state; /* no note: nothing was tried */
        return;
    }
    l->ordering = l->round == 0 ? TC_ORD_FIRST_COL : TC_ORD_BFS;
    const char *name = tc_ordering_name(l->ordering);
    if (l->x.nev > 0 && l->ctx != tc_context_id())
        tc_late_forget_events(l); /* made for another device (or a context reset since) */
    const double t0 = tc_late_now_ms();
    tcsparseStatus_t st = tc_plan_build_late(h, d, l->ordering, &p);
    l->build_ms = tc_late_now_ms() - t0;
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(tail, sizeof tail, "; ordering: %s not tried (%.100s)", name,
                 tcsparseGetLastErrorMessage());
        tc_error_clear(); /* the call itself succeeded */
        tc_late_not_run(l, TCSPARSE_LATE_NOT_TRIED);
        tc_late_note(h, tail);
        return;
    }
    if (l->round == 0)
        l->caller_blocks = cur->dev.blocks;
    const int64_t before = l->caller_blocks, after = p->dev.blocks;
    if (before > 0)
        p->stats.reorder_nnz_per_block_before = (double)cur->dev.nnz / (double)before;
    if ((double)after > (double)before * l->reach) {
        tc_plan_discard(p);
        snprintf(tail, sizeof tail,
                 "; ordering: %s not kept (%lld blocks, caller's order %lld, at most %.0f%% timed)",
                 name, (long long)after, (long long)before, 100.0 * l->reach);
        if (l->round == 0) {
            l->kind = *k; /* the kind round 1 is judged for */
            tc_late_round_done(h, d, TCSPARSE_LATE_NO_GAIN);
        } else {
            l->state = l->prev_state;
        }
        tc_late_note(h, tail);
        return;
    }
    st = tc_plan_cache_add(d, p); /* frees p when it cannot fit */
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(tail, sizeof tail, "; ordering: %s not tried (%.100s)", name,
                 tcsparseGetLastErrorMessage());
        tc_error_clear();
        tc_late_not_run(l, TCSPARSE_LATE_NOT_TRIED);
        tc_late_note(h, tail);
        return;
    }
    /* the cache may have evicted the current plan to make room */
    if (d->plan != cur) {
        tc_plan_release(d, p);
        tc_late_not_run(l, TCSPARSE_LATE_NOT_TRIED);
        snprintf(tail, sizeof tail, "; ordering: %s not tried (no room for both plans)", name);
        tc_late_note(h, tail);
        return;
    }
    l->other = cur;
    d->plan = p;
    l->state = TCSPARSE_LATE_TRIAL;
    tc_late_trial_kind(l, k);
    l->calls = 1; /* this call, which built the plan */
    if (l->round == 0)
        snprintf(tail, sizeof tail, "; ordering: trial, %s built (%lld blocks, caller's order %lld, %.2f ms)",
                 name, (long long)after, (long long)before, l->build_ms);
    else
        snprintf(tail, sizeof tail, "; ordering: trial, %s built (%lld blocks, caller's order %lld, %s %lld, %.2f ms)",
                 name, (long long)after, (long long)before, tc_late_plan_name(cur),
                 (long long)cur->dev.blocks, l->build_ms);
    tc_late_note(h, tail);
}

/* noted: begin's note is already this call's reason tail (then no status tail of its own). */
static void tc_late_end_relaxed(tcsparseHandle_t h, struct tcsparseSpMatDescr *d,
                                const struct tc_plan *ran, const tc_call_kind *k,
                                const tc_decision *dec, tcsparseStatus_t st, int noted)
{
    struct tc_late *l = &d->late;
    const int settled = st == TCSPARSE_STATUS_SUCCESS && !dec->measuring;
    if (l->state == TCSPARSE_LATE_WAITING) {
        if (ran == NULL || ran != d->plan || !tc_late_path_in(ran, k, dec, &l->reach) ||
            tc_hook_on(h, TC_HOOK_DECIDE_ONLY) ||
            noted) /* noted: round 0 ended in this call; the next starts 1 */
            return;
        if (tc_stream_capturing(h->stream)) {
            /* a graph now holds the current plan: it must not be freed */
            tc_late_not_run(l, TCSPARSE_LATE_NOT_TRIED);
            return;
        }
        /* not on the plan's first call, which has just built it */
        if (++l->plan_calls > 1 && settled)
            tc_late_start(h, d, k);
        return;
    }
    if (l->state != TCSPARSE_LATE_TRIAL || !tc_call_kind_eq(&l->kind, k) ||
        tc_hook_on(h, TC_HOOK_DECIDE_ONLY))
        return;
    if (l->untimed != 0) {
        /* the interposer ran one plan's call on cuSPARSE itself: that plan's route is
         * cuSPARSE there, by the model; the plan whose calls stay on the tensor cores is kept */
        const int back = (l->untimed & 2) != 0; /* the round's plan went to cuSPARSE */
        char tail[140];
        const char *cand = tc_ordering_name(l->ordering), *prev = tc_late_plan_name(l->other);
        snprintf(tail, sizeof tail, "; ordering: %s kept (%s's calls go to cuSPARSE)",
                 back ? prev : cand, back ? cand : prev);
        if (back && l->other != NULL) {
            struct tc_plan *ordered = d->plan;
            d->plan = l->other;
            l->other = ordered;
        }
        tc_late_end_trial(l, TCSPARSE_LATE_TRIAL);
        tc_plan_release(d, l->other); /* a sample ran: not capturing */
        tc_late_round_done(h, d, tc_late_kept_state(d));
        tc_late_note(h, tail);
        return;
    }
    if (!l->sampling && settled && ran == d->plan)
        l->sampling = 1;
    if (noted)
        return;
    char tail[80];
    if (!l->sampling)
        snprintf(tail, sizeof tail, "; ordering: trial, %s plan measuring",
                 tc_ordering_name(l->ordering));
    else if (l->issued < 2 * TC_LATE_SAMPLES || tc_explore_pending(&l->x) > 0)
        snprintf(tail, sizeof tail, "; ordering: trial, sample %d of %d", l->issued,
                 2 * TC_LATE_SAMPLES);
    else
        snprintf(tail, sizeof tail, "; ordering: trial, deciding");
    tc_late_note(h, tail);
}

int tc_call_learning(const struct tcsparseSpMatDescr *d, const struct tc_plan *ran,
                     const tc_call_kind *k, const tc_decision *dec)
{
    if (dec->exploring)
        return 2;
    if (dec->measuring)
        return 1;
    if (d == NULL)
        return 0;
    const struct tc_late *l = &d->late;
    return l->state == TCSPARSE_LATE_TRIAL ||
           (l->state == TCSPARSE_LATE_WAITING && ran != NULL && ran == d->plan &&
            tc_late_path_in(ran, k, dec, NULL));
}

void tc_late_end(tcsparseHandle_t h, struct tcsparseSpMatDescr *d, const struct tc_plan *ran,
                 const tc_call_kind *k, const tc_decision *dec, tcsparseStatus_t st)
{
    struct tc_late *l = &d->late;
    if (l->sample >= 0) {
        const int which = l->x.ev_cand[l->sample] - 1;
        if (st == TCSPARSE_STATUS_SUCCESS && h->hook.deferred) {
            /* the interposer runs this call on cuSPARSE after it returns: not timed here */
            l->x.ev_cand[l->sample] = 0;
            if (which >= 0)
                l->untimed |= 1 << which;
        } else if (st == TCSPARSE_STATUS_SUCCESS && dec->measuring) {
            /* the plan was still measuring its route or kernels for this kind (a kind the
             * caller's order's plan had not settled): not a sample, taken again later */
            l->x.ev_cand[l->sample] = 0;
            l->issued--;
        } else if (st != TCSPARSE_STATUS_SUCCESS ||
                   cudaEventRecord(l->x.ev[l->sample][1], h->stream) != cudaSuccess) {
            if (st == TCSPARSE_STATUS_SUCCESS)
                (void)cudaGetLastError();
            l->x.ev_cand[l->sample] = 0; /* no sample */
        }
        l->sample = -1;
    }
    l->pick_other = 0;
    int noted = 0;
    if (l->note[0] != '\0') { /* decided by begin: the route reason is this call's now */
        if (ran != NULL || st == TCSPARSE_STATUS_SUCCESS) { /* else it is another call's */
            tc_late_note(h, l->note);
            noted = 1;
        }
        l->note[0] = '\0';
    }
    if (l->state != TCSPARSE_LATE_TRIAL &&
        (l->state != TCSPARSE_LATE_WAITING || ran == NULL ||
         !tc_late_path_in(ran, k, dec, NULL) || tc_hook_on(h, TC_HOOK_DECIDE_ONLY)))
        return; /* the settled path: no CUDA call */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int swapped = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    tc_late_end_relaxed(h, d, ran, k, dec, st, noted);
    if (swapped)
        (void)cudaThreadExchangeStreamCaptureMode(&mode);
}
