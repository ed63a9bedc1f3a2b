/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which NIC drivers have devmem TCP, since which mainline kernel: so that a refusal on an
 * older kernel can name the kernel that would work. The sources for each entry are in
 * doc/first-run.md ("Which NICs and kernels").
 */
#ifndef DEVMEM_DRIVERS_H
#define DEVMEM_DRIVERS_H

#include <stddef.h>

struct devmem_driver {
    const char *name;   /* as ETHTOOL_GDRVINFO reports it */
    int rx[2], tx[2];   /* first kernel (major, minor) with devmem RX / TX in this driver */
    const char *needs;  /* what else the driver asks, or NULL */
};

/* The entry for driver, or NULL for a driver without devmem TCP in any kernel we know. */
const struct devmem_driver *devmem_driver_find(const char *driver);

/* Into out: each driver of the table with its first kernel for devmem RX, e.g. "bnxt_en 6.16,
 * mlx5_core 6.17, ...". */
void devmem_driver_list(char *out, size_t len);

/* The running kernel's major and minor (uname); 0 when unreadable. */
int devmem_kernel_version(int *major, int *minor);

/* Into out: what this driver on kernel major.minor means for devmem RX or TX (tx 0 or 1),
 * e.g. "gve has devmem RX from Linux 6.18 (this kernel is 6.16)", or "" when the table has
 * nothing to add. devmem_driver_advice asks for the running kernel's. */
void devmem_driver_advice_on(const char *driver, int tx, int major, int minor, char *out,
                             unsigned long len);
void devmem_driver_advice(const char *driver, int tx, char *out, unsigned long len);

#endif
