/* SPDX-License-Identifier: MIT */
/* redact.c -- the secret set and its in-place scrubber. A 256-bit table of the secrets'
 * first bytes makes the common case (a message that quotes no secret) one lookup per byte;
 * only a byte that starts some secret is compared further. Sets are small (the keys of one
 * config) and scrubs happen on failure paths only, so the compare is a plain loop. Does not
 * look for secrets in other encodings (percent or base64): upstreams quote keys as sent.
 * See docs/internals/secrets.md. */
#include "core/redact.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"

struct bsc_redact {
    struct bsc_str *vals; /* owned array; each p owned */
    size_t n, cap;
    uint8_t first[32]; /* bit c set: some secret starts with byte c */
};

struct bsc_redact *bsc_redact_new(void)
{
    return calloc(1, sizeof(struct bsc_redact));
}

size_t bsc_redact_count(const struct bsc_redact *rd)
{
    return rd ? rd->n : 0;
}

static bool has(const struct bsc_redact *rd, struct bsc_str secret)
{
    for (size_t i = 0; i < rd->n; i++)
        if (bsc_str_eq(rd->vals[i], secret))
            return true;
    return false;
}

static enum bsc_err grow(struct bsc_redact *rd)
{
    size_t cap = rd->cap ? rd->cap * 2 : 8;
    struct bsc_str *v;

    if (rd->n >= BSC_REDACT_MAX)
        return BSC_ELIMIT;
    if (cap > BSC_REDACT_MAX)
        cap = BSC_REDACT_MAX;
    v = realloc(rd->vals, cap * sizeof(*v));
    if (!v)
        return BSC_ENOMEM;
    rd->vals = v;
    rd->cap = cap;
    return BSC_OK;
}

enum bsc_err bsc_redact_add(struct bsc_redact *rd, struct bsc_str secret)
{
    enum bsc_err err;
    char *copy;
    unsigned char c;

    if (!rd || !secret.p || secret.len < BSC_REDACT_MIN_LEN || has(rd, secret))
        return BSC_OK;
    if (rd->n == rd->cap) {
        err = grow(rd);
        if (err)
            return err;
    }
    copy = malloc(secret.len);
    if (!copy)
        return BSC_ENOMEM;
    memcpy(copy, secret.p, secret.len);
    rd->vals[rd->n++] = bsc_str_make(copy, secret.len);
    c = (unsigned char)secret.p[0];
    rd->first[c >> 3] |= (uint8_t)(1u << (c & 7));
    return BSC_OK;
}

static bool starts_some(const struct bsc_redact *rd, unsigned char c)
{
    return rd->first[c >> 3] & (1u << (c & 7));
}

/* How many bytes from <s>[<at>] to mask (0: none), the longest of every secret's claim. */
static size_t match_at(const struct bsc_redact *rd, const char *s, size_t len, size_t at)
{
    size_t best = 0;

    for (size_t k = 0; k < rd->n; k++) {
        struct bsc_str v = rd->vals[k];
        size_t c = 0, room = len - at;

        if (v.p[0] != s[at])
            continue;
        while (c < v.len && c < room && v.p[c] == s[at + c])
            c++;
        /* The whole value; a cut echo (runs to the end); or most of the value. */
        if (c == v.len || (c >= BSC_REDACT_MIN_LEN && (c == room || 2 * c >= v.len)))
            best = c > best ? c : best;
    }
    return best;
}

/* Shortens <s> (length *<len>) so that it does not end inside a UTF-8 sequence. */
static void trim_partial_char(char *s, size_t *len)
{
    size_t start = *len, need;
    unsigned char lead;

    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80 && *len - start < 3)
        start--;
    if (start == 0)
        return;
    lead = (unsigned char)s[start - 1];
    if (lead < 0xC0)
        return; /* ASCII (or a stray continuation byte: not ours to fix) */
    need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (*len - (start - 1) < need) {
        *len = start - 1;
        s[*len] = '\0';
    }
}

/* Replaces <s>[<at>, <at> + <n>) by the mark within <cap>; returns the mark's length. */
static size_t mask(char *s, size_t *len, size_t cap, size_t at, size_t n)
{
    static const char mark[] = BSC_REDACT_MARK;
    size_t room = cap - 1, m = sizeof(mark) - 1, tail = *len - (at + n);

    if (m > room - at)
        m = room - at;
    if (at + m + tail > room)
        tail = room - at - m;
    memmove(s + at + m, s + at + n, tail);
    memcpy(s + at, mark, m);
    *len = at + m + tail;
    s[*len] = '\0';
    return m;
}

size_t bsc_redact_cstr(const struct bsc_redact *rd, char *s, size_t cap)
{
    size_t len, masked = 0, at = 0, before;

    if (!rd || !rd->n || !s || cap == 0)
        return 0;
    len = strnlen(s, cap - 1);
    s[len] = '\0';
    if (len < BSC_REDACT_MIN_LEN)
        return 0; /* every secret, and every prefix masked, is longer */
    while (at < len) {
        size_t n;

        if (!starts_some(rd, (unsigned char)s[at])) {
            at++;
            continue;
        }
        n = match_at(rd, s, len, at);
        if (!n) {
            at++;
            continue;
        }
        before = len;
        at += mask(s, &len, cap, at, n);
        masked++;
        if (len < before - n + (sizeof(BSC_REDACT_MARK) - 1))
            trim_partial_char(s, &len); /* the tail was cut to fit */
    }
    return masked;
}

void bsc_redact_free(struct bsc_redact *rd)
{
    if (!rd)
        return;
    for (size_t i = 0; i < rd->n; i++)
        free((char *)rd->vals[i].p);
    free(rd->vals);
    free(rd);
}
