/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC steps only the admin tools take (devmem-probe, devmem-helperd): driver facts,
 * channel counts, spreading RSS, ntuple, listing flow rules, and setting header split and
 * the RX buffer length. A rank never calls them, so
 * they live here rather than in the component; the calls a rank makes are
 * opal/mca/btl/devmem/devmem/nic.h. Same conventions: stateless, 0 or -errno with err.
 */
#ifndef DEVMEM_NIC_ADMIN_H
#define DEVMEM_NIC_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "nic.h"

struct devmem_nl_status;

/* ETHTOOL_GDRVINFO */
struct devmem_nic_drvinfo {
    char driver[32];
    char version[32];
    char fw_version[32];
    char bus_info[32];
};

int devmem_nic_drvinfo(const char *ifname, struct devmem_nic_drvinfo *info,
                       struct devmem_err *err);

/* ETHTOOL_GCHANNELS / ETHTOOL_SCHANNELS */
struct devmem_nic_channels {
    uint32_t max_rx, max_tx, max_other, max_combined; /* ignored when setting */
    uint32_t rx, tx, other, combined;
};

int devmem_nic_get_channels(const char *ifname, struct devmem_nic_channels *ch,
                            struct devmem_err *err);
int devmem_nic_set_channels(const char *ifname, const struct devmem_nic_channels *ch,
                            struct devmem_err *err);

/* Spread RSS over queues 0..nqueues-1 only ("ethtool -X IF equal N"), keeping the devmem
 * queues above them free of RSS traffic. */
int devmem_nic_set_rss_equal(const char *ifname, unsigned int nqueues, struct devmem_err *err);
/* Give the table back to the driver's default. */
int devmem_nic_reset_rss(const char *ifname, struct devmem_err *err);

/* ETHTOOL_GRSSH of context ctx: the queues its indirection table spreads over, as a mask of
 * queues first .. first + 63 (the others are left out). */
int devmem_nic_rss_ctx_queues(const char *ifname, uint32_t ctx, unsigned int first,
                              uint64_t *mask, struct devmem_err *err);

/* ntuple filters ("ethtool -K IF ntuple on"), through ETHTOOL_GFLAGS / SFLAGS. */
int devmem_nic_get_ntuple(const char *ifname, int *on, struct devmem_err *err);
int devmem_nic_set_ntuple(const char *ifname, int on, struct devmem_err *err);

/* ETHTOOL_GRXCLSRLCNT: rules in use and the size of the rule table (0 when the driver places
 * rules itself). Answers without changing anything: the probe's "can it steer" question. */
int devmem_nic_flow_rules(const char *ifname, uint32_t *n_rules, uint32_t *table_size,
                          struct devmem_err *err);
/* One installed rule: where it sits and the RX queue it sends to (drop: it discards). */
struct devmem_nic_rule {
    uint32_t location;
    uint32_t queue;   /* with rss_ctx: an offset added to the context's choice */
    uint32_t rss_ctx; /* the rule steers into this RSS context (FLOW_RSS); 0: into queue */
    int drop;
};

/* ETHTOOL_GRXCLSRLALL + GRXCLSRULE: up to cap of the installed rules into rules[], their count
 * in *n (which may exceed cap: the rest are not listed). */
int devmem_nic_flow_list(const char *ifname, struct devmem_nic_rule *rules, size_t cap,
                         size_t *n, struct devmem_err *err);

/* Set tcp-data-split to `split` (UNKNOWN: leave it), and hds-thresh to `thresh` when
 * set_thresh. Header split for devmem: (DEVMEM_NIC_HDS_ON, 1, 0); restore with the values
 * devmem_nic_get_rings returned. */
int devmem_nic_set_header_split(const char *ifname, enum devmem_nic_hds split, int set_thresh,
                                uint32_t thresh, struct devmem_err *err);

/* The RX buffer length (ethtool rx-buf-len, ETHTOOL_A_RINGS_RX_BUF_LEN): device-wide, for
 * every RX queue of ifname; Linux 6.18 has no per-queue setting (netdev netlink has no
 * queue-set). Drivers without it refuse (EOPNOTSUPP, "setting rx buf len not supported");
 * err then names the interface, the value and the kernel's words. On success *in_use (may be
 * NULL) is the length the driver reports afterwards, 0 when it reports none. */
int devmem_nic_set_rx_buf_len(const char *ifname, uint32_t len, uint32_t *in_use,
                              struct devmem_err *err);

/* The rings-set requests, for the family id `family`; length or -errno. */
int devmem_nic_build_rings_set(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname, enum devmem_nic_hds split, int set_thresh,
                               uint32_t thresh);
/* rings-set with rx-buf-len `len` alone (0: -EINVAL, the kernel's policy refuses it). */
int devmem_nic_build_rings_set_rx_buf_len(void *buf, size_t size, uint16_t family, uint32_t seq,
                                          const char *ifname, uint32_t len);
/* Describe a refused rings exchange req[0..len) in err as the setters do: "netlink: ethtool
 * WHAT on IFNAME: <strerror> (kernel: <extack>) [it flagged <attribute>]"; -st->error. */
int devmem_nic_rings_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                                const char *ifname, const char *what, struct devmem_err *err);

#endif /* DEVMEM_NIC_ADMIN_H */
