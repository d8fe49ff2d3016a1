/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/store/redis_record.c src/health/hstate_redis_wire.c */
/* fuzz-libs: -lhiredis */
/* fuzz_redis_records.c -- libFuzzer target for what bascule reads back from Redis: the
 * idempotency record (store/redis_record.h), the health state's transition messages and
 * peeked records, and the limits' Lua replies (health/hstate_redis_wire.h). The first byte
 * picks the part; the rest is the input. Beyond "no crash, no leak, no UB" it aborts when:
 *   0  a message that reads does not read the same once written back;
 *   1  a message written from fuzzed fields does not read back as those fields;
 *   2  a record that reads is not exactly the bytes its writer writes for what was read;
 *   3  a record written from fuzzed fields does not read back as those fields;
 *   4  a RESP reply (hiredis's reader) is taken for an ask's grant or a peeked record other
 *      than the contracts say: a grant only from an integer or {integer, integer}, within
 *      [0, want], the wait cut to HR_ASK_WAIT_MAX_MS; a cooldown only from
 *      {"<reason>[\t<model>]", PTTL > 0}; a circuit only with a PTTL > 0.
 * Built and run by scripts/fuzz; the seeds in tests/fuzz/corpus/redis_records/ are records
 * and messages as a gateway writes them. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "health/hstate_redis_wire.h"
#include "store/redis_record.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_redis_records: invariant broken: %s\n", what);
    abort();
}

/* <data> as a NUL-terminated string (up to its first NUL). */
static char *cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static bool same_msg(const struct hr_msg *a, const struct hr_msg *b)
{
    return strcmp(a->inst, b->inst) == 0 && a->kind == b->kind && a->ms == b->ms &&
           a->reason == b->reason && a->idx == b->idx && strcmp(a->id, b->id) == 0;
}

/* 0: whatever reads as a message reads the same once written back. */
static void msg_raw(const uint8_t *data, size_t size)
{
    char *s = cstr(data, size), out[2048];
    struct hr_msg m, again;

    if (hr__msg_parse(s, &m)) {
        if (m.id < s || m.id > s + strlen(s))
            die("message id outside the message");
        if ((size_t)hr__msg_format(&m, out, sizeof(out)) < sizeof(out) &&
            (!hr__msg_parse(out, &again) || !same_msg(&m, &again)))
            die("message not read back as written");
    }
    free(s);
}

static uint64_t take64(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;

    for (int i = 0; i < 8 && *p < end; i++)
        v = v << 8 | *(*p)++;
    return v;
}

/* 1: a message the publisher writes (instance: 16 hex; kind a letter; id not starting
 * with a space) reads back as its fields. */
static void msg_fields(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    struct hr_msg m = {0}, back;
    char id[256], out[512];
    size_t n = 0;

    snprintf(m.inst, sizeof(m.inst), "%016llx", (unsigned long long)take64(&p, end));
    m.kind = "ockm"[(p < end ? *p++ : 0) & 3];
    m.ms = take64(&p, end);
    m.reason = (int)(uint32_t)take64(&p, end);
    m.idx = (int)(uint32_t)take64(&p, end);
    while (p < end && n < sizeof(id) - 1) {
        char c = (char)*p++;
        if (c && !(n == 0 && (c == ' ' || (c >= '\t' && c <= '\r'))))
            id[n++] = c;
    }
    id[n] = '\0';
    m.id = id;
    if ((size_t)hr__msg_format(&m, out, sizeof(out)) >= sizeof(out))
        return;
    if (!hr__msg_parse(out, &back) || !same_msg(&m, &back))
        die("written message not read back");
}

/* What the writer makes of <r>: the head, then for a complete record the answer. */
static size_t write_record(const struct store_redis_idem *r, char *out, size_t cap)
{
    char head[STORE_REDIS_HEAD_MAX], ans[STORE_REDIS_ANSWER_HEAD_MAX];
    size_t h = store__redis_idem_head(r, head), a = 0, n;

    if (r->state == 'c')
        a = store__redis_idem_answer_head(r->status, r->stream, r->headers.len, ans);
    n = h + a + (r->state == 'c' ? r->headers.len + r->body.len : 0);
    if (n > cap)
        die("record larger than its input");
    memcpy(out, head, h);
    if (r->state == 'c') {
        memcpy(out + h, ans, a);
        if (r->headers.len)
            memcpy(out + h + a, r->headers.p, r->headers.len);
        if (r->body.len)
            memcpy(out + h + a + r->headers.len, r->body.p, r->body.len);
    }
    return n;
}

static bool within(struct bsc_str s, const char *v, size_t len)
{
    return !s.len || (s.p >= v && s.p + s.len <= v + len);
}

/* 2: a record that reads is exactly what its writer writes for it. */
static void record_raw(const uint8_t *data, size_t size)
{
    char *v = cstr(data, size), *out = malloc(size + 1);
    struct store_redis_idem r;

    if (!out)
        abort();
    if (store__redis_idem_read(v, size, &r)) {
        if (r.state != 'i' && r.state != 'c')
            die("record state neither i nor c");
        if (r.state == 'c' && (r.status < 100 || r.status > 999))
            die("record status out of range");
        if (!within(r.headers, v, size) || !within(r.body, v, size))
            die("record slices outside the value");
        if (write_record(&r, out, size) != size || memcmp(out, v, size) != 0)
            die("record read is not what the writer writes");
    }
    free(out);
    free(v);
}

/* 3: a record written from fuzzed fields reads back as them. */
static void record_fields(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    struct store_redis_idem r = {0}, back;
    char *out;
    size_t n, split;

    r.state = (p < end ? *p++ : 0) & 1 ? 'c' : 'i';
    r.claim = take64(&p, end);
    r.ttl_ms = take64(&p, end);
    for (size_t i = 0; i < IDEM_FP_LEN; i++)
        r.fp.b[i] = p < end ? *p++ : 0;
    r.status = 100 + (int)(take64(&p, end) % 900);
    r.stream = (p < end ? *p++ : 0) & 1;
    split = (size_t)(end - p) ? (size_t)take64(&p, end) % ((size_t)(end - p) + 1) : 0;
    r.headers = (struct bsc_str){(const char *)p, split};
    r.body = (struct bsc_str){(const char *)p + split, (size_t)(end - p) - split};
    out = malloc(size + 256);
    if (!out)
        abort();
    n = write_record(&r, out, size + 256);
    if (!store__redis_idem_read(out, n, &back) || back.state != r.state ||
        back.claim != r.claim || back.ttl_ms != r.ttl_ms ||
        memcmp(back.fp.b, r.fp.b, IDEM_FP_LEN) != 0)
        die("written record head not read back");
    if (r.state == 'c' &&
        (back.status != r.status || back.stream != r.stream ||
         !bsc_str_eq(back.headers, r.headers) || !bsc_str_eq(back.body, r.body)))
        die("written record answer not read back");
    free(out);
}

static bool is_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER;
}

static void check_ask(const redisReply *r, uint64_t want)
{
    uint64_t grant = UINT64_MAX;
    int64_t wait = -2;
    bool ok = hr__ask_read(r, want, &grant, &wait);
    long long g = -1, w = 0;
    bool shape = false;

    if (is_int(r)) {
        g = r->integer;
        shape = true;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && is_int(r->element[0]) &&
               is_int(r->element[1])) {
        g = r->element[0]->integer;
        w = r->element[1]->integer;
        shape = true;
    }
    bool want_ok = shape && g >= 0 && (unsigned long long)g <= want && w >= 0;
    if (ok != want_ok)
        die(ok ? "ask reply taken that the contract refuses" : "ask reply refused");
    if (ok && (grant != (uint64_t)g ||
               wait != (w < HR_ASK_WAIT_MAX_MS ? w : HR_ASK_WAIT_MAX_MS)))
        die("ask reply read wrong");
}

static void check_peeks(const redisReply *r)
{
    struct hr_cool cool;
    uint64_t left = 0;
    uint32_t opens = 0;
    bool pair = r->type == REDIS_REPLY_ARRAY && r->elements == 2 && is_int(r->element[1]) &&
                r->element[1]->integer > 0;

    if (hr__circuit_read(r, &left, &opens) != pair ||
        (pair && left != (uint64_t)r->element[1]->integer))
        die("circuit peek read wrong");
    if (pair && opens && (r->element[0]->type != REDIS_REPLY_STRING ||
                          strncmp(r->element[0]->str, "open ", 5) != 0))
        die("circuit openings read from another value");
    if (!hr__cool_read(r, &cool))
        return;
    if (!pair || r->element[0]->type != REDIS_REPLY_STRING || cool.left_ms == 0)
        die("cooldown read from another shape");
    const char *v = r->element[0]->str, *tab = strchr(v, '\t');
    char *end;
    errno = 0;
    long reason = strtol(v, &end, 10);
    if (end == v || errno || reason != cool.reason || (*end && *end != '\t'))
        die("cooldown reason read wrong");
    if (cool.model && (!tab || cool.model != tab + 1 || !*cool.model))
        die("cooldown model read wrong");
    if (!cool.model && tab && tab[1])
        die("cooldown model lost");
}

/* hiredis 0.14's reader allocates an array's elements as its length says, without a
 * bound: a "*555555552" asks for gigabytes. Replies of more than 1024 elements are no
 * concern of this target (ours have two), so inputs announcing one are skipped. */
static bool huge_array(const uint8_t *p, const uint8_t *end)
{
    for (; p < end; p++) {
        uint64_t n = 0;

        if (*p != '*')
            continue;
        for (const uint8_t *q = p + 1; q < end && *q >= '0' && *q <= '9' && n <= 1024; q++)
            n = n * 10 + (uint64_t)(*q - '0');
        if (n > 1024)
            return true;
    }
    return false;
}

/* 4: RESP bytes (after an 8-byte <want>) through hiredis's reader, each reply checked. */
static void replies(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    uint64_t want = take64(&p, end) % 100000;
    redisReader *rd;
    void *reply;

    if (huge_array(p, end))
        return;
    if (!(rd = redisReaderCreate()))
        abort();
    if (redisReaderFeed(rd, (const char *)p, (size_t)(end - p)) == REDIS_OK) {
        for (int n = 0; n < 64 && redisReaderGetReply(rd, &reply) == REDIS_OK && reply; n++) {
            check_ask(reply, want);
            check_peeks(reply);
            freeReplyObject(reply);
        }
    }
    redisReaderFree(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    switch (data[0] % 5) {
    case 0: msg_raw(data + 1, size - 1); break;
    case 1: msg_fields(data + 1, size - 1); break;
    case 2: record_raw(data + 1, size - 1); break;
    case 3: record_fields(data + 1, size - 1); break;
    default: replies(data + 1, size - 1); break;
    }
    return 0;
}
