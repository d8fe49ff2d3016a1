/* SPDX-License-Identifier: MIT */
/* req_input.h -- struct req_input, struct request's member <input> (request.c and input.c
 * write it); types only. Router-private. */
#ifndef BSC_ROUTER_REQ_INPUT_H
#define BSC_ROUTER_REQ_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/str.h"
#include "policy/params.h"
#include "providers/provider.h"

/* The request as the client asked it: its dialect's reader (api/) computed the facts the
 * router decides on; the router reads them, and parses <json> only when it must. */
struct req_input {
    enum prov_op op;
    struct json_object *json; /* owned: the canonical request; NULL until req__json() */
    struct bsc_str body;      /* borrowed from sreq: the client's raw OpenAI body, or empty */
    uint64_t bytes_in;        /* the client's body size, whatever its dialect; kept for the
                                 access log after sreq (and <body>) are gone */
    struct bsc_str model_span;
    bool stream, include_usage, has_tools;
    uint32_t need_caps;       /* capabilities the request itself requires */
    uint64_t est_tokens;      /* estimated prompt + output tokens (decide.c) */
    uint64_t est_out_tokens;  /* the output part of it (the client's max tokens) */
    struct req_params params; /* the parameters the request sets (params.h) ... */
    bool params_read;         /* ... read on the first target that may not honour one */
    struct prov_native native; /* borrowed from sreq like <body>; body empty when none */
};

#endif
