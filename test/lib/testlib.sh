# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by the test scripts (test/*/test_*.sh), after nothing else: it sources env.sh.
#
# Conventions: a script exits 0 (pass), 77 (skip, after printing "SKIP: reason") or anything
# else (fail). It runs every step it can, prints one line per step, and fails at the end if
# any step failed (devmem_finish).
#
# Inputs from the environment:
#   DEVMEM_TEST_BTL   the BTL list every MPI run uses (default devmem,self), e.g. tcp,self
#   DEVMEM_TEST_MCA   extra mpirun arguments, split on blanks, e.g. "--mca btl_devmem_stats 1"
#   DEVMEM_MPI_LIMIT  time limit in seconds of one mpirun (default 90; a script stops launching
#                     after its first timed-out run, so a hang costs one limit per script)
#
# What the scripts use:
#   DEVMEM_MCA_ARGS (array)        --mca btl $DEVMEM_TEST_BTL plus $DEVMEM_TEST_MCA
#   DEVMEM_BTL_NAME                the transport in DEVMEM_TEST_BTL (devmem, tcp): for
#                                  btl_<name>_* parameters
#   DEVMEM_MPI_BIN                 where `make check` built the MPI programs
#   devmem_skip REASON             print "SKIP: REASON", exit 77
#   devmem_require_programs P...   fail now if an MPI program was not built
#   devmem_require_sessions        skip unless the MPI has MPI-4 sessions (Open MPI 5)
#   devmem_require_gpu             skip unless an NVIDIA GPU and driver work here
#   devmem_mpi_test PROG NP [LIMIT] -- [PROG-ARGS...]
#                                  one-host run with the test's BTL; checks exit status and
#                                  the program's "PROG: OK np=NP" summary
#   devmem_run_checked LABEL PROG NP LIMIT CMD...
#                                  the same for any launch command (the netns harness uses it)
#   devmem_expect_failure LABEL PATTERN LIMIT CMD...
#                                  a run that must fail, and print a line matching PATTERN
#   DEVMEM_LAST_OUT                file holding the output of the last run (for the checks below)
#   devmem_stat FILE RANK KEY      value of KEY for RANK from "btl_devmem stats: rank=R k=v ..."
#                                  lines (the last such line of that rank wins); status 1 if absent
#   devmem_stat_sum FILE KEY       sum of KEY over every rank's last stats line
#   devmem_expect_line FILE ERE WHAT    step fails unless a line matches ERE
#   devmem_expect_stat FILE RANK KEY OP VALUE   step fails unless "stat OP VALUE" holds
#                                  (OP: -eq -ne -gt -ge -lt -le)
#   devmem_step_ok MSG / devmem_step_fail MSG   count a step of your own
#   devmem_copy_tree DIR           the source tree's files into DIR, as a fresh checkout has
#                                  them (git's list; without git, all but build trees)
#   devmem_finish                  exit 0 if every step passed, 1 otherwise

# shellcheck source=env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

DEVMEM_TEST_BTL=${DEVMEM_TEST_BTL:-devmem,self}
DEVMEM_MPI_LIMIT=${DEVMEM_MPI_LIMIT:-90}
DEVMEM_MPI_BIN=$DEVMEM_BUILD/test/mpi
export DEVMEM_TEST_BTL

DEVMEM_MCA_ARGS=(--mca btl "$DEVMEM_TEST_BTL")
if [ -n "${DEVMEM_TEST_MCA:-}" ]; then
    read -r -a _devmem_extra <<<"$DEVMEM_TEST_MCA"
    DEVMEM_MCA_ARGS+=("${_devmem_extra[@]}")
fi

# The transport named in the BTL list (not self/vader/sm): for btl_<name>_if_include and such.
DEVMEM_BTL_NAME=
IFS=, read -r -a _devmem_btls <<<"$DEVMEM_TEST_BTL"
for _b in "${_devmem_btls[@]}"; do
    case "$_b" in
        self | vader | sm | ^*) ;;
        *) [ -n "$DEVMEM_BTL_NAME" ] || DEVMEM_BTL_NAME=$_b ;;
    esac
done
unset _b _devmem_btls _devmem_extra

DEVMEM_TEST_NAME=$(basename "$0" .sh)
DEVMEM_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/$DEVMEM_TEST_NAME.XXXXXX")
DEVMEM_LAST_OUT=
_devmem_steps=0
_devmem_failed=0
_devmem_failed_steps=()
_devmem_timed_out=
_devmem_child=

# A signal (the runner's timeout, ^C) stops the running launch too. The launch runs in the
# background (bash runs traps only between foreground commands) under its own `timeout`, which
# sits in a process group of its own, so signal the whole tree below our child, by pid.
_devmem_kill_tree() {
    local c
    for c in $(pgrep -P "$1" 2>/dev/null); do
        _devmem_kill_tree "$c" "$2"
    done
    kill "-$2" "$1" 2>/dev/null
}
# The handler may run inside a redirected command (the output file of a run): it restores the
# script's own stdout and stderr, shows what the interrupted run printed, and ignores further
# signals while it cleans up (timeout signals the whole process group, us included, again).
exec {_devmem_out_fd}>&1 {_devmem_err_fd}>&2
_devmem_on_signal() {
    trap '' INT TERM
    exec 1>&"$_devmem_out_fd" 2>&"$_devmem_err_fd"
    if [ -n "$_devmem_child" ]; then
        _devmem_kill_tree "$_devmem_child" TERM
        wait "$_devmem_child" 2>/dev/null
        if [ -n "$DEVMEM_LAST_OUT" ] && [ -f "$DEVMEM_LAST_OUT" ]; then
            echo "---- output of the interrupted run:"
            cat "$DEVMEM_LAST_OUT"
        fi
    fi
    echo "$DEVMEM_TEST_NAME: interrupted by signal $1"
    exit $((128 + $1))
}
trap '_devmem_on_signal 2' INT
trap '_devmem_on_signal 15' TERM
# Scripts that add their own EXIT trap must call devmem_testlib_cleanup from it.
devmem_testlib_cleanup() {
    rm -rf "$DEVMEM_TEST_TMP"
}
trap devmem_testlib_cleanup EXIT

devmem_skip() {
    echo "SKIP: $*"
    exit 77
}

devmem_step_ok() {
    _devmem_steps=$((_devmem_steps + 1))
    echo "ok   $*"
}

devmem_step_fail() {
    _devmem_steps=$((_devmem_steps + 1))
    _devmem_failed=$((_devmem_failed + 1))
    _devmem_failed_steps+=("$*")
    echo "FAIL $*"
}

devmem_copy_tree() {
    mkdir -p "$1" || return 1
    if git -C "$DEVMEM_SRC" rev-parse >/dev/null 2>&1; then
        (cd "$DEVMEM_SRC" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$1"
    else
        (cd "$DEVMEM_SRC" && tar -cf - --exclude='./build*' --exclude=./.git --exclude=./autom4te.cache \
            --exclude=./debian/btl-devmem --exclude=./debian/.debhelper .) | tar -xf - -C "$1"
    fi
}

devmem_finish() {
    if [ "$_devmem_steps" -eq 0 ]; then
        echo "$DEVMEM_TEST_NAME: no step ran" >&2
        exit 1
    fi
    if [ "$_devmem_failed" -ne 0 ]; then
        echo "$DEVMEM_TEST_NAME: $_devmem_failed of $_devmem_steps steps failed" \
            "(btl $DEVMEM_TEST_BTL${DEVMEM_TEST_MCA:+, extra: $DEVMEM_TEST_MCA})"
        # again at the end, where a log's tail (the check's summary, CI's excerpt) sees them
        printf 'failed step: %.300s\n' "${_devmem_failed_steps[@]}"
        exit 1
    fi
    echo "$DEVMEM_TEST_NAME: all $_devmem_steps steps passed (btl $DEVMEM_TEST_BTL)"
    exit 0
}

devmem_require_programs() {
    local p missing=()
    for p in "$@"; do
        [ -x "$DEVMEM_MPI_BIN/$p" ] || missing+=("$p")
    done
    if [ ${#missing[@]} -ne 0 ]; then
        echo "$DEVMEM_TEST_NAME: MPI test programs not built in $DEVMEM_MPI_BIN: ${missing[*]}" >&2
        echo "  build them with: make -C \"$DEVMEM_BUILD\" check" >&2
        exit 1
    fi
}

# Skip unless an NVIDIA GPU and its driver work here: the CUDA unit test (which checks the
# driver layer on the way) says so, or, where it was not built, the driver library.
devmem_require_gpu() {
    local probe="$DEVMEM_BUILD/test/unit/test_cuda"
    if [ -x "$probe" ]; then
        "$probe" >"$DEVMEM_TEST_TMP/gpu-probe.log" 2>&1
        [ $? -eq 77 ] && devmem_skip "no NVIDIA GPU: $(grep -m1 SKIP "$DEVMEM_TEST_TMP/gpu-probe.log" | sed 's/^SKIP:* *//')"
    elif ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
        devmem_skip "no NVIDIA driver (libcuda.so.1) on this machine"
    fi
    return 0
}

# Skip unless the MPI has MPI-4 sessions: test/mpi/sessions -Q asks its compile-time MPI
# version, without mpirun.
devmem_require_sessions() {
    local why rc
    devmem_require_programs sessions
    why=$("$DEVMEM_MPI_BIN/sessions" -Q 2>&1)
    rc=$?
    case $rc in
        0) ;;
        77) devmem_skip "${why#SKIP: }" ;;
        *)
            echo "$DEVMEM_TEST_NAME: 'sessions -Q' failed ($rc): $why" >&2
            exit 1
            ;;
    esac
}

# Run a command in the background (so that signals reach us while it runs) and wait for it.
_devmem_run_bg() {
    "$@" &
    _devmem_child=$!
    wait "$_devmem_child"
    local rc=$?
    _devmem_child=
    return "$rc"
}

# Open MPI 5 writes NUL bytes into its error output, which makes grep call the file binary
# and print nothing of what matched: take them out of a captured run.
_devmem_strip_nul() {
    tr -d '\000' <"$1" >"$1.txt" && mv "$1.txt" "$1"
}

_devmem_elapsed() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# devmem_run_checked LABEL PROG NP LIMIT CMD...: CMD must exit 0 within LIMIT (it is expected to
# apply the limit itself, e.g. through devmem_mpirun; this only reports it) and print
# "PROG: OK np=NP".
devmem_run_checked() {
    local label=$1 prog=$2 np=$3 limit=$4
    shift 4
    local out="$DEVMEM_TEST_TMP/run$((_devmem_steps + 1)).out" start rc
    DEVMEM_LAST_OUT=$out
    if [ -n "$_devmem_timed_out" ]; then
        devmem_step_fail "$label: not run, an earlier run timed out ($_devmem_timed_out)"
        return 1
    fi
    echo "---- $label: $*"
    start=$EPOCHREALTIME
    _devmem_run_bg "$@" >"$out" 2>&1
    rc=$?
    _devmem_strip_nul "$out"
    cat "$out"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        _devmem_timed_out=$label
        devmem_step_fail "$label: timed out after ${limit}s (exit $rc)"
        return 1
    fi
    if [ "$rc" -ne 0 ]; then
        devmem_step_fail "$label: exit status $rc ($(_devmem_elapsed "$start")s)$([ -s "$out" ] ||
            echo ", no output at all")"
        return 1
    fi
    if ! grep -q "^$prog: OK np=$np " "$out"; then
        devmem_step_fail "$label: exit status 0 but no '$prog: OK np=$np' summary line"
        return 1
    fi
    devmem_step_ok "$label ($(_devmem_elapsed "$start")s): $(grep -m1 "^$prog: OK" "$out")"
    return 0
}

# devmem_mpi_test PROG NP [LIMIT] [-- PROG-ARGS...]: PROG at NP ranks on this host.
devmem_mpi_test() {
    local prog=$1 np=$2 limit=$DEVMEM_MPI_LIMIT
    shift 2
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then
        limit=$1
        shift
    fi
    [ "${1:-}" = "--" ] && shift
    devmem_run_checked "$prog np=$np${*:+ $*}" "$prog" "$np" "$limit" \
        devmem_mpirun "$limit" -np "$np" "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/$prog" "$@"
}

# devmem_expect_failure LABEL PATTERN LIMIT CMD...: CMD must fail (not by timing out) and print a
# line matching the extended regular expression PATTERN.
devmem_expect_failure() {
    local label=$1 pattern=$2 limit=$3
    shift 3
    local out="$DEVMEM_TEST_TMP/run$((_devmem_steps + 1)).out" rc
    DEVMEM_LAST_OUT=$out
    echo "---- $label (must fail): $*"
    _devmem_run_bg "$@" >"$out" 2>&1
    rc=$?
    _devmem_strip_nul "$out"
    cat "$out"
    if [ "$rc" -eq 0 ]; then
        devmem_step_fail "$label: succeeded, but it must fail"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        devmem_step_fail "$label: timed out after ${limit}s instead of failing"
    elif ! grep -Eq "$pattern" "$out"; then
        devmem_step_fail "$label: failed (exit $rc) but printed no line matching /$pattern/"
    else
        devmem_step_ok "$label: failed as it must (exit $rc): $(grep -Em1 "$pattern" "$out")"
        return 0
    fi
    return 1
}

# Stats lines: "... btl_devmem stats: rank=R key=value key=value ..." (any prefix).
devmem_stat() {
    awk -v r="$2" -v k="$3" '
        /btl_devmem stats:/ {
            mine = 0
            for (i = 1; i <= NF; i++) if ($i == "rank=" r) mine = 1
            if (!mine) next
            found = 0
            for (i = 1; i <= NF; i++) {
                n = index($i, "=")
                if (n > 1 && substr($i, 1, n - 1) == k) { v = substr($i, n + 1); found = 1 }
            }
            have = found
        }
        END { if (!have) exit 1; print v }' "$1"
}

devmem_stat_sum() {
    awk -v k="$2" '
        /btl_devmem stats:/ {
            r = ""; v = ""
            for (i = 1; i <= NF; i++) {
                n = index($i, "=")
                if (n <= 1) continue
                name = substr($i, 1, n - 1)
                if (name == "rank") r = substr($i, n + 1)
                if (name == k) v = substr($i, n + 1)
            }
            if (r != "") { last[r] = v; seen[r] = 1 }
        }
        END {
            any = 0; s = 0
            for (r in seen) { if (last[r] == "") exit 1; s += last[r]; any = 1 }
            if (!any) exit 1
            printf "%.0f\n", s
        }' "$1"
}

# devmem_wait_line FILE ERE PID: wait (up to 30 s) until FILE has a line matching ERE while
# process PID (a job started in the background) runs; 0 when it has and PID still runs.
devmem_wait_line() {
    local _
    for _ in $(seq 300); do
        grep -aEq "$2" "$1" && break
        kill -0 "$3" 2>/dev/null || break
        sleep 0.1
    done
    grep -aEq "$2" "$1" && kill -0 "$3" 2>/dev/null
}

# devmem_tagged_pids PROG VAR=VALUE...: the pids of the processes named PROG whose
# environment holds every VAR=VALUE given (a job's tag, a rank), one a line.
devmem_tagged_pids() {
    local prog=$1 p kv ok
    shift
    for p in $(pgrep -x "$prog"); do
        ok=1
        for kv in "$@"; do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "$kv" || { ok=0; break; }
        done
        [ "$ok" = 1 ] && echo "$p"
    done
    return 0
}

devmem_expect_line() {
    local file=$1 ere=$2 what=$3
    if grep -aEq "$ere" "$file"; then
        devmem_step_ok "$what: $(grep -aEm1 "$ere" "$file")"
    else
        devmem_step_fail "$what: no line matches /$ere/"
        return 1
    fi
}

devmem_expect_stat() {
    local file=$1 rank=$2 key=$3 op=$4 want=$5 got
    if ! got=$(devmem_stat "$file" "$rank" "$key"); then
        devmem_step_fail "stat $key of rank $rank: no 'btl_devmem stats: rank=$rank ... $key=' line"
        return 1
    fi
    if [[ ! "$got" =~ ^-?[0-9]+$ ]]; then
        devmem_step_fail "stat $key of rank $rank: '$got' is not an integer"
        return 1
    fi
    case "$op" in
        -eq | -ne | -gt | -ge | -lt | -le) ;;
        *)
            devmem_step_fail "stat $key of rank $rank: unknown comparison '$op'"
            return 1
            ;;
    esac
    if test "$got" "$op" "$want"; then
        devmem_step_ok "stat $key of rank $rank = $got ($op $want)"
    else
        devmem_step_fail "stat $key of rank $rank = $got, expected $op $want"
        return 1
    fi
}

# devmem_expect_device_path FILE NP DMABUF: for every rank 0..NP-1 of the run in FILE, one
# step: the device path was on (devmem_modules > 0), every token handed out came back
# (tokens_received == tokens_returned), no protocol error, and when DMABUF is 1, payload
# landed in the RX pool (rx_dmabuf > 0).
# devmem_expect_spread FILE RANK lanes|queues N: rank RANK's lanes (or queues) line
# ("btl_devmem lanes: rank=R rx_bytes=B0,B1,...") names exactly N device-flow lanes (RX
# queues), and every one of them carried bytes.
devmem_expect_spread() {
    local file=$1 rank=$2 what=$3 n=$4 line bytes
    line=$(grep -aEo "btl_devmem $what: rank=$rank rx_bytes=[0-9,]+" "$file" | tail -n 1)
    if [ -z "$line" ]; then
        devmem_step_fail "rank $rank: no 'btl_devmem $what' line (want $n $what carrying bytes)"
        return 1
    fi
    bytes=${line##*rx_bytes=}
    if awk -v b="$bytes" -v n="$n" 'BEGIN { k = split(b, v, ","); if (k != n) exit 1
                                           for (i = 1; i <= k; i++) if (v[i] + 0 <= 0) exit 1 }'; then
        devmem_step_ok "rank $rank: bytes received per ${what%s} $bytes"
    else
        devmem_step_fail "rank $rank: bytes received per ${what%s} $bytes (want $n $what, each > 0)"
        return 1
    fi
}

devmem_expect_device_path() {
    local file=$1 np=$2 want_dmabuf=$3 r mods dmabuf linear got back dn perr
    for ((r = 0; r < np; r++)); do
        if ! mods=$(devmem_stat "$file" "$r" devmem_modules) ||
            ! dmabuf=$(devmem_stat "$file" "$r" rx_dmabuf) ||
            ! linear=$(devmem_stat "$file" "$r" rx_linear) ||
            ! got=$(devmem_stat "$file" "$r" tokens_received) ||
            ! back=$(devmem_stat "$file" "$r" tokens_returned) ||
            ! dn=$(devmem_stat "$file" "$r" dontneed_calls) ||
            ! perr=$(devmem_stat "$file" "$r" proto_errors); then
            devmem_step_fail "rank $r: no complete 'btl_devmem stats' line (device-path keys)"
            continue
        fi
        local what="rank $r: devmem_modules=$mods rx_dmabuf=$dmabuf rx_linear=$linear"
        what+=" tokens $got handed out / $back returned in $dn DONTNEED calls"
        if [ "$mods" -gt 0 ] && [ "$got" -eq "$back" ] && [ "$perr" -eq 0 ] &&
            { [ "$want_dmabuf" -eq 0 ] || [ "$dmabuf" -gt 0 ]; }; then
            devmem_step_ok "$what"
        else
            devmem_step_fail "$what, proto_errors=$perr (want modules > 0, tokens balanced," \
                "no protocol error$([ "$want_dmabuf" -eq 1 ] && echo ", rx_dmabuf > 0"))"
        fi
    done
}
