/* SPDX-License-Identifier: MIT */
/* jsonschema_parse.c -- the strict JSON parser behind js_validate_text(): RFC 8259 grammar
 * only, into json-c objects. json-c's own tokener is not used because, even in strict mode, it
 * takes NaN and Infinity, "1." and saturates integers past 64 bits, and it keeps the last of
 * duplicate member names -- an answer the gateway validated must be the answer every client
 * parser reads. Recursion is bounded by the nesting limit. See docs/internals/jsonschema.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/buf.h"
#include "contract/internal.h"

struct parser {
    const unsigned char *start, *p, *end;
    unsigned depth, max_depth;
    struct bsc_buf scratch; /* decoded string bytes, reused */
    enum bsc_err err;
    char *why;
    size_t whylen;
};

static bool fail(struct parser *ps, const char *fmt, ...) BSC_PRINTF(2, 3);

static bool fail(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (ps->err)
        return false;
    ps->err = BSC_EPARSE;
    n = snprintf(ps->why, ps->whylen, "byte %zu: ", (size_t)(ps->p - ps->start));
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

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "invalid literal");
    ps->p += n;
    return true;
}

/* ---- strings --------------------------------------------------------------------------------- */

/* Reads the 4 hex digits after "\u" at ps->p. */
static bool hex4(struct parser *ps, unsigned *out)
{
    unsigned v = 0;

    if (ps->end - ps->p < 4)
        return fail(ps, "truncated \\u escape");
    for (int i = 0; i < 4; i++) {
        int h = bsc_hex_digit(ps->p[i]);

        if (h < 0)
            return fail(ps, "bad \\u escape");
        v = v << 4 | (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static bool put_cp(struct parser *ps, unsigned cp)
{
    char b[4];
    size_t n;

    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | cp >> 18);
        b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return bsc_buf_append(&ps->scratch, b, n) == BSC_OK || oom(ps);
}

/* A \uXXXX escape, ps->p just past the 'u'. A surrogate must be a high one followed by an
 * escaped low one: a lone half has no UTF-8 form. */
static bool unicode_escape(struct parser *ps)
{
    unsigned hi, lo;

    if (!hex4(ps, &hi))
        return false;
    if (hi >= 0xdc00 && hi <= 0xdfff)
        return fail(ps, "lone low surrogate escape");
    if (hi < 0xd800 || hi > 0xdbff)
        return put_cp(ps, hi);
    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
        return fail(ps, "lone high surrogate escape");
    ps->p += 2;
    if (!hex4(ps, &lo))
        return false;
    if (lo < 0xdc00 || lo > 0xdfff)
        return fail(ps, "lone high surrogate escape");
    return put_cp(ps, 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
}

static bool escape(struct parser *ps)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit;

    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    if (*ps->p == 'u') {
        ps->p++;
        return unicode_escape(ps);
    }
    hit = memchr(from, *ps->p, sizeof(from) - 1);
    if (!hit)
        return fail(ps, "bad escape");
    ps->p++;
    return bsc_buf_append_char(&ps->scratch, to[hit - from]) == BSC_OK || oom(ps);
}

/* Appends the unescaped run starting at ps->p up to a quote, backslash or control byte,
 * checking its UTF-8 on the way. */
static bool plain_run(struct parser *ps)
{
    const unsigned char *run = ps->p;

    while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' && *ps->p >= 0x20)
        ps->p++;
    if (!bsc_utf8_valid((const char *)run, (size_t)(ps->p - run))) {
        ps->p = run;
        return fail(ps, "string is not UTF-8");
    }
    return bsc_buf_append(&ps->scratch, run, (size_t)(ps->p - run)) == BSC_OK || oom(ps);
}

/* Decodes the string at ps->p (the opening quote) into ps->scratch. */
static bool string_body(struct parser *ps)
{
    bsc_buf_reset(&ps->scratch);
    ps->p++;
    for (;;) {
        if (!plain_run(ps))
            return false;
        if (ps->p >= ps->end)
            return fail(ps, "unterminated string");
        if (*ps->p == '"') {
            ps->p++;
            /* An empty string leaves scratch unallocated; keep it a valid C string. */
            return bsc_buf_append(&ps->scratch, "", 0) == BSC_OK || oom(ps);
        }
        if (*ps->p < 0x20)
            return fail(ps, "control character in string");
        ps->p++;
        if (!escape(ps))
            return false;
    }
}

/* ---- numbers --------------------------------------------------------------------------------- */

static void digits(struct parser *ps)
{
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
}

static bool is_digit_at(struct parser *ps)
{
    return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

/* Scans the number grammar; *<integral> is false when it has a fraction or an exponent. */
static bool scan_number(struct parser *ps, bool *integral)
{
    *integral = true;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (!is_digit_at(ps))
        return fail(ps, "invalid number");
    if (*ps->p == '0')
        ps->p++;
    else
        digits(ps);
    if (is_digit_at(ps))
        return fail(ps, "leading zero in number");
    if (ps->p < ps->end && *ps->p == '.') {
        *integral = false;
        ps->p++;
        if (!is_digit_at(ps))
            return fail(ps, "digit expected after '.'");
        digits(ps);
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        *integral = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!is_digit_at(ps))
            return fail(ps, "digit expected in exponent");
        digits(ps);
    }
    return true;
}

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

static bool number(struct parser *ps, struct json_object **out)
{
    const unsigned char *s = ps->p;
    char text[JS_MAX_NUMBER_LEN + 1];
    bool integral;
    size_t len;
    double d;

    if (!scan_number(ps, &integral))
        return false;
    len = (size_t)(ps->p - s);
    if (len > JS_MAX_NUMBER_LEN) {
        ps->p = s;
        return fail(ps, "number longer than %d bytes", JS_MAX_NUMBER_LEN);
    }
    if (integral && small_integer(s, len, out))
        return *out || oom(ps);
    /* The grammar was checked above, so strtod reads exactly these bytes (the gateway never
     * calls setlocale, so the radix is '.'). */
    memcpy(text, s, len);
    text[len] = '\0';
    d = strtod(text, NULL);
    if (!isfinite(d)) {
        ps->p = s;
        return fail(ps, "number out of range");
    }
    *out = json_object_new_double(d);
    return *out || oom(ps);
}

/* ---- containers ------------------------------------------------------------------------------ */

static bool value(struct parser *ps, struct json_object **out);

static bool enter(struct parser *ps)
{
    if (++ps->depth > ps->max_depth)
        return fail(ps, "nested deeper than %u", ps->max_depth);
    ps->p++;
    skip_ws(ps);
    return true;
}

static bool array(struct parser *ps, struct json_object **out)
{
    struct json_object *arr, *v = NULL;

    if (!enter(ps))
        return false;
    if (!(arr = json_object_new_array()))
        return oom(ps);
    *out = arr;
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        ps->depth--;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        if (!value(ps, &v)) {
            json_object_put(v);
            return false;
        }
        if (json_object_array_add(arr, v) != 0) {
            json_object_put(v);
            return oom(ps);
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            ps->depth--;
            return true;
        }
        return fail(ps, "',' or ']' expected");
    }
}

/* One "name": value member into <obj>. Parsing the value reuses the scratch buffer, so the name
 * is copied first: to the stack when short, the common case. */
static bool member(struct parser *ps, struct json_object *obj)
{
    const unsigned char *at = ps->p;
    struct json_object *v = NULL;
    char local[64], *name = local;
    bool ok = false;

    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, "member name expected");
    if (!string_body(ps))
        return false;
    if (memchr(ps->scratch.p, '\0', ps->scratch.len)) {
        ps->p = at;
        return fail(ps, "U+0000 in a member name");
    }
    if (json_object_object_get_ex(obj, ps->scratch.p, NULL)) {
        ps->p = at;
        return fail(ps, "duplicate member name");
    }
    if (ps->scratch.len >= sizeof(local) && !(name = bsc_str_dup(bsc_buf_str(&ps->scratch))))
        return oom(ps);
    if (name == local)
        memcpy(local, ps->scratch.p, ps->scratch.len + 1);
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        fail(ps, "':' expected");
        goto done;
    }
    ps->p++;
    skip_ws(ps);
    if (!value(ps, &v))
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

    if (!enter(ps))
        return false;
    if (!(obj = json_object_new_object()))
        return oom(ps);
    *out = obj;
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        ps->depth--;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        if (!member(ps, obj))
            return false;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            ps->depth--;
            return true;
        }
        return fail(ps, "',' or '}' expected");
    }
}

/* Parses one value at ps->p into *<out>. On failure *<out> is either NULL or a partial
 * container the caller frees. */
static bool value(struct parser *ps, struct json_object **out)
{
    *out = NULL;
    if (ps->p >= ps->end)
        return fail(ps, "value expected");
    switch (*ps->p) {
    case '{': return object(ps, out);
    case '[': return array(ps, out);
    case '"':
        if (!string_body(ps))
            return false;
        *out = json_object_new_string_len(ps->scratch.p, (int)ps->scratch.len);
        return *out || oom(ps);
    case 't':
        if (!literal(ps, "true"))
            return false;
        return (*out = json_object_new_boolean(1)) || oom(ps);
    case 'f':
        if (!literal(ps, "false"))
            return false;
        return (*out = json_object_new_boolean(0)) || oom(ps);
    case 'n': return literal(ps, "null");
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return number(ps, out);
        return fail(ps, "unexpected character");
    }
}

enum bsc_err js__parse(struct bsc_str text, unsigned max_depth, struct json_object **out,
                       char *why, size_t whylen)
{
    struct parser ps = {0};
    struct json_object *root = NULL;

    *out = NULL;
    if (whylen)
        why[0] = '\0';
    /* json-c strings take an int length. */
    if (text.len > (size_t)INT32_MAX) {
        snprintf(why, whylen, "document too large");
        return BSC_ELIMIT;
    }
    ps.start = ps.p = (const unsigned char *)(text.p ? text.p : "");
    ps.end = ps.start + text.len;
    ps.max_depth = max_depth;
    ps.why = why;
    ps.whylen = whylen;
    bsc_buf_init(&ps.scratch, text.len + 4);
    skip_ws(&ps);
    if (ps.p >= ps.end)
        fail(&ps, "empty document");
    else if (value(&ps, &root)) {
        skip_ws(&ps);
        if (ps.p < ps.end)
            fail(&ps, "data after the document");
    }
    bsc_buf_cleanup(&ps.scratch);
    if (ps.err) {
        json_object_put(root);
        return ps.err;
    }
    *out = root;
    return BSC_OK;
}
