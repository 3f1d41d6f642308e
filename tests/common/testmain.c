/* main() of the Criterion test programs: Criterion's own main, except for the exit status of
 * a run in which every test was skipped (the GPU tests on a machine without a GPU).  Criterion
 * exits 0 then, which automake's test driver would count as PASS; this main exits 77, which it
 * counts as SKIP.  A run where some test ran and passed exits 0, a failure or crash 1, as
 * before; --list, --help and the like exit as Criterion decides.
 *
 * This file is a member of its own in tests/common/libtestutil.la, holding nothing but main
 * and its report hook: a test program does not define main, so the linker takes this member
 * from the convenience archive (it comes before Criterion on the link line) and the hook comes
 * with it.  The in-process builds of tests/shim define main themselves (criterion.h there) and
 * never pull this member in; they exit 77 on the same condition. */
#include <stdbool.h>
#include <stdio.h>
#include <criterion/criterion.h>
#include <criterion/hooks.h>

static struct {
    bool seen; /* the POST_ALL report ran: the tests were run, not listed */
    size_t tests, skipped;
} tc_run;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    tc_run.seen = true;
    tc_run.tests = stats->nb_tests;
    tc_run.skipped = stats->tests_skipped;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    if (result == 0 && tc_run.seen && tc_run.tests > 0 && tc_run.skipped == tc_run.tests) {
        fprintf(stderr, "[====] all %zu tests skipped: exit 77 (a skip for automake)\n",
                tc_run.tests);
        return 77;
    }
    return result;
}
