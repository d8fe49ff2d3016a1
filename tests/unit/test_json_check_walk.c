/* SPDX-License-Identifier: MIT */
/* test_json_check_walk.c -- the request checks' member walk (core/json_check.c: one
 * bsc_json_tok_member call a top-level member) against the token-by-token checks it replaced
 * (tests/unit/harness/json_check_ref.c): on the bench request and answer and on documents
 * whose name is followed by a broken ':' or value (the name's rule must still be met first),
 * cut at every length, bsc_json_check, bsc_json_check_members and bsc_json_check_request give
 * the same verdicts, error offsets, messages, names and spans. fuzz_json_check_diff does the
 * same on any input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/json_check.h"
#include "harness/json_check_ref.h"

#define N_KEYS 6

static const struct bsc_str keys[N_KEYS] = {BSC_STR("model"),   BSC_STR("messages"),
                                            BSC_STR("usage"),   BSC_STR("choices"),
                                            BSC_STR("a"),       BSC_STR("messages")};

static void expect_same_err(const char *doc, const struct bsc_json_error *a,
                            const struct bsc_json_error *b)
{
    if (a->offset != b->offset || a->name.p != b->name.p || a->name.len != b->name.len ||
        (a->what != b->what && (!a->what || !b->what || strcmp(a->what, b->what) != 0)))
        fail_msg("%s: error %zu '%s' name %.*s, reference %zu '%s' name %.*s", doc, a->offset,
                 a->what ? a->what : "", (int)a->name.len, a->name.p ? a->name.p : "",
                 b->offset, b->what ? b->what : "", (int)b->name.len,
                 b->name.p ? b->name.p : "");
}

static void expect_same_vals(const char *doc, const struct bsc_str *a, const struct bsc_str *b,
                             size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (a[k].p != b[k].p || a[k].len != b[k].len)
            fail_msg("%s: key %zu spans differ", doc, k);
}

/* Every check on <doc> against the reference, with keys[0, n) and <objects>. */
static void expect_same(struct bsc_str doc, size_t n, uint32_t objects, unsigned depth)
{
    struct bsc_json_error ea = {0, NULL, BSC_STR_NULL}, eb = ea;
    struct bsc_str va[N_KEYS], vb[N_KEYS];
    char label[64];

    snprintf(label, sizeof(label), "%.*s", doc.len > 48 ? 48 : (int)doc.len, doc.p);
    assert_int_equal(bsc_json_check(doc, depth, &ea), json_check_ref(doc, depth, &eb));
    expect_same_err(label, &ea, &eb);
    ea = eb = (struct bsc_json_error){0, NULL, BSC_STR_NULL};
    assert_int_equal(bsc_json_check_members(doc, depth, keys, n, va, &ea),
                     json_check_ref_members(doc, depth, keys, n, vb, &eb));
    expect_same_err(label, &ea, &eb);
    expect_same_vals(label, va, vb, n);
    ea = eb = (struct bsc_json_error){0, NULL, BSC_STR_NULL};
    assert_int_equal(bsc_json_check_request(doc, depth, keys, n, objects, va, &ea),
                     json_check_ref_request(doc, depth, keys, n, objects, vb, &eb));
    expect_same_err(label, &ea, &eb);
    expect_same_vals(label, va, vb, n);
}

static void expect_same_cuts(const char *doc, size_t len)
{
    for (size_t cut = 0; cut <= len; cut++) {
        expect_same(bsc_str_make(doc, cut), 5, 2, 64);
        expect_same(bsc_str_make(doc, cut), N_KEYS, 0x22, 2);
        expect_same(bsc_str_make(doc, cut), 0, 0, 64);
    }
}

/* A name's rule (duplicate, refused) is met before what follows it: the verdict is the
 * name's even when its ':' or value is broken. */
static void test_name_rule_before_what_follows(void **state)
{
    static const char *const docs[] = {
        "{\"a\":1,\"a\" x}", "{\"model\":\"x\",\"model\"", "{\"a\\ud800\" 1}",
        "{\"a\":1,\"\\u0061\":tru}", "{\"b\":[],\"b\":[1 2]}", "{\"a\\u0000\":}",
    };
    struct bsc_json_error e;
    struct bsc_str v[N_KEYS];

    (void)state;
    assert_int_equal(bsc_json_check_request(bsc_str_cstr(docs[0]), 8, keys, 5, 0, v, &e),
                     BSC_JSONV_DUPLICATE);
    assert_int_equal(e.offset, 7);
    assert_string_equal(e.what, "duplicate member name");
    assert_int_equal(bsc_json_check_request(bsc_str_cstr(docs[2]), 8, keys, 5, 0, v, &e),
                     BSC_JSONV_REFUSED);
    assert_int_equal(e.offset, 1);
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
        expect_same_cuts(docs[d], strlen(docs[d]));
}

static void test_shapes_match_reference(void **state)
{
    static const char *const docs[] = {
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"},{\"a\":[1]}],\"a\":{\"b\":2}}",
        "{\"messages\":[{},1]}", "{\"messages\":[]}", "{\"messages\":{}}",
        "[{\"a\":1},{\"a\":2},3]", " { \"a\" : 1 , \"usage\" : { \"x\" : [ ] } } \n",
        "{\"\\u006dodel\":\"m\",\"m\\u0065ssages\":[]}", "{}", "[]", "1", "\"s\"", "{\"a\":1}x",
        "{\"a\":[[[[[1]]]]]}", "{\"usage\":null,\"usage\":{}}",
    };

    (void)state;
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
        expect_same_cuts(docs[d], strlen(docs[d]));
}

/* The bench request and answer (bench/request.json, bench/upstream-response.json), cut at
 * every length: what the gateway meets on every request. */
static void test_bench_documents_match_reference(void **state)
{
    static const char *const files[] = {"bench/request.json", "bench/upstream-response.json"};

    (void)state;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char path[256], buf[8192];
        FILE *fp = NULL;
        size_t n;

        /* the unit tests run from the repository root or from build/.../tests */
        for (int up = 0; up < 5 && !fp; up++) {
            snprintf(path, sizeof(path), "%.*s%s", up * 3, "../../../../../", files[f]);
            fp = fopen(path, "rb");
        }
        if (!fp)
            fail_msg("%s not found from the working directory or above it", files[f]);
        n = fread(buf, 1, sizeof(buf), fp);
        fclose(fp);
        assert_true(n > 0 && n < sizeof(buf));
        expect_same_cuts(buf, n);
    }
}

/* A wanted key of every length from 0 to 40 against a top-level name of the same length
 * that is the key, or the key with one byte changed at each position: the value is found
 * only for the key itself (the name compare's overlapping loads; the name in an exact-size
 * copy, so a load past it is an ASan error). */
static void test_key_compare_every_length(void **state)
{
    (void)state;
    for (size_t len = 0; len <= 40; len++) {
        char key[48], doc[128];

        for (size_t k = 0; k < len; k++)
            key[k] = (char)('a' + (k * 5 + len) % 26);
        for (size_t at = 0; at <= len; at++) { /* at == len: the name unchanged */
            struct bsc_str want = bsc_str_make(key, len), val = BSC_STR_NULL;
            size_t n = 0;
            char *copy;

            doc[n++] = '{';
            doc[n++] = '"';
            memcpy(doc + n, key, len);
            if (at < len)
                doc[n + at] = doc[n + at] == 'z' ? 'y' : 'z';
            n += len;
            memcpy(doc + n, "\":7}", 4);
            n += 4;
            copy = malloc(n);
            assert_non_null(copy);
            memcpy(copy, doc, n);
            assert_int_equal(bsc_json_check_members(bsc_str_make(copy, n), 8, &want, 1, &val,
                                                    NULL),
                             1);
            if (at == len) {
                assert_non_null(val.p);
                assert_int_equal(val.len, 1);
                assert_int_equal(val.p[0], '7');
            } else {
                assert_null(val.p);
            }
            free(copy);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_rule_before_what_follows),
        cmocka_unit_test(test_shapes_match_reference),
        cmocka_unit_test(test_bench_documents_match_reference),
        cmocka_unit_test(test_key_compare_every_length),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
