/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The admin tools' NIC steps (see nic_admin.h), on the component's ethtool call.
 */
#include "build_config.h"

#include "nic.h"
#include "nic_admin.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_LIBMNL
#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/netlink.h>

#include "netlink.h"
#endif

static void copy_field(char *dst, size_t dstsize, const char *src, size_t srcsize)
{
    size_t n = strnlen(src, srcsize);

    if (n >= dstsize) {
        n = dstsize - 1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int devmem_nic_drvinfo(const char *ifname, struct devmem_nic_drvinfo *info,
                       struct devmem_err *err)
{
    struct ethtool_drvinfo di;
    int rc;

    memset(&di, 0, sizeof(di));
    di.cmd = ETHTOOL_GDRVINFO;
    rc = devmem_nic_ethtool(ifname, &di, "driver info", err);
    if (rc < 0) {
        goto cleanup;
    }
    copy_field(info->driver, sizeof(info->driver), di.driver, sizeof(di.driver));
    copy_field(info->version, sizeof(info->version), di.version, sizeof(di.version));
    copy_field(info->fw_version, sizeof(info->fw_version), di.fw_version,
               sizeof(di.fw_version));
    copy_field(info->bus_info, sizeof(info->bus_info), di.bus_info, sizeof(di.bus_info));
cleanup:
    return rc;
}

int devmem_nic_get_channels(const char *ifname, struct devmem_nic_channels *ch,
                            struct devmem_err *err)
{
    struct ethtool_channels c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.cmd = ETHTOOL_GCHANNELS;
    rc = devmem_nic_ethtool(ifname, &c, "get channels", err);
    if (rc < 0) {
        goto cleanup;
    }
    ch->max_rx = c.max_rx;
    ch->max_tx = c.max_tx;
    ch->max_other = c.max_other;
    ch->max_combined = c.max_combined;
    ch->rx = c.rx_count;
    ch->tx = c.tx_count;
    ch->other = c.other_count;
    ch->combined = c.combined_count;
cleanup:
    return rc;
}

int devmem_nic_set_channels(const char *ifname, const struct devmem_nic_channels *ch,
                            struct devmem_err *err)
{
    struct ethtool_channels c;

    memset(&c, 0, sizeof(c));
    c.cmd = ETHTOOL_SCHANNELS;
    c.rx_count = ch->rx;
    c.tx_count = ch->tx;
    c.other_count = ch->other;
    c.combined_count = ch->combined;
    return devmem_nic_ethtool(ifname, &c, "set channels", err);
}

int devmem_nic_set_rss_equal(const char *ifname, unsigned int nqueues, struct devmem_err *err)
{
    struct ethtool_rxfh_indir *t = NULL;
    uint32_t rings = 0;
    int rc;

    rc = devmem_nic_rx_rings(ifname, &rings, err);
    if (rc < 0) {
        goto cleanup;
    }
    if (0 == nqueues || nqueues > rings) {
        rc = devmem_err_set(err, EINVAL, "ethtool: set RSS on %s: %u queues asked, the device "
                            "has %u RX rings", ifname, nqueues, rings);
        goto cleanup;
    }
    rc = devmem_nic_get_indir(ifname, &t, err);
    if (rc < 0) {
        goto cleanup;
    }
    t->cmd = ETHTOOL_SRXFHINDIR;
    for (uint32_t i = 0; i < t->size; i++) {
        t->ring_index[i] = i % nqueues;
    }
    rc = devmem_nic_ethtool(ifname, t, "set RSS table", err);
cleanup:
    free(t);
    return rc;
}

int devmem_nic_reset_rss(const char *ifname, struct devmem_err *err)
{
    struct ethtool_rxfh_indir t;

    memset(&t, 0, sizeof(t));
    t.cmd = ETHTOOL_SRXFHINDIR; /* size 0 restores the driver's default spreading */
    return devmem_nic_ethtool(ifname, &t, "reset RSS table", err);
}

int devmem_nic_rss_ctx_queues(const char *ifname, uint32_t ctx, unsigned int first,
                              uint64_t *mask, struct devmem_err *err)
{
    struct ethtool_rxfh head, *t = NULL;
    int rc;

    *mask = 0;
    memset(&head, 0, sizeof(head));
    head.cmd = ETHTOOL_GRSSH;
    head.rss_context = ctx; /* sizes 0: the kernel says how large the table and key are */
    rc = devmem_nic_ethtool(ifname, &head, "get an RSS context's table size", err);
    if (rc < 0) {
        return rc;
    }
    if (head.indir_size > 65536 || head.key_size > 4096) {
        return devmem_err_set(err, EBADMSG, "ethtool: RSS context %u on %s: the driver reports "
                              "a table of %u entries and a key of %u bytes", ctx, ifname,
                              head.indir_size, head.key_size);
    }
    t = calloc(1, sizeof(*t) + head.indir_size * sizeof(t->rss_config[0]) + head.key_size);
    if (NULL == t) {
        return devmem_err_set(err, ENOMEM, "ethtool: RSS context %u on %s: out of memory", ctx,
                              ifname);
    }
    t->cmd = ETHTOOL_GRSSH;
    t->rss_context = ctx;
    t->indir_size = head.indir_size;
    t->key_size = head.key_size;
    rc = devmem_nic_ethtool(ifname, t, "read an RSS context's table", err);
    for (uint32_t i = 0; 0 == rc && i < t->indir_size && i < head.indir_size; i++) {
        if (t->rss_config[i] >= first && t->rss_config[i] - first < 64) {
            *mask |= 1ull << (t->rss_config[i] - first);
        }
    }
    free(t);
    return rc;
}

int devmem_nic_get_ntuple(const char *ifname, int *on, struct devmem_err *err)
{
    struct ethtool_value v;
    int rc;

    memset(&v, 0, sizeof(v));
    v.cmd = ETHTOOL_GFLAGS;
    rc = devmem_nic_ethtool(ifname, &v, "get ntuple", err);
    if (0 == rc) {
        *on = 0 != (v.data & ETH_FLAG_NTUPLE);
    }
    return rc;
}

int devmem_nic_set_ntuple(const char *ifname, int on, struct devmem_err *err)
{
    struct ethtool_value v;
    int rc;

    memset(&v, 0, sizeof(v));
    v.cmd = ETHTOOL_GFLAGS; /* keep the other legacy flags (LRO, VLAN offloads) as they are */
    rc = devmem_nic_ethtool(ifname, &v, "get ntuple", err);
    if (rc < 0) {
        goto cleanup;
    }
    v.cmd = ETHTOOL_SFLAGS;
    v.data = on ? (v.data | ETH_FLAG_NTUPLE) : (v.data & ~(uint32_t) ETH_FLAG_NTUPLE);
    rc = devmem_nic_ethtool(ifname, &v, on ? "ntuple on" : "ntuple off", err);
cleanup:
    return rc;
}

int devmem_nic_flow_rules(const char *ifname, uint32_t *n_rules, uint32_t *table_size,
                          struct devmem_err *err)
{
    struct ethtool_rxnfc cnt;
    int rc;

    memset(&cnt, 0, sizeof(cnt));
    cnt.cmd = ETHTOOL_GRXCLSRLCNT;
    rc = devmem_nic_ethtool(ifname, &cnt, "count flow rules", err);
    if (0 == rc) {
        *n_rules = cnt.rule_cnt;
        *table_size = (uint32_t) (cnt.data & ~(uint64_t) RX_CLS_LOC_SPECIAL);
    }
    return rc;
}

int devmem_nic_flow_list(const char *ifname, struct devmem_nic_rule *rules, size_t cap,
                         size_t *n, struct devmem_err *err)
{
    struct ethtool_rxnfc cnt;
    struct ethtool_rxnfc *all = NULL;
    int rc;

    *n = 0;
    memset(&cnt, 0, sizeof(cnt));
    cnt.cmd = ETHTOOL_GRXCLSRLCNT;
    if ((rc = devmem_nic_ethtool(ifname, &cnt, "count flow rules", err)) < 0) {
        return rc;
    }
    if (cnt.rule_cnt > 65536) {
        return devmem_err_set(err, EBADMSG, "ethtool: flow rules on %s: the driver counts %u",
                              ifname, cnt.rule_cnt);
    }
    if (0 == cnt.rule_cnt) {
        return 0;
    }
    all = calloc(1, sizeof(*all) + cnt.rule_cnt * sizeof(all->rule_locs[0]));
    if (NULL == all) {
        return devmem_err_set(err, ENOMEM, "ethtool: flow rules on %s: out of memory", ifname);
    }
    all->cmd = ETHTOOL_GRXCLSRLALL;
    all->rule_cnt = cnt.rule_cnt;
    rc = devmem_nic_ethtool(ifname, all, "list flow rules", err);
    for (uint32_t i = 0; 0 == rc && i < all->rule_cnt && i < cnt.rule_cnt; i++) {
        struct ethtool_rxnfc one;

        memset(&one, 0, sizeof(one));
        one.cmd = ETHTOOL_GRXCLSRULE;
        one.fs.location = all->rule_locs[i];
        if ((rc = devmem_nic_ethtool(ifname, &one, "read a flow rule", err)) < 0) {
            break;
        }
        if (*n < cap) {
            rules[*n].location = one.fs.location;
            rules[*n].drop = RX_CLS_FLOW_DISC == one.fs.ring_cookie;
            rules[*n].queue = (uint32_t) ethtool_get_flow_spec_ring(one.fs.ring_cookie);
            /* the driver names the context in the rxnfc of a FLOW_RSS rule */
            rules[*n].rss_ctx = (one.fs.flow_type & FLOW_RSS) ? one.rss_context : 0;
        }
        (*n)++;
    }
    free(all);
    return rc;
}

/* ---- header split and RX buffer length: ethtool netlink rings-set ------------------------- */

#ifdef HAVE_LIBMNL

int devmem_nic_build_rings_set(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname, enum devmem_nic_hds split, int set_thresh,
                               uint32_t thresh)
{
    struct nlmsghdr *nlh;

    if (split > DEVMEM_NIC_HDS_ON) {
        return -EINVAL;
    }
    nlh = devmem_nic_rings_header(buf, size, family, seq, ETHTOOL_MSG_RINGS_SET, ifname);
    if (NULL == nlh
        || (DEVMEM_NIC_HDS_UNKNOWN != split
            && !mnl_attr_put_u8_check(nlh, size, DEVMEM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT,
                                      (uint8_t) split))
        || (set_thresh
            && !mnl_attr_put_u32_check(nlh, size, DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH, thresh))) {
        return -ENOBUFS;
    }
    return (int) nlh->nlmsg_len;
}

int devmem_nic_build_rings_set_rx_buf_len(void *buf, size_t size, uint16_t family, uint32_t seq,
                                          const char *ifname, uint32_t len)
{
    struct nlmsghdr *nlh;

    if (0 == len) {
        return -EINVAL;
    }
    nlh = devmem_nic_rings_header(buf, size, family, seq, ETHTOOL_MSG_RINGS_SET, ifname);
    if (NULL == nlh
        || !mnl_attr_put_u32_check(nlh, size, DEVMEM_ETHTOOL_A_RINGS_RX_BUF_LEN, len)) {
        return -ENOBUFS;
    }
    return (int) nlh->nlmsg_len;
}

int devmem_nic_rings_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                                const char *ifname, const char *what, struct devmem_err *err)
{
    char label[96];

    snprintf(label, sizeof(label), "ethtool %s on %s", what, ifname);
    return devmem_nl_status_err(st, req, len, label, devmem_nic_rings_attr_names,
                                DEVMEM_NIC_RINGS_ATTR_NAMES, err);
}

/* What a rings-set carries: rx_buf_len alone when it is not 0, else split and thresh. */
struct rings_set {
    enum devmem_nic_hds split;
    int set_thresh;
    uint32_t thresh;
    uint32_t rx_buf_len;
};

static int build_set(void *buf, size_t size, uint16_t family, uint32_t seq, const char *ifname,
                     const void *arg)
{
    const struct rings_set *r = arg;

    return 0 != r->rx_buf_len
               ? devmem_nic_build_rings_set_rx_buf_len(buf, size, family, seq, ifname,
                                                       r->rx_buf_len)
               : devmem_nic_build_rings_set(buf, size, family, seq, ifname, r->split,
                                            r->set_thresh, r->thresh);
}

int devmem_nic_set_header_split(const char *ifname, enum devmem_nic_hds split, int set_thresh,
                                uint32_t thresh, struct devmem_err *err)
{
    if (DEVMEM_NIC_HDS_UNKNOWN == split && !set_thresh) {
        return 0; /* nothing asked */
    }
    struct rings_set r = {split, set_thresh, thresh, 0};

    return devmem_nic_rings_exchange(ifname, build_set, &r, NULL, "rings-set", err);
}

int devmem_nic_set_rx_buf_len(const char *ifname, uint32_t len, uint32_t *in_use,
                              struct devmem_err *err)
{
    struct rings_set r = {DEVMEM_NIC_HDS_UNKNOWN, 0, 0, len};
    struct devmem_nic_rings rings;
    char what[48];
    int rc;

    if (0 == len) {
        return devmem_err_set(err, EINVAL, "ethtool rx-buf-len on %s: a length of 0 bytes",
                              NULL == ifname ? "(null)" : ifname);
    }
    snprintf(what, sizeof(what), "rings-set rx-buf-len %u", (unsigned) len);
    rc = devmem_nic_rings_exchange(ifname, build_set, &r, NULL, what, err);
    if (0 == rc && NULL != in_use) {
        /* what the driver made of it: it may round, or keep a length of its own */
        rc = devmem_nic_get_rings(ifname, &rings, err);
        *in_use = 0 == rc && rings.has_rx_buf_len ? rings.rx_buf_len : 0;
    }
    return rc;
}

#else /* !HAVE_LIBMNL */

int devmem_nic_build_rings_set(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname, enum devmem_nic_hds split, int set_thresh,
                               uint32_t thresh)
{
    return -EOPNOTSUPP;
}


int devmem_nic_build_rings_set_rx_buf_len(void *buf, size_t size, uint16_t family, uint32_t seq,
                                          const char *ifname, uint32_t len)
{
    return -EOPNOTSUPP;
}

int devmem_nic_rings_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                                const char *ifname, const char *what, struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "built without libmnl");
}

int devmem_nic_set_rx_buf_len(const char *ifname, uint32_t len, uint32_t *in_use,
                              struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "ethtool rings-set: built without libmnl "
                          "(rx-buf-len is set through ethtool netlink)");
}


int devmem_nic_set_header_split(const char *ifname, enum devmem_nic_hds split, int set_thresh,
                                uint32_t thresh, struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "ethtool rings-set: built without libmnl "
                          "(header split is set through ethtool netlink)");
}

#endif /* HAVE_LIBMNL */
