/* SPDX-License-Identifier: MIT */
/* evstream.c -- the AWS event-stream framing: decode with both CRCs checked, whatever the
 * split of the bytes; encode string-headed messages. The decoder copies only what it must
 * hold across feeds (an incomplete message); complete messages in one feed are read in place.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/evstream.h"

#define PRELUDE 12

/* ---- CRC-32 --------------------------------------------------------------------------- */

uint32_t evs_crc32(uint32_t crc, const void *p, size_t len)
{
    const uint8_t *b = p;

    crc = ~crc;
    while (len--) {
        crc ^= *b++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---- decode --------------------------------------------------------------------------- */

void evs_decoder_init(struct evs_decoder *d, size_t max_message, evs_msg_fn *cb, void *ud)
{
    memset(d, 0, sizeof(*d));
    d->max_message = max_message < EVS_MAX_MESSAGE ? max_message : EVS_MAX_MESSAGE;
    if (d->max_message < EVS_MIN_MESSAGE)
        d->max_message = EVS_MIN_MESSAGE;
    bsc_buf_init(&d->held, d->max_message);
    d->cb = cb;
    d->ud = ud;
}

void evs_decoder_cleanup(struct evs_decoder *d)
{
    bsc_buf_cleanup(&d->held);
}

bool evs_pending(const struct evs_decoder *d)
{
    return d->held.len > 0;
}

static int fail(struct evs_decoder *d, const char *why)
{
    snprintf(d->why, sizeof(d->why), "%s", why);
    d->stopped = -1;
    return -1;
}

/* The size of a header value of <type> at <p> (<left> bytes there), or -1 when it does not
 * fit or the type is unknown. */
static long value_size(uint8_t type, const uint8_t *p, size_t left)
{
    static const long fixed[] = {0, 0, 1, 2, 4, 8, -1, -1, 8, 16};

    if (type > 9)
        return -1;
    if (type == 6 || type == 7) {
        if (left < 2)
            return -1;
        return 2 + ((long)p[0] << 8 | p[1]);
    }
    return fixed[type];
}

static void keep_header(struct evs_msg *m, struct bsc_str name, struct bsc_str v)
{
    static const struct {
        const char *name;
        size_t off;
    } known[] = {
        {":message-type", offsetof(struct evs_msg, message_type)},
        {":event-type", offsetof(struct evs_msg, event_type)},
        {":exception-type", offsetof(struct evs_msg, exception_type)},
        {":error-code", offsetof(struct evs_msg, error_code)},
        {":error-message", offsetof(struct evs_msg, error_message)},
        {":content-type", offsetof(struct evs_msg, content_type)},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(known); i++)
        if (bsc_str_eq(name, bsc_str_cstr(known[i].name)))
            *(struct bsc_str *)((char *)m + known[i].off) = v;
}

/* Reads the header section <p> (<len> bytes) into <m>; false when it is malformed. */
static bool read_headers(const uint8_t *p, size_t len, struct evs_msg *m)
{
    size_t i = 0;

    while (i < len) {
        size_t nlen = p[i++];
        long vs;
        uint8_t type;

        if (nlen == 0 || len - i < nlen + 1)
            return false;
        type = p[i + nlen];
        vs = value_size(type, p + i + nlen + 1, len - i - nlen - 1);
        if (vs < 0 || (size_t)vs > len - i - nlen - 1)
            return false;
        if (type == 7)
            keep_header(m, bsc_str_make((const char *)p + i, nlen),
                        bsc_str_make((const char *)p + i + nlen + 3, (size_t)vs - 2));
        i += nlen + 1 + (size_t)vs;
    }
    return true;
}

/* The length of the message starting at <p> once its prelude is checked, or 0 (with the
 * decoder failed) when the prelude is wrong. <p> has at least PRELUDE bytes. */
static size_t checked_length(struct evs_decoder *d, const uint8_t *p)
{
    uint32_t total = be32(p), hlen = be32(p + 4);

    if (evs_crc32(0, p, 8) != be32(p + 8))
        return fail(d, "event-stream prelude CRC mismatch"), 0;
    if (total < EVS_MIN_MESSAGE || total > d->max_message)
        return fail(d, "event-stream message length out of range"), 0;
    if (hlen > total - EVS_MIN_MESSAGE)
        return fail(d, "event-stream headers longer than the message"), 0;
    return total;
}

/* Checks and delivers the complete message <p> of <total> bytes. Returns the decoder's
 * verdict: 0 to go on. */
static int deliver(struct evs_decoder *d, const uint8_t *p, size_t total)
{
    struct evs_msg m = {0};
    uint32_t hlen = be32(p + 4);

    if (evs_crc32(0, p, total - 4) != be32(p + total - 4))
        return fail(d, "event-stream message CRC mismatch");
    if (!read_headers(p + PRELUDE, hlen, &m))
        return fail(d, "event-stream headers malformed");
    m.payload = bsc_str_make((const char *)p + PRELUDE + hlen, total - PRELUDE - hlen - 4);
    d->stopped = d->cb(d->ud, &m);
    return d->stopped;
}

/* Delivers the whole messages at the start of <p> (<len> bytes); returns how many bytes
 * they took, with d->stopped set on a stop or an error. */
static size_t drain(struct evs_decoder *d, const uint8_t *p, size_t len)
{
    size_t used = 0;

    while (!d->stopped && len - used >= PRELUDE) {
        size_t total = checked_length(d, p + used);

        if (!total || len - used < total)
            break;
        deliver(d, p + used, total);
        used += total;
    }
    return used;
}

/* Completes the held message from <p>; returns the bytes of <p> taken. */
static size_t complete_held(struct evs_decoder *d, const uint8_t *p, size_t len)
{
    size_t take, need = PRELUDE, total;

    if (d->held.len < PRELUDE) {
        take = need - d->held.len < len ? need - d->held.len : len;
        if (bsc_buf_append(&d->held, p, take))
            return fail(d, "event-stream message too large"), 0;
        if (d->held.len < PRELUDE)
            return take;
        p += take, len -= take;
    } else {
        take = 0;
    }
    total = checked_length(d, (const uint8_t *)d->held.p);
    if (!total)
        return take;
    need = total - d->held.len;
    if (need > len)
        need = len;
    if (bsc_buf_append(&d->held, p, need))
        return fail(d, "event-stream message too large"), take;
    take += need;
    if (d->held.len == total) {
        deliver(d, (const uint8_t *)d->held.p, total);
        bsc_buf_reset(&d->held);
    }
    return take;
}

int evs_feed(struct evs_decoder *d, const void *p, size_t len)
{
    const uint8_t *b = p;
    size_t used;

    if (d->stopped)
        return d->stopped;
    if (d->held.len) {
        used = complete_held(d, b, len);
        if (d->stopped || d->held.len)
            return d->stopped;
        b += used, len -= used;
    }
    used = drain(d, b, len);
    if (!d->stopped && used < len && bsc_buf_append(&d->held, b + used, len - used))
        return fail(d, "event-stream message too large");
    return d->stopped;
}

/* ---- encode --------------------------------------------------------------------------- */

enum bsc_err evs_encode(struct bsc_buf *out, const struct evs_header *h, size_t n,
                        struct bsc_str payload)
{
    size_t hlen = 0, start = out->len, total;
    uint8_t pre[PRELUDE], crc[4];
    enum bsc_err err;

    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(h[i].name);

        if (nl == 0 || nl > 255 || h[i].value.len > 65535)
            return BSC_EINVAL;
        hlen += 1 + nl + 3 + h[i].value.len;
    }
    total = PRELUDE + hlen + payload.len + 4;
    if (total > EVS_MAX_MESSAGE)
        return BSC_EINVAL;
    put_be32(pre, (uint32_t)total);
    put_be32(pre + 4, (uint32_t)hlen);
    put_be32(pre + 8, evs_crc32(0, pre, 8));
    err = bsc_buf_append(out, pre, sizeof(pre));
    for (size_t i = 0; i < n && !err; i++) {
        uint8_t nl = (uint8_t)strlen(h[i].name);
        uint8_t tl[3] = {7, (uint8_t)(h[i].value.len >> 8), (uint8_t)h[i].value.len};

        err = bsc_buf_append(out, &nl, 1);
        if (!err)
            err = bsc_buf_append(out, h[i].name, nl);
        if (!err)
            err = bsc_buf_append(out, tl, 3);
        if (!err)
            err = bsc_buf_append_str(out, h[i].value);
    }
    if (!err)
        err = bsc_buf_append_str(out, payload);
    if (!err) {
        put_be32(crc, evs_crc32(0, out->p + start, out->len - start));
        err = bsc_buf_append(out, crc, 4);
    }
    if (err)
        out->len = start; /* nothing half-written */
    return err;
}
