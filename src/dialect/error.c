/* SPDX-License-Identifier: MIT */
/* error.c -- see error.h. Written by hand with a sticky error, so a body is either whole
 * or not there at all (a bounded buffer that fills up must not send half a JSON object). */
#include "dialect/error.h"

struct w {
    struct bsc_buf *b;
    size_t start; /* <b>'s length before the body: restored on error */
    enum bsc_err err;
};

static void lit(struct w *w, const char *s)
{
    if (!w->err)
        w->err = bsc_buf_append_cstr(w->b, s);
}

/* A JSON string, or null when <s> is NULL. */
static void str(struct w *w, const char *s)
{
    if (!s)
        lit(w, "null");
    else if (!w->err)
        w->err = bsc_buf_append_json_str(w->b, bsc_str_cstr(s));
}

static enum bsc_err end(struct w *w)
{
    if (w->err) {
        w->b->len = w->start;
        if (w->b->p)
            w->b->p[w->start] = '\0';
    }
    return w->err;
}

/* The members a typed failure adds after "error", then "request_id" and the closing brace. */
static void tail(struct w *w, const struct dialect_error *e)
{
    if (e->reason) {
        lit(w, ",\"status\":\"unavailable\",\"reason\":");
        str(w, e->reason);
        lit(w, e->retryable ? ",\"retryable\":true" : ",\"retryable\":false");
        lit(w, ",\"retry_after_ms\":");
        if (e->retry_after_ms >= 0 && !w->err)
            w->err = bsc_buf_appendf(w->b, "%lld", (long long)e->retry_after_ms);
        else
            lit(w, "null");
    }
    lit(w, ",\"request_id\":");
    str(w, e->request_id);
    lit(w, "}");
}

enum bsc_err dialect_openai_error(const struct dialect_error *e, struct bsc_buf *out)
{
    struct w w = {out, out->len, BSC_OK};

    lit(&w, "{\"error\":{\"message\":");
    str(&w, e->message ? e->message : "");
    lit(&w, ",\"type\":");
    str(&w, e->type ? e->type : "server_error");
    lit(&w, ",\"param\":");
    str(&w, e->param);
    lit(&w, ",\"code\":");
    str(&w, e->code);
    lit(&w, "}");
    tail(&w, e);
    return end(&w);
}

enum bsc_err dialect_anthropic_error(const struct dialect_error *e, struct bsc_buf *out)
{
    struct w w = {out, out->len, BSC_OK};

    lit(&w, "{\"type\":\"error\",\"error\":{\"type\":");
    str(&w, dialect_anthropic_error_type(e->status, e->type, e->code));
    lit(&w, ",\"message\":");
    str(&w, e->message ? e->message : "");
    lit(&w, "}");
    tail(&w, e);
    return end(&w);
}

/* An in-band error (no status) goes by the OpenAI type and code. */
static const char *anthropic_type_inband(struct bsc_str t, struct bsc_str c)
{
    if (bsc_str_eq(c, BSC_STR("server_is_overloaded")) ||
        bsc_str_eq(t, BSC_STR("overloaded_error")))
        return "overloaded_error";
    if (bsc_str_eq(t, BSC_STR("invalid_request_error")))
        return "invalid_request_error";
    if (bsc_str_eq(t, BSC_STR("authentication_error")) || bsc_str_eq(c, BSC_STR("invalid_api_key")))
        return "authentication_error";
    if (bsc_str_eq(t, BSC_STR("permission_error")))
        return "permission_error";
    if (bsc_str_eq(t, BSC_STR("not_found_error")) || bsc_str_eq(c, BSC_STR("model_not_found")))
        return "not_found_error";
    if (bsc_str_eq(t, BSC_STR("rate_limit_error")) ||
        bsc_str_eq(c, BSC_STR("rate_limit_exceeded")) ||
        bsc_str_eq(t, BSC_STR("insufficient_quota")))
        return "rate_limit_error";
    return "api_error";
}

const char *dialect_anthropic_error_type(int status, const char *openai_type, const char *code)
{
    switch (status) {
    case 401:
        return "authentication_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 429:
        return "rate_limit_error";
    case 503:
    case 529:
        return "overloaded_error";
    default:
        break;
    }
    if (status >= 400 && status < 500)
        return "invalid_request_error";
    if (status >= 500)
        return "api_error";
    return anthropic_type_inband(bsc_str_cstr(openai_type), bsc_str_cstr(code));
}

enum bsc_err dialect_openai_srv_error(int status, const char *type, const char *code,
                                      const char *message, const char *request_id,
                                      struct bsc_buf *out)
{
    struct dialect_error e = {
        .status = status,
        .type = type            ? type
                : status >= 500 ? "server_error"
                                : "invalid_request_error",
        .code = code,
        .message = message,
        .retry_after_ms = -1,
        .request_id = request_id,
    };

    return dialect_openai_error(&e, out);
}
