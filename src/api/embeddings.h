/* SPDX-License-Identifier: MIT */
/* embeddings.h -- POST /v1/embeddings and its request reader, split from the handler so it
 * can be tested and fuzzed without a server (embeddings.c). Never included from outside
 * api/. */
#ifndef BSC_API_EMBEDDINGS_H
#define BSC_API_EMBEDDINGS_H

#include <json-c/json.h>

#include "api/openai_chat.h"
#include "core/err.h"
#include "core/str.h"

struct worker;
struct srv_req;

/* What api__embeddings_read found. */
struct api_embeddings {
    struct json_object *json; /* owned by the caller after BSC_OK: the parsed request */
    struct bsc_str model;     /* the "model" value span inside the body */
    const char *name;         /* the route name, borrowed from <json> */
};

/* Validates the raw /v1/embeddings <body> under the rule of openai_chat.h's readers (strict
 * JSON, distinct decoded top-level names; model a string; input a non-empty string or array
 * of strings or token arrays). Returns BSC_OK with <out> filled, or BSC_EINVAL with <why>
 * filled (nothing to free). */
enum bsc_err api__embeddings_read(struct bsc_str body, struct api_embeddings *out,
                                  struct api_refusal *why);

void api__embeddings(struct worker *w, struct srv_req *req);

#endif
