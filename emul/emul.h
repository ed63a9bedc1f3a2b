/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devmem kernel ABI: the same calls the kernel offers (bind-rx, bind-tx, a
 * devmem recvmsg, SO_DEVMEM_DONTNEED, a devmem sendmsg, the zerocopy error queue), carried
 * over plain TCP sockets, so that the whole devmem path runs where no capable NIC exists
 * (CI, loopback, network namespaces).
 *
 * It is receiver-local: each process has its own instance and pools; nothing is shared
 * between processes, and the peer sends ordinary TCP bytes. The functions take and return
 * exactly what the syscalls do (struct msghdr in, bytes or -errno out; cmsgs laid out as
 * the kernel lays them out), so the parsers in rx.c and tx.c run unchanged on its output.
 * Which kernel function each behaviour mirrors, and what cannot be mirrored, is listed in
 * emul.c. Not thread-safe: one caller at a time.
 */
#ifndef DEVMEM_EMUL_H
#define DEVMEM_EMUL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "dmabuf.h"
#include "err.h"
#include "kernel.h"
#include "uapi.h"

struct devmem_emul;

/* The kernel table's entry (devmem/kernel.h): what devmem_emul.so exports, and what a program
 * linked with this library hands to devmem_kernel_use_emulated. */
extern const struct devmem_emulated devmem_emulated;

int devmem_emul_open(struct devmem_emul **e, const struct devmem_emul_config *cfg,
                     struct devmem_err *err);
/* Forget every socket and binding (the regions stay the caller's). */
void devmem_emul_close(struct devmem_emul *e);

/* NETDEV_CMD_BIND_RX / BIND_TX: region is the dmabuf. It must outlive the binding and every
 * token that points into it. Ids are >= 1 and shared by RX and TX, as in the kernel. */
int devmem_emul_bind_rx(struct devmem_emul *e, struct devmem_region *region, uint32_t *id,
                        struct devmem_err *err);
int devmem_emul_bind_tx(struct devmem_emul *e, struct devmem_region *region, uint32_t *id,
                        struct devmem_err *err);
/* Closing the netlink socket: the binding stops taking data (steered flows turn readable
 * once the bytes they had queued are read, as devmem of it); an RX pool lives on until its
 * last outstanding token comes back. */
int devmem_emul_unbind(struct devmem_emul *e, uint32_t id, struct devmem_err *err);
/* Every live TX binding undone, as when the netlink socket that made them closes; how many. */
size_t devmem_emul_unbind_tx_all(struct devmem_emul *e);
/* 1 while binding id is alive (not unbound), else 0. */
int devmem_emul_bound(struct devmem_emul *e, uint32_t id);
/* Bytes queued now on the sockets whose flow lands in RX binding id: what an unbind now would
 * leave to be read as devmem of it (a test's moment to unbind, as on a busy NIC). */
size_t devmem_emul_queued(struct devmem_emul *e, uint32_t id);

/* bind-rx over a list of RX queues of interface ifindex (n of them, 1..64, each below 256
 * and bound to no live binding, else -EBUSY); n 0 is devmem_emul_bind_rx. The queues decide
 * where flows steered into an RSS context land (emul_queues.c). */
int devmem_emul_bind_rx_queues(struct devmem_emul *e, struct devmem_region *region,
                               unsigned int ifindex, const unsigned int *queues, size_t n,
                               uint32_t *id, struct devmem_err *err);

/* An RSS context over n queues of interface ifindex (ethtool -X dev context new ...): *ctx
 * >= 1. Deleting one that a steering rule points at is -EBUSY. */
int devmem_emul_rss_ctx_create(struct devmem_emul *e, unsigned int ifindex,
                               const unsigned int *queues, size_t n, uint32_t *ctx,
                               struct devmem_err *err);
int devmem_emul_rss_ctx_delete(struct devmem_emul *e, uint32_t ctx, struct devmem_err *err);

/* A steering rule into RSS context ctx (ethtool -N ... context CTX): each new flow on port
 * takes the context's next queue (by arrival, not by hash) and lands in that queue's
 * binding. devmem_emul_steer(e, port, 0) removes it. */
int devmem_emul_steer_ctx(struct devmem_emul *e, uint16_t port, uint32_t ctx,
                          struct devmem_err *err);

/* The RX queue fd's flow arrives on, once a receive has seen it steered: 0, or -ENOENT. */
int devmem_emul_sock_queue(struct devmem_emul *e, int fd, unsigned int *queue);

/* A flow-steering rule: TCP flows whose local port is `port` land in RX binding id
 * (what `ethtool -N dev flow-type tcp4 dst-port PORT action QUEUE` does to a bound queue).
 * id 0 removes the rule. */
int devmem_emul_steer(struct devmem_emul *e, uint16_t port, uint32_t id,
                      struct devmem_err *err);

/* recvmsg(fd, msg, flags), flags as the kernel takes them (MSG_SOCK_DEVMEM, MSG_DONTWAIT,
 * MSG_ERRQUEUE, ...). Returns bytes or -errno. Besides the kernel's errors it returns
 * -ENOBUFS when the pool has no free page: "would block, pool full" (no byte consumed;
 * return tokens and retry). */
ssize_t devmem_emul_recvmsg(struct devmem_emul *e, int fd, struct msghdr *msg, int flags);

/* setsockopt(fd, SOL_SOCKET, SO_DEVMEM_DONTNEED, optval, optlen): frags freed or -errno. */
int devmem_emul_dontneed(struct devmem_emul *e, int fd, const void *optval, socklen_t optlen);

/* sendmsg(fd, msg, flags) with an SCM_DEVMEM_DMABUF cmsg: bytes queued or -errno. A msg
 * without that cmsg is passed to the real kernel unchanged. */
ssize_t devmem_emul_sendmsg(struct devmem_emul *e, int fd, const struct msghdr *msg, int flags);

/* The socket is closing: its outstanding tokens go back to their pools (as the kernel does on
 * close) and its error queue is dropped. Call before close(fd). */
void devmem_emul_sock_close(struct devmem_emul *e, int fd);

void devmem_emul_get_stats(const struct devmem_emul *e, struct devmem_emul_stats *s);

#endif /* DEVMEM_EMUL_H */
