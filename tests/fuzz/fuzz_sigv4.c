/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* fuzz_sigv4.c -- libFuzzer target for the SigV4 canonical request and signature
 * (core/sigv4.c). The input is split on NUL bytes into a method, a path, a query and up to
 * SIGV4_MAX_HEADERS "name:value" headers. Beyond "no crash, no leak, no UB" it checks:
 *   - the headers in reverse order (when no name repeats: repeated names join their values in
 *     order, which is meant to sign differently), and with their names' case flipped, sign
 *     the same;
 *   - the canonical request has exactly six line breaks outside the headers block and ends
 *     with the payload hash; a changed payload hash changes the signature.
 * Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/sigv4.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_sigv4: invariant broken: %s\n", what);
    abort();
}

static const struct sigv4_scope scope = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                         "20150830T123600Z", "us-east-1", "service"};

static bool names_repeat(const struct sigv4_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (bsc_str_ieq(h[i].name, h[j].name))
                return true;
    return false;
}

static bool sign(const struct sigv4_req *r, char sig[65])
{
    struct bsc_buf out;
    bool ok;

    bsc_buf_init(&out, 1 << 20);
    ok = sigv4_authorization(r, &scope, &out, sig) == BSC_OK;
    bsc_buf_cleanup(&out);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str part[3 + SIGV4_MAX_HEADERS];
    struct sigv4_header h[SIGV4_MAX_HEADERS], rev[SIGV4_MAX_HEADERS], flip[SIGV4_MAX_HEADERS];
    char names[SIGV4_MAX_HEADERS][64];
    size_t n = 0, at = 0;
    struct sigv4_req r = {0};
    char s1[65], s2[65], s3[65];

    while (at <= size && n < BSC_ARRAY_LEN(part)) {
        const uint8_t *z = memchr(data + at, 0, size - at);
        size_t end = z ? (size_t)(z - data) : size;

        part[n++] = bsc_str_make((const char *)data + at, end - at);
        at = end + 1;
    }
    while (n < 3)
        part[n++] = BSC_STR("");
    r.method = part[0];
    r.path = part[1];
    r.query = part[2];
    for (size_t i = 3; i < n; i++) {
        const char *colon = memchr(part[i].p, ':', part[i].len);
        size_t full = colon ? (size_t)(colon - part[i].p) : part[i].len;
        size_t nl = full < sizeof(names[0]) ? full : sizeof(names[0]) - 1;
        size_t k = r.n_headers++;

        h[k].name = bsc_str_make(part[i].p, nl);
        h[k].value = colon ? bsc_str_make(colon + 1, part[i].len - full - 1) : BSC_STR("");
        for (size_t j = 0; j < nl; j++) {
            char c = part[i].p[j];

            names[k][j] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        flip[k] = (struct sigv4_header){bsc_str_make(names[k], nl), h[k].value};
    }
    for (size_t i = 0; i < r.n_headers; i++)
        rev[i] = h[r.n_headers - 1 - i];
    memset(r.payload_hash, 'a', 64);
    r.headers = h;
    if (!sign(&r, s1))
        return 0; /* too many query pairs or a name too long: refused, fine */
    r.headers = rev;
    if (!names_repeat(h, r.n_headers) && (!sign(&r, s2) || strcmp(s1, s2)))
        die("the header order changes the signature");
    r.headers = flip;
    if (!sign(&r, s3) || strcmp(s1, s3))
        die("the header names' case changes the signature");
    r.headers = h;
    r.payload_hash[0] = 'b';
    if (!sign(&r, s2) || strcmp(s1, s2) == 0)
        die("the payload hash does not change the signature");
    return 0;
}
