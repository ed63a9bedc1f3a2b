/*
 * Device flows: the connections themselves, until and after the endpoint owns them. An
 * accepted connection waits, unread, until a control connection claims it by port (its
 * address is the one that control connection comes from), or the handshake timeout drops
 * it; then it is adopted for receiving. See btl_devmem_devflow.h; the two directions live in
 * btl_devmem_devflow_tx.c and _rx.c.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>

#include "btl_devmem_devflow_int.h"

/* Connections held unread until a control connection names them; beyond this many the
 * oldest is dropped, so strangers cannot pile up descriptors. */
#define DEVFLOW_UNCLAIMED_MAX 256

static opal_list_t unclaimed;
static bool unclaimed_ready;

struct mca_btl_devmem_devflow *mca_btl_devmem_devflow_of(mca_btl_devmem_endpoint_t *ep)
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

/* ---------------------------------------------------------------- adopting */

static int adopt(mca_btl_devmem_endpoint_t *ep, struct mca_btl_devmem_dev *dev, int sd)
{
    struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_of(ep);
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    char why[DEVMEM_ERR_MSG_MAX + 64];
    int rc;

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
    mca_btl_devmem_watch_init(&df->rx_watch, sd, mca_btl_devmem_devflow_rx_cb, ep);
    if (0 != (rc = mca_btl_devmem_watch_set(&df->rx_watch, OPAL_EV_READ))) {
        mca_btl_devmem_endpoint_fail(ep, "cannot watch the device flow", -rc);
        return -1;
    }
    mca_btl_devmem_component.stats.devflows++;
    DEVMEM_VERBOSE(10, "device flow from %s adopted on %s (RX binding %u)",
                   OPAL_NAME_PRINT(ep->peer->name), dev->module->itf.name, dev->rx_id);
    return 0;
}

void mca_btl_devmem_devflow_accepted(struct mca_btl_devmem_dev *dev, int sd,
                                     const struct mca_btl_devmem_ip *addr, uint16_t port)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    /* the claim may have come first */
    for (int i = 0; i < c->num_modules; i++) {
        mca_btl_devmem_endpoint_t *ep;
        OPAL_LIST_FOREACH (ep, &c->modules[i]->endpoints, mca_btl_devmem_endpoint_t) {
            struct mca_btl_devmem_devflow *df = ep->devflow;
            if (NULL != df && df->claim_pending
                && mca_btl_devmem_ip_equal(&df->claim_addr, addr) && df->claim_port == port) {
                (void) adopt(ep, dev, sd);
                return;
            }
        }
    }
    unclaimed_init();
    if (opal_list_get_size(&unclaimed) >= DEVFLOW_UNCLAIMED_MAX) {
        mca_btl_devmem_held_drop((mca_btl_devmem_held_t *) opal_list_get_first(&unclaimed),
                                 "too many unnamed device-flow connections");
    }
    /* held unread: its bytes are the peer's payload, which may land in device memory */
    (void) mca_btl_devmem_held_new(&unclaimed, sd, addr, port, dev, dev->module->itf.name,
                                   "device-flow connection",
                                   "no control connection named it before the handshake "
                                   "timeout",
                                   NULL);
}

int mca_btl_devmem_devflow_claim(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_of(ep);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct mca_btl_devmem_ip addr;
    uint16_t port = (uint16_t) h->id;
    mca_btl_devmem_held_t *u;

    if (NULL == df) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory for a device flow", ENOMEM);
        return -1;
    }
    /* the device flow comes from the address our control connection comes from */
    if (0 != getpeername(ep->sd, (struct sockaddr *) &ss, &len)
        || 0 != mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &ss, &addr, NULL)) {
        mca_btl_devmem_endpoint_fail(ep, "cannot name the control connection's peer", errno);
        return -1;
    }
    if (df->rx_sd >= 0 || df->claim_pending) {
        mca_btl_devmem_endpoint_proto_error(ep, "a second device-flow claim");
        return -1;
    }
    unclaimed_init();
    OPAL_LIST_FOREACH (u, &unclaimed, mca_btl_devmem_held_t) {
        if (mca_btl_devmem_ip_equal(&u->addr, &addr) && u->port == port) {
            struct mca_btl_devmem_dev *dev = u->owner;
            return adopt(ep, dev, mca_btl_devmem_held_take(u));
        }
    }
    df->claim_pending = true;
    df->claim_addr = addr;
    df->claim_port = port;
    return 0;
}

/* ---------------------------------------------------------------- closing */

void mca_btl_devmem_devflow_close(mca_btl_devmem_endpoint_t *ep, bool orderly)
{
    if (NULL == ep->devflow) {
        return;
    }
    mca_btl_devmem_devflow_tx_close(ep, orderly);
    mca_btl_devmem_devflow_rx_close(ep);
    ep->devflow->claim_pending = false;
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
    mca_btl_devmem_devflow_rx_fini();
    if (!unclaimed_ready) {
        return;
    }
    mca_btl_devmem_held_drop_all(&unclaimed);
    OBJ_DESTRUCT(&unclaimed);
    unclaimed_ready = false;
}
