/* SPDX-License-Identifier: MIT */
/* bedrock.h -- private to the Bedrock adapter (bedrock*.c): the Converse body translation
 * both ways and the stream state. The adapter rides on the Anthropic adapter: the request is
 * first built as an Anthropic Messages body (which the Converse shape mirrors block for
 * block), then reshaped; answers and stream events are reshaped into Anthropic's and
 * translated by it. Never included outside src/providers/bedrock*.
 * See docs/internals/provider-bedrock-vertex.md. */
#ifndef BSC_PROVIDERS_BEDROCK_H
#define BSC_PROVIDERS_BEDROCK_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "core/evstream.h"
#include "providers/provider.h"

/* Room for prov_anthropic's per-stream state (opaque here; checked at init). */
#define BR_INNER_STATE 1024
/* The largest event-stream message read (ConverseStream events are small). */
#define BR_EVENT_MAX (1024 * 1024)

/* The Converse request for the Anthropic Messages request <anth>, or NULL with <why> set
 * when something in it has no Converse form (a URL image, a document, thinking). New ref. */
struct json_object *prov__br_converse_request(struct json_object *anth, char *why, size_t why_len);

/* The Anthropic Messages answer for the Converse answer <conv> (id and model given), or NULL
 * when <conv> is not one. New ref. */
struct json_object *prov__br_anthropic_answer(struct json_object *conv, const char *id,
                                              const char *model);

/* The Anthropic usage object for a Converse usage object (NULL when <u> is not one). */
struct json_object *prov__br_anthropic_usage(struct json_object *u);

/* The Anthropic stop_reason for a Converse stopReason (static string). */
const char *prov__br_stop_reason(const char *stop);

/* The fail kind of a Bedrock exception name (HTTP x-amzn-ErrorType or an in-stream
 * :exception-type, any case, with or without the "Exception" suffix or a ":..." tail) and
 * HTTP <status> (0 in a stream); FAIL_UNKNOWN when the name is not known. */
enum fail_kind prov__br_exception_kind(struct bsc_str name, int status, struct bsc_str message);

/* The classify hook: a non-2xx answer's exception name and message (bedrock_errors.c). */
void prov__br_classify(const struct prov_err_input *in, struct fail_info *out);

/* The stream hooks (bedrock_stream.c); see struct prov_ops. */
void prov__br_stream_init(void *st, const struct prov_call *call);
enum prov_stream_status prov__br_stream_bytes(void *st, struct bsc_str bytes, struct bsc_buf *out,
                                              struct fail_info *fail);
enum prov_stream_status prov__br_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail);
void prov__br_stream_usage(void *st, struct prov_usage *usage);
void prov__br_stream_cleanup(void *st);

struct br_stream {
    union {
        max_align_t align;
        unsigned char bytes[BR_INNER_STATE];
    } inner;                        /* prov_anthropic's stream state */
    struct evs_decoder dec;         /* owned */
    struct bsc_buf *out;            /* borrowed for one feed */
    struct fail_info *fail;         /* borrowed for one feed */
    enum prov_stream_status status; /* of the last event handled */
    int open_index;                 /* the Converse content block open upstream, -1 = none */
    bool open_skipped;              /* ... one the Anthropic translator is not told of */
    bool started;                   /* message_start was handed on */
    bool stopped;                   /* messageStop was seen */
    char stop_reason[48];
    char model[128];
};

#endif
