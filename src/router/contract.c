/* SPDX-License-Identifier: MIT */
/* contract.c -- whether an answer satisfies the request's contract (docs/design.md §3 WORKFLOW_2):
 * with response_format json_schema the message content must be JSON valid against the
 * schema; every tool call must name a declared tool and carry arguments valid against its
 * parameters. Schemas are compiled once per request, on the first answer to check. A
 * stream is checked only when it is buffered (on_stream_failure: buffer): its chunks are
 * accumulated here, and the stream is released to the client only when it passes.
 * The route's output checks (`checks:`, contract/checks.c) run after the schema on every
 * answer: on a buffered stream before release, on a pass-through stream at its end, where a
 * failure can only be recorded (the bytes are gone). docs/internals/checks.md. */
#include <stdio.h>
#include <string.h>

#include "contract/checks.h"
#include "contract/jsonschema.h"
#include "core/json_get.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "router/contract.h"
#include "router/input.h"
#include "router/internal.h"
#include "stream/sse_parse.h"

#define CONTRACT_MAX_TOOLS 64
#define CONTRACT_MAX_CALLS 64
#define CONTRACT_MAX_TEXT  (8u << 20)

struct contract_tool {
    char name[65];
    struct js_schema *params; /* owned; NULL: no parameters to check */
};

struct contract_call {
    char name[65];
    struct bsc_buf args; /* owned */
};

struct contract {
    struct js_schema *schema; /* owned: the response_format schema, or NULL */
    bool schema_unchecked;    /* the schema uses what the validator does not support */
    struct contract_tool tools[CONTRACT_MAX_TOOLS];
    size_t n_tools;
    bool has_tools;
    /* a buffered stream, accumulated */
    struct bsc_buf content;
    struct contract_call calls[CONTRACT_MAX_CALLS];
    size_t n_calls;
    bool prepared; /* schemas compiled (or found missing) */
    /* a stream's text and tool-call count for the output checks, fed in every mode */
    struct bsc_buf chk_text;
    size_t chk_calls;
};

static void compile_tools(struct contract *c, struct json_object *tools, const char *rid)
{
    char err[256];

    for (size_t i = 0; i < json_object_array_length(tools) && c->n_tools < CONTRACT_MAX_TOOLS;
         i++) {
        struct json_object *fn = bsc_json_get(json_object_array_get_idx(tools, i), "function");
        struct json_object *params = bsc_json_get(fn, "parameters");
        struct contract_tool *t = &c->tools[c->n_tools];
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));

        if (!name)
            continue;
        snprintf(t->name, sizeof(t->name), "%s", name);
        if (params && js_compile(params, &t->params, err, sizeof(err)) != BSC_OK) {
            LOG_INFO("%s: parameters of tool %s not checked: %s", rid, t->name, err);
            t->params = NULL;
        }
        c->n_tools++;
    }
    c->has_tools = true;
}

bool contract_wanted(const struct request *r)
{
    return r->input.op == PROV_OP_CHAT && (r->input.need_caps & (CFG_CAP_JSON_SCHEMA | CFG_CAP_TOOLS));
}

/* The request's contract state, allocated on first use. */
static struct contract *contract_of(struct request *r)
{
    struct contract *c = r->contract;

    if (c)
        return c;
    c = r->contract = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    bsc_buf_init(&c->content, CONTRACT_MAX_TEXT);
    bsc_buf_init(&c->chk_text, CONTRACT_MAX_TEXT);
    return c;
}

/* Compiles what the request asks for. False only when out of memory. */
static bool prepare(struct request *r)
{
    struct json_object *req, *schema, *tools;
    struct contract *c = contract_of(r);
    char err[256];

    if (c && c->prepared)
        return true;
    req = req__json(r);
    if (!req || !c)
        return false;
    c->prepared = true;
    schema = bsc_json_get(bsc_json_get(bsc_json_get(req, "response_format"), "json_schema"), "schema");
    if (schema && js_compile(schema, &c->schema, err, sizeof(err)) != BSC_OK) {
        LOG_INFO("%s: response schema not checked: %s", r->ident.id, err);
        c->schema = NULL;
        c->schema_unchecked = true;
    }
    tools = bsc_json_get(req, "tools");
    if (tools && json_object_is_type(tools, json_type_array))
        compile_tools(c, tools, r->ident.id);
    return true;
}

static void fail_contract(struct fail_info *f, const char *fmt, const char *a, const char *b)
{
    fail_info_init(f);
    f->kind = FAIL_CONTRACT_FAILURE;
    f->status = 200;
    snprintf(f->message, sizeof(f->message), fmt, a, b);
}

static bool check_content(const struct contract *c, struct bsc_str text, struct fail_info *f)
{
    struct js_error e;

    if (!c->schema || js_validate_text(c->schema, text, &e))
        return true;
    fail_contract(f, "the answer does not match the response schema at '%.80s': %.120s",
                  e.pointer, e.message);
    return false;
}

static bool check_call(const struct contract *c, const char *name, struct bsc_str args,
                       struct fail_info *f)
{
    struct js_error e;

    for (size_t i = 0; i < c->n_tools; i++) {
        if (strcmp(c->tools[i].name, name) != 0)
            continue;
        if (!c->tools[i].params || js_validate_text(c->tools[i].params, args, &e))
            return true;
        fail_contract(f, "the arguments of tool call '%.64s' are invalid: %.120s", name,
                      e.message);
        return false;
    }
    fail_contract(f, "the answer calls '%s', a tool the request did not declare%s", name, "");
    return false;
}

static bool checks_active(const struct request *r)
{
    return r->input.op == PROV_OP_CHAT && r->route->checks.active;
}

bool contract_active(const struct request *r)
{
    return contract_wanted(r) || checks_active(r);
}

/* The route's output checks on <text> and <n_calls>; false with *<f> a contract_failure. */
static bool run_checks(struct request *r, struct bsc_str text, size_t n_calls,
                       struct fail_info *f)
{
    uint64_t budget = CHK_MAX_REGEX_STEPS;
    char why[200];

    if (chk_eval(&r->route->checks, text, n_calls, &budget, why, sizeof(why)))
        return true;
    fail_contract(f, "%s%s", why, "");
    return false;
}

static bool checks_answer(struct request *r, struct bsc_str answer, struct fail_info *f)
{
    struct json_object *root, *msg, *calls, *content;
    bool ok;

    if (!checks_active(r))
        return true;
    root = prov_parse_json(answer);
    msg = bsc_json_get(bsc_json_idx(bsc_json_get(root, "choices"), 0), "message");
    content = bsc_json_get(msg, "content");
    calls = bsc_json_get(msg, "tool_calls");
    ok = run_checks(r, bsc_str_cstr(content ? json_object_get_string(content) : ""),
                    calls ? json_object_array_length(calls) : 0, f);
    json_object_put(root);
    return ok;
}

static bool schema_answer(struct request *r, struct bsc_str answer, struct fail_info *f)
{
    struct json_object *root, *msg, *calls, *content;
    bool ok = true;

    if (!contract_wanted(r))
        return true;
    /* Tools declared but none called, and no response schema: nothing to check, and
     * no reason to parse anything (the common case of tool-capable chat). */
    if (!(r->input.need_caps & CFG_CAP_JSON_SCHEMA) &&
        !bsc_str_find(answer, BSC_STR("\"tool_calls\"")))
        return true;
    if (!prepare(r))
        return true; /* out of memory: nothing checked, nothing refused */
    root = prov_parse_json(answer);
    msg = bsc_json_get(bsc_json_idx(bsc_json_get(root, "choices"), 0), "message");
    content = bsc_json_get(msg, "content");
    calls = bsc_json_get(msg, "tool_calls");
    if (r->contract->schema && !(calls && json_object_array_length(calls) > 0))
        ok = check_content(r->contract,
                           bsc_str_cstr(content ? json_object_get_string(content) : ""), f);
    for (size_t i = 0; ok && calls && i < json_object_array_length(calls); i++) {
        struct json_object *fn = bsc_json_get(json_object_array_get_idx(calls, i), "function");
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));
        const char *args = json_object_get_string(bsc_json_get(fn, "arguments"));
        ok = check_call(r->contract, name ? name : "", bsc_str_cstr(args ? args : ""), f);
    }
    json_object_put(root);
    return ok;
}

bool contract_check_answer(struct request *r, struct bsc_str answer, struct fail_info *f)
{
    return schema_answer(r, answer, f) && checks_answer(r, answer, f);
}

/* ---- buffered streams ---- */

static void feed_delta(struct contract *c, struct json_object *delta)
{
    struct json_object *content = bsc_json_get(delta, "content"), *calls = bsc_json_get(delta, "tool_calls");

    if (content && json_object_is_type(content, json_type_string))
        bsc_buf_append(&c->content, json_object_get_string(content),
                       (size_t)json_object_get_string_len(content));
    for (size_t i = 0; calls && i < json_object_array_length(calls); i++) {
        struct json_object *tc = json_object_array_get_idx(calls, i), *fn = bsc_json_get(tc, "function");
        int idx = json_object_get_int(bsc_json_get(tc, "index"));
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));
        const char *args = json_object_get_string(bsc_json_get(fn, "arguments"));
        struct contract_call *call;

        if (idx < 0 || idx >= CONTRACT_MAX_CALLS)
            continue;
        while (c->n_calls <= (size_t)idx) {
            c->calls[c->n_calls].name[0] = '\0';
            bsc_buf_init(&c->calls[c->n_calls++].args, CONTRACT_MAX_TEXT);
        }
        call = &c->calls[idx];
        if (name)
            snprintf(call->name, sizeof(call->name), "%s", name);
        if (args)
            bsc_buf_append_cstr(&call->args, args);
    }
}

/* each_delta's walk: what to call with each delta. */
struct delta_walk {
    struct contract *c;
    void (*fn)(struct contract *c, struct json_object *delta);
};

/* One event of the adapter's frames: an unnamed one whose data is a JSON object is a chunk. */
static int delta_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct delta_walk *w = ud;
    struct json_object *chunk;

    if (name.len || !data.len || data.p[0] != '{')
        return 0;
    chunk = prov_parse_json(data);
    w->fn(w->c, bsc_json_get(bsc_json_idx(bsc_json_get(chunk, "choices"), 0), "delta"));
    json_object_put(chunk);
    return 0;
}

/* Calls <fn> with the delta of each whole "data: {...}" event of <frames> (the OpenAI
 * chunks the adapter produced), framed by stream/. */
static void each_delta(struct contract *c, struct bsc_str frames,
                       void (*fn)(struct contract *c, struct json_object *delta))
{
    struct delta_walk w = {c, fn};

    sse_each_event(frames, delta_event, &w); /* out of memory: the rest is not checked */
}

void contract_feed_frames(struct request *r, struct bsc_str frames)
{
    if (!contract_wanted(r) || !prepare(r))
        return;
    each_delta(r->contract, frames, feed_delta);
}

bool contract_check_stream(struct request *r, struct fail_info *f)
{
    struct contract *c = r->contract;
    bool ok = true;

    if (!r->buffering) {
        contract_record_stream(r); /* nothing held back: recorded, never refused */
        return true;
    }
    if (!c)
        return !checks_active(r) || run_checks(r, BSC_STR_NULL, 0, f);
    if (contract_wanted(r) && c->schema && c->n_calls == 0)
        ok = check_content(c, bsc_buf_str(&c->content), f);
    for (size_t i = 0; contract_wanted(r) && ok && i < c->n_calls; i++)
        ok = check_call(c, c->calls[i].name, bsc_buf_str(&c->calls[i].args), f);
    if (ok && checks_active(r))
        ok = run_checks(r, bsc_buf_str(&c->chk_text), c->chk_calls, f);
    return ok;
}

/* Accumulates what the checks read of each chunk: the content text, the tool-call count. */
static void feed_checks_chunk(struct contract *c, struct json_object *delta)
{
    struct json_object *content = bsc_json_get(delta, "content"), *calls = bsc_json_get(delta, "tool_calls");

    if (content && json_object_is_type(content, json_type_string))
        bsc_buf_append(&c->chk_text, json_object_get_string(content),
                       (size_t)json_object_get_string_len(content));
    for (size_t i = 0; calls && i < json_object_array_length(calls); i++) {
        int idx = json_object_get_int(bsc_json_get(json_object_array_get_idx(calls, i), "index"));

        if (idx >= 0 && (size_t)idx >= c->chk_calls)
            c->chk_calls = (size_t)idx + 1;
    }
}

void contract_feed_checks(struct request *r, struct bsc_str frames)
{
    struct contract *c;

    if (!checks_active(r) || !(c = contract_of(r)))
        return;
    each_delta(c, frames, feed_checks_chunk);
}

void contract_record_stream(struct request *r)
{
    struct contract *c = r->contract;
    struct fail_info f;
    bool ok;

    if (!checks_active(r) || r->buffering)
        return;
    ok = run_checks(r, c ? bsc_buf_str(&c->chk_text) : BSC_STR_NULL, c ? c->chk_calls : 0, &f);
    metrics_inc3(req__metrics(r), r->w->idx, METRIC_OUTCOMES, r->route->id, "contract",
                 ok ? "ok" : "failed", 1);
    metrics_inc3(req__metrics(r), r->w->idx, METRIC_TARGET_OUTCOMES, r->cur.target->id, "contract",
                 ok ? "ok" : "failed", 1);
    if (!ok)
        LOG_WARN("%s: the pass-through stream from %s failed its checks (recorded, already "
                 "delivered): %s", r->ident.id, r->cur.target->id, f.message);
}

void contract_reset_stream(struct request *r)
{
    struct contract *c = r->contract;

    if (!c)
        return;
    bsc_buf_reset(&c->content);
    bsc_buf_reset(&c->chk_text);
    c->chk_calls = 0;
    for (size_t i = 0; i < c->n_calls; i++)
        bsc_buf_cleanup(&c->calls[i].args);
    c->n_calls = 0;
}

void contract_cleanup(struct request *r)
{
    struct contract *c = r->contract;

    if (!c)
        return;
    contract_reset_stream(r);
    bsc_buf_cleanup(&c->content);
    bsc_buf_cleanup(&c->chk_text);
    js_free(c->schema);
    for (size_t i = 0; i < c->n_tools; i++)
        js_free(c->tools[i].params);
    BSC_FREE(r->contract);
}
