/* SPDX-License-Identifier: MIT */
/* schema_gen.c -- a small value valid against a JSON Schema, for bascule-sim's default
 * answers to requests that carry one. A schema is first flattened ($ref resolved inside
 * the document, allOf merged, one anyOf/oneOf branch taken), then its type decides the
 * value. Strings with a pattern or an asserted format are checked with the gateway's own
 * validator (contract/jsonschema.h): the generator proposes, the validator disposes. It
 * does not search for instances of `not`, overlapping oneOf branches or conditionals.
 * See docs/internals/sim.md. */
#include "schema_gen.h"
#include "core/json_get.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "content.h"
#include "sjson.h"

#include "contract/jsonschema.h"
#include "core/compat.h"

#define GEN_MAX_GROUPS    64u  /* nested groups in a pattern */
#define GEN_MAX_CLASS     256u /* items of one character class */
#define GEN_MAX_STRETCH   64u  /* quantifier stretch tried for a pattern with minLength */
#define GEN_PTR_MAX       1024u /* bytes of a decoded $ref */

struct gen {
    struct json_object *root; /* borrowed: where "#..." references resolve */
    size_t nodes;             /* values generated so far, against SIM_SCHEMA_MAX_NODES */
    bool deep;                /* the value being generated is at SIM_SCHEMA_SOFT_DEPTH or
                                 deeper: null wins where it is allowed, so recursion ends */
};

enum gen_type { GT_ANY = 0, GT_NULL, GT_BOOL, GT_OBJECT, GT_ARRAY, GT_NUMBER, GT_INTEGER,
                GT_STRING, GT_COUNT };

static enum bsc_err gen_value(struct gen *g, struct json_object *s, const char *name,
                              unsigned depth, unsigned variant, struct json_object **out);

/* ---- json-c helpers ---- */

static bool has(struct json_object *o, const char *key)
{
    return o && json_object_is_type(o, json_type_object) &&
           json_object_object_get_ex(o, key, NULL);
}

static bool is_number(struct json_object *v)
{
    return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

/* A non-negative integer member (minItems, maxLength, ...), else <dflt>. */
static size_t count_of(struct json_object *o, const char *key, size_t dflt)
{
    struct json_object *v = bsc_json_get(o, key);
    double d;

    if (json_object_is_type(v, json_type_string)) { /* Gemini's int64 fields: "minItems": "2" */
        const char *t = json_object_get_string(v);
        if (!*t || strspn(t, "0123456789") != strlen(t) || strlen(t) > 15)
            return dflt;
        return (size_t)strtoull(t, NULL, 10);
    }
    if (!is_number(v))
        return dflt;
    d = json_object_get_double(v);
    if (d < 0 || d != floor(d))
        return dflt;
    return d >= (double)SIZE_MAX ? SIZE_MAX : (size_t)d;
}

/* A copy of <v> (NULL for JSON null) into *<out>. */
static enum bsc_err copy_value(struct json_object *v, struct json_object **out)
{
    *out = NULL;
    if (!v)
        return BSC_OK;
    return json_object_deep_copy(v, out, NULL) == 0 ? BSC_OK : BSC_ENOMEM;
}

/* ---- $ref ---- */

/* One pointer token <tok> (<n> bytes, ~0 and ~1 escaped) of an already percent-decoded
 * pointer, looked up in <cur>. */
static struct json_object *ptr_step(struct json_object *cur, const char *tok, size_t n)
{
    char name[GEN_PTR_MAX];
    size_t len = 0;
    struct json_object *v = NULL;

    for (size_t i = 0; i < n; i++) {
        char c = tok[i];
        if (c == '~' && i + 1 < n && (tok[i + 1] == '0' || tok[i + 1] == '1'))
            c = tok[++i] == '0' ? '~' : '/';
        name[len++] = c;
    }
    name[len] = '\0';
    if (json_object_is_type(cur, json_type_object))
        return json_object_object_get_ex(cur, name, &v) ? v : NULL;
    if (json_object_is_type(cur, json_type_array) && len > 0 && len < 10 &&
        strspn(name, "0123456789") == len && (len == 1 || name[0] != '0')) {
        size_t idx = (size_t)strtoul(name, NULL, 10);
        return idx < json_object_array_length(cur) ? json_object_array_get_idx(cur, idx) : NULL;
    }
    return NULL;
}

/* The schema "#" or "#/<pointer>" names inside <root>, or NULL (other references are
 * not resolved: the gateway refuses them too). */
static struct json_object *resolve_ref(struct json_object *root, const char *ref)
{
    char ptr[GEN_PTR_MAX];
    size_t len = 0;
    struct json_object *cur = root;

    if (ref[0] != '#')
        return NULL;
    for (const char *p = ref + 1; *p; p++) { /* URI fragment: percent-decoded first */
        int hi, lo;
        if (len + 1 >= sizeof(ptr))
            return NULL;
        if (*p == '%' && (hi = bsc_hex_digit(p[1])) >= 0 && (lo = bsc_hex_digit(p[2])) >= 0) {
            ptr[len++] = (char)(hi * 16 + lo);
            p += 2;
        } else {
            ptr[len++] = *p;
        }
    }
    if (len == 0)
        return root;
    if (ptr[0] != '/')
        return NULL;
    for (size_t i = 0; i < len && cur;) {
        size_t from = ++i;
        while (i < len && ptr[i] != '/')
            i++;
        cur = ptr_step(cur, ptr + from, i - from);
    }
    return cur;
}

/* ---- flattening: $ref, allOf, anyOf, oneOf ---- */

static bool key_in(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0)
            return true;
    return false;
}

static const char *const min_keys[] = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                       "minProperties"};
static const char *const max_keys[] = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                       "maxProperties"};
static const char *const schema_keys[] = {"items", "additionalProperties"};

/* {"allOf": [a, b]}: both apply to one member or item. */
static struct json_object *both(struct json_object *a, struct json_object *b)
{
    struct json_object *o = json_object_new_object(), *list = json_object_new_array();

    if (!o || !list) {
        json_object_put(o);
        json_object_put(list);
        return NULL;
    }
    json_object_array_add(list, json_object_get(a));
    json_object_array_add(list, json_object_get(b));
    json_object_object_add(o, "allOf", list);
    return o;
}

static struct json_object *merge_properties(struct json_object *a, struct json_object *b)
{
    struct json_object *o = json_object_new_object(), *cur;

    if (!o)
        return NULL;
    json_object_object_foreach(a, ka, va)
    {
        json_object_object_add(o, ka, json_object_get(va));
    }
    json_object_object_foreach(b, kb, vb)
    {
        cur = bsc_json_get(o, kb);
        json_object_object_add(o, kb, cur ? both(cur, vb) : json_object_get(vb));
    }
    return o;
}

static bool array_has(struct json_object *arr, struct json_object *v)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (json_object_equal(json_object_array_get_idx(arr, i), v))
            return true;
    return false;
}

/* "required" of both. */
static struct json_object *merge_union(struct json_object *a, struct json_object *b)
{
    struct json_object *o = json_object_new_array();

    for (size_t i = 0; o && i < json_object_array_length(a); i++)
        json_object_array_add(o, json_object_get(json_object_array_get_idx(a, i)));
    for (size_t i = 0; o && i < json_object_array_length(b); i++)
        if (!array_has(o, json_object_array_get_idx(b, i)))
            json_object_array_add(o, json_object_get(json_object_array_get_idx(b, i)));
    return o;
}

static bool type_allows(struct json_object *type, const char *name)
{
    if (json_object_is_type(type, json_type_string))
        return strcasecmp(json_object_get_string(type), name) == 0 ||
               (strcasecmp(name, "integer") == 0 &&
                strcasecmp(json_object_get_string(type), "number") == 0);
    for (size_t i = 0; json_object_is_type(type, json_type_array) &&
                       i < json_object_array_length(type);
         i++)
        if (type_allows(json_object_array_get_idx(type, i), name))
            return true;
    return false;
}

/* The types both "type" values allow, in <a>'s order ("integer" where one says number and
 * the other integer); NULL when nothing is left (the first value then stays). */
static struct json_object *merge_types(struct json_object *a, struct json_object *b)
{
    struct json_object *o = json_object_new_array();
    bool list = json_object_is_type(a, json_type_array);
    size_t n = list ? json_object_array_length(a) : 1;

    for (size_t i = 0; o && i < n; i++) {
        struct json_object *t = list ? json_object_array_get_idx(a, i) : a;
        const char *name;
        if (!json_object_is_type(t, json_type_string))
            continue;
        name = json_object_get_string(t);
        if (strcasecmp(name, "number") == 0 && !type_allows(b, "number"))
            name = "integer";
        if (type_allows(b, name))
            json_object_array_add(o, json_object_new_string(name));
    }
    if (o && json_object_array_length(o) == 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* The enum values of <a> that <b> also lists; NULL when none are. */
static struct json_object *merge_enums(struct json_object *a, struct json_object *b)
{
    struct json_object *o = json_object_new_array();

    for (size_t i = 0; o && i < json_object_array_length(a); i++)
        if (array_has(b, json_object_array_get_idx(a, i)))
            json_object_array_add(o, json_object_get(json_object_array_get_idx(a, i)));
    if (o && json_object_array_length(o) == 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* What <dst>'s value <cur> and <v> for keyword <k> amount to together: a new reference, or
 * NULL to keep <cur>. */
static struct json_object *merge_keyword(const char *k, struct json_object *cur,
                                         struct json_object *v)
{
    bool arrays = json_object_is_type(cur, json_type_array) &&
                  json_object_is_type(v, json_type_array);

    if (strcmp(k, "properties") == 0 && json_object_is_type(cur, json_type_object) &&
        json_object_is_type(v, json_type_object))
        return merge_properties(cur, v);
    if (strcmp(k, "required") == 0 && arrays)
        return merge_union(cur, v);
    if (strcmp(k, "enum") == 0 && arrays)
        return merge_enums(cur, v);
    if (strcmp(k, "type") == 0)
        return merge_types(cur, v);
    if (key_in(k, min_keys, BSC_ARRAY_LEN(min_keys)) && is_number(cur) && is_number(v))
        return json_object_get_double(v) > json_object_get_double(cur) ? json_object_get(v)
                                                                        : NULL;
    if (key_in(k, max_keys, BSC_ARRAY_LEN(max_keys)) && is_number(cur) && is_number(v))
        return json_object_get_double(v) < json_object_get_double(cur) ? json_object_get(v)
                                                                        : NULL;
    if (key_in(k, schema_keys, BSC_ARRAY_LEN(schema_keys)))
        return both(cur, v);
    return NULL; /* anything else: the first schema's value stays */
}

/* Adds what the flat schema <b> says to <dst>, a schema object of our own. */
static void merge_into(struct json_object *dst, struct json_object *b)
{
    json_object_object_foreach(b, k, v)
    {
        struct json_object *cur = NULL, *merged;
        if (strcmp(k, "$defs") == 0 || strcmp(k, "definitions") == 0)
            continue; /* references resolve against the root, not here */
        if (!json_object_object_get_ex(dst, k, &cur)) {
            json_object_object_add(dst, k, json_object_get(v));
            continue;
        }
        merged = merge_keyword(k, cur, v);
        if (merged)
            json_object_object_add(dst, k, merged); /* puts <cur> */
    }
}

/* A schema object holding <s>'s members but <skip>; NULL when memory ran out. */
static struct json_object *without(struct json_object *s, const char *skip)
{
    struct json_object *o = json_object_new_object();

    if (!o)
        return NULL;
    json_object_object_foreach(s, k, v)
    {
        if (strcmp(k, skip) != 0)
            json_object_object_add(o, k, json_object_get(v));
    }
    return o;
}

/* A branch that only allows null: {"type":"null"}, {"const":null}, {"enum":[null]}. */
static bool null_only(struct json_object *b)
{
    struct json_object *t = bsc_json_get(b, "type"), *e = bsc_json_get(b, "enum");

    if (t && json_object_is_type(t, json_type_string))
        return strcasecmp(json_object_get_string(t), "null") == 0;
    if (has(b, "const"))
        return bsc_json_get(b, "const") == NULL;
    return e && json_object_is_type(e, json_type_array) && json_object_array_length(e) == 1 &&
           json_object_array_get_idx(e, 0) == NULL;
}

/* The first branch that is not just null (deep down: the first that is). */
static struct json_object *pick_branch(struct json_object *list, bool deep)
{
    size_t n = json_object_array_length(list);

    for (size_t i = 0; i < n; i++)
        if (null_only(json_object_array_get_idx(list, i)) == deep)
            return json_object_array_get_idx(list, i);
    for (size_t i = 0; deep && i < n; i++)
        if (!null_only(json_object_array_get_idx(list, i)))
            return json_object_array_get_idx(list, i);
    return n ? json_object_array_get_idx(list, 0) : NULL;
}

static struct json_object *flatten(struct gen *g, struct json_object *s, unsigned *hops);

/* <rest> (owned) with the flattened <part> merged in; NULL when memory ran out. */
static struct json_object *merge_with(struct gen *g, struct json_object *rest,
                                      struct json_object *part, unsigned *hops)
{
    struct json_object *f;

    if (!rest || !part)
        return rest;
    f = flatten(g, part, hops);
    if (f && json_object_is_type(f, json_type_object))
        merge_into(rest, f);
    json_object_put(f);
    return rest;
}

/* One expansion of the first applicator <cur> has; NULL when it has none left (or
 * memory ran out: *<oom>). */
static struct json_object *expand(struct gen *g, struct json_object *cur, unsigned *hops,
                                  bool *oom)
{
    struct json_object *ref = bsc_json_get(cur, "$ref"), *list, *next = NULL;

    *oom = false;
    if (ref && json_object_is_type(ref, json_type_string)) {
        next = merge_with(g, without(cur, "$ref"),
                          resolve_ref(g->root, json_object_get_string(ref)), hops);
    } else if ((list = bsc_json_get(cur, "allOf")) && json_object_is_type(list, json_type_array)) {
        next = without(cur, "allOf");
        for (size_t i = 0; next && i < json_object_array_length(list); i++)
            next = merge_with(g, next, json_object_array_get_idx(list, i), hops);
    } else {
        const char *key = has(cur, "anyOf") ? "anyOf" : has(cur, "oneOf") ? "oneOf" : NULL;
        list = key ? bsc_json_get(cur, key) : NULL;
        if (!list || !json_object_is_type(list, json_type_array))
            return NULL;
        next = merge_with(g, without(cur, key), pick_branch(list, g->deep), hops);
    }
    *oom = next == NULL;
    return next;
}

/* <s> without $ref, allOf, anyOf or oneOf at its top, as a new reference (NULL: out of
 * memory). Past SIM_SCHEMA_MAX_HOPS expansions what is left is ignored. */
static struct json_object *flatten(struct gen *g, struct json_object *s, unsigned *hops)
{
    struct json_object *cur = json_object_get(s), *next;
    bool oom = false;

    while (cur && json_object_is_type(cur, json_type_object) && *hops < SIM_SCHEMA_MAX_HOPS) {
        (*hops)++;
        next = expand(g, cur, hops, &oom);
        if (!next)
            break;
        json_object_put(cur);
        cur = next;
    }
    if (oom) {
        json_object_put(cur);
        return NULL;
    }
    return cur;
}

/* ---- types ---- */

static enum gen_type type_named(const char *t)
{
    static const char *const names[GT_COUNT] = {
        [GT_NULL] = "null",     [GT_BOOL] = "boolean",    [GT_OBJECT] = "object",
        [GT_ARRAY] = "array",   [GT_NUMBER] = "number",   [GT_INTEGER] = "integer",
        [GT_STRING] = "string",
    };

    for (int i = GT_NULL; i < GT_COUNT; i++)
        if (strcasecmp(t, names[i]) == 0) /* Gemini's OpenAPI schemas say "STRING" */
            return (enum gen_type)i;
    return GT_ANY;
}

/* Keywords that only mean something for one type. */
static enum gen_type type_inferred(struct json_object *f)
{
    static const struct {
        const char *key;
        enum gen_type type;
    } hints[] = {
        {"properties", GT_OBJECT},        {"required", GT_OBJECT},
        {"additionalProperties", GT_OBJECT}, {"patternProperties", GT_OBJECT},
        {"minProperties", GT_OBJECT},     {"items", GT_ARRAY},
        {"prefixItems", GT_ARRAY},        {"minItems", GT_ARRAY},   {"maxItems", GT_ARRAY},
        {"minLength", GT_STRING},       {"maxLength", GT_STRING}, {"pattern", GT_STRING},
        {"format", GT_STRING},          {"minimum", GT_NUMBER},   {"maximum", GT_NUMBER},
        {"exclusiveMinimum", GT_NUMBER}, {"exclusiveMaximum", GT_NUMBER},
        {"multipleOf", GT_NUMBER},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(hints); i++)
        if (has(f, hints[i].key))
            return hints[i].type;
    return GT_ANY;
}

/* The type to generate: the first non-null one named (deep down: null when named), else
 * inferred. */
static enum gen_type pick_type(struct json_object *f, bool deep)
{
    struct json_object *t = bsc_json_get(f, "type");
    enum gen_type first = GT_ANY;
    bool saw_null = false;

    if (t && json_object_is_type(t, json_type_string))
        return type_named(json_object_get_string(t));
    for (size_t i = 0; t && json_object_is_type(t, json_type_array) &&
                       i < json_object_array_length(t);
         i++) {
        struct json_object *e = json_object_array_get_idx(t, i);
        enum gen_type gt = json_object_is_type(e, json_type_string)
                               ? type_named(json_object_get_string(e))
                               : GT_ANY;
        if (gt == GT_NULL && deep)
            return GT_NULL;
        if (gt == GT_NULL)
            saw_null = true;
        else if (gt != GT_ANY && !first)
            first = gt;
    }
    if (first)
        return first;
    return saw_null ? GT_NULL : type_inferred(f);
}

/* ---- strings ---- */

static size_t cp_count(struct bsc_str s)
{
    size_t n = 0;

    for (size_t off = 0; off < s.len; n++) {
        size_t k = sim_utf8_char_len(bsc_str_make(s.p + off, s.len - off));
        off += k ? k : 1;
    }
    return n;
}

/* Byte length of the first <cps> code points of <s>. */
static size_t cp_prefix(struct bsc_str s, size_t cps)
{
    size_t off = 0;

    while (cps-- && off < s.len) {
        size_t k = sim_utf8_char_len(bsc_str_make(s.p + off, s.len - off));
        off += k ? k : 1;
    }
    return off;
}

/* Text for a string member named <name>: a word that fits the name, else "sample". */
static const char *hint_for(const char *name)
{
    static const struct {
        const char *key; /* lower-case, no separators */
        const char *text;
    } hints[] = {
        {"firstname", "Ada"},          {"lastname", "Lovelace"},
        {"username", "ada"},           {"email", "ada@example.com"},
        {"city", "Oslo"},              {"country", "Norway"},
        {"location", "Oslo, Norway"},  {"address", "Karl Johans gate 1, Oslo"},
        {"name", "Ada Lovelace"},      {"phone", "+47 22 00 00 00"},
        {"language", "en"},            {"currency", "EUR"},
        {"unit", "celsius"},           {"title", "A short title"},
        {"description", "A short description."},
        {"summary", "A short summary."},
        {"query", "weather in Oslo"},  {"url", "https://example.com/"},
        {"date", "2024-01-01"},        {"timezone", "Europe/Oslo"},
        {"color", "blue"},             {"answer", "Hello from bascule-sim"},
        {"text", "Hello from bascule-sim"},
        {"message", "Hello from bascule-sim"},
    };
    char norm[64];
    size_t n = 0, last = 0; /* <norm>: the name lower-cased without separators; <last>:
                               where its last word starts ("destination_city", "cityName") */
    bool lower = false, sep = false;

    for (const char *p = name; p && *p && n + 1 < sizeof(norm); p++) {
        char c = *p;
        bool up = c >= 'A' && c <= 'Z';
        if (!up && !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9')) {
            sep = true;
            lower = false;
            continue;
        }
        if (n && (sep || (up && lower)))
            last = n;
        norm[n++] = up ? (char)(c - 'A' + 'a') : c;
        lower = !up;
        sep = false;
    }
    norm[n] = '\0';
    for (size_t i = 0; n && i < BSC_ARRAY_LEN(hints); i++)
        if (strcmp(norm, hints[i].key) == 0 || strcmp(norm + last, hints[i].key) == 0)
            return hints[i].text;
    return "sample";
}

/* Plain text for <name> within [<min_cps>, <max_cps>] code points; item <variant> of an
 * array gets " <variant+1>" so items differ. */
static enum bsc_err plain_text(const char *name, unsigned variant, size_t min_cps,
                               size_t max_cps, struct bsc_buf *out)
{
    const char *base = hint_for(name);
    enum bsc_err err = bsc_buf_append_cstr(out, base);

    if (!err && variant)
        err = bsc_buf_appendf(out, " %u", variant + 1);
    if (!err && variant && cp_count(bsc_buf_str(out)) > max_cps) {
        bsc_buf_reset(out); /* too short for the word: the number alone keeps items apart */
        err = bsc_buf_appendf(out, "%u", variant + 1);
    }
    for (size_t have = cp_count(bsc_buf_str(out)), step = 1 + cp_count(bsc_str_cstr(base));
         !err && have < min_cps; have += step)
        err = bsc_buf_appendf(out, " %s", base);
    if (!err && max_cps != SIZE_MAX)
        out->len = cp_prefix(bsc_buf_str(out), max_cps);
    if (out->p)
        out->p[out->len] = '\0';
    return err;
}

/* A sample of an asserted (or common) format; BSC_EINVAL when we know none. */
static enum bsc_err format_sample(const char *format, unsigned variant, struct bsc_buf *out)
{
    unsigned v = variant;

    if (strcmp(format, "date-time") == 0)
        return bsc_buf_appendf(out, "2024-01-%02uT12:00:00Z", 1 + v % 28);
    if (strcmp(format, "date") == 0)
        return bsc_buf_appendf(out, "2024-01-%02u", 1 + v % 28);
    if (strcmp(format, "time") == 0)
        return bsc_buf_appendf(out, "12:%02u:00Z", v % 60);
    if (strcmp(format, "uuid") == 0)
        return bsc_buf_appendf(out, "123e4567-e89b-42d3-a456-%012llx",
                               0x426614174000ull + v);
    if (strcmp(format, "ipv4") == 0)
        return bsc_buf_appendf(out, "192.0.2.%u", 1 + v % 254);
    if (strcmp(format, "ipv6") == 0)
        return bsc_buf_appendf(out, "2001:db8::%x", 1 + v % 0xfffe);
    if (strcmp(format, "email") == 0 || strcmp(format, "idn-email") == 0)
        return v ? bsc_buf_appendf(out, "ada%u@example.com", v + 1)
                 : bsc_buf_append_cstr(out, "ada@example.com");
    if (strcmp(format, "hostname") == 0 || strcmp(format, "idn-hostname") == 0)
        return bsc_buf_appendf(out, "host%u.example.com", v + 1);
    if (strncmp(format, "uri", 3) == 0 || strncmp(format, "iri", 3) == 0 ||
        strcmp(format, "url") == 0)
        return bsc_buf_appendf(out, "https://example.com/%u", v + 1);
    if (strcmp(format, "duration") == 0)
        return bsc_buf_appendf(out, "PT%uH", v + 1);
    return BSC_EINVAL;
}

/* A schema with only the string keywords of <f>, compiled: what a candidate must pass. */
static struct js_schema *string_check(struct json_object *f)
{
    static const char *const keys[] = {"minLength", "maxLength", "pattern", "format"};
    struct json_object *o = json_object_new_object();
    struct js_schema *s = NULL;

    if (!o)
        return NULL;
    json_object_object_add(o, "type", json_object_new_string("string"));
    for (size_t i = 0; i < BSC_ARRAY_LEN(keys); i++)
        if (bsc_json_get(f, keys[i]))
            json_object_object_add(o, keys[i], json_object_get(bsc_json_get(f, keys[i])));
    if (js_compile(o, &s, NULL, 0) != BSC_OK)
        s = NULL;
    json_object_put(o);
    return s;
}

static bool passes(const struct js_schema *check, struct bsc_str text)
{
    struct json_object *v = json_object_new_string_len(text.p ? text.p : "", (int)text.len);
    bool ok = v && js_validate(check, v, NULL);

    json_object_put(v);
    return ok;
}

/* Candidates for a string with a pattern or format, first valid one wins: the format's
 * sample, the pattern's samples (stretched until minLength is met), the first example,
 * the default. False when none passes. */
static bool checked_text(struct json_object *f, unsigned variant, const struct js_schema *check,
                         struct bsc_buf *out)
{
    struct json_object *pat = bsc_json_get(f, "pattern"), *fmt = bsc_json_get(f, "format");
    struct json_object *ex = bsc_json_get(f, "examples"), *dflt = bsc_json_get(f, "default");

    if (fmt && json_object_is_type(fmt, json_type_string) &&
        format_sample(json_object_get_string(fmt), variant, out) == BSC_OK &&
        passes(check, bsc_buf_str(out)))
        return true;
    for (unsigned st = 0; pat && json_object_is_type(pat, json_type_string) &&
                          st <= GEN_MAX_STRETCH;
         st = st ? st * 2 : 1) {
        struct bsc_str p = bsc_str_make(json_object_get_string(pat),
                                        (size_t)json_object_get_string_len(pat));
        bsc_buf_reset(out);
        if (sim_schema_pattern_sample(p, st + variant, out) == BSC_OK &&
            passes(check, bsc_buf_str(out)))
            return true;
    }
    if (ex && json_object_is_type(ex, json_type_array))
        ex = json_object_array_get_idx(ex, 0);
    for (int i = 0; i < 2; i++) {
        struct json_object *v = i == 0 ? ex : dflt;
        if (!v || !json_object_is_type(v, json_type_string))
            continue;
        bsc_buf_reset(out);
        if (bsc_buf_append(out, json_object_get_string(v),
                           (size_t)json_object_get_string_len(v)) == BSC_OK &&
            passes(check, bsc_buf_str(out)))
            return true;
    }
    return false;
}

static enum bsc_err gen_string(struct json_object *f, const char *name, unsigned variant,
                               struct json_object **out)
{
    struct bsc_buf text;
    struct js_schema *check = NULL;
    enum bsc_err err = BSC_OK;
    bool done = false;

    bsc_buf_init(&text, SIM_SCHEMA_MAX_TEXT);
    if (has(f, "pattern") || has(f, "format")) {
        check = string_check(f);
        done = check && checked_text(f, variant, check, &text);
        js_free(check);
    }
    if (!done) { /* plain text; best effort when a pattern could not be met */
        bsc_buf_reset(&text);
        err = plain_text(name, variant, count_of(f, "minLength", 0),
                         count_of(f, "maxLength", SIZE_MAX), &text);
    }
    if (!err) {
        *out = json_object_new_string_len(text.p ? text.p : "", (int)text.len);
        err = *out ? BSC_OK : BSC_ENOMEM;
    }
    bsc_buf_cleanup(&text);
    return err;
}

/* ---- numbers ---- */

struct bounds {
    bool has_lo, lo_excl, has_hi, hi_excl;
    double lo, hi;
};

static struct bounds bounds_of(struct json_object *f)
{
    struct bounds b = {0};
    struct json_object *v;

    if (is_number(v = bsc_json_get(f, "minimum")))
        b.has_lo = true, b.lo = json_object_get_double(v);
    if (is_number(v = bsc_json_get(f, "exclusiveMinimum")) &&
        (!b.has_lo || json_object_get_double(v) >= b.lo))
        b.has_lo = b.lo_excl = true, b.lo = json_object_get_double(v);
    else if (json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v))
        b.lo_excl = b.has_lo; /* draft-04 form */
    if (is_number(v = bsc_json_get(f, "maximum")))
        b.has_hi = true, b.hi = json_object_get_double(v);
    if (is_number(v = bsc_json_get(f, "exclusiveMaximum")) &&
        (!b.has_hi || json_object_get_double(v) <= b.hi))
        b.has_hi = b.hi_excl = true, b.hi = json_object_get_double(v);
    else if (json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v))
        b.hi_excl = b.has_hi;
    return b;
}

static bool above_lo(const struct bounds *b, double x)
{
    return !b->has_lo || (b->lo_excl ? x > b->lo : x >= b->lo);
}

static bool below_hi(const struct bounds *b, double x)
{
    return !b->has_hi || (b->hi_excl ? x < b->hi : x <= b->hi);
}

/* <want> moved inside the bounds (integers: onto whole numbers). */
static double clamp(const struct bounds *b, double want, bool integer)
{
    double x = want;

    if (!above_lo(b, x)) {
        x = integer ? (b->lo_excl ? floor(b->lo) + 1 : ceil(b->lo))
                    : (b->lo_excl ? (b->has_hi ? (b->lo + b->hi) / 2 : b->lo + 1) : b->lo);
    }
    if (!below_hi(b, x)) {
        x = integer ? (b->hi_excl ? ceil(b->hi) - 1 : floor(b->hi))
                    : (b->hi_excl ? (b->has_lo ? (b->lo + b->hi) / 2 : b->hi - 1) : b->hi);
    }
    return x;
}

/* The multiple of <m> nearest above <x> inside the bounds (integers: also whole), else
 * the one below, else <x>. */
static double onto_multiple(const struct bounds *b, double x, double m, bool integer)
{
    double k = ceil(x / m);

    for (int step = 0; step < 1000; step++, k++) { /* whole multiples of a fraction */
        double v = k * m;
        if (!below_hi(b, v))
            break;
        if (above_lo(b, v) && (!integer || v == floor(v)))
            return v;
    }
    k = floor(x / m);
    for (int step = 0; step < 1000; step++, k--) {
        double v = k * m;
        if (!above_lo(b, v))
            break;
        if (below_hi(b, v) && (!integer || v == floor(v)))
            return v;
    }
    return x;
}

static enum bsc_err gen_number(struct json_object *f, unsigned variant, bool integer,
                               struct json_object **out)
{
    struct bounds b = bounds_of(f);
    struct json_object *mv = bsc_json_get(f, "multipleOf");
    double m = is_number(mv) ? json_object_get_double(mv) : 0;
    double x = clamp(&b, 1.0, integer), next;
    char text[64];

    next = x + (m > 0 && isfinite(m) ? m : 1.0) * variant; /* items differ when they can */
    if (below_hi(&b, next))
        x = next;

    if (m > 0 && isfinite(m))
        x = onto_multiple(&b, x, m, integer);
    if (!isfinite(x))
        x = 0;
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
        *out = json_object_new_int64((int64_t)x);
    } else {
        /* The shortest text that reads back as <x>, not json-c's %.17g. */
        snprintf(text, sizeof(text), "%.15g", x);
        if (strtod(text, NULL) != x)
            snprintf(text, sizeof(text), "%.17g", x);
        *out = json_object_new_double_s(x, text);
    }
    return *out ? BSC_OK : BSC_ENOMEM;
}

/* ---- objects and arrays ---- */

/* The schema of member <key>: its property, else additionalProperties, else anything. */
static struct json_object *member_schema(struct json_object *f, const char *key)
{
    struct json_object *props = bsc_json_get(f, "properties"), *v;

    if (has(props, key))
        return bsc_json_get(props, key);
    v = bsc_json_get(f, "additionalProperties");
    return v && !json_object_is_type(v, json_type_boolean) ? v : NULL;
}

static bool is_false(struct json_object *s)
{
    return s && json_object_is_type(s, json_type_boolean) && !json_object_get_boolean(s);
}

static enum bsc_err add_member(struct gen *g, struct json_object *obj, const char *key,
                               struct json_object *sub, unsigned depth, unsigned variant)
{
    struct json_object *v = NULL;
    enum bsc_err err = gen_value(g, sub, key, depth + 1, variant, &v);

    if (err)
        return err;
    if (json_object_object_add(obj, key, v) != 0) {
        json_object_put(v);
        return BSC_ENOMEM;
    }
    return BSC_OK;
}

/* The first declared property not in <obj> whose schema is not false, or NULL. */
static const char *next_declared(struct json_object *f, struct json_object *obj)
{
    struct json_object *props = bsc_json_get(f, "properties");

    if (!props || !json_object_is_type(props, json_type_object))
        return NULL;
    json_object_object_foreach(props, k, v)
    {
        if (!has(obj, k) && !is_false(v))
            return k;
    }
    return NULL;
}

static enum bsc_err fill_object(struct gen *g, struct json_object *f, struct json_object *obj,
                                unsigned depth, unsigned variant)
{
    struct json_object *req = bsc_json_get(f, "required"), *addl = bsc_json_get(f, "additionalProperties");
    size_t minp = count_of(f, "minProperties", 0), maxp = count_of(f, "maxProperties", SIZE_MAX);
    enum bsc_err err = BSC_OK;
    const char *key;
    char synth[32];

    for (size_t i = 0; !err && req && json_object_is_type(req, json_type_array) &&
                       i < json_object_array_length(req);
         i++) {
        struct json_object *k = json_object_array_get_idx(req, i);
        if (json_object_is_type(k, json_type_string) && !has(obj, json_object_get_string(k)))
            err = add_member(g, obj, json_object_get_string(k),
                             member_schema(f, json_object_get_string(k)), depth, variant);
    }
    if (!err && json_object_object_length(obj) == 0 && depth < SIM_SCHEMA_SOFT_DEPTH &&
        maxp > 0 && (key = next_declared(f, obj)))
        err = add_member(g, obj, key, member_schema(f, key), depth, variant);
    for (unsigned n = 1; !err && (size_t)json_object_object_length(obj) < minp; n++) {
        key = next_declared(f, obj);
        if (!key) {
            if (is_false(addl) || n > SIM_SCHEMA_MAX_NODES)
                break;
            snprintf(synth, sizeof(synth), "key%u", n);
            key = synth;
            if (has(obj, key))
                continue;
        }
        err = add_member(g, obj, key, member_schema(f, key), depth, variant);
    }
    return err;
}

static enum bsc_err gen_object(struct gen *g, struct json_object *f, unsigned depth,
                               unsigned variant, struct json_object **out)
{
    enum bsc_err err;

    *out = json_object_new_object();
    if (!*out)
        return BSC_ENOMEM;
    if (depth >= SIM_SCHEMA_MAX_DEPTH)
        return BSC_OK; /* the bound: {} */
    err = fill_object(g, f, *out, depth, variant);
    if (err) {
        json_object_put(*out);
        *out = NULL;
    }
    return err;
}

static enum bsc_err gen_array(struct gen *g, struct json_object *f, const char *name,
                              unsigned depth, struct json_object **out)
{
    struct json_object *prefix = bsc_json_get(f, "prefixItems"), *items = bsc_json_get(f, "items");
    size_t n_prefix, want = count_of(f, "minItems", 0), max = count_of(f, "maxItems", SIZE_MAX);
    bool unique = json_object_is_type(bsc_json_get(f, "uniqueItems"), json_type_boolean) &&
                  json_object_get_boolean(bsc_json_get(f, "uniqueItems"));
    size_t variant;
    enum bsc_err err = BSC_OK;

    if (json_object_is_type(items, json_type_array)) { /* the draft-07 tuple form */
        prefix = items;
        items = NULL;
    }
    n_prefix = json_object_is_type(prefix, json_type_array) ? json_object_array_length(prefix) : 0;
    if (depth < SIM_SCHEMA_SOFT_DEPTH) { /* one item (or the whole tuple) reads better */
        if (want < 1)
            want = 1;
        if (want < n_prefix)
            want = n_prefix;
    }
    if (is_false(items) && want > n_prefix)
        want = n_prefix;
    if (want > max)
        want = max;
    *out = json_object_new_array();
    if (!*out)
        return BSC_ENOMEM;
    if (depth >= SIM_SCHEMA_MAX_DEPTH)
        return BSC_OK; /* the bound: [] */
    for (size_t i = 0; !err && i < want; i++) {
        struct json_object *v = NULL;
        if (i >= SIM_SCHEMA_MAX_NODES) {
            err = BSC_ELIMIT;
            break;
        }
        /* Items of one schema differ (item k is variant k); tuple positions differ by
         * their own schemas, unless uniqueItems asks for more. */
        variant = unique ? i : i < n_prefix ? 0 : i - n_prefix;
        err = gen_value(g, i < n_prefix ? json_object_array_get_idx(prefix, i) : items, name,
                        depth + 1, (unsigned)variant, &v);
        if (!err && json_object_array_add(*out, v) != 0) {
            json_object_put(v);
            err = BSC_ENOMEM;
        }
    }
    if (err) {
        json_object_put(*out);
        *out = NULL;
    }
    return err;
}

/* ---- one value ---- */

static enum bsc_err gen_flat(struct gen *g, struct json_object *f, const char *name,
                             unsigned depth, unsigned variant, struct json_object **out)
{
    struct json_object *e = bsc_json_get(f, "enum");

    if (has(f, "const"))
        return copy_value(bsc_json_get(f, "const"), out);
    if (e && json_object_is_type(e, json_type_array) && json_object_array_length(e) > 0)
        return copy_value(json_object_array_get_idx(e, variant % json_object_array_length(e)),
                          out);
    switch (pick_type(f, g->deep)) {
    case GT_NULL:
        *out = NULL;
        return BSC_OK;
    case GT_BOOL:
        *out = json_object_new_boolean(variant % 2 == 0);
        return *out ? BSC_OK : BSC_ENOMEM;
    case GT_OBJECT:
        return gen_object(g, f, depth, variant, out);
    case GT_ARRAY:
        return gen_array(g, f, name, depth, out);
    case GT_NUMBER:
        return gen_number(f, variant, false, out);
    case GT_INTEGER:
        return gen_number(f, variant, true, out);
    default: /* a string, or anything at all: text reads best */
        return gen_string(f, name, variant, out);
    }
}

static enum bsc_err gen_value(struct gen *g, struct json_object *s, const char *name,
                              unsigned depth, unsigned variant, struct json_object **out)
{
    struct json_object *f;
    unsigned hops = 0;
    enum bsc_err err;

    *out = NULL;
    if (++g->nodes > SIM_SCHEMA_MAX_NODES)
        return BSC_ELIMIT;
    if (is_false(s))
        return BSC_OK; /* nothing is valid: null is as good as anything */
    if (!s || !json_object_is_type(s, json_type_object))
        return gen_string(NULL, name, variant, out); /* true, or no schema: anything */
    g->deep = depth >= SIM_SCHEMA_SOFT_DEPTH;
    f = flatten(g, s, &hops);
    if (!f)
        return BSC_ENOMEM;
    err = gen_flat(g, f, name, depth, variant, out);
    json_object_put(f);
    return err;
}

enum bsc_err sim_schema_gen(struct json_object *schema, struct json_object **out)
{
    struct gen g = {.root = schema, .nodes = 0};

    return gen_value(&g, schema, NULL, 0, 0, out);
}

enum bsc_err sim_schema_gen_text(struct json_object *schema, struct bsc_buf *out)
{
    struct json_object *v = NULL;
    enum bsc_err err = sim_schema_gen(schema, &v);

    if (!err)
        err = v ? sim_json_append(out, v) : bsc_buf_append_cstr(out, "null");
    json_object_put(v);
    return err;
}

char *sim_schema_gen_dup(struct json_object *schema)
{
    struct bsc_buf b;
    char *s = NULL;

    bsc_buf_init(&b, SIZE_MAX / 4);
    if (sim_schema_gen_text(schema, &b) == BSC_OK)
        s = bsc_buf_take(&b, NULL);
    bsc_buf_cleanup(&b);
    return s;
}

/* True when the JSON text <args> is valid against <params> by the gateway's validator. */
static bool args_valid(struct json_object *params, struct bsc_str args)
{
    struct js_schema *js = NULL;
    bool ok;

    if (js_compile(params, &js, NULL, 0) != BSC_OK)
        return false;
    ok = js_validate_text(js, args, NULL);
    js_free(js);
    return ok;
}

char *sim_schema_tool_args(struct json_object *params, struct bsc_str user_text)
{
    struct json_object *v = NULL;
    struct bsc_buf gen, echo;
    bool have_gen = false;
    char *s = NULL;

    bsc_buf_init(&gen, SIZE_MAX / 4);
    bsc_buf_init(&echo, SIZE_MAX / 4);
    if (params && sim_schema_gen(params, &v) == BSC_OK) {
        have_gen = json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0
                       ? sim_json_append(&gen, v) == BSC_OK
                       : bsc_buf_append_cstr(&gen, "{}") == BSC_OK;
        json_object_put(v);
    }
    if (sim_content_tool_args(user_text, &echo) != BSC_OK) {
        bsc_buf_reset(&echo);
    } else if (!have_gen || (bsc_str_eq(bsc_buf_str(&gen), BSC_STR("{}")) &&
                             args_valid(params, bsc_buf_str(&echo)))) {
        /* No parameters, a schema past a bound, or one that says nothing the arguments
         * must hold: the echo (an instance too, and one with multi-byte text in it). */
        s = bsc_buf_take(&echo, NULL);
    }
    if (!s && have_gen)
        s = bsc_buf_take(&gen, NULL);
    bsc_buf_cleanup(&gen);
    bsc_buf_cleanup(&echo);
    return s;
}

/* ---- patterns ---- */

/* A pattern being generated for: the cursor over the pattern and what went wrong. */
struct rx {
    const char *p, *end; /* borrowed */
    unsigned stretch;
    unsigned groups;     /* open groups */
    enum bsc_err err;    /* the first failure */
};

/* One item of a character class: a range of code points, or a class escape. */
struct rx_item {
    uint32_t lo, hi;
    char cls; /* 0, or d D w W s S */
};

static void rx_alt(struct rx *r, struct bsc_buf *out);

static void rx_fail(struct rx *r, enum bsc_err err)
{
    if (!r->err)
        r->err = err;
}

static void rx_put_cp(struct rx *r, struct bsc_buf *out, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        rx_fail(r, BSC_EINVAL);
        return;
    }
    if (!out)
        return;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    }
    if (bsc_buf_append(out, u, n))
        rx_fail(r, BSC_ELIMIT);
}

/* Reads <n> hex digits; false when they are not there. */
static bool rx_hex(struct rx *r, size_t n, uint32_t *cp)
{
    *cp = 0;
    if ((size_t)(r->end - r->p) < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        int h = bsc_hex_digit(r->p[i]);
        if (h < 0)
            return false;
        *cp = *cp * 16 + (uint32_t)h;
    }
    r->p += n;
    return true;
}

/* The literal code point at the cursor (the pattern is UTF-8). */
static uint32_t rx_literal(struct rx *r)
{
    size_t n = sim_utf8_char_len(bsc_str_make(r->p, (size_t)(r->end - r->p)));
    uint32_t cp;

    if (n == 0) {
        rx_fail(r, BSC_EINVAL);
        r->p = r->end;
        return 0;
    }
    cp = n == 1 ? (unsigned char)r->p[0]
                : ((unsigned char)r->p[0] & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07));
    for (size_t i = 1; i < n; i++)
        cp = (cp << 6) | ((unsigned char)r->p[i] & 0x3f);
    r->p += n;
    return cp;
}

/* \u escapes after the "u": HHHH (a surrogate pair joined), or {H...}. */
static uint32_t rx_unicode(struct rx *r)
{
    uint32_t cp = 0, lo;

    if (r->p < r->end && *r->p == '{') {
        r->p++;
        while (r->p < r->end && *r->p != '}' && bsc_hex_digit(*r->p) >= 0 && cp <= 0x10ffff)
            cp = cp * 16 + (uint32_t)bsc_hex_digit(*r->p++);
        if (r->p >= r->end || *r->p != '}')
            rx_fail(r, BSC_EINVAL);
        else
            r->p++;
        return cp;
    }
    if (!rx_hex(r, 4, &cp)) {
        rx_fail(r, BSC_EINVAL);
        return 0;
    }
    if (cp >= 0xd800 && cp <= 0xdbff && r->end - r->p >= 6 && r->p[0] == '\\' &&
        r->p[1] == 'u') {
        const char *save = r->p;
        r->p += 2;
        if (rx_hex(r, 4, &lo) && lo >= 0xdc00 && lo <= 0xdfff)
            return 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        r->p = save;
    }
    return cp;
}

/* An escape after the backslash: a code point in *<cp>, or a class letter (d D w W s S)
 * returned; 'b'/'B' outside a class are assertions (returned, nothing generated). */
static char rx_escape(struct rx *r, bool in_class, uint32_t *cp)
{
    char c;

    *cp = 0;
    if (r->p >= r->end) {
        rx_fail(r, BSC_EINVAL);
        return 0;
    }
    c = *r->p;
    if (c && strchr("dDwWsS", c)) {
        r->p++;
        return c;
    }
    if ((c == 'b' || c == 'B') && !in_class) {
        r->p++;
        return c;
    }
    r->p++;
    switch (c) {
    case 'b': *cp = 0x08; return 0;
    case 't': *cp = '\t'; return 0;
    case 'n': *cp = '\n'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 'f': *cp = '\f'; return 0;
    case 'v': *cp = '\v'; return 0;
    case 'x':
        if (!rx_hex(r, 2, cp))
            rx_fail(r, BSC_EINVAL);
        return 0;
    case 'u': *cp = rx_unicode(r); return 0;
    case 'c':
        if (r->p < r->end && ((*r->p >= 'a' && *r->p <= 'z') || (*r->p >= 'A' && *r->p <= 'Z')))
            *cp = (uint32_t)(*r->p++ & 31);
        else
            rx_fail(r, BSC_EINVAL);
        return 0;
    default:
        break;
    }
    if ((c >= '0' && c <= '9') || c == 'k' || c == 'p' || c == 'P') {
        rx_fail(r, BSC_EINVAL); /* NUL, backreferences, property escapes */
        return 0;
    }
    r->p--;
    *cp = rx_literal(r); /* escaped punctuation (or any other character) stands for itself */
    return 0;
}

static bool rx_is_space(uint32_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000 || c == 0xfeff;
}

static bool rx_class_has(char cls, uint32_t c)
{
    bool digit = c >= '0' && c <= '9';
    bool word = digit || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';

    switch (cls) {
    case 'd': return digit;
    case 'D': return !digit;
    case 'w': return word;
    case 'W': return !word;
    case 's': return rx_is_space(c);
    default: return !rx_is_space(c); /* S */
    }
}

/* A member of a class escape used on its own. */
static uint32_t rx_class_rep(char cls)
{
    switch (cls) {
    case 'd': return '0';
    case 'W': return '-';
    case 's': return ' ';
    default: return 'a'; /* D w S */
    }
}

static bool rx_items_have(const struct rx_item *it, size_t n, uint32_t c)
{
    for (size_t i = 0; i < n; i++)
        if (it[i].cls ? rx_class_has(it[i].cls, c) : (c >= it[i].lo && c <= it[i].hi))
            return true;
    return false;
}

/* One class atom: a code point or a class escape (<item>->cls). */
static void rx_class_atom(struct rx *r, struct rx_item *item)
{
    uint32_t cp = 0;

    item->cls = 0;
    if (*r->p == '\\') {
        r->p++;
        item->cls = rx_escape(r, true, &cp);
    } else {
        cp = rx_literal(r);
    }
    item->lo = item->hi = cp;
}

/* "[...]": its first member, or for "[^...]" the first of a few plain characters it
 * leaves out. */
static void rx_class(struct rx *r, struct bsc_buf *out)
{
    static const char pool[] = "aA0_-x .,:;!bB1";
    struct rx_item items[GEN_MAX_CLASS];
    size_t n = 0;
    bool neg;

    r->p++; /* '[' */
    neg = r->p < r->end && *r->p == '^';
    if (neg)
        r->p++;
    while (!r->err && r->p < r->end && *r->p != ']') {
        struct rx_item it, hi;
        rx_class_atom(r, &it);
        if (!it.cls && r->end - r->p >= 2 && r->p[0] == '-' && r->p[1] != ']') {
            r->p++;
            rx_class_atom(r, &hi);
            if (hi.cls || hi.lo < it.lo)
                rx_fail(r, BSC_EINVAL);
            it.hi = hi.lo;
        }
        if (n == GEN_MAX_CLASS)
            rx_fail(r, BSC_EINVAL);
        else
            items[n++] = it;
    }
    if (r->p >= r->end)
        rx_fail(r, BSC_EINVAL);
    if (r->err)
        return;
    r->p++; /* ']' */
    if (!neg) {
        if (n == 0)
            rx_fail(r, BSC_EINVAL); /* [] matches nothing */
        else
            rx_put_cp(r, out, items[0].cls ? rx_class_rep(items[0].cls) : items[0].lo);
        return;
    }
    for (size_t i = 0; i < sizeof(pool) - 1; i++) {
        if (!rx_items_have(items, n, (unsigned char)pool[i])) {
            rx_put_cp(r, out, (unsigned char)pool[i]);
            return;
        }
    }
    rx_fail(r, BSC_EINVAL);
}

/* "(...)", "(?:...)", "(?<name>...)"; lookaround is refused. */
static void rx_group(struct rx *r, struct bsc_buf *out)
{
    r->p++; /* '(' */
    if (r->p < r->end && *r->p == '?') {
        r->p++;
        if (r->p < r->end && *r->p == ':') {
            r->p++;
        } else if (r->end - r->p >= 2 && r->p[0] == '<' && r->p[1] != '=' && r->p[1] != '!') {
            while (r->p < r->end && *r->p != '>')
                r->p++;
            r->p += r->p < r->end;
        } else {
            rx_fail(r, BSC_EINVAL);
            return;
        }
    }
    if (++r->groups > GEN_MAX_GROUPS) {
        rx_fail(r, BSC_EINVAL);
        return;
    }
    rx_alt(r, out);
    r->groups--;
    if (r->p >= r->end || *r->p != ')')
        rx_fail(r, BSC_EINVAL);
    else
        r->p++;
}

/* Reads a quantifier into [*<lo>, *<hi>] (UINT_MAX: open); false when there is none (a
 * "{" that does not start one is a literal, as in Annex B). */
static bool rx_quant(struct rx *r, unsigned *lo, unsigned *hi)
{
    const char *p = r->p;
    unsigned a = 0, b;

    if (p >= r->end)
        return false;
    if (*p == '*' || *p == '+' || *p == '?') {
        *lo = *p == '+' ? 1 : 0;
        *hi = *p == '?' ? 1 : UINT_MAX;
        p++;
    } else if (*p == '{') {
        p++;
        if (p >= r->end || *p < '0' || *p > '9')
            return false;
        while (p < r->end && *p >= '0' && *p <= '9' && a < 100000)
            a = a * 10 + (unsigned)(*p++ - '0');
        b = a;
        if (p < r->end && *p == ',') {
            p++;
            b = UINT_MAX;
            if (p < r->end && *p >= '0' && *p <= '9')
                for (b = 0; p < r->end && *p >= '0' && *p <= '9' && b < 100000;)
                    b = b * 10 + (unsigned)(*p++ - '0');
        }
        if (p >= r->end || *p != '}' || b < a)
            return false;
        p++;
        *lo = a;
        *hi = b;
    } else {
        return false;
    }
    if (p < r->end && *p == '?') /* lazy: the same strings */
        p++;
    r->p = p;
    return true;
}

/* One atom into <atom> (NULL: parse only). */
static void rx_atom(struct rx *r, struct bsc_buf *atom)
{
    uint32_t cp;
    unsigned lo, hi;
    char cls;

    switch (*r->p) {
    case '(':
        rx_group(r, atom);
        return;
    case '[':
        rx_class(r, atom);
        return;
    case '.':
        r->p++;
        rx_put_cp(r, atom, 'a');
        return;
    case '^':
    case '$':
        r->p++;
        return;
    case '\\':
        r->p++;
        cls = rx_escape(r, false, &cp);
        if (cls == 'b' || cls == 'B')
            return;
        rx_put_cp(r, atom, cls ? rx_class_rep(cls) : cp);
        return;
    case '*':
    case '+':
    case '?':
        rx_fail(r, BSC_EINVAL); /* nothing to repeat */
        return;
    case '{':
        if (rx_quant(r, &lo, &hi)) {
            rx_fail(r, BSC_EINVAL);
            return;
        }
        r->p++;
        rx_put_cp(r, atom, '{');
        return;
    default:
        rx_put_cp(r, atom, rx_literal(r));
    }
}

/* Atoms with their quantifiers until "|", ")" or the end. */
static void rx_seq(struct rx *r, struct bsc_buf *out)
{
    while (!r->err && r->p < r->end && *r->p != '|' && *r->p != ')') {
        struct bsc_buf atom;
        unsigned lo = 1, hi = 1, count;

        bsc_buf_init(&atom, SIM_SCHEMA_MAX_TEXT);
        rx_atom(r, out ? &atom : NULL);
        rx_quant(r, &lo, &hi);
        count = hi == UINT_MAX ? lo + r->stretch
                               : (lo + r->stretch < hi ? lo + r->stretch : hi);
        for (unsigned i = 0; out && !r->err && i < count; i++)
            if (bsc_buf_append_str(out, bsc_buf_str(&atom)))
                rx_fail(r, BSC_ELIMIT);
        bsc_buf_cleanup(&atom);
    }
}

/* The first alternative is generated; the others are only parsed. */
static void rx_alt(struct rx *r, struct bsc_buf *out)
{
    rx_seq(r, out);
    while (!r->err && r->p < r->end && *r->p == '|') {
        r->p++;
        rx_seq(r, NULL);
    }
}

enum bsc_err sim_schema_pattern_sample(struct bsc_str pattern, unsigned stretch,
                                       struct bsc_buf *out)
{
    struct rx r = {.p = pattern.p, .end = pattern.p + pattern.len, .stretch = stretch};

    if (!pattern.p)
        return BSC_EINVAL;
    rx_alt(&r, out);
    if (!r.err && r.p < r.end) /* a ")" nothing opened */
        r.err = BSC_EINVAL;
    if (!r.err && out->len > SIM_SCHEMA_MAX_TEXT)
        r.err = BSC_ELIMIT;
    return r.err;
}
