#!/usr/bin/env bash
# The benchmark tools keep working: mpi_bench (every kind) and tcp_bench (both modes) on
# loopback, each with its data validation on (a wrong byte aborts with a non-zero status), and a
# one-repetition bench/run.sh whose summary must show both transports and raw TCP side by side.
# Few sizes and tiny iteration counts: this checks function, never speed.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the bench tools are checked with btl devmem (BTL is $DEVMEM_TEST_BTL)"
MPIB=$DEVMEM_BUILD/bench/mpi_bench
TCPB=$DEVMEM_BUILD/bench/tcp_bench
for p in "$MPIB" "$TCPB"; do
    [ -x "$p" ] || { echo "$DEVMEM_TEST_NAME: $p not built" >&2; exit 1; }
done
sizes=0,1,4k,200k,3m
nsizes=5

# expect_lines FILE KIND LABEL: one result line per size, each with positive figures
expect_lines() {
    local n
    n=$(awk -v k="$2" '$1 == k && $3 ~ /^usec=[0-9.]+$/ && $4 ~ /^MBps=/ && $6 ~ /^msgps=[1-9]/' "$1" | wc -l)
    if [ "$n" -eq "$nsizes" ]; then
        devmem_step_ok "$3: $n result lines"
    else
        cat "$1"
        devmem_step_fail "$3: $n well-formed '$2' result lines, want $nsizes"
    fi
}

for kind in lat bw bibw rate; do
    np=2
    [ "$kind" = rate ] && np=4
    out=$DEVMEM_TEST_TMP/$kind.out
    if devmem_mpirun "$DEVMEM_MPI_LIMIT" -np "$np" "${DEVMEM_MCA_ARGS[@]}" \
        --mca btl_devmem_if_include lo "$MPIB" -t "$kind" -s "$sizes" -x 0.01 -T 0.2 >"$out" 2>&1; then
        expect_lines "$out" "$kind" "mpi_bench $kind, $np ranks, validated"
    else
        cat "$out"
        devmem_step_fail "mpi_bench $kind, $np ranks: exit status $?"
    fi
done

# the check can fail: a spoiled byte must abort the job
out=$DEVMEM_TEST_TMP/spoil.out
if devmem_mpirun "$DEVMEM_MPI_LIMIT" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo \
    "$MPIB" -t bw -s 200k -x 0.01 -T 0.2 -X >"$out" 2>&1; then
    cat "$out"
    devmem_step_fail "mpi_bench -X (one spoiled byte) exited 0"
elif grep -q "data check failed: message 0 of 204800 bytes from rank 0: byte 204799" "$out"; then
    devmem_step_ok "mpi_bench -X: the spoiled byte was caught and the job failed"
else
    cat "$out"
    devmem_step_fail "mpi_bench -X failed without naming the spoiled byte"
fi

for mode in busy block; do
    for kind in lat bw; do
        out=$DEVMEM_TEST_TMP/tcp-$mode-$kind.out srv=$DEVMEM_TEST_TMP/srv.out
        timeout 60 "$TCPB" -l -a 127.0.0.1 -p 0 >"$srv" 2>&1 &
        spid=$!
        port=
        for _ in $(seq 50); do
            port=$(sed -n 's/.* port \([0-9]*\)$/\1/p' "$srv")
            [ -n "$port" ] && break
            sleep 0.1
        done
        if [ -n "$port" ] && timeout 60 "$TCPB" -c 127.0.0.1 -p "$port" -t "$kind" -m "$mode" \
            -s "$sizes" -x 0.01 -T 0.2 >"$out" 2>&1 && wait "$spid"; then
            expect_lines "$out" "$kind" "tcp_bench $kind $mode, validated"
        else
            kill "$spid" 2>/dev/null
            cat "$srv" "$out"
            devmem_step_fail "tcp_bench $kind $mode: did not run to the end"
        fi
    done
done

# the runner: devmem, tcp and raw TCP in one table
out=$DEVMEM_TEST_TMP/run.out
if timeout 300 "$DEVMEM_SRC/bench/run.sh" --settings lo --yield 0 --kinds lat --reps 1 \
    --sizes 8,64k --scale 0.01 --limit 0.2 --out "$DEVMEM_TEST_TMP/results" >"$out" 2>&1; then
    if grep -q "^== lo, yield 0: lat" "$out" &&
        [ "$(awk '$1 == 65536 && NF == 11' "$out" | wc -l)" -eq 1 ]; then
        devmem_step_ok "bench/run.sh: $(grep -c '^lo,' "$DEVMEM_TEST_TMP/results/results.csv") figures, summary with all four columns at 64 KiB"
    else
        cat "$out"
        devmem_step_fail "bench/run.sh: the summary lacks the lat table or a full 64 KiB row"
    fi
else
    cat "$out"
    devmem_step_fail "bench/run.sh failed"
fi
devmem_finish
