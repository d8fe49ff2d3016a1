/* SPDX-License-Identifier: MIT */
/* jsonschema_parse.c -- the strict JSON parser behind js_validate_text(): core/json_tok's
 * grammar (RFC 8259 only) into json-c objects. json-c's own tokener is not used because, even
 * in strict mode, it takes NaN and Infinity, "1." and saturates integers past 64 bits, and it
 * keeps the last of duplicate member names -- an answer the gateway validated must be the
 * answer every client parser reads. On top of the grammar this file refuses lone surrogate
 * escapes, U+0000 in a name, duplicate names and numbers past a double. Recursion is bounded
 * by the nesting limit. See docs/internals/jsonschema.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/buf.h"
#include "core/json_tok.h"
#include "contract/internal.h"

struct parser {
    struct bsc_json_tok t;
    struct bsc_buf scratch; /* decoded string bytes, reused */
    enum bsc_err err;
    char *why;
    size_t whylen;
};

static bool fail(struct parser *ps, size_t off, const char *fmt, ...) BSC_PRINTF(3, 4);

static bool fail(struct parser *ps, size_t off, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (ps->err)
        return false;
    ps->err = BSC_EPARSE;
    n = snprintf(ps->why, ps->whylen, "byte %zu: ", off);
    if (n >= 0 && (size_t)n < ps->whylen) {
        va_start(ap, fmt);
        vsnprintf(ps->why + n, ps->whylen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool oom(struct parser *ps)
{
    if (!ps->err) {
        ps->err = BSC_ENOMEM;
        snprintf(ps->why, ps->whylen, "out of memory");
    }
    return false;
}

/* The tokenizer's refusal, in this parser's words for the nesting bound. */
static bool grammar_error(struct parser *ps)
{
    if (strcmp(ps->t.what, "nested too deep") == 0)
        return fail(ps, ps->t.err_off, "nested deeper than %u", ps->t.max_depth);
    return fail(ps, ps->t.err_off, "%s", ps->t.what);
}

/* The next token; false (error recorded) when the tokenizer refused the text. */
static bool next(struct parser *ps, struct bsc_jtok *tok)
{
    return bsc_json_tok_next(&ps->t, tok) != BSC_JTOK_ERROR || grammar_error(ps);
}

/* Decodes the string token <tok> into ps->scratch, NUL-terminated. */
static bool decode(struct parser *ps, const struct bsc_jtok *tok)
{
    size_t bad = 0;
    enum bsc_err err;

    bsc_buf_reset(&ps->scratch);
    err = bsc_json_unescape(tok->raw, &ps->scratch, &bad);
    if (err == BSC_EPARSE)
        return fail(ps, tok->off + 1 + bad, "lone surrogate escape");
    if (!err) /* an empty string leaves scratch unallocated; keep it a valid C string */
        err = bsc_buf_append(&ps->scratch, "", 0);
    return !err || oom(ps);
}

/* ---- numbers --------------------------------------------------------------------------------- */

/* An integer literal that fits 64 bits becomes a json-c int (int64, or uint64 past INT64_MAX),
 * as json-c itself would; false when it does not fit. */
static bool small_integer(const unsigned char *s, size_t len, struct json_object **out)
{
    bool neg = s[0] == '-';
    uint64_t mag = 0;

    for (size_t i = neg; i < len; i++) {
        unsigned d = s[i] - '0';

        if (mag > (UINT64_MAX - d) / 10)
            return false;
        mag = mag * 10 + d;
    }
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return false;
        *out = json_object_new_int64(mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN
                                                                      : -(int64_t)mag);
    } else if (mag <= (uint64_t)INT64_MAX) {
        *out = json_object_new_int64((int64_t)mag);
    } else {
        *out = json_object_new_uint64(mag);
    }
    return true;
}

/* The number token <tok> (its grammar checked): an exact integer, or a finite double. */
static bool number(struct parser *ps, const struct bsc_jtok *tok, struct json_object **out)
{
    const unsigned char *s = (const unsigned char *)tok->raw.p;
    char text[JS_MAX_NUMBER_LEN + 1];
    size_t len = tok->raw.len;
    double d;

    if (len > JS_MAX_NUMBER_LEN)
        return fail(ps, tok->off, "number longer than %d bytes", JS_MAX_NUMBER_LEN);
    if (!memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len) &&
        small_integer(s, len, out))
        return *out || oom(ps);
    /* The grammar was checked, so strtod reads exactly these bytes (the gateway never calls
     * setlocale, so the radix is '.'). */
    memcpy(text, s, len);
    text[len] = '\0';
    d = strtod(text, NULL);
    if (!isfinite(d))
        return fail(ps, tok->off, "number out of range");
    *out = json_object_new_double(d);
    return *out || oom(ps);
}

/* ---- containers ------------------------------------------------------------------------------ */

static bool value(struct parser *ps, struct bsc_jtok *tok, struct json_object **out);

static bool array(struct parser *ps, struct json_object **out)
{
    struct json_object *arr, *v = NULL;
    struct bsc_jtok tok;

    if (!(arr = json_object_new_array()))
        return oom(ps);
    *out = arr;
    for (;;) {
        if (!next(ps, &tok))
            return false;
        if (tok.kind == BSC_JTOK_ARR_CLOSE)
            return true;
        if (tok.kind == BSC_JTOK_COMMA && !next(ps, &tok))
            return false;
        if (!value(ps, &tok, &v)) {
            json_object_put(v);
            return false;
        }
        if (json_object_array_add(arr, v) != 0) {
            json_object_put(v);
            return oom(ps);
        }
    }
}

/* One "name": value member into <obj>, its name token <tok> read. Parsing the value reuses the
 * scratch buffer, so the name is copied first: to the stack when short, the common case. */
static bool member(struct parser *ps, struct bsc_jtok *tok, struct json_object *obj)
{
    size_t at = tok->off;
    struct json_object *v = NULL;
    char local[64], *name = local;
    bool ok = false;

    if (!decode(ps, tok))
        return false;
    if (memchr(ps->scratch.p, '\0', ps->scratch.len))
        return fail(ps, at, "U+0000 in a member name");
    if (json_object_object_get_ex(obj, ps->scratch.p, NULL))
        return fail(ps, at, "duplicate member name");
    if (ps->scratch.len >= sizeof(local) && !(name = bsc_str_dup(bsc_buf_str(&ps->scratch))))
        return oom(ps);
    if (name == local)
        memcpy(local, ps->scratch.p, ps->scratch.len + 1);
    if (!next(ps, tok) || !next(ps, tok)) /* the ':' (the grammar's), then the value */
        goto done;
    if (!value(ps, tok, &v))
        goto done;
    /* The name was checked absent above: json-c can skip its own lookup. */
    if (json_object_object_add_ex(obj, name, v, JSON_C_OBJECT_ADD_KEY_IS_NEW) != 0) {
        oom(ps);
        goto done;
    }
    v = NULL;
    ok = true;
done:
    json_object_put(v);
    if (name != local)
        free(name);
    return ok;
}

static bool object(struct parser *ps, struct json_object **out)
{
    struct json_object *obj;
    struct bsc_jtok tok;

    if (!(obj = json_object_new_object()))
        return oom(ps);
    *out = obj;
    for (;;) {
        if (!next(ps, &tok))
            return false;
        if (tok.kind == BSC_JTOK_OBJ_CLOSE)
            return true;
        if (tok.kind == BSC_JTOK_COMMA && !next(ps, &tok))
            return false;
        if (!member(ps, &tok, obj))
            return false;
    }
}

/* The value that begins with the token <tok> into *<out>. On failure *<out> is either NULL or
 * a partial container the caller frees. */
static bool value(struct parser *ps, struct bsc_jtok *tok, struct json_object **out)
{
    *out = NULL;
    switch (tok->kind) {
    case BSC_JTOK_OBJ_OPEN: return object(ps, out);
    case BSC_JTOK_ARR_OPEN: return array(ps, out);
    case BSC_JTOK_STRING:
        if (tok->escaped) {
            if (!decode(ps, tok))
                return false;
            *out = json_object_new_string_len(ps->scratch.p, (int)ps->scratch.len);
        } else {
            *out = json_object_new_string_len(tok->raw.p, (int)tok->raw.len);
        }
        return *out || oom(ps);
    case BSC_JTOK_TRUE: return (*out = json_object_new_boolean(1)) || oom(ps);
    case BSC_JTOK_FALSE: return (*out = json_object_new_boolean(0)) || oom(ps);
    case BSC_JTOK_NULL: return true;
    case BSC_JTOK_NUMBER: return number(ps, tok, out);
    default: return fail(ps, tok->off, "value expected"); /* the grammar never gets here */
    }
}

enum bsc_err js__parse(struct bsc_str text, unsigned max_depth, struct json_object **out,
                       char *why, size_t whylen)
{
    struct parser ps = {0};
    struct json_object *root = NULL;
    struct bsc_jtok tok;

    *out = NULL;
    if (whylen)
        why[0] = '\0';
    /* json-c strings take an int length. */
    if (text.len > (size_t)INT32_MAX) {
        snprintf(why, whylen, "document too large");
        return BSC_ELIMIT;
    }
    bsc_json_tok_init(&ps.t, text, max_depth);
    ps.why = why;
    ps.whylen = whylen;
    bsc_buf_init(&ps.scratch, text.len + 4);
    if (next(&ps, &tok) && value(&ps, &tok, &root))
        next(&ps, &tok); /* the end, or what follows the document */
    bsc_buf_cleanup(&ps.scratch);
    if (ps.err) {
        json_object_put(root);
        return ps.err;
    }
    *out = root;
    return BSC_OK;
}
