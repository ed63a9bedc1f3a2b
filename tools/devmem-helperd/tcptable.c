/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP sockets of the helper's network namespace, as /proc/self/net/tcp and tcp6 list
 * them: the kernel writes those tables without taking any socket's lock, so reading them is
 * how the helper learns a passed socket's address, port and state, and who else uses a port,
 * without waiting on anything a user holds.
 */
#include "config.h"

#include "helperd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6): the kernel prints each 32-bit
 * word of the address as it lies in memory, read as a host-order number. */
static bool parse_addr(const char *s, int family, struct hd_tcp_sock *out)
{
    size_t words = AF_INET == family ? 1 : 4;
    uint32_t w[4];
    char hex[9];
    const char *colon = strchr(s, ':');

    if (NULL == colon || (size_t) (colon - s) != 8 * words) {
        return false;
    }
    for (size_t i = 0; i < words; i++) {
        memcpy(hex, s + 8 * i, 8);
        hex[8] = '\0';
        w[i] = (uint32_t) strtoul(hex, NULL, 16);
    }
    out->family = family;
    if (AF_INET == family) {
        out->addr.v4.s_addr = w[0];
    } else {
        memcpy(&out->addr.v6, w, sizeof(out->addr.v6));
    }
    out->port = (unsigned int) strtoul(colon + 1, NULL, 16);
    return true;
}

static int scan(const char *path, int family, hd_tcp_fn fn, void *arg, bool *stop)
{
    char line[512];
    FILE *f = fopen(path, "re");

    if (NULL == f) {
        return AF_INET6 == family && ENOENT == errno ? 0 : -errno; /* no IPv6 */
    }
    while (!*stop && NULL != fgets(line, sizeof(line), f)) {
        struct hd_tcp_sock s;
        char local[64];
        unsigned int st, uid;
        unsigned long inode;

        /* sl local rem st tx:rx tr:when retr uid timeout inode */
        if (4 != sscanf(line, " %*s %63s %*s %x %*s %*s %*s %u %*s %lu", local, &st, &uid,
                        &inode)
            || !parse_addr(local, family, &s)) {
            continue; /* the header line */
        }
        s.state = st;
        s.uid = (uid_t) uid;
        s.inode = inode;
        *stop = !fn(&s, arg);
    }
    fclose(f);
    return 0;
}

int hd_tcp_each(hd_tcp_fn fn, void *arg)
{
    bool stop = false;
    int rc = scan("/proc/self/net/tcp", AF_INET, fn, arg, &stop);

    return 0 != rc || stop ? rc : scan("/proc/self/net/tcp6", AF_INET6, fn, arg, &stop);
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
