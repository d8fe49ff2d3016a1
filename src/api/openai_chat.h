/* SPDX-License-Identifier: MIT */
/* openai_chat.h -- private to api/: POST /v1/chat/completions, and the request readers of
 * the OpenAI surface, split from their HTTP handlers so they can be tested and fuzzed
 * without a server (the embeddings reader is embeddings.h's). They read the
 * client's raw bytes under one rule: every member the gateway reads is the one every
 * upstream parser reads (names compared decoded, duplicates refused), because the bytes
 * are forwarded as they are. Never included from outside api/. */
#ifndef BSC_API_OPENAI_CHAT_H
#define BSC_API_OPENAI_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "core/err.h"
#include "core/json_check.h"
#include "core/str.h"

struct worker;
struct srv_req;

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

/* POST /v1/chat/completions. */
void api__chat_completions(struct worker *w, struct srv_req *req);

/* Parses a JSON request body strictly (UTF-8 checked, depth-bounded, nothing after it).
 * Returns a new object, or NULL with a client-facing message in <msg>. */
struct json_object *api__parse_json(struct bsc_str body, char *msg, size_t msglen);

/* Answers 400 with an OpenAI-shaped error; <param> may be NULL. */
void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message);

#endif
