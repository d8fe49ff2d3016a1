/* SPDX-License-Identifier: MIT */
/* feedback.h -- the router's side of task feedback and balance: score: what each attempt
 * and each answered request leave in health/verdicts.h and the per-workflow outcome
 * metric, and the score-ordered pick of a tier. Called at a few points of request.c and
 * decide.c. See docs/internals/feedback.md. */
#ifndef BSC_ROUTER_FEEDBACK_H
#define BSC_ROUTER_FEEDBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "policy/attempt.h"
#include "router/req_balance.h"

struct metrics;
struct verdicts;
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

/* One attempt that ended (after the contract check), as request.c hands it over. */
struct feedback_attempt {
    struct metrics *m;
    unsigned shard;        /* the worker's metrics shard */
    struct verdicts *vd;   /* the gateway's verdict table, or NULL */
    const char *id;        /* the request's id */
    const char *route;     /* its route's id */
    const char *target;    /* the attempt's target's id */
    uint64_t labels_scope; /* the serial of the snapshot <target> belongs to (0: unknown),
                            * for metrics_inc_scoped */
    const char *scope;     /* the caller's scope (req_client_scope) */
    enum attempt_workflow wf;
    bool transport_ok;     /* a complete answer came back, before the contract check */
    bool usable;           /* ... and it passed: the answer delivered next */
    bool contract_counted; /* its contract outcome counts for the workflow */
};

/* Counts the attempt's transport and contract outcome per workflow and per target, and adds
 * it to the target's attempt window; a usable answer is remembered for POST /v1/feedback. */
void feedback_attempt(const struct feedback_attempt *fa);

/* What a candidate's score reads of the request (decide_req.c hands it over). */
struct feedback_asker {
    struct verdicts *vd;     /* the gateway's verdict table, or NULL */
    const struct cfg *cfg;   /* its feedback: section */
    const char *scope;       /* the caller's scope: an `own` client's verdicts count too */
    bool stream;             /* ranked by time to first token rather than latency */
    uint64_t est_tokens;     /* the request's token estimate, prompt and output ... */
    uint64_t est_out_tokens; /* ... and the output part of it, for the cost estimate */
};

/* balance: score: the recent results of candidate <t> (its health view <view>) that the
 * pure decision ranks by (policy/score.h); zeroed without a verdict table. */
void feedback_score_cand(const struct feedback_asker *q, const struct cfg_target *t,
                         const struct target_view *view, struct score_cand *out);
/* After a decision that ranked a tier by score (a route whose balance is <mode>): its order
 * and scores into <b>, for the next attempt's log line ("" otherwise). */
void feedback_note_ranking(struct req_balance *b, enum cfg_balance mode,
                           const struct decide_in *in, const struct decide_out *out);
/* Copies the ranking noted for the attempt about to begin into <dst> (<cap> bytes) and
 * clears it: each ranking is told once. */
void feedback_take_ranking(struct req_balance *b, char *dst, size_t cap);

#endif
