/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper protocol's client end (see helper_client.h).
 */
#include "helper_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct devmem_helper_client {
    pthread_mutex_t lock; /* one request at a time: ranks may call from several threads */
    int fd;
    int timeout_ms;
    uint32_t seq;
    unsigned int version; /* agreed at hello */
    char path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
    /* bytes read past the answer being waited for (the helper sends nothing unasked, so
     * this stays empty unless it misbehaves) */
    unsigned char in[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    size_t have;
};

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for events until deadline: 0, or -ETIMEDOUT / -errno. */
static int wait_fd(int fd, short events, long deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        long left = deadline - now_ms();
        int n;

        if (left <= 0) {
            return -ETIMEDOUT;
        }
        n = poll(&p, 1, (int) left);
        if (n > 0) {
            return 0;
        }
        if (n < 0 && EINTR != errno) {
            return -errno;
        }
    }
}

ssize_t devmem_helper_sendmsg(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
                              int flags)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * DEVMEM_HELPER_SEND_FDS_MAX)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *) buf, len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

    if (nfds > DEVMEM_HELPER_SEND_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    if (nfds > 0) {
        struct cmsghdr *cm;

        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    return sendmsg(fd, &msg, MSG_NOSIGNAL | flags);
}

static int send_msg(struct devmem_helper_client *c, const void *buf, size_t len, const int *fds,
                    size_t nfds, long deadline, struct devmem_err *err)
{
    size_t done = 0;

    if (nfds > DEVMEM_HELPER_FDS_MAX) {
        return devmem_err_set(err, EINVAL, "helper: %zu descriptors in one message", nfds);
    }
    while (done < len) {
        /* the descriptors ride with the first bytes */
        ssize_t n = devmem_helper_sendmsg(c->fd, (const char *) buf + done, len - done, fds,
                                          0 == done ? nfds : 0, MSG_DONTWAIT);

        if (n > 0) {
            done += (size_t) n;
            continue;
        }
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
            int rc = wait_fd(c->fd, POLLOUT, deadline);
            if (0 != rc) {
                return devmem_err_set(err, -rc, "helper at %s: sending: %s", c->path,
                                      strerror(-rc));
            }
            continue;
        }
        return devmem_err_set(err, errno, "helper at %s: sending: %s", c->path,
                              strerror(errno));
    }
    return 0;
}

/* Read until one whole message is in c->in, parse it, drop it from the buffer. */
static int recv_msg(struct devmem_helper_client *c, struct devmem_helper_msg *m, long deadline,
                    struct devmem_err *err)
{
    for (;;) {
        struct devmem_err perr;
        ssize_t used = devmem_helper_parse(c->in, c->have, 0, m, &perr), n;

        if (used < 0) {
            return devmem_err_set(err, EPROTO, "helper at %s sent a bad message: %s", c->path,
                                  perr.msg);
        }
        if (used > 0) {
            memmove(c->in, c->in + used, c->have - (size_t) used);
            c->have -= (size_t) used;
            return 0;
        }
        n = recv(c->fd, c->in + c->have, sizeof(c->in) - c->have, MSG_DONTWAIT);
        if (n > 0) {
            c->have += (size_t) n;
            continue;
        }
        if (0 == n) {
            return devmem_err_set(err, ECONNRESET, "helper at %s closed the connection",
                                  c->path);
        }
        if (EINTR == errno) {
            continue;
        }
        if (EAGAIN == errno || EWOULDBLOCK == errno) {
            int rc = wait_fd(c->fd, POLLIN, deadline);
            if (-ETIMEDOUT == rc) {
                return devmem_err_set(err, ETIMEDOUT, "helper at %s did not answer in %d ms",
                                      c->path, c->timeout_ms);
            }
            if (0 != rc) {
                return devmem_err_set(err, -rc, "helper at %s: waiting: %s", c->path,
                                      strerror(-rc));
            }
            continue;
        }
        return devmem_err_set(err, errno, "helper at %s: receiving: %s", c->path,
                              strerror(errno));
    }
}

/* Tell the helper to drop a binding we no longer wait for; its answer is skipped later. */
static void release_late(struct devmem_helper_client *c, uint32_t id, long deadline)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + sizeof(struct devmem_helper_release)];
    struct devmem_helper_release req = {id, 0};
    ssize_t len = devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_RELEASE, ++c->seq, &req,
                                      sizeof(req));

    if (len > 0) {
        (void) send_msg(c, buf, (size_t) len, NULL, 0, deadline, NULL);
    }
}

static int call_locked(struct devmem_helper_client *c, uint16_t type, const void *body,
                       size_t body_len, const int *fds, size_t nfds,
                       struct devmem_helper_msg *answer, struct devmem_err *err)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    long deadline = now_ms() + c->timeout_ms;
    uint32_t seq = ++c->seq;
    ssize_t len = devmem_helper_build(buf, sizeof(buf), type, seq, body, body_len);
    int rc;

    if (len < 0) {
        return devmem_err_set(err, EINVAL, "helper: cannot build a type %u message", type);
    }
    rc = send_msg(c, buf, (size_t) len, fds, nfds, deadline, err);
    for (;;) {
        if (0 != rc) {
            /* a helper that turns a connection away (full, policy) says why and closes: the
             * reason may be waiting even though sending failed */
            struct devmem_err ignored;
            if (0 != recv_msg(c, answer, now_ms() + 100, &ignored)
                || DEVMEM_HELPER_ERROR != answer->type) {
                return rc;
            }
        } else if (0 != (rc = recv_msg(c, answer, deadline, err))) {
            return rc;
        }
        /* seq 0: the helper refused the connection before it read a request */
        if (answer->seq == seq || (0 == answer->seq && DEVMEM_HELPER_ERROR == answer->type)) {
            break;
        }
        if (answer->seq > seq || 0 != rc) {
            return devmem_err_set(err, EPROTO, "helper at %s answered request %u, not %u",
                                  c->path, answer->seq, seq);
        }
        /* the late answer to a call that timed out: a binding granted after we gave up
         * goes back, so that it neither leaks nor counts against our limits */
        if (DEVMEM_HELPER_REPLY == answer->type && 0 != answer->body.reply.binding_id) {
            release_late(c, answer->body.reply.binding_id, deadline);
        }
    }
    if (DEVMEM_HELPER_ERROR == answer->type) {
        return devmem_err_set(err, answer->body.error.code, "%s", answer->body.error.msg);
    }
    if (DEVMEM_HELPER_STATUS == type ? DEVMEM_HELPER_STATUS_TEXT != answer->type
                                     : DEVMEM_HELPER_REPLY != answer->type) {
        return devmem_err_set(err, EPROTO, "helper at %s answered with type %u", c->path,
                              answer->type);
    }
    return 0;
}

/* Send one message with fds, wait for the answer with the same seq. *answer is REPLY, ERROR
 * or STATUS_TEXT; an ERROR is returned as -code with err set from it. */
static int devmem_helper_call(struct devmem_helper_client *c, uint16_t type, const void *body,
                              size_t body_len, const int *fds, size_t nfds,
                              struct devmem_helper_msg *answer, struct devmem_err *err)
{
    int rc;

    pthread_mutex_lock(&c->lock);
    rc = call_locked(c, type, body, body_len, fds, nfds, answer, err);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int devmem_helper_connect(struct devmem_helper_client **out, const char *path, int timeout_ms,
                          struct devmem_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct devmem_helper_hello hello = {DEVMEM_HELPER_VERSION_MIN, DEVMEM_HELPER_VERSION, 0};
    struct devmem_helper_client *c;
    struct devmem_helper_msg answer;
    int rc;

    *out = NULL;
    if (NULL == path) {
        path = DEVMEM_HELPER_SOCKET_DEFAULT;
    }
    if (strlen(path) >= sizeof(sa.sun_path)) {
        return devmem_err_set(err, ENAMETOOLONG, "helper socket path too long: %s", path);
    }
    if (NULL == (c = calloc(1, sizeof(*c)))) {
        return devmem_err_set(err, ENOMEM, "helper: out of memory");
    }
    strcpy(sa.sun_path, path);
    strcpy(c->path, path);
    pthread_mutex_init(&c->lock, NULL);
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        rc = devmem_err_set(err, errno, "helper: socket: %s", strerror(errno));
        free(c);
        return rc;
    }
    if (0 != connect(c->fd, (struct sockaddr *) &sa, sizeof(sa))) {
        rc = devmem_err_set(err, errno, "no helper answers at %s: %s", path, strerror(errno));
        devmem_helper_close(c);
        return rc;
    }
    rc = devmem_helper_call(c, DEVMEM_HELPER_HELLO, &hello, sizeof(hello), NULL, 0, &answer,
                            err);
    if (0 == rc && (answer.body.reply.version < DEVMEM_HELPER_VERSION_MIN
                    || answer.body.reply.version > DEVMEM_HELPER_VERSION)) {
        rc = devmem_err_set(err, EPROTO, "helper at %s agreed on version %u, this side speaks "
                            "%d-%d", path, answer.body.reply.version, DEVMEM_HELPER_VERSION_MIN,
                            DEVMEM_HELPER_VERSION);
    }
    if (0 == rc) {
        c->version = answer.body.reply.version;
    }
    if (0 != rc) {
        devmem_helper_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

void devmem_helper_close(struct devmem_helper_client *c)
{
    if (NULL != c) {
        if (c->fd >= 0) {
            close(c->fd);
        }
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
}

int devmem_helper_client_fd(const struct devmem_helper_client *c)
{
    return c->fd;
}

unsigned int devmem_helper_version(const struct devmem_helper_client *c)
{
    return c->version;
}

static int put_ifname(char *dst, const char *ifname, struct devmem_err *err)
{
    if (NULL == ifname || strlen(ifname) >= DEVMEM_HELPER_IFNAME) {
        return devmem_err_set(err, EINVAL, "helper: bad interface name");
    }
    memset(dst, 0, DEVMEM_HELPER_IFNAME);
    strcpy(dst, ifname);
    return 0;
}

int devmem_helper_bind_rx(struct devmem_helper_client *c, const char *ifname,
                          const struct devmem_helper_rx_ask *ask, int dmabuf_fd, int listen_fd,
                          struct devmem_helper_reply *reply, struct devmem_err *err)
{
    struct devmem_helper_bind_rx req = {.nqueues = ask->nqueues};
    struct devmem_helper_msg answer;
    int fds[2] = {dmabuf_fd, listen_fd};
    int rc = put_ifname(req.ifname, ifname, err);

    if (c->version >= 2) { /* a version 1 helper takes these fields for reserved ones */
        req.sharers = (uint16_t) (ask->sharers > DEVMEM_HELPER_SHARERS_MAX
                                      ? DEVMEM_HELPER_SHARERS_MAX : ask->sharers);
        req.flags = ask->fewer ? DEVMEM_HELPER_RX_FEWER : 0;
    }
    if (0 == rc) {
        rc = devmem_helper_call(c, DEVMEM_HELPER_BIND_RX, &req, sizeof(req), fds, 2, &answer,
                                err);
    }
    if (0 == rc && (0 == answer.body.reply.nqueues || answer.body.reply.nqueues > ask->nqueues
                    || (!ask->fewer && answer.body.reply.nqueues != ask->nqueues))) {
        /* its binding goes with this connection; the caller ends it on failure */
        rc = devmem_err_set(err, EPROTO, "helper granted %u RX queues for %u asked",
                            answer.body.reply.nqueues, ask->nqueues);
    }
    if (0 == rc) {
        *reply = answer.body.reply;
    }
    return rc;
}

int devmem_helper_bind_tx(struct devmem_helper_client *c, const char *ifname, int dmabuf_fd,
                          uint32_t *binding_id, struct devmem_err *err)
{
    struct devmem_helper_bind_tx req;
    struct devmem_helper_msg answer;
    int rc = put_ifname(req.ifname, ifname, err);

    if (0 == rc) {
        rc = devmem_helper_call(c, DEVMEM_HELPER_BIND_TX, &req, sizeof(req), &dmabuf_fd, 1,
                                &answer, err);
    }
    if (0 == rc) {
        *binding_id = answer.body.reply.binding_id;
    }
    return rc;
}

int devmem_helper_release(struct devmem_helper_client *c, uint32_t binding_id,
                          struct devmem_err *err)
{
    struct devmem_helper_release req = {binding_id, 0};
    struct devmem_helper_msg answer;

    return devmem_helper_call(c, DEVMEM_HELPER_RELEASE, &req, sizeof(req), NULL, 0, &answer,
                              err);
}

int devmem_helper_status(struct devmem_helper_client *c, char *text, size_t cap,
                         struct devmem_err *err)
{
    struct devmem_helper_msg answer;
    int rc = devmem_helper_call(c, DEVMEM_HELPER_STATUS, NULL, 0, NULL, 0, &answer, err);

    if (0 == rc && cap > 0) {
        size_t n = strnlen(answer.body.text, cap - 1);
        memcpy(text, answer.body.text, n);
        text[n] = '\0';
    }
    return rc;
}
