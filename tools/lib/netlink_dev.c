/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netdev dev-get (see netlink_dev.h).
 */
#include "build_config.h"

#include "netlink_dev.h"
#include "uapi.h"

#include <errno.h>
#include <string.h>

#ifdef HAVE_LIBMNL

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

static int get_u64(const void *payload, size_t len, uint64_t *v)
{
    if (len != sizeof(*v)) {
        return -EBADMSG;
    }
    memcpy(v, payload, sizeof(*v));
    return 0;
}

int devmem_nl_build_dev_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex)
{
    struct nlmsghdr *nlh;

    nlh = devmem_nl_put_genl_header(buf, size, family, NLM_F_REQUEST | NLM_F_ACK, seq,
                                    DEVMEM_NETDEV_CMD_DEV_GET, DEVMEM_NETDEV_FAMILY_VERSION);

    if (NULL == nlh || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_DEV_IFINDEX, ifindex)) {
        return -ENOBUFS;
    }
    return (int) nlh->nlmsg_len;
}

static int dev_attr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct devmem_nl_dev *dev = arg;
    uint32_t v32 = 0;
    int rc = 0;

    switch (type) {
    case DEVMEM_NETDEV_A_DEV_IFINDEX:
        rc = devmem_nl_get_u32(payload, len, &v32);
        dev->ifindex = v32;
        break;
    case DEVMEM_NETDEV_A_DEV_XDP_FEATURES:
        rc = get_u64(payload, len, &dev->xdp_features);
        break;
    case DEVMEM_NETDEV_A_DEV_XDP_ZC_MAX_SEGS:
        rc = devmem_nl_get_u32(payload, len, &dev->xdp_zc_max_segs);
        break;
    case DEVMEM_NETDEV_A_DEV_XDP_RX_METADATA_FEATURES:
        rc = get_u64(payload, len, &dev->xdp_rx_metadata_features);
        break;
    case DEVMEM_NETDEV_A_DEV_XSK_FEATURES:
        rc = get_u64(payload, len, &dev->xsk_features);
        break;
    default:
        break;
    }
    return rc;
}

static int dev_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err)
{
    return devmem_nl_genl_attrs(nlh, dev_attr_cb, arg, err);
}

int devmem_nl_parse_dev(const void *buf, size_t len, uint32_t seq, struct devmem_nl_dev *dev,
                        struct devmem_nl_status *st, struct devmem_err *err)
{
    int rc = devmem_nl_parse(buf, len, seq, dev_cb, dev, st, err);

    if (1 == rc && 0 == st->error && 0 == dev->ifindex) {
        rc = devmem_err_set(err, EBADMSG, "dev-get reply without an ifindex");
    }
    return rc;
}

int devmem_nl_dev_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_dev *dev,
                      struct devmem_err *err)
{
    int rc = devmem_nl_ask(nl, "dev-get", ifindex, devmem_nl_build_dev_get, dev_cb, dev,
                           sizeof(*dev), err);

    if (0 == rc && 0 == dev->ifindex) {
        char what[64];

        devmem_nl_describe(what, sizeof(what), "dev-get", ifindex);
        rc = devmem_err_set(err, EBADMSG, "netlink: %s: reply without an ifindex", what);
    }
    return rc;
}

#else /* !HAVE_LIBMNL */

int devmem_nl_build_dev_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex)
{
    return -EOPNOTSUPP;
}

int devmem_nl_parse_dev(const void *buf, size_t len, uint32_t seq, struct devmem_nl_dev *dev,
                        struct devmem_nl_status *st, struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "built without libmnl");
}

int devmem_nl_dev_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_dev *dev,
                      struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "built without libmnl");
}

#endif /* HAVE_LIBMNL */
