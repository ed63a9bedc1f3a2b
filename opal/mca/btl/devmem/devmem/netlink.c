/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The netdev generic netlink family over a libmnl socket: resolving the family, one
 * request and its replies at a time with a bounded wait, and the operations the component
 * uses (bind-rx, bind-tx, dev-get, queue-get). The messages themselves are built and parsed
 * in netlink_msg.c.
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

#ifdef HAVE_LIBMNL

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

/* Large enough for one skb of a dump (the kernel fills up to 32 KiB per recv). */
#define NL_RECV_SIZE 32768
/* The kernel always answers; a bound on the wait keeps a wedged kernel from hanging a job
 * (bind-rx restarts a queue, which takes milliseconds, not seconds). */
#define NL_REPLY_TIMEOUT_S 30

struct devmem_nl {
    struct mnl_socket *sock;
    uint32_t seq;
    uint16_t family;
    uint64_t cmds; /* bit n: the family has command n (n < 64) */
    char family_name[GENL_NAMSIZ];
    unsigned char buf[NL_RECV_SIZE];
};

/* ---- the socket -------------------------------------------------------------------------- */

int devmem_nl_transact(struct devmem_nl *nl, const void *req, size_t len, devmem_nl_data_cb cb,
                       void *arg, const char *what, const char *const *attr_names,
                       size_t n_attr_names, struct devmem_err *err)
{
    struct devmem_nl_status st;
    struct devmem_err perr;
    uint32_t seq;
    int rc;

    memset(&st, 0, sizeof(st));
    devmem_err_clear(&perr);
    if (NULL == nl || NULL == req || len < MNL_NLMSG_HDRLEN) {
        rc = devmem_err_set(err, EINVAL, "netlink: %s: invalid request", what);
        goto cleanup;
    }
    seq = ((const struct nlmsghdr *) req)->nlmsg_seq;
    if (mnl_socket_sendto(nl->sock, req, len) < 0) {
        rc = devmem_err_set(err, errno, "netlink: %s: send: %s", what, strerror(errno));
        goto cleanup;
    }
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl->sock, nl->buf, sizeof(nl->buf));

        if (n < 0) {
            if (EINTR == errno) {
                continue;
            }
            if (EAGAIN == errno || EWOULDBLOCK == errno) {
                rc = devmem_err_set(err, ETIMEDOUT, "netlink: %s: no reply from the kernel "
                                    "within %d s", what, NL_REPLY_TIMEOUT_S);
                goto cleanup;
            }
            rc = devmem_err_set(err, errno, "netlink: %s: receive: %s", what, strerror(errno));
            goto cleanup;
        }
        if (0 == n) {
            rc = devmem_err_set(err, EPIPE, "netlink: %s: the socket returned no data", what);
            goto cleanup;
        }
        rc = devmem_nl_parse(nl->buf, (size_t) n, seq, cb, arg, &st, &perr);
        if (rc < 0) {
            rc = devmem_err_set(err, -rc, "netlink: %s: bad reply: %s", what, perr.msg);
            goto cleanup;
        }
        if (1 == rc) {
            break;
        }
    }
    rc = 0;
    if (0 != st.error) {
        rc = devmem_nl_status_err(&st, req, len, what, attr_names, n_attr_names, err);
    }
cleanup:
    return rc;
}

uint16_t devmem_nl_family_id(const struct devmem_nl *nl)
{
    return NULL == nl ? 0 : nl->family;
}

uint32_t devmem_nl_next_seq(struct devmem_nl *nl)
{
    return NULL == nl ? 0 : ++nl->seq;
}

int devmem_nl_has_cmd(const struct devmem_nl *nl, unsigned int cmd)
{
    return NULL != nl && cmd < 64 && 0 != (nl->cmds & (UINT64_C(1) << cmd));
}

int devmem_nl_open_family(struct devmem_nl **out, const char *family, struct devmem_err *err)
{
    struct devmem_nl *nl = NULL;
    unsigned char req[128];
    struct devmem_nl_family_ctx ctx = {0};
    struct devmem_err terr;
    char what[64];
    int one = 1;
    int rc;

    devmem_err_clear(&terr);
    snprintf(what, sizeof(what), "resolve family \"%s\"", NULL == family ? "" : family);
    if (NULL == out) {
        rc = devmem_err_set(err, EINVAL, "netlink: %s: no result pointer", what);
        goto cleanup;
    }
    *out = NULL;
    nl = calloc(1, sizeof(*nl));
    if (NULL == nl) {
        rc = devmem_err_set(err, ENOMEM, "netlink: %s: out of memory", what);
        goto cleanup;
    }
    nl->sock = mnl_socket_open(NETLINK_GENERIC);
    if (NULL == nl->sock) {
        rc = devmem_err_set(err, errno, "netlink: generic netlink socket: %s", strerror(errno));
        goto cleanup;
    }
    /* Extended acks carry the kernel's reason; capped acks keep our request out of them.
     * Kernels before 4.12 lack both: we still work, with less to say. */
    (void) mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
    (void) mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
    {
        struct timeval tv = {.tv_sec = NL_REPLY_TIMEOUT_S, .tv_usec = 0};

        (void) setsockopt(mnl_socket_get_fd(nl->sock), SOL_SOCKET, SO_RCVTIMEO, &tv,
                          sizeof(tv));
    }
    if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
        rc = devmem_err_set(err, errno, "netlink: bind: %s", strerror(errno));
        goto cleanup;
    }
    /* start anywhere: replies to a previous socket's port can never match ours anyway */
    nl->seq = (uint32_t) time(NULL);
    rc = devmem_nl_build_getfamily(req, sizeof(req), devmem_nl_next_seq(nl), family);
    if (rc < 0) {
        rc = devmem_err_set(err, -rc, "netlink: %s: invalid family name", what);
        goto cleanup;
    }
    rc = devmem_nl_transact(nl, req, (size_t) rc, devmem_nl_family_cb, &ctx, what, NULL, 0, &terr);
    if (-ENOENT == rc) {
        rc = devmem_err_set(err, ENOENT, "netlink: this kernel has no \"%s\" generic netlink "
                            "family (%s)", family, terr.msg);
        goto cleanup;
    }
    if (rc < 0) {
        rc = devmem_err_set(err, terr.code, "%s", terr.msg);
        goto cleanup;
    }
    if (0 == ctx.id) {
        rc = devmem_err_set(err, EBADMSG, "netlink: %s: reply without a family id", what);
        goto cleanup;
    }
    nl->family = ctx.id;
    nl->cmds = ctx.cmds;
    snprintf(nl->family_name, sizeof(nl->family_name), "%s", family);
    *out = nl;
    nl = NULL;
    rc = 0;
cleanup:
    devmem_nl_close(nl);
    return rc;
}

int devmem_nl_open(struct devmem_nl **nl, struct devmem_err *err)
{
    return devmem_nl_open_family(nl, DEVMEM_NETDEV_FAMILY_NAME, err);
}

void devmem_nl_close(struct devmem_nl *nl)
{
    if (NULL != nl) {
        if (NULL != nl->sock) {
            mnl_socket_close(nl->sock);
        }
        free(nl);
    }
}

void devmem_nl_describe(char *out, size_t size, const char *op, unsigned int ifindex)
{
    char name[IF_NAMESIZE];

    if (0 != ifindex && NULL != if_indextoname(ifindex, name)) {
        snprintf(out, size, "%s on %s", op, name);
    } else {
        snprintf(out, size, "%s on ifindex %u", op, ifindex);
    }
}

static int do_bind(struct devmem_nl *nl, uint8_t cmd, unsigned int ifindex, int dmabuf_fd,
                   const unsigned int *queues, size_t nqueues, uint32_t *binding_id,
                   struct devmem_err *err)
{
    const char *op = DEVMEM_NETDEV_CMD_BIND_RX == cmd ? "bind-rx" : "bind-tx";
    unsigned char *req = NULL;
    uint32_t id = 0;
    char what[64];
    size_t size;
    int rc;

    devmem_nl_describe(what, sizeof(what), op, ifindex);
    if (NULL == nl || NULL == binding_id || (NULL == queues && nqueues > 0)
        || nqueues > 65536) {
        rc = devmem_err_set(err, EINVAL, "netlink: %s: invalid arguments", what);
        goto cleanup;
    }
    /* header + ifindex + fd, then per queue a nest with id and type */
    size = 64 + nqueues * 24;
    req = malloc(size);
    if (NULL == req) {
        rc = devmem_err_set(err, ENOMEM, "netlink: %s: out of memory", what);
        goto cleanup;
    }
    rc = devmem_nl_build_bind(req, size, nl->family, devmem_nl_next_seq(nl), cmd, ifindex, dmabuf_fd,
                    queues, nqueues);
    if (rc < 0) {
        rc = devmem_err_set(err, -rc, "netlink: %s: cannot build the request (fd %d): %s", what,
                            dmabuf_fd, strerror(-rc));
        goto cleanup;
    }
    rc = devmem_nl_transact(nl, req, (size_t) rc, devmem_nl_bind_cb, &id, what,
                            devmem_nl_dmabuf_attr_names, devmem_nl_n_dmabuf_attr_names, err);
    if (rc < 0) {
        goto cleanup;
    }
    if (0 == id) {
        rc = devmem_err_set(err, EBADMSG, "netlink: %s: the kernel acknowledged without a "
                            "binding id", what);
        goto cleanup;
    }
    *binding_id = id;
cleanup:
    free(req);
    return rc;
}

int devmem_nl_bind_rx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      const unsigned int *queues, size_t nqueues, uint32_t *binding_id,
                      struct devmem_err *err)
{
    return do_bind(nl, DEVMEM_NETDEV_CMD_BIND_RX, ifindex, dmabuf_fd, queues, nqueues,
                   binding_id, err);
}

int devmem_nl_bind_tx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      uint32_t *binding_id, struct devmem_err *err)
{
    return do_bind(nl, DEVMEM_NETDEV_CMD_BIND_TX, ifindex, dmabuf_fd, NULL, 0, binding_id, err);
}

int devmem_nl_ask(struct devmem_nl *nl, const char *op, unsigned int ifindex,
                  devmem_nl_build_fn build, devmem_nl_data_cb cb, void *arg, size_t arg_size,
                  struct devmem_err *err)
{
    unsigned char req[64];
    char what[64];
    int rc;

    devmem_nl_describe(what, sizeof(what), op, ifindex);
    if (NULL == nl || NULL == arg) {
        return devmem_err_set(err, EINVAL, "netlink: %s: invalid arguments", what);
    }
    memset(arg, 0, arg_size);
    rc = build(req, sizeof(req), nl->family, devmem_nl_next_seq(nl), ifindex);
    if (rc < 0) {
        return devmem_err_set(err, -rc, "netlink: %s: cannot build the request", what);
    }
    return devmem_nl_transact(nl, req, (size_t) rc, cb, arg, what, NULL, 0, err);
}

int devmem_nl_queue_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_queues *q,
                        struct devmem_err *err)
{
    return devmem_nl_ask(nl, "queue-get", ifindex, devmem_nl_build_queue_get,
                         devmem_nl_queues_cb, q, sizeof(*q), err);
}

#else /* !HAVE_LIBMNL */

#define NO_MNL(err) devmem_err_set((err), EOPNOTSUPP, "built without libmnl")

int devmem_nl_open(struct devmem_nl **nl, struct devmem_err *err)
{
    if (NULL != nl) {
        *nl = NULL;
    }
    return NO_MNL(err);
}

int devmem_nl_open_family(struct devmem_nl **nl, const char *family, struct devmem_err *err)
{
    (void) family;
    return devmem_nl_open(nl, err);
}

void devmem_nl_close(struct devmem_nl *nl)
{
    (void) nl;
}

int devmem_nl_bind_rx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      const unsigned int *queues, size_t nqueues, uint32_t *binding_id,
                      struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_bind_tx(struct devmem_nl *nl, unsigned int ifindex, int dmabuf_fd,
                      uint32_t *binding_id, struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_queue_get(struct devmem_nl *nl, unsigned int ifindex, struct devmem_nl_queues *q,
                        struct devmem_err *err)
{
    return NO_MNL(err);
}

int devmem_nl_has_cmd(const struct devmem_nl *nl, unsigned int cmd)
{
    return 0;
}

uint16_t devmem_nl_family_id(const struct devmem_nl *nl)
{
    return 0;
}

uint32_t devmem_nl_next_seq(struct devmem_nl *nl)
{
    return 0;
}

int devmem_nl_transact(struct devmem_nl *nl, const void *req, size_t len, devmem_nl_data_cb cb,
                       void *arg, const char *what, const char *const *attr_names,
                       size_t n_attr_names, struct devmem_err *err)
{
    return NO_MNL(err);
}

#endif /* HAVE_LIBMNL */
