/* SPDX-License-Identifier: MIT */
/* admin_clients.c -- the clients over the admin API (admin key):
 *   GET  /admin/clients                   each client's routes, limits, requests in flight,
 *                                         spend this budget period and budget left
 *   POST /admin/clients/{id}/reset-spend  the spend of its current period back to 0
 * The spend shown is the store's (read in call order, so every cost already added is in
 * it); the reset answers once the store has the 0. See docs/internals/spend.md. */
#include <stdlib.h>
#include <string.h>

#include "api/access.h"
#include "api/admin_clients.h"
#include "api/status_history.h"
#include "core/buf.h"
#include "core/clock.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "router/spend.h"
#include "store/store.h"

static const char *const period_names[] = {"day", "month", "total"};

/* A listing waiting for the store's reads, one per client. Owned by itself: freed when the
 * last read answered (the reads always answer), after the client may have gone. */
struct clients_list {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    struct worker *w;
    struct cfg *cfg;     /* a reference: the clients listed */
    uint64_t now_ms;
    size_t due;          /* reads not answered yet */
    struct clients_slot {
        struct clients_list *l;
        double usd; /* < 0: unknown */
    } *slots;
};

static void put_client(struct bsc_buf *b, struct clients_list *l, size_t i)
{
    const struct cfg_client *c = &l->cfg->clients[i];
    struct spend_view v;
    double usd = l->slots[i].usd;

    spend_peek(l->w->gw->spend, c->id, c->budget.period, l->now_ms, &v);
    if (usd < 0 && v.known)
        usd = v.usd;
    bsc_buf_append_cstr(b, "{\"id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(c->id));
    bsc_buf_append_cstr(b, ",\"routes\":[");
    for (size_t j = 0; j < c->n_routes; j++) {
        bsc_buf_append_cstr(b, j ? "," : "");
        bsc_buf_append_json_str(b, bsc_str_cstr(c->routes[j]->id));
    }
    bsc_buf_appendf(b, "%s%s],\"limits\":{\"rpm\":%u,\"tpm\":%u,\"max_concurrency\":%u},"
                       "\"in_flight\":%u,\"period\":\"%s\",\"period_start_ms\":%llu,",
                    c->all_routes && c->n_routes ? "," : "", c->all_routes ? "\"*\"" : "",
                    c->rpm, c->tpm, c->max_concurrency, v.inflight,
                    period_names[c->budget.period],
                    (unsigned long long)spend_period_start(c->budget.period, l->now_ms));
    bsc_buf_append_cstr(b, "\"spend_usd\":");
    bsc_buf_appendf(b, usd < 0 ? "null" : "%.8f", usd);
    if (c->budget.usd < 0) {
        bsc_buf_append_cstr(b, ",\"budget_usd\":null,\"budget_left_usd\":null}");
        return;
    }
    bsc_buf_appendf(b, ",\"budget_usd\":%.8f,\"budget_left_usd\":", c->budget.usd);
    bsc_buf_appendf(b, usd < 0 ? "null}" : "%.8f}",
                    usd < 0 ? 0 : c->budget.usd > usd ? c->budget.usd - usd : 0.0);
}

static void list_send(struct clients_list *l)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 16u << 20);
    bsc_buf_append_cstr(&b, "{\"clients\":[");
    for (size_t i = 0; i < l->cfg->n_clients; i++) {
        bsc_buf_append_cstr(&b, i ? "," : "");
        put_client(&b, l, i);
    }
    bsc_buf_append_cstr(&b, "]}");
    srv_resp_send(l->req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

static void list_finish(struct clients_list *l)
{
    if (l->req) {
        struct api_line line;

        srv_req_on_abort(l->req, NULL, NULL);
        api__line_begin(&line, l->req); /* before the answer: <req> is the server's after */
        snprintf(line.detail, sizeof(line.detail), "list clients");
        list_send(l);
        api__line_end(&line, 200, NULL);
    }
    cfg_unref(l->cfg);
    free(l->slots);
    free(l);
}

static void on_read(enum bsc_err err, double usd, void *ud)
{
    struct clients_slot *s = ud;

    s->usd = err ? -1.0 : usd;
    if (--s->l->due == 0)
        list_finish(s->l);
}

static void on_list_gone(struct srv_req *req, void *ud)
{
    struct clients_list *l = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    l->req = NULL;
}

/* Reads every client's spend (a read the store cannot take shows the book's figure). */
static void list_clients(struct worker *w, struct srv_req *req, struct cfg *cfg)
{
    struct clients_list *l = calloc(1, sizeof(*l));
    size_t n = cfg->n_clients;

    if (!l || !(l->slots = calloc(n ? n : 1, sizeof(*l->slots)))) {
        free(l);
        srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return;
    }
    *l = (struct clients_list){req, w, cfg_ref(cfg), bsc_wall_ms(), 1, l->slots};
    for (size_t i = 0; i < n; i++) {
        const struct cfg_client *c = &cfg->clients[i];

        l->slots[i] = (struct clients_slot){l, -1.0};
        if (w->gw->store &&
            store_spend_add(w->gw->store, srv_req_loop(req), bsc_str_cstr(c->id),
                            spend_period_start(c->budget.period, l->now_ms), 0, 0, on_read,
                            &l->slots[i]) == BSC_OK)
            l->due++;
    }
    srv_req_on_abort(req, on_list_gone, l);
    if (--l->due == 0) { /* no read started: answered now, on api_handle's own line */
        srv_req_on_abort(req, NULL, NULL);
        api__line_detail(req, "list clients");
        list_send(l);
        l->req = NULL;
        list_finish(l);
    }
}

/* ---- reset-spend ---------------------------------------------------------------------- */

struct reset_call {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    char id[CFG_CLIENT_ID_MAX + 1];
};

static void reset_answer(struct srv_req *req, const char *id, enum bsc_err err)
{
    struct bsc_buf b;

    if (err) {
        srv_resp_error(req, 503, "server_error", "store_unavailable",
                       "the spend was reset in this process but not stored; try again");
        return;
    }
    bsc_buf_init(&b, 512);
    bsc_buf_append_cstr(&b, "{\"id\":");
    bsc_buf_append_json_str(&b, bsc_str_cstr(id));
    bsc_buf_append_cstr(&b, ",\"spend_usd\":0}");
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

static void on_reset(enum bsc_err err, double usd, void *ud)
{
    struct reset_call *c = ud;

    (void)usd;
    if (c->req) {
        struct api_line line;

        srv_req_on_abort(c->req, NULL, NULL);
        api__line_begin(&line, c->req);
        snprintf(line.detail, sizeof(line.detail), "reset-spend client %s", c->id);
        reset_answer(c->req, c->id, err);
        api__line_end(&line, err ? 503 : 200, NULL);
    }
    free(c);
}

static void on_reset_gone(struct srv_req *req, void *ud)
{
    struct reset_call *c = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL;
}

static void reset_spend(struct worker *w, struct srv_req *req, const struct cfg_client *c)
{
    struct reset_call *rc = calloc(1, sizeof(*rc));
    enum bsc_err err;

    if (!rc) {
        srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return;
    }
    rc->req = req;
    snprintf(rc->id, sizeof(rc->id), "%s", c->id);
    err = spend_reset(w->gw->spend, w->gw->store, srv_req_loop(req), c->id, c->budget.period,
                      bsc_wall_ms(), on_reset, rc);
    status_history_note(w->gw->history, bsc_wall_ms(), "admin", c->id, NULL, "spend reset",
                        "POST /admin/clients/{id}/reset-spend"); /* the book's is, at once */
    if (err || !w->gw->store) { /* no store call running: answered now */
        api__line_detail(req, "reset-spend client %s", c->id);
        reset_answer(req, c->id, err);
        free(rc);
        return;
    }
    srv_req_on_abort(req, on_reset_gone, rc);
}

bool api__admin_clients(struct worker *w, struct srv_req *req, struct cfg *cfg,
                        struct bsc_str rest, const char *admin)
{
    static const char verb[] = "/reset-spend";
    bool get = bsc_str_eq(srv_req_method(req), BSC_STR("GET"));
    bool post = bsc_str_eq(srv_req_method(req), BSC_STR("POST"));
    const struct cfg_client *c;
    struct bsc_str id;

    if (bsc_str_eq(rest, BSC_STR("clients")) && get) {
        list_clients(w, req, cfg);
        return true;
    }
    if (!post || !bsc_str_starts(rest, BSC_STR("clients/")) || rest.len <= 8 + strlen(verb) ||
        memcmp(rest.p + rest.len - strlen(verb), verb, strlen(verb)) != 0)
        return false;
    id = bsc_str_make(rest.p + 8, rest.len - 8 - strlen(verb));
    c = cfg_client_find(cfg, id);
    if (!c) {
        api__line_detail(req, "reset-spend client %.*s: not found",
                         (int)(id.len > 64 ? 64 : id.len), id.p);
        srv_resp_error(req, 404, "invalid_request_error", "client_not_found",
                       "no such client in the running config");
        return true;
    }
    keyring_audit(w->gw->keyring, w->gw->store, srv_req_loop(req),
                  keyring_audit_entry(admin, "spend.reset", c->id, NULL, NULL), NULL, NULL);
    reset_spend(w, req, c);
    return true;
}

/* ---- the status page's view: the book only, never a store read ------------------------- */

void api__put_clients_status(struct bsc_buf *b, struct worker *w, const struct cfg *cfg)
{
    uint64_t now = bsc_wall_ms();

    bsc_buf_append_cstr(b, ",\"clients\":[");
    for (size_t i = 0; i < cfg->n_clients; i++) {
        const struct cfg_client *c = &cfg->clients[i];
        struct spend_view v;

        spend_peek(w->gw->spend, c->id, c->budget.period, now, &v);
        bsc_buf_append_cstr(b, i ? ",{\"id\":" : "{\"id\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(c->id));
        bsc_buf_appendf(b, ",\"in_flight\":%u,\"period\":\"%s\",\"spend_usd\":", v.inflight,
                        period_names[c->budget.period]);
        bsc_buf_appendf(b, v.known ? "%.8f" : "null", v.usd);
        bsc_buf_append_cstr(b, ",\"budget_usd\":");
        bsc_buf_appendf(b, c->budget.usd < 0 ? "null}" : "%.8f}", c->budget.usd);
    }
    bsc_buf_append_char(b, ']');
}
