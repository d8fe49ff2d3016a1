/* SPDX-License-Identifier: MIT */
/* refresh.c -- the one refresher thread of kind vertex's credentials: it fetches each
 * credential's access token before the old one expires (GAUTH_REFRESH_MARGIN_S ahead), one
 * exchange at a time (so a credential is never refreshed twice at once, however many requests
 * need it), and writes it to core/token_table.h. Requests only read that table: none waits
 * for a refresh. A failed exchange is retried with a growing wait (1 s .. 60 s); the old token
 * serves while it is valid, and after it expires requests go out without one and are refused
 * as auth by Vertex (docs/internals/provider-bedrock-vertex.md). Blocking libcurl in its own
 * thread, never on an event loop, like the telemetry exporter. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "core/clock.h"
#include "core/json_get.h"
#include "core/json_parse.h"
#include "core/log.h"
#include "core/str.h"
#include "core/token_table.h"
#include "gauth/gauth.h"

#define CRED_MAX            32
#define FILE_MAX            (64 * 1024)
#define ANSWER_MAX          (64 * 1024)
#define TOKEN_FILE_PERIOD_S 30 /* a token file is read again this often */
#define FAIL_WAIT_MAX_S     60
#define EXCHANGE_TIMEOUT_S  10

struct cred {
    char *key;       /* the table key: the file path */
    char *token_url; /* configured; NULL = the account's token_uri, else Google's */
    bool token_file; /* a ready token, not a service account */
    int64_t next_s;  /* when to fetch next (0 = now) */
    unsigned fails;
};

/* The refresher's state: a commented global like the telemetry exporter's queue; <lock>
 * guards everything but the thread handle. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool started, stopping;
    struct cred creds[CRED_MAX];
    size_t n;
} g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static int64_t now_s(void)
{
    return (int64_t)(bsc_wall_ms() / 1000);
}

/* ---- one exchange ----------------------------------------------------------------------- */

/* <s> without surrounding whitespace (line ends included); empty when what is left holds a
 * byte that cannot go into a header (a control character, a space, non-ASCII). */
static struct bsc_str token_text(struct bsc_str s)
{
    while (s.len && (unsigned char)s.p[0] <= ' ')
        s.p++, s.len--;
    while (s.len && (unsigned char)s.p[s.len - 1] <= ' ')
        s.len--;
    for (size_t i = 0; i < s.len; i++)
        if ((unsigned char)s.p[i] <= ' ' || (unsigned char)s.p[i] >= 0x7f)
            return BSC_STR("");
    return s;
}

static bool read_file(const char *path, struct bsc_buf *out)
{
    FILE *f = fopen(path, "r");
    char tmp[4096];
    size_t n;
    bool ok = f != NULL;

    while (ok && (n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        ok = bsc_buf_append(out, tmp, n) == BSC_OK;
    if (f)
        fclose(f);
    return ok;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    return bsc_buf_append(ud, p, size * n) == BSC_OK ? size * n : 0;
}

/* POSTs the grant for <assertion> to <url>; on success stores the token. Returns the
 * token's lifetime in seconds, or -1. */
static int64_t exchange(const char *key, const char *url, const char *assertion)
{
    CURL *c = curl_easy_init();
    struct bsc_buf form, answer;
    struct curl_slist *h = curl_slist_append(NULL,
                                             "Content-Type: application/x-www-form-urlencoded");
    struct json_object *o = NULL;
    long status = 0;
    int64_t life = -1;
    const char *tok;

    bsc_buf_init(&form, FILE_MAX);
    bsc_buf_init(&answer, ANSWER_MAX);
    if (c && h &&
        bsc_buf_appendf(&form,
                        "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
                        "&assertion=%s",
                        assertion) == BSC_OK) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, form.p);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)EXCHANGE_TIMEOUT_S);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    }
    if (status == 200)
        o = bsc_json_parse_whole(bsc_buf_str(&answer), 8);
    tok = bsc_json_get_str(o, "access_token");
    if (tok && tok[0] && token_text(bsc_str_cstr(tok)).len == strlen(tok)) {
        struct json_object *e = bsc_json_get(o, "expires_in");

        life = e && json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : 3600;
        if (bsc_token_put(key, tok, now_s() + life) != BSC_OK)
            life = -1;
    } else {
        LOG_WARN("vertex: the token endpoint %s answered %ld without an access token", url, status);
    }
    json_object_put(o);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    bsc_buf_cleanup(&form);
    bsc_buf_cleanup(&answer);
    return life;
}

/* One refresh of <cr> (a copy, outside the lock). Returns when to fetch next, 0 on failure. */
static int64_t refresh(const struct cred *cr)
{
    struct bsc_buf text, jwt;
    struct gauth_sa sa;
    int64_t life = -1, t = now_s();

    bsc_buf_init(&text, FILE_MAX);
    bsc_buf_init(&jwt, FILE_MAX);
    if (!read_file(cr->key, &text)) {
        LOG_WARN("vertex: cannot read %s", cr->key);
    } else if (cr->token_file) {
        struct bsc_str tok = token_text(bsc_buf_str(&text));
        char *s = bsc_str_dup(tok);

        if (s && tok.len && bsc_token_put(cr->key, s, t + 2 * TOKEN_FILE_PERIOD_S) == BSC_OK)
            life = TOKEN_FILE_PERIOD_S + GAUTH_REFRESH_MARGIN_S;
        free(s);
    } else if (gauth_sa_parse(text.p, text.len, &sa) != BSC_OK) {
        LOG_WARN("vertex: %s is not a service account key file", cr->key);
    } else {
        const char *url = cr->token_url  ? cr->token_url
                          : sa.token_uri ? sa.token_uri
                                         : GAUTH_TOKEN_URL;

        if (gauth_assertion(&sa, url, t, &jwt) == BSC_OK)
            life = exchange(cr->key, url, jwt.p);
        else
            LOG_WARN("vertex: the private key of %s cannot sign", cr->key);
        gauth_sa_cleanup(&sa);
    }
    if (text.p)
        memset(text.p, 0, text.len);
    bsc_buf_cleanup(&text);
    bsc_buf_cleanup(&jwt);
    if (life < 0)
        return 0;
    return t + (life - GAUTH_REFRESH_MARGIN_S > 10 ? life - GAUTH_REFRESH_MARGIN_S : 10);
}

/* ---- the thread -------------------------------------------------------------------------- */

static void copy_cred(struct cred *dst, const struct cred *src)
{
    *dst = *src;
    dst->key = bsc_str_dup(bsc_str_cstr(src->key));
    dst->token_url = src->token_url ? bsc_str_dup(bsc_str_cstr(src->token_url)) : NULL;
}

static void free_cred(struct cred *c)
{
    BSC_FREE(c->key);
    BSC_FREE(c->token_url);
}

/* The index of the first credential due at <t>, or -1; *<wait_s> is the wait until the
 * next one otherwise. The caller holds the lock. */
static long due(int64_t t, int64_t *wait_s)
{
    *wait_s = 60;
    for (size_t i = 0; i < g.n; i++) {
        if (g.creds[i].next_s <= t)
            return (long)i;
        if (g.creds[i].next_s - t < *wait_s)
            *wait_s = g.creds[i].next_s - t;
    }
    return -1;
}

static void finish(const char *key, int64_t next)
{
    for (size_t i = 0; i < g.n; i++) {
        struct cred *c = &g.creds[i];
        unsigned wait;

        if (strcmp(c->key, key) != 0)
            continue;
        if (next) {
            c->fails = 0;
            c->next_s = next;
        } else {
            c->fails++;
            wait = c->fails < 6 ? 1u << (c->fails - 1) : FAIL_WAIT_MAX_S;
            c->next_s = now_s() + (wait < FAIL_WAIT_MAX_S ? wait : FAIL_WAIT_MAX_S);
        }
    }
}

static void *run(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.lock);
    while (!g.stopping) {
        int64_t wait_s;
        long i = due(now_s(), &wait_s);
        struct cred work;
        int64_t next;

        if (i < 0) {
            struct timespec ts;

            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_s > 0 ? wait_s : 1;
            pthread_cond_timedwait(&g.wake, &g.lock, &ts);
            continue;
        }
        copy_cred(&work, &g.creds[i]);
        g.creds[i].next_s = now_s() + EXCHANGE_TIMEOUT_S * 2; /* in flight: not due again */
        pthread_mutex_unlock(&g.lock);
        next = work.key ? refresh(&work) : 0;
        pthread_mutex_lock(&g.lock);
        if (work.key)
            finish(work.key, next);
        free_cred(&work);
    }
    pthread_mutex_unlock(&g.lock);
    return NULL;
}

/* ---- the set of credentials ------------------------------------------------------------- */

static struct cred *find(const char *key)
{
    for (size_t i = 0; i < g.n; i++)
        if (strcmp(g.creds[i].key, key) == 0)
            return &g.creds[i];
    return NULL;
}

enum bsc_err gauth_sync(const struct cfg *cfg)
{
    struct cred next[CRED_MAX] = {0};
    size_t n = 0;
    enum bsc_err err = BSC_OK;

    pthread_mutex_lock(&g.lock);
    for (size_t i = 0; i < cfg->n_providers && n < CRED_MAX; i++) {
        const struct cfg_provider *p = &cfg->providers[i];
        const char *key = gauth_cred_key(p);
        struct cred *old;
        bool dup = false;

        for (size_t k = 0; key && k < n && !dup; k++)
            dup = strcmp(next[k].key, key) == 0;
        if (!key || dup)
            continue;
        old = find(key);
        next[n].key = bsc_str_dup(bsc_str_cstr(key));
        next[n].token_url = p->vertex.token_url ? bsc_str_dup(bsc_str_cstr(p->vertex.token_url))
                                                : NULL;
        next[n].token_file = p->vertex.token_file != NULL;
        next[n].next_s = old ? old->next_s : 0;
        next[n].fails = old ? old->fails : 0;
        if (!next[n].key)
            err = BSC_ENOMEM;
        n++;
    }
    for (size_t i = 0; i < g.n; i++)
        free_cred(&g.creds[i]);
    memcpy(g.creds, next, sizeof(next));
    g.n = n;
    if (n && !g.started && !g.stopping) {
        if (pthread_create(&g.thread, NULL, run, NULL) == 0)
            g.started = true;
        else
            err = BSC_ENOMEM;
    }
    pthread_cond_signal(&g.wake);
    pthread_mutex_unlock(&g.lock);
    return err;
}

void gauth_stop(void)
{
    bool join;

    pthread_mutex_lock(&g.lock);
    g.stopping = true;
    join = g.started;
    pthread_cond_signal(&g.wake);
    pthread_mutex_unlock(&g.lock);
    if (join)
        pthread_join(g.thread, NULL);
    pthread_mutex_lock(&g.lock);
    for (size_t i = 0; i < g.n; i++)
        free_cred(&g.creds[i]);
    g.n = 0;
    pthread_mutex_unlock(&g.lock);
}
