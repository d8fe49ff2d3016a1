/* SPDX-License-Identifier: MIT */
/* response.h -- what `bascule load` reads from an answer's body: the token usage and the
 * OpenAI error code, from a whole JSON body or from one SSE event of a stream. The body is
 * untrusted: anything of the wrong shape reads as absent. Used by load.c; counted by
 * report.c (docs/load.md). */
#ifndef BSC_LOAD_RESPONSE_H
#define BSC_LOAD_RESPONSE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/str.h"

#define LOAD_CODE_MAX 64

/* What the body said so far. */
struct load_seen {
    bool has_usage;
    uint64_t input_tokens, output_tokens; /* usage.prompt_tokens, usage.completion_tokens */
    bool has_error;                       /* a top-level "error" member */
    char code[LOAD_CODE_MAX];             /* its error.code (cut), "" when null or absent */
    bool done;                            /* stream: data: [DONE] */
    char cost[32]; /* stream: the gateway's closing ": x-bascule-cost-usd: N" comment's N */
    bool first_event;                     /* stream: a data: event arrived */
};

/* Reads the JSON document <json> (a whole body, or one event's data) into <seen>: usage
 * when it has a usage object, the error and its code when it has a non-null "error" member.
 * Malformed JSON or other shapes change nothing. Returns true when <json> parsed. */
bool load_seen_json(struct load_seen *seen, struct bsc_str json);

/* One SSE event's data: marks the first event and [DONE], and reads the JSON of events
 * that can carry usage or an error (the others -- most of a stream -- are not parsed). */
void load_seen_event(struct load_seen *seen, struct bsc_str data);

/* One SSE comment line's text (": " removed): the gateway's closing
 * "x-bascule-cost-usd: N" is kept in <seen>->cost; any other comment changes nothing. */
void load_seen_comment(struct load_seen *seen, struct bsc_str text);

#endif
