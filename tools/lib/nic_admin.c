/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The admin tools' NIC steps (see nic_admin.h), on the component's ethtool call.
 */
#include "build_config.h"

#include "nic.h"
#include "nic_admin.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <stdlib.h>
#include <string.h>

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

