/*
 * The component's use of devmem-helperd; see btl_devmem_helper.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "btl_devmem_helper.h"

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

void mca_btl_devmem_helper_close(void)
{
    devmem_helper_close(helper);
    helper = NULL;
}
