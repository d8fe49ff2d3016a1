/* SPDX-License-Identifier: MIT */
/* buf.c -- bounded growable buffer. Growth doubles, clipped to <max>. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/asan.h"
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

void bsc_buf_reuse(struct bsc_buf *b, size_t max)
{
    if (b->cap > max)
        bsc_buf_cleanup(b);
    b->max = max;
    bsc_buf_reset(b);
}

void bsc_buf_park(struct bsc_buf *b, size_t keep)
{
    if (b->cap > keep)
        bsc_buf_cleanup(b);
    b->len = 0; /* the terminator is written by bsc_buf_unpark: parking twice is harmless */
    if (b->p)
        BSC_ASAN_POISON(b->p, b->cap + 1);
}

void bsc_buf_unpark(struct bsc_buf *b)
{
    if (b->p)
        BSC_ASAN_UNPOISON(b->p, b->cap + 1);
    bsc_buf_reset(b);
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

enum bsc_err bsc__buf_append_grow(struct bsc_buf *b, const void *p, size_t len)
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

/* Bytes that a JSON string cannot hold as they are: controls, the quote, the backslash. */
static const bool json_escaped[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
    [0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1,
    [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
    [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1,
    [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, ['"'] = 1,  ['\\'] = 1,
};

/* The escaped form's length: \" \\ \n \r \t are short, other controls \u00XX. */
static size_t json_escape_len(unsigned char c)
{
    if (!json_escaped[c])
        return 1;
    return c >= 0x20 || c == '\n' || c == '\r' || c == '\t' ? 2 : 6;
}

static size_t put_json_escape(char *out, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e = c == '"' ? '"' : c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;

    out[0] = '\\';
    if (e) {
        out[1] = e;
        return 2;
    }
    memcpy(out + 1, "u00", 3);
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
}

/* Eight bytes at a time (SWAR): see bsc_json_escaped_bits8 (buf.h). */
static inline uint64_t escaped_bits8(uint64_t x)
{
    return bsc_json_escaped_bits8(x);
}

/* Writes the last 4 to 7 bytes <p>..<end> (none of them escaped) as two 4-byte copies that
 * overlap, or returns NULL when one of them is escaped. */
static inline char *put_clean_tail4(char *out, const unsigned char *p, const unsigned char *end)
{
    size_t n = (size_t)(end - p);
    uint32_t lo, hi;

    memcpy(&lo, p, 4);
    memcpy(&hi, end - 4, 4);
    if (escaped_bits8(lo | (uint64_t)hi << 32))
        return NULL;
    memcpy(out, &lo, 4);
    memcpy(out + n - 4, &hi, 4);
    return out + n;
}

/* Writes <p>..<end> escaped at <out> and returns the end of what it wrote. A block of 16
 * (SSE2) or 8 (SWAR) bytes is stored whole before its first escaped byte is known, then
 * <out> moves past the clean part only: the caller's room (at least the escaped length of
 * what is left, plus the closing quote) always holds a whole block while one is left to
 * read. A clean tail of 4 to 7 bytes is two overlapping copies, a shorter one byte-wise. */
static char *put_json_escaped(char *out, const unsigned char *p, const unsigned char *end)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w, bits;
    char *done;

#ifdef __SSE2__
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned mask = bsc_json_escaped_mask16(x);

        _mm_storeu_si128((__m128i *)(void *)out, x);
        if (!mask) {
            p += 16;
            out += 16;
            continue;
        }
        p += __builtin_ctz(mask);
        out += __builtin_ctz(mask);
        out += put_json_escape(out, *p++);
    }
#endif
    while (end - p >= 8) {
        memcpy(&w, p, 8);
        memcpy(out, &w, 8);
        if (!(bits = escaped_bits8(w))) {
            p += 8;
            out += 8;
            continue;
        }
        p += __builtin_ctzll(bits) / 8;
        out += __builtin_ctzll(bits) / 8;
        out += put_json_escape(out, *p++);
    }
    if (end - p >= 4 && (done = put_clean_tail4(out, p, end)) != NULL)
        return done;
#endif
    while (p < end) {
        unsigned char c = *p++;

        if (!json_escaped[c])
            *out++ = (char)c;
        else
            out += put_json_escape(out, c);
    }
    return out;
}

bool bsc_json_plain(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (json_escaped[(unsigned char)p[i]])
            return false;
    return true;
}

/* Room for the escaped string is made first (the worst case when that fits, else the
 * exact size), so the copy writes unchecked, in one pass. */
enum bsc_err bsc_buf_append_json_str(struct bsc_buf *b, struct bsc_str s)
{
    const unsigned char *p = (const unsigned char *)s.p, *end = s.len ? p + s.len : p;
    enum bsc_err err;
    char *out;

    if (s.len > (SIZE_MAX - 2) / 6)
        return BSC_ELIMIT;
    if ((!b->p || b->cap - b->len < s.len * 6 + 2) && reserve(b, s.len * 6 + 2) != BSC_OK) {
        size_t need = 2;
        for (size_t k = 0; k < s.len; k++)
            need += json_escape_len(p[k]);
        if ((err = reserve(b, need)) != BSC_OK)
            return err;
    }
    out = b->p + b->len;
    *out++ = '"';
    out = put_json_escaped(out, p, end);
    *out++ = '"';
    b->len = (size_t)(out - b->p);
    b->p[b->len] = '\0';
    return BSC_OK;
}

enum bsc_err bsc_buf_append_u64(struct bsc_buf *b, unsigned long long v)
{
    char tmp[BSC_NUM_TEXT_MAX];
    const char *p = bsc_num_text(tmp, v, 10);

    return bsc_buf_append(b, p, (size_t)(tmp + BSC_NUM_TEXT_MAX - p));
}

enum bsc_err bsc_buf_append_i64(struct bsc_buf *b, long long v)
{
    enum bsc_err err;

    if (v >= 0)
        return bsc_buf_append_u64(b, (unsigned long long)v);
    err = bsc_buf_append_char(b, '-');
    return err ? err : bsc_buf_append_u64(b, 0ull - (unsigned long long)v);
}

enum bsc_err bsc_buf_append_fixed(struct bsc_buf *b, unsigned long long units, unsigned decimals)
{
    char frac[1 + BSC_BUF_FIXED_MAX_DECIMALS];
    unsigned long long whole = units;
    enum bsc_err err;

    if (decimals > BSC_BUF_FIXED_MAX_DECIMALS)
        return BSC_EINVAL;
    frac[0] = '.';
    /* The decimals from the right, each a division by the constant 10 (a multiply and a
     * shift, not a DIV: see bsc_num_text); what is left is the whole part. */
    for (unsigned i = decimals; i >= 1; i--) {
        frac[i] = (char)('0' + whole % 10);
        whole /= 10;
    }
    if ((err = bsc_buf_append_u64(b, whole)) != BSC_OK || !decimals)
        return err;
    return bsc_buf_append(b, frac, 1 + decimals);
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
