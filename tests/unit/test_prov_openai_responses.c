/* SPDX-License-Identifier: MIT */
/* test_prov_openai_responses.c -- providers/openai.c on a passed-through Responses stream:
 * the upstream response id it hands over (stream_answer_id) once response.completed or
 * response.incomplete names it, and none otherwise (router/resp_owner.c records whose it
 * is; docs/internals/responses.md §7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/provider.h"

extern const struct prov_ops prov_openai;

struct run {
    void *st;
    struct bsc_buf out;
    struct fail_info fail;
    char id[PROV_ANSWER_ID_MAX + 1];
};

static enum prov_stream_status event(struct run *r, const char *name, const char *data)
{
    return prov_openai.stream_event(r->st, bsc_str_cstr(name), bsc_str_cstr(data), &r->out,
                                    &r->fail);
}

static void run_init(struct run *r)
{
    struct prov_call call = {.op = PROV_OP_RESPONSES, .stream = true, .request_id = "req-1"};

    memset(r, 0, sizeof(*r));
    r->st = calloc(1, prov_openai.stream_size);
    assert_non_null(r->st);
    bsc_buf_init(&r->out, 1 << 20);
    prov_openai.stream_init(r->st, &call);
    assert_non_null(prov_openai.stream_answer_id);
}

static const char *answer_id(struct run *r)
{
    prov_openai.stream_answer_id(r->st, r->id, sizeof(r->id));
    return r->id;
}

static void run_free(struct run *r)
{
    prov_openai.stream_cleanup(r->st);
    free(r->st);
    bsc_buf_cleanup(&r->out);
}

#define CREATED                                                                                    \
    "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_abc\",\"status\":"                 \
    "\"in_progress\"}}"

static void test_completed_names_the_id(void **state)
{
    struct run r;

    (void)state;
    run_init(&r);
    assert_int_equal(event(&r, "response.created", CREATED), PROV_STREAM_MORE);
    assert_string_equal(answer_id(&r), ""); /* not before the answer is whole */
    assert_int_equal(event(&r, "response.completed",
                           "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_abc\","
                           "\"status\":\"completed\",\"usage\":{\"input_tokens\":3,"
                           "\"output_tokens\":2}}}"),
                     PROV_STREAM_DONE);
    assert_string_equal(answer_id(&r), "resp_abc");
    run_free(&r);

    run_init(&r);
    assert_int_equal(event(&r, "response.incomplete",
                           "{\"type\":\"response.incomplete\",\"response\":{\"id\":\"resp_cut\"}}"),
                     PROV_STREAM_DONE);
    assert_string_equal(answer_id(&r), "resp_cut");
    run_free(&r);
}

/* An id the gateway could not look up as it was written (escapes, too long, not a string)
 * is not handed over, and a failed stream hands over none. */
static void test_no_usable_id(void **state)
{
    static const char *const bad[] = {
        "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_\\u0061\"}}",
        "{\"type\":\"response.completed\",\"response\":{\"id\":7}}",
        "{\"type\":\"response.completed\",\"response\":{\"id\":\"\"}}",
        "{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}",
    };
    char long_id[PROV_ANSWER_ID_MAX + 2], data[PROV_ANSWER_ID_MAX + 128];
    struct run r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_init(&r);
        assert_int_equal(event(&r, "response.completed", bad[i]), PROV_STREAM_DONE);
        assert_string_equal(answer_id(&r), "");
        run_free(&r);
    }
    memset(long_id, 'x', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    snprintf(data, sizeof(data), "{\"type\":\"response.completed\",\"response\":{\"id\":\"%s\"}}",
             long_id);
    run_init(&r);
    assert_int_equal(event(&r, "response.completed", data), PROV_STREAM_DONE);
    assert_string_equal(answer_id(&r), "");
    run_free(&r);

    run_init(&r);
    assert_int_equal(event(&r, "response.created", CREATED), PROV_STREAM_MORE);
    assert_int_equal(event(&r, "response.failed",
                           "{\"type\":\"response.failed\",\"response\":{\"id\":\"resp_abc\"}}"),
                     PROV_STREAM_ERROR);
    assert_string_equal(answer_id(&r), "");
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completed_names_the_id),
        cmocka_unit_test(test_no_usable_id),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
