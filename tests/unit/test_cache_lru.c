/* SPDX-License-Identifier: MIT */
/* test_cache_lru.c -- the response cache's in-memory store (cache/lru.h): get after put, the
 * TTL, replacement, the byte bound with the least recently used evicted first (a get makes
 * an entry recent), an entry that alone passes the bound, dropping one route's entries, and
 * a table that grows past its first buckets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cache/lru.h"

static struct cache_key key_n(unsigned n)
{
    struct cache_key k;
    char text[32];

    snprintf(text, sizeof(text), "key-%u", n);
    bsc_sha256(text, strlen(text), k.d);
    return k;
}

static const struct cache_meta META = {.stream = false, .cost_usd = 0.5, .stored_ms = 1000};

static bool get(struct cache_mem *m, unsigned n, uint64_t now, char *out, size_t len)
{
    struct bsc_buf b;
    struct cache_meta meta;
    struct cache_key k = key_n(n);
    bool ok;

    bsc_buf_init(&b, 1u << 20);
    ok = cache_mem_get(m, &k, now, &b, &meta);
    if (ok && out)
        snprintf(out, len, "%.*s", (int)b.len, b.p ? b.p : "");
    bsc_buf_cleanup(&b);
    return ok;
}

static enum bsc_err put(struct cache_mem *m, unsigned n, const char *route, const char *body,
                        uint64_t ttl, uint64_t now, uint64_t limit)
{
    struct cache_key k = key_n(n);

    return cache_mem_put(m, &k, bsc_str_cstr(route), bsc_str_cstr(body), &META, ttl, now, limit);
}

static void test_get_put_ttl_replace(void **state)
{
    struct cache_mem *m = cache_mem_new();
    char got[64];

    (void)state;
    assert_false(get(m, 1, 0, got, sizeof(got)));
    assert_int_equal(put(m, 1, "r", "answer", 1000, 0, 1u << 20), BSC_OK);
    assert_true(get(m, 1, 999, got, sizeof(got)));
    assert_string_equal(got, "answer");
    assert_false(get(m, 1, 1000, NULL, 0)); /* expired: dropped */
    assert_int_equal(put(m, 1, "r", "one", 1000, 0, 1u << 20), BSC_OK);
    assert_int_equal(put(m, 1, "r", "two", 1000, 0, 1u << 20), BSC_OK);
    assert_true(get(m, 1, 1, got, sizeof(got)));
    assert_string_equal(got, "two");
    {
        size_t n;
        uint64_t bytes, ev;
        cache_mem_usage(m, &n, &bytes, &ev);
        assert_int_equal(n, 1);
        assert_int_equal(bytes, cache_mem_charge(1, 3));
    }
    cache_mem_free(m);
}

static void test_bound_evicts_lru(void **state)
{
    struct cache_mem *m = cache_mem_new();
    uint64_t one = cache_mem_charge(1, 10), limit = 3 * one;
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(put(m, i, "r", "0123456789", 1000, 0, limit), BSC_OK);
    assert_true(get(m, 0, 1, NULL, 0)); /* 0 is now the most recent: 1 is the oldest */
    assert_int_equal(put(m, 3, "r", "0123456789", 1000, 0, limit), BSC_OK);
    assert_false(get(m, 1, 1, NULL, 0));
    assert_true(get(m, 0, 1, NULL, 0));
    assert_true(get(m, 2, 1, NULL, 0));
    assert_true(get(m, 3, 1, NULL, 0));
    cache_mem_usage(m, &n, &bytes, &ev);
    assert_int_equal(n, 3);
    assert_true(bytes <= limit);
    assert_int_equal(ev, 1);
    /* One entry that alone passes the bound is not stored, and evicts nothing. */
    assert_int_equal(put(m, 9, "r", "0123456789abcdef0123456789abcdef", 1000, 0, one),
                     BSC_ELIMIT);
    assert_true(get(m, 3, 1, NULL, 0));
    cache_mem_free(m);
}

static void test_flood_stays_bounded(void **state)
{
    struct cache_mem *m = cache_mem_new();
    uint64_t limit = 64 * cache_mem_charge(5, 100);
    char body[101];
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    memset(body, 'x', 100);
    body[100] = '\0';
    for (unsigned i = 0; i < 5000; i++) {
        assert_int_equal(put(m, i, "route", body, 100000, 0, limit), BSC_OK);
        cache_mem_usage(m, &n, &bytes, &ev);
        assert_true(bytes <= limit);
    }
    assert_int_equal(n, 64);
    assert_true(get(m, 4999, 1, NULL, 0));
    assert_false(get(m, 0, 1, NULL, 0));
    cache_mem_free(m);
}

static void test_drop_route_and_growth(void **state)
{
    struct cache_mem *m = cache_mem_new();

    (void)state;
    for (unsigned i = 0; i < 3000; i++) /* past the first 1024 buckets */
        assert_int_equal(put(m, i, i % 2 ? "odd" : "even", "a", 1000, 0, 1u << 30), BSC_OK);
    for (unsigned i = 0; i < 3000; i++)
        assert_true(get(m, i, 1, NULL, 0));
    assert_int_equal(cache_mem_drop_route(m, BSC_STR("odd")), 1500);
    assert_false(get(m, 1, 1, NULL, 0));
    assert_true(get(m, 2, 1, NULL, 0));
    assert_int_equal(cache_mem_drop_route(m, BSC_STR("nothing")), 0);
    assert_int_equal(cache_mem_drop_route(m, BSC_STR_NULL), 1500);
    assert_false(get(m, 2, 1, NULL, 0));
    cache_mem_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_put_ttl_replace),
        cmocka_unit_test(test_bound_evicts_lru),
        cmocka_unit_test(test_flood_stays_bounded),
        cmocka_unit_test(test_drop_route_and_growth),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
