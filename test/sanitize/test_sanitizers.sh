#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The code under AddressSanitizer and UndefinedBehaviorSanitizer (test/lib/sanitize.sh): every
# unit test of the sanitizer build, then validated 2-rank MPI runs with the sanitized component
# (host path, and the emulated device path with devmem TX from host memory, so that the frame
# reader, the RX ledger, the gather and the TX tracker all run). A sanitizer report anywhere
# fails the step that printed it. Leak checking is on for the unit tests; in MPI runs it is off,
# since Open MPI itself keeps memory until exit. Last, the sanitized devmem-helperd serves the
# hostile clients (test/unit/helperd_clients) and stops: no report, no leak.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../lib/sanitize.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "sanitizes btl_devmem (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong nonblocking
devmem_sanitize_build

# 1. unit tests; the check's second leg (DEVMEM_OMPI_FREE_DONE) leaves them and the helper
# (3.) to the first: they link no Open MPI, and its sanitizer build has only the component
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
units=("$DEVMEM_SAN_BUILD"/test/unit/test_*)
if [ -n "${DEVMEM_OMPI_FREE_DONE:-}" ]; then
    echo "note: the unit tests and devmem-helperd link no Open MPI; the check's first leg ran them sanitized"
    units=()
fi
for t in "${units[@]}"; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    name=$(basename "$t")
    out=$DEVMEM_TEST_TMP/$name.out
    (cd "$DEVMEM_SAN_BUILD/test/unit" && timeout 300 "$t") >"$out" 2>&1
    rc=$?
    if devmem_sanitizer_reports "$out" >/dev/null; then
        devmem_sanitizer_reports "$out" | head -n 20
        devmem_step_fail "unit $name under ASan/UBSan: sanitizer report (exit $rc)"
    elif [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
        devmem_step_ok "unit $name under ASan/UBSan: $([ "$rc" -eq 77 ] && echo skipped || tail -n 1 "$out")"
    else
        tail -n 20 "$out"
        devmem_step_fail "unit $name under ASan/UBSan: exit $rc"
    fi
done

# 2. MPI runs with the sanitized component, the ASan runtime preloaded into the ranks
export OMPI_MCA_mca_base_component_path="$DEVMEM_SAN_PREFIX/lib/openmpi:$DEVMEM_OMPI_PKGLIBDIR"
DEVMEM_MCA_ARGS+=(-x LD_PRELOAD="$DEVMEM_SAN_RUNTIME" -x ASAN_OPTIONS=detect_leaks=0
    -x UBSAN_OPTIONS=print_stacktrace=1 --mca btl_devmem_stats 1)
san_run() { # LABEL-EXTRA PROG NP ARGS...
    local extra=$1 prog=$2 np=$3
    shift 3
    devmem_mpi_test "$prog" "$np" -- "$@" || return 1
    if devmem_sanitizer_reports "$DEVMEM_LAST_OUT" >/dev/null; then
        devmem_step_fail "$prog $extra: sanitizer report: $(devmem_sanitizer_reports "$DEVMEM_LAST_OUT" | head -n 1)"
        return 1
    fi
    devmem_step_ok "$prog $extra: no sanitizer report"
}
san_run "host path" pingpong 2 -m 4M
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_testing tx_host=1)
if san_run "emulated device path, devmem TX" pingpong 2 -m 16M; then
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
fi
san_run "emulated device path, 4 ranks" nonblocking 4 -n 50 -m 256k
DEVMEM_MCA_ARGS=("${saved[@]}")

# 3. the helper under hostile clients, leak checking on (its exit after SIGTERM is checked too)
if [ -n "${DEVMEM_OMPI_FREE_DONE:-}" ]; then
    : # the first leg ran it (1.)
elif [ "$(id -u)" -eq 0 ] && getent group nogroup >/dev/null; then
    conf=$DEVMEM_TEST_TMP/helperd.conf sock=$DEVMEM_TEST_TMP/helperd.sock
    log=$DEVMEM_TEST_TMP/helperd.log
    printf '%s\n' "interface lo queues 1-4" "allow-group root nogroup" "socket-group nogroup" \
        "max-bindings 3" "max-rules 3" "max-bytes 64M" "max-clients-per-user 20" >"$conf"
    chmod 755 "$DEVMEM_TEST_TMP"
    ASAN_OPTIONS=detect_leaks=1 "$DEVMEM_SAN_PREFIX/sbin/devmem-helperd" --foreground \
        --kernel emulated --config "$conf" --socket "$sock" >"$log" 2>&1 &
    hpid=$!
    sleep 1
    out=$DEVMEM_TEST_TMP/clients.out
    timeout 120 "$DEVMEM_SAN_BUILD/test/unit/helperd_clients" "$sock" >"$out" 2>&1
    crc=$?
    kill -TERM "$hpid"
    wait "$hpid"
    hrc=$?
    if devmem_sanitizer_reports "$log" >/dev/null || devmem_sanitizer_reports "$out" >/dev/null; then
        devmem_sanitizer_reports "$log" | head -n 20
        devmem_sanitizer_reports "$out" | head -n 20
        devmem_step_fail "devmem-helperd under ASan/UBSan with hostile clients: sanitizer report"
    elif [ "$crc" -ne 0 ] || [ "$hrc" -ne 0 ]; then
        tail -n 20 "$out" "$log"
        devmem_step_fail "devmem-helperd under ASan/UBSan: clients exit $crc, helper exit $hrc"
    else
        devmem_step_ok "devmem-helperd under ASan/UBSan: $(tail -n 1 "$out") from the hostile clients; stopped cleanly, no leak: $(tail -n 1 "$log")"
    fi
else
    echo "note: devmem-helperd under ASan not run: needs root and group nogroup"
fi
devmem_finish
