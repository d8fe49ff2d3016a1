/* SPDX-License-Identifier: MIT */
/* secrets.c -- what in a config is a secret: the key names whose values diagnostics never
 * quote, and the snapshot's set of secret values (every provider key, the admin key, the
 * values of auth-like provider headers) that the router scrubs from upstream text. Built
 * once per snapshot, after validation. See docs/internals/secrets.md. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/secrets.h"
#include "config/types.h"
#include "core/redact.h"
#include "core/str.h"

/* Words that make a key (a YAML key or an HTTP header name) hold a secret: "keys", "key",
 * "api_key", "x-api-key", "x-goog-api-key", "authorization", "token", ... */
static const char *const secret_words[] = {"key", "keys", "secret", "password", "token",
                                           "authorization", "auth", "cookie", "credential"};

/* True when <name> is one of the words, or ends with "_word" / "-word". */
static bool is_secret_word(struct bsc_str name)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(secret_words); i++) {
        struct bsc_str w = bsc_str_cstr(secret_words[i]);
        const char *tail = name.p + name.len - w.len;

        if (name.len < w.len || strncasecmp(tail, w.p, w.len) != 0)
            continue;
        if (name.len == w.len || tail[-1] == '_' || tail[-1] == '-')
            return true;
    }
    return false;
}

bool cfg__is_secret_name(const char *name)
{
    return name && is_secret_word(bsc_str_cstr(name));
}

/* True when <value> looks like a credential whatever its header's name: "Bearer x",
 * "Basic x" (an Authorization value under a custom name). */
static bool has_scheme(const char *value)
{
    return strncasecmp(value, "Bearer ", 7) == 0 || strncasecmp(value, "Basic ", 6) == 0;
}

/* The credential of an Authorization-style value: what follows "Bearer " or "Basic ". */
static struct bsc_str credential_of(const char *value)
{
    const char *sp = strchr(value, ' ');

    return sp ? bsc_str_cstr(sp + 1) : BSC_STR_NULL;
}

static enum bsc_err add_provider(struct bsc_redact *rd, const struct cfg_provider *p)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; !err && i < p->n_keys; i++)
        err = bsc_redact_add(rd, bsc_str_cstr(p->keys[i]));
    if (!err && p->aws.secret_access_key)
        err = bsc_redact_add(rd, bsc_str_cstr(p->aws.secret_access_key));
    if (!err && p->aws.session_token)
        err = bsc_redact_add(rd, bsc_str_cstr(p->aws.session_token));
    for (size_t i = 0; !err && i < p->n_headers; i++) {
        const struct cfg_header *h = &p->headers[i];

        if (!h->value || !(cfg__is_secret_name(h->name) || has_scheme(h->value)))
            continue;
        err = bsc_redact_add(rd, bsc_str_cstr(h->value));
        if (!err)
            err = bsc_redact_add(rd, credential_of(h->value));
    }
    return err;
}

enum bsc_err cfg__secrets_build(struct cfg *cfg)
{
    struct bsc_redact *rd = bsc_redact_new();
    enum bsc_err err = rd ? BSC_OK : BSC_ENOMEM;

    if (!err && cfg->admin_key)
        err = bsc_redact_add(rd, bsc_str_cstr(cfg->admin_key));
    if (!err && cfg->metrics_key)
        err = bsc_redact_add(rd, bsc_str_cstr(cfg->metrics_key));
    for (size_t i = 0; !err && i < cfg->n_admin_keys; i++)
        if (cfg->admin_keys[i].key)
            err = bsc_redact_add(rd, bsc_str_cstr(cfg->admin_keys[i].key));
    for (size_t i = 0; !err && i < cfg->n_providers; i++)
        err = add_provider(rd, &cfg->providers[i]);
    for (size_t i = 0; !err && i < cfg->n_clients; i++) /* before the plaintext is wiped */
        if (cfg->clients[i].key)
            err = bsc_redact_add(rd, bsc_str_cstr(cfg->clients[i].key));
    if (err) {
        bsc_redact_free(rd);
        return err;
    }
    cfg->secrets = rd;
    return BSC_OK;
}
