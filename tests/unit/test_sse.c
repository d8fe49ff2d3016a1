/* SPDX-License-Identifier: MIT */
/* test_sse.c -- the SSE parser and writer: framing rules of docs/providers.md §7, bounds, pausing,
 * EOF handling, and the split invariant (any split of the input, down to byte by byte, gives
 * the same events as one feed). Every callback is recorded into one transcript string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/buf.h"
#include "stream/sse_parse.h"
#include "stream/sse_write.h"

#define MAX_EVENT (64 * 1024)

/* The transcript: E[name][data] per event, C[text] per comment, U[line] per unknown line. */
struct rec {
    struct bsc_buf log;
    int pause_after; /* pause (return 1) on the n-th callback, 1-based; 0 = never */
    int calls;
};

static void rec_put(struct rec *r, char tag, struct bsc_str a, const struct bsc_str *b)
{
    assert_int_equal(bsc_buf_appendf(&r->log, "%c[%.*s]", tag, BSC_STR_FMT(a)), BSC_OK);
    if (b)
        assert_int_equal(bsc_buf_appendf(&r->log, "[%.*s]", BSC_STR_FMT(*b)), BSC_OK);
}

static int rec_pause(struct rec *r)
{
    r->calls++;
    return r->pause_after && r->calls == r->pause_after;
}

static int on_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct rec *r = ud;

    assert_non_null(name.p);
    assert_non_null(data.p);
    rec_put(r, 'E', name, &data);
    return rec_pause(r);
}

static int on_comment(void *ud, struct bsc_str text)
{
    struct rec *r = ud;

    rec_put(r, 'C', text, NULL);
    return rec_pause(r);
}

static int on_unknown(void *ud, struct bsc_str line)
{
    struct rec *r = ud;

    rec_put(r, 'U', line, NULL);
    return rec_pause(r);
}

static const struct sse_callbacks cbs = {on_event, on_comment, on_unknown};

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof(*r));
    bsc_buf_init(&r->log, 1 << 20);
    assert_int_equal(bsc_buf_append(&r->log, "", 0), BSC_OK); /* so log.p is a C string */
}

/* Feeds <len> bytes of <in> split at the positions in <cuts> (ascending), then finishes.
 * Returns the transcript (caller frees) with "|pending" or "|clean" and the error appended. */
static char *run_cuts(const char *in, size_t len, const size_t *cuts, size_t ncuts, size_t max)
{
    struct sse_parser p;
    struct rec r;
    size_t from = 0;
    bool pending = false;
    enum bsc_err err = BSC_OK;

    rec_init(&r);
    sse_parser_init(&p, max, &cbs, &r);
    for (size_t i = 0; i <= ncuts && !err; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        ssize_t n = sse_parser_feed(&p, in + from, to - from);

        if (n < 0)
            err = (enum bsc_err)-n;
        else
            assert_int_equal((size_t)n, to - from);
        from = to;
    }
    if (!err)
        err = sse_parser_finish(&p, &pending);
    assert_int_equal(bsc_buf_appendf(&r.log, "|%s|%s", pending ? "pending" : "clean",
                                     bsc_err_str(err)),
                     BSC_OK);
    sse_parser_cleanup(&p);
    return bsc_buf_take(&r.log, NULL);
}

static char *run_one(const char *in, size_t max)
{
    return run_cuts(in, strlen(in), NULL, 0, max);
}

static void expect(const char *in, const char *want)
{
    char *got = run_one(in, MAX_EVENT);

    assert_string_equal(got, want);
    free(got);
}

/* ---- samples (docs/providers.md §1.5, §2.4, §3.5, §4.2) ------------------------------------- */

static const char openai_sample[] =
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"H\xc3\xa9l\"}}]}\n\n"
    ": keep-alive\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9}}\n\n"
    "data: [DONE]\n\n";

static const char openai_want[] =
    "E[][{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}]"
    "E[][{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"H\xc3\xa9l\"}}]}]"
    "C[keep-alive]"
    "E[][{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}]}]"
    "E[][{\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9}}]"
    "E[][[DONE]]|clean|ok";

static const char anthropic_sample[] =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
    "\"usage\":{\"input_tokens\":25}}}\r\n"
    "\r\n"
    "event: ping\r\n"
    "data: {\"type\": \"ping\"}\r\n"
    "\r\n"
    "event: content_block_delta\r\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
    "\"partial_json\":\"{\\\"city\\\": \\\"Os\"}}\r\n"
    "\r\n"
    "event: error\n"
    "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
    "\"message\":\"Overloaded\"}}\n"
    "\n"
    "event: message_stop\r"
    "data: {\"type\":\"message_stop\"}\r"
    "\r";

static const char anthropic_want[] =
    "E[message_start][{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":"
    "{\"input_tokens\":25}}}]"
    "E[ping][{\"type\": \"ping\"}]"
    "E[content_block_delta][{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
    "\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Os\"}}]"
    "E[error][{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
    "\"Overloaded\"}}]"
    "E[message_stop][{\"type\":\"message_stop\"}]|clean|ok";

/* A mix of everything: BOM, DashScope frames, multi-line data, lone CRs, unknown lines. */
static const char mixed_sample[] =
    "\xef\xbb\xbfid:1\nevent:result\n:HTTP_STATUS/200\ndata:{\"a\":1}\n\n"
    "data: line1\r\ndata:line2\rdata\n\r\n"
    "retry: 100\n[{\n  \"error\": {\"code\": 503}\n}]\n"
    ":\n\n\n"
    "event: x\n\n"
    "data: tail";

static const char mixed_want[] =
    "C[HTTP_STATUS/200]E[result][{\"a\":1}]"
    "E[][line1\nline2\n]"
    "U[[{]U[  \"error\": {\"code\": 503}]U[}]]"
    "C[]"
    "E[x][]"
    "E[][tail]|pending|ok";

/* ---- framing rules --------------------------------------------------------------------- */

static void test_openai_stream(void **state)
{
    (void)state;
    expect(openai_sample, openai_want);
}

static void test_anthropic_stream(void **state)
{
    (void)state;
    expect(anthropic_sample, anthropic_want);
}

static void test_dashscope_frames(void **state)
{
    (void)state;
    expect("id:1\nevent:result\n:HTTP_STATUS/200\ndata:{\"x\":1}\n\n"
           "id:2\nevent:error\n:HTTP_STATUS/400\ndata:{\"code\":\"Bad\"}\n\n",
           "C[HTTP_STATUS/200]E[result][{\"x\":1}]C[HTTP_STATUS/400]E[error][{\"code\":\"Bad\"}]"
           "|clean|ok");
}

static void test_comments(void **state)
{
    (void)state;
    expect(": keep-alive\n", "C[keep-alive]|clean|ok");
    expect(":\n", "C[]|clean|ok");
    expect(":x\n", "C[x]|clean|ok");
    expect(":  two\n", "C[ two]|clean|ok");
    expect(": OPENROUTER PROCESSING\n\n", "C[OPENROUTER PROCESSING]|clean|ok");
    /* A comment inside an event does not end it. */
    expect("data: a\n: ping\ndata: b\n\n", "C[ping]E[][a\nb]|clean|ok");
}

static void test_line_endings(void **state)
{
    static const char *const forms[] = {
        "event: e\ndata: a\ndata: b\n\n",
        "event: e\r\ndata: a\r\ndata: b\r\n\r\n",
        "event: e\rdata: a\rdata: b\r\r",
        "event: e\r\ndata: a\r\ndata: b\r\n\n", /* CRLF fields, LF blank line [R] */
        "event: e\rdata: a\r\ndata: b\n\r",
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(forms); i++)
        expect(forms[i], "E[e][a\nb]|clean|ok");
    /* CR CR is two terminators (an empty line), CR LF only one. */
    expect("data: a\r\r", "E[][a]|clean|ok");
    expect("data: a\r\n", "E[][a]|pending|ok");
}

static void test_cr_at_feed_boundary(void **state)
{
    const char *in = "data: a\r\ndata: b\r\n\r\n";
    size_t len = strlen(in);

    (void)state;
    /* Cut right after each CR: the LF opening the next feed must not be a second line end,
     * which would dispatch "a" alone. */
    for (size_t i = 0; i < len; i++) {
        if (in[i] != '\r')
            continue;
        size_t cut = i + 1;
        char *got = run_cuts(in, len, &cut, 1, MAX_EVENT);

        assert_string_equal(got, "E[][a\nb]|clean|ok");
        free(got);
    }
    /* A lone CR at the end of a feed followed by a CR: an empty line, so a dispatch. */
    {
        const char *in2 = "data: a\r\rdata: b\r\r";
        size_t cut = 8;
        char *got = run_cuts(in2, strlen(in2), &cut, 1, MAX_EVENT);

        assert_string_equal(got, "E[][a]E[][b]|clean|ok");
        free(got);
    }
}

static void test_multiline_data(void **state)
{
    (void)state;
    expect("data: a\ndata: b\ndata:\n\n", "E[][a\nb\n]|clean|ok");
    expect("data\ndata\n\n", "E[][\n]|clean|ok");
    expect("data: {\ndata:   \"k\": 1\ndata: }\n\n", "E[][{\n  \"k\": 1\n}]|clean|ok");
}

static void test_event_names(void **state)
{
    (void)state;
    /* The name belongs to one event only; the last event line wins. */
    expect("event: x\ndata: 1\n\ndata: 2\n\n", "E[x][1]E[][2]|clean|ok");
    expect("event: a\nevent: b\ndata: 1\n\n", "E[b][1]|clean|ok");
    /* An event line alone dispatches (docs/providers.md §7.3), a blank line alone does not. */
    expect("event: ping\n\n", "E[ping][]|clean|ok");
    expect("\n\n\r\n\r\r\n", "|clean|ok");
    /* Field names are case-sensitive. */
    expect("Data: x\nEVENT: y\n\n", "U[Data: x]U[EVENT: y]|clean|ok");
}

static void test_bom(void **state)
{
    const char *in = "\xef\xbb\xbf" "data: x\n\n";
    size_t len = strlen(in);

    (void)state;
    expect(in, "E[][x]|clean|ok");
    /* Split inside the BOM at every place. */
    for (size_t c1 = 0; c1 <= 3; c1++) {
        for (size_t c2 = c1; c2 <= 3; c2++) {
            size_t cuts[2] = {c1, c2};
            char *got = run_cuts(in, len, cuts, 2, MAX_EVENT);

            assert_string_equal(got, "E[][x]|clean|ok");
            free(got);
        }
    }
    /* Only at the very start: a second BOM is content (an unknown field). */
    expect("data: a\n\n\xef\xbb\xbf" "data: b\n\n", "E[][a]U[\xef\xbb\xbf" "data: b]|clean|ok");
    /* A BOM prefix that goes wrong is content, even split byte by byte. */
    {
        const char *bad = "\xef\xbb" "data: y\n\n";
        size_t cuts[2] = {1, 2};
        char *got = run_cuts(bad, strlen(bad), cuts, 2, MAX_EVENT);

        assert_string_equal(got, "U[\xef\xbb" "data: y]|clean|ok");
        free(got);
    }
    expect("\xef\xbb", "U[\xef\xbb]|pending|ok");
    expect("\xef\xbb\xbf", "|clean|ok");
    expect("\xef\n", "U[\xef]|clean|ok");
}

static void test_field_without_colon(void **state)
{
    (void)state;
    expect("data\n\n", "E[][]|clean|ok");
    expect("event\ndata: x\n\n", "E[][x]|clean|ok");
    expect("foo\n", "U[foo]|clean|ok");
    expect("id\nretry\n", "|clean|ok");
}

static void test_one_leading_space(void **state)
{
    (void)state;
    expect("data:x\n\n", "E[][x]|clean|ok");
    expect("data: x\n\n", "E[][x]|clean|ok");
    expect("data:  x \n\n", "E[][ x ]|clean|ok");
    expect("data:\tx\n\n", "E[][\tx]|clean|ok");
    expect("data: \n\n", "E[][]|clean|ok");
    expect("event:  n\ndata:1\n\n", "E[ n][1]|clean|ok");
    expect("data: a:b: c\n\n", "E[][a:b: c]|clean|ok");
}

static void test_id_retry_ignored(void **state)
{
    (void)state;
    expect("id: 7\nretry: 1000\ndata: x\nid\n\n", "E[][x]|clean|ok");
    expect("id: 7\n\n", "|clean|ok");
}

static void test_done(void **state)
{
    (void)state;
    assert_true(sse_is_done(BSC_STR("[DONE]")));
    assert_true(sse_is_done(BSC_STR("[DONE] ")));
    assert_false(sse_is_done(BSC_STR("[DONE]x")));
    assert_false(sse_is_done(BSC_STR(" [DONE]")));
    assert_false(sse_is_done(BSC_STR("[done]")));
    assert_false(sse_is_done(BSC_STR("[DONE")));
    assert_false(sse_is_done(BSC_STR("")));
    assert_false(sse_is_done(BSC_STR("{\"x\":\"[DONE]\"}")));
    expect("data:[DONE]\n\n", "E[][[DONE]]|clean|ok");
}

static void test_unterminated_at_eof(void **state)
{
    struct sse_parser p;
    struct rec r;
    bool pending = true;

    (void)state;
    /* A complete-looking data line without its blank line or even its newline: dispatched
     * at finish, and reported as pending so the caller still sees a cut stream. */
    expect("data: {\"a\":1}", "E[][{\"a\":1}]|pending|ok");
    expect("data: {\"a\":1}\n", "E[][{\"a\":1}]|pending|ok");
    expect("data: {\"a\":1}\r", "E[][{\"a\":1}]|pending|ok");
    expect("data: {\"a\":1}\n\n", "E[][{\"a\":1}]|clean|ok");
    expect(": keep", "C[keep]|pending|ok");
    expect("", "|clean|ok");

    /* Finish twice, feed after finish: refused, not sticky. */
    rec_init(&r);
    sse_parser_init(&p, MAX_EVENT, &cbs, &r);
    assert_int_equal(sse_parser_feed(&p, "data: a\n\n", 9), 9);
    assert_int_equal(sse_parser_finish(&p, &pending), BSC_OK);
    assert_false(pending);
    assert_int_equal(sse_parser_finish(&p, NULL), BSC_ESTATE);
    assert_int_equal(sse_parser_feed(&p, "data: b\n\n", 9), -(ssize_t)BSC_ESTATE);
    assert_string_equal(r.log.p, "E[][a]");
    sse_parser_cleanup(&p);
    bsc_buf_cleanup(&r.log);
}

/* ---- bounds ---------------------------------------------------------------------------- */

static void test_line_limit(void **state)
{
    char *got;

    (void)state;
    /* max = 16: a line of 16 bytes passes, 17 fails; in one feed and split. */
    got = run_one("data: 1234567890\n\n", 16);
    assert_string_equal(got, "E[][1234567890]|clean|ok");
    free(got);
    got = run_one("data: 12345678901\n\n", 16);
    assert_string_equal(got, "|clean|limit exceeded");
    free(got);
    got = run_one("data: 123456789\n\n", 16);
    assert_string_equal(got, "E[][123456789]|clean|ok");
    free(got);
    for (size_t cut = 1; cut < 18; cut++) {
        const char *in = "data: 12345678901\n\n";

        got = run_cuts(in, strlen(in), &cut, 1, 16);
        assert_string_equal(got, "|clean|limit exceeded");
        free(got);
        in = "data: 1234567890\n\n";
        got = run_cuts(in, strlen(in), &cut, 1, 16);
        assert_string_equal(got, "E[][1234567890]|clean|ok");
        free(got);
    }
}

static void test_limit_without_newline(void **state)
{
    struct sse_parser p;
    struct rec r;
    char chunk[10];

    (void)state;
    /* A stream without line breaks fails as soon as the held line passes the bound, however
     * it is fed, and the error is sticky. */
    memset(chunk, 'x', sizeof(chunk));
    rec_init(&r);
    sse_parser_init(&p, 25, &cbs, &r);
    assert_int_equal(sse_parser_feed(&p, chunk, 10), 10);
    assert_int_equal(sse_parser_feed(&p, chunk, 10), 10);
    assert_int_equal(sse_parser_feed(&p, chunk, 5), 5); /* exactly 25: still fine */
    assert_int_equal(sse_parser_feed(&p, chunk, 1), -(ssize_t)BSC_ELIMIT);
    assert_int_equal(sse_parser_feed(&p, "\n", 1), -(ssize_t)BSC_ELIMIT);
    assert_int_equal(sse_parser_finish(&p, NULL), BSC_ELIMIT);
    assert_true(p.line.cap <= 25);
    sse_parser_cleanup(&p);
    bsc_buf_cleanup(&r.log);
}

static void test_event_data_limit(void **state)
{
    char *got;

    (void)state;
    /* Joined data: 7 + "\n" + 8 = 16 passes at max 16; one more byte fails. */
    got = run_one("data: 1234567\ndata: 12345678\n\n", 16);
    assert_string_equal(got, "E[][1234567\n12345678]|clean|ok");
    free(got);
    got = run_one("data: 1234567\ndata: 123456789\n\n", 16);
    assert_string_equal(got, "|clean|limit exceeded");
    free(got);
    /* An event name over the bound fails too. */
    got = run_one("event: 12345678901234567\n", 16);
    assert_string_equal(got, "|clean|limit exceeded");
    free(got);
    /* Events before the failing line were dispatched. */
    got = run_one("data: ok\n\ndata: 12345678901234567\n\n", 16);
    assert_string_equal(got, "E[][ok]|clean|limit exceeded");
    free(got);
}

/* ---- pausing (back-pressure) ----------------------------------------------------------- */

static void test_pause_and_resume(void **state)
{
    const char *in = "data: a\n\ndata: b\r\ndata: c\r\n\r\ndata: d\n\n";
    size_t len = strlen(in);

    (void)state;
    for (int k = 1; k <= 3; k++) {
        struct sse_parser p;
        struct rec r;
        size_t done = 0;
        int rounds = 0;

        rec_init(&r);
        r.pause_after = k;
        sse_parser_init(&p, MAX_EVENT, &cbs, &r);
        while (done < len) {
            ssize_t n = sse_parser_feed(&p, in + done, len - done);

            assert_true(n > 0);
            if (rounds == 0 && k == 1)
                assert_int_equal(n, 9); /* stopped right after "data: a\n\n" */
            done += (size_t)n;
            assert_true(++rounds <= 3);
        }
        assert_int_equal(rounds, k < 3 ? 2 : 1); /* a pause on the last event ends the input */
        assert_int_equal(sse_parser_finish(&p, NULL), BSC_OK);
        assert_string_equal(r.log.p, "E[][a]E[][b\nc]E[][d]");
        sse_parser_cleanup(&p);
        bsc_buf_cleanup(&r.log);
    }
}

static void test_pause_keeps_pending_data(void **state)
{
    const char *in = "data: a\n: c\ndata: b\n\n";
    struct sse_parser p;
    struct rec r;
    char copy[64];
    ssize_t n;

    (void)state;
    /* Pausing on the comment leaves "a" pending; it must survive the caller's buffer. */
    memcpy(copy, in, strlen(in) + 1);
    rec_init(&r);
    r.pause_after = 1;
    sse_parser_init(&p, MAX_EVENT, &cbs, &r);
    n = sse_parser_feed(&p, copy, strlen(copy));
    assert_int_equal(n, 12);
    memset(copy, '#', 12); /* the caller reuses its buffer */
    assert_int_equal(sse_parser_feed(&p, copy + n, strlen(copy) - (size_t)n),
                     (ssize_t)strlen(copy) - n);
    assert_string_equal(r.log.p, "C[c]E[][a\nb]");
    sse_parser_cleanup(&p);
    bsc_buf_cleanup(&r.log);
}

static void test_finish_ignores_pause(void **state)
{
    struct sse_parser p;
    struct rec r;
    bool pending = false;
    const char *in = "data: a\nlast";

    (void)state;
    /* The unknown line "last" pauses at EOF; the pending event is still delivered. */
    rec_init(&r);
    r.pause_after = 1;
    sse_parser_init(&p, MAX_EVENT, &cbs, &r);
    assert_int_equal(sse_parser_feed(&p, in, strlen(in)), (ssize_t)strlen(in));
    assert_int_equal(sse_parser_finish(&p, &pending), BSC_OK);
    assert_true(pending);
    assert_string_equal(r.log.p, "U[last]E[][a]");
    sse_parser_cleanup(&p);
    bsc_buf_cleanup(&r.log);
}

/* ---- the split invariant --------------------------------------------------------------- */

static void check_all_splits(const char *in, const char *want)
{
    size_t len = strlen(in);
    char *got;

    /* One feed, two feeds at every cut, byte by byte. */
    got = run_one(in, MAX_EVENT);
    assert_string_equal(got, want);
    free(got);
    for (size_t cut = 0; cut <= len; cut++) {
        got = run_cuts(in, len, &cut, 1, MAX_EVENT);
        assert_string_equal(got, want);
        free(got);
    }
    {
        size_t *cuts = calloc(len, sizeof(*cuts));

        assert_non_null(cuts);
        for (size_t i = 0; i < len; i++)
            cuts[i] = i;
        got = run_cuts(in, len, cuts, len, MAX_EVENT);
        assert_string_equal(got, want);
        free(got);
        free(cuts);
    }
}

static void test_every_split_openai(void **state)
{
    (void)state;
    check_all_splits(openai_sample, openai_want);
}

static void test_every_split_anthropic(void **state)
{
    (void)state;
    check_all_splits(anthropic_sample, anthropic_want);
}

static void test_every_split_mixed(void **state)
{
    const char *in = mixed_sample;
    size_t len = strlen(in);

    (void)state;
    check_all_splits(in, mixed_want);
    /* Three feeds: every pair of cuts. */
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            size_t cuts[2] = {a, b};
            char *got = run_cuts(in, len, cuts, 2, MAX_EVENT);

            assert_string_equal(got, mixed_want);
            free(got);
        }
    }
}

/* ---- the writer ------------------------------------------------------------------------ */

static void expect_write(enum bsc_err (*fn)(struct bsc_buf *, struct bsc_str, struct bsc_str),
                         const char *name, const char *data, const char *want)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 4096);
    assert_int_equal(fn(&b, bsc_str_cstr(name), bsc_str_cstr(data)), BSC_OK);
    assert_string_equal(b.p, want);
    bsc_buf_cleanup(&b);
}

static void test_write_event(void **state)
{
    (void)state;
    expect_write(sse_write_event, "", "{\"a\":1}", "data: {\"a\":1}\n\n");
    expect_write(sse_write_event, "message_stop", "{}", "event: message_stop\ndata: {}\n\n");
    expect_write(sse_write_event, "", "", "data: \n\n");
    expect_write(sse_write_event, "", "a\nb", "data: a\ndata: b\n\n");
    expect_write(sse_write_event, "", "a\r\nb\rc", "data: a\ndata: b\ndata: c\n\n");
    expect_write(sse_write_event, "", "a\n", "data: a\ndata: \n\n");
    expect_write(sse_write_event, "", "\n\n", "data: \ndata: \ndata: \n\n");
    expect_write(sse_write_event, "", " x", "data:  x\n\n");
}

static void test_write_others(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(sse_write_data(&b, BSC_STR("{}")), BSC_OK);
    assert_int_equal(sse_write_keepalive(&b), BSC_OK);
    assert_int_equal(sse_write_comment(&b, BSC_STR("two\nlines")), BSC_OK);
    assert_int_equal(sse_write_done(&b), BSC_OK);
    assert_string_equal(b.p, "data: {}\n\n: keep-alive\n\n: two\n: lines\n\ndata: [DONE]\n\n");
    /* A name with a line break would forge fields: refused, nothing written. */
    assert_int_equal(sse_write_event(&b, BSC_STR("a\nb"), BSC_STR("x")), BSC_EINVAL);
    assert_int_equal(sse_write_event(&b, BSC_STR("a\rb"), BSC_STR("x")), BSC_EINVAL);
    assert_int_equal(b.len, strlen(b.p));
    bsc_buf_cleanup(&b);
}

static void test_write_limit_is_atomic(void **state)
{
    struct bsc_buf b;

    (void)state;
    /* "data: 12\n\n" is 10 bytes: fits at 10, not at 9; a failed write leaves nothing. */
    bsc_buf_init(&b, 10);
    assert_int_equal(sse_write_data(&b, BSC_STR("12")), BSC_OK);
    assert_int_equal(b.len, 10);
    assert_int_equal(sse_write_data(&b, BSC_STR("")), BSC_ELIMIT);
    assert_int_equal(b.len, 10);
    bsc_buf_cleanup(&b);
    bsc_buf_init(&b, 9);
    assert_int_equal(sse_write_data(&b, BSC_STR("12")), BSC_ELIMIT);
    assert_int_equal(b.len, 0);
    assert_int_equal(sse_write_event(&b, BSC_STR("e"), BSC_STR("1\n2")), BSC_ELIMIT);
    assert_int_equal(sse_write_comment(&b, BSC_STR("0123456789")), BSC_ELIMIT);
    assert_int_equal(b.len, 0);
    bsc_buf_cleanup(&b);
}

static void test_write_parse_roundtrip(void **state)
{
    static const char *const payloads[] = {
        "{\"choices\":[]}", "", "multi\nline\n\ntext", "cr\rlf\r\nmix\n", " lead", "x\n",
        ":not a comment", "data: nested",
    };
    static const char *const want[] = {
        "{\"choices\":[]}", "", "multi\nline\n\ntext", "cr\nlf\nmix\n", " lead", "x\n",
        ":not a comment", "data: nested",
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(payloads); i++) {
        struct bsc_buf b, w;
        char *got;

        bsc_buf_init(&b, 4096);
        bsc_buf_init(&w, 4096);
        assert_int_equal(sse_write_event(&b, BSC_STR("n"), bsc_str_cstr(payloads[i])), BSC_OK);
        assert_int_equal(sse_write_keepalive(&b), BSC_OK);
        assert_int_equal(sse_write_done(&b), BSC_OK);
        got = run_one(b.p, MAX_EVENT);
        assert_int_equal(bsc_buf_appendf(&w, "E[n][%s]C[keep-alive]E[][[DONE]]|clean|ok", want[i]),
                         BSC_OK);
        assert_string_equal(got, w.p);
        free(got);
        bsc_buf_cleanup(&b);
        bsc_buf_cleanup(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_stream),
        cmocka_unit_test(test_anthropic_stream),
        cmocka_unit_test(test_dashscope_frames),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_line_endings),
        cmocka_unit_test(test_cr_at_feed_boundary),
        cmocka_unit_test(test_multiline_data),
        cmocka_unit_test(test_event_names),
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_field_without_colon),
        cmocka_unit_test(test_one_leading_space),
        cmocka_unit_test(test_id_retry_ignored),
        cmocka_unit_test(test_done),
        cmocka_unit_test(test_unterminated_at_eof),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_limit_without_newline),
        cmocka_unit_test(test_event_data_limit),
        cmocka_unit_test(test_pause_and_resume),
        cmocka_unit_test(test_pause_keeps_pending_data),
        cmocka_unit_test(test_finish_ignores_pause),
        cmocka_unit_test(test_every_split_openai),
        cmocka_unit_test(test_every_split_anthropic),
        cmocka_unit_test(test_every_split_mixed),
        cmocka_unit_test(test_write_event),
        cmocka_unit_test(test_write_others),
        cmocka_unit_test(test_write_limit_is_atomic),
        cmocka_unit_test(test_write_parse_roundtrip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
