/* SPDX-License-Identifier: MIT */
/* openai_chat.h -- private to api/: the request readers of the OpenAI surface, split from
 * their HTTP handlers so they can be tested and fuzzed without a server. They read the
 * client's raw bytes under one rule: every member the gateway reads is the one every
 * upstream parser reads (names compared decoded, duplicates refused), because the bytes
 * are forwarded as they are. Never included from outside api/. */
#ifndef BSC_API_OPENAI_CHAT_H
#define BSC_API_OPENAI_CHAT_H

#include <stdbool.h>

#include <json-c/json.h>

#include "core/err.h"
#include "core/json_check.h"
#include "core/str.h"

/* Why a request is refused: a 400 in OpenAI's error shape. */
struct api_refusal {
    const char *code; /* static, e.g. "duplicate_key" */
    char message[400];
};

/* What api__chat_read found: spans borrowed from the body. */
struct api_chat {
    struct bsc_str model;    /* the "model" value, quotes included (the router splices here) */
    struct bsc_str name;     /* its contents as written: the route name */
    struct bsc_str messages; /* a non-empty array of objects */
    struct bsc_str tools, response_format, max_tokens, max_completion_tokens; /* or empty */
    bool stream, include_usage;
    bool no_images;          /* the messages' bytes cannot spell "image_url" */
};

/* Validates the raw /v1/chat/completions <body> (strict JSON, depth 64, one object whose
 * top-level names are distinct once decoded, the members the gateway reads well typed).
 * Returns BSC_OK with <out> filled, or BSC_EINVAL with <why> filled. Never allocates. */
enum bsc_err api__chat_read(struct bsc_str body, struct api_chat *out, struct api_refusal *why);

/* Fills <why> for a body bsc_json_check_request gave verdict <v> (not OK) with <jerr>:
 * duplicate_key naming the member (decoded), invalid_request, or invalid_json. */
void api__json_refusal(struct bsc_str body, enum bsc_json_verdict v,
                       const struct bsc_json_error *jerr, struct api_refusal *why);

/* What api__embeddings_read found. */
struct api_embeddings {
    struct json_object *json; /* owned by the caller after BSC_OK: the parsed request */
    struct bsc_str model;     /* the "model" value span inside the body */
    const char *name;         /* the route name, borrowed from <json> */
};

/* Validates the raw /v1/embeddings <body> under the same rule (strict JSON, distinct
 * decoded top-level names; model a string; input a non-empty string or array of strings
 * or token arrays). Returns BSC_OK with <out> filled, or BSC_EINVAL with <why> filled
 * (nothing to free). */
enum bsc_err api__embeddings_read(struct bsc_str body, struct api_embeddings *out,
                                  struct api_refusal *why);

#endif
