/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration and the devmem TX cache (see btl_devmem_reg.h).
 */
#include "opal_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/datatype/opal_convertor.h"

#include "base/btl_devmem_ompi_compat.h"
#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_endpoint.h"
#include "rdma/btl_devmem_push.h"
#include "rdma/btl_devmem_reg.h"

#include "devmem/cudrv.h"

/* Unheld entries kept for reuse; beyond this the oldest unheld one goes. */
#define TXMEM_CACHE_MAX 32

/* Cache entries, most recently used first. Registrations fill it from the application's
 * threads, answers to gets read it from the progress path, fragments let go of entries in
 * any thread: every entry's fields and the list are txmem_lock's. */
static opal_list_t txmem_list;
static bool txmem_ready;
static pthread_mutex_t txmem_lock = PTHREAD_MUTEX_INITIALIZER;

bool mca_btl_devmem_mem_is_device(const void *ptr, int *ordinal)
{
    struct devmem_cuda_ptr info;
    struct devmem_err e;
    int rc = devmem_cuda_ptr_query(ptr, &info, &e);

    if (rc < 0) {
        static int said;

        /* said once for everyone: should the buffer be device memory after all, the crash
         * or the wrong bytes that follow need this line to be understood */
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
            opal_output(0, "btl:devmem: cannot tell whether %p is GPU memory, so it and "
                           "any such buffer are taken for host memory: %s", ptr, e.msg);
        }
        DEVMEM_VERBOSE(1, "cannot tell what memory %p is, taking it for host memory: %s", ptr,
                       e.msg);
        return false;
    }
    if (1 == rc && NULL != ordinal) {
        *ordinal = info.ordinal;
    }
    return 1 == rc;
}

bool mca_btl_devmem_convertor_is_device(const struct opal_convertor_t *convertor,
                                        const void *ptr, int *ordinal)
{
#if BTL_VERSION >= 330
    /* a second driver query per message would cost a GPU application's small host sends
     * a few hundred nanoseconds each */
    /* MPI_BOTTOM (no base buffer) is the one case Open MPI never checks: ask ourselves */
    if (mca_btl_devmem_component.accel_cuda && NULL != convertor->pBaseBuf
        && !(convertor->flags & CONVERTOR_ACCELERATOR)) {
        return false;
    }
#endif
    return mca_btl_devmem_mem_is_device(ptr, ordinal);
}

bool mca_btl_devmem_mem_is_foreign(const void *ptr)
{
    static bool said;

    /* one flag test unless Open MPI's accelerator is another vendor's */
    if (!mca_btl_devmem_component.accel_foreign || !mca_btl_devmem_accelerator_is_device(ptr)
        || mca_btl_devmem_mem_is_device(ptr, NULL)) {
        return false;
    }
    if (!said) {
        said = true;
        opal_output_verbose(1, mca_btl_devmem_component.output,
                            "btl:devmem: device memory of Open MPI's '%s' accelerator is not "
                            "CUDA memory, which is all the device path carries: such buffers "
                            "go through Open MPI's own copies instead",
                            mca_btl_devmem_accelerator());
    }
    return true;
}

int mca_btl_devmem_mem_copy(void *dst, const void *src, size_t len, int ordinal, char *why,
                            size_t whylen)
{
    struct devmem_err e;

    if (0 != devmem_cuda_copy(ordinal, dst, src, len, &e)) {
        snprintf(why, whylen, "copying %zu bytes to or from device memory: %s", len, e.msg);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the TX cache */

static void txmem_free(struct mca_btl_devmem_txmem *t)
{
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_dev_unbind_tx(t->tx_id[i]);
    }
    devmem_region_release(&t->region);
    free(t->tx_id);
    free(t->tx_failed);
    OBJ_DESTRUCT(&t->super);
    free(t);
}

static void txmem_retire(struct mca_btl_devmem_txmem *t)
{
    if (!t->retired) {
        opal_list_remove_item(&txmem_list, &t->super);
        t->retired = true;
    }
    if (0 == t->refs) {
        txmem_free(t);
    }
}

/* Keep at most TXMEM_CACHE_MAX entries nobody holds. */
static void txmem_trim(void)
{
    size_t unheld = 0;
    opal_list_item_t *item, *prev;

    OPAL_LIST_FOREACH(item, &txmem_list, opal_list_item_t) {
        unheld += 0 == ((struct mca_btl_devmem_txmem *) item)->refs;
    }
    for (item = opal_list_get_last(&txmem_list);
         unheld > TXMEM_CACHE_MAX && item != opal_list_get_end(&txmem_list); item = prev) {
        prev = opal_list_get_prev(item);
        if (0 == ((struct mca_btl_devmem_txmem *) item)->refs) {
            txmem_retire((struct mca_btl_devmem_txmem *) item);
            unheld--;
        }
    }
}

static struct mca_btl_devmem_txmem *txmem_new(uint64_t base, size_t size, uint64_t buffer_id,
                                              int ordinal)
{
    const struct devmem_provider *p = ordinal >= 0 ? &devmem_provider_cuda
                                                   : &devmem_provider_host;
    struct mca_btl_devmem_txmem *t = calloc(1, sizeof(*t));
    int n = mca_btl_devmem_num_modules;
    struct devmem_err e;

    if (NULL == t || NULL == (t->tx_id = calloc((size_t) n + 1, sizeof(*t->tx_id)))
        || NULL == (t->tx_failed = calloc((size_t) n + 1, sizeof(*t->tx_failed)))) {
        if (NULL != t) {
            free(t->tx_id);
            free(t);
        }
        return NULL;
    }
    OBJ_CONSTRUCT(&t->super, opal_list_item_t);
    t->base = base;
    t->size = size;
    t->buffer_id = buffer_id;
    t->ordinal = ordinal;
    if (0 != p->export_range(&t->region, base, size, &e)) {
        /* no dmabuf: every send from it is staged through host memory */
        DEVMEM_VERBOSE(1, "devmem TX off for [0x%llx, +%zu): %s", (unsigned long long) base,
                       size, e.msg);
        for (int i = 0; i < n; i++) {
            t->tx_failed[i] = true;
        }
    }
    opal_list_prepend(&txmem_list, &t->super);
    return t;
}

static struct mca_btl_devmem_txmem *txmem_find(uint64_t addr, size_t len)
{
    opal_list_item_t *item;

    OPAL_LIST_FOREACH(item, &txmem_list, opal_list_item_t) {
        struct mca_btl_devmem_txmem *t = (struct mca_btl_devmem_txmem *) item;

        if (addr >= t->base && addr - t->base + len <= t->size) {
            return t;
        }
    }
    return NULL;
}

/* The entry for [addr, addr+len), entered when missing; NULL for host memory that devmem TX
 * does not serve. check_reuse (registration): ask the driver whether a cached device entry
 * still names the same allocation; an answer to a get trusts the entry its registration
 * made, so it asks the driver only on a miss. Not held. */
static struct mca_btl_devmem_txmem *txmem_lookup(uint64_t addr, size_t len, bool check_reuse)
{
    size_t ps = devmem_page_size();
    struct mca_btl_devmem_txmem *t;
    struct devmem_cuda_ptr info;
    struct devmem_err e;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();

    if (!txmem_ready) {
        OBJ_CONSTRUCT(&txmem_list, opal_list_t);
        txmem_ready = true;
    }
    t = txmem_find(addr, len);
    if (NULL != t && (!check_reuse || t->ordinal < 0)) {
        goto found;
    }
    if (1 == devmem_cuda_ptr_query((const void *) (uintptr_t) addr, &info, &e)) {
        if (NULL != t && t->buffer_id != info.buffer_id) {
            txmem_retire(t); /* freed and allocated again: a different dmabuf */
            t = NULL;
        }
        if (NULL == t) {
            /* the whole allocation, rounded to pages (allocations are page-aligned) */
            t = txmem_new(info.base, (info.size + ps - 1) / ps * ps, info.buffer_id,
                          info.ordinal);
        }
    } else if (NULL == t && mca_btl_devmem_component.tx_host && NULL != k
               && DEVMEM_KERNEL_EMULATED == k->kind) {
        /* host memory standing in for device memory: a page-rounded view of the range */
        uint64_t lo = addr / ps * ps, hi = (addr + len + ps - 1) / ps * ps;

        t = txmem_new(lo, (size_t) (hi - lo), 0, -1);
    } else if (NULL != t && t->ordinal >= 0) {
        txmem_retire(t); /* no longer device memory: the allocation is gone */
        t = NULL;
    }
found:
    if (NULL != t && opal_list_get_first(&txmem_list) != &t->super) {
        opal_list_remove_item(&txmem_list, &t->super);
        opal_list_prepend(&txmem_list, &t->super);
    }
    return t;
}

/* txmem_lookup, held. */
static struct mca_btl_devmem_txmem *txmem_hold(uint64_t addr, size_t len, bool check_reuse)
{
    struct mca_btl_devmem_txmem *t;

    (void) pthread_mutex_lock(&txmem_lock);
    t = txmem_lookup(addr, len, check_reuse);
    if (NULL != t) {
        t->refs++;
    }
    (void) pthread_mutex_unlock(&txmem_lock);
    return t;
}

struct mca_btl_devmem_txmem *mca_btl_devmem_txmem_get(uint64_t addr, size_t len)
{
    return txmem_hold(addr, len, false);
}

void mca_btl_devmem_txmem_put(struct mca_btl_devmem_txmem *t)
{
    if (NULL == t) {
        return;
    }
    (void) pthread_mutex_lock(&txmem_lock);
    if (0 == --t->refs) {
        if (t->retired) {
            txmem_free(t);
        } else {
            txmem_trim();
        }
    }
    (void) pthread_mutex_unlock(&txmem_lock);
}

uint32_t mca_btl_devmem_txmem_bind(struct mca_btl_devmem_txmem *t, mca_btl_devmem_module_t *m)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    uint32_t i = m->index, id;

    (void) pthread_mutex_lock(&txmem_lock);
    if (t->tx_failed[i]) {
        id = 0;
    } else if (0 != t->tx_id[i]) {
        id = t->tx_id[i];
    } else if (NULL == k || NULL == m->devpath.dev) {
        t->tx_failed[i] = true;
        id = 0;
    } else if (0 != mca_btl_devmem_dev_bind_tx(&m->itf, &t->region, &t->tx_id[i], &e)) {
        t->tx_id[i] = 0;
        t->tx_failed[i] = true;
        id = 0;
        DEVMEM_VERBOSE(1, "devmem TX off on %s for a %zu-byte %s allocation, gets from it are "
                       "staged through host memory: %s", m->itf.name, t->size,
                       t->ordinal >= 0 ? "device" : "host", e.msg);
    } else {
        id = t->tx_id[i];
        DEVMEM_VERBOSE(10, "TX binding %u on %s: [0x%llx, +%zu)", id, m->itf.name,
                       (unsigned long long) t->base, t->size);
    }
    (void) pthread_mutex_unlock(&txmem_lock);
    return id;
}

void mca_btl_devmem_txmem_lost(struct mca_btl_devmem_txmem *t, mca_btl_devmem_module_t *m,
                               uint32_t id, bool gone, const char *err)
{
    uint32_t i = m->index;
    bool first;

    (void) pthread_mutex_lock(&txmem_lock);
    first = 0 != id && t->tx_id[i] == id && !t->tx_failed[i];
    if (first) {
        if (gone) {
            t->tx_id[i] = 0; /* gone with its netlink socket: nothing to release at the end */
        }
        t->tx_failed[i] = true;
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_bindings_lost, 1);
    }
    (void) pthread_mutex_unlock(&txmem_lock);
    if (first) {
        DEVMEM_VERBOSE(1, "devmem TX off on %s for TX binding %u (a %zu-byte %s allocation): "
                       "the kernel refused a send from it (%s), as when the netlink socket "
                       "that made it closed (devmem-helperd stopped or restarted); gets from "
                       "it are staged through host memory from now on", m->itf.name, id,
                       t->size, t->ordinal >= 0 ? "device" : "host", err);
    }
}

void mca_btl_devmem_reg_fini(void)
{
    opal_list_item_t *item;

    (void) pthread_mutex_lock(&txmem_lock);
    if (!txmem_ready) {
        (void) pthread_mutex_unlock(&txmem_lock);
        return;
    }
    while (NULL != (item = opal_list_remove_first(&txmem_list))) {
        struct mca_btl_devmem_txmem *t = (struct mca_btl_devmem_txmem *) item;

        if (0 != t->refs) {
            DEVMEM_VERBOSE(1, "a TX allocation is still held %d time(s) at finalize", t->refs);
        }
        txmem_free(t);
    }
    OBJ_DESTRUCT(&txmem_list);
    txmem_ready = false;
    (void) pthread_mutex_unlock(&txmem_lock);
}

/* ---------------------------------------------------------------- register_mem */

/* What deregister_mem needs back: the handle first, so that the two convert. */
struct devmem_reg {
    struct mca_btl_base_registration_handle_t handle;
    struct mca_btl_devmem_txmem *txmem; /* held, or NULL */
    struct mca_btl_devmem_push_out *push; /* its first bytes' push, or NULL */
};

mca_btl_base_registration_handle_t *mca_btl_devmem_register_mem(
    struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *base,
    size_t size, uint32_t flags)
{
    struct devmem_reg *reg;
    int ordinal = -1;

    /* no handle: the PML takes another protocol, whose copies its accelerator makes */
    if (mca_btl_devmem_mem_is_foreign(base)) {
        return NULL;
    }
    if (NULL == (reg = calloc(1, sizeof(*reg)))) {
        return NULL;
    }
    reg->handle.base = (uint64_t) (uintptr_t) base;
    reg->handle.kind = mca_btl_devmem_mem_is_device(base, &ordinal) ? MCA_BTL_DEVMEM_MEM_DEVICE
                                                                    : MCA_BTL_DEVMEM_MEM_HOST;
    reg->handle.ordinal = ordinal;
    if ((flags & MCA_BTL_REG_FLAG_REMOTE_READ) && size > 0) {
        /* a source of gets: enter it now, so that the answer finds its dmabuf ready */
        reg->txmem = txmem_hold((uint64_t) (uintptr_t) base, size, true);
    }
    reg->push = mca_btl_devmem_push_arm(ep, &reg->handle, size, flags);
    return &reg->handle;
}

int mca_btl_devmem_deregister_mem(struct mca_btl_base_module_t *btl,
                                  mca_btl_base_registration_handle_t *handle)
{
    struct devmem_reg *reg = (struct devmem_reg *) handle;

    if (NULL != reg) {
        if (NULL != reg->push) {
            mca_btl_devmem_push_release(reg->push);
        }
        mca_btl_devmem_txmem_put(reg->txmem);
        free(reg);
    }
    return OPAL_SUCCESS;
}
