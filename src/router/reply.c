/* SPDX-License-Identifier: MIT */
/* reply.c -- error answers and their headers, and the one derivation of the retry signals
 * they carry (body "retryable"/"retry_after_ms", Retry-After, x-should-retry), so the
 * three never disagree. The bodies themselves are written by dialect/error.c. */
#include "router/reply.h"

#include <stdio.h>

void reply_set_retry(struct reply_error *e, const struct reply_cause *c)
{
    bool later = c->outlook == OUTLOOK_TIME ||
                 (c->outlook == OUTLOOK_KIND && c->kind != FAIL_NONE &&
                  fail_policy(c->kind)->client_should_retry);

    e->retryable = later;
    e->retry_after_ms = !later ? -1 : c->wait_ms >= 0 ? c->wait_ms : OUTLOOK_DEFAULT_RETRY_MS;
    e->should_retry = later && !c->attempted;
}

/* The wait to announce: none unless retryable, whatever the fields say. */
static int64_t announced_wait(const struct reply_error *e)
{
    return e->retryable ? e->retry_after_ms : -1;
}

struct dialect_error reply_error_view(const struct reply_error *e, const char *request_id)
{
    return (struct dialect_error){
        .status = e->status,
        .type = e->type,
        .code = e->code,
        .message = e->message,
        .param = e->param,
        .reason = e->reason,
        .retryable = e->retryable,
        .retry_after_ms = announced_wait(e),
        .request_id = request_id,
    };
}

enum bsc_err reply_error_body(const struct reply_error *e, const char *request_id,
                              struct bsc_buf *b)
{
    struct dialect_error d = reply_error_view(e, request_id);

    return dialect_openai_error(&d, b);
}

void reply_error_send(struct srv_req *sreq, const struct reply_error *e,
                      const struct srv_header *extra, size_t n_extra, reply_body_fn *body_fn)
{
    struct srv_header h[16];
    size_t n = 0;
    char ra_s[32], ra_ms[32];
    struct bsc_buf b;

    for (size_t i = 0; i < n_extra && n < BSC_ARRAY_LEN(h) - 3; i++)
        h[n++] = extra[i];
    h[n++] = (struct srv_header){BSC_STR("x-should-retry"), e->retryable && e->should_retry
                                                                ? BSC_STR("true")
                                                                : BSC_STR("false")};
    if (announced_wait(e) >= 0) {
        snprintf(ra_s, sizeof(ra_s), "%lld", (long long)((e->retry_after_ms + 999) / 1000));
        snprintf(ra_ms, sizeof(ra_ms), "%lld", (long long)e->retry_after_ms);
        h[n++] = (struct srv_header){BSC_STR("Retry-After"), bsc_str_cstr(ra_s)};
        h[n++] = (struct srv_header){BSC_STR("retry-after-ms"), bsc_str_cstr(ra_ms)};
    }
    bsc_buf_init(&b, 16384);
    (body_fn ? body_fn : reply_error_body)(e, srv_req_id(sreq), &b);
    srv_resp_send(sreq, e->status, "application/json", h, n, b.p, b.len);
    bsc_buf_cleanup(&b);
}
