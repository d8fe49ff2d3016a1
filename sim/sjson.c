/* SPDX-License-Identifier: MIT */
/* sjson.c -- strict json-c parsing and typed getters for bascule-sim. */
#include "sjson.h"

#include <errno.h>

#include "core/compat.h"
#include "core/json_parse.h"

struct json_object *sim_json_parse(struct bsc_str text, char *errbuf, size_t errlen)
{
    struct json_object *obj;
    struct bsc_json_where w;

    if (text.len == 0 || text.len > INT32_MAX) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s", text.len ? "body too large" : "empty body");
        return NULL;
    }
    obj = bsc_json_parse(text, SIM_JSON_MAX_DEPTH, BSC_JSON_UTF8, &w);
    if (obj || !errbuf)
        return obj;
    if (w.why == BSC_JSONP_NOMEM)
        snprintf(errbuf, errlen, "out of memory");
    else if (w.why == BSC_JSONP_TRAILING)
        snprintf(errbuf, errlen, "invalid JSON: trailing data at byte %zu", w.offset);
    else
        snprintf(errbuf, errlen, "invalid JSON at byte %zu: %s", w.offset, w.what);
    return NULL;
}

enum bsc_err sim_json_get_u32(struct json_object *obj, const char *key, uint32_t min,
                              uint32_t max, uint32_t *out, bool *present, char *errbuf,
                              size_t errlen)
{
    struct json_object *v;
    int64_t n;

    if (present)
        *present = false;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (!json_object_is_type(v, json_type_int)) {
        snprintf(errbuf, errlen, "\"%s\" must be an integer", key);
        return BSC_EINVAL;
    }
    errno = 0;
    n = json_object_get_int64(v);
    if (n < (int64_t)min || n > (int64_t)max || errno) {
        snprintf(errbuf, errlen, "\"%s\" must be between %u and %u", key, min, max);
        return BSC_EINVAL;
    }
    *out = (uint32_t)n;
    if (present)
        *present = true;
    return BSC_OK;
}

struct bsc_str sim_json_get_str(struct json_object *obj, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

enum bsc_err sim_json_append(struct bsc_buf *out, struct json_object *obj)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

    if (!s)
        return BSC_ENOMEM;
    return bsc_buf_append(out, s, len);
}
