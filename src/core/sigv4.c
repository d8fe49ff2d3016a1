/* SPDX-License-Identifier: MIT */
/* sigv4.c -- AWS Signature Version 4: the canonical request, the string to sign, the derived
 * signing key and the Authorization value. Pure and allocation-bounded (one scratch buffer
 * per call). Not the S3 variant (no single-encoding of paths, no UNSIGNED-PAYLOAD) and no
 * path normalisation ("." and ".." segments are signed as they are sent): the gateway sends
 * paths it built. See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/sigv4.h"

#define SIGV4_CANON_MAX (64 * 1024)
#define SIGV4_QUERY_MAX 64

void sigv4_hmac(const void *key, size_t klen, const void *msg, size_t len,
                uint8_t out[BSC_SHA256_LEN])
{
    uint8_t k[64] = {0}, pad[64], inner[BSC_SHA256_LEN];
    struct bsc_sha256 c;

    if (klen > sizeof(k))
        bsc_sha256(key, klen, k);
    else if (klen)
        memcpy(k, key, klen);
    for (size_t i = 0; i < sizeof(pad); i++)
        pad[i] = k[i] ^ 0x36;
    bsc_sha256_init(&c);
    bsc_sha256_update(&c, pad, sizeof(pad));
    bsc_sha256_update(&c, msg, len);
    bsc_sha256_final(&c, inner);
    for (size_t i = 0; i < sizeof(pad); i++)
        pad[i] = k[i] ^ 0x5c;
    bsc_sha256_init(&c);
    bsc_sha256_update(&c, pad, sizeof(pad));
    bsc_sha256_update(&c, inner, sizeof(inner));
    bsc_sha256_final(&c, out);
}

void sigv4_amz_date(int64_t unix_s, char out[SIGV4_DATE_LEN])
{
    time_t t = (time_t)unix_s;
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(out, SIGV4_DATE_LEN, "%Y%m%dT%H%M%SZ", &tm) == 0)
        snprintf(out, SIGV4_DATE_LEN, "19700101T000000Z");
}

static bool unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Appends <s> with every byte but the unreserved ones (and '/' when <slash>) as %XX; with
 * <keep_escapes>, a "%XX" already there stays as it is (a query sent encoded). */
static enum bsc_err put_encoded(struct bsc_buf *b, struct bsc_str s, bool slash, bool keep_escapes)
{
    static const char hex[] = "0123456789ABCDEF";
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < s.len && !err; i++) {
        unsigned char c = (unsigned char)s.p[i];
        char esc[3] = {'%', hex[c >> 4], hex[c & 15]};

        if (keep_escapes && c == '%' && i + 2 < s.len &&
            bsc_hex_digit((unsigned char)s.p[i + 1]) >= 0 &&
            bsc_hex_digit((unsigned char)s.p[i + 2]) >= 0) {
            err = bsc_buf_append(b, s.p + i, 3);
            i += 2;
        } else if (unreserved(c) || (slash && c == '/')) {
            err = bsc_buf_append_char(b, (char)c);
        } else {
            err = bsc_buf_append(b, esc, 3);
        }
    }
    return err;
}

static int cmp_str(struct bsc_str a, struct bsc_str b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.p, b.p, n) : 0;

    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* The query's pairs, sorted by name then value (bytes as sent; encoding keeps the order of
 * unreserved text, which is what AWS sorts on). */
struct qpair {
    struct bsc_str name, value;
};

static int cmp_qpair(const void *a, const void *b)
{
    const struct qpair *x = a, *y = b;
    int c = cmp_str(x->name, y->name);

    return c ? c : cmp_str(x->value, y->value);
}

static enum bsc_err put_query(struct bsc_buf *b, struct bsc_str q)
{
    struct qpair pairs[SIGV4_QUERY_MAX];
    size_t n = 0;
    enum bsc_err err = BSC_OK;

    while (q.len) {
        const char *amp = memchr(q.p, '&', q.len);
        struct bsc_str item = bsc_str_make(q.p, amp ? (size_t)(amp - q.p) : q.len);
        const char *eq = memchr(item.p, '=', item.len);

        if (item.len) {
            if (n == SIGV4_QUERY_MAX)
                return BSC_EINVAL;
            pairs[n].name = bsc_str_make(item.p, eq ? (size_t)(eq - item.p) : item.len);
            pairs[n].value = eq ? bsc_str_make(eq + 1, item.len - (size_t)(eq + 1 - item.p))
                                : BSC_STR("");
            n++;
        }
        q = amp ? bsc_str_make(amp + 1, q.len - (size_t)(amp + 1 - q.p)) : BSC_STR("");
    }
    qsort(pairs, n, sizeof(pairs[0]), cmp_qpair);
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = bsc_buf_append_char(b, '&');
        if (!err)
            err = put_encoded(b, pairs[i].name, false, true);
        if (!err)
            err = bsc_buf_append_char(b, '=');
        if (!err)
            err = put_encoded(b, pairs[i].value, false, true);
    }
    return err;
}

/* The signed headers, lowercased, in canonical order (a stable sort by name). */
struct hdr {
    char name[64];
    size_t len;
    size_t order; /* position in the request: repeated names keep it */
    struct bsc_str value;
};

static int cmp_hdr(const void *a, const void *b)
{
    const struct hdr *x = a, *y = b;
    int c = cmp_str(bsc_str_make(x->name, x->len), bsc_str_make(y->name, y->len));

    return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* The headers sorted into <h>; false when there are too many or a name is too long (63). */
static bool sorted_headers(const struct sigv4_req *r, struct hdr *h)
{
    if (r->n_headers > SIGV4_MAX_HEADERS)
        return false;
    for (size_t i = 0; i < r->n_headers; i++) {
        struct bsc_str n = r->headers[i].name;

        if (n.len >= sizeof(h[i].name))
            return false;
        h[i].len = n.len;
        for (size_t j = 0; j < h[i].len; j++)
            h[i].name[j] = (char)(n.p[j] >= 'A' && n.p[j] <= 'Z' ? n.p[j] + 32 : n.p[j]);
        h[i].order = i;
        h[i].value = r->headers[i].value;
    }
    qsort(h, r->n_headers, sizeof(h[0]), cmp_hdr);
    return true;
}

/* The value trimmed, inner runs of blanks as one space. */
static enum bsc_err put_value(struct bsc_buf *b, struct bsc_str v)
{
    enum bsc_err err = BSC_OK;
    bool space = false;

    v = bsc_str_trim(v);
    for (size_t i = 0; i < v.len && !err; i++) {
        bool blank = v.p[i] == ' ' || v.p[i] == '\t';

        if (blank) {
            space = true;
            continue;
        }
        if (space)
            err = bsc_buf_append_char(b, ' ');
        space = false;
        if (!err)
            err = bsc_buf_append_char(b, v.p[i]);
    }
    return err;
}

static bool same_name(const struct hdr *a, const struct hdr *b)
{
    return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

static enum bsc_err put_headers(struct bsc_buf *b, const struct hdr *h, size_t n)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < n && !err; i++) {
        bool first = i == 0 || !same_name(&h[i - 1], &h[i]);
        bool last = i + 1 == n || !same_name(&h[i], &h[i + 1]);

        if (first) {
            err = bsc_buf_append(b, h[i].name, h[i].len);
            if (!err)
                err = bsc_buf_append_char(b, ':');
        } else {
            err = bsc_buf_append_char(b, ',');
        }
        if (!err)
            err = put_value(b, h[i].value);
        if (!err && last)
            err = bsc_buf_append_char(b, '\n');
    }
    return err;
}

static enum bsc_err put_signed_list(struct bsc_buf *b, const struct hdr *h, size_t n)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < n && !err; i++) {
        if (i && same_name(&h[i - 1], &h[i]))
            continue;
        if (i)
            err = bsc_buf_append_char(b, ';');
        if (!err)
            err = bsc_buf_append(b, h[i].name, h[i].len);
    }
    return err;
}

enum bsc_err sigv4_canonical(const struct sigv4_req *r, struct bsc_buf *out)
{
    struct hdr h[SIGV4_MAX_HEADERS];
    size_t n = r->n_headers;
    enum bsc_err err;

    if (!sorted_headers(r, h))
        return BSC_EINVAL;
    err = bsc_buf_append_str(out, r->method);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (!err)
        err = r->path.len ? put_encoded(out, r->path, true, false) : bsc_buf_append_char(out, '/');
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (!err)
        err = put_query(out, r->query);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (!err)
        err = put_headers(out, h, n);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (!err)
        err = put_signed_list(out, h, n);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (!err)
        err = bsc_buf_append_cstr(out, r->payload_hash);
    return err;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), region), service), "aws4_request") */
static void signing_key(const struct sigv4_scope *s, uint8_t key[BSC_SHA256_LEN])
{
    char k0[256];
    int n = snprintf(k0, sizeof(k0), "AWS4%s", s->secret_access_key);

    sigv4_hmac(k0, n > 0 && (size_t)n < sizeof(k0) ? (size_t)n : 0, s->amz_date, 8, key);
    sigv4_hmac(key, BSC_SHA256_LEN, s->region, strlen(s->region), key);
    sigv4_hmac(key, BSC_SHA256_LEN, s->service, strlen(s->service), key);
    sigv4_hmac(key, BSC_SHA256_LEN, "aws4_request", 12, key);
    memset(k0, 0, sizeof(k0));
}

static void hex(const uint8_t *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

enum bsc_err sigv4_authorization(const struct sigv4_req *r, const struct sigv4_scope *s,
                                 struct bsc_buf *out, char *sig)
{
    struct bsc_buf scratch;
    struct hdr h[SIGV4_MAX_HEADERS];
    uint8_t d[BSC_SHA256_LEN], key[BSC_SHA256_LEN];
    char chex[BSC_SHA256_HEX_LEN + 1], shex[BSC_SHA256_HEX_LEN + 1];
    enum bsc_err err;
    size_t n = r->n_headers;

    if (strlen(s->amz_date) != SIGV4_DATE_LEN - 1 || !sorted_headers(r, h))
        return BSC_EINVAL;
    bsc_buf_init(&scratch, SIGV4_CANON_MAX);
    err = sigv4_canonical(r, &scratch);
    if (!err) {
        bsc_sha256(scratch.p, scratch.len, d);
        hex(d, sizeof(d), chex);
        bsc_buf_reset(&scratch);
        err = bsc_buf_appendf(&scratch, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s",
                              s->amz_date, s->amz_date, s->region, s->service, chex);
    }
    if (!err) {
        signing_key(s, key);
        sigv4_hmac(key, sizeof(key), scratch.p, scratch.len, d);
        memset(key, 0, sizeof(key));
        hex(d, sizeof(d), shex);
        err = bsc_buf_appendf(out,
                              "AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, "
                              "SignedHeaders=",
                              s->access_key_id, s->amz_date, s->region, s->service);
        if (!err)
            err = put_signed_list(out, h, n);
        if (!err)
            err = bsc_buf_appendf(out, ", Signature=%s", shex);
        if (sig)
            memcpy(sig, shex, sizeof(shex));
    }
    bsc_buf_cleanup(&scratch);
    return err;
}
