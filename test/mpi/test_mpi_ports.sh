#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# btl_devmem_ports, for clusters whose firewall opens a port range: 2 ranks on loopback with
# the emulated device path and a range of 16 ports. While rank 0 computes (latewait -W), `ss`
# lists the job's listen sockets: each rank has its control and its device-flow listener, and
# every one of them lies in the range. Every byte checked after. Then a range with one port
# for the four listeners ends the job with the range named (no hang), and a reversed range
# is refused by name.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "btl_devmem_ports is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs latewait pingpong
command -v ss >/dev/null || devmem_skip "no ss (iproute2)"

# above the usual ephemeral range (32768-60999), so that no outgoing connection holds one
lo=62100 hi=62115
job=
cleanup() { [ -n "$job" ] && kill -9 "$job" 2>/dev/null; devmem_testlib_cleanup; }
trap cleanup EXIT

out=$DEVMEM_TEST_TMP/latewait.out
tag=$$-$RANDOM
DEVMEM_PORTS_JOB=$tag devmem_mpirun 120 -np 2 -x DEVMEM_PORTS_JOB "${DEVMEM_MCA_ARGS[@]}" \
    --mca btl_devmem_if_include lo --mca btl_devmem_kernel emulated \
    --mca btl_devmem_mode require --mca btl_devmem_stats 1 --mca btl_devmem_ports "$lo-$hi" \
    "$DEVMEM_MPI_BIN/latewait" -W -v -m 4M -s 3 >"$out" 2>&1 &
job=$!

if ! devmem_wait_line "$out" 'latewait: computing' "$job"; then
    cat "$out"
    devmem_step_fail "rank 0 never said it computes, or the job ended first"
else
    pids=$(devmem_tagged_pids latewait "DEVMEM_PORTS_JOB=$tag")
    [ "$(wc -w <<<"$pids")" -eq 2 ] || devmem_step_fail "the job's 2 processes, found: $pids"
    for p in $pids; do
        ports=$(ss -Hltnp | awk -v pid="pid=$p," 'index($0, pid) { n = split($4, a, ":"); print a[n] }' | sort -n | tr '\n' ' ')
        outside=$(for q in $ports; do [ "$q" -ge "$lo" ] && [ "$q" -le "$hi" ] || echo "$q"; done)
        if [ "$(wc -w <<<"$ports")" -lt 2 ]; then
            devmem_step_fail "process $p: a control and a device-flow listener, ss lists ports: ${ports:-none}"
        elif [ -n "$outside" ]; then
            devmem_step_fail "process $p: listen ports outside $lo-$hi: $(tr '\n' ' ' <<<"$outside")(all: $ports)"
        else
            devmem_step_ok "process $p listens on ports $ports- all in $lo-$hi"
        fi
    done
fi
wait "$job"
rc=$?
job=
if [ "$rc" -eq 0 ] && grep -aq 'latewait: OK' "$out"; then
    devmem_step_ok "latewait -W with btl_devmem_ports $lo-$hi: $(grep -a 'latewait: OK' "$out" | cut -c1-100)"
    devmem_expect_device_path "$out" 2 1
else
    cat "$out"
    devmem_step_fail "latewait -W with btl_devmem_ports $lo-$hi (exit $rc)"
fi

# one port for two ranks' four listeners: the job ends, saying why
devmem_expect_failure "btl_devmem_ports with one port" "no listen socket in btl_devmem_ports $lo-$lo" 60 \
    devmem_mpirun 60 -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo \
    --mca btl_devmem_kernel emulated --mca btl_devmem_ports "$lo-$lo" \
    "$DEVMEM_MPI_BIN/pingpong" -m 64K
# A reversed range is refused by name. Open MPI 4.1's runtime sometimes loses a help
# message on its way to mpirun (its own "ORTE_ERROR_LOG: Data unpack would read past end of
# buffer in file .../show_help.c", seen in 1 of 8-10 runs): only then the run is made once
# more.
rev=$DEVMEM_TEST_TMP/reversed.out
for try in 1 2; do
    echo "---- btl_devmem_ports reversed (must fail, try $try)"
    _devmem_run_bg devmem_mpirun 60 -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_ports "$hi-$lo" \
        "$DEVMEM_MPI_BIN/pingpong" -m 64K >"$rev" 2>&1
    rc=$?
    _devmem_strip_nul "$rev"
    grep -aq 'btl_devmem_ports is "62115-62100"' "$rev" && break
    grep -aq 'ORTE_ERROR_LOG: Data unpack would read past end of buffer in file .*show_help.c' \
        "$rev" || break
    echo "(Open MPI 4.1's runtime lost a help message: once more)"
done
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    cat "$rev"
    devmem_step_fail "btl_devmem_ports reversed: exit $rc, but it must fail (not by timing out)"
elif grep -aq 'btl_devmem_ports is "62115-62100"' "$rev"; then
    devmem_step_ok "btl_devmem_ports reversed: refused (exit $rc): $(grep -am1 'btl_devmem_ports is' "$rev")"
else
    cat "$rev"
    devmem_step_fail "btl_devmem_ports reversed: failed (exit $rc) without naming the parameter"
fi
devmem_finish
