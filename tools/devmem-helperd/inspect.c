/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Looking at what a client passed, in the event loop, with no call that can wait on the
 * user. A descriptor is first known by the name the kernel gives its open file (readlink of
 * /proc/self/fd/N builds it from the file's dentry and never calls into the file); only a
 * descriptor whose name says dmabuf, memfd or socket is asked anything more, and only what
 * that kind answers without a lock its owner can hold: a dmabuf's fdinfo, a memfd's size,
 * a socket's options read locklessly and its entry in the kernel's socket list (sock_diag).
 * An epoll file, a FUSE file, a pipe or a device is refused by its name alone, in constant
 * time.
 */
#include "config.h"

#include "helperd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nic.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14 */
#endif

void hd_fd_name(int fd, char *buf, size_t len)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, buf, len - 1);
    buf[n > 0 ? (size_t) n : 0] = '\0';
    if (n <= 0) {
        snprintf(buf, len, "unknown");
    }
}

int hd_local_port_range(unsigned int *lo, unsigned int *hi)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    int ok = NULL != f && 2 == fscanf(f, "%u %u", lo, hi);

    if (NULL != f) {
        fclose(f);
    }
    return ok ? 0 : -EIO;
}

/* Whether addr (family, 4 or 16 bytes) is configured on ifname in the helper's namespace. */
static bool address_on(const char *ifname, int family, const void *addr)
{
    struct ifaddrs *all = NULL;
    bool found = false;
    size_t n = AF_INET == family ? 4 : 16;

    if (0 != getifaddrs(&all)) {
        return false;
    }
    for (struct ifaddrs *a = all; NULL != a && !found; a = a->ifa_next) {
        const void *mine;

        size_t len = strlen(ifname);

        /* IPv4 addresses come by their label: "eth0", or "eth0:1" for an alias */
        if (NULL == a->ifa_addr || a->ifa_addr->sa_family != family
            || 0 != strncmp(a->ifa_name, ifname, len)
            || ('\0' != a->ifa_name[len] && ':' != a->ifa_name[len])) {
            continue;
        }
        mine = AF_INET == family ? (const void *) &((struct sockaddr_in *) a->ifa_addr)->sin_addr
                                 : (const void *) &((struct sockaddr_in6 *) a->ifa_addr)->sin6_addr;
        found = 0 == memcmp(mine, addr, n);
    }
    freeifaddrs(all);
    return found;
}

struct find_inode {
    unsigned long inode;
    struct hd_tcp_sock row;
    bool found;
};

static bool is_inode(const struct hd_tcp_sock *s, void *arg)
{
    struct find_inode *f = arg;

    if (s->inode != f->inode) {
        return true;
    }
    f->row = *s;
    f->found = true;
    return false;
}

/*
 * The device-flow socket: a listening TCP socket of the helper's network namespace, bound to
 * one of ifname's addresses. Its address and port are the only ones the client may steer
 * (the protocol has no field to name others), and the rule names both: a wildcard socket
 * would steer that port for every address of the NIC, other users' services included, and a
 * socket of another namespace proves nothing about the ports of this one.
 */
static int check_listen_socket(uint64_t netns_cookie, int fd, const char *name,
                               const char *ifname, struct hd_passed *out,
                               struct devmem_err *err)
{
    struct devmem_nic_flow *flow = &out->flow;
    struct find_inode fi = {0};
    uint64_t cookie = 0;
    int v = 0, rc;
    socklen_t vl = sizeof(v);
    char text[INET6_ADDRSTRLEN] = "?";
    unsigned int lo, hi;

    memset(flow, 0, sizeof(*flow));
    if (1 != sscanf(name, "socket:[%lu]", &fi.inode)) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is not a socket (%s)", name);
    }
    /* these options are read without the socket's lock */
    if (0 != getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl) || IPPROTO_TCP != v) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is another kind of socket");
    }
    vl = sizeof(cookie);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &vl)
        || cookie != netns_cookie) {
        return devmem_err_set(err, EXDEV, "the passed socket belongs to another network "
                              "namespace than the helper's");
    }
    vl = sizeof(v);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &vl) || 0 != v) {
        /* with SO_REUSEADDR, another such socket may take the port while this one is not
         * listening (between a shutdown() and a listen()) */
        return devmem_err_set(err, EINVAL, "the passed socket has SO_REUSEADDR set: another "
                              "socket could share its port while it is not listening");
    }
    if (0 != (rc = hd_tcp_each(is_inode, &fi))) {
        return devmem_err_set(err, -rc, "cannot list the TCP sockets (sock_diag): %s",
                              strerror(-rc));
    }
    if (!fi.found || HD_TCP_LISTEN != fi.row.state) {
        return devmem_err_set(err, EINVAL, "the socket passed for steering is not listening, "
                              "so its port is not the client's to steer");
    }
    out->sock_inode = fi.inode;
    flow->family = fi.row.family;
    flow->dst_port = (uint16_t) fi.row.port;
    if (AF_INET == fi.row.family) {
        flow->dst.v4 = fi.row.addr.v4;
    } else if (IN6_IS_ADDR_V4MAPPED(&fi.row.addr.v6)) {
        return devmem_err_set(err, EAFNOSUPPORT, "the passed socket listens on a "
                              "v4-mapped address: bind an IPv4 socket instead");
    } else {
        flow->dst.v6 = fi.row.addr.v6;
    }
    inet_ntop(flow->family, &flow->dst, text, sizeof(text));
    if (0 == flow->dst_port) {
        return devmem_err_set(err, EINVAL, "the passed socket has no port");
    }
    /* A port the kernel chose (bind to port 0, or listen without bind) comes from the
     * ephemeral range, and shutdown() gives it back while the socket lives on: the client
     * could pass it to another process under the rule. A port bound explicitly stays with
     * the socket, which the helper holds. Only the explicit kind lies outside. */
    if (0 != hd_local_port_range(&lo, &hi)) {
        return devmem_err_set(err, EIO, "cannot read ip_local_port_range");
    }
    if (flow->dst_port >= lo && flow->dst_port <= hi) {
        return devmem_err_set(err, EINVAL, "the passed socket's port %u lies in the kernel's "
                              "ephemeral range %u-%u, where a port the kernel chose would go "
                              "back on shutdown(): bind one outside it explicitly",
                              (unsigned) flow->dst_port, lo, hi);
    }
    if (AF_INET == flow->family ? INADDR_ANY == flow->dst.v4.s_addr
                                : IN6_IS_ADDR_UNSPECIFIED(&flow->dst.v6)) {
        return devmem_err_set(err, EINVAL, "the passed socket listens on the wildcard address: "
                              "a rule for port %u alone would steer every address of %s; bind "
                              "it to one of %s's addresses", (unsigned) flow->dst_port, ifname,
                              ifname);
    }
    if (!address_on(ifname, flow->family, &flow->dst)) {
        return devmem_err_set(err, EADDRNOTAVAIL, "the passed socket listens on %s, which is "
                              "not an address of %s", text, ifname);
    }
    return 0;
}

void hd_inspect(struct helperd *hd, int dmabuf_fd, int sock_fd, const char *ifname,
                struct hd_passed *out)
{
    char name[128];

    memset(out, 0, sizeof(*out));
    hd_fd_name(dmabuf_fd, name, sizeof(name));
    out->dmabuf_rc = hd->be->check_dmabuf(dmabuf_fd, name, &out->bytes, &out->dmabuf_err);
    if (sock_fd >= 0) {
        hd_fd_name(sock_fd, name, sizeof(name));
        out->sock_rc = check_listen_socket(hd->netns_cookie, sock_fd, name, ifname, out,
                                           &out->sock_err);
    }
}
