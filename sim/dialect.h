/* SPDX-License-Identifier: MIT */
/* dialect.h -- the interface every simulated provider API implements (one file per
 * dialect: dialect_openai.c today; Anthropic, Gemini, DashScope and Azure later). A
 * dialect is a pure translator: it recognises its endpoints, checks credentials, parses a
 * request into a neutral struct sim_call, and renders answers, stream events and error
 * bodies into buffers. It never touches sockets, timers or the fault script: the runtime
 * (exchange.c) decides what to send and when. See docs/internals/sim.md. */
#ifndef BSC_SIM_DIALECT_H
#define BSC_SIM_DIALECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

enum sim_ep {
    SIM_EP_NONE = 0, /* not this dialect's */
    SIM_EP_CHAT,     /* a generation call: scripted, streamable */
    SIM_EP_EMBED,    /* embeddings: scripted, never streamed */
    SIM_EP_MODELS,   /* the model list: not scripted */
    SIM_EP_MODEL,    /* one model by id: not scripted */
    SIM_EP_COUNT
};

/* One inbound request as a dialect sees it; everything borrowed for the call only. */
struct sim_in {
    struct bsc_str method;
    struct bsc_str path;
    struct bsc_str query;
    struct bsc_str body;
    /* The first header named <name> (case-insensitive), {NULL,0} when absent. */
    struct bsc_str (*header)(const void *ctx, struct bsc_str name);
    const void *ctx;
};

/* Why a request is refused before the script sees it. */
struct sim_reject {
    int status;        /* 400, 401, 404, ... */
    const char *type;  /* static */
    const char *code;  /* static or NULL */
    char message[256];
};

/* A parsed request, neutral across dialects. */
struct sim_call {
    enum sim_ep ep;
    char *model;            /* owned; NULL until known */
    uint32_t max_tokens;    /* 0 when the client set no limit */
    bool stream;
    bool include_usage;     /* stream: the final usage event was asked for */
    bool responses;         /* OpenAI's Responses API (POST /v1/responses): text answers in
                               its Response object and typed event stream */
    char *tool_name;        /* owned; NULL: the answer is text */
    char *tool_args;        /* owned JSON text when <tool_name> is set (scripted: any text) */
    bool tool_args_raw;     /* <tool_args> is scripted text that is not JSON: a dialect that
                               carries arguments as a JSON value sends it as a JSON string */
    char *json_answer;      /* owned or NULL: the generated answer to a request that asks
                               for JSON (a response schema, JSON mode): the content when
                               nothing scripts one (exchange.c; sim_call_json_content) */
    uint32_t prompt_tokens;
    bool count_tokens;      /* Anthropic's POST /v1/messages/count_tokens: the body is
                               {"input_tokens": prompt_tokens} */
    char **inputs;          /* embeddings: owned array of owned strings */
    size_t n_inputs;
    bool base64;            /* embeddings: encoding_format "base64" */
    /* Settled by sim_call_settle() before anything is rendered: */
    uint32_t n_tokens;      /* completion tokens of a text answer */
    bool finish_length;     /* <n_tokens> was cut by max_tokens */
    uint64_t seq;           /* the sim-wide request number (ids derive from it) */
    uint64_t created;       /* unix seconds */
    const char *finish_reason; /* borrowed from the step being played (exchange.c): the
                                  scripted finish reason; NULL = the natural one */
    struct bsc_str usage;       /* borrowed from the step being played (sim_step_apply): the
                                   scripted usage object, sent verbatim; {NULL,0}: counted */
    struct bsc_str usage_start; /* ... Anthropic streams: message_start's usage */
    char *prefill;          /* owned or NULL: the text of a trailing assistant message,
                               which the answer continues (exchange.c) */
    char *prefill_rest;     /* owned or NULL: what follows <prefill> in the answer, which
                               <content> then borrows */
    struct bsc_str content; /* borrowed from the step being played (sim_step_apply): the
                               scripted text, streamed as <n_tokens> pieces; {NULL,0}: the
                               generated tokens. Render with sim_content_answer/_chunk. */
};

struct sim_dialect {
    const char *name;
    /* Which endpoint <method> <path> is, or SIM_EP_NONE. */
    enum sim_ep (*route)(struct bsc_str method, struct bsc_str path);
    /* True when the credentials are acceptable; else fills <rej>. */
    bool (*authorize)(const struct sim_in *in, struct sim_reject *rej);
    /* Parses <in> for endpoint <ep> into <call> (which the caller cleans up even on
     * failure: <call>->model is set as early as possible for the request log). False
     * with <rej> filled when the request is invalid. */
    bool (*parse)(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                  struct sim_reject *rej);
    /* The complete non-streamed answer to a chat or embeddings call. */
    enum bsc_err (*body)(const struct sim_call *call, struct bsc_buf *out);
    /* A stream is event_count() events, each rendered whole (framing included) by
     * event(), then end_event() (may append nothing, e.g. when the dialect has no
     * terminator). A cut stream stops before end_event(). */
    size_t (*event_count)(const struct sim_call *call);
    enum bsc_err (*event)(const struct sim_call *call, size_t i, struct bsc_buf *out);
    enum bsc_err (*end_event)(const struct sim_call *call, struct bsc_buf *out);
    const char *stream_content_type;
    /* NULL, or the header an error answer names its type in (Bedrock's x-amzn-ErrorType):
     * rejections and scripted errors then carry "<header>: <type>". */
    const char *error_type_header;
    /* The type, code (may be NULL) and message of the error a bare <status> stands for;
     * static strings, or <msgbuf> for the message. <call> may be NULL. */
    void (*default_error)(const struct sim_call *call, int status, const char **type,
                          const char **code, char *msgbuf, size_t msglen);
    /* An error body, and the same error as one in-band stream event. <status> is the
     * HTTP status the body goes out with: 200 for error_200 (and for error_event). */
    enum bsc_err (*error_body)(int status, const char *type, const char *code,
                               const char *message, struct bsc_buf *out);
    enum bsc_err (*error_event)(int status, const char *type, const char *code,
                                const char *message, struct bsc_buf *out);
    /* A 200 body that is not valid JSON, and a stream event whose data is not. */
    enum bsc_err (*malformed_body)(const struct sim_call *call, struct bsc_buf *out);
    enum bsc_err (*malformed_event)(const struct sim_call *call, struct bsc_buf *out);
    /* SIM_EP_MODELS: the list of <names>; SIM_EP_MODEL: <call>->model alone. */
    enum bsc_err (*models)(const struct sim_call *call, const char *const *names, size_t n,
                           struct bsc_buf *out);
};

extern const struct sim_dialect sim_dialect_openai;

/* The dialect serving <method> <path> and its endpoint in *<ep>; NULL (and SIM_EP_NONE)
 * when no dialect claims the path. */
const struct sim_dialect *sim_dialect_route(struct bsc_str method, struct bsc_str path,
                                            enum sim_ep *ep);

/* Fixes what a call will say: <spec_tokens> completion tokens capped by the client's
 * max_tokens (finish "length" when the cap bites), the request number and the time. */
void sim_call_settle(struct sim_call *call, uint32_t spec_tokens, uint64_t seq,
                     uint64_t created);
/* A text answer that nothing scripted says <call>->json_answer, when the request asked
 * for JSON: <call>->content borrows it (whole, not cut by max_tokens: an answer cut short
 * would break the contract) and <n_tokens> becomes its piece count. Call after
 * sim_step_apply(); a tool call or scripted content is left alone. */
void sim_call_json_content(struct sim_call *call);

/* Frees what <call> owns; <call> is empty afterwards. */
void sim_call_cleanup(struct sim_call *call);

/* Fills <rej>; <fmt> builds the message. */
void sim_reject_set(struct sim_reject *rej, int status, const char *type, const char *code,
                    const char *fmt, ...) BSC_PRINTF(5, 6);

#endif
