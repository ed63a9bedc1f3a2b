/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the clients of a running devmem-helperd in the tests share (helperd_clients,
 * helperd_attacks, fuzz_helperd): a raw connection, a client-library connection, a memfd, a
 * TCP socket bound as ranks bind theirs (devmem_helper_sendmsg sends a message with more
 * descriptors than it takes). Each exits the test on a failure of its own.
 */
#ifndef DEVMEM_HELPERD_TEST_H
#define DEVMEM_HELPERD_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "helper_client.h"

int hdtest_raw_connect(const char *path);
struct devmem_helper_client *hdtest_client(const char *path);
int hdtest_memfd(size_t size);
/* A TCP socket (type SOCK_STREAM or SOCK_DGRAM) on addr (host order): at the first free port
 * from 61000 up, bound explicitly outside the ephemeral range as the component does, or where
 * the kernel picks when kernel_port; listening when do_listen. */
int hdtest_socket(int type, bool do_listen, uint32_t addr, bool kernel_port);

#endif /* DEVMEM_HELPERD_TEST_H */
