/* SPDX-License-Identifier: MIT */
/* vertex.c -- the adapter for Google Vertex AI (docs/providers.md "Google Vertex AI"): two
 * publishers behind one OAuth bearer token.
 *   {base_url} = https://{region}-aiplatform.googleapis.com/v1 (global: aiplatform.googleapis.com)
 *   {m} = {base_url}/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}
 *   google     POST {m}:generateContent, {m}:streamGenerateContent?alt=sse   (Gemini's body)
 *   anthropic  POST {m}:rawPredict, {m}:streamRawPredict   (Anthropic Messages, no "model",
 *              "anthropic_version": "vertex-2023-10-16")
 * The publisher is the target's `publisher`, else anthropic for claude-* models, else google.
 * Bodies, answers and streams are the Gemini and Anthropic adapters' own (every hook
 * delegates); this file adds the URL, the bearer token (read from core/token_table.h, kept
 * fresh by gauth/; without a valid one the request goes unauthenticated and Vertex's 401 is
 * an auth failure) and error classification by shape (google.rpc.Status or Anthropic's).
 * Claude speaks Anthropic Messages (prov_ops.dialect): a client that spoke it too has its own
 * bytes forwarded with only "model" swapped for "anthropic_version", and Vertex's answer and
 * events relayed back as they came (the Anthropic adapter's native mode).
 * No embeddings (Vertex's :predict shape is not Gemini's). Probes are one-token completions.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <string.h>

#include "core/json_get.h"
#include "core/json_scan.h"
#include "core/token_table.h"
#include "providers/anthropic.h"
#include "providers/provider.h"

extern const struct prov_ops prov_anthropic;
extern const struct prov_ops prov_gemini;

#define VX_VERSION     "vertex-2023-10-16"
#define VX_INNER_STATE 4096
#define VX_BODY_MAX    (64u * 1024 * 1024)

enum vx_pub { VX_PUB_GOOGLE = 0, VX_PUB_ANTHROPIC, VX_PUB_COUNT };

static enum vx_pub publisher(const struct cfg_target *t)
{
    if (t && t->publisher)
        return strcmp(t->publisher, "anthropic") == 0 ? VX_PUB_ANTHROPIC : VX_PUB_GOOGLE;
    return t && t->model && strncmp(t->model, "claude", 6) == 0 ? VX_PUB_ANTHROPIC : VX_PUB_GOOGLE;
}

static const struct prov_ops *inner_ops(const struct prov_call *c)
{
    return publisher(c->target) == VX_PUB_ANTHROPIC ? &prov_anthropic : &prov_gemini;
}

/* Claude speaks Anthropic Messages, Gemini Gemini's generateContent. */
static enum cfg_provider_kind vx_dialect(const struct cfg_target *t)
{
    return publisher(t) == VX_PUB_ANTHROPIC ? CFG_PROV_ANTHROPIC : CFG_PROV_GEMINI;
}

/* <c> with the client's own Messages bytes kept only when they go upstream as they are
 * (Claude, a generation); otherwise translated from the canonical request. */
static struct prov_call inner_call(const struct prov_call *c)
{
    struct prov_call c2 = *c;

    if (publisher(c->target) != VX_PUB_ANTHROPIC || !prov__anth_native(c))
        c2.native = NULL;
    return c2;
}

/* Appends <s> percent-encoded: RFC 3986 unreserved bytes as they are, the rest %XX. */
static enum bsc_err append_escaped(struct bsc_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    enum bsc_err err = BSC_OK;

    for (const unsigned char *p = (const unsigned char *)s; *p && !err; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
                     *p == '@';
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

        err = plain ? bsc_buf_append_char(b, (char)*p) : bsc_buf_append(b, esc, 3);
    }
    return err;
}

static enum bsc_err vx_url(const struct prov_call *c, struct bsc_buf *url)
{
    const struct cfg_provider *p = c->provider;
    enum vx_pub pub = publisher(c->target);
    bool stream = c->op == PROV_OP_CHAT && c->stream;
    const char *verb = pub == VX_PUB_ANTHROPIC
                           ? (stream ? ":streamRawPredict" : ":rawPredict")
                           : (stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    enum bsc_err err = bsc_buf_appendf(url, "%s/projects/", p->base_url);

    if (!err)
        err = append_escaped(url, p->project ? p->project : "");
    if (!err)
        err = bsc_buf_append_cstr(url, "/locations/");
    if (!err)
        err = append_escaped(url, p->region ? p->region : "");
    if (!err)
        err = bsc_buf_appendf(url, "/publishers/%s/models/",
                              pub == VX_PUB_ANTHROPIC ? "anthropic" : "google");
    if (!err)
        err = append_escaped(url, c->target ? c->target->model : "");
    return err ? err : bsc_buf_append_cstr(url, verb);
}

/* The Anthropic body for Vertex: without "model", with "anthropic_version". */
static enum bsc_err anthropic_body(struct bsc_buf *body)
{
    struct json_object *o = prov_parse_json(bsc_buf_str(body));
    enum bsc_err err = BSC_ENOMEM;

    if (o && json_object_is_type(o, json_type_object)) {
        json_object_object_del(o, "model");
        json_object_object_add(o, "anthropic_version", json_object_new_string(VX_VERSION));
        bsc_buf_reset(body);
        err = prov_append_json(body, o);
    }
    json_object_put(o);
    return err;
}

/* The client's own Messages bytes for Vertex: its "model" member (the model is in the URL)
 * replaced in place by "anthropic_version", every other byte as the client wrote it. */
static enum bsc_err native_body(const struct prov_native *n, struct bsc_buf *body, char *why,
                                size_t why_len)
{
    struct bsc_str entry, version;
    size_t pre;
    enum bsc_err err;

    if (bsc_json_member(n->body, BSC_STR("anthropic_version"), &version) != 0) {
        snprintf(why, why_len, "anthropic_version: the gateway sets it for Vertex");
        return BSC_EINVAL;
    }
    if (bsc_json_member_entry(n->body, BSC_STR("model"), &entry) != 1) {
        snprintf(why, why_len, "model: not found once in the request"); /* checked before */
        return BSC_EINVAL;
    }
    pre = (size_t)(entry.p - n->body.p);
    bsc_buf_reset(body);
    err = bsc_buf_append(body, n->body.p, pre);
    if (!err)
        err = bsc_buf_append_cstr(body, "\"anthropic_version\":\"" VX_VERSION "\"");
    if (!err)
        err = bsc_buf_append(body, entry.p + entry.len, n->body.len - pre - entry.len);
    return err;
}

static enum bsc_err vx_build(const struct prov_call *c, struct prov_http *out, char *why,
                             size_t why_len)
{
    struct prov_call c2 = inner_call(c);
    const char *cred = c->provider->vertex.token_file ? c->provider->vertex.token_file
                                                      : c->provider->vertex.credentials_file;
    char token[BSC_TOKEN_MAX];
    enum bsc_err err;

    if (c->op == PROV_OP_EMBEDDINGS || c->op == PROV_OP_RESPONSES) {
        snprintf(why, why_len, "the vertex kind serves chat only");
        return BSC_EINVAL;
    }
    if (c->native && c->native->count_tokens) {
        snprintf(why, why_len, "count_tokens: only an anthropic target counts tokens");
        return BSC_EINVAL;
    }
    c2.key = NULL; /* the bearer token replaces x-api-key / x-goog-api-key */
    if (c2.op == PROV_OP_PROBE_MODELS)
        c2.op = PROV_OP_PROBE_COMPLETION; /* Vertex lists no publisher models per project */
    err = inner_ops(c)->build(&c2, out, why, why_len);
    if (err)
        return err;
    out->method = "POST";
    bsc_buf_reset(&out->url);
    err = vx_url(c, &out->url);
    if (!err && c2.native)
        err = native_body(c2.native, &out->body, why, why_len);
    else if (!err && publisher(c->target) == VX_PUB_ANTHROPIC)
        err = anthropic_body(&out->body);
    if (!err && cred && bsc_token_get(cred, c->created, token, sizeof(token)))
        err = prov_header(&out->headers, "Authorization", "Bearer %s", token);
    return err;
}

/* Vertex answers a Claude request's errors in Anthropic's shape ({"type":"error",...}) and
 * everything else (auth, quota, the Gemini models) as a google.rpc.Status. */
static void vx_classify(const struct prov_err_input *in, struct fail_info *out)
{
    bool anthropic = in->body.len && bsc_str_find(in->body, BSC_STR("\"type\":\"error\"")) != NULL;

    (anthropic ? &prov_anthropic : &prov_gemini)->classify(in, out);
}

static enum bsc_err vx_map_response(const struct prov_call *c, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    struct prov_call c2 = inner_call(c);

    return inner_ops(c)->map_response(&c2, body, out, usage, fail);
}

struct vx_stream {
    union {
        max_align_t align;
        unsigned char bytes[VX_INNER_STATE];
    } inner;
    const struct prov_ops *ops; /* the publisher's adapter */
};

static void vx_stream_init(void *st, const struct prov_call *call)
{
    struct vx_stream *s = st;
    struct prov_call c2 = inner_call(call);

    s->ops = inner_ops(call);
    BSC_BUG_ON(s->ops->stream_size > sizeof(s->inner));
    s->ops->stream_init(&s->inner, &c2);
}

static enum prov_stream_status vx_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail)
{
    struct vx_stream *s = st;

    return s->ops->stream_event(&s->inner, event, data, out, fail);
}

static enum prov_stream_status vx_stream_line(void *st, struct bsc_str line, struct bsc_buf *out,
                                              struct fail_info *fail)
{
    struct vx_stream *s = st;

    return s->ops->stream_line ? s->ops->stream_line(&s->inner, line, out, fail) : PROV_STREAM_MORE;
}

static enum prov_stream_status vx_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    struct vx_stream *s = st;

    return s->ops->stream_end(&s->inner, out, fail);
}

static void vx_stream_usage(void *st, struct prov_usage *usage)
{
    struct vx_stream *s = st;

    s->ops->stream_usage(&s->inner, usage);
}

static void vx_stream_cleanup(void *st)
{
    struct vx_stream *s = st;

    s->ops->stream_cleanup(&s->inner);
}

const struct prov_ops prov_vertex = {
    .name = "vertex",
    /* The union of what either publisher's adapter refuses. */
    .unhonoured = PROV_P(LOGPROBS) | PROV_P(TOP_LOGPROBS) | PROV_P(LOGIT_BIAS) | PROV_P(AUDIO) |
                  PROV_P(MODALITIES) | PROV_P(FUNCTIONS) | PROV_P(FUNCTION_CALL) |
                  PROV_P(WEB_SEARCH_OPTIONS),
    .max_choices = 1,
    .dialect = vx_dialect,
    .build = vx_build,
    .classify = vx_classify,
    .map_response = vx_map_response,
    .stream_size = sizeof(struct vx_stream),
    .stream_init = vx_stream_init,
    .stream_event = vx_stream_event,
    .stream_line = vx_stream_line,
    .stream_end = vx_stream_end,
    .stream_usage = vx_stream_usage,
    .stream_cleanup = vx_stream_cleanup,
};
