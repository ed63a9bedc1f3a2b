/*
 * The emulated devmem kernel ABI (see emul.h).
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
 *     the pool is freed only when the last outstanding net_iov comes back.
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
 *  - The NIC: header split and hds-thresh, RSS, per-queue bindings (a flow is steered by its
 *    local port only, like a 3-tuple ntuple rule), MTU/GRO-shaped frags (ours are random),
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

#include "emul.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <linux/errqueue.h>

#define EMUL_MAX_PIECES 1024         /* UIO_MAXIOV: pieces in one receive */
#define EMUL_TX_BOUNCE_MAX (4u << 20) /* device-memory sends go through at most this much */
#define EMUL_TOKEN_MAX 0x7fffffffu

struct emul_binding {
    uint32_t id;
    int is_rx;
    int alive;            /* not unbound */
    struct devmem_region *region;
    size_t npages;
    uint32_t *free_pages; /* RX: indices of free pages */
    size_t nfree;
    size_t refs;          /* RX: pages held by tokens */
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
    struct emul_notif *errq;
    size_t errq_n, errq_cap;
};

struct emul_piece {
    int linear;
    uint32_t len;
    size_t page;
    uint32_t inpage;
};

struct emul_rule {
    uint16_t port;
    uint32_t id;
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
    struct emul_sock *socks; /* indexed by fd */
    size_t socks_cap;
    struct emul_piece *pieces; /* scratch for one receive */
    struct iovec *iov;         /* scratch */
    unsigned char *bounce;
    size_t bounce_len;
    struct devmem_emul_stats stats;
};

/* ---- small helpers ----------------------------------------------------------------------- */

static uint64_t rnd(struct devmem_emul *e)
{
    /* xorshift64*: deterministic for a seed, good enough for layouts */
    e->rng ^= e->rng >> 12;
    e->rng ^= e->rng << 25;
    e->rng ^= e->rng >> 27;
    return e->rng * 2685821657736338717ull;
}

static size_t rnd_below(struct devmem_emul *e, size_t n)
{
    return n > 1 ? (size_t) (rnd(e) % n) : 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
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

static int sock_is_tcp(int fd)
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

static int sock_family_port(int fd, int *family, uint16_t *port)
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

static struct emul_binding *binding_find(struct devmem_emul *e, uint32_t id)
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

/* A page goes back to its pool (napi_pp_put_page). A dead pool goes once it is whole. */
static void pool_put(struct devmem_emul *e, struct emul_binding *b, uint32_t page)
{
    b->free_pages[b->nfree++] = page;
    b->refs--;
    if (!b->alive && 0 == b->refs) {
        binding_free(e, b);
    }
}

/* Scattered placement: any free page, chosen pseudo-randomly. */
static uint32_t pool_take(struct devmem_emul *e, struct emul_binding *b)
{
    size_t i = rnd_below(e, b->nfree);
    uint32_t page = b->free_pages[i];

    b->free_pages[i] = b->free_pages[--b->nfree];
    b->refs++;
    return page;
}

/* ---- sockets ----------------------------------------------------------------------------- */

static void sock_release(struct devmem_emul *e, struct emul_sock *s)
{
    size_t t;

    for (t = 1; t < s->tok_cap; t++) {
        if (NULL != s->tok[t].b) {
            pool_put(e, s->tok[t].b, s->tok[t].page);
        }
    }
    free(s->tok);
    free(s->errq);
    memset(s, 0, sizeof(*s));
}

/* The state of socket fd; a new socket on a reused fd number gets fresh state. */
static struct emul_sock *sock_get(struct devmem_emul *e, int fd, int create)
{
    struct emul_sock *s;
    struct stat st;

    if (fd < 0 || 0 != fstat(fd, &st)) {
        return NULL;
    }
    if ((size_t) fd >= e->socks_cap) {
        if (!create || 0 != grow((void **) &e->socks, &e->socks_cap, (size_t) fd + 1,
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
static uint32_t token_alloc(struct emul_sock *s, struct emul_binding *b, uint32_t page)
{
    size_t t = s->tok_hint;

    while (t < s->tok_cap && NULL != s->tok[t].b) {
        t++;
    }
    if (t > EMUL_TOKEN_MAX) {
        return 0;
    }
    if (t >= s->tok_cap && 0 != grow((void **) &s->tok, &s->tok_cap, t + 1, sizeof(*s->tok))) {
        return 0;
    }
    s->tok[t].b = b;
    s->tok[t].page = page;
    s->ntok++;
    s->tok_hint = t + 1;
    return (uint32_t) t;
}

/* ---- setup ------------------------------------------------------------------------------- */

void devmem_emul_config_default(struct devmem_emul_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->seed = 1;
    cfg->linear_pct = 10;
    cfg->readable_pct = 2;
    cfg->max_frag = devmem_page_size();
}

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
    if (NULL == b || 0 != grow((void **) &e->bind, &e->bind_cap, e->nbind + 1,
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
    } while (0 == b->id || NULL != binding_find(e, b->id));
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

int devmem_emul_unbind(struct devmem_emul *e, uint32_t id, struct devmem_err *err)
{
    struct emul_binding *b = binding_find(e, id);
    size_t i;

    if (NULL == b || !b->alive) {
        return devmem_err_set(err, ENOENT, "emul: no binding %u", id);
    }
    for (i = 0; i < e->nrules;) {
        if (e->rules[i].id == id) {
            e->rules[i] = e->rules[--e->nrules];
        } else {
            i++;
        }
    }
    b->alive = 0;
    if (0 == b->refs) {
        binding_free(e, b);
    }
    return 0;
}

int devmem_emul_steer(struct devmem_emul *e, uint16_t port, uint32_t id,
                      struct devmem_err *err)
{
    struct emul_binding *b = NULL;
    size_t i;

    if (0 != id) {
        b = binding_find(e, id);
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
        if (0 != grow((void **) &e->rules, &e->rules_cap, e->nrules + 1, sizeof(*e->rules))) {
            return devmem_err_set(err, ENOMEM, "emul: out of memory");
        }
        e->nrules++;
    }
    e->rules[i].port = port;
    e->rules[i].id = id;
    return 0;
}

/* ---- receive ----------------------------------------------------------------------------- */

/* The live RX binding that steering sends this TCP socket's flow to, or NULL. */
static struct emul_binding *steered(struct devmem_emul *e, struct emul_sock *s, int fd)
{
    size_t i;

    if (!s->probed) {
        s->tcp = (1 == sock_is_tcp(fd));
        if (0 != sock_family_port(fd, &s->family, &s->port)) {
            return NULL;
        }
        s->probed = (0 != s->port); /* a socket not yet bound may get a port later */
    }
    if (!s->tcp) {
        return NULL;
    }
    for (i = 0; i < e->nrules; i++) {
        if (e->rules[i].port == s->port) {
            struct emul_binding *b = binding_find(e, e->rules[i].id);

            return (NULL != b && b->alive) ? b : NULL;
        }
    }
    return NULL;
}

static ssize_t plain_recv(struct devmem_emul *e, int fd, struct msghdr *msg, int flags)
{
    ssize_t ret = recvmsg(fd, msg, flags & ~MSG_SOCK_DEVMEM);

    if (ret < 0) {
        return -errno;
    }
    e->stats.recv_plain++;
    e->stats.bytes_plain += (uint64_t) ret;
    return ret;
}

/* How many devmem cmsgs fit, by put_cmsg_notrunc's rule (CMSG_LEN to fit, CMSG_SPACE used). */
static size_t cmsg_room(size_t controllen)
{
    const size_t need = CMSG_LEN(sizeof(struct devmem_dmabuf_cmsg));
    const size_t space = CMSG_SPACE(sizeof(struct devmem_dmabuf_cmsg));
    size_t n = 0;

    while (controllen >= need) {
        n++;
        controllen -= (controllen < space) ? controllen : space;
    }
    return n;
}

/* Lay out up to budget bytes as skbs: [linear head] + 1..4 frags, each frag in its own
 * pool page at a page or sub-page offset. Returns the number of pieces. */
static size_t plan_pieces(struct devmem_emul *e, struct emul_binding *b, size_t budget,
                          size_t room)
{
    size_t np = 0, planned = 0, maxp = room < EMUL_MAX_PIECES ? room : EMUL_MAX_PIECES;

    while (planned < budget && np < maxp && b->nfree > 0) {
        size_t nfr = 1 + rnd_below(e, 4), f;

        if ((size_t) rnd_below(e, 100) < e->cfg.linear_pct) {
            size_t cap = budget - planned < 256 ? budget - planned : 256;
            struct emul_piece *p = &e->pieces[np++];

            p->linear = 1;
            p->len = (uint32_t) (1 + rnd_below(e, cap));
            planned += p->len;
        }
        for (f = 0; f < nfr && planned < budget && np < maxp && b->nfree > 0; f++) {
            struct emul_piece *p = &e->pieces[np++];
            size_t len, left = budget - planned;

            p->linear = 0;
            p->page = pool_take(e, b);
            if (0 == rnd_below(e, 2)) {
                p->inpage = 0;
                len = e->cfg.max_frag;
            } else {
                p->inpage = (uint32_t) (64 * rnd_below(e, e->page / 64));
                len = e->page - p->inpage;
                if (len > e->cfg.max_frag) {
                    len = e->cfg.max_frag;
                }
                len = 1 + rnd_below(e, len);
            }
            p->len = (uint32_t) (len < left ? len : left);
            planned += p->len;
        }
    }
    return np;
}

/* Point iov[*n..] at bytes [pos, pos+len) of the caller's iovec chain. */
static int map_user(const struct msghdr *msg, size_t pos, size_t len, struct iovec *iov,
                    size_t *n, size_t max)
{
    size_t i;

    for (i = 0; i < msg->msg_iovlen && len > 0; i++) {
        size_t il = msg->msg_iov[i].iov_len;

        if (pos >= il) {
            pos -= il;
            continue;
        }
        if (*n >= max) {
            return -ENOBUFS;
        }
        iov[*n].iov_base = (char *) msg->msg_iov[i].iov_base + pos;
        iov[*n].iov_len = (il - pos < len) ? il - pos : len;
        len -= iov[*n].iov_len;
        (*n)++;
        pos = 0;
    }
    return 0 == len ? 0 : -EFAULT;
}

static ssize_t devmem_recv(struct devmem_emul *e, struct emul_sock *s, struct emul_binding *b,
                           int fd, struct msghdr *msg, int flags)
{
    size_t budget = 0, room, np, i, niov = 0, maxiov = 2 * EMUL_MAX_PIECES + 64;
    size_t linear_pos = 0, bounce_need = 0, bpos = 0, cum = 0, used = 0;
    unsigned char *ctrl = (unsigned char *) msg->msg_control;
    struct msghdr hmsg;
    ssize_t got;
    int rc, fail = 0;

    for (i = 0; i < msg->msg_iovlen; i++) {
        budget += msg->msg_iov[i].iov_len;
    }
    room = cmsg_room(NULL != ctrl ? msg->msg_controllen : 0);
    if (0 == room) {
        e->stats.recv_toosmall++;
        return -ETOOSMALL;
    }
    if (0 == b->nfree) {
        /* Backpressure: leave the bytes in the socket; nothing is lost. */
        e->stats.recv_pool_full++;
        return -ENOBUFS;
    }
    np = plan_pieces(e, b, budget, room);
    {
        size_t planned = 0;

        for (i = 0; i < np; i++) {
            planned += e->pieces[i].len;
        }
        if (planned < budget && 0 == b->nfree) {
            e->stats.recv_pool_limited++;
        }
    }
    for (i = 0; i < np; i++) {
        if (!e->pieces[i].linear && NULL == b->region->map) {
            bounce_need += e->pieces[i].len;
        }
    }
    if (bounce_need > e->bounce_len) {
        unsigned char *nb = realloc(e->bounce, bounce_need);

        if (NULL == nb) {
            got = -ENOMEM;
            goto undo;
        }
        e->bounce = nb;
        e->bounce_len = bounce_need;
    }
    /* One readv lands every piece where it belongs: linear bytes in the caller's buffer,
     * dmabuf bytes in the pool (or a bounce buffer for device memory). */
    for (i = 0; i < np; i++) {
        struct emul_piece *p = &e->pieces[i];

        if (p->linear) {
            rc = map_user(msg, linear_pos, p->len, e->iov, &niov, maxiov);
            if (0 != rc) {
                got = rc;
                goto undo;
            }
            linear_pos += p->len;
        } else if (NULL != b->region->map) {
            e->iov[niov].iov_base = (char *) b->region->map + p->page * e->page + p->inpage;
            e->iov[niov++].iov_len = p->len;
        } else {
            e->iov[niov].iov_base = e->bounce + bpos;
            e->iov[niov++].iov_len = p->len;
            bpos += p->len;
        }
    }
    memset(&hmsg, 0, sizeof(hmsg));
    hmsg.msg_iov = e->iov;
    hmsg.msg_iovlen = niov;
    got = recvmsg(fd, &hmsg, (flags & ~(MSG_SOCK_DEVMEM | MSG_WAITALL)) | MSG_DONTWAIT);
    if (got < 0) {
        got = -errno;
    }
    if (got <= 0) {
        goto undo;
    }
    /* Keep the pieces the bytes reached; give back the pages of the others. */
    bpos = 0;
    for (i = 0; i < np; i++) {
        struct emul_piece *p = &e->pieces[i];
        struct devmem_dmabuf_cmsg dc;
        struct cmsghdr hdr;

        if (cum >= (size_t) got) {
            if (!p->linear) {
                pool_put(e, b, (uint32_t) p->page);
            }
            continue;
        }
        if (p->len > (size_t) got - cum) {
            p->len = (uint32_t) ((size_t) got - cum);
        }
        cum += p->len;
        memset(&dc, 0, sizeof(dc));
        dc.frag_size = p->len;
        if (!p->linear) {
            if (NULL == b->region->map) {
                rc = b->region->provider->copy_in(b->region, p->page * e->page + p->inpage,
                                                  e->bounce + bpos, p->len, NULL);
                bpos += p->len;
                if (0 != rc) {
                    fail = rc; /* bytes consumed but not landed: a device error */
                    pool_put(e, b, (uint32_t) p->page);
                    continue;
                }
            }
            dc.frag_offset = (uint64_t) p->page * e->page + p->inpage;
            dc.dmabuf_id = b->id;
            dc.frag_token = token_alloc(s, b, (uint32_t) p->page);
            if (0 == dc.frag_token) {
                fail = -ENOMEM;
                pool_put(e, b, (uint32_t) p->page);
                continue;
            }
            e->stats.frags_landed++;
            e->stats.bytes_dmabuf += p->len;
        } else {
            e->stats.bytes_linear += p->len;
        }
        hdr.cmsg_len = CMSG_LEN(sizeof(dc));
        hdr.cmsg_level = SOL_SOCKET;
        hdr.cmsg_type = p->linear ? SCM_DEVMEM_LINEAR : SCM_DEVMEM_DMABUF;
        memcpy(ctrl + used, &hdr, sizeof(hdr));
        memcpy(ctrl + used + CMSG_LEN(0), &dc, sizeof(dc));
        used += (msg->msg_controllen - used < CMSG_SPACE(sizeof(dc)))
                    ? msg->msg_controllen - used : CMSG_SPACE(sizeof(dc));
    }
    msg->msg_controllen = used;
    msg->msg_flags = 0;
    e->stats.recv_devmem++;
    /* A device copy or token failure after bytes left the socket is not recoverable; the
     * tokens already handed out go back when the socket closes. */
    return 0 != fail ? fail : got;
undo:
    for (i = 0; i < np; i++) {
        if (!e->pieces[i].linear) {
            pool_put(e, b, (uint32_t) e->pieces[i].page);
        }
    }
    return got;
}

static ssize_t errqueue_recv(struct devmem_emul *e, struct emul_sock *s, int fd,
                             struct msghdr *msg, int flags)
{
    struct {
        struct sock_extended_err ee;
        struct sockaddr_in6 offender; /* zeroed: AF_UNSPEC */
    } errhdr;
    size_t plen, cmlen;
    struct cmsghdr hdr;
    int family = AF_INET;
    uint16_t port;

    if (NULL == s || 0 == s->errq_n) {
        /* Nothing of ours: the real socket's own error queue answers (-EAGAIN when empty). */
        ssize_t ret = recvmsg(fd, msg, flags);

        return ret < 0 ? -errno : ret;
    }
    (void) sock_family_port(fd, &family, &port);
    memset(&errhdr, 0, sizeof(errhdr));
    errhdr.ee.ee_errno = 0;
    errhdr.ee.ee_origin = SO_EE_ORIGIN_ZEROCOPY;
    errhdr.ee.ee_info = s->errq[0].lo;
    errhdr.ee.ee_data = s->errq[0].hi;
    plen = sizeof(errhdr.ee) + (AF_INET6 == family ? sizeof(struct sockaddr_in6)
                                                   : sizeof(struct sockaddr_in));
    hdr.cmsg_level = AF_INET6 == family ? SOL_IPV6 : SOL_IP;
    hdr.cmsg_type = AF_INET6 == family ? IPV6_RECVERR : IP_RECVERR;
    cmlen = CMSG_LEN(plen);
    msg->msg_flags = MSG_ERRQUEUE;
    if (NULL == msg->msg_control || msg->msg_controllen < sizeof(hdr)) {
        msg->msg_flags |= MSG_CTRUNC;
        msg->msg_controllen = 0;
    } else {
        if (msg->msg_controllen < cmlen) {
            msg->msg_flags |= MSG_CTRUNC; /* put_cmsg truncates here */
            cmlen = msg->msg_controllen;
        }
        hdr.cmsg_len = cmlen;
        memcpy(msg->msg_control, &hdr, sizeof(hdr));
        memcpy((char *) msg->msg_control + CMSG_LEN(0), &errhdr, cmlen - CMSG_LEN(0));
        msg->msg_controllen = (CMSG_SPACE(plen) < msg->msg_controllen) ? CMSG_SPACE(plen)
                                                                       : msg->msg_controllen;
    }
    /* The notification is dequeued even when truncated, as the kernel does. */
    memmove(s->errq, s->errq + 1, (s->errq_n - 1) * sizeof(*s->errq));
    s->errq_n--;
    e->stats.tx_notifications++;
    return 0;
}

ssize_t devmem_emul_recvmsg(struct devmem_emul *e, int fd, struct msghdr *msg, int flags)
{
    struct emul_binding *b;
    struct emul_sock *s;
    char c;
    ssize_t ret;

    if (flags & MSG_ERRQUEUE) {
        return errqueue_recv(e, sock_get(e, fd, 0), fd, msg, flags);
    }
    s = sock_get(e, fd, 1);
    b = (NULL != s) ? steered(e, s, fd) : NULL;
    if (NULL == b) {
        /* An unbound queue: ordinary TCP data, no cmsg, whatever the flag says. */
        return plain_recv(e, fd, msg, flags);
    }
    /* Wait (or not) for data as the socket would; EOF and errors pass through. At EOF the
     * kernel reports an empty control area (recvmsg writes back msg_controllen 0). */
    ret = recv(fd, &c, 1, MSG_PEEK | (flags & MSG_DONTWAIT));
    if (ret <= 0) {
        if (0 == ret) {
            msg->msg_controllen = 0;
            msg->msg_flags = 0;
        }
        return ret < 0 ? -errno : 0;
    }
    if (!(flags & MSG_SOCK_DEVMEM)) {
        e->stats.recv_efault++;
        return -EFAULT;
    }
    if ((size_t) rnd_below(e, 100) < e->cfg.readable_pct) {
        return plain_recv(e, fd, msg, flags); /* a readable skb: header split did not happen */
    }
    return devmem_recv(e, s, b, fd, msg, flags);
}

/* ---- DONTNEED ---------------------------------------------------------------------------- */

int devmem_emul_dontneed(struct devmem_emul *e, int fd, const void *optval, socklen_t optlen)
{
    const struct devmem_dmabuf_token *tokens = optval;
    struct emul_sock *s;
    size_t i, n, frags = 0;
    uint32_t j;
    int tcp = sock_is_tcp(fd), freed = 0;

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
    e->stats.dontneed_calls++;
    n = optlen / sizeof(*tokens);
    s = sock_get(e, fd, 0);
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
            pool_put(e, s->tok[t].b, s->tok[t].page);
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

/* ---- transmit ---------------------------------------------------------------------------- */

static void errq_push(struct emul_sock *s, uint32_t id)
{
    if (s->errq_n > 0 && s->errq[s->errq_n - 1].hi + 1 == id) {
        s->errq[s->errq_n - 1].hi = id; /* merged into the queued tail notification */
        return;
    }
    if (0 != grow((void **) &s->errq, &s->errq_cap, s->errq_n + 1, sizeof(*s->errq))) {
        return; /* the kernel drops a notification it cannot allocate, too */
    }
    s->errq[s->errq_n].lo = id;
    s->errq[s->errq_n].hi = id;
    s->errq_n++;
}

ssize_t devmem_emul_sendmsg(struct devmem_emul *e, int fd, const struct msghdr *msg, int flags)
{
    const unsigned char *ctrl = (const unsigned char *) msg->msg_control;
    size_t clen = NULL != ctrl ? msg->msg_controllen : 0, off = 0, i, niov = 0, total = 0;
    size_t bpos = 0;
    struct emul_binding *b;
    struct emul_sock *s;
    struct msghdr hmsg;
    uint32_t id = 0;
    int found = 0, zc = 0, tcp;
    socklen_t zl = sizeof(zc);
    ssize_t ret;

    while (clen - off >= sizeof(struct cmsghdr)) {
        struct cmsghdr hdr;

        memcpy(&hdr, ctrl + off, sizeof(hdr));
        if (hdr.cmsg_len < sizeof(hdr) || hdr.cmsg_len > clen - off) {
            return -EINVAL;
        }
        if (SOL_SOCKET == hdr.cmsg_level && SCM_DEVMEM_DMABUF == hdr.cmsg_type) {
            if (hdr.cmsg_len != CMSG_LEN(sizeof(uint32_t))) {
                return -EINVAL;
            }
            memcpy(&id, ctrl + off + CMSG_LEN(0), sizeof(id));
            found = 1;
        }
        off += CMSG_ALIGN(hdr.cmsg_len) < clen - off ? CMSG_ALIGN(hdr.cmsg_len) : clen - off;
    }
    if (!found) {
        ret = sendmsg(fd, msg, flags); /* not a devmem send: the real kernel's business */
        return ret < 0 ? -errno : ret;
    }
    tcp = sock_is_tcp(fd);
    if (tcp < 0) {
        return tcp;
    }
    if (0 == tcp) {
        return -EINVAL;
    }
    if (0 != getsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &zc, &zl)) {
        return -errno;
    }
    if (!(flags & MSG_ZEROCOPY) || !zc) {
        return -EINVAL;
    }
    b = binding_find(e, id);
    if (NULL == b || b->is_rx || !b->alive) {
        return -EINVAL;
    }
    s = sock_get(e, fd, 1);
    if (NULL == s) {
        return -ENOMEM;
    }
    /* iov_base is an offset; stop at the first byte past the dmabuf. */
    for (i = 0; i < msg->msg_iovlen && niov < 2 * EMUL_MAX_PIECES; i++) {
        uint64_t o = (uint64_t) (uintptr_t) msg->msg_iov[i].iov_base;
        size_t len = msg->msg_iov[i].iov_len;

        if (0 == len) {
            continue;
        }
        if (o >= b->region->size) {
            break;
        }
        if (len > b->region->size - o) {
            len = (size_t) (b->region->size - o);
        }
        if (NULL == b->region->map && len > EMUL_TX_BOUNCE_MAX - total) {
            len = EMUL_TX_BOUNCE_MAX - total;
        }
        e->iov[niov].iov_base = (void *) (uintptr_t) o; /* offset for now */
        e->iov[niov++].iov_len = len;
        total += len;
        if (len < msg->msg_iov[i].iov_len || 0 == EMUL_TX_BOUNCE_MAX - total) {
            break;
        }
    }
    if (0 == total) {
        return i < msg->msg_iovlen ? -EFAULT : 0;
    }
    if (NULL == b->region->map && total > e->bounce_len) {
        unsigned char *nb = realloc(e->bounce, total);

        if (NULL == nb) {
            return -ENOMEM;
        }
        e->bounce = nb;
        e->bounce_len = total;
    }
    /* Turn offsets into host addresses: the region's mapping or a bounce copy. */
    for (i = 0; i < niov; i++) {
        size_t o = (size_t) (uintptr_t) e->iov[i].iov_base;

        if (NULL != b->region->map) {
            e->iov[i].iov_base = (char *) b->region->map + o;
        } else {
            int rc = b->region->provider->copy_out(b->region, o, e->bounce + bpos,
                                                   e->iov[i].iov_len, NULL);

            if (0 != rc) {
                return rc;
            }
            e->iov[i].iov_base = e->bounce + bpos;
            bpos += e->iov[i].iov_len;
        }
    }
    memset(&hmsg, 0, sizeof(hmsg));
    hmsg.msg_name = msg->msg_name;
    hmsg.msg_namelen = msg->msg_namelen;
    hmsg.msg_iov = e->iov;
    hmsg.msg_iovlen = niov;
    ret = sendmsg(fd, &hmsg, flags & ~MSG_ZEROCOPY);
    if (ret < 0) {
        return -errno; /* no notification id taken */
    }
    if (ret > 0) {
        errq_push(s, s->zckey++);
        e->stats.tx_sends++;
        e->stats.tx_bytes += (uint64_t) ret;
    }
    return ret;
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

/* ---- introspection ----------------------------------------------------------------------- */

void devmem_emul_get_stats(const struct devmem_emul *e, struct devmem_emul_stats *s)
{
    *s = e->stats;
}

int devmem_emul_pool_pages(const struct devmem_emul *e, uint32_t id, size_t *total,
                           size_t *nfree)
{
    struct emul_binding *b = binding_find((struct devmem_emul *) e, id);

    if (NULL == b || !b->is_rx) {
        return -ENOENT;
    }
    *total = b->npages;
    *nfree = b->nfree;
    return 0;
}

size_t devmem_emul_sock_tokens(const struct devmem_emul *e, int fd)
{
    if (fd < 0 || (size_t) fd >= e->socks_cap || !e->socks[fd].used) {
        return 0;
    }
    return e->socks[fd].ntok;
}
