/* SPDX-License-Identifier: MIT */
/* test_head_find.c -- up_head_find (upstream/transfer.c), the header lookup over a kept
 * response head, against a reference that splits each line at its first colon: on heads
 * an untrusted upstream could send (duplicates, a name's case, a space before the colon or
 * at the line's start, more colons, bare CR or LF, no final line break, no colon at all),
 * the same value, or none, and the same bytes of the head; up_head_find_each, all names in
 * one pass, the same for each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/str.h"
#include "upstream/upstream.h"

/* The reference: each line split at its first colon, the name compared whole. */
static struct bsc_str ref_head_find(struct bsc_str head, struct bsc_str name)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;

    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = eol ? (size_t)(eol - p) : (size_t)(end - p);
        const char *colon = memchr(p, ':', line_len);

        if (colon && bsc_str_ieq(bsc_str_make(p, (size_t)(colon - p)), name)) {
            struct bsc_str v = bsc_str_make(colon + 1, line_len - (size_t)(colon + 1 - p));
            if (v.len && v.p[v.len - 1] == '\r')
                v.len--;
            return bsc_str_trim(v);
        }
        p = eol ? eol + 1 : end;
    }
    return BSC_STR_NULL;
}

static const char *const names[] = {
    "x-ratelimit-remaining-requests", "X-RateLimit-Remaining-Requests", "x-ratelimit-remaining",
    "content-length", "Content-Type", "x", "x-y", "X-Y", "x-yz", "", "retry-after", "HTTP/1.1 200 a",
};

/* All names at once, and every run of names (so a pass that stops when all are found stops
 * at every point), each as the reference finds it. */
static void expect_each_as_reference(struct bsc_str head)
{
    enum { N = sizeof(names) / sizeof(names[0]) };
    struct bsc_str want[N], got[N];

    for (size_t k = 0; k < N; k++)
        want[k] = bsc_str_cstr(names[k]);
    for (size_t from = 0; from < N; from++)
        for (size_t n = 0; from + n <= N; n++) {
            up_head_find_each(head, want + from, n, got);
            for (size_t k = 0; k < n; k++) {
                struct bsc_str ref = ref_head_find(head, want[from + k]);

                if (got[k].p != ref.p || got[k].len != ref.len)
                    fail_msg("name \"%s\" (of %zu at once) in head \"%.*s\": got %td+%zu, want "
                             "%td+%zu", names[from + k], n, (int)head.len, head.p,
                             got[k].p ? got[k].p - head.p : -1, got[k].len,
                             ref.p ? ref.p - head.p : -1, ref.len);
            }
        }
}

static void expect_as_reference(struct bsc_str head)
{
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        struct bsc_str name = bsc_str_cstr(names[k]);
        struct bsc_str got = up_head_find(head, name), want = ref_head_find(head, name);

        if (got.p != want.p || got.len != want.len)
            fail_msg("name \"%s\" in head \"%.*s\": got %s\"%.*s\" at %td, want %s\"%.*s\" at %td",
                     names[k], (int)head.len, head.p, got.p ? "" : "none ", (int)got.len,
                     got.p ? got.p : "", got.p ? got.p - head.p : -1, want.p ? "" : "none ",
                     (int)want.len, want.p ? want.p : "", want.p ? want.p - head.p : -1);
    }
    expect_each_as_reference(head);
}

/* Hand-written heads, each cut at every length (a head may end anywhere in a line). */
static void test_written_heads(void **state)
{
    static const char *const heads[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n",
        "HTTP/1.1 200 a: b\r\nx-y: 1\r\nX-Y: 2\r\n",
        "x-y :1\r\n x-y: 2\r\nx-y: 3\r\n",
        "x-y\r\nx-y: \t v \t\r\nx-yz: w\r\n",
        "x-y: a: b: c\r\nx: \r\n:\r\n: empty\r\n",
        "x-y:v\rx-y: w\n\nx-y: z",
        "X-RATELIMIT-REMAINING-REQUESTS: 59\r\nx-ratelimit-remaining-requests: 1\r\n",
        "x-ratelimit-remaining-requests-x: 5\r\nx-ratelimit-remaining: 6\r\n",
        "retry-after\r\n: 4\r\nretry-after:\r\n",
        "",
    };

    (void)state;
    expect_as_reference(BSC_STR_NULL);
    for (size_t h = 0; h < sizeof(heads) / sizeof(heads[0]); h++)
        for (size_t n = 0; n <= strlen(heads[h]); n++)
            expect_as_reference(bsc_str_make(heads[h], n));
}

/* Random heads from pieces of names, separators and values. */
static void test_random_heads(void **state)
{
    static const char *const pieces[] = {
        "x-y",  "X-Y", "x",   "x-yz", "content-length", "Content-Type", "retry-after",
        "x-ratelimit-remaining-requests", "X-RateLimit-remaining-requests", ":", "::", " ",
        "\t",   "\r",  "\n",  "\r\n", "v",   "12",  "a b", "HTTP/1.1 200 a", "\r\n ",
    };
    uint64_t x = 0x853c49e6748fea9bull;
    char head[512];

    (void)state;
    for (int round = 0; round < 50000; round++) {
        size_t len = 0, count;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        count = (size_t)(x % 24);
        for (size_t i = 0; i < count; i++) {
            const char *piece;
            size_t n;

            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            piece = pieces[(x >> 8) % (sizeof(pieces) / sizeof(pieces[0]))];
            n = strlen(piece);
            memcpy(head + len, piece, n);
            len += n;
        }
        expect_as_reference(bsc_str_make(head, len));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_heads),
        cmocka_unit_test(test_random_heads),
    };

    return cmocka_run_group_tests_name("head_find", tests, NULL, NULL);
}
