/* SPDX-License-Identifier: MIT */
/* jwt.c -- the service account's JWT bearer assertion (RFC 7523 as Google's OAuth 2.0
 * server-to-server flow uses it): read the key file, build and RS256-sign the claims. OpenSSL
 * (libcrypto) does the RSA; nothing here touches the network or the clock.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "core/json_get.h"
#include "core/json_parse.h"
#include "core/str.h"
#include "gauth/gauth.h"

enum bsc_err gauth_b64url(struct bsc_buf *out, const void *p, size_t len)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const uint8_t *b = p;
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < len && !err; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < len ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < len ? b[i + 2] : 0);
        char q[4] = {a[v >> 18 & 63], a[v >> 12 & 63], a[v >> 6 & 63], a[v & 63]};

        err = bsc_buf_append(out, q, i + 2 < len ? 4 : i + 1 < len ? 3 : 2);
    }
    return err;
}

static char *dup_field(struct json_object *o, const char *key)
{
    const char *s = bsc_json_get_str(o, key);

    return s && s[0] ? bsc_str_dup(bsc_str_cstr(s)) : NULL;
}

enum bsc_err gauth_sa_parse(const char *json, size_t len, struct gauth_sa *sa)
{
    struct json_object *o = bsc_json_parse_whole(bsc_str_make(json, len), 16);

    memset(sa, 0, sizeof(*sa));
    sa->client_email = dup_field(o, "client_email");
    sa->private_key = dup_field(o, "private_key");
    sa->token_uri = dup_field(o, "token_uri");
    json_object_put(o);
    if (!sa->client_email || !sa->private_key) {
        gauth_sa_cleanup(sa);
        return BSC_EPARSE;
    }
    return BSC_OK;
}

void gauth_sa_cleanup(struct gauth_sa *sa)
{
    BSC_FREE(sa->client_email);
    if (sa->private_key)
        memset(sa->private_key, 0, strlen(sa->private_key));
    BSC_FREE(sa->private_key);
    BSC_FREE(sa->token_uri);
}

/* RS256 of <len> bytes at <msg> with the PEM key <pem>; the signature appended base64url. */
static enum bsc_err rs256(const char *pem, const char *msg, size_t len, struct bsc_buf *out)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sig[1024];
    size_t n = sizeof(sig);
    enum bsc_err err = BSC_EINVAL;

    if (key && md && EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA &&
        EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(md, sig, &n, (const unsigned char *)msg, len) == 1)
        err = gauth_b64url(out, sig, n);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    BIO_free(bio);
    return err;
}

enum bsc_err gauth_assertion(const struct gauth_sa *sa, const char *aud, int64_t now_s,
                             struct bsc_buf *out)
{
    static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    struct json_object *claims = json_object_new_object();
    const char *cj;
    enum bsc_err err;
    size_t start = out->len;

    json_object_object_add(claims, "iss", json_object_new_string(sa->client_email));
    json_object_object_add(claims, "scope", json_object_new_string(GAUTH_SCOPE));
    json_object_object_add(claims, "aud", json_object_new_string(aud));
    json_object_object_add(claims, "iat", json_object_new_int64(now_s));
    json_object_object_add(claims, "exp", json_object_new_int64(now_s + GAUTH_ASSERTION_S));
    cj = json_object_to_json_string_ext(claims,
                                        JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    err = gauth_b64url(out, header, sizeof(header) - 1);
    if (!err)
        err = bsc_buf_append_char(out, '.');
    if (!err)
        err = gauth_b64url(out, cj, strlen(cj));
    if (!err) {
        size_t signed_len = out->len - start;
        char *input = bsc_str_dup(bsc_str_make(out->p + start, signed_len));

        err = input ? bsc_buf_append_char(out, '.') : BSC_ENOMEM;
        if (!err)
            err = rs256(sa->private_key, input, signed_len, out);
        free(input);
    }
    json_object_put(claims);
    if (err)
        out->len = start;
    return err;
}

const char *gauth_cred_key(const struct cfg_provider *p)
{
    if (p->kind != CFG_PROV_VERTEX)
        return NULL;
    return p->vertex.token_file ? p->vertex.token_file : p->vertex.credentials_file;
}
