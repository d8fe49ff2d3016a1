/* SPDX-License-Identifier: MIT */
/* req_wake.h -- how work that completes later hands a request back to the machine: a store
 * callback, a lookup thread's answer, a limit's room, a transfer's end. request.c puts its
 * entry points in r->m.wake when it allocates the request; the other files of the router
 * call through them and never include request.c's own header (machine.h), so that the
 * machine calls its features and helpers and none of them calls the machine back by name
 * (scripts/check-layering checks it). Router-private. */
#ifndef BSC_ROUTER_REQ_WAKE_H
#define BSC_ROUTER_REQ_WAKE_H

#include <stdint.h>

#include "router/internal.h"

struct req_wake {
    /* An event the request waited for has happened: the machine runs its states. */
    void (*run)(struct request *r);
    /* The machine's one timer fires in <delay_ms> (0: on the next loop turn). */
    void (*arm_timer)(struct request *r, uint64_t delay_ms);
    /* ... or is stopped: what it was armed for is over. */
    void (*disarm_timer)(struct request *r);
    /* The request's last store callback ran after its end: its memory is given back. */
    void (*release)(struct request *r);
    /* The answer went out (or was abandoned): the borrowed srv_req is no longer the
     * request's to use. */
    void (*release_sreq)(struct request *r);
};

static inline void req_wake_run(struct request *r)
{
    r->m.wake->run(r);
}

static inline void req_wake_timer(struct request *r, uint64_t delay_ms)
{
    r->m.wake->arm_timer(r, delay_ms);
}

static inline void req_wake_disarm(struct request *r)
{
    r->m.wake->disarm_timer(r);
}

static inline void req_wake_release(struct request *r)
{
    r->m.wake->release(r);
}

static inline void req_wake_release_sreq(struct request *r)
{
    r->m.wake->release_sreq(r);
}

#endif
