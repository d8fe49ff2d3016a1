/* SPDX-License-Identifier: MIT */
/* guard.c -- what keeps a request from acting twice (docs/design.md §6): Idempotency-Key records
 * (the first request's answer is stored and replayed to repeats; a repeat in flight gets
 * 409, another body under the same key 422), the tool ledger gate (a write_possible
 * operation whose ledger entry is started or unknown is never replayed: the client gets
 * reconcile_required), and the records of WORKFLOW_3 stops for reconciliation. Every call
 * to the store is asynchronous: the request waits in ADMIT, and a request whose client went
 * away meanwhile is kept alive until the store's callback has run (a zombie). */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/sha256.h"
#include "metrics/metrics.h"
#include "router/deliver_note.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/req_error.h"
#include "router/client_scope.h"
#include "router/req_wake.h"
#include "store/store.h"

static void no_op_ledger(enum bsc_err err, const struct ledger_entry *e,
                         enum ledger_outcome outcome, void *ud);

/* ---- the zombie rule: store callbacks may outlive the request's life ---- */

void guard_op_begin(struct request *r)
{
    r->g.store_ops++;
}

bool guard_op_end(struct request *r)
{
    r->g.store_ops--;
    if (!r->g.zombie)
        return true;
    if (r->g.store_ops == 0)
        req_wake_release(r);
    return false;
}

bool guard_can_free(struct request *r)
{
    if (r->g.store_ops == 0)
        return true;
    r->g.zombie = true; /* the last store callback frees it */
    return false;
}

static void no_op_done(enum bsc_err err, void *ud)
{
    struct request *r = ud;

    if (err && err != BSC_ENOTFOUND)
        LOG_WARN("%s: idempotency record not updated: %s", r ? r->ident.id : "-", bsc_err_str(err));
    if (r)
        guard_op_end(r);
}

/* ---- idempotency ---- */

/* The name space of a client's keys: the kind of credential it presented and a digest of
 * it, so records of two clients never meet, `x-api-key: V` and `Authorization: V` are two
 * clients, and no credential is stored. Requests without one share the gateway-wide
 * "anonymous" scope (docs/internals/store.md says why not the client address). The three
 * shapes cannot collide: "auth:" / "xkey:" + 32 hex digits, or "anonymous". */
/* One credential per worker thread remembered with its scope: a connection sends the same
 * one request after request, and a SHA-256 per request showed in profiles. The value is
 * compared whole, so a hit is exact. */
struct scope_memo {
    const char *kind; /* a static string; NULL: empty */
    size_t len;
    char value[256];
    char scope[40];
};

static _Thread_local struct scope_memo scope_memo;

static const char kind_auth[] = "authorization", kind_xkey[] = "x-api-key",
                  kind_client[] = "client";

/* "<tag>:" and 32 hex digits of SHA-256(<kind> NUL <value>), at most 40 bytes with the NUL.
 * "client:" + the id's digest: stable across restarts and key rotations. */
static void scope_digest(const char *kind, const char *tag, const char *value, size_t vlen,
                         char *out, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    struct scope_memo *m = &scope_memo;
    struct bsc_sha256 h;
    uint8_t d[BSC_SHA256_LEN];
    char scope[40];
    int n;

    if (m->kind == kind && m->len == vlen && memcmp(m->value, value, vlen) == 0) {
        bsc_str_copy(out, len, bsc_str_cstr(m->scope));
        return;
    }
    bsc_sha256_init(&h);
    bsc_sha256_update(&h, kind, strlen(kind) + 1); /* the NUL separates kind and value */
    bsc_sha256_update(&h, value, vlen);
    bsc_sha256_final(&h, d);
    n = snprintf(scope, sizeof(scope), "%s:", tag);
    for (size_t i = 0; i < 16 && (size_t)n + 2 < sizeof(scope); i++) {
        scope[n++] = hex[d[i] >> 4];
        scope[n++] = hex[d[i] & 15];
    }
    scope[n] = '\0';
    snprintf(out, len, "%s", scope);
    if (vlen <= sizeof(m->value)) {
        memcpy(m->value, value, vlen);
        m->len = vlen;
        m->kind = kind;
        memcpy(m->scope, scope, sizeof(scope));
    }
}

void req_client_scope(struct srv_req *sreq, char *out, size_t len)
{
    struct bsc_str cred = srv_req_header(sreq, BSC_STR("authorization"));
    const char *kind = kind_auth, *tag = "auth", *principal = srv_req_principal(sreq);

    if (principal[0]) { /* clients: the authenticated client, not its key */
        scope_digest(kind_client, "client", principal, strlen(principal), out, len);
        return;
    }
    if (!cred.len) {
        cred = srv_req_header(sreq, BSC_STR("x-api-key"));
        kind = kind_xkey;
        tag = "xkey";
    }
    if (!cred.len) {
        snprintf(out, len, "anonymous");
        return;
    }
    scope_digest(kind, tag, cred.p, cred.len, out, len);
}

/* The store key of ledger operation <id> for this request's caller: the client's own name
 * space when clients are configured, the shared one (the id itself) when the gateway is
 * open (ledger_scoped_id). */
static struct bsc_str ledger_key(const struct request *r, const char *id, char *buf, size_t len)
{
    char scope[40] = "";

    if (r->ident.client)
        scope_digest(kind_client, "client", r->ident.client->id, strlen(r->ident.client->id), scope,
                     sizeof(scope));
    if (ledger_scoped_id(scope, bsc_str_cstr(id), buf, len) != BSC_OK)
        snprintf(buf, len, "%s", id); /* not reached: ids are checked as they are read */
    return bsc_str_cstr(buf);
}

/* Fails the request closed when its Idempotency-Key cannot be looked up: serving it
 * without the record could run a request the client already ran once (a retry after a
 * lost answer) twice, which is the one thing the key promises will not happen. 503 and
 * retryable: the store may come back (docs/internals/store.md). */
static void idem_unavailable(struct request *r, enum bsc_err err)
{
    const char *code = err == BSC_ELIMIT ? "store_full" : "store_unavailable";

    LOG_WARN("%s: idempotency store %s (%s): request refused, not sent upstream", r->ident.id,
             err == BSC_ELIMIT ? "full or overloaded" : "unavailable", bsc_err_str(err));
    req__set_error(r, 503, "server_error", code,
                   "the Idempotency-Key could not be recorded (state store %s); nothing was "
                   "sent upstream and it is safe to retry",
                   err == BSC_ELIMIT ? "full or overloaded" : "unavailable");
    req__set_retry(r, OUTLOOK_TIME, OUTLOOK_DEFAULT_RETRY_MS);
    deliver_set_termination(r, "store_unavailable");
}

static void reply_replay(struct request *r, const struct idem_answer *a)
{
    struct srv_header h[4];
    size_t n = 0;

    h[n++] = (struct srv_header){BSC_STR("x-bascule-idempotent-replay"), BSC_STR("true")};
    if (a->stream) {
        h[n++] = (struct srv_header){BSC_STR("Content-Type"),
                                     BSC_STR("text/event-stream; charset=utf-8")};
        h[n++] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    } else {
        h[n++] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("application/json")};
    }
    srv_resp_send(r->sreq, a->status, NULL, h, n, a->body.p, a->body.len);
    deliver_whole_begin(r, a->status, "idempotent_replay");
    deliver_whole_sent(r, a->body.len, false);
}

/* The store's answer is recorded; the machine acts on it (guard_idem_verdict). A replay's
 * answer is the store's, valid during this callback only: the machine runs inside it. */
static void on_idem_begin(enum bsc_err err, const struct store_idem_result *res, void *ud)
{
    struct request *r = ud;

    if (!guard_op_end(r))
        return;
    r->g.waiting_store = false;
    if (r->m.state == REQ_ST_DONE || !r->sreq)
        return;
    r->g.idem_err = err;
    r->g.idem_decision = err ? IDEM_MISS : res->decision;
    r->g.idem_replay = !err && res->decision == IDEM_REPLAY ? res->answer : NULL;
    if (!err && res->decision == IDEM_MISS) {
        r->g.idem_active = true;
        r->g.idem_claim = res->claim;
    }
    r->g.idem_known = true;
    req_wake_run(r);
    r->g.idem_replay = NULL;
}

/* In flight: the first one ends soon. Reused: only a new key helps. */
static void idem_refuse(struct request *r, bool mismatch)
{
    req__set_error(r, mismatch ? 422 : 409, "invalid_request_error",
                   mismatch ? "idempotency_key_reused" : "idempotency_key_in_use",
                   mismatch ? "this Idempotency-Key was used with a different request body"
                            : "a request with this Idempotency-Key is still in progress");
    req__set_retry(r, mismatch ? OUTLOOK_NEVER : OUTLOOK_TIME,
                   OUTLOOK_DEFAULT_RETRY_MS);
    deliver_set_termination(r, mismatch ? "idempotency_mismatch" : "idempotency_in_flight");
}

enum guard_start guard_idem_verdict(struct request *r)
{
    if (r->g.waiting_store)
        return GUARD_WAIT;
    if (!r->g.idem_known)
        return GUARD_PROCEED; /* no key, or no store */
    r->g.idem_known = false; /* acted on once */
    if (r->g.idem_err) {
        idem_unavailable(r, r->g.idem_err);
        return GUARD_STOP;
    }
    switch (r->g.idem_decision) {
    case IDEM_MISS:
        return GUARD_PROCEED;
    case IDEM_REPLAY:
        reply_replay(r, r->g.idem_replay);
        r->g.idem_replay = NULL;
        return GUARD_ANSWERED;
    default:
        idem_refuse(r, r->g.idem_decision == IDEM_MISMATCH);
        return GUARD_STOP;
    }
}

enum guard_start guard_idem_start(struct request *r)
{
    struct bsc_str key = srv_req_header(r->sreq, BSC_STR("idempotency-key"));
    struct bsc_str body = r->input.body;
    struct idem_fp fp;
    const char *text;
    size_t len = 0;
    enum bsc_err err;

    if (!key.p || !r->gw->store)
        return GUARD_PROCEED;
    if (!idem_key_valid(key)) {
        req__set_error(r, 400, "invalid_request_error", "invalid_idempotency_key",
                       "Idempotency-Key must be 1 to %d printable characters", IDEM_KEY_MAX);
        return GUARD_STOP;
    }
    if (!body.p && r->input.json) {
        text = json_object_to_json_string_length(r->input.json, JSON_C_TO_STRING_PLAIN, &len);
        body = bsc_str_make(text, text ? len : 0);
    }
    snprintf(r->g.idem_key, sizeof(r->g.idem_key), "%.*s", BSC_STR_FMT(key));
    req_client_scope(r->sreq, r->g.idem_scope, sizeof(r->g.idem_scope));
    err = idem_fingerprint(bsc_str_cstr(r->ident.path), body, &fp);
    if (err) {
        idem_unavailable(r, err);
        return GUARD_STOP;
    }
    guard_op_begin(r);
    err = store_idem_begin(r->gw->store, &r->w->loop, bsc_str_cstr(r->g.idem_scope),
                           bsc_str_cstr(r->g.idem_key), &fp, 0, on_idem_begin, r);
    if (err) {
        r->g.store_ops--;
        idem_unavailable(r, err);
        return GUARD_STOP;
    }
    r->g.waiting_store = true;
    return GUARD_WAIT;
}

void guard_idem_record(struct request *r, const void *p, size_t len)
{
    if (r->g.idem_active && !r->g.idem_overflow &&
        bsc_buf_append(&r->g.idem_copy, p, len) != BSC_OK)
        r->g.idem_overflow = true; /* too large to store: the record is abandoned at the end */
}

/* The store acknowledged (or failed) the record a complete answer waits for: the machine
 * sends the answer now, whatever the store said (an answer is never lost for a record). */
static void on_idem_settled(enum bsc_err err, void *ud)
{
    struct request *r = ud;

    if (err && err != BSC_ENOTFOUND)
        LOG_WARN("%s: idempotency record not updated: %s", r->ident.id, bsc_err_str(err));
    if (!guard_op_end(r))
        return;
    r->g.idem_settling = false;
    if (r->m.state != REQ_ST_DONE)
        req_wake_run(r);
}

/* Stores the answer (a complete 2xx) or releases the key, once; <done> is called when the
 * store has acted. False when no store call was made (nothing will be called). */
static bool idem_settle(struct request *r, store_done_cb *done)
{
    struct bsc_str scope = bsc_str_cstr(r->g.idem_scope), key = bsc_str_cstr(r->g.idem_key);
    bool ok = r->d.status >= 200 && r->d.status < 300 && r->d.termination &&
              strcmp(r->d.termination, "ok") == 0 && !r->g.idem_overflow;
    struct idem_answer a = {
        .status = r->d.status,
        .stream = r->input.stream,
        .headers = BSC_STR("{}"),
        .body = bsc_buf_str(&r->g.idem_copy),
    };
    enum bsc_err err;

    r->g.idem_active = false;
    guard_op_begin(r);
    err = ok ? store_idem_complete(r->gw->store, &r->w->loop, scope, key, r->g.idem_claim, &a,
                                   done, r)
             : BSC_EINVAL;
    if (err) /* not stored (a failure, or too large): a repeat runs the request again */
        err = store_idem_abandon(r->gw->store, &r->w->loop, scope, key, r->g.idem_claim,
                                 done, r);
    if (err)
        r->g.store_ops--;
    return err == BSC_OK;
}

void guard_idem_finish(struct request *r)
{
    if (r->g.idem_active)
        (void)idem_settle(r, no_op_done);
}

enum guard_start guard_idem_settle(struct request *r)
{
    if (r->g.idem_settling)
        return GUARD_WAIT;
    if (!r->g.idem_active || !idem_settle(r, on_idem_settled))
        return GUARD_PROCEED;
    r->g.idem_settling = true;
    return GUARD_WAIT;
}

/* ---- the tool ledger ---- */

static void on_ledger_get(enum bsc_err err, const struct ledger_entry *e,
                          enum ledger_outcome outcome, void *ud)
{
    struct request *r = ud;

    (void)outcome;
    if (!guard_op_end(r))
        return;
    r->g.waiting_store = false;
    r->g.ledger_checked = r->att.n;
    if (!err && e && (e->state == LEDGER_ST_STARTED || e->state == LEDGER_ST_UNKNOWN))
        r->g.ledger_blocked = e->state == LEDGER_ST_STARTED ? "started" : "unknown";
    else if (err && err != BSC_ENOTFOUND)
        r->g.ledger_blocked = "unreadable"; /* cannot prove it is safe: do not replay */
    if (r->m.state != REQ_ST_DONE)
        req_wake_run(r);
}

enum guard_start guard_ledger_check(struct request *r)
{
    char key[LEDGER_OP_ID_MAX + 1];

    if (r->env.side_effects != CFG_SE_WRITE_POSSIBLE || !r->g.op_id[0] || !r->gw->store ||
        r->g.ledger_checked == r->att.n)
        return GUARD_PROCEED;
    guard_op_begin(r);
    if (store_ledger_get(r->gw->store, &r->w->loop, ledger_key(r, r->g.op_id, key, sizeof(key)),
                         on_ledger_get, r) != BSC_OK) {
        r->g.store_ops--;
        r->g.ledger_blocked = "unreadable";
        return GUARD_PROCEED;
    }
    r->g.waiting_store = true;
    return GUARD_WAIT;
}

/* The second write of a WORKFLOW_3 record: started -> unknown. */
static void on_uncertain_started(enum bsc_err err, const struct ledger_entry *e,
                                 enum ledger_outcome outcome, void *ud)
{
    struct request *r = ud;
    struct ledger_update u = {.state = LEDGER_ST_UNKNOWN};
    char key[LEDGER_OP_ID_MAX + 1];

    (void)e;
    (void)outcome;
    if (!guard_op_end(r))
        return;
    if (err) {
        LOG_WARN("%s: reconciliation record for %s not written: %s", r->ident.id, r->g.op_id,
                 bsc_err_str(err));
        return;
    }
    snprintf(u.tool_name, sizeof(u.tool_name), "bascule.model_call");
    snprintf(u.external_reference, sizeof(u.external_reference), "%s", r->ident.id);
    guard_op_begin(r);
    if (store_ledger_put(r->gw->store, &r->w->loop,
                         ledger_key(r, r->g.uncertain_id, key, sizeof(key)), &u,
                         no_op_ledger, r) != BSC_OK)
        r->g.store_ops--;
}

static void no_op_ledger(enum bsc_err err, const struct ledger_entry *e,
                         enum ledger_outcome outcome, void *ud)
{
    struct request *r = ud;

    (void)e;
    (void)outcome;
    if (err)
        LOG_WARN("%s: ledger write failed: %s", r->ident.id, bsc_err_str(err));
    guard_op_end(r);
}

void guard_record_uncertain(struct request *r, const char *what)
{
    struct ledger_update u = {.state = LEDGER_ST_STARTED};
    char key[LEDGER_OP_ID_MAX + 1];
    uint8_t d[BSC_SHA256_LEN];
    char hex[17];

    metrics_inc3(req__metrics(r), r->w->idx, METRIC_OUTCOMES, r->route->id, "transport", what, 1);
    LOG_WARN("%s: %s on route %s%s%s: not replayed; reconcile before retrying", r->ident.id, what,
             r->route->id, r->g.op_id[0] ? ", operation " : "", r->g.op_id);
    if (!r->g.op_id[0] || !r->gw->store)
        return;
    /* The gateway's own entry beside the agent's: <operation>:model:<digest of request>. */
    bsc_sha256(r->ident.id, strlen(r->ident.id), d);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    snprintf(r->g.uncertain_id, sizeof(r->g.uncertain_id), "%.100s:model:%s", r->g.op_id, hex);
    snprintf(u.tool_name, sizeof(u.tool_name), "bascule.model_call");
    snprintf(u.external_reference, sizeof(u.external_reference), "%s", r->ident.id);
    guard_op_begin(r);
    if (store_ledger_put(r->gw->store, &r->w->loop,
                         ledger_key(r, r->g.uncertain_id, key, sizeof(key)), &u,
                         on_uncertain_started, r) != BSC_OK)
        r->g.store_ops--;
}

void guard_init(struct request *r)
{
    bsc_buf_init(&r->g.idem_copy, 8u << 20);
}

void guard_release_copy(struct request *r)
{
    bsc_buf_cleanup(&r->g.idem_copy);
}

void guard_set_op_id(struct request *r, struct bsc_str id)
{
    snprintf(r->g.op_id, sizeof(r->g.op_id), "%.*s", BSC_STR_FMT(id));
}
