/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of drivers with devmem TCP (tools/lib/drivers.c), as devmem-probe words it: a
 * refusal on a kernel older than the driver's devmem names the kernel that has it.
 */
#include <string.h>

#include "check.h"
#include "drivers.h"

static int says(const char *driver, int tx, int major, int minor, const char *want)
{
    char out[200];

    devmem_driver_advice_on(driver, tx, major, minor, out, sizeof(out));
    if (0 != strcmp(out, want)) {
        printf("     got \"%s\"\n", out);
        return 0;
    }
    return 1;
}

int main(void)
{
    const struct devmem_driver *d = devmem_driver_find("gve");

    CHECK(NULL != d && 6 == d->rx[0] && 18 == d->rx[1] && 6 == d->tx[0] && 16 == d->tx[1],
          "gve: RX from 6.18, TX from 6.16");
    CHECK(NULL == devmem_driver_find("veth") && NULL == devmem_driver_find("idpf")
              && NULL == devmem_driver_find(NULL),
          "veth, idpf and no driver at all: not in the table");
    CHECK(says("gve", 0, 6, 16, "gve has devmem RX from Linux 6.18 (this kernel is 6.16)"),
          "gve RX on 6.16 names 6.18");
    CHECK(says("gve", 1, 6, 16, "gve has devmem TX since Linux 6.16, with the DQO-RDA queue format"),
          "gve TX on 6.16: there, with its queue format");
    CHECK(says("bnxt_en", 1, 6, 16, "bnxt_en has devmem TX from Linux 6.17 (this kernel is 6.16)"),
          "bnxt_en TX on 6.16 names 6.17");
    CHECK(says("mlx5_core", 0, 5, 15, "mlx5_core has devmem RX from Linux 6.17 (this kernel is 5.15)"),
          "mlx5_core on 5.15 names 6.17");
    CHECK(says("fbnic", 0, 7, 0, ""), "fbnic on 7.0: nothing to add");
    CHECK(says("virtio_net", 0, 6, 18, ""), "virtio_net: nothing the table knows");
    CHECK(says("gve", 0, 0, 0, ""), "an unreadable kernel version: nothing");
    {
        char all[256], tiny[12];

        devmem_driver_list(all, sizeof(all));
        CHECK(0 == strcmp(all, "bnxt_en 6.16, mlx5_core 6.17, gve 6.18, fbnic 6.18"),
              "the list of drivers with their first devmem RX kernel: %s", all);
        devmem_driver_list(tiny, sizeof(tiny));
        CHECK(strlen(tiny) < sizeof(tiny), "a short buffer gets a cut list: \"%s\"", tiny);
    }
    return check_finish();
}
