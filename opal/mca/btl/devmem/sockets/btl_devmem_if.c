/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface discovery (getifaddrs), the if_include / if_exclude rules, the family of each
 * interface, and the address helpers of both families.
 *
 * We read interfaces ourselves rather than through OPAL's list because OPAL drops
 * loopback unless told otherwise, and loopback is the best path between ranks that
 * share a host.
 */
#include "sockets/btl_devmem_if.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Leading one bits of a netmask of len bytes. */
static uint8_t prefix_of(const uint8_t *mask, size_t len)
{
    uint8_t n = 0;

    for (size_t i = 0; i < len; i++) {
        for (uint8_t bit = 0x80; 0 != bit; bit >>= 1) {
            if (!(mask[i] & bit)) {
                return n;
            }
            n++;
        }
    }
    return n;
}

int mca_btl_devmem_if_discover(struct mca_btl_devmem_if *out, int max)
{
    struct ifaddrs *all, *ifa;
    int n = 0;

    if (0 != getifaddrs(&all)) {
        return -errno;
    }
    for (ifa = all; NULL != ifa && n < max; ifa = ifa->ifa_next) {
        struct mca_btl_devmem_ip mask;
        int family = NULL != ifa->ifa_addr ? ifa->ifa_addr->sa_family : AF_UNSPEC;

        if (AF_INET != family && AF_INET6 != family) {
            continue;
        }
        /* Administratively up is enough: carrier (IFF_RUNNING) can lag behind by a
         * moment on a freshly created link, and a link without it fails at connect. */
        if (!(ifa->ifa_flags & IFF_UP)) {
            continue;
        }
        struct mca_btl_devmem_if *itf = &out[n];
        memset(itf, 0, sizeof(*itf));
        snprintf(itf->name, sizeof(itf->name), "%s", ifa->ifa_name);
        itf->ifindex = if_nametoindex(ifa->ifa_name);
        (void) mca_btl_devmem_ip_from_sockaddr(ifa->ifa_addr, &itf->addr, NULL);
        itf->prefix = (uint8_t) (8 * mca_btl_devmem_ip_len(&itf->addr)); /* no mask: a host */
        if (NULL != ifa->ifa_netmask
            && 0 == mca_btl_devmem_ip_from_sockaddr(ifa->ifa_netmask, &mask, NULL)) {
            itf->prefix = prefix_of(mask.a.bytes, mca_btl_devmem_ip_len(&mask));
        }
        itf->loopback = 0 != (ifa->ifa_flags & IFF_LOOPBACK);
        n++;
    }
    freeifaddrs(all);
    return n;
}

bool mca_btl_devmem_ip_same_net(const struct mca_btl_devmem_ip *a,
                                const struct mca_btl_devmem_ip *b, uint8_t prefix)
{
    size_t len = mca_btl_devmem_ip_len(a);
    unsigned bits = prefix > len * 8 ? (unsigned) len * 8 : prefix;

    if (a->family != b->family) {
        return false;
    }
    if (0 != memcmp(a->a.bytes, b->a.bytes, bits / 8)) {
        return false;
    }
    if (0 != bits % 8) {
        uint8_t mask = (uint8_t) (0xff << (8 - bits % 8));
        return (a->a.bytes[bits / 8] & mask) == (b->a.bytes[bits / 8] & mask);
    }
    return true;
}

bool mca_btl_devmem_ip_equal(const struct mca_btl_devmem_ip *a, const struct mca_btl_devmem_ip *b)
{
    return a->family == b->family && 0 == memcmp(a->a.bytes, b->a.bytes, mca_btl_devmem_ip_len(a));
}

bool mca_btl_devmem_ip_is_link_local(const struct mca_btl_devmem_ip *ip)
{
    return AF_INET6 == ip->family && IN6_IS_ADDR_LINKLOCAL(&ip->a.v6);
}

socklen_t mca_btl_devmem_ip_to_sockaddr(const struct mca_btl_devmem_ip *ip, uint16_t port_net,
                                        unsigned int scope, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (AF_INET == ip->family) {
        struct sockaddr_in *sin = (struct sockaddr_in *) ss;
        sin->sin_family = AF_INET;
        sin->sin_addr = ip->a.v4;
        sin->sin_port = port_net;
        return sizeof(*sin);
    }
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr = ip->a.v6;
    sin6->sin6_port = port_net;
    sin6->sin6_scope_id = IN6_IS_ADDR_LINKLOCAL(&ip->a.v6) ? scope : 0;
    return sizeof(*sin6);
}

int mca_btl_devmem_ip_from_sockaddr(const struct sockaddr *sa, struct mca_btl_devmem_ip *ip,
                                    uint16_t *port_net)
{
    memset(ip, 0, sizeof(*ip));
    if (AF_INET == sa->sa_family) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *) sa;
        ip->family = AF_INET;
        ip->a.v4 = sin->sin_addr;
        if (NULL != port_net) {
            *port_net = sin->sin_port;
        }
        return 0;
    }
    if (AF_INET6 == sa->sa_family) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) sa;
        /* an IPv4 peer on a dual-stack socket is that IPv4 address */
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            ip->family = AF_INET;
            memcpy(&ip->a.v4, &sin6->sin6_addr.s6_addr[12], 4);
        } else {
            ip->family = AF_INET6;
            ip->a.v6 = sin6->sin6_addr;
        }
        if (NULL != port_net) {
            *port_net = sin6->sin6_port;
        }
        return 0;
    }
    return -EAFNOSUPPORT;
}

const char *mca_btl_devmem_ip_str(const struct mca_btl_devmem_ip *ip, char *buf, size_t len)
{
    if (NULL == inet_ntop(AF_INET == ip->family ? AF_INET : AF_INET6, ip->a.bytes, buf,
                          (socklen_t) len)) {
        snprintf(buf, len, "(family %u)", (unsigned) ip->family);
    }
    return buf;
}

int mca_btl_devmem_if_pick_family(struct mca_btl_devmem_if *ifs, int n,
                                  enum mca_btl_devmem_family family)
{
    bool keep[MCA_BTL_DEVMEM_IF_MAX] = {false};
    int kept = 0;

    for (int i = 0; i < n && i < MCA_BTL_DEVMEM_IF_MAX; i++) {
        bool has_v4 = false, has_v6_routable = false;

        for (int j = 0; j < n; j++) {
            if (ifs[j].ifindex != ifs[i].ifindex) {
                continue;
            }
            has_v4 |= AF_INET == ifs[j].addr.family;
            has_v6_routable |= AF_INET6 == ifs[j].addr.family
                               && !mca_btl_devmem_ip_is_link_local(&ifs[j].addr);
        }
        if (AF_INET == ifs[i].addr.family) {
            keep[i] = MCA_BTL_DEVMEM_FAMILY_IPV6 != family;
        } else {
            keep[i] = MCA_BTL_DEVMEM_FAMILY_IPV4 != family
                      && (MCA_BTL_DEVMEM_FAMILY_IPV6 == family || !has_v4)
                      && (!mca_btl_devmem_ip_is_link_local(&ifs[i].addr) || !has_v6_routable);
        }
    }
    for (int i = 0; i < n && i < MCA_BTL_DEVMEM_IF_MAX; i++) {
        if (keep[i]) {
            ifs[kept++] = ifs[i];
        }
    }
    return kept;
}

/* Parse "address/n" of either family into network and prefix. Returns 0, or -EINVAL. */
static int parse_cidr(const char *s, struct mca_btl_devmem_ip *net, uint8_t *prefix)
{
    char buf[64];
    const char *slash = strchr(s, '/');
    char *end;
    long p, max;

    if (NULL == slash || (size_t) (slash - s) >= sizeof(buf)) {
        return -EINVAL;
    }
    memcpy(buf, s, slash - s);
    buf[slash - s] = '\0';
    memset(net, 0, sizeof(*net));
    if (1 == inet_pton(AF_INET, buf, &net->a.v4)) {
        net->family = AF_INET;
        max = 32;
    } else if (1 == inet_pton(AF_INET6, buf, &net->a.v6)) {
        net->family = AF_INET6;
        max = 128;
    } else {
        return -EINVAL;
    }
    errno = 0;
    p = strtol(slash + 1, &end, 10);
    if (0 != errno || end == slash + 1 || '\0' != *end || p < 0 || p > max) {
        return -EINVAL;
    }
    *prefix = (uint8_t) p;
    return 0;
}

static int match_entry(const struct mca_btl_devmem_if *itf, const char *entry, char *why,
                       size_t whylen)
{
    struct mca_btl_devmem_ip net;
    uint8_t prefix;

    if (NULL == strchr(entry, '/')) {
        return 0 == strcmp(itf->name, entry);
    }
    if (0 != parse_cidr(entry, &net, &prefix)) {
        snprintf(why, whylen,
                 "'%s' is neither an interface name nor a network (a.b.c.d/n or an IPv6 "
                 "address/n)",
                 entry);
        return -EINVAL;
    }
    return mca_btl_devmem_ip_same_net(&itf->addr, &net, prefix);
}

/* Calls fn for each non-empty, trimmed entry of a comma-separated list; stops on non-zero. */
static int for_each_entry(const char *list, int (*fn)(const char *entry, void *arg), void *arg)
{
    const char *p = list;

    while (NULL != p && '\0' != *p) {
        const char *comma = strchr(p, ',');
        size_t len = NULL != comma ? (size_t) (comma - p) : strlen(p);
        char entry[128];

        while (len > 0 && (' ' == *p || '\t' == *p)) {
            p++;
            len--;
        }
        while (len > 0 && (' ' == p[len - 1] || '\t' == p[len - 1])) {
            len--;
        }
        if (len >= sizeof(entry)) {
            len = sizeof(entry) - 1;
        }
        if (len > 0) {
            int rc;
            memcpy(entry, p, len);
            entry[len] = '\0';
            if (0 != (rc = fn(entry, arg))) {
                return rc;
            }
        }
        p = NULL != comma ? comma + 1 : NULL;
    }
    return 0;
}

struct match_ctx {
    const struct mca_btl_devmem_if *itf;
    char *why;
    size_t whylen;
};

static int match_cb(const char *entry, void *arg)
{
    struct match_ctx *ctx = arg;
    return match_entry(ctx->itf, entry, ctx->why, ctx->whylen); /* 1 stops: matched */
}

int mca_btl_devmem_if_match(const struct mca_btl_devmem_if *itf, const char *list, char *why,
                            size_t whylen)
{
    struct match_ctx ctx = {itf, why, whylen};
    return for_each_entry(list, match_cb, &ctx);
}

struct unmatched_ctx {
    const struct mca_btl_devmem_if *ifs;
    int n;
    char *out;
    size_t outlen;
};

static int unmatched_cb(const char *entry, void *arg)
{
    struct unmatched_ctx *ctx = arg;
    char why[8];

    for (int i = 0; i < ctx->n; i++) {
        if (match_entry(&ctx->ifs[i], entry, why, sizeof(why)) > 0) {
            return 0;
        }
    }
    snprintf(ctx->out, ctx->outlen, "%s", entry);
    return 1;
}

int mca_btl_devmem_if_select(struct mca_btl_devmem_if *ifs, int n, const char *include,
                             const char *exclude, char *why, size_t whylen, char *unmatched,
                             size_t unmatchedlen)
{
    bool have_inc = NULL != include && '\0' != include[0];
    bool have_exc = NULL != exclude && '\0' != exclude[0];
    int kept = 0;

    if (NULL != unmatched && unmatchedlen > 0) {
        unmatched[0] = '\0';
    }
    if (have_inc && have_exc) {
        snprintf(why, whylen, "if_include and if_exclude are mutually exclusive; set only one");
        return -EINVAL;
    }
    if (have_inc && NULL != unmatched && unmatchedlen > 0) {
        struct unmatched_ctx uctx = {ifs, n, unmatched, unmatchedlen};
        (void) for_each_entry(include, unmatched_cb, &uctx);
    }
    for (int i = 0; i < n; i++) {
        int m = 0;
        if (have_inc || have_exc) {
            m = mca_btl_devmem_if_match(&ifs[i], have_inc ? include : exclude, why, whylen);
            if (m < 0) {
                return m;
            }
        }
        if (have_inc ? m > 0 : m == 0) {
            ifs[kept++] = ifs[i];
        }
    }
    return kept;
}
