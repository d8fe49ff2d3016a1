/* SPDX-License-Identifier: MIT */
/* limit_types.h -- struct req_limits, struct request's member <lim> (limit.c writes it);
 * types only: the functions are in limit.h. Router-private. */
#ifndef BSC_ROUTER_LIMIT_TYPES_H
#define BSC_ROUTER_LIMIT_TYPES_H

#include <stdbool.h>
#include <stdint.h>

struct cfg_target;
struct lim_set;
struct request;

/* What a request holds and waits for. Zeroed with the request. */
struct req_limits {
    bool client_held;             /* a slot of the client's limits is taken */
    bool team_held;               /* ... and of its team's (cfg_client.team) */
    const struct cfg_target *held; /* the target whose (and whose provider's) slot the
                                      current attempt holds, or NULL */
    bool held_t, held_p;          /* ... its target's, its provider's set took them */
    uint64_t held_tokens;         /* the tokens taken with it (the estimate) */
    const char *limited_by;       /* static: the limit the request was refused for (header,
                                     logs), or NULL */
    const struct cfg_target *fleet_wait; /* the target whose slot was asked of the fleet */
    bool waiting;                 /* queued in PICK for a target's capacity ... */
    const struct cfg_target *waiting_on; /* ... the one whose queue it is counted in */
    uint64_t queue_start_ms, queue_until_ms;
    uint64_t queued_ms;           /* time spent queued, for the logs ... */
    const char *queued_for;       /* ... static: for which limit (the first wait's) */
    struct request *q_prev, *q_next; /* the worker's list of waiting requests */
    struct lim_set *fair_on;      /* the set whose fair queue holds its place, or NULL */
};

#endif
