/* SPDX-License-Identifier: MIT */
/* anthropic.h -- private to the Anthropic-compatible surface (POST /v1/messages):
 * anthropic_messages.c turns the client's Anthropic request into the canonical OpenAI
 * request (anthropic_down.h turns the router's OpenAI answer, stream and errors back into
 * Anthropic's shapes). Never included from outside api/.
 * See docs/internals/anthropic-inbound.md. */
#ifndef BSC_API_ANTHROPIC_H
#define BSC_API_ANTHROPIC_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

struct worker;
struct srv_req;

/* POST /v1/messages and POST /v1/messages/count_tokens (anthropic_messages.c). */
void api__anthropic_messages(struct worker *w, struct srv_req *req);
void api__anthropic_count_tokens(struct worker *w, struct srv_req *req);

/* What api__anthropic_parse() extracted from a /v1/messages body. */
struct anth_req {
    struct json_object *openai; /* owned by the caller after BSC_OK: the canonical request */
    struct bsc_str model;       /* the route name; borrowed from <openai> */
    bool stream;
};

/* Parses the raw /v1/messages <body> strictly (UTF-8 checked, depth-bounded), validates
 * it (model, max_tokens, messages required) and translates it. Returns BSC_OK with <out>
 * filled; BSC_EINVAL (bad JSON or an invalid request) with a client-facing message in
 * <why>; BSC_ENOMEM. Nothing is left to free unless BSC_OK. Never calls back. */
enum bsc_err api__anthropic_parse(struct bsc_str body, struct anth_req *out, char *why,
                                  size_t why_len);

/* Translates the Anthropic Messages request <areq> (a parsed JSON object, borrowed) into
 * a new OpenAI chat.completions request in *<out> (new ref; it may share sub-objects with
 * <areq> by reference count, never by mutation). Returns BSC_OK; BSC_EINVAL with a
 * client-facing message in <why> when <areq> holds something invalid or untranslatable;
 * BSC_ENOMEM. *<out> is NULL unless BSC_OK. */
enum bsc_err api__anthropic_to_openai(struct json_object *areq, struct json_object **out, char *why,
                                      size_t why_len);

#endif
