/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One connection to one peer through one module: its state, the send queue, the receive
 * side's framing state, pending gets. Connection states and their changes are
 * btl_devmem_conn.c's.
 */
#ifndef MCA_BTL_DEVMEM_ENDPOINT_H
#define MCA_BTL_DEVMEM_ENDPOINT_H

#include "base/btl_devmem.h"
#include "base/btl_devmem_activity.h"
#include "base/btl_devmem_frag.h"
#include "base/btl_devmem_rxframe.h"
#include "sockets/btl_devmem_pollset.h"
#include "connections/btl_devmem_proc.h"

BEGIN_C_DECLS

enum mca_btl_devmem_ep_state {
    MCA_BTL_DEVMEM_EP_CLOSED,      /* no socket; a send starts a connect */
    MCA_BTL_DEVMEM_EP_CONNECTING,  /* non-blocking connect in progress */
    MCA_BTL_DEVMEM_EP_CONNECT_ACK, /* hello sent, waiting for the reply */
    MCA_BTL_DEVMEM_EP_WAIT_PEER,   /* the peer deferred: its own connection will arrive */
    MCA_BTL_DEVMEM_EP_CONNECTED,
    MCA_BTL_DEVMEM_EP_SHUTDOWN,    /* the peer said FIN, or we did: no more traffic */
    MCA_BTL_DEVMEM_EP_FAILED,      /* lost without an orderly close: sends fail */
};

struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    mca_btl_devmem_module_t *module;
    mca_btl_devmem_proc_t *peer;
    struct mca_btl_devmem_modex_addr remote; /* where we connect to */
    enum mca_btl_devmem_ep_state state;
    int sd;
    opal_mutex_t lock;             /* state, send queue, pending gets, and what the layers
                                    * above keep under it (btl_devmem.h: Threads) */
    opal_event_t timer;            /* the timeout of a waiting state (btl_devmem_conn.c) */
    bool timer_armed;
    unsigned int conn_attempts;    /* connects made since the peer last answered */
    bool conn_counted;             /* counted among the live connections */
    mca_btl_devmem_polled_t watch;  /* sd's readiness (btl_devmem_pollset.h) */

    /* send side */
    opal_list_t send_queue;        /* mca_btl_devmem_frag_t, in wire order */

    /* receive side */
    struct mca_btl_devmem_rxframe rx; /* framing and read-ahead (btl_devmem_rxframe.h) */
    bool in_recv;                  /* a PML callback re-entered progress from our receive */
    bool tx_corked;                /* under lock: the frames of a read are being dispatched;
                                    * what is sent meanwhile waits for their end */
    bool tx_cork_queued;           /* under lock: something waits for that end */
    bool tx_window;                /* under lock: the socket is full, more than one frame
                                    * queued (counted in progress.h's window) */

    /* a failure found by a thread that could not take the dispatch lock: the dispatcher
     * completes it on its next turn (btl_devmem_endpoint.c, ep_fail) */
    bool fail_pending;
    bool fail_ours;
    int fail_err;
    char fail_why[256];

    /* gets waiting for their GET_RESP (and their push); changed only through
     * mca_btl_devmem_endpoint_pending_*, which keep the idle policy's count of them */
    opal_list_t pending_gets;

    /* the state of this peer that the layers above keep (mca_btl_devmem_endpoint_state) */
    void *above;

    /* handshake reply accumulation (connector side) */
    struct mca_btl_devmem_hello reply;
    size_t reply_got;
};

typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef mca_btl_base_endpoint_t mca_btl_devmem_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_devmem_endpoint_t);

/*
 * Queue a fragment for the peer (connecting first if needed) and write what the socket
 * takes now. Returns 1 when a PML descriptor (no done function) was written completely
 * inline and completed without a callback unless its flags asked for one (the PML may reuse
 * it at once); OPAL_SUCCESS when it is queued (completion, with a callback, comes later), when
 * an internal fragment was written inline (already completed), or when connecting failed
 * (the fragment was completed with OPAL_ERR_UNREACH); OPAL_ERR_UNREACH when the endpoint
 * is failed or shut down, or the inline write failed: the fragment is still the caller's.
 */
int mca_btl_devmem_endpoint_send(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag);

/* An inline send's way out (btl_sendi): frag leaves now or is not taken, so that what the
 * PML calls done needs nobody's progress to leave. Returns
 *   1                       written whole and completed;
 *   OPAL_ERR_RESOURCE_BUSY  not taken, frag is still the caller's: the endpoint is not
 *                           connected (no connect is started), frames wait before it, its
 *                           read is being dispatched, or its socket has no room;
 *   OPAL_SUCCESS            the socket took a part of it: the rest is queued and completes
 *                           from the send event, calling frag back: the caller must see to
 *                           that before it calls the send done;
 *   OPAL_ERR_UNREACH        failed or shut down, or the write failed: frag is the caller's. */
int mca_btl_devmem_endpoint_send_now(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag);

/* The same, running placed(ep, frag, arg) under the endpoint's lock at the moment the
 * fragment's place on the wire is decided (not when the endpoint is failed or shut down:
 * OPAL_ERR_UNREACH then, placed not run). A result other than OPAL_SUCCESS from placed
 * leaves the fragment unsent and is returned. For what must follow the wire's order, like
 * the gets a device flow answers in the order they were asked. */
typedef int (*mca_btl_devmem_placed_fn)(mca_btl_devmem_endpoint_t *ep,
                                        mca_btl_devmem_frag_t *frag, void *arg);
int mca_btl_devmem_endpoint_send_placed(mca_btl_devmem_endpoint_t *ep,
                                        mca_btl_devmem_frag_t *frag,
                                        mca_btl_devmem_placed_fn placed, void *arg);

/* A callback of the dispatching thread re-entered progress while the frames of a read are
 * being dispatched: what they sent so far leaves now, rather than waiting for the end of
 * the batch, which that callback may be waiting on. What was written completes here, as
 * other BTLs' sends complete in that nested progress call. */
void mca_btl_devmem_endpoint_uncork_current(void);

/* The peer is gone or misbehaved: fail everything queued for it (device flows too) and
 * tell the PML. why: what happened; err: an errno or 0. */
void mca_btl_devmem_endpoint_fail(mca_btl_devmem_endpoint_t *ep, const char *why, int err);

/* This rank gives up on the connection for a reason of its own (out of memory, a failed
 * copy): said at once, as a fault found here, then as endpoint_fail. */
void mca_btl_devmem_endpoint_abort(mca_btl_devmem_endpoint_t *ep, const char *why);

/* The peer broke the protocol outside a fragment header (device flows): count, then fail. */
void mca_btl_devmem_endpoint_proto_error(mca_btl_devmem_endpoint_t *ep, const char *what);

/* A fragment is done (written, or a get filled): run its completion. */
void mca_btl_devmem_endpoint_complete(mca_btl_devmem_endpoint_t *ep,
                                      mca_btl_devmem_frag_t *frag, int status);

/* Orderly shutdown: send FIN, flush what we can, close. */
void mca_btl_devmem_endpoint_shutdown(mca_btl_devmem_endpoint_t *ep);

/* What the layers above the endpoint (get and put, pushes, device flows) do with its
 * connections and frames: the component registers them once at init, before any endpoint
 * exists, so that neither the endpoint nor the connection manager calls up (doc/design.md,
 * Layers). Frames of the endpoint's own (SEND, PUT, FIN) it handles itself. */
struct mca_btl_devmem_endpoint_hooks {
    /* a connection: failed or shut down; socket dropped; object gone */
    void (*closing)(mca_btl_devmem_endpoint_t *ep, bool orderly);
    void (*detached)(mca_btl_devmem_endpoint_t *ep);
    void (*destructing)(mca_btl_devmem_endpoint_t *ep);

    /* sending, under ep->lock: SEND frame frag takes its place on the wire (a PUSH frame to
     * queue right behind it, or NULL) */
    mca_btl_devmem_frag_t *(*placing_send)(mca_btl_devmem_endpoint_t *ep,
                                           mca_btl_devmem_frag_t *frag);

    /* receiving. Every frame first: 0, or why it must not come here (-1: a protocol error,
     * -2: abort the connection). Then by type: GET_RESP admitted, placed, done; PUSH
     * placed, done; GET_REQ and the device flows' DEVFLOW and LANES done. Whether the next
     * frames should be read header first (a large answer is due); whether an address is
     * device memory (no PUT there). */
    int (*admit_any)(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h,
                     char *why, size_t len);
    bool (*resp_admit)(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h);
    char *(*resp_dest)(mca_btl_devmem_endpoint_t *ep);
    void (*resp_done)(mca_btl_devmem_endpoint_t *ep);
    char *(*push_dest)(mca_btl_devmem_endpoint_t *ep);
    void (*push_in_done)(mca_btl_devmem_endpoint_t *ep);
    void (*get_req)(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h);
    void (*devflow)(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h);
    bool (*header_first)(mca_btl_devmem_endpoint_t *ep);
    bool (*is_device)(const void *addr);
};
void mca_btl_devmem_endpoint_set_hooks(const struct mca_btl_devmem_endpoint_hooks *hooks);

/* Per-peer state of the layers above (pushes, device flows): each registers its struct at
 * init, before any endpoint exists, and finds it on every endpoint through the handle; the
 * endpoint allocates it zeroed with itself, runs construct and destruct (either may be
 * NULL) and never looks inside. Registering the same handle again (a second init) keeps
 * the first. OPAL_SUCCESS, or OPAL_ERR_OUT_OF_RESOURCE past the few slots there are. */
typedef void (*mca_btl_devmem_state_fn)(void *state);
int mca_btl_devmem_endpoint_state_register(size_t *handle, size_t size,
                                           mca_btl_devmem_state_fn construct,
                                           mca_btl_devmem_state_fn destruct);

static inline void *mca_btl_devmem_endpoint_state(const mca_btl_devmem_endpoint_t *ep,
                                                  size_t handle)
{
    return (char *) ep->above + handle;
}

/* A new endpoint with the layers' state made, or NULL when out of memory. */
mca_btl_devmem_endpoint_t *mca_btl_devmem_endpoint_new(void);

/* For btl_devmem_conn.c: the hooks above. */
extern struct mca_btl_devmem_endpoint_hooks mca_btl_devmem_endpoint_hooks;

/* Connections whose events are polled now: the idle policy yields only while some are. */
int mca_btl_devmem_endpoint_live(void);

/* For btl_devmem_conn.c: take sd as the connection (counted among the live ones), and
 * drop it again (events off, socket closed, receive state reset; the state is the
 * caller's to set). Called with ep->lock held. */
void mca_btl_devmem_endpoint_attach(mca_btl_devmem_endpoint_t *ep, int sd);
void mca_btl_devmem_endpoint_detach(mca_btl_devmem_endpoint_t *ep);

/* For btl_devmem_conn.c: write what the queue holds (called with ep->lock held, returns with
 * it dropped), completing what was written. 0, or -errno: the caller fails ep. */
int mca_btl_devmem_endpoint_flush_unlock(mca_btl_devmem_endpoint_t *ep);

/* ep->pending_gets, the gets asked and not yet answered, changes only through these (under
 * ep->lock), which keep the count the idle policy reads (mca_btl_devmem_progress_gets) in
 * step with the list. */
static inline void mca_btl_devmem_endpoint_pending_add(mca_btl_devmem_endpoint_t *ep,
                                                       mca_btl_devmem_frag_t *get)
{
    opal_list_append(&ep->pending_gets, &get->base.super.super);
    mca_btl_devmem_progress_gets(1);
}

static inline void mca_btl_devmem_endpoint_pending_remove(mca_btl_devmem_endpoint_t *ep,
                                                          mca_btl_devmem_frag_t *get)
{
    opal_list_remove_item(&ep->pending_gets, &get->base.super.super);
    mca_btl_devmem_progress_gets(-1);
}

/* All of them, moved to the end of into (a failed connection's). */
static inline void mca_btl_devmem_endpoint_pending_take_all(mca_btl_devmem_endpoint_t *ep,
                                                            opal_list_t *into)
{
    mca_btl_devmem_progress_gets(-(int) opal_list_get_size(&ep->pending_gets));
    opal_list_join(into, opal_list_get_end(into), &ep->pending_gets);
}

/* The peer's host name, for messages. */
const char *mca_btl_devmem_endpoint_peer_host(const mca_btl_devmem_endpoint_t *ep);

/* The name of state s (btl_devmem_conn.c's table). */
const char *mca_btl_devmem_endpoint_state_str(enum mca_btl_devmem_ep_state s);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_ENDPOINT_H */
