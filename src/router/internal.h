/* SPDX-License-Identifier: MIT */
/* internal.h -- the request object and the functions shared by the router's files:
 * request.c (the state machine, the only writer of r->m.state), admit.c (may it start),
 * decide.c (which target next, or stop), exchange.c (the upstream side of an attempt:
 * struct xchg, xchg.h), guard.c (idempotency and ledger: struct guard, guard.h) and
 * deliver.c (the client side: struct downstream, downstream.h).
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
#include "router/cache_req.h"
#include "policy/decide.h"
#include "router/downstream.h"
#include "policy/envelope.h"
#include "router/gateway.h"
#include "router/guard.h"
#include "router/limit.h"
#include "policy/params.h"
#include "router/reply.h"
#include "router/req_attempt.h"
#include "router/req_balance.h"
#include "router/req_cost.h"
#include "router/req_err.h"
#include "router/req_ident.h"
#include "router/resume.h"
#include "router/req_state.h"
#include "router/request.h"
#include "router/spend.h"
#include "fail/taxonomy.h"
#include "router/trim.h"
#include "router/xchg.h"
#include "stream/sse_parse.h"
#include "telemetry/trace.h"
#include "upstream/upstream.h"

/* Where the request is in its lifecycle. request.c writes it (req__goto, req__run, the
 * abort event); admit.c advances <admit_at> through req__admit_check_passed; everything
 * else only reads <state>. */
struct req_machine {
    enum req_state state;
    struct req_times times; /* time spent in each state, for the access log */
    unsigned admit_at;      /* the next admission check to run (admit.c) */
    bool client_gone;       /* on_client_abort: req__run ends the request */
    bool finished;          /* st_done ran */
};

/* The request as the client asked it: its dialect's reader (api/) computed the facts the
 * router decides on; the router reads them, and parses <json> only when it must. */
struct req_input {
    enum prov_op op;
    struct json_object *json; /* owned: the canonical request; NULL until req__json() */
    struct bsc_str body;      /* borrowed from sreq: the client's raw OpenAI body, or empty */
    uint64_t bytes_in;        /* the client's body size, whatever its dialect; kept for the
                                 access log after sreq (and <body>) are gone */
    struct bsc_str model_span;
    bool stream, include_usage, has_tools;
    uint32_t need_caps;       /* capabilities the request itself requires */
    uint64_t est_tokens;      /* estimated prompt + output tokens (decide.c) */
    uint64_t est_out_tokens;  /* the output part of it (the client's max tokens) */
    struct req_params params; /* the parameters the request sets (params.h) ... */
    bool params_read;         /* ... read on the first target that may not honour one */
    struct prov_native native; /* borrowed from sreq like <body>; body empty when none */
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

/* request.c: the machine. Helpers call back into it only for these three: an event ran
 * (req__run), a timer of the machine (req__arm_timer), and a request freed by its last
 * store callback (req__release). */
/* Gives back a request's memory: to the worker's pool, or to the allocator. */
void req__release(struct request *r);
void req__goto(struct request *r, enum req_state next);
#ifdef BSC_UNIT_TEST
/* Test seam: when set, told of each transition (request id, from, to) on the request's
 * loop. Unit builds only; production has no such hook. */
typedef void req__goto_hook_fn(const char *id, enum req_state from, enum req_state to);
extern req__goto_hook_fn *req__goto_hook;
#endif
void req__run(struct request *r);
void req__arm_timer(struct request *r, uint64_t delay_ms);

/* Reading the request (no writes). */
static inline uint64_t req__time_left(const struct request *r)
{
    return envelope_remaining_ms(&r->env, bsc_now_ms());
}

/* The request's time in the gateway itself, up to <now_us>: the elapsed time less its
 * attempts, backoffs and limit queueing (overhead.c). */
uint64_t req_overhead_us(const struct request *r, uint64_t now_us);

static inline struct attempt *req__cur_attempt(struct request *r)
{
    return r->att.n ? &r->att.recs[r->att.n - 1] : NULL;
}

static inline struct metrics *req__metrics(const struct request *r)
{
    return r->gw->metrics;
}

/* input.c: the canonical request as a parse tree, parsed from the client's bytes on first
 * use (the OpenAI fast path never needs it). NULL only when out of memory. */
struct json_object *req__json(struct request *r);
/* The parameters the request sets, read from the tree or the raw body on first use. */
const struct req_params *req__params(struct request *r);

/* req_error.c: the error the request will answer with (r->err). */
void req__set_error(struct request *r, int status, const char *type, const char *code,
                    const char *fmt, ...) BSC_PRINTF(5, 6);
void req__set_typed_failure(struct request *r, const char *reason, enum outlook outlook,
                            int64_t wait_ms, const char *fmt, ...) BSC_PRINTF(5, 6);
/* Sets the retry signals of r->err (reply_set_retry) for <outlook> and <wait_ms>, with the
 * last failure's kind and whether anything went upstream. */
void req__set_retry(struct request *r, enum outlook outlook, int64_t wait_ms);
void req__set_provider_error(struct request *r);
/* Adjusting the error built by one of the above (each argument static or borrowed for the
 * request's life): its status, and its type unless <type> is NULL; the parameter it names;
 * its code; its reason (the typed failure's name); the limit that refused it
 * (x-bascule-limited-by). */
void req__set_error_status(struct request *r, int status, const char *type);
void req__set_error_param(struct request *r, const char *param);
void req__set_error_code(struct request *r, const char *code);
void req__set_error_reason(struct request *r, const char *reason);
void req__set_error_limited_by(struct request *r, const char *limit);

/* decide_req.c: the request's side of decide.c -- builds its input, carries out its answer */
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

/* request.c: the members it owns, changed for the helpers that saw why */
/* The admission check at r->m.admit_at passed: the next one runs (admit.c). */
void req__admit_check_passed(struct request *r);
/* The answer went out (or was abandoned): the borrowed srv_req is no longer the
 * request's to use (deliver.c). */
void req__release_sreq(struct request *r);
/* The decision's target (NULL: none yet) and tier for the next attempt (decide_req.c). */
void req__aim(struct request *r, const struct cfg_target *target, enum tier tier);
/* The next attempt is a half-open probe of its target's circuit, or not (decide_req.c). */
void req__aim_probe(struct request *r, bool probe);
/* <usd> charged to the request (r->cost), <estimated> when from an estimate. */
void req__add_cost(struct request *r, double usd, bool estimated);

#endif
