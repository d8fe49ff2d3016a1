/* SPDX-License-Identifier: MIT */
/* error.h -- the one writer of error bodies for each client dialect (OpenAI, Anthropic).
 * Every error a client reads goes through here: the server's framing errors (through the
 * body callback main.c gives it), the router's typed failures and provider errors, and
 * the api's own refusals. It only writes JSON; statuses and headers stay with the callers.
 * docs/internals/errors.md has the shapes and who calls what. */
#ifndef BSC_DIALECT_ERROR_H
#define BSC_DIALECT_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* One error, neutral. All strings are borrowed for the call. */
struct dialect_error {
    int status;             /* the HTTP status; 0 for an in-band (stream) error */
    const char *type;       /* OpenAI error type; NULL: "server_error" */
    const char *code;       /* may be NULL */
    const char *message;    /* may be NULL: "" */
    const char *param;      /* may be NULL */
    const char *reason;     /* a typed failure (docs/design.md §9) when not NULL: the body
                               then carries status, reason, retryable, retry_after_ms */
    bool retryable;         /* typed failures: the application may send it again later */
    int64_t retry_after_ms; /* typed failures: the wait announced; < 0: null */
    const char *request_id; /* may be NULL: null */
};

/* Appends {"error":{"message","type","param","code"}, typed-failure members,
 * "request_id"} to <out>. Returns BSC_OK, or an error with <out> as it was. */
enum bsc_err dialect_openai_error(const struct dialect_error *e, struct bsc_buf *out);

/* Appends {"type":"error","error":{"type","message"}, typed-failure members,
 * "request_id"} to <out>, the Anthropic type chosen by dialect_anthropic_error_type().
 * Returns BSC_OK, or an error with <out> as it was. */
enum bsc_err dialect_anthropic_error(const struct dialect_error *e, struct bsc_buf *out);

/* Anthropic's error type for an error with HTTP <status> (0 when in-band) and OpenAI
 * <openai_type> and <code> (either may be NULL). Returns a static string. */
const char *dialect_anthropic_error_type(int status, const char *openai_type, const char *code);

/* The server's error body callback (server.h srv_error_body_fn) in OpenAI's shape: a NULL
 * <type> is chosen by <status> (server_error from 500, else invalid_request_error). */
enum bsc_err dialect_openai_srv_error(int status, const char *type, const char *code,
                                      const char *message, const char *request_id,
                                      struct bsc_buf *out);

#endif
