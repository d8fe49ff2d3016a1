/* SPDX-License-Identifier: MIT */
/* dashscope.c -- the adapter for Alibaba Cloud Model Studio (DashScope, Qwen) in its
 * OpenAI-compatible mode ({base_url}/chat/completions, Bearer key; docs/providers.md §4.3). The
 * wire is OpenAI's, so every hook delegates to prov_openai; this file adds what DashScope
 * does differently: errors that arrive with HTTP 200 (a body or a stream event carrying a
 * native `code` such as Throttling.RateQuota and no `choices`, or finish_reason "error"),
 * its native error codes on any status (§4.4), and max_completion_tokens spelled the way
 * the compatible mode reads it. It does not speak the native /api/v1 protocol.
 * See docs/internals/provider-dashscope-azure.md.
 *
 * Request fields (the canonical OpenAI request goes upstream as it is, except):
 *   field                  decision
 *   max_completion_tokens  renamed max_tokens (the compatible mode documents only max_tokens;
 *                          an ignored cap would change cost and length). Both present: the
 *                          smaller value, as max_tokens.
 *   stream_options         include_usage forced on for streams (prov_openai), the usage
 *                          chunk dropped again when the client did not ask
 *   n, tools, tool_choice, parallel_tool_calls, response_format (json_object/json_schema),
 *   temperature, top_p, stop, seed, presence_penalty, user, ...
 *                          passed through: DashScope answers a model that lacks one with a
 *                          400 InvalidParameter, which is classified invalid_request
 * Responses and streams are OpenAI-shaped already and relayed as they are (extra fields such
 * as delta.reasoning_content included). */
#include <stddef.h>
#include <string.h>

#include "core/json_scan.h"
#include "core/json_get.h"
#include "providers/provider.h"
#include "providers/retry_after.h"

extern const struct prov_ops prov_openai; /* the wire is OpenAI's: every hook delegates */

/* Error bodies are small; a larger 2xx body is an answer, not worth a second parse. */
#define DS_ERR_BODY_MAX 65536
/* Room for prov_openai's per-stream state, which is opaque here (checked at init and by
 * the unit test): the ops table needs a constant size. */
#define DS_INNER_STATE 256

/* ---- the DashScope error codes (docs/providers.md §4.4, §6.3) -------------------------------- */

enum ds_match {
    DS_EXACT = 0, /* code or type equals <pat> */
    DS_PREFIX,    /* code starts with <pat> */
    DS_CONTAINS,  /* code contains <pat> */
    DS_MESSAGE,   /* the message contains <pat> (lower case) */
    DS_MATCH_COUNT
};

struct ds_rule {
    enum ds_match how;
    const char *pat;
    enum fail_kind kind;
};

/* In order; the first match wins. ASCII case-insensitive throughout. */
static const struct ds_rule ds_rules[] = {
    /* Moderation first: newer messages wrap it in an InternalError prefix (§4.3). */
    {DS_CONTAINS, "DataInspectionFailed", FAIL_CONTENT_POLICY},
    {DS_EXACT, "data_inspection_failed", FAIL_CONTENT_POLICY},
    {DS_MESSAGE, "datainspectionfailed", FAIL_CONTENT_POLICY},
    {DS_MESSAGE, "may contain inappropriate content", FAIL_CONTENT_POLICY},
    /* Billing: the account, not the minute. */
    {DS_EXACT, "Arrearage", FAIL_QUOTA_EXHAUSTED},
    {DS_MESSAGE, "arrearage", FAIL_QUOTA_EXHAUSTED},
    {DS_EXACT, "InsufficientBalance", FAIL_QUOTA_EXHAUSTED},
    {DS_PREFIX, "AllocationQuota.FreeTierOnly", FAIL_QUOTA_EXHAUSTED},
    {DS_MESSAGE, "free allocated quota exceeded", FAIL_QUOTA_EXHAUSTED},
    /* Throttling, and the compatible mode's per-minute throttle in billing words (§4.4). */
    {DS_PREFIX, "Throttling", FAIL_RATE_LIMITED},
    {DS_EXACT, "insufficient_quota", FAIL_RATE_LIMITED},
    {DS_EXACT, "limit_requests", FAIL_RATE_LIMITED},
    {DS_MESSAGE, "range of input length should be", FAIL_CONTEXT_OVERFLOW},
    {DS_PREFIX, "InvalidApiKey", FAIL_AUTH},
    {DS_EXACT, "invalid_api_key", FAIL_AUTH},
    {DS_PREFIX, "AccessDenied", FAIL_PERMISSION},
    {DS_CONTAINS, ".AccessDenied", FAIL_PERMISSION},
    {DS_EXACT, "access_denied", FAIL_PERMISSION},
    {DS_EXACT, "ModelNotFound", FAIL_NOT_FOUND},
    {DS_EXACT, "model_not_found", FAIL_NOT_FOUND},
    {DS_EXACT, "NotFound", FAIL_NOT_FOUND},
    {DS_EXACT, "WorkSpaceNotFound", FAIL_NOT_FOUND},
    {DS_EXACT, "RequestTimeOut", FAIL_TIMEOUT},
    {DS_CONTAINS, "InvalidParameter", FAIL_INVALID_REQUEST},
    {DS_PREFIX, "BadRequest", FAIL_INVALID_REQUEST},
    {DS_EXACT, "InvalidURL", FAIL_INVALID_REQUEST},
    {DS_EXACT, "UnsupportedOperation", FAIL_INVALID_REQUEST},
    {DS_EXACT, "invalid_parameter_error", FAIL_INVALID_REQUEST},
    {DS_EXACT, "ServiceUnavailable", FAIL_OVERLOADED},
    {DS_EXACT, "service_unavailable", FAIL_OVERLOADED},
    {DS_PREFIX, "InternalError", FAIL_SERVER_ERROR},
    {DS_EXACT, "internal_error", FAIL_SERVER_ERROR},
};

/* One error as DashScope spells it; slices borrow from the json tree. */
struct ds_err {
    bool found;  /* an `error` object or string, or a native top-level `code` */
    bool native; /* the native {"code","message","request_id"} shape */
    struct bsc_str code, type, message;
};

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Where <pat> occurs in <s>, ASCII case-insensitively; -1 when it does not. */
static ptrdiff_t find_icase(struct bsc_str s, const char *pat)
{
    size_t n = strlen(pat);

    for (size_t i = 0; n && i + n <= s.len; i++) {
        size_t k = 0;

        while (k < n && lower(s.p[i + k]) == lower(pat[k]))
            k++;
        if (k == n)
            return (ptrdiff_t)i;
    }
    return -1;
}

static bool rule_matches(const struct ds_rule *r, const struct ds_err *e)
{
    struct bsc_str pat = bsc_str_cstr(r->pat);

    switch (r->how) {
    case DS_EXACT:
        return bsc_str_ieq(e->code, pat) || bsc_str_ieq(e->type, pat);
    case DS_PREFIX:
        return find_icase(e->code, r->pat) == 0;
    case DS_CONTAINS:
        return find_icase(e->code, r->pat) >= 0;
    case DS_MESSAGE:
        return find_icase(e->message, r->pat) >= 0;
    default:
        return false;
    }
}

/* The kind DashScope's own vocabulary gives <e>, or FAIL_KIND_COUNT when it says nothing. */
static enum fail_kind ds_kind(const struct ds_err *e)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(ds_rules); i++) {
        if (rule_matches(&ds_rules[i], e))
            return ds_rules[i].kind;
    }
    return FAIL_KIND_COUNT;
}

static struct bsc_str json_text(struct json_object *o)
{
    if (!o || !json_object_is_type(o, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(o), (size_t)json_object_get_string_len(o));
}

/* The body carries an answer: compatible `choices` or native `output`. */
static bool has_answer(struct json_object *root)
{
    return bsc_json_get(root, "choices") || bsc_json_get(root, "output");
}

/* Reads the error in <root>: OpenAI-style {"error":{...}} or {"error":"text"}, else the
 * native top-level {"code":"...","message":"..."} of a body that carries no answer. */
static void ds_read(struct json_object *root, struct ds_err *e)
{
    struct json_object *err = bsc_json_get(root, "error");

    memset(e, 0, sizeof(*e));
    if (err && json_object_is_type(err, json_type_object)) {
        e->found = true;
        e->code = json_text(bsc_json_get(err, "code"));
        e->type = json_text(bsc_json_get(err, "type"));
        e->message = json_text(bsc_json_get(err, "message"));
        return;
    }
    if (err && json_object_is_type(err, json_type_string)) {
        e->found = true;
        e->message = json_text(err);
        return;
    }
    e->code = json_text(bsc_json_get(root, "code"));
    if (e->code.len == 0 || has_answer(root)) {
        e->code = BSC_STR_NULL;
        return;
    }
    e->found = true;
    e->native = true;
    e->message = json_text(bsc_json_get(root, "message"));
}

/* A choice ended with finish_reason "error". */
static bool finish_error(struct json_object *root)
{
    struct json_object *choices = bsc_json_get(root, "choices");
    size_t n;

    if (!choices || !json_object_is_type(choices, json_type_array))
        return false;
    n = json_object_array_length(choices);
    for (size_t i = 0; i < n; i++) {
        struct json_object *fr = bsc_json_get(json_object_array_get_idx(choices, i), "finish_reason");

        if (bsc_str_eq(json_text(fr), BSC_STR("error")))
            return true;
    }
    return false;
}

static void copy_texts(const struct ds_err *e, struct fail_info *out)
{
    fail_copy_text(out->code, sizeof(out->code), e->code);
    fail_copy_text(out->type, sizeof(out->type), e->type);
    fail_copy_text(out->message, sizeof(out->message), e->message);
}

/* An error hidden in a 2xx: DashScope's vocabulary, else the OpenAI code table, else a
 * server error (the upstream failed in a way nothing here names; never a success). */
static enum fail_kind hidden_kind(const struct ds_err *e, struct bsc_str data)
{
    enum fail_kind kind = ds_kind(e);
    struct fail_info generic;

    if (kind != FAIL_KIND_COUNT)
        return kind;
    if (!e->native && prov_openai_classify_event(data, &generic) &&
        generic.kind != FAIL_UNKNOWN && generic.kind != FAIL_NONE)
        return generic.kind;
    return FAIL_SERVER_ERROR;
}

/* A 2xx body can hide an error only when it is small and has a top-level "code" or
 * "error" (a cheap byte scan: normal answers are never parsed twice). */
static bool may_hide_error(struct bsc_str body)
{
    struct bsc_str v;

    if (body.len > DS_ERR_BODY_MAX)
        return false;
    return bsc_json_member_span(body, BSC_STR("code"), &v) ||
           bsc_json_member_span(body, BSC_STR("error"), &v);
}

static void classify_2xx(const struct prov_err_input *in, struct fail_info *out)
{
    struct json_object *root = NULL;
    struct ds_err e;

    fail_info_init(out);
    out->status = in->status;
    if (!may_hide_error(in->body))
        return;
    root = prov_parse_json(in->body);
    ds_read(root, &e);
    if (e.found) {
        out->kind = hidden_kind(&e, in->body);
        copy_texts(&e, out);
        out->retry_after_ms = prov_err_retry_after(in);
        if (out->retry_after_ms < 0)
            out->retry_after_ms = prov_parse_retry_hint_text(e.message);
    }
    json_object_put(root);
}

/* Non-2xx: the OpenAI classifier (status map, retry hints, overflow wording, lenient shapes
 * incl. the native top-level one), then DashScope's codes on top. */
static void classify_error(const struct prov_err_input *in, struct fail_info *out)
{
    struct json_object *root = NULL;
    struct ds_err e;
    enum fail_kind kind;

    prov_openai_classify(in, out);
    if (in->body.len > DS_ERR_BODY_MAX)
        return;
    root = prov_parse_json(in->body);
    ds_read(root, &e);
    if (e.found) {
        kind = ds_kind(&e);
        /* InvalidParameter is also how DashScope words an overflow the generic wording
         * rules already recognised: the more precise kind stays. */
        if (kind != FAIL_KIND_COUNT &&
            !(kind == FAIL_INVALID_REQUEST && out->kind == FAIL_CONTEXT_OVERFLOW))
            out->kind = kind;
        if (!out->code[0] && !out->message[0])
            copy_texts(&e, out);
    }
    json_object_put(root);
}

/* The classify hook: any status, 2xx bodies included (errors hidden in 200). */
static void ds_classify(const struct prov_err_input *in, struct fail_info *out)
{
    if (in->status >= 200 && in->status <= 299)
        classify_2xx(in, out);
    else
        classify_error(in, out);
}

/* Examines one stream event. True, *<fail> filled (status 200), when it is an error: an
 * `event: error`, a data payload with an `error` or a native `code` and no choices, or a
 * choice ending with finish_reason "error". */
static bool ds_stream_error(struct bsc_str event, struct bsc_str data, struct fail_info *fail)
{
    bool named = bsc_str_eq(event, BSC_STR("error"));
    struct json_object *root;
    struct ds_err e;
    bool fin, hit;

    if (!named && !memmem(data.p, data.len, "\"error", 6) &&
        !memmem(data.p, data.len, "\"code\"", 6))
        return false;
    root = prov_parse_json(data);
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        if (!named)
            return false; /* [DONE] and framing problems are not ours to judge */
        root = NULL;
    }
    ds_read(root, &e);
    fin = finish_error(root);
    hit = named || e.found || fin;
    if (hit) {
        fail_info_init(fail);
        fail->status = 200;
        fail->kind = e.found ? hidden_kind(&e, data) : FAIL_SERVER_ERROR;
        copy_texts(&e, fail);
        if (!e.found)
            fail_copy_text(fail->message, sizeof(fail->message),
                           fin ? BSC_STR("the upstream ended the stream with finish_reason "
                                         "\"error\"")
                               : BSC_STR("the upstream sent an error event"));
        fail->retry_after_ms = prov_parse_retry_hint_text(e.message);
    }
    json_object_put(root);
    return hit;
}

/* ---- build ---------------------------------------------------------------------------------- */

/* Builds with max_completion_tokens renamed max_tokens in <req> for the duration of the call
 * (the client's object is restored before returning; the fast path is skipped because the
 * client's bytes carry the other name). */
static enum bsc_err build_renamed(const struct prov_call *c, struct json_object *mct,
                                  struct prov_http *out, char *why, size_t why_len)
{
    struct json_object *req = c->req, *mt = NULL, *old_mt;
    struct prov_call c2 = *c;
    bool existed = json_object_object_get_ex(req, "max_tokens", &mt);
    enum bsc_err err;

    old_mt = json_object_get(mt); /* NULL for a JSON null; restored as it was */
    json_object_get(mct);         /* survives the delete below; given back at the end */
    json_object_object_del(req, "max_completion_tokens");
    if (!mt || (json_object_is_type(mt, json_type_int) &&
                json_object_is_type(mct, json_type_int) &&
                json_object_get_int64(mct) < json_object_get_int64(mt)))
        json_object_object_add(req, "max_tokens", json_object_get(mct));
    c2.raw = BSC_STR_NULL;
    c2.model_span = BSC_STR_NULL;
    err = prov_openai.build(&c2, out, why, why_len);
    json_object_object_del(req, "max_tokens"); /* then re-add: json-c has no "set if same" */
    if (existed)
        json_object_object_add(req, "max_tokens", old_mt);
    json_object_object_add(req, "max_completion_tokens", mct);
    return err;
}

static enum bsc_err ds_build(const struct prov_call *c, struct prov_http *out, char *why,
                             size_t why_len)
{
    struct json_object *mct = NULL, *own = NULL;
    struct prov_call c2 = *c;
    struct bsc_str span;
    enum bsc_err err;

    if (c->op != PROV_OP_CHAT)
        return prov_openai.build(c, out, why, why_len);
    /* Only the client's bytes: parse them when they need the rename. */
    if (!c->req && c->raw.p &&
        bsc_json_member_span(c->raw, BSC_STR("max_completion_tokens"), &span))
        c2.req = own = prov_parse_json(c->raw);
    if (c2.req && json_object_object_get_ex(c2.req, "max_completion_tokens", &mct) && mct)
        err = build_renamed(&c2, mct, out, why, why_len);
    else
        err = prov_openai.build(c, out, why, why_len);
    json_object_put(own);
    return err;
}

/* ---- responses and streams ------------------------------------------------------------------ */

static enum bsc_err ds_map_response(const struct prov_call *c, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    struct prov_err_input in = {.status = 200, .body = body};

    ds_classify(&in, fail);
    if (fail->kind != FAIL_NONE)
        return BSC_EPARSE; /* an error in a 200 is never passed on as an answer */
    return prov_openai.map_response(c, body, out, usage, fail);
}

struct ds_stream {
    union {
        max_align_t align;
        unsigned char bytes[DS_INNER_STATE];
    } inner; /* prov_openai's stream state */
};

static void ds_stream_init(void *st, const struct prov_call *call)
{
    struct ds_stream *s = st;

    BSC_BUG_ON(prov_openai.stream_size > sizeof(s->inner));
    prov_openai.stream_init(&s->inner, call);
}

static enum prov_stream_status ds_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail)
{
    struct ds_stream *s = st;

    if (ds_stream_error(event, data, fail))
        return PROV_STREAM_ERROR;
    return prov_openai.stream_event(&s->inner, event, data, out, fail);
}

static enum prov_stream_status ds_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    return prov_openai.stream_end(&((struct ds_stream *)st)->inner, out, fail);
}

static void ds_stream_usage(void *st, struct prov_usage *usage)
{
    prov_openai.stream_usage(&((struct ds_stream *)st)->inner, usage);
}

static void ds_stream_cleanup(void *st)
{
    prov_openai.stream_cleanup(&((struct ds_stream *)st)->inner);
}

const struct prov_ops prov_dashscope = {
    .name = "dashscope",
    .build = ds_build,
    .classify = ds_classify,
    .ratelimit = rl_read_openai,
    .map_response = ds_map_response,
    .stream_size = sizeof(struct ds_stream),
    .stream_init = ds_stream_init,
    .stream_event = ds_stream_event,
    .stream_line = NULL,
    .stream_end = ds_stream_end,
    .stream_usage = ds_stream_usage,
    .stream_cleanup = ds_stream_cleanup,
};
