/* SPDX-License-Identifier: MIT */
/* idempotency.h -- Idempotency-Key records, pure: the request fingerprint (SHA-256 of the
 * canonical JSON body and the caller's context), the record's states (in_flight ->
 * complete) and the decision a new request gets from an existing record (docs/design.md §6).
 * The store (store/store.h) keeps the records and applies the decision atomically; the
 * router maps it to HTTP. No I/O, no clock: <now_ms> is an argument.
 * See docs/internals/store.md. */
#ifndef BSC_LEDGER_IDEMPOTENCY_H
#define BSC_LEDGER_IDEMPOTENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/sha256.h"
#include "core/str.h"

#define IDEM_FP_LEN BSC_SHA256_LEN
#define IDEM_KEY_MAX 255   /* bytes of an Idempotency-Key (Stripe's limit) */
#define IDEM_SCOPE_MAX 255 /* bytes of a scope (a virtual key id, a tenant) */
#define IDEM_DEFAULT_TTL_MS (24ull * 3600 * 1000)
#define IDEM_DEFAULT_LEASE_MS (10ull * 60 * 1000) /* an in_flight record older is orphaned */
#define IDEM_JSON_DEPTH 64 /* deeper bodies are fingerprinted as raw bytes */

enum idem_state {
    IDEM_ST_IN_FLIGHT = 0, /* the first request with this key is running */
    IDEM_ST_COMPLETE,      /* its answer is stored and replayed to repeats */
    IDEM_ST_COUNT
};

enum idem_decision {
    IDEM_MISS = 0,  /* no live record: the caller runs the request (a record now exists) */
    IDEM_REPLAY,    /* same body, complete: answer with the stored answer */
    IDEM_IN_FLIGHT, /* same body, still running: HTTP 409 */
    IDEM_MISMATCH,  /* the key was used with a different body: HTTP 422 */
    IDEM_DECISION_COUNT
};

/* A request fingerprint. A struct so it copies by assignment. */
struct idem_fp {
    uint8_t b[IDEM_FP_LEN];
};

/* What the decision needs to know of a stored record. */
struct idem_record {
    struct idem_fp fp;
    enum idem_state state;
    uint64_t expires_ms; /* wall clock; the record is gone at and after this instant */
};

/* A final answer, as stored and replayed. Slices are borrowed (see each user). */
struct idem_answer {
    int status;                /* HTTP status */
    bool stream;               /* <body> is the full SSE byte sequence of a stream */
    struct bsc_str headers;    /* a JSON object of the few headers to replay; opaque here */
    struct bsc_str body;       /* the body bytes */
};

/* True when <key> is 1..IDEM_KEY_MAX bytes of printable ASCII (0x20..0x7e). */
bool idem_key_valid(struct bsc_str key);

/* Writes the canonical form of JSON text <body> to <out>: no insignificant whitespace,
 * object members sorted by their decoded key bytes, strings decoded and re-escaped one
 * fixed way, numbers and literals kept as written. Returns BSC_OK; BSC_EPARSE when <body>
 * is not one JSON value, nests deeper than IDEM_JSON_DEPTH, has a duplicate key in an
 * object, or a string that is not UTF-8 (*<out> holds garbage then); BSC_ENOMEM or
 * BSC_ELIMIT from <out>. Never calls back. */
enum bsc_err idem_canonical_json(struct bsc_str body, struct bsc_buf *out);

/* Fingerprints a request: SHA-256 over a version tag, <context> (length-prefixed: the
 * caller's choice of method, path and the headers that change the answer) and the
 * canonical form of <body>, or <body> itself, tagged apart, when it is not canonical JSON.
 * Equal requests give equal fingerprints; semantically equal JSON bodies that differ only
 * in whitespace, member order or string escapes do too. Returns BSC_OK or BSC_ENOMEM. */
enum bsc_err idem_fingerprint(struct bsc_str context, struct bsc_str body, struct idem_fp *out);

/* True when <rec> is gone at wall time <now_ms>. */
bool idem_record_expired(const struct idem_record *rec, uint64_t now_ms);

/* When a record entering <state> at <now_ms> expires: complete records live <ttl_ms>,
 * in_flight ones min(<ttl_ms>, <lease_ms>) so that a request that never completes (a crash)
 * does not block its key for a whole ttl. Saturates instead of overflowing. */
uint64_t idem_expiry(enum idem_state state, uint64_t now_ms, uint64_t ttl_ms, uint64_t lease_ms);

/* The decision for a request with fingerprint <fp> given the stored record <rec> (NULL:
 * none) at <now_ms>. An expired record counts as none. A different fingerprint is
 * MISMATCH whatever the record's state. Pure. */
enum idem_decision idem_decide(const struct idem_record *rec, const struct idem_fp *fp,
                               uint64_t now_ms);

/* The HTTP status a decision answers with: 409 for IN_FLIGHT, 422 for MISMATCH, 0 for
 * MISS and REPLAY (the request, or the stored answer, decides). */
int idem_decision_status(enum idem_decision d);
/* Static name ("miss", "replay", "in_flight", "mismatch"); "?" when out of range. */
const char *idem_decision_name(enum idem_decision d);
/* Static name ("in_flight", "complete"); "?" when out of range. */
const char *idem_state_name(enum idem_state s);

#endif
