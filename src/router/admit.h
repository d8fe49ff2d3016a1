/* SPDX-License-Identifier: MIT */
/* admit.h -- the ADMIT state's checks (admit.c): whether a request may start, and after a
 * failure whether it may be replayed. Router-private: request.c runs them and changes
 * state by the verdict. */
#ifndef BSC_ROUTER_ADMIT_H
#define BSC_ROUTER_ADMIT_H

struct request;

enum admit_verdict {
    ADMIT_PASS = 0, /* every check passed: on to PICK */
    ADMIT_WAIT,     /* a check waits for an event (a store callback; later a queue) */
    ADMIT_REFUSE,   /* r->err.reply is the answer: REPLY_ERROR */
    ADMIT_ANSWERED  /* the client has its answer already (an idempotent replay): DONE */
};

/* Runs the checks in order from <*at> (the one that last waited; 0 on each entry to ADMIT):
 * the first that does not pass gives the verdict and is left in <*at>, for request.c to
 * keep (r->m.admit_at) and run again from when the request is woken. A request that has not
 * made an attempt yet runs the admission list; one entering ADMIT after a failed attempt
 * runs the replay list. */
enum admit_verdict admit_run(struct request *r, unsigned *at);

#endif
