/* SPDX-License-Identifier: MIT */
/* request.h -- the lifecycle of one proxied LLM request: the state machine of docs/design.md §3,
 * the only owner of retries. The api layer parses and validates the client's request
 * into a struct chat_in and hands it over; from then on the request belongs to the
 * router until its access-log line is written. See docs/internals/request-lifecycle.md. */
#ifndef BSC_ROUTER_REQUEST_H
#define BSC_ROUTER_REQUEST_H

#include <stdbool.h>

#include <json-c/json.h>

#include "config/config.h"
#include "core/str.h"
#include "providers/provider.h"
#include "router/client_scope.h"
#include "router/downstream.h"
#include "router/worker.h"
#include "server/server.h"

/* What the api layer extracted from the client's request. */
struct chat_in {
    enum prov_op op;                /* PROV_OP_CHAT or PROV_OP_EMBEDDINGS */
    struct cfg *cfg;                /* a ref, taken over by the router */
    const struct cfg_route *route;  /* borrowed from <cfg> */
    struct json_object *json;       /* owned; taken over by the router: the canonical
                                       (OpenAI-shaped) request */
    struct bsc_str body;            /* the client's raw OpenAI body, borrowed from the
                                       srv_req; empty when the client spoke another dialect */
    struct bsc_str model_span;      /* the raw "model" value inside <body> */
    bool stream;
    bool include_usage;
    const struct down_ops *down;    /* the client's dialect; NULL = OpenAI */
    struct prov_native native;      /* the client's own bytes when down != NULL (body
                                       empty otherwise); borrowed from the srv_req */
    void *down_arg;                 /* owned; taken over by the router: handed to <down> in
                                       down_ctx.arg, freed by down->arg_free at the end */
    /* What the dialect computed of its own request (api/inspect.c); the router copies it: */
    uint32_t need_caps;             /* CFG_CAP_* the request itself needs of a target */
    bool has_tools;                 /* a non-empty "tools" */
    uint64_t est_tokens;            /* estimated prompt + output tokens */
    uint64_t est_out_tokens;        /* the output part of it (the client's max tokens) */
    struct bsc_str scan_body;       /* the OpenAI-shaped text route selection and trimming
                                       read: <body>, or the canonical form serialised (owned
                                       by <json>, valid while <json> is unchanged) */
    struct bsc_str messages;        /* its "messages" value; empty when absent */
};

/* Starts the request on <w>. Takes ownership of in->cfg's ref and in->json. Always
 * answers <sreq> eventually (or sees it aborted). */
void req_chat_start(struct worker *w, struct srv_req *sreq, struct chat_in *in);
/* Frees the requests the worker keeps for reuse (after its loop has ended). */
void req_pool_drain(struct worker *w);

#endif
