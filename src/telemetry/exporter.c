/* SPDX-License-Identifier: MIT */
/* exporter.c -- the span queue and its one exporter thread (exporter.h). The thread owns a
 * curl easy handle (connections to the collector are reused across batches) and a copy of
 * the endpoint, service name and headers, refreshed from the queue's copy when a request
 * brings a different config. Loops never wait on it: a slow or dead collector only fills
 * the queue, and the spans past its bound are dropped and counted. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "telemetry/exporter.h"

#define TEL_URL_MAX  1024
#define TEL_HDRS_MAX 4096 /* the configured headers, "Name: value\n" each */
#define TEL_FLUSH_MS 1000 /* how long an exit waits for the export in flight */

struct tel_settings {
    char url[TEL_URL_MAX];       /* <otlp_endpoint>/v1/traces */
    char service[TEL_STR_MAX];
    char headers[TEL_HDRS_MAX];
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stopping;
    struct metrics *metrics;
    struct tel_settings settings; /* the latest config's, under the lock */
    struct tel_span *ring;        /* TEL_QUEUE_MAX spans */
    size_t head, len;
    _Atomic uint64_t stop_by_ms; /* 0, or when an exit stops waiting for the collector */
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void settings_of(const struct cfg_telemetry *tc, struct tel_settings *s)
{
    size_t n = strlen(tc->otlp_endpoint), o = 0;

    while (n && tc->otlp_endpoint[n - 1] == '/')
        n--; /* "http://c:4318/" and "http://c:4318" name the same collector */
    snprintf(s->url, sizeof(s->url), "%.*s/v1/traces", (int)n, tc->otlp_endpoint);
    snprintf(s->service, sizeof(s->service), "%s", tc->service_name);
    s->headers[0] = '\0';
    for (size_t i = 0; i < tc->n_headers && o < sizeof(s->headers); i++) {
        int w = snprintf(s->headers + o, sizeof(s->headers) - o, "%s: %s\n", tc->headers[i].name,
                         tc->headers[i].value);
        if (w < 0 || (size_t)w >= sizeof(s->headers) - o) {
            s->headers[o] = '\0'; /* a header that does not fit is not sent cut */
            break;
        }
        o += (size_t)w;
    }
}

static void count(enum metric_id id, size_t n)
{
    if (n)
        metrics_inc(q.metrics, metrics_shared_shard(q.metrics), id, NULL, NULL, (double)n);
}

static size_t discard(void *p, size_t size, size_t n, void *ud)
{
    (void)p, (void)ud;
    return size * n;
}

/* Aborts the transfer once an exit has waited TEL_FLUSH_MS for it: a hung collector must
 * not hold up a shutdown for the whole TEL_TIMEOUT_MS. */
static int progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    uint64_t by = atomic_load(&q.stop_by_ms);

    (void)ud, (void)dt, (void)dn, (void)ut, (void)un;
    return by && bsc_now_ms() > by;
}

/* POSTs one encoded batch; true on a 2xx. */
static bool post(CURL *c, const struct tel_settings *s, const struct bsc_buf *body)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char line[TEL_HDRS_MAX], *save = NULL;
    long status = 0;
    CURLcode rc;

    snprintf(line, sizeof(line), "%s", s->headers);
    for (char *tok = strtok_r(line, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
        h = curl_slist_append(h, tok);
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->p);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body->len);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)TEL_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)TEL_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (rc != CURLE_OK || status < 200 || status > 299)
        LOG_DEBUG("span export to %s failed: %s (HTTP %ld)", s->url,
                  rc != CURLE_OK ? curl_easy_strerror(rc) : "status", status);
    return rc == CURLE_OK && status >= 200 && status <= 299;
}

/* Takes up to TEL_BATCH_MAX spans off the queue into <batch>; the caller holds the lock. */
static size_t take(struct tel_span *batch, struct tel_settings *s)
{
    size_t n = q.len < TEL_BATCH_MAX ? q.len : TEL_BATCH_MAX;

    for (size_t i = 0; i < n; i++)
        batch[i] = q.ring[(q.head + i) % TEL_QUEUE_MAX];
    q.head = (q.head + n) % TEL_QUEUE_MAX;
    q.len -= n;
    *s = q.settings;
    return n;
}

static void export_batch(CURL *c, const struct tel_span *batch, size_t n,
                         const struct tel_settings *s, struct bsc_buf *body)
{
    bool ok;

    bsc_buf_reset(body);
    ok = c && tel_otlp_encode(batch, n, s->service, body) == BSC_OK && post(c, s, body);
    count(ok ? METRIC_SPANS_EXPORTED : METRIC_SPANS_DROPPED, n);
}

static void *run(void *arg)
{
    struct tel_span *batch = malloc(TEL_BATCH_MAX * sizeof(*batch));
    struct tel_settings *s = malloc(sizeof(*s));
    CURL *c = curl_easy_init();
    struct bsc_buf body;
    bool stop = false;

    (void)arg;
    bsc_buf_init(&body, 16u << 20); /* a full batch of the longest spans fits */
    while (!stop) {
        size_t n = 0;

        pthread_mutex_lock(&q.lock);
        while (!q.len && !q.stopping)
            pthread_cond_wait(&q.wake, &q.lock);
        if (batch && s)
            n = take(batch, s);
        if (q.stopping) { /* one last batch: a dead collector must not hold up an exit */
            count(METRIC_SPANS_DROPPED, q.len);
            q.len = 0;
            stop = true;
        }
        pthread_mutex_unlock(&q.lock);
        if (n)
            export_batch(c, batch, n, s, &body);
    }
    bsc_buf_cleanup(&body);
    if (c)
        curl_easy_cleanup(c);
    free(batch);
    free(s);
    return NULL;
}

/* Starts the thread; the caller holds the lock. False when it cannot (then spans drop). */
static bool start(struct metrics *m)
{
    if (q.started)
        return true;
    q.ring = calloc(TEL_QUEUE_MAX, sizeof(*q.ring));
    if (!q.ring)
        return false;
    q.metrics = m;
    if (pthread_create(&q.thread, NULL, run, NULL) != 0) {
        free(q.ring);
        q.ring = NULL;
        return false;
    }
    q.started = true;
    return true;
}

void tel_export(const struct cfg_telemetry *tc, struct metrics *m, const struct tel_span *spans,
                size_t n)
{
    struct tel_settings s;
    size_t dropped = 0;

    if (!tc->otlp_endpoint || !*tc->otlp_endpoint || !n)
        return;
    memset(&s, 0, sizeof(s)); /* compared whole below */
    settings_of(tc, &s); /* outside the lock: a copy of the request's own config */
    pthread_mutex_lock(&q.lock);
    if (q.stopping || !start(m)) {
        dropped = n;
    } else {
        if (memcmp(&s, &q.settings, sizeof(s)) != 0)
            q.settings = s;
        for (size_t i = 0; i < n; i++) {
            if (q.len == TEL_QUEUE_MAX) {
                dropped = n - i;
                break;
            }
            q.ring[(q.head + q.len++) % TEL_QUEUE_MAX] = spans[i];
        }
        pthread_cond_signal(&q.wake);
    }
    pthread_mutex_unlock(&q.lock);
    if (dropped)
        metrics_inc(m, metrics_shared_shard(m), METRIC_SPANS_DROPPED, NULL, NULL,
                    (double)dropped);
}

void tel_shutdown(void)
{
    pthread_mutex_lock(&q.lock);
    if (!q.started) {
        pthread_mutex_unlock(&q.lock);
        return;
    }
    q.stopping = true;
    atomic_store(&q.stop_by_ms, bsc_now_ms() + TEL_FLUSH_MS);
    pthread_cond_signal(&q.wake);
    pthread_mutex_unlock(&q.lock);
    pthread_join(q.thread, NULL);
    free(q.ring);
    q.ring = NULL;
    q.started = false;
}
