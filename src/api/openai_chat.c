/* SPDX-License-Identifier: MIT */
/* openai_chat.c -- POST /v1/chat/completions: parse and validate the client's JSON
 * (strict, UTF-8 checked, depth-bounded; member names compared decoded, none repeated, so
 * the upstream reads what the gateway read: docs/internals/json-names.md), resolve "model"
 * to a route, and hand the request to the router. Everything wrong with the request is a
 * 400 (or 404 for an unknown model) in OpenAI's error shape, before any upstream work. */
#include <string.h>

#include "api/auth.h"
#include "api/inspect.h"
#include "api/openai_chat.h"
#include "core/json_check.h"
#include "core/json_name.h"
#include "core/json_parse.h"
#include "core/json_scan.h"
#include "router/request.h"

#define API_JSON_MAX_DEPTH 64

void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message)
{
    (void)param;
    srv_resp_error(req, 400, "invalid_request_error", code, message);
}

/* Parses <body> strictly. Returns the object or NULL with <msg> filled. The validator runs
 * first: json-c's own UTF-8 check lets overlong forms and surrogates through, and every
 * endpoint must refuse the same bytes. */
struct json_object *api__parse_json(struct bsc_str body, char *msg, size_t msglen)
{
    struct json_object *obj;
    struct bsc_json_error verr;
    struct bsc_json_where w;
    enum bsc_json_verdict v;
    unsigned line, col;
    char name[BSC_JSON_MAX_NAME + 1];

    /* One member name once: the value read here is the one any other parser would read. */
    if (body.len && (v = bsc_json_check_request(body, API_JSON_MAX_DEPTH, NULL, 0, 0, NULL,
                                                &verr)) != BSC_JSONV_OK) {
        bsc_json_line_col(body, verr.offset, &line, &col);
        if (v == BSC_JSONV_DUPLICATE) {
            bsc_json_name_decode(verr.name, name, sizeof(name));
            snprintf(msg, msglen,
                     "the member '%s' must appear at most once in the request body; it appears "
                     "again at line %u column %u (names compared with escapes decoded)",
                     name, line, col);
        } else {
            snprintf(msg, msglen,
                     "We could not parse the JSON body of your request: %s at line %u column %u",
                     verr.what, line, col);
        }
        return NULL;
    }
    obj = bsc_json_parse(body, API_JSON_MAX_DEPTH, BSC_JSON_UTF8, &w);
    if (obj)
        return obj;
    if (w.why == BSC_JSONP_NOMEM)
        snprintf(msg, msglen, "out of memory");
    else if (w.why == BSC_JSONP_TRAILING)
        snprintf(msg, msglen, "unexpected data after the JSON body at line %u column %u", w.line,
                 w.col);
    else
        snprintf(msg, msglen,
                 "We could not parse the JSON body of your request: %s at line %u column %u",
                 body.len ? w.what : "empty body", w.line, w.col);
    return NULL;
}

/* Fills <why> for a body bsc_json_check_request did not pass. */
void api__json_refusal(struct bsc_str body, enum bsc_json_verdict v,
                       const struct bsc_json_error *jerr, struct api_refusal *why)
{
    char name[BSC_JSON_MAX_NAME + 1];
    unsigned line, col;

    bsc_json_line_col(body, jerr->offset, &line, &col);
    switch (v) {
    case BSC_JSONV_DUPLICATE:
        bsc_json_name_decode(jerr->name, name, sizeof(name));
        why->code = "duplicate_key";
        snprintf(why->message, sizeof(why->message),
                 "the member '%s' must appear at most once in the request body; it appears "
                 "again at line %u column %u (names compared with escapes decoded)",
                 name, line, col);
        break;
    case BSC_JSONV_REFUSED:
        why->code = "invalid_request";
        snprintf(why->message, sizeof(why->message),
                 "the request body is refused: %s at line %u column %u", jerr->what, line, col);
        break;
    default:
        why->code = "invalid_json";
        snprintf(why->message, sizeof(why->message),
                 "We could not parse the JSON body of your request: %s at line %u column %u",
                 body.len ? jerr->what : "empty body", line, col);
        break;
    }
}

static enum bsc_err refuse(struct api_refusal *why, const char *code, const char *message)
{
    why->code = code;
    snprintf(why->message, sizeof(why->message), "%s", message);
    return BSC_EINVAL;
}

/* An optional boolean span into *<out>: false (with <why> set) when it has another type. */
static bool read_bool(struct bsc_str v, const char *param, bool *out, struct api_refusal *why)
{
    *out = false;
    if (!v.p || bsc_json_kind_of(v) == BSC_JSON_NULL)
        return true;
    if (bsc_json_kind_of(v) != BSC_JSON_BOOL) {
        why->code = "invalid_type";
        snprintf(why->message, sizeof(why->message), "'%s' must be a boolean", param);
        return false;
    }
    *out = bsc_json_is_true(v);
    return true;
}

/* The nested member <key> of object <obj>, read once: 1 found, 0 absent, -1 (with <why>
 * set) when it appears twice or beside a name parsers read differently. */
static int nested(struct bsc_str obj, const char *key, const char *where, struct bsc_str *v,
                  struct api_refusal *why)
{
    int r = bsc_json_member(obj, bsc_str_cstr(key), v);

    if (r < 0) {
        why->code = "duplicate_key";
        snprintf(why->message, sizeof(why->message),
                 "'%s' must appear at most once in %s (names compared with escapes decoded)",
                 key, where);
    }
    return r;
}

/* The members the router reads inside the messages (a message's "content", a content
 * part's "type") appear once. It reads them only to find images, and only when the bytes
 * may spell "image_url" (router/request.c, request_caps), so this pass is paid only then. That
 * each message is an object was checked in the validating pass. */
static bool read_messages(struct bsc_str msgs, bool *no_images, struct api_refusal *why)
{
    struct bsc_str msg, content, part, type;
    size_t i = 0, j;

    if ((*no_images = !bsc_json_may_hold(msgs, BSC_STR("image_url"))))
        return true;
    while (bsc_json_array_next(msgs, &i, &msg)) {
        content = BSC_STR_NULL; /* an absent member leaves it untouched */
        if (nested(msg, "content", "a message", &content, why) < 0)
            return false;
        if (bsc_json_kind_of(content) != BSC_JSON_ARRAY)
            continue;
        for (j = 0; bsc_json_array_next(content, &j, &part);)
            if (bsc_json_kind_of(part) == BSC_JSON_OBJECT &&
                nested(part, "type", "a content part", &type, why) < 0)
                return false;
    }
    return true;
}

enum {
    F_MODEL, F_MESSAGES, F_STREAM, F_STREAM_OPTIONS, F_TOOLS, F_RESPONSE_FORMAT, F_MAX_TOKENS,
    F_MAX_COMPLETION_TOKENS, F_COUNT
};

/* The OpenAI fast path: the body is validated without building a parse tree and only
 * the members the gateway needs are read as byte spans, in one pass; the router parses
 * the body only if a translation or a contract check needs it. */
enum bsc_err api__chat_read(struct bsc_str body, struct api_chat *out, struct api_refusal *why)
{
    static const struct bsc_str keys[F_COUNT] = {
        [F_MODEL] = BSC_STR("model"),
        [F_MESSAGES] = BSC_STR("messages"),
        [F_STREAM] = BSC_STR("stream"),
        [F_STREAM_OPTIONS] = BSC_STR("stream_options"),
        [F_TOOLS] = BSC_STR("tools"),
        [F_RESPONSE_FORMAT] = BSC_STR("response_format"),
        [F_MAX_TOKENS] = BSC_STR("max_tokens"),
        [F_MAX_COMPLETION_TOKENS] = BSC_STR("max_completion_tokens"),
    };
    struct bsc_str f[F_COUNT], usage = BSC_STR_NULL, type;
    struct bsc_json_error jerr = {0, NULL, BSC_STR_NULL};
    enum bsc_json_verdict v;

    *out = (struct api_chat){0};
    v = bsc_json_check_request(body, API_JSON_MAX_DEPTH, keys, F_COUNT, 1u << F_MESSAGES, f,
                               &jerr);
    if (v == BSC_JSONV_ELEMENT)
        return refuse(why, "invalid_messages", "each element of 'messages' must be an object");
    if (v != BSC_JSONV_OK) {
        api__json_refusal(body, v, &jerr, why);
        return BSC_EINVAL;
    }
    if (bsc_json_kind_of(bsc_str_trim(body)) != BSC_JSON_OBJECT)
        return refuse(why, "invalid_request", "the request body must be a JSON object");
    out->model = f[F_MODEL];
    out->name = bsc_json_string_raw(f[F_MODEL]);
    if (bsc_json_kind_of(f[F_MODEL]) != BSC_JSON_STRING || out->name.len == 0)
        return refuse(why, "missing_model", "you must provide a model parameter (a string)");
    if (bsc_json_kind_of(f[F_MESSAGES]) != BSC_JSON_ARRAY ||
        !bsc_json_array_nonempty(f[F_MESSAGES]))
        return refuse(why, "invalid_messages", "'messages' must be a non-empty array");
    if (!read_messages(f[F_MESSAGES], &out->no_images, why))
        return BSC_EINVAL;
    if (f[F_TOOLS].p && bsc_json_kind_of(f[F_TOOLS]) != BSC_JSON_NULL &&
        bsc_json_kind_of(f[F_TOOLS]) != BSC_JSON_ARRAY)
        return refuse(why, "invalid_type", "'tools' must be an array");
    if (!read_bool(f[F_STREAM], "stream", &out->stream, why))
        return BSC_EINVAL;
    if (bsc_json_kind_of(f[F_STREAM_OPTIONS]) == BSC_JSON_OBJECT &&
        nested(f[F_STREAM_OPTIONS], "include_usage", "'stream_options'", &usage, why) < 0)
        return BSC_EINVAL;
    if (!read_bool(usage, "stream_options.include_usage", &out->include_usage, why))
        return BSC_EINVAL;
    if (bsc_json_kind_of(f[F_RESPONSE_FORMAT]) == BSC_JSON_OBJECT &&
        nested(f[F_RESPONSE_FORMAT], "type", "'response_format'", &type, why) < 0)
        return BSC_EINVAL;
    out->messages = f[F_MESSAGES];
    out->tools = f[F_TOOLS];
    out->response_format = f[F_RESPONSE_FORMAT];
    out->max_tokens = f[F_MAX_TOKENS];
    out->max_completion_tokens = f[F_MAX_COMPLETION_TOKENS];
    return BSC_OK;
}

/* The route name: the model string decoded ("d\u0065mo" is "demo"), into <buf> when it has
 * escapes. A name that does not decode cleanly or fit is left raw: it names no route. */
static struct bsc_str route_name(struct bsc_str raw, char *buf, size_t cap)
{
    struct bsc_json_name_info info;

    if (!memchr(raw.p, '\\', raw.len) || !bsc_json_name_scan(raw, &info) || info.len >= cap)
        return raw;
    return bsc_str_make(buf, bsc_json_name_decode(raw, buf, cap));
}

void api__chat_completions(struct worker *w, struct srv_req *req)
{
    struct bsc_str body = srv_req_body(req), name;
    struct chat_in in = {.op = PROV_OP_CHAT, .body = body};
    struct api_refusal why;
    struct api_chat c;
    char msg[300], decoded[256];

    if (api__chat_read(body, &c, &why) != BSC_OK)
        return api__bad_request(req, why.code, NULL, why.message);
    in.model_span = c.model;
    in.stream = c.stream;
    in.include_usage = c.include_usage;
    in.cfg = cfg_current_get();
    name = route_name(c.name, decoded, sizeof(decoded));
    in.route = api__route_find(req, in.cfg, name);
    if (!in.route) {
        size_t n = name.len > 120 ? 120 : name.len;

        while (n && n < name.len && (name.p[n] & 0xc0) == 0x80)
            n--; /* never cut inside a character */
        snprintf(msg, sizeof(msg),
                 "The model '%.*s' does not exist or is not routed by this gateway", (int)n,
                 name.p);
        srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
        cfg_unref(in.cfg);
        return;
    }
    api__inspect(&in, &(struct api_scan){c.messages, c.tools, c.response_format, c.max_tokens,
                                         c.max_completion_tokens, c.no_images});
    req_chat_start(w, req, &in);
}
