/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's counters as MPI_T performance variables, read during a run.
 *
 * Finds btl_devmem_tx_frags, _rx_frags, _tx_host, _rx_host and _gets_inflight_max by name,
 * checks their classes (counters; the maximum a high-water mark), reads the counters, makes
 * a validated exchange of -i messages of -m bytes each way between ranks 0 and 1, reads
 * again: each counter must have grown by at least what the exchange moved. Prints the last
 * reading ("pvars: rank=R key=value ...") so that the test can hold it against the stats
 * line printed at finalize, which counts a little more (the finalize traffic).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { TX_FRAGS, RX_FRAGS, TX_HOST, RX_HOST, NKEYS };
static const char *const keys[NKEYS] = {"tx_frags", "rx_frags", "tx_host", "rx_host"};

static int find(const char *name, int *cls)
{
    int n, i;

    MPI_T_pvar_get_num(&n);
    for (i = 0; i < n; i++) {
        char got[256], desc[1024];
        int got_len = sizeof(got), desc_len = sizeof(desc), verbosity, bind, readonly,
            continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, got, &got_len, &verbosity, cls, &type,
                                               &enumtype, desc, &desc_len, &bind, &readonly,
                                               &continuous, &atomic)) {
            continue;
        }
        if (0 == strcmp(got, name)) {
            if (MPI_UNSIGNED_LONG_LONG != type || !readonly || !continuous) {
                test_die("%s: wrong type or flags (readonly %d, continuous %d)", name, readonly,
                         continuous);
            }
            return i;
        }
    }
    test_die("no MPI_T performance variable %s (of %d)", name, n);
}

static void read_all(MPI_T_pvar_session s, MPI_T_pvar_handle *h, unsigned long long *v)
{
    for (int k = 0; k < NKEYS; k++) {
        if (MPI_SUCCESS != MPI_T_pvar_read(s, h[k], &v[k])) {
            test_die("MPI_T_pvar_read of btl_devmem_%s failed", keys[k]);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h[NKEYS];
    unsigned long long before[NKEYS], after[NKEYS];
    int provided, cls, peer;
    char name[64];
    char *sbuf, *rbuf;

    test_init(&argc, &argv, "pvars", 1024, 100, NULL, NULL, NULL);
    if (test_size != 2) {
        test_die("needs exactly 2 ranks");
    }
    peer = 1 - test_rank;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    for (int k = 0; k < NKEYS; k++) {
        int count, index;

        snprintf(name, sizeof(name), "btl_devmem_%s", keys[k]);
        index = find(name, &cls);
        if (MPI_T_PVAR_CLASS_COUNTER != cls) {
            test_die("%s is of class %d, not a counter", name, cls);
        }
        if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, index, NULL, &h[k], &count)
            || 1 != count) {
            test_die("cannot read %s", name);
        }
    }
    (void) find("btl_devmem_gets_inflight_max", &cls);
    if (MPI_T_PVAR_CLASS_HIGHWATERMARK != cls) {
        test_die("btl_devmem_gets_inflight_max is of class %d, not a high-water mark", cls);
    }

    sbuf = xmalloc(test_opt.max_size);
    rbuf = xmalloc(test_opt.max_size);
    MPI_Barrier(MPI_COMM_WORLD); /* connections made: the counters only grow from here */
    read_all(session, h, before);
    /* and no rank sends before every rank has read: a peer that left the first barrier early
     * could otherwise have its first message counted in our "before" */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < test_opt.iters; i++) {
        pat_fill(sbuf, test_opt.max_size, test_rank, peer, (uint64_t) i, 0);
        MPI_Sendrecv(sbuf, (int) test_opt.max_size, MPI_BYTE, peer, 7, rbuf,
                     (int) test_opt.max_size, MPI_BYTE, peer, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        pat_check(rbuf, test_opt.max_size, peer, test_rank, (uint64_t) i, 0, "exchange");
    }
    read_all(session, h, after);
    if (after[TX_FRAGS] - before[TX_FRAGS] < (unsigned long long) test_opt.iters
        || after[RX_FRAGS] - before[RX_FRAGS] < (unsigned long long) test_opt.iters
        || after[TX_HOST] - before[TX_HOST] < (unsigned long long) test_opt.iters * test_opt.max_size
        || after[RX_HOST] - before[RX_HOST] < (unsigned long long) test_opt.iters * test_opt.max_size) {
        test_die("the counters moved too little for %d messages of %zu bytes each way: tx_frags "
                 "+%llu rx_frags +%llu tx_host +%llu rx_host +%llu", test_opt.iters,
                 test_opt.max_size, after[TX_FRAGS] - before[TX_FRAGS],
                 after[RX_FRAGS] - before[RX_FRAGS], after[TX_HOST] - before[TX_HOST],
                 after[RX_HOST] - before[RX_HOST]);
    }
    printf("pvars: rank=%d tx_frags=%llu rx_frags=%llu tx_host=%llu rx_host=%llu\n", test_rank,
           after[TX_FRAGS], after[RX_FRAGS], after[TX_HOST], after[RX_HOST]);
    fflush(stdout);
    for (int k = 0; k < NKEYS; k++) {
        MPI_T_pvar_handle_free(session, &h[k]);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    free(sbuf);
    free(rbuf);
    return test_finish("%d messages of %zu B each way, counters grew by at least that",
                       test_opt.iters, test_opt.max_size);
}
