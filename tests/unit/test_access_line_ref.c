/* SPDX-License-Identifier: MIT */
/* test_access_line_ref.c -- router/access_log.c's line writer against a reference written
 * here, byte by byte with snprintf: every byte value 1..255 (a C string cannot hold 0) at
 * every position of strings of 1 to 40 bytes, around the 4-, 8- and 16-byte steps of a
 * word-at-a-time scan, on ASCII and UTF-8 around it; numbers at each power of ten and its
 * neighbours up to UINT64_MAX, signed ones down to INT64_MIN; microseconds written as
 * milliseconds with three decimals. test_access_line.c holds each line's shape; this one
 * the values. Lines are captured in the thread's batch, ts_ms masked as "T". */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/clock.h"
#include "core/log.h"
#include "router/access_log.h"
#include "router/req_state.h"

/* ---- the reference: what the lines must hold, one byte at a time ------------------------ */

struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *p, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    memcpy(t->p + t->len, p, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void text_addf(struct text *t, const char *fmt, ...) BSC_PRINTF(2, 3);
static void text_addf(struct text *t, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(tmp));
    text_add(t, tmp, (size_t)n);
}

/* RFC 8259 as bascule writes it: \" \\ \n \r \t, other controls as \u00xx (lowercase),
 * every other byte (DEL, UTF-8) as it is; NULL as null. */
static void ref_str(struct text *t, const char *key, const char *s)
{
    text_addf(t, ",\"%s\":", key);
    if (!s) {
        text_add(t, "null", 4);
        return;
    }
    text_add(t, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            text_add(t, "\\\"", 2);
            break;
        case '\\':
            text_add(t, "\\\\", 2);
            break;
        case '\n':
            text_add(t, "\\n", 2);
            break;
        case '\r':
            text_add(t, "\\r", 2);
            break;
        case '\t':
            text_add(t, "\\t", 2);
            break;
        default:
            if (*p < 0x20)
                text_addf(t, "\\u%04x", *p);
            else
                text_add(t, (const char *)p, 1);
        }
    }
    text_add(t, "\"", 1);
}

static void ref_u64(struct text *t, const char *key, unsigned long long v)
{
    text_addf(t, ",\"%s\":%llu", key, v);
}

static void ref_i64(struct text *t, const char *key, long long v)
{
    text_addf(t, ",\"%s\":%lld", key, v);
}

static void ref_ms(struct text *t, const char *key, unsigned long long us)
{
    text_addf(t, ",\"%s\":%llu.%03llu", key, us / 1000, us % 1000);
}

/* ---- capture: the batch, written to a temporary file ------------------------------------ */

struct capture {
    FILE *f;
    int saved;
};

static void capture_begin(struct capture *c)
{
    c->f = tmpfile();
    assert_non_null(c->f);
    fflush(stdout);
    c->saved = dup(STDOUT_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->f), STDOUT_FILENO) >= 0);
    bsc_log_batch_begin();
}

/* Everything written since capture_begin, each line's ts_ms digits replaced by "T". */
static char *capture_end(struct capture *c, size_t *len)
{
    char *all, *o;
    const char *i, *end;
    long n;

    bsc_log_batch_end();
    assert_true(dup2(c->saved, STDOUT_FILENO) >= 0);
    close(c->saved);
    assert_int_equal(fseek(c->f, 0, SEEK_END), 0);
    n = ftell(c->f);
    assert_true(n >= 0);
    rewind(c->f);
    all = malloc((size_t)n + 1);
    assert_non_null(all);
    assert_int_equal(fread(all, 1, (size_t)n, c->f), (size_t)n);
    fclose(c->f);
    all[n] = '\0';
    for (i = o = all, end = all + n; i < end;) {
        const char *nl = memchr(i, '\n', (size_t)(end - i)), *ts = strstr(i, "\"ts_ms\":");

        assert_non_null(nl);
        assert_true(ts && ts < nl);
        const char *digits;

        ts += strlen("\"ts_ms\":");
        for (digits = ts; *digits >= '0' && *digits <= '9'; digits++)
            ;
        assert_true(digits > ts);
        memmove(o, i, (size_t)(ts - i)); /* <o> never passes <i>: the line only shrinks */
        o += ts - i;
        *o++ = 'T';
        i = digits;
        memmove(o, i, (size_t)(nl + 1 - i));
        o += nl + 1 - i;
        i = nl + 1;
    }
    *o = '\0';
    *len = (size_t)(o - all);
    return all;
}

static void assert_same_lines(const char *got, const struct text *want)
{
    size_t i = 0, line = 1, from = 0;

    while (got[i] && got[i] == want->p[i]) {
        if (got[i] == '\n') {
            line++;
            from = i + 1;
        }
        i++;
    }
    if (got[i] != want->p[i]) {
        print_error("line %zu differs at byte %zu:\n got  %.300s\n want %.300s\n", line, i - from,
                    got + from, want->p + from);
        fail();
    }
}

/* ---- the attempt line ------------------------------------------------------------------- */

static const char *const workflow_names[] = {"primary", "retry", "equivalent_failover",
                                             "cross_model_fallback"};
static const char *const outcome_names[] = {"running", "ok",      "committed",
                                            "failed",  "partial", "cancelled"};

/* Writes <l> and adds the line it must be to <want>. */
static void attempt_both(const struct access_attempt_line *l, struct text *want)
{
    const struct attempt *a = l->a;

    access_log_write_attempt(l);
    text_add(want, "{\"type\":\"attempt\",\"ts_ms\":T",
             strlen("{\"type\":\"attempt\",\"ts_ms\":T"));
    ref_str(want, "request_id", l->request_id);
    ref_str(want, "route", l->route);
    ref_u64(want, "attempt", l->number);
    ref_str(want, "target", a->target ? a->target->id : NULL);
    ref_str(want, "workflow", workflow_names[a->workflow]);
    ref_str(want, "outcome", outcome_names[a->outcome]);
    ref_str(want, "kind", a->kind);
    ref_i64(want, "status", a->status);
    ref_ms(want, "ms", a->end_us > a->start_us ? a->end_us - a->start_us : 0);
    ref_u64(want, "delay_before_ms", a->delay_ms);
    ref_str(want, "circuit", l->circuit);
    ref_u64(want, "time_left_ms", l->time_left_ms);
    ref_str(want, "next", l->next);
    ref_str(want, "why", l->why);
    ref_u64(want, "next_delay_ms", l->next_delay_ms);
    ref_str(want, "delay_why", l->delay_why);
    if (a->ranking[0])
        ref_str(want, "ranking", a->ranking);
    if (l->limited_by)
        ref_str(want, "limited_by", l->limited_by);
    if (l->queued_ms >= 0)
        ref_i64(want, "queued_ms", l->queued_ms);
    text_add(want, "}\n", 2);
}

/* <s>: <len> bytes of background, <c> at <pos>. The background is ASCII letters, or UTF-8
 * (two- and three-byte sequences, cut where <len> ends) when <utf8>. */
static void special_at(char *s, size_t len, size_t pos, unsigned char c, bool utf8)
{
    static const char ascii[] = "abcdefghijklmnopqrstuvwxyz0123456789-_.@";
    static const char multi[] = "\xc3\xa9\xe2\x82\xac\xd0\x96\xe6\x97\xa5";

    for (size_t i = 0; i < len; i++)
        s[i] = utf8 ? multi[i % (sizeof(multi) - 1)] : ascii[i % (sizeof(ascii) - 1)];
    s[pos] = (char)c;
    s[len] = '\0';
}

static const size_t lengths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  11, 12,
                                 15, 16, 17, 20, 23, 24, 25, 31, 32, 33, 40};

/* Each byte 1..255 at each position of each length, in every string field of the attempt
 * line at once (the target's id too, copied or escaped as the config found it). */
static void attempt_every_byte_everywhere(void **state)
{
    static char s[64], other[64];
    struct text want = {0};
    struct capture cap;
    struct cfg_target t = {0};
    struct attempt a;
    size_t got_len;
    char *got;

    (void)state;
    for (unsigned c = 1; c < 256; c++) {
        capture_begin(&cap);
        for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
            size_t len = lengths[li];

            for (size_t pos = 0; pos < len; pos++) {
                special_at(s, len, pos, (unsigned char)c, c & 1);
                /* a second special byte at the end, where the last (overlapping) word is */
                special_at(other, len, len - 1 - pos, (unsigned char)c, !(c & 1));
                t.id = s;
                t.id_len = len;
                t.id_plain = strpbrk(s, "\"\\") == NULL && c >= 0x20;
                memset(&a, 0, sizeof(a));
                a.target = &t;
                a.workflow = (enum attempt_workflow)(pos % ATTEMPT_WF_COUNT);
                a.outcome = (enum attempt_outcome)(len % ATTEMPT_OUTCOME_COUNT);
                a.kind = other;
                a.status = 200;
                a.start_us = 5;
                a.end_us = 5 + pos * 1001;
                memcpy(a.ranking, s, len + 1);
                struct access_attempt_line l = {
                    .request_id = s,
                    .route = other,
                    .number = 1,
                    .a = &a,
                    .circuit = s,
                    .time_left_ms = len,
                    .next = other,
                    .why = s,
                    .next_delay_ms = 0,
                    .delay_why = other,
                    .limited_by = s,
                    .queued_ms = (int64_t)pos - 1,
                };
                attempt_both(&l, &want);
            }
        }
        got = capture_end(&cap, &got_len);
        assert_int_equal(got_len, want.len);
        assert_same_lines(got, &want);
        free(got);
        want.len = 0;
    }
    free(want.p);
}

/* The numbers each field can hold: 0, every power of ten and its neighbours, the ends of
 * 32 and 64 bits, and a spread between them. */
static size_t numbers_fill(uint64_t *v, size_t max)
{
    size_t n = 0;
    uint64_t p = 1, x = 0x9e3779b97f4a7c15ull;

    v[n++] = 0;
    for (int k = 0; k < 20; k++, p *= 10) {
        v[n++] = p - 1;
        v[n++] = p;
        v[n++] = p + 1;
        v[n++] = p * 5 - 1;
    }
    v[n++] = UINT32_MAX - 1;
    v[n++] = UINT32_MAX;
    v[n++] = (uint64_t)UINT32_MAX + 1;
    v[n++] = INT64_MAX;
    v[n++] = (uint64_t)INT64_MAX + 1;
    v[n++] = UINT64_MAX - 1;
    v[n++] = UINT64_MAX;
    while (n < max) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[n++] = x >> (x & 63); /* every magnitude */
    }
    return n;
}

static void attempt_numbers(void **state)
{
    uint64_t v[400];
    size_t n = numbers_fill(v, 400);
    struct cfg_target t = {.id = (char *)"t", .id_len = 1, .id_plain = true};
    struct text want = {0};
    struct capture cap;
    struct attempt a;
    size_t got_len;
    char *got;

    (void)state;
    capture_begin(&cap);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i], y = v[n - 1 - i];

        memset(&a, 0, sizeof(a));
        a.target = &t;
        a.status = (int)(uint32_t)x; /* negative half the time */
        a.delay_ms = (uint32_t)y;
        a.start_us = i & 1 ? y : 0;
        a.end_us = x;
        struct access_attempt_line l = {
            .request_id = "n",
            .route = "r",
            .number = (unsigned)x,
            .a = &a,
            .time_left_ms = x,
            .next = "stop",
            .next_delay_ms = (uint32_t)(x >> 32),
            .queued_ms = (int64_t)(i & 2 ? x : y),
        };
        attempt_both(&l, &want);
        l.queued_ms = (int64_t)x >= 0 ? -(int64_t)x : (int64_t)x; /* never written */
        a.status = -(int)(uint32_t)y % 1000;
        attempt_both(&l, &want);
    }
    got = capture_end(&cap, &got_len);
    assert_int_equal(got_len, want.len);
    assert_same_lines(got, &want);
    free(got);
    free(want.p);
}

/* ---- the access line -------------------------------------------------------------------- */

static void access_both(const struct access_entry *e, struct text *want)
{
    access_log_write(e);
    text_add(want, "{\"type\":\"access\",\"ts_ms\":T", strlen("{\"type\":\"access\",\"ts_ms\":T"));
    ref_str(want, "request_id", e->request_id);
    ref_str(want, "method", e->method ? e->method : "POST");
    ref_str(want, "path", e->path ? e->path : "/v1/chat/completions");
    ref_str(want, "route", e->route);
    if (e->client)
        ref_str(want, "client", e->client);
    if (e->selected_by)
        ref_str(want, "selected_by", e->selected_by);
    ref_str(want, "target", e->target);
    ref_i64(want, "status", e->status);
    text_addf(want, ",\"stream\":%s", e->stream ? "true" : "false");
    ref_u64(want, "bytes_in", e->bytes_in);
    ref_u64(want, "bytes_out", e->bytes_out);
    ref_ms(want, "duration_ms", e->duration_us);
    ref_ms(want, "ttfb_ms", e->ttfb_us);
    ref_u64(want, "attempts", e->n_attempts);
    ref_str(want, "termination", e->termination);
    if (e->detail)
        ref_str(want, "detail", e->detail);
    if (e->limited_by)
        ref_str(want, "limited_by", e->limited_by);
    if (e->cache)
        ref_str(want, "cache", e->cache);
    if (e->queued_ms > 0 || (e->queued_ms == 0 && e->limited_by))
        ref_i64(want, "queued_ms", e->queued_ms);
    if (e->input_tokens >= 0 || e->output_tokens >= 0) {
        ref_i64(want, "input_tokens", e->input_tokens);
        ref_i64(want, "output_tokens", e->output_tokens);
        if (e->cached_tokens > 0)
            ref_i64(want, "cached_input_tokens", e->cached_tokens);
        if (e->cache_write_tokens > 0)
            ref_i64(want, "cache_write_tokens", e->cache_write_tokens);
        if (e->reasoning_tokens > 0)
            ref_i64(want, "reasoning_tokens", e->reasoning_tokens);
        text_addf(want, ",\"cost_usd\":%.8f",
                  e->cost_usd); /* values printf and the fast path agree on */
    }
    text_add(want, "}\n", 2);
}

/* Each byte 1..255 at the ends and middle of a few lengths, in every string field. */
static void access_every_byte(void **state)
{
    static const size_t sizes[] = {1, 4, 7, 8, 9, 15, 16, 17, 24, 33};
    static char s[64], other[64];
    struct text want = {0};
    struct capture cap;
    size_t got_len;
    char *got;

    (void)state;
    capture_begin(&cap);
    for (unsigned c = 1; c < 256; c++) {
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            size_t len = sizes[si], at[] = {0, len / 2, len - 1};

            for (size_t k = 0; k < 3; k++) {
                special_at(s, len, at[k], (unsigned char)c, k & 1);
                special_at(other, len, len - 1 - at[k], (unsigned char)c, !(k & 1));
                struct access_entry e = {
                    .request_id = s,
                    .method = other,
                    .path = s,
                    .route = other,
                    .client = s,
                    .selected_by = other,
                    .target = s,
                    .status = 200,
                    .termination = other,
                    .detail = s,
                    .limited_by = other,
                    .cache = s,
                    .input_tokens = -1,
                    .output_tokens = -1,
                    .queued_ms = (int64_t)k - 1,
                };
                access_both(&e, &want);
            }
        }
    }
    got = capture_end(&cap, &got_len);
    assert_int_equal(got_len, want.len);
    assert_same_lines(got, &want);
    free(got);
    free(want.p);
}

static void access_numbers(void **state)
{
    static const double costs[] = {0, 0.5, 1.25, 3.0, 1024.0625};
    uint64_t v[400];
    size_t n = numbers_fill(v, 400);
    struct text want = {0};
    struct capture cap;
    size_t got_len;
    char *got;

    (void)state;
    capture_begin(&cap);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i], y = v[n - 1 - i];
        struct access_entry e = {
            .request_id = "n",
            .status = (int)(uint32_t)y,
            .stream = i & 1,
            .bytes_in = x,
            .bytes_out = y,
            .duration_us = x,
            .ttfb_us = y,
            .n_attempts = 0,
            .termination = "ok",
            .limited_by = i & 4 ? "l" : NULL,
            .queued_ms = (int64_t)(i & 2 ? x : y),
            .input_tokens = (int64_t)x,
            .output_tokens = (int64_t)y,
            .cached_tokens = (int64_t)(x ^ y),
            .cache_write_tokens = (int64_t)(x >> 1),
            .reasoning_tokens = (int64_t)(y >> 3),
            .cost_usd = costs[i % 5],
        };

        if (e.input_tokens < 0 && e.output_tokens < 0)
            e.input_tokens = (int64_t)(x >> 1); /* keep the token fields on the line */
        access_both(&e, &want);
        e.queued_ms = 0; /* written only with limited_by */
        e.input_tokens = -1;
        e.output_tokens = (int64_t)(y >> 1);
        access_both(&e, &want);
    }
    got = capture_end(&cap, &got_len);
    assert_int_equal(got_len, want.len);
    assert_same_lines(got, &want);
    free(got);
    free(want.p);
}

/* ---- ts_ms: the wall clock of each line, its digits kept from the line before ---------- */

static uint64_t ts_of(const char *line)
{
    const char *ts = strstr(line, "\"ts_ms\":");
    char *end;
    unsigned long long v;

    assert_non_null(ts);
    v = strtoull(ts + strlen("\"ts_ms\":"), &end, 10);
    assert_true(*end == ',');
    return v;
}

/* Each line's ts_ms lies between the clock read before and after it was written, through
 * lines in the same millisecond (the digits copied) and lines a few milliseconds apart (made
 * again), and the rest of the line is untouched by either. */
static void ts_follows_the_clock(void **state)
{
    struct access_attempt_line l = {
        .request_id = "c", .route = "r", .number = 1, .next = "stop", .queued_ms = -1};
    struct attempt a = {.status = 200};
    uint64_t before[24], after[24];
    struct capture cap;
    size_t got_len;
    char *got, *line;

    (void)state;
    l.a = &a;
    capture_begin(&cap);
    bsc_log_batch_end(); /* each line written at once: read back below, unmasked */
    for (int i = 0; i < 24; i++) {
        before[i] = bsc_wall_ms();
        access_log_write_attempt(&l);
        after[i] = bsc_wall_ms();
        if (i % 3 == 2) /* two lines in the same millisecond, then a new one */
            usleep(1500);
    }
    assert_true(dup2(cap.saved, STDOUT_FILENO) >= 0);
    close(cap.saved);
    assert_int_equal(fseek(cap.f, 0, SEEK_END), 0);
    got_len = (size_t)ftell(cap.f);
    rewind(cap.f);
    got = calloc(1, got_len + 1);
    assert_non_null(got);
    assert_int_equal(fread(got, 1, got_len, cap.f), got_len);
    fclose(cap.f);
    line = got;
    for (int i = 0; i < 24; i++) {
        char *nl = strchr(line, '\n'), *ts = strstr(line, "\"ts_ms\":"), *rest;
        uint64_t v = ts_of(line);

        assert_non_null(nl);
        assert_in_range(v, before[i], after[i]);
        rest = strchr(ts, ',');
        assert_true(rest && rest < nl);
        *nl = '\0';
        assert_string_equal(rest, ",\"request_id\":\"c\",\"route\":\"r\",\"attempt\":1,"
                                  "\"target\":null,\"workflow\":\"primary\","
                                  "\"outcome\":\"running\",\"kind\":null,\"status\":200,"
                                  "\"ms\":0.000,\"delay_before_ms\":0,\"circuit\":null,"
                                  "\"time_left_ms\":0,\"next\":\"stop\",\"why\":null,"
                                  "\"next_delay_ms\":0,\"delay_why\":null}");
        line = nl + 1;
    }
    free(got);
}

/* ---- in the batch: the bytes, and the points where it is written out ------------------- */

#define BATCH_MAX (64u * 1024u) /* core/log.c's LOG_BATCH_MAX */

static size_t written(const struct capture *c)
{
    struct stat st;

    fflush(c->f);
    assert_int_equal(fstat(fileno(c->f), &st), 0);
    return (size_t)st.st_size;
}

/* The line <e> makes when written at once (no batch), newline included, in <out>. */
static size_t line_alone(const struct access_entry *e, char *out, size_t cap)
{
    struct capture c;
    size_t n;

    c.f = tmpfile();
    assert_non_null(c.f);
    fflush(stdout);
    c.saved = dup(STDOUT_FILENO);
    assert_true(dup2(fileno(c.f), STDOUT_FILENO) >= 0);
    access_log_write(e);
    assert_true(dup2(c.saved, STDOUT_FILENO) >= 0);
    close(c.saved);
    n = written(&c);
    assert_true(n > 0 && n < cap);
    rewind(c.f);
    assert_int_equal(fread(out, 1, n, c.f), n);
    out[n] = '\0';
    fclose(c.f);
    return n;
}

/* A line is built in place in the batch when it fits there and handed to bsc_log_line when
 * it does not: either way the batch must be written out exactly where bsc_log_line writes
 * it (when the line and its newline would pass the batch's maximum), and the bytes must be
 * those of the line written alone, the line's bound (16384 bytes, fields past it left out)
 * included. Fillers put the batch's end at each byte around those points. */
static void batch_in_place_as_handed_over(void **state)
{
    /* {detail, cache} lengths, and how the line ends: 0 with the attempts and the states
     * (many short fields: it stays in the batch to its end), 1 with tokens and a literal
     * (the room asked for its last fields is the room they take) */
    static const size_t sizes[][3] = {{0, 0, 0}, {700, 0, 0},     {5000, 0, 0},  {1500, 0, 1},
                                      {0, 0, 2}, {9000, 9000, 0}, {17000, 0, 0}, {40000, 0, 0}};
    /* kind 2: about 1,100 bytes of fields that ask no more room than they take near the
     * end, so that the line meets the batch's end in place: strings first, then the
     * widest numbers, then the literal */
    static char s160[161], s100[101], s60[61];
    static char detail[40001], other[9001], alone[20000], filler[BATCH_MAX];
    static struct cfg_target t = {.id = (char *)"target-1", .id_len = 8, .id_plain = true};
    struct attempt a[16];
    struct req_times times;
    struct capture cap;

    (void)state;
    memset(filler, 'x', sizeof(filler));
    memset(s160, 'i', 160);
    memset(s100, 'p', 100);
    memset(s60, 'c', 60);
    memset(a, 0, sizeof(a));
    for (size_t i = 0; i < 16; i++) {
        a[i].target = &t;
        a[i].workflow = ATTEMPT_WF_RETRY;
        a[i].outcome = ATTEMPT_FAILED;
        a[i].kind = "upstream_5xx";
        a[i].status = 503;
        a[i].end_us = 1000 * i + 7;
    }
    memset(&times, 0, sizeof(times));
    times.visited = (1u << REQ_ST_COUNT) - 1;
    for (size_t di = 0; di < sizeof(sizes) / sizeof(sizes[0]); di++) {
        struct access_entry e = {.request_id = "b",
                                 .route = "r\"q",
                                 .status = 200,
                                 .input_tokens = -1,
                                 .output_tokens = -1,
                                 .queued_ms = -1};
        size_t len;

        for (size_t i = 0; i < sizes[di][0]; i++)
            detail[i] = i % 97 == 3 ? '"' : (char)('a' + i % 26);
        detail[sizes[di][0]] = '\0';
        memset(other, 'c', sizes[di][1]);
        other[sizes[di][1]] = '\0';
        e.detail = sizes[di][0] ? detail : NULL;
        e.cache = sizes[di][1] ? other : NULL;
        if (sizes[di][2] == 2) {
            e.request_id = s160;
            e.method = e.path = e.route = s100;
            e.client = s60;
            e.termination = "ok";
            e.bytes_in = e.bytes_out = e.duration_us = e.ttfb_us = UINT64_MAX;
            e.input_tokens = e.output_tokens = e.cached_tokens = INT64_MAX;
            e.cache_write_tokens = e.reasoning_tokens = INT64_MAX;
            e.cost_usd = 0.5;
            e.cost_estimated = true;
        } else if (sizes[di][2] == 1) {
            e.input_tokens = 5;
            e.output_tokens = 6;
            e.cost_usd = 0.5;
            e.cost_estimated = true;
        } else if (sizes[di][0] < 9000) {
            e.attempts = a;
            e.n_attempts = 16;
            e.states = &times;
        }
        len = line_alone(&e, alone, sizeof(alone));
        assert_true(len <= 16384 + 1);

        size_t fills[] = {0,
                          1,
                          BATCH_MAX - 1026,
                          BATCH_MAX - 1025,
                          BATCH_MAX - 1024,
                          BATCH_MAX - 1023,
                          BATCH_MAX - len - 3,
                          BATCH_MAX - len - 2,
                          BATCH_MAX - len - 1,
                          BATCH_MAX - len,
                          BATCH_MAX - len + 1,
                          BATCH_MAX - 2};

        for (size_t fi = 0; fi < sizeof(fills) / sizeof(fills[0]); fi++) {
            size_t f = fills[fi], total, early, want_early;
            bool over = f + 1 + len > BATCH_MAX;
            char *got;

            capture_begin(&cap);
            bsc_log_line(filler, f);
            access_log_write(&e);
            early = written(&cap);
            want_early = over ? f + 1 : 0;
            if (early != want_early)
                print_error("line %zu, filler %zu: %zu bytes written before the flush, "
                            "want %zu\n",
                            di, f, early, want_early);
            assert_int_equal(early, want_early);
            bsc_log_batch_end();
            total = written(&cap);
            assert_int_equal(total, f + 1 + len);
            got = malloc(total + 1);
            assert_non_null(got);
            rewind(cap.f);
            assert_int_equal(fread(got, 1, total, cap.f), total);
            got[total] = '\0';
            assert_true(dup2(cap.saved, STDOUT_FILENO) >= 0);
            close(cap.saved);
            fclose(cap.f);
            assert_memory_equal(got, filler, f);
            assert_int_equal(got[f], '\n');
            /* ts_ms may differ by a millisecond: compared up to it and from its end */
            assert_memory_equal(got + f + 1, alone, strlen("{\"type\":\"access\",\"ts_ms\":"));
            assert_string_equal(strstr(alone, ",\"request_id\""),
                                strstr(got + f + 1, ",\"request_id\""));
            free(got);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attempt_every_byte_everywhere),
        cmocka_unit_test(attempt_numbers),
        cmocka_unit_test(access_every_byte),
        cmocka_unit_test(access_numbers),
        cmocka_unit_test(ts_follows_the_clock),
        cmocka_unit_test(batch_in_place_as_handed_over),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
