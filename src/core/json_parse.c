/* SPDX-License-Identifier: MIT */
/* json_parse.c -- see json_parse.h. json-c parses incrementally: a text that ends inside
 * a value reports "continue" rather than an error, so that case is settled here once
 * (a final NUL ends a top-level number; anything else is incomplete). */
#include "core/json_parse.h"

#include <limits.h>

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void bsc_json_line_col(struct bsc_str s, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < s.len; i++) {
        if (s.p[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static struct json_object *fail(struct bsc_json_where *w, struct bsc_str s, enum bsc_json_why why,
                                size_t off, const char *what)
{
    if (w) {
        w->why = why;
        w->offset = off;
        w->what = what;
        bsc_json_line_col(s, off, &w->line, &w->col);
    }
    return NULL;
}

/* Runs json-c over <s>. Returns the value, or NULL with *<why>, *<off> and *<what> set. */
static struct json_object *run(struct json_tokener *tok, struct bsc_str s, enum bsc_json_why *why,
                               size_t *off, const char **what)
{
    struct json_object *o = json_tokener_parse_ex(tok, s.p ? s.p : "", (int)s.len);
    enum json_tokener_error e = json_tokener_get_error(tok);

    *off = json_tokener_get_parse_end(tok);
    if (e == json_tokener_continue) {
        /* The input so far is a valid prefix; a NUL ends a trailing number. */
        o = json_tokener_parse_ex(tok, "", 1);
        e = json_tokener_get_error(tok);
        if (e != json_tokener_success || !o) {
            json_object_put(o);
            *why = BSC_JSONP_INCOMPLETE;
            *off = s.len;
            *what = json_tokener_error_desc(json_tokener_error_parse_eof);
            return NULL;
        }
        *off = s.len;
    }
    if (e == json_tokener_success && !o) {
        *why = BSC_JSONP_NULL;
        *what = "the value is null";
        return NULL;
    }
    if (e != json_tokener_success) {
        json_object_put(o);
        *why = e == json_tokener_error_depth ? BSC_JSONP_DEPTH : BSC_JSONP_SYNTAX;
        *what = json_tokener_error_desc(e);
        return NULL;
    }
    return o;
}

struct json_object *bsc_json_parse(struct bsc_str s, int depth, unsigned flags,
                                   struct bsc_json_where *where)
{
    struct json_tokener *tok;
    struct json_object *o;
    enum bsc_json_why why = BSC_JSONP_OK;
    const char *what = NULL;
    size_t end;

    if (where)
        *where = (struct bsc_json_where){.why = BSC_JSONP_OK, .line = 1, .col = 1};
    if (s.len > INT_MAX)
        return fail(where, s, BSC_JSONP_TOO_LONG, 0, "text too long");
    tok = json_tokener_new_ex(depth);
    if (!tok)
        return fail(where, s, BSC_JSONP_NOMEM, 0, "out of memory");
    /* json-c stops after the value; what follows is judged below, so it can be named. */
    json_tokener_set_flags(tok, ((flags & BSC_JSON_LENIENT) ? 0 : JSON_TOKENER_STRICT) |
                                    JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    ((flags & BSC_JSON_UTF8) ? JSON_TOKENER_VALIDATE_UTF8 : 0));
    o = run(tok, s, &why, &end, &what);
    json_tokener_free(tok);
    if (!o)
        return fail(where, s, why, end, what);
    for (; !(flags & BSC_JSON_LENIENT) && end < s.len; end++) {
        if (!is_blank(s.p[end])) {
            json_object_put(o);
            return fail(where, s, BSC_JSONP_TRAILING, end, "unexpected data after the value");
        }
    }
    return o;
}

struct json_object *bsc_json_parse_whole(struct bsc_str s, int depth)
{
    return bsc_json_parse(s, depth, 0, NULL);
}
