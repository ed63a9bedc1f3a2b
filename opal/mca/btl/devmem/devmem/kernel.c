/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two kernel-operation tables: real syscalls + netlink, and the emulation.
 */
#include "kernel.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "netlink.h"

/* ---- real -------------------------------------------------------------------------------- */

/* One netlink socket per binding, so that unbinding one is closing its socket. */
struct real_binding {
    uint32_t id;
    struct devmem_nl *nl;
};

struct real_state {
    struct real_binding *b;
    size_t n, cap;
};

static int real_bind(struct devmem_kernel *k, const struct devmem_bind_req *req, int rx,
                     uint32_t *id, struct devmem_err *err)
{
    struct real_state *st = k->real;
    struct devmem_nl *nl = NULL;
    int rc;

    *id = 0;
    if (NULL == req->region || req->region->dmabuf_fd < 0) {
        rc = devmem_err_set(err, EINVAL, "bind-%s: the region has no dmabuf fd (the host "
                            "provider has none: use udmabuf, cuda or drm memory)",
                            rx ? "rx" : "tx");
        goto cleanup;
    }
    if (st->n == st->cap) {
        size_t ncap = st->cap ? 2 * st->cap : 4;
        struct real_binding *nb = realloc(st->b, ncap * sizeof(*nb));

        if (NULL == nb) {
            rc = devmem_err_set(err, ENOMEM, "bind: out of memory");
            goto cleanup;
        }
        st->b = nb;
        st->cap = ncap;
    }
    rc = devmem_nl_open(&nl, err);
    if (0 != rc) {
        goto cleanup;
    }
    if (rx) {
        rc = devmem_nl_bind_rx(nl, req->ifindex, req->region->dmabuf_fd, req->queues,
                               req->nqueues, id, err);
    } else {
        rc = devmem_nl_bind_tx(nl, req->ifindex, req->region->dmabuf_fd, id, err);
    }
    if (0 != rc) {
        goto cleanup;
    }
    st->b[st->n].id = *id;
    st->b[st->n].nl = nl;
    st->n++;
    nl = NULL;
cleanup:
    devmem_nl_close(nl);
    return rc;
}

static int real_bind_rx(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                        struct devmem_err *err)
{
    return real_bind(k, req, 1, id, err);
}

static int real_bind_tx(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                        struct devmem_err *err)
{
    return real_bind(k, req, 0, id, err);
}

static int real_unbind(struct devmem_kernel *k, uint32_t id, struct devmem_err *err)
{
    struct real_state *st = k->real;
    size_t i;

    for (i = 0; i < st->n; i++) {
        if (st->b[i].id == id) {
            devmem_nl_close(st->b[i].nl);
            st->b[i] = st->b[--st->n];
            return 0;
        }
    }
    return devmem_err_set(err, ENOENT, "unbind: no binding %u made here", id);
}

static int real_bound(struct devmem_kernel *k, unsigned int ifindex, uint32_t id,
                      struct devmem_err *err)
{
    struct devmem_nl_queues q;
    struct devmem_nl *nl = NULL;
    int rc = devmem_nl_open(&nl, err);

    if (0 == rc) {
        rc = devmem_nl_queue_get(nl, ifindex, &q, err);
    }
    devmem_nl_close(nl);
    if (0 != rc) {
        return rc;
    }
    for (unsigned int i = 0; i < q.n_rx && i < DEVMEM_NL_MAX_QUEUES; i++) {
        if (id == q.rx_dmabuf[i]) {
            return 1;
        }
    }
    return 0;
}

static int real_steer(struct devmem_kernel *k, uint16_t port, uint32_t id,
                      struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "steer: on a real NIC flows are steered by an "
                          "ethtool ntuple rule (the NIC layer or the helper), not here");
}

static int real_steer_rss(struct devmem_kernel *k, uint16_t port, unsigned int ifindex,
                          const unsigned int *queues, size_t n, uint32_t *ctx,
                          struct devmem_err *err)
{
    if (NULL != ctx) {
        *ctx = 0;
    }
    return devmem_err_set(err, EOPNOTSUPP, "steer into an RSS context: on a real NIC this is "
                          "ethtool's job (the NIC layer or the helper), not here");
}

static int real_rss_del(struct devmem_kernel *k, uint32_t ctx, struct devmem_err *err)
{
    return real_steer_rss(k, 0, 0, NULL, 0, NULL, err);
}

static int real_sock_queue(struct devmem_kernel *k, int fd, unsigned int *queue,
                           struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "which RX queue a flow arrives on is not asked of "
                          "the real kernel (the NIC's per-queue counters tell)");
}

static ssize_t real_recv(struct devmem_kernel *k, int fd, struct devmem_rx_batch *b, int flags,
                         struct devmem_err *err)
{
    return devmem_rx_recv(fd, b, flags, err);
}

static int real_dontneed(struct devmem_kernel *k, int fd, const struct devmem_dmabuf_token *r,
                         size_t n, struct devmem_err *err)
{
    return devmem_rx_dontneed(NULL, fd, r, n, err);
}

static ssize_t real_send(struct devmem_kernel *k, int fd, uint32_t id,
                         const struct devmem_tx_iov *iov, size_t n, int flags,
                         struct devmem_err *err)
{
    return devmem_tx_send(fd, id, iov, n, flags, err);
}

static int real_read_completion(struct devmem_kernel *k, int fd, struct devmem_tx_completion *c,
                                struct devmem_err *err)
{
    return devmem_tx_read_completion(fd, c, err);
}

static void real_sock_close(struct devmem_kernel *k, int fd)
{
    /* The kernel drops the socket's frags itself when fd closes. */
}

const struct devmem_kernel_ops devmem_kernel_real_ops = {
    .name = "real",
    .bind_rx = real_bind_rx,
    .bind_tx = real_bind_tx,
    .unbind = real_unbind,
    .bound = real_bound,
    .steer = real_steer,
    .steer_rss = real_steer_rss,
    .rss_del = real_rss_del,
    .sock_queue = real_sock_queue,
    .recv = real_recv,
    .dontneed = real_dontneed,
    .send = real_send,
    .read_completion = real_read_completion,
    .sock_close = real_sock_close,
};

/* ---- emulated ---------------------------------------------------------------------------- */

/* The emulation is one process-wide state (sockets, pools, scratch buffers): every call
 * into it holds k->emul_lock, so that receiving threads and the progress thread may use
 * their own sockets at once. */
static void emu_lock(struct devmem_kernel *k)
{
    (void) pthread_mutex_lock(&k->emul_lock);
}

static void emu_unlock(struct devmem_kernel *k)
{
    (void) pthread_mutex_unlock(&k->emul_lock);
}

static int emu_bind_rx(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                       struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_bind_rx_queues(k->emul, req->region, req->ifindex, req->queues,
                                    NULL == req->queues ? 0 : req->nqueues, id, err);
    emu_unlock(k);
    return rc;
}

static int emu_bind_tx(struct devmem_kernel *k, const struct devmem_bind_req *req, uint32_t *id,
                       struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_bind_tx(k->emul, req->region, id, err);
    emu_unlock(k);
    return rc;
}

static int emu_unbind(struct devmem_kernel *k, uint32_t id, struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_unbind(k->emul, id, err);
    emu_unlock(k);
    return rc;
}

static int emu_bound(struct devmem_kernel *k, unsigned int ifindex, uint32_t id,
                     struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_bound(k->emul, id);
    emu_unlock(k);
    return rc;
}

static int emu_steer(struct devmem_kernel *k, uint16_t port, uint32_t id,
                     struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_steer(k->emul, port, id, err);
    emu_unlock(k);
    return rc;
}

static int emu_steer_rss(struct devmem_kernel *k, uint16_t port, unsigned int ifindex,
                         const unsigned int *queues, size_t n, uint32_t *ctx,
                         struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_rss_ctx_create(k->emul, ifindex, queues, n, ctx, err);
    if (0 == rc && 0 != (rc = devmem_emul_steer_ctx(k->emul, port, *ctx, err))) {
        (void) devmem_emul_rss_ctx_delete(k->emul, *ctx, NULL);
        *ctx = 0;
    }
    emu_unlock(k);
    return rc;
}

static int emu_rss_del(struct devmem_kernel *k, uint32_t ctx, struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_rss_ctx_delete(k->emul, ctx, err);
    emu_unlock(k);
    return rc;
}

static int emu_sock_queue(struct devmem_kernel *k, int fd, unsigned int *queue,
                          struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_emul_sock_queue(k->emul, fd, queue);
    emu_unlock(k);

    return 0 == rc ? 0 : devmem_err_set(err, -rc, "emul: socket %d: no steered flow seen yet", fd);
}

static ssize_t emu_recv(struct devmem_kernel *k, int fd, struct devmem_rx_batch *b, int flags,
                        struct devmem_err *err)
{
    struct msghdr msg;
    struct iovec iov;
    ssize_t ret;

    devmem_rx_batch_msghdr(b, &msg, &iov);
    emu_lock(k);
    ret = devmem_emul_recvmsg(k->emul, fd, &msg, flags | MSG_SOCK_DEVMEM);
    emu_unlock(k);
    if (-ENOBUFS == ret) {
        return devmem_err_set(err, ENOBUFS, "emul: would block, pool full: return tokens "
                              "(SO_DEVMEM_DONTNEED) and retry");
    }
    return devmem_rx_batch_finish(b, &msg, ret, err);
}

static int emu_dontneed(struct devmem_kernel *k, int fd, const struct devmem_dmabuf_token *r,
                        size_t n, struct devmem_err *err)
{
    int ret;

    emu_lock(k);
    ret = devmem_emul_dontneed(k->emul, fd, r, (socklen_t) (n * sizeof(*r)));
    emu_unlock(k);

    if (ret < 0) {
        return devmem_err_set(err, -ret, "emul: SO_DEVMEM_DONTNEED (%zu ranges): %s", n,
                              strerror(-ret));
    }
    return ret;
}

static ssize_t emul_sendmsg(void *ctx, int fd, const struct msghdr *msg, int flags)
{
    return devmem_emul_sendmsg(ctx, fd, msg, flags);
}

static ssize_t emu_send(struct devmem_kernel *k, int fd, uint32_t id,
                        const struct devmem_tx_iov *iov, size_t n, int flags,
                        struct devmem_err *err)
{
    ssize_t rc;

    emu_lock(k);
    rc = devmem_tx_send_via(emul_sendmsg, k->emul, "emul", fd, id, iov, n, flags, err);
    emu_unlock(k);
    return rc;
}

static int emu_read_completion(struct devmem_kernel *k, int fd, struct devmem_tx_completion *c,
                               struct devmem_err *err)
{
    union {
        char buf[CMSG_SPACE(64)];
        struct cmsghdr align;
    } cbuf;
    struct msghdr msg;
    ssize_t ret;

    memset(&msg, 0, sizeof(msg));
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = sizeof(cbuf.buf);
    emu_lock(k);
    ret = devmem_emul_recvmsg(k->emul, fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
    emu_unlock(k);
    if (ret < 0) {
        if (-EAGAIN == ret || -EWOULDBLOCK == ret) {
            return devmem_err_set(err, EAGAIN, "tx: no completion queued");
        }
        return devmem_err_set(err, (int) -ret, "emul: recvmsg(MSG_ERRQUEUE): %s",
                              strerror((int) -ret));
    }
    return devmem_tx_parse_completion(&msg, c, err);
}

static void emu_sock_close(struct devmem_kernel *k, int fd)
{
    emu_lock(k);
    devmem_emul_sock_close(k->emul, fd);
    emu_unlock(k);
}

const struct devmem_kernel_ops devmem_kernel_emulated_ops = {
    .name = "emulated",
    .bind_rx = emu_bind_rx,
    .bind_tx = emu_bind_tx,
    .unbind = emu_unbind,
    .bound = emu_bound,
    .steer = emu_steer,
    .steer_rss = emu_steer_rss,
    .rss_del = emu_rss_del,
    .sock_queue = emu_sock_queue,
    .recv = emu_recv,
    .dontneed = emu_dontneed,
    .send = emu_send,
    .read_completion = emu_read_completion,
    .sock_close = emu_sock_close,
};

/* ---- instances --------------------------------------------------------------------------- */

int devmem_kernel_open(struct devmem_kernel **kp, enum devmem_kernel_kind kind,
                       const struct devmem_emul_config *cfg, struct devmem_err *err)
{
    struct devmem_kernel *k;
    int rc = 0;

    *kp = NULL;
    k = calloc(1, sizeof(*k));
    if (NULL == k) {
        return devmem_err_set(err, ENOMEM, "kernel: out of memory");
    }
    k->kind = kind;
    (void) pthread_mutex_init(&k->emul_lock, NULL);
    switch (kind) {
    case DEVMEM_KERNEL_REAL:
        k->ops = &devmem_kernel_real_ops;
        k->real = calloc(1, sizeof(struct real_state));
        if (NULL == k->real) {
            rc = devmem_err_set(err, ENOMEM, "kernel: out of memory");
        }
        break;
    case DEVMEM_KERNEL_EMULATED:
        k->ops = &devmem_kernel_emulated_ops;
        rc = devmem_emul_open(&k->emul, cfg, err);
        break;
    default:
        rc = devmem_err_set(err, EINVAL, "kernel: unknown kind %d", (int) kind);
        break;
    }
    if (0 != rc) {
        devmem_kernel_close(k);
        return rc;
    }
    *kp = k;
    return 0;
}

void devmem_kernel_close(struct devmem_kernel *k)
{
    if (NULL == k) {
        return;
    }
    if (NULL != k->real) {
        struct real_state *st = k->real;
        size_t i;

        for (i = 0; i < st->n; i++) {
            devmem_nl_close(st->b[i].nl);
        }
        free(st->b);
        free(st);
    }
    devmem_emul_close(k->emul);
    (void) pthread_mutex_destroy(&k->emul_lock);
    free(k);
}

const char *devmem_kernel_kind_name(enum devmem_kernel_kind kind)
{
    switch (kind) {
    case DEVMEM_KERNEL_REAL:
        return "real";
    case DEVMEM_KERNEL_EMULATED:
        return "emulated";
    }
    return "unknown";
}

int devmem_kernel_kind_parse(const char *s, enum devmem_kernel_kind *kind,
                             struct devmem_err *err)
{
    if (NULL != s && 0 == strcmp(s, "real")) {
        *kind = DEVMEM_KERNEL_REAL;
        return 0;
    }
    if (NULL != s && 0 == strcmp(s, "emulated")) {
        *kind = DEVMEM_KERNEL_EMULATED;
        return 0;
    }
    return devmem_err_set(err, EINVAL, "kernel: \"%s\" is neither \"real\" nor \"emulated\"",
                          NULL != s ? s : "(null)");
}

static int ledger_dontneed(void *ctx, int fd, const struct devmem_dmabuf_token *ranges,
                           size_t nranges, struct devmem_err *err)
{
    struct devmem_kernel *k = ctx;

    return k->ops->dontneed(k, fd, ranges, nranges, err);
}

int devmem_kernel_ledger_init(struct devmem_kernel *k, int fd, struct devmem_ledger *l,
                              struct devmem_err *err)
{
    return devmem_ledger_init(l, fd, ledger_dontneed, k, err);
}
