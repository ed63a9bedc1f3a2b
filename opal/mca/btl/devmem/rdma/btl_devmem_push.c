/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Push: the first bytes of a rendezvous behind its header; see btl_devmem_push.h.
 */
#define _GNU_SOURCE /* memmem */
#include "opal_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "opal/util/proc.h"

#include "base/btl_devmem_activity.h"
#include "base/btl_devmem_tsan.h"
#include "connections/btl_devmem_endpoint.h"
#include "rdma/btl_devmem_push.h"
#include "rdma/btl_devmem_rdma.h"
#include "rdma/btl_devmem_reg.h"

/* The RGET header carrying a handle is a few dozen bytes of PML header: no need to look
 * further into a frame for it. */
#define HANDLE_SEARCH_SPAN 512

/* Push ids: one counter for the process, so that no two pushes it ever makes, on any
 * connection, share an id. */
static uint64_t next_push_id = 1;

/* What the pushes keep of each peer, on its endpoint (mca_btl_devmem_endpoint_state), under
 * the endpoint's lock: ours (armed or sent, until its registration ends) and what the peer
 * pushed to us. Zeroed is empty. */
struct push_peer {
    struct mca_btl_devmem_push_out *out;
    struct mca_btl_devmem_push_in in;
};
static size_t peer_handle;

static struct push_peer *peer_of(const mca_btl_devmem_endpoint_t *ep)
{
    return mca_btl_devmem_endpoint_state(ep, peer_handle);
}

int mca_btl_devmem_push_init(void)
{
    return mca_btl_devmem_endpoint_state_register(&peer_handle, sizeof(struct push_peer), NULL,
                                                  NULL);
}

/* Guards po->ep against the endpoint's end: a registration may outlive its endpoint (a
 * request left at finalize), and deregister_mem runs in any thread. Taken before ep->lock. */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- sending side */

struct mca_btl_devmem_push_out *
mca_btl_devmem_push_arm(struct mca_btl_base_endpoint_t *ep,
                        struct mca_btl_base_registration_handle_t *handle, size_t size,
                        uint32_t flags)
{
    uint32_t len = (uint32_t) mca_btl_devmem_component.push;
    struct mca_btl_devmem_push_out *po;

    /* exactly the RGET protocol's registration: others (one-sided windows) have no header
     * that would carry the push */
    if (0 == len || NULL == ep || MCA_BTL_REG_FLAG_REMOTE_READ != flags
        || MCA_BTL_DEVMEM_MEM_HOST != handle->kind || size <= len
        || size < (size_t) mca_btl_devmem_component.push_min) {
        return NULL;
    }
    if (NULL == (po = calloc(1, sizeof(*po)))) {
        return NULL; /* no push: the get asks for everything */
    }
    OPAL_THREAD_LOCK(&ep->lock);
    /* a push only saves time where the connection would idle through the get's round trip:
     * one at a time (btl_devmem_push.h), and not to a peer with a device-flow port, whose
     * gets of host memory may ask for lanes (an RX pool in host memory) and leave it
     * unclaimed */
    if (ep->fail_pending || MCA_BTL_DEVMEM_EP_FAILED == ep->state
        || MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state || NULL != peer_of(ep)->out
        || 0 != ep->remote.devflow_port) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        free(po);
        return NULL;
    }
    po->ep = ep;
    po->handle = handle;
    po->id = __atomic_fetch_add(&next_push_id, 1, __ATOMIC_RELAXED);
    po->base = handle->base;
    po->len = len;
    po->armed = true;
    peer_of(ep)->out = po;
    handle->push_id = po->id;
    handle->push_len = len;
    OPAL_THREAD_UNLOCK(&ep->lock);
    return po;
}

void mca_btl_devmem_push_release(struct mca_btl_devmem_push_out *po)
{
    mca_btl_devmem_endpoint_t *ep;

    (void) pthread_mutex_lock(&owner_lock);
    if (NULL != (ep = po->ep)) {
        OPAL_THREAD_LOCK(&ep->lock);
        peer_of(ep)->out = NULL;
        if (NULL != po->data) {
            mca_btl_devmem_frag_t *data = po->data;

            /* iov[1] is the user's bytes, advanced past what was written; written whole, the
             * frame only waits for its completion */
            if (data->iov_idx < data->iov_cnt) {
                size_t rest = data->iov[1].iov_len;
                void *stage = mca_btl_devmem_getput(data)->stage = malloc(rest);

                if (NULL != stage) {
                    memcpy(stage, data->iov[1].iov_base, rest);
                    data->iov[1].iov_base = stage;
                } else {
                    /* it cannot go out right any more, and the buffer is the user's again:
                     * write nothing more of it and end the connection, which the peer
                     * sees cut inside a frame */
                    data->iov_idx = data->iov_cnt;
                    if (ep->sd >= 0) {
                        (void) shutdown(ep->sd, SHUT_RDWR);
                    }
                    opal_output(0, "btl:devmem: out of memory keeping the unwritten %zu bytes "
                                "of a push to %s: closing that connection", rest,
                                OPAL_NAME_PRINT(ep->peer->name));
                }
            }
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
    (void) pthread_mutex_unlock(&owner_lock);
    free(po);
}

void mca_btl_devmem_push_forget(mca_btl_devmem_endpoint_t *ep)
{
    struct push_peer *pp = peer_of(ep);

    (void) pthread_mutex_lock(&owner_lock);
    OPAL_THREAD_LOCK(&ep->lock);
    if (NULL != pp->out) {
        pp->out->ep = NULL;
        pp->out = NULL;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    (void) pthread_mutex_unlock(&owner_lock);
}

/* A PUSH frame is done with (written, or failed with its connection). */
static void push_data_done(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag,
                           int status)
{
    struct mca_btl_devmem_push_out *po;

    OPAL_THREAD_LOCK(&ep->lock);
    /* its push, unless the registration ended first (po gone, or a newer one) */
    if (NULL != (po = peer_of(ep)->out) && po->data == frag) {
        po->data = NULL;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (OPAL_SUCCESS == status) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_sent, 1);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_host, frag->payload);
    }
    mca_btl_devmem_frag_return(frag);
}

mca_btl_devmem_frag_t *mca_btl_devmem_push_emit_locked(mca_btl_devmem_endpoint_t *ep,
                                                       mca_btl_devmem_frag_t *frag)
{
    struct mca_btl_devmem_push_out *po = peer_of(ep)->out;
    mca_btl_devmem_frag_t *data;
    const void *head = frag->segments[0].seg_addr.pval;
    size_t span = frag->segments[0].seg_len;

    if (NULL == po || !po->armed || MCA_BTL_DEVMEM_HDR_SEND != frag->hdr.type || NULL == head) {
        return NULL;
    }
    if (span > HANDLE_SEARCH_SPAN) {
        span = HANDLE_SEARCH_SPAN;
    }
    /* only the frame that carries the handle: the RGET the push belongs to */
    if (NULL == memmem(head, span, po->handle, sizeof(*po->handle))
        || NULL == (data = mca_btl_devmem_frag_alloc_user())) {
        return NULL;
    }
    po->armed = false;
    data->done = push_data_done;
    data->endpoint = ep;
    data->segments[0].seg_addr.lval = po->base;
    data->segments[0].seg_len = po->len;
    data->base.des_segment_count = 1;
    mca_btl_devmem_frag_prepare_write(data);
    data->hdr.type = MCA_BTL_DEVMEM_HDR_PUSH;
    data->hdr.id = po->id;
    data->hdr.addr = po->base;
    po->data = data;
    frag->hdr.flags |= MCA_BTL_DEVMEM_FLAG_PUSH_NEXT;
    frag->hdr.id = po->id;
    frag->hdr.addr = po->base;
    return data;
}

/* ---------------------------------------------------------------- receiving side */

static void slot_clear(struct mca_btl_devmem_push_slot *s)
{
    memset(s, 0, sizeof(*s));
}

/* Keep pushed bytes nobody claimed yet: the oldest kept ones go when there is no room. */
/* Kept push i is done with (claimed, or dropped for room): the younger ones move up. */
static void kept_drop(struct mca_btl_devmem_push_in *in, int i)
{
    const int n = MCA_BTL_DEVMEM_PUSH_KEPT;

    free(in->kept[i].buf);
    memmove(&in->kept[i], &in->kept[i + 1], (n - 1 - i) * sizeof(in->kept[0]));
    slot_clear(&in->kept[n - 1]);
}

static void keep(struct mca_btl_devmem_push_in *in, struct mca_btl_devmem_push_slot *s)
{
    const int n = MCA_BTL_DEVMEM_PUSH_KEPT;

    if (0 != in->kept[n - 1].id) {
        kept_drop(in, 0);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_unclaimed, 1);
    }
    for (int i = 0; i < n; i++) {
        if (0 == in->kept[i].id) {
            in->kept[i] = *s;
            break;
        }
    }
    slot_clear(s);
}

int mca_btl_devmem_push_rx_admit(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h, char *why, size_t whylen)
{
    struct mca_btl_devmem_push_in *in = &peer_of(ep)->in;
    int rc = 0;

    /* most frames have nothing to do with pushes; next.id is only ever written here, by
     * the thread that reads this connection */
    if (0 == in->next.id && MCA_BTL_DEVMEM_HDR_PUSH != h->type
        && !(h->flags & MCA_BTL_DEVMEM_FLAG_PUSH_NEXT)) {
        return 0;
    }
    OPAL_THREAD_LOCK(&ep->lock);
    if (0 != in->next.id) {
        if (MCA_BTL_DEVMEM_HDR_PUSH != h->type || h->id != in->next.id
            || h->addr != in->next.base) {
            snprintf(why, whylen, "the push a frame announced did not follow it");
            rc = -1;
        } else if (NULL != in->next.get && h->size != in->next.len) {
            snprintf(why, whylen, "a push of %u bytes where its handle said %u", h->size,
                     in->next.len);
            rc = -1;
        } else {
            in->cur = in->next;
            slot_clear(&in->next);
            in->cur.len = h->size;
            if (NULL == in->cur.get && NULL == (in->cur.buf = malloc(h->size))) {
                snprintf(why, whylen, "out of memory keeping a push of %u bytes", h->size);
                rc = -2;
            }
        }
    } else if (MCA_BTL_DEVMEM_HDR_PUSH == h->type) {
        snprintf(why, whylen, "a push nothing announced");
        rc = -1;
    } else if (MCA_BTL_DEVMEM_HDR_SEND == h->type && (h->flags & MCA_BTL_DEVMEM_FLAG_PUSH_NEXT)) {
        in->next.id = h->id;
        in->next.base = h->addr;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return rc;
}

char *mca_btl_devmem_push_rx_dest(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_push_in *in = &peer_of(ep)->in;
    char *dst;

    OPAL_THREAD_LOCK(&ep->lock);
    if (NULL != in->cur.get) {
        /* claimed before its first byte is placed: straight to the get's destination */
        free(in->cur.buf);
        in->cur.buf = NULL;
        in->cur.in_place = true;
        dst = (char *) mca_btl_devmem_getput(in->cur.get)->local_address;
    } else {
        dst = in->cur.buf;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return dst;
}

mca_btl_devmem_frag_t *mca_btl_devmem_push_rx_done(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_push_in *in = &peer_of(ep)->in;
    mca_btl_devmem_frag_t *get, *done = NULL;
    struct mca_btl_devmem_getput *g;

    OPAL_THREAD_LOCK(&ep->lock);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_host, in->cur.len);
    if (NULL == (get = in->cur.get)) {
        keep(in, &in->cur);
        OPAL_THREAD_UNLOCK(&ep->lock);
        return NULL;
    }
    g = mca_btl_devmem_getput(get);
    if (in->cur.in_place) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_in_place, 1);
    } else {
        /* claimed while its bytes were on their way to the keeping buffer */
        memcpy(g->local_address, in->cur.buf, in->cur.len);
        free(in->cur.buf);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_copied, 1);
    }
    slot_clear(&in->cur);
    g->push_pending = false;
    if (g->resp_done) {
        mca_btl_devmem_endpoint_pending_remove(ep, get);
        done = get;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return done;
}

static bool slot_matches(const struct mca_btl_devmem_push_slot *s,
                         const struct mca_btl_base_registration_handle_t *h)
{
    return 0 != s->id && s->id == h->push_id && s->base == h->base && NULL == s->get;
}

uint32_t mca_btl_devmem_push_claim_locked(mca_btl_devmem_endpoint_t *ep,
                                          mca_btl_devmem_frag_t *get,
                                          const struct mca_btl_base_registration_handle_t *remote,
                                          uint64_t remote_address, size_t size)
{
    struct mca_btl_devmem_push_in *in = &peer_of(ep)->in;
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);
    struct mca_btl_base_registration_handle_t h;

    if (NULL == remote || g->dst_dev) {
        return 0;
    }
    mca_btl_devmem_pml_copy(&h, remote, sizeof(h)); /* in the PML's header: maybe unaligned */
    if (MCA_BTL_DEVMEM_MEM_HOST != h.kind || 0 == h.push_id || 0 == h.push_len
        || remote_address != h.base || size <= h.push_len) {
        return 0;
    }
    if (slot_matches(&in->next, &h)) {
        /* announced, its PUSH frame is next on the stream: read in place */
        in->next.get = get;
        in->next.len = h.push_len;
        g->push_pending = true;
        return h.push_len;
    }
    if (slot_matches(&in->cur, &h) && in->cur.len == h.push_len) {
        in->cur.get = get; /* arriving: copied (or read in place) once all here */
        g->push_pending = true;
        return h.push_len;
    }
    for (int i = 0; i < MCA_BTL_DEVMEM_PUSH_KEPT; i++) {
        if (slot_matches(&in->kept[i], &h) && in->kept[i].len == h.push_len) {
            memcpy(g->local_address, in->kept[i].buf, h.push_len);
            kept_drop(in, i);
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_copied, 1);
            return h.push_len;
        }
    }
    return 0;
}

void mca_btl_devmem_push_in_reset(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_push_in *in = &peer_of(ep)->in;

    if (0 != in->cur.id) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_unclaimed,
                                 NULL == in->cur.get);
        free(in->cur.buf);
    }
    for (int i = 0; i < MCA_BTL_DEVMEM_PUSH_KEPT; i++) {
        if (0 != in->kept[i].id) {
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.push_unclaimed, 1);
            free(in->kept[i].buf);
        }
    }
    memset(in, 0, sizeof(*in));
}
