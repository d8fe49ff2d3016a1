/* SPDX-License-Identifier: MIT */
/* ledger.c -- the tool side-effect ledger over HTTP (docs/design.md §6), for agent code:
 *   PUT /v1/ledger/{operation_id}  {"tool_name","state","external_reference"?}
 *       201 created, 200 moved (or repeated), 409 illegal transition, 400 bad input
 *   GET /v1/ledger/{operation_id}  200 with the entry, 404 when unknown
 * The answer of a PUT is sent only once the store's callback says the write is durable.
 * Validation lives in ledger/ledger.c and the atomic read-modify-write in store/. With
 * clients configured each client has its own name space of operation ids (ledger_scoped_id):
 * one cannot read or move another's entries.
 * See docs/internals/store.md. */
#include <string.h>

#include "api/access.h"
#include "api/ledger.h"
#include "api/openai_chat.h"
#include "core/buf.h"
#include "ledger/ledger.h"
#include "router/gateway.h"
#include "router/request.h"
#include "store/store.h"

#define ENTRY_JSON_MAX 4096 /* an entry's JSON is under 2 KiB even fully escaped */

/* One ledger call waiting for the store. Owned by itself: freed in the store callback,
 * which always comes (libuv contract), after the client may have gone. */
struct ledger_call {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    bool put;
    struct ledger_update upd;
    char op_id[LEDGER_OP_ID_MAX + 1];
    char key[LEDGER_OP_ID_MAX + 1]; /* the store's key: <op_id> in the caller's name space */
};

/* Starts the access-log line api_handle leaves to whoever keeps the request (access.c). */
static void line_begin(struct api_line *line, const struct ledger_call *c, struct srv_req *req)
{
    api__line_begin(line, req);
    snprintf(line->detail, sizeof(line->detail), "%s operation %s", c->put ? "put" : "get",
             c->op_id);
}

static void on_client_gone(struct srv_req *req, void *ud)
{
    struct ledger_call *c = ud;
    struct api_line line;

    line_begin(&line, c, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL; /* the store still calls back; the call is freed there */
}

static void send_entry(struct srv_req *req, int status, const struct ledger_entry *e)
{
    struct bsc_buf b;
    char location[32 + LEDGER_OP_ID_MAX];
    struct srv_header h = {BSC_STR("Location"), BSC_STR_NULL};

    bsc_buf_init(&b, ENTRY_JSON_MAX);
    if (ledger_entry_to_json(e, &b) != BSC_OK) {
        bsc_buf_cleanup(&b);
        srv_resp_error(req, 500, "server_error", "internal_error", "cannot format the entry");
        return;
    }
    snprintf(location, sizeof(location), "/v1/ledger/%s", e->op_id);
    h.value = bsc_str_cstr(location);
    srv_resp_send(req, status, "application/json", &h, status == 201 ? 1 : 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

/* The 409 of a refused put, saying which rule refused it. */
static void send_conflict(struct ledger_call *c, const struct ledger_entry *cur)
{
    char msg[600];
    const char *want = ledger_state_name(c->upd.state);

    if (!cur)
        snprintf(msg, sizeof(msg),
                 "operation '%s' does not exist; a new operation starts as 'planned' or "
                 "'started', not '%s'", c->op_id, want);
    else if (strcmp(cur->tool_name, c->upd.tool_name) != 0)
        snprintf(msg, sizeof(msg), "operation '%s' belongs to tool '%.128s', not '%.128s'",
                 c->op_id, cur->tool_name, c->upd.tool_name);
    else if (cur->state == c->upd.state)
        snprintf(msg, sizeof(msg),
                 "operation '%s' is already '%s' with another external_reference", c->op_id,
                 want);
    else
        snprintf(msg, sizeof(msg), "operation '%s' is '%s'%s; it cannot move to '%s'",
                 c->op_id, ledger_state_name(cur->state),
                 ledger_state_is_terminal(cur->state) ? " (terminal)" : "", want);
    srv_resp_error(c->req, 409, "invalid_request_error", "illegal_transition", msg);
}

static void answer(struct ledger_call *c, enum bsc_err err, const struct ledger_entry *e,
                   enum ledger_outcome outcome)
{
    char msg[200];

    switch (err) {
    case BSC_OK: send_entry(c->req, outcome == LEDGER_CREATED ? 201 : 200, e); return;
    case BSC_ESTATE: send_conflict(c, e); return;
    case BSC_ENOTFOUND:
        snprintf(msg, sizeof(msg), "no ledger entry for operation '%s'", c->op_id);
        srv_resp_error(c->req, 404, "invalid_request_error", "operation_not_found", msg);
        return;
    case BSC_ELIMIT:
        srv_resp_error(c->req, 503, "server_error", "store_full",
                       "the state store is full; try again later");
        return;
    default:
        srv_resp_error(c->req, 503, "server_error", "store_unavailable",
                       c->put ? "the ledger write was not stored; it is safe to retry"
                              : "the state store could not be read; try again");
    }
}

static void on_store(enum bsc_err err, const struct ledger_entry *e, enum ledger_outcome outcome,
                     void *ud)
{
    struct ledger_call *c = ud;

    if (c->req) {
        struct srv_req *req = c->req;
        struct api_line line;
        struct ledger_entry shown;

        srv_req_on_abort(req, NULL, NULL);
        line_begin(&line, c, req); /* before the answer: <req> is the server's after it */
        if (e) { /* the caller sees its own id, not the scoped store key */
            shown = *e;
            snprintf(shown.op_id, sizeof(shown.op_id), "%s", c->op_id);
            e = &shown;
        }
        answer(c, err, e, outcome);
        api__line_end(&line, srv_resp_status(req), NULL);
    }
    free(c);
}

/* Sends the error of a call the store refused at once. */
static void refused(struct srv_req *req, enum bsc_err err)
{
    if (err == BSC_EINVAL)
        api__bad_request(req, "invalid_request", NULL, "the ledger update is not valid");
    else
        srv_resp_error(req, 503, "server_error", "store_busy",
                       "the state store is overloaded; try again later");
}

static struct ledger_call *call_new(struct srv_req *req, struct bsc_str op_id, bool put)
{
    struct ledger_call *c = calloc(1, sizeof(*c));
    char scope[40] = "";

    if (!c) {
        srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return NULL;
    }
    c->req = req;
    c->put = put;
    memcpy(c->op_id, op_id.p, op_id.len); /* op_id was validated: <= LEDGER_OP_ID_MAX */
    if (srv_req_principal(req)[0]) /* clients: the authenticated client's name space */
        req_client_scope(req, scope, sizeof(scope));
    if (ledger_scoped_id(scope, op_id, c->key, sizeof(c->key)) != BSC_OK) {
        free(c);
        api__bad_request(req, "invalid_operation_id", "operation_id", "invalid operation id");
        return NULL;
    }
    return c;
}

static void start_put(struct worker *w, struct srv_req *req, struct bsc_str op_id)
{
    struct ledger_parse_err why = {0};
    struct ledger_update upd;
    struct ledger_call *c;
    enum bsc_err err = ledger_update_parse(srv_req_body(req), &upd, &why);

    if (err) {
        api__bad_request(req,
                         why.code ? why.code
                                  : err == BSC_EPARSE ? "invalid_json" : "invalid_request",
                         why.param, why.message);
        return;
    }
    c = call_new(req, op_id, true);
    if (!c)
        return;
    c->upd = upd;
    err = store_ledger_put(w->gw->store, srv_req_loop(req), bsc_str_cstr(c->key), &upd,
                           on_store, c);
    if (err) {
        free(c);
        refused(req, err);
        return;
    }
    srv_req_on_abort(req, on_client_gone, c);
}

static void start_get(struct worker *w, struct srv_req *req, struct bsc_str op_id)
{
    struct ledger_call *c = call_new(req, op_id, false);
    enum bsc_err err;

    if (!c)
        return;
    err = store_ledger_get(w->gw->store, srv_req_loop(req), bsc_str_cstr(c->key), on_store, c);
    if (err) {
        free(c);
        refused(req, err);
        return;
    }
    srv_req_on_abort(req, on_client_gone, c);
}

void api__ledger(struct worker *w, struct srv_req *req, struct bsc_str op_id)
{
    struct bsc_str m = srv_req_method(req);
    bool put = bsc_str_eq(m, BSC_STR("PUT")), get = bsc_str_eq(m, BSC_STR("GET"));

    if (!put && !get) {
        srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed",
                       "method not allowed; use GET or PUT");
        return;
    }
    if (!ledger_op_id_valid(op_id)) {
        api__bad_request(req, "invalid_operation_id", "operation_id",
                         "the operation id must be 1..128 characters of A-Z a-z 0-9 . _ : ~ -");
        return;
    }
    if (!w->gw->store) {
        srv_resp_error(req, 503, "server_error", "store_unavailable",
                       "this gateway runs without a state store");
        return;
    }
    if (put)
        start_put(w, req, op_id);
    else
        start_get(w, req, op_id);
}
