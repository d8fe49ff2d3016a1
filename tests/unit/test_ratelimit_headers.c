/* SPDX-License-Identifier: MIT */
/* test_ratelimit_headers.c -- the rate-limit header parsers: Go-style durations, RFC 3339
 * times, both header families through the adapters' accessor, and when a key must rest; the
 * four headers read in one pass over a raw head are what one lookup each reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "header_lines.h"
#include "providers/provider.h"
#include "providers/ratelimit_headers.h"

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(rl_parse_duration_ms(BSC_STR("1s")), 1000);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("6m0s")), 360000);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("20ms")), 20);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("1h2m3.5s")), 3723500);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("0.5s")), 500);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("3")), 3000);
    assert_int_equal(rl_parse_duration_ms(BSC_STR(" 2s ")), 2000);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("1.0001s")), 1001); /* rounded up */
    assert_int_equal(rl_parse_duration_ms(BSC_STR("250us")), 1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("0s")), 0);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("-1s")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("s")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("1x")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("1s2")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR(".s")), -1);
    assert_int_equal(rl_parse_duration_ms(BSC_STR("99999999999999h")), -1);
}

static void test_rfc3339(void **state)
{
    (void)state;
    assert_true(rl_parse_rfc3339_ms(BSC_STR("1970-01-01T00:00:00Z")) == 0);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T00:40:03Z")) == 1796172003000LL);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T00:40:03.25Z")) == 1796172003250LL);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T01:40:03+01:00")) == 1796172003000LL);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-01T23:40:03-01:00")) == 1796172003000LL);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2024-02-29T00:00:00Z")) == 1709164800000LL);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02 00:40:03Z")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-13-02T00:40:03Z")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T00:40:03")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T00:40:03.Z")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("2026-12-02T00:40:03Zjunk")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("soon")) == -1);
    assert_true(rl_parse_rfc3339_ms(BSC_STR("1970-01-01T00:00:00+01:00")) == -1);
}

/* A header table for the accessor: "name", "value" pairs, NULL-ended. */
static struct bsc_str table_header(const void *ctx, const char *name)
{
    const char *const *kv = ctx;

    for (; kv[0]; kv += 2)
        if (strcasecmp(kv[0], name) == 0)
            return bsc_str_cstr(kv[1]);
    return bsc_str_make(NULL, 0);
}

static void test_openai_headers(void **state)
{
    static const char *const h[] = {"x-ratelimit-remaining-requests",
                                    "0",
                                    "x-ratelimit-reset-requests",
                                    "3s",
                                    "X-Ratelimit-Remaining-Tokens",
                                    "149",
                                    "x-ratelimit-reset-tokens",
                                    "6m0s",
                                    NULL};
    struct prov_err_input in = {.status = 200, .header = table_header, .header_ctx = h};
    struct rl_headers rl;

    (void)state;
    prov_ratelimit(prov_ops_for(CFG_PROV_OPENAI), &in, &rl);
    assert_int_equal(rl.remaining_requests, 0);
    assert_int_equal(rl.remaining_tokens, 149);
    assert_int_equal(rl.reset_requests_ms, 3000);
    assert_int_equal(rl.reset_tokens_ms, 360000);
    assert_int_equal(rl_exhausted_ms(&rl), 3000);
    prov_ratelimit(prov_ops_for(CFG_PROV_AZURE), &in, &rl);
    assert_int_equal(rl_exhausted_ms(&rl), 3000);
    /* Gemini sends none: nothing read. */
    prov_ratelimit(prov_ops_for(CFG_PROV_GEMINI), &in, &rl);
    assert_int_equal(rl.remaining_requests, -1);
    assert_int_equal(rl_exhausted_ms(&rl), 0);
}

static void test_anthropic_headers(void **state)
{
    static const char *const h[] = {"anthropic-ratelimit-requests-remaining",
                                    "12",
                                    "anthropic-ratelimit-requests-reset",
                                    "2026-12-02T00:40:03Z",
                                    "anthropic-ratelimit-tokens-remaining",
                                    "0",
                                    "anthropic-ratelimit-tokens-reset",
                                    "2026-12-02T00:40:05.5Z",
                                    NULL};
    struct prov_err_input in = {.status = 200,
                                .header = table_header,
                                .header_ctx = h,
                                .now_wall_ms = 1796172003000ULL - 500};
    struct rl_headers rl;

    (void)state;
    prov_ratelimit(prov_ops_for(CFG_PROV_ANTHROPIC), &in, &rl);
    assert_int_equal(rl.remaining_requests, 12);
    assert_int_equal(rl.reset_requests_ms, 500);
    assert_int_equal(rl.remaining_tokens, 0);
    assert_int_equal(rl.reset_tokens_ms, 3000);
    assert_int_equal(rl_exhausted_ms(&rl), 3000);
    in.now_wall_ms = 1796172010000ULL; /* the reset is past */
    prov_ratelimit(prov_ops_for(CFG_PROV_ANTHROPIC), &in, &rl);
    assert_int_equal(rl.reset_tokens_ms, 0);
    assert_int_equal(rl_exhausted_ms(&rl), 0);
    /* The OpenAI headers mean nothing to the Anthropic adapter. */
    prov_ratelimit(prov_ops_for(CFG_PROV_OPENAI), &in, &rl);
    assert_int_equal(rl.remaining_tokens, -1);
}

static void expect_rl(const struct rl_headers *got, const struct rl_headers *want)
{
    assert_int_equal(got->remaining_requests, want->remaining_requests);
    assert_int_equal(got->remaining_tokens, want->remaining_tokens);
    assert_int_equal(got->reset_requests_ms, want->reset_requests_ms);
    assert_int_equal(got->reset_tokens_ms, want->reset_tokens_ms);
}

/* Raw heads as an upstream sends them (the first of a duplicate counts, names in any case,
 * a space before the colon or at the line's start is another name): both families read in
 * one pass (prov_err_input.headers) equal one lookup per name. */
static void test_one_pass_reads_as_each_name(void **state)
{
    static const char *const heads[] = {
        "HTTP/1.1 429 Too Many Requests\r\nX-RateLimit-Remaining-Requests: 0\r\n"
        "x-ratelimit-remaining-requests: 7\r\nx-ratelimit-reset-requests: 3s\r\n"
        "x-ratelimit-remaining-tokens : 5\r\n x-ratelimit-reset-tokens: 9s\r\n"
        "x-ratelimit-reset-tokens:\t6m0s \r\nx-ratelimit-remaining-tokens: 149\r\n\r\n",
        "HTTP/1.1 200 OK\r\nanthropic-ratelimit-requests-remaining: 12\r\n"
        "Anthropic-Ratelimit-Requests-Reset: 2026-12-02T00:40:03Z\r\n"
        "anthropic-ratelimit-tokens-remaining:0\r\nanthropic-ratelimit-tokens-remaining: 9\r\n"
        "anthropic-ratelimit-tokens-reset: 2026-12-02T00:40:05.5Z\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx-ratelimit-remaining-requests\r\n: 4\r\n",
        "",
    };
    static const enum cfg_provider_kind kinds[] = {CFG_PROV_OPENAI, CFG_PROV_ANTHROPIC,
                                                   CFG_PROV_AZURE};
    struct rl_headers each, once;

    (void)state;
    for (size_t h = 0; h < BSC_ARRAY_LEN(heads); h++)
        for (size_t k = 0; k < BSC_ARRAY_LEN(kinds); k++) {
            struct prov_err_input in = {.status = 200,
                                        .header = test_head_header,
                                        .header_ctx = heads[h],
                                        .now_wall_ms = 1796172003000ULL - 500};

            prov_ratelimit(prov_ops_for(kinds[k]), &in, &each);
            in.headers = test_head_headers;
            prov_ratelimit(prov_ops_for(kinds[k]), &in, &once);
            expect_rl(&once, &each);
        }
    {
        struct prov_err_input in = {.status = 429, .header = test_head_header,
                                    .headers = test_head_headers, .header_ctx = heads[0]};
        struct rl_headers want = {0, 149, 3000, 360000};

        prov_ratelimit(prov_ops_for(CFG_PROV_OPENAI), &in, &once);
        expect_rl(&once, &want);
    }
}

static void test_exhausted(void **state)
{
    struct rl_headers rl = {-1, -1, -1, -1};

    (void)state;
    assert_int_equal(rl_exhausted_ms(&rl), 0);
    rl.remaining_requests = 1;
    rl.reset_requests_ms = 5000;
    assert_int_equal(rl_exhausted_ms(&rl), 0); /* one left */
    rl.remaining_requests = 0;
    assert_int_equal(rl_exhausted_ms(&rl), 5000);
    rl.reset_requests_ms = -1;
    assert_int_equal(rl_exhausted_ms(&rl), 1000); /* none left, no reset given */
    rl.remaining_tokens = 0;
    rl.reset_tokens_ms = 999999999;
    assert_int_equal(rl_exhausted_ms(&rl), RL_MAX_RESET_MS);
    /* No accessor: nothing. */
    struct prov_err_input none = {0};
    rl_read_openai(&none, &rl);
    assert_int_equal(rl.remaining_requests, -1);
    assert_int_equal(rl.reset_tokens_ms, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),      cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_openai_headers), cmocka_unit_test(test_anthropic_headers),
        cmocka_unit_test(test_exhausted),
        cmocka_unit_test(test_one_pass_reads_as_each_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
