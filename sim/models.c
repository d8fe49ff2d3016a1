/* SPDX-License-Identifier: MIT */
/* models.c -- per-model specs, script cursors, counters and request logs of bascule-sim,
 * and their JSON renderings for the control API. A linked list is enough: a simulator
 * sees a handful of models and the list is capped. See docs/internals/sim.md. */
#include "models.h"

#include <ctype.h>

#include "content.h"
#include "sjson.h"

#include "core/compat.h"

static void logent_cleanup(struct sim_logent *e)
{
    BSC_FREE(e->method);
    BSC_FREE(e->path);
    BSC_FREE(e->query);
    BSC_FREE(e->headers_json);
    BSC_FREE(e->body);
    BSC_FREE(e->model);
    e->body_len = 0;
}

static void reqlog_cleanup(struct sim_reqlog *log)
{
    for (size_t i = 0; i < SIM_LOG_MAX; i++)
        logent_cleanup(&log->ents[i]);
    log->head = 0;
    log->count = 0;
}

static void model_free(struct sim_model *mod)
{
    if (mod->has_spec)
        sim_spec_cleanup(&mod->spec);
    BSC_FREE(mod->spec_json);
    reqlog_cleanup(&mod->log);
    sim_arrivals_cleanup(&mod->arrivals);
    BSC_FREE(mod->name);
    free(mod);
}

void sim_models_init(struct sim_models *m)
{
    memset(m, 0, sizeof(*m));
}

void sim_models_cleanup(struct sim_models *m)
{
    while (m->head) {
        struct sim_model *next = m->head->next;
        model_free(m->head);
        m->head = next;
    }
    m->count = 0;
    reqlog_cleanup(&m->all);
    m->total = 0;
}

void sim_models_reset(struct sim_models *m)
{
    uint64_t gen = m->gen;

    sim_models_cleanup(m);
    m->gen = gen + 1;
}

static struct sim_model *find(const struct sim_models *m, struct bsc_str name)
{
    for (struct sim_model *mod = m->head; mod; mod = mod->next)
        if (bsc_str_eq(bsc_str_cstr(mod->name), name))
            return mod;
    return NULL;
}

struct sim_model *sim_models_get(struct sim_models *m, struct bsc_str name, bool create)
{
    struct sim_model *found = find(m, name);
    struct sim_model **link = &m->head;

    if (found)
        return found;
    while (*link)
        link = &(*link)->next;
    if (!create || name.len == 0 || name.len > SIM_MODEL_NAME_MAX || m->count >= SIM_MODELS_MAX ||
        memchr(name.p, '\0', name.len))
        return NULL;
    *link = calloc(1, sizeof(**link));
    if (!*link)
        return NULL;
    (*link)->name = bsc_str_dup(name);
    if (!(*link)->name) {
        BSC_FREE(*link);
        return NULL;
    }
    m->count++;
    return *link;
}

enum bsc_err sim_models_set_spec(struct sim_models *m, struct bsc_str name, struct bsc_str json,
                                 char *errbuf, size_t errlen)
{
    struct sim_spec spec;
    struct sim_model *mod;
    char *text;
    enum bsc_err err = sim_spec_parse(json, &spec, errbuf, errlen);

    if (err)
        return err;
    text = bsc_str_dup(json);
    mod = text ? sim_models_get(m, name, true) : NULL;
    if (!mod) {
        sim_spec_cleanup(&spec);
        free(text);
        snprintf(errbuf, errlen, "%s", !text ? "out of memory"
                                             : "model name empty, too long, or too many models");
        return text ? BSC_ELIMIT : BSC_ENOMEM;
    }
    if (mod->has_spec)
        sim_spec_cleanup(&mod->spec);
    free(mod->spec_json);
    mod->spec = spec;
    mod->spec_json = text;
    mod->has_spec = true;
    mod->cur = (struct sim_cursor){0, 0};
    return BSC_OK;
}

bool sim_models_del_spec(struct sim_models *m, struct bsc_str name)
{
    struct sim_model *mod = sim_models_get(m, name, false);

    if (!mod || !mod->has_spec)
        return false;
    sim_spec_cleanup(&mod->spec);
    BSC_FREE(mod->spec_json);
    mod->has_spec = false;
    mod->cur = (struct sim_cursor){0, 0};
    return true;
}

/* ---- calls ---- */

static bool is_ok_action(enum sim_action a)
{
    return a == SIM_ACT_OK || a == SIM_ACT_DELAY;
}

/* True when <mod> already has its spec's max_concurrent calls in flight (<src>: the spec
 * that applies, its own or the default's). */
static bool over_limit(const struct sim_model *src, const struct sim_model *mod)
{
    uint64_t in_flight = mod->stats.calls - mod->stats.completed - mod->stats.cancelled;

    return src->spec.max_concurrent && in_flight >= src->spec.max_concurrent;
}

enum bsc_err sim_models_begin(struct sim_models *m, struct bsc_str name, struct sim_plan *plan)
{
    struct sim_model *mod = sim_models_get(m, name, true);
    struct sim_model *src = mod && mod->has_spec ? mod : NULL;
    const struct sim_step *step = NULL;
    struct sim_cursor saved = {0, 0};
    enum bsc_err err;

    memset(plan, 0, sizeof(*plan));
    plan->tokens = SIM_TOKENS_DEFAULT;
    plan->token_delay_ms = -1;
    plan->gen = m->gen;
    if (!src) {
        struct sim_model *star = sim_models_get(m, BSC_STR(SIM_STAR), false);
        src = star && star->has_spec ? star : NULL;
    }
    if (src) {
        saved = src->cur;
        step = sim_script_next(&src->spec, &src->cur);
        plan->tokens = src->spec.tokens;
        plan->token_delay_ms = src->spec.token_delay_ms;
        plan->prefill_refuse = src->spec.prefill_refuse;
    }
    if (step) {
        err = sim_step_copy(&plan->step, step);
        if (err) {
            src->cur = saved; /* the step was not used: the next call gets it */
            return err;
        }
    } else {
        sim_step_init_ok(&plan->step);
    }
    /* The spec's content and tool_arguments stand for every step that does not set them. */
    if (src && sim_step_inherit(&plan->step, &src->spec)) {
        sim_step_cleanup(&plan->step);
        src->cur = saved;
        return BSC_ENOMEM;
    }
    if (src && mod && over_limit(src, mod)) {
        sim_step_cleanup(&plan->step);
        if (sim_step_init_overload(&plan->step, src->spec.max_concurrent)) {
            src->cur = saved;
            return BSC_ENOMEM;
        }
    }
    if (mod) {
        uint64_t ended = mod->stats.completed + mod->stats.cancelled;

        mod->stats.calls++;
        if (mod->stats.calls - ended > mod->stats.max_in_flight)
            mod->stats.max_in_flight = mod->stats.calls - ended;
        if (is_ok_action(plan->step.action))
            mod->stats.ok++;
        else
            mod->stats.faults++;
    }
    return BSC_OK;
}

void sim_plan_cleanup(struct sim_plan *plan)
{
    sim_step_cleanup(&plan->step);
}

void sim_models_end(struct sim_models *m, struct bsc_str name, uint64_t gen, bool cancelled)
{
    struct sim_model *mod;

    if (gen != m->gen)
        return;
    mod = sim_models_get(m, name, false);
    if (!mod)
        return;
    if (cancelled)
        mod->stats.cancelled++;
    else
        mod->stats.completed++;
}

void sim_models_held(struct sim_models *m, struct bsc_str name, uint64_t gen, bool held)
{
    struct sim_model *mod;

    if (gen != m->gen)
        return;
    mod = sim_models_get(m, name, false);
    if (!mod)
        return;
    if (held)
        mod->stats.held++;
    else if (mod->stats.held)
        mod->stats.held--;
}

void sim_models_reject(struct sim_models *m, struct bsc_str name)
{
    struct sim_model *mod = sim_models_get(m, name, true);

    if (!mod)
        return;
    mod->stats.calls++;
    mod->stats.faults++;
    mod->stats.completed++;
}

void sim_models_arrived(struct sim_models *m, struct bsc_str name, uint64_t now_ms)
{
    struct sim_model *mod = sim_models_get(m, name, true);

    if (mod)
        sim_arrivals_add(&mod->arrivals, now_ms);
}

/* ---- the request log ---- */

static char *dup_cstr(const char *s)
{
    return bsc_str_dup(bsc_str_cstr(s ? s : ""));
}

static enum bsc_err logent_copy(struct sim_logent *dst, const struct sim_logent *in)
{
    size_t blen = in->body_len > SIM_LOG_BODY_MAX ? SIM_LOG_BODY_MAX : in->body_len;

    memset(dst, 0, sizeof(*dst));
    dst->method = dup_cstr(in->method);
    dst->path = dup_cstr(in->path);
    dst->query = dup_cstr(in->query);
    dst->headers_json = dup_cstr(in->headers_json ? in->headers_json : "{}");
    dst->model = dup_cstr(in->model);
    dst->body = bsc_str_dup(bsc_str_make(in->body ? in->body : "", in->body ? blen : 0));
    dst->body_len = in->body ? blen : 0;
    dst->body_truncated = in->body_truncated || blen < in->body_len;
    dst->outcome = in->outcome ? in->outcome : "?";
    dst->seq = in->seq;
    if (!dst->method || !dst->path || !dst->query || !dst->headers_json || !dst->model ||
        !dst->body) {
        logent_cleanup(dst);
        return BSC_ENOMEM;
    }
    return BSC_OK;
}

static void reqlog_push(struct sim_reqlog *log, const struct sim_logent *in)
{
    struct sim_logent *slot;

    if (log->count < SIM_LOG_MAX) {
        slot = &log->ents[(log->head + log->count) % SIM_LOG_MAX];
        if (logent_copy(slot, in) == BSC_OK)
            log->count++;
        return;
    }
    slot = &log->ents[log->head];
    logent_cleanup(slot);
    log->head = (log->head + 1) % SIM_LOG_MAX;
    log->count--;
    if (logent_copy(&log->ents[(log->head + log->count) % SIM_LOG_MAX], in) == BSC_OK)
        log->count++;
}

void sim_models_log(struct sim_models *m, const struct sim_logent *in)
{
    struct bsc_str model = bsc_str_cstr(in->model);

    reqlog_push(&m->all, in);
    if (model.len) {
        struct sim_model *mod = sim_models_get(m, model, true);
        if (mod)
            reqlog_push(&mod->log, in);
    }
}

enum bsc_err sim_headers_json(const struct bsc_str *names, const struct bsc_str *values,
                              size_t n, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_char(out, '{');
    bool first = true;

    for (size_t i = 0; i < n && !err; i++) {
        struct bsc_buf lname;
        bool seen = false;

        for (size_t j = 0; j < i && !seen; j++)
            seen = bsc_str_ieq(names[i], names[j]);
        if (seen)
            continue; /* already written, joined with this one */
        bsc_buf_init(&lname, SIM_LOG_BODY_MAX);
        for (size_t k = 0; k < names[i].len && !err; k++)
            err = bsc_buf_append_char(&lname, (char)tolower((unsigned char)names[i].p[k]));
        if (!err && !first)
            err = bsc_buf_append_char(out, ',');
        first = false;
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(&lname));
        bsc_buf_cleanup(&lname);
        if (!err) {
            /* The joined value: this one and every later header of the same name. */
            struct bsc_buf val;
            bsc_buf_init(&val, SIM_LOG_BODY_MAX);
            err = bsc_buf_append_str(&val, values[i]);
            for (size_t j = i + 1; j < n && !err; j++) {
                if (!bsc_str_ieq(names[i], names[j]))
                    continue;
                err = bsc_buf_append(&val, ", ", 2);
                if (!err)
                    err = bsc_buf_append_str(&val, values[j]);
            }
            if (!err)
                err = bsc_buf_append_char(out, ':');
            if (!err)
                err = bsc_buf_append_json_str(out, bsc_buf_str(&val));
            bsc_buf_cleanup(&val);
        }
    }
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err;
}

/* ---- renderings ---- */

static enum bsc_err stats_json(const struct sim_stats *s, struct bsc_buf *out)
{
    uint64_t ended = s->completed + s->cancelled;

    return bsc_buf_appendf(out,
                           "{\"calls\":%llu,\"ok\":%llu,\"faults\":%llu,\"completed\":%llu,"
                           "\"cancelled\":%llu,\"in_flight\":%llu,\"max_in_flight\":%llu,"
                           "\"held\":%llu}",
                           (unsigned long long)s->calls, (unsigned long long)s->ok,
                           (unsigned long long)s->faults, (unsigned long long)s->completed,
                           (unsigned long long)s->cancelled,
                           (unsigned long long)(s->calls > ended ? s->calls - ended : 0),
                           (unsigned long long)s->max_in_flight, (unsigned long long)s->held);
}

enum bsc_err sim_models_stats_json(const struct sim_models *m, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(out, "{\"total\":%llu,\"models\":{",
                                       (unsigned long long)m->total);
    bool first = true;

    for (const struct sim_model *mod = m->head; mod && !err; mod = mod->next) {
        if (strcmp(mod->name, SIM_STAR) == 0 && mod->stats.calls == 0)
            continue;
        if (!first)
            err = bsc_buf_append_char(out, ',');
        first = false;
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_str_cstr(mod->name));
        if (!err)
            err = bsc_buf_append_char(out, ':');
        if (!err)
            err = stats_json(&mod->stats, out);
    }
    if (!err)
        err = bsc_buf_append(out, "}}", 2);
    return err;
}

static enum bsc_err logent_json(const struct sim_logent *e, struct bsc_buf *out)
{
    struct json_object *body = NULL;
    enum bsc_err err;

    err = bsc_buf_appendf(out, "{\"seq\":%llu,\"method\":", (unsigned long long)e->seq);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->method));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"path\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->path));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"query\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->query));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"model\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->model));
    if (!err)
        err = bsc_buf_appendf(out, ",\"outcome\":\"%s\",\"headers\":%s,\"body_truncated\":%s,"
                                   "\"body\":",
                              e->outcome, e->headers_json, e->body_truncated ? "true" : "false");
    if (!err && e->body_len && !e->body_truncated)
        body = sim_json_parse(bsc_str_make(e->body, e->body_len), NULL, 0);
    if (!err && body)
        err = sim_json_append(out, body);
    else if (!err && e->body_len)
        err = bsc_buf_append_json_str(out, bsc_str_make(e->body, e->body_len));
    else if (!err)
        err = bsc_buf_append_cstr(out, "null");
    json_object_put(body);
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err;
}

static enum bsc_err reqlog_json(const struct sim_reqlog *log, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_char(out, '[');

    for (size_t i = 0; i < log->count && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = logent_json(&log->ents[(log->head + i) % SIM_LOG_MAX], out);
    }
    if (!err)
        err = bsc_buf_append_char(out, ']');
    return err;
}

enum bsc_err sim_models_requests_json(const struct sim_models *m, struct bsc_str name,
                                      struct bsc_buf *out)
{
    const struct sim_model *mod;

    if (name.len == 0)
        return reqlog_json(&m->all, out);
    mod = find(m, name);
    if (!mod)
        return bsc_buf_append(out, "[]", 2);
    return reqlog_json(&mod->log, out);
}

/* Appends {"model":<name>, -- the start of an object about <mod>. */
static enum bsc_err model_head(const struct sim_model *mod, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"model\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(mod->name));
    return err ? err : bsc_buf_append_char(out, ',');
}

enum bsc_err sim_models_arrivals_json(const struct sim_models *m, struct bsc_str name,
                                      struct bsc_buf *out)
{
    const struct sim_model *mod = find(m, name);
    enum bsc_err err;

    if (!mod)
        return BSC_ENOTFOUND;
    err = model_head(mod, out);
    if (!err)
        err = sim_arrivals_json(&mod->arrivals, out);
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err;
}

enum bsc_err sim_models_model_json(const struct sim_models *m, struct bsc_str name,
                                   struct bsc_buf *out)
{
    const struct sim_model *mod = find(m, name);
    enum bsc_err err;

    if (!mod)
        return BSC_ENOTFOUND;
    err = model_head(mod, out);
    if (!err)
        err = bsc_buf_appendf(out, "\"spec\":%s,\"cursor\":{\"step\":%zu,\"used\":%u},\"stats\":",
                              mod->has_spec ? mod->spec_json : "null", mod->cur.step,
                              mod->cur.used);
    if (!err)
        err = stats_json(&mod->stats, out);
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err;
}
