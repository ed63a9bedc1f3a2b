/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The counters' line and their MPI_T performance variables, both from the one list in
 * base/btl_devmem_counters.h.
 */
#include "opal_config.h"

#include <inttypes.h>
#include <stdio.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/proc.h"

#include "base/btl_devmem.h"
#include "connections/btl_devmem_module.h"
#include "sockets/btl_devmem_pollset.h"
#include "device/btl_devmem_dev.h"
#include "btl_devmem_stats.h"


static const char *const keys[] = {
#define MCA_BTL_DEVMEM_STAT_KEY(key, kind, meaning) #key,
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_KEY)
#undef MCA_BTL_DEVMEM_STAT_KEY
};

static const char *const meanings[] = {
#define MCA_BTL_DEVMEM_STAT_MEANING(key, kind, meaning) meaning,
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_MEANING)
#undef MCA_BTL_DEVMEM_STAT_MEANING
};

#define MCA_BTL_DEVMEM_STAT_CLASS_COUNTER MCA_BASE_PVAR_CLASS_COUNTER
#define MCA_BTL_DEVMEM_STAT_CLASS_HIGHWATER MCA_BASE_PVAR_CLASS_HIGHWATERMARK
/* a derived key is a level: it may go down between two reads */
#define MCA_BTL_DEVMEM_STAT_CLASS_DERIVED MCA_BASE_PVAR_CLASS_LEVEL
static const int classes[] = {
#define MCA_BTL_DEVMEM_STAT_CLASS(key, kind, meaning) MCA_BTL_DEVMEM_STAT_CLASS_##kind,
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_CLASS)
#undef MCA_BTL_DEVMEM_STAT_CLASS
};

/* the derived keys' values; the others are fields */
static uint64_t derived(int index)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    if (MCA_BTL_DEVMEM_STAT_devmem_modules == index) {
        uint64_t n = 0;

        for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
            const struct mca_btl_devmem_dev *d = mca_btl_devmem_modules[i]->devpath.dev;

            n += NULL != d && !__atomic_load_n(&d->lost, __ATOMIC_RELAXED);
        }
        return n;
    }
    if (MCA_BTL_DEVMEM_STAT_rx_threads == index) {
        return (uint64_t) __atomic_load_n(&c->rx_threads_running, __ATOMIC_RELAXED);
    }
    if (MCA_BTL_DEVMEM_STAT_rx_queues == index) {
        uint64_t n = 0;

        for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
            const struct mca_btl_devmem_dev *d = mca_btl_devmem_modules[i]->devpath.dev;

            n += NULL != d ? d->rx_nqueues : 0;
        }
        return n;
    }
    /* the idle policy's window (progress.h): both must come back to 0 */
    if (MCA_BTL_DEVMEM_STAT_window_gets == index) {
        return (uint64_t) __atomic_load_n(&c->window_gets, __ATOMIC_RELAXED);
    }
    if (MCA_BTL_DEVMEM_STAT_window_writers == index) {
        return (uint64_t) __atomic_load_n(&c->window_writers, __ATOMIC_RELAXED);
    }
    if (MCA_BTL_DEVMEM_STAT_emul_pool_limited == index
        || MCA_BTL_DEVMEM_STAT_emul_linger_bytes == index) {
        struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
        struct devmem_emul_stats es = {0};

        if (NULL != k) {
            /* what only the emulation can see, read under its lock: receiving threads count
             * there, and a tool may read during the run from any thread */
            devmem_kernel_emul_stats(k, &es);
        }
        return MCA_BTL_DEVMEM_STAT_emul_pool_limited == index ? es.recv_pool_limited
                                                              : es.linger_bytes;
    }
    return 0;
}

void mca_btl_devmem_stats_read(uint64_t values[MCA_BTL_DEVMEM_STAT_COUNT])
{
    const struct mca_btl_devmem_stats *s = &mca_btl_devmem_component.stats;

#define MCA_BTL_DEVMEM_STAT_READ_COUNTER(key) \
    values[MCA_BTL_DEVMEM_STAT_##key] = atomic_load_explicit(&s->key, memory_order_relaxed);
#define MCA_BTL_DEVMEM_STAT_READ_HIGHWATER(key) MCA_BTL_DEVMEM_STAT_READ_COUNTER(key)
#define MCA_BTL_DEVMEM_STAT_READ_DERIVED(key) \
    values[MCA_BTL_DEVMEM_STAT_##key] = derived(MCA_BTL_DEVMEM_STAT_##key);
#define MCA_BTL_DEVMEM_STAT_READ(key, kind, meaning) MCA_BTL_DEVMEM_STAT_READ_##kind(key)
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_READ)
#undef MCA_BTL_DEVMEM_STAT_READ
}

/* "btl_devmem WHAT: rank=R rx_bytes=B0,B1,..." for counts[0..n), up to the last that is
 * not zero; nothing when all are. */
static void print_spread(const char *what, _Atomic uint64_t *counts, unsigned int n)
{
    char line[24 * MCA_BTL_DEVMEM_RX_QUEUES_MAX];
    size_t used = 0;
    int last = -1;

    for (unsigned int i = 0; i < n; i++) {
        if (0 != atomic_load_explicit(&counts[i], memory_order_relaxed)) {
            last = (int) i;
        }
    }
    if (last < 0) {
        return;
    }
    for (int i = 0; i <= last && used < sizeof(line); i++) {
        used += (size_t) snprintf(line + used, sizeof(line) - used, "%s%" PRIu64, i ? "," : "",
                                  atomic_load_explicit(&counts[i], memory_order_relaxed));
    }
    opal_output(0, "btl_devmem %s: rank=%u rx_bytes=%s", what,
                (unsigned) opal_proc_local_get()->proc_name.vpid, line);
}

/* Per receiving thread, its receives and their bytes. */
static void print_threads(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    char recv[24 * MCA_BTL_DEVMEM_RX_THREADS_MAX], bytes[24 * MCA_BTL_DEVMEM_RX_THREADS_MAX];
    size_t ru = 0, bu = 0;
    int n = __atomic_load_n(&c->rx_threads_running, __ATOMIC_RELAXED);

    for (int i = 0; i < n && i < MCA_BTL_DEVMEM_RX_THREADS_MAX; i++) {
        ru += (size_t) snprintf(recv + ru, sizeof(recv) - ru, "%s%" PRIu64, i ? "," : "",
                                atomic_load_explicit(&c->rxthread_receives[i],
                                                     memory_order_relaxed));
        bu += (size_t) snprintf(bytes + bu, sizeof(bytes) - bu, "%s%" PRIu64, i ? "," : "",
                                atomic_load_explicit(&c->rxthread_bytes[i], memory_order_relaxed));
    }
    if (n > 0) {
        opal_output(0, "btl_devmem rxthreads: rank=%u receives=%s rx_bytes=%s",
                    (unsigned) opal_proc_local_get()->proc_name.vpid, recv, bytes);
    }
}

void mca_btl_devmem_stats_print(void)
{
    uint64_t v[MCA_BTL_DEVMEM_STAT_COUNT];
    char line[64 * MCA_BTL_DEVMEM_STAT_COUNT];
    size_t used = 0;

    mca_btl_devmem_stats_read(v);
    for (int i = 0; i < MCA_BTL_DEVMEM_STAT_COUNT && used < sizeof(line); i++) {
        used += (size_t) snprintf(line + used, sizeof(line) - used, " %s=%" PRIu64, keys[i],
                                  v[i]);
    }
    opal_output(0, "btl_devmem stats: rank=%u%s", (unsigned) opal_proc_local_get()->proc_name.vpid,
                line);
    print_spread("lanes", mca_btl_devmem_component.lane_rx_bytes, MCA_BTL_DEVMEM_DEVFLOWS_MAX);
    print_spread("queues", mca_btl_devmem_component.queue_rx_bytes,
                 MCA_BTL_DEVMEM_RX_QUEUES_MAX);
    print_threads();
}

static int pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    uint64_t v[MCA_BTL_DEVMEM_STAT_COUNT];

    mca_btl_devmem_stats_read(v);
    *(unsigned long long *) value = v[(intptr_t) pvar->ctx];
    return OPAL_SUCCESS;
}

void mca_btl_devmem_stats_register(void)
{
    for (int i = 0; i < MCA_BTL_DEVMEM_STAT_COUNT; i++) {
        (void) mca_base_component_pvar_register(
            &mca_btl_devmem_component.super.btl_version, keys[i], meanings[i],
            OPAL_INFO_LVL_4, classes[i], MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
            MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, pvar_read, NULL, NULL,
            (void *) (intptr_t) i);
    }
}
