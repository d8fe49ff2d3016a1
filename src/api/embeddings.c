/* SPDX-License-Identifier: MIT */
/* embeddings.c -- POST /v1/embeddings: validate the OpenAI embeddings request (model
 * names a route; input is a string, an array of strings, or token arrays; top-level names
 * distinct once decoded, since the bytes are forwarded) and route it like a chat request,
 * with failover, to targets whose adapters speak embeddings. */
#include <string.h>

#include "api/auth.h"
#include "api/embeddings.h"
#include "api/inspect.h"
#include "api/openai_chat.h"
#include "core/json_check.h"
#include "core/json_scan.h"
#include "router/request.h"

#define API_EMB_MAX_DEPTH 64 /* api__parse_json's bound */

static bool valid_input(struct json_object *input)
{
    if (json_object_is_type(input, json_type_string))
        return json_object_get_string_len(input) > 0;
    if (!json_object_is_type(input, json_type_array) || json_object_array_length(input) == 0)
        return false;
    for (size_t i = 0; i < json_object_array_length(input); i++) {
        struct json_object *v = json_object_array_get_idx(input, i);
        if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int) &&
            !json_object_is_type(v, json_type_array))
            return false;
    }
    return true;
}

enum bsc_err api__embeddings_read(struct bsc_str body, struct api_embeddings *out,
                                  struct api_refusal *why)
{
    static const struct bsc_str model_key = BSC_STR("model");
    struct bsc_json_error jerr = {0, NULL, BSC_STR_NULL};
    struct json_object *model, *input;
    enum bsc_json_verdict v;

    *out = (struct api_embeddings){0};
    /* The raw pass first: the bytes are forwarded, so the "model" json-c reads (the last of
     * a repeated name) must be the only one there is. */
    v = bsc_json_check_request(body, API_EMB_MAX_DEPTH, &model_key, 1, 0, &out->model, &jerr);
    if (v != BSC_JSONV_OK) {
        api__json_refusal(body, v, &jerr, why);
        return BSC_EINVAL;
    }
    out->json = api__parse_json(body, why->message, sizeof(why->message));
    if (!out->json) {
        why->code = "invalid_json";
        return BSC_EINVAL;
    }
    if (!json_object_is_type(out->json, json_type_object) ||
        !json_object_object_get_ex(out->json, "model", &model) ||
        !json_object_is_type(model, json_type_string) ||
        bsc_json_kind_of(out->model) != BSC_JSON_STRING) {
        why->code = "missing_model";
        snprintf(why->message, sizeof(why->message), "you must provide a model parameter");
        goto fail;
    }
    if (!json_object_object_get_ex(out->json, "input", &input) || !valid_input(input)) {
        why->code = "invalid_input";
        snprintf(why->message, sizeof(why->message),
                 "'input' must be a non-empty string or array of strings or tokens");
        goto fail;
    }
    out->name = json_object_get_string(model);
    return BSC_OK;
fail:
    json_object_put(out->json);
    *out = (struct api_embeddings){0};
    return BSC_EINVAL;
}

void api__embeddings(struct worker *w, struct srv_req *req)
{
    struct bsc_str body = srv_req_body(req);
    struct chat_in in = {.op = PROV_OP_EMBEDDINGS, .body = body};
    struct api_refusal why;
    struct api_embeddings e;
    char msg[300];

    if (api__embeddings_read(body, &e, &why) != BSC_OK)
        return api__bad_request(req, why.code, NULL, why.message);
    in.json = e.json;
    in.model_span = e.model;
    in.cfg = cfg_current_get();
    in.route = api__route_find(req, in.cfg, bsc_str_cstr(e.name));
    if (!in.route) {
        snprintf(msg, sizeof(msg),
                 "The model '%.120s' does not exist or is not routed by this gateway", e.name);
        srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
        cfg_unref(in.cfg);
        json_object_put(in.json);
        return;
    }
    api__inspect(&in, NULL);
    req_chat_start(w, req, &in);
}
