/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel-operation tables: the real syscalls and netlink here, and the emulation's, found
 * in its own library (emul/) when a process asks for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif

#include "kernel.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
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

/* ---- the emulated kernel's library ------------------------------------------------------- */

static pthread_mutex_t emulated_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct devmem_emulated *emulated; /* handed over or loaded; never unloaded */

void devmem_kernel_use_emulated(const struct devmem_emulated *e)
{
    (void) pthread_mutex_lock(&emulated_lock);
    emulated = e;
    (void) pthread_mutex_unlock(&emulated_lock);
}

#if defined(DEVMEM_EMUL_SUBDIR) || defined(DEVMEM_EMUL_DIR) /* an install has one to load */
/* Loads the library at path; 0, or -errno with why in why. */
static int emulated_load(const char *path, char *why, size_t len)
{
    const struct devmem_emulated *e;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (NULL == lib) {
        snprintf(why, len, "%s", dlerror());
        return -ENOENT;
    }
    e = dlsym(lib, "devmem_emulated");
    if (NULL == e || DEVMEM_EMULATED_ABI != e->abi) {
        snprintf(why, len, "%s: %s", path, NULL == e ? "no devmem_emulated in it"
                                                    : "built from another version of btl_devmem");
        (void) dlclose(lib);
        return -ELIBBAD;
    }
    emulated = e;
    return 0;
}
#endif

/* The library where the install put it: beside the component (<libdir>/openmpi/ ->
 * <libdir>/btl_devmem/), which holds wherever the prefix was moved, else in the directory
 * configured (a component installed into Open MPI's own directory). */
static int emulated_find(const struct devmem_emulated **out, struct devmem_err *err)
{
    char why[2 * PATH_MAX] = "the component was built inside Open MPI's tree, which does not "
                             "build it";
    int rc = -ENOENT;

    (void) pthread_mutex_lock(&emulated_lock);
#ifdef DEVMEM_EMUL_SUBDIR
    Dl_info self;

    if (NULL == emulated && 0 != dladdr((void *) emulated_find, &self)
        && NULL != self.dli_fname && NULL != strrchr(self.dli_fname, '/')) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%.*s/../%s/%s",
                 (int) (strrchr(self.dli_fname, '/') - self.dli_fname), self.dli_fname,
                 DEVMEM_EMUL_SUBDIR, DEVMEM_EMULATED_LIB);
        rc = emulated_load(path, why, sizeof(why));
    }
#endif
#ifdef DEVMEM_EMUL_DIR
    if (NULL == emulated && -ELIBBAD != rc) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", DEVMEM_EMUL_DIR, DEVMEM_EMULATED_LIB);
        rc = emulated_load(path, why, sizeof(why));
    }
#endif
    *out = emulated;
    (void) pthread_mutex_unlock(&emulated_lock);
    if (NULL == *out) {
        return devmem_err_set(err, -rc, "the emulated kernel (a test double, %s) is not "
                              "installed with this component: %s", DEVMEM_EMULATED_LIB, why);
    }
    return 0;
}

void devmem_kernel_emul_stats(struct devmem_kernel *k, struct devmem_emul_stats *s)
{
    memset(s, 0, sizeof(*s));
    if (NULL != k->emulated && NULL != k->emul) {
        k->emulated->stats(k, s);
    }
}

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
        if (0 == (rc = emulated_find(&k->emulated, err))) {
            k->ops = k->emulated->ops;
            rc = k->emulated->open(k, cfg, err);
        }
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
    if (NULL != k->emul) {
        k->emulated->close(k);
    }
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
