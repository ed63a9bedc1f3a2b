/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management; see btl_devmem_conn.h.
 *
 * Either side may connect first. The connector sends a hello; the acceptor checks it, finds
 * the endpoint of the process it names and hands the socket over. When both sides connect
 * at once, the connection opened by the process with the lower name wins: the other side
 * is told to DEFER and waits for the winner's connection, which is already on its way.
 *
 * Strangers: anything that connects to a listen socket gets handshake_timeout seconds to
 * send a valid hello with our secret; otherwise it is closed and counted, and the job never
 * notices.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/util/proc.h"

#include "sockets/btl_devmem_sock.h"
#include "connections/btl_devmem_conn.h"

/* ---------------------------------------------------------------- states */

/*
 * The endpoint's states. `timed`: a state that waits for the network, left by the timeout
 * (handshake_timeout seconds) at the latest; see conn_timeout for what expiry does.
 */
static const struct {
    const char *name;
    bool timed;
} ep_states[] = {
    /* entered: at construction; from WAIT_PEER when the peer's own connection is late.
     * left: a send connects (CONNECTING); a valid hello is accepted (CONNECTED) */
    [MCA_BTL_DEVMEM_EP_CLOSED] = {"closed", false},
    /* entered: a send found no connection; the non-blocking connect is under way.
     * left: writable, hello sent (CONNECT_ACK); a winning hello from the peer (CONNECTED);
     * failure or timeout (FAILED) */
    [MCA_BTL_DEVMEM_EP_CONNECTING] = {"connecting", true},
    /* entered: our hello is sent. left: ACCEPT (CONNECTED), DEFER (WAIT_PEER), a winning
     * hello from the peer (CONNECTED), a bad reply, failure or timeout (FAILED) */
    [MCA_BTL_DEVMEM_EP_CONNECT_ACK] = {"waiting for handshake reply", true},
    /* entered: the peer deferred ours, its own connection is on its way. left: its hello
     * (CONNECTED); the timeout (CLOSED, then connecting again) */
    [MCA_BTL_DEVMEM_EP_WAIT_PEER] = {"waiting for the peer's connection", true},
    /* entered: the handshake completed, either side. left: FIN either way (SHUTDOWN), a
     * lost connection or a protocol error (FAILED) */
    [MCA_BTL_DEVMEM_EP_CONNECTED] = {"connected", false},
    /* entered: the peer's FIN, or our own at finalize. left: only for FAILED (an error
     * before the peer's EOF) */
    [MCA_BTL_DEVMEM_EP_SHUTDOWN] = {"shut down", false},
    /* entered: from any state but itself, on failure; final: sends fail at once */
    [MCA_BTL_DEVMEM_EP_FAILED] = {"failed", false},
};

const char *mca_btl_devmem_endpoint_state_str(enum mca_btl_devmem_ep_state s)
{
    return (unsigned) s < sizeof(ep_states) / sizeof(ep_states[0]) ? ep_states[s].name : "?";
}

static int timeout_secs(void)
{
    int secs = mca_btl_devmem_component.handshake_timeout;

    return secs > 0 ? secs : 1;
}

static void conn_timeout(int fd, short flags, void *arg);

void mca_btl_devmem_conn_init(mca_btl_devmem_endpoint_t *ep)
{
    ep->timer_armed = false;
    ep->conn_attempts = 0;
    opal_event_evtimer_set(opal_sync_event_base, &ep->timer, conn_timeout, ep);
}

void mca_btl_devmem_conn_fini(mca_btl_devmem_endpoint_t *ep)
{
    if (ep->timer_armed) {
        opal_event_del(&ep->timer);
        ep->timer_armed = false;
    }
}

void mca_btl_devmem_conn_set_state(mca_btl_devmem_endpoint_t *ep,
                                   enum mca_btl_devmem_ep_state s, const char *why)
{
    enum mca_btl_devmem_ep_state old = ep->state;

    DEVMEM_VERBOSE(20, "%s via %s: %s -> %s (%s)", OPAL_NAME_PRINT(ep->peer->name),
                   ep->module->itf.name, ep_states[old].name, ep_states[s].name, why);
    ep->state = s;
    if (ep->timer_armed) {
        opal_event_del(&ep->timer);
        ep->timer_armed = false;
    }
    if (ep_states[s].timed) {
        /* each connect attempt waits twice as long as the one before */
        unsigned int shift = MCA_BTL_DEVMEM_EP_CONNECTING == s && ep->conn_attempts > 1
                                 ? ep->conn_attempts - 1 : 0;
        struct timeval tv = {timeout_secs() << (shift < 4 ? shift : 4), 0};

        opal_event_evtimer_add(&ep->timer, &tv);
        ep->timer_armed = true;
    }
}

/* Connects to a peer before it counts as lost: the kernel retransmits a lost SYN after 1, 3
 * and 7 s, and a fresh connect (after handshake_timeout, doubled each time) starts that
 * backoff again; one with its hello dropped unanswered is tried again too. */
#define CONNECT_ATTEMPTS 3

/* Connect again after a failed attempt, when attempts are left. Lock held. 0 when under
 * way, -errno from the connect, or 1 when no attempt is left. */
static int conn_retry(mca_btl_devmem_endpoint_t *ep, const char *what)
{
    if (ep->conn_attempts >= CONNECT_ATTEMPTS) {
        return 1;
    }
    DEVMEM_VERBOSE(10, "%s via %s: %s (attempt %u of %d); connecting again",
                   OPAL_NAME_PRINT(ep->peer->name), ep->module->itf.name, what,
                   ep->conn_attempts, CONNECT_ATTEMPTS);
    mca_btl_devmem_endpoint_detach(ep);
    mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_CLOSED, what);
    return mca_btl_devmem_conn_start(ep);
}

/*
 * A waiting state outlived its timer. CONNECTING connects again, up to CONNECT_ATTEMPTS,
 * then fails the endpoint (the job ends naming the peer): the peer's kernel did not take the
 * connection. CONNECT_ACK waits on as
 * long as the peer's kernel has acknowledged our hello: the answer needs the peer to call
 * into MPI, and a rank may compute for minutes before its first call; with the hello
 * unacknowledged for the whole period the peer's host is gone, and the endpoint fails. WAIT_PEER
 * connects again rather than failing: the peer only promised that its own connection was
 * coming, and a peer that is merely slow to progress would otherwise end a correct job;
 * connecting again either meets the peer's connection (the lower name still wins, so both
 * sides agree) or finds the peer gone, and then fails with the connect's own error.
 */
static void conn_timeout(int fd, short flags, void *arg)
{
    mca_btl_devmem_endpoint_t *ep = arg;
    char why[160];
    int rc = 0;

    mca_btl_devmem_dispatch_lock(); /* a libevent timer: out of the callbacks' way */
    OBJ_RETAIN(ep);
    OPAL_THREAD_LOCK(&ep->lock);
    ep->timer_armed = false;
    if (MCA_BTL_DEVMEM_EP_CONNECT_ACK == ep->state
        && mca_btl_devmem_sock_unacked_for(ep->sd) < (unsigned int) timeout_secs()) {
        DEVMEM_VERBOSE(10, "%s has not answered our hello for %d s; its host acknowledged it: "
                       "waiting on", OPAL_NAME_PRINT(ep->peer->name), timeout_secs());
        mca_btl_devmem_conn_set_state(ep, ep->state, "still waiting for the peer's answer");
        OPAL_THREAD_UNLOCK(&ep->lock);
        OBJ_RELEASE(ep);
        mca_btl_devmem_dispatch_unlock();
        return;
    }
    switch (ep->state) {
    case MCA_BTL_DEVMEM_EP_WAIT_PEER:
        DEVMEM_VERBOSE(10, "%s deferred our connection, but its own did not arrive within "
                       "%d s: connecting again", OPAL_NAME_PRINT(ep->peer->name),
                       timeout_secs());
        mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_CLOSED, "the peer's is late");
        rc = mca_btl_devmem_conn_start(ep);
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (rc < 0) {
            mca_btl_devmem_endpoint_fail(ep, "cannot connect", -rc);
        }
        break;
    case MCA_BTL_DEVMEM_EP_CONNECTING:
        rc = conn_retry(ep, "the connection was not established in time");
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (rc < 0) {
            mca_btl_devmem_endpoint_fail(ep, "cannot connect", -rc);
        } else if (rc > 0) {
            snprintf(why, sizeof(why), "the connection was not established in %u attempts "
                     "(btl_devmem_handshake_timeout %d s, doubled each time)",
                     ep->conn_attempts, timeout_secs());
            mca_btl_devmem_endpoint_fail(ep, why, 0);
        }
        break;
    case MCA_BTL_DEVMEM_EP_CONNECT_ACK:
        snprintf(why, sizeof(why), "the peer's host did not acknowledge our hello within %d s "
                 "(btl_devmem_handshake_timeout)", timeout_secs());
        OPAL_THREAD_UNLOCK(&ep->lock);
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        break;
    default:
        OPAL_THREAD_UNLOCK(&ep->lock);
        break;
    }
    OBJ_RELEASE(ep);
    mca_btl_devmem_dispatch_unlock();
}

/* ---------------------------------------------------------------- connector */

static int rx_buffers_ready(mca_btl_devmem_endpoint_t *ep)
{
    size_t want = MCA_BTL_DEVMEM_RECV_BUFFER;
    size_t eager_frame = ep->module->super.btl_eager_limit + sizeof(struct mca_btl_devmem_hdr);

    if (want < eager_frame) {
        want = eager_frame; /* eager frames are always delivered from the buffer */
    }
    return mca_btl_devmem_rxframe_start(&ep->rx, want);
}

int mca_btl_devmem_conn_start(mca_btl_devmem_endpoint_t *ep)
{
    int sd;

    ep->conn_attempts++;
    DEVMEM_VERBOSE(20, "connecting to %s via %s", OPAL_NAME_PRINT(ep->peer->name),
                   ep->module->itf.name);
    sd = mca_btl_devmem_connect_socket(&ep->module->itf, &ep->remote, ep->remote.port);
    if (sd < 0) {
        return sd;
    }
    mca_btl_devmem_endpoint_attach(ep, sd);
    mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_CONNECTING, "a send needs the peer");
    return mca_btl_devmem_pollset_add(&ep->watch, OPAL_EV_WRITE); /* writable = connect finished */
}

/* Write a whole small buffer to a fresh socket (a hello or its reply). */
static int send_small(int sd, const void *buf, size_t len)
{
    ssize_t n;

    do {
        n = send(sd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && EINTR == errno);
    if (n < 0) {
        return -errno;
    }
    return (size_t) n == len ? 0 : -EAGAIN;
}

static void local_name(uint32_t *jobid, uint32_t *vpid)
{
    const opal_proc_t *me = opal_proc_local_get();
    *jobid = me->proc_name.jobid;
    *vpid = me->proc_name.vpid;
}

/* The non-blocking connect finished: check it and send our hello. */
void mca_btl_devmem_conn_connect_done(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_hello hello;
    int err = 0, rc;
    socklen_t len = sizeof(err);
    uint32_t jobid, vpid;

    OPAL_THREAD_LOCK(&ep->lock);
    if (0 != getsockopt(ep->sd, SOL_SOCKET, SO_ERROR, &err, &len)) {
        err = errno;
    }
    if (0 == err) {
        local_name(&jobid, &vpid);
        mca_btl_devmem_hello_init(&hello, MCA_BTL_DEVMEM_HELLO_REQUEST, jobid, vpid,
                                  ep->peer->secret, ep->remote.module,
                                  (uint32_t) ep->module->super.btl_max_send_size);
        rc = send_small(ep->sd, &hello, sizeof(hello));
        err = rc < 0 ? -rc : 0;
    }
    if (0 == err) {
        mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_CONNECT_ACK, "connected; hello sent");
        ep->reply_got = 0;
        rc = mca_btl_devmem_pollset_del(&ep->watch, OPAL_EV_WRITE);
        if (0 == rc) {
            rc = mca_btl_devmem_pollset_add(&ep->watch, OPAL_EV_READ);
        }
        err = rc < 0 ? -rc : 0;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (0 != err) {
        mca_btl_devmem_endpoint_fail(ep, "connect failed", err);
    }
}

/* The handshake is complete on ep->sd: start moving data. Called with the lock held. */
static int become_connected(mca_btl_devmem_endpoint_t *ep, uint32_t peer_frag_limit)
{
    int rc = rx_buffers_ready(ep);
    if (rc < 0) {
        return rc;
    }
    ep->rx.limits.frag_limit = peer_frag_limit;
    ep->rx.limits.put_limit = ep->module->super.btl_put_limit > UINT32_MAX
                               ? UINT32_MAX
                               : ep->module->super.btl_put_limit;
    mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_CONNECTED, "handshake complete");
    rc = mca_btl_devmem_pollset_add(&ep->watch, OPAL_EV_READ);
    if (rc < 0) {
        return rc;
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.conn_made, 1);
    DEVMEM_VERBOSE(10, "connected to %s on host %s via %s", OPAL_NAME_PRINT(ep->peer->name),
                   mca_btl_devmem_endpoint_peer_host(ep), ep->module->itf.name);
    return 0;
}

/*
 * Either side of the handshake succeeded: become connected and write what was queued while
 * connecting (device flows open later, when the peer asks: btl_devmem_devflow_lanes.c).
 * Called with the lock held; returns with it dropped. 0, or -errno after the endpoint failed.
 */
static int start_connected(mca_btl_devmem_endpoint_t *ep, uint32_t peer_frag_limit)
{
    int rc = become_connected(ep, peer_frag_limit);

    if (0 == rc) {
        rc = mca_btl_devmem_endpoint_flush_unlock(ep);
    } else {
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
    if (rc < 0) {
        mca_btl_devmem_endpoint_fail(ep, "cannot start the connection", -rc);
        return rc;
    }
    return 0;
}

/* Read the acceptor's reply (connector side). */
void mca_btl_devmem_conn_read_reply(mca_btl_devmem_endpoint_t *ep)
{
    ssize_t n;
    enum mca_btl_devmem_check chk;

    OPAL_THREAD_LOCK(&ep->lock);
    n = recv(ep->sd, (char *) &ep->reply + ep->reply_got, sizeof(ep->reply) - ep->reply_got, 0);
    if (n < 0 && (EAGAIN == errno || EINTR == errno)) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    if (n <= 0) {
        int err = 0 == n ? 0 : errno, rc = 1;

        /* closed with no word of reply: the peer dropped it unread (its port had more
         * connections waiting than it keeps, or it was out of descriptors): try again */
        if (0 == ep->reply_got && (0 == n || ECONNRESET == err)) {
            rc = conn_retry(ep, "the peer closed our connection before answering");
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (rc != 0) {
            mca_btl_devmem_endpoint_fail(ep, 0 == n ? "the peer closed the connection during the "
                                                      "handshake"
                                                    : "handshake failed",
                                         rc < 0 ? -rc : err);
        }
        return;
    }
    ep->reply_got += n;
    if (ep->reply_got < sizeof(ep->reply)) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    chk = mca_btl_devmem_hello_check(&ep->reply, false, mca_btl_devmem_component.secret);
    if (MCA_BTL_DEVMEM_CHECK_OK == chk
        && (ep->reply.jobid != ep->peer->name.jobid || ep->reply.vpid != ep->peer->name.vpid)) {
        chk = MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
    }
    if (MCA_BTL_DEVMEM_CHECK_OK != chk) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        mca_btl_devmem_endpoint_abort(ep, mca_btl_devmem_check_str(chk));
        return;
    }
    if (MCA_BTL_DEVMEM_HELLO_DEFER == ep->reply.status) {
        /* simultaneous connect: the peer's own connection is on its way to us */
        DEVMEM_VERBOSE(20, "%s deferred our connection; waiting for its own",
                       OPAL_NAME_PRINT(ep->peer->name));
        mca_btl_devmem_endpoint_detach(ep);
        ep->conn_attempts = 0; /* it answered: alive */
        mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_WAIT_PEER, "the peer deferred ours");
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    (void) start_connected(ep, ep->reply.frag_limit);
}

/* ---------------------------------------------------------------- acceptor */

/*
 * An incoming connection passed the hello checks and names this endpoint's peer. Applies
 * the simultaneous-connect rule; returns the status replied with (HELLO_ACCEPT: the
 * endpoint took the socket; HELLO_DEFER: closed here, ours wins) or -errno after ep failed.
 */
static int endpoint_accept(mca_btl_devmem_endpoint_t *ep, int sd,
                           const struct mca_btl_devmem_hello *hello)
{
    struct mca_btl_devmem_hello reply;
    const opal_proc_t *me = opal_proc_local_get();
    uint16_t status = MCA_BTL_DEVMEM_HELLO_ACCEPT;
    int rc;

    OPAL_THREAD_LOCK(&ep->lock);
    switch (ep->state) {
    case MCA_BTL_DEVMEM_EP_CLOSED:
    case MCA_BTL_DEVMEM_EP_WAIT_PEER:
        break;
    case MCA_BTL_DEVMEM_EP_CONNECTING:
    case MCA_BTL_DEVMEM_EP_CONNECT_ACK:
        /* both sides connected at once: the lower name's connection wins */
        if (opal_compare_proc(me->proc_name, ep->peer->name) < 0) {
            status = MCA_BTL_DEVMEM_HELLO_DEFER;
        } else {
            mca_btl_devmem_endpoint_detach(ep);
        }
        break;
    default:
        status = MCA_BTL_DEVMEM_HELLO_DEFER;
        DEVMEM_VERBOSE(10, "refusing a second connection from %s (endpoint %s)",
                       OPAL_NAME_PRINT(ep->peer->name),
                       mca_btl_devmem_endpoint_state_str(ep->state));
        break;
    }
    mca_btl_devmem_hello_init(&reply, status, me->proc_name.jobid, me->proc_name.vpid,
                              hello->secret == mca_btl_devmem_component.secret
                                  ? ep->peer->secret : 0,
                              ep->module->index, (uint32_t) ep->module->super.btl_max_send_size);
    rc = send_small(sd, &reply, sizeof(reply));
    if (MCA_BTL_DEVMEM_HELLO_DEFER == status || rc < 0) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        close(sd);
        return rc < 0 ? rc : status;
    }
    mca_btl_devmem_endpoint_attach(ep, sd);
    rc = start_connected(ep, hello->frag_limit);
    return rc < 0 ? rc : status;
}

/* A held connection said something: once its hello is whole, check it and give the
 * socket to its endpoint. */
static void hello_read(mca_btl_devmem_held_t *pa)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    mca_btl_devmem_module_t *m = pa->owner;
    enum mca_btl_devmem_check chk;
    struct mca_btl_devmem_hello hello;
    opal_process_name_t name;
    mca_btl_devmem_proc_t *peer;
    mca_btl_base_endpoint_t *ep;
    int rc, sd;

    if (1 != mca_btl_devmem_held_hello(pa)) {
        return;
    }
    chk = mca_btl_devmem_hello_check(&pa->hello, true, c->secret);
    if (MCA_BTL_DEVMEM_CHECK_OK != chk) {
        mca_btl_devmem_held_drop(pa, MCA_BTL_DEVMEM_HELD_STRANGER, mca_btl_devmem_check_str(chk));
        return;
    }
    if (pa->hello.link != m->index) {
        mca_btl_devmem_held_drop(pa, MCA_BTL_DEVMEM_HELD_STRANGER,
                                 "hello names another module than the one it reached");
        return;
    }
    name.jobid = pa->hello.jobid;
    name.vpid = pa->hello.vpid;
    peer = mca_btl_devmem_proc_lookup_or_add(&name);
    ep = NULL;
    /* the endpoint on this module may not exist yet, whether the peer is new or add_procs
     * (which makes the proc before its endpoints, module by module) runs in another thread
     * right now: made here, once, as add_procs would */
    if (NULL != peer) {
        (void) mca_btl_devmem_proc_endpoint(peer, m, &ep);
    }
    if (NULL == ep) {
        mca_btl_devmem_held_drop(pa, MCA_BTL_DEVMEM_HELD_STRANGER,
                                 "the process it names is not one we can reach on this module");
        return;
    }
    /* the socket now belongs to the endpoint (or is closed by it) */
    hello = pa->hello;
    sd = mca_btl_devmem_held_take(pa);
    rc = endpoint_accept(ep, sd, &hello);
    DEVMEM_VERBOSE(20, "accepted a connection from %s: %s", OPAL_NAME_PRINT(name),
                   MCA_BTL_DEVMEM_HELLO_ACCEPT == rc ? "taken"
                   : MCA_BTL_DEVMEM_HELLO_DEFER == rc ? "deferred to ours" : "failed");
}

/* A connection reached module arg's listen socket: it has handshake_timeout to say hello. */
static void accepted(void *arg, int sd, const struct mca_btl_devmem_ip *addr, uint16_t port)
{
    mca_btl_devmem_module_t *m = arg;
    mca_btl_devmem_held_t *h;

    mca_btl_devmem_tune_socket(sd);
    h = mca_btl_devmem_held_new(&mca_btl_devmem_component.pending_accepts, sd, addr, port, m,
                                &m->listener, m->itf.name, "connection",
                                "no hello before the handshake timeout", hello_read);
    if (NULL != h) {
        hello_read(h); /* a peer sends its hello as its connect completes: often here now */
    }
}

void mca_btl_devmem_conn_listener_init(mca_btl_devmem_module_t *m)
{
    mca_btl_devmem_listener_init(&m->listener, m->itf.name, accepted, m);
}

