/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Generic netlink for devmem: the "netdev" family (dev-get, queue-get, bind-rx, bind-tx)
 * over libmnl, with the kernel's extended-ack text passed on word for word.
 *
 * Every call returns 0 or -errno and, on failure, fills `err` (which may be NULL) with the
 * errno and a message such as
 *   "netlink: bind-rx on lo: Operation not supported (kernel: <extack text>)".
 * Built without libmnl, every call fails with -EOPNOTSUPP, "built without libmnl".
 *
 * A struct devmem_nl is one netlink socket; it is not thread-safe (one caller at a time).
 * Bindings made on it belong to it: the kernel removes them when the socket closes, so keep
 * it open as long as any socket receives into (or sends from) the bound dmabuf.
 *
 * The lower half of this header is the message codec: pure functions over byte buffers that
 * build requests and parse replies without a socket, for unit tests and for nic.c, which
 * speaks the "ethtool" family through the same transaction code.
 */
#ifndef DEVMEM_NETLINK_H
#define DEVMEM_NETLINK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct nlmsghdr;
struct devmem_nl;

/* ---- netdev family ---------------------------------------------------------------------- */

/* Open a generic netlink socket (extended acks on) and resolve the "netdev" family. */
int devmem_nl_open(struct devmem_nl **nl, struct devmem_err *err);

/* Close the socket; the kernel unbinds every binding made on it. NULL is allowed. */
void devmem_nl_close(struct devmem_nl *nl);

/* Bind dmabuf_fd to RX queues `queues[0..nqueues)` of ifindex; the binding id (>= 1) is what
 * SCM_DEVMEM_DMABUF control messages carry. nqueues == 0 is passed to the kernel as is (it
 * refuses it). Needs CAP_NET_ADMIN. */
int devmem_nl_bind_rx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      const unsigned int *queues, size_t nqueues, uint32_t *binding_id,
                      struct devmem_err *err);

/* Bind dmabuf_fd for transmit on ifindex (Linux 6.16+); the id goes into SCM_DEVMEM_DMABUF. */
int devmem_nl_bind_tx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      uint32_t *binding_id, struct devmem_err *err);

/* Queue ids at or above this are counted but their binding is not recorded. */
#define DEVMEM_NL_MAX_QUEUES 1024

/* What queue-get (dump, filtered by ifindex) says about one device's queues. */
struct devmem_nl_queues {
    unsigned int n_rx;       /* RX queues (the device's real_num_rx_queues) */
    unsigned int n_tx;       /* TX queues */
    unsigned int n_rx_bound; /* RX queues with a dmabuf bound */
    uint32_t rx_dmabuf[DEVMEM_NL_MAX_QUEUES]; /* per RX queue id: binding id, 0 when none */
};

int devmem_nl_queue_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_queues *q,
                        struct devmem_err *err);

/* 1 when the kernel's family lists command `cmd` (e.g. DEVMEM_NETDEV_CMD_BIND_TX), else 0. */
int devmem_nl_has_cmd(const struct devmem_nl *nl, unsigned int cmd);

/* ---- lower level: other generic netlink families ------------------------------------------ */

/* Open a socket like devmem_nl_open, for the generic netlink family `family`. */
int devmem_nl_open_family(struct devmem_nl **nl, const char *family, struct devmem_err *err);

/* Start a generic netlink request in buf[0..size): netlink header (type = family id, flags,
 * seq) and genl header (cmd, version). NULL when it does not fit (or without libmnl). */
struct nlmsghdr *devmem_nl_put_genl_header(void *buf, size_t size, uint16_t type, uint16_t flags,
                                           uint32_t seq, uint8_t cmd, uint8_t version);

/* The resolved family id, and a fresh sequence number for the next request. */
uint16_t devmem_nl_family_id(const struct devmem_nl *nl);
uint32_t devmem_nl_next_seq(struct devmem_nl *nl);

/* How an exchange ended, from the kernel's ACK/error message (or NLMSG_DONE of a dump). */
struct devmem_nl_status {
    int error;                    /* the kernel's errno, positive; 0 for success */
    char msg[DEVMEM_ERR_MSG_MAX]; /* NLMSGERR_ATTR_MSG word for word; "" when none */
    int has_offset;               /* NLMSGERR_ATTR_OFFS present: */
    uint32_t offset;              /*   offending attribute's byte offset in the request */
    int has_miss_type;            /* NLMSGERR_ATTR_MISS_TYPE present: */
    uint32_t miss_type;           /*   a required attribute that was missing */
};

/* Called for every data message of the exchange; returns 0, or -errno when the message is
 * malformed (it may fill err with the reason). */
typedef int (*devmem_nl_data_cb)(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err);

/* Parse one received buffer of an exchange whose request had sequence number seq.
 * Returns 1 when the exchange is complete (st says how it ended), 0 when more messages are
 * to come, or -EBADMSG when the buffer is malformed (err says how). Messages with another
 * sequence number (late replies to an abandoned exchange) are skipped. */
int devmem_nl_parse(const void *buf, size_t len, uint32_t seq, devmem_nl_data_cb cb, void *arg,
                    struct devmem_nl_status *st, struct devmem_err *err);

/* Send the request req[0..len) (built with devmem_nl_next_seq) and parse the replies until the
 * exchange completes. Returns 0 when the kernel acknowledged, -errno otherwise; a kernel error
 * is described in err as "netlink: <what>: <strerror> (kernel: <extack>)". attr_names
 * (indexed by attribute type, may be NULL) names the request attribute the kernel flagged. */
int devmem_nl_transact(struct devmem_nl *nl, const void *req, size_t len, devmem_nl_data_cb cb,
                       void *arg, const char *what, const char *const *attr_names,
                       size_t n_attr_names, struct devmem_err *err);

/* A request about device ifindex, as build writes it (dev-get, queue-get), its replies
 * through cb into *arg (zeroed first, arg_size bytes); errors as transact's, op naming the
 * exchange. */
typedef int (*devmem_nl_build_fn)(void *buf, size_t size, uint16_t family, uint32_t seq,
                                  unsigned int ifindex);
int devmem_nl_ask(struct devmem_nl *nl, const char *op, unsigned int ifindex,
                  devmem_nl_build_fn build, devmem_nl_data_cb cb, void *arg, size_t arg_size,
                  struct devmem_err *err);

/* "dev-get on lo", or "... on ifindex 7" when the name is gone: what transact says. */
void devmem_nl_describe(char *out, size_t size, const char *op, unsigned int ifindex);

/* Describe a failed exchange in err (format as above); returns -st->error. */
int devmem_nl_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                         const char *what, const char *const *attr_names, size_t n_attr_names,
                         struct devmem_err *err);

/* Iterate over the attributes in p[0..len), calling cb(type, payload, payload_len, arg) for
 * each. Returns 0, -EBADMSG when an attribute runs past the end or bytes are left over, or
 * what cb returned when negative. */
typedef int (*devmem_nl_attr_cb)(uint16_t type, const void *payload, size_t len, void *arg);
int devmem_nl_attrs_walk(const void *p, size_t len, devmem_nl_attr_cb cb, void *arg);

/* The attributes of a generic netlink data message, after its genl header, through cb;
 * -EBADMSG with err filled when they are malformed. A u32 attribute's value (-EBADMSG when
 * it is not 4 bytes). */
int devmem_nl_genl_attrs(const struct nlmsghdr *nlh, devmem_nl_attr_cb cb, void *arg,
                         struct devmem_err *err);
int devmem_nl_get_u32(const void *payload, size_t len, uint32_t *v);

/* ---- message codec for the netdev family (pure; exposed for unit tests) ------------------- */

/* Builders write one request into buf[0..size) and return its length, or -ENOBUFS when it
 * does not fit, or -EINVAL for arguments the request cannot carry (e.g. a negative fd). */
int devmem_nl_build_getfamily(void *buf, size_t size, uint32_t seq, const char *family);
int devmem_nl_build_bind_rx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd, const unsigned int *queues,
                            size_t nqueues);
int devmem_nl_build_bind_tx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd);
int devmem_nl_build_queue_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                              unsigned int ifindex);

/* Reply parsers: as devmem_nl_parse, collecting what the replies carry. A complete exchange
 * that the kernel acknowledged but that lacks the expected data (no family id, no binding id)
 * is malformed: -EBADMSG. Zero *q before the first buffer of a queue dump. */
int devmem_nl_parse_family(const void *buf, size_t len, uint32_t seq, uint16_t *family_id,
                           uint64_t *cmds, struct devmem_nl_status *st, struct devmem_err *err);
int devmem_nl_parse_bind(const void *buf, size_t len, uint32_t seq, uint32_t *binding_id,
                         struct devmem_nl_status *st, struct devmem_err *err);
int devmem_nl_parse_queues(const void *buf, size_t len, uint32_t seq, struct devmem_nl_queues *q,
                           struct devmem_nl_status *st, struct devmem_err *err);

/* Names of the bind-rx/bind-tx request attributes, indexed by DEVMEM_NETDEV_A_DMABUF_*. */
extern const char *const devmem_nl_dmabuf_attr_names[];
extern const size_t devmem_nl_n_dmabuf_attr_names;

#endif /* DEVMEM_NETLINK_H */
