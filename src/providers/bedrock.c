/* SPDX-License-Identifier: MIT */
/* bedrock.c -- the adapter for AWS Bedrock Runtime's Converse API (docs/providers.md "AWS
 * Bedrock"): one request shape for every model Bedrock serves, signed with SigV4.
 *   chat            POST {base_url}/model/{model}/converse          application/json
 *   chat, streamed  POST {base_url}/model/{model}/converse-stream   event-stream answer
 *   probes          a one-token Converse (the runtime has no model list)
 * {model} is the target's model id or inference profile id (percent-encoded: "...-v1:0" goes
 * as "...-v1%3A0"). The request is built by the Anthropic adapter first and reshaped into
 * Converse (bedrock_body.c); the answer is reshaped back and translated by it, so both
 * client dialects, tools, images and the response_format emulation behave as on Anthropic.
 * Signed headers: host, content-type, x-amz-date (the request's own time, prov_call.created),
 * x-amz-security-token with temporary credentials. No embeddings.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <string.h>

#include "core/json_get.h"
#include "core/sigv4.h"
#include "providers/bedrock.h"

extern const struct prov_ops prov_anthropic;

#define BR_BODY_MAX    (64u * 1024 * 1024)
#define BR_EVENTSTREAM "application/vnd.amazon.eventstream"

/* ---- URL -------------------------------------------------------------------------------- */

/* Appends <s> percent-encoded: RFC 3986 unreserved bytes as they are, the rest %XX. */
static enum bsc_err append_escaped(struct bsc_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    enum bsc_err err = BSC_OK;

    for (const unsigned char *p = (const unsigned char *)s; *p && !err; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

        err = plain ? bsc_buf_append_char(b, (char)*p) : bsc_buf_append(b, esc, 3);
    }
    return err;
}

static enum bsc_err br_url(const struct prov_call *c, struct bsc_buf *url)
{
    bool stream = c->op == PROV_OP_CHAT && c->stream;
    enum bsc_err err = bsc_buf_append_cstr(url, c->provider->base_url);

    if (!err)
        err = bsc_buf_append_cstr(url, "/model/");
    if (!err)
        err = append_escaped(url, c->target ? c->target->model : "");
    if (!err)
        err = bsc_buf_append_cstr(url, stream ? "/converse-stream" : "/converse");
    return err;
}

/* The host[:port] and the path of <url> ("scheme://host[:port]/path"). */
static void split_url(struct bsc_str url, struct bsc_str *host, struct bsc_str *path)
{
    const char *s = bsc_str_find(url, BSC_STR("://"));
    const char *h = s ? s + 3 : url.p, *end = url.p + url.len, *slash;

    slash = memchr(h, '/', (size_t)(end - h));
    *host = bsc_str_make(h, (size_t)((slash ? slash : end) - h));
    *path = slash ? bsc_str_make(slash, (size_t)(end - slash)) : BSC_STR("/");
}

/* ---- body ------------------------------------------------------------------------------- */

/* The Converse body of <c>: the Anthropic adapter's Messages body, reshaped. */
static enum bsc_err converse_body(const struct prov_call *c, struct bsc_buf *body, char *why,
                                  size_t why_len)
{
    struct prov_call c2 = *c;
    struct prov_http tmp = {0};
    struct json_object *anth = NULL, *conv = NULL;
    enum bsc_err err;

    c2.native = NULL; /* translated from the canonical request, whatever the client spoke */
    c2.stream = false;
    c2.key = NULL;
    if (c->op != PROV_OP_CHAT)
        c2.op = PROV_OP_PROBE_COMPLETION;
    bsc_buf_init(&tmp.url, 4096);
    bsc_buf_init(&tmp.headers, 4096);
    bsc_buf_init(&tmp.body, BR_BODY_MAX);
    err = prov_anthropic.build(&c2, &tmp, why, why_len);
    if (!err) {
        anth = prov_parse_json(bsc_buf_str(&tmp.body));
        conv = anth ? prov__br_converse_request(anth, why, why_len) : NULL;
        err = !anth ? BSC_ENOMEM : !conv ? BSC_EINVAL : prov_append_json(body, conv);
    }
    json_object_put(conv);
    json_object_put(anth);
    bsc_buf_cleanup(&tmp.url);
    bsc_buf_cleanup(&tmp.headers);
    bsc_buf_cleanup(&tmp.body);
    return err;
}

/* ---- signing ---------------------------------------------------------------------------- */

static enum bsc_err sign(const struct prov_call *c, struct prov_http *out, const char *accept)
{
    const struct cfg_aws *aws = &c->provider->aws;
    struct sigv4_header h[4];
    struct sigv4_req r = {.method = BSC_STR("POST"), .headers = h};
    struct sigv4_scope sc;
    struct bsc_buf authz;
    uint8_t d[BSC_SHA256_LEN];
    char date[SIGV4_DATE_LEN];
    struct bsc_str host;
    enum bsc_err err;

    sigv4_amz_date(c->created, date);
    split_url(bsc_buf_str(&out->url), &host, &r.path);
    h[r.n_headers++] = (struct sigv4_header){BSC_STR("host"), host};
    h[r.n_headers++] = (struct sigv4_header){BSC_STR("content-type"), BSC_STR("application/json")};
    h[r.n_headers++] = (struct sigv4_header){BSC_STR("x-amz-date"), bsc_str_cstr(date)};
    if (aws->session_token)
        h[r.n_headers++] = (struct sigv4_header){BSC_STR("x-amz-security-token"),
                                                 bsc_str_cstr(aws->session_token)};
    bsc_sha256(out->body.p, out->body.len, d);
    bsc_sha256_hex(d, r.payload_hash);
    err = prov_header(&out->headers, "content-type", "application/json");
    if (!err)
        err = prov_header(&out->headers, "accept", "%s", accept);
    if (!err)
        err = prov_header(&out->headers, "x-amz-date", "%s", date);
    if (!err && aws->session_token)
        err = prov_header(&out->headers, "x-amz-security-token", "%s", aws->session_token);
    if (err || !aws->access_key_id || !aws->secret_access_key)
        return err; /* no credentials: sent unsigned, refused as auth by Bedrock */
    sc = (struct sigv4_scope){aws->access_key_id, aws->secret_access_key, date,
                              c->provider->region ? c->provider->region : "us-east-1", "bedrock"};
    bsc_buf_init(&authz, 2048);
    err = sigv4_authorization(&r, &sc, &authz, NULL);
    if (!err)
        err = prov_header(&out->headers, "authorization", "%s", authz.p);
    bsc_buf_cleanup(&authz);
    return err;
}

static enum bsc_err br_build(const struct prov_call *c, struct prov_http *out, char *why,
                             size_t why_len)
{
    bool stream = c->op == PROV_OP_CHAT && c->stream;
    enum bsc_err err;

    if (c->op == PROV_OP_EMBEDDINGS || c->op == PROV_OP_RESPONSES) {
        snprintf(why, why_len, "Bedrock Converse has no %s API",
                 c->op == PROV_OP_EMBEDDINGS ? "embeddings" : "Responses");
        return BSC_EINVAL;
    }
    out->method = "POST";
    err = br_url(c, &out->url);
    if (!err)
        err = converse_body(c, &out->body, why, why_len);
    if (!err)
        err = sign(c, out, stream ? BR_EVENTSTREAM : "application/json");
    if (!err)
        err = prov_extra_headers(&out->headers, c->provider);
    return err;
}

/* ---- the answer ------------------------------------------------------------------------- */

static enum bsc_err br_map_response(const struct prov_call *c, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    struct json_object *conv = prov_parse_json(body), *anth;
    struct bsc_buf tmp;
    struct prov_call c2 = *c;
    char id[160];
    enum bsc_err err;

    snprintf(id, sizeof(id), "msg_bdrk_%s", c->request_id ? c->request_id : "0");
    anth = prov__br_anthropic_answer(conv, id, c->target ? c->target->model : "");
    json_object_put(conv);
    if (!anth) {
        fail_info_init(fail);
        fail->kind = FAIL_SERVER_ERROR;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("the Bedrock answer has no output.message.content"));
        return BSC_EPARSE;
    }
    bsc_buf_init(&tmp, body.len * 2 + 4096);
    err = prov_append_json(&tmp, anth);
    json_object_put(anth);
    c2.native = NULL;
    if (!err)
        err = prov_anthropic.map_response(&c2, bsc_buf_str(&tmp), out, usage, fail);
    bsc_buf_cleanup(&tmp);
    return err;
}

const struct prov_ops prov_bedrock = {
    .name = "bedrock",
    .unhonoured = PROV_P(LOGPROBS) | PROV_P(TOP_LOGPROBS) | PROV_P(LOGIT_BIAS) | PROV_P(AUDIO) |
                  PROV_P(MODALITIES) | PROV_P(FUNCTIONS) | PROV_P(FUNCTION_CALL) |
                  PROV_P(WEB_SEARCH_OPTIONS),
    .max_choices = 1,
    .build = br_build,
    .classify = prov__br_classify,
    .ratelimit = NULL,
    .map_response = br_map_response,
    .stream_size = sizeof(struct br_stream),
    .stream_type = BR_EVENTSTREAM,
    .stream_init = prov__br_stream_init,
    .stream_event = NULL,
    .stream_bytes = prov__br_stream_bytes,
    .stream_line = NULL,
    .stream_end = prov__br_stream_end,
    .stream_usage = prov__br_stream_usage,
    .stream_cleanup = prov__br_stream_cleanup,
};
