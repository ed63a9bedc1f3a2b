#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Strided derived datatypes (MPI_Type_vector), small, large and many tiny blocks; the gaps of the
# receive buffer must stay untouched. 2, 3 and 4 ranks on this host.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs vector
devmem_mpi_test vector 2 -- -m 8M
devmem_mpi_test vector 3 -- -m 2M
devmem_mpi_test vector 4 -- -m 1M
devmem_finish
