/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/load/response.c src/stream/sse_parse.c */
/* fuzz_load_response.c -- libFuzzer target for what `bascule load` reads out of an answer
 * (load/response.h): the usage and the error code of a whole body or of one stream event,
 * from bytes the load tester does not trust. Beyond "no crash, no leak, no UB" it aborts when:
 *   - reading is not deterministic, or the code is not a NUL-terminated string within
 *     LOAD_CODE_MAX, or it is set without an error;
 *   - a stream event reads differently from the same bytes read as a body, when it can carry
 *     usage or an error ("usage": {...} or "error": {... / "...), or changes usage or error
 *     when it cannot; [DONE] marks the end and nothing else;
 *   - on a body that both it and json-c (strict) accept, with "usage", "error", "code",
 *     "prompt_tokens" and "completion_tokens" written at most once each (a repeated name
 *     reads as absent here, as its last value in json-c) and no escape anywhere: the usage differs from json-c's integers
 *     prompt_tokens and completion_tokens (below 2^53), the error's presence from json-c's
 *     non-null "error", or the code from error.code (a string, cut to LOAD_CODE_MAX - 1 bytes).
 * Built and run by scripts/fuzz; seeds in tests/fuzz/corpus/load_response/ are answers of
 * the providers' shapes as the gateway relays them. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "load/response.h"
#include "stream/sse_parse.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_load_response: invariant broken: %s\n", what);
    abort();
}

static bool same(const struct load_seen *a, const struct load_seen *b)
{
    return a->has_usage == b->has_usage && a->input_tokens == b->input_tokens &&
           a->output_tokens == b->output_tokens && a->has_error == b->has_error &&
           strcmp(a->code, b->code) == 0 && a->done == b->done && a->first_event == b->first_event;
}

static void check_seen(const struct load_seen *s)
{
    if (!memchr(s->code, '\0', LOAD_CODE_MAX))
        die("code not NUL-terminated");
    if (s->code[0] && !s->has_error)
        die("a code without an error");
}

static size_t count(struct bsc_str in, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    const char *p = in.p, *end = in.p + in.len;

    while (p < end && (p = memmem(p, (size_t)(end - p), needle, k))) {
        n++;
        p += k;
    }
    return n;
}

static json_object *jc_parse(struct bsc_str in)
{
    struct json_tokener *tok = json_tokener_new_ex(65);
    char *copy = malloc(in.len + 1);
    json_object *o;

    if (!tok || !copy)
        abort();
    memcpy(copy, in.p, in.len);
    copy[in.len] = '\0';
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, copy, (int)in.len + 1);
    if (json_tokener_get_error(tok) != json_tokener_success ||
        json_tokener_get_parse_end(tok) < in.len) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    free(copy);
    return o;
}

/* json-c's integer <key> of <obj> when it is one below 2^53; -1 otherwise. */
static int64_t jc_count(json_object *obj, const char *key)
{
    json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_int))
        return -1;
    int64_t n = json_object_get_int64(v);
    return n >= 0 && n < (1ll << 53) ? n : -1;
}

static void reference(struct bsc_str in, const struct load_seen *s)
{
    json_object *doc, *usage, *error, *code;

    /* A repeated name reads as absent here and as its last value in json-c: not compared. */
    if (in.len > 100000 || memchr(in.p, '\\', in.len) || count(in, "\"usage\"") > 1 ||
        count(in, "\"error\"") > 1 || count(in, "\"code\"") > 1 ||
        count(in, "\"prompt_tokens\"") > 1 || count(in, "\"completion_tokens\"") > 1 ||
        !(doc = jc_parse(in)))
        return;
    if (!json_object_is_type(doc, json_type_object)) {
        if (s->has_usage || s->has_error)
            die("usage or error read from a non-object");
        json_object_put(doc);
        return;
    }
    if (json_object_object_get_ex(doc, "usage", &usage) &&
        json_object_is_type(usage, json_type_object)) {
        int64_t in_t = jc_count(usage, "prompt_tokens"), out_t = jc_count(usage, "completion_tokens");
        if (in_t >= 0 && out_t >= 0 &&
            (!s->has_usage || s->input_tokens != (uint64_t)in_t ||
             s->output_tokens != (uint64_t)out_t))
            die("usage differs from json-c's");
    } else if (s->has_usage) {
        die("usage read without a usage object");
    }
    bool has_error = json_object_object_get_ex(doc, "error", &error) && error != NULL;
    if (has_error != s->has_error)
        die("error presence differs from json-c's");
    if (has_error && json_object_is_type(error, json_type_object) &&
        json_object_object_get_ex(error, "code", &code) &&
        json_object_is_type(code, json_type_string)) {
        const char *want = json_object_get_string(code);
        size_t n = strlen(want) < LOAD_CODE_MAX - 1 ? strlen(want) : LOAD_CODE_MAX - 1;
        if (strlen(s->code) != n || memcmp(s->code, want, n) != 0)
            die("error code differs from json-c's");
    }
    json_object_put(doc);
}

/* "<name>" followed (after blanks and a colon) by one of <starts>: what load_seen_event
 * reads further; a stricter-than-needed mirror is not wanted, only "could it matter". */
static bool may_carry(struct bsc_str in)
{
    return count(in, "\"usage\"") || count(in, "\"error\"");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str in = {(const char *)data, size};
    struct load_seen a = {0}, b = {0}, ev = {0};
    bool parsed = load_seen_json(&a, in);

    if (load_seen_json(&b, in) != parsed || !same(&a, &b))
        die("reading a body is not deterministic");
    check_seen(&a);
    if (!parsed && (a.has_usage || a.has_error))
        die("a body that did not parse changed what was seen");
    if (parsed)
        reference(in, &a);

    load_seen_event(&ev, in);
    check_seen(&ev);
    if (!ev.first_event)
        die("an event did not count as one");
    if (sse_is_done(in)) {
        if (!ev.done || ev.has_usage || ev.has_error)
            die("[DONE] read as more than the end");
        return 0;
    }
    if (ev.done)
        die("an event other than [DONE] ended the stream");
    if (!may_carry(in) && (ev.has_usage || ev.has_error))
        die("an event without usage or error changed them");
    if (ev.has_usage || ev.has_error) {
        struct load_seen body = {0};
        load_seen_json(&body, in);
        body.first_event = true;
        if (!same(&ev, &body))
            die("an event read differently from the same body");
    }
    return 0;
}
