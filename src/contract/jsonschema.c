/* SPDX-License-Identifier: MIT */
/* jsonschema.c -- js_validate() and js_validate_text(): walks a compiled schema (built by
 * jsonschema_compile.c) over a json-c value and reports the first failure with its JSON pointer
 * and keyword. Every walk is bounded: JS_MAX_STEPS subschema applications and values compared,
 * JS_MAX_REGEX_STEPS pattern steps, JS_MAX_EVAL_DEPTH nesting; running out is a failure with
 * keyword "limit", never a crash nor a pass. It does not parse schemas, and it never changes
 * the instance. See docs/internals/jsonschema.md (evaluation order, messages, limits). */
#include "contract/jsonschema.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "contract/internal.h"

#define VPATH_CAP 1024
#define POP_OVER SIZE_MAX /* the mark of a segment that did not fit */

struct vctx {
    struct js_error *err; /* where a failure goes now: the caller's, or a branch scratch */
    char path[VPATH_CAP]; /* the instance pointer being validated */
    size_t len;
    unsigned over;        /* segments that did not fit in <path> */
    uint64_t steps;       /* left of JS_MAX_STEPS */
    uint64_t re_steps;    /* left of JS_MAX_REGEX_STEPS */
    unsigned depth;
    bool limit;           /* a bound was hit: the answer is "invalid" whatever branches say */
    struct js_error limit_err;
};

/* ---- failures -------------------------------------------------------------------------------- */

/* Copies the current pointer into <dst>. One longer than <dst> is cut at a character boundary
 * and ends in "..."; one whose deeper segments did not fit the path buffer ends in "/...". */
static void copy_pointer(const struct vctx *v, char *dst, size_t cap)
{
    size_t n = v->len;

    if (n < cap && !v->over) {
        memcpy(dst, v->path, n + 1);
        return;
    }
    if (n + 5 <= cap) {
        memcpy(dst, v->path, n);
        memcpy(dst + n, "/...", 5);
        return;
    }
    n = cap - 4;
    while (n > 0 && ((unsigned char)v->path[n] & 0xc0) == 0x80)
        n--;
    memcpy(dst, v->path, n);
    memcpy(dst + n, "...", 4);
}

static void vfill(struct vctx *v, struct js_error *e, const char *keyword, const char *fmt,
                  va_list ap)
{
    copy_pointer(v, e->pointer, sizeof(e->pointer));
    snprintf(e->keyword, sizeof(e->keyword), "%s", keyword);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
}

static bool fail(struct vctx *v, const char *keyword, const char *fmt, ...) BSC_PRINTF(3, 4);

static bool fail(struct vctx *v, const char *keyword, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfill(v, v->err, keyword, fmt, ap);
    va_end(ap);
    return false;
}

static bool limit(struct vctx *v, const char *fmt, ...) BSC_PRINTF(2, 3);

/* A bound was hit. Kept apart from v->err, so no anyOf/not can turn it into a pass. */
static bool limit(struct vctx *v, const char *fmt, ...)
{
    va_list ap;

    if (v->limit)
        return false;
    v->limit = true;
    va_start(ap, fmt);
    vfill(v, &v->limit_err, "limit", fmt, ap);
    va_end(ap);
    return false;
}

/* ---- the instance pointer -------------------------------------------------------------------- */

static size_t push_key(struct vctx *v, const char *name, size_t len)
{
    size_t mark = v->len;

    if (v->over || !js__ptr_push(v->path, sizeof(v->path), &v->len, name, len)) {
        v->over++;
        return POP_OVER;
    }
    return mark;
}

static size_t push_index(struct vctx *v, size_t i)
{
    char idx[24];
    int n = snprintf(idx, sizeof(idx), "%zu", i);

    return push_key(v, idx, (size_t)n);
}

static void pop(struct vctx *v, size_t mark)
{
    if (mark == POP_OVER) {
        v->over--;
        return;
    }
    v->len = mark;
    v->path[mark] = '\0';
}

/* ---- helpers --------------------------------------------------------------------------------- */

static bool node_ok(struct vctx *v, const struct js__node *n, struct json_object *inst,
                    const char *via);

/* JSON equality charged to the step budget. Sets *<eq>; false when the budget ran out. */
static bool equal(struct vctx *v, struct json_object *a, struct json_object *b, bool *eq)
{
    *eq = js__json_equal(a, b, &v->steps);
    if (v->steps == 0)
        return limit(v, "more than %d validation steps", JS_MAX_STEPS);
    return true;
}

static bool pattern_ok(struct vctx *v, const struct js_regex *re, const char *s, size_t len,
                       bool *match)
{
    int r = js_regex_search(re, s, len, &v->re_steps);

    if (r == -BSC_ENOMEM)
        return limit(v, "out of memory");
    if (r < 0)
        return limit(v, "more than %d pattern steps", JS_MAX_REGEX_STEPS);
    *match = r == 1;
    return true;
}

static void type_list(uint32_t types, char *buf, size_t cap)
{
    size_t at = 0;

    buf[0] = '\0';
    for (int t = 0; t < JS__T_COUNT; t++) {
        if (!(types & JS__TYPE_BIT(t)))
            continue;
        int n = snprintf(buf + at, cap - at, "%s%s", at ? " or " : "",
                         js__type_name((enum js__type)t));

        if (n < 0 || (size_t)n >= cap - at)
            return;
        at += (size_t)n;
    }
}

/* A short rendition of <o> for messages. json-c's own serializer is not used: it caches its
 * output inside the object, and the compiled schema's values must stay untouched (threads may
 * share them). */
static void describe(struct json_object *o, char *buf, size_t cap)
{
    struct js__num n;

    switch (json_object_get_type(o)) {
    case json_type_null: snprintf(buf, cap, "null"); return;
    case json_type_boolean:
        snprintf(buf, cap, "%s", json_object_get_boolean(o) ? "true" : "false");
        return;
    case json_type_int:
    case json_type_double:
        js__num_get(o, &n);
        js__num_fmt(&n, buf, cap);
        return;
    case json_type_string:
        snprintf(buf, cap, "\"%.64s%s\"", json_object_get_string(o),
                 json_object_get_string_len(o) > 64 ? "..." : "");
        return;
    case json_type_array: snprintf(buf, cap, "(an array)"); return;
    case json_type_object: snprintf(buf, cap, "(an object)"); return;
    }
    snprintf(buf, cap, "?");
}

/* ---- keywords by instance type --------------------------------------------------------------- */

static bool type_ok(struct vctx *v, const struct js__node *n, enum js__type t)
{
    char want[96];

    if (!(n->has & JS__HAS_TYPE) || (n->types & JS__TYPE_BIT(t)))
        return true;
    if (t == JS__T_INTEGER && (n->types & JS__TYPE_BIT(JS__T_NUMBER)))
        return true;
    type_list(n->types, want, sizeof(want));
    return fail(v, "type", "expected %s, got %s", want, js__type_name(t));
}

static bool const_enum_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    bool eq;

    if (n->has & JS__HAS_CONST) {
        if (!equal(v, inst, n->const_val, &eq))
            return false;
        if (!eq) {
            char want[96];

            describe(n->const_val, want, sizeof(want));
            return fail(v, "const", "value is not the constant %s", want);
        }
    }
    if (!(n->has & JS__HAS_ENUM))
        return true;
    for (size_t i = 0; i < n->n_enum; i++) {
        if (!equal(v, inst, n->enum_vals[i], &eq))
            return false;
        if (eq)
            return true;
    }
    return fail(v, "enum", "value is not one of the %zu allowed values", n->n_enum);
}

static bool string_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    const char *s = json_object_get_string(inst);
    size_t len = (size_t)json_object_get_string_len(inst), count = 0;
    bool match = false;

    if (n->has & (JS__HAS_MIN_LEN | JS__HAS_MAX_LEN))
        count = js__utf8_count(s, len);
    if ((n->has & JS__HAS_MIN_LEN) && count < n->min_len)
        return fail(v, "minLength", "%zu characters, fewer than %llu", count,
                    (unsigned long long)n->min_len);
    if ((n->has & JS__HAS_MAX_LEN) && count > n->max_len)
        return fail(v, "maxLength", "%zu characters, more than %llu", count,
                    (unsigned long long)n->max_len);
    if (n->pattern) {
        if (!pattern_ok(v, n->pattern, s, len, &match))
            return false;
        if (!match)
            return fail(v, "pattern", "does not match \"%.180s\"", n->pattern_src);
    }
    if (n->format != JS__FMT_NONE && !js__format_check(n->format, s, len))
        return fail(v, "format", "not a valid %s", js__format_name(n->format));
    return true;
}

/* One numeric bound: <bad> says which comparison results fail. */
static bool bound_ok(struct vctx *v, const struct js__num *x, const struct js__num *b,
                     const char *keyword, const char *what, int bad_lo, int bad_hi)
{
    char xs[40], bs[40];
    int c = js__num_cmp(x, b);

    if (c < bad_lo || c > bad_hi)
        return true;
    js__num_fmt(x, xs, sizeof(xs));
    js__num_fmt(b, bs, sizeof(bs));
    return fail(v, keyword, "%s %s %s", xs, what, bs);
}

static bool number_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    struct js__num x;
    char xs[40], ms[40];

    js__num_get(inst, &x);
    if ((n->has & JS__HAS_MINIMUM) &&
        !bound_ok(v, &x, &n->minimum, "minimum", "is less than the minimum", -1, -1))
        return false;
    if ((n->has & JS__HAS_MAXIMUM) &&
        !bound_ok(v, &x, &n->maximum, "maximum", "is greater than the maximum", 1, 1))
        return false;
    if ((n->has & JS__HAS_EXMIN) &&
        !bound_ok(v, &x, &n->ex_min, "exclusiveMinimum", "is not greater than", -1, 0))
        return false;
    if ((n->has & JS__HAS_EXMAX) &&
        !bound_ok(v, &x, &n->ex_max, "exclusiveMaximum", "is not less than", 0, 1))
        return false;
    if ((n->has & JS__HAS_MULTIPLE) && !js__num_is_multiple(&x, &n->multiple_of)) {
        js__num_fmt(&x, xs, sizeof(xs));
        js__num_fmt(&n->multiple_of, ms, sizeof(ms));
        return fail(v, "multipleOf", "%s is not a multiple of %s", xs, ms);
    }
    return true;
}

struct hent {
    uint64_t h;
    size_t i;
};

static int hent_cmp(const void *x, const void *y)
{
    const struct hent *a = x, *b = y;

    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Finds the duplicate pair with the smallest second index: hash, sort, then compare only
 * items whose hashes collide, so the cost is n log n, not n^2. */
static bool find_duplicate(struct vctx *v, struct json_object *arr, size_t n, size_t *first,
                           size_t *second, bool *found)
{
    struct hent *h = malloc(n * sizeof(*h));
    bool eq, ok = true;

    *found = false;
    if (!h)
        return limit(v, "out of memory");
    for (size_t i = 0; i < n; i++) {
        h[i].h = js__json_hash(json_object_array_get_idx(arr, i), &v->steps);
        h[i].i = i;
    }
    if (v->steps == 0) {
        free(h);
        return limit(v, "more than %d validation steps", JS_MAX_STEPS);
    }
    qsort(h, n, sizeof(*h), hent_cmp);
    for (size_t a = 0; a < n && ok; a++) {
        for (size_t b = a + 1; b < n && h[b].h == h[a].h && ok; b++) {
            ok = equal(v, json_object_array_get_idx(arr, h[a].i),
                       json_object_array_get_idx(arr, h[b].i), &eq);
            if (ok && eq && (!*found || h[b].i < *second)) {
                *found = true;
                *first = h[a].i;
                *second = h[b].i;
            }
        }
    }
    free(h);
    return ok;
}

static bool items_ok(struct vctx *v, const struct js__node *n, struct json_object *inst,
                     size_t len)
{
    for (size_t i = 0; i < len; i++) {
        bool prefix = i < n->prefix_items.n;
        const struct js__node *sub = prefix ? n->prefix_items.v[i] : n->items;
        size_t mark;
        bool ok;

        if (!sub)
            continue;
        mark = push_index(v, i);
        if (!prefix && sub->is_bool && !sub->bool_value)
            ok = fail(v, "items", "no items allowed after the first %zu", n->prefix_items.n);
        else
            ok = node_ok(v, sub, json_object_array_get_idx(inst, i),
                         prefix ? "prefixItems" : "items");
        pop(v, mark);
        if (!ok)
            return false;
    }
    return true;
}

static bool array_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    size_t len = json_object_array_length(inst), first, second, mark;
    bool found;

    if ((n->has & JS__HAS_MIN_ITEMS) && len < n->min_items)
        return fail(v, "minItems", "%zu items, fewer than %llu", len,
                    (unsigned long long)n->min_items);
    if ((n->has & JS__HAS_MAX_ITEMS) && len > n->max_items)
        return fail(v, "maxItems", "%zu items, more than %llu", len,
                    (unsigned long long)n->max_items);
    if (!items_ok(v, n, inst, len))
        return false;
    if (!(n->has & JS__HAS_UNIQUE) || len < 2)
        return true;
    if (!find_duplicate(v, inst, len, &first, &second, &found))
        return false;
    if (!found)
        return true;
    mark = push_index(v, second);
    fail(v, "uniqueItems", "duplicates item %zu", first);
    pop(v, mark);
    return false;
}

static const struct js__prop *find_prop(const struct js__node *n, const char *name, size_t len)
{
    size_t lo = 0, hi = n->n_props;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct js__prop *p = &n->props[mid];
        int c = p->len != len ? (p->len < len ? -1 : 1) : memcmp(p->name, name, len);

        if (c == 0)
            return p;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* properties, then patternProperties, then additionalProperties for one member. */
static bool member_ok(struct vctx *v, const struct js__node *n, const char *name,
                      struct json_object *val)
{
    size_t len = strlen(name);
    const struct js__prop *p = find_prop(n, name, len);
    bool matched = p != NULL, ok = true, hit = false;

    if (p)
        ok = node_ok(v, p->schema, val, "properties");
    for (size_t i = 0; ok && i < n->n_pprops; i++) {
        ok = pattern_ok(v, n->pprops[i].re, name, len, &hit);
        if (ok && hit) {
            matched = true;
            ok = node_ok(v, n->pprops[i].schema, val, "patternProperties");
        }
    }
    if (!ok || matched || !n->additional)
        return ok;
    if (n->additional->is_bool && !n->additional->bool_value)
        return fail(v, "additionalProperties", "property \"%.160s\" is not allowed", name);
    return node_ok(v, n->additional, val, "additionalProperties");
}

static bool object_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    size_t count = (size_t)json_object_object_length(inst);
    struct json_object_iterator it, end;

    for (size_t i = 0; i < n->n_required; i++)
        if (!json_object_object_get_ex(inst, n->required[i].name, NULL))
            return fail(v, "required", "missing property \"%.160s\"", n->required[i].name);
    if ((n->has & JS__HAS_MIN_PROPS) && count < n->min_props)
        return fail(v, "minProperties", "%zu properties, fewer than %llu", count,
                    (unsigned long long)n->min_props);
    if ((n->has & JS__HAS_MAX_PROPS) && count > n->max_props)
        return fail(v, "maxProperties", "%zu properties, more than %llu", count,
                    (unsigned long long)n->max_props);
    if (!n->n_props && !n->n_pprops && !n->additional)
        return true;
    it = json_object_iter_begin(inst);
    end = json_object_iter_end(inst);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *name = json_object_iter_peek_name(&it);
        size_t mark = push_key(v, name, strlen(name));
        bool ok = member_ok(v, n, name, json_object_iter_peek_value(&it));

        pop(v, mark);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- applicators ----------------------------------------------------------------------------- */

/* Runs <sub> on <inst> with failures going to <scratch>; *<ok> gets the verdict. Returns false
 * only when a bound was hit (the caller must then fail too). */
static bool branch(struct vctx *v, const struct js__node *sub, struct json_object *inst,
                   const char *via, struct js_error *scratch, bool *ok)
{
    struct js_error *saved = v->err;

    v->err = scratch;
    *ok = node_ok(v, sub, inst, via);
    v->err = saved;
    return !v->limit;
}

static bool any_of_ok(struct vctx *v, const struct js__list *l, struct json_object *inst)
{
    struct js_error first = {"", "", ""}, scratch;
    bool ok;

    for (size_t i = 0; i < l->n; i++) {
        if (!branch(v, l->v[i], inst, "anyOf", i ? &scratch : &first, &ok))
            return false;
        if (ok)
            return true;
    }
    return fail(v, "anyOf", "matches none of the %zu subschemas; the first fails at \"%.40s\" "
                "(%s: %.100s)", l->n, first.pointer, first.keyword, first.message);
}

static bool one_of_ok(struct vctx *v, const struct js__list *l, struct json_object *inst)
{
    struct js_error first = {"", "", ""}, scratch;
    size_t hits = 0, hit[2] = {0, 0};
    bool ok;

    for (size_t i = 0; i < l->n && hits < 2; i++) {
        if (!branch(v, l->v[i], inst, "oneOf", i ? &scratch : &first, &ok))
            return false;
        if (ok)
            hit[hits++] = i;
    }
    if (hits == 1)
        return true;
    if (hits == 2)
        return fail(v, "oneOf", "matches subschemas %zu and %zu; exactly one must match",
                    hit[0], hit[1]);
    return fail(v, "oneOf", "matches none of the %zu subschemas; the first fails at \"%.40s\" "
                "(%s: %.100s)", l->n, first.pointer, first.keyword, first.message);
}

static bool applicators_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    struct js_error scratch;
    bool ok;

    if (n->ref && !node_ok(v, n->ref, inst, "$ref"))
        return false;
    for (size_t i = 0; i < n->all_of.n; i++)
        if (!node_ok(v, n->all_of.v[i], inst, "allOf"))
            return false;
    if (n->any_of.n && !any_of_ok(v, &n->any_of, inst))
        return false;
    if (n->one_of.n && !one_of_ok(v, &n->one_of, inst))
        return false;
    if (n->not_schema) {
        if (!branch(v, n->not_schema, inst, "not", &scratch, &ok))
            return false;
        if (ok)
            return fail(v, "not", "matches the subschema under \"not\"");
    }
    return true;
}

/* ---- one subschema --------------------------------------------------------------------------- */

static bool keywords_ok(struct vctx *v, const struct js__node *n, struct json_object *inst)
{
    enum js__type t = js__type_of(inst);

    if (!type_ok(v, n, t) || !const_enum_ok(v, n, inst))
        return false;
    switch (t) {
    case JS__T_STRING:
        if (!string_ok(v, n, inst))
            return false;
        break;
    case JS__T_NUMBER:
    case JS__T_INTEGER:
        if (!number_ok(v, n, inst))
            return false;
        break;
    case JS__T_ARRAY:
        if (!array_ok(v, n, inst))
            return false;
        break;
    case JS__T_OBJECT:
        if (!object_ok(v, n, inst))
            return false;
        break;
    default: break;
    }
    return applicators_ok(v, n, inst);
}

static bool node_ok(struct vctx *v, const struct js__node *n, struct json_object *inst,
                    const char *via)
{
    bool ok;

    if (n->is_bool)
        return n->bool_value || fail(v, via, "not allowed here (the subschema is false)");
    if (v->steps == 0 || --v->steps == 0)
        return limit(v, "more than %d validation steps", JS_MAX_STEPS);
    if (v->depth >= JS_MAX_EVAL_DEPTH)
        return limit(v, "subschemas nested deeper than %d while validating", JS_MAX_EVAL_DEPTH);
    v->depth++;
    ok = keywords_ok(v, n, inst);
    v->depth--;
    return ok;
}

/* ---- entry points ---------------------------------------------------------------------------- */

static void clear(struct js_error *e)
{
    e->pointer[0] = '\0';
    e->keyword[0] = '\0';
    e->message[0] = '\0';
}

static bool run(const struct js_schema *s, struct json_object *inst, struct js_error *err)
{
    struct vctx *v = calloc(1, sizeof(*v));
    bool ok;

    if (!v) {
        snprintf(err->keyword, sizeof(err->keyword), "limit");
        snprintf(err->message, sizeof(err->message), "out of memory");
        return false;
    }
    v->err = err;
    v->steps = JS_MAX_STEPS;
    v->re_steps = JS_MAX_REGEX_STEPS;
    ok = node_ok(v, s->root, inst, "false");
    if (v->limit) {
        *err = v->limit_err;
        ok = false;
    }
    free(v);
    return ok;
}

bool js_validate(const struct js_schema *s, struct json_object *instance, struct js_error *err)
{
    struct js_error local;
    char why[64];

    if (!err)
        err = &local;
    clear(err);
    if (!js__json_check(instance, JS_MAX_INSTANCE_DEPTH, err->pointer, sizeof(err->pointer),
                        why, sizeof(why))) {
        snprintf(err->keyword, sizeof(err->keyword), "json");
        snprintf(err->message, sizeof(err->message), "%s", why);
        return false;
    }
    return run(s, instance, err);
}

bool js_validate_text(const struct js_schema *s, struct bsc_str json_text, struct js_error *err)
{
    struct js_error local;
    struct json_object *doc;
    enum bsc_err rc;
    bool ok;

    if (!err)
        err = &local;
    clear(err);
    rc = js__parse(json_text, JS_MAX_INSTANCE_DEPTH, &doc, err->message, sizeof(err->message));
    if (rc) {
        snprintf(err->keyword, sizeof(err->keyword), "%s", rc == BSC_EPARSE ? "json" : "limit");
        return false;
    }
    ok = run(s, doc, err);
    json_object_put(doc);
    return ok;
}
