/* Measured choice between tcsparse and the real cuSPARSE, per kind of call (shim.h).
 *
 * tcsparse's route decides from a model where it cannot time cuSPARSE (the interposer's
 * handles leave cuSPARSE's calls to the interposer), and a model that guesses wrong makes a
 * program slower for good.  So, with the automatic route, each kind of call on a matrix with a
 * plan (the structure, the operation, the dense operands' shapes, types and orders, the
 * algorithm asked for) times its first executions: tcsparse's as the route runs them, and a
 * few of the real cuSPARSE's, interleaved, with CUDA events on the caller's stream.  Nothing
 * waits for them: each call reads the samples that have completed (cudaEventQuery).
 *
 * tcsparse's route measures its own SpMM paths on the same calls (an SDDMM only its kernel
 * tuning and late ordering), and tc_hook_learning says after
 * each call how far it has come: trying its candidate paths (phase 2: the call may have run
 * any), tuning the kernel of the path it chose or timing late ordering's plans (1: the
 * call ran the route's pick), or settled (0).  So the kind goes to cuSPARSE as soon as
 * cuSPARSE's TC_CHOICE_CU samples beat TC_CHOICE_PICK samples of the route's pick (phase 0
 * or 1: the fastest of its candidates by its own timing loses), and keeps tcsparse only on
 * TC_CHOICE_TC samples of the settled route (phase 0), faster than cuSPARSE's fastest.  A
 * route still learning after TC_CHOICE_LEARN timed calls of the kind has its calls counted
 * as settled.  Inside a stream capture nothing is timed (events of a capture cannot be read)
 * and the choice so far applies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

enum {
    TC_CHOICE_CU = 3,
    TC_CHOICE_TC = 6,
    TC_CHOICE_PICK = 3,
    TC_CHOICE_SLOTS = TC_CHOICE_CU + TC_CHOICE_TC + 3,
    /* timed calls of a kind while tcsparse's route learns, after which its samples count:
     * the route's measurement and tuning take about 20 calls, each round of late ordering
     * at most TC_LATE_MAX_CALLS (64) */
    TC_CHOICE_LEARN = 192
};

typedef struct {
    cudaEvent_t start, stop;
    int path;    /* TC_PATH_TCSPARSE or TC_PATH_CUSPARSE */
    int pending; /* recorded, not read yet */
    int busy;    /* started, not stopped yet */
    int phase;   /* the route's (tc_choice_phase): 0 settled (always, for cuSPARSE), 1 its
                  * pick, 2 trying its candidates; 0 until the call has told */
} tc_sample;

struct tc_choice {
    tc_call_shape shape;
    int state;                  /* TC_CHOICE_* */
    int issued[2], done[2];     /* per path, of phase 0 (tc_choice_next reads cuSPARSE's) */
    float best[2];              /* fastest completed phase-0 sample per path, ms */
    int tc_issued, tc_done;     /* tcsparse's samples of any phase */
    float tc_best;              /* the fastest of those, ms */
    int pick_done;              /* tcsparse's samples of phase 0 or 1 */
    float pick_best;            /* the fastest of those, ms */
    int learning;               /* tcsparse's calls of phase 1 or 2 so far */
    int device;
    int have_events;
    tc_sample s[TC_CHOICE_SLOTS];
    struct tc_choice *next;
};

static int tc_shape_equal(const tc_call_shape *a, const tc_call_shape *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static void tc_choice_free(tc_choice *c)
{
    if (c->have_events) {
        int cur = -1;
        const int sw = cudaGetDevice(&cur) == cudaSuccess && cur != c->device &&
                       cudaSetDevice(c->device) == cudaSuccess;
        for (int i = 0; i < TC_CHOICE_SLOTS; i++) {
            cudaEventDestroy(c->s[i].start);
            cudaEventDestroy(c->s[i].stop);
        }
        (void)cudaGetLastError();
        if (sw)
            (void)cudaSetDevice(cur);
    }
    free(c);
}

void tc_choice_free_all(tc_choice **list)
{
    while (*list != NULL) {
        tc_choice *c = *list;
        *list = c->next;
        tc_choice_free(c);
    }
}

tc_choice *tc_choice_find(tc_choice **list, const tc_call_shape *shape, int create)
{
    int n = 0;
    for (tc_choice **pp = list; *pp != NULL; pp = &(*pp)->next, n++)
        if (tc_shape_equal(&(*pp)->shape, shape)) {
            tc_choice *c = *pp; /* to the front: the kinds in use stay near it */
            *pp = c->next;
            c->next = *list;
            *list = c;
            return c;
        }
    if (!create)
        return NULL;
    if (n >= 16) { /* a bounded list: the least recently used kind goes */
        tc_choice **pp = list;
        while ((*pp)->next != NULL)
            pp = &(*pp)->next;
        tc_choice_free(*pp);
        *pp = NULL;
    }
    tc_choice *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->shape = *shape;
    c->state = TC_CHOICE_MEASURING;
    c->next = *list;
    *list = c;
    return c;
}

int tc_choice_verdict(int cu_done, float cu_best, int pick_done, float pick_best,
                      int settled_done, float settled_best)
{
    if (cu_done < TC_CHOICE_CU)
        return TC_CHOICE_MEASURING;
    if (pick_done >= TC_CHOICE_PICK && pick_best >= cu_best)
        return TC_CHOICE_CUSPARSE; /* the fastest of the route's candidates loses */
    if (settled_done >= TC_CHOICE_TC)
        return settled_best < cu_best ? TC_CHOICE_ROUTE : TC_CHOICE_CUSPARSE;
    return TC_CHOICE_MEASURING;
}

/* The sample of a call that ended in phase 2 or 1 is not the settled route's: taken out of
 * issued[] (tc_issued keeps it). */
static void tc_choice_set_phase(tc_choice *c, tc_sample *s, int phase)
{
    if (s->phase == 0 && phase != 0)
        c->issued[s->path]--;
    s->phase = phase;
}

/* A sample lost (not recorded, or unreadable): out of the counts. */
static void tc_choice_lose(tc_choice *c, tc_sample *s)
{
    tc_choice_set_phase(c, s, 1);
    if (s->path == TC_PATH_TCSPARSE)
        c->tc_issued--;
}

int tc_choice_poll(tc_choice *c, int read)
{
    if (!read || c->state != TC_CHOICE_MEASURING || !c->have_events)
        return c->state;
    for (int i = 0; i < TC_CHOICE_SLOTS; i++) {
        tc_sample *s = &c->s[i];
        if (!s->pending)
            continue;
        const cudaError_t q = cudaEventQuery(s->stop);
        if (q == cudaErrorNotReady)
            continue;
        float ms = 0;
        s->pending = 0;
        if (q != cudaSuccess || cudaEventElapsedTime(&ms, s->start, s->stop) != cudaSuccess) {
            (void)cudaGetLastError(); /* a sample lost; later calls give another */
            tc_choice_lose(c, s);
            continue;
        }
        if (s->path == TC_PATH_TCSPARSE) {
            if (c->tc_done++ == 0 || ms < c->tc_best)
                c->tc_best = ms;
            if (s->phase <= 1 && (c->pick_done++ == 0 || ms < c->pick_best))
                c->pick_best = ms;
        }
        if (s->phase == 0 && (c->done[s->path]++ == 0 || ms < c->best[s->path]))
            c->best[s->path] = ms;
    }
    c->state = tc_choice_verdict(c->done[TC_PATH_CUSPARSE], c->best[TC_PATH_CUSPARSE],
                                 c->pick_done, c->pick_best, c->done[TC_PATH_TCSPARSE],
                                 c->best[TC_PATH_TCSPARSE]);
    return c->state;
}

int tc_choice_next(const tc_choice *c)
{
    /* tcsparse first (its plan just built, its route to measure), then cuSPARSE every other
     * call until it has its samples */
    const int cu = c->issued[TC_PATH_CUSPARSE], tc = c->tc_issued;
    return cu < TC_CHOICE_CU && tc > 2 * cu ? TC_PATH_CUSPARSE : TC_PATH_TCSPARSE;
}

int tc_choice_start(tc_choice *c, int path, cudaStream_t stream)
{
    if (!c->have_events) {
        if (cudaGetDevice(&c->device) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        int made = 0;
        for (; made < TC_CHOICE_SLOTS; made++) {
            if (cudaEventCreate(&c->s[made].start) != cudaSuccess)
                break;
            if (cudaEventCreate(&c->s[made].stop) != cudaSuccess) {
                cudaEventDestroy(c->s[made].start);
                break;
            }
        }
        if (made < TC_CHOICE_SLOTS) {
            (void)cudaGetLastError();
            for (int i = 0; i < made; i++) {
                cudaEventDestroy(c->s[i].start);
                cudaEventDestroy(c->s[i].stop);
            }
            c->state = TC_CHOICE_ROUTE; /* no events: the route's own decision stands */
            return -1;
        }
        c->have_events = 1;
    }
    for (int i = 0; i < TC_CHOICE_SLOTS; i++) {
        tc_sample *s = &c->s[i];
        if (s->pending || s->busy)
            continue;
        if (cudaEventRecord(s->start, stream) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        s->busy = 1;
        s->path = path;
        s->phase = 0;
        c->issued[path]++;
        if (path == TC_PATH_TCSPARSE)
            c->tc_issued++;
        return i;
    }
    return -1; /* every slot waits for its sample: this call is not timed */
}

void tc_choice_stop(tc_choice *c, int slot, cudaStream_t stream, int ok, int phase)
{
    if (slot < 0)
        return;
    tc_sample *s = &c->s[slot];
    s->busy = 0;
    tc_choice_set_phase(c, s, phase);
    if (ok && cudaEventRecord(s->stop, stream) == cudaSuccess) {
        s->pending = 1;
        return;
    }
    (void)cudaGetLastError();
    tc_choice_lose(c, s);
}

int tc_choice_phase(tc_choice *c, int learning)
{
    if (learning <= 0 || c->learning >= TC_CHOICE_LEARN)
        return 0;
    c->learning++;
    return learning >= 2 ? 2 : 1;
}

void tc_choice_settle(tc_choice *c)
{
    c->state = TC_CHOICE_ROUTE;
}

void tc_choice_describe(const tc_choice *c, char *out, size_t n)
{
    if (c->state == TC_CHOICE_MEASURING)
        snprintf(out, n, "measuring: cuSPARSE %d of %d samples, tcsparse %d of %d on its "
                 "settled route (%d of its route's pick, %d in all)", c->done[TC_PATH_CUSPARSE],
                 TC_CHOICE_CU, c->done[TC_PATH_TCSPARSE], TC_CHOICE_TC, c->pick_done, c->tc_done);
    else if (c->state == TC_CHOICE_ROUTE && c->done[TC_PATH_TCSPARSE] < TC_CHOICE_TC)
        snprintf(out, n, "not measured: the route's own decision");
    else if (c->done[TC_PATH_TCSPARSE] < TC_CHOICE_TC)
        snprintf(out, n, "measured: cuSPARSE %.4f ms, faster than tcsparse's route's pick "
                 "(fastest of %d samples %.4f ms)", c->best[TC_PATH_CUSPARSE], c->pick_done,
                 c->pick_best);
    else
        snprintf(out, n, "measured: cuSPARSE %.4f ms, tcsparse %.4f ms (fastest of %d and %d)",
                 c->best[TC_PATH_CUSPARSE], c->best[TC_PATH_TCSPARSE], c->done[TC_PATH_CUSPARSE],
                 c->done[TC_PATH_TCSPARSE]);
}

/* ------------------------------------------------------------------ settled kinds */

#define TC_VERDICTS 512
static struct {
    int used;
    tc_spmat_sig sig;
    tc_call_shape shape;
    char why[112];
} tc_verdicts[TC_VERDICTS];

static unsigned tc_verdict_slot(const tc_spmat_sig *sig, const tc_call_shape *shape)
{
    /* both keys are zeroed before they are filled (padding included), a word at a time */
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    const unsigned char *p = (const unsigned char *)sig;
    for (size_t i = 0; i + 8 <= sizeof *sig; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
    }
    p = (const unsigned char *)shape;
    for (size_t i = 0; i + 8 <= sizeof *shape; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
    }
    return (unsigned)((h ^ (h >> 29)) % TC_VERDICTS);
}

int tc_verdict_cusparse(const tc_spmat_sig *sig, const tc_call_shape *shape, char *why, size_t n)
{
    const unsigned i = tc_verdict_slot(sig, shape);
    if (!tc_verdicts[i].used || memcmp(&tc_verdicts[i].sig, sig, sizeof *sig) != 0 ||
        memcmp(&tc_verdicts[i].shape, shape, sizeof *shape) != 0)
        return 0;
    snprintf(why, n, "%s", tc_verdicts[i].why);
    return 1;
}

void tc_verdict_set_cusparse(const tc_spmat_sig *sig, const tc_call_shape *shape, const char *why)
{
    const unsigned i = tc_verdict_slot(sig, shape);
    tc_verdicts[i].used = 1;
    tc_verdicts[i].sig = *sig;
    tc_verdicts[i].shape = *shape;
    snprintf(tc_verdicts[i].why, sizeof tc_verdicts[i].why, "%s", why);
}
