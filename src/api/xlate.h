/* SPDX-License-Identifier: MIT */
/* xlate.h -- the translation context of the inbound dialects (xlate.c). */
#ifndef BSC_API_XLATE_H
#define BSC_API_XLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/err.h"

/* One translation: the first client-facing error wins, later steps do nothing. */
struct api_xl {
    char *why; /* borrowed: the client-facing message */
    size_t why_len;
    enum bsc_err err; /* BSC_OK, BSC_EINVAL (the client's request) or BSC_ENOMEM */
};

/* Records a client-facing error (the first one only). Always returns false. */
bool api__xl_fail(struct api_xl *x, const char *fmt, ...) BSC_PRINTF(2, 3);
/* Records "out of memory" (unless an error is already recorded). Always returns false. */
bool api__xl_oom(struct api_xl *x);
/* Adds <val> as <key> of <obj>; takes ownership of <val>, also on failure (NULL <val>:
 * out of memory). */
bool api__xl_put(struct api_xl *x, struct json_object *obj, const char *key,
                 struct json_object *val);
/* Appends <val> to <arr>, with the same ownership rule. */
bool api__xl_push(struct api_xl *x, struct json_object *arr, struct json_object *val);

/* A non-negative integer member <key> of <o>, or -1 (absent, not an integer, negative). */
int64_t api__json_count(struct json_object *o, const char *key);

/* An OpenAI usage object, as the client dialects read it. */
struct api_usage {
    bool seen;
    int64_t input;  /* prompt_tokens: cached tokens included */
    int64_t output; /* completion_tokens */
    int64_t cached; /* prompt_tokens_details.cached_tokens, never above <input> */
};

/* Reads the OpenAI usage object <u> into <out> (missing or negative counts are 0); leaves
 * <out> as it was when <u> is not an object. */
void api__usage_read(struct json_object *u, struct api_usage *out);

#endif
