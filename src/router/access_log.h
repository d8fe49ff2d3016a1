/* SPDX-License-Identifier: MIT */
/* access_log.h -- one JSON line per request on stdout: request id, route, target, status,
 * bytes, duration, time to first byte, attempts and a termination code. Never prompts,
 * outputs or keys. */
#ifndef BSC_ROUTER_ACCESS_LOG_H
#define BSC_ROUTER_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/attempt.h"

struct access_entry {
    const char *request_id;
    const char *method, *path; /* may be NULL: defaults to POST /v1/chat/completions */
    const char *route, *target; /* may be NULL */
    int status;
    bool stream;
    uint64_t bytes_in, bytes_out;
    uint64_t duration_us, ttfb_us;
    const struct attempt *attempts;
    size_t n_attempts;
    const char *termination; /* "ok", "client_abort", "upstream_interrupted", ... */
};

/* Formats <e> as one JSON line and writes it to stdout. */
void access_log_write(const struct access_entry *e);

#endif
