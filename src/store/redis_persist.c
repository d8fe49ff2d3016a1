/* SPDX-License-Identifier: MIT */
/* redis_persist.c -- what Redis's own persistence settings make of a ledger write the gateway
 * acknowledged: the words of the start-up log line. Pure: the store's Redis thread reads
 * CONFIG GET appendonly, appendfsync and save and passes the values here. It does not change
 * Redis's settings and does not wait for replicas (WAIT). See docs/internals/redis.md. */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

static bool is(const char *v, const char *want)
{
    return v && strcmp(v, want) == 0;
}

enum store__durability store__redis_durability(const struct store__redis_persist *p, char *msg,
                                               size_t len)
{
    if (!p->appendonly || !p->appendfsync || !p->save) {
        snprintf(msg, len, "redis refused CONFIG GET of its persistence settings (appendonly, "
                           "appendfsync, save): how much of an acknowledged ledger write survives "
                           "a Redis crash is unknown");
        return STORE__UNKNOWN;
    }
    if (is(p->appendonly, "yes") && is(p->appendfsync, "always")) {
        snprintf(msg, len, "redis appendonly yes, appendfsync always: an acknowledged ledger "
                           "write is on disk before it is acknowledged");
        return STORE__DURABLE;
    }
    if (is(p->appendonly, "yes")) {
        snprintf(msg, len, "redis appendonly yes, appendfsync '%s', not 'always': the ledger "
                           "writes acknowledged in the last %s can be lost if Redis crashes or "
                           "its machine stops",
                 p->appendfsync,
                 is(p->appendfsync, "everysec") ? "second or so"
                                                : "seconds (until the system flushes the file)");
        return STORE__LOSSY;
    }
    if (p->save[0]) {
        snprintf(msg, len, "redis appendonly is '%s' (appendfsync does not apply): only RDB "
                           "snapshots (save '%.80s') keep data, so every ledger write acknowledged "
                           "since the last snapshot is lost if Redis crashes or is killed",
                 p->appendonly, p->save);
        return STORE__LOSSY;
    }
    snprintf(msg, len, "redis appendonly is '%s' and save is empty: NOTHING is durable; every "
                       "acknowledged ledger write is lost when Redis crashes, is killed or "
                       "restarts", p->appendonly);
    return STORE__NOTHING;
}
