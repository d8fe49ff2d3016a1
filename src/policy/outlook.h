/* SPDX-License-Identifier: MIT */
/* outlook.h -- what could make a failed request succeed if it were sent again, unchanged:
 * the part of a typed failure (docs/design.md §9) that the pure decision (decide.h) states
 * and the router's error answers (router/reply.h) turn into the three retry signals. Types
 * only. */
#ifndef BSC_POLICY_OUTLOOK_H
#define BSC_POLICY_OUTLOOK_H

/* When no wait is known, a retryable failure says one second. */
#define OUTLOOK_DEFAULT_RETRY_MS 1000

/* What could make the same request succeed if it were sent again, unchanged. */
enum outlook {
    OUTLOOK_KIND = 0, /* what the kind of the last upstream failure says (the
                               client_should_retry column of taxonomy.c) */
    OUTLOOK_NEVER,    /* only a change to the request or to the config: an invalid or
                               too large request, a parameter or capability no target has,
                               disabled or misconfigured targets, a contract failure */
    OUTLOOK_TIME,     /* time alone: a key cooling down, an open circuit, a rate
                               limit, a transient upstream failure, a busy store */
};

#endif
