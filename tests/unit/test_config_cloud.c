/* SPDX-License-Identifier: MIT */
/* test_config_cloud.c -- what the load resolves for kinds bedrock and vertex (config/cloud.c):
 * the default base_url from the region (and `global`), base_url still required for other
 * kinds; AWS credentials from the `aws:` block, else the environment, else the shared
 * credentials file's profile (a source taken whole, empty values ignored, CRLF files), and the
 * warning when none is found; vertex's project, region and credential checks,
 * GOOGLE_APPLICATION_CREDENTIALS; `publisher` only on vertex; Claude on either cloud priced
 * with Anthropic's cache multipliers; the AWS secret redacted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/redact.h"

static char dir[] = "/tmp/bascule-cloud-XXXXXX";

static void clear_env(void)
{
    static const char *const names[] = {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",       "AWS_SESSION_TOKEN",
        "AWS_PROFILE",       "AWS_SHARED_CREDENTIALS_FILE", "GOOGLE_APPLICATION_CREDENTIALS"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        unsetenv(names[i]);
    setenv("HOME", dir, 1); /* no ~/.aws/credentials unless a test writes one */
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    clear_env();
    return 0;
}

static bool has_text(const struct cfg_diags *d, const char *needle, bool warning)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i].warning == warning && strstr(d->items[i].message, needle))
            return true;
    return false;
}

static struct cfg *load(const char *providers, const char *target_extra, struct cfg_diags *d)
{
    char yaml[4096];
    struct cfg *cfg = NULL;

    snprintf(yaml, sizeof(yaml),
             "providers:\n  p: {%s}\ntargets:\n  t: {provider: p, model: %s}\n"
             "routes:\n  r: {primary: [t]}\n",
             providers, target_extra);
    memset(d, 0, sizeof(*d));
    cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, d);
    return cfg;
}

static void test_default_base_urls(void **state)
{
    struct cfg_diags d;
    struct cfg *cfg;

    (void)state;
    clear_env();
    cfg = load("kind: bedrock, region: eu-west-3, aws: {access_key_id: A, secret_access_key: S}",
               "m", &d);
    assert_non_null(cfg);
    assert_string_equal(cfg->providers[0].base_url,
                        "https://bedrock-runtime.eu-west-3.amazonaws.com");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = load("kind: vertex, project: pr, region: us-east5, vertex: {token_file: /t}", "m", &d);
    assert_string_equal(cfg->providers[0].base_url,
                        "https://us-east5-aiplatform.googleapis.com/v1");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = load("kind: vertex, project: pr, region: global, vertex: {token_file: /t}", "m", &d);
    assert_string_equal(cfg->providers[0].base_url, "https://aiplatform.googleapis.com/v1");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    /* other kinds still need one; a bad region is refused */
    assert_null(load("kind: openai, keys: [k]", "m", &d));
    assert_true(has_text(&d, "missing required key 'base_url' in provider 'p'", false));
    cfg_diags_cleanup(&d);
    assert_null(load("kind: bedrock, region: \"us east/1\"", "m", &d));
    assert_true(has_text(&d, "needs 'region'", false));
    cfg_diags_cleanup(&d);
}

static void test_aws_sources(void **state)
{
    struct cfg_diags d;
    struct cfg *cfg;
    char path[256];
    FILE *f;

    (void)state;
    clear_env();
    /* the environment, session token included */
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env", 1);
    setenv("AWS_SESSION_TOKEN", "tok-env", 1);
    cfg = load("kind: bedrock, region: us-east-1", "m", &d);
    assert_string_equal(cfg->providers[0].aws.access_key_id, "AKENV");
    assert_string_equal(cfg->providers[0].aws.session_token, "tok-env");
    assert_true(bsc_redact_cstr(cfg->secrets, (char[]){"x secret-from-env y"}, 20) > 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    /* the block wins over the environment; an empty session token is none */
    cfg = load("kind: bedrock, region: us-east-1, aws: {access_key_id: AKCFG, "
               "secret_access_key: S, session_token: \"\"}",
               "m", &d);
    assert_string_equal(cfg->providers[0].aws.access_key_id, "AKCFG");
    assert_null(cfg->providers[0].aws.session_token);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    /* the shared file (CRLF), the profile from aws.profile; half an env pair is ignored */
    clear_env();
    setenv("AWS_ACCESS_KEY_ID", "AKHALF", 1);
    snprintf(path, sizeof(path), "%s/creds", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("[default]\r\naws_access_key_id = AKDEF\r\naws_secret_access_key = sdef\r\n"
          "[prod]\r\naws_access_key_id=AKPROD\r\naws_secret_access_key= sprod \r\n"
          "aws_session_token = tprod\r\n",
          f);
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    cfg = load("kind: bedrock, region: us-east-1, aws: {profile: prod}", "m", &d);
    assert_string_equal(cfg->providers[0].aws.access_key_id, "AKPROD");
    assert_string_equal(cfg->providers[0].aws.secret_access_key, "sprod");
    assert_string_equal(cfg->providers[0].aws.session_token, "tprod");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = load("kind: bedrock, region: us-east-1", "m", &d);
    assert_string_equal(cfg->providers[0].aws.access_key_id, "AKDEF");
    assert_null(cfg->providers[0].aws.session_token);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    /* nothing anywhere: a warning, not an error */
    clear_env();
    cfg = load("kind: bedrock, region: us-east-1", "m", &d);
    assert_non_null(cfg);
    assert_null(cfg->providers[0].aws.access_key_id);
    assert_true(has_text(&d, "has no AWS credentials", true));
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    /* half a block is an error */
    assert_null(load("kind: bedrock, region: us-east-1, aws: {access_key_id: A}", "m", &d));
    assert_true(has_text(&d, "needs both access_key_id and secret_access_key", false));
    cfg_diags_cleanup(&d);
}

static void test_vertex_checks(void **state)
{
    struct cfg_diags d;
    struct cfg *cfg;

    (void)state;
    clear_env();
    assert_null(load("kind: vertex, region: us-east5, vertex: {token_file: /t}", "m", &d));
    assert_true(has_text(&d, "has no 'project'", false));
    cfg_diags_cleanup(&d);
    assert_null(load("kind: vertex, project: p, region: us-east5", "m", &d));
    assert_true(has_text(&d, "has no credentials", false));
    cfg_diags_cleanup(&d);
    assert_null(load("kind: vertex, project: p, region: r, vertex: {token_file: /t, "
                     "credentials_file: /c}",
                     "m", &d));
    assert_true(has_text(&d, "not both", false));
    cfg_diags_cleanup(&d);
    setenv("GOOGLE_APPLICATION_CREDENTIALS", "/keys/sa.json", 1);
    cfg = load("kind: vertex, project: p, region: r", "claude-x, publisher: anthropic", &d);
    assert_string_equal(cfg->providers[0].vertex.credentials_file, "/keys/sa.json");
    assert_string_equal(cfg->targets[0].publisher, "anthropic");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    assert_null(load("kind: vertex, project: p, region: r", "m, publisher: meta", &d));
    assert_true(has_text(&d, "'publisher'", false));
    cfg_diags_cleanup(&d);
    assert_null(load("kind: openai, base_url: \"https://x/v1\", keys: [k], project: p", "m", &d));
    assert_true(has_text(&d, "only used by kinds bedrock and vertex", false));
    cfg_diags_cleanup(&d);
    clear_env();
}

/* Claude on a cloud: Anthropic's 0.1x / 1.25x / 2x; another model there: the input price. */
static void test_claude_prices(void **state)
{
    struct cfg_diags d;
    struct cfg *cfg;

    (void)state;
    clear_env();
    cfg = load("kind: bedrock, region: us-east-1, aws: {access_key_id: A, secret_access_key: S}",
               "\"anthropic.claude-sonnet-4-v1:0\", price: {input_per_mtok: 3}", &d);
    assert_true(cfg->targets[0].price.cached_input_per_mtok > 0.29 &&
                cfg->targets[0].price.cached_input_per_mtok < 0.31);
    assert_true(cfg->targets[0].price.cache_write_per_mtok > 3.74 &&
                cfg->targets[0].price.cache_write_per_mtok < 3.76);
    assert_true(cfg->targets[0].price.cache_write_1h_per_mtok > 5.99 &&
                cfg->targets[0].price.cache_write_1h_per_mtok < 6.01);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = load("kind: bedrock, region: us-east-1, aws: {access_key_id: A, secret_access_key: S}",
               "amazon.nova-pro-v1:0, price: {input_per_mtok: 0.8}", &d);
    assert_true(cfg->targets[0].price.cached_input_per_mtok > 0.79);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_base_urls),
        cmocka_unit_test(test_aws_sources),
        cmocka_unit_test(test_vertex_checks),
        cmocka_unit_test(test_claude_prices),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
