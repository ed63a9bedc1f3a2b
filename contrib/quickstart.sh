#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# btl_devmem quickstart, for a Debian 12 machine (run as root, or with sudo for apt).
#
#   contrib/quickstart.sh demo    install what is missing, build, run 2-rank latency and
#                                 bandwidth jobs over --mca btl devmem,self and, beside them,
#                                 btl tcp (install and build output only if they fail)
#   contrib/quickstart.sh check   install what is missing, build, run every test; then all
#                                 of them again against Open MPI 5 in a Debian 13 root
#                                 (test/lib/ompi5-root.sh; DEVMEM_OMPI5_LEG=0: this one only)
#   contrib/quickstart.sh build   install what is missing and build only
#
# The build lives in ./build (install prefix ./build/install), the Open MPI 5 leg's in
# ./build-ompi5; outside the checkout only Debian packages and /var/cache/btl_devmem (the
# Debian 13 root, Open MPI's source for the headers its 5.0 package lacks) are changed.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${DEVMEM_BUILD:-$here/build}
prefix=$build/install

# What the build and the demo need; the check adds what its tests drive (namespaces, Slurm,
# modules, valgrind, the fuzzers, the Debian 13 root).
packages=(openmpi-bin libopenmpi-dev libmnl-dev libdrm-dev libhwloc-dev autoconf automake
          libtool pkg-config make gcc procps)
check_packages=(clang iproute2 netpipe-openmpi valgrind xz-utils libclang-rt-dev llvm
                environment-modules lua5.3 lua-posix lua-filesystem lua-json lua-term tcl
                nftables slurmctld slurmd slurm-client munge debhelper dpkg-dev build-essential)

install_deps() {
    local missing=()
    # the module test runs Lmod from its package; Debian's lmod and environment-modules
    # conflict, so a machine that has lmod installed keeps it and skips environment-modules
    if dpkg-query -W -f='${Status}' lmod 2>/dev/null | grep -q 'ok installed'; then
        packages=("${packages[@]/environment-modules/}")
    fi
    for p in "${packages[@]}"; do
        [ -n "$p" ] || continue
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "quickstart: installing ${missing[*]}"
    local sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Open MPI 5's developer headers lack a few that its own opal_config.h includes (an Open MPI
# bug; configure --with-ompi-src explains). Debian's source package of the installed version
# supplies them: prints the configure option, or nothing where none is needed.
debian_ompi_src() {
    local v dir tmp
    v=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null) || return 0
    v=${v#*:}
    v=${v%%-*}
    case "$v" in 5.*) ;; *) return 0 ;; esac
    dir=/var/cache/btl_devmem/openmpi-$v
    if [ ! -f "$dir/VERSION" ]; then
        echo "quickstart: fetching Debian's openmpi $v source for the headers its -dev package lacks" >&2
        tmp=$(mktemp -d)
        if ! (cd "$tmp" && apt-get source --download-only -q openmpi >/dev/null 2>&1); then
            echo "quickstart: 'apt-get source openmpi' failed (no deb-src lines in apt's sources?)" >&2
            rm -rf "$tmp"
            return 0
        fi
        mkdir -p "$(dirname "$dir")"
        tar -xf "$tmp"/openmpi_"$v".orig.tar.* -C "$(dirname "$dir")" || { rm -rf "$tmp"; return 0; }
        rm -rf "$tmp"
    fi
    echo "--with-ompi-src=$dir"
}

build_all() {
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        ./autogen.sh
    fi
    mkdir -p "$build"
    if [ ! -f "$build/Makefile" ]; then
        local extra
        extra=$(debian_ompi_src)
        # shellcheck disable=SC2086 # one option or none
        (cd "$build" && "$here/configure" --prefix="$prefix" --enable-werror $extra)
    fi
    make -C "$build" -j"$(nproc)" --no-print-directory
    make -C "$build" install --no-print-directory >/dev/null
    # test programs (check_PROGRAMS) are built, not run, here: test/run-tests.sh runs them
    make -C "$build" -j"$(nproc)" --no-print-directory check >/dev/null
}

# The demo's figures: latency and bandwidth of btl devmem and btl tcp on loopback, each
# transport run in turn, three times, with the medians and their ratio; every message's bytes
# are checked (mpi_bench's validation).
demo() {
    # shellcheck source=../test/lib/env.sh
    DEVMEM_BUILD=$build DEVMEM_PREFIX=$prefix . "$here/test/lib/env.sh"
    echo
    echo "== ompi_info sees the component =="
    ompi_info | grep 'MCA btl: devmem' || { echo "quickstart: component not found" >&2; exit 1; }
    echo
    echo "== 2 ranks on this host: --mca btl devmem,self beside --mca btl tcp,self =="
    local out res rc=0 rep kind t stats
    out=$(mktemp) res=$(mktemp)
    for rep in 1 2 3; do
        for kind in lat bw; do
            for t in devmem tcp; do
                stats=()
                [ "$t" = devmem ] && [ "$rep" = 3 ] && stats=(--mca btl_devmem_stats 1)
                devmem_mpirun 300 -np 2 --mca pml ob1 --mca btl "$t,self" \
                    --mca "btl_${t}_if_include" lo "${stats[@]}" "$build/bench/mpi_bench" -t "$kind" -s 8,4k,64k,1m,4m -x 0.3 -T 0.5 \
                    >"$out" 2>&1 || rc=$?
                if [ "$rc" -ne 0 ]; then
                    echo "quickstart: the demo job (btl $t, $kind) failed (exit $rc):" >&2
                    tail -20 "$out" >&2
                    rm -f "$out" "$res"
                    exit 1
                fi
                awk -v t="$t" '$1 == "lat" || $1 == "bw" { print t, $0 }
                    /btl_devmem stats: rank=0/ { print "stats", $0 }' "$out" >>"$res"
            done
        done
    done
    # "devmem lat 8 usec=5.1 MBps=1.5 msgps=..." -> medians per transport, kind and size
    awk '
    function med(k,    n, i, j, t, a) {
        n = split(v[k], a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $1 == "stats" { sub(/^stats /, ""); stats = $0; next }
    {
        for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        k = $1 SUBSEP $2 SUBSEP $3
        v[k] = v[k] " " ($2 == "lat" ? f["usec"] : f["MBps"])
        if (!(($2, $3) in seen)) { seen[$2, $3] = 1; sizes[$2] = sizes[$2] " " $3 }
    }
    END {
        printf "%10s %14s %14s %8s   %14s %14s %8s\n", "bytes", "devmem usec", "tcp usec",
               "ratio", "devmem MB/s", "tcp MB/s", "ratio"
        n = split(sizes["lat"], s, " ")
        for (i = 1; i <= n; i++) {
            ld = med("devmem" SUBSEP "lat" SUBSEP s[i]); lt = med("tcp" SUBSEP "lat" SUBSEP s[i])
            bd = med("devmem" SUBSEP "bw" SUBSEP s[i]); bt = med("tcp" SUBSEP "bw" SUBSEP s[i])
            printf "%10s %14.2f %14.2f %8.2f   %14.1f %14.1f %8.2f\n", s[i], ld, lt,
                   (lt > 0 ? ld / lt : 0), bd, bt, (bt > 0 ? bd / bt : 0)
        }
        print "(medians of 3 runs each, interleaved, every byte checked; a latency ratio < 1 or a"
        print " bandwidth ratio > 1: devmem faster. bench/run.sh measures between namespaces, beside"
        print " busy processes and against UCX too)"
        if (stats != "") {
            # "[host:pid] btl_devmem stats: rank=0 key=value ..." -> the few keys a user reads
            n = split(stats, w, " ")
            for (i = 1; i <= n; i++) if (split(w[i], kv, "=") == 2) st[kv[1]] = kv[2]
            printf "\nRank 0 of the last devmem bandwidth run (--mca btl_devmem_stats 1 prints the line):\n"
            printf "  %.0f MB sent and %.0f MB received from host memory, over %d connection(s), %d protocol errors\n",
                   st["tx_host"] / 1e6, st["rx_host"] / 1e6, st["conn_made"], st["proto_errors"]
            if (st["devmem_modules"] + 0 > 0)
                printf "  device path: on for %d interface(s)\n", st["devmem_modules"]
            else
                printf "  device path: off here (no devmem-capable NIC; devmem-probe says why, doc/first-run.md what to do)\n"
        }
    }' "$res"
    rm -f "$out" "$res"
}

# Runs a step with its output in a log that is shown only if the step fails.
quietly() { # LABEL CMD...
    local label=$1 log
    shift
    mkdir -p "$build"
    log=$build/quickstart-$label.log
    echo "quickstart: $label (log: $log)"
    if ! "$@" >"$log" 2>&1; then
        echo "quickstart: $label failed; the end of its log:" >&2
        tail -40 "$log" >&2
        exit 1
    fi
}

# The Open MPI version a build tree was configured for.
ompi_version_of() {
    sed -n 's/^DEVMEM_OMPI_VERSION = //p' "$1/Makefile" 2>/dev/null
}

# The counts of a test run's count line ("[LABEL: ]N passed, N failed, N skipped") as "N N N".
counts_of() {
    awk 'match($0, /[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/) {
            split(substr($0, RSTART), w, /[ ,]+/); p = w[1]; f = w[3]; s = w[5] + 0 }
         END { print p + 0, f + 0, s + 0 }' "$1"
}

# Every test against this machine's Open MPI, then (unless DEVMEM_OMPI5_LEG=0) all of them
# again against Open MPI 5 from Debian 13's packages, in a root of its own
# (test/lib/ompi5-root.sh); each leg ends with its count line, the check with the sum. The
# second leg skips what builds nothing against Open MPI (DEVMEM_OMPI_FREE_DONE: the fuzzing
# of the parsers).
check() {
    local logs=$build/check-legs host_log ompi5_log rc=0 p f s tp=0 tf=0 ts=0 label
    mkdir -p "$logs"
    set +e # a failing test is counted, not the end of the check
    host_log=$logs/host.log
    ompi5_log=$logs/ompi5.log
    label=${DEVMEM_COUNTS_LABEL:-Open MPI $(ompi_version_of "$build")}
    DEVMEM_COUNTS_LABEL=$label DEVMEM_BUILD=$build DEVMEM_PREFIX=$prefix \
        "$here/test/run-tests.sh" 2>&1 | tee "$host_log"
    read -r p f s < <(counts_of "$host_log")
    [ "$p" -gt 0 ] || f=$((f + 1))
    if [ "${DEVMEM_OMPI5_LEG:-1}" = 0 ]; then # one leg of an outer check: its line says it all
        [ "$f" -eq 0 ]
        return
    fi
    tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))

    echo
    echo "== the same tests against Open MPI 5 (Debian 13's packages, in a root of its own) =="
    "$here/test/lib/ompi5-root.sh" run env DEVMEM_OMPI5_LEG=0 DEVMEM_OMPI_FREE_DONE=1 \
        DEVMEM_BUILD="$here/build-ompi5" DEVMEM_COUNTS_LABEL="Open MPI 5 (Debian 13 root)" \
        "$here/contrib/quickstart.sh" check 2>&1 | tee "$ompi5_log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 77 ]; then
        ts=$((ts + 1))
        echo "Open MPI 5 (Debian 13 root): SKIP: $(grep '^ompi5-root:' "$ompi5_log" | tail -n 1)"
    else
        read -r p f s < <(counts_of "$ompi5_log")
        # a leg that failed before its tests ran (root, packages, build) counts as a failure
        [ "$p" -gt 0 ] || [ "$rc" -eq 0 ] || f=$((f + 1))
        tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
    fi
    echo
    echo "$tp passed, $tf failed, $ts skipped"
    [ "$tf" -eq 0 ]
}

cmd=${1:-demo}
case "$cmd" in
    demo)  quietly install install_deps; quietly build build_all; demo ;;
    check) packages+=("${check_packages[@]}"); quietly install install_deps; quietly build build_all; check ;;
    build) packages+=("${check_packages[@]}"); install_deps; build_all ;;
    *) echo "usage: $0 demo|check|build" >&2; exit 2 ;;
esac
