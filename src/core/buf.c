/* SPDX-License-Identifier: MIT */
/* buf.c -- bounded growable buffer. Growth doubles, clipped to <max>. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"

void bsc_buf_init(struct bsc_buf *b, size_t max)
{
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void bsc_buf_cleanup(struct bsc_buf *b)
{
    BSC_FREE(b->p);
    b->len = 0;
    b->cap = 0;
}

void bsc_buf_reset(struct bsc_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

/* Makes room for <extra> more bytes plus the terminator. */
static enum bsc_err reserve(struct bsc_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > b->max - b->len || b->len > b->max)
        return BSC_ELIMIT;
    need = b->len + extra;
    if (need <= b->cap && b->p)
        return BSC_OK;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max)
        cap = b->max;
    p = realloc(b->p, cap + 1);
    if (!p)
        return BSC_ENOMEM;
    b->p = p;
    b->cap = cap;
    return BSC_OK;
}

enum bsc_err bsc_buf_reserve(struct bsc_buf *b, size_t extra)
{
    return reserve(b, extra);
}

enum bsc_err bsc_buf_append(struct bsc_buf *b, const void *p, size_t len)
{
    enum bsc_err err = reserve(b, len);

    if (err)
        return err;
    if (len)
        memcpy(b->p + b->len, p, len);
    b->len += len;
    b->p[b->len] = '\0';
    return BSC_OK;
}

enum bsc_err bsc_buf_append_str(struct bsc_buf *b, struct bsc_str s)
{
    return bsc_buf_append(b, s.p, s.len);
}

enum bsc_err bsc_buf_append_cstr(struct bsc_buf *b, const char *s)
{
    return bsc_buf_append(b, s, strlen(s));
}

enum bsc_err bsc_buf_append_char(struct bsc_buf *b, char c)
{
    return bsc_buf_append(b, &c, 1);
}

enum bsc_err bsc_buf_appendf(struct bsc_buf *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    int n;
    enum bsc_err err;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return BSC_EINVAL;
    if ((size_t)n < sizeof(small))
        return bsc_buf_append(b, small, (size_t)n);
    err = reserve(b, (size_t)n);
    if (err)
        return err;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return BSC_OK;
}

enum bsc_err bsc_buf_append_json_str(struct bsc_buf *b, struct bsc_str s)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = b->len;
    enum bsc_err err = bsc_buf_append_char(b, '"');

    for (size_t i = 0; !err && i < s.len; i++) {
        unsigned char c = (unsigned char)s.p[i];
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

        switch (c) {
        case '"': err = bsc_buf_append(b, "\\\"", 2); break;
        case '\\': err = bsc_buf_append(b, "\\\\", 2); break;
        case '\n': err = bsc_buf_append(b, "\\n", 2); break;
        case '\r': err = bsc_buf_append(b, "\\r", 2); break;
        case '\t': err = bsc_buf_append(b, "\\t", 2); break;
        default:
            err = c < 0x20 ? bsc_buf_append(b, esc, 6) : bsc_buf_append_char(b, (char)c);
        }
    }
    if (!err)
        err = bsc_buf_append_char(b, '"');
    if (err) {
        b->len = start;
        if (b->p)
            b->p[start] = '\0';
    }
    return err;
}

enum bsc_err bsc_buf_append_u64(struct bsc_buf *b, unsigned long long v)
{
    char tmp[24];
    size_t i = sizeof(tmp);

    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return bsc_buf_append(b, tmp + i, sizeof(tmp) - i);
}

enum bsc_err bsc_buf_append_i64(struct bsc_buf *b, long long v)
{
    enum bsc_err err;

    if (v >= 0)
        return bsc_buf_append_u64(b, (unsigned long long)v);
    err = bsc_buf_append_char(b, '-');
    return err ? err : bsc_buf_append_u64(b, 0ull - (unsigned long long)v);
}

enum bsc_err bsc_buf_append_milli(struct bsc_buf *b, unsigned long long thousandths)
{
    char frac[4] = {'.', (char)('0' + thousandths / 100 % 10), (char)('0' + thousandths / 10 % 10),
                    (char)('0' + thousandths % 10)};
    enum bsc_err err = bsc_buf_append_u64(b, thousandths / 1000);

    return err ? err : bsc_buf_append(b, frac, sizeof(frac));
}

void bsc_buf_consume(struct bsc_buf *b, size_t n)
{
    if (n >= b->len) {
        bsc_buf_reset(b);
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = '\0';
}

char *bsc_buf_take(struct bsc_buf *b, size_t *len)
{
    char *p = b->p;

    if (len)
        *len = b->len;
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
