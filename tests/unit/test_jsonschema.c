/* SPDX-License-Identifier: MIT */
/* test_jsonschema.c -- the structured-output validator: a table of schemas x instances, valid
 * and invalid at every keyword, asserting the exact pointer and keyword of each failure; $ref
 * recursion (a tree); refusal of unsupported keywords with their pointer; every named limit at
 * its bound and one past it; the strict text parser; the pattern engine (ECMA-262 subset) and
 * the asserted formats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "core/compat.h"
#include "core/buf.h"
#include "contract/internal.h"
#include "contract/jsonschema.h"

/* ---- helpers --------------------------------------------------------------------------------- */

/* Parses test JSON with json-c (deep enough for the limit tests). Fails the test on bad JSON. */
static struct json_object *jparse(const char *text)
{
    struct json_tokener *tok = json_tokener_new_ex(1000);
    struct json_object *o;

    assert_non_null(tok);
    /* The terminating NUL ends a top-level scalar such as "true". */
    o = json_tokener_parse_ex(tok, text, (int)strlen(text) + 1);
    if (json_tokener_get_error(tok) != json_tokener_success)
        fail_msg("test JSON does not parse: %s", text);
    json_tokener_free(tok);
    return o;
}

static struct js_schema *compile_ok(const char *schema_text)
{
    struct json_object *doc = jparse(schema_text);
    struct js_schema *s = NULL;
    char err[256];
    enum bsc_err rc = js_compile(doc, &s, err, sizeof(err));

    json_object_put(doc);
    if (rc != BSC_OK)
        fail_msg("schema %s: %s", schema_text, err);
    assert_non_null(s);
    return s;
}

/* Compiles <schema_text> expecting <want>; returns the message in <err>. */
static void compile_fails(const char *schema_text, enum bsc_err want, char *err, size_t errlen)
{
    struct json_object *doc = jparse(schema_text);
    struct js_schema *s = (struct js_schema *)(uintptr_t)1;
    enum bsc_err rc = js_compile(doc, &s, err, errlen);

    json_object_put(doc);
    if (rc != want)
        fail_msg("schema %s: rc %d want %d (%s)", schema_text, rc, want, err);
    assert_null(s);
}

static bool check_text(const struct js_schema *s, const char *instance, struct js_error *e)
{
    return js_validate_text(s, bsc_str_cstr(instance), e);
}

/* ---- the keyword table ----------------------------------------------------------------------- */

struct vcase {
    const char *schema;
    const char *instance;
    const char *pointer; /* NULL: valid */
    const char *keyword;
};

#define OK(schema, inst)          {schema, inst, NULL, NULL}
#define BAD(schema, inst, p, kw)  {schema, inst, p, kw}

static const struct vcase keyword_cases[] = {
    /* type */
    OK("{\"type\":\"string\"}", "\"a\""),
    BAD("{\"type\":\"string\"}", "1", "", "type"),
    OK("{\"type\":[\"string\",\"null\"]}", "null"),
    BAD("{\"type\":[\"string\",\"null\"]}", "false", "", "type"),
    OK("{\"type\":\"integer\"}", "1.0"),
    OK("{\"type\":\"integer\"}", "-0"),
    OK("{\"type\":\"integer\"}", "1e3"),
    OK("{\"type\":\"integer\"}", "18446744073709551616"),
    BAD("{\"type\":\"integer\"}", "1.5", "", "type"),
    OK("{\"type\":\"number\"}", "7"),
    BAD("{\"type\":\"number\"}", "\"7\"", "", "type"),
    OK("{\"type\":\"boolean\"}", "true"),
    BAD("{\"type\":\"boolean\"}", "0", "", "type"),
    OK("{\"type\":\"object\"}", "{}"),
    BAD("{\"type\":\"object\"}", "[]", "", "type"),
    OK("{\"type\":\"array\"}", "[]"),
    BAD("{\"type\":\"array\"}", "{}", "", "type"),
    OK("{\"type\":\"null\"}", "null"),
    BAD("{\"type\":\"null\"}", "\"\"", "", "type"),
    OK("true", "{\"anything\":[1]}"),
    BAD("false", "1", "", "false"),
    OK("{}", "[null]"),

    /* properties, nested pointers */
    OK("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":\"x\",\"b\":1}"),
    BAD("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":1}", "/a", "type"),
    OK("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "5"),
    BAD("{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":"
        "\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}}",
        "{\"items\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":3}]}", "/items/2/name", "type"),
    BAD("{\"properties\":{\"a/b~c\":{\"type\":\"string\"}}}", "{\"a/b~c\":0}", "/a~1b~0c",
        "type"),
    BAD("{\"properties\":{\"\":{\"type\":\"string\"}}}", "{\"\":0}", "/", "type"),
    BAD("{\"properties\":{\"n\\u00e9\":{\"type\":\"string\"}}}", "{\"n\\u00e9\":0}",
        "/n\xc3\xa9", "type"),

    /* required */
    OK("{\"required\":[\"a\",\"b\"]}", "{\"a\":1,\"b\":null}"),
    BAD("{\"required\":[\"a\",\"b\"]}", "{\"a\":1}", "", "required"),
    BAD("{\"properties\":{\"o\":{\"required\":[\"k\"]}}}", "{\"o\":{}}", "/o", "required"),
    OK("{\"required\":[\"a\"]}", "[1]"),

    /* additionalProperties */
    OK("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1}"),
    BAD("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1,\"b\":2}", "/b",
        "additionalProperties"),
    BAD("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1,\"y\":\"s\"}", "/y", "type"),
    OK("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1,\"y\":2}"),

    /* patternProperties */
    OK("{\"patternProperties\":{\"^x-\":{\"type\":\"string\"}},\"additionalProperties\":false}",
       "{\"x-a\":\"s\"}"),
    BAD("{\"patternProperties\":{\"^x-\":{\"type\":\"string\"}}}", "{\"x-a\":1}", "/x-a", "type"),
    BAD("{\"patternProperties\":{\"^x-\":{}},\"additionalProperties\":false}", "{\"y\":1}", "/y",
        "additionalProperties"),
    BAD("{\"properties\":{\"x-a\":{\"type\":\"string\"}},\"patternProperties\":{\"^x-\":"
        "{\"maxLength\":1}}}",
        "{\"x-a\":\"long\"}", "/x-a", "maxLength"),

    /* items, prefixItems */
    OK("{\"items\":{\"type\":\"integer\"}}", "[1,2,3]"),
    BAD("{\"items\":{\"type\":\"integer\"}}", "[1,2,\"3\"]", "/2", "type"),
    OK("{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "[\"a\",1,{}]"),
    BAD("{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "[\"a\",\"b\"]", "/1",
        "type"),
    BAD("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\",1]", "/1", "items"),
    BAD("{\"prefixItems\":[{},{\"type\":\"null\"}],\"items\":{\"type\":\"boolean\"}}",
        "[1,null,true,0]", "/3", "type"),

    /* enum, const: JSON equality */
    OK("{\"enum\":[\"a\",1,{\"k\":[1,2]}]}", "{\"k\":[1.0,2]}"),
    OK("{\"enum\":[\"a\",1,{\"k\":[1,2]}]}", "1.0"),
    BAD("{\"enum\":[\"a\",1,{\"k\":[1,2]}]}", "\"b\"", "", "enum"),
    BAD("{\"enum\":[\"a\",1,{\"k\":[1,2]}]}", "{\"k\":[2,1]}", "", "enum"),
    BAD("{\"enum\":[]}", "null", "", "enum"),
    OK("{\"enum\":[null]}", "null"),
    OK("{\"const\":{\"a\":1,\"b\":[true,null]}}", "{\"b\":[true,null],\"a\":1.0}"),
    BAD("{\"const\":{\"a\":1,\"b\":[true,null]}}", "{\"a\":1}", "", "const"),
    BAD("{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":1}", "", "const"),
    OK("{\"const\":null}", "null"),
    BAD("{\"const\":null}", "0", "", "const"),
    BAD("{\"const\":\"a\\u0000b\"}", "\"a\\u0000c\"", "", "const"),
    OK("{\"const\":18446744073709551615}", "18446744073709551615"),
    BAD("{\"const\":9223372036854775807}", "9223372036854775808", "", "const"),
    BAD("{\"const\":0.1}", "0.10000000000000002", "", "const"),
    OK("{\"const\":1e2}", "100"),

    /* combinators */
    OK("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "null"),
    BAD("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "1", "", "anyOf"),
    BAD("{\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":5}]}}}",
        "{\"a\":1}", "/a", "anyOf"),
    OK("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "3"),
    BAD("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "1", "", "minimum"),
    BAD("{\"allOf\":[{\"properties\":{\"x\":{\"type\":\"string\"}}}]}", "{\"x\":[]}", "/x",
        "type"),
    OK("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "\"s\""),
    BAD("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "5", "", "oneOf"),
    BAD("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}", "[]", "", "oneOf"),
    OK("{\"not\":{\"type\":\"string\"}}", "1"),
    BAD("{\"not\":{\"type\":\"string\"}}", "\"s\"", "", "not"),
    BAD("{\"allOf\":[true,false]}", "1", "", "allOf"),

    /* $ref, $defs, definitions, # */
    OK("{\"$defs\":{\"s\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/s\"}}}",
       "{\"a\":\"x\"}"),
    BAD("{\"$defs\":{\"s\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/s\"}}}",
        "{\"a\":1}", "/a", "type"),
    BAD("{\"definitions\":{\"s\":{\"minLength\":3}},\"items\":{\"$ref\":\"#/definitions/s\"}}",
        "[\"abc\",\"ab\"]", "/1", "minLength"),
    BAD("{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"$ref\":\"#/properties/a\"}}}",
        "{\"b\":\"x\"}", "/b", "type"),
    BAD("{\"$defs\":{\"a b\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/a%20b\"}", "\"x\"", "",
        "type"),
    BAD("{\"$defs\":{\"a/b\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/a~1b\"}", "\"x\"", "",
        "type"),
    OK("{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"v\"]}",
       "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3}}}"),
    BAD("{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"v\"]}",
        "{\"v\":1,\"next\":{\"v\":2,\"next\":{}}}", "/next/next", "required"),
    BAD("{\"$defs\":{\"p\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/p\",\"minimum\":3}", "2", "",
        "minimum"),
    BAD("{\"$defs\":{\"p\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/p\",\"minimum\":3}", "3.5",
        "", "type"),

    /* strings: lengths in code points, pattern, format */
    OK("{\"minLength\":2,\"maxLength\":2}", "\"\\u00e9\\u00e9\""),
    BAD("{\"minLength\":2,\"maxLength\":2}", "\"\xc3\xa9\"", "", "minLength"),
    BAD("{\"minLength\":2,\"maxLength\":2}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"", "", "maxLength"),
    OK("{\"maxLength\":1}", "\"\xf0\x9f\x98\x80\""),
    BAD("{\"maxLength\":1}", "\"\\ud83d\\ude00\\ud83d\\ude00\"", "", "maxLength"),
    OK("{\"maxLength\":0}", "\"\""),
    OK("{\"minLength\":5}", "5"),
    OK("{\"pattern\":\"^\\\\d{3}-\\\\d{4}$\"}", "\"555-1234\""),
    BAD("{\"pattern\":\"^\\\\d{3}-\\\\d{4}$\"}", "\"ddd-dddd\"", "", "pattern"),
    OK("{\"pattern\":\"b\"}", "\"abc\""),
    BAD("{\"pattern\":\"^b\"}", "\"abc\"", "", "pattern"),
    OK("{\"format\":\"date-time\"}", "\"2024-02-29T23:59:60.5+05:30\""),
    BAD("{\"format\":\"date-time\"}", "\"2023-02-29T10:00:00Z\"", "", "format"),
    BAD("{\"format\":\"date-time\"}", "\"2024-01-01 10:00:00Z\"", "", "format"),
    OK("{\"format\":\"date\"}", "\"2000-02-29\""),
    BAD("{\"format\":\"date\"}", "\"1900-02-29\"", "", "format"),
    OK("{\"format\":\"time\"}", "\"08:30:00z\""),
    BAD("{\"format\":\"time\"}", "\"08:30:00\"", "", "format"),
    OK("{\"format\":\"uuid\"}", "\"123e4567-e89b-12d3-a456-426614174000\""),
    BAD("{\"format\":\"uuid\"}", "\"123e4567e89b12d3a456426614174000\"", "", "format"),
    OK("{\"format\":\"ipv4\"}", "\"192.168.0.255\""),
    BAD("{\"format\":\"ipv4\"}", "\"192.168.0.256\"", "", "format"),
    BAD("{\"format\":\"ipv4\"}", "\"01.2.3.4\"", "", "format"),
    OK("{\"format\":\"ipv6\"}", "\"::ffff:192.0.2.1\""),
    BAD("{\"format\":\"ipv6\"}", "\"1::2::3\"", "", "format"),
    OK("{\"format\":\"email\"}", "\"not an email\""), /* annotation only */
    OK("{\"format\":\"date\"}", "20000229"),         /* formats apply to strings */

    /* numbers */
    OK("{\"minimum\":1,\"maximum\":3}", "1"),
    OK("{\"minimum\":1,\"maximum\":3}", "3.0"),
    BAD("{\"minimum\":1,\"maximum\":3}", "0.999", "", "minimum"),
    BAD("{\"minimum\":1,\"maximum\":3}", "3.0000001", "", "maximum"),
    BAD("{\"exclusiveMinimum\":1}", "1", "", "exclusiveMinimum"),
    OK("{\"exclusiveMinimum\":1}", "1.0000001"),
    BAD("{\"exclusiveMaximum\":1.5}", "1.5", "", "exclusiveMaximum"),
    OK("{\"exclusiveMaximum\":1.5}", "1"),
    BAD("{\"maximum\":9223372036854775807}", "9223372036854775808", "", "maximum"),
    OK("{\"maximum\":9223372036854775807}", "9223372036854775807"),
    BAD("{\"minimum\":-9223372036854775808}", "-1e19", "", "minimum"),
    BAD("{\"maximum\":9007199254740992}", "9007199254740993", "", "maximum"),
    OK("{\"multipleOf\":0.01}", "19.99"),
    BAD("{\"multipleOf\":0.01}", "19.995", "", "multipleOf"),
    OK("{\"multipleOf\":0.0001}", "0.0075"),
    OK("{\"multipleOf\":3}", "-9"),
    BAD("{\"multipleOf\":3}", "10", "", "multipleOf"),
    OK("{\"multipleOf\":2}", "18446744073709551614"),
    BAD("{\"multipleOf\":0.001}", "1e-12", "", "multipleOf"),
    BAD("{\"type\":\"integer\",\"multipleOf\":0.123456789}", "1e308", "", "multipleOf"),
    OK("{\"minimum\":5}", "\"4\""),

    /* arrays */
    OK("{\"minItems\":1,\"maxItems\":2}", "[1]"),
    BAD("{\"minItems\":1,\"maxItems\":2}", "[]", "", "minItems"),
    BAD("{\"minItems\":1,\"maxItems\":2}", "[1,2,3]", "", "maxItems"),
    OK("{\"uniqueItems\":true}", "[1,\"1\",[1],{\"a\":1},true,null]"),
    BAD("{\"uniqueItems\":true}", "[1,2,1.0]", "/2", "uniqueItems"),
    BAD("{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},0,{\"b\":2,\"a\":1}]", "/2", "uniqueItems"),
    BAD("{\"uniqueItems\":true}", "[3,[1,[2]],4,[1,[2.0]],3]", "/3", "uniqueItems"),
    OK("{\"uniqueItems\":false}", "[1,1]"),

    /* objects */
    OK("{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1}"),
    BAD("{\"minProperties\":1,\"maxProperties\":2}", "{}", "", "minProperties"),
    BAD("{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1,\"b\":2,\"c\":3}", "",
        "maxProperties"),

    /* annotations and $schema are accepted and change nothing */
    OK("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"title\":\"t\","
       "\"description\":\"d\",\"examples\":[1],\"default\":2,\"$comment\":\"c\","
       "\"deprecated\":true,\"readOnly\":false,\"writeOnly\":false,\"type\":\"integer\"}",
       "3"),
};

static void test_keyword_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(keyword_cases); i++) {
        const struct vcase *c = &keyword_cases[i];
        struct js_schema *s = compile_ok(c->schema);
        struct js_error e;
        bool ok = check_text(s, c->instance, &e);

        if (!c->pointer && !ok)
            fail_msg("case %zu %s / %s: unexpected failure at \"%s\" %s: %s", i, c->schema,
                     c->instance, e.pointer, e.keyword, e.message);
        if (c->pointer && ok)
            fail_msg("case %zu %s / %s: unexpectedly valid", i, c->schema, c->instance);
        if (c->pointer &&
            (strcmp(e.pointer, c->pointer) != 0 || strcmp(e.keyword, c->keyword) != 0))
            fail_msg("case %zu %s / %s: got \"%s\" %s (%s), want \"%s\" %s", i, c->schema,
                     c->instance, e.pointer, e.keyword, e.message, c->pointer, c->keyword);
        if (c->pointer && e.message[0] == '\0')
            fail_msg("case %zu: empty message", i);
        if (!c->pointer && (e.pointer[0] || e.keyword[0] || e.message[0]))
            fail_msg("case %zu: error fields not cleared on success", i);
        js_free(s);
    }
}

/* Messages carry the values that failed. */
static void test_messages(void **state)
{
    struct js_schema *s;
    struct js_error e;

    (void)state;
    s = compile_ok("{\"type\":[\"string\",\"null\"]}");
    assert_false(check_text(s, "1.5", &e));
    assert_string_equal(e.message, "expected null or string, got number");
    js_free(s);

    s = compile_ok("{\"const\":\"abc\"}");
    assert_false(check_text(s, "\"abd\"", &e));
    assert_string_equal(e.message, "value is not the constant \"abc\"");
    js_free(s);

    s = compile_ok("{\"required\":[\"name\"]}");
    assert_false(check_text(s, "{}", &e));
    assert_string_equal(e.message, "missing property \"name\"");
    js_free(s);

    s = compile_ok("{\"additionalProperties\":false}");
    assert_false(check_text(s, "{\"x\":1}", &e));
    assert_string_equal(e.message, "property \"x\" is not allowed");
    js_free(s);

    s = compile_ok("{\"maximum\":2.5}");
    assert_false(check_text(s, "3", &e));
    assert_string_equal(e.message, "3 is greater than the maximum 2.5");
    js_free(s);

    s = compile_ok("{\"anyOf\":[{\"properties\":{\"a\":{\"type\":\"string\"}}},{\"type\":"
                   "\"null\"}]}");
    assert_false(check_text(s, "{\"a\":1}", &e));
    assert_string_equal(e.pointer, "");
    assert_string_equal(e.keyword, "anyOf");
    assert_non_null(strstr(e.message, "the first fails at \"/a\" (type: expected string"));
    js_free(s);

    s = compile_ok("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0},{}]}");
    assert_false(check_text(s, "1", &e));
    assert_string_equal(e.message, "matches subschemas 0 and 1; exactly one must match");
    js_free(s);

    /* A null js_error is allowed. */
    assert_false(js_validate_text(s = compile_ok("false"), BSC_STR("1"), NULL));
    js_free(s);
}

/* A pointer longer than js_error.pointer is cut at a character boundary, ending in "...". */
static void test_long_pointer(void **state)
{
    struct bsc_buf b;
    struct js_schema *s;
    struct js_error e;

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\""), BSC_OK);
    for (int i = 0; i < 300; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "\xc3\xa9"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "\":{\"x\":1}}"), BSC_OK);
    s = compile_ok("{\"additionalProperties\":{\"properties\":{\"x\":{\"type\":\"string\"}}}}");
    assert_false(check_text(s, b.p, &e));
    assert_string_equal(e.keyword, "type");
    assert_true(strlen(e.pointer) < sizeof(e.pointer));
    assert_int_equal(e.pointer[0], '/');
    assert_string_equal(e.pointer + strlen(e.pointer) - 3, "...");
    assert_true(bsc_utf8_valid(e.pointer, strlen(e.pointer)));
    js_free(s);
    bsc_buf_cleanup(&b);
}

/* ---- $ref recursion: a tree ------------------------------------------------------------------ */

static const char tree_schema[] =
    "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
    "\"value\":{\"type\":\"integer\"},"
    "\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
    "\"required\":[\"value\"],\"additionalProperties\":false}},"
    "\"$ref\":\"#/$defs/node\"}";

static void test_ref_tree(void **state)
{
    struct js_schema *s = compile_ok(tree_schema);
    struct bsc_buf b;
    struct js_error e;

    (void)state;
    assert_true(check_text(s, "{\"value\":1}", &e));
    assert_true(check_text(s,
                           "{\"value\":1,\"children\":[{\"value\":2},{\"value\":3,\"children\":"
                           "[{\"value\":4,\"children\":[]}]}]}",
                           &e));
    assert_false(check_text(s,
                            "{\"value\":1,\"children\":[{\"value\":2,\"children\":[{\"value\":3},"
                            "{\"value\":\"4\"}]}]}",
                            &e));
    assert_string_equal(e.pointer, "/children/0/children/1/value");
    assert_string_equal(e.keyword, "type");
    assert_false(check_text(s, "{\"value\":1,\"children\":[{\"children\":[]}]}", &e));
    assert_string_equal(e.pointer, "/children/0");
    assert_string_equal(e.keyword, "required");
    assert_false(check_text(s, "{\"value\":1,\"children\":[{\"value\":2,\"extra\":0}]}", &e));
    assert_string_equal(e.pointer, "/children/0/extra");
    assert_string_equal(e.keyword, "additionalProperties");

    /* A chain 30 levels deep (60 containers) is within every bound. */
    bsc_buf_init(&b, 1 << 20);
    for (int i = 0; i < 30; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "{\"value\":0,\"children\":["), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"value\":1}"), BSC_OK);
    for (int i = 0; i < 30; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "]}"), BSC_OK);
    assert_true(check_text(s, b.p, &e));
    bsc_buf_cleanup(&b);
    js_free(s);
}

/* Mutually recursive definitions compile once each, and a forward $ref resolves. */
static void test_ref_forward_and_mutual(void **state)
{
    struct js_schema *s;
    struct js_error e;
    char err[256];

    (void)state;
    s = compile_ok("{\"$ref\":\"#/definitions/a\",\"definitions\":{"
                   "\"a\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/b\"}},"
                   "\"b\":{\"anyOf\":[{\"type\":\"integer\"},{\"$ref\":\"#/definitions/a\"}]}}}");
    assert_true(check_text(s, "[1,[2,[3,[]]]]", &e));
    assert_false(check_text(s, "[1,[2,[\"x\"]]]", &e));
    assert_string_equal(e.pointer, "/1");
    assert_string_equal(e.keyword, "anyOf");
    js_free(s);

    /* A forward $ref deep into a later definition. */
    s = compile_ok("{\"$ref\":\"#/$defs/x/anyOf/1\",\"$defs\":{\"x\":{\"anyOf\":[true,"
                   "{\"type\":\"string\"}]}}}");
    assert_false(check_text(s, "1", &e));
    assert_string_equal(e.keyword, "type");
    js_free(s);

    /* A $ref to a place no schema keyword reaches is compiled on demand, and its errors name
     * that place. */
    s = compile_ok("{\"$ref\":\"#/examples/0\",\"examples\":[{\"type\":\"string\"}]}");
    assert_false(check_text(s, "1", &e));
    assert_string_equal(e.keyword, "type");
    js_free(s);
    compile_fails("{\"$ref\":\"#/examples/0\",\"examples\":[{\"if\":1}]}", BSC_EINVAL, err,
                  sizeof(err));
    assert_string_equal(err, "#/examples/0/if: unsupported keyword \"if\"");
}

/* ---- compile-time refusals ------------------------------------------------------------------- */

static void test_unsupported_keywords(void **state)
{
    static const struct {
        const char *schema;
        const char *message; /* exact */
    } bad[] = {
        {"{\"properties\":{\"a\":{\"if\":{},\"then\":{}}}}",
         "#/properties/a/if: unsupported keyword \"if\""},
        {"{\"items\":{\"contains\":{}}}", "#/items/contains: unsupported keyword \"contains\""},
        {"{\"foo\":1}", "#/foo: unsupported keyword \"foo\""},
        {"{\"type\":\"string\",\"nullable\":true}",
         "#/nullable: unsupported keyword \"nullable\" (OpenAPI 3.0; use \"type\": [\"...\", "
         "\"null\"])"},
        {"{\"$defs\":{\"x\":{\"unevaluatedProperties\":false}}}",
         "#/$defs/x/unevaluatedProperties: unsupported keyword \"unevaluatedProperties\""},
        {"{\"properties\":{\"a~/b\":{\"propertyNames\":{}}}}",
         "#/properties/a~0~1b/propertyNames: unsupported keyword \"propertyNames\""},
        {"{\"items\":[{}]}",
         "#/items: unsupported: \"items\" as an array (the draft-07 tuple form); use "
         "\"prefixItems\""},
        {"{\"properties\":{\"a\":{\"$schema\":\"x\"}}}",
         "#/properties/a/$schema: unsupported keyword \"$schema\" below the document root"},
        {"{\"$ref\":\"other.json#/a\"}",
         "#/$ref: unsupported $ref \"other.json#/a\": only \"#...\" inside the document"},
        {"{\"$ref\":\"#anchor\"}", "#/$ref: unsupported $ref \"#anchor\": not a JSON pointer"},
        {"{\"$ref\":\"#/$defs/missing\"}",
         "#/$ref: $ref \"#/$defs/missing\" does not resolve inside the document"},
        {"{\"$ref\":\"#/$defs\",\"$defs\":{\"x\":{}}}",
         "#/$defs/x: unsupported keyword \"x\""},
        {"{\"$ref\":\"#/required\",\"required\":[]}",
         "#/$ref: $ref \"#/required\" does not point to a schema"},
        {"{\"type\":\"str\"}", "#/type: unknown type \"str\""},
        {"{\"type\":\"string\\u0000x\"}", "#/type: must not contain U+0000"},
        {"{\"format\":\"date\\u0000\"}", "#/format: must not contain U+0000"},
        {"{\"type\":[]}", "#/type: must be a type name or a non-empty array of them"},
        {"{\"type\":[\"string\",\"string\"]}", "#/type: type \"string\" listed twice"},
        {"{\"minLength\":-1}", "#/minLength: must be a non-negative integer"},
        {"{\"minLength\":1.5}", "#/minLength: must be a non-negative integer"},
        {"{\"multipleOf\":0}", "#/multipleOf: must be greater than 0"},
        {"{\"exclusiveMinimum\":true}", "#/exclusiveMinimum: must be a finite number"},
        {"{\"uniqueItems\":1}", "#/uniqueItems: must be a boolean"},
        {"{\"required\":[1]}", "#/required: must be an array of strings"},
        {"{\"required\":[\"a\\u0000\"]}", "#/required: a required name contains U+0000"},
        {"{\"anyOf\":[]}", "#/anyOf: must be a non-empty array of schemas"},
        {"{\"allOf\":[1]}", "#/allOf/0: a schema must be an object or a boolean"},
        {"{\"properties\":[]}", "#/properties: must be an object of schemas"},
        {"{\"format\":1}", "#/format: must be a string"},
        {"{\"pattern\":\"(?=a)\"}",
         "#/pattern: pattern \"(?=a)\": lookaround assertions are not supported at byte 1 of "
         "the pattern"},
        {"{\"pattern\":\"(a)\\\\1\"}",
         "#/pattern: pattern \"(a)\\1\": backreferences are not supported at byte 5 of the "
         "pattern"},
        {"{\"patternProperties\":{\"[\":{}}}",
         "#/patternProperties/[: pattern \"[\": unterminated character class at byte 1 of the "
         "pattern"},
        {"{\"$ref\":\"#\"}", "#: $ref cycle that never descends into the instance"},
        {"{\"$defs\":{\"a\":{\"allOf\":[{\"$ref\":\"#/$defs/b\"}]},\"b\":{\"not\":{\"$ref\":"
         "\"#/$defs/a\"}}},\"properties\":{\"p\":{\"$ref\":\"#/$defs/a\"}}}",
         "#/$defs/a: $ref cycle that never descends into the instance"},
        {"[]", "#: a schema must be an object or a boolean"},
    };
    char err[256];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad); i++) {
        compile_fails(bad[i].schema, BSC_EINVAL, err, sizeof(err));
        if (strcmp(err, bad[i].message) != 0)
            fail_msg("case %zu %s:\n got  %s\n want %s", i, bad[i].schema, err, bad[i].message);
    }
    /* A schema pointer too long to hold stops at the last segment that fitted, then "/...". */
    {
        struct bsc_buf b;

        bsc_buf_init(&b, 1 << 20);
        assert_int_equal(bsc_buf_append_cstr(&b, "{\"properties\":{\""), BSC_OK);
        for (int i = 0; i < 1100; i++)
            assert_int_equal(bsc_buf_append_char(&b, 'x'), BSC_OK);
        assert_int_equal(bsc_buf_append_cstr(&b, "\":{\"properties\":{\"a\":{\"if\":1}}}}}"),
                         BSC_OK);
        compile_fails(b.p, BSC_EINVAL, err, sizeof(err));
        assert_string_equal(err, "#/properties/...: unsupported keyword \"if\"");
        bsc_buf_cleanup(&b);
    }
    /* A zero-length error buffer is allowed. */
    compile_fails("{\"if\":{}}", BSC_EINVAL, err, 0);
}

/* The compiled schema owns what it keeps: the document can go right after js_compile(). */
static void test_schema_outlives_document(void **state)
{
    struct json_object *doc = jparse("{\"enum\":[{\"a\":[1,2]},\"x\"],\"const\":\"x\","
                                     "\"pattern\":\"^x$\",\"required\":[],"
                                     "\"properties\":{\"p\":{\"const\":3}}}");
    struct js_schema *s = NULL;
    struct js_error e;
    char err[128];

    (void)state;
    assert_int_equal(js_compile(doc, &s, err, sizeof(err)), BSC_OK);
    json_object_put(doc);
    assert_true(check_text(s, "\"x\"", &e));
    assert_false(check_text(s, "{\"a\":[1,2]}", &e));
    assert_string_equal(e.keyword, "const");
    js_free(s);
    js_free(NULL);
}

/* ---- limits ---------------------------------------------------------------------------------- */

/* {"properties":{"a":{"properties":{"a": ... {} ...}}}} with <levels> nested subschemas. */
static char *nested_properties(int levels)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 1 << 20);
    for (int i = 0; i < levels; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "{\"properties\":{\"a\":"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "{}"), BSC_OK);
    for (int i = 0; i < levels; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "}}"), BSC_OK);
    return bsc_buf_take(&b, NULL);
}

static void test_limit_schema_depth(void **state)
{
    char *t, err[256];

    (void)state;
    t = nested_properties(JS_MAX_SCHEMA_DEPTH);
    js_free(compile_ok(t));
    free(t);
    t = nested_properties(JS_MAX_SCHEMA_DEPTH + 1);
    compile_fails(t, BSC_ELIMIT, err, sizeof(err));
    if (!strstr(err, "subschemas nested deeper than 32"))
        fail_msg("got %s", err);
    free(t);
}

/* An object schema with <n> properties: n + 1 subschemas. */
static char *wide_properties(int n)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 1 << 22);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"properties\":{"), BSC_OK);
    for (int i = 0; i < n; i++)
        assert_int_equal(bsc_buf_appendf(&b, "%s\"p%d\":{}", i ? "," : "", i), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "}}"), BSC_OK);
    return bsc_buf_take(&b, NULL);
}

static void test_limit_schema_nodes(void **state)
{
    char *t, err[256];
    struct js_schema *s;
    struct js_error e;

    (void)state;
    t = wide_properties(JS_MAX_SCHEMA_NODES - 1);
    s = compile_ok(t);
    assert_true(check_text(s, "{\"p0\":1,\"p4094\":2}", &e));
    js_free(s);
    free(t);
    t = wide_properties(JS_MAX_SCHEMA_NODES);
    compile_fails(t, BSC_ELIMIT, err, sizeof(err));
    assert_non_null(strstr(err, "more than 4096 subschemas"));
    free(t);
}

/* A root $ref through <hops> definitions d0 -> d1 -> ... : a chain of <hops> + 1 $refs. */
static char *ref_chain(int refs)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"$ref\":\"#/$defs/d0\",\"$defs\":{"), BSC_OK);
    for (int i = 0; i < refs - 1; i++)
        assert_int_equal(bsc_buf_appendf(&b, "\"d%d\":{\"$ref\":\"#/$defs/d%d\"},", i, i + 1),
                         BSC_OK);
    assert_int_equal(bsc_buf_appendf(&b, "\"d%d\":{\"type\":\"string\"}}}", refs - 1), BSC_OK);
    return bsc_buf_take(&b, NULL);
}

static void test_limit_ref_chain(void **state)
{
    char *t, err[256];
    struct js_schema *s;
    struct js_error e;

    (void)state;
    t = ref_chain(JS_MAX_REF_CHAIN);
    s = compile_ok(t);
    assert_true(check_text(s, "\"s\"", &e));
    assert_false(check_text(s, "1", &e));
    assert_string_equal(e.keyword, "type");
    js_free(s);
    free(t);
    t = ref_chain(JS_MAX_REF_CHAIN + 1);
    compile_fails(t, BSC_ELIMIT, err, sizeof(err));
    assert_non_null(strstr(err, "more than 16 $ref/allOf/anyOf/oneOf/not in a chain"));
    free(t);
}

static char *nested_arrays(int depth)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 1 << 20);
    for (int i = 0; i < depth; i++)
        assert_int_equal(bsc_buf_append_char(&b, '['), BSC_OK);
    for (int i = 0; i < depth; i++)
        assert_int_equal(bsc_buf_append_char(&b, ']'), BSC_OK);
    return bsc_buf_take(&b, NULL);
}

static void test_limit_instance_depth(void **state)
{
    struct js_schema *s = compile_ok("{\"items\":{\"$ref\":\"#\"}}");
    struct json_object *o;
    struct js_error e;
    char *t;

    (void)state;
    t = nested_arrays(JS_MAX_INSTANCE_DEPTH);
    assert_true(check_text(s, t, &e));
    o = jparse(t);
    assert_true(js_validate(s, o, &e));
    json_object_put(o);
    free(t);

    t = nested_arrays(JS_MAX_INSTANCE_DEPTH + 1);
    assert_false(check_text(s, t, &e));
    assert_string_equal(e.pointer, "");
    assert_string_equal(e.keyword, "json");
    assert_non_null(strstr(e.message, "nested deeper than 64"));
    /* The same through js_validate() on a json-c tree: caught before any recursion. */
    o = jparse(t);
    assert_false(js_validate(s, o, &e));
    assert_string_equal(e.keyword, "json");
    assert_int_equal(strncmp(e.pointer, "/0/0/0/0", 8), 0);
    json_object_put(o);
    free(t);
    js_free(s);
}

/* allOf of two $refs to the previous level, 7 levels (a chain of 14, 15 from "items"): about
 * 2^9 applications per value. */
static void test_limit_steps(void **state)
{
    struct bsc_buf b;
    struct js_schema *s;
    struct js_error e;

    (void)state;
    bsc_buf_init(&b, 1 << 22);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"$defs\":{\"a0\":{\"type\":\"integer\"}"), BSC_OK);
    for (int i = 1; i <= 7; i++)
        assert_int_equal(bsc_buf_appendf(&b,
                                         ",\"a%d\":{\"allOf\":[{\"$ref\":\"#/$defs/a%d\"},"
                                         "{\"$ref\":\"#/$defs/a%d\"}]}",
                                         i, i - 1, i - 1),
                         BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "},\"items\":{\"$ref\":\"#/$defs/a7\"}}"), BSC_OK);
    s = compile_ok(b.p);
    bsc_buf_reset(&b);
    /* 510 applications per item: 100 items pass, 4000 items exhaust JS_MAX_STEPS. */
    assert_int_equal(bsc_buf_append_char(&b, '['), BSC_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(bsc_buf_appendf(&b, "%s%d", i ? "," : "", i), BSC_OK);
    assert_int_equal(bsc_buf_append_char(&b, ']'), BSC_OK);
    assert_true(check_text(s, b.p, &e));
    bsc_buf_reset(&b);
    assert_int_equal(bsc_buf_append_char(&b, '['), BSC_OK);
    for (int i = 0; i < 4000; i++)
        assert_int_equal(bsc_buf_appendf(&b, "%s%d", i ? "," : "", i), BSC_OK);
    assert_int_equal(bsc_buf_append_char(&b, ']'), BSC_OK);
    assert_false(check_text(s, b.p, &e));
    assert_string_equal(e.keyword, "limit");
    assert_non_null(strstr(e.message, "more than 1000000 validation steps"));
    js_free(s);

    /* A limit inside "not" must not turn into a pass. */
    s = compile_ok("{\"not\":{\"pattern\":\"[a-z]{0,999}x\"}}");
    bsc_buf_reset(&b);
    assert_int_equal(bsc_buf_append_char(&b, '"'), BSC_OK);
    for (int i = 0; i < 40000; i++)
        assert_int_equal(bsc_buf_append_char(&b, 'a'), BSC_OK);
    assert_int_equal(bsc_buf_append_char(&b, '"'), BSC_OK);
    assert_false(check_text(s, b.p, &e));
    assert_string_equal(e.keyword, "limit");
    assert_non_null(strstr(e.message, "pattern steps"));
    js_free(s);
    bsc_buf_cleanup(&b);
}

/* 15 nested anyOf per instance level (the heaviest frames): 40 levels need more than
 * JS_MAX_EVAL_DEPTH applications, and the limit comes out of every anyOf as a failure. */
static void test_limit_eval_depth(void **state)
{
    struct bsc_buf b;
    struct js_schema *s;
    struct js_error e;
    char *t;

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"$defs\":{\"n\":"), BSC_OK);
    for (int i = 0; i < 15; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "{\"anyOf\":["), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"items\":{\"$ref\":\"#/$defs/n\"}}"), BSC_OK);
    for (int i = 0; i < 15; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "]}"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "},\"$ref\":\"#/$defs/n\"}"), BSC_OK);
    s = compile_ok(b.p);
    t = nested_arrays(20);
    assert_true(check_text(s, t, &e));
    free(t);
    t = nested_arrays(40);
    assert_false(check_text(s, t, &e));
    assert_string_equal(e.keyword, "limit");
    assert_non_null(strstr(e.message, "deeper than 512"));
    free(t);
    js_free(s);
    bsc_buf_cleanup(&b);
}

static void test_limit_patterns(void **state)
{
    struct bsc_buf b;
    char err[256];

    (void)state;
    js_free(compile_ok("{\"pattern\":\"^a{1000}$\"}"));
    compile_fails("{\"pattern\":\"^a{1001}$\"}", BSC_ELIMIT, err, sizeof(err));
    assert_non_null(strstr(err, "quantifier bound above 1000"));
    compile_fails("{\"pattern\":\"a{1,1001}\"}", BSC_ELIMIT, err, sizeof(err));
    /* 1000 x 10 classes: 10001 states with the match state. */
    compile_fails("{\"pattern\":\"(abcdefghij){1000}\"}", BSC_ELIMIT, err, sizeof(err));
    assert_non_null(strstr(err, "more than 10000 automaton states"));
    js_free(compile_ok("{\"pattern\":\"(abcdefghi){1000}\"}"));
    compile_fails("{\"pattern\":\"((a{100}){100}){100}\"}", BSC_ELIMIT, err, sizeof(err));

    /* 9001 states each: 11 patterns fit JS_MAX_PATTERN_TOTAL, 12 do not. */
    for (int n = 11; n <= 12; n++) {
        bsc_buf_init(&b, 1 << 20);
        assert_int_equal(bsc_buf_append_cstr(&b, "{\"properties\":{"), BSC_OK);
        for (int i = 0; i < n; i++)
            assert_int_equal(bsc_buf_appendf(&b, "%s\"p%d\":{\"pattern\":\"(abcdefghi){1000}\"}",
                                             i ? "," : "", i),
                             BSC_OK);
        assert_int_equal(bsc_buf_append_cstr(&b, "}}"), BSC_OK);
        if (n == 11) {
            js_free(compile_ok(b.p));
        } else {
            compile_fails(b.p, BSC_ELIMIT, err, sizeof(err));
            assert_non_null(strstr(err, "more than 100000 automaton states in total"));
        }
        bsc_buf_cleanup(&b);
    }

    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(bsc_buf_append_cstr(&b, "{\"pattern\":\""), BSC_OK);
    for (int i = 0; i < JS_MAX_PATTERN_LEN; i++)
        assert_int_equal(bsc_buf_append_char(&b, 'a'), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "\"}"), BSC_OK);
    js_free(compile_ok(b.p));
    b.len -= 2;
    assert_int_equal(bsc_buf_append_cstr(&b, "a\"}"), BSC_OK);
    compile_fails(b.p, BSC_ELIMIT, err, sizeof(err));
    assert_non_null(strstr(err, "pattern longer than 4096 bytes"));
    bsc_buf_cleanup(&b);
}

/* ---- instances: strict text, json-c trees ---------------------------------------------------- */

static void test_strict_text(void **state)
{
    static const char *const bad[] = {
        "",          "  ",         "NaN",          "Infinity",      "-Infinity",
        "[1,]",      "{\"a\":1,}", "1 2",          "[1] x",         "01",
        "1.",        ".5",         "+1",           "1e",            "-",
        "tru",       "nul",        "'a'",          "\"a",           "[",
        "{\"a\" 1}", "{a:1}",      "\"\t\"",       "\"\\x\"",       "\"\\ud800\"",
        "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
        "1e400",     "-1e400",     "{\"a\":1,\"a\":1}", "{\"a\\u0000\":1}", "/* c */ 1",
        "[1]\0",
    };
    struct js_schema *s = compile_ok("true");
    struct js_error e;

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad); i++) {
        size_t len = strlen(bad[i]) + (strcmp(bad[i], "[1]") == 0);

        if (js_validate_text(s, bsc_str_make(bad[i], len), &e))
            fail_msg("case %zu \"%s\": accepted", i, bad[i]);
        if (strcmp(e.keyword, "json") != 0 || e.pointer[0] != '\0' ||
            strncmp(e.message, "byte ", 5) != 0)
            fail_msg("case %zu: got \"%s\" %s: %s", i, e.pointer, e.keyword, e.message);
    }
    assert_true(check_text(s, " \t\r\n{\"a\" : [ 1 , -0.5e-3 , \"\\u00e9\\ud83d\\ude00\\/\" ,"
                              " true , false , null ] } \n", &e));
    assert_true(check_text(s, "1e-400", &e));
    assert_false(check_text(s, "{\"k\":1, \"k\":2}", &e));
    assert_string_equal(e.message, "byte 8: duplicate member name");
    js_free(s);
}

/* The parser keeps the values exactly as JSON means them. */
static void test_parse_values(void **state)
{
    struct json_object *o;
    char why[128];

    (void)state;
    assert_int_equal(js__parse(BSC_STR("[9223372036854775807,9223372036854775808,"
                                       "-9223372036854775808,18446744073709551616,"
                                       "\"a\\u0000b\",null]"),
                               64, &o, why, sizeof(why)),
                     BSC_OK);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(o, 0)), INT64_MAX);
    assert_true(json_object_get_uint64(json_object_array_get_idx(o, 1)) ==
                9223372036854775808ull);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(o, 2)), INT64_MIN);
    assert_true(json_object_is_type(json_object_array_get_idx(o, 3), json_type_double));
    assert_int_equal(json_object_get_string_len(json_object_array_get_idx(o, 4)), 3);
    assert_memory_equal(json_object_get_string(json_object_array_get_idx(o, 4)), "a\0b", 3);
    assert_null(json_object_array_get_idx(o, 5));
    json_object_put(o);
    assert_int_equal(js__parse(BSC_STR("null"), 64, &o, why, sizeof(why)), BSC_OK);
    assert_null(o);
}

static void test_json_c_trees(void **state)
{
    struct js_schema *s = compile_ok("{\"type\":[\"null\",\"array\"],\"items\":{\"type\":"
                                     "\"number\"}}");
    struct json_object *arr = json_object_new_array();
    struct js_error e;

    (void)state;
    assert_true(js_validate(s, NULL, &e));
    json_object_array_add(arr, json_object_new_double(1.5));
    assert_true(js_validate(s, arr, &e));
    json_object_array_add(arr, json_object_new_double(NAN));
    assert_false(js_validate(s, arr, &e));
    assert_string_equal(e.pointer, "/1");
    assert_string_equal(e.keyword, "json");
    json_object_put(arr);
    arr = json_object_new_array();
    json_object_array_add(arr, json_object_new_string("\xff"));
    assert_false(js_validate(s, arr, NULL));
    json_object_put(arr);
    js_free(s);
}

/* ---- the pattern engine ---------------------------------------------------------------------- */

static void test_regex_matching(void **state)
{
    static const struct {
        const char *pattern, *subject;
        bool match;
    } cases[] = {
        {"", "", true},
        {"", "abc", true},
        {"abc", "xxabcxx", true},
        {"^abc$", "abc", true},
        {"^abc$", "abcd", false},
        {"^a|b$", "xxb", true},
        {"^(a|b)$", "xxb", false},
        {"^a*$", "", true},
        {"^a+$", "", false},
        {"^a?b$", "b", true},
        {"^a{2,3}$", "aaaa", false},
        {"^a{2,3}$", "aaa", true},
        {"^a{2,}$", "aaaaaaa", true},
        {"^a{2}$", "a", false},
        {"^a{0}b$", "b", true},
        {"^a{,2}$", "a{,2}", true},  /* not a quantifier: literal (Annex B) */
        {"^x{$", "x{", true},
        {"^}]$", "}]", true},
        {"^a*?b+?c??$", "aabbc", true},
        {"^.$", "\xc3\xa9", true},  /* one code point, two bytes */
        {"^..$", "\xc3\xa9", false},
        {"^.$", "\n", false},
        {"^.$", "\xe2\x80\xa8", false}, /* U+2028 is a line terminator */
        {"^[^a]$", "\xf0\x9f\x98\x80", true},
        {"^[\\u00e0-\\u00ff]+$", "\xc3\xa0\xc3\xbf", true},
        {"^[\\u00e0-\\u00ff]+$", "\xc3\x9f", false},
        {"^\\u{1F600}$", "\xf0\x9f\x98\x80", true},
        {"^\\ud83d\\ude00$", "\xf0\x9f\x98\x80", true},
        {"^\\d+$", "0123456789", true},
        {"^\\d+$", "12a", false},
        {"^\\D$", "a", true},
        {"^\\w+$", "a_Z9", true},
        {"^\\w$", "\xc3\xa9", false},
        {"^\\W$", "\xc3\xa9", true},
        {"^\\s$", "\xc2\xa0", true},
        {"^\\s$", "\t", true},
        {"^\\S$", " ", false},
        {"^[\\d.-]+$", "1.5-2", true},
        {"^[\\d.-]+$", "1,5", false},
        {"^[a\\-z]$", "-", true},
        {"^[a\\-z]$", "b", false},
        {"^[-a]$", "-", true},
        {"^[a-]$", "-", true},
        {"^[]$", "", false},
        {"^[]$", "a", false},
        {"[]", "", false},
        {"[]", "abc", false},
        {"^[^]$", "\n", true},
        {"^[\\]]$", "]", true},
        {"^[\\b]$", "\b", true},
        {"\\bfoo\\b", "a foo b", true},
        {"\\bfoo\\b", "afoo", false},
        {"\\Boo", "foo", true},
        {"^\\x41\\t\\n$", "A\t\n", true},
        {"^\\cJ$", "\n", true},
        {"^\\0$", "\0", true}, /* the subject is "\0" of length 1, see below */
        {"^\\.\\*\\/$", ".*/", true},
        {"^(?:ab)+$", "ababab", true},
        {"^(?<year>\\d{4})-(?<m>\\d{2})$", "2024-06", true},
        {"^(a|ab)(c|bcd)(d*)$", "abcd", true},
        {"^(a*)*$", "aaaa", true},
        {"(^.)+b", "xx..b", false}, /* glibc's regexec() says yes; ECMA-262 (node) says no */
        {"(^.)+b", "xb", true},
        {"a+?c", "ac", true},
        {"a+?c", "c", false}, /* POSIX would read "a+?" as "(a+)?" */
        {"^(a*)*b$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac", false},
        {"(x+x+)+y", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", false},
        {"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$", "j.doe+x@mail.example.org", true},
        {"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$", "j.doe@localhost", false},
        {"^$", "", true},
        {"$", "abc", true},
        {"^\\$\\^$", "$^", true},
        {"a|", "zzz", true},
        {"\xc3\xa9+", "\xc3\xa9\xc3\xa9", true},
        {"^caf\xc3\xa9$", "caf\xc3\xa9", true},
        {"^.$", "\xff", true}, /* an ill-formed byte reads as U+FFFD */
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        struct js_regex *re;
        char why[128];
        uint64_t budget = 1000000;
        size_t len = strlen(cases[i].subject);
        int r;

        if (strcmp(cases[i].pattern, "^\\0$") == 0)
            len = 1;
        if (js_regex_compile(cases[i].pattern, strlen(cases[i].pattern), 0, &re, why, sizeof(why)))
            fail_msg("case %zu /%s/: %s", i, cases[i].pattern, why);
        r = js_regex_search(re, cases[i].subject, len, &budget);
        if (r != cases[i].match)
            fail_msg("case %zu /%s/ on \"%s\": got %d", i, cases[i].pattern, cases[i].subject, r);
        js_regex_free(re);
    }
}

static void test_regex_refused(void **state)
{
    static const struct {
        const char *pattern;
        enum bsc_err err;
    } cases[] = {
        {"(?=a)", BSC_EINVAL},   {"(?!a)", BSC_EINVAL},     {"(?<=a)b", BSC_EINVAL},
        {"(?<!a)b", BSC_EINVAL}, {"(a)\\1", BSC_EINVAL},    {"\\k<n>", BSC_EINVAL},
        {"\\p{L}", BSC_EINVAL},  {"\\P{L}", BSC_EINVAL},    {"*a", BSC_EINVAL},
        {"a**", BSC_EINVAL},     {"a{2}{3}", BSC_EINVAL},   {"^*", BSC_EINVAL},
        {"(", BSC_EINVAL},       {")", BSC_EINVAL},         {"a)", BSC_EINVAL},
        {"[a", BSC_EINVAL},      {"[z-a]", BSC_EINVAL},     {"[\\d-z]", BSC_EINVAL},
        {"a{3,2}", BSC_EINVAL},  {"\\", BSC_EINVAL},        {"\\q", BSC_EINVAL},
        {"\\x4", BSC_EINVAL},    {"\\u12", BSC_EINVAL},     {"\\u{110000}", BSC_EINVAL},
        {"\\01", BSC_EINVAL},    {"\\c1", BSC_EINVAL},      {"(?x)", BSC_EINVAL},
        {"\xff", BSC_EINVAL},    {"a{1001}", BSC_ELIMIT},   {"(?<n", BSC_EINVAL},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        struct js_regex *re = (struct js_regex *)(uintptr_t)1;
        char why[128] = "";
        enum bsc_err err = js_regex_compile(cases[i].pattern, strlen(cases[i].pattern), 0, &re, why,
                                              sizeof(why));

        if (err != cases[i].err)
            fail_msg("case %zu /%s/: got %d (%s)", i, cases[i].pattern, err, why);
        assert_null(re);
        assert_true(why[0] != '\0');
    }
}

/* The search is linear in the subject: a pattern that backtracking engines take exponential
 * time on stays well under the budget, and the budget is charged and enforced. */
static void test_regex_budget(void **state)
{
    struct js_regex *re;
    char why[128], subject[4096];
    uint64_t budget = 1000000;

    (void)state;
    memset(subject, 'a', sizeof(subject));
    assert_int_equal(js_regex_compile("^(a|aa)*(a|aa)*$b", 17, 0, &re, why, sizeof(why)), BSC_OK);
    assert_int_equal(js_regex_search(re, subject, sizeof(subject), &budget), 0);
    assert_true(budget < 1000000 && budget > 0);
    budget = 10;
    assert_int_equal(js_regex_search(re, subject, sizeof(subject), &budget), -BSC_ELIMIT);
    assert_int_equal(budget, 0);
    js_regex_free(re);
}

/* ---- numbers --------------------------------------------------------------------------------- */

static void test_number_compare(void **state)
{
    const struct js__num i_max = {JS__NUM_I64, {.i = INT64_MAX}};
    const struct js__num u_big = {JS__NUM_U64, {.u = (uint64_t)INT64_MAX + 1}};
    const struct js__num d_2_63 = {JS__NUM_DBL, {.d = 9223372036854775808.0}};
    const struct js__num d_half = {JS__NUM_DBL, {.d = 0.5}};
    const struct js__num i_0 = {JS__NUM_I64, {.i = 0}};
    const struct js__num i_m1 = {JS__NUM_I64, {.i = -1}};
    const struct js__num d_m05 = {JS__NUM_DBL, {.d = -0.5}};
    const struct js__num i_2_53p1 = {JS__NUM_I64, {.i = 9007199254740993LL}};
    const struct js__num d_2_53 = {JS__NUM_DBL, {.d = 9007199254740992.0}};

    (void)state;
    assert_int_equal(js__num_cmp(&i_max, &u_big), -1);
    assert_int_equal(js__num_cmp(&u_big, &i_max), 1);
    assert_int_equal(js__num_cmp(&u_big, &d_2_63), 0);
    assert_int_equal(js__num_cmp(&i_max, &d_2_63), -1);
    assert_int_equal(js__num_cmp(&i_0, &d_half), -1);
    assert_int_equal(js__num_cmp(&d_half, &i_0), 1);
    assert_int_equal(js__num_cmp(&i_m1, &d_m05), -1);
    assert_int_equal(js__num_cmp(&i_0, &d_m05), 1);
    /* 2^53 + 1 is not 2^53, though both are the same double. */
    assert_int_equal(js__num_cmp(&i_2_53p1, &d_2_53), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyword_table),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_long_pointer),
        cmocka_unit_test(test_ref_tree),
        cmocka_unit_test(test_ref_forward_and_mutual),
        cmocka_unit_test(test_unsupported_keywords),
        cmocka_unit_test(test_schema_outlives_document),
        cmocka_unit_test(test_limit_schema_depth),
        cmocka_unit_test(test_limit_schema_nodes),
        cmocka_unit_test(test_limit_ref_chain),
        cmocka_unit_test(test_limit_instance_depth),
        cmocka_unit_test(test_limit_steps),
        cmocka_unit_test(test_limit_eval_depth),
        cmocka_unit_test(test_limit_patterns),
        cmocka_unit_test(test_strict_text),
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_json_c_trees),
        cmocka_unit_test(test_regex_matching),
        cmocka_unit_test(test_regex_refused),
        cmocka_unit_test(test_regex_budget),
        cmocka_unit_test(test_number_compare),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
