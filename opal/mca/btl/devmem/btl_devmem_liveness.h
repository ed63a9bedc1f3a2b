/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Noticing a peer behind a cut link (btl_devmem_peer_timeout). Once a second, every
 * connection with data in flight is asked (TCP_INFO) how long ago the peer last
 * acknowledged anything; past the timeout the peer counts as lost and the job ends naming
 * it. A peer that answers window probes but does not read (a rank busy outside MPI) keeps
 * acknowledging, so it is never taken for dead, unlike with TCP_USER_TIMEOUT, which the
 * kernel also applies to a closed window. The side that only waits is covered by keepalive
 * (keepalive probes from half of btl_devmem_peer_timeout on).
 */
#ifndef MCA_BTL_DEVMEM_LIVENESS_H
#define MCA_BTL_DEVMEM_LIVENESS_H

#include "base/btl_devmem.h"

BEGIN_C_DECLS

/* Start the once-a-second check (nothing when btl_devmem_peer_timeout is 0). */
void mca_btl_devmem_liveness_start(void);
void mca_btl_devmem_liveness_stop(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_LIVENESS_H */
