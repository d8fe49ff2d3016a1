/* SPDX-License-Identifier: MIT */
/* utf8.h -- UTF-8 at chunk boundaries: where the last complete character ends, validation,
 * replacement of ill-formed sequences by U+FFFD (the "maximal subpart" practice of Unicode
 * §3.9 and WHATWG), and a carry that holds an incomplete tail between feeds, so text re-framed
 * for a client never ends in half a character. It does not normalize or count characters.
 * See docs/internals/streaming.md. */
#ifndef BSC_STREAM_UTF8_H
#define BSC_STREAM_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compat.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"

/* Returns the length of the longest prefix of <p> that does not end inside a multi-byte
 * character: <len> minus the trailing 1..3 bytes that are a well-formed but incomplete
 * sequence (one more byte could extend them), or <len> when there is none. Ill-formed bytes
 * are never held back (the sanitizer replaces them), so len - result <= 3. */
size_t utf8_complete_prefix(const char *p, size_t len);

/* Appends <p> to <out>, each ill-formed sequence replaced by one U+FFFD per maximal subpart
 * (e.g. "\xf0\x9f\x98" gives one U+FFFD, "\xc0\xaf" gives two). Valid runs are copied in bulk.
 * Returns BSC_OK, or BSC_ELIMIT / BSC_ENOMEM from <out>, which is then unchanged. */
enum bsc_err utf8_sanitize(struct bsc_buf *out, const char *p, size_t len);

/* An incomplete character held back between feeds. Embedded; all-zero is the empty state. */
struct utf8_carry {
    char tail[3];  /* a well-formed prefix of one character */
    uint8_t len;   /* bytes in <tail>, 0..3 */
};

/* Empties <c>. Cannot fail. */
void utf8_carry_init(struct utf8_carry *c);

/* Appends to <out> the held tail followed by <p>, sanitized, except a new incomplete tail at
 * the end, which <c> holds for the next call. Whatever the split points, the concatenated
 * output of feeds plus flush equals utf8_sanitize() of the concatenated input. On error
 * (BSC_ELIMIT, BSC_ENOMEM) <out> and <c> are unchanged. */
enum bsc_err utf8_carry_feed(struct utf8_carry *c, struct bsc_buf *out, const char *p, size_t len);

/* At the end of the text: appends U+FFFD for a held tail (it can no longer complete) and
 * empties <c>. BSC_OK when nothing was held. Errors as utf8_carry_feed(). */
enum bsc_err utf8_carry_flush(struct utf8_carry *c, struct bsc_buf *out);

/* True when <c> holds an incomplete character. */
static inline bool utf8_carry_is_pending(const struct utf8_carry *c)
{
    return c->len != 0;
}

#endif
