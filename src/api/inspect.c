/* SPDX-License-Identifier: MIT */
/* inspect.c -- what the router needs to know of a request, computed at the edge by the
 * dialect that read it: the capabilities it needs of a target, its token estimate, and
 * the OpenAI-shaped text and "messages" span that route selection and trimming read.
 * A chat body brings the spans its own reader found; other dialects hand their canonical
 * (OpenAI-shaped) form, serialised once here. See docs/internals/request-lifecycle.md. */
#include "api/inspect.h"
#include "core/json_name.h"
#include "core/json_scan.h"
#include "router/request.h"

enum { F_MESSAGES, F_TOOLS, F_RESPONSE_FORMAT, F_MAX_TOKENS, F_MAX_COMPLETION_TOKENS, F_COUNT };

/* A cheap, documented estimate of the tokens the request needs: about 4 bytes of JSON
 * per prompt token (OpenAI's tokenizers average 4 characters per token in English; JSON
 * overhead makes the estimate generous) plus the output budget the client asked for. */
static uint64_t estimate_tokens(struct bsc_str body, const struct bsc_str *f, uint64_t *out_part)
{
    unsigned long long out = 0;

    if (!bsc_json_u64(f[F_MAX_COMPLETION_TOKENS], &out) && !bsc_json_u64(f[F_MAX_TOKENS], &out))
        out = 0;
    *out_part = out;
    return body.len / 4 + out;
}

/* True when the string span <v>, its escapes decoded, is <want>: "image\u005furl" is
 * image_url to the upstream, so it must be to the gateway too (json-names.md). A string
 * parsers decode differently (a lone surrogate) equals no plain name. */
static bool str_is(struct bsc_str v, const char *want)
{
    return bsc_json_kind_of(v) == BSC_JSON_STRING &&
           bsc_json_name_eq(bsc_json_string_raw(v), bsc_str_cstr(want)) == 1;
}

/* True when a message has a content part of type image_url. */
static bool has_images(struct bsc_str msgs)
{
    struct bsc_str msg, content, part, type;
    size_t i = 0, j;

    while (bsc_json_array_next(msgs, &i, &msg)) {
        if (bsc_json_member(msg, BSC_STR("content"), &content) != 1 ||
            bsc_json_kind_of(content) != BSC_JSON_ARRAY)
            continue;
        for (j = 0; bsc_json_array_next(content, &j, &part);)
            if (bsc_json_member(part, BSC_STR("type"), &type) == 1 && str_is(type, "image_url"))
                return true;
    }
    return false;
}

/* The capabilities the request itself needs of a target (docs/design.md §2 contract). */
static uint32_t request_caps(const struct chat_in *in, const struct bsc_str *f, bool no_images)
{
    struct bsc_str type;
    uint32_t caps = 0;

    if (in->op == PROV_OP_EMBEDDINGS)
        return CFG_CAP_EMBEDDINGS;
    if (in->stream)
        caps |= CFG_CAP_STREAMING;
    if (bsc_json_array_nonempty(f[F_TOOLS]))
        caps |= CFG_CAP_TOOLS;
    if (f[F_RESPONSE_FORMAT].p &&
        bsc_json_member(f[F_RESPONSE_FORMAT], BSC_STR("type"), &type) == 1) {
        if (str_is(type, "json_schema"))
            caps |= CFG_CAP_JSON_SCHEMA;
        else if (str_is(type, "json_object"))
            caps |= CFG_CAP_JSON_OBJECT;
    }
    if (f[F_MESSAGES].p && !no_images && bsc_json_may_hold(f[F_MESSAGES], BSC_STR("image_url")) &&
        has_images(f[F_MESSAGES]))
        caps |= CFG_CAP_VISION;
    return caps;
}

/* The OpenAI-shaped text to read: the client's body, else the canonical form serialised
 * (the text belongs to in->json and lives while in->json is not changed). */
static struct bsc_str scan_text(const struct chat_in *in)
{
    const char *text;
    size_t len = 0;

    if (in->body.p || !in->json)
        return in->body;
    text = json_object_to_json_string_length(in->json, JSON_C_TO_STRING_PLAIN, &len);
    return bsc_str_make(text, text ? len : 0);
}

void api__inspect(struct chat_in *in, const struct api_scan *spans)
{
    static const struct bsc_str keys[F_COUNT] = {
        [F_MESSAGES] = BSC_STR("messages"),
        [F_TOOLS] = BSC_STR("tools"),
        [F_RESPONSE_FORMAT] = BSC_STR("response_format"),
        [F_MAX_TOKENS] = BSC_STR("max_tokens"),
        [F_MAX_COMPLETION_TOKENS] = BSC_STR("max_completion_tokens"),
    };
    struct bsc_str body = scan_text(in), f[F_COUNT];

    if (spans && in->body.p) {
        f[F_MESSAGES] = spans->messages;
        f[F_TOOLS] = spans->tools;
        f[F_RESPONSE_FORMAT] = spans->response_format;
        f[F_MAX_TOKENS] = spans->max_tokens;
        f[F_MAX_COMPLETION_TOKENS] = spans->max_completion_tokens;
    } else if (bsc_json_members(body, keys, F_COUNT, f) < 0) { /* repeated keys: read none */
        for (size_t i = 0; i < F_COUNT; i++)
            f[i] = BSC_STR_NULL;
    }
    in->need_caps = request_caps(in, f, spans && in->body.p && spans->no_images);
    in->has_tools = (in->need_caps & CFG_CAP_TOOLS) != 0;
    in->est_tokens = estimate_tokens(body, f, &in->est_out_tokens);
    in->scan_body = body;
    in->messages = f[F_MESSAGES];
}
