#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Message matching: MPI_ANY_SOURCE/ANY_TAG, MPI_Probe/MPI_Iprobe with MPI_Get_count, and
# unexpected messages (eager and rendezvous sizes sent before any receive is posted), at 2, 3
# and 4 ranks on this host.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs anysource unexpected
devmem_mpi_test anysource 2 -- -n 40 -m 1M
devmem_mpi_test anysource 3
devmem_mpi_test anysource 4
devmem_mpi_test unexpected 2 -- -m 8M
devmem_mpi_test unexpected 3 -- -m 4M
devmem_mpi_test unexpected 4 -- -m 2M
devmem_finish
