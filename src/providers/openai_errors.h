/* SPDX-License-Identifier: MIT */
/* openai_errors.h -- the error classifier for the `openai` and `openai_compatible` provider
 * kinds: HTTP status + body (error.code / error.type / message) + retry headers -> one
 * struct fail_info (docs/providers.md §6). Upstream dialects (DeepSeek, Mistral, Groq,
 * OpenRouter, Doubao, ERNIE, ...) are profiles: tables of rules tried before the generic
 * ones, so adding one is data, not code. Pure: no I/O, no clock (the wall time is an
 * input), no globals. Design notes: docs/internals/taxonomy.md. */
#ifndef BSC_PROVIDERS_OPENAI_ERRORS_H
#define BSC_PROVIDERS_OPENAI_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compat.h"
#include "core/str.h"
#include "fail/taxonomy.h"

/* What an adapter saw of a failed (or suspicious 200) response. Every slice is borrowed
 * for the duration of the call only; empty = absent. */
struct prov_err_input {
    int status;                  /* upstream HTTP status */
    struct bsc_str body;         /* the response body (may be cut short: then unparsable) */
    struct bsc_str content_type; /* the Content-Type header value */
    /* The response's headers: header(header_ctx, name) is the value of the header <name>
     * (case-insensitive, first match), empty when absent, borrowed for the call. Each
     * adapter asks for the headers its provider sends (Retry-After, retry-after-ms, Azure's
     * x-ms-retry-after-ms), so the caller needs to know none of them. NULL: no headers. */
    struct bsc_str (*header)(const void *ctx, const char *name);
    /* Optional: header() for each of <names>[0..<n>) into <values>, in one pass over the
     * head. NULL: header() is asked once per name. A wrapper that puts its own header() and
     * header_ctx in a copy of the input sets this NULL (it reads the same header_ctx). */
    void (*headers)(const void *ctx, const char *const *names, size_t n, struct bsc_str *values);
    const void *header_ctx;
    uint64_t now_wall_ms;    /* wall clock, for an HTTP-date Retry-After */
    struct bsc_str base_url; /* the provider's base_url: picks the dialect profile */
    struct bsc_str profile;  /* the provider's `profile:` name; empty: by base_url */
};

/* The value of the response header <name> of <in> (see prov_err_input.header); empty when
 * absent, when <in> has no headers, or when <in> is NULL. */
static inline struct bsc_str prov_err_header(const struct prov_err_input *in, const char *name)
{
    return in && in->header ? in->header(in->header_ctx, name) : BSC_STR_NULL;
}

/* prov_err_header for each of <names>[0..<n>) into <values>: in one pass when <in> can. */
static inline void prov_err_headers(const struct prov_err_input *in, const char *const *names,
                                    size_t n, struct bsc_str *values)
{
    if (in && in->header && in->headers) {
        in->headers(in->header_ctx, names, n, values);
        return;
    }
    for (size_t i = 0; i < n; i++)
        values[i] = prov_err_header(in, names[i]);
}

/* The wait the standard headers of <in> ask for: retry-after-ms, else Retry-After, read by
 * prov_parse_retry_after() against in->now_wall_ms. Returns -1 when neither gives one, or
 * when <in> is NULL. */
int64_t prov_err_retry_after(const struct prov_err_input *in);

/* One override rule: when every set field matches, the failure is <kind>. */
struct prov_err_rule {
    int status;         /* the (effective) HTTP status; 0 = any */
    const char *code;   /* equals error.code or error.type, ASCII case-insensitive; NULL = any */
    const char *needle; /* lower-case substring of error.message, case-insensitive; NULL = any */
    enum fail_kind kind;
};

/* An upstream dialect of the OpenAI wire format. */
struct prov_openai_profile {
    const char *name;                  /* "openai", "deepseek", ... */
    const char *host;                  /* base_url host (or a parent domain) that selects it;
                                          NULL: selected only by name */
    const struct prov_err_rule *rules; /* tried first, in order; the first match wins */
    size_t n_rules;
};

/* The profile named <name> (ASCII case-insensitive), or NULL. Static data, never freed. */
const struct prov_openai_profile *prov_openai_profile_find(struct bsc_str name);

/* The profile for a provider's <base_url> by its host ("https://api.deepseek.com/v1" ->
 * deepseek); the plain "openai" profile when no other matches. Never NULL. */
const struct prov_openai_profile *prov_openai_profile_for_url(struct bsc_str base_url);

/* The profile <in> names (its `profile`), else the one its base_url's host picks. Never
 * NULL: an unknown name (config validation keeps them out) falls back to the host. */
const struct prov_openai_profile *prov_openai_profile_of(const struct prov_err_input *in);

/* Classifies one response with the plain OpenAI profile; see prov_openai_classify_profile. */
void prov_openai_classify(const struct prov_err_input *in, struct fail_info *out);

/* Classifies one response into *<out> (always fully written). Order (docs/providers.md §6.5):
 * the body is parsed leniently and never trusted (OpenAI {"error":{...}}, a bare
 * {"error":"text"}, vLLM's flat {"object":"error",...}, a one-element array, an integer
 * code); then <profile>'s rules, the generic overrides (quota and billing codes,
 * context_length_exceeded and the §6.4 message patterns, content-policy codes,
 * model_not_found, invalid_api_key), then the status map (fail_kind_from_status). A 2xx
 * status is an error only when the body carries a non-null `error` object (errors hidden in
 * a 200): its integer code or code/type then decide, FAIL_UNKNOWN when nothing does; a 2xx
 * without one is FAIL_NONE. An HTML or unparsable body is classified by the status alone.
 * out->retry_after_ms comes from the headers (prov_parse_retry_after), else from "try again
 * in Ns" in the message, else -1. <profile> NULL means plain OpenAI. Allocates only inside
 * the JSON parser (released before return); on allocation failure the body is treated as
 * unparsable. */
void prov_openai_classify_profile(const struct prov_err_input *in,
                                  const struct prov_openai_profile *profile,
                                  struct fail_info *out);

/* Classifies a 2xx body that is not a well-formed answer (the adapter found no `choices`
 * or `data` in it, or it came instead of a stream): an error hidden in a 200 in any shape
 * — {"error":...}, a top-level {"code","message"|"msg"} or {"error_code","error_msg"} —
 * through <profile>'s rules, the generic rules and the throttling/quota wording, else
 * FAIL_UNKNOWN. Never FAIL_NONE: such an answer is never passed on as a success. */
void prov_openai_classify_malformed(const struct prov_err_input *in,
                                    const struct prov_openai_profile *profile,
                                    struct fail_info *out);

/* Examines one SSE data payload of an OpenAI-style stream. Returns true, with *<out>
 * filled (status 200, kind from the error's code/type/integer code, FAIL_UNKNOWN when
 * nothing matches), when the JSON carries a non-null `error` (or is a flat
 * {"object":"error"}) or a top-level `code` / `error_code` and no `choices`, or when a choice
 * has finish_reason "error" (FAIL_SERVER_ERROR unless an error object says otherwise).
 * Returns false, *<out> reset to FAIL_NONE, for a normal chunk, "[DONE]" and anything that
 * is not JSON (framing problems are the SSE layer's).
 * Uses the plain OpenAI profile, or <profile> with the _profile variant. */
bool prov_openai_classify_event(struct bsc_str data, struct fail_info *out);
bool prov_openai_classify_event_profile(struct bsc_str data,
                                        const struct prov_openai_profile *profile,
                                        struct fail_info *out);

#endif
