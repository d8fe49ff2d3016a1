/* SPDX-License-Identifier: MIT */
/* resume.h -- envelope.on_stream_failure: continue (docs/internals/streaming.md §6): a
 * stream broken after the commit point goes on from another attempt, by prefill (the text
 * already sent as a trailing assistant message, on a target with the capability `prefill`)
 * or by replay and match (the new answer held until it covers what was sent, and passed on
 * only if it begins with exactly that text). Never two answers spliced, never a tool-call
 * stream. resume.c writes struct resume; request.c decides when, exchange.c and deliver.c
 * feed it the adapter's frames: OpenAI chunks, or the upstream's own events relayed to a
 * client of the same dialect (resume_anthropic.c, resume_responses.c). Router-private. */
#ifndef BSC_ROUTER_RESUME_H
#define BSC_ROUTER_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "providers/provider.h"
#include "stream/replay_match.h"
#include "router/resume_types.h"

struct request;
struct cfg_target;

void resume_init(struct request *r);
void resume_cleanup(struct request *r);
/* A new attempt before the commit point: what the last one's frames said (held back while
 * a first token was awaited, never sent) is forgotten. */
void resume_restart(struct request *r);
/* Reads (the original attempt) or rewrites (a continuation) the adapter's frames in
 * r->x.conv. BSC_EINVAL: a replay diverged (r->resume.gave_up) or a tool call came in a
 * continuation: nothing of it may reach the client. */
enum bsc_err resume_filter(struct request *r);
/* Whether the broken committed stream may be continued. */
bool resume_possible(const struct request *r);
/* The stream broke: r->x.fail becomes the retryable failure the decision works from. */
void resume_begin(struct request *r, const char *why);
/* The stream broke, <why> (static: "stream_cut", ...), and is to be continued: the attempt
 * line written once PICK decided says how it broke (resume_take_break_why). */
void resume_note_break(struct request *r, const char *why);
/* How the stream broke, once (NULL when it did not): the note is cleared. */
const char *resume_take_break_why(struct request *r);
/* A continuation attempt on r->cur.target is about to be built: prefill or replay. */
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
/* The client's own bytes the attempt sends (prov_call.native): the original, the prefill
 * built for a continuation of an Anthropic pass-through stream, or NULL (translated). */
const struct prov_native *resume_native(const struct request *r);
/* Whether a continuation may run on <t>: a stream relayed in Anthropic's own events goes on
 * only on a target that speaks them (the decision leaves the others out). Pure. */
bool resume_target_fits(const struct request *r, const struct cfg_target *t);

/* ---- for resume_anthropic.c and resume_responses.c ---- */

/* The continuation's text <t> (one piece): *<from> is where its new part begins (<t>.len:
 * nothing new, the piece is held back). By prefill all of it is new; by replay the matcher
 * decides. What passes is added to what was sent. BSC_EINVAL: the replay diverged. */
enum bsc_err resume__pass_text(struct request *r, struct bsc_str t, size_t *from);
/* By prefill, or a replay that covered what was sent: the continuation's events may pass. */
bool resume__passing(const struct request *r);
/* The seam comment, once per continuing attempt, into the client's bytes. */
enum bsc_err resume__seam(struct request *r);
/* Adds <n> bytes at <p> to what the client has; past RESUME_MAX_TEXT never continued. */
void resume__note_sent(struct request *r, const char *p, size_t n);
/* The prior attempts' input tokens as the Anthropic and OpenAI usages count them apart:
 * without cache reads and writes. */
int64_t resume__prior_fresh_input(const struct request *r);

/* resume_anthropic.c: the carrier frames of an Anthropic pass-through stream. <f> is one
 * frame's data (after "data: "). */
void resume__anth_watch(struct request *r, struct bsc_str f);
/* One frame of a continuation, into <out> (or dropped). BSC_EINVAL: give up. */
enum bsc_err resume__anth_frame(struct request *r, struct bsc_str f, struct bsc_buf *out);
/* The prefill request: the client's bytes with the text sent as a trailing assistant
 * message, into r->resume.native. BSC_EINVAL: not possible (replay instead). */
enum bsc_err resume__anth_prefill(struct request *r);

/* resume_responses.c: the typed events of a Responses pass-through stream. <type> and <data>
 * are one event's name and data, as stream/ framed them (an event without a name is not
 * one of these: the stream is then not continued). */
void resume__resp_watch(struct request *r, struct bsc_str type, struct bsc_str data);
enum bsc_err resume__resp_frame(struct request *r, struct bsc_str type, struct bsc_str data,
                                struct bsc_buf *out);

#endif
