/* SPDX-License-Identifier: MIT */
/* access_log.c -- the access and attempt lines, each built at one cursor in the thread's
 * log batch or its scratch buffer. */
#include "router/access_log.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__SSE2__) && defined(__x86_64__)
#define ACCESS_LOG_SSE2 1 /* put_plain moves 8 bytes into a vector: a 64-bit target's */
#include <emmintrin.h>
#endif

#include "core/buf.h"
#include "core/compat.h"
#include "core/clock.h"
#include "core/log.h"
#include "router/req_state.h"

/* The most bytes a line takes: a field that would pass it is left out. */
#define ACCESS_LINE_MAX 16384

/* A line is built in place in this thread's log batch (core/log.h) when it fits there, else
 * in this thread's scratch buffer and then handed to bsc_log_line: no allocation per line
 * once warm, and, in the batch, no copy of the line either. */
static _Thread_local struct bsc_buf scratch = {NULL, 0, 0, ACCESS_LINE_MAX};

/* A line under construction: a cursor into the storage of the batch or the scratch buffer.
 * Room is checked once per field (a key and its value together), not once per append, and
 * numbers are written at the cursor: with two lines a proxied request this was 8,000
 * instructions of appends, length checks and copies through a digits buffer
 * (docs/internals/request-cost.md). A field that cannot get room (ACCESS_LINE_MAX, or
 * memory) is left out whole. */
struct line {
    struct bsc_buf *b;
    char *o;      /* where the next byte goes; NULL when the buffer has no storage */
    char *end;    /* the end of the storage (the terminator's byte is past it); in the batch,
                   * of the line's room there */
    size_t start; /* where the line starts in <b>: the batch's <len>, 0 in scratch */
    bool in_batch;
    bool lost; /* it could not move from the batch to scratch (memory): not written */
};

/* The line's room in the batch ends at ACCESS_LINE_MAX or where the line and its newline
 * would no longer fit below the batch's maximum, whichever comes first: bsc_log_line would
 * write the batch out first past that. */
static char *batch_room_end(const struct bsc_buf *batch)
{
    size_t left = batch->max - 1 - batch->len;

    return batch->p + batch->len + (left < ACCESS_LINE_MAX ? left : ACCESS_LINE_MAX);
}

/* The batch holds no more of the line (or the line no more bytes: the scratch buffer says
 * which): the line so far moves to the scratch buffer and goes on there, to be handed to
 * bsc_log_line at its end as a line built there always is. The batch keeps its <len>: the
 * line was never part of it. */
static bool leave_batch(struct line *l)
{
    const char *from = l->b->p + l->start;
    size_t used = (size_t)(l->o - from);

    l->in_batch = false;
    l->b = &scratch;
    l->start = 0;
    bsc_buf_reset(&scratch);
    if (bsc_buf_append(&scratch, from, used) != BSC_OK) {
        l->lost = true;
        l->o = l->end = NULL;
        return false;
    }
    l->o = scratch.p + used;
    l->end = scratch.p + scratch.cap;
    return true;
}

/* The slow path of room(): hands the cursor back to the buffer, grows it and takes the
 * cursor again. */
static bool room_grow(struct line *l, size_t n)
{
    struct bsc_buf *b;

    if (l->in_batch && !leave_batch(l))
        return false;
    if (l->lost)
        return false;
    b = l->b;
    if (l->o)
        b->len = (size_t)(l->o - b->p);
    if (bsc_buf_reserve(b, n) != BSC_OK)
        return false;
    l->o = b->p + b->len;
    l->end = b->p + b->cap;
    return true;
}

/* Whether <n> (at least 1) bytes fit at the cursor, growing the buffer when they do not
 * yet. A buffer without storage has <o> and <end> both NULL: no room, as their addresses
 * say without a test of their own. */
static inline bool room(struct line *l, size_t n)
{
    return (size_t)((uintptr_t)l->end - (uintptr_t)l->o) >= n || room_grow(l, n);
}

/* The field writers are inlined into each call (FIELD) so that a key, a literal of known
 * length, is copied by a few moves rather than a memcpy call. */
#define FIELD static inline __attribute__((always_inline))

/* Copies <n> bytes whose room was made. */
FIELD void put_raw(struct line *l, const char *p, size_t n)
{
    memcpy(l->o, p, n);
    l->o += n;
}

/* The most bytes a decimal uint64_t takes (18446744073709551615). */
#define U64_DIGITS 20

/* "00" .. "99": two digits a division by the constant 100 (a multiply and a shift). */
static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324"
                                  "25262728293031323334353637383940414243444546474849"
                                  "50515253545556575859606162636465666768697071727374"
                                  "75767778798081828384858687888990919293949596979899";

static const uint64_t powers_of_ten[U64_DIGITS] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

/* The number of decimal digits of <v> (1 for 0). bits * 1233 / 4096 is bits * log10(2)
 * rounded down: the digits of the smallest number of that bit length, one short of <v>'s
 * when <v> reaches the next power of ten. */
static inline unsigned decimal_len(uint64_t v)
{
    unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
    unsigned t = bits * 1233 >> 12;

    return t + ((v | 1) >= powers_of_ten[t]);
}

/* Writes <v> in decimal at <o>, as "%llu" would, and returns the end. Its length is known
 * first, so the digits go straight to their place, two at a time from the right. */
static inline char *put_decimal(char *o, uint64_t v)
{
    char *end, *p;

    if (v < 10) { /* the zeros and ones of most lines */
        *o = (char)('0' + v);
        return o + 1;
    }
    end = p = o + decimal_len(v);
    while (v >= 100) {
        uint64_t q = v / 100;

        p -= 2;
        memcpy(p, digit_pairs + 2 * (v - 100 * q), 2);
        v = q;
    }
    if (v >= 10)
        memcpy(p - 2, digit_pairs + 2 * v, 2);
    else
        p[-1] = (char)('0' + v);
    return end;
}

/* Writes <v> in decimal at the cursor (room for U64_DIGITS made). */
static void put_digits(struct line *l, uint64_t v)
{
    l->o = put_decimal(l->o, v);
}

/* <units> / 10^<decimals> with exactly <decimals> (3 or 8: a constant where it is inlined)
 * decimals at the cursor; put_ms and put_usd make room for U64_DIGITS + 9. */
FIELD void put_fixed_digits(struct line *l, uint64_t units, unsigned decimals)
{
    uint64_t whole = units / powers_of_ten[decimals];
    uint64_t frac = units - whole * powers_of_ten[decimals];
    char *o = put_decimal(l->o, whole);

    *o++ = '.';
    for (unsigned i = decimals; i >= 2; i -= 2) {
        memcpy(o + i - 2, digit_pairs + 2 * (frac % 100), 2);
        frac /= 100;
    }
    if (decimals & 1) /* the loop left the first */
        o[0] = (char)('0' + frac);
    l->o = o + decimals;
}

/* Keys are literals: ",\"name\":" is spelled out at compile time and copied whole. */
#define KEY(name) ",\"" name "\":"
#define LIT_LEN(lit) (sizeof(lit) - 1)

/* A literal: BSC_BUF_APPEND_LIT's counterpart at the cursor. */
#define PUT_LIT(l, lit) put_lit(l, "" lit, LIT_LEN(lit))
FIELD void put_lit(struct line *l, const char *lit, size_t n)
{
    if (room(l, n))
        put_raw(l, lit, n);
}

/* put_str() for a value whose worst case (every byte escaped to six) does not fit below the
 * buffer's maximum: the buffer's own append makes room for the exact escaped size. */
static void put_str_exact(struct line *l, const char *key, size_t key_len, const char *val,
                          size_t n)
{
    struct bsc_buf *b;
    size_t mark;

    if ((l->in_batch && !leave_batch(l)) || l->lost)
        return;
    b = l->b;
    if (l->o)
        b->len = (size_t)(l->o - b->p);
    mark = b->len;
    if (bsc_buf_append(b, key, key_len) != BSC_OK ||
        bsc_buf_append_json_str(b, bsc_str_make(val, n)) != BSC_OK) {
        b->len = mark; /* the field is left out whole */
        if (b->p)
            b->p[mark] = '\0';
    }
    l->o = b->p ? b->p + b->len : NULL;
    l->end = b->p ? b->p + b->cap : NULL;
}

#ifdef ACCESS_LOG_SSE2
/* Copies the <n> bytes at <val> to <o> when none of them needs escaping and returns the
 * end; NULL when one does (what was stored at <o> is then to be overwritten). Ids and
 * names are short and plain: 16 bytes are checked at a time, the last block overlapping
 * the one before; 8 to 15 bytes as two overlapping halves of one block, 4 to 7 as two
 * overlapping quarters, 1 to 3 as their first, middle and last byte. Nothing is read or
 * written outside the <n> bytes. */
static char *put_plain(char *o, const char *val, size_t n)
{
    __m128i x, y;
    uint32_t a, b;

    if (n >= 16) {
        for (size_t i = 0; i + 16 < n; i += 16) {
            x = _mm_loadu_si128((const __m128i *)(const void *)(val + i));
            if (bsc_json_escaped_mask16(x))
                return NULL;
            _mm_storeu_si128((__m128i *)(void *)(o + i), x);
        }
        x = _mm_loadu_si128((const __m128i *)(const void *)(val + n - 16));
        if (bsc_json_escaped_mask16(x))
            return NULL;
        _mm_storeu_si128((__m128i *)(void *)(o + n - 16), x);
    } else if (n >= 8) {
        x = _mm_loadl_epi64((const __m128i *)(const void *)val);
        y = _mm_loadl_epi64((const __m128i *)(const void *)(val + n - 8));
        if (bsc_json_escaped_mask16(_mm_unpacklo_epi64(x, y)))
            return NULL;
        _mm_storel_epi64((__m128i *)(void *)o, x);
        _mm_storel_epi64((__m128i *)(void *)(o + n - 8), y);
    } else if (n >= 4) {
        memcpy(&a, val, 4);
        memcpy(&b, val + n - 4, 4);
        if (bsc_json_escaped_mask16(_mm_cvtsi64_si128((long long)(a | (uint64_t)b << 32))) & 0xff)
            return NULL; /* the upper eight lanes are zeros, not bytes of <val> */
        memcpy(o, &a, 4);
        memcpy(o + n - 4, &b, 4);
    } else if (n) {
        unsigned char first = (unsigned char)val[0], mid = (unsigned char)val[n / 2],
                      last = (unsigned char)val[n - 1];

        x = _mm_cvtsi32_si128((int)(first | mid << 8 | (unsigned)last << 16));
        if (bsc_json_escaped_mask16(x) & 0x7)
            return NULL;
        o[0] = (char)first;
        o[n / 2] = (char)mid;
        o[n - 1] = (char)last;
    }
    return o + n;
}
#else
static char *put_plain(char *o, const char *val, size_t n)
{
    if (!bsc_json_plain(val, n))
        return NULL;
    memcpy(o, val, n);
    return o + n;
}
#endif

/* "<val>" (room for 6 * n + 2 made): copied as it is when nothing in it needs escaping,
 * else through the buffer's escaper. */
FIELD void put_quoted(struct line *l, const char *val, size_t n)
{
    char *end = put_plain(l->o + 1, val, n);

    if (BSC_LIKELY(end)) {
        *l->o = '"';
        *end = '"';
        l->o = end + 1;
        return;
    }
    l->b->len = (size_t)(l->o - l->b->p);
    bsc_buf_append_json_str(l->b, bsc_str_make(val, n)); /* cannot fail: room is made */
    l->o = l->b->p + l->b->len;
    l->b->len = l->start; /* the batch's end stays before the line until it is whole */
}

/* <key> then <val> as a JSON string (null when NULL). */
FIELD void put_str(struct line *l, const char *key, size_t key_len, const char *val)
{
    size_t n;

    if (!val) {
        if (room(l, key_len + 4)) {
            put_raw(l, key, key_len);
            put_raw(l, "null", 4);
        }
        return;
    }
    n = strlen(val);
    if (BSC_UNLIKELY(n > (SIZE_MAX - 2 - key_len) / 6 || !room(l, key_len + 6 * n + 2))) {
        put_str_exact(l, key, key_len, val, n);
        return;
    }
    put_raw(l, key, key_len);
    put_quoted(l, val, n);
}
#define PUT_STR(l, name, val) put_str(l, KEY(name), LIT_LEN(KEY(name)), val)

/* <key> then a target's id: copied as it is when the config found nothing in it to
 * escape (cfg_target.id_plain), else as put_str writes it. */
FIELD void put_target(struct line *l, const char *key, size_t key_len,
                      const struct cfg_target *t)
{
    if (t && t->id_plain && t->id_len && room(l, key_len + t->id_len + 2)) {
        put_raw(l, key, key_len);
        *l->o++ = '"';
        put_raw(l, t->id, t->id_len);
        *l->o++ = '"';
        return;
    }
    put_str(l, key, key_len, t ? t->id : NULL);
}

FIELD void put_u64(struct line *l, const char *key, size_t key_len, uint64_t v)
{
    if (!room(l, key_len + U64_DIGITS))
        return;
    put_raw(l, key, key_len);
    put_digits(l, v);
}
#define PUT_U64(l, name, v) put_u64(l, KEY(name), LIT_LEN(KEY(name)), v)

FIELD void put_i64(struct line *l, const char *key, size_t key_len, int64_t v)
{
    if (!room(l, key_len + 1 + U64_DIGITS))
        return;
    put_raw(l, key, key_len);
    if (v < 0)
        *l->o++ = '-';
    put_digits(l, v < 0 ? 0ull - (uint64_t)v : (uint64_t)v);
}
#define PUT_I64(l, name, v) put_i64(l, KEY(name), LIT_LEN(KEY(name)), v)

/* <key> then microseconds as milliseconds with three decimals (1234 -> 1.234). */
FIELD void put_ms(struct line *l, const char *key, size_t key_len, uint64_t us)
{
    if (!room(l, key_len + U64_DIGITS + 9))
        return;
    put_raw(l, key, key_len);
    put_fixed_digits(l, us, 3);
}
#define PUT_MS(l, name, us) put_ms(l, KEY(name), LIT_LEN(KEY(name)), us)

/* ",\"cost_usd\":N" with exactly eight decimals, as "%.8f" prints it, without printf. */
static void put_usd(struct line *l, double usd)
{
    char text[512];
    int n;

    if (!(usd >= 0.0) || usd >= 1e10) { /* NaN, negative or absurd: printf knows best */
        n = snprintf(text, sizeof(text), KEY("cost_usd") "%.8f", usd);
        if (n > 0 && (size_t)n < sizeof(text) && room(l, (size_t)n))
            put_raw(l, text, (size_t)n);
        return;
    }
    if (!room(l, LIT_LEN(KEY("cost_usd")) + U64_DIGITS + 9))
        return;
    put_raw(l, KEY("cost_usd"), LIT_LEN(KEY("cost_usd")));
    put_fixed_digits(l, (uint64_t)(usd * 1e8 + 0.5), 8);
}

/* Starts a line in this thread's scratch buffer: {"type":<type>,"ts_ms":..,"request_id":..
 * (<open> is the literal up to the type, made by LINE_BEGIN). */
#define LINE_BEGIN(l, type, request_id) \
    line_begin(l, "{\"type\":\"" type "\"", LIT_LEN("{\"type\":\"" type "\""), request_id)

/* The last ts_ms this thread wrote and its digits. The wall clock a worker reads moves once
 * per loop millisecond (core/clock.h), so most lines carry the time of the line before
 * them (a request's attempt and access lines nearly always): their 13 digits are copied,
 * not made again. */
static _Thread_local struct {
    uint64_t ms;
    size_t len; /* 0: none yet */
    char text[U64_DIGITS];
} last_ts;

/* ",\"ts_ms\":<now>" (room for U64_DIGITS made after the key). */
static void put_ts(struct line *l, uint64_t now)
{
    if (!room(l, LIT_LEN(KEY("ts_ms")) + U64_DIGITS))
        return;
    put_raw(l, KEY("ts_ms"), LIT_LEN(KEY("ts_ms")));
    if (now != last_ts.ms || !last_ts.len) {
        char *digits = l->o;

        l->o = put_decimal(digits, now);
        last_ts.ms = now;
        last_ts.len = (size_t)(l->o - digits);
        memcpy(last_ts.text, digits, last_ts.len);
        return;
    }
    memcpy(l->o, last_ts.text, U64_DIGITS); /* a whole block: a few moves */
    l->o += last_ts.len;
}

/* Starts the line in place in this thread's batch: when the thread batches, the batch's
 * storage is whole (allocated to its maximum once) and some room is left in it. */
static bool begin_in_batch(struct line *l)
{
    struct bsc_buf *batch = bsc_log_batch_peek();

    if (!batch || batch->len + 1024 >= batch->max)
        return false;
    if ((!batch->p || batch->cap < batch->max) &&
        bsc_buf_reserve(batch, batch->max - batch->len) != BSC_OK)
        return false;
    *l = (struct line){.b = batch,
                       .o = batch->p + batch->len,
                       .end = batch_room_end(batch),
                       .start = batch->len,
                       .in_batch = true};
    return true;
}

static void line_begin(struct line *l, const char *open, size_t open_len, const char *request_id)
{
    struct bsc_buf *b = &scratch;

    if (!begin_in_batch(l)) {
        bsc_buf_reset(b);
        *l = (struct line){.b = b, .o = b->p, .end = b->p ? b->p + b->cap : NULL};
        if (!room(l, 1024)) /* most lines fit: one check a field passes from here on */
            room(l, open_len);
    }
    put_lit(l, open, open_len);
    put_ts(l, bsc_wall_ms());
    PUT_STR(l, "request_id", request_id);
}

/* Closes the line and hands it to the log (nothing when the buffer could not grow). In
 * the batch, the line is there already: its newline goes after it (its room was kept) and
 * the batch's end moves past both, as bsc_log_line's append would have moved it. */
static void line_end(struct line *l)
{
    struct bsc_buf *b;

    PUT_LIT(l, "}");
    b = l->b;
    if (!l->o)
        return;
    if (l->in_batch) {
        *l->o++ = '\n';
        b->len = (size_t)(l->o - b->p);
        b->p[b->len] = '\0';
        return;
    }
    b->len = (size_t)(l->o - b->p);
    b->p[b->len] = '\0';
    bsc_log_line(b->p, b->len);
}

static uint64_t span_us(const struct attempt *a)
{
    return a->end_us > a->start_us ? a->end_us - a->start_us : 0;
}

static void put_attempts(struct line *l, const struct attempt *a, size_t n)
{
    PUT_LIT(l, ",\"attempt_log\":[");
    for (size_t i = 0; i < n; i++) {
        if (!a[i].target)
            put_str(l, ",{\"target\":" + !i, LIT_LEN(",{\"target\":") - !i, "-");
        else
            put_target(l, ",{\"target\":" + !i, LIT_LEN(",{\"target\":") - !i, a[i].target);
        PUT_STR(l, "workflow", attempt_workflow_name(a[i].workflow));
        PUT_STR(l, "outcome", attempt_outcome_name(a[i].outcome));
        PUT_I64(l, "status", a[i].status);
        PUT_STR(l, "kind", a[i].kind);
        PUT_MS(l, "ms", span_us(&a[i]));
        PUT_LIT(l, "}");
    }
    PUT_LIT(l, "]");
}

/* Each state's key in "states", made from REQ_STATES as req_state_name()'s names are (C
 * identifiers: nothing to escape), with the comma that goes before all but the first. */
#define STATE_KEY_COPY 24 /* bytes copied for a key: more than the longest, as one block */
static const struct {
    char text[STATE_KEY_COPY + 1]; /* ",\"pick\":", zeros after: read whole from text + 1 */
    size_t len;
} state_keys[REQ_ST_COUNT] = {
#define X(NAME, name, doc, to) [REQ_ST_##NAME] = {",\"" #name "\":", LIT_LEN(",\"" #name "\":")},
    REQ_STATES(X)
#undef X
};

/* ",\"states\":{\"pick\":0.0,\"attempt\":12.3,...}": milliseconds in each state the request
 * entered, DONE left out (the line is written in it). */
#define X(NAME, name, doc, to) \
    _Static_assert(LIT_LEN(",\"" #name "\":") < STATE_KEY_COPY, "the key of " #name " fits");
REQ_STATES(X)
#undef X

static void put_states(struct line *l, const struct req_times *t)
{
    bool first = true;

    PUT_LIT(l, KEY("states") "{");
    for (unsigned s = 0; s < REQ_ST_COUNT; s++) {
        if (s == REQ_ST_DONE || !(t->visited & (1u << s)))
            continue;
        /* put_ms, with the key copied as one block of known size rather than by a call */
        if (room(l, state_keys[s].len - first + U64_DIGITS + 9)) {
            memcpy(l->o, state_keys[s].text + first, STATE_KEY_COPY); /* within that room */
            l->o += state_keys[s].len - first;
            put_fixed_digits(l, t->spent_us[s], 3);
        }
        first = false;
    }
    PUT_LIT(l, "}");
}

/* ,"continued":{"target":...,"how":...,"bytes":N} */
static void put_continued(struct line *l, const char *target, const char *how,
                          uint64_t bytes)
{
    put_str(l, KEY("continued") "{\"target\":", LIT_LEN(KEY("continued") "{\"target\":"), target);
    PUT_STR(l, "how", how);
    PUT_U64(l, "bytes", bytes);
    PUT_LIT(l, "}");
}

void access_log_write(const struct access_entry *e)
{
    struct line line, *l = &line;

    LINE_BEGIN(l, "access", e->request_id);
    PUT_STR(l, "method", e->method ? e->method : "POST");
    PUT_STR(l, "path", e->path ? e->path : "/v1/chat/completions");
    PUT_STR(l, "route", e->route);
    if (e->client)
        PUT_STR(l, "client", e->client);
    if (e->selected_by)
        PUT_STR(l, "selected_by", e->selected_by);
    PUT_STR(l, "target", e->target);
    PUT_I64(l, "status", e->status);
    if (e->stream)
        PUT_LIT(l, ",\"stream\":true");
    else
        PUT_LIT(l, ",\"stream\":false");
    PUT_U64(l, "bytes_in", e->bytes_in);
    PUT_U64(l, "bytes_out", e->bytes_out);
    PUT_MS(l, "duration_ms", e->duration_us);
    PUT_MS(l, "ttfb_ms", e->ttfb_us);
    PUT_U64(l, "attempts", e->n_attempts);
    PUT_STR(l, "termination", e->termination);
    if (e->detail)
        PUT_STR(l, "detail", e->detail);
    if (e->limited_by)
        PUT_STR(l, "limited_by", e->limited_by);
    if (e->cache)
        PUT_STR(l, "cache", e->cache);
    if (e->queued_ms > 0 || (e->queued_ms == 0 && e->limited_by))
        PUT_I64(l, "queued_ms", e->queued_ms);
    if (e->continued_target)
        put_continued(l, e->continued_target, e->continued_how, e->continued_bytes);
    if (e->input_tokens >= 0 || e->output_tokens >= 0) {
        PUT_I64(l, "input_tokens", e->input_tokens);
        PUT_I64(l, "output_tokens", e->output_tokens);
        if (e->cached_tokens > 0)
            PUT_I64(l, "cached_input_tokens", e->cached_tokens);
        if (e->cache_write_tokens > 0)
            PUT_I64(l, "cache_write_tokens", e->cache_write_tokens);
        if (e->reasoning_tokens > 0)
            PUT_I64(l, "reasoning_tokens", e->reasoning_tokens);
        put_usd(l, e->cost_usd);
        if (e->cost_estimated)
            PUT_LIT(l, ",\"cost_estimated\":true");
    }
    if (e->n_attempts)
        put_attempts(l, e->attempts, e->n_attempts);
    if (e->states)
        put_states(l, e->states);
    line_end(l);
}

void access_log_write_attempt(const struct access_attempt_line *al)
{
    struct line line, *l = &line;
    const struct attempt *a = al->a;

    LINE_BEGIN(l, "attempt", al->request_id);
    PUT_STR(l, "route", al->route);
    PUT_U64(l, "attempt", al->number);
    put_target(l, KEY("target"), LIT_LEN(KEY("target")), a->target);
    PUT_STR(l, "workflow", attempt_workflow_name(a->workflow));
    PUT_STR(l, "outcome", attempt_outcome_name(a->outcome));
    PUT_STR(l, "kind", a->kind);
    PUT_I64(l, "status", a->status);
    PUT_MS(l, "ms", span_us(a));
    PUT_U64(l, "delay_before_ms", a->delay_ms);
    PUT_STR(l, "circuit", al->circuit);
    PUT_U64(l, "time_left_ms", al->time_left_ms);
    PUT_STR(l, "next", al->next);
    PUT_STR(l, "why", al->why);
    PUT_U64(l, "next_delay_ms", al->next_delay_ms);
    PUT_STR(l, "delay_why", al->delay_why);
    if (a->ranking[0])
        PUT_STR(l, "ranking", a->ranking);
    if (a->continued_how)
        put_continued(l, a->target ? a->target->id : NULL, a->continued_how, a->continued_bytes);
    if (al->limited_by)
        PUT_STR(l, "limited_by", al->limited_by);
    if (al->queued_ms >= 0)
        PUT_I64(l, "queued_ms", al->queued_ms);
    line_end(l);
}

void access_log_thread_cleanup(void)
{
    bsc_buf_cleanup(&scratch);
}
