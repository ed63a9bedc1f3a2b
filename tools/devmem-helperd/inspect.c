/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Looking at what a client passed, off the event loop. Any call on a passed descriptor can
 * wait for as long as the client likes: closing or reading the fdinfo of a FUSE file waits
 * for its server, an epoll file's fdinfo for a lock the client's own epoll_wait may hold, a
 * socket's getsockname for the socket lock a client thread can keep. So the checks run in a
 * thread of their own, which the event loop waits for at most HD_INSPECT_MS, and every close
 * of a passed descriptor happens in a thread too. A thread that never returns keeps what it
 * holds; a user whose descriptors hold HD_STUCK_PER_USER of them is refused until they
 * answer, so that no user can use up the helper's threads or descriptors.
 */
#include "config.h"

#include "helperd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "nic.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14 */
#endif

#define HD_INSPECT_MS 2000     /* the event loop waits this long for a look at passed fds */
#define HD_STUCK_PER_USER 8    /* threads one user's descriptors may hold at once */
#define HD_USERS_TRACKED 128

/* ------------------------------------------------------------------ threads per user */

static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uid_t uid;
    int threads; /* 0: a free slot */
} users[HD_USERS_TRACKED];

/* Count a thread for uid; false when uid already holds its share (or the table is full). */
/* uid's slot, or a free one (threads 0) when it has none; -1 when the table is full. */
static int user_slot(uid_t uid)
{
    int free_slot = -1;

    for (int i = 0; i < HD_USERS_TRACKED; i++) {
        if (users[i].threads > 0 && users[i].uid == uid) {
            return i;
        }
        if (0 == users[i].threads && -1 == free_slot) {
            free_slot = i;
        }
    }
    return free_slot;
}

static bool user_thread_begin(uid_t uid)
{
    bool ok;
    int i;

    pthread_mutex_lock(&users_lock);
    i = user_slot(uid);
    ok = i >= 0 && users[i].threads < HD_STUCK_PER_USER;
    if (ok) {
        users[i].uid = uid;
        users[i].threads++;
    }
    pthread_mutex_unlock(&users_lock);
    return ok;
}

static void user_thread_end(uid_t uid)
{
    int i;

    pthread_mutex_lock(&users_lock);
    if ((i = user_slot(uid)) >= 0 && users[i].threads > 0) {
        users[i].threads--;
    }
    pthread_mutex_unlock(&users_lock);
}

bool hd_uid_blocked(uid_t uid)
{
    bool blocked;
    int i;

    pthread_mutex_lock(&users_lock);
    i = user_slot(uid);
    blocked = i >= 0 && users[i].threads >= HD_STUCK_PER_USER;
    pthread_mutex_unlock(&users_lock);
    return blocked;
}

static bool start_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    int rc;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return 0 == rc;
}

/* ------------------------------------------------------------------ closing */

struct closing {
    uid_t uid;
    int fd;
};

static void *close_main(void *arg)
{
    struct closing *job = arg;

    close(job->fd);
    user_thread_end(job->uid);
    free(job);
    return NULL;
}

void hd_close_passed(uid_t uid, int fd)
{
    struct closing *job;

    if (fd < 0) {
        return;
    }
    if (!user_thread_begin(uid)) {
        /* this user's descriptors already hold their share of threads: keep this one open
         * rather than risk the event loop on it (the user is refused from now on) */
        hd_log(LOG_WARNING, "uid %u: a passed descriptor is left open: earlier ones of this "
               "user still hold %d helper threads", (unsigned) uid, HD_STUCK_PER_USER);
        return;
    }
    if (NULL == (job = malloc(sizeof(*job)))) {
        user_thread_end(uid);
        return;
    }
    job->uid = uid;
    job->fd = fd;
    if (!start_detached(close_main, job)) {
        user_thread_end(uid);
        free(job);
        hd_log(LOG_ERR, "uid %u: no thread to close a passed descriptor: it stays open",
               (unsigned) uid);
    }
}

/* ------------------------------------------------------------------ inspecting */

int hd_local_port_range(unsigned int *lo, unsigned int *hi)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    int ok = NULL != f && 2 == fscanf(f, "%u %u", lo, hi);

    if (NULL != f) {
        fclose(f);
    }
    return ok ? 0 : -EIO;
}

/* Whether addr (family, 4 or 16 bytes) is configured on ifname in the helper's namespace. */
static bool address_on(const char *ifname, int family, const void *addr)
{
    struct ifaddrs *all = NULL;
    bool found = false;
    size_t n = AF_INET == family ? 4 : 16;

    if (0 != getifaddrs(&all)) {
        return false;
    }
    for (struct ifaddrs *a = all; NULL != a && !found; a = a->ifa_next) {
        const void *mine;

        size_t len = strlen(ifname);

        /* IPv4 addresses come by their label: "eth0", or "eth0:1" for an alias */
        if (NULL == a->ifa_addr || a->ifa_addr->sa_family != family
            || 0 != strncmp(a->ifa_name, ifname, len)
            || ('\0' != a->ifa_name[len] && ':' != a->ifa_name[len])) {
            continue;
        }
        mine = AF_INET == family ? (const void *) &((struct sockaddr_in *) a->ifa_addr)->sin_addr
                                 : (const void *) &((struct sockaddr_in6 *) a->ifa_addr)->sin6_addr;
        found = 0 == memcmp(mine, addr, n);
    }
    freeifaddrs(all);
    return found;
}

/*
 * The device-flow socket: a listening TCP socket of the helper's network namespace, bound to
 * one of ifname's addresses. Its address and port are the only ones the client may steer
 * (the protocol has no field to name others), and the rule names both: a wildcard socket
 * would steer that port for every address of the NIC, other users' services included, and a
 * socket of another namespace proves nothing about the ports of this one.
 */
static int check_listen_socket(uint64_t netns_cookie, int fd, const char *ifname,
                               struct devmem_nic_flow *flow, struct devmem_err *err)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    uint64_t cookie = 0;
    int v = 0;
    socklen_t vl = sizeof(v);
    char text[INET6_ADDRSTRLEN] = "?";
    const void *addr;

    memset(flow, 0, sizeof(*flow));
    if (0 != getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl)) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is %s", ENOTSOCK == errno
                              ? "not a socket" : strerror(errno));
    }
    if (IPPROTO_TCP != v) {
        return devmem_err_set(err, ENOTSOCK, "the second descriptor must be the rank's "
                              "listening TCP socket; it is another kind of socket");
    }
    vl = sizeof(cookie);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &vl)
        || cookie != netns_cookie) {
        return devmem_err_set(err, EXDEV, "the passed socket belongs to another network "
                              "namespace than the helper's");
    }
    vl = sizeof(v);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) || 1 != v) {
        return devmem_err_set(err, EINVAL, "the socket passed for steering is not listening, "
                              "so its port is not the client's to steer");
    }
    if (0 != getsockname(fd, (struct sockaddr *) &ss, &len)) {
        return devmem_err_set(err, errno, "getsockname on the passed socket: %s",
                              strerror(errno));
    }
    if (AF_INET == ss.ss_family) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *) &ss;
        flow->family = AF_INET;
        flow->dst.v4 = sin->sin_addr;
        flow->dst_port = ntohs(sin->sin_port);
        addr = &flow->dst.v4;
    } else if (AF_INET6 == ss.ss_family) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &ss;
        flow->family = AF_INET6;
        flow->dst.v6 = sin6->sin6_addr;
        flow->dst_port = ntohs(sin6->sin6_port);
        addr = &flow->dst.v6;
        if (IN6_IS_ADDR_V4MAPPED(&flow->dst.v6)) {
            return devmem_err_set(err, EAFNOSUPPORT, "the passed socket listens on a "
                                  "v4-mapped address: bind an IPv4 socket instead");
        }
    } else {
        return devmem_err_set(err, EAFNOSUPPORT, "the passed socket is neither IPv4 nor IPv6");
    }
    inet_ntop(flow->family, addr, text, sizeof(text));
    if (0 == flow->dst_port) {
        return devmem_err_set(err, EINVAL, "the passed socket has no port");
    }
    {
        unsigned int lo, hi;
        /* A port the kernel chose (bind to port 0, or listen without bind) comes from the
         * ephemeral range, and shutdown() gives it back while the socket lives on: the client
         * could pass it to another process under the rule. A port bound explicitly stays
         * with the socket, which the helper holds. Only the explicit kind lies outside. */
        if (0 != hd_local_port_range(&lo, &hi)) {
            return devmem_err_set(err, EIO, "cannot read ip_local_port_range");
        }
        if (flow->dst_port >= lo && flow->dst_port <= hi) {
            return devmem_err_set(err, EINVAL, "the passed socket's port %u lies in the kernel's "
                                  "ephemeral range %u-%u, where a port the kernel chose would go "
                                  "back on shutdown(): bind one outside it explicitly",
                                  (unsigned) flow->dst_port, lo, hi);
        }
    }
    vl = sizeof(v);
    if (0 != getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &vl) || 0 != v) {
        /* with SO_REUSEADDR, another such socket may take the port while this one is not
         * listening (between a shutdown() and a listen()) */
        return devmem_err_set(err, EINVAL, "the passed socket has SO_REUSEADDR set: another "
                              "socket could share its port while it is not listening");
    }
    if (AF_INET == flow->family ? INADDR_ANY == flow->dst.v4.s_addr
                                : IN6_IS_ADDR_UNSPECIFIED(&flow->dst.v6)) {
        return devmem_err_set(err, EINVAL, "the passed socket listens on the wildcard address: "
                              "a rule for port %u alone would steer every address of %s; bind "
                              "it to one of %s's addresses", (unsigned) flow->dst_port, ifname,
                              ifname);
    }
    if (!address_on(ifname, flow->family, addr)) {
        return devmem_err_set(err, EADDRNOTAVAIL, "the passed socket listens on %s, which is "
                              "not an address of %s", text, ifname);
    }
    return 0;
}


struct inspection {
    /* in: duplicates of the client's descriptors, closed by the thread */
    int dmabuf_fd, sock_fd;
    uid_t uid;
    const struct hd_backend_ops *be;
    uint64_t netns_cookie;
    char ifname[DEVMEM_HELPER_IFNAME];
    /* out */
    struct hd_passed res;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    bool done, abandoned;
};

static void *inspect_main(void *arg)
{
    struct inspection *job = arg;
    bool abandoned;

    job->res.dmabuf_rc = job->be->check_dmabuf(job->dmabuf_fd, &job->res.bytes,
                                               &job->res.dmabuf_err);
    if (job->sock_fd >= 0) {
        job->res.sock_rc = check_listen_socket(job->netns_cookie, job->sock_fd, job->ifname,
                                               &job->res.flow, &job->res.sock_err);
        close(job->sock_fd);
    }
    close(job->dmabuf_fd);
    user_thread_end(job->uid);
    pthread_mutex_lock(&job->lock);
    job->done = true;
    abandoned = job->abandoned;
    pthread_cond_signal(&job->cv);
    pthread_mutex_unlock(&job->lock);
    if (abandoned) { /* nobody waits for the answer any more: the job is ours to free */
        pthread_mutex_destroy(&job->lock);
        pthread_cond_destroy(&job->cv);
        free(job);
    }
    return NULL;
}

int hd_inspect(struct helperd *hd, uid_t uid, int dmabuf_fd, int sock_fd, const char *ifname,
               struct hd_passed *out, struct devmem_err *err)
{
    struct inspection *job;
    struct timespec deadline;
    bool done;

    memset(out, 0, sizeof(*out));
    if (NULL == (job = calloc(1, sizeof(*job)))) {
        return devmem_err_set(err, ENOMEM, "helper: out of memory");
    }
    job->uid = uid;
    job->be = hd->be;
    job->netns_cookie = hd->netns_cookie;
    snprintf(job->ifname, sizeof(job->ifname), "%s", ifname);
    /* duplicates: the thread closes its own, whenever it can */
    job->dmabuf_fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0);
    job->sock_fd = sock_fd >= 0 ? fcntl(sock_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (job->dmabuf_fd < 0 || (sock_fd >= 0 && job->sock_fd < 0)) {
        int rc = devmem_err_set(err, errno, "helper: dup of a passed descriptor: %s",
                                strerror(errno));
        if (job->dmabuf_fd >= 0) {
            close(job->dmabuf_fd); /* a dup of a checked-nothing fd: closed off the loop */
        }
        free(job);
        return rc;
    }
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->cv, NULL);
    if (!user_thread_begin(uid)) {
        hd_close_passed(uid, job->dmabuf_fd);
        hd_close_passed(uid, job->sock_fd);
        pthread_mutex_destroy(&job->lock);
        pthread_cond_destroy(&job->cv);
        free(job);
        return devmem_err_set(err, EAGAIN, "descriptors this user passed before still hold %d "
                              "helper threads (a file system or socket that does not answer): "
                              "refused until they do", HD_STUCK_PER_USER);
    }
    if (!start_detached(inspect_main, job)) {
        user_thread_end(uid);
        hd_close_passed(uid, job->dmabuf_fd);
        hd_close_passed(uid, job->sock_fd);
        pthread_mutex_destroy(&job->lock);
        pthread_cond_destroy(&job->cv);
        free(job);
        return devmem_err_set(err, EAGAIN, "helper: no thread to look at the descriptors");
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += HD_INSPECT_MS / 1000;
    deadline.tv_nsec += (HD_INSPECT_MS % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&job->lock);
    while (!job->done && ETIMEDOUT != pthread_cond_timedwait(&job->cv, &job->lock, &deadline)) {
    }
    done = job->done;
    if (done) {
        *out = job->res;
    } else {
        job->abandoned = true;
    }
    pthread_mutex_unlock(&job->lock);
    if (!done) {
        hd_log(LOG_WARNING, "uid %u: passed descriptors did not answer within %d ms: a thread "
               "is left waiting on them", (unsigned) uid, HD_INSPECT_MS);
        return devmem_err_set(err, ETIMEDOUT, "the passed descriptors did not answer within %d "
                              "ms (a file system or socket that does not answer)",
                              HD_INSPECT_MS);
    }
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->cv);
    free(job);
    return 0;
}
