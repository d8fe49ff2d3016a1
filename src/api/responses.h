/* SPDX-License-Identifier: MIT */
/* responses.h -- private to the OpenAI Responses surface (POST /v1/responses):
 * responses.c turns the client's Responses request into the canonical chat.completions
 * request and runs the handler; responses_down.c turns the router's chat answer, stream
 * and errors back into a Response object and its typed event stream, and keeps the
 * conversation for previous_response_id. Never included from outside api/.
 * See docs/internals/responses.md. */
#ifndef BSC_API_RESPONSES_H
#define BSC_API_RESPONSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <uv.h>

#include "core/err.h"
#include "core/str.h"
#include "router/downstream.h"

struct store;
struct worker;
struct srv_req;

#define RESP_ID_MAX 160 /* "resp_" + the request id, cut */

/* The down_ops of POST /v1/responses (responses_down.c). */
extern const struct down_ops api_responses_down;

/* What the handler hands to the down_ops (down_ctx.arg): one per request, freed by
 * api_responses_down.arg_free. */
struct resp_arg {
    char id[RESP_ID_MAX];           /* "resp_" + a random id of the gateway's own */
    char scope[40];                 /* req_client_scope(): whose turn this is */
    int64_t created_at;             /* wall-clock seconds */
    struct json_object *echo;       /* owned: request fields a Response repeats (instructions,
                                       tools, tool_choice, temperature, top_p, text,
                                       max_output_tokens, metadata, previous_response_id,
                                       parallel_tool_calls, store) */
    struct json_object *turn;       /* owned: the conversation in chat messages up to this
                                       turn's input (instructions excluded); NULL = not kept */
    struct store *store;            /* borrowed from the gateway; NULL = not kept */
    uv_loop_t *loop;                /* borrowed: the worker's loop */
    uint64_t ttl_ms;                /* responses.ttl_s */
};

/* POST /v1/responses: the OpenAI Responses API. */
void api__responses(struct worker *w, struct srv_req *req);

/* Frees <a> and what it owns. NULL is fine. */
void api__resp_arg_free(struct resp_arg *a);

/* Translates the Responses request <rq> (a parsed JSON object, borrowed) into a new
 * chat.completions request in *<out> (it may share sub-objects of <rq> by reference,
 * never by mutation). <history> (borrowed, may be NULL) is the chat messages of the
 * previous response, placed after the instructions and before this turn's input. <refs>
 * (borrowed, may be NULL) maps the ids of kept output items to the items, for the input's
 * item_reference entries; an id it lacks is refused.
 * *<turn> (new ref) gets <history> followed by this turn's input messages. Returns BSC_OK;
 * BSC_EINVAL with a client-facing message in <why>; BSC_ENOMEM. Nothing is left to free
 * unless BSC_OK. */
enum bsc_err api__responses_to_chat(struct json_object *rq, struct json_object *history,
                                    struct json_object *refs, struct json_object **out,
                                    struct json_object **turn, char *why, size_t why_len);

/* The store key of response <id> (copied into <buf>, NUL-terminated). */
struct bsc_str api__resp_store_key(const char *scope, const char *id, char *buf, size_t len);

#endif
