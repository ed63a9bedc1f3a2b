/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devmem transmit path: socket setup, devmem sendmsg, error-queue completions, and the
 * tracker that releases sent regions in order.
 */
#include "tx.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <linux/errqueue.h>

#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

int devmem_tx_socket_setup(int fd, const char *ifname, struct devmem_err *err)
{
    int one = 1;

    if (0 != setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
        return devmem_err_set(err, errno, "tx: SO_ZEROCOPY: %s", strerror(errno));
    }
    if (NULL != ifname && '\0' != ifname[0]) {
        size_t len = strnlen(ifname, IFNAMSIZ);

        if (len >= IFNAMSIZ) {
            return devmem_err_set(err, EINVAL, "tx: interface name too long");
        }
        if (0 != setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t) len + 1)) {
            return devmem_err_set(err, errno, "tx: SO_BINDTODEVICE %s: %s", ifname,
                                  strerror(errno));
        }
    }
    return 0;
}

int devmem_tx_build_msg(struct msghdr *msg, struct iovec *iovs, void *cbuf, uint32_t binding_id,
                        const struct devmem_tx_iov *iov, size_t n, struct devmem_err *err)
{
    struct cmsghdr *cm;
    size_t i;

    if (0 == n || n > DEVMEM_TX_MAX_IOV) {
        return devmem_err_set(err, EINVAL, "tx: %zu iovs (1..%d)", n, DEVMEM_TX_MAX_IOV);
    }
    memset(msg, 0, sizeof(*msg));
    for (i = 0; i < n; i++) {
        /* The kernel reads iov_base as a byte offset into the dmabuf. */
        iovs[i].iov_base = (void *) (uintptr_t) iov[i].offset;
        iovs[i].iov_len = iov[i].len;
    }
    msg->msg_iov = iovs;
    msg->msg_iovlen = n;
    memset(cbuf, 0, DEVMEM_TX_CBUF_SIZE);
    msg->msg_control = cbuf;
    msg->msg_controllen = DEVMEM_TX_CBUF_SIZE;
    cm = CMSG_FIRSTHDR(msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_DEVMEM_DMABUF;
    cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    memcpy(CMSG_DATA(cm), &binding_id, sizeof(binding_id));
    return 0;
}

ssize_t devmem_tx_send_via(devmem_tx_sendmsg_fn send, void *ctx, const char *who, int fd,
                           uint32_t binding_id, const struct devmem_tx_iov *iov, size_t n,
                           int flags, struct devmem_err *err)
{
    union {
        char buf[DEVMEM_TX_CBUF_SIZE];
        struct cmsghdr align;
    } cbuf;
    struct iovec iovs[DEVMEM_TX_MAX_IOV];
    struct msghdr msg;
    ssize_t ret;
    int rc;

    rc = devmem_tx_build_msg(&msg, iovs, cbuf.buf, binding_id, iov, n, err);
    if (0 != rc) {
        return rc;
    }
    ret = send(ctx, fd, &msg, flags | MSG_ZEROCOPY);
    if (ret < 0) {
        int e = (int) -ret;

        if (EAGAIN == e || EWOULDBLOCK == e) {
            return devmem_err_set(err, EAGAIN, "tx: socket buffer full");
        }
        return devmem_err_set(err, e, "%s: devmem sendmsg (binding %u): %s%s", who, binding_id,
                              strerror(e),
                              ENODEV == e ? " (the route to the peer leaves through another "
                                            "device than the binding's)" : "");
    }
    return ret;
}

static ssize_t kernel_sendmsg(void *ctx, int fd, const struct msghdr *msg, int flags)
{
    ssize_t ret = sendmsg(fd, msg, flags);

    (void) ctx;
    return ret < 0 ? -errno : ret;
}

ssize_t devmem_tx_send(int fd, uint32_t binding_id, const struct devmem_tx_iov *iov, size_t n,
                       int flags, struct devmem_err *err)
{
    return devmem_tx_send_via(kernel_sendmsg, NULL, "tx", fd, binding_id, iov, n, flags, err);
}

int devmem_tx_parse_completion(const struct msghdr *msg, struct devmem_tx_completion *c,
                               struct devmem_err *err)
{
    const unsigned char *ctrl = (const unsigned char *) msg->msg_control;
    size_t clen = (NULL != ctrl) ? msg->msg_controllen : 0, off = 0;
    struct sock_extended_err ee;

    memset(c, 0, sizeof(*c));
    if (msg->msg_flags & MSG_CTRUNC) {
        return devmem_err_set(err, EPROTO, "tx: error-queue control message truncated");
    }
    while (clen - off >= sizeof(struct cmsghdr)) {
        struct cmsghdr hdr;
        size_t step;

        memcpy(&hdr, ctrl + off, sizeof(hdr));
        if (hdr.cmsg_len < sizeof(hdr) || hdr.cmsg_len > clen - off) {
            return devmem_err_set(err, EPROTO, "tx: error-queue cmsg of bad length %zu",
                                  (size_t) hdr.cmsg_len);
        }
        if (((SOL_IP == hdr.cmsg_level && IP_RECVERR == hdr.cmsg_type) ||
             (SOL_IPV6 == hdr.cmsg_level && IPV6_RECVERR == hdr.cmsg_type)) &&
            hdr.cmsg_len >= CMSG_LEN(sizeof(ee))) {
            memcpy(&ee, ctrl + off + CMSG_LEN(0), sizeof(ee));
            if (SO_EE_ORIGIN_ZEROCOPY != ee.ee_origin) {
                return devmem_err_set(err, EPROTO, "tx: error-queue message of origin %u, not "
                                      "a zerocopy completion", ee.ee_origin);
            }
            if (0 != ee.ee_errno) {
                return devmem_err_set(err, EIO, "tx: zerocopy completion reports %s",
                                      strerror((int) ee.ee_errno));
            }
            c->lo = ee.ee_info;
            c->hi = ee.ee_data;
            c->copied = (ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) ? 1 : 0;
            if ((uint32_t) (c->hi - c->lo) >= (1u << 31)) {
                return devmem_err_set(err, EPROTO, "tx: completion range [%u, %u] is reversed",
                                      c->lo, c->hi);
            }
            return 0;
        }
        step = CMSG_ALIGN(hdr.cmsg_len);
        off = (step > clen - off) ? clen : off + step;
    }
    return devmem_err_set(err, EPROTO, "tx: error-queue message without IP(V6)_RECVERR");
}

int devmem_tx_read_completion_via(devmem_tx_recvmsg_fn recv, void *ctx, const char *who, int fd,
                                  struct devmem_tx_completion *c, struct devmem_err *err)
{
    union {
        char buf[CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6))];
        struct cmsghdr align;
    } cbuf;
    struct msghdr msg;
    ssize_t ret;

    memset(&msg, 0, sizeof(msg));
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = sizeof(cbuf.buf);
    ret = recv(ctx, fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (ret < 0) {
        if (-EAGAIN == ret || -EWOULDBLOCK == ret) {
            return devmem_err_set(err, EAGAIN, "tx: no completion queued");
        }
        return devmem_err_set(err, (int) -ret, "%s: recvmsg(MSG_ERRQUEUE): %s", who,
                              strerror((int) -ret));
    }
    return devmem_tx_parse_completion(&msg, c, err);
}

static ssize_t kernel_recvmsg(void *ctx, int fd, struct msghdr *msg, int flags)
{
    ssize_t ret = recvmsg(fd, msg, flags);

    (void) ctx;
    return ret < 0 ? -errno : ret;
}

int devmem_tx_read_completion(int fd, struct devmem_tx_completion *c, struct devmem_err *err)
{
    return devmem_tx_read_completion_via(kernel_recvmsg, NULL, "tx", fd, c, err);
}

/* ---- tracker ----------------------------------------------------------------------------- */

int devmem_tx_tracker_init(struct devmem_tx_tracker *t, struct devmem_err *err)
{
    memset(t, 0, sizeof(*t));
    t->cap = 256;
    t->ring = calloc(t->cap, sizeof(*t->ring));
    if (NULL == t->ring) {
        return devmem_err_set(err, ENOMEM, "tx: out of memory");
    }
    return 0;
}

void devmem_tx_tracker_fini(struct devmem_tx_tracker *t)
{
    free(t->ring);
    memset(t, 0, sizeof(*t));
}

/* Slot of id first_id + k. The ring starts at index first_id & (cap - 1). */
static struct devmem_tx_slot *slot_at(struct devmem_tx_tracker *t, size_t k)
{
    return &t->ring[(t->first_id + k) & (t->cap - 1)];
}

int devmem_tx_track(struct devmem_tx_tracker *t, size_t bytes, size_t asked, uint64_t cookie,
                    struct devmem_err *err)
{
    struct devmem_tx_slot *s;

    if (0 == bytes) {
        return devmem_err_set(err, EINVAL, "tx: a send of 0 bytes takes no notification id");
    }
    if (t->count == t->cap) {
        size_t ncap = t->cap * 2, k;
        struct devmem_tx_slot *nring = calloc(ncap, sizeof(*nring));

        if (NULL == nring) {
            return devmem_err_set(err, ENOMEM, "tx: out of memory for %zu sends", ncap);
        }
        for (k = 0; k < t->count; k++) {
            nring[(t->first_id + k) & (ncap - 1)] = *slot_at(t, k);
        }
        free(t->ring);
        t->ring = nring;
        t->cap = ncap;
    }
    s = slot_at(t, t->count);
    s->cookie = cookie;
    s->bytes = bytes;
    s->done = 0;
    t->count++;
    t->stats.sends++;
    t->stats.bytes_sent += bytes;
    if (bytes < asked) {
        t->stats.partial_sends++;
    }
    return 0;
}

int devmem_tx_complete(struct devmem_tx_tracker *t, const struct devmem_tx_completion *c,
                       devmem_tx_release_fn release, void *ctx, struct devmem_err *err)
{
    uint32_t k_lo = c->lo - t->first_id, k_hi = c->hi - t->first_id, k;

    t->stats.notifications++;
    if (c->copied) {
        t->stats.copied++;
    }
    if (k_lo > k_hi || k_hi >= t->count) {
        return devmem_err_set(err, EPROTO, "tx: completion [%u, %u] outside the sends in flight "
                              "[%u, +%zu)", c->lo, c->hi, t->first_id, t->count);
    }
    for (k = k_lo; k <= k_hi; k++) {
        struct devmem_tx_slot *s = slot_at(t, k);

        if (s->done) {
            return devmem_err_set(err, EPROTO, "tx: send %u completed twice", t->first_id + k);
        }
        s->done = 1;
    }
    /* Release in order: a region is reusable only when it and all before it are done. */
    while (t->count > 0 && slot_at(t, 0)->done) {
        struct devmem_tx_slot s = *slot_at(t, 0);

        slot_at(t, 0)->done = 0;
        t->first_id++;
        t->count--;
        t->stats.sends_completed++;
        if (NULL != release) {
            release(ctx, s.cookie, s.bytes);
        }
    }
    return 0;
}
