/*
 * Interface discovery (getifaddrs) and the if_include / if_exclude rules.
 *
 * We read interfaces ourselves rather than through OPAL's list because OPAL drops
 * loopback unless told otherwise, and loopback is the best path between ranks that
 * share a host.
 */
#include "btl_devmem_if.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t prefix_of(uint32_t mask_net)
{
    uint32_t m = ntohl(mask_net);
    uint8_t n = 0;

    while (m & 0x80000000u) {
        n++;
        m <<= 1;
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
        if (NULL == ifa->ifa_addr || AF_INET != ifa->ifa_addr->sa_family) {
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
        itf->addr = ((struct sockaddr_in *) ifa->ifa_addr)->sin_addr.s_addr;
        itf->prefix = NULL != ifa->ifa_netmask
                          ? prefix_of(((struct sockaddr_in *) ifa->ifa_netmask)->sin_addr.s_addr)
                          : 32;
        itf->loopback = 0 != (ifa->ifa_flags & IFF_LOOPBACK);
        n++;
    }
    freeifaddrs(all);
    return n;
}

bool mca_btl_devmem_if_same_net(uint32_t a, uint32_t b, uint8_t prefix)
{
    uint32_t mask = 0 == prefix ? 0 : htonl(0xffffffffu << (32 - (prefix > 32 ? 32 : prefix)));
    return (a & mask) == (b & mask);
}

/* Parse "a.b.c.d/n" into network and prefix. Returns 0, or -EINVAL. */
static int parse_cidr(const char *s, uint32_t *net, uint8_t *prefix)
{
    char buf[64];
    const char *slash = strchr(s, '/');
    char *end;
    struct in_addr in;
    long p;

    if (NULL == slash || (size_t) (slash - s) >= sizeof(buf)) {
        return -EINVAL;
    }
    memcpy(buf, s, slash - s);
    buf[slash - s] = '\0';
    if (1 != inet_pton(AF_INET, buf, &in)) {
        return -EINVAL;
    }
    errno = 0;
    p = strtol(slash + 1, &end, 10);
    if (0 != errno || end == slash + 1 || '\0' != *end || p < 0 || p > 32) {
        return -EINVAL;
    }
    *net = in.s_addr;
    *prefix = (uint8_t) p;
    return 0;
}

static int match_entry(const struct mca_btl_devmem_if *itf, const char *entry, char *why,
                       size_t whylen)
{
    uint32_t net;
    uint8_t prefix;

    if (NULL == strchr(entry, '/')) {
        return 0 == strcmp(itf->name, entry);
    }
    if (0 != parse_cidr(entry, &net, &prefix)) {
        snprintf(why, whylen, "'%s' is neither an interface name nor an IPv4 network a.b.c.d/n",
                 entry);
        return -EINVAL;
    }
    return mca_btl_devmem_if_same_net(itf->addr, net, prefix);
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
