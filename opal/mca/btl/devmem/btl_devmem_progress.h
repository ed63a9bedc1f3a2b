/*
 * How a rank that waits in MPI shares its CPU with the kernel's packet processing.
 *
 * A rank that waits for a message spins in opal_progress. On a busy node every core runs such
 * a rank, and the packets it waits for may sit in a softirq backlog that the kernel has handed
 * to ksoftirqd, a normal thread that a spinning rank keeps off the CPU until its time slice
 * ends (milliseconds: 4 ms per message between two namespaces on 2 cores). Open MPI's cure,
 * mpi_yield_when_idle, yields on every idle progress call and costs latency everywhere.
 *
 * Ours: every event on one of our connections counts as activity. While there was activity
 * within the last btl_devmem_idle_yield_us microseconds the rank spins as usual; once our
 * connections have been quiet longer than that, each progress call gives the CPU away
 * (sched_yield) so that whatever the kernel has queued runs. A yield with nothing else to run
 * returns at once, so a rank alone on its core loses almost nothing.
 */
#ifndef MCA_BTL_DEVMEM_PROGRESS_H
#define MCA_BTL_DEVMEM_PROGRESS_H

#include "btl_devmem.h"

BEGIN_C_DECLS

/* Something happened on one of our sockets (called from the event handlers). */
static inline void mca_btl_devmem_progress_activity(void)
{
    mca_btl_devmem_component.activity++;
}

/* A connection's events start or stop being polled: yields only happen while some are. */
void mca_btl_devmem_progress_conn_up(void);
void mca_btl_devmem_progress_conn_down(void);

/* The component's btl_progress: registered by the BML, run at every opal_progress. */
int mca_btl_devmem_progress(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_PROGRESS_H */
