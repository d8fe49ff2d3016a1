/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/providers/openai_errors.c src/providers/retry_after.c */
/* fuzz-sources: src/fail/taxonomy.c src/stream/utf8.c */
/* fuzz_openai_errors.c -- libFuzzer target for the OpenAI-dialect error classifier and the
 * retry-hint parsers (providers/openai_errors.h, providers/retry_after.h). Input layout:
 *   byte 0     the HTTP status: < 160 picks a common one from a table, else any 0..999
 *   byte 1     the base_url (dialect profile) and the Content-Type
 *   the rest   body NUL retry-after NUL retry-after-ms (missing parts are empty)
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - every fail_info: kind in range, retry_after_ms -1 or in [0, 24 h], code/type/message
 *     NUL-terminated inside their arrays, valid UTF-8 without control characters;
 *   - classify: status copied; a 2xx that is not an error says nothing else; a non-2xx is
 *     never FAIL_NONE; a valid header hint is what prov_parse_retry_after() says; the same
 *     input classifies the same way twice;
 *   - classify_event: false leaves "no failure", true is a failure with status 200;
 *   - retry-after: in range; plain digit strings agree with a reference computed here;
 *     durations and message hints in range. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/compat.h"
#include "core/str.h"
#include "providers/openai_errors.h"
#include "providers/retry_after.h"
#include "fail/taxonomy.h"
#include "stream/utf8.h"

/* Tue, 14 Nov 2023 22:13:20 GMT: a fixed wall clock. */
#define NOW_MS 1700000000000ull

static void die(const char *what)
{
    fprintf(stderr, "fuzz_openai_errors: invariant broken: %s\n", what);
    abort();
}

static const int statuses[] = {200, 201, 204, 400, 401, 402, 403, 404, 408, 409, 413, 422,
                               429, 498, 500, 502, 503, 504, 520, 529, 0,   -1,  99,  302};

static const char *const base_urls[] = {
    "",
    "https://api.openai.com/v1",
    "https://api.deepseek.com/v1",
    "https://api.mistral.ai/v1",
    "https://api.groq.com/openai/v1",
    "https://openrouter.ai/api/v1",
    "http://127.0.0.1:8000/v1",
    "https://eu.api.deepseek.com",
};

static const char *const content_types[] = {"application/json", "", "text/html; charset=utf-8",
                                            "text/plain"};

static void check_text(const char *field, size_t cap, const char *what)
{
    const char *nul = memchr(field, '\0', cap);

    if (!nul)
        die(what);
    if (!bsc_utf8_valid(field, (size_t)(nul - field)))
        die("a fail_info text is not valid UTF-8");
    for (const char *p = field; p < nul; p++) {
        if ((unsigned char)*p < 0x20)
            die("a fail_info text holds a control character");
    }
}

static void check_info(const struct fail_info *f)
{
    if ((unsigned)f->kind >= FAIL_KIND_COUNT)
        die("kind out of range");
    if (f->retry_after_ms != -1 &&
        (f->retry_after_ms < 0 || f->retry_after_ms > PROV_RETRY_AFTER_CAP_MS))
        die("retry_after_ms out of range");
    check_text(f->code, sizeof(f->code), "code not NUL-terminated");
    check_text(f->type, sizeof(f->type), "type not NUL-terminated");
    check_text(f->message, sizeof(f->message), "message not NUL-terminated");
}

static bool same_info(const struct fail_info *a, const struct fail_info *b)
{
    return a->kind == b->kind && a->status == b->status &&
           a->retry_after_ms == b->retry_after_ms && strcmp(a->code, b->code) == 0 &&
           strcmp(a->type, b->type) == 0 && strcmp(a->message, b->message) == 0;
}

static bool is_empty_info(const struct fail_info *f)
{
    return f->kind == FAIL_NONE && f->retry_after_ms == -1 && !f->code[0] && !f->type[0] &&
           !f->message[0];
}

/* The next NUL-separated part of [*p, end); advances past the separator. */
static struct bsc_str next_part(const char **p, const char *end)
{
    const char *start = *p, *nul;

    if (start >= end)
        return bsc_str_make("", 0);
    nul = memchr(start, '\0', (size_t)(end - start));
    if (!nul) {
        *p = end;
        return bsc_str_make(start, (size_t)(end - start));
    }
    *p = nul + 1;
    return bsc_str_make(start, (size_t)(nul - start));
}

/* Reference: a string of 1..12 ASCII digits, blanks around allowed, times <unit_ms>. */
static int64_t ref_digits(struct bsc_str s, int64_t unit_ms)
{
    int64_t v = 0;

    s = bsc_str_trim(s);
    if (s.len == 0 || s.len > 12)
        return -2; /* no opinion */
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return -2;
        v = v * 10 + (s.p[i] - '0');
    }
    v *= unit_ms;
    return v > PROV_RETRY_AFTER_CAP_MS ? PROV_RETRY_AFTER_CAP_MS : v;
}

/* The response's retry headers, handed to the classifier through its header accessor. */
struct retry_headers {
    struct bsc_str retry_after, retry_after_ms;
};

static struct bsc_str get_header(const void *ctx, const char *name)
{
    const struct retry_headers *h = ctx;

    if (strcasecmp(name, "retry-after") == 0)
        return h->retry_after;
    if (strcasecmp(name, "retry-after-ms") == 0)
        return h->retry_after_ms;
    return bsc_str_make("", 0);
}

static void check_hint(int64_t ms, const char *what)
{
    if (ms != -1 && (ms < 0 || ms > PROV_RETRY_AFTER_CAP_MS))
        die(what);
}

static void check_retry_after(struct bsc_str ra, struct bsc_str ra_ms)
{
    int64_t got = prov_parse_retry_after(ra, ra_ms, NOW_MS);
    int64_t only_ms = prov_parse_retry_after(bsc_str_make("", 0), ra_ms, NOW_MS);
    int64_t only_ra = prov_parse_retry_after(ra, bsc_str_make("", 0), NOW_MS);
    int64_t ref, date_ms;

    check_hint(got, "retry-after out of range");
    if (only_ms >= 0 && got != only_ms)
        die("a valid retry-after-ms did not win");
    if (only_ms < 0 && got != only_ra)
        die("an invalid retry-after-ms changed the result");
    ref = ref_digits(ra_ms, 1);
    if (ref != -2 && only_ms != ref)
        die("retry-after-ms digits disagree with the reference");
    ref = ref_digits(ra, 1000);
    if (ref != -2 && only_ra != ref)
        die("retry-after digits disagree with the reference");
    if (prov_parse_http_date(ra, &date_ms)) {
        int64_t want = date_ms <= (int64_t)NOW_MS ? 0 : date_ms - (int64_t)NOW_MS;

        if (want > PROV_RETRY_AFTER_CAP_MS)
            want = PROV_RETRY_AFTER_CAP_MS;
        if (only_ra != want)
            die("an HTTP-date Retry-After gave the wrong delay");
        if (date_ms % 1000 != 0)
            die("an HTTP-date has sub-second precision");
    }
    check_hint(prov_parse_duration(ra), "duration out of range");
    check_hint(prov_parse_retry_hint_text(ra), "message hint out of range");
}

static void check_classify(const struct prov_err_input *in)
{
    struct fail_info a, b;
    const struct prov_openai_profile *profile = prov_openai_profile_for_url(in->base_url);
    const struct retry_headers *h = in->header_ctx;
    int64_t hint = prov_parse_retry_after(h->retry_after, h->retry_after_ms, in->now_wall_ms);

    if (!profile)
        die("no profile for a base_url");
    memset(&a, 0xa5, sizeof(a)); /* "always fully written" */
    prov_openai_classify(in, &a);
    check_info(&a);
    if (a.status != in->status)
        die("classify did not copy the status");
    if (in->status >= 200 && in->status <= 299) {
        if (a.kind == FAIL_NONE && !is_empty_info(&a))
            die("a normal 2xx carries failure details");
    } else if (a.kind == FAIL_NONE) {
        die("a non-2xx status classified as no failure");
    }
    if (a.kind != FAIL_NONE && hint >= 0 && a.retry_after_ms != hint)
        die("the header hint was not used");
    memset(&b, 0x5a, sizeof(b));
    prov_openai_classify(in, &b);
    if (!same_info(&a, &b))
        die("classify is not deterministic");

    prov_openai_classify_profile(in, profile, &b);
    check_info(&b);
    if (b.status != in->status)
        die("classify_profile did not copy the status");
    if ((a.kind == FAIL_NONE) != (b.kind == FAIL_NONE))
        die("a profile changed whether the answer failed");
}

static void check_event(struct bsc_str data, const struct prov_openai_profile *profile)
{
    struct fail_info f;
    bool hit;

    memset(&f, 0xa5, sizeof(f));
    hit = profile ? prov_openai_classify_event_profile(data, profile, &f)
                  : prov_openai_classify_event(data, &f);
    check_info(&f);
    if (!hit && (!is_empty_info(&f) || f.status != 0))
        die("classify_event said no error but left details");
    if (hit && (f.kind == FAIL_NONE || f.status != 200))
        die("classify_event said error without a kind or status 200");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct retry_headers h;
    struct prov_err_input in = {.now_wall_ms = NOW_MS, .header = get_header, .header_ctx = &h};
    const char *p, *end;

    if (size < 2)
        return 0;
    in.status = data[0] < 160 ? statuses[data[0] % BSC_ARRAY_LEN(statuses)]
                              : (int)((data[0] * 7u + data[1]) % 1000u);
    in.base_url = bsc_str_cstr(base_urls[data[1] % BSC_ARRAY_LEN(base_urls)]);
    in.content_type = bsc_str_cstr(content_types[(data[1] >> 4) % BSC_ARRAY_LEN(content_types)]);
    p = (const char *)data + 2;
    end = (const char *)data + size;
    in.body = next_part(&p, end);
    h.retry_after = next_part(&p, end);
    h.retry_after_ms = next_part(&p, end);

    check_classify(&in);
    check_event(in.body, NULL);
    check_event(in.body, prov_openai_profile_for_url(in.base_url));
    check_retry_after(h.retry_after, h.retry_after_ms);
    check_hint(prov_parse_retry_hint_text(in.body), "body hint out of range");
    return 0;
}
