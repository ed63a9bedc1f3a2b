#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the btl/devmem test suite:
#   every executable $DEVMEM_BUILD/test/unit/test_*   (unit tests, built by `make check`)
#   every script      <source>/test/*/test_*.sh       (mpi, net, gpu, ...)
#
# usage: test/run-tests.sh [FILTER]
#   FILTER   run only the tests whose name (e.g. unit/test_hdr, mpi/test_mpi_pingpong.sh)
#            contains this substring
#
# Environment:
#   DEVMEM_BUILD          build tree (default <source>/build); logs go to $DEVMEM_BUILD/test-logs
#   DEVMEM_TEST_BTL       BTL list of the MPI tests (default devmem,self; e.g. tcp,self)
#   DEVMEM_TEST_MCA       extra mpirun arguments of the MPI tests
#   DEVMEM_UNIT_TIMEOUT   seconds per unit test (default 120)
#   DEVMEM_TEST_TIMEOUT   seconds per test script (default 300; a script that needs more says
#                         so in a line "# run-tests: timeout SECONDS" near its top)
#   DEVMEM_TEST_TAIL      lines of a failed test's log to print (default 40; failure-looking
#                         lines above them are printed too, marked "!")
#   DEVMEM_COMPONENT_FROM_OMPI
#                         1: test the btl devmem that Open MPI has in its own component
#                         directory (built inside its source tree), not this build's
#
# The tests run against the Open MPI the build was configured for (configure --with-ompi).
#
# A test exits 0 (pass), 77 (skip: it prints why) or anything else (fail); one that runs past its
# time limit fails. One line per test; the last line is "N passed, N failed, N skipped".
# Exit status: 0 if nothing failed and something passed, 1 if anything failed or no test
# matched, 77 if every test that ran skipped.
set -u

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib/env.sh
. "$src/test/lib/env.sh"

filter=${1:-}
unit_timeout=${DEVMEM_UNIT_TIMEOUT:-120}
script_timeout=${DEVMEM_TEST_TIMEOUT:-300}
tail_lines=${DEVMEM_TEST_TAIL:-40}
logdir=$DEVMEM_BUILD/test-logs

if [ $# -gt 1 ] || [ "$filter" = "-h" ] || [ "$filter" = "--help" ]; then
    sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//'
    exit 2
fi
if ! mkdir -p "$logdir"; then
    echo "run-tests: cannot create the log directory $logdir" >&2
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi

# Collect: name<TAB>kind<TAB>path
tests=()
if [ -d "$DEVMEM_BUILD/test/unit" ]; then
    for f in "$DEVMEM_BUILD"/test/unit/test_*; do
        if [ ! -f "$f" ] || [ ! -x "$f" ]; then
            continue
        fi
        case "$f" in *.o | *.c | *.h | *.log | *.trs | *.sh) continue ;; esac
        tests+=("unit/$(basename "$f")	unit	$f")
    done
fi
for f in "$src"/test/*/test_*.sh; do
    [ -f "$f" ] || continue
    d=$(basename "$(dirname "$f")")
    tests+=("$d/$(basename "$f")	script	$f")
done

passed=0
failed=0
skipped=0
failed_names=()
current=

on_signal() {
    trap - INT TERM
    if [ -n "$current" ]; then
        kill -TERM "$current" 2>/dev/null # timeout passes it on to the test
        wait "$current" 2>/dev/null
    fi
    echo "run-tests: interrupted"
    echo "$passed passed, $((failed + 1)) failed, $skipped skipped"
    exit 130
}
trap on_signal INT TERM

echo "run-tests: build $DEVMEM_BUILD, btl ${DEVMEM_TEST_BTL:-devmem,self}" \
    "${DEVMEM_TEST_MCA:+(extra: $DEVMEM_TEST_MCA) }logs in $logdir"
echo "run-tests: Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p')" \
    "($(command -v mpirun)), component from" \
    "$(echo "$OMPI_MCA_mca_base_component_path" | cut -d: -f1)"

for t in "${tests[@]}"; do
    IFS=$'\t' read -r name kind path <<<"$t"
    if [ -n "$filter" ] && [[ "$name" != *"$filter"* ]]; then
        continue
    fi
    log="$logdir/${name//\//.}.log"
    if [ "$kind" = unit ]; then
        limit=$unit_timeout
        cmd=("$path")
        dir=$(dirname "$path")
    else
        limit=$script_timeout
        own=$(head -n 5 "$path" | sed -n 's/^# run-tests: timeout \([0-9][0-9]*\)$/\1/p')
        [ -n "$own" ] && [ -z "${DEVMEM_TEST_TIMEOUT:-}" ] && limit=$own
        cmd=(bash "$path")
        dir=$DEVMEM_BUILD
    fi
    start=$EPOCHREALTIME
    # In the background, so that a signal to us is handled at once.
    (cd "$dir" && exec timeout --kill-after=20 "$limit" "${cmd[@]}") </dev/null >"$log" 2>&1 &
    current=$!
    wait "$current"
    rc=$?
    current=
    secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    case "$rc" in
        0)
            passed=$((passed + 1))
            echo "PASS $name (${secs}s)"
            ;;
        77)
            skipped=$((skipped + 1))
            reason=$(grep -E '^(SKIP|skip)[: ]' "$log" | tail -n 1 | sed -E 's/^(SKIP|skip):? *//')
            [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
            echo "SKIP $name: ${reason:-no reason given}"
            ;;
        *)
            failed=$((failed + 1))
            failed_names+=("$name")
            if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
                echo "FAIL $name (timed out after ${limit}s)"
            else
                echo "FAIL $name (exit $rc, ${secs}s)"
            fi
            nlines=$(wc -l <"$log")
            # the steps that failed first: an excerpt of this output cut short still names them
            if grep -q '^failed step: ' "$log"; then
                grep -E -m 8 '^failed step: ' "$log" | sed 's/^/  ! /'
            elif [ "$nlines" -gt "$tail_lines" ]; then
                # failure lines that scrolled out of the tail
                head -n "$((nlines - tail_lines))" "$log" |
                    grep -E -m 15 '^(FAIL|not ok)|FAIL[: ]|MISMATCH|OVERWRITTEN|[Ee]rror|timed out' |
                    sed 's/^/  ! /'
            fi
            echo "  ---- last $tail_lines lines of $log:"
            tail -n "$tail_lines" "$log" | sed 's/^/  | /'
            echo "  ----"
            ;;
    esac
done

total=$((passed + failed + skipped))
if [ "$total" -eq 0 ]; then
    echo "run-tests: no test matched${filter:+ '$filter'} (looked in $DEVMEM_BUILD/test/unit and $src/test/*/)"
elif [ "$failed" -ne 0 ]; then
    echo "run-tests: failed: ${failed_names[*]}"
fi
# DEVMEM_COUNTS_LABEL: what these counts are of, when they are one leg of a larger check
echo "${DEVMEM_COUNTS_LABEL:+$DEVMEM_COUNTS_LABEL: }$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -ne 0 ] || [ "$total" -eq 0 ]; then
    exit 1
fi
if [ "$passed" -eq 0 ]; then
    exit 77
fi
exit 0
