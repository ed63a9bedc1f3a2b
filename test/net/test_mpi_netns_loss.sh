#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Packet loss across two namespaced "hosts" (test/net/netns.sh): nftables drops packets that
# arrive on the veth at random (numgen), in both namespaces; TCP retransmits, and the job
# must complete with every byte right. No timing is asserted: a run passes when it
# completes with its data checked. Each impairment runs the host path and the emulated device
# path (btl_devmem_mode require: device flows made despite the loss, every token returned):
#   - 1 % and 5 % of all packets;
#   - 30 % of connection requests (SYN) during start-up: control connections and device-flow
#     lanes connect again when theirs are lost, and a lane still connecting is never taken for
#     a dead peer (the liveness check judges established connections only).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_programs pingpong collectives
netns_setup
limit=$DEVMEM_MPI_LIMIT

run() { # LABEL PATH PROG NA NB PROG-ARGS...
    local label=$1 path=$2 prog=$3 na=$4 nb=$5
    shift 5
    local saved=("${DEVMEM_MCA_ARGS[@]}")
    if [ "$path" = emulated ]; then
        DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require)
    fi
    [ "$DEVMEM_BTL_NAME" = devmem ] && DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1)
    if devmem_run_checked "$label, $path path: $prog $na+$nb ranks $*" "$prog" $((na + nb)) \
        "$limit" netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/$prog" "$@"; then
        if [ "$path" = emulated ]; then
            # with lost SYNs a lane may not come: its gets then take the control connection
            # (after the claim's timeout), and nothing has to land in the pool
            devmem_expect_device_path "$DEVMEM_LAST_OUT" $((na + nb)) "$want_dmabuf"
        elif [ "$DEVMEM_BTL_NAME" = devmem ]; then
            for ((r = 0; r < na + nb; r++)); do
                devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" proto_errors -eq 0
            done
        fi
    fi
    DEVMEM_MCA_ARGS=("${saved[@]}")
}

paths=(host)
[ "$DEVMEM_BTL_NAME" = devmem ] && paths+=(emulated)

for spec in "10 all 1 %" "50 all 5 %" "300 syn 30 % of SYNs"; do
    read -r permille kind label <<<"$spec"
    if [ "$kind" = syn ]; then
        netns_loss "$permille" syn
        want_dmabuf=0
    else
        netns_loss "$permille"
        want_dmabuf=1
    fi
    for path in "${paths[@]}"; do
        run "$label" "$path" pingpong 1 1 -m 1M
        run "$label" "$path" collectives 2 2 -m 256k
    done
done
netns_loss_clear
devmem_finish
