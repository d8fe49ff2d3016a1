/* SPDX-License-Identifier: MIT */
/* test_replay_match.c -- the replay matcher of a continued stream: the new answer, split at
 * every byte (inside each multi-byte character too), passes on exactly the text past what
 * was sent; one that differs anywhere, or ends before it covers what was sent, never passes
 * anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/str.h"
#include "stream/replay_match.h"

/* Sent: up to and including the 2-byte, 3-byte and 4-byte characters; the answer goes on. */
static const char sent_text[] = "Hello h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x9a\x80";
static const char whole[] = "Hello h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x9a\x80 tokens";

/* Feeds <text> as two pieces split at <at>; appends what passes to <out>. */
static enum replay_state feed_split(struct bsc_str sent, const char *text, size_t len, size_t at,
                                    char *out, size_t *out_len)
{
    struct replay_match m;
    struct bsc_str pieces[2] = {bsc_str_make(text, at), bsc_str_make(text + at, len - at)};
    enum replay_state st = REPLAY_HOLDING;

    *out_len = 0;
    replay_match_init(&m, sent);
    for (int i = 0; i < 2; i++) {
        size_t from;
        st = replay_match_feed(&m, pieces[i], &from);
        if (st == REPLAY_PASSING) {
            memcpy(out + *out_len, pieces[i].p + from, pieces[i].len - from);
            *out_len += pieces[i].len - from;
        }
    }
    return st;
}

static void test_every_split_passes_exactly_the_rest(void **state)
{
    struct bsc_str sent = bsc_str_make(sent_text, sizeof(sent_text) - 1);
    char out[128];
    size_t n;

    (void)state;
    for (size_t at = 0; at <= sizeof(whole) - 1; at++) {
        assert_int_equal(feed_split(sent, whole, sizeof(whole) - 1, at, out, &n), REPLAY_PASSING);
        assert_int_equal(n, strlen(" tokens"));
        assert_memory_equal(out, " tokens", n);
    }
}

static void test_every_split_of_a_differing_byte_diverges(void **state)
{
    struct bsc_str sent = bsc_str_make(sent_text, sizeof(sent_text) - 1);
    char other[sizeof(whole)], out[128];
    size_t n;

    (void)state;
    /* Change each byte of the covered part in turn (inside multi-byte characters too), at
     * every split: nothing passes. */
    for (size_t k = 0; k < sizeof(sent_text) - 1; k++) {
        memcpy(other, whole, sizeof(whole));
        other[k] ^= 0x01;
        for (size_t at = 0; at <= sizeof(whole) - 1; at++) {
            assert_int_equal(feed_split(sent, other, sizeof(whole) - 1, at, out, &n),
                             REPLAY_DIVERGED);
            assert_int_equal(n, 0);
        }
    }
}

static void test_a_replay_shorter_than_what_was_sent_never_passes(void **state)
{
    struct bsc_str sent = bsc_str_make(sent_text, sizeof(sent_text) - 1);
    char out[128];
    size_t n;

    (void)state;
    for (size_t len = 0; len < sizeof(sent_text) - 1; len++)
        for (size_t at = 0; at <= len; at++) {
            assert_int_equal(feed_split(sent, sent_text, len, at, out, &n), REPLAY_HOLDING);
            assert_int_equal(n, 0);
        }
}

static void test_exact_cover_then_new_pieces_pass_whole(void **state)
{
    struct replay_match m;
    size_t from = 99;

    (void)state;
    replay_match_init(&m, BSC_STR("ab"));
    assert_int_equal(replay_match_feed(&m, BSC_STR("ab"), &from), REPLAY_PASSING);
    assert_int_equal(from, 2);
    assert_int_equal(replay_match_feed(&m, BSC_STR("cd"), &from), REPLAY_PASSING);
    assert_int_equal(from, 0);
    replay_match_init(&m, BSC_STR_NULL); /* nothing sent: covered at once */
    assert_int_equal(replay_match_feed(&m, BSC_STR("x"), &from), REPLAY_PASSING);
    assert_int_equal(from, 0);
    replay_match_init(&m, BSC_STR("ab"));
    assert_int_equal(replay_match_feed(&m, BSC_STR("x"), &from), REPLAY_DIVERGED);
    assert_int_equal(replay_match_feed(&m, BSC_STR("ab"), &from), REPLAY_DIVERGED); /* final */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_split_passes_exactly_the_rest),
        cmocka_unit_test(test_every_split_of_a_differing_byte_diverges),
        cmocka_unit_test(test_a_replay_shorter_than_what_was_sent_never_passes),
        cmocka_unit_test(test_exact_cover_then_new_pieces_pass_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
