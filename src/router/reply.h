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
#include "server/server.h"

struct reply_error {
    int status;
    const char *type;    /* OpenAI error type */
    const char *code;    /* may be NULL */
    const char *message;
    const char *param;   /* may be NULL */
    /* typed failure only (reason != NULL): */
    const char *reason;  /* no_eligible_fallback, deadline_exhausted, retry_budget_exhausted ... */
    bool retryable;
    int64_t retry_after_ms; /* < 0: none */
    bool should_retry;      /* x-should-retry: true (with Retry-After) vs false */
};

/* Appends the JSON body of <e> for request <request_id> to <out>. */
enum bsc_err reply_error_body(const struct reply_error *e, const char *request_id,
                              struct bsc_buf *out);

/* Formats an error body in some client dialect. */
typedef enum bsc_err reply_body_fn(const struct reply_error *e, const char *request_id,
                                   struct bsc_buf *out);

/* Sends <e> on <sreq> with <extra> headers (x-bascule-*), plus x-should-retry and, when
 * retry_after_ms >= 0, Retry-After (whole seconds, rounded up) and retry-after-ms. The
 * body is OpenAI's shape, or <body_fn>'s when not NULL. Ends the response. */
void reply_error_send(struct srv_req *sreq, const struct reply_error *e,
                      const struct srv_header *extra, size_t n_extra, reply_body_fn *body_fn);

#endif
