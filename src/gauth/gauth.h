/* SPDX-License-Identifier: MIT */
/* gauth.h -- Google OAuth access tokens for kind vertex, without a Google SDK: a service
 * account's RS256-signed JWT exchanged at its token endpoint (RFC 7523), or a token file a
 * sidecar keeps fresh. One refresher thread per process fetches tokens ahead of expiry into
 * core/token_table.h, where the adapter reads them; no request ever waits for it. See
 * docs/internals/provider-bedrock-vertex.md. */
#ifndef BSC_GAUTH_GAUTH_H
#define BSC_GAUTH_GAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/err.h"

/* The scope asked for: everything Vertex AI serves. */
#define GAUTH_SCOPE "https://www.googleapis.com/auth/cloud-platform"
/* Google's token endpoint, when neither the config nor the service account names one. */
#define GAUTH_TOKEN_URL "https://oauth2.googleapis.com/token"
/* A token is refreshed this long before it expires. */
#define GAUTH_REFRESH_MARGIN_S 300
/* How long an assertion is valid (Google's maximum). */
#define GAUTH_ASSERTION_S 3600

/* What a service-account JSON file holds that the grant needs. Owned strings. */
struct gauth_sa {
    char *client_email;
    char *private_key; /* PEM */
    char *token_uri;   /* NULL when absent */
};

/* Reads <json> (a service-account key file's text) into <sa>. BSC_EPARSE when it is not one
 * (not JSON, no client_email or private_key). Free with gauth_sa_cleanup. */
enum bsc_err gauth_sa_parse(const char *json, size_t len, struct gauth_sa *sa);
void gauth_sa_cleanup(struct gauth_sa *sa);

/* Appends the signed JWT assertion for <sa> to <out>: header {"alg":"RS256","typ":"JWT"},
 * claims {iss, scope, aud = <aud>, iat = <now_s>, exp = <now_s> + GAUTH_ASSERTION_S},
 * RS256 (RSASSA-PKCS1-v1_5 over SHA-256) with the account's key, base64url without padding.
 * BSC_EINVAL when the key cannot be read. Pure but for OpenSSL. */
enum bsc_err gauth_assertion(const struct gauth_sa *sa, const char *aud, int64_t now_s,
                             struct bsc_buf *out);

/* Appends <len> bytes at <p> base64url-encoded without padding. */
enum bsc_err gauth_b64url(struct bsc_buf *out, const void *p, size_t len);

/* The credential key of vertex provider <p> in core/token_table.h: its token_file or
 * credentials_file path; NULL when it has none. */
const char *gauth_cred_key(const struct cfg_provider *p);

/* Tracks the credentials of <cfg>'s vertex providers (starts the refresher thread on first
 * use; forgets credentials no longer named) and wakes the thread to fetch what is missing.
 * Returns at once. BSC_ENOMEM when the thread or the list cannot be set up. */
enum bsc_err gauth_sync(const struct cfg *cfg);

/* Stops the refresher thread (at exit). */
void gauth_stop(void);

#endif
