/* SPDX-License-Identifier: MIT */
/* test_req_state.c -- the request state machine's transition mask, pair by pair against a
 * table written out by hand (so a change to REQ_STATES that opens or closes a path fails
 * here until the table agrees), and the per-state times kept for the access log. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "router/req_state.h"

#define AD REQ_ST_ADMIT
#define P  REQ_ST_PICK
#define B  REQ_ST_BACKOFF
#define A  REQ_ST_ATTEMPT
#define RL REQ_ST_RELAY
#define RP REQ_ST_REPLY
#define RE REQ_ST_REPLY_ERROR
#define D  REQ_ST_DONE

/* allowed[from][to]: 1 = a path the lifecycle uses (docs/internals/request-lifecycle.md). */
static const int allowed[REQ_ST_COUNT][REQ_ST_COUNT] = {
    /*        AD P  B  A  RL RP RE D */
    [AD] =  { 0, 1, 0, 0, 0, 0, 1, 1},
    [P] =   { 0, 0, 1, 1, 0, 0, 1, 1},
    [B] =   { 0, 0, 0, 1, 0, 0, 1, 1},
    [A] =   { 1, 0, 0, 0, 1, 1, 1, 1},
    [RL] =  { 1, 0, 0, 0, 0, 0, 0, 1},
    [RP] =  { 0, 0, 0, 0, 0, 0, 0, 1},
    [RE] =  { 0, 0, 0, 0, 0, 0, 0, 1},
    [D] =   { 0, 0, 0, 0, 0, 0, 0, 0},
};

static void every_pair_matches_the_table(void **state)
{
    (void)state;
    for (int from = 0; from < REQ_ST_COUNT; from++)
        for (int to = 0; to < REQ_ST_COUNT; to++) {
            bool want = allowed[from][to] != 0;
            if (req_state_may_go(from, to) != want)
                fail_msg("%s -> %s: mask says %d, table %d", req_state_name(from),
                         req_state_name(to), !want, want);
        }
}

/* The commit point: once RELAY, nothing goes back to choosing a target, but for a broken
 * stream continued (on_stream_failure: continue), which is re-admitted first. */
static void relay_never_goes_back(void **state)
{
    (void)state;
    assert_false(req_state_may_go(RL, P));
    assert_true(req_state_may_go(RL, AD));
    assert_false(req_state_may_go(RL, A));
    assert_false(req_state_may_go(RL, RE));
    assert_true(req_state_may_go(RL, D));
}

/* Nothing reaches PICK without passing ADMIT: a failed attempt is re-admitted (the tool
 * ledger) before the next decision. */
static void pick_only_after_admit(void **state)
{
    (void)state;
    for (int s = 0; s < REQ_ST_COUNT; s++)
        assert_int_equal(req_state_may_go(s, P), s == AD);
    assert_string_equal(req_state_name(AD), "admit");
}

/* A client abort ends the request from any state but DONE. */
static void done_is_reachable_from_every_state(void **state)
{
    (void)state;
    for (int s = 0; s < REQ_ST_COUNT; s++)
        assert_int_equal(req_state_may_go(s, D), s != D);
}

static void out_of_range_is_refused(void **state)
{
    (void)state;
    assert_false(req_state_may_go(REQ_ST_COUNT, D));
    assert_false(req_state_may_go(P, REQ_ST_COUNT));
    assert_string_equal(req_state_name(REQ_ST_COUNT), "?");
    assert_string_equal(req_state_name(RE), "reply_error");
}

/* Time adds up per state, a state visited twice included; only entered states are marked. */
static void times_add_up_per_state(void **state)
{
    struct req_times t;

    (void)state;
    req_times_start(&t, P, 1000);
    req_times_move(&t, P, A, 1100);  /* pick 100 */
    req_times_move(&t, A, P, 5100);  /* attempt 4000 */
    req_times_move(&t, P, B, 5150);  /* pick +50 */
    req_times_move(&t, B, A, 7150);  /* backoff 2000 */
    req_times_move(&t, A, RP, 9150); /* attempt +2000 */
    req_times_move(&t, RP, D, 9150); /* same tick: reply 0 */
    assert_int_equal(t.spent_us[P], 150);
    assert_int_equal(t.spent_us[A], 6000);
    assert_int_equal(t.spent_us[B], 2000);
    assert_int_equal(t.spent_us[RP], 0);
    assert_int_equal(t.visited, (1u << P) | (1u << A) | (1u << B) | (1u << RP) | (1u << D));
    assert_false(t.visited & (1u << RL));
}

/* A clock read that went backwards (two sources) never makes a huge unsigned span. */
static void a_backward_clock_adds_nothing(void **state)
{
    struct req_times t;

    (void)state;
    req_times_start(&t, P, 5000);
    req_times_move(&t, P, A, 4000);
    assert_int_equal(t.spent_us[P], 0);
    assert_int_equal(t.entered_us, 4000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pair_matches_the_table),
        cmocka_unit_test(relay_never_goes_back),
        cmocka_unit_test(pick_only_after_admit),
        cmocka_unit_test(done_is_reachable_from_every_state),
        cmocka_unit_test(out_of_range_is_refused),
        cmocka_unit_test(times_add_up_per_state),
        cmocka_unit_test(a_backward_clock_adds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
