/* SPDX-License-Identifier: MIT */
/* test_sim_script.c -- bascule-sim's fault engine: spec parsing and validation, step
 * sequencing (times, exhaustion, repeat, the shared "*" script), per-model counters and
 * request logs, arrival logs, the /_sim control API, and scripted content / tool arguments (parsing,
 * streaming pieces, step-over-spec and arguments-over-content precedence), all without a
 * socket.
 * The Makefile links unit tests against libbascule.a only, so the sim sources under test
 * are compiled into this binary directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/arrivals.c"
#include "../../sim/content.c"
#include "../../sim/control.c"
#include "../../sim/models.c"
#include "../../sim/script.c"
#include "../../sim/sjson.c"

static enum bsc_err parse(const char *json, struct sim_spec *spec, char *why, size_t len)
{
    return sim_spec_parse(bsc_str_cstr(json), spec, why, len);
}

/* ---- parsing ---- */

static void spec_defaults(void **state)
{
    struct sim_spec spec;
    char why[256];

    (void)state;
    assert_int_equal(parse("{}", &spec, why, sizeof(why)), BSC_OK);
    assert_int_equal(spec.tokens, 12);
    assert_int_equal(spec.token_delay_ms, -1);
    assert_false(spec.repeat);
    assert_int_equal(spec.n_steps, 0);
    sim_spec_cleanup(&spec);
}

static void spec_full(void **state)
{
    struct sim_spec spec;
    char why[256];
    const char *json =
        "{\"tokens\":5,\"token_delay_ms\":7,\"repeat\":true,\"script\":["
        "{\"action\":\"status\",\"status\":429,\"times\":2,\"headers\":{\"Retry-After\":\"1\","
        "\"retry-after-ms\":1500},\"error_code\":\"insufficient_quota\",\"error_type\":\"t\","
        "\"message\":\"m\"},"
        "{\"action\":\"delay\",\"delay_ms\":50},"
        "{\"action\":\"cut\",\"after_events\":3},"
        "{\"action\":\"trickle\",\"interval_ms\":20},"
        "{\"action\":\"status\",\"status\":502,\"body\":\"<html>bad gateway</html>\"},"
        "{\"action\":\"error_200\",\"body\":{\"error\":{\"message\":\"x\"}}},"
        "{\"action\":\"reset\"},{\"action\":\"hang\"},{\"action\":\"malformed\"},"
        "{\"action\":\"ok\"}]}";

    (void)state;
    assert_int_equal(parse(json, &spec, why, sizeof(why)), BSC_OK);
    assert_int_equal(spec.tokens, 5);
    assert_int_equal(spec.token_delay_ms, 7);
    assert_true(spec.repeat);
    assert_int_equal(spec.n_steps, 10);
    assert_int_equal(spec.steps[0].action, SIM_ACT_STATUS);
    assert_int_equal(spec.steps[0].status, 429);
    assert_int_equal(spec.steps[0].times, 2);
    assert_int_equal(spec.steps[0].n_headers, 2);
    assert_string_equal(spec.steps[0].headers[0].name, "retry-after"); /* lower-cased */
    assert_string_equal(spec.steps[0].headers[0].value, "1");
    assert_string_equal(spec.steps[0].headers[1].value, "1500"); /* numbers allowed */
    assert_string_equal(spec.steps[0].error_code, "insufficient_quota");
    assert_string_equal(spec.steps[0].error_type, "t");
    assert_string_equal(spec.steps[0].message, "m");
    assert_null(spec.steps[0].body);
    assert_int_equal(spec.steps[1].action, SIM_ACT_DELAY);
    assert_int_equal(spec.steps[1].delay_ms, 50);
    assert_int_equal(spec.steps[2].action, SIM_ACT_CUT);
    assert_true(spec.steps[2].has_after_events);
    assert_int_equal(spec.steps[2].after_events, 3);
    assert_int_equal(spec.steps[3].interval_ms, 20);
    assert_string_equal(spec.steps[4].body, "<html>bad gateway</html>"); /* string: raw */
    assert_string_equal(spec.steps[5].body, "{\"error\":{\"message\":\"x\"}}");
    assert_false(spec.steps[5].has_after_events);
    assert_int_equal(spec.steps[6].action, SIM_ACT_RESET);
    assert_int_equal(spec.steps[7].action, SIM_ACT_HANG);
    assert_int_equal(spec.steps[8].action, SIM_ACT_MALFORMED);
    assert_int_equal(spec.steps[9].action, SIM_ACT_OK);
    assert_int_equal(spec.steps[3].times, 1);
    sim_spec_cleanup(&spec);
    assert_null(spec.steps);
}

static void expect_bad(const char *json, enum bsc_err want, const char *needle)
{
    struct sim_spec spec;
    char why[256] = "";

    assert_int_equal(parse(json, &spec, why, sizeof(why)), want);
    if (!strstr(why, needle))
        fail_msg("error \"%s\" lacks \"%s\" for %s", why, needle, json);
    assert_int_equal(spec.n_steps, 0);
    assert_null(spec.steps);
}

static void spec_errors(void **state)
{
    char big[16 * 300];
    size_t off;

    (void)state;
    expect_bad("{", BSC_EPARSE, "invalid JSON");
    expect_bad("[]", BSC_EINVAL, "object");
    expect_bad("{\"tokenz\":1}", BSC_EINVAL, "unknown field \"tokenz\"");
    expect_bad("{\"tokens\":0}", BSC_EINVAL, "tokens");
    expect_bad("{\"tokens\":4097}", BSC_EINVAL, "tokens");
    expect_bad("{\"tokens\":\"3\"}", BSC_EINVAL, "integer");
    expect_bad("{\"repeat\":1}", BSC_EINVAL, "repeat");
    expect_bad("{\"script\":{}}", BSC_EINVAL, "array");
    expect_bad("{\"script\":[1]}", BSC_EINVAL, "script[0]");
    expect_bad("{\"script\":[{}]}", BSC_EINVAL, "\"action\"");
    expect_bad("{\"script\":[{\"action\":\"explode\"}]}", BSC_EINVAL, "unknown action");
    expect_bad("{\"script\":[{\"action\":\"ok\"},{\"action\":\"status\"}]}", BSC_EINVAL,
               "script[1]");
    expect_bad("{\"script\":[{\"action\":\"status\",\"status\":99}]}", BSC_EINVAL, "status");
    expect_bad("{\"script\":[{\"action\":\"status\",\"status\":600}]}", BSC_EINVAL, "status");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"status\":500}]}", BSC_EINVAL,
               "does not apply");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"after_events\":1}]}", BSC_EINVAL,
               "after_events");
    expect_bad("{\"script\":[{\"action\":\"cut\",\"interval_ms\":1}]}", BSC_EINVAL,
               "interval_ms");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"times\":0}]}", BSC_EINVAL, "times");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"delay_ms\":-1}]}", BSC_EINVAL, "delay_ms");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"colour\":1}]}", BSC_EINVAL, "colour");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"headers\":[]}]}", BSC_EINVAL, "headers");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"headers\":{\"a b\":\"1\"}}]}", BSC_EINVAL,
               "header");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"headers\":{\"x\":\"1\\r\\nevil: 1\"}}]}",
               BSC_EINVAL, "header");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"message\":3}]}", BSC_EINVAL, "message");

    /* 256 steps pass, 257 do not. */
    for (int n = 256; n <= 257; n++) {
        struct sim_spec spec;
        char why[128];

        off = (size_t)snprintf(big, sizeof(big), "{\"script\":[");
        for (int i = 0; i < n; i++)
            off += (size_t)snprintf(big + off, sizeof(big) - off, "%s{\"action\":\"ok\"}",
                                    i ? "," : "");
        snprintf(big + off, sizeof(big) - off, "]}");
        assert_int_equal(parse(big, &spec, why, sizeof(why)), n == 256 ? BSC_OK : BSC_EINVAL);
        sim_spec_cleanup(&spec);
    }
}

/* The stream faults of "streams that finish": stall (slow first token, stall) and no_done,
 * their fields, and the spec's prefill. */
static void stream_fault_steps(void **state)
{
    struct sim_spec spec;
    char why[256] = "";

    (void)state;
    assert_int_equal(parse("{\"prefill\":\"refuse\",\"script\":["
                           "{\"action\":\"stall\",\"after_events\":1,\"stall_ms\":2000},"
                           "{\"action\":\"stall\"},"
                           "{\"action\":\"no_done\",\"content\":\"x\"}]}",
                           &spec, why, sizeof(why)),
                     BSC_OK);
    assert_true(spec.prefill_refuse);
    assert_int_equal(spec.steps[0].action, SIM_ACT_STALL);
    assert_int_equal(spec.steps[0].after_events, 1);
    assert_int_equal(spec.steps[0].stall_ms, 2000);
    assert_false(spec.steps[1].has_after_events); /* the action's default (1) applies */
    assert_int_equal(spec.steps[1].stall_ms, SIM_DELAY_MAX_MS);
    assert_int_equal(spec.steps[2].action, SIM_ACT_NO_DONE);
    assert_string_equal(spec.steps[2].content, "x");
    sim_spec_cleanup(&spec);
    assert_int_equal(parse("{\"prefill\":\"honour\"}", &spec, why, sizeof(why)), BSC_OK);
    assert_false(spec.prefill_refuse);
    sim_spec_cleanup(&spec);
    expect_bad("{\"prefill\":true}", BSC_EINVAL, "prefill");
    expect_bad("{\"prefill\":\"maybe\"}", BSC_EINVAL, "prefill");
    expect_bad("{\"script\":[{\"action\":\"cut\",\"stall_ms\":1}]}", BSC_EINVAL, "stall_ms");
    expect_bad("{\"script\":[{\"action\":\"no_done\",\"after_events\":1}]}", BSC_EINVAL,
               "after_events");
    expect_bad("{\"script\":[{\"action\":\"stall\",\"stall_ms\":600001}]}", BSC_EINVAL,
               "stall_ms");
}

/* ---- sequencing ---- */

static enum sim_action next_action(const struct sim_spec *spec, struct sim_cursor *cur)
{
    const struct sim_step *s = sim_script_next(spec, cur);

    return s ? s->action : SIM_ACT_COUNT; /* COUNT: exhausted */
}

static void sequencing_times_and_exhaustion(void **state)
{
    struct sim_spec spec;
    struct sim_cursor cur = {0, 0};
    char why[128];

    (void)state;
    assert_int_equal(parse("{\"script\":[{\"action\":\"status\",\"status\":500,\"times\":3},"
                           "{\"action\":\"reset\"}]}",
                           &spec, why, sizeof(why)),
                     BSC_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(next_action(&spec, &cur), SIM_ACT_STATUS);
    assert_int_equal(next_action(&spec, &cur), SIM_ACT_RESET);
    assert_int_equal(next_action(&spec, &cur), SIM_ACT_COUNT);
    assert_int_equal(next_action(&spec, &cur), SIM_ACT_COUNT);
    sim_spec_cleanup(&spec);
}

static void sequencing_repeat(void **state)
{
    struct sim_spec spec;
    struct sim_cursor cur = {0, 0};
    char why[128];

    (void)state;
    assert_int_equal(parse("{\"repeat\":true,\"script\":[{\"action\":\"hang\",\"times\":2},"
                           "{\"action\":\"ok\"}]}",
                           &spec, why, sizeof(why)),
                     BSC_OK);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(next_action(&spec, &cur), SIM_ACT_HANG);
        assert_int_equal(next_action(&spec, &cur), SIM_ACT_HANG);
        assert_int_equal(next_action(&spec, &cur), SIM_ACT_OK);
    }
    sim_spec_cleanup(&spec);
    /* An empty script is exhausted even with repeat. */
    assert_int_equal(parse("{\"repeat\":true,\"script\":[]}", &spec, why, sizeof(why)), BSC_OK);
    cur = (struct sim_cursor){0, 0};
    assert_null(sim_script_next(&spec, &cur));
    sim_spec_cleanup(&spec);
}

static void step_copy_is_deep(void **state)
{
    struct sim_spec spec;
    struct sim_step copy;
    char why[128];

    (void)state;
    assert_int_equal(parse("{\"script\":[{\"action\":\"status\",\"status\":503,\"headers\":"
                           "{\"x-a\":\"1\"},\"body\":{\"k\":1},\"message\":\"m\"}]}",
                           &spec, why, sizeof(why)),
                     BSC_OK);
    assert_int_equal(sim_step_copy(&copy, &spec.steps[0]), BSC_OK);
    sim_spec_cleanup(&spec); /* the copy must survive its source */
    assert_int_equal(copy.status, 503);
    assert_string_equal(copy.headers[0].name, "x-a");
    assert_string_equal(copy.body, "{\"k\":1}");
    assert_string_equal(copy.message, "m");
    assert_null(copy.error_code);
    sim_step_cleanup(&copy);
}

/* ---- models: specs, the "*" default, counters ---- */

static enum sim_action begin(struct sim_models *m, const char *model, struct sim_plan *plan)
{
    assert_int_equal(sim_models_begin(m, bsc_str_cstr(model), plan), BSC_OK);
    return plan->step.action;
}

static enum sim_action begin_end(struct sim_models *m, const char *model)
{
    struct sim_plan plan;
    enum sim_action a = begin(m, model, &plan);

    sim_models_end(m, bsc_str_cstr(model), plan.gen, false);
    sim_plan_cleanup(&plan);
    return a;
}

static void set_spec(struct sim_models *m, const char *model, const char *json)
{
    char why[256];

    if (sim_models_set_spec(m, bsc_str_cstr(model), bsc_str_cstr(json), why, sizeof(why)))
        fail_msg("set_spec %s: %s", model, why);
}

static void models_own_and_star(void **state)
{
    struct sim_models m;
    struct sim_plan plan;

    (void)state;
    sim_models_init(&m);
    /* No script at all: ok with the defaults. */
    assert_int_equal(begin(&m, "a", &plan), SIM_ACT_OK);
    assert_int_equal(plan.tokens, 12);
    assert_int_equal(plan.token_delay_ms, -1);
    sim_plan_cleanup(&plan);

    set_spec(&m, "*", "{\"tokens\":3,\"script\":[{\"action\":\"status\",\"status\":500,"
                      "\"times\":2}]}");
    set_spec(&m, "own", "{\"tokens\":4,\"token_delay_ms\":9,\"script\":[{\"action\":\"reset\"}]}");
    /* The "*" script is one script shared by every model without its own. */
    assert_int_equal(begin(&m, "a", &plan), SIM_ACT_STATUS);
    assert_int_equal(plan.tokens, 3);
    sim_plan_cleanup(&plan);
    assert_int_equal(begin_end(&m, "b"), SIM_ACT_STATUS);
    assert_int_equal(begin_end(&m, "a"), SIM_ACT_OK);
    /* A model with its own spec never uses "*". */
    assert_int_equal(begin(&m, "own", &plan), SIM_ACT_RESET);
    assert_int_equal(plan.tokens, 4);
    assert_int_equal(plan.token_delay_ms, 9);
    sim_plan_cleanup(&plan);
    assert_int_equal(begin_end(&m, "own"), SIM_ACT_OK);
    /* Setting a spec again restarts its script; deleting it falls back to "*". */
    set_spec(&m, "own", "{\"script\":[{\"action\":\"hang\"}]}");
    assert_int_equal(begin_end(&m, "own"), SIM_ACT_HANG);
    assert_true(sim_models_del_spec(&m, BSC_STR("own")));
    assert_false(sim_models_del_spec(&m, BSC_STR("own")));
    set_spec(&m, "*", "{\"script\":[{\"action\":\"malformed\"}]}");
    assert_int_equal(begin_end(&m, "own"), SIM_ACT_MALFORMED);
    sim_models_cleanup(&m);
}


/* max_concurrent: with that many calls in flight a new one gets the overload 429 with its
 * rate-limit headers; once one ends, the script's step again. */
static void models_max_concurrent(void **state)
{
    struct sim_models m;
    struct sim_plan p1, p2, p3;

    (void)state;
    sim_models_init(&m);
    set_spec(&m, "mc", "{\"max_concurrent\":2,\"repeat\":true,"
                       "\"script\":[{\"action\":\"delay\",\"delay_ms\":5}]}");
    assert_int_equal(begin(&m, "mc", &p1), SIM_ACT_DELAY);
    assert_int_equal(begin(&m, "mc", &p2), SIM_ACT_DELAY);
    assert_int_equal(begin(&m, "mc", &p3), SIM_ACT_STATUS);
    assert_int_equal(p3.step.status, 429);
    assert_int_equal(p3.step.n_headers, 4);
    assert_string_equal(p3.step.headers[0].name, "x-ratelimit-limit-requests");
    assert_string_equal(p3.step.headers[0].value, "2");
    assert_string_equal(p3.step.headers[3].name, "retry-after-ms");
    sim_models_end(&m, BSC_STR("mc"), p3.gen, false);
    sim_models_end(&m, BSC_STR("mc"), p1.gen, false);
    sim_plan_cleanup(&p1);
    sim_plan_cleanup(&p3);
    assert_int_equal(begin_end(&m, "mc"), SIM_ACT_DELAY);
    sim_models_end(&m, BSC_STR("mc"), p2.gen, false);
    sim_plan_cleanup(&p2);
    set_spec(&m, "bad", "{\"max_concurrent\":1}");
    sim_models_cleanup(&m);
}

static void models_bad_spec_keeps_old(void **state)
{
    struct sim_models m;
    char why[256];

    (void)state;
    sim_models_init(&m);
    set_spec(&m, "x", "{\"script\":[{\"action\":\"reset\"},{\"action\":\"hang\"}]}");
    assert_int_equal(begin_end(&m, "x"), SIM_ACT_RESET);
    assert_int_equal(sim_models_set_spec(&m, BSC_STR("x"), BSC_STR("{\"script\":5}"), why,
                                         sizeof(why)),
                     BSC_EINVAL);
    assert_int_equal(begin_end(&m, "x"), SIM_ACT_HANG); /* old spec and cursor kept */
    assert_int_equal(sim_models_set_spec(&m, BSC_STR(""), BSC_STR("{}"), why, sizeof(why)),
                     BSC_ELIMIT);
    sim_models_cleanup(&m);
}

static struct json_object *stats_of(struct sim_models *m, const char *model)
{
    struct bsc_buf b;
    struct json_object *root, *models, *one = NULL;

    bsc_buf_init(&b, 1 << 20);
    assert_int_equal(sim_models_stats_json(m, &b), BSC_OK);
    root = sim_json_parse(bsc_buf_str(&b), NULL, 0);
    assert_non_null(root);
    bsc_buf_cleanup(&b);
    if (!model)
        return root;
    assert_true(json_object_object_get_ex(root, "models", &models));
    if (json_object_object_get_ex(models, model, &one))
        json_object_get(one);
    json_object_put(root);
    return one;
}

static int64_t field(struct json_object *o, const char *key)
{
    struct json_object *v;

    assert_true(json_object_object_get_ex(o, key, &v));
    return json_object_get_int64(v);
}

static void models_counters(void **state)
{
    struct sim_models m;
    struct sim_plan p1, p2, p3;
    struct json_object *s;

    (void)state;
    sim_models_init(&m);
    set_spec(&m, "m", "{\"script\":[{\"action\":\"status\",\"status\":429},{\"action\":\"delay\","
                      "\"delay_ms\":1},{\"action\":\"hang\"}]}");
    begin(&m, "m", &p1); /* status: a fault */
    begin(&m, "m", &p2); /* delay: ok */
    begin(&m, "m", &p3); /* hang: a fault, cancelled later */
    sim_models_reject(&m, BSC_STR("m"));
    s = stats_of(&m, "m");
    assert_int_equal(field(s, "calls"), 4);
    assert_int_equal(field(s, "ok"), 1);
    assert_int_equal(field(s, "faults"), 3);
    assert_int_equal(field(s, "completed"), 1);
    assert_int_equal(field(s, "in_flight"), 3);
    assert_int_equal(field(s, "max_in_flight"), 3);
    json_object_put(s);
    sim_models_end(&m, BSC_STR("m"), p1.gen, false);
    sim_models_end(&m, BSC_STR("m"), p2.gen, false);
    sim_models_end(&m, BSC_STR("m"), p3.gen, true);
    s = stats_of(&m, "m");
    assert_int_equal(field(s, "completed"), 3);
    assert_int_equal(field(s, "cancelled"), 1);
    assert_int_equal(field(s, "in_flight"), 0);
    assert_int_equal(field(s, "max_in_flight"), 3); /* the high-water mark stays */
    json_object_put(s);
    /* A call begun before a reset does not count after it. */
    sim_plan_cleanup(&p1);
    begin(&m, "m", &p1);
    sim_models_reset(&m);
    sim_models_end(&m, BSC_STR("m"), p1.gen, true);
    assert_null(stats_of(&m, "m"));
    s = stats_of(&m, NULL);
    assert_int_equal(field(s, "total"), 0);
    json_object_put(s);
    sim_plan_cleanup(&p1);
    sim_plan_cleanup(&p2);
    sim_plan_cleanup(&p3);
    sim_models_cleanup(&m);
}

/* ---- the request log ---- */

static void log_one(struct sim_models *m, const char *model, const char *body, uint64_t seq)
{
    struct sim_logent e = {
        .method = "POST",
        .path = "/v1/chat/completions",
        .query = "",
        .headers_json = "{\"authorization\":\"Bearer k\"}",
        .body = (char *)body,
        .body_len = strlen(body),
        .model = (char *)model,
        .outcome = "ok",
        .seq = seq,
    };

    sim_models_log(m, &e);
}

static struct json_object *requests_of(struct sim_models *m, const char *model)
{
    struct bsc_buf b;
    struct json_object *arr;

    bsc_buf_init(&b, 64 << 20);
    assert_int_equal(sim_models_requests_json(m, bsc_str_cstr(model), &b), BSC_OK);
    arr = sim_json_parse(bsc_buf_str(&b), NULL, 0);
    assert_non_null(arr);
    assert_true(json_object_is_type(arr, json_type_array));
    bsc_buf_cleanup(&b);
    return arr;
}

static void request_log_ring(void **state)
{
    struct sim_models m;
    struct json_object *arr, *e, *v;
    char body[64];

    (void)state;
    sim_models_init(&m);
    for (uint64_t i = 1; i <= 40; i++) {
        snprintf(body, sizeof(body), "{\"model\":\"r\",\"n\":%llu}", (unsigned long long)i);
        log_one(&m, i % 2 ? "r" : "other", body, i);
    }
    log_one(&m, "r", "not json", 41);
    arr = requests_of(&m, "r");
    /* 21 logged for "r": all kept, oldest first, newest last. */
    assert_int_equal(json_object_array_length(arr), 21);
    e = json_object_array_get_idx(arr, 0);
    assert_int_equal(field(e, "seq"), 1);
    assert_true(json_object_object_get_ex(e, "body", &v));
    assert_int_equal(field(v, "n"), 1); /* a JSON body is embedded as JSON */
    assert_true(json_object_object_get_ex(e, "headers", &v));
    assert_string_equal(sim_json_get_str(v, "authorization").p, "Bearer k");
    e = json_object_array_get_idx(arr, 20);
    assert_int_equal(field(e, "seq"), 41);
    assert_true(json_object_object_get_ex(e, "body", &v));
    assert_string_equal(json_object_get_string(v), "not json"); /* else as a string */
    json_object_put(arr);
    /* The overall log keeps the last 32 of everyone. */
    arr = requests_of(&m, "");
    assert_int_equal(json_object_array_length(arr), 32);
    assert_int_equal(field(json_object_array_get_idx(arr, 0), "seq"), 10);
    assert_int_equal(field(json_object_array_get_idx(arr, 31), "seq"), 41);
    json_object_put(arr);
    arr = requests_of(&m, "nobody");
    assert_int_equal(json_object_array_length(arr), 0);
    json_object_put(arr);
    sim_models_cleanup(&m);
}

static void headers_json_lowercase_and_join(void **state)
{
    struct bsc_str names[] = {BSC_STR("Authorization"), BSC_STR("X-Multi"), BSC_STR("x-multi"),
                              BSC_STR("Content-Type")};
    struct bsc_str values[] = {BSC_STR("Bearer sk-1"), BSC_STR("a"), BSC_STR("b\"c"),
                               BSC_STR("application/json")};
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(sim_headers_json(names, values, 4, &b), BSC_OK);
    assert_string_equal(b.p, "{\"authorization\":\"Bearer sk-1\",\"x-multi\":\"a, b\\\"c\","
                             "\"content-type\":\"application/json\"}");
    bsc_buf_cleanup(&b);
}

/* ---- the control API ---- */

static int control(struct sim_models *m, const char *method, const char *path,
                   const char *query, const char *body, struct json_object **out)
{
    struct bsc_buf b;
    int status;

    bsc_buf_init(&b, 64 << 20);
    status = sim_control_dispatch(m, bsc_str_cstr(method), bsc_str_cstr(path),
                                  bsc_str_cstr(query), bsc_str_cstr(body), &b);
    *out = sim_json_parse(bsc_buf_str(&b), NULL, 0);
    if (!*out)
        fail_msg("control %s %s answered non-JSON: %s", method, path, b.p);
    bsc_buf_cleanup(&b);
    return status;
}

static void control_api(void **state)
{
    struct sim_models m;
    struct json_object *o, *v;

    (void)state;
    sim_models_init(&m);
    assert_int_equal(control(&m, "PUT", "/_sim/models/gpt%2Dx", "",
                             "{\"script\":[{\"action\":\"reset\"}]}", &o),
                     200);
    assert_string_equal(sim_json_get_str(o, "model").p, "gpt-x"); /* path decoded */
    json_object_put(o);
    assert_int_equal(control(&m, "PUT", "/_sim/models/m", "", "{\"script\":[{\"action\":1}]}",
                             &o),
                     400);
    assert_true(json_object_object_get_ex(o, "error", &v));
    assert_non_null(strstr(sim_json_get_str(v, "message").p, "action"));
    json_object_put(o);
    assert_int_equal(control(&m, "PUT", "/_sim/models/m", "", "not json", &o), 400);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/models/gpt-x", "", "", &o), 200);
    assert_true(json_object_object_get_ex(o, "spec", &v));
    assert_true(json_object_object_get_ex(v, "script", &v));
    assert_int_equal(json_object_array_length(v), 1);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/models/none", "", "", &o), 404);
    json_object_put(o);
    assert_int_equal(control(&m, "PATCH", "/_sim/models/x", "", "", &o), 405);
    json_object_put(o);

    assert_int_equal(begin_end(&m, "gpt-x"), SIM_ACT_RESET);
    log_one(&m, "gpt-x", "{}", 1);
    log_one(&m, "a b", "{}", 2);
    assert_int_equal(control(&m, "GET", "/_sim/stats", "", "", &o), 200);
    assert_true(json_object_object_get_ex(o, "models", &v));
    assert_true(json_object_object_get_ex(v, "gpt-x", &v));
    assert_int_equal(field(v, "calls"), 1);
    assert_int_equal(field(v, "faults"), 1);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/requests", "x=1&model=a+b", "", &o), 200);
    assert_int_equal(json_object_array_length(o), 1);
    assert_int_equal(field(json_object_array_get_idx(o, 0), "seq"), 2);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/requests", "", "", &o), 200);
    assert_int_equal(json_object_array_length(o), 2);
    json_object_put(o);

    assert_int_equal(control(&m, "DELETE", "/_sim/models/gpt-x", "", "", &o), 200);
    json_object_put(o);
    assert_int_equal(control(&m, "DELETE", "/_sim/models/gpt-x", "", "", &o), 404);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/reset", "", "", &o), 405);
    json_object_put(o);
    assert_int_equal(control(&m, "POST", "/_sim/reset", "", "", &o), 200);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/requests", "", "", &o), 200);
    assert_int_equal(json_object_array_length(o), 0);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/nothing", "", "", &o), 404);
    json_object_put(o);
    assert_true(sim_control_is_path(BSC_STR("/_sim/stats")));
    assert_false(sim_control_is_path(BSC_STR("/v1/_sim/stats")));
    sim_models_cleanup(&m);
}

/* GET /_sim/arrivals: every call's arrival in order, kept past the request log's 32,
 * capped at SIM_ARRIVALS_MAX with the rest counted as dropped, forgotten by a reset. */
static void arrival_log(void **state)
{
    struct sim_models m;
    struct json_object *o, *v;
    const uint64_t n = SIM_ARRIVALS_MAX + 3;

    (void)state;
    sim_models_init(&m);
    for (uint64_t i = 0; i < 40; i++)
        sim_models_arrived(&m, BSC_STR("a"), 1000 + i * 7);
    sim_models_arrived(&m, BSC_STR("other"), 5);
    assert_int_equal(control(&m, "GET", "/_sim/arrivals", "model=a", "", &o), 200);
    assert_string_equal(sim_json_get_str(o, "model").p, "a");
    assert_int_equal(field(o, "dropped"), 0);
    assert_true(json_object_object_get_ex(o, "arrivals_ms", &v));
    assert_int_equal(json_object_array_length(v), 40);
    for (size_t i = 0; i < 40; i++)
        assert_int_equal(json_object_get_int64(json_object_array_get_idx(v, i)), 1000 + i * 7);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/arrivals", "model=nobody", "", &o), 404);
    json_object_put(o);
    assert_int_equal(control(&m, "GET", "/_sim/arrivals", "", "", &o), 400);
    json_object_put(o);
    assert_int_equal(control(&m, "POST", "/_sim/arrivals", "model=a", "", &o), 405);
    json_object_put(o);
    for (uint64_t i = 0; i < n; i++)
        sim_models_arrived(&m, BSC_STR("big"), i);
    assert_int_equal(control(&m, "GET", "/_sim/arrivals", "model=big", "", &o), 200);
    assert_int_equal(field(o, "dropped"), 3);
    assert_true(json_object_object_get_ex(o, "arrivals_ms", &v));
    assert_int_equal(json_object_array_length(v), SIM_ARRIVALS_MAX);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(v, SIM_ARRIVALS_MAX - 1)),
                     SIM_ARRIVALS_MAX - 1);
    json_object_put(o);
    sim_models_reset(&m);
    assert_int_equal(control(&m, "GET", "/_sim/arrivals", "model=a", "", &o), 404);
    json_object_put(o);
    sim_models_cleanup(&m);
}

static void url_decoding(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 256);
    assert_int_equal(sim_url_decode(BSC_STR("a%2Fb+c%2a"), true, &b), BSC_OK);
    assert_string_equal(b.p, "a/b c*");
    bsc_buf_reset(&b);
    assert_int_equal(sim_url_decode(BSC_STR("a+b"), false, &b), BSC_OK);
    assert_string_equal(b.p, "a+b");
    bsc_buf_reset(&b);
    assert_int_equal(sim_url_decode(BSC_STR("bad%2"), true, &b), BSC_EINVAL);
    bsc_buf_reset(&b);
    assert_int_equal(sim_url_decode(BSC_STR("bad%zz"), true, &b), BSC_EINVAL);
    bsc_buf_reset(&b);
    assert_true(sim_query_param(BSC_STR("model=gpt%2D4&x=1"), "model", &b));
    assert_string_equal(b.p, "gpt-4");
    bsc_buf_reset(&b);
    assert_false(sim_query_param(BSC_STR("models=1&mode=2"), "model", &b));
    assert_true(sim_query_param(BSC_STR("a=1&model"), "model", &b));
    assert_int_equal(b.len, 0);
    bsc_buf_cleanup(&b);
}

/* ---- scripted content and tool arguments ---- */

static void content_fields_parse(void **state)
{
    struct sim_spec spec;
    struct sim_step copy;
    char why[256];
    const char *json =
        "{\"content\":\"model text\",\"tool_arguments\":\"{\\\"a\\\":1}\",\"script\":["
        "{\"action\":\"ok\",\"content\":\"h\\u00e9llo \\ud83d\\ude80\"},"
        "{\"action\":\"delay\",\"delay_ms\":1,\"tool_arguments\":\"not json {\"},"
        "{\"action\":\"trickle\",\"content\":\"\"},"
        "{\"action\":\"cut\",\"content\":\"c\",\"tool_arguments\":\"[]\"},"
        "{\"action\":\"ok\",\"content\":null}]}";

    (void)state;
    assert_int_equal(parse(json, &spec, why, sizeof(why)), BSC_OK);
    assert_string_equal(spec.content, "model text");
    assert_string_equal(spec.tool_arguments, "{\"a\":1}");
    assert_string_equal(spec.steps[0].content, "h\xc3\xa9llo \xf0\x9f\x9a\x80");
    assert_null(spec.steps[0].tool_arguments);
    assert_null(spec.steps[1].content);
    assert_string_equal(spec.steps[1].tool_arguments, "not json {");
    assert_string_equal(spec.steps[2].content, ""); /* empty text is a text */
    assert_string_equal(spec.steps[3].content, "c");
    assert_string_equal(spec.steps[3].tool_arguments, "[]");
    assert_null(spec.steps[4].content); /* null: not set */
    assert_int_equal(sim_step_copy(&copy, &spec.steps[3]), BSC_OK);
    sim_spec_cleanup(&spec); /* the copy is deep */
    assert_null(spec.content);
    assert_null(spec.tool_arguments);
    assert_string_equal(copy.content, "c");
    assert_string_equal(copy.tool_arguments, "[]");
    sim_step_cleanup(&copy);
    assert_null(copy.content);
}

static void content_fields_errors(void **state)
{
    char big[SIM_TOOL_ARGS_MAX + 128];
    size_t off;

    (void)state;
    expect_bad("{\"script\":[{\"action\":\"ok\"},{\"action\":\"ok\",\"content\":3}]}",
               BSC_EINVAL, "script[1]: \"content\" must be a string");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"tool_arguments\":{\"a\":1}}]}", BSC_EINVAL,
               "script[0]: \"tool_arguments\" must be a string");
    expect_bad("{\"script\":[{\"action\":\"trickle\",\"content\":[\"x\"]}]}", BSC_EINVAL,
               "script[0]: \"content\" must be a string");
    expect_bad("{\"content\":true}", BSC_EINVAL, "\"content\" must be a string");
    expect_bad("{\"tool_arguments\":1}", BSC_EINVAL, "\"tool_arguments\" must be a string");
    /* Only actions that send a normal answer take them. */
    expect_bad("{\"script\":[{\"action\":\"status\",\"status\":500,\"content\":\"x\"}]}",
               BSC_EINVAL, "script[0]: \"content\" does not apply to action \"status\"");
    expect_bad("{\"script\":[{\"action\":\"error_200\",\"tool_arguments\":\"{}\"}]}", BSC_EINVAL,
               "\"tool_arguments\" does not apply to action \"error_200\"");
    expect_bad("{\"script\":[{\"action\":\"hang\",\"content\":\"x\"}]}", BSC_EINVAL,
               "does not apply");
    expect_bad("{\"script\":[{\"action\":\"malformed\",\"content\":\"x\"}]}", BSC_EINVAL,
               "does not apply");
    expect_bad("{\"script\":[{\"action\":\"ok\",\"content\":\"a\\u0000b\"}]}", BSC_EINVAL,
               "script[0]: \"content\" must be valid UTF-8 without NUL");
    /* tool_arguments are bounded (their stream fragments are found by a scan). */
    off = (size_t)snprintf(big, sizeof(big), "{\"tool_arguments\":\"");
    memset(big + off, 'x', SIM_TOOL_ARGS_MAX + 1);
    snprintf(big + off + SIM_TOOL_ARGS_MAX + 1, sizeof(big) - off - SIM_TOOL_ARGS_MAX - 1,
             "\"}");
    expect_bad(big, BSC_EINVAL, "\"tool_arguments\" is longer than 16384 bytes");
}

/* "stream" answers in a shape of its own: a boolean, on answer actions only. */
static void step_stream_field(void **state)
{
    struct sim_spec spec;
    char why[256];

    (void)state;
    assert_int_equal(parse("{\"script\":[{\"action\":\"ok\",\"stream\":true},"
                           "{\"action\":\"cut\",\"stream\":false},{\"action\":\"ok\"}]}",
                           &spec, why, sizeof(why)),
                     BSC_OK);
    assert_true(spec.steps[0].has_stream && spec.steps[0].stream);
    assert_true(spec.steps[1].has_stream && !spec.steps[1].stream);
    assert_false(spec.steps[2].has_stream);
    sim_spec_cleanup(&spec);
    expect_bad("{\"script\":[{\"action\":\"ok\",\"stream\":1}]}", BSC_EINVAL,
               "script[0]: \"stream\" must be a boolean");
    expect_bad("{\"script\":[{\"action\":\"status\",\"status\":500,\"stream\":true}]}",
               BSC_EINVAL, "\"stream\" does not apply to action \"status\"");
}

/* Piece <i> of <text> checked: whole characters, 1..4 of them, valid UTF-8. */
static void check_piece(struct bsc_str piece)
{
    size_t chars = 0;

    assert_true(bsc_utf8_valid(piece.p, piece.len));
    for (size_t off = 0; off < piece.len; chars++)
        off += sim_utf8_char_len(bsc_str_make(piece.p + off, piece.len - off));
    assert_in_range(chars, 1, 4);
}

static void content_pieces(void **state)
{
    /* 1-, 2-, 3- and 4-byte characters, in every alignment against the 4-byte windows. */
    static const char *const texts[] = {
        "a", "abcd", "abcde", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x9a\x80!",
        "\xf0\x9f\x9a\x80\xf0\x9f\x9a\x80\xf0\x9f\x9a\x80", "x\xf0\x9f\x9a\x80y\xe2\x9c\x93z",
        "\xc3\xa9\xc3\xa9\xc3\xa9", "{\"city\":\"Z\xc3\xbcrich\",\"n\":1}"};
    struct bsc_buf joined;

    (void)state;
    bsc_buf_init(&joined, 4096);
    for (size_t t = 0; t < BSC_ARRAY_LEN(texts); t++) {
        struct bsc_str text = bsc_str_cstr(texts[t]);
        uint32_t n = sim_content_pieces(text);

        assert_int_equal(n, (text.len + 3) / 4);
        bsc_buf_reset(&joined);
        for (uint32_t i = 0; i < n; i++) {
            struct bsc_str piece = sim_content_piece(text, i);
            check_piece(piece);
            assert_int_equal(bsc_buf_append_str(&joined, piece), BSC_OK);
            /* sim_content_chunk reads the same pieces; unscripted it reads the tokens. */
            assert_ptr_equal(sim_content_chunk(text, i).p, piece.p);
        }
        assert_int_equal(joined.len, text.len);
        assert_memory_equal(joined.p, text.p, text.len);
        assert_int_equal(sim_content_piece(text, n).len, 0); /* past the end: empty */
        bsc_buf_reset(&joined);
        assert_int_equal(sim_content_answer(text, 99, &joined), BSC_OK);
        assert_memory_equal(joined.p, text.p, text.len);
    }
    /* The empty text is one empty piece. */
    assert_int_equal(sim_content_pieces(BSC_STR("")), 1);
    assert_int_equal(sim_content_piece(BSC_STR(""), 0).len, 0);
    /* Several chunks for a short multi-byte sentence: "héllo" is 6 bytes, 2 pieces. */
    assert_int_equal(sim_content_pieces(bsc_str_cstr("h\xc3\xa9llo")), 2);
    assert_true(bsc_str_eq(sim_content_piece(bsc_str_cstr("h\xc3\xa9llo"), 0),
                           bsc_str_cstr("h\xc3\xa9l")));
    /* Unscripted: the generated tokens. */
    assert_true(bsc_str_eq(sim_content_chunk(BSC_STR_NULL, 1), sim_content_token(1)));
    bsc_buf_reset(&joined);
    assert_int_equal(sim_content_answer(BSC_STR_NULL, 2, &joined), BSC_OK);
    assert_true(bsc_str_eq(bsc_buf_str(&joined), bsc_str_cstr("Hello h\xc3\xa9llo")));
    bsc_buf_cleanup(&joined);
}

static void args_value(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 1024);
    /* JSON text as it is, line breaks (whitespace outside strings) turned into spaces. */
    assert_int_equal(sim_content_args_value(BSC_STR("{\r\n \"a\": [1,\n2]}"), false, &b), BSC_OK);
    assert_true(bsc_str_eq(bsc_buf_str(&b), BSC_STR("{   \"a\": [1, 2]}")));
    bsc_buf_reset(&b);
    assert_int_equal(sim_content_args_value(BSC_STR("{\"x\":\"\xc3\xa9\"}"), false, &b), BSC_OK);
    assert_true(bsc_str_eq(bsc_buf_str(&b), BSC_STR("{\"x\":\"\xc3\xa9\"}")));
    bsc_buf_reset(&b);
    /* Not JSON: one JSON string. */
    assert_int_equal(sim_content_args_value(BSC_STR("not \"json\"\n"), true, &b), BSC_OK);
    assert_true(bsc_str_eq(bsc_buf_str(&b), BSC_STR("\"not \\\"json\\\"\\n\"")));
    bsc_buf_cleanup(&b);
}

/* Precedence: the step's own field, else the model spec's (own spec or "*"). */
static void content_precedence_models(void **state)
{
    struct sim_models m;
    struct sim_plan plan;

    (void)state;
    sim_models_init(&m);
    set_spec(&m, "own", "{\"content\":\"spec text\",\"tool_arguments\":\"{\\\"s\\\":1}\","
                        "\"script\":[{\"action\":\"ok\",\"content\":\"step text\"},"
                        "{\"action\":\"trickle\",\"tool_arguments\":\"step args\"},"
                        "{\"action\":\"status\",\"status\":500}]}");
    assert_int_equal(begin(&m, "own", &plan), SIM_ACT_OK);
    assert_string_equal(plan.step.content, "step text");
    assert_string_equal(plan.step.tool_arguments, "{\"s\":1}");
    sim_plan_cleanup(&plan);
    assert_int_equal(begin(&m, "own", &plan), SIM_ACT_TRICKLE);
    assert_string_equal(plan.step.content, "spec text");
    assert_string_equal(plan.step.tool_arguments, "step args");
    sim_plan_cleanup(&plan);
    assert_int_equal(begin(&m, "own", &plan), SIM_ACT_STATUS);
    sim_plan_cleanup(&plan);
    /* The script exhausted: the spec's values still apply. */
    assert_int_equal(begin(&m, "own", &plan), SIM_ACT_OK);
    assert_string_equal(plan.step.content, "spec text");
    sim_plan_cleanup(&plan);
    /* The spec itself was not changed by lending its values. */
    assert_null(sim_models_get(&m, BSC_STR("own"), false)->spec.steps[0].tool_arguments);
    /* "*" lends its values to models without a spec; a model with one never looks. */
    set_spec(&m, "*", "{\"content\":\"star text\"}");
    assert_int_equal(begin(&m, "other", &plan), SIM_ACT_OK);
    assert_string_equal(plan.step.content, "star text");
    assert_null(plan.step.tool_arguments);
    sim_plan_cleanup(&plan);
    set_spec(&m, "plain", "{}");
    assert_int_equal(begin(&m, "plain", &plan), SIM_ACT_OK);
    assert_null(plan.step.content);
    sim_plan_cleanup(&plan);
    sim_models_cleanup(&m);
}

static void call_free(struct sim_call *call)
{
    BSC_FREE(call->model);
    BSC_FREE(call->tool_name);
    BSC_FREE(call->tool_args);
}

static struct sim_call chat_call(bool tool)
{
    struct sim_call call = {.ep = SIM_EP_CHAT, .n_tokens = 5, .finish_length = true};

    call.model = bsc_str_dup(BSC_STR("m"));
    if (tool) {
        call.tool_name = bsc_str_dup(BSC_STR("get_weather"));
        call.tool_args = bsc_str_dup(BSC_STR("{\"echo\":\"hi\"}"));
        assert_non_null(call.tool_args);
    }
    return call;
}

/* Precedence inside one call: tool_arguments > content > the generated answer. */
/* usage / usage_start: objects kept as compact JSON, deep-copied, lent to the call; anything
 * else, or on an action that sends no answer, is refused. */
static void usage_fields(void **state)
{
    struct sim_spec spec;
    struct sim_step copy;
    struct sim_call call;
    char why[256];
    const char *json = "{\"script\":[{\"action\":\"ok\",\"usage\":{\"prompt_tokens\": 10,"
                       "\"prompt_tokens_details\":{\"cached_tokens\":4}},"
                       "\"usage_start\":{\"input_tokens\":3}},{\"action\":\"ok\"}]}";

    (void)state;
    assert_int_equal(parse(json, &spec, why, sizeof(why)), BSC_OK);
    assert_string_equal(spec.steps[0].usage,
                        "{\"prompt_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":4}}");
    assert_string_equal(spec.steps[0].usage_start, "{\"input_tokens\":3}");
    assert_null(spec.steps[1].usage);
    assert_int_equal(sim_step_copy(&copy, &spec.steps[0]), BSC_OK);
    sim_spec_cleanup(&spec);
    call = chat_call(false);
    sim_step_apply(&copy, &call);
    assert_ptr_equal(call.usage.p, copy.usage);
    assert_ptr_equal(call.usage_start.p, copy.usage_start);
    call_free(&call);
    sim_step_cleanup(&copy);
    expect_bad("{\"script\":[{\"action\":\"ok\",\"usage\":[1]}]}", BSC_EINVAL,
               "script[0]: \"usage\" must be an object");
    expect_bad("{\"script\":[{\"action\":\"status\",\"status\":500,\"usage\":{}}]}",
               BSC_EINVAL, "\"usage\" does not apply to action \"status\"");
}

static void content_precedence_call(void **state)
{
    struct sim_step step;
    struct sim_call call;

    (void)state;
    /* Content on a text answer: exactly the text, one usage token per piece, no cut. */
    sim_step_init_ok(&step);
    step.content = bsc_str_dup(bsc_str_cstr("h\xc3\xa9llo w\xc3\xb6rld"));
    call = chat_call(false);
    sim_step_apply(&step, &call);
    assert_ptr_equal(call.content.p, step.content);
    assert_int_equal(call.content.len, strlen(step.content));
    assert_int_equal(call.n_tokens, 4); /* 13 bytes */
    assert_false(call.finish_length);
    call_free(&call);
    /* Content on what would be a tool call: a text answer instead. */
    call = chat_call(true);
    sim_step_apply(&step, &call);
    assert_null(call.tool_name);
    assert_null(call.tool_args);
    assert_non_null(call.content.p);
    call_free(&call);
    /* Content and tool_arguments on a tool call: the call, with those arguments. */
    step.tool_arguments = bsc_str_dup(BSC_STR("{\"city\": 3}"));
    call = chat_call(true);
    sim_step_apply(&step, &call);
    assert_string_equal(call.tool_name, "get_weather");
    assert_string_equal(call.tool_args, "{\"city\": 3}");
    assert_false(call.tool_args_raw);
    assert_null(step.tool_arguments); /* moved into the call */
    assert_null(call.content.p);
    call_free(&call);
    /* tool_arguments that are not JSON are flagged raw; a bare null is JSON. */
    step.tool_arguments = bsc_str_dup(BSC_STR("{oops"));
    call = chat_call(true);
    sim_step_apply(&step, &call);
    assert_string_equal(call.tool_args, "{oops");
    assert_true(call.tool_args_raw);
    call_free(&call);
    step.tool_arguments = bsc_str_dup(BSC_STR(" null "));
    call = chat_call(true);
    sim_step_apply(&step, &call);
    assert_false(call.tool_args_raw);
    call_free(&call);
    /* tool_arguments without a tool call change nothing but the content still applies. */
    step.tool_arguments = bsc_str_dup(BSC_STR("{}"));
    call = chat_call(false);
    sim_step_apply(&step, &call);
    assert_null(call.tool_name);
    assert_string_equal(step.tool_arguments, "{}");
    assert_int_equal(call.n_tokens, 4);
    call_free(&call);
    /* Embeddings are untouched. */
    call = chat_call(false);
    call.ep = SIM_EP_EMBED;
    sim_step_apply(&step, &call);
    assert_null(call.content.p);
    assert_int_equal(call.n_tokens, 5);
    call_free(&call);
    sim_step_cleanup(&step);
    /* A step that scripts neither leaves the call as it was. */
    sim_step_init_ok(&step);
    call = chat_call(true);
    sim_step_apply(&step, &call);
    assert_string_equal(call.tool_args, "{\"echo\":\"hi\"}");
    assert_int_equal(call.n_tokens, 5);
    assert_true(call.finish_length);
    call_free(&call);
    sim_step_cleanup(&step);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spec_defaults),
        cmocka_unit_test(spec_full),
        cmocka_unit_test(spec_errors),
        cmocka_unit_test(stream_fault_steps),
        cmocka_unit_test(sequencing_times_and_exhaustion),
        cmocka_unit_test(sequencing_repeat),
        cmocka_unit_test(step_copy_is_deep),
        cmocka_unit_test(models_own_and_star),
        cmocka_unit_test(models_bad_spec_keeps_old),
        cmocka_unit_test(models_max_concurrent),
        cmocka_unit_test(models_counters),
        cmocka_unit_test(request_log_ring),
        cmocka_unit_test(headers_json_lowercase_and_join),
        cmocka_unit_test(control_api),
        cmocka_unit_test(arrival_log),
        cmocka_unit_test(url_decoding),
        cmocka_unit_test(content_fields_parse),
        cmocka_unit_test(content_fields_errors),
        cmocka_unit_test(step_stream_field),
        cmocka_unit_test(content_pieces),
        cmocka_unit_test(args_value),
        cmocka_unit_test(content_precedence_models),
        cmocka_unit_test(content_precedence_call),
        cmocka_unit_test(usage_fields),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
