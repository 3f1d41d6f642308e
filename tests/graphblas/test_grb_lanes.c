/* Host lanes that wait on each other (tc_lanes_run_together, which the staged-copy
 * engine's flow runs on): every lane runs at once on the OpenMP pool or on threads of
 * its own, or none runs.  A lane that waited for a lane that never came would hang; here
 * each wait gives up after 20 s and the test fails instead. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "config.h"
#include "lanes.h"

typedef struct {
    int lanes;
    atomic_int arrived, ran, timed_out;
    atomic_int seen[TC_LANES_MAX];
} meet_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* each lane arrives, then waits until every lane has arrived */
static void meet(void *arg, int lane)
{
    meet_t *m = arg;
    atomic_fetch_add(&m->seen[lane], 1);
    atomic_fetch_add(&m->arrived, 1);
    const double t0 = now_s();
    while (atomic_load(&m->arrived) < m->lanes)
        if (now_s() - t0 > 20.0) {
            atomic_store(&m->timed_out, 1);
            return;
        }
    atomic_fetch_add(&m->ran, 1);
}

static void check_meet(int lanes)
{
    meet_t m;
    memset(&m, 0, sizeof m);
    m.lanes = lanes;
    cr_assert_eq(tc_lanes_run_together(lanes, meet, &m), 0, "%d lanes", lanes);
    cr_expect_eq(atomic_load(&m.timed_out), 0, "%d lanes: a lane waited in vain", lanes);
    cr_expect_eq(atomic_load(&m.ran), lanes);
    for (int l = 0; l < lanes; l++)
        cr_expect_eq(atomic_load(&m.seen[l]), 1, "lane %d of %d ran %d times", l, lanes,
                     atomic_load(&m.seen[l]));
}

Test(grb_lanes, together_on_the_openmp_pool)
{
    for (int lanes = 1; lanes <= 17; lanes += 4)
        check_meet(lanes);
}

Test(grb_lanes, together_on_threads_of_its_own)
{
    setenv("TCSPARSE_X_GRB_OMP", "0", 1);
    tc_config_reload();
    for (int lanes = 1; lanes <= 17; lanes += 4)
        check_meet(lanes);
}

#ifdef _OPENMP
/* from inside a parallel region the pool cannot nest: threads of its own, still together */
Test(grb_lanes, together_inside_a_parallel_region)
{
    int failures = 0;
#pragma omp parallel num_threads(2) reduction(+ : failures)
    {
        meet_t m;
        memset(&m, 0, sizeof m);
        m.lanes = 5;
        failures += tc_lanes_run_together(5, meet, &m) != 0 ||
                    atomic_load(&m.ran) != 5 || atomic_load(&m.timed_out) != 0;
    }
    cr_expect_eq(failures, 0);
}
#endif

Test(grb_lanes, refused_counts_run_nothing)
{
    meet_t m;
    memset(&m, 0, sizeof m);
    m.lanes = 1;
    cr_expect_eq(tc_lanes_run_together(0, meet, &m), -1);
    cr_expect_eq(tc_lanes_run_together(TC_LANES_MAX + 1, meet, &m), -1);
    cr_expect_eq(tc_lanes_run_together(-3, meet, &m), -1);
    cr_expect_eq(atomic_load(&m.arrived), 0);
}
