/* SPDX-License-Identifier: MIT */
/* app.c -- the bascule-sim request router. For a dialect path it parses the request,
 * checks credentials, logs what it saw, asks the fault script what to do and hands the
 * call to the runtime (exchange.c). Control paths go to control.c. It owns no timer and
 * never answers late itself. See docs/internals/sim.md. */
#include "app.h"

#include "control.h"
#include "dialect.h"
#include "exchange.h"
#include "sjson.h"

#include "core/clock.h"
#include "core/compat.h"
#include "core/log.h"

/* Listed by GET /v1/models before the models the sim has seen. */
static const char *const default_models[] = {"gpt-4o-mini", "gpt-4o", "text-embedding-3-small",
                                             "sim-echo"};

void sim_app_init(struct sim_app *app, uv_loop_t *loop, uint32_t token_delay_ms, bool quiet)
{
    memset(app, 0, sizeof(*app));
    app->loop = loop;
    app->token_delay_ms = token_delay_ms;
    app->quiet = quiet;
    sim_models_init(&app->models);
}

void sim_app_cleanup(struct sim_app *app)
{
    BSC_BUG_ON(app->live != 0);
    sim_models_cleanup(&app->models);
}

static struct bsc_str req_header(const void *ctx, struct bsc_str name)
{
    return srv_req_header(ctx, name);
}

/* ---- the request log ---- */

static void log_request(struct sim_app *app, struct srv_req *req, const struct sim_in *in,
                        const char *model, uint64_t seq, const char *outcome)
{
    size_t n = srv_req_header_count(req);
    struct bsc_str names[128], values[128];
    struct bsc_buf hdrs;
    struct sim_logent e = {0};
    char *method = bsc_str_dup(in->method);
    char *path = bsc_str_dup(in->path);
    char *query = bsc_str_dup(in->query);

    if (n > BSC_ARRAY_LEN(names))
        n = BSC_ARRAY_LEN(names); /* the log is for tests; 128 headers is plenty */
    for (size_t i = 0; i < n; i++) {
        struct srv_header h = srv_req_header_at(req, i);
        names[i] = h.name;
        values[i] = h.value;
    }
    bsc_buf_init(&hdrs, SIM_LOG_BODY_MAX);
    if (method && path && query && sim_headers_json(names, values, n, &hdrs) == BSC_OK) {
        e.method = method;
        e.path = path;
        e.query = query;
        e.headers_json = hdrs.p;
        e.body = (char *)in->body.p; /* copied by sim_models_log, never written */
        e.body_len = in->body.len;
        e.model = (char *)(model ? model : "");
        e.outcome = outcome;
        e.seq = seq;
        sim_models_log(&app->models, &e);
    }
    bsc_buf_cleanup(&hdrs);
    free(method);
    free(path);
    free(query);
}

/* ---- answers that do not go through the runtime ---- */

static void send_json(struct srv_req *req, int status, struct bsc_str body)
{
    srv_resp_send(req, status, "application/json", NULL, 0, body.p, body.len);
}

static void reject(struct sim_app *app, struct srv_req *req, const struct sim_dialect *d,
                   const struct sim_call *call, const struct sim_reject *rej)
{
    struct bsc_buf out;

    if (call->model && (call->ep == SIM_EP_CHAT || call->ep == SIM_EP_EMBED)) {
        sim_models_reject(&app->models, bsc_str_cstr(call->model));
        sim_models_arrived(&app->models, bsc_str_cstr(call->model), bsc_now_ms());
    }
    if (!app->quiet)
        LOG_INFO("%.*s %.*s model=%s -> %d %s", BSC_STR_FMT(srv_req_method(req)),
                 BSC_STR_FMT(srv_req_path(req)), call->model ? call->model : "-", rej->status,
                 rej->message);
    bsc_buf_init(&out, 64 * 1024);
    if (d->error_body(rej->status, rej->type, rej->code, rej->message, &out) == BSC_OK) {
        struct srv_header h = {bsc_str_cstr(d->error_type_header ? d->error_type_header : ""),
                               bsc_str_cstr(rej->type ? rej->type : "")};

        srv_resp_send(req, rej->status, "application/json", &h,
                      d->error_type_header && rej->type ? 1 : 0, out.p, out.len);
    }
    else
        srv_resp_error(req, 500, "server_error", NULL, "bascule-sim: out of memory");
    bsc_buf_cleanup(&out);
}

static void answer_models(struct sim_app *app, struct srv_req *req, const struct sim_dialect *d,
                          const struct sim_call *call)
{
    const char *names[BSC_ARRAY_LEN(default_models) + SIM_MODELS_MAX];
    size_t n = 0;
    struct bsc_buf out;

    for (size_t i = 0; i < BSC_ARRAY_LEN(default_models); i++)
        names[n++] = default_models[i];
    for (const struct sim_model *mod = app->models.head; mod; mod = mod->next) {
        bool dup = strcmp(mod->name, SIM_STAR) == 0;
        for (size_t i = 0; i < BSC_ARRAY_LEN(default_models) && !dup; i++)
            dup = strcmp(mod->name, default_models[i]) == 0;
        if (!dup && n < BSC_ARRAY_LEN(names))
            names[n++] = mod->name;
    }
    bsc_buf_init(&out, SIM_OUT_MAX);
    if (d->models(call, names, n, &out) == BSC_OK)
        send_json(req, 200, bsc_buf_str(&out));
    else
        srv_resp_error(req, 500, "server_error", NULL, "bascule-sim: out of memory");
    bsc_buf_cleanup(&out);
}

static void control(struct sim_app *app, struct srv_req *req)
{
    struct bsc_buf out;
    int status;

    bsc_buf_init(&out, SIM_OUT_MAX);
    status = sim_control_dispatch(&app->models, srv_req_method(req), srv_req_path(req),
                                  srv_req_query(req), srv_req_body(req), &out);
    send_json(req, status, bsc_buf_str(&out));
    bsc_buf_cleanup(&out);
}

/* ---- the router ---- */

static void api(struct sim_app *app, struct srv_req *req, const struct sim_dialect *d,
                enum sim_ep ep)
{
    struct sim_in in = {srv_req_method(req), srv_req_path(req), srv_req_query(req),
                        srv_req_body(req), req_header, req};
    struct sim_call call = {0};
    struct sim_reject rej = {0}, auth = {0};
    struct sim_plan plan;
    uint64_t seq = ++app->seq;
    bool parsed, authorized;

    app->models.total++;
    parsed = d->parse(ep, &in, &call, &rej);
    authorized = d->authorize(&in, &auth);
    if (!authorized || !parsed) {
        log_request(app, req, &in, call.model, seq, authorized ? "bad_request" : "unauthorized");
        reject(app, req, d, &call, authorized ? &rej : &auth);
        sim_call_cleanup(&call);
        return;
    }
    if (ep == SIM_EP_MODELS || ep == SIM_EP_MODEL) {
        log_request(app, req, &in, NULL, seq, "models");
        answer_models(app, req, d, &call);
        sim_call_cleanup(&call);
        return;
    }
    if (sim_models_begin(&app->models, bsc_str_cstr(call.model), &plan)) {
        srv_resp_error(req, 503, "server_error", NULL, "bascule-sim: out of memory");
        sim_call_cleanup(&call);
        return;
    }
    sim_models_arrived(&app->models, bsc_str_cstr(call.model), bsc_now_ms());
    log_request(app, req, &in, call.model, seq, sim_action_name(plan.step.action));
    sim_call_settle(&call, plan.tokens, seq, bsc_wall_ms() / 1000);
    if (!app->quiet)
        LOG_INFO("%.*s %.*s model=%s stream=%d action=%s seq=%llu", BSC_STR_FMT(in.method),
                 BSC_STR_FMT(in.path), call.model, call.stream,
                 sim_action_name(plan.step.action), (unsigned long long)seq);
    sim_xchg_start(app, req, d, &call, &plan);
}

void sim_app_handle(struct srv_req *req, void *ud)
{
    struct sim_app *app = ud;
    struct bsc_str path = srv_req_path(req);
    const struct sim_dialect *d;
    enum sim_ep ep;

    if (sim_control_is_path(path)) {
        control(app, req);
        return;
    }
    d = sim_dialect_route(srv_req_method(req), path, &ep);
    if (!d) {
        srv_resp_error(req, 404, "invalid_request_error", "unknown_url",
                       "bascule-sim: unknown endpoint");
        return;
    }
    api(app, req, d, ep);
}

enum bsc_err sim_app_load_script(struct sim_app *app, struct bsc_str json, char *errbuf,
                                 size_t errlen)
{
    struct json_object *root = sim_json_parse(json, errbuf, errlen), *models;
    enum bsc_err err = BSC_OK;

    if (!root)
        return BSC_EPARSE;
    if (!json_object_object_get_ex(root, "models", &models) ||
        !json_object_is_type(models, json_type_object)) {
        snprintf(errbuf, errlen, "a script file is {\"models\": {\"name\": spec, ...}}");
        json_object_put(root);
        return BSC_EINVAL;
    }
    json_object_object_foreach(models, name, spec)
    {
        char why[512];
        const char *text = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);

        err = sim_models_set_spec(&app->models, bsc_str_cstr(name), bsc_str_cstr(text), why,
                                  sizeof(why));
        if (err) {
            snprintf(errbuf, errlen, "model %s: %s", name, why);
            break;
        }
    }
    json_object_put(root);
    return err;
}
