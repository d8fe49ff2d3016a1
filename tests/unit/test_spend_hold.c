/* SPDX-License-Identifier: MIT */
/* test_spend_hold.c -- budget holds (router/spend_hold.c): the room a budget leaves with
 * holds taken (at, under and over the budget), 200 concurrent admissions against a budget
 * that allows one and one that allows seven (the spend plus the holds pass the budget by at
 * most one estimate), a cost replacing what it covers of a hold, holds given back to exactly
 * nothing, the estimate of a route (its dearest target; none priced), and the output
 * estimate of a stream without usage (deliver_text_frames: the chunk frames with text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "router/deliver.h"
#include "router/spend_hold.h"

static void test_room(void **state)
{
    (void)state;
    assert_true(spend_hold_room(0, 0, 0.01));
    assert_true(spend_hold_room(0.004, 0.005, 0.01));
    assert_false(spend_hold_room(0.005, 0.005, 0.01)); /* at the budget: spent */
    assert_false(spend_hold_room(0, 0.015, 0.01));     /* one hold past it */
    assert_false(spend_hold_room(0.02, 0, 0.01));
    assert_false(spend_hold_room(0, 0, 0)); /* a budget of 0 admits nothing */
}

/* <n> requests of estimate <est> arrive together at a budget of <budget>: how many are
 * admitted, and the spend once each cost exactly its estimate. */
static unsigned admit_all(unsigned n, double est, double budget, double *spent)
{
    double held = 0;
    unsigned admitted = 0;

    *spent = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!spend_hold_room(*spent, held, budget))
            continue;
        held += est;
        admitted++;
    }
    for (unsigned i = 0; i < admitted; i++) { /* each settles: its cost replaces its hold */
        double c = spend_hold_covered(est, est);

        held = spend_hold_release(held, c);
        *spent += est;
        assert_true(spend_hold_room(*spent, held, budget) == false || admitted * est < budget);
    }
    assert_true(held == 0.0);
    return admitted;
}

static void test_concurrent(void **state)
{
    double spent;

    (void)state;
    /* the case: $0.01, 200 requests of $0.015: one is served, not 200 */
    assert_int_equal(admit_all(200, 0.015, 0.01, &spent), 1);
    assert_true(spent <= 0.01 + 0.015);
    /* $0.10: six holds leave room ($0.09), the seventh crosses, none after it */
    assert_int_equal(admit_all(200, 0.015, 0.10, &spent), 7);
    assert_true(spent > 0.10 && spent <= 0.10 + 0.015);
    /* a budget a whole number of estimates: exactly that many */
    assert_int_equal(admit_all(200, 0.25, 1.0, &spent), 4);
}

static void test_release(void **state)
{
    double held = 0;

    (void)state;
    for (int i = 0; i < 10; i++)
        held += 0.1;
    for (int i = 0; i < 10; i++) /* given back in any order: nothing left, never below 0 */
        held = spend_hold_release(held, 0.1);
    assert_true(held == 0.0);
    assert_true(spend_hold_release(0.1, 0.3) == 0.0); /* a hold of a period rolled over */
    assert_true(spend_hold_release(0.5, 0.2) == 0.3);
}

/* A cost replaces what it covers of the hold: spend + holds stay put while a request costs
 * no more than it held, and rise by the excess only. */
static void test_covered(void **state)
{
    double spent = 0.125, held = 0.5, hold = 0.25, c; /* binary fractions: exact sums */

    (void)state;
    c = spend_hold_covered(hold, 0.0625); /* a first attempt, cheaper than the hold */
    assert_true(c == 0.0625);
    hold -= c, held -= c, spent += 0.0625;
    assert_true(spent + held == 0.625);
    c = spend_hold_covered(hold, 0.375); /* a second one, dearer than what is left */
    assert_true(c == 0.1875);
    hold -= c, held -= c, spent += 0.375;
    assert_true(hold == 0.0);
    assert_true(spent + held == 0.8125); /* up by the excess, 0.1875 */
    assert_true(spend_hold_covered(hold, 0.1) == 0.0); /* nothing left to cover */
    assert_true(spend_hold_covered(0.2, 0) == 0.0);
    assert_true(spend_hold_covered(-1, 0.1) == 0.0);
}

static void test_estimate(void **state)
{
    struct cfg_target cheap = {0}, dear = {0}, free_t = {0};
    struct cfg_target *prim[] = {&cheap}, *fb[] = {&dear, &free_t}, *none[] = {&free_t};
    struct cfg_route route = {0};

    (void)state;
    cheap.price.input_per_mtok = 1;
    cheap.price.output_per_mtok = 2;
    dear.price.input_per_mtok = 10;
    dear.price.output_per_mtok = 30;
    route.primary = (struct cfg_tier){.targets = prim, .n = 1};
    route.fallback = (struct cfg_tier){.targets = fb, .n = 2};
    /* 1000 prompt tokens and max_tokens 500 on the dearest: $0.01 + $0.015 */
    assert_true(spend_hold_estimate(&route, 1500, 500) == (1000 * 10.0 + 500 * 30.0) / 1e6);
    /* no max_tokens: a quarter of the prompt stands for the output */
    assert_true(spend_hold_estimate(&route, 1000, 0) == (1000 * 10.0 + 250 * 30.0) / 1e6);
    route.fallback = (struct cfg_tier){.targets = none, .n = 1};
    route.primary = (struct cfg_tier){.targets = none, .n = 1};
    assert_true(spend_hold_estimate(&route, 1500, 500) == 0.0); /* no price: no hold */
    assert_true(spend_hold_estimate(&route, 0, 7) == 0.0);      /* not an estimate */
}

static void test_text_frames(void **state)
{
    static const char frames[] =
        "data: "
        "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\\\"o\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
        "{\"arguments\":\"{\\\"a\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
        "{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":null}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\n"
        "data: [DONE]\n\n";

    (void)state;
    assert_int_equal(deliver_text_frames((struct bsc_str){frames, sizeof(frames) - 1}), 4);
    assert_int_equal(deliver_text_frames((struct bsc_str){frames, 0}), 0);
    assert_int_equal(deliver_text_frames(BSC_STR("data: {\"delta\":{\"content\":\"x\"}}")), 1);
    assert_int_equal(deliver_text_frames(BSC_STR("data: {\"delta\":{\"content\":\"")), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_room),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_covered),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_text_frames),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
