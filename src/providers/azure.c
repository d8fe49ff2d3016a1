/* SPDX-License-Identifier: MIT */
/* azure.c -- the adapter for Azure OpenAI (docs/providers.md §5.2): the OpenAI wire behind
 * deployment URLs with an api-version query and an `api-key` header. Every hook delegates to
 * prov_openai; this file adds the URL and the key header, Azure's error vocabulary
 * (content filter 400s, DeploymentNotFound, a 429 whose wait is a day means quota), and
 * strips the stream chunks Azure adds to OpenAI's (prompt filter results with empty
 * `choices`, asynchronous filter annotations without `delta`). finish_reason
 * "content_filter" is OpenAI's own value and passes through. Not the /openai/v1 surface.
 * See docs/internals/provider-dashscope-azure.md.
 *
 * URLs ({base_url} is https://{resource}.openai.azure.com/openai; {d} is target.deployment,
 * else target.model; {v} is the provider's api_version, else AZ_API_VERSION_DEFAULT):
 *   chat, completion probe  POST {base_url}/deployments/{d}/chat/completions?api-version={v}
 *   embeddings              POST {base_url}/deployments/{d}/embeddings?api-version={v}
 *   models probe            GET  {base_url}/models?api-version={v} (Models - List)
 *
 * Request fields: the canonical request goes upstream as it is (the deployment in the path
 * picks the model; the body's "model" is ignored by Azure and left in), stream_options
 * .include_usage forced on for streams as for OpenAI. Fields a deployment's model or the
 * api-version lacks are refused by Azure with a 400, classified invalid_request. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "providers/provider.h"
#include "core/json_get.h"

extern const struct prov_ops prov_openai; /* the wire is OpenAI's: every hook delegates */

/* The latest GA data-plane inference version (Microsoft's API version table). */
#define AZ_API_VERSION_DEFAULT "2024-10-21"
/* A 429 asking for at least this wait is a daily/monthly quota, not a rate window. */
#define AZ_QUOTA_HINT_MS (60LL * 60 * 1000)
#define AZ_ERR_BODY_MAX 65536
/* Room for prov_openai's per-stream state (opaque here; checked at init and by the tests). */
#define AZ_INNER_STATE 256

/* ---- build ---------------------------------------------------------------------------------- */

static const char *api_version(const struct cfg_provider *p)
{
    return p->api_version && p->api_version[0] ? p->api_version : AZ_API_VERSION_DEFAULT;
}

static const char *deployment(const struct cfg_target *t)
{
    if (!t)
        return NULL;
    return t->deployment && t->deployment[0] ? t->deployment : t->model;
}

/* Appends <s> percent-encoded: RFC 3986 unreserved bytes as they are, the rest %XX. */
static enum bsc_err append_escaped(struct bsc_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    enum bsc_err err = BSC_OK;

    for (const unsigned char *p = (const unsigned char *)s; *p && !err; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
                     *p == '~';
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

        err = plain ? bsc_buf_append_char(b, (char)*p) : bsc_buf_append(b, esc, 3);
    }
    return err;
}

/* The full URL of <c> (see the table at the top). BSC_EINVAL without a deployment. */
static enum bsc_err az_url(const struct prov_call *c, struct bsc_buf *url)
{
    const char *d = deployment(c->target);
    enum bsc_err err = bsc_buf_append_cstr(url, c->provider->base_url);

    if (!err && c->op == PROV_OP_PROBE_MODELS) {
        err = bsc_buf_append_cstr(url, "/models");
    } else if (!err) {
        if (!d || !d[0])
            return BSC_EINVAL;
        err = bsc_buf_append_cstr(url, "/deployments/");
        if (!err)
            err = append_escaped(url, d);
        if (!err)
            err = bsc_buf_append_cstr(url, c->op == PROV_OP_EMBEDDINGS ? "/embeddings"
                                                                       : "/chat/completions");
    }
    if (!err)
        err = bsc_buf_append_cstr(url, "?api-version=");
    if (!err)
        err = append_escaped(url, api_version(c->provider));
    return err;
}

static enum bsc_err az_build(const struct prov_call *c, struct prov_http *out, char *why,
                             size_t why_len)
{
    struct prov_call c2 = *c;
    enum bsc_err err;

    c2.key = NULL; /* no Authorization header: Azure keys go in api-key */
    err = prov_openai.build(&c2, out, why, why_len);
    if (err)
        return err;
    bsc_buf_reset(&out->url);
    err = az_url(c, &out->url);
    if (err == BSC_EINVAL && why_len)
        snprintf(why, why_len, "the Azure target has no deployment");
    if (!err && c->key)
        err = prov_header(&out->headers, "api-key", "%s", c->key);
    return err;
}

/* ---- errors --------------------------------------------------------------------------------- */

static const struct prov_err_rule az_rules[] = {
    {0, "content_filter", NULL, FAIL_CONTENT_POLICY},
    {0, "ResponsibleAIPolicyViolation", NULL, FAIL_CONTENT_POLICY},
    {400, NULL, "content management policy", FAIL_CONTENT_POLICY},
    {0, "DeploymentNotFound", NULL, FAIL_NOT_FOUND},
    /* Our configured api-version is wrong: a misconfigured target, not the client's fault. */
    {400, NULL, "api version not supported", FAIL_NOT_FOUND},
};

static const struct prov_openai_profile az_profile = {"azure", "openai.azure.com", az_rules,
                                                      BSC_ARRAY_LEN(az_rules)};

/* error.innererror.code is ResponsibleAIPolicyViolation, whatever the outer code says. */
static bool inner_policy_violation(struct bsc_str body)
{
    struct json_object *root, *code;
    bool hit;

    if (body.len > AZ_ERR_BODY_MAX ||
        !memmem(body.p, body.len, "ResponsibleAIPolicyViolation", 28))
        return false;
    root = prov_parse_json(body);
    code = bsc_json_get(bsc_json_get(bsc_json_get(root, "error"), "innererror"), "code");
    hit = code && json_object_is_type(code, json_type_string) &&
          strcmp(json_object_get_string(code), "ResponsibleAIPolicyViolation") == 0;
    json_object_put(root);
    return hit;
}

/* Azure spells retry-after-ms x-ms-retry-after-ms too: the OpenAI classifier asks for the
 * standard name and gets Azure's when only that one came. <ctx> is the caller's input. */
static struct bsc_str az_header(const void *ctx, const char *name)
{
    const struct prov_err_input *in = ctx;
    struct bsc_str v = prov_err_header(in, name);

    if (v.len == 0 && strcasecmp(name, "retry-after-ms") == 0)
        v = prov_err_header(in, "x-ms-retry-after-ms");
    return v;
}

/* The classify hook: the OpenAI classifier with Azure's rules and header names, then the
 * two checks rules cannot express (an inner policy code; a rate limit whose wait is hours). */
static void az_classify(const struct prov_err_input *in, struct fail_info *out)
{
    struct prov_err_input az = *in;

    az.header = az_header;
    az.headers = NULL; /* az_header is the one to ask, over <in> */
    az.header_ctx = in;
    prov_openai_classify_profile(&az, &az_profile, out);
    if (out->kind != FAIL_NONE && out->kind != FAIL_CONTENT_POLICY &&
        inner_policy_violation(in->body))
        out->kind = FAIL_CONTENT_POLICY;
    if (out->kind == FAIL_RATE_LIMITED && out->retry_after_ms >= AZ_QUOTA_HINT_MS)
        out->kind = FAIL_QUOTA_EXHAUSTED; /* "retry after 86400 seconds": fail over */
}

/* ---- streams -------------------------------------------------------------------------------- */

enum az_chunk {
    AZ_CHUNK_PASS = 0, /* an OpenAI chunk: relay it as it is */
    AZ_CHUNK_DROP,     /* Azure-only (prompt filter results, filter annotations) */
    AZ_CHUNK_FIXED,    /* rewritten into <fixed>: choices without delta removed or given one */
    AZ_CHUNK_COUNT
};

/* Keeps the choices of <root> that an OpenAI client can read: those with a delta, and
 * those without one but with a finish_reason (given an empty delta). Returns how many were
 * kept; *<changed> says whether anything was removed or repaired. */
static size_t keep_readable_choices(struct json_object *root, struct json_object *choices,
                                    bool *changed)
{
    struct json_object *kept = json_object_new_array();
    size_t n = json_object_array_length(choices), k;

    *changed = false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *ch = json_object_array_get_idx(choices, i);
        struct json_object *fr = bsc_json_get(ch, "finish_reason");

        if (bsc_json_get(ch, "delta")) {
            json_object_array_add(kept, json_object_get(ch));
            continue;
        }
        *changed = true;
        if (fr && json_object_is_type(fr, json_type_string)) {
            json_object_object_add(ch, "delta", json_object_new_object());
            json_object_array_add(kept, json_object_get(ch));
        }
    }
    k = json_object_array_length(kept);
    json_object_object_add(root, "choices", kept);
    return k;
}

/* Decides what to do with one stream payload before the OpenAI relay sees it. Normal
 * chunks (they carry "delta") are not parsed. */
static enum az_chunk az_inspect(struct bsc_str data, struct bsc_buf *fixed)
{
    struct json_object *root, *choices;
    enum az_chunk verdict = AZ_CHUNK_PASS;
    bool changed;

    if (memmem(data.p, data.len, "\"delta\"", 7) || !memmem(data.p, data.len, "\"choices\"", 9))
        return AZ_CHUNK_PASS;
    root = prov_parse_json(data);
    choices = bsc_json_get(root, "choices");
    if (!choices || !json_object_is_type(choices, json_type_array) || bsc_json_get(root, "error")) {
        json_object_put(root);
        return AZ_CHUNK_PASS; /* not Azure's extra: the OpenAI relay decides */
    }
    if (json_object_array_length(choices) == 0) {
        struct json_object *usage = bsc_json_get(root, "usage");

        verdict = usage && json_object_is_type(usage, json_type_object) ? AZ_CHUNK_PASS
                                                                          : AZ_CHUNK_DROP;
    } else if (keep_readable_choices(root, choices, &changed) == 0) {
        verdict = AZ_CHUNK_DROP;
    } else if (changed) {
        verdict = prov_append_json(fixed, root) ? AZ_CHUNK_DROP : AZ_CHUNK_FIXED;
    }
    json_object_put(root);
    return verdict;
}

struct az_stream {
    union {
        max_align_t align;
        unsigned char bytes[AZ_INNER_STATE];
    } inner; /* prov_openai's stream state */
    struct bsc_buf fixed; /* owned: a repaired chunk, valid for one event */
};

static void az_stream_init(void *st, const struct prov_call *call)
{
    struct az_stream *s = st;

    BSC_BUG_ON(prov_openai.stream_size > sizeof(s->inner));
    prov_openai.stream_init(&s->inner, call);
    bsc_buf_init(&s->fixed, AZ_ERR_BODY_MAX * 16);
}

static enum prov_stream_status az_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail)
{
    struct az_stream *s = st;

    bsc_buf_reset(&s->fixed);
    switch (az_inspect(data, &s->fixed)) {
    case AZ_CHUNK_DROP:
        return PROV_STREAM_MORE;
    case AZ_CHUNK_FIXED:
        data = bsc_buf_str(&s->fixed);
        break;
    default:
        break;
    }
    return prov_openai.stream_event(&s->inner, event, data, out, fail);
}

static enum prov_stream_status az_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    return prov_openai.stream_end(&((struct az_stream *)st)->inner, out, fail);
}

static void az_stream_usage(void *st, struct prov_usage *usage)
{
    prov_openai.stream_usage(&((struct az_stream *)st)->inner, usage);
}

static void az_stream_cleanup(void *st)
{
    struct az_stream *s = st;

    prov_openai.stream_cleanup(&s->inner);
    bsc_buf_cleanup(&s->fixed);
}

static enum bsc_err az_map_response(const struct prov_call *c, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    /* OpenAI-shaped; prompt_filter_results and content_filter_results are extra fields an
     * OpenAI client ignores, finish_reason "content_filter" is OpenAI's own. */
    return prov_openai.map_response(c, body, out, usage, fail);
}

const struct prov_ops prov_azure = {
    .name = "azure",
    .build = az_build,
    .classify = az_classify,
    .ratelimit = rl_read_openai,
    .map_response = az_map_response,
    .stream_size = sizeof(struct az_stream),
    .stream_init = az_stream_init,
    .stream_event = az_stream_event,
    .stream_line = NULL,
    .stream_end = az_stream_end,
    .stream_usage = az_stream_usage,
    .stream_cleanup = az_stream_cleanup,
};
