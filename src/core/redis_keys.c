/* SPDX-License-Identifier: MIT */
/* redis_keys.c -- store.url parsing and the Redis key layout (redis_keys.h). Pure: no I/O,
 * unit-tested on its own (tests/unit/test_redis_keys.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/redis_keys.h"

static bool starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static enum bsc_err bad(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "store.url: %s", why);
    return BSC_EINVAL;
}

static enum bsc_err parse_unix(const char *rest, struct redis_url *out, char *err,
                               size_t errlen)
{
    const char *q = strchr(rest, '?');
    size_t n = q ? (size_t)(q - rest) : strlen(rest);

    if (n == 0 || rest[0] != '/' || n >= sizeof(out->path))
        return bad(err, errlen, "unix:// needs an absolute socket path");
    memcpy(out->path, rest, n);
    out->path[n] = '\0';
    if (q) {
        char *end;
        if (!starts(q, "?db="))
            return bad(err, errlen, "unix:// accepts only ?db=N");
        long db = strtol(q + 4, &end, 10);
        if (end == q + 4 || *end || db < 0 || db > 65535)
            return bad(err, errlen, "bad database number");
        out->db = (int)db;
    }
    return BSC_OK;
}

/* host[:port][/db] after the optional password. */
static enum bsc_err parse_hostport(const char *s, struct redis_url *out, char *err,
                                   size_t errlen)
{
    const char *slash = strchr(s, '/');
    const char *end_host = slash ? slash : s + strlen(s);
    const char *colon = memchr(s, ':', (size_t)(end_host - s));
    const char *hend = colon ? colon : end_host;
    char *e;

    if (hend == s || (size_t)(hend - s) >= sizeof(out->host))
        return bad(err, errlen, "missing or too long host");
    memcpy(out->host, s, (size_t)(hend - s));
    out->host[hend - s] = '\0';
    if (colon) {
        long port = strtol(colon + 1, &e, 10);
        if (e == colon + 1 || e != end_host || port < 1 || port > 65535)
            return bad(err, errlen, "bad port");
        out->port = (int)port;
    }
    if (slash && slash[1]) {
        long db = strtol(slash + 1, &e, 10);
        if (*e || db < 0 || db > 65535)
            return bad(err, errlen, "bad database number");
        out->db = (int)db;
    }
    return BSC_OK;
}

enum bsc_err redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen)
{
    const char *s, *at;

    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (!url)
        return bad(err, errlen, "missing");
    if (starts(url, "rediss://"))
        return bad(err, errlen, "rediss:// (TLS) is not supported by this build's client");
    if (starts(url, "unix://"))
        return parse_unix(url + 7, out, err, errlen);
    if (!starts(url, "redis://"))
        return bad(err, errlen, "expected redis:// or unix://");
    s = url + 8;
    at = strrchr(s, '@');
    if (at) {
        const char *pw = memchr(s, ':', (size_t)(at - s));
        pw = pw ? pw + 1 : s;
        if ((size_t)(at - pw) >= sizeof(out->password))
            return bad(err, errlen, "password too long");
        memcpy(out->password, pw, (size_t)(at - pw));
        out->password[at - pw] = '\0';
        s = at + 1;
    }
    return parse_hostport(s, out, err, errlen);
}

size_t rkey_idem(char *out, size_t cap, const char *prefix, struct bsc_str scope,
                 struct bsc_str key)
{
    int n = snprintf(out, cap, "%s{idem:%zu:%.*s:%.*s}", prefix ? prefix : RKEY_DEFAULT_PREFIX,
                     scope.len, (int)scope.len, scope.p ? scope.p : "", (int)key.len,
                     key.p ? key.p : "");

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t rkey_entity(char *out, size_t cap, const char *prefix, const char *kind,
                   struct bsc_str id)
{
    int n = snprintf(out, cap, "%s{%s:%.*s}", prefix ? prefix : RKEY_DEFAULT_PREFIX, kind,
                     (int)id.len, id.p ? id.p : "");

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t rkey_spend(char *out, size_t cap, const char *prefix, struct bsc_str client,
                  uint64_t period_ms)
{
    int n = snprintf(out, cap, "%s{spend:%.*s:%" PRIu64 "}",
                     prefix ? prefix : RKEY_DEFAULT_PREFIX, (int)client.len,
                     client.p ? client.p : "", period_ms);

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t rkey_cache(char *out, size_t cap, const char *prefix, struct bsc_str route,
                  struct bsc_str entry)
{
    int n = snprintf(out, cap, "%s{cache:%zu:%.*s}%s%.*s", prefix ? prefix : RKEY_DEFAULT_PREFIX,
                     route.len, (int)route.len, route.p ? route.p : "", entry.len ? ":" : "",
                     (int)entry.len, entry.p ? entry.p : "");

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}
