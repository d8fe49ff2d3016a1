/* SPDX-License-Identifier: MIT */
/* test_api_admin_clients.c -- api/admin_clients.c through the request harness: the
 * configured clients with their limits, and their spend reset. */
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

#define AUTH "Authorization: Bearer adm-harness-0123456789abcdef\r\n"

static void clients_listed(void **state)
{
    struct rh *h = rh_start(
        RH_TWO "routes:\n  r: { primary: [a] }\n" "admin: { key: \"adm-harness-0123456789abcdef\" }\n"
               "clients:\n  c1: { key: \"sk-harness-client-0123456789\", routes: [\"*\"], rpm: 7 }\n",
        NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/admin/clients", AUTH, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"c1\""));
    assert_false(rh_resp_has(&res, "sk-harness-client-0123456789"));
    rh_resp_free(&res);
    rh_call(h, "POST", "/admin/clients/c1/reset-spend", AUTH, NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_call(h, "POST", "/admin/clients/nobody/reset-spend", AUTH, NULL, &res);
    assert_int_equal(res.status, 404);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(clients_listed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
