/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sockets, with no endpoint in sight: making them (bound, listening, connecting), tuning
 * them, accepting on a listen socket, and holding an accepted connection for at most
 * handshake_timeout seconds until somebody claims it. Control connections and device flows
 * use the same helpers.
 */
#ifndef MCA_BTL_DEVMEM_SOCK_H
#define MCA_BTL_DEVMEM_SOCK_H

#include "base/btl_devmem.h"
#include "sockets/btl_devmem_if.h"
#include "sockets/btl_devmem_pollset.h"

#include <sys/resource.h>

BEGIN_C_DECLS

/* An accepted connection: non-blocking, close-on-exec, from addr:port (host order). It is
 * the callee's to keep or close. */
typedef void (*mca_btl_devmem_accepted_fn)(void *arg, int sd,
                                           const struct mca_btl_devmem_ip *addr, uint16_t port);

/* A listen socket (control connections or device flows) and the state of accepting on it
 * (btl_devmem_sock.c): accepts pause while the process has no descriptor to take a
 * connection with, and the connections it gave that are still held (no hello, no claim yet)
 * are capped. */
struct mca_btl_devmem_listener {
    int fd;                        /* -1: none */
    uint16_t port;                 /* host byte order */
    mca_btl_devmem_polled_t watch;
    char where[48];                /* names it in messages */
    mca_btl_devmem_accepted_fn cb;
    void *arg;
    opal_event_t resume;           /* ends a pause */
    bool paused;
    unsigned int pause_ms;         /* the next pause: doubles while accepts keep failing */
    unsigned int held;             /* its connections held now */
};

/* A non-blocking TCP socket of the interface's family, bound to its address and `port` (host
 * order; 0: any), IPv6 only for an IPv6 address. Returns it, or -errno. */
int mca_btl_devmem_bound_socket(const struct mca_btl_devmem_if *itf, uint16_t port);

/* The local port of a bound socket, in host order. 0, or -errno. */
int mca_btl_devmem_local_port(int sd, uint16_t *port);

/* A listen socket on the interface's address, on port `want` (host order) when not 0 and
 * free, else on one the kernel picks, or with btl_devmem_ports on a free one of the range:
 * control and device-flow ports alike. 0 with *fd and *port (host order) set, or -errno. */
int mca_btl_devmem_listen_socket(const struct mca_btl_devmem_if *itf, uint16_t want, int *fd,
                                 uint16_t *port);

/* A listen socket on a free port of btl_devmem_ports (set): `want` when it lies in the range
 * and is free, else the first free one from a place of this process's own. reuse:
 * SO_REUSEADDR before the bind (not for devmem-helperd's sockets). 0 with *fd and *port set;
 * -EADDRNOTAVAIL when every port is taken (said once, with the range), or -errno. */
int mca_btl_devmem_listen_range(const struct mca_btl_devmem_if *itf, uint16_t want, bool reuse,
                                int *fd, uint16_t *port);

/* TCP_NODELAY, socket buffer sizes and keepalive from the MCA parameters, for every
 * connection. */
void mca_btl_devmem_tune_socket(int sd);

/* Seconds since sd's peer last acknowledged data that is still in flight; 0 when nothing is
 * in flight, the connection is not established yet (a connect under way has its own timeout)
 * or the kernel does not say. Tells a dead or cut-off host from a busy process. */
unsigned int mca_btl_devmem_sock_unacked_for(int sd);

/* A modex record's address; false for a family this build does not know. */
bool mca_btl_devmem_modex_ip(const struct mca_btl_devmem_modex_addr *a,
                             struct mca_btl_devmem_ip *ip);

/* A tuned, non-blocking socket bound to itf's address and connecting to the peer's record
 * `remote` at port_net (network order): control connections and device flows. Returns it,
 * or -errno (-EAFNOSUPPORT when the record is not of itf's family). */
int mca_btl_devmem_connect_socket(const struct mca_btl_devmem_if *itf,
                                  const struct mca_btl_devmem_modex_addr *remote,
                                  uint16_t port_net);

/* At component init: raise the soft descriptor limit (RLIMIT_NOFILE) to the hard one, said
 * at verbose 10, and count the descriptors open then. */
void mca_btl_devmem_nofile_init(void);

/* The soft descriptor limit in force, and how many descriptors were free at init. */
rlim_t mca_btl_devmem_nofile(void);
rlim_t mca_btl_devmem_nofile_free_at_init(void);

/* A listener with no socket yet: where names it in messages, cb takes every connection it
 * accepts. */
void mca_btl_devmem_listener_init(struct mca_btl_devmem_listener *l, const char *where,
                                  mca_btl_devmem_accepted_fn cb, void *arg);

/* Watch l->fd (a listening socket, set by the caller) and accept from it. 0 or -errno. */
int mca_btl_devmem_listener_start(struct mca_btl_devmem_listener *l);

/* Stop accepting and close the socket (the connections it gave stay where they are). */
void mca_btl_devmem_listener_close(struct mca_btl_devmem_listener *l);

/* Most connections one listener may have held at once (no hello or claim yet): an eighth of
 * the descriptor limit, at least 16; beyond it the oldest is dropped for the newest. */
unsigned int mca_btl_devmem_listener_held_max(void);

/*
 * A connection held with a timeout: accepted, not yet anybody's. A stranger's socket in the
 * handshake (btl_devmem_conn.c checks its hello) and a device-flow connection that no control
 * connection has named yet (btl_devmem_devflow.c) are both this. When handshake_timeout
 * passes first, it is dropped with `expired` as the reason, and counted as a stranger
 * (conn_refused); so is one dropped for the listener's cap.
 */
typedef struct mca_btl_devmem_held mca_btl_devmem_held_t;
typedef void (*mca_btl_devmem_held_read_fn)(mca_btl_devmem_held_t *h);

struct mca_btl_devmem_held {
    opal_list_item_t super;
    opal_list_t *list;              /* the list holding it */
    int sd;
    void *owner;                    /* the module (or device path) whose port it reached */
    struct mca_btl_devmem_listener *from; /* ... and that port's listener */
    const char *itf;                /* ... and its interface's name, for messages */
    const char *kind;               /* "connection", "device-flow connection" */
    const char *expired;            /* why the timeout drops it */
    struct mca_btl_devmem_ip addr;  /* where it comes from */
    uint16_t port;                  /* ... host byte order */
    char peer[MCA_BTL_DEVMEM_IP_STRLEN + 8]; /* [address]:port */
    opal_event_t timer;
    mca_btl_devmem_polled_t watch;   /* readable: on_read runs (when set) */
    mca_btl_devmem_held_read_fn on_read;
    struct mca_btl_devmem_hello hello; /* what it said so far (mca_btl_devmem_held_hello) */
    size_t got;
};
OBJ_CLASS_DECLARATION(mca_btl_devmem_held_t);

/* Hold sd, accepted from listener `from`, on list until it is taken or dropped (the oldest
 * of from's held connections is dropped first when it holds its cap). on_read: called when
 * it is readable (NULL: held unread). NULL when it cannot be held: sd is closed then. */
mca_btl_devmem_held_t *mca_btl_devmem_held_new(opal_list_t *list, int sd,
                                               const struct mca_btl_devmem_ip *addr,
                                               uint16_t port, void *owner,
                                               struct mca_btl_devmem_listener *from,
                                               const char *itf, const char *kind,
                                               const char *expired,
                                               mca_btl_devmem_held_read_fn on_read);

/* Read what h has said of its hello now: 1 when the hello is whole in h->hello (not yet
 * checked), 0 while more is to come, -1 when h closed first and was dropped. */
int mca_btl_devmem_held_hello(mca_btl_devmem_held_t *h);

/* Its socket is the caller's now; the hold is gone. */
int mca_btl_devmem_held_take(mca_btl_devmem_held_t *h);

/* Why a held connection goes. */
enum mca_btl_devmem_held_end {
    MCA_BTL_DEVMEM_HELD_QUIET,    /* closing down: not counted */
    MCA_BTL_DEVMEM_HELD_STRANGER, /* a bad hello, silence, the cap: counted in conn_refused */
    MCA_BTL_DEVMEM_HELD_RACE,     /* closed before saying anything: a peer's connect that lost
                                   * a simultaneous connect, or a port scan; conn_races */
};

/* Close and forget it, counted as `end` says; why is said at verbose 5 (NULL: nothing). */
void mca_btl_devmem_held_drop(mca_btl_devmem_held_t *h, enum mca_btl_devmem_held_end end,
                              const char *why);

/* Drop everything on list quietly (component close). */
void mca_btl_devmem_held_drop_all(opal_list_t *list);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_SOCK_H */
