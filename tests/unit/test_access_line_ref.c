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
        case '"': text_add(t, "\\\"", 2); break;
        case '\\': text_add(t, "\\\\", 2); break;
        case '\n': text_add(t, "\\n", 2); break;
        case '\r': text_add(t, "\\r", 2); break;
        case '\t': text_add(t, "\\t", 2); break;
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
        print_error("line %zu differs at byte %zu:\n got  %.300s\n want %.300s\n", line,
                    i - from, got + from, want->p + from);
        fail();
    }
}

/* ---- the attempt line ------------------------------------------------------------------- */

static const char *const workflow_names[] = {"primary", "retry", "equivalent_failover",
                                             "cross_model_fallback"};
static const char *const outcome_names[] = {"running", "ok", "committed", "failed", "partial",
                                            "cancelled"};

/* Writes <l> and adds the line it must be to <want>. */
static void attempt_both(const struct access_attempt_line *l, struct text *want)
{
    const struct attempt *a = l->a;

    access_log_write_attempt(l);
    text_add(want, "{\"type\":\"attempt\",\"ts_ms\":T", strlen("{\"type\":\"attempt\",\"ts_ms\":T"));
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

static const size_t lengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 15, 16, 17,
                                 20, 23, 24, 25, 31, 32, 33, 40};

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
        text_addf(want, ",\"cost_usd\":%.8f", e->cost_usd); /* values printf and the fast path agree on */
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
                    .request_id = s, .method = other, .path = s, .route = other,
                    .client = s, .selected_by = other, .target = s, .status = 200,
                    .termination = other, .detail = s, .limited_by = other, .cache = s,
                    .input_tokens = -1, .output_tokens = -1, .queued_ms = (int64_t)k - 1,
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
            .request_id = "n", .status = (int)(uint32_t)y, .stream = i & 1,
            .bytes_in = x, .bytes_out = y, .duration_us = x, .ttfb_us = y,
            .n_attempts = 0, .termination = "ok", .limited_by = i & 4 ? "l" : NULL,
            .queued_ms = (int64_t)(i & 2 ? x : y),
            .input_tokens = (int64_t)x, .output_tokens = (int64_t)y,
            .cached_tokens = (int64_t)(x ^ y), .cache_write_tokens = (int64_t)(x >> 1),
            .reasoning_tokens = (int64_t)(y >> 3), .cost_usd = costs[i % 5],
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
    struct access_attempt_line l = {.request_id = "c", .route = "r", .number = 1,
                                    .next = "stop", .queued_ms = -1};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attempt_every_byte_everywhere),
        cmocka_unit_test(attempt_numbers),
        cmocka_unit_test(access_every_byte),
        cmocka_unit_test(access_numbers),
        cmocka_unit_test(ts_follows_the_clock),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
