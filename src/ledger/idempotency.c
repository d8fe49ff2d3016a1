/* SPDX-License-Identifier: MIT */
/* idempotency.c -- fingerprints and decisions for Idempotency-Key records. The canonical
 * JSON writer is a small strict parser of its own: it keeps numbers exactly as written
 * (two bodies are the same request only if a parser could not tell them apart) and
 * refuses duplicate keys (parsers disagree on which one wins). Anything it refuses is
 * fingerprinted as raw bytes, which is strict but never wrong.
 * See docs/internals/store.md. */
#include "ledger/idempotency.h"
#include "core/utf8.h"

static const char FP_TAG[] = "bascule-idempotency-v1";

bool idem_key_valid(struct bsc_str key)
{
    if (key.len == 0 || key.len > IDEM_KEY_MAX)
        return false;
    for (size_t i = 0; i < key.len; i++)
        if ((unsigned char)key.p[i] < 0x20 || (unsigned char)key.p[i] > 0x7e)
            return false;
    return true;
}

/* ---- canonical JSON --------------------------------------------------------------------- */

struct canon {
    const unsigned char *p, *end;
    size_t out_max; /* the bound of every buffer it makes */
};

struct member {
    struct bsc_buf key; /* decoded key bytes */
    struct bsc_buf val; /* canonical value */
};

static enum bsc_err c_value(struct canon *c, unsigned depth, struct bsc_buf *out);

static void skip_ws(struct canon *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool eat(struct canon *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == (unsigned char)ch) {
        c->p++;
        return true;
    }
    return false;
}

/* Reads the 4 hex digits after "\u". Returns the unit, or -1. */
static long read_u16(struct canon *c)
{
    long v = 0;

    if (c->end - c->p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        int h = bsc_hex_digit(c->p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    c->p += 4;
    return v;
}

static enum bsc_err put_utf8(struct bsc_buf *out, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80)
        u[0] = (char)cp, n = 1;
    else if (cp < 0x800)
        u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
        u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    else
        u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    return bsc_buf_append(out, u, n);
}

/* "\uXXXX", a surrogate pair included; the backslash and 'u' are consumed. */
static enum bsc_err c_unicode_escape(struct canon *c, struct bsc_buf *out)
{
    long hi = read_u16(c), lo;

    if (hi < 0 || (hi >= 0xdc00 && hi <= 0xdfff))
        return BSC_EPARSE;
    if (hi < 0xd800 || hi > 0xdbff)
        return put_utf8(out, (uint32_t)hi);
    if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
        return BSC_EPARSE;
    c->p += 2;
    lo = read_u16(c);
    if (lo < 0xdc00 || lo > 0xdfff)
        return BSC_EPARSE;
    return put_utf8(out, 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00));
}

static enum bsc_err c_escape(struct canon *c, struct bsc_buf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit;

    if (c->p >= c->end)
        return BSC_EPARSE;
    if (*c->p == 'u') {
        c->p++;
        return c_unicode_escape(c, out);
    }
    hit = memchr(from, *c->p, sizeof(from) - 1);
    if (!hit)
        return BSC_EPARSE;
    c->p++;
    return bsc_buf_append_char(out, to[hit - from]);
}

/* Decodes a string (at its opening quote) into <out>. */
static enum bsc_err c_string(struct canon *c, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    if (!eat(c, '"'))
        return BSC_EPARSE;
    while (!err) {
        size_t n;
        if (c->p >= c->end || *c->p < 0x20)
            return BSC_EPARSE;
        if (*c->p == '"') {
            c->p++;
            return BSC_OK;
        }
        if (*c->p == '\\') {
            c->p++;
            err = c_escape(c, out);
            continue;
        }
        n = bsc_utf8_seq_len(c->p, (size_t)(c->end - c->p));
        if (!n)
            return BSC_EPARSE;
        err = bsc_buf_append(out, c->p, n);
        c->p += n;
    }
    return err;
}

static bool is_digit(const struct canon *c)
{
    return c->p < c->end && *c->p >= '0' && *c->p <= '9';
}

/* A number, copied as written once it matches RFC 8259's grammar. */
static enum bsc_err c_number(struct canon *c, struct bsc_buf *out)
{
    const unsigned char *start = c->p;

    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (!is_digit(c))
        return BSC_EPARSE;
    if (*c->p++ != '0')
        while (is_digit(c))
            c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (!is_digit(c))
            return BSC_EPARSE;
        while (is_digit(c))
            c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (!is_digit(c))
            return BSC_EPARSE;
        while (is_digit(c))
            c->p++;
    }
    return bsc_buf_append(out, start, (size_t)(c->p - start));
}

static enum bsc_err c_literal(struct canon *c, const char *lit, struct bsc_buf *out)
{
    size_t n = strlen(lit);

    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return BSC_EPARSE;
    c->p += n;
    return bsc_buf_append(out, lit, n);
}

static enum bsc_err c_array(struct canon *c, unsigned depth, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_char(out, '[');

    c->p++; /* '[' */
    if (!err && eat(c, ']'))
        return bsc_buf_append_char(out, ']');
    while (!err) {
        err = c_value(c, depth + 1, out);
        if (err)
            break;
        if (eat(c, ']'))
            return bsc_buf_append_char(out, ']');
        if (!eat(c, ','))
            return BSC_EPARSE;
        err = bsc_buf_append_char(out, ',');
    }
    return err;
}

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int r = n ? memcmp(x->key.p, y->key.p, n) : 0;

    if (r)
        return r;
    return (x->key.len > y->key.len) - (x->key.len < y->key.len);
}

static void members_free(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bsc_buf_cleanup(&m[i].key);
        bsc_buf_cleanup(&m[i].val);
    }
    free(m);
}

/* Reads "key": value pairs up to the closing brace into *<ms> (owned by the caller). */
static enum bsc_err c_members(struct canon *c, unsigned depth, struct member **ms, size_t *n)
{
    size_t cap = 0;
    enum bsc_err err = BSC_OK;

    if (eat(c, '}'))
        return BSC_OK;
    while (!err) {
        if (*n == cap) {
            struct member *grown;
            cap = cap ? cap * 2 : 8;
            grown = realloc(*ms, cap * sizeof(**ms));
            if (!grown)
                return BSC_ENOMEM;
            *ms = grown;
        }
        bsc_buf_init(&(*ms)[*n].key, c->out_max);
        bsc_buf_init(&(*ms)[*n].val, c->out_max);
        (*n)++;
        err = c_string(c, &(*ms)[*n - 1].key);
        if (!err && !eat(c, ':'))
            err = BSC_EPARSE;
        if (!err)
            err = c_value(c, depth + 1, &(*ms)[*n - 1].val);
        if (!err && eat(c, '}'))
            return BSC_OK;
        if (!err && !eat(c, ','))
            err = BSC_EPARSE;
    }
    return err;
}

static enum bsc_err c_object(struct canon *c, unsigned depth, struct bsc_buf *out)
{
    struct member *ms = NULL;
    size_t n = 0, i;
    enum bsc_err err;

    c->p++; /* '{' */
    err = c_members(c, depth, &ms, &n);
    if (!err && n > 1)
        qsort(ms, n, sizeof(*ms), member_cmp);
    for (i = 1; !err && i < n; i++)
        if (member_cmp(&ms[i - 1], &ms[i]) == 0)
            err = BSC_EPARSE; /* a duplicate key */
    if (!err)
        err = bsc_buf_append_char(out, '{');
    for (i = 0; !err && i < n; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(&ms[i].key));
        if (!err)
            err = bsc_buf_append_char(out, ':');
        if (!err)
            err = bsc_buf_append_str(out, bsc_buf_str(&ms[i].val));
    }
    if (!err)
        err = bsc_buf_append_char(out, '}');
    members_free(ms, n);
    return err;
}

static enum bsc_err c_value(struct canon *c, unsigned depth, struct bsc_buf *out)
{
    struct bsc_buf s;
    enum bsc_err err;

    if (depth > IDEM_JSON_DEPTH)
        return BSC_EPARSE;
    skip_ws(c);
    if (c->p >= c->end)
        return BSC_EPARSE;
    switch (*c->p) {
    case '{': return c_object(c, depth, out);
    case '[': return c_array(c, depth, out);
    case 't': return c_literal(c, "true", out);
    case 'f': return c_literal(c, "false", out);
    case 'n': return c_literal(c, "null", out);
    case '"':
        bsc_buf_init(&s, c->out_max);
        err = c_string(c, &s);
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(&s));
        bsc_buf_cleanup(&s);
        return err;
    default: return c_number(c, out);
    }
}

enum bsc_err idem_canonical_json(struct bsc_str body, struct bsc_buf *out)
{
    struct canon c = {(const unsigned char *)body.p, (const unsigned char *)body.p + body.len,
                      /* re-escaping can make a string at most 6x longer ("\u0000") */
                      body.len > SIZE_MAX / 8 ? SIZE_MAX : body.len * 6 + 16};
    enum bsc_err err;

    if (body.len == 0)
        return BSC_EPARSE;
    err = c_value(&c, 0, out);
    if (err)
        return err;
    skip_ws(&c);
    return c.p == c.end ? BSC_OK : BSC_EPARSE;
}

/* ---- fingerprint ------------------------------------------------------------------------ */

static void put_len(struct bsc_sha256 *h, uint64_t n)
{
    uint8_t b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(n >> (56 - 8 * i));
    bsc_sha256_update(h, b, sizeof(b));
}

enum bsc_err idem_fingerprint(struct bsc_str context, struct bsc_str body, struct idem_fp *out)
{
    struct bsc_sha256 h;
    struct bsc_buf canon;
    enum bsc_err err;

    bsc_buf_init(&canon, body.len > SIZE_MAX / 8 ? SIZE_MAX : body.len * 6 + 16);
    err = idem_canonical_json(body, &canon);
    if (err == BSC_ENOMEM) {
        bsc_buf_cleanup(&canon);
        return err;
    }
    bsc_sha256_init(&h);
    bsc_sha256_update(&h, FP_TAG, sizeof(FP_TAG)); /* the NUL ends the tag */
    put_len(&h, context.len);
    bsc_sha256_update(&h, context.p, context.len);
    if (!err) {
        bsc_sha256_update(&h, "J", 1);
        bsc_sha256_update(&h, canon.p, canon.len);
    } else {
        bsc_sha256_update(&h, "R", 1);
        bsc_sha256_update(&h, body.p, body.len);
    }
    bsc_sha256_final(&h, out->b);
    bsc_buf_cleanup(&canon);
    return BSC_OK;
}

/* ---- records and decisions -------------------------------------------------------------- */

bool idem_record_expired(const struct idem_record *rec, uint64_t now_ms)
{
    return now_ms >= rec->expires_ms;
}

uint64_t idem_expiry(enum idem_state state, uint64_t now_ms, uint64_t ttl_ms, uint64_t lease_ms)
{
    uint64_t life = ttl_ms;

    if (state == IDEM_ST_IN_FLIGHT && lease_ms < life)
        life = lease_ms;
    return now_ms > UINT64_MAX - life ? UINT64_MAX : now_ms + life;
}

enum idem_decision idem_decide(const struct idem_record *rec, const struct idem_fp *fp,
                               uint64_t now_ms)
{
    if (!rec || idem_record_expired(rec, now_ms))
        return IDEM_MISS;
    if (memcmp(rec->fp.b, fp->b, IDEM_FP_LEN) != 0)
        return IDEM_MISMATCH;
    return rec->state == IDEM_ST_COMPLETE ? IDEM_REPLAY : IDEM_IN_FLIGHT;
}

int idem_decision_status(enum idem_decision d)
{
    switch (d) {
    case IDEM_IN_FLIGHT: return 409;
    case IDEM_MISMATCH: return 422;
    default: return 0;
    }
}

const char *idem_decision_name(enum idem_decision d)
{
    static const char *const names[] = {"miss", "replay", "in_flight", "mismatch"};

    _Static_assert(BSC_ARRAY_LEN(names) == IDEM_DECISION_COUNT, "names");
    return (unsigned)d < IDEM_DECISION_COUNT ? names[d] : "?";
}

const char *idem_state_name(enum idem_state s)
{
    static const char *const names[] = {"in_flight", "complete"};

    _Static_assert(BSC_ARRAY_LEN(names) == IDEM_ST_COUNT, "names");
    return (unsigned)s < IDEM_ST_COUNT ? names[s] : "?";
}
