/* SPDX-License-Identifier: BSD-3-Clause */
/* A connected loopback TCP pair for the unit tests that drive the kernel layer's sockets. */
#ifndef DEVMEM_TEST_TCP_PAIR_H
#define DEVMEM_TEST_TCP_PAIR_H

#include <stdint.h>

#define TCP_PAIR_ZEROCOPY 0x1 /* SO_ZEROCOPY on the sender (devmem_tx_socket_setup) */
#define TCP_PAIR_NONBLOCK 0x2 /* both ends non-blocking, the sender with TCP_NODELAY */

/* *snd connected to *rcv over 127.0.0.1; *port (when not NULL): the receiver's port.
 * 0, or -1 with whatever was opened left in *snd / *rcv (-1 otherwise) for the caller to
 * close. */
int tcp_pair(int *snd, int *rcv, uint16_t *port, int flags);

#endif
