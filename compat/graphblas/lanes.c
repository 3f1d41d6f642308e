/* Host lanes (lanes.h): threads for large host passes, on the OpenMP pool or on threads
 * of their own, and the clock. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "config.h"
#include "lanes.h"

/* Bytes one extra thread must have to do before it pays for its creation (~30 us). */
#define TC_LANES_BYTES_PER_THREAD ((size_t)4 << 20)

double tc_lanes_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int tc_lanes_threads(void)
{
    long v = tc_config_get()->grb.threads;
    if (v <= 0)
        v = sysconf(_SC_NPROCESSORS_ONLN);
    if (v < 1)
        v = 1;
    return v > TC_LANES_MAX ? TC_LANES_MAX : (int)v;
}

typedef struct {
    void (*fn)(void *arg, size_t lo, size_t hi);
    void *arg;
    size_t n;
    int parts;
} tc_lanes_split;

static void tc_lanes_split_run(void *arg, int lane)
{
    const tc_lanes_split *sp = arg;
    size_t lo, hi;
    tc_lanes_share(sp->n, sp->parts, lane, &lo, &hi);
    sp->fn(sp->arg, lo, hi);
}

void tc_lanes_share(size_t n, int parts, int part, size_t *lo, size_t *hi)
{
    const size_t k = (size_t)parts, t = (size_t)part;
    *lo = n / k * t + (t < n % k ? t : n % k);
    *hi = *lo + n / k + (t < n % k ? 1 : 0);
}

void tc_lanes_parallel(size_t n, size_t unit_bytes, void (*fn)(void *arg, size_t lo, size_t hi),
                       void *arg)
{
    size_t want = n * unit_bytes / TC_LANES_BYTES_PER_THREAD;
    size_t nt = (size_t)tc_lanes_threads();
    if (want < nt)
        nt = want;
    if (nt > n)
        nt = n;
    if (nt <= 1) {
        fn(arg, 0, n);
        return;
    }
    tc_lanes_split sp = {fn, arg, n, (int)nt};
    tc_lanes_run((int)nt, tc_lanes_split_run, &sp);
}

typedef struct {
    void (*fn)(void *arg, int lane);
    void *arg;
    int lane;
} tc_lanes_task;

static void *tc_lanes_main(void *p)
{
    tc_lanes_task *t = p;
    t->fn(t->arg, t->lane);
    return NULL;
}

#ifdef _OPENMP
/* TCSPARSE_X_GRB_OMP=0: the lanes on threads of their own (the comparison's other side) */
static int tc_lanes_use_omp(void)
{
    return tc_config_get()->grb.omp;
}

/* 1 when the lanes run on the OpenMP pool that GraphBLAS's parallel regions use.  After
 * each of those, libgomp's threads spin for a while before they sleep (its default wait policy),
 * on the very cores that threads of our own would need: the cold path's copies then ran
 * up to 25% slower, and unevenly.  A lane's work does not depend on running at the same
 * time as another's, so a pool that grants fewer threads only serialises some lanes
 * and a sliced SpMM's uploads and downloads no longer overlap: a thread limit below the
 * lanes, a dynamic team size, no parallel level left or a call from inside a parallel
 * region takes threads of our own instead. */
static int tc_lanes_on_pool(int lanes)
{
    return lanes > 1 && tc_lanes_use_omp() && !omp_in_parallel() &&
           omp_get_thread_limit() >= lanes && !omp_get_dynamic() &&
           omp_get_max_active_levels() > omp_get_active_level();
}
#endif

void tc_lanes_run(int lanes, void (*fn)(void *arg, int lane), void *arg)
{
    pthread_t th[TC_LANES_MAX];
    tc_lanes_task task[TC_LANES_MAX];
    int started[TC_LANES_MAX];
    if (lanes > TC_LANES_MAX)
        lanes = TC_LANES_MAX;
#ifdef _OPENMP
    if (tc_lanes_on_pool(lanes)) {
#pragma omp parallel num_threads(lanes)
        {
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            for (int l = t; l < lanes; l += nt)
                fn(arg, l);
        }
        return;
    }
#endif
    for (int l = 0; l < lanes; l++)
        task[l] = (tc_lanes_task){fn, arg, l};
    for (int l = 1; l < lanes; l++) {
        started[l] = pthread_create(&th[l], NULL, tc_lanes_main, &task[l]) == 0;
        if (!started[l]) /* no thread to be had: run the lane here, in turn */
            tc_lanes_main(&task[l]);
    }
    if (lanes > 0)
        tc_lanes_main(&task[0]);
    for (int l = 1; l < lanes; l++)
        if (started[l])
            pthread_join(th[l], NULL);
}

/* Lanes that wait on each other must all run at once: each thread waits at a gate until
 * every one of them exists, and none runs its lane if one could not be had. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state; /* 0 waiting, 1 go, -1 called off */
} tc_lanes_gate;

typedef struct {
    tc_lanes_task task;
    tc_lanes_gate *gate;
} tc_lanes_gated_task;

static void *tc_lanes_gated_main(void *p)
{
    tc_lanes_gated_task *t = p;
    pthread_mutex_lock(&t->gate->lock);
    while (t->gate->state == 0)
        pthread_cond_wait(&t->gate->cond, &t->gate->lock);
    const int go = t->gate->state > 0;
    pthread_mutex_unlock(&t->gate->lock);
    if (go)
        t->task.fn(t->task.arg, t->task.lane);
    return NULL;
}

int tc_lanes_run_together(int lanes, void (*fn)(void *arg, int lane), void *arg)
{
    if (lanes < 1 || lanes > TC_LANES_MAX)
        return -1;
#ifdef _OPENMP
    if (tc_lanes_on_pool(lanes)) {
        int whole = 1;
#pragma omp parallel num_threads(lanes)
        {
            /* every thread of the team sees the same count: all run their lane, or none */
            if (omp_get_num_threads() == lanes)
                fn(arg, omp_get_thread_num());
            else if (omp_get_thread_num() == 0)
                whole = 0;
        }
        return whole ? 0 : -1;
    }
#endif
    pthread_t th[TC_LANES_MAX];
    tc_lanes_gated_task task[TC_LANES_MAX];
    tc_lanes_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int made = 1;
    for (; made < lanes; made++) {
        task[made] = (tc_lanes_gated_task){{fn, arg, made}, &gate};
        if (pthread_create(&th[made], NULL, tc_lanes_gated_main, &task[made]) != 0)
            break;
    }
    pthread_mutex_lock(&gate.lock);
    gate.state = made == lanes ? 1 : -1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    if (made == lanes)
        fn(arg, 0);
    for (int l = 1; l < made; l++)
        pthread_join(th[l], NULL);
    return made == lanes ? 0 : -1;
}

