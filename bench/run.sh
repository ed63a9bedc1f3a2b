#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# btl/devmem against btl/tcp and raw TCP, interleaved in one run, with medians, spreads and
# ratios per size. Not part of the test suite; never asserts a timing.
#
#   bench/run.sh [--quick] [--settings lo,ns,tbf,pinned,lo-hog1,...] [--yield 0,1]
#                [--transports devmem,tcp,ucx] [--kinds lat,bw,bibw,rate] [--sizes LIST]
#                [--reps N] [--scale X] [--limit SECS] [--netpipe] [--out DIR]
#                [--ab NAME=PARAM:VALUE[,PARAM:VALUE...]]...
#
# Transports: devmem (--mca btl devmem,self), tcp (--mca btl tcp,self), ucx (--mca pml ucx
# with UCX_TLS=tcp,self: UCX's TCP transport, where Open MPI has the ucx PML; left out, with
# a line saying so, where it has not), and always raw TCP (tcp_bench) for lat and bw.
#
# --ab (repeatable) adds a column devmem-NAME: devmem with the given btl_devmem_ parameters,
# run in every repetition right after devmem, for the A/B of a mechanism against the
# component without it (--ab nocork=cork:0); the summary then gives devmem/devmem-NAME.
#
# Settings: lo (both ranks on this host, loopback), ns (two namespaced "hosts" over a veth
# pair, ranks not bound), tbf (the same veth shaped by tc tbf at 10 Gbit/s), pinned (the veth
# with Open MPI's default binding: each "host" binds its first rank to core 0, so the two
# ranks share one core, as oversubscribed ranks do on a real node). lo-hogN and ns-hogN
# (N = 1, 2): lo or ns while N unrelated busy processes (`while :; do :; done`, not bound)
# compete for the cores, as a monitoring agent or a compile does on a real node; the runner
# starts them before the setting and stops them by PID after it. lo-dfN and ns-dfN
# (N = 1..16): lo or ns with devmem on the device path through the emulated kernel
# (btl_devmem_kernel emulated, mode require) and N device-flow lanes per peer
# (btl_devmem_devflows), beside the same tcp runs: `--settings ns-df1,ns-df2,ns-df4` compares
# lane counts; a -rtN suffix (ns-df4-rt2) has N receiving threads serve them
# (btl_devmem_rx_threads). Each setting runs with
# Open MPI's defaults (yield 0) and with --mca mpi_yield_when_idle 1 (yield 1), the same for
# both BTLs.
# Per repetition every transport runs once, in turn (devmem, tcp, ucx, raw TCP busy, raw TCP
# blocking; the MPI ones in an order rotated by one each repetition), so that a slow minute
# of the machine hits all of them alike; the summary pairs
# the runs of one repetition for its ratios (bench/summarize.sh), 5 repetitions by default.
#
# Writes DIR/results.csv (every figure), DIR/summary.txt (the table printed at the end),
# DIR/calls.csv (every devmem run's receive calls, DONTNEED calls, tokens, bytes received and
# gathers, from its stats lines; summed per MiB at the end of the summary) and, with gnuplot,
# DIR/<setting>-y<yield>-<kind>.png. Needs a build (DEVMEM_BUILD, default
# <repo>/build, with `make install` done) and root for the namespaces.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../test/lib/testlib.sh
. "$here/../test/lib/testlib.sh"

settings=lo,ns,tbf,pinned,lo-hog1,lo-hog2,ns-hog1,ns-hog2 yields=0,1 kinds=lat,bw,rate reps=5 scale=0.3 limit=1 netpipe=0
transports=devmem,tcp,ucx
ab_names=() ab_args=()
sizes=1,8,64,512,4k,32k,256k,1m,4m,16m,64m
out=
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) reps=1 scale=0.1 limit=0.3 sizes=8,4k,64k,1m,4m,64m ;;
        --settings) settings=$2; shift ;;
        --yield) yields=$2; shift ;;
        --transports) transports=$2; shift ;;
        --kinds) kinds=$2; shift ;;
        --sizes) sizes=$2; shift ;;
        --reps) reps=$2; shift ;;
        --scale) scale=$2; shift ;;
        --limit) limit=$2; shift ;;
        --netpipe) netpipe=1 ;;
        --out) out=$2; shift ;;
        --ab)
            case "$2" in
                *=*:*) ;;
                *) echo "run.sh: --ab wants NAME=PARAM:VALUE[,PARAM:VALUE...], not '$2'" >&2; exit 2 ;;
            esac
            ab_names+=("${2%%=*}")
            ab_args+=("$(echo "${2#*=}" | tr ',' '\n' | sed 's/^\([^:]*\):\(.*\)$/--mca btl_devmem_\1 \2/' | tr '\n' ' ')")
            shift ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 0 ;;
        *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
out=${out:-$DEVMEM_SRC/bench/results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 1
csv=$out/results.csv
log=$out/run.log
MPIB=$DEVMEM_BUILD/bench/mpi_bench
TCPB=$DEVMEM_BUILD/bench/tcp_bench
for p in "$MPIB" "$TCPB"; do
    [ -x "$p" ] || { echo "run.sh: $p not built (make -C $DEVMEM_BUILD)" >&2; exit 1; }
done
[ -d "$DEVMEM_PREFIX/lib/openmpi" ] || { echo "run.sh: component not installed in $DEVMEM_PREFIX" >&2; exit 1; }
mpi_transports=()
for t in ${transports//,/ }; do
    case "$t" in
        devmem)
            mpi_transports+=(devmem)
            for n in "${ab_names[@]}"; do mpi_transports+=("devmem-$n"); done ;;
        tcp) mpi_transports+=("$t") ;;
        ucx)
            if ompi_info 2>/dev/null | grep -q 'MCA pml: ucx'; then
                mpi_transports+=(ucx)
            else
                echo "bench: no ucx column: this Open MPI has no ucx PML"
            fi ;;
        *) echo "run.sh: unknown transport '$t' (devmem, tcp, ucx)" >&2; exit 2 ;;
    esac
done
echo "setting,yield,transport,kind,rep,size,usec,MBps,msgps" >"$csv"
calls=$out/calls.csv
echo "setting,yield,kind,rep,recv_calls,dontneed_calls,tokens,rx_device,rx_host,gather_batches" >"$calls"
: >"$log"
echo "bench: results in $out"
{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -r), $(nproc) cores,"\
        "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)"
    echo "# Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -n1),"\
        "btl_devmem $(git -C "$DEVMEM_SRC" describe --always --dirty 2>/dev/null)"
    echo "# reps=$reps scale=$scale limit=${limit}s sizes=$sizes transports=${mpi_transports[*]}"
    # it decides how a large write leaves: BBR without an fq qdisc paces it
    echo "# TCP congestion control $(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null)"\
        "(the namespaces inherit it), default qdisc $(cat /proc/sys/net/core/default_qdisc 2>/dev/null)"
} >"$out/machine.txt"

# record SETTING YIELD TRANSPORT KIND REP FILE: result lines of FILE into the CSV
record() {
    awk -v pre="$1,$2,$3,$4,$5" '$1 ~ /^(lat|bw|bibw|rate)$/ {
        for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        print pre "," $2 "," v["usec"] "," v["MBps"] "," v["msgps"] }' "$6" >>"$csv"
}

# The setting a variant runs in (lo-hog2, lo-df4, ns-df4-rt2: lo, lo, ns), its number of
# busy processes, its device-flow lanes (0: the host path) and its receiving threads.
base_of() {
    local b=${1%-rt[0-9]*}
    b=${b%-hog[0-9]*}
    echo "${b%-df[0-9]*}"
}
hogs_of() {
    local s=${1%-rt[0-9]*}
    case "$s" in *-hog[0-9]*) echo "${s##*-hog}" ;; *) echo 0 ;; esac
}
lanes_of() {
    local s=${1%-rt[0-9]*}
    case "$s" in *-df[0-9]*) echo "${s##*-df}" ;; *) echo 0 ;; esac
}
threads_of() {
    case "$1" in *-rt[0-9]*) echo "${1##*-rt}" ;; *) echo 0 ;; esac
}

# record_calls SETTING YIELD KIND REP FILE: the devmem ranks' stats lines of FILE, summed
record_calls() {
    awk -F'[ =]' -v pre="$1,$2,$3,$4" '/btl_devmem stats:/ {
            for (i = 1; i < NF; i++) v[$i] += $(i + 1)
            n++ }
        END { if (n) printf "%s,%d,%d,%d,%d,%d,%d\n", pre, v["recv_calls"], v["dontneed_calls"],
                               v["tokens_received"], v["rx_dmabuf"] + v["rx_linear"], v["rx_host"],
                               v["gather_batches"] }' \
        "$5" >>"$calls"
}

# Unrelated busy processes, started and stopped by PID (also when the run is cut short)
hog_pids=()
start_hogs() { # N
    for _ in $(seq "$1"); do
        sh -c 'while :; do :; done' &
        hog_pids+=($!)
    done
    [ "$1" -eq 0 ] || echo "bench: $1 busy process(es) running: ${hog_pids[*]}" | tee -a "$log"
}
stop_hogs() {
    [ ${#hog_pids[@]} -eq 0 ] && return 0
    kill "${hog_pids[@]}" 2>/dev/null
    wait "${hog_pids[@]}" 2>/dev/null
    hog_pids=()
}
_bench_exit() {
    local rc=$?
    stop_hogs
    if declare -F netns_cleanup >/dev/null; then
        netns_cleanup
    fi
    devmem_testlib_cleanup
    return "$rc"
}
trap _bench_exit EXIT

# Open MPI's default binding for the pinned setting, none for the others
bind_of() {
    [ "$1" = pinned ] && echo core || echo none
}

# mca_of TRANSPORT IFNAME: the mpirun arguments that select a transport on one interface.
# UCX's PML takes only InfiniBand-class transports unless told otherwise (pml_ucx_tls, _devices)
mca_of() {
    case "$1" in
        ucx) echo --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self \
            -x UCX_TLS=tcp,self -x UCX_NET_DEVICES="$2" ;;
        *) echo --mca pml ob1 --mca btl "$1,self" --mca "btl_${1}_if_include" "$2" ;;
    esac
}

# run_mpi SETTING YIELD TRANSPORT KIND REP: one mpi_bench run
run_mpi() {
    local setting=$1 y=$2 tr=$3 kind=$4 rep=$5 np=2 f rc where mca
    where=$(base_of "$setting")
    f=$DEVMEM_TEST_TMP/mpi.out
    [ "$kind" = rate ] && np=4
    local args=(-t "$kind" -s "$sizes" -x "$scale" -T "$limit") lanes extra=()
    lanes=$(lanes_of "$setting")
    local btl=$tr i
    if [ "${tr%%-*}" = devmem ]; then
        btl=devmem
        for i in "${!ab_names[@]}"; do
            # shellcheck disable=SC2206 # the --mca words of the variant
            [ "$tr" = "devmem-${ab_names[$i]}" ] && extra+=(${ab_args[$i]})
        done
        extra+=(--mca btl_devmem_stats 1)
        [ "$lanes" -gt 0 ] && extra+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
            --mca btl_devmem_devflows "$lanes")
        extra+=(--mca btl_devmem_rx_threads "$(threads_of "$setting")")
    fi
    if [ "$where" = lo ]; then
        read -r -a mca <<<"$(mca_of "$btl" lo)"
        mca+=("${extra[@]}")
        devmem_mpirun 900 -np "$np" "${mca[@]}" \
            --mca mpi_yield_when_idle "$y" "$MPIB" "${args[@]}" >"$f" 2>&1
    else
        read -r -a mca <<<"$(mca_of "$btl" "$NETNS_LINK")"
        DEVMEM_MCA_ARGS=("${mca[@]}" "${extra[@]}")
        DEVMEM_BTL_NAME= NETNS_YIELD=$y NETNS_BIND=$(bind_of "$where") \
            netns_mpirun 900 $((np / 2)) $((np / 2)) "$MPIB" "${args[@]}" >"$f" 2>&1
    fi
    rc=$?
    cat "$f" >>"$log"
    [ "$rc" -eq 0 ] || echo "bench: $setting yield=$y $tr $kind failed (exit $rc), see $log"
    record "$setting" "$y" "$tr" "$kind" "$rep" "$f"
    [ "$tr" = devmem ] && record_calls "$setting" "$y" "$kind" "$rep" "$f"
}

# run_raw SETTING MODE KIND REP: one tcp_bench run (busy or block)
run_raw() {
    local setting=$1 mode=$2 kind=$3 rep=$4 srv=$DEVMEM_TEST_TMP/srv.out f=$DEVMEM_TEST_TMP/raw.out
    local addr=127.0.0.1 sns=() cns=() port= spid where
    where=$(base_of "$setting")
    if [ "$where" != lo ]; then
        addr=$NETNS_ADDR_B sns=(ip netns exec "$NETNS_B") cns=(ip netns exec "$NETNS_A")
    fi
    if [ "$where" = pinned ]; then # both ends on core 0, like the pinned ranks
        sns+=(taskset -c 0) cns+=(taskset -c 0)
    fi
    # the redirection below happens in the child: the last run's port must not be read first
    rm -f "$srv"
    timeout 900 "${sns[@]}" "$TCPB" -l -a "$addr" -p 0 >"$srv" 2>&1 &
    spid=$!
    for _ in $(seq 50); do
        port=$(sed -n 's/.* port \([0-9]*\)$/\1/p' "$srv" 2>/dev/null)
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "bench: the raw TCP server did not start: $(cat "$srv")"
        kill "$spid" 2>/dev/null
        return
    fi
    if ! timeout 900 "${cns[@]}" "$TCPB" -c "$addr" -p "$port" -t "$kind" -m "$mode" \
        -s "$sizes" -x "$scale" -T "$limit" >"$f" 2>&1; then
        echo "bench: raw TCP $mode $kind failed, see $log"
        kill "$spid" 2>/dev/null # it would wait out its timeout for a client gone
    fi
    wait "$spid" 2>/dev/null
    cat "$f" >>"$log"
    # raw TCP has no yield setting: its rows count for both
    for y in ${yields//,/ }; do
        record "$setting" "$y" "raw-$mode" "$kind" "$rep" "$f"
    done
}

run_netpipe() {
    local setting=$1 y=$2 btl=$3 f=$DEVMEM_TEST_TMP/np.out
    rm -f "$f"
    if [ "$(base_of "$setting")" = lo ]; then
        devmem_mpirun 900 -np 2 --mca btl "$btl,self" --mca "btl_${btl}_if_include" lo \
            --mca mpi_yield_when_idle "$y" NPopenmpi -u 67108864 -o "$f" >>"$log" 2>&1
    else
        DEVMEM_MCA_ARGS=(--mca btl "$btl,self")
        DEVMEM_BTL_NAME=$btl NETNS_YIELD=$y NETNS_BIND=$(bind_of "$(base_of "$setting")") \
            netns_mpirun 900 1 1 NPopenmpi -u 67108864 -o "$f" >>"$log" 2>&1
    fi
    # NetPIPE: bytes, Mbit/s, seconds (half a round trip); its powers of two only
    [ -f "$f" ] && awk -v pre="$setting,$y,$btl,netpipe,1" '
        { n = $1; while (n > 1 && n % 2 == 0) n /= 2 }
        n == 1 { printf "%s,%d,%.3f,%.2f,%.0f\n", pre, $1, $3 * 1e6, $2 / 8, 1 / $3 }' "$f" >>"$csv"
}

for setting in ${settings//,/ }; do
    case "$(base_of "$setting")" in
        lo) ;;
        ns | pinned)
            if [ -z "${_netns_created[*]:-}" ]; then
                . "$DEVMEM_SRC/test/net/netns.sh"; netns_setup >>"$log"
                trap _bench_exit EXIT # netns_setup sets its own; ours calls it
            fi
            if [ -n "${shaped:-}" ]; then
                netns_unshape >>"$log"; shaped=
            fi ;;
        tbf)
            if [ -z "${_netns_created[*]:-}" ]; then
                . "$DEVMEM_SRC/test/net/netns.sh"; netns_setup >>"$log"
                trap _bench_exit EXIT
            fi
            netns_shape root tbf rate 10gbit burst 4mb latency 10ms >>"$log"; shaped=1 ;;
        *) echo "run.sh: unknown setting '$setting'" >&2; exit 2 ;;
    esac
    start_hogs "$(hogs_of "$setting")"
    for rep in $(seq "$reps"); do
        for kind in ${kinds//,/ }; do
            for y in ${yields//,/ }; do
                echo "bench: $setting rep $rep/$reps $kind yield=$y"
                # each repetition starts further on, by a stride that spreads every
                # transport's place over the repetitions: none always runs first (after the
                # last kind's runs) or late
                ntr=${#mpi_transports[@]}
                stride=$(((ntr + reps - 1) / reps))
                for i in $(seq 0 $((ntr - 1))); do
                    run_mpi "$setting" "$y" "${mpi_transports[$(((i + rep * stride) % ntr))]}" \
                        "$kind" "$rep"
                done
            done
            if [ "$kind" = lat ] || [ "$kind" = bw ]; then
                run_raw "$setting" busy "$kind" "$rep"
                run_raw "$setting" block "$kind" "$rep"
            fi
        done
    done
    if [ "$netpipe" = 1 ]; then
        for y in ${yields//,/ }; do
            echo "bench: $setting NetPIPE yield=$y"
            run_netpipe "$setting" "$y" devmem
            run_netpipe "$setting" "$y" tcp
        done
    fi
    stop_hogs
done

{
    "$here/summarize.sh" "$csv"
    [ ${#ab_names[@]} -eq 0 ] || "$here/summarize.sh" --ab "$csv"
    "$here/summarize.sh" --calls "$calls"
} | tee "$out/summary.txt"
if command -v gnuplot >/dev/null 2>&1; then
    "$here/plot.sh" "$csv" "$out" && echo "bench: plots in $out"
else
    echo "bench: no plots (install gnuplot-nox)"
fi
