/* SPDX-License-Identifier: MIT */
/* sjson.c -- strict json-c parsing and typed getters for bascule-sim. */
#include "sjson.h"

#include <errno.h>

#include "core/compat.h"

struct json_object *sim_json_parse(struct bsc_str text, char *errbuf, size_t errlen)
{
    struct json_tokener *tok;
    struct json_object *obj;
    enum json_tokener_error jerr;
    size_t end;

    if (text.len == 0 || text.len > INT32_MAX) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s", text.len ? "body too large" : "empty body");
        return NULL;
    }
    tok = json_tokener_new_ex(SIM_JSON_MAX_DEPTH);
    if (!tok) {
        if (errbuf)
            snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    obj = json_tokener_parse_ex(tok, text.p, (int)text.len);
    jerr = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    if (jerr == json_tokener_continue) {
        /* Numbers at the very end wait for a delimiter: a final NUL settles them. */
        obj = json_tokener_parse_ex(tok, "", 1);
        jerr = json_tokener_get_error(tok);
        end = text.len;
    }
    if (jerr != json_tokener_success || !obj) {
        if (errbuf)
            snprintf(errbuf, errlen, "invalid JSON at byte %zu: %s", end,
                     json_tokener_error_desc(jerr == json_tokener_success
                                                 ? json_tokener_error_parse_eof
                                                 : jerr));
        json_object_put(obj);
        json_tokener_free(tok);
        return NULL;
    }
    for (; end < text.len; end++) {
        char c = text.p[end];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            if (errbuf)
                snprintf(errbuf, errlen, "invalid JSON: trailing data at byte %zu", end);
            json_object_put(obj);
            json_tokener_free(tok);
            return NULL;
        }
    }
    json_tokener_free(tok);
    return obj;
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
