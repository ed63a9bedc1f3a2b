#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Few descriptors, across two namespaced "hosts" (test/net/netns.sh), every byte checked:
#   - 8 ranks (4+4), all to all, each with a hard and soft descriptor limit of 64: the device
#     flows take at most their share (half of what was free at start) and the lanes beyond it
#     fall back to the control connections, which always find a descriptor; host path and
#     emulated device path (mode auto: a fallback is allowed, a failure is not);
#   - 16 ranks (8+8) at 128 descriptors, emulated device path, 4 lanes asked: all-to-all,
#     broadcasts and a ring of 1 MiB blocks, every byte checked, tokens balanced; the lanes a
#     peer come down to what the budget gives 15 peers, so that every peer that asks gets a
#     lane (no lane given up: lanes open only toward peers with gets) and each rank holds at
#     most its budget (devflow_fds_max);
#   - a stranger holding connections open on every listen port of both ranks, once they
#     are connected, more than their descriptor limit (40, hard and soft) allows: the oldest
#     waiting ones are dropped (counted in conn_refused), accepting pauses when no
#     descriptor is left (accept_pauses), and the job goes on.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "descriptor budgets are btl_devmem's (btl: $DEVMEM_TEST_BTL)"
command -v prlimit >/dev/null 2>&1 || devmem_skip "'prlimit' not found (util-linux)"
devmem_require_programs pingpong collectives
netns_setup
limit=$DEVMEM_MPI_LIMIT

run() { # LABEL NOFILE PROG NA NB PROG-ARGS...: the ranks under prlimit --nofile
    local label=$1 nofile=$2 prog=$3 na=$4 nb=$5
    shift 5
    devmem_run_checked "$label: $prog $na+$nb ranks $* (nofile $nofile)" "$prog" $((na + nb)) \
        "$limit" netns_mpirun "$limit" "$na" "$nb" \
        prlimit --nofile="$nofile:$nofile" "$DEVMEM_MPI_BIN/$prog" "$@"
}

# 1. 8 ranks at 64 descriptors
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1)
run "host path" 64 collectives 4 4 -m 256k
for path in host emulated; do
    [ "$path" = emulated ] &&
        DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode auto)
    if run "$path path" 64 pingpong 4 4 -m 1M; then
        if [ "$path" = emulated ]; then
            devmem_expect_device_path "$DEVMEM_LAST_OUT" 8 0
            fell=$(devmem_stat_sum "$DEVMEM_LAST_OUT" devflow_fallbacks)
            lanes=$(devmem_stat_sum "$DEVMEM_LAST_OUT" devflows)
            devmem_step_ok "device-flow lanes adopted: $lanes, given up: $fell (8 ranks, 64 descriptors each)"
        fi
    fi
done
DEVMEM_MCA_ARGS=("${saved[@]}")

# 16 ranks at 128 descriptors
DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1 --mca btl_devmem_kernel emulated
    --mca btl_devmem_mode auto --mca btl_devmem_devflows 4)
limit16=$((limit * 2))
if devmem_run_checked "16 ranks: collectives 8+8 ranks -m 1M -i 1 (nofile 128)" collectives 16 \
    "$limit16" netns_mpirun "$limit16" 8 8 \
    prlimit --nofile=128:128 "$DEVMEM_MPI_BIN/collectives" -m 1M -i 1; then
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 16 0
    over=0 fell=0 most=0
    for r in $(seq 0 15); do
        f=$(devmem_stat "$DEVMEM_LAST_OUT" "$r" devflow_fallbacks) || f=missing
        m=$(devmem_stat "$DEVMEM_LAST_OUT" "$r" devflow_fds_max) || m=missing
        [ "$f" = 0 ] || fell=$((fell + 1))
        if [ "$m" = missing ] || [ "$m" -gt 64 ]; then
            over=$((over + 1))
        elif [ "$m" -gt "$most" ]; then
            most=$m
        fi
    done
    if [ "$fell" -eq 0 ]; then
        devmem_step_ok "16 ranks: no rank gave a lane up for the control connection"
    else
        devmem_step_fail "16 ranks: $fell rank(s) gave device-flow lanes up (devflow_fallbacks > 0): the lanes a peer did not fit the budget"
    fi
    if [ "$over" -eq 0 ]; then
        devmem_step_ok "16 ranks: at most $most device-flow descriptors open at once in any rank (half of 128: 64)"
    else
        devmem_step_fail "16 ranks: $over rank(s) held more than 64 device-flow descriptors, or said nothing of it"
    fi
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# 2. a stranger fills every listen port past the ranks' descriptor limit
out=$DEVMEM_TEST_TMP/stranger.out
held=$DEVMEM_TEST_TMP/stranger.held
netns_mpirun "$limit" 1 1 --mca btl_devmem_kernel emulated --mca btl_devmem_verbose 10 \
    --mca btl_devmem_stats 1 --mca btl_devmem_handshake_timeout 1 \
    prlimit --nofile=40:40 "$DEVMEM_MPI_BIN/pingpong" -m 4M -i 60 >"$out" 2>&1 &
job=$!
# "[host:pid] btl:devmem: module 0: IF ADDR/LEN port P ..." and "[host:pid] btl:devmem:
# device path on IF: ... device flows on port Q": ADDR:P and ADDR:Q of each rank
targets_of() {
    awk '
    match($0, /^\[[^]]*\]/) { who = substr($0, 1, RLENGTH) }
    / btl:devmem: module [0-9]+: / {
        for (i = 1; i <= NF; i++) if ($i == "port") { split($(i - 1), a, "/"); addr[who] = a[1]; print a[1] ":" $(i + 1) }
    }
    /device flows on port [0-9]+$/ && (who in addr) { print addr[who] ":" $NF }' "$1" | sort -u
}
targets=()
for _ in $(seq 150); do
    mapfile -t targets < <(targets_of "$out")
    [ ${#targets[@]} -ge 4 ] && break
    sleep 0.1
done
if [ ${#targets[@]} -lt 4 ]; then
    devmem_step_fail "found the control and device-flow ports of both ranks (got: ${targets[*]:-none})"
    wait "$job"
    tail -n 30 "$out"
    devmem_finish
fi
devmem_step_ok "listen ports of the 2 ranks: ${targets[*]}"
for _ in $(seq 100); do # the ranks' own connections first: they need descriptors too
    grep -q 'device flow [0-9]* from .* adopted' "$out" && break
    sleep 0.1
done
# 300 connections per port, held open until the job is over (the stranger's own limit is
# raised for them)
ip netns exec "$NETNS_A" bash -c '
    ulimit -n 4096
    n=0
    for t in "$@"; do
        for _ in $(seq 300); do
            exec {fd}<>"/dev/tcp/${t%:*}/${t#*:}" 2>/dev/null && n=$((n + 1))
        done
    done
    echo "$n" >"'"$held"'.count"
    sleep 600' stranger "${targets[@]}" 2>/dev/null &
stranger=$!
if wait "$job"; then
    devmem_step_ok "the job finished while a stranger held $(cat "$held.count" 2>/dev/null || echo '?') connections on its ports"
else
    devmem_step_fail "the job failed while a stranger held connections on its ports"
    tail -n 30 "$out"
fi
kill "$stranger" 2>/dev/null
pkill -P "$stranger" 2>/dev/null
wait "$stranger" 2>/dev/null
devmem_expect_line "$out" '^pingpong: OK np=2' "every byte of the ping-pong validated"
refused=$(devmem_stat_sum "$out" conn_refused)
if [ "${refused:-0}" -gt 0 ]; then
    devmem_step_ok "conn_refused=$refused: silent strangers were dropped and counted"
else
    devmem_step_fail "conn_refused=${refused:-none}: no stranger was dropped"
fi
paused=$(devmem_stat_sum "$out" accept_pauses)
if [ "${paused:-0}" -gt 0 ]; then
    devmem_step_ok "accept_pauses=$paused: accepting paused while no descriptor was left"
else
    devmem_step_fail "accept_pauses=${paused:-none}: accepting never ran out of descriptors"
fi
devmem_expect_device_path "$out" 2 0
devmem_finish
