/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asking devmem-helperd for bindings and steering rules: the client end of helper_proto.h,
 * for the component, devmem-probe and the helper's own --status.
 *
 * One connection per process, kept open while its bindings are in use: the helper undoes
 * everything a connection holds when it closes, however the process ends. Calls block until
 * the helper answers or the timeout passes; one caller at a time.
 *
 * Every call returns 0 or -errno with err filled. A refusal carries the helper's errno and
 * its words: which policy rule or kernel call refused, with the kernel's extack verbatim.
 */
#ifndef DEVMEM_HELPER_CLIENT_H
#define DEVMEM_HELPER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "helper_proto.h"

/* Where a helper listens unless told otherwise (devmem-helperd --socket). */
#define DEVMEM_HELPER_SOCKET_DEFAULT "/run/devmem-helperd/helperd.sock"

struct devmem_helper_client;

/* Connect to the helper at path (NULL: the default) and agree on a version. timeout_ms
 * bounds every later call too. -ENOENT / -ECONNREFUSED: no helper listens there. */
int devmem_helper_connect(struct devmem_helper_client **c, const char *path, int timeout_ms,
                          struct devmem_err *err);
void devmem_helper_close(struct devmem_helper_client *c);

/* The version agreed at hello (DEVMEM_HELPER_VERSION_MIN..DEVMEM_HELPER_VERSION). */
unsigned int devmem_helper_version(const struct devmem_helper_client *c);

/* What a bind-rx asks for. */
struct devmem_helper_rx_ask {
    unsigned int nqueues; /* RX queues wanted */
    unsigned int sharers; /* ranks of this job on this host asking on the NIC (0: unknown) */
    bool fewer;           /* nqueues is a wish: fewer (at least 1) rather than a refusal */
};

/* Bind dmabuf_fd to RX queues of ifname and steer the port that listen_fd (a listening TCP
 * socket of this process) is bound to into them; reply says which queues. A version 1
 * helper hears neither sharers nor fewer: it grants nqueues or refuses. */
int devmem_helper_bind_rx(struct devmem_helper_client *c, const char *ifname,
                          const struct devmem_helper_rx_ask *ask, int dmabuf_fd, int listen_fd,
                          struct devmem_helper_reply *reply, struct devmem_err *err);
/* A TX binding of dmabuf_fd on ifname. */
int devmem_helper_bind_tx(struct devmem_helper_client *c, const char *ifname, int dmabuf_fd,
                          uint32_t *binding_id, struct devmem_err *err);
/* Undo one binding this connection made (its rule, its queues). */
int devmem_helper_release(struct devmem_helper_client *c, uint32_t binding_id,
                          struct devmem_err *err);
/* The helper's status text (NUL-terminated, cut to cap). */
int devmem_helper_status(struct devmem_helper_client *c, char *text, size_t cap,
                         struct devmem_err *err);

/* One sendmsg of buf with nfds descriptors (SCM_RIGHTS) on fd, MSG_NOSIGNAL | flags: what
 * sendmsg returns. Up to DEVMEM_HELPER_SEND_FDS_MAX descriptors, more than a message takes,
 * so that tests can send too many. */
#define DEVMEM_HELPER_SEND_FDS_MAX 16
ssize_t devmem_helper_sendmsg(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
                              int flags);

/* The connected socket, for tests that write raw bytes. */
int devmem_helper_client_fd(const struct devmem_helper_client *c);

#endif /* DEVMEM_HELPER_CLIENT_H */
