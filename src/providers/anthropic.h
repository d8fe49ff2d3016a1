/* SPDX-License-Identifier: MIT */
/* anthropic.h -- private to the Anthropic adapter (anthropic.c, anthropic_stream.c): the
 * stream translator's state and the helpers both files use (stop_reason, usage, error
 * objects, the response_format emulation). Never included outside src/providers/anthropic*.
 * See docs/internals/provider-anthropic.md. */
#ifndef BSC_PROVIDERS_ANTHROPIC_H
#define BSC_PROVIDERS_ANTHROPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "providers/provider.h"
#include "stream/utf8.h"

/* The header value sent when the provider config does not set one. */
#define PROV_ANTH_VERSION "2023-06-01"
/* max_tokens when neither the client nor the target says (Anthropic requires one). */
#define PROV_ANTH_DEFAULT_MAX_TOKENS 4096
/* The tool that carries a response_format answer (the forced-tool emulation). */
#define PROV_ANTH_JSON_TOOL "json_response"

/* Anthropic's usage counters; -1 = not reported. input_tokens excludes the cache reads and
 * writes, which are separate and additive (docs/configuration.md "Cost"). */
struct anth_usage {
    int64_t in;           /* input_tokens */
    int64_t cache_read;   /* cache_read_input_tokens */
    int64_t cache_create; /* cache_creation_input_tokens: every write, 5-minute and 1-hour */
    int64_t cache_5m;     /* cache_creation.ephemeral_5m_input_tokens */
    int64_t cache_1h;     /* cache_creation.ephemeral_1h_input_tokens */
    int64_t out;          /* output_tokens (thinking included) */
};

#define ANTH_USAGE_UNKNOWN ((struct anth_usage){-1, -1, -1, -1, -1, -1})

/* What the block being streamed is. */
enum anth_block {
    ANTH_BLK_NONE = 0, /* between blocks */
    ANTH_BLK_TEXT,     /* text: text_delta -> delta.content */
    ANTH_BLK_TOOL,     /* tool_use: input_json_delta -> delta.tool_calls[k].arguments */
    ANTH_BLK_JSON,     /* the response_format tool: input_json_delta -> delta.content */
    ANTH_BLK_OTHER,    /* thinking, server tools, unknown: dropped */
    ANTH_BLK_COUNT
};

/* Per-attempt stream state, zeroed by the caller, then prov__anth_stream_init. Owns its
 * two buffers (native mode only); stream_cleanup frees them. */
struct anth_stream {
    bool include_usage; /* the client asked for the usage chunk */
    bool json_mode;     /* response_format is emulated by PROV_ANTH_JSON_TOOL */
    bool role_sent;     /* the first chunk (delta.role) went out */
    bool done;          /* message_stop was translated */
    enum anth_block block;
    int n_tools;        /* tool_use blocks opened; the open one has OpenAI index n_tools-1 */
    int64_t created;
    struct utf8_carry carry; /* the open block's incomplete character */
    struct anth_usage usage;
    char id[128];
    char model[128];
    char stop_reason[48];
    /* Native mode (prov__anth_native): each upstream event also goes out whole, and the
     * translated frames are marked as shadows the router reads and the client never gets. */
    bool native;
    struct bsc_buf held;    /* owned: native events before the first translated frame */
    struct bsc_buf scratch; /* owned: the translated frames of one event */
};

/* OpenAI finish_reason for an Anthropic stop_reason (NULL or unknown -> "stop"); with
 * <json_mode>, "tool_use" is "stop" (the tool was the answer). Static string. */
const char *prov__anth_finish_reason(const char *stop_reason, bool json_mode);

/* The fail kind of an Anthropic error.type (<type> may be NULL) with HTTP <status> and
 * <message>: the type decides when it is known, then the message (context overflow,
 * billing wording), then the status map. */
enum fail_kind prov__anth_error_kind(const char *type, int status, const char *message);

/* Fills *<out> from an Anthropic error object {"type","message"} (<err> may be NULL or not
 * an object) and <status>; retry_after_ms is left at -1. */
void prov__anth_fail_from_error(struct json_object *err, int status, struct fail_info *out);

/* Reads an Anthropic usage object into <a>, leaving the counters it lacks untouched (a
 * stream's message_delta adds to what message_start said). */
void prov__anth_usage_read(struct json_object *usage, struct anth_usage *a);

/* The neutral usage from the Anthropic counters: prompt = input + cache reads + cache
 * writes, cached = cache reads, the writes split into 1-hour (ephemeral_1h) and the rest
 * (5-minute: the default TTL, and all of them when the split is absent). */
struct prov_usage prov__anth_usage(const struct anth_usage *a);

/* True when <call> carries the client's own Messages bytes (prov_call.native) to forward
 * instead of a translation; the answer then goes back to the client as it came. */
bool prov__anth_native(const struct prov_call *call);

/* True when <call>'s response_format asks for JSON (json_object or json_schema), which
 * the adapter emulates with one forced tool. */
bool prov__anth_json_mode(const struct prov_call *call);

/* The stream hooks (anthropic_stream.c); see struct prov_ops. */
void prov__anth_stream_init(void *st, const struct prov_call *call);
enum prov_stream_status prov__anth_stream_event(void *st, struct bsc_str event,
                                                struct bsc_str data, struct bsc_buf *out,
                                                struct fail_info *fail);
enum prov_stream_status prov__anth_stream_end(void *st, struct bsc_buf *out,
                                              struct fail_info *fail);
void prov__anth_stream_usage(void *st, struct prov_usage *usage);
void prov__anth_stream_cleanup(void *st);

#endif
