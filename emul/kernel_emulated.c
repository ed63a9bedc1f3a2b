/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated kernel behind the kernel table (devmem/kernel.h): each operation a call into
 * emul.h under the instance's lock, and the entry devmem/kernel.c looks up when
 * btl_devmem_kernel is emulated. Built into devmem_emul.so, which only a process that asks
 * for the emulated kernel loads, and linked into the tests that drive it directly.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "emul.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "kernel.h"
#include "rx.h"
#include "tx.h"

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

static ssize_t emul_recvmsg(void *ctx, int fd, struct msghdr *msg, int flags)
{
    return devmem_emul_recvmsg(ctx, fd, msg, flags);
}

static int emu_read_completion(struct devmem_kernel *k, int fd, struct devmem_tx_completion *c,
                               struct devmem_err *err)
{
    int rc;

    emu_lock(k);
    rc = devmem_tx_read_completion_via(emul_recvmsg, k->emul, "emul", fd, c, err);
    emu_unlock(k);
    return rc;
}

static void emu_sock_close(struct devmem_kernel *k, int fd)
{
    emu_lock(k);
    devmem_emul_sock_close(k->emul, fd);
    emu_unlock(k);
}

static const struct devmem_kernel_ops emulated_ops = {
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

static int emulated_open(struct devmem_kernel *k, const struct devmem_emul_config *cfg,
                         struct devmem_err *err)
{
    return devmem_emul_open(&k->emul, cfg, err);
}

static void emulated_close(struct devmem_kernel *k)
{
    devmem_emul_close(k->emul);
    k->emul = NULL;
}

static void emulated_stats(struct devmem_kernel *k, struct devmem_emul_stats *s)
{
    emu_lock(k);
    devmem_emul_get_stats(k->emul, s);
    emu_unlock(k);
}

static size_t emulated_queued(struct devmem_kernel *k, uint32_t id)
{
    size_t n;

    emu_lock(k);
    n = devmem_emul_queued(k->emul, id);
    emu_unlock(k);
    return n;
}

static size_t emulated_unbind_tx_all(struct devmem_kernel *k)
{
    size_t n;

    emu_lock(k);
    n = devmem_emul_unbind_tx_all(k->emul);
    emu_unlock(k);
    return n;
}

__attribute__((visibility("default"))) const struct devmem_emulated devmem_emulated = {
    .abi = DEVMEM_EMULATED_ABI,
    .ops = &emulated_ops,
    .open = emulated_open,
    .close = emulated_close,
    .stats = emulated_stats,
    .queued = emulated_queued,
    .unbind_tx_all = emulated_unbind_tx_all,
};
