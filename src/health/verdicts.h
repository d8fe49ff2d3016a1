/* SPDX-License-Identifier: MIT */
/* verdicts.h -- what the gateway remembers to judge targets by their results: a bounded
 * table of recently finished requests (so POST /v1/feedback can attribute a task verdict to
 * the route, target and workflow that answered) and, per target, bounded windows of recent
 * attempt outcomes and task verdicts (for balance: score and the status page). Thread-safe
 * (a spin lock per request shard and a mutex for the targets, each held for a hash
 * lookup), takes the time from the caller, never calls back.
 * See docs/internals/feedback.md. */
#ifndef BSC_HEALTH_VERDICTS_H
#define BSC_HEALTH_VERDICTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The defaults of the gateway's table: a day of feedback would need millions of entries;
 * an hour at ~18 req/s fits, and 65536 slab slots of 192 bytes are 12 MiB (verdicts.c). */
#define VERDICTS_MAX_REQUESTS 65536u
#define VERDICTS_MAX_AGE_MS 3600000u
/* Attempt outcomes kept per target: enough for a rate to move by 1 %, few enough that a
 * target's change of behaviour shows within a few minutes of traffic. */
#define VERDICTS_WINDOW 100u
/* Credential scopes whose task verdicts are tallied per target; a new scope takes the slot
 * of the one with the least weight left. */
#define VERDICTS_SCOPES 16u
/* A tally whose weight has decayed below this (a lone verdict after four half-lives) is
 * forgotten: its rate no longer counts at all. */
#define VERDICTS_MIN_WEIGHT 0.0625
/* Targets tracked; verdicts of further ids are not kept (ids survive reloads). */
#define VERDICTS_MAX_TARGETS 1024u
/* Longest id (request, route, target) and scope kept; longer ones are not recorded. */
#define VERDICTS_ID_MAX 128u
#define VERDICTS_SCOPE_MAX 40u

struct verdicts;

/* A finished request, as recorded. Strings are copied. */
struct vd_request {
    const char *id, *route, *target, *scope;
    int workflow; /* enum attempt_workflow */
    uint64_t finish_ms;
    unsigned shard; /* the shard it is kept in (modulo their number): the finishing worker's */
};

/* What a claim returns: copies, valid without the lock. */
struct vd_claim {
    char route[VERDICTS_ID_MAX + 1], target[VERDICTS_ID_MAX + 1];
    int workflow;
};

/* Recent results of one target. Rates are meaningful only when their count is > 0. */
struct vd_rates {
    uint32_t attempts, attempts_ok; /* the last VERDICTS_WINDOW attempts */
    double tasks, tasks_ok;         /* task verdicts, weighted by age (vd_tally) */
};

/* How task verdicts count (clients.<id>.feedback and the feedback: section). */
struct vd_policy {
    uint64_t half_life_ms; /* a verdict's weight halves every <half_life_ms>; 0: never ages */
    double max_weight;     /* one scope's weight on one target is at most this; >= 1 */
};

/* One scope's task verdicts on one target: the sums of their weights (a verdict weighs 1
 * when given and 2^(-age / half-life) later), as of <at_ms>. */
struct vd_tally {
    double ok, n;
    uint64_t at_ms;
};

/* A task verdict on <target> from <scope>. <shared>: it moves every client's ranking
 * (trusted); otherwise only the ranking of <scope>'s own requests. */
struct vd_verdict {
    const char *target, *scope;
    bool ok, shared;
    uint64_t at_ms;
};

/* A table of at most <max_requests> requests, each kept at most <max_age_ms>. NULL when out
 * of memory or when <max_requests> is 0. */
struct verdicts *verdicts_new(size_t max_requests, uint64_t max_age_ms);
/* The same table split into <shards> (1 ..= max_requests) shards of max_requests / shards
 * requests each, rounded up: each worker records into its own, so recording never shares a
 * lock or a cache line with another worker; a claim searches them all. */
struct verdicts *verdicts_new_sharded(size_t max_requests, uint64_t max_age_ms, size_t shards);
void verdicts_free(struct verdicts *vs);

/* Records a finished request in its shard; the shard's oldest entry (and any past its age)
 * makes room.
 * BSC_EINVAL for a missing or too long string, BSC_ENOMEM. */
enum bsc_err verdicts_finished(struct verdicts *vs, const struct vd_request *rq);

/* Takes the one verdict request <id> may get, when <scope> made it: BSC_OK fills <out>;
 * BSC_ENOTFOUND when unknown, older than the age bound, or made by another scope (which
 * must not learn that it exists); BSC_EEXIST when it was already claimed. Of several
 * requests with this id, the newest: the latest finish time over the shards, the last
 * recorded within one. */
enum bsc_err verdicts_claim(struct verdicts *vs, const char *id, const char *scope,
                            uint64_t now_ms, struct vd_claim *out);

/* Adds one outcome to <target_id>'s attempt window. */
void verdicts_attempt(struct verdicts *vs, const char *target_id, bool ok);
/* Adds task verdict <v> to its scope's tally on its target, aged and capped by <p>. Not
 * kept when the target or the scope is not tracked (bounds above) or the scope too long. */
void verdicts_task(struct verdicts *vs, const struct vd_verdict *v, const struct vd_policy *p);

/* <target_id>'s results as a request of <scope> sees them at <now_ms>: its attempt window,
 * and the task verdicts of the shared tallies plus <scope>'s own (NULL: the shared ones
 * only). Zero when it has none. */
void verdicts_rates(struct verdicts *vs, const char *target_id, const char *scope,
                    uint64_t now_ms, const struct vd_policy *p, struct vd_rates *out);

/* The arithmetic of a tally, pure. vd_tally_age brings <t> to <now_ms> (a time before
 * its own leaves it as is) and forgets it below VERDICTS_MIN_WEIGHT. vd_tally_add ages
 * <t>, adds one verdict of weight 1, then scales the sums down to <p>->max_weight: a
 * scope's weight is bounded, its rate kept. */
void vd_tally_age(struct vd_tally *t, uint64_t now_ms, uint64_t half_life_ms);
void vd_tally_add(struct vd_tally *t, bool ok, uint64_t now_ms, const struct vd_policy *p);

#endif
