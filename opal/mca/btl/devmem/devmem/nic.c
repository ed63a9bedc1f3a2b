/* SPDX-License-Identifier: BSD-3-Clause */
#include "build_config.h"

#include "nic.h"
#include "netlink.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef HAVE_LIBMNL
#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#endif

#define DEVMEM_ETHTOOL_FAMILY_NAME "ethtool"
#define DEVMEM_ETHTOOL_FAMILY_VERSION 1

/* Say what a bare errno means for a NIC step. */
static int nic_fail(int code, const char *ifname, const char *what, struct devmem_err *err)
{
    const char *hint = "";

    switch (code) {
    case EPERM:
        hint = " (needs CAP_NET_ADMIN)";
        break;
    case EOPNOTSUPP:
        hint = " (the driver does not implement it)";
        break;
    case ENODEV:
        hint = " (no such interface)";
        break;
    default:
        break;
    }
    return devmem_err_set(err, code, "ethtool: %s on %s: %s%s", what, ifname, strerror(code),
                          hint);
}

static int check_ifname(const char *ifname, const char *what, struct devmem_err *err)
{
    if (NULL == ifname || '\0' == ifname[0] || strlen(ifname) >= IFNAMSIZ) {
        return devmem_err_set(err, EINVAL, "ethtool: %s: invalid interface name", what);
    }
    return 0;
}

int devmem_nic_ethtool(const char *ifname, void *data, const char *what, struct devmem_err *err)
{
    struct ifreq ifr;
    int fd = -1;
    int rc;

    rc = check_ifname(ifname, what, err);
    if (rc < 0) {
        goto cleanup;
    }
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        /* ethtool ioctls reach the device from any socket family */
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    }
    if (fd < 0) {
        rc = devmem_err_set(err, errno, "ethtool: %s on %s: socket: %s", what, ifname,
                            strerror(errno));
        goto cleanup;
    }
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
    ifr.ifr_data = data;
    if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
        rc = nic_fail(errno, ifname, what, err);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

/* ---- RSS ---------------------------------------------------------------------------------- */

int devmem_nic_rx_rings(const char *ifname, uint32_t *n, struct devmem_err *err)
{
    struct ethtool_rxnfc nfc;
    int rc;

    memset(&nfc, 0, sizeof(nfc));
    nfc.cmd = ETHTOOL_GRXRINGS;
    rc = devmem_nic_ethtool(ifname, &nfc, "get RX rings", err);
    if (0 == rc) {
        *n = (uint32_t) nfc.data;
    }
    return rc;
}

int devmem_nic_get_indir(const char *ifname, struct ethtool_rxfh_indir **table,
                         struct devmem_err *err)
{
    struct ethtool_rxfh_indir head;
    struct ethtool_rxfh_indir *t = NULL;
    int rc;

    *table = NULL;
    memset(&head, 0, sizeof(head));
    head.cmd = ETHTOOL_GRXFHINDIR; /* size 0: the kernel says how large the table is */
    rc = devmem_nic_ethtool(ifname, &head, "get RSS table size", err);
    if (rc < 0) {
        goto cleanup;
    }
    if (0 == head.size || head.size > 65536) {
        rc = devmem_err_set(err, EOPNOTSUPP, "ethtool: get RSS table on %s: the driver reports "
                            "a table of %u entries", ifname, head.size);
        goto cleanup;
    }
    t = calloc(1, sizeof(*t) + head.size * sizeof(t->ring_index[0]));
    if (NULL == t) {
        rc = devmem_err_set(err, ENOMEM, "ethtool: get RSS table on %s: out of memory", ifname);
        goto cleanup;
    }
    t->cmd = ETHTOOL_GRXFHINDIR;
    t->size = head.size;
    rc = devmem_nic_ethtool(ifname, t, "get RSS table", err);
    if (rc < 0) {
        goto cleanup;
    }
    *table = t;
    t = NULL;
cleanup:
    free(t);
    return rc;
}

int devmem_nic_get_rss(const char *ifname, struct devmem_nic_rss *rss, struct devmem_err *err)
{
    struct ethtool_rxfh_indir *t = NULL;
    int rc;

    memset(rss, 0, sizeof(*rss));
    rc = devmem_nic_rx_rings(ifname, &rss->rx_rings, err);
    if (rc < 0) {
        goto cleanup;
    }
    rc = devmem_nic_get_indir(ifname, &t, err);
    if (rc < 0) {
        goto cleanup;
    }
    rss->table_size = t->size;
    for (uint32_t i = 0; i < t->size; i++) {
        if (t->ring_index[i] + 1 > rss->spread) {
            rss->spread = t->ring_index[i] + 1;
        }
    }
cleanup:
    free(t);
    return rc;
}

int devmem_nic_rss_ctx_create(const char *ifname, unsigned int first, unsigned int n,
                              uint32_t *ctx, struct devmem_err *err)
{
    struct ethtool_rxfh head, *t = NULL;
    int rc;

    *ctx = 0;
    if (0 == n) {
        return devmem_err_set(err, EINVAL, "ethtool: create RSS context on %s: no queues",
                              ifname);
    }
    memset(&head, 0, sizeof(head));
    head.cmd = ETHTOOL_GRSSH; /* sizes 0: the kernel says how large the table and key are */
    rc = devmem_nic_ethtool(ifname, &head, "get RSS table size", err);
    if (rc < 0) {
        goto cleanup;
    }
    if (0 == head.indir_size || head.indir_size > 65536) {
        rc = devmem_err_set(err, EOPNOTSUPP, "ethtool: create RSS context on %s: the driver "
                            "reports an RSS table of %u entries", ifname, head.indir_size);
        goto cleanup;
    }
    t = calloc(1, sizeof(*t) + head.indir_size * sizeof(t->rss_config[0]));
    if (NULL == t) {
        rc = devmem_err_set(err, ENOMEM, "ethtool: create RSS context on %s: out of memory",
                            ifname);
        goto cleanup;
    }
    t->cmd = ETHTOOL_SRSSH;
    t->rss_context = ETH_RXFH_CONTEXT_ALLOC;
    t->indir_size = head.indir_size;
    t->key_size = 0;                  /* the driver's key */
    t->hfunc = 0;                     /* and its hash function (ETH_RSS_HASH_NO_CHANGE) */
    for (uint32_t i = 0; i < head.indir_size; i++) {
        t->rss_config[i] = first + i % n;
    }
    rc = devmem_nic_ethtool(ifname, t, "create RSS context", err);
    if (rc < 0) {
        goto cleanup;
    }
    *ctx = t->rss_context; /* the kernel writes the new context's id back */
cleanup:
    free(t);
    return rc;
}

int devmem_nic_rss_ctx_delete(const char *ifname, uint32_t ctx, struct devmem_err *err)
{
    struct ethtool_rxfh t;

    memset(&t, 0, sizeof(t));
    t.cmd = ETHTOOL_SRSSH;
    t.rss_context = ctx; /* a table size of 0 on a context other than 0 deletes it */
    t.hfunc = 0; /* ETH_RSS_HASH_NO_CHANGE, kernel-internal */
    return devmem_nic_ethtool(ifname, &t, "delete RSS context", err);
}

/* ---- ntuple and flow rules ---------------------------------------------------------------- */

int devmem_nic_flow_spec(const struct devmem_nic_flow *flow, uint32_t location,
                         struct ethtool_rx_flow_spec *fs)
{
    static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

    if (NULL == flow || NULL == fs || 0 == flow->dst_port) {
        return -EINVAL;
    }
    memset(fs, 0, sizeof(*fs));
    if (AF_INET == flow->family) {
        struct ethtool_tcpip4_spec *h = &fs->h_u.tcp_ip4_spec, *m = &fs->m_u.tcp_ip4_spec;

        fs->flow_type = TCP_V4_FLOW;
        h->pdst = htons(flow->dst_port);
        m->pdst = 0xffff;
        if (0 != flow->dst.v4.s_addr) {
            h->ip4dst = flow->dst.v4.s_addr;
            m->ip4dst = 0xffffffff;
        }
        if (0 != flow->src.v4.s_addr) {
            h->ip4src = flow->src.v4.s_addr;
            m->ip4src = 0xffffffff;
        }
        if (0 != flow->src_port) {
            h->psrc = htons(flow->src_port);
            m->psrc = 0xffff;
        }
    } else if (AF_INET6 == flow->family) {
        struct ethtool_tcpip6_spec *h = &fs->h_u.tcp_ip6_spec, *m = &fs->m_u.tcp_ip6_spec;

        fs->flow_type = TCP_V6_FLOW;
        h->pdst = htons(flow->dst_port);
        m->pdst = 0xffff;
        if (0 != memcmp(&flow->dst.v6, &any6, sizeof(any6))) {
            memcpy(h->ip6dst, &flow->dst.v6, sizeof(h->ip6dst));
            memset(m->ip6dst, 0xff, sizeof(m->ip6dst));
        }
        if (0 != memcmp(&flow->src.v6, &any6, sizeof(any6))) {
            memcpy(h->ip6src, &flow->src.v6, sizeof(h->ip6src));
            memset(m->ip6src, 0xff, sizeof(m->ip6src));
        }
        if (0 != flow->src_port) {
            h->psrc = htons(flow->src_port);
            m->psrc = 0xffff;
        }
    } else {
        return -EINVAL;
    }
    if (0 != flow->rss_context) {
        fs->flow_type |= FLOW_RSS; /* the rxnfc's rss_context names the context */
    }
    fs->ring_cookie = flow->queue;
    fs->location = location;
    return 0;
}

/* Where to insert a rule: RX_CLS_LOC_ANY when the driver chooses, else the lowest free slot. */
static int rule_location(const char *ifname, uint32_t *loc, struct devmem_err *err)
{
    struct ethtool_rxnfc cnt;
    struct ethtool_rxnfc *all = NULL;
    uint32_t table;
    int rc;

    memset(&cnt, 0, sizeof(cnt));
    cnt.cmd = ETHTOOL_GRXCLSRLCNT;
    rc = devmem_nic_ethtool(ifname, &cnt, "count flow rules", err);
    if (rc < 0) {
        goto cleanup;
    }
    if (cnt.data & RX_CLS_LOC_SPECIAL) {
        *loc = RX_CLS_LOC_ANY;
        goto cleanup;
    }
    table = (uint32_t) cnt.data;
    if (cnt.rule_cnt > 65536) {
        rc = devmem_err_set(err, EBADMSG, "ethtool: flow rules on %s: the driver counts %u",
                            ifname, cnt.rule_cnt);
        goto cleanup;
    }
    all = calloc(1, sizeof(*all) + cnt.rule_cnt * sizeof(all->rule_locs[0]));
    if (NULL == all) {
        rc = devmem_err_set(err, ENOMEM, "ethtool: flow rules on %s: out of memory", ifname);
        goto cleanup;
    }
    all->cmd = ETHTOOL_GRXCLSRLALL;
    all->rule_cnt = cnt.rule_cnt;
    rc = devmem_nic_ethtool(ifname, all, "list flow rules", err);
    if (rc < 0) {
        goto cleanup;
    }
    for (uint32_t l = 0; l < table; l++) {
        int used = 0;

        for (uint32_t i = 0; i < all->rule_cnt && i < cnt.rule_cnt; i++) {
            used |= all->rule_locs[i] == l;
        }
        if (!used) {
            *loc = l;
            goto cleanup;
        }
    }
    rc = devmem_err_set(err, ENOSPC, "ethtool: flow rules on %s: all %u slots are in use", ifname,
                        table);
cleanup:
    free(all);
    return rc;
}

int devmem_nic_flow_add(const char *ifname, const struct devmem_nic_flow *flow,
                        uint32_t *rule_id, struct devmem_err *err)
{
    struct ethtool_rxnfc nfc;
    uint32_t loc = RX_CLS_LOC_ANY;
    int rc;

    rc = check_ifname(ifname, "add flow rule", err);
    if (rc < 0) {
        goto cleanup;
    }
    memset(&nfc, 0, sizeof(nfc));
    if (devmem_nic_flow_spec(flow, loc, &nfc.fs) < 0) {
        rc = devmem_err_set(err, EINVAL, "ethtool: add flow rule on %s: a TCP flow needs an "
                            "address family and a destination port", ifname);
        goto cleanup;
    }
    rc = rule_location(ifname, &loc, err);
    if (rc < 0) {
        goto cleanup;
    }
    nfc.cmd = ETHTOOL_SRXCLSRLINS;
    nfc.fs.location = loc;
    nfc.rss_context = flow->rss_context;
    rc = devmem_nic_ethtool(ifname, &nfc, "add flow rule", err);
    if (rc < 0) {
        goto cleanup;
    }
    /* the kernel copies the rule back with the location the driver chose */
    *rule_id = nfc.fs.location;
cleanup:
    return rc;
}

int devmem_nic_flow_del(const char *ifname, uint32_t rule_id, struct devmem_err *err)
{
    struct ethtool_rxnfc nfc;

    memset(&nfc, 0, sizeof(nfc));
    nfc.cmd = ETHTOOL_SRXCLSRLDEL;
    nfc.fs.location = rule_id;
    return devmem_nic_ethtool(ifname, &nfc, "delete flow rule", err);
}

/* ---- header split: ethtool netlink rings --------------------------------------------------- */

#ifdef HAVE_LIBMNL

const char *const devmem_nic_rings_attr_names[DEVMEM_NIC_RINGS_ATTR_NAMES] = {
    [DEVMEM_ETHTOOL_A_RINGS_HEADER] = "header",
    [DEVMEM_ETHTOOL_A_RINGS_RX_BUF_LEN] = "rx-buf-len",
    [DEVMEM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT] = "tcp-data-split",
    [DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH] = "hds-thresh",
};

struct nlmsghdr *devmem_nic_rings_header(void *buf, size_t size, uint16_t family, uint32_t seq,
                                         uint8_t cmd, const char *ifname)
{
    struct nlmsghdr *nlh;
    struct nlattr *nest;

    if (NULL == ifname || strlen(ifname) >= IFNAMSIZ) {
        return NULL;
    }
    nlh = devmem_nl_put_genl_header(buf, size, family, NLM_F_REQUEST | NLM_F_ACK, seq, cmd,
                                    DEVMEM_ETHTOOL_FAMILY_VERSION);
    if (NULL == nlh) {
        return NULL;
    }
    nest = mnl_attr_nest_start_check(nlh, size, DEVMEM_ETHTOOL_A_RINGS_HEADER);
    if (NULL == nest || !mnl_attr_put_strz_check(nlh, size, ETHTOOL_A_HEADER_DEV_NAME, ifname)) {
        return NULL;
    }
    mnl_attr_nest_end(nlh, nest);
    return nlh;
}

int devmem_nic_build_rings_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname)
{
    struct nlmsghdr *nlh = devmem_nic_rings_header(buf, size, family, seq, ETHTOOL_MSG_RINGS_GET,
                                                   ifname);

    return NULL == nlh ? -ENOBUFS : (int) nlh->nlmsg_len;
}

static int rings_attr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct devmem_nic_rings *r = arg;

    switch (type) {
    case DEVMEM_ETHTOOL_A_RINGS_RX_MAX:
        return devmem_nl_get_u32(payload, len, &r->rx_max);
    case DEVMEM_ETHTOOL_A_RINGS_TX_MAX:
        return devmem_nl_get_u32(payload, len, &r->tx_max);
    case DEVMEM_ETHTOOL_A_RINGS_RX:
        return devmem_nl_get_u32(payload, len, &r->rx);
    case DEVMEM_ETHTOOL_A_RINGS_TX:
        return devmem_nl_get_u32(payload, len, &r->tx);
    case DEVMEM_ETHTOOL_A_RINGS_RX_BUF_LEN:
        r->has_rx_buf_len = 1;
        return devmem_nl_get_u32(payload, len, &r->rx_buf_len);
    case DEVMEM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT:
        if (1 != len || *(const uint8_t *) payload > DEVMEM_NIC_HDS_ON) {
            return -EBADMSG;
        }
        r->tcp_data_split = (enum devmem_nic_hds) * (const uint8_t *) payload;
        return 0;
    case DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH:
        r->has_hds_thresh = 1;
        return devmem_nl_get_u32(payload, len, &r->hds_thresh);
    case DEVMEM_ETHTOOL_A_RINGS_HDS_THRESH_MAX:
        return devmem_nl_get_u32(payload, len, &r->hds_thresh_max);
    default:
        return 0;
    }
}

static int rings_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err)
{
    return devmem_nl_genl_attrs(nlh, rings_attr_cb, arg, err);
}

int devmem_nic_parse_rings(const void *buf, size_t len, uint32_t seq,
                           struct devmem_nic_rings *rings, struct devmem_nl_status *st,
                           struct devmem_err *err)
{
    return devmem_nl_parse(buf, len, seq, rings_cb, rings, st, err);
}

static int build_get(void *buf, size_t size, uint16_t family, uint32_t seq, const char *ifname,
                     const void *arg)
{
    (void) arg;
    return devmem_nic_build_rings_get(buf, size, family, seq, ifname);
}

int devmem_nic_rings_exchange(const char *ifname, devmem_nic_rings_build_fn build,
                              const void *arg, struct devmem_nic_rings *rings, const char *what,
                              struct devmem_err *err)
{
    struct devmem_nl *nl = NULL;
    unsigned char req[128];
    char label[96];
    int rc;

    rc = check_ifname(ifname, what, err);
    if (rc < 0) {
        goto cleanup;
    }
    rc = devmem_nl_open_family(&nl, DEVMEM_ETHTOOL_FAMILY_NAME, err);
    if (rc < 0) {
        goto cleanup;
    }
    rc = build(req, sizeof(req), devmem_nl_family_id(nl), devmem_nl_next_seq(nl), ifname, arg);
    if (rc < 0) {
        rc = devmem_err_set(err, -rc, "ethtool: %s on %s: cannot build the request", what,
                            ifname);
        goto cleanup;
    }
    snprintf(label, sizeof(label), "ethtool %s on %s", what, ifname);
    rc = devmem_nl_transact(nl, req, (size_t) rc, NULL == rings ? NULL : rings_cb, rings, label,
                            devmem_nic_rings_attr_names, DEVMEM_NIC_RINGS_ATTR_NAMES, err);
cleanup:
    devmem_nl_close(nl);
    return rc;
}

int devmem_nic_get_rings(const char *ifname, struct devmem_nic_rings *rings,
                         struct devmem_err *err)
{
    memset(rings, 0, sizeof(*rings));
    return devmem_nic_rings_exchange(ifname, build_get, NULL, rings, "rings-get", err);
}

#else /* !HAVE_LIBMNL */

int devmem_nic_build_rings_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                               const char *ifname)
{
    return -EOPNOTSUPP;
}

int devmem_nic_parse_rings(const void *buf, size_t len, uint32_t seq,
                           struct devmem_nic_rings *rings, struct devmem_nl_status *st,
                           struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "built without libmnl");
}

int devmem_nic_get_rings(const char *ifname, struct devmem_nic_rings *rings,
                         struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "ethtool rings-get: built without libmnl "
                          "(header split is read through ethtool netlink)");
}

#endif /* HAVE_LIBMNL */
