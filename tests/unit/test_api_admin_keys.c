/* SPDX-License-Identifier: MIT */
/* test_api_admin_keys.c -- api/admin.c and api/admin_keys.c through the request harness:
 * the admin key is required; a key made at run time serves at once (the keyring merged
 * into a new snapshot), is listed without its secret, and once revoked is refused. */
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

/* The secret out of {"...","secret":"bsk_..."}. */
static void secret_of(const struct rh_resp *r, char *out, size_t outlen)
{
    const char *p = strstr(r->body, "\"secret\":\"");

    assert_non_null(p);
    p += 10;
    snprintf(out, outlen, "%.*s", (int)strcspn(p, "\""), p);
}

static void admin_needs_its_key(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n" "admin: { key: \"adm-harness-0123456789abcdef\" }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/admin/keys", NULL, &res);
    assert_int_equal(res.status, 401);
    rh_resp_free(&res);
    rh_get(h, "/admin/keys", "Authorization: Bearer not-the-admin-key-at-all\r\n", &res);
    assert_int_equal(res.status, 401);
    rh_resp_free(&res);
    rh_get(h, "/admin/nothing", AUTH, &res);
    assert_int_equal(res.status, 404);
    rh_resp_free(&res);
    rh_stop(h);
}

static void runtime_key_lifecycle(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n" "admin: { key: \"adm-harness-0123456789abcdef\" }\n", NULL);
    struct rh_resp res;
    char secret[128], auth[200], id[64];
    const char *p;

    (void)state;
    rh_call(h, "POST", "/admin/keys", AUTH, "{\"client\":\"app1\",\"routes\":[\"r\"]}", &res);
    assert_int_equal(res.status, 201);
    secret_of(&res, secret, sizeof(secret));
    assert_non_null(strstr(secret, "bsk_"));
    assert_non_null(p = strstr(res.body, "\"id\":\""));
    snprintf(id, sizeof(id), "%.*s", (int)strcspn(p + 6, "\""), p + 6);
    rh_resp_free(&res);

    snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", secret);
    rh_chat(h, "rk-1", "r", "", auth, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_assert_line_has(h, "rk-1", id); /* the key id is its client in the access line */

    rh_get(h, "/admin/keys", AUTH, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, id));
    assert_false(rh_resp_has(&res, secret));
    rh_resp_free(&res);

    {
        char path[128];

        snprintf(path, sizeof(path), "/admin/keys/%s", id);
        rh_call(h, "DELETE", path, AUTH, NULL, &res);
        assert_int_equal(res.status, 200);
        rh_resp_free(&res);
    }
    rh_call(h, "POST", "/v1/chat/completions", auth, RH_CHAT("r"), &res); /* never admitted */
    assert_int_equal(res.status, 401);
    rh_resp_free(&res);
    rh_stop(h);
}

static void bad_grant_refused(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n" "admin: { key: \"adm-harness-0123456789abcdef\" }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_call(h, "POST", "/admin/keys", AUTH, "{\"client\":\"app1\",\"routes\":[\"nope\"]}", &res);
    assert_int_equal(res.status, 400);
    rh_resp_free(&res);
    rh_call(h, "POST", "/admin/keys", AUTH, "{\"client\":\"app1\",\"rpm\":-1}", &res);
    assert_int_equal(res.status, 400);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(admin_needs_its_key),
        RH_TEST(runtime_key_lifecycle),
        RH_TEST(bad_grant_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
