/* SPDX-License-Identifier: MIT */
/* verdicts.h -- what the gateway remembers to judge targets by their results: a bounded
 * table of recently finished requests (so POST /v1/feedback can attribute a task verdict to
 * the route, target and workflow that answered) and, per target, bounded windows of recent
 * attempt outcomes and task verdicts (for balance: score and the status page). Thread-safe
 * (one mutex, held for a hash lookup), takes the time from the caller, never calls back.
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
/* Outcomes kept per target and per kind: enough for a rate to move by 1 %, few enough
 * that a target's change of behaviour shows within a few minutes of traffic. */
#define VERDICTS_WINDOW 100u
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
};

/* What a claim returns: copies, valid without the lock. */
struct vd_claim {
    char route[VERDICTS_ID_MAX + 1], target[VERDICTS_ID_MAX + 1];
    int workflow;
};

/* Recent results of one target. Rates are meaningful only when their count is > 0. */
struct vd_rates {
    uint32_t attempts, attempts_ok; /* the last VERDICTS_WINDOW attempts */
    uint32_t tasks, tasks_ok;       /* the last VERDICTS_WINDOW task verdicts */
};

/* A table of at most <max_requests> requests, each kept at most <max_age_ms>. NULL when out
 * of memory or when <max_requests> is 0. */
struct verdicts *verdicts_new(size_t max_requests, uint64_t max_age_ms);
void verdicts_free(struct verdicts *vs);

/* Records a finished request; the oldest entry (and any past its age) makes room.
 * BSC_EINVAL for a missing or too long string, BSC_ENOMEM. */
enum bsc_err verdicts_finished(struct verdicts *vs, const struct vd_request *rq);

/* Takes the one verdict request <id> may get, when <scope> made it: BSC_OK fills <out>;
 * BSC_ENOTFOUND when unknown, older than the age bound, or made by another scope (which
 * must not learn that it exists); BSC_EEXIST when it was already claimed. */
enum bsc_err verdicts_claim(struct verdicts *vs, const char *id, const char *scope,
                            uint64_t now_ms, struct vd_claim *out);

/* Adds one outcome to <target_id>'s attempt or task window. */
void verdicts_attempt(struct verdicts *vs, const char *target_id, bool ok);
void verdicts_task(struct verdicts *vs, const char *target_id, bool ok);

/* <target_id>'s windows; zero when it has none. */
void verdicts_rates(struct verdicts *vs, const char *target_id, struct vd_rates *out);

#endif
