/* SPDX-License-Identifier: MIT */
/* cache_embed.c -- the semantic cache around one request (cache_embed.h). The context key
 * hashes what must match exactly: the canonical body without "messages" (cache/canon.c),
 * then each message's canonical text with the last user message's place left empty, and
 * the embeddings target. The embedding is one POST of {"model","input"} through the
 * target's adapter on the worker's upstream multi, like a shadow copy (shadow.c) but with
 * no breaker of its own: it is a lookup, and its failure is a miss. What it cost at the
 * embeddings target's price is the request's, as any attempt's: in its cost_usd (so in
 * x-bascule-cost-usd, a hit's too), in the client's spend, and in bascule_cost_usd_total
 * under the embeddings target (request.c). */
#include "router/cache_embed.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache/canon.h"
#include "cache/key.h"
#include "cache/semantic.h"
#include "core/clock.h"
#include "core/json_get.h"
#include "core/json_scan.h"
#include "core/log.h"
#include "health/hstate.h"
#include "policy/cost.h"
#include "router/cache_parts.h"
#include "router/internal.h"
#include "router/req_wake.h"
#include "router/spend.h"

#define CANON_MAX_BYTES    (16u << 20)
#define QUESTION_MAX_BYTES (1u << 20)
#define EMBED_MAX_RESPONSE (8u << 20)

/* Top-level members left out of the context: how the answer is carried or who asked (as
 * the exact key), and the messages, hashed one by one below. */
static const char *const ignored[] = {"stream", "stream_options", "user", "request_id", "messages"};

/* One embedding in flight. Its own allocation: cut loose (and cancelled) when the request
 * ends first. */
struct embed {
    struct request *r;           /* borrowed; the request owns this context */
    const struct cfg_target *t;  /* borrowed from r->cfg */
    struct json_object *req;     /* owned: {"model","input"} */
    struct prov_http http;       /* owned */
    struct up_transfer *xfer;    /* NULL once done */
    struct bsc_buf resp, answer; /* owned */
    int status;
    enum up_result res;
    bool too_large;
};

/* ---- the context key ---- */

/* Whether the canonical message <m> is the client's ("role":"user"). Canonical text writes
 * "user" plainly, so the raw span compares. */
static bool is_user(struct bsc_str m)
{
    struct bsc_str role;

    return bsc_json_member_span(m, BSC_STR("role"), &role) && bsc_str_eq(role, BSC_STR("\"user\""));
}

/* The text of the canonical user message <m>: a string content, or its text parts joined
 * by newlines. False for anything else (an image cannot be embedded as text). */
static bool question_of(struct bsc_str m, struct bsc_buf *out)
{
    struct json_object *root = prov_parse_json(m), *content;
    bool ok = false;

    content = bsc_json_get(root, "content");
    if (content && json_object_is_type(content, json_type_string)) {
        ok = bsc_buf_append(out, json_object_get_string(content),
                            (size_t)json_object_get_string_len(content)) == BSC_OK;
    } else if (content && json_object_is_type(content, json_type_array)) {
        ok = json_object_array_length(content) > 0;
        for (size_t i = 0; ok && i < json_object_array_length(content); i++) {
            struct json_object *part = json_object_array_get_idx(content, i);
            const char *type = json_object_get_string(bsc_json_get(part, "type"));
            struct json_object *text = bsc_json_get(part, "text");
            ok = type && strcmp(type, "text") == 0 && text &&
                 json_object_is_type(text, json_type_string) &&
                 (i == 0 || bsc_buf_append_char(out, '\n') == BSC_OK) &&
                 bsc_buf_append(out, json_object_get_string(text),
                                (size_t)json_object_get_string_len(text)) == BSC_OK;
        }
    }
    json_object_put(root);
    return ok && out->len > 0;
}

/* Each message's canonical text, NUL-separated in <all>; the index of the last user
 * message in *<last> (-1: none). */
static bool messages_canon(struct bsc_str arr, struct bsc_buf *all, long *last, size_t *n)
{
    struct bsc_str elem;
    size_t pos = 0;

    *last = -1;
    *n = 0;
    while (bsc_json_array_next(arr, &pos, &elem)) {
        size_t start = all->len;
        if (canon_request(elem, NULL, 0, all) != CANON_OK)
            return false;
        if (is_user(bsc_str_make(all->p + start, all->len - start)))
            *last = (long)*n;
        if (bsc_buf_append_char(all, '\0') != BSC_OK)
            return false;
        (*n)++;
    }
    return true;
}

/* <ctx>: "semantic:<target>\0<canonical body without messages>\0" then every message's
 * canonical text, "null" in the last user message's place, each followed by "\0"
 * (canonical text never holds a raw NUL). The question's text goes to r->c.question. */
static bool context_text(struct request *r, struct bsc_buf *ctx)
{
    struct bsc_str body = srv_req_body(r->sreq), arr;
    struct bsc_buf msgs;
    long last;
    size_t n, off = 0;
    bool ok = false;

    if (!bsc_json_member_span(body, BSC_STR("messages"), &arr) ||
        bsc_json_kind_of(arr) != BSC_JSON_ARRAY)
        return false;
    bsc_buf_init(&msgs, CANON_MAX_BYTES);
    if (bsc_buf_appendf(ctx, "semantic:%s", r->route->cache.embed_target->id) != BSC_OK ||
        bsc_buf_append_char(ctx, '\0') != BSC_OK ||
        canon_request(body, ignored, BSC_ARRAY_LEN(ignored), ctx) != CANON_OK ||
        bsc_buf_append_char(ctx, '\0') != BSC_OK || !messages_canon(arr, &msgs, &last, &n) ||
        last < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(msgs.p + off);
        struct bsc_str m = bsc_str_make(msgs.p + off, len);
        if (i == (size_t)last && !question_of(m, &r->c.question))
            goto out;
        if (bsc_buf_append(ctx, i == (size_t)last ? "null" : m.p, i == (size_t)last ? 4 : len) !=
                BSC_OK ||
            bsc_buf_append_char(ctx, '\0') != BSC_OK)
            goto out;
        off += len + 1;
    }
    ok = true;
out:
    bsc_buf_cleanup(&msgs);
    return ok;
}

bool reqcache_embed_key(struct request *r)
{
    struct bsc_buf ctx;
    char scope[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;
    bool ok;

    reqcache_parts(r->route, &r->ident, r->input.stream, r->input.include_usage, scope,
                   &parts);
    bsc_buf_init(&ctx, CANON_MAX_BYTES);
    bsc_buf_init(&r->c.question, QUESTION_MAX_BYTES);
    ok = r->route->cache.embed_target && context_text(r, &ctx);
    if (ok) {
        parts.canonical = bsc_buf_str(&ctx);
        cache_key_make(&parts, &r->c.key);
        r->c.keyed = true;
    }
    bsc_buf_cleanup(&ctx);
    return ok;
}

/* ---- the exchange ---- */

static void embed_free(struct embed *e)
{
    if (e->xfer)
        up_cancel(e->xfer);
    json_object_put(e->req);
    bsc_buf_cleanup(&e->http.url);
    bsc_buf_cleanup(&e->http.headers);
    bsc_buf_cleanup(&e->http.body);
    bsc_buf_cleanup(&e->resp);
    bsc_buf_cleanup(&e->answer);
    free(e);
}

static struct prov_call make_call(const struct embed *e, int key_idx)
{
    return (struct prov_call){
        .op = PROV_OP_EMBEDDINGS,
        .provider = e->t->provider,
        .target = e->t,
        .key = key_idx >= 0 ? e->t->provider->keys[key_idx] : NULL,
        .req = e->req,
        .request_id = e->r->ident.id,
        .created = e->r->ident.created,
    };
}

/* The first vector of an OpenAI embeddings answer, as unit floats in r->c.vec. */
static void take_vector(struct request *r, struct bsc_str answer)
{
    struct json_object *root = prov_parse_json(answer), *v;
    size_t dim;
    float *vec;

    v = bsc_json_get(bsc_json_idx(bsc_json_get(root, "data"), 0), "embedding");
    dim = v && json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
    if (dim == 0 || dim > CACHE_SEM_MAX_DIM || !(vec = malloc(dim * sizeof(*vec)))) {
        json_object_put(root);
        return;
    }
    for (size_t i = 0; i < dim; i++) {
        double d = json_object_get_double(json_object_array_get_idx(v, i));
        /* Past a float's range the conversion is undefined: such a vector is refused. */
        vec[i] = isfinite(d) && fabs(d) <= FLT_MAX ? (float)d : NAN;
    }
    json_object_put(root);
    if (!cache_sem_normalize(vec, dim)) {
        free(vec);
        return;
    }
    r->c.vec = vec;
    r->c.dim = dim;
}

/* The embedding's usage at its target's price, charged to the request like an attempt. */
static void charge(struct request *r, const struct cfg_target *t, struct prov_usage *usage)
{
    double cost;

    if (!(t->price.input_per_mtok > 0) || usage->input_tokens < 0)
        return;
    if (usage->output_tokens < 0)
        usage->output_tokens = 0;
    cost = cost_of_usage(&t->price, usage);
    if (!(cost > 0))
        return;
    req_cost_add(&r->cost, cost, false);
    r->c.embed_cost_usd += cost;
    spend_record(r, cost);
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct embed *e = ud;

    (void)t;
    e->status = status;
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct embed *e = ud;

    (void)t;
    if (!e->too_large && bsc_buf_append(&e->resp, p, len) != BSC_OK)
        e->too_large = true; /* the rest is read and dropped: the answer is refused */
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct embed *e = ud;
    struct request *r = e->r;
    struct prov_usage usage = PROV_USAGE_UNKNOWN;
    struct fail_info fail;
    struct prov_call call;

    (void)t;
    e->xfer = NULL;
    fail_info_init(&fail);
    if (res == UP_OK && !e->too_large && e->status >= 200 && e->status < 300) {
        call = make_call(e, -2);
        if (prov_map_response(prov_ops_for(e->t->provider->kind), &call, e->status,
                              bsc_buf_str(&e->resp), &e->answer, &usage, &fail) == BSC_OK) {
            charge(r, e->t, &usage);
            take_vector(r, e->answer.len ? bsc_buf_str(&e->answer) : bsc_buf_str(&e->resp));
        }
    }
    if (!r->c.vec)
        LOG_DEBUG("%s: semantic cache: no embedding from %s (%s, status %d%s%s): a miss", r->ident.id,
                  e->t->id, up_result_name(res), e->status, detail ? ", " : "",
                  detail ? detail : "");
    r->c.embed = NULL;
    r->c.waiting = false;
    embed_free(e);
    req_wake_run(r);
}

static const struct up_callbacks up_cb = {on_head, on_data, on_done};

static bool send_embed(struct embed *e, int key_idx)
{
    struct prov_call call = make_call(e, key_idx);
    const struct cfg_provider *p = e->t->provider;
    const char *lines[UP_REQUEST_MAX_HEADERS];
    size_t n = 0;
    char why[256];
    struct up_request ureq;

    bsc_buf_init(&e->http.url, 8192);
    bsc_buf_init(&e->http.headers, 64u * 1024u);
    bsc_buf_init(&e->http.body, QUESTION_MAX_BYTES * 2 + 65536);
    if (prov_ops_for(p->kind)->build(&call, &e->http, why, sizeof(why)) != BSC_OK ||
        prov_header(&e->http.headers, "X-Request-Id", "%s", e->r->ident.id) != BSC_OK)
        return false;
    for (size_t off = 0; off < e->http.headers.len && n < BSC_ARRAY_LEN(lines);) {
        lines[n++] = e->http.headers.p + off;
        off += strlen(e->http.headers.p + off) + 1;
    }
    ureq = (struct up_request){
        .url = e->http.url.p,
        .method = e->http.method,
        .headers = lines,
        .n_headers = n,
        .body = e->http.body.p,
        .body_len = e->http.body.len,
        .connect_timeout_ms = p->connect_timeout_ms,
        .ca_file = p->tls_ca_file,
        .timeout_ms = e->r->route->cache.embed_timeout_ms,
    };
    return up_start(e->r->w->up, &ureq, &up_cb, e, &e->xfer) == BSC_OK;
}

bool reqcache_embed_start(struct request *r)
{
    const struct cfg_target *t = r->route->cache.embed_target;
    struct embed *e;
    uint64_t soonest = 0;
    int key;

    if (!t || t->disabled || t->provider->disabled ||
        (key = hstate_key_next(r->gw->hs, t->provider, bsc_now_ms(), &soonest)) == -1)
        return false;
    if (!(e = calloc(1, sizeof(*e))))
        return false;
    e->r = r;
    e->t = t;
    bsc_buf_init(&e->resp, EMBED_MAX_RESPONSE);
    bsc_buf_init(&e->answer, EMBED_MAX_RESPONSE);
    e->req = json_object_new_object();
    if (!e->req || json_object_object_add(e->req, "model", json_object_new_string(t->model)) != 0 ||
        json_object_object_add(
            e->req, "input", json_object_new_string_len(r->c.question.p, (int)r->c.question.len)) !=
            0 ||
        !send_embed(e, key)) {
        embed_free(e);
        return false;
    }
    r->c.embed = e;
    r->c.asked = true;
    r->c.waiting = true; /* the answer comes from the loop, never inside up_start */
    return true;
}

void reqcache_embed_finish(struct request *r)
{
    if (r->c.embed)
        embed_free(r->c.embed); /* cancels: its callback never runs */
    r->c.embed = NULL;
    BSC_FREE(r->c.vec);
    bsc_buf_cleanup(&r->c.question);
}
