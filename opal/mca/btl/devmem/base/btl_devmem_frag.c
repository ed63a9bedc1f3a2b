/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragment free lists. Three sizes, as in btl/tcp: eager (eager_limit bytes of payload
 * space), max (max_send_size) and user (none: the payload stays where the caller has it).
 */
#include "opal_config.h"

#include "base/btl_devmem_fault.h"
#include "base/btl_devmem_frag.h"
#include "base/btl_devmem_tsan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <sys/socket.h>

static void frag_construct(mca_btl_devmem_frag_t *frag)
{
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 0;
    frag->iov_cnt = 0;
    frag->iov_idx = 0;
    frag->endpoint = NULL;
    frag->list = NULL;
    frag->capacity = 0;
    /* a new fragment goes into the pool as a returned one does: the thread that takes it
     * first may be another than the one that grew the pool */
    MCA_BTL_DEVMEM_HANDOFF_GIVEN(frag);
}

OBJ_CLASS_INSTANCE(mca_btl_devmem_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

static size_t eager_capacity;
static size_t max_capacity;
static bool lists_ready;

/* The layers' states (mca_btl_devmem_frag_state_register): get and put, device flows. The
 * free list aligns its elements to a cache line, so the states, at frag + 1, start 16-aligned. */
_Static_assert(0 == sizeof(mca_btl_devmem_frag_t) % 16,
               "the states after a fragment start 16-aligned");
#define STATE_SLOTS 4
static struct {
    size_t *handle;
    mca_btl_devmem_frag_release_fn release;
} states[STATE_SLOTS];
static int nstates;
size_t mca_btl_devmem_frag_states_size;

int mca_btl_devmem_frag_state_register(size_t *handle, size_t size,
                                       mca_btl_devmem_frag_release_fn release)
{
    const size_t align = 16; /* from frag + 1, itself 16-aligned (below): any state of ours */

    for (int i = 0; i < nstates; i++) {
        if (states[i].handle == handle) {
            return OPAL_SUCCESS;
        }
    }
    if (lists_ready) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (STATE_SLOTS == nstates) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    *handle = mca_btl_devmem_frag_states_size;
    states[nstates].handle = handle;
    states[nstates].release = release;
    nstates++;
    mca_btl_devmem_frag_states_size += (size + align - 1) / align * align;
    return OPAL_SUCCESS;
}

/* Fragments a free list starts with and grows by; it has no upper bound (a rank's
 * fragments in flight are bounded by its peers' sends, as in btl/tcp's defaults). */
#define FREE_LIST_FIRST 8
#define FREE_LIST_GROWTH 32

static int list_init(opal_free_list_t *list, size_t capacity)
{
    OBJ_CONSTRUCT(list, opal_free_list_t);
    return opal_free_list_init(list,
                               sizeof(mca_btl_devmem_frag_t) + mca_btl_devmem_frag_states_size
                                   + capacity,
                               opal_cache_line_size, OBJ_CLASS(mca_btl_devmem_frag_t), 0,
                               opal_cache_line_size, FREE_LIST_FIRST, -1, FREE_LIST_GROWTH,
                               NULL, 0, NULL, NULL, NULL);
}

int mca_btl_devmem_frag_lists_init(size_t eager_limit, size_t max_send_size)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    int rc;

    eager_capacity = eager_limit;
    max_capacity = max_send_size > eager_limit ? max_send_size : eager_limit;
    if (OPAL_SUCCESS != (rc = list_init(&c->frags_eager, eager_capacity))
        || OPAL_SUCCESS != (rc = list_init(&c->frags_max, max_capacity))
        || OPAL_SUCCESS != (rc = list_init(&c->frags_user, 0))) {
        return rc;
    }
    lists_ready = true;
    return OPAL_SUCCESS;
}

void mca_btl_devmem_frag_lists_fini(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    if (lists_ready) {
        OBJ_DESTRUCT(&c->frags_eager);
        OBJ_DESTRUCT(&c->frags_max);
        OBJ_DESTRUCT(&c->frags_user);
        lists_ready = false;
    }
}

static mca_btl_devmem_frag_t *take(opal_free_list_t *list, size_t capacity)
{
    mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) opal_free_list_get(list);

    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    MCA_BTL_DEVMEM_HANDOFF_TAKEN(frag);
    frag->list = list;
    frag->capacity = capacity;
    frag->endpoint = NULL;
    frag->done = NULL;
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 0;
    frag->base.des_flags = 0;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->base.des_context = NULL;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->segments[0].seg_len = 0;
    frag->segments[1].seg_len = 0;
    frag->payload = 0;
    memset(&frag->hdr, 0, sizeof(frag->hdr));
    memset(frag + 1, 0, mca_btl_devmem_frag_states_size);
    return frag;
}

mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc(size_t payload)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    if (payload <= eager_capacity) {
        return take(&c->frags_eager, eager_capacity);
    }
    if (payload <= max_capacity) {
        return take(&c->frags_max, max_capacity);
    }
    return NULL;
}

size_t mca_btl_devmem_frag_max_payload(void)
{
    return max_capacity;
}

mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc_user(void)
{
    return take(&mca_btl_devmem_component.frags_user, 0);
}

void mca_btl_devmem_frag_done_return(struct mca_btl_base_endpoint_t *ep,
                                     mca_btl_devmem_frag_t *frag, int status)
{
    (void) ep;
    (void) status;
    mca_btl_devmem_frag_return(frag);
}

void mca_btl_devmem_frag_return(mca_btl_devmem_frag_t *frag)
{
    opal_free_list_t *list;

    for (int i = 0; i < nstates; i++) {
        if (NULL != states[i].release) {
            states[i].release(mca_btl_devmem_frag_state(frag, *states[i].handle));
        }
    }
    list = frag->list; /* the next owner may rewrite it once given */
    MCA_BTL_DEVMEM_HANDOFF_GIVEN(frag);
    opal_free_list_return(list, &frag->base.super);
}

void mca_btl_devmem_frag_prepare_write(mca_btl_devmem_frag_t *frag)
{
    uint32_t total = 0;
    int n = 1;

    frag->iov[0].iov_base = &frag->hdr;
    frag->iov[0].iov_len = sizeof(frag->hdr);
    for (size_t i = 0; i < frag->base.des_segment_count && n < MCA_BTL_DEVMEM_FRAG_IOVS; i++) {
        if (0 == frag->segments[i].seg_len) {
            continue;
        }
        frag->iov[n].iov_base = frag->segments[i].seg_addr.pval;
        frag->iov[n].iov_len = frag->segments[i].seg_len;
        total += (uint32_t) frag->segments[i].seg_len;
        n++;
    }
    frag->iov_cnt = n;
    frag->iov_idx = 0;
    frag->payload = total;
    frag->hdr.size = total;
}

/* iovecs per sendmsg: enough to batch many small frames, far below UIO_MAXIOV */
#define QUEUE_WRITE_IOV_MAX 64

static size_t frag_bytes_left(const mca_btl_devmem_frag_t *frag)
{
    size_t left = 0;

    for (int i = frag->iov_idx; i < frag->iov_cnt; i++) {
        left += frag->iov[i].iov_len;
    }
    return left;
}

int mca_btl_devmem_frag_queue_write(int sd, opal_list_t *queue,
                                    const struct mca_btl_devmem_write_shape *shape,
                                    opal_list_t *done, bool *blocked)
{
    size_t chunk = shape->chunk;

    /* the head frame's size matters only where the rule might change the call (not over a
     * veth by default: no whole frames) */
    if (!opal_list_is_empty(queue) && shape->whole > chunk) {
        mca_btl_devmem_frag_t *first = (mca_btl_devmem_frag_t *) opal_list_get_first(queue);
        size_t head = frag_bytes_left(first);

        if (head > chunk && head <= shape->whole && 1 == opal_list_get_size(queue)
            && mca_btl_devmem_frag_unwritten(first)) {
            chunk = head; /* a lone frame, in one call (write_whole): a ping-pong's answer */
        }
    }

    *blocked = false;

    while (!opal_list_is_empty(queue)) {
        struct iovec iov[QUEUE_WRITE_IOV_MAX];
        struct msghdr msg = {0};
        size_t want = 0, left;
        int cnt = 0;
        ssize_t n;

        /* tests only (btl_devmem_testing fault=): the frame at the head may be spoiled */
        if (OPAL_UNLIKELY(mca_btl_devmem_fault_armed)) {
            int fault = mca_btl_devmem_fault_frame(sd, queue);

            if (fault < 0) {
                return fault;
            }
            if (fault > 0) {
                *blocked = true;
                break;
            }
        }
        /* at most `chunk` bytes per call */
        mca_btl_devmem_frag_t *frag;
        OPAL_LIST_FOREACH (frag, queue, mca_btl_devmem_frag_t) {
            for (int i = frag->iov_idx;
                 i < frag->iov_cnt && cnt < QUEUE_WRITE_IOV_MAX && want < chunk; i++) {
                iov[cnt] = frag->iov[i];
                if (iov[cnt].iov_len > chunk - want) {
                    iov[cnt].iov_len = chunk - want;
                }
                want += iov[cnt++].iov_len;
            }
            if (cnt == QUEUE_WRITE_IOV_MAX || want >= chunk) {
                break;
            }
        }
        msg.msg_iov = iov;
        msg.msg_iovlen = cnt;
        n = sendmsg(sd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.writev_calls, 1);
        if (n < 0) {
            if (EINTR == errno) {
                continue;
            }
            if (EAGAIN == errno || EWOULDBLOCK == errno) {
                *blocked = true;
                break;
            }
            return -errno;
        }
        left = (size_t) n;
        while (!opal_list_is_empty(queue)) {
            frag = (mca_btl_devmem_frag_t *) opal_list_get_first(queue);
            while (frag->iov_idx < frag->iov_cnt && left >= frag->iov[frag->iov_idx].iov_len) {
                left -= frag->iov[frag->iov_idx].iov_len;
                frag->iov_idx++;
            }
            if (frag->iov_idx < frag->iov_cnt) {
                frag->iov[frag->iov_idx].iov_base = (char *) frag->iov[frag->iov_idx].iov_base
                                                    + left;
                frag->iov[frag->iov_idx].iov_len -= left;
                left = 0;
                break;
            }
            opal_list_remove_first(queue);
            opal_list_append(done, &frag->base.super.super);
        }
        if ((size_t) n < want) {
            *blocked = true;
            break;
        }
    }
    return 0;
}

int mca_btl_devmem_frag_queue_drain(int sd, opal_list_t *queue, opal_list_t *done)
{
    static const struct mca_btl_devmem_write_shape any = {.chunk = SIZE_MAX};

    for (int tries = 0; tries < 200 && !opal_list_is_empty(queue); tries++) {
        struct pollfd pfd = {.fd = sd, .events = POLLOUT};
        bool blocked = false;
        int rc = mca_btl_devmem_frag_queue_write(sd, queue, &any, done, &blocked);

        if (rc < 0) {
            return rc;
        }
        if (blocked) {
            (void) poll(&pfd, 1, 10);
        }
    }
    return 0;
}
