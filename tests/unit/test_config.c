/* SPDX-License-Identifier: MIT */
/* test_config.c -- the config loader vs docs/configuration.md: a file with every key loads with
 * the right values, an almost empty one gets every default, ${VAR} expansion, each class of
 * error with its exact file:line:column and text, several errors in one file, warnings
 * that do not fail, aliases and the bounds on hostile input, refcount and the current
 * snapshot under concurrent swaps, lookups, and examples/production.yaml. */
#include <pthread.h>
#include <math.h>
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
#include "core/log.h"
#include "core/redact.h"
#include "core/str.h"

/* ---- helpers -------------------------------------------------------------------------- */

/* The diagnostics as cfg_diags_print writes them (caller frees). */
static char *printed(const struct cfg_diags *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    cfg_diags_print(d, f);
    fclose(f);
    return text;
}

/* True when <line> is one whole line of what cfg_diags_print writes for <d>. */
static bool has_line(const struct cfg_diags *d, const char *line)
{
    char *text = printed(d);
    size_t n = strlen(line);
    bool found = false;

    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);

        if (len == n && memcmp(p, line, n) == 0)
            found = true;
        p = nl ? nl + 1 : NULL;
    }
    if (!found)
        print_error("missing line: %s\nprinted:\n%s", line, text);
    free(text);
    return found;
}

#define assert_line(d, line) assert_true(has_line((d), (line)))

static size_t count(const struct cfg_diags *d, bool warnings)
{
    size_t n = 0;

    for (size_t i = 0; i < d->n; i++)
        n += d->items[i].warning == warnings;
    return n;
}

/* Loads <yaml> expecting success; the caller unrefs. Warnings are allowed. */
static struct cfg *load_ok(const char *yaml, struct cfg_diags *d)
{
    struct cfg *cfg = NULL;
    enum bsc_err err = cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, d);

    if (err) {
        char *text = printed(d);

        print_error("load failed (%d):\n%s", err, text);
        free(text);
    }
    assert_int_equal(err, BSC_OK);
    assert_non_null(cfg);
    assert_int_equal(count(d, false), 0);
    return cfg;
}

/* Loads <yaml> expecting BSC_EINVAL and no snapshot. */
static void load_bad(const char *yaml, struct cfg_diags *d)
{
    struct cfg *cfg = (struct cfg *)1;

    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, d), BSC_EINVAL);
    assert_null(cfg);
    assert_true(count(d, false) > 0);
}

/* A valid base: one provider, one target, one route (lines 1-6). */
#define BASE                                                                               \
    "providers:\n"                                                                         \
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"            \
    "targets:\n"                                                                           \
    "  t: {provider: p, model: m}\n"                                                       \
    "routes:\n"                                                                            \
    "  r: {primary: [t]}\n"

/* ---- a file with every key ------------------------------------------------------------ */

static const char full_yaml[] =
    "listen: \"[::1]:9090\"\n"
    "workers: 4\n"
    "log: { level: debug, format: text, prompts: true }\n"
    "limits:\n"
    "  max_body_bytes: 1048576\n"
    "  max_header_bytes: 32768\n"
    "  header_timeout_ms: 5000\n"
    "  idle_timeout_ms: 60000\n"
    "  max_connections: 1000\n"
    "  max_stream_buffer_bytes: 65536\n"
    "  drain_timeout_ms: 2500\n"
    "admin: { key: \"${TEST_CFG_ADMIN:-}\" }\n"
    "store: { kind: redis, url: \"redis://127.0.0.1:6379/0\" }\n"
    "providers:\n"
    "  openai-us:\n"
    "    kind: openai\n"
    "    base_url: \"https://api.openai.com/v1/\"\n"
    "    keys: [\"${TEST_CFG_KEY}\", second-key]\n"
    "    region: us-east\n"
    "    headers: { OpenAI-Project: proj_1, X-Team: search }\n"
    "    connect_timeout_ms: 1500\n"
    "    max_concurrency: 128\n"
    "    rpm: 10000\n"
    "    tpm: 2000000\n"
    "    health: { interval_ms: 15000, probe: completion }\n"
    "    breaker: { open_ms: 5000, key: [provider, key] }\n"
    "  azure-eu:\n"
    "    kind: azure\n"
    "    base_url: \"https://res.openai.azure.com/openai\"\n"
    "    api_version: \"2024-10-21\"\n"
    "    keys: []\n"
    "    disabled: true\n"
    "  anthropic:\n"
    "    kind: anthropic\n"
    "    base_url: \"http://127.0.0.1:9999/v1\"\n"
    "    keys: [a]\n"
    "    health: { probe: none }\n"
    "targets:\n"
    "  gpt-4.1@openai-us:\n"
    "    provider: openai-us\n"
    "    model: gpt-4.1\n"
    "    deployment: null\n"
    "    capabilities: [text, streaming, tools, parallel_tool_calls, json_schema]\n"
    "    context_window: 1047576\n"
    "    max_output_tokens: 32768\n"
    "    price: { input_per_mtok: 2.00, output_per_mtok: 8.00 }\n"
    "    canary_percent: 30\n"
    "    adaptive: false\n"
    "    breaker: { window_ms: 1000 }\n"
    "  gpt-4.1@azure-eu:\n"
    "    provider: azure-eu\n"
    "    model: gpt-4.1\n"
    "    deployment: gpt41\n"
    "    capabilities: [text, streaming, tools, parallel_tool_calls, json_schema]\n"
    "    disabled: true\n"
    "  claude@anthropic:\n"
    "    provider: anthropic\n"
    "    model: claude-sonnet-4\n"
    "    capabilities: [text, vision, streaming, tools, json_object, embeddings]\n"
    "    context_window: 200000\n"
    "    max_output_tokens: 64000\n"
    "routes:\n"
    "  support-agent:\n"
    "    requires: { capabilities: [streaming, tools], context_window_min: 64000, "
    "max_output_tokens_min: 4000 }\n"
    "    primary: [gpt-4.1@openai-us]\n"
    "    equivalent: [gpt-4.1@azure-eu]\n"
    "    fallback: [claude@anthropic]\n"
    "    balance: priority\n"
    "    envelope:\n"
    "      deadline_ms: 20000\n"
    "      max_attempts: 5\n"
    "      max_same_target_attempts: 1\n"
    "      reserve_for_fallback_ms: 4000\n"
    "      max_added_latency_ms: 7000\n"
    "      max_cost_usd: 0.25\n"
    "      allow_equivalent_failover: false\n"
    "      allow_cross_model_fallback: true\n"
    "      side_effects: write_possible\n"
    "      on_stream_failure: buffer\n"
    "    fallback_disabled: true\n"
    "  weighted:\n"
    "    primary: [gpt-4.1@openai-us, claude@anthropic]\n"
    "    balance: weighted\n"
    "    weights: { claude@anthropic: 3 }\n"
    "    equivalent_disabled: true\n"
    "    primary_disabled: false\n"
    "    envelope: { max_cost_usd: null }\n"
    "breaker:\n"
    "  key: [provider, model, region, deployment, key]\n"
    "  window_ms: 20000\n"
    "  min_requests: 10\n"
    "  failure_rate: 0.25\n"
    "  consecutive_failures: 7\n"
    "  open_ms: 30000\n"
    "  half_open_probes: 2\n"
    "  success_threshold: 4\n"
    "  ramp_ms: 0\n"
    "retry:\n"
    "  backoff: { base_ms: 100, max_ms: 2000, jitter: 0 }\n"
    "  budget: { ratio: 0.5, min_per_s: 3, window_ms: 5000 }\n"
    "http_client: curl\n";

static void test_full_config(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;
    const struct cfg_provider *p;
    const struct cfg_target *t;
    const struct cfg_route *r;

    (void)state;
    setenv("TEST_CFG_KEY", "sk-from-env", 1);
    unsetenv("TEST_CFG_ADMIN");
    cfg = load_ok(full_yaml, &d);

    assert_string_equal(cfg->file, "gateway.yaml");
    assert_string_equal(cfg->listen_host, "::1");
    assert_int_equal(cfg->listen_port, 9090);
    assert_int_equal(cfg->workers, 4);
    assert_int_equal(cfg->http_client, CFG_HTTP_CLIENT_CURL);
    assert_int_equal(cfg->log.level, BSC_LOG_DEBUG);
    assert_false(cfg->log.json);
    assert_true(cfg->log.prompts);
    assert_int_equal(cfg->limits.max_body_bytes, 1048576);
    assert_int_equal(cfg->limits.max_header_bytes, 32768);
    assert_int_equal(cfg->limits.header_timeout_ms, 5000);
    assert_int_equal(cfg->limits.idle_timeout_ms, 60000);
    assert_int_equal(cfg->limits.max_connections, 1000);
    assert_int_equal(cfg->limits.max_stream_buffer_bytes, 65536);
    assert_int_equal(cfg->limits.drain_timeout_ms, 2500);
    assert_string_equal(cfg->admin_key, "");
    assert_int_equal(cfg->store.kind, CFG_STORE_REDIS);
    assert_string_equal(cfg->store.url, "redis://127.0.0.1:6379/0");
    assert_null(cfg->store.path);

    assert_int_equal(cfg->n_providers, 3);
    p = &cfg->providers[0];
    assert_string_equal(p->id, "openai-us");
    assert_int_equal(p->kind, CFG_PROV_OPENAI);
    assert_string_equal(p->base_url, "https://api.openai.com/v1"); /* slash stripped */
    assert_int_equal(p->n_keys, 2);
    assert_string_equal(p->keys[0], "sk-from-env");
    assert_string_equal(p->keys[1], "second-key");
    assert_string_equal(p->region, "us-east");
    assert_null(p->api_version);
    assert_int_equal(p->n_headers, 2);
    assert_string_equal(p->headers[0].name, "OpenAI-Project");
    assert_string_equal(p->headers[0].value, "proj_1");
    assert_string_equal(p->headers[1].name, "X-Team");
    assert_string_equal(p->headers[1].value, "search");
    assert_int_equal(p->connect_timeout_ms, 1500);
    assert_int_equal(p->max_concurrency, 128);
    assert_int_equal(p->rpm, 10000);
    assert_int_equal(p->tpm, 2000000);
    assert_int_equal(p->health.interval_ms, 15000);
    assert_int_equal(p->health.probe, CFG_PROBE_COMPLETION);
    assert_false(p->disabled);
    assert_true(p->has_breaker);
    assert_int_equal(p->breaker.open_ms, 5000);
    assert_int_equal(p->breaker.key_dims, CFG_BRK_PROVIDER | CFG_BRK_KEY);
    assert_int_equal(p->breaker.window_ms, 20000); /* inherited from the top level */
    assert_int_equal(p->breaker.consecutive_failures, 7);

    p = &cfg->providers[1];
    assert_string_equal(p->id, "azure-eu");
    assert_int_equal(p->kind, CFG_PROV_AZURE);
    assert_string_equal(p->api_version, "2024-10-21");
    assert_int_equal(p->n_keys, 0);
    assert_true(p->disabled);
    assert_false(p->has_breaker);
    assert_int_equal(p->breaker.open_ms, 30000);
    assert_null(p->region);
    assert_int_equal(p->n_headers, 0);
    assert_int_equal(cfg->providers[2].health.probe, CFG_PROBE_NONE);
    assert_string_equal(cfg->providers[2].base_url, "http://127.0.0.1:9999/v1");

    assert_int_equal(cfg->n_targets, 3);
    t = &cfg->targets[0];
    assert_string_equal(t->id, "gpt-4.1@openai-us");
    assert_ptr_equal(t->provider, &cfg->providers[0]);
    assert_string_equal(t->model, "gpt-4.1");
    assert_null(t->deployment);
    assert_int_equal(t->capabilities, CFG_CAP_TEXT | CFG_CAP_STREAMING | CFG_CAP_TOOLS |
                                          CFG_CAP_PARALLEL_TOOL_CALLS | CFG_CAP_JSON_SCHEMA);
    assert_int_equal(t->context_window, 1047576);
    assert_int_equal(t->max_output_tokens, 32768);
    assert_true(t->price.input_per_mtok == 2.0);
    assert_true(t->price.output_per_mtok == 8.0);
    assert_int_equal(t->canary_percent, 30);
    assert_false(t->adaptive);
    assert_false(t->disabled);
    assert_true(t->has_breaker);
    assert_int_equal(t->breaker.window_ms, 1000);
    assert_int_equal(t->breaker.open_ms, 5000); /* cascades from its provider's override */
    assert_int_equal(t->breaker.key_dims, CFG_BRK_PROVIDER | CFG_BRK_KEY);
    t = &cfg->targets[1];
    assert_string_equal(t->deployment, "gpt41");
    assert_true(t->disabled);
    assert_int_equal(t->canary_percent, 100);
    assert_true(t->adaptive); /* the default */
    assert_false(t->has_breaker);
    assert_int_equal(cfg->targets[2].capabilities,
                     CFG_CAP_TEXT | CFG_CAP_VISION | CFG_CAP_STREAMING | CFG_CAP_TOOLS |
                         CFG_CAP_JSON_OBJECT | CFG_CAP_EMBEDDINGS);

    assert_int_equal(cfg->n_routes, 2);
    r = &cfg->routes[0];
    assert_string_equal(r->id, "support-agent");
    assert_int_equal(r->requires.capabilities, CFG_CAP_STREAMING | CFG_CAP_TOOLS);
    assert_int_equal(r->requires.context_window_min, 64000);
    assert_int_equal(r->requires.max_output_tokens_min, 4000);
    assert_int_equal(r->primary.n, 1);
    assert_ptr_equal(r->primary.targets[0], &cfg->targets[0]);
    assert_int_equal(r->primary.weights[0], 1);
    assert_int_equal(r->equivalent.n, 1);
    assert_ptr_equal(r->equivalent.targets[0], &cfg->targets[1]);
    assert_int_equal(r->fallback.n, 1);
    assert_ptr_equal(r->fallback.targets[0], &cfg->targets[2]);
    assert_false(r->primary.disabled);
    assert_false(r->equivalent.disabled);
    assert_true(r->fallback.disabled);
    assert_int_equal(r->balance, CFG_BALANCE_PRIORITY);
    assert_int_equal(r->envelope.deadline_ms, 20000);
    assert_int_equal(r->envelope.max_attempts, 5);
    assert_int_equal(r->envelope.max_same_target_attempts, 1);
    assert_int_equal(r->envelope.reserve_for_fallback_ms, 4000);
    assert_int_equal(r->envelope.max_added_latency_ms, 7000);
    assert_true(r->envelope.max_cost_usd == 0.25);
    assert_false(r->envelope.allow_equivalent_failover);
    assert_true(r->envelope.allow_cross_model_fallback);
    assert_int_equal(r->envelope.side_effects, CFG_SE_WRITE_POSSIBLE);
    assert_int_equal(r->envelope.on_stream_failure, CFG_SF_BUFFER);

    r = &cfg->routes[1];
    assert_int_equal(r->balance, CFG_BALANCE_WEIGHTED);
    assert_int_equal(r->primary.n, 2);
    assert_int_equal(r->primary.weights[0], 1);
    assert_int_equal(r->primary.weights[1], 3);
    assert_true(r->equivalent.disabled);
    assert_int_equal(r->equivalent.n, 0);
    assert_true(r->envelope.max_cost_usd < 0);

    assert_int_equal(cfg->breaker.key_dims, CFG_BRK_PROVIDER | CFG_BRK_MODEL | CFG_BRK_REGION |
                                                CFG_BRK_DEPLOYMENT | CFG_BRK_KEY);
    assert_int_equal(cfg->breaker.window_ms, 20000);
    assert_int_equal(cfg->breaker.min_requests, 10);
    assert_true(cfg->breaker.failure_rate == 0.25);
    assert_int_equal(cfg->breaker.consecutive_failures, 7);
    assert_int_equal(cfg->breaker.open_ms, 30000);
    assert_int_equal(cfg->breaker.half_open_probes, 2);
    assert_int_equal(cfg->breaker.success_threshold, 4);
    assert_int_equal(cfg->breaker.ramp_ms, 0);
    assert_int_equal(cfg->retry.base_ms, 100);
    assert_int_equal(cfg->retry.max_ms, 2000);
    assert_true(cfg->retry.jitter == 0.0);
    assert_true(cfg->retry.budget_ratio == 0.5);
    assert_int_equal(cfg->retry.budget_min_per_s, 3);
    assert_int_equal(cfg->retry.budget_window_ms, 5000);

    /* Azure without keys and the fallback contract are warnings only. */
    assert_line(&d, "gateway.yaml:27:3: warning: provider 'azure-eu' has no keys, but kind "
                    "azure needs one");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    unsetenv("TEST_CFG_KEY");
}

/* ---- defaults ------------------------------------------------------------------------- */

static void test_defaults(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;
    const struct cfg_provider *p;
    const struct cfg_target *t;
    const struct cfg_route *r;

    (void)state;
    cfg = load_ok(BASE, &d);
    assert_int_equal(d.n, 0);
    assert_string_equal(cfg->listen_host, "127.0.0.1");
    assert_int_equal(cfg->listen_port, 8080);
    assert_int_equal(cfg->workers, 0);
    assert_int_equal(cfg->http_client, CFG_HTTP_CLIENT_BUILTIN);
    assert_int_equal(cfg->log.level, BSC_LOG_INFO);
    assert_true(cfg->log.json);
    assert_false(cfg->log.prompts);
    assert_int_equal(cfg->limits.max_body_bytes, 8388608);
    assert_int_equal(cfg->limits.max_header_bytes, 65536);
    assert_int_equal(cfg->limits.header_timeout_ms, 10000);
    assert_int_equal(cfg->limits.idle_timeout_ms, 75000);
    assert_int_equal(cfg->limits.max_connections, 20000);
    assert_int_equal(cfg->limits.max_stream_buffer_bytes, 1048576);
    assert_int_equal(cfg->limits.drain_timeout_ms, 10000);
    assert_int_equal(cfg->limits.body_timeout_ms, 30000);
    assert_int_equal(cfg->limits.min_body_rate_bps, 500);
    assert_int_equal(cfg->limits.max_stream_ms, 1800000);
    assert_int_equal(cfg->limits.max_stream_bytes, 1073741824);
    assert_string_equal(cfg->admin_key, "");
    assert_int_equal(cfg->store.kind, CFG_STORE_MEMORY);
    assert_null(cfg->store.path);
    assert_null(cfg->store.url);

    p = &cfg->providers[0];
    assert_null(p->region);
    assert_null(p->api_version);
    assert_int_equal(p->n_headers, 0);
    assert_int_equal(p->connect_timeout_ms, 2000);
    assert_int_equal(p->max_concurrency, 256);
    assert_int_equal(p->rpm, 0);
    assert_int_equal(p->tpm, 0);
    assert_int_equal(p->health.interval_ms, 30000);
    assert_int_equal(p->health.probe, CFG_PROBE_MODELS);
    assert_false(p->disabled);
    assert_false(p->has_breaker);

    t = &cfg->targets[0];
    assert_null(t->deployment);
    assert_int_equal(t->capabilities, CFG_CAP_TEXT | CFG_CAP_STREAMING);
    assert_int_equal(t->context_window, 0);
    assert_int_equal(t->max_output_tokens, 0);
    assert_true(t->price.input_per_mtok == 0.0 && t->price.output_per_mtok == 0.0);
    assert_false(t->disabled);
    assert_int_equal(t->canary_percent, 100);
    assert_false(t->has_breaker);

    r = &cfg->routes[0];
    assert_int_equal(r->requires.capabilities, 0);
    assert_int_equal(r->requires.context_window_min, 0);
    assert_int_equal(r->requires.max_output_tokens_min, 0);
    assert_int_equal(r->equivalent.n, 0);
    assert_int_equal(r->fallback.n, 0);
    assert_false(r->primary.disabled || r->equivalent.disabled || r->fallback.disabled);
    assert_int_equal(r->balance, CFG_BALANCE_PRIORITY);
    assert_int_equal(r->envelope.deadline_ms, 30000);
    assert_int_equal(r->envelope.max_attempts, 3);
    assert_int_equal(r->envelope.max_same_target_attempts, 2);
    assert_int_equal(r->envelope.reserve_for_fallback_ms, 5000);
    assert_int_equal(r->envelope.max_added_latency_ms, 10000);
    assert_true(r->envelope.max_cost_usd < 0);
    assert_true(r->envelope.allow_equivalent_failover);
    assert_false(r->envelope.allow_cross_model_fallback);
    assert_int_equal(r->envelope.side_effects, CFG_SE_NONE);
    assert_int_equal(r->envelope.on_stream_failure, CFG_SF_FAIL);

    assert_int_equal(cfg->breaker.key_dims,
                     CFG_BRK_PROVIDER | CFG_BRK_MODEL | CFG_BRK_REGION | CFG_BRK_KEY);
    assert_int_equal(cfg->breaker.window_ms, 30000);
    assert_int_equal(cfg->breaker.min_requests, 20);
    assert_true(cfg->breaker.failure_rate == 0.5);
    assert_int_equal(cfg->breaker.consecutive_failures, 5);
    assert_int_equal(cfg->breaker.open_ms, 60000);
    assert_int_equal(cfg->breaker.half_open_probes, 1);
    assert_int_equal(cfg->breaker.success_threshold, 3);
    assert_int_equal(cfg->breaker.ramp_ms, 30000);
    assert_true(cfg->breaker.open_backoff == 2.0);
    assert_int_equal(cfg->breaker.max_open_ms, 300000);
    assert_true(cfg->breaker.panic);
    assert_int_equal(cfg->breaker.mode, CFG_BRK_MODE_CIRCUIT);
    assert_true(cfg->breaker.adaptive_k == 2.0);
    assert_true(memcmp(&p->breaker, &cfg->breaker, sizeof(cfg->breaker)) == 0);
    assert_true(memcmp(&t->breaker, &cfg->breaker, sizeof(cfg->breaker)) == 0);
    assert_int_equal(cfg->retry.base_ms, 250);
    assert_int_equal(cfg->retry.max_ms, 4000);
    assert_true(cfg->retry.jitter == 0.3);
    assert_true(cfg->retry.budget_ratio == 0.2);
    assert_int_equal(cfg->retry.budget_min_per_s, 10);
    assert_int_equal(cfg->retry.budget_window_ms, 10000);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* Null is accepted for optional scalars and blocks, and keeps the default. */
static void test_nulls_keep_defaults(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok("listen: null\nworkers: ~\nlog:\nlimits: { max_body_bytes: }\n"
                  "admin: { key: null }\nstore:\n" BASE
                  "breaker: { window_ms: null }\nretry: { backoff: null }\n",
                  &d);
    assert_string_equal(cfg->listen_host, "127.0.0.1");
    assert_int_equal(cfg->listen_port, 8080);
    assert_int_equal(cfg->workers, 0);
    assert_true(cfg->log.json);
    assert_int_equal(cfg->limits.max_body_bytes, 8388608);
    assert_string_equal(cfg->admin_key, "");
    assert_int_equal(cfg->breaker.window_ms, 30000);
    assert_int_equal(cfg->retry.base_ms, 250);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

static void test_listen_forms(void **state)
{
    static const struct {
        const char *text, *host;
        unsigned port;
    } ok[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"0.0.0.0:1", "0.0.0.0", 1},
        {"[::1]:65535", "::1", 65535},
        {"[::]:80", "::", 80},
        {"localhost:3000", "127.0.0.1", 3000},
    };
    static const struct {
        const char *text, *line;
    } bad[] = {
        {"8080", "gateway.yaml:1:9: error: 'listen': expected host:port, got '8080'"},
        {"127.0.0.1:0", "gateway.yaml:1:9: error: 'listen': the port must be a number from 1 "
                        "to 65535, got '127.0.0.1:0'"},
        {"127.0.0.1:65536", "gateway.yaml:1:9: error: 'listen': the port must be a number "
                            "from 1 to 65535, got '127.0.0.1:65536'"},
        {"127.0.0.1:http", "gateway.yaml:1:9: error: 'listen': the port must be a number "
                           "from 1 to 65535, got '127.0.0.1:http'"},
        {"::1:8080", "gateway.yaml:1:9: error: 'listen': an IPv6 address must be in "
                     "brackets, as in \"[::1]:8080\", got '::1:8080'"},
        {"[::1]8080", "gateway.yaml:1:9: error: 'listen': expected \"[address]:port\" for "
                      "IPv6, got '[::1]8080'"},
        {"example.com:80", "gateway.yaml:1:9: error: 'listen': the host must be an IPv4 "
                           "address or localhost, got 'example.com:80'"},
        {"[1.2.3.4]:80", "gateway.yaml:1:9: error: 'listen': not an IPv6 address, got "
                         "'[1.2.3.4]:80'"},
        {":80", "gateway.yaml:1:9: error: 'listen': expected host:port, got ':80'"},
    };
    char yaml[512];

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct cfg_diags d = {0};
        struct cfg *cfg;

        snprintf(yaml, sizeof(yaml), "listen: \"%s\"\n" BASE, ok[i].text);
        cfg = load_ok(yaml, &d);
        assert_string_equal(cfg->listen_host, ok[i].host);
        assert_int_equal(cfg->listen_port, ok[i].port);
        cfg_unref(cfg);
        cfg_diags_cleanup(&d);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cfg_diags d = {0};

        snprintf(yaml, sizeof(yaml), "listen: \"%s\"\n" BASE, bad[i].text);
        load_bad(yaml, &d);
        assert_int_equal(d.n, 1);
        assert_line(&d, bad[i].line);
        cfg_diags_cleanup(&d);
    }
}

/* ---- ${VAR} --------------------------------------------------------------------------- */

static void test_env_expansion(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    setenv("TEST_CFG_URL", "https://proxy.internal", 1);
    setenv("TEST_CFG_EMPTY", "", 1);
    setenv("TEST_CFG_N", "64", 1);
    unsetenv("TEST_CFG_UNSET");
    cfg = load_ok("providers:\n"
                  "  p:\n"
                  "    kind: openai\n"
                  "    base_url: \"${TEST_CFG_URL}/v1\"\n"
                  "    keys: [\"${TEST_CFG_UNSET:-fallback-key}\", \"${TEST_CFG_EMPTY:-dflt}\",\n"
                  "           \"a${TEST_CFG_EMPTY}b\", \"$${NOT_A_VAR}\", cost$5, "
                  "\"${TEST_CFG_UNSET:-}\"]\n"
                  "    max_concurrency: ${TEST_CFG_N}\n"
                  "    region: ${TEST_CFG_UNSET:-eu-west}\n"
                  "targets:\n"
                  "  t: {provider: p, model: m}\n"
                  "routes:\n"
                  "  r: {primary: [t]}\n",
                  &d);
    assert_string_equal(cfg->providers[0].base_url, "https://proxy.internal/v1");
    /* The optional key that expanded to "" is dropped without a warning. */
    assert_int_equal(cfg->providers[0].n_keys, 5);
    assert_string_equal(cfg->providers[0].keys[0], "fallback-key");
    assert_string_equal(cfg->providers[0].keys[1], "dflt"); /* :- also covers empty */
    assert_string_equal(cfg->providers[0].keys[2], "ab");
    assert_string_equal(cfg->providers[0].keys[3], "${NOT_A_VAR}");
    assert_string_equal(cfg->providers[0].keys[4], "cost$5");
    assert_int_equal(cfg->providers[0].max_concurrency, 64);
    assert_string_equal(cfg->providers[0].region, "eu-west");
    assert_int_equal(d.n, 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    unsetenv("TEST_CFG_URL");
    unsetenv("TEST_CFG_EMPTY");
    unsetenv("TEST_CFG_N");
}

static void test_env_errors(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    unsetenv("TEST_CFG_UNSET");
    unsetenv("TEST_CFG_UNSET2");
    load_bad("providers:\n"
             "  p:\n"
             "    kind: openai\n"
             "    base_url: https://x/v1\n"
             "    keys: [\"${TEST_CFG_UNSET}\", ok]\n"
             "    region: \"${TEST_CFG_UNSET2}-${TEST_CFG_UNSET}\"\n"
             "    max_concurrency: ${TEST_CFG_UNSET:-12\n"
             "    api_version: ${1BAD}\n"
             "targets:\n"
             "  t: {provider: p, model: m}\n"
             "routes:\n"
             "  r: {primary: [t]}\n",
             &d);
    assert_line(&d, "gateway.yaml:5:12: error: environment variable 'TEST_CFG_UNSET' is not set "
                    "(write ${TEST_CFG_UNSET:-default} to give a default)");
    assert_line(&d, "gateway.yaml:6:13: error: environment variable 'TEST_CFG_UNSET2' is not "
                    "set (write ${TEST_CFG_UNSET2:-default} to give a default)");
    assert_line(&d, "gateway.yaml:6:13: error: environment variable 'TEST_CFG_UNSET' is not set "
                    "(write ${TEST_CFG_UNSET:-default} to give a default)");
    assert_line(&d, "gateway.yaml:7:22: error: unterminated variable reference "
                    "'${TEST_CFG_UNSET:-12'");
    assert_line(&d, "gateway.yaml:8:18: error: invalid variable reference '${1BAD}'");
    /* A failed expansion is not reported again as a type error or a missing key. */
    assert_int_equal(count(&d, false), 5);
    assert_int_equal(count(&d, true), 0);
    cfg_diags_cleanup(&d);
}

/* Keys are never expanded: a ${...} key is just an unknown key. */
static void test_env_not_in_keys(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    setenv("TEST_CFG_K", "workers", 1);
    load_bad("${TEST_CFG_K}: 3\n" BASE, &d);
    assert_line(&d, "gateway.yaml:1:1: error: unknown key '${TEST_CFG_K}' at top level");
    cfg_diags_cleanup(&d);
    unsetenv("TEST_CFG_K");
}

/* ---- each class of error -------------------------------------------------------------- */

static void test_unknown_keys(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("providers:\n"
             "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], regoin: eu}\n"
             "targets:\n"
             "  t: {provider: p, model: m, pirce: {input_per_mtok: 1}}\n"
             "routes:\n"
             "  support-agent:\n"
             "    primary: [t]\n"
             "    primery: [t]\n"
             "    envelope: { deadline: 5 }\n"
             "limits: { max_bdy_bytes: 5, zzz: 1 }\n"
             "retry: { backoff: { jiter: 0.1 } }\n"
             "lisen: \"127.0.0.1:80\"\n",
             &d);
    assert_line(&d, "gateway.yaml:2:58: error: unknown key 'regoin' in provider 'p' (did you "
                    "mean 'region'?)");
    assert_line(&d, "gateway.yaml:4:30: error: unknown key 'pirce' in target 't' (did you mean "
                    "'price'?)");
    assert_line(&d, "gateway.yaml:8:5: error: unknown key 'primery' in route 'support-agent' "
                    "(did you mean 'primary'?)");
    assert_line(&d, "gateway.yaml:9:17: error: unknown key 'deadline' in route 'support-agent' "
                    "envelope (did you mean 'deadline_ms'?)");
    assert_line(&d, "gateway.yaml:10:11: error: unknown key 'max_bdy_bytes' in limits (did you "
                    "mean 'max_body_bytes'?)");
    assert_line(&d, "gateway.yaml:10:29: error: unknown key 'zzz' in limits");
    assert_line(&d, "gateway.yaml:11:21: error: unknown key 'jiter' in retry.backoff (did you "
                    "mean 'jitter'?)");
    assert_line(&d, "gateway.yaml:12:1: error: unknown key 'lisen' at top level (did you mean "
                    "'listen'?)");
    assert_int_equal(count(&d, false), 8);
    cfg_diags_cleanup(&d);
}

static void test_http_client_values(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("http_client: libcurl\n" BASE, &d);
    assert_line(&d, "gateway.yaml:1:14: error: 'http_client': unknown value 'libcurl'; "
                    "expected one of: curl, builtin");
    cfg_diags_cleanup(&d);
}

static void test_wrong_types(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("workers: four\n"
             "log: { prompts: yes }\n"
             "limits: [1, 2]\n"
             "providers:\n"
             "  p:\n"
             "    kind: openai\n"
             "    base_url: https://x/v1\n"
             "    keys: sk-123\n"
             "    headers: [a]\n"
             "    rpm: 1.5\n"
             "    region: {a: b}\n"
             "targets:\n"
             "  t:\n"
             "    provider: p\n"
             "    model: m\n"
             "    capabilities: tools\n"
             "    price: { input_per_mtok: cheap }\n"
             "routes:\n"
             "  r:\n"
             "    primary: t\n"
             "    envelope: { max_cost_usd: 0x10, allow_equivalent_failover: 1 }\n"
             "    weights: [t]\n",
             &d);
    assert_line(&d, "gateway.yaml:1:10: error: 'workers': expected an integer, got 'four'");
    assert_line(&d, "gateway.yaml:2:17: error: 'prompts' in log: expected true or false, got "
                    "'yes'");
    assert_line(&d, "gateway.yaml:3:9: error: limits: expected a map, got a list");
    assert_line(&d, "gateway.yaml:8:11: error: 'keys' in provider 'p': expected a list of "
                    "strings, got a string (not shown)");
    assert_line(&d, "gateway.yaml:9:14: error: 'headers' in provider 'p': expected a map of "
                    "header names to values, got a list");
    assert_line(&d, "gateway.yaml:10:10: error: 'rpm' in provider 'p': expected an integer, "
                    "got '1.5'");
    assert_line(&d, "gateway.yaml:11:13: error: 'region' in provider 'p': expected a string, "
                    "got a map");
    assert_line(&d, "gateway.yaml:16:19: error: 'capabilities' in target 't': expected a list "
                    "of strings, got 'tools'");
    assert_line(&d, "gateway.yaml:17:30: error: 'input_per_mtok' in target 't' price: expected "
                    "a number, got 'cheap'");
    assert_line(&d, "gateway.yaml:20:14: error: 'primary' in route 'r': expected a list of "
                    "target ids, got 't'");
    assert_line(&d, "gateway.yaml:21:31: error: 'max_cost_usd' in route 'r' envelope: expected "
                    "a number, got '0x10'");
    assert_line(&d, "gateway.yaml:21:64: error: 'allow_equivalent_failover' in route 'r' "
                    "envelope: expected true or false, got '1'");
    assert_line(&d, "gateway.yaml:22:14: error: 'weights' in route 'r': expected a map of "
                    "target ids to integers, got a list");
    assert_int_equal(count(&d, false), 13);
    cfg_diags_cleanup(&d);
}

/* limit - 1, limit and limit + 1 at a few bounds. */
static void test_ranges(void **state)
{
    static const struct {
        const char *yaml;
        const char *line; /* NULL: loads */
    } cases[] = {
        {"workers: 1024\n", NULL},
        {"workers: 1025\n",
         "gateway.yaml:1:10: error: 'workers': must be between 0 and 1024, got '1025'"},
        {"workers: -1\n", "gateway.yaml:1:10: error: 'workers': must be between 0 and 1024, "
                          "got '-1'"},
        {"workers: 99999999999999999999999\n",
         "gateway.yaml:1:10: error: 'workers': must be between 0 and 1024, got "
         "'99999999999999999999999'"},
        {"limits: { max_header_bytes: 1023 }\n",
         "gateway.yaml:1:29: error: 'max_header_bytes' in limits: must be between 1024 and "
         "1048576, got '1023'"},
        {"limits: { max_header_bytes: 1024 }\n", NULL},
        {"breaker: { failure_rate: 0 }\n",
         "gateway.yaml:1:26: error: 'failure_rate' in breaker: must be in (0, 1], got '0'"},
        {"breaker: { failure_rate: 1 }\n", NULL},
        {"breaker: { failure_rate: 1.01 }\n",
         "gateway.yaml:1:26: error: 'failure_rate' in breaker: must be in (0, 1], got '1.01'"},
        {"retry: { backoff: { jitter: -0.1 } }\n",
         "gateway.yaml:1:29: error: 'jitter' in retry.backoff: must be in [0, 1], got '-0.1'"},
        {"retry: { backoff: { base_ms: 4001 } }\n",
         "gateway.yaml:1:30: error: 'base_ms' in retry.backoff: 4001 is larger than max_ms "
         "(4000)"},
        {"retry: { backoff: { base_ms: 4000 } }\n", NULL},
        {"breaker: { key: [] }\n", "gateway.yaml:1:17: error: 'key' in breaker: must name at "
                                   "least one of provider, model, region, deployment, key"},
        {"breaker: { open_backoff: 1, max_open_ms: 60000, panic: false }\n", NULL},
        {"breaker: { open_backoff: 0.5 }\n",
         "gateway.yaml:1:26: error: 'open_backoff' in breaker: must be in [1, 100], got '0.5'"},
        {"breaker: { open_ms: 2000,\n  max_open_ms: 1000 }\n",
         "gateway.yaml:2:16: error: 'max_open_ms' in breaker: 1000 is smaller than open_ms "
         "(2000)"},
        {"breaker: { mode: adaptive, adaptive_k: 1.5 }\n", NULL},
        {"breaker: { mode: sre }\n",
         "gateway.yaml:1:18: error: 'mode' in breaker: unknown value 'sre'; expected one of: "
         "circuit, adaptive"},
        {"breaker: { panic: sometimes }\n",
         "gateway.yaml:1:19: error: 'panic' in breaker: expected true or false, got 'sometimes'"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cfg_diags d = {0};
        char yaml[1024];

        snprintf(yaml, sizeof(yaml), "%s" BASE, cases[i].yaml);
        if (cases[i].line) {
            load_bad(yaml, &d);
            assert_int_equal(d.n, 1);
            assert_line(&d, cases[i].line);
        } else {
            cfg_unref(load_ok(yaml, &d));
        }
        cfg_diags_cleanup(&d);
    }
}

static void test_range_in_objects(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("providers:\n"
             "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], max_concurrency: 0}\n"
             "targets:\n"
             "  t: {provider: p, model: m, canary_percent: 101}\n"
             "routes:\n"
             "  r:\n"
             "    primary: [t]\n"
             "    envelope: { max_attempts: 0, deadline_ms: 1000, reserve_for_fallback_ms: "
             "1000 }\n",
             &d);
    assert_line(&d, "gateway.yaml:2:75: error: 'max_concurrency' in provider 'p': must be "
                    "between 1 and 1000000, got '0'");
    assert_line(&d, "gateway.yaml:4:46: error: 'canary_percent' in target 't': must be between "
                    "0 and 100, got '101'");
    assert_line(&d, "gateway.yaml:8:31: error: 'max_attempts' in route 'r' envelope: must be "
                    "between 1 and 100, got '0'");
    assert_line(&d, "gateway.yaml:8:78: error: 'reserve_for_fallback_ms' in route 'r' "
                    "envelope: 1000 must be less than deadline_ms (1000)");
    assert_int_equal(count(&d, false), 4);
    cfg_diags_cleanup(&d);
}

/* rpm_burst and tpm_burst: beside their rate, never above it; 0 is the default; a client's
 * weight 1..1000, default 1. */
static void test_bursts(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok("providers:\n"
                  "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], rpm: 60, "
                  "rpm_burst: 60}\n"
                  "targets:\n"
                  "  t: {provider: p, model: m, tpm: 1000, tpm_burst: 10}\n"
                  "routes:\n"
                  "  r: {primary: [t]}\n"
                  "clients:\n"
                  "  c: {key: abcdefghijklmnopqrstuvwx, routes: [r], rpm: 5, weight: 3}\n",
                  &d);
    assert_int_equal(cfg->providers[0].rpm_burst, 60);
    assert_int_equal(cfg->targets[0].tpm_burst, 10);
    assert_int_equal(cfg->targets[0].rpm_burst, 0);
    assert_int_equal(cfg->clients[0].weight, 3);
    assert_int_equal(cfg->clients[0].rpm_burst, 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    load_bad("providers:\n"
             "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], rpm_burst: 5}\n"
             "targets:\n"
             "  t: {provider: p, model: m, rpm: 10, rpm_burst: 11}\n"
             "routes:\n"
             "  r: {primary: [t]}\n"
             "clients:\n"
             "  c: {key: abcdefghijklmnopqrstuvwx, routes: [r], tpm: 9, tpm_burst: 10, weight: 0}\n",
             &d);
    assert_line(&d, "gateway.yaml:2:69: error: 'rpm_burst' in provider 'p': a burst needs 'rpm' "
                    "beside it");
    assert_line(&d, "gateway.yaml:4:50: error: 'rpm_burst' in target 't': 11 is above rpm (10): "
                    "at most the minute's limit may pass at once");
    assert_line(&d, "gateway.yaml:8:70: error: 'tpm_burst' in client 'c': 10 is above tpm (9): "
                    "at most the minute's limit may pass at once");
    assert_int_equal(count(&d, false), 4); /* and weight 0 */
    cfg_diags_cleanup(&d);
}

static void test_bad_enums(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("log: { level: verbose, format: xml }\n"
             "store: { kind: postgres }\n"
             "providers:\n"
             "  p: {kind: opnai, base_url: \"https://x/v1\", keys: [k], health: {probe: ping}}\n"
             "targets:\n"
             "  t: {provider: p, model: m, capabilities: [text, telepathy]}\n"
             "routes:\n"
             "  r:\n"
             "    primary: [t]\n"
             "    balance: fastest\n"
             "    envelope: { side_effects: all, on_stream_failure: retry }\n"
             "breaker: { key: [provider, capability] }\n",
             &d);
    assert_line(&d, "gateway.yaml:1:15: error: 'level' in log: unknown value 'verbose'; "
                    "expected one of: err, warn, info, debug");
    assert_line(&d, "gateway.yaml:1:32: error: 'format' in log: unknown value 'xml'; expected "
                    "one of: json, text");
    assert_line(&d, "gateway.yaml:2:16: error: 'kind' in store: unknown value 'postgres'; "
                    "expected one of: memory, sqlite, redis");
    assert_line(&d, "gateway.yaml:4:13: error: 'kind' in provider 'p': unknown value 'opnai' "
                    "(did you mean 'openai'?); expected one of: openai, anthropic, gemini, "
                    "dashscope, azure, openai_compatible, bedrock, vertex");
    assert_line(&d, "gateway.yaml:4:73: error: 'probe' in provider 'p' health: unknown value "
                    "'ping'; expected one of: models, completion, none");
    assert_line(&d, "gateway.yaml:6:51: error: 'capabilities' in target 't': unknown value "
                    "'telepathy'; expected one of: text, vision, streaming, tools, "
                    "parallel_tool_calls, json_schema, json_object, embeddings, prefill");
    assert_line(&d, "gateway.yaml:10:14: error: 'balance' in route 'r': unknown value "
                    "'fastest'; expected one of: priority, weighted, least_latency, cheapest, "
                    "score");
    assert_line(&d, "gateway.yaml:11:31: error: 'side_effects' in route 'r' envelope: unknown "
                    "value 'all'; expected one of: none, read_only, write_possible");
    assert_line(&d, "gateway.yaml:11:55: error: 'on_stream_failure' in route 'r' envelope: "
                    "unknown value 'retry'; expected one of: fail, buffer, continue");
    assert_line(&d, "gateway.yaml:12:28: error: 'key' in breaker: unknown value 'capability'; "
                    "expected one of: provider, model, region, deployment, key");
    assert_int_equal(count(&d, false), 10);
    cfg_diags_cleanup(&d);
}

static void test_missing_required(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("workers: 1\n", &d);
    assert_line(&d, "gateway.yaml:1:1: error: missing required key 'providers'");
    assert_line(&d, "gateway.yaml:1:1: error: missing required key 'targets'");
    assert_line(&d, "gateway.yaml:1:1: error: missing required key 'routes'");
    assert_int_equal(d.n, 3);
    cfg_diags_cleanup(&d);

    load_bad("", &d);
    assert_line(&d, "gateway.yaml: error: missing required key 'providers'");
    assert_int_equal(d.n, 3);
    cfg_diags_cleanup(&d);

    load_bad("providers:\n"
             "  p: {keys: [k]}\n"
             "  q: {kind: openai, base_url: null, keys: [k]}\n"
             "targets:\n"
             "  t: {model: m}\n"
             "  u: {provider: p, model: \"\"}\n"
             "routes:\n"
             "  r: {fallback: [t]}\n"
             "  s: {primary: []}\n"
             "  z: {primary: null}\n",
             &d);
    assert_line(&d, "gateway.yaml:2:3: error: missing required key 'kind' in provider 'p'");
    assert_line(&d, "gateway.yaml:2:3: error: missing required key 'base_url' in provider 'p'");
    assert_line(&d, "gateway.yaml:3:31: error: 'base_url' in provider 'q' is required and "
                    "cannot be null");
    assert_line(&d, "gateway.yaml:5:3: error: missing required key 'provider' in target 't'");
    assert_line(&d, "gateway.yaml:6:27: error: 'model' in target 'u': must not be empty");
    assert_line(&d, "gateway.yaml:8:3: error: missing required key 'primary' in route 'r'");
    assert_line(&d, "gateway.yaml:9:16: error: 'primary' in route 's' must list at least one "
                    "target");
    assert_line(&d, "gateway.yaml:10:16: error: 'primary' in route 'z' is required and cannot "
                    "be null");
    assert_int_equal(count(&d, false), 8);
    cfg_diags_cleanup(&d);

    load_bad("providers: {}\ntargets:\nroutes: []\n", &d);
    assert_line(&d, "gateway.yaml:1:12: error: 'providers' must define at least one provider");
    assert_line(&d, "gateway.yaml:2:9: error: 'targets' is required and cannot be null");
    assert_line(&d, "gateway.yaml:3:9: error: 'routes': expected a map of route ids to routes, "
                    "got a list");
    assert_int_equal(d.n, 3);
    cfg_diags_cleanup(&d);

    load_bad("store: { kind: sqlite }\n" BASE "store: { kind: redis, url: \"http://x\" }\n", &d);
    assert_line(&d, "gateway.yaml:1:8: error: missing required key 'path' in store (kind "
                    "sqlite)");
    assert_line(&d, "gateway.yaml:8:28: error: 'url' in store: expected a redis://, rediss:// "
                    "or unix:// URL");
    cfg_diags_cleanup(&d);
}

/* The redis store block: defaults, every key, rediss:// refused with its reason. */
static void test_store_redis(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok(BASE "store: { kind: redis, url: \"redis://127.0.0.1:6379/0\" }\n", &d);
    assert_null(cfg->store.prefix);
    assert_int_equal(cfg->store.timeout_ms, 50);
    assert_int_equal(cfg->store.on_unavailable, CFG_STORE_LOCAL);
    assert_int_equal(cfg->store.instances, 1);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    cfg = load_ok(BASE "store: { kind: redis, url: \"unix:///r.sock\", prefix: \"gw:\", "
                       "timeout_ms: 20, on_unavailable: reject, instances: 3 }\n", &d);
    assert_string_equal(cfg->store.prefix, "gw:");
    assert_int_equal(cfg->store.timeout_ms, 20);
    assert_int_equal(cfg->store.on_unavailable, CFG_STORE_REJECT);
    assert_int_equal(cfg->store.instances, 3);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    load_bad(BASE "store: { kind: redis, url: \"rediss://h:6379\" }\n", &d);
    assert_line(&d, "gateway.yaml:7:28: error: 'url' in store: rediss:// (TLS) is not "
                    "supported: the Redis client (hiredis 0.14) has no TLS; use redis:// on a "
                    "trusted network or unix://");
    cfg_diags_cleanup(&d);
    load_bad(BASE "store: { kind: redis, url: \"redis://h\", on_unavailable: maybe }\n", &d);
    cfg_diags_cleanup(&d);
}

static void test_dangling_references(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("providers:\n"
             "  openai-us: {kind: openai, base_url: \"https://x/v1\", keys: [k]}\n"
             "targets:\n"
             "  gpt@openai-us: {provider: openai-uss, model: m}\n"
             "  ok: {provider: openai-us, model: m}\n"
             "routes:\n"
             "  support-agent:\n"
             "    primary: [ok, gpt@openai-uss]\n"
             "    equivalent: [nothing-like-it]\n"
             "    fallback: [ok]\n"
             "    balance: weighted\n"
             "    weights: { ok: 2, gpt@openai-us: 1 }\n",
             &d);
    assert_line(&d, "gateway.yaml:4:29: error: unknown provider 'openai-uss' in target "
                    "'gpt@openai-us' (did you mean 'openai-us'?)");
    assert_line(&d, "gateway.yaml:8:19: error: unknown target 'gpt@openai-uss' in route "
                    "'support-agent' primary (did you mean 'gpt@openai-us'?)");
    assert_line(&d, "gateway.yaml:9:18: error: unknown target 'nothing-like-it' in route "
                    "'support-agent' equivalent");
    assert_line(&d, "gateway.yaml:10:16: warning: target 'ok' is in both primary and fallback "
                    "of route 'support-agent'");
    assert_line(&d, "gateway.yaml:12:23: error: route 'support-agent' weights names target "
                    "'gpt@openai-us', which is not in this route");
    assert_int_equal(count(&d, false), 4);
    cfg_diags_cleanup(&d);
}

static void test_duplicates(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("workers: 1\n"
             "providers:\n"
             "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], kind: anthropic}\n"
             "  p: {kind: openai, base_url: \"https://y/v1\", keys: [k]}\n"
             "targets:\n"
             "  t: {provider: p, model: m}\n"
             "routes:\n"
             "  r: {primary: [t, t]}\n"
             "workers: 2\n",
             &d);
    assert_line(&d, "gateway.yaml:3:58: error: duplicate key 'kind' (first defined at line 3, "
                    "column 7)");
    assert_line(&d, "gateway.yaml:4:3: error: duplicate key 'p' (first defined at line 3, "
                    "column 3)");
    assert_line(&d, "gateway.yaml:8:20: error: target 't' is listed twice in route 'r' primary");
    assert_line(&d, "gateway.yaml:9:1: error: duplicate key 'workers' (first defined at line 1, "
                    "column 1)");
    assert_int_equal(count(&d, false), 4);
    cfg_diags_cleanup(&d);
}

static void test_base_url(void **state)
{
    static const char *const bad[] = {"ftp://x/v1", "api.openai.com/v1", "https://",
                                      "https:///v1", "https://x/v1?a=b", "https://x y/v1"};
    struct cfg_diags d = {0};
    struct cfg *cfg;
    char yaml[512];

    (void)state;
    cfg = load_ok("providers:\n"
                  "  p: {kind: openai, base_url: \"HTTPS://x/v1///\", keys: [k]}\n"
                  "  q: {kind: openai_compatible, base_url: \"http://127.0.0.1:8000/\"}\n"
                  "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n",
                  &d);
    assert_string_equal(cfg->providers[0].base_url, "HTTPS://x/v1");
    assert_string_equal(cfg->providers[1].base_url, "http://127.0.0.1:8000");
    assert_int_equal(cfg->providers[1].n_keys, 0); /* no warning: keys are optional there */
    assert_int_equal(d.n, 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[256];

        snprintf(yaml, sizeof(yaml),
                 "providers:\n  p: {kind: openai, keys: [k], base_url: \"%s\"}\n"
                 "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n",
                 bad[i]);
        snprintf(line, sizeof(line),
                 "gateway.yaml:2:42: error: 'base_url' in provider 'p': expected an http:// or "
                 "https:// URL without query or fragment, got '%s'",
                 bad[i]);
        load_bad(yaml, &d);
        assert_int_equal(d.n, 1);
        assert_line(&d, line);
        cfg_diags_cleanup(&d);
    }
}

static void test_headers(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("providers:\n"
             "  p:\n"
             "    kind: openai\n"
             "    base_url: https://x/v1\n"
             "    keys: [k]\n"
             "    headers:\n"
             "      \"Bad Header\": x\n"
             "      Content-Length: 5\n"
             "      X-Ok: \"a\\r\\nInjected: 1\"\n"
             "      X-Null: null\n"
             "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n",
             &d);
    assert_line(&d, "gateway.yaml:7:7: error: header name 'Bad Header' in provider 'p' headers "
                    "is not a valid HTTP token");
    assert_line(&d, "gateway.yaml:8:7: error: header 'Content-Length' in provider 'p' headers "
                    "is set by the gateway and cannot be configured");
    assert_line(&d, "gateway.yaml:9:13: error: 'X-Ok' in provider 'p' headers: a header value "
                    "cannot hold CR or LF");
    assert_line(&d, "gateway.yaml:10:15: error: 'X-Null' in provider 'p' headers: expected a "
                    "string, got null");
    assert_int_equal(count(&d, false), 4);
    cfg_diags_cleanup(&d);
}

static void test_syntax_errors(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("providers:\n  p: {kind: openai, base_url: \"x\"\ntargets: {}\n", &d);
    assert_int_equal(d.n, 1);
    assert_line(&d, "gateway.yaml:3:1: error: YAML syntax error: did not find expected ',' or "
                    "'}' (while parsing a flow mapping at line 2, column 6)");
    cfg_diags_cleanup(&d);

    load_bad("a: b\n  c: d\n", &d);
    assert_line(&d, "gateway.yaml:2:4: error: YAML syntax error: mapping values are not allowed "
                    "in this context");
    cfg_diags_cleanup(&d);

    load_bad("workers: 1\nlog: \"\xff\"\n", &d);
    assert_line(&d, "gateway.yaml:2:7: error: YAML error: invalid leading UTF-8 octet (byte "
                    "0xff)");
    cfg_diags_cleanup(&d);

    load_bad(BASE "---\n" BASE, &d);
    assert_line(&d, "gateway.yaml:7:1: error: only one YAML document is allowed in a config "
                    "file");
    cfg_diags_cleanup(&d);

    load_bad("- a\n- b\n", &d);
    assert_int_equal(d.n, 1);
    assert_line(&d, "gateway.yaml:1:1: error: expected a map at the top level, got a list");
    cfg_diags_cleanup(&d);

    load_bad("? [a, b]\n: c\n" BASE, &d);
    assert_line(&d, "gateway.yaml:1:3: error: map keys must be plain strings");
    cfg_diags_cleanup(&d);
}

/* Several problems in one file: all reported, in file order. */
static void test_all_errors_reported(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("workers: x\n"
             "providers:\n"
             "  p: {kind: nope, base_url: \"https://x/v1\", keys: [k]}\n"
             "targets:\n"
             "  t: {provider: q, model: m}\n"
             "routes:\n"
             "  r: {primary: [u], bogus: 1}\n"
             "retry: { budget: { ratio: 11 } }\n",
             &d);
    assert_int_equal(d.n, 6);
    assert_int_equal(d.items[0].line, 1);
    assert_int_equal(d.items[1].line, 3);
    assert_int_equal(d.items[2].line, 5);
    assert_int_equal(d.items[3].line, 7);
    assert_int_equal(d.items[4].line, 7);
    assert_true(d.items[3].column < d.items[4].column);
    assert_int_equal(d.items[5].line, 8);
    assert_line(&d, "gateway.yaml:7:17: error: unknown target 'u' in route 'r' primary (did you "
                    "mean 't'?)");
    assert_line(&d, "gateway.yaml:7:21: error: unknown key 'bogus' in route 'r'");
    assert_line(&d, "gateway.yaml:8:27: error: 'ratio' in retry.budget: must be in [0, 10], got "
                    "'11'");
    cfg_diags_cleanup(&d);
}

/* ---- warnings ------------------------------------------------------------------------- */

static void test_warnings(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok("admin: { key: short }\n"
                  "providers:\n"
                  "  p: {kind: anthropic, base_url: \"https://x/v1\", keys: []}\n"
                  "  az: {kind: azure, base_url: \"https://r.openai.azure.com/openai\", "
                  "keys: [k]}\n"
                  "  o: {kind: openai, base_url: \"https://o/v1\", keys: [\"\"], api_version: v}\n"
                  "targets:\n"
                  "  big: {provider: p, model: m, capabilities: [text, streaming, tools], "
                  "context_window: 200000}\n"
                  "  small: {provider: o, model: m, capabilities: [text], context_window: 8192, "
                  "max_output_tokens: 1000}\n"
                  "  a: {provider: az, model: m}\n"
                  "routes:\n"
                  "  support-agent:\n"
                  "    requires: { capabilities: [streaming, tools], context_window_min: 64000, "
                  "max_output_tokens_min: 4000 }\n"
                  "    primary: [big]\n"
                  "    fallback: [small]\n"
                  "    weights: { big: 2 }\n"
                  "  short:\n"
                  "    primary: [a]\n"
                  "    envelope: { deadline_ms: 3000 }\n",
                  &d);
    assert_line(&d, "gateway.yaml:1:15: warning: the admin key is shorter than 16 characters; "
                    "use a long random secret");
    assert_line(&d, "gateway.yaml:3:3: warning: provider 'p' has no keys, but kind anthropic "
                    "needs one");
    assert_line(&d, "gateway.yaml:4:3: warning: provider 'az' of kind azure has no "
                    "'api_version'; Azure requires one");
    assert_line(&d, "gateway.yaml:5:3: warning: provider 'o' has no keys, but kind openai needs "
                    "one");
    assert_line(&d, "gateway.yaml:5:3: warning: 'api_version' in provider 'o' is only used by "
                    "kind azure");
    assert_line(&d, "gateway.yaml:5:54: warning: empty key in provider 'o' ignored");
    assert_line(&d, "gateway.yaml:9:3: warning: target 'a' on azure provider 'az' has no "
                    "'deployment'");
    assert_line(&d, "gateway.yaml:14:16: warning: fallback target 'small' cannot satisfy route "
                    "'support-agent': missing streaming, tools; context_window 8192 < 64000; "
                    "max_output_tokens 1000 < 4000");
    assert_line(&d, "gateway.yaml:15:5: warning: 'weights' in route 'support-agent' are ignored "
                    "unless balance is weighted");
    assert_line(&d, "gateway.yaml:18:15: warning: route 'short' envelope: the default "
                    "reserve_for_fallback_ms (5000) is not less than deadline_ms (3000); using "
                    "500");
    assert_int_equal(count(&d, true), 10);
    assert_int_equal(cfg->routes[1].envelope.reserve_for_fallback_ms, 500);
    assert_string_equal(cfg->admin_key, "short");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    /* The contract warning names exactly the missing capability. */
    cfg = load_ok("providers:\n"
                  "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k]}\n"
                  "targets:\n"
                  "  X: {provider: p, model: m, capabilities: [text, streaming]}\n"
                  "  P: {provider: p, model: m, capabilities: [tools]}\n"
                  "routes:\n"
                  "  Y: {requires: {capabilities: [tools]}, primary: [P], fallback: [X]}\n",
                  &d);
    assert_int_equal(d.n, 1);
    assert_line(&d, "gateway.yaml:7:67: warning: fallback target 'X' cannot satisfy route 'Y': "
                    "missing tools");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

static void test_disabled_and_weights(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok("providers:\n"
                  "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k], disabled: true}\n"
                  "targets:\n"
                  "  a: {provider: p, model: m}\n"
                  "  b: {provider: p, model: m, disabled: true}\n"
                  "routes:\n"
                  "  r: {primary: [a, b], balance: weighted, weights: {b: 0, a: 5}}\n",
                  &d);
    assert_line(&d, "gateway.yaml:7:3: warning: route 'r' has no enabled target: every request "
                    "to it will fail");
    assert_int_equal(cfg->routes[0].primary.weights[0], 5);
    assert_int_equal(cfg->routes[0].primary.weights[1], 0);
    assert_true(cfg->targets[1].disabled);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    load_bad("providers:\n"
             "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k]}\n"
             "targets:\n"
             "  a: {provider: p, model: m}\n"
             "routes:\n"
             "  r: {primary: [a], balance: weighted, weights: {a: 0}}\n",
             &d);
    assert_line(&d, "gateway.yaml:6:40: error: 'weights' in route 'r' leave no primary target "
                    "with a weight above 0");
    cfg_diags_cleanup(&d);
}

/* ---- aliases and hostile input -------------------------------------------------------- */

static void test_aliases(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok("providers:\n"
                  "  p: {kind: openai, base_url: \"https://x/v1\", keys: [k]}\n"
                  "targets:\n"
                  "  t: {provider: p, model: m}\n"
                  "routes:\n"
                  "  a: {primary: [t], envelope: &env {deadline_ms: 9000, max_attempts: 2}}\n"
                  "  b: {primary: [t], envelope: *env}\n",
                  &d);
    assert_int_equal(cfg->routes[1].envelope.deadline_ms, 9000);
    assert_int_equal(cfg->routes[1].envelope.max_attempts, 2);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    load_bad(BASE "workers: *nope\n", &d);
    assert_int_equal(d.n, 1);
    assert_line(&d, "gateway.yaml:7:10: error: unknown alias '*nope'");
    cfg_diags_cleanup(&d);
}

static void test_billion_laughs(void **state)
{
    struct cfg_diags d = {0};
    char yaml[4096];
    size_t o = 0;

    (void)state;
    o += (size_t)snprintf(yaml + o, sizeof(yaml) - o, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        o += (size_t)snprintf(yaml + o, sizeof(yaml) - o,
                              "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, "
                              "*a%d]\n",
                              i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
                              i - 1);
    load_bad(yaml, &d);
    assert_line(&d, "gateway.yaml:6:5: error: document too large: more than 1000000 nodes once "
                    "aliases are expanded");
    cfg_diags_cleanup(&d);
}

static void test_depth_and_diag_bounds(void **state)
{
    struct cfg_diags d = {0};
    char *yaml = malloc(100000);
    size_t o = 0;

    (void)state;
    assert_non_null(yaml);
    for (int i = 0; i < 100; i++)
        yaml[o++] = '[';
    yaml[o] = '\0';
    load_bad(yaml, &d);
    assert_line(&d, "gateway.yaml:1:65: error: nesting deeper than 64 levels");
    cfg_diags_cleanup(&d);

    /* 1000 unknown keys: the list stops at CFG__MAX_DIAGS with one closing line. */
    o = 0;
    for (int i = 0; i < 1000; i++)
        o += (size_t)snprintf(yaml + o, 100000 - o, "k%d: 1\n", i);
    load_bad(yaml, &d);
    assert_int_equal(d.n, 200);
    assert_string_equal(d.items[d.n - 1].message, "too many problems; stopping here");
    cfg_diags_cleanup(&d);
    free(yaml);
}

/* ---- snapshots ------------------------------------------------------------------------ */

static void test_refcount_and_lookups(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;
    const struct cfg_target *t;

    (void)state;
    setenv("TEST_CFG_KEY", "k", 1);
    cfg = load_ok(full_yaml, &d);
    assert_int_equal(atomic_load(&cfg->refs), 1);
    assert_ptr_equal(cfg_ref(cfg), cfg);
    assert_int_equal(atomic_load(&cfg->refs), 2);
    cfg_unref(cfg);
    assert_int_equal(atomic_load(&cfg->refs), 1);

    assert_ptr_equal(cfg_route_find(cfg, BSC_STR("weighted")), &cfg->routes[1]);
    assert_null(cfg_route_find(cfg, BSC_STR("weighte")));
    assert_null(cfg_route_find(cfg, BSC_STR("weightedd")));
    t = cfg_target_find(cfg, BSC_STR("claude@anthropic"));
    assert_ptr_equal(t, &cfg->targets[2]);
    assert_ptr_equal(t->provider, cfg_provider_find(cfg, BSC_STR("anthropic")));
    assert_null(cfg_target_find(cfg, BSC_STR("")));
    assert_null(cfg_provider_find(cfg, BSC_STR("openai")));
    assert_string_equal(cfg_provider_kind_name(CFG_PROV_OPENAI_COMPATIBLE), "openai_compatible");
    assert_string_equal(cfg_provider_kind_name(CFG_PROV_AZURE), "azure");
    assert_string_equal(cfg_balance_name(CFG_BALANCE_LEAST_LATENCY), "least_latency");
    cfg_unref(cfg);
    cfg_unref(NULL);
    cfg_diags_cleanup(&d);
    unsetenv("TEST_CFG_KEY");
}

struct reader {
    atomic_bool *stop;
    unsigned long reads, wrong; /* checked by the main thread: cmocka asserts are not
                                   thread-safe */
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;

    while (!atomic_load(r->stop)) {
        struct cfg *c = cfg_current_get();

        /* Touch the snapshot: under ASan a use after free would abort here. */
        if (c) {
            if (c->n_routes != 1 || strcmp(c->routes[0].id, "r") != 0)
                r->wrong++;
            r->reads++;
        }
        cfg_unref(c);
    }
    return NULL;
}

static struct cfg *load_base(void)
{
    struct cfg_diags d = {0};
    struct cfg *cfg = load_ok(BASE, &d);

    cfg_diags_cleanup(&d);
    return cfg;
}

static void test_current_swap(void **state)
{
    atomic_bool stop = false;
    struct reader readers[3];
    pthread_t th[3];
    struct cfg *a, *b, *held;

    (void)state;
    assert_null(cfg_current_get());
    a = load_base();
    b = load_base();
    cfg_current_swap(a); /* takes a's ref */
    held = cfg_current_get();
    assert_ptr_equal(held, a);
    assert_int_equal(atomic_load(&a->refs), 3); /* the current's, this thread's cache's, held */
    cfg_current_swap(b); /* drops the current's ref on a and this thread's; <held> keeps it */
    assert_int_equal(atomic_load(&held->refs), 1);
    assert_string_equal(held->routes[0].id, "r");
    cfg_unref(held);

    /* Readers get and drop refs while the main thread swaps in fresh snapshots. */
    for (int i = 0; i < 3; i++) {
        readers[i] = (struct reader){.stop = &stop};
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &readers[i]), 0);
    }
    for (int i = 0; i < 200; i++)
        cfg_current_swap(load_base());
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(readers[i].wrong, 0);
    }
    cfg_current_swap(NULL);
    assert_null(cfg_current_get());
}

/* A thread's cached snapshot: it is the current one until a swap, the first get after the
 * swap returns the new one and drops the old ref, and the thread's exit drops its ref. */
struct cached_reader {
    pthread_barrier_t *step;
    struct cfg *first, *second; /* what each get returned (compared only, not dereferenced) */
};

static void *cached_reader_main(void *arg)
{
    struct cached_reader *r = arg;
    struct cfg *c = cfg_current_get();

    r->first = c;
    cfg_unref(c);
    pthread_barrier_wait(r->step); /* the main thread counts refs, swaps */
    pthread_barrier_wait(r->step);
    c = cfg_current_get();
    r->second = c;
    cfg_unref(c);
    return NULL;
}

static void test_current_cached(void **state)
{
    pthread_barrier_t step;
    struct cached_reader r = {.step = &step};
    struct cfg *a = load_base(), *b = load_base(), *spy;
    pthread_t th;

    (void)state;
    assert_int_equal(pthread_barrier_init(&step, NULL, 2), 0);
    cfg_current_swap(a);
    spy = cfg_ref(a);
    assert_int_equal(pthread_create(&th, NULL, cached_reader_main, &r), 0);
    pthread_barrier_wait(&step);
    assert_ptr_equal(r.first, a);
    assert_int_equal(atomic_load(&a->refs), 3); /* the current's, spy, the reader's cache */
    cfg_current_swap(b);
    assert_int_equal(atomic_load(&a->refs), 2); /* a reload never frees a held snapshot */
    pthread_barrier_wait(&step);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_ptr_equal(r.second, b);              /* the swap was seen */
    assert_int_equal(atomic_load(&a->refs), 1); /* the reader dropped its old cache... */
    assert_int_equal(atomic_load(&b->refs), 1); /* ...and its new one when it exited */
    cfg_unref(spy);
    cfg_current_swap(NULL);
    pthread_barrier_destroy(&step);
}

/* ---- files ---------------------------------------------------------------------------- */

static void test_load_file(void **state)
{
    char path[] = "/tmp/bascule-test-config-XXXXXX";
    struct cfg_diags d = {0};
    struct cfg *cfg;
    int fd;
    FILE *f;

    (void)state;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(BASE "workers: lots\n", f);
    fclose(f);
    assert_int_equal(cfg_load(path, &cfg, &d), BSC_EINVAL);
    assert_null(cfg);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.items[0].file, path);
    assert_int_equal(d.items[0].line, 7);
    assert_int_equal(d.items[0].column, 10);
    cfg_diags_cleanup(&d);
    unlink(path);

    assert_int_equal(cfg_load("/nonexistent/bascule.yaml", &cfg, &d), BSC_EIO);
    assert_null(cfg);
    assert_line(&d, "/nonexistent/bascule.yaml: error: cannot open: No such file or directory");
    cfg_diags_cleanup(&d);
}

/* Cache prices: set ones are kept; unset ones are Anthropic's multipliers for kind anthropic
 * and the input price (with a warning naming the target) for the other kinds. */
static void test_cache_price_defaults(void **state)
{
    static const char yaml[] =
        "providers:\n"
        "  ant: { kind: anthropic, base_url: \"http://127.0.0.1:9/v1\", keys: [k] }\n"
        "  oai: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [k] }\n"
        "targets:\n"
        "  a: { provider: ant, model: m, price: { input_per_mtok: 3, output_per_mtok: 15 } }\n"
        "  o: { provider: oai, model: m, price: { input_per_mtok: 2, output_per_mtok: 8 } }\n"
        "  c:\n"
        "    provider: oai\n"
        "    model: m\n"
        "    price: { input_per_mtok: 2, cached_input_per_mtok: 0.5, cache_write_per_mtok: 2.5,\n"
        "             cache_write_1h_per_mtok: 4 }\n"
        "  free: { provider: oai, model: m }\n"
        "routes:\n"
        "  r: { primary: [a, o, c, free] }\n";
    struct cfg_diags d = {0};
    struct cfg *cfg;
    const struct cfg_price *p;

    (void)state;
    cfg = load_ok(yaml, &d);
    p = &cfg_target_find(cfg, BSC_STR("a"))->price;
    assert_true(fabs(p->cached_input_per_mtok - 0.3) < 1e-12);
    assert_true(fabs(p->cache_write_per_mtok - 3.75) < 1e-12);
    assert_true(fabs(p->cache_write_1h_per_mtok - 6.0) < 1e-12);
    p = &cfg_target_find(cfg, BSC_STR("o"))->price;
    assert_true(p->cached_input_per_mtok == 2.0 && p->cache_write_per_mtok == 2.0 &&
                p->cache_write_1h_per_mtok == 2.0);
    p = &cfg_target_find(cfg, BSC_STR("c"))->price;
    assert_true(p->cached_input_per_mtok == 0.5 && p->cache_write_per_mtok == 2.5 &&
                p->cache_write_1h_per_mtok == 4.0);
    p = &cfg_target_find(cfg, BSC_STR("free"))->price;
    assert_true(p->cached_input_per_mtok == 0.0 && p->cache_write_per_mtok == 0.0);
    assert_line(&d, "gateway.yaml:6:3: warning: target 'o' has no 'price.cached_input_per_mtok': "
                    "prompt tokens its provider serves from cache are priced at input_per_mtok, "
                    "which may overcharge");
    assert_int_equal(count(&d, true), 1); /* not for a, c (set) or free (no price) */
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* examples/production.yaml validates with its environment set. */
static void test_production_example(void **state)
{
    static const char *const paths[] = {"examples/production.yaml",
                                        "../examples/production.yaml",
                                        "../../examples/production.yaml"};
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    enum bsc_err err = BSC_EIO;
    const struct cfg_route *r;

    (void)state;
    setenv("OPENAI_API_KEY", "sk-test-openai", 1);
    setenv("ANTHROPIC_API_KEY", "sk-ant-test", 1);
    setenv("GEMINI_API_KEY", "gm-test", 1);
    setenv("AZURE_OPENAI_API_KEY", "az-test", 1);
    setenv("AZURE_OPENAI_RESOURCE", "contoso", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "aws-test-secret", 1);
    setenv("GOOGLE_CLOUD_PROJECT", "test-project", 1);
    setenv("GOOGLE_APPLICATION_CREDENTIALS", "/keys/sa.json", 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("OPENAI_API_KEY_2");
    unsetenv("BASCULE_ADMIN_KEY");
    unsetenv("BASCULE_LISTEN");
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && err == BSC_EIO; i++) {
        cfg_diags_cleanup(&d);
        err = cfg_load(paths[i], &cfg, &d);
    }
    if (err) {
        char *text = printed(&d);

        print_error("%s", text);
        free(text);
    }
    assert_int_equal(err, BSC_OK);
    assert_int_equal(d.n, 0); /* not even a warning */
    assert_int_equal(cfg->n_providers, 6);
    assert_string_equal(cfg_provider_find(cfg, BSC_STR("azure-eu"))->base_url,
                        "https://contoso.openai.azure.com/openai");
    assert_string_equal(cfg_provider_find(cfg, BSC_STR("openai"))->keys[0], "sk-test-openai");
    assert_int_equal(cfg_provider_find(cfg, BSC_STR("openai"))->n_keys, 1);
    assert_int_equal(cfg->store.kind, CFG_STORE_SQLITE);
    r = cfg_route_find(cfg, BSC_STR("support-agent"));
    assert_non_null(r);
    assert_true(r->primary.n == 1 && r->equivalent.n == 1 && r->fallback.n == 2);
    assert_string_equal(r->equivalent.targets[0]->provider->id, "azure-eu");
    assert_string_equal(cfg_provider_find(cfg, BSC_STR("bedrock-us"))->base_url,
                        "https://bedrock-runtime.us-east-1.amazonaws.com");
    assert_null(cfg_provider_find(cfg, BSC_STR("bedrock-us"))->aws.session_token);
    r = cfg_route_find(cfg, BSC_STR("claude"));
    assert_true(r->primary.n == 1 && r->equivalent.n == 2);
    assert_string_equal(r->equivalent.targets[0]->provider->id, "bedrock-us");
    assert_string_equal(r->equivalent.targets[1]->provider->id, "vertex-us");
    r = cfg_route_find(cfg, BSC_STR("extract-json"));
    assert_int_equal(r->balance, CFG_BALANCE_WEIGHTED);
    assert_int_equal(r->primary.weights[0], 3);
    assert_int_equal(r->envelope.on_stream_failure, CFG_SF_BUFFER);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* ---- secrets ------------------------------------------------------------------------- */

/* True when no diagnostic of <d> holds <secret>. */
static bool never_quoted(const struct cfg_diags *d, const char *secret)
{
    char *text = printed(d);
    bool clean = !strstr(text, secret);

    if (!clean)
        print_error("a diagnostic quotes the secret %s:\n%s", secret, text);
    free(text);
    return clean;
}

/* A secret written where a list or a map belongs is reported, never quoted. */
static void test_secrets_never_quoted(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad("admin: sk-admin-secret-0001\n"
             "providers:\n"
             "  p:\n"
             "    kind: openai\n"
             "    base_url: https://x/v1\n"
             "    keys: sk-live-secret-0002\n"
             "    headers: \"Authorization: Bearer sk-live-secret-0003\"\n"
             "  q:\n"
             "    kind: openai\n"
             "    base_url: https://x/v1\n"
             "    keys: [[sk-live-secret-0004]]\n"
             "    api_key: sk-live-secret-0005\n"
             "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n",
             &d);
    assert_line(&d, "gateway.yaml:1:8: error: admin: expected a map, got a string (not shown)");
    assert_line(&d, "gateway.yaml:6:11: error: 'keys' in provider 'p': expected a list of "
                    "strings, got a string (not shown)");
    assert_line(&d, "gateway.yaml:7:14: error: 'headers' in provider 'p': expected a map of "
                    "header names to values, got a string (not shown)");
    assert_line(&d, "gateway.yaml:11:12: error: 'keys' in provider 'q': expected a list of "
                    "strings, got a list");
    assert_true(never_quoted(&d, "secret-000"));
    cfg_diags_cleanup(&d);

    /* admin.key given a number's place: still not quoted. */
    load_bad("admin: { key: [sk-admin-secret-0006] }\n" BASE, &d);
    assert_line(&d, "gateway.yaml:1:15: error: 'key' in admin: expected a string, got a list");
    assert_true(never_quoted(&d, "secret-000"));
    cfg_diags_cleanup(&d);
}

/* The snapshot's secret set: keys, the admin key, auth header values (and the credential
 * after "Bearer "); short values and ordinary headers stay out. */
static void test_secret_set(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;
    char text[256];

    (void)state;
    cfg = load_ok("admin: { key: admin-key-0123456789abcdef }\n"
                  "providers:\n"
                  "  p:\n"
                  "    kind: openai\n"
                  "    base_url: https://x/v1\n"
                  "    keys: [sk-live-key-0001, short]\n"
                  "    headers: { Authorization: \"Bearer tok-hdr-0002\", X-Team: team-name-long,"
                  " x-goog-api-key: goog-key-0003 }\n"
                  "targets:\n  t: {provider: p, model: m}\nroutes:\n  r: {primary: [t]}\n",
                  &d);
    assert_non_null(cfg->secrets);
    /* admin, sk-live, "Bearer tok-hdr-0002", tok-hdr-0002, goog-key. */
    assert_int_equal(bsc_redact_count(cfg->secrets), 5);
    snprintf(text, sizeof(text), "%s",
             "bad key sk-live-key-0001; admin admin-key-0123456789abcdef; Bearer tok-hdr-0002; "
             "goog-key-0003; team-name-long; short");
    assert_int_equal(bsc_redact_cstr(cfg->secrets, text, sizeof(text)), 4);
    assert_string_equal(text, "bad key [REDACTED]; admin [REDACTED]; [REDACTED]; [REDACTED]; "
                              "team-name-long; short");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* A Gemini model id goes into the URL path: "/", "..", "?", "#", "%", blanks and controls
 * are refused at load, with the place of the value; a "models/" collection is fine. */
static void test_gemini_model_ids(void **state)
{
    static const char *const bad[] = {
        "../../admin?x=1#f", "gemini..pro", "models/../x", "a/b/c", "gem ini", "gem%2e",
        "gem?x", "gem#x", "/gemini", "models/", ".", "gemini\\t1", "9/x",
    };
    static const char *const good[] = {"gemini-2.5-flash", "models/gemini-2.5-pro",
                                       "tunedModels/my_model.v1", "text-embedding-004"};
    struct cfg_diags d = {0};
    struct cfg *cfg;
    char yaml[512];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(yaml, sizeof(yaml),
                 "providers:\n  g: {kind: gemini, base_url: \"https://g/v1beta\", keys: [k]}\n"
                 "targets:\n  t:\n    provider: g\n    model: \"%s\"\n"
                 "routes:\n  r: {primary: [t]}\n",
                 bad[i]);
        load_bad(yaml, &d);
        assert_int_equal(count(&d, false), 1);
        assert_int_equal(d.items[0].line, 6);
        assert_int_equal(d.items[0].column, 12);
        if (!strstr(d.items[0].message, "is not a valid gemini model id"))
            print_error("%s: %s\n", bad[i], d.items[0].message);
        assert_non_null(strstr(d.items[0].message, "is not a valid gemini model id"));
        assert_non_null(strstr(d.items[0].message, "target 't'"));
        cfg_diags_cleanup(&d);
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(yaml, sizeof(yaml),
                 "providers:\n  g: {kind: gemini, base_url: \"https://g/v1beta\", keys: [k]}\n"
                 "targets:\n  t: {provider: g, model: \"%s\"}\nroutes:\n  r: {primary: [t]}\n",
                 good[i]);
        cfg = load_ok(yaml, &d);
        cfg_unref(cfg);
        cfg_diags_cleanup(&d);
    }
    /* The whole message, once. */
    load_bad("providers:\n  g: {kind: gemini, base_url: \"https://g/v1beta\", keys: [k]}\n"
             "targets:\n  t: {provider: g, model: \"../../admin?x=1#f\"}\n"
             "routes:\n  r: {primary: [t]}\n",
             &d);
    assert_line(&d, "gateway.yaml:4:27: error: 'model' in target 't': '../../admin?x=1#f' is not "
                    "a valid gemini model id: only letters, digits, '-', '_' and '.' are allowed "
                    "(and one collection prefix such as 'models/')");
    cfg_diags_cleanup(&d);
    /* Other kinds send the model in the body: any name is fine there. */
    cfg = load_ok("providers:\n  p: {kind: openai, base_url: \"https://x/v1\", keys: [k]}\n"
                  "targets:\n  t: {provider: p, model: \"org/model..v1 ?\"}\n"
                  "routes:\n  r: {primary: [t]}\n",
                  &d);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* Azure percent-encodes the deployment, so only the dot segments are refused. */
static void test_azure_deployment_dots(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    load_bad("providers:\n  a: {kind: azure, base_url: \"https://a/openai\", keys: [k], "
             "api_version: v}\n"
             "targets:\n  t: {provider: a, model: m, deployment: \"..\"}\n"
             "routes:\n  r: {primary: [t]}\n",
             &d);
    assert_line(&d, "gateway.yaml:4:42: error: 'deployment' in target 't': '..' is not a valid "
                    "azure deployment name: '.' and '..' would change the URL path");
    cfg_diags_cleanup(&d);
    cfg = load_ok("providers:\n  a: {kind: azure, base_url: \"https://a/openai\", keys: [k], "
                  "api_version: v}\n"
                  "targets:\n  t: {provider: a, model: m, deployment: \"my dep/1?\"}\n"
                  "routes:\n  r: {primary: [t]}\n",
                  &d);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* debug.core_dumps: off by default. */
static void test_core_dumps_flag(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;

    (void)state;
    cfg = load_ok(BASE, &d);
    assert_false(cfg->core_dumps);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = load_ok("debug: { core_dumps: true }\n" BASE, &d);
    assert_true(cfg->core_dumps);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

/* cors.allowed_origins and allowed_hosts: lists of checked strings, empty by default. */
/* ---- clients, admin.listen, metrics.key ------------------------------------------------ */

static void test_clients(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg;
    const struct cfg_client *c;
    char text[128] = "upstream said: team-key-0123456789 is wrong";

    (void)state;
    setenv("TEST_CFG_TEAM_KEY", "team-key-0123456789", 1);
    cfg = load_ok(BASE "  r2: {primary: [t]}\n"
                       "admin: { key: admin-key-0123456789, listen: \"127.0.0.1:9901\" }\n"
                       "metrics: { key: metrics-key-0123456789 }\n"
                       "clients:\n"
                       "  support-team:\n"
                       "    key: \"${TEST_CFG_TEAM_KEY}\"\n"
                       "    routes: [r]\n"
                       "    rpm: 600\n"
                       "    tpm: 200000\n"
                       "    max_concurrency: 20\n"
                       "    budget: { usd: 50.0, period: day }\n"
                       "    feedback: trusted\n"
                       "  ops: { key: ops-key-0123456789, routes: [\"*\"] }\n"
                       "feedback: { half_life_ms: 30000, max_client_verdicts: 3 }\n",
                  &d);
    assert_int_equal(cfg->n_clients, 2);
    assert_string_equal(cfg->admin_listen_host, "127.0.0.1");
    assert_int_equal(cfg->admin_listen_port, 9901);
    assert_string_equal(cfg->metrics_key, "metrics-key-0123456789");
    c = cfg_client_by_key(cfg, BSC_STR("team-key-0123456789"));
    assert_non_null(c);
    assert_string_equal(c->id, "support-team");
    assert_null(c->key); /* only the hash is kept */
    assert_int_equal(c->rpm, 600);
    assert_int_equal(c->tpm, 200000);
    assert_int_equal(c->max_concurrency, 20);
    assert_true(c->budget.usd == 50.0);
    assert_int_equal(c->budget.period, CFG_PERIOD_DAY);
    assert_int_equal(c->feedback, CFG_FEEDBACK_TRUSTED);
    assert_int_equal(cfg->feedback.half_life_ms, 30000);
    assert_int_equal(cfg->feedback.max_client_verdicts, 3);
    assert_true(cfg_client_allows(c, cfg_route_find(cfg, BSC_STR("r"))));
    assert_false(cfg_client_allows(c, cfg_route_find(cfg, BSC_STR("r2"))));
    c = cfg_client_by_key(cfg, BSC_STR("ops-key-0123456789"));
    assert_non_null(c);
    assert_true(c->budget.usd < 0);
    assert_int_equal(c->feedback, CFG_FEEDBACK_OWN); /* the default */
    assert_true(cfg_client_allows(c, cfg_route_find(cfg, BSC_STR("r2"))));
    assert_null(cfg_client_by_key(cfg, BSC_STR("team-key-012345678")));
    assert_null(cfg_client_by_key(cfg, BSC_STR("")));
    assert_ptr_equal(cfg_client_find(cfg, BSC_STR("ops")), c);
    /* client keys are scrubbed from upstream text like provider keys */
    bsc_redact_cstr(cfg->secrets, text, sizeof(text));
    assert_string_equal(text, "upstream said: " BSC_REDACT_MARK " is wrong");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);

    cfg = load_ok(BASE, &d); /* absent: an open gateway */
    assert_int_equal(cfg->n_clients, 0);
    assert_null(cfg->admin_listen_host);
    assert_string_equal(cfg->metrics_key, "");
    assert_int_equal(cfg->feedback.half_life_ms, 600000); /* defaults */
    assert_int_equal(cfg->feedback.max_client_verdicts, 10);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

static void test_clients_errors(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    setenv("TEST_CFG_EMPTY", "", 1);
    load_bad(BASE "clients:\n"                                             /* 7 */
                  "  a: {key: same-key-0123456789, routes: [r]}\n"         /* 8 */
                  "  b: {key: same-key-0123456789, routes: [r, nope]}\n"   /* 9 */
                  "  c: {key: \"${TEST_CFG_EMPTY}\", routes: [r]}\n"       /* 10 */
                  "  d: {key: d-key-0123456789, routes: [r], rmp: 5}\n"    /* 11 */
                  "  e: {routes: [r]}\n"                                   /* 12 */
                  "  f: {key: f-key-0123456789, routes: [r],\n"            /* 13 */
                  "      budget: {usd: 5, period: week}}\n"                /* 14 */
                  "  bad id: {key: g-key-0123456789, routes: [r]}\n"       /* 15 */
                  "  h: {key: h-key-0123456789, routes: [r], feedback: all}\n" /* 16 */
                  "admin: {listen: \"127.0.0.1:8080\"}\n"                  /* 17 */
                  "feedback: {half_life_ms: 5, max_client_verdicts: 0}\n",  /* 18 */
             &d);
    assert_line(&d, "gateway.yaml:9:3: error: client 'b' has the same key as client 'a'");
    assert_line(&d, "gateway.yaml:9:45: error: 'routes' in client 'b': unknown route 'nope'");
    assert_line(&d, "gateway.yaml:10:12: error: 'key' in client 'c': must not be empty (an "
                    "unset variable?)");
    assert_line(&d, "gateway.yaml:11:43: error: unknown key 'rmp' in client 'd' (did you mean "
                    "'rpm'?)");
    assert_line(&d, "gateway.yaml:12:3: error: missing required key 'key' in client 'e'");
    assert_line(&d, "gateway.yaml:14:32: error: 'period' in client 'f' budget: unknown value "
                    "'week'; expected one of: day, month, total");
    assert_line(&d, "gateway.yaml:15:3: error: invalid client id 'bad id': ids are 1 to 64 "
                    "characters of A-Z a-z 0-9 . _ -");
    assert_line(&d, "gateway.yaml:17:17: error: 'listen' in admin: must differ from the "
                    "top-level 'listen' (127.0.0.1:8080)");
    assert_line(&d, "gateway.yaml:16:53: error: 'feedback' in client 'h': unknown value "
                    "'all'; expected one of: own, trusted, none");
    assert_line(&d, "gateway.yaml:18:26: error: 'half_life_ms' in feedback: must be between "
                    "100 and 2592000000, got '5'");
    assert_line(&d, "gateway.yaml:18:50: error: 'max_client_verdicts' in feedback: must be "
                    "between 1 and 100000, got '0'");
    assert_int_equal(count(&d, false), 11);
    cfg_diags_cleanup(&d);
}

/* An operator key equal to a client key would let that client act as the operator. */
static void test_operator_key_is_client_key(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    load_bad(BASE "clients:\n"                                             /* 7 */
                  "  a: {key: shared-key-0123456789, routes: [r]}\n"       /* 8 */
                  "admin: {key: shared-key-0123456789}\n"                  /* 9 */
                  "metrics:\n"                                             /* 10 */
                  "  key: shared-key-0123456789\n",                        /* 11 */
             &d);
    assert_line(&d, "gateway.yaml:9:14: error: 'key' in admin: is the key of client 'a' (line "
                    "8); the admin key must differ from every client key, or that client could "
                    "act as the operator");
    assert_line(&d, "gateway.yaml:11:8: error: 'key' in metrics: is the key of client 'a' "
                    "(line 8); the metrics key must differ from every client key, or that "
                    "client could act as the operator");
    assert_int_equal(count(&d, false), 2);
    cfg_diags_cleanup(&d);
}

static void test_cors_and_allowed_hosts(void **state)
{
    static const char *const bad[] = {
        "cors: { allowed_origins: [\"app.example.com\"] }\n",       /* no scheme */
        "cors: { allowed_origins: [\"https://app.example.com/\"] }\n", /* trailing slash */
        "cors: { allowed_origins: [\"ftp://app.example.com\"] }\n",
        "cors: { allowed_origins: \"*\" }\n",                       /* not a list */
        "cors: { origins: [\"*\"] }\n",                             /* unknown key */
        "allowed_hosts: [\"http://gw.internal\"]\n",
        "allowed_hosts: [\"gw internal\"]\n",
        "allowed_hosts: [\"\"]\n",
    };
    struct cfg_diags d = {0};
    struct cfg *cfg;
    char yaml[1024];

    (void)state;
    cfg = load_ok(BASE, &d);
    assert_int_equal(cfg->cors.allowed_origins.n, 0);
    assert_int_equal(cfg->allowed_hosts.n, 0);
    cfg_unref(cfg);
    cfg = load_ok(BASE "cors: { allowed_origins: [\"https://a.example\", \"*\"] }\n"
                       "allowed_hosts: [gw.internal, \"gw.internal:8080\", \"[::2]:80\"]\n",
                  &d);
    assert_int_equal(cfg->cors.allowed_origins.n, 2);
    assert_string_equal(cfg->cors.allowed_origins.items[0], "https://a.example");
    assert_string_equal(cfg->cors.allowed_origins.items[1], "*");
    assert_int_equal(cfg->allowed_hosts.n, 3);
    assert_string_equal(cfg->allowed_hosts.items[1], "gw.internal:8080");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad); i++) {
        snprintf(yaml, sizeof(yaml), BASE "%s", bad[i]);
        load_bad(yaml, &d);
        cfg_diags_cleanup(&d);
    }
}

/* A target's id is measured and checked for JSON escaping once, at load (the log lines
 * copy a plain one as it is): an id may hold '"' and '\\'. */
static void test_target_id_prechecked(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg = load_ok("providers:\n"
                              "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
                              "targets:\n"
                              "  gpt-4.1@p: {provider: p, model: m}\n"
                              "  'q\"x\\y': {provider: p, model: m}\n"
                              "routes:\n"
                              "  r: {primary: [gpt-4.1@p]}\n",
                              &d);

    (void)state;
    assert_int_equal(cfg->n_targets, 2);
    for (size_t i = 0; i < cfg->n_targets; i++) {
        const struct cfg_target *t = &cfg->targets[i];

        assert_int_equal(t->id_len, strlen(t->id));
        assert_int_equal(t->id_plain, strcmp(t->id, "gpt-4.1@p") == 0);
    }
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_config),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_nulls_keep_defaults),
        cmocka_unit_test(test_listen_forms),
        cmocka_unit_test(test_env_expansion),
        cmocka_unit_test(test_env_errors),
        cmocka_unit_test(test_env_not_in_keys),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_http_client_values),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_range_in_objects),
        cmocka_unit_test(test_bursts),
        cmocka_unit_test(test_bad_enums),
        cmocka_unit_test(test_missing_required),
        cmocka_unit_test(test_dangling_references),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_base_url),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_all_errors_reported),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_disabled_and_weights),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_depth_and_diag_bounds),
        cmocka_unit_test(test_refcount_and_lookups),
        cmocka_unit_test(test_current_swap),
        cmocka_unit_test(test_current_cached),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_production_example),
        cmocka_unit_test(test_cache_price_defaults),
        cmocka_unit_test(test_secrets_never_quoted),
        cmocka_unit_test(test_secret_set),
        cmocka_unit_test(test_gemini_model_ids),
        cmocka_unit_test(test_azure_deployment_dots),
        cmocka_unit_test(test_core_dumps_flag),
        cmocka_unit_test(test_cors_and_allowed_hosts),
        cmocka_unit_test(test_clients),
        cmocka_unit_test(test_clients_errors),
        cmocka_unit_test(test_operator_key_is_client_key),
        cmocka_unit_test(test_store_redis),
        cmocka_unit_test(test_target_id_prechecked),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
