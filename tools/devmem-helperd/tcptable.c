/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP sockets of the helper's network namespace, as the kernel's sock_diag lists them
 * (what ss shows): the kernel fills that list without taking any socket's lock, so it is how
 * the helper learns a passed socket's address, port and state, and who else uses a port,
 * without waiting on anything a user holds.
 */
#include "config.h"

#include "helperd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Every socket of one family, by a sock_diag dump: one pass in the kernel, where the
 * /proc/net/tcp text costs a walk of the whole hash table for every page read. */
static int dump(int nl, int family, hd_tcp_fn fn, void *arg, bool *stop)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } ask = {
        .nlh = {.nlmsg_len = sizeof(ask), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = (uint32_t) family},
        .req = {.sdiag_family = (uint8_t) family, .sdiag_protocol = IPPROTO_TCP,
                .idiag_states = ~0u},
    };
    static char buf[32768];

    if (send(nl, &ask, sizeof(ask), 0) != (ssize_t) sizeof(ask)) {
        return -errno;
    }
    for (;;) {
        ssize_t n = recv(nl, buf, sizeof(buf), 0);
        struct nlmsghdr *h = (struct nlmsghdr *) buf;

        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -errno : -EIO;
        }
        for (; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            struct hd_tcp_sock s;

            if (NLMSG_DONE == h->nlmsg_type) {
                return 0;
            }
            if (NLMSG_ERROR == h->nlmsg_type) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error < 0 ? e->error : -EIO;
            }
            if (SOCK_DIAG_BY_FAMILY != h->nlmsg_type || *stop
                || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m))) {
                continue; /* after a stop, the rest of the dump is read and dropped */
            }
            memset(&s, 0, sizeof(s));
            s.family = m->idiag_family;
            if (AF_INET == s.family) {
                memcpy(&s.addr.v4, m->id.idiag_src, 4);
            } else {
                memcpy(&s.addr.v6, m->id.idiag_src, 16);
            }
            s.port = ntohs(m->id.idiag_sport);
            s.state = m->idiag_state;
            s.uid = (uid_t) m->idiag_uid;
            s.inode = m->idiag_inode;
            *stop = !fn(&s, arg);
        }
    }
}

int hd_tcp_each(hd_tcp_fn fn, void *arg)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    bool stop = false;
    int rc;

    if (nl < 0) {
        return -errno;
    }
    rc = dump(nl, AF_INET, fn, arg, &stop);
    if (0 == rc && !stop) {
        rc = dump(nl, AF_INET6, fn, arg, &stop);
    }
    close(nl);
    return rc;
}

bool hd_tcp_same_port(const struct hd_tcp_sock *s, const struct devmem_nic_flow *flow)
{
    static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

    if (s->port != flow->dst_port) {
        return false;
    }
    if (AF_INET == s->family) {
        return AF_INET == flow->family
               && (s->addr.v4.s_addr == flow->dst.v4.s_addr || INADDR_ANY == s->addr.v4.s_addr);
    }
    if (0 == memcmp(&s->addr.v6, &any6, sizeof(any6))) {
        return true; /* a dual-stack wildcard takes IPv4 too */
    }
    if (AF_INET6 == flow->family) {
        return 0 == memcmp(&s->addr.v6, &flow->dst.v6, sizeof(flow->dst.v6));
    }
    return IN6_IS_ADDR_V4MAPPED(&s->addr.v6)
           && 0 == memcmp(&s->addr.v6.s6_addr[12], &flow->dst.v4, 4);
}

const char *hd_tcp_state_name(unsigned int st)
{
    static const char *const names[] = {"?", "ESTABLISHED", "SYN_SENT", "SYN_RECV",
                                        "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE",
                                        "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING",
                                        "NEW_SYN_RECV"};

    return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}
