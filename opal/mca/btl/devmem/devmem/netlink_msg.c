/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Netlink messages without a socket: attribute walking, building the netdev family's
 * requests, parsing replies and acks (extended acks included) and turning a failure into
 * words. Pure functions of buffers, so the unit tests and the fuzz target drive them
 * directly; netlink.c sends them.
 */
#include "build_config.h"

#include "netlink.h"
#include "netlink_int.h"
#include "uapi.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const devmem_nl_dmabuf_attr_names[] = {
    [DEVMEM_NETDEV_A_DMABUF_IFINDEX] = "ifindex",
    [DEVMEM_NETDEV_A_DMABUF_QUEUES] = "queues",
    [DEVMEM_NETDEV_A_DMABUF_FD] = "fd",
    [DEVMEM_NETDEV_A_DMABUF_ID] = "id",
};
const size_t devmem_nl_n_dmabuf_attr_names = sizeof(devmem_nl_dmabuf_attr_names)
                                             / sizeof(devmem_nl_dmabuf_attr_names[0]);

#ifdef HAVE_LIBMNL

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

/* ---- attributes ------------------------------------------------------------------------- */

int devmem_nl_attrs_walk(const void *p, size_t len, devmem_nl_attr_cb cb, void *arg)
{
    const struct nlattr *attr = p;
    /* int, as mnl_attr_ok() wants; netlink messages are far below 2 GiB */
    int left = (int) len;
    int rc = 0;

    if (len > INT32_MAX || (NULL == p && len > 0)) {
        rc = -EBADMSG;
        goto cleanup;
    }
    while (left > 0) {
        if (!mnl_attr_ok(attr, left)) {
            rc = -EBADMSG; /* runs past the end, or a fragment too small to be an attribute */
            goto cleanup;
        }
        rc = cb(mnl_attr_get_type(attr), mnl_attr_get_payload(attr),
                mnl_attr_get_payload_len(attr), arg);
        if (rc < 0) {
            goto cleanup;
        }
        left -= MNL_ALIGN(attr->nla_len);
        attr = mnl_attr_next(attr);
    }
    rc = 0;
cleanup:
    return rc;
}

int devmem_nl_get_u32(const void *payload, size_t len, uint32_t *v)
{
    if (len != sizeof(*v)) {
        return -EBADMSG;
    }
    memcpy(v, payload, sizeof(*v));
    return 0;
}

/* ---- building ---------------------------------------------------------------------------- */

struct nlmsghdr *devmem_nl_put_genl_header(void *buf, size_t size, uint16_t type, uint16_t flags,
                                           uint32_t seq, uint8_t cmd, uint8_t version)
{
    struct nlmsghdr *nlh;
    struct genlmsghdr *genl;

    if (NULL == buf || size < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(*genl))) {
        return NULL;
    }
    /* libmnl leaves attribute padding as it finds it: never send stale bytes */
    memset(buf, 0, size);
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = flags;
    nlh->nlmsg_seq = seq;
    genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
    genl->cmd = cmd;
    genl->version = version;
    return nlh;
}

int devmem_nl_build_getfamily(void *buf, size_t size, uint32_t seq, const char *family)
{
    struct nlmsghdr *nlh;

    if (NULL == family || strlen(family) >= GENL_NAMSIZ) {
        return -EINVAL;
    }
    nlh = devmem_nl_put_genl_header(buf, size, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, seq,
                          CTRL_CMD_GETFAMILY, 1);
    if (NULL == nlh || !mnl_attr_put_strz_check(nlh, size, CTRL_ATTR_FAMILY_NAME, family)) {
        return -ENOBUFS;
    }
    return (int) nlh->nlmsg_len;
}

int devmem_nl_build_bind(void *buf, size_t size, uint16_t family, uint32_t seq, uint8_t cmd,
                      unsigned int ifindex, int dmabuf_fd, const unsigned int *queues,
                      size_t nqueues)
{
    struct nlmsghdr *nlh;

    if (dmabuf_fd < 0 || (NULL == queues && nqueues > 0)) {
        return -EINVAL;
    }
    nlh = devmem_nl_put_genl_header(buf, size, family, NLM_F_REQUEST | NLM_F_ACK, seq, cmd,
                          DEVMEM_NETDEV_FAMILY_VERSION);
    if (NULL == nlh
        || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_DMABUF_IFINDEX, ifindex)
        || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_DMABUF_FD, (uint32_t) dmabuf_fd)) {
        return -ENOBUFS;
    }
    for (size_t i = 0; i < nqueues; i++) {
        struct nlattr *nest = mnl_attr_nest_start_check(nlh, size, DEVMEM_NETDEV_A_DMABUF_QUEUES);

        if (NULL == nest
            || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_QUEUE_ID, queues[i])
            || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_QUEUE_TYPE,
                                       DEVMEM_NETDEV_QUEUE_TYPE_RX)) {
            return -ENOBUFS;
        }
        mnl_attr_nest_end(nlh, nest);
    }
    return (int) nlh->nlmsg_len;
}

int devmem_nl_build_bind_rx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd, const unsigned int *queues,
                            size_t nqueues)
{
    return devmem_nl_build_bind(buf, size, family, seq, DEVMEM_NETDEV_CMD_BIND_RX, ifindex, dmabuf_fd,
                      queues, nqueues);
}

int devmem_nl_build_bind_tx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd)
{
    return devmem_nl_build_bind(buf, size, family, seq, DEVMEM_NETDEV_CMD_BIND_TX, ifindex, dmabuf_fd,
                      NULL, 0);
}

int devmem_nl_build_queue_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                              unsigned int ifindex)
{
    struct nlmsghdr *nlh;

    /* A dump filtered by ifindex: a "do" would need every queue id and type. */
    nlh = devmem_nl_put_genl_header(buf, size, family, NLM_F_REQUEST | NLM_F_DUMP, seq,
                                    DEVMEM_NETDEV_CMD_QUEUE_GET, DEVMEM_NETDEV_FAMILY_VERSION);

    if (NULL == nlh
        || !mnl_attr_put_u32_check(nlh, size, DEVMEM_NETDEV_A_QUEUE_IFINDEX, ifindex)) {
        return -ENOBUFS;
    }
    return (int) nlh->nlmsg_len;
}

/* ---- parsing ----------------------------------------------------------------------------- */

static int ext_ack_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct devmem_nl_status *st = arg;

    switch (type) {
    case NLMSGERR_ATTR_MSG: {
        /* Bounded copy: a string that lacks its NUL must not make us read past it. */
        size_t n = strnlen(payload, len);

        if (n >= sizeof(st->msg)) {
            n = sizeof(st->msg) - 1;
        }
        memcpy(st->msg, payload, n);
        st->msg[n] = '\0';
        while (n > 0 && '\n' == st->msg[n - 1]) {
            st->msg[--n] = '\0';
        }
        return 0;
    }
    case NLMSGERR_ATTR_OFFS:
        st->has_offset = 1;
        return devmem_nl_get_u32(payload, len, &st->offset);
    case NLMSGERR_ATTR_MISS_TYPE:
        st->has_miss_type = 1;
        return devmem_nl_get_u32(payload, len, &st->miss_type);
    default:
        return 0; /* cookie, policy, miss-nest: nothing we report */
    }
}

/* NLMSG_ERROR: an ACK (error 0) or the kernel's errno, with extended-ack attributes. */
static int parse_error_msg(const struct nlmsghdr *nlh, struct devmem_nl_status *st,
                           struct devmem_err *err)
{
    const unsigned char *payload = mnl_nlmsg_get_payload(nlh);
    size_t payload_len = nlh->nlmsg_len - MNL_NLMSG_HDRLEN;
    struct nlmsgerr e;
    size_t off = sizeof(e);

    if (payload_len < sizeof(e)) {
        return devmem_err_set(err, EBADMSG, "error message of %zu bytes, shorter than nlmsgerr",
                              payload_len);
    }
    memcpy(&e, payload, sizeof(e));
    if (e.error > 0 || e.error < -4095) {
        return devmem_err_set(err, EBADMSG, "error message with errno %d", e.error);
    }
    st->error = -e.error;
    if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
        if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
            /* the whole request is echoed before the attributes */
            if (e.msg.nlmsg_len < MNL_NLMSG_HDRLEN) {
                return devmem_err_set(err, EBADMSG, "echoed request of %u bytes",
                                      e.msg.nlmsg_len);
            }
            off += MNL_ALIGN(e.msg.nlmsg_len - MNL_NLMSG_HDRLEN);
        }
        if (off > payload_len) {
            return devmem_err_set(err, EBADMSG, "extended ack past the end of the message");
        }
        if (devmem_nl_attrs_walk(payload + off, payload_len - off, ext_ack_cb, st) < 0) {
            return devmem_err_set(err, EBADMSG, "malformed extended-ack attributes");
        }
    }
    return 1;
}

/* NLMSG_DONE ends a dump; it carries the dump's error and possibly extended-ack attributes. */
static int parse_done_msg(const struct nlmsghdr *nlh, struct devmem_nl_status *st,
                          struct devmem_err *err)
{
    const unsigned char *payload = mnl_nlmsg_get_payload(nlh);
    size_t payload_len = nlh->nlmsg_len - MNL_NLMSG_HDRLEN;
    int32_t dump_err = 0;

    if (payload_len >= sizeof(dump_err)) {
        memcpy(&dump_err, payload, sizeof(dump_err));
    }
    if (dump_err > 0 || dump_err < -4095) {
        return devmem_err_set(err, EBADMSG, "end of dump with errno %d", (int) dump_err);
    }
    st->error = -dump_err;
    if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) && payload_len > sizeof(dump_err)
        && devmem_nl_attrs_walk(payload + sizeof(dump_err), payload_len - sizeof(dump_err),
                                ext_ack_cb, st) < 0) {
        return devmem_err_set(err, EBADMSG, "malformed extended-ack attributes");
    }
    return 1;
}

int devmem_nl_parse(const void *buf, size_t len, uint32_t seq, devmem_nl_data_cb cb, void *arg,
                    struct devmem_nl_status *st, struct devmem_err *err)
{
    const unsigned char *p = buf;
    size_t left = len;
    int rc = 0;

    if (NULL == buf && len > 0) {
        rc = devmem_err_set(err, EBADMSG, "no buffer");
        goto cleanup;
    }
    while (left > 0) {
        const struct nlmsghdr *nlh = (const struct nlmsghdr *) p;
        size_t step;

        if (left < sizeof(*nlh)) {
            rc = devmem_err_set(err, EBADMSG, "%zu trailing bytes, too few for a message", left);
            goto cleanup;
        }
        if (nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > left) {
            rc = devmem_err_set(err, EBADMSG, "message length %u with %zu bytes left",
                                nlh->nlmsg_len, left);
            goto cleanup;
        }
        if (nlh->nlmsg_seq == seq) {
            if (NLMSG_ERROR == nlh->nlmsg_type) {
                rc = parse_error_msg(nlh, st, err);
                goto cleanup;
            }
            if (NLMSG_DONE == nlh->nlmsg_type) {
                rc = parse_done_msg(nlh, st, err);
                goto cleanup;
            }
            if (NLMSG_OVERRUN == nlh->nlmsg_type) {
                rc = devmem_err_set(err, EBADMSG, "the kernel reports an overrun");
                goto cleanup;
            }
            if (nlh->nlmsg_flags & NLM_F_DUMP_INTR) {
                /* the set changed while the kernel dumped it: the caller may ask again */
                rc = devmem_err_set(err, EINTR, "dump interrupted by a change; try again");
                goto cleanup;
            }
            if (nlh->nlmsg_type >= NLMSG_MIN_TYPE && NULL != cb) {
                struct devmem_err cerr;

                devmem_err_clear(&cerr);
                rc = cb(nlh, arg, &cerr);
                if (rc < 0) {
                    rc = devmem_err_set(err, -rc, "%s",
                                        '\0' != cerr.msg[0] ? cerr.msg : "malformed data message");
                    goto cleanup;
                }
            }
        }
        step = NLMSG_ALIGN(nlh->nlmsg_len);
        if (step >= left) {
            break;
        }
        p += step;
        left -= step;
    }
    rc = 0;
cleanup:
    return rc;
}

int devmem_nl_genl_attrs(const struct nlmsghdr *nlh, devmem_nl_attr_cb cb, void *arg,
                      struct devmem_err *err)
{
    size_t payload_len = nlh->nlmsg_len - MNL_NLMSG_HDRLEN;
    const unsigned char *payload = mnl_nlmsg_get_payload(nlh);

    if (payload_len < GENL_HDRLEN) {
        return devmem_err_set(err, EBADMSG, "data message without a genl header");
    }
    if (devmem_nl_attrs_walk(payload + GENL_HDRLEN, payload_len - GENL_HDRLEN, cb, arg) < 0) {
        return devmem_err_set(err, EBADMSG, "malformed attributes in a data message");
    }
    return 0;
}

/* family: CTRL_CMD_NEWFAMILY reply (struct devmem_nl_family_ctx: netlink_int.h) */

static int family_op_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    uint64_t *cmds = arg;
    uint32_t id;

    if (CTRL_ATTR_OP_ID == type) {
        if (devmem_nl_get_u32(payload, len, &id) < 0) {
            return -EBADMSG;
        }
        if (id < 64) {
            *cmds |= UINT64_C(1) << id;
        }
    }
    return 0;
}

static int family_ops_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    (void) type; /* each op is a nest indexed by position */
    return devmem_nl_attrs_walk(payload, len, family_op_cb, arg);
}

static int family_attr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct devmem_nl_family_ctx *ctx = arg;

    switch (type) {
    case CTRL_ATTR_FAMILY_ID:
        if (len != sizeof(uint16_t)) {
            return -EBADMSG;
        }
        memcpy(&ctx->id, payload, sizeof(uint16_t));
        return 0;
    case CTRL_ATTR_OPS:
        return devmem_nl_attrs_walk(payload, len, family_ops_cb, &ctx->cmds);
    default:
        return 0;
    }
}

int devmem_nl_family_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err)
{
    return devmem_nl_genl_attrs(nlh, family_attr_cb, arg, err);
}

/* bind-rx / bind-tx reply */
static int bind_attr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    if (DEVMEM_NETDEV_A_DMABUF_ID == type) {
        return devmem_nl_get_u32(payload, len, arg);
    }
    return 0;
}

int devmem_nl_bind_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err)
{
    return devmem_nl_genl_attrs(nlh, bind_attr_cb, arg, err);
}

/* queue-get dump: one message per queue */
struct queue_one {
    int has_id, has_type;
    uint32_t id, type, dmabuf;
};

static int queue_attr_cb(uint16_t type, const void *payload, size_t len, void *arg)
{
    struct queue_one *q = arg;

    switch (type) {
    case DEVMEM_NETDEV_A_QUEUE_ID:
        q->has_id = 1;
        return devmem_nl_get_u32(payload, len, &q->id);
    case DEVMEM_NETDEV_A_QUEUE_TYPE:
        q->has_type = 1;
        return devmem_nl_get_u32(payload, len, &q->type);
    case DEVMEM_NETDEV_A_QUEUE_DMABUF:
        return devmem_nl_get_u32(payload, len, &q->dmabuf);
    default:
        return 0;
    }
}

int devmem_nl_queues_cb(const struct nlmsghdr *nlh, void *arg, struct devmem_err *err)
{
    struct devmem_nl_queues *qs = arg;
    struct queue_one q = {0};
    int rc = devmem_nl_genl_attrs(nlh, queue_attr_cb, &q, err);

    if (rc < 0) {
        return rc;
    }
    if (!q.has_id || !q.has_type) {
        return devmem_err_set(err, EBADMSG, "queue without an id or a type");
    }
    if (DEVMEM_NETDEV_QUEUE_TYPE_RX == q.type) {
        qs->n_rx++;
        if (0 != q.dmabuf) {
            qs->n_rx_bound++;
        }
        if (q.id < DEVMEM_NL_MAX_QUEUES) {
            qs->rx_dmabuf[q.id] = q.dmabuf;
        }
    } else if (DEVMEM_NETDEV_QUEUE_TYPE_TX == q.type) {
        qs->n_tx++;
    }
    return 0;
}

int devmem_nl_parse_family(const void *buf, size_t len, uint32_t seq, uint16_t *family_id,
                           uint64_t *cmds, struct devmem_nl_status *st, struct devmem_err *err)
{
    struct devmem_nl_family_ctx ctx = {.id = *family_id, .cmds = *cmds};
    int rc = devmem_nl_parse(buf, len, seq, devmem_nl_family_cb, &ctx, st, err);

    *family_id = ctx.id;
    *cmds = ctx.cmds;
    if (1 == rc && 0 == st->error && 0 == ctx.id) {
        rc = devmem_err_set(err, EBADMSG, "family reply without a family id");
    }
    return rc;
}

int devmem_nl_parse_bind(const void *buf, size_t len, uint32_t seq, uint32_t *binding_id,
                         struct devmem_nl_status *st, struct devmem_err *err)
{
    int rc = devmem_nl_parse(buf, len, seq, devmem_nl_bind_cb, binding_id, st, err);

    if (1 == rc && 0 == st->error && 0 == *binding_id) {
        rc = devmem_err_set(err, EBADMSG, "bind reply without a binding id");
    }
    return rc;
}

int devmem_nl_parse_queues(const void *buf, size_t len, uint32_t seq, struct devmem_nl_queues *q,
                           struct devmem_nl_status *st, struct devmem_err *err)
{
    return devmem_nl_parse(buf, len, seq, devmem_nl_queues_cb, q, st, err);
}

/* ---- error text -------------------------------------------------------------------------- */

static void attr_label(uint16_t type, const char *const *names, size_t n, char *out,
                       size_t outsize)
{
    type &= NLA_TYPE_MASK;
    if (NULL != names && type < n && NULL != names[type]) {
        snprintf(out, outsize, "%s", names[type]);
    } else {
        snprintf(out, outsize, "attribute %u", (unsigned) type);
    }
}

/* Name the request attribute that starts at byte `offset` of the request (one nest deep). */
static void attr_at_offset(const void *req, size_t len, uint32_t offset,
                           const char *const *names, size_t n, char *out, size_t outsize)
{
    size_t start = MNL_NLMSG_HDRLEN + GENL_HDRLEN;
    const unsigned char *base = req;
    const struct nlattr *attr;
    int left;

    snprintf(out, outsize, "the attribute at byte %u", (unsigned) offset);
    if (NULL == req || len <= start || len > INT32_MAX) {
        return;
    }
    attr = (const struct nlattr *) (base + start);
    left = (int) (len - start);
    while (mnl_attr_ok(attr, left)) {
        size_t a_off = (size_t) ((const unsigned char *) attr - base);
        char outer[48];

        attr_label(mnl_attr_get_type(attr), names, n, outer, sizeof(outer));
        if (a_off == offset) {
            snprintf(out, outsize, "%s", outer);
            return;
        }
        if (offset > a_off && offset < a_off + attr->nla_len
            && (attr->nla_type & NLA_F_NESTED)) {
            const struct nlattr *in = mnl_attr_get_payload(attr);
            int in_left = (int) mnl_attr_get_payload_len(attr);

            while (mnl_attr_ok(in, in_left)) {
                if ((size_t) ((const unsigned char *) in - base) == offset) {
                    snprintf(out, outsize, "%s/attribute %u", outer,
                             (unsigned) mnl_attr_get_type(in));
                    return;
                }
                in_left -= MNL_ALIGN(in->nla_len);
                in = mnl_attr_next(in);
            }
        }
        left -= MNL_ALIGN(attr->nla_len);
        attr = mnl_attr_next(attr);
    }
}

int devmem_nl_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                         const char *what, const char *const *attr_names, size_t n_attr_names,
                         struct devmem_err *err)
{
    char where[96] = "";
    char label[64];

    if (st->has_offset) {
        attr_at_offset(req, len, st->offset, attr_names, n_attr_names, label, sizeof(label));
        snprintf(where, sizeof(where), "it flagged %s", label);
    } else if (st->has_miss_type) {
        attr_label((uint16_t) st->miss_type, attr_names, n_attr_names, label, sizeof(label));
        snprintf(where, sizeof(where), "required %s is missing", label);
    }
    if ('\0' != st->msg[0]) {
        return devmem_err_set(err, st->error, "netlink: %s: %s (kernel: %s)%s%s%s", what,
                              strerror(st->error), st->msg, where[0] ? " [" : "", where,
                              where[0] ? "]" : "");
    }
    if ('\0' != where[0]) {
        return devmem_err_set(err, st->error, "netlink: %s: %s (kernel gave no message; %s)",
                              what, strerror(st->error), where);
    }
    /* generic netlink refuses admin-only commands before any handler can explain */
    return devmem_err_set(err, st->error, "netlink: %s: %s (kernel gave no message%s)", what,
                          strerror(st->error),
                          EPERM == st->error ? "; the command needs CAP_NET_ADMIN" : "");
}

#else /* !HAVE_LIBMNL */

#define NO_MNL(err) devmem_err_set((err), EOPNOTSUPP, "built without libmnl")

struct nlmsghdr *devmem_nl_put_genl_header(void *buf, size_t size, uint16_t type, uint16_t flags,
                                           uint32_t seq, uint8_t cmd, uint8_t version)
{
    return NULL;
}

int devmem_nl_parse(const void *buf, size_t len, uint32_t seq, devmem_nl_data_cb cb, void *arg,
                    struct devmem_nl_status *st, struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_status_err(const struct devmem_nl_status *st, const void *req, size_t len,
                         const char *what, const char *const *attr_names, size_t n_attr_names,
                         struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_attrs_walk(const void *p, size_t len, devmem_nl_attr_cb cb, void *arg)
{
    return -EOPNOTSUPP;
}

int devmem_nl_build_getfamily(void *buf, size_t size, uint32_t seq, const char *family)
{
    return -EOPNOTSUPP;
}

int devmem_nl_build_bind_rx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd, const unsigned int *queues,
                            size_t nqueues)
{
    return -EOPNOTSUPP;
}

int devmem_nl_build_bind_tx(void *buf, size_t size, uint16_t family, uint32_t seq,
                            unsigned int ifindex, int dmabuf_fd)
{
    return -EOPNOTSUPP;
}

int devmem_nl_build_queue_get(void *buf, size_t size, uint16_t family, uint32_t seq,
                              unsigned int ifindex)
{
    return -EOPNOTSUPP;
}

int devmem_nl_parse_family(const void *buf, size_t len, uint32_t seq, uint16_t *family_id,
                           uint64_t *cmds, struct devmem_nl_status *st, struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_parse_bind(const void *buf, size_t len, uint32_t seq, uint32_t *binding_id,
                         struct devmem_nl_status *st, struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_parse_queues(const void *buf, size_t len, uint32_t seq, struct devmem_nl_queues *q,
                           struct devmem_nl_status *st, struct devmem_err *err)
{
    return NO_MNL(err);
}

#endif /* HAVE_LIBMNL */
