/* SPDX-License-Identifier: MIT */
/* json_parse.c -- see json_parse.h. */
#include "core/json_parse.h"

#include <limits.h>

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

struct json_object *bsc_json_parse_whole(struct bsc_str s, int depth)
{
    struct json_tokener *tok;
    struct json_object *o;
    size_t end;

    if (s.len > INT_MAX || !(tok = json_tokener_new_ex(depth)))
        return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, s.p ? s.p : "", (int)s.len);
    if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(o);
        o = NULL;
    }
    end = o ? json_tokener_get_parse_end(tok) : s.len;
    json_tokener_free(tok);
    for (; end < s.len; end++) {
        if (!is_blank(s.p[end])) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}
