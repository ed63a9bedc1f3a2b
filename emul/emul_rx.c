/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devmem recvmsg (emul.c's point 4 and 5): where a steered flow's bytes land
 * in the pool, the cmsgs that say so, the tokens that hold the pages; the zerocopy error
 * queue of the send side is read here too (point 9).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "emul_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <linux/errqueue.h>

/* ---- receive ----------------------------------------------------------------------------- */

/* The live RX binding that steering sends this TCP socket's flow to, or NULL. */
static struct emul_binding *steered(struct devmem_emul *e, struct emul_sock *s, int fd)
{
    size_t i;

    if (!s->probed) {
        s->tcp = (1 == devmem_emul_sock_is_tcp(fd));
        if (0 != devmem_emul_sock_family_port(fd, &s->family, &s->port)) {
            return NULL;
        }
        s->probed = (0 != s->port); /* a socket not yet bound may get a port later */
    }
    if (!s->tcp) {
        return NULL;
    }
    for (i = 0; i < e->nrules; i++) {
        if (e->rules[i].port == s->port) {
            return devmem_emul_rule_target(e, &e->rules[i], s);
        }
    }
    return NULL;
}

static ssize_t plain_recv(int fd, struct msghdr *msg, int flags)
{
    ssize_t ret = recvmsg(fd, msg, flags & ~MSG_SOCK_DEVMEM);

    if (ret < 0) {
        return -errno;
    }
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
        size_t nfr = 1 + devmem_emul_rnd_below(e, 4), f;

        if ((size_t) devmem_emul_rnd_below(e, 100) < e->cfg.linear_pct) {
            size_t cap = budget - planned < 256 ? budget - planned : 256;
            struct emul_piece *p = &e->pieces[np++];

            p->linear = 1;
            p->len = (uint32_t) (1 + devmem_emul_rnd_below(e, cap));
            planned += p->len;
        }
        for (f = 0; f < nfr && planned < budget && np < maxp && b->nfree > 0; f++) {
            struct emul_piece *p = &e->pieces[np++];
            size_t len, left = budget - planned;

            p->linear = 0;
            p->page = devmem_emul_pool_take(e, b);
            if (0 == devmem_emul_rnd_below(e, 2)) {
                p->inpage = 0;
                len = e->cfg.max_frag;
            } else {
                p->inpage = (uint32_t) (64 * devmem_emul_rnd_below(e, e->page / 64));
                len = e->page - p->inpage;
                if (len > e->cfg.max_frag) {
                    len = e->cfg.max_frag;
                }
                len = 1 + devmem_emul_rnd_below(e, len);
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

/* Pieces that hold no bytes of this receive give their pages back. */
static void give_back(struct devmem_emul *e, struct emul_binding *b, size_t from, size_t np)
{
    for (size_t i = from; i < np; i++) {
        if (!e->pieces[i].linear) {
            devmem_emul_pool_put(e, b, (uint32_t) e->pieces[i].page);
        }
    }
}

/* Device memory cannot be a readv target: its pieces land in a bounce buffer first, copied
 * in by the provider once the bytes are known (land_pieces). 0 or -ENOMEM. */
static int reserve_bounce(struct devmem_emul *e, struct emul_binding *b, size_t np)
{
    size_t need = 0;

    for (size_t i = 0; i < np; i++) {
        if (!e->pieces[i].linear && NULL == b->region->map) {
            need += e->pieces[i].len;
        }
    }
    if (need > e->bounce_len) {
        unsigned char *nb = realloc(e->bounce, need);

        if (NULL == nb) {
            return -ENOMEM;
        }
        e->bounce = nb;
        e->bounce_len = need;
    }
    return 0;
}

/* One iovec for one readv that puts every piece where it belongs: linear bytes in the
 * caller's buffer, dmabuf bytes in the pool (or the bounce buffer). Its length, or -errno. */
static ssize_t map_pieces(struct devmem_emul *e, struct emul_binding *b,
                          const struct msghdr *msg, size_t np)
{
    size_t niov = 0, maxiov = 2 * EMUL_MAX_PIECES + 64, linear_pos = 0, bpos = 0;

    for (size_t i = 0; i < np; i++) {
        struct emul_piece *p = &e->pieces[i];

        if (p->linear) {
            int rc = map_user(msg, linear_pos, p->len, e->iov, &niov, maxiov);

            if (0 != rc) {
                return rc;
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
    return (ssize_t) niov;
}

/* The socket gave `got` bytes: the pieces they reached are kept (a token and a
 * SCM_DEVMEM_DMABUF cmsg each, or a SCM_DEVMEM_LINEAR one), the rest give their pages back.
 * Fills the control area; 0, or the error of a piece whose bytes left the socket but could
 * not land (a device copy, or no token left). */
static int land_pieces(struct devmem_emul *e, struct emul_sock *s, struct emul_binding *b,
                       struct msghdr *msg, size_t np, size_t got)
{
    unsigned char *ctrl = (unsigned char *) msg->msg_control;
    size_t bpos = 0, cum = 0, used = 0;
    int fail = 0;

    for (size_t i = 0; i < np; i++) {
        struct emul_piece *p = &e->pieces[i];
        struct devmem_dmabuf_cmsg dc;
        struct cmsghdr hdr;

        if (cum >= got) {
            give_back(e, b, i, i + 1);
            continue;
        }
        if (p->len > got - cum) {
            p->len = (uint32_t) (got - cum);
        }
        cum += p->len;
        memset(&dc, 0, sizeof(dc));
        dc.frag_size = p->len;
        if (!p->linear) {
            if (NULL == b->region->map) {
                int rc = b->region->provider->copy_in(b->region, p->page * e->page + p->inpage,
                                                      e->bounce + bpos, p->len, NULL);

                bpos += p->len;
                if (0 != rc) {
                    fail = rc; /* bytes consumed but not landed: a device error */
                    give_back(e, b, i, i + 1);
                    continue;
                }
            }
            dc.frag_offset = (uint64_t) p->page * e->page + p->inpage;
            dc.dmabuf_id = b->id;
            dc.frag_token = devmem_emul_token_alloc(s, b, (uint32_t) p->page);
            if (0 == dc.frag_token) {
                fail = -ENOMEM;
                give_back(e, b, i, i + 1);
                continue;
            }
            e->stats.frags_landed++;
        }
        hdr.cmsg_len = CMSG_LEN(sizeof(dc));
        hdr.cmsg_level = SOL_SOCKET;
        hdr.cmsg_type = p->linear ? SCM_DEVMEM_LINEAR : SCM_DEVMEM_DMABUF;
        memcpy(ctrl + used, &hdr, sizeof(hdr));
        memcpy(ctrl + used + CMSG_LEN(0), &dc, sizeof(dc));
        /* each cmsg takes CMSG_SPACE, the last one no more than what is left */
        used += (msg->msg_controllen - used < CMSG_SPACE(sizeof(dc)))
                    ? msg->msg_controllen - used : CMSG_SPACE(sizeof(dc));
    }
    msg->msg_controllen = used;
    msg->msg_flags = 0;
    return fail;
}

/* A receive of ret bytes on s: counted on the RX queue its flow arrives on, if steered. */
static void count_queue(struct devmem_emul *e, const struct emul_sock *s, ssize_t ret)
{
    if (ret > 0 && NULL != s && s->has_queue && s->queue < EMUL_QUEUES) {
        e->queue_bytes[s->queue] += (uint64_t) ret;
    }
}

/*
 * A devmem receive on a steered socket, in the kernel's terms: refuse a control buffer
 * with no room for one cmsg (-ETOOSMALL) and a full pool (-ENOBUFS, the bytes stay in the
 * socket); lay out the skbs the data would have come in (plan_pieces); read the socket
 * straight into that layout; then keep what the bytes reached, with a cmsg and a token per
 * piece. Returns the bytes delivered, or -errno with nothing taken from the pool.
 */
static ssize_t devmem_recv(struct devmem_emul *e, struct emul_sock *s, struct emul_binding *b,
                           int fd, struct msghdr *msg, int flags, size_t limit)
{
    size_t budget = 0, room, np, planned = 0;
    struct msghdr hmsg;
    ssize_t got, niov;
    int fail;

    for (size_t i = 0; i < msg->msg_iovlen; i++) {
        budget += msg->msg_iov[i].iov_len;
    }
    if (0 != limit && budget > limit) {
        budget = limit;
    }
    room = cmsg_room(NULL != msg->msg_control ? msg->msg_controllen : 0);
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
    for (size_t i = 0; i < np; i++) {
        planned += e->pieces[i].len;
    }
    if (planned < budget && 0 == b->nfree) {
        e->stats.recv_pool_limited++;
    }
    if (0 != (got = reserve_bounce(e, b, np)) || (got = niov = map_pieces(e, b, msg, np)) < 0) {
        give_back(e, b, 0, np);
        return got;
    }
    memset(&hmsg, 0, sizeof(hmsg));
    hmsg.msg_iov = e->iov;
    hmsg.msg_iovlen = (size_t) niov;
    got = recvmsg(fd, &hmsg, (flags & ~(MSG_SOCK_DEVMEM | MSG_WAITALL)) | MSG_DONTWAIT);
    if (got <= 0) {
        got = got < 0 ? -errno : 0;
        give_back(e, b, 0, np);
        return got;
    }
    fail = land_pieces(e, s, b, msg, np, (size_t) got);
    /* A device copy or token failure after bytes left the socket is not recoverable; the
     * tokens already handed out go back when the socket closes. */
    return 0 != fail ? fail : got;
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
    (void) devmem_emul_sock_family_port(fd, &family, &port);
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
    return 0;
}

ssize_t devmem_emul_recvmsg(struct devmem_emul *e, int fd, struct msghdr *msg, int flags)
{
    struct emul_binding *b;
    struct emul_sock *s;
    char c;
    ssize_t ret;

    if (flags & MSG_ERRQUEUE) {
        return errqueue_recv(e, devmem_emul_sock_get(e, fd, 0), fd, msg, flags);
    }
    s = devmem_emul_sock_get(e, fd, 1);
    /* bytes queued before their binding went stay devmem of it, and come first */
    b = NULL == s ? NULL : NULL != s->linger ? s->linger : steered(e, s, fd);
    if (NULL == b) {
        /* An unbound queue: ordinary TCP data, no cmsg, whatever the flag says. */
        ret = plain_recv(fd, msg, flags);
        count_queue(e, s, ret);
        return ret;
    }
    /* Wait (or not) for data as the socket would; EOF and errors pass through. At EOF the
     * kernel reports an empty control area (recvmsg writes back msg_controllen 0). */
    ret = recv(fd, &c, 1, MSG_PEEK | (flags & MSG_DONTWAIT));
    if (ret <= 0) {
        if (0 == ret) {
            msg->msg_controllen = 0;
            msg->msg_flags = 0;
            devmem_emul_linger_end(e, s);
        }
        return ret < 0 ? -errno : 0;
    }
    if (!(flags & MSG_SOCK_DEVMEM)) {
        e->stats.recv_efault++;
        return -EFAULT;
    }
    if (NULL != s->linger) { /* never mixed with the readable bytes after them */
        ret = devmem_recv(e, s, b, fd, msg, flags, s->linger_left);
        if (ret > 0) { /* never more than linger_left: it bounds the receive */
            e->stats.linger_bytes += (uint64_t) ret;
            s->linger_left -= (size_t) ret;
        }
        /* ended when read, or when bytes left the socket but could not land (a device or
         * token error: the count no longer says where the later bytes start) */
        if (0 == s->linger_left
            || (ret < 0 && -EAGAIN != ret && -EINTR != ret && -ENOBUFS != ret
                && -ETOOSMALL != ret)) {
            devmem_emul_linger_end(e, s);
        }
    } else if ((size_t) devmem_emul_rnd_below(e, 100) < e->cfg.readable_pct) {
        ret = plain_recv(fd, msg, flags); /* a readable skb: header split did not happen */
    } else {
        ret = devmem_recv(e, s, b, fd, msg, flags, 0);
    }
    count_queue(e, s, ret);
    return ret;
}
