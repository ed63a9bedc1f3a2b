#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Soak (not part of the check; run by hand): random traffic for SECONDS (default 600) between
# 2+2 ranks on two namespaced hosts (test/net/netns.sh), the veth shaped with tbf, through the
# emulated device path. test/mpi/soak checks every byte; this script then wants the token
# ledger balanced on every rank and resident memory flat: each rank's last reading within
# 10 % (and 16 MiB) of its first one after warm-up.
#
#   DEVMEM_BUILD=build test/soak/soak.sh [SECONDS] [RATE]      RATE: tbf rate, default 2gbit
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../net/netns.sh"

seconds=${1:-600}
rate=${2:-2gbit}
[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "soaks btl_devmem (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs soak
netns_setup
netns_shape root tbf rate "$rate" burst 256kb latency 20ms
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_stats 1)
limit=$((seconds + 120))
if devmem_run_checked "soak 2+2 ranks, ${seconds}s, tbf $rate" soak 4 "$limit" \
    netns_mpirun "$limit" 2 2 "$DEVMEM_MPI_BIN/soak" -t "$seconds" -m 4M; then
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
    for r in 0 1 2 3; do
        # the second reading is after warm-up (free lists and pools grown)
        readings=$(sed -n "s/^soak: rank $r round .* rss \([0-9]*\) KiB$/\1/p" "$DEVMEM_LAST_OUT")
        first=$(echo "$readings" | sed -n 2p)
        last=$(echo "$readings" | tail -n 1)
        if [ -z "$first" ] || [ -z "$last" ]; then
            devmem_step_fail "rank $r: fewer than two memory readings"
        elif [ "$last" -le $((first + first / 10 + 16384)) ]; then
            devmem_step_ok "rank $r: resident memory flat: $first KiB after warm-up, $last KiB at the end"
        else
            devmem_step_fail "rank $r: resident memory grew from $first KiB to $last KiB"
        fi
    done
fi
devmem_finish
