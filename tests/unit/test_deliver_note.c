/* SPDX-License-Identifier: MIT */
/* test_deliver_note.c -- router/deliver_note.c on a bare struct request: the termination
 * code, a client gone (499 unless a status went out), a whole answer sent outside the
 * relay (status, bytes, time to first byte, the borrowed srv_req given back once), and the
 * x-bascule-* headers every answer carries, each only when it has something to say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/clock.h"
#include "router/deliver_note.h"
#include "router/internal.h"
#include "router/req_wake.h"
#include "server/server.h"

static int sreq_released;

static void release_sreq(struct request *r)
{
    (void)r;
    sreq_released++;
}

static const struct req_wake wake = {.release_sreq = release_sreq};

static struct request *bare(void)
{
    struct request *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    r->m.wake = &wake;
    r->att.recs = r->att.inline_recs;
    r->att.cap = ATTEMPT_INLINE;
    sreq_released = 0;
    return r;
}

static void termination_is_named(void **state)
{
    struct request *r = bare();

    (void)state;
    deliver_set_termination(r, "guard_refused");
    assert_string_equal(r->d.termination, "guard_refused");
    assert_int_equal(r->d.status, 0);
    free(r);
}

static void client_gone_is_499_unless_a_status_went_out(void **state)
{
    struct request *r = bare();

    (void)state;
    deliver_client_gone(r);
    assert_int_equal(r->d.status, 499);
    assert_string_equal(r->d.termination, "client_abort");
    r->d.status = 200;
    deliver_client_gone(r);
    assert_int_equal(r->d.status, 200);
    free(r);
}

static void whole_answer_recorded_and_sreq_released(void **state)
{
    struct request *r = bare();

    (void)state;
    r->ident.start_us = bsc_now_us();
    deliver_whole_begin(r, 200, "cache_hit");
    assert_int_equal(r->d.status, 200);
    assert_string_equal(r->d.termination, "cache_hit");
    assert_int_equal(sreq_released, 0);
    deliver_whole_sent(r, 627, false);
    assert_int_equal(r->d.bytes_out, 627);
    assert_int_equal(r->d.ttfb_us, 0);
    assert_int_equal(sreq_released, 1);
    r->ident.start_us = bsc_now_us() - 5000; /* five milliseconds ago */
    deliver_whole_sent(r, 10, true);
    assert_true(r->d.ttfb_us >= 5000);
    assert_int_equal(sreq_released, 2);
    free(r);
}

static const struct srv_header *find(const struct srv_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].name.len == strlen(name) && !memcmp(h[i].name.p, name, h[i].name.len))
            return &h[i];
    return NULL;
}

static const char *header(const struct srv_header *h, size_t n, const char *name)
{
    const struct srv_header *f = find(h, n, name);

    return f ? f->value.p : NULL;
}

static bool header_is(const struct srv_header *h, size_t n, const char *name, const char *want)
{
    const struct srv_header *f = find(h, n, name);

    return f && f->value.len == strlen(want) && !memcmp(f->value.p, want, f->value.len);
}

/* A first-try answer: route, target, one attempt, workflow primary, the overhead; nothing
 * about recovery, trimming, limits or the cache. */
static void route_headers_of_a_plain_answer(void **state)
{
    struct request *r = bare();
    struct cfg_route route = {.id = "r"};
    struct cfg_target target = {.id = "a"};
    struct srv_header h[16];
    char buf[BSC_NUM_TEXT_MAX];
    size_t n;

    (void)state;
    r->route = &route;
    r->cur.target = &target;
    r->att.n = 1;
    r->att.recs[0].workflow = ATTEMPT_WF_PRIMARY;
    r->notes.recovery_reason = "rate_limited"; /* not said: nothing was recovered */
    r->ident.start_us = bsc_now_us();
    n = deliver_route_headers(r, h, buf);
    assert_true(header_is(h, n, "x-bascule-route", "r"));
    assert_true(header_is(h, n, "x-bascule-target", "a"));
    assert_true(header_is(h, n, "x-bascule-attempts", "1"));
    assert_true(header_is(h, n, "x-bascule-workflow", "primary"));
    assert_non_null(header(h, n, "x-bascule-overhead-ms"));
    assert_true(r->d.overhead_known);
    assert_null(header(h, n, "x-bascule-recovery-reason"));
    assert_null(header(h, n, "x-bascule-trimmed-messages"));
    assert_null(header(h, n, "x-bascule-limited-by"));
    assert_null(header(h, n, "x-bascule-cache"));
    assert_int_equal(n, 5);
    free(r);
}

/* A recovered, trimmed, limited, cached answer says each. */
static void route_headers_say_what_happened(void **state)
{
    struct request *r = bare();
    struct cfg_route route = {.id = "r"};
    struct cfg_target target = {.id = "b"};
    struct srv_header h[16];
    char buf[BSC_NUM_TEXT_MAX];
    size_t n;

    (void)state;
    r->route = &route;
    r->cur.target = &target;
    r->att.n = 2;
    r->att.recs[0].workflow = ATTEMPT_WF_PRIMARY;
    r->att.recs[1].workflow = ATTEMPT_WF_EQUIVALENT_FAILOVER;
    r->notes.recovery_reason = "rate_limited";
    r->trim.dropped = 3;
    snprintf(r->trim.count_text, sizeof(r->trim.count_text), "3");
    r->err.limited_by = "client_rpm";
    r->c.result = "miss";
    r->ident.start_us = bsc_now_us();
    n = deliver_route_headers(r, h, buf);
    assert_true(header_is(h, n, "x-bascule-attempts", "2"));
    assert_true(header_is(h, n, "x-bascule-workflow", "equivalent_failover"));
    assert_true(header_is(h, n, "x-bascule-recovery-reason", "rate_limited"));
    assert_true(header_is(h, n, "x-bascule-trimmed-messages", "3"));
    assert_true(header_is(h, n, "x-bascule-limited-by", "client_rpm"));
    assert_true(header_is(h, n, "x-bascule-cache", "miss"));
    assert_int_equal(n, 9);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(termination_is_named),
        cmocka_unit_test(client_gone_is_499_unless_a_status_went_out),
        cmocka_unit_test(whole_answer_recorded_and_sreq_released),
        cmocka_unit_test(route_headers_of_a_plain_answer),
        cmocka_unit_test(route_headers_say_what_happened),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
