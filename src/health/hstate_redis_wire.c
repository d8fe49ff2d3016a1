/* SPDX-License-Identifier: MIT */
/* hstate_redis_wire.c -- reading what the Redis health backend finds in Redis: messages,
 * peeked records, Lua replies. Pure. See hstate_redis_wire.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/hstate_redis_wire.h"

bool hr__msg_parse(const char *msg, struct hr_msg *out)
{
    int n = 0;

    if (sscanf(msg, "%23s %c %" SCNu64 " %d %d %n", out->inst, &out->kind, &out->ms,
               &out->reason, &out->idx, &n) != 5 ||
        n == 0)
        return false;
    out->id = msg + n;
    return true;
}

int hr__msg_format(const struct hr_msg *m, char *out, size_t len)
{
    return snprintf(out, len, "%s %c %" PRIu64 " %d %d %s", m->inst, m->kind, m->ms, m->reason,
                    m->idx, m->id);
}

static bool int_at(const redisReply *r, size_t i, long long *v)
{
    if (!r->element[i] || r->element[i]->type != REDIS_REPLY_INTEGER)
        return false;
    *v = r->element[i]->integer;
    return true;
}

bool hr__ask_read(const redisReply *r, uint64_t want, uint64_t *grant, int64_t *wait_ms)
{
    long long g, w = 0;

    if (!r)
        return false;
    if (r->type == REDIS_REPLY_INTEGER)
        g = r->integer;
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !int_at(r, 0, &g) ||
             !int_at(r, 1, &w))
        return false;
    if (g < 0 || (unsigned long long)g > want || w < 0)
        return false;
    *grant = (uint64_t)g;
    *wait_ms = w < HR_ASK_WAIT_MAX_MS ? w : HR_ASK_WAIT_MAX_MS;
    return true;
}

/* {value, PTTL} with a positive PTTL: the record and how long it has left. */
static bool peeked(const redisReply *r, int value_type, uint64_t *left_ms)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element[0] ||
        !r->element[1] || r->element[0]->type != value_type ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer <= 0)
        return false;
    *left_ms = (uint64_t)r->element[1]->integer;
    return true;
}

bool hr__cool_read(const redisReply *r, struct hr_cool *out)
{
    const char *v, *tab;
    char *end;
    long reason;

    if (!peeked(r, REDIS_REPLY_STRING, &out->left_ms))
        return false;
    v = r->element[0]->str;
    errno = 0;
    reason = strtol(v, &end, 10);
    if (end == v || errno || reason < INT_MIN || reason > INT_MAX || (*end && *end != '\t'))
        return false;
    tab = strchr(v, '\t');
    out->reason = (int)reason;
    out->model = tab && tab[1] ? tab + 1 : NULL;
    return true;
}

bool hr__circuit_read(const redisReply *r, uint64_t *left_ms, uint32_t *opens)
{
    const char *v;
    char *end;
    unsigned long long n;

    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !r->element[1] ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer <= 0)
        return false;
    *left_ms = (uint64_t)r->element[1]->integer;
    *opens = 0;
    /* "open <openings since the last recovery>"; "open" alone (an older writer) or any other
     * value: open, with no count to carry. */
    v = r->element[0] && r->element[0]->type == REDIS_REPLY_STRING ? r->element[0]->str : NULL;
    if (v && strncmp(v, "open ", 5) == 0 && v[5] >= '0' && v[5] <= '9') {
        errno = 0;
        n = strtoull(v + 5, &end, 10);
        if (!errno && !*end)
            *opens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    return true;
}
