/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, receiving side: the gather of each devmem receive into the gets it belongs
 * to, pipelined. A receive's pieces are launched (one GPU launch for device memory) and the
 * lane goes on receiving; the receive waits here, holding its pool tokens and the gets it
 * finished, until its gather is done; then the tokens go back and the gets complete, oldest
 * receive first. btl_devmem_gather_depth bounds the receives of one lane in flight; a full
 * pool, a closing lane and a failure wait for them.
 *
 * Host destinations are copied by the CPU at once, so their receives finish there and then,
 * never queued: the pipeline costs them nothing. btl_devmem_emul_gather_lag holds host
 * copies back as a GPU would, so that CI exercises the pipeline without one.
 *
 * Threads: everything here runs under the dispatch lock (receive callbacks and the
 * component's progress), which serialises it; gets are moved under the endpoint's lock.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btl_devmem_devflow_int.h"

#include "devmem/copy.h"

/* One receive whose gather may still run: what it holds until then. */
struct inflight_rx {
    struct inflight_rx *next;
    struct mca_btl_devmem_devflow *df;
    uint64_t ticket;
    uint32_t *tokens; /* of its dmabuf fragments, still outstanding in df's ledger */
    size_t ntokens, cap;
    opal_list_t done; /* gets and chunks whose last byte came in this receive */
};

static struct {
    bool ready;
    struct devmem_copier copier;
    struct inflight_rx *head, *tail; /* in ticket order */
    struct inflight_rx *spare;       /* finished ones, for reuse */
    size_t n;
} pending;

static void pipe_ready(void)
{
    if (!pending.ready) {
        devmem_copier_init(&pending.copier);
        pending.copier.defer_polls = (unsigned int) (mca_btl_devmem_component.emul_gather_lag > 0
                                                      ? mca_btl_devmem_component.emul_gather_lag
                                                      : 0);
        pending.ready = true;
    }
}

static struct inflight_rx *rec_get(struct mca_btl_devmem_devflow *df)
{
    struct inflight_rx *r = pending.spare;

    if (NULL != r) {
        pending.spare = r->next;
    } else if (NULL != (r = calloc(1, sizeof(*r)))) {
        OBJ_CONSTRUCT(&r->done, opal_list_t);
    } else {
        return NULL;
    }
    r->next = NULL;
    r->df = df;
    r->ntokens = 0;
    return r;
}

static void rec_put(struct inflight_rx *r)
{
    r->df = NULL;
    r->next = pending.spare;
    pending.spare = r;
}

static int rec_token(struct inflight_rx *r, uint32_t token)
{
    if (r->ntokens == r->cap) {
        size_t ncap = r->cap ? 2 * r->cap : 256;
        uint32_t *nt = realloc(r->tokens, ncap * sizeof(*nt));

        if (NULL == nt) {
            return -1;
        }
        r->tokens = nt;
        r->cap = ncap;
    }
    r->tokens[r->ntokens++] = token;
    return 0;
}

/* The oldest receive, out of the queue. */
static struct inflight_rx *pop_oldest(void)
{
    struct inflight_rx *r = pending.head;

    pending.head = r->next;
    if (NULL == pending.head) {
        pending.tail = NULL;
    }
    pending.n--;
    r->df->gathers--;
    return r;
}

/* ---------------------------------------------------------------- one receive in */

/* Queue one piece: len bytes at pool offset off (pool NULL: at src in the receive's linear
 * buffer, which the next receive overwrites). */
static int gather_piece(struct devmem_region *pool, size_t off, const char *src,
                        mca_btl_devmem_frag_t *get, char *dst, size_t len, char *why,
                        size_t whylen)
{
    struct devmem_copier *c = &pending.copier;
    struct devmem_err e;
    int src_dev = 0, ordinal = get->dst_dev ? get->ordinal : 0, rc;

    if (NULL == pool) {
        rc = devmem_copier_add_transient(c, dst, get->dst_dev, src, 0, len, ordinal, &e);
    } else {
        if (&devmem_provider_cuda == pool->provider) {
            src = (const char *) (uintptr_t) (pool->dev_addr + off);
            src_dev = 1;
            ordinal = (int) pool->priv_u64;
        } else if (NULL != pool->map) {
            src = (const char *) pool->map + off;
        } else if (!get->dst_dev) {
            /* a pool the CPU cannot map: its provider copies, now */
            if (0 != devmem_region_copy_out(pool, off, dst, len, &e)) {
                snprintf(why, whylen, "copying out of the RX pool: %s", e.msg);
                return -1;
            }
            return 0;
        } else {
            snprintf(why, whylen, "a %s RX pool cannot feed device memory", pool->provider->name);
            return -1;
        }
        rc = devmem_copier_add(c, dst, get->dst_dev, src, src_dev, len, ordinal, &e);
    }
    if (0 != rc) {
        snprintf(why, whylen, "gathering into the destination: %s", e.msg);
        return -1;
    }
    return 0;
}

/* Lay the pieces of receive b out over df's gets (in stream order); gets it finishes move
 * to r->done. */
static int lay_out(struct mca_btl_devmem_devflow *df, struct devmem_rx_batch *b,
                   struct inflight_rx *r, char *why, size_t len)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    /* the flow's own binding, looked up again only if the kernel names another */
    struct devmem_region *flow_pool = &df->rx_dev->pool;
    uint32_t flow_id = df->rx_dev->rx_id;

    for (size_t i = 0; i < b->nfrags; i++) {
        const struct devmem_frag *f = &b->frags[i];
        struct devmem_region *pool = NULL;
        size_t off = 0;

        if (DEVMEM_FRAG_DMABUF == f->kind) {
            if (f->dmabuf_id != flow_id) {
                flow_pool = mca_btl_devmem_dev_pool(f->dmabuf_id);
                flow_id = f->dmabuf_id;
            }
            if (NULL == (pool = flow_pool)) {
                snprintf(why, len, "the kernel reported a fragment in dmabuf %u, which is not "
                         "ours", f->dmabuf_id);
                return -1;
            }
            mca_btl_devmem_component.stats.get_dmabuf += f->len;
        }
        while (off < f->len) {
            mca_btl_devmem_frag_t *get;
            size_t chunk;
            char *dst;

            OPAL_THREAD_LOCK(&ep->lock); /* the list's tail grows in btl_get */
            get = (mca_btl_devmem_frag_t *) opal_list_get_first(&df->gets);
            OPAL_THREAD_UNLOCK(&ep->lock);
            chunk = get->hdr.size - df->head_got;
            dst = (char *) get->local_address + df->head_got;
            if (chunk > f->len - off) {
                chunk = f->len - off;
            }
            if (0 != gather_piece(pool, f->offset + off, (const char *) b->linear + f->offset + off,
                                  get, dst, chunk, why, len)) {
                return -1;
            }
            off += chunk;
            df->head_got += chunk;
            OPAL_THREAD_LOCK(&ep->lock);
            df->expected -= chunk;
            if (df->head_got == get->hdr.size) {
                opal_list_remove_first(&df->gets);
                opal_list_append(&r->done, &get->base.super.super);
                df->head_got = 0;
            }
            OPAL_THREAD_UNLOCK(&ep->lock);
        }
    }
    return 0;
}

/* Where items go in to come first (the end sentinel of an empty list). */
static opal_list_item_t *list_front(opal_list_t *l)
{
    return opal_list_is_empty(l) ? opal_list_get_end(l) : opal_list_get_first(l);
}

/* Gets of r back at the head of df's list (they come before every get still there), to
 * fail with the lane. */
static void requeue_gets(struct inflight_rx *r)
{
    mca_btl_devmem_endpoint_t *ep = r->df->ep;

    OPAL_THREAD_LOCK(&ep->lock);
    opal_list_join(&r->df->gets, list_front(&r->df->gets), &r->done);
    OPAL_THREAD_UNLOCK(&ep->lock);
}

/* r's tokens back to df's ledger and the kernel. 0, or -1 with why. */
static int return_tokens(struct inflight_rx *r, char *why, size_t len)
{
    struct mca_btl_devmem_devflow *df = r->df;
    struct devmem_err e;
    int rc = 0;

    for (size_t i = 0; i < r->ntokens && 0 == rc; i++) {
        rc = devmem_ledger_release(&df->ledger, r->tokens[i], &e);
    }
    if (0 == rc) {
        rc = devmem_ledger_flush(&df->ledger, &e);
    }
    r->ntokens = 0;
    mca_btl_devmem_devflow_rx_account(df);
    if (0 != rc) {
        snprintf(why, len, "device flow %u: returning tokens: %s", df->lane, e.msg);
        return -1;
    }
    return 0;
}

static void finish(struct inflight_rx *r, int rc, const struct devmem_err *e);

int mca_btl_devmem_devflow_gather(struct mca_btl_devmem_devflow *df, struct devmem_rx_batch *b,
                                  char *why, size_t len)
{
    struct devmem_copier *c;
    struct inflight_rx *r;
    struct devmem_err e;
    uint64_t flushes;
    int rc;

    pipe_ready();
    c = &pending.copier;
    if (NULL == (r = rec_get(df))) {
        snprintf(why, len, "no memory to track a receive");
        return -1;
    }
    /* the tokens first: whatever fails below, the receive gives them back */
    for (size_t i = 0; i < b->nfrags; i++) {
        if (DEVMEM_FRAG_DMABUF == b->frags[i].kind && 0 != rec_token(r, b->frags[i].token)) {
            /* the lane fails; its ledger returns every token still out when it closes */
            snprintf(why, len, "no memory to hold a receive's tokens");
            rec_put(r);
            return -1;
        }
    }
    flushes = c->stats.flushes;
    rc = lay_out(df, b, r, why, len);
    if (0 == rc && 0 != devmem_copier_submit(c, &r->ticket, &e)) {
        snprintf(why, len, "gathering on the GPU: %s", e.msg);
        rc = -1;
    }
    mca_btl_devmem_component.stats.gather_calls += c->stats.flushes - flushes;
    if (0 != rc) {
        /* nothing of this receive runs any more (a failed submit leaves nothing in flight;
         * pieces only queued are dropped): its gets fail with the lane, its tokens go back */
        char scratch[DEVMEM_ERR_MSG_MAX + 96];

        devmem_copier_discard(c);
        requeue_gets(r);
        (void) return_tokens(r, scratch, sizeof(scratch));
        rec_put(r);
        return -1;
    }
    if (0 == r->ticket) {
        /* nothing launched (host copies are done): its bytes are in place, but a get it
         * finishes may have earlier bytes in a receive still gathering: after that one */
        if (NULL == pending.head) {
            finish(r, 0, NULL);
            return 0;
        }
        r->ticket = pending.tail->ticket;
    }
    if (NULL == pending.tail) {
        pending.head = r;
    } else {
        pending.tail->next = r;
    }
    pending.tail = r;
    pending.n++;
    df->gathers++;
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.gathers_inflight_max, pending.n);
    return 0;
}

/* ---------------------------------------------------------------- receives out */

/* r's gather is over (rc from the copier): tokens back, its gets complete, or its lane's
 * endpoint fails. */
static void finish(struct inflight_rx *r, int rc, const struct devmem_err *e)
{
    struct mca_btl_devmem_devflow *df = r->df;
    mca_btl_devmem_endpoint_t *ep = df->ep;
    char why[DEVMEM_ERR_MSG_MAX + 96];
    opal_list_item_t *item;

    if (rc < 0) {
        snprintf(why, sizeof(why), "device flow %u: gathering on the GPU: %s", df->lane,
                 e->msg);
    }
    if (0 != return_tokens(r, why, sizeof(why))) {
        rc = -1;
    }
    if (rc < 0) {
        requeue_gets(r);
        rec_put(r);
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        return;
    }
    while (NULL != (item = opal_list_remove_first(&r->done))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_SUCCESS);
    }
    rec_put(r);
}

/* Finish receives oldest first: those whose gather is done, and with until > 0 every one
 * whose ticket is at most until, waiting for them. Tickets are tested in the order they were
 * given, so a failed gather is reported to the receive it belongs to. A completion may call
 * progress, which reaps too, and may close lanes: each pass looks at the queue afresh. */
static int reap(uint64_t until)
{
    int finished = 0;

    while (NULL != pending.head) {
        uint64_t ticket = pending.head->ticket;
        struct devmem_err e;
        int rc = ticket <= until ? devmem_copier_wait(&pending.copier, ticket, &e)
                                 : devmem_copier_test(&pending.copier, ticket, &e);

        if (0 == rc && ticket > until) {
            break; /* still gathering, and so is every later one */
        }
        /* taken out before anything completes */
        finish(pop_oldest(), rc < 0 ? rc : 0, &e);
        finished++;
    }
    return finished;
}

int mca_btl_devmem_devflow_gather_progress(void)
{
    return NULL == pending.head ? 0 : reap(0);
}

bool mca_btl_devmem_devflow_gather_busy(void)
{
    return NULL != pending.head;
}

void mca_btl_devmem_devflow_gather_settle(struct mca_btl_devmem_devflow *df, size_t keep)
{
    while (df->gathers > keep) {
        struct inflight_rx *r = pending.head;

        while (r->df != df) {
            r = r->next;
        }
        mca_btl_devmem_component.stats.gather_waits++;
        (void) reap(r->ticket);
    }
}

bool mca_btl_devmem_devflow_gather_wait_oldest(void)
{
    if (NULL == pending.head) {
        return false;
    }
    mca_btl_devmem_component.stats.gather_waits++;
    (void) reap(pending.head->ticket);
    return true;
}

void mca_btl_devmem_devflow_gather_fini(void)
{
    struct inflight_rx *r;

    if (!pending.ready) {
        return;
    }
    /* every lane forgot its receives when it closed; any left would be a bug, but their
     * memory goes all the same */
    while (NULL != pending.head) {
        rec_put(pop_oldest());
    }
    devmem_copier_fini(&pending.copier);
    while (NULL != (r = pending.spare)) {
        pending.spare = r->next;
        OBJ_DESTRUCT(&r->done);
        free(r->tokens);
        free(r);
    }
    memset(&pending, 0, sizeof(pending));
}
