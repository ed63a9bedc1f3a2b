/*
 * What the three device-flow files share (not for the rest of the component):
 *   btl_devmem_devflow.c     naming: connections held until a control connection claims
 *                            them, adoption, closing
 *   btl_devmem_devflow_tx.c  the sending side: connecting, answering gets (devmem TX or
 *                            plain writes), zerocopy completions
 *   btl_devmem_devflow_rx.c  the receiving side: gets in stream order, devmem receives,
 *                            the gather into destinations, tokens back
 */
#ifndef MCA_BTL_DEVMEM_DEVFLOW_INT_H
#define MCA_BTL_DEVMEM_DEVFLOW_INT_H

#include "btl_devmem_devflow.h"
#include "btl_devmem_sock.h"

#include "devmem/rx.h"
#include "devmem/tx.h"

BEGIN_C_DECLS

struct mca_btl_devmem_devflow {
    /* sending side: our connection to the peer's device-flow port */
    int tx_sd;
    mca_btl_devmem_watch_t tx_watch; /* write: room to send; read: completions on the error
                                      * queue (real kernel) or the peer closing */
    opal_list_t tx_queue;           /* raw GET_RESP frags (no header on the wire) */
    opal_list_t tx_wait;            /* devmem TX frags sent, awaiting their completions */
    struct devmem_tx_tracker tracker; /* zerocopy notification ids of those sends */
    bool tracker_ready;
    bool tx_zerocopy;               /* SO_ZEROCOPY is on: devmem TX may be used */
    /* receiving side: the peer's connection to our port, once claimed */
    int rx_sd;
    mca_btl_devmem_watch_t rx_watch;
    struct mca_btl_devmem_dev *rx_dev; /* the module whose pool it lands in */
    struct devmem_ledger ledger;
    bool ledger_open;
    struct devmem_rx_stats counted;  /* ledger counters already added to the stats */
    opal_list_t gets;                /* gets answered on it, in request order */
    size_t head_got;                 /* bytes of the first get already in place */
    uint64_t expected;               /* bytes still owed to all of gets */
    /* a claim that arrived before its connection */
    bool claim_pending;
    struct mca_btl_devmem_ip claim_addr; /* the control connection's peer */
    uint16_t claim_port;             /* host byte order */
};

/* ep's device-flow state, made on first use; NULL when out of memory. */
struct mca_btl_devmem_devflow *mca_btl_devmem_devflow_of(mca_btl_devmem_endpoint_t *ep);

/* Sending side: close it (orderly: queued answers get a bounded chance to leave first);
 * answers not sent or not completed complete with OPAL_ERR_UNREACH. */
void mca_btl_devmem_devflow_tx_close(mca_btl_devmem_endpoint_t *ep, bool orderly);

/* Receiving side: readiness callback of an adopted connection (arg: the endpoint). */
void mca_btl_devmem_devflow_rx_cb(int sd, short flags, void *arg);
/* Receiving side: tokens back, socket closed; gets still owed complete with
 * OPAL_ERR_UNREACH. */
void mca_btl_devmem_devflow_rx_close(mca_btl_devmem_endpoint_t *ep);
/* Receiving side: release what all flows share (component close). */
void mca_btl_devmem_devflow_rx_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_DEVFLOW_INT_H */
