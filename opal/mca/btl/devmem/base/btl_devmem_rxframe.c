/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive framing: the read-ahead arithmetic of a control connection; see
 * btl_devmem_rxframe.h. Plain C: no Open MPI, no sockets.
 */
#include "base/btl_devmem_rxframe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void mca_btl_devmem_rxframe_init(struct mca_btl_devmem_rxframe *rf,
                                 const struct mca_btl_devmem_rxframe_ops *ops, void *ctx)
{
    memset(rf, 0, sizeof(*rf));
    rf->ops = ops;
    rf->ctx = ctx;
}

int mca_btl_devmem_rxframe_start(struct mca_btl_devmem_rxframe *rf, size_t cap)
{
    if (NULL == rf->buf) {
        rf->buf = malloc(cap + MCA_BTL_DEVMEM_RX_SLACK);
        if (NULL == rf->buf) {
            return -ENOMEM;
        }
        rf->cap = cap;
    }
    mca_btl_devmem_rxframe_reset(rf);
    return 0;
}

void mca_btl_devmem_rxframe_reset(struct mca_btl_devmem_rxframe *rf)
{
    rf->hdr_first = false;
    rf->in_body = false;
    rf->head = rf->tail = 0;
    rf->dst = NULL;
    rf->left = 0;
}

void mca_btl_devmem_rxframe_fini(struct mca_btl_devmem_rxframe *rf)
{
    free(rf->buf);
    free(rf->big);
    rf->buf = rf->big = NULL;
    rf->cap = rf->big_cap = 0;
    mca_btl_devmem_rxframe_reset(rf);
}

/* Bytes that finish the frame begun in the read-ahead (a header, or a SEND that fits) and
 * bring in the next header: no further, so that a payload after it is not read here. */
static size_t through_next_header(const struct mca_btl_devmem_rxframe *rf)
{
    const size_t hs = sizeof(struct mca_btl_devmem_hdr);
    size_t have = rf->tail - rf->head;
    struct mca_btl_devmem_hdr h;

    if (have < hs) {
        return hs - have;
    }
    memcpy(&h, rf->buf + rf->head, hs);
    return hs + mca_btl_devmem_hdr_payload(&h) - have + hs;
}

int mca_btl_devmem_rxframe_iov(struct mca_btl_devmem_rxframe *rf, struct iovec iov[2])
{
    if (rf->in_body) {
        /* the payload's rest, then the next headers into the emptied read-ahead (with
         * hdr_first, one header: the next large payload goes to its own destination) */
        iov[0].iov_base = rf->dst;
        iov[0].iov_len = rf->left;
        iov[1].iov_base = rf->buf;
        iov[1].iov_len = rf->hdr_first ? sizeof(struct mca_btl_devmem_hdr) : rf->cap;
        return 2;
    }
    /* never full here: what parse leaves is a partial header or a SEND that fits */
    iov[0].iov_base = rf->buf + rf->tail;
    iov[0].iov_len = rf->cap - rf->tail;
    if (rf->hdr_first && through_next_header(rf) < iov[0].iov_len) {
        iov[0].iov_len = through_next_header(rf);
    }
    return 1;
}

/* Room for a SEND payload larger than the read-ahead; NULL when out of memory. */
static char *big_buffer(struct mca_btl_devmem_rxframe *rf, uint32_t size)
{
    if (rf->big_cap < size) {
        char *p = realloc(rf->big, (size_t) size + MCA_BTL_DEVMEM_RX_SLACK);
        if (NULL == p) {
            return NULL;
        }
        rf->big = p;
        rf->big_cap = size;
    }
    return rf->big;
}

/* Deliver a SEND whose payload is in the read-ahead: what its receiver writes past the
 * payload must not reach the frames after it. */
static int complete_send(struct mca_btl_devmem_rxframe *rf, const struct mca_btl_devmem_hdr *h,
                         char *body)
{
    char keep[MCA_BTL_DEVMEM_RX_SLACK], *next = rf->buf + rf->head;
    size_t after = rf->tail - rf->head;
    int rc;

    if (after > sizeof(keep)) {
        after = sizeof(keep);
    }
    memcpy(keep, next, after);
    rc = rf->ops->complete(rf->ctx, h, body);
    memcpy(next, keep, after);
    return rc;
}

/* Take every complete frame out of the read-ahead. 0, -1 (stopped) or -ENOMEM. */
static int parse(struct mca_btl_devmem_rxframe *rf)
{
    const size_t hs = sizeof(struct mca_btl_devmem_hdr);

    while (rf->tail - rf->head >= hs) {
        struct mca_btl_devmem_hdr h;
        enum mca_btl_devmem_check chk;
        size_t have;
        uint32_t p;
        char *body, *dst;

        memcpy(&h, rf->buf + rf->head, hs);
        chk = mca_btl_devmem_hdr_check(&h, &rf->limits);
        if (MCA_BTL_DEVMEM_CHECK_OK != chk) {
            rf->ops->malformed(rf->ctx, &h, chk);
            return -1;
        }
        p = mca_btl_devmem_hdr_payload(&h);
        body = rf->buf + rf->head + hs;
        have = rf->tail - rf->head - hs;
        if (have < p && MCA_BTL_DEVMEM_HDR_SEND == h.type && hs + p <= rf->cap) {
            break; /* fits the buffer: wait for the rest there, admit it then */
        }
        if (rf->ops->admit(rf->ctx, &h) < 0) {
            return -1;
        }
        if (have >= p) {
            /* whole frame in hand: a SEND is delivered from the buffer itself */
            rf->head += hs + p;
            if (MCA_BTL_DEVMEM_HDR_SEND == h.type) {
                if (complete_send(rf, &h, body) < 0) {
                    return -1;
                }
                continue;
            }
            if (p > 0) {
                if (NULL == (dst = rf->ops->dest(rf->ctx, &h))) {
                    return -1;
                }
                memcpy(dst, body, p);
            }
            if (rf->ops->complete(rf->ctx, &h, body) < 0) {
                return -1;
            }
            continue;
        }
        /* the rest goes straight to its destination */
        if (MCA_BTL_DEVMEM_HDR_SEND == h.type) {
            if (NULL == (dst = big_buffer(rf, h.size))) {
                return -ENOMEM;
            }
        } else if (NULL == (dst = rf->ops->dest(rf->ctx, &h))) {
            return -1;
        }
        memcpy(dst, body, have);
        rf->hdr = h;
        rf->dst = dst + have;
        rf->left = p - have;
        rf->head = rf->tail = 0;
        rf->in_body = true;
        return 0;
    }
    if (rf->head == rf->tail) {
        rf->head = rf->tail = 0;
    } else if (rf->head > 0) {
        memmove(rf->buf, rf->buf + rf->head, rf->tail - rf->head);
        rf->tail -= rf->head;
        rf->head = 0;
    }
    return 0;
}

int mca_btl_devmem_rxframe_got(struct mca_btl_devmem_rxframe *rf, size_t n)
{
    if (!rf->in_body) {
        rf->tail += n;
        return parse(rf);
    }
    if (n < rf->left) {
        rf->dst += n;
        rf->left -= n;
        return 0;
    }
    /* the payload is complete; whatever came after it is in the read-ahead */
    rf->tail = n - rf->left;
    rf->left = 0;
    rf->dst = NULL;
    rf->in_body = false;
    if (rf->ops->complete(rf->ctx, &rf->hdr, rf->big) < 0) {
        return -1;
    }
    return parse(rf);
}
