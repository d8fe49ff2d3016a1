/* SPDX-License-Identifier: MIT */
/* cloud.c -- what kinds bedrock and vertex resolve at load, beyond their YAML: the default
 * base_url from the region (and project), the AWS credentials (the `aws:` block, else the
 * standard environment variables, else the shared credentials file's profile), the Vertex
 * credential source (else GOOGLE_APPLICATION_CREDENTIALS), and their checks. Runs once per
 * load (it reads the environment and at most one small file), never on the request path.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloud.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/kinds.h"
#include "config/schema.h"
#include "config/types.h"
#include "core/str.h"

#define CRED_FILE_MAX (64 * 1024)
#define CRED_LINE_MAX 1024

static char *dup_cstr(struct cfg__v *v, const char *s)
{
    char *p = s ? bsc_str_dup(bsc_str_cstr(s)) : NULL;

    if (s && !p)
        cfg__oom(v);
    return p;
}

/* The environment variable <name>, or NULL when unset or empty. */
static const char *env_value(const char *name)
{
    const char *s = getenv(name);

    return s && s[0] ? s : NULL;
}

/* A region as it may go into a host name: letters, digits and '-'. */
static bool region_ok(const char *r)
{
    if (!r || !r[0] || strlen(r) > 64)
        return false;
    for (const char *p = r; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    return true;
}

/* ---- the AWS shared credentials file ------------------------------------------------------ */

/* Copies the value of "key = value" from <line> into *<dst> when the key is <key>. */
static void ini_take(struct cfg__v *v, struct bsc_str line, const char *key, char **dst)
{
    const char *eq = memchr(line.p, '=', line.len);
    struct bsc_str k, val;

    if (!eq || *dst)
        return;
    k = bsc_str_trim(bsc_str_make(line.p, (size_t)(eq - line.p)));
    val = bsc_str_trim(bsc_str_make(eq + 1, line.len - (size_t)(eq + 1 - line.p)));
    if (bsc_str_eq(k, bsc_str_cstr(key)) && val.len) {
        *dst = bsc_str_dup(val);
        if (!*dst)
            cfg__oom(v);
    }
}

/* Reads the keys of [<profile>] from the INI text <s> into <aws>. */
void cfg__aws_ini_read(struct cfg__v *v, struct bsc_str s, const char *profile, struct cfg_aws *aws)
{
    bool in = false;

    while (s.len) {
        const char *nl = memchr(s.p, '\n', s.len);
        struct bsc_str line = bsc_str_make(s.p, nl ? (size_t)(nl - s.p) : s.len);

        if (line.len && line.p[line.len - 1] == '\r')
            line.len--; /* a file written on Windows */
        line = bsc_str_trim(line);

        s = nl ? bsc_str_make(nl + 1, s.len - (size_t)(nl + 1 - s.p)) : BSC_STR("");
        if (line.len && line.p[0] == '[') {
            struct bsc_str name = line.len >= 2 && line.p[line.len - 1] == ']'
                                      ? bsc_str_trim(bsc_str_make(line.p + 1, line.len - 2))
                                      : BSC_STR("");

            in = bsc_str_eq(name, bsc_str_cstr(profile));
            continue;
        }
        if (!in || !line.len || line.p[0] == '#' || line.p[0] == ';')
            continue;
        ini_take(v, line, "aws_access_key_id", &aws->access_key_id);
        ini_take(v, line, "aws_secret_access_key", &aws->secret_access_key);
        ini_take(v, line, "aws_session_token", &aws->session_token);
    }
}

/* The shared credentials file: AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials. False
 * when there is none to read (not an error: credentials may be missing altogether). */
static bool read_shared_file(struct cfg__v *v, const struct cfg_provider *p, struct cfg_aws *aws)
{
    const char *path = env_value("AWS_SHARED_CREDENTIALS_FILE"), *home = env_value("HOME");
    const char *profile = p->aws.profile             ? p->aws.profile
                          : env_value("AWS_PROFILE") ? env_value("AWS_PROFILE")
                                                     : "default";
    char buf[CRED_FILE_MAX + 1], def[512];
    size_t n;
    FILE *f;

    if (!path && home &&
        (size_t)snprintf(def, sizeof(def), "%s/.aws/credentials", home) < sizeof(def))
        path = def;
    if (!path || !(f = fopen(path, "r")))
        return false;
    n = fread(buf, 1, CRED_FILE_MAX, f);
    fclose(f);
    buf[n] = '\0';
    cfg__aws_ini_read(v, bsc_str_make(buf, n), profile, aws);
    memset(buf, 0, n);
    return true;
}

/* The `aws:` block as configured, else the environment, else the shared file. A source is
 * taken whole: an access key id from one place and a secret from another never mix. */
/* An empty value (a "${AWS_SESSION_TOKEN:-}" left unset) is no value. */
static void drop_empty(char **s)
{
    if (*s && !(*s)[0])
        BSC_FREE(*s);
}

static void resolve_aws(struct cfg__v *v, struct cfg_provider *p, const struct cfg__prov_src *src,
                        const char *where)
{
    struct cfg_aws got = {0};

    drop_empty(&p->aws.access_key_id);
    drop_empty(&p->aws.secret_access_key);
    drop_empty(&p->aws.session_token);
    drop_empty(&p->aws.profile);

    if (p->aws.access_key_id || p->aws.secret_access_key) {
        if (!p->aws.access_key_id || !p->aws.secret_access_key)
            cfg__diag(v->s, false, src->line, src->column,
                      "%s: 'aws' needs both access_key_id and secret_access_key", where);
        return;
    }
    if (env_value("AWS_ACCESS_KEY_ID") && env_value("AWS_SECRET_ACCESS_KEY")) {
        got.access_key_id = dup_cstr(v, env_value("AWS_ACCESS_KEY_ID"));
        got.secret_access_key = dup_cstr(v, env_value("AWS_SECRET_ACCESS_KEY"));
        got.session_token = dup_cstr(v, env_value("AWS_SESSION_TOKEN"));
    } else {
        read_shared_file(v, p, &got);
    }
    free(p->aws.session_token);
    p->aws.access_key_id = got.access_key_id;
    p->aws.secret_access_key = got.secret_access_key;
    p->aws.session_token = got.session_token;
    if (!p->aws.access_key_id || !p->aws.secret_access_key) {
        BSC_FREE(p->aws.access_key_id);
        BSC_FREE(p->aws.secret_access_key);
        BSC_FREE(p->aws.session_token);
        cfg__diag(v->s, true, src->line, src->column,
                  "%s has no AWS credentials ('aws', AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY "
                  "or the shared credentials file): its requests go unsigned",
                  where);
    }
}

/* ---- per kind ------------------------------------------------------------------------------ */

static void default_base_url(struct cfg__v *v, struct cfg_provider *p)
{
    char url[256];

    if (p->base_url || !region_ok(p->region))
        return;
    if (p->kind == CFG_PROV_BEDROCK)
        snprintf(url, sizeof(url), "https://bedrock-runtime.%s.amazonaws.com", p->region);
    else if (strcmp(p->region, "global") == 0)
        snprintf(url, sizeof(url), "https://aiplatform.googleapis.com/v1");
    else
        snprintf(url, sizeof(url), "https://%s-aiplatform.googleapis.com/v1", p->region);
    p->base_url = dup_cstr(v, url);
}

static void resolve_vertex(struct cfg__v *v, struct cfg_provider *p,
                           const struct cfg__prov_src *src, const char *where)
{
    struct cfg_vertex *vx = &p->vertex;

    if (!p->project || !p->project[0])
        cfg__diag(v->s, false, src->line, src->column, "%s of kind vertex has no 'project'", where);
    if (vx->credentials_file && vx->token_file)
        cfg__diag(v->s, false, src->line, src->column,
                  "%s: 'vertex' takes credentials_file or token_file, not both", where);
    if (!vx->credentials_file && !vx->token_file && env_value("GOOGLE_APPLICATION_CREDENTIALS"))
        vx->credentials_file = dup_cstr(v, env_value("GOOGLE_APPLICATION_CREDENTIALS"));
    if (!vx->credentials_file && !vx->token_file)
        cfg__diag(v->s, false, src->line, src->column,
                  "%s of kind vertex has no credentials (vertex.credentials_file, "
                  "vertex.token_file or GOOGLE_APPLICATION_CREDENTIALS)",
                  where);
}

bool cfg__is_cloud_kind(enum cfg_provider_kind k)
{
    return k == CFG_PROV_BEDROCK || k == CFG_PROV_VERTEX;
}

void cfg__resolve_cloud(struct cfg__v *v, struct cfg_provider *p, const struct cfg__prov_src *src,
                        const char *where)
{
    bool cloud = cfg__is_cloud_kind(p->kind);

    if (!cloud) {
        if (!src->has_base_url)
            cfg__diag(v->s, false, src->line, src->column, "missing required key 'base_url' in %s",
                      where);
        else if (src->null_base_url)
            cfg__diag(v->s, false, src->null_base_url->line, src->null_base_url->column,
                      "'base_url' in %s is required and cannot be null", where);
        if (p->project || p->aws.access_key_id || p->aws.secret_access_key || p->aws.profile ||
            p->vertex.credentials_file || p->vertex.token_file || p->vertex.token_url)
            cfg__diag(v->s, false, src->line, src->column,
                      "%s: 'project', 'aws' and 'vertex' are only used by kinds bedrock and "
                      "vertex",
                      where);
        return;
    }
    if (!region_ok(p->region) && !p->base_url)
        cfg__diag(v->s, false, src->line, src->column,
                  "%s of kind %s needs 'region' (letters, digits and '-') or a 'base_url'", where,
                  cfg_provider_kind_name(p->kind));
    if (p->kind == CFG_PROV_BEDROCK && !p->region && p->base_url)
        cfg__diag(v->s, false, src->line, src->column,
                  "%s of kind bedrock needs 'region': requests are signed for it", where);
    if (p->kind == CFG_PROV_VERTEX && !region_ok(p->region))
        cfg__diag(v->s, false, src->line, src->column,
                  "%s of kind vertex needs 'region': it is part of every model's path", where);
    default_base_url(v, p);
    if (p->kind == CFG_PROV_BEDROCK)
        resolve_aws(v, p, src, where);
    else
        resolve_vertex(v, p, src, where);
}

/* True when <t> serves a Claude model through a cloud (priced with Anthropic's cache
 * multipliers, like kind anthropic). */
bool cfg__is_cloud_claude(const struct cfg_target *t)
{
    return t->provider && cfg__is_cloud_kind(t->provider->kind) && t->model &&
           strstr(t->model, "claude") != NULL;
}
