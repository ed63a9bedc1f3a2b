/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What each request does: the checks a bind or release must pass (the policy's interface,
 * limits and TX sharing; the passed socket and dmabuf), the choice of queues, the backend's
 * NIC steps, and the bookkeeping of interfaces and bindings that undoes them.
 * Every refusal says which rule or call refused. serve.c reads the messages and answers.
 */
#include "config.h"

#include "helperd.h"

#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <syslog.h>
#include <unistd.h>

#include "nic.h"

/* ------------------------------------------------------------------ interfaces, users */

static struct hd_iface *iface_find(const struct helperd *hd, const char *name)
{
    for (struct hd_iface *itf = hd->ifaces; NULL != itf; itf = itf->next) {
        if (0 == strcmp(itf->name, name)) {
            return itf;
        }
    }
    return NULL;
}

static struct hd_iface *iface_get(struct helperd *hd, const struct hd_policy_iface *pol,
                                  unsigned int ifindex)
{
    struct hd_iface *itf = iface_find(hd, pol->name);

    if (NULL != itf) {
        itf->ifindex = ifindex; /* the interface may have been recreated */
        return itf;
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

/* Nothing bound on itf any more: its NIC settings go back HD_RESTORE_GRACE_MS later (most
 * drivers restart queues to change them, which stops everyone's traffic for a moment, and
 * one user's bind and release in a loop must not do that to the node over and over). */
#define HD_RESTORE_GRACE_MS 30000
static void iface_idle(struct hd_iface *itf)
{
    if (0 == itf->nbindings) {
        itf->idle_since_ms = hd_now_ms();
    }
}

void hd_ifaces_restore(struct helperd *hd, bool now)
{
    for (struct hd_iface *itf = hd->ifaces; NULL != itf; itf = itf->next) {
        if (0 != itf->nbindings || !hd->policy.restore
            || !(itf->hds_set || itf->rss_set || itf->ntuple_set || itf->rxbuf_set)
            || (!now && hd_now_ms() - itf->idle_since_ms < HD_RESTORE_GRACE_MS)) {
            continue;
        }
        hd->be->restore(itf);
        hd_log(LOG_INFO, "%s: no binding for %s, NIC settings restored", itf->name,
               now ? "the helper stopping" : "30 s");
        itf->hds_set = itf->rss_set = itf->ntuple_set = itf->rxbuf_set = false;
    }
}

void hd_ifaces_check(struct helperd *hd)
{
    for (size_t i = 0; i < hd->policy.nifaces; i++) {
        const struct hd_policy_iface *pol = &hd->policy.ifaces[i];
        unsigned int ifindex = 0 != pol->rx_buf_len ? if_nametoindex(pol->name) : 0;
        struct hd_iface *itf;

        /* one not there yet is checked when a rank first asks for it */
        if (0 != pol->rx_buf_len && 0 != ifindex && NULL != (itf = iface_get(hd, pol, ifindex))) {
            hd->be->check_iface(itf);
        }
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
    const struct hd_iface *itf = iface_find(hd, ifname);
    const struct hd_binding *b = NULL;
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
    if (!rx && !p->allow_tx) {
        return devmem_err_set(err, EACCES, "refused by policy (allow-tx no, %s): no TX bindings "
                              "on this node", hd_policy_where(p, p->allow_tx_at, where,
                                                              sizeof(where)));
    }
    /* A TX binding id is global and the kernel does not check who sends with it: a user's
     * ranks holding ids of their own would be one wrong number away from sending another
     * user's memory. So TX bindings of two users never share a device; RX bindings give no
     * way to send and are not held back, nor is root. */
    if (!rx && !p->tx_shared && 0 != c->uid && NULL != itf
        && NULL != (b = other_user(hd, itf, c->uid, true))) {
        return devmem_err_set(err, EBUSY, "refused by policy (tx-shared no, %s): uid %u holds "
                              "a TX binding on %s, and a TX binding lets any local process "
                              "that guesses its id send from its memory",
                              hd_policy_where(p, p->tx_shared_at, where, sizeof(where)),
                              (unsigned) b->owner->uid, ifname);
    }
    return 0;
}

/*
 * Queues of the policy's range that steering rules point to which no binding of this helper
 * made: left by a helper that was killed (the kernel dropped its bindings, not its rules), or
 * an administrator's. Flows those rules steer would land in whoever binds the queue next.
 */
#define HD_RULES_SCAN 512

/* "5-6,9": the queues of mask (bit i: queue qlo + i), for the log */
struct queue_text {
    char s[96];
};
static struct queue_text queue_list(const struct hd_iface *itf, uint64_t mask)
{
    struct queue_text t = {""};
    size_t len = 0;

    for (unsigned int i = 0; i < 64 && len < sizeof(t.s) - 12; i++) {
        unsigned int j = i;

        if (!(mask >> i & 1)) {
            continue;
        }
        while (j + 1 < 64 && (mask >> (j + 1) & 1)) {
            j++;
        }
        if (j > i) {
            len += (size_t) snprintf(t.s + len, sizeof(t.s) - len, "%s%u-%u", len ? "," : "",
                                     itf->pol->qlo + i, itf->pol->qlo + j);
        } else {
            len += (size_t) snprintf(t.s + len, sizeof(t.s) - len, "%s%u", len ? "," : "",
                                     itf->pol->qlo + i);
        }
        i = j;
    }
    return t;
}
static int foreign_queues(struct helperd *hd, uid_t asker, struct hd_iface *itf,
                          uint64_t *mask, struct devmem_err *err)
{
    static struct devmem_nic_rule rules[HD_RULES_SCAN];
    size_t n = 0;
    int rc = hd->be->rules(itf, rules, HD_RULES_SCAN, &n, err);

    *mask = 0;
    if (0 != rc) {
        return rc;
    }
    /* a rule that would not go is in this list until it is gone: the scan decides */
    itf->stuck = 0;
    if (n > HD_RULES_SCAN) {
        return devmem_err_set(err, E2BIG, "%s has %zu steering rules, more than the %d the "
                              "helper checks for strays", itf->name, n, HD_RULES_SCAN);
    }
    for (size_t i = 0; i < n; i++) {
        bool ours = false;
        uint64_t theirs = 0;

        if (rules[i].drop) {
            continue;
        }
        for (const struct hd_client *c = hd->clients; NULL != c && !ours; c = c->next) {
            for (const struct hd_binding *b = c->bindings; NULL != b && !ours; b = b->next) {
                ours = b->itf == itf && b->has_rule && b->rule_id == rules[i].location;
            }
        }
        if (ours) {
            continue;
        }
        if (0 != rules[i].rss_ctx) {
            struct devmem_err e;

            /* a rule into an RSS context lands on every queue of the context's table */
            if (0 != hd->be->ctx_queues(itf, rules[i].rss_ctx, &theirs, &e)) {
                hd_log_user(asker, LOG_WARNING, "%s: rule %u steers into RSS context %u, whose "
                            "queues could not be read (%s): taken as none of the range",
                            itf->name, rules[i].location, rules[i].rss_ctx, e.msg);
            }
        } else if (rules[i].queue >= itf->pol->qlo && rules[i].queue <= itf->pol->qhi) {
            theirs = 1ull << (rules[i].queue - itf->pol->qlo);
        }
        if (0 == theirs) {
            continue;
        }
        *mask |= theirs;
        if (0 != rules[i].rss_ctx) {
            hd_log_user(asker, LOG_WARNING, "%s: rule %u steers into RSS context %u (queues %s), "
                        "and no binding of this helper made it: those queues stay unused until "
                        "the rule is deleted (ethtool -N %s delete %u)", itf->name,
                        rules[i].location, rules[i].rss_ctx, queue_list(itf, theirs).s,
                        itf->name, rules[i].location);
        } else {
            hd_log_user(asker, LOG_WARNING, "%s: rule %u steers to queue %u, and no binding of "
                        "this helper made it: that queue stays unused until the rule is deleted "
                        "(ethtool -N %s delete %u)", itf->name, rules[i].location,
                        rules[i].queue, itf->name, rules[i].location);
        }
    }
    return 0;
}

/* nqueues free queues next to each other in the policy's range, or -EBUSY. */
static int pick_queues(const struct hd_iface *itf, unsigned int n, uint64_t foreign,
                       unsigned int *first)
{
    unsigned int span = itf->pol->qhi - itf->pol->qlo + 1;

    for (unsigned int i = 0; i + n <= span; i++) {
        bool free_run = true;
        for (unsigned int j = i; j < i + n && free_run; j++) {
            free_run = 0 == ((itf->busy | itf->stuck | foreign) & (1ull << j));
        }
        if (free_run) {
            *first = itf->pol->qlo + i;
            return 0;
        }
    }
    return -EBUSY;
}

/* How many queues a bind-rx gets (0: none free), the first in *first. Exactly what it asked
 * for, or, when the asker takes fewer, its share of the policy's range among the ranks that
 * will ask on this NIC (at least one, at most max-queues), down to the longest free run:
 * so that a node's ranks all fit, and none takes every queue before the next one asks. */
static unsigned int grant_queues(const struct helperd *hd, const struct hd_iface *itf,
                                 const struct devmem_helper_bind_rx *req, uint64_t foreign,
                                 unsigned int room, unsigned int *first)
{
    unsigned int span = itf->pol->qhi - itf->pol->qlo + 1;
    unsigned int sharers = 0 != req->sharers ? req->sharers : 1;
    unsigned int n = req->nqueues;

    if (!(req->flags & DEVMEM_HELPER_RX_FEWER)) {
        return 0 == pick_queues(itf, n, foreign, first) ? n : 0;
    }
    n = n < span / sharers ? n : span / sharers;
    n = n < hd->policy.max_queues ? n : hd->policy.max_queues;
    n = n < room ? n : room;
    for (n = n > 0 ? n : 1; n > 0; n--) {
        if (0 == pick_queues(itf, n, foreign, first)) {
            return n;
        }
    }
    return 0;
}

/*
 * user-share: while another user holds queues of an interface, or asked for some within
 * HD_WANT_MS, one user may hold at most its share of the policy's range. A node given to one
 * job keeps every queue; a node shared by users cannot be taken whole by the first. Records
 * uid's ask. Returns the queues uid may still take (UINT_MAX: no limit), the other in *who.
 */
#define HD_WANT_MS 60000
static unsigned int share_room(struct hd_iface *itf, const struct helperd *hd, uid_t uid,
                               uid_t *who)
{
    unsigned int span = itf->pol->qhi - itf->pol->qlo + 1, held = 0, share;
    const size_t nask = sizeof(itf->askers) / sizeof(itf->askers[0]);
    long now = hd_now_ms();
    bool wanted = false;
    size_t slot = 0;

    for (size_t i = 0; i < nask; i++) {
        if (0 != itf->askers[i].at_ms && itf->askers[i].uid != uid
            && now - itf->askers[i].at_ms < HD_WANT_MS) {
            wanted = true;
            *who = itf->askers[i].uid;
        }
        /* uid's own slot, else the oldest */
        if (0 != itf->askers[slot].at_ms && itf->askers[slot].uid == uid) {
            continue;
        }
        if ((0 != itf->askers[i].at_ms && itf->askers[i].uid == uid)
            || itf->askers[i].at_ms < itf->askers[slot].at_ms) {
            slot = i;
        }
    }
    itf->askers[slot].uid = uid;
    itf->askers[slot].at_ms = now;
    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        for (const struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            if (b->rx && b->itf == itf) {
                if (c->uid == uid) {
                    held += b->nqueues;
                } else {
                    wanted = true;
                    *who = c->uid;
                }
            }
        }
    }
    if (!wanted) {
        return UINT_MAX;
    }
    share = span * hd->policy.user_share / 100;
    share = share > 0 ? share : 1;
    return share > held ? share - held : 0;
}

static uint64_t queue_bits(const struct hd_iface *itf, unsigned int first, unsigned int n)
{
    uint64_t bits = 0;

    for (unsigned int j = 0; j < n; j++) {
        bits |= 1ull << (first - itf->pol->qlo + j);
    }
    return bits;
}

/* ------------------------------------------------------------------ ports */

/*
 * A steering rule sends every flow to its address and port into the binding's memory, so
 * the port must be the client's alone: no socket the helper was not handed may take
 * connections there, listening or connected, whoever owns it. The client's own sockets
 * (connections its listener accepted, a SO_REUSEPORT sibling) are its business. At a grant
 * even time-wait and request sockets count, as no descriptor shows whose they are; later
 * they are the client's closed connections (no other socket can bind the held port).
 */
struct port_scan {
    const struct devmem_nic_flow *flow;
    unsigned long mine; /* the held socket's inode */
    uid_t uid;
    bool at_grant;
    bool taken;
    struct hd_tcp_sock by;
};

static bool port_user(const struct hd_tcp_sock *s, void *arg)
{
    struct port_scan *ps = arg;

    if (s->inode == ps->mine || !hd_tcp_same_port(s, ps->flow)
        || (0 != s->inode && s->uid == ps->uid) || (0 == s->inode && !ps->at_grant)) {
        return true;
    }
    ps->taken = true;
    ps->by = *s;
    return false;
}

static int port_taken(const struct devmem_nic_flow *flow, unsigned long mine, uid_t uid,
                      bool at_grant, struct devmem_err *err)
{
    struct port_scan ps = {flow, mine, uid, at_grant, false, {0}};
    char text[INET6_ADDRSTRLEN] = "?";
    int rc = hd_tcp_each(port_user, &ps);

    if (0 != rc) {
        return devmem_err_set(err, -rc, "cannot list the TCP sockets (sock_diag): %s",
                              strerror(-rc));
    }
    if (!ps.taken) {
        return 0;
    }
    inet_ntop(ps.by.family, &ps.by.addr, text, sizeof(text));
    return devmem_err_set(err, EADDRINUSE, "port %u is in use by another socket (%s %s, uid "
                          "%u%s): a rule would steer its traffic too", (unsigned) flow->dst_port,
                          hd_tcp_state_name(ps.by.state), text, (unsigned) ps.by.uid,
                          0 == ps.by.inode ? ", no descriptor" : "");
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
void hd_binding_release(struct helperd *hd, struct hd_binding *b)
{
    struct hd_iface *itf = b->itf;

    bool stuck = b->has_rule && 0 != hd->be->rule_del(itf, b->rule_id);

    if (b->has_rule) {
        itf->nrules--;
    }
    /* the context after the rule that steers into it; a rule that stayed keeps it in use */
    if (0 != b->rss_ctx) {
        itf->nctx--;
        if (stuck || 0 != hd->be->ctx_del(itf, b->rss_ctx)) {
            itf->ctx_stuck++;
        }
    }
    hd->be->unbind(itf, b->kstate);
    if (b->rx) {
        uint64_t bits = queue_bits(itf, b->first_queue, b->nqueues);
        itf->busy &= ~bits;
        /* traffic the rule still steers must not land in the next user's memory */
        itf->stuck |= stuck ? bits : 0;
    }
    if (b->listen_fd >= 0) {
        hd_close_passed(b->owner->uid, b->listen_fd);
    }
    itf->nbindings--;
    hd_log_user(b->owner->uid, LOG_INFO, "pid %d uid %u: released %s binding %u on %s",
                (int) b->owner->pid, (unsigned) b->owner->uid, b->rx ? "RX" : "TX", b->id,
                itf->name);
    free(b);
    iface_idle(itf);
}

int hd_request_bind_rx(struct helperd *hd, struct hd_client *c,
                       const struct devmem_helper_bind_rx *req, struct devmem_helper_reply *reply,
                      struct devmem_err *err)
{
    const struct hd_policy_iface *pol;
    struct devmem_nic_flow flow;
    struct hd_binding *b = NULL;
    struct hd_iface *itf;
    unsigned int ifindex, n_rx = 0, first = 0, nqueues, room;
    uid_t other = 0;
    struct hd_passed passed;
    uint64_t foreign = 0;
    uint64_t bytes = 0;
    int rc;

    if (0 != (rc = check_iface(hd, req->ifname, &pol, &ifindex, err))) {
        return rc;
    }
    hd_inspect(hd, c->fds[0], c->fds[1], req->ifname, &passed);
    if (0 != passed.sock_rc) {
        *err = passed.sock_err;
        return passed.sock_rc;
    }
    flow = passed.flow;
    if (0 != (rc = port_taken(&flow, passed.sock_inode, c->uid, true, err))) {
        return rc;
    }
    if (NULL == (itf = iface_get(hd, pol, ifindex)) || NULL == (b = binding_new(c, itf, true))) {
        return devmem_err_set(err, ENOMEM, "helper: out of memory");
    }
    /* the kernel's verdict on the device is the answer that matters most: before the fd
     * (which may be a stand-in where the rank has no dmabuf), after the counted limits */
    if (0 != (rc = check_limits(hd, c, req->ifname, true, 0, err))
        || 0 != (rc = hd->be->probe_rx(itf, err))) {
        goto fail;
    }
    if (0 != passed.dmabuf_rc) {
        *err = passed.dmabuf_err;
        rc = passed.dmabuf_rc;
        goto fail;
    }
    bytes = passed.bytes;
    if (0 != (rc = check_limits(hd, c, req->ifname, true, bytes, err))) {
        goto fail;
    }
    for (const struct hd_client *o = hd->clients; NULL != o; o = o->next) {
        for (const struct hd_binding *ob = o->bindings; NULL != ob; ob = ob->next) {
            if (ob->itf == itf && ob->rx && ob->port == flow.dst_port) {
                rc = devmem_err_set(err, EADDRINUSE, "port %u on %s is already steered",
                                    (unsigned) flow.dst_port, itf->name);
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
    if (req->nqueues > hd->policy.max_queues
        && (!(req->flags & DEVMEM_HELPER_RX_FEWER) || 0 == hd->policy.max_queues)) {
        char where[300];

        rc = devmem_err_set(err, EDQUOT, "refused by policy (max-queues %u, %s): %u RX queues "
                            "asked for one binding", hd->policy.max_queues,
                            hd_policy_where(&hd->policy, hd->policy.max_queues_at, where,
                                            sizeof(where)),
                            req->nqueues);
        goto fail;
    }
    if (0 != (rc = foreign_queues(hd, c->uid, itf, &foreign, err))) {
        goto fail;
    }
    room = share_room(itf, hd, c->uid, &other);
    if (0 == room || (!(req->flags & DEVMEM_HELPER_RX_FEWER) && req->nqueues > room)) {
        char where[300];

        rc = devmem_err_set(err, EDQUOT, "refused by policy (user-share %u%%, %s): uid %u may "
                            "take %u more of the queues %u-%u on %s while uid %u wants some",
                            hd->policy.user_share,
                            hd_policy_where(&hd->policy, hd->policy.user_share_at, where,
                                            sizeof(where)),
                            (unsigned) c->uid, room, pol->qlo, pol->qhi, itf->name,
                            (unsigned) other);
        goto fail;
    }
    if (0 == (nqueues = grant_queues(hd, itf, req, foreign, room, &first))) {
        char holders[512];

        /* stray rules: rules this helper did not make, named in its log */
        hd_queue_holders(hd, itf, foreign, holders, sizeof(holders));
        rc = devmem_err_set(err, EBUSY, "refused by policy (interface, %s:%d): no %u free "
                            "queue(s) next to each other in %u-%u on %s (%s)",
                            hd->policy.path, pol->at.line,
                            req->flags & DEVMEM_HELPER_RX_FEWER ? 1 : req->nqueues, pol->qlo,
                            pol->qhi, itf->name, holders);
        goto fail;
    }
    if (0 != (rc = hd->be->prepare_rx(itf, err))) {
        goto fail;
    }
    rc = hd->be->bind_rx(itf, c->fds[0], first, nqueues, &b->id, &b->kstate, err);
    if (0 != rc) {
        goto fail;
    }
    /* several queues: the port's flows spread over them through an RSS context */
    if (nqueues > 1 && 0 != (rc = hd->be->ctx_add(itf, first, nqueues, &b->rss_ctx, err))) {
        hd->be->unbind(itf, b->kstate);
        goto fail;
    }
    flow.queue = 0 != b->rss_ctx ? 0 : first; /* into a context: an offset, none */
    flow.rss_context = b->rss_ctx;
    rc = hd->be->rule_add(itf, &flow, &b->rule_id, err);
    if (0 != rc) {
        if (0 != b->rss_ctx && 0 != hd->be->ctx_del(itf, b->rss_ctx)) {
            itf->ctx_stuck++;
        }
        hd->be->unbind(itf, b->kstate);
        goto fail;
    }
    itf->nctx += 0 != b->rss_ctx;
    b->has_rule = true;
    b->first_queue = first;
    b->nqueues = nqueues;
    b->port = flow.dst_port;
    b->flow = flow;
    b->bytes = bytes;
    /* hold the socket while the rule stands, so that its port cannot pass to another
     * process that would then receive into this client's memory */
    b->listen_fd = c->fds[1];
    c->fds[1] = -1;
    b->listen_ino = passed.sock_inode;
    binding_add(c, b);
    reply->binding_id = b->id;
    reply->first_queue = first;
    reply->nqueues = nqueues;
    reply->rule_id = b->rule_id;
    {
        char ctx[40] = "";

        if (0 != b->rss_ctx) {
            snprintf(ctx, sizeof(ctx), ", into RSS context %u", b->rss_ctx);
        }
        char asked[80] = "";

        if (nqueues != req->nqueues || 0 != req->sharers) {
            snprintf(asked, sizeof(asked), "; %u asked, %u sharer(s), max-queues %u",
                     req->nqueues, req->sharers, hd->policy.max_queues);
        }
        hd_log_user(c->uid, LOG_INFO, "pid %d uid %u: RX binding %u on %s queues %u-%u, port %u "
                    "steered (rule %u%s), %llu bytes%s", (int) c->pid, (unsigned) c->uid, b->id,
                    itf->name, first, first + nqueues - 1, (unsigned) b->port, b->rule_id, ctx,
                    (unsigned long long) bytes, asked);
    }
    return 0;
fail:
    free(b);
    iface_idle(itf);
    return rc;
}

int hd_request_bind_tx(struct helperd *hd, struct hd_client *c,
                       const struct devmem_helper_bind_tx *req, struct devmem_helper_reply *reply,
                      struct devmem_err *err)
{
    struct hd_passed passed;
    const struct hd_policy_iface *pol;
    struct hd_binding *b;
    struct hd_iface *itf;
    unsigned int ifindex;
    uint64_t bytes = 0;
    int rc;

    if (0 != (rc = check_iface(hd, req->ifname, &pol, &ifindex, err))) {
        return rc;
    }
    hd_inspect(hd, c->fds[0], -1, req->ifname, &passed);
    if (0 != passed.dmabuf_rc) {
        *err = passed.dmabuf_err;
        return passed.dmabuf_rc;
    }
    bytes = passed.bytes;
    if (0 != (rc = check_limits(hd, c, req->ifname, false, bytes, err))) {
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
    hd_log_user(c->uid, LOG_INFO, "pid %d uid %u: TX binding %u on %s, %llu bytes",
                (int) c->pid, (unsigned) c->uid, b->id, itf->name, (unsigned long long) bytes);
    return 0;
}

/* Take the binding that matches (b itself, or id when b is NULL) off c's list; NULL if none. */
static struct hd_binding *binding_unlink(struct hd_client *c, const struct hd_binding *b,
                                         uint32_t id)
{
    for (struct hd_binding **pb = &c->bindings; NULL != *pb; pb = &(*pb)->next) {
        struct hd_binding *found = *pb;
        if (found == b || (NULL == b && found->id == id)) {
            *pb = found->next;
            return found;
        }
    }
    return NULL;
}

void hd_binding_lost(struct helperd *hd, struct hd_binding *b, const char *why)
{
    struct hd_client *c = b->owner;

    hd_log_user(c->uid, LOG_NOTICE, "pid %d uid %u: binding %u: %s; its rule and binding go "
                "now", (int) c->pid, (unsigned) c->uid, b->id, why);
    if (NULL != binding_unlink(c, b, 0)) {
        hd_binding_release(hd, b);
    }
}

/* What the socket list says of each held socket, and of other sockets on its port. */
struct held {
    struct hd_binding *b;
    struct devmem_nic_flow flow;
    bool found, listening, taken;
    unsigned int port;
};
struct held_scan {
    struct held *h;
    size_t n;
};

static bool held_row(const struct hd_tcp_sock *s, void *arg)
{
    struct held_scan *hs = arg;

    for (size_t i = 0; i < hs->n; i++) {
        struct held *h = &hs->h[i];
        struct port_scan ps = {&h->flow, h->b->listen_ino, h->b->owner->uid, false, false, {0}};

        if (h->b->listen_ino == s->inode) {
            h->found = true;
            h->listening = HD_TCP_LISTEN == s->state;
            h->port = s->port;
        } else if (!port_user(s, &ps)) {
            h->taken = true;
        }
    }
    return true;
}

void hd_bindings_recheck(struct helperd *hd)
{
    struct held_scan hs = {NULL, 0};
    size_t cap = 0;

    for (struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        for (struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            cap += b->listen_fd >= 0 && 0 != b->listen_ino;
        }
    }
    if (0 == cap || NULL == (hs.h = calloc(cap, sizeof(*hs.h)))) {
        return;
    }
    for (struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        for (struct hd_binding *b = c->bindings; NULL != b; b = b->next) {
            if (b->listen_fd >= 0 && 0 != b->listen_ino) {
                hs.h[hs.n].b = b;
                hs.h[hs.n++].flow = b->flow;
            }
        }
    }
    if (0 != hd_tcp_each(held_row, &hs)) {
        free(hs.h);
        return;
    }
    for (size_t i = 0; i < hs.n; i++) {
        struct held *h = &hs.h[i];
        int reuse = 0;
        socklen_t len = sizeof(reuse);

        /* SO_REUSEADDR is read without the socket lock */
        (void) getsockopt(h->b->listen_fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &len);
        if (!h->found || !h->listening || h->port != h->b->port) {
            hd_binding_lost(hd, h->b, "its socket no longer listens on the steered port");
        } else if (0 != reuse) {
            hd_binding_lost(hd, h->b, "its socket has SO_REUSEADDR set");
        } else if (h->taken) {
            hd_binding_lost(hd, h->b, "another user's socket takes connections to its port");
        }
    }
    free(hs.h);
}

int hd_request_release(struct helperd *hd, struct hd_client *c, uint32_t id,
                       struct devmem_err *err)
{
    struct hd_binding *b = binding_unlink(c, NULL, id);

    if (NULL == b) {
        return devmem_err_set(err, ENOENT, "binding %u is not held by this connection", id);
    }
    hd_binding_release(hd, b);
    return 0;
}
