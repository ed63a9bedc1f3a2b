/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's use of devmem-helperd (btl_devmem_helper = auto | off | PATH): whether this
 * process asks the helper for its bindings and steering rules, and the one connection it
 * keeps while they live. Closing it, or the process dying, makes the helper undo them all.
 */
#ifndef MCA_BTL_DEVMEM_HELPER_H
#define MCA_BTL_DEVMEM_HELPER_H

#include "base/btl_devmem.h"
#include "sockets/btl_devmem_if.h"

#include "devmem/helper_client.h"
#include "devmem/kernel.h"

BEGIN_C_DECLS

/*
 * Decide from btl_devmem_helper and connect when the helper is to be used. auto: with the
 * real kernel, when this process lacks CAP_NET_ADMIN and a helper answers at the default
 * socket; never with the emulated kernel. A PATH must answer.
 * Returns 1 (connected), 0 (not used; why says so), or -errno (a helper was required and
 * could not be reached, or btl_devmem_helper is malformed; why says why).
 */
int mca_btl_devmem_helper_open(enum devmem_kernel_kind kind, char *why, size_t len);

/* The connection, NULL when the helper is not in use. */
struct devmem_helper_client *mca_btl_devmem_helper(void);

/* A TX binding of region on ifname through the helper. */
int mca_btl_devmem_helper_bind_tx(const char *ifname, const struct devmem_region *region,
                                  uint32_t *id, struct devmem_err *err);
/* Give one binding back (its rule and queues go with it). */
void mca_btl_devmem_helper_release(uint32_t id);

void mca_btl_devmem_helper_close(void);

/* A listening socket on itf's address for device flows that the helper will steer: bound to a port
 * chosen here, outside the kernel's ephemeral range, since the helper refuses ports the
 * kernel picked (shutdown() would release those while the rule stands); `want` first when
 * not 0 (one chosen so before). 0 or -errno. */
int mca_btl_devmem_helper_listen_socket(const struct mca_btl_devmem_if *itf, uint16_t want,
                                        int *fd, uint16_t *port);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_HELPER_H */
