/* SPDX-License-Identifier: MIT */
/* test_sim_openai.c -- bascule-sim's deterministic content (tokens, UTF-8 validity, tool
 * arguments, embeddings) and its OpenAI dialect: routing, credentials, request parsing,
 * and every rendered answer, stream event and error checked by parsing it back.
 * The Makefile links unit tests against libbascule.a only, so the sim sources under test
 * are compiled into this binary directly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/content.c"
#include "../../sim/dialect.c"
#include "../../sim/dialect_openai.c"
#include "../../sim/sjson.c"

/* ---- content ---- */

/* Well-formed UTF-8, for a string slice. */
static bool str_utf8_valid(struct bsc_str s)
{
    return bsc_utf8_valid(s.p, s.len);
}

static void tokens_are_valid_utf8_with_multibyte(void **state)
{
    struct bsc_buf b;
    bool wide[5] = {false}; /* seen a character of 1..4 bytes */

    (void)state;
    for (uint32_t i = 0; i < 64; i++) {
        struct bsc_str t = sim_content_token(i);
        assert_true(t.len > 0);
        assert_true(bsc_utf8_valid(t.p, t.len));
        for (size_t off = 0; off < t.len;) {
            size_t n = sim_utf8_char_len(bsc_str_make(t.p + off, t.len - off));
            assert_true(n >= 1 && n <= 4);
            wide[n] = true;
            off += n;
        }
    }
    assert_true(wide[2] && wide[3] && wide[4]);
    /* The default answer itself carries 2-, 3- and 4-byte characters. */
    bsc_buf_init(&b, 4096);
    assert_int_equal(sim_content_text(SIM_TOKENS_DEFAULT, &b), BSC_OK);
    assert_string_equal(b.p, "Hello h\xc3\xa9llo w\xc3\xb6rld! This is bascule-sim \xe2\x9c\x93 "
                             "streaming \xf0\x9f\x9a\x80 tokens");
    bsc_buf_cleanup(&b);
    /* Any length is the concatenation of the tokens, and valid. */
    for (uint32_t n = 0; n <= 100; n += 7) {
        size_t want = 0;
        bsc_buf_init(&b, 1 << 20);
        assert_int_equal(sim_content_text(n, &b), BSC_OK);
        for (uint32_t i = 0; i < n; i++)
            want += sim_content_token(i).len;
        assert_int_equal(b.len, want);
        assert_true(str_utf8_valid(bsc_buf_str(&b)));
        bsc_buf_cleanup(&b);
    }
}

static void utf8_validation(void **state)
{
    static const char *const bad[] = {
        "\xc0\xaf",         /* overlong '/' */
        "\xe0\x80\xaf",     /* overlong, 3 bytes */
        "\xed\xa0\x80",     /* a surrogate */
        "\xf4\x90\x80\x80", /* past U+10FFFF */
        "\xf5\x80\x80\x80", "\xff", "\x80", /* bytes that never start a character */
        "\xe2\x9c",         /* truncated */
        "a\xc3",            /* truncated at the end */
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad); i++)
        assert_false(str_utf8_valid(bsc_str_cstr(bad[i])));
    assert_true(str_utf8_valid(BSC_STR("")));
    assert_true(str_utf8_valid(bsc_str_cstr("\xf4\x8f\xbf\xbf \xef\xbf\xbd \x7f")));
    assert_int_equal(sim_utf8_char_len(BSC_STR("")), 0);
}

static void utf8_pieces_never_split(void **state)
{
    const char *text = "a\xf0\x9f\x9a\x80\xe2\x9c\x93\xc3\xa9xyz\xf0\x9f\x9a\x80\xff!";
    struct bsc_str s = bsc_str_cstr(text);

    (void)state;
    for (size_t max = 1; max <= 9; max++) {
        struct bsc_str rest = s;
        size_t total = 0;
        while (rest.len) {
            size_t k = sim_utf8_piece(rest, max);
            assert_true(k >= 1);
            /* A piece is max bytes at most, unless one character alone is longer. */
            if (k > max)
                assert_int_equal(k, sim_utf8_char_len(rest));
            /* Only the deliberately ill-formed byte may be an invalid piece. */
            if (!str_utf8_valid(bsc_str_make(rest.p, k))) {
                assert_int_equal(k, 1);
                assert_int_equal((unsigned char)rest.p[0], 0xff);
            }
            rest.p += k;
            rest.len -= k;
            total += k;
        }
        assert_int_equal(total, s.len);
    }
    assert_int_equal(sim_utf8_piece(BSC_STR(""), 8), 0);
}

static struct json_object *parse_ok(struct bsc_str s)
{
    char why[256];
    struct json_object *o = sim_json_parse(s, why, sizeof(why));

    if (!o)
        fail_msg("not JSON (%s): %.*s", why, (int)s.len, s.p);
    return o;
}

static void tool_args_echo_32_code_points(void **state)
{
    struct bsc_buf b;
    struct json_object *o;
    struct bsc_str echo;
    /* 40 characters, each 2 bytes: the echo keeps 32 of them, whole. */
    char text[81];

    (void)state;
    for (int i = 0; i < 40; i++)
        memcpy(text + 2 * i, "\xc3\xa9", 2);
    text[80] = '\0';
    bsc_buf_init(&b, 4096);
    assert_int_equal(sim_content_tool_args(bsc_str_cstr(text), &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    echo = sim_json_get_str(o, "echo");
    assert_int_equal(echo.len, 64);
    assert_true(bsc_utf8_valid(echo.p, echo.len));
    json_object_put(o);
    /* Quotes are escaped and bad bytes become U+FFFD: still valid JSON. */
    bsc_buf_reset(&b);
    assert_int_equal(sim_content_tool_args(BSC_STR("say \"hi\"\n\xff"), &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_string_equal(sim_json_get_str(o, "echo").p, "say \"hi\"\n\xef\xbf\xbd");
    json_object_put(o);
    bsc_buf_reset(&b);
    assert_int_equal(sim_content_tool_args(BSC_STR("short"), &b), BSC_OK);
    assert_string_equal(b.p, "{\"echo\":\"short\"}");
    bsc_buf_cleanup(&b);
}

static void embeddings_deterministic_unit_vectors(void **state)
{
    float a[SIM_EMBED_DIM], b[SIM_EMBED_DIM], c[SIM_EMBED_DIM];
    double norm = 0;

    (void)state;
    sim_content_embedding(BSC_STR("hello"), a);
    sim_content_embedding(BSC_STR("hello"), b);
    sim_content_embedding(BSC_STR("hellp"), c);
    assert_memory_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, c, sizeof(a));
    for (size_t k = 0; k < SIM_EMBED_DIM; k++)
        norm += (double)a[k] * a[k];
    assert_true(fabs(norm - 1.0) < 1e-5);
    assert_int_equal(sim_content_prompt_tokens(0, 0), 1);
    assert_int_equal(sim_content_prompt_tokens(9, 2), 3 + 8);
}

/* ---- the OpenAI dialect ---- */

struct fake_req {
    const char *auth; /* NULL: no Authorization header */
};

static struct bsc_str fake_header(const void *ctx, struct bsc_str name)
{
    const struct fake_req *r = ctx;

    if (bsc_str_ieq(name, BSC_STR("authorization")) && r->auth)
        return bsc_str_cstr(r->auth);
    return BSC_STR_NULL;
}

static struct sim_in make_in(const char *path, const char *body, const struct fake_req *r)
{
    return (struct sim_in){BSC_STR("POST"), bsc_str_cstr(path), BSC_STR(""), bsc_str_cstr(body),
                           fake_header, r};
}

static void routing(void **state)
{
    const struct sim_dialect *d = &sim_dialect_openai;
    enum sim_ep ep;

    (void)state;
    assert_int_equal(d->route(BSC_STR("POST"), BSC_STR("/v1/chat/completions")), SIM_EP_CHAT);
    assert_int_equal(d->route(BSC_STR("GET"), BSC_STR("/v1/chat/completions")), SIM_EP_NONE);
    assert_int_equal(d->route(BSC_STR("POST"), BSC_STR("/v1/embeddings")), SIM_EP_EMBED);
    assert_int_equal(d->route(BSC_STR("GET"), BSC_STR("/v1/models")), SIM_EP_MODELS);
    assert_int_equal(d->route(BSC_STR("GET"), BSC_STR("/v1/models/gpt-4o")), SIM_EP_MODEL);
    assert_int_equal(d->route(BSC_STR("GET"), BSC_STR("/v1/models/")), SIM_EP_NONE);
    assert_int_equal(d->route(BSC_STR("POST"), BSC_STR("/v2/chat/completions")), SIM_EP_NONE);
    assert_ptr_equal(sim_dialect_route(BSC_STR("POST"), BSC_STR("/v1/embeddings"), &ep), d);
    assert_int_equal(ep, SIM_EP_EMBED);
    assert_null(sim_dialect_route(BSC_STR("GET"), BSC_STR("/nope"), &ep));
    assert_int_equal(ep, SIM_EP_NONE);
}

static void authorization(void **state)
{
    const struct sim_dialect *d = &sim_dialect_openai;
    struct fake_req none = {NULL}, basic = {"Basic abc"}, empty = {"Bearer  "},
                    bad = {"Bearer sk-sim-bad"}, bad2 = {"bearer sk-sim-bad-2"},
                    good = {"Bearer sk-anything"};
    struct sim_in in;
    struct sim_reject rej;

    (void)state;
    in = make_in("/v1/chat/completions", "{}", &none);
    assert_false(d->authorize(&in, &rej));
    assert_int_equal(rej.status, 401);
    assert_null(rej.code);
    in.ctx = &basic;
    assert_false(d->authorize(&in, &rej));
    in.ctx = &empty;
    assert_false(d->authorize(&in, &rej));
    in.ctx = &bad;
    assert_false(d->authorize(&in, &rej));
    assert_int_equal(rej.status, 401);
    assert_string_equal(rej.code, "invalid_api_key");
    assert_non_null(strstr(rej.message, "sk-sim-bad"));
    in.ctx = &bad2;
    assert_false(d->authorize(&in, &rej));
    in.ctx = &good;
    assert_true(d->authorize(&in, &rej));
}

static bool parse_call(const char *body, struct sim_call *call, struct sim_reject *rej)
{
    struct fake_req r = {"Bearer k"};
    struct sim_in in = make_in("/v1/chat/completions", body, &r);

    memset(call, 0, sizeof(*call));
    return sim_dialect_openai.parse(SIM_EP_CHAT, &in, call, rej);
}

static void expect_reject(const char *body, const char *needle)
{
    struct sim_call call;
    struct sim_reject rej;

    assert_false(parse_call(body, &call, &rej));
    assert_int_equal(rej.status, 400);
    assert_string_equal(rej.type, "invalid_request_error");
    if (!strstr(rej.message, needle))
        fail_msg("\"%s\" lacks \"%s\"", rej.message, needle);
    sim_call_cleanup(&call);
}

static void chat_parse_rejects(void **state)
{
    (void)state;
    expect_reject("{nope", "parse the JSON");
    expect_reject("[]", "parse the JSON");
    expect_reject("{\"messages\":[]}", "model");
    expect_reject("{\"model\":\"\",\"messages\":[]}", "model");
    expect_reject("{\"model\":\"m\"}", "messages");
    expect_reject("{\"model\":\"m\",\"messages\":[]}", "too short");
    expect_reject("{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}", "role");
    expect_reject("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\"max_tokens\":0}",
                  "max_tokens");
    expect_reject("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],"
                  "\"max_completion_tokens\":1.5}",
                  "max_completion_tokens");
    expect_reject("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}],\"stream\":\"yes\"}",
                  "stream");
}

static void chat_parse_fields(void **state)
{
    struct sim_call call;
    struct sim_reject rej;

    (void)state;
    assert_true(parse_call("{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"system\",\"content\":"
                           "\"12345678\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                           "\"text\":\"1234\"}]}],\"max_tokens\":50,\"max_completion_tokens\":3,"
                           "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                           &call, &rej));
    assert_string_equal(call.model, "gpt-x");
    assert_int_equal(call.max_tokens, 3); /* max_completion_tokens wins */
    assert_true(call.stream);
    assert_true(call.include_usage);
    assert_null(call.tool_name);
    assert_int_equal(call.prompt_tokens, 3 + 8); /* 12 bytes, 2 messages */
    sim_call_settle(&call, 12, 7, 1700000000);
    assert_int_equal(call.n_tokens, 3);
    assert_true(call.finish_length);
    sim_call_settle(&call, 2, 7, 1700000000);
    assert_int_equal(call.n_tokens, 2);
    assert_false(call.finish_length);
    sim_call_cleanup(&call);
    /* include_usage is only a stream option. */
    assert_true(parse_call("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"stream_options\":{\"include_usage\":true}}",
                           &call, &rej));
    assert_false(call.stream);
    assert_false(call.include_usage);
    assert_int_equal(call.max_tokens, 0);
    sim_call_cleanup(&call);
}

static const char *tool_of(const char *body)
{
    static char name[64];
    struct sim_call call;
    struct sim_reject rej;

    assert_true(parse_call(body, &call, &rej));
    snprintf(name, sizeof(name), "%s", call.tool_name ? call.tool_name : "(text)");
    if (call.tool_name) {
        struct json_object *o = parse_ok(bsc_str_cstr(call.tool_args));
        assert_non_null(sim_json_get_str(o, "echo").p);
        json_object_put(o);
    }
    sim_call_cleanup(&call);
    return name;
}

#define TOOLS                                                                              \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"             \
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}]"

static void chat_tool_choice(void **state)
{
    (void)state;
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"Weather in Oslo?\"}]," TOOLS "}"),
                        "get_weather");
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"}]," TOOLS ",\"tool_choice\":\"auto\"}"),
                        "get_weather");
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"}]," TOOLS ",\"tool_choice\":{\"type\":\"function\","
                                "\"function\":{\"name\":\"get_time\"}}}"),
                        "get_time");
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"}]," TOOLS ",\"tool_choice\":\"none\"}"),
                        "(text)");
    /* After a tool result the model answers in text. */
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":"
                                "\"4C\"}]," TOOLS "}"),
                        "(text)");
    assert_string_equal(tool_of("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"}],\"tools\":[]}"),
                        "(text)");
}

static struct sim_call settled(const char *body, uint32_t tokens)
{
    struct sim_call call;
    struct sim_reject rej;

    assert_true(parse_call(body, &call, &rej));
    sim_call_settle(&call, tokens, 42, 1700000000);
    return call;
}

static void chat_body_text(void **state)
{
    struct sim_call call = settled("{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\","
                                   "\"content\":\"hi\"}]}",
                                   12);
    struct bsc_buf b, text;
    struct json_object *o, *v, *choice;

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    bsc_buf_init(&text, 4096);
    assert_int_equal(sim_dialect_openai.body(&call, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_string_equal(sim_json_get_str(o, "model").p, "gpt-x");
    assert_string_equal(sim_json_get_str(o, "id").p, "chatcmpl-sim-42");
    assert_string_equal(sim_json_get_str(o, "object").p, "chat.completion");
    assert_true(json_object_object_get_ex(o, "choices", &v));
    choice = json_object_array_get_idx(v, 0);
    assert_string_equal(sim_json_get_str(choice, "finish_reason").p, "stop");
    assert_true(json_object_object_get_ex(choice, "message", &v));
    assert_string_equal(sim_json_get_str(v, "role").p, "assistant");
    sim_content_text(12, &text);
    assert_string_equal(sim_json_get_str(v, "content").p, text.p);
    assert_true(json_object_object_get_ex(o, "usage", &v));
    assert_true(json_object_object_get_ex(v, "completion_tokens", &choice));
    assert_int_equal(json_object_get_int(choice), 12);
    assert_true(json_object_object_get_ex(v, "total_tokens", &choice));
    assert_int_equal(json_object_get_int(choice), 12 + call.prompt_tokens);
    json_object_put(o);
    bsc_buf_cleanup(&b);
    bsc_buf_cleanup(&text);
    sim_call_cleanup(&call);
}

/* Renders every event of <call>'s stream, checks the SSE framing, and returns the events
 * parsed (a new array) plus the terminator in <end>. */
static struct json_object *stream_events(const struct sim_call *call, struct bsc_buf *end)
{
    struct json_object *arr = json_object_new_array();
    size_t n = sim_dialect_openai.event_count(call);

    for (size_t i = 0; i < n; i++) {
        struct bsc_buf b;
        bsc_buf_init(&b, 1 << 20);
        assert_int_equal(sim_dialect_openai.event(call, i, &b), BSC_OK);
        assert_true(b.len > 8);
        assert_memory_equal(b.p, "data: ", 6);
        assert_memory_equal(b.p + b.len - 2, "\n\n", 2);
        assert_null(memchr(b.p, '\n', b.len - 2)); /* one line per event */
        json_object_array_add(arr, parse_ok(bsc_str_make(b.p + 6, b.len - 8)));
        bsc_buf_cleanup(&b);
    }
    {
        struct bsc_buf b;
        bsc_buf_init(&b, 64);
        assert_int_equal(sim_dialect_openai.event(call, n, &b), BSC_EINVAL);
        bsc_buf_cleanup(&b);
    }
    assert_int_equal(sim_dialect_openai.end_event(call, end), BSC_OK);
    return arr;
}

static struct json_object *delta_of(struct json_object *chunk, const char **finish)
{
    struct json_object *choices, *c, *delta;

    assert_true(json_object_object_get_ex(chunk, "choices", &choices));
    if (json_object_array_length(choices) == 0)
        return NULL;
    c = json_object_array_get_idx(choices, 0);
    *finish = sim_json_get_str(c, "finish_reason").p;
    assert_true(json_object_object_get_ex(c, "delta", &delta));
    return delta;
}

static void chat_stream_text(void **state)
{
    struct sim_call call = settled("{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                                   "\"content\":\"hi\"}],\"stream\":true,\"max_tokens\":5,"
                                   "\"stream_options\":{\"include_usage\":true}}",
                                   12);
    struct bsc_buf end, text, want;
    struct json_object *arr, *usage, *v;
    const char *finish = NULL;
    size_t n;

    (void)state;
    bsc_buf_init(&end, 64);
    bsc_buf_init(&text, 4096);
    bsc_buf_init(&want, 4096);
    arr = stream_events(&call, &end);
    n = json_object_array_length(arr);
    assert_int_equal(n, 1 + 5 + 1 + 1); /* role, 5 tokens, finish, usage */
    assert_string_equal(end.p, "data: [DONE]\n\n");
    /* The first chunk carries the role, then one chunk per token. */
    v = delta_of(json_object_array_get_idx(arr, 0), &finish);
    assert_string_equal(sim_json_get_str(v, "role").p, "assistant");
    assert_null(finish);
    for (size_t i = 1; i <= 5; i++) {
        struct bsc_str piece;
        v = delta_of(json_object_array_get_idx(arr, i), &finish);
        piece = sim_json_get_str(v, "content");
        assert_true(bsc_str_eq(piece, sim_content_token((uint32_t)(i - 1))));
        bsc_buf_append_str(&text, piece);
        assert_null(finish);
    }
    sim_content_text(5, &want);
    assert_string_equal(text.p, want.p);
    delta_of(json_object_array_get_idx(arr, 6), &finish);
    assert_string_equal(finish, "length"); /* max_tokens 5 < 12 */
    /* Chunks carry "usage": null except the last one, whose choices are empty. */
    assert_true(json_object_object_get_ex(json_object_array_get_idx(arr, 6), "usage", &v));
    assert_true(json_object_is_type(v, json_type_null));
    assert_null(delta_of(json_object_array_get_idx(arr, 7), &finish));
    assert_true(json_object_object_get_ex(json_object_array_get_idx(arr, 7), "usage", &usage));
    assert_true(json_object_object_get_ex(usage, "completion_tokens", &v));
    assert_int_equal(json_object_get_int(v), 5);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(sim_json_get_str(json_object_array_get_idx(arr, i), "id").p,
                            "chatcmpl-sim-42");
    json_object_put(arr);
    sim_call_cleanup(&call);
    /* Without include_usage: no usage chunk and no "usage" key. */
    call = settled("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                   "\"stream\":true}",
                   3);
    bsc_buf_reset(&end);
    arr = stream_events(&call, &end);
    assert_int_equal(json_object_array_length(arr), 1 + 3 + 1);
    assert_false(json_object_object_get_ex(json_object_array_get_idx(arr, 1), "usage", NULL));
    delta_of(json_object_array_get_idx(arr, 4), &finish);
    assert_string_equal(finish, "stop");
    json_object_put(arr);
    sim_call_cleanup(&call);
    bsc_buf_cleanup(&end);
    bsc_buf_cleanup(&text);
    bsc_buf_cleanup(&want);
}

static void chat_tool_call_body_and_stream(void **state)
{
    const char *req = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Wie ist "
                      "das Wetter in K\xc3\xb6ln? \xf0\x9f\x9a\x80 und morgen bitte?\"}]," TOOLS
                      ",\"stream\":true}";
    struct sim_call call = settled(req, 12);
    struct bsc_buf b, args, end;
    struct json_object *o, *v, *tc, *arr;
    const char *finish = NULL;
    size_t n;

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    bsc_buf_init(&args, 4096);
    bsc_buf_init(&end, 64);
    /* Non-streamed: one tool call, content null, finish tool_calls. */
    assert_int_equal(sim_dialect_openai.body(&call, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_true(json_object_object_get_ex(o, "choices", &v));
    v = json_object_array_get_idx(v, 0);
    assert_string_equal(sim_json_get_str(v, "finish_reason").p, "tool_calls");
    assert_true(json_object_object_get_ex(v, "message", &v));
    assert_true(json_object_object_get_ex(v, "content", &tc));
    assert_true(json_object_is_type(tc, json_type_null));
    assert_true(json_object_object_get_ex(v, "tool_calls", &tc));
    assert_int_equal(json_object_array_length(tc), 1);
    tc = json_object_array_get_idx(tc, 0);
    assert_string_equal(sim_json_get_str(tc, "id").p, "call_sim_42");
    assert_true(json_object_object_get_ex(tc, "function", &tc));
    assert_string_equal(sim_json_get_str(tc, "name").p, "get_weather");
    assert_string_equal(sim_json_get_str(tc, "arguments").p, call.tool_args);
    json_object_put(o);
    /* The echo is the first 32 code points of the user message. */
    o = parse_ok(bsc_str_cstr(call.tool_args));
    assert_string_equal(sim_json_get_str(o, "echo").p,
                        "Wie ist das Wetter in K\xc3\xb6ln? \xf0\x9f\x9a\x80 un");
    json_object_put(o);

    /* Streamed: id and name in the first fragment only, arguments in pieces. */
    arr = stream_events(&call, &end);
    n = json_object_array_length(arr);
    assert_true(n > 3);
    for (size_t i = 0; i + 1 < n; i++) {
        struct json_object *calls, *fn;
        v = delta_of(json_object_array_get_idx(arr, i), &finish);
        assert_null(finish);
        assert_true(json_object_object_get_ex(v, "tool_calls", &calls));
        calls = json_object_array_get_idx(calls, 0);
        assert_true(json_object_object_get_ex(calls, "index", &tc));
        assert_int_equal(json_object_get_int(tc), 0);
        assert_int_equal(json_object_object_get_ex(calls, "id", NULL), i == 0);
        assert_true(json_object_object_get_ex(calls, "function", &fn));
        assert_int_equal(sim_json_get_str(fn, "name").p != NULL, i == 0);
        if (i == 0)
            assert_string_equal(sim_json_get_str(v, "role").p, "assistant");
        assert_true(sim_json_get_str(fn, "arguments").len <= SIM_ARG_PIECE_BYTES);
        bsc_buf_append_str(&args, sim_json_get_str(fn, "arguments"));
    }
    delta_of(json_object_array_get_idx(arr, n - 1), &finish);
    assert_string_equal(finish, "tool_calls");
    assert_string_equal(args.p, call.tool_args);
    json_object_put(arr);
    bsc_buf_cleanup(&b);
    bsc_buf_cleanup(&args);
    bsc_buf_cleanup(&end);
    sim_call_cleanup(&call);
}

static void embeddings(void **state)
{
    struct fake_req r = {"Bearer k"};
    struct sim_in in = make_in("/v1/embeddings", "", &r);
    struct sim_call call = {0};
    struct sim_reject rej;
    struct bsc_buf b;
    struct json_object *o, *data, *e, *v;
    float want[SIM_EMBED_DIM];

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    in.body = BSC_STR("{\"model\":\"e\",\"input\":[\"hello\",\"w\xc3\xb6rld\"]}");
    assert_true(sim_dialect_openai.parse(SIM_EP_EMBED, &in, &call, &rej));
    assert_int_equal(call.n_inputs, 2);
    sim_call_settle(&call, 12, 1, 1);
    assert_int_equal(sim_dialect_openai.body(&call, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_true(json_object_object_get_ex(o, "data", &data));
    assert_int_equal(json_object_array_length(data), 2);
    e = json_object_array_get_idx(data, 0);
    assert_true(json_object_object_get_ex(e, "embedding", &v));
    assert_int_equal(json_object_array_length(v), SIM_EMBED_DIM);
    sim_content_embedding(BSC_STR("hello"), want);
    for (size_t k = 0; k < SIM_EMBED_DIM; k++)
        assert_true(fabs(json_object_get_double(json_object_array_get_idx(v, k)) - want[k]) <
                    1e-6);
    json_object_put(o);
    sim_call_cleanup(&call);

    /* base64: little-endian float32, as the openai SDK asks for by default. */
    memset(&call, 0, sizeof(call));
    bsc_buf_reset(&b);
    in.body = BSC_STR("{\"model\":\"e\",\"input\":\"hello\",\"encoding_format\":\"base64\"}");
    assert_true(sim_dialect_openai.parse(SIM_EP_EMBED, &in, &call, &rej));
    assert_true(call.base64);
    assert_int_equal(sim_dialect_openai.body(&call, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_true(json_object_object_get_ex(o, "data", &data));
    e = json_object_array_get_idx(data, 0);
    {
        struct bsc_str s = sim_json_get_str(e, "embedding");
        unsigned char raw[SIM_EMBED_DIM * 4];
        assert_int_equal(s.len, 44); /* 32 bytes -> 44 base64 chars */
        for (size_t k = 0; k < SIM_EMBED_DIM; k++) {
            uint32_t bits;
            memcpy(&bits, &want[k], 4);
            for (int i = 0; i < 4; i++)
                raw[k * 4 + (size_t)i] = (unsigned char)(bits >> (8 * i));
        }
        {
            struct bsc_buf enc;
            bsc_buf_init(&enc, 64);
            base64_append(&enc, raw, sizeof(raw));
            assert_true(bsc_str_eq(s, bsc_buf_str(&enc)));
            bsc_buf_cleanup(&enc);
        }
    }
    json_object_put(o);
    sim_call_cleanup(&call);

    /* Token-id input is one input; bad input is a 400. */
    memset(&call, 0, sizeof(call));
    in.body = BSC_STR("{\"model\":\"e\",\"input\":[1,2,3]}");
    assert_true(sim_dialect_openai.parse(SIM_EP_EMBED, &in, &call, &rej));
    assert_int_equal(call.n_inputs, 1);
    sim_call_cleanup(&call);
    in.body = BSC_STR("{\"model\":\"e\",\"input\":[]}");
    assert_false(sim_dialect_openai.parse(SIM_EP_EMBED, &in, &call, &rej));
    assert_int_equal(rej.status, 400);
    sim_call_cleanup(&call);
    in.body = BSC_STR("{\"model\":\"e\",\"input\":\"x\",\"encoding_format\":\"hex\"}");
    assert_false(sim_dialect_openai.parse(SIM_EP_EMBED, &in, &call, &rej));
    sim_call_cleanup(&call);
    bsc_buf_cleanup(&b);
}

static void errors_and_malformed(void **state)
{
    const struct sim_dialect *d = &sim_dialect_openai;
    struct sim_call call = settled("{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\"}]}", 12);
    struct bsc_buf b;
    struct json_object *o, *e;
    const char *type, *code;
    char msg[256];
    static const struct {
        int status;
        const char *type, *code;
    } want[] = {{429, "requests", "rate_limit_exceeded"},
                {500, "server_error", NULL},
                {503, "server_error", "server_is_overloaded"},
                {529, "overloaded_error", "overloaded"},
                {404, "invalid_request_error", "model_not_found"},
                {418, "invalid_request_error", NULL}};

    (void)state;
    bsc_buf_init(&b, 1 << 20);
    for (size_t i = 0; i < BSC_ARRAY_LEN(want); i++) {
        d->default_error(&call, want[i].status, &type, &code, msg, sizeof(msg));
        assert_string_equal(type, want[i].type);
        if (want[i].code)
            assert_string_equal(code, want[i].code);
        else
            assert_null(code);
        assert_true(strlen(msg) > 0);
    }
    d->default_error(&call, 404, &type, &code, msg, sizeof(msg));
    assert_non_null(strstr(msg, "gpt-x"));

    assert_int_equal(d->error_body(429, "requests", "rate_limit_exceeded", "slow \"down\"", &b),
                     BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_true(json_object_object_get_ex(o, "error", &e));
    assert_string_equal(sim_json_get_str(e, "message").p, "slow \"down\"");
    assert_string_equal(sim_json_get_str(e, "code").p, "rate_limit_exceeded");
    assert_true(json_object_object_get_ex(e, "param", NULL));
    json_object_put(o);

    bsc_buf_reset(&b);
    assert_int_equal(d->error_event(200, "server_error", NULL, "boom", &b), BSC_OK);
    assert_memory_equal(b.p, "data: {\"error\":", 15);
    o = parse_ok(bsc_str_make(b.p + 6, b.len - 8));
    json_object_put(o);

    bsc_buf_reset(&b);
    assert_int_equal(d->malformed_body(&call, &b), BSC_OK);
    assert_null(sim_json_parse(bsc_buf_str(&b), NULL, 0));
    bsc_buf_reset(&b);
    assert_int_equal(d->malformed_event(&call, &b), BSC_OK);
    assert_memory_equal(b.p, "data: ", 6);
    assert_memory_equal(b.p + b.len - 2, "\n\n", 2);
    assert_null(sim_json_parse(bsc_str_make(b.p + 6, b.len - 8), NULL, 0));
    bsc_buf_cleanup(&b);
    sim_call_cleanup(&call);
}

static void models_list(void **state)
{
    const char *names[] = {"a", "b\"c"};
    struct sim_call list = {.ep = SIM_EP_MODELS}, one = {.ep = SIM_EP_MODEL, .model = "x"};
    struct bsc_buf b;
    struct json_object *o, *data;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(sim_dialect_openai.models(&list, names, 2, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_true(json_object_object_get_ex(o, "data", &data));
    assert_int_equal(json_object_array_length(data), 2);
    assert_string_equal(sim_json_get_str(json_object_array_get_idx(data, 1), "id").p, "b\"c");
    json_object_put(o);
    bsc_buf_reset(&b);
    assert_int_equal(sim_dialect_openai.models(&one, names, 2, &b), BSC_OK);
    o = parse_ok(bsc_buf_str(&b));
    assert_string_equal(sim_json_get_str(o, "id").p, "x");
    assert_string_equal(sim_json_get_str(o, "object").p, "model");
    json_object_put(o);
    bsc_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tokens_are_valid_utf8_with_multibyte),
        cmocka_unit_test(utf8_validation),
        cmocka_unit_test(utf8_pieces_never_split),
        cmocka_unit_test(tool_args_echo_32_code_points),
        cmocka_unit_test(embeddings_deterministic_unit_vectors),
        cmocka_unit_test(routing),
        cmocka_unit_test(authorization),
        cmocka_unit_test(chat_parse_rejects),
        cmocka_unit_test(chat_parse_fields),
        cmocka_unit_test(chat_tool_choice),
        cmocka_unit_test(chat_body_text),
        cmocka_unit_test(chat_stream_text),
        cmocka_unit_test(chat_tool_call_body_and_stream),
        cmocka_unit_test(embeddings),
        cmocka_unit_test(errors_and_malformed),
        cmocka_unit_test(models_list),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
