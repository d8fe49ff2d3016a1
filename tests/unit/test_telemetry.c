/* SPDX-License-Identifier: MIT */
/* test_telemetry.c -- the pure parts of tracing (src/telemetry/): traceparent parsing (valid,
 * future versions, and every invalid form: version, length, dashes, case, all-zero ids) and
 * formatting, continuing or starting a trace, the sampling decision from the trace id,
 * attempt span ids, the OTLP/HTTP JSON encoding read back with json-c, and the telemetry
 * config keys with their defaults and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "config/config.h"
#include "telemetry/span.h"
#include "telemetry/trace.h"

#define TID "4bf92f3577b34da6a3ce929d0e0e4736"
#define SID "00f067aa0ba902b7"

static bool parses(const char *s, struct tel_parent *p)
{
    return tel_traceparent_parse(bsc_str_cstr(s), p);
}

static void test_parse_valid(void **state)
{
    struct tel_parent p;
    char out[TEL_TRACEPARENT_LEN + 1];

    (void)state;
    assert_true(parses("00-" TID "-" SID "-01", &p));
    assert_int_equal(p.trace_id[0], 0x4b);
    assert_int_equal(p.trace_id[15], 0x36);
    assert_int_equal(p.span_id[7], 0xb7);
    assert_int_equal(p.flags, 1);
    tel_traceparent_format(&p, out);
    assert_string_equal(out, "00-" TID "-" SID "-01");
    assert_true(parses("00-" TID "-" SID "-00", &p));
    assert_int_equal(p.flags, 0);
    /* a later version may carry more fields after a dash; it is read as version 00 */
    assert_true(parses("cc-" TID "-" SID "-01-what-comes-next", &p));
    assert_true(parses("01-" TID "-" SID "-01", &p));
}

static void test_parse_invalid(void **state)
{
    static const char *const bad[] = {
        "ff-" TID "-" SID "-01",                   /* version ff is forbidden */
        "00-" TID "-" SID "-01-extra",             /* version 00 is exactly 55 */
        "cc-" TID "-" SID "-01x",                  /* a later version: fields after a dash */
        "00-00000000000000000000000000000000-" SID "-01", /* all-zero trace id */
        "00-" TID "-0000000000000000-01",          /* all-zero span id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-" SID "-01", /* upper case */
        "00-" TID "-" SID "-0g",                   /* not hex */
        "0-" TID "-" SID "-01",                    /* short version */
        "00_" TID "-" SID "-01",                   /* separator */
        "00-" TID "-" SID,                         /* no flags */
        "xx-" TID "-" SID "-01",                   /* version not hex */
        "",
    };
    struct tel_parent p;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parses(bad[i], &p))
            fail_msg("accepted '%s'", bad[i]);
    }
    assert_false(tel_traceparent_parse(BSC_STR_NULL, &p));
}

static void test_trace_begin(void **state)
{
    struct tel_trace t, u;
    char hdr[TEL_TRACEPARENT_LEN + 1], hex[33];
    uint8_t a1[8], a2[8];

    (void)state;
    tel_trace_begin(&t, BSC_STR("00-" TID "-" SID "-01"), 1.0);
    assert_true(t.begun && t.has_parent && t.sampled);
    tel_hex(t.trace_id, 16, hex);
    assert_string_equal(hex, TID);
    tel_hex(t.parent_id, 8, hex);
    assert_string_equal(hex, SID);
    tel_trace_header(&t, 1, hdr);
    assert_memory_equal(hdr, "00-" TID "-", 36);
    assert_string_equal(hdr + 52, "-01");
    tel_trace_attempt_id(&t, 1, a1);
    tel_trace_attempt_id(&t, 2, a2);
    assert_memory_not_equal(a1, a2, 8);
    assert_memory_not_equal(a1, t.span_id, 8);
    tel_hex(a1, 8, hex);
    assert_memory_equal(hdr + 36, hex, 16); /* the header names the attempt's span */
    /* no (or a bad) header: a new trace, no parent */
    tel_trace_begin(&u, BSC_STR("garbage"), 1.0);
    assert_true(u.begun && !u.has_parent);
    assert_memory_not_equal(u.trace_id, t.trace_id, 16);
    tel_trace_begin(&u, BSC_STR("00-" TID "-" SID "-01"), 0.0);
    assert_false(u.sampled);
    tel_trace_header(&u, 1, hdr);
    assert_string_equal(hdr + 52, "-00"); /* not sampled here: said so upstream */
}

static void test_sampling(void **state)
{
    uint8_t id[16] = {0};
    unsigned in = 0;

    (void)state;
    assert_true(tel_trace_sampled(id, 0.5)); /* low bits 0: the smallest value */
    memset(id + 8, 0xff, 8);
    assert_false(tel_trace_sampled(id, 0.5));
    assert_true(tel_trace_sampled(id, 1.0));
    assert_false(tel_trace_sampled(id, 0.0));
    for (unsigned i = 0; i < 1000; i++) { /* deterministic ids spread over the range */
        uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;

        for (int b = 0; b < 8; b++)
            id[8 + b] = (uint8_t)(x >> (56 - 8 * b));
        in += tel_trace_sampled(id, 0.25);
    }
    assert_in_range(in, 200, 300);
}

static struct json_object *attr(struct json_object *span, const char *key)
{
    struct json_object *attrs = json_object_object_get(span, "attributes");

    for (size_t i = 0; i < json_object_array_length(attrs); i++) {
        struct json_object *a = json_object_array_get_idx(attrs, i);

        if (strcmp(json_object_get_string(json_object_object_get(a, "key")), key) == 0)
            return json_object_object_get(a, "value");
    }
    return NULL;
}

static void test_otlp_encode(void **state)
{
    struct tel_span s[2];
    struct bsc_buf b;
    struct json_object *root, *spans, *sp, *res;

    (void)state;
    memset(s, 0, sizeof(s));
    memset(s[0].trace_id, 0xab, 16);
    memset(s[0].span_id, 0x01, 8);
    s[0].name = "bascule.request";
    s[0].kind = TEL_KIND_SERVER;
    s[0].start_ns = 1700000000123456789ull;
    s[0].end_ns = 1700000000223456789ull;
    tel_span_str(&s[0], "bascule.route", "r\"1\\\n");
    tel_span_int(&s[0], "bascule.attempts", 2);
    tel_span_dbl(&s[0], "bascule.cost_usd", 0.25);
    s[1] = s[0];
    s[1].n_attrs = 0;
    s[1].has_parent = true;
    memset(s[1].parent_id, 0x01, 8);
    s[1].error = true;
    for (int i = 0; i < TEL_MAX_ATTRS + 3; i++)
        tel_span_int(&s[1], "k", i); /* past the bound: dropped, not overflowing */
    assert_int_equal(s[1].n_attrs, TEL_MAX_ATTRS);
    bsc_buf_init(&b, 1u << 20);
    assert_int_equal(tel_otlp_encode(s, 2, "svc", &b), BSC_OK);
    bsc_buf_append_char(&b, '\0');
    root = json_tokener_parse(b.p);
    if (!root)
        fail_msg("not JSON: %s", b.p);
    res = json_object_array_get_idx(json_object_object_get(root, "resourceSpans"), 0);
    assert_string_equal(json_object_to_json_string(json_object_object_get(res, "resource")),
                        "{ \"attributes\": [ { \"key\": \"service.name\", \"value\": { "
                        "\"stringValue\": \"svc\" } } ] }");
    spans = json_object_object_get(
        json_object_array_get_idx(json_object_object_get(res, "scopeSpans"), 0), "spans");
    assert_int_equal(json_object_array_length(spans), 2);
    sp = json_object_array_get_idx(spans, 0);
    assert_string_equal(json_object_get_string(json_object_object_get(sp, "traceId")),
                        "abababababababababababababababab");
    assert_string_equal(json_object_get_string(json_object_object_get(sp, "spanId")),
                        "0101010101010101");
    assert_null(json_object_object_get(sp, "parentSpanId"));
    assert_string_equal(json_object_get_string(json_object_object_get(sp, "startTimeUnixNano")),
                        "1700000000123456789");
    assert_int_equal(json_object_get_int(json_object_object_get(sp, "kind")), 2);
    assert_string_equal(json_object_get_string(json_object_object_get(
                            attr(sp, "bascule.route"), "stringValue")), "r\"1\\\n");
    assert_string_equal(json_object_get_string(json_object_object_get(
                            attr(sp, "bascule.attempts"), "intValue")), "2");
    assert_true(json_object_get_double(json_object_object_get(attr(sp, "bascule.cost_usd"),
                                                              "doubleValue")) == 0.25);
    sp = json_object_array_get_idx(spans, 1);
    assert_string_equal(json_object_get_string(json_object_object_get(sp, "parentSpanId")),
                        "0101010101010101");
    assert_int_equal(json_object_get_int(json_object_object_get(
                         json_object_object_get(sp, "status"), "code")), 2);
    json_object_put(root);
    bsc_buf_cleanup(&b);
}

#define DOC_HEAD                                                                               \
    "providers:\n  p: {kind: openai, base_url: \"https://a.example/v1\", keys: [k]}\n"         \
    "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n"

static void test_config(void **state)
{
    static const char doc[] = DOC_HEAD
        "telemetry: {otlp_endpoint: \"http://127.0.0.1:4318\", service_name: gw, sample: 0.5,"
        " headers: {x-api-key: abc}}\n";
    struct cfg_diags d = {0};
    struct cfg *c = NULL;

    (void)state;
    assert_int_equal(cfg_load_string("g.yaml", DOC_HEAD, strlen(DOC_HEAD), &c, &d), BSC_OK);
    assert_string_equal(c->telemetry.otlp_endpoint, "");
    assert_string_equal(c->telemetry.service_name, "bascule");
    assert_true(c->telemetry.sample == 1.0);
    cfg_unref(c);
    cfg_diags_cleanup(&d);
    assert_int_equal(cfg_load_string("g.yaml", doc, strlen(doc), &c, &d), BSC_OK);
    assert_string_equal(c->telemetry.otlp_endpoint, "http://127.0.0.1:4318");
    assert_string_equal(c->telemetry.service_name, "gw");
    assert_true(c->telemetry.sample == 0.5);
    assert_int_equal(c->telemetry.n_headers, 1);
    assert_string_equal(c->telemetry.headers[0].value, "abc");
    cfg_unref(c);
    cfg_diags_cleanup(&d);
}

static void refused(const char *tel)
{
    char doc[1024];
    struct cfg_diags d = {0};
    struct cfg *c = NULL;

    snprintf(doc, sizeof(doc), DOC_HEAD "telemetry: %s\n", tel);
    if (cfg_load_string("g.yaml", doc, strlen(doc), &c, &d) != BSC_EINVAL)
        fail_msg("accepted telemetry: %s", tel);
    cfg_diags_cleanup(&d);
}

static void test_config_refused(void **state)
{
    (void)state;
    refused("{otlp_endpoint: \"grpc://c:4317\"}");
    refused("{sample: 1.5}");
    refused("{sample: -0.1}");
    refused("{service_name: \"\"}");
    refused("{headers: {\"bad name\": x}}");
    refused("{headers: [a]}");
    refused("{endpoint: x}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),  cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_trace_begin),  cmocka_unit_test(test_sampling),
        cmocka_unit_test(test_otlp_encode),  cmocka_unit_test(test_config),
        cmocka_unit_test(test_config_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
