#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The thread model under ThreadSanitizer: the component built by clang with -fsanitize=thread
# (test/lib/sanitize.sh), the validated MPI_THREAD_MULTIPLE program threads.c linked with the
# runtime (its exit status the program's: the reports are judged here), at 2 and 3 ranks on the host path and 2 on the emulated device path. Every report
# is sorted (test/lib/tsan-classify.awk): one whose racing access, or lock, is first in our
# code fails the step and is printed whole; races on the test's own message buffers (ordered
# by MPI request completion inside Open MPI, which the detector cannot see) and races wholly
# inside Open MPI are counted and named, not failed. A report with an unsymbolized frame in
# our component cannot be sorted and fails too; without llvm-symbolizer the test skips.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../lib/sanitize.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "checks btl_devmem's threads (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs threads
devmem_tsan_build
devmem_tsan_link threads

# without a symbolizer every frame is an address and no report can be told ours or not
symbolizer=$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | tail -n 1)
[ -n "$symbolizer" ] || devmem_skip "no llvm-symbolizer (Debian: apt-get install llvm): reports could not be attributed"

export OMPI_MCA_mca_base_component_path="$DEVMEM_TSAN_PREFIX/lib/openmpi:$DEVMEM_OMPI_PKGLIBDIR"
# PMIx's shared-memory store (gds/shmem2, Open MPI 5) maps its segment at the address the
# server chose, which falls inside the detector's reserved ranges: the plain hash store
export PMIX_MCA_gds=hash
limit=$((DEVMEM_MPI_LIMIT * 3))
tsan_run() { # LABEL NP PROG-ARGS...
    local label=$1 np=$2 logs verdict
    shift 2
    logs=$DEVMEM_TEST_TMP/tsan.$((_devmem_steps + 1))
    mkdir -p "$logs"
    devmem_run_checked "threads under TSan, $label" threads "$np" "$limit" \
        devmem_mpirun "$limit" -np "$np" "${DEVMEM_MCA_ARGS[@]}" \
        -x TSAN_OPTIONS="halt_on_error=0 exitcode=0 report_signal_unsafe=0 log_path=$logs/rank external_symbolizer_path=$symbolizer" \
        "$DEVMEM_TSAN_BUILD/threads" "$@" || return 1
    verdict=$(cat "$logs"/rank* 2>/dev/null |
        awk -v OURS=/opal/mca/btl/devmem/ -v OURS_DSO=mca_btl_devmem.so -v APP=/test/mpi/ \
            -f "$DEVMEM_SRC/test/lib/tsan-classify.awk")
    if [ "$(tail -n 1 <<<"$verdict" | awk '{print $2 + $4}')" != 0 ]; then
        head -n 200 <<<"$verdict"
        devmem_step_fail "$label: ThreadSanitizer reports in our code: $(tail -n 1 <<<"$verdict")"
        return 1
    fi
    devmem_step_ok "$label: no ThreadSanitizer report in our code ($(tail -n 1 <<<"$verdict"))"
}
tsan_run "host path, 2 ranks" 2 -t 4 -i 60 -m 1M
tsan_run "host path, 3 ranks" 3 -t 3 -i 30 -m 256k
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_stats 1)
tsan_run "emulated device path, 2 ranks" 2 -t 4 -i 40 -m 4M &&
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
# the lanes served by 2 receiving threads: their turns, the hand-over to the progress
# thread, lanes taken and given back, the emulated kernel's lock; lanes unused for a second
# retire (idle=1) where the program pauses, while other threads' gets park
DEVMEM_MCA_ARGS+=(--mca btl_devmem_rx_threads 2 --mca btl_devmem_devflows 4,idle=1)
if tsan_run "emulated device path, 2 receiving threads, 2 ranks" 2 -t 4 -i 40 -m 4M; then
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 rx_threads -eq 2
fi
devmem_finish
