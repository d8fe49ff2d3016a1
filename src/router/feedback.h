/* SPDX-License-Identifier: MIT */
/* feedback.h -- the router's side of task feedback and balance: score: what each attempt
 * and each answered request leave in health/verdicts.h and the per-workflow outcome
 * metric, and the score-ordered pick of a tier. Called at a few points of request.c and
 * decide.c. See docs/internals/feedback.md. */
#ifndef BSC_ROUTER_FEEDBACK_H
#define BSC_ROUTER_FEEDBACK_H

#include <stdbool.h>
#include <stddef.h>

struct request;
struct pick_cand;
struct cfg_tier;

/* An attempt ended (after the contract check): counts its transport and contract outcome
 * per workflow and per target, and adds it to the target's attempt window; a usable answer
 * (the one delivered next) is remembered for POST /v1/feedback. <transport_ok>: a complete
 * answer came back, before the contract check. */
void feedback_attempt(struct request *r, bool transport_ok);

/* balance: score: the index in <c> of the best eligible candidate of <tier> (-1: none), and
 * the order with the scores noted in r->ranking for the attempt log. */
int feedback_score_pick(struct request *r, const struct cfg_tier *tier,
                        const struct pick_cand *c, size_t n);

#endif
