/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NIC setup for devmem RX, one step per function, as the kernel's ncdevmem does it:
 * driver name, channel counts, header split (ethtool netlink "rings"), RSS kept off the
 * devmem queues, ntuple on, and one flow-steering rule per devmem flow.
 *
 * Every function is stateless: it takes an interface name and explicit parameters, opens
 * what it needs, and closes it before returning. A privileged helper can therefore run the
 * same calls on behalf of an unprivileged rank, after checking the request. Returns 0 or
 * -errno; on failure `err` (may be NULL) holds e.g.
 *   "ethtool: set RSS on eth0: Operation not permitted (needs CAP_NET_ADMIN)".
 * EPERM: no CAP_NET_ADMIN; EOPNOTSUPP: the driver (or this build) cannot do it.
 *
 * What a rank needs is here; what only the admin tools need (driver facts, channels, RSS
 * spreading, ntuple, listing rules) is tools/lib/nic_admin.h, on the ethtool calls below.
 */
#ifndef DEVMEM_NIC_H
#define DEVMEM_NIC_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct ethtool_rx_flow_spec;
struct ethtool_rxfh_indir;

/* One SIOCETHTOOL call (data: the ethtool struct, its cmd set) on a throwaway socket; what:
 * the step, for err. */
int devmem_nic_ethtool(const char *ifname, void *data, const char *what, struct devmem_err *err);
/* ETHTOOL_GRXRINGS: the RX rings the driver reports. */
int devmem_nic_rx_rings(const char *ifname, uint32_t *n, struct devmem_err *err);
/* The RSS indirection table; *table is malloc'ed (the caller frees it). */
int devmem_nic_get_indir(const char *ifname, struct ethtool_rxfh_indir **table,
                         struct devmem_err *err);

/* Header split, as ethtool's tcp-data-split (values are the kernel's). */
enum devmem_nic_hds {
    DEVMEM_NIC_HDS_UNKNOWN = 0, /* not reported; when setting: the driver's default */
    DEVMEM_NIC_HDS_OFF = 1,
    DEVMEM_NIC_HDS_ON = 2,
};

/* ethtool netlink RINGS_GET */
struct devmem_nic_rings {
    uint32_t rx, rx_max, tx, tx_max;
    enum devmem_nic_hds tcp_data_split;
    int has_hds_thresh;      /* the driver reports hds-thresh (Linux 6.13+) */
    uint32_t hds_thresh;     /* devmem needs 0 (6.14+) */
    uint32_t hds_thresh_max;
    /* bytes of each RX buffer, where the driver says (rx-buf-len): a devmem fragment, and so
     * a token, holds at most one buffer, so larger buffers mean fewer tokens per MiB */
    int has_rx_buf_len;
    uint32_t rx_buf_len;
};

int devmem_nic_get_rings(const char *ifname, struct devmem_nic_rings *rings,
                         struct devmem_err *err);

/* ethtool netlink "rings" attributes; the 6.1 headers here stop at TX_PUSH (13). */
enum {
    DEVMEM_ETHTOOL_A_RINGS_HEADER = 1,
    DEVMEM_ETHTOOL_A_RINGS_RX_MAX = 2,
    DEVMEM_ETHTOOL_A_RINGS_TX_MAX = 5,
    DEVMEM_ETHTOOL_A_RINGS_RX = 6,
    DEVMEM_ETHTOOL_A_RINGS_TX = 9,
    DEVMEM_ETHTOOL_A_RINGS_RX_BUF_LEN = 10,     /* u32, Linux 5.18+, few drivers */
    DEVMEM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT = 11, /* u8 */
    DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH = 17,     /* u32, Linux 6.13+ */
    DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH_MAX = 18, /* u32 */
};
/* Their names, for the kernel's word on which one it refused (indexed by type). */
#define DEVMEM_NIC_RINGS_ATTR_NAMES (DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH + 1)
extern const char *const devmem_nic_rings_attr_names[DEVMEM_NIC_RINGS_ATTR_NAMES];

/* One ethtool rings exchange on ifname: the request build writes (for the family id and
 * sequence number it is given, arg passed through) and, when rings is not NULL, the reply
 * parsed into it; what names the step in err. Its header (ETHTOOL_A_RINGS_HEADER with the
 * device name) for a request of command cmd, or NULL when it does not fit. The setters are
 * the admin tools' (tools/lib/nic_admin.h). */
typedef int (*devmem_nic_rings_build_fn)(void *buf, size_t size, uint16_t family, uint32_t seq,
                                         const char *ifname, const void *arg);
int devmem_nic_rings_exchange(const char *ifname, devmem_nic_rings_build_fn build,
                              const void *arg, struct devmem_nic_rings *rings, const char *what,
                              struct devmem_err *err);
struct nlmsghdr;
struct nlmsghdr *devmem_nic_rings_header(void *buf, size_t size, uint16_t family, uint32_t seq,
                                         uint8_t cmd, const char *ifname);

/* RSS: ETHTOOL_GRXRINGS and the indirection table (ETHTOOL_GRXFHINDIR / SRXFHINDIR). */
struct devmem_nic_rss {
    uint32_t rx_rings;   /* RX rings the driver reports */
    uint32_t table_size; /* entries in the indirection table */
    uint32_t spread;     /* 1 + the highest queue the table points to */
};

int devmem_nic_get_rss(const char *ifname, struct devmem_nic_rss *rss, struct devmem_err *err);
/* An RSS context over queues first..first+n-1 ("ethtool -X IF context new start FIRST equal
 * N", ETHTOOL_SRSSH with ETH_RXFH_CONTEXT_ALLOC): *ctx is its id, for flow rules
 * (devmem_nic_flow.rss_context) and for deleting it once no rule points at it. */
int devmem_nic_rss_ctx_create(const char *ifname, unsigned int first, unsigned int n,
                              uint32_t *ctx, struct devmem_err *err);
int devmem_nic_rss_ctx_delete(const char *ifname, uint32_t ctx, struct devmem_err *err);
/* One TCP flow to steer. Zero fields match anything, except dst_port, which is required:
 * a 3-tuple rule (dst addr, dst port) leaves src unset; a 5-tuple rule sets everything. */
struct devmem_nic_flow {
    int family; /* AF_INET or AF_INET6 */
    union {
        struct in_addr v4;
        struct in6_addr v6;
    } dst, src;
    uint16_t dst_port; /* host byte order */
    uint16_t src_port; /* host byte order; 0: any */
    uint32_t queue;    /* RX queue to steer to; with rss_context: an offset added to the
                        * queue the context's table picks (0) */
    uint32_t rss_context; /* 0: to queue; else spread over this RSS context's queues */
};

/* ETHTOOL_SRXCLSRLINS: insert a rule; *rule_id is its location, for devmem_nic_flow_del. */
int devmem_nic_flow_add(const char *ifname, const struct devmem_nic_flow *flow,
                        uint32_t *rule_id, struct devmem_err *err);
/* ETHTOOL_SRXCLSRLDEL */
int devmem_nic_flow_del(const char *ifname, uint32_t rule_id, struct devmem_err *err);

/* ---- pure encoders (no kernel), exposed for unit tests ---------------------------------- */

/* Fill an ethtool flow spec (masks: set bits are compared) for `flow`, at `location`.
 * -EINVAL for an unknown family or a zero dst_port. */
int devmem_nic_flow_spec(const struct devmem_nic_flow *flow, uint32_t location,
                         struct ethtool_rx_flow_spec *fs);

/* ethtool netlink rings requests, for the family id `family`; length or -errno. */
int devmem_nic_build_rings_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname);
struct devmem_nl_status;
/* Parse one buffer of the rings-get exchange, like devmem_nl_parse (1 complete, 0 more,
 * -EBADMSG). Zero *rings first. */
int devmem_nic_parse_rings(const void *buf, size_t len, uint32_t seq,
                           struct devmem_nic_rings *rings, struct devmem_nl_status *st,
                           struct devmem_err *err);

#endif /* DEVMEM_NIC_H */
