/* Our sockets' readiness in one epoll set: see btl_devmem_watch.h. */
#include "btl_devmem_watch.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define WATCH_BATCH 32

static int set_fd = -1;
static opal_event_t set_event; /* the set in libevent, for Open MPI's periodic tick */
static atomic_flag polling = ATOMIC_FLAG_INIT;

/* The batch being dispatched: a watch that leaves the set is struck out of it, so that a
 * callback may close another connection (and free its watch) that is also ready. */
static struct epoll_event batch[WATCH_BATCH];
static int batch_len, batch_next;

static void set_cb(int fd, short flags, void *arg)
{
    (void) mca_btl_devmem_watch_poll();
}

int mca_btl_devmem_watch_open(void)
{
    set_fd = epoll_create1(EPOLL_CLOEXEC);
    if (set_fd < 0) {
        return -errno;
    }
    opal_event_set(opal_sync_event_base, &set_event, set_fd, OPAL_EV_READ | OPAL_EV_PERSIST,
                   set_cb, NULL);
    opal_event_add(&set_event, 0);
    return 0;
}

void mca_btl_devmem_watch_close(void)
{
    if (set_fd >= 0) {
        opal_event_del(&set_event);
        close(set_fd);
        set_fd = -1;
    }
}

void mca_btl_devmem_watch_init(mca_btl_devmem_watch_t *w, int fd, mca_btl_devmem_watch_cb_t cb,
                               void *arg)
{
    w->fd = fd;
    w->want = 0;
    w->cb = cb;
    w->arg = arg;
}

int mca_btl_devmem_watch_set(mca_btl_devmem_watch_t *w, short want)
{
    struct epoll_event ev = {0};
    int op;

    if (want == w->want) {
        return 0;
    }
    if (0 == want) {
        op = EPOLL_CTL_DEL;
        for (int i = batch_next; i < batch_len; i++) {
            if (batch[i].data.ptr == w) {
                batch[i].data.ptr = NULL;
            }
        }
    } else {
        op = 0 == w->want ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        ev.events = ((want & OPAL_EV_READ) ? EPOLLIN : 0) | ((want & OPAL_EV_WRITE) ? EPOLLOUT : 0);
        ev.data.ptr = w;
    }
    if (set_fd < 0 || 0 != epoll_ctl(set_fd, op, w->fd, &ev)) {
        int err = set_fd < 0 ? EBADF : errno;
        if (EPOLL_CTL_DEL == op) {
            w->want = 0; /* gone from the set either way (a closed fd leaves by itself) */
        }
        return -err;
    }
    w->want = want;
    return 0;
}

/* epoll_wait with a timeout in microseconds (0: do not wait) */
static int wait_ready(int timeout_us)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
    static bool no_pwait2; /* kernel < 5.11 (or valgrind < 3.20, which lacks it) */

    if (timeout_us > 0 && !no_pwait2) {
        struct timespec ts = {timeout_us / 1000000, (long) (timeout_us % 1000000) * 1000};
        int n = epoll_pwait2(set_fd, batch, WATCH_BATCH, &ts, NULL);

        if (n >= 0 || ENOSYS != errno) {
            return n;
        }
        no_pwait2 = true;
    }
#endif
    /* whole milliseconds, rounded up */
    return epoll_wait(set_fd, batch, WATCH_BATCH, (timeout_us + 999) / 1000);
}

static int dispatch(int timeout_us)
{
    int ran = 0, n;

    if (set_fd < 0 || atomic_flag_test_and_set_explicit(&polling, memory_order_acquire)) {
        return 0;
    }
    n = wait_ready(timeout_us);
    batch_len = n > 0 ? n : 0;
    for (batch_next = 0; batch_next < batch_len;) {
        struct epoll_event *ev = &batch[batch_next++];
        mca_btl_devmem_watch_t *w = ev->data.ptr;
        short flags = 0;

        if (NULL == w) {
            continue; /* left the set while this batch ran */
        }
        /* like libevent: an error or hangup wakes both directions, as far as wanted */
        if (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
            flags |= OPAL_EV_READ;
        }
        if (ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
            flags |= OPAL_EV_WRITE;
        }
        flags &= w->want;
        if (0 != flags) {
            w->cb(w->fd, flags, w->arg);
            ran++;
        }
    }
    batch_len = batch_next = 0;
    atomic_flag_clear_explicit(&polling, memory_order_release);
    return ran;
}

int mca_btl_devmem_watch_poll(void)
{
    return dispatch(0);
}

int mca_btl_devmem_watch_wait(int timeout_us)
{
    return dispatch(timeout_us);
}
