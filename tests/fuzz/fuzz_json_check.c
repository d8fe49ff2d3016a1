/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* (json_check.c and json_scan.c live in src/core/, which scripts/fuzz links into every target:
 * naming them here would link them twice. The empty list keeps the fast, archive-free build.) */
/* fuzz_json_check.c -- differential libFuzzer target for the allocation-free JSON validator and
 * the span scanner. For every input it checks, aborting when one breaks:
 *   - bsc_json_check (max depth 64) and json-c's tokener (JSON_TOKENER_STRICT |
 *     JSON_TOKENER_VALIDATE_UTF8, depth 64, the whole input consumed but trailing whitespace)
 *     agree on accept/reject, except for the json-c quirks listed below, each recognised
 *     precisely (never "json-c accepts, so be it");
 *   - where json-c is looser than RFC 8259 it cannot vouch for an acceptance, so a document bsc
 *     accepts must also pass an independent lexer: well-formed UTF-8 (by decoding), no raw
 *     control character in a string, RFC 8259 numbers, only true/false/null words, depth <= 64;
 *   - bsc_json_check's depth bound is monotonic and clamped at BSC_JSON_MAX_DEPTH, and a failure
 *     has an offset inside the input and a message;
 *   - on a document both accept: bsc_json_kind_of agrees with json-c's type; a string's raw
 *     span, a boolean's bsc_json_is_true and an integer's bsc_json_u64 agree with json-c;
 *   - objects: every member found by an independent walk (json-c measures each value, an
 *     independent decoder decodes each name) is found by bsc_json_member, asked for its
 *     decoded name, with exactly that span; or reported as repeated (-1) when its decoded name
 *     appears twice, or when any name of the object is ambiguous (a lone surrogate or NUL
 *     escape); json-c re-parses each span to the value json-c's own parse holds for that key;
 *     a name no member decodes to is absent (0); bsc_json_members, asked for every name in
 *     one pass, returns the same spans, and -1 for a repeated one;
 *   - bsc_json_check_request on the top level: OK exactly when the decoded names are
 *     distinct, unambiguous and within the bounds (DUPLICATE / REFUSED naming the first
 *     offender otherwise), and then with the spans bsc_json_check_members finds;
 *   - arrays: bsc_json_array_next yields json_object_array_length elements, each one a span
 *     json-c re-parses to the element json-c holds at that index;
 *   - member values and elements are checked the same way, recursively;
 *   - on any input at all (valid or not), the scanner stays inside it, ends, and hands out
 *     spans inside it.
 *
 * Known differences with json-c 0.16 (found by running both; each is skipped explicitly):
 *   A. Raw control characters U+0001..U+001F inside strings: json-c accepts "\x01" (a quote, byte
 *      0x01, a quote), RFC 8259 §7 does not. Handled by replacing the byte with a space.
 *   B. JSON_TOKENER_VALIDATE_UTF8 checks only the lead/continuation byte pattern: json-c accepts
 *      overlongs ("\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\x80"), UTF-16 surrogates
 *      ("\xed\xa0\x80"), code points past U+10FFFF ("\xf4\x90\x80\x80", leads F5..F7). Handled
 *      when the sequence has json-c's byte pattern and an independent decoder finds it
 *      ill-formed, by replacing it with a well-formed character of the same length.
 *   C. json-c's number grammar is looser, even in strict mode: it accepts "1.", "1.e5", "-.5",
 *      "00", "-01", "01.5" (it collects [0-9.eE+-] and asks strtod/strtoull). Handled when the
 *      number token at the failure is not an RFC 8259 number (independent check), by replacing
 *      the token with "0" and spaces.
 *   D. Strict json-c still parses NaN, Infinity and -Infinity (case-sensitive). Handled like C.
 *   E. json-c counts depth in values, not containers: at depth 64 it refuses [[...[1]...]] with
 *      64 arrays (the scalar is level 65) but takes 64 empty nested arrays. bsc counts open
 *      containers, so it takes both. Handled when json-c says "nesting too deep", the
 *      container depth is exactly 64 and json-c at depth 65 accepts.
 *   F. Strict json-c still takes an object member NAME in single quotes ({'a':1}, {'a"b':1});
 *      not a value ('x', ["a",'b'] are refused) and not the escape \' inside. The gateway is the
 *      stricter side, which is what it must be: json-c accepting and bsc refusing is fine here,
 *      the reverse is a bug (caught above). Handled when bsc fails at a quote ' that follows
 *      '{' or ',' (whitespace between) and a closing ' ends the name, by rewriting the name
 *      with double quotes, a raw " inside it becoming ' (escapes are left as they are).
 * Not differences, checked as any other input:
 *   - NUL bytes: json-c stops at a NUL as at the end of input (parse end = the NUL), so the
 *     "whole input consumed" rule rejects a document with a NUL outside a string, and a NUL
 *     inside a string is "unexpected end of data"; bsc rejects both.
 *   - Lone surrogate escapes ("\ud800", "\udc00x", "\ud800\u0041"): both accept (json-c
 *     decodes each to U+FFFD; RFC 8259 §8.2 allows them in the grammar).
 *   - Integers past the 64-bit range: json-c 0.16 clamps them (to INT64_MIN or UINT64_MAX)
 *     without an error, so both accept; a member span re-parses to the same clamped value.
 *   - json-c truncates an object key at an escaped NUL ("a\u0000b" becomes "a"): the member
 *     comparison below decodes keys the same way before matching json-c's object.
 * Inputs with patches (A-D, F) are checked again after patching, so the rest of the document still
 * goes through the differential. Built and run by scripts/fuzz (tests/fuzz/json_check.dict,
 * seeds in corpus/json_check/). */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/json_check.h"
#include "core/json_scan.h"

#define DEPTH 64

static void die(const char *what, const char *p, size_t n)
{
    fprintf(stderr, "fuzz_json_check: invariant broken: %s\ninput (%zu bytes): ", what, n);
    for (size_t i = 0; i < n && i < 512; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c >= 0x20 && c < 0x7f && c != '\\')
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fputc('\n', stderr);
    abort();
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* ---- json-c --------------------------------------------------------------------------- */

/* json-c's verdict on <p>/<n> under <flags> at <depth>: the tokener must succeed and leave
 * nothing but whitespace unread. The copy ends with a NUL that is passed in <len>: json-c treats
 * it as the end of input, which completes a top-level number ("12" alone is "continue"). On
 * success, returns the value (caller owns; NULL is json null) and sets *<ok>. */
static json_object *jc_parse(const char *p, size_t n, int depth, int flags, bool *ok,
                             enum json_tokener_error *jerr)
{
    struct json_tokener *tok = json_tokener_new_ex(depth);
    char *copy = malloc(n + 1);
    json_object *o = NULL;
    size_t end;

    *ok = false;
    if (!tok || !copy || n >= INT_MAX)
        die("json-c setup", p, n);
    if (n)
        memcpy(copy, p, n);
    copy[n] = '\0';
    json_tokener_set_flags(tok, flags);
    o = json_tokener_parse_ex(tok, copy, (int)n + 1);
    *jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    if (*jerr == json_tokener_success) {
        *ok = true;
        for (size_t i = end; i < n; i++)
            if (!is_ws(p[i]))
                *ok = false;
    }
    if (!*ok) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    free(copy);
    return o;
}

static json_object *jc_doc(const char *p, size_t n, int depth, bool *ok,
                           enum json_tokener_error *jerr)
{
    return jc_parse(p, n, depth, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8, ok, jerr);
}

/* Re-parses a span bsc handed out (or a member key): it must be exactly one JSON value. */
static json_object *jc_span(struct bsc_str s, const char *doc, size_t n)
{
    enum json_tokener_error jerr;
    bool ok;
    json_object *o = jc_doc(s.p, s.len, DEPTH + 1, &ok, &jerr);

    if (!ok)
        die("json-c rejects a span of an accepted document", doc, n);
    if (!s.len || is_ws(s.p[0]) || is_ws(s.p[s.len - 1]))
        die("a span is empty or has whitespace around it", doc, n);
    return o;
}

/* The length of the one value at <p> that an accepted document continues after, as json-c
 * measures it (its parse end, less the whitespace it ate after the value). */
static size_t jc_value_len(const char *p, size_t n, const char *doc, size_t dn)
{
    struct json_tokener *tok = json_tokener_new_ex(DEPTH + 1);
    json_object *o;
    size_t end;

    if (!tok || n >= INT_MAX)
        die("json-c setup", doc, dn);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
    o = json_tokener_parse_ex(tok, p, (int)n);
    if (json_tokener_get_error(tok) != json_tokener_success)
        die("json-c cannot measure a member value", doc, dn);
    end = json_tokener_get_parse_end(tok);
    json_object_put(o);
    json_tokener_free(tok);
    while (end > 0 && is_ws(p[end - 1]))
        end--;
    if (end == 0 || end > n)
        die("json-c measured an empty value", doc, dn);
    return end;
}

/* ---- independent references for the quirk checks ------------------------------------- */

/* RFC 8259 §6 number, as a small state machine: -? int frac? exp? */
static bool rfc_number(const char *p, size_t n)
{
    enum { SIGN, INT0, INT, DOT, FRAC, E, ESIGN, EXP } st = SIGN;

    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool digit = c >= '0' && c <= '9';

        switch (st) {
        case SIGN:
            if (c == '-' && i == 0)
                continue;
            if (!digit)
                return false;
            st = c == '0' ? INT0 : INT;
            break;
        case INT0:
        case INT:
            if (digit && st == INT)
                break;
            if (c == '.')
                st = DOT;
            else if (c == 'e' || c == 'E')
                st = E;
            else
                return false;
            break;
        case DOT:
        case FRAC:
            if (digit)
                st = FRAC;
            else if (st == FRAC && (c == 'e' || c == 'E'))
                st = E;
            else
                return false;
            break;
        case E:
        case ESIGN:
            if (digit)
                st = EXP;
            else if (st == E && (c == '+' || c == '-'))
                st = ESIGN;
            else
                return false;
            break;
        case EXP:
            if (!digit)
                return false;
            break;
        }
    }
    return st == INT0 || st == INT || st == FRAC || st == EXP;
}

/* Decodes the sequence at <p> to its code point and judges it after the fact. */
static bool utf8_well_formed(const unsigned char *p, size_t len)
{
    uint32_t cp = p[0] & (0x7fu >> len), min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;

    for (size_t k = 1; k < len; k++)
        cp = (cp << 6) | (p[k] & 0x3f);
    return cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
}

static bool is_num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* F: json-c took a member name in single quotes at <o> (bsc refused the quote). Rewrites it
 * with double quotes, in place, when it is in a name's place and closed; false otherwise. */
static bool patch_single_quoted_name(char *p, size_t n, size_t o)
{
    size_t b = o;
    size_t i;

    while (b > 0 && is_ws(p[b - 1]))
        b--;
    if (b == 0 || (p[b - 1] != '{' && p[b - 1] != ','))
        return false;
    for (i = o + 1; i < n && p[i] != '\''; i++)
        if (p[i] == '\\')
            i++;
    if (i >= n)
        return false;
    for (size_t k = o + 1; k < i; k++) {
        if (p[k] == '\\')
            k++;
        else if (p[k] == '"')
            p[k] = '\'';
    }
    p[o] = '"';
    p[i] = '"';
    return true;
}

/* Known differences A-D and F: json-c accepted <p>, bsc refused it at <e>. When the refusal
 * is one of json-c's quirks, patches it in place (same length) and returns true. */
static bool patch_quirk(char *p, size_t n, const struct bsc_json_error *e)
{
    size_t o = e->offset;
    unsigned char c = o < n ? (unsigned char)p[o] : 0;

    if (strcmp(e->what, "control character in a string") == 0) {
        if (c < 0x01 || c > 0x1f)
            return false;
        p[o] = ' '; /* A */
        return true;
    }
    if (strcmp(e->what, "invalid UTF-8") == 0) {
        static const char *const good[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
        size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;

        if (!len || n - o < len)
            return false;
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)p[o + k] & 0xc0) != 0x80)
                return false;
        if (utf8_well_formed((const unsigned char *)p + o, len))
            return false; /* bsc refused well-formed UTF-8: a bug, not a quirk */
        memcpy(p + o, good[len - 2], len); /* B */
        return true;
    }
    if (c == '\'')
        return patch_single_quoted_name(p, n, o); /* F */
    /* D: NaN, Infinity, -Infinity (bsc stops at the 'I' of "-Infinity"). */
    {
        static const char *const lits[] = {"NaN", "Infinity"};

        for (size_t k = 0; k < BSC_ARRAY_LEN(lits); k++) {
            size_t len = strlen(lits[k]), at = o;

            if (n - o < len || memcmp(p + o, lits[k], len) != 0)
                continue;
            if (k == 1 && o > 0 && p[o - 1] == '-')
                at--, len++;
            p[at] = '0';
            memset(p + at + 1, ' ', len - 1);
            return true;
        }
    }
    /* C: the number token (a run of number characters) around the failure, or just before it. */
    {
        size_t a = o, b;

        if (!(o < n && is_num_char(p[o]))) {
            if (o == 0 || !is_num_char(p[o - 1]))
                return false;
            a = o - 1;
        }
        while (a > 0 && is_num_char(p[a - 1]))
            a--;
        b = a;
        while (b < n && is_num_char(p[b]))
            b++;
        if (!(p[a] == '-' || (p[a] >= '0' && p[a] <= '9')) || rfc_number(p + a, b - a))
            return false;
        p[a] = '0';
        memset(p + a + 1, ' ', b - a - 1);
        return true;
    }
}

/* Open containers at the deepest point, counted outside strings. Only for accepted input. */
static unsigned container_depth(const char *p, size_t n)
{
    unsigned d = 0, max = 0;
    bool in_str = false;

    for (size_t i = 0; i < n; i++) {
        if (in_str) {
            if (p[i] == '\\')
                i++;
            else if (p[i] == '"')
                in_str = false;
        } else if (p[i] == '"') {
            in_str = true;
        } else if (p[i] == '[' || p[i] == '{') {
            if (++d > max)
                max = d;
        } else if (p[i] == ']' || p[i] == '}') {
            d--;
        }
    }
    return max;
}

/* What json-c cannot vouch for, where it is looser than RFC 8259 (A-E): on a document bsc
 * accepted, checks the whole text is well-formed UTF-8, strings hold no raw control character,
 * every number token is an RFC 8259 number, every word is true, false or null, and containers
 * nest at most DEPTH deep. Lexes on its own; trusts the document only to be balanced. */
static bool ref_strict(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t i = 0;

    while (i < n) {
        size_t len = u[i] < 0x80 ? 1 : (u[i] & 0xe0) == 0xc0 ? 2 : (u[i] & 0xf0) == 0xe0 ? 3
                                     : (u[i] & 0xf8) == 0xf0 ? 4 : 0;

        if (!len || n - i < len)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((u[i + k] & 0xc0) != 0x80)
                return false;
        if (len > 1 && !utf8_well_formed(u + i, len))
            return false;
        i += len;
    }
    if (container_depth(p, n) > DEPTH)
        return false;
    for (i = 0; i < n;) {
        size_t b = i;

        if (p[i] == '"') {
            for (i++; i < n && p[i] != '"'; i++) {
                if (u[i] < 0x20)
                    return false;
                if (p[i] == '\\')
                    i++;
            }
            i++;
        } else if (is_num_char(p[i])) {
            while (i < n && is_num_char(p[i]))
                i++;
            if (!rfc_number(p + b, i - b))
                return false;
        } else if (p[i] >= 'a' && p[i] <= 'z') {
            while (i < n && p[i] >= 'a' && p[i] <= 'z')
                i++;
            if (!(i - b == 4 && (memcmp(p + b, "true", 4) == 0 || memcmp(p + b, "null", 4) == 0)) &&
                !(i - b == 5 && memcmp(p + b, "false", 5) == 0))
                return false;
        } else if (strchr("{}[],: \t\n\r", p[i]) && p[i]) {
            i++;
        } else {
            return false;
        }
    }
    return true;
}

/* ---- the scanner against json-c, on a document both accepted --------------------------- */

static void check_value(struct bsc_str v, json_object *jv, const char *doc, size_t n);

static enum bsc_json_kind kind_of_jc(json_object *jv)
{
    switch (json_object_get_type(jv)) {
    case json_type_null: return BSC_JSON_NULL;
    case json_type_boolean: return BSC_JSON_BOOL;
    case json_type_double:
    case json_type_int: return BSC_JSON_NUMBER;
    case json_type_string: return BSC_JSON_STRING;
    case json_type_array: return BSC_JSON_ARRAY;
    case json_type_object: return BSC_JSON_OBJECT;
    }
    return BSC_JSON_INVALID;
}

/* Returns the index just past the string whose opening quote is at <i> (input is valid). */
static size_t ref_string_end(const char *p, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            return i + 1;
    }
    return n;
}

struct member {
    struct bsc_str key;   /* raw, without quotes; borrowed from the document */
    struct bsc_str value; /* raw value span, as json-c measured it */
    json_object *jkey;    /* owned: the key as json-c decodes it */
    char *dec;            /* owned: the key decoded by ref_decode */
    struct bsc_str name;  /* <dec> as a slice */
    bool ambiguous;       /* a lone surrogate or NUL escape: no decoding to trust */
};

/* An independent decoder of a raw JSON string (valid per RFC 8259), into <out> which has
 * room for raw.len bytes (decoding never grows). False when it holds a lone surrogate
 * escape or an escaped NUL, names parsers read differently. */
static bool ref_decode(struct bsc_str raw, char *out, size_t *len)
{
    size_t i = 0, o = 0;
    bool ok = true;

    while (i < raw.len) {
        unsigned long cp;

        if (raw.p[i] != '\\') {
            out[o++] = raw.p[i++];
            continue;
        }
        switch (raw.p[i + 1]) {
        case 'b': out[o++] = '\b'; i += 2; continue;
        case 'f': out[o++] = '\f'; i += 2; continue;
        case 'n': out[o++] = '\n'; i += 2; continue;
        case 'r': out[o++] = '\r'; i += 2; continue;
        case 't': out[o++] = '\t'; i += 2; continue;
        case 'u': break;
        default: out[o++] = raw.p[i + 1]; i += 2; continue;
        }
        cp = strtoul((char[5]){raw.p[i + 2], raw.p[i + 3], raw.p[i + 4], raw.p[i + 5], 0}, NULL,
                     16);
        i += 6;
        if (cp >= 0xd800 && cp <= 0xdbff && i + 6 <= raw.len && raw.p[i] == '\\' &&
            raw.p[i + 1] == 'u') {
            unsigned long lo = strtoul((char[5]){raw.p[i + 2], raw.p[i + 3], raw.p[i + 4],
                                                 raw.p[i + 5], 0}, NULL, 16);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            }
        }
        if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff)) {
            ok = false;
            cp = 0xfffd; /* anything: the name is not compared */
        }
        if (cp < 0x80) {
            out[o++] = (char)cp;
        } else if (cp < 0x800) {
            out[o++] = (char)(0xc0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out[o++] = (char)(0xe0 | (cp >> 12));
            out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        } else {
            out[o++] = (char)(0xf0 | (cp >> 18));
            out[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    *len = o;
    return ok;
}

/* Walks the members of the object span <obj> independently of json_scan.c: keys by a quote
 * scanner, values measured by json-c. Returns the number of members written to <m>, which has
 * room for every member (each takes at least 4 bytes: "":0 and a comma or the brace). */
static size_t walk_members(struct bsc_str obj, struct member *m, const char *doc, size_t n)
{
    const char *p = obj.p;
    size_t count = 0, i = 1;

    while (is_ws(p[i]))
        i++;
    while (p[i] != '}') {
        size_t ks = i, ke = ref_string_end(p, i, obj.len), vs;

        i = ke;
        while (is_ws(p[i]))
            i++;
        if (p[i++] != ':')
            die("the walk lost its way in an accepted object", doc, n);
        while (is_ws(p[i]))
            i++;
        vs = i;
        i += jc_value_len(p + vs, obj.len - vs, doc, n);
        m[count].key = bsc_str_make(p + ks + 1, ke - ks - 2);
        m[count].value = bsc_str_make(p + vs, i - vs);
        m[count].jkey = jc_span(bsc_str_make(p + ks, ke - ks), doc, n);
        m[count].dec = malloc(m[count].key.len + 1);
        if (!m[count].dec)
            die("out of memory", doc, n);
        m[count].ambiguous = !ref_decode(m[count].key, m[count].dec, &m[count].name.len);
        m[count].name.p = m[count].dec;
        count++;
        while (is_ws(p[i]))
            i++;
        if (p[i] == ',')
            i++;
        while (is_ws(p[i]))
            i++;
    }
    return count;
}

/* How many members of <m> decode to <name>; *<amb> when some name is ambiguous. */
static size_t count_named(const struct member *m, size_t count, struct bsc_str name, bool *amb)
{
    size_t same = 0;

    *amb = false;
    for (size_t k = 0; k < count; k++) {
        *amb |= m[k].ambiguous;
        same += !m[k].ambiguous && bsc_str_eq(m[k].name, name);
    }
    return same;
}

/* bsc_json_members in one pass: asked for the absent name and every decoded name that occurs
 * once, it finds each at the walk's span; asked for a repeated name, it says -1; with an
 * ambiguous name in the object, -1 whatever it is asked. */
static void check_members_at_once(struct bsc_str obj, const struct member *m, size_t count,
                                  const char *doc, size_t n)
{
    static const struct bsc_str absent = {"\x01" "absent\x02", 8};
    struct bsc_str *keys = calloc(count + 1, sizeof(*keys));
    struct bsc_str *vals = calloc(count + 1, sizeof(*vals));
    size_t *at = calloc(count + 1, sizeof(*at));
    size_t nk = 0;
    bool repeated = false, amb, probe_absent;

    if (!keys || !vals || !at)
        die("out of memory", doc, n);
    /* keys[0] is the absent name, unless the document happens to hold it. */
    probe_absent = count_named(m, count, absent, &amb) == 0;
    if (probe_absent)
        keys[nk++] = absent;
    for (size_t j = 0; j < count; j++) {
        if (m[j].ambiguous || count_named(m, count, m[j].name, &amb) > 1) {
            if (!repeated && !m[j].ambiguous) {
                vals[0] = bsc_str_make("untouched", 9);
                if (bsc_json_members(obj, &m[j].name, 1, vals) != -1)
                    die("bsc_json_members misses a repeated name", doc, n);
            }
            repeated = true;
            continue;
        }
        at[nk] = j;
        keys[nk++] = m[j].name;
    }
    if (amb) {
        if (nk && bsc_json_members(obj, keys, nk, vals) != -1)
            die("bsc_json_members reads an object with an ambiguous name", doc, n);
    } else {
        if (bsc_json_members(obj, keys, nk, vals) != 1)
            die("bsc_json_members fails on an object without repeated wanted names", doc, n);
        if (probe_absent && (vals[0].p || vals[0].len))
            die("bsc_json_members finds an absent name", doc, n);
        for (size_t k = probe_absent; k < nk; k++)
            if (vals[k].p != m[at[k]].value.p || vals[k].len != m[at[k]].value.len)
                die("bsc_json_members returns another span than the walk", doc, n);
    }
    free(keys);
    free(vals);
    free(at);
}

/* bsc_json_check_request on the top-level object <obj> (the whole document <p>/<n>, valid):
 * the first name past a bound, ambiguous or repeated (decoded) is the one reported, in that
 * order of checks; with none, OK and the spans the walk measured. */
static void check_request_rule(struct bsc_str obj, const char *p, size_t n)
{
    struct member *m = calloc(obj.len / 4 + 1, sizeof(*m));
    size_t count = walk_members(obj, m, p, n), bad = count;
    enum bsc_json_verdict want = BSC_JSONV_OK, got;
    struct bsc_json_error err = {0, NULL, BSC_STR_NULL};
    struct bsc_str keys[3], vals[3];
    size_t nk = count < 3 ? count : 3;
    bool amb;

    for (size_t j = 0; j < count && want == BSC_JSONV_OK; j++) {
        bad = j;
        if (m[j].key.len > BSC_JSON_MAX_NAME || j >= BSC_JSON_MAX_MEMBERS || m[j].ambiguous)
            want = BSC_JSONV_REFUSED;
        else if (count_named(m, j + 1, m[j].name, &amb) > 1)
            want = BSC_JSONV_DUPLICATE;
    }
    for (size_t k = 0; k < nk; k++)
        keys[k] = m[k].ambiguous ? bsc_str_make("\x01", 1) : m[k].name;
    got = bsc_json_check_request(bsc_str_make(p, n), DEPTH, keys, nk, 0, vals, &err);
    if (got != want)
        die("bsc_json_check_request's verdict is not the reference's", p, n);
    if (want != BSC_JSONV_OK &&
        (err.name.p != m[bad].key.p || err.name.len != m[bad].key.len ||
         err.offset != (size_t)(m[bad].key.p - p) - 1))
        die("bsc_json_check_request names another member than the first offender", p, n);
    for (size_t k = 0; want == BSC_JSONV_OK && k < nk; k++)
        if (!m[k].ambiguous && (vals[k].p != m[k].value.p || vals[k].len != m[k].value.len))
            die("bsc_json_check_request returns another span than the walk", p, n);
    for (size_t j = 0; j < count; j++) {
        json_object_put(m[j].jkey);
        free(m[j].dec);
    }
    free(m);
}

static void check_members(struct bsc_str obj, json_object *jobj, const char *doc, size_t n)
{
    static const struct bsc_str no_such_key = {"\x01" "absent\x02", 8};
    struct member *m = calloc(obj.len / 4 + 1, sizeof(*m));
    size_t count, distinct = 0;
    struct bsc_str span = {"untouched", 9};
    bool amb = false;

    if (!m)
        die("out of memory", doc, n);
    count = walk_members(obj, m, doc, n);
    for (size_t j = 0; j < count; j++) {
        struct bsc_str got = {"untouched", 9};
        int r = m[j].ambiguous ? 0 : bsc_json_member(obj, m[j].name, &got);
        /* json-c's object keys end at an escaped NUL (it strdup()s the decoded name), and so
         * does a C-string comparison of the decoded keys. */
        const char *jk = json_object_get_string(m[j].jkey);
        size_t same = count_named(m, count, m[j].name, &amb);
        bool kept = true; /* json-c keeps the last member of a decoded name */
        json_object *mine, *theirs = NULL;

        for (size_t k = j + 1; k < count; k++)
            if (strcmp(json_object_get_string(m[k].jkey), jk) == 0)
                kept = false;
        if (!m[j].ambiguous) {
            if (bsc_json_member_span(obj, m[j].name, &span) != (r == 1))
                die("bsc_json_member_span disagrees with bsc_json_member", doc, n);
            if ((same > 1 || amb) && r != -1)
                die("a repeated or ambiguous name is not reported as such", doc, n);
            if (same == 1 && !amb &&
                (r != 1 || got.p != m[j].value.p || got.len != m[j].value.len))
                die("bsc_json_member misses a member or returns another span", doc, n);
        }
        if (!kept)
            continue;
        /* The span (bsc's, which is the walk's when the name is unique) re-parses to the
         * value json-c holds for this name. */
        distinct++;
        if (!json_object_object_get_ex(jobj, jk, &theirs))
            die("json-c lost a member the walk found", doc, n);
        mine = jc_span(m[j].value, doc, n);
        if (!json_object_equal(mine, theirs))
            die("a member span re-parses to another value", doc, n);
        json_object_put(mine);
        check_value(m[j].value, theirs, doc, n);
    }
    if (distinct != (size_t)json_object_object_length(jobj))
        die("json-c and the walk see a different number of members", doc, n);
    check_members_at_once(obj, m, count, doc, n);
    span = bsc_str_make("untouched", 9);
    if (count_named(m, count, no_such_key, &amb) == 0 &&
        (bsc_json_member(obj, no_such_key, &span) != (amb ? -1 : 0) || span.len != 9))
        die("an absent key is not reported absent, or the span was written", doc, n);
    for (size_t j = 0; j < count; j++) {
        json_object_put(m[j].jkey);
        free(m[j].dec);
    }
    free(m);
}

static void check_array(struct bsc_str arr, json_object *jarr, const char *doc, size_t n)
{
    size_t pos = 0, idx = 0, len = json_object_array_length(jarr);
    struct bsc_str elem;

    while (bsc_json_array_next(arr, &pos, &elem)) {
        json_object *mine, *theirs;

        if (idx >= len || pos > arr.len || elem.p < arr.p || elem.p + elem.len > arr.p + arr.len)
            die("bsc_json_array_next runs past the array", doc, n);
        mine = jc_span(elem, doc, n);
        theirs = json_object_array_get_idx(jarr, idx);
        if (!json_object_equal(mine, theirs))
            die("an array element span re-parses to another value", doc, n);
        json_object_put(mine);
        check_value(elem, theirs, doc, n);
        idx++;
    }
    if (idx != len)
        die("bsc_json_array_next and json-c count different lengths", doc, n);
}

static bool all_digits(struct bsc_str v)
{
    for (size_t i = 0; i < v.len; i++)
        if (v.p[i] < '0' || v.p[i] > '9')
            return false;
    return v.len > 0;
}

static void check_value(struct bsc_str v, json_object *jv, const char *doc, size_t n)
{
    static const struct bsc_str any = {"a", 1};
    enum bsc_json_kind kind = bsc_json_kind_of(v);
    struct bsc_str span;
    unsigned long long u;

    if (kind != kind_of_jc(jv))
        die("bsc_json_kind_of disagrees with json-c", doc, n);
    if (kind != BSC_JSON_OBJECT) {
        struct bsc_str val = {"untouched", 9};

        if (bsc_json_member(v, any, &span) != -1 || bsc_json_members(v, &any, 1, &val) != -1 ||
            val.p)
            die("bsc_json_member(s) on a non-object is not -1", doc, n);
    }
    if (kind != BSC_JSON_ARRAY) {
        size_t pos = 0;

        if (bsc_json_array_next(v, &pos, &span))
            die("bsc_json_array_next iterates a non-array", doc, n);
    }
    if (bsc_json_is_true(v) != (kind == BSC_JSON_BOOL && json_object_get_boolean(jv)))
        die("bsc_json_is_true disagrees with json-c", doc, n);
    switch (kind) {
    case BSC_JSON_STRING:
        span = bsc_json_string_raw(v);
        if (span.p != v.p + 1 || span.len != v.len - 2)
            die("bsc_json_string_raw is not the span less its quotes", doc, n);
        break;
    case BSC_JSON_NUMBER:
        if (bsc_json_u64(v, &u)) {
            if (!json_object_is_type(jv, json_type_int) || json_object_get_uint64(jv) != u)
                die("bsc_json_u64 disagrees with json-c", doc, n);
        } else if (all_digits(v) && v.len < 20) {
            die("bsc_json_u64 refuses a small integer", doc, n);
        }
        break;
    case BSC_JSON_ARRAY: check_array(v, jv, doc, n); break;
    case BSC_JSON_OBJECT: check_members(v, jv, doc, n); break;
    default:
        if (bsc_json_u64(v, &u) || bsc_json_string_raw(v).p)
            die("a scalar helper accepts the wrong kind", doc, n);
        break;
    }
}

/* The scanner on any bytes at all, valid or not: it must stay inside <p>, end, and hand out
 * spans inside the input (json_scan.c promises bounds, not answers, on unvalidated text). */
static void check_scan_anything(const char *p, size_t n)
{
    const struct bsc_str keys[] = {BSC_STR("a"), BSC_STR(""), BSC_STR_NULL};
    struct bsc_str doc = bsc_str_make(p, n), v, vals[BSC_ARRAY_LEN(keys)];
    size_t pos = 0, prev = 0, rounds = 0;

    for (size_t k = 0; k < BSC_ARRAY_LEN(keys); k++) {
        v = BSC_STR_NULL;
        if (bsc_json_member(doc, keys[k], &v) == 1 && (v.p < p || v.p + v.len > p + n))
            die("bsc_json_member returns a span outside garbage input", p, n);
    }
    if (bsc_json_members(doc, keys, BSC_ARRAY_LEN(keys), vals) == 1)
        for (size_t k = 0; k < BSC_ARRAY_LEN(keys); k++)
            if (vals[k].p && (vals[k].p < p || vals[k].p + vals[k].len > p + n))
                die("bsc_json_members returns a span outside garbage input", p, n);
    while (bsc_json_array_next(doc, &pos, &v)) {
        if (v.p < p || v.p + v.len > p + n || pos > n || pos <= prev || ++rounds > n)
            die("bsc_json_array_next leaves garbage input or does not move", p, n);
        prev = pos;
    }
}

/* ---- the verdicts --------------------------------------------------------------------- */

/* Checks bsc_json_check alone: the error contract, the clamp and depth monotonicity. */
static bool check_bsc(const char *p, size_t n, struct bsc_json_error *e)
{
    struct bsc_json_error e256 = {0, NULL}, e_big = {0, NULL};
    struct bsc_str doc = bsc_str_make(p, n);
    bool ok = bsc_json_check(doc, DEPTH, e);
    bool ok256 = bsc_json_check(doc, BSC_JSON_MAX_DEPTH, &e256);

    if (!ok && (!e->what || e->offset > n))
        die("a failure without a message or with an offset past the end", p, n);
    if (bsc_json_check(doc, BSC_JSON_MAX_DEPTH + 1000, &e_big) != ok256 ||
        (!ok256 && (e_big.offset != e256.offset || strcmp(e_big.what, e256.what) != 0)))
        die("max_depth above BSC_JSON_MAX_DEPTH is not clamped", p, n);
    if (ok && !ok256)
        die("accepted at depth 64 but not at 256", p, n);
    if (!ok && strcmp(e->what, "nested too deep") != 0 &&
        (ok256 || e256.offset != e->offset || strcmp(e256.what, e->what) != 0))
        die("a non-depth failure moved with the depth bound", p, n);
    if (!ok && strcmp(e->what, "nested too deep") == 0 && !ok256 && e256.offset < e->offset)
        die("a deeper bound failed earlier", p, n);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p;
    size_t last = 0;

    if (size > 1 << 20)
        return 0;
    p = malloc(size ? size : 1); /* patched in place; exactly sized, so ASan sees overreads */
    if (!p)
        return 0;
    if (size)
        memcpy(p, data, size);
    check_scan_anything(p, size);
    /* Each round either ends or patches one json-c quirk at bsc's failure offset, which then
     * must move strictly forward: at most size + 1 rounds. */
    for (size_t round = 0;; round++) {
        struct bsc_json_error e = {0, NULL};
        enum json_tokener_error jerr;
        bool bsc_ok = check_bsc(p, size, &e), jc_ok;
        json_object *jv = jc_doc(p, size, DEPTH, &jc_ok, &jerr);

        if (round > 0 && !bsc_ok && e.offset <= last)
            die("a patched input fails earlier than before", p, size);
        if (bsc_ok && !ref_strict(p, size))
            die("bsc_json_check accepts what RFC 8259 (independent lexer) does not", p, size);
        if (bsc_ok && jc_ok) {
            struct bsc_str v = bsc_str_make(p, size);

            while (v.len && is_ws(v.p[0]))
                v.p++, v.len--;
            while (v.len && is_ws(v.p[v.len - 1]))
                v.len--;
            check_value(v, jv, p, size);
            if (bsc_json_kind_of(v) == BSC_JSON_OBJECT)
                check_request_rule(v, p, size);
            json_object_put(jv);
            break;
        }
        if (bsc_ok) {
            json_object *deeper;
            bool ok65;

            /* E: json-c's value-level depth. */
            if (jerr != json_tokener_error_depth || container_depth(p, size) != DEPTH)
                die("bsc_json_check accepts what json-c rejects", p, size);
            deeper = jc_doc(p, size, DEPTH + 1, &ok65, &jerr);
            if (!ok65)
                die("json-c's depth refusal is not the value-level off-by-one", p, size);
            json_object_put(deeper);
            break;
        }
        if (!jc_ok)
            break; /* both reject */
        json_object_put(jv);
        if (!patch_quirk(p, size, &e))
            die("json-c accepts what bsc_json_check rejects, and no known quirk explains it", p,
                size);
        last = e.offset;
    }
    free(p);
    return 0;
}
