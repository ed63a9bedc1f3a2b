/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper's clients: reading each message with the descriptors that came with it,
 * checking the client's credentials, passing its requests to requests.c, answering, and
 * undoing everything a client holds when its connection closes.
 *
 * A message is read in two steps, header then body, so that a read never reaches into the
 * next message and descriptors belong to the message whose first bytes they came with.
 * A malformed message is answered with the reason and the connection is closed; a request the
 * policy or the kernel refuses is answered with the reason and the connection stays.
 */
#include "config.h"

#include "helperd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define HD_HELLO_MS 5000     /* a connection must say hello within this */
#define HD_MESSAGE_MS 2000   /* and finish a message it has begun within this */
#define HD_BACKLOG_MS 2000   /* a new connection waits this long for its user's closes */
/* Room for every descriptor one message can carry (the kernel's SCM_MAX_FD): a descriptor
 * that does not fit is closed by the kernel in the reading thread, and its close can wait
 * as long as its owner likes. More than a message takes are refused, each closed by
 * closer.c. */
#define HD_FDS_READ 253

long hd_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fds(struct hd_client *c)
{
    for (size_t i = 0; i < c->nfds; i++) {
        hd_close_passed(c->uid, c->fds[i]);
    }
    c->nfds = 0;
}

/* Answer; a client that does not read its answers is dropped rather than waited for. */
static void answer(struct helperd *hd, struct hd_client *c, uint16_t type, uint32_t seq,
                   const void *body, size_t len)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    ssize_t n = devmem_helper_build(buf, sizeof(buf), type, seq, body, len), sent;

    (void) hd;
    if (n < 0) {
        hd_log(LOG_ERR, "pid %d: could not build a type %u answer", (int) c->pid, type);
        c->closing = true;
        return;
    }
    do {
        sent = send(c->fd, buf, (size_t) n, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && EINTR == errno);
    if (sent != n) {
        c->closing = true;
    }
}

static void refuse(struct helperd *hd, struct hd_client *c, uint32_t seq,
                   const struct devmem_err *e)
{
    struct devmem_helper_error body = {.code = e->code > 0 && e->code <= 4095 ? e->code : EIO};
    size_t n = strnlen(e->msg, sizeof(body.msg) - 1);

    /* the text goes out as the protocol allows it: printable, one line */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char) e->msg[i];
        body.msg[i] = ch < ' ' || ch >= 0x7f ? '?' : (char) ch;
    }
    hd->refused++;
    hd_log_user(c->uid, LOG_NOTICE, "refused pid %d uid %u: %s", (int) c->pid,
                (unsigned) c->uid, body.msg);
    answer(hd, c, DEVMEM_HELPER_ERROR, seq, &body, sizeof(body));
}

static void protocol_error(struct helperd *hd, struct hd_client *c, uint32_t seq,
                           const struct devmem_err *e)
{
    refuse(hd, c, seq, e);
    c->closing = true;
}

static void handle(struct helperd *hd, struct hd_client *c, const struct devmem_helper_msg *m)
{
    struct devmem_helper_reply reply;
    struct devmem_err e;
    int rc = 0;

    memset(&reply, 0, sizeof(reply));
    devmem_err_clear(&e);
    if (!c->hello && DEVMEM_HELPER_HELLO != m->type) {
        devmem_err_set(&e, EPROTO, "helper protocol: the first message must be hello");
        protocol_error(hd, c, m->seq, &e);
        return;
    }
    switch (m->type) {
    case DEVMEM_HELPER_HELLO:
        if (c->hello) {
            devmem_err_set(&e, EPROTO, "helper protocol: hello twice");
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        if (m->body.hello.min_version > DEVMEM_HELPER_VERSION
            || m->body.hello.max_version < DEVMEM_HELPER_VERSION_MIN) {
            devmem_err_set(&e, EPROTO, "helper protocol: the client speaks versions %u-%u, this "
                           "helper speaks %d-%d", m->body.hello.min_version,
                           m->body.hello.max_version, DEVMEM_HELPER_VERSION_MIN,
                           DEVMEM_HELPER_VERSION);
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        if (0 != hd_policy_check_user(&hd->policy, c->uid, c->gid, &e)) {
            protocol_error(hd, c, m->seq, &e);
            return;
        }
        c->hello = true;
        /* the newest both speak; a version 1 client sends zero sharers and flags, which
         * mean what version 1 did (exactly nqueues, no sharing known) */
        reply.version = m->body.hello.max_version < DEVMEM_HELPER_VERSION
                            ? m->body.hello.max_version : DEVMEM_HELPER_VERSION;
        break;
    case DEVMEM_HELPER_BIND_RX:
        rc = hd_request_bind_rx(hd, c, &m->body.bind_rx, &reply, &e);
        break;
    case DEVMEM_HELPER_BIND_TX:
        rc = hd_request_bind_tx(hd, c, &m->body.bind_tx, &reply, &e);
        break;
    case DEVMEM_HELPER_RELEASE:
        rc = hd_request_release(hd, c, m->body.release.binding_id, &e);
        break;
    case DEVMEM_HELPER_STATUS: {
        static char text[DEVMEM_HELPER_BODY_MAX];
        hd_status_text(hd, c, text, sizeof(text));
        hd->served++;
        answer(hd, c, DEVMEM_HELPER_STATUS_TEXT, m->seq, text, strlen(text) + 1);
        return;
    }
    default:
        devmem_err_set(&e, EPROTO, "helper protocol: type %u is not a request", m->type);
        protocol_error(hd, c, m->seq, &e);
        return;
    }
    if (0 != rc) {
        refuse(hd, c, m->seq, &e);
        return;
    }
    hd->served++;
    answer(hd, c, DEVMEM_HELPER_REPLY, m->seq, &reply, sizeof(reply));
}

/* ------------------------------------------------------------------ connections */

void hd_client_accept(struct helperd *hd, int cfd)
{
    struct hd_client *c = calloc(1, sizeof(*c));
    struct ucred cred;
    socklen_t len = sizeof(cred);
    const struct hd_policy *p = &hd->policy;
    unsigned int mine = 0;
    struct devmem_err e;
    char where[300];

    if (NULL == c || 0 != getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
        hd_log(LOG_ERR, "a connection without credentials (%s): closed",
               NULL == c ? "out of memory" : strerror(errno));
        free(c);
        hd_close_passed((uid_t) -1, cfd); /* it may hold descriptors already */
        return;
    }
    c->fd = cfd;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->accepted_ms = hd_now_ms();
    for (const struct hd_client *o = hd->clients; NULL != o; o = o->next) {
        mine += o->uid == c->uid;
    }
    devmem_err_clear(&e);
    if (hd->nclients >= p->max_clients) {
        devmem_err_set(&e, EAGAIN, "refused by policy (max-clients %u, %s): the helper serves "
                       "%u connections", p->max_clients,
                       hd_policy_where(p, p->max_clients_at, where, sizeof(where)),
                       hd->nclients);
    } else if (mine >= p->max_clients_per_user) {
        devmem_err_set(&e, EAGAIN, "refused by policy (max-clients-per-user %u, %s): uid %u has "
                       "%u connections", p->max_clients_per_user,
                       hd_policy_where(p, p->max_clients_per_user_at, where, sizeof(where)),
                       (unsigned) c->uid, mine);
    }
    if (0 != e.code) {
        refuse(hd, c, 0, &e);
        hd->dropped++;
        hd_close_passed(c->uid, cfd);
        free(c);
        return;
    }
    c->next = hd->clients;
    hd->clients = c;
    hd->nclients++;
    hd_log_user(c->uid, LOG_DEBUG, "connection from pid %d uid %u", (int) c->pid,
                (unsigned) c->uid);
}

void hd_client_drop(struct helperd *hd, struct hd_client *c, const char *why)
{
    unsigned int n = 0;

    for (struct hd_client **pc = &hd->clients; NULL != *pc; pc = &(*pc)->next) {
        if (*pc == c) {
            *pc = c->next;
            break;
        }
    }
    while (NULL != c->bindings) {
        struct hd_binding *b = c->bindings;
        c->bindings = b->next;
        hd_binding_release(hd, b);
        n++;
    }
    hd_log_user(c->uid, n > 0 ? LOG_INFO : LOG_DEBUG, "pid %d uid %u: connection closed (%s), "
                "%u binding(s) undone", (int) c->pid, (unsigned) c->uid, why, n);
    close_fds(c);
    /* descriptors still queued in the connection go with its last close */
    hd_close_passed(c->uid, c->fd);
    hd->nclients--;
    free(c);
}

/* Whether c has bytes the helper has not read yet: a hello that waits for its turn. */
static bool unread(const struct hd_client *c)
{
    char byte;

    return 1 == recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
}

void hd_clients_expire(struct helperd *hd, long now)
{
    struct hd_client *c = hd->clients;

    while (NULL != c) {
        struct hd_client *next = c->next;
        struct devmem_err e;

        devmem_err_clear(&e);
        if (!c->hello && hd_closer_held_ms(c->uid) > HD_BACKLOG_MS) {
            /* a burst of requests drains well within this; closes that have not are a file
             * system or socket that does not let go: say so rather than keep it waiting */
            devmem_err_set(&e, EAGAIN, "descriptors uid %u passed before are still being "
                           "closed (a file system or socket that does not let go): refused "
                           "until they are", (unsigned) c->uid);
        } else if (!c->hello && now - c->accepted_ms > HD_HELLO_MS && !unread(c)) {
            /* a hello sent but not read yet waits for its turn: the wait is the helper's */
            devmem_err_set(&e, ETIMEDOUT, "no hello within %d s", HD_HELLO_MS / 1000);
        } else if (c->have > 0 && now - c->msg_started_ms > HD_MESSAGE_MS) {
            /* half a message holds descriptors: it must not stay half */
            devmem_err_set(&e, ETIMEDOUT, "a message left unfinished for %d s",
                           HD_MESSAGE_MS / 1000);
        }
        if (0 != e.code) {
            refuse(hd, c, 0, &e);
            hd->dropped++;
            hd_client_drop(hd, c, e.msg);
        }
        c = next;
    }
}

/* Take the descriptors a read brought; they must come with a message's first bytes. */
static int take_fds(struct hd_client *c, struct msghdr *msg, bool at_start,
                    struct devmem_err *err)
{
    int rc = 0;

    if (msg->msg_flags & MSG_CTRUNC) {
        rc = devmem_err_set(err, EPROTO, "helper protocol: more descriptors than a message "
                            "takes");
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); NULL != cm; cm = CMSG_NXTHDR(msg, cm)) {
        size_t n;

        if (SOL_SOCKET != cm->cmsg_level || SCM_RIGHTS != cm->cmsg_type) {
            continue;
        }
        n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (0 == rc && at_start && c->nfds < DEVMEM_HELPER_FDS_MAX) {
                c->fds[c->nfds++] = fd;
                continue;
            }
            hd_close_passed(c->uid, fd);
            if (0 == rc && at_start) {
                rc = devmem_err_set(err, EPROTO, "helper protocol: more than %d descriptors "
                                    "with one message", DEVMEM_HELPER_FDS_MAX);
            } else if (0 == rc) {
                rc = devmem_err_set(err, EPROTO, "helper protocol: descriptors in the middle "
                                    "of a message");
            }
        }
    }
    return rc;
}

/* Descriptors the helper holds, at most: its own few, per connection the socket and those of
 * the message being read, per binding the held socket and the backend's netlink socket, and
 * what is queued for closing. */
static size_t fds_held(const struct helperd *hd)
{
    struct hd_closer_counts cc;
    unsigned int bindings, rules, contexts;
    size_t n = 32;

    for (const struct hd_client *c = hd->clients; NULL != c; c = c->next) {
        n += 1 + c->nfds;
    }
    hd_closer_counts(&cc);
    hd_status_counts(hd, &bindings, &rules, &contexts);
    return n + 2 * (size_t) bindings + cc.queued + cc.closing;
}

bool hd_fds_room(const struct helperd *hd)
{
    struct rlimit rl;

    /* a descriptor the kernel cannot install in the reader is closed by the kernel, in the
     * reading thread: read only with room for the most one message carries */
    return 0 != getrlimit(RLIMIT_NOFILE, &rl) || RLIM_INFINITY == rl.rlim_cur
           || fds_held(hd) + HD_FDS_READ < rl.rlim_cur;
}

int hd_client_readable(struct helperd *hd, struct hd_client *c, int *turn)
{
    while (*turn > 0 && !c->closing && !hd_closer_backlogged(c->uid) && hd_fds_room(hd)) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * HD_FDS_READ)];
            struct cmsghdr align;
        } ctl;
        struct iovec iov;
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof(ctl.buf)};
        struct devmem_helper_msg m;
        struct devmem_err e;
        uint32_t seq = 0;
        ssize_t n, used;

        if (0 == c->need) {
            c->need = sizeof(struct devmem_helper_hdr);
        }
        iov.iov_base = c->in + c->have;
        iov.iov_len = c->need - c->have;
        n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && EINTR == errno) {
            continue;
        }
        if (n < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
            return 0;
        }
        if (n <= 0) {
            return -1; /* closed (0), or gone (ECONNRESET) */
        }
        devmem_err_clear(&e);
        if (0 != take_fds(c, &msg, 0 == c->have, &e)) {
            protocol_error(hd, c, 0, &e);
            break;
        }
        if (0 == c->have) {
            c->msg_started_ms = hd_now_ms();
        }
        c->have += (size_t) n;
        if (c->have < c->need) {
            continue;
        }
        if (c->have >= sizeof(struct devmem_helper_hdr)) {
            memcpy(&seq, c->in + offsetof(struct devmem_helper_hdr, seq), sizeof(seq));
        }
        used = devmem_helper_parse(c->in, c->have, c->nfds, &m, &e);
        if (used < 0) {
            protocol_error(hd, c, seq, &e);
            break;
        }
        if (0 == used) { /* a good header: now its body */
            struct devmem_helper_hdr h;
            memcpy(&h, c->in, sizeof(h));
            c->need = sizeof(h) + h.length;
            continue;
        }
        handle(hd, c, &m);
        (*turn)--;
        close_fds(c);
        c->have = c->need = 0;
    }
    return c->closing ? -1 : 0;
}
