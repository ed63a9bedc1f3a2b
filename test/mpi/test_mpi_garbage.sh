#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Garbage from a connected peer: rank 0 spoils one of its frames on a live connection
# (btl_devmem_testing fault=...: an unknown frame type, a length beyond every limit, half a header and
# then the connection shut). Rank 1 must close that connection with an error that says what
# was wrong, and the job must end non-zero, not hang, not crash. Each case runs again with
# the component built with AddressSanitizer and UBSan (test/lib/sanitize.sh), which must
# report nothing: no read or write outside a buffer on the way to the error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../lib/sanitize.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the fault injection is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong

cases=("bad-type|malformed fragment \(unknown fragment type; type 127"
    "too-long|malformed fragment \(fragment longer than negotiated; type 1, tag [0-9]+, size 4294967295\)"
    "truncated|the peer closed the connection in the middle of a frame \(12 bytes of it received\)")

run_cases() { # LABEL-SUFFIX
    local c fault pattern
    for c in "${cases[@]}"; do
        fault=${c%%|*}
        pattern="\[\[[0-9]+,[0-9]+\],0\] on host [^ ]+ \(interface lo\): ${c#*|}"
        devmem_expect_failure "$fault$1" "$pattern" 60 \
            devmem_mpirun 60 -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_testing "fault=$fault" \
            --mca btl_devmem_if_include lo "$DEVMEM_MPI_BIN/pingpong" -m 1M -i 100000 || continue
        if grep -q 'Segmentation fault\|Signal: ' "$DEVMEM_LAST_OUT"; then
            devmem_step_fail "$fault$1: a rank crashed on the way to the error"
        elif devmem_sanitizer_reports "$DEVMEM_LAST_OUT" >/dev/null; then
            devmem_step_fail "$fault$1: $(devmem_sanitizer_reports "$DEVMEM_LAST_OUT" | head -n 1)"
        else
            devmem_step_ok "$fault$1: no crash, no sanitizer report"
        fi
    done
}

run_cases ""
devmem_sanitize_build
export OMPI_MCA_mca_base_component_path="$DEVMEM_SAN_PREFIX/lib/openmpi:$DEVMEM_OMPI_PKGLIBDIR"
DEVMEM_MCA_ARGS+=(-x LD_PRELOAD="$DEVMEM_SAN_RUNTIME" -x ASAN_OPTIONS=detect_leaks=0)
run_cases ", sanitized"
devmem_finish
