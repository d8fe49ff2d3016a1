/* SPDX-License-Identifier: MIT */
/* input.c -- the request as the client asked it (struct req_input): its parse tree, made
 * from the client's bytes only when something needs it. Same-dialect OpenAI traffic never
 * does (the adapter takes the raw bytes); translation, trimming and parameter checks do. */
#include "providers/provider.h"
#include "router/input.h"
#include "router/internal.h"

struct json_object *req__json(struct request *r)
{
    if (!r->input.json && r->input.body.p)
        r->input.json = prov_parse_json(r->input.body);
    return r->input.json;
}

const struct req_params *req__params(struct request *r)
{
    if (!r->input.params_read) {
        r->input.params_read = true;
        if (r->input.json)
            params_of_json(r->input.json, &r->input.params);
        else
            params_of_body(r->input.body, &r->input.params);
    }
    return &r->input.params;
}
