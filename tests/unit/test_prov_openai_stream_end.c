/* SPDX-License-Identifier: MIT */
/* test_prov_openai_stream_end.c -- an OpenAI-dialect stream complete by its own signals: the
 * last choice's finish_reason, then the body's end (the router asks only at a clean end), is
 * a whole answer without data: [DONE] -- the client still gets its usage and a [DONE]. A body
 * that ends before any finish_reason stays an interruption; a usage chunk after the finish
 * does not undo it, a later content chunk does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prov_fixture.h"
#include "providers/provider.h"
#include "stream/sse_parse.h"

extern const struct prov_ops prov_openai;

static char base_url[] = "https://api.openai.com/v1";
static char model[] = "gpt-4o";
static char pid[] = "oa";
static char tid[] = "gpt-4o@oa";

static const struct fx_names names = {CFG_PROV_OPENAI, base_url, model, pid, tid, "sk-1"};

static const char chat_req[] =
    "{\"model\":\"alias\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";

struct run {
    void *st;
    struct bsc_buf out;
    struct fail_info fail;
    enum prov_stream_status last;
};

static int on_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct run *r = ud;

    if (r->last == PROV_STREAM_MORE)
        r->last = prov_openai.stream_event(r->st, name, data, &r->out, &r->fail);
    return r->last != PROV_STREAM_MORE;
}

static const struct sse_callbacks run_cb = {on_event, NULL, NULL};

/* Feeds <sse> to the adapter, then (still running) asks it at the body's end. */
static void run_stream(const char *sse, bool include_usage, struct run *r)
{
    struct fx f;
    struct sse_parser p;

    fx_setup(&f, &names, chat_req, true);
    f.call.include_usage = include_usage;
    memset(r, 0, sizeof(*r));
    r->st = calloc(1, prov_openai.stream_size);
    assert_non_null(r->st);
    bsc_buf_init(&r->out, BIG);
    prov_openai.stream_init(r->st, &f.call);
    sse_parser_init(&p, 65536, &run_cb, r);
    assert_true(sse_parser_feed(&p, sse, strlen(sse)) >= 0);
    assert_int_equal(sse_parser_finish(&p, NULL), BSC_OK);
    if (r->last == PROV_STREAM_MORE)
        r->last = prov_openai.stream_end(r->st, &r->out, &r->fail);
    sse_parser_cleanup(&p);
    fx_cleanup(&f);
    prov_openai.stream_cleanup(r->st);
    free(r->st);
}

#define HEAD         "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
#define CHOICE(body) "data: " HEAD "\"choices\":[{\"index\":0," body "}]}\n\n"
#define C_ROLE       CHOICE("\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null")
#define C_TEXT       CHOICE("\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null")
#define C_FIN        CHOICE("\"delta\":{},\"finish_reason\":\"stop\"")
#define C_USAGE                                                                                    \
    "data: " HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,"         \
    "\"total_tokens\":12}}\n\n"
#define DONE "data: [DONE]\n\n"

static void finished_without_done_is_whole(void **state)
{
    struct run r;

    (void)state;
    run_stream(C_ROLE C_TEXT C_FIN C_USAGE, true, &r);
    assert_int_equal(r.last, PROV_STREAM_DONE);
    assert_string_equal(r.out.p, C_ROLE C_TEXT C_FIN C_USAGE DONE); /* usage, then [DONE] */
    bsc_buf_cleanup(&r.out);
    run_stream(C_ROLE C_TEXT C_FIN, false, &r); /* no usage asked: the finish is the last */
    assert_int_equal(r.last, PROV_STREAM_DONE);
    assert_string_equal(r.out.p, C_ROLE C_TEXT C_FIN DONE);
    bsc_buf_cleanup(&r.out);
}

static void no_finish_is_an_interruption(void **state)
{
    struct run r;

    (void)state;
    run_stream(C_ROLE C_TEXT, true, &r);
    assert_int_equal(r.last, PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_PARTIAL_OUTPUT);
    assert_null(strstr(r.out.p ? r.out.p : "", "[DONE]"));
    bsc_buf_cleanup(&r.out);
    /* A finish, then more text: the last choice has not finished. */
    run_stream(C_ROLE C_FIN C_TEXT, true, &r);
    assert_int_equal(r.last, PROV_STREAM_ERROR);
    bsc_buf_cleanup(&r.out);
}

static void with_done_unchanged(void **state)
{
    struct run r;

    (void)state;
    run_stream(C_ROLE C_TEXT C_FIN C_USAGE DONE, true, &r);
    assert_int_equal(r.last, PROV_STREAM_DONE);
    assert_string_equal(r.out.p, C_ROLE C_TEXT C_FIN C_USAGE DONE);
    bsc_buf_cleanup(&r.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finished_without_done_is_whole),
        cmocka_unit_test(no_finish_is_an_interruption),
        cmocka_unit_test(with_done_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
