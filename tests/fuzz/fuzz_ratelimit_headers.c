/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/providers/ratelimit_headers.c */
/* fuzz_ratelimit_headers.c -- libFuzzer target for the rate-limit header parsers
 * (providers/ratelimit_headers.h). Input: up to four NUL-separated fields, each tried as a
 * duration, an RFC 3339 time, and as the values of the remaining / reset headers of both
 * families. Beyond "no crash, no leak, no UB" it aborts when an invariant breaks: a
 * duration is -1 or in [0, 24 h]; a time is -1 or >= 0; a count is -1 or >= 0; a reset is
 * -1 or >= 0; a rest is in [0, RL_MAX_RESET_MS]; parsing is deterministic. Built and run by
 * scripts/fuzz. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/str.h"
#include "providers/ratelimit_headers.h"

#define NOW_MS 1700000000000ull

static void die(const char *what)
{
    fprintf(stderr, "fuzz_ratelimit_headers: invariant broken: %s\n", what);
    abort();
}

struct fields {
    struct bsc_str f[4];
};

/* The remaining headers get fields 0 and 1, the reset headers 2 and 3. */
static struct bsc_str header(const void *ctx, const char *name)
{
    const struct fields *fs = ctx;
    int idx = strstr(name, "reset") ? 2 : 0;

    return fs->f[idx + (strstr(name, "token") ? 1 : 0)];
}

static void check_rl(const struct rl_headers *rl)
{
    int64_t rest = rl_exhausted_ms(rl);

    if (rl->remaining_requests < -1 || rl->remaining_tokens < -1)
        die("remaining below -1");
    if (rl->reset_requests_ms < -1 || rl->reset_tokens_ms < -1)
        die("reset below -1");
    if (rest < 0 || rest > RL_MAX_RESET_MS)
        die("rest out of range");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fields fs = {0};
    struct prov_err_input in = {.header = header, .header_ctx = &fs, .now_wall_ms = NOW_MS};
    struct rl_headers rl;
    size_t start = 0, n = 0;

    for (size_t i = 0; i <= size && n < 4; i++) {
        if (i == size || data[i] == 0) {
            fs.f[n++] = bsc_str_make((const char *)data + start, i - start);
            start = i + 1;
        }
    }
    for (size_t k = 0; k < n; k++) {
        int64_t d = rl_parse_duration_ms(fs.f[k]), t = rl_parse_rfc3339_ms(fs.f[k]);

        if (d < -1 || d > 24LL * 3600 * 1000 + 1)
            die("duration out of range");
        if (d != rl_parse_duration_ms(fs.f[k]) || t != rl_parse_rfc3339_ms(fs.f[k]))
            die("not deterministic");
        if (t < -1)
            die("time below -1");
    }
    rl_read_openai(&in, &rl);
    check_rl(&rl);
    rl_read_anthropic(&in, &rl);
    check_rl(&rl);
    return 0;
}
