/* SPDX-License-Identifier: MIT */
/* test_redis_keys.c -- the pure part of the Redis store: store.url parsing (hosts, ports,
 * databases, passwords, unix sockets, rediss:// refused) and the key layout (the prefix,
 * one hash tag per entity, scopes that cannot be confused, keys that do not fit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/redis_keys.h"

static void test_url_tcp(void **state)
{
    struct redis_url u;
    char err[128];

    (void)state;
    assert_int_equal(redis_url_parse("redis://127.0.0.1:6380/3", &u, err, sizeof(err)), BSC_OK);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 3);
    assert_string_equal(u.path, "");
    assert_int_equal(redis_url_parse("redis://localhost", &u, err, sizeof(err)), BSC_OK);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_int_equal(redis_url_parse("redis://:s3cret@h:1/", &u, err, sizeof(err)), BSC_OK);
    assert_string_equal(u.password, "s3cret");
    assert_string_equal(u.host, "h");
    assert_int_equal(u.port, 1);
}

static void test_url_unix(void **state)
{
    struct redis_url u;
    char err[128];

    (void)state;
    assert_int_equal(redis_url_parse("unix:///run/redis.sock", &u, err, sizeof(err)), BSC_OK);
    assert_string_equal(u.path, "/run/redis.sock");
    assert_int_equal(u.db, 0);
    assert_int_equal(redis_url_parse("unix:///r.sock?db=2", &u, err, sizeof(err)), BSC_OK);
    assert_string_equal(u.path, "/r.sock");
    assert_int_equal(u.db, 2);
    assert_int_equal(redis_url_parse("unix://relative", &u, err, sizeof(err)), BSC_EINVAL);
}

static void test_url_refused(void **state)
{
    struct redis_url u;
    char err[128];

    (void)state;
    assert_int_equal(redis_url_parse("rediss://h:6379", &u, err, sizeof(err)), BSC_EINVAL);
    assert_non_null(strstr(err, "TLS"));
    assert_int_equal(redis_url_parse("http://h", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse("redis://h:0", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse("redis://h:70000", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse("redis://h:12x", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse("redis://h/db", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse("redis://:6379", &u, err, sizeof(err)), BSC_EINVAL);
    assert_int_equal(redis_url_parse(NULL, &u, err, sizeof(err)), BSC_EINVAL);
}

static void test_key_layout(void **state)
{
    char k[RKEY_MAX];

    (void)state;
    assert_int_equal(rkey_idem(k, sizeof(k), "bascule:", BSC_STR("vk_1"), BSC_STR("abc")),
                     strlen("bascule:{idem:4:vk_1:abc}"));
    assert_string_equal(k, "bascule:{idem:4:vk_1:abc}");
    rkey_idem(k, sizeof(k), NULL, BSC_STR(""), BSC_STR("abc"));
    assert_string_equal(k, "bascule:{idem:0::abc}");
    rkey_entity(k, sizeof(k), "p:", "ledger", BSC_STR("op-1"));
    assert_string_equal(k, "p:{ledger:op-1}");
    rkey_entity(k, sizeof(k), "p:", "circuit", BSC_STR("m1@sim"));
    assert_string_equal(k, "p:{circuit:m1@sim}");
}

static void test_key_scopes_apart(void **state)
{
    char k1[RKEY_MAX], k2[RKEY_MAX];

    (void)state;
    rkey_idem(k1, sizeof(k1), "b:", BSC_STR("a:b"), BSC_STR("c"));
    rkey_idem(k2, sizeof(k2), "b:", BSC_STR("a"), BSC_STR("b:c"));
    assert_string_not_equal(k1, k2);
}

/* One key per client and period, the whole of it in the hash tag: the period is the last
 * part and all digits, so a client id with a colon cannot pass for another. */
static void test_key_spend(void **state)
{
    char k[RKEY_MAX];

    (void)state;
    assert_int_equal(rkey_spend(k, sizeof(k), "t:", BSC_STR("alpha"), 1764633600000ull),
                     strlen("t:{spend:alpha:1764633600000}"));
    assert_string_equal(k, "t:{spend:alpha:1764633600000}");
    rkey_spend(k, sizeof(k), NULL, BSC_STR("a:1"), 0);
    assert_string_equal(k, "bascule:{spend:a:1:0}");
    assert_int_equal(rkey_spend(k, 16, "bascule:", BSC_STR("alpha"), 0), 0);
}

/* A route's generation and its answers share one hash tag (one slot); the route's length
 * keeps "a}:x" and "a" apart. */
static void test_key_cache(void **state)
{
    char k[RKEY_MAX], k2[RKEY_MAX];

    (void)state;
    assert_int_equal(rkey_cache(k, sizeof(k), "t:", BSC_STR("chat"), BSC_STR_NULL),
                     strlen("t:{cache:4:chat}"));
    assert_string_equal(k, "t:{cache:4:chat}");
    rkey_cache(k, sizeof(k), NULL, BSC_STR("chat"), BSC_STR("ab12"));
    assert_string_equal(k, "bascule:{cache:4:chat}:ab12");
    rkey_cache(k, sizeof(k), "t:", BSC_STR("a}:x"), BSC_STR_NULL);
    rkey_cache(k2, sizeof(k2), "t:", BSC_STR("a"), BSC_STR("x"));
    assert_string_not_equal(k, k2);
    assert_int_equal(rkey_cache(k, 16, "bascule:", BSC_STR("chat"), BSC_STR("ab")), 0);
}

static void test_key_too_long(void **state)
{
    char k[16];

    (void)state;
    assert_int_equal(rkey_entity(k, sizeof(k), "bascule:", "ledger", BSC_STR("op-123456")), 0);
    assert_int_equal(rkey_idem(k, sizeof(k), "bascule:", BSC_STR("s"), BSC_STR("k")), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_tcp),        cmocka_unit_test(test_url_unix),
        cmocka_unit_test(test_url_refused),    cmocka_unit_test(test_key_layout),
        cmocka_unit_test(test_key_scopes_apart), cmocka_unit_test(test_key_too_long),
        cmocka_unit_test(test_key_spend),      cmocka_unit_test(test_key_cache),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
