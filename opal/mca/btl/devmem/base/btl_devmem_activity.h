/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lower layers tell the idle policy (btl_devmem_progress.h) without calling it:
 * counters it reads at each progress call.
 */
#ifndef MCA_BTL_DEVMEM_ACTIVITY_H
#define MCA_BTL_DEVMEM_ACTIVITY_H

#include "base/btl_devmem.h"

BEGIN_C_DECLS

/* Something happened on one of our sockets (event handlers, and sends from any thread). */
static inline void mca_btl_devmem_progress_activity(void)
{
    (void) __atomic_fetch_add(&mca_btl_devmem_component.activity, 1, __ATOMIC_RELAXED);
}

/* A window of transfers under way, during which a waiting rank may sleep on a contended
 * core (progress.c): gets asked and not yet answered (n added or, negative, removed), and
 * connections whose socket is full with more than one frame still queued. */
static inline void mca_btl_devmem_progress_gets(int n)
{
    (void) __atomic_fetch_add(&mca_btl_devmem_component.window_gets, n, __ATOMIC_RELAXED);
}

static inline void mca_btl_devmem_progress_writer(bool blocked)
{
    (void) __atomic_fetch_add(&mca_btl_devmem_component.window_writers, blocked ? 1 : -1,
                              __ATOMIC_RELAXED);
}

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_ACTIVITY_H */
