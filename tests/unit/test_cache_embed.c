/* SPDX-License-Identifier: MIT */
/* test_cache_embed.c -- router/cache_embed.c through the request harness: a semantic cache
 * route embeds the last user message with the sim's bag-of-words model (sim-words-*), so a
 * paraphrase is answered in ADMIT (ADMIT -> DONE, no attempt) while another question, or the
 * same question under another system prompt, goes upstream; an embeddings target that fails
 * is a miss with a normal answer; a request with no user message is not keyed (bypass). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/req_harness.h"

#define SEMANTIC                                                                          \
    RH_PROVIDER                                                                           \
    "targets:\n"                                                                          \
    "  a: { provider: sim, model: a }\n"                                                  \
    "  emb: { provider: sim, model: sim-words-1 }\n"                                      \
    "  bad: { provider: sim, model: sim-words-bad }\n"                                    \
    "routes:\n"                                                                           \
    "  r: { primary: [a], cache: { mode: semantic, embeddings_target: emb } }\n"          \
    "  f: { primary: [a], cache: { mode: semantic, embeddings_target: bad } }\n"

static void ask(struct rh *h, const char *id, const char *route, const char *system,
                const char *question, struct rh_resp *out)
{
    char body[1024];

    if (system)
        snprintf(body, sizeof(body),
                 "{\"model\":\"%s\",\"messages\":[{\"role\":\"system\",\"content\":\"%s\"},"
                 "{\"role\":\"user\",\"content\":\"%s\"}]}",
                 route, system, question);
    else
        snprintf(body, sizeof(body),
                 "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", route,
                 question);
    rh_post(h, "/v1/chat/completions", id, NULL, body, out);
}

static void paraphrase_hits_other_question_misses(void **state)
{
    struct rh *h = rh_start(SEMANTIC, NULL);
    struct rh_resp one, two, three;

    (void)state;
    ask(h, "s-1", "r", NULL, "What is the capital of France?", &one);
    ask(h, "s-2", "r", NULL, "Could you tell me the capitals of france, please", &two);
    ask(h, "s-3", "r", NULL, "How tall is Mount Everest?", &three);
    assert_int_equal(one.status, 200);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "hit");
    rh_assert_path("s-2", "admit done");
    assert_string_equal(strstr(one.body, "\"choices\""), strstr(two.body, "\"choices\""));
    rh_assert_header(&three, "x-bascule-cache", "miss");
    rh_assert_path("s-3", "admit pick attempt reply done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_resp_free(&three);
    rh_stop(h);
}

/* The context is exact: the same question under another system prompt is another entry. */
static void other_system_prompt_misses(void **state)
{
    struct rh *h = rh_start(SEMANTIC, NULL);
    struct rh_resp one, two;

    (void)state;
    ask(h, "p-1", "r", "You are terse.", "What is the capital of France?", &one);
    ask(h, "p-2", "r", "You are verbose.", "What is the capital of France?", &two);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    rh_assert_header(&two, "x-bascule-cache", "miss");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* An embeddings target that fails: a miss, the answer made upstream, nothing stored. */
static void embedding_failure_is_a_miss(void **state)
{
    struct rh *h = rh_start(SEMANTIC, "{\"models\":{\"sim-words-bad\":{\"script\":[{\"action\":"
                                      "\"status\",\"status\":503}],\"repeat\":true}}}");
    struct rh_resp one, two;

    (void)state;
    ask(h, "f-1", "f", NULL, "What is the capital of France?", &one);
    ask(h, "f-2", "f", NULL, "What is the capital of France?", &two);
    assert_int_equal(one.status, 200);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "miss");
    rh_assert_path("f-2", "admit pick attempt reply done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* No user message to embed: not keyed, never looked up nor stored. */
static void no_user_message_bypasses(void **state)
{
    struct rh *h = rh_start(SEMANTIC, NULL);
    struct rh_resp one;

    (void)state;
    rh_post(h, "/v1/chat/completions", "b-1", NULL,
            "{\"model\":\"r\",\"messages\":[{\"role\":\"system\",\"content\":\"only this\"}]}",
            &one);
    assert_int_equal(one.status, 200);
    rh_assert_header(&one, "x-bascule-cache", "bypass");
    rh_resp_free(&one);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(paraphrase_hits_other_question_misses),
        RH_TEST(other_system_prompt_misses),
        RH_TEST(embedding_failure_is_a_miss),
        RH_TEST(no_user_message_bypasses),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
