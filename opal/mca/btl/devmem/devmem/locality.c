/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PCI paths between a device and a network interface, from hwloc (see locality.h).
 */
#include "build_config.h"

#include "locality.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *devmem_path_name(enum devmem_path p)
{
    switch (p) {
    case DEVMEM_PATH_SWITCH: return "switch";
    case DEVMEM_PATH_SWITCHES: return "switches";
    case DEVMEM_PATH_HOST_BRIDGE: return "host-bridge";
    case DEVMEM_PATH_NODE: return "node";
    case DEVMEM_PATH_SYSTEM: return "system";
    case DEVMEM_PATH_UNKNOWN: return "unknown";
    }
    return "?";
}

int devmem_cpulist_parse(const char *list, int limit, int *cpus, size_t max, size_t *n,
                         struct devmem_err *err)
{
    const char *at = list;
    size_t count = 0;
    int last = -1;

    *n = 0;
    if (NULL == list || '\0' == list[0]) {
        return devmem_err_set(err, EINVAL, "an empty CPU list");
    }
    for (;;) {
        char *end;
        long lo, hi;

        if (!isdigit((unsigned char) *at)) { /* strtol would take blanks and signs */
            break;
        }
        lo = hi = strtol(at, &end, 10);
        if ('-' == *end) {
            at = end + 1;
            if (!isdigit((unsigned char) *at)) {
                break;
            }
            hi = strtol(at, &end, 10);
        }
        if (hi < lo || hi >= limit || lo <= last) {
            return devmem_err_set(err, EINVAL, "CPU list \"%s\": %ld-%ld is %s", list, lo, hi,
                                  hi < lo ? "reversed"
                                  : hi >= limit ? "past the CPUs there are" : "out of order");
        }
        for (long c = lo; c <= hi && count < max; c++) {
            cpus[count++] = (int) c;
        }
        last = (int) hi;
        if ('\0' == *end) {
            *n = count;
            return 0;
        }
        if (',' != *end) {
            break;
        }
        at = end + 1;
    }
    return devmem_err_set(err, EINVAL, "CPU list \"%s\": not a list like 0-3,8", list);
}

#ifdef HAVE_HWLOC

#include <hwloc.h>

struct devmem_topo {
    hwloc_topology_t t;
};

int devmem_topo_open(struct devmem_topo **topo, const char *xml, struct devmem_err *err)
{
    struct devmem_topo *d = calloc(1, sizeof(*d));

    *topo = NULL;
    if (NULL == d || 0 != hwloc_topology_init(&d->t)) {
        free(d);
        return devmem_err_set(err, ENOMEM, "hwloc: cannot start a topology");
    }
    /* PCI devices, the bridges above them and network interfaces; nothing else. The Linux
     * backend reads the PCI tree from sysfs, which is all we need: the libpciaccess plugin
     * would also read every device's config space (and keeps memory it never frees). */
    if (0 != hwloc_topology_set_io_types_filter(d->t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT)
#if HWLOC_API_VERSION >= 0x00020100 /* hwloc 2.1 */
        || 0 != hwloc_topology_set_components(d->t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                              "pci")
#endif
        || (NULL != xml && 0 != hwloc_topology_set_xml(d->t, xml))) {
        int e = errno;
        hwloc_topology_destroy(d->t);
        free(d);
        return devmem_err_set(err, e ? e : EINVAL, "hwloc: cannot use the topology %s: %s",
                              NULL != xml ? xml : "of this machine", strerror(e ? e : EINVAL));
    }
    if (0 != hwloc_topology_load(d->t)) {
        int e = errno;
        hwloc_topology_destroy(d->t);
        free(d);
        return devmem_err_set(err, e ? e : EIO, "hwloc: cannot load the topology %s: %s",
                              NULL != xml ? xml : "of this machine", strerror(e ? e : EIO));
    }
    *topo = d;
    return 0;
}

void devmem_topo_close(struct devmem_topo *topo)
{
    if (NULL != topo) {
        hwloc_topology_destroy(topo->t);
        free(topo);
    }
}

/* The PCI device that carries network interface ifname, NULL when none does. */
static hwloc_obj_t pci_of_interface(hwloc_topology_t t, const char *ifname)
{
    hwloc_obj_t os = NULL;

    while (NULL != (os = hwloc_get_next_osdev(t, os))) {
        if (HWLOC_OBJ_OSDEV_NETWORK == os->attr->osdev.type && NULL != os->name
            && 0 == strcmp(os->name, ifname)) {
            hwloc_obj_t p = os->parent;

            while (NULL != p && HWLOC_OBJ_PCI_DEVICE != p->type && hwloc_obj_type_is_io(p->type)) {
                p = p->parent;
            }
            return NULL != p && HWLOC_OBJ_PCI_DEVICE == p->type ? p : NULL;
        }
    }
    return NULL;
}

/* hwloc's own helper compares depths, which I/O objects do not have: walk the parents. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; NULL != x; x = x->parent) {
        for (hwloc_obj_t y = b; NULL != y; y = y->parent) {
            if (x == y) {
                return x;
            }
        }
    }
    return NULL;
}

/* PCI-to-PCI bridges strictly between dev and its ancestor anc. */
static int bridges_between(hwloc_obj_t dev, hwloc_obj_t anc)
{
    int n = 0;

    for (hwloc_obj_t p = dev->parent; NULL != p && p != anc; p = p->parent) {
        n += HWLOC_OBJ_BRIDGE == p->type;
    }
    return n;
}

static enum devmem_path classify(hwloc_topology_t t, hwloc_obj_t dev, hwloc_obj_t nic)
{
    hwloc_obj_t anc = common_ancestor(dev, nic);
    hwloc_obj_t dev_home, nic_home;

    if (NULL == anc) {
        return DEVMEM_PATH_UNKNOWN;
    }
    if (HWLOC_OBJ_PCI_DEVICE == anc->type) {
        return DEVMEM_PATH_SWITCH; /* one device (or a function of it) under the other */
    }
    if (HWLOC_OBJ_BRIDGE == anc->type) {
        if (HWLOC_OBJ_BRIDGE_HOST == anc->attr->bridge.upstream_type) {
            return DEVMEM_PATH_HOST_BRIDGE;
        }
        /* a switch is an upstream port with a downstream port per device below it */
        return bridges_between(dev, anc) <= 1 && bridges_between(nic, anc) <= 1
                   ? DEVMEM_PATH_SWITCH
                   : DEVMEM_PATH_SWITCHES;
    }
    /* two host bridges: where the CPU side attaches each of them */
    dev_home = hwloc_get_non_io_ancestor_obj(t, dev);
    nic_home = hwloc_get_non_io_ancestor_obj(t, nic);
    if (dev_home == nic_home) {
        return DEVMEM_PATH_NODE;
    }
    anc = common_ancestor(dev_home, nic_home);
    return NULL != anc && NULL != anc->parent ? DEVMEM_PATH_NODE : DEVMEM_PATH_SYSTEM;
}

int devmem_topo_path(struct devmem_topo *topo, const char *busid, const char *ifname,
                     enum devmem_path *path, struct devmem_err *err)
{
    hwloc_obj_t dev = hwloc_get_pcidev_by_busidstring(topo->t, busid);
    hwloc_obj_t nic;

    *path = DEVMEM_PATH_UNKNOWN;
    if (NULL == dev) {
        return devmem_err_set(err, ENOENT, "hwloc: the topology has no PCI device %s", busid);
    }
    if (NULL != (nic = pci_of_interface(topo->t, ifname))) {
        *path = classify(topo->t, dev, nic);
    }
    return 0;
}

int devmem_topo_nic_cpus(struct devmem_topo *topo, const char *ifname, int *cpus, size_t max,
                         size_t *n, struct devmem_err *err)
{
    hwloc_obj_t nic = pci_of_interface(topo->t, ifname), near;
    int cpu;

    *n = 0;
    if (NULL == nic || NULL == (near = hwloc_get_non_io_ancestor_obj(topo->t, nic))
        || NULL == near->cpuset) {
        return devmem_err_set(err, ENOENT, "hwloc: %s is no PCI device the topology knows",
                              ifname);
    }
    hwloc_bitmap_foreach_begin(cpu, near->cpuset)
    {
        if (*n < max) {
            cpus[(*n)++] = cpu;
        }
    }
    hwloc_bitmap_foreach_end();
    return 0;
}

#else /* !HAVE_HWLOC */

int devmem_topo_open(struct devmem_topo **topo, const char *xml, struct devmem_err *err)
{
    *topo = NULL;
    return devmem_err_set(err, ENOSYS, "built without hwloc (install libhwloc-dev and "
                          "configure again): NIC locality unknown");
}

void devmem_topo_close(struct devmem_topo *topo)
{
}

int devmem_topo_path(struct devmem_topo *topo, const char *busid, const char *ifname,
                     enum devmem_path *path, struct devmem_err *err)
{
    *path = DEVMEM_PATH_UNKNOWN;
    return devmem_err_set(err, ENOSYS, "built without hwloc");
}

int devmem_topo_nic_cpus(struct devmem_topo *topo, const char *ifname, int *cpus, size_t max,
                         size_t *n, struct devmem_err *err)
{
    *n = 0;
    return devmem_err_set(err, ENOSYS, "built without hwloc");
}

#endif /* HAVE_HWLOC */
