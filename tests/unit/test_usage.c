/* SPDX-License-Identifier: MIT */
/* test_usage.c -- every dialect's usage read whole into the neutral record (OpenAI/Azure/
 * DashScope cached and reasoning tokens, DeepSeek cache hits and misses, the Responses API's
 * names, Anthropic's cache reads and 5-minute/1-hour writes plain and split over
 * message_start + message_delta, Gemini's cached content and thoughts plain and streamed),
 * and the cost formula that prices it (policy/cost.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/str.h"
#include "providers/anthropic.h"
#include "providers/provider.h"
#include "policy/cost.h"
#include "harness/openai_usage_ref.h"

static struct prov_usage oai(const char *json, bool responses)
{
    struct prov_usage u;

    prov__openai_usage_read(bsc_str_cstr(json), responses, &u);
    return u;
}

static void assert_usage(struct prov_usage u, int64_t in, int64_t out, int64_t cached, int64_t w5,
                         int64_t w1h, int64_t reasoning)
{
    assert_int_equal(u.input_tokens, in);
    assert_int_equal(u.output_tokens, out);
    assert_int_equal(u.cached_tokens, cached);
    assert_int_equal(u.cache_write_tokens, w5);
    assert_int_equal(u.cache_write_1h_tokens, w1h);
    assert_int_equal(u.reasoning_tokens, reasoning);
}

static void test_openai_usage(void **state)
{
    (void)state;
    /* OpenAI, Azure, DashScope: cached_tokens and reasoning_tokens are parts of the totals. */
    assert_usage(oai("{\"prompt_tokens\":1000,\"completion_tokens\":200,\"total_tokens\":1200,"
                     "\"prompt_tokens_details\":{\"cached_tokens\":900,\"audio_tokens\":0},"
                     "\"completion_tokens_details\":{\"reasoning_tokens\":50}}",
                     false),
                 1000, 200, 900, -1, -1, 50);
    /* DashScope's explicit cache: its writes are in prompt_tokens_details too. */
    assert_usage(oai("{\"prompt_tokens\":3000,\"completion_tokens\":10,\"prompt_tokens_details\":"
                     "{\"cached_tokens\":0,\"cache_creation_input_tokens\":2048,"
                     "\"cache_type\":\"ephemeral\"}}",
                     false),
                 3000, 10, 0, 2048, -1, -1);
    /* No details: the parts are unknown. */
    assert_usage(oai("{\"prompt_tokens\":7,\"completion_tokens\":3}", false), 7, 3, -1, -1, -1, -1);
    /* One detail repeated (parsers disagree on which wins): that one is unknown, the other
     * detail of the same object is still read. */
    assert_usage(oai("{\"prompt_tokens\":30,\"completion_tokens\":1,\"prompt_tokens_details\":"
                     "{\"cached_tokens\":1,\"cache_creation_input_tokens\":20,"
                     "\"cached_tokens\":2}}",
                     false),
                 30, 1, -1, 20, -1, -1);
    assert_usage(oai("{\"prompt_tokens\":30,\"completion_tokens\":1,\"prompt_tokens_details\":"
                     "{\"cache_creation_input_tokens\":5,\"cached_tokens\":4,"
                     "\"cache_creation_input_tokens\":6}}",
                     false),
                 30, 1, 4, -1, -1, -1);
    /* Responses API names. */
    assert_usage(oai("{\"input_tokens\":500,\"output_tokens\":40,\"input_tokens_details\":"
                     "{\"cached_tokens\":128},\"output_tokens_details\":{\"reasoning_tokens\":16}}",
                     true),
                 500, 40, 128, -1, -1, 16);
    /* Not an object, negative or fractional counts: unknown. */
    assert_usage(oai("null", false), -1, -1, -1, -1, -1, -1);
    assert_usage(oai("{\"prompt_tokens\":-5,\"completion_tokens\":1.5}", false), -1, -1, -1, -1, -1,
                 -1);
}

static void test_deepseek_usage(void **state)
{
    (void)state;
    /* prompt_tokens = hit + miss; the hits are the cached part. */
    assert_usage(oai("{\"prompt_tokens\":1000,\"completion_tokens\":100,\"total_tokens\":1100,"
                     "\"prompt_cache_hit_tokens\":800,\"prompt_cache_miss_tokens\":200}",
                     false),
                 1000, 100, 800, -1, -1, -1);
    /* Without prompt_tokens the sum stands in. */
    assert_usage(oai("{\"completion_tokens\":1,\"prompt_cache_hit_tokens\":30,"
                     "\"prompt_cache_miss_tokens\":12}",
                     false),
                 42, 1, 30, -1, -1, -1);
    /* prompt_tokens_details wins when both are there. */
    assert_usage(oai("{\"prompt_tokens\":10,\"completion_tokens\":1,\"prompt_cache_hit_tokens\":4,"
                     "\"prompt_tokens_details\":{\"cached_tokens\":6}}",
                     false),
                 10, 1, 6, -1, -1, -1);
}

/* The usage read against the reader it replaced (harness/openai_usage_ref.c: every object
 * read with bsc_json_members), on the edge cases the figures hang on: repeated keys at each
 * level, escaped names (a lone surrogate or NUL escape included), objects that are not,
 * counts that are not unsigned integers or do not fit, broken and cut objects. */
static void test_usage_matches_reference(void **state)
{
    static const char *const cases[] = {
        "{\"prompt_tokens\":312,\"completion_tokens\":44,\"total_tokens\":356,"
        "\"prompt_tokens_details\":{\"cached_tokens\":0},"
        "\"completion_tokens_details\":{\"reasoning_tokens\":0}}",
        "{ \"prompt_tokens\" : 1 , \"completion_tokens\" :\n2 }",
        "{\"prompt_tokens\":1,\"prompt_tokens\":2}",
        "{\"prompt_tokens\":1,\"prompt\\u005ftokens\":2}",
        "{\"\\u0070rompt_tokens\":7,\"completion_tokens\":1}",
        "{\"prompt_tokens\":7,\"a\\ud800\":1}",
        "{\"prompt_tokens\":7,\"a\\u0000\":1}",
        "{\"prompt_tokens\":7,\"x\\\"y\":1,\"completion_tokens\":2}",
        "{\"prompt_tokens_details\":{\"cached_tokens\":1},\"prompt_tokens_details\":{}}",
        "{\"prompt_tokens_details\":{\"cached_tokens\":1,\"cached_tokens\":2,"
        "\"cache_creation_input_tokens\":3}}",
        "{\"prompt_tokens_details\":{\"cached\\u005ftokens\":5,\"reasoning_tokens\":1,"
        "\"reasoning_tokens\":2}}",
        "{\"completion_tokens_details\":{\"reasoning_tokens\":1,\"cached_tokens\":1,"
        "\"cached_tokens\":2}}",
        "{\"prompt_tokens_details\":{\"cached_tokens\":1,\"x\\ud800\":0}}",
        "{\"prompt_tokens_details\":[1],\"completion_tokens_details\":\"x\"}",
        "{\"prompt_tokens_details\": {\"cached_tokens\":4} }",
        "{\"prompt_tokens_details\":{\"cached_tokens\":4 x}}",
        "{\"prompt_tokens_details\":{\"cached_tokens\":a{,\"cached_tokens\":2}}",
        /* A scalar holding a brace: the skip of the details object counts it, its walk does
         * not; the usage is then refused as before (the details not read in place). */
        "{\"prompt_tokens_details\":{\"cached_tokens\":a{,\"x\":2},\"completion_tokens\":1}",
        "{\"completion_tokens_details\":{\"reasoning_tokens\":1,\"x\":b[},\"prompt_tokens\":1}",
        "{\"completion_tokens_details\":{\"reasoning_tokens\":1,\"x\":c\"},\"prompt_tokens\":1}",
        "{\"prompt_tokens\":18446744073709551615,\"completion_tokens\":9223372036854775807}",
        "{\"prompt_tokens\":9223372036854775808,\"completion_tokens\":18446744073709551616}",
        "{\"prompt_tokens\":-1,\"completion_tokens\":1e3,\"prompt_cache_hit_tokens\":1.0}",
        "{\"prompt_tokens\":\"5\",\"completion_tokens\":true,\"prompt_cache_hit_tokens\":null}",
        "{\"prompt_cache_hit_tokens\":9223372036854775807,"
        "\"prompt_cache_miss_tokens\":9223372036854775807}",
        "{\"prompt_cache_hit_tokens\":3,\"prompt_cache_miss_tokens\":4,"
        "\"prompt_cache_miss_tokens\":5}",
        "{\"input_tokens\":500,\"output_tokens\":40,\"input_tokens_details\":"
        "{\"cached_tokens\":128,\"cache_creation_input_tokens\":2},"
        "\"output_tokens_details\":{\"reasoning_tokens\":16}}",
        "{\"input_tokens\":1,\"input_tokens\":2,\"prompt_tokens\":3}",
        "{}", "{", "{\"prompt_tokens\":1", "{\"prompt_tokens\":1,}", "{\"prompt_tokens\":}",
        "{\"prompt_tokens\" 1}", "{prompt_tokens:1}", " {\"prompt_tokens\":1}", "null", "[]", "",
        "{\"prompt_tokens\":1} trailing", "{\"prompt_tokens\":1,\"completion_tokens\":2,",
        "{\"completion_tokens_details\":{\"reasoning_tokens\":3}",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int responses = 0; responses < 2; responses++) {
            struct prov_usage a, b;
            struct bsc_str span = bsc_str_cstr(cases[i]);

            /* Every cut of the case too: the readers are bounded by the span. */
            for (size_t len = 0; len <= span.len; len++) {
                prov__openai_usage_read(bsc_str_make(span.p, len), responses, &a);
                openai_usage_ref_read(bsc_str_make(span.p, len), responses, &b);
                if (memcmp(&a, &b, sizeof(a)) != 0)
                    fail_msg("case %zu (%s), %zu bytes, responses %d", i, cases[i], len,
                             responses);
            }
        }
    }
}

static struct prov_usage anth(const char *const *objs, size_t n)
{
    struct anth_usage a = ANTH_USAGE_UNKNOWN;

    for (size_t i = 0; i < n; i++) {
        struct json_object *o = json_tokener_parse(objs[i]);

        assert_non_null(o);
        prov__anth_usage_read(o, &a);
        json_object_put(o);
    }
    return prov__anth_usage(&a);
}

static void test_anthropic_usage(void **state)
{
    /* input_tokens excludes the cache reads and writes: they add up to the prompt. */
    static const char *const plain[] = {
        "{\"input_tokens\":100,\"cache_read_input_tokens\":10000,"
        "\"cache_creation_input_tokens\":3000,\"cache_creation\":{\"ephemeral_5m_input_tokens\":"
        "2000,\"ephemeral_1h_input_tokens\":1000},\"output_tokens\":500}"};
    /* Streamed: message_start has the input side (output_tokens 1), message_delta the output. */
    static const char *const split[] = {
        "{\"input_tokens\":100,\"cache_read_input_tokens\":10000,"
        "\"cache_creation_input_tokens\":3000,\"cache_creation\":{\"ephemeral_5m_input_tokens\":"
        "2000,\"ephemeral_1h_input_tokens\":1000},\"output_tokens\":1}",
        "{\"output_tokens\":500}"};
    /* Without the TTL split every write is a 5-minute one (the default TTL). */
    static const char *const nosplit[] = {
        "{\"input_tokens\":10,\"cache_creation_input_tokens\":300,\"output_tokens\":5}"};
    /* Only the split: its sum is the writes. */
    static const char *const onlysplit[] = {
        "{\"input_tokens\":10,\"cache_creation\":{\"ephemeral_1h_input_tokens\":40},"
        "\"output_tokens\":5}"};
    /* A 1-hour part larger than the writes is cut to them. */
    static const char *const over[] = {
        "{\"input_tokens\":0,\"cache_creation_input_tokens\":5,\"cache_creation\":"
        "{\"ephemeral_1h_input_tokens\":9},\"output_tokens\":0}"};

    (void)state;
    assert_usage(anth(plain, 1), 13100, 500, 10000, 2000, 1000, -1);
    assert_usage(anth(split, 2), 13100, 500, 10000, 2000, 1000, -1);
    assert_usage(anth(nosplit, 1), 310, 5, 0, 300, 0, -1);
    assert_usage(anth(onlysplit, 1), 50, 5, 0, 0, 40, -1);
    assert_usage(anth(over, 1), 5, 0, 0, 0, 5, -1);
}

/* Gemini, through the adapter: promptTokenCount includes the cached content; thoughts are
 * output on top of candidatesTokenCount. */
static const char GEM_ANSWER[] =
    "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},"
    "\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":2000,"
    "\"candidatesTokenCount\":300,\"thoughtsTokenCount\":700,\"cachedContentTokenCount\":1500,"
    "\"totalTokenCount\":3000},\"modelVersion\":\"gemini-x\",\"responseId\":\"r1\"}";

static void gem_call(struct cfg_provider *p, struct cfg_target *t, struct prov_call *c, bool stream)
{
    memset(p, 0, sizeof(*p));
    memset(t, 0, sizeof(*t));
    p->id = (char *)"gem";
    p->kind = CFG_PROV_GEMINI;
    p->base_url = (char *)"http://127.0.0.1:9/v1beta";
    t->id = (char *)"g";
    t->provider = p;
    t->model = (char *)"gemini-x";
    *c = (struct prov_call){
        .op = PROV_OP_CHAT, .provider = p, .target = t, .key = "k", .stream = stream};
}

static void test_gemini_usage(void **state)
{
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_GEMINI);
    struct cfg_provider p;
    struct cfg_target t;
    struct prov_call c;
    struct prov_usage u;
    struct fail_info fail;
    struct bsc_buf out;
    void *st;

    (void)state;
    gem_call(&p, &t, &c, false);
    bsc_buf_init(&out, 1 << 20);
    fail_info_init(&fail);
    assert_int_equal(ops->map_response(&c, bsc_str_cstr(GEM_ANSWER), &out, &u, &fail), BSC_OK);
    assert_usage(u, 2000, 1000, 1500, -1, -1, 700);
    bsc_buf_cleanup(&out);

    gem_call(&p, &t, &c, true);
    st = calloc(1, ops->stream_size);
    ops->stream_init(st, &c);
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(ops->stream_event(st, BSC_STR(""), bsc_str_cstr(GEM_ANSWER), &out, &fail),
                     PROV_STREAM_MORE);
    ops->stream_usage(st, &u);
    assert_usage(u, 2000, 1000, 1500, -1, -1, 700);
    ops->stream_cleanup(st);
    free(st);
    bsc_buf_cleanup(&out);
}

static const struct cfg_price ANTH_PRICE = {3, 15, 0.3, 3.75, 6};

static void test_cost(void **state)
{
    struct prov_usage u = PROV_USAGE_UNKNOWN;
    const struct cfg_price oai_price = {2.5, 10, 1.25, 2.5, 2.5};
    const struct cfg_price gem_price = {1.25, 10, 0.125, 1.25, 1.25};
    const struct cfg_price deep_price = {0.27, 1.10, 0.07, 0.27, 0.27};

    (void)state;
    assert_true(cost_of_usage(&ANTH_PRICE, &u) == 0.0);
    /* Anthropic: 100*3 + 10000*0.3 + 2000*3.75 + 1000*6 + 500*15 = 24300 per Mtok. */
    u = (struct prov_usage){13100, 500, 10000, 2000, 1000, -1};
    assert_true(fabs(cost_of_usage(&ANTH_PRICE, &u) - 0.0243) < 1e-12);
    /* OpenAI: 100*2.5 + 900*1.25 + 200*10 (reasoning already in the 200). */
    u = (struct prov_usage){1000, 200, 900, -1, -1, 50};
    assert_true(fabs(cost_of_usage(&oai_price, &u) - 0.003375) < 1e-12);
    /* Gemini: 500*1.25 + 1500*0.125 + (300+700)*10. */
    u = (struct prov_usage){2000, 1000, 1500, -1, -1, 700};
    assert_true(fabs(cost_of_usage(&gem_price, &u) - 0.0108125) < 1e-12);
    /* DeepSeek: 200*0.27 + 800*0.07 + 100*1.1. */
    u = (struct prov_usage){1000, 100, 800, -1, -1, -1};
    assert_true(fabs(cost_of_usage(&deep_price, &u) - 0.00022) < 1e-12);
    /* Parts that overrun the prompt are cut to it, in order: never below the prompt's own
     * size at the cheapest price it names. */
    u = (struct prov_usage){100, 0, 150, 50, -1, -1};
    assert_true(fabs(cost_of_usage(&ANTH_PRICE, &u) - 100 * 0.3 / 1e6) < 1e-15);
    /* The estimate takes no cache discount. */
    assert_true(fabs(cost_estimate(&ANTH_PRICE, 1000, 100) - (3000 + 1500) / 1e6) < 1e-15);
}

static void test_token_counts(void **state)
{
    struct prov_usage u = {13100, 500, 10000, 2000, 1000, 20};
    struct cost_tokens t[COST_TOKEN_TYPES];
    size_t n;

    (void)state;
    n = cost_token_counts(&u, t);
    assert_int_equal(n, 5);
    assert_string_equal(t[0].type, "input");
    assert_true(t[0].n == 13100);
    assert_string_equal(t[2].type, "cached_input");
    assert_true(t[2].n == 10000);
    assert_string_equal(t[3].type, "cache_write");
    assert_true(t[3].n == 3000);
    assert_string_equal(t[4].type, "reasoning");
    u = PROV_USAGE_UNKNOWN;
    u.output_tokens = 3;
    assert_int_equal(cost_token_counts(&u, t), 1);
    assert_string_equal(t[0].type, "output");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_usage),
        cmocka_unit_test(test_deepseek_usage),
        cmocka_unit_test(test_usage_matches_reference),
        cmocka_unit_test(test_anthropic_usage),
        cmocka_unit_test(test_gemini_usage),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_token_counts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
