#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A bounded libFuzzer run of each parser target, and of devmem-helperd's request handling (test/fuzz/fuzz_*.c, built by the sanitizer
# build in test/lib/sanitize.sh): DEVMEM_FUZZ_SECONDS each (default 12), as many at a time as
# there are CPUs. A crash, a sanitizer report or a broken promise fails the step and keeps the
# input that did it; the executions are reported. The longer run is documented in
# doc/design.md (Testing).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../lib/sanitize.sh"

seconds=${DEVMEM_FUZZ_SECONDS:-12}
# the targets link the parsers alone, no Open MPI: the check's second leg (another Open MPI)
# would fuzz the very same code again
[ -z "${DEVMEM_OMPI_FREE_DONE:-}" ] ||
    devmem_skip "the fuzz targets link no Open MPI; the check's first leg fuzzed them"
devmem_sanitize_build
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
targets=(fuzz_wire fuzz_rxframe fuzz_rx_parse fuzz_netlink fuzz_helper_proto fuzz_helperd)
# one bounded run of target $1, its exit status left in $DEVMEM_TEST_TMP/$1.rc
fuzz_one() {
    local corpus=$DEVMEM_TEST_TMP/corpus-$1
    mkdir -p "$corpus"
    timeout $((seconds + 60)) "$DEVMEM_SAN_BUILD/test/fuzz/$1" -max_total_time="$seconds" \
        -print_final_stats=1 -artifact_prefix="$DEVMEM_TEST_TMP/$1-" "$corpus" \
        >"$DEVMEM_TEST_TMP/$1.out" 2>&1
    echo $? >"$DEVMEM_TEST_TMP/$1.rc"
}
# a libFuzzer run keeps one CPU busy: as many at a time as there are CPUs
running=0 cpus=$(nproc)
for name in "${targets[@]}"; do
    [ -x "$DEVMEM_SAN_BUILD/test/fuzz/$name" ] || continue # failed below
    fuzz_one "$name" &
    running=$((running + 1))
    if [ "$running" -ge "$cpus" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
for name in "${targets[@]}"; do
    if [ ! -x "$DEVMEM_SAN_BUILD/test/fuzz/$name" ]; then
        devmem_step_fail "$name: not built ($DEVMEM_SAN_BUILD/test/fuzz/$name)"
        continue
    fi
    out=$DEVMEM_TEST_TMP/$name.out
    rc=$(cat "$DEVMEM_TEST_TMP/$name.rc" 2>/dev/null || echo "none")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -n 1)
    if [ "$rc" = 0 ] && [ -n "$execs" ] && [ "$execs" -gt 0 ]; then
        devmem_step_ok "$name: $execs executions in ${seconds}s, $(ls "$DEVMEM_TEST_TMP/corpus-$name" | wc -l) corpus units, no crash"
    else
        grep -E 'ERROR|runtime error|broken promise|Test unit written' "$out" | head -n 10
        devmem_step_fail "$name: exit $rc after ${execs:-0} executions (output: $out)"
    fi
done
devmem_finish
