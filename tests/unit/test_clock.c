/* SPDX-License-Identifier: MIT */
/* test_clock.c -- core/clock.c: the system clocks, and a thread following its loop's clock
 * (bsc_clock_follow): milliseconds are the loop's, the wall clock is read once per loop
 * millisecond, microseconds stay the system's, and other threads are not affected. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"

static uint64_t fake_ms;

static uint64_t read_fake(void *arg)
{
    return *(const uint64_t *)arg;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};

    nanosleep(&ts, NULL);
}

static void test_system_clocks_move(void **state)
{
    uint64_t ms = bsc_now_ms(), us = bsc_now_us(), wall = bsc_wall_ms();

    (void)state;
    sleep_ms(3);
    assert_true(bsc_now_ms() >= ms + 2);
    assert_true(bsc_now_us() >= us + 2000);
    assert_true(bsc_wall_ms() >= wall + 2);
    assert_true(wall > 1700000000000ull); /* after 2023: milliseconds since the epoch */
}

static void *other_thread(void *arg)
{
    *(uint64_t *)arg = bsc_now_ms();
    return NULL;
}

static void test_following_a_loop(void **state)
{
    uint64_t wall, us, other = 0;
    pthread_t th;

    (void)state;
    fake_ms = 12345;
    bsc_clock_follow(read_fake, &fake_ms);
    assert_int_equal(bsc_now_ms(), 12345);
    wall = bsc_wall_ms();
    us = bsc_now_us();
    sleep_ms(3);
    /* The loop's millisecond has not moved: neither has the wall clock read in it. */
    assert_int_equal(bsc_now_ms(), 12345);
    assert_int_equal(bsc_wall_ms(), wall);
    /* Microseconds are always the system's. */
    assert_true(bsc_now_us() >= us + 2000);
    /* The next loop millisecond reads the wall clock again. */
    fake_ms++;
    assert_int_equal(bsc_now_ms(), 12346);
    assert_true(bsc_wall_ms() >= wall + 2);
    /* Another thread reads the system's clock. */
    assert_int_equal(pthread_create(&th, NULL, other_thread, &other), 0);
    pthread_join(th, NULL);
    assert_true(other > 0 && other != 12346);
    assert_true(other + 1000 > bsc_now_us() / 1000 - 1000);
    /* Unfollowed, the system's again. */
    bsc_clock_follow(NULL, NULL);
    assert_true(bsc_now_ms() != 12346);
    assert_true(bsc_now_ms() + 5 >= bsc_now_us() / 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_clocks_move),
        cmocka_unit_test(test_following_a_loop),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
