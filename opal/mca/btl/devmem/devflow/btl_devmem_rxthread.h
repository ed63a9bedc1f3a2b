/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiving threads (btl_devmem_rx_threads), part of the device-flow layer: each thread
 * serves whole device-flow lanes, receiving side: it sleeps in epoll on their sockets,
 * receives, gathers in its own pipe (its own copier and batches), gives tokens back, and
 * hands the gets it finished, and the endpoints that must fail, to the progress thread
 * through a short-locked queue, which the progress thread empties when an eventfd in its
 * watch set says there is something (btl_devmem.h: Threads).
 *
 * Lanes come to a thread when they open (the device-flow layer offers them through the
 * rx_server it was given) and go back before they close (give_back, on the progress
 * thread: the thread's lock is taken, so the thread is between turns).
 *
 * The threads are named devmem-rx<N> and placed near the device path's NIC (hwloc: its
 * NUMA node or package) and off the CPUs this node's ranks are bound to, where there are
 * CPUs to spare (the placement is said at btl_devmem_verbose 10): this rank's at the start,
 * the other local ranks' as add_procs learns them (the runtime's PMIX_CPUSET).
 */
#ifndef MCA_BTL_DEVMEM_RXTHREAD_H
#define MCA_BTL_DEVMEM_RXTHREAD_H

#include "base/btl_devmem.h"

BEGIN_C_DECLS

/* btl_devmem_rx_threads -1 (the default): how many threads this rank starts, and in said
 * why (for btl_devmem_verbose). One where the node has CPUs to spare beside the CPUs its
 * ranks compute on, else none. */
int mca_btl_devmem_rxthreads_auto(char *said, size_t len);

/* Start n receiving threads (the component's init, with the device path on) and register
 * them as the device flows' receiving server. 0, or -errno with nothing started. */
int mca_btl_devmem_rxthreads_start(int n);

/* A local rank is bound to the CPUs in cpulist ("0-3,8"): keep the threads off them too,
 * moving them if that changes where they belong. Nothing without threads. */
void mca_btl_devmem_rxthreads_avoid(const char *cpulist);

/* Stop them (the component's close: every lane has closed). */
void mca_btl_devmem_rxthreads_stop(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_RXTHREAD_H */
