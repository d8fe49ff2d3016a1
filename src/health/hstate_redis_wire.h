/* SPDX-License-Identifier: MIT */
/* hstate_redis_wire.h -- what the Redis health backend reads from Redis, as pure functions
 * (no connection, no clock): the transition messages of the other instances (pub/sub), the
 * cooldown and circuit records a (re)connected instance peeks at, and the replies of the
 * limits' Lua scripts. Everything read is untrusted (another version, another program on the
 * same Redis, a corrupt value): a shape not written by hstate_redis*.c reads as nothing.
 * tests/fuzz/fuzz_redis_records.c holds them to that. */
#ifndef BSC_HEALTH_HSTATE_REDIS_WIRE_H
#define BSC_HEALTH_HSTATE_REDIS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define HR_INSTANCE_MAX 23 /* an instance id's characters */

/* One transition message: "<instance> <kind> <ms> <reason> <idx> <id>". */
struct hr_msg {
    char inst[HR_INSTANCE_MAX + 1];
    char kind;      /* 'o', 'c', 'k', 'm' (others are read and ignored by the caller) */
    uint64_t ms;
    int reason, idx;
    const char *id; /* the rest of the message (NUL-terminated), borrowed from it */
};

/* Reads <msg> (NUL-terminated). False when it is not of that shape. */
bool hr__msg_parse(const char *msg, struct hr_msg *out);
/* Writes the message of <m> (its <id> included) into <out>; returns what snprintf does. */
int hr__msg_format(const struct hr_msg *m, char *out, size_t len);

/* The reply of a limit's ask (LUA_LEASE_TAKE: the grant; LUA_BUCKET: {grant, wait}) for an
 * ask of <want>. False for a failed ask (an error, or any other shape or value: a grant
 * below 0 or above <want>, a wait below 0). A wait above HR_ASK_WAIT_MAX_MS (a bucket's
 * minute) is cut to it. */
#define HR_ASK_WAIT_MAX_MS 60000
bool hr__ask_read(const redisReply *r, uint64_t want, uint64_t *grant, int64_t *wait_ms);

/* A peeked cooldown record ({value, PTTL}): value "<reason>" (every model) or
 * "<reason>\t<model>". <model> points into <r> (NULL: every model). */
struct hr_cool {
    int reason;
    const char *model;
    uint64_t left_ms;
};
bool hr__cool_read(const redisReply *r, struct hr_cool *out);

/* A peeked circuit ({value, PTTL}): open for <left_ms> more, after <opens> openings since
 * its last recovery (value "open <n>"; 0 when the value carries no count). */
bool hr__circuit_read(const redisReply *r, uint64_t *left_ms, uint32_t *opens);

#endif
