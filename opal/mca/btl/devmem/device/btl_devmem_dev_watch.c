/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The binding watch (btl_devmem_dev.h): a device path whose RX binding goes under a running
 * job (its netlink socket closed with devmem-helperd, the device went away) is noticed, said
 * once and turned off, and what arrives goes on being delivered. Also the watch on the
 * helper's connection, and btl_devmem_testing unbind_after.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "sockets/btl_devmem_helper.h"
#include "device/btl_devmem_dev.h"

/* devmem-helperd's connection, watched while the device path goes through it */
static struct {
    bool gone; /* it closed under the job */
    bool watched;
    mca_btl_devmem_polled_t watch;
} helper;

bool mca_btl_devmem_dev_helper_gone(void)
{
    return helper.gone;
}

int mca_btl_devmem_dev_suspects;

void mca_btl_devmem_dev_suspect(struct mca_btl_devmem_dev *dev)
{
    int no = 0;

    if (NULL != dev && !__atomic_load_n(&dev->lost, __ATOMIC_RELAXED)
        && __atomic_compare_exchange_n(&dev->suspect, &no, 1, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED)) {
        (void) __atomic_fetch_add(&mca_btl_devmem_dev_suspects, 1, __ATOMIC_RELEASE);
    }
}

/* A binding found gone: the module's device path is off from now on. */
static void binding_lost(struct mca_btl_devmem_devpath *p, const char *cause)
{
    struct mca_btl_devmem_dev *d = p->dev;

    __atomic_store_n(&d->lost, true, __ATOMIC_RELEASE);
    snprintf(p->reason, sizeof(p->reason), "RX binding %u is gone (%s)", d->rx_id, cause);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.bindings_lost, 1);
    DEVMEM_VERBOSE(1, "device path off on %s: %s; what arrives is delivered from host memory, "
                   "and no new device-flow lane comes to %s", p->itf->name, p->reason,
                   p->itf->name);
}

int mca_btl_devmem_dev_watch(char *why, size_t len)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    uint64_t now = mca_btl_devmem_now_ns();
    int gone = 0;

    for (struct mca_btl_devmem_devpath *p = mca_btl_devmem_dev_first(); NULL != p; p = p->next) {
        struct mca_btl_devmem_dev *d = p->dev;
        struct devmem_err e;
        int rc;

        if (NULL == d || !__atomic_load_n(&d->suspect, __ATOMIC_ACQUIRE)
            || now - d->asked_ns < 100000000u) {
            continue; /* plain receives keep it a suspect until it is asked again */
        }
        d->asked_ns = now;
        rc = DEV_BOUND != d->unbound
                 ? 0
                 : k->ops->bound(k, p->itf->ifindex, d->rx_id, &e);
        if (0 == rc && !d->lost) {
            binding_lost(p, DEV_UNBOUND_TESTING == d->unbound
                                ? "undone by btl_devmem_testing unbind_after, as when the "
                                  "netlink socket that made it closes"
                            : helper.gone
                                ? "devmem-helperd, which made it, closed its connection: it was "
                                  "stopped or restarted"
                            : mca_btl_devmem_dev_via_helper()
                                ? "the kernel no longer lists it on any RX queue: devmem-helperd, "
                                  "which made it, was stopped or restarted, or the device went "
                                  "away"
                                : "the kernel no longer lists it on any RX queue: the device "
                                  "went away");
            if (0 == gone++) {
                snprintf(why, len, "%s: %s", p->itf->name, p->reason);
            }
        } else if (rc < 0) {
            DEVMEM_VERBOSE(5, "device path on %s: cannot ask after RX binding %u: %s",
                           p->itf->name, d->rx_id, e.msg);
        }
        __atomic_store_n(&d->suspect, 0, __ATOMIC_RELAXED);
        (void) __atomic_fetch_sub(&mca_btl_devmem_dev_suspects, 1, __ATOMIC_RELAXED);
    }
    return gone;
}

/* devmem-helperd's connection turned readable. The helper never speaks unasked, so unless an
 * answer is on its way to a request, this is its end (stopped, restarted, killed): the kernel
 * has undone every binding it made for this rank, as the netlink sockets that made them
 * closed. The emulated kernel does the same here; the watch then finds each one gone. */
static void helper_closed(int fd, short flags, void *arg)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n > 0 || (n < 0 && (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno))) {
        return;
    }
    (void) mca_btl_devmem_pollset_set(&helper.watch, 0);
    helper.watched = false;
    helper.gone = true;
    DEVMEM_VERBOSE(1, "devmem-helperd closed its connection (%s): the bindings it made for "
                   "this rank are gone", 0 == n ? "it was stopped or restarted" : strerror(errno));
    /* the connection itself stays until finalize: another thread may be in a request on it,
     * which now fails like any request to a helper that is gone */
    for (const struct mca_btl_devmem_devpath *p = mca_btl_devmem_dev_first();
         NULL != p; p = p->next) {
        struct mca_btl_devmem_dev *d = p->dev;

        if (NULL == d) {
            continue;
        }
        if (DEVMEM_KERNEL_EMULATED == k->kind && DEV_BOUND == d->unbound
            && 0 == k->ops->unbind(k, d->rx_id, NULL)) {
            d->unbound = DEV_UNBOUND_HELPER;
        }
        mca_btl_devmem_dev_suspect(d);
    }
}

void mca_btl_devmem_dev_watch_helper(void)
{
    struct devmem_helper_client *h = mca_btl_devmem_helper();
    int fd = NULL != h ? devmem_helper_client_fd(h) : -1;

    if (fd < 0) {
        return;
    }
    mca_btl_devmem_pollset_init(&helper.watch, fd, helper_closed, NULL);
    helper.watched = true;
    if (0 != mca_btl_devmem_pollset_add(&helper.watch, OPAL_EV_READ)) {
        DEVMEM_VERBOSE(5, "devmem-helperd's connection cannot be watched: a helper restart "
                       "shows only when plain data arrives");
    }
}

/* Whether a flow into one of this rank's emulated bindings has bytes queued: an unbind now
 * leaves them to be read as devmem of the lost binding, as on a busy NIC. */
static bool emulated_bytes_queued(struct devmem_kernel *k)
{
    size_t queued = 0;

    for (const struct mca_btl_devmem_devpath *p = mca_btl_devmem_dev_first();
         NULL != p && 0 == queued; p = p->next) {
        const struct mca_btl_devmem_dev *d = p->dev;

        if (NULL != d && DEV_BOUND == d->unbound && 0 == d->helper_id) { /* those undone below */
            queued = k->emulated->queued(k, d->rx_id);
        }
    }
    return queued > 0;
}

void mca_btl_devmem_dev_testing_unbind(uint64_t landed)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    static bool done;

    if (done || landed < (uint64_t) c->unbind_after || NULL == k) {
        return;
    }
    /* on the emulated kernel, at a moment a flow has bytes queued (up to twice N landed) */
    if (NULL != k->emul && landed < 2 * (uint64_t) c->unbind_after
        && !emulated_bytes_queued(k)) {
        return;
    }
    done = true;
    for (const struct mca_btl_devmem_devpath *p = mca_btl_devmem_dev_first();
         NULL != p; p = p->next) {
        struct mca_btl_devmem_dev *d = p->dev;
        struct devmem_err e;

        if (NULL == d || DEV_BOUND != d->unbound || 0 != d->helper_id) {
            continue;
        }
        if (0 == k->ops->unbind(k, d->rx_id, &e)) {
            d->unbound = DEV_UNBOUND_TESTING;
            opal_output(0, "btl:devmem: testing: RX binding %u on %s undone after %llu bytes "
                        "(btl_devmem_testing unbind_after)", d->rx_id, p->itf->name,
                        (unsigned long long) landed);
        } else {
            opal_output(0, "btl:devmem: testing: cannot undo RX binding %u on %s: %s",
                        d->rx_id, p->itf->name, e.msg);
        }
    }
    if (NULL != k->emul) { /* the TX bindings went with the same netlink socket */
        size_t n = k->emulated->unbind_tx_all(k);

        if (n > 0) {
            opal_output(0, "btl:devmem: testing: %zu TX binding(s) undone too", n);
        }
    }
}

void mca_btl_devmem_dev_unwatch_helper(void)
{
    if (helper.watched) {
        (void) mca_btl_devmem_pollset_set(&helper.watch, 0);
        helper.watched = false;
    }
    helper.gone = false;
}
