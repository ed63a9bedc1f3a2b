/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "drivers.h"

/* From each driver's devmem commits and the netdev pull requests of the release that took
 * them (doc/first-run.md lists them). */
static const struct devmem_driver drivers[] = {
    {"bnxt_en", {6, 16}, {6, 17}, "a PF on firmware with the VNIC_RE_FLUSH capability"},
    {"mlx5_core", {6, 17}, {6, 17}, "ConnectX-7 or later, rx-gro-hw on before tcp-data-split"},
    {"gve", {6, 18}, {6, 16}, "the DQO-RDA queue format"},
    {"fbnic", {6, 18}, {6, 18}, NULL},
};

const struct devmem_driver *devmem_driver_find(const char *driver)
{
    for (size_t i = 0; NULL != driver && i < sizeof(drivers) / sizeof(drivers[0]); i++) {
        if (0 == strcmp(driver, drivers[i].name)) {
            return &drivers[i];
        }
    }
    return NULL;
}

void devmem_driver_list(char *out, size_t len)
{
    size_t at = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]) && at < len; i++) {
        int n = snprintf(out + at, len - at, "%s%s %d.%d", 0 == i ? "" : ", ", drivers[i].name,
                         drivers[i].rx[0], drivers[i].rx[1]);

        at += n > 0 ? (size_t) n : 0;
    }
}

int devmem_kernel_version(int *major, int *minor)
{
    struct utsname un;

    *major = *minor = 0;
    return 0 == uname(&un) && 2 == sscanf(un.release, "%d.%d", major, minor) ? 0 : -1;
}

void devmem_driver_advice_on(const char *driver, int tx, int major, int minor, char *out,
                             unsigned long len)
{
    const struct devmem_driver *d = devmem_driver_find(driver);
    const char *what = tx ? "TX" : "RX";

    out[0] = '\0';
    if (NULL == d || major <= 0) {
        return;
    }
    const int *since = tx ? d->tx : d->rx;
    if (major < since[0] || (major == since[0] && minor < since[1])) {
        snprintf(out, len, "%s has devmem %s from Linux %d.%d (this kernel is %d.%d)", d->name,
                 what, since[0], since[1], major, minor);
    } else if (NULL != d->needs) {
        snprintf(out, len, "%s has devmem %s since Linux %d.%d, with %s", d->name, what,
                 since[0], since[1], d->needs);
    }
}

void devmem_driver_advice(const char *driver, int tx, char *out, unsigned long len)
{
    int major, minor;

    (void) devmem_kernel_version(&major, &minor);
    devmem_driver_advice_on(driver, tx, major, minor, out, len);
}
