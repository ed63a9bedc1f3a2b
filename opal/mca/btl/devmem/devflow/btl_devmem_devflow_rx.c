/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, receiving side, one lane at a time: gets and chunks whose payload comes on
 * the lane, in the order they were asked; devmem receives into the RX pool, each handed to
 * the pipelined gather (btl_devmem_devflow_gather.c), which gives its tokens back and
 * completes its gets once its bytes are in place. See btl_devmem_devflow_int.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/btl_devmem_activity.h"
#include "devflow/btl_devmem_devflow_int.h"

/* Receives per readiness callback before the event loop gets its turn back. */
#define DEVFLOW_RX_ROUNDS 16

static void devflow_rx_fail_gets(struct mca_btl_devmem_devflow *df);

/* The receiving threads' layer, when it serves lanes (devflow_int.h). */
static const struct mca_btl_devmem_devflow_rx_server *rx_server;

void mca_btl_devmem_devflow_rx_serve(const struct mca_btl_devmem_devflow_rx_server *server)
{
    rx_server = server;
}

int mca_btl_devmem_devflow_rx_serve_lane(struct mca_btl_devmem_devflow *df)
{
    df->pipe = &mca_btl_devmem_gather_main;
    df->rx_server_data = NULL;
    if (NULL != rx_server && 0 == rx_server->take(rx_server->ctx, df)) {
        return 0;
    }
    return mca_btl_devmem_pollset_set(&df->rx_watch, OPAL_EV_READ);
}

/* ---------------------------------------------------------------- statistics */

void mca_btl_devmem_devflow_rx_account(struct mca_btl_devmem_devflow *df)
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

/* Into RX_CLOSED from any state; an open flow gives its tokens back first. */
static void rx_close(struct mca_btl_devmem_devflow *df, const char *why)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    int sd;

    /* a receiving thread's lane comes back first: it receives no more, and its receives are
     * finished and delivered */
    if (NULL != df->rx_server_data && NULL != rx_server) {
        rx_server->give_back(rx_server->ctx, df);
        df->rx_server_data = NULL;
        df->pipe = &mca_btl_devmem_gather_main;
    }
    /* receives still gathering: their bytes land first (the GPU may be writing into the
     * gets' buffers), then they give their tokens back and complete; a failure among them
     * may close this lane on the way */
    mca_btl_devmem_devflow_gather_settle(df);
    if (MCA_BTL_DEVMEM_DF_RX_CLOSED == df->rx_state) {
        return;
    }
    sd = df->rx_sd;
    if (MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state) {
        (void) mca_btl_devmem_pollset_set(&df->rx_watch, 0);
        /* the kernel's order: tokens back, then the socket's devmem state, then the fd */
        if (0 != devmem_ledger_close(&df->ledger, &e)) {
            opal_output(0, "btl:devmem: returning device-flow tokens at close: %s", e.msg);
        }
        mca_btl_devmem_devflow_rx_account(df);
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
        mca_btl_devmem_devflow_fd_count(-1);
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
                   OPAL_NAME_PRINT(df->ep->peer->name), q, d->part->itf->name);
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

/* What a receive of n bytes (n >= 0) means while the gets owe `expected`: data to place,
 * the peer's orderly close, or a failure (why, *err). */
static enum mca_btl_devmem_rx_step rx_judge(struct mca_btl_devmem_devflow *df, ssize_t n,
                                            uint64_t expected, char *why, size_t len, int *err)
{
    if (0 == n && 0 == expected) {
        /* the peer closed its sending side in order (finalize) */
        DEVMEM_VERBOSE(20, "%s closed its device flow %u", OPAL_NAME_PRINT(df->ep->peer->name),
                       df->lane);
        return MCA_BTL_DEVMEM_RX_EOF;
    }
    if (0 == n) {
        snprintf(why, len, "device flow %u closed with %llu bytes of gets owed", df->lane,
                 (unsigned long long) expected);
        *err = ECONNRESET;
        return MCA_BTL_DEVMEM_RX_FAILED;
    }
    if ((uint64_t) n > expected) {
        snprintf(why, len, "the peer sent %zd bytes on device flow %u that no get asked for", n,
                 df->lane);
        *err = EPROTO;
        return MCA_BTL_DEVMEM_RX_FAILED;
    }
    return MCA_BTL_DEVMEM_RX_DATA;
}

/* n bytes the gets asked for, received into b: gathered to their destinations and counted. */
static enum mca_btl_devmem_rx_step rx_place(struct mca_btl_devmem_devflow *df,
                                            struct devmem_kernel *k, struct devmem_rx_batch *b,
                                            ssize_t n, char *why, size_t len, int *err)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    if (b->plain) {
        /* a steered lane receives into the pool: plain data may mean the binding is gone
         * (the watch asks the kernel) */
        mca_btl_devmem_dev_suspect(df->ep->module->devpath.dev);
    }
    if (-1 == df->rx_qpos) {
        learn_queue(df, k);
    }
    if (0 != mca_btl_devmem_devflow_gather(df, b, why, len)) {
        *err = EPROTO;
        return MCA_BTL_DEVMEM_RX_FAILED;
    }
    /* the whole receive is this lane's (and its queue's): counted once, not per piece */
    mca_btl_devmem_stats_add(&c->lane_rx_bytes[df->lane], (uint64_t) n);
    if (df->rx_qpos >= 0) {
        mca_btl_devmem_stats_add(&c->queue_rx_bytes[df->rx_qpos], (uint64_t) n);
    }
    /* what is in place gives its pool pages back now; at most gather_depth batches hold
     * theirs while the lanes receive the next */
    (void) mca_btl_devmem_devflow_gather_progress(df->pipe);
    mca_btl_devmem_devflow_gather_bound(df->pipe);
    return MCA_BTL_DEVMEM_RX_DATA;
}

enum mca_btl_devmem_rx_step mca_btl_devmem_devflow_rx_step(struct mca_btl_devmem_devflow *df,
                                                            struct devmem_rx_batch *b, char *why,
                                                            size_t len, int *err,
                                                            struct mca_btl_devmem_rx_tally *tally)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    size_t cap = b->len;
    enum mca_btl_devmem_rx_step result = MCA_BTL_DEVMEM_RX_IDLE;

    mca_btl_devmem_progress_activity();
    (void) mca_btl_devmem_devflow_gather_progress(df->pipe);
    /* finishing receives completes gets and may fail endpoints, this lane's too (on the
     * progress thread's pipe): each round starts on an open lane */
    for (int round = 0; round < DEVFLOW_RX_ROUNDS && MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state
                        && !df->rx_failed;
         round++) {
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
            /* pool full: receives still gathering hold pages; once the oldest is done they
             * go back. With none in flight it is the other flows' moment (another thread's
             * receives may hold the pool): wait for the next readiness */
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_pool_full, 1);
            if (mca_btl_devmem_devflow_gather_wait_oldest(df->pipe)) {
                continue;
            }
            result = MCA_BTL_DEVMEM_RX_STARVED;
            break;
        }
        if (n < 0) {
            /* e.msg already ends with the errno's words */
            snprintf(why, len, "device flow %u: receive failed: %s", df->lane, e.msg);
            *err = 0;
            result = MCA_BTL_DEVMEM_RX_FAILED;
            break;
        }
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.recv_calls, 1);
        if (NULL != tally) {
            tally->receives++;
            tally->bytes += (uint64_t) n;
        }
        if ((uint64_t) n > expected) {
            /* a get may have joined the lane between the look and the receive (from another
             * thread), and its bytes come at once: what the gets owe only grows meanwhile,
             * so the receive never took more than they owe now */
            expected = owed(df);
        }
        result = rx_judge(df, n, expected, why, len, err);
        if (MCA_BTL_DEVMEM_RX_DATA == result) {
            result = rx_place(df, k, b, n, why, len, err);
        }
        /* nothing owed: EOF or stray bytes wake us again */
        if (MCA_BTL_DEVMEM_RX_DATA != result || 0 == owed(df)) {
            break;
        }
    }
    b->len = cap;
    b->ledger = NULL;
    if (MCA_BTL_DEVMEM_RX_FAILED == result && EPROTO == *err) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.proto_errors, 1);
    }
    return result;
}

void mca_btl_devmem_devflow_rx_ended(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_rx_step how, const char *why, int err)
{
    if (MCA_BTL_DEVMEM_RX_EOF == how) {
        /* a get a thread's lane took between the peer's close and this (its state said
         * open meanwhile) would wait forever: it fails instead */
        rx_close(df, "the peer closed it in order");
        devflow_rx_fail_gets(df);
    } else if (MCA_BTL_DEVMEM_RX_FAILED == how) {
        mca_btl_devmem_endpoint_fail(df->ep, why, EPROTO == err ? 0 : err);
    }
}

void mca_btl_devmem_devflow_rx_cb(int sd, short flags, void *arg)
{
    struct mca_btl_devmem_devflow *df = arg;
    size_t cap;
    struct devmem_rx_batch *b = mca_btl_devmem_dev_batch(&cap);
    char why[DEVMEM_ERR_MSG_MAX + 96];
    int err = 0;
    enum mca_btl_devmem_rx_step how = mca_btl_devmem_devflow_rx_step(df, b, why, sizeof(why),
                                                                      &err, NULL);

    mca_btl_devmem_devflow_rx_ended(df, how, why, err);
}

void mca_btl_devmem_devflow_rx_close(struct mca_btl_devmem_devflow *df)
{
    rx_close(df, "closing");
    devflow_rx_fail_gets(df);
}

/* The gets and chunks a closed lane still owes complete with OPAL_ERR_UNREACH. */
static void devflow_rx_fail_gets(struct mca_btl_devmem_devflow *df)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    opal_list_item_t *item;
    opal_list_t doomed;

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

int mca_btl_devmem_devflow_rx_progress(void)
{
    return mca_btl_devmem_devflow_gather_progress(&mca_btl_devmem_gather_main);
}

bool mca_btl_devmem_devflow_rx_busy(void)
{
    return mca_btl_devmem_devflow_gather_busy(&mca_btl_devmem_gather_main);
}

void mca_btl_devmem_devflow_rx_fini(void)
{
    mca_btl_devmem_devflow_gather_fini(&mca_btl_devmem_gather_main);
}
