/* SPDX-License-Identifier: MIT */
/* test_sim_schema.c -- bascule-sim's schema-driven answers (sim/schema_gen.c): a table of
 * schemas, each generated for and the result checked with the gateway's own validator
 * (js_compile + js_validate, and js_validate_text on the serialized form), plus the exact
 * bytes where the generator promises them (name hints, bounds, formats, patterns), the
 * OpenAPI-flavoured schemas Gemini sends, the bounds, the pattern sampler, the
 * tool-argument fallback, and each dialect answering with them (request parsed, answer
 * rendered, scripted content still first). Linked against build/libsim.a and
 * build/libbascule.a. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/content.h"
#include "../../sim/dialect.h"
#include "../../sim/schema_gen.h"
#include "../../sim/script.h"
#include "../../sim/sjson.h"
#include "contract/jsonschema.h"

#include "core/compat.h"

static struct json_object *parse(const char *text)
{
    struct json_tokener *tok = json_tokener_new_ex(256); /* the deep schema of bounds() */
    struct json_object *o;

    assert_non_null(tok);
    o = json_tokener_parse_ex(tok, text, -1);
    json_tokener_free(tok);

    if (!o && strcmp(text, "null") != 0)
        fail_msg("test schema does not parse: %s", text);
    return o;
}

/* Generates for <schema_text>; checks the value and its text with the validator; returns
 * the compact text (caller frees). */
static char *gen_checked(const char *schema_text)
{
    struct json_object *schema = parse(schema_text), *v = NULL;
    struct js_schema *js = NULL;
    struct js_error jerr;
    struct bsc_buf text;
    char cerr[256] = "";
    char *out;

    if (js_compile(schema, &js, cerr, sizeof(cerr)) != BSC_OK)
        fail_msg("the validator refuses %s: %s", schema_text, cerr);
    assert_int_equal(sim_schema_gen(schema, &v), BSC_OK);
    if (!js_validate(js, v, &jerr))
        fail_msg("%s\n  generated %s\n  invalid at \"%s\" (%s): %s", schema_text,
                 v ? json_object_to_json_string(v) : "null", jerr.pointer, jerr.keyword,
                 jerr.message);
    bsc_buf_init(&text, SIZE_MAX / 4);
    assert_int_equal(sim_schema_gen_text(schema, &text), BSC_OK);
    if (!js_validate_text(js, bsc_buf_str(&text), &jerr))
        fail_msg("%s\n  text %s invalid at \"%s\" (%s): %s", schema_text, text.p, jerr.pointer,
                 jerr.keyword, jerr.message);
    out = bsc_buf_take(&text, NULL);
    bsc_buf_cleanup(&text);
    json_object_put(v);
    json_object_put(schema);
    js_free(js);
    return out;
}

/* ---- the table: every output validates; some outputs are exact ---- */

struct row {
    const char *schema;
    const char *expect; /* the exact compact text, or NULL: only validity is promised */
};

static const struct row rows[] = {
    /* objects */
    {"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
     "\"required\":[\"city\"]}",
     "{\"city\":\"Oslo\"}"},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":"
     "\"integer\"}}}",
     "{\"a\":\"sample\"}"},
    {"{\"type\":\"object\",\"properties\":{}}", "{}"},
    {"{\"type\":\"object\"}", "{}"},
    {"{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"},\"unit\":{\"type\":"
     "\"string\",\"enum\":[\"celsius\",\"fahrenheit\"]}},\"required\":[\"location\",\"unit\"],"
     "\"additionalProperties\":false}",
     "{\"location\":\"Oslo, Norway\",\"unit\":\"celsius\"}"},
    {"{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"object\",\"properties\":{"
     "\"first_name\":{\"type\":\"string\"},\"email\":{\"type\":\"string\",\"format\":\"email\"},"
     "\"signup\":{\"type\":\"string\",\"format\":\"date-time\"}},\"required\":[\"first_name\","
     "\"email\",\"signup\"],\"additionalProperties\":false}},\"required\":[\"user\"],"
     "\"additionalProperties\":false}",
     "{\"user\":{\"first_name\":\"Ada\",\"email\":\"ada@example.com\",\"signup\":"
     "\"2024-01-01T12:00:00Z\"}}"},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"minProperties\":3,"
     "\"additionalProperties\":{\"type\":\"integer\"}}",
     "{\"a\":\"sample\",\"key1\":1,\"key2\":1}"},
    {"{\"type\":\"object\",\"properties\":{\"a\":false,\"b\":{\"type\":\"boolean\"}}}",
     "{\"b\":true}"},
    {"{\"type\":\"object\",\"patternProperties\":{\"^x-\":{\"type\":\"integer\"}},"
     "\"minProperties\":1}",
     NULL},
    {"{\"type\":\"object\",\"required\":[\"q\"],\"properties\":{\"q\":{\"type\":\"string\","
     "\"minLength\":1}},\"maxProperties\":1}",
     "{\"q\":\"sample\"}"},
    /* strings */
    {"{\"type\":\"string\"}", "\"sample\""},
    {"{\"type\":\"string\",\"minLength\":20}", NULL},
    {"{\"type\":\"string\",\"maxLength\":3}", "\"sam\""},
    {"{\"type\":\"string\",\"minLength\":5,\"maxLength\":5}", "\"sampl\""},
    {"{\"type\":\"string\",\"minLength\":1000}", NULL},
    {"{\"type\":\"string\",\"enum\":[\"b\",\"a\"]}", "\"b\""},
    {"{\"const\":\"fixed\"}", "\"fixed\""},
    {"{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-\\\\d{4}$\"}", "\"AAA-0000\""},
    {"{\"type\":\"string\",\"pattern\":\"^[a-z]+@[a-z]+\\\\.com$\",\"minLength\":12}", NULL},
    {"{\"type\":\"string\",\"pattern\":\"^(foo|bar)baz$\"}", "\"foobaz\""},
    {"{\"type\":\"string\",\"pattern\":\"^[^aA0]+$\"}", "\"_\""},
    {"{\"type\":\"string\",\"pattern\":\"^\\\\u00e9{2}[\\\\u4e00-\\\\u9fff]$\"}", "\"éé一\""},
    {"{\"type\":\"string\",\"pattern\":\"^(?:[0-9a-f]{2}:){5}[0-9a-f]{2}$\"}",
     "\"00:00:00:00:00:00\""},
    {"{\"type\":\"string\",\"pattern\":\"^\\\\+?[1-9]\\\\d{1,14}$\"}", "\"10\""},
    {"{\"type\":\"string\",\"pattern\":\"^(a|bbbbbb)$\",\"minLength\":5,\"examples\":[\"bbbbbb\"]}",
     "\"bbbbbb\""},
    {"{\"type\":\"string\",\"pattern\":\"b\"}", "\"b\""},
    {"{\"type\":\"string\",\"format\":\"date\"}", "\"2024-01-01\""},
    {"{\"type\":\"string\",\"format\":\"time\"}", "\"12:00:00Z\""},
    {"{\"type\":\"string\",\"format\":\"uuid\"}", "\"123e4567-e89b-42d3-a456-426614174000\""},
    {"{\"type\":\"string\",\"format\":\"ipv4\"}", "\"192.0.2.1\""},
    {"{\"type\":\"string\",\"format\":\"ipv6\"}", "\"2001:db8::1\""},
    {"{\"type\":\"string\",\"format\":\"uri\"}", "\"https://example.com/1\""},
    {"{\"type\":\"string\",\"format\":\"date\",\"pattern\":\"^2024-\"}", "\"2024-01-01\""},
    /* numbers */
    {"{\"type\":\"integer\"}", "1"},
    {"{\"type\":\"integer\",\"minimum\":10}", "10"},
    {"{\"type\":\"integer\",\"maximum\":-5}", "-5"},
    {"{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":2}", "1"},
    {"{\"type\":\"integer\",\"exclusiveMinimum\":1,\"exclusiveMaximum\":3}", "2"},
    {"{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10}", "14"},
    {"{\"type\":\"integer\",\"minimum\":3,\"maximum\":3}", "3"},
    {"{\"type\":\"integer\",\"multipleOf\":0.5,\"minimum\":2.2}", "3"},
    {"{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}", "0.5"},
    {"{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":1.1}", "1.25"},
    {"{\"type\":\"number\",\"maximum\":-0.5}", "-0.5"},
    {"{\"type\":\"number\",\"minimum\":-1e300,\"maximum\":1e300}", "1"},
    /* booleans, null, anything */
    {"{\"type\":\"boolean\"}", "true"},
    {"{\"type\":\"null\"}", "null"},
    {"true", NULL},
    {"{}", NULL},
    {"{\"type\":[\"null\",\"string\"]}", "\"sample\""},
    {"{\"type\":[\"null\"]}", "null"},
    {"{\"type\":[\"integer\",\"string\"],\"minimum\":4}", "4"},
    /* arrays */
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "[\"sample\"]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":0}", "[]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":3,\"uniqueItems\":true}",
     "[\"sample\",\"sample 2\",\"sample 3\"]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":5},\"minItems\":4,"
     "\"uniqueItems\":true}",
     "[5,6,7,8]"},
    {"{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]},\"minItems\":2,\"uniqueItems\":true}",
     "[\"x\",\"y\"]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":2,\"uniqueItems\":true}",
     "[true,false]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
     "\"string\"},\"n\":{\"type\":\"integer\"}},\"required\":[\"name\",\"n\"]},\"minItems\":2,"
     "\"uniqueItems\":true}",
     "[{\"name\":\"Ada Lovelace\",\"n\":1},{\"name\":\"Ada Lovelace 2\",\"n\":2}]"},
    {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],"
     "\"items\":false}",
     "[\"sample\",1]"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":1},\"minItems\":3,"
     "\"uniqueItems\":true}",
     "[\"s\",\"2\",\"3\"]"},
    {"{\"type\":\"array\",\"minItems\":2}", NULL},
    /* applicators */
    {"{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"string\",\"minLength\":2}]}", "\"sample\""},
    {"{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "1"},
    {"{\"anyOf\":[{\"type\":\"null\"}]}", "null"},
    {"{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"}},\"required\":[\"v\"],"
     "\"anyOf\":[{\"properties\":{\"v\":{\"minimum\":3}}},{\"required\":[\"w\"]}]}",
     "{\"v\":3}"},
    {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":"
     "[\"a\"]},{\"properties\":{\"b\":{\"type\":\"integer\"}},\"required\":[\"b\"]}]}",
     "{\"a\":\"sample\",\"b\":1}"},
    {"{\"allOf\":[{\"type\":\"integer\",\"minimum\":2},{\"maximum\":9,\"minimum\":4}]}", "4"},
    {"{\"allOf\":[{\"type\":[\"number\",\"string\"]},{\"type\":\"integer\"}]}", "1"},
    {"{\"allOf\":[{\"enum\":[\"a\",\"b\",\"c\"]},{\"enum\":[\"c\",\"b\"]}]}", "\"b\""},
    {"{\"$defs\":{\"addr\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
     "\"required\":[\"city\"]}},\"type\":\"object\",\"properties\":{\"home\":{\"$ref\":"
     "\"#/$defs/addr\"}},\"required\":[\"home\"]}",
     "{\"home\":{\"city\":\"Oslo\"}}"},
    {"{\"definitions\":{\"n\":{\"type\":\"integer\",\"minimum\":7}},\"$ref\":\"#/definitions/n\"}",
     "7"},
    {"{\"$defs\":{\"a/b\":{\"type\":\"integer\",\"minimum\":5},\"c%d\":{\"type\":\"boolean\"}},"
     "\"type\":\"array\",\"prefixItems\":[{\"$ref\":\"#/$defs/a~1b\"},"
     "{\"$ref\":\"#/$defs/c%25d\"}]}",
     "[5,true]"},
    {"{\"$defs\":{\"base\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
     "\"required\":[\"a\"]}},\"$ref\":\"#/$defs/base\",\"properties\":{\"b\":{\"type\":"
     "\"boolean\"}},\"required\":[\"b\"]}",
     "{\"b\":true,\"a\":\"sample\"}"},
    {"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"},"
     "\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":["
     "\"value\",\"children\"]}},\"$ref\":\"#/$defs/node\"}",
     NULL},
    {"{\"$defs\":{\"list\":{\"type\":[\"object\",\"null\"],\"properties\":{\"next\":{\"$ref\":"
     "\"#/$defs/list\"}}}},\"$ref\":\"#/$defs/list\"}",
     NULL},
    {"{\"$defs\":{\"tree\":{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\","
     "\"minItems\":1,\"maxItems\":1,\"items\":{\"anyOf\":[{\"$ref\":\"#/$defs/tree\"},"
     "{\"type\":\"null\"}]}}}}},\"$ref\":\"#/$defs/tree\"}",
     NULL},
    /* what the gateway's adapters and tests send */
    {"{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"integer\"}},\"required\":"
     "[\"answer\"],\"additionalProperties\":false}",
     "{\"answer\":1}"},
    {"{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"array\",\"items\":{\"type\":"
     "\"object\",\"properties\":{\"explanation\":{\"type\":\"string\"},\"output\":{\"type\":"
     "\"string\"}},\"required\":[\"explanation\",\"output\"],\"additionalProperties\":false}},"
     "\"final_answer\":{\"type\":\"string\"}},\"required\":[\"steps\",\"final_answer\"],"
     "\"additionalProperties\":false}",
     "{\"steps\":[{\"explanation\":\"sample\",\"output\":\"sample\"}],\"final_answer\":"
     "\"Hello from bascule-sim\"}"},
};

static void table_validates(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char *text = gen_checked(rows[i].schema);
        if (rows[i].expect && strcmp(text, rows[i].expect) != 0)
            fail_msg("%s\n  generated %s\n  expected  %s", rows[i].schema, text, rows[i].expect);
        free(text);
    }
}

/* The same schema gives the same bytes, every time. */
static void deterministic(void **state)
{
    struct json_object *s;
    char *a, *b;

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        s = parse(rows[i].schema);
        a = sim_schema_gen_dup(s);
        b = sim_schema_gen_dup(s);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(a, b);
        free(a);
        free(b);
        json_object_put(s);
    }
}

static void gen_text_equals(const char *schema_text, const char *expect)
{
    struct json_object *s = parse(schema_text);
    char *t = sim_schema_gen_dup(s);

    assert_non_null(t);
    if (strcmp(t, expect) != 0)
        fail_msg("%s\n  generated %s\n  expected  %s", schema_text, t, expect);
    free(t);
    json_object_put(s);
}

/* Gemini's OpenAPI Schema objects: upper-case types, nullable, propertyOrdering, int64
 * fields as strings. The validator refuses those keywords, so the bytes are checked. */
static void gemini_openapi_schemas(void **state)
{
    (void)state;
    gen_text_equals("{\"type\":\"OBJECT\",\"properties\":{\"city\":{\"type\":\"STRING\"},"
                    "\"days\":{\"type\":\"INTEGER\",\"minimum\":1}},\"required\":[\"city\","
                    "\"days\"],\"propertyOrdering\":[\"city\",\"days\"],\"nullable\":true}",
                    "{\"city\":\"Oslo\",\"days\":1}");
    gen_text_equals("{\"type\":\"ARRAY\",\"items\":{\"type\":\"NUMBER\"},\"minItems\":\"2\"}",
                    "[1,2]");
    gen_text_equals("{\"type\":\"STRING\",\"format\":\"enum\",\"enum\":[\"north\",\"south\"]}",
                    "\"north\"");
    gen_text_equals("{\"type\":\"BOOLEAN\",\"nullable\":true}", "true");
}

/* Name hints: the whole name or its last word, any case or separator. */
static void name_hints(void **state)
{
    (void)state;
    gen_text_equals("{\"type\":\"object\",\"required\":[\"destination_city\",\"homeCountry\","
                    "\"candidate\",\"userName\"],\"properties\":{}}",
                    "{\"destination_city\":\"Oslo\",\"homeCountry\":\"Norway\",\"candidate\":"
                    "\"sample\",\"userName\":\"ada\"}");
}

/* Nesting stops at the bound, and the node budget is enforced. */
static void bounds(void **state)
{
    struct bsc_buf deep;
    struct json_object *s, *v = NULL, *cur;
    unsigned levels = 0;

    (void)state;
    /* 40 nested required objects: generated down to SIM_SCHEMA_MAX_DEPTH, then {}. */
    bsc_buf_init(&deep, 1 << 16);
    for (int i = 0; i < 40; i++)
        assert_int_equal(bsc_buf_append_cstr(&deep, "{\"type\":\"object\",\"required\":[\"n\"],"
                                                    "\"properties\":{\"n\":"),
                         BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&deep, "{\"type\":\"integer\"}"), BSC_OK);
    for (int i = 0; i < 40; i++)
        assert_int_equal(bsc_buf_append_cstr(&deep, "}}"), BSC_OK);
    s = parse(deep.p);
    assert_int_equal(sim_schema_gen(s, &v), BSC_OK);
    for (cur = v; json_object_is_type(cur, json_type_object) &&
                  json_object_object_get_ex(cur, "n", &cur);)
        levels++;
    assert_int_equal(levels, SIM_SCHEMA_MAX_DEPTH);
    json_object_put(v);
    json_object_put(s);
    bsc_buf_cleanup(&deep);

    /* Too many values: BSC_ELIMIT, nothing returned. */
    s = parse("{\"type\":\"array\",\"minItems\":100000,\"items\":{\"type\":\"integer\"}}");
    v = (struct json_object *)1;
    assert_int_equal(sim_schema_gen(s, &v), BSC_ELIMIT);
    assert_null(v);
    assert_null(sim_schema_gen_dup(s));
    json_object_put(s);

    /* A string longer than SIM_SCHEMA_MAX_TEXT cannot be generated. */
    s = parse("{\"type\":\"string\",\"minLength\":1000000}");
    assert_int_equal(sim_schema_gen(s, &v), BSC_ELIMIT);
    json_object_put(s);

    /* Reference loops the validator would refuse still end. */
    gen_text_equals("{\"$ref\":\"#\"}", "\"sample\"");
    gen_text_equals("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\":"
                    "\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}",
                    "\"sample\"");
    /* A reference that does not resolve is ignored. */
    gen_text_equals("{\"$ref\":\"other.json#/x\",\"type\":\"integer\"}", "1");
}

/* Unsatisfiable schemas still get a value (never a crash or an error). */
static void unsatisfiable(void **state)
{
    (void)state;
    gen_text_equals("false", "null");
    gen_text_equals("{\"type\":\"string\",\"pattern\":\"^a$\",\"minLength\":3}", "\"sample\"");
    gen_text_equals("{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}", "3");
    gen_text_equals("{\"type\":\"string\",\"pattern\":\"(?=x)y\"}", "\"sample\"");
}

static void pattern_is(const char *pattern, unsigned stretch, const char *expect)
{
    struct bsc_buf b;

    bsc_buf_init(&b, SIM_SCHEMA_MAX_TEXT);
    assert_int_equal(sim_schema_pattern_sample(bsc_str_cstr(pattern), stretch, &b), BSC_OK);
    assert_string_equal(b.p ? b.p : "", expect);
    bsc_buf_cleanup(&b);
}

static void pattern_fails(const char *pattern, enum bsc_err want)
{
    struct bsc_buf b;

    bsc_buf_init(&b, SIM_SCHEMA_MAX_TEXT);
    assert_int_equal(sim_schema_pattern_sample(bsc_str_cstr(pattern), 0, &b), want);
    bsc_buf_cleanup(&b);
}

static void pattern_sampler(void **state)
{
    (void)state;
    pattern_is("^[A-Z]{3}-\\d{4}$", 0, "AAA-0000");
    pattern_is("(foo|bar)+", 0, "foo");
    pattern_is("(foo|bar)+", 2, "foofoofoo");
    pattern_is("a*", 0, "");
    pattern_is("a*", 2, "aa");
    pattern_is("a{2,3}", 5, "aaa");
    pattern_is("colou?r", 0, "color");
    pattern_is("x{,2}", 0, "x{,2}"); /* not a quantifier: literal */
    pattern_is("[\\]\\-]\\.[^\\d\\s]\\w\\W\\s\\S\\D", 0, "].aa- aa");
    pattern_is("\\x41\\u0042\\u{1F680}\\uD83D\\uDE00\\cJ\\t", 0, "AB🚀😀\n\t");
    pattern_is("(?<year>\\d{4})-(?:0[1-9])\\b", 0, "0000-01");
    pattern_is("[^]", 0, "a");
    pattern_is("é+ü", 0, "éü");
    pattern_fails("(?=a)b", BSC_EINVAL);
    pattern_fails("(?!a)b", BSC_EINVAL);
    pattern_fails("(a)\\1", BSC_EINVAL);
    pattern_fails("\\p{L}", BSC_EINVAL);
    pattern_fails("[]", BSC_EINVAL);
    pattern_fails("(a", BSC_EINVAL);
    pattern_fails("a)", BSC_EINVAL);
    pattern_fails("*a", BSC_EINVAL);
    pattern_fails("[z-a]", BSC_EINVAL);
    pattern_fails("\\0", BSC_EINVAL);
    pattern_fails("(a{1000}){1000}", BSC_ELIMIT);
}

/* Tool arguments: generated from the parameters, {} when the schema is not an object
 * schema, the echo when the tool declares none. */
static void tool_args(void **state)
{
    struct json_object *p;
    char *a;

    (void)state;
    p = parse("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
              "\"required\":[\"city\"]}");
    a = sim_schema_tool_args(p, BSC_STR("Weather in Bergen?"));
    assert_string_equal(a, "{\"city\":\"Oslo\"}");
    free(a);
    json_object_put(p);

    p = parse("{\"type\":\"string\"}");
    a = sim_schema_tool_args(p, BSC_STR("x"));
    assert_string_equal(a, "{}");
    free(a);
    json_object_put(p);

    /* Schemas that ask for no member in particular: the echo, when they allow it. */
    p = parse("{}");
    a = sim_schema_tool_args(p, BSC_STR("x"));
    assert_string_equal(a, "{\"echo\":\"x\"}");
    free(a);
    json_object_put(p);

    p = parse("{\"type\":\"object\",\"properties\":{}}");
    a = sim_schema_tool_args(p, BSC_STR("Köln 🚀"));
    assert_string_equal(a, "{\"echo\":\"Köln 🚀\"}");
    free(a);
    json_object_put(p);

    p = parse("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}");
    a = sim_schema_tool_args(p, BSC_STR("x"));
    assert_string_equal(a, "{}");
    free(a);
    json_object_put(p);

    p = parse("{\"type\":\"object\",\"properties\":{\"echo\":{\"type\":\"integer\"}}}");
    a = sim_schema_tool_args(p, BSC_STR("x"));
    assert_string_equal(a, "{\"echo\":1}");
    free(a);
    json_object_put(p);

    a = sim_schema_tool_args(NULL, BSC_STR("Weather in Bergen?"));
    assert_string_equal(a, "{\"echo\":\"Weather in Bergen?\"}");
    free(a);

    /* Past the generator's bounds: the echo rather than nothing. */
    p = parse("{\"type\":\"object\",\"required\":[\"xs\"],\"properties\":{\"xs\":{\"type\":"
              "\"array\",\"minItems\":100000}}}");
    a = sim_schema_tool_args(p, BSC_STR("hi"));
    assert_string_equal(a, "{\"echo\":\"hi\"}");
    free(a);
    json_object_put(p);
}

static void json_mode_answer(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(sim_content_json_answer(&b), BSC_OK);
    assert_string_equal(b.p, "{\"answer\":\"Hello héllo wörld! This is bascule-sim ✓ streaming "
                             "🚀 tokens\"}");
    bsc_buf_cleanup(&b);
}

/* ---- the dialects ---- */

extern const struct sim_dialect sim_dialect_anthropic; /* sim/dialect_anthropic.c */
extern const struct sim_dialect sim_dialect_gemini;    /* sim/dialect_gemini.c */

static struct bsc_str hdr(const void *ctx, struct bsc_str name)
{
    (void)ctx;
    if (bsc_str_eq(name, BSC_STR("anthropic-version")))
        return BSC_STR("2023-06-01");
    return BSC_STR("k");
}

/* Parses <body> as <d> would for a chat call on <path>, settles it, and applies what an
 * unscripted exchange applies (sim_step_apply with an "ok" step, sim_call_json_content). */
static void parse_call(const struct sim_dialect *d, const char *path, const char *body,
                       struct sim_call *call)
{
    struct sim_in in = {.method = BSC_STR("POST"), .path = bsc_str_cstr(path),
                        .query = BSC_STR("alt=sse"), .body = bsc_str_cstr(body),
                        .header = hdr, .ctx = NULL};
    struct sim_reject rej = {0};
    struct sim_step step;

    memset(call, 0, sizeof(*call));
    if (!d->parse(SIM_EP_CHAT, &in, call, &rej))
        fail_msg("%s refused %s: %s", d->name, body, rej.message);
    sim_call_settle(call, 0, 7, 1700000000);
    sim_step_init_ok(&step);
    sim_step_apply(&step, call);
    sim_call_json_content(call);
    sim_step_cleanup(&step);
}

/* The rendered non-stream body, parsed. */
static struct json_object *body_of(const struct sim_dialect *d, const struct sim_call *call)
{
    struct bsc_buf b;
    struct json_object *o;

    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(d->body(call, &b), BSC_OK);
    o = parse(b.p);
    bsc_buf_cleanup(&b);
    return o;
}

#define WEATHER_TOOL                                                                           \
    "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"  \
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}"
#define TIME_TOOL                                                                              \
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":{\"type\":"     \
    "\"object\",\"properties\":{\"timezone\":{\"type\":\"string\"}},\"required\":"              \
    "[\"timezone\"]}}}"

static void openai_answers_with_the_schema(void **state)
{
    struct sim_call call;
    struct json_object *o, *msg;
    struct bsc_buf streamed;

    (void)state;
    /* response_format json_schema: the content is the instance, whole, in 4-byte pieces. */
    parse_call(&sim_dialect_openai, "/v1/chat/completions",
               "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":"
               "\"q\"}],\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
               "\"w\",\"schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
               "\"string\"},\"temp_c\":{\"type\":\"number\"}},\"required\":[\"city\",\"temp_c\"],"
               "\"additionalProperties\":false}}}}",
               &call);
    assert_string_equal(call.json_answer, "{\"city\":\"Oslo\",\"temp_c\":1}");
    assert_true(call.content.p == call.json_answer);
    assert_int_equal(call.n_tokens, sim_content_pieces(bsc_str_cstr(call.json_answer)));
    assert_false(call.finish_length); /* not cut by max_tokens: 2 */
    o = body_of(&sim_dialect_openai, &call);
    msg = json_object_object_get(json_object_array_get_idx(json_object_object_get(o, "choices"),
                                                            0),
                                 "message");
    assert_string_equal(json_object_get_string(json_object_object_get(msg, "content")),
                        "{\"city\":\"Oslo\",\"temp_c\":1}");
    json_object_put(o);
    bsc_buf_init(&streamed, 4096);
    for (uint32_t i = 0; i < call.n_tokens; i++)
        assert_int_equal(bsc_buf_append_str(&streamed, sim_content_chunk(call.content, i)),
                         BSC_OK);
    assert_string_equal(streamed.p, call.json_answer);
    bsc_buf_cleanup(&streamed);
    sim_call_cleanup(&call);

    /* json_object: {"answer": the sentence}. */
    parse_call(&sim_dialect_openai, "/v1/chat/completions",
               "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
               "\"response_format\":{\"type\":\"json_object\"}}",
               &call);
    assert_non_null(strstr(call.json_answer, "{\"answer\":\"Hello h"));
    sim_call_cleanup(&call);

    /* text: no JSON answer. */
    parse_call(&sim_dialect_openai, "/v1/chat/completions",
               "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
               "\"response_format\":{\"type\":\"text\"}}",
               &call);
    assert_null(call.json_answer);
    assert_null(call.content.p);
    sim_call_cleanup(&call);

    /* Tool calls: the named tool's parameters decide the arguments. */
    parse_call(&sim_dialect_openai, "/v1/chat/completions",
               "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
               "\"tools\":[" WEATHER_TOOL "," TIME_TOOL "]}",
               &call);
    assert_string_equal(call.tool_name, "get_weather");
    assert_string_equal(call.tool_args, "{\"city\":\"Oslo\"}");
    assert_null(call.json_answer);
    sim_call_cleanup(&call);
    parse_call(&sim_dialect_openai, "/v1/chat/completions",
               "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
               "\"tools\":[" WEATHER_TOOL "," TIME_TOOL "],\"tool_choice\":{\"type\":"
               "\"function\",\"function\":{\"name\":\"get_time\"}},\"response_format\":{"
               "\"type\":\"json_object\"}}",
               &call);
    assert_string_equal(call.tool_args, "{\"timezone\":\"Europe/Oslo\"}");
    assert_null(call.json_answer); /* a tool call: the JSON answer is not needed */
    sim_call_cleanup(&call);
}

/* Scripted content and tool arguments still come first. */
static void scripted_values_win(void **state)
{
    static const char *const req =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"w\","
        "\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
        "\"required\":[\"a\"]}}}}";
    struct sim_in in = {.method = BSC_STR("POST"), .path = BSC_STR("/v1/chat/completions"),
                        .body = bsc_str_cstr(req), .header = hdr};
    struct sim_reject rej = {0};
    struct sim_call call = {0};
    struct sim_step step;

    (void)state;
    assert_true(sim_dialect_openai.parse(SIM_EP_CHAT, &in, &call, &rej));
    sim_call_settle(&call, 0, 1, 1);
    sim_step_init_ok(&step);
    step.content = strdup("not JSON at all");
    assert_non_null(step.content);
    sim_step_apply(&step, &call);
    sim_call_json_content(&call);
    assert_string_equal(call.content.p, "not JSON at all");
    assert_string_equal(call.json_answer, "{\"a\":1}"); /* generated, but not said */
    sim_call_cleanup(&call);
    sim_step_cleanup(&step);

    /* The same with tools: scripted arguments replace the generated ones. */
    in.body = BSC_STR("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                      "\"q\"}],\"tools\":[" WEATHER_TOOL "]}");
    memset(&call, 0, sizeof(call));
    assert_true(sim_dialect_openai.parse(SIM_EP_CHAT, &in, &call, &rej));
    sim_call_settle(&call, 0, 1, 1);
    sim_step_init_ok(&step);
    step.tool_arguments = strdup("{\"city\": 42");
    assert_non_null(step.tool_arguments);
    sim_step_apply(&step, &call);
    sim_call_json_content(&call);
    assert_string_equal(call.tool_args, "{\"city\": 42");
    assert_null(call.content.p);
    sim_call_cleanup(&call);
    sim_step_cleanup(&step);
}

/* Anthropic: the gateway's forced tool for response_format gets an instance of its
 * input_schema; other tools theirs. */
static void anthropic_tool_input_follows_the_schema(void **state)
{
    struct sim_call call;
    struct json_object *o, *blocks, *input;

    (void)state;
    parse_call(&sim_dialect_anthropic, "/v1/messages",
               "{\"model\":\"c\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\","
               "\"content\":\"Give JSON\"}],\"tools\":[{\"name\":\"json_response\","
               "\"description\":\"d\",\"input_schema\":{\"type\":\"object\",\"properties\":{"
               "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":"
               "\"date\"}}},\"required\":[\"items\"]}}],\"tool_choice\":{\"type\":\"tool\","
               "\"name\":\"json_response\"}}",
               &call);
    assert_string_equal(call.tool_name, "json_response");
    assert_string_equal(call.tool_args, "{\"items\":[\"2024-01-01\"]}");
    o = body_of(&sim_dialect_anthropic, &call);
    blocks = json_object_object_get(o, "content");
    input = json_object_object_get(json_object_array_get_idx(blocks,
                                                             json_object_array_length(blocks) - 1),
                                   "input");
    assert_string_equal(json_object_to_json_string_ext(input, JSON_C_TO_STRING_PLAIN),
                        "{\"items\":[\"2024-01-01\"]}");
    json_object_put(o);
    sim_call_cleanup(&call);

    /* The JSON-mode emulation's bare object schema: the echo, as before. */
    parse_call(&sim_dialect_anthropic, "/v1/messages",
               "{\"model\":\"c\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\","
               "\"content\":\"JSON\"}],\"tools\":[{\"name\":\"json_response\",\"input_schema\":"
               "{\"type\":\"object\"}}],\"tool_choice\":{\"type\":\"tool\",\"name\":"
               "\"json_response\"}}",
               &call);
    assert_string_equal(call.tool_args, "{\"echo\":\"JSON\"}");
    sim_call_cleanup(&call);
}

static void gemini_answers_with_the_schema(void **state)
{
    struct sim_call call;
    struct json_object *o, *part;

    (void)state;
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]}],"
               "\"generationConfig\":{\"responseMimeType\":\"application/json\","
               "\"responseJsonSchema\":{\"type\":\"object\",\"properties\":{\"answer\":{"
               "\"type\":\"integer\",\"minimum\":40}},\"required\":[\"answer\"]}}}",
               &call);
    assert_string_equal(call.json_answer, "{\"answer\":40}");
    o = body_of(&sim_dialect_gemini, &call);
    part = json_object_array_get_idx(
        json_object_object_get(json_object_object_get(json_object_array_get_idx(
                                                          json_object_object_get(o, "candidates"),
                                                          0),
                                                      "content"),
                               "parts"),
        0);
    assert_string_equal(json_object_get_string(json_object_object_get(part, "text")),
                        "{\"answer\":40}");
    json_object_put(o);
    sim_call_cleanup(&call);

    /* responseSchema (the OpenAPI subset). */
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"parts\":[{\"text\":\"q\"}]}],\"generationConfig\":{"
               "\"responseMimeType\":\"application/json\",\"responseSchema\":{\"type\":"
               "\"ARRAY\",\"items\":{\"type\":\"STRING\"}}}}",
               &call);
    assert_string_equal(call.json_answer, "[\"sample\"]");
    sim_call_cleanup(&call);

    /* application/json alone: {"answer": ...}; text/x.enum: the value as text. */
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"parts\":[{\"text\":\"q\"}]}],\"generationConfig\":{"
               "\"responseMimeType\":\"application/json\"}}",
               &call);
    assert_non_null(strstr(call.json_answer, "{\"answer\":"));
    sim_call_cleanup(&call);
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"parts\":[{\"text\":\"q\"}]}],\"generationConfig\":{"
               "\"responseMimeType\":\"text/x.enum\",\"responseSchema\":{\"type\":\"STRING\","
               "\"format\":\"enum\",\"enum\":[\"up\",\"down\"]}}}",
               &call);
    assert_string_equal(call.content.p, "up");
    sim_call_cleanup(&call);

    /* Function calls: parametersJsonSchema, or the OpenAPI parameters. */
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]}],"
               "\"tools\":[{\"functionDeclarations\":[{\"name\":\"a\",\"parameters\":{"
               "\"type\":\"OBJECT\",\"properties\":{\"n\":{\"type\":\"INTEGER\"}},\"required\":"
               "[\"n\"]}},{\"name\":\"b\",\"parametersJsonSchema\":{\"type\":\"object\","
               "\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}]}],"
               "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\","
               "\"allowedFunctionNames\":[\"b\"]}}}",
               &call);
    assert_string_equal(call.tool_name, "b");
    assert_string_equal(call.tool_args, "{\"city\":\"Oslo\"}");
    sim_call_cleanup(&call);
    parse_call(&sim_dialect_gemini, "/v1beta/models/g:generateContent",
               "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]}],"
               "\"tools\":[{\"functionDeclarations\":[{\"name\":\"a\",\"parameters\":{"
               "\"type\":\"OBJECT\",\"properties\":{\"n\":{\"type\":\"INTEGER\"}},\"required\":"
               "[\"n\"]}}]}]}",
               &call);
    assert_string_equal(call.tool_args, "{\"n\":1}");
    sim_call_cleanup(&call);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_validates),
        cmocka_unit_test(deterministic),
        cmocka_unit_test(gemini_openapi_schemas),
        cmocka_unit_test(name_hints),
        cmocka_unit_test(bounds),
        cmocka_unit_test(unsatisfiable),
        cmocka_unit_test(pattern_sampler),
        cmocka_unit_test(tool_args),
        cmocka_unit_test(json_mode_answer),
        cmocka_unit_test(openai_answers_with_the_schema),
        cmocka_unit_test(scripted_values_win),
        cmocka_unit_test(anthropic_tool_input_follows_the_schema),
        cmocka_unit_test(gemini_answers_with_the_schema),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
