/* SPDX-License-Identifier: MIT */
/* idempotency.c -- fingerprints and decisions for Idempotency-Key records. The canonical
 * JSON writer reads with core/json_tok (the one grammar): it keeps numbers exactly as written
 * (two bodies are the same request only if a parser could not tell them apart) and
 * refuses duplicate keys (parsers disagree on which one wins). Anything it refuses is
 * fingerprinted as raw bytes, which is strict but never wrong.
 * See docs/internals/store.md. */
#include "ledger/idempotency.h"
#include "core/json_tok.h"

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

/* The grammar is core/json_tok's; this walk adds the canonicaliser's own rules: decoded
 * strings (a lone surrogate escape refused), sorted keys, no duplicate key, and values at
 * most IDEM_JSON_DEPTH containers deep. */
struct canon {
    struct bsc_json_tok t;
    size_t out_max; /* the bound of every buffer it makes */
};

struct member {
    struct bsc_buf key; /* decoded key bytes */
    struct bsc_buf val; /* canonical value */
};

static enum bsc_err c_value(struct canon *c, struct bsc_jtok *tok, struct bsc_buf *out);

/* The next token; BSC_EPARSE when it is not of kind <want>. */
static enum bsc_err expect(struct canon *c, struct bsc_jtok *tok, enum bsc_jtok_kind want)
{
    return bsc_json_tok_next(&c->t, tok) == want ? BSC_OK : BSC_EPARSE;
}

/* Decodes the string token <tok> and appends it re-escaped to <out>. */
static enum bsc_err c_string(struct canon *c, const struct bsc_jtok *tok, struct bsc_buf *out)
{
    struct bsc_buf s;
    enum bsc_err err;

    if (!tok->escaped)
        return bsc_buf_append_json_str(out, tok->raw);
    bsc_buf_init(&s, c->out_max);
    err = bsc_json_unescape(tok->raw, &s, NULL);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_buf_str(&s));
    bsc_buf_cleanup(&s);
    return err;
}

static enum bsc_err c_array(struct canon *c, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_char(out, '[');
    struct bsc_jtok tok;

    while (!err) {
        if (bsc_json_tok_next(&c->t, &tok) == BSC_JTOK_ARR_CLOSE)
            return bsc_buf_append_char(out, ']');
        if (tok.kind == BSC_JTOK_COMMA) {
            err = bsc_buf_append_char(out, ',');
            if (!err)
                bsc_json_tok_next(&c->t, &tok);
        }
        if (!err)
            err = c_value(c, &tok, out);
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

/* One "key": value pair, its name token <tok> read, into a new entry of *<ms>. */
static enum bsc_err c_member(struct canon *c, struct bsc_jtok *tok, struct member **ms,
                             size_t *n, size_t *cap)
{
    struct member *m;
    enum bsc_err err;

    if (*n == *cap) {
        struct member *grown;
        *cap = *cap ? *cap * 2 : 8;
        grown = realloc(*ms, *cap * sizeof(**ms));
        if (!grown)
            return BSC_ENOMEM;
        *ms = grown;
    }
    m = &(*ms)[(*n)++];
    bsc_buf_init(&m->key, c->out_max);
    bsc_buf_init(&m->val, c->out_max);
    err = tok->escaped ? bsc_json_unescape(tok->raw, &m->key, NULL)
                       : bsc_buf_append_str(&m->key, tok->raw);
    if (!err)
        err = expect(c, tok, BSC_JTOK_COLON);
    if (!err) {
        bsc_json_tok_next(&c->t, tok);
        err = c_value(c, tok, &m->val);
    }
    return err;
}

/* Reads "key": value pairs up to the closing brace into *<ms> (owned by the caller). */
static enum bsc_err c_members(struct canon *c, struct member **ms, size_t *n)
{
    size_t cap = 0;
    enum bsc_err err = BSC_OK;
    struct bsc_jtok tok;

    while (!err) {
        if (bsc_json_tok_next(&c->t, &tok) == BSC_JTOK_OBJ_CLOSE)
            return BSC_OK;
        if (tok.kind == BSC_JTOK_COMMA)
            bsc_json_tok_next(&c->t, &tok);
        err = tok.kind == BSC_JTOK_NAME ? c_member(c, &tok, ms, n, &cap) : BSC_EPARSE;
    }
    return err;
}

static enum bsc_err c_object(struct canon *c, struct bsc_buf *out)
{
    struct member *ms = NULL;
    size_t n = 0, i;
    enum bsc_err err;

    err = c_members(c, &ms, &n);
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

/* The value that begins with the token <tok>. Numbers and literals are copied as written. */
static enum bsc_err c_value(struct canon *c, struct bsc_jtok *tok, struct bsc_buf *out)
{
    if (tok->depth > IDEM_JSON_DEPTH)
        return BSC_EPARSE;
    switch (tok->kind) {
    case BSC_JTOK_OBJ_OPEN: return c_object(c, out);
    case BSC_JTOK_ARR_OPEN: return c_array(c, out);
    case BSC_JTOK_STRING: return c_string(c, tok, out);
    case BSC_JTOK_NUMBER:
    case BSC_JTOK_TRUE:
    case BSC_JTOK_FALSE:
    case BSC_JTOK_NULL: return bsc_buf_append_str(out, tok->raw);
    default: return BSC_EPARSE;
    }
}

enum bsc_err idem_canonical_json(struct bsc_str body, struct bsc_buf *out)
{
    struct canon c = {.out_max = /* re-escaping can make a string at most 6x longer */
                      body.len > SIZE_MAX / 8 ? SIZE_MAX : body.len * 6 + 16};
    struct bsc_jtok tok;
    enum bsc_err err;

    /* One container more than the deepest value, so an empty one there is still read. */
    bsc_json_tok_init(&c.t, body, IDEM_JSON_DEPTH + 1);
    bsc_json_tok_next(&c.t, &tok);
    err = c_value(&c, &tok, out);
    if (err)
        return err;
    return bsc_json_tok_next(&c.t, &tok) == BSC_JTOK_END ? BSC_OK : BSC_EPARSE;
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
