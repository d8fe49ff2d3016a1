/* SPDX-License-Identifier: MIT */
/* redis_record.h -- the idempotency record as store_redis.c keeps it in Redis, written and
 * read here without a connection (pure):
 *
 *     <i|c> <claim: 16 hex> <ttl_ms> <fingerprint: 64 hex>\n              the head
 *     <status> <0|1: streamed> <headers length>\n<headers><body>          complete ('c') only
 *
 * An in-flight record ('i') is the head alone; completing it (LUA_COMPLETE) turns its 'i'
 * into 'c' and appends the answer. What is read is untrusted (a corrupt value, another
 * program on the same Redis): only exactly what the writer writes reads as a record, so
 * writing back what was read gives the same bytes (tests/fuzz/fuzz_redis_records.c). */
#ifndef BSC_STORE_REDIS_RECORD_H
#define BSC_STORE_REDIS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/str.h"
#include "ledger/idempotency.h"

#define STORE_REDIS_HEAD_MAX 128 /* the longest head, its newline and a NUL */
#define STORE_REDIS_ANSWER_HEAD_MAX 48

struct store_redis_idem {
    char state; /* 'i' in flight, 'c' complete */
    uint64_t claim, ttl_ms;
    struct idem_fp fp;
    int status;                   /* 'c': 100..999 */
    bool stream;                  /* 'c' */
    struct bsc_str headers, body; /* 'c': slices of the value read */
};

/* Writes the head of <r> (state, claim, ttl, fingerprint) into <out>; returns its length. */
size_t store__redis_idem_head(const struct store_redis_idem *r, char out[STORE_REDIS_HEAD_MAX]);
/* Writes the line before a complete record's headers; returns its length. */
size_t store__redis_idem_answer_head(int status, bool stream, size_t headers_len,
                                     char out[STORE_REDIS_ANSWER_HEAD_MAX]);
/* Reads the record <v> of <len> bytes into <out>; false when it is not one. */
bool store__redis_idem_read(const char *v, size_t len, struct store_redis_idem *out);

#endif
