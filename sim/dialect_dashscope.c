/* SPDX-License-Identifier: MIT */
/* dialect_dashscope.c -- bascule-sim speaking Alibaba Cloud Model Studio (DashScope) in its
 * OpenAI-compatible mode under /compatible-mode/v1 (docs/providers.md §4.3). The wire is
 * OpenAI's, so parsing and answers come from the OpenAI dialect; this file adds the paths,
 * DashScope's error vocabulary (compatible-mode error bodies with a request_id on error
 * statuses; the native {"code","message","request_id"} body for errors that arrive with
 * HTTP 200, in a body or as a stream event) and the :HTTP_STATUS/200 comment line.
 * See docs/internals/sim.md, "The DashScope dialect". */
#include "dialect.h"

#include "core/compat.h"

#define DS_PREFIX "/compatible-mode/v1"
#define DS_REQUEST_ID "8f3c2a1e-sim0-4d5b-9a7e-000000000000"

/* ---- routing and auth ---- */

static enum sim_ep ds_route(struct bsc_str method, struct bsc_str path)
{
    static const struct bsc_str models = BSC_STR(DS_PREFIX "/models/");
    bool get = bsc_str_eq(method, BSC_STR("GET"));
    bool post = bsc_str_eq(method, BSC_STR("POST"));

    if (post && bsc_str_eq(path, BSC_STR(DS_PREFIX "/chat/completions")))
        return SIM_EP_CHAT;
    if (post && bsc_str_eq(path, BSC_STR(DS_PREFIX "/embeddings")))
        return SIM_EP_EMBED;
    if (get && bsc_str_eq(path, BSC_STR(DS_PREFIX "/models")))
        return SIM_EP_MODELS;
    if (get && path.len > models.len && bsc_str_starts(path, models))
        return SIM_EP_MODEL;
    return SIM_EP_NONE;
}

/* Bearer keys, as OpenAI; a missing one and a sk-sim-bad* one get DashScope's 401. */
static bool ds_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str auth = bsc_str_trim(in->header(in->ctx, BSC_STR("authorization")));
    struct bsc_str key = BSC_STR_NULL;

    if (auth.len >= 7 && strncasecmp(auth.p, "bearer ", 7) == 0)
        key = bsc_str_trim(bsc_str_make(auth.p + 7, auth.len - 7));
    if (key.len == 0 || bsc_str_starts(key, BSC_STR("sk-sim-bad"))) {
        sim_reject_set(rej, 401, "invalid_request_error", "invalid_api_key",
                       "Incorrect API key provided. ");
        return false;
    }
    return true;
}

static bool ds_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                     struct sim_reject *rej)
{
    static const struct bsc_str models = BSC_STR(DS_PREFIX "/models/");

    if (ep != SIM_EP_MODEL)
        return sim_dialect_openai.parse(ep, in, call, rej);
    call->ep = ep;
    call->model = bsc_str_dup(bsc_str_make(in->path.p + models.len, in->path.len - models.len));
    if (!call->model)
        sim_reject_set(rej, 500, "internal_error", "internal_error", "out of memory");
    return call->model != NULL;
}

/* ---- streams: OpenAI's events, the first one after DashScope's status comment ---- */

static enum bsc_err ds_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    enum bsc_err err = i == 0 ? bsc_buf_append_cstr(out, ":HTTP_STATUS/200\n") : BSC_OK;

    return err ? err : sim_dialect_openai.event(call, i, out);
}

/* ---- errors ---- */

/* The compatible mode's default for a bare status (type, code, message). */
static void ds_default_error(const struct sim_call *call, int status, const char **type,
                             const char **code, char *msgbuf, size_t msglen)
{
    const char *model = call && call->model ? call->model : "unknown";

    *type = "invalid_request_error";
    *code = NULL;
    switch (status) {
    case 400:
        *code = "invalid_parameter_error";
        snprintf(msgbuf, msglen, "Required parameter(s) missing or invalid, please check the "
                                 "request parameters.");
        break;
    case 401:
        *code = "invalid_api_key";
        snprintf(msgbuf, msglen, "Incorrect API key provided. ");
        break;
    case 403:
        *type = *code = "access_denied";
        snprintf(msgbuf, msglen, "Access denied.");
        break;
    case 404:
        *code = "model_not_found";
        snprintf(msgbuf, msglen, "The model `%s` does not exist or you do not have access to it.",
                 model);
        break;
    case 429:
        *type = *code = "limit_requests";
        snprintf(msgbuf, msglen, "You have exceeded your current request limit. For details, see: "
                                 "https://help.aliyun.com/zh/model-studio/error-code#rate-limit");
        break;
    case 503:
        *type = *code = "service_unavailable";
        snprintf(msgbuf, msglen, "The service is temporarily unavailable (simulated).");
        break;
    default:
        if (status >= 500) {
            *type = *code = "internal_error";
            snprintf(msgbuf, msglen, "An internal error has occured, please try again later or "
                                     "contact service support.");
        } else {
            snprintf(msgbuf, msglen, "Simulated error with status %d.", status);
        }
    }
}

/* Native codes for the compatible ones, and their documented messages (docs/providers.md §4.4). */
static const struct {
    const char *compat, *native, *message;
} ds_native_codes[] = {
    {"internal_error", "InternalError",
     "An internal error has occured, please try again later or contact service support."},
    {"limit_requests", "Throttling.RateQuota",
     "Requests rate limit exceeded, please try again later."},
    {NULL, "Throttling.AllocationQuota",
     "Allocated quota exceeded, please increase your quota limit."},
    {NULL, "Arrearage", "Access denied, please make sure your account is in good standing."},
    {"data_inspection_failed", "DataInspectionFailed",
     "Input or output data may contain inappropriate content."},
    {"invalid_parameter_error", "InvalidParameter",
     "Required parameter(s) missing or invalid, please check the request parameters."},
    {"invalid_api_key", "InvalidApiKey", "Invalid API-key provided."},
    {"model_not_found", "ModelNotFound", "Model not exist."},
    {"access_denied", "AccessDenied", "Access denied."},
};

/* The native spelling of <code> (NULL = a server error), and the message to go with it:
 * <message> unless that is only the default a 500 stands for. */
static void ds_native(const char *code, const char *message, const char **ncode, const char **nmsg)
{
    char dflt[256];
    const char *t, *c;

    ds_default_error(NULL, 500, &t, &c, dflt, sizeof(dflt));
    *ncode = code ? code : "InternalError";
    *nmsg = message;
    for (size_t i = 0; i < BSC_ARRAY_LEN(ds_native_codes); i++) {
        bool hit = (ds_native_codes[i].compat && strcmp(*ncode, ds_native_codes[i].compat) == 0) ||
                   strcmp(*ncode, ds_native_codes[i].native) == 0;
        if (!hit)
            continue;
        *ncode = ds_native_codes[i].native;
        if (strcmp(message, dflt) == 0)
            *nmsg = ds_native_codes[i].message;
        return;
    }
}

static enum bsc_err ds_native_obj(const char *code, const char *message, struct bsc_buf *out)
{
    const char *ncode, *nmsg;
    enum bsc_err err;

    ds_native(code, message, &ncode, &nmsg);
    err = bsc_buf_append_cstr(out, "{\"code\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(ncode));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"message\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(nmsg));
    return err ? err : bsc_buf_append_cstr(out, ",\"request_id\":\"" DS_REQUEST_ID "\"}");
}

static enum bsc_err ds_compat_obj(const char *type, const char *code, const char *message,
                               struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"error\":{\"code\":");

    if (!err)
        err = code ? bsc_buf_append_json_str(out, bsc_str_cstr(code))
                   : bsc_buf_append_cstr(out, "null");
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"param\":null,\"message\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"type\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(type ? type : "invalid_request_error"));
    return err ? err
               : bsc_buf_append_cstr(out, "},\"id\":\"chatcmpl-sim-error\",\"request_id\":\""
                                          DS_REQUEST_ID "\"}");
}

/* An error status gets the compatible-mode body; a 200 the native one (the hidden error). */
static enum bsc_err ds_error_body(int status, const char *type, const char *code,
                                  const char *message, struct bsc_buf *out)
{
    if (status >= 200 && status <= 299)
        return ds_native_obj(code, message, out);
    return ds_compat_obj(type, code, message, out);
}

/* In a stream: one data event carrying the native code, no choices; the stream then ends
 * without [DONE]. */
static enum bsc_err ds_error_event(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "data:");

    (void)status;
    (void)type;
    if (!err)
        err = ds_native_obj(code, message, out);
    return err ? err : bsc_buf_append(out, "\n\n", 2);
}

/* ---- the rest is the OpenAI dialect's (a const table cannot copy its pointers) ---- */

static enum bsc_err ds_body(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.body(call, out);
}

static size_t ds_event_count(const struct sim_call *call)
{
    return sim_dialect_openai.event_count(call);
}

static enum bsc_err ds_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.end_event(call, out);
}

static enum bsc_err ds_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.malformed_body(call, out);
}

static enum bsc_err ds_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    return sim_dialect_openai.malformed_event(call, out);
}

static enum bsc_err ds_models(const struct sim_call *call, const char *const *names, size_t n,
                              struct bsc_buf *out)
{
    return sim_dialect_openai.models(call, names, n, out);
}

const struct sim_dialect sim_dialect_dashscope = {
    .name = "dashscope",
    .route = ds_route,
    .authorize = ds_authorize,
    .parse = ds_parse,
    .body = ds_body,
    .event_count = ds_event_count,
    .event = ds_event,
    .end_event = ds_end_event,
    .stream_content_type = "text/event-stream;charset=UTF-8",
    .default_error = ds_default_error,
    .error_body = ds_error_body,
    .error_event = ds_error_event,
    .malformed_body = ds_malformed_body,
    .malformed_event = ds_malformed_event,
    .models = ds_models,
};
