/* SPDX-License-Identifier: MIT */
/* downstream.h -- the client's dialect, when it is not OpenAI's: the router works in
 * OpenAI shapes throughout (the canonical form); a client that spoke another API (the
 * Anthropic-compatible POST /v1/messages) gets its answer, its stream and its errors
 * translated back through one of these. NULL means OpenAI: bytes pass unchanged.
 * Implementations live with their inbound surface in api/. Types only: deliver.c's
 * functions are in deliver.h. */
#ifndef BSC_ROUTER_DOWNSTREAM_H
#define BSC_ROUTER_DOWNSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"
#include "router/reply.h"

struct request;
struct srv_header;

struct down_ctx {
    const char *request_id;
    const char *model;  /* the model name to show the client (what it asked for) */
    bool include_usage; /* OpenAI clients only; other dialects decide for themselves */
    /* The upstream's own prompt count when it gave one before the stream's first frame
     * (Gemini's usageMetadata rides on every event), for a dialect that must name it
     * before the usage chunk (Anthropic's message_start); -1 when not known yet. The
     * cached and cache-written parts are included in <input_tokens> (0 when not said). */
    int64_t input_tokens, cached_tokens, cache_write_tokens;
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

/* The client side of one request (deliver.c): whether and what went out, in which dialect.
 * deliver.c writes it, except the termination code, which the step that ends the request
 * names (request.c, decide.c, admit.c). */
struct downstream {
    const struct down_ops *ops; /* the client's dialect; NULL = OpenAI */
    void *down_st;              /* owned: ops->stream_size bytes */
    void *down_arg;             /* owned: chat_in.down_arg, freed by ops->arg_free */
    bool committed;             /* response head sent */
    int status;
    uint64_t bytes_out;
    uint64_t text_frames;       /* chunk frames relayed that carry generated text: the
                                   output's estimate when no usage came (spend.md) */
    uint64_t ttfb_us;
    uint64_t overhead_us;       /* the gateway's own time when the head went out ... */
    bool overhead_known;        /* ... once it did (else measured at the end) */
    char overhead_ms[24];       /* ... as x-bascule-overhead-ms says it
                                   (REQ_OVERHEAD_MS_TEXT_MAX) */
    struct bsc_buf out;         /* owned: client bytes to write downstream */
    struct bsc_buf answer;      /* owned: a complete answer mapped to the client's dialect,
                                   held while its idempotency record is stored */
    bool held;                  /* deliver_hold ran: the complete answer is ready */
    const char *termination;    /* access-log termination code */
    const char *limit_cut;      /* static: the stream passed max_stream_ms or _bytes */
    bool limit_timer;           /* the relay timer is armed for max_stream_ms */
    bool relay_timer;           /* the request's timer is deliver_stream_arm's, set to fire
                                   at or before <relay_due_ms> */
    uint64_t relay_due_ms;      /* when the relay timer must act (bsc_now_ms clock) */
};

#endif
