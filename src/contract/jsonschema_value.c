/* SPDX-License-Identifier: MIT */
/* jsonschema_value.c -- JSON values as JSON Schema sees them: types (1.0 is an integer),
 * exact number comparison across json-c's int64/uint64/double, equality and a matching hash
 * (numbers by value, objects independent of member order), the UTF-8 and sanity check of a
 * caller's json-c tree, and RFC 6901 pointer segments. The strict text parser is in
 * jsonschema_parse.c. See docs/internals/jsonschema.md. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/utf8.h"
#include "contract/internal.h"

#define TWO_63 9223372036854775808.0
#define TWO_64 18446744073709551616.0

/* ---- types ----------------------------------------------------------------------------------- */

static const char *const type_names[JS__T_COUNT] = {
    [JS__T_NULL] = "null",     [JS__T_BOOLEAN] = "boolean", [JS__T_OBJECT] = "object",
    [JS__T_ARRAY] = "array",   [JS__T_NUMBER] = "number",   [JS__T_STRING] = "string",
    [JS__T_INTEGER] = "integer",
};

const char *js__type_name(enum js__type t)
{
    return t < JS__T_COUNT ? type_names[t] : "?";
}

enum js__type js__type_of(struct json_object *o)
{
    struct js__num n;

    switch (json_object_get_type(o)) {
    case json_type_null: return JS__T_NULL;
    case json_type_boolean: return JS__T_BOOLEAN;
    case json_type_object: return JS__T_OBJECT;
    case json_type_array: return JS__T_ARRAY;
    case json_type_string: return JS__T_STRING;
    case json_type_int: return JS__T_INTEGER;
    case json_type_double:
        js__num_get(o, &n);
        return js__num_is_integer(&n) ? JS__T_INTEGER : JS__T_NUMBER;
    }
    return JS__T_NULL;
}

/* ---- numbers --------------------------------------------------------------------------------- */

bool js__num_get(struct json_object *o, struct js__num *n)
{
    switch (json_object_get_type(o)) {
    case json_type_int:
        n->kind = JS__NUM_I64;
        n->v.i = json_object_get_int64(o);
        /* json-c keeps integers past INT64_MAX as uint64; get_int64 saturates on them. */
        if (n->v.i == INT64_MAX && json_object_get_uint64(o) > (uint64_t)INT64_MAX) {
            n->kind = JS__NUM_U64;
            n->v.u = json_object_get_uint64(o);
        }
        return true;
    case json_type_double:
        n->kind = JS__NUM_DBL;
        n->v.d = json_object_get_double(o);
        return true;
    default: return false;
    }
}

bool js__num_is_finite(const struct js__num *n)
{
    return n->kind != JS__NUM_DBL || isfinite(n->v.d);
}

bool js__num_is_integer(const struct js__num *n)
{
    return n->kind != JS__NUM_DBL || (isfinite(n->v.d) && n->v.d == trunc(n->v.d));
}

static int sign3(double d)
{
    return d < 0 ? -1 : d > 0;
}

/* <i> against the finite double <d>, exactly: the integral part is compared as an integer, so
 * no rounding of <i> to a double can make two different values equal. */
static int cmp_i64_dbl(int64_t i, double d)
{
    double t;
    int64_t ti;

    if (d >= TWO_63)
        return -1;
    if (d < -TWO_63)
        return 1;
    t = trunc(d);
    ti = (int64_t)t;
    if (i != ti)
        return i < ti ? -1 : 1;
    return -sign3(d - t);
}

static int cmp_u64_dbl(uint64_t u, double d)
{
    double t;
    uint64_t tu;

    if (d >= TWO_64)
        return -1;
    if (d < 0)
        return 1;
    t = trunc(d);
    tu = (uint64_t)t;
    if (u != tu)
        return u < tu ? -1 : 1;
    return -sign3(d - t);
}

int js__num_cmp(const struct js__num *a, const struct js__num *b)
{
    if (a->kind == JS__NUM_DBL && b->kind == JS__NUM_DBL)
        return a->v.d < b->v.d ? -1 : a->v.d > b->v.d;
    if (a->kind == JS__NUM_DBL)
        return -js__num_cmp(b, a);
    if (b->kind == JS__NUM_DBL)
        return a->kind == JS__NUM_I64 ? cmp_i64_dbl(a->v.i, b->v.d) : cmp_u64_dbl(a->v.u, b->v.d);
    if (a->kind == b->kind) {
        if (a->kind == JS__NUM_I64)
            return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
        return a->v.u < b->v.u ? -1 : a->v.u > b->v.u;
    }
    /* One int64, one uint64 past INT64_MAX: the uint64 is larger. */
    return a->kind == JS__NUM_U64 ? 1 : -1;
}

/* The magnitude of an integral <n> below 2^64. */
static bool int_magnitude(const struct js__num *n, uint64_t *mag)
{
    switch (n->kind) {
    case JS__NUM_I64:
        *mag = n->v.i < 0 ? (uint64_t)(-(n->v.i + 1)) + 1 : (uint64_t)n->v.i;
        return true;
    case JS__NUM_U64: *mag = n->v.u; return true;
    case JS__NUM_DBL:
        if (!js__num_is_integer(n) || fabs(n->v.d) >= TWO_64)
            return false;
        *mag = (uint64_t)fabs(n->v.d);
        return true;
    }
    return false;
}

static double to_double(const struct js__num *n)
{
    switch (n->kind) {
    case JS__NUM_I64: return (double)n->v.i;
    case JS__NUM_U64: return (double)n->v.u;
    case JS__NUM_DBL: return n->v.d;
    }
    return 0;
}

bool js__num_is_multiple(const struct js__num *x, const struct js__num *m)
{
    uint64_t xm, mm;
    double q, r;

    if (int_magnitude(x, &xm) && int_magnitude(m, &mm) && mm != 0)
        return xm % mm == 0;
    /* Decimal fractions have no exact double (0.1), so the quotient is allowed a few ulps. */
    q = to_double(x) / to_double(m);
    if (!isfinite(q))
        return false;
    r = nearbyint(q);
    return fabs(q - r) <= 16 * DBL_EPSILON * fmax(1.0, fabs(q));
}

void js__num_fmt(const struct js__num *n, char *buf, size_t len)
{
    switch (n->kind) {
    case JS__NUM_I64: snprintf(buf, len, "%" PRId64, n->v.i); return;
    case JS__NUM_U64: snprintf(buf, len, "%" PRIu64, n->v.u); return;
    case JS__NUM_DBL:
        /* The shortest of %.15g / %.17g that reads back as the same double. */
        snprintf(buf, len, "%.15g", n->v.d);
        if (strtod(buf, NULL) != n->v.d)
            snprintf(buf, len, "%.17g", n->v.d);
        return;
    }
}

/* ---- equality and hashing -------------------------------------------------------------------- */

static bool is_number(json_type t)
{
    return t == json_type_int || t == json_type_double;
}

static bool spend(uint64_t *budget)
{
    if (*budget == 0)
        return false;
    (*budget)--;
    return true;
}

static bool equal_objects(struct json_object *a, struct json_object *b, uint64_t *budget)
{
    struct json_object_iterator it = json_object_iter_begin(a);
    struct json_object_iterator end = json_object_iter_end(a);
    struct json_object *bv;

    if (json_object_object_length(a) != json_object_object_length(b))
        return false;
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        if (!json_object_object_get_ex(b, json_object_iter_peek_name(&it), &bv))
            return false;
        if (!js__json_equal(json_object_iter_peek_value(&it), bv, budget))
            return false;
    }
    return true;
}

bool js__json_equal(struct json_object *a, struct json_object *b, uint64_t *budget)
{
    json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
    struct js__num na, nb;
    size_t n;

    if (!spend(budget))
        return false;
    if (is_number(ta) && is_number(tb)) {
        js__num_get(a, &na);
        js__num_get(b, &nb);
        return js__num_cmp(&na, &nb) == 0;
    }
    if (ta != tb)
        return false;
    switch (ta) {
    case json_type_null: return true;
    case json_type_boolean: return json_object_get_boolean(a) == json_object_get_boolean(b);
    case json_type_string:
        n = (size_t)json_object_get_string_len(a);
        return n == (size_t)json_object_get_string_len(b) &&
               memcmp(json_object_get_string(a), json_object_get_string(b), n) == 0;
    case json_type_array:
        n = json_object_array_length(a);
        if (n != json_object_array_length(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!js__json_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i),
                                budget))
                return false;
        return true;
    case json_type_object: return equal_objects(a, b, budget);
    default: return false;
    }
}

/* splitmix64's finalizer: every input bit affects every output bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint64_t hash_bytes(uint64_t seed, const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ seed;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return mix64(h ^ len);
}

/* Equal numbers must hash equal whatever json-c type holds them: integral values below 2^64
 * hash as integers, the rest as doubles. */
static uint64_t hash_number(struct json_object *o)
{
    struct js__num n;
    uint64_t mag, bits;

    js__num_get(o, &n);
    if (int_magnitude(&n, &mag))
        return mix64(mag ^ (js__num_cmp(&n, &(struct js__num){.kind = JS__NUM_I64}) < 0
                                ? 0x5555555555555555ull
                                : 0x1111111111111111ull));
    memcpy(&bits, &n.v.d, sizeof(bits));
    return mix64(bits ^ 0x2222222222222222ull);
}

uint64_t js__json_hash(struct json_object *o, uint64_t *budget)
{
    struct json_object_iterator it, end;
    uint64_t h;
    size_t n;

    if (!spend(budget))
        return 0;
    switch (json_object_get_type(o)) {
    case json_type_null: return 0x3333333333333333ull;
    case json_type_boolean: return json_object_get_boolean(o) ? 0x4444ull : 0x6666ull;
    case json_type_int:
    case json_type_double: return hash_number(o);
    case json_type_string:
        return hash_bytes(7, json_object_get_string(o), (size_t)json_object_get_string_len(o));
    case json_type_array:
        h = 0x7777777777777777ull;
        n = json_object_array_length(o);
        for (size_t i = 0; i < n; i++)
            h = mix64(h ^ js__json_hash(json_object_array_get_idx(o, i), budget));
        return mix64(h ^ n);
    case json_type_object:
        /* A sum of per-member hashes does not depend on the member order. */
        h = 0x8888888888888888ull;
        it = json_object_iter_begin(o);
        end = json_object_iter_end(o);
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
            const char *k = json_object_iter_peek_name(&it);

            h += mix64(hash_bytes(11, k, strlen(k)) ^
                       js__json_hash(json_object_iter_peek_value(&it), budget));
        }
        return mix64(h);
    }
    return 0;
}

/* ---- UTF-8 ----------------------------------------------------------------------------------- */

size_t js__utf8_count(const char *p, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)p[i] & 0xc0) != 0x80;
    return n;
}

/* ---- pointers -------------------------------------------------------------------------------- */

bool js__ptr_push(char *buf, size_t cap, size_t *len, const char *name, size_t namelen)
{
    size_t need = 1, at = *len;

    for (size_t i = 0; i < namelen; i++)
        need += name[i] == '~' || name[i] == '/' ? 2 : 1;
    if (need >= cap - at)
        return false;
    buf[at++] = '/';
    for (size_t i = 0; i < namelen; i++) {
        if (name[i] == '~' || name[i] == '/') {
            buf[at++] = '~';
            buf[at++] = name[i] == '~' ? '0' : '1';
        } else {
            buf[at++] = name[i];
        }
    }
    buf[at] = '\0';
    *len = at;
    return true;
}

/* ---- checking a caller's tree ---------------------------------------------------------------- */

struct check {
    char *ptr;
    size_t cap, len;
    unsigned over; /* segments that did not fit: the pointer stays a true prefix */
    char *why;
    size_t whylen;
    unsigned max_depth;
};

static bool check_fail(struct check *c, const char *why)
{
    snprintf(c->why, c->whylen, "%s", why);
    return false;
}

static bool check_value(struct check *c, struct json_object *o, unsigned depth);

static bool check_child(struct check *c, const char *name, size_t len, struct json_object *v,
                        unsigned depth)
{
    size_t mark = c->len;
    bool pushed;

    /* A pointer too long for the caller's buffer stops growing: it stays a true prefix. */
    pushed = !c->over && js__ptr_push(c->ptr, c->cap, &c->len, name, len);
    c->over += !pushed;
    if (!check_value(c, v, depth))
        return false;
    c->over -= !pushed;
    c->len = mark;
    c->ptr[mark] = '\0';
    return true;
}

static bool check_value(struct check *c, struct json_object *o, unsigned depth)
{
    struct json_object_iterator it, end;
    struct js__num n;
    char idx[24];

    switch (json_object_get_type(o)) {
    case json_type_double:
        js__num_get(o, &n);
        return js__num_is_finite(&n) || check_fail(c, "non-finite number");
    case json_type_string:
        return bsc_utf8_valid(json_object_get_string(o), (size_t)json_object_get_string_len(o)) ||
               check_fail(c, "string is not UTF-8");
    case json_type_array:
        if (depth >= c->max_depth)
            return check_fail(c, "nested too deep");
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            int k = snprintf(idx, sizeof(idx), "%zu", i);

            if (!check_child(c, idx, (size_t)k, json_object_array_get_idx(o, i), depth + 1))
                return false;
        }
        return true;
    case json_type_object:
        if (depth >= c->max_depth)
            return check_fail(c, "nested too deep");
        it = json_object_iter_begin(o);
        end = json_object_iter_end(o);
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
            const char *k = json_object_iter_peek_name(&it);
            size_t klen = strlen(k);

            if (!bsc_utf8_valid(k, klen))
                return check_fail(c, "member name is not UTF-8");
            if (!check_child(c, k, klen, json_object_iter_peek_value(&it), depth + 1))
                return false;
        }
        return true;
    default: return true;
    }
}

bool js__json_check(struct json_object *o, unsigned max_depth, char *ptr, size_t ptrlen,
                    char *why, size_t whylen)
{
    struct check c = {ptr, ptrlen, 0, 0, why, whylen, max_depth};

    ptr[0] = '\0';
    why[0] = '\0';
    return check_value(&c, o, 0);
}
