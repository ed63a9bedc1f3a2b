/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NIC setup (devmem/nic.c): the pure encoders (ethtool flow spec, ethtool netlink rings
 * request and reply) checked field by field, then each NIC step against the real kernel on
 * lo, which supports none of them: EOPNOTSUPP, EPERM without CAP_NET_ADMIN, ENODEV for a
 * missing interface, EINVAL for a bad name, each with a clear message.
 * Exit 0 pass, 1 fail, 77 skip (built without libmnl).
 */
#define _GNU_SOURCE
#include "config.h"

#include "netlink.h"
#include "nic.h"
#include "nic_admin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <linux/ethtool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HAVE_LIBMNL
int main(void)
{
    printf("SKIP: built without libmnl\n");
    return 77;
}
#else

#include <libmnl/libmnl.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "check.h"

#define FAMILY 0x15
#define SEQ 77

static void test_flow_spec(void)
{
    struct ethtool_rx_flow_spec fs;
    struct devmem_nic_flow f;
    int ok;

    memset(&f, 0, sizeof(f));
    f.family = AF_INET;
    f.dst_port = 5201;
    f.queue = 7;
    inet_pton(AF_INET, "198.51.100.2", &f.dst.v4);
    ok = 0 == devmem_nic_flow_spec(&f, 3, &fs) && TCP_V4_FLOW == fs.flow_type
         && htons(5201) == fs.h_u.tcp_ip4_spec.pdst && 0xffff == fs.m_u.tcp_ip4_spec.pdst
         && f.dst.v4.s_addr == fs.h_u.tcp_ip4_spec.ip4dst
         && 0xffffffff == fs.m_u.tcp_ip4_spec.ip4dst && 0 == fs.m_u.tcp_ip4_spec.ip4src
         && 0 == fs.m_u.tcp_ip4_spec.psrc && 7 == fs.ring_cookie && 3 == fs.location;
    CHECK(ok, "flow spec: tcp4 3-tuple (dst 198.51.100.2:5201) to queue 7 at location 3");

    inet_pton(AF_INET, "198.51.100.1", &f.src.v4);
    f.src_port = 40000;
    ok = 0 == devmem_nic_flow_spec(&f, RX_CLS_LOC_ANY, &fs)
         && f.src.v4.s_addr == fs.h_u.tcp_ip4_spec.ip4src
         && 0xffffffff == fs.m_u.tcp_ip4_spec.ip4src && htons(40000) == fs.h_u.tcp_ip4_spec.psrc
         && 0xffff == fs.m_u.tcp_ip4_spec.psrc && RX_CLS_LOC_ANY == fs.location;
    CHECK(ok, "flow spec: tcp4 5-tuple sets and masks source address and port");

    memset(&f, 0, sizeof(f));
    f.family = AF_INET6;
    f.dst_port = 1;
    inet_pton(AF_INET6, "2001:db8::2", &f.dst.v6);
    ok = 0 == devmem_nic_flow_spec(&f, 0, &fs) && TCP_V6_FLOW == fs.flow_type
         && 0 == memcmp(fs.h_u.tcp_ip6_spec.ip6dst, &f.dst.v6, 16)
         && 0xffffffff == fs.m_u.tcp_ip6_spec.ip6dst[3] && 0 == fs.m_u.tcp_ip6_spec.ip6src[0]
         && htons(1) == fs.h_u.tcp_ip6_spec.pdst;
    CHECK(ok, "flow spec: tcp6 3-tuple (dst 2001:db8::2 port 1), source left unmasked");

    f.rss_context = 3;
    f.queue = 0;
    ok = 0 == devmem_nic_flow_spec(&f, 0, &fs) && (TCP_V6_FLOW | FLOW_RSS) == fs.flow_type
         && 0 == fs.ring_cookie;
    CHECK(ok, "flow spec: into RSS context 3, the flow type carries FLOW_RSS, offset 0");
    f.rss_context = 0;

    f.dst_port = 0;
    CHECK(-EINVAL == devmem_nic_flow_spec(&f, 0, &fs), "flow spec: dst_port 0 is refused");
    f.dst_port = 9;
    f.family = AF_UNIX;
    CHECK(-EINVAL == devmem_nic_flow_spec(&f, 0, &fs), "flow spec: AF_UNIX is refused");
}

struct seen {
    int header_ok, split, has_thresh, has_buf_len, n;
    uint32_t thresh, buf_len;
};

static int hdr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct seen *s = arg;

    if (ETHTOOL_A_HEADER_DEV_NAME == type && 3 == len && 0 == memcmp(payload, "lo", 3)) {
        s->header_ok = 1;
    }
    return 0;
}

static int rings_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct seen *s = arg;

    s->n++;
    if (1 == type) {
        return devmem_nl_attrs_walk(payload, len, hdr_cb, s);
    }
    if (11 == type && 1 == len) {
        s->split = *(const uint8_t *) payload;
    }
    if (17 == type && 4 == len) {
        s->has_thresh = 1;
        memcpy(&s->thresh, payload, 4);
    }
    if (10 == type && 4 == len) {
        s->has_buf_len = 1;
        memcpy(&s->buf_len, payload, 4);
    }
    return 0;
}

/* An empty rings-get reply in buf (size bytes), its attributes to follow. */
static struct nlmsghdr *rings_reply(void *buf, size_t size)
{
    struct nlmsghdr *nlh;

    memset(buf, 0, size);
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = FAMILY;
    nlh->nlmsg_seq = SEQ;
    ((struct genlmsghdr *) mnl_nlmsg_put_extra_header(nlh, sizeof(struct genlmsghdr)))->cmd =
        ETHTOOL_MSG_RINGS_GET_REPLY;
    return nlh;
}

/* rx-buf-len (ETHTOOL_A_RINGS_RX_BUF_LEN, 10): the request's bytes, a reply without it, and a
 * driver's refusal as the kernel sends it, described naming the NIC and the kernel's words. */
static void test_rx_buf_len(void)
{
    unsigned char req[256], buf[512];
    const struct genlmsghdr *genl = (const struct genlmsghdr *) (req + MNL_NLMSG_HDRLEN);
    struct devmem_nic_rings r;
    struct devmem_nl_status st;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    struct nlmsgerr *e;
    struct seen s;
    int n, rc;

    memset(&s, 0, sizeof(s));
    n = devmem_nic_build_rings_set_rx_buf_len(req, sizeof(req), FAMILY, SEQ, "lo", 32768);
    CHECK(n > 0 && ETHTOOL_MSG_RINGS_SET == genl->cmd
              && 0 == devmem_nl_attrs_walk(req + MNL_NLMSG_HDRLEN + GENL_HDRLEN,
                                           (size_t) n - MNL_NLMSG_HDRLEN - GENL_HDRLEN,
                                           rings_cb, &s)
              && 2 == s.n && s.header_ok && s.has_buf_len && 32768 == s.buf_len
              && !s.has_thresh && 0 == s.split,
          "rings-set rx-buf-len: header {dev-name \"lo\"}, rx-buf-len (10) u32 32768, nothing "
          "else");
    CHECK(n > 0 && (NLM_F_REQUEST | NLM_F_ACK) == ((struct nlmsghdr *) req)->nlmsg_flags
              && SEQ == ((struct nlmsghdr *) req)->nlmsg_seq
              && FAMILY == ((struct nlmsghdr *) req)->nlmsg_type,
          "rings-set rx-buf-len: a request with an ACK, of the family and seq given");
    CHECK(-EINVAL == devmem_nic_build_rings_set_rx_buf_len(buf, sizeof(buf), FAMILY, SEQ, "lo",
                                                           0),
          "rings-set rx-buf-len 0 is refused before the kernel (its policy: min 1)");
    CHECK(-ENOBUFS == devmem_nic_build_rings_set_rx_buf_len(buf, sizeof(buf), FAMILY, SEQ,
                                                            "name-too-long-for-ifnamsiz", 4096),
          "rings-set rx-buf-len: an interface name over IFNAMSIZ is refused");
    CHECK(-ENOBUFS == devmem_nic_build_rings_set_rx_buf_len(buf, 36, FAMILY, SEQ, "lo", 4096),
          "rings-set rx-buf-len: a buffer too small is refused, not overrun");

    /* a reply of a driver that does not report rx-buf-len (most): has_rx_buf_len stays 0 */
    nlh = rings_reply(buf, sizeof(buf));
    mnl_attr_put_u32(nlh, 6, 256);
    memset(&r, 0, sizeof(r));
    memset(&st, 0, sizeof(st));
    rc = devmem_nic_parse_rings(buf, nlh->nlmsg_len, SEQ, &r, &st, &err);
    CHECK(0 == rc && 256 == r.rx && !r.has_rx_buf_len && 0 == r.rx_buf_len,
          "rings reply without rx-buf-len: not reported (rc %d)", rc);
    /* rx-buf-len of the wrong size is malformed, not read past */
    mnl_attr_put_u16(nlh, 10, 4096);
    memset(&r, 0, sizeof(r));
    rc = devmem_nic_parse_rings(buf, nlh->nlmsg_len, SEQ, &r, &st, &err);
    CHECK(-EBADMSG == rc, "rings reply with a 2-byte rx-buf-len is malformed: \"%s\"", err.msg);

    /* the refusal of ethnl_set_rings_validate (net/ethtool/rings.c): EOPNOTSUPP, its extack
     * text, the offset of the attribute in the request, which is echoed in full */
    n = devmem_nic_build_rings_set_rx_buf_len(req, sizeof(req), FAMILY, SEQ, "eth0", 32768);
    memset(buf, 0, sizeof(buf));
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = NLMSG_ERROR;
    nlh->nlmsg_seq = SEQ;
    nlh->nlmsg_flags = NLM_F_ACK_TLVS;
    e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e) - sizeof(struct nlmsghdr)
                                            + MNL_ALIGN((size_t) n));
    e->error = -EOPNOTSUPP;
    memcpy(&e->msg, req, (size_t) n);
    mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, "setting rx buf len not supported");
    /* the rx-buf-len attribute is the last one of the request */
    mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS, (uint32_t) n - MNL_ATTR_HDRLEN - 4);
    memset(&st, 0, sizeof(st));
    rc = n > 0 ? devmem_nic_parse_rings(buf, nlh->nlmsg_len, SEQ, &r, &st, &err) : n;
    CHECK(1 == rc && EOPNOTSUPP == st.error
              && 0 == strcmp(st.msg, "setting rx buf len not supported"),
          "the driver's refusal parses: EOPNOTSUPP, \"%s\"", st.msg);
    rc = devmem_nic_rings_status_err(&st, req, (size_t) n, "eth0", "rings-set rx-buf-len 32768",
                                     &err);
    CHECK(-EOPNOTSUPP == rc && EOPNOTSUPP == err.code
              && NULL != strstr(err.msg, "ethtool rings-set rx-buf-len 32768 on eth0: ")
              && NULL != strstr(err.msg, strerror(EOPNOTSUPP))
              && NULL != strstr(err.msg, "(kernel: setting rx buf len not supported)")
              && NULL != strstr(err.msg, "[it flagged rx-buf-len]"),
          "the refusal names the NIC, the value, the kernel's words and the attribute: \"%s\"",
          err.msg);
    /* a driver refusing in its own set_ringparam may give no text: still the NIC and errno */
    st.msg[0] = '\0';
    st.has_offset = 0;
    rc = devmem_nic_rings_status_err(&st, req, (size_t) n, "eth0", "rings-set rx-buf-len 32768",
                                     &err);
    CHECK(-EOPNOTSUPP == rc && NULL != strstr(err.msg, "on eth0: ")
              && NULL != strstr(err.msg, "kernel gave no message"),
          "a refusal without extack still names the NIC: \"%s\"", err.msg);
}

static void test_rings_codec(void)
{
    unsigned char buf[512];
    const struct genlmsghdr *genl = (const struct genlmsghdr *) (buf + MNL_NLMSG_HDRLEN);
    struct devmem_nic_rings r;
    struct devmem_nl_status st;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    struct seen s;
    size_t len;
    int n, rc;

    memset(&s, 0, sizeof(s));
    n = devmem_nic_build_rings_set(buf, sizeof(buf), FAMILY, SEQ, "lo", DEVMEM_NIC_HDS_ON, 1, 0);
    CHECK(n > 0 && ETHTOOL_MSG_RINGS_SET == genl->cmd
              && 0 == devmem_nl_attrs_walk(buf + MNL_NLMSG_HDRLEN + GENL_HDRLEN,
                                           (size_t) n - MNL_NLMSG_HDRLEN - GENL_HDRLEN,
                                           rings_cb, &s)
              && 3 == s.n && s.header_ok && 2 == s.split && s.has_thresh && 0 == s.thresh,
          "rings-set: header {dev-name \"lo\"}, tcp-data-split (11) u8 2, hds-thresh (17) u32 0");

    memset(&s, 0, sizeof(s));
    n = devmem_nic_build_rings_set(buf, sizeof(buf), FAMILY, SEQ, "lo", DEVMEM_NIC_HDS_UNKNOWN,
                                   1, 256);
    CHECK(n > 0
              && 0 == devmem_nl_attrs_walk(buf + MNL_NLMSG_HDRLEN + GENL_HDRLEN,
                                           (size_t) n - MNL_NLMSG_HDRLEN - GENL_HDRLEN,
                                           rings_cb, &s)
              && 2 == s.n && 0 == s.split && s.has_thresh && 256 == s.thresh,
          "rings-set: split UNKNOWN leaves tcp-data-split out, hds-thresh 256 alone");

    memset(&s, 0, sizeof(s));
    n = devmem_nic_build_rings_get(buf, sizeof(buf), FAMILY, SEQ, "lo");
    CHECK(n > 0 && ETHTOOL_MSG_RINGS_GET == genl->cmd
              && 0 == devmem_nl_attrs_walk(buf + MNL_NLMSG_HDRLEN + GENL_HDRLEN,
                                           (size_t) n - MNL_NLMSG_HDRLEN - GENL_HDRLEN,
                                           rings_cb, &s)
              && 1 == s.n && s.header_ok,
          "rings-get: only the header with the device name");
    CHECK(-ENOBUFS == devmem_nic_build_rings_get(buf, sizeof(buf), FAMILY, SEQ,
                                                 "name-too-long-for-ifnamsiz"),
          "rings-get: an interface name over IFNAMSIZ is refused");

    /* a reply: rx 512/1024, tcp-data-split on, hds-thresh 0 of max 1024, rx-buf-len 32 KiB,
     * then ACK */
    nlh = rings_reply(buf, sizeof(buf));
    mnl_attr_put_u32(nlh, 2, 1024);
    mnl_attr_put_u32(nlh, 6, 512);
    mnl_attr_put_u8(nlh, 11, 2);
    mnl_attr_put_u32(nlh, 17, 0);
    mnl_attr_put_u32(nlh, 18, 1024);
    mnl_attr_put_u32(nlh, 10, 32768);
    len = nlh->nlmsg_len;
    nlh = mnl_nlmsg_put_header(buf + len);
    nlh->nlmsg_type = NLMSG_ERROR;
    nlh->nlmsg_seq = SEQ;
    nlh->nlmsg_flags = NLM_F_CAPPED;
    mnl_nlmsg_put_extra_header(nlh, sizeof(struct nlmsgerr));
    len += nlh->nlmsg_len;
    memset(&r, 0, sizeof(r));
    memset(&st, 0, sizeof(st));
    rc = devmem_nic_parse_rings(buf, len, SEQ, &r, &st, &err);
    CHECK(1 == rc && 0 == st.error && 512 == r.rx && 1024 == r.rx_max
              && DEVMEM_NIC_HDS_ON == r.tcp_data_split && r.has_hds_thresh && 0 == r.hds_thresh
              && 1024 == r.hds_thresh_max && r.has_rx_buf_len && 32768 == r.rx_buf_len,
          "rings reply: rx 512/1024, tcp-data-split on, hds-thresh 0 (max 1024), rx-buf-len "
          "32768");

    /* tcp-data-split with a value the kernel never sends */
    ((unsigned char *) mnl_attr_get_payload(
        (struct nlattr *) (buf + MNL_NLMSG_HDRLEN + GENL_HDRLEN + 16)))[0] = 9;
    memset(&r, 0, sizeof(r));
    rc = devmem_nic_parse_rings(buf, len, SEQ, &r, &st, &err);
    CHECK(-EBADMSG == rc, "rings reply with tcp-data-split 9 is malformed: \"%s\"", err.msg);
}

/* The NIC steps on lo: the kernel supports none of them there. */
static void test_lo(void)
{
    struct devmem_nic_drvinfo di;
    struct devmem_nic_channels ch;
    struct devmem_nic_rings r;
    struct devmem_nic_rss rss;
    struct devmem_nic_flow f;
    struct devmem_err e;
    uint32_t id = 0, n = 0, t = 0;
    int on = -1, rc;

    rc = devmem_nic_drvinfo("lo", &di, &e);
    CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "on lo: Operation not supported"),
          "driver info on lo: \"%s\"", e.msg);
    rc = devmem_nic_get_channels("lo", &ch, &e);
    CHECK(-EOPNOTSUPP == rc, "channels on lo: \"%s\"", e.msg);
    rc = devmem_nic_get_rings("lo", &r, &e);
    CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "rings-get on lo"),
          "rings (header split) on lo: \"%s\"", e.msg);
    rc = devmem_nic_get_rss("lo", &rss, &e);
    CHECK(-EOPNOTSUPP == rc, "RSS on lo: \"%s\"", e.msg);
    rc = devmem_nic_get_ntuple("lo", &on, &e);
    CHECK(0 == rc && 0 == on, "ntuple state on lo reads as off");
    rc = devmem_nic_flow_rules("lo", &n, &t, &e);
    CHECK(-EOPNOTSUPP == rc, "flow rule count on lo: \"%s\"", e.msg);
    {
        struct devmem_nic_rule rules[4];
        size_t nr = 99;
        rc = devmem_nic_flow_list("lo", rules, 4, &nr, &e);
        CHECK(-EOPNOTSUPP == rc && 0 == nr, "flow rule list on lo: \"%s\"", e.msg);
    }
    memset(&f, 0, sizeof(f));
    f.family = AF_INET;
    f.dst_port = 5201;
    rc = devmem_nic_flow_add("lo", &f, &id, &e);
    CHECK(-EOPNOTSUPP == rc, "flow rule on lo: \"%s\"", e.msg);
    rc = devmem_nic_rss_ctx_create("lo", 1, 2, &id, &e);
    CHECK(-EOPNOTSUPP == rc && 0 == id, "an RSS context on lo: \"%s\"", e.msg);
    rc = devmem_nic_rss_ctx_delete("lo", 1, &e);
    CHECK(-EOPNOTSUPP == rc, "deleting an RSS context on lo: \"%s\"", e.msg);
    if (0 == geteuid()) {
        rc = devmem_nic_set_header_split("lo", DEVMEM_NIC_HDS_ON, 1, 0, &e);
        CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "(kernel: "),
              "header split on lo: EOPNOTSUPP in the kernel's words: \"%s\"", e.msg);
        rc = devmem_nic_set_ntuple("lo", 1, &e);
        CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "does not implement it"),
              "ntuple on, on lo: \"%s\"", e.msg);
        rc = devmem_nic_set_rx_buf_len("lo", 32768, NULL, &e);
        CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "rx-buf-len 32768 on lo: ")
                  && NULL != strstr(e.msg, "(kernel"),
              "rx-buf-len on lo: EOPNOTSUPP, naming lo: \"%s\"", e.msg);
    }
    rc = devmem_nic_set_rx_buf_len("lo", 0, NULL, &e);
    CHECK(-EINVAL == rc && NULL != strstr(e.msg, "on lo"), "rx-buf-len 0: EINVAL \"%s\"",
          e.msg);
    rc = devmem_nic_drvinfo("dmnone0", &di, &e);
    CHECK(-ENODEV == rc && NULL != strstr(e.msg, "no such interface"),
          "a missing interface: ENODEV \"%s\"", e.msg);
    rc = devmem_nic_get_rings("dmnone0", &r, &e);
    CHECK(-ENODEV == rc, "rings on a missing interface: ENODEV \"%s\"", e.msg);
    rc = devmem_nic_get_channels("an-interface-name-too-long", &ch, &e);
    CHECK(-EINVAL == rc, "an interface name over IFNAMSIZ: EINVAL \"%s\"", e.msg);
}

/* Setting anything without CAP_NET_ADMIN: EPERM, saying so. */
static void test_unprivileged(void)
{
    pid_t pid;
    int status = 0;

    if (0 != geteuid()) {
        printf("note: not root; the EPERM checks below run as this user\n");
    }
    fflush(stdout);
    pid = fork();
    if (0 == pid) {
        struct devmem_nic_channels ch = {.combined = 1};
        struct devmem_err e;
        int bad = 0, rc;

        if (0 == geteuid()
            && (0 != setgroups(0, NULL) || 0 != setresgid(65534, 65534, 65534)
                || 0 != setresuid(65534, 65534, 65534))) {
            _exit(3);
        }
        rc = devmem_nic_set_ntuple("lo", 1, &e);
        bad += -EPERM != rc || NULL == strstr(e.msg, "CAP_NET_ADMIN");
        printf("%s: unprivileged ntuple on: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL", e.msg);
        rc = devmem_nic_set_channels("lo", &ch, &e);
        bad += -EPERM != rc;
        printf("%s: unprivileged set channels: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL", e.msg);
        rc = devmem_nic_reset_rss("lo", &e);
        bad += -EPERM != rc;
        printf("%s: unprivileged RSS reset: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL", e.msg);
        rc = devmem_nic_flow_del("lo", 0, &e);
        bad += -EPERM != rc;
        printf("%s: unprivileged flow rule delete: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL",
               e.msg);
        rc = devmem_nic_set_header_split("lo", DEVMEM_NIC_HDS_ON, 1, 0, &e);
        bad += -EPERM != rc || NULL == strstr(e.msg, "CAP_NET_ADMIN");
        printf("%s: unprivileged header split: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL", e.msg);
        rc = devmem_nic_set_rx_buf_len("lo", 4096, NULL, &e);
        bad += -EPERM != rc || NULL == strstr(e.msg, "CAP_NET_ADMIN");
        printf("%s: unprivileged rx-buf-len: \"%s\"\n", -EPERM == rc ? "ok  " : "FAIL", e.msg);
        fflush(stdout);
        _exit(bad ? 1 : 0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        CHECK(0, "fork an unprivileged child");
        return;
    }
    if (WIFEXITED(status) && 3 == WEXITSTATUS(status)) {
        printf("note: cannot drop privileges here; EPERM checks not run\n");
        return;
    }
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "without CAP_NET_ADMIN every setter says EPERM");
}

int main(void)
{
    test_flow_spec();
    test_rings_codec();
    test_rx_buf_len();
    test_lo();
    test_unprivileged();
    return check_finish();
}

#endif /* HAVE_LIBMNL */
