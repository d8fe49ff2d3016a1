/* SPDX-License-Identifier: MIT */
/* validate.c -- the schema of docs/configuration.md as tables (one row per YAML key: type, range,
 * destination), the defaults, the custom decoders (listen, base_url, keys, headers, the
 * provider/target/route maps) and cfg__build, which runs both passes. References between
 * sections, breaker overrides and warnings are the second pass, in resolve.c. Adding a key
 * is one table row. See docs/internals/config.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/admin_keys.h"
#include "config/bursts.h"
#include "config/checks.h"
#include "config/clients.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/kinds.h"
#include "config/resolve.h"
#include "config/route_select.h"
#include "config/schema.h"
#include "config/secrets.h"
#include "config/snapshot.h"
#include "config/telemetry.h"
#include "config/types.h"
#include "config/validate.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/log.h"
#include "core/redact.h"
#include "core/str.h"

#define DAY_MS  86400000u
#define MAX_KEYS 64
#define MAX_HEADERS 64

/* ---- table rows ----------------------------------------------------------------------- */

#define FU32(S, key, m, lo_, hi_)                                                            \
    .name = key, .type = CFG__F_U32, .off = offsetof(S, m), .lo = (lo_), .hi = (hi_)
#define FU64(S, key, m, lo_, hi_)                                                            \
    .name = key, .type = CFG__F_U64, .off = offsetof(S, m), .lo = (lo_), .hi = (hi_)
#define FDBL(S, key, m, lo_, hi_, open_)                                                     \
    .name = key, .type = CFG__F_DBL, .off = offsetof(S, m), .dlo = (lo_), .dhi = (hi_),      \
    .lo_open = (open_)
#define FBOOL(S, key, m) .name = key, .type = CFG__F_BOOL, .off = offsetof(S, m)
#define FSTR(S, key, m)  .name = key, .type = CFG__F_STR, .off = offsetof(S, m)
#define FENUM(S, key, m, names_)                                                             \
    .name = key, .type = CFG__F_ENUM, .off = offsetof(S, m), .names = (names_),              \
    .n_names = BSC_ARRAY_LEN(names_)
#define FBITS(S, key, m, names_)                                                             \
    .name = key, .type = CFG__F_BITS, .off = offsetof(S, m), .names = (names_),              \
    .n_names = BSC_ARRAY_LEN(names_)
#define FMAP(S, key, m, sub_, check_)                                                        \
    .name = key, .type = CFG__F_MAP, .off = offsetof(S, m), .sub = (sub_),                   \
    .n_sub = BSC_ARRAY_LEN(sub_), .check = (check_)
/* A nested YAML map whose keys land in the same struct (admin.key -> cfg.admin_key). */
#define FMAP_FLAT(key, sub_, check_)                                                         \
    .name = key, .type = CFG__F_MAP, .off = 0, .sub = (sub_), .n_sub = BSC_ARRAY_LEN(sub_),  \
    .check = (check_)
#define FFN(key, fn_) .name = key, .type = CFG__F_FN, .fn = (fn_)

/* ---- names, in enum order ------------------------------------------------------------- */

static const char *const profile_names[] = {
#define X(NAME, name) name,
    CFG_PROFILES(X)
#undef X
};
_Static_assert(BSC_ARRAY_LEN(profile_names) == CFG_PROFILE_COUNT, "profile_names");
static const char *const probe_names[] = {"models", "completion", "none"};
_Static_assert(BSC_ARRAY_LEN(probe_names) == CFG_PROBE_COUNT, "probe_names");
static const char *const balance_names[] = {"priority", "weighted", "least_latency", "cheapest",
                                            "score"};
_Static_assert(BSC_ARRAY_LEN(balance_names) == CFG_BALANCE_COUNT, "balance_names");
static const char *const side_names[] = {"none", "read_only", "write_possible"};
_Static_assert(BSC_ARRAY_LEN(side_names) == CFG_SE_COUNT, "side_names");
static const char *const cache_mode_names[] = {"off", "exact", "semantic"};
_Static_assert(BSC_ARRAY_LEN(cache_mode_names) == CFG_CACHE_MODE_COUNT, "cache_mode_names");
static const char *const cache_scope_names[] = {"client", "route"};
_Static_assert(BSC_ARRAY_LEN(cache_scope_names) == CFG_CACHE_SCOPE_COUNT, "cache_scope_names");
static const char *const cache_store_names[] = {"memory", "redis"};
_Static_assert(BSC_ARRAY_LEN(cache_store_names) == CFG_CACHE_STORE_COUNT, "cache_store_names");
static const char *const sf_names[] = {"fail", "buffer", "continue"};
_Static_assert(BSC_ARRAY_LEN(sf_names) == CFG_SF_COUNT, "sf_names");
static const char *const overflow_names[] = {"fail", "trim"};
_Static_assert(BSC_ARRAY_LEN(overflow_names) == CFG_OVERFLOW_COUNT, "overflow_names");
static const char *const brk_mode_names[] = {"circuit", "adaptive"};
_Static_assert(BSC_ARRAY_LEN(brk_mode_names) == CFG_BRK_MODE_COUNT, "brk_mode_names");
static const char *const store_names[] = {"memory", "sqlite", "redis"};
_Static_assert(BSC_ARRAY_LEN(store_names) == CFG_STORE_COUNT, "store_names");
static const char *const http_client_names[] = {"curl", "builtin"};
_Static_assert(BSC_ARRAY_LEN(http_client_names) == CFG_HTTP_CLIENT_COUNT, "http_client_names");
static const char *const unavail_names[] = {"local", "reject"};
_Static_assert(BSC_ARRAY_LEN(unavail_names) == CFG_STORE_UNAVAIL_COUNT, "unavail_names");
/* Bit i is names[i]: the order of enum cfg_cap and enum cfg_breaker_dim. */
const char *const cfg__cap_names[] = {"text",  "vision",      "streaming",   "tools",
                                      "parallel_tool_calls", "json_schema", "json_object",
                                      "embeddings", "prefill"};
const size_t cfg__n_cap_names = BSC_ARRAY_LEN(cfg__cap_names);
_Static_assert(1u << (BSC_ARRAY_LEN(cfg__cap_names) - 1) == CFG_CAP_PREFILL, "cap names");
static const char *const dim_names[] = {"provider", "model", "region", "deployment", "key"};
_Static_assert(1u << (BSC_ARRAY_LEN(dim_names) - 1) == CFG_BRK_KEY, "dim names");
static const char *const level_names[] = {"err", "warn", "info", "debug"};
_Static_assert(BSC_ARRAY_LEN(level_names) == BSC_LOG_COUNT, "level_names");
static const char *const format_names[] = {"json", "text"};

const char *cfg_balance_name(enum cfg_balance b)
{
    return (unsigned)b < CFG_BALANCE_COUNT ? balance_names[b] : "?";
}

/* ---- small helpers -------------------------------------------------------------------- */

static void error_at(struct cfg__v *v, const struct cfg__node *n, const char *where,
                     const char *key, const char *problem)
{
    char kr[320];

    cfg__keyref(kr, sizeof(kr), where, key);
    cfg__diag(v->s, false, n->line, n->column, "%s: %s", kr, problem);
}

static char *dup_or_oom(struct cfg__v *v, const char *s)
{
    char *p = bsc_str_dup(bsc_str_cstr(s));

    return p ? p : cfg__oom(v);
}

/* ---- log ------------------------------------------------------------------------------ */

static void log_level_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                         void *base, const char *where)
{
    struct cfg_log *log = base;
    const struct cfg__node *n = e->value;
    unsigned idx;

    /* "error" and "warning" are accepted too: operators write them from habit. */
    if (n->kind == CFG__SCALAR && !n->bad && !n->is_null) {
        if (strcmp(n->text, "error") == 0) {
            log->level = BSC_LOG_ERR;
            return;
        }
        if (strcmp(n->text, "warning") == 0) {
            log->level = BSC_LOG_WARN;
            return;
        }
    }
    if (cfg__get_enum(v, n, where, f->name, level_names, BSC_ARRAY_LEN(level_names), &idx))
        log->level = (int)idx;
}

static void log_format_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                          void *base, const char *where)
{
    struct cfg_log *log = base;
    unsigned idx;

    if (cfg__get_enum(v, e->value, where, f->name, format_names, BSC_ARRAY_LEN(format_names),
                      &idx))
        log->json = idx == 0;
}

static const struct cfg__field log_fields[] = {
    {FFN("level", log_level_fn)},
    {FFN("format", log_format_fn)},
    {FBOOL(struct cfg_log, "prompts", prompts)},
};

/* ---- limits, admin, store ------------------------------------------------------------- */

static const struct cfg__field limit_fields[] = {
    {FU64(struct cfg_limits, "max_body_bytes", max_body_bytes, 1, 1u << 30)},
    {FU32(struct cfg_limits, "max_header_bytes", max_header_bytes, 1024, 1u << 20)},
    {FU32(struct cfg_limits, "header_timeout_ms", header_timeout_ms, 1, DAY_MS)},
    {FU32(struct cfg_limits, "idle_timeout_ms", idle_timeout_ms, 1, DAY_MS)},
    {FU32(struct cfg_limits, "max_connections", max_connections, 1, 10000000)},
    {FU32(struct cfg_limits, "max_stream_buffer_bytes", max_stream_buffer_bytes, 4096, 1u << 30)},
    {FU32(struct cfg_limits, "drain_timeout_ms", drain_timeout_ms, 0, DAY_MS)},
    {FU32(struct cfg_limits, "body_timeout_ms", body_timeout_ms, 1, DAY_MS)},
    {FU32(struct cfg_limits, "min_body_rate_bps", min_body_rate_bps, 0, 1000000000)},
    {FU32(struct cfg_limits, "max_stream_ms", max_stream_ms, 1, DAY_MS)},
    {FU64(struct cfg_limits, "max_stream_bytes", max_stream_bytes, 1, 1ull << 40)},
};

static const char *parse_listen(const char *s, char **host, uint16_t *port);

static void admin_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where)
{
    const struct cfg *cfg = base;
    const struct cfg__entry *e = cfg__map_find(map, "key");

    (void)where;
    if (e && cfg->admin_key[0] && strlen(cfg->admin_key) < 16)
        cfg__diag(v->s, true, e->value->line, e->value->column,
                  "the admin key is shorter than 16 characters; use a long random secret");
}

static void admin_listen_fn(struct cfg__v *v, const struct cfg__field *f,
                            const struct cfg__entry *e, void *base, const char *where)
{
    struct cfg *cfg = base;
    const char *s, *problem;
    char *host = NULL;
    uint16_t port;

    if (!cfg__get_str(v, e->value, where, f->name, &s))
        return;
    problem = parse_listen(s, &host, &port);
    if (problem) {
        error_at(v, e->value, where, f->name, problem);
        return;
    }
    if (!host) {
        cfg__oom(v);
        return;
    }
    free(cfg->admin_listen_host);
    cfg->admin_listen_host = host;
    cfg->admin_listen_port = port;
}

static const struct cfg__field admin_fields[] = {
    {FSTR(struct cfg, "key", admin_key)},
    {FFN("listen", admin_listen_fn)},
    {FFN("keys", cfg__admin_keys_fn)},
};

static const struct cfg__field metrics_fields[] = {
    {FSTR(struct cfg, "key", metrics_key)},
};

static const struct cfg__field debug_fields[] = {
    {FBOOL(struct cfg, "core_dumps", core_dumps)},
};

static bool has_prefix(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static void store_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where)
{
    const struct cfg_store *st = base;
    const struct cfg__entry *path = cfg__map_find(map, "path");
    const struct cfg__entry *url = cfg__map_find(map, "url");
    bool want_path = st->kind == CFG_STORE_SQLITE, want_url = st->kind == CFG_STORE_REDIS;

    if (want_path && (!st->path || !st->path[0]) && !(path && path->value->bad))
        cfg__diag(v->s, false, map->line, map->column,
                  "missing required key 'path' in %s (kind sqlite)", where);
    if (want_url && (!st->url || !st->url[0]) && !(url && url->value->bad))
        cfg__diag(v->s, false, map->line, map->column,
                  "missing required key 'url' in %s (kind redis)", where);
    if (want_url && st->url && st->url[0] && !has_prefix(st->url, "redis://") &&
        !has_prefix(st->url, "rediss://") && !has_prefix(st->url, "unix://"))
        error_at(v, url->value, where, "url", "expected a redis://, rediss:// or unix:// URL");
    if (want_url && st->url && has_prefix(st->url, "rediss://"))
        error_at(v, url->value, where, "url",
                 "rediss:// (TLS) is not supported: the Redis client (hiredis 0.14) has no TLS; "
                 "use redis:// on a trusted network or unix://");
    if (!want_path && path && !path->value->is_null)
        cfg__diag(v->s, true, path->key->line, path->key->column,
                  "'path' in %s is only used with kind sqlite", where);
    if (!want_url && url && !url->value->is_null)
        cfg__diag(v->s, true, url->key->line, url->key->column,
                  "'url' in %s is only used with kind redis", where);
}

static const struct cfg__field store_fields[] = {
    {FENUM(struct cfg_store, "kind", kind, store_names)},
    {FSTR(struct cfg_store, "path", path)},
    {FSTR(struct cfg_store, "url", url)},
    {FSTR(struct cfg_store, "prefix", prefix)},
    {FU32(struct cfg_store, "timeout_ms", timeout_ms, 1, 60000)},
    {FENUM(struct cfg_store, "on_unavailable", on_unavailable, unavail_names)},
    {FU32(struct cfg_store, "instances", instances, 1, 1024)},
    {FU32(struct cfg_store, "lease_ttl_ms", lease_ttl_ms, 300, 600000)},
};

/* ---- breaker, retry ------------------------------------------------------------------- */

const struct cfg__field cfg__breaker_fields[] = {
    {FBITS(struct cfg_breaker, "key", key_dims, dim_names)},
    {FU32(struct cfg_breaker, "window_ms", window_ms, 1, DAY_MS)},
    {FU32(struct cfg_breaker, "min_requests", min_requests, 1, 1000000)},
    {FDBL(struct cfg_breaker, "failure_rate", failure_rate, 0.0, 1.0, true)},
    {FU32(struct cfg_breaker, "consecutive_failures", consecutive_failures, 1, 1000000)},
    {FU32(struct cfg_breaker, "open_ms", open_ms, 1, DAY_MS)},
    {FU32(struct cfg_breaker, "half_open_probes", half_open_probes, 1, 1000)},
    {FU32(struct cfg_breaker, "success_threshold", success_threshold, 1, 1000)},
    {FU32(struct cfg_breaker, "ramp_ms", ramp_ms, 0, DAY_MS)},
    {FDBL(struct cfg_breaker, "open_backoff", open_backoff, 1.0, 100.0, false)},
    {FU32(struct cfg_breaker, "max_open_ms", max_open_ms, 1, DAY_MS)},
    {FBOOL(struct cfg_breaker, "panic", panic)},
    {FENUM(struct cfg_breaker, "mode", mode, brk_mode_names)},
    {FDBL(struct cfg_breaker, "adaptive_k", adaptive_k, 1.0, 100.0, false)},
};
const size_t cfg__n_breaker_fields = BSC_ARRAY_LEN(cfg__breaker_fields);

void cfg__breaker_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where)
{
    const struct cfg_breaker *b = base;
    const struct cfg__entry *key = cfg__map_find(map, "key");

    const struct cfg__entry *max = cfg__map_find(map, "max_open_ms");

    if (b->key_dims == 0 && key && key->value->kind == CFG__SEQ)
        error_at(v, key->value, where, "key",
                 "must name at least one of provider, model, region, deployment, key");
    /* Only when written here: an inherited cap below a larger open_ms is simply not used
     * (the breaker never opens for less than open_ms). */
    if (max && b->max_open_ms < b->open_ms) {
        char msg[96];

        snprintf(msg, sizeof(msg), "%u is smaller than open_ms (%u)", b->max_open_ms, b->open_ms);
        error_at(v, max->value, where, "max_open_ms", msg);
    }
}

static void backoff_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                          const char *where)
{
    const struct cfg_retry *r = base;
    const struct cfg__entry *e = cfg__map_find(map, "base_ms");

    if (r->base_ms > r->max_ms) {
        char msg[96];

        snprintf(msg, sizeof(msg), "%u is larger than max_ms (%u)", r->base_ms, r->max_ms);
        error_at(v, e ? e->value : map, where, "base_ms", msg);
    }
}

static const struct cfg__field backoff_fields[] = {
    {FU32(struct cfg_retry, "base_ms", base_ms, 1, 600000)},
    {FU32(struct cfg_retry, "max_ms", max_ms, 1, 600000)},
    {FDBL(struct cfg_retry, "jitter", jitter, 0.0, 1.0, false)},
};

static const struct cfg__field budget_fields[] = {
    {FDBL(struct cfg_retry, "ratio", budget_ratio, 0.0, 10.0, false)},
    {FU32(struct cfg_retry, "min_per_s", budget_min_per_s, 0, 1000000)},
    {FU32(struct cfg_retry, "window_ms", budget_window_ms, 1000, 3600000)},
};

static const struct cfg__field retry_fields[] = {
    {FMAP_FLAT("backoff", backoff_fields, backoff_check)},
    {FMAP_FLAT("budget", budget_fields, NULL)},
};

/* ---- listen --------------------------------------------------------------------------- */

/* Splits "host:port" or "[v6]:port" into a malloc'd *<host> (no brackets; "localhost"
 * becomes "127.0.0.1"; NULL on ENOMEM) and *<port>. Returns NULL, or what is wrong. */
static const char *parse_listen(const char *s, char **host, uint16_t *port)
{
    const char *colon, *hs = s, *he;
    char buf[64];
    unsigned char addr[16];
    unsigned long long p;
    bool v6 = s[0] == '[';

    if (v6) {
        he = strchr(s, ']');
        if (!he || he[1] != ':')
            return "expected \"[address]:port\" for IPv6";
        hs = s + 1;
        colon = he + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return "expected host:port";
        if (memchr(s, ':', (size_t)(colon - s)))
            return "an IPv6 address must be in brackets, as in \"[::1]:8080\"";
        he = colon;
    }
    if (he <= hs || (size_t)(he - hs) >= sizeof(buf))
        return "expected host:port";
    memcpy(buf, hs, (size_t)(he - hs));
    buf[he - hs] = '\0';
    if (!bsc_str_to_u64(bsc_str_cstr(colon + 1), &p) || p == 0 || p > 65535)
        return "the port must be a number from 1 to 65535";
    if (!v6 && strcmp(buf, "localhost") == 0)
        memcpy(buf, "127.0.0.1", sizeof("127.0.0.1"));
    if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, addr) != 1)
        return v6 ? "not an IPv6 address" : "the host must be an IPv4 address or localhost";
    *host = bsc_str_dup(bsc_str_cstr(buf));
    *port = (uint16_t)p;
    return NULL;
}

static void listen_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                      void *base, const char *where)
{
    struct cfg *cfg = base;
    const char *s, *problem;
    char *host = NULL;
    uint16_t port;

    if (!cfg__get_str(v, e->value, where, f->name, &s))
        return;
    problem = parse_listen(s, &host, &port);
    if (problem) {
        char got[64];

        cfg__describe(got, sizeof(got), e->value);
        cfg__diag(v->s, false, e->value->line, e->value->column, "'listen': %s, got %s", problem,
                  got);
        return;
    }
    if (!host) {
        cfg__oom(v);
        return;
    }
    free(cfg->listen_host);
    cfg->listen_host = host;
    cfg->listen_port = port;
}

/* ---- providers ------------------------------------------------------------------------ */

static void base_url_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where)
{
    struct cfg_provider *p = base;
    const char *s, *host;
    size_t len;
    bool ok;
    char *copy;

    ((struct cfg__prov_src *)v->cur)->has_base_url = true;
    if (e->value->is_null) { /* required but for kinds bedrock and vertex: resolve.c decides */
        ((struct cfg__prov_src *)v->cur)->null_base_url = e->value;
        return;
    }
    if (!cfg__get_str(v, e->value, where, f->name, &s))
        return;
    host = has_prefix(s, "https://") ? s + 8 : has_prefix(s, "http://") ? s + 7 : NULL;
    ok = host && *host && *host != '/' && *host != ':';
    for (const char *c = s; ok && *c; c++)
        ok = (unsigned char)*c > 0x20 && *c != 0x7f && *c != '?' && *c != '#';
    if (!ok) {
        cfg__bad_type(v, e->value, where, f->name,
                      "an http:// or https:// URL without query or fragment");
        return;
    }
    len = strlen(s);
    while (len > (size_t)(host - s) + 1 && s[len - 1] == '/')
        len--; /* adapters append "/chat/completions" and the like */
    copy = bsc_str_dup(bsc_str_make(s, len));
    if (!copy) {
        cfg__oom(v);
        return;
    }
    free(p->base_url);
    p->base_url = copy;
}

static void free_keys(struct cfg_provider *p)
{
    for (size_t i = 0; i < p->n_keys; i++)
        free(p->keys[i]);
    BSC_FREE(p->keys);
    p->n_keys = 0;
}

static void keys_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                    void *base, const char *where)
{
    struct cfg_provider *p = base;
    struct cfg__prov_src *src = v->cur;
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null) {
        src->keys_bad = n->bad;
        return;
    }
    src->keys_bad = true; /* until the list is read */
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, f->name, "a list of strings");
        return;
    }
    if (n->n > MAX_KEYS) {
        error_at(v, n, where, f->name, "more than 64 keys");
        return;
    }
    free_keys(p);
    p->keys = calloc(n->n ? n->n : 1, sizeof(*p->keys));
    if (!p->keys) {
        cfg__oom(v);
        return;
    }
    src->keys_bad = false;
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;

        if (item->bad) {
            src->keys_bad = true;
            continue;
        }
        if (item->kind != CFG__SCALAR) {
            cfg__bad_type(v, item, where, f->name, "a list of strings");
            src->keys_bad = true;
            continue;
        }
        if (item->is_null || item->len == 0) {
            /* "${KEY_2:-}" with KEY_2 unset is an optional key: it is dropped quietly. A
             * key written empty is more likely a mistake. */
            if (!item->raw)
                cfg__diag(v->s, true, item->line, item->column, "empty key in %s ignored",
                          where);
            continue;
        }
        p->keys[p->n_keys] = dup_or_oom(v, item->text);
        if (!p->keys[p->n_keys])
            return;
        p->n_keys++;
    }
}

static bool is_tchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void free_headers(struct cfg_provider *p)
{
    for (size_t i = 0; i < p->n_headers; i++) {
        free(p->headers[i].name);
        free(p->headers[i].value);
    }
    BSC_FREE(p->headers);
    p->n_headers = 0;
}

/* Checks one header; returns false after reporting. */
static bool header_ok(struct cfg__v *v, const struct cfg__entry *h, const char *where)
{
    static const char *const managed[] = {"host", "content-length", "transfer-encoding",
                                          "connection"};
    const struct cfg__node *k = h->key, *val = h->value;
    bool token = k->len > 0;

    for (size_t j = 0; j < k->len; j++)
        token = token && is_tchar(k->text[j]);
    if (!token) {
        cfg__diag(v->s, false, k->line, k->column,
                  "header name '%.*s' in %s is not a valid HTTP token",
                  k->len > 64 ? 64 : (int)k->len, k->text, where);
        return false;
    }
    for (size_t j = 0; j < BSC_ARRAY_LEN(managed); j++) {
        if (strcasecmp(k->text, managed[j]) == 0) {
            cfg__diag(v->s, false, k->line, k->column,
                      "header '%s' in %s is set by the gateway and cannot be configured",
                      k->text, where);
            return false;
        }
    }
    if (val->bad)
        return false;
    if (val->kind != CFG__SCALAR || val->is_null) {
        cfg__bad_type(v, val, where, k->text, "a string");
        return false;
    }
    if (strpbrk(val->text, "\r\n")) {
        error_at(v, val, where, k->text, "a header value cannot hold CR or LF");
        return false;
    }
    return true;
}

static void headers_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    struct cfg_provider *p = base;
    const struct cfg__node *n = e->value;
    char sub[320];

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__MAP) {
        cfg__bad_type(v, n, where, f->name, "a map of header names to values");
        return;
    }
    if (n->n > MAX_HEADERS) {
        error_at(v, n, where, f->name, "more than 64 headers");
        return;
    }
    cfg__subwhere(sub, sizeof(sub), where, f->name);
    free_headers(p);
    p->headers = calloc(n->n ? n->n : 1, sizeof(*p->headers));
    if (!p->headers) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct cfg_header *h = &p->headers[p->n_headers];

        if (!header_ok(v, &n->items[i], sub))
            continue;
        h->name = dup_or_oom(v, n->items[i].key->text);
        h->value = dup_or_oom(v, n->items[i].value->text);
        p->n_headers++; /* counted even half-built, so cleanup frees what was taken */
        if (v->oom)
            return;
    }
}

static void prov_breaker_fn(struct cfg__v *v, const struct cfg__field *f,
                            const struct cfg__entry *e, void *base, const char *where)
{
    struct cfg__prov_src *src = v->cur;

    (void)f, (void)base, (void)where;
    src->breaker = e; /* decoded in resolve.c, over the top-level breaker */
}

static const struct cfg__field health_fields[] = {
    {FU32(struct cfg_health, "interval_ms", interval_ms, 100, DAY_MS)},
    {FENUM(struct cfg_health, "probe", probe, probe_names)},
    {FU32(struct cfg_health, "key_reverify_ms", key_reverify_ms, 0, DAY_MS)},
};

static const struct cfg__field aws_fields[] = {
    {FSTR(struct cfg_aws, "access_key_id", access_key_id)},
    {FSTR(struct cfg_aws, "secret_access_key", secret_access_key)},
    {FSTR(struct cfg_aws, "session_token", session_token)},
    {FSTR(struct cfg_aws, "profile", profile)},
};

static const struct cfg__field vertex_fields[] = {
    {FSTR(struct cfg_vertex, "credentials_file", credentials_file)},
    {FSTR(struct cfg_vertex, "token_file", token_file)},
    {FSTR(struct cfg_vertex, "token_url", token_url)},
};

/* The CA file is read by the TLS library at each new connection: one that cannot be read
 * now would fail every transfer later, so it is an error at load. */
static void tls_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                      const char *where)
{
    const struct cfg_provider *p = base;
    const struct cfg__entry *e = cfg__map_find(map, "ca_file");

    (void)where;
    if (e && p->tls_ca_file && access(p->tls_ca_file, R_OK) != 0)
        cfg__diag(v->s, false, e->value->line, e->value->column,
                  "tls.ca_file '%s' cannot be read: %s", p->tls_ca_file, strerror(errno));
}

static const struct cfg__field tls_fields[] = {
    {FSTR(struct cfg_provider, "ca_file", tls_ca_file), .nonempty = true},
};

static const struct cfg__field provider_fields[] = {
    {FENUM(struct cfg_provider, "kind", kind, cfg__kind_names), .required = true},
    {FFN("base_url", base_url_fn)}, /* required but for bedrock and vertex (resolve.c) */
    {FFN("keys", keys_fn)},
    {FSTR(struct cfg_provider, "region", region)},
    {FSTR(struct cfg_provider, "api_version", api_version)},
    {FSTR(struct cfg_provider, "project", project)},
    {FMAP(struct cfg_provider, "aws", aws, aws_fields, NULL)},
    {FMAP(struct cfg_provider, "vertex", vertex, vertex_fields, NULL)},
    {FENUM(struct cfg_provider, "profile", profile, profile_names)},
    {FFN("headers", headers_fn)},
    {FU32(struct cfg_provider, "connect_timeout_ms", connect_timeout_ms, 1, 600000)},
    {FMAP_FLAT("tls", tls_fields, tls_check)},
    {FU32(struct cfg_provider, "max_concurrency", max_concurrency, 1, 1000000)},
    {FU32(struct cfg_provider, "rpm", rpm, 0, UINT32_MAX)},
    {FU32(struct cfg_provider, "tpm", tpm, 0, UINT32_MAX)},
    {FU32(struct cfg_provider, "rpm_burst", rpm_burst, 0, UINT32_MAX)},
    {FU32(struct cfg_provider, "tpm_burst", tpm_burst, 0, UINT32_MAX)},
    {FMAP(struct cfg_provider, "health", health, health_fields, NULL)},
    {FBOOL(struct cfg_provider, "disabled", disabled)},
    {FFN("breaker", prov_breaker_fn)},
};

/* ---- targets -------------------------------------------------------------------------- */

static void target_provider_fn(struct cfg__v *v, const struct cfg__field *f,
                               const struct cfg__entry *e, void *base, const char *where)
{
    struct cfg__target_src *src = v->cur;
    const char *s;

    (void)base;
    if (cfg__get_str(v, e->value, where, f->name, &s))
        src->provider = e; /* resolved in resolve.c */
}

static void target_breaker_fn(struct cfg__v *v, const struct cfg__field *f,
                              const struct cfg__entry *e, void *base, const char *where)
{
    struct cfg__target_src *src = v->cur;

    (void)f, (void)base, (void)where;
    src->breaker = e;
}

static const struct cfg__field price_fields[] = {
    {FDBL(struct cfg_price, "input_per_mtok", input_per_mtok, 0.0, 1e6, false)},
    {FDBL(struct cfg_price, "output_per_mtok", output_per_mtok, 0.0, 1e6, false)},
    {FDBL(struct cfg_price, "cached_input_per_mtok", cached_input_per_mtok, 0.0, 1e6, false)},
    {FDBL(struct cfg_price, "cache_write_per_mtok", cache_write_per_mtok, 0.0, 1e6, false)},
    {FDBL(struct cfg_price, "cache_write_1h_per_mtok", cache_write_1h_per_mtok, 0.0, 1e6, false)},
};

static const struct cfg__field target_fields[] = {
    {FFN("provider", target_provider_fn), .required = true},
    {FSTR(struct cfg_target, "model", model), .required = true, .nonempty = true},
    {FSTR(struct cfg_target, "deployment", deployment)},
    {FSTR(struct cfg_target, "publisher", publisher)},
    {FBITS(struct cfg_target, "capabilities", capabilities, cfg__cap_names)},
    {FU64(struct cfg_target, "context_window", context_window, 0, 1000000000000ull)},
    {FU64(struct cfg_target, "max_output_tokens", max_output_tokens, 0, 1000000000000ull)},
    {FMAP(struct cfg_target, "price", price, price_fields, NULL)},
    {FBOOL(struct cfg_target, "disabled", disabled)},
    {FU32(struct cfg_target, "canary_percent", canary_percent, 0, 100)},
    {FBOOL(struct cfg_target, "adaptive", adaptive)},
    {FU32(struct cfg_target, "rpm", rpm, 0, UINT32_MAX)},
    {FU32(struct cfg_target, "tpm", tpm, 0, UINT32_MAX)},
    {FU32(struct cfg_target, "rpm_burst", rpm_burst, 0, UINT32_MAX)},
    {FU32(struct cfg_target, "tpm_burst", tpm_burst, 0, UINT32_MAX)},
    {FU32(struct cfg_target, "max_concurrency", max_concurrency, 0, 1000000)},
    {FU32(struct cfg_target, "queue_ms", queue_ms, 0, 600000)},
    {FFN("breaker", target_breaker_fn)},
};

/* ---- routes --------------------------------------------------------------------------- */

static void tier_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                    void *base, const char *where)
{
    struct cfg__route_src *src = v->cur;

    (void)base, (void)where;
    if (strcmp(f->name, "primary") == 0)
        src->tier[CFG__PRIMARY] = e;
    else if (strcmp(f->name, "equivalent") == 0)
        src->tier[CFG__EQUIVALENT] = e;
    else
        src->tier[CFG__FALLBACK] = e;
}

static void weights_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    struct cfg__route_src *src = v->cur;

    (void)f, (void)base, (void)where;
    src->weights = e;
}

static void envelope_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                           const char *where)
{
    struct cfg_envelope *env = base;
    const struct cfg__entry *e = cfg__map_find(map, "reserve_for_fallback_ms");
    char msg[128];

    if (env->reserve_for_fallback_ms < env->deadline_ms)
        return;
    if (e && !e->value->is_null) {
        snprintf(msg, sizeof(msg), "%u must be less than deadline_ms (%u)",
                 env->reserve_for_fallback_ms, env->deadline_ms);
        error_at(v, e->value, where, "reserve_for_fallback_ms", msg);
        return;
    }
    /* The default reserve does not fit a short deadline: keep the default's proportion. */
    env->reserve_for_fallback_ms = env->deadline_ms / 6;
    cfg__diag(v->s, true, map->line, map->column,
              "%s: the default reserve_for_fallback_ms (5000) is not less than deadline_ms "
              "(%u); using %u",
              where, env->deadline_ms, env->reserve_for_fallback_ms);
}

static const struct cfg__field requires_fields[] = {
    {FBITS(struct cfg_requires, "capabilities", capabilities, cfg__cap_names)},
    {FU64(struct cfg_requires, "context_window_min", context_window_min, 0, 1000000000000ull)},
    {FU64(struct cfg_requires, "max_output_tokens_min", max_output_tokens_min, 0,
          1000000000000ull)},
};

static const struct cfg__field envelope_fields[] = {
    {FU32(struct cfg_envelope, "deadline_ms", deadline_ms, 1, DAY_MS)},
    {FU32(struct cfg_envelope, "max_attempts", max_attempts, 1, 100)},
    {FU32(struct cfg_envelope, "max_same_target_attempts", max_same_target_attempts, 1, 100)},
    {FU32(struct cfg_envelope, "reserve_for_fallback_ms", reserve_for_fallback_ms, 0, DAY_MS)},
    {FU32(struct cfg_envelope, "max_added_latency_ms", max_added_latency_ms, 0, DAY_MS)},
    {FDBL(struct cfg_envelope, "max_cost_usd", max_cost_usd, 0.0, 1e6, false)},
    {FBOOL(struct cfg_envelope, "allow_equivalent_failover", allow_equivalent_failover)},
    {FBOOL(struct cfg_envelope, "allow_cross_model_fallback", allow_cross_model_fallback)},
    {FENUM(struct cfg_envelope, "side_effects", side_effects, side_names)},
    {FENUM(struct cfg_envelope, "on_stream_failure", on_stream_failure, sf_names)},
    {FU32(struct cfg_envelope, "first_token_timeout_ms", first_token_timeout_ms, 0, DAY_MS)},
    {FU32(struct cfg_envelope, "stream_idle_timeout_ms", stream_idle_timeout_ms, 0, DAY_MS)},
};

static const struct cfg__field context_fields[] = {
    {FENUM(struct cfg_context, "overflow", overflow, overflow_names)},
    {FU32(struct cfg_context, "keep_last", keep_last, 0, 10000)},
};

static void shadow_targets_fn(struct cfg__v *v, const struct cfg__field *f,
                              const struct cfg__entry *e, void *base, const char *where)
{
    struct cfg__route_src *src = v->cur;

    (void)f, (void)base, (void)where;
    src->shadow_targets = e; /* resolved in resolve.c */
}

static const struct cfg__field shadow_fields[] = {
    {FFN("targets", shadow_targets_fn), .required = true},
    {FU32(struct cfg_shadow, "percent", percent, 0, 100)},
    {FU32(struct cfg_shadow, "max_concurrency", max_concurrency, 1, 100000)},
};

/* A route's cache: mode is required; semantic needs the target that embeds (resolved in
 * the second pass: targets may come later, docs/internals/cache.md). */
static void cache_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where)
{
    const struct cfg_route_cache *c = base;
    const struct cfg__entry *mode = cfg__map_find(map, "mode");
    const struct cfg__entry *target = cfg__map_find(map, "embeddings_target");
    struct cfg__route_src *src = v->cur;

    if (!mode) {
        cfg__diag(v->s, false, map->line, map->column, "missing required key 'mode' in %s",
                  where);
        return;
    }
    if (c->mode != CFG_CACHE_SEMANTIC) {
        if (target)
            cfg__diag(v->s, true, target->key->line, target->key->column,
                      "'embeddings_target' in %s: only mode: semantic embeds; ignored", where);
        return;
    }
    if (!target)
        error_at(v, mode->value, where, "mode",
                 "semantic needs embeddings_target: the target that embeds the question");
    else
        src->cache_target = target;
}

static const struct cfg__field cache_fields[] = {
    {FENUM(struct cfg_route_cache, "mode", mode, cache_mode_names)},
    {FU32(struct cfg_route_cache, "ttl_s", ttl_s, 1, 30 * 86400)},
    {FENUM(struct cfg_route_cache, "scope", scope, cache_scope_names)},
    {FU64(struct cfg_route_cache, "max_entry_bytes", max_entry_bytes, 1, 1u << 30)},
    {FSTR(struct cfg_route_cache, "embeddings_target", embeddings_target)},
    {FDBL(struct cfg_route_cache, "min_similarity", min_similarity, 0.0, 1.0, true)},
    {FU32(struct cfg_route_cache, "max_entries", max_entries, 1, 10000000)},
    {FU32(struct cfg_route_cache, "embed_timeout_ms", embed_timeout_ms, 1, 60000)},
};

static const struct cfg__field score_fields[] = {
    {FDBL(struct cfg_score, "contract", contract, 0.0, 1e9, false)},
    {FDBL(struct cfg_score, "task", task, 0.0, 1e9, false)},
    {FDBL(struct cfg_score, "latency_ms", latency_ms, 0.0, 1e9, false)},
    {FDBL(struct cfg_score, "cost_usd", cost_usd, 0.0, 1e9, false)},
};

static const struct cfg__field route_fields[] = {
    {FMAP(struct cfg_route, "requires", requires, requires_fields, NULL)},
    {FFN("primary", tier_fn), .required = true},
    {FFN("equivalent", tier_fn)},
    {FFN("fallback", tier_fn)},
    {FENUM(struct cfg_route, "balance", balance, balance_names)},
    {FFN("weights", weights_fn)},
    {FMAP(struct cfg_route, "envelope", envelope, envelope_fields, envelope_check)},
    /* Kill switches for a whole tier (our extension; docs/internals/config.md). */
    {FBOOL(struct cfg_route, "primary_disabled", primary.disabled)},
    {FBOOL(struct cfg_route, "equivalent_disabled", equivalent.disabled)},
    {FBOOL(struct cfg_route, "fallback_disabled", fallback.disabled)},
    {FMAP(struct cfg_route, "context", context, context_fields, NULL)},
    {FMAP(struct cfg_route, "shadow", shadow, shadow_fields, NULL)},
    {FFN("checks", cfg__checks_fn)},
    {FMAP(struct cfg_route, "score", score, score_fields, NULL)},
    {FMAP(struct cfg_route, "cache", cache, cache_fields, cache_check)},
};

/* ---- the three maps of objects -------------------------------------------------------- */

/* Checks that <e> holds a non-empty map of objects. */
static bool objects_ok(struct cfg__v *v, const struct cfg__entry *e, const char *singular)
{
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null)
        return false; /* null is reported as a missing required key */
    if (n->kind == CFG__MAP && n->n == 0) {
        cfg__diag(v->s, false, n->line, n->column, "'%s' must define at least one %s",
                  e->key->text, singular);
        return false;
    }
    if (n->kind != CFG__MAP) {
        char what[64];

        snprintf(what, sizeof(what), "a map of %s ids to %ss", singular, singular);
        cfg__bad_type(v, n, NULL, e->key->text, what);
        return false;
    }
    return true;
}

/* An id is what metrics labels, headers and logs carry: printable, no spaces, bounded. */
static void check_id(struct cfg__v *v, const struct cfg__node *key, const char *singular)
{
    bool ok = key->len > 0 && key->len <= CFG__MAX_ID;

    for (size_t i = 0; ok && i < key->len; i++)
        ok = (unsigned char)key->text[i] > 0x20 && key->text[i] != 0x7f;
    if (!ok)
        cfg__diag(v->s, false, key->line, key->column,
                  "invalid %s id '%.*s': ids are 1 to %u printable characters without spaces",
                  singular, key->len > 64 ? 64 : (int)key->len, key->text,
                  (unsigned)CFG__MAX_ID);
}

static void provider_defaults(struct cfg_provider *p)
{
    p->kind = CFG_PROV_OPENAI;
    p->connect_timeout_ms = 2000;
    p->max_concurrency = 0; /* 256 once decoded, unless configured */
    p->health.interval_ms = 30000;
    p->health.probe = CFG_PROBE_MODELS;
    p->health.key_reverify_ms = 30000;
}

static void providers_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                         void *base, const char *where)
{
    struct cfg *cfg = base;
    const struct cfg__node *m = e->value;

    (void)f, (void)where;
    if (cfg->providers || !objects_ok(v, e, "provider"))
        return; /* a second 'providers' key is a duplicate, reported already */
    cfg->providers = calloc(m->n, sizeof(*cfg->providers));
    v->psrc = calloc(m->n, sizeof(*v->psrc));
    if (!cfg->providers || !v->psrc) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < m->n && !v->oom; i++) {
        const struct cfg__node *key = m->items[i].key;
        struct cfg_provider *p = &cfg->providers[cfg->n_providers++];
        char w[CFG__MAX_ID + 80];

        provider_defaults(p);
        check_id(v, key, "provider");
        p->id = dup_or_oom(v, key->text);
        v->psrc[i] = (struct cfg__prov_src){.line = key->line, .column = key->column};
        v->cur = &v->psrc[i];
        snprintf(w, sizeof(w), "provider '%.*s'", CFG__MAX_ID, key->text);
        cfg__decode_map(v, m->items[i].value, provider_fields, BSC_ARRAY_LEN(provider_fields),
                        p, w, key->line, key->column);
        cfg__burst_check(v, m->items[i].value, w,
                         &(struct cfg__bursts){p->rpm, p->rpm_burst, p->tpm, p->tpm_burst});
        p->max_concurrency_default = !p->max_concurrency;
        if (!p->max_concurrency)
            p->max_concurrency = 256;
    }
}

static void target_defaults(struct cfg_target *t)
{
    t->capabilities = CFG_CAP_TEXT | CFG_CAP_STREAMING;
    t->canary_percent = 100;
    t->adaptive = true;
    /* Unset cache prices: resolved from the kind in resolve.c (price_defaults). */
    t->price.cached_input_per_mtok = -1;
    t->price.cache_write_per_mtok = -1;
    t->price.cache_write_1h_per_mtok = -1;
}

static void targets_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    struct cfg *cfg = base;
    const struct cfg__node *m = e->value;

    (void)f, (void)where;
    if (cfg->targets || !objects_ok(v, e, "target"))
        return;
    cfg->targets = calloc(m->n, sizeof(*cfg->targets));
    v->tsrc = calloc(m->n, sizeof(*v->tsrc));
    if (!cfg->targets || !v->tsrc) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < m->n && !v->oom; i++) {
        const struct cfg__node *key = m->items[i].key;
        struct cfg_target *t = &cfg->targets[cfg->n_targets++];
        char w[CFG__MAX_ID + 80];

        target_defaults(t);
        check_id(v, key, "target");
        t->id = dup_or_oom(v, key->text);
        if (t->id) {
            t->id_len = strlen(t->id);
            t->id_plain = bsc_json_plain(t->id, t->id_len);
        }
        v->tsrc[i] = (struct cfg__target_src){
            .line = key->line,
            .column = key->column,
            .model = cfg__map_find(m->items[i].value, "model"),
            .deployment = cfg__map_find(m->items[i].value, "deployment"),
        };
        v->cur = &v->tsrc[i];
        snprintf(w, sizeof(w), "target '%.*s'", CFG__MAX_ID, key->text);
        cfg__decode_map(v, m->items[i].value, target_fields, BSC_ARRAY_LEN(target_fields), t, w,
                        key->line, key->column);
        cfg__burst_check(v, m->items[i].value, w,
                         &(struct cfg__bursts){t->rpm, t->rpm_burst, t->tpm, t->tpm_burst});
    }
}

static void route_defaults(struct cfg_route *r)
{
    r->balance = CFG_BALANCE_PRIORITY;
    r->envelope = (struct cfg_envelope){
        .deadline_ms = 30000,
        .max_attempts = 3,
        .max_same_target_attempts = 2,
        .reserve_for_fallback_ms = 5000,
        .max_added_latency_ms = 10000,
        .max_cost_usd = -1.0,
        .allow_equivalent_failover = true,
        .allow_cross_model_fallback = false,
        .side_effects = CFG_SE_NONE,
        .on_stream_failure = CFG_SF_FAIL,
    };
    r->context = (struct cfg_context){.overflow = CFG_OVERFLOW_FAIL, .keep_last = 4};
    r->shadow.percent = 100;
    r->shadow.max_concurrency = 16;
    r->cache = (struct cfg_route_cache){.ttl_s = 300, .max_entry_bytes = 1048576,
                                        .min_similarity = 0.95, .max_entries = 10000,
                                        .embed_timeout_ms = 2000};
    r->score = (struct cfg_score){.contract = 1.0, .task = 1.0, .latency_ms = 0.001,
                                  .cost_usd = 100.0};
}

/* `score` weights only order balance: score; elsewhere they would silently do nothing. */
static void score_warn(struct cfg__v *v, const struct cfg__node *map, const struct cfg_route *r)
{
    const struct cfg__entry *e = map->kind == CFG__MAP ? cfg__map_find(map, "score") : NULL;

    if (e && r->balance != CFG_BALANCE_SCORE)
        cfg__diag(v->s, true, e->key->line, e->key->column,
                  "'score' in route '%s' is ignored unless balance is score", r->id);
}

static void routes_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                      void *base, const char *where)
{
    struct cfg *cfg = base;
    const struct cfg__node *m = e->value;

    (void)f, (void)where;
    if (cfg->routes || !objects_ok(v, e, "route"))
        return;
    cfg->routes = calloc(m->n, sizeof(*cfg->routes));
    v->rsrc = calloc(m->n, sizeof(*v->rsrc));
    if (!cfg->routes || !v->rsrc) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < m->n && !v->oom; i++) {
        const struct cfg__node *key = m->items[i].key;
        struct cfg_route *r = &cfg->routes[cfg->n_routes++];
        char w[CFG__MAX_ID + 80];

        route_defaults(r);
        check_id(v, key, "route");
        r->id = dup_or_oom(v, key->text);
        v->rsrc[i] = (struct cfg__route_src){.line = key->line, .column = key->column};
        v->cur = &v->rsrc[i];
        snprintf(w, sizeof(w), "route '%.*s'", CFG__MAX_ID, key->text);
        if (m->items[i].value->kind == CFG__MAP && cfg__map_find(m->items[i].value, "select"))
            cfg__select_route(v, m->items[i].value, route_fields, BSC_ARRAY_LEN(route_fields), w);
        else {
            cfg__decode_map(v, m->items[i].value, route_fields, BSC_ARRAY_LEN(route_fields), r, w,
                            key->line, key->column);
            score_warn(v, m->items[i].value, r);
        }
    }
}

/* ---- cors.allowed_origins, allowed_hosts ---------------------------------------------- */

#define MAX_STRS 64

/* An origin as browsers send it: scheme "://" host [":" port], nothing after. "*" allows
 * every origin. Returns NULL when <s> is fine, else what is wrong. */
static const char *origin_bad(const char *s)
{
    const char *host;

    if (strcmp(s, "*") == 0)
        return NULL;
    if (strncmp(s, "http://", 7) == 0)
        host = s + 7;
    else if (strncmp(s, "https://", 8) == 0)
        host = s + 8;
    else
        return "expected \"*\" or an origin like https://app.example.com (http or https)";
    if (!*host || strpbrk(host, "/?#@ \t"))
        return "an origin is scheme://host[:port], with no path, query or trailing slash";
    return NULL;
}

/* A Host header value: host, host:port, [v6] or [v6]:port; no spaces, paths or userinfo. */
static const char *host_bad(const char *s)
{
    if (!*s || strpbrk(s, "/?#@, \t\\"))
        return "expected a host name, optionally with :port (no scheme or path)";
    return NULL;
}

/* A list of strings into the struct cfg_strs at <f->off>, each checked by <bad>. */
static void strs_decode(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where, const char *(*bad)(const char *))
{
    struct cfg_strs *l = (struct cfg_strs *)(void *)((char *)base + f->off);
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, f->name, "a list of strings");
        return;
    }
    if (n->n > MAX_STRS) {
        error_at(v, n, where, f->name, "more than 64 entries");
        return;
    }
    for (size_t i = 0; i < l->n; i++) /* a repeated key was reported; the last one wins */
        free(l->items[i]);
    free(l->items);
    l->n = 0;
    l->items = calloc(n->n ? n->n : 1, sizeof(*l->items));
    if (!l->items) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;
        const char *why;

        if (item->bad)
            continue;
        if (item->kind != CFG__SCALAR || item->is_null) {
            cfg__bad_type(v, item, where, f->name, "a list of strings");
            continue;
        }
        if ((why = bad(item->text))) {
            error_at(v, item, where, f->name, why);
            continue;
        }
        l->items[l->n] = dup_or_oom(v, item->text);
        if (!l->items[l->n])
            return;
        l->n++;
    }
}

static void origins_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    strs_decode(v, f, e, base, where, origin_bad);
}

static void hosts_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                     void *base, const char *where)
{
    strs_decode(v, f, e, base, where, host_bad);
}

static const struct cfg__field cors_fields[] = {
    {FFN("allowed_origins", origins_fn), .off = offsetof(struct cfg_cors, allowed_origins)},
};

static const struct cfg__field responses_fields[] = {
    {FU32(struct cfg_responses, "ttl_s", ttl_s, 0, 30 * 86400)},
};

static const struct cfg__field feedback_fields[] = {
    {FU32(struct cfg_feedback, "half_life_ms", half_life_ms, 100, 30 * DAY_MS)},
    {FU32(struct cfg_feedback, "max_client_verdicts", max_client_verdicts, 1, 100000)},
};

static const struct cfg__field cache_all_fields[] = {
    {FDBL(struct cfg_cache_all, "memory_mb", memory_mb, 0.0, 1048576.0, true)},
    {FENUM(struct cfg_cache_all, "store", store, cache_store_names)},
};

static const struct cfg__field shadow_all_fields[] = {
    {FDBL(struct cfg_shadow_all, "max_usd_per_day", max_usd_per_day, 0, 1e9, false)},
};

/* ---- the top level -------------------------------------------------------------------- */

static const struct cfg__field top_fields[] = {
    {FFN("listen", listen_fn)},
    {FU32(struct cfg, "workers", workers, 0, 1024)},
    {FMAP(struct cfg, "log", log, log_fields, NULL)},
    {FMAP(struct cfg, "limits", limits, limit_fields, NULL)},
    {FMAP_FLAT("admin", admin_fields, admin_check)},
    {FMAP(struct cfg, "store", store, store_fields, store_check)},
    {FFN("providers", providers_fn), .required = true},
    {FFN("targets", targets_fn), .required = true},
    {FFN("routes", routes_fn), .required = true},
    {FMAP(struct cfg, "breaker", breaker, cfg__breaker_fields, cfg__breaker_check)},
    {FMAP(struct cfg, "retry", retry, retry_fields, NULL)},
    {FMAP_FLAT("debug", debug_fields, NULL)},
    {FMAP(struct cfg, "cors", cors, cors_fields, NULL)},
    {FFN("allowed_hosts", hosts_fn), .off = offsetof(struct cfg, allowed_hosts)},
    {FMAP(struct cfg, "responses", responses, responses_fields, NULL)},
    {FMAP(struct cfg, "feedback", feedback, feedback_fields, NULL)},
    {FMAP(struct cfg, "shadow", shadow, shadow_all_fields, NULL)},
    {FMAP(struct cfg, "cache", cache, cache_all_fields, NULL)},
    {FFN("clients", cfg__clients_note)},
    {FMAP_FLAT("metrics", metrics_fields, NULL)},
    {.name = "telemetry", .type = CFG__F_MAP, .off = offsetof(struct cfg, telemetry),
     .sub = cfg__telemetry_fields, .n_sub = CFG__N_TELEMETRY_FIELDS},
    {FENUM(struct cfg, "http_client", http_client, http_client_names)},
};

static bool defaults(struct cfg *cfg, const char *file)
{
    cfg->file = bsc_str_dup(bsc_str_cstr(file));
    cfg->listen_host = bsc_str_dup(BSC_STR("127.0.0.1"));
    cfg->admin_key = bsc_str_dup(BSC_STR(""));
    cfg->metrics_key = bsc_str_dup(BSC_STR(""));
    cfg->listen_port = 8080;
    cfg->workers = 0;
    cfg->http_client = CFG_HTTP_CLIENT_BUILTIN;
    cfg->log = (struct cfg_log){.level = BSC_LOG_INFO, .json = true, .prompts = false};
    cfg->limits = (struct cfg_limits){
        .max_body_bytes = 8388608,
        .max_header_bytes = 65536,
        .header_timeout_ms = 10000,
        .idle_timeout_ms = 75000,
        .max_connections = 20000,
        .max_stream_buffer_bytes = 1048576,
        .drain_timeout_ms = 10000,
        .body_timeout_ms = 30000,
        .min_body_rate_bps = 500,
        .max_stream_ms = 1800000,
        .max_stream_bytes = 1073741824,
    };
    cfg->store.kind = CFG_STORE_MEMORY;
    cfg->store.timeout_ms = 50;
    cfg->store.instances = 1;
    cfg->store.lease_ttl_ms = 10000;
    cfg->responses.ttl_s = 3600;
    cfg->cache = (struct cfg_cache_all){.memory_mb = 256, .store = CFG_CACHE_MEMORY};
    cfg->feedback = (struct cfg_feedback){.half_life_ms = 600000, .max_client_verdicts = 10};
    cfg->breaker = (struct cfg_breaker){
        .key_dims = CFG_BRK_PROVIDER | CFG_BRK_MODEL | CFG_BRK_REGION | CFG_BRK_KEY,
        .window_ms = 30000,
        .min_requests = 20,
        .failure_rate = 0.5,
        .consecutive_failures = 5,
        .open_ms = 60000,
        .half_open_probes = 1,
        .success_threshold = 3,
        .ramp_ms = 30000,
        .open_backoff = 2.0,
        .max_open_ms = 300000,
        .panic = true,
        .mode = CFG_BRK_MODE_CIRCUIT,
        .adaptive_k = 2.0,
    };
    cfg->retry = (struct cfg_retry){
        .base_ms = 250,
        .max_ms = 4000,
        .jitter = 0.3,
        .budget_ratio = 0.2,
        .budget_min_per_s = 10,
        .budget_window_ms = 10000,
    };
    return cfg->file && cfg->listen_host && cfg->admin_key && cfg->metrics_key &&
           cfg__telemetry_defaults(&cfg->telemetry);
}

/* admin.listen is a second socket: it cannot be the API's own address. */
static void listeners_check(struct cfg__v *v, const struct cfg__node *root)
{
    const struct cfg *cfg = v->cfg;
    const struct cfg__entry *admin = root ? cfg__map_find(root, "admin") : NULL;
    const struct cfg__entry *at = admin && admin->value->kind == CFG__MAP
                                      ? cfg__map_find(admin->value, "listen")
                                      : NULL;

    if (!at || !cfg->admin_listen_host || cfg->admin_listen_port != cfg->listen_port ||
        strcmp(cfg->admin_listen_host, cfg->listen_host) != 0)
        return;
    cfg__diag(v->s, false, at->value->line, at->value->column,
              "'listen' in admin: must differ from the top-level 'listen' (%s:%u)",
              cfg->listen_host, (unsigned)cfg->listen_port);
}

/* An operator key (admin.key, metrics.key) that is also a client's key would let that client
 * act as the operator: an error at the operator key, naming the client (never the key). */
static void operator_key_check(struct cfg__v *v, const struct cfg__node *root,
                               const char *section, const char *key)
{
    const struct cfg__entry *sec = root ? cfg__map_find(root, section) : NULL;
    const struct cfg__entry *at = sec && sec->value->kind == CFG__MAP
                                      ? cfg__map_find(sec->value, "key")
                                      : NULL;
    const struct cfg_client *c;
    const struct cfg__node *cl = v->clients_src ? v->clients_src->value : NULL;
    size_t i;

    if (!at || !key || !key[0])
        return;
    c = cfg_client_by_key(v->cfg, bsc_str_cstr(key));
    if (!c)
        return;
    i = (size_t)(c - v->cfg->clients);
    cfg__diag(v->s, false, at->value->line, at->value->column,
              "'key' in %s: is the key of client '%s' (line %u); the %s key must differ from "
              "every client key, or that client could act as the operator",
              section, c->id, cl && i < cl->n ? cl->items[i].key->line : 0, section);
}

/* cache.store: redis keeps answers in the state store's Redis: without one they would
 * silently stay local, so it is refused. After the first pass: `store` may come later. */
static void cache_store_check(struct cfg__v *v, const struct cfg__node *root)
{
    const struct cfg__entry *sec = root ? cfg__map_find(root, "cache") : NULL;
    const struct cfg__entry *st = sec && sec->value->kind == CFG__MAP
                                      ? cfg__map_find(sec->value, "store")
                                      : NULL;

    if (st && v->cfg->cache.store == CFG_CACHE_REDIS && v->cfg->store.kind != CFG_STORE_REDIS)
        error_at(v, st->value, "cache", "store", "redis needs store.kind: redis");
}

/* The serials handed out so far (struct cfg's serial). */
static atomic_uint_fast64_t cfg_serials;

enum bsc_err cfg__build(struct cfg__sink *s, const struct cfg__doc *doc, struct cfg **out)
{
    struct cfg *cfg = calloc(1, sizeof(*cfg));
    struct cfg__v v = {.s = s, .cfg = cfg};
    const struct cfg__node *root = doc->root;
    enum bsc_err err = BSC_OK;

    *out = NULL;
    if (!cfg)
        return BSC_ENOMEM;
    cfg->serial = atomic_fetch_add(&cfg_serials, 1) + 1;
    if (!defaults(cfg, s->file)) {
        cfg__free(cfg);
        return BSC_ENOMEM;
    }
    /* Sections may come in any order: whatever depends on another section (references,
     * breaker overrides) waits for the second pass. */
    cfg__decode_map(&v, root && !root->is_null ? root : NULL, top_fields, BSC_ARRAY_LEN(top_fields),
                    cfg, NULL, root ? root->line : 0, root ? root->column : 0);
    if (!v.oom)
        cfg__resolve(&v);
    if (!v.oom)
        cfg__clients_build(&v);
    if (!v.oom)
        listeners_check(&v, root);
    if (!v.oom) {
        operator_key_check(&v, root, "admin", cfg->admin_key);
        operator_key_check(&v, root, "metrics", cfg->metrics_key);
        cfg__admin_keys_check_clients(&v);
        cache_store_check(&v, root);
    }
    if (!v.oom && !s->n_errors) {
        enum bsc_err serr = cfg__secrets_build(cfg);

        if (serr == BSC_ENOMEM)
            v.oom = true;
        else if (serr)
            cfg__diag(s, false, 0, 0, "more than %d secret values (keys, admin key, auth "
                      "headers): the gateway could not scrub them all", BSC_REDACT_MAX);
    }
    cfg__clients_wipe(cfg); /* the redaction set has its copy: only hashes stay */
    free(v.psrc);
    free(v.tsrc);
    free(v.rsrc);
    if (v.oom || s->oom)
        err = BSC_ENOMEM;
    else if (s->n_errors)
        err = BSC_EINVAL;
    if (err) {
        cfg__free(cfg);
        return err;
    }
    atomic_init(&cfg->refs, 1);
    *out = cfg;
    return BSC_OK;
}
