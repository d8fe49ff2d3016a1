/* SPDX-License-Identifier: MIT */
/* machine.h -- request.c's functions for the machine's own files (decide_req.c): the
 * transitions, the event loop of one request, its timer, and the members request.c owns
 * changed for the file that saw why. Router-private; a request feature never includes it
 * (scripts/check-layering): work that completes later hands the request back through
 * req_wake.h. */
#ifndef BSC_ROUTER_MACHINE_H
#define BSC_ROUTER_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/decide.h"
#include "router/req_state.h"

struct cfg_target;
struct request;
struct worker;

/* The machine: the other files reach run, arm_timer, release and release_sreq through
 * r->m.wake (req_wake.h), never by these names. */
#ifdef BSC_UNIT_TEST
/* File-local in release builds (BSC_TESTABLE): a zeroed request from <w>'s pool (its
 * exchange's parked buffers' storage kept, empty) or from the allocator; NULL when out of
 * memory. */
struct request *req__alloc(struct worker *w);
#endif
/* Gives back a request's memory: to the worker's pool (its exchange's parked buffers with
 * it), or to the allocator. */
void req__release(struct request *r);
void req__goto(struct request *r, enum req_state next);
void req__run(struct request *r);
void req__arm_timer(struct request *r, uint64_t delay_ms);

/* The answer went out (or was abandoned): the borrowed srv_req is no longer the
 * request's to use (req_wake_release_sreq). */
void req__release_sreq(struct request *r);
/* The members request.c owns, changed for decide_req.c, which saw why. */
/* The decision's target (NULL: none yet) and tier for the next attempt (decide_req.c). */
void req__aim(struct request *r, const struct cfg_target *target, enum tier tier);
/* The next attempt is a half-open probe of its target's circuit, or not (decide_req.c). */
void req__aim_probe(struct request *r, bool probe);

#endif
