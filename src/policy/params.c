/* SPDX-License-Identifier: MIT */
/* params.c -- which PROV_PARAMS a request sets, and which of them a target's adapter cannot
 * honour. A parameter counts as set exactly when an adapter that declares it refuses it in
 * build() (anthropic.c, gemini.c check_untranslatable): the detection may be wider than a
 * translator, never narrower, so a target found eligible here is not refused later for the
 * same parameter. Values are read by json-c, escapes decoded ("\u0061udio" is "audio"), as
 * the upstream reads them. The table per provider kind: docs/internals/request-lifecycle.md. */
#include "policy/params.h"

#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/json_scan.h"

static const char *const param_names[PROV_PARAM_COUNT] = {
#define X(NAME, name) [PROV_PARAM_##NAME] = name,
    PROV_PARAMS(X)
#undef X
};

/* Anthropic's reading of "set": anything but null, false, 0, {} and []. */
static bool truthy(struct json_object *v)
{
    switch (v ? json_object_get_type(v) : json_type_null) {
    case json_type_null: return false;
    case json_type_boolean: return json_object_get_boolean(v);
    case json_type_int: return json_object_get_int64(v) != 0;
    case json_type_object: return json_object_object_length(v) > 0;
    case json_type_array: return json_object_array_length(v) > 0;
    default: return true;
    }
}

static bool asks_audio(struct json_object *modalities)
{
    if (!modalities || !json_object_is_type(modalities, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(modalities); i++) {
        struct json_object *m = json_object_array_get_idx(modalities, i);
        if (json_object_is_type(m, json_type_string) &&
            strcmp(json_object_get_string(m), "audio") == 0)
            return true;
    }
    return false;
}

static uint64_t choices(struct json_object *n)
{
    int64_t v;

    if (!n)
        return 1;
    if (!json_object_is_type(n, json_type_int) || (v = json_object_get_int64(n)) < 1)
        return UINT64_MAX;
    return (uint64_t)v;
}

/* Records parameter <k> with value <v> (NULL for JSON null). */
static void note(struct req_params *p, enum prov_param k, struct json_object *v)
{
    bool set;

    switch (k) {
    case PROV_PARAM_N:
        p->n = choices(v);
        return;
    case PROV_PARAM_LOGPROBS:
    case PROV_PARAM_TOP_LOGPROBS:
    case PROV_PARAM_LOGIT_BIAS:
        set = truthy(v);
        break;
    case PROV_PARAM_MODALITIES:
        set = asks_audio(v);
        break;
    default:
        set = v != NULL;
        break;
    }
    if (set)
        p->used |= 1u << k;
}

void params_of_json(struct json_object *req, struct req_params *out)
{
    *out = (struct req_params){.used = 0, .n = 1};
    for (unsigned k = 0; k < PROV_PARAM_COUNT; k++)
        note(out, (enum prov_param)k, bsc_json_get(req, param_names[k]));
}

/* json-c reads a lone number only when something follows it: wrap the value in [ ]. */
static struct json_object *parse_value(struct bsc_str v)
{
    char *text = malloc(v.len + 2);
    struct json_object *arr, *val = NULL;

    if (!text)
        return NULL;
    text[0] = '[';
    memcpy(text + 1, v.p, v.len);
    text[v.len + 1] = ']';
    arr = prov_parse_json(bsc_str_make(text, v.len + 2));
    free(text);
    if (arr && json_object_is_type(arr, json_type_array))
        val = json_object_get(json_object_array_get_idx(arr, 0));
    json_object_put(arr);
    return val;
}

void params_of_body(struct bsc_str body, struct req_params *out)
{
    struct bsc_str keys[PROV_PARAM_COUNT], vals[PROV_PARAM_COUNT];
    struct json_object *req;

    for (unsigned k = 0; k < PROV_PARAM_COUNT; k++)
        keys[k] = bsc_str_cstr(param_names[k]);
    if (bsc_json_members(body, keys, PROV_PARAM_COUNT, vals) < 0) {
        /* The api layer refuses repeated names; read the whole body rather than guess. */
        req = prov_parse_json(body);
        params_of_json(req, out);
        json_object_put(req);
        return;
    }
    *out = (struct req_params){.used = 0, .n = 1};
    for (unsigned k = 0; k < PROV_PARAM_COUNT; k++) {
        struct json_object *v;

        if (!vals[k].p)
            continue;
        v = parse_value(vals[k]);
        note(out, (enum prov_param)k, v);
        json_object_put(v);
    }
}

uint32_t params_unhonoured(const struct req_params *p, const struct prov_ops *ops)
{
    uint32_t bits = p->used & ops->unhonoured & ~PROV_P(N);

    if (ops->max_choices && p->n > ops->max_choices)
        bits |= PROV_P(N);
    return bits;
}

const char *params_first_name(uint32_t bits)
{
    for (unsigned k = 0; k < PROV_PARAM_COUNT; k++)
        if (bits & (1u << k))
            return param_names[k];
    return NULL;
}
