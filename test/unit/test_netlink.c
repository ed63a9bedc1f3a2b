/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the netlink codec (devmem/netlink.c): requests are built into byte buffers
 * and checked attribute by attribute; replies are synthesised and parsed, including
 * truncated and garbage ones, which must fail cleanly. No kernel involved.
 * Exit 0 pass, 1 fail, 77 skip (built without libmnl).
 */
#include "config.h"

#include "netlink.h"
#include "netlink_dev.h"
#include "uapi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HAVE_LIBMNL
int main(void)
{
    printf("SKIP: built without libmnl\n");
    return 77;
}
#else

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "check.h"

#define FAMILY 0x1d
#define SEQ 4242

/* ---- helpers to read back what the builders wrote ---------------------------------------- */

struct attr_list {
    int n;
    uint16_t type[16];
    uint16_t raw_type[16];
    const void *payload[16];
    size_t len[16];
};

static int collect_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct attr_list *l = arg;

    if (l->n >= 16) {
        return -E2BIG;
    }
    l->type[l->n] = type;
    /* the raw nla_type, with flags, sits 2 bytes before the type-masked one we got */
    memcpy(&l->raw_type[l->n], (const unsigned char *) payload - 2, sizeof(uint16_t));
    l->payload[l->n] = payload;
    l->len[l->n] = len;
    l->n++;
    return 0;
}

static uint32_t u32_at(const void *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* Collect the top-level attributes of a genl message. */
static int genl_collect(const void *msg, size_t len, struct attr_list *l)
{
    memset(l, 0, sizeof(*l));
    if (len < MNL_NLMSG_HDRLEN + GENL_HDRLEN) {
        return -EBADMSG;
    }
    return devmem_nl_attrs_walk((const unsigned char *) msg + MNL_NLMSG_HDRLEN + GENL_HDRLEN,
                                len - MNL_NLMSG_HDRLEN - GENL_HDRLEN, collect_cb, l);
}

/* ---- builders ---------------------------------------------------------------------------- */

static void test_build_bind_rx(void)
{
    static const unsigned int queues[3] = {5, 6, 9};
    unsigned char buf[512];
    const struct nlmsghdr *nlh = (const struct nlmsghdr *) buf;
    const struct genlmsghdr *genl = (const struct genlmsghdr *) (buf + MNL_NLMSG_HDRLEN);
    struct attr_list top, nest;
    int len, nq = 0, ok_nests = 1;

    len = devmem_nl_build_bind_rx(buf, sizeof(buf), FAMILY, SEQ, 7, 42, queues, 3);
    CHECK(len > 0, "bind-rx request builds (%d bytes)", len);
    if (len <= 0) {
        return;
    }
    CHECK((uint32_t) len == nlh->nlmsg_len, "bind-rx: nlmsg_len %u equals the length returned",
          nlh->nlmsg_len);
    CHECK(FAMILY == nlh->nlmsg_type, "bind-rx: message type is the family id");
    CHECK((NLM_F_REQUEST | NLM_F_ACK) == nlh->nlmsg_flags, "bind-rx: flags REQUEST|ACK");
    CHECK(SEQ == nlh->nlmsg_seq, "bind-rx: sequence number");
    CHECK(DEVMEM_NETDEV_CMD_BIND_RX == genl->cmd && 13 == genl->cmd, "bind-rx: genl cmd 13");
    CHECK(DEVMEM_NETDEV_FAMILY_VERSION == genl->version, "bind-rx: genl version 1");
    CHECK(0 == genl_collect(buf, (size_t) len, &top), "bind-rx: attributes parse to the end");
    CHECK(5 == top.n, "bind-rx: 5 top-level attributes (ifindex, fd, 3 queues): %d", top.n);
    CHECK(DEVMEM_NETDEV_A_DMABUF_IFINDEX == top.type[0] && 4 == top.len[0]
              && 7 == u32_at(top.payload[0]),
          "bind-rx: ifindex attribute (1) = 7, u32");
    CHECK(DEVMEM_NETDEV_A_DMABUF_FD == top.type[1] && 4 == top.len[1]
              && 42 == u32_at(top.payload[1]),
          "bind-rx: fd attribute (3) = 42, u32");
    for (int i = 2; i < top.n; i++) {
        memset(&nest, 0, sizeof(nest));
        if (DEVMEM_NETDEV_A_DMABUF_QUEUES != top.type[i] || !(top.raw_type[i] & NLA_F_NESTED)
            || 0 != devmem_nl_attrs_walk(top.payload[i], top.len[i], collect_cb, &nest)
            || 2 != nest.n || DEVMEM_NETDEV_A_QUEUE_ID != nest.type[0]
            || queues[nq] != u32_at(nest.payload[0]) || DEVMEM_NETDEV_A_QUEUE_TYPE != nest.type[1]
            || DEVMEM_NETDEV_QUEUE_TYPE_RX != u32_at(nest.payload[1]) || 4 != nest.len[0]
            || 4 != nest.len[1]) {
            ok_nests = 0;
        }
        nq++;
    }
    CHECK(ok_nests && 3 == nq,
          "bind-rx: each queue is a NLA_F_NESTED queues (2) nest {id (1) = q, type (3) = RX 0}");
}

static void test_build_bounds(void)
{
    static const unsigned int queues[4] = {0, 1, 2, 3};
    unsigned char ref[512];
    int full = devmem_nl_build_bind_rx(ref, sizeof(ref), FAMILY, SEQ, 3, 9, queues, 4);
    int all_enobufs = 1, no_overrun = 1;

    /* every buffer too small must be refused, without writing past its end */
    for (int size = 0; size < full; size++) {
        unsigned char buf[600];
        int rc;

        memset(buf, 0xa5, sizeof(buf));
        rc = devmem_nl_build_bind_rx(buf, (size_t) size, FAMILY, SEQ, 3, 9, queues, 4);
        if (-ENOBUFS != rc) {
            all_enobufs = 0;
        }
        for (size_t i = (size_t) size; i < sizeof(buf); i++) {
            if (0xa5 != buf[i]) {
                no_overrun = 0;
            }
        }
    }
    CHECK(full > 0 && all_enobufs, "bind-rx: every size below %d bytes gives -ENOBUFS", full);
    CHECK(no_overrun, "bind-rx: a small buffer is never written past its end");
    CHECK(-EINVAL == devmem_nl_build_bind_rx(ref, sizeof(ref), FAMILY, SEQ, 3, -1, queues, 4),
          "bind-rx: a negative fd is refused with -EINVAL");
    CHECK(-EINVAL == devmem_nl_build_bind_rx(ref, sizeof(ref), FAMILY, SEQ, 3, 9, NULL, 2),
          "bind-rx: queues NULL with nqueues 2 is refused with -EINVAL");
}

static void test_build_others(void)
{
    unsigned char buf[256];
    const struct nlmsghdr *nlh = (const struct nlmsghdr *) buf;
    const struct genlmsghdr *genl = (const struct genlmsghdr *) (buf + MNL_NLMSG_HDRLEN);
    struct attr_list l;
    int len;

    len = devmem_nl_build_bind_tx(buf, sizeof(buf), FAMILY, SEQ, 11, 5);
    CHECK(len > 0 && 15 == genl->cmd && 0 == genl_collect(buf, (size_t) len, &l) && 2 == l.n
              && DEVMEM_NETDEV_A_DMABUF_IFINDEX == l.type[0] && 11 == u32_at(l.payload[0])
              && DEVMEM_NETDEV_A_DMABUF_FD == l.type[1] && 5 == u32_at(l.payload[1]),
          "bind-tx: cmd 15 with exactly ifindex 11 and fd 5, no queues");

    len = devmem_nl_build_getfamily(buf, sizeof(buf), SEQ, "netdev");
    CHECK(len > 0 && GENL_ID_CTRL == nlh->nlmsg_type && CTRL_CMD_GETFAMILY == genl->cmd
              && 0 == genl_collect(buf, (size_t) len, &l) && 1 == l.n
              && CTRL_ATTR_FAMILY_NAME == l.type[0] && 7 == l.len[0]
              && 0 == memcmp(l.payload[0], "netdev", 7),
          "getfamily: to nlctrl, CTRL_CMD_GETFAMILY, name \"netdev\" with its NUL");
    CHECK(-EINVAL == devmem_nl_build_getfamily(buf, sizeof(buf), SEQ,
                                               "a-family-name-longer-than-genl-allows"),
          "getfamily: a name longer than GENL_NAMSIZ is refused");

    len = devmem_nl_build_dev_get(buf, sizeof(buf), FAMILY, SEQ, 3);
    CHECK(len > 0 && DEVMEM_NETDEV_CMD_DEV_GET == genl->cmd
              && (NLM_F_REQUEST | NLM_F_ACK) == nlh->nlmsg_flags
              && 0 == genl_collect(buf, (size_t) len, &l) && 1 == l.n
              && DEVMEM_NETDEV_A_DEV_IFINDEX == l.type[0] && 3 == u32_at(l.payload[0]),
          "dev-get: cmd 1, REQUEST|ACK, ifindex 3");

    len = devmem_nl_build_queue_get(buf, sizeof(buf), FAMILY, SEQ, 3);
    CHECK(len > 0 && DEVMEM_NETDEV_CMD_QUEUE_GET == genl->cmd
              && (nlh->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP
              && 0 == genl_collect(buf, (size_t) len, &l) && 1 == l.n
              && DEVMEM_NETDEV_A_QUEUE_IFINDEX == l.type[0] && 3 == u32_at(l.payload[0]),
          "queue-get: cmd 10, a dump filtered by ifindex 3");
}

/* ---- synthetic replies ------------------------------------------------------------------- */

static struct nlmsghdr *put_data(unsigned char *buf, uint16_t type, uint32_t seq, uint8_t cmd)
{
    struct nlmsghdr *nlh;

    memset(buf, 0, 256); /* libmnl may leave attribute padding as it found it */
    nlh = mnl_nlmsg_put_header(buf);
    struct genlmsghdr *genl;

    nlh->nlmsg_type = type;
    nlh->nlmsg_seq = seq;
    genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
    genl->cmd = cmd;
    genl->version = 1;
    return nlh;
}

/* An ACK or error, capped, with optional extack message, offset and missing type. */
static struct nlmsghdr *put_error(unsigned char *buf, uint32_t seq, int error, const char *msg,
                                  int offset, int miss_type)
{
    struct nlmsghdr *nlh;
    struct nlmsgerr *e;

    memset(buf, 0, 256);
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = NLMSG_ERROR;
    nlh->nlmsg_seq = seq;
    nlh->nlmsg_flags = NLM_F_CAPPED;
    e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
    e->error = error;
    e->msg.nlmsg_len = 36;
    e->msg.nlmsg_seq = seq;
    if (NULL != msg || offset >= 0 || miss_type >= 0) {
        nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
    }
    if (NULL != msg) {
        mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, msg);
    }
    if (offset >= 0) {
        mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS, (uint32_t) offset);
    }
    if (miss_type >= 0) {
        mnl_attr_put_u32(nlh, NLMSGERR_ATTR_MISS_TYPE, (uint32_t) miss_type);
    }
    return nlh;
}

static void test_parse_bind(void)
{
    unsigned char buf[1024];
    struct devmem_nl_status st;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    uint32_t id = 0;
    size_t len;
    int rc;

    /* the reply and the ACK in one buffer */
    nlh = put_data(buf, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 7);
    len = nlh->nlmsg_len;
    nlh = put_error(buf + len, SEQ, 0, NULL, -1, -1);
    len += nlh->nlmsg_len;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, len, SEQ, &id, &st, &err);
    CHECK(1 == rc && 0 == st.error && 7 == id, "bind reply + ACK in one buffer: id 7, complete");

    /* the same in two receives: the first alone is not the end */
    nlh = (struct nlmsghdr *) buf;
    id = 0;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(0 == rc && 7 == id, "bind reply alone: id 7, exchange not yet complete");
    rc = devmem_nl_parse_bind(buf + nlh->nlmsg_len, len - nlh->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(1 == rc && 0 == st.error && 7 == id, "then the ACK completes it");

    /* a stale reply with another sequence number is skipped */
    nlh = put_data(buf, FAMILY, SEQ - 1, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 99);
    len = nlh->nlmsg_len;
    nlh = put_data(buf + len, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 8);
    len += nlh->nlmsg_len;
    nlh = put_error(buf + len, SEQ, 0, NULL, -1, -1);
    len += nlh->nlmsg_len;
    id = 0;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, len, SEQ, &id, &st, &err);
    CHECK(1 == rc && 8 == id, "a reply with a stale sequence number is skipped (id 8, not 99)");

    /* ACK without an id */
    put_error(buf, SEQ, 0, NULL, -1, -1);
    id = 0;
    memset(&st, 0, sizeof(st));
    devmem_err_clear(&err);
    rc = devmem_nl_parse_bind(buf, ((struct nlmsghdr *) buf)->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(-EBADMSG == rc && EBADMSG == err.code && NULL != strstr(err.msg, "binding id"),
          "an ACK without a binding id is malformed: \"%s\"", err.msg);

    /* an id of the wrong size */
    nlh = put_data(buf, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u16(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 7);
    id = 0;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(-EBADMSG == rc && 0 == id, "a 2-byte binding id is malformed: \"%s\"", err.msg);
}

static void test_parse_error(void)
{
    static const char *kmsg = "Driver does not support netmem TX";
    unsigned char buf[1024], req[256];
    struct devmem_nl_status st;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    uint32_t id = 0;
    int reqlen, rc;

    nlh = put_error(buf, SEQ, -EOPNOTSUPP, kmsg, 20, -1);
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(1 == rc && EOPNOTSUPP == st.error, "error reply: complete, errno EOPNOTSUPP");
    CHECK(0 == strcmp(st.msg, kmsg), "error reply: extack message word for word: \"%s\"",
          st.msg);
    CHECK(st.has_offset && 20 == st.offset, "error reply: bad-attribute offset 20");

    /* the API's error text: errno words, the kernel's words, the flagged attribute by name */
    reqlen = devmem_nl_build_bind_tx(req, sizeof(req), FAMILY, SEQ, 1, 3);
    rc = devmem_nl_status_err(&st, req, (size_t) reqlen, "bind-tx on lo",
                              devmem_nl_dmabuf_attr_names, devmem_nl_n_dmabuf_attr_names, &err);
    CHECK(-EOPNOTSUPP == rc && EOPNOTSUPP == err.code
              && 0 == strcmp(err.msg, "netlink: bind-tx on lo: Operation not supported (kernel: "
                                      "Driver does not support netmem TX) [it flagged ifindex]"),
          "error text: \"%s\"", err.msg);

    /* offset into a queue nest of a bind-rx request: named one level deep */
    {
        static const unsigned int q[2] = {0, 1};
        /* hdr 16 + genl 4 + ifindex 8 + fd 8 = 36: first nest; its first inner attr at 40 */
        reqlen = devmem_nl_build_bind_rx(req, sizeof(req), FAMILY, SEQ, 1, 3, q, 2);
        memset(&st, 0, sizeof(st));
        st.error = ERANGE;
        st.has_offset = 1;
        st.offset = 40;
        devmem_nl_status_err(&st, req, (size_t) reqlen, "bind-rx on x",
                             devmem_nl_dmabuf_attr_names, devmem_nl_n_dmabuf_attr_names, &err);
        CHECK(NULL != strstr(err.msg, "(kernel gave no message; it flagged queues/attribute 1)"),
              "offset inside a nest names it: \"%s\"", err.msg);
    }

    /* missing attribute, no message (what 6.18 says for bind-rx without queues) */
    nlh = put_error(buf, SEQ, -EINVAL, NULL, -1, DEVMEM_NETDEV_A_DMABUF_QUEUES);
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    devmem_nl_status_err(&st, NULL, 0, "bind-rx on lo", devmem_nl_dmabuf_attr_names,
                         devmem_nl_n_dmabuf_attr_names, &err);
    CHECK(1 == rc && EINVAL == st.error && st.has_miss_type
              && 0 == strcmp(err.msg, "netlink: bind-rx on lo: Invalid argument (kernel gave no "
                                      "message; required queues is missing)"),
          "missing attribute: \"%s\"", err.msg);

    /* EPERM with nothing else: say what is needed */
    nlh = put_error(buf, SEQ, -EPERM, NULL, -1, -1);
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    devmem_nl_status_err(&st, NULL, 0, "bind-rx on lo", NULL, 0, &err);
    CHECK(1 == rc && EPERM == st.error && NULL != strstr(err.msg, "CAP_NET_ADMIN"),
          "EPERM: \"%s\"", err.msg);

    /* not capped: the whole request is echoed before the attributes */
    {
        unsigned char *p;
        struct nlmsgerr *e;

        reqlen = devmem_nl_build_bind_tx(req, sizeof(req), FAMILY, SEQ, 1, 3);
        memset(buf, 0, sizeof(buf));
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = NLMSG_ERROR;
        nlh->nlmsg_seq = SEQ;
        nlh->nlmsg_flags = NLM_F_ACK_TLVS;
        p = mnl_nlmsg_put_extra_header(nlh, sizeof(*e) - sizeof(struct nlmsghdr)
                                                + MNL_ALIGN((size_t) reqlen));
        e = (struct nlmsgerr *) p;
        e->error = -ENODEV;
        memcpy(&e->msg, req, (size_t) reqlen);
        mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, "no such thing");
        memset(&st, 0, sizeof(st));
        rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
        CHECK(1 == rc && ENODEV == st.error && 0 == strcmp(st.msg, "no such thing"),
              "uncapped error: the echoed request is skipped, the message found");
    }

    /* an extack string without its NUL is copied within its bounds */
    {
        char big[400];

        memset(big, 'x', sizeof(big));
        nlh = put_error(buf, SEQ, -EINVAL, NULL, -1, -1);
        nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
        mnl_attr_put(nlh, NLMSGERR_ATTR_MSG, sizeof(big), big);
        memset(&st, 0, sizeof(st));
        rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
        CHECK(1 == rc && strlen(st.msg) == sizeof(st.msg) - 1,
              "an unterminated %zu-byte extack string is cut to %zu bytes", sizeof(big),
              sizeof(st.msg) - 1);
    }

    /* a positive errno is not something the kernel sends */
    nlh = put_error(buf, SEQ, 5, NULL, -1, -1);
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_bind(buf, nlh->nlmsg_len, SEQ, &id, &st, &err);
    CHECK(-EBADMSG == rc, "an error message with errno +5 is malformed: \"%s\"", err.msg);
}

static void test_parse_family_and_queues(void)
{
    unsigned char buf[2048];
    struct devmem_nl_status st;
    struct devmem_nl_queues *q = calloc(1, sizeof(*q));
    struct devmem_nl_dev dev;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    struct nlattr *ops, *op;
    uint64_t cmds = 0;
    uint16_t fid = 0;
    size_t len = 0;
    int rc;

    nlh = put_data(buf, GENL_ID_CTRL, SEQ, CTRL_CMD_NEWFAMILY);
    mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, "netdev");
    mnl_attr_put_u16(nlh, CTRL_ATTR_FAMILY_ID, FAMILY);
    ops = mnl_attr_nest_start(nlh, CTRL_ATTR_OPS);
    for (uint32_t i = 0; i < 2; i++) {
        op = mnl_attr_nest_start(nlh, (uint16_t) (i + 1));
        mnl_attr_put_u32(nlh, CTRL_ATTR_OP_ID, 13 + 2 * i);
        mnl_attr_put_u32(nlh, CTRL_ATTR_OP_FLAGS, 0);
        mnl_attr_nest_end(nlh, op);
    }
    mnl_attr_nest_end(nlh, ops);
    len = nlh->nlmsg_len;
    nlh = put_error(buf + len, SEQ, 0, NULL, -1, -1);
    len += nlh->nlmsg_len;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_family(buf, len, SEQ, &fid, &cmds, &st, &err);
    CHECK(1 == rc && FAMILY == fid, "family reply: id 0x%x", fid);
    CHECK(cmds == ((UINT64_C(1) << 13) | (UINT64_C(1) << 15)),
          "family reply: ops list commands 13 and 15");

    /* queue dump: RX 0, RX 1 bound to binding 5, TX 0, then DONE */
    len = 0;
    for (int i = 0; i < 3; i++) {
        nlh = put_data(buf + len, FAMILY, SEQ, DEVMEM_NETDEV_CMD_QUEUE_GET);
        nlh->nlmsg_flags = NLM_F_MULTI;
        mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_QUEUE_ID, i < 2 ? (uint32_t) i : 0);
        mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_QUEUE_IFINDEX, 3);
        mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_QUEUE_TYPE,
                         i < 2 ? DEVMEM_NETDEV_QUEUE_TYPE_RX : DEVMEM_NETDEV_QUEUE_TYPE_TX);
        if (1 == i) {
            mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_QUEUE_DMABUF, 5);
        }
        len += nlh->nlmsg_len;
    }
    nlh = mnl_nlmsg_put_header(buf + len);
    nlh->nlmsg_type = NLMSG_DONE;
    nlh->nlmsg_seq = SEQ;
    nlh->nlmsg_flags = NLM_F_MULTI;
    *(int32_t *) mnl_nlmsg_put_extra_header(nlh, sizeof(int32_t)) = 0;
    len += nlh->nlmsg_len;
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_queues(buf, len, SEQ, q, &st, &err);
    CHECK(1 == rc && 0 == st.error && 2 == q->n_rx && 1 == q->n_tx && 1 == q->n_rx_bound
              && 0 == q->rx_dmabuf[0] && 5 == q->rx_dmabuf[1],
          "queue dump: 2 RX (queue 1 bound to binding 5), 1 TX, ended by DONE");

    /* a dump that fails: DONE carries -ENODEV */
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = NLMSG_DONE;
    nlh->nlmsg_seq = SEQ;
    *(int32_t *) mnl_nlmsg_put_extra_header(nlh, sizeof(int32_t)) = -ENODEV;
    memset(&st, 0, sizeof(st));
    memset(q, 0, sizeof(*q));
    rc = devmem_nl_parse_queues(buf, nlh->nlmsg_len, SEQ, q, &st, &err);
    CHECK(1 == rc && ENODEV == st.error, "queue dump ending in DONE(-ENODEV) reports ENODEV");

    /* a queue without a type is malformed */
    nlh = put_data(buf, FAMILY, SEQ, DEVMEM_NETDEV_CMD_QUEUE_GET);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_QUEUE_ID, 0);
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_queues(buf, nlh->nlmsg_len, SEQ, q, &st, &err);
    CHECK(-EBADMSG == rc, "a queue without a type is malformed: \"%s\"", err.msg);

    /* dev-get */
    nlh = put_data(buf, FAMILY, SEQ, DEVMEM_NETDEV_CMD_DEV_GET);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DEV_IFINDEX, 3);
    mnl_attr_put_u64(nlh, DEVMEM_NETDEV_A_DEV_XDP_FEATURES, 0x2b);
    len = nlh->nlmsg_len;
    nlh = put_error(buf + len, SEQ, 0, NULL, -1, -1);
    len += nlh->nlmsg_len;
    memset(&dev, 0, sizeof(dev));
    memset(&st, 0, sizeof(st));
    rc = devmem_nl_parse_dev(buf, len, SEQ, &dev, &st, &err);
    CHECK(1 == rc && 3 == dev.ifindex && 0x2b == dev.xdp_features,
          "dev-get reply: ifindex 3, xdp-features 0x2b");
    free(q);
}

/* Every prefix of a good reply, each in a buffer of exactly that size (so valgrind or ASan
 * would see a read past it), must be "incomplete" or "malformed", never complete or a crash. */
static void test_truncation_and_garbage(void)
{
    unsigned char good[512];
    struct devmem_nl_status st;
    struct devmem_err err;
    struct nlmsghdr *nlh;
    size_t len, first;
    int clean = 1, complete_early = 0;
    unsigned int seed = 12345;
    long counts[3] = {0, 0, 0};

    memset(good, 0, sizeof(good)); /* libmnl may leave attribute padding as it found it */
    nlh = put_data(good, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 7);
    first = nlh->nlmsg_len;
    nlh = put_error(good + first, SEQ, -EOPNOTSUPP, "some words", 20, -1);
    len = first + nlh->nlmsg_len;
    for (size_t n = 0; n < len; n++) {
        unsigned char *b = malloc(n > 0 ? n : 1);
        uint32_t id = 0;
        int rc;

        memcpy(b, good, n);
        memset(&st, 0, sizeof(st));
        rc = devmem_nl_parse_bind(b, n, SEQ, &id, &st, &err);
        if (1 == rc) {
            complete_early = 1;
        }
        if (!(0 == rc || -EBADMSG == rc)) {
            clean = 0;
        }
        free(b);
    }
    CHECK(!complete_early && clean,
          "all %zu truncations of a reply are incomplete or -EBADMSG, none complete", len);

    /* a length field that lies */
    nlh = (struct nlmsghdr *) good;
    nlh->nlmsg_len = 4096;
    memset(&st, 0, sizeof(st));
    CHECK(-EBADMSG == devmem_nl_parse(good, first, SEQ, NULL, NULL, &st, &err),
          "nlmsg_len larger than the buffer: -EBADMSG \"%s\"", err.msg);
    nlh->nlmsg_len = 8;
    CHECK(-EBADMSG == devmem_nl_parse(good, first, SEQ, NULL, NULL, &st, &err),
          "nlmsg_len smaller than a header: -EBADMSG");

    /* an attribute whose length runs past its message */
    nlh = put_data(good, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 7);
    ((struct nlattr *) (good + MNL_NLMSG_HDRLEN + GENL_HDRLEN))->nla_len = 200;
    {
        uint32_t id = 0;

        memset(&st, 0, sizeof(st));
        CHECK(-EBADMSG == devmem_nl_parse_bind(good, nlh->nlmsg_len, SEQ, &id, &st, &err),
              "an attribute longer than its message: -EBADMSG \"%s\"", err.msg);
    }

    /* mutations of a good reply (data + error with extack): flip a few random bytes */
    memset(good, 0, sizeof(good)); /* libmnl may leave attribute padding as it found it */
    nlh = put_data(good, FAMILY, SEQ, DEVMEM_NETDEV_CMD_BIND_RX);
    mnl_attr_put_u32(nlh, DEVMEM_NETDEV_A_DMABUF_ID, 7);
    first = nlh->nlmsg_len;
    nlh = put_error(good + first, SEQ, -EOPNOTSUPP, "some words", 20, 2);
    len = first + nlh->nlmsg_len;
    for (int i = 0; i < 20000; i++) {
        unsigned char *b = malloc(len);
        int flips = 1 + rand_r(&seed) % 3;
        uint32_t id = 0;
        int rc;

        memcpy(b, good, len);
        for (int f = 0; f < flips; f++) {
            b[(size_t) rand_r(&seed) % len] ^= (unsigned char) (1 + rand_r(&seed) % 255);
        }
        memset(&st, 0, sizeof(st));
        rc = devmem_nl_parse_bind(b, len, SEQ, &id, &st, &err);
        if (rc < 0 && -EBADMSG != rc && -EINTR != rc) {
            clean = 0;
        }
        counts[rc < 0 ? 0 : rc + 1]++;
        free(b);
    }
    /* and plain random bytes */
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t) (rand_r(&seed) % 200);
        unsigned char *b = malloc(n > 0 ? n : 1);
        uint32_t id = 0;
        int rc;

        for (size_t k = 0; k < n; k++) {
            b[k] = (unsigned char) rand_r(&seed);
        }
        memset(&st, 0, sizeof(st));
        rc = devmem_nl_parse_bind(b, n, SEQ, &id, &st, &err);
        if (rc < 0 && -EBADMSG != rc && -EINTR != rc) {
            clean = 0;
        }
        counts[rc < 0 ? 0 : rc + 1]++;
        free(b);
    }
    CHECK(clean && counts[0] > 0 && counts[1] > 0 && counts[2] > 0,
          "40000 mutated or random buffers: each parsed to -EBADMSG, incomplete or complete "
          "(%ld malformed, %ld incomplete, %ld complete)",
          counts[0], counts[1], counts[2]);
}

int main(void)
{
    test_build_bind_rx();
    test_build_bounds();
    test_build_others();
    test_parse_bind();
    test_parse_error();
    test_parse_family_and_queues();
    test_truncation_and_garbage();
    return check_finish();
}

#endif /* HAVE_LIBMNL */
