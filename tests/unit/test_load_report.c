/* SPDX-License-Identifier: MIT */
/* test_load_report.c -- `bascule load`'s pure parts: nearest-rank percentiles, the counting
 * of finished requests (successes, errors by status and code, targets, workflows, attempts,
 * tokens and cost per 1,000), the JSON report's fields and sums, reading usage and error
 * codes from bodies and SSE events, the request body, the options and the URL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/json_get.h"
#include "load/args.h"
#include "load/body.h"
#include "load/report.h"
#include "load/response.h"

/* ---- percentiles ---- */

static void test_percentile_nearest_rank(void **state)
{
    uint32_t v[100], three[] = {10, 20, 30};

    (void)state;
    for (unsigned i = 0; i < 100; i++)
        v[i] = i + 1;
    assert_int_equal(load_percentile(v, 100, 500), 50);
    assert_int_equal(load_percentile(v, 100, 950), 95);
    assert_int_equal(load_percentile(v, 100, 990), 99);
    assert_int_equal(load_percentile(v, 100, 1000), 100);
    assert_int_equal(load_percentile(v, 100, 0), 1);
    assert_int_equal(load_percentile(v, 100, 5000), 100); /* past p100: clamped */
    /* rank = ceil(p * n): 1.5 -> 2, 2.85 -> 3, 2.97 -> 3 */
    assert_int_equal(load_percentile(three, 3, 500), 20);
    assert_int_equal(load_percentile(three, 3, 950), 30);
    assert_int_equal(load_percentile(three, 3, 990), 30);
    assert_int_equal(load_percentile(three, 3, 333), 10);
    assert_int_equal(load_percentile(three, 3, 334), 20);
    assert_int_equal(load_percentile(three, 1, 990), 10);
    assert_int_equal(load_percentile(NULL, 0, 500), 0);
}

static void test_dist_sorts_and_summarizes(void **state)
{
    struct load_samples s = {0};
    struct load_dist d;
    static const uint32_t in[] = {5000, 1000, 3000, 2000, 4000};

    (void)state;
    d = load_dist_of(&s);
    assert_int_equal(d.n, 0);
    for (size_t i = 0; i < BSC_ARRAY_LEN(in); i++)
        assert_int_equal(load_samples_add(&s, in[i]), BSC_OK);
    assert_int_equal(load_samples_add(&s, 1ull << 40), BSC_OK); /* saturates */
    load_samples_sort(&s);
    d = load_dist_of(&s);
    assert_int_equal(d.n, 6);
    assert_int_equal(d.p50, 3000);
    assert_int_equal(d.p95, UINT32_MAX);
    assert_int_equal(d.max, UINT32_MAX);
    assert_int_equal(s.v[0], 1000);
    free(s.v);
}

static void test_per_1k(void **state)
{
    (void)state;
    assert_true(load_per_1k(600, 50) == 12000.0);
    assert_true(load_per_1k(0.5, 1000) == 0.5);
    assert_true(load_per_1k(10, 0) == 0.0);
}

/* ---- aggregation ---- */

static struct load_result ok_result(uint64_t latency_us)
{
    return (struct load_result){
        .status = 200,
        .latency_us = latency_us,
        .target = BSC_STR("a@sim"),
        .workflow = BSC_STR("primary"),
        .attempts = BSC_STR("1"),
        .has_usage = true,
        .input_tokens = 10,
        .output_tokens = 4,
    };
}

static void test_result_ok_rules(void **state)
{
    struct load_result r = ok_result(1);

    (void)state;
    assert_true(load_result_ok(&r));
    r.status = 503;
    assert_false(load_result_ok(&r));
    r = ok_result(1);
    r.transport = "reset";
    assert_false(load_result_ok(&r));
    r = ok_result(1);
    r.stream = true;
    assert_false(load_result_ok(&r)); /* no [DONE] */
    r.stream_done = true;
    assert_true(load_result_ok(&r));
    r.error_event = true;
    assert_false(load_result_ok(&r));
}

static void test_stats_aggregate(void **state)
{
    struct load_stats st;
    struct load_result r;

    (void)state;
    load_stats_init(&st);
    for (int i = 0; i < 3; i++)
        load_stats_add(&st, &(struct load_result){0});
    load_stats_cleanup(&st);

    load_stats_init(&st);
    r = ok_result(1000);
    r.cost = BSC_STR("0.002");
    load_stats_add(&st, &r);
    r = ok_result(3000);
    r.target = BSC_STR("b@sim");
    r.workflow = BSC_STR("equivalent_failover");
    r.attempts = BSC_STR("3");
    r.cost = BSC_STR("0.004");
    load_stats_add(&st, &r);
    /* errors: a gateway error with a code, the same again, a transport failure, a broken
     * stream, a stream error event */
    r = (struct load_result){.status = 503,
                             .error_code = BSC_STR("no_eligible_fallback"),
                             .attempts = BSC_STR("2"),
                             .target = BSC_STR("a@sim"),
                             .latency_us = 50};
    load_stats_add(&st, &r);
    load_stats_add(&st, &r);
    load_stats_add(&st, &(struct load_result){.transport = "connect"});
    load_stats_add(&st, &(struct load_result){.status = 200, .stream = true});
    load_stats_add(&st, &(struct load_result){.status = 200,
                                              .stream = true,
                                              .error_event = true,
                                              .error_code = BSC_STR("server_error"),
                                              .has_ttft = true,
                                              .ttft_us = 700});
    /* a bad cost and attempts header count as absent */
    r = ok_result(2000);
    r.attempts = BSC_STR("x");
    r.cost = BSC_STR("-1");
    r.has_usage = false;
    load_stats_add(&st, &r);

    assert_int_equal(st.completed, 8);
    assert_int_equal(st.ok, 3);
    assert_int_equal(st.errors, 5);
    assert_int_equal(st.latency.n, 3); /* successes only */
    assert_int_equal(st.ttft.n, 1);
    assert_int_equal(st.targets.n, 2);
    assert_string_equal(st.targets.rows[0].key, "a@sim");
    assert_int_equal(st.targets.rows[0].n, 4);
    assert_int_equal(st.targets.rows[1].n, 1);
    assert_int_equal(st.workflows.n, 2);
    assert_int_equal(st.errors_by.n, 4);
    assert_string_equal(st.errors_by.rows[0].key, "no_eligible_fallback");
    assert_int_equal(st.errors_by.rows[0].status, 503);
    assert_int_equal(st.errors_by.rows[0].n, 2);
    assert_string_equal(st.errors_by.rows[1].key, "connect");
    assert_int_equal(st.errors_by.rows[1].status, 0);
    assert_string_equal(st.errors_by.rows[2].key, "stream_incomplete");
    assert_string_equal(st.errors_by.rows[3].key, "server_error");
    assert_int_equal(st.errors_by.rows[3].status, 200);
    assert_int_equal(st.attempts_n, 4);
    assert_int_equal(st.attempts_sum, 1 + 3 + 2 + 2);
    assert_int_equal(st.attempts_max, 3);
    assert_int_equal(st.usage_n, 2);
    assert_int_equal(st.input_tokens, 20);
    assert_int_equal(st.cost_n, 2);
    assert_true(st.cost_usd > 0.00599 && st.cost_usd < 0.00601);
    assert_false(st.oom);
    load_stats_cleanup(&st);
}

static void test_table_bounds(void **state)
{
    struct load_stats st;
    char name[LOAD_KEY_MAX + 40];

    (void)state;
    load_stats_init(&st);
    for (int i = 0; i < LOAD_TABLE_MAX + 6; i++) {
        struct load_result r = ok_result(1);

        snprintf(name, sizeof(name), "t%d", i);
        r.target = bsc_str_cstr(name);
        load_stats_add(&st, &r);
    }
    assert_int_equal(st.targets.n, LOAD_TABLE_MAX);
    assert_int_equal(st.targets.other, 6);
    memset(name, 'k', sizeof(name));
    {
        struct load_result r = ok_result(1);

        r.workflow = bsc_str_make(name, sizeof(name));
        load_stats_add(&st, &r);
    }
    assert_int_equal(strlen(st.workflows.rows[1].key), LOAD_KEY_MAX);
    load_stats_cleanup(&st);
}

static void test_stats_merge(void **state)
{
    struct load_stats a, b, all;
    struct load_result r = ok_result(1000);

    (void)state;
    load_stats_init(&a);
    load_stats_init(&b);
    load_stats_init(&all);
    load_stats_add(&a, &r);
    load_stats_add(&a, &(struct load_result){.status = 503, .error_code = BSC_STR("x")});
    r = ok_result(3000);
    r.target = BSC_STR("b@sim");
    r.attempts = BSC_STR("4");
    r.cost = BSC_STR("0.5");
    load_stats_add(&b, &r);
    load_stats_add(&b, &(struct load_result){.status = 503, .error_code = BSC_STR("x")});
    load_stats_add(&b, &(struct load_result){.status = 429, .error_code = BSC_STR("x")});
    load_stats_merge(&all, &a);
    load_stats_merge(&all, &b);
    assert_int_equal(all.completed, 5);
    assert_int_equal(all.ok, 2);
    assert_int_equal(all.errors, 3);
    assert_int_equal(all.latency.n, 2);
    assert_int_equal(all.targets.n, 2);
    assert_int_equal(all.targets.rows[0].n + all.targets.rows[1].n, 2);
    assert_int_equal(all.errors_by.n, 2); /* same code, two statuses */
    assert_int_equal(all.errors_by.rows[0].status, 503);
    assert_int_equal(all.errors_by.rows[0].n, 2);
    assert_int_equal(all.attempts_n, 2);
    assert_int_equal(all.attempts_max, 4);
    assert_int_equal(all.usage_n, 2);
    assert_int_equal(all.cost_n, 1);
    assert_int_equal(b.completed, 3); /* the source is unchanged */
    load_stats_cleanup(&a);
    load_stats_cleanup(&b);
    load_stats_cleanup(&all);
}

/* ---- the JSON report ---- */

static void test_json_report_adds_up(void **state)
{
    struct load_stats st;
    struct load_meta meta = {.url = "http://127.0.0.1:1/v1/chat/completions",
                             .model = "r\"1",
                             .stream = true,
                             .concurrency = 5,
                             .planned = 10,
                             .elapsed_us = 2000000,
                             .sent = 10,
                             .cancelled = 1};
    struct bsc_buf b;
    struct json_object *root, *errs;
    uint64_t sum = 0;

    (void)state;
    load_stats_init(&st);
    for (int i = 0; i < 6; i++) {
        struct load_result r = ok_result(1000u * (i + 1));
        r.stream = true;
        r.stream_done = true;
        r.has_ttft = true;
        r.ttft_us = 100;
        load_stats_add(&st, &r);
    }
    load_stats_add(&st,
                   &(struct load_result){.status = 429, .error_code = BSC_STR("rate_limited")});
    load_stats_add(&st,
                   &(struct load_result){.status = 429, .error_code = BSC_STR("rate_limited")});
    load_stats_add(&st, &(struct load_result){.transport = "timeout"});
    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(load_report_json(&b, &st, &meta), BSC_OK);
    root = json_tokener_parse(b.p);
    assert_non_null(root);
    assert_string_equal(bsc_json_get_str(root, "model"), "r\"1");
    assert_int_equal(json_object_get_int64(bsc_json_get(root, "completed")), 9);
    assert_int_equal(json_object_get_int64(bsc_json_get(root, "ok")) +
                         json_object_get_int64(bsc_json_get(root, "errors_total")),
                     9);
    assert_int_equal(json_object_get_int64(bsc_json_get(root, "cancelled")), 1);
    assert_true(json_object_get_double(bsc_json_get(root, "requests_per_s")) == 4.5);
    assert_true(json_object_get_double(bsc_json_get(root, "success_rate")) > 0.666);
    assert_null(bsc_json_get(root, "duration_s"));
    assert_true(json_object_get_double(bsc_json_get(bsc_json_get(root, "latency_ms"), "p50")) ==
                3.0);
    assert_true(json_object_get_double(bsc_json_get(bsc_json_get(root, "ttft_ms"), "p99")) == 0.1);
    assert_int_equal(json_object_get_int64(bsc_json_get(bsc_json_get(root, "targets"), "a@sim")),
                     6);
    errs = bsc_json_get_type(root, "errors", json_type_array);
    assert_non_null(errs);
    assert_int_equal(json_object_array_length(errs), 2);
    for (size_t i = 0; i < json_object_array_length(errs); i++)
        sum += json_object_get_int64(bsc_json_get(json_object_array_get_idx(errs, i), "count"));
    assert_int_equal(sum, 3);
    assert_int_equal(
        json_object_get_int(bsc_json_get(json_object_array_get_idx(errs, 1), "status")), 0);
    assert_true(json_object_get_double(
                    bsc_json_get(bsc_json_get(root, "tokens"), "output_per_1k")) == 4000.0);
    assert_null(bsc_json_get(root, "cost"));
    json_object_put(root);
    bsc_buf_cleanup(&b);
    load_stats_cleanup(&st);
}

/* ---- what answers say ---- */

static void test_seen_json(void **state)
{
    struct load_seen s = {0};

    (void)state;
    assert_true(
        load_seen_json(&s, BSC_STR("{\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}")));
    assert_true(s.has_usage);
    assert_int_equal(s.input_tokens, 7);
    assert_int_equal(s.output_tokens, 3);
    assert_false(s.has_error);

    memset(&s, 0, sizeof(s));
    assert_true(
        load_seen_json(&s, BSC_STR("{\"error\":{\"message\":\"m\",\"code\":\"rate_limited\"}}")));
    assert_true(s.has_error);
    assert_string_equal(s.code, "rate_limited");
    memset(&s, 0, sizeof(s));
    assert_true(load_seen_json(&s, BSC_STR("{\"error\":{\"message\":\"m\",\"code\":null}}")));
    assert_true(s.has_error);
    assert_string_equal(s.code, "");
    memset(&s, 0, sizeof(s));
    assert_true(load_seen_json(&s, BSC_STR("{\"error\":{\"code\":429}}")));
    assert_string_equal(s.code, "429");
    memset(&s, 0, sizeof(s));
    assert_false(load_seen_json(&s, BSC_STR("<html>bad gateway</html>")));
    assert_false(s.has_error);
    assert_true(load_seen_json(&s, BSC_STR("{\"usage\":\"many\",\"error\":null}")));
    assert_false(s.has_usage);
    assert_false(s.has_error);
}

static void test_seen_events(void **state)
{
    struct load_seen s = {0};

    (void)state;
    load_seen_event(&s, BSC_STR("{\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}"));
    assert_true(s.first_event);
    assert_false(s.has_usage);
    load_seen_event(
        &s, BSC_STR("{\"choices\":[],\"usage\": {\"prompt_tokens\":5,\"completion_tokens\":2}}"));
    assert_true(s.has_usage);
    assert_int_equal(s.output_tokens, 2);
    assert_false(s.done);
    load_seen_event(&s, BSC_STR("[DONE]"));
    assert_true(s.done);

    memset(&s, 0, sizeof(s));
    load_seen_event(
        &s, BSC_STR("{\"error\":{\"message\":\"cut\",\"code\":\"upstream_stream_error\"}}"));
    assert_true(s.has_error);
    assert_string_equal(s.code, "upstream_stream_error");
}

/* ---- the body, the options, the URL ---- */

static struct json_object *built(const char *base, const char *model, bool stream)
{
    char *out = NULL;
    size_t len = 0;
    const char *why = NULL;
    struct json_object *o;

    assert_int_equal(load_body_build(bsc_str_cstr(base), model, stream, &out, &len, &why), BSC_OK);
    assert_int_equal(strlen(out), len);
    o = json_tokener_parse(out);
    free(out);
    assert_non_null(o);
    return o;
}

static void test_body(void **state)
{
    struct json_object *o;
    char *out = NULL;
    size_t len;
    const char *why = NULL;

    (void)state;
    o = built("", "chat", false);
    assert_string_equal(bsc_json_get_str(o, "model"), "chat");
    assert_non_null(bsc_json_get_type(o, "messages", json_type_array));
    assert_null(bsc_json_get(o, "stream"));
    json_object_put(o);

    o = built("{\"model\":\"old\",\"messages\":[],\"temperature\":0,\"stream\":true,"
              "\"stream_options\":{\"x\":1}}",
              "r/1", false);
    assert_string_equal(bsc_json_get_str(o, "model"), "r/1");
    assert_null(bsc_json_get(o, "stream"));
    assert_null(bsc_json_get(o, "stream_options"));
    assert_non_null(bsc_json_get(o, "temperature"));
    json_object_put(o);

    o = built("{\"messages\":[],\"stream_options\":{\"x\":1}}", "chat", true);
    assert_true(json_object_get_boolean(bsc_json_get(o, "stream")));
    assert_true(
        json_object_get_boolean(bsc_json_get(bsc_json_get(o, "stream_options"), "include_usage")));
    assert_int_equal(json_object_get_int(bsc_json_get(bsc_json_get(o, "stream_options"), "x")), 1);
    json_object_put(o);

    assert_int_equal(load_body_build(BSC_STR("[1]"), "m", false, &out, &len, &why), BSC_EPARSE);
    assert_string_equal(why, "not a JSON object");
    assert_int_equal(load_body_build(BSC_STR("{\"a\":"), "m", false, &out, &len, &why), BSC_EPARSE);
    assert_string_equal(why, "not valid JSON");
}

static void test_chat_url(void **state)
{
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"},
        {"http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions"},
        {"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions"},
        {"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"},
        {"https://gw.example/prefix/v1", "https://gw.example/prefix/v1/chat/completions"},
        {"http://h/xv1", "http://h/xv1/v1/chat/completions"},
        {"ftp://h", NULL},
        {"http://", NULL},
        {"http:///v1", NULL},
        {"127.0.0.1:80", NULL},
        {"http://h/?q=1", NULL},
        {"http://h v", NULL},
    };
    char out[LOAD_URL_MAX];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        bool ok = load_chat_url(rows[i].in, out, sizeof(out));

        if (!rows[i].want) {
            if (ok)
                fail_msg("%s: accepted as %s", rows[i].in, out);
            continue;
        }
        if (!ok)
            fail_msg("%s: refused", rows[i].in);
        assert_string_equal(out, rows[i].want);
    }
    assert_false(load_chat_url("http://127.0.0.1:8080", out, 20)); /* does not fit */
}

static enum bsc_err parse(struct load_opts *o, char *why, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;

    argv[argc++] = "load";
    va_start(ap, why);
    for (char *a; argc < 31 && (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    return load_args_parse(argc, argv, o, why, 256);
}

static void test_args(void **state)
{
    struct load_opts o;
    char why[256];

    (void)state;
    assert_int_equal(parse(&o, why, "--url", "http://127.0.0.1:1", "--model", "chat", NULL),
                     BSC_OK);
    assert_int_equal(o.requests, LOAD_DEFAULT_REQUESTS);
    assert_int_equal(o.concurrency, LOAD_DEFAULT_CONCURRENCY);
    assert_int_equal(o.duration_ms, 0);
    assert_int_equal(o.timeout_ms, 60000);
    assert_false(o.stream);
    assert_int_equal(o.threads, LOAD_DEFAULT_THREADS);
    assert_string_equal(o.url, "http://127.0.0.1:1/v1/chat/completions");

    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--duration", "2.5",
                           "--stream", "--key", "k", "--concurrency", "7", NULL),
                     BSC_OK);
    assert_int_equal(o.duration_ms, 2500);
    assert_int_equal(o.requests, LOAD_MAX_REQUESTS); /* only the duration bounds the run */
    assert_int_equal(o.concurrency, 7);
    assert_true(o.stream);
    assert_string_equal(o.key, "k");
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--duration", "1",
                           "--requests", "5", NULL),
                     BSC_OK);
    assert_int_equal(o.requests, 5);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--threads", "8",
                           "--concurrency", "3", NULL),
                     BSC_OK);
    assert_int_equal(o.threads, 3); /* never more loops than requests in flight */
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--threads", "0", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--threads", "65", NULL),
                     BSC_EINVAL);

    assert_int_equal(parse(&o, why, "--model", "m", NULL), BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", NULL), BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--requests", "0", NULL),
                     BSC_EINVAL);
    assert_non_null(strstr(why, "--requests"));
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--requests", "10x", NULL),
                     BSC_EINVAL);
    assert_int_equal(
        parse(&o, why, "--url", "http://h", "--model", "m", "--requests", "10000001", NULL),
        BSC_EINVAL);
    assert_int_equal(
        parse(&o, why, "--url", "http://h", "--model", "m", "--concurrency", "4097", NULL),
        BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--duration", "-1", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--duration", "nan", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--bogus", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "extra", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "http://h", "--model", "m", "--requests", NULL),
                     BSC_EINVAL);
    assert_int_equal(parse(&o, why, "--url", "h:1", "--model", "m", NULL), BSC_EINVAL);
    assert_non_null(strstr(why, "--url"));
    assert_int_equal(parse(&o, why, "--help", NULL), BSC_OK);
    assert_true(o.help);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_nearest_rank),
        cmocka_unit_test(test_dist_sorts_and_summarizes),
        cmocka_unit_test(test_per_1k),
        cmocka_unit_test(test_result_ok_rules),
        cmocka_unit_test(test_stats_aggregate),
        cmocka_unit_test(test_table_bounds),
        cmocka_unit_test(test_stats_merge),
        cmocka_unit_test(test_json_report_adds_up),
        cmocka_unit_test(test_seen_json),
        cmocka_unit_test(test_seen_events),
        cmocka_unit_test(test_body),
        cmocka_unit_test(test_chat_url),
        cmocka_unit_test(test_args),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
