/* SPDX-License-Identifier: MIT */
/* feedback.c -- POST /v1/feedback: the application tells the gateway whether an answer did
 * its job, {"request_id", "task_success", "score"?, "note"?}. The verdict is charged to
 * the route, target and workflow that answered (health/verdicts.h remembers them for an
 * hour), counted as the task layer of the outcome metrics, and fed to balance: score.
 * One verdict per request, and only from the credential that made it. The note is checked
 * and dropped: it may quote the prompt, and nothing here logs or stores prompts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/access.h"
#include "api/feedback.h"
#include "api/openai_chat.h"
#include "core/clock.h"
#include "health/verdicts.h"
#include "metrics/metrics.h"
#include "policy/attempt.h"
#include "router/feedback.h"
#include "router/gateway.h"
#include "router/request.h"

#define FEEDBACK_NOTE_MAX 1024

struct feedback {
    const char *request_id; /* borrowed from the parsed body */
    bool task_success;
    double score; /* < 0: not given */
};

/* Checks one member of the body; false with <msg> filled when it is not acceptable. */
static bool member_ok(const char *key, struct json_object *val, struct feedback *f, char *msg,
                      size_t len)
{
    enum json_type t = json_object_get_type(val);

    if (strcmp(key, "request_id") == 0) {
        f->request_id = t == json_type_string ? json_object_get_string(val) : NULL;
        if (f->request_id && json_object_get_string_len(val) > 0 &&
            json_object_get_string_len(val) <= (int)VERDICTS_ID_MAX)
            return true;
        snprintf(msg, len, "'request_id' must be a string of 1 to %u characters",
                 VERDICTS_ID_MAX);
    } else if (strcmp(key, "task_success") == 0) {
        f->task_success = json_object_get_boolean(val);
        if (t == json_type_boolean)
            return true;
        snprintf(msg, len, "'task_success' must be true or false");
    } else if (strcmp(key, "score") == 0) {
        f->score = json_object_get_double(val);
        if ((t == json_type_double || t == json_type_int) && f->score >= 0.0 && f->score <= 1.0)
            return true;
        snprintf(msg, len, "'score' must be a number from 0.0 to 1.0");
    } else if (strcmp(key, "note") == 0) {
        if (t == json_type_string && json_object_get_string_len(val) <= FEEDBACK_NOTE_MAX)
            return true;
        snprintf(msg, len, "'note' must be a string of at most %u bytes", FEEDBACK_NOTE_MAX);
    } else {
        snprintf(msg, len,
                 "unknown field '%.64s'; a verdict has request_id, task_success, score, note",
                 key);
    }
    return false;
}

/* Reads <obj> into <f>; false with <msg> filled when the body is not a valid verdict. */
static bool parse(struct json_object *obj, struct feedback *f, char *msg, size_t len)
{
    bool have_verdict = false;

    *f = (struct feedback){.score = -1.0};
    if (!json_object_is_type(obj, json_type_object)) {
        snprintf(msg, len, "the body must be a JSON object");
        return false;
    }
    json_object_object_foreach(obj, key, val) {
        if (!member_ok(key, val, f, msg, len))
            return false;
        have_verdict |= strcmp(key, "task_success") == 0;
    }
    if (!f->request_id || !have_verdict) {
        snprintf(msg, len, "'%s' is required", f->request_id ? "task_success" : "request_id");
        return false;
    }
    return true;
}

/* Counts the verdict where the operator looks (per route, target and workflow) and in the
 * target's tally of <scope>, shared with every client's ranking when <shared>. */
static void count(struct worker *w, const struct cfg *cfg, const struct vd_claim *c,
                  const char *scope, bool shared, bool ok)
{
    struct metrics *m = w->gw->metrics;
    const char *res = ok ? "ok" : "failed";
    struct vd_verdict v = {.target = c->target, .scope = scope, .ok = ok, .shared = shared,
                           .at_ms = bsc_now_ms()};
    struct vd_policy p;

    metrics_inc3(m, w->idx, METRIC_OUTCOMES, c->route, "task", res, 1);
    metrics_inc3(m, w->idx, METRIC_TARGET_OUTCOMES, c->target, "task", res, 1);
    metrics_inc3(m, w->idx, METRIC_WORKFLOW_OUTCOMES,
                 attempt_workflow_name((enum attempt_workflow)c->workflow), "task", res, 1);
    feedback_policy(cfg, &p);
    verdicts_task(w->gw->verdicts, &v, &p);
}

static void send_ok(struct srv_req *req, const struct feedback *f, const struct vd_claim *c,
                    bool shared)
{
    struct json_object *o = json_object_new_object();
    const char *s;

    if (!o) {
        srv_resp_error(req, 500, "server_error", "out_of_memory", "out of memory");
        return;
    }
    json_object_object_add(o, "request_id", json_object_new_string(f->request_id));
    json_object_object_add(o, "route", json_object_new_string(c->route));
    json_object_object_add(o, "target", json_object_new_string(c->target));
    json_object_object_add(o, "workflow", json_object_new_string(attempt_workflow_name(
                                              (enum attempt_workflow)c->workflow)));
    json_object_object_add(o, "task_success", json_object_new_boolean(f->task_success));
    json_object_object_add(o, "ranks", json_object_new_string(shared ? "all_requests"
                                                                      : "own_requests"));
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    srv_resp_send(req, 200, "application/json", NULL, 0, s, strlen(s));
    json_object_put(o);
}

/* Claims the one verdict of the request and answers; 404 and 409 as verdicts.h says, 403
 * for a client whose verdicts are not taken (clients.<id>.feedback: none). */
static void judge(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                  const struct feedback *f)
{
    const struct cfg_client *client =
        cfg_client_find(cfg, bsc_str_cstr(srv_req_principal(req)));
    bool shared = feedback_is_shared(client);
    char scope[VERDICTS_SCOPE_MAX], msg[256];
    struct vd_claim c;
    enum bsc_err err;

    if (client && client->feedback == CFG_FEEDBACK_NONE) {
        srv_resp_error(req, 403, "permission_error", "feedback_not_accepted",
                       "this client's verdicts are not taken (its feedback setting is none)");
        return;
    }
    req_client_scope(req, scope, sizeof(scope));
    err = verdicts_claim(w->gw->verdicts, f->request_id, scope, bsc_now_ms(), &c);
    if (err == BSC_EEXIST) {
        snprintf(msg, sizeof(msg), "request '%.128s' already has a verdict", f->request_id);
        srv_resp_error(req, 409, "invalid_request_error", "verdict_exists", msg);
        return;
    }
    if (err) {
        snprintf(msg, sizeof(msg),
                 "no answered request '%.128s' of yours in the last hour", f->request_id);
        srv_resp_error(req, 404, "invalid_request_error", "request_not_found", msg);
        return;
    }
    count(w, cfg, &c, scope, shared, f->task_success);
    api__line_detail(req, "feedback %s on %s: task %s", f->request_id, c.target,
                     f->task_success ? "ok" : "failed");
    send_ok(req, f, &c, shared);
}

void api__feedback(struct worker *w, struct srv_req *req)
{
    char msg[256];
    struct json_object *obj;
    struct feedback f;

    if (!w->gw->verdicts) {
        srv_resp_error(req, 503, "server_error", "feedback_unavailable",
                       "this gateway keeps no request history");
        return;
    }
    obj = api__parse_json(srv_req_body(req), msg, sizeof(msg));
    if (!obj) {
        api__bad_request(req, "invalid_json", NULL, msg);
        return;
    }
    if (parse(obj, &f, msg, sizeof(msg))) {
        struct cfg *cfg = cfg_current_get(); /* a ref */

        judge(w, req, cfg, &f);
        cfg_unref(cfg);
    } else {
        api__bad_request(req, "invalid_request", NULL, msg);
    }
    json_object_put(obj);
}
