/* SPDX-License-Identifier: MIT */
/* resp.c -- the response side of a request: the status line and headers (Date, Server,
 * Connection, x-request-id added), Content-Length or chunked framing (close-delimited for
 * HTTP/1.0), body bytes copied into the connection's output buffer, the OpenAI-shaped JSON
 * errors, abort and reset, back-pressure (pending bytes, the drain callback). Writing and
 * what follows the end of a response belong to conn.c. See docs/internals/server.md. */
#include <emmintrin.h>
#include <string.h>
#include <time.h>

#include <http_parser.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/clock.h"
#include "core/log.h"
#include "server/internal.h"

#define JSON_ERR_MAX (64u * 1024)

/* Queued bytes plus what libuv has not yet handed to the kernel of the write in flight
 * (libuv writes at once when it can, and counts partial progress). */
size_t srv__pending(const struct srv_conn *c)
{
    return c->out.len + (c->writing ? c->tcp.write_queue_size : 0);
}

/* ---- small writers: each is a no-op once *<err> is set ---------------------------------- */

/* Inline, so a literal's copy is a move of known size rather than a memcpy call. */
static inline void put(struct bsc_buf *b, enum bsc_err *err, const char *p, size_t n)
{
    if (!*err)
        *err = bsc_buf_append(b, p, n);
}

static inline void put_s(struct bsc_buf *b, enum bsc_err *err, struct bsc_str s)
{
    put(b, err, s.p, s.len);
}

/* "<name>: <value>\r\n", made room for once. */
static void put_header_line(struct bsc_buf *b, enum bsc_err *err, struct bsc_str name,
                            struct bsc_str value)
{
    size_t n = name.len + value.len + 4;
    char *o;

    if (*err)
        return;
    /* Room left is the common case: a compare, not a call. */
    if ((!b->p || b->cap - b->len < n) && (*err = bsc_buf_reserve(b, n)) != BSC_OK)
        return;
    o = b->p + b->len;
    memcpy(o, name.p, name.len);
    o += name.len;
    *o++ = ':';
    *o++ = ' ';
    if (value.len)
        memcpy(o, value.p, value.len);
    o += value.len;
    *o++ = '\r';
    *o = '\n';
    b->len += n;
    b->p[b->len] = '\0';
}

#define PUT_LIT(b, err, lit) put((b), (err), (lit), sizeof(lit) - 1)

static void put_num(struct bsc_buf *b, enum bsc_err *err, uint64_t v, unsigned base)
{
    char tmp[BSC_NUM_TEXT_MAX];
    char *p = bsc_num_text(tmp, v, base);

    put(b, err, p, (size_t)(tmp + BSC_NUM_TEXT_MAX - p));
}

/* "Date: <IMF-fixdate>\r\n", formatted once a second per server. */
static struct bsc_str date_line(struct srv *srv)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    uint64_t sec = bsc_wall_ms() / 1000;
    time_t t = (time_t)sec;
    struct tm tm;
    int n;

    if (sec == srv->date_sec && srv->date_len)
        return bsc_str_make(srv->date, srv->date_len);
    if (!gmtime_r(&t, &tm) || tm.tm_year > 8000)
        return BSC_STR("");
    n = snprintf(srv->date, sizeof(srv->date), "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
                 days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (n <= 0 || (size_t)n >= sizeof(srv->date))
        return BSC_STR("");
    srv->date_len = (size_t)n;
    srv->date_sec = sec;
    return bsc_str_make(srv->date, srv->date_len);
}

/* A header's bytes are checked sixteen at a time (SSE2): a name of the route headers is 15 to
 * 21 bytes, which eight at a time with word tricks cost twenty instructions a word. */

/* Not a token byte for a name here: a control, space, DEL, not ASCII, or ':'; one bit a
 * byte of <v>. Signed compares: the bytes 0x80..0xff are negative, so below 0x21 too. */
static inline unsigned bad_name_bytes(__m128i v)
{
    __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x21)),
                               _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8(':'))));
}

/* CR, LF or NUL, which would end or cut the header line. */
static inline unsigned bad_value_bytes(__m128i v)
{
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_setzero_si128()),
                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
}

#define SWAR_ONES 0x0101010101010101ull

/* The <n> bytes at <p>, 0 < n < 8, as one word without a loop (a route's id, "1", a number
 * of milliseconds: the values here are mostly that short): from four bytes, the first four
 * and the last four, overlapping; under four, the first, middle and last bytes over bytes
 * <pad>, which the checks pass. Every byte is in the word, some twice. */
static inline uint64_t short_word(const char *p, size_t n, char pad)
{
    uint32_t lo, hi;

    if (n >= 4) {
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        return (uint64_t)hi << 32 | lo;
    }
    return (SWAR_ONES * (unsigned char)pad) << 24 | (uint64_t)(unsigned char)p[n - 1] << 16 |
           (uint64_t)(unsigned char)p[n / 2] << 8 | (unsigned char)p[0];
}

/* The <n> bytes at <p>, 0 < n <= 16, in one vector without reading past them: from eight
 * bytes, the first eight and the last eight (overlapping below sixteen); under eight,
 * short_word over eight bytes <pad>. */
static inline __m128i upto16(const char *p, size_t n, char pad)
{
    uint64_t lo, hi;

    if (n >= 8) {
        memcpy(&lo, p, 8);
        memcpy(&hi, p + n - 8, 8);
    } else {
        lo = short_word(p, n, pad);
        hi = SWAR_ONES * (unsigned char)pad;
    }
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* Whether <flagged> finds a byte of <p>[0..<n>), sixteen at a time: the last block overlaps
 * the one before it (a yes or no needs no position); up to sixteen bytes, upto16. */
static inline bool any_byte(const char *p, size_t n, unsigned (*flagged)(__m128i), char pad)
{
    if (n <= 16)
        return n && flagged(upto16(p, n, pad)) != 0;
    for (size_t i = 0; i + 16 < n; i += 16)
        if (flagged(_mm_loadu_si128((const __m128i *)(const void *)(p + i))))
            return true;
    return flagged(_mm_loadu_si128((const __m128i *)(const void *)(p + n - 16))) != 0;
}

/* A header from the handler that would break the framing or the message is dropped.
 * Returns NULL when <h> is fine, else why it is not. */
BSC_TESTABLE const char *srv__header_bad(const struct srv_header *h)
{
#define OURS(lit) {lit, sizeof(lit) - 1}
    static const struct bsc_str ours[] = {OURS("content-length"), OURS("transfer-encoding"),
                                          OURS("connection")};
#undef OURS

    if (!h->name.len)
        return "empty name";
    if (any_byte(h->name.p, h->name.len, bad_name_bytes, 'a'))
        return "invalid name";
    if (any_byte(h->value.p, h->value.len, bad_value_bytes, ' '))
        return "CR, LF or NUL in the value";
    for (size_t i = 0; i < BSC_ARRAY_LEN(ours); i++)
        if (bsc_str_ieq(h->name, ours[i]))
            return "set by the server";
    return NULL;
}

/* Decides the framing and whether the connection closes after this response. */
static void choose_framing(struct srv_req *req, int status, int64_t clen)
{
    struct srv_conn *c = req->conn;
    bool is_head = c->h1.head_done && srv__h1_is_head(&c->h1);
    bool bodyless = status == 204 || status == 304;

    req->no_body = bodyless || is_head;
    req->chunked = false;
    req->resp_left = -1;
    if (bodyless || is_head) {
        /* nothing to count */
    } else if (clen >= 0) {
        req->resp_left = clen;
    } else if (c->h1.http10) {
        req->close_after = true; /* HTTP/1.0 has no chunked: the close ends the body */
    } else {
        req->chunked = true;
    }
    if (!c->h1.keep_alive || c->srv->draining || c->eof)
        req->close_after = true;
}

static void put_status_line(struct bsc_buf *b, enum bsc_err *err, int status)
{
    const char *reason = http_status_str((enum http_status)status);
    /* The status has three digits (resp_head checks 200..999): written as they are. */
    char line[13] = {'H', 'T', 'T', 'P', '/', '1', '.', '1', ' ', (char)('0' + status / 100),
                     (char)('0' + status / 10 % 10), (char)('0' + status % 10), ' '};

    put(b, err, line, sizeof(line));
    if (strcmp(reason, "<unknown>") != 0)
        put_s(b, err, bsc_str_cstr(reason));
    PUT_LIT(b, err, "\r\n");
}

/* The handler's headers, minus the ones that are dropped. Returns whether one of them was
 * an x-request-id. */
static bool put_handler_headers(struct srv_req *req, enum bsc_err *err,
                                const struct srv_header *h, size_t n)
{
    struct bsc_buf *b = &req->conn->out;
    bool has_id = false;

    for (size_t i = 0; i < n; i++) {
        const char *bad = srv__header_bad(&h[i]);

        if (bad) { /* the name is not logged: it may hold CR/LF */
            LOG_WARN("srv: %s: dropped response header %zu: %s", req->id, i, bad);
            continue;
        }
        has_id = has_id || bsc_str_ieq(h[i].name, BSC_STR("x-request-id"));
        put_header_line(b, err, h[i].name, h[i].value);
    }
    return has_id;
}

static enum bsc_err resp_head(struct srv_req *req, int status, const char *ctype,
                              const struct srv_header *h, size_t n, int64_t clen)
{
    struct srv_conn *c = req->conn;
    struct bsc_buf *b = &c->out;
    size_t mark = b->len;
    enum bsc_err err = BSC_OK;
    bool has_id;

    if (req->head_sent || req->ended)
        return BSC_ESTATE;
    if (c->state == SRV__CONN_ST_CLOSED)
        return BSC_EIO;
    if (status < 200 || status > 999)
        return BSC_EINVAL;
    choose_framing(req, status, clen);
    put_status_line(b, &err, status);
    put_s(b, &err, date_line(c->srv));
    PUT_LIT(b, &err, "Server: bascule\r\n");
    if (req->close_after)
        PUT_LIT(b, &err, "Connection: close\r\n");
    else
        PUT_LIT(b, &err, "Connection: keep-alive\r\n");
    if (status != 204 && status != 304 && clen >= 0) {
        PUT_LIT(b, &err, "Content-Length: ");
        put_num(b, &err, (uint64_t)clen, 10);
        PUT_LIT(b, &err, "\r\n");
    } else if (req->chunked) {
        PUT_LIT(b, &err, "Transfer-Encoding: chunked\r\n");
    }
    if (ctype) {
        PUT_LIT(b, &err, "Content-Type: ");
        put_s(b, &err, bsc_str_cstr(ctype));
        PUT_LIT(b, &err, "\r\n");
    }
    has_id = put_handler_headers(req, &err, h, n);
    if (put_handler_headers(req, &err, req->extra, req->n_extra))
        has_id = true;
    if (!has_id) {
        PUT_LIT(b, &err, "x-request-id: ");
        put_s(b, &err, bsc_str_cstr(req->id));
        PUT_LIT(b, &err, "\r\n");
    }
    PUT_LIT(b, &err, "\r\n");
    if (err) {
        b->len = mark; /* nothing of a failed head stays queued */
        return err;
    }
    req->head_sent = true;
    req->status = status;
    return BSC_OK;
}

enum bsc_err srv_resp_add_header(struct srv_req *req, struct bsc_str name, struct bsc_str value)
{
    if (req->head_sent || req->ended)
        return BSC_ESTATE;
    if (req->n_extra == SRV_RESP_EXTRA_MAX)
        return BSC_ELIMIT;
    req->extra[req->n_extra++] = (struct srv_header){name, value};
    return BSC_OK;
}

int srv_resp_status(const struct srv_req *req)
{
    return req->status;
}

enum bsc_err srv_resp_head(struct srv_req *req, int status, const struct srv_header *h, size_t n,
                           int64_t content_length)
{
    return resp_head(req, status, NULL, h, n, content_length);
}

/* Appends <len> bytes of body to the connection's output (framed as a chunk when chunked);
 * the callers decide when it is written. */
static enum bsc_err body_queue(struct srv_req *req, const void *p, size_t len)
{
    struct srv_conn *c = req->conn;
    struct bsc_buf *b = &c->out;
    size_t mark = b->len;
    enum bsc_err err = BSC_OK;

    if (!req->head_sent || req->ended)
        return BSC_ESTATE;
    if (c->state == SRV__CONN_ST_CLOSED)
        return BSC_EIO;
    if (len == 0 || req->no_body)
        return BSC_OK;
    if (req->resp_left >= 0 && (uint64_t)len > (uint64_t)req->resp_left)
        return BSC_ELIMIT; /* more than the Content-Length announced */
    if (req->chunked) {
        put_num(b, &err, len, 16);
        PUT_LIT(b, &err, "\r\n");
    }
    put(b, &err, p, len);
    if (req->chunked)
        PUT_LIT(b, &err, "\r\n");
    if (err) {
        b->len = mark;
        return err;
    }
    if (req->resp_left >= 0)
        req->resp_left -= (int64_t)len;
    return BSC_OK;
}

enum bsc_err srv_resp_body(struct srv_req *req, const void *p, size_t len)
{
    struct srv_conn *c = req->conn;
    enum bsc_err err = body_queue(req, p, len);

    if (err || !c->out.len || c->state == SRV__CONN_ST_CLOSED)
        return err;
    if (c->out.len >= SRV__FLUSH_NOW)
        srv__conn_flush(c);
    else if (!c->writing)
        srv__conn_schedule(c, SRV__WORK_FLUSH); /* coalesce what the loop pass adds */
    return BSC_OK;
}

/* A chunk straight from the caller's bytes when nothing is queued before it: the chunk
 * header, the bytes and the CRLF in one writev, without copying them into the connection's
 * output buffer first (a held stream's events would otherwise touch that buffer's cold
 * memory on every event). Returns false when it does not apply; what the socket does not
 * take is queued and written by srv__conn_flush as usual. */
static bool stream_direct(struct srv_req *req, const void *p, size_t len)
{
    struct srv_conn *c = req->conn;
    char tmp[BSC_NUM_TEXT_MAX + 2]; /* the chunk size line: hex digits and CRLF */
    char *head;
    size_t head_len, total;
    uv_buf_t bufs[3];
    unsigned n = 0;
    int rc;

    if (c->writing || c->out.len || c->state == SRV__CONN_ST_CLOSED || req->no_body ||
        !req->chunked || !req->head_sent || req->ended || !len)
        return false;
    head = bsc_num_text(tmp, len, 16);
    memcpy(tmp + BSC_NUM_TEXT_MAX, "\r\n", 2);
    head_len = (size_t)(tmp + BSC_NUM_TEXT_MAX + 2 - head);
    bufs[n++] = uv_buf_init(head, (unsigned)head_len);
    bufs[n++] = uv_buf_init((char *)(uintptr_t)p, (unsigned)len);
    bufs[n++] = uv_buf_init((char *)(uintptr_t)"\r\n", 2);
    total = head_len + len + 2;
    rc = uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
    if (rc < 0 && rc != UV_EAGAIN) {
        srv__conn_close(c);
        return true;
    }
    if (rc > 0)
        c->last_tx_ms = uv_now(c->srv->loop);
    if ((size_t)(rc > 0 ? rc : 0) == total) {
        if (req->on_drain) /* a paused handler waits for room: tell it from the loop */
            srv__conn_schedule(c, SRV__WORK_DRAIN);
        return true;
    }
    /* The rest, framed already, waits in the output buffer for the socket. */
    for (size_t off = rc > 0 ? (size_t)rc : 0, i = 0; i < n; i++) {
        size_t l = bufs[i].len;

        if (off >= l) {
            off -= l;
            continue;
        }
        if (bsc_buf_append(&c->out, bufs[i].base + off, l - off) != BSC_OK) {
            srv__conn_close(c);
            return true;
        }
        off = 0;
    }
    srv__conn_flush(c);
    return true;
}

enum bsc_err srv_resp_stream(struct srv_req *req, const void *p, size_t len)
{
    struct srv_conn *c = req->conn;
    enum bsc_err err;

    if (stream_direct(req, p, len))
        return BSC_OK;
    if ((err = body_queue(req, p, len)) || !c->out.len || c->state == SRV__CONN_ST_CLOSED)
        return err;
    if (c->work == SRV__WORK_FLUSH)
        srv__work_remove(c->srv, c); /* queued earlier in the pass: it leaves now too */
    srv__conn_flush(c);
    return BSC_OK;
}

void srv_resp_end(struct srv_req *req)
{
    struct srv_conn *c = req->conn;

    if (req->ended)
        return;
    if (!req->head_sent && c->state != SRV__CONN_ST_CLOSED) {
        srv_resp_error(req, 500, NULL, "internal_error", "the handler sent no response");
        return;
    }
    req->ended = true;
    req->on_drain = NULL;
    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    if (req->chunked && bsc_buf_append(&c->out, "0\r\n\r\n", 5) != BSC_OK) {
        srv__conn_close(c);
        return;
    }
    if (req->resp_left > 0) {
        LOG_WARN("srv: %s: response ended %lld bytes short of its Content-Length", req->id,
                 (long long)req->resp_left);
        req->close_after = true;
    }
    srv__conn_ended(c);
}

/* A response that cannot be produced as asked ends with the connection. */
static void resp_fail(struct srv_req *req, enum bsc_err err)
{
    if (req->ended)
        return;
    if (err == BSC_EINVAL && !req->head_sent) {
        srv_resp_error(req, 500, NULL, "internal_error", "invalid response status");
        return;
    }
    if (err != BSC_EIO)
        LOG_WARN("srv: %s: response failed: %s", req->id, bsc_err_str(err));
    if (req->head_sent) {
        srv_resp_abort(req);
        return;
    }
    req->ended = true;
    srv__conn_close(req->conn);
}

void srv_resp_send(struct srv_req *req, int status, const char *content_type,
                   const struct srv_header *h, size_t n, const void *body, size_t len)
{
    enum bsc_err err = resp_head(req, status, content_type, h, n, (int64_t)len);

    if (!err)
        err = srv_resp_body(req, body, len);
    if (err) {
        resp_fail(req, err);
        return;
    }
    srv_resp_end(req);
}

void srv_resp_error(struct srv_req *req, int status, const char *type, const char *code,
                    const char *message)
{
    srv_error_body_fn *fn = req->conn->srv->error_body;
    struct bsc_buf j;
    enum bsc_err err;

    bsc_buf_init(&j, JSON_ERR_MAX);
    if (fn) {
        err = fn(status, type, code, message, req->id, &j);
    } else {
        err = bsc_buf_appendf(&j, "%s%s%s\n", code ? code : "", code ? ": " : "",
                              message ? message : "");
    }
    if (err)
        resp_fail(req, err);
    else
        srv_resp_send(req, status, fn ? "application/json" : "text/plain", NULL, 0, j.p, j.len);
    bsc_buf_cleanup(&j);
}

void srv_resp_abort(struct srv_req *req)
{
    if (req->ended)
        return;
    req->ended = true;
    req->on_drain = NULL;
    req->close_after = true;
    if (req->conn->state == SRV__CONN_ST_CLOSED)
        return;
    srv__conn_ended(req->conn); /* flush what is queued, then FIN; no terminal chunk */
}

void srv_resp_reset(struct srv_req *req)
{
    if (req->ended)
        return;
    req->ended = true;
    req->on_drain = NULL;
    srv__conn_close_reset(req->conn);
}

void srv_req_set_close(struct srv_req *req)
{
    req->close_after = true;
}

bool srv_resp_started(const struct srv_req *req)
{
    return req->head_sent;
}

size_t srv_req_pending(const struct srv_req *req)
{
    return srv__pending(req->conn);
}

void srv_req_on_drain(struct srv_req *req, srv_req_cb *cb, void *ud)
{
    struct srv_conn *c = req->conn;

    req->on_drain = cb;
    req->drain_ud = ud;
    /* Already low: it still runs later, from the loop, never from inside this call. */
    if (cb && !req->ended && srv__pending(c) <= c->lim.max_pending_output / 2)
        srv__conn_schedule(c, SRV__WORK_DRAIN);
}

void srv_req_on_abort(struct srv_req *req, srv_req_cb *cb, void *ud)
{
    req->on_abort = cb;
    req->abort_ud = ud;
}

void srv_req_on_stop(struct srv_req *req, srv_req_cb *cb, void *ud)
{
    req->on_stop = cb;
    req->stop_ud = ud;
}
