/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/cache/canon.c */
/* fuzz_cache_canon.c -- libFuzzer target for the response cache's canonicaliser
 * (cache/canon.h), which has its own JSON parser. For every input it checks, aborting when
 * one breaks:
 *   - it ends inside its bounds on any bytes (ASan/UBSan watch the reads);
 *   - what it accepts is JSON: bsc_json_check (the gateway's strict validator) accepts the
 *     input, and accepts the canonical text;
 *   - the canonical text is a fixed point: canonicalising it again gives the same bytes;
 *   - when json-c reads the input, it reads the canonical text to an equal value (top-level
 *     skipped members removed from the input's tree first): canonicalising never changes
 *     what a parser sees. Known json-c 0.16 quirk, skipped: some escaped surrogate pairs
 *     ("\ud836\ude80", U+1DA80) decode to U+FFFD; the canonicaliser decodes the pair, so
 *     inputs with an escaped high surrogate are not compared with json-c's tree; nor are
 *     inputs with an escaped NUL, which json-c's member names (C strings) cannot hold. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cache/canon.h"
#include "core/json_check.h"

static const char *const skip[] = {"stream", "user"};

static struct json_object *parse(const char *p, size_t n)
{
    struct json_tokener *tok = json_tokener_new_ex(CANON_MAX_DEPTH + 2);
    struct json_object *o;
    char *copy = malloc(n + 1);

    if (!tok || !copy) {
        free(copy);
        if (tok)
            json_tokener_free(tok);
        return NULL;
    }
    memcpy(copy, p, n);
    copy[n] = '\0';
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, copy, (int)n + 1);
    if (json_tokener_get_error(tok) != json_tokener_success ||
        json_tokener_get_parse_end(tok) < n) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    free(copy);
    return o;
}

/* An escaped high surrogate (\uD800..\uDBFF) anywhere in the input. */
static bool has_surrogate_escape(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (p[i] == '\\' && p[i + 1] == 'u' && (p[i + 2] | 0x20) == 'd' &&
            strchr("89abAB", p[i + 3]) && p[i + 3])
            return true;
    return false;
}

/* An escaped NUL (\u0000) anywhere in the input: json-c keeps a member name as a C string,
 * so names that differ after an escaped NUL ("\u0000a", "\u0000b") become one name in its
 * tree, and which value it keeps depends on their order, which canonicalising changes. */
static bool has_nul_escape(const uint8_t *p, size_t n)
{
    static const char nul[] = "\\u0000";

    return n >= 6 && memmem(p, n, nul, 6) != NULL;
}

static void check_equal_trees(const uint8_t *data, size_t size, struct bsc_str canon)
{
    struct json_object *in, *out;

    if (memchr(data, 0, size) || has_surrogate_escape(data, size) || has_nul_escape(data, size))
        return; /* json-c stops at a NUL byte; the quirks above */
    if (!(in = parse((const char *)data, size)))
        return;
    if (json_object_is_type(in, json_type_object))
        for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
            json_object_object_del(in, skip[i]);
    out = parse(canon.p, canon.len);
    if (!out || !json_object_equal(in, out))
        abort();
    json_object_put(in);
    json_object_put(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str body = bsc_str_make((const char *)data, size);
    struct bsc_buf a, b;
    struct bsc_json_error jerr;
    enum canon_result res;

    if (size > 1u << 16)
        return 0;
    bsc_buf_init(&a, 1u << 22);
    bsc_buf_init(&b, 1u << 22);
    res = canon_request(body, skip, 2, &a);
    if (res == CANON_OK) {
        struct bsc_str text = bsc_buf_str(&a);
        if (!bsc_json_check(body, CANON_MAX_DEPTH + 1, &jerr))
            abort();
        if (!bsc_json_check(text, CANON_MAX_DEPTH + 1, &jerr))
            abort();
        if (canon_request(text, NULL, 0, &b) != CANON_OK || b.len != a.len ||
            memcmp(a.p, b.p, a.len) != 0)
            abort();
        check_equal_trees(data, size, text);
    }
    bsc_buf_cleanup(&a);
    bsc_buf_cleanup(&b);
    return 0;
}
