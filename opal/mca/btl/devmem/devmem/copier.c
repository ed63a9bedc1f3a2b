/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The copier (see copier.h).
 */
#include "build_config.h"

#include "copier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void devmem_copier_init(struct devmem_copier *c)
{
    memset(c, 0, sizeof(*c));
    c->ordinal = -1;
}

static void retire(struct devmem_copier *c, uint64_t wait_upto);

void devmem_copier_fini(struct devmem_copier *c)
{
    /* whatever failed, nothing may still run into memory about to go */
    while (c->inflight > 0) {
        c->failed_ticket = 0;
        retire(c, c->last_ticket);
    }
    devmem_copier_discard(c);
    free(c->d2d);
    free(c->other);
    free(c->held);
    free(c->owned);
    for (size_t i = 0; i < DEVMEM_COPIER_INFLIGHT; i++) {
        free(c->slot[i].pieces);
        free(c->slot[i].owned);
    }
    devmem_copier_init(c);
}

static void free_owned(void **v, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        free(v[i]);
    }
    *n = 0;
}

static int grow(struct devmem_copy **v, size_t *cap, size_t need, struct devmem_err *err)
{
    size_t ncap = *cap ? *cap : 64;
    struct devmem_copy *nv;

    if (need <= *cap) {
        return 0;
    }
    while (ncap < need) {
        ncap *= 2;
    }
    if (NULL == (nv = realloc(*v, ncap * sizeof(**v)))) {
        return devmem_err_set(err, ENOMEM, "copier: no memory for %zu pieces", ncap);
    }
    *v = nv;
    *cap = ncap;
    return 0;
}

static int push(struct devmem_copy **v, size_t *n, size_t *cap, void *dst, const void *src,
                size_t len, struct devmem_err *err)
{
    int rc = grow(v, cap, *n + 1, err);

    if (0 != rc) {
        return rc;
    }
    (*v)[*n].dst = dst;
    (*v)[*n].src = src;
    (*v)[*n].len = len;
    (*n)++;
    return 0;
}

/* ---------------------------------------------------------------- slots in flight */

/* Has slot s finished? 1 yes, 0 not yet, -errno failed (the slot is spent either way
 * unless 0). wait: block until it has. */
static int slot_test(struct devmem_copier_slot *s, unsigned int defer_polls, int wait,
                     struct devmem_err *err)
{
    if (s->ordinal < 0) {
        if (!wait && ++s->polls <= defer_polls) {
            return 0;
        }
        for (size_t i = 0; i < s->npieces; i++) {
            memcpy(s->pieces[i].dst, s->pieces[i].src, s->pieces[i].len);
        }
        return 1;
    }
    return devmem_cuda_fence_test(s->ordinal, s->fence, wait, err);
}

/* Retire finished slots, oldest first; block for every slot up to ticket wait_upto. Stops
 * after a failed one, which stays to be reported (failed_ticket) before any later retires. */
static void retire(struct devmem_copier *c, uint64_t wait_upto)
{
    while (c->inflight > 0 && 0 == c->failed_ticket) {
        struct devmem_copier_slot *s = &c->slot[c->head];
        struct devmem_err e;
        int rc = slot_test(s, c->defer_polls, s->ticket <= wait_upto, &e);

        if (0 == rc) {
            return;
        }
        if (rc < 0) {
            c->failed_ticket = s->ticket;
            c->failure = e;
        }
        free_owned(s->owned, &s->n_owned);
        c->done_ticket = s->ticket;
        c->head = (c->head + 1) % DEVMEM_COPIER_INFLIGHT;
        c->inflight--;
    }
}

/* A new slot for the queued pieces of one kind, their arrays copied in (the queue is
 * refilled while these run). */
static struct devmem_copier_slot *slot_new(struct devmem_copier *c, size_t npieces,
                                           struct devmem_err *err)
{
    struct devmem_copier_slot *s;

    if (DEVMEM_COPIER_INFLIGHT == c->inflight) {
        /* a failure stops retiring until it is reported: none to report, no room */
        if (0 != c->failed_ticket) {
            (void) devmem_err_set(err, EBUSY, "copier: %d gathers in flight and a failed "
                                  "one not yet reported", DEVMEM_COPIER_INFLIGHT);
            return NULL;
        }
        c->stats.waits++;
        retire(c, c->slot[c->head].ticket);
    }
    s = &c->slot[(c->head + c->inflight) % DEVMEM_COPIER_INFLIGHT];
    if (0 != grow(&s->pieces, &s->cap, npieces, err)) {
        return NULL;
    }
    s->ticket = c->last_ticket + 1;
    s->fence = NULL;
    s->polls = 0;
    s->n_d2d = 0;
    s->npieces = 0;
    return s;
}

static void slot_launched(struct devmem_copier *c)
{
    c->last_ticket++;
    c->inflight++;
    if (c->inflight > c->stats.inflight_max) {
        c->stats.inflight_max = c->inflight;
    }
}

/* The queued device pieces were launched: count them. */
static void count_launch(struct devmem_copier *c)
{
    c->stats.kernels += c->n_d2d > 1;
    c->stats.pieces += c->n_d2d + c->n_other;
    c->stats.flushes++;
    for (size_t i = 0; i < c->n_d2d; i++) {
        c->stats.device_bytes += c->d2d[i].len;
    }
    for (size_t i = 0; i < c->n_other; i++) {
        c->stats.device_bytes += c->other[i].len;
    }
}

/* Launch the queued device pieces on their device's stream, a fence after them. */
static int submit_device(struct devmem_copier *c, struct devmem_err *err)
{
    size_t n = c->n_d2d + c->n_other;
    struct devmem_copier_slot *s;
    int rc;

    if (0 == n) {
        return 0;
    }
    if (NULL == (s = slot_new(c, n, err))) {
        rc = -err->code;
        goto out;
    }
    if (c->n_d2d > 0) {
        memcpy(s->pieces, c->d2d, c->n_d2d * sizeof(*s->pieces));
    }
    if (c->n_other > 0) {
        memcpy(s->pieces + c->n_d2d, c->other, c->n_other * sizeof(*s->pieces));
    }
    if (c->n_owned > s->cap_owned) {
        void **no = realloc(s->owned, c->n_owned * sizeof(*no));

        if (NULL == no) {
            rc = devmem_err_set(err, ENOMEM, "copier: no memory to track %zu copies",
                                c->n_owned);
            goto out;
        }
        s->owned = no;
        s->cap_owned = c->n_owned;
    }
    memcpy(s->owned, c->owned, c->n_owned * sizeof(*s->owned));
    s->n_d2d = c->n_d2d;
    s->npieces = n;
    s->ordinal = c->ordinal;
    rc = devmem_cuda_copy_start(s->ordinal, s->pieces, s->n_d2d, 1, err);
    if (0 == rc) {
        rc = devmem_cuda_copy_start(s->ordinal, s->pieces + s->n_d2d, n - s->n_d2d, 0, err);
    }
    if (0 == rc && 0 != (rc = devmem_cuda_fence(s->ordinal, &s->fence, err))) {
        /* launched, and nothing will tell when it is over: over before we go on */
        (void) devmem_cuda_sync(s->ordinal, NULL);
    }
    if (0 != rc) {
        goto out;
    }
    s->n_owned = c->n_owned; /* the slot frees them now */
    c->n_owned = 0;
    slot_launched(c);
    count_launch(c);
out:
    c->n_d2d = c->n_other = 0;
    c->ordinal = -1;
    return rc;
}

/* The queued device pieces of one device, run and waited for: a receive whose pieces go
 * to two devices (rare) keeps one ticket, for the last device's. */
static int run_device_now(struct devmem_copier *c, struct devmem_err *err)
{
    int rc = devmem_cuda_copy_start(c->ordinal, c->d2d, c->n_d2d, 1, err);

    if (0 == rc) {
        rc = devmem_cuda_copy_start(c->ordinal, c->other, c->n_other, 0, err);
    }
    if (0 == rc) {
        count_launch(c);
        /* a failed start has waited for the stream already */
        rc = devmem_cuda_sync(c->ordinal, err);
    }
    c->n_d2d = c->n_other = 0;
    c->ordinal = -1;
    free_owned(c->owned, &c->n_owned);
    return rc;
}

/* Hold the queued host pieces back in a slot of their own (defer_polls). */
static int submit_held(struct devmem_copier *c, struct devmem_err *err)
{
    struct devmem_copier_slot *s;

    if (0 == c->n_held) {
        return 0;
    }
    s = slot_new(c, c->n_held, err);
    if (NULL == s) {
        /* nowhere to hold them: copy now, as without defer_polls */
        for (size_t i = 0; i < c->n_held; i++) {
            memcpy(c->held[i].dst, c->held[i].src, c->held[i].len);
        }
        c->n_held = 0;
        return 0;
    }
    memcpy(s->pieces, c->held, c->n_held * sizeof(*s->pieces));
    s->npieces = c->n_held;
    s->ordinal = -1;
    slot_launched(c);
    c->n_held = 0;
    return 0;
}

/* ---------------------------------------------------------------- the interface */

static int add(struct devmem_copier *c, void *dst, int dst_dev, const void *src, int src_dev,
               size_t len, int ordinal, int transient, struct devmem_err *err)
{
    int rc;

    if (0 == len) {
        return 0;
    }
    if (!dst_dev && !src_dev) {
        c->stats.host_bytes += len;
        if (c->defer_polls > 0 && !transient) {
            return push(&c->held, &c->n_held, &c->cap_held, dst, src, len, err);
        }
        memcpy(dst, src, len);
        return 0;
    }
    if (c->ordinal >= 0 && c->ordinal != ordinal && 0 != (rc = run_device_now(c, err))) {
        return rc;
    }
    c->ordinal = ordinal;
    if (transient) {
        void *copy = malloc(len), **no;

        if (NULL == copy) {
            return devmem_err_set(err, ENOMEM, "copier: no memory for %zu linear bytes", len);
        }
        if (c->n_owned == c->cap_owned) {
            size_t ncap = c->cap_owned ? 2 * c->cap_owned : 16;

            if (NULL == (no = realloc(c->owned, ncap * sizeof(*no)))) {
                free(copy);
                return devmem_err_set(err, ENOMEM, "copier: no memory to track copies");
            }
            c->owned = no;
            c->cap_owned = ncap;
        }
        memcpy(copy, src, len);
        c->owned[c->n_owned++] = copy;
        src = copy;
    }
    if (dst_dev && src_dev) {
        return push(&c->d2d, &c->n_d2d, &c->cap_d2d, dst, src, len, err);
    }
    return push(&c->other, &c->n_other, &c->cap_other, dst, src, len, err);
}

int devmem_copier_add(struct devmem_copier *c, void *dst, int dst_dev, const void *src,
                      int src_dev, size_t len, int ordinal, struct devmem_err *err)
{
    return add(c, dst, dst_dev, src, src_dev, len, ordinal, 0, err);
}

int devmem_copier_add_transient(struct devmem_copier *c, void *dst, int dst_dev,
                                const void *src, int src_dev, size_t len, int ordinal,
                                struct devmem_err *err)
{
    return add(c, dst, dst_dev, src, src_dev, len, ordinal, 1, err);
}

int devmem_copier_submit(struct devmem_copier *c, uint64_t *ticket, struct devmem_err *err)
{
    struct devmem_err e;
    uint64_t before = c->last_ticket;
    int rc = submit_device(c, &e);

    if (0 == rc) {
        rc = submit_held(c, &e);
    }
    devmem_copier_discard(c); /* empties the queue: launched, or dropped on failure */
    *ticket = c->last_ticket == before ? 0 : c->last_ticket;
    if (0 != rc && NULL != err) {
        *err = e;
    }
    return rc;
}

void devmem_copier_discard(struct devmem_copier *c)
{
    c->n_d2d = c->n_other = c->n_held = 0;
    c->ordinal = -1;
    free_owned(c->owned, &c->n_owned);
}

int devmem_copier_test(struct devmem_copier *c, uint64_t ticket, struct devmem_err *err)
{
    if (ticket > c->last_ticket) {
        return devmem_err_set(err, EINVAL, "copier: ticket %llu was never given",
                              (unsigned long long) ticket);
    }
    if (ticket > c->done_ticket) {
        retire(c, 0);
    }
    if (0 != c->failed_ticket && ticket >= c->failed_ticket) {
        if (NULL != err) {
            *err = c->failure;
        }
        c->failed_ticket = 0;
        return -c->failure.code;
    }
    return ticket <= c->done_ticket;
}

int devmem_copier_wait(struct devmem_copier *c, uint64_t ticket, struct devmem_err *err)
{
    int rc;

    if (ticket > c->done_ticket) {
        c->stats.waits++;
    }
    /* each pass either reaches ticket or stops at a failure, which test reports */
    while (0 == (rc = devmem_copier_test(c, ticket, err))) {
        retire(c, ticket);
    }
    return rc < 0 ? rc : 0;
}
