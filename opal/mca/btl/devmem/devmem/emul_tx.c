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
    tcp = devmem_emul_sock_is_tcp(fd);
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
    b = devmem_emul_binding_find(e, id);
    if (NULL == b || b->is_rx || !b->alive) {
        return -EINVAL;
    }
    s = devmem_emul_sock_get(e, fd, 1);
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
    }
    return ret;
}
