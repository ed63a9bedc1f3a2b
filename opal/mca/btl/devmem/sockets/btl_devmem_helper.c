/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's use of devmem-helperd; see btl_devmem_helper.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockets/btl_devmem_helper.h"
#include "sockets/btl_devmem_sock.h"

/* Seconds a helper may take to answer one request: it does a few netlink calls. */
#define HELPER_TIMEOUT_MS 10000

static struct devmem_helper_client *helper;

/* Whether this process holds CAP_NET_ADMIN (bit 12 of CapEff), read from /proc: no libcap. */
static bool has_net_admin(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    bool yes = false;

    if (NULL == f) {
        return false;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        unsigned long long caps;
        if (1 == sscanf(line, "CapEff: %llx", &caps)) {
            yes = 0 != (caps & (1ull << 12));
            break;
        }
    }
    fclose(f);
    return yes;
}

int mca_btl_devmem_helper_open(enum devmem_kernel_kind kind, char *why, size_t len)
{
    const char *want = mca_btl_devmem_component.helper;
    const char *path = DEVMEM_HELPER_SOCKET_DEFAULT;
    struct devmem_err e;
    struct stat st;
    bool must = false;

    if (NULL == want || '\0' == want[0] || 0 == strcasecmp(want, "off")) {
        snprintf(why, len, "btl_devmem_helper is off");
        return 0;
    }
    if ('/' == want[0]) {
        path = want;
        must = true;
    } else if (0 != strcasecmp(want, "auto")) {
        snprintf(why, len, "btl_devmem_helper \"%s\": auto, off, or the helper's socket path "
                 "(starting with /)", want);
        return -EINVAL;
    } else if (DEVMEM_KERNEL_REAL != kind) {
        snprintf(why, len, "the emulated kernel needs no privilege");
        return 0;
    } else if (has_net_admin()) {
        snprintf(why, len, "this process has CAP_NET_ADMIN and binds by itself");
        return 0;
    } else if (0 != stat(path, &st)) {
        snprintf(why, len, "no CAP_NET_ADMIN and no helper at %s (start devmem-helperd, "
                 "or set btl_devmem_helper)", path);
        return 0;
    }
    if (0 != devmem_helper_connect(&helper, path, HELPER_TIMEOUT_MS, &e)) {
        snprintf(why, len, "%s", e.msg);
        return must ? -e.code : 0;
    }
    snprintf(why, len, "devmem-helperd at %s", path);
    return 1;
}

struct devmem_helper_client *mca_btl_devmem_helper(void)
{
    return helper;
}

int mca_btl_devmem_helper_bind_tx(const char *ifname, const struct devmem_region *region,
                                  uint32_t *id, struct devmem_err *err)
{
    if (NULL == helper) {
        return devmem_err_set(err, ENOTCONN, "no helper");
    }
    if (region->dmabuf_fd < 0) {
        return devmem_err_set(err, EINVAL, "%s memory has no dmabuf to pass to the helper",
                              region->provider->name);
    }
    return devmem_helper_bind_tx(helper, ifname, region->dmabuf_fd, id, err);
}

void mca_btl_devmem_helper_release(uint32_t id)
{
    struct devmem_err e;

    if (NULL != helper && 0 != devmem_helper_release(helper, id, &e)) {
        DEVMEM_VERBOSE(1, "giving binding %u back to the helper: %s", id, e.msg);
    }
}

int mca_btl_devmem_helper_listen_socket(const struct mca_btl_devmem_if *itf, uint16_t want,
                                        int *fd, uint16_t *port)
{
    unsigned int lo = 32768, hi = 60999, span, start;
    FILE *f;
    int err = EADDRINUSE;

    if (0 != mca_btl_devmem_component.port_lo) {
        /* the administrator's range; the helper refuses SO_REUSEADDR sockets */
        return mca_btl_devmem_listen_range(itf, want, false, fd, port);
    }
    if (0 != want) {
        int sd = mca_btl_devmem_bound_socket(itf, want);

        if (sd >= 0 && 0 == listen(sd, SOMAXCONN)) {
            *fd = sd;
            *port = want;
            return 0;
        }
        if (sd >= 0) {
            close(sd);
        }
    }
    f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    if (NULL != f) {
        if (2 != fscanf(f, "%u %u", &lo, &hi) || lo < 1 || hi > 65535 || lo > hi) {
            lo = 32768, hi = 60999;
        }
        fclose(f);
    }
    /* the ports above the range, then those between 1024 and it */
    span = (65535 - hi) + (lo > 1024 ? lo - 1024 : 0);
    if (0 == span) {
        return -EADDRNOTAVAIL;
    }
    start = (unsigned int) getpid() * 7919u % span; /* local ranks start far apart */
    for (unsigned int i = 0; i < span && i < 512; i++) {
        unsigned int k = (start + i) % span;
        unsigned int p = k < 65535 - hi ? hi + 1 + k : 1024 + (k - (65535 - hi));
        int sd = mca_btl_devmem_bound_socket(itf, (uint16_t) p);

        if (sd >= 0 && 0 == listen(sd, SOMAXCONN)) {
            *fd = sd;
            *port = (uint16_t) p;
            return 0;
        }
        err = sd < 0 ? -sd : errno;
        if (sd >= 0) {
            close(sd);
        }
        if (EADDRINUSE != err) {
            break;
        }
    }
    return -err;
}

void mca_btl_devmem_helper_close(void)
{
    devmem_helper_close(helper);
    helper = NULL;
}
