/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Socket helpers and held connections; see btl_devmem_sock.h. Nothing here knows an
 * endpoint: the connection's owner decides what a socket is for.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sockets/btl_devmem_sock.h"

/* ---------------------------------------------------------------- making sockets */

/* reuse: SO_REUSEADDR before the bind (never on a socket for devmem-helperd, which refuses
 * those) */
static int bound_socket(const struct mca_btl_devmem_if *itf, uint16_t port, bool reuse)
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
        || (reuse && 0 != setsockopt(sd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
        || 0 != bind(sd, (struct sockaddr *) &ss, len)) {
        int err = errno;
        close(sd);
        return -err;
    }
    return sd;
}

int mca_btl_devmem_bound_socket(const struct mca_btl_devmem_if *itf, uint16_t port)
{
    return bound_socket(itf, port, false);
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

/* A socket bound to port and listening, or -errno. */
static int listening(const struct mca_btl_devmem_if *itf, uint16_t port, bool reuse)
{
    int sd = bound_socket(itf, port, reuse);

    if (sd >= 0 && 0 != listen(sd, SOMAXCONN)) {
        int err = errno;

        close(sd);
        return -err;
    }
    return sd;
}

int mca_btl_devmem_listen_range(const struct mca_btl_devmem_if *itf, uint16_t want, bool reuse,
                                int *fd, uint16_t *port)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    unsigned int lo = c->port_lo, span = (unsigned int) c->port_hi - lo + 1, start;
    int sd = -EADDRINUSE, err;

    if (0 != want && want >= lo && want <= c->port_hi) {
        sd = listening(itf, want, reuse);
    }
    /* from a place of this process's own, so that a node's ranks seldom try the same */
    start = (unsigned int) getpid() * 7919u % span;
    for (unsigned int i = 0; i < span && -EADDRINUSE == sd; i++) {
        sd = listening(itf, (uint16_t) (lo + (start + i) % span), reuse);
    }
    if (sd < 0) {
        opal_output(0, "btl:devmem: %s: no listen socket in btl_devmem_ports %s: %s", itf->name,
                    c->ports, -EADDRINUSE == sd ? "every port is taken" : strerror(-sd));
        return -EADDRINUSE == sd ? -EADDRNOTAVAIL : sd;
    }
    if (0 != (err = mca_btl_devmem_local_port(sd, port))) {
        close(sd);
        return err;
    }
    *fd = sd;
    return 0;
}

int mca_btl_devmem_listen_socket(const struct mca_btl_devmem_if *itf, uint16_t want, int *fd,
                                 uint16_t *port)
{
    int sd = -1, rc, one = 1;

    if (0 != mca_btl_devmem_component.port_lo) {
        /* a port asked for again may still have the last listener's connections closing */
        if (0 != (rc = mca_btl_devmem_listen_range(itf, want, true, &sd, port))) {
            return rc;
        }
    } else {
        /* 0: the kernel picks, and the modex tells; a port asked for again
         * (prev_record_read) may still have connections of the last listener on it closing */
        sd = listening(itf, want, 0 != want);
        if (-EADDRINUSE == sd && 0 != want) {
            sd = listening(itf, 0, false);
        }
        if (sd < 0) {
            return sd;
        }
        rc = mca_btl_devmem_local_port(sd, port);
    }
    if (0 != rc) {
        close(sd);
        return rc;
    }
    /* what it accepts inherits SO_REUSEADDR: the component's next life in this process binds
     * the port again while those connections may still be closing (prev_record_read) */
    (void) setsockopt(sd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    *fd = sd;
    return 0;
}

void mca_btl_devmem_tune_socket(int sd)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    int one = 1;

    (void) setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (c->sockbuf > 0) {
        (void) setsockopt(sd, SOL_SOCKET, SO_SNDBUF, &c->sockbuf, sizeof(c->sockbuf));
        (void) setsockopt(sd, SOL_SOCKET, SO_RCVBUF, &c->sockbuf, sizeof(c->sockbuf));
    }
    if (c->peer_timeout > 0) {
        /* A peer that vanishes without a FIN or a reset (a cut cable, a powered-off node)
         * is otherwise never noticed by a rank that only waits for it. Keepalive probes
         * start after half the peer timeout quiet and give up after five unanswered ones a
         * tenth apart, so that such a peer counts as lost after about the timeout, as one
         * with data in flight does (btl_devmem_liveness.c). The kernel probes only while
         * nothing is in flight, so a peer that is busy elsewhere and not reading is never
         * probed, nor taken for dead. */
        int idle = c->peer_timeout / 2 > 0 ? c->peer_timeout / 2 : 1;
        int intvl = c->peer_timeout / 10 > 0 ? c->peer_timeout / 10 : 1, cnt = 5;

        (void) setsockopt(sd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        (void) setsockopt(sd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
}

bool mca_btl_devmem_modex_ip(const struct mca_btl_devmem_modex_addr *a, struct mca_btl_devmem_ip *ip)
{
    memset(ip, 0, sizeof(*ip));
    if (MCA_BTL_DEVMEM_MODEX_IPV4 == a->family) {
        ip->family = AF_INET;
        memcpy(&ip->a.v4, a->addr, 4);
        return true;
    }
    if (MCA_BTL_DEVMEM_MODEX_IPV6 == a->family) {
        ip->family = AF_INET6;
        memcpy(&ip->a.v6, a->addr, 16);
        return true;
    }
    return false;
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

/* ---------------------------------------------------------------- descriptors */

static rlim_t nofile_cur = 1024, nofile_free = 1024;

/* Descriptors open now: the entries of /proc/self/fd (the directory's own not counted). */
static rlim_t fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    rlim_t n = 0;

    if (NULL == d) {
        return 0;
    }
    while (NULL != (e = readdir(d))) {
        n += '.' != e->d_name[0];
    }
    closedir(d);
    return n > 0 ? n - 1 : 0;
}

void mca_btl_devmem_nofile_init(void)
{
    struct rlimit rl;
    rlim_t open_now;

    if (0 != getrlimit(RLIMIT_NOFILE, &rl)) {
        return;
    }
    /* a job of many peers needs descriptors: the hard limit is what the admin allows us */
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;

        rl.rlim_cur = rl.rlim_max;
        if (0 == setrlimit(RLIMIT_NOFILE, &rl)) {
            DEVMEM_VERBOSE(10, "raised the descriptor limit (RLIMIT_NOFILE) from %llu to %llu",
                           (unsigned long long) was, (unsigned long long) rl.rlim_cur);
        } else {
            rl.rlim_cur = was; /* an infinite hard limit above the kernel's nr_open */
        }
    }
    nofile_cur = RLIM_INFINITY == rl.rlim_cur ? (rlim_t) 1 << 20 : rl.rlim_cur;
    open_now = fds_open();
    nofile_free = nofile_cur > open_now ? nofile_cur - open_now : 0;
    DEVMEM_VERBOSE(10, "descriptors: limit %llu, %llu open at start; device flows may take %llu",
                   (unsigned long long) nofile_cur, (unsigned long long) open_now,
                   (unsigned long long) (nofile_free / 2));
}

rlim_t mca_btl_devmem_nofile(void)
{
    return nofile_cur;
}

rlim_t mca_btl_devmem_nofile_free_at_init(void)
{
    return nofile_free;
}

/* ---------------------------------------------------------------- accepting */

/* Pauses while accept finds no descriptor: from 10 ms, doubling to 1 s. The listen socket is
 * level-triggered, so without a pause every progress call would fail an accept again. */
#define ACCEPT_PAUSE_MIN_MS 10u
#define ACCEPT_PAUSE_MAX_MS 1000u

static void listener_cb(int lsd, short flags, void *arg);

static void listener_resume(int fd, short flags, void *arg)
{
    struct mca_btl_devmem_listener *l = arg;

    mca_btl_devmem_dispatch_lock(); /* a libevent timer: out of the callbacks' way */
    l->paused = false;
    if (l->fd >= 0 && 0 != mca_btl_devmem_pollset_set(&l->watch, OPAL_EV_READ)) {
        DEVMEM_VERBOSE(1, "cannot watch %s again: new connections wait in its backlog",
                       l->where);
    }
    mca_btl_devmem_dispatch_unlock();
}

void mca_btl_devmem_listener_init(struct mca_btl_devmem_listener *l, const char *where,
                                  mca_btl_devmem_accepted_fn cb, void *arg)
{
    l->fd = -1;
    l->port = 0;
    mca_btl_devmem_pollset_init(&l->watch, -1, listener_cb, l);
    snprintf(l->where, sizeof(l->where), "%s", where);
    l->cb = cb;
    l->arg = arg;
    opal_event_evtimer_set(opal_sync_event_base, &l->resume, listener_resume, l);
    l->paused = false;
    l->pause_ms = ACCEPT_PAUSE_MIN_MS;
    l->held = 0;
}

int mca_btl_devmem_listener_start(struct mca_btl_devmem_listener *l)
{
    mca_btl_devmem_pollset_init(&l->watch, l->fd, listener_cb, l);
    return mca_btl_devmem_pollset_set(&l->watch, OPAL_EV_READ);
}

void mca_btl_devmem_listener_close(struct mca_btl_devmem_listener *l)
{
    (void) mca_btl_devmem_pollset_set(&l->watch, 0);
    if (l->paused) {
        opal_event_del(&l->resume);
        l->paused = false;
    }
    if (l->fd >= 0) {
        close(l->fd);
        l->fd = -1;
    }
}

unsigned int mca_btl_devmem_listener_held_max(void)
{
    rlim_t cur = mca_btl_devmem_nofile();

    return cur / 8 > 16 ? (unsigned int) (cur / 8 < UINT_MAX ? cur / 8 : UINT_MAX) : 16u;
}

/* No descriptor to accept with: stop watching the socket for a while (the connections wait
 * in its backlog, their hellos in their buffers), longer each time in a row. */
static void listener_pause(struct mca_btl_devmem_listener *l, int err)
{
    struct timeval tv = {l->pause_ms / 1000u, (l->pause_ms % 1000u) * 1000};

    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.accept_pauses, 1);
    DEVMEM_VERBOSE(5, "accept on %s: %s; pausing it for %u ms", l->where, strerror(err),
                   l->pause_ms);
    (void) mca_btl_devmem_pollset_set(&l->watch, 0);
    opal_event_evtimer_add(&l->resume, &tv);
    l->paused = true;
    l->pause_ms = l->pause_ms * 2 < ACCEPT_PAUSE_MAX_MS ? l->pause_ms * 2 : ACCEPT_PAUSE_MAX_MS;
}

/* Accept everything waiting on the listener, handing each connection to its callback. */
static void listener_cb(int lsd, short flags, void *arg)
{
    struct mca_btl_devmem_listener *l = arg;

    for (;;) {
        struct sockaddr_storage from;
        socklen_t len = sizeof(from);
        struct mca_btl_devmem_ip addr;
        uint16_t port = 0;
        int sd = accept4(lsd, (struct sockaddr *) &from, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (sd < 0) {
            if (EINTR == errno || ECONNABORTED == errno) {
                continue;
            }
            if (EMFILE == errno || ENFILE == errno || ENOBUFS == errno || ENOMEM == errno) {
                listener_pause(l, errno);
            } else if (EAGAIN != errno && EWOULDBLOCK != errno) {
                DEVMEM_VERBOSE(5, "accept on %s: %s", l->where, strerror(errno));
            }
            return;
        }
        l->pause_ms = ACCEPT_PAUSE_MIN_MS;
        if (0 != mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &from, &addr, &port)) {
            close(sd); /* not of a family we listen for */
            continue;
        }
        l->cb(l->arg, sd, &addr, ntohs(port));
    }
}

/*
 * What TCP_INFO says, by state:
 *   tcpi_unacked        segments sent and not yet acknowledged; in SYN_SENT that is the SYN
 *                       itself (1), whatever has happened to it
 *   tcpi_last_ack_recv  milliseconds since the last acknowledgement came in (the kernel's
 *                       rcv_tstamp). Before the first one (SYN_SENT) the stamp is 0, and the
 *                       field reads as the time since boot plus the jiffies' 5-minute head
 *                       start: a number of minutes that says nothing about the peer
 *   tcpi_state          ESTABLISHED, and the closing states with data still unacknowledged
 *                       (FIN_WAIT1, CLOSE_WAIT, CLOSING, LAST_ACK), have had an ACK from the
 *                       peer, so only there does "unacked for N ms" describe the peer
 * A connect still under way is judged by its own timeout (btl_devmem_handshake_timeout, with
 * retries), never here.
 */
unsigned int mca_btl_devmem_sock_unacked_for(int sd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (sd < 0 || 0 != getsockopt(sd, IPPROTO_TCP, TCP_INFO, &ti, &len) || 0 == ti.tcpi_unacked) {
        return 0;
    }
    switch (ti.tcpi_state) {
    case TCP_ESTABLISHED:
    case TCP_FIN_WAIT1:
    case TCP_CLOSE_WAIT:
    case TCP_CLOSING:
    case TCP_LAST_ACK:
        return ti.tcpi_last_ack_recv / 1000u;
    default: /* not synchronized yet (SYN_SENT, SYN_RECV), or nothing left in flight */
        return 0;
    }
}

/* ---------------------------------------------------------------- held connections */

OBJ_CLASS_INSTANCE(mca_btl_devmem_held_t, opal_list_item_t, NULL, NULL);

/* A libevent timer: the dispatch lock keeps it out of the socket callbacks' way. */
static void held_timeout(int fd, short flags, void *arg)
{
    mca_btl_devmem_held_t *h = arg;

    mca_btl_devmem_dispatch_lock();
    mca_btl_devmem_held_drop(h, MCA_BTL_DEVMEM_HELD_STRANGER, h->expired);
    mca_btl_devmem_dispatch_unlock();
}

int mca_btl_devmem_held_hello(mca_btl_devmem_held_t *h)
{
    ssize_t n = recv(h->sd, (char *) &h->hello + h->got, sizeof(h->hello) - h->got, 0);

    if (n < 0 && (EAGAIN == errno || EINTR == errno)) {
        return 0;
    }
    if (n <= 0) {
        /* nothing said at all: most likely a peer's connect that lost a simultaneous connect
         * (the peer closes it), told apart from strangers */
        char why[96];

        snprintf(why, sizeof(why), "closed after %zu bytes of a hello%s%s", h->got,
                 0 == n ? "" : ": ", 0 == n ? "" : strerror(errno));
        mca_btl_devmem_held_drop(h, 0 == h->got ? MCA_BTL_DEVMEM_HELD_RACE
                                                : MCA_BTL_DEVMEM_HELD_STRANGER, why);
        return -1;
    }
    h->got += (size_t) n;
    return h->got == sizeof(h->hello);
}

static void held_readable(int fd, short flags, void *arg)
{
    mca_btl_devmem_held_t *h = arg;

    h->on_read(h);
}

/* The oldest connection on list that came from listener l. */
static mca_btl_devmem_held_t *oldest_from(opal_list_t *list, struct mca_btl_devmem_listener *l)
{
    mca_btl_devmem_held_t *h;

    OPAL_LIST_FOREACH (h, list, mca_btl_devmem_held_t) {
        if (h->from == l) {
            return h;
        }
    }
    return NULL;
}

mca_btl_devmem_held_t *mca_btl_devmem_held_new(opal_list_t *list, int sd,
                                               const struct mca_btl_devmem_ip *addr,
                                               uint16_t port, void *owner,
                                               struct mca_btl_devmem_listener *from,
                                               const char *itf, const char *kind,
                                               const char *expired,
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
    /* a stranger holding connections open must not take every descriptor: the oldest goes
     * (a peer's connection says hello at once, so the oldest is the likeliest stranger; a
     * peer that was dropped connects again) */
    while (from->held >= mca_btl_devmem_listener_held_max()) {
        mca_btl_devmem_held_t *old = oldest_from(list, from);

        if (NULL == old) {
            break;
        }
        mca_btl_devmem_held_drop(old, MCA_BTL_DEVMEM_HELD_STRANGER,
                                 "too many connections waiting on this port");
    }
    h->list = list;
    h->sd = sd;
    h->owner = owner;
    h->from = from;
    h->itf = itf;
    h->kind = kind;
    h->expired = expired;
    h->addr = *addr;
    h->port = port;
    h->on_read = on_read;
    h->got = 0;
    snprintf(h->peer, sizeof(h->peer), AF_INET6 == addr->family ? "[%s]:%u" : "%s:%u",
             mca_btl_devmem_ip_str(addr, text, sizeof(text)), (unsigned) port);
    mca_btl_devmem_pollset_init(&h->watch, sd, held_readable, h);
    if (NULL != on_read && 0 != mca_btl_devmem_pollset_set(&h->watch, OPAL_EV_READ)) {
        DEVMEM_VERBOSE(5, "cannot watch a %s from %s on %s", kind, h->peer, itf);
        close(sd);
        OBJ_RELEASE(h);
        return NULL;
    }
    from->held++;
    opal_list_append(list, &h->super);
    opal_event_evtimer_set(opal_sync_event_base, &h->timer, held_timeout, h);
    opal_event_evtimer_add(&h->timer, &tv);
    return h;
}

void mca_btl_devmem_held_drop(mca_btl_devmem_held_t *h, enum mca_btl_devmem_held_end end,
                              const char *why)
{
    (void) mca_btl_devmem_pollset_set(&h->watch, 0);
    opal_event_del(&h->timer);
    opal_list_remove_item(h->list, &h->super);
    h->from->held--;
    if (h->sd >= 0) {
        close(h->sd);
    }
    if (MCA_BTL_DEVMEM_HELD_STRANGER == end) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.conn_refused, 1);
    } else if (MCA_BTL_DEVMEM_HELD_RACE == end) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.conn_races, 1);
    }
    if (NULL != why) {
        DEVMEM_VERBOSE(5, "dropped a %s from %s on %s: %s", h->kind, h->peer, h->itf, why);
    }
    OBJ_RELEASE(h);
}

int mca_btl_devmem_held_take(mca_btl_devmem_held_t *h)
{
    int sd = h->sd;

    h->sd = -1;
    mca_btl_devmem_held_drop(h, MCA_BTL_DEVMEM_HELD_QUIET, NULL);
    return sd;
}

void mca_btl_devmem_held_drop_all(opal_list_t *list)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_get_first(list)) && item != opal_list_get_end(list)) {
        mca_btl_devmem_held_drop((mca_btl_devmem_held_t *) item, MCA_BTL_DEVMEM_HELD_QUIET,
                                 NULL);
    }
}
