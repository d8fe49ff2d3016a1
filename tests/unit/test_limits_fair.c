/* SPDX-License-Identifier: MIT */
/* test_limits_fair.c -- the fair queue of a limit set (limits/limits_fair.c): requests
 * waiting for a shared limit are served round-robin across clients, by weight; a client's
 * forty waiting requests let another client's single one through after at most one of
 * theirs; leaving without being served moves nobody's turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

static int noisy, quiet, heavy; /* client identities */

/* Serves the set's queue once: the request in turn among <reqs> leaves, served. */
static int serve(struct lim_set *s, int *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        if (reqs[i] >= 0 && lim_fair_turn(s, &reqs[i]) == LIM_NONE) {
            int who = reqs[i];

            lim_fair_leave(s, &reqs[i], true);
            reqs[i] = -1;
            return who;
        }
    }
    fail_msg("nobody in turn");
    return -1;
}

static void test_quiet_client_not_behind_noisy(void **state)
{
    struct lim_set s;
    int reqs[41];

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60, .rpm_burst = 1});
    for (int i = 0; i < 40; i++) {
        reqs[i] = i;
        assert_true(lim_fair_enter(&s, &reqs[i], &noisy, 1, LIM_RPM));
    }
    assert_int_equal(lim_fair_turn(&s, &reqs[1]), LIM_RPM); /* the first is in turn */
    assert_int_equal(serve(&s, reqs, 40), 0);
    assert_int_equal(serve(&s, reqs, 40), 1);
    reqs[40] = 40; /* the quiet client's one request arrives */
    assert_true(lim_fair_enter(&s, &reqs[40], &quiet, 1, LIM_RPM));
    assert_true(lim_fair_enter(&s, &reqs[40], &quiet, 1, LIM_RPM)); /* again: kept */
    /* At most one more of the noisy client's before it. */
    int a = serve(&s, reqs, 41), b = serve(&s, reqs, 41);

    assert_true(a == 40 || b == 40);
    /* A request arriving without a place waits while others are queued. */
    assert_int_equal(lim_fair_turn(&s, &quiet), LIM_RPM);
    lim_set_destroy(&s);
}

/* Weight 3 against weight 1: three served for one while both wait. */
static void test_weights(void **state)
{
    struct lim_set s;
    int reqs[16], heavy_served = 0;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60});
    for (int i = 0; i < 16; i++) {
        reqs[i] = i;
        assert_true(lim_fair_enter(&s, &reqs[i], i < 8 ? (void *)&heavy : (void *)&quiet,
                                   i < 8 ? 3 : 1, LIM_RPM));
    }
    for (int k = 0; k < 8; k++)
        heavy_served += serve(&s, reqs, 16) < 8;
    assert_int_equal(heavy_served, 6);
    lim_set_destroy(&s);
}

/* Leaving unserved (a timeout, a cancel) hands the turn on and moves no tag. */
static void test_leave_unserved(void **state)
{
    struct lim_set s;
    int r1 = 1, r2 = 2, r3 = 3;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60});
    assert_true(lim_fair_enter(&s, &r1, &noisy, 1, LIM_RPM));
    assert_true(lim_fair_enter(&s, &r2, &noisy, 1, LIM_RPM));
    lim_wait_on(&s, 5);
    assert_int_equal(lim_fair_leave(&s, &r1, false), 1ull << 5);
    assert_int_equal(lim_fair_turn(&s, &r2), LIM_NONE);
    assert_int_equal(lim_fair_leave(&s, &r3, false), 0); /* never there */
    assert_true(s.fair.vt == 0.0);
    lim_fair_leave(&s, &r2, true);
    assert_int_equal(lim_fair_turn(&s, &r3), LIM_NONE); /* nobody waits */
    lim_set_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_client_not_behind_noisy),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_leave_unserved),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
