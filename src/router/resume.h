/* SPDX-License-Identifier: MIT */
/* resume.h -- envelope.on_stream_failure: continue (docs/internals/streaming.md §6): a
 * stream broken after the commit point goes on from another attempt, by prefill (the text
 * already sent as a trailing assistant message, on a target with the capability `prefill`)
 * or by replay and match (the new answer held until it covers what was sent, and passed on
 * only if it begins with exactly that text). Never two answers spliced, never a tool-call
 * stream. resume.c writes struct resume; request.c decides when, exchange.c and deliver.c
 * feed it the adapter's OpenAI frames. Router-private. */
#ifndef BSC_ROUTER_RESUME_H
#define BSC_ROUTER_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "providers/provider.h"
#include "stream/replay_match.h"

struct request;
struct cfg_target;

#define RESUME_MAX_TEXT (1u << 20) /* past this much text a stream is not continued */

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
};

void resume_init(struct request *r);
void resume_cleanup(struct request *r);
/* Reads (the original attempt) or rewrites (a continuation) the adapter's frames in
 * r->x.conv. BSC_EINVAL: a replay diverged (r->resume.gave_up) or a tool call came in a
 * continuation: nothing of it may reach the client. */
enum bsc_err resume_filter(struct request *r);
/* Whether the broken committed stream may be continued. */
bool resume_possible(const struct request *r);
/* The stream broke: r->x.fail becomes the retryable failure the decision works from. */
void resume_begin(struct request *r, const char *why);
/* A continuation attempt on r->target is about to be built: prefill or replay. */
enum bsc_err resume_attempt(struct request *r);
/* A continuation attempt failed before it passed anything (its usage is kept): a prefill the
 * target refused (a 4xx about the request) becomes a retryable failure, and that target is
 * asked next by replay and match. Returns the result to count: "diverged", "refused" or
 * "failed". */
const char *resume_attempt_failed(struct request *r);
/* The request's usage: the running (last) attempt's, plus every broken attempt's before it. */
struct prov_usage resume_usage(const struct request *r);
/* Counts the continuation attempt that ends in bascule_stream_continuations_total:
 * <result> "ok", "diverged", "refused" or "failed". Nothing when it was not one. */
void resume_count(struct request *r, const char *result);
/* A broken attempt of a stream that may be continued ends: its usage (as charged) is kept,
 * so the request's usage counts every attempt. */
void resume_add_usage(struct request *r);
/* The continuation's prefill request, or NULL (the original request goes). */
struct json_object *resume_request(const struct request *r);

#endif
