/*
 * The helper's clients: reading each message with the descriptors that came with it,
 * checking it against the policy and the client's credentials, doing what it asks through
 * the backend, answering, and undoing everything a client holds when its connection closes.
 *
 * A message is read in two steps, header then body, so that a read never reaches into the
 * next message and descriptors belong to the message whose first bytes they came with.
 * A malformed message is answered with the reason and the connection is closed; a request the
 * policy or the kernel refuses is answered with the reason and the connection stays.
 */
#include "config.h"

#include "helperd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "nic.h"

#define HD_HELLO_MS 5000     /* a connection must say hello within this */
#define HD_MSGS_PER_WAKEUP 16 /* then the others get their turn */
#define HD_FDS_READ 8        /* more than any message carries: extra ones are an error */

long hd_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fds(struct hd_client *c)
{
    for (size_t i = 0; i < c->nfds; i++) {
        if (c->fds[i] >= 0) {
            close(c->fds[i]);
        }
    }
    c->nfds = 0;
}

/* Answer; a client that does not read its answers is dropped rather than waited for. */
static void answer(struct helperd *hd, struct hd_client *c, uint16_t type, uint32_t seq,
                   const void *body, size_t len)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    ssize_t n = devmem_helper_build(buf, sizeof(buf), type, seq, body, len), sent;

    (void) hd;
    if (n < 0) {
        hd_log(LOG_ERR, "pid %d: could not build a type %u answer", (int) c->pid, type);
        c->closing = true;
        return;
    }
    do {
        sent = send(c->fd, buf, (size_t) n, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && EINTR == errno);
    if (sent != n) {
        c->closing = true;
    }
}

static void refuse(struct helperd *hd, struct hd_client *c, uint32_t seq,
                   const struct devmem_err *e)
{
    struct devmem_helper_error body = {.code = e->code > 0 && e->code <= 4095 ? e->code : EIO};
    size_t n = strnlen(e->msg, sizeof(body.msg) - 1);

    /* the text goes out as the protocol allows it: printable, one line */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char) e->msg[i];
        body.msg[i] = ch < ' ' || ch >= 0x7f ? '?' : (char) ch;
    }
    hd->refused++;
    hd_log(LOG_NOTICE, "refused pid %d uid %u: %s", (int) c->pid, (unsigned) c->uid, body.msg);
    answer(hd, c, DEVMEM_HELPER_ERROR, seq, &body, sizeof(body));
}

static void protocol_error(struct helperd *hd, struct hd_client *c, uint32_t seq,
                           const struct devmem_err *e)
{
    refuse(hd, c, seq, e);
    c->closing = true;
}

/* ------------------------------------------------------------------ interfaces, users */

static struct hd_iface *iface_get(struct helperd *hd, const struct hd_policy_iface *pol,
                                  unsigned int ifindex)
{
    struct hd_iface *itf;

    for (itf = hd->ifaces; NULL != itf; itf = itf->next) {
        if (0 == strcmp(itf->name, pol->name)) {
            itf->ifindex = ifindex; /* the interface may have been recreated */
            return itf;
        }
    }
    if (NULL == (itf = calloc(1, sizeof(*itf)))) {
        return NULL;
    }
    strcpy(itf->name, pol->name);
    itf->ifindex = ifindex;
    itf->pol = pol;
    itf->next = hd->ifaces;
    hd->ifaces = itf;
    return itf;
}

/* Nothing bound on itf any more: put the NIC back as it was (policy: restore). */
static void iface_idle(struct helperd *hd, struct hd_iface *itf)
{
    if (0 != itf->nbindings) {
        return;
    }
    if (hd->policy.restore && (itf->hds_set || itf->rss_set || itf->ntuple_set)) {
        hd->be->restore(itf);
        hd_log(LOG_INFO, "%s: last binding gone, NIC settings restored", itf->name);
        itf->hds_set = itf->rss_set = itf->ntuple_set = false;
    }
}

struct usage {
    unsigned int bindings, rules;
    uint64_t bytes;
};

static struct usage user_usage(const struct helperd *hd, uid_t uid)
{
    struct usage u = {0, 0, 0};

    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        if (c->uid != uid) {
            continue;
        }
        for (const struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            u.bindings++;
            u.rules += b->has_rule ? 1 : 0;
            u.bytes += b->bytes;
        }
    }
    return u;
}

/* A binding on itf held by a user other than uid (TX bindings only when tx_only). */
static const struct hd_binding *other_user(const struct helperd *hd, const struct hd_iface *itf,
                                           uid_t uid, bool tx_only)
{
    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        if (c->uid == uid) {
            continue;
        }
        for (const struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            if (b->itf == itf && (!tx_only || !b->rx)) {
                return b;
            }
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ checks */

/* The interface is in the policy and exists on this host. */
static int check_iface(struct helperd *hd, const char *ifname, const struct hd_policy_iface **pol,
                       unsigned int *ifindex, struct devmem_err *err)
{
    const struct hd_policy *p = &hd->policy;

    if (NULL == (*pol = hd_policy_iface(p, ifname))) {
        return devmem_err_set(err, EACCES, "refused by policy (interface, %s): %s is not an "
                              "interface the helper may bind on",
                              '\0' != p->path[0] ? p->path : "no configuration file", ifname);
    }
    if (0 == (*ifindex = if_nametoindex(ifname))) {
        return devmem_err_set(err, ENODEV, "no interface %s on this host: %s", ifname,
                              strerror(errno));
    }
    return 0;
}

/* The limits leave room for one more binding of `bytes` (with a rule when rx), and the TX
 * sharing rule holds. */
static int check_limits(struct helperd *hd, struct hd_client *c, const char *ifname, bool rx,
                        uint64_t bytes, struct devmem_err *err)
{
    const struct hd_policy *p = &hd->policy;
    struct usage u = user_usage(hd, c->uid);
    char where[300];

    if (u.bindings + 1 > p->max_bindings) {
        return devmem_err_set(err, EDQUOT, "refused by policy (max-bindings %u, %s): uid %u "
                              "holds %u bindings", p->max_bindings,
                              hd_policy_where(p, p->max_bindings_at, where, sizeof(where)),
                              (unsigned) c->uid, u.bindings);
    }
    if (rx && u.rules + 1 > p->max_rules) {
        return devmem_err_set(err, EDQUOT, "refused by policy (max-rules %u, %s): uid %u holds "
                              "%u steering rules", p->max_rules,
                              hd_policy_where(p, p->max_rules_at, where, sizeof(where)),
                              (unsigned) c->uid, u.rules);
    }
    if (bytes > p->max_bytes || u.bytes > p->max_bytes - bytes) {
        return devmem_err_set(err, EDQUOT, "refused by policy (max-bytes %llu, %s): uid %u has "
                              "%llu bytes bound and asks for %llu more",
                              (unsigned long long) p->max_bytes,
                              hd_policy_where(p, p->max_bytes_at, where, sizeof(where)),
                              (unsigned) c->uid, (unsigned long long) u.bytes,
                              (unsigned long long) bytes);
    }
    if (!p->tx_shared) {
        /* A TX binding id is global and the kernel does not check who sends with it: while
         * one exists, no other user may share the device, and the reverse. */
        for (struct hd_iface *itf = hd->ifaces; NULL != itf; itf = itf->next) {
            const struct hd_binding *b;

            if (0 != strcmp(itf->name, ifname)) {
                continue;
            }
            if (NULL != (b = other_user(hd, itf, c->uid, rx))) {
                return devmem_err_set(err, EBUSY, "refused by policy (tx-shared no, %s): uid %u "
                                      "holds a%s binding on %s, and a TX binding lets any "
                                      "local process that guesses its id send from its memory",
                                      hd_policy_where(p, p->tx_shared_at, where, sizeof(where)),
                                      (unsigned) b->owner->uid, b->rx ? "n RX" : " TX", ifname);
            }
        }
    }
    return 0;
}

/* The device-flow socket: a listening TCP socket bound to a port. Its port is the only one
 * the client may steer; the protocol has no field to name another. */
static int check_listen_socket(int fd, struct devmem_nic_flow *flow, struct devmem_err *err)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int v = 0;
    socklen_t vl = sizeof(v);

    memset(flow, 0, sizeof(*flow));
    if (0 != getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl)) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is %s", ENOTSOCK == errno
                              ? "not a socket" : strerror(errno));
    }
    if (IPPROTO_TCP != v) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is another kind of socket");
    }
    vl = sizeof(v);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) || 1 != v) {
        return devmem_err_set(err, EINVAL, "the socket passed for steering is not listening, "
                              "so its port is not the client's to steer");
    }
    if (0 != getsockname(fd, (struct sockaddr *) &ss, &len)) {
        return devmem_err_set(err, errno, "getsockname on the passed socket: %s",
                              strerror(errno));
    }
    if (AF_INET == ss.ss_family) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *) &ss;
        flow->family = AF_INET;
        flow->dst.v4 = sin->sin_addr;
        flow->dst_port = ntohs(sin->sin_port);
    } else if (AF_INET6 == ss.ss_family) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &ss;
        flow->family = AF_INET6;
        flow->dst.v6 = sin6->sin6_addr;
        flow->dst_port = ntohs(sin6->sin6_port);
    } else {
        return devmem_err_set(err, EAFNOSUPPORT, "the passed socket is neither IPv4 nor IPv6");
    }
    if (0 == flow->dst_port) {
        return devmem_err_set(err, EINVAL, "the passed socket has no port");
    }
    return 0;
}

/* nqueues free queues next to each other in the policy's range, or -EBUSY. */
static int pick_queues(const struct hd_iface *itf, unsigned int n, unsigned int *first)
{
    unsigned int span = itf->pol->qhi - itf->pol->qlo + 1;

    for (unsigned int i = 0; i + n <= span; i++) {
        bool free_run = true;
        for (unsigned int j = i; j < i + n && free_run; j++) {
            free_run = 0 == (itf->busy & (1ull << j));
        }
        if (free_run) {
            *first = itf->pol->qlo + i;
            return 0;
        }
    }
    return -EBUSY;
}

static uint64_t queue_bits(const struct hd_iface *itf, unsigned int first, unsigned int n)
{
    uint64_t bits = 0;

    for (unsigned int j = 0; j < n; j++) {
        bits |= 1ull << (first - itf->pol->qlo + j);
    }
    return bits;
}

/* ------------------------------------------------------------------ requests */

static struct hd_binding *binding_new(struct hd_client *c, struct hd_iface *itf, bool rx)
{
    struct hd_binding *b = calloc(1, sizeof(*b));

    if (NULL != b) {
        b->rx = rx;
        b->itf = itf;
        b->owner = c;
        b->listen_fd = -1;
    }
    return b;
}

static void binding_add(struct hd_client *c, struct hd_binding *b)
{
    b->next = c->bindings;
    c->bindings = b;
    b->itf->nbindings++;
    b->itf->nrules += b->has_rule ? 1 : 0;
    b->itf->busy |= b->rx ? queue_bits(b->itf, b->first_queue, b->nqueues) : 0;
}

/* Undo one binding: its rule, the binding, its queues; the NIC when it was the last. */
static void binding_release(struct helperd *hd, struct hd_binding *b)
{
    struct hd_iface *itf = b->itf;

    if (b->has_rule) {
        hd->be->rule_del(itf, b->rule_id);
        itf->nrules--;
    }
    hd->be->unbind(itf, b->kstate);
    if (b->rx) {
        itf->busy &= ~queue_bits(itf, b->first_queue, b->nqueues);
    }
    if (b->listen_fd >= 0) {
        close(b->listen_fd);
    }
    itf->nbindings--;
    hd_log(LOG_INFO, "pid %d uid %u: released %s binding %u on %s", (int) b->owner->pid,
           (unsigned) b->owner->uid, b->rx ? "RX" : "TX", b->id, itf->name);
    free(b);
    iface_idle(hd, itf);
}

static int do_bind_rx(struct helperd *hd, struct hd_client *c,
                      const struct devmem_helper_bind_rx *req, struct devmem_helper_reply *reply,
                      struct devmem_err *err)
{
    const struct hd_policy_iface *pol;
    struct devmem_nic_flow flow;
    struct hd_binding *b = NULL;
    struct hd_iface *itf;
    unsigned int ifindex, n_rx = 0, first = 0;
    uint64_t bytes = 0;
    int rc;

    if (0 != (rc = check_iface(hd, req->ifname, &pol, &ifindex, err))
        || 0 != (rc = check_listen_socket(c->fds[1], &flow, err))) {
        return rc;
    }
    if (NULL == (itf = iface_get(hd, pol, ifindex)) || NULL == (b = binding_new(c, itf, true))) {
        return devmem_err_set(err, ENOMEM, "helper: out of memory");
    }
    /* the kernel's verdict on the device is the answer that matters most: before the fd
     * (which may be a stand-in where the rank has no dmabuf), after the counted limits */
    if (0 != (rc = check_limits(hd, c, req->ifname, true, 0, err))
        || 0 != (rc = hd->be->probe_rx(itf, err))
        || 0 != (rc = hd->be->check_dmabuf(c->fds[0], &bytes, err))
        || 0 != (rc = check_limits(hd, c, req->ifname, true, bytes, err))) {
        goto fail;
    }
    for (const struct hd_client *o = hd->clients; NULL != o; o = o->next) {
        for (const struct hd_binding *ob = o->bindings; NULL != ob; ob = ob->next) {
            if (ob->itf == itf && ob->rx && ob->port == flow.dst_port) {
                rc = devmem_err_set(err, EADDRINUSE, "port %u on %s is already steered (binding "
                                    "%u)", (unsigned) flow.dst_port, itf->name, ob->id);
                goto fail;
            }
        }
    }
    if (0 != (rc = hd->be->rx_queues(itf, &n_rx, err))) {
        goto fail;
    }
    if (pol->qhi >= n_rx) {
        rc = devmem_err_set(err, ERANGE, "the policy's queues %u-%u on %s (%s:%d) go past its %u "
                            "RX queues", pol->qlo, pol->qhi, itf->name, hd->policy.path,
                            pol->at.line, n_rx);
        goto fail;
    }
    if (0 != pick_queues(itf, req->nqueues, &first)) {
        rc = devmem_err_set(err, EBUSY, "refused by policy (interface, %s:%d): no %u free "
                            "queue(s) next to each other in %u-%u on %s", hd->policy.path,
                            pol->at.line, req->nqueues, pol->qlo, pol->qhi, itf->name);
        goto fail;
    }
    if (0 != (rc = hd->be->prepare_rx(itf, err))) {
        goto fail;
    }
    rc = hd->be->bind_rx(itf, c->fds[0], first, req->nqueues, &b->id, &b->kstate, err);
    if (0 != rc) {
        goto fail;
    }
    flow.queue = first;
    rc = hd->be->rule_add(itf, &flow, &b->rule_id, err);
    if (0 != rc) {
        hd->be->unbind(itf, b->kstate);
        goto fail;
    }
    b->has_rule = true;
    b->first_queue = first;
    b->nqueues = req->nqueues;
    b->port = flow.dst_port;
    b->bytes = bytes;
    /* hold the socket while the rule stands, so that its port cannot pass to another
     * process that would then receive into this client's memory */
    b->listen_fd = c->fds[1];
    c->fds[1] = -1;
    binding_add(c, b);
    reply->binding_id = b->id;
    reply->first_queue = first;
    reply->nqueues = req->nqueues;
    reply->rule_id = b->rule_id;
    hd_log(LOG_INFO, "pid %d uid %u: RX binding %u on %s queues %u-%u, port %u steered "
           "(rule %u), %llu bytes", (int) c->pid, (unsigned) c->uid, b->id, itf->name, first,
           first + req->nqueues - 1, (unsigned) b->port, b->rule_id,
           (unsigned long long) bytes);
    return 0;
fail:
    free(b);
    iface_idle(hd, itf);
    return rc;
}

static int do_bind_tx(struct helperd *hd, struct hd_client *c,
                      const struct devmem_helper_bind_tx *req, struct devmem_helper_reply *reply,
                      struct devmem_err *err)
{
    const struct hd_policy_iface *pol;
    struct hd_binding *b;
    struct hd_iface *itf;
    unsigned int ifindex;
    uint64_t bytes = 0;
    int rc;

    if (0 != (rc = check_iface(hd, req->ifname, &pol, &ifindex, err))
        || 0 != (rc = hd->be->check_dmabuf(c->fds[0], &bytes, err))
        || 0 != (rc = check_limits(hd, c, req->ifname, false, bytes, err))) {
        return rc;
    }
    if (NULL == (itf = iface_get(hd, pol, ifindex)) || NULL == (b = binding_new(c, itf, false))) {
        return devmem_err_set(err, ENOMEM, "helper: out of memory");
    }
    if (0 != (rc = hd->be->bind_tx(itf, c->fds[0], &b->id, &b->kstate, err))) {
        free(b);
        return rc;
    }
    b->bytes = bytes;
    binding_add(c, b);
    reply->binding_id = b->id;
    hd_log(LOG_INFO, "pid %d uid %u: TX binding %u on %s, %llu bytes", (int) c->pid,
           (unsigned) c->uid, b->id, itf->name, (unsigned long long) bytes);
    return 0;
}

static int do_release(struct helperd *hd, struct hd_client *c, uint32_t id,
                      struct devmem_err *err)
{
    for (struct hd_binding **pb = &c->bindings; NULL != *pb; pb = &(*pb)->next) {
        struct hd_binding *b = *pb;
        if (b->id == id) {
            *pb = b->next;
            binding_release(hd, b);
            return 0;
        }
    }
    return devmem_err_set(err, ENOENT, "binding %u is not held by this connection", id);
}

static void handle(struct helperd *hd, struct hd_client *c, const struct devmem_helper_msg *m)
{
    struct devmem_helper_reply reply;
    struct devmem_err e;
    int rc = 0;

    memset(&reply, 0, sizeof(reply));
    devmem_err_clear(&e);
    if (!c->hello && DEVMEM_HELPER_HELLO != m->type) {
        devmem_err_set(&e, EPROTO, "helper protocol: the first message must be hello");
        protocol_error(hd, c, m->seq, &e);
        return;
    }
    switch (m->type) {
    case DEVMEM_HELPER_HELLO:
        if (c->hello) {
            devmem_err_set(&e, EPROTO, "helper protocol: hello twice");
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        if (m->body.hello.min_version > DEVMEM_HELPER_VERSION
            || m->body.hello.max_version < DEVMEM_HELPER_VERSION) {
            devmem_err_set(&e, EPROTO, "helper protocol: the client speaks versions %u-%u, this "
                           "helper speaks %d", m->body.hello.min_version,
                           m->body.hello.max_version, DEVMEM_HELPER_VERSION);
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        if (0 != hd_policy_check_user(&hd->policy, c->uid, c->gid, &e)) {
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        c->hello = true;
        reply.version = DEVMEM_HELPER_VERSION;
        break;
    case DEVMEM_HELPER_BIND_RX:
        rc = do_bind_rx(hd, c, &m->body.bind_rx, &reply, &e);
        break;
    case DEVMEM_HELPER_BIND_TX:
        rc = do_bind_tx(hd, c, &m->body.bind_tx, &reply, &e);
        break;
    case DEVMEM_HELPER_RELEASE:
        rc = do_release(hd, c, m->body.release.binding_id, &e);
        break;
    case DEVMEM_HELPER_STATUS: {
        static char text[DEVMEM_HELPER_BODY_MAX];
        hd_status_text(hd, c, text, sizeof(text));
        hd->served++;
        answer(hd, c, DEVMEM_HELPER_STATUS_TEXT, m->seq, text, strlen(text) + 1);
        return;
    }
    default:
        devmem_err_set(&e, EPROTO, "helper protocol: type %u is not a request", m->type);
        protocol_error(hd, c, m->seq, &e);
        return;
    }
    if (0 != rc) {
        refuse(hd, c, m->seq, &e);
        return;
    }
    hd->served++;
    answer(hd, c, DEVMEM_HELPER_REPLY, m->seq, &reply, sizeof(reply));
}

/* ------------------------------------------------------------------ connections */

void hd_client_accept(struct helperd *hd, int cfd)
{
    struct hd_client *c = calloc(1, sizeof(*c));
    struct ucred cred;
    socklen_t len = sizeof(cred);
    const struct hd_policy *p = &hd->policy;
    unsigned int mine = 0;
    struct devmem_err e;
    char where[300];

    if (NULL == c || 0 != getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
        hd_log(LOG_ERR, "a connection without credentials (%s): closed",
               NULL == c ? "out of memory" : strerror(errno));
        free(c);
        close(cfd);
        return;
    }
    c->fd = cfd;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->accepted_ms = hd_now_ms();
    for (const struct hd_client *o = hd->clients; NULL != o; o = o->next) {
        mine += o->uid == c->uid;
    }
    devmem_err_clear(&e);
    if (hd->nclients >= p->max_clients) {
        devmem_err_set(&e, EAGAIN, "refused by policy (max-clients %u, %s): the helper serves "
                       "%u connections", p->max_clients,
                       hd_policy_where(p, p->max_clients_at, where, sizeof(where)),
                       hd->nclients);
    } else if (mine >= p->max_clients_per_user) {
        devmem_err_set(&e, EAGAIN, "refused by policy (max-clients-per-user %u, %s): uid %u has "
                       "%u connections", p->max_clients_per_user,
                       hd_policy_where(p, p->max_clients_per_user_at, where, sizeof(where)),
                       (unsigned) c->uid, mine);
    }
    if (0 != e.code) {
        refuse(hd, c, 0, &e);
        hd->dropped++;
        close(cfd);
        free(c);
        return;
    }
    c->next = hd->clients;
    hd->clients = c;
    hd->nclients++;
    hd_log(LOG_DEBUG, "connection from pid %d uid %u", (int) c->pid, (unsigned) c->uid);
}

void hd_client_drop(struct helperd *hd, struct hd_client *c, const char *why)
{
    unsigned int n = 0;

    for (struct hd_client **pc = &hd->clients; NULL != *pc; pc = &(*pc)->next) {
        if (*pc == c) {
            *pc = c->next;
            break;
        }
    }
    while (NULL != c->bindings) {
        struct hd_binding *b = c->bindings;
        c->bindings = b->next;
        binding_release(hd, b);
        n++;
    }
    hd_log(n > 0 ? LOG_INFO : LOG_DEBUG, "pid %d uid %u: connection closed (%s), %u binding(s) "
           "undone", (int) c->pid, (unsigned) c->uid, why, n);
    close_fds(c);
    close(c->fd);
    hd->nclients--;
    free(c);
}

void hd_clients_expire(struct helperd *hd, long now)
{
    struct hd_client *c = hd->clients;

    while (NULL != c) {
        struct hd_client *next = c->next;
        if (!c->hello && now - c->accepted_ms > HD_HELLO_MS) {
            hd->dropped++;
            hd_client_drop(hd, c, "no hello in time");
        }
        c = next;
    }
}

/* Take the descriptors a read brought; they must come with a message's first bytes. */
static int take_fds(struct hd_client *c, struct msghdr *msg, bool at_start,
                    struct devmem_err *err)
{
    int rc = 0;

    if (msg->msg_flags & MSG_CTRUNC) {
        rc = devmem_err_set(err, EPROTO, "helper protocol: more descriptors than a message "
                            "takes");
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); NULL != cm; cm = CMSG_NXTHDR(msg, cm)) {
        size_t n;

        if (SOL_SOCKET != cm->cmsg_level || SCM_RIGHTS != cm->cmsg_type) {
            continue;
        }
        n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (0 == rc && at_start && c->nfds < DEVMEM_HELPER_FDS_MAX) {
                c->fds[c->nfds++] = fd;
                continue;
            }
            close(fd);
            if (0 == rc && at_start) {
                rc = devmem_err_set(err, EPROTO, "helper protocol: more than %d descriptors "
                                    "with one message", DEVMEM_HELPER_FDS_MAX);
            } else if (0 == rc) {
                rc = devmem_err_set(err, EPROTO, "helper protocol: descriptors in the middle "
                                    "of a message");
            }
        }
    }
    return rc;
}

int hd_client_readable(struct helperd *hd, struct hd_client *c)
{
    for (int handled = 0; handled < HD_MSGS_PER_WAKEUP && !c->closing;) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * HD_FDS_READ)];
            struct cmsghdr align;
        } ctl;
        struct iovec iov;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof(ctl.buf)};
        struct devmem_helper_msg m;
        struct devmem_err e;
        uint32_t seq = 0;
        ssize_t n, used;

        if (0 == c->need) {
            c->need = sizeof(struct devmem_helper_hdr);
        }
        iov.iov_base = c->in + c->have;
        iov.iov_len = c->need - c->have;
        n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
            return 0;
        }
        if (n <= 0) {
            return -1; /* closed (0), or gone (ECONNRESET) */
        }
        devmem_err_clear(&e);
        if (0 != take_fds(c, &msg, 0 == c->have, &e)) {
            protocol_error(hd, c, 0, &e);
            break;
        }
        c->have += (size_t) n;
        if (c->have < c->need) {
            continue;
        }
        if (c->have >= sizeof(struct devmem_helper_hdr)) {
            memcpy(&seq, c->in + offsetof(struct devmem_helper_hdr, seq), sizeof(seq));
        }
        used = devmem_helper_parse(c->in, c->have, c->nfds, &m, &e);
        if (used < 0) {
            protocol_error(hd, c, seq, &e);
            break;
        }
        if (0 == used) { /* a good header: now its body */
            struct devmem_helper_hdr h;
            memcpy(&h, c->in, sizeof(h));
            c->need = sizeof(h) + h.length;
            continue;
        }
        handle(hd, c, &m);
        handled++;
        close_fds(c);
        c->have = c->need = 0;
    }
    return c->closing ? -1 : 0;
}
