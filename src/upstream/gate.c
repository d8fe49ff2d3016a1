/* SPDX-License-Identifier: MIT */
/* gate.c -- the first connection to an https:// origin is made by one transfer alone.
 *
 * libcurl learns whether a TLS connection speaks HTTP/2 (ALPN) only when its handshake
 * ends. Until then every transfer it is given to the same origin opens a connection of its
 * own: a burst of 50 requests to a cold HTTP/2 upstream made 50 connections where one
 * carries them all. CURLOPT_PIPEWAIT would make them wait, but libcurl 7.88 lets its
 * waiting transfers out of its pending queue one at a time, when some other transfer ends:
 * with an HTTP/1.1 upstream and long streams, a waiting request could wait for minutes.
 *
 * So the waiting is done here. The first transfer to an origin that has never completed a
 * handshake (the probe) goes to curl; the others to that origin queue here, not in curl.
 * When the probe's connection is up (curl's pre-request callback: after the handshake,
 * before the request is written) the origin is known, and every queued transfer is handed
 * to curl at once, after curl returns control: on HTTP/2 they multiplex on the probe's
 * connection, on HTTP/1.1 each takes or opens a connection as before. A probe that ends
 * before its connection was up passes the role to the first queued transfer.
 *
 * Bounds: UP_GATE_MAX origins per multi (kept for its life; past that, transfers are not
 * gated); the queue holds only transfers the caller started and still owns. */
#include <stdlib.h>
#include <string.h>

#include "upstream/internal.h"

/* The scheme://authority part of <url>: its length, or 0 when it is not https://. */
static size_t origin_len(const char *url)
{
    static const char scheme[] = "https://";
    const char *slash;

    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return 0;
    slash = strchr(url + sizeof(scheme) - 1, '/');
    return slash ? (size_t)(slash - url) : strlen(url);
}

static struct up_gate *gate_find(struct up_multi *m, const char *url)
{
    size_t n = origin_len(url);

    if (!n)
        return NULL;
    for (size_t i = 0; i < m->n_gates; i++) {
        if (strlen(m->gates[i].origin) == n && memcmp(m->gates[i].origin, url, n) == 0)
            return &m->gates[i];
    }
    if (m->n_gates == UP_GATE_MAX || !(m->gates[m->n_gates].origin = strndup(url, n)))
        return NULL;
    return &m->gates[m->n_gates++];
}

bool up__gate_hold(struct up_transfer *t, const char *url)
{
    struct up_gate *g = gate_find(t->m, url);

    if (!g || g->known)
        return false;
    t->gate = g;
    if (!g->probe) {
        g->probe = t;
        return false;
    }
    t->gated = true;
    if (g->tail)
        g->tail->gate_next = t;
    else
        g->head = t;
    g->tail = t;
    return true;
}

void up__gate_connected(struct up_transfer *t)
{
    struct up_gate *g = t->gate;

    if (g && g->probe == t && !g->known) {
        g->known = true;
        g->probe = NULL;
        t->m->gates_ready = true;
    }
}

/* Hands queued <t> to curl; a transfer curl refuses ends as an internal failure. */
static void admit(struct up_transfer *t)
{
    t->gated = false;
    t->gate_next = NULL;
    if (curl_multi_add_handle(t->m->curlm, t->easy) != CURLM_OK)
        up__transfer_done(t, CURLE_OUT_OF_MEMORY);
}

static struct up_transfer *pop(struct up_gate *g)
{
    struct up_transfer *t = g->head;

    if (t && !(g->head = t->gate_next))
        g->tail = NULL;
    return t;
}

void up__gate_release(struct up_multi *m)
{
    m->gates_ready = false;
    for (size_t i = 0; i < m->n_gates; i++) {
        struct up_gate *g = &m->gates[i];
        struct up_transfer *t;

        while (g->known && (t = pop(g)))
            admit(t);
    }
}

void up__gate_leave(struct up_transfer *t)
{
    struct up_gate *g = t->gate;
    struct up_transfer **pp, *next;

    if (!g)
        return;
    t->gate = NULL;
    if (t->gated) {
        for (pp = &g->head; *pp && *pp != t; pp = &(*pp)->gate_next)
            ;
        if (*pp)
            *pp = t->gate_next;
        if (g->tail == t) {
            g->tail = g->head;
            while (g->tail && g->tail->gate_next)
                g->tail = g->tail->gate_next;
        }
        t->gated = false;
        return;
    }
    if (g->probe != t || t->m->closing)
        return;
    /* The probe ended before its connection was up: the next in line tries. */
    g->probe = next = pop(g);
    if (next)
        admit(next);
}

void up__gates_free(struct up_multi *m)
{
    for (size_t i = 0; i < m->n_gates; i++)
        free(m->gates[i].origin);
    m->n_gates = 0;
}
