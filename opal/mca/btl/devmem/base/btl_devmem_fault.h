/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection for the tests (btl_devmem_testing fault=...): one rank spoils one frame of its
 * own, so that a test can show what a peer's garbage does on the other side of a live connection:
 * that connection closes with a clear error and the job ends, never a crash or a hang. Or
 * (short-write) it writes every frame as a full socket lets it, a part first and the rest at the
 * next writable event, so that a test can show that no send the PML was told is done waits for
 * that event. Off unless the parameter names a fault.
 */
#ifndef MCA_BTL_DEVMEM_FAULT_H
#define MCA_BTL_DEVMEM_FAULT_H

#include "base/btl_devmem_frag.h"

BEGIN_C_DECLS

/* Read the fault, fault_rank and fault_after of btl_devmem_testing. OPAL_SUCCESS, or
 * OPAL_ERR_BAD_PARAM (said) for a fault it does not know. */
int mca_btl_devmem_fault_init(void);

/* Set while this rank has a fault still to inject: the one thing the write path looks at. */
extern bool mca_btl_devmem_fault_armed;

/* The frame at the head of queue is about to go on the wire from its first byte on sd.
 * 0: write it (perhaps spoiled); 1: part of it was written (short-write), stop as if the
 * socket were full; -EPIPE (or another -errno): the fault cut the connection here, stop
 * writing. Call only while mca_btl_devmem_fault_armed. */
int mca_btl_devmem_fault_frame(int sd, opal_list_t *queue);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_FAULT_H */
