/* SPDX-License-Identifier: MIT */
/* log.h -- leveled logging to stderr, one write(2) per line so lines from several
 * worker threads never interleave. The macro tests the level before evaluating its
 * arguments (Redis serverLog). Structured JSON lines (access, attempt) are built by
 * their owners and written with bsc_log_line(). */
#ifndef BSC_CORE_LOG_H
#define BSC_CORE_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/compat.h"

struct bsc_buf; /* core/buf.h */

enum bsc_log_level { BSC_LOG_ERR = 0, BSC_LOG_WARN, BSC_LOG_INFO, BSC_LOG_DEBUG, BSC_LOG_COUNT };

/* The log sink's settings: one of the three commented globals (docs/design.md §13.6).
 * Atomic because a reload (SIGHUP, main thread) sets them while workers log: a plain
 * assignment stays correct; readers load them relaxed, as no other data hangs on them. */
extern _Atomic int bsc_log_verbosity;
extern _Atomic bool bsc_log_json;

/* Parses "err|warn|info|debug"; returns -1 when unknown. */
int bsc_log_level_parse(const char *s);

void bsc_log_write(enum bsc_log_level lvl, const char *fmt, ...) BSC_PRINTF(2, 3);
/* Writes <line> (<len> bytes, without newline) plus a newline to stdout: at once, or --
 * on a thread that called bsc_log_batch_begin() -- into that thread's batch, written by
 * bsc_log_batch_flush() (a worker flushes once per loop iteration) or when it fills. */
void bsc_log_line(const char *line, size_t len);

/* Starts batching this thread's log lines (one write per loop iteration instead of one
 * per line: the access and attempt lines of a busy worker). Idempotent. */
void bsc_log_batch_begin(void);
/* Writes the batch, if any. */
void bsc_log_batch_flush(void);
/* Flushes and stops batching on this thread. */
void bsc_log_batch_end(void);
/* This thread's batch, or NULL when it does not batch: for a writer that builds its line in
 * place, past <len>, instead of handing a copy to bsc_log_line. Such a writer keeps what
 * bsc_log_line would do: it appends the line and its newline only when they fit below
 * <max> (else it hands the line to bsc_log_line, which writes the batch out first), and
 * <len> is the batch's end again when it returns. Valid until bsc_log_batch_end. */
struct bsc_buf *bsc_log_batch_peek(void);

#define bsc_log(lvl, ...)                                                                  \
    do {                                                                                   \
        if ((int)(lvl) <= atomic_load_explicit(&bsc_log_verbosity, memory_order_relaxed)) \
            bsc_log_write((lvl), __VA_ARGS__);                                             \
    } while (0)

#define LOG_ERR(...)   bsc_log(BSC_LOG_ERR, __VA_ARGS__)
#define LOG_WARN(...)  bsc_log(BSC_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...)  bsc_log(BSC_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) bsc_log(BSC_LOG_DEBUG, __VA_ARGS__)

#endif
