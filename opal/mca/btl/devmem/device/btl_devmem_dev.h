/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device path of each module: which kernel interface serves it (real or emulated), the
 * RX pool and its binding, the device-flow listen socket whose port is the steering key,
 * and the decision, with its reason, whether the module uses devmem at all
 * (btl_devmem_mode = auto | require | off).
 *
 * A module without a device path (dev == NULL) is a plain TCP module; peers then never
 * learn a device-flow port from it and send it nothing but host-path fragments.
 *
 * A module holds this layer's part of it (struct mca_btl_devmem_devpath) and hands the
 * parts over at init; the layer knows no module.
 */
#ifndef MCA_BTL_DEVMEM_DEV_H
#define MCA_BTL_DEVMEM_DEV_H

#include "base/btl_devmem.h"
#include "sockets/btl_devmem_if.h"
#include "sockets/btl_devmem_sock.h"

#include "devmem/kernel.h"

BEGIN_C_DECLS

enum mca_btl_devmem_mode {
    MCA_BTL_DEVMEM_MODE_OFF,
    MCA_BTL_DEVMEM_MODE_AUTO,
    MCA_BTL_DEVMEM_MODE_REQUIRE,
};

/* One module's device path. */
struct mca_btl_devmem_dev {
    const struct mca_btl_devmem_devpath *part; /* the module's part it is the path of */
    struct devmem_region pool;  /* where received payload lands */
    uint32_t rx_id;             /* its RX binding */
    unsigned int rx_queue;      /* the first bound RX queue */
    unsigned int rx_nqueues;    /* queues bound: rx_queue .. rx_queue + rx_nqueues - 1 */
    uint32_t rx_buf_len;        /* the NIC's RX buffer length (rx-buf-len) as its driver
                                 * reports it; 0: not reported. Read only: the ring setup is
                                 * the administrator's (devmem-helperd's policy) */
    uint32_t rss_ctx;           /* the RSS context over them that the listen port is steered
                                 * into (real: ethtool's; emulated: the emulation's), 0: none */
    int steer_rule;             /* real: ethtool rule id for the listen port, -1 when none */
    uint32_t helper_id;         /* the helper's binding (and rule) for this module, 0: none */
    bool steered;               /* emulated: the listen port is steered to rx_id */
    /* The binding watch (mca_btl_devmem_dev_watch): a plain receive on a lane of this
     * module makes it a suspect (atomic; any receiving thread); the progress thread asks the
     * kernel and marks it lost when the binding is gone (then no new lanes come here) */
    int suspect;
    bool lost;
    /* undone already, and by what: btl_devmem_testing unbind_after, or the emulated kernel
     * as devmem-helperd's connection closed (the real one does that itself) */
    enum { DEV_BOUND, DEV_UNBOUND_TESTING, DEV_UNBOUND_HELPER } unbound;
    uint64_t asked_ns;          /* when the kernel was last asked */
    /* device-flow connections arrive here; its port is the steering key */
    struct mca_btl_devmem_listener listener;
};

/* This layer's part of a module: its interface, and its device path or why it has none.
 * The parts of all modules are a list (next), handed to mca_btl_devmem_dev_init. */
struct mca_btl_devmem_devpath {
    const struct mca_btl_devmem_if *itf; /* the module's interface */
    uint16_t prev_port;             /* an earlier life's device-flow port to take again, 0: any
                                     * (btl_devmem_component.c, prev_record_read) */
    struct mca_btl_devmem_dev *dev; /* NULL: host path only */
    char reason[320];               /* why dev is NULL, or why its binding is lost */
    struct mca_btl_devmem_devpath *next;
};

/* What becomes of a connection accepted on a module's device-flow listen socket: the device
 * flows' (a layer above, doc/design.md, Layers), handed in at init. */
typedef void (*mca_btl_devmem_dev_accept_fn)(struct mca_btl_devmem_dev *dev, int sd,
                                             const struct mca_btl_devmem_ip *addr,
                                             uint16_t port);

/*
 * After the modules exist and before the modex is published: read btl_devmem_mode and
 * btl_devmem_kernel, and give each module's part (the list from first, kept until
 * mca_btl_devmem_dev_fini) a device path where it works. auto: a module where it does not
 * stays on the host path, with the reason at verbosity 1; require: any such module makes
 * this fail with the reasons shown to the user. Connections accepted on a device-flow
 * listen socket go to on_accept. OPAL_SUCCESS or an error.
 */
int mca_btl_devmem_dev_init(struct mca_btl_devmem_devpath *first,
                            mca_btl_devmem_dev_accept_fn on_accept);

/* The list handed to mca_btl_devmem_dev_init (for btl_devmem_dev_watch.c). */
struct mca_btl_devmem_devpath *mca_btl_devmem_dev_first(void);

/* Each module's device path into text, one line each: "NAME on: kernel, pool, binding" or
 * "NAME off: why" (for btl_devmem_device_paths). */
void mca_btl_devmem_dev_paths(char *text, size_t size);

/*
 * A binding can go under a running job: the kernel undoes it when the netlink socket that made
 * it closes (devmem-helperd stopped or restarted) or the device goes away, and tells the data
 * sockets nothing: what they receive next is plain data, while the tokens handed out stay
 * valid on their sockets until given back. So a plain receive on a lane makes its module a
 * suspect (dev_suspect, from any receiving thread) and the progress thread asks the kernel
 * (dev_watch, at most every 100 ms a module). A binding found gone marks the module lost: what
 * its lanes receive goes on being delivered (plain data), every token out goes back on its
 * own socket, and no new lane comes to it. Said once at verbosity 1 (and counted in
 * bindings_lost).
 */
void mca_btl_devmem_dev_suspect(struct mca_btl_devmem_dev *dev);

/* Suspects to look at: a load the progress function makes every call. */
extern int mca_btl_devmem_dev_suspects;

/* Look at the suspects now. Returns how many bindings were found gone this time (their
 * reasons in each part's reason; the first in why). */
int mca_btl_devmem_dev_watch(char *why, size_t len);

/* btl_devmem_testing unbind_after: undo this rank's RX bindings once that many bytes landed
 * in its pools. The watch then has to find it, as it would a real loss. */
void mca_btl_devmem_dev_testing_unbind(uint64_t landed);

/* For btl_devmem_dev.c: watch devmem-helperd's connection once the device path goes through
 * it (its end undoes our bindings: the emulated kernel then undoes them too, and every module
 * becomes a suspect), and stop at finalize; whether it went. */
void mca_btl_devmem_dev_watch_helper(void);
void mca_btl_devmem_dev_unwatch_helper(void);
bool mca_btl_devmem_dev_helper_gone(void);

/* Whether bindings and steering go through devmem-helperd. */
bool mca_btl_devmem_dev_via_helper(void);

/* Undo every module's device path and forget the list. Call after every device flow is
 * closed (their tokens point into the pools), before the modules go. */
void mca_btl_devmem_dev_fini(void);

/* The kernel interface in use; NULL when no module has a device path. */
struct devmem_kernel *mca_btl_devmem_dev_kernel(void);

/* The receive buffers shared by the device flows the progress thread serves (progress is
 * serial); *cap is their size (a receive may set b->len lower). NULL when no module has a
 * path. */
struct devmem_rx_batch *mca_btl_devmem_dev_batch(size_t *cap);
/* Receive buffers of the same size for a receiving thread of its own. 0, or -errno. */
int mca_btl_devmem_dev_batch_init(struct devmem_rx_batch *b, struct devmem_err *err);

/* Whether this process takes part in device flows at all (btl_devmem_mode is not off):
 * it then connects to the device-flow ports its peers publish, even where its own
 * modules fell back to the host path. */
bool mca_btl_devmem_dev_enabled(void);

/* Whether btl_devmem_mode is require: a device flow that cannot be made then fails its
 * endpoint instead of falling back to the control connection. */
bool mca_btl_devmem_dev_required(void);

/* The pool that RX binding id lands in; NULL when it is none of ours. */
struct devmem_region *mca_btl_devmem_dev_pool(uint32_t id);

const char *mca_btl_devmem_mode_name(enum mca_btl_devmem_mode mode);

/* A TX binding of region on interface itf: from the kernel, or from devmem-helperd when it
 * makes this process's bindings; and its undoing. 0 or -errno with err. */
int mca_btl_devmem_dev_bind_tx(const struct mca_btl_devmem_if *itf,
                               struct devmem_region *region, uint32_t *id,
                               struct devmem_err *err);
void mca_btl_devmem_dev_unbind_tx(uint32_t id);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_DEV_H */
