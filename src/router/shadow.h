/* SPDX-License-Identifier: MIT */
/* shadow.h -- shadow traffic: a sampled share of a route's requests is mirrored to candidate
 * targets (`shadow:` on a route), fire-and-forget, to judge whether a candidate could serve
 * the route: outcome, latency, tokens, cost and agreement with the primary's answer. The
 * client never waits for a copy and never sees one. Design: docs/internals/shadow.md. */
#ifndef BSC_ROUTER_SHADOW_H
#define BSC_ROUTER_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/str.h"

struct request;
struct worker;
struct shadow;

/* What an answer says, for agreement: it came, it satisfies the request's contract
 * (JSON schema, tool parameters), and which tools it calls (sorted, comma-separated). */
struct shadow_summary {
    bool answered;
    bool valid;
    char tools[256];
};

enum shadow_agree { SHADOW_AGREE = 0, SHADOW_DISAGREE, SHADOW_UNKNOWN, SHADOW_AGREE_COUNT };

/* Whether the <seq>th request (0-based) of a route is mirrored at <percent> (0..100): exactly
 * <percent> of every 100 consecutive requests, spread evenly (a counter, not a hash, so the
 * share is exact and tests are deterministic). Pure. */
bool shadow_sample(uint64_t seq, uint32_t percent);

/* Agreement of a candidate's answer with the primary's: unknown when either has no answer;
 * agree when both are valid and call the same tools; else disagree. Pure. */
enum shadow_agree shadow_agreement(const struct shadow_summary *primary,
                                   const struct shadow_summary *cand);
const char *shadow_agree_name(enum shadow_agree a);

/* Fills <s>->tools from an OpenAI chat.completion <answer>: the names of the tool calls of
 * its first choice, sorted and comma-separated ("" for none). Sets answered; leaves valid.
 * False when <answer> is not a chat.completion. Pure. */
bool shadow_summarize(struct bsc_str answer, struct shadow_summary *s);

/* Called once the primary's first attempt started: mirrors the request to the route's
 * shadow targets when the route has some, its side effects are `none`, and sampling takes
 * it. Never fails the request and never calls back into it. */
void shadow_start(struct request *r);

/* Called when the primary request ends (before its answer is freed): hands the primary's
 * answer to its running copies, which record agreement when they end (at once for those
 * already ended). */
void shadow_primary_done(struct request *r);

/* The worker stops: cancels every copy still running on <w>'s loop. */
void shadow_worker_stop(struct worker *w);

#endif
