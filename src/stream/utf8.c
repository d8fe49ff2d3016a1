/* SPDX-License-Identifier: MIT */
/* utf8.c -- one decoding step after Unicode Table 3-7 (well-formed byte sequences), used by
 * validation, replacement and the boundary carry alike, so the three can never disagree on
 * where a character or a maximal subpart ends. No tables, no allocation of our own. See
 * docs/internals/streaming.md. */
#include "stream/utf8.h"

#include <string.h>

#include "core/compat.h"

static const char replacement[3] = {'\xef', '\xbf', '\xbd'}; /* U+FFFD */

enum step_kind {
    STEP_OK = 0, /* a whole, well-formed character of <len> bytes */
    STEP_BAD,    /* ill-formed: <len> is its maximal subpart (1..3 bytes), one U+FFFD */
    STEP_SHORT,  /* the input ended after <len> bytes of a well-formed prefix */
    STEP_COUNT
};

struct step {
    enum step_kind kind;
    size_t len;
};

/* Decodes the sequence at <s> (n >= 1), telling a sequence cut short by the end of the
 * buffer (which the carry holds) from an ill-formed one (which is replaced). */
static struct step step(const unsigned char *s, size_t n)
{
    unsigned char lo, hi;
    size_t need;

    if (s[0] < 0x80)
        return (struct step){STEP_OK, 1};
    if (!bsc_utf8_lead(s[0], &need, &lo, &hi))
        return (struct step){STEP_BAD, 1};
    for (size_t i = 1; i < need; i++) {
        if (i >= n)
            return (struct step){STEP_SHORT, i};
        if (s[i] < lo || s[i] > hi)
            return (struct step){STEP_BAD, i};
        lo = 0x80;
        hi = 0xbf;
    }
    return (struct step){STEP_OK, need};
}

/* Skips ASCII from <i>, eight bytes at a time while it can. */
static size_t skip_ascii(const unsigned char *s, size_t i, size_t len)
{
    while (len - i >= 8) {
        uint64_t w;

        memcpy(&w, s + i, 8);
        if (w & UINT64_C(0x8080808080808080))
            break;
        i += 8;
    }
    while (i < len && s[i] < 0x80)
        i++;
    return i;
}

size_t utf8_complete_prefix(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;

    for (size_t k = 1; k <= 3 && k <= len; k++) {
        unsigned char b = s[len - k];

        if (b >= 0x80 && b < 0xc0)
            continue; /* a continuation byte: look further back for its lead */
        if (step(s + len - k, k).kind == STEP_SHORT)
            return len - k;
        break;
    }
    return len;
}

/* utf8_sanitize() without the rollback: <out> may hold a partial append on error. */
static enum bsc_err sanitize(struct bsc_buf *out, const unsigned char *s, size_t len)
{
    size_t i = 0, run = 0;
    enum bsc_err err;

    while ((i = skip_ascii(s, i, len)) < len) {
        struct step st = step(s + i, len - i);

        if (st.kind == STEP_OK) {
            i += st.len;
            continue;
        }
        err = bsc_buf_append(out, s + run, i - run);
        if (!err)
            err = bsc_buf_append(out, replacement, sizeof(replacement));
        if (err)
            return err;
        i += st.len; /* a truncated sequence at the end is one maximal subpart too */
        run = i;
    }
    return bsc_buf_append(out, s + run, len - run);
}

static void rollback(struct bsc_buf *out, size_t len)
{
    out->len = len;
    if (out->p)
        out->p[len] = '\0';
}

enum bsc_err utf8_sanitize(struct bsc_buf *out, const char *p, size_t len)
{
    size_t start = out->len;
    enum bsc_err err = sanitize(out, (const unsigned char *)p, len);

    if (err)
        rollback(out, start);
    return err;
}

void utf8_carry_init(struct utf8_carry *c)
{
    memset(c, 0, sizeof(*c));
}

/* Resolves the held tail with the first bytes of <p>: appends the finished character or one
 * U+FFFD and returns how many bytes of <p> that used, or holds more (all of <p>) when it is
 * still incomplete. *<nc> is the carry to commit on success. */
static enum bsc_err join_tail(struct utf8_carry *nc, struct bsc_buf *out, const char *p,
                              size_t len, size_t *used)
{
    unsigned char tmp[6];
    size_t k = len < 3 ? len : 3;
    struct step st;
    enum bsc_err err;

    memcpy(tmp, nc->tail, nc->len);
    memcpy(tmp + nc->len, p, k);
    st = step(tmp, nc->len + k);
    if (st.kind == STEP_SHORT) {
        /* Still incomplete: a held prefix of L bytes plus k more stays short only when
         * L + k < 4, so k == len and all of <p> joins the tail. */
        BSC_BUG_ON(st.len != nc->len + len);
        memcpy(nc->tail + nc->len, p, len);
        nc->len = (uint8_t)st.len;
        *used = len;
        return BSC_OK;
    }
    /* The tail was a well-formed prefix, so the sequence or its maximal subpart covers it. */
    BSC_BUG_ON(st.len < nc->len);
    if (st.kind == STEP_OK)
        err = bsc_buf_append(out, tmp, st.len);
    else
        err = bsc_buf_append(out, replacement, sizeof(replacement));
    *used = st.len - nc->len;
    nc->len = 0;
    return err;
}

enum bsc_err utf8_carry_feed(struct utf8_carry *c, struct bsc_buf *out, const char *p, size_t len)
{
    struct utf8_carry nc = *c;
    size_t start = out->len, used = 0, n;
    enum bsc_err err = BSC_OK;

    if (len == 0)
        return BSC_OK;
    if (nc.len) {
        err = join_tail(&nc, out, p, len, &used);
        if (err)
            goto fail;
        if (nc.len) {
            *c = nc; /* everything joined the tail */
            return BSC_OK;
        }
    }
    p += used;
    len -= used;
    n = utf8_complete_prefix(p, len);
    err = sanitize(out, (const unsigned char *)p, n);
    if (err)
        goto fail;
    memcpy(nc.tail, p + n, len - n);
    nc.len = (uint8_t)(len - n);
    *c = nc;
    return BSC_OK;

fail:
    rollback(out, start);
    return err;
}

enum bsc_err utf8_carry_flush(struct utf8_carry *c, struct bsc_buf *out)
{
    enum bsc_err err;

    if (!c->len)
        return BSC_OK;
    err = bsc_buf_append(out, replacement, sizeof(replacement));
    if (!err)
        c->len = 0;
    return err;
}
