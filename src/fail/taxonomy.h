/* SPDX-License-Identifier: MIT */
/* taxonomy.h -- the one classification of upstream failures (docs/design.md §4) and the one table
 * that says what each kind allows: replay, failover, fallback, breaker, key cool-down, and
 * what the client is told when the kind ends a request. Provider adapters fill a struct
 * fail_info; the router only ever reads fail_policy(kind) instead of branching on kinds.
 * Pure: no I/O, no clock, no allocation. Includes only core/ so that providers/ and health/
 * may include it. Design notes: docs/internals/taxonomy.md. */
#ifndef BSC_FAIL_TAXONOMY_H
#define BSC_FAIL_TAXONOMY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compat.h"
#include "core/str.h"

/* Every kind, in enum order, with its snake_case name. The enum and the name table are
 * generated from this list so they cannot drift apart; the policy rows in taxonomy.c are
 * indexed by the enum and a unit test checks that each one is filled in. */
#define FAIL_KINDS(X)                                                                      \
    X(NONE, none)                                   /* no failure */                       \
    X(CONNECT, connect)                             /* DNS, TCP, TLS, reset before reply */ \
    X(TIMEOUT, timeout)                             /* no headers or first event in time */ \
    X(RATE_LIMITED, rate_limited)                   /* 429, throttling codes */            \
    X(QUOTA_EXHAUSTED, quota_exhausted)             /* billing, spend limit, balance */    \
    X(OVERLOADED, overloaded)                       /* 503, 529, 498, capacity */          \
    X(SERVER_ERROR, server_error)                   /* other 5xx, 409 */                   \
    X(UPSTREAM_RESET, upstream_reset)               /* closed after it began answering */  \
    X(PROTOCOL_ERROR, protocol_error)               /* malformed HTTP or chunked framing */ \
    X(INVALID_REQUEST, invalid_request)             /* the client's request is wrong */    \
    X(AUTH, auth)                                   /* our upstream key was refused */     \
    X(PERMISSION, permission)                       /* our key may not do this / region */ \
    X(NOT_FOUND, not_found)                         /* the target's model is not there */  \
    X(CONTEXT_OVERFLOW, context_overflow)           /* prompt larger than the window */    \
    X(CONTENT_POLICY, content_policy)               /* the provider's policy refused it */ \
    X(CONTRACT_FAILURE, contract_failure)           /* bad schema, missing tool, ... */    \
    X(PARTIAL_OUTPUT, partial_output)               /* failed after the commit point */    \
    X(SIDE_EFFECT_UNCERTAIN, side_effect_uncertain) /* may have acted; cannot replay */   \
    X(DEADLINE_EXHAUSTED, deadline_exhausted)       /* the envelope's time is spent */     \
    X(CANCELLED, cancelled)                         /* the client went away */             \
    X(UNKNOWN, unknown)                             /* nothing above matched */

enum fail_kind {
#define X(NAME, name) FAIL_##NAME,
    FAIL_KINDS(X)
#undef X
    FAIL_KIND_COUNT
};

/* How a kind relates to the circuit breakers (health/). */
enum fail_breaker {
    FAIL_BRK_NONE = 0, /* says nothing about the target's health (neutral outcome) */
    FAIL_BRK_TARGET,   /* an infrastructure failure of the target */
    FAIL_BRK_KEY,      /* counts against the API key's breaker only, not the target's */
    FAIL_BRK_IF_INFRA, /* a failure of the target only when an upstream fault caused it
                          (reset, in-band server error), neutral when the client caused it */
    FAIL_BRK_COUNT
};

/* What one kind allows. The router consults this and nothing else; see taxonomy.md. */
struct fail_policy {
    bool replay_same_target;     /* another attempt on the same target may help */
    bool needs_delay;            /* ... but only after Retry-After or backoff */
    uint8_t max_replays;         /* with replay_same_target: a cap below the envelope's
                                    max_same_target_attempts (0 = only the envelope's) */
    bool next_key;               /* the same target with the provider's next key may help */
    bool equivalent_failover;    /* an equivalent target (same contract) may be tried */
    bool cross_model_fallback;   /* an approved fallback model may be tried (if allowed) */
    bool fallback_needs_larger_window; /* ... only one with a larger context window */
    enum fail_breaker breaker;
    bool cools_key;              /* the key used cools down (rate, quota, auth, permission) */
    bool flags_misconfigured;    /* the target is flagged misconfigured (alert metric) */
    bool client_fault;           /* the client's own request caused it: stop at once */
    bool forward_message;        /* the upstream message may be shown to the client */
    int client_status;           /* HTTP status when this kind ends the request */
    const char *client_type;     /* OpenAI error `type` for the body */
    const char *client_code;     /* OpenAI error `code` for the body */
    bool client_should_retry;    /* a client retry later can help (x-should-retry) */
};

/* Transport outcomes, before any HTTP status is known (upstream/ reports these). */
#define FAIL_TRANSPORTS(X)                                                                 \
    X(OK, ok)               /* the transfer produced a response */                         \
    X(CONNECT, connect)     /* TCP connect refused or unreachable */                       \
    X(DNS, dns)             /* name resolution failed */                                   \
    X(TIMEOUT, timeout)     /* a gateway timer fired (connect, first byte, idle) */         \
    X(RESET, reset)         /* the connection was reset or closed before a full reply */   \
    X(TLS, tls)             /* TLS handshake or certificate failure */                     \
    X(PROTOCOL, protocol)   /* malformed HTTP from upstream */                             \
    X(CANCELLED, cancelled) /* we cancelled the transfer (client gone) */

enum fail_transport {
#define X(NAME, name) FT_##NAME,
    FAIL_TRANSPORTS(X)
#undef X
    FT_COUNT
};

#define FAIL_TEXT_CODE 64
#define FAIL_TEXT_TYPE 64
#define FAIL_TEXT_MESSAGE 256

/* One classified failure. Text fields are NUL-terminated copies (never pointers into a
 * response), truncated at a UTF-8 character boundary, with control characters and invalid
 * UTF-8 replaced; they come from the provider's error object when there was one. */
struct fail_info {
    enum fail_kind kind;
    int status;             /* upstream HTTP status; 0 = none (transport failure) */
    int64_t retry_after_ms; /* the provider's hint, capped at 24 h; -1 = none */
    enum fail_transport transport; /* FT_OK when the failure came with a response */
    bool request_sent;      /* the request was fully written upstream before it failed:
                               whether it may have acted is decided by the router */
    bool request_caused;    /* the answer says more about the request than about the
                               target (an answer in the other shape, an in-band refusal of
                               the content): never held against the target's breaker */
    char code[FAIL_TEXT_CODE];
    char type[FAIL_TEXT_TYPE];
    char message[FAIL_TEXT_MESSAGE];
};

/* Returns the snake_case name of <kind> ("rate_limited"); "invalid" when out of range. */
const char *fail_kind_name(enum fail_kind kind);

/* Returns the kind named <name> (exact, as fail_kind_name() spells it), or FAIL_KIND_COUNT
 * when there is none. For sim scripts, admin input and tests. */
enum fail_kind fail_kind_from_name(struct bsc_str name);

/* Returns the snake_case name of <t> ("reset"); "invalid" when out of range. */
const char *fail_transport_name(enum fail_transport t);

/* Returns the policy row of <kind>, a pointer to static immutable data; an out-of-range
 * kind gets the row of FAIL_UNKNOWN. Never NULL. */
const struct fail_policy *fail_policy(enum fail_kind kind);

/* Resets <info> to "no failure": FAIL_NONE, status 0, no retry hint, empty texts. */
void fail_info_init(struct fail_info *info);

/* The provider-independent status map (docs/providers.md §6.5 step 5): 400/413/422 invalid,
 * 401 auth, 402 quota, 403 permission, 404 not_found, 408 timeout, 409 server_error,
 * 429 rate_limited, 498/503/529 overloaded, 504 timeout, other 5xx server_error, other 4xx
 * invalid_request, 2xx FAIL_NONE, anything else FAIL_UNKNOWN. Adapters apply their
 * body-based overrides first. */
enum fail_kind fail_kind_from_status(int status);

/* Fills <out> for a transport outcome: connect/dns/tls/reset -> connect, timeout ->
 * timeout, protocol -> protocol_error, cancelled -> cancelled, ok -> FAIL_NONE. A reset or
 * timeout with <request_sent> is what the router may later turn into side_effect_uncertain
 * for a side-effecting request; this function only records <request_sent>. */
void fail_from_transport(enum fail_transport t, bool request_sent, struct fail_info *out);

/* Refines a transport failure filled by fail_from_transport() once the upstream had sent
 * its response head with <status> (> 0): the connection was up and answering, so a reset
 * is upstream_reset, not connect; the status is recorded. A <status> of 0 changes nothing. */
void fail_after_head(struct fail_info *f, int status);

/* Reclassifies <f> as the transport outcome <t> of a transfer whose upstream had answered
 * with <status> (0: no response head), keeping f->message (the transport's own words): the
 * request counts as sent once a head came or the connection was reset (a reset may follow a
 * request fully written: the careful reading), then fail_from_transport() and
 * fail_after_head(). */
void fail_from_transfer(struct fail_info *f, enum fail_transport t, int status);

/* Settles the kind of a stream failure that happened before anything reached the client
 * (the commit point): partial output (an adapter counts the frames it emitted, not what the
 * client got) and a failure without a kind are a server error, retryable like one; every
 * other kind stays. */
void fail_before_commit(struct fail_info *f);

/* Fills <f> for a well-formed 2xx answer with <status> in the other shape than the request
 * asked for (a stream for a single answer, or the reverse): the upstream read the request
 * differently from the gateway, so FAIL_UNKNOWN (no replay on the same target) and
 * request_caused (the client's bytes can cause it at will: never held against the target's
 * breaker). The message is left empty for the caller to say what came. */
void fail_other_shape(struct fail_info *f, int status);

/* True when <f> counts as a failure of the target for its circuit breaker: the kind's row
 * says so (FAIL_BRK_TARGET; FAIL_BRK_IF_INFRA when an upstream fault caused it), and the
 * answer was not provoked by the request itself (request_caused). Everything a client can
 * trigger at will with what it sends -- invalid_request, context_overflow, content_policy,
 * a refusal of the gateway's credential, an answer in the other shape -- never counts, so
 * one client cannot open a circuit for everybody. See breaker.md "What counts". */
bool fail_counts_against_target(const struct fail_info *f);

/* Copies <src> into <dst> (capacity <cap> >= 1, NUL included) as safe text: valid UTF-8
 * only (invalid bytes become '?'), control characters become ' ', cut at a character
 * boundary when it does not fit. Returns the number of bytes written before the NUL. */
size_t fail_copy_text(char *dst, size_t cap, struct bsc_str src);

#endif
