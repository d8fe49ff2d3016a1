/* SPDX-License-Identifier: MIT */
/* content.h -- the deterministic things bascule-sim says: completion text made of a fixed
 * token list (with multi-byte UTF-8 tokens on purpose), tool-call arguments echoing the
 * user, embedding vectors hashed from the input, and the UTF-8 helpers they need.
 * Pure: no I/O, no clock, no globals; every dialect renders from these.
 * See docs/internals/sim.md. */
#ifndef BSC_SIM_CONTENT_H
#define BSC_SIM_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define SIM_TOKENS_DEFAULT   12u   /* completion tokens when neither script nor client says */
#define SIM_TOKENS_MAX       4096u /* upper bound of a model's "tokens" */
#define SIM_EMBED_DIM        8u    /* floats per embedding vector */
#define SIM_ECHO_CHARS       32u   /* code points of the user message echoed in tool args */
#define SIM_ARG_PIECE_BYTES  8u    /* max bytes of one streamed tool-argument fragment */
#define SIM_TEXT_PIECE_BYTES 4u    /* scripted text streams as the characters starting in
                                      each run of this many bytes (1..4 characters) */

/* Returns the <i>-th completion token (the fixed list repeats past its end). Borrowed from
 * static storage; always valid UTF-8, never empty. */
struct bsc_str sim_content_token(uint32_t i);

/* Appends tokens 0..<n>-1 to <out>. BSC_ELIMIT/BSC_ENOMEM leave <out> partly appended. */
enum bsc_err sim_content_text(uint32_t n, struct bsc_buf *out);

/* Scripted text (a step's "content") is streamed in pieces: piece <i> is the characters
 * that start in bytes [4i, 4i+4), so each piece of valid UTF-8 holds 1 to 4 whole
 * characters and the pieces concatenate to exactly <text>. Found in constant time (a
 * stream of any length costs linear time). sim_content_pieces() is how many there are:
 * ceil(len / 4), at least 1 (an empty text is one empty piece). */
uint32_t sim_content_pieces(struct bsc_str text);
struct bsc_str sim_content_piece(struct bsc_str text, uint32_t i);

/* What a dialect renders, generated or scripted: with <scripted>.p NULL, token <i> and
 * tokens 0..<n>-1 (sim_content_token, sim_content_text); else piece <i> of <scripted> and
 * <scripted> whole (<n> is then its piece count and ignored). */
struct bsc_str sim_content_chunk(struct bsc_str scripted, uint32_t i);
enum bsc_err sim_content_answer(struct bsc_str scripted, uint32_t n, struct bsc_buf *out);

/* Appends tool-call arguments as a JSON value, for wires that carry them as one (an
 * Anthropic tool_use "input", a Gemini functionCall "args"): JSON text as it is, except
 * that CR and LF (whitespace outside strings in valid JSON) become spaces, so an SSE
 * data line stays one line; with <as_string> (text that is not JSON), a JSON string. */
enum bsc_err sim_content_args_value(struct bsc_str args, bool as_string, struct bsc_buf *out);

/* Estimated prompt tokens for <text_bytes> bytes of message text in <messages> messages:
 * ceil(bytes / 4) + 4 per message, at least 1. */
uint32_t sim_content_prompt_tokens(size_t text_bytes, size_t messages);

/* Appends the tool-call arguments for <user_text>: {"echo":"<first SIM_ECHO_CHARS code
 * points>"} as compact JSON text (not quoted as a string). Invalid UTF-8 bytes in the
 * prefix are replaced by U+FFFD so the result is always valid UTF-8 JSON. */
enum bsc_err sim_content_tool_args(struct bsc_str user_text, struct bsc_buf *out);

/* Appends the answer to a request that asks for a JSON object without a schema (OpenAI
 * json_object, Gemini's application/json alone): {"answer":"<the default sentence>"}, the
 * first SIM_TOKENS_DEFAULT tokens as the value. */
enum bsc_err sim_content_json_answer(struct bsc_buf *out);

/* Fills <out> with a unit-length vector derived only from the bytes of <input>. */
void sim_content_embedding(struct bsc_str input, float out[SIM_EMBED_DIM]);

/* The bag-of-words embedding, for models whose id starts with SIM_WORDS_PREFIX: texts
 * that differ in case, punctuation, stopwords or simple inflections ("capitals",
 * "capital") map to the same vector, texts about other things to distant ones. */
#define SIM_WORDS_PREFIX "sim-words"
#define SIM_WORDS_DIM    256u
bool sim_content_words_model(struct bsc_str model);
/* Fills <out> with the unit vector of <input>'s word stems hashed into SIM_WORDS_DIM signed
 * buckets (docs/internals/sim.md); a text with no content word is the first axis. */
void sim_content_embedding_words(struct bsc_str input, float out[SIM_WORDS_DIM]);


/* Length of the well-formed code point at the start of <s>, or 0 when <s> is empty or
 * starts with an ill-formed sequence. */
size_t sim_utf8_char_len(struct bsc_str s);

/* Byte length of the longest prefix of <s> of at most <max_bytes> bytes that ends on a
 * code-point boundary, but at least one code point, so a loop over pieces always
 * advances. An ill-formed byte is a piece of its own: every other piece of valid text is
 * valid. 0 only when <s> is empty. */
size_t sim_utf8_piece(struct bsc_str s, size_t max_bytes);

/* How many sim_utf8_piece() pieces <s> splits into, and the <i>-th of them (empty past the
 * end): what a streamed tool call sends as its argument fragments. */
size_t sim_utf8_piece_count(struct bsc_str s, size_t max_bytes);
struct bsc_str sim_utf8_piece_at(struct bsc_str s, size_t max_bytes, size_t i);

#endif
