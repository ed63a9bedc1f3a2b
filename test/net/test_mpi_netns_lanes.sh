#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Several device flows (lanes) per peer across two namespaced "hosts", through the emulated
# kernel: ping-pongs with 1, 2 and 4 lanes (btl_devmem_devflows; up to 64 MiB, 256 MiB with
# 4) into as many RX queues (an RSS context over them), then 4 lanes into 2 queues and into 1,
# and 4 lanes with a 200-byte fragment limit (fewer, larger chunks); every byte checked,
# every token returned, every lane and every queue carrying bytes (the lanes and queues
# lines), gathers batched (one per get or chunk at most); 4 lanes into a 4-page RX pool
# (backpressure on all of them at once); the same with receiving threads (1 and 2 x 1 and 4
# lanes, a 4-page pool two threads share); then one lane killed in the middle of a transfer
# (ss -K on its socket), with and without receiving threads: the job must end, naming the
# peer, well within 30 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "device flows are btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong collectives soak
netns_setup
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_stats 1)
limit=$DEVMEM_MPI_LIMIT

run() { # LANES QUEUES PROG NA NB PROG-ARGS...
    local lanes=$1 queues=$2 prog=$3 na=$4 nb=$5 r
    shift 5
    devmem_run_checked "$prog $na+$nb ranks, $lanes lanes, $queues queues${*:+ $*}" "$prog" \
        $((na + nb)) "$limit" netns_mpirun "$limit" "$na" "$nb" --mca btl_devmem_devflows "$lanes" \
        --mca btl_devmem_rx_queues "$queues" "$DEVMEM_MPI_BIN/$prog" "$@" || return 1
    devmem_expect_device_path "$DEVMEM_LAST_OUT" $((na + nb)) 1
    for ((r = 0; r < na + nb; r++)); do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflow_lanes -eq "$lanes"
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_queues -eq "$queues"
        devmem_expect_spread "$DEVMEM_LAST_OUT" "$r" lanes "$lanes"
        devmem_expect_spread "$DEVMEM_LAST_OUT" "$r" queues "$queues"
    done
}

# Gathers in batches, never one per receive: one per finished get or chunk, one per eighth
# of the default 64 MiB RX pool within a longer one (shared among the pipes: the progress
# thread's and each receiving thread's), and one where a full pool cannot wait for pages
# the open batch holds; at most that many
expect_batched() { # RANK
    local f=$DEVMEM_LAST_OUT r=$1 b c full mib threads most
    b=$(devmem_stat "$f" "$r" gather_batches) && c=$(devmem_stat "$f" "$r" devflow_chunks) &&
        full=$(devmem_stat "$f" "$r" rx_pool_full) && threads=$(devmem_stat "$f" "$r" rx_threads) &&
        mib=$((($(devmem_stat "$f" "$r" rx_dmabuf) + $(devmem_stat "$f" "$r" rx_linear)) >> 20)) ||
        { devmem_step_fail "rank $r: gather_batches, devflow_chunks, rx_pool_full in the stats"; return; }
    most=$((c + full + mib * (1 + threads) / 8))
    if [ "$b" -gt 0 ] && [ "$b" -le "$most" ]; then
        devmem_step_ok "rank $r: $b gathers for $c gets and chunks, $mib MiB, $full full pools (at most $most)"
    else
        devmem_step_fail "rank $r: $b gathers for $c gets and chunks, $mib MiB, $full full pools: want 1 to $most"
    fi
}

for lanes in 1 2 4; do
    # messages past the 16 MiB get limit at every lane count; the longest run only with 4
    run "$lanes" "$lanes" pingpong 1 1 -m $((lanes == 4 ? 256 : 64))M || continue
    expect_batched 0
    expect_batched 1
    if [ "$lanes" -gt 1 ]; then
        # 16 MiB gets in 512 KiB chunks: many chunks in flight over the lanes at once
        devmem_expect_stat "$DEVMEM_LAST_OUT" 0 chunks_inflight_max -ge $((2 * lanes))
    fi
done
run 4 2 pingpong 1 1 -m 64M
run 4 1 pingpong 1 1 -m 64M

# A tiny fragment limit: the chunks' requests travel in the first one's inline space, so a
# 16 MiB get is cut into fewer, larger chunks (9 at 200 bytes) rather than refused
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_max_send_size 200 --mca btl_devmem_eager_limit 200)
if run 4 4 pingpong 1 1 -m 64M; then
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 chunks_inflight_max -ge 9
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# The pipelined gather without a GPU: copies into host memory held back until each
# batch's gather has been looked at 3 times, as a GPU finishes later. With depth 4 several
# batches gather at once, each holding its pool pages until its bytes are in place (the
# emulation poisons a page given back: a token returned early shows as wrong bytes); with
# depth 1 never more than one.
saved=("${DEVMEM_MCA_ARGS[@]}")
for depth in 4 1; do
    DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_testing gather_lag=3
        --mca btl_devmem_gather_depth "$depth")
    if run 4 4 pingpong 1 1 -m 64M; then
        for r in 0 1; do
            expect_batched "$r"
            if [ "$depth" -gt 1 ]; then
                devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gathers_inflight_max -ge 2
            else
                devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gathers_inflight_max -eq 1
            fi
        done
    fi
done
# ... and into a pool of 4 pages: a full pool waits for the oldest gather, not for readiness
# (a batch that holds pages is launched first: it never waits for them itself)
DEVMEM_MCA_ARGS+=(--mca btl_devmem_rx_pool_size 16384 --mca btl_devmem_devflow_chunk 65536)
if run 4 4 collectives 2 2 -m 2M; then
    for r in 0 1 2 3; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gather_waits -gt 0
    done
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# Receiving threads (btl_devmem_rx_threads): 1 and 2 threads x 1 and 4 lanes, every byte
# checked, tokens balanced; every device-flow byte received by a thread (the rxthreads line
# sums to the lanes line), every thread busy where there are lanes enough
expect_threads() { # RANK THREADS LANES
    local f=$DEVMEM_LAST_OUT r=$1 n=$2 lanes=$3 line tb lb
    devmem_expect_stat "$f" "$r" rx_threads -eq "$n"
    line=$(grep -a "btl_devmem rxthreads: rank=$r " "$f" | tail -n 1)
    tb=$(sed -n 's/.* rx_bytes=//p' <<<"$line" | tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }')
    lb=$(grep -a "btl_devmem lanes: rank=$r " "$f" | tail -n 1 | sed -n 's/.* rx_bytes=//p' |
        tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }')
    if [ -z "$line" ] || [ "$tb" -ne "$lb" ] || [ "$tb" -eq 0 ]; then
        devmem_step_fail "rank $r: the threads received $tb bytes, the lanes $lb (${line:-no rxthreads line})"
    elif [ "$lanes" -ge "$n" ] &&
        sed -n 's/.* receives=\([0-9,]*\) .*/\1/p' <<<"$line" | tr ',' '\n' | grep -qx 0; then
        devmem_step_fail "rank $r: a receiving thread had no lane: $line"
    else
        devmem_step_ok "rank $r: $n thread(s) received all $tb bytes: ${line#*rxthreads: }"
    fi
}
saved=("${DEVMEM_MCA_ARGS[@]}")
for threads in 1 2; do
    for lanes in 1 4; do
        DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_rx_threads "$threads")
        size=$((threads == 2 && lanes == 4 ? 256 : 64))M
        if run "$lanes" "$lanes" pingpong 1 1 -m "$size"; then
            for r in 0 1; do
                expect_threads "$r" "$threads" "$lanes"
                expect_batched "$r"
            done
        fi
    done
done
# the pipelined gather held back, and a pool of 4 pages that 2 threads share
DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_rx_threads 2 --mca btl_devmem_testing gather_lag=3)
if run 4 4 pingpong 1 1 -m 64M; then
    expect_threads 0 2 4
fi
DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_rx_threads 2 --mca btl_devmem_rx_pool_size 16384
    --mca btl_devmem_devflow_chunk 65536)
if run 4 4 collectives 2 2 -m 2M; then
    for r in 0 1 2 3; do
        expect_threads "$r" 2 4
    done
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# Backpressure on every lane: a pool of 4 pages, 4 lanes into it
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_rx_pool_size 16384 --mca btl_devmem_devflow_chunk 65536)
if run 4 4 collectives 2 2 -m 2M; then
    for r in 0 1 2 3; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" emul_pool_limited -gt 0
    done
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# One lane killed mid-transfer (with EXTRA-MCA-ARGS: also so served). Rank 0 (host a) names
# each lane's source port at verbose 20; lane 1's socket is destroyed in a's namespace,
# which resets the connection on both sides.
lane_kill() { # LABEL EXTRA-MCA-ARGS...
    local label=$1 out=$DEVMEM_TEST_TMP/lane-kill.out port start rc elapsed
    shift
    # soak: rendezvous sizes from the start (lanes open with a rank's first get), and a job
    # that outlasts the kill
    netns_mpirun 120 1 1 --mca btl_devmem_devflows 4 --mca btl_devmem_verbose 20 "$@" \
        "$DEVMEM_MPI_BIN/soak" -m 16M -t 100 >"$out" 2>&1 &
    job=$!
    port=
    for _ in $(seq 1 100); do
        port=$(grep -aEo "dmnode-$$-a:[0-9]+\] .*device flow 1 to \[\[[0-9]+,[0-9]+\],1\] from port [0-9]+" \
            "$out" | head -n 1 | sed -e 's/.* from port //')
        [ -n "$port" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.1
    done
    sleep 2 # gets in flight on every lane
    if [ -z "$port" ] || ! kill -0 "$job" 2>/dev/null; then
        grep -av '^\[[^]]*\] \[ *[0-9]*\]' "$out" | tail -n 20
        devmem_step_fail "$label: no lane-1 port named, or the job ended before the kill"
        kill "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        return
    fi
    start=$EPOCHREALTIME
    if ip netns exec "$NETNS_A" ss -K -t state established "( sport = :$port )" >/dev/null; then
        wait "$job"
        rc=$?
        elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        grep -av '^\[[^]]*\] \[ *[0-9]*\]' "$out" | grep -av "device flow [0-9]* \(to\|from\)" |
            grep -av "receiving thread [0-9]*$" | head -n 30
        netns_expect_job_failed "$label" "$rc" "$elapsed" "lane 1 (port $port) was reset"
        devmem_expect_line "$out" "lost the connection to \[\[[0-9]+,[0-9]+\],[01]\] on host dmnode-$$-[ab] .*device flow [0-9]" \
            "$label: a rank names the peer and the device flow"
    else
        devmem_step_fail "$label: 'ss -K' could not destroy the socket (kernel without INET_DIAG_DESTROY?)"
        kill "$job" 2>/dev/null
        wait "$job" 2>/dev/null
    fi
}
lane_kill "lane kill"
lane_kill "lane kill, 2 receiving threads" --mca btl_devmem_rx_threads 2
devmem_finish
