/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Socket helpers and held connections; see btl_devmem_sock.h. Nothing here knows an
 * endpoint: the connection's owner decides what a socket is for.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "btl_devmem_sock.h"

/* ---------------------------------------------------------------- making sockets */

int mca_btl_devmem_bound_socket(const struct mca_btl_devmem_if *itf, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t len = mca_btl_devmem_ip_to_sockaddr(&itf->addr, htons(port), itf->ifindex, &ss);
    int sd = socket(itf->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (sd < 0) {
        return -errno;
    }
    /* an IPv6 module speaks IPv6 only: IPv4 peers reach the interface's IPv4 module */
    if ((AF_INET6 == itf->addr.family
         && 0 != setsockopt(sd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
        || 0 != bind(sd, (struct sockaddr *) &ss, len)) {
        int err = errno;
        close(sd);
        return -err;
    }
    return sd;
}

int mca_btl_devmem_local_port(int sd, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct mca_btl_devmem_ip ip;

    if (0 != getsockname(sd, (struct sockaddr *) &ss, &len)) {
        return -errno;
    }
    if (0 != mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &ss, &ip, port)) {
        return -EAFNOSUPPORT;
    }
    *port = ntohs(*port);
    return 0;
}

int mca_btl_devmem_listen_socket(const struct mca_btl_devmem_if *itf, int *fd, uint16_t *port)
{
    int sd = mca_btl_devmem_bound_socket(itf, 0); /* the kernel picks; the modex tells */
    int rc;

    if (sd < 0) {
        return sd;
    }
    rc = 0 != listen(sd, SOMAXCONN) ? -errno : mca_btl_devmem_local_port(sd, port);
    if (0 != rc) {
        close(sd);
        return rc;
    }
    *fd = sd;
    return 0;
}

void mca_btl_devmem_tune_socket(int sd)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    int one = 1;

    if (c->nodelay) {
        (void) setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (c->sndbuf > 0) {
        (void) setsockopt(sd, SOL_SOCKET, SO_SNDBUF, &c->sndbuf, sizeof(c->sndbuf));
    }
    if (c->rcvbuf > 0) {
        (void) setsockopt(sd, SOL_SOCKET, SO_RCVBUF, &c->rcvbuf, sizeof(c->rcvbuf));
    }
    if (c->keepalive > 0) {
        /* A peer that vanishes without a FIN or a reset (a cut cable, a powered-off node)
         * is otherwise never noticed by a rank that only waits for it. Keepalive probes
         * start after this many quiet seconds and give up after five unanswered ones. The
         * kernel probes only while nothing is in flight, so a peer that is busy elsewhere
         * and not reading is never probed, nor taken for dead. */
        int idle = c->keepalive, intvl = c->keepalive / 5 > 0 ? c->keepalive / 5 : 1, cnt = 5;

        (void) setsockopt(sd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
}

int mca_btl_devmem_connect_socket(const struct mca_btl_devmem_if *itf,
                                  const struct mca_btl_devmem_modex_addr *remote,
                                  uint16_t port_net)
{
    struct sockaddr_storage ss;
    struct mca_btl_devmem_ip ip;
    socklen_t len;
    int sd;

    if (!mca_btl_devmem_modex_ip(remote, &ip) || ip.family != itf->addr.family) {
        return -EAFNOSUPPORT;
    }
    /* leave through this interface: bound to its address */
    if ((sd = mca_btl_devmem_bound_socket(itf, 0)) < 0) {
        return sd;
    }
    mca_btl_devmem_tune_socket(sd);
    /* a link-local peer is reached through the interface we leave by */
    len = mca_btl_devmem_ip_to_sockaddr(&ip, port_net, itf->ifindex, &ss);
    if (0 != connect(sd, (struct sockaddr *) &ss, len) && EINPROGRESS != errno) {
        int err = errno;
        close(sd);
        return -err;
    }
    return sd;
}

/* ---------------------------------------------------------------- accepting */

void mca_btl_devmem_accept_all(int lsd, const char *where, mca_btl_devmem_accepted_fn cb,
                               void *arg)
{
    for (;;) {
        struct sockaddr_storage from;
        socklen_t len = sizeof(from);
        struct mca_btl_devmem_ip addr;
        uint16_t port = 0;
        int sd = accept4(lsd, (struct sockaddr *) &from, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (sd < 0) {
            if (EINTR == errno) {
                continue;
            }
            if (EAGAIN != errno && EWOULDBLOCK != errno) {
                DEVMEM_VERBOSE(5, "accept on %s: %s", where, strerror(errno));
            }
            return;
        }
        if (0 != mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &from, &addr, &port)) {
            close(sd); /* not of a family we listen for */
            continue;
        }
        cb(arg, sd, &addr, ntohs(port));
    }
}

unsigned int mca_btl_devmem_sock_unacked_for(int sd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (sd < 0 || 0 != getsockopt(sd, IPPROTO_TCP, TCP_INFO, &ti, &len) || 0 == ti.tcpi_unacked) {
        return 0;
    }
    return ti.tcpi_last_ack_recv / 1000u;
}

/* ---------------------------------------------------------------- held connections */

OBJ_CLASS_INSTANCE(mca_btl_devmem_held_t, opal_list_item_t, NULL, NULL);

/* A libevent timer: the dispatch lock keeps it out of the socket callbacks' way. */
static void held_timeout(int fd, short flags, void *arg)
{
    mca_btl_devmem_held_t *h = arg;

    mca_btl_devmem_dispatch_lock();
    mca_btl_devmem_held_drop(h, h->expired);
    mca_btl_devmem_dispatch_unlock();
}

static void held_readable(int fd, short flags, void *arg)
{
    mca_btl_devmem_held_t *h = arg;

    h->on_read(h);
}

mca_btl_devmem_held_t *mca_btl_devmem_held_new(opal_list_t *list, int sd,
                                               const struct mca_btl_devmem_ip *addr,
                                               uint16_t port, void *owner, const char *itf,
                                               const char *kind, const char *expired,
                                               mca_btl_devmem_held_read_fn on_read)
{
    int secs = mca_btl_devmem_component.handshake_timeout;
    struct timeval tv = {secs > 0 ? secs : 1, 0};
    char text[MCA_BTL_DEVMEM_IP_STRLEN];
    mca_btl_devmem_held_t *h = OBJ_NEW(mca_btl_devmem_held_t);

    if (NULL == h) {
        close(sd);
        return NULL;
    }
    h->list = list;
    h->sd = sd;
    h->owner = owner;
    h->itf = itf;
    h->kind = kind;
    h->expired = expired;
    h->addr = *addr;
    h->port = port;
    h->on_read = on_read;
    h->got = 0;
    snprintf(h->peer, sizeof(h->peer), AF_INET6 == addr->family ? "[%s]:%u" : "%s:%u",
             mca_btl_devmem_ip_str(addr, text, sizeof(text)), (unsigned) port);
    mca_btl_devmem_watch_init(&h->watch, sd, held_readable, h);
    if (NULL != on_read && 0 != mca_btl_devmem_watch_set(&h->watch, OPAL_EV_READ)) {
        DEVMEM_VERBOSE(5, "cannot watch a %s from %s on %s", kind, h->peer, itf);
        close(sd);
        OBJ_RELEASE(h);
        return NULL;
    }
    opal_list_append(list, &h->super);
    opal_event_evtimer_set(opal_sync_event_base, &h->timer, held_timeout, h);
    opal_event_evtimer_add(&h->timer, &tv);
    return h;
}

void mca_btl_devmem_held_drop(mca_btl_devmem_held_t *h, const char *why)
{
    (void) mca_btl_devmem_watch_set(&h->watch, 0);
    opal_event_del(&h->timer);
    opal_list_remove_item(h->list, &h->super);
    if (h->sd >= 0) {
        close(h->sd);
    }
    if (NULL != why) {
        mca_btl_devmem_component.stats.conn_refused++;
        DEVMEM_VERBOSE(5, "dropped a %s from %s on %s: %s", h->kind, h->peer, h->itf, why);
    }
    OBJ_RELEASE(h);
}

int mca_btl_devmem_held_take(mca_btl_devmem_held_t *h)
{
    int sd = h->sd;

    h->sd = -1;
    mca_btl_devmem_held_drop(h, NULL);
    return sd;
}

void mca_btl_devmem_held_drop_all(opal_list_t *list)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_get_first(list)) && item != opal_list_get_end(list)) {
        mca_btl_devmem_held_drop((mca_btl_devmem_held_t *) item, NULL);
    }
}

bool mca_btl_devmem_sock_default_cc(int family, char *buf, size_t len)
{
    socklen_t l = (socklen_t) len;
    int sd = 0 == len ? -1 : socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok;

    if (sd < 0) {
        return false;
    }
    ok = 0 == getsockopt(sd, IPPROTO_TCP, TCP_CONGESTION, buf, &l) && l > 0;
    close(sd);
    if (ok) {
        buf[(size_t) l < len ? (size_t) l : len - 1] = '\0';
    }
    return ok;
}
