/* SPDX-License-Identifier: MIT */
/* sigv4.h -- AWS Signature Version 4 (HMAC-SHA256 over a canonical request), pure: the
 * caller gives the method, the path and query as they go on the wire, the headers to sign
 * and the payload's hash, the credentials, the time, region and service; out comes the
 * Authorization header value. No clock, no I/O. Used by the bedrock adapter to sign and by
 * bascule-sim to verify. See docs/internals/provider-bedrock-vertex.md. */
#ifndef BSC_CORE_SIGV4_H
#define BSC_CORE_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/sha256.h"
#include "core/str.h"

/* The most headers one request signs. */
#define SIGV4_MAX_HEADERS 16
/* "20150830T123600Z" and its NUL. */
#define SIGV4_DATE_LEN 17

struct sigv4_header {
    struct bsc_str name;  /* any case, < 64 bytes; names repeated are joined with ',' in order */
    struct bsc_str value; /* trimmed and inner runs of spaces collapsed when signed */
};

struct sigv4_req {
    struct bsc_str method;
    struct bsc_str path;  /* as sent (already percent-encoded once); "" is "/" */
    struct bsc_str query; /* as sent, without '?'; may be empty */
    const struct sigv4_header *headers;
    size_t n_headers;                          /* at most SIGV4_MAX_HEADERS; any order */
    char payload_hash[BSC_SHA256_HEX_LEN + 1]; /* hex SHA-256 of the body */
};

struct sigv4_scope {
    const char *access_key_id;
    const char *secret_access_key;
    const char *amz_date; /* "YYYYMMDDTHHMMSSZ": the request's x-amz-date */
    const char *region;
    const char *service;
};

/* HMAC-SHA256 (RFC 2104) of <len> bytes at <msg> under the <klen>-byte <key>. */
void sigv4_hmac(const void *key, size_t klen, const void *msg, size_t len,
                uint8_t out[BSC_SHA256_LEN]);

/* Writes the x-amz-date of the Unix time <unix_s> (UTC) to <out>. */
void sigv4_amz_date(int64_t unix_s, char out[SIGV4_DATE_LEN]);

/* Appends the canonical request of <r> to <out>: method, canonical URI (each byte of the
 * path but the unreserved ones and '/' percent-encoded), the query's pairs sorted and
 * encoded, the canonical headers (lowercased, sorted, values trimmed), the signed header
 * list and the payload hash, one per line. BSC_EINVAL with too many headers or a header name
 * of 64 bytes or more. */
enum bsc_err sigv4_canonical(const struct sigv4_req *r, struct bsc_buf *out);

/* Appends the Authorization header value for <r> under <s> to <out>:
 * "AWS4-HMAC-SHA256 Credential=.../aws4_request, SignedHeaders=..., Signature=<hex>".
 * <sig> (65 bytes, may be NULL) receives the hex signature alone. */
enum bsc_err sigv4_authorization(const struct sigv4_req *r, const struct sigv4_scope *s,
                                 struct bsc_buf *out, char *sig);

#endif
