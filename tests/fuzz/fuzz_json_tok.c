/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* (json_tok.c lives in src/core/, which scripts/fuzz links into every target.) */
/* fuzz_json_tok.c -- libFuzzer target for the one JSON grammar (core/json_tok.c). For every
 * input it checks, aborting when one breaks:
 *   - the tokens stay inside the input, in order (each starts at or after the last one's end,
 *     only whitespace between them), each token's bytes are what its kind says ('{', a
 *     number strtod reads whole, a quoted string whose <raw> is inside its quotes, ...), and
 *     the depth rises on an opener and falls on its closer, never past the bound;
 *   - the stream ends in END (after a complete value, nothing but whitespace left) or ERROR
 *     (a message, an offset inside the input at or after the last token), and stays there;
 *   - the tokens alone, whitespace dropped, are a document the tokenizer reads back to the
 *     same kinds and raw bytes (the grammar does not depend on whitespace);
 *   - a document valid at depth d is valid at every deeper bound, and refused only for its
 *     depth ("nested too deep") at shallower ones;
 *   - after every token inside a container (so from every state a skip may start in), plain
 *     and quiet, bsc_json_tok_skip ends where reading token by token meets the matching
 *     closer or the error, with the same token (every field) and tokenizer state;
 *   - at every '[', bsc_json_tok_skip_objects stops where reading token by token with the
 *     element rule beside it (each element's first byte is '{') stops, the same way;
 *   - quiet reading (bsc_json_tok_quiet) hands out the same tokens but ':' and the ','
 *     between members, and ends the same way;
 *   - member reading (bsc_json_tok_member) hands out quiet reading's tokens but each name,
 *     which comes aside with the token after it (field for field, the error included), and
 *     leaves the tokenizer as quiet reading does after that token; a skip from each of its
 *     stops is compared as above;
 *   - bsc_json_check agrees with it: same verdict, offset and message;
 *   - every string's decoded view (bsc_json_unescape) is well-formed UTF-8, or is refused for
 *     a lone surrogate at a backslash of the raw bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json_check.h"
#include "core/json_tok.h"
#include "core/utf8.h"

#define DEPTH 16
#define MAX_TOKENS 4096

static void die(const char *what)
{
    fprintf(stderr, "invariant broken: %s\n", what);
    abort();
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The token's bytes agree with its kind. */
static void check_token(const uint8_t *d, size_t n, const struct bsc_jtok *t)
{
    static const char single[BSC_JTOK_COUNT] = {
        [BSC_JTOK_OBJ_OPEN] = '{', [BSC_JTOK_OBJ_CLOSE] = '}', [BSC_JTOK_ARR_OPEN] = '[',
        [BSC_JTOK_ARR_CLOSE] = ']', [BSC_JTOK_COLON] = ':',    [BSC_JTOK_COMMA] = ','};
    size_t len = t->end - t->off;

    if (t->end > n || t->off >= t->end)
        die("a token outside the input or empty");
    if (single[t->kind] && (len != 1 || d[t->off] != (uint8_t)single[t->kind]))
        die("a punctuation token of the wrong byte");
    if (t->kind == BSC_JTOK_NAME || t->kind == BSC_JTOK_STRING) {
        if (d[t->off] != '"' || d[t->end - 1] != '"' || len < 2 ||
            t->raw.p != (const char *)d + t->off + 1 || t->raw.len != len - 2)
            die("a string token not its quotes and contents");
        if (t->escaped != (memchr(t->raw.p, '\\', t->raw.len) != NULL))
            die("escaped flag wrong");
        return;
    }
    if (t->raw.p != (const char *)d + t->off || t->raw.len != len)
        die("raw view not the token's bytes");
    if (t->kind == BSC_JTOK_TRUE && !(len == 4 && memcmp(d + t->off, "true", 4) == 0))
        die("true");
    if (t->kind == BSC_JTOK_FALSE && !(len == 5 && memcmp(d + t->off, "false", 5) == 0))
        die("false");
    if (t->kind == BSC_JTOK_NULL && !(len == 4 && memcmp(d + t->off, "null", 4) == 0))
        die("null");
    if (t->kind == BSC_JTOK_NUMBER) {
        char buf[64], *endp;
        if (len < sizeof(buf)) {
            memcpy(buf, d + t->off, len);
            buf[len] = '\0';
            (void)strtod(buf, &endp);
            if ((size_t)(endp - buf) != len)
                die("a number strtod does not read whole");
        }
    }
}

static void check_decoded(const struct bsc_jtok *t)
{
    struct bsc_buf b;
    size_t bad = SIZE_MAX;
    enum bsc_err err;

    bsc_buf_init(&b, t->raw.len + 16);
    err = bsc_json_unescape(t->raw, &b, &bad);
    if (err == BSC_OK && !bsc_utf8_valid(b.p ? b.p : "", b.len))
        die("a decoded string that is not UTF-8");
    if (err == BSC_EPARSE &&
        (bad + 1 >= t->raw.len || t->raw.p[bad] != '\\' || t->raw.p[bad + 1] != 'u'))
        die("a refused escape not at a \\u");
    if (err != BSC_OK && err != BSC_EPARSE)
        die("unescape failed within its bound");
    bsc_buf_cleanup(&b);
}

/* After a token inside a container read by <t>: bsc_json_tok_skip on a copy ends exactly
 * where reading on token by token (another copy) meets the matching closer or the error --
 * same token, every field, same tokenizer state. */
static void check_skip(const struct bsc_json_tok *t)
{
    struct bsc_json_tok a = *t, b = *t;
    struct bsc_jtok ta, tb;
    enum bsc_jtok_kind ka = bsc_json_tok_skip(&a, &ta), kb;
    unsigned stop = t->depth - 1;

    do {
        kb = bsc_json_tok_next(&b, &tb);
    } while (kb != BSC_JTOK_ERROR && kb != BSC_JTOK_END &&
             !((kb == BSC_JTOK_OBJ_CLOSE || kb == BSC_JTOK_ARR_CLOSE) && b.depth == stop));
    if (ka != kb || ta.off != tb.off || ta.end != tb.end || ta.depth != tb.depth ||
        ta.raw.p != tb.raw.p || ta.raw.len != tb.raw.len || ta.escaped != tb.escaped ||
        a.i != b.i || a.state != b.state || a.depth != b.depth || a.what != b.what ||
        a.err_off != b.err_off || a.quiet != b.quiet)
        die("bsc_json_tok_skip differs from reading token by token");
}

/* At a '[' just read by <t>: bsc_json_tok_skip_objects against reading on token by token
 * with the element rule beside it (each element's first byte must be '{'; the end of the
 * document is the grammar's): the same stop, offset and message. */
static void check_skip_objects(const uint8_t *d, size_t n, const struct bsc_json_tok *t)
{
    struct bsc_json_tok a = *t, b = *t;
    struct bsc_jtok ta, tb;
    bool element, element_next = true;
    enum bsc_jtok_kind ka = bsc_json_tok_skip_objects(&a, &ta, &element), kb;
    unsigned stop = t->depth - 1;

    for (;;) {
        kb = bsc_json_tok_next(&b, &tb);
        if (element_next && kb != BSC_JTOK_ARR_CLOSE && tb.off < n && d[tb.off] != '{') {
            if (ka != BSC_JTOK_ERROR || !element || ta.off != tb.off || a.err_off != tb.off ||
                strcmp(a.what, "an array element that must be an object") != 0)
                die("bsc_json_tok_skip_objects misses an element that is not an object");
            return;
        }
        element_next = kb == BSC_JTOK_COMMA && b.depth == stop + 1;
        if (kb == BSC_JTOK_ERROR || kb == BSC_JTOK_END ||
            ((kb == BSC_JTOK_OBJ_CLOSE || kb == BSC_JTOK_ARR_CLOSE) && b.depth == stop))
            break;
    }
    if (element || ka != kb || ta.off != tb.off || ta.end != tb.end || ta.depth != tb.depth ||
        a.i != b.i || a.state != b.state || a.depth != b.depth || a.what != b.what ||
        a.err_off != b.err_off)
        die("bsc_json_tok_skip_objects differs from reading token by token");
}

/* Quiet reading hands out the plain reading's tokens but ':' and the ',' inside objects,
 * field for field, and ends the same way. */
static void check_quiet(const uint8_t *d, size_t n, unsigned depth)
{
    static bool in_object[BSC_JSON_MAX_DEPTH + 1];
    struct bsc_json_tok plain, quiet;
    struct bsc_jtok tp, tq;
    enum bsc_jtok_kind kp, kq;

    bsc_json_tok_init(&plain, bsc_str_make((const char *)d, n), depth);
    bsc_json_tok_init(&quiet, bsc_str_make((const char *)d, n), depth);
    bsc_json_tok_quiet(&quiet);
    do {
        do {
            kp = bsc_json_tok_next(&plain, &tp);
            if (kp == BSC_JTOK_OBJ_OPEN || kp == BSC_JTOK_ARR_OPEN)
                in_object[tp.depth + 1] = kp == BSC_JTOK_OBJ_OPEN;
        } while (kp == BSC_JTOK_COLON || (kp == BSC_JTOK_COMMA && in_object[tp.depth]));
        kq = bsc_json_tok_next(&quiet, &tq);
        if (kq != BSC_JTOK_END && kq != BSC_JTOK_ERROR && quiet.depth > 0)
            check_skip(&quiet);
        if (kp != kq || tp.off != tq.off || tp.end != tq.end || tp.depth != tq.depth ||
            tp.raw.p != tq.raw.p || tp.raw.len != tq.raw.len || tp.escaped != tq.escaped)
            die("quiet reading differs from the plain one");
    } while (kp != BSC_JTOK_END && kp != BSC_JTOK_ERROR);
    if (plain.what != quiet.what || plain.err_off != quiet.err_off)
        die("quiet reading ends elsewhere");
}

static bool same_token(const struct bsc_jtok *a, const struct bsc_jtok *b)
{
    return a->kind == b->kind && a->off == b->off && a->end == b->end && a->depth == b->depth &&
           a->raw.p == b->raw.p && a->raw.len == b->raw.len && a->escaped == b->escaped;
}

/* Member reading against quiet reading: a NAME of the quiet stream comes aside (in *name)
 * with the token after it; every other token as it is; the tokenizers the same after each. */
static void check_member(const uint8_t *d, size_t n, unsigned depth)
{
    struct bsc_json_tok quiet, member;
    struct bsc_jtok tq, tm, name, qname;
    enum bsc_jtok_kind kq, km;
    bool named;

    bsc_json_tok_init(&quiet, bsc_str_make((const char *)d, n), depth);
    bsc_json_tok_quiet(&quiet);
    bsc_json_tok_init(&member, bsc_str_make((const char *)d, n), depth);
    do {
        kq = bsc_json_tok_next(&quiet, &tq);
        named = kq == BSC_JTOK_NAME;
        if (named) {
            qname = tq;
            kq = bsc_json_tok_next(&quiet, &tq);
        }
        km = bsc_json_tok_member(&member, &tm, &name);
        if (named != (name.kind == BSC_JTOK_NAME) || (named && !same_token(&qname, &name)))
            die("member reading hands out another name");
        if (km != kq || !same_token(&tq, &tm))
            die("member reading differs from the quiet one");
        if (member.i != quiet.i || member.state != quiet.state ||
            member.depth != quiet.depth || member.what != quiet.what ||
            member.err_off != quiet.err_off)
            die("member reading leaves the tokenizer elsewhere");
        if (km != BSC_JTOK_END && km != BSC_JTOK_ERROR && member.depth > 0)
            check_skip(&member);
    } while (kq != BSC_JTOK_END && kq != BSC_JTOK_ERROR);
}

/* Tokenizes <d>; the tokens in <toks> (up to MAX_TOKENS). With <skips>, a skip is compared
 * after every token inside a container (check_skip). Returns the final kind. */
static enum bsc_jtok_kind walk(const uint8_t *d, size_t n, unsigned depth, struct bsc_jtok *toks,
                               size_t *n_toks, struct bsc_json_tok *t, bool skips)
{
    size_t prev_end = 0;
    unsigned level = 0;
    enum bsc_jtok_kind k;
    struct bsc_jtok tok;

    *n_toks = 0;
    bsc_json_tok_init(t, bsc_str_make((const char *)d, n), depth);
    while ((k = bsc_json_tok_next(t, &tok)) != BSC_JTOK_END && k != BSC_JTOK_ERROR) {
        check_token(d, n, &tok);
        for (size_t i = prev_end; i < tok.off; i++)
            if (!is_ws(d[i]))
                die("a non-whitespace byte between tokens");
        if (tok.kind == BSC_JTOK_OBJ_CLOSE || tok.kind == BSC_JTOK_ARR_CLOSE)
            level--;
        if (tok.depth != level)
            die("depth does not follow the containers");
        if (tok.kind == BSC_JTOK_OBJ_OPEN || tok.kind == BSC_JTOK_ARR_OPEN) {
            if (++level > depth)
                die("deeper than the bound");
        }
        if (skips && t->depth > 0)
            check_skip(t);
        if (skips && tok.kind == BSC_JTOK_ARR_OPEN)
            check_skip_objects(d, n, t);
        if (tok.kind == BSC_JTOK_NAME || tok.kind == BSC_JTOK_STRING)
            check_decoded(&tok);
        prev_end = tok.end;
        if (*n_toks < MAX_TOKENS)
            toks[(*n_toks)++] = tok;
    }
    if (k == BSC_JTOK_END) {
        if (level)
            die("END with containers open");
        for (size_t i = prev_end; i < n; i++)
            if (!is_ws(d[i]))
                die("END before the end");
    } else if (!t->what || t->err_off > n || t->err_off < prev_end) {
        die("an error without a message or outside the input");
    }
    if (bsc_json_tok_next(t, &tok) != k)
        die("END/ERROR not sticky");
    return k;
}

/* The tokens' bytes alone read back to the same tokens. */
static void check_compact(const uint8_t *d, const struct bsc_jtok *toks, size_t n_toks)
{
    struct bsc_jtok *again = malloc(MAX_TOKENS * sizeof(*again));
    struct bsc_json_tok t;
    struct bsc_buf b;
    size_t n_again;

    if (!again)
        return;
    bsc_buf_init(&b, SIZE_MAX);
    for (size_t i = 0; i < n_toks; i++)
        if (bsc_buf_append(&b, d + toks[i].off, toks[i].end - toks[i].off)) {
            free(again);
            bsc_buf_cleanup(&b);
            return;
        }
    if (walk((const uint8_t *)(b.p ? b.p : ""), b.len, DEPTH, again, &n_again, &t, false) !=
        BSC_JTOK_END)
        die("the compact form of a valid document is refused");
    if (n_again != n_toks)
        die("the compact form has other tokens");
    for (size_t i = 0; i < n_toks; i++)
        if (again[i].kind != toks[i].kind || !bsc_str_eq(again[i].raw, toks[i].raw))
            die("the compact form reads otherwise");
    bsc_buf_cleanup(&b);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static struct bsc_jtok toks[MAX_TOKENS], other[MAX_TOKENS];
    struct bsc_json_tok t, t2;
    struct bsc_json_error e;
    enum bsc_jtok_kind k;
    size_t n_toks, n_other;
    bool ok;

    k = walk(d, n, DEPTH, toks, &n_toks, &t, true);
    check_quiet(d, n, DEPTH);
    check_member(d, n, DEPTH);
    ok = bsc_json_check(bsc_str_make((const char *)d, n), DEPTH, &e);
    if (ok != (k == BSC_JTOK_END))
        die("bsc_json_check disagrees");
    if (!ok && (e.offset != t.err_off || strcmp(e.what, t.what) != 0))
        die("bsc_json_check fails elsewhere");
    if (k == BSC_JTOK_END) {
        if (n_toks < MAX_TOKENS)
            check_compact(d, toks, n_toks);
        if (walk(d, n, DEPTH + 1, other, &n_other, &t2, false) != BSC_JTOK_END)
            die("valid at one depth, refused at a deeper one");
    } else if (walk(d, n, BSC_JSON_MAX_DEPTH, other, &n_other, &t2, true) == BSC_JTOK_END &&
               strcmp(t.what, "nested too deep") != 0) {
        die("refused at one depth for something else than its depth, valid deeper");
    }
    return 0;
}
