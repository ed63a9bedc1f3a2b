/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management, both sides: the connector (connect, hello, reply), the acceptor
 * (a stranger's hello checked, its peer found, the simultaneous-connect rule), the
 * endpoint's connection states and their timeouts. Every state change goes through
 * mca_btl_devmem_conn_set_state, which traces it at verbosity 20.
 */
#ifndef MCA_BTL_DEVMEM_CONN_H
#define MCA_BTL_DEVMEM_CONN_H

#include "connections/btl_devmem_endpoint.h"

BEGIN_C_DECLS

/* The endpoint's timer, made with it and gone with it. */
void mca_btl_devmem_conn_init(mca_btl_devmem_endpoint_t *ep);
void mca_btl_devmem_conn_fini(mca_btl_devmem_endpoint_t *ep);

/* Move ep to state s for the reason why (for the trace); arms or stops the state's timeout.
 * Called with ep->lock held. */
void mca_btl_devmem_conn_set_state(mca_btl_devmem_endpoint_t *ep,
                                   enum mca_btl_devmem_ep_state s, const char *why);

/* Start connecting to the peer (a send found ep CLOSED). Called with ep->lock held.
 * 0, or -errno (the caller fails ep once it has dropped the lock). */
int mca_btl_devmem_conn_start(mca_btl_devmem_endpoint_t *ep);

/* ep's socket is writable in CONNECTING: the connect finished; send our hello. */
void mca_btl_devmem_conn_connect_done(mca_btl_devmem_endpoint_t *ep);

/* ep's socket is readable in CONNECT_ACK: read the acceptor's reply. */
void mca_btl_devmem_conn_read_reply(mca_btl_devmem_endpoint_t *ep);

/* Set up module m's listener (its socket comes later): every connection it accepts has
 * handshake_timeout seconds to say a valid hello. */
void mca_btl_devmem_conn_listener_init(mca_btl_devmem_module_t *m);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_CONN_H */
