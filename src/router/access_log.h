/* SPDX-License-Identifier: MIT */
/* access_log.h -- one JSON line per request on stdout: request id, route, target, status,
 * bytes, duration, time to first byte, attempts and a termination code. Never prompts,
 * outputs or keys. */
#ifndef BSC_ROUTER_ACCESS_LOG_H
#define BSC_ROUTER_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/attempt.h"

struct req_times; /* router/req_state.h */

struct access_entry {
    const char *request_id;
    const char *method, *path; /* may be NULL: defaults to POST /v1/chat/completions */
    const char *route, *target; /* may be NULL */
    const char *client; /* may be NULL: the authenticated client's id (clients:) */
    const char *selected_by; /* may be NULL; "<select route>#<rule>" that chose <route> */
    int status;
    bool stream;
    uint64_t bytes_in, bytes_out;
    uint64_t duration_us, ttfb_us;
    const struct attempt *attempts;
    size_t n_attempts;
    const char *termination; /* "ok", "client_abort", "upstream_interrupted", ... */
    int64_t input_tokens, output_tokens; /* -1 when unknown */
    /* Their parts (-1 or 0: not written): prompt tokens read from / written to the
     * provider's cache, output tokens spent reasoning. */
    int64_t cached_tokens, cache_write_tokens, reasoning_tokens;
    double cost_usd;
    bool cost_estimated; /* some of <cost_usd> is an estimate, no usage came (spend.md) */
    const struct req_times *states; /* may be NULL; the time spent in each state */
    const char *detail; /* may be NULL; what a request the router did not take did or why it
                         * was refused ("disable target t1", "origin not allowed") */
    const char *limited_by; /* may be NULL: the local limit that said no (router/limit.c) */
    const char *cache;      /* may be NULL: the response cache's hit, miss or bypass */
    int64_t queued_ms;      /* time queued for a target's room; < 0 (or 0 unset): not queued */
    /* on_stream_failure: continue -- where the stream went on last (NULL: never), how
     * ("prefill" | "replay") and the client bytes already sent at that seam */
    const char *continued_target, *continued_how;
    uint64_t continued_bytes;
};

/* Formats <e> as one JSON line and writes it to stdout. A request the router does not take
 * (admin, ledger, models, health, refusals) gets a line too, written by api/ with no route,
 * target or attempts. */
void access_log_write(const struct access_entry *e);


/* One line per attempt (docs/design.md §9): what was tried, how it ended, what the router decided
 * next and why. <next> is "deliver", "retry", "equivalent_failover", "cross_model_fallback"
 * or "stop"; <why> a short reason; <circuit> the breaker state after the outcome. */
struct access_attempt_line {
    const char *request_id, *route;
    unsigned number; /* 1-based */
    const struct attempt *a;
    const char *circuit;
    uint64_t time_left_ms;
    const char *next, *why;
    uint32_t next_delay_ms;
    const char *delay_why; /* NULL when no wait */
    const char *limited_by; /* may be NULL: the local limit the request waited for */
    int64_t queued_ms;      /* < 0: never queued for room before this attempt */
};

void access_log_write_attempt(const struct access_attempt_line *l);

/* Frees this thread's line buffer (a worker calls it as it exits). */
void access_log_thread_cleanup(void);

#endif
