/* SPDX-License-Identifier: MIT */
/* test_api_access.c -- api/access.c through the request harness: the access line of a
 * request the machine served, and of one the server refused itself (api_refused). */
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

static void served_request_line(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "acc-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_line_has(h, "acc-1", "\"route\":\"r\"");
    rh_assert_line_has(h, "acc-1", "\"target\":\"a\"");
    rh_assert_line_has(h, "acc-1", "\"status\":200");
    rh_assert_line_has(h, "acc-1", "\"path\":\"/v1/chat/completions\"");
    rh_resp_free(&res);
    rh_stop(h);
}

/* A body over limits.max_body_bytes: 413 from the server, and still one access line. */
static void refused_request_line(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n"
                                   "limits: { max_body_bytes: 64 }\n",
                            NULL);
    struct rh_resp res;
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "acc-413",
                 NULL, "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"a body longer than sixty-four bytes, on purpose\"}]}");
    rh_recv(fd, &res);
    assert_int_equal(res.status, 413);
    {
        char line[4096];

        /* no state machine ran: the line is the server's own, found by its id */
        for (int i = 0; i < 400; i++) {
            line[0] = '\0';
            if (rh_find_line(h, "\"request_id\":\"acc-413\"", line, sizeof(line)))
                break;
            usleep(5000);
        }
        assert_non_null(strstr(line, "\"status\":413"));
    }
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(served_request_line),
        RH_TEST(refused_request_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
