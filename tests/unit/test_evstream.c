/* SPDX-License-Identifier: MIT */
/* test_evstream.c -- the AWS event-stream framing (core/evstream.c): CRC-32 against its check
 * value; a stream of messages decodes the same at every split of its bytes into two feeds
 * and when fed one byte at a time; a flipped bit anywhere in a message (prelude, headers,
 * payload or CRC) is refused; lengths out of range, a header running past its section and a
 * message cut short are caught; typed headers other than strings are skipped; a callback's
 * stop is sticky. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/evstream.h"

/* What the decoder delivered, as one text: "type/event:payload;" per message. */
struct seen {
    char text[4096];
    size_t len;
    int stop_after; /* stop (return 7) after this many messages; 0 = never */
    int n;
};

static int on_msg(void *ud, const struct evs_msg *m)
{
    struct seen *s = ud;
    int w = snprintf(s->text + s->len, sizeof(s->text) - s->len, "%.*s/%.*s%.*s:%.*s;",
                     (int)m->message_type.len, m->message_type.p, (int)m->event_type.len,
                     m->event_type.p, (int)m->exception_type.len, m->exception_type.p,
                     (int)m->payload.len, m->payload.p);

    s->len += (size_t)w;
    s->n++;
    return s->stop_after && s->n == s->stop_after ? 7 : 0;
}

static void sample(struct bsc_buf *b)
{
    const struct evs_header h1[] = {{":event-type", BSC_STR("messageStart")},
                                    {":content-type", BSC_STR("application/json")},
                                    {":message-type", BSC_STR("event")}};
    const struct evs_header h2[] = {{":event-type", BSC_STR("contentBlockDelta")},
                                    {":message-type", BSC_STR("event")}};
    const struct evs_header h3[] = {{":exception-type", BSC_STR("throttlingException")},
                                    {":message-type", BSC_STR("exception")}};

    bsc_buf_init(b, 1 << 16);
    assert_int_equal(evs_encode(b, h1, 3, BSC_STR("{\"role\":\"assistant\"}")), BSC_OK);
    assert_int_equal(evs_encode(b, h2, 2, BSC_STR("{\"delta\":{\"text\":\"h\xc3\xa9\"}}")), BSC_OK);
    assert_int_equal(evs_encode(b, h2, 2, BSC_STR("")), BSC_OK);
    assert_int_equal(evs_encode(b, h3, 2, BSC_STR("{\"message\":\"slow down\"}")), BSC_OK);
}

static const char want[] = "event/messageStart:{\"role\":\"assistant\"};"
                           "event/contentBlockDelta:{\"delta\":{\"text\":\"h\xc3\xa9\"}};"
                           "event/contentBlockDelta:;"
                           "exception/throttlingException:{\"message\":\"slow down\"};";

static int feed_split(const struct bsc_buf *b, size_t cut, struct seen *s)
{
    struct evs_decoder d;
    int rc;

    memset(s, 0, sizeof(*s));
    evs_decoder_init(&d, 1 << 16, on_msg, s);
    rc = evs_feed(&d, b->p, cut);
    if (!rc)
        rc = evs_feed(&d, b->p + cut, b->len - cut);
    assert_false(rc == 0 && evs_pending(&d));
    evs_decoder_cleanup(&d);
    return rc;
}

static void test_crc32_check_value(void **state)
{
    (void)state;
    assert_int_equal(evs_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(evs_crc32(evs_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
}

static void test_every_split(void **state)
{
    struct bsc_buf b;
    struct seen s;

    (void)state;
    sample(&b);
    for (size_t cut = 0; cut <= b.len; cut++) {
        assert_int_equal(feed_split(&b, cut, &s), 0);
        assert_string_equal(s.text, want);
    }
    bsc_buf_cleanup(&b);
}

static void test_byte_at_a_time(void **state)
{
    struct bsc_buf b;
    struct seen s = {0};
    struct evs_decoder d;

    (void)state;
    sample(&b);
    evs_decoder_init(&d, 1 << 16, on_msg, &s);
    for (size_t i = 0; i < b.len; i++)
        assert_int_equal(evs_feed(&d, b.p + i, 1), 0);
    assert_false(evs_pending(&d));
    assert_string_equal(s.text, want);
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&b);
}

/* Every bit flipped in the first message is refused before its callback (no message
 * delivered from corrupt bytes). */
static void test_any_flip_refused(void **state)
{
    struct bsc_buf b;
    struct seen s;
    size_t first;

    (void)state;
    sample(&b);
    first = (size_t)((uint8_t)b.p[2] << 8 | (uint8_t)b.p[3]);
    for (size_t i = 0; i < first; i++) {
        for (int bit = 0; bit < 8; bit++) {
            int rc;

            b.p[i] ^= (char)(1 << bit);
            rc = feed_split(&b, i, &s);
            b.p[i] ^= (char)(1 << bit);
            /* A flip in the length bytes can also make the message look incomplete: never a
             * delivery of the corrupt message either way. */
            assert_true(rc == -1 || (rc == 0 && s.n == 0));
            assert_int_equal(s.n, 0);
        }
    }
    bsc_buf_cleanup(&b);
}

static void test_truncated_pending(void **state)
{
    struct bsc_buf b;
    struct seen s = {0};
    struct evs_decoder d;

    (void)state;
    sample(&b);
    evs_decoder_init(&d, 1 << 16, on_msg, &s);
    assert_int_equal(evs_feed(&d, b.p, b.len - 1), 0);
    assert_true(evs_pending(&d));
    assert_int_equal(s.n, 3);
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&b);
}

static void test_length_limits(void **state)
{
    struct bsc_buf b;
    struct seen s = {0};
    struct evs_decoder d;

    (void)state;
    sample(&b);
    /* a decoder whose limit is below the first message's length refuses it */
    evs_decoder_init(&d, 40, on_msg, &s);
    assert_int_equal(evs_feed(&d, b.p, b.len), -1);
    assert_non_null(strstr(d.why, "length"));
    assert_int_equal(evs_feed(&d, b.p, b.len), -1); /* sticky */
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&b);
}

/* A header section whose last header claims more bytes than the section has. */
static void test_header_overrun(void **state)
{
    struct bsc_buf b;
    struct seen s = {0};
    struct evs_decoder d;
    uint32_t crc;
    uint8_t *p;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(
        evs_encode(&b, (const struct evs_header[]){{":a", BSC_STR("xyz")}}, 1, BSC_STR("p")),
        BSC_OK);
    p = (uint8_t *)b.p;
    p[12 + 1 + 2 + 1 + 1] = 9; /* the string's length: 3 -> 9, past the section */
    crc = evs_crc32(0, p, b.len - 4);
    p[b.len - 4] = (uint8_t)(crc >> 24), p[b.len - 3] = (uint8_t)(crc >> 16);
    p[b.len - 2] = (uint8_t)(crc >> 8), p[b.len - 1] = (uint8_t)crc;
    evs_decoder_init(&d, 4096, on_msg, &s);
    assert_int_equal(evs_feed(&d, b.p, b.len), -1);
    assert_non_null(strstr(d.why, "headers"));
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&b);
}

/* Non-string header types (AWS sends none on these paths, but may) are skipped whole. */
static void test_typed_headers_skipped(void **state)
{
    /* one int32 header "n"=5 and one string ":event-type"="x", payload "P" */
    uint8_t m[64];
    size_t n = 12, total;
    uint32_t crc;
    struct seen s = {0};
    struct evs_decoder d;
    const uint8_t hdrs[] = {1,   'n', 4,   0,   0,   0,   5,   11, ':', 'e', 'v', 'e',
                            'n', 't', '-', 't', 'y', 'p', 'e', 7,  0,   1,   'x'};

    (void)state;
    memcpy(m + n, hdrs, sizeof(hdrs));
    n += sizeof(hdrs);
    m[n++] = 'P';
    total = n + 4;
    m[0] = 0, m[1] = 0, m[2] = 0, m[3] = (uint8_t)total;
    m[4] = 0, m[5] = 0, m[6] = 0, m[7] = sizeof(hdrs);
    crc = evs_crc32(0, m, 8);
    m[8] = (uint8_t)(crc >> 24), m[9] = (uint8_t)(crc >> 16), m[10] = (uint8_t)(crc >> 8);
    m[11] = (uint8_t)crc;
    crc = evs_crc32(0, m, n);
    m[n] = (uint8_t)(crc >> 24), m[n + 1] = (uint8_t)(crc >> 16), m[n + 2] = (uint8_t)(crc >> 8);
    m[n + 3] = (uint8_t)crc;
    evs_decoder_init(&d, 4096, on_msg, &s);
    assert_int_equal(evs_feed(&d, m, total), 0);
    assert_string_equal(s.text, "/x:P;");
    evs_decoder_cleanup(&d);
}

static void test_stop_is_sticky(void **state)
{
    struct bsc_buf b;
    struct seen s = {.stop_after = 2};
    struct evs_decoder d;

    (void)state;
    sample(&b);
    evs_decoder_init(&d, 1 << 16, on_msg, &s);
    assert_int_equal(evs_feed(&d, b.p, b.len), 7);
    assert_int_equal(s.n, 2);
    assert_int_equal(evs_feed(&d, b.p, b.len), 7);
    assert_int_equal(s.n, 2);
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32_check_value), cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_byte_at_a_time),    cmocka_unit_test(test_any_flip_refused),
        cmocka_unit_test(test_truncated_pending), cmocka_unit_test(test_length_limits),
        cmocka_unit_test(test_header_overrun),    cmocka_unit_test(test_typed_headers_skipped),
        cmocka_unit_test(test_stop_is_sticky),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
