/* SPDX-License-Identifier: MIT */
/* provider.h -- the one small interface every provider adapter fills in (one file per
 * kind, one exported `const struct prov_ops prov_<kind>`), after curl's vtls backends.
 * Adapters are pure translators: the canonical request (OpenAI chat/embeddings JSON) in,
 * the provider's URL, headers and body out; the provider's answer, stream events and
 * errors in, OpenAI-shaped JSON / chunk events and a taxonomy kind out. No sockets, no
 * clocks, no retries: the router owns all of that. OpenAI-dialect targets keep a fast
 * path (splice "model" into the client's bytes, relay events as they are).
 * See docs/providers.md. */
#ifndef BSC_PROVIDERS_PROVIDER_H
#define BSC_PROVIDERS_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"
#include "providers/openai_errors.h"
#include "providers/ratelimit_headers.h"
#include "fail/taxonomy.h"

enum prov_op {
    PROV_OP_CHAT = 0,         /* chat completion, plain or streaming */
    PROV_OP_EMBEDDINGS,       /* embeddings */
    PROV_OP_PROBE_MODELS,     /* health check: list models (GET) */
    PROV_OP_PROBE_COMPLETION, /* health check: a one-token completion */
    PROV_OP_RESPONSES,        /* the Responses API, the client's bytes passed through (the
                                 openai adapter only; see docs/internals/responses.md) */
    PROV_OP_COUNT
};

/* The client's own request when it spoke a provider's dialect rather than OpenAI's (POST
 * /v1/messages): an adapter whose target speaks that dialect (prov_target_dialect) forwards
 * these bytes with "model" replaced instead of translating the canonical form, so nothing
 * the canonical form lacks is lost. All borrowed from the client's request. */
struct prov_native {
    enum cfg_provider_kind kind; /* the dialect of <body>: CFG_PROV_ANTHROPIC */
    struct bsc_str body;         /* the client's JSON bytes, checked strictly */
    struct bsc_str model_span;   /* the raw "model" value inside <body> */
    struct bsc_str version;      /* the client's anthropic-version header, or empty */
    struct bsc_str beta;         /* the client's anthropic-beta header, or empty */
    char required[192];          /* empty, or why only a target speaking <kind> can take
                                    the request ("thinking: ..."): the others refuse it per
                                    attempt */
    bool count_tokens;           /* POST /v1/messages/count_tokens, not a generation */
};

/* Everything an adapter needs to build one upstream request. All borrowed for the call. */
struct prov_call {
    enum prov_op op;
    const struct cfg_provider *provider;
    const struct cfg_target *target;
    const char *key;           /* the API key chosen for this attempt; NULL when none */
    struct json_object *req;   /* the canonical request: OpenAI chat.completions (or
                                  embeddings) JSON as the client meant it; NULL for probes */
    struct bsc_str raw;        /* the client's own OpenAI JSON bytes, when the client spoke
                                  OpenAI (fast path for OpenAI-dialect targets); else empty */
    struct bsc_str model_span; /* the raw "model" value inside <raw> */
    const struct prov_native *native; /* the client's own bytes in another dialect, or NULL */
    bool stream;               /* the client wants a stream */
    bool include_usage;        /* the client asked for the usage chunk */
    const char *request_id;
    int64_t created;           /* wall-clock seconds of the request, for "created" fields
                                  (adapters read no clock) */
};

/* Top-level request parameters an adapter may be unable to honour, with the name the
 * client's 400 gives in `param`. policy/params.c finds them in the request; an adapter
 * declares the ones it cannot honour (prov_ops.unhonoured, max_choices), and a target whose
 * adapter cannot honour a parameter the request sets is not eligible for it, like a target
 * without a capability the request needs (docs/internals/request-lifecycle.md). */
#define PROV_PARAMS(X)                                                                     \
    X(N, "n")                                   /* more choices than max_choices */        \
    X(LOGPROBS, "logprobs")                     /* token log-probabilities */              \
    X(TOP_LOGPROBS, "top_logprobs")                                                        \
    X(LOGIT_BIAS, "logit_bias")                 /* banned or forced tokens */              \
    X(AUDIO, "audio")                           /* audio output */                         \
    X(MODALITIES, "modalities")                 /* ... asked for as a modality */          \
    X(FUNCTIONS, "functions")                   /* the deprecated function-calling API */  \
    X(FUNCTION_CALL, "function_call")                                                      \
    X(WEB_SEARCH_OPTIONS, "web_search_options") /* OpenAI's hosted search */

enum prov_param {
#define X(NAME, name) PROV_PARAM_##NAME,
    PROV_PARAMS(X)
#undef X
    PROV_PARAM_COUNT
};

#define PROV_P(NAME) (1u << PROV_PARAM_##NAME)

/* What to send. The caller initialises the buffers (bounded) and frees them. */
struct prov_http {
    const char *method;     /* static: "POST" or "GET" */
    struct bsc_buf url;     /* full URL */
    struct bsc_buf headers; /* header lines "Name: value", each followed by a NUL byte */
    struct bsc_buf body;    /* may stay empty (GET) */
};

/* The longest provider id of an answer kept (a Responses API "resp_..." id). */
#define PROV_ANSWER_ID_MAX 128

/* Token usage as the provider reported it, in one neutral record; -1 where it said nothing.
 * The parts are subsets: input_tokens counts every prompt token however it was billed
 * (OpenAI's prompt_tokens; Anthropic's input + cache reads + cache writes), output_tokens
 * every generated one (reasoning and thinking included). How each dialect fills it and how
 * it is priced: docs/configuration.md "Cost". */
struct prov_usage {
    int64_t input_tokens;          /* prompt tokens, cached and cache-written ones included */
    int64_t output_tokens;         /* completion tokens, reasoning included */
    int64_t cached_tokens;         /* the part of input_tokens read from the provider's cache */
    int64_t cache_write_tokens;    /* the part written to the cache at the short (5-minute) rate */
    int64_t cache_write_1h_tokens; /* the part written to the cache at the 1-hour rate */
    int64_t reasoning_tokens;      /* the part of output_tokens spent reasoning / thinking */
};

/* Nothing reported. */
#define PROV_USAGE_UNKNOWN ((struct prov_usage){-1, -1, -1, -1, -1, -1})

/* Return values of the stream hooks. */
enum prov_stream_status {
    PROV_STREAM_MORE = 0, /* go on */
    PROV_STREAM_DONE,     /* a terminal signal was seen; the final frames (usage chunk when
                             asked, then `data: [DONE]`) are in <out> */
    PROV_STREAM_ERROR     /* an error event (or a broken stream): *<fail> is filled */
};

struct prov_ops {
    const char *name; /* the config kind, e.g. "anthropic" */
    /* The parameters (PROV_P bits) this adapter cannot honour: it refuses them in build()
     * with BSC_EINVAL, so the router never picks it for a request that sets them. */
    uint32_t unhonoured;
    uint32_t max_choices; /* the largest `n` it can answer; 0 = no limit of its own */
    /* build() takes the client's own OpenAI bytes (prov_call.raw) as they are, parsing them
     * itself only when it must rewrite them: the caller need not parse the request first
     * (prov_call.req may be NULL). False: build() translates prov_call.req, which the
     * caller must supply. */
    bool takes_raw;
    /* The dialect <t>'s upstream speaks when it is not the kind's own (Claude on Vertex
     * speaks Anthropic Messages); NULL: the provider's kind. Read through
     * prov_target_dialect(). */
    enum cfg_provider_kind (*dialect)(const struct cfg_target *t);

    /* Builds the upstream request for <call> into <out>. BSC_EINVAL when the request
     * cannot be expressed in this dialect (e.g. n > 1 for Anthropic, a custom tool), with
     * a client-facing reason in <why> (the router then skips this target as not
     * satisfying the contract); BSC_ENOMEM / BSC_ELIMIT on bounds. */
    enum bsc_err (*build)(const struct prov_call *call, struct prov_http *out, char *why,
                          size_t why_len);

    /* Classifies a finished response that is not a success: any non-2xx status, or a 2xx
     * whose body is an error (errors hidden in 200). Sets out->kind = FAIL_NONE when a 2xx
     * body is not an error. Never trusts the body. */
    void (*classify)(const struct prov_err_input *in, struct fail_info *out);

    /* Reads the provider's rate-limit headers of any answer, success or not (only the
     * header accessor and the wall time of <in> are used); NULL: the provider sends none. */
    void (*ratelimit)(const struct prov_err_input *in, struct rl_headers *out);

    /* Maps a complete 2xx response body of <call> into OpenAI JSON appended to <out>
     * (chat.completion, or the embeddings list), fills <usage>. Leaving <out> empty with
     * BSC_OK means the body is already OpenAI-shaped and is used as it is. On a body that is not a
     * valid answer returns BSC_EPARSE with *<fail> describing it (kind server_error or the
     * kind of an error hidden in the body). */
    enum bsc_err (*map_response)(const struct prov_call *call, struct bsc_str body,
                                 struct bsc_buf *out, struct prov_usage *usage,
                                 struct fail_info *fail);

    /* Streams: per-attempt state of <stream_size> bytes, zeroed by the caller, then
     * stream_init. stream_event gets each upstream SSE event (name may be empty) and
     * appends zero or more complete OpenAI `data: {chat.completion.chunk}\n\n` frames to
     * <out>, never splitting a UTF-8 character across frames. stream_line gets a raw
     * non-SSE line (Gemini's bare JSON error after the last event); may be NULL.
     * stream_end is called at EOF: DONE when the stream had ended properly (it then
     * appends the final frames if not yet done), ERROR otherwise. stream_usage reads the
     * usage seen so far. stream_cleanup frees what init took. */
    size_t stream_size;
    void (*stream_init)(void *st, const struct prov_call *call);
    enum prov_stream_status (*stream_event)(void *st, struct bsc_str event, struct bsc_str data,
                                            struct bsc_buf *out, struct fail_info *fail);
    enum prov_stream_status (*stream_line)(void *st, struct bsc_str line, struct bsc_buf *out,
                                           struct fail_info *fail);
    /* Binary streams (Bedrock's AWS event-stream): when stream_bytes is set, a 2xx answer
     * whose Content-Type starts with <stream_type> is a stream too, and its raw bytes, split
     * anywhere, go to stream_bytes instead of the SSE parser (stream_event is then unused and
     * may be NULL). Returns as stream_event. */
    const char *stream_type;
    enum prov_stream_status (*stream_bytes)(void *st, struct bsc_str bytes, struct bsc_buf *out,
                                            struct fail_info *fail);
    enum prov_stream_status (*stream_end)(void *st, struct bsc_buf *out,
                                          struct fail_info *fail);
    void (*stream_usage)(void *st, struct prov_usage *usage);
    /* The provider's own id of the streamed answer, once its stream named it (a Responses
     * stream's response.completed or response.incomplete: "resp_..."), copied to <out>
     * (<len> bytes); "" when it named none or a longer one than PROV_ANSWER_ID_MAX. May
     * be NULL: the adapter keeps no such id. */
    void (*stream_answer_id)(void *st, char *out, size_t len);
    void (*stream_cleanup)(void *st);
};

/* The adapter of each kind (providers/registry.c). Never NULL for a valid kind. */
const struct prov_ops *prov_ops_for(enum cfg_provider_kind kind);

/* The dialect <t>'s upstream speaks: the kind of the adapter whose request and answer
 * shapes it takes as they are. A client that spoke that dialect (prov_native.kind) has its
 * own bytes forwarded to <t> and the upstream's answer relayed back unchanged
 * (docs/internals/anthropic-inbound.md). Pure. */
enum cfg_provider_kind prov_target_dialect(const struct cfg_target *t);

/* The verdict of <ops> on a finished response <in> (providers/classify.c): its classify hook,
 * and when that found no error in a non-2xx answer, the status map (fail_kind_from_status).
 * *<out> is always fully written; FAIL_NONE only for a 2xx. Pure. */
void prov_classify(const struct prov_ops *ops, const struct prov_err_input *in,
                   struct fail_info *out);

/* What <ops>' rate-limit headers in <in> say (all -1 when it reads none). Pure. */
void prov_ratelimit(const struct prov_ops *ops, const struct prov_err_input *in,
                    struct rl_headers *out);

/* Maps the 2xx answer <body> (HTTP <status>) of <call> through the map_response hook of
 * <ops>. On BSC_OK as the hook. On an error *<fail> names the failure: the hook's, or a
 * server_error "the upstream answer could not be read" when the hook gave no kind; its
 * status is <status>. */
enum bsc_err prov_map_response(const struct prov_ops *ops, const struct prov_call *call,
                               int status, struct bsc_str body, struct bsc_buf *out,
                               struct prov_usage *usage, struct fail_info *fail);

/* Shared helpers for adapters (providers/common.c). */

/* Appends "Name: value\0" to <h>. */
enum bsc_err prov_header(struct bsc_buf *h, const char *name, const char *fmt, ...)
    BSC_PRINTF(3, 4);
/* Appends "Name: <prefix><value>\0" to <h> (no formatting: the per-request key header). */
enum bsc_err prov_header_cat(struct bsc_buf *h, const char *name, const char *prefix,
                             const char *value);
/* Appends the provider's configured extra headers. */
enum bsc_err prov_extra_headers(struct bsc_buf *h, const struct cfg_provider *p);
/* Appends one OpenAI chunk frame `data: <json>\n\n` built from <chunk> (not consumed). */
enum bsc_err prov_emit_chunk(struct bsc_buf *out, struct json_object *chunk);
/* A chat.completion.chunk skeleton {id, object, created, model, choices: []} (new ref). */
struct json_object *prov_chunk_new(const char *id, int64_t created, const char *model);
/* Adds {"index":0,"delta":<delta>,"finish_reason":<finish|null>} to chunk's choices; takes
 * ownership of <delta>. */
void prov_chunk_choice(struct json_object *chunk, struct json_object *delta, const char *finish);
/* {"prompt_tokens","completion_tokens","total_tokens", prompt_tokens_details.cached_tokens}
 * from <u> (new ref). */
struct json_object *prov_usage_json(const struct prov_usage *u);
/* Reads an OpenAI-shaped usage object (the raw span of "usage", a validated document) into
 * <u>: prompt/completion tokens, prompt_tokens_details.cached_tokens,
 * completion_tokens_details.reasoning_tokens, DashScope's
 * prompt_tokens_details.cache_creation_input_tokens (cache writes), DeepSeek's
 * prompt_cache_hit_tokens (cached)
 * and prompt_cache_miss_tokens (prompt = hit + miss when prompt_tokens is absent); with
 * <responses>, the Responses API names (input_tokens, output_tokens, *_tokens_details).
 * Absent or malformed counts stay -1. Pure. */
void prov__openai_usage_read(struct bsc_str usage, bool responses, struct prov_usage *u);
/* Parses <s> as one JSON value (core/json_parse.h: strict, bounded depth, nothing but
 * whitespace after it); NULL when it is not exactly that. New ref. */
struct json_object *prov_parse_json(struct bsc_str s);
/* The one-token completion of a health probe, in the shape OpenAI and Anthropic share:
 * {"model", "max_tokens": 1, "messages": [{"role": "user", "content": "ping"}]}. */
enum bsc_err prov_probe_chat_body(const struct prov_call *c, struct bsc_buf *body);
/* Serialises <o> compactly (no slash escaping) and appends it to <out>. */
enum bsc_err prov_append_json(struct bsc_buf *out, struct json_object *o);

#endif
