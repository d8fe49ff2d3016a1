/* SPDX-License-Identifier: MIT */
/* test_cors_target.c -- the rule for an absolute-form request target's host (src/api/cors.c,
 * api__target_host_allowed): a loopback name on a loopback listener, an allowed_hosts entry,
 * the listen address, and, on another listener without allowed_hosts, the Host value itself.
 * The loopback cases run end to end in tests/integration/hardening_http.test.mjs; the other
 * listeners cannot be bound by the tests (127.0.0.1 only), so they are here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "api/cors.h"
#include "config/config.h"

static bool ok(const struct cfg *cfg, const char *listen, const char *auth, const char *host)
{
    return api__target_host_allowed(auth ? bsc_str_cstr(auth) : BSC_STR_NULL,
                                    host ? bsc_str_cstr(host) : BSC_STR_NULL, cfg, listen);
}

static void test_loopback_listener(void **state)
{
    static char *hosts[] = {"gw.internal"};
    struct cfg cfg = {0};

    (void)state;
    assert_true(ok(&cfg, "127.0.0.1", NULL, "evil.example")); /* origin-form: Host's rule */
    assert_true(ok(&cfg, "127.0.0.1", "localhost:8080", "localhost"));
    assert_true(ok(&cfg, "127.0.0.1", "LocalHost", "localhost"));
    assert_true(ok(&cfg, "127.0.0.1", "[::1]:9", "localhost"));
    assert_true(ok(&cfg, "::1", "127.0.0.1", "localhost"));
    assert_false(ok(&cfg, "127.0.0.1", "evil.example", "localhost"));
    assert_false(ok(&cfg, "127.0.0.1", "evil.example", "evil.example")); /* Host agrees: no */
    assert_false(ok(&cfg, "127.0.0.1", "localhost.evil.example", "localhost"));
    assert_false(ok(&cfg, "127.0.0.1", "localhost:x", "localhost"));  /* malformed port */
    assert_false(ok(&cfg, "127.0.0.1", "gw.internal", "gw.internal")); /* not listed */
    cfg.allowed_hosts = (struct cfg_strs){.items = hosts, .n = 1};
    assert_true(ok(&cfg, "127.0.0.1", "GW.internal:8080", "localhost"));
}

static void test_other_listener(void **state)
{
    static char *hosts[] = {"gw.internal"};
    struct cfg cfg = {0};

    (void)state;
    /* No allowed_hosts: the listen address, or exactly the Host value. */
    assert_true(ok(&cfg, "10.0.0.5", "10.0.0.5:8080", "evil.example"));
    assert_true(ok(&cfg, "10.0.0.5", "gw.example", "GW.example"));
    assert_true(ok(&cfg, "10.0.0.5", "gw.example:8080", "gw.example:8080"));
    assert_true(ok(&cfg, "10.0.0.5", "gw.example", NULL)); /* HTTP/1.0 without Host */
    assert_false(ok(&cfg, "10.0.0.5", "evil.example", "gw.example"));
    assert_false(ok(&cfg, "10.0.0.5", "gw.example:8080", "gw.example"));
    assert_false(ok(&cfg, "10.0.0.5", "localhost", "gw.example")); /* not a loopback listener */
    assert_true(ok(&cfg, "fd00::1", "[FD00::1]:80", "x"));
    /* With allowed_hosts the list is the rule: agreeing with Host is not enough. */
    cfg.allowed_hosts = (struct cfg_strs){.items = hosts, .n = 1};
    assert_true(ok(&cfg, "10.0.0.5", "gw.internal:443", "gw.internal"));
    assert_false(ok(&cfg, "10.0.0.5", "gw.example", "gw.example"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_listener),
        cmocka_unit_test(test_other_listener),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
