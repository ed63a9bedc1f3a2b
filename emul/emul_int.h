/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the emulated kernel's files share (emul.c: bindings, pools, sockets, tokens,
 * DONTNEED; emul_rx.c: the devmem recvmsg; emul_tx.c: the devmem sendmsg and its zerocopy
 * notifications), and the unit tests that look at its state. Not for the component: emul.h
 * is the interface.
 */
#ifndef DEVMEM_EMUL_INT_H
#define DEVMEM_EMUL_INT_H

#include "emul.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define EMUL_MAX_PIECES 1024         /* UIO_MAXIOV: pieces in one receive */
#define EMUL_TX_BOUNCE_MAX (4u << 20) /* device-memory sends go through at most this much */
#define EMUL_TOKEN_MAX 0x7fffffffu
#define EMUL_QUEUES 256              /* the emulated NIC's RX queues: 0 .. EMUL_QUEUES - 1 */
#define EMUL_BIND_QUEUES 64          /* queues one binding or RSS context may name */

/* What a page of an RX pool holds once its token is back. */
#define EMUL_POISON 0xd5

struct emul_binding {
    uint32_t id;
    int is_rx;
    int alive;            /* not unbound */
    struct devmem_region *region;
    size_t npages;
    uint32_t *free_pages; /* RX: indices of free pages */
    size_t nfree;
    size_t refs;          /* RX: pages held by tokens */
    size_t lingering;     /* RX, unbound: sockets still holding bytes queued before the unbind */
    unsigned int ifindex;  /* RX: the interface whose queues it covers */
    unsigned int queues[EMUL_BIND_QUEUES]; /* RX: the queues bind-rx named (none: queue 0) */
    size_t nqueues;
};

/* An RSS context (ethtool -X dev context new): an indirection table over some queues. */
struct emul_ctx {
    uint32_t id;
    unsigned int ifindex;
    unsigned int queues[EMUL_BIND_QUEUES];
    size_t nqueues;
    uint64_t flows; /* flows steered into it so far: the next takes queue flows % nqueues */
};

struct emul_token {
    struct emul_binding *b; /* NULL: free */
    uint32_t page;
};

struct emul_notif {
    uint32_t lo, hi;
};

struct emul_sock {
    int used;
    dev_t dev;
    ino_t ino;
    int probed;             /* tcp/family/port below are known */
    int tcp;
    int family;
    uint16_t port;
    struct emul_token *tok; /* indexed by token; tok[0] unused */
    size_t tok_cap;
    size_t ntok;
    size_t tok_hint;        /* no free token below this one */
    uint32_t zckey;         /* next notification id */
    int has_queue;          /* a steered flow: the RX queue it arrives on is known */
    unsigned int queue;
    unsigned int ifindex;   /* ... of this interface (into an RSS context) */
    struct emul_notif *errq;
    size_t errq_n, errq_cap;
    struct emul_binding *linger; /* the unbound binding its queued bytes were built from */
    size_t linger_left;          /* ... and how many of them are still to be read */
};

struct emul_piece {
    int linear;
    uint32_t len;
    size_t page;
    uint32_t inpage;
};

struct emul_rule {
    uint16_t port;
    uint32_t id;  /* the RX binding it steers to, or 0 when into an RSS context */
    uint32_t ctx; /* the RSS context it steers into (emul_queues.c), or 0 */
};

struct devmem_emul {
    struct devmem_emul_config cfg;
    uint64_t rng;
    size_t page;
    struct emul_binding **bind;
    size_t nbind, bind_cap;
    uint32_t next_id;
    struct emul_rule *rules;
    size_t nrules, rules_cap;
    struct emul_ctx *ctxs;
    size_t nctx, ctx_cap;
    uint32_t next_ctx;
    uint64_t queue_bytes[EMUL_QUEUES]; /* bytes received by flows on each queue */
    struct emul_sock *socks; /* indexed by fd */
    size_t socks_cap;
    struct emul_piece *pieces; /* scratch for one receive */
    struct iovec *iov;         /* scratch */
    unsigned char *bounce;
    size_t bounce_len;
    struct devmem_emul_stats stats;
};

/* pseudo-random in [0, n): the layout's dice, deterministic for a seed */
size_t devmem_emul_rnd_below(struct devmem_emul *e, size_t n);
/* grow *p (*cap elements of elem bytes, new ones zeroed) to hold need; 0 or -ENOMEM */
int devmem_emul_grow(void **p, size_t *cap, size_t need, size_t elem);
/* 1 for a TCP socket, 0 for another, -errno */
int devmem_emul_sock_is_tcp(int fd);
/* the socket's family and local port (host order); 0 or -errno */
int devmem_emul_sock_family_port(int fd, int *family, uint16_t *port);
struct emul_binding *devmem_emul_binding_find(struct devmem_emul *e, uint32_t id);
/* The RX binding a steered socket's flow lands in through rule r, choosing the flow's queue
 * on first sight (emul_queues.c); NULL when its queue is bound to no live binding. */
struct emul_binding *devmem_emul_rule_target(struct devmem_emul *e, const struct emul_rule *r,
                                             struct emul_sock *s);
/* Forget RSS contexts (close). */
void devmem_emul_ctx_fini(struct devmem_emul *e);
/* a pool page taken (scattered placement) or given back (a dead pool goes once whole) */
uint32_t devmem_emul_pool_take(struct devmem_emul *e, struct emul_binding *b);
void devmem_emul_pool_put(struct devmem_emul *e, struct emul_binding *b, uint32_t page);
/* s has read the last byte it held from an unbound binding (emul.c, unbind) */
void devmem_emul_linger_end(struct devmem_emul *e, struct emul_sock *s);
/* fd's state (create: make it); NULL for a closed fd, or when not made */
struct emul_sock *devmem_emul_sock_get(struct devmem_emul *e, int fd, int create);
/* the lowest free token >= 1 for page of b on s; 0 when out of tokens */
uint32_t devmem_emul_token_alloc(struct emul_sock *s, struct emul_binding *b, uint32_t page);

#endif /* DEVMEM_EMUL_INT_H */
