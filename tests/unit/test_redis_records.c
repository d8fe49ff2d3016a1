/* SPDX-License-Identifier: MIT */
/* test_redis_records.c -- what bascule reads back from Redis, by example: an idempotency
 * record as a gateway writes it (in flight, complete), the corruptions that must not read as
 * one, the transition messages, the peeked cooldowns and circuits, and the limits' Lua
 * replies (a grant within the ask, the wait cut to a minute). tests/fuzz/fuzz_redis_records.c
 * holds the same readers to their writers on any input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "health/hstate_redis_wire.h"
#include "store/redis_record.h"

#define HEAD_AFTER_STATE " 85303c8106c09267 86400000 " \
                         "7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n"
#define HEAD "c" HEAD_AFTER_STATE

static bool read_rec(const char *v, struct store_redis_idem *r)
{
    return store__redis_idem_read(v, strlen(v), r);
}

static void test_complete_record(void **state)
{
    const char *v = HEAD "200 1 2\n{}data: [DONE]\n\n";
    struct store_redis_idem r;
    char head[STORE_REDIS_HEAD_MAX];

    (void)state;
    assert_true(read_rec(v, &r));
    assert_int_equal(r.state, 'c');
    assert_true(r.claim == 0x85303c8106c09267ull);
    assert_true(r.ttl_ms == 86400000ull);
    assert_int_equal(r.fp.b[0], 0x7e);
    assert_int_equal(r.fp.b[31], 0x6c);
    assert_int_equal(r.status, 200);
    assert_true(r.stream);
    assert_true(bsc_str_eq(r.headers, BSC_STR("{}")));
    assert_true(bsc_str_eq(r.body, BSC_STR("data: [DONE]\n\n")));
    assert_int_equal(store__redis_idem_head(&r, head), strlen(HEAD));
    assert_memory_equal(head, HEAD, strlen(HEAD));
}

static void test_in_flight_record(void **state)
{
    struct store_redis_idem r;

    (void)state;
    assert_true(read_rec("i" HEAD_AFTER_STATE, &r));
    assert_int_equal(r.state, 'i');
    /* An in-flight record is the head alone. */
    assert_false(read_rec("i" HEAD_AFTER_STATE "200 0 0\n", &r));
}

static void test_corrupt_records(void **state)
{
    static const char *const bad[] = {
        "",
        "x 85303c8106c09267 86400000 7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n",
        "c 85303C8106C09267 86400000 7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n200 0 0\n",
        "c 0x5303c8106c09267 86400000 7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n200 0 0\n",
        "c 85303c8106c09267 086400000 7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n200 0 0\n",
        "c 85303c8106c09267 86400000 7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a96887\n200 0 0\n",
        "c 85303c8106c09267 86400000\n7e3ad553d2e2ebf8554d66a0f7443caad1ee461d1878cb5f544b0252a968876c\n200 0 0\n",
        HEAD "200 0 3\n{}",      /* headers longer than what follows */
        HEAD "99 0 0\n",        /* not a status */
        HEAD "200 2 0\n",       /* streamed is 0 or 1 */
        HEAD "-200 0 0\n",
        HEAD "200 0 0",         /* no newline after the answer's line */
        HEAD "200 0 18446744073709551616\n",
    };
    struct store_redis_idem r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (read_rec(bad[i], &r))
            fail_msg("read as a record: %s", bad[i]);
    }
}

static void test_messages(void **state)
{
    struct hr_msg m;
    char out[256];

    (void)state;
    assert_true(hr__msg_parse("a87acdf7e7659606 m 30000 0 1 sim\tupstream-m1", &m));
    assert_string_equal(m.inst, "a87acdf7e7659606");
    assert_int_equal(m.kind, 'm');
    assert_true(m.ms == 30000);
    assert_int_equal(m.reason, 0);
    assert_int_equal(m.idx, 1);
    assert_string_equal(m.id, "sim\tupstream-m1");
    hr__msg_format(&m, out, sizeof(out));
    assert_string_equal(out, "a87acdf7e7659606 m 30000 0 1 sim\tupstream-m1");
    assert_false(hr__msg_parse("a87acdf7e7659606 o", &m));
    assert_false(hr__msg_parse("", &m));
}

/* A reply as hiredis reads it from <resp>. */
static redisReply *reply_of(const char *resp)
{
    redisReader *rd = redisReaderCreate();
    void *r = NULL;

    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    return r;
}

static void ask(const char *resp, uint64_t want, bool ok, uint64_t grant, int64_t wait)
{
    redisReply *r = reply_of(resp);
    uint64_t g = 12345;
    int64_t w = -7;

    assert_int_equal(hr__ask_read(r, want, &g, &w), ok);
    if (ok) {
        assert_true(g == grant);
        assert_true(w == wait);
    }
    freeReplyObject(r);
}

static void test_ask_replies(void **state)
{
    (void)state;
    ask(":3\r\n", 5, true, 3, 0);                     /* a lease take */
    ask("*2\r\n:0\r\n:1500\r\n", 10, true, 0, 1500);  /* a bucket: empty, wait */
    ask("*2\r\n:10\r\n:0\r\n", 10, true, 10, 0);
    ask("*2\r\n:0\r\n:600000\r\n", 10, true, 0, HR_ASK_WAIT_MAX_MS); /* cut to a minute */
    ask(":6\r\n", 5, false, 0, 0);                    /* more than asked: no answer to it */
    ask(":-1\r\n", 5, false, 0, 0);
    ask("*2\r\n:1\r\n:-5\r\n", 5, false, 0, 0);
    ask("*2\r\n:1\r\n$1\r\n5\r\n", 5, false, 0, 0);
    ask("-ERR Error running script\r\n", 5, false, 0, 0);
    ask("$-1\r\n", 5, false, 0, 0);
}

static void test_peeks(void **state)
{
    redisReply *r;
    struct hr_cool c;
    uint64_t left;
    uint32_t opens = 7;

    (void)state;
    r = reply_of("*2\r\n$13\r\n0\tupstream-m1\r\n:29500\r\n");
    assert_true(hr__cool_read(r, &c));
    assert_int_equal(c.reason, 0);
    assert_string_equal(c.model, "upstream-m1");
    assert_true(c.left_ms == 29500);
    assert_true(hr__circuit_read(r, &left, &opens));
    assert_int_equal(opens, 0); /* a value with no count */
    freeReplyObject(r);
    r = reply_of("*2\r\n$6\r\nopen 3\r\n:4000\r\n"); /* the breaker's record */
    assert_true(hr__circuit_read(r, &left, &opens));
    assert_true(left == 4000);
    assert_int_equal(opens, 3);
    freeReplyObject(r);
    r = reply_of("*2\r\n$7\r\nopen 3x\r\n:4000\r\n"); /* a count that is not one */
    assert_true(hr__circuit_read(r, &left, &opens));
    assert_int_equal(opens, 0);
    freeReplyObject(r);
    r = reply_of("*2\r\n$1\r\n3\r\n:100\r\n");
    assert_true(hr__cool_read(r, &c));
    assert_int_equal(c.reason, 3);
    assert_null(c.model);
    freeReplyObject(r);
    r = reply_of("*2\r\n$3\r\nabc\r\n:100\r\n"); /* not a reason */
    assert_false(hr__cool_read(r, &c));
    freeReplyObject(r);
    r = reply_of("*2\r\n$0\r\n\r\n:-2\r\n"); /* no such key */
    assert_false(hr__cool_read(r, &c));
    assert_false(hr__circuit_read(r, &left, &opens));
    freeReplyObject(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_record), cmocka_unit_test(test_in_flight_record),
        cmocka_unit_test(test_corrupt_records), cmocka_unit_test(test_messages),
        cmocka_unit_test(test_ask_replies),     cmocka_unit_test(test_peeks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
