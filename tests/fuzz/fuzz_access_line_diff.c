/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/router/access_log.c src/policy/attempt.c */
/* fuzz_access_line_diff.c -- libFuzzer target for the attempt line's writer
 * (router/access_log.c) against a reference written here byte by byte: the input is cut at
 * its NUL bytes into the line's strings (request id, route, kind, circuit, next, why) and
 * its first 16 bytes give two numbers (the attempt's span, the time left). The line is built
 * in the thread's log batch and compared there (ts_ms skipped); the batch is emptied before
 * the next input, never written. Aborts when they differ. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/log.h"
#include "router/access_log.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_access_line_diff: %s\n", what);
    abort();
}

static void ref_add(struct bsc_buf *r, const char *p, size_t n)
{
    if (bsc_buf_append(r, p, n) != BSC_OK)
        die("reference buffer");
}

#define REF_LIT(r, lit) ref_add(r, "" lit, sizeof(lit) - 1)

/* ,"<key>":"<escaped>" or null, one byte at a time. */
static void ref_str(struct bsc_buf *r, const char *key, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    ref_add(r, ",\"", 2);
    ref_add(r, key, strlen(key));
    ref_add(r, "\":", 2);
    if (!s) {
        ref_add(r, "null", 4);
        return;
    }
    ref_add(r, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};

        if (*p == '"' || *p == '\\')
            ref_add(r, (char[2]){'\\', (char)*p}, 2);
        else if (*p == '\n')
            ref_add(r, "\\n", 2);
        else if (*p == '\r')
            ref_add(r, "\\r", 2);
        else if (*p == '\t')
            ref_add(r, "\\t", 2);
        else if (*p < 0x20)
            ref_add(r, e, 6);
        else
            ref_add(r, (const char *)p, 1);
    }
    ref_add(r, "\"", 1);
}

static void ref_num(struct bsc_buf *r, const char *key, const char *fmt, unsigned long long a,
                    unsigned long long b)
{
    char text[96];
    int n = snprintf(text, sizeof(text), fmt, key, a, b);

    if (n < 0 || (size_t)n >= sizeof(text))
        die("reference number");
    ref_add(r, text, (size_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    static struct cfg_target target = {.id = (char *)"t", .id_len = 1, .id_plain = true};
    char *copy, *field[6] = {NULL};
    uint64_t span = 0, left = 0;
    struct bsc_buf ref, *batch;
    struct attempt a;
    const char *got;
    size_t nf = 0, start;

    if (!ready) {
        bsc_log_batch_begin();
        ready = true;
    }
    if (size > 2000)
        return 0; /* escaped six to a byte, the line stays below its 16,384-byte bound */
    if (size >= 16) {
        memcpy(&span, data, 8);
        memcpy(&left, data + 8, 8);
        data += 16;
        size -= 16;
    }
    copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (char *p = copy; nf < 6 && p <= copy + size; p += strlen(p) + 1)
        field[nf++] = p; /* fields past the input's NULs stay NULL: written as null */

    memset(&a, 0, sizeof(a));
    a.target = &target;
    a.kind = field[2];
    a.status = 200;
    a.end_us = span;
    struct access_attempt_line l = {.request_id = field[0], .route = field[1], .number = 1,
                                    .a = &a, .circuit = field[3], .time_left_ms = left,
                                    .next = field[4], .why = field[5], .queued_ms = -1};
    batch = bsc_log_batch_peek();
    if (!batch)
        die("no batch");
    bsc_buf_reset(batch); /* the last input's line dropped: nothing reaches stdout */
    start = batch->len;
    access_log_write_attempt(&l);

    bsc_buf_init(&ref, 1u << 20);
    ref_str(&ref, "request_id", l.request_id);
    ref_str(&ref, "route", l.route);
    REF_LIT(&ref, ",\"attempt\":1,\"target\":\"t\",\"workflow\":\"primary\"");
    REF_LIT(&ref, ",\"outcome\":\"running\"");
    ref_str(&ref, "kind", a.kind);
    REF_LIT(&ref, ",\"status\":200");
    ref_num(&ref, "ms", ",\"%s\":%llu.%03llu", span / 1000, span % 1000);
    REF_LIT(&ref, ",\"delay_before_ms\":0");
    ref_str(&ref, "circuit", l.circuit);
    ref_num(&ref, "time_left_ms", ",\"%s\":%llu", left, 0);
    ref_str(&ref, "next", l.next);
    ref_str(&ref, "why", l.why);
    REF_LIT(&ref, ",\"next_delay_ms\":0,\"delay_why\":null}\n");

    /* The line in the batch, from its request_id on (ts_ms is the clock's). */
    got = batch->p ? strstr(batch->p + start, ",\"request_id\":") : NULL;
    if (!got || (size_t)(batch->p + batch->len - got) != ref.len || memcmp(got, ref.p, ref.len))
        die("the line differs from the reference");
    bsc_buf_cleanup(&ref);
    free(copy);
    return 0;
}
