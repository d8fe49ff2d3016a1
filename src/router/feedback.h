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
struct cfg;
struct cfg_client;
struct cfg_target;
struct vd_policy;
struct target_view;
struct score_cand;
struct decide_in;
struct decide_out;

/* How <cfg>'s feedback: section ages and caps task verdicts (health/verdicts.h). */
void feedback_policy(const struct cfg *cfg, struct vd_policy *out);

/* Whether a verdict of <client> moves every client's ranking: a trusted client, or any
 * caller of an open gateway (<client> NULL: there is no tenant to keep apart). An `own`
 * client's verdicts move only its own requests' ranking; a `none` client's are refused
 * before they get here. */
bool feedback_is_shared(const struct cfg_client *client);

/* An attempt ended (after the contract check): counts its transport and contract outcome
 * per workflow and per target, and adds it to the target's attempt window; a usable answer
 * (the one delivered next) is remembered for POST /v1/feedback. <transport_ok>: a complete
 * answer came back, before the contract check. */
void feedback_attempt(struct request *r, bool transport_ok);

/* balance: score: the recent results of candidate <t> (its health view <view>) that the
 * pure decision ranks by (policy/score.h); zeroed without a verdict table. */
void feedback_score_cand(const struct request *r, const struct cfg_target *t,
                         const struct target_view *view, struct score_cand *out);
/* After a decision that ranked a tier by score: its order and scores into r->balance.ranking, for the
 * next attempt's log line ("" otherwise). */
/* Copies the ranking noted for the attempt about to begin into <dst> (<cap> bytes) and
 * clears it: each ranking is told once. */
void feedback_take_ranking(struct request *r, char *dst, size_t cap);
void feedback_note_ranking(struct request *r, const struct decide_in *in,
                           const struct decide_out *out);

#endif
