/* SPDX-License-Identifier: MIT */
/* dispatch.c -- method + path -> the handler of that surface. Unknown paths get an
 * OpenAI-shaped 404, a known path with the wrong method a 405. Before that the Host and
 * Origin policy runs (cors.c); after it, every request the router did not keep gets its
 * access-log line here (access.c), so no handler can forget one. Between the two, auth.c
 * decides who is calling and which listener serves what. The same two also run on the head
 * of a request whose body is still arriving (api_head_check). */
#include <string.h>

#include "api/access.h"
#include "api/admin.h"
#include "api/anthropic.h"
#include "api/api.h"
#include "api/auth.h"
#include "api/console.h"
#include "api/cors.h"
#include "api/embeddings.h"
#include "api/feedback.h"
#include "api/health.h"
#include "api/ledger.h"
#include "api/metrics.h"
#include "api/models.h"
#include "api/openai_chat.h"
#include "api/responses.h"
#include "api/status.h"
#include "config/config.h"
#include "core/buf.h"

static bool is(struct bsc_str s, const char *lit)
{
    return bsc_str_eq(s, bsc_str_cstr(lit));
}

static void method_not_allowed(struct srv_req *req, const char *allow)
{
    char msg[128];

    srv_resp_add_header(req, BSC_STR("Allow"), bsc_str_cstr(allow)); /* <allow> is a literal */
    snprintf(msg, sizeof(msg), "method not allowed; use %s", allow);
    srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed", msg);
}

static void route(struct worker *w, struct srv_req *req)
{
    struct bsc_str m = srv_req_method(req), path = srv_req_path(req);
    bool get = is(m, "GET"), post = is(m, "POST");
    char msg[300];

    if (is(path, "/v1/chat/completions") || is(path, "/chat/completions")) {
        if (post)
            return api__chat_completions(w, req);
        return method_not_allowed(req, "POST");
    }
    if (is(path, "/v1/messages")) {
        if (post)
            return api__anthropic_messages(w, req);
        return method_not_allowed(req, "POST");
    }
    if (is(path, "/v1/messages/count_tokens")) {
        if (post)
            return api__anthropic_count_tokens(w, req);
        return method_not_allowed(req, "POST");
    }
    if (is(path, "/v1/responses") || is(path, "/responses")) {
        if (post)
            return api__responses(w, req);
        return method_not_allowed(req, "POST");
    }
    if (is(path, "/v1/embeddings") || is(path, "/embeddings")) {
        if (post)
            return api__embeddings(w, req);
        return method_not_allowed(req, "POST");
    }
    if (is(path, "/v1/models") || is(path, "/models")) {
        if (get)
            return api__models(w, req, BSC_STR_NULL);
        return method_not_allowed(req, "GET");
    }
    if (bsc_str_starts(path, BSC_STR("/v1/models/")) && get)
        return api__models(w, req, bsc_str_make(path.p + 11, path.len - 11));
    if (is(path, "/v1/feedback")) {
        if (post)
            return api__feedback(w, req);
        return method_not_allowed(req, "POST");
    }
    if (bsc_str_starts(path, BSC_STR("/v1/ledger/")))
        return api__ledger(w, req, bsc_str_make(path.p + 11, path.len - 11));
    if (is(path, "/status") && get)
        return api__status_page(w, req);
    if (is(path, "/console") && get)
        return api__console_page(w, req);
    if (is(path, "/status.json") && get)
        return api__status_json(w, req);
    if (is(path, "/metrics") && get)
        return api__metrics(w, req);
    if (bsc_str_starts(path, BSC_STR("/admin/")))
        return api__admin(w, req, bsc_str_make(path.p + 7, path.len - 7));
    if (is(path, "/health/live") || is(path, "/healthz"))
        return api__health_live(w, req);
    if (is(path, "/health/ready") || is(path, "/readyz"))
        return api__health_ready(w, req);
    snprintf(msg, sizeof(msg), "no such endpoint: %.*s %.*s", BSC_STR_FMT(m),
             (int)(path.len > 200 ? 200 : path.len), path.p);
    srv_resp_error(req, 404, "invalid_request_error", "unknown_url", msg);
}

static void handle(struct srv_req *req, struct worker *w, bool admin_port)
{
    struct cfg *cfg = cfg_current_get();
    struct api_line line;
    const char *why = NULL;

    api__line_begin(&line, req);
    srv_req_set_data(req, &line); /* for api__line_detail() during the call only */
    if (api__guard(req, cfg, admin_port, &why) && api__auth(req, cfg, admin_port, &why)) {
        bsc_str_copy(line.client, sizeof(line.client), bsc_str_cstr(srv_req_principal(req)));
        route(w, req);
    }
    else if (why)
        snprintf(line.detail, sizeof(line.detail), "%s", why);
    cfg_unref(cfg);
    if (srv_req_data(req) == &line)
        srv_req_set_data(req, NULL);
    /* Whoever set an abort callback kept the request and writes its line: the router
     * (the richer line with route and attempts) or the ledger once the store answers. */
    if (!srv_req_abort_watched(req))
        api__line_end(&line, srv_resp_status(req), NULL);
}

/* The same policy as handle(), on a head whose body has not all arrived: what it refuses is
 * answered now and the body is never read (the server closes the connection after the
 * answer), so a client without a key cannot hold a connection by trickling a body. What
 * passes is judged again, whole, by handle(): the server drops what was added here. */
static bool head_check(struct srv_req *req, bool admin_port)
{
    struct cfg *cfg = cfg_current_get();
    struct api_line line;
    const char *why = NULL;
    bool pass;

    api__line_begin(&line, req);
    srv_req_set_data(req, &line);
    pass = api__guard(req, cfg, admin_port, &why) && api__auth(req, cfg, admin_port, &why);
    srv_req_set_data(req, NULL);
    cfg_unref(cfg);
    if (!pass) {
        snprintf(line.detail, sizeof(line.detail), "%s; answered before the body was read",
                 why ? why : "refused");
        api__line_end(&line, srv_resp_status(req), NULL);
    }
    return pass;
}

bool api_head_check(struct srv_req *req, void *ud)
{
    (void)ud;
    return head_check(req, false);
}

bool api_head_check_admin(struct srv_req *req, void *ud)
{
    (void)ud;
    return head_check(req, true);
}

void api_handle(struct srv_req *req, void *ud)
{
    handle(req, ud, false);
}

void api_handle_admin(struct srv_req *req, void *ud)
{
    handle(req, ud, true);
}
