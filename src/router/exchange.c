/* SPDX-License-Identifier: MIT */
/* exchange.c -- the upstream side of one attempt: the adapter builds the request, the
 * transfer runs on the worker's curl multi, the head and body come back through the
 * callbacks below. A stream is parsed as SSE and each event goes through the adapter,
 * which emits OpenAI frames; the first frame that reaches the client is the commit point
 * (deliver_commit). Failures are recorded here and classified once the transfer is over;
 * what to do about them is decide.c's business. Callbacks never start a new transfer from
 * inside curl: an attempt failed mid-callback continues on the next loop turn. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/redact.h"
#include "router/contract.h"
#include "router/internal.h"
#include "router/trace.h"

#define HTTP_URL_MAX     8192
#define HTTP_HEADERS_MAX (64u * 1024u)

static struct prov_call make_call(const struct request *r)
{
    return (struct prov_call){
        .op = r->op,
        .provider = r->target->provider,
        .target = r->target,
        .key = r->key_idx >= 0 ? r->target->provider->keys[r->key_idx] : NULL,
        .req = r->trim.dropped > 0 ? r->trim.json : r->json,
        .raw = r->trim.dropped <= 0 ? r->body
               : r->trim.body.len ? bsc_buf_str(&r->trim.body) : BSC_STR_NULL,
        .model_span = r->trim.dropped > 0 ? r->trim.model_span : r->model_span,
        /* a trimmed request goes through the translation, never as the client's bytes */
        .native = r->native.body.p && r->trim.dropped <= 0 ? &r->native : NULL,
        .stream = r->stream,
        .include_usage = r->include_usage,
        .request_id = r->id,
        .created = r->created,
    };
}

static void fail_local(struct fail_info *f, enum fail_kind kind, const char *fmt, ...)
    BSC_PRINTF(3, 4);

static void fail_local(struct fail_info *f, enum fail_kind kind, const char *fmt, ...)
{
    va_list ap;

    fail_info_init(f);
    f->kind = kind;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    va_end(ap);
}

/* Masks the snapshot's secrets in the texts of <f>. Upstream words reach a client body, a
 * stream error event or a log line only through a struct fail_info filled by an adapter,
 * so this is the one door to guard (docs/internals/secrets.md). */
static void scrub_fail(const struct request *r, struct fail_info *f)
{
    const struct bsc_redact *rd = r->cfg ? r->cfg->secrets : NULL;

    bsc_redact_cstr(rd, f->message, sizeof(f->message));
    bsc_redact_cstr(rd, f->code, sizeof(f->code));
    bsc_redact_cstr(rd, f->type, sizeof(f->type));
}

/* ---- the stream ---- */

/* An error event in the stream. One that refuses the request itself (content policy, an
 * invalid request) is about what the client sent, even after the commit point. */
static void stream_error(struct request *r)
{
    r->stream_failed = true;
    r->stream_fail.request_caused = fail_policy(r->stream_fail.kind)->client_fault;
}

static int on_sse_event(void *ud, struct bsc_str event, struct bsc_str data)
{
    struct request *r = ud;
    enum prov_stream_status st;

    st = r->ops->stream_event(r->prov_st, event, data, &r->conv, &r->stream_fail);
    if (st == PROV_STREAM_ERROR) {
        scrub_fail(r, &r->stream_fail);
        stream_error(r);
        return 1;
    }
    if (st == PROV_STREAM_DONE) {
        r->saw_done = true;
        return 1; /* nothing after the end matters */
    }
    return 0;
}

static int on_sse_comment(void *ud, struct bsc_str text)
{
    (void)ud;
    (void)text; /* upstream keep-alives are not relayed */
    return 0;
}

static int on_sse_line(void *ud, struct bsc_str line)
{
    struct request *r = ud;
    enum prov_stream_status st;

    if (!r->ops->stream_line)
        return 0;
    st = r->ops->stream_line(r->prov_st, line, &r->conv, &r->stream_fail);
    if (st == PROV_STREAM_ERROR) {
        scrub_fail(r, &r->stream_fail);
        stream_error(r);
        return 1;
    }
    return 0;
}

static const struct sse_callbacks sse_cb = {on_sse_event, on_sse_comment, on_sse_line};

static bool start_stream(struct request *r)
{
    struct prov_call call = make_call(r);

    r->prov_st = calloc(1, r->ops->stream_size ? r->ops->stream_size : 1);
    if (!r->prov_st)
        return false;
    r->ops->stream_init(r->prov_st, &call);
    r->prov_st_live = true;
    sse_parser_init(&r->sse, REQ_MAX_SSE_EVENT, &sse_cb, r);
    r->mode = BODY_SSE;
    return true;
}

/* ---- transfer callbacks ---- */

static bool is_sse_type(const char *ctype)
{
    return strncasecmp(ctype, "text/event-stream", 17) == 0;
}

static void save_header(const struct up_transfer *t, const char *name, char *dst, size_t len)
{
    struct bsc_str v = up_header(t, bsc_str_cstr(name));
    size_t n = v.len < len - 1 ? v.len : len - 1;

    if (n)
        memcpy(dst, v.p, n);
    dst[n] = '\0';
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct request *r = ud;

    struct bsc_str cl = up_header(t, BSC_STR("content-length"));
    unsigned long long len;

    r->up_status = status;
    if (bsc_str_to_u64(cl, &len) && len < r->resp.max)
        bsc_buf_reserve(&r->resp, (size_t)len); /* one allocation for the whole body */
    save_header(t, "content-type", r->up_ctype, sizeof(r->up_ctype));
    save_header(t, "retry-after", r->up_retry_after, sizeof(r->up_retry_after));
    save_header(t, "retry-after-ms", r->up_retry_after_ms, sizeof(r->up_retry_after_ms));
    if (!r->up_retry_after_ms[0]) /* Azure's spelling */
        save_header(t, "x-ms-retry-after-ms", r->up_retry_after_ms, sizeof(r->up_retry_after_ms));
    r->mode = BODY_BUFFER;
    if (r->stream && status >= 200 && status < 300 && is_sse_type(r->up_ctype) &&
        !start_stream(r))
        fail_local(&r->stream_fail, FAIL_SERVER_ERROR, "out of memory"), r->stream_failed = true;
}

/* Fails the running attempt from inside a transfer callback. */
static void abort_from_callback(struct request *r)
{
    r->stream_failed = true;
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    req__arm_timer(r, 0); /* continue on the next loop turn, outside curl */
}

static bool on_stream_data(struct request *r, const char *p, size_t len)
{
    if (r->saw_done || r->stream_failed)
        return false;
    if (sse_parser_feed(&r->sse, p, len) < 0 && !r->stream_failed && !r->saw_done) {
        fail_local(&r->stream_fail, r->committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                   "the upstream stream could not be parsed");
        r->stream_failed = true;
    }
    if (r->stream_failed) {
        abort_from_callback(r);
        return false;
    }
    if (r->buffering)
        contract_feed_frames(r, bsc_buf_str(&r->conv));
    if (deliver_convert(r) != BSC_OK) {
        fail_local(&r->stream_fail, r->committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                   "the stream could not be translated");
        abort_from_callback(r);
        return false;
    }
    if (r->buffering)
        return false; /* held until the whole stream is in and checked */
    if (r->out.len == 0)
        return false;
    if (!r->committed)
        deliver_commit(r);
    if (deliver_stream_over(r, false)) { /* limits.max_stream_bytes or max_stream_ms */
        abort_from_callback(r);
        return false;
    }
    /* Committed: the envelope's deadline (as tightened by the request) becomes the longest
     * gap allowed between events, so a healthy long stream is not cut. */
    deliver_stream_arm(r, r->env.deadline_ms - r->env.start_ms);
    return deliver_flush(r);
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct request *r = ud;

    (void)t;
    if (r->mode == BODY_SSE)
        return on_stream_data(r, p, len);
    if (bsc_buf_append(&r->resp, p, len) != BSC_OK) {
        fail_local(&r->stream_fail, FAIL_SERVER_ERROR, "the upstream answer passed %zu bytes",
                   r->resp.max);
        abort_from_callback(r);
    }
    return false;
}

/* EOF of a stream: the adapter decides whether it ended properly. */
static void finish_stream(struct request *r)
{
    bool pending = false;
    struct fail_info f;

    sse_parser_finish(&r->sse, &pending);
    if (r->buffering)
        contract_feed_frames(r, bsc_buf_str(&r->conv));
    if (!r->saw_done && !r->stream_failed) {
        if (r->ops->stream_end(r->prov_st, &r->conv, &f) == PROV_STREAM_DONE) {
            r->saw_done = true;
        } else if (r->committed || r->conv.len) {
            scrub_fail(r, &f);
            r->stream_fail = f;
            r->stream_failed = true;
        }
    }
    if (r->buffering) {
        contract_feed_frames(r, bsc_buf_str(&r->conv));
        deliver_convert(r);
        return; /* st_attempt checks and releases it */
    }
    if (deliver_convert(r) == BSC_OK && r->out.len && !r->committed && !r->stream_failed)
        deliver_commit(r);
    if (r->committed)
        deliver_flush(r);
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct request *r = ud;

    (void)t;
    r->xfer = NULL;
    r->up_res = res;
    if (res != UP_OK)
        fail_local(&r->fail, FAIL_NONE, "%s: %s", up_result_name(res), detail ? detail : "");
    if (r->mode == BODY_SSE && !r->saw_done && !r->stream_failed)
        finish_stream(r);
    else if (r->mode == BODY_SSE && r->saw_done && !r->buffering) {
        if (deliver_convert(r) == BSC_OK && r->out.len && !r->committed)
            deliver_commit(r);
        deliver_flush(r);
    }
    req__run(r);
}

static const struct up_callbacks up_cb = {on_head, on_data, on_done};

/* ---- starting ---- */

enum bsc_err xchg_start(struct request *r)
{
    struct prov_call call;
    const char *lines[UP_REQUEST_MAX_HEADERS];
    size_t n = 0;
    struct up_request ureq;
    char why[256] = "";
    enum bsc_err err;

    r->ops = prov_ops_for(r->target->provider->kind);
    err = trim_req_attempt(r); /* context.overflow: trim, against this target's window */
    if (err)
        return err;
    if (r->ops != prov_ops_for(CFG_PROV_OPENAI) && !req__json(r)) /* translation needs it */
        return BSC_ENOMEM;
    call = make_call(r);
    /* A field only the client's own dialect can honour (anthropic-inbound.md §2) makes the
     * other kinds ineligible for this request, exactly like an untranslatable one. */
    if (call.native && call.native->required[0] && r->target->provider->kind != call.native->kind) {
        snprintf(why, sizeof(why), "%s", call.native->required);
        err = BSC_EINVAL;
    } else {
        err = r->ops->build(&call, &r->http, why, sizeof(why));
    }
    if (err == BSC_EINVAL) {
        fail_local(&r->fail, FAIL_CONTRACT_FAILURE, "%s cannot take this request: %s",
                   r->target->id, why[0] ? why : "not expressible in its API");
        return err;
    }
    if (!err)
        err = prov_header(&r->http.headers, "X-Request-Id", "%s", r->id);
    if (!err)
        err = req_trace_header(r, &r->http.headers); /* this attempt's span, upstream */
    if (err)
        return err;
    for (size_t off = 0; off < r->http.headers.len && n < BSC_ARRAY_LEN(lines);) {
        lines[n++] = r->http.headers.p + off;
        off += strlen(r->http.headers.p + off) + 1;
    }
    ureq = (struct up_request){
        .url = r->http.url.p,
        .method = r->http.method,
        .headers = lines,
        .n_headers = n,
        .body = r->http.body.p,
        .body_len = r->http.body.len,
        .connect_timeout_ms = r->target->provider->connect_timeout_ms,
        .fresh_connection = r->env.side_effects == CFG_SE_WRITE_POSSIBLE,
    };
    return up_start(r->w->up, &ureq, &up_cb, r, &r->xfer);
}

void xchg_reset(struct request *r)
{
    if (r->mode == BODY_SSE)
        sse_parser_cleanup(&r->sse);
    if (r->prov_st_live)
        r->ops->stream_cleanup(r->prov_st);
    r->prov_st_live = false;
    BSC_FREE(r->prov_st);
    r->mode = BODY_NONE;
    r->up_status = 0;
    r->up_ctype[0] = '\0';
    r->up_retry_after[0] = r->up_retry_after_ms[0] = '\0';
    r->saw_done = false;
    r->timed_out = false;
    r->stream_failed = false;
    r->up_res = UP_OK;
    fail_info_init(&r->fail);
    fail_info_init(&r->stream_fail);
    r->usage = (struct prov_usage){-1, -1, -1};
    bsc_buf_reset(&r->resp);
    bsc_buf_reset(&r->answer);
    bsc_buf_reset(&r->conv);
    bsc_buf_reset(&r->out);
    contract_reset_stream(r);
    if (!r->committed)
        deliver_down_reset(r);
    if (!r->http.url.max) {
        bsc_buf_init(&r->http.url, HTTP_URL_MAX);
        bsc_buf_init(&r->http.headers, HTTP_HEADERS_MAX);
        bsc_buf_init(&r->http.body, r->cfg->limits.max_body_bytes * 2 + 65536);
        bsc_buf_reserve(&r->http.url, 256); /* one allocation each for the usual sizes */
        bsc_buf_reserve(&r->http.headers, 512);
    }
    bsc_buf_reset(&r->http.url);
    bsc_buf_reset(&r->http.headers);
    bsc_buf_reset(&r->http.body);
}

/* ---- classification ---- */

static void classify_transport(struct request *r)
{
    static const enum fail_transport map[UP_RESULT_COUNT] = {
        [UP_OK] = FT_OK,           [UP_CONNECT] = FT_CONNECT,   [UP_DNS] = FT_DNS,
        [UP_TIMEOUT] = FT_TIMEOUT, [UP_RESET] = FT_RESET,       [UP_TLS] = FT_TLS,
        [UP_PROTOCOL] = FT_PROTOCOL, [UP_TOO_LARGE] = FT_PROTOCOL,
    };
    char msg[FAIL_TEXT_MESSAGE];

    snprintf(msg, sizeof(msg), "%s", r->fail.message);
    fail_from_transport(map[r->up_res], r->up_status != 0 || r->up_res == UP_RESET, &r->fail);
    snprintf(r->fail.message, sizeof(r->fail.message), "%s", msg);
    fail_after_head(&r->fail, r->up_status); /* a reset mid-answer is not a connect failure */
}

/* True when <body> starts like an SSE stream (after blank space): a data, event, id or
 * retry field, or a comment. */
static bool looks_like_sse(struct bsc_str body)
{
    static const char *const starts[] = {"data:", "event:", "id:", "retry:", ":"};
    size_t i = 0;

    while (i < body.len && (body.p[i] == ' ' || body.p[i] == '\r' || body.p[i] == '\n'))
        i++;
    for (size_t k = 0; k < BSC_ARRAY_LEN(starts); k++) {
        size_t n = strlen(starts[k]);
        if (body.len - i >= n && memcmp(body.p + i, starts[k], n) == 0)
            return true;
    }
    return false;
}

/* A 2xx answer, well-formed, but in the other shape than the request asked for (docs/
 * internals/taxonomy.md, "Answers in the other shape"): the upstream read the request
 * differently from the gateway. The client's bytes can make that happen at will, so it
 * is never held against the target's breaker; no replay on the same target (it would
 * read the request the same way), other targets may be tried. */
static void fail_other_shape(struct request *r, const char *what)
{
    fail_local(&r->fail, FAIL_UNKNOWN, "%s answered %s", r->target->id, what);
    r->fail.status = r->up_status;
    r->fail.request_caused = true;
}

void xchg_classify(struct request *r)
{
    struct prov_call call = make_call(r);
    struct prov_err_input in;

    if (r->timed_out) {
        fail_from_transport(FT_TIMEOUT, true, &r->fail);
        snprintf(r->fail.message, sizeof(r->fail.message), "no answer from %s within %llu ms",
                 r->target->id,
                 (unsigned long long)((bsc_now_us() - req__cur_attempt(r)->start_us) / 1000));
        return;
    }
    if (r->stream_failed) {
        r->fail = r->stream_fail;
        if (r->fail.kind == FAIL_NONE || r->fail.kind == FAIL_PARTIAL_OUTPUT) {
            r->fail.kind = FAIL_SERVER_ERROR; /* nothing was committed: retryable */
            if (r->up_res != UP_OK) /* the stream was cut: say how */
                classify_transport(r);
        }
        return;
    }
    if (r->up_res != UP_OK) {
        classify_transport(r);
        return;
    }
    if (r->mode == BODY_SSE && r->saw_done) { /* a buffered stream, complete */
        fail_info_init(&r->fail);
        r->fail.status = r->up_status;
        return;
    }
    if (r->mode == BODY_SSE) {
        fail_local(&r->fail, FAIL_SERVER_ERROR, "the stream ended before any event");
        r->fail.status = r->up_status;
        return;
    }
    in = (struct prov_err_input){
        .status = r->up_status,
        .body = bsc_buf_str(&r->resp),
        .content_type = bsc_str_cstr(r->up_ctype),
        .retry_after = bsc_str_cstr(r->up_retry_after),
        .retry_after_ms = bsc_str_cstr(r->up_retry_after_ms),
        .now_wall_ms = bsc_wall_ms(),
        .base_url = bsc_str_cstr(r->target->provider->base_url),
        .profile = bsc_str_cstr(cfg_profile_name(r->target->provider->profile)),
    };
    r->ops->classify(&in, &r->fail);
    scrub_fail(r, &r->fail);
    if (r->fail.kind == FAIL_NONE && (r->up_status < 200 || r->up_status >= 300)) {
        r->fail.kind = fail_kind_from_status(r->up_status);
        r->fail.status = r->up_status;
    }
    if (r->fail.kind != FAIL_NONE)
        return;
    if (!r->stream && is_sse_type(r->up_ctype) && looks_like_sse(bsc_buf_str(&r->resp))) {
        fail_other_shape(r, "with a stream to a request for a single answer");
        return;
    }
    if (r->ops->map_response(&call, bsc_buf_str(&r->resp), &r->answer, &r->usage, &r->fail) !=
        BSC_OK) {
        if (r->fail.kind == FAIL_NONE)
            fail_local(&r->fail, FAIL_SERVER_ERROR, "the upstream answer could not be read");
        scrub_fail(r, &r->fail);
        r->fail.status = r->up_status;
        return;
    }
    if (r->stream) { /* a complete single answer to a request for a stream */
        fail_other_shape(r, "with a single answer to a request for a stream");
        return;
    }
    if (r->answer.len == 0) { /* already OpenAI-shaped: take the buffer, no copy */
        struct bsc_buf tmp = r->answer;
        r->answer = r->resp;
        r->resp = tmp;
    }
}

void xchg_cleanup(struct request *r)
{
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (r->mode == BODY_SSE)
        sse_parser_cleanup(&r->sse);
    r->mode = BODY_NONE;
    if (r->prov_st_live)
        r->ops->stream_cleanup(r->prov_st);
    r->prov_st_live = false;
    BSC_FREE(r->prov_st);
    bsc_buf_cleanup(&r->http.url);
    bsc_buf_cleanup(&r->http.headers);
    bsc_buf_cleanup(&r->http.body);
    bsc_buf_cleanup(&r->resp);
    bsc_buf_cleanup(&r->answer);
    bsc_buf_cleanup(&r->conv);
    bsc_buf_cleanup(&r->out);
}
