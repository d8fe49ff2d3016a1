/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/stream/utf8.c */
/* fuzz_utf8.c -- libFuzzer target for the UTF-8 helpers. Checks, aborting when one breaks:
 *   - bsc_utf8_valid() agrees with a reference decoder written differently (code point arithmetic
 *     and range checks instead of per-lead second-byte ranges);
 *   - utf8_sanitize() output is valid, equals the input exactly when the input is valid, and
 *     sanitizing it again changes nothing;
 *   - utf8_complete_prefix() holds back at most 3 bytes, which start with a lead byte;
 *   - the carry, fed the input cut anywhere (two cuts, byte by byte), emits only whole
 *     characters per feed and reassembles exactly the one-pass utf8_sanitize() output.
 * Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"
#include "core/buf.h"
#include "stream/utf8.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_utf8: invariant broken: %s\n", what);
    abort();
}

/* Decodes every character to its code point and rejects overlongs, surrogates and values
 * past U+10FFFF after the fact. */
static bool ref_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        uint8_t b = s[i];
        size_t n;
        uint32_t cp, min;

        if (b < 0x80) {
            i++;
            continue;
        }
        if ((b & 0xe0) == 0xc0)
            n = 2;
        else if ((b & 0xf0) == 0xe0)
            n = 3;
        else if ((b & 0xf8) == 0xf0)
            n = 4;
        else
            return false;
        cp = b & (0x7fu >> n);
        min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
        if (len - i < n)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n;
    }
    return true;
}

static bool same(const struct bsc_buf *a, const struct bsc_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

static void carry_run(const uint8_t *data, size_t size, const size_t *cuts, size_t ncuts,
                      const struct bsc_buf *want)
{
    struct utf8_carry c;
    struct bsc_buf out;
    size_t from = 0;

    bsc_buf_init(&out, 3 * size + 16);
    utf8_carry_init(&c);
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : size, before = out.len;

        if (utf8_carry_feed(&c, &out, (const char *)data + from, to - from))
            die("carry feed failed within its bound");
        if (!bsc_utf8_valid(out.p ? out.p + before : "", out.len - before))
            die("a feed emitted a partial character");
        if (c.len > 3)
            die("carry holds more than 3 bytes");
        from = to;
    }
    if (utf8_carry_flush(&c, &out))
        die("carry flush failed");
    if (!same(&out, want))
        die("carry output differs from one-pass sanitize");
    bsc_buf_cleanup(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = size ? (const char *)data : "";
    struct bsc_buf clean, twice;
    bool valid = bsc_utf8_valid(p, size);
    size_t n = utf8_complete_prefix(p, size);

    if (valid != ref_valid(data, size))
        die("bsc_utf8_valid disagrees with the reference decoder");
    if (n > size || size - n > 3)
        die("complete prefix holds back too much");
    if (n < size && (data[n] < 0xc2 || data[n] > 0xf4))
        die("held tail does not start with a lead byte");
    if (valid && n != size)
        die("a valid string was held back");

    /* Each input byte becomes at most 3 bytes (one U+FFFD). */
    bsc_buf_init(&clean, 3 * size + 16);
    if (utf8_sanitize(&clean, p, size))
        die("sanitize failed within its bound");
    if (!bsc_utf8_valid(clean.p ? clean.p : "", clean.len))
        die("sanitize output is not valid");
    if (valid && (clean.len != size || (size && memcmp(clean.p, data, size) != 0)))
        die("sanitize changed valid input");
    if (!valid && clean.len == size && size && memcmp(clean.p, data, size) == 0)
        die("sanitize left invalid input as it was");
    bsc_buf_init(&twice, 3 * clean.len + 16);
    if (utf8_sanitize(&twice, clean.p ? clean.p : "", clean.len) || !same(&clean, &twice))
        die("sanitize is not idempotent");
    bsc_buf_cleanup(&twice);

    {
        size_t a = size ? data[0] % (size + 1) : 0;
        size_t b = a + (size > 1 ? data[size - 1] % (size - a + 1) : 0);
        size_t cuts[2] = {a, b};

        carry_run(data, size, cuts, 2, &clean);
    }
    if (size <= 1024) {
        size_t *cuts = malloc((size + 1) * sizeof(*cuts));

        if (!cuts)
            return 0;
        for (size_t i = 0; i < size; i++)
            cuts[i] = i + 1;
        carry_run(data, size, cuts, size, &clean);
        free(cuts);
    }
    bsc_buf_cleanup(&clean);
    return 0;
}
