/* SPDX-License-Identifier: MIT */
/* easy.c -- the libcurl client (up__curl_ops): one upstream attempt on an easy handle:
 * options, header collection, body delivery with pause for back-pressure, completion and
 * cancellation. A transfer cancelled from inside a curl callback is only marked; curl is
 * told to abort by the callback's return value and the transfer is reaped silently when
 * curl reports done. multi.c drives the handles on the loop, gate.c holds the transfers
 * waiting for an https:// origin's first connection. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/internal.h"

static enum up_result map_code(CURLcode code)
{
    switch (code) {
    case CURLE_OK:
        return UP_OK;
    case CURLE_COULDNT_CONNECT:
        return UP_CONNECT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return UP_DNS;
    case CURLE_OPERATION_TIMEDOUT:
        return UP_TIMEOUT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
        return UP_TLS;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
        return UP_PROTOCOL;
    default:
        return UP_RESET;
    }
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct up_transfer *t = ud;
    size_t len = size * n;
    long code = 0;

    if (t->cancelled)
        return 0;
    if ((t->violation = up__line_check(&t->rules, p, len)) != NULL)
        return 0; /* curl aborts with CURLE_WRITE_ERROR; up__transfer_done says why */
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        /* A new status line: 1xx heads are followed by another one. */
        bsc_buf_reset(&t->head);
        t->head_done = false;
    }
    if (bsc_buf_append(&t->head, p, len) != BSC_OK)
        return 0; /* head too large: curl aborts with CURLE_WRITE_ERROR */
    if (!(len <= 2 && (p[0] == '\r' || p[0] == '\n')))
        return len;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200)
        return len;
    t->status = (int)code;
    t->head_done = true;
    t->request_sent = true;
    t->in_callback = true;
    t->cb.on_head(t->ud, t, t->status);
    t->in_callback = false;
    return t->cancelled ? 0 : len;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    struct up_transfer *t = ud;
    size_t len = size * n;
    bool pause;

    if (t->cancelled)
        return 0;
    t->in_callback = true;
    pause = t->cb.on_data(t->ud, t, p, len);
    t->in_callback = false;
    if (t->cancelled)
        return 0;
    if (pause) {
        t->paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    return len;
}

/* libcurl says in its verbose text when bytes followed an answer in the same read ("Excess
 * found in a read", "Leftovers after chunking"): it drops them (and closes the connection
 * for the first), but the answer it read is then out of step too. */
static int on_debug(CURL *e, curl_infotype type, char *p, size_t len, void *ud)
{
    struct up_transfer *t = ud;
    struct bsc_str text = bsc_str_make(p, len);

    (void)e;
    if (t && type == CURLINFO_TEXT &&
        (bsc_str_starts(text, BSC_STR("Excess found")) ||
         bsc_str_starts(text, BSC_STR("Leftovers after chunking"))))
        t->excess = true;
    return 0;
}

/* The connection is up (handshake done, or reused), the request not yet written. */
static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port)
{
    (void)ip, (void)local_ip, (void)port, (void)local_port;
    if (ud)
        up__gate_connected(ud);
    return CURL_PREREQFUNC_OK;
}

/* What stays the same for every transfer: set once per easy handle, kept across reuse. */
void up__easy_defaults(CURL *e, struct up_multi *m)
{
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    /* HTTP/2 only where TLS negotiates it: h2c reuse is broken in curl 7.88. No PIPEWAIT:
     * a transfer waiting to multiplex sits in curl's pending queue, which curl revisits
     * only when some other transfer ends -- with long streams that can be never. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)UP_RECV_BUFFER);
    curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, on_debug);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    /* No proxy in the environment: saying so spares curl six getenv() walks a transfer. */
    if (!m->env_proxy)
        curl_easy_setopt(e, CURLOPT_PROXY, "");
    up__watch_close(e, m);
}

/* The CAs an https transfer trusts: the provider's tls.ca_file alone, else libcurl's
 * built-in bundle and directory. Set on every https transfer, since a cached easy handle
 * may have served another provider; curl only reuses a connection made with the same
 * trust (it is part of the connection's TLS configuration). */
static void set_trust(CURL *e, const char *ca_file)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

    curl_easy_setopt(e, CURLOPT_CAINFO, ca_file ? ca_file : v->cainfo);
    curl_easy_setopt(e, CURLOPT_CAPATH, ca_file ? NULL : v->capath);
}

/* What changes from one transfer to the next: every one of these is set each time, so
 * nothing of the previous transfer on a reused handle carries over. */
static void set_options(struct up_transfer *t, const struct up_request *req)
{
    CURL *e = t->easy;
    bool post = strcmp(req->method, "POST") == 0;

    /* Parsed once per URL: curl otherwise parses the text and prints it back every time. */
    t->url = up__url(t->m, req->url);
    curl_easy_setopt(e, CURLOPT_CURLU, t->url ? t->url->handle : NULL);
    if (!t->url)
        curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
    /* Verbose text only for clear HTTP/1 answers, the ones whose excess bytes we look for
     * (TLS and HTTP/2 frame their own records): it costs libcurl a formatted line per step. */
    t->plain = h1_url_is_http(req->url);
    curl_easy_setopt(e, CURLOPT_DEBUGDATA, t);
    curl_easy_setopt(e, CURLOPT_VERBOSE, t->plain ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)req->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, req->fresh_connection ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, req->fresh_connection ? 1L : 0L);
    if (post) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST,
                     post || strcmp(req->method, "GET") == 0 ? NULL : req->method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, &t->header_nodes[0]);
    if (!t->plain)
        set_trust(e, req->ca_file);
}

/* No "Expect: 100-continue" round trip: upstreams answer at once. */
static const char *const fixed[] = {"Expect:", "Accept-Encoding: identity"};

/* Bytes of a transfer with room for <req>'s header nodes; build_headers refuses more
 * than UP_MAX_HEADERS before writing any, so the room stops there. */
static size_t transfer_size(const struct up_request *req)
{
    size_t n = BSC_ARRAY_LEN(fixed) + req->n_headers;

    return offsetof(struct up_transfer, header_nodes) +
           (n < UP_MAX_HEADERS ? n : UP_MAX_HEADERS) * sizeof(struct curl_slist);
}

static enum bsc_err build_headers(struct up_transfer *t, const struct up_request *req)
{
    size_t n = BSC_ARRAY_LEN(fixed) + req->n_headers;

    if (n > UP_MAX_HEADERS)
        return BSC_ELIMIT;
    for (size_t i = 0; i < n; i++) {
        const char *h = i < BSC_ARRAY_LEN(fixed) ? fixed[i] : req->headers[i - BSC_ARRAY_LEN(fixed)];

        t->header_nodes[i].data = (char *)h; /* curl_slist is not const; curl only reads */
        t->header_nodes[i].next = i + 1 < n ? &t->header_nodes[i + 1] : NULL;
    }
    return BSC_OK;
}

/* up__curl_ops.start: an easy handle from the cache, the options, then to curl, or to
 * the queue of its origin's gate. */
static enum bsc_err curl_start(struct up_transfer *t, const struct up_request *req)
{
    struct up_multi *m = t->m;
    enum bsc_err err;

    t->easy = up__acquire_easy(m);
    if (!t->easy)
        return BSC_ENOMEM;
    if ((err = build_headers(t, req)) != BSC_OK)
        goto fail;
    set_options(t, req);
    /* Gated unless it must have a connection of its own anyway, or goes through a proxy. */
    if ((req->fresh_connection || m->env_proxy || !up__gate_hold(t, req->url)) &&
        curl_multi_add_handle(m->curlm, t->easy) != CURLM_OK) {
        up__gate_leave(t);
        err = BSC_ENOMEM;
        goto fail;
    }
    return BSC_OK;
fail:
    up__url_release(t->url);
    up__release_easy(m, t->easy, true); /* never added: nothing ran on it */
    return err;
}

/* Removes and frees <t>; <clean>: it completed normally, its easy handle may be reused. */
static void transfer_free(struct up_transfer *t, bool clean)
{
    struct up_multi *m = t->m;

    up__gate_leave(t);
    curl_multi_remove_handle(m->curlm, t->easy); /* a no-op for one still gated */
    /* A kept handle must not point at a freed transfer (on_socket reads it). */
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, NULL);
    curl_easy_setopt(t->easy, CURLOPT_PREREQDATA, NULL);
    curl_easy_setopt(t->easy, CURLOPT_DEBUGDATA, NULL);
    up__url_release(t->url);
    up__transfer_unlink(t);
    up__release_easy(m, t->easy, clean);
    bsc_buf_cleanup(&t->head);
    free(t);
}

/* Whether a clear HTTP/1 answer that curl read whole had bytes after it in the read that
 * ended it: curl drops them (and closes the connection after "Excess found"), but which of
 * the responses answered this request is then unknown. Bytes that come after that read
 * find the connection parked (multi.c quarantines it); they are not looked for here: by
 * the time curl reports the transfer done, it may have given the connection to the next
 * transfer, whose own answer would then look like excess. */
static bool out_of_step(const struct up_transfer *t)
{
    return t->plain && t->excess;
}

void up__transfer_done(struct up_transfer *t, CURLcode code)
{
    struct up_callbacks cb = t->cb;
    void *ud = t->ud;
    enum up_result res = map_code(code);
    char detail[CURL_ERROR_SIZE + 64];
    bool cancelled = t->cancelled;

    if (code == CURLE_WRITE_ERROR && !t->head_done && t->head.len >= UP_MAX_HEAD_BYTES / 2)
        res = UP_TOO_LARGE;
    /* libcurl reports bad chunked framing as a receive error, like a reset; only its
     * message tells them apart ("Malformed encoding found in chunked-encoding"). */
    if (code == CURLE_RECV_ERROR && strstr(t->errbuf, "chunked-encoding"))
        res = UP_PROTOCOL;
    if (code == CURLE_WRITE_ERROR && t->violation)
        res = UP_PROTOCOL;
    if (code == CURLE_OK && !cancelled && out_of_step(t)) {
        res = UP_PROTOCOL;
        t->violation = "bytes after the end of the response";
    }
    if (res == UP_OK)
        detail[0] = '\0';
    else if (t->violation)
        snprintf(detail, sizeof(detail), "%s", t->violation);
    else
        snprintf(detail, sizeof(detail), "%s", t->errbuf[0] ? t->errbuf : curl_easy_strerror(code));
    if (code != CURLE_OK && !t->head_done && t->status == 0) {
        long sent = 0;
        curl_easy_getinfo(t->easy, CURLINFO_REQUEST_SIZE, &sent);
        t->request_sent = sent > 0;
    }
    /* The head and status stay readable during on_done; free afterwards. */
    if (!cancelled) {
        t->in_callback = true;
        cb.on_done(ud, t, res, detail);
    }
    transfer_free(t, code == CURLE_OK && !cancelled && !t->paused);
}

static void curl_cancel(struct up_transfer *t)
{
    if (t->in_callback) {
        /* Inside on_head/on_data: curl aborts the transfer when the callback returns 0,
         * and check_done reaps it without callbacks. Inside on_done: freed right after. */
        t->cancelled = true;
        return;
    }
    if (t->paused) {
        /* A paused transfer is still counted by curl; removing it closes the connection. */
        t->paused = false;
    }
    transfer_free(t, false);
}

static void curl_pause(struct up_transfer *t)
{
    if (t->paused || t->cancelled)
        return;
    t->paused = true;
    curl_easy_pause(t->easy, CURLPAUSE_RECV);
}

static void curl_resume(struct up_transfer *t)
{
    if (!t->paused || t->cancelled)
        return;
    t->paused = false;
    curl_easy_pause(t->easy, CURLPAUSE_CONT);
}

const struct up_client_ops up__curl_ops = {
    .name = "curl",
    .size = transfer_size,
    .start = curl_start,
    .cancel = curl_cancel,
    .pause = curl_pause,
    .resume = curl_resume,
};
