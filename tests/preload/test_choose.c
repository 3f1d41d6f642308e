/* The interposer's measured choice between tcsparse and cuSPARSE (compat/cusparse/choose.c),
 * without a GPU: the verdict on a kind's samples, the bound on the calls its route may spend
 * measuring before they count, the kinds' list, and the table of kinds settled on cuSPARSE. */
#include <criterion/criterion.h>
#include <string.h>

#include "shim.h"

enum { M = TC_CHOICE_MEASURING, R = TC_CHOICE_ROUTE, C = TC_CHOICE_CUSPARSE };

Test(choose, verdict_waits_for_cusparse)
{
    /* tcsparse far faster, but cuSPARSE has 2 of its 3 samples */
    cr_expect_eq(tc_choice_verdict(2, 1.0f, 6, 0.1f, 6, 0.1f), M);
    cr_expect_eq(tc_choice_verdict(0, 0.0f, 9, 0.1f, 9, 0.1f), M);
}

Test(choose, cusparse_as_soon_as_it_beats_every_tcsparse_sample)
{
    /* 6 samples, none settled, all slower: none of tcsparse's paths can win */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 6, 1.2f, 0, 0.0f), C);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 6, 1.0f, 0, 0.0f), C, "a tie goes to cuSPARSE");
    /* 5 samples only: not yet */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 5, 1.2f, 0, 0.0f), M);
}

Test(choose, tcsparse_only_on_its_settled_route)
{
    /* one of the route's candidates is faster: wait for the path it settles on */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 6, 0.9f, 0, 0.0f), M);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 12, 0.9f, 5, 0.95f), M);
    /* settled and faster */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 12, 0.9f, 6, 0.95f), R);
    /* settled on a path slower than cuSPARSE (its faster candidate was not kept) */
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 12, 0.9f, 6, 1.05f), C);
    cr_expect_eq(tc_choice_verdict(3, 1.0f, 12, 0.9f, 6, 1.0f), C, "a tie goes to cuSPARSE");
}

static tc_call_shape shape_n(int64_t n)
{
    tc_call_shape s;
    memset(&s, 0, sizeof s);
    s.rows[0] = s.cols[1] = n;
    return s;
}

Test(choose, learning_calls_are_bounded)
{
    tc_choice *list = NULL;
    const tc_call_shape s = shape_n(128);
    tc_choice *c = tc_choice_find(&list, &s, 1);
    cr_assert_not_null(c);
    int dropped = 0;
    for (int i = 0; i < 1000 && tc_choice_route_learning(c); i++)
        dropped++;
    cr_expect_eq(dropped, 192, "%d learning calls left uncounted", dropped);
    cr_expect_eq(tc_choice_route_learning(c), 0, "counted once the bound is reached");
    cr_expect_eq(tc_choice_poll(c, 1), M, "a new kind measures");
    char why[160];
    tc_choice_describe(c, why, sizeof why);
    cr_expect(strstr(why, "measuring: cuSPARSE 0 of 3") != NULL, "%s", why);
    tc_choice_free_all(&list);
    cr_expect_null(list);
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
    tc_choice_settle(tc_choice_find(&list, &s[19], 0));
    cr_expect_eq(tc_choice_poll(tc_choice_find(&list, &s[19], 0), 1), R, "settled on the route");
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
