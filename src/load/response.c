/* SPDX-License-Identifier: MIT */
/* response.c -- reading usage and error codes out of answers for `bascule load`, without a
 * parse tree: one validating pass (core/json_check) records the spans of "usage" and
 * "error", and the few numbers and the code are read from those (core/json_scan), so the
 * load tester's own cost per request stays small next to the gateway's. A stream's content
 * chunks are not even validated: only an event whose "usage" or "error" holds an object can
 * change the report, which a substring search tells first. See response.h. */
#include <string.h>

#include "core/json_check.h"
#include "core/json_scan.h"
#include "load/response.h"
#include "stream/sse_parse.h"

/* Nesting bound of the check: answers are shallow; a deeper one reads as malformed. */
#define LOAD_JSON_DEPTH 64

static void read_usage(struct load_seen *seen, struct bsc_str usage)
{
    static const struct bsc_str keys[] = {BSC_STR("prompt_tokens"), BSC_STR("completion_tokens")};
    struct bsc_str vals[2];
    unsigned long long in = 0, out = 0;
    bool has_in, has_out;

    if (bsc_json_kind_of(usage) != BSC_JSON_OBJECT || bsc_json_members(usage, keys, 2, vals) < 0)
        return;
    has_in = vals[0].p && bsc_json_u64(vals[0], &in);
    has_out = vals[1].p && bsc_json_u64(vals[1], &out);
    if (!has_in && !has_out)
        return;
    seen->has_usage = true;
    seen->input_tokens = in;
    seen->output_tokens = out;
}

/* error.code as written: a string's raw contents (escapes left as they are: codes are
 * plain identifiers) or a number's digits; "" for null, absent or anything else. */
static void read_error(struct load_seen *seen, struct bsc_str error)
{
    struct bsc_str code = BSC_STR_NULL;
    size_t len;

    if (bsc_json_kind_of(error) == BSC_JSON_NULL)
        return;
    seen->has_error = true;
    seen->code[0] = '\0';
    if (bsc_json_kind_of(error) != BSC_JSON_OBJECT ||
        bsc_json_member(error, BSC_STR("code"), &code) != 1)
        return;
    if (bsc_json_kind_of(code) == BSC_JSON_STRING)
        code = bsc_json_string_raw(code);
    else if (bsc_json_kind_of(code) != BSC_JSON_NUMBER)
        return;
    len = code.len < sizeof(seen->code) - 1 ? code.len : sizeof(seen->code) - 1;
    memcpy(seen->code, code.p, len);
    seen->code[len] = '\0';
}

bool load_seen_json(struct load_seen *seen, struct bsc_str json)
{
    static const struct bsc_str keys[] = {BSC_STR("usage"), BSC_STR("error")};
    struct bsc_str vals[2];
    struct bsc_json_error jerr;

    if (bsc_json_check_members(json, LOAD_JSON_DEPTH, keys, 2, vals, &jerr) < 0)
        return false;
    if (vals[0].p)
        read_usage(seen, vals[0]);
    if (vals[1].p)
        read_error(seen, vals[1]);
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

void load_seen_comment(struct load_seen *seen, struct bsc_str text)
{
    static const struct bsc_str name = BSC_STR("x-bascule-cost-usd:");
    struct bsc_str v;

    if (!bsc_str_starts(text, name))
        return;
    v = bsc_str_trim(bsc_str_make(text.p + name.len, text.len - name.len));
    if (v.len && v.len < sizeof(seen->cost)) {
        memcpy(seen->cost, v.p, v.len);
        seen->cost[v.len] = '\0';
    }
}
