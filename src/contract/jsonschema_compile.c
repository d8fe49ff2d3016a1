/* SPDX-License-Identifier: MIT */
/* jsonschema_compile.c -- js_compile() and js_free(): a JSON Schema document (json-c) into a
 * graph of js__node. Every keyword is either compiled, accepted as an annotation, or refused
 * with its pointer: nothing is silently ignored. $ref is resolved inside the document (JSON
 * pointers, "#", "#/$defs/x", "#/definitions/x", any "#/..."); a subschema reached twice is
 * compiled once, which is what lets recursive schemas terminate. Then a check refuses $ref
 * cycles that never descend into the instance and over-long in-place chains.
 * See docs/internals/jsonschema.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "contract/internal.h"
#include "contract/jsonschema.h"

#define PATH_CAP 1024

struct memo_slot {
    struct json_object *key; /* borrowed from the document; NULL = empty slot */
    struct js__node *node;
};

/* A $ref whose target was not compiled yet when the $ref was read. */
struct pending {
    struct js__node *node;
    struct json_object *target; /* borrowed */
    char *path;                 /* owned: the target's pointer, for messages */
};

struct cctx {
    struct js_schema *s;
    struct json_object *doc;
    char path[PATH_CAP]; /* the pointer being compiled, RFC 6901 escaped */
    size_t path_len;
    unsigned over;       /* segments that did not fit in <path> */
    unsigned depth;
    struct memo_slot *memo; /* open addressing, power-of-two size */
    size_t memo_cap, memo_n;
    struct pending *pend;
    size_t n_pend, cap_pend;
    size_t re_states; /* of every pattern compiled so far */
    char *err;
    size_t errlen;
    enum bsc_err rc;
};

static bool cfail(struct cctx *c, enum bsc_err rc, const char *fmt, ...) BSC_PRINTF(3, 4);

/* Records the first error as "#<pointer>: <reason>". When both do not fit in the caller's
 * buffer, the pointer gives way ("#...<its end>"): the reason is what the reader needs most.
 * Returns false. */
static bool cfail(struct cctx *c, enum bsc_err rc, const char *fmt, ...)
{
    char reason[256];
    size_t plen = c->path_len, room;
    va_list ap;

    if (c->rc)
        return false;
    c->rc = rc;
    if (!c->errlen)
        return false;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    room = c->errlen > strlen(reason) + 12 ? c->errlen - strlen(reason) - 12 : 0;
    if (plen <= room) {
        snprintf(c->err, c->errlen, "#%s%s: %s", c->path, c->over ? "/..." : "", reason);
        return false;
    }
    /* Start the kept tail on a segment boundary when there is one. */
    const char *tail = c->path + plen - room;
    const char *slash = strchr(tail, '/');

    snprintf(c->err, c->errlen, "#...%s%s: %s", slash ? slash : tail, c->over ? "/..." : "",
             reason);
    return false;
}

static bool oom(struct cctx *c)
{
    return cfail(c, BSC_ENOMEM, "out of memory");
}

#define POP_OVER SIZE_MAX /* the mark of a segment that did not fit */

/* Appends "/<name>" to the current pointer; returns the mark to restore. A segment that does
 * not fit is left out, and so are all below it: messages then show the enclosing pointer
 * followed by "/...". */
static size_t path_push(struct cctx *c, const char *name, size_t len)
{
    size_t mark = c->path_len;

    if (c->over || !js__ptr_push(c->path, sizeof(c->path), &c->path_len, name, len)) {
        c->over++;
        return POP_OVER;
    }
    return mark;
}

static size_t path_push_idx(struct cctx *c, size_t i)
{
    char idx[24];
    int n = snprintf(idx, sizeof(idx), "%zu", i);

    return path_push(c, idx, (size_t)n);
}

static void path_pop(struct cctx *c, size_t mark)
{
    if (mark == POP_OVER) {
        c->over--;
        return;
    }
    c->path_len = mark;
    c->path[mark] = '\0';
}

/* Replaces the current pointer by <ptr> (the root when it does not fit). */
static void path_set(struct cctx *c, const char *ptr)
{
    size_t len = strlen(ptr);

    c->over = 0;
    if (len >= sizeof(c->path)) {
        len = 0;
        c->over = 1;
    }
    memcpy(c->path, ptr, len);
    c->path_len = len;
    c->path[len] = '\0';
}

/* ---- the memo: document object -> compiled node ---------------------------------------------- */

static size_t memo_hash(const struct json_object *o, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)o;

    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static struct js__node *memo_get(const struct cctx *c, const struct json_object *o)
{
    if (!c->memo_cap)
        return NULL;
    for (size_t i = memo_hash(o, c->memo_cap);; i = (i + 1) & (c->memo_cap - 1)) {
        if (!c->memo[i].key)
            return NULL;
        if (c->memo[i].key == o)
            return c->memo[i].node;
    }
}

static void memo_put_slot(struct memo_slot *m, size_t cap, struct json_object *o,
                          struct js__node *n)
{
    size_t i = memo_hash(o, cap);

    while (m[i].key)
        i = (i + 1) & (cap - 1);
    m[i].key = o;
    m[i].node = n;
}

static bool memo_put(struct cctx *c, struct json_object *o, struct js__node *n)
{
    if ((c->memo_n + 1) * 2 > c->memo_cap) {
        size_t cap = c->memo_cap ? c->memo_cap * 2 : 64;
        struct memo_slot *m = calloc(cap, sizeof(*m));

        if (!m)
            return oom(c);
        for (size_t i = 0; i < c->memo_cap; i++)
            if (c->memo[i].key)
                memo_put_slot(m, cap, c->memo[i].key, c->memo[i].node);
        free(c->memo);
        c->memo = m;
        c->memo_cap = cap;
    }
    memo_put_slot(c->memo, c->memo_cap, o, n);
    c->memo_n++;
    return true;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

void js__node_free(struct js__node *n)
{
    if (!n)
        return;
    free(n->path);
    json_object_put(n->const_val);
    for (size_t i = 0; i < n->n_enum; i++)
        json_object_put(n->enum_vals[i]);
    free(n->enum_vals);
    free(n->all_of.v);
    free(n->any_of.v);
    free(n->one_of.v);
    free(n->prefix_items.v);
    js_regex_free(n->pattern);
    free(n->pattern_src);
    for (size_t i = 0; i < n->n_props; i++)
        free(n->props[i].name);
    free(n->props);
    for (size_t i = 0; i < n->n_required; i++)
        free(n->required[i].name);
    free(n->required);
    for (size_t i = 0; i < n->n_pprops; i++) {
        js_regex_free(n->pprops[i].re);
        free(n->pprops[i].source);
    }
    free(n->pprops);
    free(n);
}

void js_free(struct js_schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_nodes; i++)
        js__node_free(s->nodes[i]);
    free(s->nodes);
    free(s);
}

/* A fresh node for document object <o> at the current pointer, owned by the schema and known
 * to the memo before its keywords are read (so a $ref back to it finds it). */
static struct js__node *new_node(struct cctx *c, struct json_object *o)
{
    struct js_schema *s = c->s;
    struct js__node *n;

    if (s->n_nodes >= JS_MAX_SCHEMA_NODES) {
        cfail(c, BSC_ELIMIT, "more than %d subschemas", JS_MAX_SCHEMA_NODES);
        return NULL;
    }
    if (s->n_nodes == s->cap_nodes) {
        size_t cap = s->cap_nodes ? s->cap_nodes * 2 : 16;
        struct js__node **v = realloc(s->nodes, cap * sizeof(*v));

        if (!v) {
            oom(c);
            return NULL;
        }
        s->nodes = v;
        s->cap_nodes = cap;
    }
    n = calloc(1, sizeof(*n));
    if (n && (n->path = malloc(c->path_len + 5)) != NULL) {
        memcpy(n->path, c->path, c->path_len);
        memcpy(n->path + c->path_len, c->over ? "/..." : "", c->over ? 5 : 1);
    }
    if (!n || !n->path) {
        free(n);
        oom(c);
        return NULL;
    }
    s->nodes[s->n_nodes++] = n;
    if (!memo_put(c, o, n))
        return NULL;
    return n;
}

/* ---- reading keyword values ------------------------------------------------------------------ */

static bool get_count(struct cctx *c, struct json_object *v, uint64_t *out)
{
    struct js__num n;

    if (!js__num_get(v, &n) || !js__num_is_integer(&n) ||
        js__num_cmp(&n, &(struct js__num){.kind = JS__NUM_I64}) < 0)
        return cfail(c, BSC_EINVAL, "must be a non-negative integer");
    if (n.kind == JS__NUM_I64)
        *out = (uint64_t)n.v.i;
    else if (n.kind == JS__NUM_U64)
        *out = n.v.u;
    else
        *out = n.v.d >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)n.v.d;
    return true;
}

static bool get_number(struct cctx *c, struct json_object *v, struct js__num *out)
{
    if (!js__num_get(v, out) || !js__num_is_finite(out))
        return cfail(c, BSC_EINVAL, "must be a finite number");
    return true;
}

/* A string keyword value used as a C string (a name, a URI): U+0000 would cut it short. */
static bool get_cstr(struct cctx *c, struct json_object *v, const char **out)
{
    if (!json_object_is_type(v, json_type_string))
        return cfail(c, BSC_EINVAL, "must be a string");
    *out = json_object_get_string(v);
    if (strlen(*out) != (size_t)json_object_get_string_len(v))
        return cfail(c, BSC_EINVAL, "must not contain U+0000");
    return true;
}

/* A value kept for enum/const: it must be JSON an instance could equal. */
static bool get_value(struct cctx *c, struct json_object *v, struct json_object **out)
{
    char ptr[256], why[64];

    if (!js__json_check(v, JS_MAX_INSTANCE_DEPTH, ptr, sizeof(ptr), why, sizeof(why)))
        return cfail(c, BSC_EINVAL, "value at %s: %s", ptr[0] ? ptr : "\"\"", why);
    *out = json_object_get(v);
    return true;
}

/* ---- subschemas ------------------------------------------------------------------------------ */

static struct js__node *compile_schema(struct cctx *c, struct json_object *o);

/* Compiles the subschema <o> one level deeper. */
static struct js__node *child(struct cctx *c, struct json_object *o)
{
    struct js__node *n;

    if (c->depth >= JS_MAX_SCHEMA_DEPTH) {
        cfail(c, BSC_ELIMIT, "subschemas nested deeper than %d", JS_MAX_SCHEMA_DEPTH);
        return NULL;
    }
    c->depth++;
    n = compile_schema(c, o);
    c->depth--;
    return n;
}

/* An array of subschemas into <list>; <nonempty> as allOf/anyOf/oneOf require. */
static bool schema_list(struct cctx *c, struct json_object *v, struct js__list *list,
                        bool nonempty)
{
    size_t n, mark;

    if (!json_object_is_type(v, json_type_array))
        return cfail(c, BSC_EINVAL, "must be an array of schemas");
    n = json_object_array_length(v);
    if (nonempty && n == 0)
        return cfail(c, BSC_EINVAL, "must be a non-empty array of schemas");
    list->v = calloc(n ? n : 1, sizeof(*list->v));
    if (!list->v)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        mark = path_push_idx(c, i);
        list->v[i] = child(c, json_object_array_get_idx(v, i));
        if (!list->v[i])
            return false;
        path_pop(c, mark);
        list->n++;
    }
    return true;
}

/* An object whose members are schemas: properties, $defs, definitions. Calls <each> per
 * member after compiling it (NULL to only compile). */
static bool schema_map(struct cctx *c, struct json_object *v,
                       bool (*each)(struct cctx *, struct js__node *, const char *,
                                    struct js__node *),
                       struct js__node *owner)
{
    struct json_object_iterator it, end;

    if (!json_object_is_type(v, json_type_object))
        return cfail(c, BSC_EINVAL, "must be an object of schemas");
    it = json_object_iter_begin(v);
    end = json_object_iter_end(v);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *name = json_object_iter_peek_name(&it);
        size_t mark = path_push(c, name, strlen(name));
        struct js__node *n = child(c, json_object_iter_peek_value(&it));

        if (!n || (each && !each(c, owner, name, n)))
            return false;
        path_pop(c, mark);
    }
    return true;
}

/* ---- $ref ------------------------------------------------------------------------------------ */

/* The URI fragment <frag> percent-decoded into <out> (at least strlen(frag) + 1 bytes). */
static bool fragment_decode(const char *frag, char *out)
{
    size_t o = 0;

    for (size_t i = 0; frag[i]; i++) {
        if (frag[i] != '%') {
            out[o++] = frag[i];
            continue;
        }
        if (bsc_hex_digit(frag[i + 1]) < 0 || bsc_hex_digit(frag[i + 2]) < 0)
            return false;
        out[o] = (char)(bsc_hex_digit(frag[i + 1]) << 4 | bsc_hex_digit(frag[i + 2]));
        if (out[o++] == '\0')
            return false;
        i += 2;
    }
    out[o] = '\0';
    return true;
}

/* One pointer step from <cur> by the escaped segment <seg>/<len>, unescaped into <tmp>. */
static bool pointer_step(struct json_object **cur, const char *seg, size_t len, char *tmp)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (seg[i] != '~') {
            tmp[n++] = seg[i];
        } else if (i + 1 < len && (seg[i + 1] == '0' || seg[i + 1] == '1')) {
            tmp[n++] = seg[++i] == '0' ? '~' : '/';
        } else {
            return false;
        }
    }
    tmp[n] = '\0';
    if (json_object_is_type(*cur, json_type_object))
        return json_object_object_get_ex(*cur, tmp, cur);
    if (json_object_is_type(*cur, json_type_array)) {
        unsigned long long idx;

        if ((n > 1 && tmp[0] == '0') || !bsc_str_to_u64(bsc_str_make(tmp, n), &idx) ||
            idx >= json_object_array_length(*cur))
            return false;
        *cur = json_object_array_get_idx(*cur, (size_t)idx);
        return true;
    }
    return false;
}

/* Resolves "#<pointer>" in the document into *<target>; *<ptr> gets the decoded pointer
 * (caller frees). */
static bool resolve(struct cctx *c, const char *ref, struct json_object **target, char **ptr)
{
    size_t len = strlen(ref);
    char *dec = malloc(len + 1), *tmp = malloc(len + 1);
    struct json_object *cur = c->doc;
    bool ok = false;

    *ptr = NULL;
    if (!dec || !tmp) {
        oom(c);
        goto done;
    }
    if (ref[0] != '#') {
        cfail(c, BSC_EINVAL, "unsupported $ref \"%.64s\": only \"#...\" inside the document", ref);
        goto done;
    }
    if (!fragment_decode(ref + 1, dec) || (dec[0] && dec[0] != '/')) {
        cfail(c, BSC_EINVAL, "unsupported $ref \"%.64s\": not a JSON pointer", ref);
        goto done;
    }
    for (const char *seg = dec; *seg; ) {
        const char *slash = strchr(seg + 1, '/');
        size_t seglen = slash ? (size_t)(slash - seg - 1) : strlen(seg + 1);

        if (!pointer_step(&cur, seg + 1, seglen, tmp)) {
            cfail(c, BSC_EINVAL, "$ref \"%.64s\" does not resolve inside the document", ref);
            goto done;
        }
        seg = slash ? slash : seg + 1 + seglen;
    }
    if (!json_object_is_type(cur, json_type_object) &&
        !json_object_is_type(cur, json_type_boolean)) {
        cfail(c, BSC_EINVAL, "$ref \"%.64s\" does not point to a schema", ref);
        goto done;
    }
    *target = cur;
    *ptr = dec;
    dec = NULL;
    ok = true;
done:
    free(dec);
    free(tmp);
    return ok;
}

static bool kw_ref(struct cctx *c, struct js__node *n, struct json_object *v)
{
    struct json_object *target;
    struct pending *p;
    const char *ref;
    char *ptr;

    if (!get_cstr(c, v, &ref) || !resolve(c, ref, &target, &ptr))
        return false;
    n->ref = memo_get(c, target);
    if (n->ref) {
        free(ptr);
        return true;
    }
    /* Not compiled yet (a forward reference, or outside any schema position): later. */
    if (c->n_pend == c->cap_pend) {
        size_t cap = c->cap_pend ? c->cap_pend * 2 : 8;
        struct pending *v2 = realloc(c->pend, cap * sizeof(*v2));

        if (!v2) {
            free(ptr);
            return oom(c);
        }
        c->pend = v2;
        c->cap_pend = cap;
    }
    p = &c->pend[c->n_pend++];
    p->node = n;
    p->target = target;
    p->path = ptr;
    return true;
}

/* ---- keywords -------------------------------------------------------------------------------- */

static bool kw_type_name(struct cctx *c, struct js__node *n, const char *name)
{
    for (int t = 0; t < JS__T_COUNT; t++) {
        if (strcmp(name, js__type_name((enum js__type)t)) == 0) {
            if (n->types & JS__TYPE_BIT(t))
                return cfail(c, BSC_EINVAL, "type \"%s\" listed twice", name);
            n->types |= JS__TYPE_BIT(t);
            return true;
        }
    }
    return cfail(c, BSC_EINVAL, "unknown type \"%.64s\"", name);
}

static bool kw_type(struct cctx *c, struct js__node *n, struct json_object *v)
{
    const char *name;
    size_t len;

    n->has |= JS__HAS_TYPE;
    if (json_object_is_type(v, json_type_string))
        return get_cstr(c, v, &name) && kw_type_name(c, n, name);
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0)
        return cfail(c, BSC_EINVAL, "must be a type name or a non-empty array of them");
    len = json_object_array_length(v);
    for (size_t i = 0; i < len; i++) {
        struct json_object *t = json_object_array_get_idx(v, i);

        if (!json_object_is_type(t, json_type_string))
            return cfail(c, BSC_EINVAL, "must be a type name or a non-empty array of them");
        if (!get_cstr(c, t, &name) || !kw_type_name(c, n, name))
            return false;
    }
    return true;
}

static bool add_prop(struct cctx *c, struct js__node *n, const char *name, struct js__node *sub)
{
    struct js__prop *p = &n->props[n->n_props];

    if (!(p->name = bsc_str_dup(bsc_str_cstr(name))))
        return oom(c);
    p->len = strlen(name);
    p->schema = sub;
    n->n_props++;
    return true;
}

static int prop_cmp(const void *x, const void *y)
{
    const struct js__prop *a = x, *b = y;

    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->name, b->name, a->len);
}

static bool kw_properties(struct cctx *c, struct js__node *n, struct json_object *v)
{
    if (json_object_is_type(v, json_type_object)) {
        n->props = calloc((size_t)json_object_object_length(v) + 1, sizeof(*n->props));
        if (!n->props)
            return oom(c);
    }
    if (!schema_map(c, v, add_prop, n))
        return false;
    if (n->n_props)
        qsort(n->props, n->n_props, sizeof(*n->props), prop_cmp);
    return true;
}

static bool kw_required(struct cctx *c, struct js__node *n, struct json_object *v)
{
    size_t len;

    if (!json_object_is_type(v, json_type_array))
        return cfail(c, BSC_EINVAL, "must be an array of strings");
    len = json_object_array_length(v);
    n->required = calloc(len ? len : 1, sizeof(*n->required));
    if (!n->required)
        return oom(c);
    for (size_t i = 0; i < len; i++) {
        struct json_object *s = json_object_array_get_idx(v, i);
        struct js__prop *r = &n->required[i];

        if (!json_object_is_type(s, json_type_string))
            return cfail(c, BSC_EINVAL, "must be an array of strings");
        r->len = (size_t)json_object_get_string_len(s);
        /* Member names cannot hold U+0000 (json-c keeps them as C strings, and the strict
         * parser refuses them), so such a requirement could never be met. */
        if (memchr(json_object_get_string(s), '\0', r->len))
            return cfail(c, BSC_EINVAL, "a required name contains U+0000");
        r->name = bsc_str_dup(bsc_str_make(json_object_get_string(s), r->len));
        if (!r->name)
            return oom(c);
        n->n_required++;
    }
    return true;
}

static bool kw_additional(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return (n->additional = child(c, v)) != NULL;
}

static bool compile_pattern(struct cctx *c, const char *src, size_t len, struct js_regex **re)
{
    char why[160];
    enum bsc_err err = js_regex_compile(src, len, 0, re, why, sizeof(why));

    if (err)
        return cfail(c, err, "pattern \"%.64s\": %s", src, why);
    c->re_states += js_regex_states(*re);
    if (c->re_states > JS_MAX_PATTERN_TOTAL)
        return cfail(c, BSC_ELIMIT, "patterns need more than %d automaton states in total",
                     JS_MAX_PATTERN_TOTAL);
    return true;
}

static bool kw_pattern_props(struct cctx *c, struct js__node *n, struct json_object *v)
{
    struct json_object_iterator it, end;

    if (!json_object_is_type(v, json_type_object))
        return cfail(c, BSC_EINVAL, "must be an object of schemas");
    n->pprops = calloc((size_t)json_object_object_length(v) + 1, sizeof(*n->pprops));
    if (!n->pprops)
        return oom(c);
    it = json_object_iter_begin(v);
    end = json_object_iter_end(v);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *src = json_object_iter_peek_name(&it);
        struct js__pprop *pp = &n->pprops[n->n_pprops];
        size_t mark = path_push(c, src, strlen(src));

        if (!(pp->source = bsc_str_dup(bsc_str_cstr(src))))
            return oom(c);
        n->n_pprops++;
        if (!compile_pattern(c, src, strlen(src), &pp->re))
            return false;
        if (!(pp->schema = child(c, json_object_iter_peek_value(&it))))
            return false;
        path_pop(c, mark);
    }
    return true;
}

static bool kw_items(struct cctx *c, struct js__node *n, struct json_object *v)
{
    if (json_object_is_type(v, json_type_array))
        return cfail(c, BSC_EINVAL,
                     "unsupported: \"items\" as an array (the draft-07 tuple form); use "
                     "\"prefixItems\"");
    return (n->items = child(c, v)) != NULL;
}

static bool kw_prefix_items(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return schema_list(c, v, &n->prefix_items, true);
}

static bool kw_enum(struct cctx *c, struct js__node *n, struct json_object *v)
{
    size_t len;

    if (!json_object_is_type(v, json_type_array))
        return cfail(c, BSC_EINVAL, "must be an array");
    len = json_object_array_length(v);
    n->has |= JS__HAS_ENUM;
    n->enum_vals = calloc(len ? len : 1, sizeof(*n->enum_vals));
    if (!n->enum_vals)
        return oom(c);
    for (size_t i = 0; i < len; i++) {
        size_t mark = path_push_idx(c, i);

        if (!get_value(c, json_object_array_get_idx(v, i), &n->enum_vals[i]))
            return false;
        n->n_enum++;
        path_pop(c, mark);
    }
    return true;
}

static bool kw_const(struct cctx *c, struct js__node *n, struct json_object *v)
{
    n->has |= JS__HAS_CONST;
    return get_value(c, v, &n->const_val);
}

static bool kw_all_of(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return schema_list(c, v, &n->all_of, true);
}

static bool kw_any_of(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return schema_list(c, v, &n->any_of, true);
}

static bool kw_one_of(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return schema_list(c, v, &n->one_of, true);
}

static bool kw_not(struct cctx *c, struct js__node *n, struct json_object *v)
{
    return (n->not_schema = child(c, v)) != NULL;
}

static bool kw_defs(struct cctx *c, struct js__node *n, struct json_object *v)
{
    (void)n;
    return schema_map(c, v, NULL, NULL);
}

#define COUNT_KW(fn, field, flag)                                                          \
    static bool fn(struct cctx *c, struct js__node *n, struct json_object *v)              \
    {                                                                                      \
        n->has |= (flag);                                                                  \
        return get_count(c, v, &n->field);                                                 \
    }
COUNT_KW(kw_min_length, min_len, JS__HAS_MIN_LEN)
COUNT_KW(kw_max_length, max_len, JS__HAS_MAX_LEN)
COUNT_KW(kw_min_items, min_items, JS__HAS_MIN_ITEMS)
COUNT_KW(kw_max_items, max_items, JS__HAS_MAX_ITEMS)
COUNT_KW(kw_min_props, min_props, JS__HAS_MIN_PROPS)
COUNT_KW(kw_max_props, max_props, JS__HAS_MAX_PROPS)
#undef COUNT_KW

#define NUMBER_KW(fn, field, flag)                                                         \
    static bool fn(struct cctx *c, struct js__node *n, struct json_object *v)              \
    {                                                                                      \
        n->has |= (flag);                                                                  \
        return get_number(c, v, &n->field);                                                \
    }
NUMBER_KW(kw_minimum, minimum, JS__HAS_MINIMUM)
NUMBER_KW(kw_maximum, maximum, JS__HAS_MAXIMUM)
NUMBER_KW(kw_ex_min, ex_min, JS__HAS_EXMIN)
NUMBER_KW(kw_ex_max, ex_max, JS__HAS_EXMAX)
#undef NUMBER_KW

static bool kw_multiple_of(struct cctx *c, struct js__node *n, struct json_object *v)
{
    n->has |= JS__HAS_MULTIPLE;
    if (!get_number(c, v, &n->multiple_of))
        return false;
    if (js__num_cmp(&n->multiple_of, &(struct js__num){.kind = JS__NUM_I64}) <= 0)
        return cfail(c, BSC_EINVAL, "must be greater than 0");
    return true;
}

static bool kw_unique(struct cctx *c, struct js__node *n, struct json_object *v)
{
    if (!json_object_is_type(v, json_type_boolean))
        return cfail(c, BSC_EINVAL, "must be a boolean");
    if (json_object_get_boolean(v))
        n->has |= JS__HAS_UNIQUE;
    return true;
}

static bool kw_pattern(struct cctx *c, struct js__node *n, struct json_object *v)
{
    size_t len;

    if (!json_object_is_type(v, json_type_string))
        return cfail(c, BSC_EINVAL, "must be a string");
    len = (size_t)json_object_get_string_len(v);
    if (!(n->pattern_src = bsc_str_dup(bsc_str_make(json_object_get_string(v), len))))
        return oom(c);
    return compile_pattern(c, n->pattern_src, len, &n->pattern);
}

static bool kw_format(struct cctx *c, struct js__node *n, struct json_object *v)
{
    const char *name;

    if (!get_cstr(c, v, &name))
        return false;
    n->format = js__format_lookup(name);
    return true;
}

static bool kw_schema_uri(struct cctx *c, struct js__node *n, struct json_object *v)
{
    /* The dialect URI only means something on the document root (always the first node); the
     * subset has the same meaning in drafts 6 to 2020-12, and what differs (tuple items,
     * boolean exclusiveMinimum) is refused by those keywords themselves. */
    if (c->depth != 0 || c->s->nodes[0] != n)
        return cfail(c, BSC_EINVAL, "unsupported keyword \"$schema\" below the document root");
    if (!json_object_is_type(v, json_type_string))
        return cfail(c, BSC_EINVAL, "must be a string");
    return true;
}

static bool kw_annotation(struct cctx *c, struct js__node *n, struct json_object *v)
{
    (void)c;
    (void)n;
    (void)v;
    return true;
}

typedef bool kw_fn(struct cctx *c, struct js__node *n, struct json_object *v);

static const struct {
    const char *name;
    kw_fn *fn;
} keywords[] = {
    {"type", kw_type},
    {"properties", kw_properties},
    {"required", kw_required},
    {"additionalProperties", kw_additional},
    {"patternProperties", kw_pattern_props},
    {"items", kw_items},
    {"prefixItems", kw_prefix_items},
    {"enum", kw_enum},
    {"const", kw_const},
    {"allOf", kw_all_of},
    {"anyOf", kw_any_of},
    {"oneOf", kw_one_of},
    {"not", kw_not},
    {"$ref", kw_ref},
    {"$defs", kw_defs},
    {"definitions", kw_defs},
    {"minLength", kw_min_length},
    {"maxLength", kw_max_length},
    {"pattern", kw_pattern},
    {"format", kw_format},
    {"minimum", kw_minimum},
    {"maximum", kw_maximum},
    {"exclusiveMinimum", kw_ex_min},
    {"exclusiveMaximum", kw_ex_max},
    {"multipleOf", kw_multiple_of},
    {"minItems", kw_min_items},
    {"maxItems", kw_max_items},
    {"uniqueItems", kw_unique},
    {"minProperties", kw_min_props},
    {"maxProperties", kw_max_props},
    {"$schema", kw_schema_uri},
    /* Annotations: they describe, they never change what validates. */
    {"title", kw_annotation},
    {"description", kw_annotation},
    {"examples", kw_annotation},
    {"default", kw_annotation},
    {"$comment", kw_annotation},
    {"deprecated", kw_annotation},
    {"readOnly", kw_annotation},
    {"writeOnly", kw_annotation},
};

/* Hints for unsupported keywords that clients commonly send. */
static const struct {
    const char *name;
    const char *hint;
} hints[] = {
    {"nullable", " (OpenAPI 3.0; use \"type\": [\"...\", \"null\"])"},
    {"$id", " (no base URI changes: $ref stays inside the document)"},
    {"additionalItems", " (draft-07; use \"items\" after \"prefixItems\")"},
};

static bool unsupported(struct cctx *c, const char *name)
{
    const char *hint = "";

    for (size_t i = 0; i < BSC_ARRAY_LEN(hints); i++)
        if (strcmp(name, hints[i].name) == 0)
            hint = hints[i].hint;
    return cfail(c, BSC_EINVAL, "unsupported keyword \"%.64s\"%s", name, hint);
}

static bool keyword(struct cctx *c, struct js__node *n, const char *name, struct json_object *v)
{
    size_t mark = path_push(c, name, strlen(name));

    for (size_t i = 0; i < BSC_ARRAY_LEN(keywords); i++) {
        if (strcmp(name, keywords[i].name) == 0) {
            if (!keywords[i].fn(c, n, v))
                return false;
            path_pop(c, mark);
            return true;
        }
    }
    return unsupported(c, name);
}

static struct js__node *compile_schema(struct cctx *c, struct json_object *o)
{
    struct json_object_iterator it, end;
    struct js__node *n;

    if (!json_object_is_type(o, json_type_object) && !json_object_is_type(o, json_type_boolean)) {
        cfail(c, BSC_EINVAL, "a schema must be an object or a boolean");
        return NULL;
    }
    if ((n = memo_get(c, o)) != NULL)
        return n;
    if (!(n = new_node(c, o)))
        return NULL;
    if (json_object_is_type(o, json_type_boolean)) {
        n->is_bool = true;
        n->bool_value = json_object_get_boolean(o);
        return n;
    }
    it = json_object_iter_begin(o);
    end = json_object_iter_end(o);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        if (!keyword(c, n, json_object_iter_peek_name(&it), json_object_iter_peek_value(&it)))
            return NULL;
    return n;
}

/* ---- after the tree: pending $refs, then the chain check ------------------------------------- */

static bool resolve_pending(struct cctx *c)
{
    /* Compiling a target can add entries: the loop reads n_pend afresh each time. */
    for (size_t i = 0; i < c->n_pend; i++) {
        struct pending *p = &c->pend[i];
        struct js__node *target = memo_get(c, p->target);

        if (!target) {
            path_set(c, p->path);
            c->depth = 0;
            target = compile_schema(c, p->target);
            if (!target)
                return false;
        }
        c->pend[i].node->ref = target;
    }
    return true;
}

/* The longest chain of subschemas applied to the same value from <n>: $ref, allOf, anyOf,
 * oneOf, not. A cycle there would recurse forever whatever the instance. */
static bool chain(struct cctx *c, struct js__node *n, unsigned hops);

static bool chain_via(struct cctx *c, struct js__node *n, struct js__node *next, unsigned hops)
{
    if (!chain(c, next, hops + 1))
        return false;
    if (next->chain + 1 > n->chain)
        n->chain = next->chain + 1;
    return true;
}

static bool chain_list(struct cctx *c, struct js__node *n, const struct js__list *l,
                       unsigned hops)
{
    for (size_t i = 0; i < l->n; i++)
        if (!chain_via(c, n, l->v[i], hops))
            return false;
    return true;
}

static bool chain(struct cctx *c, struct js__node *n, unsigned hops)
{
    if (n->visit == 2)
        return true;
    path_set(c, n->path);
    if (n->visit == 1)
        return cfail(c, BSC_EINVAL, "$ref cycle that never descends into the instance");
    if (hops > JS_MAX_REF_CHAIN)
        return cfail(c, BSC_ELIMIT, "more than %d $ref/allOf/anyOf/oneOf/not in a chain",
                     JS_MAX_REF_CHAIN);
    n->visit = 1;
    if ((n->ref && !chain_via(c, n, n->ref, hops)) || !chain_list(c, n, &n->all_of, hops) ||
        !chain_list(c, n, &n->any_of, hops) || !chain_list(c, n, &n->one_of, hops) ||
        (n->not_schema && !chain_via(c, n, n->not_schema, hops)))
        return false;
    n->visit = 2;
    if (hops + n->chain > JS_MAX_REF_CHAIN)
        return cfail(c, BSC_ELIMIT, "more than %d $ref/allOf/anyOf/oneOf/not in a chain",
                     JS_MAX_REF_CHAIN);
    return true;
}

static void cctx_cleanup(struct cctx *c)
{
    for (size_t i = 0; i < c->n_pend; i++)
        free(c->pend[i].path);
    free(c->pend);
    free(c->memo);
}

enum bsc_err js_compile(struct json_object *schema, struct js_schema **out, char *err,
                        size_t errlen)
{
    struct cctx c = {0};

    *out = NULL;
    c.err = err;
    c.errlen = errlen;
    if (errlen)
        err[0] = '\0';
    c.doc = schema;
    c.s = calloc(1, sizeof(*c.s));
    if (!c.s) {
        oom(&c);
        return c.rc;
    }
    c.s->root = compile_schema(&c, schema);
    if (c.s->root && resolve_pending(&c)) {
        for (size_t i = 0; i < c.s->n_nodes; i++)
            if (!chain(&c, c.s->nodes[i], 0))
                break;
    }
    cctx_cleanup(&c);
    if (c.rc) {
        js_free(c.s);
        return c.rc;
    }
    *out = c.s;
    return BSC_OK;
}
