/* SPDX-License-Identifier: MIT */
/* dialect_vertex.c -- bascule-sim speaking Google Vertex AI (docs/providers.md "Google Vertex
 * AI"): both publishers' paths under /v1/projects/{p}/locations/{r}/publishers/{pub}/models/
 * {m}:{verb} -- google (generateContent, streamGenerateContent?alt=sse: the Gemini dialect's
 * bodies and streams) and anthropic (rawPredict, streamRawPredict: the Anthropic dialect's,
 * with "anthropic_version": "vertex-2023-10-16" required and "model" refused in the body) --
 * and an OAuth token endpoint, POST /oauth2/token (the JWT bearer grant, RFC 7523): the
 * assertion's RS256 signature is verified against the test service account's public key
 * (tests/lib/vertex_sa.mjs holds its private key), its aud, scope and expiry checked, and the
 * access token issued is self-verifying (HMAC of its expiry), so the model endpoints refuse a
 * forged or expired token with Google's 401 UNAUTHENTICATED. Calls to the token endpoint are
 * counted and scripted under the model name "vertex-oauth", whose spec's `tokens` sets the
 * tokens' lifetime (300 s each: the default 12 is an hour). See docs/internals/sim.md. */
#include "dialect.h"
#include "core/json_get.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "sjson.h"

#include "core/compat.h"
#include "core/sha256.h"
#include "core/sigv4.h"

extern const struct sim_dialect sim_dialect_gemini;
extern const struct sim_dialect sim_dialect_anthropic;

#define VX_PREFIX               "/v1/projects/"
#define VX_TOKEN_PATH           "/oauth2/token"
#define VX_TOKEN_MODEL          "vertex-oauth"
#define VX_VERSION              "vertex-2023-10-16"
#define VX_SCOPE                "https://www.googleapis.com/auth/cloud-platform"
#define VX_TOKEN_LIFE_PER_TOKEN 300 /* expires_in = 300 s x the spec's tokens (12: an hour) */
#define VX_STATIC_TOKEN         "ya29.sim-static-token" /* always valid: for token_file tests */
#define VX_HMAC_KEY             "bascule-sim vertex token key"

/* The public half of the test service account (its private key: tests/lib/vertex_sa.mjs). */
static const char vx_public_key[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAlastolrXX3LsWBaD0pQf\n"
    "QlGhvXu3kTZyfHFPcP6ZUuPKLZNjrUcEluuZWfdOGaq485OcLGOCLdQgYwxD4G7e\n"
    "LEHoReZNn2NNvOZdtKHSdoYESXQZ/Wfyh4O9HnSE7Pmin7CbC8CL7lrMEHLLPn7P\n"
    "70F/Ljmx5ii3uSs90gcLjCijhEcyPzFtpssCMnu03gKBGdD5k9ccuSqvf72gq0Y0\n"
    "XaqKmJBFmzvr9f/7iLSUgHXjpBct8QlV6TeaOMAPTMy+31rYV+JaQOf9XA+NOtm2\n"
    "xFN8x/KPMsg/4lL0eb6qBoe69OM/f7AgVMvseuaahcytgwr8uMShDvDTDollPO6G\n"
    "RQIDAQAB\n"
    "-----END PUBLIC KEY-----\n";

/* ---- paths ------------------------------------------------------------------------------ */

struct vx_path {
    struct bsc_str publisher, model, verb;
};

/* Splits ".../publishers/{pub}/models/{model}:{verb}" under VX_PREFIX. */
static bool split(struct bsc_str path, struct vx_path *out)
{
    const char *pub = bsc_str_find(path, BSC_STR("/publishers/"));
    const char *models, *colon, *end = path.p + path.len;

    if (!bsc_str_starts(path, BSC_STR(VX_PREFIX)) || !pub)
        return false;
    pub += 12;
    models = bsc_str_find(bsc_str_make(pub, (size_t)(end - pub)), BSC_STR("/models/"));
    if (!models)
        return false;
    out->publisher = bsc_str_make(pub, (size_t)(models - pub));
    models += 8;
    colon = memchr(models, ':', (size_t)(end - models));
    if (!colon)
        return false;
    out->model = bsc_str_make(models, (size_t)(colon - models));
    out->verb = bsc_str_make(colon + 1, (size_t)(end - colon - 1));
    return out->model.len > 0 && !memchr(out->model.p, '/', out->model.len);
}

static bool is_anthropic(struct bsc_str publisher)
{
    return bsc_str_eq(publisher, BSC_STR("anthropic"));
}

static enum sim_ep vx_route(struct bsc_str method, struct bsc_str path)
{
    struct vx_path vp;

    if (!bsc_str_eq(method, BSC_STR("POST")))
        return SIM_EP_NONE;
    if (bsc_str_eq(path, BSC_STR(VX_TOKEN_PATH)))
        return SIM_EP_CHAT;
    if (!split(path, &vp))
        return SIM_EP_NONE;
    if (is_anthropic(vp.publisher))
        return bsc_str_eq(vp.verb, BSC_STR("rawPredict")) ||
                       bsc_str_eq(vp.verb, BSC_STR("streamRawPredict"))
                   ? SIM_EP_CHAT
                   : SIM_EP_NONE;
    return bsc_str_eq(vp.verb, BSC_STR("generateContent")) ||
                   bsc_str_eq(vp.verb, BSC_STR("streamGenerateContent"))
               ? SIM_EP_CHAT
               : SIM_EP_NONE;
}

/* ---- access tokens ----------------------------------------------------------------------- */

/* "ya29.sim.<exp>.<first 16 hex digits of HMAC(key, exp)>" */
static void make_token(int64_t exp, char *out, size_t len)
{
    char e[32];
    uint8_t d[BSC_SHA256_LEN];
    char hex[BSC_SHA256_HEX_LEN + 1];

    snprintf(e, sizeof(e), "%lld", (long long)exp);
    sigv4_hmac(VX_HMAC_KEY, sizeof(VX_HMAC_KEY) - 1, e, strlen(e), d);
    bsc_sha256_hex(d, hex);
    snprintf(out, len, "ya29.sim.%s.%.16s", e, hex);
}

static bool token_valid(struct bsc_str tok)
{
    char want[128];
    long long exp;

    if (bsc_str_eq(tok, BSC_STR(VX_STATIC_TOKEN)))
        return true;
    if (!bsc_str_starts(tok, BSC_STR("ya29.sim.")) || tok.len > 100 ||
        sscanf(tok.p + 9, "%lld", &exp) != 1 || exp <= (long long)time(NULL))
        return false;
    make_token(exp, want, sizeof(want));
    return bsc_str_eq(tok, bsc_str_cstr(want));
}

/* ---- the JWT grant ------------------------------------------------------------------------- */

static int b64url_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Decodes base64url (no padding) into <out>; false on a bad character. */
static bool b64url_decode(struct bsc_str s, struct bsc_buf *out)
{
    uint32_t acc = 0;
    int bits = 0;

    for (size_t i = 0; i < s.len; i++) {
        int v = b64url_val(s.p[i]);

        if (v < 0)
            return false;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (bsc_buf_append_char(out, (char)(acc >> bits & 0xff)))
                return false;
        }
    }
    return true;
}

static bool rs256_ok(struct bsc_str input, struct bsc_buf *sig)
{
    BIO *bio = BIO_new_mem_buf(vx_public_key, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = key && md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
              EVP_DigestVerify(md, (const unsigned char *)sig->p, sig->len,
                               (const unsigned char *)input.p, input.len) == 1;

    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    BIO_free(bio);
    return ok;
}

static bool grant_refused(struct sim_reject *rej, const char *why)
{
    sim_reject_set(rej, 400, "invalid_grant", NULL, "%s", why);
    return false;
}

/* The form field <name> of <body> (not decoded). */
static struct bsc_str form_field(struct bsc_str body, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = body.p, *end = body.p + body.len; p && p < end;) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;

        if ((size_t)(stop - p) > n && memcmp(p, name, n) == 0 && p[n] == '=')
            return bsc_str_make(p + n + 1, (size_t)(stop - p - n - 1));
        p = amp ? amp + 1 : NULL;
    }
    return BSC_STR_NULL;
}

/* Checks the claims of a verified assertion: aud is this endpoint, the scope is Vertex's,
 * iat/exp bracket now (a minute of skew), iss set. */
static bool claims_ok(struct json_object *c, const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str host = in->header(in->ctx, BSC_STR("host"));
    char aud[256];
    int64_t now = (int64_t)time(NULL);
    struct json_object *iat = bsc_json_get(c, "iat"), *exp = bsc_json_get(c, "exp");

    snprintf(aud, sizeof(aud), "http://%.*s" VX_TOKEN_PATH, (int)host.len, host.p);
    if (!bsc_str_eq(sim_json_get_str(c, "aud"), bsc_str_cstr(aud)))
        return grant_refused(rej, "Invalid JWT: Token must be a short-lived token (60 minutes) "
                                  "and in a reasonable timeframe. Check your iat and exp values "
                                  "in the JWT claim. (bad aud)");
    if (!bsc_str_eq(sim_json_get_str(c, "scope"), BSC_STR(VX_SCOPE)) ||
        !sim_json_get_str(c, "iss").len)
        return grant_refused(rej, "Invalid JWT: scope or iss");
    if (!iat || !exp || json_object_get_int64(iat) > now + 60 ||
        json_object_get_int64(exp) <= now ||
        json_object_get_int64(exp) - json_object_get_int64(iat) > 3600)
        return grant_refused(rej, "Invalid JWT: Token must be a short-lived token (60 minutes) "
                                  "and in a reasonable timeframe. Check your iat and exp values "
                                  "in the JWT claim.");
    return true;
}

static bool grant_ok(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str a = form_field(in->body, "assertion"), parts[3];
    struct bsc_buf sig, claims;
    struct json_object *c = NULL;
    size_t n = 0;
    bool ok = false;

    if (!bsc_str_eq(form_field(in->body, "grant_type"),
                    BSC_STR("urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")))
        return grant_refused(rej, "Invalid grant_type");
    for (const char *p = a.p, *end = a.p + a.len; p && n < 3;) {
        const char *dot = memchr(p, '.', (size_t)(end - p));

        parts[n++] = bsc_str_make(p, (size_t)((dot ? dot : end) - p));
        p = dot ? dot + 1 : NULL;
    }
    if (n != 3)
        return grant_refused(rej, "Invalid JWT");
    bsc_buf_init(&sig, 4096);
    bsc_buf_init(&claims, 65536);
    if (!b64url_decode(parts[2], &sig) || !b64url_decode(parts[1], &claims) ||
        !rs256_ok(bsc_str_make(a.p, parts[0].len + 1 + parts[1].len), &sig))
        grant_refused(rej, "Invalid JWT Signature.");
    else if ((c = sim_json_parse(bsc_buf_str(&claims), NULL, 0)) && claims_ok(c, in, rej))
        ok = true;
    else if (!c)
        grant_refused(rej, "Invalid JWT");
    json_object_put(c);
    bsc_buf_cleanup(&sig);
    bsc_buf_cleanup(&claims);
    return ok;
}

static bool vx_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str authz = bsc_str_trim(in->header(in->ctx, BSC_STR("authorization")));

    if (bsc_str_eq(in->path, BSC_STR(VX_TOKEN_PATH)))
        return grant_ok(in, rej);
    if (!bsc_str_starts(authz, BSC_STR("Bearer ")) ||
        !token_valid(bsc_str_trim(bsc_str_make(authz.p + 7, authz.len - 7)))) {
        sim_reject_set(rej, 401, "UNAUTHENTICATED", NULL,
                       "Request had invalid authentication credentials. Expected OAuth 2 access "
                       "token, login cookie or other valid authentication credential.");
        return false;
    }
    return true;
}

/* ---- requests ------------------------------------------------------------------------------ */

static bool parse_google(const struct vx_path *vp, const struct sim_in *in, struct sim_call *call,
                         struct sim_reject *rej)
{
    char path[512];
    struct sim_in g = *in;

    snprintf(path, sizeof(path), "/v1beta/models/%.*s:%.*s", (int)vp->model.len, vp->model.p,
             (int)vp->verb.len, vp->verb.p);
    g.path = bsc_str_cstr(path);
    return sim_dialect_gemini.parse(SIM_EP_CHAT, &g, call, rej);
}

/* Vertex's Messages body: "anthropic_version" required, "model" refused (it is in the URL);
 * handed to the Anthropic dialect with the URL's model put back. */
static bool parse_anthropic(const struct vx_path *vp, const struct sim_in *in,
                            struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *o = sim_json_parse(in->body, NULL, 0);
    struct sim_in a = *in;
    struct bsc_buf body;
    char model[257];
    bool ok;

    call->model = bsc_str_dup(vp->model);
    if (!o || !json_object_is_type(o, json_type_object) ||
        !bsc_str_eq(sim_json_get_str(o, "anthropic_version"), BSC_STR(VX_VERSION)) ||
        bsc_json_get(o, "model")) {
        json_object_put(o);
        sim_reject_set(rej, 400, "invalid_request_error", NULL,
                       "anthropic_version: must be \"" VX_VERSION "\"; model: not allowed in the "
                       "body (it is in the URL)");
        return false;
    }
    BSC_FREE(call->model);
    bsc_str_copy(model, sizeof(model), vp->model);
    json_object_object_del(o, "anthropic_version");
    json_object_object_add(o, "model", json_object_new_string(model));
    bsc_buf_init(&body, 64u << 20);
    ok = sim_json_append(&body, o) == BSC_OK;
    json_object_put(o);
    a.path = BSC_STR("/v1/messages");
    a.body = bsc_buf_str(&body);
    ok = ok && sim_dialect_anthropic.parse(SIM_EP_CHAT, &a, call, rej);
    bsc_buf_cleanup(&body);
    return ok;
}

static bool vx_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                     struct sim_reject *rej)
{
    struct vx_path vp;

    call->ep = ep;
    if (bsc_str_eq(in->path, BSC_STR(VX_TOKEN_PATH))) {
        call->model = bsc_str_dup(BSC_STR(VX_TOKEN_MODEL));
        return call->model != NULL;
    }
    if (!split(in->path, &vp)) {
        sim_reject_set(rej, 404, "NOT_FOUND", NULL, "bascule-sim: no such path");
        return false;
    }
    return is_anthropic(vp.publisher) ? parse_anthropic(&vp, in, call, rej)
                                      : parse_google(&vp, in, call, rej);
}

/* ---- answers: the publisher's dialect, told apart by the model ---------------------------- */

static bool is_token_call(const struct sim_call *call)
{
    return call && call->model && strcmp(call->model, VX_TOKEN_MODEL) == 0;
}

static const struct sim_dialect *pub_of(const struct sim_call *call)
{
    return call && call->model && strncmp(call->model, "claude", 6) == 0 ? &sim_dialect_anthropic
                                                                         : &sim_dialect_gemini;
}

static enum bsc_err vx_body(const struct sim_call *call, struct bsc_buf *out)
{
    char tok[128];

    if (is_token_call(call)) {
        int64_t life = (int64_t)call->n_tokens * VX_TOKEN_LIFE_PER_TOKEN;

        make_token((int64_t)time(NULL) + life, tok, sizeof(tok));
        return bsc_buf_appendf(out,
                               "{\"access_token\":\"%s\",\"expires_in\":%lld,"
                               "\"token_type\":\"Bearer\"}",
                               tok, (long long)life);
    }
    return pub_of(call)->body(call, out);
}

static size_t vx_event_count(const struct sim_call *call)
{
    return pub_of(call)->event_count(call);
}

static enum bsc_err vx_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    return pub_of(call)->event(call, i, out);
}

static enum bsc_err vx_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    return pub_of(call)->end_event(call, out);
}

static void vx_default_error(const struct sim_call *call, int status, const char **type,
                             const char **code, char *msgbuf, size_t msglen)
{
    pub_of(call)->default_error(call, status, type, code, msgbuf, msglen);
}

/* An upper-case type is a google.rpc status ("RESOURCE_EXHAUSTED"): Google's shape; OAuth's
 * "invalid_grant" its own; the rest ("overloaded_error") Anthropic's. */
static const struct sim_dialect *shape_of(const char *type)
{
    return type && type[0] >= 'A' && type[0] <= 'Z' ? &sim_dialect_gemini : &sim_dialect_anthropic;
}

static enum bsc_err vx_error_body(int status, const char *type, const char *code,
                                  const char *message, struct bsc_buf *out)
{
    enum bsc_err err;

    if (type && strcmp(type, "invalid_grant") == 0) {
        err = bsc_buf_append_cstr(out, "{\"error\":\"invalid_grant\",\"error_description\":");
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
        return err ? err : bsc_buf_append_char(out, '}');
    }
    return shape_of(type)->error_body(status, type, code, message, out);
}

static enum bsc_err vx_error_event(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    return shape_of(type)->error_event(status, type, code, message, out);
}

static enum bsc_err vx_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    return pub_of(call)->malformed_body(call, out);
}

static enum bsc_err vx_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    return pub_of(call)->malformed_event(call, out);
}

static enum bsc_err vx_models(const struct sim_call *call, const char *const *names, size_t n,
                              struct bsc_buf *out)
{
    return sim_dialect_gemini.models(call, names, n, out);
}

const struct sim_dialect sim_dialect_vertex = {
    .name = "vertex",
    .route = vx_route,
    .authorize = vx_authorize,
    .parse = vx_parse,
    .body = vx_body,
    .event_count = vx_event_count,
    .event = vx_event,
    .end_event = vx_end_event,
    .stream_content_type = "text/event-stream",
    .default_error = vx_default_error,
    .error_body = vx_error_body,
    .error_event = vx_error_event,
    .malformed_body = vx_malformed_body,
    .malformed_event = vx_malformed_event,
    .models = vx_models,
};
