/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-helperd: the privileged helper that binds NIC queues and installs steering rules for
 * ranks without CAP_NET_ADMIN. Shared types of its parts:
 *   policy.c   the configuration file and every allow/refuse decision, with the rule's words
 *   backend.c  what it does to the NIC, behind one table: real (netlink, ethtool) or emulated
 *   serve.c    clients: reading messages and their fds, answering, undoing on disconnect
 *   requests.c what each request does: checks, queue choice, the backend's steps, bookkeeping
 *   inspect.c  what a passed descriptor is, asked without any call that can wait on its owner
 *   tcptable.c the namespace's TCP sockets, from sock_diag without a socket lock
 *   closer.c   closing what users passed, in each user's own threads
 *   log.c      the log, rate-limited per user
 *   status.c   the status text
 *   main.c     options, the listening socket, the event loop, --status
 * One poll loop serves every client, so no state but the closer's needs a lock. The loop
 * never does anything with a user's object that can block or take unbounded time: it names
 * a passed descriptor before asking it anything (inspect.c) and never closes one (closer.c).
 */
#ifndef DEVMEM_HELPERD_H
#define DEVMEM_HELPERD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

#include "err.h"
#include "helper_proto.h"
#include "nic.h"
#include "nic_admin.h"

#define HD_POLICY_IFACES 32
#define HD_POLICY_GROUPS 32
#define HD_QUEUES_MAX 64 /* queues per interface range (one 64-bit map) */

/* ------------------------------------------------------------------ policy (policy.c) */

/* Where a setting came from, for the words of a refusal: "FILE:LINE" or "default". */
struct hd_origin {
    int line; /* 0: the built-in default */
};

struct hd_policy_iface {
    char name[DEVMEM_HELPER_IFNAME];
    unsigned int qlo, qhi; /* RX queues the helper may bind, inclusive */
    uint32_t rx_buf_len;   /* bytes of each RX buffer to ask the driver for; 0: its own */
    struct hd_origin at;
};
/* rx-buf-len: a power of two in this range. A devmem fragment (a token) covers at most one
 * buffer; past 64 KiB no NIC's hardware GRO fills one. */
#define HD_RX_BUF_LEN_MIN 4096u
#define HD_RX_BUF_LEN_MAX 65536u

struct hd_policy {
    char path[256]; /* the file read, "" when none */
    struct hd_policy_iface ifaces[HD_POLICY_IFACES];
    size_t nifaces;
    gid_t allow_gids[HD_POLICY_GROUPS]; /* none: whoever can open the socket */
    size_t nallow;
    struct hd_origin allow_at;
    bool has_socket_group;
    gid_t socket_gid;
    struct hd_origin socket_group_at;
    unsigned int max_clients, max_clients_per_user;
    unsigned int max_bindings, max_rules; /* per user */
    unsigned int max_queues;              /* RX queues per binding (an RSS context over them) */
    unsigned int user_share;              /* percent of an interface's queues one user may
                                           * hold while another user wants some */
    uint64_t max_bytes;                   /* bound memory per user */
    bool allow_tx;  /* TX bindings at all */
    bool tx_shared; /* TX bindings on a device other users hold bindings on */
    bool restore;   /* undo NIC settings when the last binding on it goes */
    struct hd_origin max_clients_at, max_clients_per_user_at, max_bindings_at, max_rules_at,
        max_bytes_at, allow_tx_at, tx_shared_at, restore_at, max_queues_at, user_share_at;
};

/* Defaults, then the file (NULL: none). -errno with "FILE:LINE: what is wrong" in err. */
int hd_policy_load(struct hd_policy *p, const char *path, struct devmem_err *err);
const struct hd_policy_iface *hd_policy_iface(const struct hd_policy *p, const char *name);
/* "FILE:LINE" or "built-in default", for refusals. */
const char *hd_policy_where(const struct hd_policy *p, struct hd_origin at, char *buf,
                            size_t len);
/* Whether uid (primary gid) may use the helper; 0 or -EACCES with the rule in err. */
int hd_policy_check_user(const struct hd_policy *p, uid_t uid, gid_t gid,
                         struct devmem_err *err);

/* ------------------------------------------------------------------ state */

struct hd_client;

/* An interface the helper has bound on; NIC settings it changed, to put back. */
struct hd_iface {
    char name[DEVMEM_HELPER_IFNAME];
    unsigned int ifindex;
    const struct hd_policy_iface *pol;
    uint64_t busy;          /* queue qlo + i is bound when bit i is set */
    uint64_t stuck;         /* ... or still the target of a rule that would not go */
    unsigned int nbindings; /* RX and TX */
    unsigned int nrules;
    unsigned int nctx;      /* RSS contexts the helper made (one per binding of 2+ queues) */
    unsigned int ctx_stuck; /* ... that would not go: still on the NIC */
    /* what the backend changed (and the values it found), filled by prepare/steer */
    bool hds_set, rss_set, ntuple_set;
    int hds_was;            /* enum devmem_nic_hds found before */
    uint32_t hds_thresh_was;
    bool hds_thresh_known;
    /* the policy's rx-buf-len: set (and the length found before), or refused (said once) */
    bool rxbuf_set, rxbuf_refused;
    uint32_t rxbuf_was;
    uint32_t rxbuf_in_use;  /* what the driver reports after prepare; 0: not known */
    char nic_note[160];     /* what prepare could not check (e.g. "RSS: not reported") */
    long idle_since_ms;     /* when its last binding went */
    struct {
        uid_t uid;
        long at_ms;         /* 0: a free slot */
    } askers[8];            /* who asked for its queues lately (user-share) */
    struct hd_iface *next;
};

struct hd_binding {
    uint32_t id;        /* the kernel's binding id */
    bool rx;
    struct hd_iface *itf;
    unsigned int first_queue, nqueues; /* RX */
    bool has_rule;
    uint32_t rule_id;
    uint32_t rss_ctx;   /* RX over 2+ queues: the RSS context the rule steers into, 0: none */
    uint16_t port;      /* RX: the steered port */
    struct devmem_nic_flow flow; /* RX: the steered address and port */
    uint64_t bytes;     /* size of the dmabuf */
    int listen_fd;      /* RX: the client's socket, held while its port is steered */
    unsigned long listen_ino; /* its inode, to find it in the socket list */
    void *kstate;       /* the backend's handle (real: the netlink socket that holds it) */
    struct hd_client *owner;
    struct hd_binding *next; /* the owner's list */
};

struct hd_client {
    int fd;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    bool hello;
    long accepted_ms;
    long msg_started_ms;    /* when the first bytes of the message being read came */
    /* the message being read: header, then body; fds that came with it */
    unsigned char in[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    size_t have, need;
    int fds[DEVMEM_HELPER_FDS_MAX];
    size_t nfds;
    struct hd_binding *bindings;
    bool closing;
    struct hd_client *next;
};

/* ------------------------------------------------------------------ backend (backend.c) */

struct devmem_nic_flow;
struct devmem_nic_rule;

struct hd_backend_ops {
    const char *name; /* "real" or "emulated" */
    /* RX queues the device has. */
    int (*rx_queues)(struct hd_iface *itf, unsigned int *n, struct devmem_err *err);
    /* The kernel's verdict on the device before anything is changed: bind-rx with a memfd
     * standing in for the dmabuf. A device without devmem support is refused before the
     * kernel looks at the fd (its words are relayed); a capable one refuses the memfd. */
    int (*probe_rx)(struct hd_iface *itf, struct devmem_err *err);
    /* Is fd, whose open file the kernel calls name (hd_fd_name), a dmabuf this backend can
     * bind? Its size in *bytes; the refusal names it. Asks nothing of a file not so named. */
    int (*check_dmabuf)(int fd, const char *name, uint64_t *bytes, struct devmem_err *err);
    /* Before an RX binding: header split on with threshold 0, RSS kept below the policy's
     * first queue, the policy's rx-buf-len (not fatal: a driver's refusal is logged once).
     * What the driver does not report is left to the kernel's own checks at bind time and
     * noted in itf->nic_note. */
    int (*prepare_rx)(struct hd_iface *itf, struct devmem_err *err);
    /* At start, changing nothing: whether the driver of itf can take the policy's rx-buf-len;
     * logs once why not, so that an administrator hears of it before the first job. */
    void (*check_iface)(struct hd_iface *itf);
    int (*bind_rx)(struct hd_iface *itf, int dmabuf_fd, unsigned int first, unsigned int n,
                   uint32_t *id, void **kstate, struct devmem_err *err);
    int (*bind_tx)(struct hd_iface *itf, int dmabuf_fd, uint32_t *id, void **kstate,
                   struct devmem_err *err);
    void (*unbind)(struct hd_iface *itf, void *kstate);
    /* An RSS context over queues first .. first + n - 1, for a rule to steer into; its
     * deletion (0, or -errno when it stays on the NIC). */
    int (*ctx_add)(struct hd_iface *itf, unsigned int first, unsigned int n, uint32_t *ctx,
                   struct devmem_err *err);
    int (*ctx_del)(struct hd_iface *itf, uint32_t ctx);
    /* The queues of itf's policy range that context ctx spreads over, whoever made it (bit i:
     * queue qlo + i). */
    int (*ctx_queues)(struct hd_iface *itf, uint32_t ctx, uint64_t *mask,
                      struct devmem_err *err);
    /* ntuple on, then one rule; rule_del removes it. */
    int (*rule_add)(struct hd_iface *itf, const struct devmem_nic_flow *flow, uint32_t *rule,
                    struct devmem_err *err);
    /* The steering rules installed on itf, whoever made them (see devmem_nic_flow_list);
     * a driver without rules lists none. */
    int (*rules)(struct hd_iface *itf, struct devmem_nic_rule *rules, size_t cap, size_t *n,
                 struct devmem_err *err);
    /* 0, or -errno when the rule stays (its queues must then stay taken) */
    int (*rule_del)(struct hd_iface *itf, uint32_t rule);
    /* The last binding on itf went: put back what prepare and rule_add changed. */
    void (*restore)(struct hd_iface *itf);
};

extern const struct hd_backend_ops hd_backend_real;
extern const struct hd_backend_ops hd_backend_emulated;

/* ------------------------------------------------------------------ inspect.c */

/* What the descriptors a client passed turned out to be. */
struct hd_passed {
    int dmabuf_rc;         /* 0: a dmabuf (or the emulation's memfd) of `bytes` */
    uint64_t bytes;
    struct devmem_err dmabuf_err;
    int sock_rc;           /* 0: a listening socket that may be steered, described by flow */
    struct devmem_nic_flow flow;
    unsigned long sock_inode;
    struct devmem_err sock_err;
};

struct helperd;
/* Look at dmabuf_fd (and sock_fd when >= 0, the device-flow socket for ifname); each check
 * has its own result in *out. Never waits on the descriptors' owner. */
void hd_inspect(struct helperd *hd, int dmabuf_fd, int sock_fd, const char *ifname,
                struct hd_passed *out);
/* What the kernel calls fd's open file: "socket:[123]", "/dmabuf:", "anon_inode:[eventpoll]",
 * a path; "unknown" when it cannot tell. */
void hd_fd_name(int fd, char *buf, size_t len);
/* The kernel's ephemeral port range (net.ipv4.ip_local_port_range, the helper's namespace). */
int hd_local_port_range(unsigned int *lo, unsigned int *hi);

/* ------------------------------------------------------------------ tcptable.c */

#define HD_TCP_TIME_WAIT 0x06
#define HD_TCP_LISTEN 0x0A

/* One TCP socket of the namespace: its local address and port, state, owner. */
struct hd_tcp_sock {
    int family;
    union {
        struct in_addr v4;
        struct in6_addr v6;
    } addr;
    unsigned int port, state;
    uid_t uid;
    unsigned long inode; /* 0: a time-wait or request socket, which no descriptor holds */
};
typedef bool (*hd_tcp_fn)(const struct hd_tcp_sock *s, void *arg); /* false: stop */
/* Every TCP socket of the helper's namespace, IPv4 then IPv6; 0 or -errno. */
int hd_tcp_each(hd_tcp_fn fn, void *arg);
/* Whether s takes connections to flow's address and port: the same address, the wildcard,
 * or for IPv4 the IPv6 wildcard and the v4-mapped address. */
bool hd_tcp_same_port(const struct hd_tcp_sock *s, const struct devmem_nic_flow *flow);
const char *hd_tcp_state_name(unsigned int st);

/* ------------------------------------------------------------------ closer.c */

/* Once, before any close: the signal that interrupts a close that lasts. Returns a
 * descriptor for the loop to poll: readable when a user's closes drained enough for it to be
 * read again (read it to reset); -1 when none could be made (the loop then looks every 100 ms
 * while closes run). */
int hd_closer_init(void);
/* Close fd, which uid passed (or uid's connection), in one of uid's closing threads. */
void hd_close_passed(uid_t uid, int fd);
/* About every HD_CLOSE_NUDGE_MS: interrupt closes that last. */
void hd_closer_tick(void);
/* Whether uid's closes have piled up: its messages wait until they drain. */
bool hd_closer_backlogged(uid_t uid);
/* For how long they have (ms, at least 1), or 0. */
long hd_closer_held_ms(uid_t uid);
struct hd_closer_counts {
    size_t queued, threads, closing, users; /* users: those backlogged */
    unsigned long long closed, nudges;
};
void hd_closer_counts(struct hd_closer_counts *out);
/* At exit: wait up to wait_ms for every queued close. */
void hd_closer_drain(long wait_ms);

/* ------------------------------------------------------------------ the daemon */

struct helperd {
    struct hd_policy policy;
    const struct hd_backend_ops *be;
    struct hd_client *clients;
    unsigned int nclients;
    struct hd_iface *ifaces;
    uint64_t refused, served, dropped; /* requests refused / served, connections dropped */
    uint64_t netns_cookie;  /* the helper's network namespace: passed sockets must be in it */
};

/* serve.c */
void hd_client_accept(struct helperd *hd, int cfd);
/* Read what the client sent and answer whole messages, at most *turn of them (counted down:
 * one user's share of a wakeup, over all its connections); 0, or -1 when it is gone. Stops
 * early while the user's closes pile up or the helper lacks descriptors for more. */
#define HD_MSGS_PER_USER 16 /* messages one user's connections are answered per wakeup */
int hd_client_readable(struct helperd *hd, struct hd_client *c, int *turn);
/* Whether the helper has room under RLIMIT_NOFILE for every descriptor a message can carry. */
bool hd_fds_room(const struct helperd *hd);
/* Undo everything the client holds, close it, free it. */
void hd_client_drop(struct helperd *hd, struct hd_client *c, const char *why);
/* requests.c: 0, or -errno with the reason in err; the answer is serve.c's */
int hd_request_bind_rx(struct helperd *hd, struct hd_client *c,
                       const struct devmem_helper_bind_rx *req,
                       struct devmem_helper_reply *reply, struct devmem_err *err);
int hd_request_bind_tx(struct helperd *hd, struct hd_client *c,
                       const struct devmem_helper_bind_tx *req,
                       struct devmem_helper_reply *reply, struct devmem_err *err);
int hd_request_release(struct helperd *hd, struct hd_client *c, uint32_t id,
                       struct devmem_err *err);
/* Undo one binding, already unlinked from its owner: its rule, the binding, its queues, and
 * the NIC's settings when it was the last on the interface. */
void hd_binding_release(struct helperd *hd, struct hd_binding *b);
/* The client's listening socket of binding b was shut down or closed: its port may pass to
 * another process, so the binding and its rule go now. */
void hd_binding_lost(struct helperd *hd, struct hd_binding *b, const char *why);
/* Every held listening socket must still listen on the port its rule steers: a client that
 * shut its socket down and listened again may have let the port go. Lockless (it reads
 * the socket list, never the sockets). Call about once a second. */
void hd_bindings_recheck(struct helperd *hd);
/* Put back the NIC settings of interfaces with no binding: those idle for a grace period,
 * or all of them (now: the helper stops). Policy restore no: nothing. */
void hd_ifaces_restore(struct helperd *hd, bool now);
/* At start: check each policy interface that exists (the backend's check_iface). */
void hd_ifaces_check(struct helperd *hd);
/* Drop clients that have not said hello, or finished a message, within the deadline. */
void hd_clients_expire(struct helperd *hd, long now_ms);
long hd_now_ms(void);

/* status.c */
void hd_status_text(const struct helperd *hd, const struct hd_client *asker, char *buf,
                    size_t len);
/* Who holds the queues of itf's policy range, e.g. "1-2 pid 812, 3 pid 813, 4 free"; queues
 * in foreign (bit i: queue qlo + i) that no binding holds are "stray rule". */
void hd_queue_holders(const struct helperd *hd, const struct hd_iface *itf, uint64_t foreign,
                      char *buf, size_t len);
void hd_status_counts(const struct helperd *hd, unsigned int *bindings, unsigned int *rules,
                      unsigned int *contexts);

/* log.c: to stderr (--foreground) or syslog */
void hd_log_setup(bool to_stderr, bool verbose);
void hd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line a user's request causes: at most HD_LOG_BURST of them at once per uid, then one a
 * second, and the next line that passes says how many were left out. */
void hd_log_user(uid_t uid, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* DEVMEM_HELPERD_H */
