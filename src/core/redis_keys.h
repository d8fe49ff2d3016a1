/* SPDX-License-Identifier: MIT */
/* redis_keys.h -- the pure part of the Redis sharing: parsing store.url and the key layout.
 * Every key is <prefix>{<entity>} -- the braces are a Redis Cluster hash tag, so that all
 * the keys of one entity (today one key each) land in one slot. See docs/internals/redis.md
 * for the whole layout, including the keys reserved for limits. */
#ifndef BSC_CORE_REDIS_KEYS_H
#define BSC_CORE_REDIS_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/str.h"

#define RKEY_DEFAULT_PREFIX "bascule:"
#define RKEY_MAX 1024 /* bytes of a key, prefix included */

struct redis_url {
    char host[256];    /* "" for a unix socket */
    int port;          /* 6379 */
    char path[256];    /* unix:// socket path */
    char password[128];/* "" none */
    int db;            /* 0 */
};

/* Parses redis://[:password@]host[:port][/db] or unix:///path[?db=N]. rediss:// is refused
 * (no TLS in the client). BSC_OK, or BSC_EINVAL with <err> saying why. */
enum bsc_err redis_url_parse(const char *url, struct redis_url *out, char *err, size_t errlen);

/* <prefix>{idem:<len(scope)>:<scope>:<key>}: the length keeps "a:b"+"c" and "a"+"b:c"
 * apart. Returns the key's length, or 0 when it does not fit <cap>. */
size_t rkey_idem(char *out, size_t cap, const char *prefix, struct bsc_str scope,
                 struct bsc_str key);
/* <prefix>{<kind>:<id>}, for kind "ledger", "blob", "circuit", "cool", ... */
size_t rkey_entity(char *out, size_t cap, const char *prefix, const char *kind,
                   struct bsc_str id);

/* <prefix>{spend:<client>:<period_ms>}: one client's spend in the budget period that starts
 * at <period_ms> (0: a total). Returns the key's length, or 0 when it does not fit <cap>. */
size_t rkey_spend(char *out, size_t cap, const char *prefix, struct bsc_str client,
                  uint64_t period_ms);

/* <prefix>{cache:<len(route)>:<route>}: the route's generation of the shared response cache
 * (a counter DELETE /admin/cache bumps); with <entry> (not empty) one answer of that route,
 * <prefix>{cache:<len>:<route>}:<entry>. One hash tag per route: the lookup reads the
 * generation and the answer in one command on one slot. 0 when it does not fit <cap>. */
size_t rkey_cache(char *out, size_t cap, const char *prefix, struct bsc_str route,
                  struct bsc_str entry);

#endif
