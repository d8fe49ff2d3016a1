/* SPDX-License-Identifier: MIT */
/* token_table.c -- a small fixed table under one mutex; linear lookups (a handful of
 * credentials per process). The table is a commented global (docs/design.md §13.6): tokens
 * are process-wide, like the config snapshot, and outlive reloads. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/token_table.h"

struct slot {
    char cred[512];
    char token[BSC_TOKEN_MAX];
    int64_t expires_s;
    bool used;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[BSC_TOKEN_SLOTS]; /* guarded by <lock> */

static struct slot *find(const char *cred, bool add)
{
    struct slot *free_slot = NULL;

    for (size_t i = 0; i < BSC_TOKEN_SLOTS; i++) {
        if (slots[i].used && strcmp(slots[i].cred, cred) == 0)
            return &slots[i];
        if (!slots[i].used && !free_slot)
            free_slot = &slots[i];
    }
    if (!add || !free_slot)
        return NULL;
    snprintf(free_slot->cred, sizeof(free_slot->cred), "%s", cred);
    free_slot->used = true;
    return free_slot;
}

enum bsc_err bsc_token_put(const char *cred, const char *token, int64_t expires_s)
{
    struct slot *s;

    if (strlen(token) >= BSC_TOKEN_MAX || strlen(cred) >= sizeof(slots[0].cred))
        return BSC_ELIMIT;
    pthread_mutex_lock(&lock);
    s = find(cred, true);
    if (s) {
        snprintf(s->token, sizeof(s->token), "%s", token);
        s->expires_s = expires_s;
    }
    pthread_mutex_unlock(&lock);
    return s ? BSC_OK : BSC_ELIMIT;
}

bool bsc_token_get(const char *cred, int64_t now_s, char *out, size_t len)
{
    struct slot *s;
    bool ok = false;

    out[0] = '\0';
    pthread_mutex_lock(&lock);
    s = find(cred, false);
    if (s && s->token[0] && s->expires_s > now_s && strlen(s->token) < len) {
        memcpy(out, s->token, strlen(s->token) + 1);
        ok = true;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

void bsc_token_drop(const char *cred)
{
    struct slot *s;

    pthread_mutex_lock(&lock);
    s = find(cred, false);
    if (s) {
        memset(s->token, 0, sizeof(s->token));
        s->expires_s = 0;
    }
    pthread_mutex_unlock(&lock);
}
