/* SPDX-License-Identifier: MIT */
/* trim_types.h -- struct trim_state, struct request's member <trim> (trim.c writes it);
 * types only: the planner and the functions are in trim.h. Router-private. */
#ifndef BSC_ROUTER_TRIM_TYPES_H
#define BSC_ROUTER_TRIM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/str.h"

struct trim_msg;

/* Per request: the descriptors read at the start, and the current attempt's cut. */
struct trim_state {
    struct trim_msg *msgs; /* owned; NULL when the route does not trim or cannot */
    size_t n;
    uint64_t fixed_bytes, min_bytes, all_bytes; /* outside the messages; cut; whole */
    struct bsc_str msgs_span;  /* the messages inside the client's OpenAI bytes, or empty */
    bool *drop;                /* owned; <n> entries */
    long dropped;              /* the current attempt's count; 0 = sent as the client wrote */
    struct bsc_buf body;       /* owned: the current attempt's bytes (OpenAI fast path) */
    struct bsc_str model_span; /* "model" inside <body> */
    struct json_object *json;  /* owned ref: the current attempt's canonical request */
    char count_text[24];       /* <dropped> as the response header writes it */
};

#endif
