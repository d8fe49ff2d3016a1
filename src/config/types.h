/* SPDX-License-Identifier: MIT */
/* types.h -- the types of a configuration snapshot (docs/configuration.md): the enums, the
 * structs of struct cfg and what it owns, the diagnostics of a load, the bounds written as
 * constants. Types only: no function is declared here and no header of a config function is
 * included, so that every file of src/config/ can include it without depending on any other
 * (config.h, the public header, adds the functions; docs/internals/config.md). */
#ifndef BSC_CONFIG_TYPES_H
#define BSC_CONFIG_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/checks.h"

enum cfg_provider_kind {
    CFG_PROV_OPENAI = 0,
    CFG_PROV_ANTHROPIC,
    CFG_PROV_GEMINI,
    CFG_PROV_DASHSCOPE,
    CFG_PROV_AZURE,
    CFG_PROV_OPENAI_COMPATIBLE,
    CFG_PROV_BEDROCK, /* AWS Bedrock Runtime: Converse / ConverseStream, SigV4 */
    CFG_PROV_VERTEX,  /* Google Vertex AI: Gemini and Claude publishers, OAuth bearer */
    CFG_PROV_COUNT
};

/* The error dialect of an openai_compatible provider (providers/openai_errors.c has one rule
 * table per name). AUTO picks it from the base_url's host; servers without a well-known
 * host (vLLM, Ollama) are reached only by naming them. */
#define CFG_PROFILES(X)                                                                      \
    X(AUTO, "auto")                                                                          \
    X(OPENAI, "openai")                                                                      \
    X(DEEPSEEK, "deepseek")                                                                  \
    X(MISTRAL, "mistral")                                                                    \
    X(GROQ, "groq")                                                                          \
    X(OPENROUTER, "openrouter")                                                              \
    X(VLLM, "vllm")                                                                          \
    X(OLLAMA, "ollama")                                                                      \
    X(DOUBAO, "doubao")                                                                      \
    X(ERNIE, "ernie")

enum cfg_profile {
#define X(NAME, name) CFG_PROFILE_##NAME,
    CFG_PROFILES(X)
#undef X
    CFG_PROFILE_COUNT
};

enum cfg_probe { CFG_PROBE_MODELS = 0, CFG_PROBE_COMPLETION, CFG_PROBE_NONE, CFG_PROBE_COUNT };

enum cfg_balance {
    CFG_BALANCE_PRIORITY = 0,
    CFG_BALANCE_WEIGHTED,
    CFG_BALANCE_LEAST_LATENCY,
    CFG_BALANCE_CHEAPEST,
    CFG_BALANCE_SCORE,
    CFG_BALANCE_COUNT
};

enum cfg_side_effects { CFG_SE_NONE = 0, CFG_SE_READ_ONLY, CFG_SE_WRITE_POSSIBLE, CFG_SE_COUNT };
enum cfg_stream_failure { CFG_SF_FAIL = 0, CFG_SF_BUFFER, CFG_SF_CONTINUE, CFG_SF_COUNT };
/* Which client carries http:// upstream requests (https:// is always libcurl). */
enum cfg_http_client { CFG_HTTP_CLIENT_CURL = 0, CFG_HTTP_CLIENT_BUILTIN, CFG_HTTP_CLIENT_COUNT };
enum cfg_store_kind { CFG_STORE_MEMORY = 0, CFG_STORE_SQLITE, CFG_STORE_REDIS, CFG_STORE_COUNT };
/* What a redis store does while Redis cannot be reached. */
enum cfg_store_unavail { CFG_STORE_LOCAL = 0, CFG_STORE_REJECT, CFG_STORE_UNAVAIL_COUNT };

/* routes.<r>.cache.mode, .scope; cache.store (router/cache_req.c, docs/internals/cache.md). */
enum cfg_cache_mode { CFG_CACHE_OFF = 0, CFG_CACHE_EXACT, CFG_CACHE_SEMANTIC, CFG_CACHE_MODE_COUNT };
enum cfg_cache_scope { CFG_CACHE_CLIENT = 0, CFG_CACHE_ROUTE, CFG_CACHE_SCOPE_COUNT };
enum cfg_cache_store { CFG_CACHE_MEMORY = 0, CFG_CACHE_REDIS, CFG_CACHE_STORE_COUNT };

/* Capability bits, for targets' `capabilities` and routes' `requires.capabilities`. */
enum cfg_cap {
    CFG_CAP_TEXT = 1u << 0,
    CFG_CAP_VISION = 1u << 1,
    CFG_CAP_STREAMING = 1u << 2,
    CFG_CAP_TOOLS = 1u << 3,
    CFG_CAP_PARALLEL_TOOL_CALLS = 1u << 4,
    CFG_CAP_JSON_SCHEMA = 1u << 5,
    CFG_CAP_JSON_OBJECT = 1u << 6,
    CFG_CAP_EMBEDDINGS = 1u << 7,
    CFG_CAP_PREFILL = 1u << 8 /* takes a trailing assistant message as the answer's start */
};

/* Breaker dimensions for `breaker.key`. */
enum cfg_breaker_dim {
    CFG_BRK_PROVIDER = 1u << 0,
    CFG_BRK_MODEL = 1u << 1,
    CFG_BRK_REGION = 1u << 2,
    CFG_BRK_DEPLOYMENT = 1u << 3,
    CFG_BRK_KEY = 1u << 4
};

/* `breaker.mode`: closed/open/half-open, or the SRE book's client-side throttling. */
enum cfg_breaker_mode { CFG_BRK_MODE_CIRCUIT = 0, CFG_BRK_MODE_ADAPTIVE, CFG_BRK_MODE_COUNT };

struct lim_set; /* limits/limits.h */

struct cfg_header {
    char *name;  /* owned */
    char *value; /* owned */
};

struct cfg_health {
    uint32_t interval_ms; /* default 30000 */
    enum cfg_probe probe; /* default models */
    uint32_t key_reverify_ms; /* default 30000; 0 = a refused key rests its whole cooldown */
};

struct cfg_breaker {
    uint32_t key_dims; /* enum cfg_breaker_dim bits; default provider|model|region|key */
    uint32_t window_ms;          /* 30000 */
    uint32_t min_requests;       /* 20 */
    double failure_rate;         /* 0.5, in (0, 1] */
    uint32_t consecutive_failures; /* 5 */
    uint32_t open_ms;            /* 60000: the first open time */
    uint32_t half_open_probes;   /* 1 */
    uint32_t success_threshold;  /* 3 */
    uint32_t ramp_ms;            /* 30000 */
    double open_backoff;         /* 2: each opening without a recovery multiplies open_ms */
    uint32_t max_open_ms;        /* 300000: the longest open time (never below open_ms) */
    bool panic;                  /* true: when every candidate is open, probe the oldest */
    enum cfg_breaker_mode mode;  /* circuit */
    double adaptive_k;           /* 2: adaptive mode's K (accepts are worth K requests) */
};

/* kind bedrock: the AWS credentials that sign its requests (SigV4). Resolved at load: the
 * `aws:` block, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the
 * shared credentials file's profile (docs/configuration.md "bedrock"). All owned. */
struct cfg_aws {
    char *access_key_id;     /* NULL when none was found */
    char *secret_access_key;
    char *session_token;     /* NULL when the credentials are long-lived */
    char *profile;           /* the shared-file profile asked for; NULL = AWS_PROFILE/default */
};

/* kind vertex: where its OAuth bearer comes from. All owned; NULL when unset. */
struct cfg_vertex {
    char *credentials_file; /* a service-account JSON (its key signs the JWT grant) */
    char *token_file;       /* or: a file holding a ready access token (a sidecar refreshes it) */
    char *token_url;        /* the token endpoint; default the service account's token_uri */
};

struct cfg_provider {
    char *id; /* owned; the map key */
    struct hs_provider *hs; /* set by hstate_sync: its health object (health/hstate.h) */
    struct lim_set *lim;    /* set by lim_reg_sync: its limits (limits/limits.h), or NULL */
    enum cfg_provider_kind kind;
    enum cfg_profile profile; /* openai_compatible only; AUTO: from the base_url's host */
    char *base_url; /* owned; no trailing slash */
    char **keys;    /* owned array of owned strings; may be empty (n_keys == 0) */
    size_t n_keys;
    char *region;      /* owned; NULL when unset; bedrock and vertex: required */
    char *project;     /* owned; vertex only: the Google Cloud project */
    struct cfg_aws aws;       /* bedrock only */
    struct cfg_vertex vertex; /* vertex only */
    char *api_version; /* owned; azure only; NULL when unset */
    struct cfg_header *headers; /* owned */
    size_t n_headers;
    uint32_t connect_timeout_ms; /* 2000 */
    char *tls_ca_file; /* owned; tls.ca_file: PEM CAs trusted instead of the system's; NULL */
    uint32_t max_concurrency;    /* 256 */
    bool max_concurrency_default; /* not configured: 256, each process's own (not shared) */
    uint32_t rpm;                /* 0 = unlimited */
    uint32_t tpm;                /* 0 = unlimited */
    uint32_t rpm_burst, tpm_burst; /* 0 = the default, rpm / 12 (limits/limits.h lim_burst) */
    struct cfg_health health;
    bool disabled;
    bool has_breaker; /* an override of the top-level breaker */
    struct cfg_breaker breaker;
};

/* USD per million tokens. The cache prices are resolved at load (never < 0 after it): unset,
 * they are Anthropic's multipliers of input_per_mtok for kind anthropic (0.1x, 1.25x, 2x),
 * input_per_mtok for every other kind (docs/configuration.md "Cost"). */
struct cfg_price {
    double input_per_mtok;  /* USD per million input tokens; 0 when unknown */
    double output_per_mtok;
    double cached_input_per_mtok;   /* prompt tokens read from the provider's cache */
    double cache_write_per_mtok;    /* prompt tokens written to the cache (5-minute) */
    double cache_write_1h_per_mtok; /* ... written with a 1-hour lifetime */
};

/* Anthropic's published multipliers of the input price (docs/configuration.md "Cost"). */
#define CFG_ANTH_CACHE_READ_X     0.1
#define CFG_ANTH_CACHE_WRITE_X    1.25
#define CFG_ANTH_CACHE_WRITE_1H_X 2.0

struct cfg_target {
    char *id; /* owned; the map key, e.g. "gpt-4.1@openai-us" */
    /* Set with <id> at load: its length, and whether it holds no byte a JSON string escapes
     * (the log lines copy it as it is). id_len 0: not set, the lines measure <id>. */
    size_t id_len;
    bool id_plain;
    struct hs_target *hs; /* set by hstate_sync: its health object (health/hstate.h) */
    struct lim_set *lim;  /* set by lim_reg_sync: its limits (limits/limits.h), or NULL */
    struct cfg_provider *provider; /* borrowed from the same snapshot */
    char *model;      /* owned; the upstream model name */
    char *deployment; /* owned; NULL when unset */
    char *publisher;  /* owned; vertex only: "anthropic" or "google"; NULL = from the model */
    uint32_t capabilities; /* enum cfg_cap bits; default text|streaming */
    uint64_t context_window;    /* 0 = unknown */
    uint64_t max_output_tokens; /* 0 = unknown */
    struct cfg_price price;
    bool disabled;
    uint32_t canary_percent; /* 0..100, default 100 */
    uint32_t rpm, tpm, max_concurrency; /* 0 = unlimited */
    uint32_t rpm_burst, tpm_burst; /* 0 = the default, rpm / 12 (limits/limits.h lim_burst) */
    uint32_t queue_ms;       /* a wait for its capacity; 0 = none */
    bool has_breaker;
    struct cfg_breaker breaker;
    bool adaptive; /* true: 429s shrink its effective concurrency and rate (AIMD) */
};

struct cfg_requires {
    uint32_t capabilities;
    uint64_t context_window_min;
    uint64_t max_output_tokens_min;
};

struct cfg_envelope {
    uint32_t deadline_ms;              /* 30000 */
    uint32_t max_attempts;             /* 3 */
    uint32_t max_same_target_attempts; /* 2 */
    uint32_t reserve_for_fallback_ms;  /* 5000 */
    uint32_t max_added_latency_ms;     /* 10000 */
    double max_cost_usd;               /* < 0 when unset (null) */
    bool allow_equivalent_failover;    /* true */
    bool allow_cross_model_fallback;   /* false */
    enum cfg_side_effects side_effects;
    enum cfg_stream_failure on_stream_failure;
    uint32_t first_token_timeout_ms;   /* 0: off */
    uint32_t stream_idle_timeout_ms;   /* 0: deadline_ms */
};

struct cfg_tier {
    struct cfg_target **targets; /* owned array of borrowed targets */
    uint32_t *weights;           /* owned; parallel to targets; default 1 */
    size_t n;
    bool disabled; /* a kill switch for the whole tier */
};

struct js_regex;
struct cfg_route;

/* Conditions of a `select` rule (docs/configuration.md "select"): bit i is set when the rule
 * names condition i. A rule without any holds for every request. */
enum cfg_sel_cond {
    CFG_SEL_TOOLS = 1u << 0,
    CFG_SEL_IMAGES = 1u << 1,
    CFG_SEL_JSON_SCHEMA = 1u << 2,
    CFG_SEL_STREAM = 1u << 3,
    CFG_SEL_MIN_INPUT_TOKENS = 1u << 4,
    CFG_SEL_MAX_INPUT_TOKENS = 1u << 5,
    CFG_SEL_MIN_MESSAGES = 1u << 6,
    CFG_SEL_MAX_MESSAGES = 1u << 7,
    CFG_SEL_METADATA = 1u << 8,
    CFG_SEL_LAST_USER_MATCHES = 1u << 9
};

struct cfg_sel_meta {
    char *key;   /* owned; an HTTP token: the body's metadata member, X-Bascule-Meta-<key> */
    char *value; /* owned */
};

/* One rule of a route's `select`: when every condition in <conds> holds, <route> serves. */
struct cfg_sel_rule {
    uint32_t conds; /* enum cfg_sel_cond bits; 0 = always holds */
    bool tools, images, json_schema, stream;
    uint64_t min_input_tokens, max_input_tokens;
    uint32_t min_messages, max_messages;
    struct cfg_sel_meta *metadata; /* owned */
    size_t n_metadata;
    struct js_regex *last_user; /* owned; last_user_matches, compiled at load */
    const struct cfg_route *route; /* borrowed from the same snapshot; never a select route */
};

/* A route's context: what to do when a conversation outgrows a target's window
 * (router/trim.c, docs/internals/request-lifecycle.md). */
enum cfg_overflow { CFG_OVERFLOW_FAIL = 0, CFG_OVERFLOW_TRIM, CFG_OVERFLOW_COUNT };

struct cfg_context {
    enum cfg_overflow overflow; /* fail */
    uint32_t keep_last;         /* 4: the last messages never dropped */
};

/* shadow: mirrored copies of a route's requests to candidate targets (router/shadow.c,
 * docs/internals/shadow.md). The two atomics are the one mutable part of a snapshot: the
 * sampling counter and the copies in flight, shared by every worker using this snapshot. */
struct cfg_shadow {
    struct cfg_tier targets;   /* resolved; weights unused; n = 0: no shadow */
    uint32_t percent;          /* 100: the share of requests mirrored, 0..100 */
    uint32_t max_concurrency;  /* 16: copies of this route in flight at once */
    atomic_ullong seq;         /* requests seen, for sampling */
    atomic_uint inflight;      /* copies running */
};

/* score: the weights of balance: score (policy/score.h; docs/configuration.md). */
struct cfg_score {
    double contract;   /* 1.0: per unit of contract success rate */
    double task;       /* 1.0: per unit of task success rate */
    double latency_ms; /* 0.001: subtracted per millisecond of latency */
    double cost_usd;   /* 100: subtracted per US dollar of estimated cost */
};

/* cache: the route's response cache (router/cache_req.c, docs/internals/cache.md). */
struct cfg_route_cache {
    enum cfg_cache_mode mode;   /* off unless the route has cache: */
    uint32_t ttl_s;             /* 300 */
    enum cfg_cache_scope scope; /* client: answers are never shared between callers */
    uint64_t max_entry_bytes;   /* 1048576: a larger answer is not stored */
    /* Semantic mode (router/cache_sem.c): the target that embeds the last user message,
     * the least cosine similarity of a hit, the route's entry cap. */
    char *embeddings_target;    /* owned; required by mode: semantic */
    const struct cfg_target *embed_target; /* borrowed from cfg->targets; resolved at load */
    double min_similarity;      /* 0.95; in (0, 1] */
    uint32_t max_entries;       /* 10000 */
    uint32_t embed_timeout_ms;  /* 2000: a slower embedding is a miss */
};

struct cfg_route {
    char *id; /* owned; what clients send as "model" */
    struct cfg_sel_rule *select; /* owned; n_select > 0: a select route, without tiers */
    size_t n_select;
    struct cfg_requires requires;
    struct cfg_tier primary, equivalent, fallback;
    enum cfg_balance balance;
    struct cfg_envelope envelope;
    struct cfg_context context;
    struct cfg_shadow shadow;
    struct chk_set checks; /* output checks, patterns compiled at load (contract/checks.h) */
    struct cfg_score score;
    struct cfg_route_cache cache;
};

/* cache: the gateway's response cache storage. */
struct cfg_cache_all {
    double memory_mb;           /* 256: the in-memory LRU's bound, in MiB */
    enum cfg_cache_store store; /* memory */
};

struct cfg_limits {
    uint64_t max_body_bytes;    /* 8388608 */
    uint32_t max_header_bytes;  /* 65536 */
    uint32_t header_timeout_ms; /* 10000 */
    uint32_t idle_timeout_ms;   /* 75000 */
    uint32_t max_connections;   /* 20000 */
    uint32_t max_stream_buffer_bytes; /* 1048576: pending output before upstream pauses */
    uint32_t drain_timeout_ms;  /* 10000: SIGTERM waits this long for in-flight work */
    uint32_t body_timeout_ms;   /* 30000: whole request body within this, else 408 */
    uint32_t min_body_rate_bps; /* 500: a body slower on average (past a 2 s grace): 408; 0 off */
    uint32_t max_stream_ms;     /* 1800000: a relayed stream ends with an error event past it */
    uint64_t max_stream_bytes;  /* 1073741824: ... or past this many bytes sent */
};

/* A list of strings from the file: an owned array of owned, NUL-terminated strings. */
struct cfg_strs {
    char **items;
    size_t n;
};

/* cors: browser origins allowed to call the gateway (api/cors.c). */
struct cfg_cors {
    struct cfg_strs allowed_origins; /* "scheme://host[:port]" or "*"; empty = none */
};

struct cfg_log {
    int level;   /* enum bsc_log_level; default info */
    bool json;   /* format: json (default) | text */
    bool prompts;
};

struct cfg_retry {
    uint32_t base_ms;    /* 250 */
    uint32_t max_ms;     /* 4000 */
    double jitter;       /* 0.3, in [0, 1] */
    double budget_ratio; /* 0.2 */
    uint32_t budget_min_per_s; /* 10 */
    uint32_t budget_window_ms; /* 10000 */
};

struct cfg_store {
    enum cfg_store_kind kind;
    char *path; /* owned; sqlite */
    char *url;  /* owned; redis */
    char *prefix;          /* owned; redis: "bascule:" */
    uint32_t timeout_ms;   /* redis: 50, the longest a request waits on Redis */
    enum cfg_store_unavail on_unavailable; /* redis: local */
    uint32_t instances;    /* redis: 1, gateways sharing the Redis (local limits divide) */
    uint32_t lease_ttl_ms; /* redis: 10000, a concurrency lease not renewed this long expires */
};

/* responses: POST /v1/responses conversations kept for previous_response_id. */
/* feedback: how task verdicts age and weigh (health/verdicts.h). */
struct cfg_feedback {
    uint32_t half_life_ms;        /* 600000: a verdict's weight halves every this long */
    uint32_t max_client_verdicts; /* 10: one client's weight in a target's task rate */
};

struct cfg_responses {
    uint32_t ttl_s; /* how long a response is kept; 0 = never kept */
};

/* shadow: (top level) what every route's shadow copies may spend together. */
struct cfg_shadow_all {
    double max_usd_per_day; /* 0 = no cap; per gateway process and UTC day (router/shadow.c) */
};

/* telemetry: OpenTelemetry spans (src/telemetry/). No endpoint: nothing is recorded. */
struct cfg_telemetry {
    char *otlp_endpoint;      /* owned; "" = off; spans go to <it>/v1/traces */
    char *service_name;       /* owned; "bascule" */
    double sample;            /* 1.0: the fraction of traces recorded */
    struct cfg_header *headers; /* owned; sent with every export (auth of a collector) */
    size_t n_headers;
};

struct bsc_redact;

/* clients: virtual keys of the callers (config/clients.c, docs/configuration.md "clients").
 * Only the SHA-256 of each key is kept once the snapshot is built. */
#define CFG_CLIENT_ID_MAX 64 /* bytes of a client id: [A-Za-z0-9._-] */
enum cfg_period { CFG_PERIOD_DAY = 0, CFG_PERIOD_MONTH, CFG_PERIOD_TOTAL, CFG_PERIOD_COUNT };

/* clients.<id>.feedback: whose routing a client's task verdicts move
 * (docs/internals/feedback.md). */
enum cfg_feedback_mode {
    CFG_FEEDBACK_OWN = 0, /* only the ranking of this client's own requests (the default) */
    CFG_FEEDBACK_TRUSTED, /* the shared ranking: every client's requests */
    CFG_FEEDBACK_NONE,    /* none: POST /v1/feedback refuses its verdicts */
    CFG_FEEDBACK_COUNT
};

struct cfg_budget {
    double usd; /* < 0: no budget */
    enum cfg_period period; /* month */
};

/* One of `budgets: [{usd, period, route?}]` of a run-time key or team: with a route, it
 * bounds only the requests on that route (router/spend.c). */
struct cfg_budget_line {
    struct cfg_budget budget;
    const struct cfg_route *route; /* borrowed; NULL: every route */
};
#define CFG_BUDGETS_MAX 8 /* budgets of one key or team */
/* Bytes of a spend record's id: a client id, "team:<id>", or either with
 * "@<route>/<period>" -- which fits while the route's id is at most CFG_BUDGET_ROUTE_MAX. */
#define CFG_SPEND_ID_MAX 200
#define CFG_BUDGET_ROUTE_MAX 128

/* A team of run-time keys (the keyring's "teams", config/keyring.c): its allow-list
 * bounds its keys', its limits and budgets are shared by all of them. */
#define CFG_TEAM_ID_MAX 48 /* [A-Za-z0-9._-] */
struct cfg_team {
    char *id;                        /* owned */
    const struct cfg_route **routes; /* owned array of borrowed routes */
    size_t n_routes;
    bool all_routes;
    uint32_t rpm, tpm, max_concurrency; /* 0 = unlimited */
    struct lim_set *lim;                /* set by lim_reg_sync, or NULL */
    struct cfg_budget budget;           /* usd < 0: none */
    struct cfg_budget_line budgets[CFG_BUDGETS_MAX];
    size_t n_budgets;
};

struct cfg_client {
    char *id;                /* owned; the map key */
    uint8_t key_hash[32];    /* SHA-256 of the key */
    char *key;               /* owned plaintext while the snapshot is built; NULL after */
    const struct cfg_route **routes; /* owned array of borrowed routes */
    size_t n_routes;
    bool all_routes;         /* routes: ["*"] */
    uint32_t rpm, tpm, max_concurrency; /* 0 = unlimited (limits/limits.h) */
    uint32_t rpm_burst, tpm_burst; /* 0 = the default, rpm / 12 (limits/limits.h lim_burst) */
    uint32_t weight;         /* its share of a target's or provider's room when waiting; 1 */
    struct lim_set *lim;     /* set by lim_reg_sync, or NULL */
    struct cfg_budget budget;
    enum cfg_feedback_mode feedback; /* own */
    /* Keys made through the admin API (config/keyring.c; YAML clients leave these 0). */
    bool runtime;              /* from the keyring, not the file: read-only for nobody */
    uint8_t old_hash[32];      /* the secret before the last rotation ... */
    uint64_t old_until_ms;     /* ... accepted until this wall time (0: none) */
    uint64_t expires_ms;       /* wall time after which the key is refused (0: never) */
    const struct cfg_team *team; /* borrowed from the snapshot's teams, or NULL */
    struct cfg_budget_line budgets[CFG_BUDGETS_MAX]; /* `budgets` besides `budget` */
    size_t n_budgets;
};

/* admin.keys: operator keys with a role (config/admin_keys.c). admin.key is role admin. */
enum cfg_admin_role { CFG_ADMIN_ROLE_NONE = 0, CFG_ADMIN_ROLE_READ, CFG_ADMIN_ROLE_ADMIN };
#define CFG_ADMIN_ID_MAX 64
struct cfg_admin_key {
    char *id;  /* owned; named in the audit trail */
    char *key; /* owned; compared in constant time */
    enum cfg_admin_role role;
};

struct cfg {
    atomic_int refs; /* see cfg_ref/cfg_unref */
    /* Set once when the snapshot is built: a number no other snapshot of this process has
     * (never 0). It names the snapshot's strings, which never change while it lives: the
     * metrics registry's scoped updates (metrics/metrics.h) trust a label pointer seen
     * before under the same serial without reading its bytes again. */
    uint64_t serial;
    char *file; /* owned; the path it was loaded from */
    char *listen_host; /* owned; "127.0.0.1" or "::1" */
    uint16_t listen_port;
    uint32_t workers; /* 0 = one per core */
    struct cfg_log log;
    struct cfg_limits limits;
    char *admin_key; /* owned; empty string = admin API off */
    struct cfg_store store;
    struct cfg_cache_all cache;
    struct cfg_provider *providers; /* owned array */
    size_t n_providers;
    struct cfg_target *targets; /* owned array */
    size_t n_targets;
    struct cfg_route *routes; /* owned array, in file order */
    size_t n_routes;
    struct cfg_breaker breaker;
    struct cfg_retry retry;
    bool core_dumps; /* debug.core_dumps: false = the process is made non-dumpable */
    struct bsc_redact *secrets; /* owned; every key, the admin key and auth header values,
                                   to scrub from upstream text (core/redact.h) */
    struct cfg_cors cors;
    struct cfg_strs allowed_hosts; /* Host values accepted beyond loopback names; empty */
    struct cfg_responses responses;
    struct cfg_feedback feedback;
    struct cfg_shadow_all shadow;
    struct cfg_client *clients; /* owned array; see cfg_open() */
    size_t n_clients;
    bool keyring_used; /* the admin API has made a key (revoked ones count): not open */
    struct cfg_team *teams; /* owned array: the keyring's teams */
    size_t n_teams;
    char *admin_listen_host; /* owned; NULL: no admin listener (admin.listen) */
    uint16_t admin_listen_port;
    char *metrics_key; /* owned; "" = /metrics needs no key */
    struct cfg_admin_key *admin_keys; /* owned array (admin.keys) */
    size_t n_admin_keys;
    struct cfg_telemetry telemetry;
    enum cfg_http_client http_client; /* http_client; read at start only */
};

/* One problem found while loading. */
struct cfg_diag {
    char *file; /* owned */
    unsigned line, column; /* 1-based; 0 when not tied to a place */
    bool warning; /* a warning does not fail the load */
    char *message; /* owned */
};

struct cfg_diags {
    struct cfg_diag *items; /* owned */
    size_t n;
};

#endif
