/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Noticing a peer behind a cut link (see btl_devmem_liveness.h).
 */
#include "opal_config.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/socket.h>

#include "base/btl_devmem_ompi_compat.h"

#include "sockets/btl_devmem_pollset.h"
#include "sockets/btl_devmem_sock.h"
#include "connections/btl_devmem_endpoint.h"
#include "devflow/btl_devmem_devflow.h"
#include "btl_devmem_liveness.h"

static opal_event_t tick;
static bool ticking;

/* Whether ep's peer has left data unacknowledged too long; fills why. */
static bool overdue(mca_btl_devmem_endpoint_t *ep, unsigned int limit, char *why, size_t len)
{
    unsigned int quiet;
    const char *where = "connection";

    if (MCA_BTL_DEVMEM_EP_CONNECTED != ep->state) {
        return false;
    }
    quiet = mca_btl_devmem_sock_unacked_for(ep->sd);
    for (unsigned int lane = 0; quiet < limit && lane < MCA_BTL_DEVMEM_DEVFLOWS_MAX; lane++) {
        quiet = mca_btl_devmem_sock_unacked_for(mca_btl_devmem_devflow_tx_socket(ep, lane));
        where = "device flow";
    }
    if (quiet < limit) {
        return false;
    }
    snprintf(why, len, "nothing acknowledged on the %s for %u s with data in flight "
             "(btl_devmem_peer_timeout %u): a cut link or a dead host", where, quiet, limit);
    return true;
}

/* A libevent timer, in whichever thread runs the event loop: the dispatch lock makes it the
 * only one touching connections' sockets and device flows; each module's endpoint list is
 * read under its lock, and the endpoints are failed after, since failing one takes locks of
 * its own. */
static void check(int fd, short flags, void *arg)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    unsigned int limit = (unsigned int) c->peer_timeout;

    mca_btl_devmem_dispatch_lock();
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];
        mca_btl_devmem_endpoint_t *ep, *doomed = NULL;
        char why[160];

        OPAL_THREAD_LOCK(&m->lock);
        OPAL_LIST_FOREACH (ep, &m->endpoints, mca_btl_devmem_endpoint_t) {
            if (overdue(ep, limit, why, sizeof(why))) {
                doomed = ep; /* one per module and tick: the job ends with the first anyway */
                OBJ_RETAIN(doomed);
                break;
            }
        }
        OPAL_THREAD_UNLOCK(&m->lock);
        if (NULL != doomed) {
            mca_btl_devmem_endpoint_fail(doomed, why, 0);
            OBJ_RELEASE(doomed);
        }
    }
    mca_btl_devmem_dispatch_unlock();
}

void mca_btl_devmem_liveness_start(void)
{
    struct timeval every = {1, 0};

    if (ticking || mca_btl_devmem_component.peer_timeout <= 0) {
        return;
    }
    opal_event_set(opal_sync_event_base, &tick, -1, OPAL_EV_PERSIST, check, NULL);
    opal_event_add(&tick, &every);
    ticking = true;
}

void mca_btl_devmem_liveness_stop(void)
{
    if (ticking) {
        opal_event_del(&tick);
        ticking = false;
    }
}
