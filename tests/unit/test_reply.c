/* SPDX-License-Identifier: MIT */
/* test_reply.c -- the one derivation of the retry signals (reply_set_retry) as a table, the
 * typed-failure body never announcing a wait for a failure that is not retryable, the
 * request parameters a target cannot honour (policy/params.c), and the gate that decides
 * whether a JSON text may spell a value through escapes (bsc_json_may_hold), and the
 * substring search it is built on (bsc_str_find) against memmem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/json_name.h"
#include "policy/params.h"
#include "router/reply.h"

#define EXPECT_INT(ctx, got, want)                                                         \
    do {                                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);                           \
        if (g_ != w_)                                                                      \
            fail_msg("%s: %s is %lld, want %lld", (ctx), #got, g_, w_);                    \
    } while (0)

/* ---- reply_set_retry ------------------------------------------------------------------ */

static void test_retry_table(void **state)
{
    static const struct {
        const char *what;
        struct reply_cause c;
        bool retryable;
        int64_t wait;
        bool should_retry;
    } rows[] = {
        /* Only a change to the request or config helps: no wait, no SDK retry. */
        {"max_tokens too large", {OUTLOOK_NEVER, FAIL_NONE, -1, false}, false, -1, false},
        {"never ignores a wait", {OUTLOOK_NEVER, FAIL_NONE, 1000, false}, false, -1, false},
        {"admin-disabled", {OUTLOOK_NEVER, FAIL_NONE, -1, false}, false, -1, false},
        {"contract failure", {OUTLOOK_NEVER, FAIL_CONTRACT_FAILURE, -1, true}, false, -1,
         false},
        /* Time helps: with the wait when known, else the default; the SDK may retry only
         * when nothing went upstream yet. */
        {"open circuit", {OUTLOOK_TIME, FAIL_NONE, 42000, false}, true, 42000, true},
        {"cooling key", {OUTLOOK_TIME, FAIL_NONE, 1, false}, true, 1, true},
        {"ramp, no time", {OUTLOOK_TIME, FAIL_NONE, -1, false}, true,
         OUTLOOK_DEFAULT_RETRY_MS, true},
        {"hint past deadline", {OUTLOOK_TIME, FAIL_RATE_LIMITED, 30000, true}, true, 30000,
         false},
        /* The last failure's kind decides. */
        {"server error", {OUTLOOK_KIND, FAIL_SERVER_ERROR, -1, true}, true,
         OUTLOOK_DEFAULT_RETRY_MS, false},
        {"rate limited", {OUTLOOK_KIND, FAIL_RATE_LIMITED, 7000, true}, true, 7000, false},
        {"quota", {OUTLOOK_KIND, FAIL_QUOTA_EXHAUSTED, 7000, true}, false, -1, false},
        {"model not found", {OUTLOOK_KIND, FAIL_NOT_FOUND, -1, true}, false, -1, false},
        {"invalid request", {OUTLOOK_KIND, FAIL_INVALID_REQUEST, -1, true}, false, -1,
         false},
        {"no attempt, kind none", {OUTLOOK_KIND, FAIL_NONE, 500, false}, false, -1, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct reply_error e = {.retryable = !rows[i].retryable,
                                .retry_after_ms = 12345,
                                .should_retry = !rows[i].should_retry};

        reply_set_retry(&e, &rows[i].c);
        EXPECT_INT(rows[i].what, e.retryable, rows[i].retryable);
        EXPECT_INT(rows[i].what, e.retry_after_ms, rows[i].wait);
        EXPECT_INT(rows[i].what, e.should_retry, rows[i].should_retry);
    }
}

/* Every outlook, kind, wait and attempt: the three signals never disagree. */
static void test_retry_invariants(void **state)
{
    static const int64_t waits[] = {-1, 0, 1, 1000, 86400000};

    (void)state;
    for (int o = OUTLOOK_KIND; o <= OUTLOOK_TIME; o++)
        for (int k = 0; k < FAIL_KIND_COUNT; k++)
            for (size_t w = 0; w < sizeof(waits) / sizeof(waits[0]); w++)
                for (int a = 0; a < 2; a++) {
                    struct reply_cause c = {(enum outlook)o, (enum fail_kind)k, waits[w],
                                            a == 1};
                    struct reply_error e = {0};

                    reply_set_retry(&e, &c);
                    if (!e.retryable) {
                        assert_true(e.retry_after_ms < 0);
                        assert_false(e.should_retry);
                    } else {
                        assert_true(e.retry_after_ms >= 0);
                    }
                    if (a)
                        assert_false(e.should_retry);
                }
}

static void test_body_agrees(void **state)
{
    struct reply_error e = {.status = 400,
                            .type = "invalid_request_error",
                            .code = "no_eligible_fallback",
                            .message = "too large",
                            .reason = "no_eligible_fallback"};
    struct reply_cause never = {OUTLOOK_NEVER, FAIL_NONE, -1, false};
    struct reply_cause later = {OUTLOOK_TIME, FAIL_NONE, 2500, false};
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4096);
    reply_set_retry(&e, &never);
    e.retry_after_ms = 1000; /* even a stray wait is not announced */
    assert_int_equal(reply_error_body(&e, "req_1", &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"retryable\":false,\"retry_after_ms\":null"));
    bsc_buf_reset(&b);
    reply_set_retry(&e, &later);
    assert_int_equal(reply_error_body(&e, "req_1", &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"retryable\":true,\"retry_after_ms\":2500"));
    bsc_buf_cleanup(&b);
}

/* ---- params ----------------------------------------------------------------------------- */

static const struct prov_ops anth_like = {.name = "a",
                                          .unhonoured = PROV_P(LOGPROBS) |
                                                        PROV_P(TOP_LOGPROBS) |
                                                        PROV_P(LOGIT_BIAS) | PROV_P(MODALITIES),
                                          .max_choices = 1};
static const struct prov_ops gem_like = {.name = "g", .unhonoured = PROV_P(LOGPROBS),
                                         .max_choices = 8};
static const struct prov_ops open_like = {.name = "o"};

static uint32_t unhonoured_body(const char *body, const struct prov_ops *ops)
{
    struct req_params p;

    params_of_body(bsc_str_cstr(body), &p);
    return params_unhonoured(&p, ops);
}

static void test_params_from_body(void **state)
{
    (void)state;
    assert_int_equal(unhonoured_body("{\"model\":\"m\",\"n\":2}", &anth_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"n\":2}", &gem_like), 0);
    assert_int_equal(unhonoured_body("{\"n\":9}", &gem_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"n\":1}", &anth_like), 0);
    assert_int_equal(unhonoured_body("{\"n\":null}", &anth_like), 0);
    /* Not a positive integer: no adapter with a limit takes it. */
    assert_int_equal(unhonoured_body("{\"n\":1.0}", &anth_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"n\":\"2\"}", &gem_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"n\":0}", &gem_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"n\":500}", &open_like), 0);
    /* Set means what the translators refuse: false, 0, {} and null are not set. */
    assert_int_equal(unhonoured_body("{\"logprobs\":true}", &anth_like), PROV_P(LOGPROBS));
    assert_int_equal(unhonoured_body("{\"logprobs\":false}", &anth_like), 0);
    assert_int_equal(unhonoured_body("{\"top_logprobs\":0}", &anth_like), 0);
    assert_int_equal(unhonoured_body("{\"top_logprobs\":3}", &gem_like), 0);
    assert_int_equal(unhonoured_body("{\"logit_bias\":{}}", &anth_like), 0);
    assert_int_equal(unhonoured_body("{\"logit_bias\":{\"5\":-100}}", &anth_like),
                     PROV_P(LOGIT_BIAS));
    assert_int_equal(unhonoured_body("{\"modalities\":[\"text\"]}", &anth_like), 0);
    /* Names and values decoded, as the upstream reads them. */
    assert_int_equal(unhonoured_body("{\"\\u006e\":2}", &anth_like), PROV_P(N));
    assert_int_equal(unhonoured_body("{\"modalities\":[\"text\",\"\\u0061udio\"]}", &anth_like),
                     PROV_P(MODALITIES));
    assert_int_equal(unhonoured_body("{\"log\\u0070robs\":true,\"n\":3}", &anth_like),
                     PROV_P(N) | PROV_P(LOGPROBS));
}

static void test_params_from_json(void **state)
{
    struct json_object *req = json_tokener_parse("{\"n\":4,\"functions\":[],\"audio\":null}");
    struct req_params p;

    (void)state;
    params_of_json(req, &p);
    assert_int_equal(p.n, 4);
    assert_int_equal(p.used, PROV_P(FUNCTIONS));
    json_object_put(req);
    assert_string_equal(params_first_name(PROV_P(LOGPROBS) | PROV_P(N)), "n");
    assert_string_equal(params_first_name(PROV_P(WEB_SEARCH_OPTIONS)), "web_search_options");
    assert_null(params_first_name(0));
}

/* ---- bsc_json_may_hold ------------------------------------------------------------------ */

static void test_may_hold(void **state)
{
    const struct bsc_str want = BSC_STR("image_url");

    (void)state;
    assert_true(bsc_json_may_hold(BSC_STR("[{\"type\":\"image_url\"}]"), want));
    assert_true(bsc_json_may_hold(BSC_STR("[{\"type\":\"image\\u005furl\"}]"), want));
    assert_false(bsc_json_may_hold(BSC_STR("[{\"content\":\"a\\nb\"}]"), want));
    assert_false(bsc_json_may_hold(BSC_STR("[{\"content\":\"hi\"}]"), want));
    assert_true(bsc_json_may_hold(BSC_STR("[\"a\\/b\"]"), BSC_STR("a/b")));
    assert_false(bsc_json_may_hold(BSC_STR_NULL, want));
    /* Past the sixteen-byte blocks, and escapes found however far in. */
    assert_true(bsc_json_may_hold(BSC_STR("[{\"content\":\"0123456789abcdef0123456789\","
                                          "\"type\":\"image_url\"}]"), want));
    assert_true(bsc_json_may_hold(BSC_STR("[\"a\\nb 0123456789abcdef0123456789 \\u0069\"]"),
                                  want));
    assert_true(bsc_json_may_hold(BSC_STR("[\"a\\\\u\"]"), want)); /* "may": an escaped \\ */
    assert_false(bsc_json_may_hold(BSC_STR("[\"0123456789abcdef0123456789 \\n \\t\"]"), want));
    assert_true(bsc_json_may_hold(BSC_STR("[\"0123456789abcdef0123456789 \\n\"]"),
                                  BSC_STR("a\nb")));
}

/* Every needle cut from a text with repeats and near misses, at every length and offset,
 * and every needle that is not there: the same answer as memmem. */
static void test_str_find(void **state)
{
    static const char text[] = "abcabdabcabcabe image_ur image_url\\u00 xxxxxxxxxxxxxxxxxy "
                               "aab aaab aaaab zz";
    const size_t n = sizeof(text) - 1;
    struct bsc_str hay = bsc_str_make(text, n);

    (void)state;
    for (size_t off = 0; off < n; off++) {
        for (size_t m = 1; off + m <= n && m <= 40; m++) {
            struct bsc_str nd = bsc_str_make(text + off, m);
            assert_ptr_equal(bsc_str_find(hay, nd), memmem(text, n, nd.p, m));
            for (size_t cut = 0; cut + m <= n; cut += 7)
                assert_ptr_equal(bsc_str_find(bsc_str_make(text + cut, n - cut), nd),
                                 memmem(text + cut, n - cut, nd.p, m));
        }
    }
    assert_null(bsc_str_find(hay, BSC_STR("image_urm")));
    assert_null(bsc_str_find(hay, BSC_STR("q")));
    assert_null(bsc_str_find(hay, BSC_STR("")));
    assert_null(bsc_str_find(BSC_STR_NULL, BSC_STR("a")));
    assert_null(bsc_str_find(BSC_STR("ab"), BSC_STR("abc")));
}

/* A text of a few hundred bytes, where the search takes sixty-four positions a step and
 * ends on overlapping steps of both widths: needles cut at every offset, and near misses
 * (a needle's first and last byte right, the middle wrong) every few bytes, against memmem
 * on every suffix. */
static void test_str_find_long(void **state)
{
    char text[300];
    const size_t n = sizeof(text);

    (void)state;
    for (size_t i = 0; i < n; i++)
        text[i] = "\"ab\"cab\"\"xa\"yb"[(i * 7 + i / 13) % 12];
    memcpy(text + 250, "\"error\"", 7);
    memcpy(text + 180, "\"errxr\"", 7);
    for (size_t off = 0; off < n; off += 3) {
        for (size_t m = 2; off + m <= n && m <= 12; m++) {
            struct bsc_str nd = bsc_str_make(text + off, m);
            for (size_t cut = 0; cut + m <= n; cut += 5)
                assert_ptr_equal(bsc_str_find(bsc_str_make(text + cut, n - cut), nd),
                                 memmem(text + cut, n - cut, nd.p, m));
        }
    }
    for (size_t cut = 0; cut < n; cut++) {
        assert_ptr_equal(bsc_str_find(bsc_str_make(text + cut, n - cut), BSC_STR("\"error\"")),
                         cut <= 250 ? text + 250 : NULL);
        assert_ptr_equal(bsc_str_find(bsc_str_make(text, n - cut), BSC_STR("\"error\"")),
                         n - cut >= 257 ? text + 250 : NULL);
    }
}

/* The candidate filter uses the needle's two rarest bytes: texts full of them where the
 * rest of the needle differs by one byte (each byte of the needle changed in turn, at every
 * position, in texts long enough for both step widths), then the needle itself at every
 * position: the same answer as memmem. */
static void test_str_find_rare_pair(void **state)
{
    static const char *const needles[] = {"image_url", "\"tool_calls\"", "\"error\"", "_g",
                                          "zq", "a_b_c"};
    char text[100], nd[16];

    (void)state;
    for (size_t k = 0; k < sizeof(needles) / sizeof(needles[0]); k++) {
        size_t m = strlen(needles[k]);

        for (size_t at = 0; at + m <= sizeof(text); at++) {
            for (size_t change = 0; change <= m; change++) {
                memset(text, '_', sizeof(text));
                memcpy(nd, needles[k], m);
                if (change < m)
                    nd[change] = nd[change] == 'x' ? 'y' : 'x';
                memcpy(text + at, nd, m);
                for (size_t len = m; len <= sizeof(text); len += 13)
                    assert_ptr_equal(bsc_str_find(bsc_str_make(text, len),
                                                  bsc_str_make(needles[k], m)),
                                     memmem(text, len, needles[k], m));
            }
        }
    }
}

/* A needle in quotes, in JSON full of quotes: hits of the text between its quotes without
 * a quote on one side or the other (or at the hay's very edges, where there is no room for
 * the quote) are passed over, the first whole match is found, in texts short and long
 * enough for the sixteen- and thirty-two-wide steps. */
static void test_str_find_quoted(void **state)
{
    static const char *const hays[] = {
        "error\" x \"error\"",
        "\"errorx \"error\" \"error\"",
        "xerror\" \"errorr\" \"err\" \"error\"",
        "0123456789abcdef0123456789abcdef \"error \"xerror\" \"error\" tail",
        "error\"0123456789abcdef0123456789abcdef\"error",
        "\"error",
        "error\"",
        "\"ab\"",
        "\"a\"\"ab\"\"abc\"\"ab\"",
    };
    static const char *const needles[] = {"\"error\"", "\"ab\"", "\"abc\"", "\"a\""};

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(hays); i++)
        for (size_t k = 0; k < BSC_ARRAY_LEN(needles); k++)
            for (size_t cut = 0; cut < strlen(hays[i]); cut++) {
                const char *h = hays[i] + cut;
                assert_ptr_equal(bsc_str_find(bsc_str_cstr(h), bsc_str_cstr(needles[k])),
                                 memmem(h, strlen(h), needles[k], strlen(needles[k])));
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_table),     cmocka_unit_test(test_retry_invariants),
        cmocka_unit_test(test_body_agrees),     cmocka_unit_test(test_params_from_body),
        cmocka_unit_test(test_params_from_json), cmocka_unit_test(test_may_hold),
        cmocka_unit_test(test_str_find),
        cmocka_unit_test(test_str_find_long),
        cmocka_unit_test(test_str_find_rare_pair),
        cmocka_unit_test(test_str_find_quoted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
