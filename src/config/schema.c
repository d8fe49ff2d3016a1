/* SPDX-License-Identifier: MIT */
/* schema.c -- the table-driven decoder: one struct cfg__field per YAML key says its type,
 * range and where it lands (offsetof). cfg__decode_map walks a map against a table and
 * reports unknown keys (with the closest known one), wrong types, out-of-range numbers,
 * bad enum values (listing the allowed ones) and missing required keys, all of them, each
 * at its place. Null keeps a field's default. The tables themselves are in validate.c.
 * cfg__map_find, the lookup of a key in a map of the tree, is here for the same readers.
 * See docs/internals/config.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/diag.h"
#include "config/internal.h"
#include "config/schema.h"
#include "config/secrets.h"
#include "config/types.h"
#include "core/compat.h"
#include "core/str.h"

_Static_assert(sizeof(enum cfg_probe) == sizeof(unsigned), "enums are written as unsigned");

void *cfg__oom(struct cfg__v *v)
{
    v->oom = true;
    return NULL;
}

const struct cfg__entry *cfg__map_find(const struct cfg__node *map, const char *key)
{
    const struct cfg__entry *found = NULL;
    size_t len = strlen(key);

    if (!map || map->kind != CFG__MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++) {
        const struct cfg__node *k = map->items[i].key;

        if (k->len == len && memcmp(k->text, key, len) == 0)
            found = &map->items[i];
    }
    return found;
}

/* ---- message pieces ------------------------------------------------------------------- */

void cfg__keyref(char *out, size_t size, const char *where, const char *key)
{
    if (where)
        snprintf(out, size, "'%s' in %s", key, where);
    else
        snprintf(out, size, "'%s'", key);
}

void cfg__subwhere(char *out, size_t size, const char *where, const char *key)
{
    if (!where)
        snprintf(out, size, "%s", key);
    else if (strchr(where, '\''))
        snprintf(out, size, "%s %s", where, key); /* route 'x' envelope */
    else
        snprintf(out, size, "%s.%s", where, key); /* retry.backoff */
}

void cfg__describe(char *out, size_t size, const struct cfg__node *n)
{
    const char *t;
    size_t len, shown = 0;
    size_t o = 0;

    if (n->kind == CFG__MAP) {
        snprintf(out, size, "a map");
        return;
    }
    if (n->kind == CFG__SEQ) {
        snprintf(out, size, "a list");
        return;
    }
    if (n->is_null) {
        snprintf(out, size, "null");
        return;
    }
    /* What was written, not its expansion: a secret from ${VAR} must not be echoed. */
    t = n->raw ? n->raw : n->text;
    len = strlen(t);
    if (size < 8)
        return;
    out[o++] = '\'';
    for (size_t i = 0; i < len && o + 6 < size && shown < 40; i++, shown++) {
        unsigned char c = (unsigned char)t[i];

        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (shown < len && o + 5 < size) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = '\0';
}

/* True when a scalar found at <key> may be a secret: a secret-like name, or a map that
 * holds secrets written as a plain value by mistake (`admin: sk-...`, `headers: "..."`). */
static bool hides_value(const char *key)
{
    return key && (cfg__is_secret_name(key) || strcmp(key, "admin") == 0 ||
                   strcmp(key, "headers") == 0);
}

/* The last word of <where> ("provider 'p' headers" -> "headers", "retry.backoff" ->
 * "backoff"), in <buf>. */
static const char *last_word(char *buf, size_t size, const char *where)
{
    const char *w = where ? where : "", *sp = strrchr(w, ' '), *dot = strrchr(w, '.');

    if (dot > sp)
        sp = dot;
    snprintf(buf, size, "%s", sp ? sp + 1 : w);
    return buf;
}

void cfg__describe_at(char *out, size_t size, const char *key, const struct cfg__node *n)
{
    /* Even as written: a literal key in the file must not reach a log or a CI output. */
    if (n->kind == CFG__SCALAR && !n->is_null && hides_value(key))
        snprintf(out, size, "a string (not shown)");
    else
        cfg__describe(out, size, n);
}

void cfg__bad_type(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                   const char *what)
{
    char kr[320], got[64];

    cfg__keyref(kr, sizeof(kr), where, key);
    cfg__describe_at(got, sizeof(got), key, n);
    cfg__diag(v->s, false, n->line, n->column, "%s: expected %s, got %s", kr, what, got);
}

/* Writes "a, b, c" into <out>. */
static void join_names(char *out, size_t size, const char *const *names, size_t n)
{
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n && o < size; i++) {
        int w = snprintf(out + o, size - o, "%s%s", i ? ", " : "", names[i]);

        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* ---- scalar readers ------------------------------------------------------------------- */

static bool is_scalar(struct cfg__v *v, const struct cfg__node *n, const char *where,
                      const char *key, const char *what)
{
    if (n->bad || n->is_null)
        return false;
    if (n->kind != CFG__SCALAR) {
        cfg__bad_type(v, n, where, key, what);
        return false;
    }
    return true;
}

static void out_of_range(struct cfg__v *v, const struct cfg__node *n, const char *where,
                         const char *key, uint64_t lo, uint64_t hi)
{
    char kr[320], got[64];

    cfg__keyref(kr, sizeof(kr), where, key);
    cfg__describe_at(got, sizeof(got), key, n);
    cfg__diag(v->s, false, n->line, n->column, "%s: must be between %llu and %llu, got %s", kr,
              (unsigned long long)lo, (unsigned long long)hi, got);
}

bool cfg__get_u64(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                  uint64_t lo, uint64_t hi, uint64_t *out)
{
    struct bsc_str s;
    unsigned long long val;
    bool negative;

    if (!is_scalar(v, n, where, key, "an integer"))
        return false;
    s = bsc_str_make(n->text, n->len);
    negative = s.len > 1 && s.p[0] == '-';
    if (negative || (s.len > 1 && s.p[0] == '+')) {
        s.p++;
        s.len--;
    }
    if (!bsc_str_to_u64(s, &val)) {
        bool digits = s.len > 0;

        for (size_t i = 0; i < s.len; i++)
            digits = digits && s.p[i] >= '0' && s.p[i] <= '9';
        if (digits) /* only overflow makes a string of digits fail */
            out_of_range(v, n, where, key, lo, hi);
        else
            cfg__bad_type(v, n, where, key, "an integer");
        return false;
    }
    if ((negative && val != 0) || val < lo || val > hi) {
        out_of_range(v, n, where, key, lo, hi);
        return false;
    }
    *out = val;
    return true;
}

static bool parse_double(const char *t, double *out)
{
    char *end;
    double d;

    /* Only decimal notation: strtod would also take hex, inf and nan. */
    if (!*t)
        return false;
    for (const char *p = t; *p; p++)
        if (!strchr("0123456789+-.eE", *p))
            return false;
    d = strtod(t, &end);
    if (*end || end == t || !isfinite(d))
        return false;
    *out = d;
    return true;
}

static bool get_double(struct cfg__v *v, const struct cfg__node *n, const char *where,
                       const char *key, const struct cfg__field *f, double *out)
{
    char kr[320], got[64];
    double d;
    bool low;

    if (!is_scalar(v, n, where, key, "a number"))
        return false;
    if (!parse_double(n->text, &d)) {
        cfg__bad_type(v, n, where, key, "a number");
        return false;
    }
    low = f->lo_open ? d <= f->dlo : d < f->dlo;
    if (low || d > f->dhi) {
        cfg__keyref(kr, sizeof(kr), where, key);
        cfg__describe_at(got, sizeof(got), key, n);
        cfg__diag(v->s, false, n->line, n->column, "%s: must be in %c%g, %g], got %s", kr,
                  f->lo_open ? '(' : '[', f->dlo, f->dhi, got);
        return false;
    }
    *out = d;
    return true;
}

static bool get_bool(struct cfg__v *v, const struct cfg__node *n, const char *where,
                     const char *key, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};

    if (!is_scalar(v, n, where, key, "true or false"))
        return false;
    for (size_t i = 0; i < BSC_ARRAY_LEN(yes); i++) {
        if (strcmp(n->text, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(n->text, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    cfg__bad_type(v, n, where, key, "true or false");
    return false;
}

bool cfg__get_str(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                  const char **out)
{
    if (!is_scalar(v, n, where, key, "a string"))
        return false;
    *out = n->text;
    return true;
}

static void bad_name(struct cfg__v *v, const struct cfg__node *n, const char *where,
                     const char *key, const char *const *names, size_t n_names)
{
    char kr[320], got[64], list[512];
    const char *close = cfg__closest(n->text, names, n_names);

    cfg__keyref(kr, sizeof(kr), where, key);
    /* Quoted even under a secret-like name (breaker.key): the field takes one of a few
     * fixed words, and the quote is what shows the typo. */
    cfg__describe(got, sizeof(got), n);
    join_names(list, sizeof(list), names, n_names);
    if (close)
        cfg__diag(v->s, false, n->line, n->column,
                  "%s: unknown value %s (did you mean '%s'?); expected one of: %s", kr, got, close,
                  list);
    else
        cfg__diag(v->s, false, n->line, n->column, "%s: unknown value %s; expected one of: %s",
                  kr, got, list);
}

bool cfg__get_enum(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                   const char *const *names, size_t n_names, unsigned *out)
{
    if (!is_scalar(v, n, where, key, "a string"))
        return false;
    for (size_t i = 0; i < n_names; i++) {
        if (strcmp(n->text, names[i]) == 0) {
            *out = (unsigned)i;
            return true;
        }
    }
    bad_name(v, n, where, key, names, n_names);
    return false;
}

/* A list of names to bits. Null keeps the default; [] is zero. */
static void get_bits(struct cfg__v *v, const struct cfg__node *n, const char *where,
                     const struct cfg__field *f, uint32_t *out)
{
    uint32_t bits = 0;
    bool ok = true;

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, f->name, "a list of strings");
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;
        unsigned idx;

        if (item->kind != CFG__SCALAR || item->is_null) {
            if (!item->bad)
                cfg__bad_type(v, item, where, f->name, "a list of strings");
            ok = false;
            continue;
        }
        if (!cfg__get_enum(v, item, where, f->name, f->names, f->n_names, &idx)) {
            ok = false;
            continue;
        }
        bits |= 1u << idx;
    }
    if (ok)
        *out = bits;
}

/* ---- the map walker ------------------------------------------------------------------- */

static void set_str(struct cfg__v *v, const struct cfg__node *n, const char *where,
                    const struct cfg__field *f, char **slot)
{
    const char *s;
    char *copy;

    if (!cfg__get_str(v, n, where, f->name, &s))
        return;
    if (f->nonempty && !*s) {
        char kr[320];

        cfg__keyref(kr, sizeof(kr), where, f->name);
        cfg__diag(v->s, false, n->line, n->column, "%s: must not be empty", kr);
        return;
    }
    copy = bsc_str_dup(bsc_str_cstr(s));
    if (!copy) {
        cfg__oom(v);
        return;
    }
    free(*slot);
    *slot = copy;
}

static void decode_field(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                         void *base, const char *where)
{
    char *slot = (char *)base + f->off;
    const struct cfg__node *n = e->value;
    uint64_t u;
    double d;
    bool b;
    unsigned idx;

    switch (f->type) {
    case CFG__F_U32:
    case CFG__F_U64:
        if (!cfg__get_u64(v, n, where, f->name, f->lo, f->hi, &u))
            break;
        if (f->type == CFG__F_U32)
            *(uint32_t *)(void *)slot = (uint32_t)u;
        else
            *(uint64_t *)(void *)slot = u;
        break;
    case CFG__F_DBL:
        if (get_double(v, n, where, f->name, f, &d))
            *(double *)(void *)slot = d;
        break;
    case CFG__F_BOOL:
        if (get_bool(v, n, where, f->name, &b))
            *(bool *)(void *)slot = b;
        break;
    case CFG__F_STR:
        set_str(v, n, where, f, (char **)(void *)slot);
        break;
    case CFG__F_ENUM:
        if (cfg__get_enum(v, n, where, f->name, f->names, f->n_names, &idx))
            *(unsigned *)(void *)slot = idx;
        break;
    case CFG__F_BITS:
        get_bits(v, n, where, f, (uint32_t *)(void *)slot);
        break;
    case CFG__F_MAP: {
        char sub[320];

        cfg__subwhere(sub, sizeof(sub), where, f->name);
        cfg__decode_map(v, n, f->sub, f->n_sub, slot, sub, e->key->line, e->key->column);
        if (f->check && n->kind == CFG__MAP)
            f->check(v, n, slot, sub);
        break;
    }
    case CFG__F_FN:
        f->fn(v, f, e, base, where);
        break;
    case CFG__F_COUNT:
        BSC_BUG_ON(1);
    }
}

static void unknown_key(struct cfg__v *v, const struct cfg__node *key,
                        const struct cfg__field *fields, size_t n_fields, const char *where)
{
    const char *names[64];
    const char *close;
    size_t n = n_fields < BSC_ARRAY_LEN(names) ? n_fields : BSC_ARRAY_LEN(names);
    char in[330];
    int klen = key->len > 64 ? 64 : (int)key->len;

    for (size_t i = 0; i < n; i++)
        names[i] = fields[i].name;
    close = cfg__closest(key->text, names, n);
    if (where)
        snprintf(in, sizeof(in), "in %s", where);
    else
        snprintf(in, sizeof(in), "at top level");
    if (close)
        cfg__diag(v->s, false, key->line, key->column,
                  "unknown key '%.*s' %s (did you mean '%s'?)", klen, key->text, in, close);
    else
        cfg__diag(v->s, false, key->line, key->column, "unknown key '%.*s' %s", klen, key->text,
                  in);
}

static const struct cfg__field *find_field(const struct cfg__field *fields, size_t n,
                                           const struct cfg__node *key)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(fields[i].name) == key->len && memcmp(fields[i].name, key->text, key->len) == 0)
            return &fields[i];
    return NULL;
}

static void check_required(struct cfg__v *v, const struct cfg__node *map,
                           const struct cfg__field *fields, size_t n_fields, const char *where,
                           unsigned line, unsigned column)
{
    for (size_t i = 0; i < n_fields; i++) {
        const struct cfg__entry *e;
        char in[330];

        if (!fields[i].required)
            continue;
        e = cfg__map_find(map, fields[i].name);
        if (e && !e->value->is_null)
            continue;
        if (where)
            snprintf(in, sizeof(in), " in %s", where);
        else
            in[0] = '\0';
        if (e)
            cfg__diag(v->s, false, e->value->line, e->value->column,
                      "'%s'%s is required and cannot be null", fields[i].name, in);
        else
            cfg__diag(v->s, false, line, column, "missing required key '%s'%s", fields[i].name,
                      in);
    }
}

void cfg__decode_map(struct cfg__v *v, const struct cfg__node *map, const struct cfg__field *fields,
                     size_t n_fields, void *base, const char *where, unsigned line,
                     unsigned column)
{
    if (map && map->bad)
        return;
    if (map && !map->is_null && map->kind != CFG__MAP) {
        char got[64], word[64];

        cfg__describe_at(got, sizeof(got), last_word(word, sizeof(word), where), map);
        if (where)
            cfg__diag(v->s, false, map->line, map->column, "%s: expected a map, got %s", where,
                      got);
        else
            cfg__diag(v->s, false, map->line, map->column,
                      "expected a map at the top level, got %s", got);
        return;
    }
    if (map && map->kind == CFG__MAP) {
        for (size_t i = 0; i < map->n; i++) {
            const struct cfg__entry *e = &map->items[i];
            const struct cfg__field *f = find_field(fields, n_fields, e->key);

            if (!f)
                unknown_key(v, e->key, fields, n_fields, where);
            else
                decode_field(v, f, e, base, where);
        }
    }
    check_required(v, map && map->kind == CFG__MAP ? map : NULL, fields, n_fields, where, line,
                   column);
}
