/* SPDX-License-Identifier: MIT */
/* resume.c -- see resume.h. The frames are the adapter's OpenAI chunk frames
 * (`data: {json}\n\n`), before the client's dialect translates them, so a continuation
 * looks the same to every client API that is translated from them. Streams relayed in the
 * upstream's own events are read and rewritten in their dialect by resume_anthropic.c and
 * resume_responses.c; what they share (the text sent, the matcher, the seam) is here. */
#include <stdio.h>
#include <string.h>

#include "core/json_parse.h"
#include "metrics/metrics.h"
#include "providers/openai_errors.h"
#include "providers/provider.h"
#include "router/deliver.h"
#include "router/exchange.h"
#include "router/input.h"
#include "router/internal.h"
#include "router/resume.h"

void resume_init(struct request *r)
{
    r->resume.on = r->input.stream && r->env.on_stream_failure == CFG_SF_CONTINUE;
    bsc_buf_init(&r->resume.sent, RESUME_MAX_TEXT);
    bsc_buf_init(&r->resume.native_body, r->cfg->limits.max_body_bytes + RESUME_MAX_TEXT * 6 + 64);
    r->resume.cont_input = -1;
}

void resume_restart(struct request *r)
{
    struct resume *s = &r->resume;

    if (s->active)
        return; /* committed: only a continuation's attempt starts now */
    bsc_buf_reset(&s->sent);
    s->ineligible = false;
    s->events = RESUME_EV_CHUNKS;
    s->item_seen = false;
    s->item_id[0] = '\0';
    s->next_seq = 0;
    s->ends_sent = 0;
}

void resume_cleanup(struct request *r)
{
    bsc_buf_cleanup(&r->resume.sent);
    bsc_buf_cleanup(&r->resume.native_body);
    json_object_put(r->resume.prefill_req);
    r->resume.prefill_req = NULL;
}

/* One chunk's facts: its first choice's delta text, whether it finishes, whether it has any
 * part a continuation cannot carry (a tool call, a non-text delta, a second choice). False:
 * not a JSON object. */
struct chunk_facts {
    struct json_object *root;  /* owned */
    struct json_object *delta; /* borrowed from <root>, or NULL */
    const char *text;          /* borrowed, or NULL */
    size_t text_len;
    bool finish, usage_only, foreign;
};

static bool read_chunk(struct bsc_str data, struct chunk_facts *c)
{
    struct json_object *choices, *ch, *v;

    memset(c, 0, sizeof(*c));
    c->root = bsc_json_parse_whole(data, 64);
    if (!c->root || !json_object_is_type(c->root, json_type_object))
        return false;
    /* No choices (a usage chunk, however a server spells it): nothing of the answer. */
    if (!json_object_object_get_ex(c->root, "choices", &choices) ||
        !json_object_is_type(choices, json_type_array) || json_object_array_length(choices) == 0) {
        c->usage_only = true;
        return true;
    }
    ch = json_object_array_get_idx(choices, 0);
    c->foreign = json_object_array_length(choices) > 1;
    if (json_object_object_get_ex(ch, "index", &v) && json_object_get_int(v) != 0)
        c->foreign = true;
    if (json_object_object_get_ex(ch, "finish_reason", &v) &&
        json_object_is_type(v, json_type_string))
        c->finish = true;
    if (!json_object_object_get_ex(ch, "delta", &c->delta))
        return true;
    json_object_object_foreach(c->delta, key, val)
    {
        if (strcmp(key, "content") == 0 && json_object_is_type(val, json_type_string)) {
            c->text = json_object_get_string(val);
            c->text_len = (size_t)json_object_get_string_len(val);
        } else if (strcmp(key, "role") != 0 && strcmp(key, "refusal") != 0 &&
                   !json_object_is_type(val, json_type_null)) {
            c->foreign = true; /* tool_calls, function_call, reasoning, ... */
        }
    }
    return true;
}

/* Appends `data: <root>\n\n`. */
static enum bsc_err emit(struct bsc_buf *out, struct json_object *root)
{
    const char *s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);

    return s ? bsc_buf_appendf(out, "data: %s\n\n", s) : BSC_ENOMEM;
}

void resume__note_sent(struct request *r, const char *p, size_t n)
{
    if (n && bsc_buf_append(&r->resume.sent, p, n) != BSC_OK)
        r->resume.ineligible = true; /* too long to hold: never continued */
}

/* The dialect of the client's stream, from its first event (<name>, <data>): a typed event
 * (the Responses API passed through), Anthropic's events carried whole, or OpenAI chunks.
 * Set once: a stream does not change its dialect. */
static enum resume_events events_of(const struct request *r, struct bsc_str name,
                                    struct bsc_str data)
{
    if (r->resume.events != RESUME_EV_CHUNKS)
        return r->resume.events;
    if (r->input.op == PROV_OP_RESPONSES && name.len)
        return RESUME_EV_RESPONSES;
    if (bsc_str_starts(data, BSC_STR("{\"bascule_native\"")) ||
        bsc_str_starts(data, BSC_STR("{\"bascule_shadow\"")))
        return RESUME_EV_ANTHROPIC;
    return RESUME_EV_CHUNKS;
}

/* One event of the original attempt's frames (stream/ frames them); stops the walk once the
 * stream may not be continued. */
static int watch_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct request *r = ud;
    struct chunk_facts c;

    r->resume.events = events_of(r, name, data);
    if (r->resume.events == RESUME_EV_RESPONSES) {
        resume__resp_watch(r, name, data);
        return r->resume.ineligible;
    }
    if (name.len) {
        r->resume.ineligible = true; /* a typed event stream of no dialect known here */
        return 1;
    }
    if (r->resume.events == RESUME_EV_ANTHROPIC) {
        resume__anth_watch(r, data);
        return r->resume.ineligible;
    }
    if (sse_is_done(data))
        return 0;
    if (!read_chunk(data, &c) || c.foreign)
        r->resume.ineligible = true;
    else if (c.text)
        resume__note_sent(r, c.text, c.text_len);
    json_object_put(c.root);
    return r->resume.ineligible;
}

/* A comment or a line of no known field among the frames: nothing this code can continue. */
static int watch_other(void *ud, struct bsc_str line)
{
    struct request *r = ud;

    (void)line;
    r->resume.ineligible = true;
    return 1;
}

/* The original attempt: what the client gets is noted, and whether it may be continued. */
static void watch(struct request *r, struct bsc_str conv)
{
    static const struct sse_callbacks cb = {watch_event, watch_other, watch_other};

    if (!r->resume.ineligible && sse_walk(conv, &cb, r) != BSC_OK)
        r->resume.ineligible = true; /* out of memory: not followed, so never continued */
}

enum bsc_err resume__seam(struct request *r)
{
    if (r->resume.seam_sent)
        return BSC_OK;
    r->resume.seam_sent = true;
    return deliver_stream_seam(r, r->cur.target->id, r->resume.how);
}

/* One frame of a continuation, into <out> (or dropped). BSC_EINVAL: give up. */
static enum bsc_err continue_frame(struct request *r, struct bsc_str f, struct bsc_buf *out)
{
    struct chunk_facts c;
    enum replay_state st = r->resume.m.state;
    enum bsc_err err = BSC_OK;
    size_t from = 0;

    if (sse_is_done(f)) {
        if (!r->resume.prefill && st != REPLAY_PASSING)
            return BSC_EINVAL; /* the replay ended before it covered what was sent */
        return bsc_buf_appendf(out, "data: [DONE]\n\n");
    }
    if (!read_chunk(f, &c) || c.foreign) {
        json_object_put(c.root);
        return BSC_EINVAL; /* a tool call or another part: never spliced */
    }
    if (c.usage_only) {
        err = st == REPLAY_PASSING || r->resume.prefill ? emit(out, c.root) : BSC_OK;
        json_object_put(c.root);
        return err;
    }
    if (!r->resume.prefill && st != REPLAY_PASSING) {
        st = replay_match_feed(&r->resume.m, bsc_str_make(c.text ? c.text : "", c.text_len), &from);
        if (st == REPLAY_DIVERGED || (st == REPLAY_HOLDING && c.finish)) {
            json_object_put(c.root);
            return BSC_EINVAL;
        }
        if (st == REPLAY_HOLDING || (from == c.text_len && !c.finish)) {
            json_object_put(c.root); /* still covering what the client has */
            return BSC_OK;
        }
        if (from)
            json_object_object_add(
                c.delta, "content",
                json_object_new_string_len(c.text + from, (int)(c.text_len - from)));
    } else if (!c.text_len && !c.finish) {
        json_object_put(c.root); /* the role chunk again: the client has one */
        return BSC_OK;
    }
    if (c.text && c.text_len > from)
        resume__note_sent(r, c.text + from, c.text_len - from);
    err = resume__seam(r);
    if (!err)
        err = emit(out, c.root);
    json_object_put(c.root);
    return err;
}

/* rewrite's walk: the request, where the frames go, the first error. */
struct rewrite_walk {
    struct request *r;
    struct bsc_buf *out;
    enum bsc_err err;
};

/* One event of a continuation's frames, in the original stream's dialect. */
static int rewrite_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct rewrite_walk *w = ud;
    struct request *r = w->r;

    if (r->resume.events == RESUME_EV_RESPONSES)
        w->err = resume__resp_frame(r, name, data, w->out);
    else if (name.len)
        return 0; /* a typed event in a stream of chunks: not the client's */
    else if (r->resume.events == RESUME_EV_ANTHROPIC)
        w->err = resume__anth_frame(r, data, w->out);
    else
        w->err = continue_frame(r, data, w->out);
    return w->err != BSC_OK;
}

/* A comment or a line of no known field: dropped, but a Responses stream is all typed events. */
static int rewrite_other(void *ud, struct bsc_str line)
{
    struct rewrite_walk *w = ud;

    (void)line;
    if (w->r->resume.events != RESUME_EV_RESPONSES)
        return 0;
    w->err = BSC_EINVAL;
    return 1;
}

static enum bsc_err rewrite(struct request *r)
{
    static const struct sse_callbacks cb = {rewrite_event, rewrite_other, rewrite_other};
    struct bsc_buf out;
    struct rewrite_walk w = {r, &out, BSC_OK};
    enum bsc_err err;

    bsc_buf_init(&out, r->x.conv.max);
    err = sse_walk(bsc_buf_str(&r->x.conv), &cb, &w);
    if (w.err)
        err = w.err;
    if (err == BSC_EINVAL)
        r->resume.gave_up = true;
    if (err)
        xchg_drop_frames(r);
    else
        err = xchg_replace_frames(r, &out);
    bsc_buf_cleanup(&out);
    return err;
}

enum bsc_err resume_filter(struct request *r)
{
    if (!r->resume.on || !r->x.conv.len)
        return BSC_OK;
    if (!r->resume.active) {
        watch(r, bsc_buf_str(&r->x.conv));
        return BSC_OK;
    }
    return rewrite(r);
}

bool resume_possible(const struct request *r)
{
    const struct resume *s = &r->resume;

    if (!s->on || s->ineligible || s->gave_up || !r->sreq || r->d.limit_cut)
        return false;
    if (r->env.side_effects == CFG_SE_WRITE_POSSIBLE)
        return false;
    /* an in-band refusal of the request itself is the client's answer, not a break */
    return !(r->x.stream_failed && fail_policy(r->x.stream_fail.kind)->client_fault);
}

void resume_begin(struct request *r, const char *why)
{
    enum fail_kind kind = r->x.timed_out       ? FAIL_TIMEOUT
                          : r->x.stream_failed ? FAIL_SERVER_ERROR
                                               : FAIL_UPSTREAM_RESET;

    snprintf(r->resume.why, sizeof(r->resume.why), "%s", why);
    xchg_note_stream_break(r, kind, why);
    r->resume.active = true;
}

/* How the target's server takes a trailing assistant message as the start of its answer:
 * Anthropic does natively, and so does an openai_compatible server unless its profile says
 * otherwise -- vLLM wants continue_final_message and no generation prompt, DeepSeek the
 * message marked as a prefix. */
static void shape_prefill(const struct request *r, struct json_object *req, struct json_object *msg)
{
    const struct cfg_provider *p = r->cur.target->provider;
    struct prov_err_input who = {.base_url = bsc_str_cstr(p->base_url),
                                 .profile = bsc_str_cstr(cfg_profile_name(p->profile))};
    const char *name;

    if (p->kind != CFG_PROV_OPENAI_COMPATIBLE)
        return;
    name = prov_openai_profile_of(&who)->name;
    if (strcmp(name, "vllm") == 0) {
        json_object_object_add(req, "continue_final_message", json_object_new_boolean(1));
        json_object_object_add(req, "add_generation_prompt", json_object_new_boolean(0));
    } else if (strcmp(name, "deepseek") == 0) {
        json_object_object_add(msg, "prefix", json_object_new_boolean(1));
    }
}

/* The request with the text already sent as a trailing assistant message. */
static enum bsc_err build_prefill(struct request *r)
{
    struct json_object *base = r->trim.dropped > 0 ? r->trim.json : req__json(r);
    struct json_object *copy = NULL, *msgs, *msg;

    if (!base || json_object_deep_copy(base, &copy, NULL) != 0)
        return BSC_ENOMEM;
    if (!json_object_object_get_ex(copy, "messages", &msgs) ||
        !json_object_is_type(msgs, json_type_array)) {
        json_object_put(copy);
        return BSC_EINVAL;
    }
    msg = json_object_new_object();
    json_object_object_add(msg, "role", json_object_new_string("assistant"));
    json_object_object_add(msg, "content",
                           json_object_new_string_len(r->resume.sent.p ? r->resume.sent.p : "",
                                                      (int)r->resume.sent.len));
    json_object_array_add(msgs, msg);
    shape_prefill(r, copy, msg);
    json_object_put(r->resume.prefill_req);
    r->resume.prefill_req = copy;
    return BSC_OK;
}

enum bsc_err resume_attempt(struct request *r)
{
    struct resume *s = &r->resume;

    if (!s->active)
        return BSC_OK;
    /* The Responses API takes no prefill: a trailing assistant item is history, answered
     * anew. Its streams go on by replay and match only. */
    s->prefill = (r->cur.target->capabilities & CFG_CAP_PREFILL) && s->refused != r->cur.target &&
                 s->sent.len > 0 && s->events != RESUME_EV_RESPONSES;
    s->native_prefill = false;
    s->cont_input = -1;
    s->item_seen = false;
    s->how = s->prefill ? "prefill" : "replay";
    s->target = r->cur.target->id;
    s->seam_sent = false;
    s->seam_bytes = r->d.bytes_out;
    deliver_restart_frame_count(r); /* the output estimate is per attempt */
    if (req__cur_attempt(r)) {
        req__cur_attempt(r)->continued_how = s->how;
        req__cur_attempt(r)->continued_bytes = s->seam_bytes;
    }
    replay_match_init(&s->m, bsc_buf_str(&s->sent));
    if (!s->prefill)
        return BSC_OK;
    if ((s->events == RESUME_EV_ANTHROPIC ? resume__anth_prefill(r) : build_prefill(r)) !=
        BSC_OK) {
        s->prefill = false; /* replay and match instead */
        s->how = "replay";
        if (req__cur_attempt(r))
            req__cur_attempt(r)->continued_how = s->how;
    }
    return BSC_OK;
}

void resume_count(struct request *r, const char *result)
{
    if (!r->resume.active || !r->resume.how || !r->cur.target)
        return;
    metrics_inc4(req__metrics(r), r->w->idx, METRIC_STREAM_CONTINUATIONS, r->route->id,
                 r->cur.target->id, r->resume.how, result, 1);
}

void resume_add_usage(struct request *r)
{
    const struct prov_usage *u = &r->x.usage;
    struct prov_usage *p = &r->resume.prior;

    if (!r->resume.on)
        return;
    p->input_tokens += u->input_tokens > 0 ? u->input_tokens : 0;
    p->output_tokens += u->output_tokens > 0 ? u->output_tokens : 0;
    p->cached_tokens += u->cached_tokens > 0 ? u->cached_tokens : 0;
    p->cache_write_tokens += u->cache_write_tokens > 0 ? u->cache_write_tokens : 0;
    p->cache_write_1h_tokens += u->cache_write_1h_tokens > 0 ? u->cache_write_1h_tokens : 0;
    p->reasoning_tokens += u->reasoning_tokens > 0 ? u->reasoning_tokens : 0;
    r->resume.n_prior++;
}

void resume_note_break(struct request *r, const char *why)
{
    r->resume.break_why = why;
}

const char *resume_take_break_why(struct request *r)
{
    const char *why = r->resume.break_why;

    r->resume.break_why = NULL;
    return why;
}

const char *resume_attempt_failed(struct request *r)
{
    const struct fail_info *f = &r->x.fail;

    resume_add_usage(r);
    if (r->resume.gave_up)
        return "diverged";
    if (!r->resume.prefill || !fail_policy(f->kind)->client_fault)
        return "failed";
    /* The target refused the trailing assistant message: never the client's error. The same
     * target may go on by replay and match instead. */
    r->resume.refused = r->cur.target;
    xchg_note_prefill_refused(r);
    return "refused";
}

struct prov_usage resume_usage(const struct request *r)
{
    struct prov_usage t = r->x.usage;
    const struct prov_usage *p = &r->resume.prior;

    if (!r->resume.n_prior)
        return t;
#define SUM(f) t.f = (t.f > 0 ? t.f : 0) + p->f
    SUM(input_tokens);
    SUM(output_tokens);
    SUM(cached_tokens);
    SUM(cache_write_tokens);
    SUM(cache_write_1h_tokens);
    SUM(reasoning_tokens);
#undef SUM
    return t;
}

struct json_object *resume_request(const struct request *r)
{
    return r->resume.active && r->resume.prefill && r->resume.events == RESUME_EV_CHUNKS
               ? r->resume.prefill_req
               : NULL;
}

const struct prov_native *resume_native(const struct request *r)
{
    if (!r->input.native.body.p || r->trim.dropped > 0)
        return NULL; /* a trimmed request goes through the translation */
    if (!r->resume.active)
        return &r->input.native;
    if (r->resume.events != RESUME_EV_ANTHROPIC)
        return NULL; /* a translated stream goes on translated */
    return r->resume.prefill && r->resume.native_prefill ? &r->resume.native : &r->input.native;
}

bool resume_target_fits(const struct request *r, const struct cfg_target *t)
{
    return !r->resume.active || r->resume.events != RESUME_EV_ANTHROPIC ||
           prov_target_dialect(t) == r->input.native.kind;
}

enum bsc_err resume__pass_text(struct request *r, struct bsc_str t, size_t *from)
{
    struct resume *s = &r->resume;

    *from = 0;
    if (!resume__passing(r)) {
        enum replay_state st = replay_match_feed(&s->m, t, from);

        if (st == REPLAY_DIVERGED)
            return BSC_EINVAL;
        if (st == REPLAY_HOLDING)
            *from = t.len; /* still covering what the client has */
    }
    /* Once passing the matcher is never fed again: what grows <sent> may move its bytes. */
    if (t.len > *from)
        resume__note_sent(r, t.p + *from, t.len - *from);
    return BSC_OK;
}

bool resume__passing(const struct request *r)
{
    return r->resume.prefill || r->resume.m.state == REPLAY_PASSING;
}

int64_t resume__prior_fresh_input(const struct request *r)
{
    const struct prov_usage *p = &r->resume.prior;
    int64_t v = p->input_tokens - p->cached_tokens - p->cache_write_tokens -
                p->cache_write_1h_tokens;

    return v > 0 ? v : 0;
}
