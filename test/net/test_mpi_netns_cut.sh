#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A cut link: two namespaced "hosts" joined by two veth pairs, Open MPI's out-of-band on the
# first, btl/devmem on the second (a management network and a data network). The data link
# is taken down in the middle of a ping-pong: no FIN, no reset, packets just stop. A rank
# must notice, name the peer it lost, and mpirun must exit non-zero well within 30 s: with
# the defaults (btl_devmem_peer_timeout 20 s: unacknowledged data in flight on the sending
# side, keepalive probes from 10 s on on the waiting side), and with a short peer timeout.
# (Keepalive alone is not enough: when both sides have data in flight, the kernel sends no
# probes.) Without them the job
# would wait for the kernel's 15 minutes of retransmissions. And a peer that is only busy
# outside MPI while data waits for it must not be taken for lost.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the peer timeout is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong slowreader
netns_setup
data=dmd$$
data=${data:0:15}
netns_add_link "$data" 192.0.2.101 192.0.2.102
NETNS_BTL_IF=$data

# Jobs started by cut_start run side by side over the same data link, and see the same cut
# (cut_now): the waits for the defaults' timeouts overlap instead of adding up. Each has a
# TMPDIR of its own: mpiruns starting at once on one node name race to make the same
# session directory (Open MPI 4.1: "A call to mkdir was unable to create the desired
# directory ... File exists").
cut_labels=() cut_jobs=() cut_outs=()
cut_start() { # LABEL EXTRA-MCA-ARGS...
    local label=$1 out tmp
    shift
    out=$DEVMEM_TEST_TMP/cut-${label// /-}.out
    tmp=$DEVMEM_TEST_TMP/tmp-${#cut_jobs[@]}
    mkdir -p "$tmp"
    TMPDIR=$tmp netns_mpirun 120 1 1 "$@" "$DEVMEM_MPI_BIN/pingpong" -m 4M -i 100000 >"$out" 2>&1 &
    cut_labels+=("$label") cut_jobs+=($!) cut_outs+=("$out")
}

cut_now() {
    local i label out start rc elapsed alive=()
    sleep 4 # connections up, messages in flight
    for i in "${!cut_jobs[@]}"; do
        if kill -0 "${cut_jobs[$i]}" 2>/dev/null; then
            alive+=("$i")
        else
            wait "${cut_jobs[$i]}"
            cat "${cut_outs[$i]}"
            devmem_step_fail "${cut_labels[$i]}: the job ended before the cut (it must run for minutes)"
        fi
    done
    start=$EPOCHREALTIME
    ip -n "$NETNS_A" link set "$data" down
    for i in "${alive[@]}"; do
        label=${cut_labels[$i]} out=${cut_outs[$i]}
        wait "${cut_jobs[$i]}"
        rc=$?
        elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        grep -v '^\[[^]]*\] \[ *[0-9]*\]' "$out" | head -n 40
        netns_expect_job_failed "$label" "$rc" "$elapsed" "the data link went down"
        devmem_expect_line "$out" "lost the connection to \[\[[0-9]+,[0-9]+\],[01]\] on host dmnode-$$-[ab] \(interface $data\)" \
            "$label: a rank names the peer it lost"
    done
    cut_labels=() cut_jobs=() cut_outs=()
    ip -n "$NETNS_A" link set "$data" up && ip -n "$NETNS_B" link set "$data" up
}

# The other side of the coin: a peer that stays out of MPI (8 s) while data waits for it,
# with a peer timeout far shorter than that (keepalive probes after 1 s), is busy, not lost.
ip -n "$NETNS_A" link set "$data" up && ip -n "$NETNS_B" link set "$data" up
devmem_run_checked "a receiver busy for 8 s, peer timeout 3 s" slowreader 2 \
    "$DEVMEM_MPI_LIMIT" netns_mpirun "$DEVMEM_MPI_LIMIT" 1 1 --mca btl_devmem_peer_timeout 3 \
    "$DEVMEM_MPI_BIN/slowreader" -s 8

# the job that ends first comes first: cut_now times each job when its wait returns
cut_start "host path, peer timeout 5 s" --mca btl_devmem_peer_timeout 5
cut_start "host path, defaults"
cut_start "emulated device path, defaults" --mca btl_devmem_kernel emulated --mca btl_devmem_mode require
cut_now
devmem_finish
