/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the device-flow files share (not for the rest of the component):
 *   btl_devmem_devflow.c     naming: connections held until a control connection claims
 *                            them, adoption, closing
 *   btl_devmem_devflow_lanes.c  lanes on demand: asking the peer for lanes, retiring them
 *   btl_devmem_devflow_stripe.c which lane a get is asked on, whole or in chunks
 *   btl_devmem_devflow_tx.c  the sending side: connecting, answering gets (devmem TX or
 *                            plain writes), zerocopy completions
 *   btl_devmem_devflow_rx.c  the receiving side: gets in stream order, devmem receives
 *   btl_devmem_devflow_gather.c  the receiving side's batched, pipelined gather into
 *                            destinations: tokens back and gets completed once a batch of
 *                            receives is in place
 * and the receiving threads built on them (btl_devmem_rxthread.c: rx_server, rx_step, the
 * gather pipe).
 */
#ifndef MCA_BTL_DEVMEM_DEVFLOW_INT_H
#define MCA_BTL_DEVMEM_DEVFLOW_INT_H

#include "sockets/btl_devmem_sock.h"
#include "devflow/btl_devmem_devflow.h"

#include <time.h>

#include "devmem/copier.h"
#include "devmem/rx.h"
#include "devmem/tx.h"

BEGIN_C_DECLS

/* The sending side's states; the table with how each is entered and left is in
 * btl_devmem_devflow.c (tx_states), and every change goes through devflow_tx_state. */
enum mca_btl_devmem_devflow_tx_state {
    MCA_BTL_DEVMEM_DF_TX_NONE,       /* no connection to the peer's device-flow port */
    MCA_BTL_DEVMEM_DF_TX_CONNECTING, /* an attempt at connecting is under way, or the next
                                      * one waits for the timer */
    MCA_BTL_DEVMEM_DF_TX_OPEN,       /* connected and named: answering gets */
    MCA_BTL_DEVMEM_DF_TX_CLOSED,     /* closed: after a failure, a fallback or at finalize
                                      * (final), or when the peer retires it (then NONE) */
};

/* The receiving side's states (rx_states in btl_devmem_devflow.c, devflow_rx_state). */
enum mca_btl_devmem_devflow_rx_state {
    MCA_BTL_DEVMEM_DF_RX_NONE,    /* the peer has not named a device flow to us */
    MCA_BTL_DEVMEM_DF_RX_CLAIMED, /* named on the control connection, not yet accepted */
    MCA_BTL_DEVMEM_DF_RX_OPEN,    /* adopted: its ledger is open, gets land through it */
    MCA_BTL_DEVMEM_DF_RX_CLOSED,  /* the peer closed it in order, or it failed; NONE again
                                   * only once the peer said the lanes are retired */
};

/* Where a gather pipe hands what it finished: a get or chunk whose bytes are in place, and
 * an endpoint that must fail (why). The progress thread's pipe completes and fails there and
 * then; a receiving thread's queues both for the progress thread. */
struct mca_btl_devmem_devflow;
struct mca_btl_devmem_gather_sink {
    void (*complete)(void *ctx, mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag);
    /* a gather of df's failed: its gets are back on df's list, df->rx_failed is set (no
     * receive may be laid out on the lane any more), its endpoint must fail */
    void (*fail)(void *ctx, struct mca_btl_devmem_devflow *df, const char *why);
};

/* A gather pipe: the receives of the lanes one thread serves, in batches, with their copier
 * (btl_devmem_devflow_gather.c). Only that thread touches it, or another holding what stops
 * that thread (the dispatch lock for the progress thread's pipe). */
struct inflight_rx;
struct mca_btl_devmem_gather_pipe {
    bool ready;
    struct devmem_copier copier;
    struct inflight_rx *head, *tail; /* in ticket order, the open batch last */
    struct inflight_rx *open;        /* first receive of the open batch; NULL: none */
    struct inflight_rx *spare;       /* finished ones, for reuse */
    size_t n;
    size_t open_bytes;    /* received into the open batch */
    size_t batches;       /* launched and not yet finished */
    uint64_t last_ticket; /* of the latest batch launched */
    const struct mca_btl_devmem_gather_sink *sink;
    void *sink_ctx;
};

/* The progress thread's pipe: lanes no receiving thread serves. */
extern struct mca_btl_devmem_gather_pipe mca_btl_devmem_gather_main;

void mca_btl_devmem_gather_pipe_init(struct mca_btl_devmem_gather_pipe *p,
                                     const struct mca_btl_devmem_gather_sink *sink, void *ctx);

/* One lane: a connection in each direction between ep and its peer. A peer has up to
 * btl_devmem_devflows lanes; each answers the requests that name it, in their order. */
struct mca_btl_devmem_devflow {
    mca_btl_devmem_endpoint_t *ep;
    unsigned int lane; /* its number, the tag of its DEVFLOW claim and of its GET_REQs */
    /* the timeout of a waiting state (the tables' `timed`), armed by the state changes */
    opal_event_t timer;
    bool timer_armed;

    /* sending side: our connection to the peer's device-flow port */
    enum mca_btl_devmem_devflow_tx_state tx_state;
    int tx_sd;                      /* CONNECTING: -1 between attempts */
    unsigned int tx_attempts;       /* connects made so far */
    mca_btl_devmem_polled_t tx_watch; /* write: room to send; read: completions on the error
                                      * queue (real kernel) or the peer closing */
    opal_list_t tx_queue;           /* raw GET_RESP frags (no header on the wire) */
    opal_list_t tx_wait;            /* devmem TX frags sent, awaiting their completions */
    struct devmem_tx_tracker tracker; /* zerocopy notification ids of those sends */
    /* not a state: a capability of the open connection (SO_ZEROCOPY is on, the tracker is
     * set up), so devmem TX may be used; a flow without it answers with plain writes */
    bool tx_zerocopy;
    /* receiving side: the peer's connection to our port, once claimed. rx_state and rx_sd
     * change under the endpoint's lock, since btl_get reads them from any thread. */
    enum mca_btl_devmem_devflow_rx_state rx_state;
    int rx_sd;
    mca_btl_devmem_polled_t rx_watch;
    struct mca_btl_devmem_dev *rx_dev; /* the module whose pool it lands in */
    int rx_qpos;                     /* its RX queue's place among rx_dev's queues; -1: not
                                      * known yet, -2: not knowable (real kernel) */
    struct devmem_ledger ledger;     /* open exactly while RX_OPEN */
    struct devmem_rx_stats counted;  /* ledger counters already added to the stats */
    opal_list_t gets;                /* gets and chunks of striped gets answered on it,
                                      * in request order */
    size_t head_got;                 /* bytes of the first of them already laid out */
    uint64_t expected;               /* bytes still owed to all of gets */
    size_t gathers;                  /* its receives whose gather may still run (in the open
                                      * batch or launched) */
    struct mca_btl_devmem_gather_pipe *pipe; /* whose: the progress thread's or a receiving
                                              * thread's (set at adoption) */
    void *rx_server_data;            /* the receiving-side server's (rx_server below) while
                                      * it serves the lane; NULL: the progress thread does */
    bool rx_failed;                  /* a gather of the lane failed: its gets are back on
                                      * the list out of order with the stream, so nothing
                                      * more is received on it until its endpoint fails */
    /* RX_CLAIMED: the connection we wait for */
    struct mca_btl_devmem_ip claim_addr; /* the control connection's peer */
    uint16_t claim_port;             /* host byte order */
};

/* An endpoint's lanes, made on first use (lane[i] NULL until then). Published whole:
 * btl_get looks at it from other threads; lanes are made and their states change under
 * the endpoint's lock. */
struct mca_btl_devmem_devflows {
    struct mca_btl_devmem_devflow *lane[MCA_BTL_DEVMEM_DEVFLOWS_MAX];
    unsigned int cursor; /* where the next search for the least loaded lane starts */
};

/* What the device flows keep of each peer, on its endpoint (mca_btl_devmem_endpoint_state):
 * the lanes to and from it, NULL until used, and lanes on demand (btl_devmem_devflow_lanes.c)
 * under the endpoint's lock. Asking side: whether we asked the peer for its lanes (enum
 * mca_btl_devmem_lanes_ask), the gets waiting for them, and when a get last took them
 * (seconds, mca_btl_devmem_devflow_clock); answering side: whether it asked us, and whether
 * we said none come. */
struct mca_btl_devmem_devflow_peer {
    struct mca_btl_devmem_devflows *devflows;
    uint8_t lanes_ask;
    uint32_t lanes_used;
    bool lanes_started;
    bool lanes_none_said;
    opal_list_t gets_parked;
};

/* What the device flows keep on a fragment (mca_btl_devmem_frag_state): a GET_RESP sent with
 * devmem TX holds its TX memory until the kernel has completed it; a chunk of a striped get
 * names its get, which counts its chunks not yet complete and keeps the first failure among
 * them. */
struct mca_btl_devmem_devflow_frag {
    struct mca_btl_devmem_txmem *txmem; /* held; given back when the fragment returns */
    uint64_t tx_off;                    /* ... starting at this offset of its region */
    size_t tx_queued, tx_done;          /* ... bytes the kernel took, and has completed */
    mca_btl_devmem_frag_t *parent;
    uint32_t chunks_left;
    int chunk_status;
};

extern size_t mca_btl_devmem_devflow_frag_handle;

static inline struct mca_btl_devmem_devflow_frag *
mca_btl_devmem_devflow_frag(const mca_btl_devmem_frag_t *f)
{
    return (struct mca_btl_devmem_devflow_frag *)
        mca_btl_devmem_frag_state(f, mca_btl_devmem_devflow_frag_handle);
}

extern size_t mca_btl_devmem_devflow_peer_handle;

static inline struct mca_btl_devmem_devflow_peer *
mca_btl_devmem_devflow_peer(const mca_btl_devmem_endpoint_t *ep)
{
    return mca_btl_devmem_endpoint_state(ep, mca_btl_devmem_devflow_peer_handle);
}

/* Lane `lane` of ep (< MCA_BTL_DEVMEM_DEVFLOWS_MAX), made on first use; NULL when out of
 * memory. */
struct mca_btl_devmem_devflow *mca_btl_devmem_devflow_of(mca_btl_devmem_endpoint_t *ep,
                                                         unsigned int lane);

/* Lane `lane` of ep if it was ever made, else NULL. Lanes are made when the peer asks for
 * them, while other threads' btl_get may look (devflow_of publishes them atomically). */
static inline struct mca_btl_devmem_devflow *
mca_btl_devmem_devflow_lane(const mca_btl_devmem_endpoint_t *ep, unsigned int lane)
{
    const struct mca_btl_devmem_devflows *set =
        __atomic_load_n(&mca_btl_devmem_devflow_peer(ep)->devflows, __ATOMIC_ACQUIRE);

    return NULL == set || lane >= MCA_BTL_DEVMEM_DEVFLOWS_MAX
               ? NULL
               : __atomic_load_n(&set->lane[lane], __ATOMIC_ACQUIRE);
}

/* The one way each side changes state: traced at btl_devmem_verbose 20 (old -> new, why),
 * the state's timer armed or disarmed. devflow_rx_state takes the endpoint's lock: the
 * caller must not hold it. */
void mca_btl_devmem_devflow_tx_state(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_devflow_tx_state s, const char *why);
void mca_btl_devmem_devflow_rx_state(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_devflow_rx_state s, const char *why);

/* Sending side of one lane: close it (orderly: queued answers get a bounded chance to
 * leave first); answers not sent or not completed complete with OPAL_ERR_UNREACH. why: the
 * reason its state gives (NULL: finalize or the endpoint's failure, as orderly says). */
void mca_btl_devmem_devflow_tx_close(struct mca_btl_devmem_devflow *df, bool orderly,
                                     const char *why);
/* Sending side: the lane's timer ran out while it connects (an attempt took too long, or the
 * pause before the next one is over). */
void mca_btl_devmem_devflow_tx_timeout(struct mca_btl_devmem_devflow *df);

/* Connects a lane tries before it falls back (each waits twice as long as the one before,
 * from handshake_timeout): the kernel retransmits a lost SYN after 1, 3 and 7 s, and a
 * fresh connect starts that backoff again. */
#define MCA_BTL_DEVMEM_CONNECT_ATTEMPTS 3

/* A side of a lane cannot be made or kept (sending: no descriptor to spare, its connects
 * failed; receiving: the connection it was promised never came). Returns true when the
 * lane may fall back to the control connection (counted in devflow_fallbacks, the first
 * time said at verbosity 1): the caller closes that side. false: btl_devmem_mode require
 * asks for the device path, and the endpoint has failed with why. */
bool mca_btl_devmem_devflow_fall_back(struct mca_btl_devmem_devflow *df, bool sending,
                                      const char *why);

/* Device-flow descriptors: whether one more fits the budget (btl_devmem_devflows' fds, by
 * default half of what was free at init; both directions and the unclaimed ones together,
 * so that control connections always find one), and the count of those the lanes hold. */
bool mca_btl_devmem_devflow_fd_spare(void);
/* The same from any thread, the lanes' descriptors alone (the unclaimed connections are the
 * dispatch lock's; a lane then refused for want of one falls back at its claim's timeout). */
bool mca_btl_devmem_devflow_fd_spare_lanes(void);
void mca_btl_devmem_devflow_fd_count(int delta);
/* That budget, in descriptors. */
unsigned long mca_btl_devmem_devflow_fd_budget(void);

/* Who serves the receiving side of open lanes: the progress thread (its watch set) unless a
 * server is registered (the receiving threads, btl_devmem_rxthread.c). take is
 * offered each lane as it opens: 0 when the server now serves it (it set df->pipe and
 * df->rx_server_data; both are written on the progress thread only), -errno to leave it to
 * the progress thread. give_back comes before a lane it took closes, on the progress thread:
 * the server stops looking at it, its receives are finished, and what the server's threads
 * finished is delivered. */
struct mca_btl_devmem_devflow_rx_server {
    int (*take)(void *ctx, struct mca_btl_devmem_devflow *df);
    void (*give_back)(void *ctx, struct mca_btl_devmem_devflow *df);
    void *ctx;
};
/* Register the server (NULL: none, the progress thread serves every lane). Only while no
 * lane is open. */
void mca_btl_devmem_devflow_rx_serve(const struct mca_btl_devmem_devflow_rx_server *server);

/* An adopted lane to its server: a receiving thread's, or the progress thread's watch set.
 * 0, or -errno when it cannot be watched. */
int mca_btl_devmem_devflow_rx_serve_lane(struct mca_btl_devmem_devflow *df);

/* What one turn of receiving on a lane came to. */
enum mca_btl_devmem_rx_step {
    MCA_BTL_DEVMEM_RX_IDLE,    /* nothing to read (or not the lane's turn any more) */
    MCA_BTL_DEVMEM_RX_DATA,    /* bytes received and handed to the gather */
    MCA_BTL_DEVMEM_RX_STARVED, /* the pool is full and none of its pages is this pipe's */
    MCA_BTL_DEVMEM_RX_EOF,     /* the peer closed the lane in order: close it */
    MCA_BTL_DEVMEM_RX_FAILED,  /* why (and err, an errno or 0) says; fail the endpoint */
};

/* Receiving side: one turn on open lane df, by whoever serves it (its pipe's thread, with
 * that thread's receive buffers b): receive what is there, up to a few receives, and hand it
 * to the gather. Changes no state of the lane: an EOF or failure is the caller's to act on,
 * through devflow_rx_ended on the progress thread. */
struct mca_btl_devmem_rx_tally {
    uint64_t receives, bytes; /* added to by each receive that brought bytes */
};
enum mca_btl_devmem_rx_step mca_btl_devmem_devflow_rx_step(struct mca_btl_devmem_devflow *df,
                                                            struct devmem_rx_batch *b, char *why,
                                                            size_t len, int *err,
                                                            struct mca_btl_devmem_rx_tally *tally);
/* The progress thread acts on what a turn came to: EOF closes the receiving side, FAILED
 * fails the endpoint (err: the errno to say, EPROTO or 0 for none). */
void mca_btl_devmem_devflow_rx_ended(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_rx_step how, const char *why, int err);
/* Receiving side: readiness callback of an adopted connection the progress thread serves
 * (arg: its lane). */
void mca_btl_devmem_devflow_rx_cb(int sd, short flags, void *arg);
/* Receiving side of one lane: tokens back, socket closed; gets and chunks still owed
 * complete with OPAL_ERR_UNREACH. */
void mca_btl_devmem_devflow_rx_close(struct mca_btl_devmem_devflow *df);
/* Receiving side: release what all flows share (component close). */
void mca_btl_devmem_devflow_rx_fini(void);
/* Add what df's ledger counted since last time to the component's counters. */
void mca_btl_devmem_devflow_rx_account(struct mca_btl_devmem_devflow *df);

/* The batched, pipelined gather (dispatch lock held, as receive callbacks are). */
/* Receive b on df (its tokens recorded in df's ledger): lay its pieces out over df's gets
 * into the open batch, launched when a get or chunk is finished or the batch holds an
 * eighth of the RX pool. Its tokens go back, and the gets it finished complete, when its
 * batch is done (gather_progress and the calls below). 0, or -1 with why (the receive's
 * gets are back at the head of df->gets, to fail with the lane). */
int mca_btl_devmem_devflow_gather(struct mca_btl_devmem_devflow *df, struct devmem_rx_batch *b,
                                  char *why, size_t len);
/* Wait until fewer than btl_devmem_gather_depth batches of p are in flight, finishing the
 * oldest. */
void mca_btl_devmem_devflow_gather_bound(struct mca_btl_devmem_gather_pipe *p);
/* Launch what of df is in the open batch of its pipe and wait until none of df's receives is
 * in flight, finishing them (and older ones of any lane on the way): tokens back, gets
 * completed, or failed where their gather failed. A completion or failure may close lanes,
 * df's included. */
void mca_btl_devmem_devflow_gather_settle(struct mca_btl_devmem_devflow *df);
/* Wait for the oldest batch of p (launching the open one when it is the oldest: a batch
 * never waits for pool pages it holds itself) and finish it; false when there is none. */
bool mca_btl_devmem_devflow_gather_wait_oldest(struct mca_btl_devmem_gather_pipe *p);
/* Finish the batches of p whose gather is done; how many. */
int mca_btl_devmem_devflow_gather_progress(struct mca_btl_devmem_gather_pipe *p);
/* Batches of p launched and not yet finished (the open batch waits for the network). */
bool mca_btl_devmem_devflow_gather_busy(const struct mca_btl_devmem_gather_pipe *p);
/* Free what p holds (its lanes have closed). */
void mca_btl_devmem_devflow_gather_fini(struct mca_btl_devmem_gather_pipe *p);

/* Lanes on demand (btl_devmem_devflow_lanes.c), dispatch lock held. Asking side: a lane from
 * ep's peer opened, or none will (why): the gets waiting for lanes are asked for now.
 * Answering side: a lane to ep's peer gave up; when none is left coming or open and the
 * peer asked, tell it none will come. */
void mca_btl_devmem_devflow_settle(mca_btl_devmem_endpoint_t *ep, const char *why);
void mca_btl_devmem_devflow_gave_up(mca_btl_devmem_endpoint_t *ep);
/* The connection closes (orderly: a failure took them already): the gets still waiting for
 * lanes end unreachable. */
void mca_btl_devmem_devflow_parked_fail(mca_btl_devmem_endpoint_t *ep);
/* Asking side: a lane of ep's peer opened; from now on this rank looks, every few seconds,
 * for peers whose lanes toward it have been unused for btl_devmem_devflows' idle=S, and asks
 * them to close those lanes (until devflow_idle_stop). */
void mca_btl_devmem_devflow_idle_watch(void);

/* Seconds on a monotonic clock, coarse: when lanes were last used (lanes_used). */
static inline uint32_t mca_btl_devmem_devflow_clock(void)
{
    struct timespec ts;

    (void) clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint32_t) ts.tv_sec;
}

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_DEVFLOW_INT_H */
