/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive framing of a control connection, without Open MPI (unit-tested and fuzzed alone).
 *
 * Small frames are read in bulk into a read-ahead buffer and handed over from there without
 * another copy; a payload that does not fit is read straight to its destination, and the
 * read that finishes it pulls the next headers into the buffer in the same call (a second
 * iovec). While the owner expects a large payload (hdr_first), reads stop at the next
 * header, so that none of that payload passes through the read-ahead: a get's answer of
 * 256 KiB would otherwise have its first 128 KiB copied out of it. Every header passes the
 * codec check (btl_devmem_hdr.h) and the owner's admit before a byte of its payload is
 * placed.
 *
 * The owner does the reading: rxframe_iov says where the next bytes go, rxframe_got parses
 * what arrived. Callbacks tell the owner's side:
 *   admit     a header that passed the codec: may its frame be taken (once per frame)?
 *   dest      where the payload of an admitted PUT or GET_RESP goes (h->size bytes)
 *   complete  every payload byte of a frame is in place; a SEND's at `body` (read-ahead
 *             or the large-payload buffer, valid until the callback returns)
 *   malformed a header failed the codec check (the stream is over)
 * admit and complete return 0, or -1 to stop (the owner failed); dest returns NULL to stop.
 *
 * A SEND's receiver may write a little past its payload: Open MPI 5's ob1, given a 32-byte
 * CID header alone (communicators with extended context ids, e.g. made from a group), stores
 * the context id of the match header that would follow it 2 bytes past its end, trusting
 * every BTL to have room there. Both buffers have MCA_BTL_DEVMEM_RX_SLACK bytes of it, and
 * the bytes of later frames that lie there are kept aside while the SEND is delivered.
 */
#ifndef MCA_BTL_DEVMEM_RXFRAME_H
#define MCA_BTL_DEVMEM_RXFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "base/btl_devmem_hdr.h"

/* Bytes past a SEND's payload its receiver may write without harm (see above). */
#define MCA_BTL_DEVMEM_RX_SLACK 64

struct mca_btl_devmem_rxframe_ops {
    int (*admit)(void *ctx, const struct mca_btl_devmem_hdr *h);
    char *(*dest)(void *ctx, const struct mca_btl_devmem_hdr *h);
    int (*complete)(void *ctx, const struct mca_btl_devmem_hdr *h, char *body);
    void (*malformed)(void *ctx, const struct mca_btl_devmem_hdr *h,
                      enum mca_btl_devmem_check chk);
};

struct mca_btl_devmem_rxframe {
    const struct mca_btl_devmem_rxframe_ops *ops;
    void *ctx;
    struct mca_btl_devmem_limits limits; /* what headers are checked against */
    bool hdr_first;              /* owner: read a header alone before its payload */
    bool in_body;                /* reading a payload straight to its destination */
    char *buf;                   /* read-ahead */
    size_t cap, head, tail;      /* capacity, first unparsed byte, end of data */
    struct mca_btl_devmem_hdr hdr; /* in_body: the frame being completed */
    char *dst;                   /* ... where the rest of its payload goes */
    size_t left;                 /* ... and how much is left */
    char *big;                   /* SEND payloads larger than the read-ahead */
    size_t big_cap;
};

/* Empty, with no buffers yet. */
void mca_btl_devmem_rxframe_init(struct mca_btl_devmem_rxframe *rf,
                                 const struct mca_btl_devmem_rxframe_ops *ops, void *ctx);

/* A new stream: allocate the read-ahead of `cap` bytes if there is none yet (cap must hold a
 * header and the largest SEND that should be delivered from it), forget any old data.
 * 0 or -ENOMEM. */
int mca_btl_devmem_rxframe_start(struct mca_btl_devmem_rxframe *rf, size_t cap);

/* Forget what was buffered (the stream is gone); the buffers stay. */
void mca_btl_devmem_rxframe_reset(struct mca_btl_devmem_rxframe *rf);

/* Free the buffers. */
void mca_btl_devmem_rxframe_fini(struct mca_btl_devmem_rxframe *rf);

/* Where the next read goes: 1 or 2 iovecs, never an empty one. With hdr_first set, no
 * further than the next header: the owner expects a large PUT or GET_RESP, whose payload
 * then goes straight to its destination instead of through the read-ahead. */
int mca_btl_devmem_rxframe_iov(struct mca_btl_devmem_rxframe *rf, struct iovec iov[2]);

/* n (> 0) bytes were read into the iovecs of the last rxframe_iov: place and deliver them.
 * 0; -1 when a callback stopped it or a header was malformed (malformed was called);
 * -ENOMEM when a large SEND payload found no memory. */
int mca_btl_devmem_rxframe_got(struct mca_btl_devmem_rxframe *rf, size_t n);

/* Bytes of an unfinished frame held now (0 and !in_body: the stream is between frames). */
static inline size_t mca_btl_devmem_rxframe_partial(const struct mca_btl_devmem_rxframe *rf)
{
    return rf->tail - rf->head;
}

#endif /* MCA_BTL_DEVMEM_RXFRAME_H */
