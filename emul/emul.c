/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devmem kernel ABI (see emul.h): bindings, pools, sockets and tokens, steering,
 * DONTNEED. The receive side is emul_rx.c, the send side emul_tx.c, the NIC's queues and
 * RSS contexts emul_queues.c; emul_int.h is theirs.
 *
 * What it mirrors, point by point (Linux 6.18 sources):
 *
 *  1. bind-rx / bind-tx (net/core/netdev-genl.c netdev_nl_bind_rx_doit, _tx_doit;
 *     net/core/devmem.c net_devmem_bind_dmabuf): a binding gets an id >= 1 from one id space
 *     shared by RX and TX (xa_alloc_cyclic on net_devmem_dmabuf_bindings); an RX dmabuf is
 *     carved into PAGE_SIZE net_iovs. TX ids used for RX, or RX ids for TX, are refused.
 *  2. unbind on netlink-socket close (netdev_nl_sock_priv_destroy ->
 *     net_devmem_unbind_dmabuf; net_devmem_dmabuf_binding_put): the queues stop landing data
 *     in the dmabuf (the queue restarts with a host page pool, so flows become readable), but
 *     the pool is freed only when the last outstanding net_iov comes back. Segments a flow
 *     had queued before are built of the binding's net_iovs: they are still read as
 *     SCM_DEVMEM_DMABUF with the old id (tcp_recvmsg_dmabuf, net_devmem_iov_binding_id),
 *     and one call never mixes them with the readable bytes after them.
 *  3. where data lands (net/core/devmem.c net_devmem_alloc_dmabuf, gen_pool_alloc_owner):
 *     the allocator, not the user, picks the net_iov; pieces are at scattered page offsets,
 *     at most one page long, and each holds a reference until its token returns.
 *  4. the devmem recvmsg (net/ipv4/tcp.c tcp_recvmsg_locked, tcp_recvmsg_dmabuf):
 *     - unreadable data read without MSG_SOCK_DEVMEM fails with -EFAULT (nothing copied);
 *     - linear bytes of a devmem skb are copied into the iovec and announced by one
 *       SCM_DEVMEM_LINEAR cmsg (only frag_size set); every dmabuf frag gets one
 *       SCM_DEVMEM_DMABUF cmsg {frag_offset, frag_size, frag_token, dmabuf_id, flags 0};
 *     - the return value counts linear and dmabuf bytes and is bounded by the iov length;
 *     - readable skbs (no frags in device memory) come back as plain data with no cmsg, and
 *       one call never mixes readable and unreadable data;
 *     - tokens come from the per-socket sk_user_frags xarray (tcp_xa_pool_refill: lowest
 *       free index, 1 .. 2^31-1) and are valid only on that socket.
 *  5. control buffer (net/core/scm.c put_cmsg_notrunc, 6.14+): a cmsg that does not fit is
 *     never truncated: -ETOOSMALL when nothing was delivered yet, else a short read.
 *     msg_controllen comes back as the bytes used, each cmsg taking CMSG_SPACE.
 *  6. SO_DEVMEM_DONTNEED (net/core/sock.c sock_devmem_dontneed): -EBADF on non-TCP sockets;
 *     -EINVAL unless optlen is a multiple of 8 and at most 128 entries; at most 1024 frags
 *     are looked at per call (unknown tokens count towards the cap); unknown or already
 *     returned tokens are skipped; the return value is the number of frags freed.
 *  7. socket close (net/ipv4/tcp.c tcp_release_user_frags from tcp_v4_destroy_sock): every
 *     outstanding token's reference is dropped.
 *  8. the devmem sendmsg (net/core/sock.c __sock_cmsg_send; net/ipv4/tcp.c
 *     tcp_sendmsg_locked; net/core/devmem.c net_devmem_get_binding, net_devmem_get_niov_at):
 *     SCM_DEVMEM_DMABUF only on TCP and only with cmsg_len CMSG_LEN(4), else -EINVAL; the
 *     id needs MSG_ZEROCOPY and SO_ZEROCOPY and must name a live TX binding, else -EINVAL;
 *     iov_base is a byte offset into the dmabuf; an offset past its end is -EFAULT when
 *     nothing was queued yet, else the send stops short there.
 *  9. zerocopy notifications (net/core/skbuff.c msg_zerocopy_realloc,
 *     __msg_zerocopy_callback; net/ipv4/ip_sockglue.c ip_recv_error, net/ipv6/datagram.c
 *     ipv6_recv_error): each send that queues bytes takes the next id (0, 1, ...); a failed
 *     send takes none; notifications carry sock_extended_err {ee_origin 5, ee_errno 0,
 *     ee_info lo, ee_data hi} plus a zeroed offender address in an IP_RECVERR (IPv4) or
 *     IPV6_RECVERR (IPv6) cmsg; a notification that follows the queued tail is merged into
 *     it; recvmsg(MSG_ERRQUEUE) returns 0 bytes, sets MSG_ERRQUEUE, truncates (MSG_CTRUNC)
 *     rather than failing when the control buffer is short, and is -EAGAIN when empty.
 *
 * What it cannot mirror:
 *  - DMA: the bytes pass through the socket buffer and the CPU; nothing is zero-copy.
 *  - The NIC: header split and hds-thresh, the RSS hash (emul_queues.c spreads flows over a
 *    context's queues by arrival), the main RSS table (a flow is steered by its local port
 *    only, like a 3-tuple ntuple rule), MTU/GRO-shaped frags (ours are random),
 *    several frags sharing one net_iov (each piece here has its own page).
 *  - Pool exhaustion: a real NIC drops packets and TCP retransmits; here the receive returns
 *    -ENOBUFS without consuming bytes, so TCP flow control holds the sender back.
 *  - TX completion timing: a send completes when its bytes are in the socket buffer, not
 *    when the peer ACKs them; SO_BINDTODEVICE/route checks (-ENODEV) are not made.
 *  - Privilege (CAP_NET_ADMIN), dmabuf attach and DMA-mapping failures, netlink extack text,
 *    and bindings shared across processes (ids here are per process).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "emul_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <linux/sockios.h>

#include <linux/errqueue.h>

/* ---- small helpers ----------------------------------------------------------------------- */

static uint64_t rnd(struct devmem_emul *e)
{
    /* xorshift64*: deterministic for a seed, good enough for layouts */
    e->rng ^= e->rng >> 12;
    e->rng ^= e->rng << 25;
    e->rng ^= e->rng >> 27;
    return e->rng * 2685821657736338717ull;
}

size_t devmem_emul_rnd_below(struct devmem_emul *e, size_t n)
{
    return n > 1 ? (size_t) (rnd(e) % n) : 0;
}

int devmem_emul_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 16;
    void *np;

    if (need <= *cap) {
        return 0;
    }
    while (ncap < need) {
        ncap *= 2;
    }
    np = realloc(*p, ncap * elem);
    if (NULL == np) {
        return -ENOMEM;
    }
    memset((char *) np + *cap * elem, 0, (ncap - *cap) * elem);
    *p = np;
    *cap = ncap;
    return 0;
}

int devmem_emul_sock_is_tcp(int fd)
{
    int type = 0, proto = 0;
    socklen_t l1 = sizeof(type), l2 = sizeof(proto);

    if (0 != getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1)) {
        return -errno;
    }
    if (0 != getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l2)) {
        return -errno;
    }
    return (SOCK_STREAM == type && IPPROTO_TCP == proto) ? 1 : 0;
}

int devmem_emul_sock_family_port(int fd, int *family, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (0 != getsockname(fd, (struct sockaddr *) &ss, &len)) {
        return -errno;
    }
    *family = ss.ss_family;
    *port = 0;
    if (AF_INET == ss.ss_family) {
        *port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
    } else if (AF_INET6 == ss.ss_family) {
        *port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
    }
    return 0;
}

struct emul_binding *devmem_emul_binding_find(struct devmem_emul *e, uint32_t id)
{
    size_t i;

    for (i = 0; i < e->nbind; i++) {
        if (e->bind[i]->id == id) {
            return e->bind[i];
        }
    }
    return NULL;
}

static void binding_free(struct devmem_emul *e, struct emul_binding *b)
{
    size_t i;

    for (i = 0; i < e->nbind; i++) {
        if (e->bind[i] == b) {
            e->bind[i] = e->bind[--e->nbind];
            break;
        }
    }
    free(b->free_pages);
    free(b);
}

/* An unbound binding goes once no token holds a page of it and no socket has bytes of it
 * queued (the old page pool's reference, mp_dmabuf_devmem_destroy). */
static void binding_put_dead(struct devmem_emul *e, struct emul_binding *b)
{
    if (!b->alive && 0 == b->refs && 0 == b->lingering) {
        binding_free(e, b);
    }
}

void devmem_emul_linger_end(struct devmem_emul *e, struct emul_sock *s)
{
    struct emul_binding *b = s->linger;

    if (NULL != b) {
        s->linger = NULL;
        s->linger_left = 0;
        b->lingering--;
        binding_put_dead(e, b);
    }
}

/* A page goes back to its pool (napi_pp_put_page). A dead pool goes once it is whole. */
void devmem_emul_pool_put(struct devmem_emul *e, struct emul_binding *b, uint32_t page)
{
    /* a page given back reads as garbage at once, as a NIC would soon overwrite it: a
     * reader that returned its token too early finds wrong bytes, not the right ones */
    if (NULL != b->region->map) {
        memset((char *) b->region->map + (size_t) page * e->page, EMUL_POISON, e->page);
    }
    b->free_pages[b->nfree++] = page;
    b->refs--;
    binding_put_dead(e, b);
}

/* Scattered placement: any free page, chosen pseudo-randomly. */
uint32_t devmem_emul_pool_take(struct devmem_emul *e, struct emul_binding *b)
{
    size_t i = devmem_emul_rnd_below(e, b->nfree);
    uint32_t page = b->free_pages[i];

    b->free_pages[i] = b->free_pages[--b->nfree];
    b->refs++;
    return page;
}

/* ---- sockets ----------------------------------------------------------------------------- */

static void sock_release(struct devmem_emul *e, struct emul_sock *s)
{
    size_t t;

    devmem_emul_linger_end(e, s);
    for (t = 1; t < s->tok_cap; t++) {
        if (NULL != s->tok[t].b) {
            devmem_emul_pool_put(e, s->tok[t].b, s->tok[t].page);
        }
    }
    free(s->tok);
    free(s->errq);
    memset(s, 0, sizeof(*s));
}

/* The state of socket fd; a new socket on a reused fd number gets fresh state. */
struct emul_sock *devmem_emul_sock_get(struct devmem_emul *e, int fd, int create)
{
    struct emul_sock *s;
    struct stat st;

    if (fd < 0 || 0 != fstat(fd, &st)) {
        return NULL;
    }
    if ((size_t) fd >= e->socks_cap) {
        if (!create || 0 != devmem_emul_grow((void **) &e->socks, &e->socks_cap, (size_t) fd + 1,
                                 sizeof(*e->socks))) {
            return NULL;
        }
    }
    s = &e->socks[fd];
    if (s->used && (s->dev != st.st_dev || s->ino != st.st_ino)) {
        sock_release(e, s); /* the old socket was closed behind our back: as on close */
    }
    if (!s->used) {
        if (!create) {
            return NULL;
        }
        s->used = 1;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->tok_hint = 1;
    }
    return s;
}

/* Lowest free token >= 1, as xa_alloc on sk_user_frags gives. 0 when out of tokens. */
uint32_t devmem_emul_token_alloc(struct emul_sock *s, struct emul_binding *b, uint32_t page)
{
    size_t t = s->tok_hint;

    while (t < s->tok_cap && NULL != s->tok[t].b) {
        t++;
    }
    if (t > EMUL_TOKEN_MAX) {
        return 0;
    }
    if (t >= s->tok_cap && 0 != devmem_emul_grow((void **) &s->tok, &s->tok_cap, t + 1, sizeof(*s->tok))) {
        return 0;
    }
    s->tok[t].b = b;
    s->tok[t].page = page;
    s->ntok++;
    s->tok_hint = t + 1;
    return (uint32_t) t;
}

void devmem_emul_sock_close(struct devmem_emul *e, int fd)
{
    struct emul_sock *s;

    if (NULL == e || fd < 0 || (size_t) fd >= e->socks_cap) {
        return;
    }
    s = &e->socks[fd];
    if (s->used) {
        sock_release(e, s);
    }
}

/* ---- setup ------------------------------------------------------------------------------- */

int devmem_emul_open(struct devmem_emul **ep, const struct devmem_emul_config *cfg,
                     struct devmem_err *err)
{
    struct devmem_emul *e;

    *ep = NULL;
    e = calloc(1, sizeof(*e));
    if (NULL == e) {
        return devmem_err_set(err, ENOMEM, "emul: out of memory");
    }
    if (NULL != cfg) {
        e->cfg = *cfg;
    } else {
        devmem_emul_config_default(&e->cfg);
    }
    e->page = devmem_page_size();
    if (0 == e->cfg.max_frag || e->cfg.max_frag > e->page) {
        e->cfg.max_frag = e->page;
    }
    if (e->cfg.linear_pct > 100 || e->cfg.readable_pct > 100) {
        free(e);
        return devmem_err_set(err, EINVAL, "emul: percentages must be 0..100");
    }
    e->rng = e->cfg.seed ? e->cfg.seed : 0x9e3779b97f4a7c15ull;
    e->next_id = 1;
    e->pieces = calloc(EMUL_MAX_PIECES, sizeof(*e->pieces));
    e->iov = calloc(2 * EMUL_MAX_PIECES + 64, sizeof(*e->iov));
    if (NULL == e->pieces || NULL == e->iov) {
        devmem_emul_close(e);
        return devmem_err_set(err, ENOMEM, "emul: out of memory");
    }
    *ep = e;
    return 0;
}

void devmem_emul_close(struct devmem_emul *e)
{
    size_t i;

    if (NULL == e) {
        return;
    }
    for (i = 0; i < e->socks_cap; i++) {
        if (e->socks[i].used) {
            sock_release(e, &e->socks[i]);
        }
    }
    for (i = 0; i < e->nbind; i++) {
        free(e->bind[i]->free_pages);
        free(e->bind[i]);
    }
    free(e->bind);
    devmem_emul_ctx_fini(e);
    free(e->rules);
    free(e->socks);
    free(e->pieces);
    free(e->iov);
    free(e->bounce);
    free(e);
}

static int bind_common(struct devmem_emul *e, struct devmem_region *region, int is_rx,
                       uint32_t *id, struct devmem_err *err)
{
    struct emul_binding *b = NULL;
    size_t i;
    int rc = 0;

    *id = 0;
    if (NULL == region || NULL == region->provider || 0 == region->size) {
        rc = devmem_err_set(err, EINVAL, "emul: bind-%s without a region", is_rx ? "rx" : "tx");
        goto cleanup;
    }
    if (0 != region->size % e->page) {
        rc = devmem_err_set(err, EINVAL, "emul: dmabuf size %zu is not page-aligned",
                            region->size);
        goto cleanup;
    }
    b = calloc(1, sizeof(*b));
    if (NULL == b || 0 != devmem_emul_grow((void **) &e->bind, &e->bind_cap, e->nbind + 1,
                               sizeof(*e->bind))) {
        rc = devmem_err_set(err, ENOMEM, "emul: out of memory");
        goto cleanup;
    }
    b->is_rx = is_rx;
    b->alive = 1;
    b->region = region;
    b->npages = region->size / e->page;
    if (is_rx) {
        if (b->npages > UINT32_MAX) {
            rc = devmem_err_set(err, EINVAL, "emul: pool of %zu pages is too large", b->npages);
            goto cleanup;
        }
        b->free_pages = malloc(b->npages * sizeof(*b->free_pages));
        if (NULL == b->free_pages) {
            rc = devmem_err_set(err, ENOMEM, "emul: out of memory for %zu pages", b->npages);
            goto cleanup;
        }
        for (i = 0; i < b->npages; i++) {
            b->free_pages[i] = (uint32_t) i;
        }
        b->nfree = b->npages;
    }
    /* Cyclic ids from 1, skipping any still in use (xa_alloc_cyclic). */
    do {
        b->id = e->next_id++;
        if (0 == e->next_id) {
            e->next_id = 1;
        }
    } while (0 == b->id || NULL != devmem_emul_binding_find(e, b->id));
    e->bind[e->nbind++] = b;
    *id = b->id;
    b = NULL;
cleanup:
    if (NULL != b) {
        free(b->free_pages);
        free(b);
    }
    return rc;
}

int devmem_emul_bind_rx(struct devmem_emul *e, struct devmem_region *region, uint32_t *id,
                        struct devmem_err *err)
{
    return bind_common(e, region, 1, id, err);
}

int devmem_emul_bind_tx(struct devmem_emul *e, struct devmem_region *region, uint32_t *id,
                        struct devmem_err *err)
{
    return bind_common(e, region, 0, id, err);
}

/* The bytes socket fd has queued if its flow lands in live binding b, else 0. Only sockets
 * read from already (their queue is known) count: the emulation meets a socket at its first
 * receive. */
static size_t queued_for(struct devmem_emul *e, size_t fd, struct emul_binding *b)
{
    struct emul_sock *s = &e->socks[fd];
    int queued = 0;

    if (!s->used || !s->has_queue || NULL != s->linger
        || s != devmem_emul_sock_get(e, (int) fd, 0)) {
        return 0;
    }
    for (size_t i = 0; i < e->nrules; i++) {
        if (e->rules[i].port == s->port && devmem_emul_rule_target(e, &e->rules[i], s) == b) {
            return 0 == ioctl((int) fd, SIOCINQ, &queued) && queued > 0 ? (size_t) queued : 0;
        }
    }
    return 0;
}

/* At the unbind, every socket whose flow lands in b keeps the bytes it has queued as devmem
 * of b, to be read with b's id; what arrives later is plain. */
static void keep_queued(struct devmem_emul *e, struct emul_binding *b)
{
    for (size_t fd = 0; fd < e->socks_cap; fd++) {
        size_t queued = queued_for(e, fd, b);

        if (queued > 0) {
            e->socks[fd].linger = b;
            e->socks[fd].linger_left = queued;
            b->lingering++;
        }
    }
}

size_t devmem_emul_queued(struct devmem_emul *e, uint32_t id)
{
    struct emul_binding *b = devmem_emul_binding_find(e, id);
    size_t sum = 0;

    for (size_t fd = 0; NULL != b && b->alive && b->is_rx && fd < e->socks_cap; fd++) {
        sum += queued_for(e, fd, b);
    }
    return sum;
}

int devmem_emul_unbind(struct devmem_emul *e, uint32_t id, struct devmem_err *err)
{
    struct emul_binding *b = devmem_emul_binding_find(e, id);
    size_t i;

    if (NULL == b || !b->alive) {
        return devmem_err_set(err, ENOENT, "emul: no binding %u", id);
    }
    if (b->is_rx) {
        keep_queued(e, b);
    }
    for (i = 0; i < e->nrules;) {
        if (e->rules[i].id == id) {
            e->rules[i] = e->rules[--e->nrules];
        } else {
            i++;
        }
    }
    b->alive = 0;
    binding_put_dead(e, b);
    return 0;
}

size_t devmem_emul_unbind_tx_all(struct devmem_emul *e)
{
    size_t n = 0;

    for (size_t i = 0; i < e->nbind;) {
        struct emul_binding *b = e->bind[i];

        if (b->alive && !b->is_rx && 0 == devmem_emul_unbind(e, b->id, NULL)) {
            n++;
            continue; /* freed: another binding took place i */
        }
        i++;
    }
    return n;
}

int devmem_emul_bound(struct devmem_emul *e, uint32_t id)
{
    struct emul_binding *b = devmem_emul_binding_find(e, id);

    return NULL != b && b->alive;
}

int devmem_emul_steer(struct devmem_emul *e, uint16_t port, uint32_t id,
                      struct devmem_err *err)
{
    struct emul_binding *b = NULL;
    size_t i;

    if (0 != id) {
        b = devmem_emul_binding_find(e, id);
        if (NULL == b || !b->alive || !b->is_rx) {
            return devmem_err_set(err, EINVAL, "emul: steer port %u to %u: no such RX binding",
                                  port, id);
        }
    }
    for (i = 0; i < e->nrules; i++) {
        if (e->rules[i].port == port) {
            break;
        }
    }
    if (0 == id) {
        if (i < e->nrules) {
            e->rules[i] = e->rules[--e->nrules];
        }
        return 0;
    }
    if (i == e->nrules) {
        if (0 != devmem_emul_grow((void **) &e->rules, &e->rules_cap, e->nrules + 1, sizeof(*e->rules))) {
            return devmem_err_set(err, ENOMEM, "emul: out of memory");
        }
        e->nrules++;
    }
    e->rules[i].port = port;
    e->rules[i].id = id;
    e->rules[i].ctx = 0;
    return 0;
}

/* ---- DONTNEED ---------------------------------------------------------------------------- */

int devmem_emul_dontneed(struct devmem_emul *e, int fd, const void *optval, socklen_t optlen)
{
    const struct devmem_dmabuf_token *tokens = optval;
    struct emul_sock *s;
    size_t i, n, frags = 0;
    uint32_t j;
    int tcp = devmem_emul_sock_is_tcp(fd), freed = 0;

    if (tcp < 0) {
        return tcp; /* -EBADF, -ENOTSOCK: setsockopt's own checks */
    }
    if (0 == tcp) {
        return -EBADF;
    }
    if (0 != optlen % sizeof(*tokens) ||
        optlen > sizeof(*tokens) * DEVMEM_MAX_DONTNEED_TOKENS) {
        return -EINVAL;
    }
    if (optlen > 0 && NULL == optval) {
        return -EFAULT;
    }
    n = optlen / sizeof(*tokens);
    s = devmem_emul_sock_get(e, fd, 0);
    for (i = 0; i < n; i++) {
        struct devmem_dmabuf_token r;

        memcpy(&r, tokens + i, sizeof(r));
        for (j = 0; j < r.token_count; j++) {
            uint64_t t = (uint64_t) r.token_start + j;

            if (++frags > DEVMEM_MAX_DONTNEED_FRAGS) {
                goto limit;
            }
            if (NULL == s || t >= s->tok_cap || NULL == s->tok[t].b) {
                e->stats.tokens_unknown++;
                continue;
            }
            devmem_emul_pool_put(e, s->tok[t].b, s->tok[t].page);
            s->tok[t].b = NULL;
            s->ntok--;
            if (t < s->tok_hint) {
                s->tok_hint = (size_t) t;
            }
            freed++;
        }
    }
limit:
    e->stats.tokens_freed += (uint64_t) freed;
    return freed;
}

/* ---- introspection ----------------------------------------------------------------------- */

void devmem_emul_get_stats(const struct devmem_emul *e, struct devmem_emul_stats *s)
{
    *s = e->stats;
}
