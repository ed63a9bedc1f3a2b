/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Setting up (and undoing) each module's device path; see btl_devmem_dev.h.
 *
 * Real kernel, per module: pick an RX queue (the last ones, one per local rank, away from
 * RSS's low queues), check that RSS keeps other flows off it, allocate the RX pool from a
 * dmabuf provider, bind it to the queue, open the device-flow listen socket and steer its
 * port to the queue with an ntuple rule. Every step that fails names itself and quotes the
 * kernel. Emulated: the pool is host memory, the binding and the steering rule are the
 * emulation's, and the same listen socket and device flows follow.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "sockets/btl_devmem_gpu_nic.h"
#include "sockets/btl_devmem_helper.h"
#include "sockets/btl_devmem_sock.h"
#include "device/btl_devmem_dev.h"

#include "devmem/cudrv.h"
#include "devmem/netlink.h"
#include "devmem/nic.h"

/* Most dmabuf frags one receive may report (the kernel has no limit beyond the control
 * buffer; 1024 is UIO_MAXIOV and keeps the control buffer at 40 KiB). */
#define DEV_RX_MAX_FRAGS 1024

/* Most bytes one devmem receive takes (its linear buffer): 1 MiB, about the 4.7 receives a
 * MiB the lanes measured, so that a receive is seldom cut short by it. */
#define DEV_RX_BATCH (1u << 20)

static struct {
    enum mca_btl_devmem_mode mode;
    struct devmem_kernel *k;
    struct devmem_rx_batch batch;
    size_t batch_cap;
    bool batch_ready;
    bool enabled;
    bool via_helper; /* devmem-helperd makes the bindings and steering rules */
    mca_btl_devmem_dev_accept_fn on_accept; /* the device-flow layer's, for accepted lanes */
    struct mca_btl_devmem_devpath *first;   /* every module's part (dev_init) */
    int n;                                  /* how many */
} dev_state;

/* A reason, cut to the buffer: long kernel texts may lose their tail, never the process. */
static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    (void) vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

const char *mca_btl_devmem_mode_name(enum mca_btl_devmem_mode mode)
{
    switch (mode) {
    case MCA_BTL_DEVMEM_MODE_OFF: return "off";
    case MCA_BTL_DEVMEM_MODE_AUTO: return "auto";
    case MCA_BTL_DEVMEM_MODE_REQUIRE: return "require";
    }
    return "?";
}

static int parse_mode(const char *s, enum mca_btl_devmem_mode *mode)
{
    static const enum mca_btl_devmem_mode all[] = {
        MCA_BTL_DEVMEM_MODE_OFF, MCA_BTL_DEVMEM_MODE_AUTO, MCA_BTL_DEVMEM_MODE_REQUIRE};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (NULL != s && 0 == strcasecmp(s, mca_btl_devmem_mode_name(all[i]))) {
            *mode = all[i];
            return 0;
        }
    }
    return -EINVAL;
}

struct devmem_kernel *mca_btl_devmem_dev_kernel(void)
{
    return dev_state.k;
}

struct devmem_rx_batch *mca_btl_devmem_dev_batch(size_t *cap)
{
    *cap = dev_state.batch_cap;
    return dev_state.batch_ready ? &dev_state.batch : NULL;
}

int mca_btl_devmem_dev_batch_init(struct devmem_rx_batch *b, struct devmem_err *err)
{
    return devmem_rx_batch_init(b, dev_state.batch_cap, DEV_RX_MAX_FRAGS, err);
}

bool mca_btl_devmem_dev_enabled(void)
{
    return dev_state.enabled;
}

bool mca_btl_devmem_dev_via_helper(void)
{
    return dev_state.via_helper;
}

bool mca_btl_devmem_dev_required(void)
{
    return MCA_BTL_DEVMEM_MODE_REQUIRE == dev_state.mode;
}

struct devmem_region *mca_btl_devmem_dev_pool(uint32_t id)
{
    for (struct mca_btl_devmem_devpath *p = dev_state.first; NULL != p; p = p->next) {
        struct mca_btl_devmem_dev *d = p->dev;
        if (NULL != d && d->rx_id == id) {
            return &d->pool;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- the listen socket */

static void accepted(void *arg, int sd, const struct mca_btl_devmem_ip *addr, uint16_t port)
{
    dev_state.on_accept(arg, sd, addr, port);
}

static int open_listener(struct mca_btl_devmem_dev *d, char *why, size_t len)
{
    uint16_t want = d->part->prev_port;
    int rc = dev_state.via_helper
                 ? mca_btl_devmem_helper_listen_socket(d->part->itf, want, &d->listener.fd,
                                                       &d->listener.port)
                 : mca_btl_devmem_listen_socket(d->part->itf, want, &d->listener.fd,
                                                &d->listener.port);

    if (0 != rc) {
        say(why, len, "device-flow listen socket: %s", strerror(-rc));
        return rc;
    }
    if (0 != want && want != d->listener.port) {
        DEVMEM_VERBOSE(1, "%s: device-flow port %u, which peers on other hosts know from an "
                       "earlier session, is taken: they cannot open device flows",
                       d->part->itf->name, (unsigned) want);
    }
    rc = mca_btl_devmem_listener_start(&d->listener);
    if (0 != rc) {
        say(why, len, "device-flow listen socket: cannot watch it: %s", strerror(-rc));
    }
    return rc;
}

/* ---------------------------------------------------------------- the RX pool */

/* The device a provider's pool goes on: the rank's GPU for CUDA memory. */
static int pool_device(const struct devmem_provider *p)
{
    int gpu = &devmem_provider_cuda == p ? mca_btl_devmem_gpu() : 0;

    return gpu > 0 ? gpu : 0;
}

/* A GPU pool's gathers: the way btl_devmem_testing gather_way names (checked when it was
 * parsed), and the kernel made ready now, so that a GPU where it cannot run (no PTX
 * compiler in the driver, no mapped host memory) says so once here rather than at the first
 * gather; its gathers then copy piece by piece, correct and slower. 0, or -ENODEV with why. */
static int pool_gathers(const struct devmem_provider *p, int ordinal, char *why, size_t len)
{
    const char *way = mca_btl_devmem_component.gather_way;
    struct devmem_err e;
    int rc;

    if (&devmem_provider_cuda != p) {
        return 0;
    }
    if (NULL != way && '\0' != way[0]
        && 0 != devmem_cuda_set_way(devmem_cuda_way_by_name(way), &e)) {
        say(why, len, "btl_devmem_testing gather_way=%s: %s", way, e.msg);
        return -ENODEV;
    }
    rc = devmem_cuda_gather_prepare(ordinal, &e);
    if (-EOPNOTSUPP == rc) {
        DEVMEM_VERBOSE(1, "GPU %d: gathers copy piece by piece: %s", ordinal, e.msg);
    } else if (0 != rc) {
        say(why, len, "GPU %d gathers: %s", ordinal, e.msg);
        return -ENODEV;
    }
    return 0;
}

/* Allocate the pool from the configured provider; "auto" tries the dmabuf exporters in
 * order (real) or takes host memory (emulated). why lists every provider's reason. */
static int pool_alloc(struct mca_btl_devmem_dev *d, bool real, char *why, size_t len)
{
    static const char *const exporters[] = {"cuda", "udmabuf", "drm"};
    const char *want = mca_btl_devmem_component.rx_provider;
    const char *const *names = exporters;
    const char *one[1];
    size_t n = sizeof(exporters) / sizeof(exporters[0]), used = 0;

    if (NULL != want && 0 != strcasecmp(want, "auto")) {
        one[0] = want;
        names = one;
        n = 1;
    } else if (!real) {
        one[0] = "host";
        names = one;
        n = 1;
    }
    why[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const struct devmem_provider *p = devmem_provider_find(names[i]);
        struct devmem_err e;
        int rc;

        devmem_err_clear(&e);
        if (NULL == p) {
            rc = devmem_err_set(&e, EINVAL, "no provider called \"%s\" (cuda, udmabuf, drm, "
                                "host)", names[i]);
        } else if (0 == (rc = p->probe(&e))
                   && 0 == (rc = devmem_region_alloc(&d->pool, p,
                                                     mca_btl_devmem_component.rx_pool_size,
                                                     pool_device(p), &e))) {
            if (!real || d->pool.dmabuf_fd >= 0) {
                if (0 != (rc = pool_gathers(p, pool_device(p), why, len))) {
                    devmem_region_release(&d->pool);
                }
                return rc;
            }
            devmem_region_release(&d->pool);
            rc = devmem_err_set(&e, EINVAL, "%s memory has no dmabuf for the real kernel",
                                names[i]);
        }
        int w = snprintf(why + used, len - used, "%s%s", used ? "; " : "", e.msg);
        if (w > 0 && (size_t) w < len - used) {
            used += (size_t) w;
        }
        (void) rc;
    }
    return -ENODEV;
}

/* ---------------------------------------------------------------- real kernel */

/* Ask the kernel whether this NIC can take a devmem binding at all, binding nothing: bind-rx
 * with a memfd in place of the dmabuf. A NIC without devmem support refuses before it looks
 * at the fd (netdev_nl_bind_rx_doit checks the device first); a capable one fails on the fd
 * (dma_buf_get: EINVAL) and nothing is bound. Returns 0 when the NIC passed. */
static int probe_nic(const struct mca_btl_devmem_if *itf, unsigned int queue, char *why,
                     size_t len)
{
    struct devmem_region stand_in = {.dmabuf_fd = -1, .priv_fd = -1};
    struct devmem_bind_req req = {itf->ifindex, &queue, 1, &stand_in};
    struct devmem_err e;
    uint32_t id = 0;
    int rc = 0;

    stand_in.dmabuf_fd = memfd_create("btl-devmem-probe", MFD_CLOEXEC);
    if (stand_in.dmabuf_fd < 0 || 0 != ftruncate(stand_in.dmabuf_fd, 1 << 20)) {
        say(why, len, "memfd for the bind-rx probe: %s", strerror(errno));
        rc = -errno;
    } else if (0 == dev_state.k->ops->bind_rx(dev_state.k, &req, &id, &e)) {
        (void) dev_state.k->ops->unbind(dev_state.k, id, NULL); /* a memfd: cannot happen */
    } else if (EINVAL != e.code && EBADF != e.code) {
        say(why, len, "the kernel refuses bind-rx on %s (RX queue %u): %s", itf->name, queue,
            e.msg);
        rc = -e.code;
    }
    if (stand_in.dmabuf_fd >= 0) {
        close(stand_in.dmabuf_fd);
    }
    return rc;
}

/* RX queues a pool asks for: btl_devmem_rx_queues, or by default one per lane a peer opens. */
static unsigned int queues_wanted(void)
{
    int n = mca_btl_devmem_component.rx_queues;

    return n > 0 ? (unsigned int) n : (unsigned int) mca_btl_devmem_component.devflows;
}

/* The ranks of this job on this host: all may bind queues on the same NIC. */
static unsigned int local_ranks(void)
{
    return opal_process_info.num_local_peers + 1;
}

/* The queues this rank binds, *first .. *first + *n - 1: the last ones of the NIC, local
 * rank r taking the r-th group from the top, so that ranks sharing a NIC take distinct
 * queues and RSS keeps the low ones. By default (rx_queues -1) each rank takes the same
 * share, fewer than wanted where the NIC has fewer for all local ranks (every rank works
 * it out alike, so the groups never overlap); an explicit count must fit. */
static int pick_queues(const struct mca_btl_devmem_if *itf, unsigned int n_rx,
                       unsigned int *first, unsigned int *n, char *why, size_t len)
{
    int local = opal_process_info.my_local_rank > 0 ? opal_process_info.my_local_rank : 0;
    bool fixed = mca_btl_devmem_component.rx_queues > 0;
    unsigned int want = queues_wanted();

    /* queue 0 stays with RSS: n_rx - 1 queues for the local ranks' groups */
    if (!fixed && local_ranks() * want > n_rx - 1 && n_rx > 1) {
        want = (n_rx - 1) / local_ranks();
        want = want > 0 ? want : 1; /* the first ranks get one each, the rest none */
    }
    if (0 == want || n_rx < 1 || (unsigned int) (local + 1) * want > n_rx - 1) {
        say(why, len, "%s has %u RX queue(s): not %u left for local rank %d once queue 0 stays "
            "with RSS (set btl_devmem_rx_queues, or add channels: ethtool -L)", itf->name,
            n_rx, 0 == want ? 1 : want, local);
        return -ENOSPC;
    }
    *n = want;
    *first = n_rx - (unsigned int) (local + 1) * want;
    return 0;
}

/* Flows not meant for device memory must not hash onto the devmem queue: they would land
 * in a dmabuf and their readers would get EFAULT. */
static int check_rss(const struct mca_btl_devmem_if *itf, unsigned int queue, char *why,
                     size_t len)
{
    struct devmem_nic_rss rss;
    struct devmem_err e;

    if (0 != devmem_nic_get_rss(itf->name, &rss, &e)) {
        say(why, len, "cannot read the RSS table of %s to keep other flows off RX queue %u: %s",
            itf->name, queue, e.msg);
        return -EIO;
    }
    if (rss.spread > queue) {
        say(why, len, "RSS on %s spreads flows over queues 0..%u, which includes devmem RX "
            "queue %u; restrict it first (ethtool -X %s equal %u)", itf->name, rss.spread - 1,
            queue, itf->name, queue);
        return -EBUSY;
    }
    return 0;
}

/* Ask the helper to bind the pool (fd: its dmabuf, or the emulation's memfd) to the queues
 * wanted and steer the listen socket's port (into an RSS context over them when several);
 * it picks the queues. By default the count is a wish: the helper grants this rank's share
 * of its range among the local ranks (a version 1 helper cannot: a refusal of several
 * queues is asked again for one). */
static int helper_bind_rx(struct mca_btl_devmem_dev *d, int fd, char *why, size_t len)
{
    struct devmem_helper_client *h = mca_btl_devmem_helper();
    struct devmem_helper_rx_ask ask = {queues_wanted(), local_ranks(),
                                       mca_btl_devmem_component.rx_queues < 0};
    struct devmem_helper_reply reply;
    struct devmem_err e;
    int rc = devmem_helper_bind_rx(h, d->part->itf->name, &ask, fd, d->listener.fd, &reply,
                                   &e);

    /* a refused descriptor (-EBADF: the stand-in of helper_probe_nic) is not the count */
    if (0 != rc && ask.nqueues > 1 && ask.fewer && devmem_helper_version(h) < 2
        && -EPERM != rc && -EBADF != rc) {
        DEVMEM_VERBOSE(1, "devmem-helperd refused %u RX queues on %s (%s): asking for one",
                       ask.nqueues, d->part->itf->name, e.msg);
        ask.nqueues = 1;
        rc = devmem_helper_bind_rx(h, d->part->itf->name, &ask, fd, d->listener.fd, &reply,
                                   &e);
    }
    if (0 == rc && reply.nqueues < ask.nqueues) {
        DEVMEM_VERBOSE(1, "devmem-helperd granted %u of %u RX queues on %s (its policy's "
                       "range and max-queues, what is free, shared among %u local rank(s))",
                       reply.nqueues, ask.nqueues, d->part->itf->name, ask.sharers);
    }
    if (0 != rc) {
        say(why, len, "devmem-helperd refused bind-rx on %s: %s", d->part->itf->name, e.msg);
        return rc;
    }
    d->helper_id = reply.binding_id;
    d->rx_queue = reply.first_queue;
    d->rx_nqueues = reply.nqueues;
    return 0;
}

/* The helper's verdict on the NIC (its policy, the kernel's words), asked with a memfd
 * standing in for the pool, which it refuses (-EBADF) once the NIC has passed. 0 when it
 * passed; an emulating helper may grant the stand-in, which is given back at once. */
static int helper_probe_nic(struct mca_btl_devmem_dev *d, char *why, size_t len)
{
    int fd = memfd_create("btl-devmem-probe", MFD_CLOEXEC);
    int rc = fd >= 0 && 0 == ftruncate(fd, 1 << 20) ? helper_bind_rx(d, fd, why, len) : -EBADF;

    if (fd >= 0) {
        close(fd);
    }
    if (0 == rc) {
        mca_btl_devmem_helper_release(d->helper_id);
        d->helper_id = 0;
    }
    if (0 == rc || -EBADF == rc) {
        why[0] = '\0';
        return 0;
    }
    return rc;
}

/* Real kernel, no CAP_NET_ADMIN: the helper checks the NIC, picks the queue, binds and
 * steers; this process keeps the pool and the listen socket. */
static int setup_real_helper(struct mca_btl_devmem_dev *d, char *why, size_t len)
{
    char pool_why[200];
    int rc;

    if (0 != (rc = open_listener(d, why, len))) {
        return rc;
    }
    if (0 != pool_alloc(d, true, pool_why, sizeof(pool_why))) {
        /* No dmabuf here. The helper's verdict on the NIC (its policy, the kernel's words)
         * is still the reason that matters most. */
        if (0 == helper_probe_nic(d, why, len)) {
            say(why, len, "no dmabuf exporter for the RX pool: %s", pool_why);
        }
        return -ENODEV;
    }
    if (0 != (rc = helper_bind_rx(d, d->pool.dmabuf_fd, why, len))) {
        return rc;
    }
    d->rx_id = d->helper_id;
    return 0;
}

/* The kernel's verdict on the NIC, asked for itself: its RX queues (*n_rx) and whether it
 * takes a binding on the last of them. 0 when it passed. */
static int real_nic_check(const struct mca_btl_devmem_if *itf, unsigned int *n_rx, char *why,
                          size_t len)
{
    struct devmem_nl *nl = NULL;
    struct devmem_nl_queues *qs = calloc(1, sizeof(*qs));
    struct devmem_err e;
    int rc;

    if (NULL == qs) {
        say(why, len, "out of memory");
        return -ENOMEM;
    }
    rc = devmem_nl_open(&nl, &e);
    if (0 == rc && 0 != (rc = devmem_nl_queue_get(nl, itf->ifindex, qs, &e))) {
        say(why, len, "cannot list the RX queues of %s: %s", itf->name, e.msg);
    } else if (0 != rc) {
        say(why, len, "%s", e.msg);
    }
    *n_rx = qs->n_rx;
    devmem_nl_close(nl);
    free(qs);
    if (0 != rc) {
        return rc;
    }
    return probe_nic(itf, *n_rx > 0 ? *n_rx - 1 : 0, why, len);
}

static int setup_real(struct mca_btl_devmem_dev *d, char *why, size_t len)
{
    const struct mca_btl_devmem_if *itf = d->part->itf;
    struct devmem_err e;
    unsigned int n_rx = 0;
    char pool_why[200];
    int rc;

    if (dev_state.via_helper) {
        return setup_real_helper(d, why, len);
    }
    /* the kernel's verdict on the NIC first: it is the reason that matters most */
    if (0 != (rc = real_nic_check(itf, &n_rx, why, len))) {
        return rc;
    }
    if (0 != pool_alloc(d, true, pool_why, sizeof(pool_why))) {
        say(why, len, "no dmabuf exporter for the RX pool: %s", pool_why);
        return -ENODEV;
    }
    if (0 != (rc = pick_queues(itf, n_rx, &d->rx_queue, &d->rx_nqueues, why, len))
        || 0 != (rc = check_rss(itf, d->rx_queue, why, len))) {
        return rc;
    }
    {
        unsigned int queues[MCA_BTL_DEVMEM_RX_QUEUES_MAX];
        struct devmem_bind_req req = {itf->ifindex, queues, d->rx_nqueues, &d->pool};

        for (unsigned int i = 0; i < d->rx_nqueues; i++) {
            queues[i] = d->rx_queue + i;
        }
        rc = dev_state.k->ops->bind_rx(dev_state.k, &req, &d->rx_id, &e);
    }
    if (0 != rc) {
        say(why, len, "the kernel refuses bind-rx on %s (RX queues %u-%u): %s", itf->name,
            d->rx_queue, d->rx_queue + d->rx_nqueues - 1, e.msg);
        return rc;
    }
    if (0 != (rc = open_listener(d, why, len))) {
        return rc;
    }
    if (d->rx_nqueues > 1
        && 0 != (rc = devmem_nic_rss_ctx_create(itf->name, d->rx_queue, d->rx_nqueues,
                                                &d->rss_ctx, &e))) {
        say(why, len, "cannot make an RSS context over RX queues %u-%u on %s: %s (set "
            "btl_devmem_rx_queues 1 for one queue without one)", d->rx_queue,
            d->rx_queue + d->rx_nqueues - 1, itf->name, e.msg);
        return rc;
    }
    {
        struct devmem_nic_flow flow = {.family = itf->addr.family, .dst_port = d->listener.port,
                                       .queue = 0 != d->rss_ctx ? 0 : d->rx_queue,
                                       .rss_context = d->rss_ctx};
        uint32_t rule = 0;

        if (AF_INET == itf->addr.family) {
            flow.dst.v4 = itf->addr.a.v4;
        } else {
            flow.dst.v6 = itf->addr.a.v6;
        }
        rc = devmem_nic_flow_add(itf->name, &flow, &rule, &e);
        if (0 != rc) {
            say(why, len, "cannot steer port %u to RX queue%s %u-%u on %s: %s (needs "
                "CAP_NET_ADMIN and ntuple filters: ethtool -K %s ntuple on)",
                (unsigned) d->listener.port, d->rx_nqueues > 1 ? "s" : "", d->rx_queue,
                d->rx_queue + d->rx_nqueues - 1, itf->name, e.msg, itf->name);
            return rc;
        }
        d->steer_rule = (int) rule;
    }
    return 0;
}

/* ---------------------------------------------------------------- emulated kernel */

/* The emulated NIC: queue 0 is RSS's, the pool takes queues 1 .. n (each process has an
 * emulation of its own), or the ones the helper granted. */
static int setup_emulated(struct mca_btl_devmem_dev *d, char *why, size_t len)
{
    unsigned int queues[MCA_BTL_DEVMEM_RX_QUEUES_MAX];
    struct devmem_bind_req req = {d->part->itf->ifindex, queues, 0, &d->pool};
    struct devmem_err e;
    int rc;

    if (0 != (rc = pool_alloc(d, false, why, len)) || 0 != (rc = open_listener(d, why, len))) {
        return rc;
    }
    /* through the helper, its checks and bookkeeping come first; the emulation in this
     * process then carries the data as a NIC would */
    if (dev_state.via_helper) {
        if (0 != (rc = helper_bind_rx(d, d->pool.priv_fd, why, len))) {
            return rc;
        }
    } else {
        d->rx_queue = 1;
        d->rx_nqueues = queues_wanted();
    }
    req.nqueues = d->rx_nqueues;
    for (unsigned int i = 0; i < d->rx_nqueues; i++) {
        queues[i] = d->rx_queue + i;
    }
    rc = dev_state.k->ops->bind_rx(dev_state.k, &req, &d->rx_id, &e);
    if (0 != rc) {
        say(why, len, "emulated bind-rx: %s", e.msg);
        return rc;
    }
    rc = d->rx_nqueues > 1 ? dev_state.k->ops->steer_rss(dev_state.k, d->listener.port,
                                                         req.ifindex, queues, d->rx_nqueues,
                                                         &d->rss_ctx, &e)
                           : dev_state.k->ops->steer(dev_state.k, d->listener.port, d->rx_id, &e);
    if (0 != rc) {
        say(why, len, "emulated steering: %s", e.msg);
        return rc;
    }
    d->steered = true;
    return 0;
}

/* ---------------------------------------------------------------- per module */

static void dev_release(struct mca_btl_devmem_dev *d)
{
    struct devmem_err e;

    if (0 != d->helper_id && !mca_btl_devmem_dev_helper_gone()) { /* it undid them all */
        mca_btl_devmem_helper_release(d->helper_id); /* its steering rule goes first */
    }
    mca_btl_devmem_listener_close(&d->listener);
    if (d->steered) {
        (void) dev_state.k->ops->steer(dev_state.k, d->listener.port, 0, NULL);
        if (0 != d->rss_ctx) {
            (void) dev_state.k->ops->rss_del(dev_state.k, d->rss_ctx, NULL);
        }
    }
    if (d->steer_rule >= 0 && 0 != devmem_nic_flow_del(d->part->itf->name,
                                                       (uint32_t) d->steer_rule, &e)) {
        opal_output(0, "btl:devmem: could not remove steering rule %d on %s: %s",
                    d->steer_rule, d->part->itf->name, e.msg);
    }
    /* the context after the rule that points at it */
    if (!d->steered && 0 != d->rss_ctx && 0 == d->helper_id
        && 0 != devmem_nic_rss_ctx_delete(d->part->itf->name, d->rss_ctx, &e)) {
        opal_output(0, "btl:devmem: could not delete RSS context %u on %s: %s", d->rss_ctx,
                    d->part->itf->name, e.msg);
    }
    if (0 != d->rx_id && DEV_BOUND == d->unbound
        && !(DEVMEM_KERNEL_REAL == dev_state.k->kind && 0 != d->helper_id)) {
        (void) dev_state.k->ops->unbind(dev_state.k, d->rx_id, NULL);
    }
    devmem_region_release(&d->pool);
    free(d);
}

static struct mca_btl_devmem_dev *dev_new(struct mca_btl_devmem_devpath *p)
{
    struct mca_btl_devmem_dev *d = calloc(1, sizeof(*d));
    char where[sizeof(d->listener.where)];

    if (NULL == d) {
        snprintf(p->reason, sizeof(p->reason), "out of memory");
        return NULL;
    }
    d->part = p;
    snprintf(where, sizeof(where), "the device-flow port of %s", p->itf->name);
    mca_btl_devmem_listener_init(&d->listener, where, accepted, d);
    d->steer_rule = -1;
    d->pool.dmabuf_fd = -1;
    d->pool.priv_fd = -1;
    return d;
}

/* Real kernel: whether this interface's NIC can take a devmem binding at all, the kernel's
 * or the helper's verdict, with no pool made (p->reason says why not). Asked of every
 * interface before anything touches the GPU: locality and the pool start the CUDA driver,
 * and a started driver makes every pointer check dearer, Open MPI's for each message
 * included (8 B latency 1.4x on an H200 node). A node whose NICs cannot do devmem never
 * starts it. */
static int nic_verdict(struct mca_btl_devmem_devpath *p)
{
    struct mca_btl_devmem_dev *d;
    unsigned int n_rx;
    int rc;

    if (!dev_state.via_helper) {
        return real_nic_check(p->itf, &n_rx, p->reason, sizeof(p->reason));
    }
    /* the helper looks at the device-flow socket before the NIC */
    if (NULL == (d = dev_new(p))) {
        return -ENOMEM;
    }
    rc = open_listener(d, p->reason, sizeof(p->reason));
    if (0 == rc) {
        rc = helper_probe_nic(d, p->reason, sizeof(p->reason));
    }
    dev_release(d);
    return rc;
}

static int dev_setup(struct mca_btl_devmem_devpath *p)
{
    struct mca_btl_devmem_dev *d = dev_new(p);
    int rc;

    if (NULL == d) {
        return -ENOMEM;
    }
    rc = DEVMEM_KERNEL_REAL == dev_state.k->kind
             ? setup_real(d, p->reason, sizeof(p->reason))
             : setup_emulated(d, p->reason, sizeof(p->reason));
    if (0 != rc) {
        dev_release(d);
        return rc;
    }
    if (DEVMEM_KERNEL_REAL == dev_state.k->kind) {
        struct devmem_nic_rings rings;
        struct devmem_err e;

        /* a token covers at most one RX buffer: the cost per MiB the verbose line states */
        if (0 == devmem_nic_get_rings(p->itf->name, &rings, &e) && rings.has_rx_buf_len) {
            d->rx_buf_len = rings.rx_buf_len;
        }
    }
    p->dev = d;
    p->reason[0] = '\0';
    return 0;
}

void mca_btl_devmem_dev_paths(char *text, size_t size)
{
    size_t used = 0;

    text[0] = '\0';
    for (const struct mca_btl_devmem_devpath *p = dev_state.first; NULL != p && used < size;
         p = p->next) {
        const struct mca_btl_devmem_dev *d = p->dev;
        int w;

        if (NULL != d && !d->lost) {
            w = snprintf(text + used, size - used,
                         "%s on: %s kernel, %zu KiB %s RX pool, binding %u\n", p->itf->name,
                         dev_state.k->ops->name, d->pool.size >> 10, d->pool.provider->name,
                         d->rx_id);
        } else {
            w = snprintf(text + used, size - used, "%s off: %s\n", p->itf->name,
                         p->reason);
        }
        used += w > 0 ? (size_t) w : 0;
    }
}

/* The kernel (real or emulated), the receive batch and the helper's connection: 0, or an
 * errno value with e saying why (the device path is then off on every interface). */
static int open_kernel(enum devmem_kernel_kind kind, struct devmem_err *e)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct devmem_emul_config cfg;
    char hwhy[DEVMEM_ERR_MSG_MAX];
    int rc, h;

    devmem_emul_config_default(&cfg);
    cfg.seed = c->emul_seed > 0 ? (uint64_t) c->emul_seed
                                : 1 + (uint64_t) opal_proc_local_get()->proc_name.vpid;
    cfg.linear_pct = c->emul_linear_pct < 0 ? 0 : c->emul_linear_pct > 100 ? 100
                                                                           : c->emul_linear_pct;
    if (0 != (rc = devmem_kernel_open(&dev_state.k, kind, &cfg, e))) {
        return rc;
    }
    rc = devmem_rx_batch_init(&dev_state.batch, DEV_RX_BATCH, DEV_RX_MAX_FRAGS, e);
    dev_state.batch_ready = 0 == rc;
    dev_state.batch_cap = dev_state.batch.len;
    if (0 != rc) {
        return rc;
    }
    h = mca_btl_devmem_helper_open(kind, hwhy, sizeof(hwhy));
    if (h < 0) {
        return devmem_err_set(e, -h, "devmem-helperd: %s", hwhy);
    }
    dev_state.via_helper = 1 == h;
    DEVMEM_VERBOSE(1 == h ? 1 : 5, "bindings and steering: %s%s",
                   1 == h ? "" : "by this process, not devmem-helperd: ", hwhy);
    return 0;
}

/* What dev_init decides across the interfaces, nearest path class first. */
struct path_choice {
    enum devmem_kernel_kind kind;
    int opened;                 /* open_kernel's answer */
    const struct devmem_err *e; /* its reason when it failed */
    char near[96];              /* the PCI device the paths lead to, "" without locality */
    enum devmem_path best;      /* the class of best_if */
    const char *best_if;        /* the first NIC with a device path */
    int on, far;                /* interfaces on, and left to host TCP as farther */
    char reasons[1024];         /* "  IF: why\n" for each interface off, for require */
    size_t used;
};

static void path_on(struct path_choice *pc, struct mca_btl_devmem_devpath *p, int cls)
{
    char rxbuf[48] = "";

    pc->on++;
    if (NULL == pc->best_if && !p->itf->loopback) {
        pc->best = (enum devmem_path) cls;
        pc->best_if = p->itf->name;
    }
    if (0 != p->dev->rx_buf_len) {
        snprintf(rxbuf, sizeof(rxbuf), ", NIC rx-buf-len %u", (unsigned) p->dev->rx_buf_len);
    }
    DEVMEM_VERBOSE(1, "device path on %s: %s kernel, %zu KiB %s RX pool, binding %u, device "
                   "flows on port %u%s%s%s%s%s", p->itf->name, dev_state.k->ops->name,
                   p->dev->pool.size >> 10, p->dev->pool.provider->name, p->dev->rx_id,
                   (unsigned) p->dev->listener.port, rxbuf, pc->near[0] ? "; path to " : "",
                   pc->near, pc->near[0] ? ": " : "",
                   pc->near[0] ? devmem_path_name((enum devmem_path) cls) : "");
}

/* One interface of path class cls: its device path, host TCP as farther than the best one
 * (loopback is always tried: it serves the peers on this host, which no NIC does), or off
 * with p->reason, noted for require. */
static void path_try(struct path_choice *pc, struct mca_btl_devmem_devpath *p, int cls,
                     bool refused)
{
    int w;

    if (NULL != pc->best_if && cls > (int) pc->best && !p->itf->loopback) {
        snprintf(p->reason, sizeof(p->reason), "%s is nearer to %s (path: %s) than %s "
                 "(path: %s)", pc->best_if, pc->near, devmem_path_name(pc->best), p->itf->name,
                 devmem_path_name((enum devmem_path) cls));
        DEVMEM_VERBOSE(1, "device path off on %s: %s; using host TCP there", p->itf->name,
                       p->reason);
        pc->far++;
        return;
    }
    if (0 != pc->opened) {
        snprintf(p->reason, sizeof(p->reason), "%s", pc->e->msg);
    } else if (!refused && 0 == dev_setup(p)) {
        path_on(pc, p, cls);
        return;
    }
    DEVMEM_VERBOSE(1, "device path off on %s (%s kernel): %s; using host TCP there",
                   p->itf->name, devmem_kernel_kind_name(pc->kind), p->reason);
    w = snprintf(pc->reasons + pc->used, sizeof(pc->reasons) - pc->used, "  %s: %s\n",
                 p->itf->name, p->reason);
    if (w > 0 && (size_t) w < sizeof(pc->reasons) - pc->used) {
        pc->used += (size_t) w;
    }
}

/* Every interface's device path, nearest path class first: once one class has a device
 * path, farther ones keep host TCP (unknown paths are one class: without locality every
 * interface is tried). The NICs' verdicts come before locality, which asks CUDA
 * (nic_verdict); the emulated NIC takes any binding. */
static void choose_paths(struct path_choice *pc, enum devmem_path *paths, bool *refused,
                         const struct mca_btl_devmem_if **itfs)
{
    struct mca_btl_devmem_devpath *p;
    int i, may = 0;

    for (p = dev_state.first, i = 0; NULL != p; p = p->next, i++) {
        itfs[i] = p->itf;
        paths[i] = DEVMEM_PATH_UNKNOWN;
        refused[i] = 0 == pc->opened && DEVMEM_KERNEL_REAL == pc->kind && 0 != nic_verdict(p);
        may += 0 == pc->opened && !refused[i];
    }
    if (may > 0) {
        mca_btl_devmem_gpu_nic_paths(itfs, dev_state.n, paths, pc->near, sizeof(pc->near));
    }
    for (int cls = DEVMEM_PATH_SWITCH; cls <= DEVMEM_PATH_UNKNOWN; cls++) {
        for (p = dev_state.first, i = 0; NULL != p; p = p->next, i++) {
            if (paths[i] == (enum devmem_path) cls) {
                path_try(pc, p, cls, refused[i]);
            }
        }
    }
}

/* Every device path released, the kernel closed; the list of parts stays. */
static void dev_undo(void)
{
    for (struct mca_btl_devmem_devpath *p = dev_state.first; NULL != p; p = p->next) {
        if (NULL != p->dev) {
            dev_release(p->dev);
            p->dev = NULL;
        }
    }
    if (dev_state.batch_ready) {
        devmem_rx_batch_fini(&dev_state.batch);
        dev_state.batch_ready = false;
    }
    mca_btl_devmem_dev_unwatch_helper();
    mca_btl_devmem_helper_close();
    dev_state.via_helper = false;
    if (NULL != dev_state.k) {
        devmem_kernel_close(dev_state.k);
        dev_state.k = NULL;
    }
}

int mca_btl_devmem_dev_init(struct mca_btl_devmem_devpath *first,
                            mca_btl_devmem_dev_accept_fn on_accept)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct path_choice pc = {.best = DEVMEM_PATH_UNKNOWN};
    const struct mca_btl_devmem_if **itfs;
    enum devmem_path *paths;
    struct devmem_err e;
    bool *refused;

    memset(&dev_state, 0, sizeof(dev_state));
    dev_state.on_accept = on_accept;
    dev_state.first = first;
    for (struct mca_btl_devmem_devpath *p = first; NULL != p; p = p->next) {
        p->dev = NULL;
        snprintf(p->reason, sizeof(p->reason), "btl_devmem_mode is off");
        dev_state.n++;
    }
    if (0 != parse_mode(c->mode, &dev_state.mode)) {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_mode", c->mode,
                                       "auto, require or off");
        return OPAL_ERR_BAD_PARAM;
    }
    if (0 != devmem_kernel_kind_parse(c->kernel, &pc.kind, &e)) {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_kernel", c->kernel,
                                       "real or emulated");
        return OPAL_ERR_BAD_PARAM;
    }
    if (MCA_BTL_DEVMEM_MODE_OFF == dev_state.mode) {
        DEVMEM_VERBOSE(1, "device path off (btl_devmem_mode off): host TCP on every interface");
        return OPAL_SUCCESS;
    }
    paths = calloc((size_t) dev_state.n + 1, sizeof(*paths));
    refused = calloc((size_t) dev_state.n + 1, sizeof(*refused)); /* by the NIC's verdict */
    itfs = calloc((size_t) dev_state.n + 1, sizeof(*itfs));
    if (NULL == paths || NULL == refused || NULL == itfs) {
        free(paths);
        free(refused);
        free(itfs);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    pc.opened = open_kernel(pc.kind, &e);
    pc.e = &e;
    dev_state.enabled = true;
    choose_paths(&pc, paths, refused, itfs);
    free(paths);
    free(refused);
    free(itfs);
    /* require: every interface that was a candidate; farther ones were not */
    if (MCA_BTL_DEVMEM_MODE_REQUIRE == dev_state.mode && pc.on + pc.far < dev_state.n) {
        mca_btl_devmem_show_help_local("devmem required", devmem_kernel_kind_name(pc.kind),
                                       pc.reasons);
        dev_undo();
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (0 == pc.on) {
        dev_undo(); /* the parts keep their reasons for mca_btl_devmem_dev_paths */
    } else if (dev_state.via_helper) {
        mca_btl_devmem_dev_watch_helper();
    }
    return OPAL_SUCCESS;
}

void mca_btl_devmem_dev_fini(void)
{
    dev_undo();
    dev_state.first = NULL;
    dev_state.n = 0;
}

struct mca_btl_devmem_devpath *mca_btl_devmem_dev_first(void)
{
    return dev_state.first;
}

int mca_btl_devmem_dev_bind_tx(const struct mca_btl_devmem_if *itf,
                               struct devmem_region *region, uint32_t *id,
                               struct devmem_err *err)
{
    struct devmem_bind_req req = {itf->ifindex, NULL, 0, region};

    if (NULL == dev_state.k) {
        return devmem_err_set(err, ENODEV, "no device path");
    }
    /* the emulated kernel's TX needs no privilege, and host-memory views have no fd to pass */
    if (dev_state.via_helper && DEVMEM_KERNEL_REAL == dev_state.k->kind) {
        return mca_btl_devmem_helper_bind_tx(itf->name, region, id, err);
    }
    return dev_state.k->ops->bind_tx(dev_state.k, &req, id, err);
}

void mca_btl_devmem_dev_unbind_tx(uint32_t id)
{
    struct devmem_err e;

    if (NULL == dev_state.k || 0 == id) {
        return;
    }
    if (dev_state.via_helper && DEVMEM_KERNEL_REAL == dev_state.k->kind) {
        mca_btl_devmem_helper_release(id);
    } else if (0 != dev_state.k->ops->unbind(dev_state.k, id, &e)) {
        /* one undone under the job and never sent from again is no longer known */
        DEVMEM_VERBOSE(ENOENT == e.code ? 5 : 1, "releasing TX binding %u: %s", id, e.msg);
    }
}
