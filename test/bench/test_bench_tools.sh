#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark tools keep working on loopback: a one-repetition bench/run.sh, which runs
# mpi_bench (every kind; btl devmem, btl tcp, UCX's tcp) and tcp_bench (busy and blocking),
# each with its data validation on (a wrong byte aborts with a non-zero status and leaves the
# figures short), and whose summary must show the transports and raw TCP side by side; and
# mpi_bench -X, which proves that the validation fires; a hog setting starts and stops its
# busy processes; a lanes setting counts the device path's calls per MiB; and the cost model
# runs on what call_costs measures; bench/fds.sh counts descriptors per rank; rx_threads.sh
# measures receiving threads (overlap, bandwidth, work beside) across two namespaces.
# Few sizes and tiny iteration counts: this checks function, never speed.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the bench tools are checked with btl devmem (BTL is $DEVMEM_TEST_BTL)"
MPIB=$DEVMEM_BUILD/bench/mpi_bench
TCPB=$DEVMEM_BUILD/bench/tcp_bench
for p in "$MPIB" "$TCPB"; do
    [ -x "$p" ] || { echo "$DEVMEM_TEST_NAME: $p not built" >&2; exit 1; }
done
sizes=0,1,4k,200k,1100k
nsizes=5

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

# the runner, which drives mpi_bench (every kind; devmem, tcp and, where Open MPI has its PML,
# ucx) and tcp_bench (busy and block): every transport gives a figure for every size, and the
# summary has the tables, with paired ratios
res=$DEVMEM_TEST_TMP/results out=$DEVMEM_TEST_TMP/run.out
mpi=(devmem tcp) cols=15
if ompi_info 2>/dev/null | grep -q 'MCA pml: ucx'; then
    mpi+=(ucx) cols=18
else
    echo "no ucx PML in this Open MPI: the ucx column stays empty"
fi
if timeout 300 "$DEVMEM_SRC/bench/run.sh" --settings lo --yield 0 --kinds lat,bw,bibw,rate \
    --reps 1 --sizes "$sizes" --scale 0.01 --limit 0.2 --out "$res" >"$out" 2>&1; then
    for t in "${mpi[@]/%/:lat}" "${mpi[@]/%/:bw}" "${mpi[@]/%/:bibw}" "${mpi[@]/%/:rate}" \
        raw-busy:lat raw-busy:bw raw-block:lat raw-block:bw; do
        n=$(awk -F, -v t="${t%%:*}" -v k="${t#*:}" '$3 == t && $4 == k && $7 > 0 && $9 > 0' \
            "$res/results.csv" | wc -l)
        if [ "$n" -eq "$nsizes" ]; then
            devmem_step_ok "bench/run.sh: ${t%%:*} ${t#*:}, validated: $n figures"
        else
            devmem_step_fail "bench/run.sh: ${t%%:*} ${t#*:}: $n figures, want $nsizes"
        fi
    done
    if grep -q "^== lo, yield 0: lat" "$out" && grep -q "^== lo, yield 0: rate" "$out" &&
        [ "$(awk -v c="$cols" '$1 == 204800 && NF == c' "$out" | wc -l)" -eq 2 ]; then
        devmem_step_ok "bench/run.sh: summary with every column at 200 KiB (lat, bw)"
    else
        cat "$out"
        devmem_step_fail "bench/run.sh: the summary lacks a table or a full 200 KiB row"
    fi
else
    cat "$out"
    devmem_step_fail "bench/run.sh failed"
fi

# the targets at the end of the summary, on made-up figures whose verdicts are known: 10 %
# slower than tcp (lat, size 1) and 10 % less bandwidth (bw, size 4) miss; 1 % slower (size 2)
# is outside the noise but within 3 %; a spread that holds 1 (size 3) is noise; against ucx,
# only size 2 is slower
csv=$DEVMEM_TEST_TMP/made-up.csv
{
    echo "setting,yield,transport,kind,rep,size,usec,MBps,msgps"
    for r in 1 2 3 4 5; do
        noisy=$(echo "90 110 100 95 105" | cut -d' ' -f"$r")
        echo "t,0,devmem,lat,$r,1,110,1,1"; echo "t,0,tcp,lat,$r,1,100,1,1"; echo "t,0,ucx,lat,$r,1,120,1,1"
        echo "t,0,devmem,lat,$r,2,101,1,1"; echo "t,0,tcp,lat,$r,2,100,1,1"; echo "t,0,ucx,lat,$r,2,100,1,1"
        echo "t,0,devmem,lat,$r,3,$noisy,1,1"; echo "t,0,tcp,lat,$r,3,100,1,1"
        echo "t,0,devmem,bw,$r,4,1,90,1"; echo "t,0,tcp,bw,$r,4,1,100,1"
    done
} >"$csv"
got=$("$DEVMEM_SRC/bench/summarize.sh" "$csv" | sed -n '/^== targets/,$p' | tr -s ' ')
want="== targets: devmem more than 3 % slower than tcp, outside the noise: 2 cell(s)
 t, yield 0, lat 1: dm/tcp 1.10 (1.10-1.10) -
 t, yield 0, bw 4: dm/tcp 0.90 (0.90-0.90) -
== devmem slower than tcp outside the noise but within 3 %: 1 cell(s)
 t, yield 0, lat 2: dm/tcp 1.01 (1.01-1.01) -
== devmem slower than ucx outside the noise: 1 cell(s)
 t, yield 0, lat 2: dm/ucx 1.01 (1.01-1.01) -"
if [ "$got" = "$want" ]; then
    devmem_step_ok "bench/summarize.sh: the targets list the 2 misses, the near one and the ucx one"
else
    printf '%s\n--- want\n%s\n' "$got" "$want"
    devmem_step_fail "bench/summarize.sh: the targets do not match the made-up figures"
fi

# a hog setting: the runner starts its busy processes, measures beside them and stops them
res=$DEVMEM_TEST_TMP/hog out=$DEVMEM_TEST_TMP/hog.out
if timeout 300 "$DEVMEM_SRC/bench/run.sh" --settings lo-hog1 --yield 0 --kinds lat --reps 1 \
    --sizes 8,4k --scale 0.01 --limit 0.2 --out "$res" >"$out" 2>&1; then
    pids=$(sed -n 's/^bench: 1 busy process(es) running: //p' "$out")
    n=$(awk -F, '$1 == "lo-hog1" && ($3 == "devmem" || $3 == "tcp") && $7 > 0' "$res/results.csv" | wc -l)
    if [ -z "$pids" ]; then
        cat "$out"
        devmem_step_fail "bench/run.sh lo-hog1: no busy process was started"
    elif kill -0 $pids 2>/dev/null; then # word splitting: the PIDs
        devmem_step_fail "bench/run.sh lo-hog1: busy process $pids still runs after the bench"
        kill $pids 2>/dev/null
    elif [ "$n" -ne 4 ]; then
        cat "$out" "$res/results.csv"
        devmem_step_fail "bench/run.sh lo-hog1: $n devmem/tcp figures, want 4"
    else
        devmem_step_ok "bench/run.sh lo-hog1: $n figures beside busy process $pids, stopped after"
    fi
else
    cat "$out"
    devmem_step_fail "bench/run.sh --settings lo-hog1 failed"
fi

# a lanes setting: devmem on the emulated device path with 2 lanes, and the calls table, whose
# device row must count DONTNEED calls (the host path's row none)
res=$DEVMEM_TEST_TMP/lanes out=$DEVMEM_TEST_TMP/lanes.out
if timeout 300 "$DEVMEM_SRC/bench/run.sh" --settings lo,lo-df2 --yield 0 --kinds bw --reps 1 \
    --sizes 3m --scale 0.01 --limit 0.2 --transports devmem --out "$res" >"$out" 2>&1; then
    dev=$(awk '$1 == "lo-df2" && $2 == "bw" && $4 == "device" && $7 > 0' "$out")
    host=$(awk '$1 == "lo" && $2 == "bw" && $4 == "host" && $7 == 0' "$out")
    if [ -n "$dev" ] && [ -n "$host" ]; then
        devmem_step_ok "bench/run.sh lo-df2: calls per MiB, device path: $dev"
    else
        cat "$out"
        devmem_step_fail "bench/run.sh lo,lo-df2: no device-path row with DONTNEED calls, or no host row"
    fi
else
    cat "$out"
    devmem_step_fail "bench/run.sh --settings lo,lo-df2 failed"
fi

# receiving threads: rx_threads.sh across two namespaces, 0 and 1 thread on one lane; each
# variant gives its overlap (overlap_bench checks every byte), a bandwidth and the share of
# work the computing process beside it kept; and no computing process outlives it
rxt=$DEVMEM_TEST_TMP/rxt out=$DEVMEM_TEST_TMP/rxt.out
if timeout 300 "$DEVMEM_SRC/bench/rx_threads.sh" --reps 1 --lanes 1 --threads 0,1 --workers 1 \
    --secs 0.3 --out "$rxt" >"$out" 2>&1; then
    rows=$(awk '$1 == 1 && ($2 == 0 || $2 == 1) && $3 ~ /^[0-9.]+$/ && $5 ~ /^[0-9.]+$/ &&
        $7 + 0 > 0 && $9 ~ /^[0-9.]+$/' "$rxt/summary.txt" | wc -l)
    if [ "$rows" -eq 2 ] && ! pgrep -f "$DEVMEM_BUILD/bench/cpu_work" >/dev/null; then
        devmem_step_ok "bench/rx_threads.sh: overlap, bandwidth and work beside for 0 and 1 thread"
    else
        cat "$out"
        devmem_step_fail "bench/rx_threads.sh: $rows full rows (want 2), or cpu_work left running"
    fi
else
    cat "$out"
    devmem_step_fail "bench/rx_threads.sh failed"
fi

# the cost model: call_costs measures (SO_DEVMEM_DONTNEED on the real kernel among them), and
# costmodel.sh turns that and the lanes run's calls.csv into the table, every row filled
out=$DEVMEM_TEST_TMP/model.out
if "$DEVMEM_BUILD/bench/call_costs" -r 1 >"$DEVMEM_TEST_TMP/costs.txt" 2>&1 &&
    "$DEVMEM_SRC/bench/costmodel.sh" --costs "$DEVMEM_TEST_TMP/costs.txt" \
        --calls "$res/calls.csv" >"$out" 2>&1; then
    # 2 line rates x 4 flow counts x 3 thread counts, each with a reach; the lanes run's
    # gathers per MiB read (a number above 0: the run batched, and gathered)
    rows=$(awk '($1 == 200 || $1 == 400) && $3 > 0 && $4 > 0 && NF >= 11' "$out" | wc -l)
    gathers=$(sed -n 's/.*per MiB: recv calls .*gathers \([0-9.]*\) (lo-df2).*/\1/p' "$out")
    if grep -q "dontneed_ret=0 " "$DEVMEM_TEST_TMP/costs.txt" && [ "$rows" -eq 24 ] &&
        awk -v g="${gathers:-0}" 'BEGIN { exit !(g > 0) }'; then
        devmem_step_ok "cost model: $rows predictions from $(cat "$DEVMEM_TEST_TMP/costs.txt")"
    else
        cat "$DEVMEM_TEST_TMP/costs.txt" "$out"
        devmem_step_fail "cost model: $rows of 24 prediction rows, or its inputs were not read"
    fi
else
    cat "$DEVMEM_TEST_TMP/costs.txt" "$out"
    devmem_step_fail "bench/call_costs or bench/costmodel.sh failed"
fi
# the descriptor count per rank: a row for each BTL, the device path's lanes on top of tcp's
out=$DEVMEM_TEST_TMP/fds.out
if timeout 120 "$DEVMEM_SRC/bench/fds.sh" --build "$DEVMEM_BUILD" --ranks 2 --sizes 1M \
    --iters 2 >"$out" 2>&1; then
    dev=$(awk '$1 == "devmem" && $2 == "1M" && $3 == 2 { print $4 }' "$out")
    tcp=$(awk '$1 == "tcp" && $2 == "1M" && $3 == 2 { print $4 }' "$out")
    if [ -n "$dev" ] && [ -n "$tcp" ] && [ "$dev" -gt "$tcp" ] && [ "$tcp" -gt 0 ]; then
        devmem_step_ok "bench/fds.sh: 2 ranks, 1 MiB blocks: devmem $dev descriptors a rank, tcp $tcp"
    else
        cat "$out"
        devmem_step_fail "bench/fds.sh: no devmem and tcp rows, or devmem's lanes did not show"
    fi
else
    cat "$out"
    devmem_step_fail "bench/fds.sh failed"
fi
devmem_finish
