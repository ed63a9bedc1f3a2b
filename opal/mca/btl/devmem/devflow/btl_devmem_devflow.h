/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows: per endpoint, extra TCP connections in each direction (lanes, up to
 * btl_devmem_devflows) that carry get payloads only, so that a steering rule on the
 * receiver's device-flow port sends exactly those bytes into its devmem RX queues while
 * control traffic stays on normal queues. One TCP flow is one core's softirq: several lanes
 * let a large get arrive on several at once.
 *
 *   sending side  we connect to the peer's device-flow port once per lane and name each
 *                 connection on the control connection (a DEVFLOW fragment with its lane):
 *                 nothing of ours travels on it but raw payload, because the receiver's
 *                 CPU may never see those bytes.
 *   receiving side an accepted connection is adopted by the endpoint whose control
 *                 connection named it; until then it is held, unread, for at most
 *                 handshake_timeout seconds.
 *
 * A get whose GET_REQ carries MCA_BTL_DEVMEM_FLAG_DEVFLOW is answered with its bytes on the
 * lane the request names, in the order of that lane's requests; the receiver reads them
 * with the devmem receive (kernel interface real or emulated), copies each fragment out of
 * its RX pool into the get's destination, returns the tokens, then completes the get. A get
 * of at least two chunks (btl_devmem_devflow_chunk) is cut into chunks, each asked on the
 * least loaded open lane (btl_devmem_devflow_stripe.c); the last chunk in completes it.
 */
#ifndef MCA_BTL_DEVMEM_DEVFLOW_H
#define MCA_BTL_DEVMEM_DEVFLOW_H

#include <netinet/in.h>

#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_endpoint.h"
#include "rdma/btl_devmem_rdma.h"

BEGIN_C_DECLS

/* ep's peer asked for our lanes: connect to its device-flow port, if it has one. */
void mca_btl_devmem_devflow_start(mca_btl_devmem_endpoint_t *ep);

/* Lanes on demand (btl_devmem_devflow_lanes.c). Under ep's lock, as a get that could take
 * lanes is placed: the rdma layer's park (btl_devmem_rdma.h). After it, when it said so:
 * ask the peer for its lanes. */
int mca_btl_devmem_devflow_park(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get);
void mca_btl_devmem_devflow_ask(mca_btl_devmem_endpoint_t *ep);
/* A LANES frame from ep's peer (checked). */
void mca_btl_devmem_devflow_lanes(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h);

/* A connection arrived on module dev's device-flow port from addr:port (host order). */
void mca_btl_devmem_devflow_accepted(struct mca_btl_devmem_dev *dev, int sd,
                                     const struct mca_btl_devmem_ip *addr, uint16_t port);

/* ep's peer names its device-flow connection (a checked DEVFLOW header). 0, or -1 when ep
 * failed. */
int mca_btl_devmem_devflow_claim(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h);

/* Before asking for a get of size bytes from ep: how it would be cut. Returns the inline
 * bytes its GET_REQ fragment needs for the further chunks' requests (0: not cut). */
size_t mca_btl_devmem_devflow_stripe_prepare(mca_btl_devmem_endpoint_t *ep, size_t size,
                                             struct mca_btl_devmem_stripe *stripe);

/* Give back what stripe holds and the placement did not take. */
void mca_btl_devmem_devflow_stripe_release(struct mca_btl_devmem_stripe *stripe);

/* Whether get (a get fragment, hdr.size set) belongs on the control connection whatever the
 * lanes: a destination in host memory while ep's RX pool is device memory, which would cost
 * a device-to-host copy per packet. Asked before devflow_place_get, which does not ask again. */
bool mca_btl_devmem_devflow_host_stays(const mca_btl_devmem_endpoint_t *ep,
                                       const mca_btl_devmem_frag_t *get);

/* Under ep's lock, as its GET_REQ req (prepared, addr and size set, inline space from
 * stripe_prepare) is placed: take get (a get fragment, hdr.size set) onto ep's open lanes if it
 * can go there, whole or in chunks, and make req ask for it (flag, lane, and one request
 * per chunk). false: use the control path, req untouched. */
bool mca_btl_devmem_devflow_place_get(mca_btl_devmem_endpoint_t *ep,
                                      mca_btl_devmem_frag_t *get, mca_btl_devmem_frag_t *req,
                                      struct mca_btl_devmem_stripe *stripe);

/* The peer asks for h->size bytes at h->addr on our device-flow lane h->tag to it. 0, or
 * -1 when ep failed (also when we have no such lane to that peer: a protocol error). */
int mca_btl_devmem_devflow_answer(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h);

/* The receiving side's work the progress thread does besides its sockets: finish the
 * receives of its own lanes whose gather is done (btl_devmem_devflow_gather.c), oldest
 * first, and say how many; never blocks. Dispatch lock held. */
int mca_btl_devmem_devflow_rx_progress(void);
/* Whether a receive of the progress thread's lanes is still gathering. */
bool mca_btl_devmem_devflow_rx_busy(void);

/* Close both directions. orderly: give queued sends a bounded chance to leave first.
 * Queued sends and gets still waiting complete with OPAL_ERR_UNREACH. */
void mca_btl_devmem_devflow_close(mca_btl_devmem_endpoint_t *ep, bool orderly);

/* Free ep's device-flow state (closed first). */
void mca_btl_devmem_devflow_free(mca_btl_devmem_endpoint_t *ep);

/* The socket of ep's outgoing device-flow lane, -1 when there is none (liveness checks). */
int mca_btl_devmem_devflow_tx_socket(const mca_btl_devmem_endpoint_t *ep, unsigned int lane);

/* Bytes of gets queued on ep's incoming device flows, for diagnostics. */
size_t mca_btl_devmem_devflow_pending(const mca_btl_devmem_endpoint_t *ep);

/* Stop looking for idle lanes to retire (before the endpoints go). */
void mca_btl_devmem_devflow_idle_stop(void);

/* Register what the device flows keep of each peer with the endpoint (at init). */
int mca_btl_devmem_devflow_init(void);

/* Drop connections nobody claimed (component close). */
void mca_btl_devmem_devflow_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_DEVFLOW_H */
