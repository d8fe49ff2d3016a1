/* SPDX-License-Identifier: MIT */
/* limit.h -- the router's side of the local limits (limits/limits.h): the client's limits
 * as an admission check, each candidate's room (target and provider) copied into the
 * decision's input, the slots an attempt takes and gives back, and the wait for capacity
 * (queue_ms) in PICK. Router-private. See docs/internals/limits.md. */
#ifndef BSC_ROUTER_LIMIT_H
#define BSC_ROUTER_LIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include "router/limit_types.h"

struct request;
struct worker;
struct decide_cand;
struct decide_in;
struct decide_out;
struct cfg_target;
struct lim_set;

enum reqlim_admit { REQLIM_ADMIT_PASS, REQLIM_ADMIT_WAIT, REQLIM_ADMIT_REFUSE };

/* ADMIT: the client's rpm, tpm and max_concurrency; a limit reached sets the 429. WAIT:
 * the client's set asked the fleet (store.kind: redis) for room; its answer, or a timer,
 * runs the machine again. */
enum reqlim_admit reqlim_admit_client(struct request *r);
/* The room candidate <c> (its target, its provider) has for <r> now. */
void reqlim_fill(struct request *r, struct decide_cand *c, uint64_t now_ms);
/* Takes <t>'s and its provider's slots for the attempt decided: NULL, or when another
 * request took the room since the decision looked, the limit in the way (nothing taken;
 * *<wait_ms> when room returns). */
const char *reqlim_take(struct request *r, const struct cfg_target *t, int64_t *wait_ms);
/* Gives back what reqlim_take took, unused (the step was not taken after all). */
void reqlim_untake(struct request *r);
/* The decision refused the request for capacity: <limit> (static) names the limit. */
void reqlim_refused_by(struct request *r, const char *limit);
/* After a decision took <chosen>: counts a move past a candidate kept out for room. */
void reqlim_note_moved(struct request *r, const struct decide_in *in,
                       const struct cfg_target *chosen);
/* Gives back the current attempt's slots (tokens corrected by the usage when known). */
void reqlim_attempt_done(struct request *r);
/* Nothing had room: waits in PICK when a candidate's queue_ms allows (true: the timer or a
 * release runs the machine again), else false and the caller answers 429 rate_limited. */
bool reqlim_wait(struct request *r, const struct decide_out *out);
/* PICK runs again: out of the waiting list (the time queued counted), timer stopped. */
void reqlim_resume(struct request *r);
/* At DONE: the client's slot back, out of the waiting list. */
void reqlim_done(struct request *r);
/* The loop of <w> stops: no wake-up is sent to it any more (before its handle closes). */
void reqlim_worker_closing(struct worker *w);
/* Wakes the loops of gateway <gateway> whose bits are set in <waiters> (WORKER_CMD_CAPACITY):
 * the limits' wake-up, also for the fleet's answers (struct lim_share.wake). */
void reqlim_wake_loops(void *gateway, uint64_t waiters);
/* Sets <cmd> (WORKER_CMD_*) on <w> and wakes its loop, unless the loop has stopped taking
 * wake-ups (reqlim_worker_closing): a loop that ended its drain has its handle closed. */
void reqlim_loop_send(struct worker *w, unsigned cmd);
/* WORKER_CMD_CAPACITY: runs this loop's waiting requests again, oldest first. */
void reqlim_wake(struct worker *w);

#endif
