/* SPDX-License-Identifier: MIT */
/* downstream.h -- the client's dialect, when it is not OpenAI's: the router works in
 * OpenAI shapes throughout (the canonical form); a client that spoke another API (the
 * Anthropic-compatible POST /v1/messages) gets its answer, its stream and its errors
 * translated back through one of these. NULL means OpenAI: bytes pass unchanged.
 * Implementations live with their inbound surface in api/. */
#ifndef BSC_ROUTER_DOWNSTREAM_H
#define BSC_ROUTER_DOWNSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"
#include "router/reply.h"

struct down_ctx {
    const char *request_id;
    const char *model;  /* the model name to show the client (what it asked for) */
    bool include_usage; /* OpenAI clients only; other dialects decide for themselves */
    int64_t est_input_tokens; /* the router's estimate of the prompt's tokens, for a
                                 dialect that must name them before the upstream does */
    void *arg;          /* the dialect's own per-request state (chat_in.down_arg), or NULL */
    bool native;        /* the answer is the adapter's carrier of the upstream's own bytes in
                           the client's dialect (prov_call.native): only then may the dialect
                           look for the carrier, which an upstream could otherwise forge */
};

struct down_ops {
    const char *name;
    /* A complete OpenAI chat.completion JSON -> the client's answer body. */
    enum bsc_err (*map_response)(struct bsc_str openai_json, const struct down_ctx *ctx,
                                 struct bsc_buf *out);
    /* Streams: state of <stream_size> bytes, zeroed by the caller. stream_chunk gets the
     * data of each OpenAI chunk event (JSON text) and appends complete client frames;
     * stream_done is called once after the last chunk ([DONE]); stream_error appends the
     * client dialect's in-band error event that ends a committed stream. */
    size_t stream_size;
    void (*stream_init)(void *st, const struct down_ctx *ctx);
    enum bsc_err (*stream_chunk)(void *st, struct bsc_str chunk_json, struct bsc_buf *out);
    enum bsc_err (*stream_done)(void *st, struct bsc_buf *out);
    enum bsc_err (*stream_error)(void *st, const struct reply_error *e, struct bsc_buf *out);
    void (*stream_cleanup)(void *st);
    /* The error body for a non-stream failure (status chosen by the router), including
     * typed failures (e->reason set). */
    enum bsc_err (*error_body)(const struct reply_error *e, const char *request_id,
                               struct bsc_buf *out);
    /* Frees chat_in.down_arg when the request ends (or is refused); may be NULL. */
    void (*arg_free)(void *arg);
};

#endif
