/* SPDX-License-Identifier: MIT */
/* log.c -- the log sink. Each line is formatted into a stack buffer and written
 * with one write(2), which keeps lines whole across threads. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/compat.h"

_Atomic int bsc_log_verbosity = BSC_LOG_INFO;
_Atomic bool bsc_log_json = false;

static const char *const level_names[BSC_LOG_COUNT] = {"err", "warn", "info", "debug"};

int bsc_log_level_parse(const char *s)
{
    for (int i = 0; i < BSC_LOG_COUNT; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

static void write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

void bsc_log_write(enum bsc_log_level lvl, const char *fmt, ...)
{
    char msg[2048], line[2600], ts[32];
    va_list ap;
    time_t secs;
    struct tm tm;
    uint64_t now = bsc_wall_ms();
    int n;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    secs = (time_t)(now / 1000);
    gmtime_r(&secs, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    if (atomic_load_explicit(&bsc_log_json, memory_order_relaxed)) {
        struct bsc_buf b;
        bsc_buf_init(&b, sizeof(line) - 1);
        bsc_buf_appendf(&b, "{\"ts\":\"%s.%03uZ\",\"level\":\"%s\",\"msg\":", ts,
                        (unsigned)(now % 1000), level_names[lvl]);
        bsc_buf_append_json_str(&b, bsc_str_cstr(msg));
        bsc_buf_append(&b, "}\n", 2);
        if (b.p)
            write_all(STDERR_FILENO, b.p, b.len);
        bsc_buf_cleanup(&b);
        return;
    }
    n = snprintf(line, sizeof(line), "%s.%03uZ %-5s %s\n", ts, (unsigned)(now % 1000),
                 level_names[lvl], msg);
    if (n > 0)
        write_all(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

#define LOG_BATCH_MAX (64u * 1024u)

/* A worker's pending log lines: the third commented global kind (thread-local sink). */
static _Thread_local struct bsc_buf *log_batch;

void bsc_log_batch_begin(void)
{
    if (log_batch)
        return;
    log_batch = malloc(sizeof(*log_batch));
    if (log_batch)
        bsc_buf_init(log_batch, LOG_BATCH_MAX);
}

void bsc_log_batch_flush(void)
{
    if (log_batch && log_batch->len) {
        write_all(STDOUT_FILENO, log_batch->p, log_batch->len);
        bsc_buf_reset(log_batch);
    }
}

void bsc_log_batch_end(void)
{
    bsc_log_batch_flush();
    if (log_batch)
        bsc_buf_cleanup(log_batch);
    BSC_FREE(log_batch);
}

struct bsc_buf *bsc_log_batch_peek(void)
{
    return log_batch;
}

void bsc_log_line(const char *line, size_t len)
{
    char small[4096];

    if (log_batch) {
        if (log_batch->len + len + 1 > LOG_BATCH_MAX)
            bsc_log_batch_flush();
        if (bsc_buf_append(log_batch, line, len) == BSC_OK &&
            bsc_buf_append_char(log_batch, '\n') == BSC_OK)
            return;
        bsc_log_batch_flush(); /* a line larger than the batch: write it directly */
    }

    if (len < sizeof(small)) {
        memcpy(small, line, len);
        small[len] = '\n';
        write_all(STDOUT_FILENO, small, len + 1);
        return;
    }
    write_all(STDOUT_FILENO, line, len);
    write_all(STDOUT_FILENO, "\n", 1);
}

_Noreturn void bsc_bug(const char *file, int line, const char *what)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "BUG at %s:%d: %s\n", file, line, what);

    if (n > 0)
        write_all(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
    abort();
}
