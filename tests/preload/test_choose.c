/* The interposer's measured choice between tcsparse and cuSPARSE (compat/cusparse/choose.c),
 * without a GPU: the CUDA event calls it makes are stubs here, on a simulated clock, so that
 * whole sequences of calls (tcsparse's route trying its candidates, tuning its pick,
 * settling; cuSPARSE's samples interleaved) run as the interposer runs them.  Also the
 * verdict alone, the kinds' list and the table of kinds settled on cuSPARSE. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

/* ---- CUDA event stubs: an event holds the simulated time it was recorded at ------------ */

typedef struct {
    double t;
    int call; /* the execution that recorded it */
} stub_event;

static double clock_ms;      /* the simulated GPU time */
static int call_no;          /* executions so far */
static int lag_calls;        /* an event completes this many executions after its record */
static int events_ready = 1; /* 0: every recorded event is still in flight */
static int records, fail_record = -1; /* cudaEventRecord calls so far; the one that fails */
static int live_events;

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device)
{
    (void)device;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    stub_event *e = calloc(1, sizeof *e);
    *event = (cudaEvent_t)e;
    live_events++;
    return e != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    free(event);
    live_events--;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    if (records++ == fail_record)
        return cudaErrorInvalidResourceHandle;
    ((stub_event *)event)->t = clock_ms;
    ((stub_event *)event)->call = call_no;
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event)
{
    const int done = call_no - ((stub_event *)event)->call >= lag_calls;
    return events_ready && done ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)(((stub_event *)end)->t - ((stub_event *)start)->t);
    return cudaSuccess;
}

/* ---- the interposer's sequence for one execution of a kind (preload.c, tc_try) ---------- */

enum { M = TC_CHOICE_MEASURING, R = TC_CHOICE_ROUTE, C = TC_CHOICE_CUSPARSE };

/* tcsparse's route, call by call: how long the call takes and what tc_hook_learning says. */
typedef struct {
    float ms;
    int learning;
} route_call;

/* One execution: cuSPARSE (cu_ms) or tcsparse (the route's next call) as the choice asks.
 * Returns the state read at the start of the call, as the interposer reads it. */
static int execute(tc_choice *c, const route_call *route, int *rc, float cu_ms)
{
    call_no++;
    const int state = tc_choice_poll(c, 1);
    if (state != M)
        return state;
    if (tc_choice_next(c) == TC_PATH_CUSPARSE) {
        const int slot = tc_choice_start(c, TC_PATH_CUSPARSE, 0);
        clock_ms += cu_ms;
        tc_choice_stop(c, slot, 0, 1, 0);
    } else {
        const route_call r = route[*rc];
        if (route[*rc + 1].ms > 0) /* the last entry repeats */
            ++*rc;
        const int slot = tc_choice_start(c, TC_PATH_TCSPARSE, 0);
        clock_ms += r.ms;
        tc_choice_stop(c, slot, 0, 1, slot >= 0 ? tc_choice_phase(c, r.learning) : 0);
    }
    return state;
}

/* Runs executions until the kind leaves MEASURING (at most max): its state, *calls the
 * executions it took. */
static int run_kind(const route_call *route, float cu_ms, int max, int *calls)
{
    tc_choice *list = NULL;
    tc_call_shape s;
    memset(&s, 0, sizeof s);
    tc_choice *c = tc_choice_find(&list, &s, 1);
    cr_assert_not_null(c);
    int rc = 0, state = M;
    records = 0;
    for (*calls = 0; *calls < max && (state = execute(c, route, &rc, cu_ms)) == M; ++*calls)
        ;
    char why[160];
    tc_choice_describe(c, why, sizeof why);
    cr_log_info("%d calls: %s", *calls, why);
    tc_choice_free_all(&list);
    cr_expect_eq(live_events, 0, "events left behind");
    return state;
}

/* three candidates, three samples each (phase 2), then the pick tuned (phase 1), then
 * settled on the pick (phase 0) */
static void route_of(route_call *r, float a, float b, float pick_other, float pick)
{
    const float cand[3] = {a, b, pick_other};
    int n = 0;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            r[n++] = (route_call){cand[k], 2};
    for (int i = 0; i < 6; i++)
        r[n++] = (route_call){pick, 1};
    r[n++] = (route_call){pick, 0};
    r[n] = (route_call){0, 0};
}

Test(choose, last_candidate_fastest_keeps_tcsparse)
{
    /* the route's first two candidates lose to cuSPARSE, its third wins: tcsparse is kept */
    route_call r[32];
    route_of(r, 1.2f, 1.1f, 0.8f, 0.8f);
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), R, "after %d calls", calls);
}

Test(choose, every_candidate_slower_goes_to_cusparse_early)
{
    route_call r[32];
    route_of(r, 1.2f, 1.1f, 1.3f, 1.1f);
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), C);
    /* 9 candidate samples, 3 of the pick, cuSPARSE's 3 in between */
    cr_expect_leq(calls, 16, "took %d calls", calls);
}

Test(choose, settled_pick_slower_goes_to_cusparse)
{
    /* a candidate looked faster while the route tried them, its settled pick is not */
    route_call r[32];
    route_of(r, 1.2f, 0.9f, 1.1f, 1.05f);
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), C);
}

Test(choose, settled_route_slower_than_its_tuning_goes_to_cusparse)
{
    /* the pick's tuning samples beat cuSPARSE (no early verdict), the settled calls do not */
    route_call r[32];
    route_of(r, 1.2f, 1.1f, 0.9f, 0.9f);
    r[15] = (route_call){1.05f, 0};
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), C, "after %d calls", calls);
    cr_expect_geq(calls, 20, "decided by the settled rule, not early: %d calls", calls);
}

Test(choose, host_far_ahead_keeps_a_faster_last_candidate)
{
    /* the GPU 200 executions behind: the route runs its model's choice (the first candidate,
     * phase 2) until its samples come back, then its pick */
    static route_call r[260];
    int n = 0;
    for (int i = 0; i < 9; i++)
        r[n++] = (route_call){i < 3 ? 1.2f : i < 6 ? 1.1f : 0.8f, 2};
    while (n < 220)
        r[n++] = (route_call){1.2f, 2};
    for (int i = 0; i < 6; i++)
        r[n++] = (route_call){0.8f, 1};
    r[n++] = (route_call){0.8f, 0};
    r[n] = (route_call){0, 0};
    lag_calls = 200;
    int calls;
    const int state = run_kind(r, 1.0f, 5000, &calls);
    lag_calls = 0;
    cr_expect_eq(state, R, "after %d calls", calls);
}

Test(choose, lost_cusparse_and_tcsparse_samples_are_taken_again)
{
    route_call r[32];
    route_of(r, 0.7f, 0.7f, 0.7f, 0.7f);
    int calls;
    /* records: 0, 1 start and stop of tcsparse's first call, 2, 3 cuSPARSE's first sample
     * (tcsparse first, then cuSPARSE every other call); its stop lost */
    fail_record = 3;
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), R, "cuSPARSE's stop lost: after %d calls",
                 calls);
    fail_record = 1; /* tcsparse's first stop lost */
    cr_expect_eq(run_kind(r, 1.0f, 400, &calls), R, "tcsparse's stop lost: after %d calls",
                 calls);
    fail_record = -1;
}

Test(choose, never_settling_route_is_counted_after_the_bound)
{
    const route_call r[] = {{0.9f, 1}, {0.9f, 1}, {0, 0}}; /* the pick, tuning for ever */
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 1000, &calls), R);
    cr_expect_geq(calls, 192, "counted after %d calls", calls);
    cr_expect_leq(calls, 260, "took %d calls", calls);
}

Test(choose, samples_in_flight_decide_nothing)
{
    route_call r[32];
    route_of(r, 0.5f, 0.5f, 0.5f, 0.5f);
    events_ready = 0;
    int calls;
    cr_expect_eq(run_kind(r, 1.0f, 300, &calls), M, "a verdict without a sample read");
    events_ready = 1;
    cr_expect_eq(run_kind(r, 1.0f, 300, &calls), R);
}

/* ---- the verdict alone ------------------------------------------------------------------ */

Test(choose, verdict)
{
    /* cuSPARSE has 2 of its 3 samples: nothing yet */
    cr_expect_eq(tc_choice_verdict(2, 1.0f, 6, 0.1f, 6, 0.1f), M);
    /* the pick: 3 samples, all slower (a tie goes to cuSPARSE), or only 2 */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 3, 1.2f, 0, 0.0f), C);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 3, 1.0f, 0, 0.0f), C);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 2, 1.2f, 0, 0.0f), M);
    /* the pick faster: wait for the settled route */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 3, 0.9f, 0, 0.0f), M);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 9, 0.9f, 5, 0.95f), M);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 9, 0.9f, 6, 0.95f), R);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 9, 0.9f, 6, 1.0f), C, "a tie goes to cuSPARSE");
}

/* ---- the kinds' list, the settled table --------------------------------------------------- */

static tc_call_shape shape_n(int64_t n)
{
    tc_call_shape s;
    memset(&s, 0, sizeof s);
    s.rows[0] = s.cols[1] = n;
    return s;
}

Test(choose, kinds_list)
{
    tc_choice *list = NULL;
    tc_call_shape s[20];
    for (int i = 0; i < 20; i++)
        s[i] = shape_n(i + 1);
    tc_choice *first = tc_choice_find(&list, &s[0], 1);
    cr_assert_not_null(first);
    cr_expect_eq(tc_choice_find(&list, &s[0], 0), first, "found again");
    cr_expect_null(tc_choice_find(&list, &s[1], 0), "not made without create");
    for (int i = 1; i < 20; i++)
        cr_assert_not_null(tc_choice_find(&list, &s[i], 1));
    int n = 0;
    for (int i = 0; i < 20; i++)
        n += tc_choice_find(&list, &s[i], 0) != NULL;
    cr_expect_eq(n, 16, "the list holds the 16 most recently used kinds, not %d", n);
    tc_choice *last = tc_choice_find(&list, &s[19], 0);
    tc_choice_settle(last);
    cr_expect_eq(tc_choice_poll(last, 1), R, "settled on the route");
    char why[160];
    tc_choice_describe(last, why, sizeof why);
    cr_expect_str_eq(why, "not measured: the route's own decision");
    tc_choice_free_all(&list);
}

Test(choose, settled_table)
{
    tc_spmat_sig sig;
    memset(&sig, 0, sizeof sig);
    const tc_call_shape a = shape_n(64), b = shape_n(65);
    char why[112] = "";
    cr_expect_eq(tc_verdict_cusparse(&sig, &a, why, sizeof why), 0, "empty table");
    tc_verdict_set_cusparse(&sig, &a, "measured: cuSPARSE faster");
    cr_expect_eq(tc_verdict_cusparse(&sig, &a, why, sizeof why), 1);
    cr_expect_str_eq(why, "measured: cuSPARSE faster");
    cr_expect_eq(tc_verdict_cusparse(&sig, &b, why, sizeof why), 0, "another shape");
}
