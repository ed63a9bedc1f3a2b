/*
 * Device flows: connect, name, adopt, answer gets on them, and receive into the RX pool
 * (see btl_devmem_devflow.h).
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "btl_devmem_devflow.h"
#include "btl_devmem_progress.h"
#include "btl_devmem_reg.h"

#include "devmem/copy.h"

/* Connections held unread until a control connection names them; beyond this many the
 * oldest is dropped, so strangers cannot pile up descriptors. */
#define DEVFLOW_UNCLAIMED_MAX 256

/* Receives per readiness callback before the event loop gets its turn back. */
#define DEVFLOW_RX_ROUNDS 16

struct mca_btl_devmem_devflow {
    /* sending side: our connection to the peer's device-flow port */
    int tx_sd;
    opal_event_t tx_event;
    bool tx_event_added;
    opal_list_t tx_queue;           /* raw GET_RESP frags (no header on the wire) */
    opal_list_t tx_wait;            /* devmem TX frags sent, awaiting their completions */
    struct devmem_tx_tracker tracker; /* zerocopy notification ids of those sends */
    bool tracker_ready;
    bool tx_zerocopy;               /* SO_ZEROCOPY is on: devmem TX may be used */
    opal_event_t txerr_event;       /* the error queue has completions (real kernel) */
    bool txerr_event_added;
    /* receiving side: the peer's connection to our port, once claimed */
    int rx_sd;
    opal_event_t rx_event;
    bool rx_event_added;
    struct mca_btl_devmem_dev *rx_dev; /* the module whose pool it lands in */
    struct devmem_ledger ledger;
    bool ledger_open;
    struct devmem_rx_stats counted;  /* ledger counters already added to the stats */
    opal_list_t gets;                /* gets answered on it, in request order */
    size_t head_got;                 /* bytes of the first get already in place */
    uint64_t expected;               /* bytes still owed to all of gets */
    /* a claim that arrived before its connection */
    bool claim_pending;
    uint32_t claim_addr;             /* network byte order */
    uint16_t claim_port;             /* host byte order */
};

/* An accepted connection that no control connection has named yet. */
typedef struct {
    opal_list_item_t super;
    struct mca_btl_devmem_dev *dev;
    int sd;
    uint32_t addr; /* network byte order */
    uint16_t port; /* host byte order */
    opal_event_t timer;
} devflow_unclaimed_t;
static OBJ_CLASS_INSTANCE(devflow_unclaimed_t, opal_list_item_t, NULL, NULL);

static opal_list_t unclaimed;
static bool unclaimed_ready;

static void rx_cb(int sd, short flags, void *arg);
static void tx_cb(int sd, short flags, void *arg);
static void txerr_cb(int sd, short flags, void *arg);

static struct mca_btl_devmem_devflow *devflow_of(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;

    if (NULL == df && NULL != (df = calloc(1, sizeof(*df)))) {
        df->tx_sd = df->rx_sd = -1;
        OBJ_CONSTRUCT(&df->tx_queue, opal_list_t);
        OBJ_CONSTRUCT(&df->tx_wait, opal_list_t);
        OBJ_CONSTRUCT(&df->gets, opal_list_t);
        ep->devflow = df;
    }
    return df;
}

static void unclaimed_init(void)
{
    if (!unclaimed_ready) {
        OBJ_CONSTRUCT(&unclaimed, opal_list_t);
        unclaimed_ready = true;
    }
}

static void unclaimed_drop(devflow_unclaimed_t *u, const char *why)
{
    opal_event_del(&u->timer);
    opal_list_remove_item(&unclaimed, &u->super);
    if (u->sd >= 0) {
        close(u->sd);
    }
    if (NULL != why) {
        char a[INET_ADDRSTRLEN];
        mca_btl_devmem_component.stats.conn_refused++;
        DEVMEM_VERBOSE(5, "dropped a device-flow connection from %s:%u on %s: %s",
                       inet_ntop(AF_INET, &u->addr, a, sizeof(a)), (unsigned) u->port,
                       u->dev->module->itf.name, why);
    }
    OBJ_RELEASE(u);
}

static void unclaimed_timeout(int fd, short flags, void *arg)
{
    unclaimed_drop(arg, "no control connection named it before the handshake timeout");
}

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

/* ---------------------------------------------------------------- adopting */

static int adopt(mca_btl_devmem_endpoint_t *ep, struct mca_btl_devmem_dev *dev, int sd)
{
    struct mca_btl_devmem_devflow *df = devflow_of(ep);
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    char why[DEVMEM_ERR_MSG_MAX + 64];

    if (NULL == df || NULL == k) {
        close(sd);
        mca_btl_devmem_endpoint_fail(ep, "cannot take the device flow", ENOMEM);
        return -1;
    }
    if (df->rx_sd >= 0) {
        close(sd);
        mca_btl_devmem_endpoint_proto_error(ep, "a second device flow from the same peer");
        return -1;
    }
    if (0 != devmem_kernel_ledger_init(k, sd, &df->ledger, &e)) {
        snprintf(why, sizeof(why), "device flow: %s", e.msg);
        k->ops->sock_close(k, sd);
        close(sd);
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        return -1;
    }
    memset(&df->counted, 0, sizeof(df->counted));
    df->ledger_open = true;
    df->rx_sd = sd;
    df->rx_dev = dev;
    df->claim_pending = false;
    mca_btl_devmem_tune_socket(sd);
    opal_event_set(opal_sync_event_base, &df->rx_event, sd, OPAL_EV_READ | OPAL_EV_PERSIST,
                   rx_cb, ep);
    opal_event_add(&df->rx_event, 0);
    df->rx_event_added = true;
    mca_btl_devmem_component.stats.devflows++;
    DEVMEM_VERBOSE(10, "device flow from %s adopted on %s (RX binding %u)",
                   OPAL_NAME_PRINT(ep->peer->name), dev->module->itf.name, dev->rx_id);
    return 0;
}

void mca_btl_devmem_devflow_accepted(struct mca_btl_devmem_dev *dev, int sd,
                                     const struct sockaddr_in *from)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    uint16_t port = ntohs(from->sin_port);
    struct timeval tv = {c->handshake_timeout > 0 ? c->handshake_timeout : 1, 0};
    devflow_unclaimed_t *u;

    /* the claim may have come first */
    for (int i = 0; i < c->num_modules; i++) {
        mca_btl_devmem_endpoint_t *ep;
        OPAL_LIST_FOREACH (ep, &c->modules[i]->endpoints, mca_btl_devmem_endpoint_t) {
            struct mca_btl_devmem_devflow *df = ep->devflow;
            if (NULL != df && df->claim_pending && df->claim_addr == from->sin_addr.s_addr
                && df->claim_port == port) {
                (void) adopt(ep, dev, sd);
                return;
            }
        }
    }
    unclaimed_init();
    if (opal_list_get_size(&unclaimed) >= DEVFLOW_UNCLAIMED_MAX) {
        unclaimed_drop((devflow_unclaimed_t *) opal_list_get_first(&unclaimed),
                       "too many unnamed device-flow connections");
    }
    u = OBJ_NEW(devflow_unclaimed_t);
    if (NULL == u) {
        close(sd);
        return;
    }
    u->dev = dev;
    u->sd = sd;
    u->addr = from->sin_addr.s_addr;
    u->port = port;
    opal_list_append(&unclaimed, &u->super);
    opal_event_evtimer_set(opal_sync_event_base, &u->timer, unclaimed_timeout, u);
    opal_event_evtimer_add(&u->timer, &tv);
}

int mca_btl_devmem_devflow_claim(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow *df = devflow_of(ep);
    uint32_t addr = (uint32_t) h->addr;
    uint16_t port = (uint16_t) h->id;
    devflow_unclaimed_t *u;

    if (NULL == df) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory for a device flow", ENOMEM);
        return -1;
    }
    if (df->rx_sd >= 0 || df->claim_pending) {
        mca_btl_devmem_endpoint_proto_error(ep, "a second device-flow claim");
        return -1;
    }
    unclaimed_init();
    OPAL_LIST_FOREACH (u, &unclaimed, devflow_unclaimed_t) {
        if (u->addr == addr && u->port == port) {
            struct mca_btl_devmem_dev *dev = u->dev;
            int sd = u->sd;
            u->sd = -1;
            unclaimed_drop(u, NULL);
            return adopt(ep, dev, sd);
        }
    }
    df->claim_pending = true;
    df->claim_addr = addr;
    df->claim_port = port;
    return 0;
}

/* ---------------------------------------------------------------- sending side */

void mca_btl_devmem_devflow_start(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow *df;
    struct sockaddr_in local = {0}, remote = {0};
    socklen_t len = sizeof(local);
    mca_btl_devmem_frag_t *claim;
    int sd;

    if (0 == ep->remote.devflow_port || !mca_btl_devmem_dev_enabled()
        || MCA_BTL_DEVMEM_EP_CONNECTED != ep->state) {
        return;
    }
    if (NULL == (df = devflow_of(ep)) || df->tx_sd >= 0) {
        return;
    }
    sd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sd < 0) {
        mca_btl_devmem_endpoint_fail(ep, "cannot open a device flow", errno);
        return;
    }
    mca_btl_devmem_tune_socket(sd);
    /* leave through this module's interface, from an address the claim can name */
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = ep->module->itf.addr;
    remote.sin_family = AF_INET;
    remote.sin_addr.s_addr = ep->remote.addr;
    remote.sin_port = ep->remote.devflow_port;
    if (0 != bind(sd, (struct sockaddr *) &local, sizeof(local))
        || (0 != connect(sd, (struct sockaddr *) &remote, sizeof(remote))
            && EINPROGRESS != errno)
        || 0 != getsockname(sd, (struct sockaddr *) &local, &len)) {
        int err = errno;
        close(sd);
        mca_btl_devmem_endpoint_fail(ep, "cannot connect the device flow", err);
        return;
    }
    df->tx_sd = sd;
    opal_event_set(opal_sync_event_base, &df->tx_event, sd, OPAL_EV_WRITE | OPAL_EV_PERSIST,
                   tx_cb, ep);
    opal_event_set(opal_sync_event_base, &df->txerr_event, sd, OPAL_EV_READ | OPAL_EV_PERSIST,
                   txerr_cb, ep);
    if (NULL != ep->module->dev) {
        struct devmem_err e;

        /* devmem TX needs zerocopy sends; without it every answer is a plain send */
        df->tx_zerocopy = 0 == devmem_tx_socket_setup(sd, NULL, &e)
                          && 0 == devmem_tx_tracker_init(&df->tracker, &e);
        df->tracker_ready = df->tx_zerocopy;
        if (!df->tx_zerocopy) {
            DEVMEM_VERBOSE(1, "devmem TX off on the device flow to %s: %s",
                           OPAL_NAME_PRINT(ep->peer->name), e.msg);
        }
    }
    claim = mca_btl_devmem_frag_alloc(0);
    if (NULL == claim) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory naming the device flow", ENOMEM);
        return;
    }
    claim->kind = MCA_BTL_DEVMEM_FRAG_CTRL;
    mca_btl_devmem_frag_prepare_write(claim);
    claim->hdr.type = MCA_BTL_DEVMEM_HDR_DEVFLOW;
    claim->hdr.addr = local.sin_addr.s_addr;
    claim->hdr.id = ntohs(local.sin_port);
    if (mca_btl_devmem_endpoint_send(ep, claim) < 0) {
        mca_btl_devmem_frag_return(claim); /* the endpoint failed and said so */
    }
    DEVMEM_VERBOSE(20, "device flow to %s from port %u", OPAL_NAME_PRINT(ep->peer->name),
                   (unsigned) ntohs(local.sin_port));
}

static void tx_event_set(struct mca_btl_devmem_devflow *df, bool on)
{
    if (on != df->tx_event_added) {
        if (on) {
            opal_event_add(&df->tx_event, 0);
        } else {
            opal_event_del(&df->tx_event);
        }
        df->tx_event_added = on;
    }
}

/* A devmem TX send completed (in order): count its bytes against the frag it carried. */
static void tx_released(void *ctx, uint64_t cookie, size_t bytes)
{
    mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) (uintptr_t) cookie;

    frag->tx_done += bytes;
}

/* Read every zerocopy notification there is; finished frags move from tx_wait to done.
 * 0, or -1 with why filled. */
static int tx_reap(struct mca_btl_devmem_devflow *df, opal_list_t *done, char *why, size_t len)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_tx_completion c;
    struct devmem_err e;
    opal_list_item_t *item;
    int rc = 0;

    if (!df->tracker_ready || 0 == devmem_tx_inflight(&df->tracker)) {
        return 0;
    }
    while (0 == (rc = k->ops->read_completion(k, df->tx_sd, &c, &e))) {
        if (0 != devmem_tx_complete(&df->tracker, &c, tx_released, NULL, &e)) {
            rc = -EPROTO;
            break;
        }
    }
    /* sends complete in order, so finished frags are at the head */
    while (NULL != (item = opal_list_get_first(&df->tx_wait))
           && item != opal_list_get_end(&df->tx_wait)
           && ((mca_btl_devmem_frag_t *) item)->tx_done == ((mca_btl_devmem_frag_t *) item)->payload) {
        opal_list_append(done, opal_list_remove_first(&df->tx_wait));
    }
    if (-EAGAIN == rc) {
        return 0;
    }
    snprintf(why, len, "reading devmem TX completions: %s", e.msg);
    return -1;
}

/* Hand the kernel as much of frag as it takes with devmem TX from its TX binding.
 * 0 all queued, 1 blocked, -1 failed (why filled). */
static int tx_device(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag, char *why,
                     size_t len)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    uint32_t id = mca_btl_devmem_txmem_binding(frag->txmem, ep->module);
    struct devmem_err e;

    while (frag->tx_queued < frag->payload) {
        struct devmem_tx_iov iov = {frag->tx_off + frag->tx_queued,
                                    frag->payload - frag->tx_queued};
        ssize_t n = k->ops->send(k, df->tx_sd, id, &iov, 1, MSG_DONTWAIT, &e);

        if (-EAGAIN == n || -EINTR == n) {
            return 1;
        }
        if (n <= 0) {
            snprintf(why, len, "devmem TX send: %s", n < 0 ? e.msg : "sent nothing");
            return -1;
        }
        if (0 != devmem_tx_track(&df->tracker, (size_t) n, iov.len, (uint64_t) (uintptr_t) frag,
                                 &e)) {
            snprintf(why, len, "tracking a devmem TX send: %s", e.msg);
            return -1;
        }
        frag->tx_queued += (size_t) n;
        mca_btl_devmem_component.stats.tx_devmem += (uint64_t) n;
    }
    return 0;
}

static void tx_progress(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;
    char why[DEVMEM_ERR_MSG_MAX + 64];
    opal_list_t done, host;
    opal_list_item_t *item;
    bool blocked = false;
    int rc = 0;

    OBJ_CONSTRUCT(&done, opal_list_t);
    OBJ_CONSTRUCT(&host, opal_list_t);
    while (0 == rc && !blocked && !opal_list_is_empty(&df->tx_queue)) {
        mca_btl_devmem_frag_t *head = (mca_btl_devmem_frag_t *) opal_list_get_first(&df->tx_queue);

        if (NULL != head->txmem) {
            rc = tx_device(ep, head, why, sizeof(why));
            if (0 == rc) {
                opal_list_remove_first(&df->tx_queue);
                opal_list_append(&df->tx_wait, &head->base.super.super);
            } else if (1 == rc) {
                blocked = true;
                rc = 0;
            }
            continue;
        }
        /* the run of plain answers up to the next devmem one, in one batched write */
        while (NULL != (item = opal_list_get_first(&df->tx_queue))
               && item != opal_list_get_end(&df->tx_queue)
               && NULL == ((mca_btl_devmem_frag_t *) item)->txmem) {
            opal_list_append(&host, opal_list_remove_first(&df->tx_queue));
        }
        rc = mca_btl_devmem_frag_queue_write(df->tx_sd, &host, ep->module->write_chunk, &done,
                                             &blocked);
        while (NULL != (item = opal_list_remove_last(&host))) {
            opal_list_prepend(&df->tx_queue, item);
        }
        if (rc < 0) {
            snprintf(why, sizeof(why), "the device flow failed while sending: %s",
                     strerror(-rc));
            rc = -1;
        }
    }
    if (0 == rc) {
        rc = tx_reap(df, &done, why, sizeof(why));
    }
    if (0 == rc) {
        tx_event_set(df, blocked);
        /* the real kernel posts completions later: wake up for them */
        if (df->txerr_event_added != !opal_list_is_empty(&df->tx_wait)) {
            df->txerr_event_added = !df->txerr_event_added;
            if (df->txerr_event_added) {
                opal_event_add(&df->txerr_event, 0);
            } else {
                opal_event_del(&df->txerr_event);
            }
        }
    }
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_devmem_component.stats.devflow_gets++;
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_SUCCESS);
    }
    OBJ_DESTRUCT(&done);
    OBJ_DESTRUCT(&host);
    if (rc < 0) {
        mca_btl_devmem_endpoint_fail(ep, why, 0);
    }
}

static void tx_cb(int sd, short flags, void *arg)
{
    mca_btl_devmem_progress_activity();
    tx_progress(arg);
}

/* Readable on our sending side: completions on the error queue, or the peer closing. */
static void txerr_cb(int sd, short flags, void *arg)
{
    mca_btl_devmem_endpoint_t *ep = arg;
    struct mca_btl_devmem_devflow *df = ep->devflow;
    size_t before = opal_list_get_size(&df->tx_wait);
    char c;

    mca_btl_devmem_progress_activity();
    tx_progress(ep);
    if (NULL != ep->devflow && df->tx_sd >= 0 && before == opal_list_get_size(&df->tx_wait)
        && 0 == recv(df->tx_sd, &c, 1, MSG_DONTWAIT | MSG_PEEK)) {
        mca_btl_devmem_endpoint_fail(ep, "the peer closed its device flow with devmem sends "
                                     "not yet completed", 0);
    }
}

int mca_btl_devmem_devflow_answer(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;
    struct mca_btl_devmem_txmem *t = NULL;
    mca_btl_devmem_frag_t *resp;
    char why[DEVMEM_ERR_MSG_MAX + 64];

    if (NULL == df || df->tx_sd < 0 || 0 == h->size) {
        mca_btl_devmem_endpoint_proto_error(ep, "a device-flow get we have no device flow for");
        return -1;
    }
    if (df->tx_zerocopy && NULL != (t = mca_btl_devmem_txmem_get(h->addr, h->size))
        && 0 == mca_btl_devmem_txmem_binding(t, ep->module)) {
        mca_btl_devmem_txmem_put(t); /* no TX binding here: a plain (staged) answer */
        t = NULL;
    }
    if (NULL != t) {
        /* devmem TX: the NIC reads the bytes from the dmabuf; nothing passes the CPU */
        resp = mca_btl_devmem_frag_alloc_user();
        if (NULL != resp) {
            resp->kind = MCA_BTL_DEVMEM_FRAG_CTRL;
            resp->hdr.type = MCA_BTL_DEVMEM_HDR_GET_RESP;
            resp->hdr.id = h->id;
            resp->txmem = t;
            resp->tx_off = h->addr - t->base;
            resp->payload = h->size;
        } else {
            mca_btl_devmem_txmem_put(t);
            snprintf(why, sizeof(why), "out of fragments answering a get");
        }
    } else {
        resp = mca_btl_devmem_frag_get_resp(h, why, sizeof(why));
        if (NULL != resp) {
            resp->iov_idx = 1; /* raw: the header stays home, the receiver knows the order */
        }
    }
    if (NULL == resp) {
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        return -1;
    }
    opal_list_append(&df->tx_queue, &resp->base.super.super);
    tx_progress(ep);
    return 0;
}

/* ---------------------------------------------------------------- receiving side */

bool mca_btl_devmem_devflow_get(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;
    int min = mca_btl_devmem_component.devflow_min;

    if (NULL == df || df->rx_sd < 0 || 0 == get->hdr.size
        || get->hdr.size < (uint32_t) (min > 0 ? min : 0)) {
        return false;
    }
    opal_list_append(&df->gets, &get->base.super.super);
    df->expected += get->hdr.size;
    if (opal_list_get_size(&df->gets) > mca_btl_devmem_component.stats.gets_inflight_max) {
        mca_btl_devmem_component.stats.gets_inflight_max = opal_list_get_size(&df->gets);
    }
    return true;
}

size_t mca_btl_devmem_devflow_pending(const mca_btl_devmem_endpoint_t *ep)
{
    return NULL == ep->devflow ? 0 : (size_t) ep->devflow->expected;
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
            mca_btl_devmem_frag_t *get = (mca_btl_devmem_frag_t *) opal_list_get_first(&df->gets);
            size_t chunk = get->hdr.size - df->head_got;
            char *dst = (char *) get->local_address + df->head_got;

            if (chunk > f->len - off) {
                chunk = f->len - off;
            }
            if (0 != gather_piece(pool, f->offset + off, (const char *) b->linear + f->offset + off,
                                  get, dst, chunk, why, len)) {
                return -1;
            }
            off += chunk;
            df->head_got += chunk;
            df->expected -= chunk;
            if (df->head_got == get->hdr.size) {
                opal_list_remove_first(&df->gets);
                opal_list_append(done, &get->base.super.super);
                df->head_got = 0;
            }
        }
    }
    if (0 != devmem_copier_flush(&copier, &e)) {
        snprintf(why, len, "gathering on the GPU: %s", e.msg);
        return -1;
    }
    mca_btl_devmem_component.stats.gather_calls += copier.stats.flushes - flushes;
    return 0;
}

static void rx_close(struct mca_btl_devmem_devflow *df)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;

    if (df->rx_event_added) {
        opal_event_del(&df->rx_event);
        df->rx_event_added = false;
    }
    /* the kernel's order: tokens back, then the socket's devmem state, then the fd */
    if (df->ledger_open) {
        if (0 != devmem_ledger_close(&df->ledger, &e)) {
            opal_output(0, "btl:devmem: returning device-flow tokens at close: %s", e.msg);
        }
        account(df);
        df->ledger_open = false;
    }
    if (df->rx_sd >= 0) {
        if (NULL != k) {
            k->ops->sock_close(k, df->rx_sd);
        }
        close(df->rx_sd);
        df->rx_sd = -1;
    }
}

static void rx_cb(int sd, short flags, void *arg)
{
    mca_btl_devmem_endpoint_t *ep = arg;
    struct mca_btl_devmem_devflow *df = ep->devflow;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    size_t cap;
    struct devmem_rx_batch *b = mca_btl_devmem_dev_batch(&cap);
    char why[DEVMEM_ERR_MSG_MAX + 96];
    opal_list_t done;
    opal_list_item_t *item;
    int failed = 0;

    mca_btl_devmem_progress_activity();
    OBJ_CONSTRUCT(&done, opal_list_t);
    for (int round = 0; round < DEVFLOW_RX_ROUNDS && !failed; round++) {
        struct devmem_err e;
        ssize_t n;

        /* never consume bytes nobody asked for: 1 byte when nothing is owed, to tell EOF
         * from a peer that sends unasked */
        b->len = 0 == df->expected ? 1 : df->expected < cap ? (size_t) df->expected : cap;
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
            snprintf(why, sizeof(why), "device-flow receive failed: %s", e.msg);
            failed = -(int) n;
            break;
        }
        mca_btl_devmem_component.stats.recv_calls++;
        if (0 == n) {
            if (0 == df->expected) {
                /* the peer closed its sending side in order (finalize) */
                DEVMEM_VERBOSE(20, "%s closed its device flow", OPAL_NAME_PRINT(ep->peer->name));
                rx_close(df);
                break;
            }
            snprintf(why, sizeof(why), "the device flow closed with %llu bytes of gets owed",
                     (unsigned long long) df->expected);
            failed = ECONNRESET;
            break;
        }
        if ((uint64_t) n > df->expected) {
            snprintf(why, sizeof(why), "the peer sent %zd bytes on the device flow that no get "
                     "asked for", n);
            failed = EPROTO;
            break;
        }
        if (0 != gather(df, b, &done, why, sizeof(why))) {
            failed = EPROTO;
            break;
        }
        /* the bytes are where they belong: give the pool back before anything else runs */
        if (0 != devmem_ledger_release_frags(&df->ledger, b->frags, b->nfrags, &e)
            || 0 != devmem_ledger_flush(&df->ledger, &e)) {
            snprintf(why, sizeof(why), "returning device-flow tokens: %s", e.msg);
            failed = EIO;
        }
        account(df);
        if (0 == df->expected) {
            break; /* nothing owed: EOF or stray bytes wake us again */
        }
    }
    b->len = cap;
    b->ledger = NULL;
    if (failed) {
        while (NULL != (item = opal_list_remove_first(&done))) {
            opal_list_append(&df->gets, item); /* completed with the failure below */
        }
        if (EPROTO == failed) {
            mca_btl_devmem_component.stats.proto_errors++;
        }
        mca_btl_devmem_endpoint_fail(ep, why, EPROTO == failed ? 0 : failed);
    }
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_SUCCESS);
    }
    OBJ_DESTRUCT(&done);
}

/* ---------------------------------------------------------------- closing */

void mca_btl_devmem_devflow_close(mca_btl_devmem_endpoint_t *ep, bool orderly)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;
    opal_list_item_t *item;

    if (NULL == df) {
        return;
    }
    if (df->tx_sd >= 0) {
        if (orderly) {
            opal_list_t done;

            OBJ_CONSTRUCT(&done, opal_list_t);
            (void) mca_btl_devmem_frag_queue_drain(df->tx_sd, &df->tx_queue, &done);
            while (NULL != (item = opal_list_remove_first(&done))) {
                mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item,
                                                 OPAL_SUCCESS);
            }
            OBJ_DESTRUCT(&done);
        }
        tx_event_set(df, false);
        if (df->txerr_event_added) {
            opal_event_del(&df->txerr_event);
            df->txerr_event_added = false;
        }
        if (NULL != mca_btl_devmem_dev_kernel()) {
            struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
            k->ops->sock_close(k, df->tx_sd);
        }
        close(df->tx_sd);
        df->tx_sd = -1;
    }
    while (NULL != (item = opal_list_remove_first(&df->tx_queue))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    /* sent, but the kernel never said it was done with the memory */
    while (NULL != (item = opal_list_remove_first(&df->tx_wait))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    if (df->tracker_ready) {
        devmem_tx_tracker_fini(&df->tracker);
        df->tracker_ready = false;
        df->tx_zerocopy = false;
    }
    rx_close(df);
    df->expected = 0;
    df->head_got = 0;
    df->claim_pending = false;
    while (NULL != (item = opal_list_remove_first(&df->gets))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
}

void mca_btl_devmem_devflow_free(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow *df = ep->devflow;

    if (NULL == df) {
        return;
    }
    mca_btl_devmem_devflow_close(ep, false);
    OBJ_DESTRUCT(&df->tx_queue);
    OBJ_DESTRUCT(&df->tx_wait);
    OBJ_DESTRUCT(&df->gets);
    free(df);
    ep->devflow = NULL;
}

void mca_btl_devmem_devflow_fini(void)
{
    opal_list_item_t *item;

    if (copier_ready) {
        devmem_copier_fini(&copier);
        copier_ready = false;
    }
    if (!unclaimed_ready) {
        return;
    }
    while (NULL != (item = opal_list_get_first(&unclaimed))
           && item != opal_list_get_end(&unclaimed)) {
        unclaimed_drop((devflow_unclaimed_t *) item, NULL);
    }
    OBJ_DESTRUCT(&unclaimed);
    unclaimed_ready = false;
}
