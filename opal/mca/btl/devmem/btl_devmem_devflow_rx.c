/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, receiving side, one lane at a time: gets and chunks whose payload comes on
 * the lane, in the order they were asked; devmem receives into the RX pool; the gather of each receive's fragments
 * into the gets' destinations (one GPU launch for device memory); the tokens back before
 * anything else runs; then the gets complete. See btl_devmem_devflow_int.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "btl_devmem_devflow_int.h"
#include "btl_devmem_progress.h"

#include "devmem/copy.h"

/* Receives per readiness callback before the event loop gets its turn back. */
#define DEVFLOW_RX_ROUNDS 16

/* ---------------------------------------------------------------- statistics */

/* Add what the ledger counted since last time to the component's counters. */
static void account(struct mca_btl_devmem_devflow *df)
{
    struct mca_btl_devmem_stats *s = &mca_btl_devmem_component.stats;
    const struct devmem_rx_stats *now = &df->ledger.stats;

    s->tokens_received += now->tokens_received - df->counted.tokens_received;
    s->tokens_returned += now->tokens_returned - df->counted.tokens_returned;
    s->dontneed_calls += now->dontneed_calls - df->counted.dontneed_calls;
    s->rx_dmabuf += now->bytes_dmabuf - df->counted.bytes_dmabuf;
    s->rx_linear += now->bytes_linear - df->counted.bytes_linear;
    df->counted = *now;
}

size_t mca_btl_devmem_devflow_pending(const mca_btl_devmem_endpoint_t *ep)
{
    size_t n = 0;

    for (unsigned int lane = 0; lane < MCA_BTL_DEVMEM_DEVFLOWS_MAX; lane++) {
        const struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, lane);

        n += NULL == df ? 0 : (size_t) df->expected;
    }
    return n;
}

/* The pieces of one receive on their way to the gets; one per process (progress is serial). */
static struct devmem_copier copier;
static bool copier_ready;

/* Queue one piece: len bytes at pool offset off (pool NULL: at src in the linear buffer). */
static int gather_piece(struct devmem_region *pool, size_t off, const char *src,
                        mca_btl_devmem_frag_t *get, char *dst, size_t len, char *why,
                        size_t whylen)
{
    struct devmem_err e;
    int src_dev = 0, ordinal = get->dst_dev ? get->ordinal : 0;

    if (NULL != pool) {
        if (&devmem_provider_cuda == pool->provider) {
            src = (const char *) (uintptr_t) (pool->dev_addr + off);
            src_dev = 1;
            ordinal = (int) pool->priv_u64;
        } else if (NULL != pool->map) {
            src = (const char *) pool->map + off;
        } else if (!get->dst_dev) {
            /* a pool the CPU cannot map: its provider copies */
            if (0 != devmem_region_copy_out(pool, off, dst, len, &e)) {
                snprintf(why, whylen, "copying out of the RX pool: %s", e.msg);
                return -1;
            }
            return 0;
        } else {
            snprintf(why, whylen, "a %s RX pool cannot feed device memory", pool->provider->name);
            return -1;
        }
    }
    if (0 != devmem_copier_add(&copier, dst, get->dst_dev, src, src_dev, len, ordinal, &e)) {
        snprintf(why, whylen, "gathering into the destination: %s", e.msg);
        return -1;
    }
    return 0;
}

/*
 * Move every piece of the last receive into the gets it belongs to, in stream order, and
 * wait until all of it is in place. Finished gets move to done. 0, or -1 with why filled.
 */
static int gather(struct mca_btl_devmem_devflow *df, struct devmem_rx_batch *b,
                  opal_list_t *done, char *why, size_t len)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    /* the flow's own binding, looked up again only if the kernel names another */
    struct devmem_region *flow_pool = &df->rx_dev->pool;
    uint32_t flow_id = df->rx_dev->rx_id;
    uint64_t flushes;
    struct devmem_err e;

    if (!copier_ready) {
        devmem_copier_init(&copier);
        copier_ready = true;
    }
    flushes = copier.stats.flushes;
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
                opal_list_append(done, &get->base.super.super);
                df->head_got = 0;
            }
            OPAL_THREAD_UNLOCK(&ep->lock);
        }
    }
    if (0 != devmem_copier_flush(&copier, &e)) {
        snprintf(why, len, "gathering on the GPU: %s", e.msg);
        return -1;
    }
    mca_btl_devmem_component.stats.gather_calls += copier.stats.flushes - flushes;
    return 0;
}

/* Into RX_CLOSED from any state; an open flow gives its tokens back first. */
static void rx_close(struct mca_btl_devmem_devflow *df, const char *why)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    int sd = df->rx_sd;

    if (MCA_BTL_DEVMEM_DF_RX_CLOSED == df->rx_state) {
        return;
    }
    if (MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state) {
        (void) mca_btl_devmem_watch_set(&df->rx_watch, 0);
        /* the kernel's order: tokens back, then the socket's devmem state, then the fd */
        if (0 != devmem_ledger_close(&df->ledger, &e)) {
            opal_output(0, "btl:devmem: returning device-flow tokens at close: %s", e.msg);
        }
        account(df);
    }
    mca_btl_devmem_devflow_rx_state(df, MCA_BTL_DEVMEM_DF_RX_CLOSED, why);
    if (sd >= 0) {
        OPAL_THREAD_LOCK(&df->ep->lock);
        df->rx_sd = -1;
        OPAL_THREAD_UNLOCK(&df->ep->lock);
        if (NULL != k) {
            k->ops->sock_close(k, sd);
        }
        close(sd);
    }
}

/* Learn, once, which of its module's RX queues the lane's flow arrives on (the emulation
 * knows after the first receive; the real kernel is not asked). */
static void learn_queue(struct mca_btl_devmem_devflow *df, struct devmem_kernel *k)
{
    const struct mca_btl_devmem_dev *d = df->rx_dev;
    unsigned int q = 0;
    int rc = k->ops->sock_queue(k, df->rx_sd, &q, NULL);

    if (-ENOENT == rc) {
        return;
    }
    df->rx_qpos = 0 == rc && q >= d->rx_queue && q - d->rx_queue < d->rx_nqueues
                          && q - d->rx_queue < MCA_BTL_DEVMEM_RX_QUEUES_MAX
                      ? (int) (q - d->rx_queue) : -2;
    DEVMEM_VERBOSE(10, "device flow %u from %s arrives on RX queue %u of %s", df->lane,
                   OPAL_NAME_PRINT(df->ep->peer->name), q, d->module->itf.name);
}

/* What the gets on the lane still owe: they join from any thread (btl_get, ep->lock). */
static uint64_t owed(struct mca_btl_devmem_devflow *df)
{
    uint64_t n;

    OPAL_THREAD_LOCK(&df->ep->lock);
    n = df->expected;
    OPAL_THREAD_UNLOCK(&df->ep->lock);
    return n;
}

void mca_btl_devmem_devflow_rx_cb(int sd, short flags, void *arg)
{
    struct mca_btl_devmem_devflow *df = arg;
    mca_btl_devmem_endpoint_t *ep = df->ep;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    size_t cap;
    struct devmem_rx_batch *b = mca_btl_devmem_dev_batch(&cap);
    char why[DEVMEM_ERR_MSG_MAX + 96];
    opal_list_t done;
    opal_list_item_t *item;
    int failed = 0;
    bool said = false;

    mca_btl_devmem_progress_activity();
    OBJ_CONSTRUCT(&done, opal_list_t);
    for (int round = 0; round < DEVFLOW_RX_ROUNDS && !failed; round++) {
        struct devmem_err e;
        uint64_t expected = owed(df);
        ssize_t n;

        /* never consume bytes nobody asked for: 1 byte when nothing is owed, to tell EOF
         * from a peer that sends unasked */
        b->len = 0 == expected ? 1 : expected < cap ? (size_t) expected : cap;
        b->ledger = &df->ledger;
        n = k->ops->recv(k, df->rx_sd, b, MSG_DONTWAIT, &e);
        if (-EAGAIN == n || -EINTR == n) {
            break;
        }
        if (-ENOBUFS == n) {
            /* pool full: our tokens go back after every receive, so this is a transient
             * state; wait for the next readiness */
            mca_btl_devmem_component.stats.rx_pool_full++;
            break;
        }
        if (n < 0) {
            /* e.msg already ends with the errno's words */
            snprintf(why, sizeof(why), "device flow %u: receive failed: %s", df->lane, e.msg);
            failed = -(int) n;
            said = true;
            break;
        }
        mca_btl_devmem_component.stats.recv_calls++;
        if (0 == n) {
            if (0 == expected) {
                /* the peer closed its sending side in order (finalize) */
                DEVMEM_VERBOSE(20, "%s closed its device flow %u", OPAL_NAME_PRINT(ep->peer->name),
                               df->lane);
                rx_close(df, "the peer closed it in order");
                break;
            }
            snprintf(why, sizeof(why), "device flow %u closed with %llu bytes of gets owed",
                     df->lane, (unsigned long long) expected);
            failed = ECONNRESET;
            break;
        }
        if ((uint64_t) n > expected) {
            snprintf(why, sizeof(why), "the peer sent %zd bytes on device flow %u that no get "
                     "asked for", n, df->lane);
            failed = EPROTO;
            break;
        }
        if (-1 == df->rx_qpos) {
            learn_queue(df, k);
        }
        if (0 != gather(df, b, &done, why, sizeof(why))) {
            failed = EPROTO;
            break;
        }
        /* the whole receive is this lane's (and its queue's): counted once, not per piece */
        mca_btl_devmem_component.lane_rx_bytes[df->lane] += (uint64_t) n;
        if (df->rx_qpos >= 0) {
            mca_btl_devmem_component.queue_rx_bytes[df->rx_qpos] += (uint64_t) n;
        }
        /* the bytes are where they belong: give the pool back before anything else runs */
        if (0 != devmem_ledger_release_frags(&df->ledger, b->frags, b->nfrags, &e)
            || 0 != devmem_ledger_flush(&df->ledger, &e)) {
            snprintf(why, sizeof(why), "device flow %u: returning tokens: %s", df->lane, e.msg);
            failed = EIO;
        }
        account(df);
        if (0 == owed(df)) {
            break; /* nothing owed: EOF or stray bytes wake us again */
        }
    }
    b->len = cap;
    b->ledger = NULL;
    if (failed) {
        OPAL_THREAD_LOCK(&ep->lock);
        while (NULL != (item = opal_list_remove_first(&done))) {
            opal_list_append(&df->gets, item); /* completed with the failure below */
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (EPROTO == failed) {
            mca_btl_devmem_component.stats.proto_errors++;
        }
        mca_btl_devmem_endpoint_fail(ep, why, EPROTO == failed || said ? 0 : failed);
    }
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_SUCCESS);
    }
    OBJ_DESTRUCT(&done);
}

void mca_btl_devmem_devflow_rx_close(struct mca_btl_devmem_devflow *df)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    opal_list_item_t *item;
    opal_list_t doomed;

    rx_close(df, "closing");
    OBJ_CONSTRUCT(&doomed, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    df->expected = 0;
    df->head_got = 0;
    opal_list_join(&doomed, opal_list_get_end(&doomed), &df->gets);
    OPAL_THREAD_UNLOCK(&ep->lock);
    while (NULL != (item = opal_list_remove_first(&doomed))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    OBJ_DESTRUCT(&doomed);
}

void mca_btl_devmem_devflow_rx_fini(void)
{
    if (copier_ready) {
        devmem_copier_fini(&copier);
        copier_ready = false;
    }
}
