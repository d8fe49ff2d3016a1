/* SPDX-License-Identifier: MIT */
/* token_table.h -- the process-wide table of OAuth access tokens by credential (a service
 * account file or a token file path): the refresher thread (gauth/) writes, adapters read.
 * One of the commented globals: a mutex guards it, held only to copy a token in or out, so a
 * request never waits on a refresh. See docs/internals/provider-bedrock-vertex.md. */
#ifndef BSC_CORE_TOKEN_TABLE_H
#define BSC_CORE_TOKEN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The longest token kept (Google access tokens are ~200-2000 bytes). */
#define BSC_TOKEN_MAX 4096
/* The most credentials tracked. */
#define BSC_TOKEN_SLOTS 64

/* Stores <token> for <cred>, valid until <expires_s> (Unix seconds). BSC_ELIMIT when the
 * token or the table is too large. */
enum bsc_err bsc_token_put(const char *cred, const char *token, int64_t expires_s);

/* Copies the token of <cred> into <out> (<len> bytes) when one is held that is still valid
 * at <now_s>; false otherwise (<out> is then ""). Never blocks on anything but the mutex. */
bool bsc_token_get(const char *cred, int64_t now_s, char *out, size_t len);

/* Forgets <cred>'s token (a refresh failed and it expired). */
void bsc_token_drop(const char *cred);

#endif
