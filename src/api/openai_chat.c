/* SPDX-License-Identifier: MIT */
/* openai_chat.c -- POST /v1/chat/completions: parse and validate the client's JSON
 * (strict, UTF-8 checked, depth-bounded), resolve "model" to a route, and hand the
 * request to the router. Everything wrong with the request is a 400 (or 404 for an
 * unknown model) in OpenAI's error shape, before any upstream work. */
#include <string.h>

#include "api/internal.h"
#include "core/json_check.h"
#include "core/json_scan.h"
#include "router/request.h"

#define API_JSON_MAX_DEPTH 64

void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message)
{
    (void)param;
    srv_resp_error(req, 400, "invalid_request_error", code, message);
}

/* Line and column (1-based) of byte <off> in <s>, for JSON error messages. */
static void line_col(struct bsc_str s, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < s.len; i++) {
        if (s.p[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* Parses <body> strictly. Returns the object or NULL with <msg> filled. */
struct json_object *api__parse_json(struct bsc_str body, char *msg, size_t msglen)
{
    struct json_tokener *tok = json_tokener_new_ex(API_JSON_MAX_DEPTH);
    struct json_object *obj;
    enum json_tokener_error jerr;
    size_t off;
    unsigned line, col;

    if (!tok) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    obj = json_tokener_parse_ex(tok, body.p ? body.p : "", (int)body.len);
    jerr = json_tokener_get_error(tok);
    off = json_tokener_get_parse_end(tok);
    if (jerr == json_tokener_continue)
        jerr = json_tokener_error_parse_eof;
    if (!obj || jerr != json_tokener_success) {
        line_col(body, off, &line, &col);
        snprintf(msg, msglen,
                 "We could not parse the JSON body of your request: %s at line %u column %u",
                 body.len ? json_tokener_error_desc(jerr) : "empty body", line, col);
        json_object_put(obj);
        obj = NULL;
    } else {
        /* Only whitespace may follow the document. */
        for (; off < body.len; off++) {
            char c = body.p[off];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                line_col(body, off, &line, &col);
                snprintf(msg, msglen, "unexpected data after the JSON body at line %u column %u",
                         line, col);
                json_object_put(obj);
                obj = NULL;
                break;
            }
        }
    }
    json_tokener_free(tok);
    return obj;
}

enum {
    F_MODEL, F_MESSAGES, F_STREAM, F_STREAM_OPTIONS, F_TOOLS, F_RESPONSE_FORMAT, F_MAX_TOKENS,
    F_MAX_COMPLETION_TOKENS, F_COUNT
};

/* An optional boolean span: false (after answering 400) when it has another type. */
static bool read_bool(struct srv_req *req, struct bsc_str v, const char *param, bool *out)
{
    char msg[128];

    *out = false;
    if (!v.p || bsc_json_kind_of(v) == BSC_JSON_NULL)
        return true;
    if (bsc_json_kind_of(v) != BSC_JSON_BOOL) {
        snprintf(msg, sizeof(msg), "'%s' must be a boolean", param);
        api__bad_request(req, "invalid_type", param, msg);
        return false;
    }
    *out = bsc_json_is_true(v);
    return true;
}

/* The OpenAI fast path: the body is validated without building a parse tree and only
 * the members the gateway needs are read as byte spans, in one pass; the router parses
 * the body only if a translation or a contract check needs it. */
void api__chat_completions(struct worker *w, struct srv_req *req)
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
    struct bsc_str body = srv_req_body(req), f[F_COUNT], name, usage;
    struct chat_in in = {.op = PROV_OP_CHAT, .body = body};
    struct bsc_json_error jerr;
    unsigned line, col;
    char msg[300];

    switch (bsc_json_check_members(body, API_JSON_MAX_DEPTH, keys, F_COUNT, f, &jerr)) {
    case -1:
        line_col(body, jerr.offset, &line, &col);
        snprintf(msg, sizeof(msg),
                 "We could not parse the JSON body of your request: %s at line %u column %u",
                 body.len ? jerr.what : "empty body", line, col);
        return api__bad_request(req, "invalid_json", NULL, msg);
    case 0:
        return api__bad_request(req, "duplicate_key", NULL,
                                "'model', 'messages', 'stream', 'stream_options', 'tools', "
                                "'response_format', 'max_tokens' and 'max_completion_tokens' "
                                "must appear at most once");
    default:
        break;
    }
    if (bsc_json_kind_of(bsc_str_trim(body)) != BSC_JSON_OBJECT)
        return api__bad_request(req, "invalid_request", NULL,
                                "the request body must be a JSON object");
    in.model_span = f[F_MODEL];
    name = bsc_json_string_raw(f[F_MODEL]);
    if (bsc_json_kind_of(f[F_MODEL]) != BSC_JSON_STRING || name.len == 0)
        return api__bad_request(req, "missing_model", "model",
                                "you must provide a model parameter (a string)");
    if (bsc_json_kind_of(f[F_MESSAGES]) != BSC_JSON_ARRAY || !bsc_json_array_nonempty(f[F_MESSAGES]))
        return api__bad_request(req, "invalid_messages", "messages",
                                "'messages' must be a non-empty array");
    if (!read_bool(req, f[F_STREAM], "stream", &in.stream))
        return;
    if (bsc_json_kind_of(f[F_STREAM_OPTIONS]) == BSC_JSON_OBJECT) {
        if (bsc_json_member(f[F_STREAM_OPTIONS], BSC_STR("include_usage"), &usage) < 0)
            return api__bad_request(req, "duplicate_key", "stream_options.include_usage",
                                    "'include_usage' must appear at most once");
        if (bsc_json_member(f[F_STREAM_OPTIONS], BSC_STR("include_usage"), &usage) == 0)
            usage = BSC_STR_NULL;
        if (!read_bool(req, usage, "stream_options.include_usage", &in.include_usage))
            return;
    }
    in.have_spans = true;
    in.messages = f[F_MESSAGES];
    in.tools = f[F_TOOLS];
    in.response_format = f[F_RESPONSE_FORMAT];
    in.max_tokens = f[F_MAX_TOKENS];
    in.max_completion_tokens = f[F_MAX_COMPLETION_TOKENS];
    in.cfg = cfg_current_get();
    in.route = cfg_route_find(in.cfg, name);
    if (!in.route) {
        snprintf(msg, sizeof(msg),
                 "The model '%.*s' does not exist or is not routed by this gateway",
                 (int)(name.len > 120 ? 120 : name.len), name.p);
        srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
        cfg_unref(in.cfg);
        return;
    }
    req_chat_start(w, req, &in);
}
