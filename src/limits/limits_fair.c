/* SPDX-License-Identifier: MIT */
/* limits_fair.c -- the fair queue of a limit set (limits.h): requests waiting for a target's
 * or provider's room are served in order of a tag, start-time fair queuing: a client's next
 * waiting request is tagged one step (1 / its weight) after its previous one still waiting,
 * or after the tag last served when it has none. So a client with forty waiting requests
 * and a client with one alternate, each weighted, instead of the one waiting behind the
 * forty. Under the set's lock; a handful of waiting requests per set, scanned linearly. */
#include <stdlib.h>

#include "limits/limits.h"

static struct lim_ticket *find(struct lim_fair *f, const void *who)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].who == who)
            return &f->t[i];
    return NULL;
}

/* The tag a new ticket of <client> starts from: its last one waiting, else the virtual
 * time (the tag last served). */
static double start_tag(const struct lim_fair *f, const void *client)
{
    double tag = f->vt;

    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].client == client && f->t[i].tag > tag)
            tag = f->t[i].tag;
    return tag;
}

bool lim_fair_enter(struct lim_set *s, const void *who, const void *client, uint32_t weight,
                    enum lim_kind kind)
{
    struct lim_fair *f = &s->fair;
    bool ok = true;

    pthread_mutex_lock(&s->mu);
    if (!find(f, who)) {
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 8;
            struct lim_ticket *t = realloc(f->t, cap * sizeof(*t));

            ok = t != NULL;
            if (ok) {
                f->t = t;
                f->cap = cap;
            }
        }
        if (ok)
            f->t[f->n++] = (struct lim_ticket){who, client,
                                               start_tag(f, client) + 1.0 / (weight ? weight : 1),
                                               f->seq++, kind};
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

uint64_t lim_fair_leave(struct lim_set *s, const void *who, bool served)
{
    struct lim_fair *f = &s->fair;
    struct lim_ticket *t;
    uint64_t w = 0;

    pthread_mutex_lock(&s->mu);
    if ((t = find(f, who))) {
        if (served && t->tag > f->vt)
            f->vt = t->tag;
        *t = f->t[--f->n];
        w = s->waiters; /* the next in turn may go now */
        s->waiters = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return w;
}

/* The ticket served next: the smallest tag, the oldest of equal tags. */
static const struct lim_ticket *head(const struct lim_fair *f)
{
    const struct lim_ticket *h = NULL;

    for (size_t i = 0; i < f->n; i++)
        if (!h || f->t[i].tag < h->tag || (f->t[i].tag == h->tag && f->t[i].seq < h->seq))
            h = &f->t[i];
    return h;
}

enum lim_kind lim__fair_turn_locked(struct lim_set *s, const void *who)
{
    const struct lim_ticket *h = head(&s->fair);

    return !h || h->who == who ? LIM_NONE : h->kind;
}

enum lim_kind lim_fair_turn(struct lim_set *s, const void *who)
{
    enum lim_kind k;

    if (!lim_set_active(s))
        return LIM_NONE;
    pthread_mutex_lock(&s->mu);
    k = lim__fair_turn_locked(s, who);
    pthread_mutex_unlock(&s->mu);
    return k;
}

void lim_fair_free(struct lim_set *s)
{
    free(s->fair.t);
    s->fair = (struct lim_fair){0};
}
