/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters (base/btl_devmem_counters.h) reported: the btl_devmem_stats line at the end of
 * a run and the MPI_T performance variables that tools read during one.
 */
#ifndef MCA_BTL_DEVMEM_STATS_H
#define MCA_BTL_DEVMEM_STATS_H

#include <stdint.h>

#include "base/btl_devmem_counters.h"

/* Every key's value now (derived ones computed), by index. */
void mca_btl_devmem_stats_read(uint64_t values[MCA_BTL_DEVMEM_STAT_COUNT]);

/* The btl_devmem_stats line: "btl_devmem stats: rank=R key=value ...", and where device
 * flows carried anything, the lanes line: "btl_devmem lanes: rank=R rx_bytes=B0,B1,..." (by
 * lane number) and, where the kernel says which RX queue each lane arrives on, the queues
 * line (by the queue's place among its module's bound queues), and with receiving threads,
 * the rxthreads line: "btl_devmem rxthreads: rank=R receives=N0,N1,... rx_bytes=B0,B1,...". */
void mca_btl_devmem_stats_print(void);

/* Each key as the MPI_T performance variable btl_devmem_<key> (the component's register). */
void mca_btl_devmem_stats_register(void);

#endif /* MCA_BTL_DEVMEM_STATS_H */
