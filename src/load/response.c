/* SPDX-License-Identifier: MIT */
/* response.c -- reading usage and error codes out of answers for `bascule load`, with
 * json-c through the strict whole-text parser. A stream's content chunks are not parsed:
 * only an event that mentions "usage" or "error" can change the report, so the check is a
 * substring search first (a false hit only costs a parse). See response.h. */
#include <string.h>

#include "core/json_get.h"
#include "core/json_parse.h"
#include "load/response.h"
#include "stream/sse_parse.h"

/* Nesting bound of the parse: answers are shallow; a deeper one reads as malformed. */
#define LOAD_JSON_DEPTH 64

static void read_usage(struct load_seen *seen, struct json_object *usage)
{
    struct json_object *in = bsc_json_get_type(usage, "prompt_tokens", json_type_int);
    struct json_object *out = bsc_json_get_type(usage, "completion_tokens", json_type_int);
    int64_t i = in ? json_object_get_int64(in) : 0, o = out ? json_object_get_int64(out) : 0;

    if (!in && !out)
        return;
    seen->has_usage = true;
    seen->input_tokens = i > 0 ? (uint64_t)i : 0;
    seen->output_tokens = o > 0 ? (uint64_t)o : 0;
}

static void read_error(struct load_seen *seen, struct json_object *error)
{
    struct json_object *code = bsc_json_get(error, "code");
    const char *s = NULL;

    seen->has_error = true;
    seen->code[0] = '\0';
    if (code && json_object_is_type(code, json_type_string))
        s = json_object_get_string(code);
    else if (code && json_object_is_type(code, json_type_int))
        s = json_object_get_string(code); /* numeric codes (some providers): as written */
    if (s)
        snprintf(seen->code, sizeof(seen->code), "%s", s);
}

bool load_seen_json(struct load_seen *seen, struct bsc_str json)
{
    struct json_object *root = bsc_json_parse_whole(json, LOAD_JSON_DEPTH), *v;

    if (!root)
        return false;
    if ((v = bsc_json_get_type(root, "usage", json_type_object)))
        read_usage(seen, v);
    if ((v = bsc_json_get(root, "error")))
        read_error(seen, v);
    json_object_put(root);
    return true;
}

/* Whether <data> has a member "<name>" whose value starts with one of <starts>: a cheap
 * filter, since OpenAI streams put "usage": null on every chunk once include_usage is on. */
static bool mentions(struct bsc_str data, const char *quoted, const char *starts)
{
    const char *p = data.p, *end = data.p + data.len;
    size_t qlen = strlen(quoted);

    while (p < end && (p = memmem(p, (size_t)(end - p), quoted, qlen))) {
        p += qlen;
        while (p < end && (*p == ' ' || *p == '\t' || *p == ':' || *p == '\n' || *p == '\r'))
            p++;
        if (p < end && *p && strchr(starts, *p))
            return true;
    }
    return false;
}

void load_seen_event(struct load_seen *seen, struct bsc_str data)
{
    seen->first_event = true;
    if (sse_is_done(data)) {
        seen->done = true;
        return;
    }
    if (mentions(data, "\"usage\"", "{") || mentions(data, "\"error\"", "{\""))
        load_seen_json(seen, data);
}
