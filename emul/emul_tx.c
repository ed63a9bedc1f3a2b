/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devmem sendmsg (emul.c's points 8 and 9): SCM_DEVMEM_DMABUF sends from a TX
 * binding and their zerocopy notifications.
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

/* ---- transmit ---------------------------------------------------------------------------- */

static void errq_push(struct emul_sock *s, uint32_t id)
{
    if (s->errq_n > 0 && s->errq[s->errq_n - 1].hi + 1 == id) {
        s->errq[s->errq_n - 1].hi = id; /* merged into the queued tail notification */
        return;
    }
    if (0 != devmem_emul_grow((void **) &s->errq, &s->errq_cap, s->errq_n + 1, sizeof(*s->errq))) {
        return; /* the kernel drops a notification it cannot allocate, too */
    }
    s->errq[s->errq_n].lo = id;
    s->errq[s->errq_n].hi = id;
    s->errq_n++;
}

/* The binding id of msg's SCM_DEVMEM_DMABUF: 1 and *id, 0 without one, -EINVAL for a
 * malformed control message. */
static int dmabuf_cmsg(const struct msghdr *msg, uint32_t *id)
{
    const unsigned char *ctrl = (const unsigned char *) msg->msg_control;
    size_t clen = NULL != ctrl ? msg->msg_controllen : 0, off = 0;
    int found = 0;

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
            memcpy(id, ctrl + off + CMSG_LEN(0), sizeof(*id));
            found = 1;
        }
        off += CMSG_ALIGN(hdr.cmsg_len) < clen - off ? CMSG_ALIGN(hdr.cmsg_len) : clen - off;
    }
    return found;
}

/* The kernel sends devmem only on a TCP socket with SO_ZEROCOPY, with MSG_ZEROCOPY. */
static int zerocopy_tcp(int fd, int flags)
{
    int zc = 0, tcp = devmem_emul_sock_is_tcp(fd);
    socklen_t zl = sizeof(zc);

    if (tcp <= 0) {
        return 0 == tcp ? -EINVAL : tcp;
    }
    if (0 != getsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &zc, &zl)) {
        return -errno;
    }
    return (flags & MSG_ZEROCOPY) && zc ? 0 : -EINVAL;
}

/* msg's iovecs, whose iov_base is an offset into b's dmabuf, into e->iov (still offsets),
 * stopping at the first byte past the dmabuf or a full bounce buffer. Returns the count;
 * *total the bytes, *past whether iovecs were left out (with *total 0: the first one with
 * bytes lies past the dmabuf's end). */
static size_t dmabuf_iov(struct devmem_emul *e, const struct emul_binding *b,
                         const struct msghdr *msg, size_t *total, int *past)
{
    size_t i, niov = 0;

    *total = 0;
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
        if (NULL == b->region->map && len > EMUL_TX_BOUNCE_MAX - *total) {
            len = EMUL_TX_BOUNCE_MAX - *total;
        }
        e->iov[niov].iov_base = (void *) (uintptr_t) o;
        e->iov[niov++].iov_len = len;
        *total += len;
        if (len < msg->msg_iov[i].iov_len || 0 == EMUL_TX_BOUNCE_MAX - *total) {
            break;
        }
    }
    *past = i < msg->msg_iovlen;
    return niov;
}

/* e->iov's offsets into host addresses: the region's mapping, or a bounce copy of it. */
static int dmabuf_map(struct devmem_emul *e, const struct emul_binding *b, size_t niov,
                      size_t total)
{
    size_t bpos = 0;

    if (NULL == b->region->map && total > e->bounce_len) {
        unsigned char *nb = realloc(e->bounce, total);

        if (NULL == nb) {
            return -ENOMEM;
        }
        e->bounce = nb;
        e->bounce_len = total;
    }
    for (size_t i = 0; i < niov; i++) {
        size_t o = (size_t) (uintptr_t) e->iov[i].iov_base;

        if (NULL != b->region->map) {
            e->iov[i].iov_base = (char *) b->region->map + o;
            continue;
        }
        int rc = b->region->provider->copy_out(b->region, o, e->bounce + bpos,
                                               e->iov[i].iov_len, NULL);
        if (0 != rc) {
            return rc;
        }
        e->iov[i].iov_base = e->bounce + bpos;
        bpos += e->iov[i].iov_len;
    }
    return 0;
}

ssize_t devmem_emul_sendmsg(struct devmem_emul *e, int fd, const struct msghdr *msg, int flags)
{
    struct emul_binding *b;
    struct emul_sock *s;
    struct msghdr hmsg;
    size_t niov, total;
    uint32_t id = 0;
    int rc, past;
    ssize_t ret;

    if ((rc = dmabuf_cmsg(msg, &id)) <= 0) {
        if (rc < 0) {
            return rc;
        }
        ret = sendmsg(fd, msg, flags); /* not a devmem send: the real kernel's business */
        return ret < 0 ? -errno : ret;
    }
    if (0 != (rc = zerocopy_tcp(fd, flags))) {
        return rc;
    }
    b = devmem_emul_binding_find(e, id);
    if (NULL == b || b->is_rx || !b->alive) {
        return -EINVAL;
    }
    if (NULL == (s = devmem_emul_sock_get(e, fd, 1))) {
        return -ENOMEM;
    }
    niov = dmabuf_iov(e, b, msg, &total, &past);
    if (0 == total) {
        return past ? -EFAULT : 0;
    }
    if (0 != (rc = dmabuf_map(e, b, niov, total))) {
        return rc;
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
    }
    return ret;
}
