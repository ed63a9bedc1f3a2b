/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devmem transmit: sendmsg(MSG_ZEROCOPY) with one SCM_DEVMEM_DMABUF cmsg carrying the TX
 * binding id, iov_base holding byte offsets into the bound dmabuf; completions from the
 * socket's error queue (SO_EE_ORIGIN_ZEROCOPY, range [ee_info, ee_data]) release the sent
 * regions in order.
 *
 * Every MSG_ZEROCOPY sendmsg that queues at least one byte takes the socket's next
 * notification id (0, 1, 2, ...; net/core/skbuff.c msg_zerocopy_realloc); a failed one
 * takes none. The tracker mirrors that numbering. Functions return 0 / a count or -errno.
 */
#ifndef DEVMEM_TX_H
#define DEVMEM_TX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "err.h"
#include "uapi.h"

/* One piece to send: a byte range of the TX dmabuf. */
struct devmem_tx_iov {
    uint64_t offset;
    size_t len;
};

/* Most iovs one devmem send takes (the kernel's UIO_MAXIOV is larger). */
#define DEVMEM_TX_MAX_IOV 64

/* Set SO_ZEROCOPY, and SO_BINDTODEVICE to ifname when ifname is not NULL or "" (before
 * connect(), with CAP_NET_RAW): devmem TX needs the route to leave through the device the
 * binding is on. Without ifname the route alone decides, and a send whose route leaves
 * elsewhere fails with ENODEV. */
int devmem_tx_socket_setup(int fd, const char *ifname, struct devmem_err *err);

/* Fill msg for a devmem send: iovs[i].iov_base = offset (not a pointer), cbuf (at least
 * DEVMEM_TX_CBUF_SIZE bytes, aligned for struct cmsghdr) gets the binding-id cmsg. */
#define DEVMEM_TX_CBUF_SIZE CMSG_SPACE(sizeof(uint32_t))
int devmem_tx_build_msg(struct msghdr *msg, struct iovec *iovs, void *cbuf, uint32_t binding_id,
                        const struct devmem_tx_iov *iov, size_t n, struct devmem_err *err);

/* Real send: sendmsg(fd, flags | MSG_ZEROCOPY). Returns bytes queued (possibly fewer than
 * asked: the caller resumes from that count) or -errno: -EAGAIN, -EINVAL (bad id, no
 * SO_ZEROCOPY), -ENODEV (route through another device), -EFAULT (offset past the dmabuf). */
ssize_t devmem_tx_send(int fd, uint32_t binding_id, const struct devmem_tx_iov *iov, size_t n,
                       int flags, struct devmem_err *err);

/* The same through another sendmsg (the emulated kernel's): send returns bytes or -errno;
 * who names it in error messages. One control buffer and one error mapping for both. */
typedef ssize_t (*devmem_tx_sendmsg_fn)(void *ctx, int fd, const struct msghdr *msg, int flags);
ssize_t devmem_tx_send_via(devmem_tx_sendmsg_fn send, void *ctx, const char *who, int fd,
                           uint32_t binding_id, const struct devmem_tx_iov *iov, size_t n,
                           int flags, struct devmem_err *err);

/* One zerocopy notification. */
struct devmem_tx_completion {
    uint32_t lo, hi; /* notification ids lo..hi (inclusive) completed */
    int copied;      /* SO_EE_CODE_ZEROCOPY_COPIED: the kernel copied instead */
};

/* Parse the error-queue message msg (IP_RECVERR / IPV6_RECVERR cmsg). -EPROTO when it is no
 * zerocopy notification or is malformed; -EIO (ee_errno) when it reports an error. */
int devmem_tx_parse_completion(const struct msghdr *msg, struct devmem_tx_completion *c,
                               struct devmem_err *err);

/* Real read of one notification: recvmsg(MSG_ERRQUEUE | MSG_DONTWAIT). -EAGAIN when none. */
int devmem_tx_read_completion(int fd, struct devmem_tx_completion *c, struct devmem_err *err);
/* The same through another recvmsg (the emulated kernel's), as devmem_tx_send_via. */
typedef ssize_t (*devmem_tx_recvmsg_fn)(void *ctx, int fd, struct msghdr *msg, int flags);
int devmem_tx_read_completion_via(devmem_tx_recvmsg_fn recv, void *ctx, const char *who, int fd,
                                  struct devmem_tx_completion *c, struct devmem_err *err);

/* ---- in-order release of sent regions ---------------------------------------------------- */

typedef void (*devmem_tx_release_fn)(void *ctx, uint64_t cookie, size_t bytes);

struct devmem_tx_stats {
    uint64_t sends;          /* sends that queued bytes (= notification ids used) */
    uint64_t bytes_sent;
    uint64_t partial_sends;  /* sends that queued fewer bytes than asked */
    uint64_t notifications;  /* error-queue notifications read */
    uint64_t sends_completed;
    uint64_t copied;         /* notifications with SO_EE_CODE_ZEROCOPY_COPIED */
};

struct devmem_tx_slot {
    uint64_t cookie;
    size_t bytes;
    int done;
};

struct devmem_tx_tracker {
    struct devmem_tx_slot *ring;
    size_t cap;         /* power of two */
    size_t count;       /* in flight */
    uint32_t first_id;  /* id of the oldest in-flight send */
    struct devmem_tx_stats stats;
};

int devmem_tx_tracker_init(struct devmem_tx_tracker *t, struct devmem_err *err);
void devmem_tx_tracker_fini(struct devmem_tx_tracker *t);
/* Record one send that queued `bytes` (> 0) of `asked`; it takes the next id. */
int devmem_tx_track(struct devmem_tx_tracker *t, size_t bytes, size_t asked, uint64_t cookie,
                    struct devmem_err *err);
/* Apply a notification: mark its ids done, then call release(ctx, cookie, bytes) for every
 * done send at the head, oldest first. -EPROTO when it names ids that are not in flight. */
int devmem_tx_complete(struct devmem_tx_tracker *t, const struct devmem_tx_completion *c,
                       devmem_tx_release_fn release, void *ctx, struct devmem_err *err);

static inline size_t devmem_tx_inflight(const struct devmem_tx_tracker *t)
{
    return t->count;
}

#endif /* DEVMEM_TX_H */
