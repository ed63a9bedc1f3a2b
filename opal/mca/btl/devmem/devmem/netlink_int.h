/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the two netlink files share and nobody else needs: the reply callbacks and the bind
 * request builder of netlink_msg.c, which the socket side of netlink.c hands to transact.
 */
#ifndef DEVMEM_NETLINK_INT_H
#define DEVMEM_NETLINK_INT_H

#include "netlink.h"

#ifdef HAVE_LIBMNL

#include <stddef.h>
#include <stdint.h>

struct nlmsghdr;

/* CTRL_CMD_NEWFAMILY reply: the family's id and its commands (bit n: command n < 64) */
struct devmem_nl_family_ctx {
    uint16_t id;
    uint64_t cmds;
};

/* devmem_nl_data_cb for each reply: arg is a struct devmem_nl_family_ctx, a uint32_t
 * binding id, a struct devmem_nl_queues (dev-get's: tools/lib/netlink_dev.c) */
int devmem_nl_family_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err);
int devmem_nl_bind_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err);
int devmem_nl_queues_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err);

/* bind-rx (cmd BIND_RX, with its queues) or bind-tx into buf: its length, or -errno */
int devmem_nl_build_bind(void *buf, size_t size, uint16_t family, uint32_t seq, uint8_t cmd,
                         unsigned int ifindex, int dmabuf_fd, const unsigned int *queues,
                         size_t nqueues);

#endif /* HAVE_LIBMNL */

#endif /* DEVMEM_NETLINK_INT_H */
