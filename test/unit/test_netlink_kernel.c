/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The netdev netlink calls against the running kernel, on an interface without devmem
 * support (default lo; -i IFNAME for another, e.g. a veth inside a test namespace):
 * bind-rx and bind-tx must fail with EOPNOTSUPP and report the kernel's extack (its message,
 * or the attribute it flagged); malformed binds get the kernel's EINVAL/ENODEV; without
 * CAP_NET_ADMIN bind-rx gets EPERM; the socket stays usable after every refusal.
 * Exit 0 pass, 1 fail, 77 skip (no libmnl, no netdev family, no bind-rx in this kernel).
 */
#define _GNU_SOURCE
#include "config.h"

#include "netlink.h"
#include "netlink_dev.h"
#include "uapi.h"

#include <errno.h>
#include <grp.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* The kernel's extack as our message carries it: its words, or the attribute it flagged. */
static int has_extack(const char *msg, const char **kind)
{
    const char *words = strstr(msg, "(kernel: ");

    if (NULL != words && strlen(words) > strlen("(kernel: )") && NULL != strchr(words, ')')) {
        *kind = "message";
        return 1;
    }
    if (NULL != strstr(msg, "(kernel gave no message; it flagged ")
        || NULL != strstr(msg, "(kernel gave no message; required ")) {
        *kind = "flagged attribute";
        return 1;
    }
    *kind = "none";
    return 0;
}

/* bind-rx in a child that has dropped to nobody: the kernel must say EPERM. */
static void check_unprivileged(unsigned int ifindex, int fd)
{
    pid_t pid;
    int status = 0;

    if (0 != geteuid()) {
        printf("note: not root, the unprivileged check is the main one\n");
        return;
    }
    fflush(stdout);
    pid = fork();
    if (0 == pid) {
        struct devmem_nl *nl = NULL;
        struct devmem_err err;
        unsigned int q = 0;
        uint32_t id = 0;
        int rc;

        if (0 != setgroups(0, NULL) || 0 != setresgid(65534, 65534, 65534)
            || 0 != setresuid(65534, 65534, 65534)) {
            _exit(3);
        }
        if (devmem_nl_open(&nl, &err) < 0) {
            printf("FAIL: unprivileged open: %s\n", err.msg);
            fflush(stdout);
            _exit(1);
        }
        rc = devmem_nl_bind_rx(nl, ifindex, fd, &q, 1, &id, &err);
        printf("%s: unprivileged bind-rx gets EPERM: \"%s\"\n",
               -EPERM == rc && EPERM == err.code ? "ok  " : "FAIL", err.msg);
        devmem_nl_close(nl);
        fflush(stdout);
        _exit(-EPERM == rc && NULL != strstr(err.msg, "CAP_NET_ADMIN") ? 0 : 1);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        CHECK(0, "fork an unprivileged child");
        return;
    }
    if (WIFEXITED(status) && 3 == WEXITSTATUS(status)) {
        printf("note: cannot drop privileges here; unprivileged check not run\n");
        return;
    }
    CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
          "unprivileged child: EPERM with a hint at CAP_NET_ADMIN");
}

int main(int argc, char **argv)
{
    const char *ifname = "lo";
    static struct devmem_nl_queues qs;
    struct devmem_nl *nl = NULL;
    struct devmem_nl_dev dev;
    struct devmem_err err;
    unsigned int ifindex, q = 0, bogus;
    const char *kind;
    uint32_t id = 0;
    int fd = -1, rc, ret = 0;

    if (3 == argc && 0 == strcmp(argv[1], "-i")) {
        ifname = argv[2];
    } else if (1 != argc) {
        fprintf(stderr, "usage: %s [-i IFNAME]\n", argv[0]);
        return 1;
    }
    ifindex = if_nametoindex(ifname);
    if (0 == ifindex) {
        printf("FAIL: no interface %s here\n", ifname);
        return 1;
    }
    rc = devmem_nl_open(&nl, &err);
    if (-EOPNOTSUPP == rc && 0 == strcmp(err.msg, "built without libmnl")) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    if (-ENOENT == rc) {
        printf("SKIP: %s\n", err.msg);
        return 77;
    }
    CHECK(0 == rc, "open the netdev family: %s", 0 == rc ? "ok" : err.msg);
    if (0 != rc) {
        return 1;
    }
    if (!devmem_nl_has_cmd(nl, DEVMEM_NETDEV_CMD_BIND_RX)) {
        printf("SKIP: this kernel's netdev family has no bind-rx (Linux 6.12+)\n");
        ret = 77;
        goto cleanup;
    }
    /* No dmabuf exporter is needed: the kernel refuses the device before it looks at the fd. */
    fd = memfd_create("test-netlink", MFD_CLOEXEC);
    if (fd < 0 || 0 != ftruncate(fd, 1 << 20)) {
        printf("FAIL: memfd: %s\n", strerror(errno));
        ret = 1;
        goto cleanup;
    }

    rc = devmem_nl_dev_get(nl, ifindex, &dev, &err);
    CHECK(0 == rc && ifindex == dev.ifindex, "dev-get %s: ifindex %u", ifname, dev.ifindex);
    rc = devmem_nl_queue_get(nl, ifindex, &qs, &err);
    CHECK(0 == rc && qs.n_rx >= 1 && 0 == qs.n_rx_bound,
          "queue-get %s: %u RX, %u TX, none bound (%s)", ifname, qs.n_rx, qs.n_tx,
          0 == rc ? "ok" : err.msg);

    if (0 != geteuid()) {
        rc = devmem_nl_bind_rx(nl, ifindex, fd, &q, 1, &id, &err);
        CHECK(-EPERM == rc && NULL != strstr(err.msg, "CAP_NET_ADMIN"),
              "not root: bind-rx gets EPERM: \"%s\"", err.msg);
        goto cleanup;
    }

    rc = devmem_nl_bind_rx(nl, ifindex, fd, &q, 1, &id, &err);
    CHECK(-EOPNOTSUPP == rc && EOPNOTSUPP == err.code, "bind-rx %s queue 0: EOPNOTSUPP (%d)",
          ifname, rc);
    CHECK(has_extack(err.msg, &kind), "bind-rx: the kernel's extack is reported (%s): \"%s\"",
          kind, err.msg);
    printf("kernel-said: bind-rx %s: errno %d: %s\n", ifname, err.code, err.msg);

    rc = devmem_nl_bind_rx(nl, ifindex, fd, &q, 0, &id, &err);
    CHECK(-EINVAL == rc && NULL != strstr(err.msg, "queues"),
          "bind-rx with no queue: EINVAL naming the missing queues: \"%s\"", err.msg);

    /* an ifindex nobody has */
    for (bogus = 0x7ffff000u; NULL != if_indextoname(bogus, (char[IF_NAMESIZE]){0}); bogus++) {
    }
    rc = devmem_nl_bind_rx(nl, bogus, fd, &q, 1, &id, &err);
    CHECK(-ENODEV == rc, "bind-rx on unused ifindex %u: ENODEV: \"%s\"", bogus, err.msg);

    if (devmem_nl_has_cmd(nl, DEVMEM_NETDEV_CMD_BIND_TX)) {
        rc = devmem_nl_bind_tx(nl, ifindex, fd, &id, &err);
        CHECK(-EOPNOTSUPP == rc && EOPNOTSUPP == err.code, "bind-tx %s: EOPNOTSUPP (%d)", ifname,
              rc);
        CHECK(has_extack(err.msg, &kind), "bind-tx: the kernel's extack is reported (%s): \"%s\"",
              kind, err.msg);
        printf("kernel-said: bind-tx %s: errno %d: %s\n", ifname, err.code, err.msg);
    } else {
        printf("note: no bind-tx in this kernel (6.16+); bind-tx checks not run\n");
    }

    rc = devmem_nl_dev_get(nl, ifindex, &dev, &err);
    CHECK(0 == rc, "the socket still answers after the refusals");

    check_unprivileged(ifindex, fd);
cleanup:
    if (fd >= 0) {
        close(fd);
    }
    devmem_nl_close(nl);
    if (0 != ret) {
        return ret;
    }
    return check_finish();
}
