/* SPDX-License-Identifier: MIT */
/* exchange.c -- the upstream side of one attempt: the adapter builds the request, the
 * transfer runs on the worker's curl multi, the head and body come back through the
 * callbacks below. A stream is parsed as SSE and each event goes through the adapter,
 * which emits OpenAI frames; the first frame ready for the client is an event (first_frame)
 * on which request.c commits. Failures are recorded here and classified once the transfer
 * is over; what to do about them is decide.c's business. Callbacks never start a new
 * transfer from inside curl: an attempt failed mid-callback continues on the next loop
 * turn. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/json_scan.h"
#include "core/redact.h"
#include "router/contract.h"
#include "router/deliver.h"
#include "router/exchange.h"
#include "router/input.h"
#include "router/internal.h"
#include "router/req_wake.h"
#include "router/resume.h"
#include "router/trace.h"
#include "router/trim.h"

#define HTTP_URL_MAX     8192
#define HTTP_HEADERS_MAX (64u * 1024u)

static struct prov_call make_call(const struct request *r)
{
    struct json_object *prefill = resume_request(r);

    if (prefill) /* a continuation by prefill: the request with the text already sent */
        return (struct prov_call){
            .op = r->input.op,
            .provider = r->cur.target->provider,
            .target = r->cur.target,
            .key = r->cur.key_idx >= 0 ? r->cur.target->provider->keys[r->cur.key_idx] : NULL,
            .req = prefill,
            .stream = r->input.stream,
            .include_usage = r->input.include_usage,
            .request_id = r->ident.id,
            .created = r->ident.created,
        };
    return (struct prov_call){
        .op = r->input.op,
        .provider = r->cur.target->provider,
        .target = r->cur.target,
        .key = r->cur.key_idx >= 0 ? r->cur.target->provider->keys[r->cur.key_idx] : NULL,
        .req = r->trim.dropped > 0 ? r->trim.json : r->input.json,
        .raw = r->trim.dropped <= 0 ? r->input.body
               : r->trim.body.len ? bsc_buf_str(&r->trim.body) : BSC_STR_NULL,
        .model_span = r->trim.dropped > 0 ? r->trim.model_span : r->input.model_span,
        /* the client's bytes (a continuation's prefill added), never a trimmed request's */
        .native = resume_native(r),
        .stream = r->input.stream,
        .include_usage = r->input.include_usage,
        .request_id = r->ident.id,
        .created = r->ident.created,
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

    /* An empty text has nothing to mask (bsc_redact_cstr would leave it as it is): an answer
     * that did not fail has all three empty, and skips three calls. */
    if (f->message[0])
        bsc_redact_cstr(rd, f->message, sizeof(f->message));
    if (f->code[0])
        bsc_redact_cstr(rd, f->code, sizeof(f->code));
    if (f->type[0])
        bsc_redact_cstr(rd, f->type, sizeof(f->type));
}

/* ---- the stream ---- */

/* An error event in the stream. One that refuses the request itself (content policy, an
 * invalid request) is about what the client sent, even after the commit point. */
static void stream_error(struct request *r)
{
    r->x.stream_failed = true;
    r->x.stream_fail.request_caused = fail_policy(r->x.stream_fail.kind)->client_fault;
}

static int on_sse_event(void *ud, struct bsc_str event, struct bsc_str data)
{
    struct request *r = ud;
    enum prov_stream_status st;

    st = r->x.ops->stream_event(r->x.prov_st, event, data, &r->x.conv, &r->x.stream_fail);
    if (st == PROV_STREAM_ERROR) {
        scrub_fail(r, &r->x.stream_fail);
        stream_error(r);
        return 1;
    }
    if (st == PROV_STREAM_DONE) {
        r->x.saw_done = true;
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

    if (!r->x.ops->stream_line)
        return 0;
    st = r->x.ops->stream_line(r->x.prov_st, line, &r->x.conv, &r->x.stream_fail);
    if (st == PROV_STREAM_ERROR) {
        scrub_fail(r, &r->x.stream_fail);
        stream_error(r);
        return 1;
    }
    return 0;
}

static const struct sse_callbacks sse_cb = {on_sse_event, on_sse_comment, on_sse_line};

static bool start_stream(struct request *r)
{
    struct prov_call call = make_call(r);

    r->x.prov_st = calloc(1, r->x.ops->stream_size ? r->x.ops->stream_size : 1);
    if (!r->x.prov_st)
        return false;
    r->x.ops->stream_init(r->x.prov_st, &call);
    r->x.prov_st_live = true;
    sse_parser_init(&r->x.sse, REQ_MAX_SSE_EVENT, &sse_cb, r);
    r->x.mode = BODY_SSE;
    return true;
}

/* ---- transfer callbacks ---- */

/* An SSE stream, or the binary stream type the adapter reads itself (prov_ops.stream_type). */
static bool is_stream_type(const struct prov_ops *ops, const char *ctype)
{
    return strncasecmp(ctype, "text/event-stream", 17) == 0 ||
           (ops->stream_bytes && strncasecmp(ctype, ops->stream_type, strlen(ops->stream_type)) == 0);
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

    r->x.up_status = status;
    if (bsc_str_to_u64(cl, &len) && len < r->x.resp.max)
        bsc_buf_reserve(&r->x.resp, (size_t)len); /* one allocation for the whole body */
    save_header(t, "content-type", r->x.up_ctype, sizeof(r->x.up_ctype));
    r->x.mode = BODY_BUFFER;
    if (r->input.stream && status >= 200 && status < 300 && is_stream_type(r->x.ops, r->x.up_ctype) &&
        !start_stream(r)) {
        fail_local(&r->x.stream_fail, FAIL_SERVER_ERROR, "out of memory");
        r->x.stream_failed = true;
    }
}

/* Fails the running attempt from inside a transfer callback. */
static void abort_from_callback(struct request *r)
{
    r->x.stream_failed = true;
    if (r->x.xfer) {
        up_cancel(r->x.xfer);
        r->x.xfer = NULL;
    }
    req_wake_timer(r, 0); /* continue on the next loop turn, outside curl */
}

/* The first client bytes of a stream are ready: an event. request.c decides the commit
 * (st_attempt), here inside curl's write callback, before they are flushed. */
static void first_frame(struct request *r)
{
    r->x.first_frame = true;
    req_wake_run(r);
}

/* Whether the frames in <conv> carry generated text: a chat delta's content or tool
 * arguments, or a typed event's non-empty "delta" (the Responses API's text deltas). */
static bool has_content(struct bsc_str conv)
{
    const char *d;

    if (!conv.len)
        return false;
    if (deliver_text_frames(conv))
        return true;
    d = bsc_str_find(conv, BSC_STR("\"delta\":\""));
    return d && d + 9 < conv.p + conv.len && d[9] != '"';
}

static bool on_stream_data(struct request *r, const char *p, size_t len)
{
    if (r->x.saw_done || r->x.stream_failed)
        return false;
    if (r->x.ops->stream_bytes) { /* a binary stream: the adapter frames it */
        enum prov_stream_status st = r->x.ops->stream_bytes(r->x.prov_st, bsc_str_make(p, len),
                                                            &r->x.conv, &r->x.stream_fail);

        if (st == PROV_STREAM_ERROR) {
            scrub_fail(r, &r->x.stream_fail);
            stream_error(r);
        } else if (st == PROV_STREAM_DONE) {
            r->x.saw_done = true;
        }
    } else if (sse_parser_feed(&r->x.sse, p, len) < 0 && !r->x.stream_failed && !r->x.saw_done) {
        fail_local(&r->x.stream_fail, r->d.committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                   "the upstream stream could not be parsed");
        r->x.stream_failed = true;
    }
    if (r->x.stream_failed) {
        abort_from_callback(r);
        return false;
    }
    if (r->buffering)
        contract_feed_frames(r, bsc_buf_str(&r->x.conv));
    if (!r->x.content_seen && has_content(bsc_buf_str(&r->x.conv)))
        r->x.content_seen = true;
    if (deliver_convert(r) != BSC_OK) {
        fail_local(&r->x.stream_fail, r->d.committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                   "the stream could not be translated");
        abort_from_callback(r);
        return false;
    }
    if (r->buffering)
        return false; /* held until the whole stream is in and checked */
    if (r->d.out.len == 0)
        return false;
    if (!r->d.committed && r->x.ftt_armed && !r->x.content_seen)
        return false; /* envelope.first_token_timeout_ms: held until the first content */
    if (!r->d.committed || r->m.state == REQ_ST_ATTEMPT) /* a continuation's first bytes */
        first_frame(r);
    if (!r->d.committed || r->m.state != REQ_ST_RELAY)
        return false; /* the machine did not take the commit (the client went away) */
    if (deliver_stream_over(r, false)) { /* limits.max_stream_bytes or max_stream_ms */
        abort_from_callback(r);
        return false;
    }
    /* Committed: envelope.stream_idle_timeout_ms (by default the deadline as the request
     * tightened it) is the longest gap allowed between events, so a healthy long stream is
     * not cut. */
    deliver_stream_arm(r, r->env.stream_idle_ms);
    if (r->x.saw_done && r->g.idem_active)
        return false; /* the last frames wait for the idempotency record (st_relay) */
    return deliver_flush(r);
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct request *r = ud;

    (void)t;
    if (r->x.mode == BODY_SSE)
        return on_stream_data(r, p, len);
    if (bsc_buf_append(&r->x.resp, p, len) != BSC_OK) {
        fail_local(&r->x.stream_fail, FAIL_SERVER_ERROR, "the upstream answer passed %zu bytes",
                   r->x.resp.max);
        abort_from_callback(r);
    }
    return false;
}

/* EOF of a stream: the adapter decides whether it ended properly. */
static void finish_stream(struct request *r)
{
    bool pending = false;
    struct fail_info f;

    fail_local(&f, FAIL_PARTIAL_OUTPUT, "the upstream stream was interrupted before its end");
    sse_parser_finish(&r->x.sse, &pending);
    if (r->buffering)
        contract_feed_frames(r, bsc_buf_str(&r->x.conv));
    if (!r->x.saw_done && !r->x.stream_failed) {
        /* The adapter judges the end only when the body ended cleanly: a stream complete by
         * its own signals then needs no terminator; a cut one is never complete. */
        if (r->x.up_res == UP_OK &&
            r->x.ops->stream_end(r->x.prov_st, &r->x.conv, &f) == PROV_STREAM_DONE) {
            r->x.saw_done = true;
        } else if (r->d.committed || r->x.conv.len) {
            scrub_fail(r, &f);
            r->x.stream_fail = f;
            r->x.stream_failed = true;
        }
    }
    if (r->buffering) {
        contract_feed_frames(r, bsc_buf_str(&r->x.conv));
        deliver_convert(r);
        return; /* st_attempt checks and releases it */
    }
    if (deliver_convert(r) == BSC_OK && r->d.out.len && !r->d.committed && !r->x.stream_failed)
        r->x.first_frame = true; /* on_done runs the machine: it commits, then ends */
    else if (r->d.committed && !r->x.saw_done) /* else held for the record (st_relay) */
        deliver_flush(r);
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct request *r = ud;

    r->x.xfer = NULL;
    r->x.up_res = res;
    up_take_head(t, &r->x.up_head); /* the adapter reads the headers it knows at classify */
    if (res != UP_OK)
        fail_local(&r->x.fail, FAIL_NONE, "%s: %s", up_result_name(res), detail ? detail : "");
    if (r->x.mode == BODY_SSE && !r->x.saw_done && !r->x.stream_failed)
        finish_stream(r);
    else if (r->x.mode == BODY_SSE && r->x.saw_done && !r->buffering) {
        if (deliver_convert(r) == BSC_OK && r->d.out.len && !r->d.committed)
            r->x.first_frame = true; /* committed and ended by the machine */
        /* else the last frames wait in r->d.out for the idempotency record (st_relay) */
    }
    /* A continuation that ended whole: RELAY ends it (nothing may have passed yet when it
     * was short enough to come in one read). */
    if (r->resume.active && r->d.committed && r->m.state == REQ_ST_ATTEMPT && r->x.saw_done &&
        !r->x.stream_failed)
        r->x.first_frame = true;
    req_wake_run(r);
}

static const struct up_callbacks up_cb = {on_head, on_data, on_done};

/* The request's canonical parse tree, for trim.c (trim_tree_fn). */
static struct json_object *request_tree(void *r)
{
    return req__json(r);
}

/* ---- starting ---- */

enum bsc_err xchg_start(struct request *r)
{
    struct prov_call call;
    const char *lines[UP_REQUEST_MAX_HEADERS];
    size_t n = 0;
    struct up_request ureq;
    char why[256] = "";
    enum bsc_err err;

    r->x.ops = prov_ops_for(r->cur.target->provider->kind);
    /* context.overflow: trim, against this target's window */
    err = trim_req_attempt(&r->trim, &r->input, &r->route->context, r->cur.target, request_tree,
                           r);
    if (!err)
        err = resume_attempt(r); /* a continuation: by prefill or replay */
    if (err)
        return err;
    if (!r->x.ops->takes_raw && !req__json(r)) /* translation needs the parsed request */
        return BSC_ENOMEM;
    call = make_call(r);
    /* A field only the client's own dialect can honour (anthropic-inbound.md §2) makes the
     * targets speaking another ineligible for this request, exactly like an untranslatable
     * one. */
    if (call.native && call.native->required[0] &&
        prov_target_dialect(r->cur.target) != call.native->kind) {
        snprintf(why, sizeof(why), "%s", call.native->required);
        err = BSC_EINVAL;
    } else if (!resume_target_fits(r, r->cur.target)) { /* the decision left it out already */
        snprintf(why, sizeof(why), "a stream relayed in Anthropic's own events goes on only "
                                   "on an anthropic target");
        err = BSC_EINVAL;
    } else {
        err = r->x.ops->build(&call, &r->x.http, why, sizeof(why));
    }
    if (err == BSC_EINVAL) {
        fail_local(&r->x.fail, FAIL_CONTRACT_FAILURE, "%s cannot take this request: %s",
                   r->cur.target->id, why[0] ? why : "not expressible in its API");
        return err;
    }
    if (!err)
        err = prov_header(&r->x.http.headers, "X-Request-Id", "%s", r->ident.id);
    if (!err)
        /* this attempt's span, upstream */
        err = req_trace_header(&r->trace, r->att.n, &r->x.http.headers);
    if (err)
        return err;
    for (size_t off = 0; off < r->x.http.headers.len && n < BSC_ARRAY_LEN(lines);) {
        lines[n++] = r->x.http.headers.p + off;
        off += strlen(r->x.http.headers.p + off) + 1;
    }
    ureq = (struct up_request){
        .url = r->x.http.url.p,
        .method = r->x.http.method,
        .headers = lines,
        .n_headers = n,
        .body = r->x.http.body.p,
        .body_len = r->x.http.body.len,
        .connect_timeout_ms = r->cur.target->provider->connect_timeout_ms,
        .ca_file = r->cur.target->provider->tls_ca_file,
        .fresh_connection = r->env.side_effects == CFG_SE_WRITE_POSSIBLE,
    };
    return up_start(r->w->up, &ureq, &up_cb, r, &r->x.xfer);
}

void xchg_reset(struct request *r)
{
    if (r->x.mode == BODY_SSE)
        sse_parser_cleanup(&r->x.sse);
    if (r->x.prov_st_live)
        r->x.ops->stream_cleanup(r->x.prov_st);
    r->x.prov_st_live = false;
    BSC_FREE(r->x.prov_st);
    r->x.mode = BODY_NONE;
    r->x.up_status = 0;
    r->x.up_ctype[0] = '\0';
    bsc_buf_reset(&r->x.up_head);
    r->x.saw_done = false;
    r->x.first_frame = false;
    r->x.timed_out = false;
    r->x.ftt_armed = false;
    r->x.first_token_late = false;
    r->x.content_seen = false;
    r->x.stream_failed = false;
    r->x.up_res = UP_OK;
    fail_info_init(&r->x.fail);
    fail_info_init(&r->x.stream_fail);
    r->x.usage = PROV_USAGE_UNKNOWN;
    bsc_buf_reset(&r->x.resp);
    bsc_buf_reset(&r->x.answer);
    bsc_buf_reset(&r->x.conv);
    deliver_out_reset(r);
    contract_reset_stream(r);
    if (!r->d.committed) {
        deliver_down_reset(r);
        resume_restart(r); /* nothing of the last attempt reached the client */
    }
    /* The bounds set each time: a pooled request's kept buffers carry the last request's,
     * and a reload may have changed limits.max_body_bytes since. */
    bsc_buf_reuse(&r->x.http.url, HTTP_URL_MAX);
    bsc_buf_reuse(&r->x.http.headers, HTTP_HEADERS_MAX);
    bsc_buf_reuse(&r->x.http.body, r->cfg->limits.max_body_bytes * 2 + 65536);
    if (!r->x.http.url.p) /* one allocation each for the usual sizes */
        bsc_buf_reserve(&r->x.http.url, 256);
    if (!r->x.http.headers.p)
        bsc_buf_reserve(&r->x.http.headers, 512);
}

/* ---- classification ---- */

/* The transport's outcome as the taxonomy names it; the kind is the taxonomy's to say. */
static void classify_transport(struct request *r)
{
    static const enum fail_transport map[UP_RESULT_COUNT] = {
        [UP_OK] = FT_OK,           [UP_CONNECT] = FT_CONNECT,   [UP_DNS] = FT_DNS,
        [UP_TIMEOUT] = FT_TIMEOUT, [UP_RESET] = FT_RESET,       [UP_TLS] = FT_TLS,
        [UP_PROTOCOL] = FT_PROTOCOL, [UP_TOO_LARGE] = FT_PROTOCOL,
    };

    fail_from_transfer(&r->x.fail, map[r->x.up_res], r->x.up_status);
}

/* The header accessor of prov_err_input over the head on_done took (<ctx>: r->x.up_head). */
static struct bsc_str head_header(const void *ctx, const char *name)
{
    return up_head_find(bsc_buf_str(ctx), bsc_str_cstr(name));
}

/* The same, several names in one pass (prov_err_input.headers). */
static void head_headers(const void *ctx, const char *const *names, size_t n,
                         struct bsc_str *values)
{
    struct bsc_str want[8];

    for (size_t at = 0; at < n; at += BSC_ARRAY_LEN(want)) {
        size_t k = n - at < BSC_ARRAY_LEN(want) ? n - at : BSC_ARRAY_LEN(want);

        for (size_t i = 0; i < k; i++)
            want[i] = bsc_str_cstr(names[at + i]);
        up_head_find_each(bsc_buf_str(ctx), want, k, values + at);
    }
}

void xchg_rate_limits(struct request *r, struct rl_headers *out)
{
    struct prov_err_input in = {
        .status = r->x.up_status,
        .header = r->x.up_head.len ? head_header : NULL,
        .headers = head_headers,
        .header_ctx = &r->x.up_head,
        .now_wall_ms = bsc_wall_ms(),
    };

    if (!r->x.ops)
        in.header = NULL;
    prov_ratelimit(r->x.ops ? r->x.ops : prov_ops_for(CFG_PROV_OPENAI), &in, out);
}

/* A 2xx answer, well-formed, but in the other shape than the request asked for (docs/
 * internals/taxonomy.md, "Answers in the other shape"); the taxonomy says what it is. */
static void answered_other_shape(struct request *r, const char *what)
{
    fail_other_shape(&r->x.fail, r->x.up_status);
    snprintf(r->x.fail.message, sizeof(r->x.fail.message), "%s answered %s", r->cur.target->id, what);
}

/* The attempt ended before a whole answer: the router's own timer, a failed stream, or the
 * transport. Returns false when the answer came whole (r->x.fail untouched). */
static bool classify_cut(struct request *r)
{
    if (r->x.timed_out && r->x.first_token_late) {
        fail_from_transport(FT_TIMEOUT, true, &r->x.fail);
        snprintf(r->x.fail.code, sizeof(r->x.fail.code), "first_token_timeout");
        snprintf(r->x.fail.message, sizeof(r->x.fail.message),
                 "no first token from %s within %u ms (envelope.first_token_timeout_ms)",
                 r->cur.target->id, r->env.first_token_timeout_ms);
        return true;
    }
    if (r->x.timed_out) {
        fail_from_transport(FT_TIMEOUT, true, &r->x.fail);
        snprintf(r->x.fail.message, sizeof(r->x.fail.message), "no answer from %s within %llu ms",
                 r->cur.target->id,
                 (unsigned long long)((bsc_now_us() - req__cur_attempt(r)->start_us) / 1000));
        return true;
    }
    if (r->x.stream_failed) {
        r->x.fail = r->x.stream_fail;
        if (r->x.fail.kind == FAIL_NONE || r->x.fail.kind == FAIL_PARTIAL_OUTPUT) {
            fail_before_commit(&r->x.fail); /* nothing was committed: retryable */
            if (r->x.up_res != UP_OK) /* the stream was cut: say how */
                classify_transport(r);
        }
        return true;
    }
    if (r->x.up_res != UP_OK) {
        classify_transport(r);
        return true;
    }
    return false;
}

/* A complete buffered answer: the adapter's verdict on it, then its translation. */
static void classify_answer(struct request *r)
{
    struct prov_call call = make_call(r);
    struct prov_err_input in = {
        .status = r->x.up_status,
        .body = bsc_buf_str(&r->x.resp),
        .content_type = bsc_str_cstr(r->x.up_ctype),
        .header = head_header,
        .headers = head_headers,
        .header_ctx = &r->x.up_head,
        .now_wall_ms = bsc_wall_ms(),
        .base_url = bsc_str_cstr(r->cur.target->provider->base_url),
        .profile = bsc_str_cstr(cfg_profile_name(r->cur.target->provider->profile)),
    };

    prov_classify(r->x.ops, &in, &r->x.fail);
    scrub_fail(r, &r->x.fail);
    if (r->x.fail.kind != FAIL_NONE)
        return;
    /* the first byte first: an answer's type is mostly application/json, no call */
    if (!r->input.stream && (r->x.up_ctype[0] | 0x20) == 't' &&
        strncasecmp(r->x.up_ctype, "text/event-stream", 17) == 0 &&
        sse_looks_like_stream(bsc_buf_str(&r->x.resp))) {
        answered_other_shape(r, "with a stream to a request for a single answer");
        return;
    }
    if (prov_map_response(r->x.ops, &call, r->x.up_status, bsc_buf_str(&r->x.resp), &r->x.answer,
                          &r->x.usage, &r->x.fail) != BSC_OK) {
        scrub_fail(r, &r->x.fail);
        return;
    }
    if (r->input.stream) { /* a complete single answer to a request for a stream */
        answered_other_shape(r, "with a single answer to a request for a stream");
        return;
    }
    if (r->x.answer.len == 0) { /* already OpenAI-shaped: take the buffer, no copy */
        struct bsc_buf tmp = r->x.answer;
        r->x.answer = r->x.resp;
        r->x.resp = tmp;
    }
}

void xchg_classify(struct request *r)
{
    if (classify_cut(r))
        return;
    if (r->x.mode == BODY_SSE && r->x.saw_done) { /* a buffered stream, complete */
        fail_info_init(&r->x.fail);
        r->x.fail.status = r->x.up_status;
        return;
    }
    if (r->x.mode == BODY_SSE) {
        fail_local(&r->x.fail, FAIL_SERVER_ERROR, "the stream ended before any event");
        r->x.fail.status = r->x.up_status;
        return;
    }
    classify_answer(r);
}

void xchg_init(struct xchg *x)
{
    /* bsc_buf_reuse keeps a given store's storage (at most XCHG_KEEP_BYTES, under the bounds) */
    bsc_buf_reuse(&x->resp, REQ_MAX_RESPONSE_BYTES);
    bsc_buf_reuse(&x->answer, REQ_MAX_RESPONSE_BYTES);
    bsc_buf_reuse(&x->conv, 8u << 20);
    x->usage = PROV_USAGE_UNKNOWN;
}

/* The buffers an exchange keeps across pooled requests, in one order (struct xchg_store). */
static void kept_bufs(struct xchg *x, struct bsc_buf *out[XCHG_KEPT_BUFS])
{
    struct bsc_buf *all[] = {
        &x->http.url, &x->http.headers, &x->http.body, &x->resp, &x->answer, &x->conv, &x->up_head,
    };

    _Static_assert(BSC_ARRAY_LEN(all) == XCHG_KEPT_BUFS, "struct xchg_store's size");
    memcpy(out, all, sizeof(all));
}

void xchg_park(struct xchg *x)
{
    struct bsc_buf *b[XCHG_KEPT_BUFS];

    kept_bufs(x, b);
    for (size_t i = 0; i < XCHG_KEPT_BUFS; i++)
        bsc_buf_park(b[i], XCHG_KEEP_BYTES);
}

void xchg_store_take(struct xchg *x, struct xchg_store *out)
{
    struct bsc_buf *b[XCHG_KEPT_BUFS];

    kept_bufs(x, b);
    for (size_t i = 0; i < XCHG_KEPT_BUFS; i++)
        out->b[i] = *b[i];
}

void xchg_store_give(struct xchg *x, const struct xchg_store *in)
{
    struct bsc_buf *b[XCHG_KEPT_BUFS];

    kept_bufs(x, b);
    for (size_t i = 0; i < XCHG_KEPT_BUFS; i++) {
        *b[i] = in->b[i];
        bsc_buf_unpark(b[i]);
    }
}

void xchg_store_free(struct xchg *x)
{
    struct bsc_buf *b[XCHG_KEPT_BUFS];

    kept_bufs(x, b);
    for (size_t i = 0; i < XCHG_KEPT_BUFS; i++) {
        bsc_buf_unpark(b[i]);
        bsc_buf_cleanup(b[i]);
    }
}

void xchg_cancel(struct xchg *x)
{
    if (x->xfer) {
        up_cancel(x->xfer);
        x->xfer = NULL;
    }
}

void xchg_cleanup(struct request *r)
{
    xchg_cancel(&r->x);
    if (r->x.mode == BODY_SSE)
        sse_parser_cleanup(&r->x.sse);
    r->x.mode = BODY_NONE;
    if (r->x.prov_st_live)
        r->x.ops->stream_cleanup(r->x.prov_st);
    r->x.prov_st_live = false;
    BSC_FREE(r->x.prov_st);
    xchg_park(&r->x);
}

/* ---- what other parts of the machine saw, recorded here ---- */

void xchg_time_out(struct request *r, bool waiting_first_token)
{
    if (!r->x.xfer)
        return; /* an attempt aborted from a callback continues on its own */
    r->x.timed_out = true;
    r->x.first_token_late = r->x.ftt_armed && waiting_first_token;
    xchg_cancel(&r->x);
}

void xchg_arm_first_token(struct request *r)
{
    r->x.ftt_armed = true;
}

void xchg_note_rate_limited(struct request *r, int64_t retry_after_ms, const char *fmt, ...)
{
    va_list ap;

    fail_info_init(&r->x.fail);
    r->x.fail.kind = FAIL_RATE_LIMITED;
    r->x.fail.retry_after_ms = retry_after_ms;
    va_start(ap, fmt);
    vsnprintf(r->x.fail.message, sizeof(r->x.fail.message), fmt, ap);
    va_end(ap);
}

void xchg_note_partial_output(struct request *r)
{
    fail_info_init(&r->x.fail);
    r->x.fail.kind = FAIL_PARTIAL_OUTPUT;
    r->x.fail.transport = r->x.stream_failed ? FT_OK : FT_RESET;
    r->x.fail.status = 200;
    r->x.fail.request_caused = r->x.stream_failed && r->x.stream_fail.request_caused;
}

void xchg_note_stream_break(struct request *r, enum fail_kind kind, const char *why)
{
    fail_info_init(&r->x.fail);
    r->x.fail.kind = kind;
    r->x.fail.status = 200;
    r->x.fail.transport = FT_OK;
    snprintf(r->x.fail.message, sizeof(r->x.fail.message), "%s", why);
}

void xchg_note_prefill_refused(struct request *r)
{
    r->x.fail.kind = FAIL_SERVER_ERROR;
    r->x.fail.request_caused = true; /* not the target's health */
}

void xchg_note_contract_failure(struct request *r, const struct fail_info *f)
{
    r->x.fail = *f;
}

void xchg_note_uncertain(struct request *r)
{
    r->x.fail.kind = FAIL_SIDE_EFFECT_UNCERTAIN;
}

void xchg_note_stream_cut(struct request *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->x.stream_fail.message, sizeof(r->x.stream_fail.message), fmt, ap);
    va_end(ap);
    r->x.stream_failed = true;
}

void xchg_stop_as_cut(struct request *r)
{
    r->x.timed_out = false;
    xchg_cancel(&r->x);
}

void xchg_take_stream_usage(struct request *r)
{
    if (r->x.mode == BODY_SSE && r->x.prov_st_live && r->x.ops->stream_usage)
        r->x.ops->stream_usage(r->x.prov_st, &r->x.usage);
}

bool xchg_estimate_usage(struct request *r, int64_t in_tokens, int64_t out_tokens, bool complete)
{
    struct prov_usage *u = &r->x.usage;
    bool estimated = false;

    if (u->input_tokens < 0) {
        u->input_tokens = in_tokens;
        estimated = true;
    }
    if (u->output_tokens < 0 || (!complete && u->output_tokens < out_tokens)) {
        u->output_tokens = out_tokens;
        estimated = true;
    }
    return estimated;
}

enum bsc_err xchg_hand_frames(struct request *r, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    if (out->len == 0 && out->max == r->x.conv.max) {
        /* the buffers trade places instead of the bytes being copied (a held stream's
         * event would touch both buffers' memory) */
        struct bsc_buf t = *out;

        *out = r->x.conv;
        r->x.conv = t;
    } else {
        err = bsc_buf_append(out, r->x.conv.p, r->x.conv.len);
    }
    bsc_buf_reset(&r->x.conv);
    return err;
}

void xchg_drop_frames(struct request *r)
{
    bsc_buf_reset(&r->x.conv);
}

enum bsc_err xchg_replace_frames(struct request *r, const struct bsc_buf *with)
{
    bsc_buf_reset(&r->x.conv);
    return bsc_buf_append(&r->x.conv, with->p, with->len);
}

/* The "id" of the Response object <body> into <out>; false when it has none we keep. */
static bool body_id(struct bsc_str body, char *out, size_t len)
{
    struct bsc_str v, raw;

    if (bsc_json_member(body, BSC_STR("id"), &v) != 1 || bsc_json_kind_of(v) != BSC_JSON_STRING)
        return false;
    raw = bsc_json_string_raw(v);
    if (!raw.len || raw.len > PROV_ANSWER_ID_MAX || memchr(raw.p, '\\', raw.len))
        return false;
    snprintf(out, len, "%.*s", (int)raw.len, raw.p);
    return true;
}

bool xchg_answer_id(const struct xchg *x, char *out, size_t len)
{
    out[0] = '\0';
    if (x->mode == BODY_SSE) {
        if (x->prov_st_live && x->ops->stream_answer_id)
            x->ops->stream_answer_id(x->prov_st, out, len);
        return out[0] != '\0';
    }
    return body_id(x->answer.len ? bsc_buf_str(&x->answer) : bsc_buf_str(&x->resp), out, len);
}
