/* SPDX-License-Identifier: MIT */
/* test_overhead.c -- router/overhead.c through the request harness: the gateway's own
 * time (x-bascule-overhead-ms) leaves out the upstream's: with a 1 s upstream delay the
 * figure stays far below it. And its text: req_overhead_ms_text is snprintf("%.3f")'s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/req_harness.h"
#include "router/overhead.h"

/* req_overhead_ms_text(<us>) against printf's %.3f of the double <us> / 1e3. */
static void expect_printf_text(uint64_t us)
{
    char want[64], got[REQ_OVERHEAD_MS_TEXT_MAX + 8];

    snprintf(want, sizeof(want), "%.3f", (double)us / 1e3);
    memset(got, 'x', sizeof(got));
    req_overhead_ms_text(got, us);
    if (strlen(want) >= REQ_OVERHEAD_MS_TEXT_MAX || strcmp(got, want) != 0)
        fail_msg("us %llu: got \"%.*s\", printf says \"%s\"", (unsigned long long)us,
                 REQ_OVERHEAD_MS_TEXT_MAX, got, want);
}

/* Every value within <span> of <v>, on both sides. */
static void expect_around(uint64_t v, uint64_t span)
{
    for (uint64_t d = 0; d < span; d++) {
        if (d <= UINT64_MAX - v)
            expect_printf_text(v + d);
        if (v > d)
            expect_printf_text(v - 1 - d);
    }
}

/* A value from a small xorshift generator, of a random bit width (so small and large
 * values both come up). */
static uint64_t next_value(uint64_t *seed)
{
    uint64_t x = *seed;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *seed = x;
    return x >> (x % 64);
}

static void ms_text_is_printfs(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;

    (void)state;
    for (uint64_t us = 0; us < 300000; us++) /* every value up to 300 ms */
        expect_printf_text(us);
    for (int k = 0; k < 64; k++) /* each power of two (the double's exponent steps) */
        expect_around(1ull << k, 2000);
    for (uint64_t p = 10;; p *= 10) { /* each power of ten (one more digit) */
        expect_around(p, 2000);
        if (p > UINT64_MAX / 10)
            break;
    }
    expect_around(1000ull << 42, 100000); /* where the text stops coming from the digits */
    expect_around(UINT64_MAX, 2000);
    for (int i = 0; i < 2000000; i++)
        expect_printf_text(next_value(&seed));
}

static void upstream_time_left_out(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", "{\"models\":{\"a\":{\"script\":[{\"action\":\"delay\","
                                     "\"delay_ms\":1000}]}}}");
    struct rh_resp res;
    char v[64];
    char line[8192];

    (void)state;
    rh_chat(h, "ovh-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_header(&res, "x-bascule-overhead-ms", v, sizeof(v)));
    rh_access_line(h, "ovh-1", line, sizeof(line));
    assert_true(strtod(v, NULL) >= 0);
    /* the request took at least the upstream's 1000 ms; the overhead is what is left */
    if (strtod(v, NULL) >= 1000)
        fail_msg("overhead %s ms includes the upstream's time: %s", v, line);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ms_text_is_printfs),
        RH_TEST(upstream_time_left_out),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
