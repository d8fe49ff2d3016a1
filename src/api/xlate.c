/* SPDX-License-Identifier: MIT */
/* xlate.c -- the translation context the inbound dialects share (Anthropic messages and the
 * Responses API into the neutral chat form): the first client-facing error wins and later
 * steps do nothing, and json-c builders that take ownership of what they are given. */
#include <stdarg.h>
#include <stdio.h>

#include "api/xlate.h"
#include "core/utf8.h"

bool api__xl_fail(struct api_xl *x, const char *fmt, ...)
{
    va_list ap;

    if (x->err)
        return false;
    x->err = BSC_EINVAL;
    va_start(ap, fmt);
    vsnprintf(x->why, x->why_len, fmt, ap);
    va_end(ap);
    if (x->why_len)
        bsc_utf8_scrub(x->why); /* a client's value cut by the buffer: still UTF-8 */
    return false;
}

bool api__xl_oom(struct api_xl *x)
{
    if (!x->err) {
        x->err = BSC_ENOMEM;
        snprintf(x->why, x->why_len, "out of memory");
    }
    return false;
}

bool api__xl_put(struct api_xl *x, struct json_object *obj, const char *key,
                 struct json_object *val)
{
    if (!val)
        return api__xl_oom(x);
    if (json_object_object_add(obj, key, val) != 0) {
        json_object_put(val);
        return api__xl_oom(x);
    }
    return true;
}

bool api__xl_push(struct api_xl *x, struct json_object *arr, struct json_object *val)
{
    if (!val)
        return api__xl_oom(x);
    if (json_object_array_add(arr, val) != 0) {
        json_object_put(val);
        return api__xl_oom(x);
    }
    return true;
}

int64_t api__json_count(struct json_object *o, const char *key)
{
    struct json_object *v = o ? json_object_object_get(o, key) : NULL;
    int64_t n;

    if (!v || !json_object_is_type(v, json_type_int))
        return -1;
    n = json_object_get_int64(v);
    return n < 0 ? -1 : n;
}

void api__usage_read(struct json_object *u, struct api_usage *out)
{
    if (!u || !json_object_is_type(u, json_type_object))
        return;
    out->seen = true;
    out->input = api__json_count(u, "prompt_tokens");
    out->output = api__json_count(u, "completion_tokens");
    out->cached =
        api__json_count(json_object_object_get(u, "prompt_tokens_details"), "cached_tokens");
    if (out->input < 0)
        out->input = 0;
    if (out->output < 0)
        out->output = 0;
    if (out->cached < 0 || out->cached > out->input)
        out->cached = 0;
}
