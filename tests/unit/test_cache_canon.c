/* SPDX-License-Identifier: MIT */
/* test_cache_canon.c -- the response cache's canonical request (cache/canon.h) and key
 * (cache/key.h): member order and whitespace do not matter, escapes are decoded before
 * names are compared and skipped, the skip list is the top level's only, numbers keep their
 * spelling, and what parsers could read two ways (a name twice at any depth, a lone
 * surrogate, bad UTF-8) is refused; the key separates every part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cache/canon.h"
#include "cache/key.h"

static const char *const skip[] = {"stream", "stream_options", "user"};

/* The canonical text of <in> (NULL when refused, with <res> set). */
static char *canon_of(const char *in, enum canon_result *res)
{
    static char text[4096];
    struct bsc_buf out;

    bsc_buf_init(&out, 1u << 20);
    *res = canon_request(bsc_str_cstr(in), skip, 3, &out);
    if (*res == CANON_OK)
        snprintf(text, sizeof(text), "%.*s", (int)out.len, out.p ? out.p : "");
    bsc_buf_cleanup(&out);
    return *res == CANON_OK ? text : NULL;
}

static void expect(const char *in, const char *want)
{
    enum canon_result res;
    const char *got = canon_of(in, &res);

    if (!got)
        fail_msg("refused (%d): %s", res, in);
    assert_string_equal(got, want);
}

static void expect_refused(const char *in, enum canon_result want)
{
    enum canon_result res;

    assert_null(canon_of(in, &res));
    assert_int_equal(res, want);
}

static void test_member_order_and_whitespace(void **state)
{
    (void)state;
    expect("{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}");
    expect(" {\n\t\"a\" : [ 1 , {\"z\":true,\"y\":null} ] ,\r\"b\":\"x\" } ",
           "{\"a\":[1,{\"y\":null,\"z\":true}],\"b\":\"x\"}");
    expect("{}", "{}");
    expect("[]", "[]");
    /* Shorter names first when one is a prefix of the other; bytes compared unsigned. */
    expect("{\"ab\":1,\"a\":2,\"\xc3\xa9\":3,\"z\":4}", "{\"a\":2,\"ab\":1,\"z\":4,\"\xc3\xa9\":3}");
}

static void test_ignored_fields(void **state)
{
    (void)state;
    expect("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
           "\"user\":\"u\"}",
           "{\"model\":\"m\"}");
    /* An escaped spelling of an ignored name is the same name. */
    expect("{\"model\":\"m\",\"\\u0073tream\":true,\"us\\u0065r\":\"u\"}", "{\"model\":\"m\"}");
    /* Only at the top level: a nested "user" is part of the request. */
    expect("{\"messages\":[{\"user\":\"x\",\"stream\":1}]}",
           "{\"messages\":[{\"stream\":1,\"user\":\"x\"}]}");
}

static void test_strings_one_way(void **state)
{
    (void)state;
    /* Escapes decoded, then only what JSON needs escaped is. */
    expect("{\"m\\u006fdel\":\"h\\u00e9llo\\/\"}", "{\"model\":\"h\xc3\xa9llo/\"}");
    expect("[\"\\ud83d\\ude80\"]", "[\"\xf0\x9f\x9a\x80\"]");
    expect("[\"a\\\"b\\\\c\\n\"]", "[\"a\\\"b\\\\c\\n\"]");
    /* Numbers keep their spelling: 1.0 and 1 are two keys (a miss, never a wrong hit). */
    expect("[1.0,1,-0,2e10,2E+10]", "[1.0,1,-0,2e10,2E+10]");
}

static void test_refused(void **state)
{
    (void)state;
    expect_refused("{\"a\":1,\"a\":2}", CANON_DUPLICATE);
    expect_refused("{\"a\":1,\"\\u0061\":2}", CANON_DUPLICATE);
    expect_refused("{\"m\":[{\"c\":\"x\",\"c\":\"y\"}]}", CANON_DUPLICATE);
    /* Two skipped members are still two of one name. */
    expect_refused("{\"user\":1,\"user\":2}", CANON_DUPLICATE);
    expect_refused("[\"\\ud800\"]", CANON_REFUSED);
    expect_refused("[\"\\udc00\"]", CANON_REFUSED);
    expect_refused("[\"\xc3\"]", CANON_INVALID);
    expect_refused("[\"a\x01\"]", CANON_INVALID);
    expect_refused("{\"a\":1", CANON_INVALID);
    expect_refused("{\"a\":1}x", CANON_INVALID);
    expect_refused("[01]", CANON_INVALID);
    expect_refused("[1.]", CANON_INVALID);
    expect_refused("[tru]", CANON_INVALID);
    expect_refused("", CANON_INVALID);
}

static void test_depth_bound(void **state)
{
    char deep[2 * (CANON_MAX_DEPTH + 1) + 1];

    (void)state;
    memset(deep, '[', CANON_MAX_DEPTH);
    memset(deep + CANON_MAX_DEPTH, ']', CANON_MAX_DEPTH);
    deep[2 * CANON_MAX_DEPTH] = '\0';
    {
        enum canon_result res;
        assert_non_null(canon_of(deep, &res));
    }
    memset(deep, '[', CANON_MAX_DEPTH + 1);
    memset(deep + CANON_MAX_DEPTH + 1, ']', CANON_MAX_DEPTH + 1);
    deep[2 * (CANON_MAX_DEPTH + 1)] = '\0';
    expect_refused(deep, CANON_REFUSED);
}

static void test_output_bound(void **state)
{
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, 8);
    assert_int_equal(canon_request(BSC_STR("{\"aaaa\":\"bbbbbbbb\"}"), NULL, 0, &out),
                     CANON_REFUSED);
    bsc_buf_cleanup(&out);
}

static void key_of(const char *route, const char *dialect, const char *shape, const char *scope,
                   const char *canonical, struct cache_key *k)
{
    struct cache_key_parts p = {bsc_str_cstr(route), bsc_str_cstr(dialect), bsc_str_cstr(shape),
                                bsc_str_cstr(scope), bsc_str_cstr(canonical)};

    cache_key_make(&p, k);
}

static void test_key_parts(void **state)
{
    struct cache_key a, b;

    (void)state;
    key_of("r", "/v1/chat/completions", "json", "route", "{}", &a);
    key_of("r", "/v1/chat/completions", "json", "route", "{}", &b);
    assert_memory_equal(a.d, b.d, sizeof(a.d));
    /* Each part counts, and moving bytes between parts changes the key. */
    key_of("r2", "/v1/chat/completions", "json", "route", "{}", &b);
    assert_memory_not_equal(a.d, b.d, sizeof(a.d));
    key_of("r", "/v1/messages", "json", "route", "{}", &b);
    assert_memory_not_equal(a.d, b.d, sizeof(a.d));
    key_of("r", "/v1/chat/completions", "sse", "route", "{}", &b);
    assert_memory_not_equal(a.d, b.d, sizeof(a.d));
    key_of("r", "/v1/chat/completions", "json", "client:x", "{}", &b);
    assert_memory_not_equal(a.d, b.d, sizeof(a.d));
    key_of("ab", "c", "json", "route", "{}", &a);
    key_of("a", "bc", "json", "route", "{}", &b);
    assert_memory_not_equal(a.d, b.d, sizeof(a.d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_member_order_and_whitespace),
        cmocka_unit_test(test_ignored_fields),
        cmocka_unit_test(test_strings_one_way),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_output_bound),
        cmocka_unit_test(test_key_parts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
