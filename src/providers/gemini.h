/* SPDX-License-Identifier: MIT */
/* gemini.h -- private to the Gemini adapter (gemini.c: request side, error classification
 * and the ops table; gemini_stream.c: answers, unary and streamed, into OpenAI shapes).
 * Never included from outside src/providers/gemini*.c. Design and mapping tables:
 * docs/internals/provider-gemini.md. */
#ifndef BSC_PROVIDERS_GEMINI_H
#define BSC_PROVIDERS_GEMINI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/json_get.h"
#include "core/str.h"
#include "providers/provider.h"
#include "stream/utf8.h"

/* Gemini's candidateCount goes up to 8; OpenAI's n is capped here for Gemini targets. */
#define GEM_MAX_CANDIDATES 8u
#define GEM_ID_MAX 128u     /* the OpenAI completion id, "chatcmpl-..." */
#define GEM_MODEL_MAX 192u  /* the model name echoed to the client */
#define GEM_PREFIX_MAX 24u  /* the synthetic tool-call id prefix, "call_<8 hex>_" */
#define GEM_ERR_JSON_MAX (64u * 1024u) /* a bare JSON error object in a stream */

/* The placeholder Gemini accepts instead of a thought signature the client did not keep
 * (docs/providers.md §3.4; Google's thought-signatures guide names it for histories that
 * were not produced by Gemini). */
#define GEM_SKIP_SIGNATURE "skip_thought_signature_validator"

/* What the answer side needs to know of the request, copied so it may outlive the call. */
struct gem_resp_ctx {
    char id[GEM_ID_MAX];          /* "chatcmpl-<request id>" until the answer names one */
    char model[GEM_MODEL_MAX];    /* the target's model until the answer names a version */
    char prefix[GEM_PREFIX_MAX];  /* synthetic tool-call ids: <prefix><n> */
    bool single_tool;             /* parallel_tool_calls: false -> keep the first call */
    bool include_usage;           /* the client asked for the usage chunk */
    int64_t created;              /* the request's wall-clock seconds (prov_call) */
};

/* One candidate (choice) of a stream. */
struct gem_cand {
    struct utf8_carry carry; /* a character split between two text parts */
    uint32_t n_tools;        /* tool calls emitted: the next OpenAI tool index */
    bool present;            /* it appeared in an event */
    bool started;            /* the role delta went out */
    bool finished;           /* its finishReason was seen */
};

/* Per-attempt stream state (prov_ops.stream_size bytes, zeroed by the caller). */
struct gem_stream {
    struct gem_resp_ctx ctx;
    struct gem_cand cand[GEM_MAX_CANDIDATES];
    uint32_t n_ids;          /* synthetic tool-call ids handed out */
    bool named;              /* id/model were fixed by the first event */
    bool done;               /* usage chunk and [DONE] went out */
    struct prov_usage usage; /* the last usageMetadata */
    int64_t reasoning;       /* thoughtsTokenCount of the last usageMetadata; -1 none */
    struct bsc_buf pend;     /* owned: lines of a bare JSON object (error) being collected */
};

/* ---- small json-c helpers (borrowed results; NULL / empty when absent or mistyped) ---- */

static inline struct bsc_str gem_str(struct json_object *o, const char *key)
{
    struct json_object *v = bsc_json_get_type(o, key, json_type_string);

    return v ? bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v))
             : BSC_STR_NULL;
}

static inline int64_t gem_i64(struct json_object *o, const char *key, int64_t dflt)
{
    struct json_object *v = bsc_json_get(o, key);

    if (v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return json_object_get_int64(v);
    return dflt;
}

/* ---- shared between the two files ---- */

/* Fills <ctx> from <call>: ids, model, parallel_tool_calls, include_usage. */
void prov__gem_resp_ctx_init(struct gem_resp_ctx *ctx, const struct prov_call *call);

/* Classifies a Gemini error object <root> ({"error":{code,message,status,details}}, or an
 * array holding one) seen with HTTP status <http_status> (200 for errors in a 200 body or
 * a stream: the error's own code then decides). <in> gives the retry headers and may be
 * NULL. Returns false, *<out> untouched, when <root> carries no error object. */
bool prov__gem_fail_from_error(struct json_object *root, int http_status,
                               const struct prov_err_input *in, struct fail_info *out);

/* True, *<out> filled (content_policy, status <status>), when <root> is a 200 answer whose
 * prompt was blocked: promptFeedback.blockReason and no candidates. */
bool prov__gem_prompt_blocked(struct json_object *root, int status, struct fail_info *out);

/* Fills *<out> as an upstream answer the adapter cannot use: <kind>, status <status>,
 * message <msg>. */
void prov__gem_fail_set(struct fail_info *out, enum fail_kind kind, int status, const char *msg);

#ifdef BSC_UNIT_TEST
/* File-local in release builds (BSC_TESTABLE). */
bool prov__gem_data_url(struct bsc_str url, struct bsc_str *mime, struct bsc_str *data);
bool prov__gem_needs_signature(const char *model);
const char *prov__gem_finish(struct bsc_str reason, bool had_tools, bool *unusable);
#endif

/* Hooks implemented in gemini_stream.c (see struct prov_ops). */
enum bsc_err prov__gem_map_response(const struct prov_call *call, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail);
void prov__gem_stream_init(void *st, const struct prov_call *call);
enum prov_stream_status prov__gem_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail);
enum prov_stream_status prov__gem_stream_line(void *st, struct bsc_str line, struct bsc_buf *out,
                                              struct fail_info *fail);
enum prov_stream_status prov__gem_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail);
void prov__gem_stream_usage(void *st, struct prov_usage *usage);
void prov__gem_stream_cleanup(void *st);

#endif
