/* SPDX-License-Identifier: MIT */
/* openai_chat.c -- POST /v1/chat/completions: parse and validate the client's JSON
 * (strict, UTF-8 checked, depth-bounded), resolve "model" to a route, and hand the
 * request to the router. Everything wrong with the request is a 400 (or 404 for an
 * unknown model) in OpenAI's error shape, before any upstream work. */
#include <string.h>

#include "api/internal.h"
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

/* Reads the optional boolean member <key>; false with an error when it has another type. */
static bool get_bool(struct json_object *o, const char *key, bool *out)
{
    struct json_object *v;

    *out = false;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return true;
    if (!json_object_is_type(v, json_type_boolean))
        return false;
    *out = json_object_get_boolean(v);
    return true;
}

void api__chat_completions(struct worker *w, struct srv_req *req)
{
    struct bsc_str body = srv_req_body(req);
    struct chat_in in = {.op = PROV_OP_CHAT, .body = body};
    struct json_object *model, *messages, *opts;
    char msg[300];

    in.json = api__parse_json(body, msg, sizeof(msg));
    if (!in.json)
        return api__bad_request(req, "invalid_json", NULL, msg);
    if (!json_object_is_type(in.json, json_type_object)) {
        api__bad_request(req, "invalid_request", NULL, "the request body must be a JSON object");
        goto fail;
    }
    if (!json_object_object_get_ex(in.json, "model", &model) ||
        !json_object_is_type(model, json_type_string) || json_object_get_string_len(model) == 0) {
        api__bad_request(req, "missing_model", "model",
                         "you must provide a model parameter (a string)");
        goto fail;
    }
    if (!json_object_object_get_ex(in.json, "messages", &messages) ||
        !json_object_is_type(messages, json_type_array) ||
        json_object_array_length(messages) == 0) {
        api__bad_request(req, "invalid_messages", "messages",
                         "'messages' must be a non-empty array");
        goto fail;
    }
    if (!get_bool(in.json, "stream", &in.stream)) {
        api__bad_request(req, "invalid_type", "stream", "'stream' must be a boolean");
        goto fail;
    }
    if (json_object_object_get_ex(in.json, "stream_options", &opts) &&
        json_object_is_type(opts, json_type_object) &&
        !get_bool(opts, "include_usage", &in.include_usage)) {
        api__bad_request(req, "invalid_type", "stream_options.include_usage",
                         "'stream_options.include_usage' must be a boolean");
        goto fail;
    }
    if (!bsc_json_member_span(body, BSC_STR("model"), &in.model_span)) {
        api__bad_request(req, "invalid_request", "model", "'model' must appear exactly once");
        goto fail;
    }
    in.cfg = cfg_current_get();
    in.route = cfg_route_find(in.cfg, bsc_str_make(json_object_get_string(model),
                                                   (size_t)json_object_get_string_len(model)));
    if (!in.route) {
        snprintf(msg, sizeof(msg), "The model '%.*s' does not exist or is not routed by this gateway",
                 json_object_get_string_len(model) > 120 ? 120 : json_object_get_string_len(model),
                 json_object_get_string(model));
        srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
        cfg_unref(in.cfg);
        goto fail;
    }
    req_chat_start(w, req, &in);
    return;
fail:
    json_object_put(in.json);
}
