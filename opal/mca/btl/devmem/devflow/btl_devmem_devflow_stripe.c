/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, asking side: which lane a get is asked on, so which lane answers it. A get goes whole to the least
 * loaded open lane, or, when it is at least two chunks long and several lanes are open, is
 * cut into chunks (btl_devmem_devflow_chunk), each asked on the lane then least loaded, so
 * that the chunks arrive on several connections (several softirq cores, several RX queues)
 * at once. Each chunk is a fragment on its lane's list whose done function (chunk_done)
 * counts it against its get; the last one completes the get. See btl_devmem_devflow.h.
 */
#include "opal_config.h"

#include "devflow/btl_devmem_devflow_int.h"

size_t mca_btl_devmem_devflow_stripe_prepare(mca_btl_devmem_endpoint_t *ep, size_t size,
                                             struct mca_btl_devmem_stripe *stripe)
{
    size_t chunk = mca_btl_devmem_component.devflow_chunk;
    /* the further chunks' requests ride in the first one's inline space */
    size_t room = mca_btl_devmem_frag_max_payload() / sizeof(struct mca_btl_devmem_hdr) + 1;
    size_t most = room < MCA_BTL_DEVMEM_STRIPE_MAX ? room : MCA_BTL_DEVMEM_STRIPE_MAX;
    unsigned int n;

    stripe->nchunks = 0;
    stripe->used = 0;
    stripe->chunk = size;
    if (mca_btl_devmem_component.devflows < 2 || NULL == mca_btl_devmem_devflow_lane(ep, 1)
        || size < 2 * chunk || most < 2) {
        return 0;
    }
    if (size > most * chunk) {
        /* a few large chunks rather than many requests; pages stay whole */
        chunk = (size + most - 1) / most;
        chunk = (chunk + 4095) & ~(size_t) 4095;
    }
    n = (unsigned int) ((size + chunk - 1) / chunk);
    for (unsigned int i = 0; i < n; i++) {
        if (NULL == (stripe->chunks[i] = mca_btl_devmem_frag_alloc_user())) {
            /* short of records: the get goes whole */
            while (i > 0) {
                mca_btl_devmem_frag_return(stripe->chunks[--i]);
            }
            return 0;
        }
    }
    stripe->nchunks = n;
    stripe->chunk = chunk;
    return (n - 1) * sizeof(struct mca_btl_devmem_hdr);
}

void mca_btl_devmem_devflow_stripe_release(struct mca_btl_devmem_stripe *stripe)
{
    for (unsigned int i = stripe->used; i < stripe->nchunks; i++) {
        mca_btl_devmem_frag_return(stripe->chunks[i]);
    }
    stripe->nchunks = stripe->used = 0;
}

/* The open lane that owes the fewest bytes, searched from the set's cursor so that ties
 * rotate; NULL when none is open. Under ep's lock. */
static struct mca_btl_devmem_devflow *least_loaded(struct mca_btl_devmem_devflows *set)
{
    struct mca_btl_devmem_devflow *best = NULL;

    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *df =
            set->lane[(set->cursor + i) % MCA_BTL_DEVMEM_DEVFLOWS_MAX];

        if (NULL != df && MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state
            && (NULL == best || df->expected < best->expected)) {
            best = df;
        }
    }
    if (NULL != best) {
        set->cursor = (best->lane + 1) % MCA_BTL_DEVMEM_DEVFLOWS_MAX;
    }
    return best;
}

/* Put rec (the get, or one of its chunks) on lane df. Under ep's lock. */
static void place(struct mca_btl_devmem_devflow *df, mca_btl_devmem_frag_t *rec)
{
    opal_list_append(&df->gets, &rec->base.super.super);
    df->expected += rec->hdr.size;
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.gets_inflight_max,
                             opal_list_get_size(&df->gets));
}

/* Gets and chunks outstanding on all of the set's lanes, for the high-water mark. */
static size_t inflight(const struct mca_btl_devmem_devflows *set)
{
    size_t n = 0;

    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        n += NULL == set->lane[i] ? 0 : opal_list_get_size(&set->lane[i]->gets);
    }
    return n;
}

/* Packets landed in GPU memory reach a host destination only through one device copy each,
 * and a copy into pageable memory waits for itself: 8 us a 4 KiB packet, 0.5 GB/s, on an
 * H200 (bench/gather_bench -H). The kernel's copy into the socket reader's buffer on the
 * control connection is an order of magnitude faster. */
bool mca_btl_devmem_devflow_host_stays(const mca_btl_devmem_endpoint_t *ep,
                                       const mca_btl_devmem_frag_t *get)
{
    const struct mca_btl_devmem_dev *dev = ep->module->devpath.dev;

    return !mca_btl_devmem_getput(get)->dst_dev && NULL != dev && NULL == dev->pool.map;
}

/* A chunk is done: its get is once the last of them is, with the first failure among them. */
static void chunk_done(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *chunk, int status)
{
    mca_btl_devmem_frag_t *get = mca_btl_devmem_devflow_frag(chunk)->parent;
    struct mca_btl_devmem_devflow_frag *d = mca_btl_devmem_devflow_frag(get);
    int ok = OPAL_SUCCESS;

    mca_btl_devmem_frag_return(chunk);
    if (OPAL_SUCCESS != status) {
        (void) __atomic_compare_exchange_n(&d->chunk_status, &ok, status, false, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE);
    }
    if (1 == __atomic_fetch_sub(&d->chunks_left, 1, __ATOMIC_ACQ_REL)) {
        get->done(ep, get, __atomic_load_n(&d->chunk_status, __ATOMIC_ACQUIRE));
    }
}

bool mca_btl_devmem_devflow_place_get(mca_btl_devmem_endpoint_t *ep,
                                      mca_btl_devmem_frag_t *get, mca_btl_devmem_frag_t *req,
                                      struct mca_btl_devmem_stripe *stripe)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    struct mca_btl_devmem_devflows *set = __atomic_load_n(&dp->devflows, __ATOMIC_ACQUIRE);
    struct mca_btl_devmem_hdr *more = mca_btl_devmem_frag_data(req);
    struct mca_btl_devmem_devflow *df;
    struct mca_btl_devmem_getput *g, *cg;
    unsigned int open = 0, n;
    size_t off = 0;

    if (NULL == set || 0 == get->hdr.size) {
        return false;
    }
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        open += NULL != set->lane[i] && MCA_BTL_DEVMEM_DF_RX_OPEN == set->lane[i]->rx_state;
    }
    if (0 == open) {
        return false;
    }
    dp->lanes_used = mca_btl_devmem_devflow_clock(); /* not idle: see devflow_lanes.c */
    req->hdr.flags = MCA_BTL_DEVMEM_FLAG_DEVFLOW;
    n = open > 1 && stripe->nchunks > 1 ? stripe->nchunks : 1;
    if (n <= 1) {
        df = least_loaded(set);
        req->hdr.tag = (uint8_t) df->lane;
        place(df, get);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.devflow_chunks, 1);
        mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.chunks_inflight_max,
                                 inflight(set));
        return true;
    }
    /* one request per chunk: the first is req's own header, the others follow it in its
     * inline space, written with it as consecutive frames */
    mca_btl_devmem_devflow_frag(get)->chunks_left = n;
    mca_btl_devmem_devflow_frag(get)->chunk_status = OPAL_SUCCESS;
    g = mca_btl_devmem_getput(get);
    for (unsigned int i = 0; i < n; i++, off += stripe->chunk) {
        mca_btl_devmem_frag_t *c = stripe->chunks[i];
        struct mca_btl_devmem_hdr *h = 0 == i ? &req->hdr : &more[i - 1];
        size_t len = get->hdr.size - off < stripe->chunk ? get->hdr.size - off : stripe->chunk;

        c->done = chunk_done;
        mca_btl_devmem_devflow_frag(c)->parent = get;
        c->endpoint = ep;
        cg = mca_btl_devmem_getput(c);
        cg->local_address = (char *) g->local_address + off;
        cg->dst_dev = g->dst_dev;
        cg->ordinal = g->ordinal;
        c->hdr.size = (uint32_t) len;
        df = least_loaded(set);
        if (0 != i) {
            *h = req->hdr;
        }
        h->tag = (uint8_t) df->lane;
        h->addr = req->hdr.addr + off;
        h->size = (uint32_t) len;
        place(df, c);
    }
    stripe->used = n;
    req->iov[1].iov_base = more;
    req->iov[1].iov_len = (n - 1) * sizeof(*more);
    req->iov_cnt = 2;
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.devflow_chunks, n);
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.chunks_inflight_max,
                             inflight(set));
    return true;
}
