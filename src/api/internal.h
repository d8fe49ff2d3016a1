/* SPDX-License-Identifier: MIT */
/* internal.h -- handlers shared inside api/ only. */
#ifndef BSC_API_INTERNAL_H
#define BSC_API_INTERNAL_H

#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"

#include "router/worker.h"
#include "server/server.h"

void api__chat_completions(struct worker *w, struct srv_req *req);
void api__anthropic_messages(struct worker *w, struct srv_req *req);
void api__anthropic_count_tokens(struct worker *w, struct srv_req *req);
/* POST /v1/responses: the OpenAI Responses API (responses.c). */
void api__responses(struct worker *w, struct srv_req *req);
void api__models(struct worker *w, struct srv_req *req, struct bsc_str id);
void api__health_live(struct worker *w, struct srv_req *req);
void api__health_ready(struct worker *w, struct srv_req *req);
void api__metrics(struct worker *w, struct srv_req *req);
/* How many targets of <t> could take a request at <now> (health.c). */
struct hstate;
size_t api__tier_eligible(struct hstate *hs, const struct cfg_tier *t, uint64_t now);
/* Makes every series <cfg> knows present (at zero) in <m> (metrics_seed.c). */
struct metrics;
void api__metrics_seed(struct metrics *m, const struct cfg *cfg);
void api__embeddings(struct worker *w, struct srv_req *req);
/* Parses a JSON request body strictly (UTF-8 checked, depth-bounded, nothing after it).
 * Returns a new object, or NULL with a client-facing message in <msg>. */
struct json_object *api__parse_json(struct bsc_str body, char *msg, size_t msglen);
/* Appends the live state of <t> as a JSON object (admin API, status page). */
void api__put_target(struct bsc_buf *b, struct worker *w, const struct cfg_target *t,
                     uint64_t now);
void api__status_page(struct worker *w, struct srv_req *req);
/* GET /console: the operator console page (console.c). */
void api__console_page(struct worker *w, struct srv_req *req);
/* Appends ,"outcomes":{targets, workflows}: transport / contract / task success per target
 * and per workflow (status_outcomes.c). */
void api__put_outcomes(struct bsc_buf *b, struct worker *w, const struct cfg *cfg);
void api__status_json(struct worker *w, struct srv_req *req);
/* <rest> is the path after "/admin/". */
void api__admin(struct worker *w, struct srv_req *req, struct bsc_str rest);
/* admin_clients.c: GET /admin/clients, POST /admin/clients/{id}/reset-spend (<rest> is the
 * path after /admin/, the key already checked). False when <rest> is neither. */
bool api__admin_clients(struct worker *w, struct srv_req *req, struct cfg *cfg,
                        struct bsc_str rest, const char *admin);
/* admin_keys.c: /admin/keys... and GET /admin/audit (<admin> names the operator key for
 * the audit trail; the role already checked). False when <rest> is neither. */
bool api__admin_keys(struct worker *w, struct srv_req *req, struct cfg *cfg,
                     struct bsc_str rest, const char *admin);
/* admin_teams.c: /admin/teams[/{id}] (the role already checked). */
bool api__admin_teams(struct worker *w, struct srv_req *req, struct cfg *cfg,
                      struct bsc_str rest, const char *admin);
/* admin_cache_shared.c: DELETE /admin/cache with cache.store: redis: bumps the generation
 * of <route> (empty: every route with a cache) in Redis; answers now or once Redis did. */
void api__admin_cache_clear_shared(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                                   struct bsc_str route);
/* Shared by the admin writes of the keyring (admin_keys.c). */
struct json_object *api__admin_body(struct srv_req *req, bool may_be_empty);
bool api__routes_ok(const struct cfg *cfg, struct json_object *v);
bool api__limit_ok(struct json_object *v);
struct json_object *api__budget_norm(struct json_object *v);
struct json_object *api__budgets_norm(const struct cfg *cfg, struct json_object *v);
/* The fields keys and teams share (routes, rpm, tpm, max_concurrency, budget, budgets,
 * metadata): <name>'s value <v> checked and copied onto <out>. 1 applied, 0 not one of them,
 * -1 refused (*<why> says why). */
int api__apply_grant_field(const struct cfg *cfg, const char *name, struct json_object *v,
                           struct json_object *out, const char **why);
void api__keyring_unsynced(struct srv_req *req);
/* A deep copy of <v> (NULL stays NULL): what goes into or comes out of the keyring never
 * shares a json-c object with anything else. json-c's reference counts and the text it
 * caches on an object are not guarded: an answer or a request body that shared a child with
 * the keyring would touch it outside the keyring's lock, from another thread. */
struct json_object *api__json_copy(struct json_object *v);
/* With the keyring locked and changed (<saved>: the document before, taken): commits the
 * change with <audit> (taken), unlocks, rebuilds the snapshot and answers <status> with
 * <answer> (taken) once the store has it. */
void api__keyring_commit(struct worker *w, struct srv_req *req, struct json_object *saved,
                         struct json_object *audit, int status, struct json_object *answer,
                         const char *detail);
/* status.json's ",\"clients\":[...]": in flight, the book's spend (null when not loaded),
 * budget and period of each client. */
void api__put_clients_status(struct bsc_buf *b, struct worker *w, const struct cfg *cfg);
/* ,"cache":{routes:[{route,hit,miss,bypass,hit_ratio}],saved_usd,entries,bytes}: the
 * response cache on the status page (status_cache.c). */
void api__put_cache_status(struct bsc_buf *b, struct worker *w);
/* GET|PUT /v1/ledger/{<op_id>}: the tool side-effect ledger (api/ledger.c). */
void api__ledger(struct worker *w, struct srv_req *req, struct bsc_str op_id);
/* The OpenAI-shaped members of a chat body its reader already found (api__chat_read). */
struct api_scan {
    struct bsc_str messages, tools, response_format, max_tokens, max_completion_tokens;
    bool no_images; /* the messages were seen not to spell "image_url": no image scan */
};

struct chat_in;
/* Fills what the router needs to know of <in>'s request (need_caps, has_tools, est_tokens,
 * est_out_tokens, scan_body, messages) from in->body with <spans> (NULL: found here), or
 * from in->json serialised when in->body is empty. Call it last before req_chat_start:
 * the serialised text belongs to in->json. in->op and in->stream must be set. */
void api__inspect(struct chat_in *in, const struct api_scan *spans);

/* POST /v1/feedback: a task verdict on an answered request (api/feedback.c). */
void api__feedback(struct worker *w, struct srv_req *req);
/* Answers 400 with an OpenAI-shaped error; <param> may be NULL. */
void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message);

/* ---- the access-log line of requests the router does not take (access.c) ---- */
struct api_line {
    char id[129];
    char method[16];
    char path[256];      /* truncated */
    uint64_t start_us, bytes_in;
    char detail[192];    /* "" = none; what an admin action changed, why a refusal */
    char client[SRV_PRINCIPAL_MAX + 1]; /* the authenticated client, "" = none */
};

/* Copies what the line needs from <req> (valid until the response ends) into <l>. */
void api__line_begin(struct api_line *l, struct srv_req *req);
/* Writes the line with <status>; <termination> NULL means "local" (answered here). */
void api__line_end(const struct api_line *l, int status, const char *termination);
/* Sets the detail of the line api_handle writes for <req> (admin: "disable target t1").
 * A no-op outside the handler call. */
void api__line_detail(struct srv_req *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef BSC_UNIT_TEST
/* File-local in release builds (BSC_TESTABLE, cors.c): whether the authority <auth> of an
 * absolute-form target ({NULL,0}: origin-form, allowed) may be served by a listener on
 * <listen_host> under <cfg>'s Host rule, <host> being the Host value ({NULL,0}: none). */
bool api__target_host_allowed(struct bsc_str auth, struct bsc_str host, const struct cfg *cfg,
                              const char *listen_host);
#endif

/* Host (DNS rebinding) and Origin (CORS) policy of <cfg> for <req>, which came in on the
 * admin listener when <on_admin_port> (cors.c). Returns true when the request goes on, with
 * CORS headers added for an allowed origin; false when it has been answered (403 for a Host
 * or Origin refused, 204 for a CORS preflight), with *<why> saying which for the access log. */
bool api__guard(struct srv_req *req, const struct cfg *cfg, bool on_admin_port,
                const char **why);

/* ---- who is calling (auth.c) ---- */

/* The client-key and operator-key policy of <cfg> for <req> (arrived on the admin listener
 * when <on_admin_port>). Returns true when the request goes on, the authenticated client's
 * id set as its principal; false when it has been answered (401, 403, 404), with *<why>
 * for the access log. */
bool api__auth(struct srv_req *req, const struct cfg *cfg, bool on_admin_port,
               const char **why);
/* Compares a presented key with <want> in time independent of where they differ; an empty
 * or NULL <want> matches nothing. */
bool api__key_equal(struct bsc_str given, const char *want);
/* The route <name> as <req>'s client may see it: NULL when unknown or outside its
 * `routes` (so both answer the same 404). */
const struct cfg_route *api__route_find(struct srv_req *req, const struct cfg *cfg,
                                        struct bsc_str name);
bool api__route_allowed(struct srv_req *req, const struct cfg *cfg, const struct cfg_route *r);

/* ---- the translation context of the inbound dialects (xlate.c) ---- */

/* One translation: the first client-facing error wins, later steps do nothing. */
struct api_xl {
    char *why; /* borrowed: the client-facing message */
    size_t why_len;
    enum bsc_err err; /* BSC_OK, BSC_EINVAL (the client's request) or BSC_ENOMEM */
};

/* Records a client-facing error (the first one only). Always returns false. */
bool api__xl_fail(struct api_xl *x, const char *fmt, ...) BSC_PRINTF(2, 3);
/* Records "out of memory" (unless an error is already recorded). Always returns false. */
bool api__xl_oom(struct api_xl *x);
/* Adds <val> as <key> of <obj>; takes ownership of <val>, also on failure (NULL <val>:
 * out of memory). */
bool api__xl_put(struct api_xl *x, struct json_object *obj, const char *key,
                 struct json_object *val);
/* Appends <val> to <arr>, with the same ownership rule. */
bool api__xl_push(struct api_xl *x, struct json_object *arr, struct json_object *val);

/* A non-negative integer member <key> of <o>, or -1 (absent, not an integer, negative). */
int64_t api__json_count(struct json_object *o, const char *key);

/* An OpenAI usage object, as the client dialects read it. */
struct api_usage {
    bool seen;
    int64_t input;  /* prompt_tokens: cached tokens included */
    int64_t output; /* completion_tokens */
    int64_t cached; /* prompt_tokens_details.cached_tokens, never above <input> */
};

/* Reads the OpenAI usage object <u> into <out> (missing or negative counts are 0); leaves
 * <out> as it was when <u> is not an object. */
void api__usage_read(struct json_object *u, struct api_usage *out);

#endif
