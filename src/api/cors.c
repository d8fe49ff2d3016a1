/* SPDX-License-Identifier: MIT */
/* cors.c -- what a browser may do with the gateway. A page on any origin can make a
 * browser send a "simple" cross-origin POST (text/plain body) to a gateway on localhost,
 * and a DNS-rebinding page can even read the answers; either spends the provider keys.
 * So a request carrying an Origin not listed in cors.allowed_origins is refused, listed
 * origins get CORS headers and preflight answers, and a listener bound to loopback takes
 * only Host values that name loopback (plus allowed_hosts); the host of an absolute-form
 * request target is held to the same rule (400). It never routes anything.
 * See docs/configuration.md (cors, allowed_hosts). */
#include <string.h>

#include "api/cors.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/compat.h"
#include "server/server.h"

#define PREFLIGHT_MAX_AGE "600"
#define ALLOW_HEADERS_MAX 1024 /* the echoed Access-Control-Allow-Headers value */

static const char expose_headers[] =
    "x-request-id, x-bascule-attempts, x-bascule-buffered, x-bascule-idempotent-replay, "
    "x-bascule-recovery-reason, x-bascule-target, x-bascule-workflow, retry-after";

/* Request headers a browser client of the gateway needs: the OpenAI and Anthropic SDKs
 * (x-stainless-*, anthropic-*, openai-*), the idempotency key and bascule's own headers. */
static const char *const allowed_names[] = {
    "authorization", "content-type", "x-api-key", "anthropic-version", "anthropic-beta",
    "anthropic-dangerous-direct-browser-access", "idempotency-key", "x-request-id",
    "openai-organization", "openai-project", "x-admin-key",
};
static const char *const allowed_prefixes[] = {"x-bascule-", "x-stainless-"};

static bool is_loopback_listener(const char *h)
{
    return strncmp(h, "127.", 4) == 0 || strcmp(h, "::1") == 0 || strcmp(h, "[::1]") == 0;
}

/* The host part of a Host value: "[v6]" or the name before an optional ":digits" port.
 * {NULL, 0} when the value is malformed (a bare IPv6 address, a port that is not digits). */
static struct bsc_str host_name(struct bsc_str v, bool *has_port)
{
    const char *colon;
    size_t n = v.len;

    *has_port = false;
    if (v.len && v.p[0] == '[') {
        const char *close = memchr(v.p, ']', v.len);

        if (!close)
            return BSC_STR_NULL;
        n = (size_t)(close - v.p) + 1;
    } else {
        colon = memchr(v.p, ':', v.len);
        if (colon)
            n = (size_t)(colon - v.p);
    }
    if (n == v.len)
        return bsc_str_make(v.p, n);
    if (v.p[n] != ':' || n + 1 == v.len)
        return BSC_STR_NULL;
    for (size_t i = n + 1; i < v.len; i++)
        if (v.p[i] < '0' || v.p[i] > '9')
            return BSC_STR_NULL;
    *has_port = true;
    return bsc_str_make(v.p, n);
}

static bool names_loopback(struct bsc_str name)
{
    return bsc_str_ieq(name, BSC_STR("localhost")) || bsc_str_eq(name, BSC_STR("127.0.0.1")) ||
           bsc_str_eq(name, BSC_STR("[::1]"));
}

/* An allowed_hosts entry with a port must match the whole value; one without, any port. */
static bool host_listed(const struct cfg *cfg, struct bsc_str value, struct bsc_str name)
{
    for (size_t i = 0; i < cfg->allowed_hosts.n; i++) {
        struct bsc_str want = bsc_str_cstr(cfg->allowed_hosts.items[i]);

        if (bsc_str_ieq(want, value) || bsc_str_ieq(want, name))
            return true;
    }
    return false;
}

/* DNS rebinding: a page whose name resolves to 127.0.0.1 talks to the gateway with its own
 * name in Host. A request without Host (HTTP/1.0) passes: browsers always send one. */
static bool host_allowed(struct srv_req *req, const struct cfg *cfg, const char *listen_host)
{
    struct bsc_str value = srv_req_header(req, BSC_STR("host")), name;
    bool loopback = is_loopback_listener(listen_host), has_port;

    if (!loopback && cfg->allowed_hosts.n == 0)
        return true;
    if (!value.p)
        return true;
    name = host_name(value, &has_port);
    if (!name.p)
        return false;
    if (loopback && names_loopback(name))
        return true;
    return host_listed(cfg, value, name);
}

/* An absolute-form target ("POST http://h/v1/...") names the host the request is for, and
 * RFC 9112 §3.2.2 makes it, not Host, the target's authority: a front proxy may route on
 * it. So it is held to the Host rule: a loopback name on a loopback listener, an
 * allowed_hosts entry, or the listener's own address; where no Host rule applies (another
 * listener without allowed_hosts), it must be the request's Host value itself, so that
 * nothing reads this request as being for another host than the one it was served as. */
BSC_TESTABLE bool api__target_host_allowed(struct bsc_str auth, struct bsc_str host,
                                           const struct cfg *cfg, const char *listen_host)
{
    struct bsc_str name, bare;
    bool loopback = is_loopback_listener(listen_host), has_port;

    if (!auth.p)
        return true;
    name = host_name(auth, &has_port);
    if (!name.p)
        return false;
    bare = name.len > 1 && name.p[0] == '[' ? bsc_str_make(name.p + 1, name.len - 2) : name;
    if ((loopback && names_loopback(name)) || bsc_str_ieq(bare, bsc_str_cstr(listen_host)))
        return true;
    if (host_listed(cfg, auth, name))
        return true;
    return !loopback && cfg->allowed_hosts.n == 0 && (!host.p || bsc_str_ieq(host, auth));
}

static bool target_allowed(struct srv_req *req, const struct cfg *cfg, const char *listen_host)
{
    return api__target_host_allowed(srv_req_authority(req), srv_req_header(req, BSC_STR("host")),
                                    cfg, listen_host);
}

static bool origin_allowed(const struct cfg *cfg, struct bsc_str origin)
{
    const struct cfg_strs *l = &cfg->cors.allowed_origins;

    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], "*") == 0 || bsc_str_ieq(bsc_str_cstr(l->items[i]), origin))
            return true;
    return false;
}

static bool header_name_allowed(struct bsc_str name)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(allowed_names); i++)
        if (bsc_str_ieq(name, bsc_str_cstr(allowed_names[i])))
            return true;
    for (size_t i = 0; i < BSC_ARRAY_LEN(allowed_prefixes); i++) {
        struct bsc_str p = bsc_str_cstr(allowed_prefixes[i]);

        if (name.len > p.len && bsc_str_ieq(bsc_str_make(name.p, p.len), p))
            return true;
    }
    return false;
}

/* Access-Control-Allow-Headers: the requested names that are allowed (a name left out
 * makes the browser fail its preflight), or the fixed list when none were requested. */
static void allow_headers(struct bsc_buf *b, struct bsc_str requested)
{
    const char *p = requested.p, *end = requested.p + requested.len;

    if (!requested.len) {
        for (size_t i = 0; i < BSC_ARRAY_LEN(allowed_names); i++) {
            if (i)
                bsc_buf_append_cstr(b, ", ");
            bsc_buf_append_cstr(b, allowed_names[i]);
        }
        return;
    }
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        struct bsc_str name = bsc_str_trim(bsc_str_make(p, (size_t)((comma ? comma : end) - p)));

        if (name.len && header_name_allowed(name)) {
            if (b->len)
                bsc_buf_append_cstr(b, ", ");
            bsc_buf_append(b, name.p, name.len);
        }
        p = comma ? comma + 1 : end;
    }
}

static void preflight(struct srv_req *req, struct bsc_str origin)
{
    struct bsc_buf allow;
    struct srv_header h[5] = {
        {BSC_STR("Access-Control-Allow-Origin"), origin},
        {BSC_STR("Vary"), BSC_STR("Origin")},
        {BSC_STR("Access-Control-Allow-Methods"), BSC_STR("GET, POST, PUT, OPTIONS")},
        {BSC_STR("Access-Control-Max-Age"), BSC_STR(PREFLIGHT_MAX_AGE)},
        {BSC_STR("Access-Control-Allow-Headers"), BSC_STR_NULL},
    };

    bsc_buf_init(&allow, ALLOW_HEADERS_MAX);
    allow_headers(&allow, srv_req_header(req, BSC_STR("access-control-request-headers")));
    h[4].value = bsc_str_make(allow.p, allow.len);
    /* Nothing requested was allowed: no Allow-Headers at all, the browser refuses. */
    srv_resp_send(req, 204, NULL, h, allow.len ? 5 : 4, NULL, 0);
    bsc_buf_cleanup(&allow);
}

/* A page of the gateway itself (the console) calling back: Origin is http://<Host>. The Host
 * has passed host_allowed (DNS rebinding), so no other site can make this match. */
static bool same_origin(struct srv_req *req, struct bsc_str origin)
{
    struct bsc_str host = srv_req_header(req, BSC_STR("host"));
    static const char scheme[] = "http://";

    return host.len && origin.len == sizeof(scheme) - 1 + host.len &&
           strncasecmp(origin.p, scheme, sizeof(scheme) - 1) == 0 &&
           bsc_str_ieq(bsc_str_make(origin.p + sizeof(scheme) - 1, host.len), host);
}

static void refuse(struct srv_req *req, const char *code, const char *msg)
{
    srv_resp_error(req, 403, "invalid_request_error", code, msg);
}

bool api__guard(struct srv_req *req, const struct cfg *cfg, bool on_admin_port,
                const char **why)
{
    struct bsc_str origin = srv_req_header(req, BSC_STR("origin"));
    bool options = bsc_str_eq(srv_req_method(req), BSC_STR("OPTIONS"));
    /* The admin listener is judged by its own address (admin.listen). */
    const char *listen_host =
        on_admin_port && cfg->admin_listen_host ? cfg->admin_listen_host : cfg->listen_host;

    *why = NULL;
    if (!target_allowed(req, cfg, listen_host)) {
        *why = "request target host not allowed";
        srv_resp_error(req, 400, "invalid_request_error", "target_host_not_allowed",
                       "the request target names a host not served here: an absolute URI "
                       "(http://host/...) must name this gateway (the Host rules: loopback "
                       "names on a loopback listener, allowed_hosts, the listen address); "
                       "the gateway is not a proxy");
        return false;
    }
    if (!host_allowed(req, cfg, listen_host)) {
        *why = "host not allowed";
        refuse(req, "host_not_allowed",
               "this Host is not served here (a loopback listener takes localhost, 127.0.0.1 "
               "and [::1]; add others to allowed_hosts)");
        return false;
    }
    if (!origin.p || same_origin(req, origin))
        return true;
    if (!origin_allowed(cfg, origin)) {
        *why = "origin not allowed";
        refuse(req, "origin_not_allowed",
               "requests from this browser origin are not allowed (cors.allowed_origins)");
        return false;
    }
    if (options && srv_req_header(req, BSC_STR("access-control-request-method")).p) {
        *why = "cors preflight";
        preflight(req, origin);
        return false;
    }
    srv_resp_add_header(req, BSC_STR("Access-Control-Allow-Origin"), origin);
    srv_resp_add_header(req, BSC_STR("Vary"), BSC_STR("Origin"));
    srv_resp_add_header(req, BSC_STR("Access-Control-Expose-Headers"),
                        BSC_STR(expose_headers));
    return true;
}
