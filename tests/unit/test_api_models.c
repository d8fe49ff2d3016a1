/* SPDX-License-Identifier: MIT */
/* test_api_models.c -- api/models.c through the request harness: the routes listed as
 * models, one model by id, an unknown id 404. */
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

static void routes_listed_as_models(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n  s: { primary: [b] }\n",
                            NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/v1/models", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"object\":\"list\""));
    assert_true(rh_resp_has(&res, "\"id\":\"r\""));
    assert_true(rh_resp_has(&res, "\"id\":\"s\""));
    rh_resp_free(&res);
    rh_get(h, "/v1/models/s", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"id\":\"s\""));
    rh_resp_free(&res);
    rh_get(h, "/v1/models/nope", NULL, &res);
    assert_int_equal(res.status, 404);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(routes_listed_as_models),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
