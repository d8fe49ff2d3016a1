/* SPDX-License-Identifier: MIT */
/* dialect_azure.c -- bascule-sim speaking Azure OpenAI (docs/providers.md §5.2):
 * /openai/deployments/{deployment}/chat/completions and /embeddings with ?api-version=,
 * the `api-key` header, /openai/models. The deployment in the path is the model the sim
 * keys its scripts on (the body's "model" is ignored, as Azure does). Answers are the
 * OpenAI dialect's plus Azure's filter annotations: prompt_filter_results, per-choice
 * content_filter_results, a first stream chunk with empty choices and an asynchronous
 * filter chunk without delta. Errors are Azure-shaped ({"error":{"code","message"}}, the
 * content filter 400 with its innererror). See docs/internals/sim.md, "The Azure dialect". */
#include "dialect.h"

#include "sjson.h"

#include "core/compat.h"

#define AZ_DEPLOYMENTS "/openai/deployments/"
#define AZ_MODELS "/openai/models"
#define AZ_MAX_NAME 256
#define AZ_DEFAULT_400 "Invalid request (simulated)."
#define AZ_FILTER_MESSAGE                                                                  \
    "The response was filtered due to the prompt triggering Azure OpenAI's content "       \
    "management policy. Please modify your prompt and retry. To learn more about our "     \
    "content filtering policies please read our documentation: "                           \
    "https://go.microsoft.com/fwlink/?linkid=2198766"

#define AZ_FILTERS_SAFE                                                                    \
    "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"self_harm\":{\"filtered\":false," \
    "\"severity\":\"safe\"},\"sexual\":{\"filtered\":false,\"severity\":\"safe\"},"           \
    "\"violence\":{\"filtered\":false,\"severity\":\"safe\"}}"
#define AZ_FILTERS_HIT                                                                     \
    "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"self_harm\":{\"filtered\":false," \
    "\"severity\":\"safe\"},\"sexual\":{\"filtered\":false,\"severity\":\"safe\"},"           \
    "\"violence\":{\"filtered\":true,\"severity\":\"high\"}}"
#define AZ_PROMPT_FILTERS                                                                  \
    "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":"              \
    AZ_FILTERS_SAFE "}]"

/* ---- routing ---- */

/* The deployment segment of a deployments path and what follows it. */
static bool az_split_deployment(struct bsc_str path, struct bsc_str *dep, struct bsc_str *rest)
{
    static const struct bsc_str prefix = BSC_STR(AZ_DEPLOYMENTS);
    const char *p, *slash;

    if (!bsc_str_starts(path, prefix))
        return false;
    p = path.p + prefix.len;
    slash = memchr(p, '/', path.len - prefix.len);
    if (!slash || slash == p || (size_t)(slash - p) > AZ_MAX_NAME)
        return false;
    *dep = bsc_str_make(p, (size_t)(slash - p));
    *rest = bsc_str_make(slash, (size_t)(path.p + path.len - slash));
    return true;
}

static enum sim_ep az_route(struct bsc_str method, struct bsc_str path)
{
    static const struct bsc_str model = BSC_STR(AZ_MODELS "/");
    bool get = bsc_str_eq(method, BSC_STR("GET"));
    bool post = bsc_str_eq(method, BSC_STR("POST"));
    struct bsc_str dep, rest;

    if (post && az_split_deployment(path, &dep, &rest)) {
        if (bsc_str_eq(rest, BSC_STR("/chat/completions")))
            return SIM_EP_CHAT;
        if (bsc_str_eq(rest, BSC_STR("/embeddings")))
            return SIM_EP_EMBED;
    }
    if (get && bsc_str_eq(path, BSC_STR(AZ_MODELS)))
        return SIM_EP_MODELS;
    if (get && path.len > model.len && bsc_str_starts(path, model))
        return SIM_EP_MODEL;
    return SIM_EP_NONE;
}

/* ---- credentials and the api-version ---- */

static bool az_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str key = bsc_str_trim(in->header(in->ctx, BSC_STR("api-key")));

    if (key.len == 0 || bsc_str_starts(key, BSC_STR("sk-sim-bad"))) {
        sim_reject_set(rej, 401, "", "401",
                       "Access denied due to invalid subscription key or wrong API endpoint. "
                       "Make sure to provide a valid key for an active subscription and use a "
                       "correct regional API endpoint for your resource.");
        return false;
    }
    return true;
}

/* The value of query parameter <name>, or an empty slice. */
static struct bsc_str az_query_param(struct bsc_str query, const char *name)
{
    size_t n = strlen(name);
    const char *p = query.p, *end = query.p + query.len;

    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;

        if ((size_t)(stop - p) > n && memcmp(p, name, n) == 0 && p[n] == '=')
            return bsc_str_make(p + n + 1, (size_t)(stop - p - n - 1));
        p = amp ? amp + 1 : NULL;
    }
    return BSC_STR_NULL;
}

/* YYYY-MM-DD, optionally followed by -preview. */
static bool az_version_ok(struct bsc_str v)
{
    static const char shape[] = "dddd-dd-dd";

    if (v.len != 10 && !(v.len == 18 && memcmp(v.p + 10, "-preview", 8) == 0))
        return false;
    for (size_t i = 0; i < 10; i++) {
        bool digit = v.p[i] >= '0' && v.p[i] <= '9';
        if (shape[i] == 'd' ? !digit : v.p[i] != '-')
            return false;
    }
    return true;
}

static bool az_check_version(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str v = az_query_param(in->query, "api-version");

    if (v.len == 0) { /* what Azure answers without one */
        sim_reject_set(rej, 404, "", "404", "Resource not found");
        return false;
    }
    if (!az_version_ok(v)) {
        sim_reject_set(rej, 400, "", "BadRequest", "API version not supported");
        return false;
    }
    return true;
}

/* ---- parsing: the OpenAI dialect's, on a body whose model is the deployment ---- */

/* Parses <in> as the OpenAI dialect would with "model" set to <dep> in a copy of the body
 * (Azure needs no model in the body and ignores one). */
static bool az_parse_as_openai(enum sim_ep ep, const struct sim_in *in, struct bsc_str dep,
                            struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *o = sim_json_parse(in->body, NULL, 0);
    struct sim_in copy = *in;
    struct bsc_buf body;
    bool ok;

    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return sim_dialect_openai.parse(ep, in, call, rej); /* its 400 for a bad body */
    }
    json_object_object_add(o, "model",
                           json_object_new_string_len(dep.p, (int)dep.len));
    bsc_buf_init(&body, in->body.len + AZ_MAX_NAME + 64);
    if (sim_json_append(&body, o) != BSC_OK) {
        json_object_put(o);
        bsc_buf_cleanup(&body);
        sim_reject_set(rej, 500, "", "InternalServerError", "out of memory");
        return false;
    }
    json_object_put(o);
    copy.body = bsc_buf_str(&body);
    ok = sim_dialect_openai.parse(ep, &copy, call, rej);
    bsc_buf_cleanup(&body);
    return ok;
}

static bool az_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                     struct sim_reject *rej)
{
    static const struct bsc_str model = BSC_STR(AZ_MODELS "/");
    struct bsc_str dep, rest;

    call->ep = ep;
    if (ep == SIM_EP_MODELS || ep == SIM_EP_MODEL) {
        if (ep == SIM_EP_MODEL) {
            call->model = bsc_str_dup(bsc_str_make(in->path.p + model.len,
                                                   in->path.len - model.len));
            if (!call->model) {
                sim_reject_set(rej, 500, "", "InternalServerError", "out of memory");
                return false;
            }
        }
        return az_check_version(in, rej);
    }
    if (!az_split_deployment(in->path, &dep, &rest)) {
        sim_reject_set(rej, 404, "", "404", "Resource not found");
        return false;
    }
    call->model = bsc_str_dup(dep); /* known early, for the request log */
    if (!call->model) {
        sim_reject_set(rej, 500, "", "InternalServerError", "out of memory");
        return false;
    }
    if (!az_check_version(in, rej))
        return false;
    BSC_FREE(call->model);
    return az_parse_as_openai(ep, in, dep, call, rej);
}

/* ---- answers ---- */

/* Inserts <what> after the first occurrence of <after> in <out> from <from> on. */
static enum bsc_err az_insert_after(struct bsc_buf *out, size_t from, const char *after,
                                 const char *what)
{
    size_t n = strlen(after), w = strlen(what), at;
    const char *hit = out->len > from ? memmem(out->p + from, out->len - from, after, n) : NULL;
    enum bsc_err err;

    if (!hit)
        return BSC_OK;
    at = (size_t)(hit - out->p) + n;
    err = bsc_buf_append(out, what, w); /* grow first, then move the tail */
    if (err)
        return err;
    memmove(out->p + at + w, out->p + at, out->len - w - at);
    memcpy(out->p + at, what, w);
    return BSC_OK;
}

static const char *az_choice_filters(const struct sim_call *call)
{
    return call->finish_reason && strcmp(call->finish_reason, "content_filter") == 0
               ? "\"content_filter_results\":" AZ_FILTERS_HIT ","
               : "\"content_filter_results\":" AZ_FILTERS_SAFE ",";
}

/* The OpenAI answer with prompt_filter_results and the choice's content_filter_results. */
static enum bsc_err az_body(const struct sim_call *call, struct bsc_buf *out)
{
    size_t start = out->len;
    enum bsc_err err = sim_dialect_openai.body(call, out);

    if (err || call->ep != SIM_EP_CHAT)
        return err;
    err = az_insert_after(out, start, "{", AZ_PROMPT_FILTERS ",");
    return err ? err : az_insert_after(out, start, "\"index\":0,", az_choice_filters(call));
}

/* Events: 0 the prompt-filter chunk, then the OpenAI events, with an asynchronous filter
 * annotation (no delta) just before the finish chunk. */
static size_t az_event_count(const struct sim_call *call)
{
    return sim_dialect_openai.event_count(call) + 2;
}

/* The index of the OpenAI finish event. */
static size_t az_oai_finish(const struct sim_call *call)
{
    return sim_dialect_openai.event_count(call) - 1 - (call->include_usage ? 1 : 0);
}

static enum bsc_err az_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t fin = az_oai_finish(call), start = out->len;
    enum bsc_err err;

    if (i >= az_event_count(call))
        return BSC_EINVAL;
    if (i == 0)
        return bsc_buf_append_cstr(out, "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":"
                                        "\"\",\"object\":\"\"," AZ_PROMPT_FILTERS "}\n\n");
    if (i == fin + 1)
        return bsc_buf_appendf(out,
                               "data: {\"id\":\"chatcmpl-sim-%llu\",\"object\":"
                               "\"chat.completion.chunk\",\"created\":%llu,\"model\":\"\","
                               "\"choices\":[{\"index\":0,\"finish_reason\":null,"
                               "\"content_filter_results\":" AZ_FILTERS_SAFE ","
                               "\"content_filter_offsets\":{\"check_offset\":0,"
                               "\"start_offset\":0,\"end_offset\":%u}}]}\n\n",
                               (unsigned long long)call->seq, (unsigned long long)call->created,
                               call->n_tokens);
    err = sim_dialect_openai.event(call, i <= fin ? i - 1 : i - 2, out);
    if (!err && i == fin + 2) /* the finish chunk carries the verdict on the output */
        err = az_insert_after(out, start, "\"index\":0,", az_choice_filters(call));
    return err;
}

static enum bsc_err az_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.end_event(call, out);
}

/* ---- errors ---- */

static void az_default_error(const struct sim_call *call, int status, const char **type,
                             const char **code, char *msgbuf, size_t msglen)
{
    (void)call;
    *type = "";
    *code = NULL;
    switch (status) {
    case 400:
        *type = "invalid_request_error";
        snprintf(msgbuf, msglen, "%s", AZ_DEFAULT_400);
        break;
    case 401:
        *code = "401";
        snprintf(msgbuf, msglen, "Access denied due to invalid subscription key or wrong API "
                                 "endpoint. Make sure to provide a valid key for an active "
                                 "subscription and use a correct regional API endpoint for your "
                                 "resource.");
        break;
    case 403:
        *code = "403";
        snprintf(msgbuf, msglen, "Public access is disabled. Please configure private endpoint.");
        break;
    case 404:
        *code = "DeploymentNotFound";
        snprintf(msgbuf, msglen, "The API deployment for this resource does not exist. If you "
                                 "created the deployment within the last 5 minutes, please wait "
                                 "a moment and try again.");
        break;
    case 429:
        *code = "429";
        snprintf(msgbuf, msglen, "Requests to the ChatCompletions_Create Operation under Azure "
                                 "OpenAI API version 2024-10-21 have exceeded token rate limit "
                                 "of your current OpenAI S0 pricing tier. Please retry after 1 "
                                 "second. Please go here: https://aka.ms/oai/quotaincrease if you "
                                 "would like to further increase the default rate limit.");
        break;
    case 503:
        *code = "ServiceUnavailable";
        snprintf(msgbuf, msglen, "The service is temporarily unable to process your request. "
                                 "Please try again later.");
        break;
    default:
        if (status >= 500) {
            *code = "InternalServerError";
            snprintf(msgbuf, msglen, "The server had an error while processing your request. "
                                     "Sorry about that!");
        } else {
            *type = "invalid_request_error";
            snprintf(msgbuf, msglen, "Simulated error with status %d.", status);
        }
    }
}

static enum bsc_err az_opt_str(struct bsc_buf *out, const char *s)
{
    return s && s[0] ? bsc_buf_append_json_str(out, bsc_str_cstr(s))
                     : bsc_buf_append_cstr(out, "null");
}

/* {"error":{...}} without the closing braces. The content filter refusal carries its
 * status, param and the inner policy verdict. */
static enum bsc_err az_error_open(int status, const char *type, const char *code,
                               const char *message, struct bsc_buf *out)
{
    bool filter = code && strcmp(code, "content_filter") == 0;
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"error\":{\"code\":");

    if (filter && strcmp(message, AZ_DEFAULT_400) == 0)
        message = AZ_FILTER_MESSAGE; /* the step named the code only */
    if (filter)
        type = NULL;

    if (!err)
        err = az_opt_str(out, code);
    if (!err && filter)
        err = bsc_buf_appendf(out, ",\"status\":%d,\"param\":\"prompt\"", status);
    else if (!err)
        err = bsc_buf_append_cstr(out, ",\"param\":null");
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"type\":");
    if (!err)
        err = az_opt_str(out, type);
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"message\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
    if (!err && filter)
        err = bsc_buf_append_cstr(out, ",\"innererror\":{\"code\":\"ResponsibleAIPolicyViolation\","
                                       "\"content_filter_result\":" AZ_FILTERS_HIT "}");
    return err;
}

static enum bsc_err az_error_body(int status, const char *type, const char *code,
                                  const char *message, struct bsc_buf *out)
{
    enum bsc_err err = az_error_open(status, type, code, message, out);

    return err ? err : bsc_buf_append(out, "}}", 2);
}

static enum bsc_err az_error_event(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "data: ");

    if (!err)
        err = az_error_open(status, type, code, message, out);
    return err ? err : bsc_buf_append_cstr(out, "}}\n\n");
}

static enum bsc_err az_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.malformed_body(call, out);
}

static enum bsc_err az_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.malformed_event(call, out);
}

/* ---- models (Models - List: created_at, status, capabilities) ---- */

static enum bsc_err az_model_json(const char *id, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"status\":\"succeeded\",\"capabilities\":"
                                                "{\"chat_completion\":true,\"completion\":false,"
                                                "\"embeddings\":false,\"fine_tune\":false,"
                                                "\"inference\":true},\"lifecycle_status\":"
                                                "\"generally-available\",\"id\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(id));
    return err ? err
               : bsc_buf_append_cstr(out, ",\"created_at\":1700000000,\"object\":\"model\"}");
}

static enum bsc_err az_models(const struct sim_call *call, const char *const *names, size_t n,
                              struct bsc_buf *out)
{
    enum bsc_err err;

    if (call->ep == SIM_EP_MODEL)
        return az_model_json(call->model, out);
    err = bsc_buf_append_cstr(out, "{\"data\":[");
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = az_model_json(names[i], out);
    }
    return err ? err : bsc_buf_append_cstr(out, "],\"object\":\"list\"}");
}

const struct sim_dialect sim_dialect_azure = {
    .name = "azure",
    .route = az_route,
    .authorize = az_authorize,
    .parse = az_parse,
    .body = az_body,
    .event_count = az_event_count,
    .event = az_event,
    .end_event = az_end_event,
    .stream_content_type = "text/event-stream",
    .default_error = az_default_error,
    .error_body = az_error_body,
    .error_event = az_error_event,
    .malformed_body = az_malformed_body,
    .malformed_event = az_malformed_event,
    .models = az_models,
};
