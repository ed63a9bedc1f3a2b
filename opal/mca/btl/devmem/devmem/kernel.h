/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel operations the component needs, behind one table with two instances:
 *   real      the syscalls, and bind-rx/bind-tx over generic netlink (netlink.h);
 *   emulated  the emulated kernel ABI over plain TCP sockets: a test double in a library of
 *             its own (emul/, devmem_emul.so), loaded only by a process that asks for it.
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
struct devmem_emul;

/* How the emulated kernel lays data out (emul/emul.h). */
struct devmem_emul_config {
    uint64_t seed;         /* pseudo-random layout; the same seed gives the same layout */
    unsigned linear_pct;   /* % of devmem skbs whose first bytes stay linear (0..100) */
    unsigned readable_pct; /* % of receives on a steered flow that are plain data (0..100) */
    size_t max_frag;       /* largest dmabuf piece, at most one page (0: one page) */
};

/* seed 1, linear_pct 10, readable_pct 2, max_frag one page. */
static inline void devmem_emul_config_default(struct devmem_emul_config *cfg)
{
    *cfg = (struct devmem_emul_config){.seed = 1, .linear_pct = 10, .readable_pct = 2};
}

/* What the emulated kernel counted. */
struct devmem_emul_stats {
    uint64_t recv_efault;     /* devmem data read without MSG_SOCK_DEVMEM */
    uint64_t recv_toosmall;   /* -ETOOSMALL */
    uint64_t recv_pool_full;  /* -ENOBUFS */
    uint64_t recv_pool_limited; /* receives that took fewer bytes than asked: no free page left */
    uint64_t frags_landed;    /* dmabuf frags handed out (tokens) */
    uint64_t tokens_freed;
    uint64_t tokens_unknown;  /* DONTNEED entries that named no outstanding token */
    uint64_t tx_sends;
    uint64_t linger_bytes;    /* bytes read as devmem of a binding unbound after they queued */
};

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
    const struct devmem_emulated *emulated; /* emulated only: its library's entry */
    struct devmem_emul *emul; /* emulated only */
    pthread_mutex_t emul_lock; /* emulated: held by every call into emul (kernel.c) */
    void *real;               /* real only: netlink sockets per binding */
};

extern const struct devmem_kernel_ops devmem_kernel_real_ops;

/* What the emulated kernel's library exports, as the symbol "devmem_emulated". */
#define DEVMEM_EMULATED_ABI 1 /* changes with this struct, the ops or the config and stats */
#define DEVMEM_EMULATED_LIB "devmem_emul.so"
struct devmem_emulated {
    unsigned int abi;
    const struct devmem_kernel_ops *ops;
    int (*open)(struct devmem_kernel *k, const struct devmem_emul_config *cfg,
                struct devmem_err *err);
    void (*close)(struct devmem_kernel *k);
    void (*stats)(struct devmem_kernel *k, struct devmem_emul_stats *s);
    /* for btl_devmem_testing: bytes queued on flows into RX binding id (what an unbind now
     * leaves to be read as devmem of it), and every TX binding undone (how many) */
    size_t (*queued)(struct devmem_kernel *k, uint32_t id);
    size_t (*unbind_tx_all)(struct devmem_kernel *k);
};

/* A program linked with the emulated kernel hands it over here; else devmem_kernel_open
 * loads the library (kernel.c, emulated_find). */
void devmem_kernel_use_emulated(const struct devmem_emulated *e);
/* The emulated kernel's counters (zero for real). */
void devmem_kernel_emul_stats(struct devmem_kernel *k, struct devmem_emul_stats *s);

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
