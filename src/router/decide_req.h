/* SPDX-License-Identifier: MIT */
/* decide_req.h -- decide_req.c's functions: the request's side of policy/decide.h (builds
 * its input, carries out its answer) and the notes it keeps. Router-private. */
#ifndef BSC_ROUTER_DECIDE_REQ_H
#define BSC_ROUTER_DECIDE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail/taxonomy.h"
#include "policy/attempt.h"
#include "policy/decide.h"

struct request;

/* The first target: the best primary, else the next allowed tier (r->target, r->tier,
 * r->next_wf set). DECIDE_STOP: r->err says why not. */
enum decision req__decide_first(struct request *r);
/* After the failure in r->fail: the next target/workflow/delay, or the error to reply. */
enum decision req__decide_next(struct request *r, const char **why);
bool req__later_tier_exists(const struct request *r);
/* The names of the capability bits in <caps>, comma-separated. */
void req__caps_names(uint32_t caps, char *buf, size_t len);
/* Counts the workflow in metrics; returns its name. */
const char *req__count_workflow(struct request *r, enum attempt_workflow wf);
/* The notes of a request that begins: no failure yet, so all of them were rate limits. */
void req__notes_init(struct request *r);
/* An attempt failed with <kind>: noted for the recovery reason (the first failure's kind
 * when none was noted) and whether every failure so far was a rate limit. */
void req__note_failed(struct request *r, enum fail_kind kind);
/* The recovery reason is <why> (static) unless one was noted already. */
void req__note_recovery(struct request *r, const char *why);
/* The attempt the delay was for has begun: no delay is due any more. */
void req__next_delay_taken(struct request *r);

#endif
