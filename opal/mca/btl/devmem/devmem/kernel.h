/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel operations the component needs, behind one table with two instances:
 *   real      the syscalls, and bind-rx/bind-tx over generic netlink (netlink.h);
 *   emulated  the emulated kernel ABI (emul.h) over plain TCP sockets.
 * The caller chooses one explicitly; neither ever falls back to the other.
 *
 * Every operation returns 0 / a count, or -errno with err filled (err may be NULL).
 */
#ifndef DEVMEM_KERNEL_H
#define DEVMEM_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmabuf.h"
#include "emul.h"
#include "err.h"
#include <pthread.h>

#include "rx.h"
#include "tx.h"
#include "uapi.h"

enum devmem_kernel_kind {
    DEVMEM_KERNEL_REAL = 1,
    DEVMEM_KERNEL_EMULATED = 2,
};

/* What to bind. real: ifindex, queues (RX only) and region->dmabuf_fd;
 * emulated: region (any provider; ifindex and queues are not looked at). */
struct devmem_bind_req {
    unsigned int ifindex;
    const unsigned int *queues;
    size_t nqueues;
    struct devmem_region *region;
};

struct devmem_kernel;

struct devmem_kernel_ops {
    const char *name; /* "real" or "emulated" */
    int (*bind_rx)(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                   struct devmem_err *err);
    int (*bind_tx)(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                   struct devmem_err *err);
    /* Undo a binding (real: closes the netlink socket that holds it). RX memory must stay
     * until every token pointing into it has been returned. */
    int (*unbind)(struct devmem_kernel *k, uint32_t id, struct devmem_err *err);
    /* Whether RX binding id still holds a queue of ifindex: 1, 0 when it is gone (its netlink
     * socket closed, the device went away), or -errno when that cannot be asked. The kernel
     * tells a data socket nothing when a binding goes: its new data just arrives plain. */
    int (*bound)(struct devmem_kernel *k, unsigned int ifindex, uint32_t id,
                 struct devmem_err *err);
    /* Steer TCP flows whose local port is `port` to RX binding id (0 removes). Emulated only:
     * on a real NIC this is an ethtool ntuple rule (nic.c or the helper): -EOPNOTSUPP. */
    int (*steer)(struct devmem_kernel *k, uint16_t port, uint32_t id, struct devmem_err *err);
    /* Steer them into a new RSS context over n queues of RX bindings instead, each flow
     * landing on one queue; *ctx names it. steer(port, 0) removes the rule, rss_del the
     * context after. Emulated only, like steer (real: nic.c or the helper): -EOPNOTSUPP. */
    int (*steer_rss)(struct devmem_kernel *k, uint16_t port, unsigned int ifindex,
                     const unsigned int *queues, size_t n, uint32_t *ctx,
                     struct devmem_err *err);
    int (*rss_del)(struct devmem_kernel *k, uint32_t ctx, struct devmem_err *err);
    /* The RX queue socket fd's flow arrives on: 0, -ENOENT while not yet known (emulated:
     * before its first receive), -EOPNOTSUPP (real: not asked yet; see the NIC's counters). */
    int (*sock_queue)(struct devmem_kernel *k, int fd, unsigned int *queue,
                      struct devmem_err *err);
    /* One devmem receive into b (see rx.h): bytes consumed (0 = end of stream) or -errno;
     * -ENOBUFS (emulated) when the pool is full: return tokens, then retry. */
    ssize_t (*recv)(struct devmem_kernel *k, int fd, struct devmem_rx_batch *b, int flags,
                    struct devmem_err *err);
    /* SO_DEVMEM_DONTNEED: frags freed, or -errno. */
    int (*dontneed)(struct devmem_kernel *k, int fd, const struct devmem_dmabuf_token *ranges,
                    size_t nranges, struct devmem_err *err);
    /* Devmem send from TX binding id (see tx.h): bytes queued, or -errno. */
    ssize_t (*send)(struct devmem_kernel *k, int fd, uint32_t id, const struct devmem_tx_iov *iov,
                    size_t n, int flags, struct devmem_err *err);
    /* One zerocopy notification from the error queue; -EAGAIN when none. */
    int (*read_completion)(struct devmem_kernel *k, int fd, struct devmem_tx_completion *c,
                           struct devmem_err *err);
    /* The socket is about to be closed: drop per-socket kernel state (emulated: its tokens go
     * back to the pools). Return the ledger's tokens first; the caller closes fd after. */
    void (*sock_close)(struct devmem_kernel *k, int fd);
};

struct devmem_kernel {
    const struct devmem_kernel_ops *ops;
    enum devmem_kernel_kind kind;
    struct devmem_emul *emul; /* emulated only */
    pthread_mutex_t emul_lock; /* emulated: held by every call into emul (kernel.c) */
    void *real;               /* real only: netlink sockets per binding */
};

extern const struct devmem_kernel_ops devmem_kernel_real_ops;
extern const struct devmem_kernel_ops devmem_kernel_emulated_ops;

/* Open an instance of the chosen kind. cfg configures the emulation (NULL: defaults) and is
 * ignored by real. */
int devmem_kernel_open(struct devmem_kernel **k, enum devmem_kernel_kind kind,
                       const struct devmem_emul_config *cfg, struct devmem_err *err);
/* Close: real closes its netlink sockets (the kernel unbinds), emulated forgets everything. */
void devmem_kernel_close(struct devmem_kernel *k);

/* "real" / "emulated" <-> kind. Parse returns -EINVAL for anything else. */
const char *devmem_kernel_kind_name(enum devmem_kernel_kind kind);
int devmem_kernel_kind_parse(const char *s, enum devmem_kernel_kind *kind,
                             struct devmem_err *err);

/* A ledger for socket fd that returns tokens through k->ops->dontneed. */
int devmem_kernel_ledger_init(struct devmem_kernel *k, int fd, struct devmem_ledger *l,
                              struct devmem_err *err);

#endif /* DEVMEM_KERNEL_H */
