/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NIC locality: on a made-up two-socket GPU node (data/topo-two-sockets.xml) every class of
 * PCI path between the GPU and a NIC comes out as built; unknown devices and interfaces, and
 * a topology that cannot be read, say so; the CPUs near each NIC are its package's. This
 * machine's own topology loads too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locality.h"

#include "check.h"

#ifndef DEVMEM_TEST_DATA
#error "DEVMEM_TEST_DATA (the directory of the test topologies) must be defined"
#endif

/* The fixture with its placeholder interface names filled in; returns the temporary path. */
static const char *fixture(char *path, size_t len)
{
    FILE *in = fopen(DEVMEM_TEST_DATA "/topo-two-sockets.xml", "r"), *out;
    const char *tmp = getenv("TMPDIR");
    char line[1024];
    int fd;

    snprintf(path, len, "%s/test_locality.XXXXXX", NULL != tmp && '\0' != tmp[0] ? tmp : "/tmp");
    if (NULL == in || (fd = mkstemp(path)) < 0 || NULL == (out = fdopen(fd, "w"))) {
        printf("cannot read %s/topo-two-sockets.xml or write %s\n", DEVMEM_TEST_DATA, path);
        exit(1);
    }
    while (NULL != fgets(line, sizeof(line), in)) {
        char *at;

        if (NULL != (at = strstr(line, "@NEAR@"))) {
            fprintf(out, "%.*snicsw%s", (int) (at - line), line, at + 6);
        } else if (NULL != (at = strstr(line, "@FAR@"))) {
            fprintf(out, "%.*snicsys%s", (int) (at - line), line, at + 5);
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    fclose(out);
    return path;
}

/* CPU lists as the runtime gives a rank's binding (PMIX_CPUSET): the good ones, and each
 * kind of bad one refused with a reason. */
static void cpulist_cases(void)
{
    static const char *const bad[] = {"", "3-1", "0-4", "1,0", "0,,1", "a", "1-", "-1",
                                      "0 1", "2,2", "0x3", " 1", "1- 2"};
    struct devmem_err e;
    int cpus[8];
    size_t n = 0;
    int rc;

    rc = devmem_cpulist_parse("0-2,4,6-7", 8, cpus, 8, &n, &e);
    CHECK(0 == rc && 6 == n && 0 == cpus[0] && 2 == cpus[2] && 4 == cpus[3] && 7 == cpus[5],
          "CPU list 0-2,4,6-7: %zu CPUs", n);
    rc = devmem_cpulist_parse("5", 8, cpus, 8, &n, &e);
    CHECK(0 == rc && 1 == n && 5 == cpus[0], "CPU list 5: one CPU");
    rc = devmem_cpulist_parse("0-7", 8, cpus, 3, &n, &e);
    CHECK(0 == rc && 3 == n && 2 == cpus[2], "at most max CPUs from a list: %zu", n);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = devmem_cpulist_parse(bad[i], 4, cpus, 8, &n, &e);
        CHECK(-EINVAL == rc && 0 == n && '\0' != e.msg[0], "CPU list \"%s\" refused: %s",
              bad[i], e.msg);
    }
}

int main(void)
{
    static const struct {
        const char *ifname;
        enum devmem_path want;
    } nics[] = {
        {"nicsw", DEVMEM_PATH_SWITCH},   {"nicsw2", DEVMEM_PATH_SWITCHES},
        {"nichb", DEVMEM_PATH_HOST_BRIDGE}, {"nicnode", DEVMEM_PATH_NODE},
        {"nicsys", DEVMEM_PATH_SYSTEM},  {"veth-not-pci", DEVMEM_PATH_UNKNOWN},
    };
    struct devmem_topo *topo = NULL;
    struct devmem_err e;
    enum devmem_path p;
    char path[4096];
    int rc;

    cpulist_cases();
    rc = devmem_topo_open(&topo, "/nonexistent/topology.xml", &e);
    if (-ENOSYS == rc) {
        printf("skip: %s\n", e.msg);
        return 77;
    }
    CHECK(rc < 0 && NULL == topo && NULL != strstr(e.msg, "/nonexistent/topology.xml"),
          "a topology file that is not there is refused, named: \"%s\"", e.msg);

    rc = devmem_topo_open(&topo, fixture(path, sizeof(path)), &e);
    CHECK(0 == rc && NULL != topo, "the two-socket fixture loads (%s)", 0 == rc ? "" : e.msg);
    unlink(path);
    if (0 != rc) {
        return check_finish();
    }
    for (size_t i = 0; i < sizeof(nics) / sizeof(nics[0]); i++) {
        rc = devmem_topo_path(topo, "0000:03:00.0", nics[i].ifname, &p, &e);
        CHECK(0 == rc && nics[i].want == p, "GPU 0000:03:00.0 to %s: %s (want %s)",
              nics[i].ifname, devmem_path_name(p), devmem_path_name(nics[i].want));
    }
    for (size_t i = 1; i < sizeof(nics) / sizeof(nics[0]); i++) {
        CHECK(nics[i - 1].want < nics[i].want, "%s ranks nearer than %s",
              devmem_path_name(nics[i - 1].want), devmem_path_name(nics[i].want));
    }
    /* CUDA writes bus ids in capitals */
    rc = devmem_topo_path(topo, "0000:00:1C.0", "nicsw", &p, &e);
    CHECK(0 == rc && DEVMEM_PATH_HOST_BRIDGE == p, "bus id 0000:00:1C.0 in capitals: %s",
          devmem_path_name(p));
    rc = devmem_topo_path(topo, "0000:80:00.0", "nicsys", &p, &e);
    CHECK(0 == rc && DEVMEM_PATH_SWITCH == p, "a NIC to itself: %s", devmem_path_name(p));
    rc = devmem_topo_path(topo, "0000:80:00.0", "nicsw", &p, &e);
    CHECK(0 == rc && DEVMEM_PATH_SYSTEM == p, "the far NIC to the near one: %s",
          devmem_path_name(p));
    rc = devmem_topo_path(topo, "0000:9A:00.0", "nicsw", &p, &e);
    CHECK(-ENOENT == rc && DEVMEM_PATH_UNKNOWN == p && NULL != strstr(e.msg, "0000:9A:00.0"),
          "a bus id the topology lacks: \"%s\"", e.msg);
    /* the CPUs near a NIC: its package's (0-1 on socket 0, 2-3 on socket 1) */
    {
        int cpus[8];
        size_t n;

        rc = devmem_topo_nic_cpus(topo, "nicsw", cpus, 8, &n, &e);
        CHECK(0 == rc && 2 == n && 0 == cpus[0] && 1 == cpus[1],
              "CPUs near nicsw (socket 0): %zu of them, %d,%d", n, n > 0 ? cpus[0] : -1,
              n > 1 ? cpus[1] : -1);
        rc = devmem_topo_nic_cpus(topo, "nicsys", cpus, 8, &n, &e);
        CHECK(0 == rc && 2 == n && 2 == cpus[0] && 3 == cpus[1],
              "CPUs near nicsys (socket 1): %zu of them, %d,%d", n, n > 0 ? cpus[0] : -1,
              n > 1 ? cpus[1] : -1);
        rc = devmem_topo_nic_cpus(topo, "nicsys", cpus, 1, &n, &e);
        CHECK(0 == rc && 1 == n && 2 == cpus[0], "at most max CPUs: %zu", n);
        rc = devmem_topo_nic_cpus(topo, "veth-not-pci", cpus, 8, &n, &e);
        CHECK(-ENOENT == rc && 0 == n && NULL != strstr(e.msg, "veth-not-pci"),
              "no CPUs near an interface that is no PCI device: \"%s\"", e.msg);
    }
    devmem_topo_close(topo);

    rc = devmem_topo_open(&topo, NULL, &e);
    CHECK(0 == rc, "this machine's topology loads (%s)", 0 == rc ? "" : e.msg);
    devmem_topo_close(topo);
    return check_finish();
}
