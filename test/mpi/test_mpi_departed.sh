#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A message whose MPI_Send has returned reaches its receiver while the sender computes, not at
# the sender's next MPI call (departed.c): 4 ranks on this host, every ordered pair, 0 B to
# 1 MiB, pairs that talk for the first time included (an inline send there must not wait in
# our queue for the connection). Then the same where a socket cannot take a frame whole: for
# real (a flood of 200-byte messages into 64 KiB socket buffers of a rank that computes), and
# on demand (btl_devmem_testing fault=short-write: every SEND frame of rank 1 leaves in two
# parts, the second at the next writable event). Then over the emulated device path.
# btl/tcp (DEVMEM_TEST_BTL=tcp,self) runs the first two.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs departed
[ "$DEVMEM_BTL_NAME" = devmem ] && DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1)

devmem_mpi_test departed 4 -- -s 1
# the 64 KiB buffers make 4000 messages of 200 B fill the socket of a rank that computes
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    small=(--mca btl_devmem_sockbuf 65536)
else
    small=(--mca "btl_${DEVMEM_BTL_NAME}_sndbuf" 65536 --mca "btl_${DEVMEM_BTL_NAME}_rcvbuf" 65536)
fi
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=("${small[@]}")
devmem_mpi_test departed 3 -- -s 1 -m 1k -F 4000
DEVMEM_MCA_ARGS=("${saved[@]}")
[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_finish

DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing fault=short-write,fault_rank=1,fault_after=0)
if devmem_mpi_test departed 4 -- -s 1; then
    # rank 1 wrote half of every frame, so its inline sends finished the rest themselves
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 sendi_waited -gt 0
fi
DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_kernel emulated --mca btl_devmem_mode require)
devmem_mpi_test departed 4 -- -s 1 &&
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
devmem_finish
