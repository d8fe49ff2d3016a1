/* SPDX-License-Identifier: MIT */
/* resume_types.h -- struct resume, struct request's member <resume> (resume.c and its
 * dialect files write it); types only: the functions are in resume.h. Router-private. */
#ifndef BSC_ROUTER_RESUME_TYPES_H
#define BSC_ROUTER_RESUME_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "providers/provider.h"
#include "stream/replay_match.h"

struct cfg_target;

#define RESUME_MAX_TEXT (1u << 20) /* past this much text a stream is not continued */
#define RESUME_ITEM_ID_MAX 128     /* a Responses output item id longer than this: not continued */

/* What the client's stream is made of, as the first frame relayed says. */
enum resume_events {
    RESUME_EV_CHUNKS = 0, /* the adapter's OpenAI chunk frames (translated for other dialects) */
    RESUME_EV_ANTHROPIC,  /* Anthropic's own events, carried whole (resume_anthropic.c) */
    RESUME_EV_RESPONSES,  /* the Responses API's own typed events (resume_responses.c) */
    RESUME_EV_COUNT
};

struct resume {
    bool on;                          /* a stream on a route with on_stream_failure: continue */
    bool ineligible;                  /* it sent a tool call, a non-text part, another choice, or
                               more than RESUME_MAX_TEXT: never continued */
    bool active;                      /* the running attempt continues the broken stream */
    bool prefill;                     /* ... by prefill, else by replay and match */
    bool gave_up;                     /* a replay said something else: the stream ends */
    bool seam_sent;                   /* the seam comment went out for this attempt */
    const struct cfg_target *refused; /* the last target that refused a prefill */
    struct bsc_buf sent;              /* owned: the answer's text the client has */
    struct replay_match m;
    struct json_object *prefill_req; /* owned: the request with the trailing message */
    char why[256];                   /* the interruption the client gets if nothing continues */
    const char *how;                 /* static: "prefill" | "replay" of the last continuation */
    const char *break_why;           /* static: how the stream broke ("stream_cut", ...), for the
                               broken attempt's line, until PICK wrote it */
    const char *target;              /* borrowed from cfg: where it continued last, or NULL */
    uint64_t seam_bytes;             /* client bytes sent before the (last) seam */
    struct prov_usage prior;         /* the usage of the broken attempts before this one, summed */
    unsigned n_prior;                /* ... how many there were */
    /* Pass-through streams (the upstream's own events relayed to the client) */
    enum resume_events events;       /* set by the first frame watched */
    struct bsc_buf native_body;      /* owned: the client's bytes plus the trailing assistant
                                        message, for an Anthropic prefill */
    struct prov_native native;       /* r->input.native with <native_body>, while it is used */
    bool native_prefill;             /* ... built for the running attempt */
    int64_t cont_input;              /* the continuing attempt's own input tokens (Anthropic
                                        message_start), -1 when not said */
    char item_id[RESUME_ITEM_ID_MAX + 1]; /* Responses: the output item the client has */
    int64_t output_index;            /* ... its index */
    int64_t next_seq;                /* ... the sequence_number the next event sent takes */
    bool item_seen;                  /* ... an output item was announced (watching), or the
                                        continuation announced its own (rewriting) */
    unsigned ends_sent;              /* the closing events the client has already (a block
                                        stop, a .done event): bits of the dialect's file */
};

#endif
