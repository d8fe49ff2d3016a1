/* SPDX-License-Identifier: MIT */
/* reply.h -- the error answers the router writes: a provider's error normalized to the
 * OpenAI shape, and the typed failure of docs/design.md §9 when the gateway stops on its own
 * (nothing eligible, budget spent, deadline). Both carry x-should-retry so that SDK
 * clients do not multiply upstream traffic behind the gateway's back. */
#ifndef BSC_ROUTER_REPLY_H
#define BSC_ROUTER_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "dialect/error.h"
#include "fail/taxonomy.h"
#include "policy/outlook.h"
#include "server/server.h"

/* The failure, as far as retrying it is concerned. */
struct reply_cause {
    enum outlook outlook;
    enum fail_kind kind;  /* with OUTLOOK_KIND: the last upstream failure */
    int64_t wait_ms;      /* when time may help: the soonest it may (a key's cooldown, a
                             circuit's open time, the provider's hint); < 0 unknown */
    bool attempted;       /* the gateway already sent the request upstream */
};

struct reply_error {
    int status;
    const char *type;    /* OpenAI error type */
    const char *code;    /* may be NULL */
    const char *message;
    const char *param;   /* may be NULL */
    const char *reason;  /* typed failures only: no_eligible_fallback, deadline_exhausted,
                            retry_budget_exhausted ...; the body then carries the
                            "retryable" and "retry_after_ms" below */
    /* The three retry signals, always set together by reply_set_retry(): */
    bool retryable;         /* the application may send it again later (body) */
    int64_t retry_after_ms; /* when: Retry-After, retry-after-ms (body); < 0: none */
    bool should_retry;      /* x-should-retry: the SDK may retry it by itself */
};

/* Derives the three retry signals of <e> from <c>, the one place they are decided
 * (docs/configuration.md, "Errors"): retryable when time may help (OUTLOOK_TIME, or
 * a kind whose row says a later retry can help); then retry_after_ms is the wait, else
 * OUTLOOK_DEFAULT_RETRY_MS; should_retry only when retryable and nothing went upstream yet
 * (an SDK retry on top of the gateway's own would multiply upstream traffic). Not
 * retryable: no wait and should_retry false. */
void reply_set_retry(struct reply_error *e, const struct reply_cause *c);

/* <e> for request <request_id> as the dialect writers take it (dialect/error.h): the wait
 * is the one announced (none unless retryable). Borrows <e>'s strings. */
struct dialect_error reply_error_view(const struct reply_error *e, const char *request_id);

/* Appends the OpenAI JSON body of <e> for request <request_id> to <out>. */
enum bsc_err reply_error_body(const struct reply_error *e, const char *request_id,
                              struct bsc_buf *out);

/* Formats an error body in some client dialect. */
typedef enum bsc_err reply_body_fn(const struct reply_error *e, const char *request_id,
                                   struct bsc_buf *out);

/* Sends <e> on <sreq> with <extra> headers (x-bascule-*), plus x-should-retry and, when
 * retryable with retry_after_ms >= 0, Retry-After (whole seconds, rounded up) and
 * retry-after-ms; x-should-retry is true only when retryable too. The body is OpenAI's
 * shape, or <body_fn>'s when not NULL. Ends the response. */
void reply_error_send(struct srv_req *sreq, const struct reply_error *e,
                      const struct srv_header *extra, size_t n_extra, reply_body_fn *body_fn);

#endif
