/* SPDX-License-Identifier: MIT */
/* internal.h -- the request object and the functions shared by the router's files:
 * request.c (the state machine), decide.c (which target next, or stop), exchange.c (the
 * upstream side of an attempt, through the provider adapter) and deliver.c (the client
 * side: commit point, stream relay, answers and errors in the client's dialect).
 * Never included from outside src/router/. */
#ifndef BSC_ROUTER_INTERNAL_H
#define BSC_ROUTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "health/breaker.h"
#include "providers/provider.h"
#include "router/attempt.h"
#include "router/downstream.h"
#include "router/envelope.h"
#include "router/gateway.h"
#include "router/params.h"
#include "router/reply.h"
#include "router/request.h"
#include "router/taxonomy.h"
#include "router/trim.h"
#include "stream/sse_parse.h"
#include "upstream/upstream.h"

#define REQ_STATES(X)                                                                     \
    X(PICK, pick, "choose the next target, or decide to stop, after each failure")        \
    X(BACKOFF, backoff, "wait (backoff or Retry-After) before the next attempt")          \
    X(ATTEMPT, attempt, "upstream transfer running until its answer or first event")      \
    X(RELAY, relay, "committed: streaming to the client; no way back to PICK")            \
    X(REPLY, reply, "a complete upstream answer is written to the client")                \
    X(REPLY_ERROR, reply_error, "write the normalized error or the typed failure")         \
    X(DONE, done, "log, account, release")

enum req_state {
#define X(NAME, name, doc) REQ_ST_##NAME,
    REQ_STATES(X)
#undef X
        REQ_ST_COUNT
};

enum tier { TIER_PRIMARY = 0, TIER_EQUIVALENT, TIER_FALLBACK, TIER_COUNT };

/* How the upstream body is consumed during an attempt. */
enum body_mode { BODY_NONE = 0, BODY_BUFFER, BODY_SSE };

#define REQ_MAX_RESPONSE_BYTES (64u << 20)
#define REQ_MAX_SSE_EVENT      (4u << 20)

struct request {
    struct worker *w;         /* borrowed */
    struct gateway *gw;       /* borrowed */
    struct srv_req *sreq;     /* borrowed; NULL once the client went away or was answered */
    struct cfg *cfg;          /* a ref */
    const struct cfg_route *route; /* borrowed from cfg: the route that serves */
    const struct cfg_route *select_route; /* borrowed: the select route the client named, or
                                             NULL; its rule <select_rule> chose <route> */
    int select_rule;                      /* 0-based; -1 when no rule held */
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
    uint32_t missing_caps;    /* capabilities candidates lacked, for the typed failure */
    struct req_params params; /* the parameters the request sets (params.h) ... */
    bool params_read;         /* ... read on the first target that may not honour one */
    uint32_t unhonoured;      /* parameters candidates could not honour, for the 400 */
    bool buffering;           /* on_stream_failure: buffer: release a stream only when whole */
    struct contract *contract; /* owned: compiled schemas (contract.c), or NULL */
    bool too_small;           /* a candidate's context window was too small */
    const struct down_ops *down; /* the client's dialect; NULL = OpenAI */
    struct prov_native native;   /* borrowed from sreq like <body>; body empty when none */
    void *down_st;            /* owned: down->stream_size bytes */
    void *down_arg;           /* owned: chat_in.down_arg, freed by down->arg_free */
    char id[130];             /* copy of the request id, for logs after sreq is gone */
    char path[64];            /* copy of the request path, for the access log */
    struct envelope env;

    enum req_state state;
    uint64_t start_us;
    int64_t created;  /* wall-clock seconds at the start, for "created" fields */
    uv_timer_t timer; /* attempt timeout, stream idle bound, or backoff */

    /* the current attempt */
    const struct cfg_target *target; /* borrowed from cfg */
    enum tier tier;
    int key_idx;                     /* -2: no key configured; -1: none usable */
    bool probe;                      /* admitted as a half-open probe */
    enum brk_state circuit;          /* the target's circuit after the last report */
    bool attempt_open;               /* inflight counted and outcome not yet reported */
    const struct prov_ops *ops;      /* the target's adapter */
    void *prov_st;                   /* owned: ops->stream_size bytes, for streams */
    bool prov_st_live;               /* stream_init ran; cleanup due */
    struct up_transfer *xfer;        /* NULL when none is running */
    struct prov_http http;           /* owned: what was sent upstream */
    enum body_mode mode;
    struct bsc_buf resp;             /* owned: buffered upstream body (BODY_BUFFER) */
    struct bsc_buf answer;           /* owned: the OpenAI-shaped answer (non-stream) */
    struct sse_parser sse;           /* BODY_SSE */
    struct bsc_buf conv;             /* owned: OpenAI frames from the adapter, per read */
    struct bsc_buf out;              /* owned: client bytes to write downstream */
    int up_status;
    char up_ctype[128];
    char up_retry_after[64], up_retry_after_ms[64]; /* saved from the head */
    bool saw_done;                   /* the upstream stream ended properly */
    bool timed_out;
    bool stream_failed;              /* an in-band error or a bad stream */
    const char *limit_cut;           /* static: the stream passed max_stream_ms or _bytes */
    bool limit_timer;                /* the relay timer is armed for max_stream_ms */
    enum up_result up_res;
    struct fail_info fail;           /* the last failure */
    struct fail_info stream_fail;    /* an in-band error seen in the stream */
    struct prov_usage usage;         /* of the delivered answer */
    double cost_usd;

    /* the next step, chosen by decide_next */
    enum attempt_workflow next_wf;
    uint32_t next_delay_ms;
    const char *next_delay_why;
    const char *recovery_reason; /* static: kind of the first failure that made us recover */
    bool all_rate_limited;       /* every failure so far was a rate limit or quota */

    /* the answer */
    bool committed; /* response head sent */
    int status;
    uint64_t bytes_out;
    uint64_t ttfb_us;
    const char *termination; /* access-log termination code */
    struct attempt attempts[ATTEMPT_MAX];
    unsigned n_attempts;
    struct reply_error err;
    char err_msg[320];
    char err_code[64];

    /* guards (guard.c) */
    unsigned store_ops;          /* store calls whose callback is still due */
    bool zombie;                 /* done while a store call was running: freed by it */
    bool finished;               /* st_done ran */
    bool waiting_store;          /* PICK waits for a store callback */
    char idem_key[256], idem_scope[40];
    uint64_t idem_claim;
    bool idem_active, idem_overflow;
    struct bsc_buf idem_copy;    /* owned: the bytes sent, for the idempotency record */
    char op_id[129];             /* X-Bascule-Operation-Id, or "" */
    unsigned ledger_checked;     /* n_attempts when the ledger was last read */
    const char *ledger_blocked;  /* static: why a replay is refused, or NULL */
    char uncertain_id[160];      /* the WORKFLOW_3 ledger entry being written */

    struct trim_state trim;      /* context.overflow: trim (trim.c) */
    struct shadow *shadows;      /* borrowed: its mirrored copies still running (shadow.c) */

    /* task feedback and balance: score (feedback.c) */
    char client_scope[40];       /* req_client_scope() of the caller, taken at the start */
    char ranking[160];           /* balance: score's order for the next attempt, or "" */
};

/* request.c */
/* Gives back a request's memory: to the worker's pool, or to the allocator. */
void req__release(struct request *r);
void req__goto(struct request *r, enum req_state next);
void req__run(struct request *r);
void req__arm_timer(struct request *r, uint64_t delay_ms);
uint64_t req__time_left(const struct request *r);
struct attempt *req__cur_attempt(struct request *r);
struct metrics *req__metrics(const struct request *r);
/* The canonical request as a parse tree, parsed from the client's bytes on first use
 * (the OpenAI fast path never needs it). NULL only when out of memory. */
struct json_object *req__json(struct request *r);
void req__set_error(struct request *r, int status, const char *type, const char *code,
                    const char *fmt, ...) BSC_PRINTF(5, 6);
void req__set_typed_failure(struct request *r, const char *reason, enum reply_outlook outlook,
                            int64_t wait_ms, const char *fmt, ...) BSC_PRINTF(5, 6);
/* Sets the retry signals of r->err (reply_set_retry) for <outlook> and <wait_ms>, with the
 * last failure's kind and whether anything went upstream. */
void req__set_retry(struct request *r, enum reply_outlook outlook, int64_t wait_ms);
void req__set_provider_error(struct request *r);

/* decide.c */
enum decision { DECIDE_GO, DECIDE_STOP };
/* The first target: the best primary, else the next allowed tier. NULL when none. */
const struct cfg_target *decide_first(struct request *r);
/* After the failure in r->fail: the next target/workflow/delay, or the error to reply. */
enum decision decide_next(struct request *r, const char **why);
bool decide_later_tier_exists(const struct request *r);
/* No target was eligible for the first attempt: sets the answer by what could change --
 * a 400 when no target can serve the request as it is (a parameter, a capability, its
 * size), a 503 that is not retryable when the only ones that could are switched off, else
 * a retryable 503 (429 when only rate-limited keys are in the way) with the soonest time
 * one of them may be back. */
void decide_none_eligible(struct request *r);
/* Whether starting the next attempt keeps the request within the envelope's added-latency
 * and cost budgets; when not, sets the typed failure and returns false. */
bool decide_within_budgets(struct request *r, const struct cfg_target *next);
/* The names of the capability bits in <caps>, comma-separated. */
void decide_caps_names(uint32_t caps, char *buf, size_t len);
/* Counts the workflow in metrics; returns its name. */
const char *decide_count_workflow(struct request *r, enum attempt_workflow wf);

/* exchange.c */
/* Builds the request through the adapter and starts the transfer. BSC_EINVAL: the adapter
 * cannot express the request for this target (r->fail is a contract failure). */
enum bsc_err xchg_start(struct request *r);
/* Clears the per-attempt upstream state. */
void xchg_reset(struct request *r);
/* After an uncommitted attempt ended: r->fail (FAIL_NONE = success, r->answer holds the
 * OpenAI-shaped answer and r->usage its usage). */
void xchg_classify(struct request *r);
/* Frees everything the exchange owns. */
void xchg_cleanup(struct request *r);

/* deliver.c */
/* Sends the SSE head (the commit point) and moves to RELAY. */
void deliver_commit(struct request *r);
/* Converts the adapter's OpenAI frames in r->conv into client bytes in r->out. */
enum bsc_err deliver_convert(struct request *r);
/* Writes r->out; true when the upstream should pause (back-pressure). */
bool deliver_flush(struct request *r);
/* Ends the response with r->out as <termination>, the idempotency record settled first. */
void deliver_end(struct request *r, const char *termination);
/* Ends a broken stream: what is queued (the error event) goes out, then the connection
 * closes with no terminal chunk, so no client takes the response for a complete one and
 * reuses the connection while it closes. */
void deliver_break(struct request *r, const char *termination);
/* A committed stream past limits.max_stream_bytes (with what r->out holds) or
 * limits.max_stream_ms (<timer>: the timer armed by deliver_stream_arm fired): true, with
 * r->limit_cut, r->stream_failed and the message set, and r->out dropped. */
bool deliver_stream_over(struct request *r, bool timer);
/* Arms the relay timer for <gap_ms> (the longest silence allowed), or sooner when the
 * stream's max_stream_ms ends first. */
void deliver_stream_arm(struct request *r, uint64_t gap_ms);
/* Appends the error event that ends a committed stream, in the client's dialect. */
void deliver_stream_error(struct request *r, const char *message);
/* Releases a buffered stream: head, every byte held in r->out, end. */
void deliver_stream_complete(struct request *r);
/* Writes the complete answer in r->answer (non-stream). */
void deliver_answer(struct request *r);
/* Writes r->err. */
void deliver_error(struct request *r);
/* The x-bascule-* headers; returns how many were put in <h> (room for 5). */
size_t deliver_route_headers(struct request *r, struct srv_header *h, char *buf, size_t len);
/* Drops the client dialect's stream state: a new attempt before the commit point starts
 * its translation afresh (a buffered stream may have converted part of a failed one). */
void deliver_down_reset(struct request *r);
void deliver_cleanup(struct request *r);

#endif
