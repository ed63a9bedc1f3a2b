#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Ping-pong with checked data, 0 B up to 64 MiB (odd sizes around every power of two), between
# every pair of ranks, at 2, 3 and 4 ranks on this host.
# BTL: ${DEVMEM_TEST_BTL:-devmem,self}; extra mpirun arguments: $DEVMEM_TEST_MCA.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs pingpong
devmem_mpi_test pingpong 2 -- -m 64M
devmem_mpi_test pingpong 3 -- -m 16M
devmem_mpi_test pingpong 4 -- -m 4M
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    # the epoll backend of the component's socket set, used past 16 sockets (btl_devmem_testing poll_max=)
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing poll_max=0)
    devmem_mpi_test pingpong 4 -- -m 4M
fi
devmem_finish
