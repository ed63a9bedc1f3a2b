/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How far a network interface is from a PCI device (the rank's GPU), read from the machine's
 * hwloc topology: the PCI path between the two, classed by what a transfer crosses. Bytes
 * that devmem lands in GPU memory cross that path once each; a NIC under the GPU's own PCIe
 * switch never touches the CPU's root complex, one on the other socket crosses the
 * inter-socket link.
 *
 * Built without hwloc, devmem_topo_open fails with a reason and nothing else is available.
 */
#ifndef DEVMEM_LOCALITY_H
#define DEVMEM_LOCALITY_H

#include <stddef.h>

#include "err.h"

/* Nearest first: a smaller value is a better path. */
enum devmem_path {
    DEVMEM_PATH_SWITCH = 0,  /* below one PCIe switch, clear of the host bridge */
    DEVMEM_PATH_SWITCHES,    /* below a chain of switches, clear of the host bridge */
    DEVMEM_PATH_HOST_BRIDGE, /* through the CPU's PCIe host bridge */
    DEVMEM_PATH_NODE,        /* different host bridges of the same NUMA node or package */
    DEVMEM_PATH_SYSTEM,      /* across packages: the inter-socket link */
    DEVMEM_PATH_UNKNOWN,     /* the interface is no PCI device the topology knows (veth, lo) */
};

/* A short name for messages: "switch", "switches", "host-bridge", "node", "system", "unknown". */
const char *devmem_path_name(enum devmem_path p);

struct devmem_topo;

/* This machine's topology with its PCI devices and network interfaces, or the one saved
 * in the hwloc XML file xml (not NULL: tests, or a topology recorded elsewhere). */
int devmem_topo_open(struct devmem_topo **topo, const char *xml, struct devmem_err *err);
void devmem_topo_close(struct devmem_topo *topo);

/* The path from PCI device busid ("dddd:bb:dd.f", case does not matter) to network
 * interface ifname. 0 with *path set (DEVMEM_PATH_UNKNOWN when ifname is not a PCI device's);
 * -ENOENT when the topology has no PCI device busid. */
int devmem_topo_path(struct devmem_topo *topo, const char *busid, const char *ifname,
                     enum devmem_path *path, struct devmem_err *err);

/* The CPUs nearest network interface ifname: those of the nearest non-I/O object above its
 * PCI device (its NUMA node or package), as OS CPU numbers, ascending, at most max of them
 * in cpus; *n says how many. -ENOENT when ifname is no PCI device's (veth, lo). */
int devmem_topo_nic_cpus(struct devmem_topo *topo, const char *ifname, int *cpus, size_t max,
                         size_t *n, struct devmem_err *err);

/* A CPU list as the runtime gives a process's binding and the kernel prints CPU sets
 * ("0-3,8,10-11"): the CPU numbers, ascending and without repeats, at most max of them in
 * cpus, each below limit; *n says how many. -EINVAL with the reason for anything else (an
 * empty list, a reversed range, a number at or past limit, a stray character). */
int devmem_cpulist_parse(const char *list, int limit, int *cpus, size_t max, size_t *n,
                         struct devmem_err *err);

#endif /* DEVMEM_LOCALITY_H */
