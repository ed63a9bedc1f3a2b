/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows: per endpoint, one extra TCP connection in each direction that carries get
 * payloads only, so that a steering rule on the receiver's device-flow port sends exactly
 * those bytes into its devmem RX queue while control traffic stays on normal queues.
 *
 *   sending side  we connect to the peer's device-flow port and name the connection on the
 *                 control connection (a DEVFLOW fragment): nothing of ours travels on it
 *                 but raw payload, because the receiver's CPU may never see those bytes.
 *   receiving side an accepted connection is adopted by the endpoint whose control
 *                 connection named it; until then it is held, unread, for at most
 *                 handshake_timeout seconds.
 *
 * A get whose GET_REQ carries MCA_BTL_DEVMEM_FLAG_DEVFLOW is answered with its bytes on the
 * device flow, in request order; the receiver reads them with the devmem receive (kernel
 * interface real or emulated), copies each fragment out of its RX pool into the get's
 * destination, returns the tokens, then completes the get.
 */
#ifndef MCA_BTL_DEVMEM_DEVFLOW_H
#define MCA_BTL_DEVMEM_DEVFLOW_H

#include <netinet/in.h>

#include "btl_devmem_dev.h"
#include "btl_devmem_endpoint.h"

BEGIN_C_DECLS

/* The control connection to ep's peer is up: connect to its device-flow port, if it has one. */
void mca_btl_devmem_devflow_start(mca_btl_devmem_endpoint_t *ep);

/* A connection arrived on module dev's device-flow port from addr:port (host order). */
void mca_btl_devmem_devflow_accepted(struct mca_btl_devmem_dev *dev, int sd,
                                     const struct mca_btl_devmem_ip *addr, uint16_t port);

/* ep's peer names its device-flow connection (a checked DEVFLOW header). 0, or -1 when ep
 * failed. */
int mca_btl_devmem_devflow_claim(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h);

/* Take get (kind GET, hdr.size set) onto ep's incoming device flow if it can go there.
 * true: its GET_REQ must carry MCA_BTL_DEVMEM_FLAG_DEVFLOW; false: use the control path. */
bool mca_btl_devmem_devflow_get(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get);

/* The peer asks for h->size bytes at h->addr on our device flow to it. 0, or -1 when ep
 * failed (also when we have no device flow to that peer: a protocol error). */
int mca_btl_devmem_devflow_answer(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h);

/* Close both directions. orderly: give queued sends a bounded chance to leave first.
 * Queued sends and gets still waiting complete with OPAL_ERR_UNREACH. */
void mca_btl_devmem_devflow_close(mca_btl_devmem_endpoint_t *ep, bool orderly);

/* Free ep's device-flow state (closed first). */
void mca_btl_devmem_devflow_free(mca_btl_devmem_endpoint_t *ep);

/* The socket of ep's outgoing device flow, -1 when there is none (liveness checks). */
int mca_btl_devmem_devflow_tx_socket(const mca_btl_devmem_endpoint_t *ep);

/* Bytes of gets queued on ep's incoming device flow, for diagnostics. */
size_t mca_btl_devmem_devflow_pending(const mca_btl_devmem_endpoint_t *ep);

/* Drop connections nobody claimed (component close). */
void mca_btl_devmem_devflow_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_DEVFLOW_H */
