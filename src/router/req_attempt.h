/* SPDX-License-Identifier: MIT */
/* req_attempt.h -- the request's current attempt and its attempt records (types only).
 * decide_req.c chooses the attempt (target, tier, probe); request.c takes its key, opens it
 * and reports it, and alone appends and writes the records. Router-private. */
#ifndef BSC_ROUTER_REQ_ATTEMPT_H
#define BSC_ROUTER_REQ_ATTEMPT_H

#include <stdbool.h>

#include "config/config.h"
#include "health/breaker.h"
#include "policy/attempt.h"
#include "policy/decide.h"

/* The attempt running now, or the one about to start. */
struct req_current {
    const struct cfg_target *target; /* borrowed from cfg */
    enum tier tier;
    int key_idx;                     /* -2: no key configured; -1: none usable */
    bool probe;                      /* admitted as a half-open probe */
    enum brk_state circuit;          /* the target's circuit after the last report */
    bool open;                       /* inflight counted and outcome not yet reported */
};

/* One record per attempt made, for the access log, the headers and the ledger. */
struct req_attempts {
    struct attempt *recs;            /* <inline_recs>, or malloc'd once more are needed */
    unsigned n, cap;                 /* records used, and room in <recs> */
    struct attempt inline_recs[ATTEMPT_INLINE];
};

#endif
