#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The counters as MPI_T performance variables (pvars.c): found by name with the right class,
# read before and after a validated exchange, grown by at least what it moved; the last
# reading must not exceed what the btl_devmem_stats line says at finalize (the line counts
# the finalize traffic too). Host path, then the emulated device path.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "reads btl_devmem's variables (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pvars
DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1)

# compare RANK KEY: the pvar reading of KEY must be <= the stats line's value
compare() {
    local r=$1 key=$2 read line
    read=$(awk -v r="$r" -v k="$key" '$1 == "pvars:" && $2 == "rank=" r {
        for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' \
        "$DEVMEM_LAST_OUT")
    if ! line=$(devmem_stat "$DEVMEM_LAST_OUT" "$r" "$key") || [ -z "$read" ]; then
        devmem_step_fail "rank $r: no pvar reading or stats value for $key"
    elif [ "$read" -le "$line" ] && [ "$read" -gt 0 ]; then
        devmem_step_ok "rank $r: $key read during the run $read <= $line at finalize"
    else
        devmem_step_fail "rank $r: $key read during the run $read, stats line $line"
    fi
}
check() {
    local r k
    for r in 0 1; do
        for k in tx_frags rx_frags tx_host rx_host; do
            compare "$r" "$k"
        done
    done
}
devmem_mpi_test pvars 2 -- -i 200 -m 1k && check
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require)
devmem_mpi_test pvars 2 -- -i 50 -m 4k && check
devmem_finish
