/* SPDX-License-Identifier: MIT */
/* script.c -- parsing and sequencing of bascule-sim fault scripts. Validation is strict
 * and names the step and field at fault; sequencing is a cursor over (step, times used).
 * It does not know HTTP: the runtime (exchange.c) carries a step out.
 * See docs/internals/sim.md. */
#include "script.h"

#include <ctype.h>

#include "content.h"
#include "dialect.h"
#include "sjson.h"

#include "core/compat.h"
#include "core/utf8.h"

static const char *const action_names[SIM_ACT_COUNT] = {
#define X(NAME, name, doc) [SIM_ACT_##NAME] = name,
    SIM_ACTIONS(X)
#undef X
};

const char *sim_action_name(enum sim_action action)
{
    return (unsigned)action < SIM_ACT_COUNT ? action_names[action] : "?";
}

static bool action_parse(struct bsc_str s, enum sim_action *out)
{
    for (int i = 0; i < SIM_ACT_COUNT; i++) {
        if (bsc_str_eq(s, bsc_str_cstr(action_names[i]))) {
            *out = (enum sim_action)i;
            return true;
        }
    }
    return false;
}

void sim_step_init_ok(struct sim_step *step)
{
    memset(step, 0, sizeof(*step));
    step->action = SIM_ACT_OK;
    step->times = 1;
}

enum bsc_err sim_step_init_overload(struct sim_step *step, uint32_t max_concurrent)
{
    char limit[16];
    const char *const kv[][2] = {
        {"x-ratelimit-limit-requests", limit},   {"x-ratelimit-remaining-requests", "100"},
        {"x-ratelimit-reset-requests", "50ms"}, {"retry-after-ms", "50"},
    };

    snprintf(limit, sizeof(limit), "%u", max_concurrent);
    sim_step_init_ok(step);
    step->action = SIM_ACT_STATUS;
    step->status = 429;
    for (size_t i = 0; i < BSC_ARRAY_LEN(kv); i++) {
        step->headers[i].name = strdup(kv[i][0]);
        step->headers[i].value = strdup(kv[i][1]);
        step->n_headers = i + 1;
        if (!step->headers[i].name || !step->headers[i].value) {
            sim_step_cleanup(step);
            return BSC_ENOMEM;
        }
    }
    return BSC_OK;
}

void sim_step_cleanup(struct sim_step *step)
{
    for (size_t i = 0; i < step->n_headers; i++) {
        BSC_FREE(step->headers[i].name);
        BSC_FREE(step->headers[i].value);
    }
    step->n_headers = 0;
    BSC_FREE(step->body);
    BSC_FREE(step->error_type);
    BSC_FREE(step->error_code);
    BSC_FREE(step->message);
    BSC_FREE(step->finish_reason);
    BSC_FREE(step->content);
    BSC_FREE(step->tool_arguments);
    BSC_FREE(step->usage);
    BSC_FREE(step->usage_start);
}

void sim_spec_cleanup(struct sim_spec *spec)
{
    for (size_t i = 0; i < spec->n_steps; i++)
        sim_step_cleanup(&spec->steps[i]);
    BSC_FREE(spec->steps);
    spec->n_steps = 0;
    BSC_FREE(spec->content);
    BSC_FREE(spec->tool_arguments);
}

/* Copies <s> into a new NUL-terminated string at *<dst>; NULL stays NULL. */
static enum bsc_err dup_opt(char **dst, const char *s)
{
    *dst = NULL;
    if (!s)
        return BSC_OK;
    *dst = bsc_str_dup(bsc_str_cstr(s));
    return *dst ? BSC_OK : BSC_ENOMEM;
}

enum bsc_err sim_step_copy(struct sim_step *dst, const struct sim_step *src)
{
    enum bsc_err err = BSC_OK;

    *dst = *src;
    dst->n_headers = 0;
    dst->body = dst->error_type = dst->error_code = dst->message = dst->finish_reason = NULL;
    dst->content = dst->tool_arguments = dst->usage = dst->usage_start = NULL;
    for (size_t i = 0; i < src->n_headers && !err; i++) {
        err = dup_opt(&dst->headers[i].name, src->headers[i].name);
        if (!err) {
            err = dup_opt(&dst->headers[i].value, src->headers[i].value);
            dst->n_headers = i + 1; /* the name is owned now, whatever the value did */
        }
    }
    if (!err)
        err = dup_opt(&dst->body, src->body);
    if (!err)
        err = dup_opt(&dst->error_type, src->error_type);
    if (!err)
        err = dup_opt(&dst->error_code, src->error_code);
    if (!err)
        err = dup_opt(&dst->message, src->message);
    if (!err)
        err = dup_opt(&dst->finish_reason, src->finish_reason);
    if (!err)
        err = dup_opt(&dst->content, src->content);
    if (!err)
        err = dup_opt(&dst->tool_arguments, src->tool_arguments);
    if (!err)
        err = dup_opt(&dst->usage, src->usage);
    if (!err)
        err = dup_opt(&dst->usage_start, src->usage_start);
    if (err)
        sim_step_cleanup(dst);
    return err;
}

enum bsc_err sim_step_inherit(struct sim_step *step, const struct sim_spec *spec)
{
    char *content = NULL, *args = NULL;
    enum bsc_err err = BSC_OK;

    if (!step->content)
        err = dup_opt(&content, spec->content);
    if (!err && !step->tool_arguments)
        err = dup_opt(&args, spec->tool_arguments);
    if (err) {
        free(content);
        return err;
    }
    if (content)
        step->content = content;
    if (args)
        step->tool_arguments = args;
    return BSC_OK;
}

/* ---- what a step says about the answer ---- */

/* True when <s> is one JSON value (json-c gives no object for a bare null). */
static bool is_json_text(struct bsc_str s)
{
    struct json_object *o = sim_json_parse(s, NULL, 0);
    bool ok = o != NULL || bsc_str_eq(bsc_str_trim(s), BSC_STR("null"));

    json_object_put(o);
    return ok;
}

void sim_step_apply(struct sim_step *step, struct sim_call *call)
{
    if (call->ep != SIM_EP_CHAT)
        return;
    call->usage = step->usage ? bsc_str_cstr(step->usage) : BSC_STR_NULL;
    call->usage_start = step->usage_start ? bsc_str_cstr(step->usage_start) : BSC_STR_NULL;
    if (call->tool_name && step->tool_arguments) {
        free(call->tool_args);
        call->tool_args = step->tool_arguments; /* moved: <call> owns it now */
        step->tool_arguments = NULL;
        call->tool_args_raw = !is_json_text(bsc_str_cstr(call->tool_args));
        return;
    }
    if (!step->content)
        return;
    BSC_FREE(call->tool_name); /* scripted text wins over the tool call */
    BSC_FREE(call->tool_args);
    call->tool_args_raw = false;
    call->content = bsc_str_cstr(step->content);
    call->n_tokens = sim_content_pieces(call->content);
    call->finish_length = false;
}

/* ---- parsing ---- */

struct perr {
    char *buf;
    size_t len;
};

static bool header_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
            return false;
    return true;
}

static bool header_value_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 && *s != '\t')
            return false;
    return true;
}

static enum bsc_err parse_headers(struct json_object *hdrs, struct sim_step *step, size_t idx,
                                  struct perr *pe)
{
    if (!json_object_is_type(hdrs, json_type_object)) {
        snprintf(pe->buf, pe->len, "script[%zu]: \"headers\" must be an object", idx);
        return BSC_EINVAL;
    }
    json_object_object_foreach(hdrs, key, val)
    {
        struct sim_step_header *h;
        const char *v;

        if (step->n_headers == SIM_STEP_MAX_HEADERS) {
            snprintf(pe->buf, pe->len, "script[%zu]: more than %u headers", idx,
                     SIM_STEP_MAX_HEADERS);
            return BSC_EINVAL;
        }
        if (!json_object_is_type(val, json_type_string) &&
            !json_object_is_type(val, json_type_int) &&
            !json_object_is_type(val, json_type_double)) {
            snprintf(pe->buf, pe->len, "script[%zu]: header \"%s\" must be a string or number",
                     idx, key);
            return BSC_EINVAL;
        }
        v = json_object_get_string(val);
        if (!header_name_ok(key) || !header_value_ok(v)) {
            snprintf(pe->buf, pe->len, "script[%zu]: header \"%s\" is not a valid HTTP header",
                     idx, key);
            return BSC_EINVAL;
        }
        h = &step->headers[step->n_headers];
        h->name = bsc_str_dup(bsc_str_cstr(key));
        h->value = bsc_str_dup(bsc_str_cstr(v));
        step->n_headers++;
        if (!h->name || !h->value)
            return BSC_ENOMEM;
        for (char *c = h->name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
    return BSC_OK;
}

static enum bsc_err parse_body(struct json_object *body, struct sim_step *step)
{
    struct bsc_buf b;
    enum bsc_err err;

    if (json_object_is_type(body, json_type_string)) {
        /* A string is sent as its bytes: tests can serve HTML or plain-text error pages. */
        step->body = bsc_str_dup(bsc_str_make(json_object_get_string(body),
                                              (size_t)json_object_get_string_len(body)));
        return step->body ? BSC_OK : BSC_ENOMEM;
    }
    bsc_buf_init(&b, SIM_SPEC_MAX_BYTES);
    err = sim_json_append(&b, body);
    if (!err) {
        step->body = bsc_buf_take(&b, NULL);
        if (!step->body)
            err = BSC_ENOMEM;
    }
    bsc_buf_cleanup(&b);
    return err;
}

static enum bsc_err parse_opt_str(struct json_object *obj, const char *key, char **out,
                                  size_t idx, struct perr *pe)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(pe->buf, pe->len, "script[%zu]: \"%s\" must be a string", idx, key);
        return BSC_EINVAL;
    }
    *out = bsc_str_dup(bsc_str_make(json_object_get_string(v),
                                    (size_t)json_object_get_string_len(v)));
    return *out ? BSC_OK : BSC_ENOMEM;
}

/* An optional text field (content, tool_arguments): a string of at most <max> bytes of
 * valid UTF-8 without NUL. <where> prefixes the reason: "script[2]: ", or "" at the top. */
static enum bsc_err parse_text(struct json_object *obj, const char *key, size_t max, char **out,
                               const char *where, struct perr *pe)
{
    struct json_object *v;
    struct bsc_str s;

    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (!json_object_is_type(v, json_type_string)) {
        snprintf(pe->buf, pe->len, "%s\"%s\" must be a string", where, key);
        return BSC_EINVAL;
    }
    s = bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    if (s.len > max) {
        snprintf(pe->buf, pe->len, "%s\"%s\" is longer than %zu bytes", where, key, max);
        return BSC_EINVAL;
    }
    if (memchr(s.p, '\0', s.len) || !bsc_utf8_valid(s.p, s.len)) {
        snprintf(pe->buf, pe->len, "%s\"%s\" must be valid UTF-8 without NUL", where, key);
        return BSC_EINVAL;
    }
    *out = bsc_str_dup(s);
    return *out ? BSC_OK : BSC_ENOMEM;
}

/* An optional usage object (usage, usage_start), kept as its compact JSON text. */
static enum bsc_err parse_usage(struct json_object *obj, const char *key, char **out,
                                const char *where, struct perr *pe)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (!json_object_is_type(v, json_type_object)) {
        snprintf(pe->buf, pe->len, "%s\"%s\" must be an object", where, key);
        return BSC_EINVAL;
    }
    *out = bsc_str_dup(bsc_str_cstr(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)));
    return *out ? BSC_OK : BSC_ENOMEM;
}

static bool step_key_known(const char *key)
{
    static const char *const keys[] = {"action",     "times",        "delay_ms", "status",
                                       "headers",    "body",         "error_type",
                                       "error_code", "message",      "after_events",
                                       "interval_ms", "finish_reason", "content",
                                       "tool_arguments", "stream", "usage", "usage_start",
                                       "stall_ms"};

    for (size_t i = 0; i < BSC_ARRAY_LEN(keys); i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

/* The fields a step may carry beyond the common ones, by action. */
static enum bsc_err check_fields(struct json_object *o, const struct sim_step *step, size_t idx,
                                 struct perr *pe)
{
    /* Fields that shape a normal answer, which only these actions send. */
    static const char *const answer_keys[] = {"finish_reason", "content", "tool_arguments",
                                              "stream", "usage", "usage_start"};
    bool uses_after = step->action == SIM_ACT_CUT || step->action == SIM_ACT_ERROR_200 ||
                      step->action == SIM_ACT_MALFORMED || step->action == SIM_ACT_STALL;
    bool answers = step->action == SIM_ACT_OK || step->action == SIM_ACT_DELAY ||
                   step->action == SIM_ACT_TRICKLE || step->action == SIM_ACT_CUT ||
                   step->action == SIM_ACT_STALL || step->action == SIM_ACT_NO_DONE;
    const char *bad = NULL;

    json_object_object_foreach(o, key, val)
    {
        (void)val;
        if (!step_key_known(key)) {
            snprintf(pe->buf, pe->len, "script[%zu]: unknown field \"%s\"", idx, key);
            return BSC_EINVAL;
        }
    }
    if (step->action != SIM_ACT_STATUS && json_object_object_get_ex(o, "status", NULL))
        bad = "status";
    else if (!uses_after && json_object_object_get_ex(o, "after_events", NULL))
        bad = "after_events";
    else if (step->action != SIM_ACT_TRICKLE && json_object_object_get_ex(o, "interval_ms", NULL))
        bad = "interval_ms";
    else if (step->action != SIM_ACT_STALL && json_object_object_get_ex(o, "stall_ms", NULL))
        bad = "stall_ms";
    for (size_t i = 0; !bad && !answers && i < BSC_ARRAY_LEN(answer_keys); i++)
        if (json_object_object_get_ex(o, answer_keys[i], NULL))
            bad = answer_keys[i];
    if (bad) {
        snprintf(pe->buf, pe->len, "script[%zu]: \"%s\" does not apply to action \"%s\"", idx,
                 bad, sim_action_name(step->action));
        return BSC_EINVAL;
    }
    return BSC_OK;
}

static enum bsc_err parse_step(struct json_object *o, struct sim_step *step, size_t idx,
                               struct perr *pe)
{
    struct json_object *v;
    struct bsc_str act;
    uint32_t status = 0;
    enum bsc_err err;

    sim_step_init_ok(step);
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(pe->buf, pe->len, "script[%zu] must be an object", idx);
        return BSC_EINVAL;
    }
    act = sim_json_get_str(o, "action");
    if (!act.p) {
        snprintf(pe->buf, pe->len, "script[%zu]: \"action\" (a string) is required", idx);
        return BSC_EINVAL;
    }
    if (!action_parse(act, &step->action)) {
        snprintf(pe->buf, pe->len, "script[%zu]: unknown action \"%.*s\"", idx,
                 BSC_STR_FMT(act));
        return BSC_EINVAL;
    }
    err = check_fields(o, step, idx, pe);
    if (!err)
        err = sim_json_get_u32(o, "times", 1, SIM_STEP_MAX_TIMES, &step->times, NULL, pe->buf,
                               pe->len);
    if (!err)
        err = sim_json_get_u32(o, "delay_ms", 0, SIM_DELAY_MAX_MS, &step->delay_ms, NULL,
                               pe->buf, pe->len);
    if (!err)
        err = sim_json_get_u32(o, "after_events", 0, SIM_STEP_MAX_TIMES, &step->after_events,
                               &step->has_after_events, pe->buf, pe->len);
    step->interval_ms = SIM_TRICKLE_DEFAULT_MS;
    step->stall_ms = SIM_DELAY_MAX_MS;
    if (!err)
        err = sim_json_get_u32(o, "stall_ms", 0, SIM_DELAY_MAX_MS, &step->stall_ms, NULL,
                               pe->buf, pe->len);
    if (!err)
        err = sim_json_get_u32(o, "interval_ms", 0, SIM_DELAY_MAX_MS, &step->interval_ms, NULL,
                               pe->buf, pe->len);
    if (!err && step->action == SIM_ACT_STATUS) {
        bool present;
        err = sim_json_get_u32(o, "status", 100, 599, &status, &present, pe->buf, pe->len);
        if (!err && !present) {
            snprintf(pe->buf, pe->len, "script[%zu]: action \"status\" needs \"status\"", idx);
            err = BSC_EINVAL;
        }
        step->status = (int)status;
    }
    if (err == BSC_EINVAL && strncmp(pe->buf, "script[", 7) != 0) {
        char inner[200];
        snprintf(inner, sizeof(inner), "%s", pe->buf);
        snprintf(pe->buf, pe->len, "script[%zu]: %s", idx, inner);
    }
    if (!err && json_object_object_get_ex(o, "stream", &v)) {
        if (!json_object_is_type(v, json_type_boolean)) {
            snprintf(pe->buf, pe->len, "script[%zu]: \"stream\" must be a boolean", idx);
            err = BSC_EINVAL;
        }
        step->has_stream = true;
        step->stream = json_object_get_boolean(v);
    }
    if (!err && json_object_object_get_ex(o, "headers", &v))
        err = parse_headers(v, step, idx, pe);
    if (!err && json_object_object_get_ex(o, "body", &v) && !json_object_is_type(v, json_type_null))
        err = parse_body(v, step);
    if (!err)
        err = parse_opt_str(o, "error_type", &step->error_type, idx, pe);
    if (!err)
        err = parse_opt_str(o, "error_code", &step->error_code, idx, pe);
    if (!err)
        err = parse_opt_str(o, "message", &step->message, idx, pe);
    if (!err)
        err = parse_opt_str(o, "finish_reason", &step->finish_reason, idx, pe);
    if (!err) {
        char where[40];
        snprintf(where, sizeof(where), "script[%zu]: ", idx);
        err = parse_text(o, "content", SIM_SPEC_MAX_BYTES, &step->content, where, pe);
        if (!err)
            err = parse_text(o, "tool_arguments", SIM_TOOL_ARGS_MAX, &step->tool_arguments,
                             where, pe);
        if (!err)
            err = parse_usage(o, "usage", &step->usage, where, pe);
        if (!err)
            err = parse_usage(o, "usage_start", &step->usage_start, where, pe);
    }
    return err;
}

static enum bsc_err parse_steps(struct json_object *arr, struct sim_spec *spec, struct perr *pe)
{
    size_t n;

    if (!json_object_is_type(arr, json_type_array)) {
        snprintf(pe->buf, pe->len, "\"script\" must be an array of steps");
        return BSC_EINVAL;
    }
    n = json_object_array_length(arr);
    if (n > SIM_SCRIPT_MAX_STEPS) {
        snprintf(pe->buf, pe->len, "\"script\" has %zu steps; at most %u", n,
                 SIM_SCRIPT_MAX_STEPS);
        return BSC_EINVAL;
    }
    if (n == 0)
        return BSC_OK;
    spec->steps = calloc(n, sizeof(*spec->steps));
    if (!spec->steps)
        return BSC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        enum bsc_err err = parse_step(json_object_array_get_idx(arr, i), &spec->steps[i], i, pe);
        spec->n_steps = i + 1; /* the step owns what it parsed, even on error */
        if (err)
            return err;
    }
    return BSC_OK;
}

static enum bsc_err parse_spec_obj(struct json_object *o, struct sim_spec *spec, struct perr *pe)
{
    static const char *const keys[] = {"tokens", "token_delay_ms", "script", "repeat",
                                       "content", "tool_arguments", "max_concurrent",
                                       "prefill"};
    struct json_object *v;
    uint32_t delay = 0;
    bool present = false;
    enum bsc_err err;

    if (!json_object_is_type(o, json_type_object)) {
        snprintf(pe->buf, pe->len, "a model spec must be a JSON object");
        return BSC_EINVAL;
    }
    json_object_object_foreach(o, key, val)
    {
        bool known = false;
        (void)val;
        for (size_t i = 0; i < BSC_ARRAY_LEN(keys); i++)
            known = known || strcmp(key, keys[i]) == 0;
        if (!known) {
            snprintf(pe->buf, pe->len, "unknown field \"%s\"", key);
            return BSC_EINVAL;
        }
    }
    err = sim_json_get_u32(o, "tokens", 1, SIM_TOKENS_MAX, &spec->tokens, NULL, pe->buf,
                           pe->len);
    if (!err)
        err = sim_json_get_u32(o, "token_delay_ms", 0, SIM_DELAY_MAX_MS, &delay, &present,
                               pe->buf, pe->len);
    if (!err && present)
        spec->token_delay_ms = (int32_t)delay;
    if (!err)
        err = sim_json_get_u32(o, "max_concurrent", 0, 1000000, &spec->max_concurrent, NULL,
                               pe->buf, pe->len);
    if (!err && json_object_object_get_ex(o, "repeat", &v)) {
        if (!json_object_is_type(v, json_type_boolean)) {
            snprintf(pe->buf, pe->len, "\"repeat\" must be true or false");
            return BSC_EINVAL;
        }
        spec->repeat = json_object_get_boolean(v);
    }
    if (!err && json_object_object_get_ex(o, "prefill", &v)) {
        const char *pv = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                    : "";
        if (strcmp(pv, "refuse") && strcmp(pv, "honour")) {
            snprintf(pe->buf, pe->len, "\"prefill\" must be \"honour\" or \"refuse\"");
            return BSC_EINVAL;
        }
        spec->prefill_refuse = strcmp(pv, "refuse") == 0;
    }
    if (!err)
        err = parse_text(o, "content", SIM_SPEC_MAX_BYTES, &spec->content, "", pe);
    if (!err)
        err = parse_text(o, "tool_arguments", SIM_TOOL_ARGS_MAX, &spec->tool_arguments, "", pe);
    if (!err && json_object_object_get_ex(o, "script", &v) &&
        !json_object_is_type(v, json_type_null))
        err = parse_steps(v, spec, pe);
    return err;
}

enum bsc_err sim_spec_parse(struct bsc_str json, struct sim_spec *spec, char *errbuf,
                            size_t errlen)
{
    struct perr pe = {errbuf, errlen};
    struct json_object *o;
    enum bsc_err err;

    memset(spec, 0, sizeof(*spec));
    spec->tokens = SIM_TOKENS_DEFAULT;
    spec->token_delay_ms = -1;
    if (json.len > SIM_SPEC_MAX_BYTES) {
        snprintf(errbuf, errlen, "spec larger than %u bytes", SIM_SPEC_MAX_BYTES);
        return BSC_EINVAL;
    }
    o = sim_json_parse(json, errbuf, errlen);
    if (!o)
        return BSC_EPARSE;
    err = parse_spec_obj(o, spec, &pe);
    json_object_put(o);
    if (err == BSC_ENOMEM)
        snprintf(errbuf, errlen, "out of memory");
    if (err) {
        sim_spec_cleanup(spec);
        spec->tokens = SIM_TOKENS_DEFAULT;
        spec->token_delay_ms = -1;
        spec->repeat = false;
    }
    return err;
}

/* ---- sequencing ---- */

const struct sim_step *sim_script_next(const struct sim_spec *spec, struct sim_cursor *cur)
{
    const struct sim_step *step;

    if (spec->n_steps == 0)
        return NULL;
    if (cur->step >= spec->n_steps) {
        if (!spec->repeat)
            return NULL;
        cur->step = 0;
        cur->used = 0;
    }
    step = &spec->steps[cur->step];
    if (++cur->used >= step->times) {
        cur->step++;
        cur->used = 0;
    }
    return step;
}
