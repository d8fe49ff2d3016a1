/* SPDX-License-Identifier: MIT */
/* buf.h -- a growable byte buffer with a hard maximum set at init (curl's dynbuf).
 * It is always NUL-terminated past <len> when allocated, so text can be used as a
 * C string; the terminator does not count against <max>. */
#ifndef BSC_CORE_BUF_H
#define BSC_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

struct bsc_buf {
    char *p;    /* owned; NULL until the first append */
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated, terminator excluded */
    size_t max; /* appends past this fail with BSC_ELIMIT */
};

/* Cannot fail; allocates nothing. */
void bsc_buf_init(struct bsc_buf *b, size_t max);
/* Frees the storage; <b> is empty and reusable afterwards. */
void bsc_buf_cleanup(struct bsc_buf *b);
/* Keeps the storage, drops the contents. */
void bsc_buf_reset(struct bsc_buf *b);
/* bsc_buf_reset with a new maximum: the storage is kept when it is at most <max> bytes,
 * freed otherwise. <b> must be initialized or zeroed. */
void bsc_buf_reuse(struct bsc_buf *b, size_t max);
/* Drops the contents of a buffer set aside for a later owner (a pooled object): the storage
 * is kept when it is at most <keep> bytes, freed otherwise, so one large use does not pin
 * memory. Under AddressSanitizer the kept storage is unaddressable until bsc_buf_unpark. */
void bsc_buf_park(struct bsc_buf *b, size_t keep);
/* A parked buffer usable again: empty, its storage (if any) kept. */
void bsc_buf_unpark(struct bsc_buf *b);

/* Makes room for <extra> more bytes without appending (one allocation instead of a
 * doubling series when the final size is known). BSC_ELIMIT past <max>. */
enum bsc_err bsc_buf_reserve(struct bsc_buf *b, size_t extra);

/* The slow path of the appends below: grows the storage first. */
enum bsc_err bsc__buf_append_grow(struct bsc_buf *b, const void *p, size_t len);

/* Appends <len> bytes. BSC_ELIMIT leaves <b> unchanged; BSC_ENOMEM too. Inline: the
 * common case (room left) is a compare and a copy, on every log and response line. */
static inline enum bsc_err bsc_buf_append(struct bsc_buf *b, const void *p, size_t len)
{
    if (!b->p || len > b->cap - b->len)
        return bsc__buf_append_grow(b, p, len);
    if (len)
        memcpy(b->p + b->len, p, len);
    b->len += len;
    b->p[b->len] = '\0';
    return BSC_OK;
}

static inline enum bsc_err bsc_buf_append_str(struct bsc_buf *b, struct bsc_str s)
{
    return bsc_buf_append(b, s.p, s.len);
}

static inline enum bsc_err bsc_buf_append_cstr(struct bsc_buf *b, const char *s)
{
    return bsc_buf_append(b, s, strlen(s));
}

static inline enum bsc_err bsc_buf_append_char(struct bsc_buf *b, char c)
{
    return bsc_buf_append(b, &c, 1);
}

/* A string literal, its length known at compile time. */
#define BSC_BUF_APPEND_LIT(b, lit) bsc_buf_append((b), "" lit, sizeof(lit) - 1)
/* printf-style append; on error <b> is unchanged. */
enum bsc_err bsc_buf_appendf(struct bsc_buf *b, const char *fmt, ...) BSC_PRINTF(2, 3);
/* Appends <s> as a JSON string literal, quotes included, escaping as RFC 8259 asks. */
enum bsc_err bsc_buf_append_json_str(struct bsc_buf *b, struct bsc_str s);

/* The high bit of each byte of the eight in <x> (as loaded from memory, little-endian) that
 * a JSON string must escape -- a control, the quote, the backslash -- exact up to the lowest
 * one (a borrow runs only upward from a byte that is flagged itself); 0 when none is.
 * (v - 0x01..) & ~v flags a zero byte of v, (x - 0x20..) & ~x a byte below 0x20. */
static inline uint64_t bsc_json_escaped_bits8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');

    return (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high;
}

#ifdef __SSE2__
/* The same test sixteen bytes at a time: a bit for each byte of <x> that a JSON string
 * escapes (below 0x20 as an unsigned byte: its minimum with 0x1f is itself). */
static inline unsigned bsc_json_escaped_mask16(__m128i x)
{
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));

    m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* True when none of the <n> bytes at <p> is one a JSON string escapes: the bytes are the
 * string's text as they are. */
bool bsc_json_plain(const char *p, size_t n);

/* Decimal integers without printf (hot-path log lines). */
enum bsc_err bsc_buf_append_u64(struct bsc_buf *b, unsigned long long v);
enum bsc_err bsc_buf_append_i64(struct bsc_buf *b, long long v);
/* <units> / 10^<decimals> with exactly <decimals> decimals (at most 18), without printf:
 * (1234, 3) -> "1.234". */
#define BSC_BUF_FIXED_MAX_DECIMALS 18
enum bsc_err bsc_buf_append_fixed(struct bsc_buf *b, unsigned long long units, unsigned decimals);

/* <thousandths> / 1000 with exactly three decimals: 1234 -> "1.234". */
static inline enum bsc_err bsc_buf_append_milli(struct bsc_buf *b, unsigned long long thousandths)
{
    return bsc_buf_append_fixed(b, thousandths, 3);
}

/* Removes the first <n> bytes (n <= len). */
void bsc_buf_consume(struct bsc_buf *b, size_t n);

/* Hands the storage to the caller (who frees it) and leaves <b> empty. May be NULL. */
char *bsc_buf_take(struct bsc_buf *b, size_t *len);

static inline struct bsc_str bsc_buf_str(const struct bsc_buf *b)
{
    return bsc_str_make(b->p, b->len);
}

#endif
