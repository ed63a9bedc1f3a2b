/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "helperd_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int hdtest_raw_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || 0 != connect(fd, (struct sockaddr *) &sa, sizeof(sa))) {
        perror("connect");
        exit(1);
    }
    return fd;
}

struct devmem_helper_client *hdtest_client(const char *path)
{
    struct devmem_helper_client *c;
    struct devmem_err e;

    if (0 != devmem_helper_connect(&c, path, 5000, &e)) {
        printf("FAIL connect: %s\n", e.msg);
        exit(1);
    }
    return c;
}

int hdtest_memfd(size_t size)
{
    int fd = memfd_create("helperd-test", MFD_CLOEXEC);

    if (fd < 0 || 0 != ftruncate(fd, (off_t) size)) {
        perror("memfd");
        exit(1);
    }
    return fd;
}

int hdtest_socket(int type, bool do_listen, uint32_t addr, bool kernel_port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(addr)};

    for (unsigned int port = 61000; port <= 65535; port++) {
        int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

        sin.sin_port = kernel_port ? 0 : htons((uint16_t) port);
        if (fd >= 0 && 0 == bind(fd, (struct sockaddr *) &sin, sizeof(sin))
            && (!do_listen || 0 == listen(fd, 4))) {
            return fd;
        }
        if (fd >= 0) {
            close(fd);
        }
        if (kernel_port || EADDRINUSE != errno) {
            break;
        }
    }
    perror("tcp socket");
    exit(1);
}
