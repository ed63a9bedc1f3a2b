/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, receiving side: the gather of devmem receives into the gets they belong to,
 * in batches and pipelined. Each receive's pieces join the open batch and the lane goes on
 * receiving; the batch is launched (one GPU launch for device memory, whatever the number of
 * receives in it) when a receive in it finishes a get or a chunk (someone waits for those
 * bytes), when it holds an eighth of the RX pool, or when anything must wait for it (a full
 * pool, a closing lane). Its receives wait here, holding their pool tokens and the gets they
 * finished, until the batch is done; then the tokens go back, one DONTNEED per lane, and the
 * gets complete, oldest receive first. btl_devmem_gather_depth bounds the batches in flight.
 *
 * Host destinations are copied by the CPU as the pieces join, so their batches are done at
 * launch. btl_devmem_testing gather_lag= holds host copies back as a GPU would, so that CI
 * exercises the pipeline without one.
 *
 * A pipe is one thread's: the progress thread's (mca_btl_devmem_gather_main, under the
 * dispatch lock) or a receiving thread's; it hands finished gets and failures to its sink.
 * Gets are moved under the endpoint's lock.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devflow/btl_devmem_devflow_int.h"

#include "devmem/copier.h"

/* A receive in the open batch: its ticket comes when the batch is launched. */
#define TICKET_OPEN UINT64_MAX

/* One receive whose gather may still run: what it holds until then. */
struct inflight_rx {
    struct inflight_rx *next;
    struct mca_btl_devmem_devflow *df;
    uint64_t ticket;  /* the copier's, shared by its batch; TICKET_OPEN before launch */
    bool batch_last;  /* the last receive of its batch */
    uint32_t *tokens; /* of its dmabuf fragments, still outstanding in df's ledger */
    size_t ntokens, cap;
    opal_list_t done; /* gets and chunks whose last byte came in this receive */
    int failed;       /* finishing: 0, or why it fails */
    char why[DEVMEM_ERR_MSG_MAX + 96];
};

/* The progress thread's pipe: its finished gets complete, its failures fail, there and then. */
static void main_complete(void *ctx, mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag)
{
    mca_btl_devmem_endpoint_complete(ep, frag, OPAL_SUCCESS);
}

static void main_fail(void *ctx, struct mca_btl_devmem_devflow *df, const char *why)
{
    mca_btl_devmem_endpoint_fail(df->ep, why, 0);
}

static const struct mca_btl_devmem_gather_sink main_sink = {main_complete, main_fail};

struct mca_btl_devmem_gather_pipe mca_btl_devmem_gather_main = {.sink = &main_sink};

void mca_btl_devmem_gather_pipe_init(struct mca_btl_devmem_gather_pipe *p,
                                     const struct mca_btl_devmem_gather_sink *sink, void *ctx)
{
    memset(p, 0, sizeof(*p));
    p->sink = sink;
    p->sink_ctx = ctx;
}

/* Back to a pipe that was never used, its sink kept. */
static void pipe_forget(struct mca_btl_devmem_gather_pipe *p)
{
    mca_btl_devmem_gather_pipe_init(p, p->sink, p->sink_ctx);
}

static void pipe_ready(struct mca_btl_devmem_gather_pipe *p)
{
    if (!p->ready) {
        devmem_copier_init(&p->copier);
        p->copier.defer_polls = (unsigned int) (mca_btl_devmem_component.emul_gather_lag > 0
                                                      ? mca_btl_devmem_component.emul_gather_lag
                                                      : 0);
        p->ready = true;
    }
}

static struct inflight_rx *rec_get(struct mca_btl_devmem_gather_pipe *p,
                                   struct mca_btl_devmem_devflow *df)
{
    struct inflight_rx *r = p->spare;

    if (NULL != r) {
        p->spare = r->next;
    } else if (NULL != (r = calloc(1, sizeof(*r)))) {
        OBJ_CONSTRUCT(&r->done, opal_list_t);
    } else {
        return NULL;
    }
    r->next = NULL;
    r->df = df;
    r->ticket = TICKET_OPEN;
    r->batch_last = false;
    r->ntokens = 0;
    return r;
}

static void rec_put(struct mca_btl_devmem_gather_pipe *p, struct inflight_rx *r)
{
    r->df = NULL;
    r->next = p->spare;
    p->spare = r;
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
static struct inflight_rx *pop_oldest(struct mca_btl_devmem_gather_pipe *p)
{
    struct inflight_rx *r = p->head;

    p->head = r->next;
    if (NULL == p->head) {
        p->tail = NULL;
    }
    p->n--;
    r->df->gathers--;
    if (r->batch_last) {
        p->batches--;
    }
    return r;
}

/* ---------------------------------------------------------------- one receive in */

/* Queue one piece: len bytes at pool offset off (pool NULL: at src in the receive's linear
 * buffer, which the next receive overwrites). */
static int gather_piece(struct mca_btl_devmem_gather_pipe *p, struct devmem_region *pool,
                        size_t off, const char *src, mca_btl_devmem_frag_t *get, char *dst,
                        size_t len, char *why, size_t whylen)
{
    const struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);
    struct devmem_copier *c = &p->copier;
    struct devmem_err e;
    int src_dev = 0, ordinal = g->dst_dev ? g->ordinal : 0, rc;

    if (NULL == pool) {
        rc = devmem_copier_add_transient(c, dst, g->dst_dev, src, 0, len, ordinal, &e);
    } else {
        if (&devmem_provider_cuda == pool->provider) {
            src = (const char *) (uintptr_t) (pool->dev_addr + off);
            src_dev = 1;
            ordinal = (int) pool->priv_u64;
        } else if (NULL != pool->map) {
            src = (const char *) pool->map + off;
        } else if (!g->dst_dev) {
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
        rc = devmem_copier_add(c, dst, g->dst_dev, src, src_dev, len, ordinal, &e);
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
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.get_dmabuf, f->len);
        }
        while (off < f->len) {
            mca_btl_devmem_frag_t *get;
            size_t chunk;
            char *dst;

            OPAL_THREAD_LOCK(&ep->lock); /* the list's tail grows in btl_get */
            get = (mca_btl_devmem_frag_t *) opal_list_get_first(&df->gets);
            OPAL_THREAD_UNLOCK(&ep->lock);
            chunk = get->hdr.size - df->head_got;
            dst = (char *) mca_btl_devmem_getput(get)->local_address + df->head_got;
            if (chunk > f->len - off) {
                chunk = f->len - off;
            }
            if (0 != gather_piece(df->pipe, pool, f->offset + off,
                                  (const char *) b->linear + f->offset + off, get, dst, chunk,
                                  why, len)) {
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

/* r's tokens back to df's ledger, to go to the kernel with the next flush. */
static int release_tokens(struct inflight_rx *r, struct devmem_err *e)
{
    int rc = 0;

    for (size_t i = 0; i < r->ntokens && 0 == rc; i++) {
        rc = devmem_ledger_release(&r->df->ledger, r->tokens[i], e);
    }
    r->ntokens = 0;
    return rc;
}

/* Released tokens of r's lane to the kernel: merged into ranges, as many per call as the
 * kernel takes (a lane flushed already has none left, and costs nothing). */
static int flush_tokens(struct inflight_rx *r, struct devmem_err *e)
{
    int rc = devmem_ledger_flush(&r->df->ledger, e);

    mca_btl_devmem_devflow_rx_account(r->df);
    return rc;
}

/* The tokens of a receive that will never be gathered back to the kernel (a lane closed
 * meanwhile gave back every token it had out). */
static void give_tokens_back(struct inflight_rx *r)
{
    struct devmem_err e;

    if (MCA_BTL_DEVMEM_DF_RX_OPEN != r->df->rx_state) {
        r->ntokens = 0;
    } else if (0 == release_tokens(r, &e)) {
        (void) flush_tokens(r, &e);
    }
}

/* The open batch out of the queue, as a list (its launch failed). */
static struct inflight_rx *cut_open(struct mca_btl_devmem_gather_pipe *p)
{
    struct inflight_rx *batch = p->open, *r;

    if (p->head == batch) {
        p->head = p->tail = NULL;
    } else {
        for (r = p->head; r->next != batch; r = r->next) {
        }
        r->next = NULL;
        p->tail = r;
    }
    for (r = batch; NULL != r; r = r->next) {
        p->n--;
        r->df->gathers--;
    }
    p->open = NULL;
    p->open_bytes = 0;
    return batch;
}

static int reap(struct mca_btl_devmem_gather_pipe *p, uint64_t until);

/* Launch the open batch; its receives share the ticket that says when their bytes are in
 * place. A launch that fails fails their endpoints (nothing of the batch runs). */
static void batch_launch(struct mca_btl_devmem_gather_pipe *p)
{
    struct devmem_copier *c = &p->copier;
    struct inflight_rx *r;
    struct devmem_err e;
    uint64_t ticket, flushes = c->stats.flushes;
    size_t n = 0;

    if (NULL == p->open) {
        return;
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.gather_batches, 1);
    if (0 != devmem_copier_submit(c, &ticket, &e)) {
        /* nothing of it runs: every receive of the batch fails with its lane; all their
         * gets are back on their lanes before any endpoint fails and closes its lanes */
        struct inflight_rx *batch = cut_open(p), *next;

        for (r = batch; NULL != r; r = r->next) {
            snprintf(r->why, sizeof(r->why), "device flow %u: gathering on the GPU: %s",
                     r->df->lane, e.msg);
            requeue_gets(r);
        }
        for (r = batch; NULL != r; r = next) {
            next = r->next;
            give_tokens_back(r);
            r->df->rx_failed = true;
            p->sink->fail(p->sink_ctx, r->df, r->why);
            rec_put(p, r);
        }
        return;
    }
    /* nothing launched (host copies are done): in place once every earlier batch is */
    if (0 == ticket) {
        ticket = p->last_ticket;
    }
    p->last_ticket = ticket;
    for (r = p->open; NULL != r; r = r->next, n++) {
        r->ticket = ticket;
    }
    if (c->stats.flushes != flushes) {
        /* receives the GPU gathers */
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.gather_calls, n);
    }
    p->tail->batch_last = true;
    p->open = NULL;
    p->open_bytes = 0;
    p->batches++;
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.gathers_inflight_max,
                             p->batches);
}

int mca_btl_devmem_devflow_gather(struct mca_btl_devmem_devflow *df, struct devmem_rx_batch *b,
                                  char *why, size_t len)
{
    struct mca_btl_devmem_gather_pipe *p = df->pipe;
    struct inflight_rx *r;

    pipe_ready(p);
    if (NULL == (r = rec_get(p, df))) {
        snprintf(why, len, "no memory to track a receive");
        return -1;
    }
    /* the tokens first: whatever fails below, the receive gives them back */
    for (size_t i = 0; i < b->nfrags; i++) {
        if (DEVMEM_FRAG_DMABUF == b->frags[i].kind && 0 != rec_token(r, b->frags[i].token)) {
            /* the lane fails; its ledger returns every token still out when it closes */
            snprintf(why, len, "no memory to hold a receive's tokens");
            rec_put(p, r);
            return -1;
        }
    }
    if (0 != lay_out(df, b, r, why, len)) {
        /* the copier's queue holds the open batch's pieces and this receive's first ones:
         * all go, and are waited for, so that nothing runs into the gets about to fail
         * (this receive's, back on the lane first) or reads pages given back */
        requeue_gets(r);
        if (NULL != p->open) {
            batch_launch(p);
            (void) reap(p, p->last_ticket);
        } else {
            devmem_copier_discard(&p->copier); /* its own pieces only: none runs */
        }
        give_tokens_back(r);
        rec_put(p, r);
        return -1;
    }
    if (NULL == p->tail) {
        p->head = r;
    } else {
        p->tail->next = r;
    }
    p->tail = r;
    if (NULL == p->open) {
        p->open = r;
    }
    p->n++;
    df->gathers++;
    p->open_bytes += b->bytes;
    /* someone waits for what this receive finished; or the batch holds enough pool pages:
     * an eighth of the pool among all pipes' open batches, so that no thread's batch, which
     * only that thread launches, can starve another's receives of pages */
    if (!opal_list_is_empty(&r->done)
        || p->open_bytes >= mca_btl_devmem_component.rx_pool_size / 8
                                / (size_t) (1 + mca_btl_devmem_component.rx_threads_running)) {
        batch_launch(p);
    }
    return 0;
}

/* ---------------------------------------------------------------- receives out */

/* The batch at the head of the queue is over (rc from the copier): its receives out of the
 * queue, their tokens back (one flush per lane), then their gets complete, or their lanes'
 * endpoints fail. Taken out before anything completes: a completion may call progress,
 * which reaps too, and may close lanes. */
static void finish_batch(struct mca_btl_devmem_gather_pipe *p, int rc,
                         const struct devmem_err *e)
{
    struct inflight_rx *batch = NULL, **link = &batch, *r, *next;
    struct devmem_err te;
    bool last;

    do {
        r = pop_oldest(p);
        last = r->batch_last;
        r->next = NULL;
        *link = r;
        link = &r->next;
    } while (!last);
    for (r = batch; NULL != r; r = r->next) {
        int trc = release_tokens(r, &te);

        r->failed = rc < 0 ? rc : trc;
        if (rc >= 0 && 0 != r->failed) {
            snprintf(r->why, sizeof(r->why), "device flow %u: returning tokens: %s",
                     r->df->lane, te.msg);
        }
    }
    for (r = batch; NULL != r; r = r->next) {
        int frc = flush_tokens(r, &te);

        if (0 == r->failed && 0 != frc) {
            r->failed = frc;
            snprintf(r->why, sizeof(r->why), "device flow %u: returning tokens: %s",
                     r->df->lane, te.msg);
        }
        if (rc < 0) {
            snprintf(r->why, sizeof(r->why), "device flow %u: gathering on the GPU: %s",
                     r->df->lane, e->msg);
        }
    }
    /* every failed receive's gets back on its lane before any endpoint fails and closes
     * its lanes (a lane closed twice would strand them) */
    for (r = batch; NULL != r; r = r->next) {
        if (0 != r->failed) {
            requeue_gets(r);
        }
    }
    for (r = batch; NULL != r; r = next) {
        mca_btl_devmem_endpoint_t *ep = r->df->ep;
        opal_list_item_t *item;

        next = r->next;
        if (0 != r->failed) {
            r->df->rx_failed = true;
            p->sink->fail(p->sink_ctx, r->df, r->why);
        }
        while (NULL != (item = opal_list_remove_first(&r->done))) {
            p->sink->complete(p->sink_ctx, ep, (mca_btl_devmem_frag_t *) item);
        }
        rec_put(p, r);
    }
}

/* Finish batches oldest first: those whose gather is done, and with until > 0 every one
 * whose ticket is at most until, waiting for them. Tickets are tested in the order they were
 * given, so a failed gather is reported to the batch it belongs to. The open batch is not
 * looked at. */
static int reap(struct mca_btl_devmem_gather_pipe *p, uint64_t until)
{
    int finished = 0;

    while (NULL != p->head && p->head != p->open) {
        uint64_t ticket = p->head->ticket;
        struct devmem_err e;
        int rc = ticket <= until ? devmem_copier_wait(&p->copier, ticket, &e)
                                 : devmem_copier_test(&p->copier, ticket, &e);

        if (0 == rc && ticket > until) { /* test: 0 is not yet (wait's 0 is done) */
            break; /* still gathering, and so is every later one */
        }
        finish_batch(p, rc < 0 ? rc : 0, &e);
        finished++;
    }
    return finished;
}

int mca_btl_devmem_devflow_gather_progress(struct mca_btl_devmem_gather_pipe *p)
{
    return NULL == p->head ? 0 : reap(p, 0);
}

bool mca_btl_devmem_devflow_gather_busy(const struct mca_btl_devmem_gather_pipe *p)
{
    /* the open batch waits for bytes from the network, not for the GPU */
    return NULL != p->head && p->head != p->open;
}

void mca_btl_devmem_devflow_gather_bound(struct mca_btl_devmem_gather_pipe *p)
{
    while (p->batches >= (size_t) mca_btl_devmem_component.gather_depth) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.gather_waits, 1);
        (void) reap(p, p->head->ticket);
    }
}

void mca_btl_devmem_devflow_gather_settle(struct mca_btl_devmem_devflow *df)
{
    struct mca_btl_devmem_gather_pipe *p = df->pipe;

    while (df->gathers > 0) {
        struct inflight_rx *r = p->head;

        while (r->df != df) {
            r = r->next;
        }
        if (TICKET_OPEN == r->ticket) {
            batch_launch(p); /* r, gone if the launch failed, is looked for again */
            continue;
        }
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.gather_waits, 1);
        (void) reap(p, r->ticket);
    }
}

bool mca_btl_devmem_devflow_gather_wait_oldest(struct mca_btl_devmem_gather_pipe *p)
{
    if (NULL == p->head) {
        return false;
    }
    /* a batch never waits for pool pages it holds itself */
    if (p->head == p->open) {
        batch_launch(p);
        if (NULL == p->head) {
            return true; /* its launch failed: its receives are gone, and their pages */
        }
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.gather_waits, 1);
    (void) reap(p, p->head->ticket);
    return true;
}

void mca_btl_devmem_devflow_gather_fini(struct mca_btl_devmem_gather_pipe *p)
{
    struct inflight_rx *r;

    if (!p->ready) {
        return;
    }
    /* every lane forgot its receives when it closed; any left would be a bug, but their
     * memory goes all the same */
    while (NULL != p->head) {
        rec_put(p, pop_oldest(p));
    }
    devmem_copier_fini(&p->copier);
    while (NULL != (r = p->spare)) {
        p->spare = r->next;
        OBJ_DESTRUCT(&r->done);
        free(r->tokens);
        free(r);
    }
    pipe_forget(p);
}
