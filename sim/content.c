/* SPDX-License-Identifier: MIT */
/* content.c -- deterministic completion text, tool arguments and embeddings for
 * bascule-sim. The token list mixes ASCII with 2-, 3- and 4-byte UTF-8 so every relay
 * that splits, buffers or re-encodes text is exercised. It knows no wire format.
 * See docs/internals/sim.md. */
#include "content.h"

#include <math.h>
#include <string.h>

#include "core/compat.h"
#include "core/utf8.h"

/* Tokens 0..11 are the default answer. The source is UTF-8 and so is every entry (the unit
 * test checks): 2-byte (é ö ü ï), 3-byte (✓) and 4-byte (🚀) characters on purpose. */
static const char *const token_list[] = {
    "Hello", " héllo",     " wörld", "!",      " This", " is",    " bascule", "-sim",
    " ✓",    " streaming", " 🚀",    " tokens", " über", " café", " naïve",   ".",
};

struct bsc_str sim_content_token(uint32_t i)
{
    return bsc_str_cstr(token_list[i % BSC_ARRAY_LEN(token_list)]);
}

enum bsc_err sim_content_text(uint32_t n, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    for (uint32_t i = 0; i < n && !err; i++)
        err = bsc_buf_append_str(out, sim_content_token(i));
    return err;
}

/* ---- scripted text ---- */

uint32_t sim_content_pieces(struct bsc_str text)
{
    size_t n = (text.len + SIM_TEXT_PIECE_BYTES - 1) / SIM_TEXT_PIECE_BYTES;

    if (n == 0)
        return 1;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* The first character boundary at or after <off> (or <s>.len): continuation bytes are
 * skipped. In valid UTF-8 that is at most 3 of them. */
static size_t char_start(struct bsc_str s, size_t off)
{
    while (off < s.len && ((unsigned char)s.p[off] & 0xc0) == 0x80)
        off++;
    return off < s.len ? off : s.len;
}

struct bsc_str sim_content_piece(struct bsc_str text, uint32_t i)
{
    size_t from = (size_t)i * SIM_TEXT_PIECE_BYTES, to;

    if (from >= text.len)
        return bsc_str_make(text.p ? text.p + text.len : text.p, 0);
    to = from + SIM_TEXT_PIECE_BYTES;
    from = char_start(text, from);
    to = char_start(text, to);
    return bsc_str_make(text.p + from, to - from);
}

struct bsc_str sim_content_chunk(struct bsc_str scripted, uint32_t i)
{
    return scripted.p ? sim_content_piece(scripted, i) : sim_content_token(i);
}

enum bsc_err sim_content_answer(struct bsc_str scripted, uint32_t n, struct bsc_buf *out)
{
    return scripted.p ? bsc_buf_append_str(out, scripted) : sim_content_text(n, out);
}

enum bsc_err sim_content_args_value(struct bsc_str args, bool as_string, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;
    size_t from = 0;

    if (as_string)
        return bsc_buf_append_json_str(out, args);
    for (size_t i = 0; i <= args.len && !err; i++) {
        if (i < args.len && args.p[i] != '\r' && args.p[i] != '\n')
            continue;
        err = bsc_buf_append(out, args.p + from, i - from);
        if (!err && i < args.len)
            err = bsc_buf_append_char(out, ' ');
        from = i + 1;
    }
    return err;
}

uint32_t sim_content_prompt_tokens(size_t text_bytes, size_t messages)
{
    uint64_t t = (text_bytes + 3) / 4 + 4 * (uint64_t)messages;

    if (t == 0)
        return 1;
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* ---- UTF-8 ---- */

size_t sim_utf8_char_len(struct bsc_str s)
{
    return s.len ? bsc_utf8_seq_len((const unsigned char *)s.p, s.len) : 0;
}

size_t sim_utf8_piece(struct bsc_str s, size_t max_bytes)
{
    size_t off = 0;

    while (off < s.len) {
        size_t n = sim_utf8_char_len(bsc_str_make(s.p + off, s.len - off));
        if (n == 0) /* an ill-formed byte travels alone, so other pieces stay valid */
            return off ? off : 1;
        if (off > 0 && off + n > max_bytes)
            break;
        off += n;
        if (off >= max_bytes)
            break;
    }
    return off;
}

size_t sim_utf8_piece_count(struct bsc_str s, size_t max_bytes)
{
    size_t n = 0;

    while (s.len) {
        size_t k = sim_utf8_piece(s, max_bytes);
        s.p += k;
        s.len -= k;
        n++;
    }
    return n;
}

struct bsc_str sim_utf8_piece_at(struct bsc_str s, size_t max_bytes, size_t i)
{
    for (;;) {
        size_t k = sim_utf8_piece(s, max_bytes);
        if (i-- == 0 || k == 0)
            return bsc_str_make(s.p, k);
        s.p += k;
        s.len -= k;
    }
}

/* ---- tool arguments ---- */

enum bsc_err sim_content_tool_args(struct bsc_str user_text, struct bsc_buf *out)
{
    struct bsc_buf prefix;
    size_t off = 0;
    enum bsc_err err = BSC_OK;

    bsc_buf_init(&prefix, SIM_ECHO_CHARS * 4);
    for (uint32_t chars = 0; chars < SIM_ECHO_CHARS && off < user_text.len && !err; chars++) {
        struct bsc_str rest = bsc_str_make(user_text.p + off, user_text.len - off);
        size_t n = sim_utf8_char_len(rest);

        if (n == 0) {
            err = bsc_buf_append(&prefix, "\xef\xbf\xbd", 3); /* U+FFFD */
            off += 1;
        } else {
            err = bsc_buf_append(&prefix, rest.p, n);
            off += n;
        }
    }
    if (!err)
        err = bsc_buf_append_cstr(out, "{\"echo\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_buf_str(&prefix));
    if (!err)
        err = bsc_buf_append_char(out, '}');
    bsc_buf_cleanup(&prefix);
    return err;
}

enum bsc_err sim_content_json_answer(struct bsc_buf *out)
{
    struct bsc_buf text;
    enum bsc_err err;

    bsc_buf_init(&text, 4096);
    err = sim_content_text(SIM_TOKENS_DEFAULT, &text);
    if (!err)
        err = bsc_buf_append_cstr(out, "{\"answer\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_buf_str(&text));
    if (!err)
        err = bsc_buf_append_char(out, '}');
    bsc_buf_cleanup(&text);
    return err;
}

/* ---- embeddings ---- */

/* FNV-1a over <s>, started from a basis perturbed by <salt>, then a final avalanche so
 * nearby salts give unrelated values. */
static uint64_t hash_salted(struct bsc_str s, uint32_t salt)
{
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)salt * 0x9e3779b97f4a7c15ull);

    for (size_t i = 0; i < s.len; i++) {
        h ^= (unsigned char)s.p[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

void sim_content_embedding(struct bsc_str input, float out[SIM_EMBED_DIM])
{
    double sum = 0;

    for (uint32_t k = 0; k < SIM_EMBED_DIM; k++) {
        /* 53 high bits to [0,1), then to [-1,1). */
        double v = (double)(hash_salted(input, k) >> 11) * (1.0 / 9007199254740992.0);
        out[k] = (float)(2.0 * v - 1.0);
        sum += (double)out[k] * (double)out[k];
    }
    if (sum <= 0) {
        out[0] = 1.0f;
        return;
    }
    sum = sqrt(sum);
    for (uint32_t k = 0; k < SIM_EMBED_DIM; k++)
        out[k] = (float)((double)out[k] / sum);
}

/* ---- the bag-of-words embedding ---- */

/* Words that carry no topic: articles, pronouns, auxiliaries, question words, courtesy. */
static const char *const stopwords[] = {
    "a",    "an",    "the",   "of",   "to",    "in",    "on",   "at",    "for",  "and",
    "or",   "is",    "are",   "was",  "were",  "be",    "been", "do",    "does", "did",
    "what", "which", "who",   "whom", "how",   "why",   "when", "where", "me",  "my",
    "i",    "you",   "your",  "we",   "us",    "it",    "its",  "this",  "that", "these",
    "those", "can",  "could", "would", "will", "shall", "should", "please", "tell", "say",
    "give", "know",  "about", "with", "by",    "from",  "as",   "there", "here", "s",
};

bool sim_content_words_model(struct bsc_str model)
{
    size_t n = sizeof(SIM_WORDS_PREFIX) - 1;

    return model.len >= n && memcmp(model.p, SIM_WORDS_PREFIX, n) == 0;
}

static bool is_stopword(const char *w, size_t len)
{
    for (size_t i = 0; i < sizeof(stopwords) / sizeof(stopwords[0]); i++)
        if (strlen(stopwords[i]) == len && memcmp(stopwords[i], w, len) == 0)
            return true;
    return false;
}

static bool ends_with(const char *w, size_t len, const char *suf)
{
    size_t n = strlen(suf);

    return len >= n && memcmp(w + len - n, suf, n) == 0;
}

/* A crude stemmer: the length of <w> without one inflection, leaving at least 3 bytes. */
static size_t stem(const char *w, size_t len)
{
    static const char *const suffixes[] = {"ing", "ies", "ed", "es", "ly", "s"};

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        size_t n = strlen(suffixes[i]);
        if (len >= n + 3 && ends_with(w, len, suffixes[i]) && !ends_with(w, len, "ss"))
            return len - n;
    }
    return len;
}

static void add_word(const char *w, size_t len, float out[SIM_WORDS_DIM])
{
    uint64_t h;

    if (len == 0 || is_stopword(w, len))
        return;
    len = stem(w, len);
    h = hash_salted(bsc_str_make(w, len), 0xb0b);
    out[h % SIM_WORDS_DIM] += (h >> 32) & 1 ? 1.0f : -1.0f;
}

void sim_content_embedding_words(struct bsc_str input, float out[SIM_WORDS_DIM])
{
    char word[64];
    size_t n = 0;
    double sum = 0;

    memset(out, 0, SIM_WORDS_DIM * sizeof(*out));
    for (size_t i = 0; i <= input.len; i++) {
        unsigned char ch = i < input.len ? (unsigned char)input.p[i] : ' ';
        bool in_word = ch >= 0x80 || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                       (ch >= 'A' && ch <= 'Z');
        if (in_word) {
            if (n < sizeof(word)) /* a longer word is its first 64 bytes */
                word[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
            continue;
        }
        add_word(word, n, out);
        n = 0;
    }
    for (uint32_t k = 0; k < SIM_WORDS_DIM; k++)
        sum += (double)out[k] * (double)out[k];
    if (sum <= 0) {
        out[0] = 1.0f;
        return;
    }
    sum = sqrt(sum);
    for (uint32_t k = 0; k < SIM_WORDS_DIM; k++)
        out[k] = (float)((double)out[k] / sum);
}
