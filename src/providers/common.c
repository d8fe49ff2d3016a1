/* SPDX-License-Identifier: MIT */
/* common.c -- helpers shared by the adapters: header lines, OpenAI chunk frames, usage
 * objects and bounded JSON parsing. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/json_parse.h"
#include "providers/provider.h"
#include "stream/utf8.h"

#define PROV_JSON_DEPTH 64

/* "<name>: <prefix><value>" and its NUL, lengths known: one room check and the copies, not
 * five appends (four lines a request). */
static enum bsc_err header_put(struct bsc_buf *h, const char *name, size_t nl, const char *prefix,
                               size_t pl, const char *value, size_t vl)
{
    size_t n = nl + 2 + pl + vl + 1; /* the line and its NUL, counted in h->len */
    enum bsc_err err;
    char *o;

    if ((!h->p || h->cap - h->len < n) && (err = bsc_buf_reserve(h, n)) != BSC_OK)
        return err; /* <h> unchanged */
    o = h->p + h->len;
    memcpy(o, name, nl);
    o += nl;
    *o++ = ':';
    *o++ = ' ';
    memcpy(o, prefix, pl);
    o += pl;
    memcpy(o, value, vl);
    o[vl] = '\0';
    h->len += n;
    h->p[h->len] = '\0';
    return BSC_OK;
}

enum bsc_err prov_header_cat(struct bsc_buf *h, const char *name, const char *prefix,
                             const char *value)
{
    return header_put(h, name, strlen(name), prefix, strlen(prefix), value, strlen(value));
}

enum bsc_err prov_header(struct bsc_buf *h, const char *name, const char *fmt, ...)
{
    char value[4096];
    const char *v = value;
    va_list ap;
    int n;

    va_start(ap, fmt);
    /* "%s", the common case, tested as three bytes: a strcmp call cost more than the line. */
    if (fmt[0] == '%' && fmt[1] == 's' && fmt[2] == '\0') {
        v = va_arg(ap, const char *);
    } else if (!strchr(fmt, '%')) {
        v = fmt;
    } else {
        n = vsnprintf(value, sizeof(value), fmt, ap);
        if (n < 0 || (size_t)n >= sizeof(value)) {
            va_end(ap);
            return BSC_ELIMIT;
        }
    }
    va_end(ap);
    return header_put(h, name, strlen(name), "", 0, v, strlen(v));
}

enum bsc_err prov_extra_headers(struct bsc_buf *h, const struct cfg_provider *p)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; !err && i < p->n_headers; i++)
        err = prov_header(h, p->headers[i].name, "%s", p->headers[i].value);
    return err;
}

enum bsc_err prov_append_json(struct bsc_buf *out, struct json_object *o)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

    if (!s)
        return BSC_ENOMEM;
    /* json-c copies string bytes as they are, so an upstream string with ill-formed UTF-8
     * (an id, a model or tool name, tool arguments) would reach the client as it is. json-c
     * writes only ASCII outside strings: replacing ill-formed bytes keeps the JSON valid. */
    if (bsc_utf8_valid(s, len))
        return bsc_buf_append(out, s, len);
    return utf8_sanitize(out, s, len);
}

enum bsc_err prov_emit_chunk(struct bsc_buf *out, struct json_object *chunk)
{
    size_t start = out->len;
    enum bsc_err err = bsc_buf_append(out, "data: ", 6);

    if (!err)
        err = prov_append_json(out, chunk);
    if (!err)
        err = bsc_buf_append(out, "\n\n", 2);
    if (err)
        out->len = start;
    return err;
}

struct json_object *prov_chunk_new(const char *id, int64_t created, const char *model)
{
    struct json_object *c = json_object_new_object();

    json_object_object_add(c, "id", json_object_new_string(id ? id : "chatcmpl-bascule"));
    json_object_object_add(c, "object", json_object_new_string("chat.completion.chunk"));
    json_object_object_add(c, "created", json_object_new_int64(created));
    json_object_object_add(c, "model", json_object_new_string(model ? model : ""));
    json_object_object_add(c, "choices", json_object_new_array());
    return c;
}

void prov_chunk_choice(struct json_object *chunk, struct json_object *delta, const char *finish)
{
    struct json_object *choices, *ch = json_object_new_object();

    json_object_object_add(ch, "index", json_object_new_int(0));
    json_object_object_add(ch, "delta", delta ? delta : json_object_new_object());
    json_object_object_add(ch, "logprobs", NULL);
    json_object_object_add(ch, "finish_reason", finish ? json_object_new_string(finish) : NULL);
    if (json_object_object_get_ex(chunk, "choices", &choices))
        json_object_array_add(choices, ch);
    else
        json_object_put(ch);
}

struct json_object *prov_usage_json(const struct prov_usage *u)
{
    struct json_object *o = json_object_new_object(), *details;
    int64_t in = u->input_tokens > 0 ? u->input_tokens : 0;
    int64_t out = u->output_tokens > 0 ? u->output_tokens : 0;

    json_object_object_add(o, "prompt_tokens", json_object_new_int64(in));
    json_object_object_add(o, "completion_tokens", json_object_new_int64(out));
    /* Counts come from the upstream: a huge one saturates instead of overflowing. */
    json_object_object_add(o, "total_tokens",
                           json_object_new_int64(in > INT64_MAX - out ? INT64_MAX : in + out));
    if (u->cached_tokens >= 0) {
        details = json_object_new_object();
        json_object_object_add(details, "cached_tokens", json_object_new_int64(u->cached_tokens));
        json_object_object_add(o, "prompt_tokens_details", details);
    }
    return o;
}

struct json_object *prov_parse_json(struct bsc_str s)
{
    return bsc_json_parse_whole(s, PROV_JSON_DEPTH);
}

enum bsc_err prov_probe_chat_body(const struct prov_call *c, struct bsc_buf *body)
{
    enum bsc_err err = bsc_buf_append_cstr(body, "{\"model\":");

    if (!err)
        err = bsc_buf_append_json_str(body, bsc_str_cstr(c->target ? c->target->model : ""));
    if (!err)
        err = bsc_buf_append_cstr(body, ",\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
                                        "\"content\":\"ping\"}]}");
    return err;
}
