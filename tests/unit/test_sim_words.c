/* SPDX-License-Identifier: MIT */
/* test_sim_words.c -- bascule-sim's bag-of-words embedding (sim/content.c,
 * docs/internals/sim.md): unit length; case, punctuation, stopwords and simple inflections
 * do not move it (a paraphrase is the same vector); a question about something else is
 * far; a text with no content word is the first axis; only sim-words* models use it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "content.h"

static double cosine(const char *a, const char *b)
{
    float va[SIM_WORDS_DIM], vb[SIM_WORDS_DIM];
    double dot = 0;

    sim_content_embedding_words(bsc_str_cstr(a), va);
    sim_content_embedding_words(bsc_str_cstr(b), vb);
    for (size_t i = 0; i < SIM_WORDS_DIM; i++)
        dot += (double)va[i] * (double)vb[i];
    return dot;
}

static void test_unit_length(void **state)
{
    float v[SIM_WORDS_DIM];
    double sum = 0;

    (void)state;
    sim_content_embedding_words(BSC_STR("How tall is Mount Everest?"), v);
    for (size_t i = 0; i < SIM_WORDS_DIM; i++)
        sum += (double)v[i] * (double)v[i];
    assert_float_equal(sum, 1.0, 1e-5);
    sim_content_embedding_words(BSC_STR("what is it?"), v); /* stopwords only */
    assert_float_equal(v[0], 1.0, 1e-9);
}

static void test_paraphrases_close(void **state)
{
    (void)state;
    assert_true(cosine("What is the capital of France?",
                       "Could you tell me the capitals of france, please") > 0.999);
    assert_true(cosine("how TALL is mount everest", "How tall is Mount Everest?") > 0.999);
    assert_true(cosine("Describe the color of the sky", "describe the sky color") > 0.999);
}

static void test_different_questions_apart(void **state)
{
    (void)state;
    assert_true(cosine("What is the capital of France?", "What is the capital of Germany?") < 0.8);
    assert_true(cosine("How tall is Mount Everest?", "How deep is the Mariana Trench?") < 0.5);
    assert_true(cosine("Who wrote Hamlet?", "What is the boiling point of water?") < 0.5);
}

static void test_model_prefix(void **state)
{
    (void)state;
    assert_true(sim_content_words_model(BSC_STR("sim-words-1")));
    assert_true(sim_content_words_model(BSC_STR("sim-words")));
    assert_false(sim_content_words_model(BSC_STR("text-embedding-3-small")));
    assert_false(sim_content_words_model(BSC_STR("sim-word")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unit_length),
        cmocka_unit_test(test_paraphrases_close),
        cmocka_unit_test(test_different_questions_apart),
        cmocka_unit_test(test_model_prefix),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
