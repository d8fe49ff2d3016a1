/* SPDX-License-Identifier: MIT */
/* test_limit.c -- router/limit.c driven in-process (tests/unit/harness/): a target's rpm
 * and a client's max_concurrency refuse with 429 and say which limit; a queued request
 * that gets no room within queue_ms is refused after waiting in PICK. */
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

/* The target's rpm (burst 1) is spent by the first request: the second is refused in PICK,
 * nothing sent upstream. */
static void target_rpm_refused(void **state)
{
    struct rh *h = rh_start(RH_PROVIDER "targets:\n  a: { provider: sim, model: a, rpm: 1,"
                                        " rpm_burst: 1, adaptive: false }\n"
                                        "routes:\n  r: { primary: [a] }\n",
                            NULL);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "trpm-1", "r", "", NULL, &one);
    rh_chat(h, "trpm-2", "r", "", NULL, &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "target_rpm");
    rh_assert_path("trpm-2", "admit pick reply_error done");
    assert_int_equal(rh_attempt_lines(h, "trpm-2"), 0);
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* A client at its max_concurrency: the second request is refused in ADMIT. */
static void client_concurrency_refused(void **state)
{
    struct rh *h = rh_start(
        RH_TWO "routes:\n  r: { primary: [a] }\n"
               "clients:\n  c: { key: \"sk-harness-client-0123456789\", routes: [\"*\"],"
               " max_concurrency: 1 }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    const char *auth = "Authorization: Bearer sk-harness-client-0123456789\r\n";
    struct rh_resp two;
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "cc-1", auth, RH_CHAT("r"));
    rh_wait_state("cc-1", REQ_ST_ATTEMPT);
    rh_post(h, "/v1/chat/completions", "cc-2", auth, RH_CHAT("r"), &two);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "client_concurrency");
    rh_assert_path("cc-2", "admit reply_error done");
    close(fd);
    rh_wait_state("cc-1", REQ_ST_DONE);
    rh_resp_free(&two);
    rh_stop(h);
}

/* A request queued for a full target's room gets none within queue_ms: 429 after the wait,
 * which the access line counts in PICK. */
static void queue_times_out(void **state)
{
    struct rh *h = rh_start(RH_PROVIDER "targets:\n  a: { provider: sim, model: a,"
                                        " max_concurrency: 1, queue_ms: 300, adaptive: false }\n"
                                        "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    struct rh_resp two;
    char line[8192];
    const char *p;
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "qt-1", NULL, RH_CHAT("r"));
    rh_wait_state("qt-1", REQ_ST_ATTEMPT);
    rh_post(h, "/v1/chat/completions", "qt-2", NULL, RH_CHAT("r"), &two);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "target_concurrency");
    rh_assert_path("qt-2", "admit pick reply_error done");
    rh_access_line(h, "qt-2", line, sizeof(line));
    assert_non_null(p = strstr(line, "\"pick\":"));
    if (strtod(p + 7, NULL) < 290)
        fail_msg("the request did not wait its queue_ms in PICK: %s", line);
    close(fd);
    rh_wait_state("qt-1", REQ_ST_DONE);
    rh_resp_free(&two);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(target_rpm_refused),
        RH_TEST(client_concurrency_refused),
        RH_TEST(queue_times_out),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
