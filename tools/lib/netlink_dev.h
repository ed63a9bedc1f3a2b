/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netdev dev-get: what the kernel says about one device (its XDP and AF_XDP features).
 * Only devmem-probe asks, so it lives with the tools, on the component's netlink socket
 * and codec (opal/mca/btl/devmem/devmem/netlink.h).
 */
#ifndef DEVMEM_NETLINK_DEV_H
#define DEVMEM_NETLINK_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "netlink.h"

struct devmem_nl_dev {
    unsigned int ifindex;
    uint64_t xdp_features;             /* NETDEV_XDP_ACT_* */
    uint64_t xdp_rx_metadata_features; /* NETDEV_XDP_RX_METADATA_* */
    uint64_t xsk_features;             /* NETDEV_XSK_FLAGS_* */
    uint32_t xdp_zc_max_segs;
};

int devmem_nl_dev_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_dev *dev,
                      struct devmem_err *err);

/* The request and its reply's parser, pure (for the unit test and the fuzz target): as
 * devmem_nl_build_queue_get and devmem_nl_parse_queues; a reply without an ifindex is
 * malformed. */
int devmem_nl_build_dev_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex);
int devmem_nl_parse_dev(const void *buf, size_t len, uint32_t seq, struct devmem_nl_dev *dev,
                        struct devmem_nl_status *st, struct devmem_err *err);

#endif /* DEVMEM_NETLINK_DEV_H */
