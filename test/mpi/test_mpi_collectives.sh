#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Collectives with checked results: Bcast, Allreduce (exact integer sums), Alltoallv with
# irregular counts, Allgather. 2, 3 and 4 ranks on this host.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs collectives
devmem_mpi_test collectives 2 -- -m 8M
devmem_mpi_test collectives 3 -- -m 4M
devmem_mpi_test collectives 4 -- -m 4M
devmem_finish
