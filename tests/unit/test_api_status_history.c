/* SPDX-License-Identifier: MIT */
/* test_api_status_history.c -- api/status_history.c: an event noted is listed with its
 * fields, the series empty before the first sample; and status.json carries both. */
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
#include "api/status_history.h"
#include "core/buf.h"

static void noted_event_listed(void **state)
{
    struct status_history *sh = status_history_new();
    struct bsc_buf b;

    (void)state;
    assert_non_null(sh);
    bsc_buf_init(&b, 1 << 20);
    status_history_note(sh, 1700000000000ull, "spend_reset", "c1", "3.5", "0", "admin");
    status_history_note(NULL, 1, "ignored", "x", NULL, NULL, NULL); /* NULL is fine */
    status_history_put_json(sh, &b);
    assert_non_null(b.p);
    assert_non_null(strstr(b.p, "\"series\":{"));
    assert_non_null(strstr(b.p, "\"points\":[]"));
    assert_non_null(strstr(b.p, "\"events\":["));
    assert_non_null(strstr(b.p, "spend_reset"));
    assert_non_null(strstr(b.p, "c1"));
    assert_null(strstr(b.p, "ignored"));
    bsc_buf_cleanup(&b);
    status_history_free(sh);
    status_history_free(NULL);
}

static void status_json_has_history(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/status.json", NULL, &res);
    assert_true(rh_resp_has(&res, "\"series\":{\"interval_s\":10,\"points\":[]}"));
    assert_true(rh_resp_has(&res, "\"events\":["));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(noted_event_listed),
        RH_TEST(status_json_has_history),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
