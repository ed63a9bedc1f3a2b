#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Validated 2-rank runs with every rank under valgrind memcheck: the host path, and the emulated
# device path with devmem TX from host memory (device flows, the RX ledger, the TX tracker).
# An error or a definite leak with a frame in btl_devmem's code (component or kernel layer)
# fails the run; Open MPI's own findings are counted and left alone. Open MPI unloads its
# components before exit, so --keep-debuginfo=yes keeps our frames nameable in leak reports
# (without it a leak of ours shows as "???" and would pass).
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "checks btl_devmem's memory (btl: $DEVMEM_TEST_BTL)"
command -v valgrind >/dev/null 2>&1 || devmem_skip "valgrind not found (Debian: apt-get install valgrind)"
devmem_require_programs pingpong

# the error blocks of a valgrind log that name our code; status 1 when there are none. A
# block whose uninitialised bytes were created on the stack of Open MPI's own code (its
# origin, from --track-origins: libmpi, or libopen_mpi in Open MPI 6) is Open MPI's, even
# where our send carries them: ob1 in Open MPI 5 leaves padding of its FIN header unset, and
# what a callback sends leaves from our flush (tx_cork) with none of ob1's frames on the
# stack (ompi.supp covers the direct path).
ours() {
    awk 'function mine(b) {
            return b ~ /(mca_btl_devmem\.so|btl_devmem_[a-z_]+\.c:|[( ](rx|tx|emul|kernel|netlink|nic|dmabuf|cudrv|copy|locality|err)\.c:[0-9])/
         }
         /^==[0-9]+== *$/ {
            origin = blk; sub(/^.*Uninitialised value was created by [a-z ]*allocation\n/, "", origin)
            theirs = origin != blk && !mine(origin) && origin ~ /\(in [^)]*\/lib(mpi|open_mpi|open-pal|open-rte|pmix)\.so/
            if (mine(blk) && !theirs) {
                n++; printf "%s\n", blk
            }
            blk = ""; next
         }
         { blk = blk $0 "\n" }
         END { exit n == 0 }' "$@"
}

vg_run() { # LABEL PINGPONG-ARGS... (MCA arguments in DEVMEM_MCA_ARGS)
    local label=$1 logs errors
    shift
    logs=$DEVMEM_TEST_TMP/vg-${label// /-}
    mkdir -p "$logs"
    devmem_run_checked "$label under memcheck" pingpong 2 "$DEVMEM_MPI_LIMIT" \
        devmem_mpirun "$DEVMEM_MPI_LIMIT" -np 2 "${DEVMEM_MCA_ARGS[@]}" \
        valgrind --track-origins=yes --keep-debuginfo=yes --leak-check=full --num-callers=30 --error-limit=no \
        --suppressions="$DEVMEM_SRC/test/valgrind/ompi.supp" \
        --log-file="$logs/vg.%p.log" "$DEVMEM_MPI_BIN/pingpong" "$@" || return 1
    if [ "$(cat "$logs"/vg.*.log 2>/dev/null | grep -c 'ERROR SUMMARY')" -ne 2 ]; then
        devmem_step_fail "$label: valgrind did not report for both ranks (logs in $logs)"
        return 1
    fi
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$logs"/vg.*.log | awk '{ s += $1 } END { print s + 0 }')
    if ours "$logs"/vg.*.log >"$logs/ours.txt"; then
        head -n 60 "$logs/ours.txt"
        devmem_step_fail "$label: memcheck reports in btl_devmem's code (above)"
    else
        devmem_step_ok "$label: no memcheck error or leak in btl_devmem's code ($errors in Open MPI's, left alone)"
    fi
}

vg_run "host path" -m 1M
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_testing tx_host=1 --mca btl_devmem_stats 1)
vg_run "emulated device path" -m 4M && devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
devmem_finish
