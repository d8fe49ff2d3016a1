/* SPDX-License-Identifier: MIT */
/* internal.h -- struct request, the object every file of the router's machine and features
 * works on, and the per-concern structs it embeds: types only. It includes type headers
 * alone (each feature's struct in its own *_types.h), never a header that declares functions
 * of a file including it: each .c includes the function headers of the files it calls
 * (machine.h for request.c's, req_error.h, decide_req.h, input.h, guard.h, ...), so that the
 * router's include graph has no circle through this hub (scripts/check-layering checks it).
 * Never included from outside src/router/. */
#ifndef BSC_ROUTER_INTERNAL_H
#define BSC_ROUTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/clock.h"
#include "health/breaker.h"
#include "providers/provider.h"
#include "policy/attempt.h"
#include "router/cache_req_types.h"
#include "policy/decide.h"
#include "router/downstream.h"
#include "policy/envelope.h"
#include "router/gateway.h"
#include "router/guard_types.h"
#include "router/limit_types.h"
#include "policy/params.h"
#include "router/reply.h"
#include "router/req_attempt.h"
#include "router/req_balance.h"
#include "router/req_cost.h"
#include "router/req_err.h"
#include "router/req_ident.h"
#include "router/req_input.h"
#include "router/resume_types.h"
#include "router/req_state.h"
#include "router/spend_types.h"
#include "fail/taxonomy.h"
#include "router/trim_types.h"
#include "router/xchg.h"
#include "stream/sse_parse.h"
#include "telemetry/trace.h"
#include "upstream/upstream.h"

struct req_wake;

/* Where the request is in its lifecycle. request.c writes it (req__goto, req__run, the
 * abort event); <admit_at> is where admit_run (admit.c) stopped; everything
 * else only reads <state>. */
struct req_machine {
    enum req_state state;
    struct req_times times; /* time spent in each state, for the access log */
    unsigned admit_at;      /* the next admission check to run (admit.c) */
    bool client_gone;       /* on_client_abort: req__run ends the request */
    bool finished;          /* st_done ran */
    bool running;           /* inside a run of the machine (req__run): step_us serves */
    uint64_t step_us;       /* the run's clock, read on first use (0: not yet; req__now_us) */
    const struct req_wake *wake; /* request.c's entry points, for the others (req_wake.h) */
};

/* What the candidates and failures so far said: the final answer is built from it when no
 * target is left (a 400 naming a capability or parameter, a 429 when only rate limits were
 * in the way, the recovery reason header). */
struct req_notes {
    uint32_t missing_caps;       /* capabilities candidates lacked, for the typed failure */
    uint32_t unhonoured;         /* parameters candidates could not honour, for the 400 */
    bool too_small;              /* a candidate's context window was too small */
    bool all_rate_limited;       /* every failure so far was a rate limit or quota */
    const char *recovery_reason; /* static: kind of the first failure that made us recover */
};

/* The next step, as decide_next chose it (decide_req.c writes it, request.c carries it out). */
struct req_next {
    enum attempt_workflow wf;
    uint32_t delay_ms;
    const char *delay_why; /* static, NULL when no delay */
};

/* One request. Each member has its writer file(s): the table of
 * docs/internals/request-lifecycle.md, checked by scripts/check-writers (make check-layering);
 * a new member needs a row there. */
struct request {
    struct worker *w;         /* borrowed */
    struct gateway *gw;       /* borrowed */
    struct srv_req *sreq;     /* borrowed; NULL once the client went away or was answered */
    struct cfg *cfg;          /* a ref */
    const struct cfg_route *route; /* borrowed from cfg: the route that serves */
    struct req_ident ident;   /* id, path, start, caller, the select rule (req_ident.h) */
    struct req_input input;   /* the request as the client asked it (api/ filled most) */
    struct reqcache c;        /* the response cache's side (cache_req.c) */
    struct req_notes notes;   /* what candidates and failures said, for the final answer */
    bool buffering;           /* on_stream_failure: buffer: release a stream only when whole */
    struct contract *contract; /* owned: compiled schemas (contract.c), or NULL */
    struct tel_trace trace;   /* ids of the request's trace, sampled or not (trace.c) */
    struct envelope env;

    struct req_machine m;
    uv_timer_t timer; /* attempt timeout, stream idle bound, or backoff */

    struct req_current cur;          /* the current attempt (req_attempt.h) */
    struct xchg x;                   /* its upstream side (exchange.c) */
    struct resume resume;            /* on_stream_failure: continue (resume.c) */
    struct req_cost cost;            /* what its attempts were charged (req_cost.h) */

    struct req_next next;        /* the next step, chosen by decide_next */

    /* the answer */
    struct downstream d;             /* the client side (deliver.c) */
    struct req_attempts att;         /* the attempt records (req_attempt.h) */
    struct req_err err;              /* the error it will answer with (req_err.h) */

    struct guard g;              /* idempotency, ledger, store calls (guard.c) */
    struct spend_req spend;      /* its budget check and in-flight count (spend.c) */
    struct req_limits lim;       /* local limits: slots held, the wait for room (limit.c) */
    struct trim_state trim;      /* context.overflow: trim (trim.c) */
    struct shadow *shadows;      /* borrowed: its mirrored copies still running (shadow.c) */
    struct req_balance balance;  /* task feedback and balance: score (feedback.c) */
};

#ifdef BSC_UNIT_TEST
/* Test seam: when set, told of each transition (request id, from, to) on the request's
 * loop. Unit builds only; production has no such hook. */
typedef void req__goto_hook_fn(const char *id, enum req_state from, enum req_state to);
extern req__goto_hook_fn *req__goto_hook;
#endif

/* Reading the request (no writes). */
static inline uint64_t req__time_left(const struct request *r)
{
    return envelope_remaining_ms(&r->env, bsc_now_ms());
}

/* The request's microsecond clock. Inside one run of its machine (req__run) the clock is
 * read once, on first use, and that reading serves every state move and attempt mark of
 * the run: a run waits for nothing (its I/O does not block; whatever must wait returns to
 * the loop, and the event that ends the wait starts a new run with a new reading). Outside
 * a run, the clock itself. Never a per-loop-pass time: a pass runs many requests. */
static inline uint64_t req__now_us(struct request *r)
{
    if (!r->m.running)
        return bsc_now_us();
    if (!r->m.step_us)
        r->m.step_us = bsc_now_us();
    return r->m.step_us;
}

/* A fresh reading, for a figure that must count the run's work so far (the overhead
 * header, the time to first byte); the run's later moves take it, so they never go back. */
static inline uint64_t req__now_us_fresh(struct request *r)
{
    uint64_t now = bsc_now_us();

    if (r->m.running)
        r->m.step_us = now;
    return now;
}

static inline struct attempt *req__cur_attempt(struct request *r)
{
    return r->att.n ? &r->att.recs[r->att.n - 1] : NULL;
}

static inline struct metrics *req__metrics(const struct request *r)
{
    return r->gw->metrics;
}

#endif
