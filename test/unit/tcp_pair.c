/* SPDX-License-Identifier: BSD-3-Clause */
/* A connected loopback TCP pair (tcp_pair.h). */
#include "tcp_pair.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tx.h"

int tcp_pair(int *snd, int *rcv, uint16_t *port, int flags)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, rc = -1;

    *snd = *rcv = -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || 0 != bind(lfd, (struct sockaddr *) &a, sizeof(a)) || 0 != listen(lfd, 4) ||
        0 != getsockname(lfd, (struct sockaddr *) &a, &al)) {
        goto cleanup;
    }
    if (NULL != port) {
        *port = ntohs(a.sin_port);
    }
    *snd = socket(AF_INET, SOCK_STREAM, 0);
    if ((flags & TCP_PAIR_ZEROCOPY) && 0 != devmem_tx_socket_setup(*snd, NULL, NULL)) {
        goto cleanup;
    }
    if (0 != connect(*snd, (struct sockaddr *) &a, sizeof(a))) {
        goto cleanup;
    }
    *rcv = accept(lfd, NULL, NULL);
    if (*rcv < 0) {
        goto cleanup;
    }
    if (flags & TCP_PAIR_NONBLOCK) {
        setsockopt(*snd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fcntl(*snd, F_SETFL, O_NONBLOCK);
        fcntl(*rcv, F_SETFL, O_NONBLOCK);
    }
    rc = 0;
cleanup:
    if (lfd >= 0) {
        close(lfd);
    }
    return rc;
}
