/* SPDX-License-Identifier: MIT */
/* redis_record.c -- the Redis idempotency record, written and read. See redis_record.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sha256.h"
#include "store/redis_record.h"

size_t store__redis_idem_head(const struct store_redis_idem *r, char out[STORE_REDIS_HEAD_MAX])
{
    char hex[BSC_SHA256_HEX_LEN + 1];

    bsc_sha256_hex(r->fp.b, hex);
    return (size_t)snprintf(out, STORE_REDIS_HEAD_MAX, "%c %016" PRIx64 " %" PRIu64 " %s\n",
                            r->state, r->claim, r->ttl_ms, hex);
}

size_t store__redis_idem_answer_head(int status, bool stream, size_t headers_len,
                                     char out[STORE_REDIS_ANSWER_HEAD_MAX])
{
    return (size_t)snprintf(out, STORE_REDIS_ANSWER_HEAD_MAX, "%d %d %zu\n", status,
                            stream ? 1 : 0, headers_len);
}

/* A cursor over the value: every reader takes exactly what the writer puts there. */
struct cur {
    const char *p, *end;
};

static bool take_char(struct cur *c, char want)
{
    if (c->p >= c->end || *c->p != want)
        return false;
    c->p++;
    return true;
}

/* <n> lower-case hex digits (the writer's %016x and bsc_sha256_hex) into <out> bytes. */
static bool take_hex(struct cur *c, size_t n, uint8_t *out)
{
    if ((size_t)(c->end - c->p) < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = c->p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;

        if (d < 0)
            return false;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | d : d << 4);
    }
    c->p += n;
    return true;
}

/* A decimal as %llu writes it: digits, no sign, no leading zero, no overflow. */
static bool take_u64(struct cur *c, uint64_t *out)
{
    const char *start = c->p;
    uint64_t v = 0;

    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p - '0');

        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        c->p++;
    }
    if (c->p == start || (*start == '0' && c->p - start > 1))
        return false;
    *out = v;
    return true;
}

static bool read_head(struct cur *c, struct store_redis_idem *out)
{
    uint8_t claim[8];

    if (c->p >= c->end || (*c->p != 'i' && *c->p != 'c'))
        return false;
    out->state = *c->p++;
    if (!take_char(c, ' ') || !take_hex(c, 16, claim) || !take_char(c, ' ') ||
        !take_u64(c, &out->ttl_ms) || !take_char(c, ' ') ||
        !take_hex(c, 2 * IDEM_FP_LEN, out->fp.b) || !take_char(c, '\n'))
        return false;
    out->claim = 0;
    for (size_t i = 0; i < 8; i++)
        out->claim = out->claim << 8 | claim[i];
    return true;
}

static bool read_answer(struct cur *c, struct store_redis_idem *out)
{
    uint64_t status, hlen;

    if (!take_u64(c, &status) || status < 100 || status > 999 || !take_char(c, ' ') ||
        c->p >= c->end || (*c->p != '0' && *c->p != '1'))
        return false;
    out->status = (int)status;
    out->stream = *c->p++ == '1';
    if (!take_char(c, ' ') || !take_u64(c, &hlen) || !take_char(c, '\n') ||
        hlen > (uint64_t)(c->end - c->p))
        return false;
    out->headers = (struct bsc_str){c->p, (size_t)hlen};
    out->body = (struct bsc_str){c->p + hlen, (size_t)(c->end - c->p) - (size_t)hlen};
    c->p = c->end;
    return true;
}

bool store__redis_idem_read(const char *v, size_t len, struct store_redis_idem *out)
{
    struct cur c = {v, v + len};

    memset(out, 0, sizeof(*out));
    if (!v || !read_head(&c, out))
        return false;
    if (out->state == 'i')
        return c.p == c.end;
    return read_answer(&c, out);
}
