/* SPDX-License-Identifier: MIT */
/* test_api_admin_teams.c -- api/admin_teams.c through the request harness: a team made,
 * shown, refused twice, deleted. */
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

static void team_lifecycle(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n" "admin: { key: \"adm-harness-0123456789abcdef\" }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_call(h, "POST", "/admin/teams", AUTH, "{\"id\":\"t1\",\"rpm\":100}", &res);
    assert_int_equal(res.status, 201);
    rh_resp_free(&res);
    rh_call(h, "POST", "/admin/teams", AUTH, "{\"id\":\"t1\"}", &res);
    assert_int_equal(res.status, 409);
    rh_resp_free(&res);
    rh_get(h, "/admin/teams/t1", AUTH, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"t1\""));
    rh_resp_free(&res);
    rh_get(h, "/admin/teams", AUTH, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"t1\""));
    rh_resp_free(&res);
    rh_call(h, "DELETE", "/admin/teams/t1", AUTH, NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/admin/teams/t1", AUTH, &res);
    assert_int_equal(res.status, 404);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(team_lifecycle),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
