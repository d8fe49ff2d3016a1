/* SPDX-License-Identifier: MIT */
/* admin_cache_shared.c -- DELETE /admin/cache[?route=<id>] when the answers live in Redis
 * (cache.store: redis): each route named gets its generation bumped (store_gen_bump), one
 * INCR, so every instance misses that route's older answers from the next lookup on; they
 * end with their ttl_s. Without route=, every route of the running configuration with a
 * cache. Each bump is bounded by store.timeout_ms: a slow or dead Redis is a 503 saying
 * so. The answer: {"route", "store":"redis", "generations":{"<route>":<new generation>}}.
 * docs/internals/cache.md. */
#include <stdlib.h>
#include <string.h>

#include "api/access.h"
#include "api/admin_cache_shared.h"
#include "core/buf.h"
#include "router/gateway.h"
#include "store/store.h"

struct clear_call {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    size_t pending;      /* bumps not answered yet */
    bool failed;         /* one of them was not */
    char *route;         /* owned: the route= asked for; NULL: every route with a cache */
    struct bsc_buf out;  /* the "generations" members so far */
};

/* Sends the answer; says in <detail> what was done. Returns the status. */
static int respond(struct clear_call *c, char *detail, size_t len)
{
    struct bsc_buf b;

    if (c->failed) {
        snprintf(detail, len, "cache clear: redis did not confirm it");
        srv_resp_error(c->req, 503, "server_error", "store_unavailable",
                       "Redis did not confirm the clear within store.timeout_ms (the shared "
                       "response cache is unchanged or partly cleared); repeat it");
        return 503;
    }
    bsc_buf_init(&b, 2u << 20);
    bsc_buf_append_cstr(&b, "{\"route\":");
    if (c->route)
        bsc_buf_append_json_str(&b, bsc_str_cstr(c->route));
    else
        bsc_buf_append_cstr(&b, "null");
    bsc_buf_append_cstr(&b, ",\"store\":\"redis\",\"generations\":{");
    bsc_buf_append(&b, c->out.p, c->out.len);
    bsc_buf_append_cstr(&b, "}}");
    snprintf(detail, len, "cache cleared in redis: %.120s", c->route ? c->route : "every route");
    srv_resp_send(c->req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
    return 200;
}

/* The answer once the last bump came back: the request's line is written here. */
static void answer_late(struct clear_call *c)
{
    struct api_line line;
    int status;

    srv_req_on_abort(c->req, NULL, NULL);
    api__line_begin(&line, c->req);
    status = respond(c, line.detail, sizeof(line.detail));
    api__line_end(&line, status, NULL);
}

static void call_free(struct clear_call *c)
{
    bsc_buf_cleanup(&c->out);
    free(c->route);
    free(c);
}

struct bump {
    struct clear_call *c;
    char route[]; /* NUL-terminated */
};

static void on_bumped(enum bsc_err err, uint64_t gen, struct bsc_str value, void *ud)
{
    struct bump *bp = ud;
    struct clear_call *c = bp->c;

    (void)value;
    if (err) {
        c->failed = true;
    } else {
        if (c->out.len)
            bsc_buf_append_char(&c->out, ',');
        bsc_buf_append_json_str(&c->out, bsc_str_cstr(bp->route));
        bsc_buf_appendf(&c->out, ":%llu", (unsigned long long)gen);
    }
    free(bp);
    if (--c->pending)
        return;
    if (c->req)
        answer_late(c);
    call_free(c);
}

static void on_gone(struct srv_req *req, void *ud)
{
    struct clear_call *c = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL;
}

/* Starts the bump of <route>; false when the store refused it at once. */
static bool start_bump(struct clear_call *c, struct worker *w, struct bsc_str route)
{
    struct bump *bp = malloc(sizeof(*bp) + route.len + 1);

    if (!bp)
        return false;
    bp->c = c;
    memcpy(bp->route, route.p, route.len);
    bp->route[route.len] = '\0';
    c->pending++;
    if (store_gen_bump(w->gw->store, srv_req_loop(c->req), route, on_bumped, bp) != BSC_OK) {
        c->pending--;
        free(bp);
        return false;
    }
    return true;
}

void api__admin_cache_clear_shared(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                                   struct bsc_str route)
{
    struct clear_call *c = calloc(1, sizeof(*c));
    char detail[192];
    bool ok;

    if (!c || (route.len && !(c->route = bsc_str_dup(route)))) {
        free(c);
        srv_resp_error(req, 503, "server_error", "out_of_memory", "try again");
        return;
    }
    c->req = req;
    bsc_buf_init(&c->out, 1u << 20);
    c->pending = 1; /* held while the bumps start: none of them can end the call meanwhile */
    ok = w->gw->store != NULL;
    if (ok && route.len)
        ok = start_bump(c, w, route);
    for (size_t i = 0; ok && !route.len && i < cfg->n_routes; i++)
        if (cfg->routes[i].cache.mode != CFG_CACHE_OFF)
            ok = start_bump(c, w, bsc_str_cstr(cfg->routes[i].id));
    c->failed |= !ok;
    if (--c->pending) { /* the last callback answers */
        srv_req_on_abort(req, on_gone, c);
        return;
    }
    respond(c, detail, sizeof(detail)); /* nothing pending: the handler writes the line */
    api__line_detail(req, "%s", detail);
    call_free(c);
}
