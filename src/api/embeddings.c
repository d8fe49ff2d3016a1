/* SPDX-License-Identifier: MIT */
/* embeddings.c -- POST /v1/embeddings: validate the OpenAI embeddings request (model
 * names a route; input is a string, an array of strings, or token arrays) and route it
 * like a chat request, with failover, to targets whose adapters speak embeddings. */
#include <string.h>

#include "api/internal.h"
#include "core/json_scan.h"
#include "router/request.h"

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

void api__embeddings(struct worker *w, struct srv_req *req)
{
    struct bsc_str body = srv_req_body(req);
    struct chat_in in = {.op = PROV_OP_EMBEDDINGS, .body = body};
    struct json_object *model, *input;
    char msg[300];

    in.json = api__parse_json(body, msg, sizeof(msg));
    if (!in.json)
        return api__bad_request(req, "invalid_json", NULL, msg);
    if (!json_object_is_type(in.json, json_type_object) ||
        !json_object_object_get_ex(in.json, "model", &model) ||
        !json_object_is_type(model, json_type_string)) {
        api__bad_request(req, "missing_model", "model", "you must provide a model parameter");
        goto fail;
    }
    if (!json_object_object_get_ex(in.json, "input", &input) || !valid_input(input)) {
        api__bad_request(req, "invalid_input", "input",
                         "'input' must be a non-empty string or array of strings or tokens");
        goto fail;
    }
    if (!bsc_json_member_span(body, BSC_STR("model"), &in.model_span)) {
        api__bad_request(req, "invalid_request", "model", "'model' must appear exactly once");
        goto fail;
    }
    in.cfg = cfg_current_get();
    in.route = cfg_route_find(in.cfg, bsc_str_cstr(json_object_get_string(model)));
    if (!in.route) {
        snprintf(msg, sizeof(msg), "The model '%.120s' does not exist or is not routed by this gateway",
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
